//! Coverage of the stall-share and CPI intervals on synthetic profiles with known true
//! ratios: seeded simulations of sampling, many trials per case, and the share of trials
//! whose 95% interval holds the truth must lie in [93%, 97%] (other bands where stated) and
//! within a stated margin of the figure published. The figures printed
//! (`cargo test -p cpiflame-profile --test interval_coverage -- --nocapture`) are the ones
//! `docs/uncertainty.md` quotes.

use cpiflame_profile::interval::{
    clopper_pearson, paired_ratio_interval, paired_share_interval, ratio_interval, Interval,
    PairedMoments,
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

/// How far, in points, a coverage measured over `trials` may be from the figure
/// `docs/uncertainty.md` publishes for it (`published`, in percent, printed to one decimal).
/// The simulations are seeded, so the figure printed equals the published one; the margin is
/// three standard errors of a binomial rate over the trials plus the published figure's
/// rounding: a new random stream (an upgrade of `rand` or `rand_distr`) moves a coverage by
/// about one standard error and passes, while an interval that truly covers more or less
/// than published fails. The bands asserted beside it are what the method must meet; this is
/// what the docs say it does.
fn margin(published: f64, trials: u32) -> f64 {
    let p = (published / 100.0).clamp(0.005, 0.995);
    300.0 * (p * (1.0 - p) / f64::from(trials)).sqrt() + 0.05
}

/// Checks `rate` (a fraction) against its `published` figure (percent); a failure is pushed.
fn check(failures: &mut Vec<String>, what: &str, rate: f64, published: f64, trials: u32) {
    let (measured, m) = (100.0 * rate, margin(published, trials));
    if (measured - published).abs() > m {
        failures.push(format!(
            "{what}: measured {measured:.2}%, docs/uncertainty.md {published:.1}% (margin {m:.2} points)"
        ));
    }
}

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

    // docs/uncertainty.md's table, case by case: mid-p's coverage and Clopper-Pearson's.
    let published = [
        (95.7, 97.3),
        (97.7, 98.6),
        (95.7, 97.7),
        (97.2, 99.2),
        (94.8, 95.1),
        (94.3, 95.7),
        (95.7, 97.9),
        (95.3, 96.8),
        (95.0, 95.0),
        (95.3, 96.5),
        (94.7, 95.0),
        (91.8, 92.2),
    ];
    assert_eq!(published.len(), cases.len());
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
            failures.push(format!("{}: {:.3} outside its band", case.name, mid.rate()));
        }
        let (mid_p, cp_published) = published[i];
        check(&mut failures, case.name, mid.rate(), mid_p, mid.trials);
        let what = format!("{}, Clopper-Pearson", case.name);
        check(&mut failures, &what, cp.rate(), cp_published, cp.trials);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Leader-sampled groups: each sample carries the cycles since the last sample (about the
/// period, with jitter) and, for a stall share, the stall cycles among them, a fraction that
/// varies from sample to sample; for CPI, the instructions retired in them, at an IPC that
/// varies from sample to sample.
#[derive(Clone)]
struct Paired {
    name: &'static str,
    cpi: bool,
    samples: u64,
    /// Per-sample cycles: the period times a factor uniform in [1 - jitter, 1 + jitter], or
    /// (when `long` is set) three periods for half of the samples.
    jitter: f64,
    long: bool,
    /// Mean stall fraction (for CPI: IPC / 4) of short and long samples, and the Beta
    /// concentration of the per-sample value (smaller: more variable).
    mean_short: f64,
    mean_long: f64,
    concentration: f64,
    /// The coverage asserted.
    band: (f64, f64),
}

/// The band asserted where the per-sample stall fraction is strongly skewed toward 1 (a
/// frame fully stalled in most periods, much less in a few) and the frame has 10-20
/// samples: the logit scale helps (symmetric intervals cover 89%), but a Student-t quantile
/// assumes a near-normal mean, and coverage is 92.4-93.0% over 20,000 trials
/// (`docs/uncertainty.md` says so).
const NEAR_ONE: (f64, f64) = (0.91, 0.95);

/// The band asserted for an extreme case: 98% of periods with almost no stall and a few
/// with many (per-sample fraction Beta(0.04, 1.96)), 30 samples. Most frames of 30 samples
/// have seen none of the bursts that make the mean, and no interval from their moments can
/// know of them; coverage is about 81% (Fieller's: 74%).
const BURSTS: (f64, f64) = (0.78, 0.85);

/// Fieller's interval for a ratio of means, from the same moments: what the log and logit
/// scales are compared with.
fn fieller(m: &PairedMoments) -> Option<Interval> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let n = m.n as f64;
    let (ma, mb) = (m.sum_a as f64 / n, m.sum_b as f64 / n);
    let c = |s: u128, x: f64, y: f64| (s as f64 - n * x * y) / (n - 1.0);
    let (saa, sbb, sab) = (
        c(m.sum_aa, ma, ma),
        c(m.sum_bb, mb, mb),
        c(m.sum_ab, ma, mb),
    );
    let t = StudentsT::new(0.0, 1.0, n - 1.0)
        .ok()?
        .inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0);
    let q = t * t / n;
    let (qa, qb, qc) = (mb * mb - q * sbb, ma * mb - q * sab, ma * ma - q * saa);
    if qa <= 0.0 {
        return Some(Interval {
            lo: 0.0,
            hi: f64::INFINITY,
        });
    }
    let d = (qb * qb - qa * qc).max(0.0).sqrt();
    Some(Interval {
        lo: ((qb - d) / qa).max(0.0),
        hi: (qb + d) / qa,
    })
}

#[test]
fn leader_sampled_intervals_cover_the_true_ratio() {
    let share = |name, samples, mean: f64, concentration, band| Paired {
        name,
        cpi: false,
        samples,
        jitter: 0.1,
        long: false,
        mean_short: mean,
        mean_long: mean,
        concentration,
        band,
    };
    let cases = [
        share(
            "stall share 0.30, 10 samples, fraction ~ Beta(κ=20)",
            10,
            0.30,
            20.0,
            BAND,
        ),
        share(
            "stall share 0.30, 30 samples, fraction ~ Beta(κ=5)",
            30,
            0.30,
            5.0,
            BAND,
        ),
        share(
            "stall share 0.30, 5 samples, fraction ~ Beta(κ=5)",
            5,
            0.30,
            5.0,
            BAND,
        ),
        share(
            "stall share 0.50, 3 samples, fraction ~ Beta(κ=20)",
            3,
            0.50,
            20.0,
            BAND,
        ),
        share(
            "stall share 0.05, 10 samples, fraction ~ Beta(κ=20)",
            10,
            0.05,
            20.0,
            BAND,
        ),
        share(
            "stall share 0.05, 30 samples, fraction ~ Beta(κ=20)",
            30,
            0.05,
            20.0,
            BAND,
        ),
        share(
            "stall share 0.05, 100 samples, fraction ~ Beta(κ=5)",
            100,
            0.05,
            5.0,
            BAND,
        ),
        share(
            "stall share 0.70, 300 samples, fraction ~ Beta(κ=5)",
            300,
            0.70,
            5.0,
            BAND,
        ),
        share(
            "stall share 0.30, 1000 samples, fraction ~ Beta(κ=2)",
            1000,
            0.30,
            2.0,
            BAND,
        ),
        Paired {
            name: "half the samples 3 periods long with more stalls (0.2 vs 0.6), 50 samples",
            long: true,
            mean_long: 0.6,
            ..share("", 50, 0.2, 10.0, BAND)
        },
        share(
            "stall share 0.90, 5 samples, fraction ~ Beta(κ=20)",
            5,
            0.90,
            20.0,
            NEAR_ONE,
        ),
        share(
            "stall share 0.90, 10 samples, fraction ~ Beta(κ=5)",
            10,
            0.90,
            5.0,
            NEAR_ONE,
        ),
        share(
            "stall share 0.99, 20 samples, fraction ~ Beta(κ=50)",
            20,
            0.99,
            50.0,
            NEAR_ONE,
        ),
        share(
            "stall share 0.02, 30 samples, fraction ~ Beta(κ=2)",
            30,
            0.02,
            2.0,
            BURSTS,
        ),
        Paired {
            name: "CPI 0.67 (IPC/4 ~ Beta(κ=10)), 10 samples",
            cpi: true,
            ..share("", 10, 0.375, 10.0, BAND)
        },
        Paired {
            name: "CPI 2.5 (IPC/4 ~ Beta(κ=3)), 100 samples",
            cpi: true,
            ..share("", 100, 0.1, 3.0, BAND)
        },
    ];
    // docs/uncertainty.md's table, case by case: the interval used, the log scale, Fieller's.
    let published = [
        [95.0, 94.8, 94.9],
        [95.9, 95.7, 95.2],
        [95.0, 95.0, 92.8],
        [95.1, 95.0, 94.9],
        [93.5, 93.5, 90.5],
        [94.3, 94.4, 92.9],
        [94.2, 94.3, 92.5],
        [94.8, 95.0, 94.9],
        [94.8, 94.8, 94.7],
        [95.0, 94.9, 94.5],
        [95.0, 93.0, 93.2],
        [92.8, 88.6, 88.9],
        [92.3, 88.8, 88.9],
        [81.7, 81.7, 73.8],
        [95.0, 95.0, 94.5],
        [94.5, 94.5, 93.6],
    ];
    assert_eq!(published.len(), cases.len());
    let period = 100_000.0;
    let trials = 4000;
    let mut failures = Vec::new();
    println!("| case | trials | coverage | log scale | Fieller |");
    println!("|---|---|---|---|---|");
    for (i, case) in cases.iter().enumerate() {
        // E[a] / E[b]: the per-sample value is independent of the length within each kind.
        let mean = if case.long {
            (case.mean_short + 3.0 * case.mean_long) / 4.0
        } else {
            case.mean_short
        };
        let truth = if case.cpi { 1.0 / (4.0 * mean) } else { mean };
        let beta = |mean: f64| {
            Beta::new(mean * case.concentration, (1.0 - mean) * case.concentration).unwrap()
        };
        let (short, long) = (beta(case.mean_short), beta(case.mean_long));
        let mut rng = Pcg64::seed_from_u64(0x25_1000 + i as u64);
        let mut covered = [0u32; 3];
        for _ in 0..trials {
            let mut moments = PairedMoments::default();
            for _ in 0..case.samples {
                let is_long = case.long && rng.random_bool(0.5);
                let length = if is_long { 3.0 } else { 1.0 };
                let cycles =
                    (period * length * rng.random_range(1.0 - case.jitter..1.0 + case.jitter))
                        as u64;
                let f: f64 = if is_long {
                    long.sample(&mut rng)
                } else {
                    short.sample(&mut rng)
                };
                if case.cpi {
                    let instructions = Binomial::new(4 * cycles, f).unwrap().sample(&mut rng);
                    moments.push(cycles, instructions);
                } else {
                    let stalls = Binomial::new(cycles, f).unwrap().sample(&mut rng);
                    moments.push(stalls, cycles);
                }
            }
            let chosen = if case.cpi {
                paired_ratio_interval(&moments, CONFIDENCE)
            } else {
                paired_share_interval(&moments, CONFIDENCE)
            };
            let intervals = [
                chosen,
                paired_ratio_interval(&moments, CONFIDENCE),
                fieller(&moments),
            ];
            for (c, interval) in covered.iter_mut().zip(intervals) {
                *c += u32::from(interval.expect("an interval").contains(truth));
            }
        }
        let rate = |k: u32| f64::from(k) / f64::from(trials);
        println!(
            "| {} | {trials} | {:.1}% | {:.1}% | {:.1}% |",
            case.name,
            100.0 * rate(covered[0]),
            100.0 * rate(covered[1]),
            100.0 * rate(covered[2]),
        );
        if !(case.band.0..=case.band.1).contains(&rate(covered[0])) {
            failures.push(format!(
                "{}: {:.3} outside its band",
                case.name,
                rate(covered[0])
            ));
        }
        for (k, method) in ["", ", log scale", ", Fieller"].iter().enumerate() {
            let what = format!("{}{method}", case.name);
            check(
                &mut failures,
                &what,
                rate(covered[k]),
                published[i][k],
                trials,
            );
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
