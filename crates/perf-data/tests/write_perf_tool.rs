//! Synthetic perf.data files checked by independent readers: the `perf` tool (skipped with a
//! printed reason when it is not on PATH; a failure under CI=true) and the `linux-perf-data` crate.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use cpiflame_perf_data::abi::{attr_type, callchain, feature, misc, sample, x86_64_regs};
use cpiflame_perf_data::synth::Recording;
use cpiflame_perf_data::write::{
    attr_flags, comm_record, exit_record, finished_round_record, fork_record, lost_record,
    lost_samples_record, mmap2_record, BuildIdEntry, EventAttr, Features, Mmap2, SampleFields,
    SampleId, HOST_PID, REGS_ABI_64,
};
use cpiflame_perf_data::{ClockData, PerfData};
use linux_perf_data::linux_perf_event_reader::{
    EventRecord, PerfEventType, SamplingPolicy, SoftwareCounterType,
};
use linux_perf_data::{DsoInfo, PerfFileReader, PerfFileRecord};

const PID: i32 = 4242;
const TID2: i32 = 4243;
const BIN: &str = "/nonexistent/cpiflame-test-bin";
const MAP_START: u64 = 0x40_0000;
const N: usize = 7;

fn tmp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("cpiflame-write-{}-{name}", std::process::id()))
}

/// Runs `perf` with the args; None (and a printed reason) when perf cannot be run.
fn perf(args: &[&str]) -> Option<Output> {
    match Command::new("perf")
        .args(args)
        .env("PERF_PAGER", "cat")
        .env("PAGER", "cat")
        // The header's reference time is printed in local time.
        .env("TZ", "UTC")
        .output()
    {
        Ok(out) => Some(out),
        Err(e) => {
            cpiflame_testkit::unavailable(format!("cannot run `perf` ({e})"));
            None
        }
    }
}

fn stdout_of(args: &[&str], out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "perf {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// One sample as written, to compare readers' views against.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    event: usize,
    tid: i32,
    ip: u64,
    time: u64,
    cpu: u32,
}

// ---------------------------------------------------------------------------------------
// Two raw hardware events with user callchains.

const HW_SAMPLE_TYPE: u64 = sample::IDENTIFIER
    | sample::IP
    | sample::TID
    | sample::TIME
    | sample::ID
    | sample::CPU
    | sample::PERIOD
    | sample::CALLCHAIN;

const EVENT_NAMES: [&str; 2] = ["resource_stalls_any", "cpu_clk_unhalted_thread_p"];

fn hw_attrs() -> Vec<EventAttr> {
    let common = EventAttr {
        type_: attr_type::RAW,
        sample_period_or_freq: 100_003,
        sample_type: HW_SAMPLE_TYPE,
        flags: attr_flags::SAMPLE_ID_ALL
            | attr_flags::DISABLED
            | attr_flags::INHERIT
            | attr_flags::EXCLUDE_KERNEL
            | attr_flags::EXCLUDE_HV
            | attr_flags::ENABLE_ON_EXEC,
        ..Default::default()
    };
    vec![
        EventAttr {
            config: 0x1a2,
            name: Some(EVENT_NAMES[0].into()),
            ids: vec![101, 102],
            flags: common.flags
                | attr_flags::MMAP
                | attr_flags::COMM
                | attr_flags::TASK
                | attr_flags::MMAP2
                | attr_flags::COMM_EXEC,
            ..common.clone()
        },
        EventAttr {
            config: 0x3c,
            name: Some(EVENT_NAMES[1].into()),
            ids: vec![201, 202],
            ..common
        },
    ]
}

fn hw_build_id() -> Vec<u8> {
    (1..=20).collect()
}

fn hw_features() -> Features {
    Features {
        hostname: Some("cpiflame-test-host".into()),
        os_release: Some("6.1.0-cpiflame".into()),
        perf_version: Some("cpiflame-test 0.1".into()),
        arch: Some("x86_64".into()),
        nr_cpus: Some((8, 4)),
        cpu_desc: Some("Synthetic CPU @ 1.00GHz".into()),
        cpuid: Some("GenuineIntel,6,85,4".into()),
        total_mem_kb: Some(16_384_000),
        cmdline: vec!["cpiflame".into(), "record".into(), "--".into(), BIN.into()],
        build_ids: vec![
            BuildIdEntry {
                pid: HOST_PID,
                misc: misc::USER,
                build_id: hw_build_id(),
                path: BIN.into(),
            },
            BuildIdEntry {
                pid: HOST_PID,
                misc: misc::KERNEL,
                build_id: vec![0xab; 20],
                path: "[kernel.kallsyms]".into(),
            },
        ],
        sample_time: Some((1_000_000, 1_000_000 + (2 * N as u64 - 1) * 1000)),
        compression: None,
        groups: Vec::new(),
        numa_nodes: Vec::new(),
        tracing_data: None,
        clockid_res_ns: Some(1),
        clock_data: Some(HW_CLOCK),
    }
}

/// The CLOCK_DATA of the hardware file: 2026-11-29 00:59:09.136882 UTC on the wall clock,
/// 10133.968427274 s on CLOCK_MONOTONIC (perf `-k mono`'s numbers on this machine).
const HW_CLOCK: ClockData = ClockData {
    clockid: 1,
    wall_clock_ns: 1_795_913_949_136_882_000,
    clockid_time_ns: 10_133_968_427_274,
};

/// Writes the two-raw-event file: COMM, MMAP2, FORK, then N samples of each event
/// alternating between two threads, a LOST and a LOST_SAMPLES in the middle, an EXIT.
fn write_hw_file(name: &str) -> (PathBuf, Vec<Expected>) {
    let path = tmp_path(name);
    let attrs = hw_attrs();
    let mut w = Recording::create(&path, attrs.clone());
    // The sample id of side-band records, as `Recording::sid` makes it (id 101, CPU 0).
    let sid = |time, tid| SampleId {
        pid: PID,
        tid,
        time,
        id: 101,
        stream_id: 101,
        cpu: 0,
    };
    let a = &attrs[0];
    w.comm(PID, PID, "synthetic", 999_000);
    let mmap = Mmap2 {
        pid: PID,
        tid: PID,
        addr: MAP_START,
        len: 0x1_0000,
        pgoff: 0,
        maj: 8,
        min: 1,
        ino: 123_456,
        ino_generation: 1,
        build_id: None,
        prot: 5,  // PROT_READ | PROT_EXEC
        flags: 2, // MAP_PRIVATE
        filename: BIN.into(),
        misc: misc::USER,
    };
    w.mmap(&mmap, 999_100);
    let fork = fork_record(a, PID, PID, TID2, PID, 999_200, &sid(999_200, TID2)).unwrap();
    w.record(&fork).record(&finished_round_record());
    let mut expected = Vec::new();
    let mut time = 1_000_000;
    for i in 0..N {
        for (event, attr) in attrs.iter().enumerate() {
            let tid = if i % 2 == 0 { PID } else { TID2 };
            let ip = MAP_START + 0x1000 + (i as u64) * 0x10 + event as u64;
            let cpu = (i % 2) as u32;
            let s = SampleFields {
                ip,
                pid: PID,
                tid,
                time,
                id: attr.ids[i % 2],
                cpu,
                period: 100_003,
                callchain: vec![callchain::USER, ip, MAP_START + 0x2000, MAP_START + 0x3000],
                misc: misc::USER,
                ..Default::default()
            };
            w.sample(event, &s);
            expected.push(Expected {
                event,
                tid,
                ip,
                time,
                cpu,
            });
            time += 1000;
        }
        if i == 3 {
            w.record(&lost_record(a, 101, 3, &sid(time, PID)).unwrap())
                .record(&lost_samples_record(a, 2, &sid(time, PID)).unwrap())
                .record(&finished_round_record());
        }
    }
    let exit = exit_record(a, PID, PID, TID2, PID, time, &sid(time, TID2)).unwrap();
    w.record(&exit).record(&finished_round_record());
    assert_eq!(w.writer().records_written(), 3 + 1 + 2 * N as u64 + 3 + 2);
    w.finish(&hw_features());
    (path, expected)
}

/// perf script's time column: seconds with microseconds.
fn perf_time(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
}

#[test]
fn perf_reads_raw_hardware_event_file() {
    let (path, expected) = write_hw_file("hw.data");
    let p = path.to_str().unwrap();

    // `perf script -F event,ip,tid`: one "tid event:" line per sample, followed by its
    // callchain (the first frame is the sample ip, shown relative to the mapping).
    let args = ["script", "-i", p, "-F", "event,ip,tid"];
    let Some(out) = perf(&args) else { return };
    let stdout = stdout_of(&args, &out);
    let mut seen = Vec::new();
    let mut lines = stdout.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.starts_with('\t') {
            continue;
        }
        let mut words = line.split_whitespace();
        let tid: i32 = words.next().unwrap().parse().unwrap();
        let event = words.next().unwrap().trim_end_matches(':').to_string();
        let first_frame = lines.next().expect("a callchain after the sample line");
        let frame = u64::from_str_radix(first_frame.trim(), 16).unwrap();
        seen.push((tid, event, frame));
    }
    let want: Vec<_> = expected
        .iter()
        .map(|e| (e.tid, EVENT_NAMES[e.event].to_string(), e.ip - MAP_START))
        .collect();
    assert_eq!(seen, want, "perf script output:\n{stdout}");

    // More fields, without the callchain: cpu, time, period, absolute ip and the dso.
    let args = [
        "script",
        "-i",
        p,
        "-F",
        "tid,cpu,time,period,event,ip,dso",
        "--hide-call-graph",
    ];
    let stdout = stdout_of(&args, &perf(&args).unwrap());
    let got: Vec<Vec<String>> = stdout
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    let want: Vec<Vec<String>> = expected
        .iter()
        .map(|e| {
            vec![
                e.tid.to_string(),
                format!("[{:03}]", e.cpu),
                format!("{}:", perf_time(e.time)),
                "100003".to_string(),
                format!("{}:", EVENT_NAMES[e.event]),
                format!("{:x}", e.ip),
                format!("({BIN})"),
            ]
        })
        .collect();
    assert_eq!(got, want, "perf script output:\n{stdout}");

    // perf report reads the whole file, lost records included.
    let args = ["report", "-i", p, "--stdio"];
    let out = perf(&args).unwrap();
    let stdout = stdout_of(&args, &out);
    for name in EVENT_NAMES {
        assert!(
            stdout.contains(&format!("# Samples: {N}  of event '{name}'")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("# Total Lost Samples: 2"), "{stdout}");
    assert!(stdout.contains("synthetic  cpiflame-test-bin"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("lost 1 chunks"), "{stderr}");

    // The feature sections, as perf prints them.
    let args = ["report", "-i", p, "--header-only"];
    let stdout = stdout_of(&args, &perf(&args).unwrap());
    for line in [
        "# hostname : cpiflame-test-host",
        "# os release : 6.1.0-cpiflame",
        "# perf version : cpiflame-test 0.1",
        "# arch : x86_64",
        "# nrcpus online : 4",
        "# nrcpus avail : 8",
        "# cpudesc : Synthetic CPU @ 1.00GHz",
        "# cpuid : GenuineIntel,6,85,4",
        "# total memory : 16384000 kB",
        "# cmdline : cpiflame record -- /nonexistent/cpiflame-test-bin ",
        "# event : name = resource_stalls_any, , id = { 101, 102 }, type = 4",
        "# event : name = cpu_clk_unhalted_thread_p, , id = { 201, 202 }, type = 4",
        "# sample duration :      0.013 ms",
        // CLOCKID and CLOCK_DATA, as perf record -k mono writes them.
        "# clockid frequency: 1000 MHz",
        "# clockid: monotonic (1)",
        "# reference time: 2026-11-29 00:59:09.136882 = 1795913949.136882 (TOD) = 10133.968427274 (monotonic)",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "no line starting with {line:?} in:\n{stdout}"
        );
    }
    assert!(stdout.contains("size = 128, config = 0x1a2"), "{stdout}");
    assert!(stdout.contains("size = 128, config = 0x3c"), "{stdout}");
    assert!(
        stdout.contains("sample_type = IP|TID|TIME|CALLCHAIN|ID|CPU|PERIOD|IDENTIFIER"),
        "{stdout}"
    );
    let missing = stdout
        .lines()
        .find(|l| l.starts_with("# missing features:"))
        .unwrap();
    for present in ["BUILD_ID", "EVENT_DESC", "SAMPLE_TIME", "CMDLINE"] {
        assert!(!missing.contains(&format!(" {present} ")), "{missing}");
    }

    // cpiflame's reader takes the same instant from CLOCK_DATA.
    assert_eq!(
        PerfData::open(&path).unwrap().meta.clock_data,
        Some(HW_CLOCK)
    );

    let args = ["buildid-list", "-i", p];
    let stdout = stdout_of(&args, &perf(&args).unwrap());
    assert!(
        stdout
            .lines()
            .any(|l| l == format!("0102030405060708090a0b0c0d0e0f1011121314 {BIN}")),
        "{stdout}"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn linux_perf_data_reads_raw_hardware_event_file() {
    let (path, expected) = write_hw_file("hw-lpd.data");
    let file = std::fs::File::open(&path).unwrap();
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(std::io::BufReader::new(file)).unwrap();

    let attrs = perf_file.event_attributes();
    assert_eq!(attrs.len(), 2);
    for (desc, spec) in attrs.iter().zip(hw_attrs()) {
        assert_eq!(desc.name(), spec.name.as_deref());
        assert_eq!(desc.ids(), spec.ids.as_slice());
        let a = desc.attributes();
        assert!(
            matches!(a.type_, PerfEventType::DynamicPmu(4, c, 0, 0) if c == spec.config),
            "{:?}",
            a.type_
        );
        assert!(matches!(a.sampling_policy, SamplingPolicy::Period(p) if p.get() == 100_003));
        assert_eq!(a.sample_format.bits(), HW_SAMPLE_TYPE);
        assert_eq!(a.flags.bits(), spec.flags);
    }

    assert_eq!(perf_file.hostname().unwrap(), Some("cpiflame-test-host"));
    assert_eq!(perf_file.os_release().unwrap(), Some("6.1.0-cpiflame"));
    assert_eq!(perf_file.perf_version().unwrap(), Some("cpiflame-test 0.1"));
    assert_eq!(perf_file.arch().unwrap(), Some("x86_64"));
    let nr = perf_file.nr_cpus().unwrap().unwrap();
    assert_eq!((nr.nr_cpus_available, nr.nr_cpus_online), (8, 4));
    assert_eq!(
        perf_file.cpu_desc().unwrap(),
        Some("Synthetic CPU @ 1.00GHz")
    );
    assert_eq!(perf_file.cpu_id().unwrap(), Some("GenuineIntel,6,85,4"));
    assert_eq!(perf_file.total_mem().unwrap(), Some(16_384_000));
    assert_eq!(
        perf_file.cmdline().unwrap(),
        Some(vec!["cpiflame", "record", "--", BIN])
    );
    let range = perf_file.sample_time_range().unwrap().unwrap();
    assert_eq!(
        (range.first_sample_time, range.last_sample_time),
        hw_features().sample_time.unwrap()
    );
    let mut build_ids: Vec<DsoInfo> = perf_file.build_ids().unwrap().into_values().collect();
    build_ids.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(build_ids.len(), 2);
    assert_eq!(build_ids[0].path, BIN.as_bytes());
    assert_eq!(build_ids[0].build_id, hw_build_id());
    assert_eq!(build_ids[1].path, b"[kernel.kallsyms]");
    assert_eq!(build_ids[1].build_id, vec![0xab; 20]);
    let features = perf_file.features();
    for bit in [
        feature::BUILD_ID,
        feature::HOSTNAME,
        feature::EVENT_DESC,
        feature::SAMPLE_TIME,
    ] {
        assert!(
            features.iter().any(|f| f.0 == bit),
            "feature bit {bit} not set"
        );
    }

    let mut samples = Vec::new();
    let mut others: HashMap<String, usize> = HashMap::new();
    while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
        let PerfFileRecord::EventRecord { attr_index, record } = rec else {
            *others.entry("user".into()).or_default() += 1;
            continue;
        };
        let common = record.common_data().unwrap();
        match record.parse().unwrap() {
            EventRecord::Sample(s) => {
                let raw_chain = s.callchain.unwrap();
                let chain: Vec<u64> = (0..raw_chain.len())
                    .map(|k| raw_chain.get(k).unwrap())
                    .collect();
                let ip = s.ip.unwrap();
                assert_eq!(
                    chain,
                    vec![callchain::USER, ip, MAP_START + 0x2000, MAP_START + 0x3000]
                );
                assert_eq!(s.pid, Some(PID));
                assert_eq!(s.period, Some(100_003));
                samples.push(Expected {
                    event: attr_index,
                    tid: s.tid.unwrap(),
                    ip,
                    time: s.timestamp.unwrap(),
                    cpu: s.cpu.unwrap(),
                });
            }
            EventRecord::Comm(c) => {
                assert_eq!((c.pid, c.tid, c.is_execve), (PID, PID, true));
                assert_eq!(&c.name.as_slice()[..], b"synthetic");
                assert_eq!(common.timestamp, Some(999_000));
                assert_eq!((common.pid, common.tid), (Some(PID), Some(PID)));
                *others.entry("comm".into()).or_default() += 1;
            }
            EventRecord::Mmap2(m) => {
                assert_eq!((m.pid, m.address, m.length), (PID, MAP_START, 0x1_0000));
                assert_eq!(&m.path.as_slice()[..], BIN.as_bytes());
                assert_eq!((m.protection, m.flags), (5, 2));
                assert_eq!(common.timestamp, Some(999_100));
                assert_eq!((common.id, common.cpu), (Some(101), Some(0)));
                *others.entry("mmap2".into()).or_default() += 1;
            }
            EventRecord::Fork(f) => {
                assert_eq!((f.pid, f.ppid, f.tid, f.ptid), (PID, PID, TID2, PID));
                assert_eq!(f.timestamp, 999_200);
                assert_eq!(common.tid, Some(TID2));
                *others.entry("fork".into()).or_default() += 1;
            }
            EventRecord::Exit(f) => {
                assert_eq!((f.pid, f.tid), (PID, TID2));
                *others.entry("exit".into()).or_default() += 1;
            }
            EventRecord::Lost(l) => {
                assert_eq!((l.id, l.count), (101, 3));
                assert_eq!(common.id, Some(101));
                *others.entry("lost".into()).or_default() += 1;
            }
            other => {
                *others
                    .entry(format!("{:?}", record.record_type))
                    .or_default() += 1;
                let _ = other;
            }
        }
    }
    assert_eq!(samples, expected);
    for kind in ["comm", "mmap2", "fork", "exit", "lost"] {
        assert_eq!(others.get(kind), Some(&1), "{kind}: {others:?}");
    }
    let _ = std::fs::remove_file(&path);
}

/// The attr section (not only EVENT_DESC) is read right: drop the EVENT_DESC feature from
/// a finished file, so that `linux-perf-data` falls back to the attr section.
#[test]
fn linux_perf_data_reads_attr_section() {
    let (path, _) = write_hw_file("hw-attrs.data");
    let mut bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let u64_at = |b: &[u8], o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
    let data_end = (u64_at(&bytes, 40) + u64_at(&bytes, 48)) as usize;
    let bits: Vec<u32> = (0..256)
        .filter(|&bit| u64_at(&bytes, 72 + 8 * (bit / 64) as usize) & (1 << (bit % 64)) != 0)
        .collect();
    let k = bits.iter().position(|&b| b == feature::EVENT_DESC).unwrap();
    let table = data_end..data_end + 16 * bits.len();
    bytes.copy_within(table.start + 16 * (k + 1)..table.end, table.start + 16 * k);
    let word = 72 + 8 * (feature::EVENT_DESC / 64) as usize;
    let cleared = u64_at(&bytes, word) & !(1 << (feature::EVENT_DESC % 64));
    bytes[word..word + 8].copy_from_slice(&cleared.to_ne_bytes());

    let PerfFileReader { perf_file, .. } =
        PerfFileReader::parse_file(std::io::Cursor::new(bytes)).unwrap();
    let attrs = perf_file.event_attributes();
    assert_eq!(attrs.len(), 2);
    for (desc, spec) in attrs.iter().zip(hw_attrs()) {
        assert_eq!(desc.name(), None, "names come from EVENT_DESC only");
        let a = desc.attributes();
        assert!(matches!(a.type_, PerfEventType::DynamicPmu(4, c, 0, 0) if c == spec.config));
        assert_eq!(a.sample_format.bits(), HW_SAMPLE_TYPE);
        assert_eq!(a.flags.bits(), spec.flags);
    }
    assert_eq!(perf_file.hostname().unwrap(), Some("cpiflame-test-host"));
}

// ---------------------------------------------------------------------------------------
// Two software events with user registers and user stacks (what DWARF unwinding needs).

const SW_SAMPLE_TYPE: u64 = sample::IP
    | sample::TID
    | sample::TIME
    | sample::ID
    | sample::CPU
    | sample::PERIOD
    | sample::REGS_USER
    | sample::STACK_USER;

/// AX, BX, BP, SP, IP.
const REGS_MASK: u64 = (1 << x86_64_regs::AX)
    | (1 << x86_64_regs::BX)
    | (1 << x86_64_regs::BP)
    | (1 << x86_64_regs::SP)
    | (1 << x86_64_regs::IP);

const STACK_BYTES: usize = 64;

fn sw_attrs() -> Vec<EventAttr> {
    let common = EventAttr {
        type_: attr_type::SOFTWARE,
        sample_period_or_freq: 4000,
        sample_type: SW_SAMPLE_TYPE,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::FREQ | attr_flags::EXCLUDE_CALLCHAIN_USER,
        sample_regs_user: REGS_MASK,
        sample_stack_user: STACK_BYTES as u32,
        ..Default::default()
    };
    vec![
        EventAttr {
            config: 0, // cpu-clock
            name: None,
            ids: vec![7],
            flags: common.flags | attr_flags::MMAP | attr_flags::COMM | attr_flags::MMAP2,
            ..common.clone()
        },
        EventAttr {
            config: 1, // task-clock
            name: None,
            ids: vec![8],
            ..common
        },
    ]
}

fn sw_regs(i: u64) -> Vec<u64> {
    // In bit order: AX, BX, BP, SP, IP.
    vec![
        0xa0 + i,
        0xb0 + i,
        0x7ffc_0000_1000 + i,
        0x7ffc_0000_0f00 + i,
        MAP_START + 0x1000 + i,
    ]
}

fn write_sw_file(name: &str, n: usize) -> PathBuf {
    let path = tmp_path(name);
    let attrs = sw_attrs();
    let mut w = Recording::create(&path, attrs.clone());
    // Not `Recording::comm`'s: a COMM without the exec flag, no stream id.
    let sid = SampleId {
        pid: PID,
        tid: PID,
        time: 10,
        id: 7,
        stream_id: 0,
        cpu: 0,
    };
    w.record(&comm_record(&attrs[0], PID, PID, "swtest", false, &sid).unwrap());
    let mmap = Mmap2 {
        pid: PID,
        tid: PID,
        addr: MAP_START,
        len: 0x1_0000,
        build_id: Some(vec![0x5a; 20]),
        prot: 5,
        flags: 2,
        filename: BIN.into(),
        misc: misc::USER,
        ..Default::default()
    };
    w.record(&mmap2_record(&attrs[0], &mmap, &sid).unwrap());
    for i in 0..n {
        let attr = &attrs[i % 2];
        let stack: Vec<u8> = (0..STACK_BYTES).map(|b| (b + i) as u8).collect();
        let s = SampleFields {
            ip: MAP_START + 0x1000 + i as u64,
            pid: PID,
            tid: PID,
            time: 1000 + i as u64,
            id: attr.ids[0],
            cpu: 0,
            period: 250_000,
            regs_abi: REGS_ABI_64,
            user_regs: sw_regs(i as u64),
            user_stack: stack,
            stack_dyn_size: 40,
            misc: misc::USER,
            ..Default::default()
        };
        w.sample(i % 2, &s);
    }
    w.finish(&Features {
        arch: Some("x86_64".into()),
        ..Default::default()
    })
}

#[test]
fn perf_reads_software_events_with_user_regs_and_stack() {
    let n = 9;
    let path = write_sw_file("sw.data", n);
    let p = path.to_str().unwrap();

    let args = ["script", "-i", p, "-F", "event,ip,tid"];
    let Some(out) = perf(&args) else { return };
    let stdout = stdout_of(&args, &out);
    let events: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    let want: Vec<&str> = (0..n)
        .map(|i| ["cpu-clock:", "task-clock:"][i % 2])
        .collect();
    assert_eq!(events, want, "{stdout}");

    // perf's raw dump shows the register values and the stack's dyn_size, parsed from the
    // layout (a wrong layout fails its bounds checks or shifts the values).
    let args = ["script", "-i", p, "-D"];
    let stdout = stdout_of(&args, &perf(&args).unwrap());
    let regs_lines = stdout
        .lines()
        .filter(|l| l.contains("... user regs: mask 0x1c3 ABI 64-bit"))
        .count();
    assert_eq!(regs_lines, n, "{stdout}");
    let stack_lines = stdout
        .lines()
        .filter(|l| l.contains("... ustack: size 40, offset"))
        .count();
    assert_eq!(stack_lines, n, "{stdout}");
    for i in 0..n as u64 {
        let regs = sw_regs(i);
        for (name, value) in ["AX", "BX", "BP", "SP", "IP"].iter().zip(regs) {
            let line = format!(".... {name:<5} 0x{value:016x}");
            assert!(stdout.contains(&line), "no {line:?} in:\n{stdout}");
        }
    }

    let args = ["report", "-i", p, "--stdio"];
    let stdout = stdout_of(&args, &perf(&args).unwrap());
    assert!(stdout.contains("of event 'cpu-clock'"), "{stdout}");
    assert!(stdout.contains("of event 'task-clock'"), "{stdout}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn linux_perf_data_reads_software_events_with_user_regs_and_stack() {
    let n = 6;
    let path = write_sw_file("sw-lpd.data", n);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(std::fs::File::open(&path).unwrap()).unwrap();
    let attrs = perf_file.event_attributes();
    assert_eq!(attrs[0].name(), Some("cpu-clock"));
    assert_eq!(attrs[1].name(), Some("task-clock"));
    assert!(matches!(
        attrs[1].attributes().type_,
        PerfEventType::Software(SoftwareCounterType::TaskClock)
    ));
    assert_eq!(attrs[0].attributes().sample_regs_user, REGS_MASK);
    let mut i = 0u64;
    while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
        let PerfFileRecord::EventRecord { attr_index, record } = rec else {
            continue;
        };
        match record.parse().unwrap() {
            EventRecord::Sample(s) => {
                assert_eq!(attr_index as u64, i % 2);
                let regs = s.user_regs.unwrap();
                let want = sw_regs(i);
                assert_eq!(regs.get(x86_64_regs::AX.into()), Some(want[0]));
                assert_eq!(regs.get(x86_64_regs::SP.into()), Some(want[3]));
                assert_eq!(regs.get(x86_64_regs::IP.into()), Some(want[4]));
                let (stack, dyn_size) = s.user_stack.unwrap();
                assert_eq!(dyn_size, 40);
                let want: Vec<u8> = (0..STACK_BYTES).map(|b| (b as u64 + i) as u8).collect();
                assert_eq!(&stack.as_slice()[..], &want[..]);
                i += 1;
            }
            EventRecord::Mmap2(m) => {
                assert!(
                    matches!(&m.file_id, linux_perf_data::linux_perf_event_reader::Mmap2FileId::BuildId(b) if b == &vec![0x5a; 20])
                );
            }
            _ => {}
        }
    }
    assert_eq!(i, n as u64);
    let _ = std::fs::remove_file(&path);
}

/// PERF_RECORD_CGROUP and PERF_RECORD_NAMESPACES as the writer lays them out, read back by
/// perf script's `--show-cgroup-events` and `--show-namespace-events` (which print every
/// field), beside a sample of the same process.
#[test]
fn perf_reads_cgroup_and_namespaces_records() {
    use cpiflame_perf_data::write::{cgroup_record, namespaces_record, NAMESPACE_NAMES};
    let path = tmp_path("cgroup-ns.data");
    let attrs = sw_attrs();
    let mut w = Recording::create(&path, attrs.clone());
    let sid = SampleId {
        pid: PID,
        tid: TID2,
        time: 10,
        id: 7,
        stream_id: 0,
        cpu: 0,
    };
    w.record(&comm_record(&attrs[0], PID, TID2, "nstest", false, &sid).unwrap());
    w.record(&cgroup_record(&attrs[0], 1, "/", &sid).unwrap());
    w.record(&cgroup_record(&attrs[0], 0x1234, "/a/much/longer/cgroup-path", &sid).unwrap());
    let namespaces: Vec<(u64, u64)> = (0..NAMESPACE_NAMES.len() as u64)
        .map(|i| (4 + i, 0xf000_0000 + i))
        .collect();
    w.record(&namespaces_record(&attrs[0], PID, TID2, &namespaces, &sid).unwrap());
    w.sample(
        0,
        &SampleFields {
            ip: MAP_START,
            pid: PID,
            tid: TID2,
            time: 20,
            id: 7,
            period: 1,
            regs_abi: REGS_ABI_64,
            user_regs: sw_regs(0),
            misc: misc::USER,
            ..Default::default()
        },
    );
    w.finish(&Features::default());
    let p = path.to_str().unwrap();
    let args = [
        "script",
        "-i",
        p,
        "--show-cgroup-events",
        "--show-namespace-events",
        "-F",
        "pid,tid,event",
    ];
    let Some(out) = perf(&args) else { return };
    let stdout = stdout_of(&args, &out);
    assert!(
        stdout.contains("PERF_RECORD_CGROUP cgroup: 1 /\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("PERF_RECORD_CGROUP cgroup: 4660 /a/much/longer/cgroup-path\n"),
        "{stdout}"
    );
    // The record and its namespaces, which perf prints over the next lines up to `]`.
    let at = stdout
        .find("PERF_RECORD_NAMESPACES")
        .unwrap_or_else(|| panic!("no NAMESPACES record in:\n{stdout}"));
    let line = &stdout[at..at + stdout[at..].find(']').unwrap()];
    assert!(
        line.starts_with(&format!(
            "PERF_RECORD_NAMESPACES {PID}/{TID2} - nr_namespaces: 7"
        )),
        "{line}"
    );
    for (i, name) in NAMESPACE_NAMES.iter().enumerate() {
        let want = format!("{i}/{name}: {}/{:#x}", 4 + i, 0xf000_0000 + i);
        assert!(line.contains(&want), "no {want:?} in {line}");
    }
    assert!(
        stdout.contains("cpu-clock"),
        "the sample after them: {stdout}"
    );
    let _ = std::fs::remove_file(&path);
}
