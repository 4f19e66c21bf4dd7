//! What a perf.data file's feature sections say, as plain data: the types the reader fills
//! ([`Meta`]) and the writer writes from (`write::Features` holds the same entries).
//!
//! Both sides take these types from here, so neither has to import the other. This module
//! must never read or write bytes: decoding is `features.rs`, encoding is `write`.

/// One entry of the BUILD_ID feature section: the build id of a file the profile hit. The
/// reader decodes and the writer encodes this one type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// The machine's pid: [`crate::write::HOST_PID`] (-1) for the host, as perf writes.
    pub pid: i32,
    /// The cpumode ([`crate::abi::misc::USER`] or [`crate::abi::misc::KERNEL`]; guest modes
    /// for guests).
    pub misc: u16,
    /// The build id, at most [`crate::write::MAX_BUILD_ID_SIZE`] bytes.
    pub build_id: Vec<u8>,
    /// The path perf recorded (`/usr/lib/x.so`, `[kernel.kallsyms]`, `[vdso]`).
    pub path: Vec<u8>,
}

/// What the feature sections say about the recording machine and command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub hostname: Option<String>,
    pub os_release: Option<String>,
    pub arch: Option<String>,
    pub perf_version: Option<String>,
    pub nr_cpus_online: Option<u32>,
    pub cpu_desc: Option<String>,
    pub cpuid: Option<String>,
    pub cmdline: Vec<String>,
    pub build_ids: Vec<BuildIdEntry>,
    /// The COMPRESSED feature (`perf record -z`).
    pub compression: Option<CompressionInfo>,
    /// (PMU type, name) from the PMU_MAPPINGS feature: how hybrid events are named.
    pub pmus: Vec<(u32, String)>,
    /// The NUMA_TOPOLOGY feature: nodes and their cpu lists.
    pub numa_nodes: Vec<NumaNode>,
    /// The CLOCK_DATA feature (`perf record -k CLOCK`): one instant read on both clocks.
    pub clock_data: Option<ClockData>,
    /// The SAMPLE_TIME feature: the (first, last) sample's time, which perf's `--time`
    /// percentages are taken from. perf writes (0, 0) when it did not look at the samples
    /// (`perf record --no-buildid`); that is kept as it is.
    pub sample_time: Option<(u64, u64)>,
}

/// The CLOCK_DATA feature: the wall clock and the samples' clock read at one instant, so a
/// sample time converts to wall-clock time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockData {
    /// The clock of the sample times (CLOCK_MONOTONIC is 1).
    pub clockid: u32,
    /// Nanoseconds since the Unix epoch.
    pub wall_clock_ns: u64,
    /// The same instant on `clockid`, in nanoseconds.
    pub clockid_time_ns: u64,
}

impl ClockData {
    /// Wall-clock nanoseconds since the Unix epoch of sample time `time` (`clockid`'s ns).
    pub fn wall_clock_of(&self, time: u64) -> u64 {
        let offset = i128::from(time) - i128::from(self.clockid_time_ns);
        u64::try_from((i128::from(self.wall_clock_ns) + offset).max(0)).unwrap_or(u64::MAX)
    }
}

/// The COMPRESSED feature section (`struct` of five u32 in perf's header.c).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompressionInfo {
    pub version: u32,
    /// 1: zstd (perf's only one).
    pub type_: u32,
    pub level: u32,
    pub ratio: u32,
    /// Size of the ring buffers compressed from: the most one chunk decompresses to.
    pub mmap_len: u32,
}

/// One node of the NUMA_TOPOLOGY feature, as perf's `write_numa_topology` writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaNode {
    /// The node number.
    pub node: u32,
    /// Memory of the node in kB.
    pub mem_total_kb: u64,
    /// Free memory of the node in kB.
    pub mem_free_kb: u64,
    /// The node's cpus as a sysfs cpu list ("0-3,8").
    pub cpus: String,
}
