//! LBR call stacks (`perf record --call-graph lbr`): the user stack is stitched from the
//! branch stack (the sample's user leaf, then each entry's call site), with and without the
//! hardware index; a plain branch stack (`-b`) leaves the frame-pointer chain in charge; a
//! file from perf 3.8 with fp chains and a plain branch stack folds as it did before; and
//! pprof gives a call site (a call instruction, not a return address) its own line.
//!
//! This machine has no PMU, so the files are written with the project's writer over a
//! fixture binary mapped at a made-up address; their stacks are known by construction.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_perf_data::abi::{callchain, misc, sample, BRANCH_SAMPLE_HW_INDEX};
use cpiflame_perf_data::synth::{test_features, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, Mmap2, SampleFields};
use cpiflame_perf_data::BRANCH_SAMPLE_CALL_STACK;
use support::{perf_script_samples, perf_works, shared_fixtures, Dir};

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

/// Writes a perf.data file of `shots` for the fixture `binary` mapped at [`BASE`] (comm
/// "lbrapp").
fn write_file(
    dir: &Path,
    name: &str,
    binary: &Path,
    branch_sample_type: u64,
    shots: &[Shot],
) -> PathBuf {
    write_file_mapping(dir, name, &[(binary, BASE)], branch_sample_type, shots)
}

/// [`write_file`] with several files mapped, each at its base address.
fn write_file_mapping(
    dir: &Path,
    name: &str,
    maps: &[(&Path, u64)],
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
    let mut rec = Recording::create(dir.join(name), vec![attr]);
    rec.comm(PID, PID, "lbrapp", 1);
    for &(binary, base) in maps {
        let len = std::fs::metadata(binary).unwrap().len().div_ceil(0x1000) * 0x1000;
        let mmap = Mmap2 {
            pid: PID,
            tid: PID,
            addr: base,
            len,
            pgoff: 0,
            prot: 5,
            flags: 2,
            filename: binary.to_str().unwrap().into(),
            misc: misc::USER,
            ..Mmap2::default()
        };
        rec.mmap(&mmap, 2);
    }
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
        rec.sample(0, &fields);
    }
    rec.finish(&test_features())
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

/// Where the tail-call fixture's library is said to be mapped.
const LIB_BASE: u64 = 0x7f00_0000_0000;

/// The tail-call fixture (`support/data/lbr_tail_app.c` and `lbr_tail_lib.c`), built with
/// gcc into `dir`, and the addresses its cases need, read with `nm` and `objdump`.
struct TailFixture {
    app: PathBuf,
    lib: PathBuf,
    tail_target: u64,
    tail_caller: u64,
    leaf_work: u64,
    /// `lib_work` in the library, mapped at [`LIB_BASE`].
    lib_work: u64,
    /// The PLT stub `lib_work@plt`, from objdump's label.
    lib_work_plt: u64,
    /// main's call instructions to `tail_caller`, `leaf_work` and `lib_work@plt`.
    call_tail_caller: u64,
    call_leaf_work: u64,
    call_lib_work: u64,
}

fn run_tool(cmd: &mut Command) -> Option<String> {
    match cmd.output() {
        Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).into()),
        Ok(out) => panic!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            cpiflame_testkit::unavailable(format!("{cmd:?} cannot be run: {e}"));
            None
        }
    }
}

fn tail_fixture(dir: &Path) -> Option<TailFixture> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/support/data");
    let (app, lib) = (dir.join("tailapp"), dir.join("libtail.so"));
    run_tool(
        Command::new("gcc")
            .args(["-O2", "-g", "-fPIC", "-shared", "-o"])
            .arg(&lib)
            .arg(data.join("lbr_tail_lib.c")),
    )?;
    run_tool(
        Command::new("gcc")
            .args(["-O2", "-g", "-o"])
            .arg(&app)
            .arg(data.join("lbr_tail_app.c"))
            .arg("-L")
            .arg(dir)
            .arg("-ltail"),
    )?;
    let (Some(app_syms), Some(lib_syms)) = (symbols(&app), symbols(&lib)) else {
        cpiflame_testkit::unavailable("nm cannot list the fixture's symbols");
        return None;
    };
    let disassembly = run_tool(Command::new("objdump").arg("-d").arg(&app))?;
    // `0000000000001030 <lib_work@plt>:` labels a stub; `    1065:\te8 ... \tcall   1030
    // <lib_work@plt>` is a call to it.
    let label = |name: &str| {
        disassembly.lines().find_map(|l| {
            let addr = l.strip_suffix(&format!(" <{name}>:"))?;
            u64::from_str_radix(addr, 16).ok()
        })
    };
    let mut in_main = false;
    let mut calls = std::collections::HashMap::new();
    for line in disassembly.lines() {
        if line.ends_with(">:") {
            in_main = line.ends_with(" <main>:");
            continue;
        }
        if !in_main || !line.contains("call") {
            continue;
        }
        let (Some(addr), Some(target)) = (
            line.split(':').next().map(str::trim),
            line.rsplit_once('<').map(|(_, t)| t.trim_end_matches('>')),
        ) else {
            continue;
        };
        if let Ok(addr) = u64::from_str_radix(addr, 16) {
            calls.insert(target.to_string(), BASE + addr);
        }
    }
    let call = |target: &str| {
        *calls
            .get(target)
            .unwrap_or_else(|| panic!("main of the fixture has no call to {target}: {calls:?}"))
    };
    Some(TailFixture {
        tail_target: BASE + app_syms["tail_target"],
        tail_caller: BASE + app_syms["tail_caller"],
        leaf_work: BASE + app_syms["leaf_work"],
        lib_work: LIB_BASE + lib_syms["lib_work"],
        lib_work_plt: BASE + label("lib_work@plt").expect("objdump shows no lib_work@plt"),
        call_tail_caller: call("tail_caller"),
        call_leaf_work: call("leaf_work"),
        call_lib_work: call("lib_work@plt"),
        app,
        lib,
    })
}

/// The newest LBR entry's target is the function the last call entered. When the sample is
/// in another function, that one jumped on (a tail call, or a PLT stub into a library) and
/// is a frame of the stack too; when it is the same function, the leaf is not doubled.
#[test]
fn lbr_tail_calls_and_plt_stubs_are_frames_and_the_leaf_is_not_doubled() {
    let dir = Dir::new("lbr-tail");
    let Some(f) = tail_fixture(&dir.0) else {
        return;
    };
    let user = |ip: u64, branches: Vec<(u64, u64)>| Shot {
        misc: misc::USER,
        ip,
        chain: vec![callchain::USER, ip],
        branches,
    };
    let shots = [
        // In tail_target, which tail_caller jumped to: tail_caller is a frame.
        user(f.tail_target + 4, vec![(f.call_tail_caller, f.tail_caller)]),
        // In leaf_work, the function main called: one leaf_work frame.
        user(f.leaf_work + 4, vec![(f.call_leaf_work, f.leaf_work)]),
        // In the library's lib_work, reached through main's call to its PLT stub.
        user(f.lib_work + 4, vec![(f.call_lib_work, f.lib_work_plt)]),
        // In the kernel on behalf of tail_target: kernel chain, the user leaf where the
        // thread entered the kernel, then tail_caller from the newest entry.
        Shot {
            misc: misc::KERNEL,
            ip: 0xffff_ffff_8100_1000,
            chain: vec![
                callchain::KERNEL,
                0xffff_ffff_8100_1000,
                callchain::USER,
                f.tail_target + 8,
            ],
            branches: vec![(f.call_tail_caller, f.tail_caller)],
        },
    ];
    let file = write_file_mapping(
        &dir.0,
        "tail.data",
        &[(&f.app, BASE), (&f.lib, LIB_BASE)],
        BRANCH_USER | BRANCH_SAMPLE_CALL_STACK | BRANCH_SAMPLE_HW_INDEX,
        &shots,
    );
    assert_eq!(
        fold(&file),
        "lbrapp;main;leaf_work 1\n\
         lbrapp;main;lib_work@plt;lib_work 1\n\
         lbrapp;main;tail_caller;tail_target 2\n"
    );

    // perf reads the file. Its stacks are the newest entry's target, then the call sites:
    // the same frames without the leaf where the leaf is in another function. perf 6.1
    // names the stub `_init` (it stretches `_init`, which has no size, over the PLT; fixed
    // in perf 6.3, which names it `lib_work@plt`).
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot run here");
        return;
    }
    let samples = perf_script_samples(&file).unwrap();
    let stacks: Vec<Vec<&str>> = samples
        .iter()
        .map(|s| {
            s.frames
                .iter()
                .filter(|f| !f.is_unknown())
                .map(|f| f.symbol.as_str())
                .collect()
        })
        .collect();
    assert_eq!(stacks.len(), 4, "{stacks:?}");
    assert_eq!(stacks[0], ["tail_caller", "main"]);
    assert_eq!(stacks[1], ["leaf_work", "main"]);
    assert!(
        matches!(stacks[2][..], ["lib_work@plt" | "_init", "main"]),
        "{:?}",
        stacks[2]
    );
    assert_eq!(stacks[3], ["tail_caller", "main"]);
}

/// Unpacks `support/data/NAME` with `xz`; `None` (test unavailable) without xz.
fn unxz(name: &str) -> Option<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/support/data")
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
        // Recorded with `-a`: comm roots as when the expected stacks were written (the
        // default for a system-wide recording is `comm [pid]`).
        .args(["fold", "--group-by", "comm", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout == expected, "the 3.8 file's stacks changed");
}

/// `addr2line -f -i -e BINARY SVMA...` (binutils): for each address, its (function, line)
/// pairs, innermost first.
fn addr2line_all(binary: &Path, svmas: &[u64]) -> Option<Vec<Vec<(String, String)>>> {
    let mut cmd = Command::new("addr2line");
    cmd.args(["-f", "-i", "-a", "-e"]).arg(binary);
    cmd.args(svmas.iter().map(|a| format!("{a:#x}")));
    let text = run_tool(&mut cmd)?;
    // With -a each address's answer starts with the address itself (`0x...`).
    let mut all: Vec<Vec<(String, String)>> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            all.push(Vec::new());
            continue;
        }
        let place = lines.next().expect("a file:line after the function");
        // `file:line (discriminator N)`: the line number alone.
        let line_no = place.rsplit(':').next().unwrap_or("");
        let line_no = line_no.split_whitespace().next().unwrap_or("").to_string();
        all.last_mut()
            .expect("an address first")
            .push((line.to_string(), line_no));
    }
    assert_eq!(all.len(), svmas.len());
    Some(all)
}

#[test]
fn pprof_gives_an_lbr_call_site_the_line_of_the_call_instruction() {
    // An LBR entry's `from` is the call instruction itself: its frame is named at that
    // address, and its pprof location's line must be that address's too, not the line of
    // the byte before it (what a return address is looked up by). The oracle is binutils
    // addr2line, at an address of main whose line is not the byte before's.
    let Some(f) = fixture() else { return };
    let main = f.main - BASE;
    let svmas: Vec<u64> = (main..main + 0x100).collect();
    let Some(lines) = addr2line_all(&f.binary, &svmas) else {
        return;
    };
    let in_main_alone = |l: &Vec<(String, String)>| {
        l.len() == 1 && l[0].0 == "main" && l[0].1.parse::<u32>().is_ok_and(|n| n > 0)
    };
    let i = (1..svmas.len())
        .find(|&i| {
            in_main_alone(&lines[i]) && in_main_alone(&lines[i - 1]) && lines[i] != lines[i - 1]
        })
        .expect("an address of main whose line is not the byte before's");
    let call_site = BASE + svmas[i];
    let want: i64 = lines[i][0].1.parse().unwrap();
    let before: i64 = lines[i - 1][0].1.parse().unwrap();

    let dir = Dir::new("lbr-pprof");
    let shots = [Shot {
        misc: misc::USER,
        ip: f.cpu_bound + 4,
        chain: vec![callchain::USER, f.cpu_bound + 4],
        branches: vec![(call_site, f.cpu_bound)],
    }];
    let file = write_file(
        &dir.0,
        "lbr.data",
        &f.binary,
        BRANCH_USER | BRANCH_SAMPLE_CALL_STACK,
        &shots,
    );
    assert_eq!(fold(&file), "lbrapp;main;cpu_bound 1\n");
    let out = dir.0.join("lbr.pb.gz");
    let status = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["convert", "--to", "pprof", "-o"])
        .arg(&out)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let profile = cpiflame_pprof::decode(&std::fs::read(&out).unwrap()).unwrap();
    let location = profile
        .location
        .iter()
        .find(|l| l.address == call_site)
        .expect("a location at the call site");
    let got: Vec<i64> = location.line.iter().map(|l| l.line).collect();
    assert_eq!(
        got,
        [want],
        "the call site {call_site:#x}: line {want} (the byte before it is line {before})"
    );
}
