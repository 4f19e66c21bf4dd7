//! Which events to record on a CPU, from the vendors' event tables and the kernel's (every
//! encoding pinned to the kernel's tables in a test): the (stall, cycles) pairs to try, in
//! order, and the cycles and instructions events for the CPI graph where no stall event is
//! known or opens. [`Presets::choose`] walks down from the stall pair to CPI, to cycles alone,
//! to cpu-clock.
//!
//! Every spec is a string [`crate::parse_event`] accepts, with a `name=` so recordings carry
//! readable event names that role detection recognises (`cycle_activity.stalls_total`,
//! `cpu_clk_unhalted.thread_p`, ...). Specs carry no `period=`: the recorder gives both
//! events of the pair the same period ([`DEFAULT_PERIOD`] unless told otherwise).
//!
//! Sources, row by row (see [`ROWS`]; every event is pinned to the kernel file it was read
//! from in the test `every_preset_event_is_pinned_to_the_kernel_tables`):
//! - Intel NHM/WSM: RESOURCE_STALLS.ANY 0xa2/0x01; the generic stalled-cycles-backend is
//!   mapped on these models (arch/x86/events/intel/core.c).
//! - Intel SNB: CYCLE_ACTIVITY.CYCLES_NO_DISPATCH 0xa3/0x04 cmask 4; generic mapped.
//! - Intel IVB/HSW/BDW: CYCLE_ACTIVITY.CYCLES_NO_EXECUTE, same encoding; the generic is not
//!   mapped from IVB on (core.c maps only the frontend event there).
//! - Intel SKL..CLX: CYCLE_ACTIVITY.STALLS_TOTAL, RESOURCE_STALLS.ANY,
//!   UOPS_RETIRED.STALL_CYCLES 0xc2/0x02 c1 i1.
//! - Intel ICL.., SPR.., hybrid P-cores (`cpu_core`; Panther Lake 6-CC and Wildcat Lake 6-D5
//!   included): CYCLE_ACTIVITY.STALLS_TOTAL. E-core-only parts and Intel families 18 and 19
//!   (not in the kernel's tables yet; family 6's encodings are not assumed there): CPI.
//! - AMD: generations by the kernel's arch/x86/kernel/cpu/amd.c ([`crate::cpu::amd_zen`]).
//!   Zen1: the kernel's stalled-cycles-backend 0x187, then the generic itself; Zen2/Zen3: no
//!   reliable stall event, CPI; Zen4/Zen5: ex_no_retire.all 0xd6/0x1b (with the caveat of
//!   [`EX_NO_RETIRE_ALL_CAVEAT`]); Zen6: its table has no `.all`, CPI. Families before 17h:
//!   the generic, mapped to 0xd1 "Dispatch stalls" by amd/core.c.
//! - ARM64: STALL 0x3c on Neoverse V1/N2/V2/V3/N3, STALL_BACKEND 0x24 elsewhere, each only
//!   where the PMU shows the alias (`events/stall`, `events/stall_backend`): the kernel shows
//!   one for each event the core's PMCEID says it implements, and a raw event the core lacks
//!   opens and counts zero. No generic fallback on ARM: arm_pmuv3.c maps it to 0x24 without
//!   that check. Apple: CPI. Part numbers from cputype.h.
//! - Cycles: CPU_CLK_UNHALTED.THREAD_P 0x3c, ls_not_halted_cyc 0x76, CPU_CYCLES 0x11.
//!   Instructions: INST_RETIRED.ANY_P 0xc0, ex_ret_instr 0xc0, INST_RETIRED 0x08.

use crate::cpu::{amd_zen, Cpu, Vendor, ARM_IMPLEMENTER_APPLE, ARM_IMPLEMENTER_ARM};
use crate::pmu::Pmus;

/// The period both events of a pair sample with unless told otherwise.
pub const DEFAULT_PERIOD: u64 = 2_000_003;

/// The generic backend-stall event, by perf's name.
pub const GENERIC_STALLS: &str = "stalled-cycles-backend";

/// How a preset event is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    X86 {
        event: u16,
        umask: u8,
        cmask: u8,
        inv: bool,
    },
    /// ARM PMUv3 event number.
    Arm { event: u16 },
}

/// One event of the preset tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PresetEvent {
    /// As the vendor's event list spells it (`CYCLE_ACTIVITY.STALLS_TOTAL`, `ex_no_retire.all`).
    pub title: &'static str,
    /// The `name=` given to perf: lower case, role detection recognises it.
    pub name: &'static str,
    pub encoding: Encoding,
    /// The raw config as the vendor's event table gives it (checked against the encoding in tests).
    pub raw: u64,
}

impl PresetEvent {
    /// The spec on `pmu`: `cpu/event=0xa3,umask=0x4,cmask=4,name=cycle_activity.stalls_total/`.
    pub fn spec(&self, pmu: &str) -> String {
        match self.encoding {
            Encoding::X86 {
                event,
                umask,
                cmask,
                inv,
            } => {
                let mut s = format!("{pmu}/event={event:#x},umask={umask:#x}");
                if cmask != 0 {
                    s += &format!(",cmask={cmask}");
                }
                if inv {
                    s += ",inv";
                }
                s + &format!(",name={}/", self.name)
            }
            Encoding::Arm { event } => format!("{pmu}/event={event:#x},name={}/", self.name),
        }
    }
}

const fn x86(
    title: &'static str,
    name: &'static str,
    event: u16,
    umask: u8,
    raw: u64,
) -> PresetEvent {
    PresetEvent {
        title,
        name,
        encoding: Encoding::X86 {
            event,
            umask,
            cmask: 0,
            inv: false,
        },
        raw,
    }
}

const fn x86_c(
    title: &'static str,
    name: &'static str,
    event: u16,
    umask: u8,
    cmask: u8,
    inv: bool,
    raw: u64,
) -> PresetEvent {
    PresetEvent {
        title,
        name,
        encoding: Encoding::X86 {
            event,
            umask,
            cmask,
            inv,
        },
        raw,
    }
}

const fn arm(title: &'static str, name: &'static str, event: u16, raw: u64) -> PresetEvent {
    PresetEvent {
        title,
        name,
        encoding: Encoding::Arm { event },
        raw,
    }
}

pub const RESOURCE_STALLS_ANY: PresetEvent = x86(
    "RESOURCE_STALLS.ANY",
    "resource_stalls.any",
    0xa2,
    0x01,
    0x1a2,
);
pub const CYCLES_NO_DISPATCH: PresetEvent = x86_c(
    "CYCLE_ACTIVITY.CYCLES_NO_DISPATCH",
    "cycle_activity.cycles_no_dispatch",
    0xa3,
    0x04,
    4,
    false,
    0x0400_04a3,
);
pub const CYCLES_NO_EXECUTE: PresetEvent = x86_c(
    "CYCLE_ACTIVITY.CYCLES_NO_EXECUTE",
    "cycle_activity.cycles_no_execute",
    0xa3,
    0x04,
    4,
    false,
    0x0400_04a3,
);
pub const STALLS_TOTAL: PresetEvent = x86_c(
    "CYCLE_ACTIVITY.STALLS_TOTAL",
    "cycle_activity.stalls_total",
    0xa3,
    0x04,
    4,
    false,
    0x0400_04a3,
);
pub const UOPS_RETIRED_STALL_CYCLES: PresetEvent = x86_c(
    "UOPS_RETIRED.STALL_CYCLES",
    "uops_retired.stall_cycles",
    0xc2,
    0x02,
    1,
    true,
    0x0180_02c2,
);
pub const IC_STALL_BACK_PRESSURE: PresetEvent = x86(
    "ic_fetch_stall.ic_stall_back_pressure",
    "ic_fetch_stall.ic_stall_back_pressure",
    0x87,
    0x01,
    0x187,
);
pub const EX_NO_RETIRE_ALL: PresetEvent =
    x86("ex_no_retire.all", "ex_no_retire.all", 0xd6, 0x1b, 0x1bd6);
pub const ARM_STALL: PresetEvent = arm("STALL", "stall", 0x3c, 0x3c);
pub const ARM_STALL_BACKEND: PresetEvent = arm("STALL_BACKEND", "stall_backend", 0x24, 0x24);

pub const INTEL_CYCLES: PresetEvent = x86(
    "CPU_CLK_UNHALTED.THREAD_P",
    "cpu_clk_unhalted.thread_p",
    0x3c,
    0x00,
    0x3c,
);
pub const AMD_CYCLES: PresetEvent = x86("ls_not_halted_cyc", "ls_not_halted_cyc", 0x76, 0x00, 0x76);
pub const ARM_CYCLES: PresetEvent = arm("CPU_CYCLES", "cpu_cycles", 0x11, 0x11);

pub const INTEL_INSTRUCTIONS: PresetEvent =
    x86("INST_RETIRED.ANY_P", "inst_retired.any_p", 0xc0, 0x00, 0xc0);
pub const AMD_INSTRUCTIONS: PresetEvent = x86("ex_ret_instr", "ex_ret_instr", 0xc0, 0x00, 0xc0);
pub const ARM_INSTRUCTIONS: PresetEvent = arm("INST_RETIRED", "inst_retired", 0x08, 0x08);

/// A stall-event candidate of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    Event(PresetEvent),
    /// The kernel's PERF_COUNT_HW_STALLED_CYCLES_BACKEND, where it maps it to something.
    Generic,
}

/// Which CPUs a row is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuMatch {
    /// Intel family 6, these models.
    IntelModels(&'static [u32]),
    /// Intel, these families (any model).
    IntelFamilies(&'static [u32]),
    /// AMD families before 17h.
    AmdBeforeZen,
    /// AMD Zen generation.
    AmdZen(u8),
    /// ARM Ltd cores with these part numbers (all cores, on big.LITTLE).
    ArmParts(&'static [u32]),
    Apple,
    /// Any other ARM64 core.
    ArmOther,
    /// Not Intel, AMD or ARM.
    OtherVendor,
}

/// One row of the table: stall candidates in order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub label: &'static str,
    pub cpus: CpuMatch,
    pub stalls: &'static [Stall],
    /// Why the row exists when its stall list is empty, or a caveat.
    pub note: Option<&'static str>,
}

/// Hybrid Intel parts whose P-cores (`cpu_core`) have CYCLE_ACTIVITY.STALLS_TOTAL: Alder
/// Lake 97/9A, Raptor Lake B7/BA/BF, Meteor Lake AA/AC, Arrow Lake C5/C6/B5, Lunar Lake BD,
/// Panther Lake CC and Wildcat Lake D5 (perf's mapfile.csv maps PTL and WCL to the
/// pantherlake tables; the kernel's core.c gives WCL Panther Lake's PMU).
pub const INTEL_HYBRID_MODELS: &[u32] = &[
    0x97, 0x9a, 0xb7, 0xba, 0xbf, 0xaa, 0xac, 0xc5, 0xc6, 0xb5, 0xbd, 0xcc, 0xd5,
];

/// Intel parts with E-cores only (`cpu` is a Gracemont/Crestmont/Skymont PMU): Alder Lake-N,
/// Sierra Forest, Grand Ridge (intel-family.h).
pub const INTEL_ECORE_MODELS: &[u32] = &[0xbe, 0xaf, 0xb6];

const ZEN2_ZEN3_NOTE: &str = "AMD Zen2/Zen3 have no reliable stall-cycles event \
     (de_dis_dispatch_token_stalls 0xae/0xaf count per reason; the generic \
     stalled-cycles-backend is unmapped since kernel commit c7b2edd, and wrong before): CPI \
     from cycles and instructions is the honest colour here";

/// What ex_no_retire.all counts, for `list` and the graph's subtitle.
pub const EX_NO_RETIRE_ALL_CAVEAT: &str = "ex_no_retire.all counts every cycle that retires \
     nothing, for any reason: back-end stalls, but also cycles the SMT sibling retired in \
     (thread_not_selected) and cycles with an empty retire queue (a front-end starved core)";

/// The preset table, first match wins.
pub static ROWS: &[Row] = &[
    Row {
        label: "Intel NHM/WSM",
        cpus: CpuMatch::IntelModels(&[0x1a, 0x1e, 0x1f, 0x2e, 0x25, 0x2c, 0x2f]),
        stalls: &[Stall::Event(RESOURCE_STALLS_ANY), Stall::Generic],
        note: None,
    },
    Row {
        label: "Intel SNB",
        cpus: CpuMatch::IntelModels(&[0x2a, 0x2d]),
        stalls: &[
            Stall::Event(CYCLES_NO_DISPATCH),
            Stall::Event(RESOURCE_STALLS_ANY),
            Stall::Generic,
        ],
        note: None,
    },
    Row {
        label: "Intel IVB/HSW/BDW",
        cpus: CpuMatch::IntelModels(&[0x3a, 0x3e, 0x3c, 0x45, 0x46, 0x3f, 0x3d, 0x47, 0x4f, 0x56]),
        stalls: &[
            Stall::Event(CYCLES_NO_EXECUTE),
            Stall::Event(RESOURCE_STALLS_ANY),
        ],
        note: None,
    },
    Row {
        label: "Intel SKL/KBL/CML/SKX/CLX",
        cpus: CpuMatch::IntelModels(&[0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6, 0x55]),
        stalls: &[
            Stall::Event(STALLS_TOTAL),
            Stall::Event(RESOURCE_STALLS_ANY),
            Stall::Event(UOPS_RETIRED_STALL_CYCLES),
        ],
        note: None,
    },
    Row {
        label: "Intel ICL/ICX/TGL/RKL",
        cpus: CpuMatch::IntelModels(&[0x7d, 0x7e, 0x6a, 0x6c, 0x8c, 0x8d, 0xa7]),
        stalls: &[Stall::Event(STALLS_TOTAL)],
        note: None,
    },
    Row {
        label: "Intel SPR/EMR/GNR",
        cpus: CpuMatch::IntelModels(&[0x8f, 0xcf, 0xad, 0xae]),
        stalls: &[Stall::Event(STALLS_TOTAL)],
        note: None,
    },
    Row {
        label: "Intel ADL/RPL/MTL/ARL/LNL/PTL/WCL P-cores",
        cpus: CpuMatch::IntelModels(INTEL_HYBRID_MODELS),
        stalls: &[Stall::Event(STALLS_TOTAL)],
        note: Some(
            "E-cores (cpu_atom, and cpu_lowpower on Arrow Lake-H) have no stall event counted \
             in cycles (TOPDOWN_BE_BOUND.ALL counts slots)",
        ),
    },
    Row {
        label: "Intel E-cores only",
        cpus: CpuMatch::IntelModels(INTEL_ECORE_MODELS),
        stalls: &[],
        note: Some(
            "Intel E-cores (Gracemont, Crestmont, Skymont) have no stall event counted in \
             cycles (TOPDOWN_BE_BOUND.ALL counts slots): CPI from cycles and instructions",
        ),
    },
    Row {
        label: "Intel family 18/19",
        cpus: CpuMatch::IntelFamilies(&[18, 19]),
        stalls: &[],
        note: Some(
            "Intel family 18 (Nova Lake) and 19 (Diamond Rapids) are not in the kernel's event \
             tables yet, and family 6's encodings are not assumed there: CPI from the \
             architectural cycles and instructions events",
        ),
    },
    Row {
        label: "AMD before Zen",
        cpus: CpuMatch::AmdBeforeZen,
        stalls: &[Stall::Generic],
        note: None,
    },
    Row {
        label: "AMD Zen1",
        cpus: CpuMatch::AmdZen(1),
        stalls: &[Stall::Event(IC_STALL_BACK_PRESSURE), Stall::Generic],
        note: None,
    },
    Row {
        label: "AMD Zen2",
        cpus: CpuMatch::AmdZen(2),
        stalls: &[],
        note: Some(ZEN2_ZEN3_NOTE),
    },
    Row {
        label: "AMD Zen3",
        cpus: CpuMatch::AmdZen(3),
        stalls: &[],
        note: Some(ZEN2_ZEN3_NOTE),
    },
    Row {
        label: "AMD Zen4",
        cpus: CpuMatch::AmdZen(4),
        stalls: &[Stall::Event(EX_NO_RETIRE_ALL)],
        note: Some(EX_NO_RETIRE_ALL_CAVEAT),
    },
    Row {
        label: "AMD Zen5",
        cpus: CpuMatch::AmdZen(5),
        stalls: &[Stall::Event(EX_NO_RETIRE_ALL)],
        note: Some(EX_NO_RETIRE_ALL_CAVEAT),
    },
    Row {
        label: "AMD Zen6",
        cpus: CpuMatch::AmdZen(6),
        stalls: &[],
        note: Some(
            "AMD Zen6: the kernel's amdzen6 table has no ex_no_retire.all (no `.all` umask), \
             and no other stall-cycles event is known: CPI from cycles and instructions",
        ),
    },
    Row {
        label: "ARM64 Neoverse V1/N2/V2/V3/N3",
        cpus: CpuMatch::ArmParts(&[0xd40, 0xd49, 0xd4f, 0xd84, 0xd8e]),
        stalls: &[Stall::Event(ARM_STALL), Stall::Event(ARM_STALL_BACKEND)],
        note: None,
    },
    Row {
        label: "Apple M-series",
        cpus: CpuMatch::Apple,
        stalls: &[],
        note: Some(
            "Apple M-series under Linux count only cycles, instructions and branches: CPI \
             from cycles and instructions",
        ),
    },
    Row {
        label: "ARM64",
        cpus: CpuMatch::ArmOther,
        stalls: &[Stall::Event(ARM_STALL_BACKEND)],
        note: None,
    },
    Row {
        label: "unknown CPU",
        cpus: CpuMatch::OtherVendor,
        stalls: &[Stall::Generic],
        note: Some("no stall event known for this CPU: trying the kernel's generic one"),
    },
];

impl CpuMatch {
    pub fn matches(&self, cpu: &Cpu) -> bool {
        match (*self, &cpu.vendor) {
            (CpuMatch::IntelModels(models), Vendor::Intel) => {
                cpu.family == 6 && models.contains(&cpu.model)
            }
            (CpuMatch::IntelFamilies(families), Vendor::Intel) => families.contains(&cpu.family),
            (CpuMatch::AmdBeforeZen, Vendor::Amd) => cpu.family < 0x17,
            (CpuMatch::AmdZen(z), Vendor::Amd) => amd_zen(cpu.family, cpu.model) == Some(z),
            (CpuMatch::ArmParts(parts), Vendor::Arm { .. }) => arm_parts(cpu)
                .all(|(imp, part)| imp == ARM_IMPLEMENTER_ARM && parts.contains(&part)),
            (CpuMatch::Apple, Vendor::Arm { .. }) => {
                arm_parts(cpu).any(|(imp, _)| imp == ARM_IMPLEMENTER_APPLE)
            }
            (CpuMatch::ArmOther, Vendor::Arm { .. }) => true,
            (CpuMatch::OtherVendor, Vendor::Other(_)) => true,
            _ => false,
        }
    }
}

/// Every (implementer, part) of an ARM CPU, the vendor's at least.
fn arm_parts(cpu: &Cpu) -> impl Iterator<Item = (u32, u32)> + '_ {
    let first = match cpu.vendor {
        Vendor::Arm { implementer, part } if cpu.arm_parts.is_empty() => Some((implementer, part)),
        _ => None,
    };
    first.into_iter().chain(cpu.arm_parts.iter().copied())
}

/// The table row for `cpu`.
pub fn row_for(cpu: &Cpu) -> Option<&'static Row> {
    ROWS.iter().find(|r| r.cpus.matches(cpu))
}

/// A (stall, cycles) pair to try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub stalls: String,
    pub cycles: String,
    /// One line: `Intel SKL/KBL/CML/SKX/CLX: CYCLE_ACTIVITY.STALLS_TOTAL`.
    pub reason: String,
}

/// What to record on a CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Presets {
    /// The table row used, if any.
    pub row: Option<&'static str>,
    /// The PMU the specs name (`cpu`, `cpu_core`, `armv8_pmuv3_0`), if any.
    pub pmu: Option<String>,
    /// Pairs in order of preference; empty when no stall event is known.
    pub candidates: Vec<Candidate>,
    /// The cycles spec alone (every candidate uses it), for recording without stalls.
    pub cycles: String,
    /// Retired instructions, on the same PMU as the pair: `--with-instructions`, and the
    /// CPI graph where no stall event is known or opens.
    pub instructions: String,
    /// Caveats, one line each.
    pub notes: Vec<String>,
    /// Why there are no stall candidates (the row's note, an unknown model, an ARM core
    /// without the alias), for the line that says why CPI was chosen.
    pub no_stalls: Option<String>,
}

/// The candidates for `cpu`, on the PMUs present in `pmus`.
pub fn presets(cpu: &Cpu, pmus: &Pmus) -> Presets {
    let mut notes = Vec::new();
    let pmu = choose_pmu(cpu, pmus, &mut notes);
    let (cycles_event, instructions_event) = match (&cpu.vendor, pmu.is_some()) {
        // CPU_CLK_UNHALTED.THREAD_P and INST_RETIRED.ANY_P are architectural events (CPUID
        // leaf 0xA), the same on every family with architectural perfmon.
        (Vendor::Intel, true) if matches!(cpu.family, 6 | 18 | 19) => {
            (Some(INTEL_CYCLES), Some(INTEL_INSTRUCTIONS))
        }
        (Vendor::Amd, true) => (Some(AMD_CYCLES), Some(AMD_INSTRUCTIONS)),
        (Vendor::Arm { .. }, true) => (Some(ARM_CYCLES), Some(ARM_INSTRUCTIONS)),
        _ => (None, None),
    };
    let on = |e: Option<PresetEvent>, generic: &str| match (e, &pmu) {
        (Some(e), Some(p)) => e.spec(p),
        (None, Some(p)) if p.starts_with("cpu_") => format!("{p}/{generic}/"),
        _ => generic.to_string(),
    };
    let cycles = on(cycles_event, "cycles");
    let instructions = on(instructions_event, "instructions");

    let row = row_for(cpu);
    let mut candidates = Vec::new();
    let mut no_stalls = None;
    match row {
        Some(row) => {
            let label = match (&pmu, row.cpus) {
                (Some(p), CpuMatch::IntelModels(m)) if m == INTEL_HYBRID_MODELS => {
                    format!("{} ({p})", row.label)
                }
                _ => row.label.to_string(),
            };
            let mut missing_aliases = Vec::new();
            for stall in row.stalls {
                let fallback = if candidates.is_empty() {
                    ""
                } else {
                    " (fallback)"
                };
                let (spec, what) = match (stall, &pmu) {
                    (Stall::Event(e), Some(p)) => {
                        // A raw ARM event the core does not implement opens and counts
                        // zero: offered only where the kernel shows its alias.
                        if matches!(e.encoding, Encoding::Arm { .. }) && !pmus.has_event(p, e.name)
                        {
                            missing_aliases.push(format!(
                                "{} ({:#x}): {p} has no events/{} alias, so the core does not implement it",
                                e.title, e.raw, e.name
                            ));
                            continue;
                        }
                        (e.spec(p), e.title.to_string())
                    }
                    (Stall::Event(_), None) => continue,
                    (Stall::Generic, _) => (
                        GENERIC_STALLS.to_string(),
                        "generic stalled-cycles-backend (as the kernel maps it)".to_string(),
                    ),
                };
                candidates.push(Candidate {
                    stalls: spec,
                    cycles: cycles.clone(),
                    reason: format!("{label}: {what}{fallback}"),
                });
            }
            if let Some(note) = row.note {
                notes.push(note.to_string());
            }
            for m in &missing_aliases {
                notes.push(format!("not offered: {m}"));
            }
            if candidates.is_empty() {
                no_stalls = Some(match (row.note, missing_aliases.is_empty()) {
                    (_, false) => format!(
                        "{label}: no stall event this core implements ({})",
                        missing_aliases.join("; ")
                    ),
                    (Some(note), true) => note.to_string(),
                    (None, true) => format!("{label}: no stall-cycles event known"),
                });
            }
        }
        None => {
            let line = format!(
                "{cpu}: no stall-cycles event known for this model in the presets table; pass --stalls"
            );
            notes.push(line.clone());
            no_stalls = Some(line);
        }
    }
    Presets {
        row: row.map(|r| r.label),
        pmu,
        candidates,
        cycles,
        instructions,
        notes,
        no_stalls,
    }
}

/// What a recording colours by, from best to least: a stall share, CPI, nothing (cycles
/// alone), or nothing and no cycles either (cpu-clock time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A stall event and cycles: the stall share.
    Stalls,
    /// Cycles and instructions: CPI.
    Cpi,
    /// Cycles alone: widths, no colour.
    Cycles,
    /// cpu-clock: time, no hardware counter.
    CpuClock,
}

impl Mode {
    /// As `list --json` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Stalls => "stalls",
            Mode::Cpi => "cpi",
            Mode::Cycles => "cycles",
            Mode::CpuClock => "cpu-clock",
        }
    }
}

/// What `record` (and `stat`, `list`) records on a machine, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub mode: Mode,
    /// The specs to open, as `list` spells them: `[stalls, cycles, instructions?]`,
    /// `[cycles, instructions]`, `[cycles]` or `[cpu-clock]`.
    pub events: Vec<String>,
    /// The PMU the hardware events are on (`None` for cpu-clock).
    pub pmu: Option<String>,
    /// One line: what is recorded and why.
    pub why: String,
    /// What was tried before and did not open, one line each.
    pub refused: Vec<String>,
}

impl Choice {
    /// Index of the cycles event in [`Choice::events`], when there is one.
    pub fn cycles_index(&self) -> Option<usize> {
        match self.mode {
            Mode::Stalls => Some(1),
            Mode::Cpi | Mode::Cycles => Some(0),
            Mode::CpuClock => None,
        }
    }
}

impl Presets {
    /// Walks down the modes: the first stall pair that opens (with instructions when
    /// `with_instructions`, else without them), then cycles and instructions (CPI), then
    /// cycles alone, then cpu-clock. `opens` says whether a list of specs opens as one
    /// group (`Err`: why not, one line); `cpu` is for the lines. "No PMU" is said only when
    /// the machine has no core PMU: a PMU whose events do not open is named with its error.
    pub fn choose(
        &self,
        cpu: &Cpu,
        pmus: &Pmus,
        with_instructions: bool,
        opens: &mut dyn FnMut(&[String]) -> Result<(), String>,
    ) -> Choice {
        let mut refused = Vec::new();
        for c in &self.candidates {
            let pair = vec![c.stalls.clone(), c.cycles.clone()];
            let mut with = pair.clone();
            with.push(self.instructions.clone());
            // With instructions when asked, else (or when they do not fit) the pair alone.
            let tries = if with_instructions {
                vec![(with, " with instructions"), (pair, "")]
            } else {
                vec![(pair, "")]
            };
            for (events, what) in tries {
                match opens(&events) {
                    Ok(()) => {
                        let why = format!("{} on {cpu}", c.reason);
                        return self.chosen(Mode::Stalls, events, why, refused);
                    }
                    Err(e) => refused.push(format!("{}{what}: {e}", c.reason)),
                }
            }
        }
        let why_no_stalls = match &self.no_stalls {
            Some(why) => why.clone(),
            None => "no stall event opens here".to_string(),
        };
        let cpi = vec![self.cycles.clone(), self.instructions.clone()];
        match opens(&cpi) {
            Ok(()) => {
                let why =
                    format!("cycles and instructions on {cpu}, coloured by CPI ({why_no_stalls})");
                return self.chosen(Mode::Cpi, cpi, why, refused);
            }
            Err(e) => refused.push(format!("cycles and instructions: {e}")),
        }
        let cycles = vec![self.cycles.clone()];
        match opens(&cycles) {
            Ok(()) => {
                let why = format!(
                    "cycles alone on {cpu}: instructions do not open with them, so the graph has no colours ({why_no_stalls})"
                );
                return self.chosen(Mode::Cycles, cycles, why, refused);
            }
            Err(e) => refused.push(format!("cycles: {e}")),
        }
        let why = if has_hardware_pmu(cpu, pmus) {
            format!(
                "cpu-clock alone: this machine has a PMU, but its cycles event does not open ({}); the graph shows time without colours",
                refused.last().map_or("", String::as_str)
            )
        } else {
            "cpu-clock alone: no hardware PMU here (as in most VMs); the graph shows time without colours"
                .to_string()
        };
        Choice {
            mode: Mode::CpuClock,
            events: vec!["cpu-clock".to_string()],
            pmu: None,
            why,
            refused,
        }
    }

    fn chosen(&self, mode: Mode, events: Vec<String>, why: String, refused: Vec<String>) -> Choice {
        Choice {
            mode,
            events,
            pmu: self.pmu.clone(),
            why,
            refused,
        }
    }
}

/// Whether the machine has a PMU that counts its cores' events: `cpu`, `cpu_core`,
/// `cpu_atom`, an `armv8_*`/`armv9_*` PMU, Apple's; on other vendors any PMU besides the
/// kernel's software ones.
pub fn has_hardware_pmu(cpu: &Cpu, pmus: &Pmus) -> bool {
    if pmus.core_pmu().is_some() || pmus.is_hybrid_intel() {
        return true;
    }
    match cpu.vendor {
        Vendor::Arm { .. } => pmus.list().iter().any(|p| p.name.starts_with("apple_")),
        Vendor::Other(_) => pmus.list().iter().any(|p| {
            !matches!(
                p.name.as_str(),
                "software" | "tracepoint" | "breakpoint" | "kprobe" | "uprobe" | "msr"
            )
        }),
        _ => false,
    }
}

/// The stall legend's caption for a stall event that is not plain back-end stall cycles, by
/// its name (see [`stall_event_caveat`]).
pub fn stall_event_legend(name: &str) -> Option<&'static str> {
    let base = name.split(':').next().unwrap_or(name).to_ascii_lowercase();
    match base.as_str() {
        "ex_no_retire.all" => Some("cycles retiring nothing:"),
        "stall" => Some("STALL cycles (front + back end):"),
        "stall_backend" => Some("STALL_BACKEND cycles:"),
        _ => None,
    }
}

/// What the stall event of a recording counts, by its name, for the graph's subtitle: the
/// events whose meaning is not plain back-end stall cycles.
pub fn stall_event_caveat(name: &str) -> Option<&'static str> {
    let base = name.split(':').next().unwrap_or(name).to_ascii_lowercase();
    match base.as_str() {
        "ex_no_retire.all" => Some(
            "colour: ex_no_retire.all, cycles retiring nothing for any reason (SMT sibling's turn and empty retire queue included)",
        ),
        "stall" => Some("colour: STALL, stall cycles of the front end and the back end together"),
        "stall_backend" => Some("colour: STALL_BACKEND, back-end stall cycles only"),
        _ => None,
    }
}

/// The PMU to name: `cpu_core` on hybrid Intel, `cpu` on x86, the ARM core PMU.
fn choose_pmu(cpu: &Cpu, pmus: &Pmus, notes: &mut Vec<String>) -> Option<String> {
    let missing = |notes: &mut Vec<String>, pmu: &str| {
        notes.push(format!(
            "no '{pmu}' PMU under /sys/bus/event_source/devices: hardware events will fail \
             (a VM without a virtual PMU?)"
        ))
    };
    match &cpu.vendor {
        Vendor::Intel => {
            let hybrid = pmus.has_cpu_core() || (cpu.hybrid && !pmus.has_cpu());
            let pmu = if hybrid { "cpu_core" } else { "cpu" };
            if !pmus.has(pmu) {
                missing(notes, pmu);
            }
            // Arrow Lake-H has a third core PMU, `cpu_lowpower` (its LP E-cores).
            let others: Vec<&str> = ["cpu_atom", "cpu_lowpower"]
                .into_iter()
                .filter(|o| hybrid && pmus.has(o))
                .collect();
            if !others.is_empty() {
                notes.push(format!(
                    "hybrid: events are opened on cpu_core, so threads are sampled only while on P-cores ({} not used)",
                    others.join(", ")
                ));
            }
            Some(pmu.to_string())
        }
        Vendor::Amd => {
            if !pmus.has_cpu() {
                missing(notes, "cpu");
            }
            Some("cpu".to_string())
        }
        Vendor::Arm { implementer, .. } if *implementer != ARM_IMPLEMENTER_APPLE => {
            let arm = pmus.arm_pmus();
            match arm.as_slice() {
                [] => {
                    missing(notes, "armv8_*");
                    Some("armv8_pmuv3_0".to_string())
                }
                [one] => Some(one.name.clone()),
                [first, rest @ ..] => {
                    let others: Vec<&str> = rest.iter().map(|p| p.name.as_str()).collect();
                    notes.push(format!(
                        "several ARM core PMUs: the pair counts only on {}'s cores ({} not used)",
                        first.name,
                        others.join(", ")
                    ));
                    Some(first.name.clone())
                }
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::fixtures::*;
    use crate::cpu::parse_cpuinfo;
    use crate::format::PmuFormat;
    use crate::roles::{role_of, Arch, EventRef, Role};
    use crate::spec::{parse_event, parse_event_with, EventKind, Formats};

    fn cpu(vendor: Vendor, family: u32, model: u32) -> Cpu {
        Cpu {
            vendor,
            family,
            model,
            stepping: 0,
            model_name: None,
            hybrid: false,
            arm_parts: Vec::new(),
        }
    }

    fn arm_cpu(part: u32) -> Cpu {
        let mut c = cpu(
            Vendor::Arm {
                implementer: 0x41,
                part,
            },
            8,
            part,
        );
        c.arm_parts = vec![(0x41, part)];
        c
    }

    fn pmus(names: &[(&str, &str)]) -> Pmus {
        Pmus::from_entries(names.iter().map(|&(n, t)| (n, Some(t))))
    }

    fn config_of(spec: &str, formats: &Formats) -> u64 {
        match parse_event_with(spec, formats)
            .unwrap_or_else(|e| panic!("{spec}: {e}"))
            .kind
        {
            EventKind::Pmu { config, .. } => config,
            other => panic!("{spec}: {other:?}"),
        }
    }

    /// The raw configs of the vendors' event tables, typed by hand, per row label:
    /// the preferred stall event first.
    const EVENTS_MD: &[(&str, &[u64])] = &[
        ("Intel NHM/WSM", &[0x1a2]),
        ("Intel SNB", &[0x40004a3, 0x1a2]),
        ("Intel IVB/HSW/BDW", &[0x40004a3, 0x1a2]),
        ("Intel SKL/KBL/CML/SKX/CLX", &[0x40004a3, 0x1a2, 0x18002c2]),
        ("Intel ICL/ICX/TGL/RKL", &[0x40004a3]),
        ("Intel SPR/EMR/GNR", &[0x40004a3]),
        ("Intel ADL/RPL/MTL/ARL/LNL/PTL/WCL P-cores", &[0x40004a3]),
        ("Intel E-cores only", &[]),
        ("Intel family 18/19", &[]),
        ("AMD before Zen", &[]),
        ("AMD Zen1", &[0x187]),
        ("AMD Zen2", &[]),
        ("AMD Zen3", &[]),
        ("AMD Zen4", &[0x1bd6]),
        ("AMD Zen5", &[0x1bd6]),
        ("AMD Zen6", &[]),
        ("ARM64 Neoverse V1/N2/V2/V3/N3", &[0x3c, 0x24]),
        ("Apple M-series", &[]),
        ("ARM64", &[0x24]),
        ("unknown CPU", &[]),
    ];

    /// Every event of the tables, with the kernel file its encoding was read from (the
    /// kernel's copy of the vendors' event lists, or the driver that maps it). The raw
    /// value is typed here from those files, independently of the constants above.
    const KERNEL_SOURCES: &[(PresetEvent, u64, &str)] = &[
        (
            RESOURCE_STALLS_ANY,
            0x1a2,
            "tools/perf/pmu-events/arch/x86/{nehalemep,sandybridge,skylake}/pipeline.json: RESOURCE_STALLS.ANY EventCode 0xa2 UMask 0x01",
        ),
        (
            CYCLES_NO_DISPATCH,
            0x0400_04a3,
            "tools/perf/pmu-events/arch/x86/sandybridge/pipeline.json: CYCLE_ACTIVITY.CYCLES_NO_DISPATCH EventCode 0xa3 UMask 0x04 CounterMask 4",
        ),
        (
            CYCLES_NO_EXECUTE,
            0x0400_04a3,
            "tools/perf/pmu-events/arch/x86/{ivybridge,haswell,broadwell}/pipeline.json: CYCLE_ACTIVITY.CYCLES_NO_EXECUTE EventCode 0xa3 UMask 0x04 CounterMask 4",
        ),
        (
            STALLS_TOTAL,
            0x0400_04a3,
            "tools/perf/pmu-events/arch/x86/{skylake,icelake,sapphirerapids,alderlake,lunarlake,pantherlake}/pipeline.json: CYCLE_ACTIVITY.STALLS_TOTAL EventCode 0xa3 UMask 0x04 CounterMask 4",
        ),
        (
            UOPS_RETIRED_STALL_CYCLES,
            0x0180_02c2,
            "tools/perf/pmu-events/arch/x86/skylake/pipeline.json: UOPS_RETIRED.STALL_CYCLES EventCode 0xc2 UMask 0x02 CounterMask 1 Invert 1",
        ),
        (
            IC_STALL_BACK_PRESSURE,
            0x187,
            "arch/x86/events/amd/core.c: amd_zen1_perfmon_event_map STALLED_CYCLES_BACKEND 0x0187; tools/perf/pmu-events/arch/x86/amdzen1: ic_fetch_stall.ic_stall_back_pressure EventCode 0x87 UMask 0x01",
        ),
        (
            EX_NO_RETIRE_ALL,
            0x1bd6,
            "tools/perf/pmu-events/arch/x86/{amdzen4,amdzen5}/pipeline.json: ex_no_retire.all EventCode 0xd6 UMask 0x1b (amdzen6/execution.json has no .all)",
        ),
        (
            ARM_STALL,
            0x3c,
            "include/linux/perf/arm_pmuv3.h: ARMV8_PMUV3_PERFCTR_STALL 0x003C; tools/perf/pmu-events/arch/arm64/common-and-microarch.json",
        ),
        (
            ARM_STALL_BACKEND,
            0x24,
            "include/linux/perf/arm_pmuv3.h: ARMV8_PMUV3_PERFCTR_STALL_BACKEND 0x0024; drivers/perf/arm_pmuv3.c maps PERF_COUNT_HW_STALLED_CYCLES_BACKEND to it",
        ),
        (
            INTEL_CYCLES,
            0x3c,
            "tools/perf/pmu-events/arch/x86/*/pipeline.json: CPU_CLK_UNHALTED.THREAD_P EventCode 0x3c (architectural event, CPUID leaf 0xA)",
        ),
        (
            AMD_CYCLES,
            0x76,
            "tools/perf/pmu-events/arch/x86/amdzen*/core.json: ls_not_halted_cyc EventCode 0x76; arch/x86/events/amd/core.c maps CPU_CYCLES to 0x0076",
        ),
        (
            ARM_CYCLES,
            0x11,
            "include/linux/perf/arm_pmuv3.h: ARMV8_PMUV3_PERFCTR_CPU_CYCLES 0x0011",
        ),
        (
            INTEL_INSTRUCTIONS,
            0xc0,
            "tools/perf/pmu-events/arch/x86/*/pipeline.json: INST_RETIRED.ANY_P EventCode 0xc0 (architectural event)",
        ),
        (
            AMD_INSTRUCTIONS,
            0xc0,
            "tools/perf/pmu-events/arch/x86/amdzen{4,5}/pipeline.json, amdzen6/execution.json: ex_ret_instr EventCode 0xc0",
        ),
        (
            ARM_INSTRUCTIONS,
            0x08,
            "include/linux/perf/arm_pmuv3.h: ARMV8_PMUV3_PERFCTR_INST_RETIRED 0x0008",
        ),
    ];

    /// Every preset event of every row, every cycles and instructions event, is pinned to
    /// the kernel's encoding with the file it comes from.
    #[test]
    fn every_preset_event_is_pinned_to_the_kernel_tables() {
        for (e, raw, source) in KERNEL_SOURCES {
            assert_eq!(e.raw, *raw, "{}: {source}", e.title);
            let encoded = match e.encoding {
                Encoding::X86 {
                    event,
                    umask,
                    cmask,
                    inv,
                } => {
                    u64::from(event & 0xff)
                        | (u64::from(event >> 8) << 32)
                        | (u64::from(umask) << 8)
                        | (u64::from(inv) << 23)
                        | (u64::from(cmask) << 24)
                }
                Encoding::Arm { event } => u64::from(event),
            };
            assert_eq!(encoded, *raw, "{}: {source}", e.title);
            assert!(source.contains('/'), "{}: no kernel path", e.title);
        }
        for row in ROWS {
            for stall in row.stalls {
                if let Stall::Event(e) = stall {
                    assert!(
                        KERNEL_SOURCES.iter().any(|(k, _, _)| k == e),
                        "{}: {} has no kernel source",
                        row.label,
                        e.title
                    );
                }
            }
        }
    }

    #[test]
    fn every_row_encodes_as_events_md_says() {
        assert_eq!(ROWS.len(), EVENTS_MD.len());
        for (row, (label, raws)) in ROWS.iter().zip(EVENTS_MD) {
            assert_eq!(row.label, *label);
            let events: Vec<PresetEvent> = row
                .stalls
                .iter()
                .filter_map(|s| match s {
                    Stall::Event(e) => Some(*e),
                    Stall::Generic => None,
                })
                .collect();
            let got: Vec<u64> = events.iter().map(|e| e.raw).collect();
            assert_eq!(&got, raws, "{label}");
            for e in events {
                check_event(&e, Role::Stalls);
            }
        }
        for e in [INTEL_CYCLES, AMD_CYCLES, ARM_CYCLES] {
            check_event(&e, Role::Cycles);
        }
        // the vendors' cycles events.
        assert_eq!(
            [INTEL_CYCLES.raw, AMD_CYCLES.raw, ARM_CYCLES.raw],
            [0x3c, 0x76, 0x11]
        );
        for e in [INTEL_INSTRUCTIONS, AMD_INSTRUCTIONS, ARM_INSTRUCTIONS] {
            check_event(&e, Role::Instructions);
        }
    }

    /// The spec parses, encodes to the raw column with the built-in layout and with the
    /// vendor's sysfs layout, and role detection knows it by name and (stalls, cycles) by
    /// encoding.
    fn check_event(e: &PresetEvent, role: Role) {
        let (pmu, vendor_format, arch, type_) = match e.encoding {
            Encoding::X86 { .. } => {
                let amd = e.name.starts_with("ex_")
                    || e.name.starts_with("ls_")
                    || e.name.starts_with("ic_");
                let f = if amd {
                    PmuFormat::amd()
                } else {
                    PmuFormat::intel()
                };
                ("cpu", f, Arch::X86_64, 4)
            }
            Encoding::Arm { .. } => ("armv8_pmuv3_0", PmuFormat::armv8(), Arch::Aarch64, 8),
        };
        let spec = e.spec(pmu);
        let parsed = parse_event(&spec).unwrap_or_else(|err| panic!("{spec}: {err}"));
        assert_eq!(parsed.name, e.name, "{spec}");
        assert_eq!(config_of(&spec, &Formats::new()), e.raw, "{spec}");
        let mut formats = Formats::new();
        formats.insert(pmu.to_string(), vendor_format);
        assert_eq!(config_of(&spec, &formats), e.raw, "{spec} (sysfs layout)");
        let by_name = EventRef {
            type_,
            config: e.raw,
            name: e.name,
        };
        assert_eq!(role_of(by_name, arch), Some(role), "{} by name", e.name);
        if role != Role::Instructions {
            let by_encoding = EventRef {
                type_,
                config: e.raw,
                name: "",
            };
            assert_eq!(role_of(by_encoding, arch), Some(role), "{:#x}", e.raw);
        }
    }

    /// Every spec of a preset parses; the pair's roles are right.
    fn check_presets(p: &Presets, arch: Arch) {
        for c in &p.candidates {
            for (spec, role) in [(&c.stalls, Role::Stalls), (&c.cycles, Role::Cycles)] {
                let e = parse_event(spec).unwrap_or_else(|err| panic!("{spec}: {err}"));
                let a = e.kind.resolve(4);
                let r = EventRef {
                    type_: a.type_,
                    config: a.config,
                    name: &e.name,
                };
                assert_eq!(role_of(r, arch), Some(role), "{spec}");
            }
            assert!(!c.reason.contains('\n'));
        }
        parse_event(&p.cycles).unwrap();
        let i = parse_event(&p.instructions).unwrap();
        let a = i.kind.resolve(4);
        let r = EventRef {
            type_: a.type_,
            config: a.config,
            name: &i.name,
        };
        assert_eq!(
            role_of(r, arch),
            Some(Role::Instructions),
            "{}",
            p.instructions
        );
    }

    fn stall_raws(p: &Presets) -> Vec<u64> {
        p.candidates
            .iter()
            .map(|c| match parse_event(&c.stalls).unwrap().kind {
                EventKind::Pmu { config, .. } => config,
                EventKind::Hardware(8) => u64::MAX,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    const GENERIC: u64 = u64::MAX;

    #[test]
    fn intel_skylake_sp() {
        let c = parse_cpuinfo(SKYLAKE_SP).unwrap();
        let p = presets(&c, &pmus(&[("cpu", "4"), ("software", "1")]));
        assert_eq!(p.row, Some("Intel SKL/KBL/CML/SKX/CLX"));
        assert_eq!(p.pmu.as_deref(), Some("cpu"));
        assert_eq!(stall_raws(&p), [0x40004a3, 0x1a2, 0x18002c2]);
        assert_eq!(
            p.candidates[0].reason,
            "Intel SKL/KBL/CML/SKX/CLX: CYCLE_ACTIVITY.STALLS_TOTAL"
        );
        assert_eq!(
            p.candidates[0].stalls,
            "cpu/event=0xa3,umask=0x4,cmask=4,name=cycle_activity.stalls_total/"
        );
        assert_eq!(
            p.candidates[1].reason,
            "Intel SKL/KBL/CML/SKX/CLX: RESOURCE_STALLS.ANY (fallback)"
        );
        assert_eq!(
            p.candidates[2].stalls,
            "cpu/event=0xc2,umask=0x2,cmask=1,inv,name=uops_retired.stall_cycles/"
        );
        assert_eq!(
            p.cycles,
            "cpu/event=0x3c,umask=0x0,name=cpu_clk_unhalted.thread_p/"
        );
        assert!(p.candidates.iter().all(|c| c.cycles == p.cycles));
        assert_eq!(
            p.instructions,
            "cpu/event=0xc0,umask=0x0,name=inst_retired.any_p/"
        );
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        check_presets(&p, Arch::X86_64);
    }

    #[test]
    fn intel_rows_by_model() {
        let intel = |model| cpu(Vendor::Intel, 6, model);
        let has_cpu = pmus(&[("cpu", "4")]);
        let cases: &[(u32, &str, &[u64])] = &[
            (0x1a, "Intel NHM/WSM", &[0x1a2, GENERIC]),
            (0x2f, "Intel NHM/WSM", &[0x1a2, GENERIC]),
            (0x2a, "Intel SNB", &[0x40004a3, 0x1a2, GENERIC]),
            (0x3a, "Intel IVB/HSW/BDW", &[0x40004a3, 0x1a2]),
            (0x3c, "Intel IVB/HSW/BDW", &[0x40004a3, 0x1a2]),
            (0x56, "Intel IVB/HSW/BDW", &[0x40004a3, 0x1a2]),
            (
                0x9e,
                "Intel SKL/KBL/CML/SKX/CLX",
                &[0x40004a3, 0x1a2, 0x18002c2],
            ),
            (0x7e, "Intel ICL/ICX/TGL/RKL", &[0x40004a3]),
            (0xa7, "Intel ICL/ICX/TGL/RKL", &[0x40004a3]),
            (0x8f, "Intel SPR/EMR/GNR", &[0x40004a3]),
            (0xad, "Intel SPR/EMR/GNR", &[0x40004a3]),
            (
                0xbd,
                "Intel ADL/RPL/MTL/ARL/LNL/PTL/WCL P-cores",
                &[0x40004a3],
            ),
            (
                0xcc,
                "Intel ADL/RPL/MTL/ARL/LNL/PTL/WCL P-cores",
                &[0x40004a3],
            ),
            (
                0xd5,
                "Intel ADL/RPL/MTL/ARL/LNL/PTL/WCL P-cores",
                &[0x40004a3],
            ),
            (0xbe, "Intel E-cores only", &[]),
        ];
        for &(model, row, raws) in cases {
            let p = presets(&intel(model), &has_cpu);
            assert_eq!(p.row, Some(row), "{model:#x}");
            assert_eq!(stall_raws(&p), raws, "{model:#x}");
            check_presets(&p, Arch::X86_64);
        }
        let p = presets(&intel(0x2a), &has_cpu);
        assert_eq!(
            p.candidates[0].stalls,
            "cpu/event=0xa3,umask=0x4,cmask=4,name=cycle_activity.cycles_no_dispatch/"
        );
        assert_eq!(
            p.candidates[2].reason,
            "Intel SNB: generic stalled-cycles-backend (as the kernel maps it) (fallback)"
        );
        // A model the table does not know: no stall event, CPI events on `cpu`.
        let p = presets(&intel(0xfe), &has_cpu);
        assert!(p.candidates.is_empty());
        assert_eq!(p.row, None);
        assert!(
            p.notes[0].contains("no stall-cycles event known"),
            "{:?}",
            p.notes
        );
        assert!(p.no_stalls.is_some());
        assert_eq!(
            p.cycles,
            "cpu/event=0x3c,umask=0x0,name=cpu_clk_unhalted.thread_p/"
        );
        assert!(presets(&cpu(Vendor::Intel, 15, 0x4), &has_cpu)
            .candidates
            .is_empty());
        // Families 18 and 19 are not family 6: model 0x55 there is no Skylake-SP.
        for family in [18, 19] {
            let p = presets(&cpu(Vendor::Intel, family, 0x55), &has_cpu);
            assert_eq!(p.row, Some("Intel family 18/19"), "{family}");
            assert!(p.candidates.is_empty());
            assert_eq!(
                p.instructions,
                "cpu/event=0xc0,umask=0x0,name=inst_retired.any_p/"
            );
        }
    }

    #[test]
    fn intel_hybrid_alder_lake_pairs_on_cpu_core() {
        let c = parse_cpuinfo(ALDER_LAKE).unwrap();
        let p = presets(
            &c,
            &pmus(&[("cpu_core", "4"), ("cpu_atom", "10"), ("software", "1")]),
        );
        assert_eq!(p.pmu.as_deref(), Some("cpu_core"));
        assert_eq!(p.candidates.len(), 1);
        assert_eq!(
            p.candidates[0].stalls,
            "cpu_core/event=0xa3,umask=0x4,cmask=4,name=cycle_activity.stalls_total/"
        );
        assert_eq!(
            p.candidates[0].cycles,
            "cpu_core/event=0x3c,umask=0x0,name=cpu_clk_unhalted.thread_p/"
        );
        assert_eq!(
            p.candidates[0].reason,
            "Intel ADL/RPL/MTL/ARL/LNL/PTL/WCL P-cores (cpu_core): CYCLE_ACTIVITY.STALLS_TOTAL"
        );
        assert_eq!(
            p.instructions,
            "cpu_core/event=0xc0,umask=0x0,name=inst_retired.any_p/"
        );
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
        assert!(p.notes[0].contains("(cpu_atom not used)"), "{:?}", p.notes);
        assert!(p.notes[1].starts_with("E-cores (cpu_atom"), "{:?}", p.notes);
        check_presets(&p, Arch::X86_64);
        // E-cores disabled: one `cpu` PMU with the P-core events.
        let p = presets(&c, &pmus(&[("cpu", "4")]));
        assert_eq!(p.pmu.as_deref(), Some("cpu"));
        assert!(p.candidates[0].stalls.starts_with("cpu/"));
        // No sysfs at all: the hybrid flag still says cpu_core.
        let p = presets(&c, &Pmus::default());
        assert_eq!(p.pmu.as_deref(), Some("cpu_core"));
        assert!(p.notes.iter().any(|n| n.contains("no 'cpu_core' PMU")));
    }

    #[test]
    fn amd_rows_by_family_and_model() {
        let amd = |family, model| cpu(Vendor::Amd, family, model);
        let has_cpu = pmus(&[("cpu", "4")]);
        let cases: &[(u32, u32, Option<&str>, &[u64])] = &[
            (0x15, 0x02, Some("AMD before Zen"), &[GENERIC]),
            (0x17, 0x01, Some("AMD Zen1"), &[0x187, GENERIC]),
            (0x17, 0x18, Some("AMD Zen1"), &[0x187, GENERIC]),
            (0x17, 0x31, Some("AMD Zen2"), &[]),
            (0x17, 0x71, Some("AMD Zen2"), &[]),
            // The kernel's bsp_init_amd calls 17h 50-5F Zen 1 (perf's mapfile says Zen 2).
            (0x17, 0x50, Some("AMD Zen1"), &[0x187, GENERIC]),
            (0x17, 0xa0, Some("AMD Zen2"), &[]),
            (0x19, 0x21, Some("AMD Zen3"), &[]),
            (0x19, 0x11, Some("AMD Zen4"), &[0x1bd6]),
            (0x19, 0x61, Some("AMD Zen4"), &[0x1bd6]),
            (0x1a, 0x02, Some("AMD Zen5"), &[0x1bd6]),
            (0x1a, 0x44, Some("AMD Zen5"), &[0x1bd6]),
            (0x1a, 0x70, Some("AMD Zen5"), &[0x1bd6]),
            // Zen 6: 1Ah 50-5F, 80-AF, C0-CF (amd.c); no ex_no_retire.all there.
            (0x1a, 0x50, Some("AMD Zen6"), &[]),
            (0x1a, 0x80, Some("AMD Zen6"), &[]),
            (0x1a, 0xaf, Some("AMD Zen6"), &[]),
            (0x1a, 0xc0, Some("AMD Zen6"), &[]),
            // Models the kernel places in no generation.
            (0x1a, 0x30, None, &[]),
            (0x1a, 0xd0, None, &[]),
            (0x17, 0x80, None, &[]),
            (0x1b, 0x00, None, &[]),
        ];
        for &(family, model, row, raws) in cases {
            let p = presets(&amd(family, model), &has_cpu);
            assert_eq!(p.row, row, "{family:#x}/{model:#x}");
            assert_eq!(stall_raws(&p), raws, "{family:#x}/{model:#x}");
            assert_eq!(p.cycles, "cpu/event=0x76,umask=0x0,name=ls_not_halted_cyc/");
            assert_eq!(
                p.instructions,
                "cpu/event=0xc0,umask=0x0,name=ex_ret_instr/"
            );
            check_presets(&p, Arch::X86_64);
        }
        let p = presets(&amd(0x17, 0x31), &has_cpu);
        assert!(p.notes[0].contains("no reliable stall-cycles event"));
        let p = presets(&parse_cpuinfo(ZEN4).unwrap(), &has_cpu);
        assert_eq!(
            p.candidates[0].stalls,
            "cpu/event=0xd6,umask=0x1b,name=ex_no_retire.all/"
        );
        assert_eq!(p.candidates[0].reason, "AMD Zen4: ex_no_retire.all");
        assert_eq!(p.notes, [EX_NO_RETIRE_ALL_CAVEAT]);
        let p = presets(&amd(0x17, 0x01), &has_cpu);
        assert_eq!(
            p.candidates[0].stalls,
            "cpu/event=0x87,umask=0x1,name=ic_fetch_stall.ic_stall_back_pressure/"
        );
        assert_eq!(p.candidates[1].stalls, "stalled-cycles-backend");
    }

    #[test]
    fn arm_rows_by_part() {
        let n1 = parse_cpuinfo(NEOVERSE_N1).unwrap();
        let with = |pmu: &str, events: &[&str]| {
            pmus(&[(pmu, "8"), ("software", "1")]).with_events(pmu, events)
        };
        let p = presets(
            &n1,
            &with("armv8_pmuv3_0", &["stall_backend", "cpu_cycles"]),
        );
        assert_eq!(p.row, Some("ARM64"));
        assert_eq!(p.pmu.as_deref(), Some("armv8_pmuv3_0"));
        assert_eq!(stall_raws(&p), [0x24]);
        assert_eq!(
            p.candidates[0].stalls,
            "armv8_pmuv3_0/event=0x24,name=stall_backend/"
        );
        assert_eq!(p.candidates[0].reason, "ARM64: STALL_BACKEND");
        assert_eq!(p.cycles, "armv8_pmuv3_0/event=0x11,name=cpu_cycles/");
        assert_eq!(p.instructions, "armv8_pmuv3_0/event=0x8,name=inst_retired/");
        check_presets(&p, Arch::Aarch64);
        // Without the alias the core does not implement 0x24: no stall candidate (a raw
        // event it lacks opens and counts zero), and the reason says so.
        let p = presets(&n1, &with("armv8_pmuv3_0", &["cpu_cycles"]));
        assert!(p.candidates.is_empty());
        let why = p.no_stalls.as_deref().unwrap();
        assert!(why.contains("no events/stall_backend alias"), "{why}");
        for part in [0xd40, 0xd49, 0xd4f, 0xd84, 0xd8e] {
            let both = with("armv8_pmuv3_0", &["stall", "stall_backend"]);
            let p = presets(&arm_cpu(part), &both);
            assert_eq!(p.row, Some("ARM64 Neoverse V1/N2/V2/V3/N3"), "{part:#x}");
            assert_eq!(stall_raws(&p), [0x3c, 0x24]);
            assert_eq!(
                p.candidates[0].reason,
                "ARM64 Neoverse V1/N2/V2/V3/N3: STALL"
            );
            check_presets(&p, Arch::Aarch64);
            // STALL alone where only its alias is there.
            let p = presets(&arm_cpu(part), &with("armv8_pmuv3_0", &["stall"]));
            assert_eq!(stall_raws(&p), [0x3c]);
        }
        // A device-tree Armv9 system names its PMU armv9_*.
        let p = presets(
            &arm_cpu(0xd49),
            &with("armv9_neoverse_n2", &["stall", "stall_backend"]),
        );
        assert_eq!(p.pmu.as_deref(), Some("armv9_neoverse_n2"));
        assert_eq!(
            p.candidates[0].stalls,
            "armv9_neoverse_n2/event=0x3c,name=stall/"
        );
        // Cortex-A72, and a big.LITTLE whose cores do not all have STALL.
        let p = presets(
            &arm_cpu(0xd08),
            &with("armv8_cortex_a72", &["stall_backend"]),
        );
        assert_eq!(stall_raws(&p), [0x24]);
        let big_little = parse_cpuinfo(BIG_LITTLE).unwrap();
        let p = presets(
            &big_little,
            &pmus(&[("armv8_cortex_a55", "8"), ("armv8_cortex_a76", "9")])
                .with_events("armv8_cortex_a55", &["stall_backend"]),
        );
        assert_eq!(p.row, Some("ARM64"));
        assert_eq!(p.pmu.as_deref(), Some("armv8_cortex_a55"));
        assert!(
            p.notes[0].contains("armv8_cortex_a76 not used"),
            "{:?}",
            p.notes
        );
        // No ARM PMU in sysfs.
        let p = presets(&n1, &Pmus::default());
        assert_eq!(p.pmu.as_deref(), Some("armv8_pmuv3_0"));
        assert!(p.notes[0].contains("no 'armv8_*' PMU"));
        assert!(p.candidates.is_empty());
        // Apple.
        let mut m1 = cpu(
            Vendor::Arm {
                implementer: 0x61,
                part: 0x23,
            },
            8,
            0x23,
        );
        m1.arm_parts = vec![(0x61, 0x22), (0x61, 0x23)];
        let p = presets(&m1, &pmus(&[("apple_firestorm_pmu", "9")]));
        assert_eq!(p.row, Some("Apple M-series"));
        assert!(p.candidates.is_empty());
        assert_eq!(
            (p.cycles.as_str(), p.instructions.as_str()),
            ("cycles", "instructions")
        );
        assert!(p.notes[0].contains("Apple"));
    }

    /// The walk down the modes, with a stand-in for perf_event_open.
    #[test]
    fn choice_walks_from_stalls_to_cpi_to_cycles_to_cpu_clock() {
        let c = parse_cpuinfo(SKYLAKE_SP).unwrap();
        let here = pmus(&[("cpu", "4"), ("software", "1")]);
        let p = presets(&c, &here);
        let all = p.choose(&c, &here, true, &mut |_| Ok(()));
        assert_eq!(all.mode, Mode::Stalls);
        assert_eq!(all.events.len(), 3);
        assert!(all
            .why
            .starts_with("Intel SKL/KBL/CML/SKX/CLX: CYCLE_ACTIVITY.STALLS_TOTAL on Intel"));
        // No stall event opens: CPI.
        let no_stalls = |specs: &[String]| {
            if specs.iter().any(|s| s.contains("stall")) {
                Err("ENOENT".to_string())
            } else {
                Ok(())
            }
        };
        let cpi = p.choose(&c, &here, false, &mut { no_stalls });
        assert_eq!(cpi.mode, Mode::Cpi);
        assert_eq!(cpi.events, [p.cycles.clone(), p.instructions.clone()]);
        assert_eq!(cpi.refused.len(), 3);
        // Instructions do not open either: cycles alone.
        let cycles_only = |specs: &[String]| match specs {
            [one] if one.contains("cpu_clk_unhalted") => Ok(()),
            _ => Err("EOPNOTSUPP".to_string()),
        };
        let cycles = p.choose(&c, &here, false, &mut { cycles_only });
        assert_eq!(cycles.mode, Mode::Cycles);
        // Nothing opens on a machine with a PMU: cpu-clock, and the error, not "no PMU".
        let none = p.choose(&c, &here, false, &mut |_| Err("EBUSY".to_string()));
        assert_eq!(none.mode, Mode::CpuClock);
        assert!(none.why.contains("EBUSY") && !none.why.contains("no hardware PMU"));
        // A VM: no `cpu` PMU at all.
        let vm = pmus(&[("software", "1"), ("tracepoint", "2")]);
        let none = presets(&c, &vm).choose(&c, &vm, false, &mut |_| Err("ENOENT".into()));
        assert_eq!(none.mode, Mode::CpuClock);
        assert!(none.why.contains("no hardware PMU"), "{}", none.why);
        assert_eq!(none.events, ["cpu-clock"]);
        // Zen 3: CPI, and the line says why.
        let zen3 = cpu(Vendor::Amd, 0x19, 0x21);
        let amd = pmus(&[("cpu", "4")]);
        let p = presets(&zen3, &amd);
        let choice = p.choose(&zen3, &amd, false, &mut |_| Ok(()));
        assert_eq!(choice.mode, Mode::Cpi);
        assert!(
            choice.why.contains("no reliable stall-cycles event"),
            "{}",
            choice.why
        );
    }

    #[test]
    fn stall_caveats_by_name() {
        assert!(stall_event_caveat("ex_no_retire.all")
            .unwrap()
            .contains("SMT"));
        assert!(stall_event_caveat("stall")
            .unwrap()
            .contains("front end and the back end"));
        assert!(stall_event_caveat("stall_backend:u")
            .unwrap()
            .contains("back-end"));
        assert_eq!(stall_event_caveat("cycle_activity.stalls_total"), None);
    }

    #[test]
    fn other_vendors_try_the_generic_event() {
        let c = cpu(Vendor::Other("sifive,u74-mc".into()), 0, 0);
        let p = presets(&c, &Pmus::default());
        assert_eq!(p.pmu, None);
        assert_eq!(p.candidates.len(), 1);
        assert_eq!(p.candidates[0].stalls, "stalled-cycles-backend");
        assert_eq!(p.candidates[0].cycles, "cycles");
        assert_eq!(p.instructions, "instructions");
        check_presets(&p, Arch::Other);
    }

    #[test]
    fn this_machine() {
        // Linux always has /proc/cpuinfo (the project runs on Linux only): no skip.
        let c = crate::cpu::detect().expect("/proc/cpuinfo is read and parsed");
        let here = crate::sysfs::discover_pmus(std::path::Path::new("/sys")).unwrap_or_default();
        let p = presets(&c, &here);
        for c in &p.candidates {
            parse_event(&c.stalls).unwrap();
            parse_event(&c.cycles).unwrap();
        }
        parse_event(&p.instructions).unwrap();
        // A machine without a core PMU says so.
        if here.core_pmu().is_none() && p.pmu.is_some() {
            assert!(p.notes.iter().any(|n| n.contains("PMU")), "{:?}", p.notes);
        }
    }
}
