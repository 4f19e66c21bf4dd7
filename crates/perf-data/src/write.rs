//! Writing perf.data files.
//!
//! [`PerfDataWriter`] writes the on-disk format `perf record` writes (`perf.data-file-format.txt`
//! in the perf sources): a [`abi::FILE_HEADER_SIZE`]-byte file header, the event ids, the
//! attr section, the data section (records appended as they come, so memory stays bounded),
//! and, on [`PerfDataWriter::finish`], a table of feature sections followed by the features
//! themselves. Like `perf record`, the header says "data size 0" until `finish` fixes it up, so
//! a recorder killed mid-run leaves a file that readers recognise as unfinished.
//!
//! The record builders ([`comm_record`], [`mmap2_record`], [`sample_record`], ...) lay records
//! out exactly as the kernel does in `include/uapi/linux/perf_event.h`, including the
//! `sample_id_all` trailer; tests use them to make synthetic perf.data files and the recorder
//! uses them for the records it synthesizes itself.
//!
//! Everything is written in the host's byte order with the matching magic (as perf does), so
//! records drained from a kernel ring buffer can be appended unchanged.
//!
//! The parts: this module holds the file writer ([`PerfDataWriter`]), its header and
//! errors; `records` encodes records, `features` the feature sections, `tracing` the tracing
//! data of tracepoints, `enc` the bytes
//! both are made of. Reading the host for the features is `crate::host`.
//!
//! Attrs are written by [`EventAttr::encode`], in their [`ATTR_SIZE`]-byte form (its doc says
//! why that size).

use std::fmt;
use std::io::{self, Seek, SeekFrom, Write};

use crate::abi::{self, read_format, record, sample};
pub use crate::attr::{EventAttr, ATTR_SIZE};
pub use crate::meta::{BuildIdEntry, CompressionInfo, NumaNode};

mod enc;
mod features;
mod records;
mod tracing;

use enc::{check_no_nul, Enc};
use features::encode_features;
pub use features::{Features, GroupDesc};
pub use records::{
    auxtrace_record, cgroup_record, comm_record, compressed2_record, compressed_record,
    exit_record, finished_round_record, fork_record, header_attr_record, lost_record,
    lost_samples_record, mmap2_record, namespaces_record, read_record, sample_record,
    set_mmap2_build_id, switch_record, Mmap2, ReadValue, ReadValues, SampleFields, SampleId,
    NAMESPACE_NAMES,
};
pub use tracing::TracingData;

/// Size of one attr-section entry (`struct perf_file_attr`: the attr plus a
/// `perf_file_section` locating its ids); the header's `attr_size` field.
pub const FILE_ATTR_SIZE: usize = ATTR_SIZE + 16;

/// The largest record: `perf_event_header.size` is a u16 and records are 8-byte aligned.
pub const MAX_RECORD_SIZE: usize = 0xfff8;

/// The largest build id a BUILD_ID feature entry or MMAP2 record can carry.
pub const MAX_BUILD_ID_SIZE: usize = 20;

/// `PERF_SAMPLE_REGS_ABI_NONE`: no registers follow the abi word.
pub const REGS_ABI_NONE: u64 = abi::regs_abi::NONE;
/// `PERF_SAMPLE_REGS_ABI_32`.
pub const REGS_ABI_32: u64 = abi::regs_abi::ABI_32;
/// `PERF_SAMPLE_REGS_ABI_64`.
pub const REGS_ABI_64: u64 = abi::regs_abi::ABI_64;

/// perf's `NAME_ALIGN`: strings in feature sections are padded to this.
const NAME_ALIGN: usize = 64;

/// `HOST_KERNEL_ID` in perf: the pid perf writes in BUILD_ID entries of the host machine.
pub const HOST_PID: i32 = -1;

/// The sample_type bits [`sample_record`] can lay out.
pub const SUPPORTED_SAMPLE_TYPE: u64 = sample::IDENTIFIER
    | sample::IP
    | sample::TID
    | sample::TIME
    | sample::ADDR
    | sample::ID
    | sample::STREAM_ID
    | sample::CPU
    | sample::PERIOD
    | sample::READ
    | sample::CALLCHAIN
    | sample::RAW
    | sample::BRANCH_STACK
    | sample::REGS_USER
    | sample::STACK_USER
    | sample::WEIGHT
    | sample::WEIGHT_STRUCT
    | sample::DATA_SRC
    | sample::PHYS_ADDR
    | sample::CGROUP
    | sample::DATA_PAGE_SIZE
    | sample::CODE_PAGE_SIZE;

/// The read_format bits [`sample_record`] and [`read_record`] can lay out.
pub const SUPPORTED_READ_FORMAT: u64 = read_format::TOTAL_TIME_ENABLED
    | read_format::TOTAL_TIME_RUNNING
    | read_format::ID
    | read_format::GROUP
    | read_format::LOST;

pub use crate::abi::attr_flags;

/// Why writing failed: the output failed (with what was being written), or the caller asked
/// for something the format cannot hold. Each message is one line.
#[derive(Debug)]
pub enum WriteError {
    /// Writing, seeking or flushing the output failed while writing `what` (a full disk is
    /// `ENOSPC` in `source`; see [`WriteError::io_error`]).
    Io {
        what: &'static str,
        source: io::Error,
    },
    /// [`PerfDataWriter::new`] was given no attrs.
    NoAttrs,
    /// A string for the file contains a NUL byte.
    Nul { what: &'static str, value: String },
    /// A count does not fit the u32 the format stores it in.
    TooMany { what: &'static str, count: usize },
    /// A build id is longer than [`MAX_BUILD_ID_SIZE`]; `path` is the file it belongs to, if
    /// known.
    BuildIdTooLong { len: usize, path: Option<String> },
    /// A BUILD_ID entry's path does not fit the entry's u16 size.
    BuildIdPathTooLong(String),
    /// sample_type bits outside [`SUPPORTED_SAMPLE_TYPE`].
    UnsupportedSampleType(u64),
    /// read_format bits outside [`SUPPORTED_READ_FORMAT`].
    UnsupportedReadFormat(u64),
    /// The attr asks for PERF_SAMPLE_READ but the sample has no read values.
    MissingReadValues,
    /// A read_format without GROUP holds exactly one value.
    ReadValueCount(usize),
    /// The number of user registers does not match the abi and `sample_regs_user`.
    UserRegsCount {
        given: usize,
        abi: u64,
        mask: u64,
        needed: usize,
    },
    /// A branch_sample_type asking for per-entry counters (PERF_SAMPLE_BRANCH_COUNTERS),
    /// which [`sample_record`] does not lay out.
    UnsupportedBranchSampleType(u64),
    /// A user stack copy that is not a multiple of 8 bytes.
    UserStackSize(usize),
    /// A stack `dyn_size` larger than the bytes dumped.
    StackDynSize { dyn_size: u64, len: usize },
    /// A record larger than a `perf_event_header` can describe.
    RecordTooLarge { record_type: u32, size: usize },
    /// Bytes given as records end inside a record header.
    RecordHeaderCut { offset: usize, available: usize },
    /// A record header whose size is below 8, not a multiple of 8, or past the bytes given.
    BadRecordSize {
        offset: usize,
        size: usize,
        left: usize,
    },
    /// [`PerfDataWriter::write_record`] was given more or less than one record.
    NotOneRecord { header_size: usize, given: usize },
}

impl WriteError {
    /// The I/O error behind this one, if the output failed (`ENOSPC` for a full disk).
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            WriteError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Io { what, source } => write!(f, "writing {what}: {source}"),
            WriteError::NoAttrs => write!(f, "a perf.data file needs at least one attr"),
            WriteError::Nul { what, value } => write!(
                f,
                "{what} \"{}\" contains a NUL byte",
                value.escape_debug()
            ),
            WriteError::TooMany { what, count } => write!(f, "too many {what}: {count}"),
            WriteError::BuildIdTooLong { len, path: None } => write!(
                f,
                "build id of {len} bytes is longer than {MAX_BUILD_ID_SIZE}"
            ),
            WriteError::BuildIdTooLong {
                len,
                path: Some(path),
            } => write!(
                f,
                "build id of {len} bytes for {path} is longer than {MAX_BUILD_ID_SIZE}"
            ),
            WriteError::BuildIdPathTooLong(path) => {
                write!(f, "build id filename {path} is too long")
            }
            WriteError::UnsupportedSampleType(bits) => write!(
                f,
                "sample_type bits {bits:#x} are not supported by the writer"
            ),
            WriteError::UnsupportedReadFormat(bits) => write!(
                f,
                "read_format bits {bits:#x} are not supported by the writer"
            ),
            WriteError::MissingReadValues => write!(
                f,
                "sample_type has READ but the sample has no read values"
            ),
            WriteError::ReadValueCount(n) => write!(
                f,
                "read_format without GROUP takes exactly one value, {n} given"
            ),
            WriteError::UserRegsCount {
                given,
                abi,
                mask,
                needed,
            } => write!(
                f,
                "{given} user registers given, abi {abi} with sample_regs_user {mask:#x} needs {needed}"
            ),
            WriteError::UnsupportedBranchSampleType(bits) => {
                write!(f, "branch_sample_type bits {bits:#x} cannot be written")
            }
            WriteError::UserStackSize(len) => {
                write!(f, "user stack of {len} bytes is not a multiple of 8")
            }
            WriteError::StackDynSize { dyn_size, len } => write!(
                f,
                "stack dyn_size {dyn_size} exceeds the {len} bytes dumped"
            ),
            WriteError::RecordTooLarge { record_type, size } => write!(
                f,
                "record of type {record_type} would be {size} bytes, more than the \
                 {MAX_RECORD_SIZE} a perf_event_header can describe"
            ),
            WriteError::RecordHeaderCut { offset, available } => write!(
                f,
                "{available} bytes at offset {offset} are too short for a record header"
            ),
            WriteError::BadRecordSize { offset, size, left } => write!(
                f,
                "record at offset {offset} has bad header.size {size} ({left} bytes left)"
            ),
            WriteError::NotOneRecord { header_size, given } => write!(
                f,
                "record header says {header_size} bytes but {given} were given"
            ),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io_error().map(|e| e as _)
    }
}

type Result<T> = std::result::Result<T, WriteError>;

/// Wraps an I/O error of the output with what was being written.
fn io_err(what: &'static str) -> impl Fn(io::Error) -> WriteError {
    move |source| WriteError::Io { what, source }
}

/// Streams a perf.data file: header and attrs on [`PerfDataWriter::new`], records appended by
/// [`PerfDataWriter::write_record`], features and the final header on
/// [`PerfDataWriter::finish`].
///
/// The file starts at offset 0 of `out`, which should be empty (a truncated file). Wrap a
/// `File` in a `BufWriter` for throughput; the writer itself keeps no records in memory.
/// After an I/O error from `write_record`, the writer rewinds to the end of the last complete
/// record, so the file stays well formed.
#[derive(Debug)]
pub struct PerfDataWriter<W: Write + Seek> {
    out: W,
    attrs: Vec<EventAttr>,
    data_offset: u64,
    data_size: u64,
    records: u64,
}

impl<W: Write + Seek> PerfDataWriter<W> {
    /// Writes the file header (data size 0, as perf does while recording, so a writer killed
    /// mid-run leaves a file whose header says data size 0), the ids and the attr section,
    /// then positions at the data section.
    ///
    /// Errors if `attrs` is empty or an event name contains a NUL byte, and when the output fails.
    pub fn new(mut out: W, attrs: Vec<EventAttr>) -> Result<Self> {
        if attrs.is_empty() {
            return Err(WriteError::NoAttrs);
        }
        for a in &attrs {
            check_no_nul(a.name.as_deref().unwrap_or(""), "event name")?;
        }

        // Layout as perf writes it: header, every attr's ids, the attr section, the data.
        let mut pos = abi::FILE_HEADER_SIZE;
        let mut id_sections = Vec::with_capacity(attrs.len());
        for a in &attrs {
            let size = a.ids.len() as u64 * 8;
            id_sections.push((pos, size));
            pos += size;
        }
        let attrs_offset = pos;
        let attrs_size = (attrs.len() * FILE_ATTR_SIZE) as u64;
        let data_offset = attrs_offset + attrs_size;

        let mut b = Enc::default();
        for a in &attrs {
            for &id in &a.ids {
                b.u64(id);
            }
        }
        for (a, &(offset, size)) in attrs.iter().zip(&id_sections) {
            b.bytes(&a.encode());
            b.u64(offset);
            b.u64(size);
        }
        let header = file_header(attrs_offset, attrs_size, data_offset, 0, &[0; 4]);
        let err = io_err("the header and attrs");
        out.seek(SeekFrom::Start(0)).map_err(&err)?;
        out.write_all(&header).map_err(&err)?;
        out.write_all(&b.0).map_err(err)?;
        Ok(PerfDataWriter {
            out,
            attrs,
            data_offset,
            data_size: 0,
            records: 0,
        })
    }

    /// Appends one complete record (`perf_event_header` + body), as drained from a ring
    /// buffer or built by this module's builders.
    ///
    /// Errors (writing nothing) unless the slice is exactly one record: at least 8 bytes, a
    /// multiple of 8, and `header.size` equal to its length.
    ///
    /// PERF_RECORD_AUXTRACE counts its payload (the record's first field says how long) as
    /// part of it, as perf writes it.
    pub fn write_record(&mut self, record: &[u8]) -> Result<()> {
        let mut size = record_size_at(record, 0)?;
        if record.get(..4) == Some(&record::AUXTRACE.to_ne_bytes()[..]) {
            let payload = record
                .get(8..16)
                .map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or_default()));
            size = size.saturating_add(usize::try_from(payload).unwrap_or(usize::MAX));
        }
        if size != record.len() {
            return Err(WriteError::NotOneRecord {
                header_size: size,
                given: record.len(),
            });
        }
        self.append(record, 1)
    }

    /// Appends a run of complete records laid end to end (e.g. a whole chunk drained from a
    /// ring buffer), after checking that their headers tile the slice exactly.
    pub fn write_records(&mut self, records: &[u8]) -> Result<()> {
        let mut pos = 0;
        let mut n = 0;
        while pos < records.len() {
            pos += record_size_at(records, pos)?;
            n += 1;
        }
        self.append(records, n)
    }

    fn append(&mut self, bytes: &[u8], n: u64) -> Result<()> {
        if let Err(e) = self.out.write_all(bytes) {
            // Leave the stream at the end of the last complete record.
            let _ = self
                .out
                .seek(SeekFrom::Start(self.data_offset + self.data_size));
            return Err(WriteError::Io {
                what: "a record",
                source: e,
            });
        }
        self.data_size += bytes.len() as u64;
        self.records += n;
        Ok(())
    }

    /// Bytes of records written to the data section so far.
    pub fn bytes_written(&self) -> u64 {
        self.data_size
    }

    /// Records written to the data section so far.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// File offset of the data section (where the first record goes).
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// The attrs the file was started with.
    pub fn attrs(&self) -> &[EventAttr] {
        &self.attrs
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Writes the feature sections (after the data, located by a table of
    /// `perf_file_section`s in feature-bit order), fixes up the header's data size and
    /// feature bitmap, flushes, and returns the writer positioned at the end of the file.
    pub fn finish(mut self, features: &Features) -> Result<W> {
        let end = file_end(&self.attrs, Some(features), self.data_size)?;
        let data_end = self.data_offset + self.data_size;
        let err = io_err("the feature sections");
        self.out.seek(SeekFrom::Start(data_end)).map_err(&err)?;
        self.out.write_all(&end.tail).map_err(&err)?;
        let err = io_err("the final header");
        self.out.seek(SeekFrom::Start(0)).map_err(&err)?;
        self.out.write_all(&end.header).map_err(&err)?;
        self.out
            .seek(SeekFrom::Start(data_end + end.tail.len() as u64))
            .map_err(&err)?;
        self.out.flush().map_err(err)?;
        Ok(self.out)
    }
}

/// What [`PerfDataWriter::finish`] writes around the records: the final file header, and
/// the tail after the data section (the feature table and the feature sections).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEnd {
    /// The [`abi::FILE_HEADER_SIZE`]-byte file header, written at offset 0.
    pub header: Vec<u8>,
    /// Written right after the last record.
    pub tail: Vec<u8>,
}

/// Where the data section of a file with `attrs` starts: after the header, every attr's ids
/// and the attr section, as [`PerfDataWriter::new`] lays them out.
pub fn data_offset(attrs: &[EventAttr]) -> u64 {
    let ids: u64 = attrs.iter().map(|a| a.ids.len() as u64 * 8).sum();
    abi::FILE_HEADER_SIZE + ids + (attrs.len() * FILE_ATTR_SIZE) as u64
}

/// The header and tail [`PerfDataWriter::finish`] writes for a file with `attrs` whose data
/// section holds `data_size` bytes of records; with `features` `None`, a header with no
/// feature bits and no tail. This is how a file is finished at a data size chosen after the
/// records were written (the recorder cuts a file back to its last record on disk).
pub fn file_end(
    attrs: &[EventAttr],
    features: Option<&Features>,
    data_size: u64,
) -> Result<FileEnd> {
    let sections = match features {
        Some(f) => encode_features(f, attrs)?,
        None => Vec::new(),
    };
    let data_offset = data_offset(attrs);
    let data_end = data_offset + data_size;
    let mut table = Enc::default();
    let mut bitmap = [0u64; 4];
    let mut offset = data_end + 16 * sections.len() as u64;
    for (bit, data) in &sections {
        table.u64(offset);
        table.u64(data.len() as u64);
        offset += data.len() as u64;
        bitmap[(*bit / 64) as usize] |= 1 << (bit % 64);
    }
    for (_, data) in &sections {
        table.bytes(data);
    }
    let attrs_size = (attrs.len() * FILE_ATTR_SIZE) as u64;
    let attrs_offset = data_offset - attrs_size;
    Ok(FileEnd {
        header: file_header(attrs_offset, attrs_size, data_offset, data_size, &bitmap),
        tail: table.0,
    })
}

/// The size of the record starting at `pos`, checked against the slice.
fn record_size_at(buf: &[u8], pos: usize) -> Result<usize> {
    let rest = &buf[pos..];
    if rest.len() < abi::EVENT_HEADER_SIZE {
        return Err(WriteError::RecordHeaderCut {
            offset: pos,
            available: rest.len(),
        });
    }
    let size = usize::from(u16::from_ne_bytes([rest[6], rest[7]]));
    if size < abi::EVENT_HEADER_SIZE || size % 8 != 0 || size > rest.len() {
        return Err(WriteError::BadRecordSize {
            offset: pos,
            size,
            left: rest.len(),
        });
    }
    Ok(size)
}

/// `struct perf_file_header`.
fn file_header(
    attrs_offset: u64,
    attrs_size: u64,
    data_offset: u64,
    data_size: u64,
    features: &[u64; 4],
) -> Vec<u8> {
    let mut b = Enc::default();
    b.bytes(if cfg!(target_endian = "little") {
        abi::MAGIC_LE
    } else {
        abi::MAGIC_BE
    });
    b.u64(abi::FILE_HEADER_SIZE);
    b.u64(FILE_ATTR_SIZE as u64);
    b.u64(attrs_offset);
    b.u64(attrs_size);
    b.u64(data_offset);
    b.u64(data_size);
    b.u64(0); // event_types: unused since perf 3.x
    b.u64(0);
    for &w in features {
        b.u64(w);
    }
    debug_assert_eq!(b.0.len() as u64, abi::FILE_HEADER_SIZE);
    b.0
}

/// The 16-byte header of a pipe-mode stream (`perf record -o -`): magic and size 16.
pub fn pipe_header() -> [u8; 16] {
    let mut h = [0u8; 16];
    let magic = if cfg!(target_endian = "little") {
        abi::MAGIC_LE
    } else {
        abi::MAGIC_BE
    };
    h[..8].copy_from_slice(magic);
    h[8..].copy_from_slice(&16u64.to_ne_bytes());
    h
}
