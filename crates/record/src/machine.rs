//! This machine's events: the CPU and PMUs detected, the stall/cycles pair a recording uses
//! by default (the first preset of this CPU that opens here), and the listing `cpiflame
//! list` prints of every candidate and why it was or was not chosen.

use std::io::{self, Write};
use std::path::Path;

use cpiflame_events::{discover_pmus, presets, resolve_event, Presets, ResolvedEvent, SYSFS_ROOT};

use crate::probe;

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
