//! What a source traced with, as a typed value: each probe and how it attached (the balancer
//! hooks by fentry or kprobe), whether kernel stacks can be named, why the balancer hooks did
//! not load. Recordings keep it as
//! (name, kind) string pairs in their header; this is the one place that writes and reads
//! those strings.

/// How one probe attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attach {
    /// A tracepoint as tp_btf.
    TpBtf,
    /// A tracepoint as raw_tp.
    RawTp,
    /// A balancer hook by fentry.
    Fentry,
    /// A balancer hook by kprobe.
    Kprobe,
    /// The kernel has no such probe point.
    Missing,
    /// It exists but did not load or attach.
    Failed(String),
    /// Not loaded: nothing in the run reads its records.
    NotNeeded,
}

impl Attach {
    /// The kind as a recording header spells it.
    pub fn header_kind(&self) -> String {
        match self {
            Attach::TpBtf => "tp_btf".into(),
            Attach::RawTp => "raw_tp".into(),
            Attach::Fentry => "fentry".into(),
            Attach::Kprobe => "kprobe".into(),
            Attach::Missing => "missing".into(),
            Attach::Failed(e) => format!("failed: {e}"),
            Attach::NotNeeded => "not needed".into(),
        }
    }

    /// A header's kind string (unknown kinds read as failures, with the string).
    pub fn parse(kind: &str) -> Attach {
        match kind {
            "tp_btf" => Attach::TpBtf,
            "raw_tp" => Attach::RawTp,
            // "loads": how recordings of earlier versions named an attached balancer hook.
            "fentry" | "loads" => Attach::Fentry,
            "kprobe" => Attach::Kprobe,
            "missing" => Attach::Missing,
            "not needed" => Attach::NotNeeded,
            k => Attach::Failed(k.strip_prefix("failed: ").unwrap_or(k).to_string()),
        }
    }

    /// Attached and delivering records.
    pub fn attached(&self) -> bool {
        matches!(
            self,
            Attach::TpBtf | Attach::RawTp | Attach::Fentry | Attach::Kprobe
        )
    }
}

/// The probes of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Probes {
    /// (probe, how it attached): tracepoints by name, balancer hooks as `fentry/<function>`
    /// or `kprobe/<function>`.
    pub list: Vec<(String, Attach)>,
    /// Whether /proc/kallsyms gave addresses (`None`: not known, e.g. a recording).
    pub kallsyms: Option<bool>,
    /// Why the balancer hooks did not load, when the source knows.
    pub balancer_error: Option<String>,
    /// Run-queue latency folded in the kernel.
    pub folded: bool,
}

impl Probes {
    /// From a recording header's pairs.
    pub fn from_header(pairs: &[(String, String)]) -> Probes {
        Probes {
            list: pairs
                .iter()
                .map(|(n, k)| (n.clone(), Attach::parse(k)))
                .collect(),
            ..Probes::default()
        }
    }

    /// The pairs a recording header keeps.
    pub fn to_header(&self) -> Vec<(String, String)> {
        self.list
            .iter()
            .map(|(n, a)| (n.clone(), a.header_kind()))
            .collect()
    }

    /// What the live source loaded.
    #[cfg(feature = "bpf")]
    pub fn from_live(r: &crate::source::live::ProbeReport, folded: bool) -> Probes {
        use crate::source::live::ProbeState;
        let tracepoints = r.tracepoints.iter().map(|(tp, s)| {
            let a = match s {
                ProbeState::TpBtf => Attach::TpBtf,
                ProbeState::RawTp => Attach::RawTp,
                ProbeState::Missing => Attach::Missing,
                ProbeState::Failed(e) => Attach::Failed(e.clone()),
                ProbeState::NotNeeded => Attach::NotNeeded,
            };
            (tp.clone(), a)
        });
        let hooks = r.balancer.iter().flat_map(|(kind, funcs)| {
            let a = match kind {
                crate::source::attach::HookKind::Fentry => Attach::Fentry,
                crate::source::attach::HookKind::Kprobe => Attach::Kprobe,
            };
            funcs
                .iter()
                .map(move |f| (format!("{}/{f}", kind.name()), a.clone()))
        });
        Probes {
            list: tracepoints.chain(hooks).collect(),
            kallsyms: Some(r.kallsyms),
            balancer_error: r.balancer.as_ref().err().cloned(),
            folded,
        }
    }

    /// Whether the balancer's own decisions are recorded (balancer hooks attached).
    pub fn balancer_hooks(&self) -> bool {
        self.list
            .iter()
            .any(|(n, a)| (is_hook(n) || n.contains("balance")) && a.attached())
    }

    /// How the balancer hooks attached: "fentry", "kprobe", or `None` when none did.
    pub fn balancer_kind(&self) -> Option<&'static str> {
        self.list.iter().find_map(|(_, a)| match a {
            Attach::Fentry => Some("fentry"),
            Attach::Kprobe => Some("kprobe"),
            _ => None,
        })
    }

    /// One line for stderr at the start of a live run: how the balancer hooks run, or why
    /// they do not.
    pub fn balancer_line(&self) -> String {
        let n = self
            .list
            .iter()
            .filter(|(n, a)| is_hook(n) && a.attached())
            .count();
        match (self.balancer_kind(), &self.balancer_error) {
            (Some(kind), _) => format!(
                "balancer hooks by {kind} on {n} functions: the kernel's own decisions are recorded"
            ),
            (None, Some(why)) if !why.is_empty() => {
                format!("no balancer hooks ({why}): tracepoints only")
            }
            (None, _) => "no balancer hooks: tracepoints only".to_string(),
        }
    }

    /// Names of the attached tracepoints.
    pub fn attached_tracepoints(&self) -> Vec<&str> {
        self.list
            .iter()
            .filter(|(_, a)| matches!(a, Attach::TpBtf | Attach::RawTp))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// How the tracepoints attached: "tp_btf", "raw_tp" or "none" (the first attached).
    pub fn tracing_mode(&self) -> &'static str {
        self.list
            .iter()
            .find_map(|(_, a)| match a {
                Attach::TpBtf => Some("tp_btf"),
                Attach::RawTp => Some("raw_tp"),
                _ => None,
            })
            .unwrap_or("none")
    }

    /// One line for the screen: whether balancer hooks ran, how the tracepoints attached,
    /// and how many of the probes the run needed are attached.
    pub fn mode(&self) -> String {
        // Probes left out because nothing in the run reads them are not counted.
        let needed: Vec<&(String, Attach)> = self
            .list
            .iter()
            .filter(|(_, a)| *a != Attach::NotNeeded)
            .collect();
        let mut kinds: Vec<&str> = needed
            .iter()
            .filter(|(n, a)| !is_hook(n) && a.attached())
            .map(|(_, a)| match a {
                Attach::TpBtf => "tp_btf",
                Attach::RawTp => "raw_tp",
                _ => "fentry",
            })
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        let attached = needed.iter().filter(|(_, a)| a.attached()).count();
        let mut s = format!(
            "{} ({}; {attached} of {} attached)",
            match (self.balancer_hooks(), self.balancer_kind()) {
                (true, Some("kprobe")) => "tracepoints with balancer hooks by kprobe",
                (true, _) => "tracepoints with balancer hooks",
                (false, _) => "tracepoints only",
            },
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join("+")
            },
            needed.len()
        );
        if self.folded {
            s.push_str(", latency folded in the kernel");
        }
        s
    }
}

/// A balancer hook's probe name (`fentry/<function>`, `kprobe/<function>`).
fn is_hook(name: &str) -> bool {
    name.starts_with("fentry/") || name.starts_with("kprobe/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_pairs_round_trip_and_read_as_a_mode() {
        let pairs: Vec<(String, String)> = [
            ("sched_switch", "tp_btf"),
            ("pelt_cfs_tp", "missing"),
            ("sched_waking", "not needed"),
            ("sched_wakeup", "failed: EINVAL"),
            ("fentry/sched_balance_rq", "fentry"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let p = Probes::from_header(&pairs);
        assert_eq!(p.to_header(), pairs);
        assert_eq!(p.list[3].1, Attach::Failed("EINVAL".into()));
        assert!(p.balancer_hooks());
        assert_eq!(p.attached_tracepoints(), vec!["sched_switch"]);
        assert_eq!(p.tracing_mode(), "tp_btf");
        assert_eq!(
            p.mode(),
            "tracepoints with balancer hooks (tp_btf; 2 of 4 attached)"
        );
        let none = Probes::from_header(&[("sched_switch".into(), "missing".into())]);
        assert!(!none.balancer_hooks());
        assert_eq!(none.tracing_mode(), "none");
        assert_eq!(none.mode(), "tracepoints only (none; 0 of 1 attached)");
    }

    #[test]
    fn kprobe_hooks_read_as_balancer_hooks_and_say_so() {
        let pairs: Vec<(String, String)> = [
            ("sched_switch", "tp_btf"),
            ("kprobe/sched_balance_find_src_group", "kprobe"),
            ("kprobe/detach_task", "kprobe"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let p = Probes::from_header(&pairs);
        assert_eq!(p.to_header(), pairs);
        assert!(p.balancer_hooks());
        assert_eq!(p.balancer_kind(), Some("kprobe"));
        assert_eq!(p.attached_tracepoints(), vec!["sched_switch"]);
        assert_eq!(
            p.mode(),
            "tracepoints with balancer hooks by kprobe (tp_btf; 3 of 3 attached)"
        );
        assert_eq!(
            p.balancer_line(),
            "balancer hooks by kprobe on 2 functions: the kernel's own decisions are recorded"
        );
        let mut none = Probes::from_header(&pairs[..1]);
        assert_eq!(none.balancer_kind(), None);
        none.balancer_error = Some("fentry: refused (EPERM); kprobe: refused (EPERM)".into());
        assert_eq!(
            none.balancer_line(),
            "no balancer hooks (fentry: refused (EPERM); kprobe: refused (EPERM)): tracepoints only"
        );
    }
}
