/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wire ABI between bpf/lbscope.bpf.c and the Rust live source: record kinds and the
 * record layouts placed in the ring buffer. Rust sees these structs through the skeleton's
 * generated types (src/source/live/decode.rs), never through a hand copy.
 * Every record starts with struct lbs_hdr; records are 8-byte aligned.
 */
#ifndef LBSCOPE_H
#define LBSCOPE_H

#define LBS_COMM_LEN 16
/* Affinity words carried per task: 64 * 16 = 1024 CPUs (src/cpuset.rs MAX_CPUS). */
#define LBS_MASK_WORDS 16
#define LBS_MAX_CPUS 1024
#define LBS_STACK_DEPTH 32

enum lbs_kind {
	LBS_SWITCH = 1,
	LBS_WAKING = 2,
	LBS_WAKEUP = 3,
	LBS_WAKEUP_NEW = 4,
	LBS_MIGRATE = 5,
	LBS_NR_RUNNING = 6,
	LBS_PELT = 7,
	LBS_CAPACITY = 8,
	LBS_SOFTIRQ = 9,
	LBS_NUMA = 10,
	LBS_TASK = 11,
	LBS_AFFINITY = 12,
	LBS_EXIT = 13,
	LBS_BALANCE = 14, /* from bpf/balancer.bpf.c's own ring buffer */
	LBS_BALANCE_CALL = 15, /* likewise */
	LBS_RT_CALL = 16, /* likewise */
	LBS_STAGED = 17, /* h.flags records of one CPU, each in an LBS_STAGE_SLOT-byte slot */
	LBS_SWITCH_NR = 18, /* staged only: an LBS_NR_RUNNING and the LBS_SWITCH after it */
	LBS_WAKEUP_NR = 19, /* staged only: an LBS_NR_RUNNING and the LBS_WAKEUP after it */
	LBS_SEARCH_RQ = 20, /* from bpf/balancer.bpf.c's own ring buffer */
};

/* A CPU's frequent small records (switch, wakeups, run-queue samples, softirq) are gathered
 * in a per-CPU buffer and reach the ring buffer LBS_STAGE_SLOTS at a time, as one
 * LBS_STAGED record: one reservation instead of one per record. */
enum lbs_stage {
	LBS_STAGE_SLOT = 48,
	LBS_STAGE_SLOTS = 32,
};

/* lbs_migrate.flags */
enum lbs_migrate_flags {
	LBS_MF_STOPPER = 1,	  /* current is the stopper thread migration/N */
	LBS_MF_HARDIRQ = 2,	  /* reserved: hardirq context (not observable here) */
	LBS_MF_SCHED_SOFTIRQ = 4, /* inside SCHED_SOFTIRQ on this CPU */
	LBS_MF_IN_EXECVE = 8,	  /* p->in_execve */
	LBS_MF_CURRENT_IDLE = 16, /* current is the idle task */
	LBS_MF_WAKING = 32,	  /* the task is TASK_WAKING: a wakeup places it */
	LBS_MF_NO_STACK = 64,	  /* no stack taken: LBS_MF_WAKING names the reason */
	LBS_MF_INLINE_STACK = 128, /* the record is an lbs_migrate_frames: the stack is inline */
};


/* lbs_numa.op */
enum lbs_numa_op {
	LBS_NUMA_MOVE = 0,
	LBS_NUMA_SWAP = 1,
	LBS_NUMA_STICK = 2,
};

struct lbs_hdr {
	__u64 ts;
	__u16 kind;
	__u16 flags;
	__u32 cpu;
};

struct lbs_switch {
	struct lbs_hdr h;
	__u32 prev_pid;
	__u32 next_pid;
	__u32 prev_state;
	__u32 pad;
};

/* LBS_WAKING (a = prev_cpu), LBS_WAKEUP (a = target_cpu), LBS_WAKEUP_NEW (a = target_cpu) */
struct lbs_wake {
	struct lbs_hdr h;
	__u32 pid;
	__u32 tgid;
	__u32 a;
	__u32 pad;
};

struct lbs_migrate {
	struct lbs_hdr h;
	__u32 pid;
	__u32 src_cpu;
	__u32 dst_cpu;
	__s32 stack_id;
	__u32 flags;
	__u32 policy;
};

/* An LBS_MIGRATE record whose stack the stack map could not take: bpf_get_stackid refuses a
 * stack whose hash bucket holds another one (-EEXIST), for as long as the map lives, so every
 * later move by that code path would lose its stack. Its innermost frames come inline instead
 * (m.flags has LBS_MF_INLINE_STACK, m.stack_id is the error, nr_frames of ips are set). */
#define LBS_INLINE_FRAMES 48

struct lbs_migrate_frames {
	struct lbs_migrate m;
	__u32 nr_frames;
	__u32 pad;
	__u64 ips[LBS_INLINE_FRAMES];
};

/* LBS_NR_RUNNING (v0 = nr_running; v1 = the root cfs_rq's util_est | LBS_UTIL_EST_SENT, or 0
 * when not read; v2 = the CFS tasks the balancer counts, rq->cfs.h_nr_running, h_nr_runnable
 * since 6.14, | LBS_UTIL_EST_SENT, or 0 when not read), LBS_CAPACITY (v0 = cpu_capacity),
 * LBS_PELT (v0 = load_avg, v1 = runnable_avg, v2 = util_avg low 32 bits, util_est high) */
#define LBS_UTIL_EST_SENT 0x100000000ULL
struct lbs_rq {
	struct lbs_hdr h;
	__u32 rq_cpu;
	__u32 pad;
	__u64 v0;
	__u64 v1;
	__u64 v2;
};

/* LBS_SWITCH_NR, LBS_WAKEUP_NR: a run-queue length and the switch or wakeup that came right
 * after it in the same CPU's stage, on the same run queue (the dequeue of the task going to
 * sleep and its switch; the enqueue of a woken task and its wakeup), in one slot. User space
 * splits it back into the two records, each at its own time: h.ts is the run-queue length's,
 * h.ts + dt the second record's. The length's fields are those of lbs_rq: nr (v0), util_est
 * (v1, sent when h.flags has LBS_PAIR_UTIL_EST), cfs_h_nr (v2, sent when h.flags has
 * LBS_PAIR_CFS). The second record's: x, y, z = prev_pid, next_pid, prev_state of a switch
 * (its run queue is h.cpu's), pid, tgid, target_cpu of a wakeup (its run queue is
 * target_cpu's). */
enum lbs_pair_flags {
	LBS_PAIR_UTIL_EST = 1,
	LBS_PAIR_CFS = 2,
};

struct lbs_pair {
	struct lbs_hdr h;
	__u32 dt;
	__u32 nr;
	__u32 util_est;
	__u32 cfs_h_nr;
	__u32 x;
	__u32 y;
	__u32 z;
	__u32 pad;
};

/* LBS_SOFTIRQ: h.flags bit 0 = entry, bit 1 = idle */
struct lbs_softirq {
	struct lbs_hdr h;
};

struct lbs_numa {
	struct lbs_hdr h;
	__u32 op;
	__u32 pid;
	__s32 src_cpu;
	__u32 dst_pid;
	__s32 dst_cpu;
	__u32 pad;
};

/* LBS_TASK (h.flags bit 0 = exec), LBS_EXIT. cgroup: the id of the task's cgroup in the
 * unified (v2) hierarchy, its kernfs node id (the directory's inode number). */
struct lbs_task {
	struct lbs_hdr h;
	__u32 pid;
	__u32 tgid;
	char comm[LBS_COMM_LEN];
	__u64 cgroup;
};

struct lbs_affinity {
	struct lbs_hdr h;
	__u32 pid;
	__u32 nr_words;
	__u64 mask[LBS_MASK_WORDS];
};

/* LBS_BALANCE: the balancer's struct lb_env at the busiest-group search exit (pid 0, balanced
 * set when no busiest group was found) or at detach_task (pid of the task moved); or the
 * active-balance stopper's entry (h.flags has LBS_BAL_STOPPER, pid 0, only the CPUs set).
 * h.flags: where the pass runs (enum lbs_balance_origin), when LBS_BAL_ORIGIN_KNOWN.
 * idle: 0 CPU_IDLE, 1 not idle, 2 CPU_NEWLY_IDLE, whatever the kernel's own numbering;
 * migration_type: enum migration_type (0 load, 1 util, 2 task, 3 misfit). */
enum lbs_balance_origin {
	LBS_BAL_ORIGIN_KNOWN = 1, /* the origin hooks ran: no other bit means the CPU's own pass */
	LBS_BAL_NOHZ = 2, /* inside a nohz idle balance (the balancer softirq serving a kick) */
	LBS_BAL_STOPPER = 4, /* inside active_load_balance_cpu_stop */
};

struct lbs_balance {
	struct lbs_hdr h;
	__u32 level;
	__u32 sd_weight;
	__u32 idle;
	__u32 migration_type;
	__s64 imbalance;
	__s32 dst_cpu;
	__s32 src_cpu;
	__u32 pid;
	__u32 balanced;
	/* The search is a retry without CPUs whose tasks were all pinned (LBF_ALL_PINNED). */
	__u32 redo;
	/* A search's own length, entry to exit (ns, 0 when unknown or not a search): the kernel
	 * reads the CPUs one after another within it. */
	__u32 search_ns;
};

/* LBS_SEARCH_RQ: a CPU's run queue as a busiest-group search began, sent by that search for
 * a CPU of its span when these fields changed since the last search sent them (so a CPU the
 * search did not send has what the last one sent): what the kernel is about to read. The
 * root cfs_rq's PELT sums and util_est (as LBS_PELT has them), nr_running, the CFS task
 * count (as LBS_NR_RUNNING's v2), and idle: idle_cpu() (the idle task running, nothing
 * queued, no wakeup pending). */
struct lbs_search_rq {
	struct lbs_hdr h;
	__u32 rq_cpu;
	__u32 nr_running;
	__u32 cfs_h_nr;
	__u32 idle;
	__u64 load;
	__u64 runnable;
	__u32 util;
	__u32 util_est;
};

/* LBS_BALANCE_CALL: one call of sched_balance_rq (load_balance before 6.10) on one domain,
 * stamped at its entry. idle: as in lbs_balance; this_cpu: the CPU balanced for; moved: the
 * call's return value (ld_moved); failed: need_active_balance() was asked during the call,
 * which the kernel does exactly where it counts lb_failed; len_ns: entry to exit. */
struct lbs_balance_call {
	struct lbs_hdr h;
	__u32 level;
	__u32 sd_weight;
	__u32 idle;
	__u32 this_cpu;
	__u32 moved;
	__u32 failed;
	__u32 len_ns;
	__u32 pad;
};

/* LBS_RT_CALL: one call of the RT class's push or pull code, stamped at its entry. func:
 * 0 push_rt_task, 1 pull_rt_task, 2 rto_push_irq_work_func (enum lbs_rt_func); rq_cpu: the
 * cpu of the run queue it works on (a push's source, a pull's destination); len_ns: entry to
 * exit. */
enum lbs_rt_func {
	LBS_RT_PUSH = 0,
	LBS_RT_PULL = 1,
	LBS_RT_PUSH_IRQ_WORK = 2,
};

struct lbs_rt_call {
	struct lbs_hdr h;
	__u32 func;
	__u32 rq_cpu;
	__u32 len_ns;
	__u32 pad;
};

/* Folded run-queue latency (live --fold): the analyzer's own buckets, runqlat's log2
 * microsecond slots and log-linear nanosecond buckets (16 per power of two). Values from
 * 2^36 ns (68 s) on share the last bucket; max_ns stays exact. */
#define LBS_LOG2_SLOTS 26
#define LBS_FINE_SUB_BITS 4
#define LBS_FINE_MAX_OCTAVE 35
#define LBS_FINE_LEN ((LBS_FINE_MAX_OCTAVE - LBS_FINE_SUB_BITS + 2) << LBS_FINE_SUB_BITS)

struct lbs_hist {
	__u64 count;
	__u64 min_ns;
	__u64 max_ns;
	__u64 log2[LBS_LOG2_SLOTS];
	__u64 fine[LBS_FINE_LEN];
};

/* A process's folded run-queue latency, filled by every CPU: one atomic add per sample, at
 * bucket fine + slot (a sample's log-linear bucket plus its runqlat slot). Both only grow with
 * the latency, so each sum names one (bucket, slot) pair, which user space splits back into
 * the two histograms of struct lbs_hist: one cache line touched where two were. The counts
 * are 32-bit: an entry holds one per-process period's samples (at most 500 ms) before it is
 * taken out, and each read copies every process's entry out of the kernel, so half the bytes
 * are half that copy (2.2 KiB a process, not 4.4). */
#define LBS_PROC_BUCKETS (LBS_FINE_LEN + LBS_LOG2_SLOTS)

struct lbs_proc_hist {
	__u64 min_ns;
	__u64 max_ns;
	__u32 bucket[LBS_PROC_BUCKETS];
};

/* The fold's control word, written by user space only: the bank being filled, of the
 * per-CPU histograms and of the per-process maps alike (both turn at each flush). */
struct lbs_fold_ctl {
	__u32 bank;
};

/* Folded mode streams a task's first run on a CPU in each period of this length (ns), counted
 * from boot: where every thread runs stays known on a busy machine (uneven_spread), whatever
 * the flush period. */
#define LBS_FIRST_RUN_NS 100000000ULL

#endif /* LBSCOPE_H */
