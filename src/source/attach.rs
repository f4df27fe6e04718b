//! How the balancer hooks attach (`--balancer-attach`): the choice the user makes, the kinds
//! of program the kernel may take (fentry/fexit, kprobe/kretprobe), and the order `auto` tries
//! them in. Pure: the loading itself is the live source's (`source::live::hooks`).

use serde::{Deserialize, Serialize};

/// What `--balancer-attach` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum BalancerAttach {
    /// fentry, then kprobe where the kernel refuses fentry or has no BPF trampolines, then
    /// none (tracepoints only), saying why.
    #[default]
    Auto,
    /// fentry/fexit only: fails when the kernel refuses them.
    Fentry,
    /// kprobe/kretprobe only: fails when the kernel refuses them.
    Kprobe,
}

/// A kind of balancer hook program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookKind {
    /// fentry/fexit: BPF trampolines, the function in the kernel's BTF.
    Fentry,
    /// kprobe/kretprobe: the function in kallsyms (not inlined).
    Kprobe,
}

impl HookKind {
    /// As probes and recordings name it: `fentry` or `kprobe`.
    pub fn name(self) -> &'static str {
        match self {
            HookKind::Fentry => "fentry",
            HookKind::Kprobe => "kprobe",
        }
    }
}

impl BalancerAttach {
    /// The kinds to try, in order.
    pub fn candidates(self) -> &'static [HookKind] {
        match self {
            BalancerAttach::Auto => &[HookKind::Fentry, HookKind::Kprobe],
            BalancerAttach::Fentry => &[HookKind::Fentry],
            BalancerAttach::Kprobe => &[HookKind::Kprobe],
        }
    }

    /// Whether a refusal ends the run (the user asked for one kind) instead of leaving it to
    /// the tracepoints.
    pub fn forced(self) -> bool {
        self != BalancerAttach::Auto
    }
}

/// Why no balancer hook runs: each kind tried, with what the kernel said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub Vec<(HookKind, String)>);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(k, e)| format!("{}: {e}", k.name()))
            .collect();
        f.write_str(&parts.join("; "))
    }
}

/// Tries the kinds `mode` allows in order with `attach`, keeping the first that works; the
/// refusals of all of them otherwise.
pub fn choose<T>(
    mode: BalancerAttach,
    mut attach: impl FnMut(HookKind) -> Result<T, String>,
) -> Result<(HookKind, T), Refused> {
    let mut refused = Vec::new();
    for &kind in mode.candidates() {
        match attach(kind) {
            Ok(t) => return Ok((kind, t)),
            Err(e) => refused.push((kind, e)),
        }
    }
    Err(Refused(refused))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn auto_tries_fentry_then_kprobe_and_keeps_the_first_that_attaches() {
        let mut tried = Vec::new();
        let got = choose(BalancerAttach::Auto, |k| {
            tried.push(k);
            match k {
                HookKind::Fentry => Err("refused (EPERM)".to_string()),
                HookKind::Kprobe => Ok(7),
            }
        });
        assert_eq!(got, Ok((HookKind::Kprobe, 7)));
        assert_eq!(tried, [HookKind::Fentry, HookKind::Kprobe]);
        let mut tried = Vec::new();
        let got = choose(BalancerAttach::Auto, |k| {
            tried.push(k);
            Ok::<_, String>(k.name())
        });
        assert_eq!(got, Ok((HookKind::Fentry, "fentry")));
        assert_eq!(
            tried,
            [HookKind::Fentry],
            "kprobe is not tried once fentry runs"
        );
    }

    #[test]
    fn refusals_name_every_kind_tried_and_forced_modes_try_one() {
        let got = choose(BalancerAttach::Auto, |k| {
            Err::<(), _>(format!("{} said no", k.name()))
        });
        let r = got.unwrap_err();
        assert_eq!(r.0.len(), 2);
        assert_eq!(
            r.to_string(),
            "fentry: fentry said no; kprobe: kprobe said no"
        );
        for (mode, kind) in [
            (BalancerAttach::Fentry, HookKind::Fentry),
            (BalancerAttach::Kprobe, HookKind::Kprobe),
        ] {
            let mut tried = Vec::new();
            let r = choose(mode, |k| {
                tried.push(k);
                Err::<(), _>("EPERM".to_string())
            });
            assert_eq!(tried, [kind]);
            assert_eq!(
                r.unwrap_err().to_string(),
                format!("{}: EPERM", kind.name())
            );
            assert!(mode.forced());
        }
        assert!(!BalancerAttach::Auto.forced());
    }

    #[test]
    fn the_flag_values_parse() {
        for (s, m) in [
            ("auto", BalancerAttach::Auto),
            ("fentry", BalancerAttach::Fentry),
            ("kprobe", BalancerAttach::Kprobe),
        ] {
            assert_eq!(BalancerAttach::from_str(s, false), Ok(m));
        }
        assert!(BalancerAttach::from_str("kretprobe", false).is_err());
        assert_eq!(BalancerAttach::default(), BalancerAttach::Auto);
    }
}
