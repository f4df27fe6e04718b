// SPDX-License-Identifier: GPL-2.0
/*
 * lbscope's tracepoint programs: stream what the analyzer needs as compact records (see
 * lbscope.h) into one ring buffer, take the kernel stack of every migration, and count what
 * the ring buffer could not take, per CPU.
 *
 * Every tracepoint has two entry points, tp_btf/<name> and raw_tp/<name>, sharing one handler
 * inlined into each with a constant `btf`: under tp_btf the arguments are typed kernel pointers
 * and fields are read with plain loads (RD); under raw_tp they are plain numbers and every read
 * goes through bpf_probe_read_kernel (BPF_CORE_READ), a helper call each. User space autoloads
 * one set (tp_btf first, raw_tp as the fallback).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "lbscope.h"
#include "cfs.h"

char LICENSE[] SEC("license") = "GPL";

#ifndef EEXIST
#define EEXIST 17 /* bpf_get_stackid: the stack's bucket holds another stack */
#endif

#define SCHED_SOFTIRQ 7
/* Fair scheduling policies (include/uapi/linux/sched.h). */
#define SCHED_NORMAL 0
#define SCHED_BATCH 3
#define SCHED_IDLE 5
#define PF_KTHREAD 0x00200000
#define PF_EXITING 0x00000004
#define TASK_WAKING 0x00000200

/* Set by user space before load. */
const volatile __u64 pelt_interval_ns = 4000000;
const volatile __u32 mask_words = 1; /* cpumask words to compare and send */
/* Free space (bytes) under which a submit wakes the consumer instead of waiting for its poll. */
const volatile __u64 wakeup_below_free = 1 << 20;
const volatile __u64 ringbuf_size = 16 << 20;
/* Frequent small records go through the per-CPU stage (streaming, with the timer hook that
 * sends what a busy CPU holds; user space sets it). */
const volatile bool staging = false;
/* Folded mode (live --fold): run-queue latency folded into histograms here, switches streamed
 * only at idle transitions, wakeups only while some CPU may be idle, nr_running only when it
 * crosses 0/1/2 or at most every nr_sample_ns per CPU otherwise. fold_tgid: fold only this
 * process's samples (0: all). nr_cpus: possible CPUs, for the busy count. */
const volatile bool fold = false;
/* Folded mode without the nr_running program (user space sets it when the kernel's tasks
 * carry se.cfs_rq): each run queue's count is read where the switch, wakeup and migration
 * handlers already run, instead of at every enqueue and dequeue. */
const volatile bool fold_nr_at_events = false;
const volatile __u32 fold_tgid = 0;
const volatile __u64 nr_sample_ns = 1000000;
const volatile __s64 nr_cpus = 1;

/* Make the record types part of the object's BTF so the skeleton generates Rust types. */
struct lbs_switch _lbs_switch = {};
struct lbs_wake _lbs_wake = {};
struct lbs_migrate _lbs_migrate = {};
struct lbs_migrate_frames _lbs_migrate_frames = {};
struct lbs_rq _lbs_rq = {};
struct lbs_pair _lbs_pair = {};
struct lbs_softirq _lbs_softirq = {};
struct lbs_numa _lbs_numa = {};
struct lbs_task _lbs_task = {};
struct lbs_affinity _lbs_affinity = {};
struct lbs_balance _lbs_balance = {};
struct lbs_balance_call _lbs_balance_call = {};
struct lbs_rt_call _lbs_rt_call = {};
struct lbs_search_rq _lbs_search_rq = {};
struct lbs_hist _lbs_hist = {};
struct lbs_proc_hist _lbs_proc_hist = {};
struct lbs_fold_ctl _lbs_fold_ctl = {};
enum lbs_kind _lbs_kind = 0;
enum lbs_migrate_flags _lbs_migrate_flags = 0;
enum lbs_numa_op _lbs_numa_op = 0;
enum lbs_balance_origin _lbs_balance_origin = 0;
enum lbs_rt_func _lbs_rt_func = 0;
enum lbs_stage _lbs_stage = 0;
enum lbs_pair_flags _lbs_pair_flags = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LBS_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* Tasks already announced to user space, with a hash of their allowed CPUs. */
struct known_task {
	__u32 tgid;
	__u32 pad;
	__u64 mask_hash;
	/* When it was announced: a record another CPU stamped earlier announces it again. */
	__u64 ts;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct known_task);
} known SEC(".maps");

/* Per-CPU context: inside SCHED_SOFTIRQ, the pid the last switch on this CPU left, and the
 * records this CPU submitted (for submit()'s fill checks). */
struct cpu_ctx {
	__u32 in_sched_softirq;
	__u32 last_prev_pid;
	__u32 submits;
	__u32 pad;
	/* SCHED_SOFTIRQ runs begun on this CPU, and the stack a migration of a fair task took
	 * in run `stack_run` with its tracepoint's arguments at `stack_ctx` (see h_migrate). */
	__u64 softirq_runs;
	__u64 stack_run;
	__u64 stack_ctx;
	__s64 stack_id;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_ctx);
} cpuctx SEC(".maps");

/* Per rq CPU: last PELT emission time, load and runnable sent, and last capacity sent; in
 * folded mode also the
 * newest nr_running, the last one sent and when, and whether the CPU runs a task (0 not seen
 * yet, 1 idle, 2 busy). Written under the rq's lock (nr_running) or on the CPU itself
 * (switch), which the kernel holds the lock for too. */
struct rq_state {
	__u64 last_pelt_ts;
	__u64 last_capacity;
	__u64 nr_sent_ts;
	__u32 nr_now;
	__u32 nr_sent;
	__u32 busy;
	__u32 pelt_load;
	__u32 pelt_runnable;
	/* The root cfs_rq's util_est as the last record that carried it said (streaming). */
	__u32 util_est_sent;
	/* The CPU's struct rq, as its nr_running and PELT tracepoints gave it (streaming): the
	 * timer hook reads it (lockdown refuses the `runqueues` symbol's address). */
	__u64 rq;
};

/* Whether a PELT sum moved by a step since it was last sent: by more than a quarter and more
 * than 64. Migrations attach or detach a task's whole load at once; the balancer sees such a
 * step at once, so it is sent without waiting for the interval. */
static __always_inline bool pelt_step(__u64 now, __u32 sent)
{
	__u64 hi = now > sent ? now : sent, d = now > sent ? now - sent : sent - now;

	return d > 64 && d * 4 > hi;
}

/* Whether `st`'s CPU has root PELT sums to send at `now`: pelt_interval_ns passed since the
 * last record that carried them, or one of them stepped. */
static __always_inline bool pelt_due(struct rq_state *st, __u64 now, __u64 load, __u64 runnable)
{
	return now - st->last_pelt_ts >= pelt_interval_ns || pelt_step(load, st->pelt_load) ||
	       pelt_step(runnable, st->pelt_runnable);
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LBS_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct rq_state);
} rqstate SEC(".maps");

/* Folded mode: when each waiting task became runnable (runqlat's start time), indexed by
 * pid, 0 when it is not waiting. User space sizes it to pid_max before loading: an array
 * slot is a plain load and store, where a hash costs a bucket lock and a free-list pop per
 * wakeup and a delete per switch, and task-local storage fails now and then in tracing
 * programs before 6.18 (a per-CPU busy count), which would lose samples. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} waits SEC(".maps");

/* Folded mode, per CPU: the tasks whose run on this CPU was streamed in the current first-run
 * period (LBS_FIRST_RUN_NS), direct-mapped by pid (pid << 32 | period + 1). A collision only
 * streams a task twice. */
#define SEEN_SLOTS 1024
struct seen_cache {
	__u64 slot[SEEN_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen_cache);
} seen SEC(".maps");

/* Folded latency per CPU, one entry per bank. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct lbs_hist);
} cpu_hist SEC(".maps");

/* Folded latency per process, one map per bank: user space reads and deletes the retired
 * bank's entries in batches while the programs fill the other's. A process past a map's room
 * counts per CPU only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct lbs_proc_hist);
} proc_hist0 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct lbs_proc_hist);
} proc_hist1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lbs_fold_ctl);
} fold_ctl SEC(".maps");

/* CPUs running a task (not idle) as sched_switch last saw them, kept by BPF alone. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} busy_cpus SEC(".maps");

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&lost, &zero);

	if (v)
		*v += 1;
}

/* A CPU's staged records, sent as one LBS_STAGED record (`h` and the used slots, which follow
 * it): when the slots are full, when the CPU goes idle, before a record that does not go
 * through the stage, and once the oldest is STAGE_AGE_NS old (checked at every staged record
 * and after each timer callback, so a busy CPU's wait at most a tick). `busy` is held while a
 * handler writes into the stage or sends it: a handler that interrupts it (a hardirq's, over
 * a softirq's, or on PREEMPT_RT a preempting task's) reserves its record directly instead,
 * ahead of the staged ones (user space merges by time). */
struct stage_buf {
	struct lbs_hdr h;
	__u64 slots[LBS_STAGE_SLOTS][LBS_STAGE_SLOT / 8];
	__u64 first_ts;
	__u32 n;
	__u32 pad;
	/* 64 bits: the compare-and-swap of BPF's v1 and v2 instruction sets. */
	__u64 busy;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stage_buf);
} stage SEC(".maps");

#define STAGE_AGE_NS 1000000ULL

static __always_inline __u64 wakeup_flags(void);

/* Sends what `b` holds (the caller holds `busy`). */
static __always_inline void stage_flush(struct stage_buf *b)
{
	__u32 n = b->n, zero = 0;
	__u64 *v, size;

	if (!n)
		return;
	b->n = 0;
	size = sizeof(b->h) + (__u64)n * LBS_STAGE_SLOT;
	/* The bound checked in the register the call takes. */
	barrier_var(size);
	if (size > sizeof(b->h) + sizeof(b->slots))
		return;
	b->h.ts = b->first_ts;
	b->h.kind = LBS_STAGED;
	b->h.flags = n;
	b->h.cpu = bpf_get_smp_processor_id();
	if (bpf_ringbuf_output(&events, &b->h, size, wakeup_flags())) {
		v = bpf_map_lookup_elem(&lost, &zero);
		if (v)
			*v += n;
	}
}

static __always_inline struct stage_buf *stage_get(void)
{
	__u32 zero = 0;

	return staging ? bpf_map_lookup_elem(&stage, &zero) : NULL;
}

/* Sends this CPU's staged records now (`always`), or once the oldest is STAGE_AGE_NS old. */
static __always_inline void stage_send(__u64 ts, bool always)
{
	struct stage_buf *b = stage_get();

	if (!b || !b->n || (!always && ts - b->first_ts < STAGE_AGE_NS))
		return;
	if (__sync_val_compare_and_swap(&b->busy, 0, 1))
		return;
	stage_flush(b);
	b->busy = 0;
}

/* Where a record goes: a stage slot (`b` set) or the ring buffer. */
struct rec_out {
	void *rec;
	struct stage_buf *b;
};

/*
 * Handlers read the clock first thing (ts), so the interval between two events does not
 * depend on how much work each handler did before reserving its record.
 */
static __always_inline void *reserve(__u64 size, __u16 kind, __u64 ts)
{
	struct lbs_hdr *h;

	/* What this CPU staged goes first: its records stay in their order. */
	stage_send(ts, true);
	h = bpf_ringbuf_reserve(&events, size, 0);

	if (!h) {
		count_lost();
		return NULL;
	}
	h->ts = ts;
	h->kind = kind;
	h->flags = 0;
	h->cpu = bpf_get_smp_processor_id();
	return h;
}

/* Records a CPU submits between two looks at the buffer's fill level. */
#define FILL_CHECK_EVERY 32

/*
 * Wake the consumer only when the buffer runs low; otherwise it drains on its own timer.
 * The fill level is looked at on every FILL_CHECK_EVERY-th record of a CPU, not on each: the
 * records in between are far fewer than the free space that triggers the wakeup.
 */
static __always_inline __u64 wakeup_flags(void)
{
	__u32 zero = 0;
	struct cpu_ctx *c = bpf_map_lookup_elem(&cpuctx, &zero);

	if (!c || ++c->submits % FILL_CHECK_EVERY == 0) {
		__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);

		if (ringbuf_size - avail < wakeup_below_free)
			return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void submit(void *rec)
{
	bpf_ringbuf_submit(rec, wakeup_flags());
}

/* A record of `kind` (at most LBS_STAGE_SLOT bytes) in this CPU's stage, or reserved in the
 * ring buffer where the stage is off or taken; NULL when neither has room. */
static __always_inline void *out_begin(struct rec_out *o, __u64 size, __u16 kind, __u64 ts)
{
	struct stage_buf *b = stage_get();
	struct lbs_hdr *h;

	o->b = NULL;
	/* Taken atomically: on PREEMPT_RT a softirq's handler can be preempted. */
	if (b && !__sync_val_compare_and_swap(&b->busy, 0, 1)) {
		if (b->n >= LBS_STAGE_SLOTS)
			stage_flush(b);
		if (!b->n)
			b->first_ts = ts;
		h = (void *)b->slots[b->n & (LBS_STAGE_SLOTS - 1)];
		h->ts = ts;
		h->kind = kind;
		h->flags = 0;
		h->cpu = bpf_get_smp_processor_id();
		o->b = b;
		o->rec = h;
		return h;
	}
	o->rec = reserve(size, kind, ts);
	return o->rec;
}

/* Releases a stage its caller holds (`busy`) after writing into it: sent now when `flush`
 * (the CPU goes idle), when full, or once its oldest record is STAGE_AGE_NS old. */
static __always_inline void stage_release(struct stage_buf *b, __u64 ts, bool flush)
{
	if (flush || b->n >= LBS_STAGE_SLOTS || ts - b->first_ts >= STAGE_AGE_NS)
		stage_flush(b);
	b->busy = 0;
}

/* Ends what out_begin started; `flush` as in stage_release. */
static __always_inline void out_end(struct rec_out *o, __u64 ts, bool flush)
{
	struct stage_buf *b = o->b;

	if (!b) {
		submit(o->rec);
		return;
	}
	b->n++;
	stage_release(b, ts, flush);
}

/*
 * A switch or a wakeup whose run queue's length was the last record this CPU staged (the
 * dequeue of the task going to sleep just before its switch, the enqueue of a woken task just
 * before its wakeup, under the same hold of the run queue's lock) takes that record's slot:
 * one LBS_SWITCH_NR or LBS_WAKEUP_NR record (bpf/lbscope.h) that user space splits back into
 * the two, each at its own time. Nothing comes between them in this CPU's records, so what
 * user space gets is what the two slots would have said. Returns whether it did; `flush` as
 * in out_end.
 */
static __always_inline bool stage_pair(__u64 ts, __u16 kind, __u32 rq_cpu, __u32 x, __u32 y,
				       __u32 z, bool flush)
{
	struct stage_buf *b = stage_get();
	__u64 v0, v1, v2, dt;
	struct lbs_pair *p;
	struct lbs_rq *r;
	__u32 n;

	if (!b || __sync_val_compare_and_swap(&b->busy, 0, 1))
		return false;
	n = b->n;
	if (n == 0 || n > LBS_STAGE_SLOTS)
		goto out;
	r = (void *)b->slots[(n - 1) & (LBS_STAGE_SLOTS - 1)];
	dt = ts - r->h.ts;
	if (r->h.kind != LBS_NR_RUNNING || r->rq_cpu != rq_cpu || dt > 0xffffffffULL)
		goto out;
	/* The two layouts share the slot: the length's fields are read before any is written. */
	v0 = r->v0;
	v1 = r->v1;
	v2 = r->v2;
	p = (void *)r;
	p->h.kind = kind;
	p->h.flags = (v1 & LBS_UTIL_EST_SENT ? LBS_PAIR_UTIL_EST : 0) |
		     (v2 & LBS_UTIL_EST_SENT ? LBS_PAIR_CFS : 0);
	p->dt = (__u32)dt;
	p->nr = (__u32)v0;
	p->util_est = (__u32)v1;
	p->cfs_h_nr = (__u32)v2;
	p->x = x;
	p->y = y;
	p->z = z;
	p->pad = 0;
	stage_release(b, ts, flush);
	return true;
out:
	b->busy = 0;
	return false;
}

static __always_inline __u32 task_cpu_of(const bool btf, struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return RD(btf, p, thread_info.cpu);
	return RD(btf, p, wake_cpu);
}

static __always_inline long task_state_of(const bool btf, struct task_struct *p)
{
	struct task_struct___old {
		long state;
	} __attribute__((preserve_access_index)) *old = (void *)p;

	if (bpf_core_field_exists(p->__state))
		return RD(btf, p, __state);
	return BPF_CORE_READ(old, state);
}

static __always_inline __u64 mask_hash_of(const bool btf, struct task_struct *p, __u64 *words)
{
	/* Through a probe read in both modes: the words are then read at a variable offset,
	 * which a typed pointer does not allow. */
	const struct cpumask *m;
	__u64 h = 1469598103934665603ULL;

	/* Up to 64 CPUs (one word), a typed pointer reads it with plain loads: this runs at
	 * every wakeup. */
	if (btf && mask_words == 1 && !words) {
		__u64 w = p->cpus_ptr->bits[0];

		return (h ^ w) * 1099511628211ULL;
	}
	m = BPF_CORE_READ(p, cpus_ptr);

	for (int i = 0; i < LBS_MASK_WORDS; i++) {
		__u64 w = 0;

		if (i >= mask_words)
			break;
		bpf_probe_read_kernel(&w, sizeof(w), &m->bits[i]);
		if (words)
			words[i] = w;
		h = (h ^ w) * 1099511628211ULL;
	}
	return h;
}

static __always_inline void emit_task(__u64 ts, struct task_struct *p, __u32 pid, __u32 tgid, __u16 flags)
{
	struct lbs_task *e = reserve(sizeof(*e), LBS_TASK, ts);

	if (!e)
		return;
	e->h.flags = flags;
	e->pid = pid;
	e->tgid = tgid;
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	e->cgroup = BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
	submit(e);
}

static __always_inline void emit_affinity(const bool btf, __u64 ts, struct task_struct *p, __u32 pid)
{
	struct lbs_affinity *e = reserve(sizeof(*e), LBS_AFFINITY, ts);

	if (!e)
		return;
	e->pid = pid;
	e->nr_words = mask_words;
	__builtin_memset(e->mask, 0, sizeof(e->mask));
	mask_hash_of(btf, p, e->mask);
	submit(e);
}

/*
 * Announce a task the first time it is seen, and its allowed CPUs whenever they change
 * (check_mask). Pid 0 (the idle tasks) is never announced, nor is an exiting task: it still
 * switches and wakes after sched_process_exit, and announcing it again would make user space
 * keep a task that is gone.
 */
static __always_inline void note_task(const bool btf, __u64 ts, struct task_struct *p,
				      bool check_mask)
{
	__u32 pid = RD(btf, p, pid);
	struct known_task *k, nk = {};

	if (!pid || (RD(btf, p, flags) & PF_EXITING))
		return;
	k = bpf_map_lookup_elem(&known, &pid);
	if (!k) {
		nk.tgid = RD(btf, p, tgid);
		nk.mask_hash = mask_hash_of(btf, p, NULL);
		nk.ts = ts;
		/* Announce first, remember after: another CPU that then finds the task known
		 * stamps its records at or after this announcement, or announces it again (two
		 * announcements are harmless). User space takes records in time order, so no event
		 * of a task comes before its name. */
		emit_task(ts, p, pid, nk.tgid, 0);
		emit_affinity(btf, ts, p, pid);
		bpf_map_update_elem(&known, &pid, &nk, BPF_ANY);
		return;
	}
	/* This handler began before another CPU announced the task, and its record would
	 * come first: the name goes ahead of it, with its time. */
	if (k->ts > ts)
		emit_task(ts, p, pid, k->tgid, 0);
	if (check_mask) {
		__u64 h = mask_hash_of(btf, p, NULL);

		if (h != k->mask_hash) {
			k->mask_hash = h;
			emit_affinity(btf, ts, p, pid);
		}
	}
}

/* floor(log2(v)) for v > 0. */
static __always_inline __u32 ilog2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/* The analyzer's log-linear bucket of v ns (src/analyze/hist.rs), capped at the last one. */
static __always_inline __u32 fine_index(__u64 v)
{
	__u32 oct;

	if (v < (1 << LBS_FINE_SUB_BITS))
		return v;
	if (v >> (LBS_FINE_MAX_OCTAVE + 1))
		return LBS_FINE_LEN - 1;
	oct = ilog2_u64(v);
	return ((oct - LBS_FINE_SUB_BITS + 1) << LBS_FINE_SUB_BITS) +
	       ((v >> (oct - LBS_FINE_SUB_BITS)) & ((1 << LBS_FINE_SUB_BITS) - 1));
}

/* runqlat's slot of a latency in microseconds. */
static __always_inline __u32 log2_slot(__u64 us)
{
	__u32 s;

	if (us < 2)
		return 0;
	s = ilog2_u64(us);
	return s < LBS_LOG2_SLOTS ? s : LBS_LOG2_SLOTS - 1;
}

/* A zeroed histogram, the initial value of a process's entry. */
struct lbs_proc_hist empty_proc_hist = {};

/* The minimum and maximum of a histogram; 0 in min_ns means none yet (no wait lasts 0 ns).
 * In a process's entry, shared by every CPU, a racing sample's may be missed. */
static __always_inline void min_max(__u64 *min_ns, __u64 *max_ns, __u64 ns)
{
	if (*min_ns == 0 || ns < *min_ns)
		*min_ns = ns;
	if (ns > *max_ns)
		*max_ns = ns;
}

/* Adds one sample to a CPU's histogram (this CPU's alone). */
static __always_inline void hist_add(struct lbs_hist *h, __u64 ns)
{
	/* 64-bit indices: checked and used in the same register, which verifiers before 6.2 need
	 * (a 32-bit index is zero-extended into a fresh copy for the access, its bound lost). */
	__u64 i = fine_index(ns), s = log2_slot(ns / 1000);

	barrier_var(i);
	barrier_var(s);
	if (i >= LBS_FINE_LEN || s >= LBS_LOG2_SLOTS)
		return;
	h->count++;
	h->log2[s]++;
	h->fine[i]++;
	min_max(&h->min_ns, &h->max_ns, ns);
}

/* Adds one sample to a process's histogram, which other CPUs add to at the same time: one
 * atomic add, at the bucket that names both the fine bucket and the slot (lbscope.h). */
static __always_inline void proc_hist_add(struct lbs_proc_hist *h, __u64 ns)
{
	__u64 k = (__u64)fine_index(ns) + log2_slot(ns / 1000);

	barrier_var(k);
	if (k >= LBS_PROC_BUCKETS)
		return;
	__sync_fetch_and_add(&h->bucket[k], 1);
	min_max(&h->min_ns, &h->max_ns, ns);
}

/* Adds one sample to the entry of `tgid` in a bank's per-process map, made at its first. */
static __always_inline void proc_sample(void *map, __u32 tgid, __u64 ns)
{
	struct lbs_proc_hist *p = bpf_map_lookup_elem(map, &tgid);

	if (!p) {
		bpf_map_update_elem(map, &tgid, &empty_proc_hist, BPF_NOEXIST);
		p = bpf_map_lookup_elem(map, &tgid);
	}
	if (p)
		proc_hist_add(p, ns);
}

/* One run-queue latency sample of a task of `tgid` that starts running on this CPU, into
 * the banks user space has the programs fill. */
static __always_inline void fold_sample(const struct lbs_fold_ctl *ctl, __u32 tgid, __u64 ns)
{
	__u32 key = ctl->bank & 1;
	struct lbs_hist *h;

	h = bpf_map_lookup_elem(&cpu_hist, &key);
	if (h)
		hist_add(h, ns);
	/* With one process folded, the per-CPU histograms are that process's. */
	if (fold_tgid)
		return;
	if (key)
		proc_sample(&proc_hist1, tgid, ns);
	else
		proc_sample(&proc_hist0, tgid, ns);
}

/* p became runnable at ts (woken, or preempted and still queued): runqlat's start time. */
static __always_inline void fold_wait(const bool btf, __u64 ts, struct task_struct *p, __u32 pid)
{
	__u64 *w;

	if (fold_tgid && RD(btf, p, tgid) != fold_tgid)
		return;
	w = bpf_map_lookup_elem(&waits, &pid);
	if (w)
		*w = ts;
}

/* When pid became runnable (0: not waiting); the wait is forgotten (it runs, or exits). */
static __always_inline __u64 fold_unwait(__u32 pid)
{
	__u64 *w = bpf_map_lookup_elem(&waits, &pid), t;

	if (!w)
		return 0;
	t = *w;
	*w = 0;
	return t;
}

/* Whether this is pid's first run on this CPU in the first-run period `epoch` (then noted). */
static __always_inline bool first_run(__u32 pid, __u32 epoch)
{
	__u32 zero = 0;
	struct seen_cache *c = bpf_map_lookup_elem(&seen, &zero);
	__u64 mark = ((__u64)pid << 32) | (epoch + 1);
	__u32 i = pid & (SEEN_SLOTS - 1);

	if (!c || c->slot[i] == mark)
		return false;
	c->slot[i] = mark;
	return true;
}

/* Whether some CPU may be idle: one not seen busy counts as idle. */
static __always_inline bool maybe_idle(void)
{
	__u32 zero = 0;
	__s64 *busy = bpf_map_lookup_elem(&busy_cpus, &zero);

	return !busy || *busy < nr_cpus;
}

static __always_inline int emit_rq_cpu(__u64 ts, __u32 cpu, __u16 kind, __u64 v0, __u64 v1,
				       __u64 v2)
{
	struct rec_out o;
	struct lbs_rq *e = out_begin(&o, sizeof(*e), kind, ts);

	if (!e)
		return 0;
	e->rq_cpu = cpu;
	e->pad = 0;
	e->v0 = v0;
	e->v1 = v1;
	e->v2 = v2;
	out_end(&o, ts, false);
	return 0;
}

static __always_inline __u32 nr_class(__u32 nr)
{
	return nr < 2 ? nr : 2;
}

static __always_inline void send_nr(__u64 ts, __u32 cpu, struct rq_state *st, __u32 nr)
{
	st->nr_sent = nr;
	st->nr_sent_ts = ts;
	emit_rq_cpu(ts, cpu, LBS_NR_RUNNING, nr, 0, 0);
}

/* Folded mode: `cpu`'s run queue holds `nr` tasks now; sent when it crossed 0/1/2 since the
 * last one sent, or moved above 2 and nr_sample_ns passed. */
static __always_inline void fold_nr_now(__u64 ts, __u32 cpu, struct rq_state *st, __u32 nr)
{
	st->nr_now = nr;
	if (nr == st->nr_sent ||
	    (nr_class(nr) == nr_class(st->nr_sent) && ts - st->nr_sent_ts < nr_sample_ns))
		return;
	send_nr(ts, cpu, st, nr);
}

/* fold_nr_now with `rq`'s count as it is, called with the run queue's lock held (a switch on
 * its CPU, a wakeup onto it, a migration off it), as the nr_running tracepoint is. */
static __always_inline void fold_nr(const bool btf, __u64 ts, struct rq *rq)
{
	__u32 cpu;
	struct rq_state *st;

	if (!rq)
		return;
	cpu = RD(btf, rq, cpu);
	st = bpf_map_lookup_elem(&rqstate, &cpu);
	if (st)
		fold_nr_now(ts, cpu, st, RD(btf, rq, nr_running));
}

/* The run queue task p is on (or, at a migration, leaving): its sched entity's cfs_rq's.
 * Every task has one, the idle tasks too (set_task_rq at each CPU change); NULL on kernels
 * without group scheduling, where user space keeps the nr_running program instead. */
static __always_inline struct rq *task_rq_of(const bool btf, struct task_struct *p)
{
	struct cfs_rq *cfs;

	if (!bpf_core_field_exists(p->se.cfs_rq))
		return NULL;
	cfs = RD(btf, p, se.cfs_rq);
	return cfs ? RD(btf, cfs, rq) : NULL;
}

static __always_inline int send_pelt(const bool btf, __u64 ts, __u64 now, struct rq *rq,
				     __u32 cpu, struct rq_state *st, __u64 load, __u64 runnable,
				     __u64 util);

/* Folded mode has no pelt_cfs_tp program: the root cfs_rq's PELT sums are read at each switch
 * of its CPU and sent as h_pelt_cfs sends them, once pelt_interval_ns passed or at once on a
 * step (a dequeue or a pull just done moved a task's whole load). */
static __always_inline void fold_pelt(const bool btf, __u64 ts, struct rq *rq, __u32 cpu,
				      struct rq_state *st)
{
	__u64 load = RD(btf, rq, cfs.avg.load_avg), runnable = RD(btf, rq, cfs.avg.runnable_avg);

	if (pelt_due(st, ts, load, runnable))
		send_pelt(btf, ts, ts, rq, cpu, st, load, runnable, RD(btf, rq, cfs.avg.util_avg));
}

/*
 * Folded mode's part of a switch: fold next's wait, start prev's if it stays queued, keep
 * the count of busy CPUs, send a sampled nr_running that is due. Returns whether the switch
 * itself is streamed: at idle transitions, and for a task's first run in a first-run period.
 */
static __always_inline bool fold_switch(const bool btf, __u64 ts, struct task_struct *prev,
					struct task_struct *next, __u32 prev_pid, __u32 next_pid,
					long state)
{
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0, busy = next_pid ? 2 : 1;
	struct lbs_fold_ctl *ctl;
	struct rq_state *st;
	bool first = false;
	__u64 since;
	__s64 *n;

	if (prev_pid && state == 0)
		fold_wait(btf, ts, prev, prev_pid);
	ctl = bpf_map_lookup_elem(&fold_ctl, &zero);
	if (next_pid && ctl) {
		since = fold_unwait(next_pid);
		if (since)
			fold_sample(ctl, RD(btf, next, tgid), ts > since ? ts - since : 0);
		/* A task's first run in each first-run period is streamed: where the threads run
		 * (uneven_spread) stays known on a busy machine. */
		first = first_run(next_pid, (__u32)(ts / LBS_FIRST_RUN_NS));
	}
	st = bpf_map_lookup_elem(&rqstate, &cpu);
	if (!st)
		return true;
	if (st->busy != busy) {
		n = bpf_map_lookup_elem(&busy_cpus, &zero);
		if (n && busy == 2)
			__sync_fetch_and_add(n, 1);
		else if (n && st->busy == 2)
			__sync_fetch_and_add(n, -1);
		st->busy = busy;
	}
	/* prev's dequeue (a sleep) and any pull of the newly idle balance are done by now; prev's
	 * run queue is this CPU's. */
	if (fold_nr_at_events) {
		struct rq *rq = task_rq_of(btf, prev);

		if (rq) {
			fold_nr_now(ts, cpu, st, RD(btf, rq, nr_running));
			fold_pelt(btf, ts, rq, cpu, st);
		}
	} else if (st->nr_now != st->nr_sent && ts - st->nr_sent_ts >= nr_sample_ns)
		send_nr(ts, cpu, st, st->nr_now);
	return !prev_pid || !next_pid || first;
}

static __always_inline void resync_cfs(const bool btf, __u64 ts, struct task_struct *p);

static __always_inline int h_switch(const bool btf, __u64 ts, __u64 *ctx)
{
	struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
	__u32 prev_pid, next_pid, zero = 0;
	struct lbs_switch *e;
	struct rec_out o;
	struct cpu_ctx *c;
	long state;

	/* runqlat's definition: prev stays queued iff its state is TASK_RUNNING now. */
	state = task_state_of(btf, prev);
	prev_pid = RD(btf, prev, pid);
	next_pid = RD(btf, next, pid);
	c = bpf_map_lookup_elem(&cpuctx, &zero);
	if (c)
		c->last_prev_pid = prev_pid;
	/* A folded switch that is not streamed names no task, so it announces none: each task's
	 * first run on a CPU in a first-run period is streamed, and announced here, before any later
	 * streamed switch of that CPU names it. Folded, allowed CPUs are checked only where a
	 * record names the task: a streamed wakeup, a streamed switch that preempts it. */
	if (fold && !fold_switch(btf, ts, prev, next, prev_pid, next_pid, state))
		return 0;
	note_task(btf, ts, next, false);
	if (state == 0)
		note_task(btf, ts, prev, true);
	else
		resync_cfs(btf, ts, prev);
	/* An idle CPU sends nothing more: what it staged goes now (here or in out_end). */
	if (stage_pair(ts, LBS_SWITCH_NR, bpf_get_smp_processor_id(), prev_pid, next_pid,
		       (__u32)state, next_pid == 0))
		return 0;
	e = out_begin(&o, sizeof(*e), LBS_SWITCH, ts);
	if (!e)
		return 0;
	e->prev_pid = prev_pid;
	e->next_pid = next_pid;
	e->prev_state = (__u32)state;
	e->pad = 0;
	out_end(&o, ts, next_pid == 0);
	return 0;
}

static __always_inline int emit_wake(const bool btf, __u64 ts, struct task_struct *p, __u16 kind,
				     __u32 a)
{
	__u32 pid = RD(btf, p, pid), tgid = RD(btf, p, tgid);
	struct lbs_wake *e;
	struct rec_out o;

	/* A wakeup's run queue is its target's. */
	if (kind == LBS_WAKEUP && stage_pair(ts, LBS_WAKEUP_NR, a, pid, tgid, a, false))
		return 0;
	e = out_begin(&o, sizeof(*e), kind, ts);
	if (!e)
		return 0;
	e->pid = pid;
	e->tgid = tgid;
	e->a = a;
	e->pad = 0;
	out_end(&o, ts, false);
	return 0;
}

static __always_inline int h_waking(const bool btf, __u64 ts, __u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];

	return emit_wake(btf, ts, p, LBS_WAKING, task_cpu_of(btf, p));
}

static __always_inline int h_wakeup(const bool btf, __u64 ts, __u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];

	if (fold) {
		fold_wait(btf, ts, p, RD(btf, p, pid));
		/* The enqueue just done, under the same hold of the target's lock. */
		if (fold_nr_at_events)
			fold_nr(btf, ts, task_rq_of(btf, p));
		/* Nothing to tell unless the task may wait beside an idle CPU (busy_wakeup): a
		 * wakeup that moves it is a migration, streamed anyway. A wakeup not streamed
		 * names no task, so its allowed CPUs wait for the next one streamed. */
		if (!maybe_idle())
			return 0;
	}
	note_task(btf, ts, p, true);
	resync_cfs(btf, ts, p);
	return emit_wake(btf, ts, p, LBS_WAKEUP, task_cpu_of(btf, p));
}

static __always_inline int h_wakeup_new(const bool btf, __u64 ts, __u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];

	note_task(btf, ts, p, true);
	if (fold) {
		fold_wait(btf, ts, p, RD(btf, p, pid));
		if (fold_nr_at_events)
			fold_nr(btf, ts, task_rq_of(btf, p));
	}
	return emit_wake(btf, ts, p, LBS_WAKEUP_NEW, task_cpu_of(btf, p));
}

static __always_inline int h_migrate(const bool btf, __u64 ts, __u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 dst = (__u32)ctx[1], src = task_cpu_of(btf, p);
	struct task_struct *cur = (void *)bpf_get_current_task();
	struct lbs_migrate *e;
	__u32 zero = 0, flags = 0, policy;
	struct cpu_ctx *c;
	long stack_id;
	char comm[16];
	bool waking, reuse;

	if (src == dst)
		return 0;
	waking = task_state_of(btf, p) == TASK_WAKING;
	/* A queued task is dequeued from src, under src's lock, before it is moved: src's count
	 * is already the new one (a woken task was not queued, and src's lock is not held). dst's
	 * follows at its next switch or wakeup. */
	if (fold_nr_at_events && !waking)
		fold_nr(btf, ts, task_rq_of(btf, p));
	/* A sleeping task's first sighting can be the move of its wakeup: name it first. */
	note_task(btf, ts, p, false);
	c = bpf_map_lookup_elem(&cpuctx, &zero);
	policy = RD(btf, p, policy);
	/* One balancer softirq run moves up to 32 tasks in one detach_tasks loop, each from the
	 * same call chain: a fair task's move in the run and at the stack depth (the address of
	 * the tracepoint's arguments) of the last walked one takes that walk's stack. A softirq
	 * does not nest; the interrupts that can land in one move RT tasks or wake (no walk). */
	reuse = c && c->in_sched_softirq &&
		(policy == SCHED_NORMAL || policy == SCHED_BATCH || policy == SCHED_IDLE);
	/* A task in TASK_WAKING is being placed by try_to_wake_up: the state alone says so
	 * (the kernel's own test in migrate_task_rq_fair), and a wakeup's stack walk is most
	 * of what migrations cost. Every other move is named by its stack. */
	if (waking) {
		flags |= LBS_MF_WAKING | LBS_MF_NO_STACK;
		stack_id = -1;
	} else if (reuse && c->stack_run == c->softirq_runs && c->stack_ctx == (__u64)ctx) {
		stack_id = c->stack_id;
	} else {
		stack_id = bpf_get_stackid(ctx, &stacks, 0);
		if (reuse && stack_id >= 0) {
			c->stack_run = c->softirq_runs;
			c->stack_ctx = (__u64)ctx;
			c->stack_id = stack_id;
		}
	}
	if (stack_id == -EEXIST) {
		/* The stack's bucket holds another stack: send the frames themselves. */
		struct lbs_migrate_frames *f = reserve(sizeof(*f), LBS_MIGRATE, ts);
		long n;

		if (!f)
			return 0;
		n = bpf_get_stack(ctx, f->ips, sizeof(f->ips), 0);
		f->nr_frames = n > 0 ? n / sizeof(__u64) : 0;
		f->pad = 0;
		flags |= LBS_MF_INLINE_STACK;
		e = &f->m;
	} else {
		e = reserve(sizeof(*e), LBS_MIGRATE, ts);
		if (!e)
			return 0;
	}
	e->pid = RD(btf, p, pid);
	e->src_cpu = src;
	e->dst_cpu = dst;
	e->stack_id = stack_id;
	e->policy = policy;
	if (BPF_CORE_READ_BITFIELD_PROBED(p, in_execve))
		flags |= LBS_MF_IN_EXECVE;
	if ((BPF_CORE_READ(cur, flags) & PF_KTHREAD)) {
		BPF_CORE_READ_STR_INTO(&comm, cur, comm);
		if (comm[0] == 'm' && comm[1] == 'i' && comm[2] == 'g' && comm[3] == 'r' &&
		    comm[8] == 'n' && comm[9] == '/')
			flags |= LBS_MF_STOPPER;
	}
	if (BPF_CORE_READ(cur, pid) == 0)
		flags |= LBS_MF_CURRENT_IDLE;
	if (c && c->in_sched_softirq)
		flags |= LBS_MF_SCHED_SOFTIRQ;
	e->flags = flags;
	submit(e);
	return 0;
}

static __always_inline int emit_rq(const bool btf, __u64 ts, struct rq *rq, __u16 kind, __u64 v0,
				   __u64 v1, __u64 v2)
{
	return emit_rq_cpu(ts, RD(btf, rq, cpu), kind, v0, v1, v2);
}


/* An nr_running record of `rq` (CPU `cpu`) with its root cfs_rq's util_est `est` and CFS task
 * count, noting `est` as sent. */
static __always_inline int send_nr_cfs(const bool btf, __u64 ts, struct rq *rq, __u32 cpu,
				       struct rq_state *st, __u32 nr, __u32 est)
{
	if (st)
		st->util_est_sent = est;
	return emit_rq_cpu(ts, cpu, LBS_NR_RUNNING, nr, LBS_UTIL_EST_SENT | est,
			   LBS_UTIL_EST_SENT | cfs_h_nr(btf, &rq->cfs));
}

/* A PELT record of `rq`'s root cfs_rq with its `load`, `runnable` and `util` sums, noting
 * what it carried as sent. */
static __always_inline int send_pelt(const bool btf, __u64 ts, __u64 now, struct rq *rq,
				     __u32 cpu, struct rq_state *st, __u64 load, __u64 runnable,
				     __u64 util)
{
	struct cfs_rq *cfs = &rq->cfs;
	__u32 est = cfs_util_est(btf, cfs);

	st->last_pelt_ts = now;
	st->pelt_load = load;
	st->pelt_runnable = runnable;
	st->util_est_sent = est;
	/* util_avg (at most 1024 << SCHED_CAPACITY_SHIFT) low, util_est high. */
	return emit_rq_cpu(ts, cpu, LBS_PELT, load, runnable, (util & 0xffffffff) | ((__u64)est << 32));
}

/* Sends `rq`'s root PELT sums again when its load_avg moved by more than a sixteenth (and 8)
 * since the last record that carried it. With task groups the root's load_avg is the sum of
 * group entities' loads, and reweight_entity rescales one at every share update (an enqueue,
 * a dequeue, a tick) just after the pelt_cfs_tp of that update, with no tracepoint of its
 * own: the balancer reads the new sum, the last record the old one (2s-smt-numa
 * group-imbalance: SMT siblings both overloaded, their loads apart by a hundred). Called
 * after those updates: at nr_running changes, at a switch to sleep and a wakeup, and after
 * each timer callback (h_timer_exit, for the tick's). */
static __always_inline void resync_load(const bool btf, __u64 ts, struct rq *rq, __u32 cpu,
					struct rq_state *st)
{
	__u64 load = RD(btf, rq, cfs.avg.load_avg), sent = st->pelt_load;
	__u64 hi = load > sent ? load : sent, d = load > sent ? load - sent : sent - load;

	if (d > 8 && d * 16 > hi)
		send_pelt(btf, ts, bpf_ktime_get_ns(), rq, cpu, st, load,
			  RD(btf, rq, cfs.avg.runnable_avg), RD(btf, rq, cfs.avg.util_avg));
}

static __always_inline int h_nr_running(const bool btf, __u64 ts, __u64 *ctx)
{
	struct rq *rq = (void *)ctx[0];
	__u32 nr = RD(btf, rq, nr_running), cpu, est;
	struct rq_state *st;

	if (fold) {
		/* Exact at 0/1/2 crossings (what idle-while-others-wait needs); larger values
		 * are sampled: sent at most every nr_sample_ns, a pending one at a later switch. */
		cpu = RD(btf, rq, cpu);
		st = bpf_map_lookup_elem(&rqstate, &cpu);
		if (st)
			fold_nr_now(ts, cpu, st, nr);
		return 0;
	}
	/* The root cfs_rq's util_est and CFS task count ride along: the kernel changes both at
	 * an enqueue or dequeue, just before nr_running, and no PELT update says so (the
	 * balancer reads them the moment after); the count tells RT and DL tasks apart. */
	cpu = RD(btf, rq, cpu);
	est = cfs_util_est(btf, &rq->cfs);
	st = bpf_map_lookup_elem(&rqstate, &cpu);
	send_nr_cfs(btf, ts, rq, cpu, st, nr, est);
	if (st) {
		st->rq = (__u64)rq;
		resync_load(btf, ts, rq, cpu, st);
	}
	return 0;
}

/* After a timer's callback on this CPU (streaming); also sends the records this CPU staged
 * STAGE_AGE_NS ago or more (a busy CPU's wait at most a tick). The tick's callback is
 * sched_tick, whose entity_tick reweights the group entities on the root cfs_rq right after the pelt_cfs_tp of
 * that update, and no event of this CPU may follow before another CPU's balancer reads the
 * new load (2s-smt-numa group-imbalance, 6.12: two overloaded SMT siblings 842 and 833 in the
 * records, 114 apart for the kernel). The run queue is the one this CPU's tracepoints gave. */
static __always_inline int h_timer_exit(__u64 ts)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct rq_state *st;

	if (fold)
		return 0;
	st = bpf_map_lookup_elem(&rqstate, &cpu);
	if (st && st->rq)
		resync_load(false, ts, (struct rq *)st->rq, cpu, st);
	/* A busy CPU's tick: what it staged a while ago goes now. */
	stage_send(ts, false);
	return 0;
}

/* Sends `cpu`'s nr_running record again, nr_running unchanged, when the root cfs_rq's
 * util_est moved since the last record that carried it. Since 6.12 a task that sleeps with
 * its dequeue delayed stays queued while util_est_dequeue takes its estimate off the run
 * queue, and waking there puts it back: the balancer's util (max(util_avg, util_est)) moves
 * with no nr_running change to say so (6.12.117 4node mixed: a CPU taken as overloaded by a
 * sleeping task's estimate where the kernel saw it with spare capacity). Called at a switch
 * whose previous task sleeps and at a wakeup, right after those changes, with that task:
 * its run queue is its sched entity's cfs_rq's (under lockdown the `runqueues` symbol's
 * address is refused). */
static __always_inline void resync_cfs(const bool btf, __u64 ts, struct task_struct *p)
{
	struct rq_state *st;
	struct rq *rq;
	__u32 est, cpu;

	if (fold)
		return;
	rq = task_rq_of(btf, p);
	if (!rq)
		return;
	cpu = RD(btf, rq, cpu);
	st = bpf_map_lookup_elem(&rqstate, &cpu);
	if (!st)
		return;
	est = cfs_util_est(btf, &rq->cfs);
	if (est != st->util_est_sent)
		send_nr_cfs(btf, ts, rq, cpu, st, RD(btf, rq, nr_running), est);
	resync_load(btf, ts, rq, cpu, st);
}

static __always_inline int h_pelt_cfs(const bool btf, __u64 ts, __u64 *ctx)
{
	struct cfs_rq *cfs = (void *)ctx[0];
	struct rq *rq = RD(btf, cfs, rq);
	struct rq_state *st;
	__u64 now, load, runnable;
	__u32 cpu;

	/* Only the root cfs_rq of each CPU: &rq->cfs. */
	if ((void *)cfs != (void *)rq + bpf_core_field_offset(struct rq, cfs))
		return 0;
	cpu = RD(btf, rq, cpu);
	st = bpf_map_lookup_elem(&rqstate, &cpu);
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	load = RD(btf, cfs, avg.load_avg);
	runnable = RD(btf, cfs, avg.runnable_avg);
	if (!pelt_due(st, now, load, runnable))
		return 0;
	st->rq = (__u64)rq;
	return send_pelt(btf, ts, now, rq, cpu, st, load, runnable, RD(btf, cfs, avg.util_avg));
}

static __always_inline int h_capacity(const bool btf, __u64 ts, __u64 *ctx)
{
	struct rq *rq = (void *)ctx[0];
	__u32 cpu = RD(btf, rq, cpu);
	__u64 cap = RD(btf, rq, cpu_capacity);
	struct rq_state *st = bpf_map_lookup_elem(&rqstate, &cpu);

	if (!st || st->last_capacity == cap)
		return 0;
	st->last_capacity = cap;
	return emit_rq(btf, ts, rq, LBS_CAPACITY, cap, 0, 0);
}

/* At the balancer softirq's entry (streaming): sends this CPU's root PELT sums as its balancer
 * is about to read them, when load of tasks that left it is still to be taken off. A task
 * that moves away at a wakeup (or dies) leaves its averages in cfs_rq->removed
 * (remove_entity_load_avg), and the next update of the cfs_rq's averages subtracts them with
 * no tracepoint of its own; the softirq makes that update on its own CPU first
 * (sched_balance_update_blocked_averages, update_blocked_averages before 6.10), then searches:
 * the local group's load is the one without them, the last record's the one with (6.12
 * 4node mixed: a CPU whose one task had just woken elsewhere, 980 in the records and a few
 * hundred for the kernel, taken as the busier side). Not when the CPU balances on behalf of
 * idle CPUs first (nohz_idle_balance: this one's averages are updated last, after searches
 * that read them as a remote CPU's). The kernel's sub_positive: never below 0. */
static __always_inline void settle_removed(__u64 ts)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 load, runnable, util, r;
	struct rq_state *st;
	struct rq *rq;

	if (fold)
		return;
	st = bpf_map_lookup_elem(&rqstate, &cpu);
	if (!st || !st->rq)
		return;
	rq = (struct rq *)st->rq;
	if (BPF_CORE_READ(rq, cfs.removed.nr) <= 0)
		return;
	/* The softirq's own test: a kick pending (nohz_idle_balance) on a CPU the tick found
	 * idle (idle_balance). */
	if (bpf_core_field_exists(rq->nohz_idle_balance) && BPF_CORE_READ(rq, nohz_idle_balance) &&
	    BPF_CORE_READ(rq, idle_balance))
		return;
	load = BPF_CORE_READ(rq, cfs.avg.load_avg);
	r = BPF_CORE_READ(rq, cfs.removed.load_avg);
	load = load > r ? load - r : 0;
	runnable = BPF_CORE_READ(rq, cfs.avg.runnable_avg);
	r = BPF_CORE_READ(rq, cfs.removed.runnable_avg);
	runnable = runnable > r ? runnable - r : 0;
	util = BPF_CORE_READ(rq, cfs.avg.util_avg);
	r = BPF_CORE_READ(rq, cfs.removed.util_avg);
	util = util > r ? util - r : 0;
	send_pelt(false, ts, bpf_ktime_get_ns(), rq, cpu, st, load, runnable, util);
}

static __always_inline int h_softirq(const bool btf, __u64 ts, __u64 *ctx, bool entry)
{
	__u32 vec = (__u32)ctx[0], zero = 0;
	struct lbs_softirq *e;
	struct cpu_ctx *c;
	bool idle = false;
	char comm[16];

	if (vec != SCHED_SOFTIRQ)
		return 0;
	c = bpf_map_lookup_elem(&cpuctx, &zero);
	if (!c)
		return 0;
	c->in_sched_softirq = entry;
	if (entry) {
		__u32 pid = bpf_get_current_pid_tgid();

		c->softirq_runs++;
		idle = pid == 0;
		/* In ksoftirqd the balancer's idle type follows the task ksoftirqd replaced. */
		if (!idle) {
			bpf_get_current_comm(&comm, sizeof(comm));
			if (comm[0] == 'k' && comm[1] == 's' && comm[2] == 'o' && comm[3] == 'f' &&
			    comm[8] == 'd' && c->last_prev_pid == 0)
				idle = true;
		}
	}
	e = reserve(sizeof(*e), LBS_SOFTIRQ, ts);
	if (!e)
		return 0;
	e->h.flags = (entry ? 1 : 0) | (idle ? 2 : 0);
	submit(e);
	if (entry)
		settle_removed(ts);
	return 0;
}

static __always_inline int emit_numa(const bool btf, __u64 ts, __u32 op, struct task_struct *src,
				     __s32 src_cpu, struct task_struct *dst, __s32 dst_cpu)
{
	struct lbs_numa *e = reserve(sizeof(*e), LBS_NUMA, ts);

	if (!e)
		return 0;
	e->op = op;
	e->pid = RD(btf, src, pid);
	e->src_cpu = src_cpu;
	e->dst_pid = dst ? RD(btf, dst, pid) : 0;
	e->dst_cpu = dst_cpu;
	submit(e);
	return 0;
}

static __always_inline int h_move_numa(const bool btf, __u64 ts, __u64 *ctx)
{
	return emit_numa(btf, ts, LBS_NUMA_MOVE, (void *)ctx[0], (__s32)ctx[1], NULL, (__s32)ctx[2]);
}

static __always_inline int h_swap_numa(const bool btf, __u64 ts, __u64 *ctx)
{
	return emit_numa(btf, ts, LBS_NUMA_SWAP, (void *)ctx[0], (__s32)ctx[1], (void *)ctx[2],
			 (__s32)ctx[3]);
}

static __always_inline int h_stick_numa(const bool btf, __u64 ts, __u64 *ctx)
{
	return emit_numa(btf, ts, LBS_NUMA_STICK, (void *)ctx[0], (__s32)ctx[1], (void *)ctx[2],
			 (__s32)ctx[3]);
}

static __always_inline int h_exec(const bool btf, __u64 ts, __u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 pid = RD(btf, p, pid);
	struct known_task nk = {};

	nk.tgid = RD(btf, p, tgid);
	nk.mask_hash = mask_hash_of(btf, p, NULL);
	nk.ts = ts;
	emit_task(ts, p, pid, nk.tgid, 1);
	bpf_map_update_elem(&known, &pid, &nk, BPF_ANY);
	return 0;
}

static __always_inline int h_exit(const bool btf, __u64 ts, __u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 pid = RD(btf, p, pid);
	struct lbs_task *e;

	bpf_map_delete_elem(&known, &pid);
	if (fold)
		fold_unwait(pid);
	e = reserve(sizeof(*e), LBS_EXIT, ts);
	if (!e)
		return 0;
	e->pid = pid;
	e->tgid = RD(btf, p, tgid);
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	e->cgroup = 0;
	submit(e);
	return 0;
}

/* Two entry points per tracepoint, each with its own constant `btf`; the Rust side autoloads
 * one of each pair. */
#define LBS_TP(tp, handler)                                                                  \
	SEC("tp_btf/" #tp) int btf_##tp(__u64 *ctx)                                          \
	{                                                                                    \
		__u64 ts = bpf_ktime_get_ns();                                               \
		const bool btf = true;                                                       \
		return handler;                                                              \
	}                                                                                    \
	SEC("raw_tp/" #tp) int raw_##tp(__u64 *ctx)                                          \
	{                                                                                    \
		__u64 ts = bpf_ktime_get_ns();                                               \
		const bool btf = false;                                                      \
		return handler;                                                              \
	}

LBS_TP(sched_switch, h_switch(btf, ts, ctx))
LBS_TP(sched_waking, h_waking(btf, ts, ctx))
LBS_TP(sched_wakeup, h_wakeup(btf, ts, ctx))
LBS_TP(sched_wakeup_new, h_wakeup_new(btf, ts, ctx))
LBS_TP(sched_migrate_task, h_migrate(btf, ts, ctx))
LBS_TP(sched_update_nr_running_tp, h_nr_running(btf, ts, ctx))
LBS_TP(pelt_cfs_tp, h_pelt_cfs(btf, ts, ctx))
LBS_TP(sched_cpu_capacity_tp, h_capacity(btf, ts, ctx))
LBS_TP(softirq_entry, h_softirq(btf, ts, ctx, true))
LBS_TP(softirq_exit, h_softirq(btf, ts, ctx, false))
LBS_TP(sched_move_numa, h_move_numa(btf, ts, ctx))
LBS_TP(sched_swap_numa, h_swap_numa(btf, ts, ctx))
LBS_TP(sched_stick_numa, h_stick_numa(btf, ts, ctx))
LBS_TP(sched_process_exec, h_exec(btf, ts, ctx))
LBS_TP(sched_process_exit, h_exit(btf, ts, ctx))
LBS_TP(hrtimer_expire_exit, h_timer_exit(ts))
