// SPDX-License-Identifier: GPL-2.0
/* tp_btf: the verifier types the tracepoint's arguments from vmlinux BTF
 * (btf_trace_sched_switch's prototype) and checks each pointer dereference against it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 switches;
__s32 last_next_pid;

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	switches++;
	last_next_pid = next->pid;
	return 0;
}
