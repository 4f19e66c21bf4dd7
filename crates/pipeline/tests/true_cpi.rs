//! True CPI: per-sample weights of leader-sampled groups (PERF_SAMPLE_READ), per-sample
//! periods, and hybrid core types merged, on synthetic perf.data files written with the
//! project's writer. Every expected count is worked out by hand in the test.

use std::path::{Path, PathBuf};

use cpiflame_perf_data::abi::{misc, read_format, sample};
use cpiflame_perf_data::write::{
    attr_flags, comm_record, mmap2_record, read_record, sample_record, EventAttr, Features, Mmap2,
    PerfDataWriter, ReadValue, ReadValues, SampleFields, SampleId,
};
use cpiflame_pipeline::{load_any, LoadOptions, Loaded, Roles};
use cpiflame_profile::Count;
use cpiflame_testkit::Dir;

const CODE: u64 = 0x7f00_0000_0000;
const FUNCTIONS: [&str; 3] = ["f", "g", "h"];

fn addr_of(name: &str) -> u64 {
    CODE + FUNCTIONS.iter().position(|f| *f == name).unwrap() as u64 * 0x100 + 0x10
}

/// A pid of our own per test, so the perf map naming the code is ours alone.
fn pid_for(salt: u32) -> i32 {
    (3_600_000 + (std::process::id() % 100_000) * 8 + salt) as i32
}

/// One sample to write: event index, thread, leaf function, the sample's own period, and
/// the read values (value per counter id) when the attr has PERF_SAMPLE_READ.
struct S {
    attr: usize,
    tid: i32,
    leaf: &'static str,
    period: u64,
    read: Vec<(u64, u64)>,
}

/// Writes `attrs` and `samples` (threads `pid` and `pid + tid`) to a perf.data file whose
/// code is named by a perf map; returns its scratch directory (removed when dropped) and
/// its path.
fn write(name: &str, salt: u32, attrs: &[EventAttr], samples: &[S]) -> (Dir, PathBuf) {
    write_with_reads(name, salt, attrs, &[], samples)
}

/// A READ record to write: before the sample with this index, of thread `pid + tid`, the
/// group's values (value per counter id).
struct R {
    before: usize,
    tid: i32,
    read: Vec<(u64, u64)>,
}

/// [`write`], with READ records of the first attr's layout among the samples.
fn write_with_reads(
    name: &str,
    salt: u32,
    attrs: &[EventAttr],
    reads: &[R],
    samples: &[S],
) -> (Dir, PathBuf) {
    let pid = pid_for(salt);
    let dir = Dir::new("true-cpi");
    let path = dir.path(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = PerfDataWriter::new(file, attrs.to_vec()).unwrap();
    let sid = |tid, time| SampleId {
        pid,
        tid,
        time,
        id: attrs[0].ids[0],
        stream_id: attrs[0].ids[0],
        cpu: 0,
    };
    for tid in [pid, pid + 1] {
        w.write_record(&comm_record(&attrs[0], pid, tid, "app", false, &sid(tid, 1)).unwrap())
            .unwrap();
    }
    let mmap = Mmap2 {
        pid,
        tid: pid,
        addr: CODE,
        len: 0x1000,
        prot: 5,
        flags: 2,
        filename: "//anon".into(),
        misc: misc::USER,
        ..Mmap2::default()
    };
    w.write_record(&mmap2_record(&attrs[0], &mmap, &sid(pid, 2)).unwrap())
        .unwrap();
    let values = |read: &[(u64, u64)], i: usize| ReadValues {
        time_enabled: 1000 + i as u64,
        time_running: 900 + i as u64,
        values: read
            .iter()
            .map(|&(id, value)| ReadValue { value, id, lost: 0 })
            .collect(),
    };
    for (i, s) in samples.iter().enumerate() {
        for r in reads.iter().filter(|r| r.before == i) {
            let tid = pid + r.tid;
            let record = read_record(
                &attrs[0],
                pid,
                tid,
                &values(&r.read, i),
                &sid(tid, 10 + i as u64),
            );
            w.write_record(&record.unwrap()).unwrap();
        }
        let attr = &attrs[s.attr];
        let read = (attr.sample_type & sample::READ != 0).then(|| values(&s.read, i));
        let fields = SampleFields {
            ip: addr_of(s.leaf),
            pid,
            tid: pid + s.tid,
            time: 10 + i as u64,
            id: attr.ids[0],
            period: s.period,
            read,
            misc: misc::USER,
            ..SampleFields::default()
        };
        w.write_record(&sample_record(attr, &fields).unwrap())
            .unwrap();
    }
    let mut features = Features::from_host(vec!["test".into()]);
    features.arch = Some("x86_64".into());
    w.finish(&features).unwrap();
    let map: String = FUNCTIONS
        .iter()
        .map(|f| format!("{:x} 100 {f}\n", addr_of(f) - 0x10))
        .collect();
    std::fs::write(format!("/tmp/perf-{pid}.map"), map).unwrap();
    (dir, path)
}

fn load(path: &Path, options: LoadOptions) -> Loaded {
    let mut warnings = Vec::new();
    let loaded = load_any(
        &LoadOptions {
            file: path.to_path_buf(),
            tid: true,
            kernel: true,
            ..options
        },
        &mut warnings,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(path);
    loaded
}

/// The count of `event` for the stack `app-PID/TID;LEAF` (thread `pid + tid`).
fn count(l: &Loaded, salt: u32, tid: i32, leaf: &str, event: usize) -> Count {
    let pid = pid_for(salt);
    let want = [format!("app-{pid}/{}", pid + tid), leaf.to_string()];
    let p = &l.profile;
    p.stacks
        .iter()
        .find(|s| {
            s.frames.len() == 2
                && s.frames
                    .iter()
                    .zip(&want)
                    .all(|(&f, w)| p.frame(f).name == *w)
        })
        .map(|s| s.counts[event])
        .unwrap_or_default()
}

fn c(samples: u64, period: u64) -> Count {
    Count { samples, period }
}

const HW: u32 = 0;
const CYCLES: u64 = 0;
const INSTRUCTIONS: u64 = 1;

/// A `{cycles,instructions}:S` pair as perf record writes it: the leader samples in
/// frequency mode with the group's values (ids, lost, both times), the member does not
/// sample. `flags` adds e.g. INHERIT.
fn group_attrs(flags: u64, rf: u64) -> Vec<EventAttr> {
    let sample_type = sample::IP | sample::TID | sample::TIME | sample::ID | sample::PERIOD;
    vec![
        EventAttr {
            type_: HW,
            config: CYCLES,
            sample_period_or_freq: 4000,
            sample_type: sample_type | sample::READ,
            read_format: rf,
            flags: attr_flags::FREQ | attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | flags,
            ids: vec![10, 11],
            ..EventAttr::default()
        },
        EventAttr {
            type_: HW,
            config: INSTRUCTIONS,
            sample_type: sample_type | sample::READ,
            read_format: rf,
            flags: attr_flags::SAMPLE_ID_ALL | flags,
            ids: vec![20, 21],
            ..EventAttr::default()
        },
    ]
}

const FULL_GROUP: u64 = read_format::GROUP
    | read_format::ID
    | read_format::LOST
    | read_format::TOTAL_TIME_ENABLED
    | read_format::TOTAL_TIME_RUNNING;

/// The group's values of [`group_samples`] when inherited (each thread's rise from zero):
/// thread 0 (1000,500) f, (1600,800) f, (2000,800) g; thread 1 (3000,1000) g, (3500,2000) h.
const INHERITED: [(u64, u64); 5] = [
    (1000, 500),
    (3000, 1000),
    (1600, 800),
    (3500, 2000),
    (2000, 800),
];

/// The same when not inherited: one counter per id, rising across the threads.
const PLAIN: [(u64, u64); 5] = [
    (1000, 500),
    (3000, 1000),
    (3600, 1300),
    (4100, 2300),
    (4500, 2300),
];

/// Leader samples of two threads, interleaved, on one id pair (10 = cycles, 20 =
/// instructions). The sample's own period is off by 7 from the cycles delta: perf weighs
/// the leader by its value's delta too.
fn group_samples(values: [(u64, u64); 5]) -> Vec<S> {
    let threads = [0, 1, 0, 1, 0];
    let leaves = ["f", "g", "f", "h", "g"];
    (0..5)
        .map(|i| S {
            attr: 0,
            tid: threads[i],
            leaf: leaves[i],
            period: 7,
            read: vec![(10, values[i].0), (20, values[i].1)],
        })
        .collect()
}

#[test]
fn inherited_group_weights_are_per_thread_deltas() {
    // Inherited: id 10 counts in both threads, each thread's values start at zero.
    // Thread 0: (1000,500) f, (1600,800) f, (2000,800) g.
    // Thread 1: (3000,1000) g, (3500,2000) h.
    let values = INHERITED;
    for rf in [
        FULL_GROUP,
        read_format::GROUP | read_format::ID,
        read_format::GROUP | read_format::ID | read_format::TOTAL_TIME_RUNNING,
    ] {
        let (_dir, path) = write(
            "inherit.data",
            1,
            &group_attrs(attr_flags::INHERIT, rf),
            &group_samples(values),
        );
        let l = load(&path, LoadOptions::default());
        assert_eq!((l.roles.cycles, l.roles.instructions), (Some(0), Some(1)));
        assert_eq!(count(&l, 1, 0, "f", 0), c(2, 1000 + 600), "{rf:#x}");
        assert_eq!(count(&l, 1, 0, "f", 1), c(2, 500 + 300));
        assert_eq!(count(&l, 1, 0, "g", 0), c(1, 400));
        // Instructions did not move in that sample: perf delivers nothing for it.
        assert_eq!(count(&l, 1, 0, "g", 1), c(0, 0));
        assert_eq!(count(&l, 1, 1, "g", 0), c(1, 3000));
        assert_eq!(count(&l, 1, 1, "g", 1), c(1, 1000));
        assert_eq!(count(&l, 1, 1, "h", 0), c(1, 500));
        assert_eq!(count(&l, 1, 1, "h", 1), c(1, 1000));
        assert_eq!(l.profile.total(0), c(5, 5500));
        assert_eq!(l.profile.total(1), c(4, 2800));
    }
}

#[test]
fn group_without_inherit_takes_deltas_per_counter_id() {
    // Not inherited (perf 6.1's `:S`, or a per-cpu counter): one counter per id, whatever
    // thread was running; its values rise across the threads.
    let values = PLAIN;
    let (_dir, path) = write(
        "plain.data",
        2,
        &group_attrs(0, FULL_GROUP),
        &group_samples(values),
    );
    let l = load(&path, LoadOptions::default());
    assert_eq!(count(&l, 2, 0, "f", 0), c(2, 1000 + 600));
    assert_eq!(count(&l, 2, 0, "f", 1), c(2, 500 + 300));
    assert_eq!(count(&l, 2, 1, "g", 0), c(1, 2000));
    assert_eq!(count(&l, 2, 1, "g", 1), c(1, 500));
    assert_eq!(count(&l, 2, 1, "h", 0), c(1, 500));
    assert_eq!(count(&l, 2, 1, "h", 1), c(1, 1000));
    assert_eq!(count(&l, 2, 0, "g", 0), c(1, 400));
    assert_eq!(count(&l, 2, 0, "g", 1), c(0, 0));
}

/// A file of `record --switch-output` after the first starts with READ records of the
/// values the file before ended with: the first samples' deltas are taken from them, per
/// thread when inherited, per id when not. A READ record after the first sample (the
/// kernel's, at a thread's exit with `inherit_stat`) moves nothing.
#[test]
fn deltas_start_from_the_read_records_before_the_first_sample() {
    let values = INHERITED;
    let reads = [
        R {
            before: 0,
            tid: 0,
            read: vec![(10, 400), (20, 100)],
        },
        R {
            before: 0,
            tid: 1,
            read: vec![(10, 2500), (20, 900)],
        },
        // After the first sample: not a starting value.
        R {
            before: 2,
            tid: 0,
            read: vec![(10, 1500), (20, 800)],
        },
    ];
    let (_dir, path) = write_with_reads(
        "seeded-inherit.data",
        4,
        &group_attrs(attr_flags::INHERIT, FULL_GROUP),
        &reads,
        &group_samples(values),
    );
    let l = load(&path, LoadOptions::default());
    // Thread 0: (1000,500) f, (1600,800) f, (2000,800) g, from (400,100).
    assert_eq!(count(&l, 4, 0, "f", 0), c(2, 600 + 600));
    assert_eq!(count(&l, 4, 0, "f", 1), c(2, 400 + 300));
    assert_eq!(count(&l, 4, 0, "g", 0), c(1, 400));
    // Thread 1: (3000,1000) g, (3500,2000) h, from (2500,900).
    assert_eq!(count(&l, 4, 1, "g", 0), c(1, 500));
    assert_eq!(count(&l, 4, 1, "g", 1), c(1, 100));
    assert_eq!(count(&l, 4, 1, "h", 0), c(1, 500));
    assert_eq!(count(&l, 4, 1, "h", 1), c(1, 1000));

    // Not inherited: one value per id, whichever thread the READ record names (the last
    // one of an id is the value).
    let values = PLAIN;
    let (_dir, path) = write_with_reads(
        "seeded-plain.data",
        5,
        &group_attrs(0, FULL_GROUP),
        &reads[..2]
            .iter()
            .rev()
            .map(|r| R {
                read: r.read.clone(),
                ..*r
            })
            .collect::<Vec<_>>(),
        &group_samples(values),
    );
    let l = load(&path, LoadOptions::default());
    // From (400,100), the last READ record written.
    assert_eq!(count(&l, 5, 0, "f", 0), c(2, 600 + 600));
    assert_eq!(count(&l, 5, 0, "f", 1), c(2, 400 + 300));
    assert_eq!(l.profile.total(0), c(5, 4500 - 400));
    assert_eq!(l.profile.total(1), c(4, 2300 - 100));
}

#[test]
fn separate_counter_ids_keep_separate_deltas() {
    // Two cpus: ids 10/20 and 11/21, each with its own running values.
    let attrs = group_attrs(0, FULL_GROUP);
    let samples = vec![
        S {
            attr: 0,
            tid: 0,
            leaf: "f",
            period: 1,
            read: vec![(10, 100), (20, 50)],
        },
        S {
            attr: 0,
            tid: 0,
            leaf: "f",
            period: 1,
            read: vec![(11, 1000), (21, 10)],
        },
        S {
            attr: 0,
            tid: 0,
            leaf: "g",
            period: 1,
            read: vec![(10, 130), (20, 60)],
        },
        S {
            attr: 0,
            tid: 0,
            leaf: "g",
            period: 1,
            read: vec![(11, 1100), (21, 40)],
        },
    ];
    let (_dir, path) = write("cpus.data", 3, &attrs, &samples);
    let l = load(&path, LoadOptions::default());
    assert_eq!(count(&l, 3, 0, "f", 0), c(2, 1100));
    assert_eq!(count(&l, 3, 0, "f", 1), c(2, 60));
    assert_eq!(count(&l, 3, 0, "g", 0), c(2, 30 + 100));
    assert_eq!(count(&l, 3, 0, "g", 1), c(2, 10 + 30));
}

#[test]
fn single_value_read_weighs_by_its_delta() {
    // `perf record -e cycles -s`: PERF_SAMPLE_READ without GROUP, one value and its id.
    let mut attrs = group_attrs(0, read_format::ID | read_format::LOST);
    attrs.truncate(1);
    let samples = vec![
        S {
            attr: 0,
            tid: 0,
            leaf: "f",
            period: 1,
            read: vec![(10, 250)],
        },
        S {
            attr: 0,
            tid: 0,
            leaf: "f",
            period: 1,
            read: vec![(10, 400)],
        },
        S {
            attr: 0,
            tid: 1,
            leaf: "h",
            period: 1,
            read: vec![(10, 1000)],
        },
    ];
    let (_dir, path) = write("one.data", 4, &attrs, &samples);
    let l = load(&path, LoadOptions::default());
    assert_eq!(count(&l, 4, 0, "f", 0), c(2, 400));
    assert_eq!(count(&l, 4, 1, "h", 0), c(1, 600));
}

#[test]
fn periods_are_taken_per_sample_or_from_the_fixed_period() {
    let sample_type = sample::IP | sample::TID | sample::TIME | sample::ID;
    // Frequency mode with PERF_SAMPLE_PERIOD: each sample's own period.
    let attrs = vec![
        EventAttr {
            type_: HW,
            config: CYCLES,
            sample_period_or_freq: 4000,
            sample_type: sample_type | sample::PERIOD,
            flags: attr_flags::FREQ | attr_flags::SAMPLE_ID_ALL,
            ids: vec![10],
            ..EventAttr::default()
        },
        EventAttr {
            type_: HW,
            config: INSTRUCTIONS,
            sample_period_or_freq: 4000,
            sample_type: sample_type | sample::PERIOD,
            flags: attr_flags::FREQ | attr_flags::SAMPLE_ID_ALL,
            ids: vec![20],
            ..EventAttr::default()
        },
    ];
    let s = |attr, leaf, period| S {
        attr,
        tid: 0,
        leaf,
        period,
        read: vec![],
    };
    let samples = vec![
        s(0, "f", 1),
        s(0, "f", 5000),
        s(0, "f", 123_457),
        s(1, "f", 3),
        s(1, "f", 90_000),
        s(0, "g", 77),
    ];
    let (_dir, path) = write("freq.data", 5, &attrs, &samples);
    let l = load(&path, LoadOptions::default());
    assert_eq!(count(&l, 5, 0, "f", 0), c(3, 128_458));
    assert_eq!(count(&l, 5, 0, "f", 1), c(2, 90_003));
    assert_eq!(count(&l, 5, 0, "g", 0), c(1, 77));
    // A fixed period without PERF_SAMPLE_PERIOD in the samples: the attr's period each.
    let fixed: Vec<EventAttr> = attrs
        .iter()
        .map(|a| EventAttr {
            sample_period_or_freq: 2_000_003,
            sample_type,
            flags: attr_flags::SAMPLE_ID_ALL,
            ..a.clone()
        })
        .collect();
    let (_dir, path) = write("fixed.data", 6, &fixed, &samples);
    let l = load(&path, LoadOptions::default());
    assert_eq!(count(&l, 6, 0, "f", 0), c(3, 3 * 2_000_003));
    assert_eq!(count(&l, 6, 0, "f", 1), c(2, 2 * 2_000_003));
}

/// Hybrid attrs: (pmu name, pmu type, generic config) each; fixed period 1000, every attr
/// one id (100 + index).
fn hybrid_attrs(events: &[(&str, u64, u64)]) -> Vec<EventAttr> {
    events
        .iter()
        .enumerate()
        .map(|(i, &(pmu, pmu_type, config))| EventAttr {
            type_: HW,
            config: (pmu_type << 32) | config,
            sample_period_or_freq: 1000,
            sample_type: sample::IP | sample::TID | sample::TIME | sample::ID | sample::PERIOD,
            flags: attr_flags::SAMPLE_ID_ALL,
            name: Some(format!(
                "{pmu}/{}/",
                if config == CYCLES {
                    "cycles"
                } else {
                    "instructions"
                }
            )),
            ids: vec![100 + i as u64],
            ..EventAttr::default()
        })
        .collect()
}

#[test]
fn hybrid_columns_of_one_event_are_merged() {
    let attrs = hybrid_attrs(&[
        ("cpu_core", 4, CYCLES),
        ("cpu_atom", 7, CYCLES),
        ("cpu_core", 4, INSTRUCTIONS),
        ("cpu_atom", 7, INSTRUCTIONS),
    ]);
    let s = |attr, leaf, period| S {
        attr,
        tid: 0,
        leaf,
        period,
        read: vec![],
    };
    let samples = vec![
        s(0, "f", 1000), // core cycles
        s(1, "f", 3000), // atom cycles
        s(2, "f", 2000), // core instructions
        s(3, "f", 1000), // atom instructions
        s(1, "g", 500),
    ];
    let (_dir, path) = write("hybrid.data", 7, &attrs, &samples);
    let l = load(&path, LoadOptions::default());
    let names: Vec<&str> = l.profile.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cycles (cpu_atom+cpu_core)",
            "instructions (cpu_atom+cpu_core)"
        ]
    );
    assert_eq!((l.roles.cycles, l.roles.instructions), (Some(0), Some(1)));
    assert_eq!(l.ratio_cycles, None);
    assert_eq!(count(&l, 7, 0, "f", 0), c(2, 4000));
    assert_eq!(count(&l, 7, 0, "f", 1), c(2, 3000));
    assert_eq!(count(&l, 7, 0, "g", 0), c(1, 500));
    assert_eq!(
        l.subtitle().as_deref(),
        Some("widths: cycles of cpu_atom+cpu_core cores")
    );
}

#[test]
fn hybrid_pair_on_one_core_type_gets_its_own_ratio_cycles() {
    // Instructions only on the P-cores: widths add both types' cycles, CPI divides P-core
    // cycles by P-core instructions.
    let attrs = hybrid_attrs(&[
        ("cpu_core", 4, CYCLES),
        ("cpu_atom", 7, CYCLES),
        ("cpu_core", 4, INSTRUCTIONS),
    ]);
    let s = |attr, leaf, period| S {
        attr,
        tid: 0,
        leaf,
        period,
        read: vec![],
    };
    let samples = vec![s(0, "f", 1000), s(1, "f", 3000), s(2, "f", 2000)];
    let (_dir, path) = write("hybrid1.data", 8, &attrs, &samples);
    let l = load(&path, LoadOptions::default());
    let names: Vec<&str> = l.profile.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cycles (cpu_atom+cpu_core)",
            "cpu_core/instructions/",
            "cycles (cpu_core)"
        ]
    );
    assert_eq!((l.roles.cycles, l.roles.instructions), (Some(0), Some(1)));
    assert_eq!(l.ratio_cycles, Some(2));
    assert_eq!(count(&l, 8, 0, "f", 0), c(2, 4000));
    assert_eq!(count(&l, 8, 0, "f", 1), c(1, 2000));
    assert_eq!(count(&l, 8, 0, "f", 2), c(1, 1000));
    assert_eq!(
        l.subtitle().as_deref(),
        Some("widths: cycles of cpu_atom+cpu_core cores · CPI from cpu_core only")
    );
}

#[test]
fn instructions_flag_picks_the_divisor() {
    let attrs = group_attrs(0, FULL_GROUP);
    let (_dir, path) = write(
        "flag.data",
        9,
        &attrs,
        &group_samples([(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]),
    );
    let l = load(
        &path,
        LoadOptions {
            roles: Roles {
                cycles: Some("instructions".into()),
                instructions: Some("cycles".into()),
                stalls: None,
            },
            ..Default::default()
        },
    );
    assert_eq!((l.roles.cycles, l.roles.instructions), (Some(1), Some(0)));
    let (_dir, path) = write("flag2.data", 10, &attrs, &group_samples([(1, 1); 5]));
    let mut warnings = Vec::new();
    let e = load_any(
        &LoadOptions {
            file: path.clone(),
            roles: Roles {
                instructions: Some("nope".into()),
                ..Default::default()
            },
            ..Default::default()
        },
        &mut warnings,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("--instructions nope: "), "{e}");
}

#[test]
fn hostile_read_values_neither_panic_nor_overflow() {
    // Values that fall (taken modulo 2^64, as perf does), huge ones (sums saturate), and
    // ids of no event (the sample keeps its own period, as a sample without values).
    let attrs = group_attrs(0, FULL_GROUP);
    let r = |read: Vec<(u64, u64)>| S {
        attr: 0,
        tid: 0,
        leaf: "f",
        period: 5,
        read,
    };
    let samples = vec![
        r(vec![(10, u64::MAX), (20, 10)]),
        r(vec![(10, u64::MAX - 1), (20, 5)]),
        r(vec![(10, u64::MAX), (20, 4)]),
        r(vec![(99, 1), (98, 2)]),
    ];
    let (_dir, path) = write("hostile.data", 11, &attrs, &samples);
    let l = load(&path, LoadOptions::default());
    // Cycles: MAX, then MAX (MAX-1 - MAX wraps), then 1: saturated; plus the unknown-id
    // sample's own period.
    assert_eq!(count(&l, 11, 0, "f", 0), c(4, u64::MAX));
    // Instructions: 10, then 5 - 10 and 4 - 5 wrap: saturated.
    assert_eq!(count(&l, 11, 0, "f", 1), c(3, u64::MAX));
}

#[test]
fn real_hybrid_recording_merges_core_and_atom_cycles() {
    // A Raptor Lake `perf record -e cycles:ppp` (quipper's test data): perf opened
    // cpu_core/cycles:ppp/ and cpu_atom/cycles:ppp/. perf 6.1 here reads 7 samples of
    // 7048948 cycles, all on cpu_core (`perf script -F event,period`, `perf report --stats`).
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../perf-data/tests/wild/q-hybrid_topology.data.xz");
    let mut warnings = Vec::new();
    let l = load_any(
        &LoadOptions {
            file: path,
            kernel: true,
            ..Default::default()
        },
        &mut warnings,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = l.profile.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["cycles:ppp (cpu_atom+cpu_core)", "dummy:HG"]);
    assert_eq!(l.roles.cycles, Some(0));
    assert_eq!(l.profile.total(0), c(7, 7_048_948));
    assert_eq!(
        l.subtitle().as_deref(),
        Some("widths: cycles of cpu_atom+cpu_core cores")
    );
}
