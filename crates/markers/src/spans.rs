//! Regions written where a recording can see them: when `CPIFLAME_MARKERS_DIR` is set
//! (`cpiflame record` sets it for the command it starts), every region a thread closes is
//! also a line of that thread's marker file, `DIR/marker-PID-TID.txt`, in the convention
//! samply reads (its `samply/src/shared/marker_file.rs`): one line per region,
//! `START END NAME`, the start and end in nanoseconds of CLOCK_MONOTONIC (the clock of
//! `cpiflame record`'s samples, and of `perf record -k monotonic`'s), the name the rest of
//! the line.
//!
//! The file is mapped executable (one page, never touched) once it is created, so the
//! recording has a PERF_RECORD_MMAP2 of its path from this thread, as perf and samply find
//! JIT dumps: `cpiflame render --region NAME` and `samply import` read the file from there
//! (or from the recording's folder).
//!
//! This must never fail a region: a file that cannot be created or written is said once on
//! stderr and the regions are counted as before.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable naming the folder of the marker files.
pub const DIR_VAR: &str = "CPIFLAME_MARKERS_DIR";

/// The folder of `CPIFLAME_MARKERS_DIR`, if set and not empty.
pub(crate) fn dir_from_env() -> Option<PathBuf> {
    std::env::var_os(DIR_VAR)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// One thread's marker file: buffered, and mapped so the recording sees it.
struct MarkerFile {
    out: BufWriter<File>,
    map: *mut libc::c_void,
}

impl Drop for MarkerFile {
    fn drop(&mut self) {
        let _ = self.out.flush();
        if !self.map.is_null() {
            // SAFETY: the page this file mapped, unmapped once.
            unsafe { libc::munmap(self.map, page_size()) };
        }
    }
}

thread_local! {
    /// `None` until the thread's first region ends with a folder set; `Some(None)` once
    /// the file could not be made (not tried again).
    static FILE: RefCell<Option<Option<MarkerFile>>> = const { RefCell::new(None) };
}

static WARNED: AtomicBool = AtomicBool::new(false);

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

fn warn(message: String) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "cpiflame-markers: {message}; regions are counted but not written for the recording"
        );
    }
}

fn open(dir: &std::path::Path) -> Option<MarkerFile> {
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    let path = dir.join(format!("marker-{pid}-{tid}.txt"));
    // Read too: mapping needs a readable descriptor.
    let file = match File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => {
            warn(format!("{DIR_VAR}: cannot create {}: {e}", path.display()));
            return None;
        }
    };
    use std::os::fd::AsRawFd;
    // SAFETY: a fresh private mapping of an open file, never read or written through.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page_size(),
            libc::PROT_READ | libc::PROT_EXEC,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    let map = if map == libc::MAP_FAILED {
        warn(format!(
            "cannot map {} (a noexec mount?): {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
        std::ptr::null_mut()
    } else {
        map
    };
    Some(MarkerFile {
        out: BufWriter::with_capacity(64 * 1024, file),
        map,
    })
}

/// Writes the region `name` from `start` to `end` (ns) to this thread's marker file in
/// `dir`, making the file on first use.
pub(crate) fn write(dir: &std::path::Path, start: u64, end: u64, name: &str) {
    let _ = FILE.try_with(|f| {
        let Ok(mut f) = f.try_borrow_mut() else {
            return;
        };
        let file = f.get_or_insert_with(|| open(dir));
        let Some(file) = file else { return };
        // A line per region: a name's line breaks would start another.
        let written = if name.contains(['\n', '\r']) {
            writeln!(
                file.out,
                "{start} {end} {}",
                name.replace(['\n', '\r'], " ")
            )
        } else {
            writeln!(file.out, "{start} {end} {name}")
        };
        if let Err(e) = written {
            warn(format!("writing a marker file: {e}"));
        }
    });
}

/// Writes out what this thread's marker file holds (a `Markers` being dropped; the file is
/// also written out when the thread ends, or at `exit` for the main thread).
pub(crate) fn flush() {
    let _ = FILE.try_with(|f| {
        if let Ok(mut f) = f.try_borrow_mut() {
            if let Some(Some(file)) = f.as_mut() {
                let _ = file.out.flush();
            }
        }
    });
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of the regions' `ns` and of their lines.
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}
