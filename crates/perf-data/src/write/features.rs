//! Encoding the feature sections [`PerfDataWriter::finish`](super::PerfDataWriter::finish)
//! writes after the data: what [`Features`] holds, laid out as perf's `header.c` writes it.
//!
//! Pure: it must never read the host (that is `crate::host`, [`Features::from_host`]) nor
//! write to the output (the writer places the sections).

use super::enc::{check_no_nul_bytes, u32_len, Enc};
use super::{Result, WriteError, MAX_BUILD_ID_SIZE, NAME_ALIGN};
use crate::abi::{self, feature};
use crate::attr::{EventAttr, ATTR_SIZE};
use crate::meta::{BuildIdEntry, ClockData, CompressionInfo, NumaNode};

/// The feature sections [`PerfDataWriter::finish`](super::PerfDataWriter::finish) writes. Only features with data are
/// written (and get their bit in the header); EVENT_DESC (names and ids of the attrs) is
/// always written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// HOSTNAME: `uname -n`.
    pub hostname: Option<String>,
    /// OSRELEASE: `uname -r`.
    pub os_release: Option<String>,
    /// VERSION: the recording tool's version string.
    pub perf_version: Option<String>,
    /// ARCH: `uname -m` (perf uses it to name registers).
    pub arch: Option<String>,
    /// NRCPUS: (available, online), written in that order as perf does.
    pub nr_cpus: Option<(u32, u32)>,
    /// CPUDESC: the cpu model name.
    pub cpu_desc: Option<String>,
    /// CPUID: e.g. "GenuineIntel,6,85,4" on x86 (vendor,family,model,stepping).
    pub cpuid: Option<String>,
    /// TOTAL_MEM: memory size in kB.
    pub total_mem_kb: Option<u64>,
    /// CMDLINE: the recording command line, argv\[0\] first (written when not empty).
    pub cmdline: Vec<String>,
    /// BUILD_ID: build ids of the files the profile hit (written when not empty).
    pub build_ids: Vec<BuildIdEntry>,
    /// SAMPLE_TIME: (first, last) sample timestamp.
    pub sample_time: Option<(u64, u64)>,
    /// COMPRESSED: written when the records are compressed (see [`compressed_record`](super::compressed_record)).
    pub compression: Option<CompressionInfo>,
    /// GROUP_DESC: the event groups of more than one event (written when not empty), so
    /// `perf report --group` and `perf evlist -g` show them as perf's own `{a,b}` groups.
    pub groups: Vec<GroupDesc>,
    /// NUMA_TOPOLOGY: the nodes, their memory and cpus (written when not empty; `perf c2c`
    /// needs it to map cpus to nodes).
    pub numa_nodes: Vec<NumaNode>,
    /// TRACING_DATA: the encoded tracing data ([`TracingData::encode`](super::TracingData::encode))
    /// of the recorded tracepoints (written when present; `perf script` needs it to print
    /// their fields).
    pub tracing_data: Option<Vec<u8>>,
    /// CLOCKID: the resolution of the samples' clock in nanoseconds (`clock_getres` of the
    /// clock the events were opened with, `attr.clockid`), written as perf record `-k`
    /// writes it when the resolution is known (`perf report --header-only`: `clockid
    /// frequency`).
    pub clockid_res_ns: Option<u64>,
    /// CLOCK_DATA: the wall clock and the samples' clock read at one instant (perf record
    /// `-k`), which turns a sample time into wall-clock time (`perf script -F tod`).
    pub clock_data: Option<ClockData>,
}

/// One event group in the GROUP_DESC feature, as perf's `write_group_desc` writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupDesc {
    /// The group's name; perf writes `{anon_group}` for a group without one.
    pub name: Option<String>,
    /// The index of the leader's attr.
    pub leader: u32,
    /// How many events the group has, the leader included (the next attrs).
    pub members: u32,
}

/// The feature sections to write, in bit order.
pub(super) fn encode_features(f: &Features, attrs: &[EventAttr]) -> Result<Vec<(u32, Vec<u8>)>> {
    let mut out = Vec::new();
    if let Some(t) = &f.tracing_data {
        out.push((feature::TRACING_DATA, t.clone()));
    }
    let string = |s: &str, what: &'static str| -> Result<Vec<u8>> {
        let mut b = Enc::default();
        b.header_string(s, what)?;
        Ok(b.0)
    };
    if !f.build_ids.is_empty() {
        let mut b = Enc::default();
        for e in &f.build_ids {
            b.build_id_entry(e)?;
        }
        out.push((feature::BUILD_ID, b.0));
    }
    let strings = [
        (feature::HOSTNAME, &f.hostname, "hostname"),
        (feature::OSRELEASE, &f.os_release, "os release"),
        (feature::VERSION, &f.perf_version, "perf version"),
        (feature::ARCH, &f.arch, "arch"),
        (feature::CPUDESC, &f.cpu_desc, "cpu description"),
        (feature::CPUID, &f.cpuid, "cpuid"),
    ];
    for (bit, value, what) in strings {
        if let Some(s) = value {
            out.push((bit, string(s, what)?));
        }
    }
    if let Some((avail, online)) = f.nr_cpus {
        let mut b = Enc::default();
        b.u32(avail);
        b.u32(online);
        out.push((feature::NRCPUS, b.0));
    }
    if !f.numa_nodes.is_empty() {
        let mut b = Enc::default();
        b.u32(u32_len(f.numa_nodes.len(), "NUMA nodes")?);
        for n in &f.numa_nodes {
            b.u32(n.node);
            b.u64(n.mem_total_kb);
            b.u64(n.mem_free_kb);
            b.header_string(&n.cpus, "NUMA node cpu list")?;
        }
        out.push((feature::NUMA_TOPOLOGY, b.0));
    }
    if let Some(kb) = f.total_mem_kb {
        let mut b = Enc::default();
        b.u64(kb);
        out.push((feature::TOTAL_MEM, b.0));
    }
    if !f.cmdline.is_empty() {
        let mut b = Enc::default();
        b.u32(u32_len(f.cmdline.len(), "cmdline")?);
        for arg in &f.cmdline {
            b.header_string(arg, "cmdline argument")?;
        }
        out.push((feature::CMDLINE, b.0));
    }
    {
        let mut b = Enc::default();
        b.u32(u32_len(attrs.len(), "attrs")?);
        b.u32(ATTR_SIZE as u32);
        for a in attrs {
            b.bytes(&a.encode());
            b.u32(u32_len(a.ids.len(), "ids")?);
            b.header_string(&a.display_name(), "event name")?;
            for &id in &a.ids {
                b.u64(id);
            }
        }
        out.push((feature::EVENT_DESC, b.0));
    }
    if !f.groups.is_empty() {
        let mut b = Enc::default();
        b.u32(u32_len(f.groups.len(), "groups")?);
        for g in &f.groups {
            b.header_string(g.name.as_deref().unwrap_or("{anon_group}"), "group name")?;
            b.u32(g.leader);
            b.u32(g.members);
        }
        out.push((feature::GROUP_DESC, b.0));
    }
    if let Some((first, last)) = f.sample_time {
        let mut b = Enc::default();
        b.u64(first);
        b.u64(last);
        out.push((feature::SAMPLE_TIME, b.0));
    }
    if let Some(ns) = f.clockid_res_ns {
        let mut b = Enc::default();
        b.u64(ns);
        out.push((feature::CLOCKID, b.0));
    }
    if let Some(c) = &f.compression {
        let mut b = Enc::default();
        for v in [c.version, c.type_, c.level, c.ratio, c.mmap_len] {
            b.u32(v);
        }
        out.push((feature::COMPRESSED, b.0));
    }
    if let Some(c) = &f.clock_data {
        // perf's `write_clock_data`: u32 version 1, u32 clockid, u64 time of day (ns since
        // the epoch), u64 the same instant on the clock.
        let mut b = Enc::default();
        b.u32(1);
        b.u32(c.clockid);
        b.u64(c.wall_clock_ns);
        b.u64(c.clockid_time_ns);
        out.push((feature::CLOCK_DATA, b.0));
    }
    out.sort_by_key(|(bit, _)| *bit);
    Ok(out)
}

impl Enc {
    /// One BUILD_ID feature entry (`perf_record_header_build_id`): header (type 0 as perf's
    /// table writer leaves it, misc = cpumode | BUILD_ID_SIZE, size), pid, 20 bytes of build
    /// id + its length + 3 reserved bytes, filename NUL-padded to [`NAME_ALIGN`].
    fn build_id_entry(&mut self, e: &BuildIdEntry) -> Result<()> {
        let path = || String::from_utf8_lossy(&e.path).into_owned();
        if e.build_id.len() > MAX_BUILD_ID_SIZE {
            return Err(WriteError::BuildIdTooLong {
                len: e.build_id.len(),
                path: Some(path()),
            });
        }
        check_no_nul_bytes(&e.path, "build id filename")?;
        let name_len = (e.path.len() + 1).next_multiple_of(NAME_ALIGN);
        let size = abi::EVENT_HEADER_SIZE + 4 + 24 + name_len;
        let size = u16::try_from(size).map_err(|_| WriteError::BuildIdPathTooLong(path()))?;
        self.u32(0);
        self.u16(e.misc | abi::MISC_BUILD_ID_SIZE);
        self.u16(size);
        self.i32(e.pid);
        self.bytes(&e.build_id);
        self.zeros(MAX_BUILD_ID_SIZE - e.build_id.len());
        self.u8(e.build_id.len() as u8);
        self.zeros(3);
        self.bytes(&e.path);
        self.zeros(name_len - e.path.len());
        Ok(())
    }
}
