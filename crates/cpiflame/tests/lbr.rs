//! LBR call stacks (`perf record --call-graph lbr`): the user stack is stitched from the
//! branch stack (the sample's user leaf, then each entry's call site), with and without the
//! hardware index; a plain branch stack (`-b`) leaves the frame-pointer chain in charge; and
//! a file from perf 3.8 with fp chains and a plain branch stack folds as it did before.
//!
//! This machine has no PMU, so the files are written with the project's writer over a
//! fixture binary mapped at a made-up address; their stacks are known by construction.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_perf_data::abi::{callchain, misc, sample, BRANCH_SAMPLE_HW_INDEX};
use cpiflame_perf_data::write::{
    attr_flags, comm_record, mmap2_record, sample_record, EventAttr, Features, Mmap2,
    PerfDataWriter, SampleFields, SampleId,
};
use cpiflame_perf_data::BRANCH_SAMPLE_CALL_STACK;
use support::{shared_fixtures, Dir};

/// Where the fixture is said to be mapped (file offset 0 there).
const BASE: u64 = 0x5555_0000_0000;
const PID: i32 = 31_337;
/// PERF_SAMPLE_BRANCH_USER: what `--call-graph lbr` filters on, with CALL_STACK.
const BRANCH_USER: u64 = 1 << 1;

/// The stated address of each function of `binary`, from `nm`.
fn symbols(binary: &Path) -> Option<std::collections::HashMap<String, u64>> {
    let out = Command::new("nm").arg(binary).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let addr = u64::from_str_radix(w.next()?, 16).ok()?;
                let kind = w.next()?;
                let name = w.next()?;
                matches!(kind, "T" | "t").then(|| (name.to_string(), addr))
            })
            .collect(),
    )
}

/// One sample: its call chain, and its branch stack as (from, to) pairs, newest first.
struct Shot {
    misc: u16,
    ip: u64,
    chain: Vec<u64>,
    branches: Vec<(u64, u64)>,
}

/// Writes a perf.data file of `shots` for the fixture `binary` (comm "lbrapp").
fn write_file(
    dir: &Path,
    name: &str,
    binary: &Path,
    branch_sample_type: u64,
    shots: &[Shot],
) -> PathBuf {
    let attr = EventAttr {
        type_: 1,
        config: 0,
        sample_period_or_freq: 1000,
        sample_type: sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::PERIOD
            | sample::CALLCHAIN
            | sample::BRANCH_STACK,
        branch_sample_type,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP,
        name: Some("cpu-clock".into()),
        ids: vec![7],
        ..EventAttr::default()
    };
    let path = dir.join(name);
    let mut w =
        PerfDataWriter::new(std::fs::File::create(&path).unwrap(), vec![attr.clone()]).unwrap();
    let sid = |time| SampleId {
        pid: PID,
        tid: PID,
        time,
        id: 7,
        stream_id: 7,
        cpu: 0,
    };
    w.write_record(&comm_record(&attr, PID, PID, "lbrapp", true, &sid(1)).unwrap())
        .unwrap();
    let len = std::fs::metadata(binary).unwrap().len().div_ceil(0x1000) * 0x1000;
    let mmap = Mmap2 {
        pid: PID,
        tid: PID,
        addr: BASE,
        len,
        pgoff: 0,
        prot: 5,
        flags: 2,
        filename: binary.to_str().unwrap().into(),
        misc: misc::USER,
        ..Mmap2::default()
    };
    w.write_record(&mmap2_record(&attr, &mmap, &sid(2)).unwrap())
        .unwrap();
    for (i, shot) in shots.iter().enumerate() {
        let fields = SampleFields {
            ip: shot.ip,
            pid: PID,
            tid: PID,
            time: 10 + i as u64,
            id: 7,
            period: 1000,
            callchain: shot.chain.clone(),
            // hw_idx: where the newest entry sits in a 32-entry LBR.
            branch_stack: (
                (5 + i as u64) % 32,
                shot.branches.iter().map(|&(f, t)| [f, t, 0]).collect(),
            ),
            misc: shot.misc,
            ..SampleFields::default()
        };
        w.write_record(&sample_record(&attr, &fields).unwrap())
            .unwrap();
    }
    w.finish(&Features::from_host(vec!["cpiflame-test".into()]))
        .unwrap();
    path
}

fn fold(file: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["fold", "--no-kernel", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cpiflame fold failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

struct Fixture {
    binary: PathBuf,
    main: u64,
    memory_bound: u64,
    cpu_bound: u64,
}

fn fixture() -> Option<Fixture> {
    let fixtures = match shared_fixtures() {
        Ok(f) => f,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("fixtures: {e}"));
            return None;
        }
    };
    let binary = fixtures.cpu_mem_bound.clone();
    let Some(syms) = symbols(&binary) else {
        cpiflame_testkit::unavailable("nm cannot list the fixture's symbols");
        return None;
    };
    // gcc's PIE: file offsets equal stated addresses, so BASE + address is the AVMA.
    let at = |name: &str| BASE + syms[name];
    Some(Fixture {
        main: at("main"),
        memory_bound: at("memory_bound"),
        cpu_bound: at("cpu_bound"),
        binary,
    })
}

/// Samples whose only user frames come from the LBR: the chain's user part holds the leaf
/// alone (as if frame pointers were useless), the branch stack the callers.
fn lbr_shots(f: &Fixture) -> Vec<Shot> {
    vec![
        // In cpu_bound, called from memory_bound, called from main.
        Shot {
            misc: misc::USER,
            ip: f.cpu_bound + 4,
            chain: vec![callchain::USER, f.cpu_bound + 4],
            branches: vec![
                (f.memory_bound + 8, f.cpu_bound),
                (f.main + 8, f.memory_bound),
            ],
        },
        // In the kernel on behalf of memory_bound: kernel chain, then the user leaf where
        // the thread entered the kernel, then the caller from the LBR.
        Shot {
            misc: misc::KERNEL,
            ip: 0xffff_ffff_8100_1000,
            chain: vec![
                callchain::KERNEL,
                0xffff_ffff_8100_1000,
                callchain::USER,
                f.memory_bound + 12,
            ],
            branches: vec![(f.main + 8, f.memory_bound)],
        },
        // An empty branch stack: the chain is all there is.
        Shot {
            misc: misc::USER,
            ip: f.main + 4,
            chain: vec![callchain::USER, f.main + 4],
            branches: vec![],
        },
    ]
}

const LBR_FOLDED: &str = "lbrapp;main 1\n\
                          lbrapp;main;memory_bound 1\n\
                          lbrapp;main;memory_bound;cpu_bound 1\n";

#[test]
fn lbr_call_stacks_are_stitched_with_and_without_hw_index() {
    let Some(f) = fixture() else { return };
    let dir = Dir::new("lbr");
    for (name, bits) in [
        ("hw-index.data", BRANCH_SAMPLE_HW_INDEX),
        ("no-hw-index.data", 0),
    ] {
        let file = write_file(
            &dir.0,
            name,
            &f.binary,
            BRANCH_USER | BRANCH_SAMPLE_CALL_STACK | bits,
            &lbr_shots(&f),
        );
        assert_eq!(fold(&file), LBR_FOLDED, "{name}");
    }
}

#[test]
fn a_plain_branch_stack_keeps_the_frame_pointer_chain() {
    let Some(f) = fixture() else { return };
    let dir = Dir::new("lbr-plain");
    // `-b` with `-g`: the chain has the callers (return addresses, looked up one byte
    // before), the branch stack the last branches taken, which are not callers.
    let shots = [Shot {
        misc: misc::USER,
        ip: f.cpu_bound + 4,
        chain: vec![callchain::USER, f.cpu_bound + 4, f.main + 9],
        branches: vec![
            (f.memory_bound + 8, f.cpu_bound),
            (f.cpu_bound + 2, f.memory_bound),
        ],
    }];
    for (name, bits) in [
        ("any.data", 1 << 3),
        ("any-hw.data", (1 << 3) | BRANCH_SAMPLE_HW_INDEX),
    ] {
        let file = write_file(&dir.0, name, &f.binary, bits, &shots);
        assert_eq!(fold(&file), "lbrapp;main;cpu_bound 1\n", "{name}");
    }
}

/// Unpacks `support/data/NAME` with `xz`; `None` (test unavailable) without xz.
fn unxz(name: &str) -> Option<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support/data")
        .join(name);
    match Command::new("xz").arg("-dc").arg(&path).output() {
        Ok(out) if out.status.success() => Some(out.stdout),
        Ok(out) => panic!(
            "xz -dc {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => {
            cpiflame_testkit::unavailable(format!("xz cannot be run: {e}"));
            None
        }
    }
}

/// The perf 3.8 file (fp chains and a plain `-b` branch stack) folds to the stacks it gave
/// before branch stacks were read (see `support/data/README.md`).
#[test]
fn the_perf_3_8_branch_file_folds_as_before() {
    let Some(expected) = unxz("q-callgraph_and_branch-3.8.folded.xz") else {
        return;
    };
    // The real-hardware copy kept with perf-data's tests; cpiflame reads .xz by itself.
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../perf-data/tests/wild/q-callgraph_and_branch-3.8.data.xz");
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["fold", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout == expected, "the 3.8 file's stacks changed");
}
