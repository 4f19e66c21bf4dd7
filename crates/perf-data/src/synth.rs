//! Synthetic recordings for tests (feature `synth`): perf.data files written with this
//! crate's writer ([`write`](mod@crate::write)), for the attrs a machine cannot record (no
//! PMU, LBR, memory samples) and for output that must not depend on the machine (golden
//! files).
//!
//! [`Recording`] wraps the writer with what every synthetic file repeats: the side-band
//! records (COMM, MMAP2) carrying the first attr's first id, samples by event index, and
//! ending the file ([`Recording::finish`]) or leaving it as a killed recorder does
//! ([`Recording::abandon`]). It writes exactly the records it is asked for, in order; what
//! goes into a sample stays with the test. [`write_perf_map`] writes the perf map that names
//! anonymous code, [`user_chain`] a `-g` call chain from a stack.
//!
//! Test code: a failure panics, naming what failed. A test crate enables it with
//! `cpiflame-perf-data = { workspace = true, features = ["synth"] }` under
//! `[dev-dependencies]`; a normal build never compiles it. It lives here, next to the writer,
//! and not in `cpiflame-testkit`: testkit is a dev-dependency of this crate, so testkit
//! depending on it would be a cycle.

use std::fs::File;
use std::io::{BufWriter, Cursor, Seek, Write};
use std::path::PathBuf;

use crate::write::{
    cgroup_record, comm_record, mmap2_record, sample_record, EventAttr, Features, Mmap2,
    PerfDataWriter, SampleFields, SampleId,
};

/// A perf.data file being written: to a file ([`Recording::create`]) or to memory
/// ([`Recording::in_memory`]).
pub struct Recording<W: Write + Seek = BufWriter<File>> {
    /// The file written (empty in memory).
    path: PathBuf,
    attrs: Vec<EventAttr>,
    w: PerfDataWriter<W>,
}

impl Recording {
    /// Creates the file `path` with `attrs` (in file order).
    pub fn create(path: impl Into<PathBuf>, attrs: Vec<EventAttr>) -> Recording {
        let path = path.into();
        let file =
            File::create(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        let w = PerfDataWriter::new(BufWriter::new(file), attrs.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Recording { path, attrs, w }
    }

    /// Writes the feature sections and the header's final sizes; returns the path.
    pub fn finish(self, features: &Features) -> PathBuf {
        let out = self.w.finish(features);
        let path = self.path;
        let mut out = out.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.flush()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    /// Stops without finishing, as a recorder killed here leaves it (the header says data
    /// size 0); returns the path.
    pub fn abandon(self) -> PathBuf {
        drop(self.w);
        self.path
    }
}

impl Recording<Cursor<Vec<u8>>> {
    /// A file written to memory, with `attrs` (in file order).
    pub fn in_memory(attrs: Vec<EventAttr>) -> Recording<Cursor<Vec<u8>>> {
        let w = PerfDataWriter::new(Cursor::new(Vec::new()), attrs.clone()).unwrap();
        Recording {
            path: PathBuf::new(),
            attrs,
            w,
        }
    }

    /// Writes the feature sections and the header's final sizes; returns the file's bytes.
    pub fn finish_bytes(self, features: &Features) -> Vec<u8> {
        self.w.finish(features).unwrap().into_inner()
    }
}

impl<W: Write + Seek> Recording<W> {
    /// The attrs the file was created with.
    pub fn attrs(&self) -> &[EventAttr] {
        &self.attrs
    }

    /// The writer underneath (its counts of records and bytes).
    pub fn writer(&self) -> &PerfDataWriter<W> {
        &self.w
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

    /// A CGROUP record: cgroup `id` is at `path` (its sample id: pid and tid -1, as perf
    /// synthesizes it).
    pub fn cgroup(&mut self, id: u64, path: &str, time: u64) -> &mut Self {
        let sid = self.sid(-1, -1, time);
        self.record(&cgroup_record(&self.attrs[0], id, path, &sid).unwrap())
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

    /// Any record, as bytes (`perf_event_header` and body).
    pub fn record(&mut self, record: &[u8]) -> &mut Self {
        self.w.write_record(record).unwrap();
        self
    }
}

/// The MMAP2 of `len` bytes of anonymous executable code at `addr` in process `pid` (named
/// `//anon`, as perf records JIT code: a perf map names its functions).
pub fn anon_code(pid: i32, addr: u64, len: u64) -> Mmap2 {
    Mmap2 {
        pid,
        tid: pid,
        addr,
        len,
        prot: 5,
        flags: 2,
        filename: "//anon".into(),
        misc: crate::abi::misc::USER,
        ..Mmap2::default()
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
    let mut chain = vec![crate::abi::callchain::USER];
    for (depth, a) in addrs_root_first.iter().rev().enumerate() {
        chain.push(a + if depth == 0 { leaf } else { ret });
    }
    chain
}
