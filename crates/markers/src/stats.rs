//! Online count, mean, variance, min and max (Welford's algorithm): 40 bytes, O(1) per value,
//! no sum of squares (which loses every digit when the values share a large offset).

/// Count, mean, variance (Welford), min and max of the values added so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    n: u64,
    mean: f64,
    /// Sum of squared differences from the current mean.
    m2: f64,
    min: f64,
    max: f64,
}

impl Default for Summary {
    fn default() -> Self {
        Summary::new()
    }
}

impl Summary {
    /// No values.
    pub const fn new() -> Summary {
        Summary {
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds one value.
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        if x < self.min {
            self.min = x;
        }
        if x > self.max {
            self.max = x;
        }
    }

    /// Adds every value of `other` (Chan et al.'s pairwise update): the result equals adding
    /// the other's values one by one, up to rounding.
    pub fn merge(&mut self, other: &Summary) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let n = self.n + other.n;
        let d = other.mean - self.mean;
        let (na, nb, nf) = (self.n as f64, other.n as f64, n as f64);
        self.mean += d * nb / nf;
        self.m2 += other.m2 + d * d * na * nb / nf;
        self.n = n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Their mean (`None` without values).
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }

    /// Sample variance (divided by n − 1; `None` with fewer than two values).
    pub fn variance(&self) -> Option<f64> {
        (self.n > 1).then(|| (self.m2 / (self.n - 1) as f64).max(0.0))
    }

    /// Population variance (divided by n; `None` without values).
    pub fn population_variance(&self) -> Option<f64> {
        (self.n > 0).then(|| (self.m2 / self.n as f64).max(0.0))
    }

    /// Sample standard deviation.
    pub fn stddev(&self) -> Option<f64> {
        self.variance().map(f64::sqrt)
    }

    /// The smallest value.
    pub fn min(&self) -> Option<f64> {
        (self.n > 0).then_some(self.min)
    }

    /// The largest value.
    pub fn max(&self) -> Option<f64> {
        (self.n > 0).then_some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-pass mean and sample variance, with the second pass on exact differences.
    fn two_pass(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
        // Correction term (compensates rounding in the mean).
        let c: f64 = xs.iter().map(|x| x - mean).sum();
        (mean, (ss - c * c / n) / (n - 1.0))
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
    }

    #[test]
    fn matches_two_pass_on_known_data() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let mut s = Summary::new();
        xs.iter().for_each(|&x| s.add(x));
        assert_eq!(s.count(), 8);
        assert_eq!(s.mean(), Some(5.0));
        assert_eq!(s.population_variance(), Some(4.0));
        assert!(close(s.variance().unwrap(), 32.0 / 7.0, 1e-15));
        assert_eq!(s.stddev().map(|v| (v * v * 7.0).round()), Some(32.0));
        assert_eq!((s.min(), s.max()), (Some(2.0), Some(9.0)));
        let (m, v) = two_pass(&xs);
        assert_eq!(s.mean(), Some(m));
        assert!(close(s.variance().unwrap(), v, 1e-15));
    }

    #[test]
    fn large_offsets_do_not_lose_the_variance() {
        // The textbook case: 4, 7, 13, 16 plus a large offset; variance 30 at any offset.
        for offset in [0.0, 1e8, 1e9, 1e12, 1e15] {
            let xs: Vec<f64> = [4.0, 7.0, 13.0, 16.0].iter().map(|x| x + offset).collect();
            let mut s = Summary::new();
            xs.iter().for_each(|&x| s.add(x));
            assert_eq!(s.mean(), Some(10.0 + offset));
            assert!(
                close(s.variance().unwrap(), 30.0, 1e-9),
                "offset {offset}: variance {:?}",
                s.variance()
            );
            let (_, v) = two_pass(&xs);
            assert!(close(v, 30.0, 1e-9));
            // The naive sum-of-squares formula fails here (shown, not used).
            let n = xs.len() as f64;
            let sum: f64 = xs.iter().sum();
            let sum_sq: f64 = xs.iter().map(|x| x * x).sum();
            let naive = (sum_sq - sum * sum / n) / (n - 1.0);
            if offset >= 1e9 {
                assert!(
                    !close(naive, 30.0, 1e-3),
                    "naive {naive} at offset {offset}"
                );
            }
        }
    }

    #[test]
    fn matches_two_pass_on_many_values_and_merges() {
        // Deterministic pseudo-random counts around 3e9 (cycles of a long region).
        let mut state = 0x1234_5678_9abc_def0u64;
        let xs: Vec<f64> = (0..100_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                3e9 + (state % 1_000_000) as f64
            })
            .collect();
        let mut all = Summary::new();
        let (mut a, mut b) = (Summary::new(), Summary::new());
        for (i, &x) in xs.iter().enumerate() {
            all.add(x);
            if i % 3 == 0 {
                a.add(x)
            } else {
                b.add(x)
            }
        }
        let (m, v) = two_pass(&xs);
        assert!(close(all.mean().unwrap(), m, 1e-14));
        assert!(close(all.variance().unwrap(), v, 1e-9));
        let exact_min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        let exact_max = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!((all.min(), all.max()), (Some(exact_min), Some(exact_max)));
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert!(close(a.mean().unwrap(), m, 1e-14));
        assert!(close(a.variance().unwrap(), v, 1e-9));
        assert_eq!((a.min(), a.max()), (all.min(), all.max()));
    }

    #[test]
    fn empty_and_single() {
        let mut s = Summary::new();
        assert_eq!(
            (s.mean(), s.variance(), s.min(), s.max()),
            (None, None, None, None)
        );
        s.add(7.0);
        assert_eq!(
            (s.mean(), s.variance(), s.population_variance()),
            (Some(7.0), None, Some(0.0))
        );
        let mut e = Summary::new();
        e.merge(&s);
        assert_eq!(e, s);
        s.merge(&Summary::new());
        assert_eq!(e, s);
    }
}
