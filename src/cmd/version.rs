//! The `--version` text: the tool's version and what this machine's kernel offers, read
//! from files any user may read (no root, no BPF syscall).

use std::path::Path;

pub use crate::source::{kernel_release, read_trim};

/// The lockdown mode in force ("none", "integrity", "confidentiality"), if securityfs
/// says.
pub fn lockdown() -> Option<String> {
    let s = read_trim("/sys/kernel/security/lockdown")?;
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_string())
}

/// The long version: version, kernel release, BTF, and whether lockdown refuses the
/// balancer's fentry hooks.
pub fn long_version() -> String {
    let kernel = kernel_release();
    let btf = if Path::new("/sys/kernel/btf/vmlinux").exists() {
        "present"
    } else {
        "missing (needs CONFIG_DEBUG_INFO_BTF=y)"
    };
    let fentry = match lockdown() {
        Some(m) if m == "confidentiality" => {
            "refused (lockdown=confidentiality): tracepoints only".to_string()
        }
        Some(m) => format!("not refused by lockdown ({m})"),
        None => "unknown (no securityfs): `sudo lbscope doctor` checks".to_string(),
    };
    let bpf = if cfg!(feature = "bpf") {
        "built in"
    } else {
        "not built in"
    };
    format!(
        "{}\nkernel:      {kernel}\nBTF:         {btf}\nfentry:      {fentry}\nBPF support: {bpf}",
        env!("CARGO_PKG_VERSION")
    )
}
