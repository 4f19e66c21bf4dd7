//! An image's symbol index kept on disk between runs, next to the decompressed debug
//! sections ([`crate::dwarf::DwarfCache`]): `DIR/symbols/BUILDID-SIZE.v1`, by the file's
//! build id and size, or for a file without a build id (rustup's libraries have none)
//! `DIR/symbols/file-KEY-SIZE.v1`, KEY its path and device (hashed), inode and change time
//! (which changes with any write or replacement of the file and cannot be set back). Building the index of a large library (librustc_driver's 300,000 text
//! symbols: its whole symbol table read and sorted) was a tenth of `render`'s CPU time on a
//! rustc recording; a run with the entry maps it and reads only the pages its lookups touch.
//!
//! An entry is this machine's bytes of the index: a 64-byte header (magic, a byte-order mark,
//! the index's base, the string table's range in the file, the symbol count, the symbols'
//! CRC-32) and the symbols, 12 bytes each, sorted by offset. It is used only when the header
//! matches, the CRC checks and the offsets are in order; else the index is built again and
//! the entry written anew (to a temporary file, then renamed: a reader sees a whole entry or
//! none).

use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Symbol, SymbolIndex};
use crate::shared::SharedBytes;
use crate::source::Source;

const MAGIC: &[u8; 8] = b"CPIFSYM1";
const HEADER: usize = 64;
/// Written in the machine's byte order: an entry from a machine of the other order fails it.
const BYTE_ORDER: u64 = 0x0102_0304_0506_0708;

/// Where an image's entry is, and the source that reads and writes it.
#[derive(Clone)]
pub(super) struct SymbolCache {
    pub dir: PathBuf,
    /// The file's build id in hex, or `file-KEY` ([`file_key`]).
    pub key: String,
    pub file_len: usize,
    pub source: Arc<dyn Source>,
}

impl SymbolCache {
    fn path(&self) -> PathBuf {
        self.dir
            .join("symbols")
            .join(format!("{}-{}.v1", self.key, self.file_len))
    }

    /// The entry's index, mapped; `None` unless it is whole, checks and fits a file of
    /// `file_len` bytes.
    pub fn read(&self) -> Option<SymbolIndex> {
        parse(self.source.cached(&self.path())?, self.file_len)
    }

    /// Writes `index` as the entry. Failures are ignored: the cache only saves work.
    pub fn write(&self, index: &SymbolIndex) {
        let symbols: &[Symbol] = &index.symbols;
        let _ = self.source.keep_cached(&self.path(), &mut |out| {
            let mut body = Vec::with_capacity(std::mem::size_of_val(symbols));
            for s in symbols {
                for field in [s.offset, s.name, s.size_binding] {
                    body.extend_from_slice(&field.to_ne_bytes());
                }
            }
            let mut header = Vec::with_capacity(HEADER);
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&BYTE_ORDER.to_ne_bytes());
            for field in [
                index.base,
                index.strings.start as u64,
                index.strings.end as u64,
                symbols.len() as u64,
                u64::from(crc32fast::hash(&body)),
                0,
            ] {
                header.extend_from_slice(&field.to_le_bytes());
            }
            out.write_all(&header)?;
            out.write_all(&body)
        });
    }
}

/// The cache key of a file without a build id: `file-`, a CRC of its path and device, its
/// inode and change time; `None` when the file cannot be looked at on this host.
pub(super) fn file_key(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let mut place = crc32fast::Hasher::new();
    place.update(path.as_os_str().as_bytes());
    place.update(&meta.dev().to_le_bytes());
    Some(format!(
        "file-{:08x}-{:x}-{}.{:09}",
        place.finalize(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    ))
}

/// `map` as the entry of a file of `file_len` bytes: its index, mapped; `None` unless the
/// entry is whole, checks and fits the file.
pub(super) fn parse(map: SharedBytes, file_len: usize) -> Option<SymbolIndex> {
    let header = map.get(..HEADER)?;
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    let native = |at: usize| u64::from_ne_bytes(header[at..at + 8].try_into().unwrap());
    if &header[..8] != MAGIC || native(8) != BYTE_ORDER {
        return None;
    }
    let (base, strings) = (u64_at(16), u64_at(24)..u64_at(32));
    let count = usize::try_from(u64_at(40)).ok()?;
    let bytes = count.checked_mul(std::mem::size_of::<Symbol>())?;
    let range = HEADER..HEADER.checked_add(bytes)?;
    let strings = usize::try_from(strings.start).ok()?..usize::try_from(strings.end).ok()?;
    if range.end != map.len()
        || strings.start > strings.end
        || strings.end > file_len
        || u64::from(crc32fast::hash(&map[range.clone()])) != u64_at(48)
    {
        return None;
    }
    let symbols = Symbols::mapped(map.clone(), range)?;
    if !symbols.windows(2).all(|w| w[0].offset <= w[1].offset) {
        return None;
    }
    // Checked: only the pages lookups touch are read again.
    map.release_pages(0..map.len());
    Some(SymbolIndex {
        symbols,
        base,
        strings,
        names_read: Default::default(),
    })
}

/// An index's symbols: built in memory, or a cache entry's, mapped.
pub(super) enum Symbols {
    Built(Vec<Symbol>),
    Mapped {
        map: SharedBytes,
        range: Range<usize>,
    },
}

impl Default for Symbols {
    fn default() -> Self {
        Symbols::Built(Vec::new())
    }
}

impl Symbols {
    /// `range` of `map` as symbols, when it holds whole ones at their alignment.
    fn mapped(map: SharedBytes, range: Range<usize>) -> Option<Symbols> {
        let bytes = map.get(range.clone())?;
        let aligned = bytes.as_ptr() as usize % std::mem::align_of::<Symbol>() == 0;
        (aligned && bytes.len() % std::mem::size_of::<Symbol>() == 0)
            .then_some(Symbols::Mapped { map, range })
    }
}

impl Deref for Symbols {
    type Target = [Symbol];
    fn deref(&self) -> &[Symbol] {
        match self {
            Symbols::Built(v) => v,
            Symbols::Mapped { map, range } => {
                let bytes = &map[range.clone()];
                // SAFETY: `Symbols::mapped` checked that the bytes are whole symbols at
                // their alignment; `Symbol` is three `u32`s (`repr(C)`), valid for any bits;
                // the map is read-only and lives as long as `self`.
                unsafe {
                    std::slice::from_raw_parts(
                        bytes.as_ptr().cast::<Symbol>(),
                        bytes.len() / std::mem::size_of::<Symbol>(),
                    )
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::HostSource;
    use cpiflame_testkit::Dir;

    fn index(offsets: &[u32]) -> SymbolIndex {
        SymbolIndex {
            symbols: Symbols::Built(
                offsets
                    .iter()
                    .enumerate()
                    .map(|(i, &offset)| Symbol {
                        offset,
                        name: 7 * i as u32,
                        size_binding: 16 | 1 << Symbol::SIZE_BITS,
                    })
                    .collect(),
            ),
            base: 0x40_0000,
            strings: 1000..5000,
            names_read: Default::default(),
        }
    }

    fn cache(dir: &Dir) -> SymbolCache {
        SymbolCache {
            dir: dir.root().to_path_buf(),
            key: "0123abcd".into(),
            file_len: 8000,
            source: Arc::new(HostSource),
        }
    }

    fn fields(index: &SymbolIndex) -> (Vec<(u32, u32, u32)>, u64, Range<usize>) {
        let symbols = index.symbols.iter();
        let symbols = symbols
            .map(|s| (s.offset, s.name, s.size_binding))
            .collect();
        (symbols, index.base, index.strings.clone())
    }

    /// Rewrites the entry's body with `edit` and its CRC to match: only the other checks
    /// can refuse it.
    fn edit_entry(cache: &SymbolCache, edit: impl FnOnce(&mut Vec<u8>)) {
        let path = cache.path();
        let mut bytes = std::fs::read(&path).unwrap();
        edit(&mut bytes);
        let crc = u64::from(crc32fast::hash(&bytes[HEADER..]));
        bytes[48..56].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
    }

    #[test]
    fn an_entry_reads_back_as_the_index_written() {
        let dir = Dir::new("symbol-cache-round-trip");
        let cache = cache(&dir);
        assert!(cache.read().is_none(), "no entry yet");
        let built = index(&[0x10, 0x10, 0x200, 0x3000]);
        cache.write(&built);
        let read = cache.read().expect("the entry written is read");
        assert!(matches!(read.symbols, Symbols::Mapped { .. }));
        assert_eq!(fields(&read), fields(&built));
    }

    #[test]
    fn a_changed_or_unfit_entry_is_not_used() {
        let dir = Dir::new("symbol-cache-refused");
        let cache = cache(&dir);
        cache.write(&index(&[0x10, 0x20, 0x30]));
        // A byte changed behind the CRC's back.
        let path = cache.path();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER + 4] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(cache.read().is_none(), "CRC mismatch");
        // Offsets out of order (binary searches would go wrong), CRC made to match.
        cache.write(&index(&[0x10, 0x20, 0x30]));
        edit_entry(&cache, |b| {
            b[HEADER..HEADER + 4].copy_from_slice(&0x99u32.to_ne_bytes())
        });
        assert!(cache.read().is_none(), "unsorted");
        // Cut short, and a string table past the end of the file.
        cache.write(&index(&[0x10, 0x20, 0x30]));
        edit_entry(&cache, |b| b.truncate(b.len() - 12));
        assert!(cache.read().is_none(), "count does not match the length");
        cache.write(&index(&[0x10]));
        assert!(SymbolCache {
            file_len: 4999,
            ..cache.clone()
        }
        .read()
        .is_none());
        // The other byte order's entry.
        cache.write(&index(&[0x10]));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8..16].reverse();
        std::fs::write(&path, &bytes).unwrap();
        assert!(cache.read().is_none(), "byte order");
    }

    #[test]
    fn a_file_rewritten_in_place_gets_another_key() {
        let dir = Dir::new("symbol-cache-key");
        let path = dir.path("lib.so");
        std::fs::write(&path, b"one").unwrap();
        let first = file_key(&path).unwrap();
        assert_eq!(
            file_key(&path).unwrap(),
            first,
            "the same file, the same key"
        );
        // The change time moves on with any write, even one that keeps the size.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, b"two").unwrap();
        assert_ne!(file_key(&path).unwrap(), first);
        assert!(file_key(&dir.path("absent.so")).is_none());
    }
}
