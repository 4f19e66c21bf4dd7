//! Synthetic recordings: perf.data files written with cpiflame's own writer
//! (`cpiflame_perf_data::write`), for the attrs this machine cannot record (no PMU) and for
//! output that must not depend on the machine (golden files).
//!
//! [`Recording`] wraps the writer with what every synthetic file of these tests repeats:
//! the side-band records (COMM, MMAP2) carrying the first attr's first id, samples by event
//! index, and the perf map (`/tmp/perf-PID.map`) that names anonymous code. It writes exactly
//! the records it is asked for, in order; what goes into a sample stays with the test.
//!
//! It lives here and not in `cpiflame-testkit` because testkit is a dev-dependency of
//! `cpiflame-perf-data` itself: testkit depending on perf-data would be a cycle.

use std::fs::File;
use std::path::{Path, PathBuf};

use cpiflame_perf_data::write::{
    comm_record, mmap2_record, sample_record, EventAttr, Features, Mmap2, PerfDataWriter,
    SampleFields, SampleId,
};

/// A perf.data file being written.
pub struct Recording {
    path: PathBuf,
    attrs: Vec<EventAttr>,
    w: PerfDataWriter<File>,
}

impl Recording {
    /// Creates `path` with `attrs` (in file order).
    pub fn create(path: impl Into<PathBuf>, attrs: Vec<EventAttr>) -> Recording {
        let path = path.into();
        let file =
            File::create(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        let w = PerfDataWriter::new(file, attrs.clone()).unwrap();
        Recording { path, attrs, w }
    }

    /// The attrs the file was created with.
    pub fn attrs(&self) -> &[EventAttr] {
        &self.attrs
    }

    /// The sample id of side-band records: the first attr's first id (also the stream id),
    /// CPU 0.
    pub fn sid(&self, pid: i32, tid: i32, time: u64) -> SampleId {
        let id = self.attrs[0].ids.first().copied().unwrap_or(0);
        SampleId {
            pid,
            tid,
            time,
            id,
            stream_id: id,
            cpu: 0,
        }
    }

    /// A COMM record (`exec`: the name came with an exec) for thread `tid` of `pid`.
    pub fn comm(&mut self, pid: i32, tid: i32, name: &str, time: u64) -> &mut Self {
        let sid = self.sid(pid, tid, time);
        self.record(&comm_record(&self.attrs[0], pid, tid, name, true, &sid).unwrap())
    }

    /// An MMAP2 record, its sample id from the map's own pid and tid.
    pub fn mmap(&mut self, m: &Mmap2, time: u64) -> &mut Self {
        let sid = self.sid(m.pid, m.tid, time);
        self.record(&mmap2_record(&self.attrs[0], m, &sid).unwrap())
    }

    /// A sample of the attr at `event`, as given.
    pub fn sample(&mut self, event: usize, fields: &SampleFields) -> &mut Self {
        self.record(&sample_record(&self.attrs[event], fields).unwrap())
    }

    /// Any record, as bytes.
    pub fn record(&mut self, record: &[u8]) -> &mut Self {
        self.w.write_record(record).unwrap();
        self
    }

    /// Writes the feature sections and the header's final sizes; returns the path.
    pub fn finish(self, features: &Features) -> PathBuf {
        self.w.finish(features).unwrap();
        self.path
    }

    /// Stops without finishing, as a recorder killed here leaves it (the header says data
    /// size 0); returns the path.
    pub fn abandon(self) -> PathBuf {
        drop(self.w);
        self.path
    }
}

/// The features of a file from this host (`Features::from_host`) with the command line
/// `cpiflame-test`.
pub fn test_features() -> Features {
    Features::from_host(vec!["cpiflame-test".into()])
}

/// Writes the perf map `/tmp/perf-PID.map` (where perf and cpiflame look for the names of
/// JIT code): one `ADDR LEN NAME` line per function, hex without 0x.
pub fn write_perf_map(pid: i32, functions: &[(u64, u64, &str)]) -> PathBuf {
    let map: String = functions
        .iter()
        .map(|(addr, len, name)| format!("{addr:x} {len:x} {name}\n"))
        .collect();
    let path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    std::fs::write(&path, map).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// The user callchain of a stack given root first, as `perf record -g` writes it (leaf
/// first after the `PERF_CONTEXT_USER` marker): the leaf at `leaf` past its function's
/// address, each caller at `ret` past its own (a return address).
pub fn user_chain(addrs_root_first: &[u64], leaf: u64, ret: u64) -> Vec<u64> {
    let mut chain = vec![cpiflame_perf_data::abi::callchain::USER];
    for (depth, a) in addrs_root_first.iter().rev().enumerate() {
        chain.push(a + if depth == 0 { leaf } else { ret });
    }
    chain
}

/// `path` as an argument.
pub fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A pid for a synthetic recording that no process is likely to have, so its perf map is
/// the test's alone: `module` (0..4) gives each module of this binary its own range, `salt`
/// (0..16) each recording of the module. All tests of the binary share one process, so the
/// process id alone (what each test file used to salt with) no longer keeps them apart.
pub fn synthetic_pid(module: u32, salt: u32) -> i32 {
    assert!(module < 4 && salt < 16, "synthetic_pid({module}, {salt})");
    // pid_max is at most 2^22 = 4194304: 3_000_000 + 18_000 * 64 stays below it.
    (3_000_000 + (std::process::id() % 18_000) * 64 + module * 16 + salt) as i32
}
