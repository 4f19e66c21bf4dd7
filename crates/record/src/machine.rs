//! This machine's events: the CPU and PMUs detected, the stall/cycles pair a recording uses
//! by default (the first preset of this CPU that opens here), and the listing `cpiflame
//! list` prints of every candidate and why it was or was not chosen.

use std::io::{self, Write};
use std::path::Path;

use cpiflame_events::memory::{memory_presets, MemOptions, MemPreset, MemPresets};
use cpiflame_events::{
    devices_dir, discover_pmus, presets, resolve_event, Presets, ResolvedEvent, SYSFS_ROOT,
};

use crate::{probe, probe_sampling, Group, MemorySampling};

/// What was detected here.
struct Machine {
    cpu: String,
    presets: Presets,
    /// PMUs as `name (type N)`.
    pmus: Vec<String>,
}

fn detect() -> io::Result<Machine> {
    let cpu = cpiflame_events::detect()
        .map_err(|e| io::Error::new(e.kind(), format!("/proc/cpuinfo: {e}")))?;
    let pmus = discover_pmus(Path::new(SYSFS_ROOT)).unwrap_or_default();
    let pmu_list = pmus
        .list()
        .iter()
        .map(|p| match p.type_ {
            Some(t) => format!("{} (type {t})", p.name),
            None => p.name.clone(),
        })
        .collect();
    Ok(Machine {
        cpu: cpu.to_string(),
        presets: presets(&cpu, &pmus),
        pmus: pmu_list,
    })
}

fn resolve(spec: &str) -> Result<ResolvedEvent, String> {
    resolve_event(spec, Path::new(SYSFS_ROOT)).map_err(|e| e.to_string())
}

/// Whether `events` open here as one group; `Err` says why not.
fn opens(events: &[ResolvedEvent]) -> Result<(), String> {
    probe(events).map_err(|e| e.to_string())
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

/// The first preset pair (stalls, cycles, and instructions when asked) of this CPU that
/// opens here, with a line saying what it is; `None` when none does (no PMU).
pub fn default_pair(with_instructions: bool) -> io::Result<Option<(Vec<ResolvedEvent>, String)>> {
    let m = detect()?;
    for candidate in &m.presets.candidates {
        let (Ok(stalls), Ok(cycles)) = (resolve(&candidate.stalls), resolve(&candidate.cycles))
        else {
            continue;
        };
        let mut events = vec![stalls, cycles];
        if with_instructions {
            if let Ok(i) = resolve(&m.presets.instructions) {
                events.push(i);
            }
        }
        if opens(&events).is_ok() {
            return Ok(Some((events, format!("{} on {}", candidate.reason, m.cpu))));
        }
    }
    Ok(None)
}

/// `cpiflame list`: what was detected, what would be recorded and why, and every preset
/// with its encoding and whether it opens here.
pub fn write_list(out: &mut impl Write) -> io::Result<()> {
    let Machine { cpu, presets, pmus } = detect()?;
    writeln!(out, "CPU: {cpu}")?;
    writeln!(
        out,
        "PMUs: {}",
        if pmus.is_empty() {
            "none found under /sys/bus/event_source/devices".to_string()
        } else {
            pmus.join(", ")
        }
    )?;
    if let Some(row) = presets.row {
        writeln!(out, "Preset row: {row}")?;
    }
    for note in &presets.notes {
        writeln!(out, "Note: {note}")?;
    }
    writeln!(out)?;
    let mut chosen = None;
    writeln!(out, "Candidate pairs (stalls, cycles), in order:")?;
    for (i, c) in presets.candidates.iter().enumerate() {
        let status = match (resolve(&c.stalls), resolve(&c.cycles)) {
            (Ok(s), Ok(cy)) => {
                let encodings = format!(
                    "type {} config {:#x} / type {} config {:#x}",
                    s.type_, s.config, cy.type_, cy.config
                );
                match opens(&[s, cy]) {
                    Ok(()) => {
                        chosen.get_or_insert(i);
                        format!("{encodings}: opens")
                    }
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
        writeln!(out, "  (none known for this CPU)")?;
    }
    if !presets.instructions.is_empty() {
        writeln!(out, "--with-instructions adds: {}", presets.instructions)?;
    }
    writeln!(out)?;
    write_memory_list(out)?;
    writeln!(out)?;
    match chosen {
        Some(i) => writeln!(
            out,
            "cpiflame record would use pair {}: {}",
            i + 1,
            presets.candidates[i].reason
        ),
        None => {
            let status = match resolve("cpu-clock").and_then(|clock| opens(&[clock])) {
                Ok(()) => "opens".to_string(),
                Err(e) => format!("does not open either: {e}"),
            };
            writeln!(
                out,
                "cpiflame record would use cpu-clock alone (no stall/cycles pair opens here; the graph will have no stall colours); cpu-clock {status}"
            )
        }
    }
}

/// The memory-sampling part of `cpiflame list`: each preset with its events, encodings and
/// whether it opens here.
fn write_memory_list(out: &mut impl Write) -> io::Result<()> {
    let found = detect_memory(MemOptions::default())?;
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
        let status = match memory_opens(p) {
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
