//! Opening a perf.data file: header, event attrs with their ids, feature sections.
//!
//! Layout (perf's `tools/perf/Documentation/perf.data-file-format.txt`): a 104-byte header with
//! three sections (attrs, data, event types) and a 256-bit feature bitmap; the feature sections
//! follow the data section, located by a table of (offset, size) pairs right after it.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut};

use crate::abi::{self, sample};
use crate::bytes::{u32_at, u64_at, Endian};
use crate::error::{ErrorKind, ReadError};

use crate::abi::attr_flags;

/// One event of the file: the fields of its `perf_event_attr` that matter for reading and
/// naming samples, its name if perf stored one, and the sample ids that belong to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAttr {
    pub type_: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    /// The sample period, or the frequency when `flags & FREQ`.
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub sample_regs_intr: u64,
    /// The name from the EVENT_DESC feature (`cpu-clock`, `resource_stalls_any`), if any.
    pub name: Option<String>,
    pub ids: Vec<u64>,
}

impl EventAttr {
    pub fn freq(&self) -> bool {
        self.flags & attr_flags::FREQ != 0
    }
    pub fn sample_id_all(&self) -> bool {
        self.flags & attr_flags::SAMPLE_ID_ALL != 0
    }
    pub fn precise_ip(&self) -> u8 {
        ((self.flags >> attr_flags::PRECISE_IP_SHIFT) & 3) as u8
    }
    /// Size in bytes of the `sample_id` trailer on non-sample records.
    pub fn sample_id_size(&self) -> usize {
        if !self.sample_id_all() {
            return 0;
        }
        let t = self.sample_type;
        [
            sample::TID,
            sample::TIME,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::IDENTIFIER,
        ]
        .iter()
        .filter(|&&bit| t & bit != 0)
        .count()
            * 8
    }
}

/// One entry of the BUILD_ID feature section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// The path perf recorded (`/usr/lib/x.so`, `[kernel.kallsyms]`, `[vdso]`).
    pub path: Vec<u8>,
    pub build_id: Vec<u8>,
}

/// What the feature sections say about the recording machine and command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub hostname: Option<String>,
    pub os_release: Option<String>,
    pub arch: Option<String>,
    pub perf_version: Option<String>,
    pub nr_cpus_online: Option<u32>,
    pub cpu_desc: Option<String>,
    pub cpuid: Option<String>,
    pub cmdline: Vec<String>,
    pub build_ids: Vec<BuildIdEntry>,
}

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
    pub(crate) map: Mmap,
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
    pub(crate) id_to_attr: HashMap<u64, usize>,
    pub(crate) id_layout: IdLayout,
}

const ATTR_SIZE_VER0: u64 = 64;

impl PerfData {
    /// Opens and maps `path`, parses the header, the event attrs and the feature sections.
    pub fn open(path: impl AsRef<Path>) -> Result<PerfData, ReadError> {
        let path = path.as_ref().to_path_buf();
        let err = |offset: Option<u64>, kind: ErrorKind| ReadError {
            path: path.clone(),
            offset,
            kind,
        };
        let file = File::open(&path).map_err(|e| err(None, e.into()))?;
        // SAFETY: the map is read-only; a file truncated under us while mapped would SIGBUS,
        // which is the same contract perf itself has with its input.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| err(None, e.into()))?;
        Self::from_map(path, map)
    }

    /// Reads a perf.data file held in memory (a copy of `bytes`); `path` only names it in
    /// errors. This is how the fuzz targets feed the reader.
    pub fn from_bytes(path: impl AsRef<Path>, bytes: &[u8]) -> Result<PerfData, ReadError> {
        let path = path.as_ref().to_path_buf();
        let err = |e: io::Error| ReadError {
            path: path.clone(),
            offset: None,
            kind: e.into(),
        };
        let mut map = MmapMut::map_anon(bytes.len()).map_err(err)?;
        map.copy_from_slice(bytes);
        let map = map.make_read_only().map_err(err)?;
        Self::from_map(path, map)
    }

    fn from_map(path: PathBuf, map: Mmap) -> Result<PerfData, ReadError> {
        let err = |offset: Option<u64>, kind: ErrorKind| ReadError {
            path: path.clone(),
            offset,
            kind,
        };
        let file_len = map.len() as u64;
        if map.len() < 16 {
            return Err(err(
                Some(0),
                ErrorKind::Truncated {
                    what: "file header",
                    needed: abi::FILE_HEADER_SIZE,
                    available: file_len,
                },
            ));
        }
        let magic: [u8; 8] = map[0..8].try_into().unwrap_or_default();
        let endian = if &magic == abi::MAGIC_LE {
            Endian::Little
        } else if &magic == abi::MAGIC_BE {
            Endian::Big
        } else {
            return Err(err(Some(0), ErrorKind::BadMagic(magic)));
        };
        let header_size = u64_at(&map, 8, endian).unwrap_or(0);
        if header_size == 16 {
            return Err(err(Some(8), ErrorKind::PipeMode));
        }
        if file_len < abi::FILE_HEADER_SIZE {
            return Err(err(
                Some(0),
                ErrorKind::Truncated {
                    what: "file header",
                    needed: abi::FILE_HEADER_SIZE,
                    available: file_len,
                },
            ));
        }
        let h = |off: usize| u64_at(&map, off, endian).unwrap_or(0);
        let attr_size = h(16);
        let attrs_section = (h(24), h(32));
        let mut data_section = (h(40), h(48));
        if !(ATTR_SIZE_VER0 + 16..=4096).contains(&attr_size) {
            return Err(err(Some(16), ErrorKind::BadAttrSize(attr_size)));
        }
        let check = |what: &str, offset: u64, size: u64| -> Result<(), ReadError> {
            match offset.checked_add(size) {
                Some(end) if end <= file_len => Ok(()),
                _ => Err(err(
                    Some(offset.min(file_len)),
                    ErrorKind::SectionOutsideFile {
                        what: what.to_string(),
                        offset,
                        size,
                        file_len,
                    },
                )),
            }
        };
        check("attrs", attrs_section.0, attrs_section.1)?;
        let mut warnings = Vec::new();
        let data_size_was_zero = data_section.1 == 0 && data_section.0 < file_len;
        if data_size_was_zero {
            // perf (and cpiflame) write the header first with data size 0 and fix it up at
            // exit; a recorder that was killed leaves it so. The records are still there.
            data_section.1 = file_len - data_section.0;
            warnings.push(format!(
                "{}: header says data size 0 (recorder killed?); reading records to the end of the file",
                path.display()
            ));
        }
        check("data", data_section.0, data_section.1)?;

        // Attrs: each entry (attr_size bytes) is a perf_event_attr followed by the 16-byte
        // (offset, size) of this event's ids.
        let entry_size = attr_size;
        let event_attr_size = attr_size - 16;
        let n_attrs = attrs_section.1 / entry_size;
        if n_attrs == 0 {
            return Err(err(Some(24), ErrorKind::NoAttrs));
        }
        let mut attrs = Vec::with_capacity(n_attrs as usize);
        for i in 0..n_attrs {
            let at = attrs_section.0 + i * entry_size;
            let bytes = &map[at as usize..(at + entry_size) as usize];
            let mut attr = parse_attr(&bytes[..event_attr_size as usize], endian);
            let ids_offset = u64_at(bytes, event_attr_size as usize, endian).unwrap_or(0);
            let ids_size = u64_at(bytes, event_attr_size as usize + 8, endian).unwrap_or(0);
            check(&format!("ids of event {i}"), ids_offset, ids_size)?;
            attr.ids = map[ids_offset as usize..(ids_offset + ids_size) as usize]
                .chunks_exact(8)
                .filter_map(|c| u64_at(c, 0, endian))
                .collect();
            attrs.push(attr);
        }

        let meta = if data_size_was_zero {
            // The feature sections are written at the end; a killed recorder wrote none.
            Meta::default()
        } else {
            let feature_bits: [u64; 4] = [h(72), h(80), h(88), h(96)];
            let table_start = data_section.0 + data_section.1;
            let n_features: u64 = feature_bits.iter().map(|w| w.count_ones() as u64).sum();
            check("feature table", table_start, n_features * 16)?;
            // The table lists the sections of the set bits, lowest bit first.
            let bits =
                (0..256u32).filter(|&b| feature_bits[(b / 64) as usize] & (1 << (b % 64)) != 0);
            let mut sections = Vec::new();
            for (k, bit) in bits.enumerate() {
                let at = (table_start + k as u64 * 16) as usize;
                let off = u64_at(&map, at, endian).unwrap_or(0);
                let size = u64_at(&map, at + 8, endian).unwrap_or(0);
                check(&format!("feature {k}"), off, size)?;
                sections.push((bit, &map[off as usize..(off + size) as usize]));
            }
            match read_meta(&sections, endian, &mut attrs) {
                Ok(meta) => meta,
                Err(e) => {
                    warnings.push(format!(
                        "{}: feature sections unreadable ({e}); event names and build ids are not available",
                        path.display()
                    ));
                    Meta::default()
                }
            }
        };

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
            for (i, a) in attrs.iter().enumerate() {
                if a.sample_type & sample::IDENTIFIER == 0 {
                    return Err(err(None, ErrorKind::AmbiguousIds(i)));
                }
            }
            IdLayout::Identifier
        };
        for (i, a) in attrs.iter().enumerate() {
            let unknown = a.sample_type & !KNOWN_SAMPLE_BITS;
            if unknown != 0 {
                return Err(err(
                    None,
                    ErrorKind::UnsupportedSampleType {
                        attr: i,
                        bits: unknown,
                    },
                ));
            }
        }
        Ok(PerfData {
            data: data_section.0..data_section.0 + data_section.1,
            path,
            map,
            endian,
            attrs,
            meta,
            data_size_was_zero,
            warnings,
            id_to_attr,
            id_layout,
        })
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size in bytes of the data section.
    pub fn data_size(&self) -> u64 {
        self.data.end - self.data.start
    }

    pub(crate) fn error(&self, offset: Option<u64>, kind: ErrorKind) -> ReadError {
        ReadError {
            path: self.path.clone(),
            offset,
            kind,
        }
    }
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

/// Parses the fields of a `perf_event_attr` (missing trailing fields of older, shorter attrs
/// read as zero, as the kernel treats them).
fn parse_attr(b: &[u8], e: Endian) -> EventAttr {
    let q = |off: usize| u64_at(b, off, e).unwrap_or(0);
    let d = |off: usize| u32_at(b, off, e).unwrap_or(0);
    EventAttr {
        type_: d(0),
        config: q(8),
        sample_period_or_freq: q(16),
        sample_type: q(24),
        read_format: q(32),
        flags: q(40),
        config1: q(56),
        config2: q(64),
        branch_sample_type: q(72),
        sample_regs_user: q(80),
        sample_stack_user: d(88),
        sample_regs_intr: q(96),
        name: None,
        ids: Vec::new(),
    }
}

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

impl From<&crate::write::AttrSpec> for EventAttr {
    /// The reader's view of an attr the writer (or the recorder) is about to use.
    fn from(a: &crate::write::AttrSpec) -> EventAttr {
        EventAttr {
            type_: a.type_,
            config: a.config,
            config1: a.config1,
            config2: a.config2,
            sample_period_or_freq: a.sample_period_or_freq,
            sample_type: a.sample_type,
            read_format: a.read_format,
            flags: a.flags_word().unwrap_or(a.flags),
            branch_sample_type: a.branch_sample_type,
            sample_regs_user: a.sample_regs_user,
            sample_stack_user: a.sample_stack_user,
            sample_regs_intr: a.sample_regs_intr,
            name: (!a.name.is_empty()).then(|| a.name.clone()),
            ids: a.ids.clone(),
        }
    }
}
