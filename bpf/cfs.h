/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What both BPF objects read of a CPU's root cfs_rq across kernel releases: the CFS task
 * count the balancer uses and util_est, with the older layouts as CO-RE flavors. Include
 * after vmlinux.h and the libbpf headers.
 */
#ifndef LBSCOPE_CFS_H
#define LBSCOPE_CFS_H

/* p->field, CO-RE relocated either way: a direct load where p is a BTF-typed pointer (tp_btf),
 * a probe read where it is not (raw_tp, kprobes). `btf` is a constant in every program. */
#define RD(btf, p, field) ((btf) ? (p)->field : BPF_CORE_READ(p, field))

/* cfs_rq->avg.util_est before 6.9: a struct whose first member is `enqueued`. */
struct util_est___old {
	unsigned int enqueued;
	unsigned int ewma;
};
struct sched_avg___old {
	struct util_est___old util_est;
};
struct cfs_rq___old {
	struct sched_avg___old avg;
};

/* The root cfs_rq's count of CFS tasks before 6.12.37 and 6.14 (h_nr_queued and h_nr_runnable
 * since). */
struct cfs_rq___h_nr_running {
	unsigned int h_nr_running;
};

/* The running kernel's release, as libbpf reads it from uname (patch level capped at 255). */
extern int LINUX_KERNEL_VERSION __kconfig;
#define LBS_KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + ((c) > 255 ? 255 : (c)))

/* The CFS tasks the balancer counts on this run queue (update_sg_lb_stats' sum_h_nr_running):
 * h_nr_runnable (queued less delayed dequeues) since 6.14, where the balancer reads it;
 * h_nr_queued on 6.12.37 and later 6.12 releases, which carry the new fields but whose
 * balancer still counts the delayed tasks (a lab guest of 6.12.117 found a CPU holding one
 * runnable and one delayed task imbalanced, which it does only for two tasks); h_nr_running
 * before. */
static __always_inline __u32 cfs_h_nr(const bool btf, struct cfs_rq *cfs)
{
	struct cfs_rq___h_nr_running *old = (void *)cfs;

	if (bpf_core_field_exists(cfs->h_nr_runnable) &&
	    LINUX_KERNEL_VERSION >= LBS_KERNEL_VERSION(6, 14, 0))
		return RD(btf, cfs, h_nr_runnable);
	if (bpf_core_field_exists(cfs->h_nr_queued))
		return RD(btf, cfs, h_nr_queued);
	return BPF_CORE_READ(old, h_nr_running);
}

/* The root cfs_rq's estimated utilization (UTIL_AVG_UNCHANGED cleared), either layout. */
static __always_inline __u32 cfs_util_est(const bool btf, struct cfs_rq *cfs)
{
	struct cfs_rq___old *old = (void *)cfs;
	__u32 est;

	if (bpf_core_field_exists(old->avg.util_est.enqueued))
		est = BPF_CORE_READ(old, avg.util_est.enqueued);
	else
		est = RD(btf, cfs, avg.util_est);
	return est & 0x7fffffff;
}

#endif
