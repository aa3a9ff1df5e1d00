// SPDX-License-Identifier: GPL-2.0
/* fentry on a module's function (dummy.ko's ndo_init): the FUNC and its prototype come
 * from the module's split BTF, /sys/kernel/btf/dummy. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u32 mtu;

SEC("fentry/dummy_dev_init")
int BPF_PROG(on_dummy_dev_init, struct net_device *dev)
{
	mtu = dev->mtu;
	return 0;
}
