//! The namer: everything that turns an address into a frame, kept apart from unwinding. It
//! names user addresses through the image their mapping holds (its ELF symbols, PLT stubs and
//! DWARF, read lazily through the [`Source`]) or the process's JIT map, kernel addresses
//! through kernel symbols, and gives `module+0xOFFSET` (or `[kernel]+0xADDR`) when nothing
//! names one honestly; it keeps the frame table, the thread names and the modules left
//! unnamed. It reads the mappings and opened images of the [`Unwinder`] it names for, and
//! never changes them: the images are opened once, for both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use cpiflame_perf_data::{Meta, RecordKind};
use foldhash::HashMap;

use super::{Unnamed, Unwinder};
use crate::address::{Avma, EntryAddress, StackFrame, Svma};
use crate::frames::{CodeSite, FrameInfo, FrameKind, FrameRef, FrameTable, StackEntry};
use crate::kernel::{Kallsyms, KernelSymbolFiles};
use crate::locate::hex;
use crate::options::Options;
use crate::perfmap::PerfMap;
use crate::source::Source;
use crate::{CodeAddress, CodeFile};

/// Names the frames of a recording's samples, with the thread names, kernel symbols and JIT
/// maps of its moment: feed it every non-sample record in time order
/// ([`Namer::observe`]), as its [`Unwinder`] is fed.
pub struct Namer {
    /// Where kernel symbols, JIT maps (and, through the unwinder's images, debug files) are
    /// read: the unwinder's.
    source: Arc<dyn Source>,
    /// Whether the file looks recorded on this machine: only then are JIT maps read from
    /// where the process wrote them.
    recorded_here: bool,
    /// [`Options::jit_dirs`]: where copies of JIT maps kept with the recording are.
    jit_dirs: Vec<PathBuf>,
    /// Whether kernel symbols are read on another thread (not with
    /// [`Options::single_threaded`] or [`Options::unwind_only`]).
    load_kernel_ahead: bool,
    /// Thread names (comm) by tid.
    threads: HashMap<i32, Arc<str>>,
    /// Cgroup paths by id (PERF_RECORD_CGROUP).
    cgroups: HashMap<u64, Arc<str>>,
    /// JIT maps by process, `Some` once looked for; a fork's child starts with its parent's,
    /// an exec with none.
    perf_maps: HashMap<i32, Option<Rc<PerfMap>>>,
    /// Where kernel symbols may come from: the user's file, perf's build-id cache, or this
    /// machine's when the file was recorded here. None of them: kernel frames stay unnamed.
    kernel_symbol_files: KernelSymbolFiles,
    /// Where the recording says the kernel image starts (its kernel map's start and file
    /// offset, both `_text` for perf), to check cached kernel symbols against.
    kernel_starts: Vec<u64>,
    /// Kernel symbols: read once the first kernel frame is seen, on another thread when
    /// allowed (generating /proc/kallsyms costs the kernel tens of milliseconds), `Some` once
    /// joined.
    kernel: Option<Option<Kallsyms>>,
    kernel_loading: Option<std::thread::JoinHandle<Option<Kallsyms>>>,
    /// Kernel frames handed out before the symbols were ready: named at [`Namer::finish_names`].
    kernel_pending: Vec<(FrameRef, Avma)>,
    frames: FrameTable,
    /// Frames at a stated address of an image, innermost first.
    names: HashMap<(usize, Svma), Box<[FrameRef]>>,
    kernel_names: HashMap<Avma, FrameRef>,
    unnamed: BTreeMap<Arc<str>, (String, u64)>,
}

impl Namer {
    /// A namer for a file with header metadata `meta` whose user frames `unwinder` unwinds:
    /// it reads what the unwinder reads from (its [`Source`]) and judges, as it did, whether
    /// the file was recorded here.
    pub fn new(meta: &Meta, options: &Options, unwinder: &Unwinder) -> Namer {
        let recorded_here = unwinder.locator.recorded_here;
        let kernel_build_id = meta
            .build_ids
            .iter()
            .find(|b| b.path == b"[kernel.kallsyms]")
            .map(|b| hex(&b.build_id));
        let kernel_symbol_files = KernelSymbolFiles {
            given: options.kallsyms.clone(),
            // Only for a file recorded here: a copy from this machine's kernel says nothing
            // of where another machine had its modules.
            cached: options
                .buildid_cache
                .as_ref()
                .zip(kernel_build_id)
                .filter(|_| recorded_here)
                .map(|(cache, id)| cache.join("[kernel.kallsyms]").join(id).join("kallsyms")),
            running: recorded_here.then(|| PathBuf::from("/proc/kallsyms")),
        };
        Namer {
            source: unwinder.locator.source.clone(),
            recorded_here,
            jit_dirs: options.jit_dirs.clone(),
            load_kernel_ahead: !options.single_threaded && !options.unwind_only,
            threads: HashMap::default(),
            cgroups: HashMap::default(),
            perf_maps: HashMap::default(),
            kernel_symbol_files,
            kernel_starts: Vec::new(),
            kernel: None,
            kernel_loading: None,
            kernel_pending: Vec::new(),
            frames: FrameTable::default(),
            names: HashMap::default(),
            kernel_names: HashMap::default(),
            unnamed: BTreeMap::new(),
        }
    }

    /// Updates thread names, JIT maps and where the kernel starts from a non-sample record.
    /// Feed every record in time order.
    pub fn observe(&mut self, record: &RecordKind<'_>) {
        match record {
            RecordKind::Mmap(m) if m.pid == -1 && m.path.starts_with(b"[kernel.kallsyms]") => {
                self.kernel_starts.extend([m.addr, m.pgoff]);
            }
            RecordKind::Comm {
                pid,
                tid,
                name,
                exec,
            } => {
                self.threads
                    .insert(*tid, String::from_utf8_lossy(name).into());
                if *exec {
                    // A new program: its JIT map is to be read again.
                    self.perf_maps.remove(pid);
                }
            }
            RecordKind::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                let comm = self
                    .threads
                    .get(ptid)
                    .or_else(|| self.threads.get(ppid))
                    .cloned()
                    .unwrap_or_else(|| format!(":{pid}").into());
                self.threads.insert(*tid, comm);
                // A new process has its parent's memory, JIT code and map included.
                if pid != ppid {
                    match self.perf_maps.get(ppid).cloned() {
                        Some(map) => self.perf_maps.insert(*pid, map),
                        None => self.perf_maps.remove(pid),
                    };
                }
            }
            RecordKind::Cgroup { id, path } => {
                self.cgroups
                    .insert(*id, String::from_utf8_lossy(path).into());
            }
            _ => {}
        }
    }

    /// The name (comm) of thread `tid` of process `pid` at this point of the recording.
    pub fn thread_name(&self, pid: i32, tid: i32) -> Arc<str> {
        match self.threads.get(&tid).or_else(|| self.threads.get(&pid)) {
            Some(comm) => comm.clone(),
            None => unnamed(pid),
        }
    }

    /// The name of process `pid` at this point of the recording: its main thread's (`tid ==
    /// pid`), else that of its thread `tid`, else `:PID` (`swapper` for the idle task).
    pub fn process_name(&self, pid: i32, tid: i32) -> Arc<str> {
        match self.threads.get(&pid).or_else(|| self.threads.get(&tid)) {
            Some(comm) => comm.clone(),
            None => unnamed(pid),
        }
    }

    /// The path of cgroup `id` (from the recording's PERF_RECORD_CGROUP records so far).
    pub fn cgroup_path(&self, id: u64) -> Option<Arc<str>> {
        self.cgroups.get(&id).cloned()
    }

    /// The frame table entry for `frame`.
    pub fn frame(&self, frame: FrameRef) -> &FrameInfo {
        self.frames.get(frame)
    }

    /// Modules whose frames could not be named, with why and how many frames.
    pub fn unnamed(&self) -> Vec<Unnamed> {
        self.unnamed
            .iter()
            .map(|(path, (reason, frames))| Unnamed {
                path: path.to_string(),
                reason: reason.clone(),
                frames: *frames,
            })
            .collect()
    }

    /// Pushes the frames at user frame `frame` of process `pid`, as `unwinder`'s mappings
    /// place it at this point of the recording, onto `out`: the functions inlined there,
    /// innermost first, then the function itself, named by the frame's lookup address (the
    /// instruction, or the byte before a return address). Returns whether a symbol, DWARF or
    /// a JIT map named it; when not, the frame pushed is `module+0xOFFSET` (or `[unknown]`),
    /// counted among the module's unnamed frames only if `count_unnamed`.
    pub fn push_user_frames(
        &mut self,
        unwinder: &Unwinder,
        pid: i32,
        frame: StackFrame,
        out: &mut Vec<StackEntry>,
        count_unnamed: bool,
    ) -> bool {
        let (address, lookup) = (frame.address(), frame.lookup());
        let entry = |id| StackEntry {
            frame: id,
            address: EntryAddress::User(frame),
            code: None,
        };
        let process = unwinder.processes.get(&pid);
        let mapping = process.and_then(|p| p.mapping_at(lookup));
        // Code a JIT dump loaded there at the sample's time (not code of a file).
        if mapping.is_none_or(|m| m.image.is_none()) {
            if let Some(placed) = process.and_then(|p| p.jit.function_at(lookup.0)) {
                let id = self
                    .frames
                    .intern(&placed.function.name, &placed.module, FrameKind::Jit);
                let code = CodeAddress {
                    file: CodeFile::Jit(placed.code),
                    svma: lookup.0,
                };
                out.push(StackEntry {
                    code: Some(CodeSite {
                        code,
                        inline_depth: 0,
                    }),
                    ..entry(id)
                });
                return true;
            }
        }
        let Some(mapping) = mapping else {
            let name = self.perf_map_name(pid, lookup);
            let jit: Arc<str> = Arc::from(format!("perf-{pid}.map"));
            let id = match &name {
                Some(n) => self.frames.intern(n, &jit, FrameKind::Jit),
                None => self
                    .frames
                    .intern("[unknown]", &Arc::from(""), FrameKind::User),
            };
            out.push(entry(id));
            return name.is_some();
        };
        if let Some(image) = mapping.image {
            let svma = mapping.svma(lookup);
            let key = (image, svma);
            // Named once per distinct address of an image; one hash lookup per frame after.
            let ids = match self.names.get(&key) {
                Some(ids) => ids,
                None => {
                    let locator = &unwinder.locator;
                    let img = &unwinder.images[image];
                    let named = img.frames_at_svma(svma, || locator.open_debug(img));
                    let ids: Box<[FrameRef]> = named
                        .iter()
                        .map(|f| {
                            let kind = if f.inlined {
                                FrameKind::Inline
                            } else if jitted_image(&mapping.module) {
                                FrameKind::Jit
                            } else {
                                FrameKind::User
                            };
                            self.frames.intern(&f.name, &mapping.module, kind)
                        })
                        .collect();
                    self.names.entry(key).or_insert(ids)
                }
            };
            if !ids.is_empty() {
                let code = CodeAddress {
                    file: CodeFile::Image(image),
                    svma: svma.0,
                };
                out.extend(ids.iter().enumerate().map(|(depth, &id)| StackEntry {
                    code: Some(CodeSite {
                        code,
                        inline_depth: depth as u16,
                    }),
                    ..entry(id)
                }));
                return true;
            }
            if count_unnamed {
                self.unnamed
                    .entry(mapping.path.clone())
                    .or_insert_with(|| ("no symbol covers some addresses".into(), 0))
                    .1 += 1;
            }
        } else {
            if crate::process::is_anonymous(&mapping.path) {
                if let Some(n) = self.perf_map_name(pid, lookup) {
                    let jit: Arc<str> = Arc::from(format!("perf-{pid}.map"));
                    let id = self.frames.intern(&n, &jit, FrameKind::Jit);
                    out.push(entry(id));
                    return true;
                }
            }
            if count_unnamed {
                let reason = match &mapping.image_error {
                    Some(e) => e.to_string(),
                    None => "no file and no JIT map names this memory".to_string(),
                };
                self.unnamed
                    .entry(mapping.path.clone())
                    .or_insert((reason, 0))
                    .1 += 1;
            }
        }
        // Of the address itself, not the lookup address, as perf shows it.
        let name = mapping.offset_name(address);
        let id = self.frames.intern(&name, &mapping.module, FrameKind::User);
        out.push(entry(id));
        false
    }

    /// The JIT map's name for `addr` in process `pid`: from a copy kept with the recording
    /// ([`Options::jit_dirs`]: `perf-PID.map`), else, only for files recorded here, from where
    /// the process wrote it. A container's process (one still running in another mount
    /// namespace) writes its map in its own `/tmp`, named by its pid in its pid namespace (the
    /// last of `NSpid:` in its status), as perf reads it.
    fn perf_map_name(&mut self, pid: i32, addr: Avma) -> Option<String> {
        if !self.recorded_here && self.jit_dirs.is_empty() {
            return None;
        }
        let source = &*self.source;
        let (jit_dirs, recorded_here) = (&self.jit_dirs, self.recorded_here);
        let map = self
            .perf_maps
            .entry(pid)
            .or_insert_with(|| {
                let kept = jit_dirs.iter().find_map(|dir| {
                    PerfMap::load_from(source, &dir.join(format!("perf-{pid}.map")))
                });
                if kept.is_some() || !recorded_here {
                    return kept.map(Rc::new);
                }
                let inside = source.process_root(pid).map(|(_, root)| {
                    let status = source.read_text(Path::new(&format!("/proc/{pid}/status")));
                    let nspid = status.ok().and_then(|text| {
                        let line = text.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
                        line.split_whitespace().last()?.parse::<i32>().ok()
                    });
                    root.join(format!("tmp/perf-{}.map", nspid.unwrap_or(pid)))
                });
                inside
                    .and_then(|path| PerfMap::load_from(source, &path))
                    .or_else(|| PerfMap::load_from(source, &PerfMap::path_for(pid)))
                    .map(Rc::new)
            })
            .clone()?;
        map.lookup(addr.0).map(String::from)
    }

    /// The frame for kernel address `addr`, named as it is (return addresses too, as perf
    /// names the kernel's call chain).
    pub fn kernel_frame(&mut self, addr: Avma) -> FrameRef {
        if let Some(&f) = self.kernel_names.get(&addr) {
            return f;
        }
        if self.kernel.is_none()
            && self.kernel_loading.is_none()
            && self.kernel_symbol_files.any()
            && self.load_kernel_ahead
        {
            let source = self.source.clone();
            let files = self.kernel_symbol_files.clone();
            let starts = self.kernel_starts.clone();
            self.kernel_loading = Some(std::thread::spawn(move || files.load(&*source, &starts)));
        }
        if self.kernel.is_none() && self.kernel_loading.as_ref().is_none_or(|h| h.is_finished()) {
            self.join_kernel_symbols();
        }
        let f = if self.kernel.is_some() {
            let (name, module) = self.kernel_name(addr);
            self.frames.intern(&name, &module, FrameKind::Kernel)
        } else {
            // Not loaded yet: a frame of its own for this address, named when it is.
            let id = self.frames.provisional(FrameInfo {
                name: unnamed_kernel(addr).into(),
                module: Arc::from("[kernel.kallsyms]"),
                kind: FrameKind::Kernel,
            });
            self.kernel_pending.push((id, addr));
            id
        };
        self.kernel_names.insert(addr, f);
        f
    }

    fn join_kernel_symbols(&mut self) {
        if self.kernel.is_some() {
            return;
        }
        let symbols = match self.kernel_loading.take() {
            Some(handle) => handle.join().ok().flatten(),
            None => self
                .kernel_symbol_files
                .load(&*self.source, &self.kernel_starts),
        };
        self.kernel = Some(symbols);
    }

    fn kernel_name(&self, addr: Avma) -> (String, Arc<str>) {
        match self
            .kernel
            .as_ref()
            .and_then(|k| k.as_ref()?.lookup(addr.0))
        {
            Some((name, None)) => (name.to_string(), Arc::from("[kernel.kallsyms]")),
            Some((name, Some(m))) => (name.to_string(), Arc::from(format!("[{m}]"))),
            None => (unnamed_kernel(addr), Arc::from("[kernel.kallsyms]")),
        }
    }

    /// Gives every frame its final name. Kernel frames resolved before the kernel symbols
    /// were read carry a provisional `[kernel]+0xADDR` name until this is called; different
    /// addresses of one function keep different [`FrameRef`]s with the same name, so callers
    /// that merge stacks must merge by name.
    pub fn finish_names(&mut self) {
        self.join_kernel_symbols();
        for (id, addr) in std::mem::take(&mut self.kernel_pending) {
            let (name, module) = self.kernel_name(addr);
            self.frames.rename(id, name, module);
        }
    }
}

impl Drop for Namer {
    /// A namer dropped while its kernel symbols still load (a walk that ended in an error
    /// before naming) waits for the loading thread rather than leave it running detached.
    fn drop(&mut self) {
        if let Some(handle) = self.kernel_loading.take() {
            let _ = handle.join();
        }
    }
}

/// The name of a kernel address no symbol names: the address itself, since kernel addresses
/// have no file offset to show.
fn unnamed_kernel(addr: Avma) -> String {
    format!("[kernel]+{:#x}", addr.0)
}

/// An image `perf inject --jit` wrote for JIT-compiled code (`jitted-PID-N.so`, by its short
/// module name): its frames are JIT frames, as inferno's perf collapser annotates them.
fn jitted_image(module: &str) -> bool {
    module.starts_with("jitted-") && module.ends_with(".so")
}

/// The name of a thread no COMM record named: `:PID`, but `swapper` for pid 0, the idle task,
/// which has no COMM record (the kernel never reports one), as perf names it.
fn unnamed(pid: i32) -> Arc<str> {
    if pid == 0 {
        "swapper".into()
    } else {
        format!(":{pid}").into()
    }
}
