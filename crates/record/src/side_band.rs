//! What the side-band records written so far say of every live process (thread names,
//! mappings, inherited at fork, dropped at exec and a file after exit), and the last counter
//! values its samples carried: what a `--switch-output` file must start with to be read
//! without the files before it ([`crate::rotate`] writes it).
//!
//! It must never forget a thread before the file after the one it exited in is started:
//! its last samples may be drained after its exit.

use std::collections::BTreeMap;

use cpiflame_perf_data::write::{
    comm_record, read_record, EventAttr, ReadValues, SampleId, WriteError,
};
use cpiflame_perf_data::{attr_flags, RecordKind, Sample};

/// What the side-band records written so far say of every live process: what a file must
/// start with for its samples to be named without the files before it.
#[derive(Debug, Default)]
pub(crate) struct SideBand {
    processes: BTreeMap<i32, Process>,
    /// The CGROUP records the kernel wrote (cgroups made while recording).
    cgroups: Vec<Vec<u8>>,
    /// The file being written (the number of switches so far).
    file: u32,
    /// The last counter values samples carried.
    pub(crate) seeds: Seeds,
}

/// The last counter values (PERF_SAMPLE_READ) written, per counter group and thread, keyed
/// as the reader keys a sample's values (`ReadDeltas` in `crates/pipeline/src/collapse.rs`):
/// by the group's first counter id, and by thread when the event is inherited (one id then
/// counts for every thread it was inherited into, each with its own count), else thread -1.
#[derive(Debug, Default)]
pub(crate) struct Seeds {
    last: BTreeMap<(u64, i32), Seed>,
}

#[derive(Debug)]
struct Seed {
    /// The sampling event (its read_format and sample_id layout).
    attr: usize,
    /// The sample's pid, tid, time, id, cpu.
    sample_id: SampleId,
    values: ReadValues,
    /// Kept per thread: the file during which the thread exited.
    exited: Option<u32>,
}

impl Seeds {
    /// Keeps the values `sample` (of event `attr`, index `event`) carries, if any.
    pub(crate) fn note(&mut self, event: usize, attr: &EventAttr, sample: &Sample<'_>) {
        let Some(read) = &sample.read else { return };
        // Values without ids are matched to no counter by readers: nothing to start from.
        let Some(first) = read.values().first().and_then(|&(_, id)| id) else {
            return;
        };
        let thread = match sample.tid {
            Some(tid) if attr.flags & attr_flags::INHERIT != 0 => tid,
            _ => -1,
        };
        let sample_id = SampleId {
            pid: sample.pid.unwrap_or(-1),
            tid: sample.tid.unwrap_or(-1),
            time: sample.time.unwrap_or(0),
            id: sample.id.unwrap_or(first),
            stream_id: sample.stream_id.unwrap_or(first),
            cpu: sample.cpu.unwrap_or(0),
        };
        self.last.insert(
            (first, thread),
            Seed {
                attr: event,
                sample_id,
                values: ReadValues::from(read),
                exited: None,
            },
        );
    }

    /// Thread `tid` exited during file `file`: its own values are no more once the next
    /// file is written.
    fn exited(&mut self, tid: i32, file: u32) {
        for ((_, thread), seed) in &mut self.last {
            if *thread == tid {
                seed.exited = Some(file);
            }
        }
    }

    /// The READ records a new file starts with, oldest first: one per group and thread,
    /// with the time, ids and cpu of the sample whose values it holds.
    pub(crate) fn records(&self, attrs: &[EventAttr]) -> Result<Vec<Vec<u8>>, WriteError> {
        let mut seeds: Vec<&Seed> = self.last.values().collect();
        seeds.sort_by_key(|s| s.sample_id.time);
        seeds
            .into_iter()
            .map(|s| {
                let id = &s.sample_id;
                read_record(&attrs[s.attr], id.pid, id.tid, &s.values, id)
            })
            .collect()
    }
}

#[derive(Clone, Debug, Default)]
struct Process {
    /// Threads by tid.
    threads: BTreeMap<i32, Thread>,
    /// Its mappings' MMAP/MMAP2 records (start, length, record), oldest first: read in this
    /// order, a later mapping over an earlier one wins, as in the kernel.
    maps: Vec<(u64, u64, Vec<u8>)>,
    /// The file during which its first thread exited.
    exited: Option<u32>,
}

#[derive(Clone, Debug)]
struct Thread {
    name: Vec<u8>,
    exited: Option<u32>,
}

impl SideBand {
    /// A CGROUP record the kernel wrote: every later file starts with it too.
    pub(crate) fn keep_cgroup(&mut self, record: &[u8]) {
        self.cgroups.push(record.to_vec());
    }
    /// Keeps what a side-band record `record` (read as `kind`) says.
    pub(crate) fn observe(&mut self, record: &[u8], kind: &RecordKind<'_>) {
        match *kind {
            RecordKind::Mmap(ref m) => {
                let maps = &mut self.processes.entry(m.pid).or_default().maps;
                // Mappings the new one covers whole are gone.
                let end = m.addr.saturating_add(m.len);
                maps.retain(|&(a, len, _)| a < m.addr || a.saturating_add(len) > end);
                maps.push((m.addr, m.len, record.to_vec()));
            }
            RecordKind::Comm {
                pid,
                tid,
                name,
                exec,
            } => {
                let process = self.processes.entry(pid).or_default();
                if exec {
                    // A new program: its old mappings and other threads are gone.
                    *process = Process::default();
                }
                process.threads.insert(
                    tid,
                    Thread {
                        name: name.to_vec(),
                        exited: None,
                    },
                );
            }
            RecordKind::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                let parent = self.processes.get(&ppid);
                let name = parent
                    .and_then(|p| p.threads.get(&ptid).or_else(|| p.threads.get(&ppid)))
                    .map(|t| t.name.clone())
                    .unwrap_or_default();
                let thread = Thread { name, exited: None };
                if pid == ppid {
                    self.processes
                        .entry(pid)
                        .or_default()
                        .threads
                        .insert(tid, thread);
                } else {
                    // A new process: a copy of its parent's mappings, under its own pid.
                    let maps = parent
                        .map(|p| p.maps.iter().map(|(a, l, r)| (*a, *l, with_pid(r, pid))))
                        .into_iter()
                        .flatten()
                        .collect();
                    let threads = BTreeMap::from([(tid, thread)]);
                    self.processes.insert(
                        pid,
                        Process {
                            threads,
                            maps,
                            exited: None,
                        },
                    );
                }
            }
            RecordKind::Exit { pid, tid, .. } => {
                let file = self.file;
                self.seeds.exited(tid, file);
                if let Some(process) = self.processes.get_mut(&pid) {
                    if let Some(t) = process.threads.get_mut(&tid) {
                        t.exited = Some(file);
                    }
                    if pid == tid {
                        process.exited = Some(file);
                    }
                }
            }
            _ => {}
        }
    }

    /// A new file begins: threads that ended before the file just finished, and processes
    /// with none left, are forgotten (those that ended during it are written once more: their last samples
    /// may be drained after their exit).
    pub(crate) fn next_file(&mut self) {
        self.file += 1;
        let file = self.file;
        let gone = |exited: Option<u32>| exited.is_some_and(|e| e + 1 < file);
        for p in self.processes.values_mut() {
            p.threads.retain(|_, t| !gone(t.exited));
        }
        // A process whose first thread exited lives on while another thread does.
        self.processes
            .retain(|_, p| !(gone(p.exited) && p.threads.is_empty()));
        self.seeds.last.retain(|_, s| !gone(s.exited));
    }

    /// The records a new file starts with: per process, a COMM record per thread (the
    /// process's own first) and its mappings' records.
    pub(crate) fn replay(&self, attr: &EventAttr) -> Result<Vec<Vec<u8>>, WriteError> {
        let mut records = self.cgroups.clone();
        let id = attr.ids.first().copied().unwrap_or(0);
        for (&pid, process) in &self.processes {
            let leader = process.threads.get_key_value(&pid);
            let others = process.threads.iter().filter(|(&tid, _)| tid != pid);
            for (&tid, thread) in leader.into_iter().chain(others) {
                let sample_id = SampleId {
                    pid,
                    tid,
                    id,
                    stream_id: id,
                    ..SampleId::default()
                };
                let name = String::from_utf8_lossy(&thread.name);
                records.push(comm_record(attr, pid, tid, &name, false, &sample_id)?);
            }
            records.extend(process.maps.iter().map(|(_, _, r)| r.clone()));
        }
        Ok(records)
    }
}

/// An MMAP or MMAP2 record with its pid and tid (the body's first two fields) set to `pid`.
fn with_pid(record: &[u8], pid: i32) -> Vec<u8> {
    let mut copy = record.to_vec();
    if copy.len() >= 16 {
        copy[8..12].copy_from_slice(&pid.to_ne_bytes());
        copy[12..16].copy_from_slice(&pid.to_ne_bytes());
    }
    copy
}
