/* filelife-like: a kprobe on vfs_unlink, a hash map keyed by a kernel pointer, a perf
 * event array written with BPF_F_CURRENT_CPU, bool, BPF_CORE_READ through two members. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"

#ifndef MAX_ENTRIES
#define MAX_ENTRIES 1024
#endif

struct event {
	char file[32];
	char task[TASK_COMM_LEN];
	__u64 delta_ns;
	pid_t tgid;
	bool kthread;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, struct dentry *);
	__type(value, u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/vfs_unlink")
int BPF_KPROBE(vfs_unlink, void *idmap, struct inode *dir, struct dentry *dentry)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct event event = {};
	const u8 *name;
	u64 *born;

	born = bpf_map_lookup_elem(&start, &dentry);
	if (!born)
		return 0;
	event.delta_ns = bpf_ktime_get_ns() - *born;
	event.tgid = task_tgid();
	event.kthread = is_kernel_thread(task);
	name = BPF_CORE_READ(dentry, d_name.name);
	bpf_probe_read_kernel_str(&event.file, sizeof(event.file), name);
	bpf_get_current_comm(&event.task, sizeof(event.task));
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &event, sizeof(event));
	bpf_map_delete_elem(&start, &dentry);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
