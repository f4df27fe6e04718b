//! Probing the balancer's fentry hooks: which of the balancer functions (new and old names)
//! the kernel has in its BTF, and whether an fentry program on each one loads. Lockdown
//! (confidentiality) refuses them all; the QEMU lab kernels accept them.

use super::skel::balancer::{BalancerSkel, BalancerSkelBuilder};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use serde::{Deserialize, Serialize};
use std::mem::MaybeUninit;

/// The hooked functions, in the order of bpf/balancer.bpf.c's counters.
pub const HOOKS: &[(&str, &str)] = &[
    ("sched_balance_rq", "the balancer proper (6.10+)"),
    ("load_balance", "the balancer proper (before 6.10)"),
    (
        "sched_balance_find_src_group",
        "busiest-group search (6.10+)",
    ),
    ("find_busiest_group", "busiest-group search (before 6.10)"),
    ("sched_balance_newidle", "newidle balance (6.10+)"),
    ("newidle_balance", "newidle balance (before 6.10)"),
    ("detach_task", "the task a balance moves"),
    ("active_load_balance_cpu_stop", "active balance"),
];

/// Outcome of one hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookState {
    /// An fentry program on it loaded.
    Loads,
    /// The kernel has no such function in its BTF (renamed, inlined or absent).
    Absent,
    /// It exists but the kernel refused the program.
    Refused(String),
}

/// Probes every hook by loading its program alone.
pub fn probe(btf: &libbpf_rs::btf::Btf<'_>) -> Vec<(String, HookState)> {
    HOOKS
        .iter()
        .map(|(func, _)| {
            let state = if btf
                .type_by_name::<libbpf_rs::btf::types::Func<'_>>(func)
                .is_none()
            {
                HookState::Absent
            } else {
                match load_one(func) {
                    Ok(()) => HookState::Loads,
                    Err(e) => HookState::Refused(e),
                }
            };
            (func.to_string(), state)
        })
        .collect()
}

fn load_one(func: &str) -> Result<(), String> {
    let mut obj = MaybeUninit::uninit();
    let mut open = BalancerSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| e.to_string())?;
    let want = format!("hook_{func}");
    for mut prog in open.open_object_mut().progs_mut() {
        let on = prog.name().to_str() == Some(want.as_str());
        prog.set_autoload(on);
    }
    open.load().map(|_| ()).map_err(|e| {
        let msg = e.to_string();
        if msg.contains("Operation not permitted") || msg.contains("EPERM") {
            "refused (EPERM): fentry is blocked here, typically by lockdown=confidentiality"
                .to_string()
        } else {
            msg
        }
    })
}

/// The balancer skeleton, as the live source holds it.
pub type BalancerSkelRef<'o> = BalancerSkel<'o>;

/// The programs that stream `struct lb_env` (bpf/balancer.bpf.c `lb_*`): (program, function).
pub const STREAMS: &[(&str, &str)] = &[
    ("lb_search_new", "sched_balance_find_src_group"),
    ("lb_search_new_entry", "sched_balance_find_src_group"),
    ("lb_search_old", "find_busiest_group"),
    ("lb_search_old_entry", "find_busiest_group"),
    ("lb_detach", "detach_task"),
    ("lb_call_new_entry", "sched_balance_rq"),
    ("lb_call_new", "sched_balance_rq"),
    ("lb_call_old_entry", "load_balance"),
    ("lb_call_old", "load_balance"),
    ("lb_call_failed", "need_active_balance"),
];

/// The programs that tell where a pass runs (a record's origin): the balancer softirq under
/// both names (the nohz kick it serves) and the active-balance stopper, entry and exit.
pub const ORIGINS: &[(&str, &str)] = &[
    ("lb_softirq_new", "sched_balance_softirq"),
    ("lb_softirq_new_exit", "sched_balance_softirq"),
    ("lb_softirq_old", "run_rebalance_domains"),
    ("lb_softirq_old_exit", "run_rebalance_domains"),
    ("lb_active", "active_load_balance_cpu_stop"),
    ("lb_active_exit", "active_load_balance_cpu_stop"),
];

/// Loads and attaches the streaming programs whose functions the kernel's BTF has; returns
/// the skeleton (whose `balance_events` ring buffer the live source polls) and the functions
/// hooked, or the reason nothing loaded (lockdown, no BTF for any of them).
pub fn load_streams<'o>(
    obj: &'o mut MaybeUninit<libbpf_rs::OpenObject>,
    btf: &libbpf_rs::btf::Btf<'_>,
) -> Result<(BalancerSkel<'o>, Vec<String>), String> {
    let has = |f: &str| {
        btf.type_by_name::<libbpf_rs::btf::types::Func<'_>>(f)
            .is_some()
    };
    let mut present: Vec<&str> = STREAMS
        .iter()
        .filter(|(_, f)| has(f))
        .map(|(p, _)| *p)
        .collect();
    if present.is_empty() {
        return Err("no balancer function to hook in this kernel's BTF".into());
    }
    // Origins are told only when both the softirq (either name) and the stopper are there.
    let softirq = has("sched_balance_softirq") || has("run_rebalance_domains");
    let origin_on = softirq && has("active_load_balance_cpu_stop");
    if origin_on {
        present.extend(ORIGINS.iter().filter(|(_, f)| has(f)).map(|(p, _)| *p));
    }
    let mut open = BalancerSkelBuilder::default()
        .open(obj)
        .map_err(|e| e.to_string())?;
    for mut prog in open.open_object_mut().progs_mut() {
        let on = prog.name().to_str().is_some_and(|n| present.contains(&n));
        prog.set_autoload(on);
    }
    let mut skel = open.load().map_err(|e| e.to_string())?;
    if origin_on {
        // Records made while the programs attach one by one would lack their origin.
        if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
            bss.origin_wanted = 1;
        }
    }
    use libbpf_rs::skel::Skel;
    skel.attach().map_err(|e| e.to_string())?;
    if origin_on {
        if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
            bss.origin_on = 1;
        }
    }
    let mut funcs: Vec<String> = STREAMS
        .iter()
        .chain(ORIGINS)
        .filter(|(p, _)| present.contains(p))
        .map(|(_, f)| f.to_string())
        .collect();
    funcs.dedup();
    Ok((skel, funcs))
}
