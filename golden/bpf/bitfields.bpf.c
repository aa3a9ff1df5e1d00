/* kprobe: bit-fields of struct sk_buff read through CO-RE field relocations (offset, size,
 * signedness, shifts), as libbpf's BPF_CORE_READ_BITFIELD_PROBED does. */
#include "vmlinux.h"
#include "mini_bpf.h"

__u64 pkt_types, cloned, csum;

SEC("kprobe/__kfree_skb")
int bitfields(struct pt_regs *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)ctx->di;

	pkt_types += CORE_READ_BITFIELD(skb, pkt_type);
	cloned += CORE_READ_BITFIELD(skb, cloned);
	csum += CORE_READ_BITFIELD(skb, ip_summed);
	return 0;
}
