//! What `cpiflame stat` prints from a [`StatReport`]: perf stat's table, and the same data as
//! JSON (schema [`STAT_SCHEMA`]). Which event plays which part in the derived lines (cycles,
//! instructions, stalls, branches, misses) is decided once per event, by
//! `cpiflame_events::role_of` and perf's names, and the lines follow from that.

use std::io::{self, Write};

use cpiflame_events::{role_of, Arch, EventRef, Role};
use serde::Serialize;

use crate::stat::{derive, Derived, EventCount, StatReport};

/// The `schema` value of the JSON form.
pub const STAT_SCHEMA: &str = "cpiflame-stat/1";

/// The part an event plays in the derived lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Cycles,
    Instructions,
    Stalls,
    Branches,
    BranchMisses,
    CacheMisses,
}

fn part_of(event: EventRef<'_>, arch: Arch) -> Option<Part> {
    match (role_of(event, arch), event.name) {
        (Some(Role::Cycles), _) => Some(Part::Cycles),
        (Some(Role::Instructions), _) => Some(Part::Instructions),
        (Some(Role::Stalls), _) => Some(Part::Stalls),
        (_, "branches" | "branch-instructions") => Some(Part::Branches),
        (_, "branch-misses") => Some(Part::BranchMisses),
        (_, "cache-misses") => Some(Part::CacheMisses),
        _ => None,
    }
}

/// A report with the part each event plays: what the table and the JSON are drawn from.
pub struct StatPrintout<'a> {
    report: &'a StatReport,
    command: &'a [String],
    /// Per event (in the report's order): its part, and whether it is a clock (msec).
    parts: Vec<Option<Part>>,
    clocks: Vec<bool>,
    derived: Derived,
}

impl<'a> StatPrintout<'a> {
    /// `events` describes the report's events in its order (type, config, name as counted).
    pub fn new(report: &'a StatReport, events: &[EventRef<'_>], command: &'a [String]) -> Self {
        let arch = Arch::from_perf(Some(std::env::consts::ARCH));
        let parts: Vec<Option<Part>> = events.iter().map(|e| part_of(*e, arch)).collect();
        let clocks = events
            .iter()
            .map(|e| matches!(e.name, "task-clock" | "cpu-clock"))
            .collect();
        // The first event of each part gives its total (scaled for multiplexing).
        let total = |part: Part| {
            parts
                .iter()
                .zip(&report.totals)
                .find(|(p, _)| **p == Some(part))
                .and_then(|(_, c)| c.reading().scaled())
        };
        let derived = derive(
            total(Part::Cycles),
            total(Part::Instructions),
            total(Part::Stalls),
            total(Part::Branches),
            total(Part::BranchMisses),
            total(Part::CacheMisses),
        );
        StatPrintout {
            report,
            command,
            parts,
            clocks,
            derived,
        }
    }

    /// The derived ratios (IPC, CPI, stall share, miss rates).
    pub fn derived(&self) -> &Derived {
        &self.derived
    }

    /// A count as perf stat shows it: clocks in msec, other counts with thousands separators.
    fn cell(&self, event: usize, value: u64) -> String {
        if self.clocks.get(event).copied().unwrap_or(false) {
            format!("{:.2} msec", value as f64 / 1e6)
        } else {
            thousands(value)
        }
    }

    /// The comment perf stat puts after a count: the derived ratio this event is the
    /// numerator of.
    fn comment(&self, event: usize) -> String {
        let d = &self.derived;
        match self.parts.get(event).copied().flatten() {
            Some(Part::Instructions) => match (d.ipc, d.cpi) {
                (Some(ipc), Some(cpi)) => format!("# {ipc:.2} insn per cycle (CPI {cpi:.2})"),
                _ => String::new(),
            },
            Some(Part::Stalls) => d
                .stall_share
                .map(|s| format!("# {:.1}% of cycles stalled", s * 100.0))
                .unwrap_or_default(),
            Some(Part::BranchMisses) => {
                let said: Vec<String> = [
                    d.branch_miss_rate
                        .map(|r| format!("{:.2}% of all branches", r * 100.0)),
                    d.branch_mpki
                        .map(|m| format!("{m:.2} per 1000 instructions")),
                ]
                .into_iter()
                .flatten()
                .collect();
                if said.is_empty() {
                    String::new()
                } else {
                    format!("# {}", said.join(", "))
                }
            }
            Some(Part::CacheMisses) => d
                .cache_mpki
                .map(|m| format!("# {m:.2} per 1000 instructions"))
                .unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// The JSON form with `json` (per-thread counts always in it), else the table (with
    /// `per_thread`, a row per thread after it).
    pub fn write(&self, json: bool, per_thread: bool, out: &mut impl Write) -> io::Result<()> {
        if json {
            self.write_json(out)
        } else {
            self.write_table(out, per_thread)
        }
    }

    /// perf stat's table; with `per_thread`, a row per thread after it.
    pub fn write_table(&self, out: &mut impl Write, per_thread: bool) -> io::Result<()> {
        let report = self.report;
        writeln!(
            out,
            "\n Performance counter stats for '{}':\n",
            self.command.join(" ")
        )?;
        for (i, name) in report.events.iter().enumerate() {
            let r = report.totals[i].reading();
            let shown = match r.scaled() {
                Some(v) => self.cell(i, v),
                None => "<not counted>".to_string(),
            };
            let comment = self.comment(i);
            let multiplexed = if r.time_running < r.time_enabled && r.time_enabled > 0 {
                format!(
                    "  ({:.2}% of the time counted; scaled)",
                    r.running_share() * 100.0
                )
            } else {
                String::new()
            };
            writeln!(out, "{shown:>20}      {name:<28} {comment}{multiplexed}")?;
        }
        writeln!(
            out,
            "\n{:>20.9} seconds time elapsed\n",
            report.elapsed.as_secs_f64()
        )?;
        if !per_thread {
            return Ok(());
        }
        write!(out, "{:<24}", "thread (comm-tid)")?;
        for name in &report.events {
            write!(out, " {name:>18}")?;
        }
        writeln!(out)?;
        let rows = report
            .threads
            .iter()
            .map(|t| (format!("{}-{}", t.comm, t.tid), &t.counts))
            .chain(
                report
                    .unattributed
                    .iter()
                    .map(|c| ("(unattributed)".to_string(), c)),
            );
        for (label, counts) in rows {
            write!(out, "{label:<24}")?;
            for (i, c) in counts.iter().enumerate() {
                let shown = self.cell(i, c.reading().scaled().unwrap_or(0));
                write!(out, " {shown:>18}")?;
            }
            writeln!(out)?;
        }
        for (tid, comm) in &report.unreported {
            writeln!(
                out,
                "{comm}-{tid}: counted in the unattributed row (the kernel reported these threads' counts together)"
            )?;
        }
        writeln!(out)
    }

    /// The JSON form, one line.
    pub fn write_json(&self, out: &mut impl Write) -> io::Result<()> {
        let report = self.report;
        let counts = |counts: &'a [EventCount]| -> Vec<JsonCount<'a>> {
            report
                .events
                .iter()
                .zip(counts)
                .map(|(event, c)| JsonCount {
                    event,
                    value: c.value,
                    scaled: c.reading().scaled(),
                    time_enabled: c.time_enabled,
                    time_running: c.time_running,
                })
                .collect()
        };
        let json = JsonStat {
            schema: STAT_SCHEMA,
            command: self.command,
            exit_status: report.status.code(),
            elapsed_ns: report.elapsed.as_nanos() as u64,
            counts: counts(&report.totals),
            derived: JsonDerived::from(self.derived),
            threads: report
                .threads
                .iter()
                .map(|t| JsonThread {
                    pid: t.pid,
                    tid: t.tid,
                    comm: &t.comm,
                    counts: counts(&t.counts),
                })
                .collect(),
            unattributed: report.unattributed.as_deref().map(counts),
            unreported: report
                .unreported
                .iter()
                .map(|(tid, comm)| JsonUnreported { tid: *tid, comm })
                .collect(),
        };
        serde_json::to_writer(&mut *out, &json).map_err(io::Error::from)?;
        writeln!(out)
    }
}

#[derive(Serialize)]
struct JsonStat<'a> {
    schema: &'static str,
    command: &'a [String],
    exit_status: i32,
    elapsed_ns: u64,
    counts: Vec<JsonCount<'a>>,
    derived: JsonDerived,
    threads: Vec<JsonThread<'a>>,
    unattributed: Option<Vec<JsonCount<'a>>>,
    unreported: Vec<JsonUnreported<'a>>,
}

/// [`Derived`] as JSON: a ratio that cannot be computed is null.
#[derive(Serialize)]
struct JsonDerived {
    ipc: Option<f64>,
    cpi: Option<f64>,
    stall_share: Option<f64>,
    branch_miss_rate: Option<f64>,
    cache_mpki: Option<f64>,
    branch_mpki: Option<f64>,
}

impl From<Derived> for JsonDerived {
    fn from(d: Derived) -> Self {
        let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
        JsonDerived {
            ipc: finite(d.ipc),
            cpi: finite(d.cpi),
            stall_share: finite(d.stall_share),
            branch_miss_rate: finite(d.branch_miss_rate),
            cache_mpki: finite(d.cache_mpki),
            branch_mpki: finite(d.branch_mpki),
        }
    }
}

#[derive(Serialize)]
struct JsonCount<'a> {
    event: &'a str,
    value: u64,
    scaled: Option<u64>,
    time_enabled: u64,
    time_running: u64,
}

#[derive(Serialize)]
struct JsonThread<'a> {
    pid: i32,
    tid: i32,
    comm: &'a str,
    counts: Vec<JsonCount<'a>>,
}

#[derive(Serialize)]
struct JsonUnreported<'a> {
    tid: i32,
    comm: &'a str,
}

/// Thousands separators, as perf prints counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::child::ExitStatus;
    use crate::stat::ThreadCounts;

    fn count(value: u64, enabled: u64, running: u64) -> EventCount {
        EventCount {
            value,
            time_enabled: enabled,
            time_running: running,
        }
    }

    fn report() -> StatReport {
        StatReport {
            events: vec![
                "cycles".into(),
                "instructions".into(),
                "task-clock".into(),
                "branch-misses".into(),
            ],
            // cycles counted half the time: scaled to 2,000,000.
            totals: vec![
                count(1_000_000, 100, 50),
                count(3_000_000, 100, 100),
                count(12_345_678, 100, 100),
                // Never on a counter.
                count(0, 100, 0),
            ],
            threads: vec![ThreadCounts {
                pid: 10,
                tid: 10,
                comm: "app".into(),
                counts: vec![
                    count(1_000_000, 100, 50),
                    count(3_000_000, 100, 100),
                    count(5, 1, 1),
                    count(0, 100, 0),
                ],
            }],
            unattributed: None,
            unreported: vec![],
            elapsed: Duration::from_millis(1500),
            status: ExitStatus::Exited(7),
        }
    }

    fn events() -> Vec<EventRef<'static>> {
        [
            ("cycles", 0, 0),
            ("instructions", 0, 1),
            ("task-clock", 1, 1),
            ("branch-misses", 0, 5),
        ]
        .into_iter()
        .map(|(name, type_, config)| EventRef {
            type_,
            config,
            name,
        })
        .collect()
    }

    #[test]
    fn derived_lines_use_scaled_totals_of_the_events_playing_each_part() {
        let r = report();
        let refs = events();
        let command = vec!["app".to_string()];
        let p = StatPrintout::new(&r, &refs, &command);
        // 3,000,000 instructions over 2,000,000 scaled cycles.
        assert_eq!(p.derived().ipc, Some(1.5));
        assert_eq!(p.derived().cpi, Some(2.0 / 3.0));
        let mut out = Vec::new();
        p.write_table(&mut out, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("Performance counter stats for 'app'"),
            "{text}"
        );
        assert!(
            text.contains("2,000,000      cycles")
                && text.contains("(50.00% of the time counted; scaled)"),
            "{text}"
        );
        assert!(text.contains("# 1.50 insn per cycle (CPI 0.67)"), "{text}");
        assert!(text.contains("12.35 msec      task-clock"), "{text}");
        assert!(text.contains("<not counted>      branch-misses"), "{text}");
        assert!(text.contains("app-10"), "{text}");
    }

    #[test]
    fn json_has_the_documented_keys_in_order_and_nulls_for_unknowns() {
        let r = report();
        let refs = events();
        let command = vec!["app".to_string(), "a \"quoted\" arg".to_string()];
        let mut out = Vec::new();
        StatPrintout::new(&r, &refs, &command)
            .write_json(&mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("}\n") && text.lines().count() == 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], "cpiflame-stat/1");
        assert_eq!(v["command"][1], "a \"quoted\" arg");
        assert_eq!(v["exit_status"], 7);
        assert_eq!(v["elapsed_ns"], 1_500_000_000u64);
        assert_eq!(v["counts"][0]["scaled"], 2_000_000);
        assert_eq!(v["counts"][3]["scaled"], serde_json::Value::Null);
        assert_eq!(v["derived"]["ipc"], 1.5);
        assert_eq!(v["derived"]["stall_share"], serde_json::Value::Null);
        assert_eq!(v["threads"][0]["comm"], "app");
        assert_eq!(v["unattributed"], serde_json::Value::Null);
        let keys: Vec<&str> = text
            .split("\":")
            .filter_map(|s| s.rsplit('"').next())
            .take(9)
            .collect();
        assert_eq!(
            keys,
            [
                "schema",
                "command",
                "exit_status",
                "elapsed_ns",
                "counts",
                "event",
                "value",
                "scaled",
                "time_enabled"
            ]
        );
    }
}
