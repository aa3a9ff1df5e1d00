// SPDX-License-Identifier: GPL-2.0
/* fentry on a name that stands for several text addresses in vmlinux (AMBIGUOUS_NAME,
 * chosen by tools/kernel_e2e.py from the kernel's own symbol table). A FUNC for such a
 * name would let the program attach to whichever address the kernel finds first; with
 * no FUNC, loading must fail cleanly (libbpf cannot find the target). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 calls;

SEC("fentry/" AMBIGUOUS_NAME)
int BPF_PROG(on_ambiguous)
{
	calls++;
	return 0;
}
