/* kprobe: the current task, its parent and its mm through CO-RE reads; pt_regs from the header. */
#include "vmlinux.h"
#include "mini_bpf.h"

__u64 seen_pid, seen_ppid, seen_start, seen_arg;

SEC("kprobe/do_nanosleep")
int kprobe_task(struct pt_regs *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct task_struct *parent = 0;
	struct mm_struct *mm = 0;
	pid_t pid = 0, ppid = 0;
	unsigned long start = 0;

	CORE_READ_INTO(&pid, task, pid);
	CORE_READ_INTO(&parent, task, real_parent);
	CORE_READ_INTO(&ppid, parent, tgid);
	CORE_READ_INTO(&mm, task, mm);
	CORE_READ_INTO(&start, mm, arg_start);
	seen_pid = pid;
	seen_ppid = ppid;
	seen_start = start;
	seen_arg = ctx->di;
	return 0;
}
