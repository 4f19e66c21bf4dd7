//! `cpiflame list --root DIR` on the saved machines of `fixtures/roots/` (written from the
//! kernel's sources by `fixtures/roots/make-roots.py`, and one copy of this VM): what
//! `record` would choose on each, written out by hand from the vendors' event tables and the
//! kernel's. Nothing here needs a PMU: a saved root is read, never opened.

use crate::support;

use std::path::PathBuf;

use support::{cpiflame, ok, repo_root, Dir};

fn root(name: &str) -> PathBuf {
    repo_root().join("fixtures/roots").join(name)
}

fn list_json(name: &str) -> serde_json::Value {
    let dir = root(name);
    let out = cpiflame(&["list", "--root", dir.to_str().unwrap(), "--json"]);
    serde_json::from_str(&ok(&out)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One saved machine and what record must choose there.
struct Expect {
    root: &'static str,
    mode: &'static str,
    pmu: Option<&'static str>,
    events: &'static [&'static str],
    /// The CPU's code name.
    name: &'static str,
}

const INTEL_STALLS: &str = "cpu/event=0xa3,umask=0x4,cmask=4,name=cycle_activity.stalls_total/";
const INTEL_CYCLES: &str = "cpu/event=0x3c,umask=0x0,name=cpu_clk_unhalted.thread_p/";
const AMD_CYCLES: &str = "cpu/event=0x76,umask=0x0,name=ls_not_halted_cyc/";
const AMD_INSTRUCTIONS: &str = "cpu/event=0xc0,umask=0x0,name=ex_ret_instr/";
const ZEN_STALLS: &str = "cpu/event=0xd6,umask=0x1b,name=ex_no_retire.all/";

const EXPECTED: &[Expect] = &[
    Expect {
        root: "skylake-x",
        mode: "stalls",
        pmu: Some("cpu"),
        events: &[INTEL_STALLS, INTEL_CYCLES],
        name: "Skylake-SP",
    },
    // Hybrid: the P-cores' PMU, whatever else there is (cpu_atom, cpu_lowpower).
    Expect {
        root: "arrow-lake-h",
        mode: "stalls",
        pmu: Some("cpu_core"),
        events: &[
            "cpu_core/event=0xa3,umask=0x4,cmask=4,name=cycle_activity.stalls_total/",
            "cpu_core/event=0x3c,umask=0x0,name=cpu_clk_unhalted.thread_p/",
        ],
        name: "Arrow Lake-H",
    },
    // Family 18 is not family 6: no table, CPI from the architectural events.
    Expect {
        root: "intel-family-18",
        mode: "cpi",
        pmu: Some("cpu_core"),
        events: &[
            "cpu_core/event=0x3c,umask=0x0,name=cpu_clk_unhalted.thread_p/",
            "cpu_core/event=0xc0,umask=0x0,name=inst_retired.any_p/",
        ],
        name: "Nova Lake",
    },
    Expect {
        root: "zen2",
        mode: "cpi",
        pmu: Some("cpu"),
        events: &[AMD_CYCLES, AMD_INSTRUCTIONS],
        name: "Zen 2",
    },
    Expect {
        root: "zen3",
        mode: "cpi",
        pmu: Some("cpu"),
        events: &[AMD_CYCLES, AMD_INSTRUCTIONS],
        name: "Zen 3",
    },
    Expect {
        root: "zen4",
        mode: "stalls",
        pmu: Some("cpu"),
        events: &[ZEN_STALLS, AMD_CYCLES],
        name: "Zen 4",
    },
    Expect {
        root: "zen5",
        mode: "stalls",
        pmu: Some("cpu"),
        events: &[ZEN_STALLS, AMD_CYCLES],
        name: "Zen 5",
    },
    // 1Ah model 50h is Zen 6, whose table has no ex_no_retire.all.
    Expect {
        root: "zen6",
        mode: "cpi",
        pmu: Some("cpu"),
        events: &[AMD_CYCLES, AMD_INSTRUCTIONS],
        name: "Zen 6",
    },
    Expect {
        root: "neoverse-n2-dt",
        mode: "stalls",
        pmu: Some("armv9_neoverse_n2"),
        events: &[
            "armv9_neoverse_n2/event=0x3c,name=stall/",
            "armv9_neoverse_n2/event=0x11,name=cpu_cycles/",
        ],
        name: "Neoverse N2",
    },
    Expect {
        root: "neoverse-v1",
        mode: "stalls",
        pmu: Some("armv8_pmuv3_0"),
        events: &[
            "armv8_pmuv3_0/event=0x3c,name=stall/",
            "armv8_pmuv3_0/event=0x11,name=cpu_cycles/",
        ],
        name: "Neoverse V1",
    },
    // No events/stall_backend alias: the core does not implement 0x24, so no raw stall event.
    Expect {
        root: "cortex-a53-no-stall",
        mode: "cpi",
        pmu: Some("armv8_cortex_a53"),
        events: &[
            "armv8_cortex_a53/event=0x11,name=cpu_cycles/",
            "armv8_cortex_a53/event=0x8,name=inst_retired/",
        ],
        name: "Cortex-A53",
    },
    Expect {
        root: "apple-m1",
        mode: "cpi",
        pmu: None,
        events: &["cycles", "instructions"],
        name: "Apple",
    },
    // This VM as it is: no hardware PMU.
    Expect {
        root: "vm-no-pmu",
        mode: "cpu-clock",
        pmu: None,
        events: &["cpu-clock"],
        name: "",
    },
];

#[test]
fn every_saved_machine_gets_the_events_its_cpu_has() {
    for e in EXPECTED {
        let j = list_json(e.root);
        let record = &j["record"];
        assert_eq!(record["mode"], e.mode, "{}: {j:#}", e.root);
        assert_eq!(record["pmu"].as_str(), e.pmu, "{}: {j:#}", e.root);
        let events: Vec<&str> = record["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(events, e.events, "{}", e.root);
        if !e.name.is_empty() {
            assert_eq!(j["cpu"]["name"], e.name, "{}", e.root);
        }
        assert!(
            j["pmus"].as_array().unwrap().len() >= 4,
            "{}: {j:#}",
            e.root
        );
        let why = record["why"].as_str().unwrap();
        // "No PMU" is said only where there is none.
        assert_eq!(
            why.contains("no hardware PMU"),
            e.root == "vm-no-pmu",
            "{}: {why}",
            e.root
        );
    }
}

#[test]
fn the_json_names_the_cpu_as_the_issue_asks() {
    let j = list_json("neoverse-v1");
    assert_eq!(j["cpu"]["vendor"], "arm");
    assert_eq!(j["cpu"]["implementer"], 0x41);
    assert_eq!(j["cpu"]["part"], 0xd40);
    let j = list_json("zen6");
    assert_eq!(j["cpu"]["vendor"], "amd");
    assert_eq!(
        (j["cpu"]["family"].clone(), j["cpu"]["model"].clone()),
        (0x1a.into(), 0x50.into())
    );
    assert!(j["pmus"].as_array().unwrap().iter().any(|p| p == "cpu"));
}

/// Why CPI, in the words of the table: Zen 2/3 have no reliable stall event, the A53 lacks
/// the alias, Zen 4 and 5 carry the caveat of ex_no_retire.all.
#[test]
fn the_text_listing_says_why() {
    let text = |name: &str| {
        let dir = root(name);
        ok(&cpiflame(&["list", "--root", dir.to_str().unwrap()]))
    };
    let zen3 = text("zen3");
    assert!(zen3.contains("no reliable stall-cycles event"), "{zen3}");
    assert!(
        zen3.contains("cpiflame record would record cpu/event=0x76"),
        "{zen3}"
    );
    let a53 = text("cortex-a53-no-stall");
    assert!(a53.contains("no events/stall_backend alias"), "{a53}");
    let zen4 = text("zen4");
    assert!(zen4.contains("thread_not_selected"), "{zen4}");
    let arl = text("arrow-lake-h");
    assert!(arl.contains("cpu_atom, cpu_lowpower not used"), "{arl}");
    // The memory presets are read from the root too: the hybrid P-cores' stores alias.
    assert!(
        arl.contains("cpu_core/mem-stores/P: type 4 config 0x2cd"),
        "{arl}"
    );
}

#[test]
fn a_root_that_is_not_there_is_one_error_line() {
    let out = cpiflame(&["list", "--root", "/nonexistent/root", "--json"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/root"), "{err}");
    // A root without cpuinfo names the file.
    let dir = Dir::new("empty-root");
    let out = cpiflame(&["list", "--root", dir.0.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("proc/cpuinfo"), "{err}");
}

/// `list --json`'s `"topdown"` on each saved machine: the group `record --topdown` would
/// open, written out by hand from the kernel's sysfs aliases and the
/// vendors' event tables, or `null` and the reason.
#[test]
fn list_json_says_which_topdown_group_each_cpu_opens() {
    let ev = |pmu: &str, list: &[&str]| -> Vec<String> {
        list.iter().map(|e| format!("{pmu}/{e}/")).collect()
    };
    const SLOTS_CYCLES_L1: [&str; 6] = [
        "event=0x00,umask=0x4,name=slots",
        "event=0x3c,umask=0x0,name=cycles",
        "event=0x00,umask=0x80,name=topdown-retiring",
        "event=0x00,umask=0x81,name=topdown-bad-spec",
        "event=0x00,umask=0x82,name=topdown-fe-bound",
        "event=0x00,umask=0x83,name=topdown-be-bound",
    ];
    const L2: [&str; 4] = [
        "event=0x00,umask=0x84,name=topdown-heavy-ops",
        "event=0x00,umask=0x85,name=topdown-br-mispredict",
        "event=0x00,umask=0x86,name=topdown-fetch-lat",
        "event=0x00,umask=0x87,name=topdown-mem-bound",
    ];
    const ZEN_L1: [&str; 5] = [
        "event=0x76,umask=0x0,name=ls_not_halted_cyc",
        "event=0x1a0,umask=0x1,name=de_no_dispatch_per_slot.no_ops_from_frontend",
        "event=0x1a0,umask=0x1e,name=de_no_dispatch_per_slot.backend_stalls",
        "event=0xaa,umask=0x7,name=de_src_op_disp.all",
        "event=0xc1,umask=0x0,name=ex_ret_ops",
    ];
    const ARM: [&str; 6] = [
        "event=0x11,name=cpu_cycles",
        "event=0x3e,name=stall_slot_frontend",
        "event=0x3d,name=stall_slot_backend",
        "event=0x3f,name=stall_slot",
        "event=0x3a,name=op_retired",
        "event=0x3b,name=op_spec",
    ];
    let icx = [
        &SLOTS_CYCLES_L1[..],
        &[
            "event=0xd,umask=0x10,name=int_misc.uop_dropping",
            "event=0xd,umask=0x1,cmask=1,edge=1,name=int_misc.clears_count",
        ],
    ]
    .concat();
    let spr = [
        &SLOTS_CYCLES_L1[..],
        &L2,
        &["event=0xad,umask=0x10,name=int_misc.uop_dropping"],
    ]
    .concat();
    let arl = [&SLOTS_CYCLES_L1[..], &L2].concat();
    let zen5 = [
        &ZEN_L1[..],
        &["event=0x1a0,umask=0x60,name=de_no_dispatch_per_slot.smt_contention"],
    ]
    .concat();
    let skl = [
        "event=0x3c,umask=0x0,name=cpu_clk_unhalted.thread",
        "event=0x9c,umask=0x1,name=idq_uops_not_delivered.core",
        "event=0xe,umask=0x1,name=uops_issued.any",
        "event=0xc2,umask=0x2,name=uops_retired.retire_slots",
        "event=0xd,umask=0x1,name=int_misc.recovery_cycles",
    ];
    let groups: Vec<(&str, u64, Vec<String>, &str)> = vec![
        (
            "icelake-x",
            1,
            ev("cpu", &icx),
            "Intel Ice Lake PERF_METRICS (icl/icx metrics)",
        ),
        (
            "sapphire-rapids",
            2,
            ev("cpu", &spr),
            "Intel Golden Cove PERF_METRICS (spr/adl metrics)",
        ),
        (
            "arrow-lake-h",
            2,
            ev("cpu_core", &arl),
            "Intel Lion Cove PERF_METRICS (lnl/arl metrics)",
        ),
        (
            "alder-lake",
            2,
            ev("cpu_core", &spr),
            "Intel Golden Cove PERF_METRICS (spr/adl metrics)",
        ),
        (
            "skylake-x",
            1,
            ev("cpu", &skl),
            "Intel Skylake-class events (skl metrics)",
        ),
        (
            "zen4",
            1,
            ev("cpu", &ZEN_L1),
            "AMD Zen 4 pipeline (6 slots per cycle)",
        ),
        (
            "zen5",
            1,
            ev("cpu", &zen5),
            "AMD Zen 5 pipeline (8 slots per cycle)",
        ),
        // amdzen6/pipeline.json; the root has no nmi_watchdog file: counted as on.
        (
            "zen6",
            1,
            ev("cpu", &ZEN_L1),
            "AMD Zen 6 pipeline (8 slots per cycle)",
        ),
        (
            "neoverse-n2-dt",
            1,
            ev("armv9_neoverse_n2", &ARM),
            "Arm Neoverse N2 before r0p3",
        ),
        (
            "neoverse-n2-r0p3",
            1,
            ev("armv8_pmuv3_0", &ARM),
            "Arm Neoverse N2/V2",
        ),
    ];
    for (name, level, events, formulas) in groups {
        let j = list_json(name);
        let t = &j["topdown"];
        assert_eq!(t["level"], level, "{name}: {t:#}");
        assert_eq!(t["events"], serde_json::json!(events), "{name}");
        assert_eq!(t["formulas"], formulas, "{name}");
        assert_eq!(t["leader"], t["events"][0], "{name}");
        // perf's read-sampler rule: after a slots leader the second member samples.
        let sampler = usize::from(t["leader"].as_str().unwrap().ends_with("name=slots/"));
        assert_eq!(t["sampler"], t["events"][sampler], "{name}");
        assert!(j["topdown_why"].is_null(), "{name}");
    }
    // The watchdog's counter: Zen 4's root has it on (5 events, no smt_contention), Zen 5's
    // off (6 events); a root without the file is counted as on.
    let notes = |name: &str| list_json(name)["topdown"]["notes"].to_string();
    assert!(notes("zen4").contains("kernel.nmi_watchdog=1"));
    assert!(notes("zen5").contains("NMI watchdog is off"));
    // `list` shows the default level; AMD's level 2 is named as a flag away.
    assert!(notes("zen4").contains("2 more multiplexed groups: --td-level 2"));
    assert!(notes("skylake-x").contains("could not be read"));
    assert!(notes("skylake-x").contains("SMT on"));
    assert!(notes("arrow-lake-h").contains("cpu_core (P-cores) only"));
    for (name, why) in [
        ("neoverse-n1", "Neoverse N1 has no STALL_SLOT events"),
        ("zen3", "Zen 3 has no de_no_dispatch_per_slot events"),
        ("zen2", "Zen 2 has no de_no_dispatch_per_slot events"),
        ("vm-no-pmu", "no core PMU (cpu)"),
        ("intel-family-18", "cpu_core has no slots event"),
        ("neoverse-v1", "lists no stall_slot_frontend event"),
    ] {
        let j = list_json(name);
        assert!(j["topdown"].is_null(), "{name}: {j:#}");
        let w = j["topdown_why"].as_str().unwrap();
        assert!(w.contains(why), "{name}: {w}");
    }
}
