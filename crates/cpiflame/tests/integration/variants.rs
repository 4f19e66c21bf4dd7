//! The command line on the inputs users bring: `perf record -o - | cpiflame render -`,
//! pipe streams and compressed files named by path or given on standard input, and the
//! real files of other machines (crates/perf-data/tests/wild).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cpiflame_testkit::perf_works;

fn cpiflame(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        // Written from a thread: the child may fill its stdout before reading all of stdin.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    child.wait_with_output().unwrap()
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(String::from).collect();
    v.sort();
    v
}

/// Sum of the last count of every folded line.
fn folded_total(s: &str) -> u64 {
    s.lines()
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cpiflame-cli-variants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const WORK: &[&str] = &[
    "--",
    "sh",
    "-c",
    "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
];

fn perf(args: &[&str]) -> Vec<u8> {
    let out = Command::new("perf")
        .args(args)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "perf {args:?}");
    out.stdout
}

/// The README's command: perf writes pipe mode into a pipe, cpiflame draws from it.
#[test]
fn perf_record_to_a_pipe_renders_from_standard_input() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    let svg = tmp("pipe.svg");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "perf record -q -o - -e cpu-clock -g -- sh -c '{}' 2>/dev/null | '{}' render - > '{}'",
            WORK[3],
            env!("CARGO_BIN_EXE_cpiflame"),
            svg.display()
        ))
        .status()
        .unwrap();
    assert!(status.success());
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<?xml") || svg.starts_with("<svg"),
        "{}",
        &svg[..svg.len().min(200)]
    );
    assert!(svg.contains("cpu-clock"));
}

/// A file and the same recording as a pipe stream (`perf inject -i FILE -o -`), the
/// stream given on standard input: the same folded stacks.
#[test]
fn a_pipe_stream_folds_as_its_file_twin() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    let plain = tmp("plain.data");
    let p = plain.to_str().unwrap();
    let mut args = vec!["record", "-q", "-e", "cpu-clock", "-g", "-o", p];
    args.extend(WORK);
    perf(&args);
    let pipe = perf(&["inject", "-i", p, "-o", "-"]);
    let from_file = ok(&cpiflame(&["fold", p], None), "fold FILE");
    let from_pipe = ok(&cpiflame(&["fold", "-"], Some(&pipe)), "fold - < pipe");
    assert!(!from_file.is_empty());
    assert_eq!(sorted_lines(&from_pipe), sorted_lines(&from_file));
}

/// The uncompressed twin of a `perf record -z` file, spliced here (perf 6.1's `perf inject`
/// copies compressed records through): each COMPRESSED record replaced by what its piece
/// of the session's zstd stream decompresses to, the data section resized, the feature
/// table without the COMPRESSED entry, every feature section moved by the change.
fn uncompressed_twin(z: &[u8]) -> Vec<u8> {
    use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (data_off, data_size) = (u64_at(z, 40) as usize, u64_at(z, 48) as usize);
    let data_end = data_off + data_size;
    let mut decoder = Decoder::new().unwrap();
    let mut data = Vec::new();
    let mut pos = data_off;
    while pos < data_end {
        let rtype = u32::from_le_bytes(z[pos..pos + 4].try_into().unwrap());
        let size = u16::from_le_bytes([z[pos + 6], z[pos + 7]]) as usize;
        if rtype == 81 {
            let payload = &z[pos + 8..pos + size];
            let mut input = InBuffer::around(payload);
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let mut out = OutBuffer::around(&mut buf[..]);
                decoder.run(&mut input, &mut out).unwrap();
                let n = out.pos();
                data.extend_from_slice(&buf[..n]);
                if input.pos == payload.len() && n < buf.len() {
                    break;
                }
            }
        } else {
            data.extend_from_slice(&z[pos..pos + size]);
        }
        pos += size;
    }
    let mut bits = u64_at(z, 72);
    assert!(
        bits & (1 << 27) != 0,
        "a -z file has the COMPRESSED feature"
    );
    let n_features = [72, 80, 88, 96]
        .iter()
        .map(|&at| u64_at(z, at).count_ones() as usize)
        .sum::<usize>();
    let skip = (bits & ((1 << 27) - 1)).count_ones() as usize;
    bits &= !(1 << 27);
    let table = &z[data_end..data_end + 16 * n_features];
    let sections_start = data_end + 16 * n_features;
    let shift = data.len() as i64 - data_size as i64 - 16;
    let mut out = z[..data_off].to_vec();
    out[48..56].copy_from_slice(&(data.len() as u64).to_le_bytes());
    out[72..80].copy_from_slice(&bits.to_le_bytes());
    out.extend(&data);
    for k in (0..n_features).filter(|&k| k != skip) {
        let off = u64_at(table, 16 * k) as i64 + shift;
        out.extend((off as u64).to_le_bytes());
        out.extend(&table[16 * k + 8..16 * k + 16]);
    }
    out.extend(&z[sections_start..]);
    out
}

/// `perf record -z` folds as its uncompressed twin, which perf script counts as the
/// compressed file; the same file compressed whole with zstd and given on standard input
/// folds the same.
#[test]
fn a_compressed_recording_folds_as_its_uncompressed_twin() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    let z = tmp("z.data");
    let zp = z.to_str().unwrap();
    // A one-page ring at 20 kHz: the stream comes in about a hundred chunks, with
    // FINISHED_ROUNDs between them.
    let mut args = vec![
        "record",
        "-q",
        "-z",
        "-m",
        "1",
        "-F",
        "20000",
        "-e",
        "cpu-clock",
        "-g",
        "-o",
        zp,
    ];
    args.extend(WORK);
    perf(&args);
    let script = perf(&["script", "-F", "event", "-G", "-i", zp]);
    let perf_samples = String::from_utf8_lossy(&script)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count() as u64;
    let folded = ok(&cpiflame(&["fold", zp], None), "fold z.data");
    assert!(perf_samples > 0);
    assert_eq!(folded_total(&folded), perf_samples);
    let twin = tmp("z-twin.data");
    std::fs::write(&twin, uncompressed_twin(&std::fs::read(&z).unwrap())).unwrap();
    let tp = twin.to_str().unwrap();
    assert_eq!(
        perf(&["script", "-F", "event", "-G", "-i", tp]),
        script,
        "perf reads the twin"
    );
    let twin_folded = ok(&cpiflame(&["fold", tp], None), "fold twin");
    assert_eq!(sorted_lines(&twin_folded), sorted_lines(&folded));
    let whole = zstd_file(&z);
    let again = ok(
        &cpiflame(&["fold", "-"], Some(&whole)),
        "fold - < z.data.zst",
    );
    assert_eq!(sorted_lines(&again), sorted_lines(&folded));
}

/// `path` compressed whole with zstd (the library the reader uses for `-z`, writing here).
fn zstd_file(path: &Path) -> Vec<u8> {
    zstd::encode_all(std::fs::File::open(path).unwrap(), 3).unwrap()
}

/// Every real file from other machines reads, from its .xz as shipped (whole-file xz
/// detected by its magic) and, decompressed, from standard input.
#[test]
fn the_wild_files_report() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../perf-data/tests/wild");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xz"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 6);
    for path in names {
        let p = path.to_str().unwrap();
        let report = ok(&cpiflame(&["report", p], None), p);
        assert!(report.starts_with("# cpiflame report: "), "{p}: {report}");
        let xz = std::fs::read(&path).unwrap();
        let again = ok(&cpiflame(&["report", "-"], Some(&xz)), "stdin");
        assert_eq!(again, report, "{p} from standard input");
    }
}

/// A bad input on standard input: one line naming it.
#[test]
fn garbage_on_standard_input_is_one_error_line() {
    let out = cpiflame(&["report", "-"], Some(b"\x28\xb5\x2f\xfdgarbage"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("<stdin>"), "{err}");
}
