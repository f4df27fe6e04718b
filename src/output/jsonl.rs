//! JSON lines of raw events: one [`Event`] per line, serialized exactly as the type derives
//! it (`{"ts_ns":..,"cpu":..,"kind":{"type":"switch",..}}`), so that any line deserializes
//! back into the same `Event`. Owns only the writer.

use crate::event::Event;
use std::io::{self, Write};

/// Writes events as JSON lines.
pub struct JsonlWriter<W: Write> {
    w: W,
}

impl<W: Write> JsonlWriter<W> {
    /// A writer onto `w` (buffer it: every event is a few small writes).
    pub fn new(w: W) -> Self {
        JsonlWriter { w }
    }

    /// Writes one event and its newline.
    pub fn write(&mut self, ev: &Event) -> io::Result<()> {
        serde_json::to_writer(&mut self.w, ev).map_err(io::Error::other)?;
        self.w.write_all(b"\n")
    }

    /// Flushes and hands the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventKind, MigrateContext, Reason, ReasonSource};

    fn kind(json: &str) -> EventKind {
        serde_json::from_str(json).unwrap()
    }

    fn events() -> Vec<Event> {
        let ev = |ts_ns, cpu, kind| Event { ts_ns, cpu, kind };
        vec![
            ev(
                1,
                0,
                EventKind::Switch {
                    prev_pid: 0,
                    prev_state: 0,
                    next_pid: 42,
                },
            ),
            ev(
                2,
                1,
                EventKind::Waking {
                    pid: 7,
                    prev_cpu: 3,
                },
            ),
            ev(
                3,
                1,
                EventKind::Migrate(Box::new(crate::event::MigrateInfo {
                    pid: 7,
                    src_cpu: 3,
                    dst_cpu: 1,
                    reason: Reason::NewidleBalance,
                    source: ReasonSource::Context,
                    stack_id: Some(9),
                    ctx: MigrateContext {
                        in_sched_softirq: true,
                        policy: 7,
                        ..MigrateContext::default()
                    },
                })),
            ),
            ev(
                4,
                0,
                EventKind::Stack(Box::new(crate::event::StackInfo {
                    id: 9,
                    reason: Reason::Wakeup,
                    frames: vec!["set_task_cpu".into(), "try_to_wake_up".into()],
                })),
            ),
            ev(
                5,
                2,
                EventKind::Task(Box::new(crate::event::TaskInfo {
                    pid: 7,
                    tgid: 7,
                    comm: "a \"quoted\" name\n".into(),
                    exec: true,
                })),
            ),
            ev(6, 2, kind(r#"{"type":"affinity","pid":7,"cpus":"0-2,5"}"#)),
            ev(u64::MAX, 3, EventKind::Lost { count: 12 }),
            ev(8, 0, EventKind::Clock),
        ]
    }

    #[test]
    fn every_line_reads_back_as_the_same_event() {
        let evs = events();
        let mut w = JsonlWriter::new(Vec::new());
        for e in &evs {
            w.write(e).unwrap();
        }
        let out = String::from_utf8(w.finish().unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), evs.len());
        for (l, e) in lines.iter().zip(&evs) {
            let back: Event = serde_json::from_str(l).unwrap();
            assert_eq!(&back, e);
        }
        assert!(lines[0].starts_with(r#"{"ts_ns":1,"cpu":0,"kind":{"type":"switch","#));
        assert!(out.ends_with('\n'));
    }
}
