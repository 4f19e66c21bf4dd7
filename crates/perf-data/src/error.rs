//! Errors of the reader. Every error names the file, and the byte offset when there is one.

use std::fmt;
use std::path::PathBuf;

/// What went wrong; [`ReadError`] adds the file and offset.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// The file could not be opened or mapped.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// None of the inputs cpiflame reads: no perf.data magic (`PERFILE2` or its byte-swapped
    /// form), and neither `perf script` text nor folded stacks. `seen` is what the input
    /// starts with (see `input::unrecognised`).
    #[error("not perf.data, perf script text or folded stacks ({seen})")]
    UnknownFormat { seen: String },
    /// `perf script` text printed without the event field (`-F comm,tid,ip,sym`): a sample
    /// line is told from a frame or a folded line by its event, so it is refused by name.
    #[error("perf script text without the event field (sample line {line:?}): print it with at least -F comm,tid,event,ip,sym (perf script's default fields have them)")]
    ScriptWithoutEvent { line: String },
    /// perf.data written on a big-endian machine (magic `2ELIFREP`). The reader's byte
    /// order is a parameter throughout, but such a file needs more than that: perf reverses
    /// the bits of the attr's bitfield word for it, the samples' registers and stack copies
    /// are of an architecture the unwinder does not know, and no such recording has been
    /// read here to check the rest against. Refused by name rather than misread.
    #[error("big-endian perf.data (written on a big-endian machine): not supported")]
    BigEndian,
    /// The first perf.data format (magic `PERFFILE`, perf of Linux 2.6.3x).
    #[error("perf.data format version 1 (magic PERFFILE) is not supported; convert it with a newer perf (perf inject -i OLD -o NEW)")]
    VersionOne,
    /// The file is shorter than the structure that should be at this offset.
    #[error("file ends inside the {what} ({needed} bytes needed, {available} available)")]
    Truncated {
        what: &'static str,
        needed: u64,
        available: u64,
    },
    /// A section of the header points outside the file.
    #[error(
        "{what} section [{offset:#x}, +{size:#x}) lies outside the file ({file_len:#x} bytes)"
    )]
    SectionOutsideFile {
        what: String,
        offset: u64,
        size: u64,
        file_len: u64,
    },
    /// The header's attr size is smaller than the first published perf_event_attr.
    #[error("attr size {0} in the header is not plausible (80 to 4096 expected)")]
    BadAttrSize(u64),
    /// No event attrs: samples cannot be decoded.
    #[error("the file declares no events")]
    NoAttrs,
    /// Several events whose records cannot be told apart.
    #[error("events have different sample layouts but event {0} has no PERF_SAMPLE_IDENTIFIER")]
    AmbiguousIds(usize),
    /// A record header with a size below 8 or past the end of the data.
    #[error("bad record size {size} (record type {record_type})")]
    BadRecordSize { record_type: u32, size: u64 },
    /// The record is shorter than its fields say.
    #[error("record type {record_type} is cut short: {detail}")]
    ShortRecord {
        record_type: u32,
        detail: &'static str,
    },
    /// A sample whose id matches no event of the file.
    #[error("sample id {0} belongs to no event in the header")]
    UnknownId(u64),
    /// A sample_type bit this reader does not know how to skip.
    #[error("event {attr} uses sample_type bits {bits:#x} that this reader cannot decode")]
    UnsupportedSampleType { attr: usize, bits: u64 },
    /// A compressed record in a file whose header has no COMPRESSED feature: where it came
    /// from is unknown, so its format is.
    #[error("compressed record (type {0}) in a file without the COMPRESSED feature")]
    UnexpectedCompressed(u32),
    /// Compressed data that does not decompress.
    #[error("{format} data does not decompress: {detail}")]
    Decompression {
        format: &'static str,
        detail: String,
    },
    /// Compressed data that decompresses to more than a real recording would.
    #[error("{what} decompresses to more than {limit} bytes: refused as a decompression bomb")]
    Bomb { what: String, limit: u64 },
    /// The temporary file that holds standard input or decompressed data.
    #[error("temporary file: {0}")]
    TempFile(std::io::Error),
}

/// Bytes as hex digits ("68656c6c6f2c2074").
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An error while reading a perf.data file: the file, the offset at fault if known, and what.
#[derive(Debug)]
pub struct ReadError {
    pub path: PathBuf,
    pub offset: Option<u64>,
    pub kind: ErrorKind,
    /// True when `offset` is in the records as read from a pipe-mode or compressed file
    /// (decompressed, pipe header records taken out), not in the file's bytes.
    pub in_record_stream: bool,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) if self.in_record_stream => write!(
                f,
                "{}: offset {offset:#x} of the decompressed records: {}",
                self.path.display(),
                self.kind
            ),
            Some(offset) => write!(
                f,
                "{}: offset {offset:#x}: {}",
                self.path.display(),
                self.kind
            ),
            None => write!(f, "{}: {}", self.path.display(), self.kind),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}
