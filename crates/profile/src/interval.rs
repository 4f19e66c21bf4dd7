//! Confidence intervals for the numbers a CPI flame graph shows, and the `diff` gate's test of
//! a frame's growth. Pure arithmetic on counts the profile already has; the methods, their
//! assumptions and the simulations that check them are in `docs/uncertainty.md`.
//!
//! - [`ratio_interval`]: the ratio of two independently sampled events (stall share =
//!   stalls / cycles, CPI = cycles / instructions) from their [`Count`]s: a conditional
//!   binomial (mid-p) interval, mapped through the mean periods.
//! - [`PairedMoments`], [`paired_share_interval`] (stall share) and
//!   [`paired_ratio_interval`] (CPI): leader-sampled groups, where every sample carries both
//!   counters' deltas: the ratio estimator's standard error on the logit or log scale, with
//!   Student-t quantiles.
//! - [`growth_test`]: did a frame's share of the column grow by more than a number of points,
//!   significantly? Sampling variance with one run per side, between-run variance (Welch)
//!   with several.
//! - [`Interval`]: the bounds, their `±` text ([`Interval::plus_minus`]) and whether one is
//!   too wide to place a frame on the stall colour scale ([`STALL_COLOUR_WIDTH`]).
//!
//! Every function returns `None` rather than a number it cannot stand behind (no samples,
//! a confidence outside (0, 1), saturated sums).

use crate::profile::Count;
pub use crate::profile::PairedMoments;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use statrs::function::beta::{beta_reg, inv_beta_reg};

/// The confidence of intervals and of the gate unless the user asks for another (the
/// `--confidence` flag of issue 25).
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// The widest stall-share interval (on the 0..1 scale) with which a frame is still placed on
/// the colour scale; a frame with a wider one is for the picture to mark (hatched or
/// desaturated).
///
/// A quarter of the scale: at a stall share near one half, a 95% interval is this wide with
/// about 60 samples (2 × 1.96 × √(¼ / 60) ≈ 0.25), so frames with fewer samples than that are
/// marked, and the colour of any frame not marked is known to within about one eighth of the
/// scale either way: the difference between "mostly retiring" and "mostly stalled" is then
/// never a matter of luck.
pub const STALL_COLOUR_WIDTH: f64 = 0.25;

/// A confidence interval `[lo, hi]`. `hi` may be `f64::INFINITY` (a ratio whose denominator
/// could be zero at this confidence, or whose numerator nothing bounds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// `hi - lo`.
    pub fn width(self) -> f64 {
        self.hi - self.lo
    }

    /// The interval of a share (stall cycles of cycles, a top-down category of slots)
    /// within [0, 1], where the true share lies: the bounds of independently sampled counts
    /// (or of per-sample deltas read a few cycles apart) can pass 1, and cutting what lies
    /// beyond 1 leaves out no value the share can take, so the coverage is unchanged.
    pub fn within_share(self) -> Interval {
        Interval {
            lo: self.lo.clamp(0.0, 1.0),
            hi: self.hi.clamp(0.0, 1.0),
        }
    }

    /// Whether `x` lies in the closed interval.
    pub fn contains(self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// Whether the interval is wider than `limit` (an unbounded or NaN interval is).
    pub fn too_wide(self, limit: f64) -> bool {
        let width = self.width();
        width.is_nan() || width > limit
    }

    /// Whether a stall-share interval is too wide to place its frame on the colour scale
    /// ([`STALL_COLOUR_WIDTH`]).
    pub fn too_wide_for_stall_colour(self) -> bool {
        self.too_wide(STALL_COLOUR_WIDTH)
    }

    /// The interval as the text report shows it after `estimate`: `±h` (the larger of the two
    /// half-widths, so the text never understates) when the interval is roughly symmetric
    /// about the estimate (the two sides within a quarter of each other), otherwise
    /// `[lo, hi]`; `decimals` digits after the point; an unbounded upper end is `∞`.
    ///
    /// ```
    /// use cpiflame_profile::interval::Interval;
    /// assert_eq!(Interval { lo: 0.40, hi: 0.50 }.plus_minus(0.45, 2), "±0.05");
    /// assert_eq!(Interval { lo: 0.0, hi: 0.12 }.plus_minus(0.01, 2), "[0.00, 0.12]");
    /// ```
    pub fn plus_minus(self, estimate: f64, decimals: usize) -> String {
        let above = self.hi - estimate;
        let below = estimate - self.lo;
        if !self.hi.is_finite() {
            return format!("[{:.*}, ∞)", decimals, self.lo);
        }
        let (small, large) = if above < below {
            (above, below)
        } else {
            (below, above)
        };
        if small >= 0.0 && large <= 1.25 * small {
            format!("±{:.*}", decimals, large)
        } else {
            format!("[{:.*}, {:.*}]", decimals, self.lo, decimals, self.hi)
        }
    }
}

/// The two-sided tail probability of each side, `(1 - confidence) / 2`, for a confidence in
/// (0, 1).
fn half_alpha(confidence: f64) -> Option<f64> {
    (confidence > 0.0 && confidence < 1.0).then(|| (1.0 - confidence) / 2.0)
}

/// The mid-p interval for a binomial proportion: `k` successes in `n` trials.
///
/// Each bound `p` solves P(X beyond k) + ½ P(X = k) = (1 - confidence) / 2 for
/// X ~ Binomial(n, p) (Lancaster's mid-p). At `k = 0` the lower bound is 0 and the upper one
/// is `1 - (1 - confidence)^(1/n)`, which is the one-sided bound at `confidence`; at `k = n`
/// the mirror image. Clopper-Pearson's interval ([`clopper_pearson`]) is never below the
/// nominal coverage but is well above it at small counts (98-99% for a 95% interval, see
/// `docs/uncertainty.md`), so frames with few samples would look more uncertain than they
/// are; mid-p's coverage stays near nominal.
///
/// `None` when `n == 0`, `k > n` or the confidence is not in (0, 1).
pub fn mid_p(k: u64, n: u64, confidence: f64) -> Option<Interval> {
    let alpha2 = half_alpha(confidence)?;
    if n == 0 || k > n {
        return None;
    }
    let lo = if k == 0 {
        0.0
    } else {
        mid_p_lower(k, n, alpha2)
    };
    let hi = if k == n {
        1.0
    } else {
        1.0 - mid_p_lower(n - k, n, alpha2)
    };
    Some(Interval { lo, hi })
}

/// The lower mid-p bound for `1 <= k <= n`: the root of
/// ½ (P(X ≥ k) + P(X ≥ k + 1)) = alpha2, with P(X ≥ k) = I_p(k, n - k + 1).
fn mid_p_lower(k: u64, n: u64, alpha2: f64) -> f64 {
    if k == n {
        // ½ P(X = n) = ½ pⁿ.
        return (2.0 * alpha2).powf(1.0 / n as f64);
    }
    let (kf, nf) = (k as f64, n as f64);
    let at_least_k = |p: f64| beta_reg(kf, nf - kf + 1.0, p);
    let above_k = |p: f64| beta_reg(kf + 1.0, nf - kf, p);
    let f = |p: f64| 0.5 * (at_least_k(p) + above_k(p)) - alpha2;
    // The mid-p sum is the mean of two increasing tails; the root lies between the points
    // where each of them alone equals alpha2.
    let mut a = inv_beta_reg(kf, nf - kf + 1.0, alpha2);
    let mut b = inv_beta_reg(kf + 1.0, nf - kf, alpha2);
    let (mut fa, mut fb) = (f(a), f(b));
    if fa >= 0.0 {
        return a;
    }
    if fb <= 0.0 {
        return b;
    }
    // Illinois false position: superlinear, and never leaves the bracket.
    let mut side = 0i8;
    for _ in 0..100 {
        let c = (a * fb - b * fa) / (fb - fa);
        let fc = f(c);
        if fc.abs() <= 1e-14 * alpha2 || (b - a) <= 1e-13 * b {
            return c;
        }
        if (fc < 0.0) == (fa < 0.0) {
            a = c;
            fa = fc;
            if side == -1 {
                fb /= 2.0;
            }
            side = -1;
        } else {
            b = c;
            fb = fc;
            if side == 1 {
                fa /= 2.0;
            }
            side = 1;
        }
    }
    0.5 * (a + b)
}

/// The Clopper-Pearson ("exact") interval for a binomial proportion: `k` successes in `n`
/// trials; its coverage is at least `confidence` for every true proportion. Kept for
/// comparison (the simulations in `docs/uncertainty.md` measure both); [`ratio_interval`]
/// uses [`mid_p`].
///
/// `None` when `n == 0`, `k > n` or the confidence is not in (0, 1).
pub fn clopper_pearson(k: u64, n: u64, confidence: f64) -> Option<Interval> {
    let alpha2 = half_alpha(confidence)?;
    if n == 0 || k > n {
        return None;
    }
    let (kf, nf) = (k as f64, n as f64);
    let lo = if k == 0 {
        0.0
    } else {
        inv_beta_reg(kf, nf - kf + 1.0, alpha2)
    };
    let hi = if k == n {
        1.0
    } else {
        inv_beta_reg(kf + 1.0, nf - kf, 1.0 - alpha2)
    };
    Some(Interval { lo, hi })
}

/// The mean period of a count's samples, if it has any.
fn mean_period(count: Count) -> Option<f64> {
    (count.samples > 0 && count.period > 0).then(|| count.period as f64 / count.samples as f64)
}

/// An interval for `numerator.period / denominator.period` (a frame's stall share, its CPI)
/// when the two events were sampled independently, each with its own period.
///
/// Model: the frame's samples of each event are Poisson counts, `k_num` and `k_den`, with
/// means (events in the frame) / (mean period). Given their sum `n`, `k_num` is
/// Binomial(n, p) with p = λ_num / (λ_num + λ_den), so the [`mid_p`] interval on p maps to
/// one on the ratio by r = p / (1 - p) × (mean period of the numerator / mean period of the
/// denominator). With a fixed period per event this is exact up to the mid-p rule; in
/// frequency mode the periods are the frame's mean periods, and the interval is too narrow
/// by about √(1 + CV²) when the periods of the samples vary with coefficient of variation CV
/// (the profile keeps sums of periods, not their squares).
///
/// `numerator_column` is the numerator's count over the whole profile (its column total): a
/// frame without numerator samples has no period of its own, and the column's mean period
/// stands in (exact with a fixed period). Such a frame gets `[0, hi]`.
///
/// `None` when the denominator has no samples (or no period), when the numerator's period is
/// unknown (no samples in the frame or the column), or when the confidence is not in (0, 1).
/// The interval is not clamped here (this is also CPI's): a share's caller takes
/// [`Interval::within_share`].
pub fn ratio_interval(
    numerator: Count,
    denominator: Count,
    numerator_column: Count,
    confidence: f64,
) -> Option<Interval> {
    let den_period = mean_period(denominator)?;
    let num_period = mean_period(numerator).or_else(|| mean_period(numerator_column))?;
    let n = numerator.samples.checked_add(denominator.samples)?;
    let p = mid_p(numerator.samples, n, confidence)?;
    let scale = num_period / den_period;
    // p / (1 - p); p.hi < 1 because the denominator has samples.
    let odds = |p: f64| p / (1.0 - p);
    Some(Interval {
        lo: odds(p.lo) * scale,
        hi: odds(p.hi) * scale,
    })
}

/// An interval for `sum_a / sum_b` of a leader-sampled group (CPI: cycles over
/// instructions), from the per-sample deltas' variances and covariance: the ratio
/// estimator's delta-method standard error on the log scale, with a Student-t quantile on
/// n - 1 degrees of freedom. For a numerator that is part of the denominator (stall cycles
/// within cycles) use [`paired_share_interval`].
///
/// R̂ = ā / b̄; its standard error is se = √((s_aa - 2R̂ s_ab + R̂² s_bb) / n) / b̄ (the
/// variance of the residuals a - R̂b, over n, over b̄²); the interval is
/// [R̂ e^(-t·se/R̂), R̂ e^(t·se/R̂)]. The log scale keeps the bounds positive and makes the
/// interval longer upward, as the ratio's distribution is when the numerator comes in
/// bursts: Fieller's interval (exact for normal pairs) covers less wherever the per-sample
/// values are skewed (90.5% against 93.5% in one case of `docs/uncertainty.md`).
///
/// Cases a standard error cannot speak for: when b̄ is within t standard errors of 0 the
/// ratio is unbounded, `[0, ∞)`; when no sample has numerator counts, `[0, 0]` would claim
/// certainty from silence, so the interval is `[0, ∞)` too (a ratio without a bound on its
/// numerator has nothing better).
///
/// `None` with fewer than 2 samples (no variance), `sum_b == 0`, a saturated accumulator or a
/// confidence not in (0, 1).
pub fn paired_ratio_interval(moments: &PairedMoments, confidence: f64) -> Option<Interval> {
    let e = PairedEstimate::new(moments, confidence)?;
    if e.unbounded || moments.sum_a == 0 {
        return Some(Interval {
            lo: 0.0,
            hi: f64::INFINITY,
        });
    }
    let c = e.t * e.se / e.ratio;
    Some(Interval {
        lo: e.ratio * (-c).exp(),
        hi: e.ratio * c.exp(),
    })
}

/// An interval for `sum_a / sum_b` of a leader-sampled group when each sample's numerator is
/// part of its denominator (stall cycles within the cycles of the same period): the stall
/// share. As [`paired_ratio_interval`], but on the logit scale, ln(R / (1 - R)), which is
/// the log scale near 0 and the log of 1 - R near 1: per-sample stall fractions are skewed
/// toward the nearer end, and an interval symmetric in R undercovers at both (measured in
/// `docs/uncertainty.md`).
///
/// No sample with stall cycles gives `[0, 1 - (1 - confidence)^(1/n)]`, the one-sided bound
/// on the share of samples with any (which bounds the ratio, a sample's stalls being at most
/// its cycles); every sample entirely stalled gives the mirror image. A ratio at or above 1
/// (the counters are read a few cycles apart, so a sample can show more stall cycles than
/// cycles) falls back to the log scale, cut to [0, 1] ([`Interval::within_share`]).
///
/// `None` as for [`paired_ratio_interval`].
pub fn paired_share_interval(moments: &PairedMoments, confidence: f64) -> Option<Interval> {
    let e = PairedEstimate::new(moments, confidence)?;
    let n = moments.n as f64;
    let one_sided = 1.0 - (1.0 - confidence).powf(1.0 / n);
    if moments.sum_a == 0 {
        return Some(Interval {
            lo: 0.0,
            hi: one_sided,
        });
    }
    if moments.sum_a == moments.sum_b {
        return Some(Interval {
            lo: 1.0 - one_sided,
            hi: 1.0,
        });
    }
    if e.unbounded || e.ratio >= 1.0 {
        return paired_ratio_interval(moments, confidence).map(Interval::within_share);
    }
    let (r, c) = (e.ratio, e.t * e.se / (e.ratio * (1.0 - e.ratio)));
    let logit = (r / (1.0 - r)).ln();
    let expit = |x: f64| 1.0 / (1.0 + (-x).exp());
    Some(Interval {
        lo: expit(logit - c),
        hi: expit(logit + c),
    })
}

/// The ratio of means of paired deltas, its standard error and the t quantile.
struct PairedEstimate {
    ratio: f64,
    se: f64,
    t: f64,
    /// b̄ within t standard errors of 0.
    unbounded: bool,
}

impl PairedEstimate {
    fn new(moments: &PairedMoments, confidence: f64) -> Option<PairedEstimate> {
        let alpha2 = half_alpha(confidence)?;
        if moments.n < 2 || moments.sum_b == 0 || moments.saturated() {
            return None;
        }
        let n = moments.n as f64;
        let (ma, mb) = (moments.sum_a as f64 / n, moments.sum_b as f64 / n);
        // Sample (co)variances from the raw sums. Cancellation loses about log10(mean² /
        // variance) of f64's 16 digits: harmless at the widths shown.
        let centred = |sum_xy: u128, mx: f64, my: f64| (sum_xy as f64 - n * mx * my) / (n - 1.0);
        let s_aa = centred(moments.sum_aa, ma, ma).max(0.0);
        let s_bb = centred(moments.sum_bb, mb, mb).max(0.0);
        let s_ab = centred(moments.sum_ab, ma, mb);
        let t = StudentsT::new(0.0, 1.0, n - 1.0)
            .ok()?
            .inverse_cdf(1.0 - alpha2);
        let ratio = ma / mb;
        let residual = (s_aa - 2.0 * ratio * s_ab + ratio * ratio * s_bb).max(0.0);
        Some(PairedEstimate {
            ratio,
            se: (residual / n).sqrt() / mb,
            t,
            unbounded: mb * mb <= t * t * s_bb / n,
        })
    }
}

/// One run's share of a column for one frame: the frame's count and the column's total
/// (the frame's share is `frame.period / total.period`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    pub frame: Count,
    pub total: Count,
}

impl Share {
    /// The share as a fraction, `None` when the total has no samples or no period.
    pub fn fraction(self) -> Option<f64> {
        (self.total.samples > 0 && self.total.period > 0)
            .then(|| self.frame.period as f64 / self.total.period as f64)
    }

    /// The sampling variance of the share's fraction: the frame's samples as a binomial
    /// proportion of the total's, with one success and one failure added (Agresti-Caffo) so
    /// that a frame absent from a run still has a variance.
    fn sampling_variance(self) -> f64 {
        let n = self.total.samples as f64 + 2.0;
        let p = (self.frame.samples.min(self.total.samples) as f64 + 1.0) / n;
        p * (1.0 - p) / n
    }
}

/// The result of [`growth_test`]; all in percentage points of the column.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Growth {
    /// The share after minus the share before (means over the runs of each side).
    pub growth: f64,
    /// The interval for the true growth at the test's confidence.
    pub interval: Interval,
    /// Whether the whole interval lies above `pct_points`: the share grew by more than the
    /// threshold, and that is not sampling noise at the test's confidence.
    pub exceeds: bool,
}

/// Did a frame's share of a column grow by more than `pct_points` percentage points from the
/// runs `before` to the runs `after`, at `confidence`?
///
/// The growth is the difference of the mean shares. Its variance is, per side, the variance
/// of the side's mean: with one run, the sampling variance (the frame's samples as a binomial
/// proportion of the column's); with several, the between-run variance of the shares over
/// the number of runs, but never less than the mean sampling variance over the number of
/// runs (runs cannot truly differ less than sampling makes them). The interval uses a normal
/// quantile when both sides have one run, otherwise a Student-t quantile with the
/// Welch-Satterthwaite degrees of freedom.
///
/// `exceeds` is true when the interval's lower bound is above `pct_points`: a one-sided test
/// at level (1 - confidence) / 2 that the growth exceeds the threshold. `docs/uncertainty.md`
/// says why this rule, rather than "grew by more than the threshold and significantly above
/// 0", keeps the whole-profile false-alarm rate under 1 - confidence without a correction for
/// the number of frames.
///
/// `None` when a side has no runs, a run's total has no samples or period, or the confidence
/// is not in (0, 1).
pub fn growth_test(
    before: &[Share],
    after: &[Share],
    pct_points: f64,
    confidence: f64,
) -> Option<Growth> {
    let alpha2 = half_alpha(confidence)?;
    let b = side(before)?;
    let a = side(after)?;
    let growth = 100.0 * (a.mean - b.mean);
    let variance = a.variance + b.variance;
    let quantile = match (a.runs, b.runs) {
        (1, 1) => Normal::standard().inverse_cdf(1.0 - alpha2),
        _ => {
            // Welch-Satterthwaite; a side of one run has a known (sampling) variance.
            let term = |s: &Side| {
                if s.runs > 1 {
                    s.variance * s.variance / (s.runs - 1) as f64
                } else {
                    0.0
                }
            };
            let denom = term(&a) + term(&b);
            let df = if denom > 0.0 {
                variance * variance / denom
            } else {
                f64::INFINITY
            };
            if df.is_finite() {
                StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(1.0 - alpha2)
            } else {
                Normal::standard().inverse_cdf(1.0 - alpha2)
            }
        }
    };
    let half = 100.0 * quantile * variance.sqrt();
    let interval = Interval {
        lo: growth - half,
        hi: growth + half,
    };
    Some(Growth {
        growth,
        interval,
        exceeds: interval.lo > pct_points,
    })
}

/// One side of a growth test: its mean share and the variance of that mean (fractions).
struct Side {
    runs: usize,
    mean: f64,
    variance: f64,
}

fn side(runs: &[Share]) -> Option<Side> {
    if runs.is_empty() {
        return None;
    }
    let m = runs.len() as f64;
    let mut shares = Vec::with_capacity(runs.len());
    for run in runs {
        shares.push(run.fraction()?);
    }
    let mean = shares.iter().sum::<f64>() / m;
    let sampling = runs.iter().map(|r| r.sampling_variance()).sum::<f64>() / m;
    let variance = if runs.len() == 1 {
        sampling
    } else {
        let between = shares.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / (m - 1.0);
        between.max(sampling) / m
    };
    Some(Side {
        runs: runs.len(),
        mean,
        variance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(X ≥ k) for X ~ Binomial(n, p), summed term by term from the mode with the pmf's
    /// ratio recurrence: an oracle independent of the incomplete beta function.
    fn upper_tail(k: u64, n: u64, p: f64) -> f64 {
        let mode = (((n as f64 + 1.0) * p).floor() as u64).min(n);
        let (mut total, mut tail) = (1.0, if mode >= k { 1.0 } else { 0.0 });
        let (mut w, mut j) = (1.0f64, mode);
        while j < n && w > 1e-300 {
            w *= (n - j) as f64 / (j + 1) as f64 * p / (1.0 - p);
            j += 1;
            total += w;
            if j >= k {
                tail += w;
            }
        }
        let (mut w, mut j) = (1.0f64, mode);
        while j > 0 && w > 1e-300 {
            w *= j as f64 / (n - j + 1) as f64 * (1.0 - p) / p;
            j -= 1;
            total += w;
            if j >= k {
                tail += w;
            }
        }
        tail / total
    }

    fn close(x: f64, y: f64, tol: f64) -> bool {
        (x - y).abs() <= tol
    }

    #[test]
    fn clopper_pearson_matches_published_values() {
        // Clopper & Pearson's bounds as tabled (e.g. Brown, Cai & DasGupta 2001): 3 of 10
        // gives [0.0667, 0.6525]; 0 of 10 gives [0, 1 - 0.025^(1/10)] = [0, 0.3085].
        let i = clopper_pearson(3, 10, 0.95).unwrap();
        assert!(
            close(i.lo, 0.066739, 1e-6) && close(i.hi, 0.652453, 1e-6),
            "{i:?}"
        );
        let i = clopper_pearson(0, 10, 0.95).unwrap();
        assert_eq!(i.lo, 0.0);
        assert!(close(i.hi, 1.0 - 0.025f64.powf(0.1), 1e-12), "{i:?}");
        let i = clopper_pearson(10, 10, 0.95).unwrap();
        assert!(
            close(i.lo, 0.025f64.powf(0.1), 1e-12) && i.hi == 1.0,
            "{i:?}"
        );
    }

    #[test]
    fn mid_p_bounds_solve_their_definition() {
        // Each bound p makes P(X beyond k) + ½ P(X = k) equal (1 - confidence) / 2, checked
        // with binomial tails summed term by term.
        for &(k, n) in &[
            (1u64, 1u64),
            (1, 2),
            (3, 10),
            (7, 9),
            (1, 1000),
            (50, 100),
            (999, 1000),
            (20_000, 100_000),
            (5, 1_000_000),
            (1000, 1_000_000),
        ] {
            for &conf in &[0.8, 0.95, 0.99] {
                let a2 = (1.0 - conf) / 2.0;
                let i = mid_p(k, n, conf).unwrap();
                let lo_tail = 0.5 * (upper_tail(k, n, i.lo) + upper_tail(k + 1, n, i.lo));
                assert!(
                    close(lo_tail, a2, 1e-9),
                    "k={k} n={n} lo={} {lo_tail}",
                    i.lo
                );
                if k < n {
                    let hi_tail =
                        0.5 * ((1.0 - upper_tail(k, n, i.hi)) + (1.0 - upper_tail(k + 1, n, i.hi)));
                    assert!(
                        close(hi_tail, a2, 1e-9),
                        "k={k} n={n} hi={} {hi_tail}",
                        i.hi
                    );
                }
                let cp = clopper_pearson(k, n, conf).unwrap();
                assert!(
                    cp.lo <= i.lo && i.hi <= cp.hi,
                    "mid-p inside Clopper-Pearson"
                );
            }
        }
        // No successes: [0, 1 - α^(1/n)], the one-sided bound.
        let i = mid_p(0, 20, 0.95).unwrap();
        assert_eq!(i.lo, 0.0);
        assert!(close(i.hi, 1.0 - 0.05f64.powf(1.0 / 20.0), 1e-12));
        assert_eq!(mid_p(0, 0, 0.95), None);
        assert_eq!(mid_p(3, 2, 0.95), None);
        assert_eq!(mid_p(1, 2, 1.0), None);
        assert_eq!(mid_p(1, 2, f64::NAN), None);
    }

    #[test]
    fn ratio_interval_maps_the_proportion_through_the_periods() {
        // 30 stall samples at period 1000, 70 cycle samples at period 2000: the estimate is
        // 30000 / 140000, and the bounds are p/(1-p) × 1000/2000 of the mid-p bounds.
        let stalls = Count {
            samples: 30,
            period: 30_000,
        };
        let cycles = Count {
            samples: 70,
            period: 140_000,
        };
        let i = ratio_interval(stalls, cycles, stalls, 0.95).unwrap();
        let p = mid_p(30, 100, 0.95).unwrap();
        assert!(close(i.lo, p.lo / (1.0 - p.lo) * 0.5, 1e-15));
        assert!(close(i.hi, p.hi / (1.0 - p.hi) * 0.5, 1e-15));
        assert!(i.contains(30_000.0 / 140_000.0));
        // No stall samples: [0, hi] with the column's period.
        let column = Count {
            samples: 500,
            period: 500_000,
        };
        let i = ratio_interval(Count::default(), cycles, column, 0.95).unwrap();
        let p = mid_p(0, 70, 0.95).unwrap();
        assert_eq!(i.lo, 0.0);
        assert!(close(i.hi, p.hi / (1.0 - p.hi) * 0.5, 1e-15));
        // No denominator samples, or no period anywhere: nothing to say.
        assert_eq!(ratio_interval(stalls, Count::default(), stalls, 0.95), None);
        assert_eq!(
            ratio_interval(Count::default(), cycles, Count::default(), 0.95),
            None
        );
    }

    #[test]
    fn paired_interval_of_exactly_proportional_deltas_is_a_point() {
        let mut m = PairedMoments::default();
        for b in [1000u64, 1200, 900, 1100] {
            m.push(b / 4, b);
        }
        for i in [
            paired_ratio_interval(&m, 0.95).unwrap(),
            paired_share_interval(&m, 0.95).unwrap(),
        ] {
            assert!(close(i.lo, 0.25, 1e-9) && close(i.hi, 0.25, 1e-9), "{i:?}");
        }
    }

    #[test]
    fn paired_interval_matches_the_log_scale_delta_method_by_hand() {
        // Pairs (a, b): (1, 10), (3, 10), (2, 12): ā = 2, b̄ = 32/3, R̂ = 6/32, s_aa = 1,
        // s_bb = 4/3, s_ab = 0; t(0.975, 2) = 4.302652729911275 (published tables: 4.303).
        let mut m = PairedMoments::default();
        for (a, b) in [(1, 10), (3, 10), (2, 12)] {
            m.push(a, b);
        }
        let t: f64 = 4.302652729911275;
        let r: f64 = 6.0 / 32.0;
        let c = t * ((1.0 + r * r * 4.0 / 3.0) / 3.0).sqrt() / 2.0;
        let i = paired_ratio_interval(&m, 0.95).unwrap();
        assert!(close(i.lo, r * (-c).exp(), 1e-9), "{i:?}");
        assert!(close(i.hi, r * c.exp(), 1e-9), "{i:?}");
        // The share on the logit scale: se(R̂) / (R̂ (1 - R̂)) with se(R̂) = c R̂ / t.
        let cl = c / (1.0 - r);
        let logit = (r / (1.0 - r)).ln();
        let expit = |x: f64| 1.0 / (1.0 + (-x).exp());
        let i = paired_share_interval(&m, 0.95).unwrap();
        assert!(close(i.lo, expit(logit - cl), 1e-9), "{i:?}");
        assert!(close(i.hi, expit(logit + cl), 1e-9), "{i:?}");
        assert!(i.contains(r));
        // No stall cycles in 20 samples: [0, 1 - 0.05^(1/20)] for the share, nothing bounds
        // a ratio; all stalled: the mirror image.
        let (mut z, mut all) = (PairedMoments::default(), PairedMoments::default());
        for _ in 0..20 {
            z.push(0, 1000);
            all.push(1000, 1000);
        }
        let bound = 1.0 - 0.05f64.powf(1.0 / 20.0);
        let i = paired_share_interval(&z, 0.95).unwrap();
        assert!(i.lo == 0.0 && close(i.hi, bound, 1e-12), "{i:?}");
        let i = paired_share_interval(&all, 0.95).unwrap();
        assert!(close(i.lo, 1.0 - bound, 1e-12) && i.hi == 1.0, "{i:?}");
        assert_eq!(paired_ratio_interval(&z, 0.95).unwrap().hi, f64::INFINITY);
        // A denominator indistinguishable from 0: unbounded.
        let mut d = PairedMoments::default();
        for (a, b) in [(1, 0), (1, 0), (1, 3)] {
            d.push(a, b);
        }
        assert_eq!(
            paired_ratio_interval(&d, 0.95),
            Some(Interval {
                lo: 0.0,
                hi: f64::INFINITY
            })
        );
    }

    #[test]
    fn paired_moments_add_saturates_and_is_refused() {
        let mut m = PairedMoments::default();
        m.push(u64::MAX, u64::MAX);
        assert!(!m.saturated());
        m.push(u64::MAX, u64::MAX);
        assert!(m.saturated());
        assert_eq!(paired_ratio_interval(&m, 0.95), None);
        let mut one = PairedMoments::default();
        one.push(5, 10);
        assert_eq!(paired_ratio_interval(&one, 0.95), None);
        let mut split = PairedMoments::default();
        split.add(one);
        split.add(one);
        let mut both = PairedMoments::default();
        both.push(5, 10);
        both.push(5, 10);
        assert_eq!(split, both);
    }

    #[test]
    fn growth_test_one_run_uses_the_binomial_variance() {
        let share = |k, n| Share {
            frame: Count {
                samples: k,
                period: k * 100,
            },
            total: Count {
                samples: n,
                period: n * 100,
            },
        };
        // 300 of 1000 to 400 of 1000: growth 10 points; variance (Agresti-Caffo)
        // p(1-p)/n at p = 301/1002 and 401/1002, n = 1002.
        let g = growth_test(&[share(300, 1000)], &[share(400, 1000)], 2.0, 0.95).unwrap();
        let v = |p: f64| p * (1.0 - p) / 1002.0;
        let half = 100.0 * 1.959963984540054 * (v(301.0 / 1002.0) + v(401.0 / 1002.0)).sqrt();
        assert!(close(g.growth, 10.0, 1e-12));
        assert!(close(g.interval.lo, 10.0 - half, 1e-9), "{g:?}");
        assert!(g.exceeds);
        // Same growth, 5 points over a 2-point threshold isn't clear with 100 samples.
        let g = growth_test(&[share(30, 100)], &[share(40, 100)], 2.0, 0.95).unwrap();
        assert!(!g.exceeds, "{g:?}");
        assert_eq!(growth_test(&[], &[share(1, 2)], 2.0, 0.95), None);
        assert_eq!(growth_test(&[share(0, 0)], &[share(1, 2)], 2.0, 0.95), None);
    }

    #[test]
    fn growth_test_several_runs_uses_welch() {
        let share = |k: u64| Share {
            frame: Count {
                samples: k,
                period: k,
            },
            total: Count {
                samples: 1_000_000,
                period: 1_000_000,
            },
        };
        // Shares 10%, 12%, 14% then 20%, 21%, 22%: between-run variances 4e-4 and 1e-4
        // (far above sampling's ~1e-7), Welch df = (5e-4/3)² / ((4e-4/3)²/2 + (1e-4/3)²/2)
        // = 2.9411...; t(0.975, 2.9411) from the t distribution.
        let before = [share(100_000), share(120_000), share(140_000)];
        let after = [share(200_000), share(210_000), share(220_000)];
        let g = growth_test(&before, &after, 2.0, 0.95).unwrap();
        let se = (5e-4f64 / 3.0).sqrt();
        let df = (5e-4f64 / 3.0).powi(2)
            / ((4e-4f64 / 3.0).powi(2) / 2.0 + (1e-4f64 / 3.0).powi(2) / 2.0);
        let t = StudentsT::new(0.0, 1.0, df).unwrap().inverse_cdf(0.975);
        assert!(close(g.growth, 9.0, 1e-9));
        assert!(
            close(g.interval.hi - g.interval.lo, 2.0 * 100.0 * t * se, 1e-6),
            "{g:?}"
        );
        assert_eq!(g.exceeds, 9.0 - 100.0 * t * se > 2.0);
    }

    #[test]
    fn plus_minus_text() {
        let i = Interval { lo: 0.40, hi: 0.50 };
        assert_eq!(i.plus_minus(0.45, 2), "±0.05");
        // Mildly asymmetric: the larger side.
        assert_eq!(Interval { lo: 0.41, hi: 0.50 }.plus_minus(0.45, 2), "±0.05");
        assert_eq!(
            Interval { lo: 0.0, hi: 0.12 }.plus_minus(0.01, 2),
            "[0.00, 0.12]"
        );
        assert_eq!(
            Interval {
                lo: 0.5,
                hi: f64::INFINITY
            }
            .plus_minus(1.0, 1),
            "[0.5, ∞)"
        );
        assert!(Interval { lo: 0.1, hi: 0.4 }.too_wide_for_stall_colour());
        assert!(!Interval { lo: 0.1, hi: 0.3 }.too_wide_for_stall_colour());
        assert!(Interval {
            lo: 0.1,
            hi: f64::INFINITY
        }
        .too_wide_for_stall_colour());
    }
}
