//! Memory-access sampling presets (`cpiflame record --mem`): which PMU of this machine can
//! sample loads with their data address, data source and latency, and the attrs to open,
//! set as `perf mem record` / `perf c2c record` set them.
//!
//! Facts (read from the sources, not copied):
//! - Intel (tools/perf/arch/x86/util/mem-events.c): loads are `PMU/mem-loads,ldlat=N/P`,
//!   stores `PMU/mem-stores/P`; where the PMU publishes `mem-loads-aux` the loads are the
//!   group `{PMU/mem-loads-aux/,PMU/mem-loads,ldlat=N/}:P`, because the kernel
//!   (arch/x86/events/intel/core.c) refuses a load-latency event that samples DATA_SRC
//!   without that auxiliary event leading its group. perf calls a PMU capable when
//!   `PMU/events/mem-loads` exists, and the encodings are the kernel's aliases there
//!   (arch/x86/events/intel/core.c, the `EVENT_ATTR_STR` / `EVENT_ATTR_STR_HYBRID` lines
//!   named here):
//!   - loads `event=0xcd,umask=0x1,ldlat=3` on big cores from Sandy Bridge on (`mem_ld_snb`,
//!     `mem_ld_hsw`), `event=0xd0,umask=0x5,ldlat=3` on `cpu_atom` (`mem_ld_adl`);
//!   - stores `event=0xcd,umask=0x2` on Sandy / Ivy Bridge (`mem_st_snb`),
//!     `event=0xd0,umask=0x82` from Haswell to Ice Lake / Tiger Lake (`mem_st_hsw`),
//!     `event=0xcd,umask=0x2` again on Sapphire, Emerald and Granite Rapids (`mem_st_spr`,
//!     in `glc_events_attrs`) and on the hybrid parts' `cpu_core`, `event=0xd0,umask=0x6`
//!     on their `cpu_atom` (`mem_st_adl`: one string per PMU, atom's first);
//!   - the aux event `event=0x03,umask=0x82` (`mem_ld_aux`), published only where the
//!     kernel sets PMU_FL_MEM_LOADS_AUX (`mem_is_visible`): Sapphire and Emerald Rapids'
//!     `cpu` and Alder / Raptor Lake's `cpu_core`, not Granite Rapids.
//!
//!   `ldlat` is config1 bits 0-15 (the PMU's `format/ldlat`). `P` is the highest precise
//!   level the PMU allows: its `caps/max_precise`. Intel's event lists (perf's pmu-events
//!   JSON) name the same loads encoding MEM_TRANS_RETIRED.LOAD_LATENCY_GT_N: event 0xcd,
//!   umask 0x1, the threshold N in the load-latency MSR, which is what the kernel's `ldlat`
//!   term (config1) sets.
//! - AMD: perf's `mem-ldst` event is `ibs_op//`, the IBS op PMU with its dynamic type and
//!   config 0, not precise. IBS cannot filter by privilege level (the kernel's
//!   PERF_PMU_CAP_NO_EXCLUDE), so no exclude bit may be set. The kernel fills DATA_SRC,
//!   WEIGHT and ADDR of IBS op samples from Linux 6.1 on.
//! - ARM: SPE (`arm_spe_0`) delivers its records through the AUX area, which perf decodes
//!   into samples afterwards; cpiflame's recorder reads ordinary samples only, so SPE is
//!   listed and refused by name.
//! - sample_type (tools/perf/util/evsel.c, `perf mem record` passes `-d -W`, `perf c2c
//!   record` also `--phys-data`): `-d` sets ADDR and DATA_SRC, `-W` sets WEIGHT_STRUCT on
//!   x86 (arch/x86/util/evsel.c) and WEIGHT elsewhere; PHYS_ADDR with `--phys-data`.

use crate::{Cpu, Pmus, ResolvedEvent, Vendor};

/// PERF_SAMPLE_ADDR.
pub const SAMPLE_ADDR: u64 = 1 << 3;
/// PERF_SAMPLE_WEIGHT.
pub const SAMPLE_WEIGHT: u64 = 1 << 14;
/// PERF_SAMPLE_DATA_SRC.
pub const SAMPLE_DATA_SRC: u64 = 1 << 15;
/// PERF_SAMPLE_PHYS_ADDR.
pub const SAMPLE_PHYS_ADDR: u64 = 1 << 19;
/// PERF_SAMPLE_WEIGHT_STRUCT.
pub const SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

/// perf's default load-latency threshold (`perf mem record --ldlat`, `perf c2c record`).
pub const DEFAULT_LDLAT: u32 = 30;

/// What a memory event samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOp {
    /// Loads above the latency threshold.
    Loads,
    /// Retired stores.
    Stores,
    /// Every op (IBS): loads and stores are told apart by each sample's data source.
    LoadsAndStores,
    /// `mem-loads-aux`: leads the loads' group, as the kernel requires; not a memory event.
    Aux,
}

/// One event of a preset, with the spec perf would take for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemEvent {
    pub op: MemOp,
    /// The event as perf spells it (`cpu/mem-loads,ldlat=30/P`).
    pub spec: String,
    pub event: ResolvedEvent,
}

/// One way to sample memory accesses on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemPreset {
    /// What it is, in words.
    pub label: String,
    /// The PMU it uses.
    pub pmu: String,
    /// Its kernel groups, in order, each led by its first event.
    pub groups: Vec<Vec<MemEvent>>,
    /// The sample_type bits added to the recorder's own (ADDR, DATA_SRC, weight).
    pub sample_type: u64,
    /// The PMU refuses every exclude bit (IBS).
    pub no_exclude: bool,
    /// Why cpiflame cannot record with it although the PMU is here.
    pub unsupported: Option<String>,
}

/// Every memory preset of this machine, best first, and what was looked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemPresets {
    pub presets: Vec<MemPreset>,
    /// The places that were looked at, for the error when nothing is there.
    pub looked_for: String,
}

/// The options of `record --mem`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemOptions {
    /// Load-latency threshold in core cycles (Intel's `ldlat`, config1 bits 0-15).
    pub ldlat: u32,
    /// Also sample physical addresses (PERF_SAMPLE_PHYS_ADDR, `--phys-data`).
    pub phys_addr: bool,
}

impl Default for MemOptions {
    fn default() -> MemOptions {
        MemOptions {
            ldlat: DEFAULT_LDLAT,
            phys_addr: false,
        }
    }
}

/// Why `--ldlat` is refused: the field is 16 bits and a threshold of 0 takes nothing.
pub fn check_ldlat(ldlat: u32) -> Result<(), String> {
    if (1..=0xffff).contains(&ldlat) {
        Ok(())
    } else {
        Err(format!(
            "--ldlat {ldlat}: the load-latency threshold is 1 to 65535 cycles (config1 bits 0-15)"
        ))
    }
}

/// One PMU's alias text (`event=0xcd,umask=0x1,ldlat=3`) as Intel's core PMU format lays it
/// out: event config 0-7, umask 8-15, edge 18, inv 23, cmask 24-31, ldlat config1 0-15.
/// Returns (config, config1).
fn encode_intel_alias(text: &str) -> Result<(u64, u64), String> {
    let (mut config, mut config1) = (0u64, 0u64);
    for term in text.trim().split(',').filter(|t| !t.is_empty()) {
        let (key, value) = term.split_once('=').unwrap_or((term, "1"));
        let value = value.trim();
        let value = match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => value.parse(),
        }
        .map_err(|_| format!("term {term}: not a number"))?;
        let (shift, bits, word) = match key.trim() {
            "event" => (0, 8, &mut config),
            "umask" => (8, 8, &mut config),
            "edge" => (18, 1, &mut config),
            "inv" => (23, 1, &mut config),
            "cmask" => (24, 8, &mut config),
            "ldlat" => (0, 16, &mut config1),
            other => return Err(format!("term {other} is not one cpiflame encodes")),
        };
        if value >> bits != 0 {
            return Err(format!("term {term}: wider than its {bits} bits"));
        }
        *word |= value << shift;
    }
    Ok((config, config1))
}

fn mem_event(
    op: MemOp,
    spec: String,
    type_: u32,
    config: u64,
    config1: u64,
    precise_ip: u8,
) -> MemEvent {
    MemEvent {
        op,
        event: ResolvedEvent {
            type_,
            config,
            config1,
            config2: 0,
            rate: None,
            precise_ip,
            exclude_user: false,
            exclude_kernel: false,
            exclude_hv: false,
            exclude_host: false,
            exclude_guest: false,
            exclude_idle: false,
            sample_read: false,
            pinned: false,
            exclusive: false,
            name: spec.clone(),
        },
        spec,
    }
}

/// The Intel preset of `pmu` (`cpu`, `cpu_core`, `cpu_atom`), or why it has none.
fn intel_preset(
    pmu: &str,
    type_: u32,
    read: &dyn Fn(&str) -> Option<String>,
    options: MemOptions,
    x86_weight: u64,
) -> Result<MemPreset, String> {
    let alias = |name: &str| read(&format!("{pmu}/events/{name}"));
    let loads = alias("mem-loads").ok_or_else(|| format!("{pmu}/events/mem-loads is absent"))?;
    // perf's `P`: the most precise level the PMU takes (3 where caps/ is missing: perf's
    // own first try).
    let precise = read(&format!("{pmu}/caps/max_precise"))
        .and_then(|t| t.trim().parse::<u8>().ok())
        .unwrap_or(3)
        .min(3);
    let at = |what: &str, e: String| format!("{pmu}/events/{what}: {e}");
    let (config, _) = encode_intel_alias(&loads).map_err(|e| at("mem-loads", e))?;
    let ldlat = u64::from(options.ldlat);
    let loads_spec = format!("{pmu}/mem-loads,ldlat={}/P", options.ldlat);
    let loads_event = mem_event(MemOp::Loads, loads_spec, type_, config, ldlat, precise);
    let mut load_group = Vec::new();
    let mut label = format!("Intel load latency (ldlat={})", options.ldlat);
    if let Some(aux) = alias("mem-loads-aux") {
        let (aux_config, _) = encode_intel_alias(&aux).map_err(|e| at("mem-loads-aux", e))?;
        load_group.push(mem_event(
            MemOp::Aux,
            format!("{pmu}/mem-loads-aux/"),
            type_,
            aux_config,
            0,
            precise,
        ));
        label.push_str(" led by mem-loads-aux");
    }
    load_group.push(loads_event);
    let mut groups = vec![load_group];
    if let Some(stores) = alias("mem-stores") {
        let (config, _) = encode_intel_alias(&stores).map_err(|e| at("mem-stores", e))?;
        groups.push(vec![mem_event(
            MemOp::Stores,
            format!("{pmu}/mem-stores/P"),
            type_,
            config,
            0,
            precise,
        )]);
        label.push_str(" and precise stores");
    }
    label.push_str(&format!(" on {pmu}"));
    // perf's default for events without a `p`, `u`, `k` or `H` modifier: the guest is
    // excluded (`P` leaves it so).
    for e in groups.iter_mut().flatten() {
        e.event.exclude_guest = true;
    }
    Ok(MemPreset {
        label,
        pmu: pmu.to_string(),
        groups,
        sample_type: SAMPLE_ADDR | SAMPLE_DATA_SRC | x86_weight,
        no_exclude: false,
        unsupported: None,
    })
}

/// This machine's memory presets, best first. `read` reads a file relative to
/// `/sys/bus/event_source/devices` (`cpu/events/mem-loads`), `None` when absent.
pub fn memory_presets(
    cpu: &Cpu,
    pmus: &Pmus,
    read: &dyn Fn(&str) -> Option<String>,
    options: MemOptions,
) -> MemPresets {
    let phys = if options.phys_addr {
        SAMPLE_PHYS_ADDR
    } else {
        0
    };
    let mut presets = Vec::new();
    let mut looked = Vec::new();
    // The vendor says which PMUs to look for; an unknown vendor looks for all of them.
    let other = matches!(cpu.vendor, Vendor::Other(_));
    if matches!(cpu.vendor, Vendor::Intel) || other {
        // Hybrid parts: P-cores first (the preset), then the E-cores' own.
        for pmu in ["cpu_core", "cpu", "cpu_atom"] {
            looked.push(format!("{pmu}/events/mem-loads"));
            let Some(type_) = pmus.type_of(pmu) else {
                continue;
            };
            match intel_preset(pmu, type_, read, options, SAMPLE_WEIGHT_STRUCT) {
                Ok(mut p) => {
                    p.sample_type |= phys;
                    presets.push(p);
                }
                Err(why) if pmus.has(pmu) && read(&format!("{pmu}/events/mem-loads")).is_some() => {
                    presets.push(MemPreset {
                        label: format!("Intel load latency on {pmu}"),
                        pmu: pmu.to_string(),
                        groups: Vec::new(),
                        sample_type: 0,
                        no_exclude: false,
                        unsupported: Some(why),
                    });
                }
                Err(_) => {}
            }
        }
    }
    if matches!(cpu.vendor, Vendor::Amd) || other {
        looked.push("ibs_op".to_string());
        if let Some(type_) = pmus.type_of("ibs_op") {
            presets.push(MemPreset {
                label: "AMD IBS op sampling (loads and stores told apart by data source)".into(),
                pmu: "ibs_op".into(),
                groups: vec![vec![mem_event(
                    MemOp::LoadsAndStores,
                    "ibs_op//".into(),
                    type_,
                    0,
                    0,
                    0,
                )]],
                sample_type: SAMPLE_ADDR | SAMPLE_DATA_SRC | SAMPLE_WEIGHT_STRUCT | phys,
                no_exclude: true,
                unsupported: None,
            });
        }
    }
    if matches!(cpu.vendor, Vendor::Arm { .. }) || other {
        looked.push("arm_spe*".to_string());
        for pmu in pmus.list().iter().filter(|p| p.name.starts_with("arm_spe")) {
            presets.push(MemPreset {
                label: format!("ARM SPE on {}", pmu.name),
                pmu: pmu.name.clone(),
                groups: Vec::new(),
                sample_type: SAMPLE_ADDR | SAMPLE_DATA_SRC | SAMPLE_WEIGHT | phys,
                no_exclude: false,
                unsupported: Some(
                    "SPE records come through the AUX area, which cpiflame's recorder does not decode (perf mem record does)"
                        .into(),
                ),
            });
        }
    }
    MemPresets {
        presets,
        looked_for: looked.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_cpuinfo;
    use std::collections::HashMap;

    fn cpuinfo(vendor: &str, family: u32, model: u32) -> Cpu {
        parse_cpuinfo(&format!(
            "processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\nstepping\t: 1\n"
        ))
        .unwrap()
    }

    fn arm() -> Cpu {
        parse_cpuinfo("processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd0c\nCPU revision\t: 1\n").unwrap()
    }

    fn sysfs(files: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = files
            .iter()
            .map(|(k, v)| (k.to_string(), format!("{v}\n")))
            .collect();
        move |p: &str| map.get(p).cloned()
    }

    fn pmus(entries: &[(&str, &str)]) -> Pmus {
        Pmus::from_entries(entries.iter().map(|(n, t)| (*n, Some(*t))))
    }

    /// (type, config, config1, precise_ip) of each event of each group.
    fn attrs(p: &MemPreset) -> Vec<Vec<(u32, u64, u64, u8)>> {
        p.groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|e| {
                        let r = &e.event;
                        (r.type_, r.config, r.config1, r.precise_ip)
                    })
                    .collect()
            })
            .collect()
    }

    const X86_BITS: u64 = SAMPLE_ADDR | SAMPLE_DATA_SRC | SAMPLE_WEIGHT_STRUCT;

    #[test]
    fn skylake_loads_with_ldlat_and_precise_stores_on_cpu() {
        // The kernel's Skylake aliases (arch/x86/events/intel/core.c: mem_ld_hsw,
        // mem_st_hsw), max_precise 3.
        let read = sysfs(&[
            ("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("cpu/events/mem-stores", "event=0xd0,umask=0x82"),
            ("cpu/caps/max_precise", "3"),
        ]);
        let p = memory_presets(
            &cpuinfo("GenuineIntel", 6, 0x5e),
            &pmus(&[("cpu", "4"), ("software", "1")]),
            &read,
            MemOptions::default(),
        );
        assert_eq!(p.presets.len(), 1);
        let s = &p.presets[0];
        assert_eq!(
            attrs(s),
            vec![vec![(4, 0x1cd, 30, 3)], vec![(4, 0x82d0, 0, 3)]]
        );
        assert_eq!(s.groups[0][0].spec, "cpu/mem-loads,ldlat=30/P");
        assert_eq!(s.groups[1][0].spec, "cpu/mem-stores/P");
        assert_eq!(s.sample_type, X86_BITS);
        assert!(!s.no_exclude && s.unsupported.is_none());
    }

    #[test]
    fn sapphire_rapids_loads_are_led_by_mem_loads_aux_and_stores_are_0xcd_0x2() {
        // The kernel's Sapphire Rapids `cpu` aliases (arch/x86/events/intel/core.c:
        // glc_events_attrs = mem_ld_hsw, mem_st_spr, mem_ld_aux; the aux one visible as
        // PMU_FL_MEM_LOADS_AUX is set for Sapphire and Emerald Rapids).
        let read = sysfs(&[
            ("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("cpu/events/mem-loads-aux", "event=0x03,umask=0x82"),
            ("cpu/events/mem-stores", "event=0xcd,umask=0x2"),
            ("cpu/caps/max_precise", "3"),
        ]);
        let p = memory_presets(
            &cpuinfo("GenuineIntel", 6, 0x8f),
            &pmus(&[("cpu", "4"), ("software", "1")]),
            &read,
            MemOptions::default(),
        );
        assert_eq!(p.presets.len(), 1);
        let s = &p.presets[0];
        assert_eq!(
            attrs(s),
            vec![
                vec![(4, 0x8203, 0, 3), (4, 0x1cd, 30, 3)],
                vec![(4, 0x2cd, 0, 3)]
            ]
        );
        assert_eq!(s.groups[0][0].op, MemOp::Aux);
        assert_eq!(s.groups[0][0].spec, "cpu/mem-loads-aux/");
        assert_eq!(s.groups[0][1].spec, "cpu/mem-loads,ldlat=30/P");
        assert_eq!(s.groups[1][0].spec, "cpu/mem-stores/P");
        assert_eq!(s.sample_type, X86_BITS);
        // Granite Rapids: the same aliases without the aux event (no PMU_FL_MEM_LOADS_AUX).
        let read = sysfs(&[
            ("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("cpu/events/mem-stores", "event=0xcd,umask=0x2"),
            ("cpu/caps/max_precise", "3"),
        ]);
        let p = memory_presets(
            &cpuinfo("GenuineIntel", 6, 0xad),
            &pmus(&[("cpu", "4")]),
            &read,
            MemOptions::default(),
        );
        assert_eq!(
            attrs(&p.presets[0]),
            vec![vec![(4, 0x1cd, 30, 3)], vec![(4, 0x2cd, 0, 3)]]
        );
    }

    #[test]
    fn icelake_takes_the_ldlat_asked_for_and_phys_addr() {
        // Ice Lake's `cpu` aliases: icl_events_attrs = mem_ld_hsw, mem_st_hsw.
        let read = sysfs(&[
            ("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("cpu/events/mem-stores", "event=0xd0,umask=0x82"),
            ("cpu/caps/max_precise", "3"),
        ]);
        let p = memory_presets(
            &cpuinfo("GenuineIntel", 6, 0x7e),
            &pmus(&[("cpu", "4")]),
            &read,
            MemOptions {
                ldlat: 100,
                phys_addr: true,
            },
        );
        assert_eq!(attrs(&p.presets[0])[0], vec![(4, 0x1cd, 100, 3)]);
        assert_eq!(p.presets[0].sample_type, X86_BITS | SAMPLE_PHYS_ADDR);
    }

    #[test]
    fn alder_lake_loads_are_led_by_mem_loads_aux_on_cpu_core() {
        // The kernel's Alder Lake hybrid aliases (arch/x86/events/intel/core.c: mem_ld_adl,
        // mem_st_adl, one string per PMU, atom's first; mem_ld_aux_adl on the big cores).
        let read = sysfs(&[
            ("cpu_core/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("cpu_core/events/mem-loads-aux", "event=0x03,umask=0x82"),
            ("cpu_core/events/mem-stores", "event=0xcd,umask=0x2"),
            ("cpu_core/caps/max_precise", "3"),
            ("cpu_atom/events/mem-loads", "event=0xd0,umask=0x5,ldlat=3"),
            ("cpu_atom/events/mem-stores", "event=0xd0,umask=0x6"),
            ("cpu_atom/caps/max_precise", "3"),
        ]);
        let p = memory_presets(
            &cpuinfo("GenuineIntel", 6, 0x97),
            &pmus(&[("cpu_core", "8"), ("cpu_atom", "10")]),
            &read,
            MemOptions::default(),
        );
        assert_eq!(p.presets.len(), 2);
        assert_eq!(p.presets[0].pmu, "cpu_core");
        assert_eq!(
            attrs(&p.presets[0]),
            vec![
                vec![(8, 0x8203, 0, 3), (8, 0x1cd, 30, 3)],
                vec![(8, 0x2cd, 0, 3)]
            ]
        );
        assert_eq!(p.presets[0].groups[0][0].op, MemOp::Aux);
        assert_eq!(p.presets[1].pmu, "cpu_atom");
        assert_eq!(
            attrs(&p.presets[1]),
            vec![vec![(10, 0x5d0, 30, 3)], vec![(10, 0x6d0, 0, 3)]]
        );
    }

    #[test]
    fn amd_zen_samples_ibs_op_without_exclude_bits() {
        let p = memory_presets(
            &cpuinfo("AuthenticAMD", 0x19, 0x21),
            &pmus(&[("cpu", "4"), ("ibs_op", "11"), ("ibs_fetch", "10")]),
            &sysfs(&[]),
            MemOptions::default(),
        );
        assert_eq!(p.presets.len(), 1);
        let s = &p.presets[0];
        assert_eq!(attrs(s), vec![vec![(11, 0, 0, 0)]]);
        assert_eq!(s.groups[0][0].op, MemOp::LoadsAndStores);
        assert!(s.no_exclude);
        let e = &s.groups[0][0].event;
        assert!(!e.exclude_kernel && !e.exclude_guest && !e.exclude_user);
        assert_eq!(s.sample_type, X86_BITS);
    }

    #[test]
    fn arm_spe_is_found_and_refused_by_name() {
        let p = memory_presets(
            &arm(),
            &pmus(&[("armv8_pmuv3_0", "8"), ("arm_spe_0", "9")]),
            &sysfs(&[]),
            MemOptions::default(),
        );
        assert_eq!(p.presets.len(), 1);
        assert_eq!(p.presets[0].pmu, "arm_spe_0");
        assert!(p.presets[0].unsupported.as_deref().unwrap().contains("AUX"));
    }

    #[test]
    fn no_pmu_no_preset_and_what_was_looked_for() {
        let p = memory_presets(
            &cpuinfo("GenuineIntel", 6, 0x55),
            &pmus(&[("software", "1"), ("tracepoint", "2")]),
            &sysfs(&[]),
            MemOptions::default(),
        );
        assert!(p.presets.is_empty());
        assert_eq!(
            p.looked_for,
            "cpu_core/events/mem-loads, cpu/events/mem-loads, cpu_atom/events/mem-loads"
        );
        // A core PMU without the alias (no PEBS load latency) has no preset either.
        let p = memory_presets(
            &cpuinfo("AuthenticAMD", 0x17, 0x31),
            &pmus(&[("cpu", "4")]),
            &sysfs(&[]),
            MemOptions::default(),
        );
        assert!(p.presets.is_empty());
        assert_eq!(p.looked_for, "ibs_op");
    }

    #[test]
    fn ldlat_bounds_and_alias_errors() {
        assert!(check_ldlat(30).is_ok());
        assert!(check_ldlat(65535).is_ok());
        assert!(check_ldlat(0).unwrap_err().contains("--ldlat 0"));
        assert!(check_ldlat(65536).is_err());
        assert_eq!(
            encode_intel_alias("event=0x0b,umask=0x10,ldlat=3"),
            Ok((0x100b, 3))
        );
        assert!(encode_intel_alias("event=0x1cd")
            .unwrap_err()
            .contains("8 bits"));
        assert!(encode_intel_alias("frontend=0x1").is_err());
    }
}
