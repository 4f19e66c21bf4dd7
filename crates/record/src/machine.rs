//! This machine's events (or a saved machine's: `list --root DIR`): the CPU and PMUs
//! detected, what a recording uses by default (stalls, else CPI, else cycles, else cpu-clock:
//! [`Presets::choose`]), and the listing `cpiflame list` prints of every candidate and why
//! it was or was not chosen.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use cpiflame_events::memory::{memory_presets, MemOptions, MemPreset, MemPresets};
use cpiflame_events::{
    devices_dir, discover_pmus, has_hardware_pmu, presets, resolve_event, Choice, Cpu, Pmus,
    Presets, ResolvedEvent, Vendor, SYSFS_ROOT,
};

use crate::topdown::{decide, TopdownGroup, TopdownInput};
use crate::{probe, probe_sampling, Group, MemorySampling};

/// A machine to decide for: this one (its `/proc` and `/sys`, events probed with
/// perf_event_open), or a saved description under a root directory laid out as the kernel
/// lays out the live files (`DIR/proc/cpuinfo`, `DIR/sys/bus/event_source/devices/<pmu>/
/// {type,format/,events/,caps/,cpus}`), where nothing is opened: an event counts as opening
/// when it encodes against that PMU's `format/` and the machine has a hardware PMU (or the
/// event is a software one).
pub struct Machine {
    pub cpu: Cpu,
    pub pmus: Pmus,
    pub presets: Presets,
    /// Where `/sys` is for this machine.
    sysfs: PathBuf,
    /// What the top-down decision reads besides the CPU and PMUs.
    topdown_input: TopdownInput,
    /// A saved root: nothing is opened.
    saved: bool,
}

impl Machine {
    /// This machine.
    pub fn here() -> io::Result<Machine> {
        Machine::at(Path::new("/proc/cpuinfo"), Path::new(SYSFS_ROOT), false)
    }

    /// A saved machine under `root`. A missing `proc/cpuinfo` is an error naming it; a
    /// missing `sys/bus/event_source/devices` is a machine without PMUs.
    pub fn saved(root: &Path) -> io::Result<Machine> {
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("--root {}: not a directory", root.display()),
            ));
        }
        Machine::at(&root.join("proc/cpuinfo"), &root.join("sys"), true)
    }

    fn at(cpuinfo: &Path, sysfs: &Path, saved: bool) -> io::Result<Machine> {
        let cpu = cpiflame_events::cpu::detect_from(cpuinfo)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", cpuinfo.display())))?;
        let pmus = discover_pmus(sysfs).unwrap_or_default();
        let read = |p: &Path| std::fs::read_to_string(p).ok();
        let proc_dir = cpuinfo.parent().unwrap_or(Path::new("/proc"));
        let arm_variant = read(cpuinfo).and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("CPU variant"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
        });
        let arm_slots = pmus.arm_pmus().first().and_then(|p| {
            let text = read(&devices_dir(sysfs).join(&p.name).join("caps/slots"))?;
            u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
        });
        let topdown_input = TopdownInput {
            arm_slots,
            arm_variant: arm_variant.unwrap_or(0),
            nmi_watchdog: read(&proc_dir.join("sys/kernel/nmi_watchdog"))
                .and_then(|t| t.trim().parse::<u32>().ok())
                .map(|v| v != 0),
            level: 1,
        };
        Ok(Machine {
            topdown_input,
            presets: presets(&cpu, &pmus),
            cpu,
            pmus,
            sysfs: sysfs.to_path_buf(),
            saved,
        })
    }

    fn resolve(&self, spec: &str) -> Result<ResolvedEvent, String> {
        resolve_event(spec, &self.sysfs).map_err(|e| e.to_string())
    }

    /// Whether `specs` open here as one group; `Err` says why not. On a saved root: whether
    /// they encode there and the root has a PMU for them.
    fn opens(&self, specs: &[String]) -> Result<(), String> {
        let events = specs
            .iter()
            .map(|s| self.resolve(s))
            .collect::<Result<Vec<_>, _>>()?;
        if !self.saved {
            return probe(&events).map_err(|e| e.to_string());
        }
        // PERF_TYPE_SOFTWARE opens anywhere; anything else needs a hardware PMU.
        let software = |e: &ResolvedEvent| e.type_ == cpiflame_events::abi::attr_type::SOFTWARE;
        if events.iter().all(software) || has_hardware_pmu(&self.cpu, &self.pmus) {
            Ok(())
        } else {
            Err("no hardware PMU in this root".to_string())
        }
    }

    /// What `record` records here by default: [`Presets::choose`] with this machine's
    /// perf_event_open (or a saved root's encodings).
    pub fn choose(&self, with_instructions: bool) -> Choice {
        self.presets
            .choose(&self.cpu, &self.pmus, with_instructions, &mut |specs| {
                self.opens(specs)
            })
    }

    /// The group `record --topdown` opens here, or why there is none (one line).
    pub fn topdown(&self) -> Result<TopdownGroup, String> {
        self.topdown_at(1)
    }

    /// The group(s) `record --topdown --td-level LEVEL` opens here, or why there are none.
    pub fn topdown_at(&self, level: u8) -> Result<TopdownGroup, String> {
        let input = TopdownInput {
            level,
            ..self.topdown_input
        };
        decide(&self.cpu, &self.pmus, input)
    }

    /// The events of `choice`, resolved to open.
    pub fn resolve_choice(&self, choice: &Choice) -> io::Result<Vec<ResolvedEvent>> {
        choice
            .events
            .iter()
            .map(|s| {
                self.resolve(s)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
            })
            .collect()
    }

    /// PMUs as `name (type N)`.
    fn pmu_list(&self) -> Vec<String> {
        self.pmus
            .list()
            .iter()
            .map(|p| match p.type_ {
                Some(t) => format!("{} (type {t})", p.name),
                None => p.name.clone(),
            })
            .collect()
    }

    /// `list --json`: the CPU, the PMUs and what `record` would choose, as one object.
    pub fn to_json(&self, choice: &Choice) -> serde_json::Value {
        let cpu = &self.cpu;
        let mut c = serde_json::json!({
            "vendor": vendor_name(&cpu.vendor),
            "family": cpu.family,
            "model": cpu.model,
            "name": cpu.code_name(),
            "model_name": cpu.model_name,
            "description": cpu.to_string(),
        });
        if let Vendor::Arm { implementer, part } = cpu.vendor {
            c["implementer"] = implementer.into();
            c["part"] = part.into();
        }
        let topdown = self.topdown();
        serde_json::json!({
            "cpu": c,
            "topdown": topdown.as_ref().ok().map(|g| serde_json::json!({
                "level": g.level,
                "events": g.events,
                "leader": g.leader,
                "sampler": g.sampler,
                "formulas": g.formulas,
                "notes": g.notes,
            })),
            "topdown_why": topdown.as_ref().err(),
            "pmus": self.pmus.list().iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            "record": {
                "mode": choice.mode.as_str(),
                "events": choice.events,
                "pmu": choice.pmu,
                "why": choice.why,
                "refused": choice.refused,
            },
            "row": self.presets.row,
            "notes": self.presets.notes,
        })
    }
}

fn vendor_name(v: &Vendor) -> &str {
    match v {
        Vendor::Intel => "intel",
        Vendor::Amd => "amd",
        Vendor::Arm { .. } => "arm",
        Vendor::Other(name) => name,
    }
}

/// This machine's memory-sampling presets.
fn detect_memory(options: MemOptions) -> io::Result<MemPresets> {
    let cpu = cpiflame_events::detect()
        .map_err(|e| io::Error::new(e.kind(), format!("/proc/cpuinfo: {e}")))?;
    let pmus = discover_pmus(Path::new(SYSFS_ROOT)).unwrap_or_default();
    let dir = devices_dir(Path::new(SYSFS_ROOT));
    let read = |rel: &str| std::fs::read_to_string(dir.join(rel)).ok();
    Ok(memory_presets(&cpu, &pmus, &read, options))
}

/// A memory preset's events, kernel groups and sample_type additions, as the recorder
/// takes them.
pub struct MemoryEvents {
    pub events: Vec<ResolvedEvent>,
    pub groups: Vec<Group>,
    pub sampling: MemorySampling,
    /// The preset's label.
    pub label: String,
}

impl MemoryEvents {
    pub(crate) fn of(preset: &MemPreset) -> MemoryEvents {
        MemoryEvents {
            events: preset
                .groups
                .iter()
                .flatten()
                .map(|e| e.event.clone())
                .collect(),
            groups: preset
                .groups
                .iter()
                .map(|g| Group {
                    len: g.len(),
                    // perf describes its `{aux,loads}:P` group in GROUP_DESC.
                    described: g.len() > 1,
                })
                .collect(),
            sampling: MemorySampling {
                sample_type: preset.sample_type,
                no_exclude: preset.no_exclude,
            },
            label: preset.label.clone(),
        }
    }
}

/// Whether every group of `preset` opens here (with its memory sample bits).
fn memory_opens(preset: &MemPreset) -> Result<(), String> {
    if let Some(why) = preset.unsupported.as_ref().or(preset.refuses_flag.as_ref()) {
        return Err(why.clone());
    }
    let m = MemoryEvents::of(preset);
    for g in &preset.groups {
        let events: Vec<ResolvedEvent> = g.iter().map(|e| e.event.clone()).collect();
        probe_sampling(&events, Some(m.sampling)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Why `record --mem` does not record here: one line each.
#[derive(Debug)]
pub enum MemoryRefusal {
    /// A flag the memory PMU cannot honour (`--ldlat` where AMD IBS has no load-latency
    /// filter): refused, never dropped.
    Flag(String),
    /// No memory-sampling PMU here, or none that opens.
    NoPmu(String),
}

/// The first memory preset that opens here; `Err`: one line naming the flag that preset
/// cannot honour, or saying what was looked for and why nothing is usable. Never a fallback.
pub fn memory_events(options: MemOptions) -> io::Result<Result<MemoryEvents, MemoryRefusal>> {
    let found = detect_memory(options)?;
    let mut refusals = Vec::new();
    for preset in &found.presets {
        // The flag is refused before the PMU is probed: a later preset would not sample
        // what the user asked for either, and a usage error comes first.
        if let Some(why) = &preset.refuses_flag {
            return Ok(Err(MemoryRefusal::Flag(why.clone())));
        }
        match memory_opens(preset) {
            Ok(()) => return Ok(Ok(MemoryEvents::of(preset))),
            Err(why) => refusals.push(format!("{}: {why}", preset.label)),
        }
    }
    Ok(Err(MemoryRefusal::NoPmu(if refusals.is_empty() {
        format!(
            "no memory-sampling PMU here (looked for {} under {}); memory-access sampling needs Intel PEBS load latency, AMD IBS or ARM SPE, which most VMs do not expose",
            found.looked_for,
            devices_dir(Path::new(SYSFS_ROOT)).display()
        )
    } else {
        format!("no memory-sampling PMU opens here: {}", refusals.join("; "))
    })))
}

/// What `record` records here by default, resolved to open, with the choice that says
/// what and why.
pub fn default_events(with_instructions: bool) -> io::Result<(Choice, Vec<ResolvedEvent>)> {
    let m = Machine::here()?;
    let choice = m.choose(with_instructions);
    let events = m.resolve_choice(&choice)?;
    Ok((choice, events))
}

/// `cpiflame list [--root DIR]`: what was detected, what would be recorded and why, and
/// every preset with its encoding and whether it opens (on a saved root: whether it
/// encodes there; nothing is opened).
pub fn write_list(out: &mut impl Write, root: Option<&Path>) -> io::Result<()> {
    let m = match root {
        Some(dir) => Machine::saved(dir)?,
        None => Machine::here()?,
    };
    let choice = m.choose(false);
    let presets = &m.presets;
    writeln!(out, "CPU: {}", m.cpu)?;
    let pmus = m.pmu_list();
    writeln!(
        out,
        "PMUs: {}",
        if pmus.is_empty() {
            format!("none found under {}", devices_dir(&m.sysfs).display())
        } else {
            pmus.join(", ")
        }
    )?;
    if let Some(dir) = root {
        writeln!(
            out,
            "Saved machine: {} (nothing is opened: an event counts as opening where it encodes against the root's PMU)",
            dir.display()
        )?;
    }
    if let Some(row) = presets.row {
        writeln!(out, "Preset row: {row}")?;
    }
    for note in &presets.notes {
        writeln!(out, "Note: {note}")?;
    }
    writeln!(out)?;
    writeln!(out, "Candidate pairs (stalls, cycles), in order:")?;
    for (i, c) in presets.candidates.iter().enumerate() {
        let specs = [c.stalls.clone(), c.cycles.clone()];
        let status = match (m.resolve(&c.stalls), m.resolve(&c.cycles)) {
            (Ok(s), Ok(cy)) => {
                let encodings = format!(
                    "type {} config {:#x} / type {} config {:#x}",
                    s.type_, s.config, cy.type_, cy.config
                );
                match m.opens(&specs) {
                    Ok(()) => format!("{encodings}: opens"),
                    Err(e) => format!("{encodings}: does not open: {e}"),
                }
            }
            (Err(e), _) | (_, Err(e)) => format!("cannot encode: {e}"),
        };
        writeln!(out, "  {}. {}", i + 1, c.reason)?;
        writeln!(out, "     --stalls {}", c.stalls)?;
        writeln!(out, "     --cycles {}", c.cycles)?;
        writeln!(out, "     {status}")?;
    }
    if presets.candidates.is_empty() {
        writeln!(
            out,
            "  (none: {})",
            presets
                .no_stalls
                .as_deref()
                .unwrap_or("no stall event known for this CPU")
        )?;
    }
    writeln!(
        out,
        "Without a stall event (and with --with-instructions): {}",
        presets.instructions
    )?;
    writeln!(out)?;
    write_memory_list(out, &m)?;
    writeln!(out)?;
    writeln!(
        out,
        "cpiflame record would record {} ({}): {}",
        choice.events.join(", "),
        choice.mode.as_str(),
        choice.why
    )?;
    for r in &choice.refused {
        writeln!(out, "  not chosen: {r}")?;
    }
    writeln!(out)?;
    match m.topdown() {
        Ok(g) => {
            writeln!(
                out,
                "cpiflame record --topdown would open (level {}, {}): {}",
                g.level,
                g.formulas,
                g.spec()
            )?;
            writeln!(out, "  sampler: {}", g.sampler)?;
            for n in &g.notes {
                writeln!(out, "  note: {n}")?;
            }
        }
        Err(why) => writeln!(out, "cpiflame record --topdown: {why}")?,
    }
    Ok(())
}

/// `cpiflame list --json [--root DIR]`.
pub fn write_list_json(out: &mut impl Write, root: Option<&Path>) -> io::Result<()> {
    let m = match root {
        Some(dir) => Machine::saved(dir)?,
        None => Machine::here()?,
    };
    let choice = m.choose(false);
    writeln!(out, "{}", m.to_json(&choice))
}

/// The memory-sampling part of `cpiflame list`: each preset with its events, encodings and
/// whether it opens here.
fn write_memory_list(out: &mut impl Write, m: &Machine) -> io::Result<()> {
    let found = if m.saved {
        let dir = devices_dir(&m.sysfs);
        let read = |rel: &str| std::fs::read_to_string(dir.join(rel)).ok();
        memory_presets(&m.cpu, &m.pmus, &read, MemOptions::default())
    } else {
        detect_memory(MemOptions::default())?
    };
    writeln!(out, "Memory-sampling presets (record --mem), in order:")?;
    let mut chosen = None;
    for (i, p) in found.presets.iter().enumerate() {
        writeln!(out, "  {}. {}", i + 1, p.label)?;
        for e in p.groups.iter().flatten() {
            let r = &e.event;
            writeln!(
                out,
                "     {}: type {} config {:#x} config1 {:#x} precise_ip {}",
                e.spec, r.type_, r.config, r.config1, r.precise_ip
            )?;
        }
        if !p.groups.is_empty() {
            writeln!(out, "     sample_type adds {:#x}", p.sample_type)?;
        }
        let status = match if m.saved {
            p.unsupported.clone().map_or(Ok(()), Err)
        } else {
            memory_opens(p)
        } {
            Ok(()) => {
                chosen.get_or_insert(i);
                "opens".to_string()
            }
            Err(e) => format!("does not open: {e}"),
        };
        writeln!(out, "     {status}")?;
    }
    if found.presets.is_empty() {
        writeln!(
            out,
            "  (none: no memory-sampling PMU here; looked for {})",
            found.looked_for
        )?;
    }
    match chosen {
        Some(i) => writeln!(out, "cpiflame record --mem would use preset {}", i + 1),
        None => writeln!(out, "cpiflame record --mem refuses to run here"),
    }
}
