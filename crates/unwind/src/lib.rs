//! Unwinding and symbolization: from a sample's registers, stack copy and kernel call chain
//! to a list of named frames.
//!
//! - User stacks are unwound with framehop from DWARF CFI (`.eh_frame`, `.eh_frame_hdr`,
//!   `.debug_frame`), falling back to frame pointers where there is none; a user call chain
//!   recorded with `-g` (frame pointers, by the kernel) is used as it is.
//! - Names come from addr2line (inlined functions as their own frames) and the ELF symbol
//!   table (the function's own name, as `perf script` shows it), demangled.
//! - Kernel frames come from the sample's kernel call chain, named from `/proc/kallsyms` when
//!   the file was recorded on this machine.
//!
//! A frame that cannot be named honestly is named `module+0xOFFSET`; a wrong name is worse
//! than none. The resolver reads binaries and debug files; it never writes anything.

mod demangle;
mod image;
mod kernel;
mod locate;
mod perfmap;
mod shared;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use cpiflame_perf_data::abi::{callchain, misc, x86_64_regs};
use cpiflame_perf_data::{Meta, MmapRecord, RecordKind, Sample};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::Unwinder;

pub use demangle::demangle;
pub use image::{Image, ImageError, NamedFrame};
pub use kernel::Kallsyms;
pub use locate::Locator;
pub use perfmap::PerfMap;
pub use shared::SharedBytes;

/// Where a frame's code lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    User,
    /// A function inlined into the frame below it.
    Inline,
    Kernel,
}

/// A distinct named frame; samples refer to it by [`FrameRef`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    pub name: Arc<str>,
    /// Short module name: the binary's file name, `[vdso]`, `[kernel.kallsyms]`, `[ext4]`.
    pub module: Arc<str>,
    pub kind: FrameKind,
}

/// Index into the resolver's frame table ([`Resolver::frame`]).
pub type FrameRef = u32;

/// One frame of a resolved stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackEntry {
    pub frame: FrameRef,
    /// The address in the process (for a return address, the return address itself).
    pub address: u64,
}

/// How to find files and kernel symbols.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--symfs DIR`: look up recorded paths under DIR.
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache (`~/.debug`); `None` to not use one.
    pub buildid_cache: Option<PathBuf>,
    /// Kernel symbol file; defaults to `/proc/kallsyms`.
    pub kallsyms: Option<PathBuf>,
    /// Treat the file as recorded on this machine even if its header says otherwise.
    pub assume_local: bool,
    /// Only unwind, never name: no debug info or kernel symbols are loaded (the recorder
    /// unwinds at record time to know how much of each stack copy to keep).
    pub unwind_only: bool,
}

impl Options {
    /// Defaults for the command line: perf's build-id cache under `$HOME/.debug`.
    pub fn from_env() -> Options {
        Options {
            buildid_cache: std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")),
            ..Options::default()
        }
    }
}

/// Counts the resolver keeps for the end-of-run report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub samples: u64,
    /// Samples whose user stack was unwound from registers and a stack copy.
    pub dwarf_unwound: u64,
    /// Of those, unwinds that stopped on an error (unreadable stack, missing CFI) rather than
    /// at the stack's end; their stacks are kept as far as they went.
    pub unwind_stopped_early: u64,
}

struct Mapping {
    start: u64,
    end: u64,
    pgoff: u64,
    base_avma: u64,
    image: Option<usize>,
    /// Why there is no image, when there is none for a file path.
    image_error: Option<ImageError>,
    /// The recorded path.
    path: Arc<str>,
    /// File name of the path, shown as the frame's module.
    module: Arc<str>,
}

#[derive(Clone, Default)]
struct Process {
    mappings: BTreeMap<u64, Rc<Mapping>>,
    unwinder: UnwinderX86_64<SharedBytes>,
    perf_map: Option<Option<Rc<PerfMap>>>,
}

/// A module whose frames could not be named, for the warning at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unnamed {
    pub path: String,
    pub reason: String,
    pub frames: u64,
}

/// A recorded path and the build id the recording gives for it.
type ImageKey = (Arc<str>, Option<Vec<u8>>);

/// Keeps the state of every process of a recording (mappings, thread names) as records are
/// fed in time order, and resolves samples to named stacks.
pub struct Resolver {
    locator: Locator,
    recorded_here: bool,
    /// Build ids from the file's BUILD_ID feature, by recorded path.
    build_ids: HashMap<Vec<u8>, Vec<u8>>,
    images: Vec<Image>,
    /// Images opened (or failed) per recorded path and build id.
    image_index: HashMap<ImageKey, Result<usize, ImageError>>,
    processes: HashMap<i32, Process>,
    /// Thread names (comm) by tid.
    threads: HashMap<i32, Arc<str>>,
    kallsyms_path: PathBuf,
    /// Kernel symbols: read on another thread from the start (generating /proc/kallsyms
    /// costs the kernel tens of milliseconds), `Some` once joined.
    kernel: Option<Option<Kallsyms>>,
    kernel_loading: Option<std::thread::JoinHandle<Option<Kallsyms>>>,
    /// Kernel frames handed out before the symbols were ready: named at [`Resolver::finish_names`].
    kernel_pending: Vec<(FrameRef, u64)>,
    frames: Vec<FrameInfo>,
    frame_ids: HashMap<(Arc<str>, Arc<str>, FrameKind), FrameRef>,
    names: HashMap<(usize, u64), Box<[FrameRef]>>,
    kernel_names: HashMap<u64, FrameRef>,
    cache: CacheX86_64,
    unnamed: BTreeMap<Arc<str>, (String, u64)>,
    unwinds_x86_64: bool,
    addrs: Vec<(u64, u64)>,
    unwind_only: bool,
    kernel_ips: Vec<u64>,
    user_ips: Vec<u64>,
    pub stats: Stats,
}

fn short_name(path: &str) -> Arc<str> {
    if path.starts_with('[') {
        return path.into();
    }
    path.rsplit('/').next().unwrap_or(path).into()
}

fn this_machine() -> (Option<String>, Option<String>) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    (
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/osrelease"),
    )
}

impl Resolver {
    /// A resolver for a file with header metadata `meta`.
    pub fn new(meta: &Meta, options: Options) -> Resolver {
        let (host, release) = this_machine();
        // Recorded here when host name and kernel release match; a file without that
        // metadata (a recorder killed before writing it) is taken as local.
        let same_host = match (&meta.hostname, &meta.os_release) {
            (Some(h), Some(r)) => Some(h) == host.as_ref() && Some(r) == release.as_ref(),
            _ => true,
        };
        let kernel_build_id = meta
            .build_ids
            .iter()
            .find(|b| b.path == b"[kernel.kallsyms]")
            .map(|b| b.build_id.clone());
        let same_kernel = match (kernel_build_id, kernel::running_kernel_build_id()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        let recorded_here = options.assume_local || (same_host && same_kernel);
        let arch_ok = meta.arch.as_deref().is_none_or(|a| a == "x86_64");
        let kallsyms_path = options
            .kallsyms
            .clone()
            .unwrap_or_else(|| PathBuf::from("/proc/kallsyms"));
        let kernel_loading = (recorded_here && !options.unwind_only).then(|| {
            let path = kallsyms_path.clone();
            std::thread::spawn(move || Kallsyms::load(&path))
        });
        let mut resolver = Resolver {
            locator: Locator {
                symfs: options.symfs,
                buildid_cache: options.buildid_cache,
                recorded_here,
            },
            recorded_here,
            build_ids: meta
                .build_ids
                .iter()
                .map(|b| (b.path.clone(), b.build_id.clone()))
                .collect(),
            images: Vec::new(),
            image_index: HashMap::new(),
            processes: HashMap::new(),
            threads: HashMap::new(),
            kallsyms_path,
            kernel: None,
            kernel_loading: None,
            kernel_pending: Vec::new(),
            frames: Vec::new(),
            frame_ids: HashMap::new(),
            names: HashMap::new(),
            kernel_names: HashMap::new(),
            cache: CacheX86_64::new(),
            unnamed: BTreeMap::new(),
            unwinds_x86_64: arch_ok && cfg!(target_endian = "little"),
            addrs: Vec::new(),
            unwind_only: options.unwind_only,
            kernel_ips: Vec::new(),
            user_ips: Vec::new(),
            stats: Stats::default(),
        };
        resolver.kernel_loading = kernel_loading;
        resolver
    }

    /// Whether the file looks recorded on this machine (kernel symbols and vDSO are ours).
    pub fn recorded_here(&self) -> bool {
        self.recorded_here
    }

    /// The frame table entry for `frame`.
    pub fn frame(&self, frame: FrameRef) -> &FrameInfo {
        &self.frames[frame as usize]
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

    /// The name (comm) of thread `tid` of process `pid` at this point of the recording.
    pub fn thread_name(&self, pid: i32, tid: i32) -> Arc<str> {
        match self.threads.get(&tid).or_else(|| self.threads.get(&pid)) {
            Some(comm) => comm.clone(),
            None => format!(":{pid}").into(),
        }
    }

    /// Updates process state from a non-sample record. Feed every record in time order.
    pub fn observe(&mut self, record: &RecordKind<'_>) {
        match record {
            RecordKind::Mmap(m) => self.on_mmap(m),
            RecordKind::Comm {
                pid,
                tid,
                name,
                exec,
            } => {
                if *exec {
                    // A new program image: the old mappings are gone.
                    self.processes.insert(*pid, Process::default());
                }
                self.threads
                    .insert(*tid, String::from_utf8_lossy(name).into());
            }
            RecordKind::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                if pid != ppid {
                    let child = self.processes.get(ppid).cloned().unwrap_or_default();
                    self.processes.insert(*pid, child);
                }
                let comm = self
                    .threads
                    .get(ptid)
                    .or_else(|| self.threads.get(ppid))
                    .cloned()
                    .unwrap_or_else(|| format!(":{pid}").into());
                self.threads.insert(*tid, comm);
            }
            _ => {}
        }
    }

    fn on_mmap(&mut self, m: &MmapRecord<'_>) {
        if !m.executable || m.pid == -1 || m.cpumode == misc::KERNEL {
            return;
        }
        let path: Arc<str> = String::from_utf8_lossy(m.path).into();
        let build_id = m
            .build_id
            .map(<[u8]>::to_vec)
            .or_else(|| self.build_ids.get(m.path).cloned());
        // Real files and the vDSO; not anonymous memory (`//anon`), memfds or `[heap]`.
        let is_file =
            (path.starts_with('/') && !path.starts_with("//") && !path.starts_with("/memfd:"))
                || &*path == "[vdso]";
        let (image, image_error) = if is_file {
            match self.image_for(&path, build_id) {
                Ok(i) => (Some(i), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, None)
        };
        let start = m.addr;
        let end = m.addr.saturating_add(m.len);
        let base_avma = match image {
            Some(i) => self.images[i].base_avma(start, m.pgoff, m.len),
            None => start.wrapping_sub(m.pgoff),
        };
        let module = match image {
            Some(i) => {
                Some(self.images[i].framehop_module(path.to_string(), start..end, base_avma))
            }
            None => None,
        };
        let process = self.processes.entry(m.pid).or_default();
        let overlapping: Vec<u64> = process
            .mappings
            .range(..end)
            .filter(|(_, old)| old.end > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            process.mappings.remove(&s);
            process.unwinder.remove_module(s);
        }
        if let Some(module) = module {
            process.unwinder.add_module(module);
        }
        process.mappings.insert(
            start,
            Rc::new(Mapping {
                start,
                end,
                pgoff: m.pgoff,
                base_avma,
                image,
                image_error,
                module: short_name(&path),
                path,
            }),
        );
    }

    fn image_for(
        &mut self,
        path: &Arc<str>,
        build_id: Option<Vec<u8>>,
    ) -> Result<usize, ImageError> {
        let key = (path.clone(), build_id);
        if let Some(r) = self.image_index.get(&key) {
            return r.clone();
        }
        let result = self
            .locator
            .open_image(path, key.1.as_deref())
            .map(|image| {
                if !self.unwind_only {
                    image.prefetch_names(|| self.locator.open_debug(&image));
                }
                self.images.push(image);
                self.images.len() - 1
            });
        self.image_index.insert(key, result.clone());
        result
    }

    fn intern(&mut self, name: &str, module: &Arc<str>, kind: FrameKind) -> FrameRef {
        let key = (Arc::<str>::from(name), module.clone(), kind);
        if let Some(&id) = self.frame_ids.get(&key) {
            return id;
        }
        let id = self.frames.len() as FrameRef;
        self.frames.push(FrameInfo {
            name: key.0.clone(),
            module: module.clone(),
            kind,
        });
        self.frame_ids.insert(key, id);
        id
    }

    /// Resolves `sample` into `out`, leaf first: kernel frames, then user frames (with
    /// inlined functions before the function they were inlined into).
    pub fn resolve(&mut self, sample: &Sample<'_>, out: &mut Vec<StackEntry>) {
        out.clear();
        self.stats.samples += 1;
        let pid = sample.pid.unwrap_or(-1);
        // Buffers kept across samples: this is the per-sample hot path.
        let mut kernel_ips = std::mem::take(&mut self.kernel_ips);
        let mut user_ips = std::mem::take(&mut self.user_ips);
        kernel_ips.clear();
        user_ips.clear();
        match sample.callchain {
            Some(chain) if !chain.is_empty() => {
                let mut context = if sample.cpumode == misc::KERNEL {
                    callchain::KERNEL
                } else {
                    callchain::USER
                };
                for addr in chain.iter() {
                    if addr >= callchain::MAX {
                        context = addr;
                        continue;
                    }
                    match context {
                        callchain::KERNEL => kernel_ips.push(addr),
                        callchain::USER => user_ips.push(addr),
                        _ => {}
                    }
                }
            }
            _ => {
                if let Some(ip) = sample.ip {
                    if sample.cpumode == misc::KERNEL {
                        kernel_ips.push(ip);
                    } else {
                        user_ips.push(ip);
                    }
                }
            }
        }
        for (i, &ip) in kernel_ips.iter().enumerate() {
            let lookup = if i == 0 { ip } else { ip.wrapping_sub(1) };
            let frame = self.kernel_frame(lookup);
            out.push(StackEntry { frame, address: ip });
        }

        // User part: unwind from registers and stack bytes when the sample has them.
        self.addrs.clear();
        match (sample.user_regs, sample.user_stack) {
            (Some(regs), Some(stack)) if self.unwinds_x86_64 => {
                let (Some(ip), Some(sp), Some(bp)) = (
                    regs.get(x86_64_regs::IP),
                    regs.get(x86_64_regs::SP),
                    regs.get(x86_64_regs::BP),
                ) else {
                    return;
                };
                self.stats.dwarf_unwound += 1;
                let bytes = stack.used();
                let mut read_stack = |addr: u64| -> Result<u64, ()> {
                    let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
                    let word = bytes.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
                    Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
                };
                let empty = UnwinderX86_64::new();
                let unwinder = match self.processes.get(&pid) {
                    Some(p) => &p.unwinder,
                    None => &empty,
                };
                let mut frames = unwinder.iter_frames(
                    ip,
                    UnwindRegsX86_64::new(ip, sp, bp),
                    &mut self.cache,
                    &mut read_stack,
                );
                loop {
                    match frames.next() {
                        Ok(Some(f)) => {
                            self.addrs.push((f.address(), f.address_for_lookup()));
                            if self.addrs.len() >= MAX_FRAMES {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(_) => {
                            self.stats.unwind_stopped_early += 1;
                            break;
                        }
                    }
                }
            }
            _ => {
                for (i, &ip) in user_ips.iter().enumerate() {
                    let lookup = if i == 0 { ip } else { ip.wrapping_sub(1) };
                    self.addrs.push((ip, lookup));
                }
            }
        }
        let addrs = std::mem::take(&mut self.addrs);
        for &(address, lookup) in &addrs {
            self.push_user_frames(pid, address, lookup, out);
        }
        self.addrs = addrs;
        self.kernel_ips = kernel_ips;
        self.user_ips = user_ips;
    }

    /// How many bytes of the sample's user stack copy the unwinder reads, when it unwinds
    /// to the stack's end without an error; `None` when the sample has no stack copy or the
    /// unwind stopped early (then the whole copy is worth keeping for a better unwinder).
    /// Unwinding the kept bytes again later reads the same addresses and gives the same frames.
    pub fn user_stack_extent(&mut self, sample: &Sample<'_>) -> Option<usize> {
        let (regs, stack) = (sample.user_regs?, sample.user_stack?);
        if !self.unwinds_x86_64 {
            return None;
        }
        let ip = regs.get(x86_64_regs::IP)?;
        let sp = regs.get(x86_64_regs::SP)?;
        let bp = regs.get(x86_64_regs::BP)?;
        let bytes = stack.used();
        let mut extent = 0usize;
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let end = off.checked_add(8).ok_or(())?;
            let word = bytes.get(off..end).ok_or(())?;
            extent = extent.max(end);
            Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
        };
        // Only a process whose mappings are known, and only frames inside them: an address
        // outside every known module means the unwinder was guessing (frame pointers), and
        // a guess may stop early without reading the stack it would need later.
        let process = self.processes.get(&sample.pid.unwrap_or(-1))?;
        let known = |addr: u64| {
            process
                .mappings
                .range(..=addr)
                .next_back()
                .is_some_and(|(_, m)| addr < m.end && m.image.is_some())
        };
        let mut frames = process.unwinder.iter_frames(
            ip,
            UnwindRegsX86_64::new(ip, sp, bp),
            &mut self.cache,
            &mut read_stack,
        );
        for _ in 0..MAX_FRAMES {
            match frames.next() {
                Ok(Some(frame)) if known(frame.address_for_lookup()) => {}
                Ok(Some(_)) | Err(_) => return None,
                Ok(None) => return Some(extent),
            }
        }
        None
    }

    fn push_user_frames(&mut self, pid: i32, address: u64, lookup: u64, out: &mut Vec<StackEntry>) {
        let mapping = self.processes.get(&pid).and_then(|p| {
            let (_, m) = p.mappings.range(..=lookup).next_back()?;
            (lookup < m.end).then(|| m.clone())
        });
        let Some(mapping) = mapping else {
            let name = self.perf_map_name(pid, lookup);
            let jit: Arc<str> = Arc::from(format!("perf-{pid}.map"));
            let frame = match name {
                Some(n) => self.intern(&n, &jit, FrameKind::User),
                None => self.intern("[unknown]", &Arc::from(""), FrameKind::User),
            };
            out.push(StackEntry { frame, address });
            return;
        };
        if let Some(image) = mapping.image {
            let svma = lookup.wrapping_sub(mapping.base_avma);
            let key = (image, svma);
            if !self.names.contains_key(&key) {
                let locator = &self.locator;
                let img = &self.images[image];
                let named = img.frames_at(svma, || locator.open_debug(img));
                let ids: Box<[FrameRef]> = named
                    .iter()
                    .map(|f| {
                        let kind = if f.inlined {
                            FrameKind::Inline
                        } else {
                            FrameKind::User
                        };
                        self.intern(&f.name, &mapping.module, kind)
                    })
                    .collect();
                self.names.insert(key, ids);
            }
            let ids = &self.names[&key];
            if !ids.is_empty() {
                out.extend(ids.iter().map(|&frame| StackEntry { frame, address }));
                return;
            }
            self.unnamed
                .entry(mapping.path.clone())
                .or_insert_with(|| ("no symbol covers some addresses".into(), 0))
                .1 += 1;
        } else {
            if mapping.path.starts_with("//anon") || mapping.path.starts_with("[anon") {
                if let Some(n) = self.perf_map_name(pid, lookup) {
                    let jit: Arc<str> = Arc::from(format!("perf-{pid}.map"));
                    let frame = self.intern(&n, &jit, FrameKind::User);
                    out.push(StackEntry { frame, address });
                    return;
                }
            }
            let reason = match &mapping.image_error {
                Some(e) => e.to_string(),
                None => "no file and no JIT map names this memory".to_string(),
            };
            self.unnamed
                .entry(mapping.path.clone())
                .or_insert((reason, 0))
                .1 += 1;
        }
        // module+0xOFFSET, the offset in the file, so it is the same in every run.
        let offset = address
            .wrapping_sub(mapping.start)
            .wrapping_add(mapping.pgoff);
        let name = format!("{}+{:#x}", mapping.module, offset);
        let frame = self.intern(&name, &mapping.module, FrameKind::User);
        out.push(StackEntry { frame, address });
    }

    fn perf_map_name(&mut self, pid: i32, addr: u64) -> Option<String> {
        if !self.recorded_here {
            return None;
        }
        let process = self.processes.entry(pid).or_default();
        let map = process
            .perf_map
            .get_or_insert_with(|| {
                PerfMap::load(&PathBuf::from(format!("/tmp/perf-{pid}.map"))).map(Rc::new)
            })
            .clone()?;
        map.lookup(addr).map(String::from)
    }

    fn kernel_frame(&mut self, addr: u64) -> FrameRef {
        if let Some(&f) = self.kernel_names.get(&addr) {
            return f;
        }
        if self.kernel.is_none() && self.kernel_loading.as_ref().is_none_or(|h| h.is_finished()) {
            self.join_kernel_symbols();
        }
        let f = if self.kernel.is_some() {
            let (name, module) = self.kernel_name(addr);
            self.intern(&name, &module, FrameKind::Kernel)
        } else {
            // Not loaded yet: a frame of its own for this address, named when it is.
            let id = self.frames.len() as FrameRef;
            self.frames.push(FrameInfo {
                name: format!("[kernel]+{addr:#x}").into(),
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
            None if self.recorded_here => Kallsyms::load(&self.kallsyms_path),
            None => None,
        };
        self.kernel = Some(symbols);
    }

    fn kernel_name(&self, addr: u64) -> (String, Arc<str>) {
        match self.kernel.as_ref().and_then(|k| k.as_ref()?.lookup(addr)) {
            Some((name, None)) => (name.to_string(), Arc::from("[kernel.kallsyms]")),
            Some((name, Some(m))) => (name.to_string(), Arc::from(format!("[{m}]"))),
            None => (
                format!("[kernel]+{addr:#x}"),
                Arc::from("[kernel.kallsyms]"),
            ),
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
            let frame = &mut self.frames[id as usize];
            frame.name = name.into();
            frame.module = module;
        }
    }
}

/// Stacks deeper than this are cut (recursion gone wrong, or a corrupt stack copy).
const MAX_FRAMES: usize = 1024;
