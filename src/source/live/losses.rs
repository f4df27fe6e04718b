//! What a live run lost, counted so that every figure says what it is short of: records the
//! ring buffers refused (per CPU, as [`EventKind::Lost`] events), what the balancer hooks
//! could not send, and runs of lbscope's programs the kernel skipped.
//!
//! Skipped runs: the kernel does not run a BPF program that would recurse on its CPU (a
//! trampoline program whose own run was interrupted by the same hook, a kprobe or tracepoint
//! program while another such program runs there), and counts each skip in the program's
//! `recursion_misses` (bpf_prog_info, Linux 5.12; kprobes from 6.7). A skipped run is an
//! event lbscope never saw: the live run ends with their count per program.

use super::hooks;
use crate::event::{Event, EventKind};
use libbpf_rs::query::ProgInfoIter;
use libbpf_rs::{MapCore, MapFlags, Object, Program};
use std::collections::HashMap;
use std::os::fd::AsFd;

/// Program ids of the loaded programs of `objects`, with their names.
pub fn loaded(objects: &[&Object]) -> HashMap<u32, String> {
    let mut ids = HashMap::new();
    for o in objects {
        for p in o.progs() {
            if !p.autoload() {
                continue;
            }
            if let Ok(id) = Program::id_from_fd(p.as_fd()) {
                ids.insert(id, p.name().to_string_lossy().into_owned());
            }
        }
    }
    ids
}

/// The kernel's skip counts of the programs `ids` names, non-zero only, by program name.
pub fn counts(ids: &HashMap<u32, String>) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = ProgInfoIter::default()
        .filter(|i| i.recursion_misses > 0)
        .filter_map(|i| Some((ids.get(&i.id)?.clone(), i.recursion_misses)))
        .collect();
    out.sort();
    out
}

/// The warning for `counts`, or `None` when the kernel skipped nothing.
pub fn warning(counts: &[(String, u64)]) -> Option<String> {
    let total: u64 = counts.iter().map(|c| c.1).sum();
    (total > 0).then(|| {
        let each: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
        format!(
            "the kernel skipped {total} runs of lbscope's programs (recursion on their CPU; \
             those events are missing): {}",
            each.join(", ")
        )
    })
}

/// What the balancer hooks could not send: records the full ring buffer refused, and (kprobe
/// mode) search exits without their entry's frame (a kprobe program skipped while another
/// BPF program ran on the CPU). `None` when nothing was lost.
pub fn balancer_losses(b: &hooks::BalancerSkelRef<'_>) -> Option<String> {
    let bss = b.maps.bss_data.as_deref()?;
    let (lost, unpaired) = (bss.lost, bss.unpaired);
    (lost > 0 || unpaired > 0).then(|| {
        format!(
            "balancer hooks: {lost} records lost (ring buffer full), {unpaired} kprobe search \
             exits or entries without their pair (not sent): --validate judges the rest"
        )
    })
}

/// Appends a `Lost` event for every CPU whose drop counter grew since the last call.
pub fn lost_events(map: &libbpf_rs::Map<'_>, seen: &mut Vec<u64>, now: u64, out: &mut Vec<Event>) {
    let Ok(Some(per_cpu)) = map.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) else {
        return;
    };
    if seen.len() < per_cpu.len() {
        seen.resize(per_cpu.len(), 0);
    }
    for (cpu, v) in per_cpu.iter().enumerate() {
        let n = v
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_ne_bytes)
            .unwrap_or(0);
        if n > seen[cpu] {
            out.push(Event {
                ts_ns: now,
                cpu: cpu as u32,
                kind: EventKind::Lost {
                    count: n - seen[cpu],
                },
            });
            seen[cpu] = n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::warning;

    #[test]
    fn the_warning_names_each_program_and_the_total() {
        assert_eq!(warning(&[]), None);
        let w = warning(&[("fentry_lb".into(), 2), ("kp_call".into(), 3)]).unwrap();
        assert!(w.starts_with("the kernel skipped 5 runs"), "{w}");
        assert!(w.ends_with("fentry_lb 2, kp_call 3"), "{w}");
    }
}
