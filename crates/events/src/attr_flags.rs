//! Bits of the `perf_event_attr` bitfield word (the u64 after `read_format`), in the order of
//! `include/uapi/linux/perf_event.h`: one table for the specs that set them, the perf.data
//! reader and writer, and the recorder.

/// Off by default.
pub const DISABLED: u64 = 1 << 0;
/// Children inherit it.
pub const INHERIT: u64 = 1 << 1;
/// Must always be on the PMU.
pub const PINNED: u64 = 1 << 2;
/// Only group on the PMU.
pub const EXCLUSIVE: u64 = 1 << 3;
/// Don't count user.
pub const EXCLUDE_USER: u64 = 1 << 4;
/// Don't count kernel.
pub const EXCLUDE_KERNEL: u64 = 1 << 5;
/// Don't count hypervisor.
pub const EXCLUDE_HV: u64 = 1 << 6;
/// Don't count when idle.
pub const EXCLUDE_IDLE: u64 = 1 << 7;
/// Include mmap data.
pub const MMAP: u64 = 1 << 8;
/// Include comm data.
pub const COMM: u64 = 1 << 9;
/// `sample_period_or_freq` is a frequency, not a period.
pub const FREQ: u64 = 1 << 10;
/// Per task counts.
pub const INHERIT_STAT: u64 = 1 << 11;
/// Next exec enables.
pub const ENABLE_ON_EXEC: u64 = 1 << 12;
/// Trace fork/exit.
pub const TASK: u64 = 1 << 13;
/// Wake up on `wakeup_watermark` bytes rather than `wakeup_events` events.
pub const WATERMARK: u64 = 1 << 14;
/// Shift of the 2-bit `precise_ip` field.
pub const PRECISE_IP_SHIFT: u32 = 15;
/// Mask of the 2-bit `precise_ip` field.
pub const PRECISE_IP_MASK: u64 = 3 << PRECISE_IP_SHIFT;
/// Non-exec mmap data.
pub const MMAP_DATA: u64 = 1 << 17;
/// sample_type fields on all records (the `sample_id` trailer).
pub const SAMPLE_ID_ALL: u64 = 1 << 18;
/// Don't count in host.
pub const EXCLUDE_HOST: u64 = 1 << 19;
/// Don't count in guest.
pub const EXCLUDE_GUEST: u64 = 1 << 20;
/// Exclude kernel callchains.
pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
/// Exclude user callchains.
pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
/// Include mmap with inode data (MMAP2 records).
pub const MMAP2: u64 = 1 << 23;
/// Flag comm events that are due to an exec.
pub const COMM_EXEC: u64 = 1 << 24;
/// Use `clockid` for time fields.
pub const USE_CLOCKID: u64 = 1 << 25;
/// Context switch records.
pub const CONTEXT_SWITCH: u64 = 1 << 26;
/// Write the ring buffer from end to beginning.
pub const WRITE_BACKWARD: u64 = 1 << 27;
/// Include namespaces data.
pub const NAMESPACES: u64 = 1 << 28;
/// Include ksymbol events.
pub const KSYMBOL: u64 = 1 << 29;
/// Include bpf events.
pub const BPF_EVENT: u64 = 1 << 30;
/// Generate AUX records instead of events.
pub const AUX_OUTPUT: u64 = 1 << 31;
/// Include cgroup events.
pub const CGROUP: u64 = 1 << 32;
/// Include text poke events.
pub const TEXT_POKE: u64 = 1 << 33;
/// Use build ids in MMAP2 records.
pub const BUILD_ID: u64 = 1 << 34;
/// Children only inherit if cloned with CLONE_THREAD.
pub const INHERIT_THREAD: u64 = 1 << 35;
/// Event is removed from task on exec.
pub const REMOVE_ON_EXEC: u64 = 1 << 36;
/// Send synchronous SIGTRAP on event.
pub const SIGTRAP: u64 = 1 << 37;
