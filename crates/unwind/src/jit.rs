//! A process's JIT code as the recording goes on: the functions its JIT dumps loaded up to
//! the moment of the sample being resolved (each with its code, lines and unwind table), and
//! how a stack is walked through JIT code that has no unwind table (a perf map's functions).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use foldhash::HashMap;
use framehop::x86_64::UnwinderX86_64;
use framehop::Unwinder as _;

use crate::jitdump::{JitChange, JitDump, JitFunction};
use crate::shared::SharedBytes;

/// The JIT functions of one process, and the dumps whose later changes are still to come.
#[derive(Clone, Default)]
pub(crate) struct JitCode {
    /// Functions by start address; none overlaps another.
    functions: BTreeMap<u64, Placed>,
    /// The dumps being followed (with their number among the unwinder's dumps) and how
    /// many of their changes are applied.
    dumps: Vec<(Arc<LoadedDump>, u32, usize)>,
}

/// A JIT function where it is, the module its frames carry (the dump's file name), and
/// which load of which dump it is.
#[derive(Clone)]
pub(crate) struct Placed {
    pub function: Arc<JitFunction>,
    pub module: Arc<str>,
    pub code: JitCodeRef,
}

/// A function's load in a recording's dumps: the dump's number among those the resolver
/// read and the change's index in it. [`CodeFile::Jit`](crate::CodeFile::Jit) holds one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JitCodeRef {
    pub(crate) dump: u32,
    pub(crate) event: u32,
}

/// A dump read, with the name its frames carry as their module.
pub(crate) struct LoadedDump {
    pub dump: JitDump,
    pub module: Arc<str>,
    /// Where it was read from.
    pub path: std::path::PathBuf,
}

impl JitCode {
    /// The function whose code holds `addr`, at this point of the recording.
    pub fn function_at(&self, addr: u64) -> Option<&Placed> {
        let (_, placed) = self.functions.range(..=addr).next_back()?;
        placed.function.range().contains(&addr).then_some(placed)
    }

    /// Whether any JIT function is known: then anonymous code is walked by the JIT rule.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty() && self.dumps.is_empty()
    }

    /// Follows `dump` from now on: with `in_time_order` its changes are applied as the
    /// samples' times pass theirs ([`JitCode::advance`]); without (the recording's clock is
    /// not the dump's), all at once, so the latest load at an address wins.
    pub fn attach(
        &mut self,
        dump: Arc<LoadedDump>,
        number: u32,
        in_time_order: bool,
        unwinder: &mut UnwinderX86_64<SharedBytes>,
    ) {
        if self.dumps.iter().any(|(d, _, _)| Arc::ptr_eq(d, &dump)) {
            return;
        }
        self.dumps.push((dump, number, 0));
        if !in_time_order {
            self.advance(u64::MAX, unwinder);
        }
    }

    /// Applies every change of the followed dumps made at or before `time`.
    pub fn advance(&mut self, time: u64, unwinder: &mut UnwinderX86_64<SharedBytes>) {
        let mut dumps = std::mem::take(&mut self.dumps);
        for (loaded, number, next) in &mut dumps {
            while let Some(event) = loaded.dump.events.get(*next) {
                if event.time > time {
                    break;
                }
                let code = JitCodeRef {
                    dump: *number,
                    event: *next as u32,
                };
                self.apply(&event.change, loaded.module.clone(), code, unwinder);
                *next += 1;
            }
        }
        self.dumps = dumps;
    }

    /// A forked child keeps its parent's code but writes its own dump (`jit-CHILD.dump`).
    pub fn forked(&self) -> JitCode {
        JitCode {
            functions: self.functions.clone(),
            dumps: Vec::new(),
        }
    }

    fn apply(
        &mut self,
        change: &JitChange,
        module: Arc<str>,
        code: JitCodeRef,
        unwinder: &mut UnwinderX86_64<SharedBytes>,
    ) {
        let range = match change {
            JitChange::Load(f) => f.range(),
            JitChange::Unload(range) => range.clone(),
        };
        // Whatever code was there is gone.
        let gone: Vec<u64> = self
            .functions
            .range(..range.end.max(range.start.saturating_add(1)))
            .filter(|(_, placed)| placed.function.range().end > range.start)
            .map(|(&start, _)| start)
            .collect();
        for start in gone {
            if let Some(placed) = self.functions.remove(&start) {
                if placed.function.unwind.is_some() {
                    unwinder.remove_module(start);
                }
            }
        }
        if let JitChange::Load(f) = change {
            let unwind = f.unwind.as_ref();
            if let Some(table) = unwind.and_then(|u| u.framehop_module(&module, f.range())) {
                unwinder.add_module(table);
            }
            let placed = Placed {
                function: f.clone(),
                module,
                code,
            };
            self.functions.insert(f.addr, placed);
        }
    }
}

/// The dumps read so far (or why one could not be), by the path asked for, shared by a
/// resolver and its unwinding twin so each is read once.
#[derive(Clone, Default)]
pub(crate) struct DumpCache(Arc<Mutex<HashMap<std::path::PathBuf, DumpRead>>>);

/// A dump read, or why it could not be: `None` when there is no file to read, else a line
/// naming the file.
pub(crate) type DumpRead = Result<Arc<LoadedDump>, Option<String>>;

impl DumpCache {
    /// The dump at `path`, read with `read` the first time.
    pub fn get_or_read(&self, path: &std::path::Path, read: impl FnOnce() -> DumpRead) -> DumpRead {
        let mut dumps = self.0.lock().unwrap_or_else(|e| e.into_inner());
        dumps.entry(path.to_path_buf()).or_insert_with(read).clone()
    }
}
