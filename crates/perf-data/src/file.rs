//! Opening a perf.data file: header, event attrs with their ids, feature sections.
//!
//! Layout (perf's `tools/perf/Documentation/perf.data-file-format.txt`): a 104-byte header with
//! three sections (attrs, data, event types) and a 256-bit feature bitmap; the feature sections
//! follow the data section, located by a table of (offset, size) pairs right after it.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use memmap2::Mmap;

use crate::abi::{self, sample};
use crate::attr::EventAttr;
use crate::bytes::{u16_at, u32_at, u64_at, Endian};
use crate::error::{ErrorKind, ReadError};
use crate::input::{Input, InputKind};
use crate::meta::Meta;

/// How to find the event id of a record when the file has several events.
#[derive(Clone, Copy, Debug)]
pub(crate) enum IdLayout {
    /// One event: every record belongs to it.
    Single,
    /// All events share one sample_type; ids sit at the same place for all of them.
    Uniform,
    /// Layouts differ; every event has PERF_SAMPLE_IDENTIFIER (first u64 of a sample, last of
    /// a sample_id trailer).
    Identifier,
}

/// An open perf.data file. Records are read lazily from a memory map.
pub struct PerfData {
    pub(crate) path: PathBuf,
    /// Shared with the reader's pager thread (see [`crate::records`]).
    pub(crate) map: Arc<Mmap>,
    pub(crate) endian: Endian,
    pub attrs: Vec<EventAttr>,
    pub meta: Meta,
    /// Byte range of the data section.
    pub(crate) data: Range<u64>,
    /// True when the header said data size 0 and the records were found by reading to the end
    /// of the file (a recorder that was killed before it could finish the file).
    pub data_size_was_zero: bool,
    /// Things the reader worked around; each is one line for the user.
    pub warnings: Vec<String>,
    /// The tracepoints the file's tracing data describes (names and raw record layouts).
    pub trace_events: Vec<crate::TraceEvent>,
    pub(crate) id_to_attr: HashMap<u64, usize>,
    pub(crate) id_layout: IdLayout,
    /// True when the records were read into a stream of their own (pipe mode, compressed
    /// records): offsets of records are in that stream.
    pub(crate) flattened: bool,
}

const ATTR_SIZE_VER0: u64 = 64;

impl PerfData {
    /// Opens and maps `path`, parses the header, the event attrs and the feature sections.
    pub fn open(path: impl AsRef<Path>) -> Result<PerfData, ReadError> {
        Self::from_input(crate::input::open_input(path)?)
    }

    /// Reads a perf.data file from an opened input ([`crate::input::open_input`]: a file,
    /// standard input, decompressed if it was compressed as a whole).
    pub fn from_input(input: Input) -> Result<PerfData, ReadError> {
        let (path, map) = input.into_parts();
        Self::from_map(path, map)
    }

    /// Reads a perf.data file held in memory (a copy of `bytes`); `path` only names it in
    /// errors. This is how the fuzz targets feed the reader.
    pub fn from_bytes(path: impl AsRef<Path>, bytes: &[u8]) -> Result<PerfData, ReadError> {
        Self::from_input(Input::from_bytes(path, bytes)?)
    }

    /// Reads the header, the attrs and the feature sections of the mapped file, in that
    /// order, then indexes the events' ids.
    fn from_map(path: PathBuf, map: Mmap) -> Result<PerfData, ReadError> {
        let check = Bounds {
            path: &path,
            file_len: map.len() as u64,
        };
        let header = match read_header(&map, &check)? {
            Layout::File(header) => header,
            Layout::Pipe(endian) => return Self::from_pipe(path, map, endian),
        };
        let mut warnings = Vec::new();
        let (mut data, data_size_was_zero) = locate_data(&header, &check, &mut warnings)?;
        let mut attrs = read_attrs(&map, &header, &check)?;
        let mut tracepoints = event_types(&map, &header, &check);
        let mut trace_events = Vec::new();
        let meta = if data_size_was_zero {
            // The feature sections are written at the end; a killed recorder wrote none.
            Meta::default()
        } else {
            read_features(
                &map,
                &header,
                data.end,
                &check,
                &mut attrs,
                &mut trace_events,
                &mut warnings,
            )?
        };
        tracepoints.extend(trace_events.iter().map(|e| (e.id, e.full_name())));
        name_tracepoints(&mut attrs, &tracepoints);
        name_hybrid_events(&mut attrs, &meta);
        let has = |bit: u32| header.feature_bits[(bit / 64) as usize] & (1 << (bit % 64)) != 0;
        if has(abi::feature::AUXTRACE) {
            warnings.push(crate::flatten::aux_warning(&path));
        }
        let mut map = map;
        let mut flattened = false;
        // A killed `perf record -z` wrote no feature bits: look for compressed records.
        let killed_compressed =
            data_size_was_zero && has_compressed_records(&map, data.clone(), header.endian);
        if has(abi::feature::COMPRESSED) || meta.compression.is_some() || killed_compressed {
            // `perf record -z`: the records are decompressed into a stream of their own.
            let flat = crate::flatten::flatten(
                &crate::flatten::Source {
                    path: &path,
                    bytes: &map,
                    start: data.start,
                    end: data.end,
                    endian: header.endian,
                    pipe: false,
                    mmap_len: meta.compression.as_ref().map(|c| u64::from(c.mmap_len)),
                    allow_cut: data_size_was_zero,
                },
                &mut Vec::new(),
            )?;
            map = flat.map;
            data = 0..map.len() as u64;
            flattened = true;
        }
        let (id_to_attr, id_layout) = index_ids(&attrs).map_err(|kind| check.error(None, kind))?;
        Ok(PerfData {
            data,
            path,
            map: Arc::new(map),
            endian: header.endian,
            attrs,
            meta,
            data_size_was_zero,
            warnings,
            trace_events,
            id_to_attr,
            id_layout,
            flattened,
        })
    }

    /// Reads a pipe-mode stream: the header records give attrs and features, the rest is
    /// flattened (decompressed where compressed) into a data section of its own.
    fn from_pipe(path: PathBuf, map: Mmap, endian: Endian) -> Result<PerfData, ReadError> {
        let mut warnings = Vec::new();
        // Features arrive as records before the data; the COMPRESSED one, which bounds a
        // chunk's output, is found by a first look at the header records.
        let mmap_len = pipe_mmap_len(&map, endian);
        let flat = crate::flatten::flatten(
            &crate::flatten::Source {
                path: &path,
                bytes: &map,
                start: 16,
                end: map.len() as u64,
                endian,
                pipe: true,
                mmap_len,
                allow_cut: true,
            },
            &mut warnings,
        )?;
        if flat.cut_short {
            warnings.push(format!(
                "{}: the stream ends inside a record (recorder killed?); read up to it",
                path.display()
            ));
        }
        let mut attrs = flat.header.attrs.clone();
        if attrs.is_empty() {
            return Err(ReadError {
                path,
                offset: Some(16),
                kind: ErrorKind::NoAttrs,
                in_record_stream: false,
            });
        }
        let mut sections: Vec<(u32, &[u8])> = flat
            .header
            .features
            .iter()
            .map(|(bit, bytes)| (*bit, &bytes[..]))
            .collect();
        if !flat.header.build_ids.is_empty() {
            sections.push((abi::feature::BUILD_ID, &flat.header.build_ids));
        }
        let meta = match read_meta(&sections, endian, &mut attrs) {
            Ok(meta) => meta,
            Err(e) => {
                warnings.push(format!(
                    "{}: feature records unreadable ({e}); event names and build ids are not available",
                    path.display()
                ));
                Meta::default()
            }
        };
        apply_names(&mut attrs, &flat.header);
        name_hybrid_events(&mut attrs, &meta);
        let (id_to_attr, id_layout) = index_ids(&attrs).map_err(|kind| ReadError {
            path: path.clone(),
            offset: None,
            kind,
            in_record_stream: false,
        })?;
        let map = flat.map;
        Ok(PerfData {
            data: 0..map.len() as u64,
            path,
            map: Arc::new(map),
            endian,
            attrs,
            meta,
            data_size_was_zero: false,
            warnings,
            trace_events: flat.header.trace_events,
            id_to_attr,
            id_layout,
            flattened: true,
        })
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size in bytes of the data section.
    /// File offsets of the data section (of the flattened records for pipe and compressed
    /// files): what record offsets are measured against.
    pub fn data_range(&self) -> Range<u64> {
        self.data.clone()
    }

    pub fn data_size(&self) -> u64 {
        self.data.end - self.data.start
    }

    pub(crate) fn error(&self, offset: Option<u64>, kind: ErrorKind) -> ReadError {
        ReadError {
            path: self.path.clone(),
            offset,
            kind,
            in_record_stream: self.flattened,
        }
    }
}

/// The layout the magic and header size announce.
enum Layout {
    File(Header),
    /// Pipe mode: a 16-byte header, then records.
    Pipe(Endian),
}

/// The COMPRESSED feature's mmap_len from a pipe stream's HEADER_FEATURE records, which
/// come before the data.
fn pipe_mmap_len(map: &[u8], e: Endian) -> Option<u64> {
    let mut pos = 16usize;
    while let (Some(rtype), Some(size)) = (u32_at(map, pos, e), u16_at(map, pos + 6, e)) {
        let size = usize::from(size);
        let rec = map.get(pos..pos.checked_add(size)?)?;
        match rtype {
            abi::record::HEADER_FEATURE
                if u64_at(rec, 8, e) == Some(u64::from(abi::feature::COMPRESSED)) =>
            {
                // struct: version, type, level, ratio, mmap_len (u32 each).
                return u32_at(rec, 16 + 16, e).map(u64::from);
            }
            abi::record::HEADER_TRACING_DATA => {
                let payload = u32_at(rec, 8, e)? as usize;
                pos = pos.checked_add(payload.next_multiple_of(8))?;
            }
            // The data has begun: no feature is still to come.
            t if t < abi::record::USER_TYPE_START
                || t == abi::record::COMPRESSED
                || t == abi::record::COMPRESSED2 =>
            {
                return None
            }
            _ => {}
        }
        if size < 8 {
            return None;
        }
        pos += size;
    }
    None
}

/// True when a record header in `data` is PERF_RECORD_COMPRESSED or COMPRESSED2 (walked
/// header to header; stops at the first that does not fit).
fn has_compressed_records(map: &[u8], data: Range<u64>, e: Endian) -> bool {
    let mut pos = data.start as usize;
    let end = data.end as usize;
    while pos < end {
        let (Some(rtype), Some(size)) = (u32_at(map, pos, e), u16_at(map, pos + 6, e)) else {
            return false;
        };
        if rtype == abi::record::COMPRESSED || rtype == abi::record::COMPRESSED2 {
            return true;
        }
        let mut size = usize::from(size);
        if rtype == abi::record::AUXTRACE {
            let payload = u64_at(map, pos + 8, e).unwrap_or(u64::MAX);
            size = size.saturating_add(usize::try_from(payload).unwrap_or(usize::MAX));
        }
        if size < 8 {
            return false;
        }
        pos = pos.saturating_add(size);
    }
    false
}

/// Names from pipe mode's EVENT_UPDATE and HEADER_EVENT_TYPE records, for events that have
/// none yet.
fn apply_names(attrs: &mut [EventAttr], header: &crate::flatten::PipeHeader) {
    for (id, name) in &header.names {
        if let Some(a) = attrs.iter_mut().find(|a| a.ids.contains(id)) {
            a.name = Some(name.clone());
        }
    }
    name_tracepoints(attrs, &header.event_types);
}

/// The header's event_types section (perf before 3.10 or so; `struct perf_trace_event_type`:
/// u64 event id, 64-byte name): names of tracepoints by config. Entries past the file are
/// ignored: the section only names events.
fn event_types(map: &[u8], header: &Header, check: &Bounds<'_>) -> Vec<(u64, String)> {
    let (offset, size) = header.event_types;
    let Ok(range) = check.section("event types", offset, size) else {
        return Vec::new();
    };
    map[range]
        .chunks_exact(72)
        .filter_map(|e| {
            let id = u64_at(e, 0, header.endian)?;
            let name = std::str::from_utf8(crate::bytes::c_str(&e[8..])).ok()?;
            Some((id, name.to_string()))
        })
        .collect()
}

/// Tracepoints without a name get the one their config has in `types`.
fn name_tracepoints(attrs: &mut [EventAttr], types: &[(u64, String)]) {
    for (config, name) in types {
        for a in attrs.iter_mut() {
            if a.name.is_none() && a.type_ == abi::attr_type::TRACEPOINT && a.config == *config {
                a.name = Some(name.clone());
            }
        }
    }
}

/// Hybrid Intel PMUs: a generic hardware event with the PMU type in config bits 63:32 is
/// named as perf names it, `cpu_core/cycles/`, when the file gives no name (perf's
/// `evsel__hw_name` with the PMU from PMU_MAPPINGS).
fn name_hybrid_events(attrs: &mut [EventAttr], meta: &Meta) {
    for a in attrs.iter_mut() {
        let pmu_type = (a.config >> 32) as u32;
        if a.name.is_some()
            || pmu_type == 0
            || !matches!(a.type_, abi::attr_type::HARDWARE | abi::attr_type::HW_CACHE)
        {
            continue;
        }
        if let Some((_, pmu)) = meta.pmus.iter().find(|(t, _)| *t == pmu_type) {
            let generic = cpiflame_events::default_name(a.type_, a.config);
            a.name = Some(format!("{pmu}/{generic}/"));
        }
    }
}

/// What the file header says (`struct perf_file_header`).
struct Header {
    endian: Endian,
    /// Size of one attr-section entry: a perf_event_attr and the (offset, size) of its ids.
    attr_size: u64,
    /// (offset, size) of the attr section.
    attrs: (u64, u64),
    /// (offset, size) of the data section, as claimed.
    data: (u64, u64),
    /// (offset, size) of the event_types section (old perf).
    event_types: (u64, u64),
    /// The feature bitmap.
    feature_bits: [u64; 4],
}

/// Checks places the file claims against its length, and names the file in errors.
struct Bounds<'a> {
    path: &'a Path,
    file_len: u64,
}

impl Bounds<'_> {
    fn error(&self, offset: Option<u64>, kind: ErrorKind) -> ReadError {
        ReadError {
            path: self.path.to_path_buf(),
            offset,
            kind,
            in_record_stream: false,
        }
    }

    /// The byte range `[offset, offset + size)` of the file, or an error naming `what` lies
    /// outside it.
    fn section(&self, what: &str, offset: u64, size: u64) -> Result<Range<usize>, ReadError> {
        match offset.checked_add(size) {
            Some(end) if end <= self.file_len => Ok(offset as usize..end as usize),
            _ => Err(self.error(
                Some(offset.min(self.file_len)),
                ErrorKind::SectionOutsideFile {
                    what: what.to_string(),
                    offset,
                    size,
                    file_len: self.file_len,
                },
            )),
        }
    }
}

/// Reads the file header: magic (and so byte order), header size, attr size, the attr and
/// data sections and the feature bitmap.
fn read_header(map: &[u8], check: &Bounds<'_>) -> Result<Layout, ReadError> {
    let file_len = check.file_len;
    let truncated = || {
        check.error(
            Some(0),
            ErrorKind::Truncated {
                what: "file header",
                needed: abi::FILE_HEADER_SIZE,
                available: file_len,
            },
        )
    };
    // An empty file is a recording cut short before its header (a recorder killed early).
    if map.is_empty() {
        return Err(truncated());
    }
    // The magic says which kind of perf.data this is (one decision, InputKind's); then the
    // header size: pipe mode has a 16-byte header.
    let endian = match InputKind::from_magic(map) {
        Some(InputKind::PerfData | InputKind::PerfDataPipe) => Endian::Little,
        Some(InputKind::PerfDataBigEndian) => return Err(check.error(None, ErrorKind::BigEndian)),
        Some(InputKind::PerfDataVersion1) => {
            return Err(check.error(Some(0), ErrorKind::VersionOne))
        }
        _ => return Err(check.error(None, crate::input::unrecognised(map))),
    };
    let Some(size_bytes) = map.get(8..16) else {
        return Err(truncated());
    };
    if u64_at(size_bytes, 0, endian) == Some(16) {
        return Ok(Layout::Pipe(endian));
    }
    if file_len < abi::FILE_HEADER_SIZE {
        return Err(truncated());
    }
    let h = |off: usize| u64_at(map, off, endian).unwrap_or(0);
    let attr_size = h(16);
    if !(ATTR_SIZE_VER0 + 16..=4096).contains(&attr_size) {
        return Err(check.error(Some(16), ErrorKind::BadAttrSize(attr_size)));
    }
    let attrs = (h(24), h(32));
    check.section("attrs", attrs.0, attrs.1)?;
    Ok(Layout::File(Header {
        endian,
        attr_size,
        attrs,
        data: (h(40), h(48)),
        event_types: (h(56), h(64)),
        feature_bits: [h(72), h(80), h(88), h(96)],
    }))
}

/// The byte range of the data section, and whether the header said data size 0 (then the
/// records are read to the end of the file, with a warning).
fn locate_data(
    header: &Header,
    check: &Bounds<'_>,
    warnings: &mut Vec<String>,
) -> Result<(Range<u64>, bool), ReadError> {
    let (offset, mut size) = header.data;
    let data_size_was_zero = size == 0 && offset < check.file_len;
    if data_size_was_zero {
        // perf (and cpiflame) write the header first with data size 0 and fix it up at
        // exit; a recorder that was killed leaves it so. The records are still there.
        size = check.file_len - offset;
        warnings.push(format!(
            "{}: header says data size 0 (still being written, or the recorder was killed); reading records to the end of the file",
            check.path.display()
        ));
    }
    let range = check.section("data", offset, size)?;
    Ok((range.start as u64..range.end as u64, data_size_was_zero))
}

/// Reads the attr section: each entry (`attr_size` bytes) is a perf_event_attr followed by
/// the 16-byte (offset, size) of this event's ids.
fn read_attrs(
    map: &[u8],
    header: &Header,
    check: &Bounds<'_>,
) -> Result<Vec<EventAttr>, ReadError> {
    let e = header.endian;
    let entry_size = header.attr_size;
    let event_attr_size = (entry_size - 16) as usize;
    let n_attrs = header.attrs.1 / entry_size;
    if n_attrs == 0 {
        return Err(check.error(Some(24), ErrorKind::NoAttrs));
    }
    let mut attrs = Vec::with_capacity(n_attrs as usize);
    for i in 0..n_attrs {
        // Inside the attr section, which was checked against the file.
        let entry = &map[check.section("attrs", header.attrs.0 + i * entry_size, entry_size)?];
        let mut attr = EventAttr::decode(&entry[..event_attr_size], e);
        let ids_offset = u64_at(entry, event_attr_size, e).unwrap_or(0);
        let ids_size = u64_at(entry, event_attr_size + 8, e).unwrap_or(0);
        let ids = &map[check.section(&format!("ids of event {i}"), ids_offset, ids_size)?];
        attr.ids = ids
            .chunks_exact(8)
            .filter_map(|c| u64_at(c, 0, e))
            .collect();
        attrs.push(attr);
    }
    Ok(attrs)
}

/// Reads the feature sections, located by the table right after the data, and names the
/// events from EVENT_DESC. Unreadable sections are a warning, not an error: samples can be
/// read without them.
fn read_features(
    map: &[u8],
    header: &Header,
    data_end: u64,
    check: &Bounds<'_>,
    attrs: &mut [EventAttr],
    trace_events: &mut Vec<crate::TraceEvent>,
    warnings: &mut Vec<String>,
) -> Result<Meta, ReadError> {
    let bits = header.feature_bits;
    let n_features: u64 = bits.iter().map(|w| w.count_ones() as u64).sum();
    let table = &map[check.section("feature table", data_end, n_features * 16)?];
    // The table lists the sections of the set bits, lowest bit first.
    let set_bits = (0..256u32).filter(|&b| bits[(b / 64) as usize] & (1 << (b % 64)) != 0);
    let mut sections = Vec::new();
    for (k, bit) in set_bits.enumerate() {
        let off = u64_at(table, k * 16, header.endian).unwrap_or(0);
        let size = u64_at(table, k * 16 + 8, header.endian).unwrap_or(0);
        let range = check.section(&format!("feature {k}"), off, size)?;
        if bit == abi::feature::TRACING_DATA {
            // Names for tracepoints that have none elsewhere, as perf names them.
            trace_events.extend(crate::tracing::tracepoint_events(
                &map[range.clone()],
                off,
                check.path,
                warnings,
            ));
        }
        sections.push((bit, &map[range]));
    }
    match read_meta(&sections, header.endian, attrs) {
        Ok(meta) => Ok(meta),
        Err(e) => {
            warnings.push(format!(
                "{}: feature sections unreadable ({e}); event names and build ids are not available",
                check.path.display()
            ));
            Ok(Meta::default())
        }
    }
}

/// Which event each id belongs to, and how to find a record's id; errors if records of
/// different events cannot be told apart or a sample layout is beyond the parser.
fn index_ids(attrs: &[EventAttr]) -> Result<(HashMap<u64, usize>, IdLayout), ErrorKind> {
    let mut id_to_attr = HashMap::new();
    for (i, a) in attrs.iter().enumerate() {
        for &id in &a.ids {
            id_to_attr.insert(id, i);
        }
    }
    let id_layout = if attrs.len() == 1 {
        IdLayout::Single
    } else if attrs.iter().all(|a| {
        a.sample_type == attrs[0].sample_type && a.sample_id_all() == attrs[0].sample_id_all()
    }) {
        IdLayout::Uniform
    } else {
        if let Some(i) = attrs
            .iter()
            .position(|a| a.sample_type & sample::IDENTIFIER == 0)
        {
            return Err(ErrorKind::AmbiguousIds(i));
        }
        IdLayout::Identifier
    };
    for (i, a) in attrs.iter().enumerate() {
        let unknown = a.sample_type & !KNOWN_SAMPLE_BITS;
        if unknown != 0 {
            return Err(ErrorKind::UnsupportedSampleType {
                attr: i,
                bits: unknown,
            });
        }
    }
    Ok((id_to_attr, id_layout))
}

/// sample_type bits whose layout the sample parser knows.
const KNOWN_SAMPLE_BITS: u64 = sample::IP
    | sample::TID
    | sample::TIME
    | sample::ADDR
    | sample::READ
    | sample::CALLCHAIN
    | sample::ID
    | sample::CPU
    | sample::PERIOD
    | sample::STREAM_ID
    | sample::RAW
    | sample::BRANCH_STACK
    | sample::REGS_USER
    | sample::STACK_USER
    | sample::WEIGHT
    | sample::DATA_SRC
    | sample::IDENTIFIER
    | sample::TRANSACTION
    | sample::REGS_INTR
    | sample::PHYS_ADDR
    | sample::AUX
    | sample::CGROUP
    | sample::DATA_PAGE_SIZE
    | sample::CODE_PAGE_SIZE
    | sample::WEIGHT_STRUCT;

/// Reads the feature sections (their places were checked against the file before) and fills
/// in event names from EVENT_DESC.
fn read_meta(
    sections: &[(u32, &[u8])],
    endian: Endian,
    attrs: &mut [EventAttr],
) -> Result<Meta, String> {
    let (meta, descs) = crate::features::parse(sections, endian)?;
    for (i, desc) in descs.into_iter().enumerate() {
        let Some(name) = desc.name else { continue };
        // Match by id (EVENT_DESC carries the ids); fall back to position.
        let index = desc
            .ids
            .first()
            .and_then(|id| attrs.iter().position(|a| a.ids.contains(id)))
            .unwrap_or(i);
        if let Some(a) = attrs.get_mut(index) {
            a.name = Some(name);
        }
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_hardware_events_are_named_by_their_pmu() {
        let meta = Meta {
            pmus: vec![(8, "cpu_atom".into()), (4, "cpu_core".into())],
            ..Meta::default()
        };
        let ev = |type_, config, name: Option<&str>| EventAttr {
            type_,
            config,
            name: name.map(String::from),
            ..EventAttr::default()
        };
        let mut attrs = vec![
            ev(abi::attr_type::HARDWARE, 4 << 32, None),
            ev(abi::attr_type::HARDWARE, (8 << 32) | 1, None),
            ev(abi::attr_type::HARDWARE, 0, None),
            ev(abi::attr_type::HARDWARE, 4 << 32, Some("given")),
            ev(abi::attr_type::HARDWARE, 9 << 32, None),
        ];
        name_hybrid_events(&mut attrs, &meta);
        let names: Vec<String> = attrs.iter().map(|a| a.display_name()).collect();
        assert_eq!(
            names,
            [
                "cpu_core/cycles/",
                "cpu_atom/instructions/",
                "cycles",
                "given",
                "cycles"
            ]
        );
    }
}
