//! A global allocator that remembers the largest single request and the peak of live bytes,
//! so a test can say how much memory an input made the readers ask for. The allocator is the
//! whole test binary's: every test of a binary that measures holds [`alone`] from its first
//! line, so no other test's allocations (a 64 MiB input being built) count as the reader's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

struct Watch;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// Counts a request of `size` bytes; live bytes only when it was granted.
fn note(size: usize, granted: *mut u8) -> *mut u8 {
    LARGEST.fetch_max(size, Relaxed);
    if !granted.is_null() {
        let live = LIVE.fetch_add(size, Relaxed) + size;
        PEAK.fetch_max(live, Relaxed);
    }
    granted
}

// SAFETY: every call is passed on to the system allocator unchanged; only counters are kept.
unsafe impl GlobalAlloc for Watch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size(), unsafe { System.alloc(layout) })
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size(), unsafe { System.alloc_zeroed(layout) })
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let granted = unsafe { System.realloc(ptr, layout, new_size) };
        if !granted.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        note(new_size, granted)
    }
}

#[global_allocator]
static WATCH: Watch = Watch;

/// What `f` asked of the allocator.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    /// The largest single allocation, in bytes (requests that failed included).
    pub largest: usize,
    /// The most bytes live at once, above what was live before `f` ran.
    pub peak: usize,
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Held for a whole test: the other tests of the binary wait.
pub struct Alone(#[allow(dead_code)] MutexGuard<'static, ()>);

pub fn alone() -> Alone {
    Alone(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()))
}

/// What `f` asked of the allocator; `_alone` proves no other test is running.
pub fn measure(_alone: &Alone, f: impl FnOnce()) -> Usage {
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    LARGEST.store(0, Relaxed);
    f();
    Usage {
        largest: LARGEST.load(Relaxed),
        peak: PEAK.load(Relaxed).saturating_sub(before),
    }
}

/// The most an input of `len` bytes may make a reader allocate: a small constant for tables
/// and names, plus what the input could legitimately expand to (DWARF sections compressed
/// with zlib inflate up to 1032 times).
pub fn budget(len: usize) -> usize {
    (16 << 20) + 1032 * len
}
