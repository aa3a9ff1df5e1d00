/* tc: a kfunc (bpf_dynptr_from_skb) whose prototype comes from the header, a struct held by
 * value only as a local variable, and a direct __sk_buff read. Needs a kernel whose BTF tags
 * kfuncs (the running one; not the 6.12 corpus BTF), so rebuild.sh leaves it out. */
#include "vmlinux.h"
#include "mini_bpf.h"

__u64 seen;

SEC("tc")
int dynptr_kfunc(struct __sk_buff *skb)
{
	struct bpf_dynptr ptr;

	if (bpf_dynptr_from_skb(skb, 0, &ptr))
		return 0;
	seen += skb->len;
	return 0;
}
