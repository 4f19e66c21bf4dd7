//! The unwinder: the state of every process of a recording that unwinding needs (mappings,
//! the images they map, framehop's view of their unwind tables) fed in time order, and the
//! unwinding of a sample's user stack into
//! [`StackFrame`](crate::address::StackFrame)s ([`super::stack`]). It names
//! nothing: the recorder trims stack copies with one, the pipeline unwinds on a second thread
//! with one, and a [`Resolver`](super::Resolver)'s [`Namer`](super::Namer) names what the
//! resolver's own one unwinds, reading its mappings and images.

use std::sync::Arc;

use cpiflame_perf_data::abi::misc;
use cpiflame_perf_data::{Meta, MmapRecord, RecordKind};
use foldhash::HashMap;

use crate::address::{Avma, FileMapping, FileOffset, Svma};
use crate::image::{Image, ImageError};
use crate::jit::{DumpCache, JitCodeRef, LoadedDump};
use crate::jitdump::{self, JitChange, JitDump, JitFunction};
use crate::locate::Locator;
use crate::options::Options;
use crate::process::{Mapping, Process};
use crate::source::{HostSource, Source};

use super::{recorded_on, short_name, Stats};

/// `CLOCK_MONOTONIC`, the clock JIT dumps' times are on.
const CLOCK_MONOTONIC: u32 = 1;

/// A recorded path, the build id the recording gives for it, and the mount namespace of a
/// container whose root it was read under.
type ImageKey = (Arc<str>, Option<Vec<u8>>, Option<u64>);

/// The processes of a recording as unwinding sees them, and their user stacks unwound.
pub struct Unwinder {
    pub(super) locator: Locator,
    /// Build ids from the file's BUILD_ID feature, by recorded path.
    pub(super) build_ids: HashMap<Vec<u8>, Vec<u8>>,
    pub(super) images: Vec<Image>,
    /// Images opened (or failed) per recorded path and build id.
    image_index: HashMap<ImageKey, Result<usize, ImageError>>,
    pub(super) processes: HashMap<i32, Process>,
    /// Per pid, what [`Source::process_root`] said (asked once per process image).
    roots: HashMap<i32, Option<(u64, std::path::PathBuf)>>,
    /// [`Options::recording_now`].
    recording_now: bool,
    pub(super) caches: super::stack::RuleCaches,
    /// Whether a stack ends at a stated address of an image (no unwind info covers it, on
    /// purpose), by image and address, for the addresses unwinds went through
    /// ([`super::stack::ends_stack`]).
    pub(super) stack_ends_at: HashMap<(usize, Svma), bool>,
    pub(super) unwinds_x86_64: bool,
    /// Whether the images' symbols and debug info are read ahead on other threads as they
    /// are opened, for the namer that names with this unwinder's images (not for an
    /// unwind-only one, nor with [`Options::single_threaded`]).
    read_names_ahead: bool,
    /// Stacks unwound since the unwind tables' pages were last released.
    pub(super) unwinds_since_release: u32,
    /// JIT dumps read, shared with this unwinder's twin.
    pub(super) jit_dumps: DumpCache,
    /// The dumps processes followed, in the order first followed: [`JitCodeRef`]'s
    /// numbering.
    pub(super) dumps_followed: Vec<Arc<LoadedDump>>,
    /// Whether the samples' clock is the JIT dumps' (CLOCK_MONOTONIC, perf's `-k mono`):
    /// then each dump's changes are applied as the samples' times pass theirs, else all at
    /// once when the dump is found.
    jit_in_time_order: bool,
    /// [`Options::jit_dirs`].
    jit_dirs: Vec<std::path::PathBuf>,
    /// What went wrong with JIT dumps (one line each, naming the file), and the paths
    /// already said.
    pub(super) jit_notes: Vec<String>,
    jit_noted: foldhash::HashSet<Arc<str>>,
    /// The unwinds done: only the unwinding counts (`dwarf_unwound`, `unwind_stopped_early`,
    /// `unwind_ended_uncovered`) are kept here.
    pub stats: Stats,
}

impl Unwinder {
    /// An unwinder for a file with header metadata `meta`, reading this host.
    pub fn new(meta: &Meta, options: Options) -> Unwinder {
        Self::with_source(meta, options, HostSource::shared())
    }

    /// An unwinder for a file with header metadata `meta` that reads everything outside the
    /// recording from `source`.
    pub fn with_source(meta: &Meta, options: Options, source: Arc<dyn Source>) -> Unwinder {
        let recorded_here = options.assume_local || recorded_on(meta, &source.machine());
        let arch_ok = meta.arch.as_deref().is_none_or(|a| a == "x86_64");
        let mut unwinder = Unwinder {
            locator: Locator {
                source,
                symfs: options.symfs,
                buildid_cache: options.buildid_cache,
                dwarf_cache: options.dwarf_cache,
                recorded_here,
            },
            build_ids: meta
                .build_ids
                .iter()
                .map(|b| (b.path.clone(), b.build_id.clone()))
                .collect(),
            images: Vec::new(),
            image_index: HashMap::default(),
            processes: HashMap::default(),
            roots: HashMap::default(),
            recording_now: options.recording_now,
            caches: super::stack::RuleCaches::new(),
            stack_ends_at: HashMap::default(),
            unwinds_x86_64: arch_ok && cfg!(target_endian = "little"),
            read_names_ahead: !options.unwind_only && !options.single_threaded,
            unwinds_since_release: 0,
            jit_dumps: DumpCache::default(),
            dumps_followed: Vec::new(),
            jit_in_time_order: meta
                .clock_data
                .as_ref()
                .is_some_and(|c| c.clockid == CLOCK_MONOTONIC),
            jit_dirs: options.jit_dirs,
            jit_notes: Vec::new(),
            jit_noted: Default::default(),
            stats: Stats::default(),
        };
        unwinder.prefetch_hit_files(meta);
        unwinder
    }

    /// Starts reading the symbols and DWARF of the user-space files the build-id table lists
    /// (perf lists the files samples hit) before the first record: the naming thread would
    /// otherwise wait for a large debug file (libc's: 8 MiB to decompress) at the first
    /// sample in it, with the records behind it held up.
    fn prefetch_hit_files(&mut self, meta: &Meta) {
        if !self.read_names_ahead {
            return;
        }
        for entry in &meta.build_ids {
            if entry.misc & misc::CPUMODE_MASK != misc::USER || !entry.path.starts_with(b"/") {
                continue;
            }
            // With the build id a mapping without one of its own is given (the table's last
            // for that path): the same image then, and an error is kept for then.
            let build_id = self.build_ids.get(&entry.path).cloned();
            let path: Arc<str> = String::from_utf8_lossy(&entry.path).into();
            let _ = self.image_for(&path, build_id, None);
        }
    }

    /// Updates the processes' mappings from a non-sample record. Feed every record in time
    /// order.
    pub fn observe(&mut self, record: &RecordKind<'_>) {
        match record {
            RecordKind::Mmap(m) => self.on_mmap(m),
            RecordKind::Comm {
                pid, exec: true, ..
            } => {
                // A new program image: the old mappings are gone (and it may have entered
                // another mount namespace before the exec).
                self.processes.insert(*pid, Process::default());
                self.roots.remove(pid);
            }
            RecordKind::Fork { pid, ppid, .. } if pid != ppid => {
                let child = self
                    .processes
                    .get(ppid)
                    .map(Process::forked)
                    .unwrap_or_default();
                self.processes.insert(*pid, child);
                self.roots.remove(pid);
            }
            _ => {}
        }
    }

    fn on_mmap(&mut self, m: &MmapRecord<'_>) {
        if !m.executable || m.pid == -1 || m.cpumode == misc::KERNEL {
            return;
        }
        let path: Arc<str> = String::from_utf8_lossy(m.path).into();
        // A runtime maps its JIT dump (executable, so that the kernel reports it): the
        // mapping holds no code, the dump says where the code is.
        if let Some(name) = path.rsplit('/').next().filter(|n| jitdump::is_dump_name(n)) {
            let name: Arc<str> = name.into();
            self.attach_jit_dump(m.pid, &path, name);
            return;
        }
        let build_id = m
            .build_id
            .map(<[u8]>::to_vec)
            .or_else(|| self.build_ids.get(m.path).cloned());
        // Real files and the vDSO; not anonymous memory (`//anon`), memfds or `[heap]`.
        let is_file =
            (path.starts_with('/') && !path.starts_with("//") && !path.starts_with("/memfd:"))
                || &*path == "[vdso]";
        let (image, image_error) = if is_file {
            let root = self.root_of(m.pid);
            match self.image_for(&path, build_id, root) {
                Ok(i) => (Some(i), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, None)
        };
        let file = FileMapping {
            start: Avma(m.addr),
            pgoff: FileOffset(m.pgoff),
            len: m.len,
        };
        let base = match image {
            Some(i) => self.images[i].base_of(&file),
            None => file.avma_of(FileOffset(0)),
        };
        let module = image.map(|i| {
            self.images[i].framehop_module(path.to_string(), file.start.0..file.end().0, base.0)
        });
        let mapping = Mapping {
            file,
            base,
            image,
            image_error,
            module: short_name(&path),
            path,
        };
        let process = self.processes.entry(m.pid).or_default();
        for part in process.map(mapping, module) {
            let module = part.image.map(|i| {
                let range = part.file.start.0..part.file.end().0;
                self.images[i].framehop_module(part.path.to_string(), range, part.base.0)
            });
            process.map(part, module);
        }
    }

    /// Follows the JIT dump process `pid` mapped at `path` (file name `name`), looked for in
    /// [`Options::jit_dirs`] first (a copy kept with the recording outlives the process's
    /// own, which a later process with the same pid overwrites), then at `path` (through a
    /// container's root) when the file was recorded here.
    fn attach_jit_dump(&mut self, pid: i32, path: &Arc<str>, name: Arc<str>) {
        let mut candidates: Vec<std::path::PathBuf> =
            self.jit_dirs.iter().map(|d| d.join(&*name)).collect();
        if self.locator.recorded_here {
            match self.root_of(pid) {
                Some((_, root)) => candidates.push(root.join(path.trim_start_matches('/'))),
                None => candidates.push(std::path::PathBuf::from(&**path)),
            }
        }
        let source = self.locator.source.clone();
        let found = candidates.iter().find_map(|candidate| {
            let read = self.jit_dumps.get_or_read(candidate, || {
                // Not there (or not readable): the next place.
                let bytes = source.map(candidate).map_err(|_| None)?;
                let dump = JitDump::parse(&bytes)
                    .map_err(|e| Some(format!("{}: {e}", candidate.display())))?;
                Ok(Arc::new(LoadedDump {
                    dump,
                    module: name.clone(),
                    path: candidate.clone(),
                }))
            });
            match read {
                Ok(dump) => Some(Ok(dump)),
                Err(None) => None,
                Err(Some(e)) => Some(Err(e)),
            }
        });
        let dump = match found {
            Some(Ok(dump)) => dump,
            Some(Err(e)) => return self.jit_note(&name, e),
            None => {
                let places = if candidates.is_empty() {
                    "recorded on another machine; give its folder with --jit-dir".to_string()
                } else {
                    format!(
                        "looked for at {}",
                        candidates
                            .iter()
                            .map(|c| c.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                return self.jit_note(
                    &name,
                    format!("{path}: JIT dump not found ({places}): its code is unnamed"),
                );
            }
        };
        let shown = dump.path.display().to_string();
        if let Some((offset, why)) = &dump.dump.problem {
            self.jit_note(
                &name,
                format!("{shown}: offset {offset}: {why}; the code loaded after it is unnamed"),
            );
        }
        if dump.dump.reuses_code && !self.jit_in_time_order {
            self.jit_note(
                &name,
                format!(
                    "{shown}: the dump moved or reused code, and the recording's clock is not \
                     the dump's (record with -k mono): its code is named by address, the latest \
                     load winning, which may name some samples wrongly"
                ),
            );
        }
        let number = match self
            .dumps_followed
            .iter()
            .position(|d| Arc::ptr_eq(d, &dump))
        {
            Some(n) => n,
            None => {
                self.dumps_followed.push(dump.clone());
                self.dumps_followed.len() - 1
            }
        };
        let in_time_order = self.jit_in_time_order;
        let process = self.processes.entry(pid).or_default();
        process
            .jit
            .attach(dump, number as u32, in_time_order, &mut process.unwinder);
    }

    fn jit_note(&mut self, name: &Arc<str>, note: String) {
        if self.jit_noted.insert(name.clone()) || !self.jit_notes.contains(&note) {
            self.jit_notes.push(note);
        }
    }

    /// The JIT function `code` names.
    pub(crate) fn jit_function(&self, code: JitCodeRef) -> Option<&Arc<JitFunction>> {
        let dump = &self.dumps_followed.get(code.dump as usize)?.dump;
        match &dump.events.get(code.event as usize)?.change {
            JitChange::Load(function) => Some(function),
            JitChange::Unload(_) => None,
        }
    }

    /// Brings process `pid`'s JIT code to `time` (a sample's; `None`: every change known).
    pub(super) fn advance_jit(&mut self, pid: i32, time: Option<u64>) {
        if let Some(process) = self.processes.get_mut(&pid) {
            if !process.jit.is_empty() {
                process
                    .jit
                    .advance(time.unwrap_or(u64::MAX), &mut process.unwinder);
            }
        }
    }

    /// The root of process `pid` when it runs here in a container, its files to be read
    /// under it: while recording, or when a build id will check the file read (a finished
    /// recording's pid may be another process's by now).
    fn root_of(&mut self, pid: i32) -> Option<(u64, std::path::PathBuf)> {
        if !self.locator.recorded_here {
            return None;
        }
        let source = &self.locator.source;
        self.roots
            .entry(pid)
            .or_insert_with(|| source.process_root(pid))
            .clone()
    }

    fn image_for(
        &mut self,
        path: &Arc<str>,
        build_id: Option<Vec<u8>>,
        root: Option<(u64, std::path::PathBuf)>,
    ) -> Result<usize, ImageError> {
        let root = root.filter(|_| self.recording_now || build_id.is_some());
        let key = (path.clone(), build_id, root.as_ref().map(|r| r.0));
        if let Some(r) = self.image_index.get(&key) {
            return r.clone();
        }
        let result = self
            .locator
            .open_image(path, key.1.as_deref(), root.as_ref().map(|r| r.1.as_path()))
            .map(|image| {
                // perf lists in the build-id table the files that samples hit: where the
                // table is there, only those are read ahead (a system-wide recording maps
                // a hundred libraries and samples a few). A file without a build id cannot
                // be listed (rustup's librustc_driver): it may be hit.
                let likely_hit = self.build_ids.is_empty()
                    || self.build_ids.contains_key(path.as_bytes())
                    || image.build_id.is_none();
                if self.read_names_ahead && likely_hit {
                    image.prefetch_names(|| self.locator.open_debug(&image));
                }
                self.images.push(image);
                self.images.len() - 1
            });
        self.image_index.insert(key, result.clone());
        result
    }
}
