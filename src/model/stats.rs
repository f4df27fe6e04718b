//! The balancer's arithmetic on one domain, as the kernel does it in fair.c: per-group
//! statistics (update_sg_lb_stats), classification (group_classify), the busiest group
//! (update_sd_pick_busiest), the decision (sched_balance_find_src_group, formerly
//! find_busiest_group) and the imbalance with its migration type (calculate_imbalance).
//!
//! Pure functions of [`CpuSample`]s and [`DomainParams`]; nothing here knows about events.
//! Invariants: every division guards against a zero capacity or core count; figures are
//! integers in the kernel's units (SCHED_CAPACITY_SCALE = 1024).
//!
//! What cannot be seen from tracepoints is approximated, and said so:
//! - h_nr_running (h_nr_queued in 6.12.37 and later 6.12 releases, h_nr_runnable since 6.14:
//!   what each release's balancer sums) is nr_running less the tasks of other classes
//!   that the last `NrRunning` carrying the CFS count said; without it (older recordings,
//!   folded mode) less the CPU's stopper thread (`migration/N`, the stop class) while it is
//!   woken or running, and other RT and DL tasks are not told apart from CFS ones;
//! - util is cpu_util_cfs under UTIL_EST (on by default): max(util_avg, util_est) of the root
//!   cfs_rq (util_est is `util_est.enqueued` before 6.9), clamped to the original capacity,
//!   taken as max(1024, capacity). util_avg comes from the last `Pelt` event, a sampled PELT
//!   update (every 4 ms per CPU, and at once on a step); util_est from the newer of the last
//!   `Pelt` and the last `NrRunning`, which carries it (the kernel changes it at each enqueue
//!   and dequeue, just before nr_running, and no PELT update follows; a delayed dequeue and
//!   its wakeup change it with no nr_running change, and the live source sends the record
//!   again then); folded mode and
//!   recordings made before util_est was recorded carry less or none (util is then util_avg
//!   alone);
//! - sgc->imbalance (group `imbalanced`) and asym packing priorities are never known, so those
//!   two group types are never produced;
//! - misfit uses the non-asym-capacity rule only (a single CFS task on a CPU whose capacity is
//!   reduced by more than the domain's imbalance_pct), with the CPU's load_avg as task load.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// SCHED_CAPACITY_SCALE.
pub const CAPACITY_SCALE: u64 = 1024;
/// NUMA_IMBALANCE_MIN in fair.c: imbalances up to this are allowed at lightly loaded nodes.
pub const NUMA_IMBALANCE_MIN: u64 = 2;

/// Which kernel's balancer rules the model follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRules {
    /// Linux 6.1 to 6.5: no group_smt_balance, sibling imbalance is the plain nr_running
    /// difference, prefer_sibling forces a balance when busiest runs > local + 1 tasks.
    V6_1,
    /// Linux 6.6 and later (the reference is 6.18): group_smt_balance, sibling_imbalance
    /// normalised per core.
    #[default]
    V6_6Plus,
}

impl ModelRules {
    /// The rules for a kernel release string such as `6.1.0-18-amd64` or `6.18.2`: releases
    /// before 6.6 get [`ModelRules::V6_1`], everything else (and anything unparsable) the
    /// current rules.
    pub fn from_release(release: &str) -> ModelRules {
        let mut parts = release
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty());
        let major = parts.next().and_then(|s| s.parse::<u32>().ok());
        let minor = parts.next().and_then(|s| s.parse::<u32>().ok());
        match (major, minor) {
            (Some(ma), Some(mi)) if ma < 6 || (ma == 6 && mi < 6) => ModelRules::V6_1,
            _ => ModelRules::V6_6Plus,
        }
    }

    /// The stable name ("v6_1", "v6_6_plus").
    pub fn name(self) -> &'static str {
        match self {
            ModelRules::V6_1 => "v6_1",
            ModelRules::V6_6Plus => "v6_6_plus",
        }
    }
}

/// enum group_type, lowest first (the derive order is the kernel's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupType {
    /// group_has_spare.
    HasSpare,
    /// group_fully_busy.
    FullyBusy,
    /// group_misfit_task.
    MisfitTask,
    /// group_smt_balance (6.6+).
    SmtBalance,
    /// group_asym_packing (never produced: priorities are not observable).
    AsymPacking,
    /// group_imbalanced (never produced: sgc->imbalance is not observable).
    Imbalanced,
    /// group_overloaded.
    Overloaded,
}

impl GroupType {
    /// The kernel's name without the `group_` prefix.
    pub fn name(self) -> &'static str {
        match self {
            GroupType::HasSpare => "has_spare",
            GroupType::FullyBusy => "fully_busy",
            GroupType::MisfitTask => "misfit_task",
            GroupType::SmtBalance => "smt_balance",
            GroupType::AsymPacking => "asym_packing",
            GroupType::Imbalanced => "imbalanced",
            GroupType::Overloaded => "overloaded",
        }
    }
}

/// enum migration_type (the event's type: one name for the kernel's enum).
pub use crate::event::MigrationType;

/// What the model knows of one CPU at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuSample {
    /// rq->nr_running (all classes).
    pub nr_running: u32,
    /// Of those, tasks known not to be CFS tasks (the CPU's stopper thread), which
    /// rq->cfs.h_nr_running leaves out.
    pub not_cfs: u32,
    /// Root cfs_rq load_avg.
    pub load_avg: u64,
    /// Root cfs_rq runnable_avg.
    pub runnable_avg: u64,
    /// Root cfs_rq util_avg.
    pub util_avg: u64,
    /// Root cfs_rq util_est (0 when the recording does not have it).
    pub util_est: u64,
    /// rq->cpu_capacity (1024 when never seen).
    pub capacity: u64,
    /// idle_cpu(): the idle task runs and nothing is queued.
    pub idle: bool,
}

impl Default for CpuSample {
    /// An idle CPU of full capacity.
    fn default() -> Self {
        CpuSample {
            nr_running: 0,
            not_cfs: 0,
            load_avg: 0,
            runnable_avg: 0,
            util_avg: 0,
            util_est: 0,
            capacity: CAPACITY_SCALE,
            idle: true,
        }
    }
}

/// The domain-wide facts the kernel takes from sd and its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainParams {
    /// sd->imbalance_pct (110 at SMT, 117 elsewhere).
    pub imbalance_pct: u64,
    /// SD_SHARE_LLC (SMT, CLS, MC).
    pub share_llc: bool,
    /// SD_NUMA.
    pub numa: bool,
    /// SD_PREFER_SIBLING of the child domain (any non-NUMA child).
    pub prefer_sibling: bool,
    /// The groups are SMT cores (the child level is SMT).
    pub smt_groups: bool,
    /// sd->imb_numa_nr (0 below NUMA).
    pub imb_numa_nr: u64,
    /// The kernel version's rules.
    pub rules: ModelRules,
}

/// struct sg_lb_stats for one group, plus its classification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupStats {
    /// The group's CPUs.
    pub cpus: CpuSet,
    /// group_type.
    pub group_type: GroupType,
    /// group_load: Σ load_avg.
    pub load: u64,
    /// group_util: Σ min(max(util_avg, util_est), original capacity).
    pub util: u64,
    /// group_runnable: Σ runnable_avg.
    pub runnable: u64,
    /// group_capacity: `sgc->capacity` as last refreshed where known, else Σ cpu_capacity.
    pub capacity: u64,
    /// sum_nr_running.
    pub nr_running: u64,
    /// sum_h_nr_running (nr_running less known stopper threads).
    pub h_nr_running: u64,
    /// idle_cpus.
    pub idle_cpus: u64,
    /// group_weight.
    pub weight: u64,
    /// avg_load = load·1024/capacity (computed only when overloaded, as the kernel does).
    pub avg_load: u64,
    /// group_misfit_task_load.
    pub misfit_task_load: u64,
    /// Cores in the group (sgs->cores, for sibling_imbalance).
    pub cores: u64,
}

/// update_sg_lb_stats + group_classify for one group. `local`: the group holding the
/// destination CPU; `dst_idle`: env->idle != CPU_NOT_IDLE. The group's capacity is its CPUs'
/// current sum (see [`group_stats_with`]).
pub fn group_stats(
    cpus: &CpuSet,
    samples: &[CpuSample],
    cores: u64,
    p: &DomainParams,
    local: bool,
    dst_idle: bool,
) -> GroupStats {
    group_stats_with(cpus, samples, cores, p, local, dst_idle, None)
}

/// [`group_stats`] with `sgc_capacity`: the group's `sgc->capacity` where it is known (the
/// kernel refreshes it only when a CPU of the group balances), else `None`.
pub fn group_stats_with(
    cpus: &CpuSet,
    samples: &[CpuSample],
    cores: u64,
    p: &DomainParams,
    local: bool,
    dst_idle: bool,
    sgc_capacity: Option<u64>,
) -> GroupStats {
    let mut g = GroupStats {
        cpus: *cpus,
        group_type: GroupType::HasSpare,
        load: 0,
        util: 0,
        runnable: 0,
        capacity: 0,
        nr_running: 0,
        h_nr_running: 0,
        idle_cpus: 0,
        weight: 0,
        avg_load: 0,
        misfit_task_load: 0,
        cores: cores.max(1),
    };
    for c in cpus.iter() {
        let s = samples.get(c).copied().unwrap_or_default();
        let orig = s.capacity.max(CAPACITY_SCALE);
        g.load += s.load_avg;
        // cpu_util_cfs: max(util_avg, util_est) (UTIL_EST is on by default), capped.
        g.util += s.util_avg.max(s.util_est).min(orig);
        g.runnable += s.runnable_avg;
        g.capacity += s.capacity;
        // The CFS tasks (rq->cfs.h_nr_running): the sum, and the misfit test below.
        let h = s.nr_running.saturating_sub(s.not_cfs);
        g.nr_running += u64::from(s.nr_running);
        g.h_nr_running += u64::from(h);
        g.weight += 1;
        if s.idle {
            g.idle_cpus += 1;
        }
        // update_sg_lb_stats, non-asym-capacity misfit: dst idle, one CFS task on a CPU whose
        // capacity is reduced (sched_reduced_capacity: rq->cfs.h_nr_running == 1, then
        // check_cpu_capacity: cap·pct < orig·100). RT tasks beside it are what usually
        // reduce the capacity, so the count is the CFS one, not nr_running.
        if !local && dst_idle && h == 1 && s.capacity * p.imbalance_pct < orig * 100 {
            g.misfit_task_load = g.misfit_task_load.max(s.load_avg);
        }
    }
    if let Some(c) = sgc_capacity {
        g.capacity = c;
    }
    classify(&mut g, p, local, dst_idle);
    g
}

/// The end of update_sg_lb_stats for a group whose sums are in: its type, and its average
/// load where it is overloaded.
pub fn classify(g: &mut GroupStats, p: &DomainParams, local: bool, dst_idle: bool) {
    // smt_balance(): non-local, dst idle, an SMT group with more than one CFS task (6.6+).
    let smt_balance = p.rules == ModelRules::V6_6Plus
        && !local
        && dst_idle
        && p.smt_groups
        && g.weight > 1
        && g.h_nr_running > 1;
    g.group_type = group_classify(g, p.imbalance_pct, smt_balance);
    g.avg_load = match g.group_type == GroupType::Overloaded && g.capacity > 0 {
        true => g.load * CAPACITY_SCALE / g.capacity,
        false => 0,
    };
}

/// group_is_overloaded.
pub fn group_is_overloaded(g: &GroupStats, pct: u64) -> bool {
    g.nr_running > g.weight
        && (g.capacity * 100 < g.util * pct || g.capacity * pct < g.runnable * 100)
}

/// group_has_capacity.
pub fn group_has_capacity(g: &GroupStats, pct: u64) -> bool {
    if g.nr_running < g.weight {
        return true;
    }
    if g.capacity * pct < g.runnable * 100 {
        return false;
    }
    g.capacity * 100 > g.util * pct
}

/// group_classify: the first matching type, highest first.
pub fn group_classify(g: &GroupStats, pct: u64, smt_balance: bool) -> GroupType {
    if group_is_overloaded(g, pct) {
        GroupType::Overloaded
    } else if smt_balance {
        GroupType::SmtBalance
    } else if g.misfit_task_load > 0 {
        GroupType::MisfitTask
    } else if !group_has_capacity(g, pct) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// update_sd_pick_busiest: whether `sg` replaces the current pick `busiest`.
pub fn pick_busiest(sg: &GroupStats, busiest: Option<&GroupStats>, p: &DomainParams) -> bool {
    if sg.h_nr_running == 0 {
        return false;
    }
    let Some(b) = busiest else {
        return true;
    };
    if sg.group_type != b.group_type {
        return sg.group_type > b.group_type;
    }
    let has_spare_rule = |sg: &GroupStats, b: &GroupStats| {
        // smt_vs_nonsmt_groups never differs here: every group of a domain has the same
        // child level, so only the idle-CPU and nr_running comparison applies.
        if sg.idle_cpus > b.idle_cpus {
            return false;
        }
        !(sg.idle_cpus == b.idle_cpus && sg.nr_running <= b.nr_running)
    };
    let v6_1 = p.rules == ModelRules::V6_1;
    match sg.group_type {
        GroupType::Overloaded => sg.avg_load > b.avg_load,
        GroupType::Imbalanced | GroupType::AsymPacking => false,
        // 6.1: `if (sgs->group_misfit_task_load < busiest->group_misfit_task_load) return
        // false;` (a tie goes to the later group); 6.6+: `return sgs->... > busiest->...;`.
        GroupType::MisfitTask if v6_1 => sg.misfit_task_load >= b.misfit_task_load,
        GroupType::MisfitTask => sg.misfit_task_load > b.misfit_task_load,
        // 6.1: `if (sgs->avg_load <= busiest->avg_load) return false;`: avg_load is 0 for
        // both, so the first group found stays.
        GroupType::FullyBusy if v6_1 => sg.avg_load > b.avg_load,
        GroupType::FullyBusy => {
            // 6.6+: on equal avg_load (0 for both) the later group wins, unless the current
            // pick is an SMT core (`sds->busiest->flags & SD_SHARE_CPUCAPACITY`).
            !(sg.avg_load < b.avg_load || (sg.avg_load == b.avg_load && p.smt_groups))
        }
        GroupType::SmtBalance => {
            if sg.idle_cpus > 0 || b.idle_cpus > 0 {
                has_spare_rule(sg, b)
            } else {
                !p.smt_groups
            }
        }
        GroupType::HasSpare => has_spare_rule(sg, b),
    }
}

/// The outcome of one balance decision at a domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Index of the busiest group, if any.
    pub busiest: Option<usize>,
    /// env->imbalance (0 when balanced).
    pub imbalance: u64,
    /// env->migration_type, when an imbalance was computed.
    pub migration_type: Option<MigrationType>,
}

/// sibling_imbalance (6.6+; 6.1 uses the plain nr_running difference).
pub fn sibling_imbalance(
    busiest: &GroupStats,
    local: &GroupStats,
    dst_idle: bool,
    rules: ModelRules,
) -> u64 {
    if rules == ModelRules::V6_1 {
        return busiest.nr_running.saturating_sub(local.nr_running);
    }
    if !dst_idle || busiest.nr_running == 0 {
        return 0;
    }
    let (cb, cl) = (busiest.cores.max(1), local.cores.max(1));
    if cb == cl {
        return busiest.nr_running.saturating_sub(local.nr_running);
    }
    let imb = (cl * busiest.nr_running).saturating_sub(cb * local.nr_running);
    let imb = (2 * imb + cl + cb) / (cl + cb);
    if imb <= 1 && local.nr_running == 0 && busiest.nr_running > 1 {
        2
    } else {
        imb
    }
}

/// adjust_numa_imbalance: a small imbalance is allowed while the destination runs no more
/// than imb_numa_nr tasks (allow_numa_imbalance). Same rule in 6.1 and 6.18.
pub fn adjust_numa_imbalance(imbalance: u64, dst_running: u64, imb_numa_nr: u64) -> u64 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        0
    } else {
        imbalance
    }
}

/// sched_balance_find_src_group (find_busiest_group) then calculate_imbalance, for the
/// destination in group `local`. `groups` must all be classified with that `local`; `order`
/// is the order update_sd_lb_stats visits them in (indices into `groups`, from the local group
/// around the kernel's ring), which settles ties between equal candidates.
pub fn decide(
    groups: &[GroupStats],
    order: impl IntoIterator<Item = usize>,
    local: usize,
    p: &DomainParams,
    dst_idle: bool,
) -> Decision {
    let mut busiest: Option<usize> = None;
    for i in order {
        let Some(g) = groups.get(i) else { continue };
        if i != local && pick_busiest(g, busiest.map(|b| &groups[b]), p) {
            busiest = Some(i);
        }
    }
    let balanced = Decision {
        busiest,
        imbalance: 0,
        migration_type: None,
    };
    let Some(bi) = busiest else {
        return balanced;
    };
    let (b, l) = (&groups[bi], &groups[local]);
    let total_load: u64 = groups.iter().map(|g| g.load).sum();
    let total_cap: u64 = groups.iter().map(|g| g.capacity).sum::<u64>().max(1);
    let sd_avg = total_load * CAPACITY_SCALE / total_cap;
    let force = |imb: u64, mt| Decision {
        busiest,
        imbalance: imb,
        migration_type: Some(mt),
    };
    if b.group_type == GroupType::MisfitTask {
        return force(b.misfit_task_load, MigrationType::Load);
    }
    if matches!(b.group_type, GroupType::AsymPacking | GroupType::Imbalanced) {
        return calculate_imbalance(b, l, sd_avg, p, dst_idle, busiest);
    }
    if l.group_type > b.group_type {
        return balanced;
    }
    if l.group_type == GroupType::Overloaded {
        let local_avg = l.avg_load;
        if local_avg >= b.avg_load
            || local_avg >= sd_avg
            || 100 * b.avg_load <= p.imbalance_pct * local_avg
        {
            return balanced;
        }
    }
    let prefer = match p.rules {
        ModelRules::V6_1 => b.nr_running > l.nr_running + 1,
        ModelRules::V6_6Plus => sibling_imbalance(b, l, dst_idle, p.rules) > 1,
    };
    if p.prefer_sibling && l.group_type == GroupType::HasSpare && prefer {
        return calculate_imbalance(b, l, sd_avg, p, dst_idle, busiest);
    }
    if b.group_type != GroupType::Overloaded {
        if !dst_idle {
            return balanced;
        }
        // smt_balance with smt_vs_nonsmt_groups: never, all groups share one child level.
        if b.weight > 1 && l.idle_cpus <= b.idle_cpus + 1 {
            return balanced;
        }
        if b.h_nr_running == 1 {
            return balanced;
        }
    }
    calculate_imbalance(b, l, sd_avg, p, dst_idle, busiest)
}

/// calculate_imbalance.
fn calculate_imbalance(
    b: &GroupStats,
    l: &GroupStats,
    sd_avg: u64,
    p: &DomainParams,
    dst_idle: bool,
    busiest: Option<usize>,
) -> Decision {
    let out = |imb: u64, mt| Decision {
        busiest,
        imbalance: imb,
        migration_type: if imb > 0 { Some(mt) } else { None },
    };
    match b.group_type {
        GroupType::MisfitTask => return out(b.misfit_task_load, MigrationType::Load),
        GroupType::AsymPacking => return out(b.h_nr_running, MigrationType::Task),
        GroupType::SmtBalance | GroupType::Imbalanced => return out(1, MigrationType::Task),
        _ => {}
    }
    if l.group_type == GroupType::HasSpare {
        if b.group_type == GroupType::Overloaded && !p.share_llc {
            let imb = l.capacity.max(l.util) - l.util;
            if imb == 0 && dst_idle {
                return out(1, MigrationType::Task);
            }
            return out(imb, MigrationType::Util);
        }
        let mut imb = if b.weight == 1 || p.prefer_sibling {
            sibling_imbalance(b, l, dst_idle, p.rules)
        } else {
            // max_t(long, 0, (local->idle_cpus - busiest->idle_cpus)) on unsigned ints would
            // wrap, but only prefer_sibling-less domains with groups of several CPUs get here,
            // and those reach this point only when local has more idle CPUs (the NUMA levels
            // above another NUMA level send an overloaded busiest to migrate_util and need
            // local idle > busiest idle + 1 otherwise).
            l.idle_cpus.saturating_sub(b.idle_cpus)
        };
        if p.numa {
            imb = adjust_numa_imbalance(imb, l.nr_running + 1, p.imb_numa_nr);
        }
        return out(imb >> 1, MigrationType::Task);
    }
    let mut local_avg = l.avg_load;
    if l.group_type < GroupType::Overloaded {
        local_avg = l.load * CAPACITY_SCALE / l.capacity.max(1);
        if local_avg >= b.avg_load || local_avg >= sd_avg {
            return out(0, MigrationType::Load);
        }
    }
    // The kernel's unsigned long arithmetic: the guards above (here and in decide) keep
    // local below the domain average, but nothing keeps busiest above it (a non-overloaded
    // group may carry more load per capacity than the busiest overloaded one). Then
    // busiest->avg_load - sds->avg_load wraps to a huge value, min() takes the local side,
    // and the kernel pulls.
    let imb = (b.avg_load.wrapping_sub(sd_avg).wrapping_mul(b.capacity))
        .min(sd_avg.wrapping_sub(local_avg).wrapping_mul(l.capacity))
        / CAPACITY_SCALE;
    out(imb, MigrationType::Load)
}
