//! A streaming quantile estimator with a relative-error guarantee, in bounded memory: values
//! are counted in logarithmically sized buckets (the DDSketch scheme: Masson, Rim and Lee,
//! "DDSketch: a fast and fully-mergeable quantile sketch with relative-error guarantees",
//! VLDB 2019), written for this crate.
//!
//! # The bound
//!
//! With relative accuracy α (default 1%), let γ = (1 + α) / (1 − α). Values are counted in
//! buckets such that the largest value a bucket can hold is at most γ times its smallest;
//! zeros have a bucket of their own. The estimate of a bucket's values is
//! 2·lo·hi / (lo + hi) for its bounds lo and hi, which is within (γ − 1)/(γ + 1) = α of every
//! value in it, relatively. Quantiles are *rank* quantiles: of n values sorted ascending
//! x₍₀₎ ≤ … ≤ x₍ₙ₋₁₎, the q-quantile is x₍ᵣ₎ with r = ⌊q·(n − 1)⌋ ([`rank`]). The sketch walks
//! its buckets in order to the one holding rank r, so:
//!
//! > every reported quantile q̂ satisfies |q̂ − x₍ᵣ₎| ≤ α·x₍ᵣ₎, for every q and every
//! > distribution of non-negative values, as long as the sketch has not collapsed.
//!
//! (Estimates are also clamped to the exact minimum and maximum, which only brings them
//! closer.) Internally γ is built from α·(1 − 10⁻⁶), so floating-point rounding at bucket
//! edges cannot push an estimate past the stated α.
//!
//! # The bucket of a value, without a logarithm
//!
//! DDSketch's own mapping is k = ⌈log_γ x⌉, one `ln` per value (~15 ns). This sketch uses the
//! "linearly interpolated" variant of the same paper: write x = 2^e·(1 + t) with t ∈ [0, 1)
//! (the float's exponent and mantissa, read from its bits), let f(x) = e + t (a piecewise
//! linear, increasing stand-in for log₂ x), and k = ⌈f(x) / w⌉ with w = γ − 1. A bucket is a
//! step w of f; within a binade it spans x·w/(1 + t) ≤ w·x, and one crossing a power of two
//! spans less, so hi/lo ≤ 1 + w = γ: the bound above holds. The price is buckets: 1/w ≈ 49.5
//! per doubling at α = 1% (≈ 165 per decade) where ⌈log_γ x⌉ needs 35.
//!
//! # Memory
//!
//! Buckets are a dense array over the range of keys seen so far, so a distribution spanning a
//! factor R of values uses about log₂ R / (γ − 1) buckets (a factor 10⁶ at α = 1%: ~990
//! buckets, 8 KiB), never more than `max_buckets` (default 4096: a factor of ~10²⁴,
//! 32 KiB). A value that would need more makes the sketch *collapse* its lowest buckets into
//! one (DDSketch's "collapsing lowest" store). After that, [`Sketch::collapsed_below`] says
//! under which value buckets were merged: quantiles whose true value is above it keep the
//! bound; lower ones are over-estimated (reported as at most the lowest kept bucket). High
//! quantiles (p50, p90, p99, max) are the ones a latency report needs, and they stay exact to
//! α. Values below `f64::MIN_POSITIVE` (subnormals) count as zeros.

use std::fmt;

/// Default relative accuracy: 1%.
pub const DEFAULT_ALPHA: f64 = 0.01;
/// Default bound on buckets per sketch (32 KiB of counts).
pub const DEFAULT_MAX_BUCKETS: usize = 4096;

/// The rank the q-quantile of `n` values refers to: ⌊q·(n − 1)⌋ (0-based, ascending), with q
/// clamped to [0, 1].
pub fn rank(q: f64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
    ((q * (n - 1) as f64).floor() as u64).min(n - 1)
}

/// Two sketches with different accuracies cannot be merged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccuracyMismatch {
    pub left: f64,
    pub right: f64,
}

impl fmt::Display for AccuracyMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot merge quantile sketches of relative accuracy {} and {}",
            self.left, self.right
        )
    }
}

impl std::error::Error for AccuracyMismatch {}

/// Log-bucketed quantile sketch (see the module docs for its error bound).
#[derive(Clone, Debug)]
pub struct Sketch {
    alpha: f64,
    /// 1 / w: buckets per unit of f(x) (per doubling).
    mult: f64,
    max_buckets: usize,
    /// Values ≤ 0 (and NaN), counted as 0.
    zeros: u64,
    /// Key of `bins[0]`.
    lo_key: i32,
    bins: Vec<u64>,
    count: u64,
    min: f64,
    max: f64,
    collapsed: bool,
    /// The caller promises integer values: a bucket that holds a single integer reports it.
    integers: bool,
}

impl Default for Sketch {
    fn default() -> Self {
        Sketch::new(DEFAULT_ALPHA, DEFAULT_MAX_BUCKETS)
    }
}

impl Sketch {
    /// A sketch of relative accuracy `alpha` (clamped to [1e-6, 0.5]) with at most
    /// `max_buckets` buckets (at least 16).
    pub fn new(alpha: f64, max_buckets: usize) -> Sketch {
        let alpha = if alpha.is_nan() {
            DEFAULT_ALPHA
        } else {
            alpha.clamp(1e-6, 0.5)
        };
        let inner = alpha * (1.0 - 1e-6);
        let gamma = (1.0 + inner) / (1.0 - inner);
        Sketch {
            alpha,
            mult: 1.0 / (gamma - 1.0),
            max_buckets: max_buckets.max(16),
            zeros: 0,
            lo_key: 0,
            bins: Vec::new(),
            count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            collapsed: false,
            integers: false,
        }
    }

    /// The same sketch for values that are all integers (counts, nanoseconds): a bucket
    /// that can hold only one integer reports that integer, exactly, instead of the bucket's
    /// midpoint (at α = 1% that is every bucket below about 50). The bound is unchanged.
    pub fn for_integers(mut self) -> Sketch {
        self.integers = true;
        self
    }

    /// The stated relative accuracy α.
    pub fn relative_accuracy(&self) -> f64 {
        self.alpha
    }

    /// The bound on buckets.
    pub fn max_buckets(&self) -> usize {
        self.max_buckets
    }

    /// How many values were added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Buckets in use (the dense range between the lowest and highest key kept).
    pub fn buckets(&self) -> usize {
        self.bins.len()
    }

    /// Bytes of memory the sketch holds (the struct and its bucket array).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.bins.capacity() * std::mem::size_of::<u64>()
    }

    /// Whether the lowest buckets were ever merged to stay within `max_buckets`.
    pub fn is_collapsed(&self) -> bool {
        self.collapsed
    }

    /// After a collapse: the value at or below which values were merged into the lowest
    /// bucket (quantiles above it keep the bound). `None` if the sketch never collapsed.
    pub fn collapsed_below(&self) -> Option<f64> {
        self.collapsed.then(|| self.bound(self.lo_key - 1))
    }

    /// The bucket of a normal positive `x`: ⌈f(x) / w⌉ with f(x) = e + t, x = 2^e·(1 + t).
    #[inline]
    fn key(&self, x: f64) -> i32 {
        const MANTISSA: u64 = (1 << 52) - 1;
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
        let t = (bits & MANTISSA) as f64 * (1.0 / (1u64 << 52) as f64);
        // `as` saturates; |f| < 1025 so keys stay within ±(1025 / w), ±51,000 at α = 1%.
        ((e as f64 + t) * self.mult).ceil() as i32
    }

    /// The value x with f(x) = key·w: the upper bound of bucket `key` (and the lower bound
    /// of bucket `key + 1`).
    fn bound(&self, key: i32) -> f64 {
        let f = f64::from(key) / self.mult;
        let e = f.floor();
        (1.0 + (f - e)) * 2f64.powi(e as i32)
    }

    /// The estimate for bucket `key`: 2·lo·hi / (lo + hi); for integer values, the only integer
    /// the bucket can hold when there is just one (checked with the same key function that
    /// placed the values, so floating-point edges cannot pick a wrong one).
    fn value_of(&self, key: i32) -> f64 {
        let (lo, hi) = (self.bound(key - 1), self.bound(key));
        // 2·lo·hi / (lo + hi), written so that it cannot overflow.
        let mid = 2.0 * lo / (1.0 + lo / hi);
        if self.integers {
            let a = mid.round();
            if a >= 1.0
                && self.key(a) == key
                && self.key(a + 1.0) != key
                && (a < 2.0 || self.key(a - 1.0) != key)
            {
                return a;
            }
        }
        mid
    }

    /// Adds one value. Values are expected to be ≥ 0; negative values and NaN are counted
    /// as 0 (the bound is stated for non-negative values).
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.count += 1;
        // Also NaN, negatives and subnormals.
        if x.is_nan() || x < f64::MIN_POSITIVE {
            self.zeros += 1;
            self.min = self.min.min(0.0);
            self.max = self.max.max(0.0);
            return;
        }
        let x = x.min(f64::MAX);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        let k = self.key(x);
        let i = i64::from(k) - i64::from(self.lo_key);
        if i >= 0 && (i as usize) < self.bins.len() {
            self.bins[i as usize] += 1;
        } else {
            self.add_key(k, 1);
        }
    }

    /// Counts `c` values in bucket `k`, growing the range or collapsing as needed.
    fn add_key(&mut self, k: i32, c: u64) {
        if self.bins.is_empty() {
            self.lo_key = k;
            self.bins = vec![0; 1];
            self.bins[0] = c;
            return;
        }
        let max = self.max_buckets as i64;
        let (k, lo) = (i64::from(k), i64::from(self.lo_key));
        let hi = lo + self.bins.len() as i64 - 1;
        // Extra buckets on the side that grows, so a slowly drifting range does not copy
        // the array on every new extreme.
        let pad = (self.bins.len() as i64 / 4).max(8);
        if (lo..=hi).contains(&k) {
            self.bins[(k - lo) as usize] += c;
        } else if k < lo {
            if hi - k < max {
                let new_lo = (k - pad).max(hi - max + 1);
                self.rebuild(new_lo, hi);
                self.bins[(k - new_lo) as usize] += c;
            } else {
                // No room below: fold the value into the lowest bucket the bound allows.
                let new_lo = hi - max + 1;
                self.rebuild(new_lo, hi);
                self.bins[0] += c;
                self.collapsed = true;
            }
        } else if k - lo < max {
            let new_hi = (k + pad).min(lo + max - 1);
            self.rebuild(lo, new_hi);
            self.bins[(k - lo) as usize] += c;
        } else {
            // Keep the top `max` keys ending at k; merge everything below into the lowest.
            let new_lo = k - max + 1;
            let folded: u64 = self
                .bins
                .iter()
                .take((new_lo - lo).min(self.bins.len() as i64) as usize)
                .sum();
            self.rebuild(new_lo, k);
            self.bins[0] += folded;
            if folded > 0 {
                self.collapsed = true;
            }
            let last = self.bins.len() - 1;
            self.bins[last] += c;
        }
    }

    /// Moves the buckets to the key range [new_lo, new_hi], dropping (zeroing) buckets
    /// outside it: callers fold them first.
    fn rebuild(&mut self, new_lo: i64, new_hi: i64) {
        let len = (new_hi - new_lo + 1) as usize;
        let mut bins = vec![0u64; len];
        let lo = i64::from(self.lo_key);
        for (i, &c) in self.bins.iter().enumerate() {
            let j = lo + i as i64 - new_lo;
            if j >= 0 && (j as usize) < len {
                bins[j as usize] = c;
            }
        }
        self.bins = bins;
        self.lo_key = new_lo as i32;
    }

    /// The q-quantile estimate (rank ⌊q·(n − 1)⌋), `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let r = rank(q, self.count);
        let clamp = |v: f64| v.clamp(self.min, self.max);
        if r < self.zeros {
            return Some(clamp(0.0));
        }
        let mut seen = self.zeros;
        for (i, &c) in self.bins.iter().enumerate() {
            seen += c;
            if seen > r {
                return Some(clamp(self.value_of(self.lo_key + i as i32)));
            }
        }
        Some(self.max)
    }

    /// The exact smallest value added (`None` when empty).
    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    /// The exact largest value added.
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// Adds the values of `other` (same relative accuracy): afterwards the sketch answers as
    /// if it had seen both streams.
    pub fn merge(&mut self, other: &Sketch) -> Result<(), AccuracyMismatch> {
        if self.alpha != other.alpha {
            return Err(AccuracyMismatch {
                left: self.alpha,
                right: other.alpha,
            });
        }
        if other.count == 0 {
            return Ok(());
        }
        // Highest keys first, so that if the union needs collapsing the lowest buckets are
        // the ones folded.
        for (i, &c) in other.bins.iter().enumerate().rev() {
            if c > 0 {
                self.add_key(other.lo_key + i as i32, c);
            }
        }
        self.zeros += other.zeros;
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.collapsed |= other.collapsed;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: deterministic uniform u64s.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        /// Uniform in (0, 1).
        fn unit(&mut self) -> f64 {
            ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            // Box-Muller.
            let (u, v) = (self.unit(), self.unit());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    const QS: [f64; 15] = [
        0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1.0,
    ];

    /// Checks every quantile of QS against the exact sorted values; returns the worst
    /// relative error seen.
    fn check(name: &str, values: &[f64], alpha: f64) -> f64 {
        let mut s = Sketch::new(alpha, DEFAULT_MAX_BUCKETS);
        values.iter().for_each(|&v| s.add(v));
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut worst: f64 = 0.0;
        for q in QS {
            let exact = sorted[rank(q, sorted.len() as u64) as usize];
            let est = s.quantile(q).unwrap();
            let err = (est - exact).abs();
            assert!(
                err <= alpha * exact,
                "{name}: q={q}: estimate {est}, exact {exact}, relative error {} > {alpha}",
                err / exact
            );
            if exact > 0.0 {
                worst = worst.max(err / exact);
            }
        }
        assert!(!s.is_collapsed(), "{name}: collapsed");
        assert!(s.buckets() <= s.max_buckets());
        assert_eq!(s.count(), values.len() as u64);
        assert_eq!(s.min(), Some(sorted[0]));
        assert_eq!(s.max(), sorted.last().copied());
        worst
    }

    #[test]
    fn within_the_stated_bound_on_several_distributions() {
        let n = 100_000;
        let mut rng = Rng(42);
        let uniform: Vec<f64> = (0..n).map(|_| 1.0 + rng.unit() * 1e6).collect();
        let lognormal: Vec<f64> = (0..n).map(|_| (8.0 + 1.5 * rng.normal()).exp()).collect();
        // Pareto with shape 0.8: no mean, a tail spanning many decades.
        let pareto: Vec<f64> = (0..n)
            .map(|_| 100.0 * rng.unit().powf(-1.0 / 0.8))
            .collect();
        let constant = vec![4571.0; n];
        // Integer counts with many zeros (page faults of most pixels).
        let zeros: Vec<f64> = (0..n)
            .map(|_| {
                if rng.unit() < 0.7 {
                    0.0
                } else {
                    (rng.next() % 5000) as f64
                }
            })
            .collect();
        for alpha in [0.01, 0.05] {
            for (name, v) in [
                ("uniform", &uniform),
                ("log-normal", &lognormal),
                ("pareto", &pareto),
                ("constant", &constant),
                ("zeros and integers", &zeros),
            ] {
                let worst = check(name, v, alpha);
                eprintln!("{name}, alpha {alpha}: worst relative error {worst:.5}");
            }
        }
    }

    #[test]
    fn buckets_are_at_most_gamma_wide_and_keys_agree_with_bounds() {
        for alpha in [0.001, 0.01, 0.05, 0.2] {
            let s = Sketch::new(alpha, DEFAULT_MAX_BUCKETS);
            let gamma = (1.0 + alpha) / (1.0 - alpha);
            let (k0, k1) = (s.key(1e-300), s.key(1e300));
            let mut widest: f64 = 0.0;
            for k in k0..=k1 {
                let (lo, hi) = (s.bound(k - 1), s.bound(k));
                widest = widest.max(hi / lo);
                assert!(hi / lo <= gamma, "alpha {alpha}, key {k}: {lo}..{hi}");
                let mid = s.value_of(k);
                assert!((mid - lo) / lo <= alpha && (hi - mid) / hi <= alpha);
            }
            // The widest buckets are as wide as allowed: no accuracy is wasted.
            assert!(
                widest > 1.0 + (gamma - 1.0) * 0.99,
                "alpha {alpha}: widest {widest}"
            );
            // Every value falls in the bucket whose bounds hold it.
            let mut rng = Rng(5);
            for _ in 0..100_000 {
                let x = 10f64.powf(rng.unit() * 40.0 - 20.0);
                let k = s.key(x);
                assert!(s.bound(k - 1) <= x * (1.0 + 1e-12) && x <= s.bound(k) * (1.0 + 1e-12));
            }
        }
    }

    #[test]
    fn memory_is_bounded_and_high_quantiles_survive_a_collapse() {
        let mut rng = Rng(7);
        // Values over 60 decades: far more than 64 buckets can hold at 1%.
        let values: Vec<f64> = (0..100_000)
            .map(|_| 10f64.powf(rng.unit() * 60.0))
            .collect();
        let mut s = Sketch::new(0.01, 64);
        let mut peak = 0;
        for &v in &values {
            s.add(v);
            peak = peak.max(s.memory_bytes());
        }
        assert!(s.is_collapsed());
        assert!(s.buckets() <= 64);
        assert!(
            peak <= std::mem::size_of::<Sketch>() + 64 * 8,
            "peak {peak} bytes"
        );
        let below = s.collapsed_below().unwrap();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let mut checked = 0;
        for q in QS {
            let exact = sorted[rank(q, sorted.len() as u64) as usize];
            let est = s.quantile(q).unwrap();
            if exact > below {
                assert!(
                    (est - exact).abs() <= 0.01 * exact,
                    "q={q}: {est} vs {exact}"
                );
                checked += 1;
            } else {
                assert!(est >= exact, "collapsed quantiles are over-estimates");
            }
        }
        assert!(checked >= 2, "p99.99 and the max at least");

        // The default bound on a full-range stream: at most DEFAULT_MAX_BUCKETS buckets.
        let mut d = Sketch::default();
        for &v in &values {
            d.add(v);
        }
        assert!(d.buckets() <= DEFAULT_MAX_BUCKETS);
        assert!(d.memory_bytes() <= std::mem::size_of::<Sketch>() + DEFAULT_MAX_BUCKETS * 8);
        // A typical per-region range (1e2..1e6 ns) needs a few hundred buckets only
        // (log2(1e4) * 49.5 = 658, plus room the array grew by).
        let mut t = Sketch::default();
        for i in 0..100_000u32 {
            t.add(100.0 + f64::from(i) * 10.0);
        }
        assert!(t.buckets() < 850, "{} buckets", t.buckets());
    }

    #[test]
    fn ascending_and_descending_streams_grow_without_collapse() {
        for descending in [false, true] {
            let mut s = Sketch::default();
            let xs: Vec<f64> = (1..=50_000u32).map(f64::from).collect();
            let iter: Box<dyn Iterator<Item = &f64>> = if descending {
                Box::new(xs.iter().rev())
            } else {
                Box::new(xs.iter())
            };
            iter.for_each(|&x| s.add(x));
            assert!(!s.is_collapsed());
            for q in QS {
                let exact = xs[rank(q, xs.len() as u64) as usize];
                let est = s.quantile(q).unwrap();
                assert!(
                    (est - exact).abs() <= 0.01 * exact,
                    "q={q}: {est} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn merge_equals_one_stream() {
        let mut rng = Rng(3);
        let xs: Vec<f64> = (0..20_000).map(|_| (6.0 + rng.normal()).exp()).collect();
        let (mut a, mut b, mut all) = (Sketch::default(), Sketch::default(), Sketch::default());
        for (i, &x) in xs.iter().enumerate() {
            all.add(x);
            if i % 2 == 0 {
                a.add(x)
            } else {
                b.add(x)
            }
        }
        a.merge(&b).unwrap();
        for q in QS {
            assert_eq!(a.quantile(q), all.quantile(q), "q={q}");
        }
        assert_eq!(a.count(), all.count());
        assert!(a.merge(&Sketch::new(0.02, 100)).is_err());
    }

    #[test]
    fn integer_buckets_report_their_integer() {
        let mut rng = Rng(11);
        let xs: Vec<f64> = (0..100_000).map(|_| (rng.next() % 300) as f64).collect();
        let mut s = Sketch::default().for_integers();
        let mut plain = Sketch::default();
        xs.iter().for_each(|&x| {
            s.add(x);
            plain.add(x)
        });
        let mut sorted = xs.clone();
        sorted.sort_by(f64::total_cmp);
        for q in QS {
            let exact = sorted[rank(q, sorted.len() as u64) as usize];
            let est = s.quantile(q).unwrap();
            assert!(
                (est - exact).abs() <= 0.01 * exact,
                "q={q}: {est} vs {exact}"
            );
            if exact < 40.0 {
                assert_eq!(est, exact, "q={q}: a one-integer bucket is exact");
            }
        }
        // 0, 1, 2: the median is 1 exactly (the plain sketch says 0.990...).
        let mut t = Sketch::default().for_integers();
        [0.0, 1.0, 2.0].iter().for_each(|&x| t.add(x));
        assert_eq!(t.quantile(0.5), Some(1.0));
        // Every bucket below 1000: whatever it reports is within the bound of its integers.
        let mut u = Sketch::default().for_integers();
        for x in 1..1000u32 {
            u.add(f64::from(x));
        }
        for x in 1..1000u32 {
            let mut one = Sketch::default().for_integers();
            one.add(f64::from(x));
            one.add(1e9); // so the estimate is not clamped to min = max
            let est = one.quantile(0.0).unwrap();
            assert!(
                (est - f64::from(x)).abs() <= 0.01 * f64::from(x),
                "{x}: {est}"
            );
        }
    }

    #[test]
    fn empty_zero_and_odd_inputs() {
        let mut s = Sketch::default();
        assert_eq!(s.quantile(0.5), None);
        s.add(0.0);
        assert_eq!(s.quantile(0.5), Some(0.0));
        s.add(f64::NAN);
        s.add(-3.0);
        s.add(f64::INFINITY);
        assert_eq!(s.count(), 4);
        assert_eq!(s.quantile(0.0), Some(0.0));
        assert_eq!(s.min(), Some(0.0));
        assert_eq!(s.quantile(1.0), Some(f64::MAX));
        assert_eq!(rank(0.5, 0), 0);
        assert_eq!(rank(0.9, 11), 9);
        assert_eq!(rank(2.0, 11), 10);
    }
}
