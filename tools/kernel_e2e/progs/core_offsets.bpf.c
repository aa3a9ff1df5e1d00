// SPDX-License-Identifier: GPL-2.0
/* CO-RE field offsets, relocated by libbpf in the guest against the kernel's own BTF
 * (made by canonbtf-pahole). tools/kernel_e2e.py reads every relocated offset from
 * libbpf's debug log and checks it against the DWARF of vmlinux (pahole -F dwarf -C).
 * The fields span several structs, two levels of nesting and a pointer member. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

__u64 offsets[10];

SEC("socket")
int core_offsets(void *ctx)
{
	offsets[0] = bpf_core_field_offset(struct sk_buff, len);
	offsets[1] = bpf_core_field_offset(struct sk_buff, data);
	offsets[2] = bpf_core_field_offset(struct sk_buff, truesize);
	offsets[3] = bpf_core_field_offset(struct net_device, mtu);
	offsets[4] = bpf_core_field_offset(struct net_device, ifindex);
	offsets[5] = bpf_core_field_offset(struct task_struct, pid);
	offsets[6] = bpf_core_field_offset(struct task_struct, tgid);
	offsets[7] = bpf_core_field_offset(struct task_struct, real_parent);
	offsets[8] = bpf_core_field_offset(struct task_struct, se.vruntime);
	offsets[9] = bpf_core_field_offset(struct inode, i_sb);
	return 0;
}
