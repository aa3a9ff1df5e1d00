/* tcpstates-like: fentry with BPF_PROG, a ring buffer, TCP_* enumerators as constants,
 * bpf_endian.h, a cast to tcp_sock, CO-RE reads of sock_common. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "common.h"

struct state_change {
	__u64 skaddr;
	__u32 saddr, daddr;
	__u32 srtt_us;
	__u16 sport, dport;
	int oldstate, newstate;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} changes SEC(".maps");

const volatile bool closing_only = false;

SEC("fentry/tcp_set_state")
int BPF_PROG(tcp_set_state, struct sock *sk, int state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct state_change *change;

	if (closing_only && state != TCP_CLOSE && state != TCP_CLOSE_WAIT)
		return 0;
	if (BPF_CORE_READ(sk, __sk_common.skc_family) != AF_INET)
		return 0;
	change = bpf_ringbuf_reserve(&changes, sizeof(*change), 0);
	if (!change)
		return 0;
	change->skaddr = (__u64)sk;
	change->saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	change->daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	change->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	change->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	change->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	change->oldstate = BPF_CORE_READ(sk, __sk_common.skc_state);
	change->newstate = state;
	bpf_ringbuf_submit(change, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
