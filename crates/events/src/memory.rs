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
//! - AMD load latency (Zen 5 on; Linux 6.15, arch/x86/events/amd/ibs.c; perf's
//!   tools/perf/arch/x86/util/pmu.c and mem-events.c, tools/perf/Documentation/perf-mem.txt):
//!   where IBS has the load-latency filter (CPUID 8000_001B EAX bit 12, the kernel's
//!   IBS_CAPS_OPLDLAT) the kernel publishes `ibs_op/format/ldlat` = `config1:0-11` and
//!   `ibs_op/caps/ldlat` = `1`; perf then spells the event `ibs_op/ldlat=N/` and its default
//!   N is 0, which is no filter at all (the kernel filters only when config1's field is
//!   non-zero). The kernel refuses N outside 128..=2048 (EINVAL); it programs the hardware
//!   in steps of 128 and drops in its interrupt handler every op that is not a load that
//!   missed the data cache with a latency above N, so the threshold is exact to the cycle
//!   and only loads are sampled. It sets the op PMU's L3-miss-only and latency-enable bits
//!   itself (L3-miss-only on Zen 5 alone since commit 898138efc, erratum 1606): perf sets
//!   neither.
//!   Without the filter (Zen 4 and older) perf builds `ibs_op//` and ignores `--ldlat`;
//!   cpiflame refuses it instead, naming the flag, and never ignores it.
//! - ARM: SPE (`arm_spe_0`) delivers its records through the AUX area, which perf decodes
//!   into samples afterwards; cpiflame's recorder reads ordinary samples only, so SPE is
//!   listed and refused by name, with or without `--ldlat` (which perf would pass as SPE's
//!   `min_latency`, config2 bits 0-11 in drivers/perf/arm_spe_pmu.c): nothing records, so
//!   nothing is ignored.
//! - sample_type (tools/perf/util/evsel.c, `perf mem record` passes `-d -W`, `perf c2c
//!   record` also `--phys-data`): `-d` sets ADDR and DATA_SRC, `-W` sets WEIGHT_STRUCT on
//!   x86 (arch/x86/util/evsel.c) and WEIGHT elsewhere; PHYS_ADDR with `--phys-data`.

use crate::{abi, Cpu, Pmus, ResolvedEvent, Vendor};

/// PERF_SAMPLE_ADDR.
pub const SAMPLE_ADDR: u64 = abi::sample::ADDR;
/// PERF_SAMPLE_WEIGHT.
pub const SAMPLE_WEIGHT: u64 = abi::sample::WEIGHT;
/// PERF_SAMPLE_DATA_SRC.
pub const SAMPLE_DATA_SRC: u64 = abi::sample::DATA_SRC;
/// PERF_SAMPLE_PHYS_ADDR.
pub const SAMPLE_PHYS_ADDR: u64 = abi::sample::PHYS_ADDR;
/// PERF_SAMPLE_WEIGHT_STRUCT.
pub const SAMPLE_WEIGHT_STRUCT: u64 = abi::sample::WEIGHT_STRUCT;

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
    /// The one line refusing a flag this PMU cannot honour (`--ldlat` where AMD IBS has no
    /// load-latency filter, or a threshold it does not take): the recorder stops with it
    /// rather than record without what was asked.
    pub refuses_flag: Option<String>,
}

/// Every memory preset of this machine, best first, and what was looked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemPresets {
    pub presets: Vec<MemPreset>,
    /// The places that were looked at, for the error when nothing is there.
    pub looked_for: String,
}

/// The options of `record --mem`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemOptions {
    /// `--ldlat N`, the load-latency threshold in core cycles, when the user gave it.
    /// `None` is each PMU's own default, as perf's: [`DEFAULT_LDLAT`] on Intel (`ldlat`,
    /// config1 bits 0-15), no filter on AMD IBS.
    pub ldlat: Option<u32>,
    /// Also sample physical addresses (PERF_SAMPLE_PHYS_ADDR, `--phys-data`).
    pub phys_addr: bool,
}

/// AMD IBS's load-latency thresholds (arch/x86/events/amd/ibs.c refuses others).
pub const AMD_LDLAT: std::ops::RangeInclusive<u32> = 128..=2048;

/// Why `--ldlat` is refused whatever the PMU: no PMU takes more than 16 bits (Intel's
/// config1 bits 0-15; AMD IBS takes [`AMD_LDLAT`]), and a threshold of 0 takes nothing.
pub fn check_ldlat(ldlat: u32) -> Result<(), String> {
    if (1..=0xffff).contains(&ldlat) {
        Ok(())
    } else {
        Err(format!(
            "--ldlat {ldlat}: the load-latency threshold is 1 to 65535 cycles (Intel's config1 bits 0-15; AMD IBS takes 128 to 2048)"
        ))
    }
}

/// A sysfs `format/` field (`config1:0-11`, `config:16`): which attr word (0 config, 1
/// config1, 2 config2) and its lowest and highest bit. `None` for anything else (several
/// ranges, other words), which cpiflame does not encode.
fn parse_format(text: &str) -> Option<(u8, u32, u32)> {
    let (word, bits) = text.trim().split_once(':')?;
    let word = match word {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        _ => return None,
    };
    let (lo, hi) = match bits.split_once('-') {
        Some((lo, hi)) => (lo.parse().ok()?, hi.parse().ok()?),
        None => {
            let bit = bits.parse().ok()?;
            (bit, bit)
        }
    };
    (lo <= hi && hi < 64).then_some((word, lo, hi))
}

/// The IBS op event for an explicit `--ldlat N`: `ibs_op/ldlat=N/`, N placed as the PMU's
/// `format/ldlat` says, or the one line refusing the flag.
fn amd_ldlat_event(
    type_: u32,
    ldlat: u32,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<MemEvent, String> {
    let Some(format) = read("ibs_op/format/ldlat") else {
        return Err(format!(
            "--ldlat {ldlat}: AMD IBS on this CPU has no load-latency filter (ibs_op/format/ldlat missing; Zen 5 and later have it)"
        ));
    };
    let Some((word, lo, hi)) = parse_format(&format) else {
        return Err(format!(
            "--ldlat {ldlat}: ibs_op/format/ldlat is `{}`, a field cpiflame does not encode",
            format.trim()
        ));
    };
    if !AMD_LDLAT.contains(&ldlat) || u64::from(ldlat) >> (hi - lo + 1) != 0 {
        return Err(format!(
            "--ldlat {ldlat}: AMD IBS's load-latency filter takes 128 to 2048 cycles"
        ));
    }
    let value = u64::from(ldlat) << lo;
    let (config, config1) = match word {
        0 => (value, 0),
        1 => (0, value),
        _ => (0, 0),
    };
    let mut e = mem_event(
        // The kernel drops every op but loads above the threshold.
        MemOp::Loads,
        format!("ibs_op/ldlat={ldlat}/"),
        type_,
        config,
        config1,
        0,
    );
    if word == 2 {
        e.event.config2 = value;
    }
    Ok(e)
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
    let ldlat = options.ldlat.unwrap_or(DEFAULT_LDLAT);
    let loads_spec = format!("{pmu}/mem-loads,ldlat={ldlat}/P");
    let loads_event = mem_event(
        MemOp::Loads,
        loads_spec,
        type_,
        config,
        u64::from(ldlat),
        precise,
    );
    let mut load_group = Vec::new();
    let mut label = format!("Intel load latency (ldlat={ldlat})");
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
        refuses_flag: None,
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
                        refuses_flag: None,
                    });
                }
                Err(_) => {}
            }
        }
    }
    if matches!(cpu.vendor, Vendor::Amd) || other {
        looked.push("ibs_op".to_string());
        if let Some(type_) = pmus.type_of("ibs_op") {
            let sample_type = SAMPLE_ADDR | SAMPLE_DATA_SRC | SAMPLE_WEIGHT_STRUCT | phys;
            let filter = read("ibs_op/format/ldlat").is_some();
            let preset = match options.ldlat.map(|n| (n, amd_ldlat_event(type_, n, read))) {
                // perf's default on AMD: no filter, every op sampled.
                None => MemPreset {
                    label: format!(
                        "AMD IBS op sampling (loads and stores told apart by data source{})",
                        if filter {
                            "; --ldlat 128-2048 samples only loads above it"
                        } else {
                            ""
                        }
                    ),
                    pmu: "ibs_op".into(),
                    groups: vec![vec![mem_event(
                        MemOp::LoadsAndStores,
                        "ibs_op//".into(),
                        type_,
                        0,
                        0,
                        0,
                    )]],
                    sample_type,
                    no_exclude: true,
                    unsupported: None,
                    refuses_flag: None,
                },
                Some((n, Ok(event))) => MemPreset {
                    label: format!("AMD IBS op sampling, loads above {n} cycles (ldlat={n})"),
                    pmu: "ibs_op".into(),
                    groups: vec![vec![event]],
                    sample_type,
                    no_exclude: true,
                    unsupported: None,
                    refuses_flag: None,
                },
                Some((_, Err(why))) => MemPreset {
                    label: "AMD IBS op sampling".into(),
                    pmu: "ibs_op".into(),
                    groups: Vec::new(),
                    sample_type,
                    no_exclude: true,
                    unsupported: None,
                    refuses_flag: Some(why),
                },
            };
            presets.push(preset);
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
                refuses_flag: None,
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
                ldlat: Some(100),
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

    /// A Zen 5 `ibs_op` as Linux 6.15+ publishes it (arch/x86/events/amd/ibs.c: the format
    /// and caps files shown to IBS_CAPS_ZEN4 and IBS_CAPS_OPLDLAT parts).
    fn zen5_ibs_op() -> impl Fn(&str) -> Option<String> {
        sysfs(&[
            ("ibs_op/type", "11"),
            ("ibs_op/format/cnt_ctl", "config:19"),
            ("ibs_op/format/l3missonly", "config:16"),
            ("ibs_op/format/swfilt", "config2:0"),
            ("ibs_op/format/ldlat", "config1:0-11"),
            ("ibs_op/caps/zen4_ibs_extensions", "1"),
            ("ibs_op/caps/ldlat", "1"),
        ])
    }

    fn zen(
        model_family: u32,
        read: &dyn Fn(&str) -> Option<String>,
        ldlat: Option<u32>,
    ) -> MemPreset {
        let p = memory_presets(
            &cpuinfo("AuthenticAMD", model_family, 0x44),
            &pmus(&[("cpu", "4"), ("ibs_op", "11"), ("ibs_fetch", "10")]),
            read,
            MemOptions {
                ldlat,
                phys_addr: false,
            },
        );
        assert_eq!(p.presets.len(), 1);
        p.presets[0].clone()
    }

    #[test]
    fn zen5_ldlat_is_ibs_ops_config1_as_its_format_says() {
        // `perf mem record --ldlat 256` on Zen 5: `ibs_op/ldlat=256/`, config1 = 256 (the
        // kernel's format `config1:0-11`), config 0: the kernel sets the hardware's
        // threshold, enable and L3-miss-only bits itself.
        for n in [128, 130, 256, 2048] {
            let s = zen(0x1a, &zen5_ibs_op(), Some(n));
            assert_eq!(attrs(&s), vec![vec![(11, 0, u64::from(n), 0)]]);
            let e = &s.groups[0][0];
            assert_eq!(e.spec, format!("ibs_op/ldlat={n}/"));
            assert_eq!(e.op, MemOp::Loads);
            assert_eq!(e.event.config2, 0);
            assert!(!e.event.exclude_kernel && !e.event.exclude_guest);
            assert!(s.no_exclude && s.unsupported.is_none() && s.refuses_flag.is_none());
            assert_eq!(s.sample_type, X86_BITS);
            assert!(s.label.contains(&format!("ldlat={n}")), "{}", s.label);
        }
    }

    #[test]
    fn zen5_without_ldlat_has_no_filter_as_perf() {
        // perf's AMD default (perf_mem_events__loads_ldlat = 0): `ibs_op/ldlat=0/`, which
        // the kernel takes as no filter: the same attr as `ibs_op//`.
        let s = zen(0x1a, &zen5_ibs_op(), None);
        assert_eq!(attrs(&s), vec![vec![(11, 0, 0, 0)]]);
        assert_eq!(s.groups[0][0].op, MemOp::LoadsAndStores);
        assert!(s.refuses_flag.is_none());
        // `list` says the filter is there.
        assert!(s.label.contains("--ldlat 128-2048"), "{}", s.label);
    }

    #[test]
    fn zen5_ldlat_outside_the_kernels_range_is_one_line() {
        for n in [1, 127, 2049, 4095, 65535] {
            let s = zen(0x1a, &zen5_ibs_op(), Some(n));
            assert!(s.groups.is_empty());
            assert_eq!(
                s.refuses_flag.as_deref(),
                Some(
                    format!("--ldlat {n}: AMD IBS's load-latency filter takes 128 to 2048 cycles")
                        .as_str()
                )
            );
        }
        // A format cpiflame cannot place is refused, not guessed.
        let odd = sysfs(&[("ibs_op/format/ldlat", "config1:0-11,config2:3")]);
        let s = zen(0x1a, &odd, Some(256));
        let why = s.refuses_flag.unwrap();
        assert!(why.starts_with("--ldlat 256: ibs_op/format/ldlat is `config1:0-11,config2:3`"));
    }

    #[test]
    fn zen4_refuses_ldlat_by_name_and_keeps_no_filter_without_it() {
        // Zen 4 (family 0x19): IBS without IBS_CAPS_OPLDLAT, so no format/ldlat; perf would
        // record `ibs_op//` and ignore --ldlat.
        let zen4 = sysfs(&[
            ("ibs_op/format/cnt_ctl", "config:19"),
            ("ibs_op/format/l3missonly", "config:16"),
            ("ibs_op/caps/zen4_ibs_extensions", "1"),
        ]);
        let s = zen(0x19, &zen4, Some(200));
        assert!(s.groups.is_empty());
        assert_eq!(
            s.refuses_flag.as_deref(),
            Some("--ldlat 200: AMD IBS on this CPU has no load-latency filter (ibs_op/format/ldlat missing; Zen 5 and later have it)")
        );
        let s = zen(0x19, &zen4, None);
        assert_eq!(attrs(&s), vec![vec![(11, 0, 0, 0)]]);
        assert!(s.refuses_flag.is_none());
        assert!(!s.label.contains("--ldlat"), "{}", s.label);
    }

    #[test]
    fn intel_ldlat_default_and_explicit() {
        let read = sysfs(&[
            ("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("cpu/events/mem-stores", "event=0xd0,umask=0x82"),
        ]);
        let loads = |ldlat| {
            let p = memory_presets(
                &cpuinfo("GenuineIntel", 6, 0x55),
                &pmus(&[("cpu", "4")]),
                &read,
                MemOptions {
                    ldlat,
                    phys_addr: false,
                },
            );
            let e = p.presets[0].groups[0][0].clone();
            (e.spec, e.event.config1)
        };
        assert_eq!(loads(None), ("cpu/mem-loads,ldlat=30/P".into(), 30));
        assert_eq!(loads(Some(30)), ("cpu/mem-loads,ldlat=30/P".into(), 30));
        assert_eq!(loads(Some(3)), ("cpu/mem-loads,ldlat=3/P".into(), 3));
        assert_eq!(
            loads(Some(65535)),
            ("cpu/mem-loads,ldlat=65535/P".into(), 65535)
        );
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
        // With --ldlat too: the whole PMU is refused by name, so the flag is not dropped.
        let p = memory_presets(
            &arm(),
            &pmus(&[("armv8_pmuv3_0", "8"), ("arm_spe_0", "9")]),
            &sysfs(&[("arm_spe_0/format/min_latency", "config2:0-11")]),
            MemOptions {
                ldlat: Some(64),
                phys_addr: false,
            },
        );
        assert!(p.presets[0].unsupported.as_deref().unwrap().contains("AUX"));
        assert!(p.presets[0].groups.is_empty());
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
        assert_eq!(parse_format("config1:0-11\n"), Some((1, 0, 11)));
        assert_eq!(parse_format("config:16"), Some((0, 16, 16)));
        assert_eq!(parse_format("config2:0"), Some((2, 0, 0)));
        assert_eq!(parse_format("config3:0-3"), None);
        assert_eq!(parse_format("config1:11-0"), None);
        assert_eq!(parse_format("config1:0-64"), None);
        assert_eq!(parse_format("config1:0-3,8-11"), None);
    }
}
