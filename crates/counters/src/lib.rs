//! Counting: opens perf events (perf_event_open, the ioctls, the ring buffers) and reads their
//! values, for the recorder (which opens its sampled events here), `cpiflame stat` and the
//! region-marker library.
//!
//! This crate must never leave a measured command running unreaped or held stopped, nor
//! report a count it did not read from the kernel: an event that will not open is an error
//! explained in words (errno, the sysctl to change), not a zero.
//!
//! - [`child`]: the measured command, held between fork and exec until its events are open.
//! - [`ring`]: draining a perf ring buffer.
//! - [`stat`]: counting a command, its threads and children (`cpiflame stat`);
//!   [`stat_report`]: its table and JSON.
//! - [`sys`]: perf_event_open with an attr encoded by the perf.data writer (one encoding for
//!   the file and the syscall), the ioctls, and errno explained in words a user can act on.
//! - [`rdpmc`]: reading a counter from user space through its mmap page (the seqlock protocol).
//! - [`read`]: the `read()` layouts of one counter and of a PERF_FORMAT_GROUP, and multiplex
//!   scaling from time_enabled / time_running.

pub mod child;
pub mod event_use;
pub mod rdpmc;
pub mod read;
pub mod ring;
pub mod stat;
pub mod stat_report;
pub mod sys;
