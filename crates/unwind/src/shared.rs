//! Byte ranges of mapped (or decompressed) files that can be handed to framehop and gimli
//! without copying: cloning one clones an `Arc`.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::ops::{Deref, Range};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use memmap2::Mmap;

#[derive(Clone)]
enum Backing {
    Map(Arc<MappedFile>),
    /// A `Vec` as it is: turning it into an `Arc<[u8]>` would copy it (decompressed debug
    /// sections are megabytes, and both copies would be resident at once).
    Owned(Arc<Vec<u8>>),
}

/// A mapped file, and the open file itself while few enough are kept open (see
/// [`KeptFile`]): small reads scattered over a large file, such as the names a profile hits in
/// a library's string table, are made with `pread`, because each read through the map brings
/// the kernel's fault-around (64 KiB) of pages into this process's memory.
struct MappedFile {
    map: Mmap,
    file: Option<KeptFile>,
}

/// An open file counted against [`kept_files_limit`].
struct KeptFile(File);

/// Files kept open now.
static KEPT_FILES: AtomicUsize = AtomicUsize::new(0);

/// How many mapped files are kept open: a quarter of the process's limit on open files, so
/// that a recording with hundreds of libraries never makes opening the next one fail. Files
/// past it are read through their maps.
fn kept_files_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given and nothing else.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
        let soft = if ok { limit.rlim_cur } else { 1024 };
        usize::try_from(soft / 4).unwrap_or(usize::MAX)
    })
}

impl KeptFile {
    fn keep(file: File) -> Option<KeptFile> {
        let limit = kept_files_limit();
        KEPT_FILES
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
            .map(|_| KeptFile(file))
    }
}

impl Drop for KeptFile {
    fn drop(&mut self) {
        KEPT_FILES.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A shared, immutable byte range.
#[derive(Clone)]
pub struct SharedBytes {
    backing: Backing,
    range: Range<usize>,
}

impl SharedBytes {
    /// The whole of `file`, mapped read-only (the file kept open for [`Self::c_string`]).
    ///
    /// # Safety
    /// As for [`Mmap::map`]: the file must not be changed while mapped. (Binaries replaced under
    /// a profiler are a limitation perf documents too.)
    pub unsafe fn map_file(file: File) -> std::io::Result<Self> {
        // SAFETY: the caller's promise.
        let map = unsafe { Mmap::map(&file) }?;
        let len = map.len();
        Ok(SharedBytes {
            backing: Backing::Map(Arc::new(MappedFile {
                map,
                file: KeptFile::keep(file),
            })),
            range: 0..len,
        })
    }

    /// The bytes from `start` (relative to this view) up to the first NUL, or up to `end`:
    /// read with `pread` from a mapped file that is kept open, so that no pages of the map
    /// become resident, otherwise borrowed.
    pub fn c_string(&self, range: Range<usize>) -> Cow<'_, [u8]> {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        if let Backing::Map(mapped) = &self.backing {
            if let Some(KeptFile(file)) = &mapped.file {
                if let Some(name) = read_c_string(file, self.range.start, start..end) {
                    return Cow::Owned(name);
                }
            }
        }
        let room = &self[start..end];
        Cow::Borrowed(&room[..room.iter().position(|&b| b == 0).unwrap_or(room.len())])
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
                map.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
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
            Backing::Map(m) => &m.map[self.range.clone()],
            Backing::Owned(v) => &v[self.range.clone()],
        }
    }
}

/// Bytes `range` of `file` (offsets relative to `base`) up to the first NUL, in reads that
/// double in size from 256 bytes: most names are short, a few (C++, Rust) are kilobytes.
/// `None` when a read fails or comes up short (the file shrank): the map is read instead.
fn read_c_string(file: &File, base: usize, range: Range<usize>) -> Option<Vec<u8>> {
    let mut name = Vec::new();
    let mut at = range.start;
    let mut step = 256;
    while at < range.end {
        let len = step.min(range.end - at);
        let old = name.len();
        name.resize(old + len, 0);
        let offset = u64::try_from(base.checked_add(at)?).ok()?;
        file.read_exact_at(&mut name[old..], offset).ok()?;
        if let Some(nul) = name[old..].iter().position(|&b| b == 0) {
            name.truncate(old + nul);
            return Some(name);
        }
        at += len;
        step *= 2;
    }
    Some(name)
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

    fn temp_file(tag: &str, content: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("cpiflame-{tag}-{}", std::process::id()));
        std::fs::write(&path, content).unwrap();
        path
    }

    #[test]
    fn released_pages_read_back_the_same() {
        let content: Vec<u8> = (0..5 * 4096u32).map(|i| (i % 251) as u8).collect();
        let path = temp_file("shared", &content);
        // SAFETY: a file of this test's own that nothing else writes.
        let mut view = unsafe { SharedBytes::map_file(File::open(&path).unwrap()) }.unwrap();
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

    /// Strings read with pread from a narrowed view of a kept file are the ones the map
    /// holds: short, spanning several doubling reads, cut at the range's end, and empty.
    #[test]
    fn c_strings_read_from_the_file_as_from_the_map() {
        let long: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let content = [b"xx\0short\0".as_slice(), &long, b"\0\0tail"].concat();
        let path = temp_file("cstring", &content);
        // SAFETY: a file of this test's own that nothing else writes.
        let mut view = unsafe { SharedBytes::map_file(File::open(&path).unwrap()) }.unwrap();
        view.narrow(3..content.len());
        let owned = SharedBytes::owned(content[3..].to_vec());
        let end = view.len();
        let cases = [
            (0..end, b"short".to_vec()),
            (6..end, long.clone()),
            (6..6 + 300, long[..300].to_vec()),
            (6 + long.len() + 1..end, Vec::new()),
            (end - 4..end, b"tail".to_vec()),
            (end..end, Vec::new()),
            (end + 10..end + 20, Vec::new()),
        ];
        for (range, want) in cases {
            let read = view.c_string(range.clone());
            assert!(
                matches!(read, Cow::Owned(_)) || range.start >= end,
                "{range:?} read through the map"
            );
            assert_eq!(read.as_ref(), &want[..], "{range:?} from the file");
            assert_eq!(
                owned.c_string(range.clone()).as_ref(),
                &want[..],
                "{range:?}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
}
