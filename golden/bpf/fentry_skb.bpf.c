/* fentry: a struct sk_buff argument read directly (BTF pointer), through its anonymous
 * unions, and its socket. */
#include "vmlinux.h"
#include "mini_bpf.h"

__u64 bytes, marks, families;

SEC("fentry/tcp_v4_rcv")
int fentry_skb(unsigned long long *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)ctx[0];

	bytes += skb->len + skb->data_len;
	marks += skb->mark;
	if (skb->sk)
		families += skb->sk->__sk_common.skc_family;
	return 0;
}
