//! `--time`: the samples of a recording inside time ranges, with `perf script --time`'s
//! syntax and meaning (perf's `tools/perf/util/time-utils.c` and `perf-script.txt`):
//!
//! - `START,STOP`: sample times in seconds as `perf script` prints them (up to 9 decimals,
//!   nanoseconds), either side empty for the start or the end of the recording; several
//!   ranges separated by spaces (`"1234.5,1234.6 1235,"`), in increasing order, not
//!   overlapping. Both bounds are inclusive.
//! - percentages of the time from the recording's first to its last sample: `10%-20%`
//!   (several separated by commas, `0%-10%,30%-40%`), `10%/2` (the second tenth; several
//!   separated by commas), `25%` (the first quarter). A percent range's end is one
//!   nanosecond before its percentage's instant unless it is the last sample's time, so
//!   `0%-50%,50%-100%` splits the samples in two; the instants are rounded to the nearest
//!   nanosecond, as perf rounds them.
//!
//! Only samples are filtered; side-band records (mmaps, comms, switches) are all read, as
//! perf reads them. A sample without a time (time 0) is kept, as perf keeps it.

use std::fmt;

use std::sync::Arc;

use cpiflame_perf_data::{PerfData, RecordKind};

use crate::region::RegionSpans;

/// One range: `start` to `end` inclusive, in the samples' clock's nanoseconds; 0 is open
/// (no bound), as in perf's `struct perf_time_interval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeRange {
    pub start: u64,
    pub end: u64,
}

impl TimeRange {
    /// True when `ns` is in the range (a 0 bound is open).
    pub fn contains(&self, ns: u64) -> bool {
        ns >= self.start && (self.end == 0 || ns <= self.end)
    }
}

/// The ranges of a `--time` value, resolved to nanoseconds; with `--region`, also the
/// region's intervals per thread, which a sample must be inside too ([`TimeRanges::keeps`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeRanges {
    ranges: Vec<TimeRange>,
    region: Option<Arc<RegionSpans>>,
}

/// A `--time` value that does not parse, or whose ranges are out of order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--time {text:?}: {reason} (expected START,STOP in seconds as perf script prints them, several separated by spaces, or percentages: 10%-20%, 10%/2, 25%)")]
pub struct BadTime {
    pub text: String,
    pub reason: String,
}

impl TimeRanges {
    /// Parses `text`; percentages are of the time from `first_ns` to `last_ns` (the
    /// recording's first and last sample).
    pub fn parse(text: &str, first_ns: u64, last_ns: u64) -> Result<TimeRanges, BadTime> {
        let bad = |reason: &str| BadTime {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let ranges = if Self::has_percent(text) {
            percent_ranges(text, first_ns, last_ns.max(first_ns)).map_err(|r| bad(&r))?
        } else {
            absolute_ranges(text).map_err(|r| bad(&r))?
        };
        Ok(TimeRanges {
            ranges,
            region: None,
        })
    }

    /// True when `text` is in percentages, which need the recording's first and last sample
    /// times.
    pub fn has_percent(text: &str) -> bool {
        text.contains('%')
    }

    /// Ranges as they are.
    pub fn from_ranges(ranges: Vec<TimeRange>) -> TimeRanges {
        TimeRanges {
            ranges,
            region: None,
        }
    }

    /// These ranges, and only inside `region`'s intervals of each sample's thread
    /// (`--region`).
    pub fn with_region(self, region: RegionSpans) -> TimeRanges {
        TimeRanges {
            region: Some(Arc::new(region)),
            ..self
        }
    }

    /// `--region`'s intervals, if given.
    pub fn region(&self) -> Option<&RegionSpans> {
        self.region.as_deref()
    }

    /// True when a sample of thread `tid` at `ns` is kept: in the ranges ([`Self::contains`])
    /// and, with `--region`, inside one of the thread's intervals of the region (a sample
    /// without a time or thread is not).
    pub fn keeps(&self, ns: u64, tid: Option<i32>) -> bool {
        self.contains(ns) && self.region.as_ref().is_none_or(|r| r.contains(tid, ns))
    }

    /// The ranges, resolved.
    pub fn ranges(&self) -> &[TimeRange] {
        &self.ranges
    }

    /// True when a sample at `ns` is kept: in any range (time 0, no time, always is).
    pub fn contains(&self, ns: u64) -> bool {
        ns == 0 || self.ranges.is_empty() || self.ranges.iter().any(|r| r.contains(ns))
    }

    /// The nanoseconds of the interval from `a` to `b` (`b` excluded) that lie in the ranges
    /// (in their union, where percentages overlap): the part of a thread's on- or off-CPU
    /// interval that wall time counts.
    pub fn overlap(&self, a: u64, b: u64) -> u64 {
        if self.ranges.is_empty() {
            return b.saturating_sub(a);
        }
        let mut spans: Vec<(u64, u64)> = self
            .ranges
            .iter()
            .map(|r| (r.start, if r.end == 0 { u64::MAX } else { r.end + 1 }))
            .collect();
        spans.sort_unstable();
        let (mut sum, mut covered) = (0, a);
        for (start, end) in spans {
            let (lo, hi) = (start.max(covered), end.min(b));
            if hi > lo {
                sum += hi - lo;
                covered = hi;
            }
        }
        sum
    }

    /// The first nanosecond of the interval from `a` to `b` (`b` excluded) that lies in the
    /// ranges (`a` without ranges): where the part [`TimeRanges::overlap`] counts begins.
    /// `None` when no part of it does.
    pub fn first_inside(&self, a: u64, b: u64) -> Option<u64> {
        if self.ranges.is_empty() {
            return (b > a).then_some(a);
        }
        self.ranges
            .iter()
            .map(|r| (r.start, if r.end == 0 { u64::MAX } else { r.end + 1 }))
            .map(|(start, end)| (start.max(a), end.min(b)))
            .filter(|(lo, hi)| hi > lo)
            .map(|(lo, _)| lo)
            .min()
    }

    /// The ranges in perf's absolute syntax (`S.NNNNNNNNN,S.NNNNNNNNN`, an open side
    /// empty, ranges separated by spaces): a value for `perf script --time` or `--time`
    /// again that selects the same samples.
    pub fn to_arg(&self) -> String {
        let side = |ns: u64| {
            if ns == 0 {
                String::new()
            } else {
                seconds_text(ns)
            }
        };
        self.ranges
            .iter()
            .map(|r| format!("{},{}", side(r.start), side(r.end)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Display for TimeRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_arg())
    }
}

/// `diff --time`'s two sides: `A:B` is A for the earlier runs and B for the later ones,
/// either empty for all of that side's samples; without a `:`, the same ranges for both
/// (percentages of each run's own first to last sample), as `perf diff --time` reads it.
pub fn sides(text: &str) -> (Option<&str>, Option<&str>) {
    fn some(s: &str) -> Option<&str> {
        (!s.trim().is_empty()).then_some(s)
    }
    match text.split_once(':') {
        Some((before, after)) => (some(before), some(after)),
        None => (Some(text), Some(text)),
    }
}

/// `ns` in seconds as `perf script --ns` prints a time: `28681.267859796`.
pub fn seconds_text(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The first and last sample time of `file`, which percentages are of: the SAMPLE_TIME
/// feature perf and `cpiflame record` write, else (a file without it, or perf's (0, 0) of
/// `perf record --no-buildid`, where perf refuses percentages) the samples' own, read
/// here. `None`: no sample has a time.
pub fn sample_span(file: &PerfData) -> Option<(u64, u64)> {
    if let Some((first, last)) = file.meta.sample_time.filter(|&(f, l)| f > 0 && l >= f) {
        return Some((first, last));
    }
    let mut span: Option<(u64, u64)> = None;
    for record in file.records_in_file_order() {
        let Ok(record) = record else { break };
        if let (RecordKind::Sample(s), Some(t)) = (&record.kind, record.time) {
            if t > 0 && s.time.is_some() {
                span = Some(span.map_or((t, t), |(f, l)| (f.min(t), l.max(t))));
            }
        }
    }
    span
}

/// Why `--time` cannot be applied to a recording.
#[derive(Debug, thiserror::Error)]
pub enum TimeError {
    #[error(transparent)]
    Bad(#[from] BadTime),
    /// No event of the recording has PERF_SAMPLE_TIME (or the text has no times).
    #[error("--time: {file} has no timestamps ({what})")]
    NoTimestamps { file: String, what: &'static str },
    /// No sample is in the ranges: `--time TEXT: no sample of FILE is in RANGES (its N
    /// samples are from FIRST to LAST)`.
    #[error("{0}")]
    NothingIn(String),
}

impl TimeError {
    /// The error for `file`, none of whose `samples` (first and last at `span`) is in
    /// `times` (the value `text`).
    pub fn nothing_in(
        file: &std::path::Path,
        text: Option<&str>,
        times: &TimeRanges,
        samples: u64,
        span: (u64, u64),
    ) -> TimeError {
        TimeError::NothingIn(format!(
            "--time {:?}: no sample of {} is in {} (its {samples} samples are from {} to {})",
            text.unwrap_or_default(),
            file.display(),
            times.to_arg(),
            seconds_text(span.0),
            seconds_text(span.1)
        ))
    }
}

/// The ranges of `text` for `file`: percentages of its [`sample_span`]. A recording whose
/// samples carry no time is an error naming it.
pub fn ranges_of(text: &str, file: &PerfData) -> Result<TimeRanges, TimeError> {
    use cpiflame_events::abi::sample;
    if !file.attrs.iter().any(|a| a.sample_type & sample::TIME != 0) {
        return Err(TimeError::NoTimestamps {
            file: file.path().display().to_string(),
            what: "recorded without PERF_SAMPLE_TIME",
        });
    }
    // A recording without samples: nothing to select, whatever the percentages (its
    // "no samples" error follows).
    let (first, last) = if TimeRanges::has_percent(text) {
        sample_span(file).unwrap_or_default()
    } else {
        (0, 0)
    };
    Ok(TimeRanges::parse(text, first, last)?)
}

/// Seconds with up to 9 decimals to nanoseconds (`12`, `12.5`, `12.000000001`, `.5`);
/// leading spaces are allowed, as perf's `strtoul` allows them.
fn seconds(text: &str) -> Result<u64, String> {
    let t = text.trim_start();
    let (whole, fraction) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || (whole.is_empty() && fraction.is_empty()) {
        return Err(format!("{text:?} is not a time in seconds"));
    }
    if fraction.len() > 9 {
        return Err(format!("{text:?} has more than 9 decimals"));
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole
            .parse()
            .map_err(|_| format!("{text:?} is too large"))?
    };
    let nanos: u64 = format!("{fraction:0<9}").parse().unwrap_or(0);
    whole
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(nanos))
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// `START,STOP` with either side empty.
fn absolute_range(text: &str) -> Result<TimeRange, String> {
    let (start, end) = text
        .split_once(',')
        .ok_or_else(|| format!("{text:?} is not START,STOP"))?;
    let side = |s: &str| {
        if s.trim().is_empty() {
            Ok(0)
        } else {
            seconds(s)
        }
    };
    let range = TimeRange {
        start: side(start)?,
        end: side(end)?,
    };
    if range.end != 0 && range.end < range.start {
        return Err(format!("{text:?} ends before it starts"));
    }
    Ok(range)
}

/// Ranges separated by spaces; a space after a range's comma belongs to it (`1, 2` is
/// `1,2`), as perf reads it.
fn absolute_ranges(text: &str) -> Result<Vec<TimeRange>, String> {
    if !text.contains(',') {
        return Err(format!("{text:?} is not START,STOP"));
    }
    let mut pieces = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let comma = rest
            .find(',')
            .ok_or_else(|| format!("{rest:?} is not START,STOP"))?;
        let after = rest[comma + 1..].trim_start();
        let end_len = after.find(char::is_whitespace).unwrap_or(after.len());
        let stop = &after[..end_len];
        if stop.contains(',') {
            return Err(format!("{rest:?} is not START,STOP"));
        }
        pieces.push(format!("{},{stop}", &rest[..comma]));
        rest = after[end_len..].trim_start();
    }
    let ranges = pieces
        .iter()
        .map(|p| absolute_range(p))
        .collect::<Result<Vec<_>, _>>()?;
    for pair in ranges.windows(2) {
        if pair[0].end == 0 || pair[0].end >= pair[1].start {
            return Err("ranges overlap or are out of order".to_string());
        }
    }
    Ok(ranges)
}

/// `N%`: a fraction of 1.
fn percent(text: &str) -> Result<f64, String> {
    let value = text
        .strip_suffix('%')
        .and_then(|n| n.trim_start().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("{text:?} is not a percentage"))?;
    Ok(value / 100.0)
}

/// The range from fraction `from` to fraction `to` of `first..=last`, as perf's
/// `set_percent_time` makes it.
fn percent_range(from: f64, to: f64, first: u64, last: u64) -> Result<TimeRange, String> {
    if !(0.0..=1.0).contains(&from) || !(0.0..=1.0).contains(&to) {
        return Err("percentages must be between 0% and 100%".to_string());
    }
    let total = (last - first) as f64;
    let start = first + (from * total).round() as u64;
    let mut end = first + (to * total).round() as u64;
    if end > start && end != last {
        end -= 1;
    }
    Ok(TimeRange { start, end })
}

/// `A%-B%,...`, `A%/N,...` or `A%` (the first A%).
fn percent_ranges(text: &str, first: u64, last: u64) -> Result<Vec<TimeRange>, String> {
    // One form for every piece, as perf decides it: any `/` makes them all slices, else any
    // `-` makes them all A%-B%.
    let slices = text.contains('/');
    let spans = !slices && text.contains('-');
    let one = |piece: &str| -> Result<TimeRange, String> {
        if slices {
            let (size, n) = piece
                .split_once('/')
                .ok_or_else(|| format!("{piece:?} is not A%/N"))?;
            let size = percent(size)?;
            let n: i64 = n
                .trim()
                .parse()
                .map_err(|_| format!("{piece:?}: {n:?} is not a slice number"))?;
            if size <= 0.0 {
                return Err(format!("{piece:?}: the slice must be more than 0%"));
            }
            percent_range(size * (n - 1) as f64, size * n as f64, first, last)
        } else if spans {
            let (from, to) = piece
                .split_once('-')
                .ok_or_else(|| format!("{piece:?} is not A%-B%"))?;
            percent_range(percent(from)?, percent(to)?, first, last)
        } else {
            percent_range(0.0, percent(piece)?, first, last)
        }
    };
    let pieces: Vec<&str> = text.split(',').collect();
    // A single `A%` only: perf reads `10%,20%` as neither form.
    if pieces.len() > 1 && !text.contains('/') && !text.contains('-') {
        return Err("several percentages need A%-B% or A%/N each".to_string());
    }
    // perf ignores one trailing comma.
    let n = pieces.len() - usize::from(pieces.len() > 1 && pieces[pieces.len() - 1].is_empty());
    pieces[..n].iter().map(|p| one(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, end: u64) -> TimeRange {
        TimeRange { start, end }
    }

    fn parse(text: &str) -> Vec<TimeRange> {
        TimeRanges::parse(text, 0, 0).unwrap().ranges
    }

    #[test]
    fn seconds_with_up_to_nine_decimals_become_nanoseconds() {
        assert_eq!(
            parse("1234.567,1234.789"),
            [r(1_234_567_000_000, 1_234_789_000_000)]
        );
        assert_eq!(parse("1.000000001,2"), [r(1_000_000_001, 2_000_000_000)]);
        assert_eq!(parse(".5,12."), [r(500_000_000, 12_000_000_000)]);
        // Either side open.
        assert_eq!(parse(",2.5"), [r(0, 2_500_000_000)]);
        assert_eq!(parse("3.25,"), [r(3_250_000_000, 0)]);
        assert_eq!(parse(","), [r(0, 0)]);
    }

    #[test]
    fn several_ranges_separated_by_spaces() {
        assert_eq!(
            parse("1234.567,1234.789 1235,"),
            [
                r(1_234_567_000_000, 1_234_789_000_000),
                r(1_235_000_000_000, 0)
            ]
        );
        // A space after a comma belongs to the range, as perf reads it.
        assert_eq!(
            parse("1, 2  3,4"),
            [
                r(1_000_000_000, 2_000_000_000),
                r(3_000_000_000, 4_000_000_000)
            ]
        );
        assert_eq!(
            TimeRanges::parse("1,2 3,4", 0, 0).unwrap().to_arg(),
            "1.000000000,2.000000000 3.000000000,4.000000000"
        );
        assert_eq!(
            TimeRanges::parse(",2", 0, 0).unwrap().to_arg(),
            ",2.000000000"
        );
    }

    #[test]
    fn bounds_are_inclusive_and_time_zero_is_kept() {
        let t = TimeRanges::parse("1,2 3,", 0, 0).unwrap();
        let kept: Vec<u64> = [
            0,
            999_999_999,
            1_000_000_000,
            2_000_000_000,
            2_000_000_001,
            3_000_000_000,
            u64::MAX,
        ]
        .into_iter()
        .filter(|&ns| t.contains(ns))
        .collect();
        assert_eq!(
            kept,
            [0, 1_000_000_000, 2_000_000_000, 3_000_000_000, u64::MAX]
        );
    }

    #[test]
    fn percentages_of_the_first_to_last_sample_as_perf_rounds_them() {
        // 1000 ns from first to last.
        let (first, last) = (5_000, 6_000);
        let p = |t: &str| TimeRanges::parse(t, first, last).unwrap().ranges;
        // 10%-20%: 5100 to 5200, the end one ns before its instant.
        assert_eq!(p("10%-20%"), [r(5_100, 5_199)]);
        // The last sample's time is not moved.
        assert_eq!(p("50%-100%"), [r(5_500, 6_000)]);
        assert_eq!(p("0%-10%,30%-40%"), [r(5_000, 5_099), r(5_300, 5_399)]);
        // The second and third tenths.
        assert_eq!(p("10%/2,10%/3"), [r(5_100, 5_199), r(5_200, 5_299)]);
        // `25%` is the first quarter.
        assert_eq!(p("25%"), [r(5_000, 5_249)]);
        // Rounded to the nearest ns: 1/3 of 1000 is 333.33.., 2/3 is 666.67.
        assert_eq!(p("33.333333333%-66.666666667%"), [r(5_333, 5_666)]);
        // An empty range (a point) keeps its end.
        assert_eq!(p("10%-10%"), [r(5_100, 5_100)]);
        // A trailing comma is ignored, as perf ignores it.
        assert_eq!(p("10%/1,"), [r(5_000, 5_099)]);
        // 3 ns: thirds fall on whole nanoseconds after rounding (1.5 rounds away from 0).
        assert_eq!(
            TimeRanges::parse("50%/1,50%/2", 10, 13).unwrap().ranges,
            [r(10, 11), r(12, 13)]
        );
        assert_eq!(
            TimeRanges::parse("10%-20%", 5_000, 6_000).unwrap().to_arg(),
            "0.000005100,0.000005199"
        );
    }

    #[test]
    fn overlap_counts_each_nanosecond_in_the_union_once() {
        let t = TimeRanges::from_ranges(vec![r(10, 19), r(30, 0)]);
        assert_eq!(t.overlap(0, 10), 0);
        assert_eq!(t.overlap(0, 15), 5);
        assert_eq!(t.overlap(12, 35), 8 + 5);
        assert_eq!(t.overlap(40, 50), 10);
        // Overlapping percent ranges: the union, not the sum.
        let t = TimeRanges::from_ranges(vec![r(10, 29), r(20, 39)]);
        assert_eq!(t.overlap(0, 100), 30);
        assert_eq!(TimeRanges::from_ranges(vec![]).overlap(3, 7), 4);
    }

    #[test]
    fn first_inside_is_where_the_overlap_begins() {
        let t = TimeRanges::from_ranges(vec![r(30, 0), r(10, 19)]);
        assert_eq!(t.first_inside(0, 10), None);
        assert_eq!(t.first_inside(0, 15), Some(10));
        assert_eq!(t.first_inside(12, 35), Some(12));
        assert_eq!(t.first_inside(20, 35), Some(30));
        assert_eq!(t.first_inside(20, 30), None);
        assert_eq!(TimeRanges::from_ranges(vec![]).first_inside(3, 7), Some(3));
        assert_eq!(TimeRanges::from_ranges(vec![]).first_inside(3, 3), None);
    }

    #[test]
    fn diff_sides_split_at_the_colon() {
        assert_eq!(sides("1,2:3,4"), (Some("1,2"), Some("3,4")));
        assert_eq!(sides("1,:"), (Some("1,"), None));
        assert_eq!(sides("10%-20%"), (Some("10%-20%"), Some("10%-20%")));
    }

    #[test]
    fn bad_values_name_the_flag_and_the_text() {
        for (text, why) in [
            ("1234.5", "\"1234.5\" is not START,STOP"),
            ("abc,2", "\"abc\" is not a time in seconds"),
            ("1.0000000001,", "has more than 9 decimals"),
            ("2,1", "ends before it starts"),
            ("1,3 2,4", "overlap"),
            ("3,4 1,2", "overlap"),
            ("1,2,3", "is not START,STOP"),
            ("-1,2", "not a time in seconds"),
            ("10%-120%", "between 0% and 100%"),
            ("x%-20%", "is not a percentage"),
            ("10%/x", "not a slice number"),
            ("0%/1", "more than 0%"),
            ("10%/0", "between 0% and 100%"),
            ("10%,20%", "need A%-B% or A%/N"),
            ("10%-20%,10%/2", "is not A%/N"),
            ("10%-20%,30%", "is not A%-B%"),
            ("10", "is not START,STOP"),
            ("", "is not START,STOP"),
        ] {
            let e = TimeRanges::parse(text, 1, 2).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--time {text:?}: ")), "{e}");
            assert!(e.contains(why), "{text}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
