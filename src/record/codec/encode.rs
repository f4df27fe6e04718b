//! Encoding one event into a chunk's raw payload: a kind tag, the timestamp as a zigzag
//! delta from the previous event's, the CPU, then the kind's fields (codes from `super`).

use super::*;
use crate::foldset::dense;

/// Appends `e` to a chunk's raw payload; `prev_ts` is the previous event's timestamp in the
/// chunk (the chunk's first timestamp for its first event).
pub(in crate::record) fn encode_event(out: &mut Vec<u8>, prev_ts: u64, e: &Event) {
    let tag = match &e.kind {
        EventKind::Switch { .. } => K_SWITCH,
        EventKind::Waking { .. } => K_WAKING,
        EventKind::Wakeup { .. } => K_WAKEUP,
        EventKind::WakeupNew { .. } => K_WAKEUP_NEW,
        EventKind::Migrate(_) => K_MIGRATE,
        EventKind::Stack(_) => K_STACK,
        EventKind::NrRunning {
            util_est,
            cfs_h_nr_running,
            ..
        } if util_est.is_none() && cfs_h_nr_running.is_none() => K_NR_RUNNING,
        EventKind::NrRunning { .. } => K_NR_RUNNING_CFS,
        EventKind::Pelt(p) if p.at_search.is_some() => K_PELT_SEARCH,
        EventKind::Pelt(p) if p.util_est.is_none() => K_PELT,
        EventKind::Pelt(_) => K_PELT_EST,
        EventKind::Capacity { .. } => K_CAPACITY,
        EventKind::BalanceSoftirq { .. } => K_BALANCE_SOFTIRQ,
        EventKind::Numa(_) => K_NUMA,
        EventKind::Task(_) => K_TASK,
        EventKind::Cgroup(_) => K_CGROUP,
        EventKind::Fold(_) => K_FOLD,
        EventKind::Affinity { .. } => K_AFFINITY,
        EventKind::Exit { .. } => K_EXIT,
        EventKind::Lost { .. } => K_LOST,
        EventKind::Clock => K_CLOCK,
        EventKind::Balance(_) => K_BALANCE,
        EventKind::BalanceCall(_) => K_BALANCE_CALL,
        EventKind::Schedstat(_) => K_SCHEDSTAT,
        EventKind::RtCall(_) => K_RT_CALL,
    };
    out.push(tag);
    // Wrapping difference reinterpreted as signed: small either way round, exact for any pair.
    put_varint(out, zigzag(e.ts_ns.wrapping_sub(prev_ts) as i64));
    put_varint(out, u64::from(e.cpu));
    let v = |out: &mut Vec<u8>, x: u32| put_varint(out, u64::from(x));
    match &e.kind {
        EventKind::Switch {
            prev_pid,
            prev_state,
            next_pid,
        } => {
            v(out, *prev_pid);
            v(out, *prev_state);
            v(out, *next_pid);
        }
        EventKind::Waking { pid, prev_cpu } => {
            v(out, *pid);
            v(out, *prev_cpu);
        }
        EventKind::Wakeup { pid, target_cpu } => {
            v(out, *pid);
            v(out, *target_cpu);
        }
        EventKind::WakeupNew {
            pid,
            tgid,
            target_cpu,
        } => {
            v(out, *pid);
            v(out, *tgid);
            v(out, *target_cpu);
        }
        EventKind::Migrate(mi) => {
            let crate::event::MigrateInfo {
                pid,
                src_cpu,
                dst_cpu,
                reason,
                source,
                stack_id,
                ctx,
            } = &**mi;
            v(out, *pid);
            v(out, *src_cpu);
            v(out, *dst_cpu);
            out.push(reason_code(*reason));
            out.push(match source {
                ReasonSource::Stack => 0,
                ReasonSource::Context => 1,
                ReasonSource::TaskState => 2,
            });
            put_varint(out, stack_id.map_or(0, |id| u64::from(id) + 1));
            out.push(ctx_flags(ctx));
            v(out, ctx.policy);
        }
        EventKind::Stack(si) => {
            let crate::event::StackInfo { id, reason, frames } = &**si;
            v(out, *id);
            out.push(reason_code(*reason));
            put_varint(out, frames.len() as u64);
            for f in frames {
                put_str(out, f);
            }
        }
        EventKind::NrRunning {
            rq_cpu,
            nr_running,
            util_est,
            cfs_h_nr_running,
        } => {
            v(out, u32::from(*rq_cpu));
            v(out, *nr_running);
            let (util_est, cfs_h_nr_running) = (util_est.get(), cfs_h_nr_running.get());
            if util_est.is_some() || cfs_h_nr_running.is_some() {
                out.push(u8::from(util_est.is_some()) | u8::from(cfs_h_nr_running.is_some()) << 1);
                if let Some(e) = util_est {
                    v(out, e);
                }
                if let Some(h) = cfs_h_nr_running {
                    v(out, h);
                }
            }
        }
        EventKind::Pelt(pi) => {
            let crate::event::PeltInfo {
                rq_cpu,
                load_avg,
                runnable_avg,
                util_avg,
                util_est,
                at_search,
            } = &**pi;
            v(out, *rq_cpu);
            put_varint(out, *load_avg);
            put_varint(out, *runnable_avg);
            put_varint(out, *util_avg);
            // A search's record always has util_est (0 when it has none), then its tasks.
            match (util_est, at_search) {
                (Some(e), _) => put_varint(out, *e),
                (None, Some(_)) => put_varint(out, 0),
                (None, None) => {}
            }
            if let Some(s) = at_search {
                v(out, s.nr_running);
                v(out, s.cfs_h_nr_running);
                out.push(u8::from(s.idle));
            }
        }
        EventKind::Capacity { rq_cpu, capacity } => {
            v(out, *rq_cpu);
            put_varint(out, *capacity);
        }
        EventKind::BalanceSoftirq { entry, idle } => {
            out.push(u8::from(*entry) | u8::from(*idle) << 1);
        }
        EventKind::Numa(ni) => {
            let crate::event::NumaInfo {
                op,
                pid,
                src_cpu,
                dst_pid,
                dst_cpu,
            } = &**ni;
            out.push(numa_code(*op));
            v(out, *pid);
            put_varint(out, zigzag(i64::from(*src_cpu)));
            v(out, *dst_pid);
            put_varint(out, zigzag(i64::from(*dst_cpu)));
        }
        EventKind::Task(ti) => {
            let crate::event::TaskInfo {
                pid,
                tgid,
                comm,
                exec,
            } = &**ti;
            v(out, *pid);
            v(out, *tgid);
            put_str(out, comm);
            out.push(u8::from(*exec));
        }
        EventKind::Cgroup(ci) => {
            let crate::event::CgroupInfo { pid, id, path } = &**ci;
            v(out, *pid);
            put_varint(out, *id);
            put_str(out, path.as_deref().unwrap_or(""));
        }
        EventKind::Affinity { pid, cpus } => {
            v(out, *pid);
            let words = cpus.words();
            put_varint(out, words.len() as u64);
            for w in words {
                put_varint(out, w);
            }
        }
        EventKind::Exit { pid, tgid } => {
            v(out, *pid);
            v(out, *tgid);
        }
        EventKind::Lost { count } => put_varint(out, *count),
        EventKind::Clock => {}
        EventKind::Balance(b) => {
            v(out, b.level);
            v(out, b.sd_weight);
            out.push(b.idle as u8);
            out.push(b.migration_type as u8);
            put_varint(out, b.imbalance);
            let origin = origin_code(b.origin);
            let timed = u8::from(b.search_ns.is_some()) << 4;
            out.push(u8::from(b.balanced) | u8::from(b.redo) << 1 | origin << 2 | timed);
            v(out, b.dst_cpu);
            v(out, b.src_cpu);
            put_varint(out, b.pid.map_or(0, |p| u64::from(p) + 1));
            if let Some(ns) = b.search_ns {
                v(out, ns);
            }
        }
        EventKind::BalanceCall(b) => {
            v(out, b.level);
            v(out, b.sd_weight);
            out.push(b.idle as u8);
            v(out, b.this_cpu);
            v(out, b.moved);
            out.push(u8::from(b.failed) | origin_code(b.origin) << 1);
            v(out, b.len_ns);
        }
        EventKind::RtCall(r) => {
            out.push(r.func as u8);
            v(out, r.rq_cpu);
            v(out, r.len_ns);
        }
        EventKind::Schedstat(s) => {
            out.push(u8::from(s.end));
            put_varint(out, s.read_ns);
            put_str(out, &s.text);
        }
        EventKind::Fold(f) => {
            for part in [&f.by_cpu, &f.by_tgid] {
                put_varint(out, part.len() as u64);
                for (id, h) in part.iter() {
                    v(out, id);
                    put_folded(out, h);
                }
            }
        }
    }
}

fn put_folded(out: &mut Vec<u8>, h: FoldedRef<'_>) {
    put_varint(out, h.count);
    put_varint(out, h.min_ns);
    put_varint(out, h.max_ns);
    // Dense, zeros included up to the last counter that holds samples.
    for counts in [dense(h.log2), dense(h.fine)] {
        put_varint(out, counts.len() as u64);
        for c in counts {
            put_varint(out, c);
        }
    }
}
