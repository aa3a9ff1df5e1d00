/* runqslower-like: a classic tracepoint reading its record struct, a per-CPU array,
 * BPF_ANY, bool flags from a const volatile, bpf_core_field_exists. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "common.h"

struct counts {
	__u64 switches;
	__u64 preempted;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct counts);
} totals SEC(".maps");

const volatile bool count_idle = true;

SEC("tp/sched/sched_switch")
int sched_switch(struct trace_event_raw_sched_switch *ctx)
{
	struct counts zero = {}, *c;
	u32 key = 0;

	if (!count_idle && (ctx->prev_pid == 0 || ctx->next_pid == 0))
		return 0;
	c = bpf_map_lookup_elem(&totals, &key);
	if (!c) {
		bpf_map_update_elem(&totals, &key, &zero, BPF_ANY);
		return 0;
	}
	c->switches++;
	if (bpf_core_field_exists(ctx->prev_state) && ctx->prev_state == 0)
		c->preempted++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
