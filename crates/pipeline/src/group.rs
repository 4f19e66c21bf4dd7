//! The root frames of a stack (`--group-by`): whose the samples are, under the functions that
//! ran. `comm` is the thread's name (stackcollapse-perf's root; `comm-PID` and
//! `comm-PID/TID` with its `--pid`/`--tid`), `process` is `comm [pid]`, `thread` adds the
//! thread `comm [tid]` above its process, `cgroup` puts the cgroup's path under the process.
//!
//! When no flag chooses, the recording does: when it is system-wide (its command line,
//! perf's or cpiflame's, has `-a`/`--all-cpus`/`-C`/`--cpu`), `cgroup` if its samples carry
//! cgroup ids (PERF_SAMPLE_CGROUP: `perf record -a --all-cgroups`, `cpiflame record -a`),
//! else `process`; any other recording `comm` (`cpiflame record` keeps cgroup ids in every
//! recording, yet a graph of one program keeps its plain roots).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use foldhash::HashMap;

use cpiflame_perf_data::abi::sample;
use cpiflame_perf_data::{PerfData, Sample};
use cpiflame_profile::{Frame, FrameKind};
use cpiflame_unwind::Resolver;

/// What the root frames of a stack are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GroupBy {
    /// The thread's name (today's root, stackcollapse-perf's).
    #[default]
    Comm,
    /// `comm [pid]`: the process, named by its main thread.
    Process,
    /// The process, then `comm [tid]`: its thread.
    Thread,
    /// The cgroup's path, then the process.
    Cgroup,
}

impl GroupBy {
    /// The flag's words, in the order `--help` lists them.
    pub const NAMES: [&'static str; 4] = ["cgroup", "process", "thread", "comm"];

    /// The grouping of `file` when no flag chose one (see the [module docs](self)).
    pub fn default_for(file: &PerfData) -> GroupBy {
        if !system_wide(&file.meta.cmdline) {
            GroupBy::Comm
        } else if carries_cgroups(file) {
            GroupBy::Cgroup
        } else {
            GroupBy::Process
        }
    }

    /// The grouping to read `file` with: `asked` (`--group-by`), else the recording's
    /// default; `--pid`/`--tid` name comm roots (`comm-PID`), so they choose `comm` and go
    /// with no other grouping.
    pub fn choose(
        asked: Option<GroupBy>,
        pid: bool,
        tid: bool,
        file: &PerfData,
    ) -> Result<GroupBy, GroupByError> {
        match asked {
            Some(g) if g != GroupBy::Comm && (pid || tid) => Err(GroupByError::WithPid(g)),
            Some(GroupBy::Cgroup) if !carries_cgroups(file) => Err(GroupByError::NoCgroups),
            Some(g) => Ok(g),
            None if pid || tid => Ok(GroupBy::Comm),
            None => Ok(GroupBy::default_for(file)),
        }
    }
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GroupBy::Comm => "comm",
            GroupBy::Process => "process",
            GroupBy::Thread => "thread",
            GroupBy::Cgroup => "cgroup",
        })
    }
}

impl FromStr for GroupBy {
    type Err = String;

    fn from_str(s: &str) -> Result<GroupBy, String> {
        match s {
            "comm" => Ok(GroupBy::Comm),
            "process" | "pid" => Ok(GroupBy::Process),
            "thread" | "tid" => Ok(GroupBy::Thread),
            "cgroup" => Ok(GroupBy::Cgroup),
            _ => Err(format!(
                "unknown grouping (groupings: {})",
                GroupBy::NAMES.join(", ")
            )),
        }
    }
}

/// Why a recording cannot be grouped as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroupByError {
    #[error("--group-by {0}: --pid and --tid name comm roots (comm-PID); use one or the other")]
    WithPid(GroupBy),
    #[error("--group-by cgroup: the samples carry no cgroup ids (record with `perf record --all-cgroups`)")]
    NoCgroups,
    #[error("--group-by {0}: text input has only the root frames it was written with")]
    Text(GroupBy),
}

/// Whether an event of `file` samples the task's cgroup id (PERF_SAMPLE_CGROUP); the samples
/// of another that does not are under `[no cgroup id]`.
fn carries_cgroups(file: &PerfData) -> bool {
    file.attrs
        .iter()
        .any(|a| a.sample_type & sample::CGROUP != 0)
}

/// Whether a recording's command line (perf's `perf record ...`, cpiflame's `cpiflame record
/// ...`) recorded system-wide: `-a`/`--all-cpus`, or `-C`/`--cpu` (listed CPUs, every task
/// on them), before the command (`--`). Short flags may be clustered (`-ag`).
pub fn system_wide(cmdline: &[String]) -> bool {
    // perf record's short options that take a value: the rest of a cluster is that value.
    const TAKES_VALUE: &str = "eFcptmoCGujDrI";
    for word in cmdline.iter().skip(1) {
        if word == "--" {
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            if long == "all-cpus" || long == "cpu" || long.starts_with("cpu=") {
                return true;
            }
            continue;
        }
        let Some(short) = word.strip_prefix('-') else {
            continue;
        };
        for c in short.chars() {
            if c == 'a' || c == 'C' {
                return true;
            }
            if !c.is_ascii_alphabetic() || TAKES_VALUE.contains(c) {
                break;
            }
        }
    }
    false
}

/// The root frames of every sample, interned: a sample's root is an index into
/// [`Roots::chains`], each chain root first.
pub(crate) struct Roots {
    group_by: GroupBy,
    pid: bool,
    tid: bool,
    chains: Vec<Vec<Frame>>,
    ids: HashMap<RootKey, u32>,
}

/// What tells one sample's root frames from another's: the cgroup id when grouped by cgroup
/// (`u64::MAX` for a sample without one), the process's (or, for comm roots, the thread's)
/// name, the pid, the thread's name and tid when threads are roots.
type RootKey = (Option<u64>, Arc<str>, i32, Option<Arc<str>>, i32);

impl Roots {
    /// Roots grouped by `group_by`; `pid`/`tid` give comm roots stackcollapse-perf's
    /// `comm-PID`/`comm-PID/TID`.
    pub(crate) fn new(group_by: GroupBy, pid: bool, tid: bool) -> Roots {
        Roots {
            group_by,
            pid,
            tid,
            chains: Vec::new(),
            ids: HashMap::default(),
        }
    }

    /// The root of `sample`'s stack, named as `resolver` names its threads and cgroups at
    /// this point of the recording.
    pub(crate) fn of(&mut self, sample: &Sample<'_>, resolver: &Resolver) -> u32 {
        let pid = sample.pid.unwrap_or(-1);
        let tid = sample.tid.unwrap_or(-1);
        self.of_thread(pid, tid, sample.cgroup, resolver)
    }

    /// The root of thread `tid` of process `pid` (in cgroup `cgroup`), as [`Roots::of`].
    pub(crate) fn of_thread(
        &mut self,
        pid: i32,
        tid: i32,
        cgroup: Option<u64>,
        resolver: &Resolver,
    ) -> u32 {
        let key: RootKey = match self.group_by {
            GroupBy::Comm => (
                None,
                resolver.thread_name(pid, tid),
                if self.pid || self.tid { pid } else { 0 },
                None,
                if self.tid { tid } else { 0 },
            ),
            GroupBy::Process => (None, resolver.process_name(pid, tid), pid, None, 0),
            GroupBy::Thread => (
                None,
                resolver.process_name(pid, tid),
                pid,
                Some(resolver.thread_name(pid, tid)),
                tid,
            ),
            GroupBy::Cgroup => (
                Some(cgroup.unwrap_or(u64::MAX)),
                resolver.process_name(pid, tid),
                pid,
                None,
                0,
            ),
        };
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let chain = self.chain(&key, resolver);
        self.chains.push(chain);
        let id = (self.chains.len() - 1) as u32;
        self.ids.insert(key, id);
        id
    }

    fn chain(&self, key: &RootKey, resolver: &Resolver) -> Vec<Frame> {
        let frame = |name: String, kind| Frame {
            name,
            module: String::new(),
            kind,
        };
        let (cgroup, name, pid, thread, tid) = key;
        if self.group_by == GroupBy::Comm {
            let name = if self.tid {
                format!("{name}-{pid}/{tid}")
            } else if self.pid {
                format!("{name}-{pid}")
            } else {
                name.to_string()
            };
            return vec![frame(name, FrameKind::Process)];
        }
        let mut chain = Vec::with_capacity(2);
        if let Some(id) = *cgroup {
            let path = match resolver.cgroup_path(id) {
                Some(path) => path.to_string(),
                None if id == u64::MAX => "[no cgroup id]".to_string(),
                None => format!("[unknown cgroup {id:#x}]"),
            };
            chain.push(frame(path, FrameKind::Cgroup));
        }
        chain.push(frame(format!("{name} [{pid}]"), FrameKind::Process));
        if let Some(thread) = thread {
            chain.push(frame(format!("{thread} [{tid}]"), FrameKind::Thread));
        }
        chain
    }

    /// The root frames of each root id, root first.
    pub(crate) fn into_chains(self) -> Vec<Vec<Frame>> {
        self.chains
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn system_wide_command_lines() {
        for line in [
            "/usr/bin/perf record -a -g -- sleep 1",
            "perf record --all-cpus -e cpu-clock",
            "perf record -ag -- sleep 1",
            "perf record -g -a sleep 1",
            "perf record -C 0-1 -- sleep 1",
            "perf record -C0",
            "perf record --cpu=1",
            "perf record --cpu 1",
            "cpiflame record -a -o x.data -- sleep 1",
            "perf record -o /tmp/x.data -a --all-cgroups -e cpu-clock -- sleep 0.5",
        ] {
            assert!(system_wide(&words(line)), "{line}");
        }
        for line in [
            "perf record -g -- ./app -a",
            "perf record -e cycles:a ./app",
            "perf record -ocpu.data ./app",
            "perf record -p 12 -g",
            "perf record --call-graph dwarf ./app",
            "cpiflame record -o all.data -- make -C src",
            "cpiflame-test",
            "",
        ] {
            assert!(!system_wide(&words(line)), "{line}");
        }
    }

    #[test]
    fn flag_words_parse_and_print_back() {
        for name in GroupBy::NAMES {
            assert_eq!(name.parse::<GroupBy>().unwrap().to_string(), name);
        }
        assert_eq!("pid".parse::<GroupBy>(), Ok(GroupBy::Process));
        assert!("cgroups"
            .parse::<GroupBy>()
            .unwrap_err()
            .contains("cgroup, process, thread, comm"));
    }
}
