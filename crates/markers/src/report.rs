//! The report: per region, a table like the seed's (rows `ns` and each event; columns count,
//! avg, stddev, min, p50, p90, p99, max) and the same numbers as JSON.

use std::fmt;
use std::io::{self, Write};

use serde_json::{json, Value};

use crate::{ReadPath, RegionStats};

/// The JSON report's `schema` value.
pub const SCHEMA: &str = "cpiflame-markers/1";

/// The numbers of one metric of one region.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricReport {
    /// `ns` or the event's name.
    pub name: String,
    /// Values recorded.
    pub count: u64,
    /// Samples in which the event did not run (no value).
    pub not_counted: u64,
    /// Samples scaled for multiplexing.
    pub scaled: u64,
    /// Sum of the values recorded (exact; saturating at `u64::MAX`).
    pub total: u64,
    pub mean: Option<f64>,
    /// Sample standard deviation.
    pub stddev: Option<f64>,
    pub min: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    /// Set when the sketch collapsed: quantiles below this value are upper bounds only.
    pub collapsed_below: Option<f64>,
}

/// The numbers of one region.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionReport {
    pub name: String,
    pub samples: u64,
    pub unmatched_stops: u64,
    pub restarts: u64,
    pub read_errors: u64,
    pub first_read_error: Option<String>,
    /// `ns` first, then one per event.
    pub metrics: Vec<MetricReport>,
}

/// Every region's numbers, and how they were measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub read_path: ReadPath,
    pub events: Vec<String>,
    pub exclude_kernel: bool,
    /// α of the quantiles.
    pub quantile_accuracy: f64,
    pub rdpmc_fallbacks: u64,
    pub regions: Vec<RegionReport>,
}

impl Report {
    pub(crate) fn from_stats(
        regions: &[RegionStats],
        events: &[String],
        read_path: ReadPath,
        exclude_kernel: bool,
        quantile_accuracy: f64,
        rdpmc_fallbacks: u64,
    ) -> Report {
        let regions = regions
            .iter()
            .map(|r| RegionReport {
                name: r.name().to_string(),
                samples: r.samples(),
                unmatched_stops: r.unmatched_stops(),
                restarts: r.restarts(),
                read_errors: r.read_errors(),
                first_read_error: r.first_read_error.clone(),
                metrics: r
                    .metrics()
                    .iter()
                    .map(|m| {
                        let s = m.summary();
                        let q = m.sketch();
                        MetricReport {
                            name: m.name().to_string(),
                            count: s.count(),
                            not_counted: m.not_counted(),
                            scaled: m.scaled(),
                            total: m.total(),
                            mean: s.mean(),
                            stddev: s.stddev(),
                            min: s.min(),
                            p50: q.quantile(0.5),
                            p90: q.quantile(0.9),
                            p99: q.quantile(0.99),
                            max: s.max(),
                            collapsed_below: q.collapsed_below(),
                        }
                    })
                    .collect(),
            })
            .collect();
        Report {
            read_path,
            events: events.to_vec(),
            exclude_kernel,
            quantile_accuracy,
            rdpmc_fallbacks,
            regions,
        }
    }

    /// The region named `name`.
    pub fn region(&self, name: &str) -> Option<&RegionReport> {
        self.regions.iter().find(|r| r.name == name)
    }

    /// The JSON form (schema [`SCHEMA`], documented in the crate docs).
    pub fn to_json(&self) -> Value {
        let num = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or(Value::Null, Value::from);
        json!({
            "schema": SCHEMA,
            "read_path": self.read_path.as_str(),
            "events": self.events,
            "exclude_kernel": self.exclude_kernel,
            "quantile_relative_accuracy": self.quantile_accuracy,
            "quantile_rank": "floor(q*(n-1))",
            "rdpmc_fallbacks": self.rdpmc_fallbacks,
            "regions": self.regions.iter().map(|r| json!({
                "name": r.name,
                "samples": r.samples,
                "unmatched_stops": r.unmatched_stops,
                "restarts": r.restarts,
                "read_errors": r.read_errors,
                "first_read_error": r.first_read_error,
                "metrics": r.metrics.iter().map(|m| json!({
                    "name": m.name,
                    "count": m.count,
                    "not_counted": m.not_counted,
                    "scaled": m.scaled,
                    "total": m.total,
                    "mean": num(m.mean),
                    "stddev": num(m.stddev),
                    "min": num(m.min),
                    "p50": num(m.p50),
                    "p90": num(m.p90),
                    "p99": num(m.p99),
                    "max": num(m.max),
                    "collapsed_below": num(m.collapsed_below),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// Writes the JSON form, pretty-printed, with a final newline.
    pub fn write_json(&self, mut out: impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut out, &self.to_json())?;
        out.write_all(b"\n")
    }

    /// Writes the table (what `Display` prints).
    pub fn write_table(&self, mut out: impl Write) -> io::Result<()> {
        write!(out, "{self}")
    }
}

/// A number for the table: integers as they are, others with a precision that suits their
/// size.
fn cell(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(x) if !x.is_finite() => x.to_string(),
        Some(x) if x.fract() == 0.0 || x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.1}"),
        Some(x) if x.abs() >= 0.001 => format!("{x:.3}"),
        Some(x) => format!("{x:.1e}"),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.read_path {
            ReadPath::Rdpmc => "rdpmc (no system call)".to_string(),
            ReadPath::GroupRead => "one read() of the group per start and per stop".to_string(),
            ReadPath::PerEventRead => format!(
                "{} read() calls per start and per stop (not groupable)",
                self.events.len()
            ),
        };
        writeln!(
            f,
            "events: {}; counters read with {how}{}",
            self.events.join(", "),
            if self.exclude_kernel {
                "; user space only (perf_event_paranoid)"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "ns: monotonic clock; p50/p90/p99 within {}% of the exact value",
            self.quantile_accuracy * 100.0
        )?;
        if self.rdpmc_fallbacks > 0 {
            writeln!(
                f,
                "{} reads fell back from rdpmc to read()",
                self.rdpmc_fallbacks
            )?;
        }
        const COLS: [&str; 8] = ["count", "avg", "stddev", "min", "p50", "p90", "p99", "max"];
        for r in &self.regions {
            writeln!(f)?;
            writeln!(f, "region {}: {} samples", r.name, r.samples)?;
            let rows: Vec<(String, Vec<String>)> = r
                .metrics
                .iter()
                .map(|m| {
                    let cells = vec![
                        m.count.to_string(),
                        cell(m.mean),
                        cell(m.stddev),
                        cell(m.min),
                        cell(m.p50),
                        cell(m.p90),
                        cell(m.p99),
                        cell(m.max),
                    ];
                    (m.name.clone(), cells)
                })
                .collect();
            let name_w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(2).max(6);
            let col_w: Vec<usize> = (0..COLS.len())
                .map(|i| {
                    rows.iter()
                        .map(|(_, c)| c[i].len())
                        .chain([COLS[i].len()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            write!(f, "{:name_w$}", "")?;
            for (c, w) in COLS.iter().zip(&col_w) {
                write!(f, " | {c:>w$}")?;
            }
            writeln!(f)?;
            let total = name_w + col_w.iter().map(|w| w + 3).sum::<usize>();
            writeln!(f, "{}", "-".repeat(total))?;
            for (name, cells) in &rows {
                write!(f, "{name:name_w$}")?;
                for (c, w) in cells.iter().zip(&col_w) {
                    write!(f, " | {c:>w$}")?;
                }
                writeln!(f)?;
            }
            for m in &r.metrics {
                if m.not_counted > 0 {
                    writeln!(
                        f,
                        "  {}: not counted in {} samples (multiplexed out for the whole region)",
                        m.name, m.not_counted
                    )?;
                }
                if m.scaled > 0 {
                    writeln!(
                        f,
                        "  {}: {} samples scaled for multiplexing (count x enabled / running)",
                        m.name, m.scaled
                    )?;
                }
                if let Some(below) = m.collapsed_below {
                    writeln!(
                        f,
                        "  {}: values below {} were merged (sketch bucket bound): quantiles under it are upper bounds",
                        m.name,
                        cell(Some(below))
                    )?;
                }
            }
            if r.unmatched_stops > 0 {
                writeln!(f, "  {} stops without a start (ignored)", r.unmatched_stops)?;
            }
            if r.restarts > 0 {
                writeln!(f, "  {} starts of an already started region", r.restarts)?;
            }
            if r.read_errors > 0 {
                writeln!(
                    f,
                    "  {} reads failed (samples dropped): {}",
                    r.read_errors,
                    r.first_read_error.as_deref().unwrap_or("?")
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, RegionStats};
    use cpiflame_counters::read::Reading;

    fn sample_report() -> Report {
        let opts = Options::default();
        let events = vec!["task-clock".to_string(), "page-faults".to_string()];
        let mut s = RegionStats::new("pixel \"0\"", &events, &opts);
        let z = Reading::default();
        for i in 0..1000u64 {
            let stop = [
                Reading {
                    value: 4000 + i,
                    time_enabled: 10,
                    time_running: 10,
                    id: 1,
                },
                Reading {
                    value: i % 3,
                    time_enabled: 10,
                    time_running: if i % 10 == 0 { 0 } else { 10 },
                    id: 2,
                },
            ];
            s.record(5000 + i, &[z, z], &stop);
        }
        let empty = RegionStats::new("never", &events, &opts);
        Report::from_stats(&[s, empty], &events, ReadPath::GroupRead, false, 0.01, 0)
    }

    #[test]
    fn table_has_a_row_per_metric_and_the_seed_columns() {
        let text = sample_report().to_string();
        eprintln!("{text}");
        let header = text
            .lines()
            .find(|l| l.contains("avg"))
            .expect("a header line");
        for col in ["count", "avg", "stddev", "min", "p50", "p90", "p99", "max"] {
            assert!(header.contains(col), "{col} in {header}");
        }
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("row {name}"))
                .split('|')
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        };
        let ns = row("ns ");
        assert_eq!(ns[1], "1000");
        assert_eq!(
            ns[2], "5500",
            "mean of 5000..5999 is 5499.5, printed rounded"
        );
        assert_eq!(ns[4], "5000");
        assert_eq!(ns[8], "5999");
        let pf = row("page-faults");
        assert_eq!(pf[1], "900", "100 samples not counted");
        assert!(text.contains("page-faults: not counted in 100 samples"));
        assert!(text.contains("region never: 0 samples"));
    }

    #[test]
    fn json_follows_the_schema() {
        let report = sample_report();
        let mut buf = Vec::new();
        report.write_json(&mut buf).unwrap();
        let v: Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["read_path"], "group-read");
        assert_eq!(v["events"], json!(["task-clock", "page-faults"]));
        assert_eq!(v["quantile_relative_accuracy"], 0.01);
        let r = &v["regions"][0];
        assert_eq!(r["name"], "pixel \"0\"");
        assert_eq!(r["samples"], 1000);
        let ns = &r["metrics"][0];
        assert_eq!(ns["name"], "ns");
        assert_eq!(ns["count"], 1000);
        assert_eq!(ns["min"], 5000.0);
        assert_eq!(ns["max"], 5999.0);
        let p90 = ns["p90"].as_f64().unwrap();
        assert!((p90 - 5899.0).abs() <= 0.01 * 5899.0, "p90 {p90}");
        assert_eq!(r["metrics"][2]["not_counted"], 100);
        // An empty region: nulls, not zeros.
        let e = &v["regions"][1]["metrics"][1];
        assert_eq!(e["count"], 0);
        assert!(e["mean"].is_null() && e["p50"].is_null() && e["max"].is_null());
    }
}
