//! [`Source`]: the one start/stop/end API over the three sources of events (a recording, the
//! synthetic generator, the live kernel). Each runs on its own thread and feeds a bounded
//! channel of [`SourceMsg`]s; each describes itself with a recording [`Header`] (machine,
//! kernel, clock base) and its [`Probes`], so sinks never ask which kind they are fed by.

use super::Probes;
use crate::record::{Damage, Header, Reader, RecordError};
use crate::source::file::FileSource;
use crate::source::synthetic::{SyntheticConfig, SyntheticSource};
use crate::source::SourceMsg;
use crate::topology::Topology;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};

enum Kind {
    File(FileSource),
    Synthetic(SyntheticSource),
    #[cfg(feature = "bpf")]
    Live(crate::source::live::LiveSource),
}

/// A started source of event batches.
pub struct Source {
    /// Event batches, warnings, then `End`.
    pub rx: Receiver<SourceMsg>,
    /// What the events describe: for a recording its own header, for the live kernel and the
    /// generator the header a recording of them gets.
    pub header: Header,
    /// How the events were traced.
    pub probes: Probes,
    kind: Kind,
}

/// What a source says when it has ended.
#[derive(Debug, Default)]
pub struct EndReport {
    /// What a recording's reader skipped (clean for other sources).
    pub damage: Damage,
    /// Events the generator sent (0 for other sources).
    pub generated: u64,
}

impl Source {
    /// Replays the recording at `path`.
    pub fn file(path: &Path) -> Result<Source, RecordError> {
        Ok(Source::reader(Reader::open(path)?))
    }

    /// Replays an opened recording.
    pub fn reader(reader: Reader) -> Source {
        let (tx, rx) = sync_channel(crate::source::QUEUE_BATCHES);
        let header = reader.header().clone();
        let f = FileSource::start(reader, tx);
        let probes = Probes::from_header(&header.probes);
        Source {
            rx,
            probes,
            header,
            kind: Kind::File(f),
        }
    }

    /// Starts the generator of a consistent synthetic machine (`cfg.cpus` CPUs).
    pub fn synthetic(cfg: SyntheticConfig) -> Source {
        let topo = crate::source::synthetic::topology(cfg.cpus);
        let (tx, rx) = sync_channel(crate::source::QUEUE_BATCHES);
        // A generated machine has no kernel: an empty release selects the current rules.
        let header = header(topo, Vec::new(), 0, String::new(), "synthetic".into());
        Source {
            rx,
            header,
            probes: Probes::default(),
            kind: Kind::Synthetic(SyntheticSource::start(cfg, tx)),
        }
    }

    /// Loads and attaches the BPF programs on this machine (topology `topo`) and starts
    /// draining them. Returns once they are attached.
    #[cfg(feature = "bpf")]
    pub fn live(
        cfg: crate::source::live::LiveConfig,
        topo: Topology,
    ) -> Result<Source, crate::source::SourceError> {
        use crate::source::live::{clock, LiveSource};
        let folded = cfg.fold;
        let (tx, rx) = sync_channel(crate::source::QUEUE_BATCHES);
        let live = LiveSource::start(cfg, tx)?;
        let probes = Probes::from_live(&live.report, folded);
        let host = crate::source::read_trim("/proc/sys/kernel/hostname")
            .unwrap_or_else(|| "unknown".into());
        let header = header(
            topo,
            probes.to_header(),
            clock::realtime_offset_ns(),
            crate::source::kernel_release(),
            host,
        );
        Ok(Source {
            rx,
            header,
            probes,
            kind: Kind::Live(live),
        })
    }

    /// The machine the events describe.
    pub fn topology(&self) -> &Topology {
        &self.header.topology
    }

    /// Events come from the running kernel.
    pub fn is_live(&self) -> bool {
        #[cfg(feature = "bpf")]
        if matches!(self.kind, Kind::Live(_)) {
            return true;
        }
        false
    }

    /// Asks the source to stop without waiting: it sends what it holds, then `End`. A
    /// recording is read to its end regardless (its reader stops when nobody receives).
    pub fn stop(&self) {
        match &self.kind {
            Kind::File(_) => {}
            Kind::Synthetic(s) => s.stop_async(),
            #[cfg(feature = "bpf")]
            Kind::Live(l) => l.stop_async(),
        }
    }

    /// Waits for the source's thread and returns its end report.
    pub fn finish(self) -> EndReport {
        let Source { rx, kind, .. } = self;
        // A source blocked on a full channel must see it closed to end.
        drop(rx);
        match kind {
            Kind::File(f) => EndReport {
                damage: f.damage(),
                generated: 0,
            },
            Kind::Synthetic(s) => EndReport {
                damage: Damage::default(),
                generated: s.join(),
            },
            #[cfg(feature = "bpf")]
            Kind::Live(mut l) => {
                l.stop();
                EndReport::default()
            }
        }
    }
}

/// The header of a recording of this run.
fn header(
    topology: Topology,
    probes: Vec<(String, String)>,
    clock_base_ns: i64,
    kernel_release: String,
    hostname: String,
) -> Header {
    Header {
        format_version: crate::record::FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release,
        hostname,
        clock_base_ns,
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        topology,
        probes,
        command_line: std::env::args().collect(),
    }
}
