//! This machine's events: the CPU and PMUs detected, the stall/cycles pair `record` uses by
//! default (the first preset that opens), and `cpiflame list`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use cpiflame_events::{discover_pmus, parse_event, presets, Presets, SYSFS_ROOT};
use cpiflame_record::EventConfig;

use crate::record::opens;

fn config(spec_text: &str) -> Result<EventConfig> {
    let spec = parse_event(spec_text).with_context(|| format!("preset {spec_text}"))?;
    let attr = spec
        .kind
        .resolve_in(Path::new(SYSFS_ROOT))
        .with_context(|| format!("preset {spec_text}: PMU not found"))?;
    Ok(EventConfig {
        type_: attr.type_,
        config: attr.config,
        config1: attr.config1,
        config2: attr.config2,
        name: spec.name,
        exclude_user: spec.exclude_user,
        exclude_kernel: spec.exclude_kernel,
        period: spec.period,
    })
}

fn machine_presets() -> Result<(String, Presets, Vec<String>)> {
    let cpu = cpiflame_events::detect().context("/proc/cpuinfo")?;
    let pmus = discover_pmus(Path::new(SYSFS_ROOT)).unwrap_or_default();
    let pmu_list: Vec<String> = pmus
        .list()
        .iter()
        .map(|p| match p.type_ {
            Some(t) => format!("{} (type {t})", p.name),
            None => p.name.clone(),
        })
        .collect();
    Ok((cpu.to_string(), presets(&cpu, &pmus), pmu_list))
}

/// The first preset pair of this CPU that opens here, with a line saying what it is.
pub fn default_pair(with_instructions: bool) -> Result<Option<(Vec<EventConfig>, String)>> {
    let (cpu, presets, _) = machine_presets()?;
    for candidate in &presets.candidates {
        let (Ok(stalls), Ok(cycles)) = (config(&candidate.stalls), config(&candidate.cycles))
        else {
            continue;
        };
        let mut events = vec![stalls, cycles];
        if with_instructions {
            if let Ok(i) = config(&presets.instructions) {
                events.push(i);
            }
        }
        if opens(&events).is_ok() {
            return Ok(Some((events, format!("{} on {cpu}", candidate.reason))));
        }
    }
    Ok(None)
}

/// `cpiflame list`: what was detected, what would be recorded and why, and every preset
/// with its encoding and whether it opens here.
pub fn list(out: &mut impl Write) -> Result<()> {
    let (cpu, presets, pmus) = machine_presets()?;
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
        let status = match (config(&c.stalls), config(&c.cycles)) {
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
            (Err(e), _) | (_, Err(e)) => format!("cannot encode: {e:#}"),
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
    match chosen {
        Some(i) => writeln!(
            out,
            "cpiflame record would use pair {}: {}",
            i + 1,
            presets.candidates[i].reason
        )?,
        None => {
            let clock = config("cpu-clock")?;
            let status = match opens(&[clock]) {
                Ok(()) => "opens".to_string(),
                Err(e) => format!("does not open either: {e}"),
            };
            writeln!(
                out,
                "cpiflame record would use cpu-clock alone (no stall/cycles pair opens here; the graph will have no stall colours); cpu-clock {status}"
            )?;
        }
    }
    Ok(())
}
