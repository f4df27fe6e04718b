// SPDX-License-Identifier: GPL-2.0
/*
 * Balancer hooks on the load balancer's own functions, under their names since 6.10 and
 * before, in two sets that give the same records: fentry/fexit programs (lb_*, hook_*), which
 * need BPF trampolines and a BTF entry for the function, and kprobe/kretprobe programs
 * (kp_*, khook_*), which need a kallsyms symbol (a function the compiler did not inline).
 * User space loads one set (--balancer-attach). Both are refused under
 * lockdown=confidentiality.
 * The hook and khook programs count calls (`lbscope doctor` probes them one by one); the
 * others stream the balancer's decisions from struct lb_env (read with CO-RE in both sets) as
 * LBS_BALANCE records (lbscope.h) into this object's own ring buffer, which the live source
 * polls beside the tracepoints' one.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "lbscope.h"
#include "cfs.h"

char LICENSE[] SEC("license") = "GPL";

/* One counter per hook, indexed as in src/source/live/hooks.rs HOOKS. */
__u64 calls[11] = {};
/* Records the ring buffer could not take. */
__u64 lost = 0;
/* Set by user space once both origin hooks (the balancer softirq and the active-balance
 * stopper) are attached: only then does a record's origin say where its pass ran. Until then,
 * where user space will switch them on (origin_wanted, set before attaching), records are
 * dropped rather than sent without their origin. */
__u32 origin_on = 0;
__u32 origin_wanted = 0;

/* The per-CPU run queues, read at the balancer softirq's entry for the nohz kick it serves.
 * Weak: a kernel without the symbol still loads every other program. */
extern struct rq runqueues __ksym __weak;

/* Where the pass running on this CPU comes from (LBS_BAL_* bits), set and cleared by the
 * origin hooks below around the kernel's own code paths. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} origin SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} balance_events SEC(".maps");

#define HOOK(fn, idx)                                                                        \
	SEC("fentry/" #fn) int BPF_PROG(hook_##fn)                                           \
	{                                                                                    \
		__sync_fetch_and_add(&calls[idx], 1);                                        \
		return 0;                                                                    \
	}

#define KHOOK(fn, idx)                                                                       \
	SEC("kprobe/" #fn) int BPF_KPROBE(khook_##fn)                                        \
	{                                                                                    \
		__sync_fetch_and_add(&calls[idx], 1);                                        \
		return 0;                                                                    \
	}

#define HOOKS(fn, idx) HOOK(fn, idx) KHOOK(fn, idx)

HOOKS(sched_balance_rq, 0)
HOOKS(load_balance, 1)
HOOKS(sched_balance_find_src_group, 2)
HOOKS(find_busiest_group, 3)
HOOKS(sched_balance_newidle, 4)
HOOKS(newidle_balance, 5)
HOOKS(detach_task, 6)
HOOKS(active_load_balance_cpu_stop, 7)
HOOKS(push_rt_task, 8)
HOOKS(pull_rt_task, 9)
HOOKS(rto_push_irq_work_func, 10)

/* The kernel's idle type in the wire numbering: the enum was renumbered in 6.10. */
static __always_inline __u32 wire_idle(__u32 v)
{
	if (v == bpf_core_enum_value(enum cpu_idle_type, CPU_NEWLY_IDLE))
		return 2;
	if (v == bpf_core_enum_value(enum cpu_idle_type, CPU_IDLE))
		return 0;
	return 1;
}

/* The task running the active-balance stopper on this CPU, set at its entry: a pass carries
 * LBS_BAL_STOPPER only inside it, even where its exit went unseen (a kretprobe program is
 * skipped while another BPF program runs on the CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} stopper_task SEC(".maps");

/* The origin bits of the pass running here, with LBS_BAL_ORIGIN_KNOWN when they can be told. */
static __always_inline __u32 origin_flags(void)
{
	__u32 zero = 0, *o, bits;
	__u64 *t;

	if (!origin_on || !bpf_ksym_exists(&runqueues))
		return 0;
	o = bpf_map_lookup_elem(&origin, &zero);
	bits = o ? *o : 0;
	if (bits & LBS_BAL_STOPPER) {
		t = bpf_map_lookup_elem(&stopper_task, &zero);
		if (!t || *t != bpf_get_current_task())
			bits &= ~LBS_BAL_STOPPER;
	}
	return LBS_BAL_ORIGIN_KNOWN | bits;
}

/* When the busiest-group search running on this CPU started: the search reads every CPU's
 * statistics from its start on, so its record is stamped then, not at its exit (under QEMU's
 * emulation the search itself takes long enough for other CPUs to change meanwhile). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} search_start SEC(".maps");

/* Per CPU, what the last search that read it sent (LBS_SEARCH_RQ). The tracepoints' object
 * samples PELT (every few ms, or on a step), and a vCPU its host stops can hold a run-queue
 * change's record back: near a threshold the balancer and the records can fall on either
 * side. So each search sends, each stamped when read and before its own record, the run
 * queues of the span's CPUs that differ from what the latest-stamped search sent for them;
 * for the CPUs it does not send, the last ones sent are what it reads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LBS_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct lbs_search_rq);
} search_rq_sent SEC(".maps");

/* sd->span, the domain's CPUs (a flexible array at the end of struct sched_domain). */
struct sched_domain___span {
	unsigned long span[0];
};

struct span_walk {
	__u64 span; /* address of sd->span */
	__u64 ts; /* when the walk began */
	__u64 word;
	__u32 left; /* span CPUs not reached yet */
	__u32 cpu; /* the CPU running the search */
};

static long span_cpu(__u64 i, void *ctx)
{
	struct span_walk *w = ctx;
	__u32 cpu = i, key = cpu;
	struct lbs_search_rq now = {}, *last, *e;
	struct cfs_rq *cfs;
	struct rq *rq;
	bool later;

	if (w->left == 0)
		return 1;
	if ((cpu & 63) == 0 &&
	    bpf_probe_read_kernel(&w->word, sizeof(w->word), (void *)(w->span + (cpu >> 6) * 8)))
		return 1;
	if (!(w->word & (1ULL << (cpu & 63))))
		return 0;
	w->left -= 1;
	rq = bpf_per_cpu_ptr(&runqueues, cpu);
	last = bpf_map_lookup_elem(&search_rq_sent, &key);
	if (!rq || !last)
		return 0;
	cfs = &rq->cfs;
	now.rq_cpu = cpu;
	now.nr_running = BPF_CORE_READ(rq, nr_running);
	now.cfs_h_nr = cfs_h_nr(false, cfs);
	/* idle_cpu(): the idle task running, nothing queued, no wakeup queued for the CPU. */
	now.idle = now.nr_running == 0 && BPF_CORE_READ(rq, curr) == BPF_CORE_READ(rq, idle);
	if (now.idle && bpf_core_field_exists(rq->ttwu_pending) && BPF_CORE_READ(rq, ttwu_pending))
		now.idle = 0;
	now.load = BPF_CORE_READ(cfs, avg.load_avg);
	now.runnable = BPF_CORE_READ(cfs, avg.runnable_avg);
	now.util = BPF_CORE_READ(cfs, avg.util_avg);
	now.util_est = cfs_util_est(false, cfs);
	/* Another search may have read this CPU since this walk began and sent it already (this
	 * vCPU stopped meanwhile, in emulation): what it sent may be newer than this reading, so
	 * it is not what the model holds when this one is read. Send it then. */
	later = last->h.kind && last->h.ts > w->ts;
	/* h.kind is set once sent: a slot never sent differs. */
	if (!later && last->h.kind && last->nr_running == now.nr_running &&
	    last->cfs_h_nr == now.cfs_h_nr && last->idle == now.idle && last->load == now.load &&
	    last->runnable == now.runnable && last->util == now.util &&
	    last->util_est == now.util_est)
		return 0;
	e = bpf_ringbuf_reserve(&balance_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	/* Stamped when read: a vCPU stopped in the walk does not date a later state earlier. */
	now.h.ts = bpf_ktime_get_ns();
	now.h.kind = LBS_SEARCH_RQ;
	now.h.cpu = w->cpu;
	/* The last one sent is the newest. */
	if (!last->h.kind || now.h.ts > last->h.ts)
		*last = now;
	*e = now;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Sends the run queues of the CPUs `env`'s search is about to read (see search_rq_sent),
 * each stamped when read; the caller stamps the search's start after. */
static __always_inline void search_rq_snapshot(struct lb_env *env)
{
	struct sched_domain *sd = BPF_CORE_READ(env, sd);
	struct span_walk w = {};

	if (!sd || !bpf_ksym_exists(&runqueues) || (origin_wanted && !origin_on))
		return;
	w.span = (__u64)sd + bpf_core_field_offset(struct sched_domain___span, span);
	w.left = BPF_CORE_READ(sd, span_weight);
	w.ts = bpf_ktime_get_ns();
	w.cpu = bpf_get_smp_processor_id();
	bpf_loop(LBS_MAX_CPUS, span_cpu, &w, 0);
}

static __always_inline void search_entry(struct lb_env *env)
{
	__u32 zero = 0;
	__u64 *t = bpf_map_lookup_elem(&search_start, &zero);

	search_rq_snapshot(env);
	if (t)
		*t = bpf_ktime_get_ns();
}

/* A zeroed LBS_BALANCE record stamped `ts`, with this CPU and the pass's origin; NULL when
 * records are held back until the origin hooks are on, or the ring buffer is full (counted). */
static __always_inline struct lbs_balance *balance_record(__u64 ts)
{
	struct lbs_balance *e;

	if (origin_wanted && !origin_on)
		return NULL;
	e = bpf_ringbuf_reserve(&balance_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->h.ts = ts;
	e->h.kind = LBS_BALANCE;
	e->h.flags = origin_flags();
	e->h.cpu = bpf_get_smp_processor_id();
	return e;
}

static __always_inline void emit_at(struct lb_env *env, __u32 pid, __u32 balanced, __u64 ts,
				    __u64 len)
{
	struct lbs_balance *e = balance_record(ts);

	if (!e)
		return;
	e->level = BPF_CORE_READ(env, sd, level);
	e->sd_weight = BPF_CORE_READ(env, sd, span_weight);
	e->idle = wire_idle(BPF_CORE_READ(env, idle));
	e->migration_type = BPF_CORE_READ(env, migration_type);
	e->imbalance = BPF_CORE_READ(env, imbalance);
	e->dst_cpu = BPF_CORE_READ(env, dst_cpu);
	e->src_cpu = BPF_CORE_READ(env, src_cpu);
	e->pid = pid;
	e->balanced = balanced;
	/* LBF_ALL_PINNED (0x01 in 6.1 through 6.18) is still set when sched_balance_rq goes back
	 * to redo its search without the CPUs whose tasks could not move to dst_cpu. */
	e->redo = pid == 0 && (BPF_CORE_READ(env, flags) & 0x01);
	e->search_ns = len > 0xffffffff ? 0xffffffff : len;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void emit(struct lb_env *env, __u32 pid, __u32 balanced)
{
	emit_at(env, pid, balanced, bpf_ktime_get_ns(), 0);
}

/* A search's record, stamped at the search's start (now when the entry was not seen). */
static __always_inline void emit_search(struct lb_env *env, __u32 balanced)
{
	__u32 zero = 0;
	__u64 now = bpf_ktime_get_ns(), *t = bpf_map_lookup_elem(&search_start, &zero);
	__u64 ts = t && *t && *t <= now ? *t : now;

	if (t)
		*t = 0;
	emit_at(env, 0, balanced, ts, now - ts);
}

/* The busiest-group search returns NULL when the domain is balanced. */
SEC("fentry/sched_balance_find_src_group")
int BPF_PROG(lb_search_new_entry, struct lb_env *env)
{
	search_entry(env);
	return 0;
}

SEC("fexit/sched_balance_find_src_group")
int BPF_PROG(lb_search_new, struct lb_env *env, struct sched_group *ret)
{
	emit_search(env, ret == NULL);
	return 0;
}

SEC("fentry/find_busiest_group")
int BPF_PROG(lb_search_old_entry, struct lb_env *env)
{
	search_entry(env);
	return 0;
}

SEC("fexit/find_busiest_group")
int BPF_PROG(lb_search_old, struct lb_env *env, struct sched_group *ret)
{
	emit_search(env, ret == NULL);
	return 0;
}

/* The balancer call in progress on this CPU: its entry time and whether it went through the
 * failed branch. Calls do not nest on a CPU (newly idle ones run with interrupts off, the
 * others in the balancer softirq). */
struct lb_call {
	__u64 entry;
	__u32 failed;
	/* The call's arguments, kept at entry for a kretprobe's exit (which does not see
	 * them): this_cpu, idle, sd. */
	__s32 this_cpu;
	__u32 idle;
	__u32 pad;
	__u64 sd;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_call);
} call_state SEC(".maps");

static __always_inline struct lb_call *call_entry(void)
{
	__u32 zero = 0;
	struct lb_call *c = bpf_map_lookup_elem(&call_state, &zero);

	if (c) {
		c->entry = bpf_ktime_get_ns();
		c->failed = 0;
	}
	return c;
}

static __always_inline void call_exit(int this_cpu, struct sched_domain *sd, __u32 idle, int ret)
{
	__u32 zero = 0;
	struct lb_call *c = bpf_map_lookup_elem(&call_state, &zero);
	struct lbs_balance_call *e;
	__u64 now = bpf_ktime_get_ns(), len;

	if (!c || !c->entry || c->entry > now)
		return;
	if (origin_wanted && !origin_on) {
		c->entry = 0;
		return;
	}
	e = bpf_ringbuf_reserve(&balance_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		c->entry = 0;
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	len = now - c->entry;
	e->h.ts = c->entry;
	e->h.kind = LBS_BALANCE_CALL;
	e->h.flags = origin_flags();
	e->h.cpu = bpf_get_smp_processor_id();
	e->level = BPF_CORE_READ(sd, level);
	e->sd_weight = BPF_CORE_READ(sd, span_weight);
	e->idle = wire_idle(idle);
	e->this_cpu = this_cpu;
	e->moved = ret > 0 ? ret : 0;
	e->failed = c->failed;
	e->len_ns = len > 0xffffffff ? 0xffffffff : len;
	c->entry = 0;
	bpf_ringbuf_submit(e, 0);
}

/* The balancer proper, under both names: one record per call, at its exit. */
SEC("fentry/sched_balance_rq")
int BPF_PROG(lb_call_new_entry)
{
	call_entry();
	return 0;
}

SEC("fexit/sched_balance_rq")
int BPF_PROG(lb_call_new, int this_cpu, struct rq *this_rq, struct sched_domain *sd,
	     enum cpu_idle_type idle, int *continue_balancing, int ret)
{
	call_exit(this_cpu, sd, idle, ret);
	return 0;
}

SEC("fentry/load_balance")
int BPF_PROG(lb_call_old_entry)
{
	call_entry();
	return 0;
}

SEC("fexit/load_balance")
int BPF_PROG(lb_call_old, int this_cpu, struct rq *this_rq, struct sched_domain *sd,
	     enum cpu_idle_type idle, int *continue_balancing, int ret)
{
	call_exit(this_cpu, sd, idle, ret);
	return 0;
}

/* Asked only in the branch of the call that counts lb_failed (nothing moved, tasks not all
 * pinned), and again only after an active balance was started there. */
SEC("fentry/need_active_balance")
int BPF_PROG(lb_call_failed)
{
	__u32 zero = 0;
	struct lb_call *c = bpf_map_lookup_elem(&call_state, &zero);

	if (c && c->entry)
		c->failed = 1;
	return 0;
}

/* A task the balancer moves (periodic, nohz or newidle pass). */
SEC("fentry/detach_task")
int BPF_PROG(lb_detach, struct task_struct *p, struct lb_env *env)
{
	emit(env, BPF_CORE_READ(p, pid), 0);
	return 0;
}

/* Sets or clears an origin bit. Bits are set only once every origin hook is attached
 * (origin_on): an entry seen while its exit's program was still being attached would leave
 * its bit set for good (under QEMU's emulation, attaching takes seconds). */
static __always_inline void origin_set(__u32 bit, int on)
{
	__u32 zero = 0, *o = bpf_map_lookup_elem(&origin, &zero);

	if (!o)
		return;
	if (!on)
		*o &= ~bit;
	else if (origin_on)
		*o |= bit;
}

/* The balancer softirq (run_rebalance_domains, sched_balance_softirq since 6.10). It first
 * serves a nohz kick: when this_rq->nohz_idle_balance holds kick flags and the CPU is idle
 * (idle_balance), nohz_idle_balance() balances every idle CPU's domains, this one's last,
 * and the softirq's own periodic pass is skipped; otherwise it runs the periodic pass. So
 * every pass of this softirq is a nohz idle balance exactly when those two hold at entry. */
static __always_inline void softirq_entry(void)
{
	struct rq *rq;
	__u32 kick;
	__u8 idle;

	if (!bpf_ksym_exists(&runqueues))
		return;
	rq = bpf_this_cpu_ptr(&runqueues);
	kick = BPF_CORE_READ(rq, nohz_idle_balance);
	idle = BPF_CORE_READ(rq, idle_balance);
	origin_set(LBS_BAL_NOHZ, kick && idle);
}

/* Entry and exit of the balancer softirq under each of its names. */
#define SOFTIRQ_ORIGIN(fn, name)                                                             \
	SEC("fentry/" #fn) int BPF_PROG(lb_softirq_##name)                                   \
	{                                                                                    \
		softirq_entry();                                                             \
		return 0;                                                                    \
	}                                                                                    \
	SEC("fexit/" #fn) int BPF_PROG(lb_softirq_##name##_exit)                             \
	{                                                                                    \
		origin_set(LBS_BAL_NOHZ, 0);                                                 \
		return 0;                                                                    \
	}

SOFTIRQ_ORIGIN(sched_balance_softirq, new)
SOFTIRQ_ORIGIN(run_rebalance_domains, old)

/* Active balance: the stopper on the busiest CPU pushes one task to rq->push_cpu. Its entry
 * is streamed (pid 0, not a search) so that its migration pairs even where detach_task is
 * inlined; passes inside it carry LBS_BAL_STOPPER. */
static __always_inline void active_entry(void *data)
{
	struct rq *busiest = data;
	struct lbs_balance *e;
	__u32 zero = 0;
	__u64 *t = bpf_map_lookup_elem(&stopper_task, &zero);

	if (t)
		*t = bpf_get_current_task();
	origin_set(LBS_BAL_STOPPER, 1);
	e = balance_record(bpf_ktime_get_ns());
	if (!e)
		return;
	e->dst_cpu = BPF_CORE_READ(busiest, push_cpu);
	e->src_cpu = BPF_CORE_READ(busiest, cpu);
	bpf_ringbuf_submit(e, 0);
}

SEC("fentry/active_load_balance_cpu_stop")
int BPF_PROG(lb_active, void *data)
{
	active_entry(data);
	return 0;
}

SEC("fexit/active_load_balance_cpu_stop")
int BPF_PROG(lb_active_exit)
{
	origin_set(LBS_BAL_STOPPER, 0);
	return 0;
}

/*
 * The kprobe set. A kretprobe sees the return value but not the arguments, so the search's
 * entry keeps its struct lb_env pointer and start time in a per-CPU stack of frames, each
 * with the stack pointer at entry; the exit takes the newest frame whose stack pointer lies
 * just below its own (the return address and the return trampoline's slot: 8-16 bytes on
 * x86-64), dropping newer ones left by exits that never ran. A search does not nest on one
 * CPU (it runs with interrupts or bottom halves off), but a kprobe program is skipped when
 * another runs on the CPU (or a map operation from user space holds bpf_prog_active), so an
 * entry or an exit can go missing: a missing exit leaves a frame that the check drops, a
 * missing entry leaves the exit without a frame, and its record is not sent (counted); a
 * frame older than any search is dropped too.
 */
#define FRAMES 4
#define FRAME_SP_MAX 64

struct search_frame {
	__u64 env;
	__u64 ts;
	__u64 sp;
};

struct search_frames {
	__u32 depth;
	__u32 pad;
	struct search_frame f[FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct search_frames);
} frames SEC(".maps");

/* Search exits with no frame of theirs (their entry was skipped), and entries beyond FRAMES. */
__u64 unpaired = 0;
/* Set by user space once every program is attached: a search entered before its exit's
 * program was attached would leave a frame no exit takes. */
__u32 attached = 0;
/* A frame older than this belongs to no running search (one takes microseconds). */
#define FRAME_MAX_AGE_NS 1000000000ULL

static __always_inline void frame_push(__u64 env, __u64 sp, __u64 ts)
{
	__u32 zero = 0, d;
	struct search_frames *s = bpf_map_lookup_elem(&frames, &zero);

	if (!s || !attached)
		return;
	d = s->depth;
	if (d >= FRAMES) {
		/* Full of frames whose exits never ran: start again. */
		__sync_fetch_and_add(&unpaired, d);
		d = 0;
	}
	s->f[d & (FRAMES - 1)].env = env;
	s->f[d & (FRAMES - 1)].ts = ts;
	s->f[d & (FRAMES - 1)].sp = sp;
	s->depth = d + 1;
}

/* The frame of the search returning with stack pointer `sp`, popped; 0 when there is none. */
static __always_inline int frame_pop(__u64 sp, struct search_frame *out)
{
	__u32 zero = 0, i;
	struct search_frames *s = bpf_map_lookup_elem(&frames, &zero);

	if (!s)
		return 0;
	for (i = 0; i < FRAMES; i++) {
		__u32 d = s->depth;
		struct search_frame *f;

		if (d == 0)
			break;
		d -= 1;
		f = &s->f[d & (FRAMES - 1)];
		s->depth = d;
		if (f->sp < sp && sp - f->sp <= FRAME_SP_MAX &&
		    bpf_ktime_get_ns() - f->ts < FRAME_MAX_AGE_NS) {
			*out = *f;
			return 1;
		}
		/* A newer frame whose exit never ran. */
		__sync_fetch_and_add(&unpaired, 1);
	}
	__sync_fetch_and_add(&unpaired, 1);
	return 0;
}

static __always_inline void kp_search_exit(struct pt_regs *ctx, int balanced)
{
	struct search_frame f;
	__u64 now;

	if (!frame_pop(PT_REGS_SP(ctx), &f))
		return;
	now = bpf_ktime_get_ns();
	if (f.ts > now)
		f.ts = now;
	emit_at((struct lb_env *)f.env, 0, balanced, f.ts, now - f.ts);
}

SEC("kprobe/sched_balance_find_src_group")
int BPF_KPROBE(kp_search_new_entry, struct lb_env *env)
{
	if (attached)
		search_rq_snapshot(env);
	frame_push((__u64)env, PT_REGS_SP(ctx), bpf_ktime_get_ns());
	return 0;
}

SEC("kretprobe/sched_balance_find_src_group")
int BPF_KRETPROBE(kp_search_new, struct sched_group *ret)
{
	kp_search_exit(ctx, ret == NULL);
	return 0;
}

SEC("kprobe/find_busiest_group")
int BPF_KPROBE(kp_search_old_entry, struct lb_env *env)
{
	if (attached)
		search_rq_snapshot(env);
	frame_push((__u64)env, PT_REGS_SP(ctx), bpf_ktime_get_ns());
	return 0;
}

SEC("kretprobe/find_busiest_group")
int BPF_KRETPROBE(kp_search_old, struct sched_group *ret)
{
	kp_search_exit(ctx, ret == NULL);
	return 0;
}

/* The balancer proper by kprobe: the entry keeps the arguments for the exit. A call whose
 * entry was skipped (another BPF program held the CPU) is not sent; one whose exit was
 * skipped is overwritten by the next entry. */
static __always_inline void kp_call_entry(int this_cpu, struct sched_domain *sd, __u32 idle)
{
	struct lb_call *c = call_entry();

	if (c) {
		c->this_cpu = this_cpu;
		c->idle = idle;
		c->sd = (__u64)sd;
	}
}

static __always_inline void kp_call_exit(int ret)
{
	__u32 zero = 0;
	struct lb_call *c = bpf_map_lookup_elem(&call_state, &zero);

	if (c && c->entry)
		call_exit(c->this_cpu, (struct sched_domain *)c->sd, c->idle, ret);
}

SEC("kprobe/sched_balance_rq")
int BPF_KPROBE(kp_call_new_entry, int this_cpu, struct rq *this_rq, struct sched_domain *sd,
	       enum cpu_idle_type idle)
{
	kp_call_entry(this_cpu, sd, idle);
	return 0;
}

SEC("kretprobe/sched_balance_rq")
int BPF_KRETPROBE(kp_call_new, int ret)
{
	kp_call_exit(ret);
	return 0;
}

SEC("kprobe/load_balance")
int BPF_KPROBE(kp_call_old_entry, int this_cpu, struct rq *this_rq, struct sched_domain *sd,
	       enum cpu_idle_type idle)
{
	kp_call_entry(this_cpu, sd, idle);
	return 0;
}

SEC("kretprobe/load_balance")
int BPF_KRETPROBE(kp_call_old, int ret)
{
	kp_call_exit(ret);
	return 0;
}

SEC("kprobe/need_active_balance")
int BPF_KPROBE(kp_call_failed)
{
	__u32 zero = 0;
	struct lb_call *c = bpf_map_lookup_elem(&call_state, &zero);

	if (c && c->entry)
		c->failed = 1;
	return 0;
}

SEC("kprobe/detach_task")
int BPF_KPROBE(kp_detach, struct task_struct *p, struct lb_env *env)
{
	emit(env, BPF_CORE_READ(p, pid), 0);
	return 0;
}

#define KP_SOFTIRQ_ORIGIN(fn, name)                                                          \
	SEC("kprobe/" #fn) int BPF_KPROBE(kp_softirq_##name)                                 \
	{                                                                                    \
		softirq_entry();                                                             \
		return 0;                                                                    \
	}                                                                                    \
	SEC("kretprobe/" #fn) int BPF_KRETPROBE(kp_softirq_##name##_exit)                    \
	{                                                                                    \
		origin_set(LBS_BAL_NOHZ, 0);                                                 \
		return 0;                                                                    \
	}

KP_SOFTIRQ_ORIGIN(sched_balance_softirq, new)
KP_SOFTIRQ_ORIGIN(run_rebalance_domains, old)

SEC("kprobe/active_load_balance_cpu_stop")
int BPF_KPROBE(kp_active, void *data)
{
	active_entry(data);
	return 0;
}

SEC("kretprobe/active_load_balance_cpu_stop")
int BPF_KRETPROBE(kp_active_exit)
{
	origin_set(LBS_BAL_STOPPER, 0);
	return 0;
}

/*
 * The RT class's own push and pull code: push_rt_task (a push from its rq), pull_rt_task (a
 * pull into its rq, or with RT_PUSH_IPI the request that overloaded CPUs push) and
 * rto_push_irq_work_func (the irq work serving that request on this CPU). One LBS_RT_CALL
 * record per call, stamped at its entry with its length: a migration made on this CPU inside
 * it is the RT class's push or pull, whatever its stack says. The calls nest (the irq work
 * calls push_rt_task) but a function does not nest in itself on one CPU (each runs with the
 * rq lock held and interrupts off), so each keeps its own slot.
 */
struct rt_slots {
	__u64 entry[3];
	__u32 rq_cpu[3];
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rt_slots);
} rt_state SEC(".maps");

static __always_inline void rt_entry(__u32 func, __u32 rq_cpu)
{
	__u32 zero = 0;
	struct rt_slots *s = bpf_map_lookup_elem(&rt_state, &zero);

	if (!s || func > 2)
		return;
	s->entry[func] = bpf_ktime_get_ns();
	s->rq_cpu[func] = rq_cpu;
}

static __always_inline void rt_exit(__u32 func)
{
	__u32 zero = 0;
	struct rt_slots *s = bpf_map_lookup_elem(&rt_state, &zero);
	struct lbs_rt_call *e;
	__u64 now = bpf_ktime_get_ns(), entry, len;

	if (!s || func > 2)
		return;
	entry = s->entry[func];
	s->entry[func] = 0;
	/* An exit whose entry went unseen (attached in between, or a skipped kprobe). */
	if (!entry || entry > now)
		return;
	e = bpf_ringbuf_reserve(&balance_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	len = now - entry;
	e->h.ts = entry;
	e->h.kind = LBS_RT_CALL;
	e->h.cpu = bpf_get_smp_processor_id();
	e->func = func;
	e->rq_cpu = s->rq_cpu[func];
	e->len_ns = len > 0xffffffff ? 0xffffffff : len;
	bpf_ringbuf_submit(e, 0);
}

SEC("fentry/push_rt_task")
int BPF_PROG(rt_push_entry, struct rq *rq)
{
	rt_entry(LBS_RT_PUSH, BPF_CORE_READ(rq, cpu));
	return 0;
}

SEC("fexit/push_rt_task")
int BPF_PROG(rt_push_exit)
{
	rt_exit(LBS_RT_PUSH);
	return 0;
}

SEC("fentry/pull_rt_task")
int BPF_PROG(rt_pull_entry, struct rq *this_rq)
{
	rt_entry(LBS_RT_PULL, BPF_CORE_READ(this_rq, cpu));
	return 0;
}

SEC("fexit/pull_rt_task")
int BPF_PROG(rt_pull_exit)
{
	rt_exit(LBS_RT_PULL);
	return 0;
}

SEC("fentry/rto_push_irq_work_func")
int BPF_PROG(rt_irq_work_entry)
{
	rt_entry(LBS_RT_PUSH_IRQ_WORK, bpf_get_smp_processor_id());
	return 0;
}

SEC("fexit/rto_push_irq_work_func")
int BPF_PROG(rt_irq_work_exit)
{
	rt_exit(LBS_RT_PUSH_IRQ_WORK);
	return 0;
}

/* The same by kprobe/kretprobe. */
SEC("kprobe/push_rt_task")
int BPF_KPROBE(kp_rt_push_entry, struct rq *rq)
{
	rt_entry(LBS_RT_PUSH, BPF_CORE_READ(rq, cpu));
	return 0;
}

SEC("kretprobe/push_rt_task")
int BPF_KRETPROBE(kp_rt_push_exit)
{
	rt_exit(LBS_RT_PUSH);
	return 0;
}

SEC("kprobe/pull_rt_task")
int BPF_KPROBE(kp_rt_pull_entry, struct rq *this_rq)
{
	rt_entry(LBS_RT_PULL, BPF_CORE_READ(this_rq, cpu));
	return 0;
}

SEC("kretprobe/pull_rt_task")
int BPF_KRETPROBE(kp_rt_pull_exit)
{
	rt_exit(LBS_RT_PULL);
	return 0;
}

SEC("kprobe/rto_push_irq_work_func")
int BPF_KPROBE(kp_rt_irq_work_entry)
{
	rt_entry(LBS_RT_PUSH_IRQ_WORK, bpf_get_smp_processor_id());
	return 0;
}

SEC("kretprobe/rto_push_irq_work_func")
int BPF_KRETPROBE(kp_rt_irq_work_exit)
{
	rt_exit(LBS_RT_PUSH_IRQ_WORK);
	return 0;
}
