//! The live source: loads the tracepoint programs (tp_btf, falling back to raw_tp), attaches
//! them, drains the ring buffer on its own thread and sends decoded [`Event`] batches down one
//! channel. Also reports what the kernel allowed ([`ProbeReport`]) for `doctor` and headers.

pub mod cgroups;
pub mod clock;
mod decode;
mod fold;
pub mod hooks;
pub mod kallsyms;
mod losses;
pub mod mapio;
mod merge;
mod schedstat;
mod skel;

use crate::event::{Event, EventKind};
use crate::source::attach::{self, HookKind};
use crate::source::{Batch, BatchPool, SourceError, SourceMsg, CHUNK};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, RingBufferBuilder};
use serde::{Deserialize, Serialize};
use skel::{LbscopeSkel, LbscopeSkelBuilder, OpenLbscopeSkel};
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, Sender, SyncSender};
use std::sync::Arc;
use std::time::Duration;

/// Tracepoints the tool cannot work without.
pub const REQUIRED: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_process_exit",
];

/// Every tracepoint the programs use, in the order `doctor` lists them.
pub const TRACEPOINTS: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_update_nr_running_tp",
    "pelt_cfs_tp",
    "sched_cpu_capacity_tp",
    "softirq_entry",
    "softirq_exit",
    "sched_move_numa",
    "sched_swap_numa",
    "sched_stick_numa",
    "sched_process_exec",
    "sched_process_exit",
    "hrtimer_expire_exit",
];

/// How to attach the tracepoint programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum AttachMode {
    /// tp_btf, and raw_tp if the kernel refuses tp_btf.
    Auto,
    /// BTF-typed tracepoints only.
    TpBtf,
    /// Raw tracepoints only.
    RawTp,
}

/// Options of the live source.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Ring buffer size in bytes (a power of two, at least one page).
    pub ringbuf_bytes: u32,
    /// Minimum gap between PELT samples of one CPU.
    pub pelt_interval_ns: u64,
    /// tp_btf or raw_tp.
    pub attach: AttachMode,
    /// How the balancer hooks attach: fentry, kprobe, or the first the kernel takes.
    pub balancer_attach: crate::source::attach::BalancerAttach,
    /// How often the consumer drains the ring buffer when the kernel does not wake it (the
    /// kernel wakes it when the buffer is half full). Folded mode flushes its histograms at
    /// the same period.
    pub poll_interval: Duration,
    /// Tracepoints to treat as absent (tests of the missing-tracepoint path).
    pub pretend_missing: Vec<String>,
    /// The stack map's size when not the object's own (16,384; `LBSCOPE_STACK_MAP_ENTRIES`):
    /// tests fill a tiny map to make bpf_get_stackid refuse stacks.
    pub stack_map_entries: Option<u32>,
    /// Tracepoints whose records nothing in this run reads: not loaded, so they cost the
    /// traced machine nothing ([`ProbeState::NotNeeded`]).
    pub unneeded: Vec<&'static str>,
    /// Folded mode: run-queue latency folded into histograms in the kernel (per CPU and per
    /// process) and sent as [`EventKind::Fold`] every `poll_interval`; switches streamed only
    /// at idle transitions and at a task's first run on a CPU in each 100 ms (bpf/lbscope.h,
    /// `LBS_FIRST_RUN_NS`), wakeups only while a CPU may be idle, nr_running above 2 sampled.
    pub fold: bool,
    /// Folded mode: fold only this process's latency samples.
    pub fold_tgid: Option<u32>,
    /// Read `/proc/schedstat` at the start and the end of the run (switching
    /// `kernel.sched_schedstats` on for it when it is off).
    pub schedstat: bool,
}

/// The drain period of a live run whose figures close every `interval_ns`: half an interval,
/// from 100 ms to 500 ms, so that an interval's figures are out at most half an interval
/// (plus the merge's hold-back) after it ends. Each drain wakes both threads, and the
/// analyzer then starts on caches the traced load emptied since the last one: at a 1 s
/// interval, draining every 500 ms instead of 250 cut `top`'s time per context switch of the
/// load by about 5% (tests/bench/HISTORY.md).
pub fn drain_period(interval_ns: u64) -> Duration {
    Duration::from_nanos((interval_ns / 2).clamp(100_000_000, 500_000_000))
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            ringbuf_bytes: 16 << 20,
            pelt_interval_ns: 4_000_000,
            attach: AttachMode::Auto,
            balancer_attach: crate::source::attach::BalancerAttach::Auto,
            // Runs that close intervals drain at `drain_period` of theirs; the rest (a
            // recording) every 250 ms. Each drain costs the consumer a wakeup and caches gone
            // cold: at 85 thousand events a second, `top` took 1.14-1.27% of a core draining
            // every 100 ms and 1.00-1.17% every 250 ms (tests/bench/HISTORY.md).
            poll_interval: Duration::from_millis(250),
            pretend_missing: std::env::var("LBSCOPE_PRETEND_MISSING")
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
            stack_map_entries: std::env::var("LBSCOPE_STACK_MAP_ENTRIES")
                .ok()
                .and_then(|s| s.parse().ok()),
            unneeded: Vec::new(),
            fold: false,
            fold_tgid: None,
            schedstat: false,
        }
    }
}

/// What only a recording reads: `sched_waking` marks the start of a wakeup, which the
/// Perfetto export draws; the analyzer and the model use the wakeup itself, and a migration
/// without a stack is told a wakeup's by the task's TASK_WAKING state.
pub const RECORDING_ONLY: &[&str] = &["sched_waking"];

/// What folded mode does without: the timer hook serves the streamed PELT sums only, and
/// nr_running is read at the switches, wakeups and migrations the folded handlers already
/// see, and the root PELT sums at the switches, where the kernel's tasks carry `se.cfs_rq`
/// (`rq_known`), the way to their run queue.
fn folded_unneeded(rq_known: bool) -> &'static [&'static str] {
    if rq_known {
        &[
            "hrtimer_expire_exit",
            "sched_update_nr_running_tp",
            "pelt_cfs_tp",
        ]
    } else {
        &["hrtimer_expire_exit"]
    }
}

/// State of one tracepoint after loading.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeState {
    /// Attached as tp_btf.
    TpBtf,
    /// Attached as raw_tp.
    RawTp,
    /// The kernel has no such tracepoint.
    Missing,
    /// It exists but did not load or attach.
    Failed(String),
    /// Not loaded: nothing in this run reads its records.
    NotNeeded,
}

/// What loaded: one entry per tracepoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// (tracepoint, state).
    pub tracepoints: Vec<(String, ProbeState)>,
    /// Whether /proc/kallsyms gave real addresses (needed to name migration stacks).
    pub kallsyms: bool,
    /// How the balancer hooks attached and the functions whose `struct lb_env` streams as
    /// Balance events, or why none does (every kind tried, with the kernel's refusal).
    pub balancer: Result<(HookKind, Vec<String>), String>,
}

impl ProbeReport {
    /// Names of the tracepoints that are attached.
    pub fn attached(&self) -> Vec<String> {
        self.tracepoints
            .iter()
            .filter(|(_, s)| matches!(s, ProbeState::TpBtf | ProbeState::RawTp))
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// A running live source. Dropping it stops the thread.
pub struct LiveSource {
    stop: Arc<AtomicU8>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// What loaded.
    pub report: ProbeReport,
}

impl LiveSource {
    /// Loads and attaches the programs and starts draining into `tx`. Returns once the
    /// programs are attached, so events of anything started afterwards are seen.
    pub fn start(cfg: LiveConfig, tx: SyncSender<SourceMsg>) -> Result<LiveSource, SourceError> {
        preflight()?;
        let stop = Arc::new(AtomicU8::new(RUNNING));
        let (ready_tx, ready_rx) = mpsc::channel();
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lbscope-live".into())
            .spawn(move || run(cfg, tx, stop2, ready_tx))
            .map_err(|e| SourceError::Load(format!("cannot start the collector thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(report)) => Ok(LiveSource {
                stop,
                thread: Some(thread),
                report,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(SourceError::Load(
                    "the collector thread died while loading".into(),
                ))
            }
        }
    }

    /// Asks the collector to stop without waiting; it drains what is left and sends
    /// [`SourceMsg::End`].
    pub fn stop_async(&self) {
        self.stop.fetch_max(DRAIN, Ordering::SeqCst);
    }

    /// Stops collecting; the thread drains what is left and sends [`SourceMsg::End`].
    pub fn stop(&mut self) {
        // Whoever stops without receiving may have stopped reading the channel: the
        // collector must not wait for room in it.
        self.stop.store(ABANDON, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LiveSource {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Checks what can be checked before touching BPF, so the error names the fix.
fn preflight() -> Result<(), SourceError> {
    if !has_bpf_caps() {
        return Err(SourceError::Privileges);
    }
    let btf = btf_path();
    if !std::path::Path::new(&btf).exists() {
        return Err(SourceError::NoBtf(btf));
    }
    Ok(())
}

/// Where the kernel's BTF is read (overridable for tests of the missing-BTF path).
pub fn btf_path() -> String {
    std::env::var("LBSCOPE_BTF").unwrap_or_else(|_| "/sys/kernel/btf/vmlinux".into())
}

/// Whether this process holds CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN).
pub fn has_bpf_caps() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const SYS_ADMIN: u64 = 1 << 21;
    const PERFMON: u64 = 1 << 38;
    const BPF: u64 = 1 << 39;
    eff & SYS_ADMIN != 0 || (eff & PERFMON != 0 && eff & BPF != 0)
}

/// Number of possible CPU ids (highest + 1), from sysfs; 1 if unreadable.
pub fn possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| crate::cpuset::CpuSet::parse_list(&s).ok())
        .and_then(|s| s.iter().last())
        .map_or(1, |c| c + 1)
}

/// What the kernel's BTF says the programs can use.
struct KernelBtf {
    /// Each of [`TRACEPOINTS`] and whether the kernel has it.
    present: Vec<(&'static str, bool)>,
    /// `struct sched_entity` has `cfs_rq` (group scheduling).
    rq_known: bool,
}

/// Which tracepoints the kernel has, from the `btf_trace_<name>` types in its BTF, and
/// whether its tasks know their run queue.
fn present_tracepoints(cfg: &LiveConfig) -> Result<KernelBtf, SourceError> {
    use libbpf_rs::btf::types::{Struct, Typedef};
    let path = btf_path();
    let btf = libbpf_rs::btf::Btf::from_path(&path)
        .map_err(|e| SourceError::Load(format!("cannot read kernel BTF at {path}: {e}")))?;
    let present = TRACEPOINTS
        .iter()
        .map(|tp| {
            let name = format!("btf_trace_{tp}");
            let present = btf.type_by_name::<Typedef<'_>>(&name).is_some()
                && !cfg.pretend_missing.iter().any(|m| m == tp);
            (*tp, present)
        })
        .collect();
    let rq_known = btf
        .type_by_name::<Struct<'_>>("sched_entity")
        .is_some_and(|s| s.iter().any(|m| m.name.is_some_and(|n| n == "cfs_rq")));
    Ok(KernelBtf { present, rq_known })
}

fn set_autoload(open: &mut OpenLbscopeSkel<'_>, tp: &str, btf_on: bool, raw_on: bool) {
    for mut prog in open.open_object_mut().progs_mut() {
        let Some(name) = prog.name().to_str().map(str::to_string) else {
            continue;
        };
        if name == format!("btf_{tp}") {
            prog.set_autoload(btf_on);
        } else if name == format!("raw_{tp}") {
            prog.set_autoload(raw_on);
        }
    }
}

/// The kernel's pid_max (pids are below it), 4194304 (its largest) if unreadable.
fn pid_max() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 22)
}

/// Opens, configures and loads the skeleton with one attach kind.
fn load<'o>(
    obj: &'o mut MaybeUninit<libbpf_rs::OpenObject>,
    cfg: &LiveConfig,
    present: &[(&'static str, bool)],
    raw: bool,
) -> Result<LbscopeSkel<'o>, SourceError> {
    let mut open = LbscopeSkelBuilder::default()
        .open(obj)
        .map_err(|e| SourceError::Load(format!("cannot open the BPF object: {e}")))?;
    let ro = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or_else(|| SourceError::Load("BPF object has no read-only data".into()))?;
    let nr_cpus = possible_cpus();
    ro.pelt_interval_ns = cfg.pelt_interval_ns;
    ro.mask_words = nr_cpus.div_ceil(64).clamp(1, 16) as u32;
    ro.ringbuf_size = u64::from(cfg.ringbuf_bytes);
    ro.wakeup_below_free = u64::from(cfg.ringbuf_bytes / 2);
    ro.fold = cfg.fold;
    // Staged records need the timer hook, which sends what a busy CPU holds at its tick.
    let timer = present
        .iter()
        .any(|(tp, ok)| *ok && *tp == "hrtimer_expire_exit")
        && !cfg.unneeded.contains(&"hrtimer_expire_exit");
    ro.staging = !cfg.fold && timer;
    ro.fold_nr_at_events = cfg.fold && cfg.unneeded.contains(&"sched_update_nr_running_tp");
    ro.fold_tgid = cfg.fold_tgid.unwrap_or(0);
    ro.nr_cpus = nr_cpus as i64;
    open.maps
        .events
        .set_max_entries(cfg.ringbuf_bytes)
        .map_err(|e| SourceError::Load(format!("bad ring buffer size: {e}")))?;
    if let Some(n) = cfg.stack_map_entries {
        open.maps
            .stacks
            .set_max_entries(n)
            .map_err(|e| SourceError::Load(format!("sizing the stack map: {e}")))?;
    }
    if cfg.fold {
        // One wait slot per possible pid (8 bytes each: 32 MiB at the largest pid_max).
        open.maps
            .waits
            .set_max_entries(pid_max())
            .map_err(|e| SourceError::Load(format!("sizing the wait table: {e}")))?;
    }
    for (tp, ok) in present {
        let on = *ok && !cfg.unneeded.contains(tp);
        set_autoload(&mut open, tp, on && !raw, on && raw);
    }
    open.load().map_err(|e| SourceError::Load(format!("{e}")))
}

fn run(
    mut cfg: LiveConfig,
    tx: SyncSender<SourceMsg>,
    stop: Arc<AtomicU8>,
    ready: Sender<Result<ProbeReport, SourceError>>,
) {
    let present = match present_tracepoints(&cfg) {
        Ok(k) => {
            if cfg.fold {
                cfg.unneeded.extend(folded_unneeded(k.rq_known));
            }
            k.present
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    if let Some((tp, _)) = present
        .iter()
        .find(|(tp, ok)| !ok && REQUIRED.contains(tp) && !cfg.unneeded.contains(tp))
    {
        let _ = ready.send(Err(SourceError::MissingTracepoint(tp.to_string())));
        return;
    }
    let kallsyms = kallsyms::Kallsyms::load().unwrap_or_default();
    // One object slot per attempt: a failed load keeps its slot borrowed.
    let mut first = MaybeUninit::uninit();
    let mut second = MaybeUninit::uninit();
    let first_raw = cfg.attach == AttachMode::RawTp;
    let loaded = match load(&mut first, &cfg, &present, first_raw) {
        Ok(s) => Ok((s, first_raw)),
        Err(e) if cfg.attach == AttachMode::Auto => load(&mut second, &cfg, &present, true)
            .map(|s| (s, true))
            .map_err(|e2| SourceError::Load(format!("tp_btf: {e}; raw_tp: {e2}"))),
        Err(e) => Err(e),
    };
    let (mut skel, raw) = match loaded {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    if let Err(e) = skel.attach() {
        let _ = ready.send(Err(SourceError::Load(format!(
            "attaching the tracepoints: {e}"
        ))));
        return;
    }
    let state = if raw {
        ProbeState::RawTp
    } else {
        ProbeState::TpBtf
    };
    let report = ProbeReport {
        tracepoints: present
            .iter()
            .map(|(tp, ok)| {
                let s = if cfg.unneeded.contains(tp) {
                    ProbeState::NotNeeded
                } else if *ok {
                    state.clone()
                } else {
                    ProbeState::Missing
                };
                (tp.to_string(), s)
            })
            .collect(),
        kallsyms: kallsyms.is_usable(),
        balancer: Err(String::new()),
    };
    // The balancer hooks are optional (lockdown refuses them on most distribution kernels)
    // unless --balancer-attach names a kind. One object slot per kind tried.
    let (mut fobj, mut kobj) = (MaybeUninit::uninit(), MaybeUninit::uninit());
    let (mut fslot, mut kslot) = (Some(&mut fobj), Some(&mut kobj));
    let chosen = match libbpf_rs::btf::Btf::from_path(btf_path()) {
        Ok(btf) => {
            let targets = hooks::Targets::new(&btf);
            attach::choose(cfg.balancer_attach, |kind| {
                let slot = match kind {
                    HookKind::Fentry => fslot.take(),
                    HookKind::Kprobe => kslot.take(),
                };
                let slot = slot.ok_or_else(|| format!("{} tried twice", kind.name()))?;
                hooks::load_streams(slot, &targets, kind)
            })
            .map_err(|r| r.to_string())
        }
        Err(e) => Err(format!("cannot read BTF: {e}")),
    };
    let (bskel, balancer) = match chosen {
        Ok((kind, (s, funcs))) => (Some(s), Ok((kind, funcs))),
        Err(e) if cfg.balancer_attach.forced() => {
            let name = match cfg.balancer_attach {
                attach::BalancerAttach::Fentry => "fentry",
                _ => "kprobe",
            };
            let _ = ready.send(Err(SourceError::BalancerRefused(name, e)));
            return;
        }
        Err(e) => (None, Err(e)),
    };
    let report = ProbeReport { balancer, ..report };
    drain(
        &skel,
        bskel.as_ref(),
        kallsyms,
        &cfg,
        &tx,
        &stop,
        report,
        ready,
    );
}

/// The poll loop: drain, decode, send; count lost records per CPU; finish with End.
#[allow(clippy::too_many_arguments)]
fn drain(
    skel: &LbscopeSkel<'_>,
    bskel: Option<&hooks::BalancerSkelRef<'_>>,
    kallsyms: kallsyms::Kallsyms,
    cfg: &LiveConfig,
    tx: &SyncSender<SourceMsg>,
    stop: &AtomicU8,
    report: ProbeReport,
    ready: Sender<Result<ProbeReport, SourceError>>,
) {
    let decoder = RefCell::new(decode::Decoder::new(kallsyms));
    let merge = RefCell::new(merge::Merge::new(2, possible_cpus()));
    let pool = BatchPool::new();
    let stacks = &skel.maps.stacks;
    let fetch = |id: u32| -> Option<Vec<u64>> {
        let v = stacks.lookup(&id.to_ne_bytes(), MapFlags::ANY).ok()??;
        let addrs: Vec<u64> = v
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
            .take_while(|a| *a != 0)
            .collect();
        Some(addrs)
    };
    // Each record's events go straight to its ring's and CPU's queue.
    let take = |ring: usize, data: &[u8]| {
        let cpu = decode::record_cpu(data).unwrap_or(0);
        let mut m = merge.borrow_mut();
        decoder
            .borrow_mut()
            .decode(data, &fetch, m.queue(ring, cpu));
        0
    };
    let mut builder = RingBufferBuilder::new();
    let added = builder.add(&skel.maps.events, |data: &[u8]| take(0, data));
    let added = added.and_then(|b| match bskel {
        Some(bs) => b.add(&bs.maps.balance_events, |data: &[u8]| take(1, data)),
        None => Ok(b),
    });
    let rb = match added.map(|_| ()).and_then(|()| builder.build()) {
        Ok(rb) => rb,
        Err(e) => {
            let _ = ready.send(Err(SourceError::Load(format!("ring buffer: {e}"))));
            return;
        }
    };
    let _ = ready.send(Ok(report));
    let mut objects = vec![skel.object()];
    objects.extend(bskel.map(|b| b.object()));
    let programs = losses::loaded(&objects);
    let mut lost_seen: Vec<u64> = Vec::new();
    let mut balancer_lost = 0u64;
    // The source's own events, queued by time with the kernel's.
    let mut own: Vec<Event> = Vec::new();
    // The first batch starts with these, ahead of any record whatever its time: folded mode's
    // opening Fold, and the start read of /proc/schedstat (the analyzer places each count
    // against the reads' times, once it has seen the start read).
    let mut first: Vec<Event> = Vec::new();
    // Folded histograms turn at every drain period (half an interval): each flush wakes both
    // threads and reads every process that ran, so flushing at a tenth of a second cost `top`
    // a fifth more CPU at `-i 1` (tests/bench/HISTORY.md).
    let fold_period_ns = u64::try_from(cfg.poll_interval.as_nanos()).unwrap_or(u64::MAX);
    let mut folder = cfg
        .fold
        .then(|| fold::Folder::new(clock::monotonic_ns(), &mut first));
    // The newest stamp among the source's own events so far (they queue in time order).
    let mut own_last = 0u64;
    let switch = cfg.schedstat.then(|| {
        let (s, msg) = schedstat::Switch::on();
        if let Some(m) = msg {
            send(tx, SourceMsg::Warning(m), stop);
        }
        first.extend(schedstat::read(false));
        s
    });
    loop {
        let stopping = stop.load(Ordering::SeqCst) != RUNNING;
        if stopping {
            if cfg.schedstat {
                own.extend(schedstat::read(true));
            }
            // Calls in progress finish and reach the ring buffer, and busy CPUs send what
            // they staged at their next tick.
            std::thread::sleep(STOP_SETTLE);
        }
        let _ = rb.poll(if stopping {
            Duration::ZERO
        } else {
            cfg.poll_interval
        });
        // Every record stamped HOLDBACK_NS before this read is in the ring buffers now.
        let before = clock::monotonic_ns();
        let _ = rb.consume();
        let now = clock::monotonic_ns();
        // What this drain releases: every event stamped up to here.
        let upto = if stopping {
            u64::MAX
        } else {
            before.saturating_sub(merge.borrow().holdback_ns)
        };
        if let Some(f) = folder.as_mut() {
            if stopping || f.due(now, fold_period_ns) {
                // Stamped at this drain's watermark, the Fold leaves with this drain's
                // records instead of waiting a drain period for the next.
                f.flush(skel, now, upto.clamp(own_last, now), &mut own);
            }
        }
        losses::lost_events(&skel.maps.lost, &mut lost_seen, now, &mut own);
        if let Some(n) = bskel
            .and_then(|b| b.maps.bss_data.as_deref())
            .map(|b| b.lost)
            .filter(|n| *n > balancer_lost)
        {
            // The balancer's ring buffer is one for all CPUs: its losses go on CPU 0.
            own.push(Event {
                ts_ns: now,
                cpu: 0,
                kind: EventKind::Lost {
                    count: n - balancer_lost,
                },
            });
            balancer_lost = n;
        }
        own.push(Event {
            ts_ns: now,
            cpu: 0,
            kind: EventKind::Clock,
        });
        own_last = now;
        // Batches of at most CHUNK events, each in a vector of that room (see `CHUNK`).
        let mut m = merge.borrow_mut();
        m.push_own(&mut own);
        let mut out = pool.take(CHUNK);
        out.append(&mut first);
        let mut sent = true;
        while !m.release(upto, &mut out, CHUNK) {
            let full = std::mem::replace(&mut out, pool.take(CHUNK));
            sent = send(tx, SourceMsg::Batch(Batch::pooled(full, &pool)), stop);
            if !sent {
                break;
            }
        }
        drop(m);
        if !sent || !send(tx, SourceMsg::Batch(Batch::pooled(out, &pool)), stop) || stopping {
            break;
        }
    }
    let m = merge.borrow();
    if m.late > 0 {
        send(
            tx,
            SourceMsg::Warning(format!(
                "{} records reached user space after records made later had been analysed \
                 (up to {:.1} ms late: CPUs held their staged records that long, as stalled \
                 vCPUs or nohz_full CPUs do); each was taken at the latest time already seen, \
                 and the wait grew to {} ms",
                m.late,
                m.late_max_ns as f64 / 1e6,
                m.holdback_ns / 1_000_000
            )),
            stop,
        );
    }
    drop(m);
    if let Some(w) = bskel.and_then(|b| losses::balancer_losses(b)) {
        send(tx, SourceMsg::Warning(w), stop);
    }
    if let Some(w) = losses::warning(&losses::counts(&programs)) {
        send(tx, SourceMsg::Warning(w), stop);
    }
    if let Some(m) = switch.and_then(schedstat::Switch::restore) {
        send(tx, SourceMsg::Warning(m), stop);
    }
    let malformed = decoder.borrow().malformed;
    if malformed > 0 {
        send(
            tx,
            SourceMsg::Warning(format!(
                "{malformed} ring-buffer records did not decode (a bug: please report it)"
            )),
            stop,
        );
    }
    send(tx, SourceMsg::End, stop);
}

/// How long the collector waits at the end before its last drain: more than a tick at 100 Hz
/// and the stage's age limit (bpf/lbscope.bpf.c, STAGE_AGE_NS).
const STOP_SETTLE: Duration = Duration::from_millis(20);

/// Collector states: running; stopping with everything delivered; stopping now.
const RUNNING: u8 = 0;
const DRAIN: u8 = 1;
const ABANDON: u8 = 2;

/// Sends `msg`, waiting for room while the consumer reads; gives up when the consumer is
/// gone or the source is abandoned. Returns whether it was sent.
fn send(tx: &SyncSender<SourceMsg>, mut msg: SourceMsg, stop: &AtomicU8) -> bool {
    // Waits of 1 ms doubling up to 16 ms: a consumer that pumps every quarter second (the
    // TUI's loop) costs a few wakeups, not one a millisecond.
    let mut wait = Duration::from_millis(1);
    loop {
        match tx.try_send(msg) {
            Ok(()) => return true,
            Err(mpsc::TrySendError::Disconnected(_)) => return false,
            Err(mpsc::TrySendError::Full(m)) => {
                if stop.load(Ordering::SeqCst) == ABANDON {
                    return false;
                }
                msg = m;
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_millis(16));
            }
        }
    }
}

#[cfg(test)]
mod drain_tests {
    use super::*;

    /// Half an interval, within 100 ms and 500 ms: the default 1 s interval drains every
    /// 500 ms, a short one no slower than it closes intervals, a long one no slower than
    /// twice a second.
    #[test]
    fn a_run_drains_every_half_interval_within_bounds() {
        let ms = |i_ms: u64| drain_period(i_ms * 1_000_000).as_millis();
        assert_eq!(ms(1_000), 500);
        assert_eq!(ms(600), 300);
        assert_eq!(ms(250), 125);
        assert_eq!(ms(100), 100);
        assert_eq!(ms(10), 100);
        assert_eq!(ms(10_000), 500);
    }
}
