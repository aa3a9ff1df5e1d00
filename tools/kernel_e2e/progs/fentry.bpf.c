// SPDX-License-Identifier: GPL-2.0
/* fentry on a kernel function with a struct pointer argument, reading a field of it.
 * The verifier takes the argument's type from the FUNC's prototype in vmlinux BTF, and
 * bpf_get_current_task_btf()'s return type from the task_struct id that resolve_btfids
 * wrote into .BTF_ids: the FUNC, its prototype and .BTF_ids must agree. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__s32 new_pid;
__s32 current_tgid;

SEC("fentry/wake_up_new_task")
int BPF_PROG(on_wake_up_new_task, struct task_struct *p)
{
	new_pid = p->pid;
	current_tgid = bpf_get_current_task_btf()->tgid;
	return 0;
}
