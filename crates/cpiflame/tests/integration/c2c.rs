//! `cpiflame c2c` against `perf c2c report --stdio` and `perf mem report --stdio` on
//! synthetic perf.data files (this machine has no memory-sampling PMU): load and store
//! samples with known data sources, addresses sharing and not sharing 64-byte lines, weights,
//! four cpus on two NUMA nodes. Every number cpiflame prints is compared with perf's.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_memaccess::bits::*;
use cpiflame_memaccess::DataSource;
use cpiflame_perf_data::abi::{misc, sample};
use cpiflame_perf_data::synth::{write_perf_map, Recording};
use cpiflame_perf_data::write::{
    attr_flags, comm_record, fork_record, mmap2_record, sample_record, EventAttr, Features, Mmap2,
    NumaNode, SampleFields, SampleId,
};
use cpiflame_perf_data::Weight;
use support::{cpiflame, s, Dir};

const CODE: u64 = 0x5600_0000_0000;
const DATA: u64 = 0x7f10_0000_0000;
const FUNCTIONS: [&str; 5] = ["reader", "writer", "bump_a", "bump_b", "scan"];

fn addr_of(name: &str) -> u64 {
    let i = FUNCTIONS.iter().position(|f| *f == name).unwrap() as u64;
    CODE + i * 0x100
}

/// A pid of our own that no process is likely to have, so the perf map is ours alone.
fn synthetic_pid(salt: u32) -> i32 {
    support::synthetic_pid(1, salt)
}

fn ld(lvl: u64, snoop: u64) -> u64 {
    at(OP_LOAD, OP_SHIFT) | at(lvl, LVL_SHIFT) | at(snoop, SNOOP_SHIFT)
}

fn st(lvl: u64) -> u64 {
    at(OP_STORE, OP_SHIFT) | at(lvl, LVL_SHIFT)
}

/// One group of identical samples: thread (index), function (+ offset of the ip in it),
/// data address, data source, how many, and the weight of the first (each next one + 3).
struct Group {
    thread: usize,
    function: &'static str,
    ip_offset: u64,
    addr: u64,
    data_src: u64,
    count: u64,
    weight: u64,
}

const fn g(
    thread: usize,
    function: &'static str,
    ip_offset: u64,
    addr: u64,
    data_src: u64,
    count: u64,
    weight: u64,
) -> Group {
    Group {
        thread,
        function,
        ip_offset,
        addr,
        data_src,
        count,
        weight,
    }
}

/// Threads run on cpus 0..4; cpus 0-1 are node 0, 2-3 node 1.
const CPUS: [u32; 4] = [0, 1, 2, 3];
/// The false-sharing line, its neighbour, a line only one thread uses, and scattered loads.
const LINE_A: u64 = DATA + 0x1000;
const LINE_B: u64 = DATA + 0x1040;
const LINE_C: u64 = DATA + 0x2000;
const SCATTER: u64 = DATA + 0x8000;
/// Outside every mapping.
const UNMAPPED: u64 = 0x10_0000;

fn groups() -> Vec<Group> {
    let hit = LVL_HIT;
    vec![
        // Line A: two counters in one line, written by threads on both nodes.
        g(0, "bump_a", 0x10, LINE_A, st(hit | LVL_L1), 40, 0),
        g(0, "bump_a", 0x18, LINE_A, st(LVL_MISS | LVL_L1), 6, 0),
        g(2, "bump_b", 0x10, LINE_A + 0x20, st(hit | LVL_L1), 30, 0),
        g(
            2,
            "bump_b",
            0x18,
            LINE_A + 0x20,
            st(LVL_MISS | LVL_L1),
            9,
            0,
        ),
        g(
            1,
            "reader",
            0x10,
            LINE_A,
            ld(hit | LVL_L3, SNOOP_HITM),
            12,
            80,
        ),
        g(
            3,
            "reader",
            0x10,
            LINE_A,
            ld(hit | LVL_L3, SNOOP_HITM),
            3,
            70,
        ),
        g(
            3,
            "reader",
            0x10,
            LINE_A + 0x20,
            ld(hit | LVL_REM_CCE1, SNOOP_HITM),
            21,
            310,
        ),
        g(
            0,
            "bump_a",
            0x08,
            LINE_A,
            ld(hit | LVL_L3, SNOOP_HITM),
            5,
            95,
        ),
        g(
            2,
            "bump_b",
            0x08,
            LINE_A + 0x20,
            ld(hit | LVL_REM_CCE1, SNOOP_HITM),
            8,
            290,
        ),
        g(
            2,
            "bump_b",
            0x08,
            LINE_A + 0x28,
            ld(hit | LVL_L1, SNOOP_NONE),
            14,
            4,
        ),
        // Line B: the neighbour line, local HITMs only, and locked stores.
        g(
            1,
            "writer",
            0x10,
            LINE_B + 0x8,
            st(hit | LVL_L1) | at(LOCK_LOCKED, LOCK_SHIFT),
            7,
            0,
        ),
        g(1, "writer", 0x18, LINE_B + 0x8, st(hit | LVL_UNC), 2, 0),
        g(
            0,
            "reader",
            0x20,
            LINE_B + 0x8,
            ld(hit | LVL_L3, SNOOP_HITM),
            4,
            120,
        ),
        g(
            0,
            "reader",
            0x20,
            LINE_B + 0x30,
            ld(hit | LVL_LFB, SNOOP_NONE),
            3,
            45,
        ),
        // Line C: one thread's loads and stores, no HITM.
        g(3, "scan", 0x10, LINE_C, ld(hit | LVL_L1, SNOOP_NONE), 25, 5),
        g(3, "scan", 0x14, LINE_C + 0x10, st(hit | LVL_L1), 11, 0),
        // Scattered loads from every level.
        g(
            1,
            "scan",
            0x30,
            SCATTER,
            ld(hit | LVL_L2, SNOOP_NONE),
            6,
            14,
        ),
        g(
            1,
            "scan",
            0x30,
            SCATTER + 0x100,
            ld(hit | LVL_L3, SNOOP_HIT),
            5,
            40,
        ),
        g(
            1,
            "scan",
            0x34,
            SCATTER + 0x200,
            ld(hit | LVL_LOC_RAM, SNOOP_MISS),
            4,
            180,
        ),
        g(
            2,
            "scan",
            0x34,
            SCATTER + 0x300,
            ld(hit | LVL_LOC_RAM, SNOOP_HIT),
            2,
            170,
        ),
        g(
            2,
            "scan",
            0x38,
            SCATTER + 0x400,
            ld(hit | LVL_REM_RAM1, SNOOP_MISS),
            3,
            350,
        ),
        g(
            3,
            "scan",
            0x38,
            SCATTER + 0x500,
            ld(hit | LVL_REM_CCE1, SNOOP_HIT),
            2,
            260,
        ),
        g(
            3,
            "scan",
            0x3c,
            SCATTER + 0x600,
            ld(hit | LVL_UNC, SNOOP_NONE),
            1,
            500,
        ),
        g(
            0,
            "scan",
            0x3c,
            SCATTER + 0x700,
            ld(hit | LVL_IO, SNOOP_NONE),
            1,
            600,
        ),
        g(
            0,
            "scan",
            0x40,
            SCATTER + 0x800,
            ld(LVL_MISS | LVL_L3, SNOOP_NONE),
            2,
            220,
        ),
        // The newer encodings: Skylake's remote bit without hops (remote DRAM and, with
        // HITM, remote HITM to perf c2c), a level number with hops, a peer snoop, blocked
        // loads.
        g(
            3,
            "scan",
            0x48,
            LINE_B + 0x10,
            ld(hit | LVL_L3, SNOOP_HITM) | at(REMOTE_REMOTE, REMOTE_SHIFT),
            2,
            400,
        ),
        g(
            2,
            "scan",
            0x4c,
            SCATTER + 0xa00,
            ld(hit, SNOOP_NONE)
                | at(LVLNUM_RAM, LVLNUM_SHIFT)
                | at(REMOTE_REMOTE, REMOTE_SHIFT)
                | at(HOPS_2, HOPS_SHIFT),
            2,
            330,
        ),
        g(
            1,
            "scan",
            0x4c,
            SCATTER + 0xb00,
            ld(hit | LVL_L2, SNOOP_NONE) | at(SNOOPX_PEER, SNOOPX_SHIFT),
            2,
            60,
        ),
        g(
            0,
            "scan",
            0x50,
            SCATTER + 0xc00,
            ld(hit | LVL_L1, SNOOP_NONE) | at(BLK_DATA, BLK_SHIFT),
            1,
            9,
        ),
        g(
            0,
            "scan",
            0x50,
            SCATTER + 0xd00,
            ld(hit | LVL_L1, SNOOP_NONE) | at(BLK_ADDR, BLK_SHIFT),
            1,
            9,
        ),
        // Not a load or store; a load with no address; a load outside every mapping.
        g(1, "scan", 0x44, SCATTER + 0x900, at(OP_NA, OP_SHIFT), 1, 7),
        g(1, "scan", 0x44, 0, ld(hit | LVL_L1, SNOOP_NONE), 2, 3),
        g(
            1,
            "scan",
            0x44,
            UNMAPPED,
            ld(hit | LVL_L1, SNOOP_NONE),
            3,
            3,
        ),
    ]
}

/// Writes the perf.data file (events named as `perf c2c record` names them on Intel) and the
/// perf map that names its code; returns the file.
///
/// With `weight_struct` the weights are PERF_SAMPLE_WEIGHT_STRUCT words (latency in
/// `var1_dw`, an instruction latency in `var2_w` that must not count), as Intel's newer
/// PEBS kernels write them.
pub(crate) fn write_c2c_file(dir: &Path, pid: i32, weight_struct: bool) -> PathBuf {
    let sample_type = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::ADDR
        | sample::ID
        | sample::CPU
        | sample::PERIOD
        | if weight_struct {
            sample::WEIGHT_STRUCT
        } else {
            sample::WEIGHT
        }
        | sample::DATA_SRC
        | sample::PHYS_ADDR;
    let events = [
        ("cpu/mem-loads,ldlat=30/P", 0x1cd),
        ("cpu/mem-stores/P", 0x82d0),
    ];
    let attrs: Vec<EventAttr> = events
        .iter()
        .enumerate()
        .map(|(i, &(name, config))| EventAttr {
            type_: 4,
            config,
            sample_period_or_freq: 4000,
            sample_type,
            flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP,
            name: Some(name.to_string()),
            ids: vec![100 + i as u64],
            ..EventAttr::default()
        })
        .collect();
    let mut rec = Recording::create(dir.join("c2c.data"), attrs);
    for t in 0..CPUS.len() as i32 {
        rec.comm(pid, pid + t, "c2capp", 1);
    }
    let maps = [
        (CODE, 0x1000, 5, misc::USER),
        (DATA, 0x10000, 3, misc::USER | misc::MMAP_DATA),
    ];
    for (addr, len, prot, misc) in maps {
        let mmap = Mmap2 {
            pid,
            tid: pid,
            addr,
            len,
            pgoff: 0,
            prot,
            flags: 2,
            filename: "//anon".into(),
            misc,
            ..Mmap2::default()
        };
        rec.mmap(&mmap, 2);
    }
    let mut time = 10;
    for group in groups() {
        let is_store = group.data_src & at(OP_STORE, OP_SHIFT) != 0;
        let event = usize::from(is_store);
        for k in 0..group.count {
            time += 1;
            let fields = SampleFields {
                ip: addr_of(group.function) + group.ip_offset,
                pid,
                tid: pid + group.thread as i32,
                time,
                addr: group.addr,
                id: 100 + event as u64,
                cpu: CPUS[group.thread],
                period: 4000,
                weight: match (is_store, weight_struct) {
                    (true, _) => 0,
                    (false, false) => group.weight + 3 * k,
                    (false, true) => Weight::Struct {
                        var1_dw: (group.weight + 3 * k) as u32,
                        var2_w: 11,
                        var3_w: 0,
                    }
                    .word(),
                },

                data_src: group.data_src,
                phys_addr: 0,
                misc: misc::USER | misc::EXACT_IP,
                ..SampleFields::default()
            };
            rec.sample(event, &fields);
        }
    }
    let mut features = Features::from_host(vec!["perf".into(), "c2c".into(), "record".into()]);
    features.arch = Some("x86_64".into());
    features.nr_cpus = Some((4, 4));
    features.numa_nodes = vec![
        NumaNode {
            node: 0,
            mem_total_kb: 8 << 20,
            mem_free_kb: 4 << 20,
            cpus: "0-1".into(),
        },
        NumaNode {
            node: 1,
            mem_total_kb: 8 << 20,
            mem_free_kb: 4 << 20,
            cpus: "2-3".into(),
        },
    ];
    let path = rec.finish(&features);
    let functions: Vec<(u64, u64, &str)> =
        FUNCTIONS.iter().map(|f| (addr_of(f), 0x100, *f)).collect();
    write_perf_map(pid, &functions);
    path
}

/// Runs perf on `args` (with `-i FILE`), its standard output; `None` when perf cannot run here.
fn perf(args: &[&str], file: &Path) -> Option<String> {
    let out = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "perf {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

fn perf_runs() -> bool {
    Command::new("perf")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `  Name   :   value` lines of perf c2c's summaries, by name.
fn summary(text: &str) -> std::collections::HashMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(" : ")?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// The rows of a `#`-headed table of perf c2c between `title` and the next `====` banner,
/// split on whitespace.
fn table<'a>(text: &'a str, title: &str) -> Vec<Vec<&'a str>> {
    let start = text
        .find(title)
        .unwrap_or_else(|| panic!("no {title} in perf's output"));
    // The title line, its closing banner, then the table up to the next banner.
    let after = &text[start..];
    let (_, body) = after.split_once("\n====").unwrap();
    let body = body.split_once('\n').map_or("", |(_, b)| b);
    let body = body.split("\n====").next().unwrap();
    body.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.contains("----"))
        .map(|l| l.split_whitespace().collect())
        .collect()
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0.00%".into()
    } else {
        format!("{:.2}%", 100.0 * part as f64 / whole as f64)
    }
}

fn json_of(file: &Path, sort: &str) -> serde_json::Value {
    let out = cpiflame(&["c2c", file.to_str().unwrap(), "--json", "--sort", sort]);
    assert!(
        out.status.success(),
        "cpiflame c2c failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v} is not a count"))
}

/// perf c2c's trace summary and shared-lines summary, line by line, equal cpiflame's totals.
fn check_summaries(perf_text: &str, json: &serde_json::Value) {
    let perf = summary(perf_text);
    let t = &json["totals"];
    let sh = &json["shared"];
    let pairs: [(&str, &serde_json::Value); 36] = [
        ("Total records", &t["records"]),
        ("Locked Load/Store Operations", &t["locked"]),
        ("Load Operations", &t["loads"]),
        ("Loads - uncacheable", &t["loads_uncached"]),
        ("Loads - IO", &t["loads_io"]),
        ("Loads - Miss", &t["loads_miss"]),
        ("Loads - no mapping", &t["loads_no_address"]),
        ("Load Fill Buffer Hit", &t["lfb_hit"]),
        ("Load L1D hit", &t["l1_hit"]),
        ("Load L2D hit", &t["l2_hit"]),
        ("Load LLC hit", &t["llc_hit"]),
        ("Load Local HITM", &t["local_hitm"]),
        ("Load Remote HITM", &t["remote_hitm"]),
        ("Load Remote HIT", &t["remote_hit"]),
        ("Load Local DRAM", &t["local_dram"]),
        ("Load Remote DRAM", &t["remote_dram"]),
        ("Load MESI State Exclusive", &t["exclusive"]),
        ("Load MESI State Shared", &t["shared"]),
        ("Load LLC Misses", &t["llc_misses"]),
        ("Load access blocked by data", &t["blocked_data"]),
        ("Load access blocked by address", &t["blocked_address"]),
        ("Load HIT Local Peer", &t["local_peer"]),
        ("Load HIT Remote Peer", &t["remote_peer"]),
        ("Store Operations", &t["stores"]),
        ("Store - uncacheable", &t["stores_uncached"]),
        ("Store - no mapping", &t["stores_no_address"]),
        ("Store L1D Hit", &t["store_l1_hit"]),
        ("Store L1D Miss", &t["store_l1_miss"]),
        ("No Page Map Rejects", &t["no_map"]),
        ("Unable to parse data source", &t["unparsable"]),
        ("Total Shared Cache Lines", &sh["lines"]),
        ("Load HITs on shared lines", &sh["loads"]),
        ("Fill Buffer Hits on shared lines", &sh["lfb_hit"]),
        ("L1D hits on shared lines", &sh["l1_hit"]),
        ("LLC hits on shared lines", &sh["llc_hit"]),
        ("Total Merged records", &sh["merged_records"]),
    ];
    for (name, ours) in pairs {
        let theirs = perf
            .get(name)
            .unwrap_or_else(|| panic!("perf printed no {name}"));
        assert_eq!(theirs, &u(ours).to_string(), "{name}");
    }
    let more: [(&str, &serde_json::Value); 5] = [
        ("L2D hits on shared lines", &sh["l2_hit"]),
        ("Locked Access on shared lines", &sh["locked"]),
        ("Store HITs on shared lines", &sh["stores"]),
        ("Store L1D hits on shared lines", &sh["store_l1_hit"]),
        ("Store No available memory level", &t["store_no_level"]),
    ];
    for (name, ours) in more {
        assert_eq!(perf[name], u(ours).to_string(), "{name}");
    }
    // The LLC-miss shares, to perf's one decimal.
    let misses = u(&t["llc_misses"]);
    for (name, part) in [
        ("LLC Misses to Local DRAM", &t["local_dram"]),
        ("LLC Misses to Remote DRAM", &t["remote_dram"]),
        ("LLC Misses to Remote cache (HIT)", &t["remote_hit"]),
        ("LLC Misses to Remote cache (HITM)", &t["remote_hitm"]),
    ] {
        let ours = format!("{:.1}%", 100.0 * u(part) as f64 / misses as f64);
        assert_eq!(perf[name], ours, "{name}");
    }
}

/// perf's Shared Data Cache Line table and Pareto table equal cpiflame's lines and rows.
fn check_lines(perf_text: &str, json: &serde_json::Value) {
    let lines = json["lines"].as_array().unwrap();
    let perf_lines = table(perf_text, "Shared Data Cache Line Table");
    assert_eq!(perf_lines.len(), lines.len(), "{perf_lines:?}");
    for (p, l) in perf_lines.iter().zip(lines) {
        let st = &l["stats"];
        let ours = [
            u(&l["index"]).to_string(),
            format!("{:#x}", u(&l["address"])),
            format!("{:.2}%", 100.0 * l["hitm_share"].as_f64().unwrap()),
            u(&st["total_hitm"]).to_string(),
            u(&st["local_hitm"]).to_string(),
            u(&st["remote_hitm"]).to_string(),
            u(&l["records"]).to_string(),
            u(&l["loads"]).to_string(),
            u(&l["stores"]).to_string(),
            u(&st["store_l1_hit"]).to_string(),
            u(&st["store_l1_miss"]).to_string(),
            u(&st["store_no_level"]).to_string(),
            u(&st["lfb_hit"]).to_string(),
            u(&st["l1_hit"]).to_string(),
            u(&st["l2_hit"]).to_string(),
            u(&st["llc_hit_clean"]).to_string(),
            u(&st["local_hitm"]).to_string(),
            u(&st["remote_hit"]).to_string(),
            u(&st["remote_hitm"]).to_string(),
            u(&st["local_dram"]).to_string(),
            u(&st["remote_dram"]).to_string(),
        ];
        // perf's columns: index, address, node, PA cnt, then the counts.
        let theirs: Vec<&str> = p[..2].iter().chain(&p[4..]).copied().collect();
        assert_eq!(theirs, ours, "cache line row {p:?}");
    }
    // The Pareto table: a header row per line, then one row per (offset, code address).
    let pareto = table(perf_text, "Shared Cache Line Distribution Pareto");
    let mut rows = pareto.iter();
    for l in lines {
        let st = &l["stats"];
        let head = rows.next().expect("a line header in perf's Pareto table");
        let ours_head = [
            u(&l["index"]).to_string(),
            u(&st["remote_hitm"]).to_string(),
            u(&st["local_hitm"]).to_string(),
            u(&st["store_l1_hit"]).to_string(),
            u(&st["store_l1_miss"]).to_string(),
            u(&st["store_no_level"]).to_string(),
            format!("{:#x}", u(&l["address"])),
        ];
        assert_eq!(head, &ours_head);
        for r in l["offsets"].as_array().unwrap() {
            let p = rows.next().expect("a Pareto row");
            let share = |k: &str| format!("{:.2}%", 100.0 * r[k].as_f64().unwrap());
            let mean = |k: &str| format!("{:.0}", r[k].as_f64().unwrap());
            let nodes: Vec<String> = r["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| u(&n["node"]).to_string())
                .collect();
            let ours = [
                share("remote_hitm_share"),
                share("local_hitm_share"),
                share("store_l1_hit_share"),
                share("store_l1_miss_share"),
                share("store_no_level_share"),
                format!("{:#x}", u(&r["offset"])),
                format!("{:#x}", u(&r["code_address"])),
                mean("mean_remote_hitm_latency"),
                mean("mean_local_hitm_latency"),
                mean("mean_other_load_latency"),
                u(&r["records"]).to_string(),
                r["cpus"].as_array().unwrap().len().to_string(),
                r["symbol"].as_str().unwrap().to_string(),
                nodes.join(","),
            ];
            // perf: 5 shares, offset, node, PA cnt, code address, 3 means, records, cpu cnt,
            // [.], symbol, object (`[JIT] tid N`), source:line, node list.
            // ... `[JIT] tid PID`, source:line (perf has none for perf-map code: sym+off),
            // then the nodes, space-separated.
            let node_list = p[20..].join(",");
            let theirs = [
                p[0], p[1], p[2], p[3], p[4], p[5], p[8], p[9], p[10], p[11], p[12], p[13], p[15],
                &node_list,
            ];
            assert_eq!(theirs, ours, "Pareto row {p:?}");
            // perf names the process in the object column of perf-map code.
            assert_eq!(p[18], r["pids"][0].to_string());
            // Perf-map code has no DWARF: no source line of ours; perf falls back to
            // `symbol+offset` (decimal) there.
            assert!(r["source"].is_null(), "{r}");
            let symbol = r["symbol"].as_str().unwrap();
            let offset = u(&r["code_address"]) - addr_of(symbol);
            assert_eq!(p[19], format!("{symbol}+{offset}"), "Pareto row {p:?}");
        }
    }
    assert!(rows.next().is_none(), "perf lists more Pareto rows");
}

/// `perf mem report --sort=mem`: samples and weight share per event and level text.
fn check_data_sources(file: &Path, json: &serde_json::Value) {
    let text = perf(&["mem", "report", "--stdio", "--sort=mem"], file).unwrap();
    let sources = json["data_sources"].as_array().unwrap();
    let mut sections = text.split("# Samples: ").skip(1);
    for event in json["events"].as_array().unwrap() {
        let event = event.as_str().unwrap();
        let section = sections.next().expect("a section per event");
        assert!(
            section.contains(&format!("of event '{event}'")),
            "{section}"
        );
        let ours: Vec<&serde_json::Value> =
            sources.iter().filter(|s| s["event"] == event).collect();
        // perf weighs a sample of weight 0 as 1.
        let weight = |s: &serde_json::Value| u(&s["weight"]).max(u(&s["samples"]));
        let total: u64 = ours.iter().map(|s| weight(s)).sum();
        let total_line = section
            .lines()
            .find_map(|l| l.strip_prefix("# Total weight : "))
            .unwrap();
        if ours.iter().all(|s| u(&s["weight"]) != 0) {
            assert_eq!(total_line.trim(), total.to_string(), "{event}");
        }
        let rows: Vec<(String, u64, String)> = section
            .lines()
            .skip(1)
            .filter(|l| {
                !l.starts_with('#') && l.trim_start().starts_with(|c: char| c.is_ascii_digit())
            })
            .map(|l| {
                let mut w = l.split_whitespace();
                let overhead = w.next().unwrap().to_string();
                let samples = w.next().unwrap().parse().unwrap();
                (w.collect::<Vec<_>>().join(" "), samples, overhead)
            })
            .collect();
        assert_eq!(rows.len(), ours.len(), "{event}: {rows:?}");
        for (level, samples, overhead) in rows {
            let s = ours
                .iter()
                .find(|s| s["level"] == level.as_str())
                .unwrap_or_else(|| panic!("{event}: no {level} in cpiflame's data sources"));
            assert_eq!(u(&s["samples"]), samples, "{event} {level}");
            // Every sample of the group is in exactly one served-from class.
            let classes = s["served_from"].as_object().unwrap();
            assert_eq!(
                classes.values().map(u).sum::<u64>(),
                samples,
                "{event} {level}: {classes:?}"
            );
            if u(&s["weight"]) != 0 {
                assert_eq!(pct(u(&s["weight"]), total), overhead, "{event} {level}");
            }
        }
    }
}

#[test]
fn c2c_equals_perf_c2c_and_perf_mem_on_a_synthetic_file() {
    if !perf_runs() {
        cpiflame_testkit::unavailable(
            "perf is not installed (scripts/test.sh installs linux-perf)",
        );
        return;
    }
    let dir = Dir::new("c2c-perf");
    for weight_struct in [false, true] {
        let pid = synthetic_pid(u32::from(weight_struct));
        let file = write_c2c_file(&dir.0, pid, weight_struct);
        for sort in ["tot", "rmt", "lcl"] {
            let json = json_of(&file, sort);
            let text = perf(&["c2c", "report", "--stdio", "-d", sort], &file).unwrap();
            check_summaries(&text, &json);
            check_lines(&text, &json);
            if sort == "tot" {
                check_data_sources(&file, &json);
                check_arithmetic(&json);
                check_text(&file, &json);
            }
        }
        let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    }
}

/// The text report shows what the JSON says: totals, and each listed line with its rows.
fn check_text(file: &Path, json: &serde_json::Value) {
    let out = cpiflame(&["c2c", file.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let t = &json["totals"];
    for (label, key) in [
        ("records", "records"),
        ("loads", "loads"),
        ("stores", "stores"),
    ] {
        let line = format!("  {label:<26}{:>10}", u(&t[key]));
        assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    }
    for l in json["lines"].as_array().unwrap() {
        let head = format!(
            "line {} {:#x}: {} remote HITM, {} local HITM",
            u(&l["index"]),
            u(&l["address"]),
            u(&l["remote_hitm"]),
            u(&l["local_hitm"])
        );
        assert!(text.contains(&head), "no `{head}` in\n{text}");
        for r in l["offsets"].as_array().unwrap() {
            assert!(text.contains(&format!("{:#x}", u(&r["code_address"]))));
        }
    }
}

/// What the groups table says, by exact arithmetic: load weight, lines, means.
fn check_arithmetic(json: &serde_json::Value) {
    let weight = |g: &Group| g.count * g.weight + 3 * g.count * (g.count - 1) / 2;
    let is_load = |g: &Group| g.data_src & at(OP_LOAD, OP_SHIFT) != 0;
    let all = groups();
    let load_weight: u64 = all.iter().filter(|g| is_load(g)).map(weight).sum();
    assert_eq!(u(&json["totals"]["load_weight"]), load_weight);
    assert_eq!(
        u(&json["totals"]["loads"]),
        all.iter()
            .filter(|g| is_load(g))
            .map(|g| g.count)
            .sum::<u64>()
    );
    // Line A's mean load latency: every load whose address is in it.
    let in_a: Vec<&Group> = all
        .iter()
        .filter(|g| is_load(g) && g.addr & !63 == LINE_A)
        .collect();
    let (n, w) = in_a
        .iter()
        .fold((0, 0), |(n, w), g| (n + g.count, w + weight(g)));
    let line_a = &json["lines"][0];
    assert_eq!(u(&line_a["address"]), LINE_A);
    assert_eq!(u(&line_a["load_weight"]), w);
    assert_eq!(
        line_a["mean_load_latency"].as_f64().unwrap(),
        w as f64 / n as f64
    );
}

#[test]
fn a_file_without_memory_samples_is_one_clear_error() {
    let dir = Dir::new("c2c-nomem");
    let attr = EventAttr {
        type_: 1,
        config: 0,
        sample_period_or_freq: 1000,
        sample_type: sample::IP | sample::TID,
        name: Some("cpu-clock".into()),
        ..EventAttr::default()
    };
    let path = dir.path("plain.data");
    let mut w = Recording::create(&path, vec![attr.clone()]);
    let fields = SampleFields {
        ip: CODE,
        pid: 1,
        tid: 1,
        ..SampleFields::default()
    };
    w.record(&sample_record(&attr, &fields).unwrap());
    w.finish(&Features::default());
    let out = cpiflame(&["c2c", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("plain.data") && err.contains("no memory samples"),
        "{err}"
    );
}

/// The writer's memory fields as perf reads them: `perf script` prints the data address,
/// weight (WEIGHT_STRUCT's var1_dw, and var2_w as `ins_lat`), data source, physical
/// address and both page sizes of each sample as written.
#[test]
fn perf_script_reads_the_writers_memory_fields() {
    if !perf_runs() {
        cpiflame_testkit::unavailable(
            "perf is not installed (scripts/test.sh installs linux-perf)",
        );
        return;
    }
    let dir = Dir::new("c2c-fields");
    let attr = EventAttr {
        type_: 4,
        config: 0x1cd,
        sample_period_or_freq: 4000,
        sample_type: sample::IP
            | sample::TID
            | sample::TIME
            | sample::ADDR
            | sample::WEIGHT_STRUCT
            | sample::DATA_SRC
            | sample::PHYS_ADDR
            | sample::DATA_PAGE_SIZE
            | sample::CODE_PAGE_SIZE,
        flags: attr_flags::SAMPLE_ID_ALL,
        name: Some("cpu/mem-loads,ldlat=30/P".into()),
        ids: vec![100],
        ..EventAttr::default()
    };
    let path = dir.path("fields.data");
    let mut w = Recording::create(&path, vec![attr.clone()]);
    let samples: Vec<(u64, u32, u16, u64, u64, u64)> = vec![
        (
            DATA + 0x40,
            312,
            17,
            ld(LVL_HIT | LVL_L3, SNOOP_HITM),
            4096,
            4096,
        ),
        (
            DATA + 0x1008,
            45,
            3,
            ld(LVL_HIT | LVL_L1, SNOOP_NONE),
            2 << 20,
            4096,
        ),
        (
            DATA + 0x2010,
            900,
            0,
            ld(LVL_HIT | LVL_REM_RAM1, SNOOP_MISS),
            1 << 30,
            2 << 20,
        ),
    ];
    for (i, &(addr, var1, var2, data_src, data_page, code_page)) in samples.iter().enumerate() {
        let fields = SampleFields {
            ip: CODE + 0x10 * i as u64,
            pid: 42,
            tid: 42,
            time: 1000 + i as u64,
            addr,
            weight: Weight::Struct {
                var1_dw: var1,
                var2_w: var2,
                var3_w: 0,
            }
            .word(),
            data_src,
            phys_addr: 0x1_0000_0000 + addr % 0x10_0000,
            data_page_size: data_page,
            code_page_size: code_page,
            misc: misc::USER,
            ..SampleFields::default()
        };
        w.record(&sample_record(&attr, &fields).unwrap());
    }
    w.finish(&Features::from_host(vec!["perf".into()]));
    let text = perf(
        &[
            "script",
            "-F",
            "addr,weight,ins_lat,data_src,phys_addr,data_page_size,code_page_size",
        ],
        &path,
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), samples.len(), "{text}");
    // perf prints page sizes in K up to 1M, then in M (a 1 GiB page is 1024M).
    let size = |b: u64| match b {
        4096 => "4K",
        0x20_0000 => "2M",
        0x4000_0000 => "1024M",
        _ => unreachable!(),
    };
    for (line, &(addr, var1, var2, data_src, data_page, code_page)) in lines.iter().zip(&samples) {
        // addr, data_src in hex and decoded (`|OP LOAD|LVL L3 hit|SNP HitM|...`), weight,
        // ins_lat, phys_addr, data and code page size.
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(u64::from_str_radix(words[0], 16).unwrap(), addr, "{line}");
        assert_eq!(
            u64::from_str_radix(words[1], 16).unwrap(),
            data_src,
            "{line}"
        );
        let level = line
            .split("|LVL ")
            .nth(1)
            .unwrap()
            .split('|')
            .next()
            .unwrap();
        assert_eq!(level, DataSource(data_src).level_label(), "{line}");
        let tail = &words[words.len() - 5..];
        let phys = format!("{:x}", 0x1_0000_0000 + addr % 0x10_0000);
        let want = [
            var1.to_string(),
            var2.to_string(),
            phys,
            size(data_page).to_string(),
            size(code_page).to_string(),
        ];
        assert_eq!(tail, want, "{line}");
    }
}

/// Every level encoding named as perf names it: `perf script`'s `|LVL ...|` text of samples
/// with each mem_lvl flag, each mem_lvl_num value, remote and hop combinations, equals
/// `DataSource::level_label`.
#[test]
fn level_text_equals_perfs_for_every_encoding() {
    if !perf_runs() {
        cpiflame_testkit::unavailable(
            "perf is not installed (scripts/test.sh installs linux-perf)",
        );
        return;
    }
    let mut sources = Vec::new();
    for flag in 0..14 {
        for hit_miss in [LVL_HIT, LVL_MISS, 0] {
            sources.push(ld((1 << flag) | hit_miss, SNOOP_NONE));
        }
    }
    sources.push(ld(LVL_HIT | LVL_L1 | LVL_L2, SNOOP_NONE));
    for num in 1..16 {
        for (remote, hops) in [
            (0, 0),
            (1, 0),
            (1, HOPS_0),
            (1, HOPS_1),
            (0, HOPS_2),
            (1, HOPS_3),
        ] {
            sources.push(
                ld(LVL_HIT, SNOOP_NONE)
                    | at(num, LVLNUM_SHIFT)
                    | at(remote, REMOTE_SHIFT)
                    | at(hops, HOPS_SHIFT),
            );
        }
        sources.push(ld(LVL_HIT | LVL_L3, SNOOP_HIT) | at(num, LVLNUM_SHIFT));
    }
    sources.push(ld(LVL_MISS | LVL_L3, SNOOP_NONE) | at(REMOTE_REMOTE, REMOTE_SHIFT));
    sources.push(at(OP_NA, OP_SHIFT));
    sources.push(st(LVL_NA));
    let dir = Dir::new("c2c-levels");
    let attr = EventAttr {
        type_: 4,
        config: 0x1cd,
        sample_period_or_freq: 4000,
        sample_type: sample::IP | sample::TID | sample::TIME | sample::ADDR | sample::DATA_SRC,
        flags: attr_flags::SAMPLE_ID_ALL,
        name: Some("cpu/mem-loads,ldlat=30/P".into()),
        ids: vec![100],
        ..EventAttr::default()
    };
    let path = dir.path("levels.data");
    let mut w = Recording::create(&path, vec![attr.clone()]);
    for (i, &data_src) in sources.iter().enumerate() {
        let fields = SampleFields {
            ip: CODE,
            pid: 42,
            tid: 42,
            time: 1000 + i as u64,
            addr: DATA,
            data_src,
            misc: misc::USER,
            ..SampleFields::default()
        };
        w.record(&sample_record(&attr, &fields).unwrap());
    }
    w.finish(&Features::from_host(vec!["perf".into()]));
    let text = perf(&["script", "-F", "data_src"], &path).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("|LVL ")).collect();
    assert_eq!(lines.len(), sources.len(), "{text}");
    for (line, &data_src) in lines.iter().zip(&sources) {
        let level = line
            .split("|LVL ")
            .nth(1)
            .unwrap()
            .split("|SNP")
            .next()
            .unwrap();
        assert_eq!(
            level,
            DataSource(data_src).level_label(),
            "data_src {data_src:#x}: {line}"
        );
    }
}

/// One fixture binary mapped into the synthetic process: its path, where its first byte is
/// loaded, and the sampled instructions (process address, address in the file's symbol
/// space, function).
struct Mapped {
    path: PathBuf,
    base: u64,
    ips: Vec<(u64, u64, String)>,
}

/// Maps `path`'s executable PT_LOAD segments at `base` (page-aligned, at their file offsets,
/// as the loader does) and picks sample addresses in `functions`: each function's first
/// byte and points a quarter, a half and three quarters into it (line table rows cover any
/// address, instruction boundary or not, for perf's addr2line and ours alike).
fn map_fixture(path: &Path, base: u64, functions: &[&str]) -> (Mapped, Vec<Mmap2>) {
    use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};
    let bytes = std::fs::read(path).unwrap();
    let elf = object::File::parse(&*bytes).unwrap();
    let page = |a: u64| a & !0xfff;
    let mut maps = Vec::new();
    for seg in elf.segments() {
        let SegmentFlags::Elf { p_flags, .. } = seg.flags() else {
            continue;
        };
        if p_flags.0 & object::elf::PF_X.0 == 0 {
            continue;
        }
        let (offset, _) = seg.file_range();
        let start = page(seg.address());
        maps.push(Mmap2 {
            addr: base + start,
            len: page(seg.address() + seg.size() + 0xfff) - start,
            pgoff: page(offset),
            prot: 5,
            flags: 2,
            filename: path.to_str().unwrap().into(),
            misc: misc::USER,
            ..Mmap2::default()
        });
    }
    assert!(
        !maps.is_empty(),
        "{} has no executable segment",
        path.display()
    );
    let mut ips = Vec::new();
    for name in functions {
        let sym = elf
            .symbols()
            .find(|s| s.name() == Ok(*name))
            .unwrap_or_else(|| panic!("no {name} in {}", path.display()));
        assert!(sym.size() >= 4, "{name} is {} bytes", sym.size());
        for k in 0..4 {
            let svma = sym.address() + k * sym.size() / 4;
            ips.push((base + svma, svma, name.to_string()));
        }
    }
    let mapped = Mapped {
        path: path.to_path_buf(),
        base,
        ips,
    };
    (mapped, maps)
}

/// A file whose code is the `code` binaries mapped by `maps`, each sampled instruction a local HITM load and a store on
/// one line, so that every (offset, code address) is a Pareto row.
fn write_elf_file(dir: &Path, pid: i32, code: &[Mapped], maps: &[Mmap2]) -> PathBuf {
    let sample_type = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::ADDR
        | sample::ID
        | sample::CPU
        | sample::PERIOD
        | sample::WEIGHT
        | sample::DATA_SRC;
    let attrs: Vec<EventAttr> = [
        ("cpu/mem-loads,ldlat=30/P", 0x1cd),
        ("cpu/mem-stores/P", 0x82d0),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(name, config))| EventAttr {
        type_: 4,
        config,
        sample_period_or_freq: 4000,
        sample_type,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP,
        name: Some(name.to_string()),
        ids: vec![100 + i as u64],
        ..EventAttr::default()
    })
    .collect();
    let path = dir.join("elf.data");
    let mut w = Recording::create(&path, attrs.clone());
    let sid = SampleId {
        pid,
        tid: pid,
        time: 1,
        id: 100,
        stream_id: 100,
        cpu: 0,
    };
    w.record(&comm_record(&attrs[0], pid, pid, "elfapp", true, &sid).unwrap());
    let data = Mmap2 {
        addr: DATA,
        len: 0x10000,
        prot: 3,
        flags: 2,
        filename: "//anon".into(),
        misc: misc::USER | misc::MMAP_DATA,
        ..Mmap2::default()
    };
    for m in maps.iter().chain([&data]) {
        let m = Mmap2 {
            pid,
            tid: pid,
            ..m.clone()
        };
        w.record(&mmap2_record(&attrs[0], &m, &sid).unwrap());
    }
    let ips = code.iter().flat_map(|m| &m.ips);
    let mut time = 10;
    for (i, (ip, ..)) in ips.enumerate() {
        let addr = LINE_A + 8 * (i as u64 % 8);
        for (event, data_src) in [
            (0, ld(LVL_HIT | LVL_L3, SNOOP_HITM)),
            (1, st(LVL_HIT | LVL_L1)),
        ] {
            time += 1;
            let fields = SampleFields {
                ip: *ip,
                pid,
                tid: pid,
                time,
                addr,
                id: 100 + event as u64,
                cpu: 0,
                period: 4000,
                weight: if event == 0 { 90 } else { 0 },
                data_src,
                misc: misc::USER | misc::EXACT_IP,
                ..SampleFields::default()
            };
            w.record(&sample_record(&attrs[event], &fields).unwrap());
        }
    }
    let mut features = Features::from_host(vec!["perf".into(), "c2c".into(), "record".into()]);
    features.arch = Some("x86_64".into());
    // perf c2c needs the NUMA topology.
    features.nr_cpus = Some((1, 1));
    features.numa_nodes = vec![NumaNode {
        node: 0,
        mem_total_kb: 8 << 20,
        mem_free_kb: 4 << 20,
        cpus: "0".into(),
    }];
    w.finish(&features);
    path
}

/// `addr2line -e BINARY -i ADDR`: the innermost frame's `file:line` (base name, without
/// the discriminator), and how many frames (inlined ones first) there are.
fn addr2line(binary: &Path, svma: u64) -> (String, usize) {
    let out = Command::new("addr2line")
        .arg("-e")
        .arg(binary)
        .arg("-i")
        .arg(format!("{svma:#x}"))
        .output()
        .expect("addr2line runs (binutils)");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    let first = first.split(" (discriminator").next().unwrap();
    let base = first.rsplit('/').next().unwrap();
    (base.replace(":?", ":0"), text.lines().count())
}

/// The Pareto rows' source lines, for code in real ELF files with DWARF, equal perf c2c's
/// Source:Line column row by row and `addr2line -i`'s innermost line.
#[test]
fn c2c_source_lines_equal_perf_c2c_and_addr2line() {
    if !perf_runs() {
        cpiflame_testkit::unavailable(
            "perf is not installed (scripts/test.sh installs linux-perf)",
        );
        return;
    }
    let fixtures = support::shared_fixtures().expect("fixtures build");
    let dir = Dir::new("c2c-srcline");
    // The same code without DWARF: no source line.
    let stripped = dir.path("false_sharing_nodebug");
    let strip = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(&fixtures.false_sharing)
        .status()
        .expect("strip runs (binutils)");
    assert!(strip.success());
    let mut code = Vec::new();
    let mut maps = Vec::new();
    for (path, base, functions) in [
        (
            &fixtures.false_sharing,
            0x5555_5555_0000,
            &["bump_counter", "worker", "main"][..],
        ),
        (
            &fixtures.threads,
            0x5555_6666_0000,
            &["inline_caller", "worker_heavy", "recurse_leaf"],
        ),
        (&stripped, 0x5555_7777_0000, &["bump_counter"]),
    ] {
        let (mapped, more) = map_fixture(path, base, functions);
        code.push(mapped);
        maps.extend(more);
    }
    let file = write_elf_file(&dir.0, synthetic_pid(7), &code, &maps);
    let json = json_of(&file, "tot");
    let text = perf(&["c2c", "report", "--stdio"], &file).unwrap();

    let lines = json["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "one shared line");
    let rows = lines[0]["offsets"].as_array().unwrap();
    let n_ips: usize = code.iter().map(|m| m.ips.len()).sum();
    assert_eq!(rows.len(), n_ips, "a row per sampled instruction");
    // perf's rows after the line's header: 5 shares, offset, node, PA cnt, code address,
    // 3 means, records, cpu cnt, [.], symbol, object (the file's base name), Source:Line,
    // nodes.
    let pareto = table(&text, "Shared Cache Line Distribution Pareto");
    assert_eq!(pareto.len(), 1 + rows.len(), "{pareto:?}");
    let (mut inlined, mut without) = (0, 0);
    for (r, p) in rows.iter().zip(&pareto[1..]) {
        let ip = u(&r["code_address"]);
        assert_eq!(p[8], format!("{ip:#x}"), "{p:?}");
        let (m, svma, function) = code
            .iter()
            .find_map(|m| {
                let (_, svma, f) = m.ips.iter().find(|(a, ..)| *a == ip)?;
                Some((m, *svma, f))
            })
            .unwrap();
        assert_eq!(svma, ip - m.base);
        // Both name the ELF symbol that holds the instruction, not an inlined function.
        assert_eq!(p[15], function, "{p:?}");
        assert_eq!(r["symbol"].as_str(), Some(function.as_str()), "{r}");
        let object = m.path.file_name().unwrap().to_str().unwrap();
        assert_eq!(p[16], object, "{p:?}");
        if m.path == stripped {
            assert!(r["source"].is_null(), "{r}");
            // perf 6.1 prints addr2line's "no idea" for an ELF file without DWARF lines.
            assert_eq!(p[17], "??:0", "{p:?}");
            without += 1;
            continue;
        }
        let ours = r["source"]
            .as_str()
            .unwrap_or_else(|| panic!("no source line for {function} {ip:#x}"));
        assert_eq!(
            p[17], ours,
            "perf's Source:Line at {function} {ip:#x}: {p:?}"
        );
        let (a2l, frames) = addr2line(&m.path, svma);
        assert_eq!(ours, a2l, "addr2line -i at {function} {svma:#x}");
        inlined += usize::from(frames > 1);
    }
    assert_eq!(without, 4);
    // inline_caller's loop is its always-inlined helper: the innermost line is the helper's.
    assert!(inlined > 0, "no sampled instruction was inlined code");

    // The text table shows each row's source line.
    let out = cpiflame(&["c2c", file.to_str().unwrap()]);
    assert!(out.status.success());
    let ours = String::from_utf8(out.stdout).unwrap();
    for r in rows {
        let code = format!("{:#x}", u(&r["code_address"]));
        let line = ours
            .lines()
            .find(|l| l.split_whitespace().any(|w| w == code))
            .unwrap_or_else(|| panic!("no row for {code} in\n{ours}"));
        let want = format!(
            "  {}  {}  ",
            r["symbol"].as_str().unwrap(),
            r["source"].as_str().unwrap_or("-")
        );
        assert!(line.contains(&want), "`{want}` not in `{line}`");
    }
}

/// A NUMA topology claiming 20,000 ranges of 65,536 cpus each (a 431 KB file once took
/// 3.5 GB and minutes): cpus past perf's range are left out and the walk is bounded, and the
/// nodes of the real cpus are still known.
#[test]
fn a_numa_topology_of_huge_cpu_ranges_is_bounded() {
    let dir = Dir::new("c2c-numa-bomb");
    let attr = EventAttr {
        type_: 4,
        config: 0x1cd,
        sample_period_or_freq: 4000,
        sample_type: sample::IP | sample::TID | sample::ADDR | sample::CPU | sample::DATA_SRC,
        name: Some("cpu/mem-loads,ldlat=30/P".into()),
        ..EventAttr::default()
    };
    let path = dir.path("numa.data");
    let mut w = Recording::create(&path, vec![attr.clone()]);
    for cpu in [0, 1] {
        let fields = SampleFields {
            ip: CODE,
            pid: 1,
            tid: 1,
            addr: LINE_A,
            cpu,
            data_src: ld(LVL_HIT | LVL_L3, SNOOP_HITM),
            ..SampleFields::default()
        };
        w.record(&sample_record(&attr, &fields).unwrap());
    }
    // Ranges past any real cpu, and one range over and over.
    let huge: Vec<String> = (1..=20_000u64)
        .map(|k| match k % 2 {
            0 => format!("{}-{}", k * 65_536, k * 65_536 + 65_535),
            _ => "2-65535".to_string(),
        })
        .collect();
    let features = Features {
        numa_nodes: vec![
            NumaNode {
                node: 0,
                mem_total_kb: 1,
                mem_free_kb: 1,
                cpus: "0".into(),
            },
            NumaNode {
                node: 1,
                mem_total_kb: 1,
                mem_free_kb: 1,
                cpus: format!("1,{}", huge.join(",")),
            },
        ],
        ..Features::default()
    };
    w.finish(&features);
    let out = cpiflame(&["c2c", "--json", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes: Vec<u64> = json["lines"][0]["offsets"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_u64().unwrap())
        .collect();
    assert_eq!(nodes, [0, 1], "{json}");
}

/// A forked child (no exec) has its parent's mappings: its samples are mapped, as perf c2c
/// counts them; a process with no mappings at all is a "No Page Map Reject" for both.
#[test]
fn a_forked_child_has_its_parents_mappings() {
    if !perf_runs() {
        cpiflame_testkit::unavailable(
            "perf is not installed (scripts/test.sh installs linux-perf)",
        );
        return;
    }
    let dir = Dir::new("c2c-fork");
    let attr = EventAttr {
        type_: 4,
        config: 0x1cd,
        sample_period_or_freq: 4000,
        sample_type: sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::ADDR
            | sample::ID
            | sample::CPU
            | sample::PERIOD
            | sample::WEIGHT
            | sample::DATA_SRC,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP | attr_flags::TASK,
        name: Some("cpu/mem-loads,ldlat=30/P".into()),
        ids: vec![100],
        ..EventAttr::default()
    };
    let (parent, child, stranger) = (synthetic_pid(7), synthetic_pid(8), synthetic_pid(9));
    let path = dir.path("fork.data");
    let mut w = Recording::create(&path, vec![attr.clone()]);
    let sid = |pid| SampleId {
        pid,
        tid: pid,
        time: 1,
        id: 100,
        stream_id: 100,
        cpu: 0,
    };
    w.record(&comm_record(&attr, parent, parent, "forker", true, &sid(parent)).unwrap());
    for (addr, len, misc) in [
        (CODE, 0x1000, misc::USER),
        (DATA, 0x10000, misc::USER | misc::MMAP_DATA),
    ] {
        let m = Mmap2 {
            pid: parent,
            tid: parent,
            addr,
            len,
            prot: 3,
            flags: 2,
            filename: "//anon".into(),
            misc,
            ..Mmap2::default()
        };
        w.record(&mmap2_record(&attr, &m, &sid(parent)).unwrap());
    }
    w.record(&fork_record(&attr, child, parent, child, parent, 2, &sid(child)).unwrap());
    for (time, pid) in (11..).zip([parent, child, child, stranger]) {
        let fields = SampleFields {
            ip: CODE + 0x10,
            pid,
            tid: pid,
            time,
            addr: LINE_A,
            id: 100,
            cpu: 0,
            period: 4000,
            weight: 50,
            data_src: ld(LVL_HIT | LVL_L1, SNOOP_NONE),
            misc: misc::USER | misc::EXACT_IP,
            ..SampleFields::default()
        };
        w.record(&sample_record(&attr, &fields).unwrap());
    }
    let mut features = Features::from_host(vec!["perf".into(), "c2c".into(), "record".into()]);
    features.arch = Some("x86_64".into());
    features.nr_cpus = Some((1, 1));
    features.numa_nodes = vec![NumaNode {
        node: 0,
        mem_total_kb: 1,
        mem_free_kb: 1,
        cpus: "0".into(),
    }];
    w.finish(&features);
    let out = cpiflame(&["c2c", "--json", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&json["totals"]["no_map"]), 1, "{json}");
    let text = perf(&["c2c", "report", "--stdio", "-d", "tot"], &path).unwrap();
    let perf = summary(&text);
    assert_eq!(
        perf.get("No Page Map Rejects").map(String::as_str),
        Some("1"),
        "{text}"
    );
}

/// `c2c --time`: the report counts the memory samples `perf script --time` prints (perf c2c
/// has no `--time`): every record of the synthetic file is a memory sample.
#[test]
fn time_counts_the_samples_perf_script_time_keeps() {
    if !perf_runs() {
        cpiflame_testkit::unavailable(
            "perf is not installed (scripts/test.sh installs linux-perf)",
        );
        return;
    }
    let dir = Dir::new("c2c-time");
    let pid = synthetic_pid(10);
    let file = write_c2c_file(&dir.0, pid, false);
    let times = |range: Option<&str>| crate::time_ranges::perf_times(&file, range);
    let all = times(None);
    let range = format!("{},{}", all[all.len() / 4], all[all.len() / 2]);
    let kept = times(Some(&range)).len() as u64;
    assert!(
        kept > 0 && kept < all.len() as u64,
        "{kept} of {}",
        all.len()
    );
    let out = cpiflame(&["c2c", s(&file), "--json", "--time", &range]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&json["totals"]["records"]), kept, "{range}");
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}
