//! One ELF image (executable, library, vDSO, separate debug file): what unwinding and naming
//! need from it, read once and kept. Works from the file's bytes; opening the file is the
//! [`Source`]'s business. Addresses are in the spaces of [`crate::address`].

use std::borrow::Cow;
use std::cell::{Cell, OnceCell, RefCell};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use foldhash::HashMap;
use framehop::ModuleSectionInfo;
use object::{Object, ObjectSection, ObjectSegment};

use crate::address::{Avma, FileMapping, FileOffset, Svma};
use crate::demangle::demangle;
use crate::dwarf::{DwarfCache, DwarfNames};
use crate::plt::{plt_ranges, plt_stubs, stub_at, PltStub};
use crate::sections::section_bytes;
use crate::shared::SharedBytes;
use crate::source::{HostSource, Source};

mod symbol_cache;
use symbol_cache::{SymbolCache, Symbols};

/// Sections framehop reads for ELF images.
const UNWIND_SECTIONS: [&[u8]; 5] = [
    b".eh_frame",
    b".eh_frame_hdr",
    b".debug_frame",
    b".text",
    b".got",
];

/// Why an image could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageError {
    NotFound,
    Unreadable(String),
    NotElf(String),
    BuildIdMismatch,
}

impl std::fmt::Display for ImageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImageError::NotFound => write!(f, "not found"),
            ImageError::Unreadable(e) => write!(f, "unreadable ({e})"),
            ImageError::NotElf(e) => write!(f, "not an ELF file ({e})"),
            ImageError::BuildIdMismatch => write!(f, "build id does not match the recording"),
        }
    }
}

#[derive(Clone, Debug)]
struct Segment {
    vaddr: Svma,
    offset: FileOffset,
    filesz: u64,
    executable: bool,
}

/// A symbol-table entry as an index into the file's string table: names are neither read,
/// copied nor demangled until an address in the symbol is named. 12 bytes: a large library
/// has hundreds of thousands. `repr(C)`: a cache entry maps them ([`symbol_cache`]).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Symbol {
    /// The symbol's SVMA less the index's base (code is never 4 GiB from the first segment).
    offset: u32,
    /// Where the (mangled, NUL-terminated) name starts in the string table.
    name: u32,
    /// The symbol's size in the low 30 bits, saturated (no function is 1 GiB); the binding
    /// in the top 2: 0 global, 1 local, 2 weak, the order in which aliases are preferred.
    size_binding: u32,
}

impl Symbol {
    const SIZE_BITS: u32 = 30;

    fn size(&self) -> u32 {
        self.size_binding & ((1 << Self::SIZE_BITS) - 1)
    }

    fn binding(&self) -> u32 {
        self.size_binding >> Self::SIZE_BITS
    }
}

/// An image's text symbols, sorted by address, and where their names are.
#[derive(Default)]
struct SymbolIndex {
    symbols: Symbols,
    /// The SVMA symbols' offsets count from: the lowest loaded segment's.
    base: u64,
    /// The string table's place in the file.
    strings: Range<usize>,
    /// Names read through the map since the string table's pages were last released.
    names_read: Cell<u32>,
}

/// Names read through the map between releases of the string table's pages, where the file
/// could not be kept open to read them with `pread` (see [`SharedBytes::c_string`]): each read
/// maps in the pages around the name, and the thousands of names a large program's profile
/// hits would leave megabytes of a large library's string table resident.
const NAMES_BETWEEN_RELEASES: u32 = 256;

impl SymbolIndex {
    fn svma(&self, symbol: &Symbol) -> u64 {
        self.base.saturating_add(u64::from(symbol.offset))
    }

    /// The raw name of `symbol` in `data`, the file indexed.
    fn name<'a>(&self, symbol: &Symbol, data: &'a SharedBytes) -> Cow<'a, [u8]> {
        let start = self.strings.start.saturating_add(symbol.name as usize);
        let name = data.c_string(start..self.strings.end);
        if let Cow::Borrowed(_) = name {
            let read = self.names_read.get() + 1;
            if read >= NAMES_BETWEEN_RELEASES {
                data.release_pages(self.strings.clone());
                self.names_read.set(0);
            } else {
                self.names_read.set(read);
            }
        }
        name
    }
}

/// A named frame at one address: function name and whether it was inlined into its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedFrame {
    pub name: String,
    pub inlined: bool,
}

/// One frame of a file's DWARF at an address, as naming reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DwarfFrame {
    /// The function's raw (mangled) name.
    pub raw_name: String,
    /// Its source file and line there, where DWARF has them.
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// An ELF file opened for unwinding and symbolization.
pub struct Image {
    /// The file that was opened (after symfs and build-id lookups).
    pub path: PathBuf,
    data: SharedBytes,
    pub build_id: Option<Vec<u8>>,
    segments: Vec<Segment>,
    /// The symbol tables sorted by address; built on first use (or ahead of it on another
    /// thread, see [`Image::prefetch_names`]).
    symbols: OnceCell<SymbolIndex>,
    symbols_loading: Cell<Option<JoinHandle<SymbolIndex>>>,
    /// The addresses of the unwind table entries that covered an address looked up, sorted
    /// by start ([`Image::cfi_covers`]).
    cfi_known: RefCell<Vec<Range<u64>>>,
    /// Demangled names of the symbols named so far, by where their names lie: a function
    /// is hit at many addresses, and demangling is the costly part of naming one.
    demangled: RefCell<HashMap<u32, Box<str>>>,
    /// `.gnu_debuglink` file name and CRC, for finding separate debug info.
    pub debuglink: Option<(Vec<u8>, u32)>,
    pub has_dwarf: bool,
    little_endian: bool,
    /// The sections framehop asks for, read once: name, SVMA range, bytes.
    unwind_sections: Vec<(&'static [u8], Range<u64>, SharedBytes)>,
    /// DWARF of this file (its units parsed as they are needed); loaded on first use.
    dwarf: OnceCell<Option<DwarfNames>>,
    /// A load of the DWARF sections started ahead of use on another thread (decompressing a
    /// distribution's debug info takes tens of milliseconds), joined on first use.
    dwarf_loading: Cell<Option<JoinHandle<Option<DwarfNames>>>>,
    /// Separate debug file (by build id or debug link) when this one has no DWARF; found on
    /// first use. Its DWARF and symbol table complete this image's.
    debug: OnceCell<Option<Box<Image>>>,
    /// Where this file's decompressed debug sections are kept between runs, and the source
    /// that reads and writes them (see [`crate::dwarf::DwarfCache`]); `None` for no cache.
    pub(crate) dwarf_cache: Option<(PathBuf, Arc<dyn Source>)>,
    /// The stated address ranges of the PLT's stub sections, and their stubs' names, read
    /// when an address there is first named.
    plt_ranges: Vec<Range<u64>>,
    plt: OnceCell<Vec<PltStub>>,
}

impl Image {
    /// Maps and parses the ELF file at `path` on this host.
    pub fn open(path: &Path) -> Result<Image, ImageError> {
        Self::open_in(&HostSource, path)
    }

    /// Reads the ELF file at `path` from `source` and parses it.
    pub fn open_in(source: &dyn Source, path: &Path) -> Result<Image, ImageError> {
        let bytes = source.map(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ImageError::NotFound,
            _ => ImageError::Unreadable(e.to_string()),
        })?;
        Self::from_bytes(path.to_path_buf(), bytes)
    }

    /// Parses an ELF image held in memory (the vDSO copied from a process).
    pub fn from_bytes(path: PathBuf, data: SharedBytes) -> Result<Image, ImageError> {
        let file = object::File::parse(&*data).map_err(|e| ImageError::NotElf(e.to_string()))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(ImageError::NotElf(format!("{:?}", file.format())));
        }
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let segments = file
            .segments()
            .map(|s| {
                let (offset, filesz) = s.file_range();
                let executable = match s.flags() {
                    object::SegmentFlags::Elf { p_flags, .. } => {
                        p_flags.0 & object::elf::PF_X.0 != 0
                    }
                    _ => false,
                };
                Segment {
                    vaddr: Svma(s.address()),
                    offset: FileOffset(offset),
                    filesz,
                    executable,
                }
            })
            .collect();
        let debuglink = file
            .gnu_debuglink()
            .ok()
            .flatten()
            .map(|(name, crc)| (name.to_vec(), crc));
        let has_dwarf = file
            .section_by_name(".debug_info")
            .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0);
        let little_endian = file.is_little_endian();
        let unwind_sections = UNWIND_SECTIONS
            .iter()
            .filter_map(|&name| {
                let section = file.section_by_name_bytes(name)?;
                if section.kind() == object::SectionKind::UninitializedData {
                    return None;
                }
                // framehop's interface takes raw SVMAs. Saturating: a hostile size must not
                // overflow.
                let svma = section.address()..section.address().saturating_add(section.size());
                Some((name, svma, section_bytes(&data, &section)?))
            })
            .collect();
        let plt_ranges = plt_ranges(&file);
        drop(file);
        Ok(Image {
            path,
            data,
            build_id,
            segments,
            symbols: OnceCell::new(),
            symbols_loading: Cell::new(None),
            cfi_known: RefCell::default(),
            demangled: RefCell::default(),
            debuglink,
            has_dwarf,
            little_endian,
            unwind_sections,
            dwarf: OnceCell::new(),
            dwarf_loading: Cell::new(None),
            debug: OnceCell::new(),
            dwarf_cache: None,
            plt_ranges,
            plt: OnceCell::new(),
        })
    }

    /// The whole file's bytes (for CRC checks of debug links).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// Drops the pages of the mapped file from this process's memory after a read of the
    /// whole of it; they fault back in as they are read again.
    pub(crate) fn release_pages(&self) {
        self.data.release_pages(0..self.data.len());
    }

    /// The AVMA at which this image's SVMA 0 lies, for a mapping of `len` bytes of the file
    /// from offset `pgoff` at `start` (raw addresses, for callers outside this crate).
    pub fn base_avma(&self, start: u64, pgoff: u64, len: u64) -> u64 {
        let mapping = FileMapping {
            start: Avma(start),
            pgoff: FileOffset(pgoff),
            len,
        };
        self.base_of(&mapping).0
    }

    /// The AVMA at which this image's SVMA 0 lies in `mapping`: the AVMA of the mapped
    /// segment's `p_offset`, minus its `p_vaddr`. Segments can share a page (lld puts the end
    /// of the read-only segment and the start of the code in one), so the executable segment
    /// inside the mapping wins.
    pub(crate) fn base_of(&self, mapping: &FileMapping) -> Avma {
        let overlaps = |s: &&Segment| mapping.holds_any_of(s.offset, s.filesz);
        let seg = self
            .segments
            .iter()
            .filter(overlaps)
            .find(|s| s.executable)
            .or_else(|| self.segments.iter().find(overlaps));
        match seg {
            Some(s) => mapping.avma_of(s.offset).minus(s.vaddr.0),
            // No segment: take the file as loaded at its own offsets.
            None => mapping.avma_of(FileOffset(0)),
        }
    }

    /// framehop's view of this image's unwind sections, for the image mapped at `avma` with
    /// SVMA 0 at `base_avma` (raw addresses: framehop's interface).
    pub fn framehop_module(
        &self,
        name: String,
        avma: Range<u64>,
        base_avma: u64,
    ) -> framehop::Module<SharedBytes> {
        framehop::Module::new(name, avma, base_avma, UnwindSections { image: self })
    }

    /// Drops the pages of the unwind sections from this process's memory; they fault back in
    /// as framehop reads them again.
    pub(crate) fn release_unwind_pages(&self) {
        for (_, _, bytes) in &self.unwind_sections {
            bytes.release_pages(0..bytes.len());
        }
    }

    /// Whether this image's unwind tables hold an entry (FDE) whose range covers stated
    /// address `svma`; see [`Image::cfi_overlaps`].
    pub(crate) fn cfi_covers(&self, svma: Svma) -> Option<bool> {
        // An entry that covered an address covers every address of its range: a function is
        // hit at many addresses, and each lookup in the table parses an entry.
        {
            let known = self.cfi_known.borrow();
            let i = known.partition_point(|r| r.start <= svma.0);
            if i > 0 && svma.0 < known[i - 1].end {
                return Some(true);
            }
        }
        let (covers, entry) = self.cfi_entry(svma.0..svma.0.saturating_add(1));
        if let Some(entry) = entry {
            let mut known = self.cfi_known.borrow_mut();
            let i = known.partition_point(|r| r.start <= entry.start);
            known.insert(i, entry);
        }
        covers
    }

    /// Whether an entry (FDE) of this image's unwind tables overlaps the stated addresses
    /// `range`: [`Image::cfi_entry`] without the entry.
    pub(crate) fn cfi_overlaps(&self, range: Range<u64>) -> Option<bool> {
        self.cfi_entry(range).0
    }

    /// Whether an entry (FDE) of this image's unwind tables overlaps the stated addresses
    /// `range`, read from the sections framehop reads, in its order of preference
    /// (`.eh_frame` through `.eh_frame_hdr`'s table, `.eh_frame` alone, `.debug_frame`).
    /// `None` when the image has no unwind tables, or tables without a single entry (the
    /// linker leaves an empty `.eh_frame` for code assembled without CFI); an entry that
    /// cannot be parsed covers nothing. With the addresses of the entry that overlaps, where
    /// it was found through `.eh_frame_hdr`'s table (the tables of nearly every file).
    fn cfi_entry(&self, range: Range<u64>) -> (Option<bool>, Option<Range<u64>>) {
        let mut entry = None;
        (self.cfi_entry_into(range, &mut entry), entry)
    }

    /// [`Image::cfi_entry`], the entry's addresses put in `entry`.
    fn cfi_entry_into(&self, range: Range<u64>, entry: &mut Option<Range<u64>>) -> Option<bool> {
        use gimli::{BaseAddresses, DebugFrame, EhFrame, EhFrameHdr, LittleEndian, UnwindSection};
        let start = |name: &[u8]| self.section(name).map_or(0, |(svma, _)| svma.start);
        let bases = BaseAddresses::default()
            .set_eh_frame_hdr(start(b".eh_frame_hdr"))
            .set_eh_frame(start(b".eh_frame"))
            .set_text(start(b".text"))
            .set_got(start(b".got"));
        if let Some((_, eh_frame)) = self.section(b".eh_frame") {
            let eh_frame = EhFrame::new(&eh_frame, LittleEndian);
            let Some((_, hdr)) = self.section(b".eh_frame_hdr") else {
                return section_overlaps(&eh_frame, &bases, range);
            };
            let Ok(hdr) = EhFrameHdr::new(&hdr, LittleEndian).parse(&bases, 8) else {
                return Some(false);
            };
            // No table: a header over no entries (else framehop could not search it either).
            let table = hdr.table()?;
            // Entries do not overlap: of those starting before the range's end, only the
            // last one (the table's binary search finds it) can reach into the range.
            let last = range.end.checked_sub(1).filter(|_| !range.is_empty())?;
            let fde = table
                .lookup(last, &bases)
                .and_then(|pointer| table.pointer_to_offset(pointer))
                .and_then(|offset| {
                    eh_frame.fde_from_offset(&bases, offset, EhFrame::cie_from_offset)
                });
            return Some(fde.is_ok_and(|fde| {
                let overlaps = fde_overlaps(&fde, &range);
                if overlaps {
                    let start = fde.initial_address();
                    *entry = Some(start..start.saturating_add(fde.len()));
                }
                overlaps
            }));
        }
        let (_, debug_frame) = self.section(b".debug_frame")?;
        let mut debug_frame = DebugFrame::new(&debug_frame, LittleEndian);
        debug_frame.set_address_size(8);
        section_overlaps(&debug_frame, &bases, range)
    }

    /// The stated addresses of the function (the nearest sized symbol of this file's symbol
    /// table at or below `svma`; labels without a size are passed over) that holds `svma`,
    /// if one does.
    pub(crate) fn function_at(&self, svma: Svma) -> Option<Range<u64>> {
        let index = self.symbols();
        let symbols = &index.symbols;
        let end = symbols.partition_point(|s| index.svma(s) <= svma.0);
        let function = symbols[..end].iter().rev().find(|s| s.size() != 0)?;
        let start = index.svma(function);
        // Of aliases at one address (next to each other: the index is sorted), the largest.
        let first = symbols.partition_point(|s| s.offset < function.offset);
        let last = symbols.partition_point(|s| s.offset <= function.offset);
        let size = symbols[first..last]
            .iter()
            .map(|s| u64::from(s.size()))
            .max()?;
        (svma.0 < start.saturating_add(size)).then(|| start..start + size)
    }

    /// The raw (mangled) symbol-table name of the function `function_at` finds for
    /// `svma`: its main name, with GCC's clone suffixes (`foo.cold`), which frames drop.
    pub(crate) fn function_symbol_at(&self, svma: Svma) -> Option<String> {
        let range = self.function_at(svma)?;
        let main = self.symbols_at(Svma(range.start)).into_iter().next()?;
        Some(self.name_of(&main).into_owned())
    }

    /// The file's bytes at stated addresses `range`, when one segment holds all of them.
    pub(crate) fn code_bytes(&self, range: Range<u64>) -> Option<&[u8]> {
        let segment = self.segments.iter().find(|s| {
            s.vaddr.0 <= range.start && range.end <= s.vaddr.0.saturating_add(s.filesz)
        })?;
        let start = segment
            .offset
            .0
            .checked_add(range.start - segment.vaddr.0)?;
        let end = start.checked_add(range.end - range.start)?;
        self.data
            .get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
    }

    /// Bytes of unwind section `name` with its SVMA range.
    fn section(&self, name: &[u8]) -> Option<(Range<u64>, SharedBytes)> {
        self.unwind_sections
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, svma, bytes)| (svma.clone(), bytes.clone()))
    }

    /// The frames at stated address `svma` (raw, for callers outside this crate), as the
    /// resolver names them: innermost first, inlined functions before the function itself.
    pub fn frames_at(
        &self,
        svma: u64,
        find_debug: impl FnOnce() -> Option<Image>,
    ) -> Vec<NamedFrame> {
        self.frames_at_svma(Svma(svma), find_debug)
    }

    /// The frames at `svma`, innermost first: inlined functions (from DWARF) and then the
    /// function itself, named by the symbol table (this file's or its debug file's), else by
    /// DWARF. Empty when nothing names the address. `find_debug` finds the separate debug
    /// file, asked at most once per image, and only if this file has no DWARF.
    pub(crate) fn frames_at_svma(
        &self,
        svma: Svma,
        find_debug: impl FnOnce() -> Option<Image>,
    ) -> Vec<NamedFrame> {
        if let Some(name) = self.plt_name(svma) {
            return vec![NamedFrame {
                name,
                inlined: false,
            }];
        }
        let debug = if self.has_dwarf {
            None
        } else {
            self.debug
                .get_or_init(|| find_debug().map(Box::new))
                .as_deref()
        };
        let dwarf = debug.unwrap_or(self).dwarf_names();
        let mut frames = Vec::new();
        if let Some(dwarf) = dwarf {
            for frame in dwarf.frames(svma.0) {
                let Some(function) = frame.function else {
                    continue;
                };
                let Ok(raw) = function.raw_name() else {
                    continue;
                };
                frames.push(NamedFrame {
                    name: demangle(&raw),
                    inlined: true,
                });
            }
        }
        // The outermost DWARF frame is the function itself, not an inlined one. It is named
        // by the symbol table, as perf does: DWARF names of C++ functions with internal
        // linkage are unqualified (`hidden_spin` for `(anonymous namespace)::hidden_spin`).
        // Copies GCC splits off a function (`foo.cold`, `foo.constprop.0`) are named `foo`,
        // so a function is one frame wherever it is sampled.
        let dwarf_outer = frames.pop();
        let (mut owner, mut symbols) = match debug {
            Some(d) => (d, d.symbols_at(svma)),
            None => (self, Vec::new()),
        };
        if symbols.is_empty() {
            (owner, symbols) = (self, self.symbols_at(svma));
        }
        let symbol_name = |s: &Symbol| owner.symbol_name(s);
        let outer = match (dwarf_outer, symbols.first()) {
            // DWARF's name when it is one of the symbol's aliases (`__libc_start_main_impl`,
            // not its exported alias `__libc_start_main`): the name of the source.
            (Some(d), _) if symbols.iter().any(|s| symbol_name(s) == d.name) => Some(d.name),
            (_, Some(main)) => Some(symbol_name(main)),
            (Some(d), None) => Some(d.name),
            (None, None) => None,
        };
        if let Some(name) = outer {
            frames.push(NamedFrame {
                name,
                inlined: false,
            });
        }
        frames
    }

    /// `name@plt` for an address in a PLT stub, as perf names it (no symbol covers the stubs;
    /// the relocations say where each one jumps).
    fn plt_name(&self, svma: Svma) -> Option<String> {
        if !self.plt_ranges.iter().any(|r| r.contains(&svma.0)) {
            return None;
        }
        let stubs = self.plt.get_or_init(|| plt_stubs(&self.data));
        stub_at(stubs, svma.0).map(|s| s.name.to_string())
    }

    /// Starts loading the DWARF that will name this image's frames (its own, or its debug
    /// file's, found with `find_debug`) on another thread, so that it is ready when the first
    /// sample in this image needs it.
    pub fn prefetch_names(&self, find_debug: impl FnOnce() -> Option<Image>) {
        self.prefetch_symbols();
        let target = if self.has_dwarf {
            self
        } else {
            match self
                .debug
                .get_or_init(|| find_debug().map(Box::new))
                .as_deref()
            {
                Some(d) => {
                    d.prefetch_symbols();
                    d
                }
                None => return,
            }
        };
        if target.has_dwarf && target.dwarf.get().is_none() {
            let loading = target.dwarf_loading.take();
            let handle = loading.unwrap_or_else(|| {
                let data = target.data.clone();
                let little_endian = target.little_endian;
                let cache = target.cache_spot();
                std::thread::spawn(move || DwarfNames::load(&data, little_endian, cache.as_ref()))
            });
            target.dwarf_loading.set(Some(handle));
        }
    }

    /// This file's entry in the cache of decompressed debug sections: by its build id.
    fn cache_spot(&self) -> Option<DwarfCache> {
        let (dir, source) = self.dwarf_cache.clone()?;
        Some(DwarfCache {
            dir,
            build_id: self.build_id.clone()?,
            source,
        })
    }

    fn dwarf_names(&self) -> Option<&DwarfNames> {
        self.dwarf
            .get_or_init(|| match self.dwarf_loading.take() {
                Some(handle) => handle.join().ok().flatten(),
                None if self.has_dwarf => {
                    DwarfNames::load(&self.data, self.little_endian, self.cache_spot().as_ref())
                }
                None => None,
            })
            .as_ref()
    }

    /// The raw (mangled) symbol-table names of the symbol covering `svma`: its main name
    /// first, then its aliases. Empty when no symbol covers it.
    fn symbols_at(&self, svma: Svma) -> Vec<Symbol> {
        let index = self.symbols();
        let symbols = &index.symbols;
        let end = symbols.partition_point(|s| index.svma(s) <= svma.0);
        let Some(last) = end.checked_sub(1).map(|i| &symbols[i]) else {
            return Vec::new();
        };
        let start = symbols[..end].partition_point(|s| s.offset < last.offset);
        let mut aliases = symbols[start..end].to_vec();
        if aliases.len() > 1 {
            // The main name first, chosen as perf's `choose_best_symbol` does: one with a
            // size, then global over local over weak (`__vdso_clock_gettime` over the weak
            // `clock_gettime`), then the fewest leading underscores (`malloc` over
            // `__libc_malloc`), then the longest; then by name for stability.
            // Each name read once (a read is a system call), not once per comparison.
            let mut named: Vec<(Symbol, Cow<[u8]>)> = aliases
                .iter()
                .map(|s| (*s, index.name(s, &self.data)))
                .collect();
            named.sort_unstable_by(|(a, na), (b, nb)| {
                (a.size() == 0, a.binding())
                    .cmp(&(b.size() == 0, b.binding()))
                    .then_with(|| {
                        let (na, nb) = (&na[..], &nb[..]);
                        let underscores = |n: &[u8]| n.iter().take_while(|&&c| c == b'_').count();
                        underscores(na)
                            .cmp(&underscores(nb))
                            .then(nb.len().cmp(&na.len()))
                            .then_with(|| na.cmp(nb))
                    })
                    .then_with(|| b.size().cmp(&a.size()))
            });
            aliases = named.into_iter().map(|(s, _)| s).collect();
        }
        let main = &aliases[0];
        if main.size() != 0 && svma.0 >= index.svma(main).saturating_add(u64::from(main.size())) {
            return Vec::new();
        }
        aliases
    }

    /// Starts building the symbol index on another thread (a large library has hundreds of
    /// thousands of symbols), unless it is built or being built.
    fn prefetch_symbols(&self) {
        if self.symbols.get().is_some() {
            return;
        }
        let loading = self.symbols_loading.take();
        let handle = loading.unwrap_or_else(|| {
            let data = self.data.clone();
            let cache = self.symbol_cache();
            std::thread::spawn(move || cached_symbol_index(&data, cache.as_ref()))
        });
        self.symbols_loading.set(Some(handle));
    }

    fn symbols(&self) -> &SymbolIndex {
        self.symbols.get_or_init(|| {
            self.symbols_loading
                .take()
                .and_then(|handle| handle.join().ok())
                .unwrap_or_else(|| cached_symbol_index(&self.data, self.symbol_cache().as_ref()))
        })
    }

    /// This file's symbol index entry in the cache directory: by its build id (or, without
    /// one, the file's identity on this host) and size.
    fn symbol_cache(&self) -> Option<SymbolCache> {
        let (dir, source) = self.dwarf_cache.clone()?;
        let key = match &self.build_id {
            Some(id) => crate::locate::hex(id),
            None => symbol_cache::file_key(&self.path)?,
        };
        Some(SymbolCache {
            dir,
            key,
            file_len: self.data.len(),
            source,
        })
    }

    /// The name of `symbol` as frames show it: demangled, without GCC's clone suffixes.
    fn symbol_name(&self, symbol: &Symbol) -> String {
        let mut demangled = self.demangled.borrow_mut();
        let name = demangled
            .entry(symbol.name)
            .or_insert_with(|| strip_clone_suffix(&demangle(&self.name_of(symbol))).into());
        name.to_string()
    }

    /// The raw (mangled) name of `symbol`, read from the file's string table (bytes that
    /// are not UTF-8 replaced, as perf prints them raw).
    fn name_of(&self, symbol: &Symbol) -> std::borrow::Cow<'_, str> {
        match self.symbols().name(symbol, &self.data) {
            Cow::Borrowed(name) => String::from_utf8_lossy(name),
            Cow::Owned(name) => match String::from_utf8(name) {
                Ok(name) => Cow::Owned(name),
                Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            },
        }
    }
}

/// The text symbols of the ELF file `data`, sorted by address and, at one address, with the
/// main name first. From the symbol table, or the dynamic symbol table when there is none, as
/// perf does (the symbol table holds the dynamic symbols too). Read from the raw entries, in
/// one pass that releases the table's pages behind it; the string table is read only to
/// compare aliases at one address (a large library's is tens of megabytes).
/// For the fuzzer (`cpiflame_hostile::symbol_cache_entry`): `entry` read as the symbol-index
/// cache entry of `file`, with its CRC first set to match when `fix_crc` (so that mutations
/// reach the checks after it); every symbol of an accepted entry is then looked up and named
/// from `file` as naming would. The number of symbols accepted.
#[doc(hidden)]
pub fn check_symbol_cache_entry(entry: &[u8], file: &[u8], fix_crc: bool) -> Option<usize> {
    let mut entry = entry.to_vec();
    if fix_crc && entry.len() >= 64 {
        let crc = u64::from(crc32fast::hash(&entry[64..]));
        entry[48..56].copy_from_slice(&crc.to_le_bytes());
    }
    let index = symbol_cache::parse(SharedBytes::owned(entry), file.len())?;
    let data = SharedBytes::owned(file.to_vec());
    for symbol in index.symbols.iter().take(4096) {
        let svma = index.svma(symbol);
        let found = index.symbols.partition_point(|s| index.svma(s) <= svma);
        assert!(found > 0, "a symbol's own address finds it");
        let _ = index.name(symbol, &data);
    }
    Some(index.symbols.len())
}

/// The symbol index of `data` from its cache entry, else built (and the entry written).
fn cached_symbol_index(data: &SharedBytes, cache: Option<&SymbolCache>) -> SymbolIndex {
    if let Some(index) = cache.and_then(SymbolCache::read) {
        return index;
    }
    let index = symbol_index(data);
    if let Some(cache) = cache {
        cache.write(&index);
    }
    index
}

fn symbol_index(data: &SharedBytes) -> SymbolIndex {
    use object::elf::{FileHeader32, FileHeader64};
    use object::{Endianness, FileKind};
    match FileKind::parse(&**data) {
        Ok(FileKind::Elf32) => elf_symbol_index::<FileHeader32<Endianness>>(data),
        Ok(FileKind::Elf64) => elf_symbol_index::<FileHeader64<Endianness>>(data),
        _ => SymbolIndex::default(),
    }
}

fn elf_symbol_index<Elf: object::read::elf::FileHeader<Endian = object::Endianness>>(
    data: &SharedBytes,
) -> SymbolIndex {
    use object::elf::{
        EM_AARCH64, EM_ARM, EM_RISCV, SHN_XINDEX, STB_LOCAL, STB_WEAK, STT_FUNC, STT_GNU_IFUNC,
        STT_NOTYPE,
    };
    use object::read::elf::{ElfFile, ProgramHeader, SectionHeader, Sym};
    let Ok(file) = ElfFile::<Elf>::parse(&**data) else {
        return SymbolIndex::default();
    };
    let endian = file.endian();
    let table = match file.elf_symbol_table() {
        t if !t.is_empty() => t,
        _ => file.elf_dynamic_symbol_table(),
    };
    let range = |index| {
        let header = file.elf_section_table().section(index).ok()?;
        let (offset, size) = header.file_range(endian)?;
        let start = usize::try_from(offset).ok()?;
        Some(start..start.checked_add(usize::try_from(size).ok()?)?)
    };
    let (Some(table_range), Some(strings)) =
        (range(table.section()), range(table.string_section()))
    else {
        return SymbolIndex::default();
    };
    if strings.end > data.len() {
        return SymbolIndex::default();
    }
    let bytes: &[u8] = data;
    // Offsets count from the lowest loaded segment (0 for a file without segments).
    let base = file
        .elf_program_headers()
        .iter()
        .filter(|h| h.p_type(endian) == object::elf::PT_LOAD)
        .map(|h| h.p_vaddr(endian).into())
        .min()
        .unwrap_or(0);
    let mut index = SymbolIndex {
        symbols: Symbols::default(),
        base,
        strings,
        names_read: Cell::new(0),
    };
    // ARM's, AArch64's and RISC-V's mapping symbols (`$x`, `$d`, ...) mark code and data in a
    // section, not functions: perf skips them on those machines, and so does this. Elsewhere
    // no name is read here (a Rust library has tens of thousands of untyped local symbols,
    // and reading their names would map in megabytes of its string table).
    let mapping_symbol: Option<fn(&[u8]) -> bool> = match file.elf_header().e_machine(endian) {
        EM_ARM | EM_AARCH64 => Some(|n| {
            matches!(n, [b'$', b'a' | b'd' | b't' | b'x', rest @ ..]
                if rest.first().is_none_or(|&c| c == 0 || c == b'.'))
        }),
        EM_RISCV => Some(|n| matches!(n, [b'$', b'd' | b'x', ..])),
        _ => None,
    };
    // Functions (indirect ones too: perf names glibc's IFUNC resolvers) and untyped symbols
    // defined in a section (not mapping symbols), at a non-zero address.
    let text = |s: &Elf::Sym| {
        let shndx = s.st_shndx(endian);
        (!shndx.is_special() || shndx == SHN_XINDEX)
            && s.st_value(endian).into() != 0
            && match s.st_type() {
                STT_FUNC | STT_GNU_IFUNC => true,
                STT_NOTYPE => mapping_symbol.is_none_or(|is_mapping| {
                    let at = index
                        .strings
                        .start
                        .saturating_add(s.st_name(endian) as usize);
                    !is_mapping(bytes.get(at..).unwrap_or_default())
                }),
                _ => false,
            }
    };
    let entries = table.symbols().get(1..).unwrap_or_default();
    // Room for all (virtual memory: untouched capacity costs nothing), given back below.
    let mut symbols = Vec::with_capacity(entries.len());
    const CHUNK_BYTES: usize = 256 << 10;
    let per_chunk = (CHUNK_BYTES / std::mem::size_of::<Elf::Sym>()).max(1);
    let mut released = table_range.start;
    for chunk in entries.chunks(per_chunk) {
        symbols.extend(chunk.iter().filter(|s| text(s)).filter_map(|s| {
            let binding = match s.st_bind() {
                STB_WEAK => 2,
                STB_LOCAL => 1,
                _ => 0,
            };
            let size = u32::try_from(s.st_size(endian).into()).unwrap_or(u32::MAX);
            // Outside the 4 GiB from the first segment: no code of this file.
            let offset = u32::try_from(s.st_value(endian).into().checked_sub(base)?).ok()?;
            Some(Symbol {
                offset,
                name: s.st_name(endian),
                size_binding: size.min((1 << Symbol::SIZE_BITS) - 1) | binding << Symbol::SIZE_BITS,
            })
        }));
        // Pages behind are done with: a large library's table is megabytes.
        let done = (chunk.as_ptr_range().end as usize).saturating_sub(bytes.as_ptr() as usize);
        data.release_pages(released..done);
        released = done;
    }
    drop(file);
    // Aliases (several names at one address) are all kept, sorted by address only: their
    // names are read and compared when an address there is named (`Image::symbols_at`), not
    // for every alias of the library.
    symbols.sort_unstable_by_key(|s| s.offset);
    symbols.shrink_to_fit();
    // From now on only the names of symbols hit are read.
    data.release_pages(table_range);
    data.release_pages(index.strings.clone());
    index.symbols = Symbols::Built(symbols);
    index
}

/// `foo` for GCC's clones `foo.cold`, `foo.constprop.0`, `foo.isra.0`, `foo.part.0`.
fn strip_clone_suffix(name: &str) -> &str {
    [".cold", ".constprop.", ".isra.", ".part.", ".lto_priv."]
        .iter()
        .filter_map(|suffix| name.find(suffix))
        .min()
        .map_or(name, |i| &name[..i])
}

/// Whether an entry of unwind section `section` (searched from its start, as framehop
/// searches a section without an index) overlaps `range`; `None` when it has no entry.
fn section_overlaps<'a, S>(
    section: &S,
    bases: &gimli::BaseAddresses,
    range: Range<u64>,
) -> Option<bool>
where
    S: gimli::UnwindSection<gimli::EndianSlice<'a, gimli::LittleEndian>>,
{
    let mut entries = section.entries(bases);
    let mut any = false;
    while let Ok(Some(entry)) = entries.next() {
        if let gimli::CieOrFde::Fde(partial) = entry {
            any = true;
            if partial
                .parse(S::cie_from_offset)
                .is_ok_and(|fde| fde_overlaps(&fde, &range))
            {
                return Some(true);
            }
        }
    }
    any.then_some(false)
}

/// Whether the addresses `fde` covers overlap `range`.
fn fde_overlaps<R: gimli::Reader>(
    fde: &gimli::FrameDescriptionEntry<R>,
    range: &Range<u64>,
) -> bool {
    let start = fde.initial_address();
    start < range.end && start.saturating_add(fde.len()) > range.start
}

/// Hands framehop the unwind sections of an image.
struct UnwindSections<'a> {
    image: &'a Image,
}

impl ModuleSectionInfo<SharedBytes> for UnwindSections<'_> {
    fn base_svma(&self) -> u64 {
        0
    }
    fn section_svma_range(&mut self, name: &[u8]) -> Option<Range<u64>> {
        self.image.section(name).map(|(svma, _)| svma)
    }
    fn section_data(&mut self, name: &[u8]) -> Option<SharedBytes> {
        self.image.section(name).map(|(_, bytes)| bytes)
    }
}

impl Image {
    /// The DWARF frames of this file at stated address `svma`, innermost first, as naming
    /// reads them: each frame's raw (mangled) function name, source file and line. This
    /// file's own DWARF only (not a separate debug file's); empty without DWARF.
    pub fn dwarf_frames_at(&self, svma: u64) -> Vec<DwarfFrame> {
        let Some(dwarf) = self.dwarf_names() else {
            return Vec::new();
        };
        dwarf
            .frames(svma)
            .into_iter()
            .filter_map(|frame| {
                let raw_name = frame.function.as_ref()?.raw_name().ok()?.into_owned();
                let location = frame.location.as_ref();
                Some(DwarfFrame {
                    raw_name,
                    file: location.and_then(|l| l.file).map(str::to_string),
                    line: location.and_then(|l| l.line),
                })
            })
            .collect()
    }

    /// Whether this file or its debug file (once found) has DWARF to read lines from.
    pub(crate) fn has_line_info(&self) -> bool {
        self.has_dwarf || self.debug.get().is_some_and(|d| d.is_some())
    }

    /// The source file and line of each DWARF frame at `svma`, innermost first, paired with
    /// the frames [`Image::frames_at_svma`] names (one per frame with a function name);
    /// empty without DWARF. Call it after naming the address: the debug file is the one
    /// naming found.
    pub(crate) fn lines_at_svma(&self, svma: Svma) -> Vec<(Option<String>, Option<u32>)> {
        let debug = if self.has_dwarf {
            None
        } else {
            self.debug.get().and_then(|d| d.as_deref())
        };
        let mut lines = Vec::new();
        let Some(dwarf) = debug.unwrap_or(self).dwarf_names() else {
            return lines;
        };
        for frame in dwarf.frames(svma.0) {
            if frame
                .function
                .as_ref()
                .is_none_or(|f| f.raw_name().is_err())
            {
                continue;
            }
            let location = frame.location.as_ref();
            lines.push((
                location.and_then(|l| l.file).map(str::to_string),
                location.and_then(|l| l.line),
            ));
        }
        lines
    }
}

#[cfg(test)]
mod mapping_symbol_tests {
    use super::*;
    use object::write::{Object as WriteObject, Symbol as WriteSymbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};

    /// An ELF object of `arch` whose `.text` holds `symbols` (name, kind, local), one every
    /// 16 bytes from 0x10; the names the index keeps, in address order.
    fn indexed(arch: Architecture, symbols: &[(&str, SymbolKind, bool)]) -> Vec<String> {
        let mut obj = WriteObject::new(BinaryFormat::Elf, arch, Endianness::Little);
        let text = obj.section_id(object::write::StandardSection::Text);
        obj.append_section_data(text, &[0u8; 0x200], 16);
        for (i, &(name, kind, local)) in symbols.iter().enumerate() {
            obj.add_symbol(WriteSymbol {
                name: name.as_bytes().to_vec(),
                value: 0x10 * (i as u64 + 1),
                size: 0,
                kind,
                scope: if local {
                    SymbolScope::Compilation
                } else {
                    SymbolScope::Dynamic
                },
                weak: false,
                section: SymbolSection::Section(text),
                flags: SymbolFlags::None,
            });
        }
        let data = SharedBytes::owned(obj.write().unwrap());
        let index = elf_symbol_index::<object::elf::FileHeader64<Endianness>>(&data);
        index
            .symbols
            .iter()
            .map(|s| String::from_utf8_lossy(&index.name(s, &data)).into_owned())
            .collect()
    }

    const SYMBOLS: [(&str, SymbolKind, bool); 7] = [
        ("$x", SymbolKind::Label, true),
        ("$d.1", SymbolKind::Label, true),
        ("$t", SymbolKind::Label, true),
        ("$xyz", SymbolKind::Label, true),
        ("label", SymbolKind::Label, true),
        ("func", SymbolKind::Text, false),
        ("$d", SymbolKind::Text, false),
    ];

    /// perf skips ARM's and AArch64's mapping symbols (`$a`, `$d`, `$t`, `$x`, alone or
    /// followed by a dot) and RISC-V's (`$d`, `$x` and whatever follows) among untyped
    /// symbols, and nothing on other machines.
    #[test]
    fn mapping_symbols_skipped_where_perf_skips_them() {
        assert_eq!(
            indexed(Architecture::Aarch64, &SYMBOLS),
            ["$xyz", "label", "func", "$d"]
        );
        assert_eq!(
            indexed(Architecture::Riscv64, &SYMBOLS),
            ["$t", "label", "func", "$d"]
        );
        assert_eq!(
            indexed(Architecture::X86_64, &SYMBOLS),
            ["$x", "$d.1", "$t", "$xyz", "label", "func", "$d"]
        );
    }
}
