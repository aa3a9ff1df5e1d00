/* tracepoint: the sched_switch record read from the context, a map keyed by a kernel enum. */
#include "vmlinux.h"
#include "mini_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} switches SEC(".maps");

SEC("tracepoint/sched/sched_switch")
int tracepoint(struct trace_event_raw_sched_switch *ctx)
{
	__u32 key = 0;
	__u64 *count = bpf_map_lookup_elem(&switches, &key);

	if (count && ctx->prev_pid != ctx->next_pid && ctx->next_comm[0])
		*count += ctx->prev_state;
	return 0;
}
