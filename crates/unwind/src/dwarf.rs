//! An image's DWARF, parsed one compile unit at a time as addresses in it are named.
//!
//! `addr2line::Context::from_dwarf` parses every unit's header and abbreviations up front
//! (gimli-rs/addr2line#320): for a distribution's libc (2000 units) that is tens of
//! milliseconds and tens of MiB, paid whenever one sample lands in it. Here `.debug_aranges`
//! says which unit covers an address, and addr2line works on that unit alone: a context
//! over a `.debug_info` that holds only the unit. Everything it names comes from addr2line,
//! as before. Where the shortcut cannot give the same answer (no aranges, or units without
//! them; an address several units' aranges cover; a unit that refers to others by
//! `.debug_info` offset; an error) the whole-file context names the address, built on
//! first need.
//!
//! Compressed sections (distributions compress their debug files) are decompressed once per
//! debug file and kept, decompressed, in a cache on disk (see [`DwarfCache`]): the run that
//! decompresses them writes the entry and then reads from it as later runs do, and only the
//! pages of the units named are read into memory, instead of holding megabytes of
//! decompressed sections on the heap for the whole run.

use std::cell::{Cell, OnceCell};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use gimli::Reader as _;
use object::{Object, ObjectSection};

use crate::sections::{section_bytes, Reader};
use crate::shared::SharedBytes;
use crate::source::Source;

/// Sections naming reads. Location lists, macros and the rest can be large (and are often
/// compressed in distribution debug files), and decompressing them would be wasted.
const NEEDED: [gimli::SectionId; 10] = [
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugAranges,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
];

/// Marks an address range that more than one unit's aranges cover.
const AMBIGUOUS: u32 = u32::MAX;

/// One compile unit that `.debug_aranges` names.
struct Unit {
    /// Its offset in `.debug_info`.
    offset: usize,
    /// Its sets in `.debug_aranges` (byte ranges), as indices into [`DwarfNames::sets`].
    sets: Range<usize>,
    /// addr2line over this unit alone; `None` when it cannot be used for this unit.
    context: OnceCell<Option<Box<addr2line::Context<Reader>>>>,
    /// The unit's own context failed on an address: the whole file names its addresses.
    needs_whole: Cell<bool>,
}

/// The DWARF of one file: its sections, which unit covers which addresses, and the
/// addr2line contexts built so far.
pub(crate) struct DwarfNames {
    endian: gimli::RunTimeEndian,
    sections: Vec<(gimli::SectionId, SharedBytes)>,
    /// Disjoint address ranges sorted by start, with the index of the unit covering them
    /// (or [`AMBIGUOUS`]). Empty when the aranges cannot be trusted.
    ranges: Vec<(u64, u64, u32)>,
    /// Every compile unit has a set in `.debug_aranges`: an address that none covers is in
    /// no unit (see [`DwarfNames::frames`]).
    complete: bool,
    units: Vec<Unit>,
    /// Byte ranges of aranges sets in `.debug_aranges`, grouped by unit.
    sets: Vec<Range<usize>>,
    /// addr2line over the whole file, for everything the units cannot name.
    whole: OnceCell<Option<addr2line::Context<Reader>>>,
    /// The cache entry the compressed sections are mapped from, if they are.
    cache_map: Option<SharedBytes>,
    /// This load decompressed the sections and wrote the cache entry (else it found it, or
    /// there is no cache). Read by the tests.
    #[cfg_attr(not(test), allow(dead_code))]
    entry_written: bool,
    /// Addresses named since the cache entry's pages were last released.
    frames_named: Cell<u32>,
}

/// Addresses named between releases of a mapped cache entry's pages: each unit named reads
/// the pages around its bytes, its abbreviations and its line program.
const FRAMES_BETWEEN_RELEASES: u32 = 4;

impl DwarfNames {
    /// Reads (decompressing if needed) the sections naming needs from the ELF file `data`
    /// and indexes its aranges. `None` when the file cannot be parsed. Compressed sections
    /// come from `cache` when it holds them, and are put there when it does not.
    pub(crate) fn load(
        data: &SharedBytes,
        little_endian: bool,
        cache: Option<&DwarfCache>,
    ) -> Option<DwarfNames> {
        let file = object::File::parse(&**data).ok()?;
        let endian = if little_endian {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let present: Vec<(gimli::SectionId, object::Section<'_, '_>)> = NEEDED
            .iter()
            .filter_map(|&id| {
                let section = file.section_by_name(id.name())?;
                (section.kind() != object::SectionKind::UninitializedData).then_some((id, section))
            })
            .collect();
        // What the compressed sections are in this file: a cache entry must say the same.
        let compressed: Vec<CachedSection> = present
            .iter()
            .filter_map(|(id, section)| {
                let range = section.compressed_file_range().ok()?;
                (range.format != object::CompressionFormat::None).then_some(CachedSection {
                    id: *id,
                    file_offset: range.offset,
                    compressed_size: range.compressed_size,
                    size: range.uncompressed_size,
                })
            })
            .collect();
        let cache = cache.filter(|_| !compressed.is_empty());
        let mut cached = cache.and_then(|c| c.read(data.len(), &compressed));
        let mut entry_written = false;
        let mut decompressed = Vec::new();
        let mut sections: Vec<(gimli::SectionId, SharedBytes)> = present
            .iter()
            .filter_map(|(id, section)| {
                if let Some((map, ranges)) = &cached {
                    if let Some(i) = compressed.iter().position(|c| c.id == *id) {
                        let mut bytes = map.clone();
                        bytes.narrow(ranges[i].clone());
                        return Some((*id, bytes));
                    }
                }
                let bytes = section_bytes(data, section)?;
                // The compressed bytes of a mapped file are read once: their pages need not
                // stay in this process's memory next to the decompressed copy.
                if let Some(c) = compressed.iter().find(|c| c.id == *id) {
                    let start = usize::try_from(c.file_offset).unwrap_or(usize::MAX);
                    let len = usize::try_from(c.compressed_size).unwrap_or(0);
                    data.release_pages(start..start.saturating_add(len));
                    decompressed.push((c.clone(), bytes.clone()));
                }
                Some((*id, bytes))
            })
            .collect();
        if let (Some(cache), None) = (cache, &cached) {
            if decompressed.len() == compressed.len() {
                cache.write(data.len(), &decompressed);
                // Served from the entry just written from now on, like any later run: the
                // decompressed copies leave the heap.
                cached = cache.read(data.len(), &compressed);
                entry_written = cached.is_some();
                if let Some((map, ranges)) = &cached {
                    for (id, bytes) in &mut sections {
                        if let Some(i) = compressed.iter().position(|c| c.id == *id) {
                            *bytes = map.clone();
                            bytes.narrow(ranges[i].clone());
                        }
                    }
                }
            }
        }
        drop(decompressed);
        let mut names = DwarfNames {
            endian,
            sections,
            ranges: Vec::new(),
            complete: false,
            units: Vec::new(),
            sets: Vec::new(),
            whole: OnceCell::new(),
            cache_map: cached.map(|(map, _)| map),
            entry_written,
            frames_named: Cell::new(0),
        };
        // Without a usable index every address goes to the whole-file context, as before.
        let _ = names.index();
        // The index read every unit's header: from now on only the units named are read.
        names.release_cache_pages();
        Some(names)
    }

    /// Drops the pages of the mapped cache entry from this process's memory (they fault back
    /// in as they are read).
    fn release_cache_pages(&self) {
        if let Some(map) = &self.cache_map {
            map.release_pages(0..map.len());
        }
    }

    /// The frames at `probe` as addr2line's `find_frames` over the whole file gives them
    /// (innermost first), up to its first error.
    ///
    /// Where every compile unit has aranges, they are taken to say all there is: an address
    /// no set covers is in no unit (PLT stubs, start-up code), and one that a unit's own
    /// context finds nothing at is in no other. That holds where a unit's own ranges
    /// (`DW_AT_ranges`, `DW_AT_low_pc`/`DW_AT_high_pc`) and its aranges are the same, as
    /// GCC writes them; the tests check it against the whole-file context for libc.
    pub(crate) fn frames(&self, probe: u64) -> Vec<addr2line::Frame<'_, Reader>> {
        if self.cache_map.is_some() {
            let named = self.frames_named.get() + 1;
            if named >= FRAMES_BETWEEN_RELEASES {
                self.release_cache_pages();
                self.frames_named.set(0);
            } else {
                self.frames_named.set(named);
            }
        }
        match self.unit_at(probe) {
            Some(unit) => {
                if let Some(ctx) = self.unit_context(unit) {
                    match all_frames(ctx, probe) {
                        Ok(frames) if !frames.is_empty() || self.complete => return frames,
                        // addr2line would have gone on to another unit covering the address.
                        Ok(_) => {}
                        Err(_) => unit.needs_whole.set(true),
                    }
                }
            }
            None if self.complete && !self.ambiguous(probe) => return Vec::new(),
            None => {}
        }
        let mut frames = Vec::new();
        let Some(ctx) = self.whole_context() else {
            return frames;
        };
        if let Ok(mut iter) = ctx.find_frames(probe).skip_all_loads() {
            while let Ok(Some(frame)) = iter.next() {
                frames.push(frame);
            }
        }
        frames
    }

    fn section(&self, id: gimli::SectionId) -> SharedBytes {
        self.sections
            .iter()
            .find(|(s, _)| *s == id)
            .map(|(_, bytes)| bytes.clone())
            .unwrap_or_else(|| SharedBytes::owned(Vec::new()))
    }

    fn reader(&self, bytes: SharedBytes) -> Reader {
        gimli::EndianReader::new(bytes, self.endian)
    }

    /// The file's sections as gimli reads them, `.debug_info` and `.debug_aranges`
    /// replaced when given.
    fn dwarf(
        &self,
        info: Option<SharedBytes>,
        aranges: Option<SharedBytes>,
    ) -> gimli::Dwarf<Reader> {
        let load = |id: gimli::SectionId| -> Result<Reader, std::convert::Infallible> {
            let bytes = match id {
                gimli::SectionId::DebugInfo if info.is_some() => info.clone(),
                gimli::SectionId::DebugAranges if aranges.is_some() => aranges.clone(),
                _ => None,
            };
            Ok(self.reader(bytes.unwrap_or_else(|| self.section(id))))
        };
        match gimli::Dwarf::load(load) {
            Ok(dwarf) => dwarf,
            Err(never) => match never {},
        }
    }

    /// Builds `units`, `sets` and `ranges` from `.debug_aranges`. Errors leave them empty,
    /// so that the whole-file context names everything (and fails where it fails).
    fn index(&mut self) -> gimli::Result<()> {
        // The compile units, as addr2line sees them: a set naming anything else is one
        // addr2line ignores, and so are its addresses here.
        let info_bytes = self.section(gimli::SectionId::DebugInfo);
        let info = gimli::DebugInfo::from(self.reader(info_bytes.clone()));
        let mut compile_units = Vec::new();
        let mut headers = info.units();
        let mut released = 0;
        while let Some(header) = headers.next()? {
            let Some(offset) = header.debug_info_offset() else {
                continue;
            };
            // A mapped section's pages released behind the walk, which reads every unit's
            // header (megabytes, next to the other files read at startup).
            if offset.0 >= released + (256 << 10) {
                info_bytes.release_pages(released..offset.0);
                released = offset.0;
            }
            match header.type_() {
                gimli::UnitType::Type { .. }
                | gimli::UnitType::SplitType { .. }
                | gimli::UnitType::Partial => {}
                _ => compile_units.push(offset.0),
            }
        }
        let aranges_bytes = self.section(gimli::SectionId::DebugAranges);
        let aranges = gimli::DebugAranges::from(self.reader(aranges_bytes.clone()));
        let mut sets = Vec::new();
        let mut entries = Vec::new();
        let mut headers = aranges.headers();
        while let Some(header) = headers.next()? {
            let unit = header.debug_info_offset().0;
            if compile_units.binary_search(&unit).is_err() {
                continue;
            }
            let start = header.offset().0;
            // A set's extent: its initial length field, then that many bytes.
            let end = start
                + usize::from(header.encoding().format.initial_length_size())
                + header.length();
            if end > aranges_bytes.len() {
                return Ok(());
            }
            sets.push((unit, start..end));
            let mut iter = header.entries();
            // Entries in error are skipped, as addr2line does (the iterator stops at errors
            // it cannot skip).
            while let Some(entry) = iter.next().transpose() {
                let Ok(entry) = entry else { continue };
                let range = entry.range();
                if entry.length() != 0 && range.begin < range.end {
                    entries.push((range.begin, range.end, unit));
                }
            }
        }
        sets.sort_by_key(|(unit, set)| (*unit, set.start));
        let mut units: Vec<Unit> = Vec::new();
        for (i, (unit, _)) in sets.iter().enumerate() {
            match units.last_mut() {
                Some(last) if last.offset == *unit => last.sets.end = i + 1,
                _ => units.push(Unit {
                    offset: *unit,
                    sets: i..i + 1,
                    context: OnceCell::new(),
                    needs_whole: Cell::new(false),
                }),
            }
        }
        if u32::try_from(units.len()).is_err() {
            return Ok(());
        }
        let mut ranges: Vec<(u64, u64, u32)> = Vec::with_capacity(entries.len());
        entries.sort_unstable();
        for (begin, end, unit) in entries {
            let index = units.partition_point(|u| u.offset < unit) as u32;
            match ranges.last_mut() {
                Some(last) if begin < last.1 => {
                    if last.2 != index {
                        last.2 = AMBIGUOUS;
                    }
                    last.1 = last.1.max(end);
                }
                _ => ranges.push((begin, end, index)),
            }
        }
        self.complete = compile_units.len() == units.len();
        self.sets = sets.into_iter().map(|(_, set)| set).collect();
        self.units = units;
        self.ranges = ranges;
        Ok(())
    }

    /// The unit whose aranges alone cover `probe`.
    fn unit_at(&self, probe: u64) -> Option<&Unit> {
        let (_, end, unit) = self.range_at(probe)?;
        (probe < end && unit != AMBIGUOUS).then(|| &self.units[unit as usize])
    }

    /// Whether the aranges of more than one unit cover `probe`.
    fn ambiguous(&self, probe: u64) -> bool {
        self.range_at(probe)
            .is_some_and(|(_, end, unit)| probe < end && unit == AMBIGUOUS)
    }

    /// The last range starting at or before `probe`.
    fn range_at(&self, probe: u64) -> Option<(u64, u64, u32)> {
        let i = self
            .ranges
            .partition_point(|r| r.0 <= probe)
            .checked_sub(1)?;
        Some(self.ranges[i])
    }

    fn unit_context<'a>(&self, unit: &'a Unit) -> Option<&'a addr2line::Context<Reader>> {
        if unit.needs_whole.get() {
            return None;
        }
        unit.context
            .get_or_init(|| self.build_unit_context(unit).map(Box::new))
            .as_deref()
    }

    /// addr2line over `unit` alone: a `.debug_info` holding just the unit (so at offset 0;
    /// no bytes are copied) and a `.debug_aranges` holding just its sets, pointed at offset 0.
    /// Moving the unit is sound only if nothing in it is an offset into `.debug_info`: the
    /// forms that can hold one (DW_FORM_ref_addr, and DW_FORM_indirect which can name it)
    /// must be absent from its abbreviations. Offsets into the other sections stay valid.
    fn build_unit_context(&self, unit: &Unit) -> Option<addr2line::Context<Reader>> {
        let info_bytes = self.section(gimli::SectionId::DebugInfo);
        let info = gimli::DebugInfo::from(self.reader(info_bytes.clone()));
        let header = info
            .header_from_offset(gimli::DebugInfoOffset(unit.offset))
            .ok()?;
        let abbrev = self.section(gimli::SectionId::DebugAbbrev);
        let abbrev_offset = header.debug_abbrev_offset().0;
        if abbrev_offset > abbrev.len()
            || !offset_free(self.reader(abbrev), abbrev_offset).unwrap_or(false)
        {
            return None;
        }
        let end = unit.offset.checked_add(header.length_including_self())?;
        if end > info_bytes.len() {
            return None;
        }
        let mut unit_bytes = info_bytes;
        unit_bytes.narrow(unit.offset..end);
        let aranges = self.section(gimli::SectionId::DebugAranges);
        let mut sets = Vec::new();
        for set in &self.sets[unit.sets.clone()] {
            let mut bytes = aranges[set.clone()].to_vec();
            // The set's debug_info_offset field follows its initial length and version;
            // zero reads the same in either byte order.
            let field = if bytes[..4] == [0xff; 4] {
                14..22
            } else {
                6..10
            };
            bytes.get_mut(field)?.fill(0);
            sets.extend_from_slice(&bytes);
        }
        let dwarf = self.dwarf(Some(unit_bytes), Some(SharedBytes::owned(sets)));
        addr2line::Context::from_dwarf(dwarf).ok()
    }

    fn whole_context(&self) -> Option<&addr2line::Context<Reader>> {
        self.whole
            .get_or_init(|| addr2line::Context::from_dwarf(self.dwarf(None, None)).ok())
            .as_ref()
    }
}

/// All frames at `probe`, or the first error.
fn all_frames(
    ctx: &addr2line::Context<Reader>,
    probe: u64,
) -> Result<Vec<addr2line::Frame<'_, Reader>>, gimli::Error> {
    let mut iter = ctx.find_frames(probe).skip_all_loads()?;
    let mut frames = Vec::new();
    while let Some(frame) = iter.next()? {
        frames.push(frame);
    }
    Ok(frames)
}

/// Whether the abbreviation table at `offset` of `.debug_abbrev` uses no form that holds
/// (or may hold) an offset into `.debug_info`.
fn offset_free(mut abbrev: Reader, offset: usize) -> gimli::Result<bool> {
    abbrev.skip(offset)?;
    while abbrev.read_uleb128()? != 0 {
        abbrev.read_uleb128()?; // tag
        abbrev.read_u8()?; // children
        loop {
            let name = abbrev.read_uleb128()?;
            let form = gimli::DwForm(abbrev.read_uleb128_u16()?);
            if name == 0 && form.0 == 0 {
                break;
            }
            if form == gimli::DW_FORM_implicit_const {
                abbrev.read_sleb128()?;
            }
            if form == gimli::DW_FORM_ref_addr || form == gimli::DW_FORM_indirect {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// A compressed section as the debug file has it: what a cache entry was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CachedSection {
    id: gimli::SectionId,
    file_offset: u64,
    compressed_size: u64,
    size: u64,
}

/// Decompressed debug sections kept on disk between runs, one file per debug file, named by
/// its build id and size: `DIR/dwarf/BUILDID-SIZE.v2`. An entry holds a header (magic, then
/// for each section: its id, the debug file's offset, compressed and decompressed sizes of
/// it, where its bytes lie in the entry and their CRC-32) and the sections' bytes. An entry is
/// used only when every compressed section of the debug file is in it as the file has it and
/// its bytes check; anything else (absent, short, another layout, other bytes) is decompressed
/// again and the entry written anew. Entries are written to a temporary file and renamed, so
/// that a reader sees a whole one or none.
/// Entries are read and written through the resolver's [`Source`].
#[derive(Clone)]
pub(crate) struct DwarfCache {
    pub dir: PathBuf,
    pub build_id: Vec<u8>,
    pub source: Arc<dyn Source>,
}

const CACHE_MAGIC: &[u8; 8] = b"CPIFDWF2";
/// Per section: id index, file offset, compressed size, size, entry offset, CRC-32 of its
/// bytes (each a little-endian u64).
const CACHE_ENTRY: usize = 48;

impl DwarfCache {
    fn path(&self, file_len: usize) -> PathBuf {
        let id: String = self.build_id.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join("dwarf").join(format!("{id}-{file_len}.v2"))
    }

    /// The entry for a debug file of `file_len` bytes with the `compressed` sections, mapped,
    /// with each section's byte range in it; `None` unless it is whole and matches.
    fn read(
        &self,
        file_len: usize,
        compressed: &[CachedSection],
    ) -> Option<(SharedBytes, Vec<Range<usize>>)> {
        let map = self.source.cached(&self.path(file_len))?;
        let header_len = 16 + compressed.len() * CACHE_ENTRY;
        let header = map.get(..header_len)?;
        let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
        if &header[..8] != CACHE_MAGIC || u64_at(8) != compressed.len() as u64 {
            return None;
        }
        let mut ranges = Vec::with_capacity(compressed.len());
        for (i, want) in compressed.iter().enumerate() {
            let at = 16 + i * CACHE_ENTRY;
            let id = NEEDED.iter().position(|&id| id == want.id)? as u64;
            let entry = (u64_at(at), u64_at(at + 8), u64_at(at + 16), u64_at(at + 24));
            if entry != (id, want.file_offset, want.compressed_size, want.size) {
                return None;
            }
            let start = usize::try_from(u64_at(at + 32)).ok()?;
            let end = start.checked_add(usize::try_from(want.size).ok()?)?;
            // Entries are not synced to disk when written (a cache): one that a crash left
            // with other bytes than were written is told by its checksums.
            if start < header_len
                || end > map.len()
                || checksum(&map, start..end) != u64_at(at + 40)
            {
                return None;
            }
            ranges.push(start..end);
        }
        // Checked: only the pages of the units named are read again.
        map.release_pages(0..map.len());
        Some((map, ranges))
    }

    /// Writes the entry for a debug file of `file_len` bytes whose compressed sections
    /// decompressed to `sections`. Failures are ignored: the cache only saves work.
    fn write(&self, file_len: usize, sections: &[(CachedSection, SharedBytes)]) {
        let _ = self
            .source
            .keep_cached(&self.path(file_len), &mut |out| write_entry(out, sections));
    }
}

/// CRC-32 of `range` of a mapped entry, a mebibyte at a time with the pages released behind:
/// the whole entry is read at startup, next to the other files being indexed then.
fn checksum(map: &SharedBytes, range: Range<usize>) -> u64 {
    let mut hasher = crc32fast::Hasher::new();
    let mut at = range.start;
    while at < range.end {
        let end = range.end.min(at + (256 << 10));
        hasher.update(&map[at..end]);
        map.release_pages(at..end);
        at = end;
    }
    u64::from(hasher.finalize())
}

fn write_entry(
    out: &mut dyn std::io::Write,
    sections: &[(CachedSection, SharedBytes)],
) -> std::io::Result<()> {
    let mut header = Vec::with_capacity(16 + sections.len() * CACHE_ENTRY);
    header.extend_from_slice(CACHE_MAGIC);
    header.extend_from_slice(&(sections.len() as u64).to_le_bytes());
    let mut offset = (16 + sections.len() * CACHE_ENTRY) as u64;
    for (section, bytes) in sections {
        let id = NEEDED.iter().position(|&id| id == section.id).unwrap_or(0) as u64;
        for field in [
            id,
            section.file_offset,
            section.compressed_size,
            section.size,
            offset,
            u64::from(crc32fast::hash(bytes)),
        ] {
            header.extend_from_slice(&field.to_le_bytes());
        }
        offset += bytes.len() as u64;
    }
    out.write_all(&header)?;
    for (section, bytes) in sections {
        if bytes.len() as u64 != section.size {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        out.write_all(bytes)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::ObjectSymbol;

    fn abbrev_reader(bytes: &[u8]) -> Reader {
        gimli::EndianReader::new(
            SharedBytes::owned(bytes.to_vec()),
            gimli::RunTimeEndian::Little,
        )
    }

    /// Abbreviation tables written by hand: a unit whose DIEs may hold a `.debug_info`
    /// offset is told apart from one whose DIEs cannot.
    #[test]
    fn offsets_into_debug_info_found_in_abbreviations() {
        // Code 1: DW_TAG_compile_unit with children, DW_AT_name as DW_FORM_strp and
        // DW_AT_language as DW_FORM_implicit_const (followed by its value, -1 as SLEB128).
        let unit = [1, 0x11, 1, 0x03, 0x0e, 0x13, 0x21, 0x7f, 0, 0];
        // Code 2: DW_TAG_subprogram, DW_AT_abstract_origin as DW_FORM_ref_addr.
        let by_offset = [2, 0x2e, 0, 0x31, 0x10, 0, 0];
        // Code 2: the same as DW_FORM_ref4 (unit-relative); code 3: DW_FORM_indirect.
        let by_unit = [2, 0x2e, 0, 0x31, 0x13, 0, 0];
        let indirect = [3, 0x2e, 0, 0x31, 0x16, 0, 0];
        let table = |parts: &[&[u8]]| [parts.concat(), vec![0]].concat();
        let free = |bytes: Vec<u8>, at| offset_free(abbrev_reader(&bytes), at);
        assert!(free(table(&[&unit, &by_unit]), 0).unwrap());
        assert!(!free(table(&[&unit, &by_offset]), 0).unwrap());
        assert!(!free(table(&[&unit, &by_unit, &indirect]), 0).unwrap());
        // At an offset, after another unit's table that uses DW_FORM_ref_addr.
        let two = [table(&[&unit, &by_offset]), table(&[&unit, &by_unit])].concat();
        assert!(free(two.clone(), two.len() / 2).unwrap());
        // A table cut short is an error (the whole-file context names that unit).
        assert!(free(table(&[&unit, &by_unit])[..8].to_vec(), 0).is_err());
    }

    /// The path and bytes of the debug file of the libc this test process runs on (reported
    /// as unavailable when there is none).
    fn libc_debug_file() -> Option<(String, Vec<u8>)> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let Some(libc) = cpiflame_perf_data::host::parse_maps(&maps)
            .map(|m| m.path)
            .find(|p| {
                p.rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with("libc.so"))
            })
        else {
            cpiflame_testkit::unavailable("no libc.so mapped into the test process");
            return None;
        };
        let image = crate::Image::open(std::path::Path::new(libc)).unwrap();
        let hex: String = image
            .build_id
            .unwrap_or_default()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let path = format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
        match std::fs::read(&path) {
            Ok(bytes) => Some((path, bytes)),
            Err(_) => {
                cpiflame_testkit::unavailable(format!("{path} absent (Debian: libc6-dbg)"));
                None
            }
        }
    }

    /// Every frame at `probe` as the test compares them: name, whether inlined (by order),
    /// and file:line:column.
    fn described(names: &DwarfNames, probe: u64) -> Vec<String> {
        names
            .frames(probe)
            .iter()
            .map(|f| {
                let name = f
                    .function
                    .as_ref()
                    .and_then(|f| f.raw_name().ok())
                    .map(|n| n.to_string());
                let at = f
                    .location
                    .as_ref()
                    .map(|l| (l.file.map(str::to_string), l.line, l.column));
                format!("{name:?} {at:?}")
            })
            .collect()
    }

    /// The system libc's compressed debug sections through the cache: a first load writes
    /// the entry, a second maps it, and both name every function of libc, at its start and
    /// inside it (inlined frames, lines), as decompressing in memory does. An entry with
    /// other bytes than it was written with, or cut short, is not used, and is written anew.
    #[test]
    fn libc_named_through_the_cache_as_without() {
        let Some((path, bytes)) = libc_debug_file() else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("cpiflame-dwarf-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = object::File::parse(&*bytes).unwrap();
        let cache = DwarfCache {
            dir: dir.clone(),
            build_id: file.build_id().unwrap().unwrap().to_vec(),
            source: crate::source::HostSource::shared(),
        };
        let mapped = || {
            // SAFETY: a system file that nothing writes during the test.
            let data = unsafe { SharedBytes::map_file(std::fs::File::open(&path).unwrap()) };
            DwarfNames::load(&data.unwrap(), true, Some(&cache)).unwrap()
        };
        let plain = DwarfNames::load(&SharedBytes::owned(bytes.clone()), true, None).unwrap();
        // The first load writes the entry and reads from it; the next finds it.
        let cold = mapped();
        assert!(cold.entry_written && cold.cache_map.is_some(), "first load");
        let entry = cache.path(bytes.len());
        assert!(entry.is_file(), "{} written", entry.display());
        let warm = mapped();
        assert!(
            !warm.entry_written && warm.cache_map.is_some(),
            "the entry was not used"
        );
        // Where no entry can be written (the cache directory is a file), the decompressed
        // sections serve.
        let blocked_dir = dir.join("a-file");
        std::fs::write(&blocked_dir, b"").unwrap();
        let blocked_cache = DwarfCache {
            dir: blocked_dir,
            build_id: cache.build_id.clone(),
            source: cache.source.clone(),
        };
        // SAFETY: a system file that nothing writes during the test.
        let data = unsafe { SharedBytes::map_file(std::fs::File::open(&path).unwrap()) };
        let blocked = DwarfNames::load(&data.unwrap(), true, Some(&blocked_cache)).unwrap();
        assert!(!blocked.entry_written && blocked.cache_map.is_none());
        let mut probes = Vec::new();
        for symbol in file.symbols() {
            if symbol.kind() == object::SymbolKind::Text && symbol.size() > 0 {
                let (start, size) = (symbol.address(), symbol.size());
                probes.extend([
                    start,
                    start + size / 3,
                    start + size * 2 / 3,
                    start + size - 1,
                ]);
            }
        }
        let (mut inlined, mut lines) = (0, 0);
        for &probe in &probes {
            let want = described(&plain, probe);
            assert_eq!(described(&cold, probe), want, "{probe:#x} first load");
            assert_eq!(described(&warm, probe), want, "{probe:#x} from the cache");
            assert_eq!(
                described(&blocked, probe),
                want,
                "{probe:#x} without an entry"
            );
            inlined += usize::from(want.len() > 1);
            lines += usize::from(want.iter().any(|f| f.contains("Some(")));
        }
        assert!(probes.len() > 20_000, "{} probes", probes.len());
        assert!(
            inlined > 2_000 && lines > 10_000,
            "{inlined} inlined, {lines} with lines"
        );

        // One byte of a section changed: the checksum refuses it, and a good entry replaces it.
        let mut changed = std::fs::read(&entry).unwrap();
        let last = changed.len() - 1;
        changed[last] ^= 0x55;
        std::fs::write(&entry, &changed).unwrap();
        assert!(mapped().entry_written, "a changed entry was used");
        let again = mapped();
        assert!(
            !again.entry_written && again.cache_map.is_some(),
            "not written anew"
        );
        // Cut short, and a header only.
        let whole = std::fs::read(&entry).unwrap();
        for len in [whole.len() - 1, 16 + 10 * CACHE_ENTRY, 7] {
            std::fs::write(&entry, &whole[..len]).unwrap();
            assert!(mapped().entry_written, "an entry of {len} bytes was used");
            assert_eq!(std::fs::read(&entry).unwrap(), whole, "rewritten whole");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The system libc's debug file: 2000 units, all of them with aranges and none
    /// referring to another by offset, so every function of it, and its PLT, is named
    /// without the whole-file context.
    #[test]
    fn libc_named_without_the_whole_file() {
        let Some((_, bytes)) = libc_debug_file() else {
            return;
        };
        let names = DwarfNames::load(&SharedBytes::owned(bytes.clone()), true, None).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        assert!(names.complete, "every unit has aranges");
        let (mut covered, mut named) = (0, 0);
        for symbol in file.symbols() {
            if symbol.kind() != object::SymbolKind::Text || symbol.size() == 0 {
                continue;
            }
            covered += usize::from(names.unit_at(symbol.address()).is_some());
            named += usize::from(!names.frames(symbol.address()).is_empty());
        }
        // And the PLT, which no unit covers.
        let plt = file.section_by_name(".plt").unwrap();
        for address in plt.address()..plt.address() + plt.size() {
            assert!(names.frames(address).is_empty(), "{address:#x} in the PLT");
        }
        assert!(covered > 5000 && named > 5000, "{named} of {covered} named");
        assert!(
            names.whole.get().is_none(),
            "the whole-file context was built"
        );
        let built = names
            .units
            .iter()
            .filter(|u| u.context.get().is_some())
            .count();
        let own = names
            .units
            .iter()
            .filter(|u| matches!(u.context.get(), Some(Some(_))) && !u.needs_whole.get())
            .count();
        assert_eq!(own, built, "units that needed the whole file");
        assert!(built > 1000, "{built} of {} units used", names.units.len());
    }
}
