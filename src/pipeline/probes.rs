//! What a source traced with, as a typed value: each probe and how it attached, whether
//! kernel stacks can be named, why the balancer hooks did not load. Recordings keep it as
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
            "missing" => Attach::Missing,
            "not needed" => Attach::NotNeeded,
            k => Attach::Failed(k.strip_prefix("failed: ").unwrap_or(k).to_string()),
        }
    }

    /// Attached and delivering records.
    pub fn attached(&self) -> bool {
        matches!(self, Attach::TpBtf | Attach::RawTp | Attach::Fentry)
    }
}

/// The probes of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Probes {
    /// (probe, how it attached): tracepoints by name, balancer hooks as `fentry/<function>`.
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
        let hooks = r
            .balancer
            .iter()
            .flatten()
            .map(|f| (format!("fentry/{f}"), Attach::Fentry));
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
            .any(|(n, a)| (n.starts_with("fentry") || n.contains("balance")) && a.attached())
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
            .filter(|(n, a)| !n.starts_with("fentry") && a.attached())
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
            if self.balancer_hooks() {
                "tracepoints with balancer hooks"
            } else {
                "tracepoints only"
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
}
