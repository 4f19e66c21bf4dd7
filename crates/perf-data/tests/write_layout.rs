//! Byte layouts of the writer's output, checked against layouts written out by hand from
//! `include/uapi/linux/perf_event.h` and perf's `tools/perf/util/header.c`, plus the error
//! paths (oversized and malformed records) and a writer dropped without `finish`.

use std::io::Cursor;
use std::process::Command;

use cpiflame_perf_data::abi::{attr_type, callchain, feature, misc, read_format, sample};
use cpiflame_perf_data::synth::Recording;
use cpiflame_perf_data::write::{
    attr_flags, comm_record, finished_round_record, mmap2_record, read_record, sample_record,
    BuildIdEntry, EventAttr, Features, Mmap2, PerfDataWriter, ReadValue, ReadValues, SampleFields,
    SampleId, WriteError, ATTR_SIZE, FILE_ATTR_SIZE, MAX_RECORD_SIZE, REGS_ABI_64,
};

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().unwrap())
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().unwrap())
}

/// An error for input the format cannot hold (not a failure of the output).
fn is_invalid_input<T: std::fmt::Debug>(r: Result<T, WriteError>) -> bool {
    matches!(r, Err(e) if e.io_error().is_none())
}

fn group_attr() -> EventAttr {
    EventAttr {
        type_: attr_type::SOFTWARE,
        sample_period_or_freq: 1000,
        sample_type: sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::READ
            | sample::CALLCHAIN,
        read_format: read_format::GROUP
            | read_format::ID
            | read_format::TOTAL_TIME_ENABLED
            | read_format::TOTAL_TIME_RUNNING,
        flags: attr_flags::SAMPLE_ID_ALL,
        ids: vec![0x1111],
        ..Default::default()
    }
}

fn group_sample(i: u64) -> SampleFields {
    SampleFields {
        ip: 0x40_1234,
        pid: 100,
        tid: 101,
        time: 0x5000 + i,
        id: 0x1111,
        read: Some(ReadValues {
            time_enabled: 0x7000,
            time_running: 0x6000,
            values: vec![
                ReadValue {
                    value: 1000 * (i + 1),
                    id: 0x1111,
                    lost: 0,
                },
                ReadValue {
                    value: 2000 * (i + 1),
                    id: 0x2222,
                    lost: 0,
                },
            ],
        }),
        callchain: vec![callchain::USER, 0x40_1234],
        misc: misc::USER,
        ..Default::default()
    }
}

/// PERF_SAMPLE_READ with PERF_FORMAT_GROUP: `{ nr; time_enabled; time_running;
/// { value; id; } cntr[nr] }`, between PERIOD's slot and the callchain.
#[cfg(target_endian = "little")]
#[test]
fn group_read_sample_matches_the_kernel_layout() {
    let rec = sample_record(&group_attr(), &group_sample(0)).unwrap();
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0x09, 0x00, 0x00, 0x00, 0x02, 0x00, 0x78, 0x00, // type SAMPLE, misc USER, size 120
        0x11, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // IDENTIFIER
        0x34, 0x12, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, // IP
        0x64, 0x00, 0x00, 0x00, 0x65, 0x00, 0x00, 0x00, // TID: pid 100, tid 101
        0x00, 0x50, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // TIME
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // READ: nr
        0x00, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   time_enabled
        0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   time_running
        0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   cntr[0].value 1000
        0x11, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   cntr[0].id
        0xd0, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   cntr[1].value 2000
        0x22, 0x22, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   cntr[1].id
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CALLCHAIN: nr
        0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, //   PERF_CONTEXT_USER
        0x34, 0x12, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, //   ip
    ];
    assert_eq!(rec, expected);
}

/// Without PERF_FORMAT_GROUP: `{ value; time_enabled; time_running; id; lost }`.
#[cfg(target_endian = "little")]
#[test]
fn single_read_sample_matches_the_kernel_layout() {
    let attr = EventAttr {
        sample_type: sample::TID | sample::READ,
        read_format: read_format::TOTAL_TIME_ENABLED
            | read_format::TOTAL_TIME_RUNNING
            | read_format::ID
            | read_format::LOST,
        ..Default::default()
    };
    let s = SampleFields {
        pid: 1,
        tid: 2,
        read: Some(ReadValues {
            time_enabled: 0x30,
            time_running: 0x20,
            values: vec![ReadValue {
                value: 0x0102,
                id: 0x77,
                lost: 5,
            }],
        }),
        misc: misc::KERNEL,
        ..Default::default()
    };
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0x09, 0x00, 0x00, 0x00, 0x01, 0x00, 0x38, 0x00, // type SAMPLE, misc KERNEL, size 56
        0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // TID
        0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // value
        0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // time_enabled
        0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // time_running
        0x77, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // id
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // lost
    ];
    assert_eq!(sample_record(&attr, &s).unwrap(), expected);

    // PERF_RECORD_READ: pid, tid, the same read_format block.
    let rec = read_record(&attr, 1, 2, s.read.as_ref().unwrap(), &SampleId::default()).unwrap();
    assert_eq!(&rec[..4], &[0x08, 0, 0, 0]);
    assert_eq!(&rec[8..], &expected[8..]);
}

/// The `sample_id` trailer comes in the order TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER,
/// after the string padded to 8 bytes; none without sample_id_all.
#[cfg(target_endian = "little")]
#[test]
fn comm_record_with_sample_id_trailer() {
    let mut attr = EventAttr {
        sample_type: sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::ID
            | sample::STREAM_ID
            | sample::CPU
            | sample::PERIOD,
        flags: attr_flags::SAMPLE_ID_ALL,
        ..Default::default()
    };
    let sid = SampleId {
        pid: 7,
        tid: 8,
        time: 0x99,
        id: 0x42,
        stream_id: 0x43,
        cpu: 3,
    };
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0x03, 0x00, 0x00, 0x00, 0x00, 0x20, 0x48, 0x00, // type COMM, misc COMM_EXEC, size 72
        0x05, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, // pid 5, tid 6
        b'a', b'b', 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // "ab", NUL-padded to 8
        0x07, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, // sample_id: pid, tid
        0x99, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   time
        0x42, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   id
        0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   stream_id
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   cpu, reserved
        0x42, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   identifier
    ];
    assert_eq!(
        comm_record(&attr, 5, 6, "ab", true, &sid).unwrap(),
        expected
    );

    attr.flags = 0;
    let rec = comm_record(&attr, 5, 6, "ab", false, &sid).unwrap();
    assert_eq!(&rec[..8], &[0x03, 0, 0, 0, 0, 0, 24, 0]);
    assert_eq!(&rec[8..], &expected[8..24]);
}

#[cfg(target_endian = "little")]
#[test]
fn mmap2_record_with_build_id() {
    let m = Mmap2 {
        pid: 1,
        tid: 2,
        addr: 0x1000,
        len: 0x2000,
        pgoff: 0x3000,
        build_id: Some(vec![0xaa, 0xbb, 0xcc]),
        prot: 5,
        flags: 2,
        filename: "/b".into(),
        misc: misc::USER,
        ..Default::default()
    };
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0x0a, 0x00, 0x00, 0x00, 0x02, 0x40, 0x50, 0x00, // MMAP2, misc USER|MMAP_BUILD_ID, 80
        0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // pid, tid
        0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // addr
        0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // len
        0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // pgoff
        0x03, 0x00, 0x00, 0x00, 0xaa, 0xbb, 0xcc, 0x00, // build_id_size, reserved, build_id
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x05, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // prot, flags
        b'/', b'b', 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // filename
    ];
    assert_eq!(
        mmap2_record(&EventAttr::default(), &m, &SampleId::default()).unwrap(),
        expected
    );
}

/// perf reads group READ samples by handing each counter's delta to its own event: the
/// leader (cpu-clock, id 0x1111) gets 1000 per sample, the member (task-clock, 0x2222) 2000.
#[test]
fn perf_splits_group_read_samples_per_member() {
    let leader = EventAttr {
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM,
        ..group_attr()
    };
    let member = EventAttr {
        config: 1,
        ids: vec![0x2222],
        ..group_attr()
    };
    let path = std::env::temp_dir().join(format!("cpiflame-group-{}.data", std::process::id()));
    let mut w = Recording::create(&path, vec![leader, member]);
    w.comm(100, 101, "grp", 1);
    for i in 0..3 {
        w.sample(0, &group_sample(i));
    }
    w.finish(&Features::default());
    let out = match Command::new("perf")
        .args([
            "script",
            "-i",
            path.to_str().unwrap(),
            "-F",
            "tid,period,event",
        ])
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("cannot run `perf` ({e})"));
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let want: Vec<Vec<&str>> = (0..3)
        .flat_map(|_| {
            [
                vec!["101", "1000", "cpu-clock:"],
                vec!["101", "2000", "task-clock:"],
            ]
        })
        .collect();
    assert_eq!(got, want, "{stdout}");
    let _ = std::fs::remove_file(path);
}

fn one_attr() -> EventAttr {
    EventAttr {
        type_: attr_type::SOFTWARE,
        sample_period_or_freq: 4000,
        sample_type: sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::FREQ,
        ids: vec![5, 6],
        name: Some("cpu-clock".into()),
        ..Default::default()
    }
}

/// The header and attr section as `perf record` lays them out (the same offsets it used for
/// one cpu-clock attr with two ids): header, ids, attrs, data.
#[test]
fn header_and_attr_section_layout() {
    let w = PerfDataWriter::new(Cursor::new(Vec::new()), vec![one_attr()]).unwrap();
    assert_eq!(w.data_offset(), 104 + 16 + 144);
    let b = w.get_ref().get_ref().clone();
    assert_eq!(b.len(), 264);
    assert_eq!(&b[..8], b"PERFILE2");
    assert_eq!(u64_at(&b, 8), 104, "header size");
    assert_eq!(u64_at(&b, 16), FILE_ATTR_SIZE as u64, "attr_size");
    assert_eq!(
        (u64_at(&b, 24), u64_at(&b, 32)),
        (120, 144),
        "attrs section"
    );
    assert_eq!((u64_at(&b, 40), u64_at(&b, 48)), (264, 0), "data section");
    assert_eq!(
        (u64_at(&b, 56), u64_at(&b, 64)),
        (0, 0),
        "event_types section"
    );
    assert!(b[72..104].iter().all(|&x| x == 0), "no features yet");
    assert_eq!((u64_at(&b, 104), u64_at(&b, 112)), (5, 6), "ids");
    assert_eq!(u32_at(&b, 120), attr_type::SOFTWARE);
    assert_eq!(u32_at(&b, 124), ATTR_SIZE as u32, "attr.size");
    assert_eq!(
        u64_at(&b, 120 + 40),
        attr_flags::SAMPLE_ID_ALL | attr_flags::FREQ
    );
    assert_eq!(
        (u64_at(&b, 248), u64_at(&b, 256)),
        (104, 16),
        "ids section of the attr"
    );
}

/// Against a file `perf record` writes here: the installed perf must accept our attr size
/// (perf refuses attrs larger than its own `struct perf_event_attr`, which is what it
/// writes), and [`Features::from_host`] must describe the machine as perf does.
#[test]
fn attr_size_and_host_features_match_perf_record() {
    let path = std::env::temp_dir().join(format!("cpiflame-ref-{}.data", std::process::id()));
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            path.to_str().unwrap(),
            "true",
        ])
        .output();
    match out {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            cpiflame_testkit::unavailable(format!(
                "perf record failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
            return;
        }
        Err(e) => {
            cpiflame_testkit::unavailable(format!("cannot run `perf` ({e})"));
            return;
        }
    }
    let b = std::fs::read(&path).unwrap();
    let header = Command::new("perf")
        .args(["report", "--header-only", "-i", path.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let perf_attr_size = u64_at(&b, 16);
    let attrs_offset = u64_at(&b, 24) as usize;
    let perf_attr_struct = u32_at(&b, attrs_offset + 4) as usize;
    assert_eq!(perf_attr_size as usize, perf_attr_struct + 16);
    assert!(
        ATTR_SIZE <= perf_attr_struct,
        "perf here writes {perf_attr_struct}-byte attrs"
    );
    println!("perf record writes attr.size {perf_attr_struct}, attr_size {perf_attr_size}");

    // Features::from_host describes this machine as perf record does.
    let header = String::from_utf8_lossy(&header.stdout);
    let host = Features::from_host(vec![]);
    let (avail, online) = host.nr_cpus.unwrap();
    let mut want = vec![
        format!("# hostname : {}", host.hostname.unwrap()),
        format!("# os release : {}", host.os_release.unwrap()),
        format!("# arch : {}", host.arch.unwrap()),
        format!("# nrcpus online : {online}"),
        format!("# nrcpus avail : {avail}"),
        format!("# total memory : {} kB", host.total_mem_kb.unwrap()),
    ];
    if let Some(desc) = host.cpu_desc {
        want.push(format!("# cpudesc : {desc}"));
    }
    if let Some(cpuid) = host.cpuid {
        want.push(format!("# cpuid : {cpuid}"));
    }
    for line in want {
        assert!(
            header.lines().any(|l| l == line),
            "no {line:?} in:\n{header}"
        );
    }
}

/// Feature sections follow the data in bit order, located by a table right after the data;
/// strings are `u32 len` + NUL-padded to 64 bytes.
#[test]
fn feature_table_and_sections() {
    let attr = one_attr();
    let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), vec![attr.clone()]).unwrap();
    w.write_record(&finished_round_record()).unwrap();
    let features = Features {
        hostname: Some("host".into()),
        nr_cpus: Some((16, 12)),
        total_mem_kb: Some(1234),
        cmdline: vec!["a".into(), "bc".into()],
        build_ids: vec![BuildIdEntry {
            pid: -1,
            misc: misc::USER,
            build_id: vec![1, 2, 3, 4],
            path: "/lib/x.so".into(),
        }],
        sample_time: Some((10, 20)),
        ..Default::default()
    };
    let b = w.finish(&features).unwrap().into_inner();
    let data_end = (u64_at(&b, 40) + u64_at(&b, 48)) as usize;
    assert_eq!(u64_at(&b, 48), 8);
    let bits: Vec<u32> = (0..256u32)
        .filter(|&bit| u64_at(&b, 72 + 8 * (bit / 64) as usize) & (1 << (bit % 64)) != 0)
        .collect();
    assert_eq!(
        bits,
        vec![
            feature::BUILD_ID,
            feature::HOSTNAME,
            feature::NRCPUS,
            feature::TOTAL_MEM,
            feature::CMDLINE,
            feature::EVENT_DESC,
            feature::SAMPLE_TIME
        ]
    );
    let mut sections = Vec::new();
    let mut next = data_end + 16 * bits.len();
    for i in 0..bits.len() {
        let (off, size) = (
            u64_at(&b, data_end + 16 * i) as usize,
            u64_at(&b, data_end + 16 * i + 8) as usize,
        );
        assert_eq!(off, next, "sections are contiguous, in bit order");
        next = off + size;
        sections.push(&b[off..off + size]);
    }
    assert_eq!(next, b.len(), "the file ends with the last section");

    // BUILD_ID: header {type 0, misc USER|BUILD_ID_SIZE, size}, pid, build id[20], size
    // byte, 3 reserved, filename padded to 64.
    let bid = sections[0];
    assert_eq!(bid.len(), 8 + 4 + 24 + 64);
    assert_eq!(u32_at(bid, 0), 0);
    assert_eq!(u16::from_ne_bytes([bid[4], bid[5]]), misc::USER | 1 << 15);
    assert_eq!(u16::from_ne_bytes([bid[6], bid[7]]) as usize, bid.len());
    assert_eq!(u32_at(bid, 8), u32::MAX, "pid -1");
    assert_eq!(&bid[12..16], &[1, 2, 3, 4]);
    assert!(bid[16..32].iter().all(|&x| x == 0));
    assert_eq!(bid[32], 4, "build id size");
    assert_eq!(&bid[36..46], b"/lib/x.so\0");

    assert_eq!(sections[1].len(), 4 + 64);
    assert_eq!(u32_at(sections[1], 0), 64);
    assert_eq!(&sections[1][4..9], b"host\0");
    assert_eq!(
        sections[2],
        [16u32.to_ne_bytes(), 12u32.to_ne_bytes()].concat()
    );
    assert_eq!(sections[3], 1234u64.to_ne_bytes());
    let cmd = sections[4];
    assert_eq!(cmd.len(), 4 + 2 * (4 + 64));
    assert_eq!(u32_at(cmd, 0), 2);
    assert_eq!(&cmd[8..10], b"a\0");
    assert_eq!(&cmd[4 + 68 + 4..4 + 68 + 7], b"bc\0");

    // EVENT_DESC: nr, attr_size, then attr, nr_ids, name, ids.
    let ed = sections[5];
    assert_eq!((u32_at(ed, 0), u32_at(ed, 4)), (1, ATTR_SIZE as u32));
    assert_eq!(&ed[8..8 + ATTR_SIZE], &attr.encode()[..]);
    assert_eq!(u32_at(ed, 8 + ATTR_SIZE), 2);
    assert_eq!(u32_at(ed, 12 + ATTR_SIZE), 64);
    assert_eq!(&ed[16 + ATTR_SIZE..26 + ATTR_SIZE], b"cpu-clock\0");
    assert_eq!(u64_at(ed, 80 + ATTR_SIZE), 5);
    assert_eq!(u64_at(ed, 88 + ATTR_SIZE), 6);
    assert_eq!(ed.len(), 96 + ATTR_SIZE);
    assert_eq!(
        sections[6],
        [10u64.to_ne_bytes(), 20u64.to_ne_bytes()].concat()
    );
}

/// A writer dropped mid-run (a killed recorder) leaves what `perf record` leaves: a header
/// with data size 0 and no features, with the records written so far after it.
#[test]
fn dropped_writer_leaves_data_size_zero_and_the_records() {
    let attr = one_attr();
    let path = std::env::temp_dir().join(format!("cpiflame-dropped-{}.data", std::process::id()));
    let sid = SampleId {
        pid: 1,
        tid: 1,
        time: 5,
        id: 5,
        ..Default::default()
    };
    let mut records = Vec::new();
    records.push(comm_record(&attr, 1, 1, "killed", false, &sid).unwrap());
    for i in 0..3 {
        let s = SampleFields {
            ip: 0x1000 + i,
            pid: 1,
            tid: 1,
            time: 10 + i,
            id: 5,
            ..Default::default()
        };
        records.push(sample_record(&attr, &s).unwrap());
    }
    let mut w = Recording::create(&path, vec![attr]);
    let data_offset = w.writer().data_offset();
    for r in &records {
        w.record(r);
    }
    assert_eq!(w.writer().records_written(), 4);
    assert_eq!(
        w.writer().bytes_written(),
        records.iter().map(|r| r.len() as u64).sum::<u64>()
    );
    // The writer dropped, without finish().
    w.abandon();
    let b = std::fs::read(&path).unwrap();
    assert_eq!(&b[..8], b"PERFILE2");
    assert_eq!(u64_at(&b, 40), data_offset);
    assert_eq!(u64_at(&b, 48), 0, "data size");
    assert!(b[72..104].iter().all(|&x| x == 0), "no feature bits");
    assert_eq!(&b[data_offset as usize..], &records.concat()[..]);

    // perf recognises it as an unfinished recording.
    if let Ok(out) = Command::new("perf")
        .args(["report", "--stdio", "-i", path.to_str().unwrap()])
        .output()
    {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("data size field is 0"), "{stderr}");
    }
    let _ = std::fs::remove_file(path);
}

#[test]
fn oversized_records_are_errors() {
    let attr = EventAttr {
        sample_type: sample::CALLCHAIN,
        ..Default::default()
    };
    // header 8 + nr 8 + 8 per entry: 8189 entries make the largest record, 65528 bytes.
    let fits = SampleFields {
        callchain: vec![1; 8189],
        ..Default::default()
    };
    let rec = sample_record(&attr, &fits).unwrap();
    assert_eq!(rec.len(), MAX_RECORD_SIZE);
    assert_eq!(
        u16::from_ne_bytes([rec[6], rec[7]]) as usize,
        MAX_RECORD_SIZE
    );
    let too_big = SampleFields {
        callchain: vec![1; 8190],
        ..Default::default()
    };
    assert!(is_invalid_input(sample_record(&attr, &too_big)));

    let name = "x".repeat(70_000);
    assert!(is_invalid_input(comm_record(
        &attr,
        1,
        1,
        &name,
        false,
        &SampleId::default()
    )));
    let m = Mmap2 {
        filename: "/".repeat(65_500),
        ..Default::default()
    };
    assert!(is_invalid_input(mmap2_record(
        &attr,
        &m,
        &SampleId::default()
    )));
    let stack = SampleFields {
        user_stack: vec![0; 65_536],
        ..Default::default()
    };
    let stack_attr = EventAttr {
        sample_type: sample::STACK_USER,
        ..Default::default()
    };
    assert!(is_invalid_input(sample_record(&stack_attr, &stack)));
}

#[test]
fn malformed_records_are_rejected_and_nothing_is_written() {
    let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), vec![one_attr()]).unwrap();
    let good = finished_round_record();
    let mut bad_size = good.clone();
    bad_size[6] = 16; // header says 16, slice has 8
    assert!(is_invalid_input(w.write_record(&bad_size)));
    assert!(is_invalid_input(w.write_record(&good[..6])));
    let mut odd = vec![0u8; 12];
    odd[6] = 12;
    assert!(is_invalid_input(w.write_record(&odd)));
    let mut zero = good.clone();
    zero[6] = 0;
    assert!(is_invalid_input(w.write_record(&zero)));
    // A run of records must tile the slice exactly.
    let mut run = [good.clone(), good.clone()].concat();
    run.extend_from_slice(&good[..4]);
    assert!(is_invalid_input(w.write_records(&run)));
    assert_eq!((w.records_written(), w.bytes_written()), (0, 0));
    assert_eq!(w.get_ref().get_ref().len() as u64, w.data_offset());

    w.write_records(&[good.clone(), good.clone(), good].concat())
        .unwrap();
    assert_eq!((w.records_written(), w.bytes_written()), (3, 24));
}

#[test]
fn unsupported_or_inconsistent_samples_are_errors() {
    let base = SampleFields::default();
    let with = |sample_type| EventAttr {
        sample_type,
        ..Default::default()
    };
    for bit in [sample::TRANSACTION, sample::REGS_INTR, 1 << 40] {
        assert!(
            is_invalid_input(sample_record(&with(sample::IP | bit), &base)),
            "{bit:#x}"
        );
    }
    // A branch stack with per-entry counters (PERF_SAMPLE_BRANCH_COUNTERS) is not laid out.
    let counters = EventAttr {
        branch_sample_type: 1 << 19,
        ..with(sample::IP | sample::BRANCH_STACK)
    };
    assert!(is_invalid_input(sample_record(&counters, &base)));
    // READ without values, or with two values but no GROUP, or an unknown read_format bit.
    assert!(is_invalid_input(sample_record(&with(sample::READ), &base)));
    let two = SampleFields {
        read: Some(ReadValues {
            values: vec![ReadValue::default(); 2],
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(is_invalid_input(sample_record(&with(sample::READ), &two)));
    let odd_format = EventAttr {
        read_format: 1 << 7,
        ..with(sample::READ)
    };
    let one = SampleFields {
        read: Some(ReadValues {
            values: vec![ReadValue::default()],
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(is_invalid_input(sample_record(&odd_format, &one)));
    // Registers must match sample_regs_user; none with ABI_NONE.
    let regs_attr = EventAttr {
        sample_regs_user: 0b111,
        ..with(sample::REGS_USER)
    };
    let regs = |abi, n| SampleFields {
        regs_abi: abi,
        user_regs: vec![0; n],
        ..Default::default()
    };
    assert!(sample_record(&regs_attr, &regs(REGS_ABI_64, 3)).is_ok());
    assert_eq!(sample_record(&regs_attr, &regs(0, 0)).unwrap().len(), 16);
    assert!(is_invalid_input(sample_record(
        &regs_attr,
        &regs(REGS_ABI_64, 2)
    )));
    assert!(is_invalid_input(sample_record(&regs_attr, &regs(0, 3))));
    // The user stack: a multiple of 8, dyn_size within it; empty writes only size 0.
    let stack = |len, dyn_size| SampleFields {
        user_stack: vec![0; len],
        stack_dyn_size: dyn_size,
        ..Default::default()
    };
    let st = with(sample::STACK_USER);
    assert!(is_invalid_input(sample_record(&st, &stack(12, 0))));
    assert!(is_invalid_input(sample_record(&st, &stack(16, 17))));
    assert_eq!(
        sample_record(&st, &stack(16, 16)).unwrap().len(),
        8 + 8 + 16 + 8
    );
    assert_eq!(sample_record(&st, &stack(0, 0)).unwrap().len(), 16);
    // Build ids are at most 20 bytes.
    let long_id = Features {
        build_ids: vec![BuildIdEntry {
            build_id: vec![0; 21],
            ..Default::default()
        }],
        ..Default::default()
    };
    let w = PerfDataWriter::new(Cursor::new(Vec::new()), vec![one_attr()]).unwrap();
    assert!(is_invalid_input(w.finish(&long_id)));
    assert!(is_invalid_input(PerfDataWriter::new(
        Cursor::new(Vec::new()),
        vec![]
    )));
}

/// A device-and-inode MMAP2 record given a build id in place is, byte for byte, the record
/// written with that build id (what the kernel writes with `attr.build_id`); other records
/// and unusable build ids are left alone.
#[test]
fn a_build_id_put_into_an_mmap2_record_is_the_record_written_with_it() {
    use cpiflame_perf_data::write::{mmap2_record, set_mmap2_build_id, Mmap2, SampleId};
    let attr = EventAttr {
        sample_type: sample::TID | sample::TIME | sample::IDENTIFIER,
        flags: cpiflame_perf_data::write::attr_flags::SAMPLE_ID_ALL,
        ..EventAttr::default()
    };
    let sid = SampleId {
        pid: 7,
        tid: 8,
        time: 99,
        id: 3,
        ..SampleId::default()
    };
    let plain = Mmap2 {
        pid: 7,
        tid: 8,
        addr: 0x40_0000,
        len: 0x2000,
        pgoff: 0x1000,
        maj: 0xfe,
        min: 1,
        ino: 123456,
        ino_generation: 5,
        prot: 5,
        flags: 2,
        filename: "/opt/app/bin/app".into(),
        misc: misc::USER,
        ..Mmap2::default()
    };
    let id: Vec<u8> = (1..=20).collect();
    let with_id = Mmap2 {
        build_id: Some(id.clone()),
        ..plain.clone()
    };
    let mut record = mmap2_record(&attr, &plain, &sid).unwrap();
    assert!(set_mmap2_build_id(&mut record, &id));
    assert_eq!(record, mmap2_record(&attr, &with_id, &sid).unwrap());
    // A shorter id (MD5's 16 bytes) likewise.
    let mut record = mmap2_record(&attr, &plain, &sid).unwrap();
    let short = Mmap2 {
        build_id: Some(id[..16].to_vec()),
        ..plain.clone()
    };
    assert!(set_mmap2_build_id(&mut record, &id[..16]));
    assert_eq!(record, mmap2_record(&attr, &short, &sid).unwrap());
    let untouched = mmap2_record(&attr, &plain, &sid).unwrap();
    for bad in [&[][..], &[0u8; 21][..]] {
        let mut record = untouched.clone();
        assert!(!set_mmap2_build_id(&mut record, bad));
        assert_eq!(record, untouched);
    }
    let mut comm = cpiflame_perf_data::write::comm_record(&attr, 7, 8, "app", false, &sid).unwrap();
    let before = comm.clone();
    assert!(!set_mmap2_build_id(&mut comm, &id));
    assert_eq!(comm, before);
}
