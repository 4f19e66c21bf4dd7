//! The perf.data file format as numbers (perf's `tools/perf/util/header.h` / `event.h`):
//! magics, header sizes, feature bits. Kept in one place so the reader and the writer can
//! never disagree.
//!
//! The kernel's own numbers (record types, sample_type bits, ...) live in
//! `cpiflame_events::abi` and are only re-exported here; this module must never define them
//! a second time.

/// `struct perf_file_header` magic, little-endian files.
pub const MAGIC_LE: &[u8; 8] = b"PERFILE2";
/// The same magic as written by a big-endian machine.
pub const MAGIC_BE: &[u8; 8] = b"2ELIFREP";
/// Size of `struct perf_file_header` (magic, size, attr_size, 3 sections, 256 feature bits).
pub const FILE_HEADER_SIZE: u64 = 104;
/// PERF_RECORD_MISC_BUILD_ID_SIZE (perf's `event.h`): on a build-id entry, byte 20 is the
/// id's length.
pub const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// perf.data feature bits (`HEADER_*` in perf's `util/header.h`): the index of the bit in the
/// header's feature bitmap, and the order of the feature sections after the data section.
pub mod feature {
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const BRANCH_STACK: u32 = 15;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const AUXTRACE: u32 = 18;
    pub const STAT: u32 = 19;
    pub const CACHE: u32 = 20;
    pub const SAMPLE_TIME: u32 = 21;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const DIR_FORMAT: u32 = 24;
    pub const BPF_PROG_INFO: u32 = 25;
    pub const BPF_BTF: u32 = 26;
    pub const COMPRESSED: u32 = 27;
    pub const CPU_PMU_CAPS: u32 = 28;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;
    pub const PMU_CAPS: u32 = 31;
}

/// The kernel's numbers, whose one home is `cpiflame_events::abi`; re-exported here so that
/// the reader, the writer and their users can keep spelling them `cpiflame_perf_data::abi::*`.
pub use cpiflame_events::abi::{
    aarch64_regs, attr_flags, attr_type, branch_sample, callchain, misc, read_format, record,
    regs_abi, sample, x86_64_regs, BRANCH_SAMPLE_HW_INDEX, EVENT_HEADER_SIZE,
};
