//! `scripts/fleet-push.sh`, the loop that pushes a continuous recording's closed files to
//! Pyroscope and Parca (docs/fleet.md): recordings made by `cpiflame record` under perf's
//! `--switch-output` names, uploaded to a stub HTTP server in this test that keeps every
//! request. Checked: Pyroscope's request (POST /ingest, its query: name with the labels, from,
//! until, format, spyName; the multipart part `profile`), Parca's (POST /profiles/writeraw, the
//! WriteRawRequest JSON with `__name__` and the labels; `--header` on both), and that both
//! carry byte for byte the pprof `cpiflame convert --to pprof` writes for that file (which
//! decodes to samples); files still being written are left alone; a second pass sends
//! nothing; a failed upload is one line, exit 1, the file kept and later sent only to the
//! target that failed; `--keep`.

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use support::{cpiflame, ok, repo_root, s, sampling_fixtures, Dir};

/// One request the stub server received.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    query: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// An HTTP/1.1 server on 127.0.0.1 that keeps the requests and answers 200, or Parca's
/// path with `parca_status`.
struct Stub {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    parca_status: Arc<AtomicU16>,
}

impl Stub {
    fn start() -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let parca_status = Arc::new(AtomicU16::new(200));
        let (r, pa) = (requests.clone(), parca_status.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if let Some(req) = serve(stream, &pa) {
                    r.lock().unwrap().push(req);
                }
            }
        });
        Stub {
            url,
            requests,
            parca_status,
        }
    }

    fn take(&self) -> Vec<Request> {
        std::mem::take(&mut *self.requests.lock().unwrap())
    }
}

/// Reads one request from `stream` (answering `Expect: 100-continue`), answers it.
fn serve(stream: TcpStream, parca: &AtomicU16) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let (method, target) = (words.next()?.to_string(), words.next()?.to_string());
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let mut out = stream;
    if headers
        .get("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").ok()?;
    }
    let len: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let status = match path {
        "/ingest" => 200,
        _ => parca.load(Ordering::SeqCst),
    };
    let answer = if status == 200 { "ok" } else { "boom" };
    let _ = write!(
        out,
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    Some(Request {
        method,
        path: path.to_string(),
        query: query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), percent_decode(v)))
            .collect(),
        headers,
        body,
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The parts of a multipart/form-data body: (name, content).
fn multipart(req: &Request) -> Vec<(String, Vec<u8>)> {
    let ct = &req.headers["content-type"];
    let boundary = ct.split("boundary=").nth(1).expect("a boundary");
    let delimiter = format!("--{boundary}").into_bytes();
    let body = &req.body;
    let starts: Vec<usize> = (0..body.len().saturating_sub(delimiter.len()))
        .filter(|&i| body[i..].starts_with(&delimiter))
        .collect();
    starts
        .windows(2)
        .map(|w| {
            let part = &body[w[0] + delimiter.len() + 2..w[1] - 2];
            let head_end = part.windows(4).position(|x| x == b"\r\n\r\n").unwrap();
            let head = String::from_utf8_lossy(&part[..head_end]);
            let name = head
                .split("name=\"")
                .nth(1)
                .and_then(|n| n.split('"').next())
                .unwrap()
                .to_string();
            (name, part[head_end + 4..].to_vec())
        })
        .collect()
}

/// `base64 -d` of `text` (coreutils).
fn base64_decode(text: &str) -> Vec<u8> {
    let mut child = Command::new("base64")
        .arg("-d")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

fn push(dir: &Path, stub: &Stub, extra: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo_root().join("scripts/fleet-push.sh"))
        .args(["--once", "--app", "shop", "--label", "env=ci", "--label"])
        .arg("host=h-1")
        .args(["--pyroscope", &stub.url, "--parca", &stub.url])
        .args(["--header", "X-Scope-OrgID: team-1"])
        .args(extra)
        .arg(dir)
        .env("CPIFLAME", env!("CARGO_BIN_EXE_cpiflame"))
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A closed file's expected upload: its pprof as `convert --to pprof` writes it, and the
/// file's modification time (`until`).
struct Expected {
    pprof: Vec<u8>,
    until: u64,
}

fn expected(data: &Path, dir: &Dir) -> Expected {
    let pprof = dir.path(&format!(
        "{}.pb.gz",
        data.file_name().unwrap().to_str().unwrap()
    ));
    ok(&cpiflame(&[
        "convert",
        s(data),
        "--to",
        "pprof",
        "-o",
        s(&pprof),
    ]));
    let until = std::fs::metadata(data)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Expected {
        pprof: std::fs::read(pprof).unwrap(),
        until,
    }
}

/// Checks `reqs` are one Pyroscope and one Parca upload of each of `files` (by name).
fn check_uploads(reqs: &[Request], files: &BTreeMap<String, Expected>) {
    assert_eq!(reqs.len(), 2 * files.len(), "{reqs:#?}");
    let mut seen_py = Vec::new();
    let mut seen_pa = Vec::new();
    for r in reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.headers["x-scope-orgid"], "team-1", "--header");
        match r.path.as_str() {
            "/ingest" => {
                assert_eq!(r.query["name"], "shop{env=ci,host=h-1}");
                assert_eq!(r.query["format"], "pprof");
                assert_eq!(r.query["spyName"], "cpiflame");
                let parts = multipart(r);
                assert_eq!(parts.len(), 1, "one part");
                assert_eq!(parts[0].0, "profile");
                let until: u64 = r.query["until"].parse().unwrap();
                let from: u64 = r.query["from"].parse().unwrap();
                assert_eq!(from + 60, until, "--span's default");
                let (name, e) = files
                    .iter()
                    .find(|(_, e)| e.pprof == parts[0].1)
                    .expect("the upload is the pprof convert writes for one of the files");
                assert_eq!(e.until, until, "{name}: until is the file's mtime");
                seen_py.push(name.clone());
            }
            "/profiles/writeraw" => {
                assert_eq!(r.headers["content-type"], "application/json");
                let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
                let series = v["series"].as_array().unwrap();
                assert_eq!(series.len(), 1);
                let labels: Vec<(String, String)> = series[0]["labels"]["labels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| {
                        let text = |k: &str| l[k].as_str().unwrap().to_string();
                        (text("name"), text("value"))
                    })
                    .collect();
                let want = [("__name__", "shop"), ("env", "ci"), ("host", "h-1")];
                let want: Vec<(String, String)> = want
                    .iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect();
                assert_eq!(labels, want);
                let raw = base64_decode(series[0]["samples"][0]["rawProfile"].as_str().unwrap());
                let (name, _) = files
                    .iter()
                    .find(|(_, e)| e.pprof == raw)
                    .expect("rawProfile is the pprof convert writes for one of the files");
                seen_pa.push(name.clone());
            }
            other => panic!("unexpected path {other}"),
        }
    }
    seen_py.sort();
    seen_pa.sort();
    let names: Vec<String> = files.keys().cloned().collect();
    assert_eq!(seen_py, names, "each file once to Pyroscope");
    assert_eq!(seen_pa, names, "each file once to Parca");
}

#[test]
fn closed_switch_output_files_reach_pyroscope_and_parca_once() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("fleet");
    let out = dir.path("out");
    std::fs::create_dir(&out).unwrap();
    // Two closed files with perf's --switch-output names (OUTPUT.%Y%m%d%H%M%S + centiseconds).
    let names = ["perf.data.2026112601000012", "perf.data.2026112601010034"];
    let mut files = BTreeMap::new();
    let keep = dir.path("kept");
    std::fs::create_dir(&keep).unwrap();
    for (i, name) in names.iter().enumerate() {
        let data = out.join(name);
        ok(&cpiflame(&[
            "record",
            "-o",
            s(&data),
            "-e",
            "cpu-clock",
            "-c",
            "1000000",
            "--",
            s(&f.shift),
            if i == 0 { "25" } else { "75" },
            "0.05",
        ]));
        std::fs::copy(&data, keep.join(name)).unwrap();
        files.insert(name.to_string(), expected(&data, &dir));
    }
    assert_ne!(files[names[0]].pprof, files[names[1]].pprof);
    // Not closed: the file being written (the output's own name), one whose header has no data
    // size yet (a timestamped file still being written, or a killed recorder's), and .old.
    let open = [
        "perf.data",
        "perf.data.2026112601020056",
        "perf.data.old",
        "perf.data.12ab",
    ];
    let mut bytes = std::fs::read(out.join(names[0])).unwrap();
    bytes[48..56].fill(0);
    for name in open {
        std::fs::write(out.join(name), &bytes).unwrap();
    }

    let stub = Stub::start();
    let run = push(&out, &stub, &[]);
    assert!(run.status.success(), "{}", stderr(&run));
    check_uploads(&stub.take(), &files);
    for name in names {
        assert!(!out.join(name).exists(), "{name} deleted once pushed");
    }
    for name in open {
        assert_eq!(
            std::fs::read(out.join(name)).unwrap(),
            bytes,
            "{name} untouched"
        );
    }
    let state: Vec<PathBuf> = std::fs::read_dir(out.join(".fleet-push"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(state.is_empty(), "state left behind: {state:?}");

    // Idempotent: nothing new, nothing sent.
    let run = push(&out, &stub, &[]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stub.take().is_empty());

    // Parca fails: one line naming the file and the target, exit 1, the file kept; the next
    // pass sends it to Parca only.
    let name = names[0];
    std::fs::copy(keep.join(name), out.join(name)).unwrap();
    let one: BTreeMap<String, Expected> = [(name.to_string(), expected(&out.join(name), &dir))]
        .into_iter()
        .collect();
    stub.parca_status.store(500, Ordering::SeqCst);
    let run = push(&out, &stub, &[]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let err = stderr(&run);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(name) && err.contains("parca") && err.contains("500"),
        "{err}"
    );
    assert!(out.join(name).exists(), "kept after a failed upload");
    let first = stub.take();
    assert_eq!(first.len(), 2, "{first:#?}");
    stub.parca_status.store(200, Ordering::SeqCst);
    let run = push(&out, &stub, &["--keep"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let second = stub.take();
    assert_eq!(second.len(), 1, "Parca only: {second:#?}");
    assert_eq!(second[0].path, "/profiles/writeraw");
    let both: Vec<Request> = first
        .into_iter()
        .filter(|r| r.path == "/ingest")
        .chain(second)
        .collect();
    check_uploads(&both, &one);
    // --keep: the file stays, marked, and is not sent again.
    assert!(out.join(name).exists());
    let run = push(&out, &stub, &["--keep"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stub.take().is_empty());

    // The pushed pprof is a profile with the file's samples (not an empty or error body).
    let profile = cpiflame_pprof::decode(&files[names[1]].pprof).unwrap();
    assert!(!profile.sample.is_empty());
}

/// Bad flags: one line, exit 2, nothing sent.
#[test]
fn bad_flags_are_one_line() {
    let dir = Dir::new("fleet-flags");
    let stub = Stub::start();
    let script = repo_root().join("scripts/fleet-push.sh");
    let missing = dir.path("missing");
    let cases: Vec<Vec<&str>> = vec![
        vec![s(&dir.0)],
        vec!["--pyroscope", &stub.url, s(&missing)],
        vec!["--pyroscope", &stub.url, "--label", "bad name=x", s(&dir.0)],
        vec!["--pyroscope", &stub.url, "--span", "1m", s(&dir.0)],
        vec!["--pyroscope", &stub.url, "--frobnicate", s(&dir.0)],
    ];
    for args in cases {
        let out = Command::new("bash")
            .arg(&script)
            .args(&args)
            .env("CPIFLAME", env!("CARGO_BIN_EXE_cpiflame"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("fleet-push: error: "), "{err}");
    }
    assert!(stub.take().is_empty());
}
