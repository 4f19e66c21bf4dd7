//! Numbers from the kernel's `include/uapi/linux/perf_event.h` and perf's
//! `tools/perf/util/header.h` / `event.h` that both the reader and the writer need.
//! Kept in one place so the two can never disagree.

/// `struct perf_file_header` magic, little-endian files.
pub const MAGIC_LE: &[u8; 8] = b"PERFILE2";
/// The same magic as written by a big-endian machine.
pub const MAGIC_BE: &[u8; 8] = b"2ELIFREP";
/// Size of `struct perf_file_header` (magic, size, attr_size, 3 sections, 256 feature bits).
pub const FILE_HEADER_SIZE: u64 = 104;
/// Size of `struct perf_event_header` in front of every record.
pub const EVENT_HEADER_SIZE: usize = 8;

/// Record types written by the kernel (`enum perf_event_type`).
pub mod record {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
    /// First record type that perf (user space) defines rather than the kernel.
    pub const USER_TYPE_START: u32 = 64;
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_EVENT_TYPE: u32 = 65;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const ID_INDEX: u32 = 69;
    pub const AUXTRACE_INFO: u32 = 70;
    pub const AUXTRACE: u32 = 71;
    pub const AUXTRACE_ERROR: u32 = 72;
    pub const THREAD_MAP: u32 = 73;
    pub const CPU_MAP: u32 = 74;
    pub const STAT_CONFIG: u32 = 75;
    pub const STAT: u32 = 76;
    pub const STAT_ROUND: u32 = 77;
    pub const EVENT_UPDATE: u32 = 78;
    pub const TIME_CONV: u32 = 79;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const FINISHED_INIT: u32 = 82;
    pub const COMPRESSED2: u32 = 83;
}

/// `perf_event_header.misc` bits.
pub mod misc {
    pub const CPUMODE_MASK: u16 = 0x7;
    pub const CPUMODE_UNKNOWN: u16 = 0;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    pub const HYPERVISOR: u16 = 3;
    pub const GUEST_KERNEL: u16 = 4;
    pub const GUEST_USER: u16 = 5;
    /// On MMAP/MMAP2: a data (non-executable) mapping.
    pub const MMAP_DATA: u16 = 1 << 13;
    /// On COMM: the name changed because of exec.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// On MMAP2: the record carries a build id instead of device/inode.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// On SAMPLE: the ip is exact (precise_ip).
    pub const EXACT_IP: u16 = 1 << 14;
}

/// `perf_event_attr.sample_type` bits (`enum perf_event_sample_format`).
pub mod sample {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `perf_event_attr.read_format` bits.
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// `perf_event_attr.branch_sample_type` bit that adds `hw_idx` to branch stacks.
pub const BRANCH_SAMPLE_HW_INDEX: u64 = 1 << 17;

/// `perf_event_attr.type` values (`enum perf_type_id`).
pub mod attr_type {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
    pub const HW_CACHE: u32 = 3;
    pub const RAW: u32 = 4;
    pub const BREAKPOINT: u32 = 5;
}

/// Markers inside a PERF_SAMPLE_CALLCHAIN (`enum perf_callchain_context`): values at or above
/// `MAX` are context switches between kernel, user, guest, not addresses.
pub mod callchain {
    pub const HV: u64 = -32i64 as u64;
    pub const KERNEL: u64 = -128i64 as u64;
    pub const USER: u64 = -512i64 as u64;
    pub const GUEST: u64 = -2048i64 as u64;
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    pub const GUEST_USER: u64 = -2560i64 as u64;
    pub const MAX: u64 = -4095i64 as u64;
}

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

/// x86_64 user register numbers (`arch/x86/include/uapi/asm/perf_regs.h`); the bit with this
/// index in `sample_regs_user` asks for the register.
pub mod x86_64_regs {
    pub const AX: u32 = 0;
    pub const BX: u32 = 1;
    pub const CX: u32 = 2;
    pub const DX: u32 = 3;
    pub const SI: u32 = 4;
    pub const DI: u32 = 5;
    pub const BP: u32 = 6;
    pub const SP: u32 = 7;
    pub const IP: u32 = 8;
    pub const FLAGS: u32 = 9;
    pub const CS: u32 = 10;
    pub const SS: u32 = 11;
    pub const R8: u32 = 16;
    pub const R15: u32 = 23;
}

/// aarch64 user register numbers (`arch/arm64/include/uapi/asm/perf_regs.h`).
pub mod aarch64_regs {
    pub const X29: u32 = 29;
    pub const LR: u32 = 30;
    pub const SP: u32 = 31;
    pub const PC: u32 = 32;
}

/// Bits of the `perf_event_attr` bitfield word: one table, kept with the event specs that set
/// most of them (`cpiflame_events::ResolvedEvent::attr_flags`).
pub use cpiflame_events::attr_flags;
