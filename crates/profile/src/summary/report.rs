//! The entries: one per output (`report`, `diff --summary`), each with its options.

use std::io::{self, Write};

use crate::profile::Profile;

use super::json::{write_diff_json, write_report_json};
use super::model::{DiffSummaryOptions, Format, FrameDiff, LineSummary, ReportOptions, Totals};
use super::sums::{add_topdown, top_frames};
use super::text::{topdown_totals_line, write_diff_text, write_report_text};

/// `cpiflame report`: the top functions of `p` (see [`top_frames`]) as a table like `perf
/// report`'s or as the `cpiflame-report/1` document.
///
/// The table: total %, self %, stall % (only with a stall column), inclusive CPI (only with
/// an instructions column), top-down (only with formulas), cycles samples, the hottest self
/// line (only with `opts.lines`), `function [module]`; at most `opts.limit` rows (0: all),
/// then a line saying how many were left out. With the wall-time columns
/// ([`WallColumns`](crate::WallColumns)),
/// the header adds the wall time and its parts, the table starts with the inclusive wall
/// share and on-CPU, runnable and blocked times, and the rows are in wall-time order.
///
/// ```text
/// # cpiflame report: 1000 samples of cycles, 32.40% of cycles stalled (resource_stalls_any)
/// #
/// #   Total     Self    Stall  Samples  Function [module]
/// # .......  .......  .......  .......  .................
/// #
///   100.00%    0.00%   32.40%     1000  demo
///    60.00%   60.00%   50.00%      600  memory_bound [demo]
/// ```
pub fn write_report<W: Write>(
    p: &Profile,
    opts: &ReportOptions,
    format: Format,
    out: W,
) -> io::Result<()> {
    let mut frames = top_frames(p, &opts.columns, opts.confidence);
    if let Some(lines) = opts.lines {
        let hot = lines.hottest_self(p, &opts.columns, |f| {
            (!f.kind.is_root()).then(|| (f.name.clone(), f.module.clone()))
        });
        for f in &mut frames {
            let line = hot.get(&(f.name.clone(), f.module.clone())).and_then(|h| {
                let at = lines.line(h.line)?;
                Some(LineSummary {
                    file: at.file.clone(),
                    line: at.line,
                    share: h.share,
                    stall_share: h.stall_share,
                })
            });
            f.hottest_line = Some(line);
        }
    }
    let topdown = opts.topdown.map(|plan| add_topdown(p, plan, &mut frames));
    match format {
        Format::Text => write_report_text(p, &frames, opts, out),
        Format::Json => write_report_json(p, &frames, topdown, opts, out),
    }
}

/// `cpiflame diff --summary`: the comparison `diffs` (from [`diff_frames`](super::diff_frames) or
/// [`diff_runs`](super::diff_runs)) of two runs whose totals are `before` and `after`, as a table
/// (see
/// `text.rs`, then the top-down totals line) or as the `cpiflame-diff/1` document.
pub fn write_diff<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    opts: &DiffSummaryOptions,
    format: Format,
    mut out: W,
) -> io::Result<()> {
    match format {
        Format::Json => write_diff_json(before, after, diffs, &opts.test, opts.topdown, out),
        Format::Text => {
            write_diff_text(before, after, diffs, opts, &mut out)?;
            match opts.topdown {
                Some((b, a)) => writeln!(out, "#\n{}", topdown_totals_line(b, a)),
                None => Ok(()),
            }
        }
    }
}
