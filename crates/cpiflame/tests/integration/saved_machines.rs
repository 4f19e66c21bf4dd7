//! `cpiflame list --root DIR` on the saved machines of `fixtures/roots/` (written from the
//! kernel's sources by `fixtures/roots/make-roots.py`, and one copy of this VM): what
//! `record` would choose on each, written out by hand from shared/EVENTS.md and the kernel's
//! tables. Nothing here needs a PMU: a saved root is read, never opened.

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
