//! The JSON outputs: `cpiflame-report/1` and `cpiflame-diff/1` (docs/cli.md).

use std::io::{self, Write};

use serde::Serialize;

use crate::profile::Profile;
use crate::topdown::Breakdown;

use super::model::{
    ChangeTest, FrameDiff, FrameSummary, Measure, ReportOptions, TopdownFormulas, Totals,
};
use super::sums::totals;

#[derive(Serialize)]
pub(super) struct ReportDoc<'a> {
    pub(super) schema: &'static str,
    pub(super) totals: ReportTotals<'a>,
    pub(super) frames: &'a [FrameSummary],
}

/// `report`'s totals: [`Totals`] and, when the recording has top-down events, the whole
/// profile's fractions (`null` where they give none).
#[derive(Serialize)]
pub(super) struct ReportTotals<'a> {
    #[serde(flatten)]
    pub(super) totals: &'a Totals,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) topdown: Option<Option<Breakdown>>,
    /// Why a recording with top-down events has no fractions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) topdown_why: Option<&'a str>,
    /// The formulas of `topdown` (`report` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) topdown_formulas: Option<&'a TopdownFormulas>,
}

#[derive(Serialize)]
pub(super) struct DiffDoc<'a> {
    pub(super) schema: &'static str,
    pub(super) measure: Measure,
    pub(super) runs: Runs,
    pub(super) confidence: f64,
    pub(super) fail_above: Option<f64>,
    pub(super) before: ReportTotals<'a>,
    pub(super) after: ReportTotals<'a>,
    pub(super) frames: &'a [FrameDiff],
}

#[derive(Serialize)]
pub(super) struct Runs {
    pub(super) before: usize,
    pub(super) after: usize,
}

/// Schema name of `report --json`'s document ([`write_report`](super::write_report)).
pub const REPORT_SCHEMA: &str = "cpiflame-report/1";
/// Schema name of `diff --json`'s document ([`write_diff`](super::write_diff)).
pub const DIFF_SCHEMA: &str = "cpiflame-diff/1";

/// The `cpiflame-report/1` document of `frames` (see [`write_report`](super::write_report); its
/// schema is in
/// docs/cli.md): the totals with their intervals at `opts.confidence` and, for a recording
/// with top-down events, the whole profile's fractions as `totals.topdown` (`Some(None)`:
/// `null`, see [`add_topdown`](super::add_topdown)); the formula set as `totals.topdown_formulas`,
/// or why the
/// events give no fractions as `totals.topdown_why` (each left out when `None`).
pub(super) fn write_report_json<W: Write>(
    p: &Profile,
    frames: &[FrameSummary],
    topdown: Option<Option<Breakdown>>,
    opts: &ReportOptions,
    mut out: W,
) -> io::Result<()> {
    let formulas = opts.topdown.map(TopdownFormulas::of);
    let doc = ReportDoc {
        schema: REPORT_SCHEMA,
        totals: ReportTotals {
            totals: &totals(p, &opts.columns, opts.confidence),
            topdown,
            topdown_why: opts.topdown_why,
            topdown_formulas: formulas.as_ref(),
        },
        frames,
    };
    serde_json::to_writer(&mut out, &doc)?;
    out.write_all(b"\n")
}

/// The `cpiflame-diff/1` document (see [`write_diff`](super::write_diff); its schema is in
/// docs/cli.md): both
/// sides' totals and every entry of `diffs`, in order; `runs`, `confidence` and
/// `fail_above` as `test` says ([`diff_runs`](super::diff_runs)); when both sides have the same
/// top-down
/// formulas, each side's whole fractions (from [`add_diff_topdown`](super::add_diff_topdown)) as
/// `before.topdown`
/// and `after.topdown` (`null` where they give none).
pub(super) fn write_diff_json<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    test: &ChangeTest,
    topdown: Option<(Option<Breakdown>, Option<Breakdown>)>,
    mut out: W,
) -> io::Result<()> {
    let doc = DiffDoc {
        schema: DIFF_SCHEMA,
        measure: Measure::of_totals(before, after),
        runs: Runs {
            before: test.runs.0,
            after: test.runs.1,
        },
        confidence: test.confidence,
        fail_above: test.fail_above,
        before: ReportTotals {
            totals: before,
            topdown: topdown.map(|t| t.0),
            topdown_why: None,
            topdown_formulas: None,
        },
        after: ReportTotals {
            totals: after,
            topdown: topdown.map(|t| t.1),
            topdown_why: None,
            topdown_formulas: None,
        },
        frames: diffs,
    };
    serde_json::to_writer(&mut out, &doc)?;
    out.write_all(b"\n")
}
