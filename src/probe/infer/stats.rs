//! Statistics over rounds. The unit of replication is the round: I/Os
//! inside one run of a cell share the device's state at that moment, so
//! treating them (or time slices of the run) as independent samples
//! understates the noise and flags differences that are not there.
//!
//! IOPS are compared on a log scale (a ratio of geometric means) with
//! Welch's t-test, and many comparisons are corrected with Holm's method.
//!
//! The t distribution is statrs's. Welch, Holm, the pooled variance and
//! the moderated t stay ours on purpose: each is a few lines whose exact
//! shape the probe's decisions rest on (log values, the degenerate cases
//! of identical rounds and single rounds, Holm's adjusted p-values in input
//! order, the prior's degrees of freedom), which a general crate's tests
//! would hide behind its own conventions; `compare` and `sequential.rs`
//! read these functions by name.

use statrs::distribution::{Continuous, ContinuousCDF, StudentsT};

/// Median of unsorted values; 0 for none.
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        f64::NAN
    };
    (mean, var)
}

/// The largest |t| a quantile is given as: beyond it an interval is
/// unbounded in practice (p = 0 asks for it).
const MAX_T: f64 = 1.0e6;

/// Student's t with `df` degrees of freedom (statrs); None when `df` is
/// not positive (no caller passes one).
fn students_t(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

/// Two-sided p-value of Student's t with `df` degrees of freedom.
pub fn t_two_sided(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { 1.0 } else { 0.0 };
    }
    students_t(df).map_or(f64::NAN, |d| (2.0 * d.sf(t.abs())).clamp(0.0, 1.0))
}

/// The t value with two-sided tail probability `p`, at most [`MAX_T`]:
/// 0 for p of 1 or more (or NaN), [`MAX_T`] for p of 0 or less.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || p >= 1.0 {
        return 0.0;
    }
    if p <= 0.0 {
        return MAX_T;
    }
    students_t(df).map_or(0.0, |d| upper_quantile(&d, p / 2.0).clamp(0.0, MAX_T))
}

/// The t whose upper tail holds `q`: statrs's inverse, then Newton steps on
/// its own survival function. The inverse incomplete beta behind
/// `inverse_cdf` loses digits at large df (3e-3 relative at df 1e6, which
/// `compare` asks for when every cell's variance is 0); the steps bring it
/// to the precision of `sf`.
fn upper_quantile(d: &StudentsT, q: f64) -> f64 {
    let mut t = d.inverse_cdf(1.0 - q);
    for _ in 0..4 {
        let step = (d.sf(t) - q) / d.pdf(t);
        if !step.is_finite() {
            break;
        }
        t += step;
    }
    t
}

/// Geometric mean of positive values and the 95 % (`level`) t-interval
/// around it, computed on log values. With one value the interval is that
/// value alone.
pub fn geo_mean_ci(xs: &[f64], level: f64) -> (f64, [f64; 2]) {
    let logs: Vec<f64> = xs.iter().map(|x| x.max(f64::MIN_POSITIVE).ln()).collect();
    if logs.is_empty() {
        return (0.0, [0.0, 0.0]);
    }
    let (m, v) = mean_var(&logs);
    if logs.len() < 2 {
        return (m.exp(), [m.exp(), m.exp()]);
    }
    let df = (logs.len() - 1) as f64;
    let half = t_quantile(1.0 - level, df) * (v / logs.len() as f64).sqrt();
    (m.exp(), [(m - half).exp(), (m + half).exp()])
}

/// Welch's comparison of `a` with `b` on log values: the ratio of
/// geometric means, its `level` confidence interval and the two-sided
/// p-value. Needs two or more values on each side (else p = 1, no CI).
pub struct Comparison {
    pub ratio: f64,
    pub ci: [f64; 2],
    pub p: f64,
}

pub fn welch_log(a: &[f64], b: &[f64], level: f64) -> Comparison {
    let la: Vec<f64> = a.iter().map(|x| x.max(f64::MIN_POSITIVE).ln()).collect();
    let lb: Vec<f64> = b.iter().map(|x| x.max(f64::MIN_POSITIVE).ln()).collect();
    if la.is_empty() || lb.is_empty() {
        return Comparison {
            ratio: f64::NAN,
            ci: [f64::NAN, f64::NAN],
            p: 1.0,
        };
    }
    let (ma, va) = mean_var(&la);
    let (mb, vb) = mean_var(&lb);
    let diff = ma - mb;
    if la.len() < 2 || lb.len() < 2 {
        return Comparison {
            ratio: diff.exp(),
            ci: [f64::NAN, f64::NAN],
            p: 1.0,
        };
    }
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let (sa, sb) = (va / na, vb / nb);
    let se = (sa + sb).sqrt();
    if se == 0.0 {
        // Every round identical on both sides: nothing to test against.
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Comparison {
            ratio: diff.exp(),
            ci: [diff.exp(), diff.exp()],
            p,
        };
    }
    let df = (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let p = t_two_sided(diff / se, df);
    let half = t_quantile(1.0 - level, df) * se;
    Comparison {
        ratio: diff.exp(),
        ci: [(diff - half).exp(), (diff + half).exp()],
        p,
    }
}

/// Holm–Bonferroni adjusted p-values, in the input order. Rejecting where
/// the adjusted value is below α keeps the family-wise error rate at α.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// A variance pooled over groups and its degrees of freedom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pooled {
    pub var: f64,
    pub df: f64,
}

/// The weighted mean of `x` (weights `w`: relative precisions, x_i
/// having variance σ² / w_i), the estimate of σ² (Σ w (x − mean)² / (n −
/// 1)) and Σ w. With every weight 1: the mean, the sample variance, n.
fn weighted_mean_var(x: &[f64], w: &[f64]) -> (f64, f64, f64) {
    let sw: f64 = w.iter().sum();
    let mean = x.iter().zip(w).map(|(x, w)| x * w).sum::<f64>() / sw;
    let var = if x.len() > 1 {
        let ss: f64 = x.iter().zip(w).map(|(x, w)| w * (x - mean).powi(2)).sum();
        ss / (x.len() - 1) as f64
    } else {
        f64::NAN
    };
    (mean, var, sw)
}

/// The variance pooled over groups of weighted values (each around its
/// own weighted mean; see [`moderated_t`]), weighted by their degrees of
/// freedom; None when no group has two values.
pub fn pooled_variance<'a>(groups: impl Iterator<Item = (&'a [f64], &'a [f64])>) -> Option<Pooled> {
    let (mut ss, mut df) = (0.0, 0.0);
    for (x, w) in groups.filter(|g| g.0.len() >= 2) {
        let (_, v, _) = weighted_mean_var(x, w);
        ss += v * (x.len() - 1) as f64;
        df += (x.len() - 1) as f64;
    }
    (df > 0.0).then(|| Pooled { var: ss / df, df })
}

/// A mean with its interval and two-sided p-value against 0.
#[derive(Clone, Copy, Debug)]
pub struct TInterval {
    pub mean: f64,
    pub ci: [f64; 2],
    pub p: f64,
}

/// The moderated t (Smyth 2004) of the weighted mean of `d`: each d_i has
/// variance σ² / w_i (the weights are relative precisions: rounds of
/// longer windows weigh more, see `probe::noise`), σ²'s estimate is
/// shrunk toward `pooled` as if that came with `prior_df` degrees of
/// freedom, and the interval is at two-sided error `alpha`. Without a
/// pooled value it is Student's t; with neither, the interval is
/// unbounded. With every weight 1 it is the plain moderated t.
pub fn moderated_t(
    d: &[f64],
    w: &[f64],
    pooled: Option<f64>,
    prior_df: f64,
    alpha: f64,
) -> TInterval {
    let n = d.len();
    let open = |mean: f64| TInterval {
        mean,
        ci: [f64::NEG_INFINITY, f64::INFINITY],
        p: 1.0,
    };
    if n == 0 {
        return open(f64::NAN);
    }
    let (mean, var, sw) = weighted_mean_var(d, w);
    let own_df = (n - 1) as f64;
    let (var, df) = match pooled {
        Some(s0) if n >= 2 => (
            (prior_df * s0 + own_df * var) / (prior_df + own_df),
            prior_df + own_df,
        ),
        Some(s0) => (s0, prior_df),
        None if n >= 2 => (var, own_df),
        None => return open(mean),
    };
    let se = (var / sw).sqrt();
    if se == 0.0 {
        return TInterval {
            mean,
            ci: [mean, mean],
            p: if mean == 0.0 { 1.0 } else { 0.0 },
        };
    }
    let half = t_quantile(alpha, df) * se;
    TInterval {
        mean,
        ci: [mean - half, mean + half],
        p: t_two_sided(mean / se, df),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The t distribution as it was computed here before statrs: Lanczos
    /// ln Γ, the incomplete beta by continued fraction, and the quantile
    /// by bisection. Kept as the reference the statrs answers are held to.
    mod reference {
        /// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; ~1e-15 relative).
        pub fn ln_gamma(x: f64) -> f64 {
            const C: [f64; 9] = [
                0.999_999_999_999_809_9,
                676.520_368_121_885_1,
                -1_259.139_216_722_402_8,
                771.323_428_777_653_1,
                -176.615_029_162_140_6,
                12.507_343_278_686_905,
                -0.138_571_095_265_720_12,
                9.984_369_578_019_572e-6,
                1.505_632_735_149_311_6e-7,
            ];
            if x < 0.5 {
                let pi = std::f64::consts::PI;
                return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
            }
            let x = x - 1.0;
            let mut a = C[0];
            let t = x + 7.5;
            for (i, c) in C.iter().enumerate().skip(1) {
                a += c / (x + i as f64);
            }
            0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
        }

        /// Continued fraction for the incomplete beta function (modified Lentz).
        fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
            const TINY: f64 = 1e-300;
            let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
            let mut c = 1.0;
            let mut d = 1.0 - qab * x / qap;
            if d.abs() < TINY {
                d = TINY;
            }
            d = 1.0 / d;
            let mut h = d;
            for m in 1..300 {
                let m = f64::from(m);
                let m2 = 2.0 * m;
                let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
                d = 1.0 + aa * d;
                d = if d.abs() < TINY { TINY } else { d };
                c = 1.0 + aa / c;
                c = if c.abs() < TINY { TINY } else { c };
                d = 1.0 / d;
                h *= d * c;
                let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
                d = 1.0 + aa * d;
                d = if d.abs() < TINY { TINY } else { d };
                c = 1.0 + aa / c;
                c = if c.abs() < TINY { TINY } else { c };
                d = 1.0 / d;
                let del = d * c;
                h *= del;
                if (del - 1.0).abs() < 1e-15 {
                    break;
                }
            }
            h
        }

        /// Regularised incomplete beta I_x(a, b).
        fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
            if x <= 0.0 {
                return 0.0;
            }
            if x >= 1.0 {
                return 1.0;
            }
            let ln_front =
                ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
            if x < (a + 1.0) / (a + b + 2.0) {
                ln_front.exp() * beta_cf(a, b, x) / a
            } else {
                1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
            }
        }

        /// Two-sided p-value of Student's t with `df` degrees of freedom.
        pub fn t_two_sided(t: f64, df: f64) -> f64 {
            if !t.is_finite() {
                return if t.is_nan() { 1.0 } else { 0.0 };
            }
            inc_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
        }

        /// The t value with two-sided tail probability `p` (bisection on the CDF).
        pub fn t_quantile(p: f64, df: f64) -> f64 {
            let (mut lo, mut hi) = (0.0f64, 1.0e6f64);
            for _ in 0..200 {
                let mid = (lo + hi) / 2.0;
                if t_two_sided(mid, df) > p {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            (lo + hi) / 2.0
        }
    }

    /// Normal deviates by Box–Muller from a seeded generator.
    fn normal(rng: &mut fastrand::Rng, mean: f64, sd: f64) -> f64 {
        let u1 = rng.f64().max(1e-300);
        let u2 = rng.f64();
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// IOPS of `n` rounds: log-normal around `iops` with `cv` spread.
    fn rounds(rng: &mut fastrand::Rng, n: usize, iops: f64, cv: f64) -> Vec<f64> {
        (0..n).map(|_| iops * normal(rng, 0.0, cv).exp()).collect()
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn t_distribution_matches_tables() {
        // Two-sided 5 % critical values: df 2 → 4.303, df 4 → 2.776, df 30 → 2.042.
        for (df, t) in [(2.0, 4.303), (4.0, 2.776), (30.0, 2.042)] {
            assert!((t_two_sided(t, df) - 0.05).abs() < 5e-4, "df {df}");
            assert!((t_quantile(0.05, df) - t).abs() < 2e-3, "df {df}");
        }
        assert!((t_two_sided(0.0, 5.0) - 1.0).abs() < 1e-12);
        assert!((reference::ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert_eq!(t_quantile(1.0, 5.0), 0.0);
        assert_eq!(t_quantile(0.0, 5.0), MAX_T);
        assert_eq!(t_quantile(f64::NAN, 5.0), 0.0);
        assert_eq!(t_two_sided(f64::INFINITY, 5.0), 0.0);
    }

    /// statrs's quantiles and p-values against the bisection on our own
    /// incomplete beta that they replaced, over the degrees of freedom
    /// (Welch's are fractional) and error rates the probe uses.
    #[test]
    fn statrs_agrees_with_the_replaced_implementation() {
        let dfs = [
            1.0, 1.5, 2.0, 2.7, 3.0, 4.0, 5.0, 7.3, 10.0, 19.0, 30.0, 64.5, 100.0, 1.0e3, 1.0e4,
            1.0e6,
        ];
        let alphas = [0.5, 0.2, 0.1, 0.05, 0.025, 0.01, 0.005, 1e-3, 1e-4, 1e-5];
        for df in dfs {
            for alpha in alphas {
                let (new, old) = (t_quantile(alpha, df), reference::t_quantile(alpha, df));
                assert!(
                    ((new - old) / old).abs() < 1e-6,
                    "df {df} alpha {alpha}: {new} vs {old}"
                );
                let (p, q) = (t_two_sided(old, df), reference::t_two_sided(old, df));
                assert!(((p - q) / q).abs() < 1e-6, "df {df} t {old}: p {p} vs {q}");
            }
        }
    }

    #[test]
    fn ci_covers_the_true_value_at_the_stated_rate() {
        let mut rng = fastrand::Rng::with_seed(7);
        for n in [3usize, 5, 10] {
            let trials = 4000;
            let mut covered = 0;
            for _ in 0..trials {
                let xs = rounds(&mut rng, n, 1000.0, 0.05);
                let (_, [lo, hi]) = geo_mean_ci(&xs, 0.95);
                if lo <= 1000.0 && 1000.0 <= hi {
                    covered += 1;
                }
            }
            let rate = covered as f64 / trials as f64;
            assert!((0.935..=0.965).contains(&rate), "n={n}: coverage {rate}");
        }
    }

    #[test]
    fn no_false_significance_on_identical_inputs_beyond_alpha() {
        let mut rng = fastrand::Rng::with_seed(11);
        for n in [3usize, 5] {
            let trials = 4000;
            let mut hits = 0;
            let mut covered = 0;
            for _ in 0..trials {
                let a = rounds(&mut rng, n, 5000.0, 0.04);
                let b = rounds(&mut rng, n, 5000.0, 0.04);
                let c = welch_log(&a, &b, 0.95);
                if c.p < 0.05 {
                    hits += 1;
                }
                if c.ci[0] <= 1.0 && 1.0 <= c.ci[1] {
                    covered += 1;
                }
            }
            let rate = hits as f64 / trials as f64;
            // Welch is slightly conservative; allow binomial noise above 5 %.
            assert!(rate <= 0.06, "n={n}: false positive rate {rate}");
            assert!(covered as f64 / trials as f64 >= 0.94);
        }
        let a = [100.0, 101.0, 99.0];
        assert!(welch_log(&a, &a, 0.95).p > 0.99);
        assert_eq!(welch_log(&[5.0; 4], &[5.0; 4], 0.95).p, 1.0);
        assert_eq!(welch_log(&[5.0], &[6.0], 0.95).p, 1.0);
    }

    #[test]
    fn a_real_penalty_is_found_with_its_size() {
        let mut rng = fastrand::Rng::with_seed(3);
        let a = rounds(&mut rng, 5, 860.0, 0.02);
        let b = rounds(&mut rng, 5, 1000.0, 0.02);
        let c = welch_log(&a, &b, 0.95);
        assert!(c.p < 1e-4, "{}", c.p);
        assert!(c.ci[0] < 0.86 && 0.86 < c.ci[1], "{:?}", c.ci);
    }

    #[test]
    fn holm_controls_the_family_wise_rate() {
        let adj = holm(&[0.01, 0.04, 0.03]);
        for (got, want) in adj.iter().zip([0.03, 0.06, 0.06]) {
            assert!((got - want).abs() < 1e-12, "{adj:?}");
        }
        let mut rng = fastrand::Rng::with_seed(13);
        let families = 500;
        let mut any = 0;
        for _ in 0..families {
            let base = rounds(&mut rng, 5, 500.0, 0.03);
            let p: Vec<f64> = (0..40)
                .map(|_| welch_log(&rounds(&mut rng, 5, 500.0, 0.03), &base, 0.95).p)
                .collect();
            if holm(&p).iter().any(|&q| q < 0.05) {
                any += 1;
            }
        }
        let rate = any as f64 / families as f64;
        assert!(rate <= 0.07, "family-wise false positive rate {rate}");
    }
}
