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
//! Attrs are written by [`EventAttr::encode`], in their [`ATTR_SIZE`]-byte form (its doc says
//! why that size).

use std::fmt;
use std::io::{self, Seek, SeekFrom, Write};

use crate::abi::{self, feature, misc, read_format, record, sample};
pub use crate::attr::{EventAttr, ATTR_SIZE};
pub use crate::file::{BuildIdEntry, CompressionInfo};

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
    | sample::BRANCH_STACK
    | sample::REGS_USER
    | sample::STACK_USER
    | sample::WEIGHT
    | sample::WEIGHT_STRUCT
    | sample::DATA_SRC
    | sample::PHYS_ADDR
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

/// The `sample_id` trailer the kernel appends to non-sample records when the attr has
/// `sample_id_all`; each field is written only if `sample_type` asks for it, in the kernel's
/// order TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Process id (PERF_SAMPLE_TID).
    pub pid: i32,
    /// Thread id (PERF_SAMPLE_TID).
    pub tid: i32,
    /// Timestamp (PERF_SAMPLE_TIME).
    pub time: u64,
    /// Event id (PERF_SAMPLE_ID and PERF_SAMPLE_IDENTIFIER).
    pub id: u64,
    /// Stream id (PERF_SAMPLE_STREAM_ID).
    pub stream_id: u64,
    /// Cpu (PERF_SAMPLE_CPU; the reserved u32 after it is written as 0).
    pub cpu: u32,
}

/// One counter in a PERF_SAMPLE_READ / PERF_RECORD_READ `read_format` block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadValue {
    /// The counter value.
    pub value: u64,
    /// The counter's id (PERF_FORMAT_ID).
    pub id: u64,
    /// Lost samples (PERF_FORMAT_LOST).
    pub lost: u64,
}

/// The `struct read_format` values of a sample or READ record. Without PERF_FORMAT_GROUP,
/// `values` must hold exactly one counter; with it, one per group member (leader first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadValues {
    /// PERF_FORMAT_TOTAL_TIME_ENABLED.
    pub time_enabled: u64,
    /// PERF_FORMAT_TOTAL_TIME_RUNNING.
    pub time_running: u64,
    /// The counters.
    pub values: Vec<ReadValue>,
}

/// The fields of a PERF_RECORD_SAMPLE; [`sample_record`] writes those the attr's
/// `sample_type` selects and ignores the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleFields {
    /// PERF_SAMPLE_IP.
    pub ip: u64,
    /// PERF_SAMPLE_TID, process id.
    pub pid: i32,
    /// PERF_SAMPLE_TID, thread id.
    pub tid: i32,
    /// PERF_SAMPLE_TIME.
    pub time: u64,
    /// PERF_SAMPLE_ADDR.
    pub addr: u64,
    /// PERF_SAMPLE_ID and PERF_SAMPLE_IDENTIFIER.
    pub id: u64,
    /// PERF_SAMPLE_STREAM_ID.
    pub stream_id: u64,
    /// PERF_SAMPLE_CPU (the reserved u32 after it is written as 0).
    pub cpu: u32,
    /// PERF_SAMPLE_PERIOD.
    pub period: u64,
    /// PERF_SAMPLE_READ: required when the attr asks for it.
    pub read: Option<ReadValues>,
    /// PERF_SAMPLE_CALLCHAIN: addresses and context markers ([`abi::callchain`]), as the
    /// kernel writes them (e.g. `callchain::USER`, then the user ips, innermost first).
    pub callchain: Vec<u64>,
    /// PERF_SAMPLE_BRANCH_STACK: `hw_idx` (written when `branch_sample_type` has
    /// PERF_SAMPLE_BRANCH_HW_INDEX) and the entries as (from, to, flags), newest first.
    pub branch_stack: (u64, Vec<[u64; 3]>),
    /// PERF_SAMPLE_REGS_USER abi ([`REGS_ABI_64`], ...). With [`REGS_ABI_NONE`] no registers
    /// follow and `user_regs` must be empty.
    pub regs_abi: u64,
    /// PERF_SAMPLE_REGS_USER values, one per bit set in `sample_regs_user`, lowest bit first.
    pub user_regs: Vec<u64>,
    /// PERF_SAMPLE_STACK_USER bytes (a multiple of 8 long; empty writes size 0 and, as the
    /// kernel does, no dyn_size).
    pub user_stack: Vec<u8>,
    /// PERF_SAMPLE_STACK_USER dyn_size: how much of `user_stack` is valid (at most its length).
    pub stack_dyn_size: u64,
    /// `perf_event_header.misc`: the cpumode ([`abi::misc::USER`], ...) and optionally
    /// [`abi::misc::EXACT_IP`].
    pub misc: u16,
    /// PERF_SAMPLE_WEIGHT or PERF_SAMPLE_WEIGHT_STRUCT: the word as the kernel writes it
    /// (`crate::Weight::word` packs the struct's three fields).
    pub weight: u64,
    /// PERF_SAMPLE_DATA_SRC: the packed `union perf_mem_data_src`.
    pub data_src: u64,
    /// PERF_SAMPLE_PHYS_ADDR.
    pub phys_addr: u64,
    /// PERF_SAMPLE_DATA_PAGE_SIZE.
    pub data_page_size: u64,
    /// PERF_SAMPLE_CODE_PAGE_SIZE.
    pub code_page_size: u64,
}

/// The fields of a PERF_RECORD_MMAP2 record (see [`mmap2_record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mmap2 {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Start address of the mapping.
    pub addr: u64,
    /// Length of the mapping.
    pub len: u64,
    /// File offset of the mapping's start.
    pub pgoff: u64,
    /// Device major number.
    pub maj: u32,
    /// Device minor number.
    pub min: u32,
    /// Inode number.
    pub ino: u64,
    /// Inode generation.
    pub ino_generation: u64,
    /// When set, the record carries this build id (at most [`MAX_BUILD_ID_SIZE`] bytes)
    /// instead of maj/min/ino/ino_generation, and misc gets [`abi::misc::MMAP_BUILD_ID`].
    pub build_id: Option<Vec<u8>>,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_*` bits.
    pub flags: u32,
    /// The mapped file's path (or "\[vdso\]", "//anon", ...).
    pub filename: String,
    /// `perf_event_header.misc`: the cpumode ([`abi::misc::USER`] for user mappings),
    /// optionally with [`abi::misc::MMAP_DATA`].
    pub misc: u16,
}

/// The feature sections [`PerfDataWriter::finish`] writes. Only features with data are
/// written (and get their bit in the header); EVENT_DESC (names and ids of the attrs) is
/// always written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// HOSTNAME: `uname -n`.
    pub hostname: Option<String>,
    /// OSRELEASE: `uname -r`.
    pub os_release: Option<String>,
    /// VERSION: the recording tool's version string.
    pub perf_version: Option<String>,
    /// ARCH: `uname -m` (perf uses it to name registers).
    pub arch: Option<String>,
    /// NRCPUS: (available, online), written in that order as perf does.
    pub nr_cpus: Option<(u32, u32)>,
    /// CPUDESC: the cpu model name.
    pub cpu_desc: Option<String>,
    /// CPUID: e.g. "GenuineIntel,6,85,4" on x86 (vendor,family,model,stepping).
    pub cpuid: Option<String>,
    /// TOTAL_MEM: memory size in kB.
    pub total_mem_kb: Option<u64>,
    /// CMDLINE: the recording command line, argv\[0\] first (written when not empty).
    pub cmdline: Vec<String>,
    /// BUILD_ID: build ids of the files the profile hit (written when not empty).
    pub build_ids: Vec<BuildIdEntry>,
    /// SAMPLE_TIME: (first, last) sample timestamp.
    pub sample_time: Option<(u64, u64)>,
    /// COMPRESSED: written when the records are compressed (see [`compressed_record`]).
    pub compression: Option<CompressionInfo>,
    /// GROUP_DESC: the event groups of more than one event (written when not empty), so
    /// `perf report --group` and `perf evlist -g` show them as perf's own `{a,b}` groups.
    pub groups: Vec<GroupDesc>,
    /// NUMA_TOPOLOGY: the nodes, their memory and cpus (written when not empty; `perf c2c`
    /// needs it to map cpus to nodes).
    pub numa_nodes: Vec<NumaNode>,
}

/// One node of the NUMA_TOPOLOGY feature, as perf's `write_numa_topology` writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaNode {
    /// The node number.
    pub node: u32,
    /// Memory of the node in kB.
    pub mem_total_kb: u64,
    /// Free memory of the node in kB.
    pub mem_free_kb: u64,
    /// The node's cpus as a sysfs cpu list ("0-3,8").
    pub cpus: String,
}

/// One event group in the GROUP_DESC feature, as perf's `write_group_desc` writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupDesc {
    /// The group's name; perf writes `{anon_group}` for a group without one.
    pub name: Option<String>,
    /// The index of the leader's attr.
    pub leader: u32,
    /// How many events the group has, the leader included (the next attrs).
    pub members: u32,
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

/// The feature sections to write, in bit order.
fn encode_features(f: &Features, attrs: &[EventAttr]) -> Result<Vec<(u32, Vec<u8>)>> {
    let mut out = Vec::new();
    let string = |s: &str, what: &'static str| -> Result<Vec<u8>> {
        let mut b = Enc::default();
        b.header_string(s, what)?;
        Ok(b.0)
    };
    if !f.build_ids.is_empty() {
        let mut b = Enc::default();
        for e in &f.build_ids {
            b.build_id_entry(e)?;
        }
        out.push((feature::BUILD_ID, b.0));
    }
    let strings = [
        (feature::HOSTNAME, &f.hostname, "hostname"),
        (feature::OSRELEASE, &f.os_release, "os release"),
        (feature::VERSION, &f.perf_version, "perf version"),
        (feature::ARCH, &f.arch, "arch"),
        (feature::CPUDESC, &f.cpu_desc, "cpu description"),
        (feature::CPUID, &f.cpuid, "cpuid"),
    ];
    for (bit, value, what) in strings {
        if let Some(s) = value {
            out.push((bit, string(s, what)?));
        }
    }
    if let Some((avail, online)) = f.nr_cpus {
        let mut b = Enc::default();
        b.u32(avail);
        b.u32(online);
        out.push((feature::NRCPUS, b.0));
    }
    if !f.numa_nodes.is_empty() {
        let mut b = Enc::default();
        b.u32(u32_len(f.numa_nodes.len(), "NUMA nodes")?);
        for n in &f.numa_nodes {
            b.u32(n.node);
            b.u64(n.mem_total_kb);
            b.u64(n.mem_free_kb);
            b.header_string(&n.cpus, "NUMA node cpu list")?;
        }
        out.push((feature::NUMA_TOPOLOGY, b.0));
    }
    if let Some(kb) = f.total_mem_kb {
        let mut b = Enc::default();
        b.u64(kb);
        out.push((feature::TOTAL_MEM, b.0));
    }
    if !f.cmdline.is_empty() {
        let mut b = Enc::default();
        b.u32(u32_len(f.cmdline.len(), "cmdline")?);
        for arg in &f.cmdline {
            b.header_string(arg, "cmdline argument")?;
        }
        out.push((feature::CMDLINE, b.0));
    }
    {
        let mut b = Enc::default();
        b.u32(u32_len(attrs.len(), "attrs")?);
        b.u32(ATTR_SIZE as u32);
        for a in attrs {
            b.bytes(&a.encode());
            b.u32(u32_len(a.ids.len(), "ids")?);
            b.header_string(&a.display_name(), "event name")?;
            for &id in &a.ids {
                b.u64(id);
            }
        }
        out.push((feature::EVENT_DESC, b.0));
    }
    if !f.groups.is_empty() {
        let mut b = Enc::default();
        b.u32(u32_len(f.groups.len(), "groups")?);
        for g in &f.groups {
            b.header_string(g.name.as_deref().unwrap_or("{anon_group}"), "group name")?;
            b.u32(g.leader);
            b.u32(g.members);
        }
        out.push((feature::GROUP_DESC, b.0));
    }
    if let Some((first, last)) = f.sample_time {
        let mut b = Enc::default();
        b.u64(first);
        b.u64(last);
        out.push((feature::SAMPLE_TIME, b.0));
    }
    if let Some(c) = &f.compression {
        let mut b = Enc::default();
        for v in [c.version, c.type_, c.level, c.ratio, c.mmap_len] {
            b.u32(v);
        }
        out.push((feature::COMPRESSED, b.0));
    }
    out.sort_by_key(|(bit, _)| *bit);
    Ok(out)
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

/// PERF_RECORD_HEADER_ATTR: how pipe mode declares an event, its attr then its ids.
pub fn header_attr_record(attr: &EventAttr) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.bytes(&attr.encode());
    for &id in &attr.ids {
        b.u64(id);
    }
    frame(record::HEADER_ATTR, 0, b)
}

/// PERF_RECORD_COMPRESSED (81): a piece of the session's zstd stream. Not padded: the
/// record's size is the only length of the data, so perf writes records of any size here
/// (and the records after it unaligned; COMPRESSED2 was made to fix that).
pub fn compressed_record(data: &[u8]) -> Result<Vec<u8>> {
    let size = abi::EVENT_HEADER_SIZE + data.len();
    if size > MAX_RECORD_SIZE {
        return Err(WriteError::RecordTooLarge {
            record_type: record::COMPRESSED,
            size,
        });
    }
    let mut b = Enc(Vec::with_capacity(size));
    b.u32(record::COMPRESSED);
    b.u16(0);
    b.u16(size as u16);
    b.bytes(data);
    Ok(b.0)
}

/// PERF_RECORD_COMPRESSED2 (83): a piece of the zstd stream with its exact size, padded
/// to 8 bytes.
pub fn compressed2_record(data: &[u8]) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(data.len() as u64);
    b.bytes(data);
    frame(record::COMPRESSED2, 0, b)
}

/// PERF_RECORD_AUXTRACE with its `payload` (AUX area data) following it: the record's
/// `size` field says how long the payload is.
pub fn auxtrace_record(payload: &[u8], idx: u32, tid: u32, cpu: u32) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(payload.len() as u64);
    b.u64(0); // offset in the AUX buffer
    b.u64(0); // reference
    b.u32(idx);
    b.u32(tid);
    b.u32(cpu);
    b.u32(0); // reserved
    let mut r = frame(record::AUXTRACE, 0, b)?;
    r.extend_from_slice(payload);
    Ok(r)
}

/// PERF_RECORD_COMM: the thread `tid` of `pid` is now called `name` (`exec`: because of an
/// exec, misc COMM_EXEC).
pub fn comm_record(
    attr: &EventAttr,
    pid: i32,
    tid: i32,
    name: &str,
    exec: bool,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.i32(pid);
    b.i32(tid);
    b.record_string(name, "comm")?;
    b.sample_id(attr, sample_id);
    let misc = if exec { misc::COMM_EXEC } else { 0 };
    frame(record::COMM, misc, b)
}

/// PERF_RECORD_MMAP2: an executable (or, with misc MMAP_DATA, data) mapping of a file.
pub fn mmap2_record(attr: &EventAttr, m: &Mmap2, sample_id: &SampleId) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.i32(m.pid);
    b.i32(m.tid);
    b.u64(m.addr);
    b.u64(m.len);
    b.u64(m.pgoff);
    let mut misc = m.misc;
    match &m.build_id {
        Some(id) => {
            if id.len() > MAX_BUILD_ID_SIZE {
                return Err(WriteError::BuildIdTooLong {
                    len: id.len(),
                    path: None,
                });
            }
            misc |= misc::MMAP_BUILD_ID;
            b.u8(id.len() as u8);
            b.u8(0);
            b.u16(0);
            b.bytes(id);
            b.zeros(MAX_BUILD_ID_SIZE - id.len());
        }
        None => {
            b.u32(m.maj);
            b.u32(m.min);
            b.u64(m.ino);
            b.u64(m.ino_generation);
        }
    }
    b.u32(m.prot);
    b.u32(m.flags);
    b.record_string(&m.filename, "mmap filename")?;
    b.sample_id(attr, sample_id);
    frame(record::MMAP2, misc, b)
}

/// PERF_RECORD_FORK: `pid`/`tid` was created by `ppid`/`ptid` at `time`.
pub fn fork_record(
    attr: &EventAttr,
    pid: i32,
    ppid: i32,
    tid: i32,
    ptid: i32,
    time: u64,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    task_record(record::FORK, attr, [pid, ppid, tid, ptid], time, sample_id)
}

/// PERF_RECORD_EXIT: `pid`/`tid` (child of `ppid`/`ptid`) exited at `time`.
pub fn exit_record(
    attr: &EventAttr,
    pid: i32,
    ppid: i32,
    tid: i32,
    ptid: i32,
    time: u64,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    task_record(record::EXIT, attr, [pid, ppid, tid, ptid], time, sample_id)
}

fn task_record(
    ty: u32,
    attr: &EventAttr,
    ids: [i32; 4],
    time: u64,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    for v in ids {
        b.i32(v);
    }
    b.u64(time);
    b.sample_id(attr, sample_id);
    frame(ty, 0, b)
}

/// PERF_RECORD_LOST: `lost` records of event `id` were dropped because the ring buffer was
/// full.
pub fn lost_record(attr: &EventAttr, id: u64, lost: u64, sample_id: &SampleId) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(id);
    b.u64(lost);
    b.sample_id(attr, sample_id);
    frame(record::LOST, 0, b)
}

/// PERF_RECORD_LOST_SAMPLES: `lost` samples were dropped (e.g. by the PMU).
pub fn lost_samples_record(attr: &EventAttr, lost: u64, sample_id: &SampleId) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(lost);
    b.sample_id(attr, sample_id);
    frame(record::LOST_SAMPLES, 0, b)
}

/// PERF_RECORD_READ: counter values of `pid`/`tid`, laid out per `attr.read_format`.
pub fn read_record(
    attr: &EventAttr,
    pid: i32,
    tid: i32,
    values: &ReadValues,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.i32(pid);
    b.i32(tid);
    b.read_values(attr.read_format, values)?;
    b.sample_id(attr, sample_id);
    frame(record::READ, 0, b)
}

/// PERF_RECORD_FINISHED_ROUND: everything before it may be sorted and processed (perf writes
/// one after each pass over the ring buffers). A bare header, no trailer.
pub fn finished_round_record() -> Vec<u8> {
    let mut b = Enc::default();
    b.u32(record::FINISHED_ROUND);
    b.u16(0);
    b.u16(abi::EVENT_HEADER_SIZE as u16);
    b.0
}

/// PERF_RECORD_SAMPLE laid out according to `attr.sample_type` (the order of
/// `perf_event.h`: IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, READ,
/// CALLCHAIN, BRANCH_STACK, REGS_USER, STACK_USER, WEIGHT or WEIGHT_STRUCT, DATA_SRC, PHYS_ADDR,
/// DATA_PAGE_SIZE, CODE_PAGE_SIZE).
///
/// Errors for sample_type bits outside [`SUPPORTED_SAMPLE_TYPE`], read_format bits outside
/// [`SUPPORTED_READ_FORMAT`], a missing `read`, a register count that does not match
/// `sample_regs_user`, a user stack that is not a multiple of 8 bytes or smaller than its
/// dyn_size, and a record larger than [`MAX_RECORD_SIZE`].
pub fn sample_record(attr: &EventAttr, s: &SampleFields) -> Result<Vec<u8>> {
    let st = attr.sample_type;
    let unsupported = st & !SUPPORTED_SAMPLE_TYPE;
    if unsupported != 0 {
        return Err(WriteError::UnsupportedSampleType(unsupported));
    }
    let mut b = Enc::default();
    if st & sample::IDENTIFIER != 0 {
        b.u64(s.id);
    }
    if st & sample::IP != 0 {
        b.u64(s.ip);
    }
    if st & sample::TID != 0 {
        b.i32(s.pid);
        b.i32(s.tid);
    }
    if st & sample::TIME != 0 {
        b.u64(s.time);
    }
    if st & sample::ADDR != 0 {
        b.u64(s.addr);
    }
    if st & sample::ID != 0 {
        b.u64(s.id);
    }
    if st & sample::STREAM_ID != 0 {
        b.u64(s.stream_id);
    }
    if st & sample::CPU != 0 {
        b.u32(s.cpu);
        b.u32(0);
    }
    if st & sample::PERIOD != 0 {
        b.u64(s.period);
    }
    if st & sample::READ != 0 {
        let read = s.read.as_ref().ok_or(WriteError::MissingReadValues)?;
        b.read_values(attr.read_format, read)?;
    }
    if st & sample::CALLCHAIN != 0 {
        b.u64(s.callchain.len() as u64);
        for &ip in &s.callchain {
            b.u64(ip);
        }
    }
    if st & sample::BRANCH_STACK != 0 {
        // PERF_SAMPLE_BRANCH_COUNTERS would add a word per entry.
        const COUNTERS: u64 = abi::branch_sample::COUNTERS;
        if attr.branch_sample_type & COUNTERS != 0 {
            return Err(WriteError::UnsupportedBranchSampleType(COUNTERS));
        }
        let (hw_idx, entries) = &s.branch_stack;
        b.u64(entries.len() as u64);
        if attr.branch_sample_type & abi::BRANCH_SAMPLE_HW_INDEX != 0 {
            b.u64(*hw_idx);
        }
        for entry in entries {
            entry.iter().for_each(|&w| b.u64(w));
        }
    }
    if st & sample::REGS_USER != 0 {
        b.u64(s.regs_abi);
        let want = if s.regs_abi == REGS_ABI_NONE {
            0
        } else {
            attr.sample_regs_user.count_ones() as usize
        };
        if s.user_regs.len() != want {
            return Err(WriteError::UserRegsCount {
                given: s.user_regs.len(),
                abi: s.regs_abi,
                mask: attr.sample_regs_user,
                needed: want,
            });
        }
        for &r in &s.user_regs {
            b.u64(r);
        }
    }
    if st & sample::STACK_USER != 0 {
        let len = s.user_stack.len();
        if len % 8 != 0 {
            return Err(WriteError::UserStackSize(len));
        }
        if s.stack_dyn_size > len as u64 {
            return Err(WriteError::StackDynSize {
                dyn_size: s.stack_dyn_size,
                len,
            });
        }
        b.u64(len as u64);
        if len != 0 {
            b.bytes(&s.user_stack);
            b.u64(s.stack_dyn_size);
        }
    }
    // The kernel's order after the user stack (TRANSACTION, REGS_INTR and CGROUP, which sit
    // between these, are not supported).
    if st & (sample::WEIGHT | sample::WEIGHT_STRUCT) != 0 {
        b.u64(s.weight);
    }
    let words = [
        (sample::DATA_SRC, s.data_src),
        (sample::PHYS_ADDR, s.phys_addr),
        (sample::DATA_PAGE_SIZE, s.data_page_size),
        (sample::CODE_PAGE_SIZE, s.code_page_size),
    ];
    for (bit, value) in words {
        if st & bit != 0 {
            b.u64(value);
        }
    }
    frame(record::SAMPLE, s.misc, b)
}

/// Prepends the `perf_event_header` to a record body padded to 8 bytes.
fn frame(ty: u32, misc: u16, mut body: Enc) -> Result<Vec<u8>> {
    body.pad_to(8);
    let size = abi::EVENT_HEADER_SIZE + body.0.len();
    if size > MAX_RECORD_SIZE {
        return Err(WriteError::RecordTooLarge {
            record_type: ty,
            size,
        });
    }
    let mut b = Enc(Vec::with_capacity(size));
    b.u32(ty);
    b.u16(misc);
    b.u16(size as u16);
    b.bytes(&body.0);
    Ok(b.0)
}

fn u32_len(n: usize, what: &'static str) -> Result<u32> {
    u32::try_from(n).map_err(|_| WriteError::TooMany { what, count: n })
}

fn check_no_nul(s: &str, what: &'static str) -> Result<()> {
    check_no_nul_bytes(s.as_bytes(), what)
}

fn check_no_nul_bytes(s: &[u8], what: &'static str) -> Result<()> {
    if s.contains(&0) {
        return Err(WriteError::Nul {
            what,
            value: String::from_utf8_lossy(s).into_owned(),
        });
    }
    Ok(())
}

/// A little byte buffer writing host-order integers.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.0.extend_from_slice(v);
    }
    fn zeros(&mut self, n: usize) {
        self.0.resize(self.0.len() + n, 0);
    }
    fn pad_to(&mut self, align: usize) {
        let n = self.0.len().next_multiple_of(align) - self.0.len();
        self.zeros(n);
    }

    /// A NUL-terminated string padded to 8 bytes, as the kernel writes comm and filenames.
    fn record_string(&mut self, s: &str, what: &'static str) -> Result<()> {
        check_no_nul(s, what)?;
        self.bytes(s.as_bytes());
        self.zeros((s.len() + 1).next_multiple_of(8) - s.len());
        Ok(())
    }

    /// perf's `do_write_string`: u32 length (including the NUL and padding), then the
    /// string NUL-padded to [`NAME_ALIGN`].
    fn header_string(&mut self, s: &str, what: &'static str) -> Result<()> {
        check_no_nul(s, what)?;
        let len = (s.len() + 1).next_multiple_of(NAME_ALIGN);
        self.u32(u32_len(len, what)?);
        self.bytes(s.as_bytes());
        self.zeros(len - s.len());
        Ok(())
    }

    /// One BUILD_ID feature entry (`perf_record_header_build_id`): header (type 0 as perf's
    /// table writer leaves it, misc = cpumode | BUILD_ID_SIZE, size), pid, 20 bytes of build
    /// id + its length + 3 reserved bytes, filename NUL-padded to [`NAME_ALIGN`].
    fn build_id_entry(&mut self, e: &BuildIdEntry) -> Result<()> {
        let path = || String::from_utf8_lossy(&e.path).into_owned();
        if e.build_id.len() > MAX_BUILD_ID_SIZE {
            return Err(WriteError::BuildIdTooLong {
                len: e.build_id.len(),
                path: Some(path()),
            });
        }
        check_no_nul_bytes(&e.path, "build id filename")?;
        let name_len = (e.path.len() + 1).next_multiple_of(NAME_ALIGN);
        let size = abi::EVENT_HEADER_SIZE + 4 + 24 + name_len;
        let size = u16::try_from(size).map_err(|_| WriteError::BuildIdPathTooLong(path()))?;
        self.u32(0);
        self.u16(e.misc | abi::MISC_BUILD_ID_SIZE);
        self.u16(size);
        self.i32(e.pid);
        self.bytes(&e.build_id);
        self.zeros(MAX_BUILD_ID_SIZE - e.build_id.len());
        self.u8(e.build_id.len() as u8);
        self.zeros(3);
        self.bytes(&e.path);
        self.zeros(name_len - e.path.len());
        Ok(())
    }

    /// `struct read_format` per `perf_event.h`.
    fn read_values(&mut self, rf: u64, r: &ReadValues) -> Result<()> {
        let unsupported = rf & !SUPPORTED_READ_FORMAT;
        if unsupported != 0 {
            return Err(WriteError::UnsupportedReadFormat(unsupported));
        }
        let counter = |b: &mut Enc, v: &ReadValue| {
            b.u64(v.value);
            if rf & read_format::ID != 0 {
                b.u64(v.id);
            }
            if rf & read_format::LOST != 0 {
                b.u64(v.lost);
            }
        };
        let times = |b: &mut Enc| {
            if rf & read_format::TOTAL_TIME_ENABLED != 0 {
                b.u64(r.time_enabled);
            }
            if rf & read_format::TOTAL_TIME_RUNNING != 0 {
                b.u64(r.time_running);
            }
        };
        if rf & read_format::GROUP != 0 {
            self.u64(r.values.len() as u64);
            times(self);
            for v in &r.values {
                counter(self, v);
            }
        } else {
            let [v] = r.values.as_slice() else {
                return Err(WriteError::ReadValueCount(r.values.len()));
            };
            self.u64(v.value);
            times(self);
            if rf & read_format::ID != 0 {
                self.u64(v.id);
            }
            if rf & read_format::LOST != 0 {
                self.u64(v.lost);
            }
        }
        Ok(())
    }

    /// The `sample_id` trailer, if the attr has sample_id_all.
    fn sample_id(&mut self, attr: &EventAttr, s: &SampleId) {
        if !attr.sample_id_all() {
            return;
        }
        let st = attr.sample_type;
        if st & sample::TID != 0 {
            self.i32(s.pid);
            self.i32(s.tid);
        }
        if st & sample::TIME != 0 {
            self.u64(s.time);
        }
        if st & sample::ID != 0 {
            self.u64(s.id);
        }
        if st & sample::STREAM_ID != 0 {
            self.u64(s.stream_id);
        }
        if st & sample::CPU != 0 {
            self.u32(s.cpu);
            self.u32(0);
        }
        if st & sample::IDENTIFIER != 0 {
            self.u64(s.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_strings_pad_to_64_with_length_first() {
        let mut b = Enc::default();
        b.header_string("abc", "t").unwrap();
        assert_eq!(b.0.len(), 4 + 64);
        assert_eq!(u32::from_ne_bytes(b.0[..4].try_into().unwrap()), 64);
        assert_eq!(&b.0[4..8], b"abc\0");
        assert!(b.0[8..].iter().all(|&x| x == 0));
        let mut b = Enc::default();
        b.header_string(&"x".repeat(64), "t").unwrap();
        assert_eq!(u32::from_ne_bytes(b.0[..4].try_into().unwrap()), 128);
    }

    #[test]
    fn record_strings_pad_to_8_with_a_nul() {
        for (s, len) in [("", 8), ("1234567", 8), ("12345678", 16)] {
            let mut b = Enc::default();
            b.record_string(s, "t").unwrap();
            assert_eq!(b.0.len(), len, "{s:?}");
        }
    }
}
