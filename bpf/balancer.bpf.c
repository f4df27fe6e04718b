// SPDX-License-Identifier: GPL-2.0
/*
 * Balancer hooks: fentry programs on the load balancer's own functions, under their names
 * since 6.10 and before. They are loaded one by one, only where the kernel allows fentry
 * (not under lockdown=confidentiality), and only for names the kernel's BTF has.
 * Each counts its calls; `lbscope doctor` reports which load.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* One counter per hook, indexed as in src/source/live/hooks.rs HOOKS. */
__u64 calls[8] = {};

#define HOOK(fn, idx)                                                                        \
	SEC("fentry/" #fn) int BPF_PROG(hook_##fn)                                           \
	{                                                                                    \
		__sync_fetch_and_add(&calls[idx], 1);                                        \
		return 0;                                                                    \
	}

HOOK(sched_balance_rq, 0)
HOOK(load_balance, 1)
HOOK(sched_balance_find_src_group, 2)
HOOK(find_busiest_group, 3)
HOOK(sched_balance_newidle, 4)
HOOK(newidle_balance, 5)
HOOK(detach_task, 6)
HOOK(active_load_balance_cpu_stop, 7)
