//! Synthetic perf.data files with hardware event attrs (this machine has no PMU): role
//! detection from names and raw encodings, the folded output and the colours of the CPI
//! graph, checked against exact arithmetic on known stacks. Also bad input: truncated,
//! corrupt, and killed-recorder files.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use cpiflame_perf_data::abi::{misc, sample};
use cpiflame_perf_data::synth::{test_features, user_chain, write_perf_map, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, Mmap2, SampleFields};
use cpiflame_render::{stall_color, uncertain_color};
use support::{cpiflame, Dir};

const CODE: u64 = 0x7f00_0000_0000;
const PERIOD: u64 = 2_000_003;

/// A function of the synthetic program: its name and address in the perf map.
const FUNCTIONS: [&str; 5] = ["main", "compute", "stall_here", "busy", "helper"];

fn addr_of(name: &str) -> u64 {
    let i = FUNCTIONS.iter().position(|f| *f == name).unwrap() as u64;
    CODE + i * 0x100
}

/// One known stack (root first, without the process) with its stall and cycle samples.
struct Known<'a> {
    stack: &'a [&'a str],
    stalls: u64,
    cycles: u64,
}

struct Synth<'a> {
    /// (type, config, name) of the stall and cycles attrs, in file order.
    events: [(u32, u64, &'a str); 2],
    /// Which of the two is the stall event.
    stall_index: usize,
    arch: &'a str,
    stacks: &'a [Known<'a>],
}

/// A pid of our own that no process is likely to have, so the perf map is ours alone.
fn synthetic_pid(salt: u32) -> i32 {
    support::synthetic_pid(0, salt)
}

/// Writes a perf.data file and the perf map that names its code; returns the file path.
fn write_synthetic(dir: &Path, pid: i32, s: &Synth<'_>, finish: bool) -> PathBuf {
    let sample_type = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::ID
        | sample::CPU
        | sample::PERIOD
        | sample::CALLCHAIN;
    let attrs: Vec<EventAttr> = s
        .events
        .iter()
        .enumerate()
        .map(|(i, &(type_, config, name))| EventAttr {
            type_,
            config,
            sample_period_or_freq: PERIOD,
            sample_type,
            flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP,
            name: Some(name.to_string()),
            ids: vec![100 + i as u64],
            ..EventAttr::default()
        })
        .collect();
    let mut rec = Recording::create(dir.join("synthetic.data"), attrs);
    rec.comm(pid, pid, "cpiapp", 1);
    let mmap = Mmap2 {
        pid,
        tid: pid,
        addr: CODE,
        len: 0x1000,
        pgoff: 0,
        prot: 5,
        flags: 2,
        filename: "//anon".into(),
        misc: misc::USER,
        ..Mmap2::default()
    };
    rec.mmap(&mmap, 2);
    let mut time = 10;
    for known in s.stacks {
        // Leaf at its function's start + 0x10; callers' return addresses at + 0x20.
        let addrs: Vec<u64> = known.stack.iter().map(|f| addr_of(f)).collect();
        let chain = user_chain(&addrs, 0x10, 0x20);
        for (role_is_stall, n) in [(true, known.stalls), (false, known.cycles)] {
            let event = if role_is_stall {
                s.stall_index
            } else {
                1 - s.stall_index
            };
            for _ in 0..n {
                time += 1;
                let fields = SampleFields {
                    ip: chain[1],
                    pid,
                    tid: pid,
                    time,
                    id: 100 + event as u64,
                    period: PERIOD,
                    callchain: chain.clone(),
                    misc: misc::USER,
                    ..SampleFields::default()
                };
                rec.sample(event, &fields);
            }
        }
    }
    let path = if finish {
        let mut features = test_features();
        features.arch = Some(s.arch.to_string());
        rec.finish(&features)
    } else {
        // A recorder killed here: header says data size 0.
        rec.abandon()
    };
    let functions: Vec<(u64, u64, &str)> =
        FUNCTIONS.iter().map(|f| (addr_of(f), 0x100, *f)).collect();
    write_perf_map(pid, &functions);
    path
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "cpiflame failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Fill colour of every frame of a CPI SVG, by the first line of its tooltip.
fn fills(svg: &str) -> Vec<(String, String)> {
    svg.split("<g class=\"f\"")
        .skip(1)
        .map(|g| {
            let title = g.split("<title>").nth(1).unwrap();
            let name = title.split(['\n', '<']).next().unwrap().to_string();
            let fill = g.split("fill=\"").nth(1).unwrap();
            (name, fill.split('"').next().unwrap().to_string())
        })
        .collect()
}

fn fill_of(svg: &str, name: &str) -> String {
    fills(svg)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no frame {name} in the SVG"))
        .1
}

const STACKS: [Known<'static>; 2] = [
    Known {
        stack: &["main", "compute", "stall_here"],
        stalls: 30,
        cycles: 40,
    },
    Known {
        stack: &["main", "busy"],
        stalls: 0,
        cycles: 60,
    },
];

/// The synthetic frames are named from a perf map (`/tmp/perf-PID.map`), as JIT code is, so
/// folded output marks them `_[j]`, as stackcollapse-perf.pl and inferno `--all` do.
fn check_cpi_graph(file: &Path) {
    let folded = stdout(&cpiflame(&["fold", file.to_str().unwrap()]));
    assert_eq!(
        folded,
        "cpiapp;main_[j];busy_[j] 0 60\ncpiapp;main_[j];compute_[j];stall_here_[j] 30 40\n"
    );
    let svg = stdout(&cpiflame(&["render", file.to_str().unwrap()]));
    // Stall share of a frame including its children: stalls x period / cycles x period.
    // Frames of a few dozen samples are too uncertain for the scale: the share's colour,
    // washed out (crates/render/tests/uncertainty.rs checks which frames are).
    let washed = |share: f64| uncertain_color(stall_color(Some(share))).to_string();
    assert_eq!(fill_of(&svg, "stall_here"), washed(30.0 / 40.0));
    assert_eq!(fill_of(&svg, "compute"), washed(30.0 / 40.0));
    assert_eq!(fill_of(&svg, "main"), washed(30.0 / 100.0));
    // 60 cycles samples and no stall: the share's interval is narrow ([0, about 6%]).
    assert_eq!(fill_of(&svg, "busy"), stall_color(Some(0.0)).to_string());
    assert!(
        svg.contains("stalled: 30.0%"),
        "subtitle gives the overall share"
    );
}

#[test]
fn seed_events_by_name_give_exact_stall_shares() {
    let dir = Dir::new("named");
    let pid = synthetic_pid(0);
    let file = write_synthetic(
        &dir.0,
        pid,
        &Synth {
            events: [
                (4, 0x1a2, "resource_stalls_any"),
                (4, 0x3c, "cpu_clk_unhalted_thread_p"),
            ],
            stall_index: 0,
            arch: "x86_64",
            stacks: &STACKS,
        },
        true,
    );
    check_cpi_graph(&file);
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

#[test]
fn raw_encodings_alone_give_the_roles_in_any_order() {
    let dir = Dir::new("raw");
    let pid = synthetic_pid(1);
    // Cycles first this time, and names as perf spells unnamed raw events.
    let file = write_synthetic(
        &dir.0,
        pid,
        &Synth {
            events: [(4, 0x3c, "r3c"), (4, 0x0400_04a3, "r40004a3")],
            stall_index: 1,
            arch: "x86_64",
            stacks: &STACKS,
        },
        true,
    );
    check_cpi_graph(&file);
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

#[test]
fn arm64_stall_and_cycle_numbers() {
    let dir = Dir::new("arm");
    let pid = synthetic_pid(2);
    // 0x3c is STALL on ARM64 (it would be cycles on Intel), 0x11 CPU_CYCLES.
    let file = write_synthetic(
        &dir.0,
        pid,
        &Synth {
            events: [(8, 0x11, "r11"), (8, 0x3c, "r3c")],
            stall_index: 1,
            arch: "aarch64",
            stacks: &STACKS,
        },
        true,
    );
    check_cpi_graph(&file);
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

/// The preset events by name on Zen 4 and on ARM: the same exact shares, and the subtitle
/// says what the colour counts where the stall event is not plain back-end stall cycles.
#[test]
fn preset_stall_events_say_what_the_colour_is() {
    type Events<'a> = [(u32, u64, &'a str); 2];
    let cases: [(Events<'_>, &str, &str, &str); 3] = [
        (
            [(4, 0x1bd6, "ex_no_retire.all"), (4, 0x76, "ls_not_halted_cyc")],
            "x86_64",
            "colour: ex_no_retire.all, cycles retiring nothing for any reason (SMT sibling&apos;s turn and empty retire queue included)",
            "cycles retiring nothing:",
        ),
        (
            [(8, 0x3c, "stall"), (8, 0x11, "cpu_cycles")],
            "aarch64",
            "colour: STALL, stall cycles of the front end and the back end together",
            "STALL cycles (front + back end):",
        ),
        (
            [(8, 0x24, "stall_backend"), (8, 0x11, "cpu_cycles")],
            "aarch64",
            "colour: STALL_BACKEND, back-end stall cycles only",
            "STALL_BACKEND cycles:",
        ),
    ];
    for (i, (events, arch, caveat, caption)) in cases.into_iter().enumerate() {
        let dir = Dir::new(&format!("caveat-{i}"));
        let pid = synthetic_pid(10 + i as u32);
        let file = write_synthetic(
            &dir.0,
            pid,
            &Synth {
                events,
                stall_index: 0,
                arch,
                stacks: &STACKS,
            },
            true,
        );
        check_cpi_graph(&file);
        let svg = stdout(&cpiflame(&["render", file.to_str().unwrap()]));
        assert!(svg.contains(caveat), "{caveat}");
        // The legend names the quantity too.
        assert!(
            svg.contains(&format!("text-anchor=\"end\">{caption}</text>")),
            "{caption}"
        );
        let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    }
    // Intel's CYCLE_ACTIVITY.STALLS_TOTAL needs no caveat.
    let dir = Dir::new("caveat-none");
    let pid = synthetic_pid(13);
    let file = write_synthetic(
        &dir.0,
        pid,
        &Synth {
            events: [
                (4, 0x0400_04a3, "cycle_activity.stalls_total"),
                (4, 0x3c, "cpu_clk_unhalted.thread_p"),
            ],
            stall_index: 0,
            arch: "x86_64",
            stacks: &STACKS,
        },
        true,
    );
    let svg = stdout(&cpiflame(&["render", file.to_str().unwrap()]));
    assert!(!svg.contains("colour: "), "no caveat for STALLS_TOTAL");
    assert!(svg.contains("text-anchor=\"end\">cycles stalled:</text>"));
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

#[test]
fn explicit_roles_and_single_event_fold() {
    let dir = Dir::new("explicit");
    let pid = synthetic_pid(3);
    let file = write_synthetic(
        &dir.0,
        pid,
        &Synth {
            events: [(1, 0, "cpu-clock"), (1, 1, "task-clock")],
            stall_index: 1,
            arch: "x86_64",
            stacks: &STACKS,
        },
        true,
    );
    let f = file.to_str().unwrap();
    // Two software events: no pair is recognised without help.
    let out = cpiflame(&["fold", f]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cpu-clock, task-clock"), "{err}");
    assert_eq!(
        stdout(&cpiflame(&["fold", f, "--event", "task-clock"])),
        "cpiapp;main_[j];compute_[j];stall_here_[j] 30\n"
    );
    assert_eq!(
        stdout(&cpiflame(&[
            "fold",
            f,
            "--stalls",
            "task-clock",
            "--cycles",
            "cpu-clock",
            "--pid"
        ])),
        format!(
            "cpiapp-{pid};main_[j];busy_[j] 0 60\n\
             cpiapp-{pid};main_[j];compute_[j];stall_here_[j] 30 40\n"
        )
    );
    let out = cpiflame(&["render", f, "--stalls", "nope", "--cycles", "cpu-clock"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--stalls nope") && err.contains(f), "{err}");
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

#[test]
fn killed_recorder_file_is_read_to_its_end_with_a_warning() {
    let dir = Dir::new("killed");
    let pid = synthetic_pid(4);
    let file = write_synthetic(
        &dir.0,
        pid,
        &Synth {
            events: [
                (4, 0x1a2, "resource_stalls_any"),
                (4, 0x3c, "cpu_clk_unhalted_thread_p"),
            ],
            stall_index: 0,
            arch: "x86_64",
            stacks: &STACKS,
        },
        false,
    );
    // No EVENT_DESC: names fall back to rNNN, roles come from the raw configs.
    let out = cpiflame(&["fold", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("data size 0"), "{err}");
    assert_eq!(
        stdout(&out),
        "cpiapp;main_[j];busy_[j] 0 60\ncpiapp;main_[j];compute_[j];stall_here_[j] 30 40\n"
    );
    // A record cut in half at the end (killed mid-write) is dropped, not an error. The last
    // sample written was a cycles sample of `busy`.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 20]).unwrap();
    let out = cpiflame(&["fold", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cut short"), "{err}");
    assert_eq!(
        stdout(&out),
        "cpiapp;main_[j];busy_[j] 0 59\ncpiapp;main_[j];compute_[j];stall_here_[j] 30 40\n"
    );
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

/// Runs `cpiflame render` on `bytes` and returns its one-line error.
fn render_error(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let out = cpiflame(&["render", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "exit status for {name}");
    assert!(out.stdout.is_empty(), "no SVG for bad input {name}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(
        errors[0].contains(path.to_str().unwrap()),
        "names the file: {err}"
    );
    errors[0].to_string()
}

#[test]
fn bad_input_gives_one_error_line_with_file_and_offset() {
    let dir = Dir::new("bad");
    let pid = synthetic_pid(5);
    let good = write_synthetic(
        &dir.0,
        pid,
        &Synth {
            events: [
                (4, 0x1a2, "resource_stalls_any"),
                (4, 0x3c, "cpu_clk_unhalted_thread_p"),
            ],
            stall_index: 0,
            arch: "x86_64",
            stacks: &STACKS,
        },
        true,
    );
    let bytes = std::fs::read(&good).unwrap();
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let data_offset = u64_at(40) as usize;
    let data_size = u64_at(48) as usize;

    // Cut inside the data section.
    let e = render_error(&dir.0, "cut.data", &bytes[..data_offset + data_size / 2]);
    assert!(e.contains("offset 0x"), "{e}");
    // Not a perf.data file, nor text cpiflame reads: what it starts with (issue 41, item 5).
    let e = render_error(&dir.0, "magic.data", b"hello, this is not perf data at all");
    assert!(
        e.contains(
            "magic.data: not perf.data, perf script text or folded stacks \
             (first line \"hello, this is not perf data at all\")"
        ),
        "{e}"
    );
    // A big-endian machine's perf.data (perf's magic byte-swapped): recognised, one line
    // naming the file, from every command that reads it.
    let mut be = bytes.clone();
    be[..8].copy_from_slice(b"2ELIFREP");
    be[8..16].copy_from_slice(&104u64.to_be_bytes());
    let e = render_error(&dir.0, "be.data", &be);
    let be_path = dir.0.join("be.data");
    assert_eq!(
        e.trim_end(),
        format!(
            "cpiflame: error: {}: big-endian perf.data (written on a big-endian machine): not supported",
            be_path.display()
        ),
    );
    for args in [
        vec!["fold"],
        vec!["report"],
        vec!["convert", "--to", "pprof", "-o", "-"],
        vec!["c2c"],
    ] {
        let mut args = args.clone();
        args.push(be_path.to_str().unwrap());
        let out = cpiflame(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("big-endian perf.data (written on a big-endian machine): not supported"),
            "{args:?}: {err}"
        );
    }
    // Empty file.
    let e = render_error(&dir.0, "empty.data", b"");
    assert!(e.contains("file header"), "{e}");
    // A record whose size field is 4 (less than its own header), in the middle of the data.
    let mut corrupt = bytes.clone();
    let mut at = data_offset;
    for _ in 0..5 {
        at += u16::from_le_bytes([corrupt[at + 6], corrupt[at + 7]]) as usize;
    }
    corrupt[at + 6..at + 8].copy_from_slice(&4u16.to_le_bytes());
    let e = render_error(&dir.0, "size.data", &corrupt);
    assert!(
        e.contains(&format!("offset {at:#x}")) && e.contains("bad record size 4"),
        "{e}"
    );
    // A header whose attr section claims far more than the file holds.
    let mut huge = bytes.clone();
    huge[32..40].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let e = render_error(&dir.0, "huge.data", &huge);
    assert!(e.contains("outside the file"), "{e}");
    // A sample whose callchain length runs past its record.
    let mut chain = bytes.clone();
    let mut at = data_offset;
    loop {
        let rtype = u32::from_le_bytes(chain[at..at + 4].try_into().unwrap());
        if rtype == 9 {
            break;
        }
        at += u16::from_le_bytes([chain[at + 6], chain[at + 7]]) as usize;
    }
    // IDENTIFIER, IP, TID, TIME, ID, CPU, PERIOD: 7 words, then the callchain length.
    let nr_at = at + 8 + 7 * 8;
    chain[nr_at..nr_at + 8].copy_from_slice(&1000u64.to_le_bytes());
    let e = render_error(&dir.0, "chain.data", &chain);
    assert!(
        e.contains(&format!("offset {at:#x}")) && e.contains("callchain"),
        "{e}"
    );
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}
