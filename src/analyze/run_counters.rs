//! The run's balancer counters beside the kernel's: lbscope's counts over the window of the
//! run's two `/proc/schedstat` reads, and the kernel's difference of those reads, per domain
//! level and idle type (the JSON contract of `report`'s `balancer_counters` line).

use super::counters::{idle_name, is_zero_imbalance, BalancerCounters, Counts, Imbalance};
use crate::event::SchedstatText;
use crate::schedstat::{self, IdleCounters, IDLE_ORDER};
use crate::topology::IndexedTopology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// lbscope's figures of one level and idle type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ours {
    #[serde(flatten)]
    pub counts: Counts,
    pub searches: u64,
    pub imbalance: Imbalance,
    pub imbalance_undetermined: u64,
    /// Their searches' imbalance: the kernel's figure lies between `imbalance` and
    /// `imbalance` plus this.
    pub imbalance_undetermined_amount: Imbalance,
    /// Counts left out because their moment fell inside a schedstat read.
    pub in_flight: Counts,
    /// The imbalance of searches made inside a read: the kernel's figure may exceed
    /// `imbalance` plus the undetermined amount by up to this.
    #[serde(default, skip_serializing_if = "is_zero_imbalance")]
    pub imbalance_in_flight_amount: Imbalance,
}

/// One level and idle type, lbscope's counts and the kernel's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComparedRow {
    pub level: String,
    pub idle: String,
    /// `None` when lbscope counted nothing there.
    pub lbscope: Option<Ours>,
    /// The kernel's difference, summed over the level's CPUs; `None` without schedstat reads.
    pub kernel: Option<IdleCounters>,
}

/// Active balances of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveRow {
    pub level: String,
    /// Tasks the stopper pushed, from its `detach_task` events.
    pub lbscope_alb_pushed: u64,
    pub kernel_alb_count: Option<u64>,
    pub kernel_alb_failed: Option<u64>,
    pub kernel_alb_pushed: Option<u64>,
}

/// What the kernel's reads gave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelReads {
    /// The file's version (15, 16 or 17).
    pub schedstat_version: u32,
    /// How long each read took (ns): counts made meanwhile are in flight.
    pub read_ns: [u64; 2],
    /// The window between the reads (ns).
    pub window_ns: u64,
    /// Domains of the end read the start read did not have with the same span (rebuilt).
    pub domains_left_out: usize,
}

/// The run's balancer counters, lbscope's and the kernel's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    /// The balancer's calls were recorded (fentry/fexit on sched_balance_rq): without them
    /// only lb_gained and the searches are lbscope's.
    pub calls_recorded: bool,
    /// The kernel's reads, when the run has both and they parsed.
    pub kernel: Option<KernelReads>,
    /// Why the kernel's figures are missing (no schedstat, one read only, a parse error).
    pub kernel_missing: Option<String>,
    /// Events the run lost: counts may fall short by as many.
    pub lost_events: u64,
    pub rows: Vec<ComparedRow>,
    pub active: Vec<ActiveRow>,
    /// Times the active-balance stopper ran.
    pub stopper_runs: u64,
    /// Balancer migrations by reason and level crossed (the migration tracepoint).
    pub gained_by_migrations: BTreeMap<String, BTreeMap<String, u64>>,
}

impl RunReport {
    /// Puts lbscope's counts `ours` beside the difference of the `reads` (start, end).
    pub fn new(
        ours: BalancerCounters,
        reads: &[Option<(u64, SchedstatText)>; 2],
        topo: &IndexedTopology,
        lost_events: u64,
    ) -> RunReport {
        let (kernel, kernel_missing, krows, kalb) = match reads {
            [Some((t0, a)), Some((t1, b))] => {
                match (schedstat::parse(&a.text), schedstat::parse(&b.text)) {
                    (Ok(sa), Ok(sb)) => {
                        let (delta, left_out) = schedstat::delta(&sa, &sb);
                        let (rows, alb) = by_level(&delta, topo);
                        let reads = KernelReads {
                            schedstat_version: sb.version,
                            read_ns: [a.read_ns, b.read_ns],
                            window_ns: t1.saturating_sub(t0 + a.read_ns),
                            domains_left_out: left_out,
                        };
                        (Some(reads), None, rows, alb)
                    }
                    (Err(e), _) | (_, Err(e)) => (
                        None,
                        Some(format!("/proc/schedstat: {e}")),
                        Vec::new(),
                        Vec::new(),
                    ),
                }
            }
            [None, None] => (
                None,
                Some("the run holds no /proc/schedstat read".into()),
                Vec::new(),
                Vec::new(),
            ),
            _ => (
                None,
                Some("the run holds one /proc/schedstat read of two (it was cut short)".into()),
                Vec::new(),
                Vec::new(),
            ),
        };
        let mut rows: Vec<ComparedRow> = Vec::new();
        let order = |level: &str| {
            (0..topo.levels.len())
                .position(|l| topo.level_key(Some(l)) == level)
                .unwrap_or(usize::MAX)
        };
        for r in &ours.rows {
            rows.push(ComparedRow {
                level: r.level.clone(),
                idle: r.idle.clone(),
                lbscope: Some(Ours {
                    counts: r.counts,
                    searches: r.searches,
                    imbalance: r.imbalance,
                    imbalance_undetermined: r.imbalance_undetermined,
                    imbalance_undetermined_amount: r.imbalance_undetermined_amount,
                    in_flight: r.in_flight,
                    imbalance_in_flight_amount: r.imbalance_in_flight_amount,
                }),
                kernel: None,
            });
        }
        for (level, idle, k) in krows {
            match rows.iter_mut().find(|r| r.level == level && r.idle == idle) {
                Some(r) => r.kernel = Some(k),
                None => rows.push(ComparedRow {
                    level,
                    idle: idle.to_string(),
                    lbscope: None,
                    kernel: Some(k),
                }),
            }
        }
        // Rows the kernel has with nothing counted by either side are left out.
        rows.retain(|r| {
            r.lbscope.is_some() || r.kernel.is_some_and(|k| k != IdleCounters::default())
        });
        let idle_pos = |i: &str| {
            IDLE_ORDER
                .iter()
                .position(|t| idle_name(*t) == i)
                .unwrap_or(3)
        };
        rows.sort_by_key(|r| (order(&r.level), r.level.clone(), idle_pos(&r.idle)));
        let mut active: Vec<ActiveRow> = ours
            .alb_pushed
            .iter()
            .map(|(l, n)| ActiveRow {
                level: l.clone(),
                lbscope_alb_pushed: *n,
                ..ActiveRow::default()
            })
            .collect();
        for (level, (c, f, p)) in kalb {
            let i = match active.iter().position(|a| a.level == level) {
                Some(i) => i,
                None => {
                    active.push(ActiveRow {
                        level,
                        ..ActiveRow::default()
                    });
                    active.len() - 1
                }
            };
            active[i].kernel_alb_count = Some(c);
            active[i].kernel_alb_failed = Some(f);
            active[i].kernel_alb_pushed = Some(p);
        }
        active.sort_by_key(|a| (order(&a.level), a.level.clone()));
        RunReport {
            calls_recorded: ours.calls_recorded,
            kernel,
            kernel_missing,
            lost_events,
            rows,
            active,
            stopper_runs: ours.stopper_runs,
            gained_by_migrations: ours.gained_by_migrations,
        }
    }

    /// Nothing to say: no balancer event and no schedstat read.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
            && self.active.is_empty()
            && self.stopper_runs == 0
            && self.gained_by_migrations.is_empty()
            && self.kernel.is_none()
    }
}

type KernelRows = Vec<(String, &'static str, IdleCounters)>;
type KernelAlb = Vec<(String, (u64, u64, u64))>;

/// The kernel's per-CPU differences summed per level: a CPU's domain is the topology's level
/// whose span around that CPU equals the domain's (`domainN` counts only the levels the
/// kernel kept, as the topology does); else it is named `domainN`.
fn by_level(delta: &[schedstat::CpuStat], topo: &IndexedTopology) -> (KernelRows, KernelAlb) {
    let mut rows: BTreeMap<(usize, String, usize), IdleCounters> = BTreeMap::new();
    let mut alb: BTreeMap<(usize, String), (u64, u64, u64)> = BTreeMap::new();
    for c in delta {
        for d in &c.domains {
            let l = (0..topo.levels.len())
                .find(|&l| topo.span(l, c.cpu as usize).as_ref() == Some(&d.span));
            let (pos, name) = match l {
                Some(l) => (l, topo.level_key(Some(l)).to_string()),
                None => (usize::MAX, format!("domain{}", d.index)),
            };
            for (k, v) in d.by_idle.iter().enumerate() {
                rows.entry((pos, name.clone(), k)).or_default().add(v);
            }
            let a = alb.entry((pos, name)).or_default();
            a.0 += d.alb_count;
            a.1 += d.alb_failed;
            a.2 += d.alb_pushed;
        }
    }
    (
        rows.into_iter()
            .map(|((_, n, k), v)| (n, idle_name(IDLE_ORDER[k]), v))
            .collect(),
        alb.into_iter()
            .filter(|(_, v)| *v != (0, 0, 0))
            .map(|((_, n), v)| (n, v))
            .collect(),
    )
}
