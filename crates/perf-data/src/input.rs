//! The one way every input is opened: a path or `-` (standard input), compressed or not,
//! handed back as mapped bytes.
//!
//! perf.data, folded and `perf script` text all arrive the same ways: a plain file (mapped
//! as it is), standard input (`perf record -o - ... | cpiflame render -`: spooled to an
//! unlinked temporary file, since a pipe can be read only once and the readers want to look
//! at the start before choosing), or a whole file compressed with gzip, zstd or xz (told apart
//! by their magic bytes, never by the name: decompressed into an unlinked temporary file).
//! Either way the reader gets one `&[u8]` over a map, and memory stays that of the page cache.
//!
//! A decompression bomb (a small input that decompresses to far more than any real recording
//! would) is refused: the output may be at most [`MAX_RATIO`] times the input (or
//! [`MIN_LIMIT`], for tiny inputs). Real perf.data files compress 5 to 50 times.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{Mmap, MmapMut};

use crate::error::{ErrorKind, ReadError};

/// Most bytes a compressed input may decompress to, per byte of input.
pub const MAX_RATIO: u64 = 500;
/// Most bytes a tiny compressed input may decompress to, whatever its size.
pub const MIN_LIMIT: u64 = 32 << 20;
/// The largest zstd window accepted for inputs up to this size: the decoder allocates the
/// window a frame claims, so a small hostile input must not make it allocate a large one.
/// zstd levels up to 19 (perf's `-z` takes 1 to 22) use windows of at most 8 MiB.
const SMALL_MAX_WINDOW: u64 = 8 << 20;
/// The most memory the xz decoder may ask for: `xz -9` asks 65 MiB whatever the input's
/// size (its dictionary), and real files are compressed so. liblzma allocates the
/// dictionary up front but only pages written to (at most the output) become resident.
const XZ_MEMLIMIT: u64 = 128 << 20;
/// The largest zstd window accepted at all (zstd's level 22).
const MAX_WINDOW: u64 = 128 << 20;

/// How an input was compressed as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
    Xz,
}

impl Compression {
    /// The format of `bytes`, from their magic, if they are compressed ([`InputKind::detect`]
    /// decides).
    pub fn detect(bytes: &[u8]) -> Option<Compression> {
        match InputKind::from_magic(bytes) {
            Some(InputKind::Compressed(c)) => Some(c),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
        }
    }
}

/// What an input holds, decided from its content (never its name). This is the one place
/// that decides it: the opener (decompression), the perf.data reader (magic, pipe mode), and
/// the loaders and commands that choose a reader all ask [`InputKind::detect`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A whole file compressed with gzip, zstd or xz (as `open_input` meets it, before
    /// decompressing; an opened [`Input`]'s bytes are decompressed once).
    Compressed(Compression),
    /// perf.data written on a little-endian machine: magic `PERFILE2`, header size 104.
    PerfData,
    /// Pipe-mode perf.data (`perf record -o -`): magic `PERFILE2`, header size 16.
    PerfDataPipe,
    /// perf.data written on a big-endian machine (s390x, ppc64, sparc64): perf's magic read
    /// byte-swapped, `2ELIFREP`, file or pipe mode. Recognised, and refused with one line
    /// (see [`ErrorKind::BigEndian`]).
    PerfDataBigEndian,
    /// The first perf.data format (magic `PERFFILE`): refused by the reader, naming it.
    PerfDataVersion1,
    /// `perf script` text (with or without `--header`).
    PerfScript,
    /// Folded stacks (`frame;frame count`, one or two counts).
    Folded,
    /// None of these (`perf script` text without its event field included): handed to the
    /// perf.data reader, whose one-line error says what was seen (`unrecognised`).
    Unknown,
}

/// How many bytes of an input [`InputKind::detect`] looks at: enough for a first line whole
/// (a text file whose first line does not end in a count is not folded).
pub const DETECT_BYTES: usize = 4096;

impl InputKind {
    /// The kind of an input whose bytes (all of them, or at least the first
    /// [`DETECT_BYTES`]) are `bytes`: magic numbers first, then the text heuristics of
    /// `cpiflame_profile` (a `perf script` sample header, then a folded line).
    pub fn detect(bytes: &[u8]) -> InputKind {
        if let Some(kind) = InputKind::from_magic(bytes) {
            return kind;
        }
        let n = bytes.len().min(DETECT_BYTES);
        let mut probe = bytes[..n].to_vec();
        // The whole input was seen: its last line is complete even without a newline.
        if n > 0 && n < DETECT_BYTES && !probe.ends_with(b"\n") {
            probe.push(b'\n');
        }
        if cpiflame_profile::looks_like_perf_script(&probe) {
            InputKind::PerfScript
        } else if cpiflame_profile::perf_script_without_event(&probe).is_some() {
            // Its sample lines (`sh  1456`) would pass for folded stacks.
            InputKind::Unknown
        } else if cpiflame_profile::looks_folded(&probe) {
            InputKind::Folded
        } else {
            InputKind::Unknown
        }
    }

    /// The kinds told by their magic bytes alone: compressed data and perf.data in its forms.
    pub(crate) fn from_magic(bytes: &[u8]) -> Option<InputKind> {
        // perf's pipe header is the magic and the header's size, 16, in the writer's order.
        let size_is_16 = |to_u64: fn([u8; 8]) -> u64| {
            bytes
                .get(8..16)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .is_some_and(|b| to_u64(b) == 16)
        };
        if bytes.starts_with(&[0x1f, 0x8b]) {
            Some(InputKind::Compressed(Compression::Gzip))
        } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(InputKind::Compressed(Compression::Zstd))
        } else if bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(InputKind::Compressed(Compression::Xz))
        } else if bytes.starts_with(crate::abi::MAGIC_LE) {
            Some(if size_is_16(u64::from_le_bytes) {
                InputKind::PerfDataPipe
            } else {
                InputKind::PerfData
            })
        } else if bytes.starts_with(crate::abi::MAGIC_BE) {
            Some(InputKind::PerfDataBigEndian)
        } else if bytes.starts_with(b"PERFFILE") {
            Some(InputKind::PerfDataVersion1)
        } else {
            None
        }
    }

    /// True for the kinds the perf.data reader takes (or refuses by name): perf.data in any
    /// form, and what no other reader recognises.
    pub fn is_perf_data(self) -> bool {
        !matches!(self, InputKind::PerfScript | InputKind::Folded)
    }

    /// What the kind is called in messages.
    pub fn name(self) -> &'static str {
        match self {
            InputKind::Compressed(c) => c.name(),
            InputKind::PerfData => "perf.data",
            InputKind::PerfDataPipe => "pipe-mode perf.data",
            InputKind::PerfDataBigEndian => "big-endian perf.data",
            InputKind::PerfDataVersion1 => "perf.data version 1",
            InputKind::PerfScript => "perf script text",
            InputKind::Folded => "folded text",
            InputKind::Unknown => "unknown",
        }
    }
}

/// The error for an input of no known kind ([`InputKind::Unknown`]): `perf script` text
/// without its event field named as such, anything else by what it starts with: its first
/// line when that is text (cut at 60 characters), else its first 8 bytes in hex.
pub(crate) fn unrecognised(bytes: &[u8]) -> ErrorKind {
    let probe = &bytes[..bytes.len().min(DETECT_BYTES)];
    if let Some(line) = cpiflame_profile::perf_script_without_event(probe) {
        let line = line.to_string();
        return ErrorKind::ScriptWithoutEvent { line };
    }
    let first = probe.split(|&b| b == b'\n').next().unwrap_or_default();
    let text = match std::str::from_utf8(first) {
        Ok(t) => Some(t),
        // A character cut off at the probe's end.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&first[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    let seen = match text.filter(|t| !t.chars().any(|c| c.is_control() && c != '\t')) {
        Some(t) if t.chars().count() > 60 => {
            format!("first line {:?}...", t.chars().take(60).collect::<String>())
        }
        Some(t) => format!("first line {t:?}"),
        None => format!(
            "first bytes {}",
            crate::error::hex(&bytes[..bytes.len().min(8)])
        ),
    };
    ErrorKind::UnknownFormat { seen }
}

/// An opened input: its bytes (decompressed) over a map.
pub struct Input {
    path: PathBuf,
    map: Mmap,
    compression: Option<Compression>,
    from_stdin: bool,
}

impl Input {
    /// The input's bytes, decompressed.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The path as given, or `<stdin>`: what errors name.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the input was compressed as a whole, if it was.
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// What the (decompressed) bytes hold: [`InputKind::detect`] of them.
    pub fn kind(&self) -> InputKind {
        InputKind::detect(&self.map)
    }

    /// True when the input was standard input.
    pub fn from_stdin(&self) -> bool {
        self.from_stdin
    }

    /// Wraps bytes already in memory (the fuzz targets' way in); they are copied into an
    /// anonymous map and decompressed like a file's.
    pub fn from_bytes(path: impl AsRef<Path>, bytes: &[u8]) -> Result<Input, ReadError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |e: io::Error| error(&path, None, e.into());
        let mut map = MmapMut::map_anon(bytes.len()).map_err(io_err)?;
        map.copy_from_slice(bytes);
        let map = map.make_read_only().map_err(io_err)?;
        decompress_if_needed(path, map, false)
    }

    pub(crate) fn into_parts(self) -> (PathBuf, Mmap) {
        (self.path, self.map)
    }
}

/// Opens `path` (`-`: standard input) and maps its content, decompressed.
pub fn open_input(path: impl AsRef<Path>) -> Result<Input, ReadError> {
    let path = path.as_ref();
    if path.as_os_str() == "-" {
        let name = PathBuf::from("<stdin>");
        let spooled = spool(&name, io::stdin().lock(), u64::MAX, None)?;
        return decompress_if_needed(name, spooled, true);
    }
    let path = path.to_path_buf();
    let file = File::open(&path).map_err(|e| error(&path, None, e.into()))?;
    // SAFETY: the map is read-only; a file truncated under us while mapped would SIGBUS,
    // which is the same contract perf itself has with its input.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| error(&path, None, e.into()))?;
    decompress_if_needed(path, map, false)
}

fn error(path: &Path, offset: Option<u64>, kind: ErrorKind) -> ReadError {
    ReadError {
        path: path.to_path_buf(),
        offset,
        kind,
        in_record_stream: false,
    }
}

/// The output limit for `input_len` compressed bytes.
pub(crate) fn output_limit(input_len: u64) -> u64 {
    input_len.saturating_mul(MAX_RATIO).max(MIN_LIMIT)
}

/// The largest zstd window (as a power of two) accepted for an input of `input_len` bytes.
pub(crate) fn window_log(input_len: u64) -> u32 {
    let window = input_len.clamp(SMALL_MAX_WINDOW, MAX_WINDOW);
    64 - (window - 1).leading_zeros()
}

fn decompress_if_needed(path: PathBuf, map: Mmap, from_stdin: bool) -> Result<Input, ReadError> {
    let Some(compression) = Compression::detect(&map) else {
        return Ok(Input {
            path,
            map,
            compression: None,
            from_stdin,
        });
    };
    let limit = output_limit(map.len() as u64);
    let bomb = Some((compression.name(), limit));
    let out = match compression {
        Compression::Gzip => spool(
            &path,
            flate2::read::MultiGzDecoder::new(&map[..]),
            limit,
            bomb,
        ),
        Compression::Zstd => {
            let log = window_log(map.len() as u64);
            let decoder = zstd::stream::read::Decoder::with_buffer(&map[..])
                .and_then(|mut d| d.window_log_max(log).map(|()| d))
                .map_err(|e| {
                    error(
                        &path,
                        None,
                        ErrorKind::Decompression {
                            format: "zstd",
                            detail: e.to_string(),
                        },
                    )
                })?;
            spool(&path, decoder, limit, bomb)
        }
        Compression::Xz => {
            // Several concatenated streams, as `xz` reads them; the decoder's memory (the
            // dictionary the stream claims) is capped.
            let stream =
                xz2::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, xz2::stream::CONCATENATED)
                    .map_err(|e| {
                        error(
                            &path,
                            None,
                            ErrorKind::Decompression {
                                format: "xz",
                                detail: e.to_string(),
                            },
                        )
                    })?;
            spool(
                &path,
                xz2::read::XzDecoder::new_stream(&map[..], stream),
                limit,
                bomb,
            )
        }
    }?;
    Ok(Input {
        path,
        map: out,
        compression: Some(compression),
        from_stdin,
    })
}

/// A counter that keeps temporary file names of one process apart.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new temporary file, already unlinked: it goes away with the process however that ends.
pub(crate) fn unlinked_temp_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = dir.join(format!(".cpiflame-{pid}-{n}.tmp"));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&name)
        {
            Ok(file) => {
                let _ = std::fs::remove_file(&name);
                return Ok(file);
            }
            // Left behind by an earlier process with our pid: try the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1_000_000 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Bytes written to an unlinked temporary file, at most `limit` of them, then mapped.
pub(crate) struct Spool {
    path: PathBuf,
    file: BufWriter<File>,
    written: u64,
    limit: u64,
    exceeded: bool,
}

impl Spool {
    pub(crate) fn new(path: &Path, limit: u64) -> Result<Spool, ReadError> {
        let file = unlinked_temp_file().map_err(|e| error(path, None, ErrorKind::TempFile(e)))?;
        Ok(Spool {
            path: path.to_path_buf(),
            file: BufWriter::with_capacity(1 << 16, file),
            written: 0,
            limit,
            exceeded: false,
        })
    }

    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// True when a write was refused for going past the limit.
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// The error for a failed copy into the spool: a bomb if the limit was hit.
    fn failure(&self, e: io::Error, bomb: Option<(&'static str, u64)>) -> ReadError {
        match bomb {
            Some((format, limit)) if self.exceeded => error(
                &self.path,
                Some(0),
                ErrorKind::Bomb {
                    what: format!("the {format} data"),
                    limit,
                },
            ),
            Some((format, _)) => error(
                &self.path,
                None,
                ErrorKind::Decompression {
                    format,
                    detail: e.to_string(),
                },
            ),
            None => error(&self.path, None, e.into()),
        }
    }

    /// Maps what was written.
    pub(crate) fn finish(self) -> Result<Mmap, ReadError> {
        let path = self.path.clone();
        let file = self
            .file
            .into_inner()
            .map_err(|e| error(&path, None, ErrorKind::TempFile(e.into_error())))?;
        // SAFETY: the file is unlinked and ours alone: nothing else can change it.
        unsafe { Mmap::map(&file) }.map_err(|e| error(&path, None, ErrorKind::TempFile(e)))
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written + buf.len() as u64 > self.limit {
            self.exceeded = true;
            return Err(io::Error::other("decompression limit"));
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Copies `reader` into a spool of at most `limit` bytes and maps it.
fn spool(
    path: &Path,
    mut reader: impl Read,
    limit: u64,
    bomb: Option<(&'static str, u64)>,
) -> Result<Mmap, ReadError> {
    let mut out = Spool::new(path, limit)?;
    match io::copy(&mut reader, &mut out) {
        Ok(_) => out.finish(),
        Err(e) => Err(out.failure(e, bomb)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A perf.data file header's first 16 bytes: magic and header size, in `magic`'s order.
    fn header(magic: &[u8; 8], size: [u8; 8]) -> Vec<u8> {
        let mut b = magic.to_vec();
        b.extend_from_slice(&size);
        b.extend_from_slice(&[0; 88]);
        b
    }

    #[test]
    fn compressed_kinds_by_magic() {
        let gzip = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0];
        let zstd = [0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58];
        let xz = [0xfd, b'7', b'z', b'X', b'Z', 0, 0, 4];
        for (bytes, c) in [
            (&gzip[..], Compression::Gzip),
            (&zstd[..], Compression::Zstd),
            (&xz[..], Compression::Xz),
        ] {
            assert_eq!(InputKind::detect(bytes), InputKind::Compressed(c));
            assert_eq!(Compression::detect(bytes), Some(c));
        }
        // xz's magic is six bytes: five are not enough.
        assert_eq!(InputKind::detect(&xz[..5]), InputKind::Unknown);
        assert_eq!(Compression::detect(b"PERFILE2"), None);
    }

    /// What no reader takes is named by what it starts with (issue 41, item 5); perf script
    /// text without its event field by name, not taken for folded stacks.
    #[test]
    fn unrecognised_inputs_say_what_was_seen() {
        let seen = |bytes: &[u8]| unrecognised(bytes).to_string();
        let unknown = "not perf.data, perf script text or folded stacks";
        assert_eq!(
            seen(b"# cpiflame\n\ntext"),
            format!("{unknown} (first line \"# cpiflame\")")
        );
        assert_eq!(seen(b"hello"), format!("{unknown} (first line \"hello\")"));
        let long = "x".repeat(100);
        assert_eq!(
            seen(long.as_bytes()),
            format!("{unknown} (first line \"{}\"...)", &long[..60])
        );
        assert_eq!(
            seen(&[0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4]),
            format!("{unknown} (first bytes deadbeef00010203)")
        );
        let script = b"sh  1456 \n\t           1462a handle_amd\n";
        assert_eq!(InputKind::detect(script), InputKind::Unknown);
        assert!(seen(script)
            .starts_with("perf script text without the event field (sample line \"sh  1456\")"));
    }

    #[test]
    fn perf_data_in_each_form() {
        let file = header(b"PERFILE2", 104u64.to_le_bytes());
        assert_eq!(InputKind::detect(&file), InputKind::PerfData);
        let pipe = header(b"PERFILE2", 16u64.to_le_bytes());
        assert_eq!(InputKind::detect(&pipe[..16]), InputKind::PerfDataPipe);
        // perf's magic written by a big-endian machine reads byte-swapped; file or pipe.
        let be = header(b"2ELIFREP", 104u64.to_be_bytes());
        assert_eq!(InputKind::detect(&be), InputKind::PerfDataBigEndian);
        let be_pipe = header(b"2ELIFREP", 16u64.to_be_bytes());
        assert_eq!(InputKind::detect(&be_pipe), InputKind::PerfDataBigEndian);
        assert_eq!(
            InputKind::detect(b"PERFFILE\x68\0\0\0\0\0\0\0"),
            InputKind::PerfDataVersion1
        );
        // A magic alone, without its size: still perf.data (the reader says it is cut short).
        assert_eq!(InputKind::detect(b"PERFILE2"), InputKind::PerfData);
        for kind in [
            InputKind::PerfData,
            InputKind::PerfDataPipe,
            InputKind::PerfDataBigEndian,
            InputKind::PerfDataVersion1,
            InputKind::Unknown,
        ] {
            assert!(kind.is_perf_data(), "{kind:?}");
        }
    }

    #[test]
    fn text_kinds() {
        let script = b"app 1/1 1.0: cycles:\n\t 10 f (/bin/app)\n\n";
        assert_eq!(InputKind::detect(script), InputKind::PerfScript);
        // Only perf script --header's comments (a recording without samples).
        let header = b"# ========\n# captured on    : today\n# ========\n#\n";
        assert_eq!(InputKind::detect(header), InputKind::PerfScript);
        assert_eq!(InputKind::detect(b"app;f;g 3\n"), InputKind::Folded);
        // The whole input seen: a last line without its newline is complete.
        assert_eq!(InputKind::detect(b"app;f;g 3"), InputKind::Folded);
        assert_eq!(InputKind::detect(b"app;f 3 7\n"), InputKind::Folded);
        assert!(!InputKind::Folded.is_perf_data());
        assert!(!InputKind::PerfScript.is_perf_data());
    }

    #[test]
    fn anything_else_is_unknown() {
        assert_eq!(InputKind::detect(b""), InputKind::Unknown);
        assert_eq!(
            InputKind::detect(b"\x7fELF\x02\x01\x01"),
            InputKind::Unknown
        );
        assert_eq!(InputKind::detect(b"hello world\n"), InputKind::Unknown);
        // A long first line cut by the probe: folded's guess (the reader says what is wrong).
        let long = vec![b'a'; DETECT_BYTES + 10];
        assert_eq!(InputKind::detect(&long), InputKind::Folded);
    }

    #[test]
    fn an_opened_input_is_detected_after_decompressing() {
        use std::io::Write as _;
        let folded = b"app;f;g 3\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(folded).unwrap();
        let gz = gz.finish().unwrap();
        let input = Input::from_bytes("x.gz", &gz).unwrap();
        assert_eq!(input.compression(), Some(Compression::Gzip));
        assert_eq!(input.kind(), InputKind::Folded);
    }
}
