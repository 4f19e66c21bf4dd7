//! The resolver: thread names and kernel symbols fed in time order, with an [`Unwinder`] (the
//! processes' mappings and opened images, and user-stack unwinding: [`unwinder`], [`stack`])
//! inside, and the resolution of a sample into a named stack, which splits the sample's call
//! chain into kernel and user parts, has the unwinder unwind the user part and names both
//! ([`naming`]).

#[path = "locations.rs"]
pub(crate) mod locations;
mod naming;
mod stack;
mod unwinder;

pub use unwinder::Unwinder;

use std::collections::BTreeMap;

use foldhash::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use cpiflame_perf_data::abi::{callchain, misc};
use cpiflame_perf_data::{Meta, RecordKind, Sample};

use crate::address::{Avma, StackFrame, Svma};
use crate::frames::{FrameInfo, FrameRef, FrameTable, StackEntry};
use crate::kernel::{Kallsyms, KernelSymbolFiles};
use crate::locate::hex;
use crate::options::Options;
use crate::source::{HostSource, Machine, Source};

/// Counts the resolver keeps for the end-of-run report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub samples: u64,
    /// Samples whose user stack was unwound from registers and a stack copy.
    pub dwarf_unwound: u64,
    /// Of those, unwinds that stopped on an error (unreadable stack, missing CFI) rather than
    /// at the stack's end; their stacks are kept as far as they went.
    pub unwind_stopped_early: u64,
    /// Of those, unwinds that ended at a frame whose address is in a module with unwind
    /// tables that do not cover it (glibc's `__clone3` and `__clone` after the syscall): the
    /// stack ends there, as perf's does, instead of going on by a guess.
    pub unwind_ended_uncovered: u64,
    /// Samples whose user stack was stitched from an LBR call stack.
    pub lbr_stitched: u64,
}

/// A module whose frames could not be named, for the warning at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unnamed {
    pub path: String,
    pub reason: String,
    pub frames: u64,
}

/// What it takes to make an unwind-only twin of a resolver on another thread: it sees the
/// same records, opens the same files and so unwinds every sample as the resolver would.
#[derive(Clone)]
pub struct TwinRecipe {
    meta: Meta,
    options: Options,
    source: Arc<dyn Source>,
}

impl TwinRecipe {
    /// The twin: feed it every record with [`Unwinder::observe`] and unwind samples with
    /// [`Unwinder::unwind_user_stack`].
    pub fn make(self) -> Unwinder {
        Unwinder::with_source(&self.meta, self.options, self.source)
    }
}

/// Keeps the state of every process of a recording (thread names here, mappings and images
/// in its [`Unwinder`]) as records are fed in time order, and resolves samples to named
/// stacks.
pub struct Resolver {
    /// The processes' mappings and images, and the unwinding of user stacks.
    unwinder: Unwinder,
    recorded_here: bool,
    /// Thread names (comm) by tid.
    threads: HashMap<i32, Arc<str>>,
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
    /// Kernel frames handed out before the symbols were ready: named at [`Resolver::finish_names`].
    kernel_pending: Vec<(FrameRef, Avma)>,
    frames: FrameTable,
    /// Frames at a stated address of an image, innermost first.
    names: HashMap<(usize, Svma), Box<[FrameRef]>>,
    kernel_names: HashMap<Avma, FrameRef>,
    unnamed: BTreeMap<Arc<str>, (String, u64)>,
    /// User frames of the sample being resolved, innermost first.
    addrs: Vec<StackFrame>,
    /// The index in `addrs` of an LBR call stack's newest call target, a frame only when its
    /// function is not the leaf's (see [`Resolver::stitch_lbr`]).
    lbr_callee: Option<usize>,
    unwind_only: bool,
    /// Whether work may be started ahead on other threads (symbol tables, debug info).
    parallel: bool,
    /// How this resolver was made, for an unwinding twin on another thread.
    recipe: TwinRecipe,
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

/// Whether a recording with header metadata `meta` was made on `machine`: host name and
/// kernel release match, and so does the kernel's build id when both are known. A file
/// without that metadata (a recorder killed before writing it) is taken as local.
fn recorded_on(meta: &Meta, machine: &Machine) -> bool {
    let same_host = match (&meta.hostname, &meta.os_release) {
        (Some(h), Some(r)) => {
            Some(h) == machine.hostname.as_ref() && Some(r) == machine.os_release.as_ref()
        }
        _ => true,
    };
    let kernel_build_id = meta
        .build_ids
        .iter()
        .find(|b| b.path == b"[kernel.kallsyms]")
        .map(|b| &b.build_id);
    let same_kernel = match (kernel_build_id, &machine.kernel_build_id) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    same_host && same_kernel
}

impl Resolver {
    /// A resolver for a file with header metadata `meta`, reading this host.
    pub fn new(meta: &Meta, options: Options) -> Resolver {
        Self::with_source(meta, options, HostSource::shared())
    }

    /// A resolver for a file with header metadata `meta` that reads everything outside the
    /// recording from `source`.
    pub fn with_source(meta: &Meta, options: Options, source: Arc<dyn Source>) -> Resolver {
        let recipe = TwinRecipe {
            meta: meta.clone(),
            options: Options {
                unwind_only: true,
                single_threaded: true,
                ..options.clone()
            },
            source: source.clone(),
        };
        let parallel = !options.single_threaded;
        let unwind_only = options.unwind_only;
        let kallsyms = options.kallsyms.clone();
        let buildid_cache = options.buildid_cache.clone();
        let unwinder = Unwinder::with_source(meta, options, source);
        let recorded_here = unwinder.locator.recorded_here;
        let kernel_build_id = meta
            .build_ids
            .iter()
            .find(|b| b.path == b"[kernel.kallsyms]")
            .map(|b| hex(&b.build_id));
        let kernel_symbol_files = KernelSymbolFiles {
            given: kallsyms,
            // Only for a file recorded here: a copy from this machine's kernel says nothing
            // of where another machine had its modules.
            cached: buildid_cache
                .as_ref()
                .zip(kernel_build_id)
                .filter(|_| recorded_here)
                .map(|(cache, id)| cache.join("[kernel.kallsyms]").join(id).join("kallsyms")),
            running: recorded_here.then(|| PathBuf::from("/proc/kallsyms")),
        };
        Resolver {
            unwinder,
            recorded_here,
            threads: HashMap::default(),
            kernel_symbol_files,
            kernel_starts: Vec::new(),
            kernel: None,
            kernel_loading: None,
            kernel_pending: Vec::new(),
            frames: FrameTable::default(),
            names: HashMap::default(),
            kernel_names: HashMap::default(),
            unnamed: BTreeMap::new(),
            addrs: Vec::new(),
            lbr_callee: None,
            unwind_only,
            parallel,
            recipe,
            kernel_ips: Vec::new(),
            user_ips: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Whether the file looks recorded on this machine (kernel symbols and vDSO are ours).
    pub fn recorded_here(&self) -> bool {
        self.recorded_here
    }

    /// Whether work may run on other threads (false with [`Options::single_threaded`]).
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// The frame table entry for `frame`.
    pub fn frame(&self, frame: FrameRef) -> &FrameInfo {
        self.frames.get(frame)
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
            RecordKind::Mmap(m) if m.pid == -1 && m.path.starts_with(b"[kernel.kallsyms]") => {
                self.kernel_starts.extend([m.addr, m.pgoff]);
            }
            RecordKind::Comm { tid, name, .. } => {
                self.threads
                    .insert(*tid, String::from_utf8_lossy(name).into());
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
            }
            _ => {}
        }
        self.unwinder.observe(record);
    }

    /// Resolves `sample` into `out`, leaf first: kernel frames, then user frames (with
    /// inlined functions before the function they were inlined into).
    pub fn resolve(&mut self, sample: &Sample<'_>, out: &mut Vec<StackEntry>) {
        self.resolve_with(sample, None, out);
    }

    /// How to make an unwind-only twin of this resolver, to unwind on another thread while
    /// this one names ([`Resolver::resolve_unwound`]).
    pub fn twin_recipe(&self) -> TwinRecipe {
        self.recipe.clone()
    }

    /// [`Resolver::resolve`] with the user stack a twin unwound ([`Unwinder::unwind_user_stack`]):
    /// `Some(frames)` when it had a stack to unwind, `None` when not. The result is the same.
    pub fn resolve_unwound(
        &mut self,
        sample: &Sample<'_>,
        unwound: Option<&[StackFrame]>,
        out: &mut Vec<StackEntry>,
    ) {
        self.resolve_with(sample, Some(unwound), out);
    }

    /// The twin's counts of the unwinds it did for this resolver.
    pub fn add_unwind_stats(&mut self, twin: &Stats) {
        self.stats.dwarf_unwound += twin.dwarf_unwound;
        self.stats.unwind_stopped_early += twin.unwind_stopped_early;
        self.stats.unwind_ended_uncovered += twin.unwind_ended_uncovered;
    }

    fn resolve_with(
        &mut self,
        sample: &Sample<'_>,
        unwound: Option<Option<&[StackFrame]>>,
        out: &mut Vec<StackEntry>,
    ) {
        out.clear();
        self.lbr_callee = None;
        self.stats.samples += 1;
        let pid = sample.pid.unwrap_or(-1);
        // Buffers kept across samples: this is the per-sample hot path.
        let mut kernel_ips = std::mem::take(&mut self.kernel_ips);
        let mut user_ips = std::mem::take(&mut self.user_ips);
        kernel_ips.clear();
        user_ips.clear();
        // Whether the chain has a user part (perf stitches an LBR call stack only then).
        let mut user_context = sample.callchain.is_none();
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
                        user_context |= addr == callchain::USER;
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
        // Kernel addresses are named as they are, return addresses too, as perf names the
        // kernel's call chain: a return address at a function's first byte (the chain of a
        // tail call) is that function's, not the padding (`__pfx_`) before it.
        for &ip in &kernel_ips {
            let frame = self.kernel_frame(Avma(ip));
            out.push(StackEntry { frame, address: ip });
        }

        // User part: unwound from registers and stack bytes when the sample has them, else
        // stitched from an LBR call stack, else the recorded call chain as it is.
        self.addrs.clear();
        let stack_unwound = match unwound {
            None => {
                let unwound = self.unwinder.unwind_user_stack(sample, &mut self.addrs);
                let counts = std::mem::take(&mut self.unwinder.stats);
                self.add_unwind_stats(&counts);
                unwound
            }
            Some(Some(frames)) => {
                self.addrs.extend_from_slice(frames);
                true
            }
            Some(None) => false,
        };
        let user_done =
            stack_unwound || (user_context && self.stitch_lbr(sample, user_ips.first().copied()));
        if !user_done {
            self.addrs.extend(
                user_ips
                    .iter()
                    .enumerate()
                    .map(|(i, &ip)| chain_frame(i, Avma(ip))),
            );
        }
        let addrs = std::mem::take(&mut self.addrs);
        let callee = self.lbr_callee.take();
        for (i, &frame) in addrs.iter().enumerate() {
            let (address, lookup) = (frame.address(), frame.lookup());
            if callee == Some(i) {
                // The function the newest call entered: a frame of its own when the leaf is
                // in another one (it tail-called on, or it is a PLT stub), named honestly.
                let leaf_function = out.last().map(|e| e.frame);
                let before = out.len();
                let named = self.push_user_frames(pid, address, lookup, out, false);
                if !named || out.last().map(|e| e.frame) == leaf_function {
                    out.truncate(before);
                }
                continue;
            }
            self.push_user_frames(pid, address, lookup, out, true);
        }
        self.addrs = addrs;
        self.kernel_ips = kernel_ips;
        self.user_ips = user_ips;
    }
}

impl Resolver {
    /// Stitches the user stack of `sample` from its branch stack into `self.addrs`, when
    /// that is an LBR call stack (`perf record --call-graph lbr`) with entries: the user
    /// leaf, the newest entry's `to` when that is in another function, then each entry's
    /// `from`, the call site in the caller, innermost first (as perf's
    /// `resolve_lbr_callchain_sample` does). Returns whether it did.
    ///
    /// The leaf is `user_leaf`, the first user address of the call chain (the sample's ip
    /// for a user sample; where the thread entered the kernel otherwise), as in a frame
    /// pointer or DWARF stack. perf takes the newest entry's `to` instead, the entry of the
    /// function called last: the same function as the leaf (but none inlined in it), unless
    /// that function jumped on to another (a tail call: `cabs` to `hypot`; a PLT stub to the
    /// library's function), which then is the leaf and perf does not show. Here both are
    /// frames then: the `to` is kept (in `self.lbr_callee`) and shown only when it is named
    /// and its function is not the leaf's, so the leaf is never doubled. That entry is the
    /// leaf itself only when the chain has no user address.
    ///
    /// The entries are newest first whether or not the sample carries the hardware index
    /// (PERF_SAMPLE_BRANCH_HW_INDEX): the kernel orders them; the index only lets perf's
    /// optional `--stitch-lbr` join stacks deeper than the LBR across samples.
    fn stitch_lbr(&mut self, sample: &Sample<'_>, user_leaf: Option<u64>) -> bool {
        let Some(branches) = sample.branch_stack else {
            return false;
        };
        // A plain branch stack (`-b`) is the last branches taken, not the callers: the
        // call chain stays the stack.
        if !branches.call_stack || branches.is_empty() {
            return false;
        }
        let newest_target = branches.get(0).map(|e| e.to);
        match (user_leaf, newest_target) {
            (Some(leaf), Some(target)) => {
                self.addrs.push(StackFrame::Instruction(Avma(leaf)));
                self.lbr_callee = Some(self.addrs.len());
                self.addrs.push(StackFrame::Instruction(Avma(target)));
            }
            (Some(leaf), None) | (None, Some(leaf)) => {
                self.addrs.push(StackFrame::Instruction(Avma(leaf)))
            }
            (None, None) => {}
        }
        // A `from` is the call instruction itself, not a return address: it is looked up
        // as it is.
        self.addrs.extend(
            branches
                .iter()
                .take(MAX_FRAMES.saturating_sub(self.addrs.len()))
                .map(|e| StackFrame::Instruction(Avma(e.from))),
        );
        self.stats.lbr_stitched += 1;
        true
    }
}

/// The `i`th address of a call chain as a frame: the leaf's address is the instruction
/// itself, every other one a return address.
fn chain_frame(i: usize, ip: Avma) -> StackFrame {
    if i == 0 {
        StackFrame::Instruction(ip)
    } else {
        StackFrame::ReturnAddress(ip)
    }
}

/// Stacks deeper than this are cut (recursion gone wrong, or a corrupt stack copy).
const MAX_FRAMES: usize = 1024;
