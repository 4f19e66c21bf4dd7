//! Which event of a recording gives the widths (cycles) and which the colours (stalls).
//!
//! Recognised by name first (perf stores the names given on its command line, e.g.
//! `resource_stalls_any`), then by encoding: generic hardware events and the raw configs of
//! the presets ([`crate::presets`]). Raw configs mean different things on different
//! architectures (0x3c is unhalted cycles on Intel but STALL on ARM64), so the recording's
//! architecture is needed.

use crate::names::{TYPE_HARDWARE, TYPE_RAW};

/// Architecture of the machine that recorded the file (perf's HEADER_ARCH).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
    Other,
}

impl Arch {
    /// From perf's arch string (`x86_64`, `aarch64`, ...); unknown strings are `Other`.
    pub fn from_perf(arch: Option<&str>) -> Arch {
        match arch {
            Some("x86_64") | Some("i386") | Some("i686") => Arch::X86_64,
            Some("aarch64") | Some("arm64") => Arch::Aarch64,
            _ => Arch::Other,
        }
    }
}

/// The part an event plays in a CPI flame graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Cycles the core spent stalled: the colour.
    Stalls,
    /// Unhalted core cycles: the width.
    Cycles,
    Instructions,
}

/// What role detection looks at for one event.
#[derive(Clone, Copy, Debug)]
pub struct EventRef<'a> {
    pub type_: u32,
    pub config: u64,
    pub name: &'a str,
}

/// Raw x86 configs of stall events (the presets'): Intel RESOURCE_STALLS.ANY,
/// CYCLE_ACTIVITY.STALLS_TOTAL (event 0xa3 umask 4 cmask 4 = 0x0400_04a3),
/// UOPS_RETIRED.STALL_CYCLES, AMD Zen1 stalled-cycles-backend, AMD Zen4/5 ex_no_retire.all.
/// Not AMD's 0x287 (the kernel's stalled-cycles-frontend on Zen1): a front-end event is
/// not a share of cycles stalled in the back end, and is left to `--stalls`.
const X86_STALL_CONFIGS: [u64; 5] = [0x1a2, 0x0400_04a3, 0x0180_02c2, 0x187, 0x1bd6];
/// Raw x86 configs of unhalted cycles: Intel CPU_CLK_UNHALTED.THREAD_P, AMD ls_not_halted_cyc.
const X86_CYCLE_CONFIGS: [u64; 2] = [0x3c, 0x76];
/// ARM64 event numbers: STALL, STALL_BACKEND (not STALL_FRONTEND 0x23, a front-end event).
const ARM_STALL_CONFIGS: [u64; 2] = [0x3c, 0x24];
/// ARM64 CPU_CYCLES.
const ARM_CYCLE_CONFIGS: [u64; 1] = [0x11];

/// First PMU type the kernel hands out dynamically (`cpu`, `cpu_core`, `armv8_*` PMUs have
/// types from here on, or PERF_TYPE_RAW); their configs are raw encodings.
const FIRST_DYNAMIC_PMU_TYPE: u32 = 6;

/// The role of one event, if it has one.
pub fn role_of(event: EventRef<'_>, arch: Arch) -> Option<Role> {
    if let Some(role) = role_by_name(event.name) {
        return Some(role);
    }
    let raw = event.type_ == TYPE_RAW || event.type_ >= FIRST_DYNAMIC_PMU_TYPE;
    if event.type_ == TYPE_HARDWARE {
        return match event.config & 0xffff_ffff {
            0 | 9 => Some(Role::Cycles),
            1 => Some(Role::Instructions),
            // 8 is stalled-cycles-backend; 7, stalled-cycles-frontend, is not a stall share.
            8 => Some(Role::Stalls),
            _ => None,
        };
    }
    if !raw {
        return None;
    }
    let (stalls, cycles): (&[u64], &[u64]) = match arch {
        Arch::X86_64 => (&X86_STALL_CONFIGS, &X86_CYCLE_CONFIGS),
        Arch::Aarch64 => (&ARM_STALL_CONFIGS, &ARM_CYCLE_CONFIGS),
        Arch::Other => return None,
    };
    if stalls.contains(&event.config) {
        Some(Role::Stalls)
    } else if cycles.contains(&event.config) {
        Some(Role::Cycles)
    } else {
        None
    }
}

fn role_by_name(name: &str) -> Option<Role> {
    // perf appends modifiers (`cycles:u`, `cycles:ppp`); `cpu/.../` without name= is kept as
    // is and left to the encoding.
    let base = name.split(':').next().unwrap_or(name).to_ascii_lowercase();
    let stall_words = [
        "stall",
        "ex_no_retire",
        "cycles_no_execute",
        "cycles_no_dispatch",
    ];
    // Front-end events are not stall shares: `stalled-cycles-frontend`, ARM's
    // `stall_frontend`, AMD Zen1's `ic_fetch_stall.ic_stall_dq_empty` (0x287).
    let front_end = ["frontend", "front_end", "dq_empty"]
        .iter()
        .any(|w| base.contains(w));
    if stall_words.iter().any(|w| base.contains(w)) && !base.starts_with("cpu/") && !front_end {
        return Some(Role::Stalls);
    }
    match base.as_str() {
        "cycles" | "cpu-cycles" | "cpu_cycles" | "ls_not_halted_cyc" | "ref-cycles" => {
            Some(Role::Cycles)
        }
        "instructions" | "ex_ret_instr" => Some(Role::Instructions),
        _ if base.starts_with("inst_retired") => Some(Role::Instructions),
        _ if base.starts_with("cpu_clk_unhalted") => Some(Role::Cycles),
        _ => None,
    }
}

/// Which event plays which role, by name or index. `Roles<String>` holds event names, as
/// flags (`--stalls`, `--cycles`, `--instructions`) and `cpiflame record`'s notes give
/// them; `Roles` (of `usize`) the columns the loader chooses from them. Once a recording is
/// read, every output takes the roles as one `cpiflame_profile::Columns` instead (with the
/// width and the ratio cycles; this crate does not depend on `profile`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Roles<T = usize> {
    /// The event that gives the colour (stall cycles).
    pub stalls: Option<T>,
    /// The event that gives the width (unhalted cycles).
    pub cycles: Option<T>,
    /// The event that CPI divides by (retired instructions).
    pub instructions: Option<T>,
}

/// Finds the first stall, cycles and instructions event among `events`.
pub fn detect_roles(events: &[EventRef<'_>], arch: Arch) -> Roles {
    let mut roles = Roles::default();
    for (i, e) in events.iter().enumerate() {
        let slot = match role_of(*e, arch) {
            Some(Role::Stalls) => &mut roles.stalls,
            Some(Role::Cycles) => &mut roles.cycles,
            Some(Role::Instructions) => &mut roles.instructions,
            None => continue,
        };
        slot.get_or_insert(i);
    }
    roles
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(type_: u32, config: u64, name: &str) -> EventRef<'_> {
        EventRef {
            type_,
            config,
            name,
        }
    }

    #[test]
    fn seed_recipe_names_and_configs() {
        // The seed's pair, by name and by raw encoding alone.
        let named = [
            ev(4, 0x1a2, "resource_stalls_any"),
            ev(4, 0x3c, "cpu_clk_unhalted_thread_p"),
        ];
        let r = detect_roles(&named, Arch::X86_64);
        assert_eq!((r.stalls, r.cycles), (Some(0), Some(1)));
        let raw = [ev(4, 0x3c, "r3c"), ev(4, 0x1a2, "r1a2")];
        let r = detect_roles(&raw, Arch::X86_64);
        assert_eq!((r.stalls, r.cycles), (Some(1), Some(0)));
    }

    #[test]
    fn raw_configs_depend_on_architecture() {
        // 0x3c: CPU_CLK_UNHALTED.THREAD_P on Intel, STALL on ARM64.
        assert_eq!(
            role_of(ev(4, 0x3c, "r3c"), Arch::X86_64),
            Some(Role::Cycles)
        );
        assert_eq!(
            role_of(ev(8, 0x3c, "r3c"), Arch::Aarch64),
            Some(Role::Stalls)
        );
        assert_eq!(
            role_of(ev(8, 0x11, "r11"), Arch::Aarch64),
            Some(Role::Cycles)
        );
        assert_eq!(role_of(ev(4, 0x3c, "r3c"), Arch::Other), None);
    }

    #[test]
    fn every_events_md_encoding_is_recognised() {
        for c in [0x1a2, 0x0400_04a3, 0x0180_02c2, 0x187, 0x1bd6] {
            assert_eq!(
                role_of(ev(4, c, ""), Arch::X86_64),
                Some(Role::Stalls),
                "{c:#x}"
            );
        }
        for c in [0x3c, 0x76] {
            assert_eq!(
                role_of(ev(4, c, ""), Arch::X86_64),
                Some(Role::Cycles),
                "{c:#x}"
            );
        }
        // Hybrid Intel P-cores: the cpu_core PMU has a dynamic type.
        assert_eq!(
            role_of(ev(8, 0x0400_04a3, ""), Arch::X86_64),
            Some(Role::Stalls)
        );
    }

    /// Front-end events are no stall share: AMD Zen1's 0x287 (the kernel's
    /// stalled-cycles-frontend there), ARM's STALL_FRONTEND 0x23, the generic frontend
    /// event, and the same by name.
    #[test]
    fn front_end_events_are_not_stalls() {
        assert_eq!(role_of(ev(4, 0x287, ""), Arch::X86_64), None);
        assert_eq!(role_of(ev(8, 0x23, ""), Arch::Aarch64), None);
        assert_eq!(role_of(ev(0, 7, ""), Arch::X86_64), None);
        for name in [
            "stalled-cycles-frontend",
            "stall_frontend",
            "STALL_FRONTEND",
            "ic_fetch_stall.ic_stall_dq_empty",
        ] {
            assert_eq!(role_of(ev(4, 0, name), Arch::X86_64), None, "{name}");
        }
        // The back-end ones still are.
        assert_eq!(role_of(ev(8, 0x24, ""), Arch::Aarch64), Some(Role::Stalls));
        assert_eq!(role_of(ev(0, 8, ""), Arch::X86_64), Some(Role::Stalls));
    }

    #[test]
    fn preset_names_are_recognised() {
        for name in [
            "cycle_activity.stalls_total",
            "cycle_activity.cycles_no_dispatch",
            "cycle_activity.cycles_no_execute",
            "resource_stalls.any",
            "uops_retired.stall_cycles",
            "ic_fetch_stall.ic_stall_back_pressure",
            "ex_no_retire.all",
            "stall",
            "stall_backend",
        ] {
            assert_eq!(
                role_of(ev(4, 0, name), Arch::X86_64),
                Some(Role::Stalls),
                "{name}"
            );
        }
        for name in [
            "cpu_clk_unhalted.thread_p",
            "ls_not_halted_cyc",
            "cpu_cycles",
        ] {
            assert_eq!(
                role_of(ev(4, 0, name), Arch::X86_64),
                Some(Role::Cycles),
                "{name}"
            );
        }
        for name in ["inst_retired.any_p", "inst_retired", "ex_ret_instr"] {
            assert_eq!(
                role_of(ev(4, 0, name), Arch::X86_64),
                Some(Role::Instructions),
                "{name}"
            );
        }
        // cmask 64 instead of 4: not CYCLE_ACTIVITY.STALLS_TOTAL, no role.
        assert_eq!(role_of(ev(4, 0x4000_04a3, ""), Arch::X86_64), None);
    }

    #[test]
    fn generic_hardware_and_software_events() {
        assert_eq!(
            role_of(ev(0, 0, "cycles"), Arch::X86_64),
            Some(Role::Cycles)
        );
        assert_eq!(role_of(ev(0, 8, "x"), Arch::X86_64), Some(Role::Stalls));
        assert_eq!(
            role_of(ev(0, (4 << 32) | 1, "x"), Arch::X86_64),
            Some(Role::Instructions)
        );
        assert_eq!(role_of(ev(1, 0, "cpu-clock"), Arch::X86_64), None);
        assert_eq!(
            role_of(ev(0, 0, "cycles:u"), Arch::X86_64),
            Some(Role::Cycles)
        );
        assert_eq!(
            role_of(ev(0, 8, "stalled-cycles-backend"), Arch::X86_64),
            Some(Role::Stalls)
        );
    }
}
