//! The resolver: an [`Unwinder`] (the processes' mappings and opened images, and user-stack
//! unwinding: [`unwinder`], [`stack`]) and a [`Namer`] (frames named from those images,
//! kernel symbols, JIT maps; thread names: [`namer`]), both fed every record in time order,
//! and the per-sample glue between them: the sample's call chain split into kernel and user
//! parts, the user part unwound (or stitched from an LBR call stack, or taken as recorded)
//! into typed addresses, and both parts named.

#[path = "locations.rs"]
pub(crate) mod locations;
mod namer;
mod stack;
mod unwinder;

pub use namer::Namer;
pub use unwinder::Unwinder;

use std::sync::Arc;

use cpiflame_perf_data::abi::{callchain, misc};
use cpiflame_perf_data::{Meta, RecordKind, Sample};

use crate::address::{Avma, EntryAddress, StackFrame};
use crate::frames::{FrameInfo, FrameRef, StackEntry};
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
    /// The JIT dumps the resolver reads, read once for both.
    jit_dumps: crate::jit::DumpCache,
}

impl TwinRecipe {
    /// The twin: feed it every record with [`Unwinder::observe`] and unwind samples with
    /// [`Unwinder::unwind_user_stack`].
    pub fn make(self) -> Unwinder {
        let mut twin = Unwinder::with_source(&self.meta, self.options, self.source);
        twin.jit_dumps = self.jit_dumps;
        twin
    }
}

/// Keeps the state of every process of a recording as records are fed in time order
/// (mappings and images in its [`Unwinder`]; thread names, kernel symbols and JIT maps in its
/// [`Namer`]), and resolves samples to named stacks: the unwinder unwinds, the namer names,
/// and the resolver does what is per sample between them.
pub struct Resolver {
    /// The processes' mappings and images, and the unwinding of user stacks.
    unwinder: Unwinder,
    /// Everything that names frames, from the unwinder's images and the [`Source`].
    namer: Namer,
    /// User frames of the sample being resolved, innermost first.
    addrs: Vec<StackFrame>,
    /// The index in `addrs` of an LBR call stack's newest call target, a frame only when its
    /// function is not the leaf's (see [`Resolver::stitch_lbr`]).
    lbr_callee: Option<usize>,
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
        let parallel = !options.single_threaded;
        let unwinder = Unwinder::with_source(meta, options.clone(), source.clone());
        let recipe = TwinRecipe {
            meta: meta.clone(),
            options: Options {
                unwind_only: true,
                single_threaded: true,
                ..options.clone()
            },
            source,
            jit_dumps: unwinder.jit_dumps.clone(),
        };
        let namer = Namer::new(meta, &options, &unwinder);
        Resolver {
            unwinder,
            namer,
            addrs: Vec::new(),
            lbr_callee: None,
            parallel,
            recipe,
            kernel_ips: Vec::new(),
            user_ips: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Whether the file looks recorded on this machine (kernel symbols and vDSO are ours).
    pub fn recorded_here(&self) -> bool {
        self.unwinder.locator.recorded_here
    }

    /// Whether work may run on other threads (false with [`Options::single_threaded`]).
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// The frame table entry for `frame`.
    pub fn frame(&self, frame: FrameRef) -> &FrameInfo {
        self.namer.frame(frame)
    }

    /// The name (comm) of thread `tid` of process `pid` at this point of the recording.
    pub fn thread_name(&self, pid: i32, tid: i32) -> Arc<str> {
        self.namer.thread_name(pid, tid)
    }

    /// The name of process `pid` (its main thread's comm, else thread `tid`'s) at this point
    /// of the recording.
    pub fn process_name(&self, pid: i32, tid: i32) -> Arc<str> {
        self.namer.process_name(pid, tid)
    }

    /// The path of cgroup `id` (PERF_RECORD_CGROUP), when the recording has said it.
    pub fn cgroup_path(&self, id: u64) -> Option<Arc<str>> {
        self.namer.cgroup_path(id)
    }

    /// Modules whose frames could not be named, with why and how many frames.
    pub fn unnamed(&self) -> Vec<Unnamed> {
        self.namer.unnamed()
    }

    /// What went wrong with the recording's JIT dumps: one line each, naming the file (a
    /// dump not found, cut short or corrupt at an offset, or moved code in a recording on
    /// another clock).
    pub fn jit_notes(&self) -> &[String] {
        &self.unwinder.jit_notes
    }

    /// Gives every frame its final name (see [`Namer::finish_names`]): kernel frames resolved
    /// before the kernel symbols were read carry a provisional `[kernel]+0xADDR` name until
    /// this is called, so callers that merge stacks must merge by name.
    pub fn finish_names(&mut self) {
        self.namer.finish_names();
    }

    /// Updates process state from a non-sample record. Feed every record in time order.
    pub fn observe(&mut self, record: &RecordKind<'_>) {
        self.namer.observe(record);
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
        // The JIT code as it was when the sample was taken, for naming (and unwinding here).
        self.unwinder.advance_jit(pid, sample.time);
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
            let address = Avma(ip);
            let frame = self.namer.kernel_frame(address);
            out.push(StackEntry {
                frame,
                address: EntryAddress::Kernel(address),
                code: None,
            });
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
        let namer = &mut self.namer;
        for (i, &frame) in addrs.iter().enumerate() {
            if callee == Some(i) {
                // The function the newest call entered: a frame of its own when the leaf is
                // in another one (it tail-called on, or it is a PLT stub), named honestly.
                let leaf_function = out.last().map(|e| e.frame);
                let before = out.len();
                let named = namer.push_user_frames(&self.unwinder, pid, frame, out, false);
                if !named || out.last().map(|e| e.frame) == leaf_function {
                    out.truncate(before);
                }
                continue;
            }
            namer.push_user_frames(&self.unwinder, pid, frame, out, true);
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
