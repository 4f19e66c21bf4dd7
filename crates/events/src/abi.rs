//! The kernel's perf ABI as numbers: `perf_event_attr.type` values, sample_type,
//! read_format and branch_sample_type bits, record types and `misc` bits, callchain context
//! markers and user register numbers, with the values of the kernel's
//! `include/uapi/linux/perf_event.h` (and `arch/*/include/uapi/asm/perf_regs.h`), plus the
//! record types perf itself adds (`tools/lib/perf/include/perf/event.h`).
//!
//! The one home of these numbers: the event specs, the perf.data reader and writer, the
//! recorder and `stat` all take them from here (`cpiflame_perf_data::abi` re-exports them).
//! It must never hold anything but constants from those headers: no perf.data file layout
//! (that is `cpiflame_perf_data::abi`), no logic.

pub use crate::attr_flags;

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
    /// On SWITCH/SWITCH_CPU_WIDE: the task is leaving the CPU (else it is coming on).
    pub const SWITCH_OUT: u16 = 1 << 13;
    /// On a switch-out: the task was still runnable (preempted, or it yielded), not blocked:
    /// the kernel sets it when the task is still on its run queue (`perf_event_switch`).
    pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;
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

/// `perf_event_attr.branch_sample_type` bits (`enum perf_branch_sample_type`) that change
/// the layout of a sample's branch stack.
pub mod branch_sample {
    /// PERF_SAMPLE_BRANCH_CALL_STACK: the branch stack is the call stack (LBR call stack).
    pub const CALL_STACK: u64 = 1 << 11;
    /// PERF_SAMPLE_BRANCH_HW_INDEX: adds `hw_idx` before the entries.
    pub const HW_INDEX: u64 = 1 << 17;
    /// PERF_SAMPLE_BRANCH_COUNTERS: adds a word of counters after the entries.
    pub const COUNTERS: u64 = 1 << 19;
}

/// `perf_event_attr.branch_sample_type` bit that adds `hw_idx` to branch stacks.
pub const BRANCH_SAMPLE_HW_INDEX: u64 = branch_sample::HW_INDEX;

/// The `abi` word in front of PERF_SAMPLE_REGS_USER / REGS_INTR (`enum perf_sample_regs_abi`).
pub mod regs_abi {
    /// PERF_SAMPLE_REGS_ABI_NONE: no registers follow the abi word.
    pub const NONE: u64 = 0;
    /// PERF_SAMPLE_REGS_ABI_32.
    pub const ABI_32: u64 = 1;
    /// PERF_SAMPLE_REGS_ABI_64.
    pub const ABI_64: u64 = 2;
}

/// `perf_event_attr.type` values (`enum perf_type_id`).
pub mod attr_type {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
    pub const HW_CACHE: u32 = 3;
    pub const RAW: u32 = 4;
    pub const BREAKPOINT: u32 = 5;
}

/// Software event configs (`enum perf_sw_ids`), for `attr_type::SOFTWARE`.
pub mod software {
    pub const CPU_CLOCK: u64 = 0;
    pub const TASK_CLOCK: u64 = 1;
    pub const PAGE_FAULTS: u64 = 2;
    pub const CONTEXT_SWITCHES: u64 = 3;
    /// PERF_COUNT_SW_DUMMY: counts nothing; perf hangs side-band records on it.
    pub const DUMMY: u64 = 9;
    /// PERF_COUNT_SW_BPF_OUTPUT: what perf's `--off-cpu` names `offcpu-time`.
    pub const BPF_OUTPUT: u64 = 10;
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
