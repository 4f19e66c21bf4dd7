//! A perf.data file that claims huge sizes (sections, counts, strings, call chains, stack
//! copies) never makes the reader allocate more than the file could hold: each claim is
//! planted in a small, valid file written by cpiflame's writer, and the whole pipeline
//! (`cpiflame_hostile::perf_data`: header, features, records, unwinding, folding) runs under
//! a watched allocator.

mod watch;

use cpiflame_perf_data::abi::{attr_type, callchain, sample, x86_64_regs};
use cpiflame_perf_data::synth::Recording;
use cpiflame_perf_data::write::{BuildIdEntry, EventAttr, Features, SampleFields, REGS_ABI_64};
use cpiflame_perf_data::PerfData;

const HOSTNAME: &str = "claims-host";

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
            | sample::REGS_USER
            | sample::STACK_USER,
        sample_regs_user: 1 << x86_64_regs::BP | 1 << x86_64_regs::SP | 1 << x86_64_regs::IP,
        sample_stack_user: 64,
        name: Some("cpu-clock".into()),
        ids: vec![7],
        ..EventAttr::default()
    }
}

/// A valid file with one sample and the features the reader uses.
fn base() -> Vec<u8> {
    let mut w = Recording::in_memory(vec![attr()]);
    let s = SampleFields {
        ip: 0x40_1000,
        pid: 10,
        tid: 10,
        time: 1,
        period: 100_000,
        callchain: vec![callchain::USER, 0x40_1000, 0x40_2000, 0x40_3000],
        regs_abi: REGS_ABI_64,
        user_regs: vec![0x7ff0_0000, 0x7ff0_0000, 0x40_1000],
        user_stack: vec![0xab; 64],
        stack_dyn_size: 64,
        misc: cpiflame_perf_data::abi::misc::USER,
        ..SampleFields::default()
    };
    w.sample(0, &s);
    let features = Features {
        hostname: Some(HOSTNAME.into()),
        cmdline: vec!["claims".into(), "x".into()],
        build_ids: vec![BuildIdEntry {
            pid: -1,
            misc: cpiflame_perf_data::abi::misc::USER,
            build_id: vec![0x11; 20],
            path: "/claims/bin".into(),
        }],
        ..Features::default()
    };
    w.finish_bytes(&features)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Where the feature `bit`'s section starts, and where its table entry is.
fn feature(b: &[u8], bit: u32) -> (usize, usize) {
    let table = (u64_at(b, 40) + u64_at(b, 48)) as usize;
    let bits = u64_at(b, 72);
    assert!(bits & (1 << bit) != 0, "feature {bit} written");
    let k = (bits & ((1 << bit) - 1)).count_ones() as usize;
    let entry = table + 16 * k;
    (u64_at(b, entry) as usize, entry)
}

/// Offset of the first sample record.
fn first_sample(b: &[u8]) -> usize {
    let mut at = u64_at(b, 40) as usize;
    loop {
        let rtype = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        if rtype == 9 {
            return at;
        }
        at += u16::from_le_bytes([b[at + 6], b[at + 7]]) as usize;
    }
}

/// How to plant a claim in a copy of the base file.
type Plant = Box<dyn Fn(&mut Vec<u8>)>;

/// Each claim: a name and how to plant it.
fn claims() -> Vec<(&'static str, Plant)> {
    // Sample layout: header 8, ip 8, pid/tid 8, time 8, period 8, callchain nr at 40.
    let callchain_nr = 40;
    let regs_abi = callchain_nr + 8 + 4 * 8;
    let stack_size = regs_abi + 8 + 3 * 8;
    vec![
        (
            "attr section size 2^60",
            Box::new(|b| put_u64(b, 32, 1 << 60)),
        ),
        (
            "data section size 2^62",
            Box::new(|b| put_u64(b, 48, 1 << 62)),
        ),
        (
            "ids of event 0: 2^61 bytes",
            Box::new(|b| {
                let entry = u64_at(b, 24) as usize + u64_at(b, 16) as usize;
                put_u64(b, entry - 8, 1 << 61);
            }),
        ),
        (
            "feature section size 2^62",
            Box::new(|b| {
                let (_, entry) = feature(b, 3);
                put_u64(b, entry + 8, 1 << 62);
            }),
        ),
        (
            "EVENT_DESC: 2^32-1 events",
            Box::new(|b| {
                let (at, _) = feature(b, 12);
                put_u32(b, at, u32::MAX);
            }),
        ),
        (
            "EVENT_DESC: attr size 2^32-1",
            Box::new(|b| {
                let (at, _) = feature(b, 12);
                put_u32(b, at + 4, u32::MAX);
            }),
        ),
        (
            "EVENT_DESC: 2^32-1 ids",
            Box::new(|b| {
                let (at, _) = feature(b, 12);
                let attr_size = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap());
                put_u32(b, at + 8 + attr_size as usize, u32::MAX);
            }),
        ),
        (
            "HOSTNAME: string of 2^32-1 bytes",
            Box::new(|b| {
                let (at, _) = feature(b, 3);
                put_u32(b, at, u32::MAX);
            }),
        ),
        (
            "CMDLINE: 2^32-1 arguments",
            Box::new(|b| {
                let (at, _) = feature(b, 11);
                put_u32(b, at, u32::MAX);
            }),
        ),
        (
            "CMDLINE: argument of 2^32-16 bytes",
            Box::new(|b| {
                let (at, _) = feature(b, 11);
                put_u32(b, at + 4, u32::MAX - 15);
            }),
        ),
        (
            "BUILD_ID: record size 65535",
            Box::new(|b| {
                let (at, _) = feature(b, 2);
                b[at + 6..at + 8].copy_from_slice(&u16::MAX.to_le_bytes());
            }),
        ),
        (
            "sample: call chain of 2^60 entries",
            Box::new(move |b| {
                let s = first_sample(b);
                put_u64(b, s + callchain_nr, 1 << 60);
            }),
        ),
        (
            "sample: user stack copy of 2^60 bytes",
            Box::new(move |b| {
                let s = first_sample(b);
                put_u64(b, s + stack_size, 1 << 60);
            }),
        ),
        (
            "sample: dyn_size 2^60",
            Box::new(move |b| {
                let s = first_sample(b);
                put_u64(b, s + stack_size + 8 + 64, 1 << 60);
            }),
        ),
        (
            "sample: record size 65535",
            Box::new(|b| {
                let s = first_sample(b);
                b[s + 6..s + 8].copy_from_slice(&u16::MAX.to_le_bytes());
            }),
        ),
    ]
}

#[test]
fn the_base_file_reads_whole() {
    let _alone = watch::alone();
    let b = base();
    let file = PerfData::from_bytes("base", &b).unwrap();
    assert_eq!(file.meta.hostname.as_deref(), Some(HOSTNAME));
    assert_eq!(file.meta.cmdline, ["claims", "x"]);
    assert_eq!(file.meta.build_ids.len(), 1);
    assert_eq!(file.attrs[0].name.as_deref(), Some("cpu-clock"));
    let samples: Vec<_> = file
        .records()
        .map(|r| r.unwrap())
        .filter_map(|r| match r.kind {
            cpiflame_perf_data::RecordKind::Sample(s) => Some((
                s.callchain.map(|c| c.len()),
                s.user_stack.map(|st| st.dyn_size),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(samples, [(Some(4), Some(64))]);
}

#[test]
fn huge_claims_allocate_no_more_than_the_file_holds() {
    let alone = watch::alone();
    let base = base();
    let mut failures = Vec::new();
    for (name, plant) in claims() {
        let mut b = base.clone();
        plant(&mut b);
        assert_ne!(b, base, "{name}: planted");
        let outcome = std::cell::Cell::new("read");
        let usage = watch::measure(&alone, || {
            if let Err(e) = PerfData::from_bytes("claims.data", &b) {
                // The error names the file and (for header fields) an offset.
                assert!(e.to_string().contains("claims.data"), "{name}: {e}");
                outcome.set("refused");
            }
            cpiflame_hostile::perf_data(&b);
        });
        let budget = watch::budget(b.len());
        eprintln!("{name}: {}, {usage:?}", outcome.get());
        if usage.largest > budget || usage.peak > budget {
            failures.push(format!("{name}: {usage:?}, budget {budget}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `len` zero bytes compressed by zstd: a few KB that decompress to `len`.
fn zstd_zeros(len: usize) -> Vec<u8> {
    zstd::stream::encode_all(&vec![0u8; len][..], 1).unwrap()
}

/// A pipe-mode stream: header, the base file's event, then `records`.
fn pipe_stream(records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = cpiflame_perf_data::write::pipe_header().to_vec();
    b.extend(cpiflame_perf_data::write::header_attr_record(&attr()).unwrap());
    for r in records {
        b.extend(r);
    }
    b
}

/// Decompression bombs: small inputs that decompress (or claim to) to far more than a real
/// recording would. Each is refused, naming the file, with no more allocated than the input
/// could justify. (zstd's own buffers are allocated by libzstd, outside this allocator; its
/// window is capped by WindowLogMax, which the huge-window case checks is refused.)
#[test]
fn decompression_bombs_are_refused_within_the_budget() {
    let alone = watch::alone();
    use cpiflame_perf_data::write::compressed2_record;
    use std::io::Write;
    let zeros = 64 << 20;
    let chunk_bomb = pipe_stream(&[compressed2_record(&zstd_zeros(zeros)).unwrap()]);
    // A frame header claiming a 2^41-byte window (descriptor exponent 31), then one empty
    // last raw block.
    let huge_window = pipe_stream(&[compressed2_record(&[
        0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8, 0x01, 0x00, 0x00,
    ])
    .unwrap()]);
    let whole_zstd = zstd_zeros(zeros);
    let whole_gzip = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; zeros]).unwrap();
        e.finish().unwrap()
    };
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("pipe: one COMPRESSED2 chunk of 64 MiB zeros", chunk_bomb),
        ("pipe: zstd frame claiming a 2^41-byte window", huge_window),
        ("whole file: zstd of 64 MiB zeros", whole_zstd),
        ("whole file: gzip of 64 MiB zeros", whole_gzip),
    ];
    // lzma-rs only stores (its encoder does not compress): the xz tool makes the xz bomb.
    match xz_zeros(zeros) {
        Some(xz) => cases.push(("whole file: xz of 64 MiB zeros", xz)),
        None => cpiflame_testkit::unavailable("the xz tool is not installed"),
    }
    let mut failures = Vec::new();
    for (name, b) in cases {
        let message = std::cell::RefCell::new(String::new());
        let usage = watch::measure(&alone, || {
            match PerfData::from_bytes("bomb.data", &b) {
                Err(e) => *message.borrow_mut() = e.to_string(),
                Ok(_) => *message.borrow_mut() = "read".into(),
            }
            cpiflame_hostile::perf_data(&b);
        });
        let message = message.into_inner();
        let budget = watch::budget(b.len());
        eprintln!("{name} ({} bytes): {message}, {usage:?}", b.len());
        let refused = message.contains("decompression bomb") || message.contains("decompress:");
        if !message.starts_with("bomb.data: ") || !refused || message.lines().count() != 1 {
            failures.push(format!(
                "{name}: not refused in one line naming the file: {message}"
            ));
        }
        if usage.largest > budget || usage.peak > budget {
            failures.push(format!("{name}: {usage:?}, budget {budget}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `len` zeros compressed by the xz tool, if it is installed.
fn xz_zeros(len: usize) -> Option<Vec<u8>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("xz")
        .args(["-c", "-6"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let writer = std::thread::spawn(move || stdin.write_all(&vec![0u8; len]));
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    out.status.success().then_some(out.stdout)
}
