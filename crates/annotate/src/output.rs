//! The annotated functions as text and as JSON.

use std::io::Write;

use cpiflame_profile::summary::topdown_cell;
use cpiflame_profile::topdown::Breakdown;
use serde_json::{json, Value};

use crate::model::{ColdPart, Function};

/// The line a non-precise event's annotation starts with.
pub fn skid_note(event: &str) -> String {
    format!(
        "note: {event} is not precise (precise_ip 0): samples skid past the instruction that caused them; :pp/:ppp (PEBS) or IBS narrows it"
    )
}

/// The line that points from a function to its cold part, annotated apart.
pub fn cold_note(f: &Function, part: &ColdPart) -> String {
    format!(
        "note: GCC moved part of {} out of line: {} has {} samples more (self weight {}), annotated apart as perf does (SYMBOL {})",
        f.name, part.name, part.samples, part.period, part.name
    )
}

/// The functions as text: a header, the instructions (hottest marked `>`), the source lines.
pub fn write_text(functions: &[Function], out: &mut dyn Write) -> std::io::Result<()> {
    for (n, f) in functions.iter().enumerate() {
        if n > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{} [{}]: {} samples of {}, self weight {}",
            f.name, f.module, f.samples, f.event, f.period
        )?;
        if f.skids {
            writeln!(out, "{}", skid_note(&f.event))?;
        }
        if let Some(part) = &f.cold_part {
            writeln!(out, "{}", cold_note(f, part))?;
        }
        let pct = |v: Option<f64>| v.map_or("      ".to_string(), |v| format!("{v:6.2}"));
        let cpi = |v: Option<f64>| v.map_or("      ".to_string(), |v| format!("{v:6.2}"));
        let mut head = String::from("    share");
        if f.has_stalls {
            head.push_str("  stall%");
        }
        if f.has_cpi {
            head.push_str("     CPI");
        }
        // The top-down column: the largest level-1 category, as `report` shows it.
        let td = |sums: &[u64]| {
            f.topdown(sums)
                .map(|b| format!("  {:>8}", topdown_cell(b)))
                .unwrap_or_default()
        };
        if let Some(whole) = f.topdown(&f.sums) {
            writeln!(out, "top-down: {}", topdown_text(whole))?;
            head.push_str("  top-down");
        }
        writeln!(out, "{head}  address           instruction")?;
        let hot = hottest(f.instructions.iter().map(|i| i.weights.period));
        for (k, i) in f.instructions.iter().enumerate() {
            let mark = if Some(k) == hot { '>' } else { ' ' };
            let mut row = format!("{mark}  {}", pct(f.share(&i.weights)));
            if f.has_stalls {
                row.push_str(&format!("  {}", pct(f.stall_share(&i.weights))));
            }
            if f.has_cpi {
                row.push_str(&format!("  {}", cpi(f.cpi(&i.weights))));
            }
            row.push_str(&td(&i.weights.sums));
            let text = i.text.as_deref().unwrap_or("");
            let line = i
                .frames
                .first()
                .and_then(|s| {
                    Some(format!(
                        "  {}:{}",
                        short(s.line.file.as_deref()?),
                        s.line.line?
                    ))
                })
                .unwrap_or_default();
            let row = format!("{row}  {:>16x}: {text:<40}{line}", i.address);
            writeln!(out, "{}", row.trim_end())?;
        }
        if !f.lines.is_empty() {
            writeln!(out, "source lines:")?;
            let hot = hottest(f.lines.iter().map(|l| l.weights.period));
            for (k, l) in f.lines.iter().enumerate() {
                let mark = if Some(k) == hot { '>' } else { ' ' };
                let mut row = format!("{mark}  {}", pct(f.share(&l.weights)));
                if f.has_stalls {
                    row.push_str(&format!("  {}", pct(f.stall_share(&l.weights))));
                }
                if f.has_cpi {
                    row.push_str(&format!("  {}", cpi(f.cpi(&l.weights))));
                }
                row.push_str(&td(&l.weights.sums));
                let inlined = if l.inlined.is_empty() {
                    String::new()
                } else {
                    format!("  (inlined: {})", l.inlined.join(" <- "))
                };
                let source = l
                    .source
                    .as_deref()
                    .map_or(String::new(), |s| format!("  | {}", s.trim()));
                writeln!(out, "{row}  {}:{}{inlined}{source}", l.file, l.line)?;
            }
        }
    }
    Ok(())
}

/// A function's whole top-down split in words: `retiring 50.0%, bad speculation 9.4%, ...`.
fn topdown_text(b: Option<Breakdown>) -> String {
    let Some(b) = b else {
        return "none (no slots in its samples)".to_string();
    };
    let parts = [
        ("retiring", b.retiring),
        ("bad speculation", b.bad_speculation),
        ("front-end bound", b.frontend_bound),
        ("back-end bound", b.backend_bound),
    ];
    parts
        .iter()
        .map(|(name, v)| format!("{name} {:.1}%", v * 100.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The index of the largest non-zero value.
fn hottest(values: impl Iterator<Item = u64>) -> Option<usize> {
    values
        .enumerate()
        .filter(|&(_, v)| v > 0)
        .max_by_key(|&(i, v)| (v, std::cmp::Reverse(i)))
        .map(|(i, _)| i)
}

/// A path's file name.
fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The functions as text ([`write_text`]) or JSON ([`write_json`]), `out` flushed.
pub fn write(functions: &[Function], json: bool, out: &mut dyn Write) -> std::io::Result<()> {
    match json {
        true => write_json(functions, out)?,
        false => write_text(functions, out)?,
    }
    out.flush()
}

/// The functions as pretty JSON and a newline (see [`to_json`]).
pub fn write_json(functions: &[Function], out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &to_json(functions))?;
    writeln!(out)
}

/// The functions as JSON: an array of the schema in docs/cli.md.
/// A percentage as the JSON's fraction (0 to 1, as `report --json` gives shares).
fn fraction(percent: Option<f64>) -> Option<f64> {
    percent.map(|p| p / 100.0)
}

/// `object` with a `topdown` key (report's object, `null` where the formulas give none)
/// when `f` has top-down formulas; as it is without.
fn with_topdown(f: &Function, sums: &[u64], mut object: Value) -> Value {
    if let (Some(b), Some(map)) = (f.topdown(sums), object.as_object_mut()) {
        map.insert(
            "topdown".into(),
            serde_json::to_value(b).unwrap_or(Value::Null),
        );
    }
    object
}

pub fn to_json(functions: &[Function]) -> Value {
    let functions: Vec<Value> = functions
        .iter()
        .map(|f| {
            let instructions: Vec<Value> = f
                .instructions
                .iter()
                .map(|i| {
                    let line = i.frames.first().map(|s| &s.line);
                    with_topdown(
                        f,
                        &i.weights.sums,
                        json!({
                            "address": format!("{:x}", i.address),
                            "samples": i.weights.samples,
                            "share": fraction(f.share(&i.weights)),
                            "stall_share": fraction(f.stall_share(&i.weights)),
                            "cpi": f.cpi(&i.weights),
                            "file": line.and_then(|l| l.file.clone()),
                            "line": line.and_then(|l| l.line),
                            "text": i.text,
                            "frames": i.frames.iter().map(|f| json!({
                                "function": f.function,
                                "inlined": f.inlined,
                                "file": f.line.file,
                                "line": f.line.line,
                            })).collect::<Vec<Value>>(),
                        }),
                    )
                })
                .collect();
            let lines: Vec<Value> = f
                .lines
                .iter()
                .map(|l| {
                    with_topdown(
                        f,
                        &l.weights.sums,
                        json!({
                            "file": l.file,
                            "line": l.line,
                            "samples": l.weights.samples,
                            "share": fraction(f.share(&l.weights)),
                            "stall_share": fraction(f.stall_share(&l.weights)),
                            "cpi": f.cpi(&l.weights),
                            "source": l.source,
                        }),
                    )
                })
                .collect();
            with_topdown(
                f,
                &f.sums,
                json!({
                    "function": f.name,
                    "module": f.module,
                    "samples": f.samples,
                    "cold_part": f.cold_part.as_ref().map(|p| json!({
                        "function": p.name,
                        "samples": p.samples,
                    })),
                    "instructions": instructions,
                    "lines": lines,
                }),
            )
        })
        .collect();
    Value::Array(functions)
}
