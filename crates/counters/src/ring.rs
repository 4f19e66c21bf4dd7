//! One perf ring buffer: the kernel writes records at `data_head`, we read up to it and give
//! the space back by moving `data_tail`.
//!
//! Ordering (perf_event.h): read `data_head`, then an acquire barrier before reading the
//! data; after reading, a release barrier before storing `data_tail`, so the kernel never
//! overwrites bytes still being read.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::MmapMut;

/// Offsets of `data_head` and `data_tail` in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

pub struct Ring {
    map: MmapMut,
    page: usize,
    size: usize,
    /// A record that wraps around the end is copied here to be handed out in one piece.
    scratch: Vec<u8>,
}

impl Ring {
    /// Maps `pages` data pages (a power of two) plus the control page of `fd`.
    pub fn map(fd: &File, pages: usize, page: usize) -> std::io::Result<Ring> {
        let len = (pages + 1) * page;
        // SAFETY: the kernel owns the data pages and only appends behind data_head; we only
        // read below data_head and write data_tail, as the perf ABI documents.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map_mut(fd)? };
        Ok(Ring {
            map,
            page,
            size: pages * page,
            scratch: Vec::new(),
        })
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: the control page is mapped, 8-byte aligned at these offsets, and shared
        // with the kernel, which is what atomics are for.
        unsafe { AtomicU64::from_ptr(self.map.as_ptr().add(offset) as *mut u64) }
    }

    /// Bytes waiting to be read.
    pub fn pending(&self) -> u64 {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        head.wrapping_sub(tail)
    }

    /// Hands every complete record to `f`, then releases the space. Returns the bytes read.
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let start = self.word(DATA_TAIL).load(Ordering::Relaxed);
        let mut tail = start;
        let size = self.size as u64;
        while head.wrapping_sub(tail) >= 8 {
            let at = (tail % size) as usize;
            let header = self.bytes(at, 8);
            let len = u16::from_ne_bytes([header[6], header[7]]) as u64;
            if len < 8 || head.wrapping_sub(tail) < len {
                break;
            }
            let len = len as usize;
            if at + len <= self.size {
                let base = self.page + at;
                f(&self.map[base..base + len]);
            } else {
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                scratch.extend_from_slice(self.bytes(at, self.size - at));
                scratch.extend_from_slice(self.bytes(0, len - (self.size - at)));
                f(&scratch);
                self.scratch = scratch;
            }
            tail = tail.wrapping_add(len as u64);
        }
        self.word(DATA_TAIL).store(tail, Ordering::Release);
        tail.wrapping_sub(start)
    }

    /// `len` bytes of the data area from `at` (not wrapping).
    fn bytes(&self, at: usize, len: usize) -> &[u8] {
        let base = self.page + at;
        &self.map[base..base + len.min(self.size - at)]
    }
}
