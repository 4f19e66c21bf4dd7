//! Byte ranges of mapped (or decompressed) files that can be handed to framehop and gimli
//! without copying: cloning one clones an `Arc`.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use memmap2::Mmap;

#[derive(Clone)]
enum Backing {
    Map(Arc<Mmap>),
    /// A `Vec` as it is: turning it into an `Arc<[u8]>` would copy it (decompressed debug
    /// sections are megabytes, and both copies would be resident at once).
    Owned(Arc<Vec<u8>>),
}

/// A shared, immutable byte range.
#[derive(Clone)]
pub struct SharedBytes {
    backing: Backing,
    range: Range<usize>,
}

impl SharedBytes {
    /// `range` of a mapped file; clamped to the map so it can never point outside it.
    pub fn mapped(map: &Arc<Mmap>, range: Range<usize>) -> Self {
        let end = range.end.min(map.len());
        let start = range.start.min(end);
        SharedBytes {
            backing: Backing::Map(map.clone()),
            range: start..end,
        }
    }

    /// Restricts the view to `r`, relative to the current view (clamped to it).
    pub fn narrow(&mut self, r: Range<usize>) {
        let len = self.range.len();
        let end = self.range.start + r.end.min(len);
        let start = self.range.start + r.start.min(r.end).min(len);
        self.range = start..end;
    }

    /// Drops the pages of `range` (relative to this view) of a mapped file from this process's
    /// memory once they have been read: they stay in the page cache, and a later read faults
    /// them back in. Nothing happens to bytes held in memory.
    pub fn release_pages(&self, range: Range<usize>) {
        let Backing::Map(map) = &self.backing else {
            return;
        };
        const PAGE: usize = 4096;
        let start = self
            .range
            .start
            .saturating_add(range.start)
            .min(self.range.end);
        let end = self
            .range
            .start
            .saturating_add(range.end)
            .min(self.range.end);
        // Whole pages only: the neighbours' bytes may be in use.
        let (start, end) = (start.div_ceil(PAGE) * PAGE, end / PAGE * PAGE);
        if start < end {
            // SAFETY: the map is a read-only file mapping that nothing writes; MADV_DONTNEED
            // only drops this process's page table entries, and any later read of these bytes
            // (through references still held, too) faults the same file contents back in.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }

    /// Bytes that exist only in memory (decompressed sections, a copy of the vDSO).
    pub fn owned(bytes: Vec<u8>) -> Self {
        let len = bytes.len();
        SharedBytes {
            backing: Backing::Owned(Arc::new(bytes)),
            range: 0..len,
        }
    }
}

impl Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.backing {
            Backing::Map(m) => &m[self.range.clone()],
            Backing::Owned(v) => &v[self.range.clone()],
        }
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.range.len())
    }
}

// SAFETY: the bytes live in an `Arc`'d map or slice that is never mutated or moved while any
// clone exists, so derefs of every clone return the same, stable address.
unsafe impl gimli::StableDeref for SharedBytes {}
unsafe impl gimli::CloneStableDeref for SharedBytes {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_pages_read_back_the_same() {
        let path = std::env::temp_dir().join(format!("cpiflame-shared-{}", std::process::id()));
        let content: Vec<u8> = (0..5 * 4096u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a file of this test's own that nothing else writes.
        let map = Arc::new(unsafe { Mmap::map(&file) }.unwrap());
        let mut view = SharedBytes::mapped(&map, 0..content.len());
        view.narrow(100..content.len());
        assert_eq!(&view[..], &content[100..]);
        // Partial pages at both ends are kept; ranges past the end are clamped.
        view.release_pages(0..3 * 4096);
        view.release_pages(4096..usize::MAX);
        assert_eq!(&view[..], &content[100..]);
        // Bytes held in memory are left alone.
        let owned = SharedBytes::owned(content.clone());
        owned.release_pages(0..content.len());
        assert_eq!(&owned[..], &content[..]);
        std::fs::remove_file(&path).unwrap();
    }
}
