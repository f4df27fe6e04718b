//! [`Trigger`]: when an interval's figures call for a flight-recorder dump, parsed from
//! `--trigger` and judged on each closed interval's [`Snapshot`].
//!
//! Two forms: a finding rate, `KIND>=N/s` (KIND a finding kind such as `missed_pull`, or
//! `findings` for all kinds), and a run-queue latency bound, `STAT>=DURATION` (STAT one of
//! `p50`, `p90`, `p99`, `p999`, `max`; DURATION a number with `us`, `ms` or `s`).

use crate::analyze::Snapshot;
use crate::model::FindingKind;

/// A condition on one interval.
#[derive(Clone, Debug, PartialEq)]
pub enum Trigger {
    /// At least `per_s` findings per second of the interval, of `kind` (`None`: any kind).
    FindingRate {
        kind: Option<FindingKind>,
        per_s: f64,
    },
    /// The interval's run-queue latency statistic at or above `us` microseconds.
    Latency { stat: LatencyStat, us: f64 },
}

/// Which run-queue latency figure a [`Trigger::Latency`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyStat {
    P50,
    P90,
    P99,
    P999,
    Max,
}

impl LatencyStat {
    const ALL: [(&'static str, LatencyStat); 5] = [
        ("p50", LatencyStat::P50),
        ("p90", LatencyStat::P90),
        ("p99", LatencyStat::P99),
        ("p999", LatencyStat::P999),
        ("max", LatencyStat::Max),
    ];

    fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, s)| *s == self)
            .map(|(n, _)| *n)
            .unwrap_or("p99")
    }
}

/// A `--trigger` that does not parse, with the forms it could take.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("--trigger {spec:?}: {why}; write KIND>=N/s (KIND: {kinds}, or findings) or STAT>=DURATION (STAT: p50, p90, p99, p999, max; e.g. p99>=5ms)")]
pub struct TriggerError {
    spec: String,
    why: String,
    kinds: String,
}

impl Trigger {
    /// Parses one `--trigger` value.
    pub fn parse(spec: &str) -> Result<Trigger, TriggerError> {
        let err = |why: &str| TriggerError {
            spec: spec.into(),
            why: why.into(),
            kinds: FindingKind::ALL
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let (lhs, rhs) = spec
            .split_once(">=")
            .ok_or_else(|| err("no >= between the figure and its limit"))?;
        let (lhs, rhs) = (lhs.trim(), rhs.trim());
        if let Some((_, stat)) = LatencyStat::ALL.iter().find(|(n, _)| *n == lhs) {
            let us = parse_duration_us(rhs)
                .ok_or_else(|| err("the limit is not a duration such as 500us, 5ms or 1s"))?;
            return Ok(Trigger::Latency { stat: *stat, us });
        }
        let kind = if lhs == "findings" {
            None
        } else {
            Some(
                FindingKind::ALL
                    .into_iter()
                    .find(|k| k.name() == lhs)
                    .ok_or_else(|| {
                        err(&format!(
                            "{lhs:?} is neither a finding kind nor a latency figure"
                        ))
                    })?,
            )
        };
        let n = rhs
            .strip_suffix("/s")
            .ok_or_else(|| err("a finding rate ends in /s"))?
            .trim();
        let per_s: f64 = n
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| err("the rate is not a number above 0"))?;
        Ok(Trigger::FindingRate { kind, per_s })
    }

    /// A short name for file names and metric labels: the finding kind or the statistic.
    pub fn slug(&self) -> &'static str {
        match self {
            Trigger::FindingRate { kind: Some(k), .. } => k.name(),
            Trigger::FindingRate { kind: None, .. } => "findings",
            Trigger::Latency { stat, .. } => stat.name(),
        }
    }

    /// What fired, in words, when `s` meets the condition.
    pub fn fired(&self, s: &Snapshot) -> Option<String> {
        let secs = s.t_end_ns.saturating_sub(s.t_start_ns) as f64 / 1e9;
        if secs <= 0.0 {
            return None;
        }
        match self {
            Trigger::FindingRate { kind, per_s } => {
                let n: u64 = match kind {
                    Some(k) => s.findings_by_kind.get(k.name()).copied().unwrap_or(0),
                    None => s.findings_by_kind.values().sum(),
                };
                let rate = n as f64 / secs;
                (n > 0 && rate >= *per_s).then(|| {
                    format!(
                        "{} {n} in {secs:.1} s ({rate:.1}/s >= {per_s}/s)",
                        self.slug()
                    )
                })
            }
            Trigger::Latency { stat, us } => {
                let l = &s.runqlat_us;
                if l.count == 0 {
                    return None;
                }
                let v = match stat {
                    LatencyStat::P50 => l.p50,
                    LatencyStat::P90 => l.p90,
                    LatencyStat::P99 => l.p99,
                    LatencyStat::P999 => l.p999,
                    LatencyStat::Max => l.max,
                };
                (v >= *us).then(|| {
                    format!(
                        "runqlat {} {v:.0} us >= {us:.0} us ({} samples)",
                        stat.name(),
                        l.count
                    )
                })
            }
        }
    }
}

/// `500us`, `5ms`, `1.5s` in microseconds (above 0).
fn parse_duration_us(s: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(secs: f64, findings: &[(&str, u64)], p99: f64) -> Snapshot {
        Snapshot {
            t_end_ns: (secs * 1e9) as u64,
            runqlat_us: crate::analyze::LatencySummary {
                count: 100,
                p50: 1.0,
                p90: 2.0,
                p99,
                p999: p99,
                max: p99,
                ..Default::default()
            },
            findings_by_kind: findings.iter().map(|(k, n)| ((*k).into(), *n)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn parses_both_forms() {
        assert_eq!(
            Trigger::parse("missed_pull>=5/s"),
            Ok(Trigger::FindingRate {
                kind: Some(FindingKind::MissedPull),
                per_s: 5.0
            })
        );
        assert_eq!(
            Trigger::parse("findings >= 0.5/s"),
            Ok(Trigger::FindingRate {
                kind: None,
                per_s: 0.5
            })
        );
        assert_eq!(
            Trigger::parse("p99>=5ms"),
            Ok(Trigger::Latency {
                stat: LatencyStat::P99,
                us: 5000.0
            })
        );
        assert_eq!(
            Trigger::parse("max>=1s").map(|t| t.slug()),
            Ok("max"),
            "and its slug"
        );
    }

    #[test]
    fn refuses_malformed_specs_in_one_line_naming_the_forms() {
        for bad in [
            "",
            "missed_pull",
            "missed_pull>5/s",
            "missed_pull>=5",
            "missed_pull>=-1/s",
            "missed_pull>=x/s",
            "nosuch>=1/s",
            "p99>=5",
            "p99>=0ms",
            "p99>=5m",
        ] {
            let e = Trigger::parse(bad).expect_err(bad).to_string();
            assert!(!e.contains('\n'), "{e}");
            assert!(e.starts_with("--trigger "), "{e}");
            assert!(e.contains("missed_pull") && e.contains("p99>=5ms"), "{e}");
        }
    }

    #[test]
    fn fires_on_the_rate_over_the_interval_not_the_count() {
        let t = Trigger::parse("missed_pull>=5/s").unwrap();
        assert!(t.fired(&snap(1.0, &[("missed_pull", 5)], 0.0)).is_some());
        assert!(t.fired(&snap(2.0, &[("missed_pull", 5)], 0.0)).is_none());
        assert!(t.fired(&snap(1.0, &[("busy_wakeup", 50)], 0.0)).is_none());
        let any = Trigger::parse("findings>=3/s").unwrap();
        let why = any
            .fired(&snap(1.0, &[("busy_wakeup", 2), ("missed_pull", 1)], 0.0))
            .expect("three in a second");
        assert!(why.starts_with("findings 3 in 1.0 s"), "{why}");
    }

    #[test]
    fn fires_on_latency_at_or_above_its_limit() {
        let t = Trigger::parse("p99>=5ms").unwrap();
        assert!(t.fired(&snap(1.0, &[], 4999.0)).is_none());
        let why = t.fired(&snap(1.0, &[], 5000.0)).expect("at the limit");
        assert!(why.contains("p99 5000 us"), "{why}");
    }
}
