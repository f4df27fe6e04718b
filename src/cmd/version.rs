//! The `--version` text: the tool's version and what this machine's kernel offers, read
//! from files any user may read (no root, no BPF syscall).

use std::path::Path;

/// A small text file's content without surrounding white space, if it can be read.
pub fn read_trim(p: &str) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The running kernel's release (`uname -r`), "unknown" when /proc does not say.
pub fn kernel_release() -> String {
    read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

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
