//! `/proc/schedstat` reads at the start and end of a live run ([`EventKind::Schedstat`]), and
//! `kernel.sched_schedstats`, which the kernel's balancer counters need: switched on for the
//! run when it was off, and back off at its end.

use super::clock;
use crate::event::{Event, EventKind, SchedstatText};

const FILE: &str = "/proc/schedstat";
const SYSCTL: &str = "/proc/sys/kernel/sched_schedstats";

/// `kernel.sched_schedstats` as this run found it: `Some` when lbscope switched it on and
/// must switch it back off.
pub struct Switch(Option<()>);

impl Switch {
    /// Switches the counters on when they are off; the message says what was done (or why the
    /// kernel's counters will read zero).
    pub fn on() -> (Switch, Option<String>) {
        match std::fs::read_to_string(SYSCTL).map(|s| s.trim().to_string()) {
            Ok(v) if v == "0" => match std::fs::write(SYSCTL, "1") {
                Ok(()) => (
                    Switch(Some(())),
                    Some(
                        "kernel.sched_schedstats was 0: set to 1 for this run (the kernel's \
                         balancer counters in /proc/schedstat), back to 0 at its end"
                            .into(),
                    ),
                ),
                Err(e) => (
                    Switch(None),
                    Some(format!(
                        "kernel.sched_schedstats is 0 and could not be set ({e}): the kernel's \
                         balancer counters in /proc/schedstat will not move"
                    )),
                ),
            },
            _ => (Switch(None), None),
        }
    }

    /// Puts the setting back as it was.
    pub fn restore(self) -> Option<String> {
        self.0?;
        std::fs::write(SYSCTL, "0")
            .err()
            .map(|e| format!("kernel.sched_schedstats could not be set back to 0: {e}"))
    }
}

/// Reads `/proc/schedstat` now; `None` where the kernel has none (CONFIG_SCHEDSTATS off).
pub fn read(end: bool) -> Option<Event> {
    let t0 = clock::monotonic_ns();
    let text = std::fs::read_to_string(FILE).ok()?;
    let t1 = clock::monotonic_ns();
    Some(Event {
        ts_ns: t0,
        cpu: 0,
        kind: EventKind::Schedstat(Box::new(SchedstatText {
            end,
            read_ns: t1.saturating_sub(t0),
            text,
        })),
    })
}
