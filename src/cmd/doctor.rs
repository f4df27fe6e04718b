//! `lbscope doctor`: what this machine allows, each problem with what to do about it.

use super::CmdError;
use crate::cli::DoctorArgs;
use crate::topology::Topology;
use serde::Serialize;
use std::path::Path;

/// One line of the check-up.
#[derive(Debug, Serialize)]
pub struct Check {
    /// What was checked.
    pub item: String,
    /// `ok`, `warn` or `fail`.
    pub status: &'static str,
    /// What was found, and what to do when it is not ok.
    pub detail: String,
}

fn check(item: &str, status: &'static str, detail: impl Into<String>) -> Check {
    Check {
        item: item.to_string(),
        status,
        detail: detail.into(),
    }
}

/// The lockdown mode, mounting securityfs first if it is missing.
fn lockdown() -> Option<String> {
    if !Path::new("/sys/kernel/security/lockdown").exists() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "securityfs", "securityfs", "/sys/kernel/security"])
            .stderr(std::process::Stdio::null())
            .status();
    }
    super::version::lockdown()
}

fn mounted(fstype: &str) -> Option<String> {
    let m = std::fs::read_to_string("/proc/mounts").ok()?;
    m.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == fstype).then(|| f[1].to_string())
    })
}

/// Runs every check.
/// `kernel.unprivileged_bpf_disabled`: 0 lets any user load BPF programs, a wide attack
/// surface on a server; lbscope itself never needs it.
fn unprivileged_bpf() -> Check {
    let item = "unprivileged_bpf";
    match std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled") {
        Ok(v) if v.trim() == "0" => check(
            item,
            "warn",
            "enabled: any user may load BPF programs; lbscope does not need this. Disable it: `sysctl kernel.unprivileged_bpf_disabled=2`",
        ),
        Ok(v) => check(item, "ok", format!("disabled ({})", v.trim())),
        Err(_) => check(item, "ok", "unknown (no /proc/sys/kernel/unprivileged_bpf_disabled)"),
    }
}

pub fn checks() -> Vec<Check> {
    let mut v = vec![check(
        "kernel",
        "ok",
        format!(
            "{} ({})",
            super::version::kernel_release(),
            std::env::consts::ARCH
        ),
    )];
    #[cfg(feature = "bpf")]
    let privileged = crate::source::live::has_bpf_caps();
    #[cfg(not(feature = "bpf"))]
    let privileged = false;
    v.push(if privileged {
        check(
            "privileges",
            "ok",
            "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) held",
        )
    } else {
        check(
            "privileges",
            "fail",
            "missing CAP_BPF/CAP_PERFMON: run as root, e.g. `sudo lbscope doctor`",
        )
    });
    #[cfg(feature = "bpf")]
    let btf_path = crate::source::live::btf_path();
    #[cfg(not(feature = "bpf"))]
    let btf_path = "/sys/kernel/btf/vmlinux".to_string();
    let btf_ok = Path::new(&btf_path).exists();
    v.push(if btf_ok {
        check("btf", "ok", btf_path.clone())
    } else {
        check(
            "btf",
            "fail",
            format!("{btf_path} missing: needs a kernel built with CONFIG_DEBUG_INFO_BTF=y"),
        )
    });
    v.push(match lockdown() {
        Some(m) if m == "none" => check("lockdown", "ok", "none: fentry and kprobe hooks may load"),
        Some(m) => check(
            "lockdown",
            "warn",
            format!("{m}: fentry/kprobes are refused; lbscope runs from tracepoints only (migration reasons stay exact, from kernel stacks)"),
        ),
        None => check("lockdown", "ok", "unknown (no securityfs); assuming none"),
    });
    let kallsyms = std::fs::read_to_string("/proc/kallsyms")
        .map(|s| {
            s.lines()
                .next()
                .is_some_and(|l| !l.starts_with("0000000000000000"))
        })
        .unwrap_or(false);
    v.push(if kallsyms {
        check("kallsyms", "ok", "addresses readable: migration stacks are named")
    } else {
        check(
            "kallsyms",
            "warn",
            "/proc/kallsyms shows no addresses (not root, or kernel.kptr_restrict=2): migration reasons fall back to context rules",
        )
    });
    v.push(unprivileged_bpf());
    v.push(match mounted("tracefs") {
        Some(p) => check("tracefs", "ok", format!("mounted at {p} (not needed by lbscope)")),
        None => check(
            "tracefs",
            "ok",
            "not mounted; lbscope does not need it (tp_btf/raw_tp attach without it). perf and bpftrace do: `mount -t tracefs tracefs /sys/kernel/tracing`",
        ),
    });
    #[cfg(feature = "bpf")]
    if privileged && btf_ok {
        probe_bpf(&mut v);
    }
    #[cfg(not(feature = "bpf"))]
    v.push(check(
        "tracepoints",
        "fail",
        "built without the `bpf` feature: rebuild with default features",
    ));
    v.push(match Topology::detect() {
        Ok(t) => {
            let levels: Vec<String> = t
                .levels
                .iter()
                .map(|l| format!("{} ({}, {} domains)", l.name, l.key, l.domains.len()))
                .collect();
            check(
                "topology",
                "ok",
                format!(
                    "{} CPUs, {} NUMA node(s), levels: {} [from {:?}]",
                    t.online.len(),
                    t.numa_nodes.iter().filter(|n| !n.is_empty()).count().max(1),
                    if levels.is_empty() {
                        "none (single CPU)".to_string()
                    } else {
                        levels.join(", ")
                    },
                    t.source
                ),
            )
        }
        Err(e) => check("topology", "fail", e.to_string()),
    });
    v
}

#[cfg(feature = "bpf")]
fn probe_bpf(v: &mut Vec<Check>) {
    use crate::source::attach::HookKind;
    use crate::source::live::{hooks, LiveConfig, LiveSource, ProbeState};
    let (tx, _rx) = std::sync::mpsc::sync_channel(crate::source::QUEUE_BATCHES);
    // What a live run with the default `--balancer-attach auto` gets.
    let mut balancer = Err("the live source did not start".to_string());
    match LiveSource::start(LiveConfig::default(), tx) {
        Ok(mut src) => {
            src.stop_async();
            for (tp, s) in &src.report.tracepoints {
                let required = crate::source::live::REQUIRED.contains(&tp.as_str());
                v.push(match s {
                    ProbeState::TpBtf => check(&format!("tracepoint {tp}"), "ok", "tp_btf"),
                    ProbeState::RawTp => check(&format!("tracepoint {tp}"), "ok", "raw_tp"),
                    ProbeState::Missing => check(
                        &format!("tracepoint {tp}"),
                        if required { "fail" } else { "warn" },
                        "absent in this kernel: the figures it feeds are not shown",
                    ),
                    ProbeState::Failed(e) => check(&format!("tracepoint {tp}"), "fail", e.clone()),
                    ProbeState::NotNeeded => check(&format!("tracepoint {tp}"), "ok", "not needed"),
                });
            }
            balancer = src.report.balancer.clone();
            src.stop();
        }
        Err(e) => v.push(check("tracepoints", "fail", e.to_string())),
    }
    let path = crate::source::live::btf_path();
    match libbpf_rs::btf::Btf::from_path(&path) {
        Ok(btf) => {
            let targets = hooks::Targets::new(&btf);
            for kind in [HookKind::Fentry, HookKind::Kprobe] {
                for (func, state) in hooks::probe(&targets, kind) {
                    let item = format!("hook {}/{func}", kind.name());
                    v.push(match state {
                        hooks::HookState::Loads => check(&item, "ok", "loads"),
                        hooks::HookState::Absent => check(&item, "ok", absent(kind)),
                        hooks::HookState::Refused(e) => check(&item, "warn", e),
                    });
                }
            }
        }
        Err(e) => v.push(check("hooks", "warn", format!("cannot read BTF: {e}"))),
    }
    v.push(match &balancer {
        Ok((kind, funcs)) => check(
            "balancer hooks",
            "ok",
            format!(
                "{} on {} functions (--balancer-attach auto{})",
                kind.name(),
                funcs.len(),
                if *kind == HookKind::Kprobe {
                    ": fentry refused or missing"
                } else {
                    ""
                }
            ),
        ),
        Err(why) => check(
            "balancer hooks",
            "warn",
            format!("none (--balancer-attach auto: {why}); the kernel's own balancer decisions are not recorded (report --validate needs them)"),
        ),
    });
    v.push(check("mode", "ok", mode_line(&balancer)));
}

/// What an absent hook means for `kind`.
#[cfg(feature = "bpf")]
fn absent(kind: crate::source::attach::HookKind) -> &'static str {
    match kind {
        crate::source::attach::HookKind::Fentry => {
            "not in this kernel's BTF (other name or inlined)"
        }
        crate::source::attach::HookKind::Kprobe => {
            "no such symbol in /proc/kallsyms (other name or inlined)"
        }
    }
}

/// The `mode` line: what a live run traces with, and why.
pub fn mode_line<E: std::fmt::Display>(
    balancer: &Result<(crate::source::attach::HookKind, Vec<String>), E>,
) -> String {
    match balancer {
        Ok((kind, _)) => format!("tracepoints with balancer hooks by {}", kind.name()),
        Err(why) => format!("tracepoints only ({why})"),
    }
}

/// Runs `lbscope doctor`; fails (exit 1) when a check failed.
pub fn run(args: &DoctorArgs) -> Result<bool, CmdError> {
    let v = checks();
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    if args.json {
        serde_json::to_writer(&mut out, &v).map_err(std::io::Error::other)?;
        writeln!(out)?;
    } else {
        for c in &v {
            writeln!(out, "{:<5} {:<36} {}", c.status, c.item, c.detail)?;
        }
    }
    Ok(v.iter().all(|c| c.status != "fail"))
}
