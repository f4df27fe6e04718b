//! The metrics sink of `lbscope serve`: each closed interval is added to OpenMetrics
//! counters, histograms and gauges (the `prometheus-client` crate does the exposition
//! format), then encoded once into a text that [`Exposition`] hands to every scrape. A scrape
//! never waits for the pipeline (it clones the latest text) and the pipeline never waits for
//! a scrape (it swaps in the next one).
//!
//! Names and labels are a stable contract, listed in the README ("Metrics"). Label values
//! come from the topology (level keys and spans), the reason and finding names and the group
//! types: their number is bounded by the machine, never by its tasks. Cgroup paths are the
//! one exception, bounded here: only the cgroups in an interval's top lists get a label, and
//! at most [`MAX_CGROUP_LABELS`] distinct paths over the run (later ones are `other`).

use crate::analyze::{LatencySummary, Snapshot, LOG2_SLOTS};
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};
use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Moves {
    reason: String,
    level: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Domain {
    level: String,
    span: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IdleWait {
    level: String,
    span: String,
    /// "movable" or "pinned".
    waiting: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Cgroup {
    cgroup: String,
}

/// Distinct `cgroup` label values over a run; further cgroups are counted as
/// [`OTHER_CGROUP`].
pub const MAX_CGROUP_LABELS: usize = 50;

/// The label value of the cgroups past [`MAX_CGROUP_LABELS`].
pub const OTHER_CGROUP: &str = "other";

/// The cgroup label values given so far.
#[derive(Debug, Default)]
struct CgroupLabels(std::collections::HashSet<String>);

impl CgroupLabels {
    /// The label of the cgroup at `path`: its path while fewer than [`MAX_CGROUP_LABELS`]
    /// have been given, [`OTHER_CGROUP`] after.
    fn of(&mut self, path: &str) -> Cgroup {
        if self.0.contains(path) || self.0.len() < MAX_CGROUP_LABELS {
            if !self.0.contains(path) {
                self.0.insert(path.to_string());
            }
            return Cgroup {
                cgroup: path.to_string(),
            };
        }
        Cgroup {
            cgroup: OTHER_CGROUP.into(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupTypeOf {
    level: String,
    span: String,
    group_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Build {
    version: String,
    kernel: String,
    probes: String,
    model_rules: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Comm {
    comm: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DumpTrigger {
    trigger: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkipReason {
    reason: String,
}

/// The flight recorder's counters (`serve --ring`): dumps written by trigger, skipped by
/// reason, failed, and the ring's size. Shared with the dump-writing thread; registered in
/// the exposition by [`Metrics::register_dumps`], or standing alone for `record --ring`.
#[derive(Clone, Debug, Default)]
pub struct DumpCounters {
    written: Family<DumpTrigger, Counter>,
    skipped: Family<SkipReason, Counter>,
    failed: Counter,
    ring_bytes: Gauge,
    ring_seconds: Gauge<f64, AtomicU64>,
}

impl DumpCounters {
    /// A dump was kept.
    pub fn written(&self, trigger: &str) {
        self.written
            .get_or_create(&DumpTrigger {
                trigger: trigger.into(),
            })
            .inc();
    }

    /// A dump was not written: `reason` is `hourly_cap`, `dir_cap` or `busy`.
    pub fn skipped(&self, reason: &str) {
        self.skipped
            .get_or_create(&SkipReason {
                reason: reason.into(),
            })
            .inc();
    }

    /// Writing a dump failed (disk full, directory gone or unwritable).
    pub fn failed(&self) {
        self.failed.inc();
    }

    /// The ring's estimated memory and its span of event time.
    pub fn ring(&self, bytes: u64, span_ns: u64) {
        self.ring_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        self.ring_seconds.set(span_ns as f64 / 1e9);
    }

    /// Dumps kept so far on `trigger`.
    pub fn written_count(&self, trigger: &str) -> u64 {
        self.written
            .get_or_create(&DumpTrigger {
                trigger: trigger.into(),
            })
            .get()
    }

    /// Dumps skipped so far for `reason`.
    pub fn skipped_count(&self, reason: &str) -> u64 {
        self.skipped
            .get_or_create(&SkipReason {
                reason: reason.into(),
            })
            .get()
    }

    /// Dumps that failed so far.
    pub fn failed_count(&self) -> u64 {
        self.failed.get()
    }
}

/// A histogram over runqlat's log2 microsecond slots, fed with whole intervals' slot counts
/// (the analyzer's figures are exact per slot; the crate's own histogram takes one value at
/// a time). Bucket `le` bounds are the slots' ends, 2^(i+1) us (a slot holds the latencies
/// below its end), the last slot's +Inf. The sum is estimated from the slots' midpoints.
#[derive(Clone, Debug, Default)]
pub struct Log2Histogram(Arc<Mutex<Log2State>>);

#[derive(Debug, Default)]
struct Log2State {
    slots: [u64; LOG2_SLOTS],
    count: u64,
    sum_s: f64,
}

impl Log2Histogram {
    /// Adds an interval's distribution.
    fn add(&self, l: &LatencySummary) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (i, n) in l.log2_buckets.iter().enumerate().take(LOG2_SLOTS) {
            s.slots[i] += n;
            s.sum_s += *n as f64 * slot_mid_s(i);
        }
        s.count += l.count;
    }
}

/// A slot's end in seconds (`f64::MAX`, +Inf, for the last).
fn slot_end_s(i: usize) -> f64 {
    if i + 1 >= LOG2_SLOTS {
        f64::MAX
    } else {
        (1u64 << (i + 1)) as f64 * 1e-6
    }
}

/// A slot's midpoint in seconds (its start for the open-ended last one).
fn slot_mid_s(i: usize) -> f64 {
    let lo = if i == 0 { 0.0 } else { (1u64 << i) as f64 };
    let hi = if i + 1 >= LOG2_SLOTS {
        lo
    } else {
        (1u64 << (i + 1)) as f64
    };
    (lo + hi) / 2.0 * 1e-6
}

impl TypedMetric for Log2Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Log2Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let buckets: Vec<(f64, u64)> = (0..LOG2_SLOTS)
            .map(|i| (slot_end_s(i), s.slots[i]))
            .collect();
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            s.sum_s, s.count, &buckets, None,
        )
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// The latest exposition text, shared with the HTTP thread.
#[derive(Clone, Debug)]
pub struct Exposition(Arc<Mutex<Arc<String>>>);

impl Exposition {
    /// The text of the intervals closed so far.
    pub fn text(&self) -> Arc<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, text: String) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(text);
    }
}

/// The metrics sink.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    exposition: Exposition,
    migrations: Family<Moves, Counter>,
    runqlat: Log2Histogram,
    domain_runqlat: Family<Domain, Log2Histogram>,
    /// Per process name, for the allow-list only (`listed`).
    process_runqlat: Family<Comm, Log2Histogram>,
    listed: Vec<String>,
    cgroup_runqlat: Family<Cgroup, Log2Histogram>,
    cgroup_migrations: Family<Cgroup, Counter>,
    cgroup_labels: CgroupLabels,
    idle_wait: Family<IdleWait, Counter<f64, AtomicU64>>,
    findings: Family<Kind, Counter>,
    imbalance: Family<Domain, Gauge>,
    busiest_type: Family<GroupTypeOf, Gauge>,
    lost: Counter,
    switch_gaps: Counter,
    unseen: Counter,
    events: Counter,
    intervals: Counter,
    /// This process's own CPU (every thread), and the run time it last added up to.
    self_cpu: Counter<f64, AtomicU64>,
    self_run_ns: u64,
    /// The busiest-group type label set each domain last had (reset to 0 when it changes).
    last_types: Vec<GroupTypeOf>,
}

impl Metrics {
    /// A sink describing a run of lbscope `version` on `kernel` traced with `probes`, under
    /// the model's `model_rules`.
    pub fn new(kernel: &str, probes: &str, model_rules: &str) -> Metrics {
        let mut registry = Registry::with_prefix("lbscope");
        let m = Metrics {
            exposition: Exposition(Arc::new(Mutex::new(Arc::new(String::new())))),
            migrations: Family::default(),
            runqlat: Log2Histogram::default(),
            domain_runqlat: Family::default(),
            process_runqlat: Family::default(),
            listed: Vec::new(),
            cgroup_runqlat: Family::default(),
            cgroup_migrations: Family::default(),
            cgroup_labels: CgroupLabels::default(),
            idle_wait: Family::default(),
            findings: Family::default(),
            imbalance: Family::default(),
            busiest_type: Family::default(),
            lost: Counter::default(),
            switch_gaps: Counter::default(),
            unseen: Counter::default(),
            events: Counter::default(),
            intervals: Counter::default(),
            self_cpu: Counter::default(),
            self_run_ns: 0,
            last_types: Vec::new(),
            registry: Registry::default(),
        };
        registry.register(
            "build",
            "lbscope's version, the kernel traced, how its probes attached and the model's rules",
            Info::new(Build {
                version: env!("CARGO_PKG_VERSION").into(),
                kernel: kernel.into(),
                probes: probes.into(),
                model_rules: model_rules.into(),
            }),
        );
        registry.register(
            "migrations",
            "Task migrations by reason and by the domain level crossed",
            m.migrations.clone(),
        );
        registry.register_with_unit(
            "runqlat",
            "Run-queue latency of every task (runqlat's definition), by runqlat's log2 slots",
            Unit::Seconds,
            m.runqlat.clone(),
        );
        registry.register_with_unit(
            "domain_runqlat",
            "Run-queue latency of the tasks that started running in each sched domain",
            Unit::Seconds,
            m.domain_runqlat.clone(),
        );
        registry.register_with_unit(
            "cgroup_runqlat",
            "Run-queue latency of the tasks of each cgroup in an interval's top 20 (at most 50 \
             cgroups over the run, the rest as cgroup=\"other\")",
            Unit::Seconds,
            m.cgroup_runqlat.clone(),
        );
        registry.register(
            "cgroup_migrations",
            "Task migrations of each cgroup in an interval's top 20 (at most 50 cgroups over the \
             run, the rest as cgroup=\"other\")",
            m.cgroup_migrations.clone(),
        );
        registry.register_with_unit(
            "idle_while_others_wait",
            "Time a CPU of the domain sat idle while a task waited on another of its CPUs; \
             waiting=movable: a task allowed on the idle CPU, pinned: only tasks pinned away",
            Unit::Seconds,
            m.idle_wait.clone(),
        );
        registry.register(
            "findings",
            "Wrong placements found by the balancer model, by kind",
            m.findings.clone(),
        );
        registry.register(
            "model_imbalance",
            "The model's imbalance (env->imbalance) of each domain at the last interval's end",
            m.imbalance.clone(),
        );
        registry.register(
            "model_busiest_group_type",
            "1 for the type of each domain's busiest group at the last interval's end",
            m.busiest_type.clone(),
        );
        registry.register(
            "lost_events",
            "Events the kernel ring buffer could not take",
            m.lost.clone(),
        );
        registry.register(
            "switch_gaps",
            "Switches whose previous task was not the one their CPU last switched to (switches \
             no record says: the kernel ran no BPF program there, or records were lost)",
            m.switch_gaps.clone(),
        );
        registry.register(
            "unseen_migrations",
            "Migrations no record said, inferred from a task seen on another CPU than its last",
            m.unseen.clone(),
        );
        registry.register("events", "Events analyzed", m.events.clone());
        registry.register("intervals", "Intervals closed", m.intervals.clone());
        registry.register_with_unit(
            "self_cpu",
            "CPU time of the lbscope process itself, every thread (collector, analyzer, HTTP \
             server), from the scheduler's run time; its BPF programs run in the traced tasks \
             and are not in it",
            Unit::Seconds,
            m.self_cpu.clone(),
        );
        let mut m = Metrics { registry, ..m };
        m.publish();
        m
    }

    /// Adds a run-queue latency histogram per process name in `names` (the allow-list: label
    /// values are these names only). The analyzer must list them in every snapshot
    /// (`Analyzer::list_processes`), whatever their rank.
    pub fn list_processes(&mut self, names: &[String]) {
        self.registry.register_with_unit(
            "process_runqlat",
            "Run-queue latency of the processes of each allow-listed name (serve --process-latency)",
            Unit::Seconds,
            self.process_runqlat.clone(),
        );
        for n in names {
            drop(
                self.process_runqlat
                    .get_or_create(&Comm { comm: n.clone() }),
            );
        }
        self.listed = names.to_vec();
        self.publish();
    }

    /// Registers the flight recorder's counters in the exposition and returns them.
    pub fn register_dumps(&mut self) -> DumpCounters {
        let c = DumpCounters::default();
        self.registry.register(
            "dumps",
            "Flight-recorder dumps written, by what triggered them",
            c.written.clone(),
        );
        self.registry.register(
            "dumps_skipped",
            "Flight-recorder dumps not written: hourly_cap, dir_cap, or busy (one still being written)",
            c.skipped.clone(),
        );
        self.registry.register(
            "dump_failures",
            "Flight-recorder dumps that could not be written (disk full, directory unwritable)",
            c.failed.clone(),
        );
        self.registry.register_with_unit(
            "ring",
            "Estimated memory of the events the flight recorder's ring holds",
            Unit::Bytes,
            c.ring_bytes.clone(),
        );
        self.registry.register_with_unit(
            "ring_span",
            "Event time the flight recorder's ring spans",
            Unit::Seconds,
            c.ring_seconds.clone(),
        );
        self.publish();
        c
    }

    /// The text scrapes get, updated at each interval's close.
    pub fn exposition(&self) -> Exposition {
        self.exposition.clone()
    }

    /// Adds one interval.
    fn add(&mut self, s: &Snapshot) {
        for (reason, levels) in &s.migrations.matrix {
            for (level, n) in levels {
                self.migrations
                    .get_or_create(&Moves {
                        reason: reason.clone(),
                        level: level.clone(),
                    })
                    .inc_by(*n);
            }
        }
        self.runqlat.add(&s.runqlat_us);
        for d in &s.runqlat_by_domain {
            self.domain_runqlat
                .get_or_create(&Domain {
                    level: d.level.clone(),
                    span: d.span.to_string(),
                })
                .add(&d.latency);
        }
        for p in &s.runqlat_by_process {
            if let Some(comm) = p.comm.as_ref().filter(|c| self.listed.contains(c)) {
                self.process_runqlat
                    .get_or_create(&Comm { comm: comm.clone() })
                    .add(&p.latency);
            }
        }
        for c in &s.runqlat_by_cgroup {
            let label = self.cgroup_labels.of(&c.path);
            self.cgroup_runqlat.get_or_create(&label).add(&c.latency);
        }
        for c in &s.migrations_by_cgroup {
            let label = self.cgroup_labels.of(&c.path);
            self.cgroup_migrations.get_or_create(&label).inc_by(c.total);
        }
        for w in &s.idle_while_waiting {
            for (waiting, ns) in [("movable", w.movable_ns), ("pinned", w.pinned_ns)] {
                self.idle_wait
                    .get_or_create(&IdleWait {
                        level: w.level.clone(),
                        span: w.span.to_string(),
                        waiting: waiting.into(),
                    })
                    .inc_by(ns as f64 / 1e9);
            }
        }
        for (kind, n) in &s.findings_by_kind {
            self.findings
                .get_or_create(&Kind { kind: kind.clone() })
                .inc_by(*n);
        }
        let mut types = Vec::new();
        for d in &s.domains {
            let dom = Domain {
                level: d.level.clone(),
                span: d.span.to_string(),
            };
            self.imbalance
                .get_or_create(&dom)
                .set(i64::try_from(d.imbalance).unwrap_or(i64::MAX));
            if let Some(g) = d.busiest_group.and_then(|b| d.groups.get(b)) {
                types.push(GroupTypeOf {
                    level: dom.level,
                    span: dom.span,
                    group_type: g.group_type.name().into(),
                });
            }
        }
        for t in self.last_types.iter().filter(|t| !types.contains(t)) {
            self.busiest_type.get_or_create(t).set(0);
        }
        for t in &types {
            self.busiest_type.get_or_create(t).set(1);
        }
        self.last_types = types;
        self.lost.inc_by(s.lost_events);
        self.switch_gaps.inc_by(s.switch_gaps);
        self.unseen.inc_by(s.migrations.unseen);
        self.events.inc_by(s.events);
        self.intervals.inc();
        self.self_cpu_to(crate::selfcost::process_run_ns(std::path::Path::new(
            "/proc/self/task",
        )));
    }

    /// Brings the self CPU counter to `run_ns` of run time, when read (it never goes back:
    /// a thread that ended takes its time out of the sum).
    fn self_cpu_to(&mut self, run_ns: Option<u64>) {
        if let Some(ns) = run_ns.filter(|ns| *ns > self.self_run_ns) {
            self.self_cpu.inc_by((ns - self.self_run_ns) as f64 / 1e9);
            self.self_run_ns = ns;
        }
    }

    /// Encodes the registry into the shared text.
    fn publish(&mut self) {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_ok() {
            self.exposition.set(text);
        }
    }
}

impl crate::pipeline::Sink for Metrics {
    fn snapshot(&mut self, s: &Snapshot) -> io::Result<()> {
        self.add(s);
        self.publish();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
