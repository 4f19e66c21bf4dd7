//! The root frame of a sample's stack as `stackcollapse-perf --pid/--tid` name it: `comm`,
//! `comm-PID` or `comm-PID/TID`, each distinct root once (`render --mem`'s loads, the
//! timeline's timed walk).

use std::collections::HashMap;
use std::sync::Arc;

/// The roots met so far, numbered in the order they were first met.
#[derive(Default)]
pub(crate) struct Roots {
    /// Each root's frame name, by number.
    pub(crate) names: Vec<String>,
    ids: HashMap<(Arc<str>, i32, i32), u32>,
}

impl Roots {
    /// The number of the root of a sample of thread `tid` of process `pid` named `comm`:
    /// with `pid` (or `tid`) in the name when `by_pid` (`by_tid`) asks for it.
    pub(crate) fn of(
        &mut self,
        comm: Arc<str>,
        pid: i32,
        tid: i32,
        by_pid: bool,
        by_tid: bool,
    ) -> u32 {
        let key = (
            comm,
            if by_pid || by_tid { pid } else { 0 },
            if by_tid { tid } else { 0 },
        );
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let (comm, pid, tid) = &key;
        self.names.push(if by_tid {
            format!("{comm}-{pid}/{tid}")
        } else if by_pid {
            format!("{comm}-{pid}")
        } else {
            comm.to_string()
        });
        let id = (self.names.len() - 1) as u32;
        self.ids.insert(key, id);
        id
    }
}
