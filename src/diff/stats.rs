//! Statistics over runs: mean and sample standard deviation of each side, Welch's unequal
//! variances t interval of the difference of the means (with the Welch-Satterthwaite degrees
//! of freedom) and its two-sided p-value, and the Student t distribution they need.
//!
//! Why Welch: runs of a benchmark are few (2 to 10 a side) and the two kernels need not have
//! the same run-to-run spread; Welch's interval is exact for normal runs of any variances
//! and nearly so otherwise, and at small N its t quantile widens the interval as it should.
//!
//! Invariants: pure and deterministic; every function of finite inputs returns finite
//! values (a degenerate case, zero spread, is reported as such, never as NaN).

/// Mean of `v` (0 for none).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
pub fn stddev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    let ss: f64 = v.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (v.len() - 1) as f64).sqrt()
}

/// Welch's comparison of two samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// mean(b) - mean(a).
    pub diff: f64,
    /// Standard error of that difference.
    pub se: f64,
    /// Welch-Satterthwaite degrees of freedom; `None` when both sides have zero spread.
    pub df: Option<f64>,
    /// The `level` interval of `diff`: `diff ± t(df) · se` (`[diff, diff]` without spread).
    pub ci: (f64, f64),
    /// Two-sided p-value of "the means are equal" (0 or 1 without spread).
    pub p: f64,
}

/// Welch's t interval (at confidence `level`, e.g. 0.95) of `mean(b) - mean(a)`; `None`
/// when a side has fewer than two values.
pub fn welch(a: &[f64], b: &[f64], level: f64) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (stddev(a).powi(2) / na, stddev(b).powi(2) / nb);
    let diff = mean(b) - mean(a);
    let se = (va + vb).sqrt();
    if se == 0.0 || !se.is_finite() {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            diff,
            se: 0.0,
            df: None,
            ci: (diff, diff),
            p,
        });
    }
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let t = student_t_quantile(0.5 + level / 2.0, df);
    let p = 2.0 * (1.0 - student_t_cdf((diff / se).abs(), df));
    Some(Welch {
        diff,
        se,
        df: Some(df),
        ci: (diff - t * se, diff + t * se),
        p: p.clamp(0.0, 1.0),
    })
}

/// P(T <= t) for Student's t with `df` > 0 degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(x, df / 2.0, 0.5);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile (0 < p < 1) of Student's t with `df` > 0 degrees of freedom, by
/// bisection on the CDF (monotone), to about 1e-12 relative.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -student_t_quantile(1.0 - p, df);
    }
    let mut hi = 1.0;
    while student_t_cdf(hi, df) < p && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// ln Γ(x) for x > 0: Lanczos' approximation (g = 7, nine terms), about 15 digits.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
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
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), 0 <= x <= 1, by its continued
/// fraction (modified Lentz), on the side of x where it converges fast.
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of I_x(a, b) (terms d_{2m+1}, d_{2m} of the standard expansion).
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..500 {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        for num in [
            even,
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + num / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95% critical values of Student's t.
        for (df, want) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (4.0, 2.776_445_105),
            (5.0, 2.570_581_836),
            (8.0, 2.306_004_135),
            (10.0, 2.228_138_852),
            (30.0, 2.042_272_456),
            (1000.0, 1.962_339_081),
        ] {
            let got = student_t_quantile(0.975, df);
            assert!(close(got, want, 1e-8), "df {df}: {got} vs {want}");
            assert!(close(student_t_cdf(want, df), 0.975, 1e-9));
        }
        // 99.5% one-sided, df 3: 5.840909309.
        assert!(close(student_t_quantile(0.995, 3.0), 5.840_909_309, 1e-8));
        // The distribution is symmetric; df 1 is Cauchy: P(T <= 1) = 3/4.
        assert!(close(student_t_cdf(1.0, 1.0), 0.75, 1e-12));
        assert!(close(student_t_cdf(-1.0, 1.0), 0.25, 1e-12));
        assert_eq!(student_t_quantile(0.5, 7.0), 0.0);
        assert!(close(student_t_quantile(0.025, 4.0), -2.776_445_105, 1e-8));
        // df 2 has a closed form: t_p = (2p - 1) / sqrt(2p(1 - p)).
        let p: f64 = 0.9;
        let want = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
        assert!(close(student_t_quantile(p, 2.0), want, 1e-10));
    }

    #[test]
    fn ln_gamma_of_known_values() {
        assert!(close(ln_gamma(1.0), 0.0, 1e-14));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-14));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-14
        ));
        assert!(close(ln_gamma(0.25), 3.625_609_908_221_908f64.ln(), 1e-13));
    }

    #[test]
    fn mean_and_stddev() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), 5.0);
        // Population sd 2; the sample sd is 2 * sqrt(8/7).
        assert!(close(stddev(&v), 2.0 * (8.0f64 / 7.0).sqrt(), 1e-14));
        assert_eq!(stddev(&[3.0]), 0.0);
        assert_eq!(mean(&[]), 0.0);
    }

    #[test]
    fn welch_by_hand() {
        // a: mean 3, variance 2.5; b: mean 6, variance 10 (n = 5 each). se^2 = 0.5 + 2 =
        // 2.5, t = 3 / sqrt(2.5) = 1.897367; df = 2.5^2 / (0.5^2/4 + 2^2/4) = 5.882353.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 4.0, 6.0, 8.0, 10.0];
        let w = welch(&a, &b, 0.95).unwrap();
        assert_eq!(w.diff, 3.0);
        assert!(close(w.se, 2.5f64.sqrt(), 1e-14));
        let df = w.df.unwrap();
        assert!(close(df, 100.0 / 17.0, 1e-12), "{df}");
        let t = student_t_quantile(0.975, df);
        // Between the table values of df 5 and df 6, nearer df 6 (2.446912).
        assert!(t > 2.446_912 && t < 2.570_582, "{t}");
        assert!(close(w.ci.0, 3.0 - t * w.se, 1e-12));
        assert!(close(w.ci.1, 3.0 + t * w.se, 1e-12));
        // The interval contains 0 exactly when p >= 0.05.
        assert!(w.ci.0 < 0.0 && w.p > 0.05 && w.p < 0.15, "{w:?}");
        // The p-value is the t CDF at the statistic.
        let stat = 3.0 / 2.5f64.sqrt();
        assert!(close(w.p, 2.0 * (1.0 - student_t_cdf(stat, df)), 1e-12));
        // Equal variances and sizes: df = 2n - 2, as Student's test.
        let w = welch(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.95).unwrap();
        assert!(close(w.df.unwrap(), 4.0, 1e-12));
        // se = sqrt(1/3 + 1/3), t(4) = 2.776445.
        let half = 2.776_445_105 * (2.0f64 / 3.0).sqrt();
        assert!(close(w.ci.0, 3.0 - half, 1e-8) && close(w.ci.1, 3.0 + half, 1e-8));
        assert!(w.p < 0.05);
        // Fewer than two runs: no interval; no spread at all: the difference itself.
        assert!(welch(&[1.0], &[2.0, 3.0], 0.95).is_none());
        let w = welch(&[2.0, 2.0], &[5.0, 5.0], 0.95).unwrap();
        assert_eq!((w.ci, w.df, w.p), ((3.0, 3.0), None, 0.0));
        let w = welch(&[2.0, 2.0], &[2.0, 2.0], 0.95).unwrap();
        assert_eq!((w.ci, w.p), ((0.0, 0.0), 1.0));
    }
}
