//! Wall-clock time in a profile: where a thread's time went when it was not only on a CPU.
//!
//! A recording with off-CPU data (`cpiflame record --off-cpu`, `perf record --switch-events`,
//! `sched:sched_switch` samples, perf's `offcpu-time` event) is collapsed with three extra
//! event columns whose periods are nanoseconds of wall-clock time:
//!
//! - [`ON_CPU`]: time the thread ran on a CPU, spread over its on-CPU samples' stacks in
//!   proportion to their weight (cycles, or cpu-clock without a PMU);
//! - [`RUNNABLE`]: time the thread was ready to run but waiting for a CPU (preempted, or woken
//!   and not yet running), on the stack it had when it left the CPU;
//! - [`BLOCKED`]: time the thread was blocked (sleeping, waiting for I/O or a lock, a page
//!   fault's read) until it was woken, on the stack it had when it left the CPU.
//!
//! A column's `samples` count the samples (on-CPU) or off-CPU intervals that added to it. The
//! three columns sum to the threads' wall-clock time over the recording (each thread counted
//! for the time it existed), so a frame's wall time is the sum of its three periods.
//!
//! What a thread was blocked in is read off the stack it left the CPU with: [`WaitReason::of`]
//! names the kind of wait ([`WaitKind`]: a lock or futex, a sleep, pipe/socket/poll I/O, disk
//! or page-fault I/O, other) and the function it was recognised by.

use crate::profile::Column;
use crate::{Frame, Profile};

/// Name of the column of on-CPU nanoseconds.
pub const ON_CPU: &str = "on-cpu-time";
/// Name of the column of nanoseconds runnable but not running (waiting for a CPU).
pub const RUNNABLE: &str = "runnable-time";
/// Name of the column of nanoseconds blocked (off the CPU and not runnable).
pub const BLOCKED: &str = "blocked-time";

/// The frame directly under a thread's root frames that holds its runnable time whose
/// switch-out has no stack (the switch was recorded, the stack it left with was not).
pub const NO_STACK_RUNNABLE: &str = "[runnable]";
/// The frame directly under a thread's root frames that holds its blocked time whose
/// switch-out has no stack.
pub const NO_STACK_BLOCKED: &str = "[blocked]";

/// Whether `frame` is one of the two frames of off-CPU time without a stack
/// ([`NO_STACK_RUNNABLE`], [`NO_STACK_BLOCKED`]): named so, in no module.
pub fn is_no_stack(frame: &Frame) -> bool {
    frame.module.is_empty()
        && frame.kind == crate::FrameKind::User
        && (frame.name == NO_STACK_RUNNABLE || frame.name == NO_STACK_BLOCKED)
}

/// The frame directly under a thread's root frames that holds its on-CPU time (measured from
/// its switch data) when the thread has no on-CPU sample to spread it over.
pub const UNSAMPLED_ON_CPU: &str = "[on-CPU, not sampled]";

/// Whether `frame` is the frame of on-CPU time without a sample ([`UNSAMPLED_ON_CPU`]).
pub fn is_unsampled(frame: &Frame) -> bool {
    frame.module.is_empty()
        && frame.kind == crate::FrameKind::User
        && frame.name == UNSAMPLED_ON_CPU
}

/// The frame of on-CPU time without a sample: [`UNSAMPLED_ON_CPU`].
pub fn unsampled_frame() -> Frame {
    Frame {
        name: UNSAMPLED_ON_CPU.to_string(),
        module: String::new(),
        kind: crate::FrameKind::User,
    }
}

/// The frame of off-CPU time without a stack: [`NO_STACK_RUNNABLE`] or [`NO_STACK_BLOCKED`].
pub fn no_stack_frame(runnable: bool) -> Frame {
    Frame {
        name: if runnable {
            NO_STACK_RUNNABLE
        } else {
            NO_STACK_BLOCKED
        }
        .to_string(),
        module: String::new(),
        kind: crate::FrameKind::User,
    }
}

/// The event columns of a profile that hold wall-clock time (indices into
/// [`Profile::events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallColumns {
    pub on_cpu: Column,
    pub runnable: Column,
    pub blocked: Column,
}

impl WallColumns {
    /// The wall-time columns of `profile`, found by name; `None` unless all three are there.
    pub fn of(profile: &Profile) -> Option<WallColumns> {
        let find = |name: &str| {
            profile
                .events
                .iter()
                .position(|e| e.name == name)
                .map(Column)
        };
        Some(WallColumns {
            on_cpu: find(ON_CPU)?,
            runnable: find(RUNNABLE)?,
            blocked: find(BLOCKED)?,
        })
    }

    /// The three columns, on-CPU first.
    pub fn all(&self) -> [Column; 3] {
        [self.on_cpu, self.runnable, self.blocked]
    }
}

/// What kind of wait a thread was blocked in, as told by its stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WaitKind {
    /// A futex (user-space mutexes, condition variables, `pthread_join`, semaphores) or a
    /// kernel mutex or read-write semaphore.
    Lock,
    /// A sleep for a time (`nanosleep`, `clock_nanosleep`, `usleep`).
    Sleep,
    /// Waiting for a pipe, a socket, a terminal or for readiness (`poll`, `select`,
    /// `epoll_wait`). Without kernel frames a blocking `read` or `write` lands here too,
    /// whatever it reads: the libc wrapper does not say.
    PollIo,
    /// Waiting for the disk: a read or write-back of the page cache, a page fault's read, a
    /// `fsync`.
    DiskIo,
    /// None of the above (a child process in `wait4`, a completion, ...), or nothing known.
    Other,
}

impl WaitKind {
    /// Every kind, in the order above.
    pub const ALL: [WaitKind; 5] = [
        WaitKind::Lock,
        WaitKind::Sleep,
        WaitKind::PollIo,
        WaitKind::DiskIo,
        WaitKind::Other,
    ];

    /// A short label: `lock/futex`, `sleep`, `pipe/socket/poll`, `disk/page fault`, `other`.
    pub fn label(self) -> &'static str {
        match self {
            WaitKind::Lock => "lock/futex",
            WaitKind::Sleep => "sleep",
            WaitKind::PollIo => "pipe/socket/poll",
            WaitKind::DiskIo => "disk/page fault",
            WaitKind::Other => "other",
        }
    }
}

/// Why a thread was blocked: the kind of wait and the frame it was recognised by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WaitReason<'a> {
    pub kind: WaitKind,
    /// Name of the frame that decided the kind (`futex_wait_queue`, `do_nanosleep`,
    /// `pthread_mutex_lock`, ...); for [`WaitKind::Other`] the innermost frame that is not
    /// the scheduler's own (`do_wait`), `None` when there is none.
    pub by: Option<&'a str>,
}

impl<'a> WaitReason<'a> {
    /// Classifies a stack, given root first as in [`Stack::frames`](crate::Stack), by its
    /// innermost recognised frame: the kernel function the thread slept in when there are
    /// kernel frames (`futex_wait_queue`, `do_nanosleep`, `pipe_read`, `ep_poll`,
    /// `io_schedule`, `filemap_fault`, ...), else the libc wrapper it called
    /// (`pthread_mutex_lock`, `__futex_abstimed_wait_common`, `clock_nanosleep`, `read`,
    /// `poll`, `epoll_wait`, ...). The scheduler's own frames (`schedule`,
    /// `schedule_timeout`, ...) say nothing and are passed over, and so is the process frame
    /// (its command name might be `sleep`).
    ///
    /// Names are compared without leading underscores, `.constprop.0`-like and `@GLIBC_2.2.5`-like
    /// suffixes, glibc's `GI_`/`libc_` and the kernel's `x64_sys_`-like prefixes, and a
    /// qualified name (`std::thread::sleep`) by its last part.
    pub fn of<I>(frames: I) -> WaitReason<'a>
    where
        I: IntoIterator<Item = &'a Frame>,
        I::IntoIter: DoubleEndedIterator,
    {
        let mut other = None;
        let mut rest = frames.into_iter().rev();
        while let Some(frame) = rest.next() {
            // A thread's time without a stack (`[blocked]`) says nothing of the wait.
            if frame.kind.is_root() || is_no_stack(frame) {
                continue;
            }
            let name = base_name(&frame.name);
            if PREEMPTED.contains(&name) && other.is_none() {
                // Preempted, not waiting (runnable time, not blocked).
                return WaitReason {
                    kind: WaitKind::Other,
                    by: Some(&frame.name),
                };
            }
            if let Some(kind) = kind_of(name) {
                return WaitReason {
                    kind,
                    by: Some(&frame.name),
                };
            }
            if DISK_WAIT.contains(&name) {
                // Waiting for a disk read or write: say for what, when a caller tells.
                let what = rest
                    .by_ref()
                    .take_while(|f| !f.kind.is_root())
                    .find(|f| kind_of(base_name(&f.name)) == Some(WaitKind::DiskIo));
                return WaitReason {
                    kind: WaitKind::DiskIo,
                    by: Some(what.unwrap_or(frame).name.as_str()),
                };
            }
            if other.is_none() && !GENERIC.contains(&name) && !frame.name.starts_with('[') {
                other = Some(frame.name.as_str());
            }
        }
        WaitReason {
            kind: WaitKind::Other,
            by: other,
        }
    }
}

/// The name a frame is matched by: see [`WaitReason::of`].
fn base_name(name: &str) -> &str {
    let name = name.rsplit("::").next().unwrap_or(name);
    let name = name.split(['.', '@', '(', '<']).next().unwrap_or(name);
    let mut name = name.trim_start_matches('_');
    for prefix in [
        "GI_",
        "libc_",
        "x64_sys_",
        "ia32_sys_",
        "arm64_sys_",
        "se_sys_",
        "sys_",
    ] {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest.trim_start_matches('_');
        }
    }
    name
}

/// Frames every blocked stack passes through (scheduler, system call entry and exit): they
/// tell no reason.
const GENERIC: &[&str] = &[
    "schedule",
    "schedule_timeout",
    "schedule_hrtimeout",
    "schedule_hrtimeout_range",
    "schedule_hrtimeout_range_clock",
    "schedule_preempt_disabled",
    "finish_task_switch",
    "do_syscall_64",
    "do_syscall_x64",
    "entry_SYSCALL_64",
    "entry_SYSCALL_64_after_hwframe",
    "syscall_exit_to_user_mode",
    "exit_to_user_mode_prepare",
    "wait_woken",
    "syscall",
];

/// Where a running thread is preempted: its stack says it was made to wait for a CPU, not
/// what it waits for.
const PREEMPTED: &[&str] = &[
    "preempt_schedule",
    "preempt_schedule_common",
    "preempt_schedule_irq",
    "preempt_schedule_notrace",
    "cond_resched",
    "exit_to_user_mode_loop",
    "irqentry_exit_to_user_mode",
];

// The functions that tell a kind, by their base names (see `base_name`). Kernel functions
// are those of Linux 5.x-6.x (names changed over time: `futex_wait_queue_me` became
// `futex_wait_queue`, then `futex_do_wait`; `pipe_read` became `anon_pipe_read`); user ones
// are glibc's, musl's and Rust's standard library's.
const LOCK: &[&str] = &[
    "futex_wait_queue_me",
    "futex_wait_queue",
    "futex_do_wait",
    "futex_wait",
    "futex_wait_multiple",
    "futex_wait_requeue_pi",
    "futex_lock_pi",
    "do_futex",
    "futex",
    "mutex_lock",
    "mutex_lock_slowpath",
    "mutex_lock_interruptible",
    "mutex_lock_killable",
    "rt_mutex_slowlock",
    "rwsem_down_read_slowpath",
    "rwsem_down_write_slowpath",
    "down_read",
    "down_write",
    "down",
    "down_interruptible",
    "down_killable",
    "percpu_rwsem_wait",
    "lll_lock_wait",
    "lll_lock_wait_private",
    "futex_abstimed_wait_common",
    "futex_abstimed_wait_common64",
    "futex_abstimed_wait_cancelable64",
    "futex_lock_pi64",
    "pthread_mutex_lock",
    "pthread_mutex_timedlock",
    "pthread_mutex_clocklock",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_cond_clockwait",
    "pthread_rwlock_rdlock",
    "pthread_rwlock_wrlock",
    "pthread_rwlock_timedrdlock",
    "pthread_rwlock_timedwrlock",
    "pthread_join",
    "pthread_barrier_wait",
    "sem_wait",
    "sem_timedwait",
    "sem_clockwait",
    "lock_contended",
    "lock_slow",
    "futex_wait_timeout",
];

const SLEEP: &[&str] = &[
    "do_nanosleep",
    "hrtimer_nanosleep",
    "common_nsleep",
    "clock_nanosleep",
    "nanosleep",
    "usleep",
    "sleep",
    "thrd_sleep",
    "msleep",
];

const POLL_IO: &[&str] = &[
    "pipe_read",
    "pipe_write",
    "anon_pipe_read",
    "anon_pipe_write",
    "pipe_wait",
    "pipe_wait_readable",
    "pipe_wait_writable",
    "do_sys_poll",
    "poll_schedule_timeout",
    "do_select",
    "core_sys_select",
    "do_epoll_wait",
    "ep_poll",
    "sk_wait_data",
    "sk_stream_wait_memory",
    "sk_stream_wait_connect",
    "skb_wait_for_more_packets",
    "skb_recv_datagram",
    "unix_stream_read_generic",
    "unix_stream_data_wait",
    "unix_dgram_recvmsg",
    "unix_wait_for_peer",
    "tcp_recvmsg",
    "tcp_recvmsg_locked",
    "udp_recvmsg",
    "inet_csk_accept",
    "inet_csk_wait_for_connect",
    "inet_wait_for_connect",
    "sock_recvmsg",
    "sock_sendmsg",
    "n_tty_read",
    "tty_read",
    "wait_for_tty_data",
    "eventfd_read",
    "read",
    "readv",
    "write",
    "writev",
    "recv",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "send",
    "sendto",
    "sendmsg",
    "accept",
    "accept4",
    "connect",
    "poll",
    "ppoll",
    "select",
    "pselect",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
];

/// Where a thread waits for a block device: disk I/O, and what for is said by a caller (a
/// page fault, a read, an `fsync`), which names the reason when it is in the stack.
const DISK_WAIT: &[&str] = &[
    "io_schedule",
    "io_schedule_timeout",
    "bit_wait_io",
    "folio_wait_bit_common",
    "folio_wait_bit",
    "folio_wait_writeback",
    "wait_on_page_bit_common",
    "wait_on_page_writeback",
    "filemap_get_pages",
    "wait_on_buffer",
    "submit_bio_wait",
    "blk_mq_get_tag",
    "wait_for_completion_io",
    "wait_for_completion_io_timeout",
];

const DISK_IO: &[&str] = &[
    "filemap_fault",
    "filemap_read",
    "do_read_cache_folio",
    "jbd2_log_wait_commit",
    "file_write_and_wait_range",
    "exc_page_fault",
    "do_page_fault",
    "handle_mm_fault",
    "do_fault",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "msync",
];

fn kind_of(name: &str) -> Option<WaitKind> {
    [
        (LOCK, WaitKind::Lock),
        (SLEEP, WaitKind::Sleep),
        (POLL_IO, WaitKind::PollIo),
        (DISK_IO, WaitKind::DiskIo),
    ]
    .into_iter()
    .find(|(names, _)| names.contains(&name))
    .map(|(_, kind)| kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventColumn, FrameKind};

    fn profile(names: &[&str]) -> Profile {
        Profile::new(
            names
                .iter()
                .map(|n| EventColumn {
                    name: n.to_string(),
                })
                .collect(),
        )
    }

    #[test]
    fn found_by_name_only_when_all_three_are_there() {
        let p = profile(&["cpu-clock", BLOCKED, "context-switches", ON_CPU, RUNNABLE]);
        assert_eq!(
            WallColumns::of(&p),
            Some(WallColumns {
                on_cpu: Column(3),
                runnable: Column(4),
                blocked: Column(1)
            })
        );
        assert_eq!(
            WallColumns::of(&profile(&["cpu-clock", ON_CPU, BLOCKED])),
            None
        );
    }

    /// The stacks of a real recording (`perf record -e context-switches -g` of `sleep 0.1`,
    /// of a program whose threads wait for a mutex, a condition variable, a pipe, a socket,
    /// `poll`, `epoll_wait` and a cold file, and of one that writes and `fsync`s a file,
    /// waits for a child and faults in a cold mapping; Linux 6.x, glibc 2.36), read back
    /// through `perf script`, each classified.
    fn recorded() -> Vec<(String, WaitKind, Option<String>)> {
        let text = include_str!("../tests/data/offcpu-waits.perf-script.txt");
        let p = crate::read_perf_script(text.as_bytes(), "offcpu-waits").expect("perf script");
        p.stacks
            .iter()
            .map(|s| {
                let frames: Vec<&Frame> = s.frames.iter().map(|&id| p.frame(id)).collect();
                let path: Vec<&str> = frames.iter().map(|f| f.name.as_str()).collect();
                let r = WaitReason::of(frames.iter().copied());
                (path.join(";"), r.kind, r.by.map(str::to_string))
            })
            .collect()
    }

    #[test]
    fn recorded_stacks_are_classified_by_the_kernel_function_they_slept_in() {
        use WaitKind::*;
        let got: Vec<(WaitKind, Option<String>)> =
            recorded().into_iter().map(|(_, k, by)| (k, by)).collect();
        let want: Vec<(WaitKind, &str)> = vec![
            // sleep 0.1: faulting its binary in, then the sleep.
            (DiskIo, "filemap_fault"),
            (Sleep, "do_nanosleep"),
            // The waiting threads.
            (Lock, "futex_do_wait"),
            (PollIo, "anon_pipe_read"),
            (PollIo, "unix_stream_read_generic"),
            (Sleep, "do_nanosleep"),
            (PollIo, "do_epoll_wait"),
            (PollIo, "poll_schedule_timeout.constprop.0"),
            (DiskIo, "filemap_read"),
            (Lock, "futex_do_wait"),
            // Preempted on the way out of write(2): not a wait.
            (Other, "exit_to_user_mode_loop"),
            // fsync: write-back, a preemption in it, the flush.
            (DiskIo, "file_write_and_wait_range"),
            (Other, "__cond_resched"),
            (DiskIo, "file_write_and_wait_range"),
            (DiskIo, "__x64_sys_fsync"),
            (DiskIo, "__x64_sys_fsync"),
            (DiskIo, "__x64_sys_fsync"),
            // waitpid, and a fault on a cold mapping.
            (Other, "do_wait"),
            (DiskIo, "filemap_fault"),
        ];
        let want: Vec<(WaitKind, Option<String>)> = want
            .into_iter()
            .map(|(k, by)| (k, Some(by.to_string())))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn without_kernel_frames_the_libc_wrapper_tells() {
        use WaitKind::*;
        let text = include_str!("../tests/data/offcpu-waits.perf-script.txt");
        let p = crate::read_perf_script(text.as_bytes(), "offcpu-waits").expect("perf script");
        let got: Vec<(WaitKind, Option<&str>)> = p
            .stacks
            .iter()
            .map(|s| {
                // The same stacks as recorded without kernel call chains.
                let user = s
                    .frames
                    .iter()
                    .map(|&id| p.frame(id))
                    .filter(|f| f.kind != FrameKind::Kernel);
                let r = WaitReason::of(user);
                (r.kind, r.by)
            })
            .collect();
        let want = vec![
            (Other, None),
            (Sleep, Some("clock_nanosleep@GLIBC_2.2.5")),
            (Lock, Some("__GI___lll_lock_wait")),
            (PollIo, Some("read")),
            (PollIo, Some("__libc_recv")),
            (Sleep, Some("clock_nanosleep@GLIBC_2.2.5")),
            (PollIo, Some("epoll_wait")),
            (PollIo, Some("__poll")),
            // A file read looks like any other read from user space.
            (PollIo, Some("read")),
            (Lock, Some("__futex_abstimed_wait_common")),
            (PollIo, Some("__GI___libc_write")),
            (DiskIo, Some("fsync")),
            (DiskIo, Some("fsync")),
            (DiskIo, Some("fsync")),
            (DiskIo, Some("fsync")),
            (DiskIo, Some("fsync")),
            (DiskIo, Some("fsync")),
            (Other, Some("__GI___wait4")),
            (Other, Some("main")),
        ];
        assert_eq!(got, want);
    }

    fn user(name: &str) -> Frame {
        Frame {
            name: name.into(),
            module: String::new(),
            kind: FrameKind::User,
        }
    }

    #[test]
    fn names_are_matched_by_their_base_and_the_process_frame_is_not() {
        assert_eq!(base_name("__GI___lll_lock_wait"), "lll_lock_wait");
        assert_eq!(base_name("clock_nanosleep@GLIBC_2.2.5"), "clock_nanosleep");
        assert_eq!(
            base_name("poll_schedule_timeout.constprop.0"),
            "poll_schedule_timeout"
        );
        assert_eq!(base_name("__x64_sys_futex"), "futex");
        assert_eq!(base_name("__libc_recv"), "recv");
        assert_eq!(base_name("std::thread::sleep"), "sleep");
        assert_eq!(
            base_name("std::sys::pal::unix::futex::futex_wait"),
            "futex_wait"
        );
        // A Rust mutex's slow path, a parking_lot one, a sleep, by their last part.
        let frames = [
            Frame {
                name: "sleep".into(),
                module: String::new(),
                kind: FrameKind::Process,
            },
            user("main"),
            user("std::sys::sync::mutex::futex::Mutex::lock_contended"),
        ];
        let r = WaitReason::of(frames.iter());
        assert_eq!(r.kind, WaitKind::Lock);
        assert_eq!(
            r.by,
            Some("std::sys::sync::mutex::futex::Mutex::lock_contended")
        );
        // The process is called `sleep`, but nothing in the stack sleeps.
        let r = WaitReason::of(frames[..2].iter());
        assert_eq!((r.kind, r.by), (WaitKind::Other, Some("main")));
        assert_eq!(WaitReason::of(frames[..1].iter()).by, None);
        assert_eq!(WaitReason::of([].iter()).kind, WaitKind::Other);
        let labels: Vec<&str> = WaitKind::ALL.iter().map(|k| k.label()).collect();
        assert_eq!(
            labels,
            [
                "lock/futex",
                "sleep",
                "pipe/socket/poll",
                "disk/page fault",
                "other"
            ]
        );
    }
}
