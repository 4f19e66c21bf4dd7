//! The C ABI of the region markers (`cpiflame_markers`): the same model as the Rust API, for
//! C, C++, Fortran and anything with a C FFI (Python's ctypes, Java's FFM, Go's cgo). The
//! header is `include/cpiflame_markers.h`; `scripts/install-markers-c.sh` installs it with
//! `libcpiflame_markers.so`, `libcpiflame_markers.a` and a pkg-config file.
//!
//! This crate must never let a panic cross the C boundary (every entry point runs its body
//! under `catch_unwind`, and a caught panic is the code `CPIFLAME_MARKERS_EPANIC`), never
//! trust a handle, id or pointer it can check before using it (a handle is a number looked up
//! in the calling thread's table, never a pointer to follow), and never do more on the
//! start/stop path than the Rust API does plus that lookup.
//!
//! # Handles and threads
//!
//! A handle (`cpiflame_markers_t`, a `uint64_t`) names a [`Markers`] in a table of the thread
//! that opened it: the thread's serial number in the high 32 bits, its slot plus one in the
//! low 32. The counters count that thread (the Rust `Markers` is not `Send`), so a handle is
//! used on its own thread; on another one every call is `CPIFLAME_MARKERS_ETHREAD`. A closed
//! slot is never reused: a stale handle is `CPIFLAME_MARKERS_EHANDLE`, never someone else's
//! counters. Results of several threads are added up by [`cpiflame_markers_collect`] into the
//! process's totals ([`Stats::merge`]), reported by `cpiflame_markers_collected_report`.
//!
//! The LIKWID-style calls (`cpiflame_marker_*`, the header's `CPIFLAME_MARKER_*` macros) use
//! one implicit handle per thread, opened on first use with the events of
//! `CPIFLAME_MARKERS_EVENTS`; a thread's results join the process's totals when it calls
//! `cpiflame_marker_thread_close`, when it exits, or (the calling thread's) at
//! `cpiflame_marker_close`, which writes the totals' report.
//!
//! # Errors
//!
//! Every call returns `CPIFLAME_MARKERS_OK` (0) or a negative code; the message of the last
//! failing call on the thread is `cpiflame_markers_last_error()`.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use cpiflame_markers::{
    Error, Markers, Outcome, RegionId, Report, Stats, DEFAULT_EVENTS, SOFTWARE_EVENTS,
};

/// `cpiflame_markers_t`: a thread's serial (high 32 bits) and slot + 1 (low 32 bits).
pub type Handle = u64;

/// Success.
pub const OK: c_int = 0;
/// A NULL pointer where one is needed, text that is not UTF-8, an unknown report format.
pub const EINVAL: c_int = -1;
/// The events do not parse or do not open (the message says why).
pub const EOPEN: c_int = -2;
/// Not an open handle: never opened, or closed.
pub const EHANDLE: c_int = -3;
/// A handle opened on another thread (its counters count that thread).
pub const ETHREAD: c_int = -4;
/// A region id this handle never registered.
pub const EREGION: c_int = -5;
/// A stop of a region that is not running (ignored, counted as an unmatched stop).
pub const ENOTRUNNING: c_int = -6;
/// Reading the counters failed: the start or stop recorded nothing.
pub const EREAD: c_int = -7;
/// The buffer is too small for the report (its size is in `*needed`).
pub const ESPACE: c_int = -8;
/// Writing the report to the file descriptor or file failed.
pub const EIO: c_int = -9;
/// Statistics of different events cannot be added up.
pub const EMERGE: c_int = -10;
/// Nothing collected yet (no `cpiflame_markers_collect`, no thread closed).
pub const ENODATA: c_int = -11;
/// A call made while another call of this library was running on the same thread (from a
/// signal handler), or while the thread exits.
pub const EBUSY: c_int = -12;
/// A bug in this library, caught at the C boundary (the message has the panic's text).
pub const EPANIC: c_int = -13;

/// `CPIFLAME_MARKERS_TEXT`: the table of `Report`'s `Display`.
pub const FORMAT_TEXT: c_int = 0;
/// `CPIFLAME_MARKERS_JSON`: the JSON report (schema `cpiflame-markers/1`).
pub const FORMAT_JSON: c_int = 1;

/// The environment variable the implicit (LIKWID-style) handle takes its events from.
pub const EVENTS_VAR: &str = "CPIFLAME_MARKERS_EVENTS";
/// Where `cpiflame_marker_close` writes the report (JSON when it ends in `.json`); unset:
/// the table on stderr.
pub const OUTPUT_VAR: &str = "CPIFLAME_MARKERS_OUTPUT";

/// A failing call: its code and message.
#[derive(Debug)]
struct Failure {
    code: c_int,
    message: String,
}

fn fail<T>(code: c_int, message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        code,
        message: message.into(),
    })
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static THREAD: RefCell<ThreadMarkers> = RefCell::new(ThreadMarkers::new());
}

/// Serial numbers of threads, from 1 (a handle of 0 is never valid).
static NEXT_SERIAL: AtomicU32 = AtomicU32::new(1);

/// The process's totals: every collected handle's statistics added up.
static COLLECTED: Mutex<Option<Stats>> = Mutex::new(None);

/// Whether the implicit calls already printed their one warning.
static WARNED: AtomicBool = AtomicBool::new(false);

/// The handles of one thread.
struct ThreadMarkers {
    serial: u32,
    /// Slot `i` is handle `serial << 32 | (i + 1)`; `None` once closed (never reused).
    slots: Vec<Option<Box<Markers>>>,
    /// The slot of the implicit handle of the `cpiflame_marker_*` calls.
    implicit: Option<usize>,
}

impl ThreadMarkers {
    fn new() -> ThreadMarkers {
        let mut serial = NEXT_SERIAL.fetch_add(1, Ordering::Relaxed);
        if serial == 0 {
            // After 2^32 threads: skip 0, which is never a handle's.
            serial = NEXT_SERIAL.fetch_add(1, Ordering::Relaxed);
        }
        ThreadMarkers {
            serial,
            slots: Vec::new(),
            implicit: None,
        }
    }

    fn handle_of(&self, slot: usize) -> Handle {
        (u64::from(self.serial) << 32) | (slot as u64 + 1)
    }

    fn add(&mut self, markers: Markers) -> Result<usize, Failure> {
        if self.slots.len() >= u32::MAX as usize - 1 {
            return fail(EOPEN, "this thread opened 2^32 handles: no more slots");
        }
        self.slots.push(Some(Box::new(markers)));
        Ok(self.slots.len() - 1)
    }

    fn markers(&mut self, handle: Handle) -> Result<&mut Markers, Failure> {
        let serial = (handle >> 32) as u32;
        let slot = (handle & 0xffff_ffff) as usize;
        if serial != self.serial {
            if handle == 0 {
                return fail(EHANDLE, "handle 0 is not an open handle (never opened?)");
            }
            if serial != 0 && serial < NEXT_SERIAL.load(Ordering::Relaxed) {
                return fail(
                    ETHREAD,
                    format!(
                        "handle {handle:#x} belongs to another thread: a handle counts the thread \
                         that opened it and is used there only (open one per thread, add them up \
                         with cpiflame_markers_collect)"
                    ),
                );
            }
            return fail(
                EHANDLE,
                format!("{handle:#x} is not a handle this library opened"),
            );
        }
        match slot.checked_sub(1).and_then(|i| self.slots.get_mut(i)) {
            Some(Some(m)) => Ok(m),
            Some(None) => fail(EHANDLE, format!("handle {handle:#x} was closed")),
            None => fail(
                EHANDLE,
                format!("{handle:#x} is not a handle this library opened"),
            ),
        }
    }

    fn close(&mut self, handle: Handle) -> Result<Box<Markers>, Failure> {
        self.markers(handle)?;
        let slot = (handle & 0xffff_ffff) as usize - 1;
        if self.implicit == Some(slot) {
            self.implicit = None;
        }
        self.slots[slot]
            .take()
            .map_or_else(|| fail(EHANDLE, "closed"), Ok)
    }
}

impl Drop for ThreadMarkers {
    fn drop(&mut self) {
        // A thread that used the implicit calls and exits: its results join the totals.
        if let Some(Some(m)) = self.implicit.and_then(|i| self.slots.get(i)) {
            if let Err(f) = collect_stats(m.stats()) {
                warn_once(&f.message);
            }
        }
    }
}

fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            *e = text;
        }
    });
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs an entry point's body: its code, its message kept for `cpiflame_markers_last_error`,
/// and no panic out.
fn entry(body: impl FnOnce() -> Result<(), Failure>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => OK,
        Ok(Err(f)) => {
            set_last_error(&f.message);
            f.code
        }
        Err(payload) => {
            set_last_error(&format!(
                "internal error in cpiflame-markers (a bug; caught at the C boundary): {}",
                panic_text(payload.as_ref())
            ));
            EPANIC
        }
    }
}

fn with_thread<T>(f: impl FnOnce(&mut ThreadMarkers) -> Result<T, Failure>) -> Result<T, Failure> {
    THREAD
        .try_with(|t| match t.try_borrow_mut() {
            Ok(mut t) => f(&mut t),
            Err(_) => fail(
                EBUSY,
                "called while another cpiflame_markers call runs on this thread (from a signal handler?)",
            ),
        })
        .unwrap_or_else(|_| fail(EBUSY, "called while this thread exits"))
}

fn with_markers<T>(
    handle: Handle,
    f: impl FnOnce(&mut Markers) -> Result<T, Failure>,
) -> Result<T, Failure> {
    with_thread(|t| f(t.markers(handle)?))
}

/// # Safety
/// `ptr` is NULL or a NUL-terminated string.
unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return fail(EINVAL, format!("{what} is NULL"));
    }
    // SAFETY: the caller's promise (the header's contract).
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes
        .to_str()
        .or_else(|e| fail(EINVAL, format!("{what} is not UTF-8: {e}")))
}

fn open_error(e: &Error) -> Failure {
    Failure {
        code: EOPEN,
        message: e.to_string(),
    }
}

/// The events `specs` (comma-separated perf-style specs), or for `None` the default hardware
/// events, else (no PMU) the software ones.
fn open_markers(specs: Option<&str>) -> Result<Markers, Failure> {
    match specs {
        Some(s) => Markers::new(&[s]).map_err(|e| open_error(&e)),
        None => match Markers::new(DEFAULT_EVENTS) {
            Err(Error::NoHardware { .. }) => {
                Markers::new(SOFTWARE_EVENTS).map_err(|e| open_error(&e))
            }
            other => other.map_err(|e| open_error(&e)),
        },
    }
}

fn outcome(o: Outcome, what: &str, name: impl FnOnce() -> String) -> Result<(), Failure> {
    match o {
        Outcome::Done | Outcome::Restarted => Ok(()),
        Outcome::NotRunning => fail(
            ENOTRUNNING,
            format!(
                "{what} of region {}: it is not running (no start before this stop)",
                name()
            ),
        ),
        Outcome::UnknownRegion => fail(
            EREGION,
            format!(
                "{what}: {} is not a region of this handle (cpiflame_markers_register gives ids)",
                name()
            ),
        ),
        Outcome::ReadFailed => fail(
            EREAD,
            format!(
                "{what} of region {}: reading the counters failed (the report has the first error)",
                name()
            ),
        ),
    }
}

fn region_name(m: &Markers, id: u32) -> String {
    m.stats()
        .regions()
        .get(id as usize)
        .map_or_else(|| format!("id {id}"), |r| format!("'{}'", r.name()))
}

fn render(report: &Report, format: c_int) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let written = match format {
        FORMAT_TEXT => report.write_table(&mut out),
        FORMAT_JSON => report.write_json(&mut out),
        other => {
            return fail(
                EINVAL,
                format!("unknown report format {other} (0: text, 1: JSON)"),
            )
        }
    };
    written.or_else(|e| fail(EIO, format!("formatting the report: {e}")))?;
    Ok(out)
}

/// snprintf's contract: `*needed` = the length + 1, at most `size - 1` bytes and a NUL in
/// `buf`; ESPACE when it did not all fit (a NULL `buf` with size 0 only asks the size).
///
/// # Safety
/// `buf` is NULL or holds `size` writable bytes; `needed` is NULL or writable.
unsafe fn copy_out(
    bytes: &[u8],
    buf: *mut c_char,
    size: usize,
    needed: *mut usize,
) -> Result<(), Failure> {
    if !needed.is_null() {
        // SAFETY: the caller's promise.
        unsafe { *needed = bytes.len() + 1 };
    }
    if buf.is_null() {
        if size == 0 {
            return Ok(());
        }
        return fail(EINVAL, "buf is NULL with a non-zero size");
    }
    if size == 0 {
        return fail(
            ESPACE,
            format!(
                "the report needs {} bytes; the buffer has 0",
                bytes.len() + 1
            ),
        );
    }
    let n = bytes.len().min(size - 1);
    // SAFETY: n < size bytes fit in buf, which the caller says holds size bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    if n < bytes.len() {
        return fail(
            ESPACE,
            format!(
                "the report needs {} bytes; the buffer has {size} (cut short)",
                bytes.len() + 1
            ),
        );
    }
    Ok(())
}

fn write_fd(fd: c_int, mut bytes: &[u8]) -> Result<(), Failure> {
    while !bytes.is_empty() {
        // SAFETY: bytes is a valid slice; write() checks the descriptor itself.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return fail(
                EIO,
                format!("writing the report to file descriptor {fd}: {e}"),
            );
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

fn collect_stats(stats: &Stats) -> Result<(), Failure> {
    let mut all = COLLECTED.lock().unwrap_or_else(|p| p.into_inner());
    match all.as_mut() {
        None => *all = Some(stats.clone()),
        Some(a) => a
            .merge(stats)
            .or_else(|e| fail(EMERGE, format!("adding up the threads' results: {e}")))?,
    }
    Ok(())
}

fn collected_report() -> Result<Report, Failure> {
    let all = COLLECTED.lock().unwrap_or_else(|p| p.into_inner());
    all.as_ref().map(Stats::report).map_or_else(
        || {
            fail(
                ENODATA,
                "nothing collected yet (no cpiflame_markers_collect, no thread closed)",
            )
        },
        Ok,
    )
}

fn warn_once(message: &str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        let _ = writeln!(
            std::io::stderr(),
            "cpiflame-markers: {message} (further errors of CPIFLAME_MARKER_* are not printed)"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The explicit API: handles.

/// Opens counters of `events` (comma-separated perf-style specs; NULL: the default hardware
/// events, else the software ones) on the calling thread.
///
/// # Safety
/// `events` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_open(events: *const c_char, out: *mut Handle) -> c_int {
    entry(|| {
        if out.is_null() {
            return fail(EINVAL, "out is NULL");
        }
        let specs = if events.is_null() {
            None
        } else {
            // SAFETY: the caller's promise.
            Some(unsafe { text(events, "events") }?)
        };
        let markers = open_markers(specs)?;
        let handle = with_thread(|t| {
            let slot = t.add(markers)?;
            Ok(t.handle_of(slot))
        })?;
        // SAFETY: checked non-NULL; the caller says it is writable.
        unsafe { *out = handle };
        Ok(())
    })
}

/// Closes `handle` (its counters; its statistics are gone unless collected).
#[no_mangle]
pub extern "C" fn cpiflame_markers_close(handle: Handle) -> c_int {
    entry(|| with_thread(|t| t.close(handle)).map(drop))
}

/// The id of region `name`, registering it on first use.
///
/// # Safety
/// `name` is a NUL-terminated string or NULL; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_register(
    handle: Handle,
    name: *const c_char,
    out: *mut u32,
) -> c_int {
    entry(|| {
        if out.is_null() {
            return fail(EINVAL, "out is NULL");
        }
        // SAFETY: the caller's promise.
        let name = unsafe { text(name, "name") }?;
        let id = with_markers(handle, |m| Ok(m.register(name)))?;
        // SAFETY: checked non-NULL; the caller says it is writable.
        unsafe { *out = id.index() };
        Ok(())
    })
}

/// Starts region `region` (an id from `cpiflame_markers_register`).
#[no_mangle]
pub extern "C" fn cpiflame_markers_start(handle: Handle, region: u32) -> c_int {
    entry(|| {
        with_markers(handle, |m| {
            let o = m.start(RegionId::from_index(region));
            outcome(o, "start", || region_name(m, region))
        })
    })
}

/// Stops region `region`, adding its counts to its statistics.
#[no_mangle]
pub extern "C" fn cpiflame_markers_stop(handle: Handle, region: u32) -> c_int {
    entry(|| {
        with_markers(handle, |m| {
            let o = m.stop(RegionId::from_index(region));
            outcome(o, "stop", || region_name(m, region))
        })
    })
}

/// Ends region `region` and starts it again from the same reading (back-to-back regions).
#[no_mangle]
pub extern "C" fn cpiflame_markers_lap(handle: Handle, region: u32) -> c_int {
    entry(|| {
        with_markers(handle, |m| {
            let o = m.lap(RegionId::from_index(region));
            outcome(o, "lap", || region_name(m, region))
        })
    })
}

/// `f` on the region named `name` of `handle` (registered on first use).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn by_name(
    handle: Handle,
    name: *const c_char,
    what: &str,
    f: impl FnOnce(&mut Markers, RegionId) -> Outcome,
) -> c_int {
    entry(|| {
        // SAFETY: the caller's promise.
        let name = unsafe { text(name, "name") }?;
        with_markers(handle, |m| {
            let id = m.register(name);
            outcome(f(m, id), what, || format!("'{name}'"))
        })
    })
}

/// Starts the region named `name` (looked up per call: register once for hot paths).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_start_named(
    handle: Handle,
    name: *const c_char,
) -> c_int {
    // SAFETY: passed on.
    unsafe { by_name(handle, name, "start", |m, id| m.start(id)) }
}

/// Stops the region named `name`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_stop_named(handle: Handle, name: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe { by_name(handle, name, "stop", |m, id| m.stop(id)) }
}

/// Laps the region named `name`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_lap_named(handle: Handle, name: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe { by_name(handle, name, "lap", |m, id| m.lap(id)) }
}

/// Forgets every region's statistics (regions stay registered).
#[no_mangle]
pub extern "C" fn cpiflame_markers_reset(handle: Handle) -> c_int {
    entry(|| {
        with_markers(handle, |m| {
            m.reset();
            Ok(())
        })
    })
}

/// The numbers of one metric of one region (`cpiflame_markers_metric_t`); NaN where there is
/// no value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MetricValues {
    /// Completed start/stop pairs of the region.
    pub samples: u64,
    /// Values recorded for this metric.
    pub count: u64,
    /// Samples in which the event did not run (no value).
    pub not_counted: u64,
    /// Samples scaled for multiplexing.
    pub scaled: u64,
    /// Sum of the values (exact, saturating).
    pub total: u64,
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// The numbers of metric `metric` ("ns" or an event's name) of region `region`.
///
/// # Safety
/// `metric` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_metric(
    handle: Handle,
    region: u32,
    metric: *const c_char,
    out: *mut MetricValues,
) -> c_int {
    entry(|| {
        if out.is_null() {
            return fail(EINVAL, "out is NULL");
        }
        // SAFETY: the caller's promise.
        let metric = unsafe { text(metric, "metric") }?;
        let values = with_markers(handle, |m| {
            let Some(r) = m.stats().regions().get(region as usize) else {
                return fail(
                    EREGION,
                    format!("region id {region} is not a region of this handle"),
                );
            };
            let Some(x) = r.metric(metric) else {
                let names: Vec<&str> = r.metrics().iter().map(|m| m.name()).collect();
                return fail(
                    EINVAL,
                    format!("no metric '{metric}' (this handle's: {})", names.join(", ")),
                );
            };
            let s = x.summary();
            let q = x.sketch();
            let v = |o: Option<f64>| o.unwrap_or(f64::NAN);
            Ok(MetricValues {
                samples: r.samples(),
                count: s.count(),
                not_counted: x.not_counted(),
                scaled: x.scaled(),
                total: x.total(),
                mean: v(s.mean()),
                stddev: v(s.stddev()),
                min: v(s.min()),
                p50: v(q.quantile(0.5)),
                p90: v(q.quantile(0.9)),
                p99: v(q.quantile(0.99)),
                max: v(s.max()),
            })
        })?;
        // SAFETY: checked non-NULL; the caller says it is writable.
        unsafe { *out = values };
        Ok(())
    })
}

/// The report of `handle` (format 0: text, 1: JSON) into `buf`, snprintf-style.
///
/// # Safety
/// `buf` is NULL or holds `size` writable bytes; `needed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_report(
    handle: Handle,
    format: c_int,
    buf: *mut c_char,
    size: usize,
    needed: *mut usize,
) -> c_int {
    entry(|| {
        let bytes = with_markers(handle, |m| render(&m.report(), format))?;
        // SAFETY: the caller's promise.
        unsafe { copy_out(&bytes, buf, size, needed) }
    })
}

/// Writes the report of `handle` to file descriptor `fd` (which stays open).
#[no_mangle]
pub extern "C" fn cpiflame_markers_write_report(handle: Handle, format: c_int, fd: c_int) -> c_int {
    entry(|| {
        let bytes = with_markers(handle, |m| render(&m.report(), format))?;
        write_fd(fd, &bytes)
    })
}

/// Adds `handle`'s statistics to the process's totals and resets them (so collecting again
/// later adds only what came since).
#[no_mangle]
pub extern "C" fn cpiflame_markers_collect(handle: Handle) -> c_int {
    entry(|| {
        with_markers(handle, |m| {
            collect_stats(m.stats())?;
            m.reset();
            Ok(())
        })
    })
}

/// The report of the process's totals, snprintf-style.
///
/// # Safety
/// `buf` is NULL or holds `size` writable bytes; `needed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_markers_collected_report(
    format: c_int,
    buf: *mut c_char,
    size: usize,
    needed: *mut usize,
) -> c_int {
    entry(|| {
        let bytes = render(&collected_report()?, format)?;
        // SAFETY: the caller's promise.
        unsafe { copy_out(&bytes, buf, size, needed) }
    })
}

/// Writes the report of the process's totals to `fd`.
#[no_mangle]
pub extern "C" fn cpiflame_markers_collected_write_report(format: c_int, fd: c_int) -> c_int {
    entry(|| write_fd(fd, &render(&collected_report()?, format)?))
}

/// The message of the last failing call on this thread ("" if none): valid until the next
/// failing call on this thread.
#[no_mangle]
pub extern "C" fn cpiflame_markers_last_error() -> *const c_char {
    static EMPTY: &CStr = c"";
    catch_unwind(|| {
        LAST_ERROR
            .try_with(|e| e.try_borrow().map_or(EMPTY.as_ptr(), |e| e.as_ptr()))
            .unwrap_or(EMPTY.as_ptr())
    })
    .unwrap_or(EMPTY.as_ptr())
}

/// A code's name and meaning, as a static string.
#[no_mangle]
pub extern "C" fn cpiflame_markers_strerror(code: c_int) -> *const c_char {
    let s: &'static CStr = match code {
        OK => c"CPIFLAME_MARKERS_OK: success",
        EINVAL => c"CPIFLAME_MARKERS_EINVAL: invalid argument (NULL, not UTF-8, unknown format)",
        EOPEN => c"CPIFLAME_MARKERS_EOPEN: the events do not parse or open",
        EHANDLE => c"CPIFLAME_MARKERS_EHANDLE: not an open handle (never opened, or closed)",
        ETHREAD => c"CPIFLAME_MARKERS_ETHREAD: a handle of another thread",
        EREGION => c"CPIFLAME_MARKERS_EREGION: not a region id of this handle",
        ENOTRUNNING => c"CPIFLAME_MARKERS_ENOTRUNNING: stop of a region that is not running",
        EREAD => c"CPIFLAME_MARKERS_EREAD: reading the counters failed",
        ESPACE => c"CPIFLAME_MARKERS_ESPACE: the buffer is too small",
        EIO => c"CPIFLAME_MARKERS_EIO: writing the report failed",
        EMERGE => c"CPIFLAME_MARKERS_EMERGE: statistics of different events",
        ENODATA => c"CPIFLAME_MARKERS_ENODATA: nothing collected yet",
        EBUSY => c"CPIFLAME_MARKERS_EBUSY: re-entrant call, or the thread is exiting",
        EPANIC => c"CPIFLAME_MARKERS_EPANIC: internal error (a bug), caught at the boundary",
        _ => c"unknown cpiflame_markers code",
    };
    s.as_ptr()
}

// ---------------------------------------------------------------------------------------------
// The LIKWID-style calls: one implicit handle per thread.

fn with_implicit<T>(f: impl FnOnce(&mut Markers) -> Result<T, Failure>) -> Result<T, Failure> {
    with_thread(|t| {
        let slot = match t.implicit {
            Some(s) => s,
            None => {
                let specs = std::env::var(EVENTS_VAR)
                    .ok()
                    .filter(|s| !s.trim().is_empty());
                let markers = open_markers(specs.as_deref()).map_err(|mut f| {
                    f.message = format!(
                        "opening the events of {EVENTS_VAR}={}: {}",
                        specs.as_deref().unwrap_or("(unset: the defaults)"),
                        f.message
                    );
                    f
                })?;
                let s = t.add(markers)?;
                t.implicit = Some(s);
                s
            }
        };
        match t.slots.get_mut(slot) {
            Some(Some(m)) => f(m),
            _ => fail(EHANDLE, "the implicit handle is gone"),
        }
    })
}

/// An implicit call's code, its first failure in the process printed on stderr.
fn implicit(code: c_int) -> c_int {
    if code != OK {
        warn_once(&format!(
            "{}",
            // SAFETY: last_error returns a valid NUL-terminated string.
            unsafe { CStr::from_ptr(cpiflame_markers_last_error()) }.to_string_lossy()
        ));
    }
    code
}

/// `CPIFLAME_MARKER_INIT()` / `CPIFLAME_MARKER_THREADINIT()`: opens the calling thread's
/// implicit handle now (else it opens on first use).
#[no_mangle]
pub extern "C" fn cpiflame_marker_init() -> c_int {
    implicit(entry(|| with_implicit(|_| Ok(()))))
}

unsafe fn implicit_named(
    name: *const c_char,
    what: &str,
    f: impl FnOnce(&mut Markers, RegionId) -> Outcome,
) -> c_int {
    implicit(entry(|| {
        // SAFETY: the caller's promise.
        let name = unsafe { text(name, "name") }?;
        with_implicit(|m| {
            let id = m.register(name);
            outcome(f(m, id), what, || format!("'{name}'"))
        })
    }))
}

/// `CPIFLAME_MARKER_REGISTER(name)`: registers `name` on the implicit handle.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_marker_register(name: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe { implicit_named(name, "register", |_, _| Outcome::Done) }
}

/// `CPIFLAME_MARKER_START(name)`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_marker_start(name: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe { implicit_named(name, "CPIFLAME_MARKER_START", |m, id| m.start(id)) }
}

/// `CPIFLAME_MARKER_STOP(name)`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpiflame_marker_stop(name: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe { implicit_named(name, "CPIFLAME_MARKER_STOP", |m, id| m.stop(id)) }
}

/// `CPIFLAME_MARKER_THREADCLOSE()`: adds the calling thread's implicit results to the
/// process's totals and closes its implicit handle (a thread that exits does this itself).
#[no_mangle]
pub extern "C" fn cpiflame_marker_thread_close() -> c_int {
    implicit(entry(thread_close))
}

fn thread_close() -> Result<(), Failure> {
    let closed = with_thread(|t| match t.implicit {
        Some(slot) => {
            let h = t.handle_of(slot);
            t.close(h).map(Some)
        }
        None => Ok(None),
    })?;
    match closed {
        Some(m) => collect_stats(m.stats()),
        None => Ok(()),
    }
}

/// `CPIFLAME_MARKER_CLOSE()`: the calling thread's implicit results join the totals, and the
/// totals' report is written to `$CPIFLAME_MARKERS_OUTPUT` (JSON when it ends in `.json`),
/// else as a table on stderr.
#[no_mangle]
pub extern "C" fn cpiflame_marker_close() -> c_int {
    implicit(entry(|| {
        thread_close()?;
        let report = collected_report()?;
        match std::env::var_os(OUTPUT_VAR).filter(|p| !p.is_empty()) {
            None => write_fd(2, &render(&report, FORMAT_TEXT)?),
            Some(path) => {
                let json = path.to_string_lossy().ends_with(".json");
                let bytes = render(&report, if json { FORMAT_JSON } else { FORMAT_TEXT })?;
                std::fs::write(&path, bytes).or_else(|e| {
                    fail(
                        EIO,
                        format!("writing the report to {}: {e}", path.to_string_lossy()),
                    )
                })
            }
        }
    }))
}

#[cfg(test)]
mod tests;
