//! Which top-down (TMA) group `record --topdown` would open on a machine, and why not where
//! none: a pure decision over the detected CPU and PMUs (a live machine or a saved root).
//!
//! - Intel with `events/slots` on the core PMU (`cpu_core` only on hybrid parts): `slots`
//!   first, the sampler (`cycles`) second, then the `topdown-*` metric events (level 2
//!   where the PMU lists `topdown-heavy-ops` .. `topdown-mem-bound`) and the general-purpose
//!   corrections the kernel's metrics use (`int_misc.uop_dropping`, Ice Lake's
//!   `int_misc.clears_count`). perf's read-sampler rule: with a `slots` leader and metric
//!   events, the second member samples (tools/perf/util/record.c `evsel__read_sampler`).
//! - Intel Skylake-class: cycles and the four raw events of `skl-metrics.json` (level 1).
//! - AMD Zen 4/5/6: `ls_not_halted_cyc` and the `de_no_dispatch_per_slot` events (level 1;
//!   `smt_contention` only where the NMI watchdog leaves the sixth counter free). Level 2
//!   (`--td-level 2`) adds two more leader-sampled groups, each led by its own cycles, which
//!   the kernel multiplexes with the first (11 events do not fit 6 counters).
//! - Arm cores whose PMU lists the `stall_slot*`/`op_*` events and has `caps/slots`.
//! - None elsewhere (Neoverse N1, Zen 1-3, E-cores only, no core PMU, unknown CPU), with the
//!   reason in one line.
//!
//! The formula set's name comes from [`cpiflame_profile::topdown::plan`] over the same
//! events, so `list` names the formulas the report will apply. Nothing here opens anything;
//! the encodings are checked against saved machines, not hardware.

use cpiflame_events::{Cpu, Pmus, Vendor};
use cpiflame_profile::topdown::{self as td, Machine as TdMachine};
use serde::Serialize;

/// What the decision reads about a machine besides its CPU and PMUs.
#[derive(Clone, Copy, Debug, Default)]
pub struct TopdownInput {
    /// Arm `caps/slots` of the core PMU (PMMIR_EL1.SLOTS).
    pub arm_slots: Option<u32>,
    /// Arm `CPU variant` (the `r` of `rNpM`; `/proc/cpuinfo`).
    pub arm_variant: u32,
    /// `/proc/sys/kernel/nmi_watchdog` is non-zero; `None` where it could not be read.
    pub nmi_watchdog: Option<bool>,
    /// `--td-level`: 2 asks for level 2 where it costs more groups (AMD) and refuses a core
    /// without it; 0 or 1: level 1, with level 2 where it comes in the same group (Intel).
    pub level: u8,
}

/// The top-down group to open: event specs in group order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopdownGroup {
    /// 1, or 2 where the level-2 events are in the group.
    pub level: u8,
    /// Event specs of the (first) group in group order (the leader first).
    pub events: Vec<String>,
    /// AMD level 2: the further leader-sampled groups, each led by its own cycles (the
    /// kernel multiplexes them with the first); empty otherwise.
    pub more_groups: Vec<Vec<String>>,
    /// The group's leader (`events[0]`).
    pub leader: String,
    /// The member whose overflow takes the samples: the leader, or the second member after a
    /// `slots` leader (perf's read-sampler rule).
    pub sampler: String,
    /// The formula set the report applies (`cpiflame_profile::topdown::FormulaSet::name`).
    pub formulas: String,
    /// What is approximate, what holds a counter, what to know.
    pub notes: Vec<String>,
}

impl TopdownGroup {
    /// The group(s) as one `-e` spec: `{a,b,...}:S[,{c,d,...}:S...]`.
    pub fn spec(&self) -> String {
        std::iter::once(&self.events)
            .chain(&self.more_groups)
            .map(|g| format!("{{{}}}:S", g.join(",")))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Index of the sampler in [`TopdownGroup::events`].
    pub fn sampler_index(&self) -> usize {
        usize::from(self.sampler != self.leader)
    }
}

/// Event spec and perf's name (the name `cpiflame_profile::topdown::tma_role_of` knows).
type Member = (String, &'static str);

/// `pmu/terms,name=NAME/`, the name quoted where it holds a comma (perf's name of a
/// metric's `event,cmask=N` event).
fn raw(pmu: &str, terms: &str, name: &'static str) -> Member {
    if name.contains(',') {
        (format!("{pmu}/{terms},name='{name}'/"), name)
    } else {
        (format!("{pmu}/{terms},name={name}/"), name)
    }
}

/// A member written with the encoding of its sysfs alias (the alias is what says the event
/// exists; the encoding is the kernel's table, so the spec reads the same everywhere).
fn member(pmu: &str, &(name, terms): &(&'static str, &str)) -> Member {
    raw(pmu, terms, name)
}

/// arch/x86/events/intel/core.c: `slots` and the PERF_METRICS aliases (TOPDOWN.md §2.1).
const INTEL_SLOTS: (&str, &str) = ("slots", "event=0x00,umask=0x4");
const INTEL_CYCLES: (&str, &str) = ("cycles", "event=0x3c,umask=0x0");
const INTEL_L1: [(&str, &str); 4] = [
    ("topdown-retiring", "event=0x00,umask=0x80"),
    ("topdown-bad-spec", "event=0x00,umask=0x81"),
    ("topdown-fe-bound", "event=0x00,umask=0x82"),
    ("topdown-be-bound", "event=0x00,umask=0x83"),
];
const INTEL_L2: [(&str, &str); 4] = [
    ("topdown-heavy-ops", "event=0x00,umask=0x84"),
    ("topdown-br-mispredict", "event=0x00,umask=0x85"),
    ("topdown-fetch-lat", "event=0x00,umask=0x86"),
    ("topdown-mem-bound", "event=0x00,umask=0x87"),
];
/// include/linux/perf/arm_pmuv3.h: the architected numbers.
const ARM_CYCLES: (&str, &str) = ("cpu_cycles", "event=0x11");
const ARM_BR_MIS_PRED: (&str, &str) = ("br_mis_pred", "event=0x10");
const ARM_SLOT_EVENTS: [(&str, &str); 5] = [
    ("stall_slot_frontend", "event=0x3e"),
    ("stall_slot_backend", "event=0x3d"),
    ("stall_slot", "event=0x3f"),
    ("op_retired", "event=0x3a"),
    ("op_spec", "event=0x3b"),
];

/// AMD level 2 (`amdzen{4,5,6}/pipeline.json`'s PipelineL2 events), as two leader-sampled
/// groups each led by its own cycles, so each fits the 5 counters the NMI watchdog leaves:
/// the front-end latency (`no_ops_from_frontend` with `cmask` = the width), microcode ops,
/// mispredicts and restarts; then the two `ex_no_retire` events. Encodings: the kernel's
/// JSON (TOPDOWN.md §4; Zen 6 `bp_fe_redir.resync` is Zen 5's 0x9f/0x01).
fn amd_level2(zen: u8) -> Vec<Vec<Member>> {
    let cycles = || raw("cpu", "event=0x76,umask=0x0", "ls_not_halted_cyc");
    let (cmask, restarts) = match zen {
        4 => (
            raw(
                "cpu",
                "event=0x1a0,umask=0x1,cmask=0x6",
                "de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6",
            ),
            raw("cpu", "event=0x96,umask=0x0", "resyncs_or_nc_redirects"),
        ),
        _ => (
            raw(
                "cpu",
                "event=0x1a0,umask=0x1,cmask=0x8",
                "de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x8",
            ),
            raw(
                "cpu",
                "event=0x9f,umask=0x1",
                if zen == 5 {
                    "bp_redirects.resync"
                } else {
                    "bp_fe_redir.resync"
                },
            ),
        ),
    };
    vec![
        vec![
            cycles(),
            cmask,
            raw("cpu", "event=0x1c2,umask=0x0", "ex_ret_ucode_ops"),
            raw("cpu", "event=0xc3,umask=0x0", "ex_ret_brn_misp"),
            restarts,
        ],
        vec![
            cycles(),
            raw(
                "cpu",
                "event=0xd6,umask=0xa2",
                "ex_no_retire.load_not_complete",
            ),
            raw("cpu", "event=0xd6,umask=0x2", "ex_no_retire.not_complete"),
        ],
    ]
}

fn watchdog_note(on: Option<bool>, holds: &str) -> String {
    match on {
        Some(true) => format!("the NMI watchdog is on (kernel.nmi_watchdog=1) and holds {holds}"),
        Some(false) => "the NMI watchdog is off: every counter is free".into(),
        None => {
            format!("kernel.nmi_watchdog could not be read: counted as on (it would hold {holds})")
        }
    }
}

/// The group `record --topdown` opens on this machine, or the one-line reason there is none.
pub fn decide(cpu: &Cpu, pmus: &Pmus, input: TopdownInput) -> Result<TopdownGroup, String> {
    let watchdog = input.nmi_watchdog.unwrap_or(true);
    let mut notes = Vec::new();
    let mut more: Vec<Vec<Member>> = Vec::new();
    let (members, sampler, td_cpu, level) = match &cpu.vendor {
        Vendor::Intel => {
            let td_cpu = td::Cpu::intel(cpu.family, cpu.model);
            let pmu = if pmus.has_cpu_core() {
                "cpu_core"
            } else if pmus.has_cpu() {
                "cpu"
            } else if pmus.is_hybrid_intel() {
                return Err("no top-down group: only E-core PMUs (no cpu_core), which have no slot events; use the stall or CPI graph".into());
            } else {
                return Err("no top-down group: no core PMU (cpu) under sysfs (a VM without a virtual PMU?); use cpu-clock".into());
            };
            if pmus.is_hybrid_intel() {
                notes.push(format!(
                    "hybrid: the group is on {pmu} (P-cores) only; E-cores have no PERF_METRICS, so time on them is not sampled"
                ));
            }
            if pmus.has_event(pmu, "slots") {
                let level2 = INTEL_L2.iter().all(|(e, _)| pmus.has_event(pmu, e));
                if input.level == 2 && !level2 {
                    return Err(format!("no top-down level 2: {pmu} lists no topdown-heavy-ops .. topdown-mem-bound (PERF_METRICS level 2 is Golden Cove and later); use --td-level 1"));
                }
                let mut m = vec![member(pmu, &INTEL_SLOTS), member(pmu, &INTEL_CYCLES)];
                m.extend(INTEL_L1.iter().map(|e| member(pmu, e)));
                if level2 {
                    m.extend(INTEL_L2.iter().map(|e| member(pmu, e)));
                }
                match td_cpu {
                    td::Cpu::IntelIceLake => {
                        m.push(raw(pmu, "event=0xd,umask=0x10", "int_misc.uop_dropping"));
                        m.push(raw(
                            pmu,
                            "event=0xd,umask=0x1,cmask=1,edge=1",
                            "int_misc.clears_count",
                        ));
                    }
                    td::Cpu::IntelGoldenCove => {
                        m.push(raw(pmu, "event=0xad,umask=0x10", "int_misc.uop_dropping"))
                    }
                    _ => {}
                }
                notes.push(format!(
                    "{}; the group fits (fixed counters, PERF_METRICS and at most 2 general-purpose counters)",
                    watchdog_note(input.nmi_watchdog, "one counter")
                ));
                (m, 1, td_cpu, if level2 { 2 } else { 1 })
            } else if td_cpu == td::Cpu::IntelSkylake && input.level == 2 {
                return Err("no top-down level 2: on Skylake-class cores it needs 9 more general-purpose events, more than one group; use --td-level 1".into());
            } else if td_cpu == td::Cpu::IntelSkylake {
                let m = vec![
                    raw(pmu, "event=0x3c,umask=0x0", "cpu_clk_unhalted.thread"),
                    raw(pmu, "event=0x9c,umask=0x1", "idq_uops_not_delivered.core"),
                    raw(pmu, "event=0xe,umask=0x1", "uops_issued.any"),
                    raw(pmu, "event=0xc2,umask=0x2", "uops_retired.retire_slots"),
                    raw(pmu, "event=0xd,umask=0x1", "int_misc.recovery_cycles"),
                ];
                notes.push(format!(
                    "{}; cycles plus 4 general-purpose events fit with SMT off (8 per thread), but with SMT on (4 per thread) only with the watchdog off (sysctl kernel.nmi_watchdog=0)",
                    watchdog_note(input.nmi_watchdog, "a counter")
                ));
                (m, 0, td_cpu, 1)
            } else {
                return Err(format!(
                    "no top-down group: {pmu} has no slots event (no PERF_METRICS) and the core is not Skylake-class; use the stall or CPI graph"
                ));
            }
        }
        Vendor::Amd => {
            let td_cpu = td::Cpu::amd(cpu.family, cpu.model);
            // amd.c's generations, not perf's mapfile (which calls every family 1Ah Zen 5).
            let zen = match cpiflame_events::cpu::amd_zen(cpu.family, cpu.model) {
                Some(z @ 4..=6) => z,
                Some(z @ 1..=3) => return Err(format!("no top-down group: Zen {z} has no de_no_dispatch_per_slot events; use the stall or CPI graph")),
                Some(z) => return Err(format!("no top-down group: no pipeline formulas for Zen {z} yet (perf's are for Zen 4 to 6); use the stall or CPI graph")),
                None => return Err(format!("no top-down group: AMD family {:#x} model {:#x} is not a known Zen 4, 5 or 6", cpu.family, cpu.model)),
            };
            if !pmus.has_cpu() {
                return Err("no top-down group: no core PMU (cpu) under sysfs (a VM without a virtual PMU?); use cpu-clock".into());
            }
            let mut m = vec![
                raw("cpu", "event=0x76,umask=0x0", "ls_not_halted_cyc"),
                raw(
                    "cpu",
                    "event=0x1a0,umask=0x1",
                    "de_no_dispatch_per_slot.no_ops_from_frontend",
                ),
                raw(
                    "cpu",
                    "event=0x1a0,umask=0x1e",
                    "de_no_dispatch_per_slot.backend_stalls",
                ),
                raw("cpu", "event=0xaa,umask=0x7", "de_src_op_disp.all"),
                raw("cpu", "event=0xc1,umask=0x0", "ex_ret_ops"),
            ];
            if watchdog {
                notes.push(format!(
                    "{}: 5 of the 6 core counters are left, so de_no_dispatch_per_slot.smt_contention is left out",
                    watchdog_note(input.nmi_watchdog, "one of the 6 core counters")
                ));
            } else {
                m.push(raw(
                    "cpu",
                    "event=0x1a0,umask=0x60",
                    "de_no_dispatch_per_slot.smt_contention",
                ));
                notes.push(format!(
                    "{}: the 6 events use all 6 core counters",
                    watchdog_note(input.nmi_watchdog, "")
                ));
            }
            if input.level == 2 {
                more = amd_level2(zen);
                notes.push(format!(
                    "level 2: {} more groups led by their own cycles; the kernel multiplexes the {} groups (each samples only while it is scheduled), and the report scales each group's counts to the first's time by the ratio of their cycles",
                    more.len(),
                    more.len() + 1
                ));
            } else {
                notes.push("level 2 needs 6 more events (11 in all), in 2 more multiplexed groups: --td-level 2".into());
            }
            (m, 0, td_cpu, if input.level == 2 { 2 } else { 1 })
        }
        Vendor::Arm { implementer, part } => {
            let midr = (u64::from(*implementer) << 24)
                | (u64::from(input.arm_variant & 0xf) << 20)
                | (0xf << 16)
                | (u64::from(*part & 0xfff) << 4)
                | u64::from(cpu.stepping & 0xf);
            let td_cpu = td::Cpu::arm(midr);
            if td_cpu == td::Cpu::ArmNeoverseN1 {
                return Err("no top-down group: Neoverse N1 has no STALL_SLOT events (only cycle-based STALL_FRONTEND/BACKEND); use the stall graph".into());
            }
            let Some(pmu) = pmus.arm_pmus().first().map(|p| p.name.clone()) else {
                return Err(
                    "no top-down group: no Arm PMUv3 core PMU (armv8_*/armv9_*) under sysfs".into(),
                );
            };
            if let Some((missing, _)) = ARM_SLOT_EVENTS
                .iter()
                .find(|(e, _)| !pmus.has_event(&pmu, e))
            {
                return Err(format!(
                    "no top-down group: {pmu} lists no {missing} event (no slot events on this core, or a KVM guest); use the stall graph"
                ));
            }
            if input.level == 2 {
                return Err(format!("no top-down level 2 on {pmu}: the Arm slot events give level 1 only; use --td-level 1"));
            }
            let mut m = vec![member(&pmu, &ARM_CYCLES)];
            m.extend(ARM_SLOT_EVENTS.iter().map(|e| member(&pmu, e)));
            if td_cpu == td::Cpu::ArmNeoverseV1 {
                m.push(member(&pmu, &ARM_BR_MIS_PRED));
            }
            if let td::Cpu::ArmNeoverseN2 {
                r0p3_or_later: false,
            } = td_cpu
            {
                notes.push("Neoverse N2 before r0p3: STALL_SLOT and STALL_SLOT_FRONTEND over-count one slot per cycle; the formulas take it off".into());
            }
            notes.push(format!(
                "{}; with it on the cycle counter CPU_CYCLES takes a general-purpose counter [unsure: the group may then not fit]",
                watchdog_note(input.nmi_watchdog, "the cycle counter")
            ));
            notes.push("cpiflame records on x86-64 only: record it with perf record -e '{...}:S' and read the file".into());
            (m, 0, td_cpu, 1)
        }
        Vendor::Other(v) => {
            return Err(format!(
                "no top-down group: CPU vendor {v:?} has no known top-down events"
            ))
        }
    };
    let names: Vec<&str> = members
        .iter()
        .chain(more.iter().flatten())
        .map(|(_, n)| *n)
        .collect();
    let machine = TdMachine {
        cpu: td_cpu,
        arm_slots: input.arm_slots,
        smt_on: None,
    };
    let plan = td::plan(&names, &machine).map_err(|e| format!("no top-down group: {e}"))?;
    notes.extend(plan.set.approximation().map(String::from));
    let events: Vec<String> = members.into_iter().map(|(s, _)| s).collect();
    let more_groups = more
        .into_iter()
        .map(|g| g.into_iter().map(|(s, _)| s).collect())
        .collect();
    Ok(TopdownGroup {
        level,
        more_groups,
        leader: events[0].clone(),
        sampler: events[sampler].clone(),
        formulas: plan.set.name(),
        events,
        notes,
    })
}

#[cfg(test)]
mod tests {
    //! Every member's attr type and config on the saved machines of `fixtures/roots/`, pinned
    //! to the kernel's tables: the sysfs aliases of arch/x86/events/intel/core.c (TOPDOWN.md
    //! §2.1), Intel's and AMD's event JSON (§3, §4), the Arm architected numbers (§5).

    use std::path::PathBuf;

    use cpiflame_events::{resolve_groups, Pmus};
    use cpiflame_profile::topdown as td;

    use super::TopdownInput;

    use crate::machine::Machine;

    fn root(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/roots")
            .join(name)
    }

    /// (type, config) of each member of the group on `name`, resolved from the one `{...}:S`
    /// spec `record --topdown` uses; the group must be leader-sampled.
    fn encodings(name: &str) -> Vec<(u32, u64)> {
        let m = Machine::saved(&root(name)).unwrap();
        let g = m.topdown().unwrap_or_else(|e| panic!("{name}: {e}"));
        let groups = resolve_groups(&g.spec(), &root(name).join("sys"))
            .unwrap_or_else(|e| panic!("{name}: {}: {e}", g.spec()));
        assert_eq!(groups.len(), 1, "{name}");
        assert!(groups[0].leader_sampling(), "{name}");
        groups[0]
            .events
            .iter()
            .map(|e| (e.type_, e.config))
            .collect()
    }

    /// (type, config) of each member of each group of `record --topdown --td-level 2`.
    fn level2_encodings(name: &str) -> Vec<Vec<(u32, u64)>> {
        let g = Machine::saved(&root(name)).unwrap().topdown_at(2).unwrap();
        assert_eq!(g.level, 2, "{name}");
        let groups = resolve_groups(&g.spec(), &root(name).join("sys"))
            .unwrap_or_else(|e| panic!("{name}: {}: {e}", g.spec()));
        groups
            .iter()
            .map(|group| {
                assert!(group.leader_sampling(), "{name}");
                group.events.iter().map(|e| (e.type_, e.config)).collect()
            })
            .collect()
    }

    fn why(name: &str) -> String {
        Machine::saved(&root(name)).unwrap().topdown().unwrap_err()
    }

    const INTEL_L1: [(u32, u64); 6] = [
        (4, 0x0400), // slots
        (4, 0x3c),   // cycles (fixed counter 1)
        (4, 0x8000), // topdown-retiring
        (4, 0x8100), // topdown-bad-spec
        (4, 0x8200), // topdown-fe-bound
        (4, 0x8300), // topdown-be-bound
    ];
    const INTEL_L2: [(u32, u64); 4] = [(4, 0x8400), (4, 0x8500), (4, 0x8600), (4, 0x8700)];

    #[test]
    fn ice_lake_level_1_with_the_icx_corrections() {
        let mut want = INTEL_L1.to_vec();
        // INT_MISC.UOP_DROPPING 0x0d/0x10; INT_MISC.CLEARS_COUNT 0x0d/0x01 cmask=1 edge.
        want.extend([(4, 0x100d), (4, 0x104010d)]);
        assert_eq!(encodings("icelake-x"), want);
        let g = Machine::saved(&root("icelake-x"))
            .unwrap()
            .topdown()
            .unwrap();
        assert_eq!((g.level, g.sampler_index()), (1, 1));
        assert_eq!(g.sampler, "cpu/event=0x3c,umask=0x0,name=cycles/");
    }

    #[test]
    fn sapphire_rapids_level_2() {
        let mut want = INTEL_L1.to_vec();
        want.extend(INTEL_L2);
        want.push((4, 0x10ad)); // INT_MISC.UOP_DROPPING on Golden Cove: 0xad/0x10
        assert_eq!(encodings("sapphire-rapids"), want);
    }

    #[test]
    fn hybrid_intel_uses_cpu_core_only() {
        let mut want = INTEL_L1.to_vec();
        want.extend(INTEL_L2);
        assert_eq!(encodings("arrow-lake-h"), want); // cpu_core's type is 4 in this root
        let g = Machine::saved(&root("arrow-lake-h"))
            .unwrap()
            .topdown()
            .unwrap();
        assert!(g.events.iter().all(|e| e.starts_with("cpu_core/")));
    }

    #[test]
    fn skylake_raw_events() {
        // cycles, IDQ_UOPS_NOT_DELIVERED.CORE, UOPS_ISSUED.ANY, UOPS_RETIRED.RETIRE_SLOTS,
        // INT_MISC.RECOVERY_CYCLES.
        let want = [(4, 0x3c), (4, 0x19c), (4, 0x10e), (4, 0x2c2), (4, 0x10d)];
        assert_eq!(encodings("skylake-x"), want);
        let g = Machine::saved(&root("skylake-x"))
            .unwrap()
            .topdown()
            .unwrap();
        assert_eq!(g.sampler_index(), 0);
        assert!(g.notes.iter().any(|n| n.contains("SMT on")));
    }

    #[test]
    fn zen_4_with_watchdog_and_zen_5_without() {
        let l1 = [
            (4, 0x76),
            (4, 0x1000001a0),
            (4, 0x100001ea0),
            (4, 0x7aa),
            (4, 0xc1),
        ];
        assert_eq!(encodings("zen4"), l1);
        let mut zen5 = l1.to_vec();
        zen5.push((4, 0x1000060a0)); // smt_contention: the watchdog is off there
        assert_eq!(encodings("zen5"), zen5);
    }

    /// Level 2 on Zen 4, 5 and 6: the level-1 group and two more, each led by its own
    /// cycles (0x76), each at most 5 events (what the NMI watchdog leaves of 6 counters).
    /// Encodings: amdzen{4,5,6} JSON as TOPDOWN.md §4 lists them (config 0-7 and 32-35 the
    /// event, 8-15 the umask, 24-31 the cmask); the plan reads them as 3 groups.
    #[test]
    fn amd_level_2_is_two_more_groups() {
        for (name, cmask, restarts, formulas) in [
            (
                "zen4",
                0x1060001a0,
                0x96,
                "AMD Zen 4 pipeline (6 slots per cycle)",
            ),
            (
                "zen5",
                0x1080001a0,
                0x19f,
                "AMD Zen 5 pipeline (8 slots per cycle)",
            ),
            (
                "zen6",
                0x1080001a0,
                0x19f,
                "AMD Zen 6 pipeline (8 slots per cycle)",
            ),
        ] {
            let groups = level2_encodings(name);
            assert_eq!(groups.len(), 3, "{name}");
            assert_eq!(
                groups[1],
                [
                    (4, 0x76),
                    (4, cmask),
                    (4, 0x1000000c2),
                    (4, 0xc3),
                    (4, restarts)
                ],
                "{name}"
            );
            assert_eq!(groups[2], [(4, 0x76), (4, 0xa2d6), (4, 0x2d6)], "{name}");
            assert!(groups.iter().all(|g| g.len() <= 6), "{name}");
            let m = Machine::saved(&root(name)).unwrap();
            let g = m.topdown_at(2).unwrap();
            assert_eq!(g.formulas, formulas);
            assert!(g.notes.iter().any(|n| n.contains("multiplexes")), "{g:?}");
            // The names the recording stores (EVENT_DESC) plan to level 2 from 3 groups.
            let names: Vec<String> = resolve_groups(&g.spec(), &root(name).join("sys"))
                .unwrap()
                .into_iter()
                .flat_map(|g| g.events)
                .map(|e| e.name)
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let td_cpu = td::Cpu::amd(m.cpu.family, m.cpu.model);
            let plan = td::plan(&names, &td::Machine::of(td_cpu)).unwrap();
            assert_eq!(plan.groups(), 3, "{name}");
            assert!(matches!(
                plan.set,
                td::FormulaSet::AmdZen { level2: true, .. }
            ));
            // Level 1 stays one group.
            assert!(m.topdown().unwrap().more_groups.is_empty());
        }
    }

    #[test]
    fn level_2_refused_in_one_line_where_the_core_has_none() {
        for (name, part) in [
            ("icelake-x", "no topdown-heavy-ops"),
            ("skylake-x", "Skylake-class"),
            ("neoverse-n2-r0p3", "level 1 only"),
        ] {
            let w = Machine::saved(&root(name))
                .unwrap()
                .topdown_at(2)
                .unwrap_err();
            assert!(w.contains(part) && !w.contains('\n'), "{name}: {w}");
        }
        // Intel with level-2 metrics: the one group already holds them.
        let g = Machine::saved(&root("sapphire-rapids"))
            .unwrap()
            .topdown_at(2)
            .unwrap();
        assert_eq!((g.level, g.more_groups.len()), (2, 0));
    }

    #[test]
    fn neoverse_n2_both_revisions() {
        let want = [
            (8, 0x11),
            (8, 0x3e),
            (8, 0x3d),
            (8, 0x3f),
            (8, 0x3a),
            (8, 0x3b),
        ];
        assert_eq!(encodings("neoverse-n2-dt"), want);
        assert_eq!(encodings("neoverse-n2-r0p3"), want);
        let f = |n: &str| {
            Machine::saved(&root(n))
                .unwrap()
                .topdown()
                .unwrap()
                .formulas
        };
        assert_eq!(f("neoverse-n2-dt"), "Arm Neoverse N2 before r0p3");
        assert_eq!(f("neoverse-n2-r0p3"), "Arm Neoverse N2/V2");
    }

    #[test]
    fn none_with_one_line_reasons() {
        for (name, part) in [
            ("neoverse-n1", "Neoverse N1"),
            ("zen3", "Zen 3"),
            ("zen2", "Zen 2"),
            ("vm-no-pmu", "no core PMU"),
            ("intel-family-18", "no slots event"),
            ("apple-m1", "no Arm PMUv3"),
            ("neoverse-v1", "lists no stall_slot_frontend"),
        ] {
            let w = why(name);
            assert!(w.contains(part) && !w.contains('\n'), "{name}: {w}");
        }
    }

    /// A hybrid Intel part whose only core PMU is the E-cores' (`cpu_atom`), and the same
    /// CPU with `cpu_core` but no `slots` alias: none, each with its one line.
    #[test]
    fn e_cores_only_is_none() {
        let cpu = cpiflame_events::parse_cpuinfo(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 151\nstepping\t: 2\nflags\t\t: hybrid_cpu\n",
        )
        .unwrap();
        let atom = Pmus::from_entries([("cpu_atom", Some("10"))]);
        let why = super::decide(&cpu, &atom, TopdownInput::default()).unwrap_err();
        assert!(why.contains("only E-core PMUs"), "{why}");
        let core = Pmus::from_entries([("cpu_core", Some("4")), ("cpu_atom", Some("10"))]);
        let why = super::decide(&cpu, &core, TopdownInput::default()).unwrap_err();
        assert!(why.contains("cpu_core has no slots event"), "{why}");
        let core = core.with_events("cpu_core", &["slots"]);
        let g = super::decide(&cpu, &core, TopdownInput::default()).unwrap();
        assert_eq!((g.level, g.events.len()), (1, 7), "{g:?}");
    }
}
