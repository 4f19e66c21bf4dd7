//! Top-down microarchitecture analysis (TMA): which events a recording's columns are, which
//! formula set of the kernel's perf metric JSON applies to them, and the level 1 (and level 2)
//! fractions of a frame's **sums** of deltas (a ratio of sums, never a mean of per-sample
//! ratios), with perf's normalisations and clamps and nothing more.
//!
//! - [`tma_role_of`]: perf's name of an event (`topdown-retiring`, `cpu_core/slots/`,
//!   `de_no_dispatch_per_slot.backend_stalls`, `STALL_SLOT_FRONTEND`, ...) to its [`TmaRole`].
//! - [`Cpu`] (with [`Cpu::from_perf_cpuid`], perf.data's `HEADER_CPUID` string) and
//!   [`Machine`]: what the formulas need to know beyond the names (the core, Arm's slots per
//!   cycle, SMT on pre-Ice Lake Intel).
//! - [`plan`]: from a list of column names, the [`FormulaSet`] that applies and where each of
//!   its events is, or [`NoTopdown`] saying why none does.
//! - [`Plan::apply`]: a frame's sums to a [`Breakdown`].
//!
//! Pure functions: no I/O. [docs/topdown.md](../../../docs/topdown.md) lists each set's JSON
//! source and what is approximate or unverified.

mod category;

pub use category::{pair_columns, Category, Dominant, LEVEL1};

use std::fmt;

use serde::Serialize;

/// What an event is to the top-down formulas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmaRole {
    /// Intel `slots` (fixed counter 3, `TOPDOWN.SLOTS`).
    Slots,
    /// Intel PERF_METRICS: `topdown-retiring` .. `topdown-mem-bound`, counts in slots.
    Retiring,
    BadSpec,
    FeBound,
    BeBound,
    HeavyOps,
    BrMispredict,
    FetchLat,
    MemBound,
    /// `INT_MISC.UOP_DROPPING` (Ice Lake, Golden Cove front-end correction).
    UopDropping,
    /// `INT_MISC.CLEARS_COUNT`, or `INT_MISC.RECOVERY_CYCLES,cmask=1,edge` as perf's Ice
    /// Lake JSON writes it (the back-end correction).
    ClearsCount,
    /// Core cycles: `cycles`, `cpu_clk_unhalted.thread`, AMD `ls_not_halted_cyc`, Arm
    /// `cpu_cycles`.
    Cycles,
    /// Skylake-class: `IDQ_UOPS_NOT_DELIVERED.CORE`.
    IdqUopsNotDelivered,
    /// Skylake-class: `UOPS_ISSUED.ANY`.
    UopsIssued,
    /// Skylake-class: `UOPS_RETIRED.RETIRE_SLOTS`.
    RetireSlots,
    /// Skylake-class: `INT_MISC.RECOVERY_CYCLES`.
    RecoveryCycles,
    /// AMD `de_no_dispatch_per_slot.no_ops_from_frontend`.
    AmdNoOpsFromFrontend,
    /// The same event with `cmask=N` (the front-end latency of level 2; N is the width).
    AmdNoOpsFromFrontendCmask(u8),
    /// AMD `de_no_dispatch_per_slot.backend_stalls`.
    AmdBackendStalls,
    /// AMD `de_no_dispatch_per_slot.smt_contention`.
    AmdSmtContention,
    /// AMD `de_src_op_disp.all`.
    AmdOpsDispatched,
    /// AMD `ex_ret_ops`.
    AmdOpsRetired,
    /// AMD `ex_ret_brn_misp`.
    AmdBranchMispredicts,
    /// AMD Zen 4 `resyncs_or_nc_redirects`.
    AmdRestartsZen4,
    /// AMD Zen 5 `bp_redirects.resync`, Zen 6 `bp_fe_redir.resync` (both 0x9f/0x01).
    AmdRestartsZen5,
    /// AMD `ex_no_retire.not_complete`.
    AmdNotComplete,
    /// AMD `ex_no_retire.load_not_complete`.
    AmdLoadNotComplete,
    /// AMD `ex_ret_ucode_ops`.
    AmdUcodeOps,
    /// Arm `STALL_SLOT_FRONTEND`.
    StallSlotFrontend,
    /// Arm `STALL_SLOT_BACKEND`.
    StallSlotBackend,
    /// Arm `STALL_SLOT`.
    StallSlot,
    /// Arm `OP_RETIRED`.
    OpRetired,
    /// Arm `OP_SPEC`.
    OpSpec,
    /// Arm `BR_MIS_PRED`.
    BrMisPred,
}

/// perf's names of the events, lower case (names compare case-insensitively).
const NAMES: &[(&str, TmaRole)] = &[
    ("slots", TmaRole::Slots),
    ("topdown.slots", TmaRole::Slots),
    ("topdown-retiring", TmaRole::Retiring),
    ("topdown-bad-spec", TmaRole::BadSpec),
    ("topdown-fe-bound", TmaRole::FeBound),
    ("topdown-be-bound", TmaRole::BeBound),
    ("topdown-heavy-ops", TmaRole::HeavyOps),
    ("topdown-br-mispredict", TmaRole::BrMispredict),
    ("topdown-fetch-lat", TmaRole::FetchLat),
    ("topdown-mem-bound", TmaRole::MemBound),
    ("int_misc.uop_dropping", TmaRole::UopDropping),
    ("int_misc.clears_count", TmaRole::ClearsCount),
    ("cycles", TmaRole::Cycles),
    ("cpu-cycles", TmaRole::Cycles),
    ("cpu_clk_unhalted.thread", TmaRole::Cycles),
    ("ls_not_halted_cyc", TmaRole::Cycles),
    ("cpu_cycles", TmaRole::Cycles),
    ("idq_uops_not_delivered.core", TmaRole::IdqUopsNotDelivered),
    ("uops_issued.any", TmaRole::UopsIssued),
    ("uops_retired.retire_slots", TmaRole::RetireSlots),
    ("int_misc.recovery_cycles", TmaRole::RecoveryCycles),
    (
        "de_no_dispatch_per_slot.no_ops_from_frontend",
        TmaRole::AmdNoOpsFromFrontend,
    ),
    (
        "de_no_dispatch_per_slot.backend_stalls",
        TmaRole::AmdBackendStalls,
    ),
    (
        "de_no_dispatch_per_slot.smt_contention",
        TmaRole::AmdSmtContention,
    ),
    ("de_src_op_disp.all", TmaRole::AmdOpsDispatched),
    ("ex_ret_ops", TmaRole::AmdOpsRetired),
    ("ex_ret_brn_misp", TmaRole::AmdBranchMispredicts),
    ("resyncs_or_nc_redirects", TmaRole::AmdRestartsZen4),
    ("bp_redirects.resync", TmaRole::AmdRestartsZen5),
    ("bp_fe_redir.resync", TmaRole::AmdRestartsZen5),
    ("ex_no_retire.not_complete", TmaRole::AmdNotComplete),
    (
        "ex_no_retire.load_not_complete",
        TmaRole::AmdLoadNotComplete,
    ),
    ("ex_ret_ucode_ops", TmaRole::AmdUcodeOps),
    ("stall_slot_frontend", TmaRole::StallSlotFrontend),
    ("stall_slot_backend", TmaRole::StallSlotBackend),
    ("stall_slot", TmaRole::StallSlot),
    ("op_retired", TmaRole::OpRetired),
    ("op_spec", TmaRole::OpSpec),
    ("br_mis_pred", TmaRole::BrMisPred),
];

/// The role of an event named as perf names it: `topdown-retiring`, `cpu_core/slots/`,
/// `cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/`, `STALL_SLOT:u`. A PMU
/// prefix and perf's modifiers after `:` are ignored, case too. `None` for any other event,
/// and for terms other than `cmask` on the AMD front-end event and `cmask=1,edge` on
/// `int_misc.recovery_cycles`.
pub fn tma_role_of(name: &str) -> Option<TmaRole> {
    let name = name.trim().to_ascii_lowercase();
    let inner = match name.split_once('/') {
        // `pmu/terms/` with optional `:modifiers` after the closing slash.
        Some((_pmu, rest)) => rest.rsplit_once('/').map_or(rest, |(terms, _)| terms),
        None => name
            .split_once(':')
            .map_or(name.as_str(), |(event, _)| event),
    };
    let mut terms = inner.split(',');
    let event = terms.next()?.trim();
    let rest: Vec<&str> = terms.map(str::trim).filter(|t| !t.is_empty()).collect();
    let role = NAMES.iter().find(|(n, _)| *n == event).map(|&(_, r)| r)?;
    let number = |value: &str| match value.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    };
    match (role, rest.as_slice()) {
        (_, []) => Some(role),
        (TmaRole::AmdNoOpsFromFrontend, [term]) => Some(TmaRole::AmdNoOpsFromFrontendCmask(
            number(term.strip_prefix("cmask=")?)?,
        )),
        // icx-metrics.json's `cpu@INT_MISC.RECOVERY_CYCLES\,cmask\=1\,edge@`, which is
        // INT_MISC.CLEARS_COUNT's encoding.
        (TmaRole::RecoveryCycles, [a, b]) => {
            let cmask_one = |t: &str| t.strip_prefix("cmask=").and_then(number) == Some(1);
            let edge = |t: &str| t == "edge" || t == "edge=1";
            ((cmask_one(a) && edge(b)) || (edge(a) && cmask_one(b))).then_some(TmaRole::ClearsCount)
        }
        _ => None,
    }
}

/// The core the events were counted on, as far as the formulas care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cpu {
    Unknown,
    /// Skylake, Kaby/Coffee/Comet Lake, Skylake-SP/Cascade/Cooper Lake: no PERF_METRICS.
    IntelSkylake,
    /// Ice Lake, Tiger Lake, Rocket Lake, Ice Lake-SP: PERF_METRICS level 1.
    IntelIceLake,
    /// Golden Cove class P-cores (Alder/Raptor Lake, Sapphire/Emerald/Granite Rapids,
    /// Meteor Lake): PERF_METRICS levels 1 and 2.
    IntelGoldenCove,
    /// Lion Cove class P-cores (Lunar Lake, Arrow Lake, Panther Lake).
    IntelLionCove,
    /// Any other Intel core (older, or one this table does not know).
    IntelOther,
    /// Zen 1 to Zen 3: no slot-based top-down events.
    AmdBeforeZen4,
    AmdZen4,
    AmdZen5,
    AmdZen6,
    /// Any other AMD family or model.
    AmdOther,
    /// Neoverse N1: no slot events, only cycle-based stalls.
    ArmNeoverseN1,
    ArmNeoverseV1,
    /// Neoverse N2; revisions before r0p3 over-count one stall slot per cycle.
    ArmNeoverseN2 {
        r0p3_or_later: bool,
    },
    ArmNeoverseV2,
    /// Any other Arm core: the kernel's generic `sbsa.json` formulas.
    ArmOther,
}

impl Cpu {
    /// The core in words, for messages: `an Intel Golden Cove core`.
    pub fn describe(&self) -> &'static str {
        match self {
            Cpu::Unknown => "an unknown CPU",
            Cpu::IntelSkylake => "an Intel Skylake-class core",
            Cpu::IntelIceLake => "an Intel Ice Lake-class core",
            Cpu::IntelGoldenCove => "an Intel Golden Cove-class core",
            Cpu::IntelLionCove => "an Intel Lion Cove-class core",
            Cpu::IntelOther => "an Intel core",
            Cpu::AmdBeforeZen4 => "an AMD Zen 1-3 core",
            Cpu::AmdZen4 => "an AMD Zen 4 core",
            Cpu::AmdZen5 => "an AMD Zen 5 core",
            Cpu::AmdZen6 => "an AMD Zen 6 core",
            Cpu::AmdOther => "an AMD core",
            Cpu::ArmNeoverseN1 => "an Arm Neoverse N1",
            Cpu::ArmNeoverseV1 => "an Arm Neoverse V1",
            Cpu::ArmNeoverseN2 { .. } => "an Arm Neoverse N2",
            Cpu::ArmNeoverseV2 => "an Arm Neoverse V2",
            Cpu::ArmOther => "an Arm core",
        }
    }
}

impl Cpu {
    /// The core of perf.data's `HEADER_CPUID` string: x86 `GenuineIntel,6,143,8` (vendor,
    /// family, model, stepping in decimal) or the pmu-events form `GenuineIntel-6-8F-8` and
    /// `AuthenticAMD-26-50-0` (family decimal, model and stepping hex, as perf's x86
    /// `get_cpuid_str` writes it), arm64 the MIDR `0x00000000410fd490`. [`Cpu::Unknown`] for
    /// anything else.
    pub fn from_perf_cpuid(cpuid: &str) -> Cpu {
        let cpuid = cpuid.trim();
        if let Some(hex) = cpuid.strip_prefix("0x") {
            return u64::from_str_radix(hex, 16).map_or(Cpu::Unknown, Cpu::arm);
        }
        let (fields, radix): (Vec<&str>, u32) = if cpuid.contains(',') {
            (cpuid.split(',').collect(), 10)
        } else {
            (cpuid.split('-').collect(), 16)
        };
        // perf's x86 `get_cpuid_str` writes "%s-%u-%X-%X": the family in decimal.
        let number = |i: usize| {
            let radix = if i == 1 { 10 } else { radix };
            fields
                .get(i)
                .and_then(|f| u32::from_str_radix(f.trim(), radix).ok())
        };
        match (fields.first().map(|v| v.trim()), number(1), number(2)) {
            (Some("GenuineIntel"), Some(family), Some(model)) => Cpu::intel(family, model),
            (Some("GenuineIntel"), _, _) => Cpu::IntelOther,
            (Some("AuthenticAMD"), Some(family), Some(model)) => Cpu::amd(family, model),
            (Some("AuthenticAMD"), _, _) => Cpu::AmdOther,
            _ => Cpu::Unknown,
        }
    }

    /// An Intel core of `family` and `model` (as `/proc/cpuinfo` gives them).
    pub fn intel(family: u32, model: u32) -> Cpu {
        match family {
            6 => intel_of_model(model),
            _ => Cpu::IntelOther,
        }
    }

    /// An AMD core of `family` and `model`.
    pub fn amd(family: u32, model: u32) -> Cpu {
        amd_of(family, model)
    }

    /// An Arm core of main ID register value `midr` (implementer, variant, part, revision).
    pub fn arm(midr: u64) -> Cpu {
        arm_of_midr(midr)
    }

    /// PMMIR_EL1.SLOTS of the Arm cores whose value is published (Arm Telemetry Solution
    /// `num_slots`): the value `caps/slots` gives on them.
    fn arm_slots(self) -> Option<u32> {
        match self {
            Cpu::ArmNeoverseV1 | Cpu::ArmNeoverseV2 => Some(8),
            Cpu::ArmNeoverseN2 { .. } => Some(5),
            _ => None,
        }
    }
}

/// perf's x86 `mapfile.csv` (the directory whose metrics perf uses): skylake
/// (4E|5E|8E|9E|A5|A6), skylakex/cascadelakex 55; icelake 7[DE], icelakex 6[AC], tigerlake
/// 8[CD], rocketlake A7; alderlake (97|9A|B7|BA|BF), sapphirerapids 8F, emeraldrapids CF,
/// graniterapids A[DE], meteorlake (AA|AC|B5); lunarlake BD, arrowlake C[56], pantherlake CC.
fn intel_of_model(model: u32) -> Cpu {
    match model {
        0x4e | 0x5e | 0x55 | 0x8e | 0x9e | 0xa5 | 0xa6 => Cpu::IntelSkylake,
        0x7d | 0x7e | 0x6a | 0x6c | 0x8c | 0x8d | 0xa7 => Cpu::IntelIceLake,
        0x97 | 0x9a | 0xb7 | 0xba | 0xbf | 0x8f | 0xcf | 0xad | 0xae | 0xaa | 0xac | 0xb5 => {
            Cpu::IntelGoldenCove
        }
        0xbd | 0xc5 | 0xc6 | 0xcc => Cpu::IntelLionCove,
        _ => Cpu::IntelOther,
    }
}

/// perf's x86 mapfile: family 0x19 models 0x00-0x0f and 0x20-0x5f are Zen 3, the others
/// Zen 4; 0x17 is Zen 1/2. Family 0x1a by the kernel's `bsp_init_amd` ranges (perf's
/// mapfile limits its Zen 5 row to known models since Zen 6 came): Zen 5 models 0x00-0x2f,
/// 0x40-0x4f, 0x60-0x7f; Zen 6 0x50-0x5f, 0x80-0xaf, 0xc0-0xcf; any other model is an AMD
/// core these formulas do not know.
fn amd_of(family: u32, model: u32) -> Cpu {
    match (family, model) {
        (0x17, _) => Cpu::AmdBeforeZen4,
        (0x19, 0x00..=0x0f | 0x20..=0x5f) => Cpu::AmdBeforeZen4,
        (0x19, _) => Cpu::AmdZen4,
        (0x1a, 0x00..=0x2f | 0x40..=0x4f | 0x60..=0x7f) => Cpu::AmdZen5,
        (0x1a, 0x50..=0x5f | 0x80..=0xaf | 0xc0..=0xcf) => Cpu::AmdZen6,
        _ => Cpu::AmdOther,
    }
}

fn arm_of_midr(midr: u64) -> Cpu {
    let implementer = (midr >> 24) & 0xff;
    let variant = (midr >> 20) & 0xf;
    let part = (midr >> 4) & 0xfff;
    let revision = midr & 0xf;
    if implementer != 0x41 {
        return Cpu::ArmOther;
    }
    match part {
        0xd0c => Cpu::ArmNeoverseN1,
        0xd40 => Cpu::ArmNeoverseV1,
        0xd49 => Cpu::ArmNeoverseN2 {
            r0p3_or_later: (variant, revision) >= (0, 3),
        },
        0xd4f => Cpu::ArmNeoverseV2,
        _ => Cpu::ArmOther,
    }
}

/// What the formulas need besides the event names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    pub cpu: Cpu,
    /// Arm `caps/slots` (PMMIR_EL1.SLOTS); the published value of a known core otherwise.
    pub arm_slots: Option<u32>,
    /// SMT on (pre-Ice Lake Intel's formulas are exact only with it off); `None`: unknown.
    pub smt_on: Option<bool>,
}

impl Machine {
    pub fn of(cpu: Cpu) -> Machine {
        Machine {
            cpu,
            arm_slots: None,
            smt_on: None,
        }
    }
}

/// One formula set of the kernel's metric JSON, as applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormulaSet {
    /// `icx-metrics.json`/`icl-metrics.json`: ΣM-normalised PERF_METRICS, front end minus
    /// `UOP_DROPPING/slots`, back end plus `5·CLEARS_COUNT/slots`, bad speculation the rest.
    /// Without those two events their terms are left out (an approximation).
    IntelIceLake {
        uop_dropping: bool,
        clears_count: bool,
    },
    /// `spr-metrics.json`/`adl-metrics.json` (cpu_core): front end (and fetch latency) minus
    /// `UOP_DROPPING/slots`, bad speculation `max(1 − (FE+BE+RET), 0)`, level 2 from the
    /// four level-2 metrics.
    IntelGoldenCove { uop_dropping: bool, level2: bool },
    /// `lnl-metrics.json`/`arl-metrics.json` (cpu_core): every metric a plain ΣM ratio.
    IntelLionCove { level2: bool },
    /// PERF_METRICS of an Intel core not identified: plain ΣM ratios (Lion Cove's rule), an
    /// approximation on Ice Lake and Golden Cove.
    IntelPerfMetrics { level2: bool },
    /// `skl-metrics.json`: SLOTS = 4 × cycles. Exact with SMT off; with SMT on (or unknown)
    /// the per-thread events stand in for Intel's core-wide ones.
    IntelSkylake { smt_off: bool },
    /// `amdzen4/pipeline.json` (width 6), `amdzen5/pipeline.json` or `amdzen6/pipeline.json`
    /// (width 8). Level-2 events may be in other leader-sampled groups than level 1's, each
    /// group led by its own cycles ([`plan`]).
    AmdZen {
        /// 4, 5 or 6.
        zen: u8,
        width: u8,
        smt_contention: bool,
        level2: bool,
    },
    /// `arm64/sbsa.json`: the generic Arm formulas with `#slots`.
    ArmSbsa { slots: u32 },
    /// `arm/neoverse-v1/metrics.json`: sbsa with front end and bad speculation moving
    /// `4·BR_MIS_PRED` slots per cycle.
    ArmNeoverseV1 { slots: u32 },
    /// `arm/neoverse-n2-v2/metrics.json`: sbsa, with one stall slot per cycle taken off
    /// `STALL_SLOT` and `STALL_SLOT_FRONTEND` on N2 before r0p3 (`n2_workaround`).
    ArmNeoverseN2V2 { slots: u32, n2_workaround: bool },
}

impl FormulaSet {
    /// A name for the legend, e.g. "Intel Golden Cove PERF_METRICS (spr/adl metrics)".
    pub fn name(&self) -> String {
        match *self {
            FormulaSet::IntelIceLake { .. } => {
                "Intel Ice Lake PERF_METRICS (icl/icx metrics)".into()
            }
            FormulaSet::IntelGoldenCove { .. } => {
                "Intel Golden Cove PERF_METRICS (spr/adl metrics)".into()
            }
            FormulaSet::IntelLionCove { .. } => {
                "Intel Lion Cove PERF_METRICS (lnl/arl metrics)".into()
            }
            FormulaSet::IntelPerfMetrics { .. } => "Intel PERF_METRICS, core unknown".into(),
            FormulaSet::IntelSkylake { .. } => "Intel Skylake-class events (skl metrics)".into(),
            FormulaSet::AmdZen { zen, width, .. } => {
                format!("AMD Zen {zen} pipeline ({width} slots per cycle)")
            }
            FormulaSet::ArmSbsa { slots } => format!("Arm SBSA ({slots} slots)"),
            FormulaSet::ArmNeoverseV1 { .. } => "Arm Neoverse V1".into(),
            FormulaSet::ArmNeoverseN2V2 { n2_workaround, .. } => if n2_workaround {
                "Arm Neoverse N2 before r0p3"
            } else {
                "Arm Neoverse N2/V2"
            }
            .into(),
        }
    }

    /// Why the set is not perf's exact formula for the machine, if it is not.
    pub fn approximation(&self) -> Option<&'static str> {
        match *self {
            FormulaSet::IntelIceLake {
                uop_dropping: true,
                clears_count: true,
            }
            | FormulaSet::IntelGoldenCove {
                uop_dropping: true, ..
            } => None,
            FormulaSet::IntelIceLake {
                uop_dropping: false,
                clears_count: false,
            } => Some(
                "without int_misc.uop_dropping and int_misc.clears_count: their corrections are left out",
            ),
            FormulaSet::IntelIceLake {
                uop_dropping: false,
                ..
            }
            | FormulaSet::IntelGoldenCove { .. } => {
                Some("without int_misc.uop_dropping: its front-end correction is left out")
            }
            FormulaSet::IntelIceLake { .. } => {
                Some("without int_misc.clears_count: its back-end correction is left out")
            }
            FormulaSet::IntelPerfMetrics { .. } => {
                Some("core unknown: plain ratios of the metrics' sum")
            }
            FormulaSet::IntelSkylake { smt_off: false } => Some(
                "SMT on or unknown: per-thread cycles and recovery cycles stand in for Intel's core-wide ones",
            ),
            _ => None,
        }
    }

    /// The vendor's names of the level-2 nodes, in [`Level2`]'s field order.
    pub fn level2_names(&self) -> [&'static str; 8] {
        match self {
            FormulaSet::AmdZen { .. } => [
                "frontend latency",
                "frontend bandwidth",
                "mispredicts",
                "pipeline restarts",
                "backend memory",
                "backend cpu",
                "microcode",
                "fastpath",
            ],
            _ => [
                "fetch latency",
                "fetch bandwidth",
                "branch mispredicts",
                "machine clears",
                "memory bound",
                "core bound",
                "heavy operations",
                "light operations",
            ],
        }
    }

    /// The roles the set reads: required first, then the optional ones it was planned with.
    fn roles(&self) -> Vec<TmaRole> {
        use TmaRole::*;
        let l2 = [HeavyOps, BrMispredict, FetchLat, MemBound];
        match *self {
            FormulaSet::IntelIceLake {
                uop_dropping,
                clears_count,
            } => {
                let mut r = vec![Retiring, BadSpec, FeBound, BeBound];
                if uop_dropping || clears_count {
                    r.push(Slots);
                }
                r.extend(uop_dropping.then_some(UopDropping));
                r.extend(clears_count.then_some(ClearsCount));
                r
            }
            FormulaSet::IntelGoldenCove {
                uop_dropping,
                level2,
            } => {
                let mut r = vec![Retiring, BadSpec, FeBound, BeBound];
                if uop_dropping {
                    r.extend([Slots, UopDropping]);
                }
                if level2 {
                    r.extend(l2);
                }
                r
            }
            FormulaSet::IntelLionCove { level2 } | FormulaSet::IntelPerfMetrics { level2 } => {
                let mut r = vec![Retiring, BadSpec, FeBound, BeBound];
                if level2 {
                    r.extend(l2);
                }
                r
            }
            FormulaSet::IntelSkylake { .. } => vec![
                Cycles,
                IdqUopsNotDelivered,
                UopsIssued,
                RetireSlots,
                RecoveryCycles,
            ],
            FormulaSet::AmdZen {
                width,
                smt_contention,
                level2,
                ..
            } => {
                let mut r = vec![
                    Cycles,
                    AmdNoOpsFromFrontend,
                    AmdBackendStalls,
                    AmdOpsDispatched,
                    AmdOpsRetired,
                ];
                r.extend(smt_contention.then_some(AmdSmtContention));
                if level2 {
                    r.extend([
                        AmdNoOpsFromFrontendCmask(width),
                        AmdBranchMispredicts,
                        if width == 8 {
                            AmdRestartsZen5
                        } else {
                            AmdRestartsZen4
                        },
                        AmdNotComplete,
                        AmdLoadNotComplete,
                        AmdUcodeOps,
                    ]);
                }
                r
            }
            FormulaSet::ArmSbsa { .. }
            | FormulaSet::ArmNeoverseN2V2 { .. }
            | FormulaSet::ArmNeoverseV1 { .. } => {
                let mut r = vec![
                    Cycles,
                    StallSlotFrontend,
                    StallSlotBackend,
                    StallSlot,
                    OpRetired,
                    OpSpec,
                ];
                if let FormulaSet::ArmNeoverseV1 { .. } = self {
                    r.push(BrMisPred);
                }
                r
            }
        }
    }
}

/// Why no formula set applies to a list of columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoTopdown {
    /// None of the columns is a top-down event.
    NoEvents,
    /// Two columns are the same event.
    Duplicate(String),
    /// The events of a set are there in part: the missing ones, by perf's name.
    Missing {
        set: String,
        missing: Vec<&'static str>,
    },
    /// The core has no slot-based top-down (Neoverse N1, Zen 1-3) or this model does not
    /// implement its formulas.
    CpuWithout(&'static str),
    /// The events need to know the core (AMD's slots per cycle, Arm's slots) and it is not
    /// known.
    CpuNeeded(&'static str),
    /// The events belong to another vendor than the recording's CPU.
    Mismatch { events: &'static str, cpu: Cpu },
}

impl fmt::Display for NoTopdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoTopdown::NoEvents => write!(f, "no top-down events among the columns"),
            NoTopdown::Duplicate(name) => write!(f, "top-down event {name} appears twice"),
            NoTopdown::Missing { set, missing } => {
                write!(f, "{set} needs the events {}", missing.join(", "))
            }
            NoTopdown::CpuWithout(why) => write!(f, "{why}"),
            NoTopdown::CpuNeeded(why) => write!(f, "{why}"),
            NoTopdown::Mismatch { events, cpu } => {
                write!(f, "{events} events recorded on {}", cpu.describe())
            }
        }
    }
}

impl std::error::Error for NoTopdown {}

/// perf's name of each role, for error messages.
fn perf_name(role: TmaRole) -> &'static str {
    match role {
        TmaRole::AmdNoOpsFromFrontendCmask(8) => {
            "de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x8"
        }
        TmaRole::AmdNoOpsFromFrontendCmask(_) => {
            "de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6"
        }
        TmaRole::Cycles => "cycles",
        _ => NAMES
            .iter()
            .find(|(_, r)| *r == role)
            .map_or("?", |(n, _)| n),
    }
}

/// A formula set and the column of each event it reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub set: FormulaSet,
    /// (role, column index), in [`FormulaSet::roles`] order.
    columns: Vec<(TmaRole, usize)>,
    /// AMD with several groups: for each entry of `columns`, the column of its group's cycles
    /// (empty with one group).
    group_cycles: Vec<usize>,
}

impl Plan {
    /// How many leader-sampled groups the planned events come from (AMD level 2 recorded as
    /// more groups, each led by its own cycles); 1 otherwise.
    pub fn groups(&self) -> usize {
        let mut cycles: Vec<usize> = self.group_cycles.clone();
        cycles.sort_unstable();
        cycles.dedup();
        cycles.len().max(1)
    }
}

/// Which formula set applies to columns named `names` (perf's event names) on `machine`, or
/// why none does.
///
/// Columns are in the recording's event order (perf.data's attrs, a folded file's
/// `# columns:`), where a group's members follow its leader. For AMD a cycles column after
/// the first starts another group (perf names every group's cycles `cycles`, as in
/// `-e '{cycles,a,b}:S,{cycles,c,d}:S'`): each event belongs to the group of the cycles
/// before it, and [`Plan::apply`] scales it to the first group's time by the ratio of the
/// two groups' cycles, as `perf stat` scales multiplexed counts. An event twice in one group
/// is refused; in two groups the first is used. Other sets refuse a second cycles.
pub fn plan(names: &[&str], machine: &Machine) -> Result<Plan, NoTopdown> {
    // (role, column, group), the group numbered by the cycles columns seen before it.
    let mut found: Vec<(TmaRole, usize, usize)> = Vec::new();
    let mut cycles_of_group: Vec<usize> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some(role) = tma_role_of(name) else {
            continue;
        };
        if role == TmaRole::Cycles {
            cycles_of_group.push(i);
        }
        let group = cycles_of_group.len().saturating_sub(1);
        match found.iter().find(|&&(r, _, _)| r == role) {
            Some(&(_, _, g)) if g == group => return Err(NoTopdown::Duplicate(name.to_string())),
            // Another group's: the first is used (a later cycles leads its own group).
            Some(_) => {}
            None => found.push((role, i, group)),
        }
    }
    let has = |role: TmaRole| found.iter().any(|&(r, _, _)| r == role);
    let set = choose(&has, machine)?;
    let amd = matches!(set, FormulaSet::AmdZen { .. });
    if cycles_of_group.len() > 1 && !amd {
        return Err(NoTopdown::Duplicate(names[cycles_of_group[1]].to_string()));
    }
    let mut columns = Vec::new();
    let mut group_cycles = Vec::new();
    let mut missing = Vec::new();
    for role in set.roles() {
        match found.iter().find(|&&(r, _, _)| r == role) {
            Some(&(r, c, g)) => {
                columns.push((r, c));
                if cycles_of_group.len() > 1 {
                    // Events before the first cycles count as its group's.
                    group_cycles.push(cycles_of_group[g]);
                }
            }
            None => missing.push(perf_name(role)),
        }
    }
    if !missing.is_empty() {
        return Err(NoTopdown::Missing {
            set: set.name(),
            missing,
        });
    }
    Ok(Plan {
        set,
        columns,
        group_cycles,
    })
}

fn choose(has: &dyn Fn(TmaRole) -> bool, machine: &Machine) -> Result<FormulaSet, NoTopdown> {
    use TmaRole::*;
    let cpu = machine.cpu;
    let any = |roles: &[TmaRole]| roles.iter().any(|&r| has(r));
    let all = |roles: &[TmaRole]| roles.iter().all(|&r| has(r));
    let intel_cpu = matches!(
        cpu,
        Cpu::IntelSkylake
            | Cpu::IntelIceLake
            | Cpu::IntelGoldenCove
            | Cpu::IntelLionCove
            | Cpu::IntelOther
            | Cpu::Unknown
    );
    if any(&[Retiring, BadSpec, FeBound, BeBound]) {
        if !intel_cpu {
            return Err(NoTopdown::Mismatch {
                events: "Intel PERF_METRICS",
                cpu,
            });
        }
        let level2 = all(&[HeavyOps, BrMispredict, FetchLat, MemBound]);
        return Ok(match cpu {
            Cpu::IntelIceLake => FormulaSet::IntelIceLake {
                uop_dropping: has(UopDropping),
                clears_count: has(ClearsCount),
            },
            Cpu::IntelGoldenCove => FormulaSet::IntelGoldenCove {
                uop_dropping: has(UopDropping),
                level2,
            },
            Cpu::IntelLionCove => FormulaSet::IntelLionCove { level2 },
            Cpu::IntelSkylake => {
                return Err(NoTopdown::CpuWithout(
                    "Skylake-class cores have no PERF_METRICS (topdown-* events)",
                ))
            }
            _ => FormulaSet::IntelPerfMetrics { level2 },
        });
    }
    if any(&[IdqUopsNotDelivered, UopsIssued, RetireSlots, RecoveryCycles]) {
        return match cpu {
            Cpu::IntelSkylake | Cpu::Unknown | Cpu::IntelOther => Ok(FormulaSet::IntelSkylake {
                smt_off: machine.smt_on == Some(false) && cpu == Cpu::IntelSkylake,
            }),
            _ => Err(NoTopdown::CpuWithout(
                "the Skylake-class top-down events are implemented for Skylake-class cores only",
            )),
        };
    }
    if any(&[
        AmdNoOpsFromFrontend,
        AmdBackendStalls,
        AmdOpsDispatched,
        AmdOpsRetired,
        AmdSmtContention,
    ]) {
        let (zen, width) = match cpu {
            Cpu::AmdZen4 => (4, 6),
            Cpu::AmdZen5 => (5, 8),
            Cpu::AmdZen6 => (6, 8),
            Cpu::AmdBeforeZen4 => {
                return Err(NoTopdown::CpuWithout(
                    "Zen 1-3 have no de_no_dispatch_per_slot events",
                ))
            }
            Cpu::Unknown | Cpu::AmdOther => {
                return Err(NoTopdown::CpuNeeded(
                    "AMD top-down needs the CPU: Zen 4 dispatches 6 slots per cycle, Zen 5 and 6 8 (a family 1Ah model outside the kernel's Zen 5 and Zen 6 ranges is an unknown AMD core)",
                ))
            }
            _ => return Err(NoTopdown::Mismatch { events: "AMD", cpu }),
        };
        let restarts = if width == 8 {
            AmdRestartsZen5
        } else {
            AmdRestartsZen4
        };
        return Ok(FormulaSet::AmdZen {
            zen,
            width,
            smt_contention: has(AmdSmtContention),
            level2: all(&[
                AmdNoOpsFromFrontendCmask(width),
                AmdBranchMispredicts,
                restarts,
                AmdNotComplete,
                AmdLoadNotComplete,
                AmdUcodeOps,
            ]),
        });
    }
    if any(&[
        StallSlotFrontend,
        StallSlotBackend,
        StallSlot,
        OpRetired,
        OpSpec,
    ]) {
        let slots = machine.arm_slots.or(cpu.arm_slots());
        let need_slots =
            || NoTopdown::CpuNeeded("Arm top-down needs the core's slots per cycle (caps/slots)");
        return match cpu {
            Cpu::ArmNeoverseN1 => Err(NoTopdown::CpuWithout(
                "Neoverse N1 has no STALL_SLOT events (only cycle-based STALL_FRONTEND/BACKEND)",
            )),
            Cpu::ArmNeoverseV1 if has(BrMisPred) => Ok(FormulaSet::ArmNeoverseV1 {
                slots: slots.ok_or_else(need_slots)?,
            }),
            Cpu::ArmNeoverseV1 => Err(NoTopdown::Missing {
                set: "Arm Neoverse V1".into(),
                missing: vec![perf_name(BrMisPred)],
            }),
            Cpu::ArmNeoverseN2 { r0p3_or_later } => Ok(FormulaSet::ArmNeoverseN2V2 {
                slots: slots.ok_or_else(need_slots)?,
                n2_workaround: !r0p3_or_later,
            }),
            Cpu::ArmNeoverseV2 => Ok(FormulaSet::ArmNeoverseN2V2 {
                slots: slots.ok_or_else(need_slots)?,
                n2_workaround: false,
            }),
            Cpu::ArmOther | Cpu::Unknown => Ok(FormulaSet::ArmSbsa {
                slots: slots.ok_or_else(need_slots)?,
            }),
            _ => Err(NoTopdown::Mismatch { events: "Arm", cpu }),
        };
    }
    Err(NoTopdown::NoEvents)
}

/// Level 1 (and level 2) fractions of slots. perf's formulas do not force them into [0, 1]
/// beyond the clamps they state: AMD's and Arm's need not sum to 1, and Skylake's back end
/// can go below 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Breakdown {
    pub retiring: f64,
    pub bad_speculation: f64,
    pub frontend_bound: f64,
    pub backend_bound: f64,
    /// AMD only, when `de_no_dispatch_per_slot.smt_contention` was counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smt_contention: Option<f64>,
    pub level2: Option<Level2>,
}

/// Level 2: each level-1 category split in two (AMD's nodes in the same places:
/// [`FormulaSet::level2_names`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Level2 {
    pub fetch_latency: f64,
    pub fetch_bandwidth: f64,
    pub branch_mispredicts: f64,
    pub machine_clears: f64,
    pub memory_bound: f64,
    pub core_bound: f64,
    pub heavy_operations: f64,
    pub light_operations: f64,
}

/// perf's `d_ratio`: 0 when the denominator is 0.
fn d_ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

impl Plan {
    /// The fractions of one frame from `sums`, the frame's summed deltas indexed like the
    /// names given to [`plan`]. `None` where perf's expression divides by zero outside
    /// `d_ratio` (it prints NaN: no metrics, or no slots, in the frame), and where the slots
    /// are zero for AMD too (perf's `d_ratio` gives 0 for every category there; a frame
    /// without cycles has no share to show).
    pub fn apply(&self, sums: &[u64]) -> Option<Breakdown> {
        let v = |role: TmaRole| -> f64 {
            self.columns
                .iter()
                .find(|&&(r, _)| r == role)
                .and_then(|&(_, i)| sums.get(i))
                .map_or(0.0, |&x| x as f64)
        };
        use TmaRole::*;
        match self.set {
            FormulaSet::IntelIceLake {
                uop_dropping,
                clears_count,
            } => {
                let sum = v(FeBound) + v(BadSpec) + v(Retiring) + v(BeBound);
                let slots = v(Slots);
                if sum == 0.0 || ((uop_dropping || clears_count) && slots == 0.0) {
                    return None;
                }
                let mut fe = v(FeBound) / sum;
                if uop_dropping {
                    fe -= v(UopDropping) / slots;
                }
                let mut be = v(BeBound) / sum;
                if clears_count {
                    be += 5.0 * v(ClearsCount) / slots;
                }
                let ret = v(Retiring) / sum;
                Some(level1_rest(fe, be, ret))
            }
            FormulaSet::IntelGoldenCove {
                uop_dropping,
                level2,
            } => {
                let sum = v(FeBound) + v(BadSpec) + v(Retiring) + v(BeBound);
                let slots = v(Slots);
                if sum == 0.0 || (uop_dropping && slots == 0.0) {
                    return None;
                }
                let dropped = if uop_dropping {
                    v(UopDropping) / slots
                } else {
                    0.0
                };
                let mut b = level1_rest(
                    v(FeBound) / sum - dropped,
                    v(BeBound) / sum,
                    v(Retiring) / sum,
                );
                if level2 {
                    b.level2 = Some(intel_level2(
                        &b,
                        v(FetchLat) / sum - dropped,
                        v(BrMispredict) / sum,
                        v(MemBound) / sum,
                        v(HeavyOps) / sum,
                    ));
                }
                Some(b)
            }
            FormulaSet::IntelLionCove { level2 } | FormulaSet::IntelPerfMetrics { level2 } => {
                let sum = v(FeBound) + v(BadSpec) + v(Retiring) + v(BeBound);
                if sum == 0.0 {
                    return None;
                }
                let mut b = Breakdown {
                    retiring: v(Retiring) / sum,
                    bad_speculation: v(BadSpec) / sum,
                    frontend_bound: v(FeBound) / sum,
                    backend_bound: v(BeBound) / sum,
                    smt_contention: None,
                    level2: None,
                };
                if level2 {
                    b.level2 = Some(intel_level2(
                        &b,
                        v(FetchLat) / sum,
                        v(BrMispredict) / sum,
                        v(MemBound) / sum,
                        v(HeavyOps) / sum,
                    ));
                }
                Some(b)
            }
            FormulaSet::IntelSkylake { .. } => {
                let slots = 4.0 * v(Cycles);
                if slots == 0.0 {
                    return None;
                }
                let recovery = 4.0 * v(RecoveryCycles);
                let fe = v(IdqUopsNotDelivered) / slots;
                Some(Breakdown {
                    retiring: v(RetireSlots) / slots,
                    bad_speculation: (v(UopsIssued) - v(RetireSlots) + recovery) / slots,
                    frontend_bound: fe,
                    backend_bound: 1.0 - fe - (v(UopsIssued) + recovery) / slots,
                    smt_contention: None,
                    level2: None,
                })
            }
            FormulaSet::AmdZen {
                width,
                smt_contention,
                level2,
                ..
            } => {
                // Each event scaled to the first group's time: × its cycles / the event's own
                // group's cycles (1 with one group). `None` where that group has no cycles.
                let first = |i: usize| sums.get(i).map_or(0.0, |&x| x as f64);
                let scaled = |role: TmaRole| -> Option<f64> {
                    let k = self.columns.iter().position(|&(r, _)| r == role);
                    let Some(k) = k.filter(|_| !self.group_cycles.is_empty()) else {
                        return Some(v(role));
                    };
                    let (own, reference) = (self.group_cycles[k], self.group_cycles[0]);
                    if own == reference {
                        return Some(v(role));
                    }
                    let c = first(own);
                    (c != 0.0).then(|| v(role) * first(reference) / c)
                };
                let w = f64::from(width);
                let slots = w * scaled(Cycles)?;
                if slots == 0.0 {
                    return None;
                }
                let no_ops = scaled(AmdNoOpsFromFrontend)?;
                let fe = no_ops / slots;
                let bs = (scaled(AmdOpsDispatched)? - scaled(AmdOpsRetired)?) / slots;
                let be = scaled(AmdBackendStalls)? / slots;
                let ret = scaled(AmdOpsRetired)? / slots;
                let smt = if smt_contention {
                    Some(scaled(AmdSmtContention)? / slots)
                } else {
                    None
                };
                let level2 = level2.then(|| -> Option<Level2> {
                    let restarts = scaled(if width == 8 {
                        AmdRestartsZen5
                    } else {
                        AmdRestartsZen4
                    })?;
                    let misp = scaled(AmdBranchMispredicts)?;
                    let latency = w * scaled(AmdNoOpsFromFrontendCmask(width))?;
                    let memory = d_ratio(scaled(AmdLoadNotComplete)?, scaled(AmdNotComplete)?);
                    let microcode = d_ratio(scaled(AmdUcodeOps)?, scaled(AmdOpsRetired)?);
                    Some(Level2 {
                        fetch_latency: latency / slots,
                        fetch_bandwidth: (no_ops - latency) / slots,
                        branch_mispredicts: d_ratio(bs * misp, misp + restarts),
                        machine_clears: d_ratio(bs * restarts, misp + restarts),
                        memory_bound: be * memory,
                        core_bound: be * (1.0 - memory),
                        heavy_operations: ret * microcode,
                        light_operations: ret * (1.0 - microcode),
                    })
                });
                Some(Breakdown {
                    retiring: ret,
                    bad_speculation: bs,
                    frontend_bound: fe,
                    backend_bound: be,
                    smt_contention: smt,
                    level2: level2.flatten(),
                })
            }
            FormulaSet::ArmSbsa { slots }
            | FormulaSet::ArmNeoverseV1 { slots }
            | FormulaSet::ArmNeoverseN2V2 { slots, .. } => {
                let cycles = v(Cycles);
                let total = f64::from(slots) * cycles;
                if total == 0.0 || v(OpSpec) == 0.0 {
                    return None;
                }
                let (mut fe_slots, mut stalled) = (v(StallSlotFrontend), v(StallSlot));
                if let FormulaSet::ArmNeoverseN2V2 {
                    n2_workaround: true,
                    ..
                } = self.set
                {
                    fe_slots -= cycles;
                    stalled -= cycles;
                }
                let retired = v(OpRetired) / v(OpSpec);
                let mut b = Breakdown {
                    retiring: retired * (1.0 - stalled / total),
                    bad_speculation: (1.0 - retired) * (1.0 - stalled / total),
                    frontend_bound: fe_slots / total,
                    backend_bound: v(StallSlotBackend) / total,
                    smt_contention: None,
                    level2: None,
                };
                if let FormulaSet::ArmNeoverseV1 { .. } = self.set {
                    // The V1 JSON writes 8 where sbsa writes #slots (V1 has 8).
                    let moved = 4.0 * v(BrMisPred) / cycles;
                    b.frontend_bound = v(StallSlotFrontend) / (cycles * 8.0) - moved;
                    b.bad_speculation =
                        (1.0 - retired) * (1.0 - v(StallSlot) / (cycles * 8.0)) + moved;
                }
                Some(b)
            }
        }
    }
}

/// Intel's level 1 with bad speculation `max(1 − (FE + BE + RET), 0)`.
fn level1_rest(fe: f64, be: f64, ret: f64) -> Breakdown {
    Breakdown {
        retiring: ret,
        bad_speculation: (1.0 - (fe + be + ret)).max(0.0),
        frontend_bound: fe,
        backend_bound: be,
        smt_contention: None,
        level2: None,
    }
}

/// Intel's level 2: each level-1 node's second child `max(0, parent − first child)`.
fn intel_level2(l1: &Breakdown, fetch_lat: f64, br_misp: f64, mem: f64, heavy: f64) -> Level2 {
    Level2 {
        fetch_latency: fetch_lat,
        fetch_bandwidth: (l1.frontend_bound - fetch_lat).max(0.0),
        branch_mispredicts: br_misp,
        machine_clears: (l1.bad_speculation - br_misp).max(0.0),
        memory_bound: mem,
        core_bound: (l1.backend_bound - mem).max(0.0),
        heavy_operations: heavy,
        light_operations: (l1.retiring - heavy).max(0.0),
    }
}
