//! Why a task changed CPU: the one table that maps the kernel functions found above
//! `set_task_cpu` in a `sched_migrate_task` stack to a [`Reason`] (old and new names side by
//! side), the context rules used when no stack could be taken, and the small state that
//! finishes rows needing more than the stack (exec, NUMA moves). Pure: no I/O.
//!
//! Rows are matched top to bottom against the whole stack and the first match wins; the
//! balancer rows share `sched_balance_rq`/`load_balance`, so their order matters
//! (shared/reference/balancer.md §2).

use crate::event::{MigrateContext, Pid, Reason};
use crate::idhash::IdMap;

/// What a stack alone says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackClass {
    /// The stack decides the reason.
    Fixed(Reason),
    /// `push_cpu_stop`: RT or DL push, told apart by the task's policy.
    PushCpuStop,
    /// `migration_cpu_stop`: exec, NUMA move or affinity, told apart by context.
    MigrationCpuStop,
}

impl StackClass {
    /// The reason to show for the stack itself (context-dependent rows show their most common
    /// outcome).
    pub fn nominal(self) -> Reason {
        match self {
            StackClass::Fixed(r) => r,
            StackClass::PushCpuStop => Reason::RtPushPull,
            StackClass::MigrationCpuStop => Reason::Affinity,
        }
    }
}

/// One row of the table: any of `frames` present in the stack gives `class`.
struct Row {
    frames: &'static [&'static str],
    class: StackClass,
}

/// The table, in match order. New names (6.10+) and old names are listed together.
const TABLE: &[Row] = &[
    Row {
        frames: &["active_load_balance_cpu_stop"],
        class: StackClass::Fixed(Reason::ActiveBalance),
    },
    Row {
        frames: &["sched_balance_newidle", "newidle_balance"],
        class: StackClass::Fixed(Reason::NewidleBalance),
    },
    Row {
        frames: &["_nohz_idle_balance", "nohz_idle_balance"],
        class: StackClass::Fixed(Reason::NohzIdleBalance),
    },
    Row {
        frames: &[
            "sched_balance_rq",
            "load_balance",
            "sched_balance_domains",
            "rebalance_domains",
        ],
        class: StackClass::Fixed(Reason::PeriodicBalance),
    },
    Row {
        frames: &["migrate_swap_stop"],
        class: StackClass::Fixed(Reason::NumaBalancing),
    },
    Row {
        frames: &["__balance_push_cpu_stop", "dl_task_offline_migration"],
        class: StackClass::Fixed(Reason::Hotplug),
    },
    Row {
        frames: &["push_rt_task", "pull_rt_task", "rto_push_irq_work_func"],
        class: StackClass::Fixed(Reason::RtPushPull),
    },
    Row {
        frames: &["push_dl_task", "pull_dl_task"],
        class: StackClass::Fixed(Reason::DlPushPull),
    },
    Row {
        frames: &["push_cpu_stop"],
        class: StackClass::PushCpuStop,
    },
    Row {
        frames: &["move_remote_task_to_local_dsq"],
        class: StackClass::Fixed(Reason::SchedExt),
    },
    // Core scheduling's cookie stealing is not a placement decision we can name.
    Row {
        frames: &["try_steal_cookie"],
        class: StackClass::Fixed(Reason::Unknown),
    },
    Row {
        frames: &["try_to_wake_up"],
        class: StackClass::Fixed(Reason::Wakeup),
    },
    Row {
        frames: &["migration_cpu_stop"],
        class: StackClass::MigrationCpuStop,
    },
    Row {
        frames: &[
            "affine_move_task",
            "__set_cpus_allowed_ptr",
            "__set_cpus_allowed_ptr_locked",
        ],
        class: StackClass::Fixed(Reason::Affinity),
    },
];

/// Strips compiler suffixes: `.isra.0`, `.constprop.0`, `.part.0`, `.cold`, `.llvm.123`.
pub fn base_symbol(sym: &str) -> &str {
    match sym.find('.') {
        Some(i) if i > 0 => &sym[..i],
        _ => sym,
    }
}

/// The frames that decide a migration: those from `set_task_cpu` (when present) outwards, up
/// to the first interrupt-entry stub (`asm_*`). Frames beyond that stub belong to whatever
/// the interrupt happened to land in (say, a newidle balance interrupted by a timer whose
/// wakeup moved a task) and must not decide the reason.
pub fn deciding_frames<S: AsRef<str>>(frames: &[S]) -> &[S] {
    let start = frames
        .iter()
        .position(|f| base_symbol(f.as_ref()) == "set_task_cpu")
        .unwrap_or(0);
    let rest = &frames[start..];
    let end = rest
        .iter()
        .position(|f| f.as_ref().starts_with("asm_"))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Classifies a stack (innermost first) by the table, looking only at its
/// [`deciding_frames`]. A stack that matches no row is `Fixed(Unknown)`: never a guess.
pub fn classify_frames<S: AsRef<str>>(frames: &[S]) -> StackClass {
    let frames = deciding_frames(frames);
    for row in TABLE {
        if frames
            .iter()
            .any(|f| row.frames.contains(&base_symbol(f.as_ref())))
        {
            return row.class;
        }
    }
    StackClass::Fixed(Reason::Unknown)
}

const SCHED_FIFO: u32 = 1;
const SCHED_RR: u32 = 2;
const SCHED_DEADLINE: u32 = 6;

/// How long a `sched_move_numa`/`sched_swap_numa` stays pending for the stopper to act on.
const NUMA_PENDING_NS: u64 = 1_000_000_000;

/// The state that finishes a classification: pending NUMA moves and the last task each CPU
/// woke. Fed in event order by the source.
#[derive(Default, Debug)]
pub struct Resolver {
    /// (pid, src, dst) -> time of the NUMA move or swap that announced it.
    pending_numa: IdMap<(Pid, u32, u32), u64>,
    /// Per executing CPU (indexed by CPU number, grown on demand): the pid of the last
    /// `sched_waking` it ran. Written for a sixth of all records, so a plain table.
    last_waking: Vec<Option<Pid>>,
}

impl Resolver {
    /// A new resolver with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes a `sched_move_numa` (one move) or `sched_swap_numa` (two moves).
    pub fn note_numa(&mut self, ts: u64, pid: Pid, src: i32, dst_pid: Pid, dst: i32, swap: bool) {
        if src < 0 || dst < 0 {
            return;
        }
        let (src, dst) = (src as u32, dst as u32);
        self.pending_numa.insert((pid, src, dst), ts);
        if swap && dst_pid != 0 {
            self.pending_numa.insert((dst_pid, dst, src), ts);
        }
        if self.pending_numa.len() > 4096 {
            self.pending_numa
                .retain(|_, t| ts.saturating_sub(*t) < NUMA_PENDING_NS);
        }
    }

    /// Notes a `sched_waking` of `pid` executed on `cpu`.
    pub fn note_waking(&mut self, cpu: u32, pid: Pid) {
        if let Some(slot) = crate::cpuset::per_cpu_mut(&mut self.last_waking, cpu) {
            *slot = Some(pid);
        }
    }

    fn take_numa(&mut self, ts: u64, pid: Pid, src: u32, dst: u32) -> bool {
        match self.pending_numa.remove(&(pid, src, dst)) {
            Some(t) => ts.saturating_sub(t) < NUMA_PENDING_NS,
            None => false,
        }
    }

    /// The reason of one migration whose stack was classified as `class`.
    pub fn resolve(
        &mut self,
        class: StackClass,
        ts: u64,
        pid: Pid,
        src: u32,
        dst: u32,
        ctx: &MigrateContext,
    ) -> Reason {
        match class {
            StackClass::Fixed(r) => {
                if r == Reason::NumaBalancing {
                    self.take_numa(ts, pid, src, dst);
                }
                r
            }
            StackClass::PushCpuStop => policy_class(ctx.policy).unwrap_or(Reason::Unknown),
            StackClass::MigrationCpuStop => {
                if ctx.in_execve {
                    Reason::Exec
                } else if self.take_numa(ts, pid, src, dst) {
                    Reason::NumaBalancing
                } else {
                    Reason::Affinity
                }
            }
        }
    }

    /// The reason of a migration with no stack, from its executing context alone.
    /// `exec_cpu` is the CPU that ran the probe. These are inferences, counted apart.
    pub fn resolve_context(
        &mut self,
        ts: u64,
        exec_cpu: u32,
        pid: Pid,
        src: u32,
        dst: u32,
        ctx: &MigrateContext,
    ) -> Reason {
        if ctx.in_sched_softirq {
            // The balancer pulls into the CPU running it, or into a tickless CPU on whose
            // behalf the idle-load-balancer CPU runs.
            return if exec_cpu == dst {
                Reason::PeriodicBalance
            } else {
                Reason::NohzIdleBalance
            };
        }
        if ctx.in_stopper {
            if ctx.in_execve {
                return Reason::Exec;
            }
            if self.take_numa(ts, pid, src, dst) {
                return Reason::NumaBalancing;
            }
            if let Some(r) = policy_class(ctx.policy) {
                return r;
            }
            // The stopper of the busiest CPU pushing a fair task: active balance (an affinity
            // change of a running task also goes through the stopper; that is rarer).
            return Reason::ActiveBalance;
        }
        // The task's own state says so; recordings made before that flag have the waking
        // that the executing CPU ran last.
        if ctx.waking || self.last_waking.get(exec_cpu as usize) == Some(&Some(pid)) {
            return Reason::Wakeup;
        }
        if exec_cpu == dst {
            // A pull in task context on the destination: newidle balance inside __schedule.
            return Reason::NewidleBalance;
        }
        Reason::Unknown
    }
}

fn policy_class(policy: u32) -> Option<Reason> {
    match policy {
        SCHED_FIFO | SCHED_RR => Some(Reason::RtPushPull),
        SCHED_DEADLINE => Some(Reason::DlPushPull),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(frames: &[&str]) -> Reason {
        match classify_frames(frames) {
            StackClass::Fixed(r) => r,
            other => panic!("expected a fixed reason, got {other:?}"),
        }
    }

    #[test]
    fn balancer_rows_in_order() {
        assert_eq!(
            fixed(&[
                "set_task_cpu",
                "sched_balance_rq",
                "sched_balance_newidle",
                "pick_next_task_fair"
            ]),
            Reason::NewidleBalance
        );
        assert_eq!(
            fixed(&[
                "set_task_cpu",
                "sched_balance_rq",
                "sched_balance_domains",
                "_nohz_idle_balance.isra.0",
                "handle_softirqs"
            ]),
            Reason::NohzIdleBalance
        );
        assert_eq!(
            fixed(&[
                "set_task_cpu",
                "sched_balance_rq",
                "sched_balance_domains",
                "handle_softirqs"
            ]),
            Reason::PeriodicBalance
        );
        assert_eq!(
            fixed(&[
                "set_task_cpu",
                "load_balance",
                "rebalance_domains",
                "__do_softirq"
            ]),
            Reason::PeriodicBalance
        );
        assert_eq!(
            fixed(&[
                "set_task_cpu",
                "newidle_balance.constprop.0",
                "pick_next_task_fair"
            ]),
            Reason::NewidleBalance
        );
        assert_eq!(
            fixed(&[
                "set_task_cpu",
                "active_load_balance_cpu_stop",
                "cpu_stopper_thread"
            ]),
            Reason::ActiveBalance
        );
    }

    #[test]
    fn other_rows() {
        assert_eq!(
            fixed(&["set_task_cpu", "try_to_wake_up", "autoremove_wake_function"]),
            Reason::Wakeup
        );
        assert_eq!(
            fixed(&["set_task_cpu", "migrate_swap_stop", "multi_cpu_stop"]),
            Reason::NumaBalancing
        );
        assert_eq!(
            fixed(&["set_task_cpu", "__balance_push_cpu_stop"]),
            Reason::Hotplug
        );
        assert_eq!(
            fixed(&["set_task_cpu", "push_rt_task.part.0"]),
            Reason::RtPushPull
        );
        assert_eq!(fixed(&["set_task_cpu", "pull_dl_task"]), Reason::DlPushPull);
        assert_eq!(
            fixed(&["set_task_cpu", "move_remote_task_to_local_dsq"]),
            Reason::SchedExt
        );
        assert_eq!(
            fixed(&["set_task_cpu", "affine_move_task", "__set_cpus_allowed_ptr"]),
            Reason::Affinity
        );
        assert_eq!(
            fixed(&["set_task_cpu", "sched_ttwu_pending"]),
            Reason::Unknown
        );
        assert_eq!(
            fixed(&["set_task_cpu", "try_steal_cookie"]),
            Reason::Unknown
        );
        assert_eq!(
            classify_frames(&["set_task_cpu", "push_cpu_stop"]),
            StackClass::PushCpuStop
        );
    }

    #[test]
    fn interrupted_context_does_not_decide() {
        // A timer wakeup that interrupted a newidle balance is a wakeup.
        let frames = [
            "bpf_trace_run2",
            "set_task_cpu",
            "try_to_wake_up",
            "hrtimer_wakeup",
            "__hrtimer_run_queues",
            "sysvec_apic_timer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
            "sched_balance_rq",
            "sched_balance_newidle",
        ];
        assert_eq!(fixed(&frames), Reason::Wakeup);
        assert_eq!(deciding_frames(&frames).len(), 5);
        // Softirq balance entered from an interrupt exit keeps its frames.
        let periodic = [
            "set_task_cpu",
            "sched_balance_rq",
            "sched_balance_domains",
            "handle_softirqs",
            "__irq_exit_rcu",
            "sysvec_apic_timer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
            "default_idle",
        ];
        assert_eq!(fixed(&periodic), Reason::PeriodicBalance);
    }

    #[test]
    fn suffixes_stripped() {
        assert_eq!(
            base_symbol("_nohz_idle_balance.isra.0"),
            "_nohz_idle_balance"
        );
        assert_eq!(base_symbol("foo.llvm.12345"), "foo");
        assert_eq!(base_symbol("bar.cold"), "bar");
        assert_eq!(base_symbol("baz"), "baz");
    }

    #[test]
    fn migration_cpu_stop_context() {
        let mut r = Resolver::new();
        let class = classify_frames(&["set_task_cpu", "migration_cpu_stop", "cpu_stopper_thread"]);
        let exec = MigrateContext {
            in_execve: true,
            ..Default::default()
        };
        assert_eq!(r.resolve(class, 10, 5, 0, 1, &exec), Reason::Exec);
        let plain = MigrateContext::default();
        assert_eq!(r.resolve(class, 10, 5, 0, 1, &plain), Reason::Affinity);
        r.note_numa(10, 5, 0, 0, 1, false);
        assert_eq!(r.resolve(class, 20, 5, 0, 1, &plain), Reason::NumaBalancing);
        // Consumed: the next identical move is affinity again.
        assert_eq!(r.resolve(class, 30, 5, 0, 1, &plain), Reason::Affinity);
        // A pending move expires.
        r.note_numa(0, 6, 0, 0, 1, false);
        assert_eq!(
            r.resolve(class, 2 * NUMA_PENDING_NS, 6, 0, 1, &plain),
            Reason::Affinity
        );
    }

    #[test]
    fn push_cpu_stop_policy() {
        let mut r = Resolver::new();
        let rt = MigrateContext {
            policy: SCHED_FIFO,
            ..Default::default()
        };
        let dl = MigrateContext {
            policy: SCHED_DEADLINE,
            ..Default::default()
        };
        assert_eq!(
            r.resolve(StackClass::PushCpuStop, 0, 1, 0, 1, &rt),
            Reason::RtPushPull
        );
        assert_eq!(
            r.resolve(StackClass::PushCpuStop, 0, 1, 0, 1, &dl),
            Reason::DlPushPull
        );
    }

    #[test]
    fn context_rules() {
        let mut r = Resolver::new();
        let softirq = MigrateContext {
            in_sched_softirq: true,
            ..Default::default()
        };
        assert_eq!(
            r.resolve_context(0, 1, 9, 0, 1, &softirq),
            Reason::PeriodicBalance
        );
        assert_eq!(
            r.resolve_context(0, 2, 9, 0, 1, &softirq),
            Reason::NohzIdleBalance
        );
        let stopper = MigrateContext {
            in_stopper: true,
            ..Default::default()
        };
        assert_eq!(
            r.resolve_context(0, 0, 9, 0, 1, &stopper),
            Reason::ActiveBalance
        );
        r.note_waking(3, 9);
        let task = MigrateContext::default();
        assert_eq!(r.resolve_context(0, 3, 9, 0, 1, &task), Reason::Wakeup);
        assert_eq!(
            r.resolve_context(0, 1, 8, 0, 1, &task),
            Reason::NewidleBalance
        );
        assert_eq!(r.resolve_context(0, 2, 8, 0, 1, &task), Reason::Unknown);
        // A task in TASK_WAKING is being placed by its wakeup, with no waking seen (report
        // without a recording does not trace sched_waking), even onto the waker's own CPU.
        let waking = MigrateContext {
            waking: true,
            ..Default::default()
        };
        assert_eq!(r.resolve_context(0, 1, 7, 0, 1, &waking), Reason::Wakeup);
    }
}
