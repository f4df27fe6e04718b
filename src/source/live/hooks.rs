//! Loading the balancer hooks (bpf/balancer.bpf.c) as fentry/fexit or kprobe/kretprobe
//! programs: which of the balancer functions (new and old names) the kernel has (in its BTF
//! for fentry, as a kallsyms text symbol for kprobes), whether a program on each one loads
//! (`doctor`), and the streaming set the live source polls (the RT class's push and pull
//! functions among them, where the kernel has them). Lockdown (confidentiality)
//! refuses both kinds; the QEMU lab kernels accept both.

use super::skel::balancer::{BalancerSkel, BalancerSkelBuilder};
use crate::source::attach::HookKind;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
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
    ("push_rt_task", "RT push (optional: RT push/pull calls)"),
    ("pull_rt_task", "RT pull (optional: RT push/pull calls)"),
    (
        "rto_push_irq_work_func",
        "RT push at another CPU's request (optional)",
    ),
];

/// Outcome of one hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookState {
    /// A program of the kind on it loaded (and, for a kprobe, attached).
    Loads,
    /// The kernel has no such function (renamed, inlined or absent): not in its BTF for
    /// fentry, not a kallsyms text symbol for kprobes.
    Absent,
    /// It exists but the kernel refused the program.
    Refused(String),
}

/// What the kernel has of the balancer's functions: its BTF (fentry targets) and the
/// kallsyms text symbols among the hooked functions (kprobe targets).
pub struct Targets<'b> {
    btf: &'b libbpf_rs::btf::Btf<'b>,
    symbols: HashSet<String>,
}

impl<'b> Targets<'b> {
    /// From the kernel's BTF and /proc/kallsyms (names are readable without addresses).
    pub fn new(btf: &'b libbpf_rs::btf::Btf<'b>) -> Targets<'b> {
        let wanted: HashSet<&str> = HOOKS
            .iter()
            .map(|(f, _)| *f)
            .chain(
                STREAMS
                    .iter()
                    .chain(ORIGINS)
                    .chain(RT_CALLS)
                    .map(|(_, f)| *f),
            )
            .collect();
        let symbols = std::fs::read_to_string("/proc/kallsyms")
            .map(|s| text_symbols(&s, &wanted))
            .unwrap_or_default();
        Targets { btf, symbols }
    }

    /// Whether a program of `kind` can be put on `func`.
    pub fn has(&self, kind: HookKind, func: &str) -> bool {
        match kind {
            HookKind::Fentry => self
                .btf
                .type_by_name::<libbpf_rs::btf::types::Func<'_>>(func)
                .is_some(),
            HookKind::Kprobe => self.symbols.contains(func),
        }
    }
}

/// The text symbols of the kernel proper (no module) among `wanted`, from kallsyms text:
/// a function inlined everywhere has none, and one the compiler cloned has only suffixed
/// names (`.isra.0`, `.constprop.0`), which a kprobe by the plain name cannot take.
pub fn text_symbols(kallsyms: &str, wanted: &HashSet<&str>) -> HashSet<String> {
    kallsyms
        .lines()
        .filter_map(|l| {
            let mut it = l.split_ascii_whitespace();
            let (_, ty, name) = (it.next()?, it.next()?, it.next()?);
            (matches!(ty, "t" | "T") && it.next().is_none() && wanted.contains(name))
                .then(|| name.to_string())
        })
        .collect()
}

/// Probes every hook of `kind` by loading its counting program alone.
pub fn probe(targets: &Targets<'_>, kind: HookKind) -> Vec<(String, HookState)> {
    HOOKS
        .iter()
        .map(|(func, _)| {
            let state = if !targets.has(kind, func) {
                HookState::Absent
            } else {
                match load_one(func, kind) {
                    Ok(()) => HookState::Loads,
                    Err(e) => HookState::Refused(e),
                }
            };
            (func.to_string(), state)
        })
        .collect()
}

/// The kernel's refusal of a `kind` program, in words that say what refused it.
pub fn refusal(kind: HookKind, e: &libbpf_rs::Error) -> String {
    let msg = e.to_string();
    let perm = msg.contains("Operation not permitted") || msg.contains("EPERM");
    let lockdown = match lockdown_mode() {
        Some(m) if m != "none" => format!("lockdown={m}"),
        Some(_) => "lockdown is none, so another security policy".to_string(),
        None => "typically lockdown".to_string(),
    };
    match kind {
        _ if perm => format!(
            "refused (EPERM): the kernel does not allow {} programs here ({lockdown})",
            kind.name()
        ),
        _ => format!("refused: {msg}"),
    }
}

/// Why no program of `kind` can run on this kernel at all, before trying one.
fn kind_unavailable(kind: HookKind) -> Option<String> {
    match kind {
        HookKind::Fentry => None,
        HookKind::Kprobe => kprobes_unavailable(),
    }
}

/// The kernel's lockdown mode (`none`, `integrity`, `confidentiality`), when securityfs says.
pub fn lockdown_mode() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/security/lockdown").ok()?;
    let start = s.find('[')? + 1;
    let end = start + s[start..].find(']')?;
    Some(s[start..end].to_string())
}

/// Why this kernel cannot take kprobes at all, if it cannot: built without CONFIG_KPROBES it
/// has neither the kprobe event source nor tracefs's kprobe_events.
pub fn kprobes_unavailable() -> Option<String> {
    let pmu = std::path::Path::new("/sys/bus/event_source/devices/kprobe/type").exists();
    let legacy = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|d| std::path::Path::new(&format!("{d}/kprobe_events")).exists());
    (!pmu && !legacy).then(|| {
        "this kernel has no kprobes (built without CONFIG_KPROBES: no kprobe event source in \
         /sys/bus/event_source/devices)"
            .to_string()
    })
}

fn load_one(func: &str, kind: HookKind) -> Result<(), String> {
    if let Some(why) = kind_unavailable(kind) {
        return Err(why);
    }
    let mut obj = MaybeUninit::uninit();
    let mut open = BalancerSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| e.to_string())?;
    let want = match kind {
        HookKind::Fentry => format!("hook_{func}"),
        HookKind::Kprobe => format!("khook_{func}"),
    };
    for mut prog in open.open_object_mut().progs_mut() {
        let on = prog.name().to_str() == Some(want.as_str());
        prog.set_autoload(on);
    }
    let mut skel = open.load().map_err(|e| refusal(kind, &e))?;
    if kind == HookKind::Kprobe {
        // A kprobe program loads where the kernel then refuses the probe itself.
        skel.attach().map_err(|e| refusal(kind, &e))?;
    }
    Ok(())
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

/// The programs on the RT class's push and pull code (one record per call, entry to exit):
/// each function's pair is loaded where the kernel has the function; none is required.
pub const RT_CALLS: &[(&str, &str)] = &[
    ("rt_push_entry", "push_rt_task"),
    ("rt_push_exit", "push_rt_task"),
    ("rt_pull_entry", "pull_rt_task"),
    ("rt_pull_exit", "pull_rt_task"),
    ("rt_irq_work_entry", "rto_push_irq_work_func"),
    ("rt_irq_work_exit", "rto_push_irq_work_func"),
];

/// The program of `kind` for an `lb_*` (fentry) program: the kprobe set names them `kp_*`.
pub fn program(kind: HookKind, fentry_name: &str) -> String {
    match kind {
        HookKind::Fentry => fentry_name.to_string(),
        HookKind::Kprobe => format!("kp_{}", fentry_name.trim_start_matches("lb_")),
    }
}

/// Loads and attaches the streaming programs of `kind` on the functions the kernel has;
/// returns the skeleton (whose `balance_events` ring buffer the live source polls) and the
/// functions hooked, or the reason nothing runs (refused, no balancer function to hook).
pub fn load_streams<'o>(
    obj: &'o mut MaybeUninit<libbpf_rs::OpenObject>,
    targets: &Targets<'_>,
    kind: HookKind,
) -> Result<(BalancerSkel<'o>, Vec<String>), String> {
    if let Some(why) = kind_unavailable(kind) {
        return Err(why);
    }
    let has = |f: &str| targets.has(kind, f);
    let where_ = match kind {
        HookKind::Fentry => "this kernel's BTF",
        HookKind::Kprobe => "/proc/kallsyms (inlined or renamed)",
    };
    let mut present: Vec<&str> = STREAMS
        .iter()
        .filter(|(_, f)| has(f))
        .map(|(p, _)| *p)
        .collect();
    if present.is_empty() {
        return Err(format!("no balancer function to hook in {where_}"));
    }
    // Origins are told only when both the softirq (either name) and the stopper are there.
    let softirq = has("sched_balance_softirq") || has("run_rebalance_domains");
    let origin_on = softirq && has("active_load_balance_cpu_stop");
    if origin_on {
        present.extend(ORIGINS.iter().filter(|(_, f)| has(f)).map(|(p, _)| *p));
    }
    present.extend(RT_CALLS.iter().filter(|(_, f)| has(f)).map(|(p, _)| *p));
    let progs: Vec<String> = present.iter().map(|p| program(kind, p)).collect();
    let mut open = BalancerSkelBuilder::default()
        .open(obj)
        .map_err(|e| e.to_string())?;
    for mut prog in open.open_object_mut().progs_mut() {
        let on = prog
            .name()
            .to_str()
            .is_some_and(|n| progs.iter().any(|p| p == n));
        prog.set_autoload(on);
    }
    let mut skel = open.load().map_err(|e| refusal(kind, &e))?;
    if origin_on {
        // Records made while the programs attach one by one would lack their origin.
        if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
            bss.origin_wanted = 1;
        }
    }
    skel.attach().map_err(|e| refusal(kind, &e))?;
    if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
        bss.attached = 1;
        if origin_on {
            bss.origin_on = 1;
        }
    }
    let mut funcs: Vec<String> = STREAMS
        .iter()
        .chain(ORIGINS)
        .chain(RT_CALLS)
        .filter(|(p, _)| present.contains(p))
        .map(|(_, f)| f.to_string())
        .collect();
    funcs.dedup();
    Ok((skel, funcs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kprobe_targets_are_plain_text_symbols_of_the_kernel_proper() {
        let kallsyms = "\
ffffffff813b68d0 t detach_task
ffffffff813c6780 t sched_balance_rq
ffffffff813c7570 t load_balance.isra.0
ffffffff813c84b0 d sched_balance_softirq
ffffffffc0000000 t find_busiest_group\t[some_module]
0000000000000000 t active_load_balance_cpu_stop
";
        let wanted: HashSet<&str> = HOOKS.iter().map(|(f, _)| *f).collect();
        let got = text_symbols(kallsyms, &wanted);
        let mut got: Vec<&str> = got.iter().map(String::as_str).collect();
        got.sort_unstable();
        // A clone's suffixed name, data symbols and modules' symbols are no kprobe targets;
        // a name without its address (kptr_restrict) still is.
        assert_eq!(
            got,
            [
                "active_load_balance_cpu_stop",
                "detach_task",
                "sched_balance_rq"
            ]
        );
    }

    #[test]
    fn every_fentry_program_has_a_kprobe_twin_in_the_object() {
        // Opening parses the object: no privileges needed.
        let mut obj = MaybeUninit::uninit();
        let open = BalancerSkelBuilder::default().open(&mut obj).unwrap();
        let names: HashSet<String> = open
            .open_object()
            .progs()
            .filter_map(|p| p.name().to_str().map(str::to_string))
            .collect();
        for (p, _) in STREAMS.iter().chain(ORIGINS).chain(RT_CALLS) {
            for kind in [HookKind::Fentry, HookKind::Kprobe] {
                let name = program(kind, p);
                assert!(
                    names.contains(&name),
                    "{name} missing from bpf/balancer.bpf.c"
                );
            }
        }
        for (f, _) in HOOKS {
            assert!(names.contains(&format!("hook_{f}")), "hook_{f}");
            assert!(names.contains(&format!("khook_{f}")), "khook_{f}");
        }
    }
}
