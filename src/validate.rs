//! Checks of the stack-derived migration reasons against the balancer's own view (fentry
//! mode): each balancer migration is paired with the `detach_task` [`EventKind::Balance`] of
//! the same task shortly before it, and its reason must agree with the kernel's idle type.
//! Pure: a function of the event stream only.

use crate::event::{CpuIdleType, Event, EventKind, Pid, Reason};
use serde::Serialize;
use std::collections::HashMap;

/// How far before its migration a `detach_task` may be to pair with it: detach and
/// `set_task_cpu` are microseconds apart in the same balance pass.
pub const MATCH_WINDOW_NS: u64 = 10_000_000;

/// The agreement between stack reasons and `lb_env.idle`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReasonAgreement {
    /// Balancer migrations (periodic, nohz, newidle, active balance).
    pub balancer_migrations: u64,
    /// Of those, the ones paired with a `detach_task` record.
    pub matched: u64,
    /// Of the matched ones, those whose reason agrees with the idle type.
    pub agreeing: u64,
}

impl ReasonAgreement {
    /// `agreeing / matched`, or `None` when nothing matched (no fentry mode).
    pub fn share(&self) -> Option<f64> {
        (self.matched > 0).then(|| self.agreeing as f64 / self.matched as f64)
    }
}

/// Whether a stack reason is consistent with the idle type the balancer ran with: newidle
/// balance runs with CPU_NEWLY_IDLE; periodic and nohz balance with CPU_IDLE or CPU_NOT_IDLE;
/// active balance moves in the stopper, with the idle type of the pass that woke it (any).
pub fn agrees(reason: Reason, idle: CpuIdleType) -> bool {
    match reason {
        Reason::NewidleBalance => idle == CpuIdleType::NewlyIdle,
        Reason::PeriodicBalance | Reason::NohzIdleBalance => idle != CpuIdleType::NewlyIdle,
        _ => true,
    }
}

/// Pairs (in timestamp order) every balancer migration with the latest `detach_task` of the same pid no more than
/// [`MATCH_WINDOW_NS`] before it (each detach used once) and counts the agreements.
pub fn reason_agreement(events: &[Event]) -> ReasonAgreement {
    let mut detached: HashMap<Pid, (u64, CpuIdleType)> = HashMap::new();
    let mut r = ReasonAgreement::default();
    // Two ring buffers deliver out of order: pair in time order.
    let mut sorted: Vec<&Event> = events.iter().collect();
    sorted.sort_by_key(|e| e.ts_ns);
    for e in sorted {
        match &e.kind {
            EventKind::Balance(b) => {
                if let Some(pid) = b.pid {
                    detached.insert(pid, (e.ts_ns, b.idle));
                }
            }
            EventKind::Migrate { pid, reason, .. } if reason.is_balancer() => {
                r.balancer_migrations += 1;
                // Active balance detaches in the stopper without detach_task on some kernels.
                if let Some((ts, idle)) = detached.remove(pid) {
                    if e.ts_ns >= ts && e.ts_ns - ts <= MATCH_WINDOW_NS {
                        r.matched += 1;
                        r.agreeing += u64::from(agrees(*reason, idle));
                    }
                }
            }
            _ => {}
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Balance, MigrateContext, MigrationType, ReasonSource};

    fn detach(ts: u64, pid: Pid, idle: CpuIdleType) -> Event {
        Event {
            ts_ns: ts,
            cpu: 0,
            kind: EventKind::Balance(Box::new(Balance {
                level: 1,
                sd_weight: 4,
                idle,
                migration_type: MigrationType::Load,
                imbalance: 1,
                balanced: false,
                dst_cpu: 0,
                src_cpu: 1,
                pid: Some(pid),
            })),
        }
    }

    fn migrate(ts: u64, pid: Pid, reason: Reason) -> Event {
        Event {
            ts_ns: ts,
            cpu: 0,
            kind: EventKind::Migrate {
                pid,
                src_cpu: 1,
                dst_cpu: 0,
                reason,
                source: ReasonSource::Stack,
                stack_id: None,
                ctx: MigrateContext::default(),
            },
        }
    }

    #[test]
    fn pairs_by_pid_and_time() {
        let evs = vec![
            detach(100, 1, CpuIdleType::NewlyIdle),
            migrate(200, 1, Reason::NewidleBalance),
            detach(300, 2, CpuIdleType::NotIdle),
            migrate(400, 2, Reason::NewidleBalance),
            detach(500, 3, CpuIdleType::Idle),
            migrate(600 + MATCH_WINDOW_NS, 3, Reason::PeriodicBalance),
            migrate(700, 4, Reason::NohzIdleBalance),
            migrate(800, 5, Reason::Wakeup),
        ];
        let r = reason_agreement(&evs);
        assert_eq!(r.balancer_migrations, 4);
        assert_eq!(r.matched, 2);
        assert_eq!(r.agreeing, 1);
        assert_eq!(r.share(), Some(0.5));
    }

    #[test]
    fn nothing_matched_is_none() {
        assert_eq!(reason_agreement(&[]).share(), None);
        assert!(agrees(Reason::PeriodicBalance, CpuIdleType::Idle));
        assert!(agrees(Reason::NohzIdleBalance, CpuIdleType::NotIdle));
        assert!(!agrees(Reason::PeriodicBalance, CpuIdleType::NewlyIdle));
    }
}

/// A recording made in the lab (6.12, 2 sockets with SMT and 2 NUMA nodes, `mixed`).
#[cfg(test)]
mod lab_fixture {
    use crate::event::EventKind;
    use crate::record::Reader;
    use std::collections::BTreeSet;

    #[test]
    fn has_domain_levels_and_balance_events() {
        let bytes = include_bytes!("../tests/fixtures/lab/6.12-2s-smt-numa-mixed.lbs");
        let mut r = Reader::from_bytes(bytes.to_vec()).expect("the lab fixture reads");
        assert!(r.header().topology.levels.len() >= 3, "SMT, MC and NUMA");
        assert!(r.header().probes.iter().any(|(_, k)| k == "fentry"));
        let mut levels = BTreeSet::new();
        let mut not_balanced = 0;
        while let Some(chunk) = r.next_chunk() {
            for e in chunk {
                if let EventKind::Balance(b) = e.kind {
                    levels.insert(b.level);
                    not_balanced += u32::from(!b.balanced);
                }
            }
        }
        assert!(
            levels.len() >= 3,
            "Balance events at every level: {levels:?}"
        );
        assert!(not_balanced > 0);
    }
}
