//! PERF_RECORD_READ (`struct { header; u32 pid, tid; struct read_format values; struct
//! sample_id sample_id; }`, include/uapi/linux/perf_event.h): read back as written, a record
//! whose size does not fit its read_format one error naming its offset, and perf (the
//! oracle) reading a file with one exactly as the same file without it, warnings included.

use std::path::Path;
use std::process::Command;

use cpiflame_perf_data::abi::{attr_type, misc, read_format, record, sample};
use cpiflame_perf_data::synth::Recording;
use cpiflame_perf_data::write::{
    attr_flags, read_record, EventAttr, Features, ReadValue, ReadValues, SampleFields,
};
use cpiflame_perf_data::{ErrorKind, PerfData, RecordKind};
use cpiflame_testkit::{perf_works, Dir};

/// A leader-sampled pair as the recorder opens it: read_format ID|GROUP|LOST.
fn attrs() -> Vec<EventAttr> {
    let leader = EventAttr {
        type_: attr_type::SOFTWARE,
        sample_period_or_freq: 1000,
        sample_type: sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::READ,
        read_format: read_format::GROUP | read_format::ID | read_format::LOST,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM,
        ids: vec![11],
        name: Some("cpu-clock".into()),
        ..Default::default()
    };
    let member = EventAttr {
        config: 1,
        sample_period_or_freq: 0,
        flags: attr_flags::SAMPLE_ID_ALL,
        ids: vec![12],
        name: Some("task-clock".into()),
        ..leader.clone()
    };
    vec![leader, member]
}

fn values(leader: u64, member: u64) -> ReadValues {
    ReadValues {
        values: vec![
            ReadValue {
                value: leader,
                id: 11,
                lost: 0,
            },
            ReadValue {
                value: member,
                id: 12,
                lost: 3,
            },
        ],
        ..Default::default()
    }
}

/// A file with a thread's name, optionally the READ record `read`, then three samples.
fn file(path: &Path, read: Option<&[u8]>) {
    let mut w = Recording::create(path, attrs());
    w.comm(100, 100, "grp", 1);
    if let Some(read) = read {
        w.record(read);
    }
    for i in 0..3u64 {
        w.sample(
            0,
            &SampleFields {
                ip: 0x40_1000,
                pid: 100,
                tid: 100,
                time: 10 + i,
                id: 11,
                read: Some(values(5000 + 1000 * i, 7000 + 2000 * i)),
                misc: misc::USER,
                ..Default::default()
            },
        );
    }
    w.finish(&Features::default());
}

fn seed() -> Vec<u8> {
    let w = Recording::in_memory(attrs());
    read_record(
        &attrs()[0],
        100,
        100,
        &values(4000, 5000),
        &w.sid(100, 100, 5),
    )
    .unwrap()
}

#[test]
fn read_records_read_back_as_written() {
    let dir = Dir::new("read-records");
    let path = dir.path("read.data");
    file(&path, Some(&seed()));
    let data = PerfData::open(&path).unwrap();
    let reads: Vec<_> = data
        .records()
        .map(|r| r.unwrap())
        .filter_map(|r| match r.kind {
            RecordKind::Read(read) => Some((r.time, r.attr, read)),
            _ => None,
        })
        .collect();
    let [(time, attr, read)] = &reads[..] else {
        panic!("one READ record: {reads:?}")
    };
    assert_eq!(
        (*time, *attr, read.pid, read.tid),
        (Some(5), Some(0), 100, 100)
    );
    assert_eq!(
        read.values.counters(),
        [(4000, Some(11), Some(0)), (5000, Some(12), Some(3))]
    );
}

/// A group count past the record, or bytes left after the values, is one error at the
/// record's offset, which its message names.
#[test]
fn read_records_of_the_wrong_size_name_their_offset() {
    let dir = Dir::new("read-records-bad");
    let good = seed();
    let path = dir.path("good.data");
    file(&path, Some(&good));
    let at = PerfData::open(&path)
        .unwrap()
        .records_in_file_order()
        .map(|r| r.unwrap())
        .find(|r| r.record_type == record::READ)
        .unwrap()
        .offset;
    // The group count (after the header, pid and tid) claims one more counter than there is.
    let mut more = good.clone();
    more[16..24].copy_from_slice(&3u64.to_ne_bytes());
    // One counter fewer: its bytes are left over before the trailer.
    let mut fewer = good.clone();
    fewer[16..24].copy_from_slice(&1u64.to_ne_bytes());
    for (name, bad, too_long) in [("more", more, false), ("fewer", fewer, true)] {
        let path = dir.path(&format!("{name}.data"));
        file(&path, Some(&bad));
        let data = PerfData::open(&path).unwrap();
        let walked: Vec<_> = data.records().collect();
        let errors: Vec<_> = walked.iter().filter_map(|r| r.as_ref().err()).collect();
        let [e] = errors[..] else {
            panic!("{name}: one error: {walked:?}")
        };
        assert!(
            walked.last().unwrap().is_err(),
            "{name}: the walk ends at the error"
        );
        assert_eq!(e.offset, Some(at), "{name}: the READ record's offset");
        match e.kind {
            ErrorKind::BadRecordSize { record_type, size } if too_long => {
                assert_eq!((record_type, size), (record::READ, bad.len() as u64))
            }
            ErrorKind::ShortRecord { record_type, .. } if !too_long => {
                assert_eq!(record_type, record::READ)
            }
            ref other => panic!("{name}: {other:?}"),
        }
        let message = e.to_string();
        assert!(
            message.contains(&format!("{at:#x}")) || message.contains(&at.to_string()),
            "{message}"
        );
    }
}

/// perf reads past a group READ record: `perf script` and `perf report` of the file with
/// one print what they print of the same file without it, on stdout and on stderr.
#[test]
fn perf_reads_a_file_with_a_read_record_as_without_it() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    let dir = Dir::new("read-records-perf");
    let with = dir.path("with.data");
    let without = dir.path("without.data");
    file(&with, Some(&seed()));
    file(&without, None);
    let run = |args: &[&str], path: &Path| {
        let out = Command::new("perf")
            .args(args)
            .arg("-i")
            .arg(path)
            .output()
            .expect("perf");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "perf {args:?}: {stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };
    for args in [
        &["script", "-F", "comm,tid,time,event,period,ip"][..],
        &["report", "--stdio", "--sort", "comm,sym"][..],
    ] {
        let (theirs, stderr) = run(args, &with);
        let (plain, plain_stderr) = run(args, &without);
        // perf report warns of what a synthetic file lacks (kernel maps): of both alike.
        assert_eq!(stderr, plain_stderr, "perf {args:?}'s warnings");
        assert_eq!(theirs, plain, "perf {args:?}");
        assert!(!theirs.trim().is_empty());
    }
    // perf's own deltas start from zero: the READ record is not one of its inputs.
    let (script, _) = run(&["script", "-F", "event,period"], &with);
    let first: Vec<Vec<&str>> = script
        .lines()
        .take(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        first,
        [["5000", "cpu-clock:"], ["7000", "task-clock:"]],
        "{script}"
    );
}
