//! The text outputs: `report`'s and `diff`'s tables.

use std::io::{self, Write};

use crate::profile::{FrameKind, Profile};
use crate::topdown::Breakdown;

use super::model::{
    percent_text, share, DiffSummaryOptions, FrameDiff, FrameSummary, LineSummary, Measure,
    ReportOptions, TopdownFormulas, Totals,
};
use super::sums::totals;

/// `1.23`, or `-` for a missing value.
pub(super) fn cpi_cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.2}"),
        _ => "-".to_string(),
    }
}

/// `cell` and the interval's `±` (in the cell's units: `scale` times the value), or the
/// cell alone without one.
pub(super) fn with_interval(
    cell: String,
    value: Option<f64>,
    interval: Option<[f64; 2]>,
    scale: f64,
) -> String {
    match (value, interval) {
        (Some(v), Some([lo, hi])) => {
            let i = crate::interval::Interval {
                lo: lo * scale,
                hi: hi * scale,
            };
            format!("{cell} {}", i.plus_minus(v * scale, 2))
        }
        _ => cell,
    }
}

/// `12.34%`, or `-` for a missing value.
pub(super) fn pct_cell(v: Option<f64>) -> String {
    match v {
        Some(v) => format!("{:.2}%", v * 100.0),
        None => "-".to_string(),
    }
}

/// A duration: `850ns`, `12.50us`, `3.20ms`, `1.25s` (two decimals from a microsecond up).
pub(super) fn duration_cell(ns: Option<u64>) -> String {
    match ns {
        None => "-".to_string(),
        Some(ns) if ns < 1_000 => format!("{ns}ns"),
        Some(ns) if ns < 1_000_000 => format!("{:.2}us", ns as f64 / 1e3),
        Some(ns) if ns < 1_000_000_000 => format!("{:.2}ms", ns as f64 / 1e6),
        Some(ns) => format!("{:.2}s", ns as f64 / 1e9),
    }
}

/// The function column: `name`, `(inlined)` for inline frames, and `[module]` (or
/// `[kernel]` for a kernel frame without one).
/// `app/hot.c:7 67%`, with ` stalled 80%` where known; `-` without a line.
pub(super) fn line_cell(line: Option<&LineSummary>) -> String {
    let Some(l) = line else {
        return "-".to_string();
    };
    let at = crate::lines::SourceLine {
        file: l.file.clone(),
        line: l.line,
    };
    let mut cell = format!("{} {:.0}%", at.short(), l.share * 100.0);
    if let Some(s) = l.stall_share {
        cell.push_str(&format!(" stalled {:.0}%", s * 100.0));
    }
    cell
}

pub(super) fn function_cell(name: &str, module: &str, kind: FrameKind) -> String {
    let mut s = name.to_string();
    match kind {
        FrameKind::Inline => s.push_str(" (inlined)"),
        // Root frames that are not processes (a process's is its name alone, as ever).
        FrameKind::Thread => s.push_str(" (thread)"),
        FrameKind::Cgroup => s.push_str(" (cgroup)"),
        _ => {}
    }
    if !module.is_empty() {
        s.push_str(" [");
        s.push_str(module);
        s.push(']');
    } else if kind == FrameKind::Kernel {
        s.push_str(" [kernel]");
    }
    s
}

/// Writes `header` and `rows` as a table: every column but the last right-aligned to its
/// widest cell (at least 7 wide, as `100.00%` is, so tables of a few rows align like long
/// ones), two spaces apart, the last left-aligned; header lines start with `#`, rows
/// with a space, as `perf report` prints them.
pub(super) fn write_table<W: Write>(
    header: &[&str],
    rows: &[Vec<String>],
    out: &mut W,
) -> io::Result<()> {
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count().max(7)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |lead: char, cells: &[String]| {
        let mut s = String::new();
        s.push(lead);
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            s.push_str(if i == 0 { " " } else { "  " });
            if i + 1 == n {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:>w$}"));
            }
        }
        s.trim_end().to_string()
    };
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let dots: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| ".".repeat(if i + 1 == n { header[i].len() } else { w }))
        .collect();
    writeln!(out, "{}", line('#', &header))?;
    writeln!(out, "{}", line('#', &dots))?;
    writeln!(out, "#")?;
    for row in rows {
        writeln!(out, "{}", line(' ', row))?;
    }
    Ok(())
}

/// The level-1 top-down categories as the text tables name them, with their fractions.
pub(super) fn level1_cells(b: &Breakdown) -> [(&'static str, f64); 4] {
    [
        ("RET", b.retiring),
        ("BS", b.bad_speculation),
        ("FE", b.frontend_bound),
        ("BE", b.backend_bound),
    ]
}

/// The index in [`level1_cells`] of the largest category (the first of equals).
pub(super) fn dominant(b: &Breakdown) -> usize {
    let cells = level1_cells(b);
    (1..cells.len()).fold(
        0,
        |best, k| if cells[k].1 > cells[best].1 { k } else { best },
    )
}

/// The largest level-1 top-down category of a frame's inclusive fractions and its share
/// (`BE 62%`); `-` where there are none. `report`'s and `annotate`'s top-down column.
pub fn topdown_cell(b: Option<Breakdown>) -> String {
    let Some(b) = b else {
        return "-".into();
    };
    let (name, value) = level1_cells(&b)[dominant(&b)];
    format!("{name} {:.0}%", value * 100.0)
}

/// The last line of `diff`'s text summary with top-down fractions: the whole runs' change,
/// as the table's cells and with all four categories, `# top-down of the whole runs: ...`.
pub fn topdown_totals_line(before: Option<Breakdown>, after: Option<Breakdown>) -> String {
    let side = |b: Option<Breakdown>| {
        b.map_or("-".to_string(), |b| {
            level1_cells(&b)
                .iter()
                .map(|(name, v)| format!("{name} {:.0}%", v * 100.0))
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    format!(
        "# top-down of the whole runs: {} -> {}",
        side(before),
        side(after)
    )
}

/// A function's top-down change in `diff`'s table: the category largest in after (in
/// before when after has none) and its share before and after, `BE 41% -> 63%`; `-` for a
/// side without fractions, `-` alone when neither has any.
pub(super) fn topdown_change_cell(before: Option<Breakdown>, after: Option<Breakdown>) -> String {
    let Some(k) = after.or(before).map(|b| dominant(&b)) else {
        return "-".into();
    };
    let side = |b: Option<Breakdown>| {
        b.map_or("-".to_string(), |b| {
            format!("{:.0}%", level1_cells(&b)[k].1 * 100.0)
        })
    };
    let name = ["RET", "BS", "FE", "BE"][k];
    format!("{name} {} -> {}", side(before), side(after))
}

pub(super) fn totals_line(t: &Totals, counts: bool) -> String {
    let mut s = format!(
        "{} {} of {}",
        t.cycles_samples,
        if counts { "counts" } else { "samples" },
        if t.cycles_event.is_empty() {
            "?"
        } else {
            &t.cycles_event
        }
    );
    if let Some(stalls) = &t.stalls_event {
        s.push_str(&format!(
            ", {} of cycles stalled ({stalls})",
            pct_cell(t.stall_share)
        ));
    }
    if let Some(instructions) = &t.instructions_event {
        s.push_str(&format!(", CPI {} ({instructions})", cpi_cell(t.cpi)));
    }
    if let (Some(all), Some(on), Some(runnable), Some(blocked)) =
        (t.wall_ns, t.on_cpu_ns, t.runnable_ns, t.blocked_ns)
    {
        let part = |ns: u64| pct_cell(Some(share(ns, all)));
        s.push_str(&format!(
            "; wall time {}: {} on CPU, {} runnable, {} blocked",
            duration_cell(Some(all)),
            part(on),
            part(runnable),
            part(blocked)
        ));
    }
    s
}

pub(super) fn limited<T>(items: &[T], limit: usize) -> &[T] {
    if limit == 0 {
        items
    } else {
        &items[..items.len().min(limit)]
    }
}

/// `report`'s table of `frames` (see [`write_report`]): "counts" for samples with
/// `opts.counts`, and with top-down formulas a second header line naming the set and its
/// approximation (as the graph's subtitle does).
pub(super) fn write_report_text<W: Write>(
    p: &Profile,
    frames: &[FrameSummary],
    opts: &ReportOptions,
    mut out: W,
) -> io::Result<()> {
    let (columns, limit) = (opts.columns, opts.limit);
    let t = totals(p, &columns, opts.confidence);
    writeln!(out, "# cpiflame report: {}", totals_line(&t, opts.counts))?;
    if let Some(f) = opts.topdown.map(TopdownFormulas::of) {
        match f.approximation {
            Some(approximation) => writeln!(out, "# top-down: {} · {approximation}", f.name)?,
            None => writeln!(out, "# top-down: {}", f.name)?,
        }
    }
    writeln!(out, "#")?;
    let with_stalls = columns.stalls.is_some();
    let with_cpi = columns.instructions.is_some();
    let with_wall = t.wall_ns.is_some();
    let with_lines = frames.iter().any(|f| f.hottest_line.is_some());
    let with_topdown = frames.iter().any(|f| f.topdown.is_some());
    let shown = limited(frames, limit);
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|f| {
            let mut row = Vec::new();
            if with_wall {
                row.extend([
                    pct_cell(f.wall_share),
                    duration_cell(f.on_cpu_ns),
                    duration_cell(f.runnable_ns),
                    duration_cell(f.blocked_ns),
                ]);
            }
            row.extend([pct_cell(Some(f.total_share)), pct_cell(Some(f.self_share))]);
            if with_stalls {
                row.push(with_interval(
                    pct_cell(f.stall_share),
                    f.stall_share,
                    f.stall_share_interval,
                    100.0,
                ));
            }
            if with_cpi {
                row.push(with_interval(cpi_cell(f.cpi), f.cpi, f.cpi_interval, 1.0));
            }
            if with_topdown {
                row.push(topdown_cell(f.topdown.flatten()));
            }
            row.push(f.total_samples.to_string());
            if with_lines {
                row.push(line_cell(f.hottest_line.as_ref().and_then(Option::as_ref)));
            }
            row.push(function_cell(&f.name, &f.module, f.kind));
            row
        })
        .collect();
    let mut header = Vec::new();
    if with_wall {
        header.extend(["Wall", "On-CPU", "Runnable", "Blocked"]);
    }
    header.extend(["Total", "Self"]);
    if with_stalls {
        header.push("Stall");
    }
    if with_cpi {
        header.push("CPI");
    }
    if with_topdown {
        header.push("Top-down");
    }
    header.push(if opts.counts { "Counts" } else { "Samples" });
    if with_lines {
        header.push("Hottest self line");
    }
    header.push("Function [module]");
    write_table(&header, &rows, &mut out)?;
    if shown.len() < frames.len() {
        writeln!(
            out,
            "#\n# {} more functions not shown",
            frames.len() - shown.len()
        )?;
    }
    match opts.topdown_why {
        Some(why) => writeln!(out, "#\n# no top-down breakdown: {why}"),
        None => Ok(()),
    }
}

/// `diff --summary`'s table (see [`write_diff`]): before %, after % (total shares, each of
/// its own run: of wall time when both runs have it, [`Measure::WallTime`], else of cycles),
/// change in percentage points, stall share before -> after, inclusive CPI before -> after
/// (only when either side has an instructions column), function `[module]`, marked `(new)`
/// or `(gone)` when it has no samples on one side; at most `limit` rows (0: all). With
/// several runs per side, Before, After and Change are the means over each side's runs (a
/// header line says so); each change with an interval is followed by it (`+12.30 [+8.10,
/// +16.50]`); with a threshold, a column says whether the change's interval lies above it.
///
/// ```text
/// # cpiflame diff: before: 400 samples of cycles, 20.00% of cycles stalled (stalls)
/// #                after:  800 samples of cycles, 30.00% of cycles stalled (stalls)
/// # shares are of each run's own total; change in percentage points
/// #
/// #  Before    After   Change  Stall before -> after  Function [module]
/// # .......  .......  .......  .....................  .................
/// #
///    25.00%   40.00%   +15.00      10.00% ->  20.00%  memory_bound [demo]
///    10.00%    0.00%   -10.00      35.00% ->       -  old_path [demo] (gone)
/// ```
pub(super) fn write_diff_text<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    opts: &DiffSummaryOptions,
    mut out: W,
) -> io::Result<()> {
    let (limit, test) = (opts.limit, &opts.test);
    writeln!(
        out,
        "# cpiflame diff: before: {}",
        totals_line(before, opts.counts.0)
    )?;
    writeln!(
        out,
        "#                after:  {}",
        totals_line(after, opts.counts.1)
    )?;
    match Measure::of_totals(before, after) {
        Measure::WallTime => writeln!(
            out,
            "# shares are of each run's own wall time (on CPU + runnable + blocked); \
             change in percentage points"
        )?,
        Measure::Cycles => {
            writeln!(
                out,
                "# shares are of each run's own total; change in percentage points"
            )?;
            // Say why wall time is not compared when one side has it.
            if before.wall_ns.is_some() != after.wall_ns.is_some() {
                let side = if before.wall_ns.is_some() {
                    "before"
                } else {
                    "after"
                };
                writeln!(
                    out,
                    "# (of cycles: only {side} has wall time, so wall time is not compared)"
                )?;
            }
        }
    }
    let several = test.runs != (1, 1);
    if several {
        writeln!(
            out,
            "# {} runs before, {} after: before, after and change are means over each side's \
             runs; stall shares and CPIs are the first runs' (totals above too)",
            test.runs.0, test.runs.1
        )?;
    }
    if diffs.iter().any(|d| d.change_interval.is_some()) {
        let variance = if several {
            "between-run variance"
        } else {
            "sampling variance"
        };
        writeln!(
            out,
            "# [lo, hi]: the change's {} confidence interval ({variance})",
            percent_text(test.confidence)
        )?;
    }
    if let Some(pct) = test.fail_above {
        writeln!(
            out,
            "# grew > {pct}: yes when the whole interval is above {pct} points (--fail-above)"
        )?;
    }
    writeln!(out, "#")?;
    let with_cpi = before.instructions_event.is_some() || after.instructions_event.is_some();
    let with_topdown = diffs.iter().any(|d| d.topdown_before.is_some());
    let shown = limited(diffs, limit);
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|d| {
            let mut function = function_cell(&d.name, &d.module, d.kind);
            // With several runs a side, new and gone are of all its runs, as the shares shown.
            let present = if several {
                (d.before_mean_share > 0.0, d.after_mean_share > 0.0)
            } else {
                d.present()
            };
            match present {
                (false, true) => function.push_str(" (new)"),
                (true, false) => function.push_str(" (gone)"),
                _ => {}
            }
            let ((b_share, a_share), change) = if several {
                (
                    (d.before_mean_share, d.after_mean_share),
                    d.mean_change_points(),
                )
            } else {
                (d.compared_shares(), d.change_points())
            };
            let mut change = format!("{change:+.2}");
            if let Some([lo, hi]) = d.change_interval {
                change.push_str(&format!(" [{lo:+.2}, {hi:+.2}]"));
            }
            let mut row = vec![
                pct_cell(Some(b_share)),
                pct_cell(Some(a_share)),
                change,
                format!(
                    "{:>7} -> {:>7}",
                    pct_cell(d.before_stall_share),
                    pct_cell(d.after_stall_share)
                ),
            ];
            if with_cpi {
                row.push(format!(
                    "{:>6} -> {:>6}",
                    cpi_cell(d.before_cpi),
                    cpi_cell(d.after_cpi)
                ));
            }
            if with_topdown {
                row.push(topdown_change_cell(
                    d.topdown_before.flatten(),
                    d.topdown_after.flatten(),
                ));
            }
            if test.fail_above.is_some() {
                row.push(
                    match d.exceeds_threshold {
                        Some(true) => "yes",
                        Some(false) => "no",
                        None => "-",
                    }
                    .to_string(),
                );
            }
            row.push(function);
            row
        })
        .collect();
    let gate_header = test.fail_above.map(|pct| format!("Grew > {pct}"));
    let mut header = vec!["Before", "After", "Change", "Stall before -> after"];
    if with_cpi {
        header.push("CPI before -> after");
    }
    if with_topdown {
        header.push("Top-down before -> after");
    }
    if let Some(h) = &gate_header {
        header.push(h);
    }
    header.push("Function [module]");
    write_table(&header, &rows, &mut out)?;
    if shown.len() < diffs.len() {
        writeln!(
            out,
            "#\n# {} more functions not shown",
            diffs.len() - shown.len()
        )?;
    }
    Ok(())
}
