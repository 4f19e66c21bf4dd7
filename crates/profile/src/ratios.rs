//! The intervals of many frames' ratios at once (every frame of a flame graph): the method
//! of [`interval::ratio_interval`](crate::interval::ratio_interval), fast enough for tens of
//! thousands of frames. The conditional binomial's mid-p interval costs tens of microseconds
//! (root finding on incomplete beta functions), so it is kept per distinct (numerator
//! samples, total samples), which thin frames share; where both counts are large the
//! closed-form Wilson score interval stands in, whose bounds are within 1% of mid-p's there
//! (the tests measure it on a grid of counts and confidences): well under what a tooltip shows.

use std::collections::HashMap;

use statrs::distribution::{ContinuousCDF, Normal};

use crate::interval::{
    mid_p, paired_ratio_interval, paired_share_interval, Interval, PairedMoments,
};
use crate::Count;

/// What a ratio is, for a leader-sampled group's interval: a share of the denominator
/// (stall cycles of cycles: `paired_share_interval`, on the logit scale) or a ratio without
/// bound (CPI: `paired_ratio_interval`, on the log scale).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RatioKind {
    Share,
    Ratio,
}

/// Both counts at least this large: the Wilson score interval instead of mid-p.
const WILSON_FROM: u64 = 200;

/// The fewest samples whose per-sample deltas give a frame's interval: the method's
/// coverage was measured from 3 samples up (docs/uncertainty.md); one sample has no
/// variance, and two of equal ratios would claim certainty. Fewer: the interval of
/// independently sampled events, from the sample counts.
pub const MIN_PAIRED_SAMPLES: u64 = 3;

/// [`interval::ratio_interval`](crate::interval::ratio_interval) for many frames at one
/// confidence.
#[derive(Clone)]
pub struct RatioIntervals {
    confidence: f64,
    z: f64,
    memo: HashMap<(u64, u64), Option<Interval>>,
}

impl RatioIntervals {
    /// `None` when the confidence is not in (0, 1).
    pub fn new(confidence: f64) -> Option<RatioIntervals> {
        if !(confidence > 0.0 && confidence < 1.0) {
            return None;
        }
        let z = Normal::standard().inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
        Some(RatioIntervals {
            confidence,
            z,
            memo: HashMap::new(),
        })
    }

    pub fn confidence(&self) -> f64 {
        self.confidence
    }

    /// The interval of `numerator.period / denominator.period`, as
    /// [`ratio_interval`](crate::interval::ratio_interval) gives it.
    pub fn ratio(
        &mut self,
        numerator: Count,
        denominator: Count,
        numerator_column: Count,
    ) -> Option<Interval> {
        let mean =
            |c: Count| (c.samples > 0 && c.period > 0).then(|| c.period as f64 / c.samples as f64);
        let den_period = mean(denominator)?;
        let num_period = mean(numerator).or_else(|| mean(numerator_column))?;
        let (k, n) = (
            numerator.samples,
            numerator.samples.checked_add(denominator.samples)?,
        );
        let p = self.proportion(k, n)?;
        let scale = num_period / den_period;
        let odds = |p: f64| p / (1.0 - p);
        Some(Interval {
            lo: odds(p.lo) * scale,
            hi: odds(p.hi) * scale,
        })
    }

    /// The interval of a frame's ratio `numerator.period / denominator.period`: from a
    /// leader-sampled group's per-sample deltas (`moments`, columns numerator then
    /// denominator) when they cover the whole ratio (their sums are exactly the two periods:
    /// every sample carried both counters) and there are at least [`MIN_PAIRED_SAMPLES`],
    /// else as for independently sampled events
    /// ([`RatioIntervals::ratio`]). This and [`RatioIntervals::share_in_formula`] are the
    /// one place that chooses the method.
    pub fn frame(
        &mut self,
        numerator: Count,
        denominator: Count,
        numerator_column: Count,
        moments: Option<&PairedMoments>,
        kind: RatioKind,
    ) -> Option<Interval> {
        let covering = moments.filter(|m| {
            m.n >= MIN_PAIRED_SAMPLES
                && m.sum_a == u128::from(numerator.period)
                && m.sum_b == u128::from(denominator.period)
        });
        match (covering, kind) {
            (Some(m), RatioKind::Share) => paired_share_interval(m, self.confidence),
            (Some(m), RatioKind::Ratio) => paired_ratio_interval(m, self.confidence),
            (None, RatioKind::Share) => self
                .ratio(numerator, denominator, numerator_column)
                .map(Interval::within_share),
            (None, RatioKind::Ratio) => self.ratio(numerator, denominator, numerator_column),
        }
    }

    /// The interval of a frame's `share` that a formula computes from several columns (a
    /// top-down category): from the per-sample deltas of the pair of columns whose ratio the
    /// share is (`paired`: their moments, and the share's units per unit of that pair's
    /// denominator: 1 when the pair's ratio is the share itself, a share then, else a ratio
    /// put on the share's scale by share / ratio) when there are at least
    /// [`MIN_PAIRED_SAMPLES`]; else the mid-p interval of the share as a proportion of the
    /// frame's `samples` of the width (`None`: its counts are not samples, as folded
    /// text's). The share need not be either column's ratio exactly: the pair's interval is
    /// moved onto it.
    pub fn share_in_formula(
        &mut self,
        share: f64,
        paired: Option<(&PairedMoments, f64)>,
        samples: Option<u64>,
    ) -> Option<Interval> {
        if let Some((m, per)) = paired {
            let interval = if m.n < MIN_PAIRED_SAMPLES {
                None
            } else if per == 1.0 {
                paired_share_interval(m, self.confidence)
            } else {
                paired_ratio_interval(m, self.confidence)
            };
            if let Some(interval) = interval {
                let scale = match m.ratio() {
                    Some(r) if r > 0.0 => share / r,
                    _ => 1.0 / per,
                };
                return Some(Interval {
                    lo: interval.lo * scale,
                    hi: interval.hi * scale,
                });
            }
        }
        let n = samples?;
        let k = (share.clamp(0.0, 1.0) * n as f64).round() as u64;
        mid_p(k.min(n), n, self.confidence)
    }

    /// The interval of a binomial proportion, `k` of `n`.
    fn proportion(&mut self, k: u64, n: u64) -> Option<Interval> {
        if k >= WILSON_FROM && n.saturating_sub(k) >= WILSON_FROM {
            return Some(wilson(k, n, self.z));
        }
        let confidence = self.confidence;
        *self
            .memo
            .entry((k, n))
            .or_insert_with(|| mid_p(k, n, confidence))
    }
}

/// The Wilson score interval for `k` of `n` at the normal quantile `z`.
fn wilson(k: u64, n: u64, z: f64) -> Interval {
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Interval {
        lo: centre - half,
        hi: centre + half,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::ratio_interval;

    fn c(samples: u64, period: u64) -> Count {
        Count { samples, period }
    }

    /// A stall share's interval stays within [0, 1] whatever the counts (issue 41: a report
    /// said `100.00% ±5.85`, its JSON an upper end of 1.058); CPI's is not cut.
    #[test]
    fn a_share_s_interval_is_within_0_and_1_and_a_ratio_s_is_not() {
        let mut r = RatioIntervals::new(0.95).unwrap();
        for (stalls, cycles) in [(400, 400), (450, 400), (30, 30), (1, 1), (0, 5), (5, 0)] {
            let (num, den) = (c(stalls, stalls * 1000), c(cycles, cycles * 1000));
            let share = r.frame(num, den, num, None, RatioKind::Share);
            let ratio = r.frame(num, den, num, None, RatioKind::Ratio);
            if let Some(i) = share {
                assert!(
                    0.0 <= i.lo && i.lo <= i.hi && i.hi <= 1.0,
                    "{stalls}/{cycles}: {i:?}"
                );
                let uncut = ratio.unwrap();
                assert_eq!((i.lo, i.hi), (uncut.lo.min(1.0), uncut.hi.min(1.0)));
            }
        }
        let ratio = r.frame(
            c(400, 400_000),
            c(400, 400_000),
            c(400, 400_000),
            None,
            RatioKind::Ratio,
        );
        assert!(ratio.unwrap().hi > 1.0);
        // Per-sample deltas whose stalls pass the cycles (counters read apart).
        let mut m = PairedMoments::default();
        for (a, b) in [(1010, 1000), (990, 1000), (1020, 1000), (1000, 1000)] {
            m.push(a, b);
        }
        let (num, den) = (c(4, 4020), c(4, 4000));
        let i = r.frame(num, den, num, Some(&m), RatioKind::Share).unwrap();
        assert!(i.hi <= 1.0 && i.lo < 1.0, "{i:?}");
    }

    #[test]
    fn small_counts_are_ratio_interval_exactly() {
        let mut r = RatioIntervals::new(0.95).unwrap();
        for (s, k) in [(0, 1), (1, 3), (5, 20), (199, 5000), (3, 100_000)] {
            let (num, den, col) = (c(s, s * 2000), c(k, k * 1000), c(10, 20_000));
            assert_eq!(r.ratio(num, den, col), ratio_interval(num, den, col, 0.95));
            // Memoised: the same again.
            assert_eq!(r.ratio(num, den, col), ratio_interval(num, den, col, 0.95));
        }
        assert_eq!(r.ratio(c(1, 1), c(0, 0), c(1, 1)), None);
        assert!(RatioIntervals::new(1.0).is_none());
    }

    #[test]
    fn large_counts_agree_with_mid_p_to_one_percent_of_each_bound() {
        for confidence in [0.8, 0.95, 0.99] {
            let mut r = RatioIntervals::new(confidence).unwrap();
            for k in [200, 250, 500, 1_000, 10_000, 400_000] {
                for other in [200, 300, 1_000, 5_000, 100_000, 2_000_000] {
                    let (num, den, col) = (c(k, k), c(other, other), c(k, k));
                    let fast = r.ratio(num, den, col).unwrap();
                    let exact = ratio_interval(num, den, col, confidence).unwrap();
                    for (a, b) in [(fast.lo, exact.lo), (fast.hi, exact.hi)] {
                        assert!(
                            (a - b).abs() <= 0.01 * b,
                            "{k}/{other} at {confidence}: {fast:?} against mid-p {exact:?}"
                        );
                    }
                }
            }
        }
    }
}
