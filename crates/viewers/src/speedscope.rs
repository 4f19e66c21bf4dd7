//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`, shipped
//! in the `speedscope` npm package as `dist/release/file-format-schema.json`).
//!
//! What maps to what:
//!
//! - One sampled profile per thread (`comm (pid/tid): EVENT`), its samples in time order,
//!   weighted by the width event's periods (unit `none`: events counted), or by wall time
//!   (on-CPU, runnable and blocked nanoseconds, unit `nanoseconds`) in a recording with
//!   off-CPU data, where time without a stack or on-CPU sample is weight on the one frame
//!   the CPI graph puts it on under the thread (`[blocked]`, `[runnable]`, `[on-CPU, not
//!   sampled]`): a thread's profile weighs its wall time.
//! - Beside it, where the recording has a stall event, a profile of the same thread weighted
//!   by stall cycles (`comm (pid/tid): stall cycles (EVENT)`): speedscope colours frames by
//!   name, never by a metric, so the stall share is a second profile to compare with.
//! - Frames by name and source file, with the lowest line the samples hit in them
//!   (speedscope tells frames apart by name, file and line: one line per function keeps a
//!   function one frame, as `report` counts it).
//! - Folded text (no times): a profile per command, its stacks in the file's order.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::Recorded;

/// The speedscope file of `recorded`, as JSON.
pub fn write(recorded: &Recorded) -> Vec<u8> {
    // Frames by (name, file): the lowest line seen.
    let mut frame_ids: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    let mut frames: Vec<(&str, Option<&str>, Option<u32>)> = Vec::new();
    let mut frame_of: Vec<usize> = Vec::with_capacity(recorded.frames.len());
    for frame in &recorded.frames {
        let key = (frame.name.as_str(), frame.file.as_deref());
        let id = *frame_ids.entry(key).or_insert_with(|| {
            frames.push((key.0, key.1, None));
            frames.len() - 1
        });
        if let Some(line) = frame.line {
            let slot = &mut frames[id].2;
            *slot = Some(slot.map_or(line, |l: u32| l.min(line)));
        }
        frame_of.push(id);
    }
    let stacks: Vec<Vec<usize>> = recorded
        .stacks
        .iter()
        .map(|s| {
            s.iter()
                .filter_map(|&f| frame_of.get(f as usize).copied())
                .collect()
        })
        .collect();

    let width = recorded.width_columns();
    let (unit, width_name) = match recorded.wall {
        Some(_) => ("nanoseconds", "wall time".to_string()),
        None => (
            "none",
            recorded
                .roles
                .cycles
                .and_then(|c| recorded.columns.get(c))
                .cloned()
                .unwrap_or_default(),
        ),
    };
    let stalls = recorded.roles.stalls.map(|c| c as u32);
    let stall_name = recorded
        .roles
        .stalls
        .and_then(|c| recorded.columns.get(c))
        .cloned()
        .unwrap_or_default();
    // Per thread: the width samples and the stall samples, in time order.
    let mut per_thread: Vec<[(Vec<usize>, Vec<u64>); 2]> =
        vec![Default::default(); recorded.threads.len()];
    for s in &recorded.samples {
        let which = if width.contains(&s.column) {
            0
        } else if Some(s.column) == stalls {
            1
        } else {
            continue;
        };
        if s.weight == 0 {
            continue;
        }
        if let Some(t) = per_thread.get_mut(s.thread as usize) {
            t[which].0.push(s.stack as usize);
            t[which].1.push(s.weight);
        }
    }
    let mut profiles = Vec::new();
    let mut heaviest = (0u64, 0usize);
    for (thread, sampled) in recorded.threads.iter().zip(&per_thread) {
        let label = recorded.thread_label(thread);
        for (which, (stack_ids, weights)) in sampled.iter().enumerate() {
            if weights.is_empty() {
                continue;
            }
            let total = weights.iter().fold(0u64, |a, &w| a.saturating_add(w));
            let name = match which {
                0 => format!("{label}: {width_name}"),
                _ => format!("{label}: stall cycles ({stall_name})"),
            };
            if which == 0 && total > heaviest.0 {
                heaviest = (total, profiles.len());
            }
            let samples: Vec<&Vec<usize>> = stack_ids
                .iter()
                .map(|&s| stacks.get(s).unwrap_or(&EMPTY))
                .collect();
            profiles.push(json!({
                "type": "sampled",
                "name": name,
                "unit": if which == 0 { unit } else { "none" },
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }));
        }
    }
    let frames: Vec<Value> = frames
        .iter()
        .map(|(name, file, line)| {
            let mut f = json!({ "name": name });
            if let Some(file) = file {
                f["file"] = json!(file);
            }
            if let Some(line) = line {
                f["line"] = json!(line);
            }
            f
        })
        .collect();
    let name = recorded
        .file
        .file_name()
        .map_or_else(|| "-".into(), |n| n.to_string_lossy());
    let file = json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "exporter": concat!("cpiflame ", env!("CARGO_PKG_VERSION")),
        "name": name,
        "activeProfileIndex": heaviest.1,
        "shared": { "frames": frames },
        "profiles": profiles,
    });
    // A Value of strings and numbers always serialises.
    serde_json::to_vec(&file).unwrap_or_default()
}

static EMPTY: Vec<usize> = Vec::new();
