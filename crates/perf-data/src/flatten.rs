//! Pipe mode and compressed records, turned into a plain stream of records.
//!
//! `perf record -z` writes the ring buffers' records through one zstd stream for the whole
//! session, flushed into PERF_RECORD_COMPRESSED (81) or COMPRESSED2 (83) records, with
//! uncompressed records (FINISHED_ROUND, synthesized ones) between them; a record can start
//! in one chunk and end in the next. Pipe mode (`perf record -o -`) has no sections: the
//! attrs, feature sections, build ids and tracing data arrive as records before the data.
//!
//! Both are read by walking the source once, in file order, and writing every record the
//! record walk knows into an unlinked temporary file: chunks are decompressed into it as
//! they come (so records spanning chunks are whole again, and the uncompressed records stay
//! where they were between them), and pipe mode's header records are taken out and kept.
//! The file is then mapped and walked like any data section: memory stays that of one
//! decompressor and its output buffer. (Offsets in later errors are offsets in that stream.)
//!
//! Bombs: one chunk may decompress to at most the COMPRESSED feature's `mmap_len` (the ring
//! size perf compressed from, and the most perf itself decompresses a chunk to), or
//! [`DEFAULT_CHUNK_LIMIT`] when the file does not say; all of them together to at most
//! [`crate::input::MAX_RATIO`] times the file's size.

use std::io::Write;
use std::path::Path;

use memmap2::Mmap;

use crate::abi::record;
use crate::attr::EventAttr;
use crate::bytes::{c_str, u16_at, u32_at, u64_at, Endian};
use crate::error::{ErrorKind, ReadError};
use crate::input::{output_limit, window_log, Spool};

/// Most bytes one chunk may decompress to when the file has no COMPRESSED feature.
pub const DEFAULT_CHUNK_LIMIT: u64 = 16 << 20;
/// A claimed `mmap_len` is believed up to this (perf's largest ring is far smaller).
const MAX_CHUNK_LIMIT: u64 = 1 << 30;

/// What pipe mode's header records said.
#[derive(Default)]
pub(crate) struct PipeHeader {
    pub attrs: Vec<EventAttr>,
    /// (feature bit, section bytes) of HEADER_FEATURE records.
    pub features: Vec<(u32, Vec<u8>)>,
    /// HEADER_BUILD_ID records, one after another: the BUILD_ID section's layout.
    pub build_ids: Vec<u8>,
    /// (event id, name) from EVENT_UPDATE name records.
    pub names: Vec<(u64, String)>,
    /// (config, name) of tracepoints from HEADER_EVENT_TYPE records.
    pub event_types: Vec<(u64, String)>,
    /// The tracepoints of HEADER_TRACING_DATA.
    pub trace_events: Vec<crate::TraceEvent>,
}

/// The records of a flattened stream.
pub(crate) struct Flat {
    pub map: Mmap,
    pub header: PipeHeader,
    /// True when the source ended inside a record (a killed recorder).
    pub cut_short: bool,
}

/// How to flatten.
pub(crate) struct Source<'a> {
    pub path: &'a Path,
    pub bytes: &'a [u8],
    pub start: u64,
    pub end: u64,
    pub endian: Endian,
    /// Pipe mode: header records are taken out.
    pub pipe: bool,
    /// The COMPRESSED feature's mmap_len, if known.
    pub mmap_len: Option<u64>,
    /// A record cut short at the end is the end, not an error.
    pub allow_cut: bool,
}

/// Walks `source` and writes the records into a temporary file; see the module comment.
pub(crate) fn flatten(source: &Source<'_>, warnings: &mut Vec<String>) -> Result<Flat, ReadError> {
    let e = source.endian;
    let src = source.bytes;
    let err = |offset: u64, kind: ErrorKind| ReadError {
        path: source.path.to_path_buf(),
        offset: Some(offset),
        kind,
        in_record_stream: false,
    };
    let total_limit = output_limit(src.len() as u64);
    let mut out = Spool::new(source.path, total_limit)?;
    let mut header = PipeHeader::default();
    let mut zstd: Option<Zstd> = None;
    let mut aux_warned = false;
    let mut cut_short = false;
    let mut pos = source.start;
    while pos < source.end {
        let p = pos as usize;
        let rtype = u32_at(src, p, e);
        let size = u16_at(src, p + 6, e).map(u64::from);
        let (Some(rtype), Some(size)) = (rtype, size) else {
            if source.allow_cut {
                cut_short = true;
                break;
            }
            return Err(err(
                pos,
                ErrorKind::BadRecordSize {
                    record_type: 0,
                    size: source.end - pos,
                },
            ));
        };
        let bad_size = ErrorKind::BadRecordSize {
            record_type: rtype,
            size,
        };
        if size < 8 {
            return Err(err(pos, bad_size));
        }
        // The payload some records carry after themselves.
        let trailing = match rtype {
            record::AUXTRACE => u64_at(src, p + 8, e).unwrap_or(0),
            record::HEADER_TRACING_DATA if source.pipe => {
                u64::from(u32_at(src, p + 8, e).unwrap_or(0)).next_multiple_of(8)
            }
            _ => 0,
        };
        let next = pos
            .checked_add(size)
            .and_then(|n| n.checked_add(trailing))
            .filter(|&n| n <= source.end);
        let Some(next) = next else {
            if source.allow_cut {
                cut_short = true;
                break;
            }
            return Err(err(pos, bad_size));
        };
        let rec = &src[p..p + size as usize];
        let short = |detail| {
            err(
                pos,
                ErrorKind::ShortRecord {
                    record_type: rtype,
                    detail,
                },
            )
        };
        match rtype {
            record::COMPRESSED | record::COMPRESSED2 => {
                let payload = if rtype == record::COMPRESSED {
                    &rec[8..]
                } else {
                    let data_size = u64_at(rec, 8, e).ok_or_else(|| short("no data size"))?;
                    if data_size > size - 16 {
                        return Err(short("data size past the record"));
                    }
                    &rec[16..16 + data_size as usize]
                };
                let z = match &mut zstd {
                    Some(z) => z,
                    None => {
                        zstd.insert(Zstd::new(src.len() as u64).map_err(|kind| err(pos, kind))?)
                    }
                };
                let limit = source
                    .mmap_len
                    .map_or(DEFAULT_CHUNK_LIMIT, |l| l.clamp(1 << 16, MAX_CHUNK_LIMIT));
                z.chunk(payload, limit, &mut out)
                    .map_err(|kind| err(pos, kind))?;
            }
            record::AUXTRACE => {
                if !aux_warned {
                    aux_warned = true;
                    warnings.push(aux_warning(source.path));
                }
            }
            record::HEADER_TRACING_DATA if source.pipe => {
                // The payload follows the record: `trailing` bytes, the u32 size padded.
                let len = u64::from(u32_at(src, p + 8, e).unwrap_or(0));
                let start = pos + size;
                let bytes = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(start + len).ok())
                    .and_then(|(from, to)| src.get(from..to))
                    .unwrap_or_default();
                let events = crate::tracing::tracepoint_events(bytes, start, source.path, warnings);
                header
                    .event_types
                    .extend(events.iter().map(|e| (e.id, e.full_name())));
                header.trace_events.extend(events);
            }
            record::HEADER_ATTR if source.pipe => {
                let body = &rec[8..];
                let attr_size = match u32_at(body, 4, e) {
                    Some(0) => 64,
                    Some(s) => s as usize,
                    None => return Err(short("no attr size")),
                };
                if attr_size < 64 || attr_size > body.len() {
                    return Err(short("attr size past the record"));
                }
                let mut attr = EventAttr::decode(&body[..attr_size], e);
                attr.ids = body[attr_size..]
                    .chunks_exact(8)
                    .filter_map(|c| u64_at(c, 0, e))
                    .collect();
                header.attrs.push(attr);
            }
            record::HEADER_EVENT_TYPE if source.pipe => {
                if let Some(config) = u64_at(rec, 8, e) {
                    let name = String::from_utf8_lossy(c_str(&rec[16..])).into_owned();
                    header.event_types.push((config, name));
                }
            }
            record::HEADER_BUILD_ID if source.pipe => header.build_ids.extend_from_slice(rec),
            record::HEADER_FEATURE if source.pipe => {
                let bit = u64_at(rec, 8, e).ok_or_else(|| short("no feature id"))?;
                if bit < 256 {
                    header.features.push((bit as u32, rec[16..].to_vec()));
                }
            }
            record::EVENT_UPDATE => {
                // struct perf_record_event_update: type, id, then for type NAME (2) a
                // NUL-terminated name.
                if u64_at(rec, 8, e) == Some(EVENT_UPDATE_NAME) {
                    if let Some(id) = u64_at(rec, 16, e) {
                        let name = String::from_utf8_lossy(c_str(&rec[24..])).into_owned();
                        header.names.push((id, name));
                    }
                }
                write(&mut out, rec).map_err(|kind| err(pos, kind))?;
            }
            _ => write(&mut out, rec).map_err(|kind| err(pos, kind))?,
        }
        pos = next;
    }
    if let Some(z) = &mut zstd {
        z.finish(&mut out).map_err(|kind| err(pos, kind))?;
    }
    if out.exceeded() {
        return Err(err(pos, bomb_total(total_limit)));
    }
    Ok(Flat {
        map: out.finish()?,
        header,
        cut_short,
    })
}

/// PERF_EVENT_UPDATE__NAME (enum perf_event_update_id: UNIT 0, SCALE 1, NAME 2, CPUS 3).
const EVENT_UPDATE_NAME: u64 = 2;

pub(crate) fn aux_warning(path: &Path) -> String {
    format!(
        "{}: AUX area data (Intel PT, CoreSight, ARM SPE) is skipped, not decoded; samples are read",
        path.display()
    )
}

fn bomb_total(limit: u64) -> ErrorKind {
    ErrorKind::Bomb {
        what: "the compressed records together".into(),
        limit,
    }
}

fn write(out: &mut Spool, bytes: &[u8]) -> Result<(), ErrorKind> {
    out.write_all(bytes).map_err(|e| {
        if out.exceeded() {
            bomb_total(out.limit())
        } else {
            ErrorKind::TempFile(e)
        }
    })
}

/// The session's one zstd stream, fed chunk by chunk.
struct Zstd {
    decoder: zstd::stream::raw::Decoder<'static>,
    buf: Vec<u8>,
}

impl Zstd {
    fn new(input_len: u64) -> Result<Zstd, ErrorKind> {
        let fail = |e: std::io::Error| ErrorKind::Decompression {
            format: "zstd",
            detail: e.to_string(),
        };
        let mut decoder = zstd::stream::raw::Decoder::new().map_err(fail)?;
        decoder
            .set_parameter(zstd::zstd_safe::DParameter::WindowLogMax(window_log(
                input_len,
            )))
            .map_err(fail)?;
        Ok(Zstd {
            decoder,
            buf: vec![0; 1 << 16],
        })
    }

    /// Decompresses one chunk into `out`: all of it, since perf flushes the stream at the end
    /// of every chunk.
    fn chunk(&mut self, payload: &[u8], limit: u64, out: &mut Spool) -> Result<(), ErrorKind> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let mut input = InBuffer::around(payload);
        let mut produced = 0u64;
        loop {
            let before = input.pos;
            let mut output = OutBuffer::around(&mut self.buf[..]);
            self.decoder
                .run(&mut input, &mut output)
                .map_err(|e| ErrorKind::Decompression {
                    format: "zstd",
                    detail: e.to_string(),
                })?;
            let n = output.pos();
            produced += n as u64;
            if produced > limit {
                return Err(ErrorKind::Bomb {
                    what: "a compressed chunk".into(),
                    limit,
                });
            }
            write(out, &self.buf[..n])?;
            // Done when the input is used up and the decoder had no more to give.
            let full = n == self.buf.len();
            if (input.pos == payload.len() && !full) || (n == 0 && input.pos == before) {
                return Ok(());
            }
        }
    }

    /// The end of the data: anything the decoder still holds.
    fn finish(&mut self, out: &mut Spool) -> Result<(), ErrorKind> {
        self.chunk(&[], DEFAULT_CHUNK_LIMIT, out)
    }
}
