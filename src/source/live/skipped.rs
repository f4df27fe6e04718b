//! Runs of lbscope's programs the kernel skipped: a BPF program is not run when it would
//! recurse on its CPU (a trampoline program whose own run was interrupted by the same hook,
//! a kprobe or tracepoint program while another such program runs there), and the kernel
//! counts each skip in the program's `recursion_misses` (bpf_prog_info, Linux 5.12; kprobes
//! from 6.7). A skipped run is an event lbscope never saw: the live run ends with their count
//! per program, so that every exact figure says what it is short of.

use libbpf_rs::query::ProgInfoIter;
use libbpf_rs::{Object, Program};
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
