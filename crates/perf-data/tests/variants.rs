//! The variants of perf.data users bring: pipe mode, compressed records (types 81 and 83),
//! whole-file gzip/zstd/xz, AUX data, attrs of every size, real files from other machines
//! and perf versions. Oracles: `perf script` where perf reads the file, the same recording
//! in its plain form (`perf inject` turns a pipe stream into a file), samples counted with
//! the zstd tool (tests/wild/README.md), and the writer's plain file for what perf cannot
//! make (chunks split mid-record, bombs, AUXTRACE, old attr sizes, the v1 magic).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cpiflame_perf_data::abi::{attr_type, callchain, misc, sample};
use cpiflame_perf_data::synth::Recording;
use cpiflame_perf_data::write::{
    auxtrace_record, comm_record, compressed2_record, compressed_record, finished_round_record,
    header_attr_record, pipe_header, sample_record, CompressionInfo, EventAttr, Features,
    SampleFields, SampleId,
};
use cpiflame_perf_data::{ErrorKind, PerfData, RecordKind};
use cpiflame_testkit::perf_works;

fn wild(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/wild")
        .join(format!("{name}.xz"))
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cpiflame-variants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Event name -> samples, as the reader hands them out in time order.
fn counts(file: &PerfData) -> BTreeMap<String, usize> {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for r in file.records() {
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        if let RecordKind::Sample(s) = r.kind {
            *m.entry(file.attrs[s.attr].display_name()).or_default() += 1;
        }
    }
    m
}

/// (tid, time, ip, callchain) of every sample, in time order.
type SampleKey = (i32, u64, u64, Vec<u64>);

fn samples(file: &PerfData) -> Vec<SampleKey> {
    let mut v = Vec::new();
    for r in file.records() {
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        if let RecordKind::Sample(s) = r.kind {
            let chain = s.callchain.map(|c| c.iter().collect()).unwrap_or_default();
            v.push((
                s.tid.unwrap_or(0),
                s.time.unwrap_or(0),
                s.ip.unwrap_or(0),
                chain,
            ));
        }
    }
    v
}

/// Event name -> samples, as `perf script` prints them.
fn perf_script_counts(data: &Path) -> BTreeMap<String, usize> {
    let out = Command::new("perf")
        .args(["script", "-F", "event", "-G", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf script -i {}", data.display());
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.trim().trim_end_matches(':');
        if !name.is_empty() {
            *m.entry(name.to_string()).or_default() += 1;
        }
    }
    m
}

/// (tid, time in ns, ip) of every sample as `perf script` prints them.
fn perf_script_samples(data: &Path) -> Vec<(i32, u64, u64)> {
    let out = Command::new("perf")
        .args(["script", "-F", "tid,time,ip", "--ns", "-G", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf script -i {}", data.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let tid = f.next()?.parse().ok()?;
            let (secs, ns) = f.next()?.trim_end_matches(':').split_once('.')?;
            let time = secs.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?;
            let ip = u64::from_str_radix(f.next()?, 16).ok()?;
            Some((tid, time, ip))
        })
        .collect()
}

fn perf_record(args: &[&str]) -> Vec<u8> {
    let out = Command::new("perf")
        .args(["record", "-q"])
        .args(args)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "perf record {args:?}");
    out.stdout
}

// ---- The real files of others ----

/// Each file reads, and its samples per event are those established without cpiflame:
/// `perf script` (perf 6.1 here) for the files it reads, the zstd tool for those it cannot
/// (attr size 136 and type 83 are newer than it; see tests/wild/README.md).
#[test]
fn the_wild_files_read_with_the_samples_counted_independently() {
    let expected: &[(&str, &[(&str, usize)])] = &[
        ("lpd-sleep-compressed2.data", &[("cycles:Pu", 7)]),
        (
            "lpd-fibo-compressed2.pipe.data",
            &[("cycles:P", 547), ("dummy:u", 0)],
        ),
        ("lpd-sleep-compressed.data", &[("cycles:P", 8)]),
        (
            "q-piped.header_feautres_group_desc-6.8.data",
            &[("cycles:u", 11), ("instructions:u", 10)],
        ),
        (
            "q-hybrid_topology.data",
            &[
                ("cpu_atom/cycles:ppp/", 0),
                ("cpu_core/cycles:ppp/", 7),
                ("dummy:HG", 0),
            ],
        ),
        ("q-callgraph_and_branch-3.8.data", &[("cycles", 1856)]),
    ];
    let mut failures = Vec::new();
    for (name, events) in expected {
        let file = PerfData::open(wild(name)).unwrap_or_else(|e| panic!("{e}"));
        let got = counts(&file);
        let want: BTreeMap<String, usize> =
            events.iter().map(|(e, n)| (e.to_string(), *n)).collect();
        let got_nonzero: BTreeMap<_, _> = got.iter().filter(|(_, n)| **n > 0).collect();
        let want_nonzero: BTreeMap<_, _> = want.iter().filter(|(_, n)| **n > 0).collect();
        if got_nonzero != want_nonzero {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
        let names: Vec<String> = file.attrs.iter().map(|a| a.display_name()).collect();
        for (event, _) in events.iter() {
            if !names.iter().any(|n| n == event) {
                failures.push(format!("{name}: no event {event} in {names:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Where perf reads a wild file, its counts are the ones above.
#[test]
fn the_wild_files_perf_reads_count_as_perf_script_does() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    for name in [
        "q-piped.header_feautres_group_desc-6.8.data",
        "q-hybrid_topology.data",
        "q-callgraph_and_branch-3.8.data",
    ] {
        let input = cpiflame_perf_data::open_input(wild(name)).unwrap();
        let plain = tmp(name);
        std::fs::write(&plain, input.bytes()).unwrap();
        let file = PerfData::from_input(input).unwrap();
        let mut ours = counts(&file);
        ours.retain(|_, n| *n > 0);
        assert_eq!(ours, perf_script_counts(&plain), "{name}");
    }
}

#[test]
fn the_wild_metadata_is_read_from_features_and_pipe_records() {
    let piped = PerfData::open(wild("q-piped.header_feautres_group_desc-6.8.data")).unwrap();
    assert!(
        piped.meta.hostname.is_some(),
        "pipe mode HOSTNAME feature record"
    );
    assert_eq!(piped.meta.arch.as_deref(), Some("x86_64"));
    assert!(!piped.meta.cmdline.is_empty());
    let fibo = PerfData::open(wild("lpd-fibo-compressed2.pipe.data")).unwrap();
    let c = fibo
        .meta
        .compression
        .clone()
        .expect("COMPRESSED feature record");
    assert_eq!(c.type_, 1, "zstd");
    assert!(c.mmap_len > 0);
    let hybrid = PerfData::open(wild("q-hybrid_topology.data")).unwrap();
    let pmus: Vec<&str> = hybrid.meta.pmus.iter().map(|(_, n)| n.as_str()).collect();
    assert!(
        pmus.contains(&"cpu_core") && pmus.contains(&"cpu_atom"),
        "{pmus:?}"
    );
}

// ---- Recorded here ----

/// A plain `perf record` file and the same recording as a pipe stream (`perf inject -i
/// FILE -o -`; perf 6.1's inject from a pipe *file* writes a file it cannot read itself):
/// the same samples, stacks included, in the same order. And `perf record -o -` counted
/// as perf script counts it, sample by sample.
#[test]
fn a_pipe_stream_reads_as_its_file_twin_and_as_perf_script() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    let plain = tmp("plain.data");
    perf_record(&["-e", "cpu-clock", "-g", "-o", plain.to_str().unwrap()]);
    let out = Command::new("perf")
        .args(["inject", "-i"])
        .arg(&plain)
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let a = PerfData::from_bytes("twin.pipe", &out.stdout).unwrap_or_else(|e| panic!("{e}"));
    let b = PerfData::open(&plain).unwrap_or_else(|e| panic!("{e}"));
    assert!(!samples(&a).is_empty());
    assert_eq!(samples(&a), samples(&b));
    assert_eq!(counts(&a), counts(&b));
    assert_eq!(a.meta.hostname, b.meta.hostname);
    assert_eq!(a.meta.arch, b.meta.arch);
    assert_eq!(a.meta.os_release, b.meta.os_release);
    // perf sends no BUILD_ID feature down a pipe (build ids come as HEADER_BUILD_ID
    // records, when perf has any to send); the synthetic tests check those.

    let pipe = tmp("pipe.data");
    std::fs::write(&pipe, perf_record(&["-e", "cpu-clock", "-g", "-o", "-"])).unwrap();
    let file = PerfData::open(&pipe).unwrap_or_else(|e| panic!("{e}"));
    let ours: Vec<(i32, u64, u64)> = samples(&file)
        .into_iter()
        .map(|(tid, time, ip, _)| (tid, time, ip))
        .collect();
    assert!(!ours.is_empty());
    assert_eq!(ours, perf_script_samples(&pipe));
    assert_eq!(counts(&file), perf_script_counts(&pipe));
}

/// `perf record -z` (PERF_RECORD_COMPRESSED, type 81): the samples perf script prints,
/// time, thread and ip each.
#[test]
fn a_compressed_recording_reads_as_perf_script_reads_it() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    let z = tmp("z.data");
    // A one-page ring at 20 kHz: about a hundred chunks of one zstd stream, with
    // FINISHED_ROUNDs between them.
    perf_record(&[
        "-z",
        "-m",
        "1",
        "-F",
        "20000",
        "-e",
        "cpu-clock",
        "-g",
        "-o",
        z.to_str().unwrap(),
    ]);
    let file = PerfData::open(&z).unwrap_or_else(|e| panic!("{e}"));
    assert!(file.meta.compression.is_some(), "recorded with -z");
    let ours: Vec<(i32, u64, u64)> = samples(&file)
        .into_iter()
        .map(|(tid, time, ip, _)| (tid, time, ip))
        .collect();
    assert!(!ours.is_empty());
    assert_eq!(ours, perf_script_samples(&z));
}

// ---- Synthetic: the writer's plain file and its variants ----

fn attr() -> EventAttr {
    EventAttr {
        type_: attr_type::SOFTWARE,
        config: 0,
        sample_period_or_freq: 100_000,
        sample_type: sample::IP
            | sample::TID
            | sample::TIME
            | sample::PERIOD
            | sample::CALLCHAIN
            | sample::ID,
        flags: cpiflame_perf_data::attr_flags::SAMPLE_ID_ALL,
        name: Some("cpu-clock".into()),
        ids: vec![7],
        ..EventAttr::default()
    }
}

/// A COMM and `n` samples with call chains of varied length, FINISHED_ROUND every 10.
fn plain_records(n: u64) -> Vec<Vec<u8>> {
    let a = attr();
    let id = SampleId {
        pid: 10,
        tid: 10,
        time: 1,
        id: 7,
        ..SampleId::default()
    };
    let mut v = vec![comm_record(&a, 10, 10, "synthetic", true, &id).unwrap()];
    for i in 0..n {
        let mut chain = vec![callchain::USER];
        chain.extend((0..(i % 13)).map(|k| 0x40_0000 + k * 0x100 + i));
        let s = SampleFields {
            ip: 0x40_1000 + i,
            pid: 10,
            tid: 10,
            time: 10 + i,
            id: 7,
            period: 100_000,
            callchain: chain,
            misc: misc::USER,
            ..SampleFields::default()
        };
        v.push(sample_record(&a, &s).unwrap());
        if i % 10 == 9 {
            v.push(finished_round_record());
        }
    }
    v
}

fn write_file(records: &[Vec<u8>], features: &Features) -> Vec<u8> {
    let mut w = Recording::in_memory(vec![attr()]);
    for r in records {
        w.record(r);
    }
    w.finish_bytes(features)
}

fn features() -> Features {
    Features {
        hostname: Some("variants-host".into()),
        ..Features::default()
    }
}

/// The records as perf -z writes them: one zstd stream, flushed into chunks of about
/// `chunk` bytes of input (so records are split between chunks), each chunk one
/// compressed record of `rtype`, the FINISHED_ROUNDs left uncompressed between them.
fn compress(records: &[Vec<u8>], chunk: usize, rtype: u32) -> Vec<Vec<u8>> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    let mut out = Vec::new();
    let mut pending = 0;
    let flush = |enc: &mut zstd::stream::write::Encoder<'_, Vec<u8>>, out: &mut Vec<Vec<u8>>| {
        enc.flush().unwrap();
        let bytes = std::mem::take(enc.get_mut());
        if !bytes.is_empty() {
            out.push(if rtype == 81 {
                compressed_record(&bytes).unwrap()
            } else {
                compressed2_record(&bytes).unwrap()
            });
        }
    };
    for r in records {
        if r == &finished_round_record() {
            flush(&mut enc, &mut out);
            out.push(r.clone());
            pending = 0;
            continue;
        }
        // Split the record between two chunks when it crosses the chunk size.
        let mut rest = &r[..];
        while pending + rest.len() > chunk {
            let take = chunk - pending;
            enc.write_all(&rest[..take]).unwrap();
            rest = &rest[take..];
            flush(&mut enc, &mut out);
            pending = 0;
        }
        enc.write_all(rest).unwrap();
        pending += rest.len();
    }
    flush(&mut enc, &mut out);
    out
}

fn pipe_stream(records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = pipe_header().to_vec();
    b.extend(header_attr_record(&attr()).unwrap());
    for r in records {
        b.extend(r);
    }
    b
}

#[test]
fn compressed_chunks_split_mid_record_read_as_the_plain_file() {
    let records = plain_records(200);
    let plain = PerfData::from_bytes("plain.data", &write_file(&records, &features())).unwrap();
    let want = samples(&plain);
    assert_eq!(want.len(), 200);
    for rtype in [81, 83] {
        for chunk in [50, 333, 4096] {
            let chunks = compress(&records, chunk, rtype);
            let with_feature = Features {
                compression: Some(CompressionInfo {
                    version: 1,
                    type_: 1,
                    level: 3,
                    ratio: 4,
                    mmap_len: 528384,
                }),
                ..features()
            };
            // Type 81 records are not padded to 8 bytes, which the writer refuses; real
            // file-mode type 81 is perf's own (-z, and lpd-sleep-compressed.data).
            if rtype == 83 {
                let file = write_file(&chunks, &with_feature);
                let file = PerfData::from_bytes("z.data", &file).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    samples(&file),
                    want,
                    "file mode, type {rtype}, chunk {chunk}"
                );
            }
            let pipe = PerfData::from_bytes("z.pipe", &pipe_stream(&chunks))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                samples(&pipe),
                want,
                "pipe mode, type {rtype}, chunk {chunk}"
            );
        }
    }
}

/// A bad record inside compressed data: the error names the file and the offset in the
/// decompressed records, and says so.
#[test]
fn an_error_inside_compressed_data_names_its_place() {
    let mut records = plain_records(20);
    records[5][6..8].copy_from_slice(&4u16.to_le_bytes());
    let pipe = PerfData::from_bytes("bad.pipe", &pipe_stream(&compress(&records, 100, 83)))
        .unwrap_or_else(|e| panic!("{e}"));
    let err = pipe
        .records()
        .find_map(|r| r.err())
        .expect("the bad record is an error");
    let text = err.to_string();
    assert!(text.starts_with("bad.pipe: offset 0x"), "{text}");
    assert!(
        text.contains("of the decompressed records: bad record size 4"),
        "{text}"
    );
}

/// A `perf record -z` killed before it finished the file: data size 0, no features; the
/// compressed records are still found and read.
#[test]
fn a_killed_compressed_recording_reads() {
    let records = plain_records(60);
    let want =
        samples(&PerfData::from_bytes("plain.data", &write_file(&records, &features())).unwrap());
    let with_feature = Features {
        compression: Some(CompressionInfo {
            version: 1,
            type_: 1,
            level: 1,
            ratio: 1,
            mmap_len: 1 << 16,
        }),
        ..features()
    };
    let mut b = write_file(&compress(&records, 500, 83), &with_feature);
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let data_end = (u64_at(&b, 40) + u64_at(&b, 48)) as usize;
    b.truncate(data_end);
    b[48..56].fill(0);
    b[72..104].fill(0);
    let file = PerfData::from_bytes("killed.data", &b).unwrap_or_else(|e| panic!("{e}"));
    assert!(file.data_size_was_zero);
    assert_eq!(samples(&file), want);
}

#[test]
fn a_plain_pipe_stream_reads_as_the_plain_file() {
    let records = plain_records(50);
    let plain = PerfData::from_bytes("plain.data", &write_file(&records, &features())).unwrap();
    let pipe = PerfData::from_bytes("plain.pipe", &pipe_stream(&records)).unwrap();
    assert_eq!(samples(&pipe), samples(&plain));
    assert_eq!(pipe.attrs[0].sample_type, attr().sample_type);
    // Cut short (a killed recorder): the whole records before the cut read, with a warning.
    let stream = pipe_stream(&records);
    let cut = PerfData::from_bytes("cut.pipe", &stream[..stream.len() - 20]).unwrap();
    assert_eq!(samples(&cut).len(), 49);
    assert!(cut
        .warnings
        .iter()
        .any(|w| w.contains("ends inside a record")));
}

/// A raw record: type, then the body (padded to 8 bytes).
fn raw_record(rtype: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    body.resize(body.len().next_multiple_of(8), 0);
    let mut r = rtype.to_le_bytes().to_vec();
    r.extend(0u16.to_le_bytes());
    r.extend(((8 + body.len()) as u16).to_le_bytes());
    r.extend(body);
    r
}

/// Pipe mode's header records: a HEADER_FEATURE (HOSTNAME), a HEADER_BUILD_ID, tracing
/// data with its payload after the record, an EVENT_UPDATE naming the event; all taken
/// in, none left among the records.
#[test]
fn pipe_header_records_fill_the_metadata() {
    let mut a = attr();
    a.name = None;
    let mut stream = pipe_header().to_vec();
    stream.extend(header_attr_record(&a).unwrap());
    let mut feature = 3u64.to_le_bytes().to_vec(); // HEADER_HOSTNAME
    feature.extend(8u32.to_le_bytes());
    feature.extend(b"pipehost");
    stream.extend(raw_record(80, &feature));
    let mut build_id = (-1i32).to_le_bytes().to_vec();
    build_id.extend([0x5a; 20]);
    build_id.extend([0; 4]);
    build_id.extend(b"/usr/bin/piped\0");
    let mut bid = raw_record(67, &build_id);
    bid[4..6].copy_from_slice(&misc::USER.to_le_bytes());
    stream.extend(bid);
    let mut tracing = 24u32.to_le_bytes().to_vec();
    tracing.extend([0; 4]);
    stream.extend(raw_record(66, &tracing));
    stream.extend([0x99; 24]); // the tracing data itself
    let mut update = 2u64.to_le_bytes().to_vec(); // PERF_EVENT_UPDATE__NAME
    update.extend(7u64.to_le_bytes());
    update.extend(b"task-clock:u\0");
    stream.extend(raw_record(78, &update));
    stream.extend(raw_record(82, &[])); // FINISHED_INIT
    for r in plain_records(10) {
        stream.extend(r);
    }
    let file = PerfData::from_bytes("meta.pipe", &stream).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.meta.hostname.as_deref(), Some("pipehost"));
    assert_eq!(file.meta.build_ids.len(), 1);
    assert_eq!(file.meta.build_ids[0].path, b"/usr/bin/piped");
    assert_eq!(file.meta.build_ids[0].build_id, vec![0x5a; 20]);
    assert_eq!(file.attrs[0].display_name(), "task-clock:u");
    assert_eq!(counts(&file).get("task-clock:u"), Some(&10));
}

/// A tiny chunk that claims to decompress to 64 MiB (one RLE block after another).
fn zstd_zeros(len: usize) -> Vec<u8> {
    zstd::stream::encode_all(&vec![0u8; len][..], 1).unwrap()
}

#[test]
fn a_compressed_chunk_bomb_is_refused_naming_the_file_and_offset() {
    let bomb = zstd_zeros(64 << 20);
    assert!(bomb.len() < 64 << 10);
    let chunks = vec![compressed2_record(&bomb).unwrap()];
    let err = PerfData::from_bytes("bomb.pipe", &pipe_stream(&chunks))
        .err()
        .expect("refused");
    assert!(matches!(err.kind, ErrorKind::Bomb { .. }), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("bomb.pipe: offset 0x"), "{text}");
    assert!(text.contains("decompression bomb"), "{text}");
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn a_whole_file_bomb_is_refused() {
    let bomb = zstd_zeros(40 << 20);
    let err = PerfData::from_bytes("bomb.data.zst", &bomb)
        .err()
        .expect("refused");
    assert!(matches!(err.kind, ErrorKind::Bomb { .. }), "{err}");
    assert!(err.to_string().starts_with("bomb.data.zst: "), "{err}");
}

#[test]
fn whole_files_compressed_with_gzip_zstd_or_xz_read_as_the_plain_file() {
    let plain_bytes = write_file(&plain_records(100), &features());
    let plain = PerfData::from_bytes("plain.data", &plain_bytes).unwrap();
    let want = samples(&plain);
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&plain_bytes).unwrap();
        e.finish().unwrap()
    };
    let zst = zstd::stream::encode_all(&plain_bytes[..], 3).unwrap();
    let xz = {
        let mut e = xz2::write::XzEncoder::new(Vec::new(), 6);
        e.write_all(&plain_bytes).unwrap();
        e.finish().unwrap()
    };
    // Named .data: the format is found from the bytes, not the name.
    for (what, bytes) in [("gzip", gz), ("zstd", zst), ("xz", xz)] {
        let path = tmp(&format!("whole-{what}.data"));
        std::fs::write(&path, &bytes).unwrap();
        let file = PerfData::open(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(samples(&file), want, "{what}");
        assert_eq!(file.meta.hostname.as_deref(), Some("variants-host"));
        let input = cpiflame_perf_data::open_input(&path).unwrap();
        assert_eq!(input.compression().map(|c| c.name()), Some(what));
        assert_eq!(input.bytes(), &plain_bytes[..]);
    }
    // Compressed garbage: one line naming the file.
    let path = tmp("garbage.data");
    std::fs::write(&path, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
    let err = PerfData::open(&path).err().expect("refused");
    assert!(err.to_string().contains("garbage.data"), "{err}");
    assert!(err.to_string().contains("gzip"), "{err}");
}

#[test]
fn auxtrace_payloads_are_skipped_and_the_samples_kept() {
    let mut records = plain_records(30);
    records.insert(5, auxtrace_record(&[0xee; 4000], 0, 10, 0).unwrap());
    records.insert(20, auxtrace_record(&[0xdd; 24], 1, 10, 1).unwrap());
    let file = PerfData::from_bytes("aux.data", &write_file(&records, &features()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(samples(&file).len(), 30);
    let pipe = PerfData::from_bytes("aux.pipe", &pipe_stream(&records)).unwrap();
    assert_eq!(samples(&pipe).len(), 30);
    let warned: Vec<_> = pipe.warnings.iter().filter(|w| w.contains("AUX")).collect();
    assert_eq!(warned.len(), 1, "{:?}", pipe.warnings);
}

/// perf 3.x wrote attrs of 64, 72 and 80 bytes (PERF_ATTR_SIZE_VER0..2): the attr section
/// rewritten with entries that short reads the same samples; newer perf writes 136.
#[test]
fn attrs_of_older_and_newer_sizes_read() {
    let records = plain_records(20);
    let bytes = write_file(&records, &features());
    let want = samples(&PerfData::from_bytes("plain.data", &bytes).unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let attr_size = u64_at(&bytes, 16) as usize;
    let attrs_at = u64_at(&bytes, 24) as usize;
    let attr_bytes = attr_size - 16;
    for size in [64usize, 72, 80] {
        let mut b = bytes.clone();
        let entry = bytes[attrs_at..attrs_at + attr_size].to_vec();
        let mut short = entry[..size].to_vec();
        short[4..8].copy_from_slice(&(size as u32).to_le_bytes());
        short.extend_from_slice(&entry[attr_bytes..]);
        b[attrs_at..attrs_at + short.len()].copy_from_slice(&short);
        b[16..24].copy_from_slice(&((size + 16) as u64).to_le_bytes());
        b[32..40].copy_from_slice(&((size + 16) as u64).to_le_bytes());
        let file = PerfData::from_bytes("old.data", &b).unwrap_or_else(|e| panic!("{size}: {e}"));
        assert_eq!(file.attrs[0].sample_type, attr().sample_type, "{size}");
        assert_eq!(samples(&file), want, "attr size {size}");
    }
    // A pipe stream's HEADER_ATTR of 136 bytes (perf 6.x) and of 64.
    for size in [136usize, 64] {
        let mut a = attr().encode().to_vec();
        a.resize(size, 0);
        a[4..8].copy_from_slice(&(size as u32).to_le_bytes());
        let mut rec = Vec::new();
        rec.extend_from_slice(&64u32.to_le_bytes());
        rec.extend_from_slice(&0u16.to_le_bytes());
        rec.extend_from_slice(&((8 + size + 8) as u16).to_le_bytes());
        rec.extend_from_slice(&a);
        rec.extend_from_slice(&7u64.to_le_bytes());
        let mut stream = pipe_header().to_vec();
        stream.extend(rec);
        for r in &records {
            stream.extend(r);
        }
        let file = PerfData::from_bytes("new.pipe", &stream).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.attrs[0].ids, vec![7]);
        assert_eq!(samples(&file), want, "pipe attr size {size}");
    }
}

#[test]
fn the_version_one_header_is_refused_in_one_line_naming_it() {
    let mut b = b"PERFFILE".to_vec();
    b.extend_from_slice(&[0; 96]);
    let err = PerfData::from_bytes("v1.data", &b).err().expect("refused");
    let text = err.to_string();
    assert!(text.starts_with("v1.data: offset 0x0: "), "{text}");
    assert!(text.contains("version 1"), "{text}");
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn hybrid_events_without_names_are_named_by_their_pmu() {
    let input = cpiflame_perf_data::open_input(wild("q-hybrid_topology.data")).unwrap();
    let file = PerfData::from_input(input).unwrap();
    for a in &file.attrs {
        if a.type_ == attr_type::HARDWARE && a.config >> 32 != 0 {
            let pmu = file
                .meta
                .pmus
                .iter()
                .find(|(t, _)| u64::from(*t) == a.config >> 32)
                .map(|(_, n)| n.clone())
                .expect("the PMU is in PMU_MAPPINGS");
            assert!(
                a.display_name().starts_with(&format!("{pmu}/cycles")),
                "{a:?}"
            );
        }
    }
}
