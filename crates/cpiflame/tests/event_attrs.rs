//! Every modifier and term of an event spec reaches the attr that is opened: for the same
//! `-e SPEC`, the perf_event_attr `cpiflame record` writes in its file header equals the one
//! `perf record` writes, in every field the spec decides (type, config, exclusions, precise
//! level, pinned/exclusive, the sample rate when the spec sets one, and the name). perf is
//! the oracle; both files are read back with cpiflame's reader.

mod support;

use std::path::Path;
use std::process::Command;

use cpiflame_perf_data::abi::attr_flags as bits;
use cpiflame_perf_data::{EventAttr, PerfData};
use support::{perf_available, Dir};

/// The bitfield bits a spec decides; FREQ only when the spec sets a rate.
const SPEC_BITS: u64 = bits::PINNED
    | bits::EXCLUSIVE
    | bits::EXCLUDE_USER
    | bits::EXCLUDE_KERNEL
    | bits::EXCLUDE_HV
    | bits::EXCLUDE_IDLE
    | bits::PRECISE_IP_MASK
    | bits::EXCLUDE_HOST
    | bits::EXCLUDE_GUEST;

/// The first event of a recording, as the file's header has it.
fn first_attr(path: &Path) -> EventAttr {
    let file = PerfData::open(path).unwrap_or_else(|e| panic!("{e}"));
    file.attrs[0].clone()
}

fn record_both(dir: &Dir, spec: &str) -> (EventAttr, EventAttr) {
    let perf_file = dir.path("perf.data");
    let ours_file = dir.path("cpiflame.data");
    let perf = Command::new("perf")
        .args(["record", "-q", "-e", spec, "-o"])
        .arg(&perf_file)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        perf.status.success(),
        "perf record -e {spec}: {}",
        String::from_utf8_lossy(&perf.stderr)
    );
    let ours = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "-e", spec, "-o"])
        .arg(&ours_file)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "cpiflame record -e {spec}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    (first_attr(&perf_file), first_attr(&ours_file))
}

#[test]
fn record_opens_what_perf_opens_for_each_modifier_and_term() {
    if !perf_available() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock`)");
        return;
    }
    let dir = Dir::new("event-attrs");
    // (spec, whether it sets the rate)
    let specs = [
        ("cpu-clock", false),
        ("cpu-clock:u", false),
        ("cpu-clock:k", false),
        ("cpu-clock:uk", false),
        ("cpu-clock:h", false),
        ("cpu-clock:H", false),
        ("cpu-clock:G", false),
        ("cpu-clock:p", false),
        ("cpu-clock:pp", false),
        ("cpu-clock:ppp", false),
        ("cpu-clock:upp", false),
        ("cpu-clock:D", false),
        ("cpu-clock:I", false),
        ("cpu-clock:e", false),
        ("task-clock:pp", false),
        ("cpu-clock/period=100000/", true),
        ("cpu-clock/freq=500/", true),
        ("cpu-clock/name=foo/", false),
        ("cpu-clock/period=200000,name=bar/u", true),
        ("software/config=1,period=300000/pp", true),
    ];
    let mut wrong = Vec::new();
    for (spec, sets_rate) in specs {
        let (perf, ours) = record_both(&dir, spec);
        let mask = if sets_rate {
            SPEC_BITS | bits::FREQ
        } else {
            SPEC_BITS
        };
        let fields = |a: &EventAttr| {
            (
                a.type_,
                a.config,
                a.flags & mask,
                sets_rate.then_some(a.sample_period_or_freq),
                a.name.clone(),
            )
        };
        if fields(&perf) != fields(&ours) {
            wrong.push(format!(
                "{spec}: perf (type, config, flags, rate, name) {:x?}, cpiflame {:x?}",
                fields(&perf),
                fields(&ours)
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// A term or modifier that cannot be honoured is refused with one line naming it, never
/// dropped and never shown in Rust's debug form.
#[test]
fn record_refuses_what_it_cannot_honour_naming_it() {
    let dir = Dir::new("event-attrs-refused");
    for (spec, named) in [
        ("cpu-clock:W", "W"),
        ("cpu-clock/call-graph=dwarf/", "call-graph"),
        ("nosuchpmu/event=1/", "nosuchpmu"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
            .args(["record", "-e", spec, "-o"])
            .arg(dir.path("refused.data"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{spec}: {stderr}");
        assert!(errors[0].contains(named), "{spec}: {stderr}");
        for debug in ["Some(", "None", "Os {"] {
            assert!(!stderr.contains(debug), "{spec}: {stderr}");
        }
    }
}
