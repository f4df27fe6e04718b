//! `/proc/schedstat`: parsing the kernel's own load-balancer counters (versions 15, 16 and 17)
//! and the difference of two snapshots. Pure: text in, numbers out.
//!
//! The domain lines, per the kernel's Documentation/scheduler/sched-stats.rst:
//! - v15 (up to 6.9): `domainN <mask>` then 8 fields for each idle type in the order idle,
//!   busy, newly idle (`enum cpu_idle_type` before 6.10): lb_count lb_balanced lb_failed
//!   lb_imbalance lb_gained lb_hot_gained lb_nobusyq lb_nobusyg; then 12 more: alb_count
//!   alb_failed alb_pushed, sbe_* and sbf_* (3 each), ttwu_wake_remote ttwu_move_affine
//!   ttwu_move_balance.
//! - v16 (6.10 on): the same fields, the idle types in the order busy, idle, newly idle.
//! - v17: `domainN <name> <mask>`, 11 fields per idle type (busy, idle, newly idle):
//!   lb_imbalance split into lb_imbalance_load, _util, _task and _misfit.
//!
//! Every figure here is the kernel's; the only derived number is a difference of two reads.

use crate::cpuset::CpuSet;
use crate::event::CpuIdleType;
use serde::{Deserialize, Serialize};

/// The idle types in lbscope's report order: busy, idle, newly idle.
pub const IDLE_ORDER: [CpuIdleType; 3] = [
    CpuIdleType::NotIdle,
    CpuIdleType::Idle,
    CpuIdleType::NewlyIdle,
];

/// The index of an idle type in [`IDLE_ORDER`].
pub fn idle_index(i: CpuIdleType) -> usize {
    match i {
        CpuIdleType::NotIdle => 0,
        CpuIdleType::Idle => 1,
        CpuIdleType::NewlyIdle => 2,
    }
}

/// The balancer's counters of one domain for one idle type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleCounters {
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    /// `lb_imbalance` (v15, v16); in v17 the sum of the four below.
    pub lb_imbalance: u64,
    /// v17's split of the imbalance by migration type (`None` before v17).
    pub lb_imbalance_load: Option<u64>,
    pub lb_imbalance_util: Option<u64>,
    pub lb_imbalance_task: Option<u64>,
    pub lb_imbalance_misfit: Option<u64>,
    pub lb_gained: u64,
    pub lb_hot_gained: u64,
    pub lb_nobusyq: u64,
    pub lb_nobusyg: u64,
}

/// One `domainN` line of one CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DomainStat {
    /// N: the domain's position from the CPU's lowest (degenerate levels do not count).
    pub index: usize,
    /// The domain's name (v17 on).
    pub name: Option<String>,
    /// The CPUs it spans.
    pub span: CpuSet,
    /// Counters per idle type, in [`IDLE_ORDER`].
    pub by_idle: [IdleCounters; 3],
    pub alb_count: u64,
    pub alb_failed: u64,
    pub alb_pushed: u64,
}

/// One CPU's domains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuStat {
    pub cpu: u32,
    pub domains: Vec<DomainStat>,
}

/// A parsed `/proc/schedstat`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Schedstat {
    pub version: u32,
    pub cpus: Vec<CpuStat>,
}

fn nums(fields: &[&str], what: &str) -> Result<Vec<u64>, String> {
    fields
        .iter()
        .map(|f| {
            f.parse::<u64>()
                .map_err(|_| format!("{what}: {f:?} is not a counter"))
        })
        .collect()
}

/// Parses the text of `/proc/schedstat`; an error names the line that does not fit its
/// version's layout, or a version this parser does not know.
pub fn parse(text: &str) -> Result<Schedstat, String> {
    let mut version = None;
    let mut cpus: Vec<CpuStat> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let what = format!("line {}", n + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = f.first() else { continue };
        if *first == "version" {
            let v: u32 = f
                .get(1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{what}: no version number"))?;
            if !(15..=17).contains(&v) {
                return Err(format!(
                    "/proc/schedstat version {v}: lbscope reads versions 15 to 17"
                ));
            }
            version = Some(v);
        } else if let Some(c) = first.strip_prefix("cpu") {
            let cpu = c
                .parse()
                .map_err(|_| format!("{what}: bad CPU {first:?}"))?;
            cpus.push(CpuStat {
                cpu,
                domains: Vec::new(),
            });
        } else if let Some(d) = first.strip_prefix("domain") {
            let v = version.ok_or_else(|| format!("{what}: a domain before the version"))?;
            let cpu = cpus
                .last_mut()
                .ok_or_else(|| format!("{what}: a domain before any CPU"))?;
            let index = d
                .parse()
                .map_err(|_| format!("{what}: bad domain {first:?}"))?;
            cpu.domains.push(domain(v, index, &f[1..], &what)?);
        }
    }
    let version = version.ok_or("no version line: not /proc/schedstat")?;
    Ok(Schedstat { version, cpus })
}

fn domain(version: u32, index: usize, f: &[&str], what: &str) -> Result<DomainStat, String> {
    let (name, rest) = match version {
        17 => (f.first().map(|s| s.to_string()), f.get(1..).unwrap_or(&[])),
        _ => (None, f),
    };
    let (mask, rest) = rest
        .split_first()
        .ok_or_else(|| format!("{what}: no CPU mask"))?;
    let span = CpuSet::parse_mask(mask).map_err(|e| format!("{what}: {e}"))?;
    let per = if version == 17 { 11 } else { 8 };
    if rest.len() != 3 * per + 12 {
        return Err(format!(
            "{what}: {} counters where version {version} prints {}",
            rest.len(),
            3 * per + 12
        ));
    }
    let v = nums(rest, what)?;
    let mut by_idle = [IdleCounters::default(); 3];
    for (k, g) in v[..3 * per].chunks(per).enumerate() {
        let c = if version == 17 {
            IdleCounters {
                lb_count: g[0],
                lb_balanced: g[1],
                lb_failed: g[2],
                lb_imbalance: g[3] + g[4] + g[5] + g[6],
                lb_imbalance_load: Some(g[3]),
                lb_imbalance_util: Some(g[4]),
                lb_imbalance_task: Some(g[5]),
                lb_imbalance_misfit: Some(g[6]),
                lb_gained: g[7],
                lb_hot_gained: g[8],
                lb_nobusyq: g[9],
                lb_nobusyg: g[10],
            }
        } else {
            IdleCounters {
                lb_count: g[0],
                lb_balanced: g[1],
                lb_failed: g[2],
                lb_imbalance: g[3],
                lb_gained: g[4],
                lb_hot_gained: g[5],
                lb_nobusyq: g[6],
                lb_nobusyg: g[7],
                ..IdleCounters::default()
            }
        };
        // v15 prints idle, busy, newly idle; v16 and v17 busy, idle, newly idle.
        let at = match (version, k) {
            (15, 0) => 1,
            (15, 1) => 0,
            _ => k,
        };
        by_idle[at] = c;
    }
    let tail = &v[3 * per..];
    Ok(DomainStat {
        index,
        name,
        span,
        by_idle,
        alb_count: tail[0],
        alb_failed: tail[1],
        alb_pushed: tail[2],
    })
}

fn sub(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a?.wrapping_sub(b?))
}

impl IdleCounters {
    /// `self - before`, counter by counter (wrapping: the kernel's counters are unsigned int
    /// and may wrap between two reads).
    pub fn minus(&self, b: &IdleCounters) -> IdleCounters {
        let w = |x: u64, y: u64| x.wrapping_sub(y) & 0xffff_ffff;
        IdleCounters {
            lb_count: w(self.lb_count, b.lb_count),
            lb_balanced: w(self.lb_balanced, b.lb_balanced),
            lb_failed: w(self.lb_failed, b.lb_failed),
            lb_imbalance: w(self.lb_imbalance, b.lb_imbalance),
            lb_imbalance_load: sub(self.lb_imbalance_load, b.lb_imbalance_load)
                .map(|x| x & 0xffff_ffff),
            lb_imbalance_util: sub(self.lb_imbalance_util, b.lb_imbalance_util)
                .map(|x| x & 0xffff_ffff),
            lb_imbalance_task: sub(self.lb_imbalance_task, b.lb_imbalance_task)
                .map(|x| x & 0xffff_ffff),
            lb_imbalance_misfit: sub(self.lb_imbalance_misfit, b.lb_imbalance_misfit)
                .map(|x| x & 0xffff_ffff),
            lb_gained: w(self.lb_gained, b.lb_gained),
            lb_hot_gained: w(self.lb_hot_gained, b.lb_hot_gained),
            lb_nobusyq: w(self.lb_nobusyq, b.lb_nobusyq),
            lb_nobusyg: w(self.lb_nobusyg, b.lb_nobusyg),
        }
    }

    /// Adds `o` into `self`.
    pub fn add(&mut self, o: &IdleCounters) {
        let opt = |a: &mut Option<u64>, b: Option<u64>| {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0) + b);
            }
        };
        self.lb_count += o.lb_count;
        self.lb_balanced += o.lb_balanced;
        self.lb_failed += o.lb_failed;
        self.lb_imbalance += o.lb_imbalance;
        opt(&mut self.lb_imbalance_load, o.lb_imbalance_load);
        opt(&mut self.lb_imbalance_util, o.lb_imbalance_util);
        opt(&mut self.lb_imbalance_task, o.lb_imbalance_task);
        opt(&mut self.lb_imbalance_misfit, o.lb_imbalance_misfit);
        self.lb_gained += o.lb_gained;
        self.lb_hot_gained += o.lb_hot_gained;
        self.lb_nobusyq += o.lb_nobusyq;
        self.lb_nobusyg += o.lb_nobusyg;
    }
}

/// The difference of two snapshots per CPU and domain (`end - start`), for the domains both
/// hold with the same span; domains rebuilt between the reads (hotplug, cpusets) are left
/// out and counted in the second value.
pub fn delta(start: &Schedstat, end: &Schedstat) -> (Vec<CpuStat>, usize) {
    let mut out = Vec::new();
    let mut dropped = 0;
    for ce in &end.cpus {
        let Some(cs) = start.cpus.iter().find(|c| c.cpu == ce.cpu) else {
            dropped += ce.domains.len();
            continue;
        };
        let mut domains = Vec::new();
        for de in &ce.domains {
            match cs
                .domains
                .iter()
                .find(|d| d.index == de.index && d.span == de.span)
            {
                Some(ds) => {
                    let mut by_idle = [IdleCounters::default(); 3];
                    for (k, b) in by_idle.iter_mut().enumerate() {
                        *b = de.by_idle[k].minus(&ds.by_idle[k]);
                    }
                    let w = |x: u64, y: u64| x.wrapping_sub(y) & 0xffff_ffff;
                    domains.push(DomainStat {
                        index: de.index,
                        name: de.name.clone(),
                        span: de.span,
                        by_idle,
                        alb_count: w(de.alb_count, ds.alb_count),
                        alb_failed: w(de.alb_failed, ds.alb_failed),
                        alb_pushed: w(de.alb_pushed, ds.alb_pushed),
                    });
                }
                None => dropped += 1,
            }
        }
        out.push(CpuStat {
            cpu: ce.cpu,
            domains,
        });
    }
    (out, dropped)
}

#[cfg(test)]
mod tests;
