//! How close one of the model's balancer decisions is to turning over: the smallest change of
//! the groups' PELT sums (load, utilization and runnable, each group scaled up, down or left
//! on its own) among [`MARGIN_STEPS`] that turns its answer, balanced or not, the other way.
//! The model reads PELT averages as sampled by a tracepoint (at most every few ms per CPU),
//! while the kernel reads them at the search: a disagreement that turns over within a
//! percent or two sits inside that sampling error, one that does not is worth reading.
//! Where no such change does, one task more or fewer on one group is tried: the model's count
//! of a run queue can be a task off the kernel's when the search ran while that task was
//! being enqueued or dequeued.
//! Pure: a decision's groups in, a margin out.

use super::stats::{self, DomainParams, GroupStats};
use super::{BalancePass, Model};

/// The changes tried, in per mille of each sum, smallest first.
pub const MARGIN_STEPS: [u64; 4] = [5, 10, 20, 50];

/// Most groups whose every combination of changes is tried (3 per group): wider domains
/// are not judged (their margin is `None`).
pub const MAX_GROUPS: usize = 6;

/// The smallest of [`MARGIN_STEPS`] (per mille) whose changes turn the balanced-or-not answer
/// of `groups` (as [`stats::decide`] gives it for `local`, visiting `order`) over, or `None`.
pub fn flip_margin(
    groups: &[GroupStats],
    order: &[usize],
    local: usize,
    p: &DomainParams,
    dst_idle: bool,
) -> Option<u64> {
    if groups.is_empty() || groups.len() > MAX_GROUPS {
        return None;
    }
    let verdict = |gs: &[GroupStats]| balanced(gs, order, local, p, dst_idle);
    let answer = verdict(groups);
    let combos = 3usize.pow(groups.len() as u32);
    let mut trial = groups.to_vec();
    MARGIN_STEPS.into_iter().find(|&step| {
        (1..combos).any(|combo| {
            let mut c = combo;
            for (i, (t, g)) in trial.iter_mut().zip(groups).enumerate() {
                *t = scaled(g, c % 3, step, p, i == local, dst_idle);
                c /= 3;
            }
            verdict(&trial) != answer
        })
    })
}

/// Whether one task more or fewer on one group (its CFS count too; a single CPU's group
/// idle without tasks, busy with one) turns the balanced-or-not answer of `groups` over: the
/// model counts a task that the kernel, searching as it was being enqueued or dequeued,
/// counted otherwise.
pub fn flips_by_one_task(
    groups: &[GroupStats],
    order: &[usize],
    local: usize,
    p: &DomainParams,
    dst_idle: bool,
) -> bool {
    let verdict = |gs: &[GroupStats]| balanced(gs, order, local, p, dst_idle);
    let answer = verdict(groups);
    let mut trial = groups.to_vec();
    (0..groups.len()).any(|i| {
        [true, false].into_iter().any(|more| {
            let g = &groups[i];
            if !more && g.nr_running == 0 {
                return false;
            }
            let mut t = g.clone();
            let step = |v: u64| if more { v + 1 } else { v.saturating_sub(1) };
            t.nr_running = step(t.nr_running);
            t.h_nr_running = step(t.h_nr_running);
            if t.weight == 1 {
                t.idle_cpus = u64::from(t.nr_running == 0);
            }
            stats::classify(&mut t, p, i == local, dst_idle);
            trial[i] = t;
            let turned = verdict(&trial) != answer;
            trial[i] = g.clone();
            turned
        })
    })
}

/// Whether [`stats::decide`] finds `groups` balanced, for `local`, visiting `order`.
fn balanced(
    groups: &[GroupStats],
    order: &[usize],
    local: usize,
    p: &DomainParams,
    dst_idle: bool,
) -> bool {
    stats::decide(groups, order.iter().copied(), local, p, dst_idle).imbalance == 0
}

/// `g` with its PELT sums left (`dir` 0), raised (1) or lowered (2) by `step` per mille, and
/// classified again.
fn scaled(
    g: &GroupStats,
    dir: usize,
    step: u64,
    p: &DomainParams,
    local: bool,
    dst_idle: bool,
) -> GroupStats {
    let factor = match dir {
        1 => 1000 + step,
        2 => 1000 - step,
        _ => return g.clone(),
    };
    let by = |v: u64| v.saturating_mul(factor) / 1000;
    let mut s = GroupStats {
        load: by(g.load),
        util: by(g.util),
        runnable: by(g.runnable),
        misfit_task_load: by(g.misfit_task_load),
        ..g.clone()
    };
    stats::classify(&mut s, p, local, dst_idle);
    s
}

impl<X: super::TaskExt> Model<X> {
    /// What turns over the answer of a pass the model made for a search into `dst_cpu` (its
    /// domain's parameters and visiting order are the topology's, whatever happened since):
    /// the least change of the PELT sums ([`flip_margin`]), else one task more or fewer
    /// ([`flips_by_one_task`]).
    pub fn turned_by(&self, pass: &BalancePass, dst_cpu: u32, dst_idle: bool) -> TurnedBy {
        let cpu = dst_cpu as usize;
        if pass.groups.len() > MAX_GROUPS {
            return TurnedBy::NotTried;
        }
        let Some(i) = self.table.index(&self.topo, pass.level, cpu) else {
            return TurnedBy::NotTried;
        };
        let dom = &self.table.doms[i];
        let order: Vec<usize> = dom.visit_order(Some(cpu), pass.local).collect();
        let (g, l, p) = (&pass.groups, pass.local, &dom.params);
        match flip_margin(g, &order, l, p, dst_idle) {
            Some(m) => TurnedBy::Pelt(m),
            None if flips_by_one_task(g, &order, l, p, dst_idle) => TurnedBy::OneTask,
            None => TurnedBy::Neither,
        }
    }
}

/// What turns a decision's answer over ([`Model::turned_by`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnedBy {
    /// The groups' PELT sums changed by this many per mille (one of [`MARGIN_STEPS`]).
    Pelt(u64),
    /// One task more or fewer on one group.
    OneTask,
    /// Neither (within [`MARGIN_STEPS`]).
    Neither,
    /// A domain of more than [`MAX_GROUPS`] groups, or one the model does not map.
    NotTried,
}

impl TurnedBy {
    /// "0.5%", "1%", ..., "one task", "neither", "not tried".
    pub fn name(self) -> String {
        match self {
            TurnedBy::Pelt(m) if m % 10 == 0 => format!("{}%", m / 10),
            TurnedBy::Pelt(m) => format!("{}.{}%", m / 10, m % 10),
            TurnedBy::OneTask => "one task".into(),
            TurnedBy::Neither => "neither".into(),
            TurnedBy::NotTried => "not tried".into(),
        }
    }
}
