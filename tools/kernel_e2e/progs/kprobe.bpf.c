// SPDX-License-Identifier: GPL-2.0
/* kprobe with CO-RE reads through a pointer chain: BPF_CORE_READ(task, real_parent, tgid)
 * (bpf_probe_read_kernel at relocated offsets). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

__s32 parent_tgid;
__s32 new_pid;

SEC("kprobe/wake_up_new_task")
int BPF_KPROBE(on_wake_up_new_task, struct task_struct *p)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	parent_tgid = BPF_CORE_READ(task, real_parent, tgid);
	new_pid = BPF_CORE_READ(p, pid);
	return 0;
}
