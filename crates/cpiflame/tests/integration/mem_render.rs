//! `render --mem` on synthetic memory recordings written by the project's writer (this
//! machine has no memory-sampling PMU): known load samples on known stacks, with known data
//! sources and latencies; frame widths must be the summed latencies and colours the
//! arithmetic of the fixed near-to-far scale. Stores, data-source-less samples of another
//! event and loads-nor-stores (op NA) are left out.

use crate::support;

use std::path::{Path, PathBuf};

use cpiflame_memaccess::bits::*;
use cpiflame_memaccess::{DataSource, ServedFrom};
use cpiflame_perf_data::abi::{misc, sample};
use cpiflame_perf_data::synth::{test_features, user_chain, write_perf_map, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, Mmap2, SampleFields};
use cpiflame_perf_data::Weight;
use cpiflame_render::stall_color;
use support::{cpiflame, ok, s, Dir};

const CODE: u64 = 0x7f10_0000_0000;
const FUNCTIONS: [&str; 6] = ["main", "reader", "load_l1", "load_far", "writer", "idle"];

fn addr_of(name: &str) -> u64 {
    CODE + FUNCTIONS.iter().position(|f| *f == name).unwrap() as u64 * 0x100
}

/// Data sources as Intel's PEBS load-latency records give them (perf_event.h's flags).
fn load(lvl: u64, snoop: u64) -> u64 {
    at(OP_LOAD, OP_SHIFT) | at(lvl, LVL_SHIFT) | at(snoop, SNOOP_SHIFT)
}
fn l1_hit() -> u64 {
    load(LVL_HIT | LVL_L1, SNOOP_NONE)
}
fn local_hitm() -> u64 {
    load(LVL_HIT | LVL_L3, SNOOP_HITM)
}
fn remote_dram() -> u64 {
    load(LVL_HIT | LVL_REM_RAM1, SNOOP_HIT)
}
fn store_l1() -> u64 {
    at(OP_STORE, OP_SHIFT) | at(LVL_HIT | LVL_L1, LVL_SHIFT)
}
fn op_na() -> u64 {
    at(OP_NA, OP_SHIFT) | at(LVL_NA, LVL_SHIFT)
}

/// The fixed scale (memaccess's ServedFrom order, L1 = 0 ... remote HITM = 1, nine steps).
const L1: f64 = 0.0;
const LOCAL_HITM: f64 = 4.0 / 8.0;
const REMOTE_DRAM: f64 = 7.0 / 8.0;

/// (event, stack root first, data source, latency, count).
type Samples<'a> = &'a [(usize, &'a [&'a str], u64, u32, u32)];

const LOADS: usize = 0;
const STORES: usize = 1;
const CLOCK: usize = 2;

fn write_file(dir: &Path, pid: i32, samples: Samples<'_>, memory_attrs: bool) -> PathBuf {
    let base = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::ID
        | sample::CPU
        | sample::PERIOD
        | sample::CALLCHAIN;
    let mem = sample::ADDR | sample::DATA_SRC | sample::WEIGHT_STRUCT;
    let events: [(u32, u64, u64, &str, u64); 3] = [
        (
            4,
            0x1cd,
            30,
            "cpu/mem-loads,ldlat=30/P",
            if memory_attrs { mem } else { 0 },
        ),
        (
            4,
            0x82d0,
            0,
            "cpu/mem-stores/P",
            if memory_attrs { mem } else { 0 },
        ),
        (1, 0, 0, "cpu-clock", 0),
    ];
    let attrs: Vec<EventAttr> = events
        .iter()
        .enumerate()
        .map(|(i, &(type_, config, config1, name, extra))| EventAttr {
            type_,
            config,
            config1,
            sample_period_or_freq: 4000,
            sample_type: base | extra,
            flags: attr_flags::SAMPLE_ID_ALL
                | attr_flags::COMM
                | attr_flags::MMAP
                | attr_flags::FREQ,
            name: Some(name.to_string()),
            ids: vec![200 + i as u64],
            ..EventAttr::default()
        })
        .collect();
    let mut rec = Recording::create(dir.join("mem.data"), attrs);
    rec.comm(pid, pid, "memapp", 1);
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
    rec.mmap(&mmap, 2);
    let mut time = 10;
    for &(event, stack, data_src, latency, n) in samples {
        let addrs: Vec<u64> = stack.iter().map(|f| addr_of(f)).collect();
        let chain = user_chain(&addrs, 0x10, 0x20);
        for k in 0..n {
            time += 1;
            let fields = SampleFields {
                ip: chain[1],
                pid,
                tid: pid,
                time,
                addr: 0x5000_0000 + u64::from(k) * 8,
                id: 200 + event as u64,
                period: 1,
                callchain: chain.clone(),
                misc: misc::USER,
                weight: Weight::Struct {
                    var1_dw: latency,
                    var2_w: 7,
                    var3_w: 0,
                }
                .word(),
                data_src,
                ..SampleFields::default()
            };
            rec.sample(event, &fields);
        }
    }
    let path = rec.finish(&test_features());
    let functions: Vec<(u64, u64, &str)> =
        FUNCTIONS.iter().map(|f| (addr_of(f), 0x100, *f)).collect();
    write_perf_map(pid, &functions);
    path
}

pub(crate) fn synthetic_pid(salt: u32) -> i32 {
    support::synthetic_pid(2, salt)
}

/// A memory recording in `dir` of process `pid`: loads served from L1 and from afar
/// (pictures.rs draws it).
pub(crate) fn loads(dir: &Path, pid: i32) -> PathBuf {
    write_file(
        dir,
        pid,
        &[
            (LOADS, READER_L1, l1_hit(), 5, 10),
            (LOADS, READER_FAR, remote_dram(), 300, 4),
            (LOADS, READER_FAR, local_hitm(), 100, 2),
        ],
        true,
    )
}

/// (name, tooltip, width, fill) of every frame.
fn frames(svg: &str) -> Vec<(String, String, f64, String)> {
    svg.split("<g class=\"f\"")
        .skip(1)
        .map(|g| {
            let title = g
                .split("<title>")
                .nth(1)
                .unwrap()
                .split("</title>")
                .next()
                .unwrap();
            let name = title.split('\n').next().unwrap().to_string();
            let attr = |a: &str| {
                g.split(&format!(" {a}=\""))
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .to_string()
            };
            (
                name,
                title.to_string(),
                attr("width").parse().unwrap(),
                attr("fill"),
            )
        })
        .collect()
}

fn frame<'a>(
    all: &'a [(String, String, f64, String)],
    name: &str,
) -> &'a (String, String, f64, String) {
    all.iter()
        .find(|f| f.0 == name)
        .unwrap_or_else(|| panic!("no frame {name}"))
}

const READER_L1: &[&str] = &["main", "reader", "load_l1"];
const READER_FAR: &[&str] = &["main", "reader", "load_far"];
const WRITER: &[&str] = &["main", "writer"];
const IDLE: &[&str] = &["main", "idle"];

#[test]
fn widths_are_summed_latency_and_colours_the_scale_arithmetic() {
    // The data sources decode to the classes the arithmetic below assumes.
    assert_eq!(DataSource(l1_hit()).served_from(), ServedFrom::L1);
    assert_eq!(
        DataSource(local_hitm()).served_from(),
        ServedFrom::LocalHitm
    );
    assert_eq!(
        DataSource(remote_dram()).served_from(),
        ServedFrom::RemoteDram
    );
    assert_eq!(ServedFrom::LocalHitm.distance(), Some(LOCAL_HITM));
    assert_eq!(ServedFrom::RemoteDram.distance(), Some(REMOTE_DRAM));

    let dir = Dir::new("mem-render");
    let pid = synthetic_pid(1);
    let file = write_file(
        &dir.0,
        pid,
        &[
            (LOADS, READER_L1, l1_hit(), 5, 10),
            (LOADS, READER_FAR, remote_dram(), 300, 4),
            (LOADS, READER_FAR, local_hitm(), 100, 2),
            // Left out: stores (by their data source), samples of an event without data
            // sources, and loads-nor-stores.
            (STORES, WRITER, store_l1(), 0, 6),
            (CLOCK, WRITER, 0, 0, 5),
            (LOADS, IDLE, op_na(), 999, 3),
        ],
        true,
    );
    let svg = ok(&cpiflame(&["render", "--mem", s(&file)]));
    let all = frames(&svg);
    let names: Vec<&str> = all.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        ["all", "memapp", "main", "reader", "load_far", "load_l1"]
    );

    // Widths: summed latency (10x5 + 4x300 + 2x100 = 1450 cycles across 1180 px).
    let scale = (1200.0 - 20.0) / 1450.0;
    for (name, latency, loads) in [
        ("all", 1450, 16),
        ("main", 1450, 16),
        ("reader", 1450, 16),
        ("load_far", 1400, 6),
        ("load_l1", 50, 10),
    ] {
        let f = frame(&all, name);
        assert!(
            (f.2 - latency as f64 * scale).abs() < 0.006,
            "{name}: {}",
            f.2
        );
        let line = format!(
            "loads: {loads} samples, {} cycles of latency",
            thousands(latency)
        );
        assert!(f.1.contains(&line), "{name}: {}", f.1);
    }

    // Colours: latency-weighted mean position on the scale, on the red-violet-blue stops.
    let far = (1200.0 * REMOTE_DRAM + 200.0 * LOCAL_HITM) / 1400.0;
    let reader = (50.0 * L1 + 1200.0 * REMOTE_DRAM + 200.0 * LOCAL_HITM) / 1450.0;
    for (name, position) in [
        ("load_l1", L1),
        ("load_far", far),
        ("reader", reader),
        ("main", reader),
    ] {
        assert_eq!(
            frame(&all, name).3,
            stall_color(Some(position)).to_string(),
            "{name}"
        );
    }
    assert_eq!(frame(&all, "load_l1").3, "#ee5046", "L1 is the red end");

    // Tooltips: the breakdown per class.
    let tip = &frame(&all, "load_far").1;
    assert!(
        tip.contains("remote DRAM: 4 loads, 1,200 cycles (85.7%)"),
        "{tip}"
    );
    assert!(
        tip.contains("local HITM: 2 loads, 200 cycles (14.3%)"),
        "{tip}"
    );
    assert!(!tip.contains("L1:"), "{tip}");
    // The legend and what was left out.
    assert!(svg.contains("loads served from:"), "{svg}");
    assert!(
        svg.contains("left out: 6 store and 8 other samples"),
        "{svg}"
    );
    for absent in ["writer", "idle"] {
        assert!(!names.contains(&absent));
    }
    check_against_perf(&file, &all);
}

/// perf reads the same file (`perf report --mem-mode`, the table `perf mem report` prints):
/// per leaf symbol, data source and snoop, the samples and summed weight of the loads event
/// must be the breakdown our tooltips give, and their sum our full width.
fn check_against_perf(file: &Path, all: &[(String, String, f64, String)]) {
    let out = match std::process::Command::new("perf")
        .args(["report", "--stdio", "--mem-mode", "-g", "none"])
        .args([
            "--sort=sym,mem,snoop",
            "-F",
            "sample,weight,sym,mem,snoop",
            "-i",
        ])
        .arg(file)
        .output()
    {
        // perf runs: it must read the writer's file (a failure is the writer's).
        Ok(out) => {
            assert!(
                out.status.success(),
                "perf report cannot read {}: {}",
                file.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            out
        }
        Err(e) => {
            cpiflame_testkit::unavailable(format!("perf does not run: {e}"));
            return;
        }
    };
    let text = String::from_utf8(out.stdout).unwrap();
    // The first table is the loads event's.
    let table = text
        .split("# Samples:")
        .nth(1)
        .expect("perf's table of the loads event");
    assert!(
        table.contains("of event 'cpu/mem-loads,ldlat=30/P'"),
        "{table}"
    );
    let mut total = 0;
    let mut rows = 0;
    for line in table
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        // `   4  1200   [.] load_far  Remote RAM (1 hop) hit    Hit`
        let cols: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let [samples, weight, sym, mem, snoop] = cols[..] else {
            panic!("perf row {line:?}");
        };
        let sym = sym.trim_start_matches("[.] ");
        let class = match (mem, snoop) {
            // op NA: neither load nor store; left out of ours.
            ("N/A", _) => continue,
            ("L1 hit", "None") => "L1",
            ("L3 hit", "HitM") => "local HITM",
            ("Remote RAM (1 hop) hit", "Hit") => "remote DRAM",
            other => panic!("unexpected perf row {other:?}"),
        };
        let weight: u64 = weight.parse().unwrap();
        total += weight;
        rows += 1;
        let ours = format!("  {class}: {samples} loads, {} cycles", thousands(weight));
        let tip = &frame(all, sym).1;
        assert!(tip.contains(&ours), "perf: {line}\nours: {tip}");
    }
    assert_eq!(rows, 3, "{table}");
    assert!(frame(all, "all")
        .1
        .contains(&format!("{} cycles of latency", thousands(total))));
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_file_without_memory_samples_is_one_clear_error() {
    let dir = Dir::new("mem-render-none");
    let pid = synthetic_pid(2);
    // The same samples, but no event samples data sources.
    let file = write_file(&dir.0, pid, &[(CLOCK, WRITER, 0, 0, 5)], false);
    let out = cpiflame(&["render", "--mem", s(&file)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "cpiflame: error: {}: no memory samples: no event samples data sources",
            file.display()
        )),
        "{err}"
    );

    // Data sources, but stores only.
    let file = write_file(&dir.0, pid, &[(STORES, WRITER, store_l1(), 0, 6)], true);
    let out = cpiflame(&["render", "--mem", s(&file)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        format!(
            "cpiflame: error: {}: no load samples (6 store and 0 other samples): nothing to draw\n",
            file.display()
        )
    );
}
