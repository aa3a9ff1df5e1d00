/* A tp_btf program calling kfuncs (bpf_task_acquire / bpf_task_release) whose prototypes
 * come from vmlinux.h, as bpftool >= 7.5 writes them; needs a kernel whose BTF tags
 * kfuncs (the running one; not the corpus BTF). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, pid_t);
	__type(value, u64);
} parents SEC(".maps");

SEC("tp_btf/task_newtask")
int BPF_PROG(task_newtask, struct task_struct *task, u64 clone_flags)
{
	struct task_struct *held = bpf_task_acquire(task);
	pid_t pid;
	u64 ppid;

	if (!held)
		return 0;
	pid = BPF_CORE_READ(held, pid);
	ppid = BPF_CORE_READ(held, real_parent, tgid);
	bpf_map_update_elem(&parents, &pid, &ppid, BPF_NOEXIST);
	bpf_task_release(held);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
