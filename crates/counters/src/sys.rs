//! perf_event_open and the errors it gives, in words a user can act on.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

use cpiflame_perf_data::write::EventAttr;
use perf_event_open_sys as sys;

/// Opens the event `attr` for `pid` on `cpu` (in the group of `group`, if any).
pub fn open(attr: &EventAttr, pid: i32, cpu: i32, group: Option<&File>) -> io::Result<File> {
    open_flags(attr, pid, cpu, group, 0)
}

/// [`open`] on `cpu` for the tasks of the cgroup whose directory is open as `cgroup`
/// (PERF_FLAG_PID_CGROUP: the directory's fd in place of a pid; `cpu` must be one CPU).
pub fn open_in_cgroup(
    attr: &EventAttr,
    cgroup: &File,
    cpu: i32,
    group: Option<&File>,
) -> io::Result<File> {
    let flag = sys::bindings::PERF_FLAG_PID_CGROUP as u64;
    open_flags(attr, cgroup.as_raw_fd(), cpu, group, flag)
}

/// perf_event_open with `flags` besides PERF_FLAG_FD_CLOEXEC.
fn open_flags(
    attr: &EventAttr,
    pid: i32,
    cpu: i32,
    group: Option<&File>,
    flags: u64,
) -> io::Result<File> {
    let bytes = attr.encode();
    // SAFETY: perf_event_attr is plain old data; the encoded bytes are a complete attr of
    // the size its `size` field states, which is no larger than the struct.
    let mut raw: sys::bindings::perf_event_attr = unsafe { std::mem::zeroed() };
    let n = bytes.len().min(std::mem::size_of_val(&raw));
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), &mut raw as *mut _ as *mut u8, n);
    }
    let group_fd = group.map_or(-1, |g| g.as_raw_fd());
    // SAFETY: `raw` is initialised; the kernel validates everything else.
    let fd = unsafe {
        sys::perf_event_open(
            &mut raw,
            pid,
            cpu,
            group_fd,
            (sys::bindings::PERF_FLAG_FD_CLOEXEC as u64 | flags) as _,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// The kernel's id of an open event (what samples carry in PERF_SAMPLE_IDENTIFIER).
pub fn event_id(fd: &File) -> io::Result<u64> {
    let mut id = 0u64;
    // SAFETY: ID writes one u64 through the pointer.
    if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(id)
}

/// Sends `fd`'s records to `target`'s ring buffer.
pub fn set_output(fd: &File, target: &File) -> io::Result<()> {
    // SAFETY: both are perf event fds.
    if unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), target.as_raw_fd()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Enables an event (attach mode, where there is no exec to enable it).
pub fn enable(fd: &File) -> io::Result<()> {
    // SAFETY: a perf event fd.
    if unsafe { sys::ioctls::ENABLE(fd.as_raw_fd(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What to tell the user when enabling `event` on process `pid` failed with `err` (after
/// attaching, where no exec enables the events).
pub fn explain_enable_error(event: &str, pid: i32, err: &io::Error) -> String {
    let why = match err.raw_os_error() {
        Some(libc::ESRCH) => "ESRCH: the process is gone".to_string(),
        Some(libc::EBADF) | Some(libc::ENOTTY) => {
            "not a perf event (EBADF/ENOTTY): an internal error".to_string()
        }
        Some(libc::EINVAL) => "EINVAL: the kernel rejected the request".to_string(),
        Some(libc::EACCES) | Some(libc::EPERM) => "permission denied (EACCES/EPERM)".to_string(),
        _ => err.to_string(),
    };
    format!("event {event}: cannot enable it on process {pid}: {why}; nothing would be recorded")
}

fn read_sysctl(name: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// What to tell the user when opening `event` failed with `err` (perf_event_open(2)'s errors).
pub fn explain_open_error(event: &str, err: &io::Error) -> String {
    let paranoid = read_sysctl("perf_event_paranoid").unwrap_or_else(|| "?".into());
    match err.raw_os_error() {
        Some(libc::ENOENT) => format!(
            "event {event}: not supported here (ENOENT): no such hardware event, or no hardware PMU (most VMs); `cpiflame list` shows what opens"
        ),
        Some(libc::EOPNOTSUPP) => format!(
            "event {event}: the PMU cannot sample it (EOPNOTSUPP): no sampling interrupt, precise level above caps/max_precise, or not implemented on this CPU"
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "event {event}: permission denied ({}); kernel.perf_event_paranoid is {paranoid}{}: run as root, or `sysctl kernel.perf_event_paranoid=1` (2 allows user-space only, which cpiflame falls back to)",
            if err.raw_os_error() == Some(libc::EACCES) { "EACCES" } else { "EPERM" },
            if paranoid.parse::<i32>().is_ok_and(|p| p >= 3) && !own_events_open() {
                " (3 and above forbid perf_event_open to users on kernels that support it, as Debian's do)"
            } else {
                ""
            }
        ),
        Some(libc::EINVAL) => format!(
            "event {event}: invalid attributes (EINVAL): a sample frequency above kernel.perf_event_max_sample_rate ({}), or a combination this kernel rejects",
            read_sysctl("perf_event_max_sample_rate").unwrap_or_else(|| "?".into())
        ),
        Some(libc::EMFILE) => format!(
            "event {event}: too many open files (EMFILE): raise `ulimit -n` (one fd per event per CPU)"
        ),
        Some(libc::E2BIG) => format!("event {event}: attr too big for this kernel (E2BIG)"),
        _ => format!("event {event}: {err}"),
    }
}

/// Whether this process may open an event at all: task-clock of user space, on itself. Some
/// kernels (Debian's) forbid users every event at kernel.perf_event_paranoid 3; upstream
/// treats 3 as 2.
fn own_events_open() -> bool {
    let attr = EventAttr {
        type_: sys::bindings::PERF_TYPE_SOFTWARE,
        config: sys::bindings::PERF_COUNT_SW_TASK_CLOCK.into(),
        flags: cpiflame_perf_data::attr_flags::DISABLED
            | cpiflame_perf_data::attr_flags::EXCLUDE_KERNEL
            | cpiflame_perf_data::attr_flags::EXCLUDE_HV,
        name: Some("task-clock".into()),
        ..EventAttr::default()
    };
    open(&attr, 0, -1, None).is_ok()
}

/// Whether this process may count kernel space: root, or kernel.perf_event_paranoid <= 1.
pub fn kernel_allowed() -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    root || paranoid().is_some_and(|p| p <= 1)
}

/// What to tell the user who asks for an event of kernel space only (`:k`) where
/// perf_event_paranoid keeps users to user space: cpiflame would otherwise exclude kernel space
/// too and count nothing.
pub fn explain_kernel_only(event: &str) -> String {
    let paranoid = read_sysctl("perf_event_paranoid").unwrap_or_else(|| "?".into());
    format!(
        "event {event}: counts kernel space only, but kernel.perf_event_paranoid is {paranoid}, which allows users user space only: run as root, or `sysctl kernel.perf_event_paranoid=1`, or drop the :k"
    )
}

/// What to tell the user when opening `event` for thread `tid` failed with `err`: a process of
/// another user gets its own explanation (perf_event_paranoid does not matter there).
pub fn explain_open_error_for(event: &str, tid: i32, err: &io::Error) -> String {
    use std::os::unix::fs::MetadataExt;
    let denied = matches!(err.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM));
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let owner = std::fs::metadata(format!("/proc/{tid}")).map(|m| m.uid());
    match owner {
        // (Unless events of one's own processes do not open either: perf_event_paranoid 3
        // on kernels that forbid users everything, which is then the reason.)
        Ok(owner) if denied && me != 0 && owner != me && own_events_open() => format!(
            "event {event}: permission denied for process {tid}: it belongs to uid {owner}, and attaching to another user's process needs root, CAP_PERFMON or CAP_SYS_PTRACE (kernel.perf_event_paranoid does not change that)"
        ),
        _ => explain_open_error(event, err),
    }
}

/// Online CPUs, from `/sys/devices/system/cpu/online` (`0-3,5`); read by the host facts
/// module, re-exported here where `stat` and the recorder have always found it.
pub use cpiflame_perf_data::host::online_cpus;

/// `kernel.perf_event_mlock_kb`: how much ring buffer an unprivileged user may lock per CPU.
pub fn mlock_kb() -> Option<u64> {
    read_sysctl("perf_event_mlock_kb")?.parse().ok()
}

/// `kernel.perf_event_paranoid`.
pub fn paranoid() -> Option<i32> {
    read_sysctl("perf_event_paranoid")?.parse().ok()
}

#[cfg(test)]
mod abi_tests {
    use cpiflame_events::abi::{
        attr_type, branch_sample, callchain, misc, read_format, record, regs_abi, sample,
    };
    use perf_event_open_sys::bindings as b;

    /// `cpiflame_events::abi` is a hand-written table (the events crate has no dependencies);
    /// perf-event-open-sys is generated from `include/uapi/linux/perf_event.h`. They agree.
    #[test]
    fn hand_written_abi_agrees_with_the_kernel_header_bindings() {
        macro_rules! same {
            ($($ours:expr => $theirs:expr),* $(,)?) => {
                $(assert_eq!($ours as u64, $theirs as u64, "{}", stringify!($ours));)*
            };
        }
        same!(
            attr_type::HARDWARE => b::PERF_TYPE_HARDWARE,
            attr_type::SOFTWARE => b::PERF_TYPE_SOFTWARE,
            attr_type::TRACEPOINT => b::PERF_TYPE_TRACEPOINT,
            attr_type::HW_CACHE => b::PERF_TYPE_HW_CACHE,
            attr_type::RAW => b::PERF_TYPE_RAW,
            attr_type::BREAKPOINT => b::PERF_TYPE_BREAKPOINT,
            sample::IP => b::PERF_SAMPLE_IP,
            sample::TID => b::PERF_SAMPLE_TID,
            sample::TIME => b::PERF_SAMPLE_TIME,
            sample::ADDR => b::PERF_SAMPLE_ADDR,
            sample::READ => b::PERF_SAMPLE_READ,
            sample::CALLCHAIN => b::PERF_SAMPLE_CALLCHAIN,
            sample::ID => b::PERF_SAMPLE_ID,
            sample::CPU => b::PERF_SAMPLE_CPU,
            sample::PERIOD => b::PERF_SAMPLE_PERIOD,
            sample::STREAM_ID => b::PERF_SAMPLE_STREAM_ID,
            sample::RAW => b::PERF_SAMPLE_RAW,
            sample::BRANCH_STACK => b::PERF_SAMPLE_BRANCH_STACK,
            sample::REGS_USER => b::PERF_SAMPLE_REGS_USER,
            sample::STACK_USER => b::PERF_SAMPLE_STACK_USER,
            sample::WEIGHT => b::PERF_SAMPLE_WEIGHT,
            sample::DATA_SRC => b::PERF_SAMPLE_DATA_SRC,
            sample::IDENTIFIER => b::PERF_SAMPLE_IDENTIFIER,
            sample::TRANSACTION => b::PERF_SAMPLE_TRANSACTION,
            sample::REGS_INTR => b::PERF_SAMPLE_REGS_INTR,
            sample::PHYS_ADDR => b::PERF_SAMPLE_PHYS_ADDR,
            sample::AUX => b::PERF_SAMPLE_AUX,
            sample::CGROUP => b::PERF_SAMPLE_CGROUP,
            sample::DATA_PAGE_SIZE => b::PERF_SAMPLE_DATA_PAGE_SIZE,
            sample::CODE_PAGE_SIZE => b::PERF_SAMPLE_CODE_PAGE_SIZE,
            sample::WEIGHT_STRUCT => b::PERF_SAMPLE_WEIGHT_STRUCT,
            read_format::TOTAL_TIME_ENABLED => b::PERF_FORMAT_TOTAL_TIME_ENABLED,
            read_format::TOTAL_TIME_RUNNING => b::PERF_FORMAT_TOTAL_TIME_RUNNING,
            read_format::ID => b::PERF_FORMAT_ID,
            read_format::GROUP => b::PERF_FORMAT_GROUP,
            read_format::LOST => b::PERF_FORMAT_LOST,
            branch_sample::CALL_STACK => b::PERF_SAMPLE_BRANCH_CALL_STACK,
            branch_sample::HW_INDEX => b::PERF_SAMPLE_BRANCH_HW_INDEX,
            branch_sample::COUNTERS => b::PERF_SAMPLE_BRANCH_COUNTERS,
            regs_abi::NONE => b::PERF_SAMPLE_REGS_ABI_NONE,
            regs_abi::ABI_32 => b::PERF_SAMPLE_REGS_ABI_32,
            regs_abi::ABI_64 => b::PERF_SAMPLE_REGS_ABI_64,
            record::MMAP => b::PERF_RECORD_MMAP,
            record::LOST => b::PERF_RECORD_LOST,
            record::COMM => b::PERF_RECORD_COMM,
            record::EXIT => b::PERF_RECORD_EXIT,
            record::THROTTLE => b::PERF_RECORD_THROTTLE,
            record::UNTHROTTLE => b::PERF_RECORD_UNTHROTTLE,
            record::FORK => b::PERF_RECORD_FORK,
            record::READ => b::PERF_RECORD_READ,
            record::SAMPLE => b::PERF_RECORD_SAMPLE,
            record::MMAP2 => b::PERF_RECORD_MMAP2,
            record::AUX => b::PERF_RECORD_AUX,
            record::ITRACE_START => b::PERF_RECORD_ITRACE_START,
            record::LOST_SAMPLES => b::PERF_RECORD_LOST_SAMPLES,
            record::SWITCH => b::PERF_RECORD_SWITCH,
            record::SWITCH_CPU_WIDE => b::PERF_RECORD_SWITCH_CPU_WIDE,
            record::NAMESPACES => b::PERF_RECORD_NAMESPACES,
            record::KSYMBOL => b::PERF_RECORD_KSYMBOL,
            record::BPF_EVENT => b::PERF_RECORD_BPF_EVENT,
            record::CGROUP => b::PERF_RECORD_CGROUP,
            record::TEXT_POKE => b::PERF_RECORD_TEXT_POKE,
            record::AUX_OUTPUT_HW_ID => b::PERF_RECORD_AUX_OUTPUT_HW_ID,
            misc::CPUMODE_MASK => b::PERF_RECORD_MISC_CPUMODE_MASK,
            misc::KERNEL => b::PERF_RECORD_MISC_KERNEL,
            misc::USER => b::PERF_RECORD_MISC_USER,
            misc::HYPERVISOR => b::PERF_RECORD_MISC_HYPERVISOR,
            misc::GUEST_KERNEL => b::PERF_RECORD_MISC_GUEST_KERNEL,
            misc::GUEST_USER => b::PERF_RECORD_MISC_GUEST_USER,
            misc::MMAP_DATA => b::PERF_RECORD_MISC_MMAP_DATA,
            misc::COMM_EXEC => b::PERF_RECORD_MISC_COMM_EXEC,
            misc::MMAP_BUILD_ID => b::PERF_RECORD_MISC_MMAP_BUILD_ID,
            misc::EXACT_IP => b::PERF_RECORD_MISC_EXACT_IP,
            callchain::HV => b::PERF_CONTEXT_HV as i64,
            callchain::KERNEL => b::PERF_CONTEXT_KERNEL as i64,
            callchain::USER => b::PERF_CONTEXT_USER as i64,
            callchain::GUEST => b::PERF_CONTEXT_GUEST as i64,
            callchain::GUEST_KERNEL => b::PERF_CONTEXT_GUEST_KERNEL as i64,
            callchain::GUEST_USER => b::PERF_CONTEXT_GUEST_USER as i64,
            callchain::MAX => b::PERF_CONTEXT_MAX as i64,
        );
    }
}
