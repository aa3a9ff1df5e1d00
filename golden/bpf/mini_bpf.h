/* The libbpf macros and helpers these programs use. Include after vmlinux.h.
 * With libbpf-dev installed they come from libbpf's own headers, as in real programs (and
 * vmlinux.h must then hold what those headers need); without it, from the small copies
 * below (define CANONBTF_MINI_BPF to force them: golden/bpf/rebuild.sh does, so that the
 * prebuilt objects do not depend on the machine). */
#if __has_include(<bpf/bpf_helpers.h>) && !defined(CANONBTF_MINI_BPF)
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define CORE_READ_INTO(dst, src, field) BPF_CORE_READ_INTO(dst, src, field)
#define CORE_READ_BITFIELD(s, field) BPF_CORE_READ_BITFIELD_PROBED(s, field)
#else
#define SEC(name) __attribute__((section(name), used))

static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;
static __u64 (*bpf_get_current_task)(void) = (void *)35;
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;

#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

/* A CO-RE read through bpf_probe_read_kernel (libbpf's BPF_CORE_READ, one level). */
#define CORE_READ_INTO(dst, src, field) \
	bpf_probe_read_kernel((void *)(dst), sizeof(*(dst)), \
			      (const void *)__builtin_preserve_access_index(&(src)->field))

/* libbpf's BPF_CORE_READ_BITFIELD_PROBED, little-endian: every relocation kind of a
 * bit-field (byte offset, byte size, signedness, left and right shift). */
#define CORE_READ_BITFIELD(s, field) ({ \
	unsigned long long val = 0; \
	unsigned int off = __builtin_preserve_field_info((s)->field, 0); \
	unsigned int size = __builtin_preserve_field_info((s)->field, 1); \
	bpf_probe_read_kernel(&val, size > 8 ? 8 : size, (const void *)(s) + off); \
	val <<= __builtin_preserve_field_info((s)->field, 4); \
	if (__builtin_preserve_field_info((s)->field, 3)) \
		val = ((long long)val) >> __builtin_preserve_field_info((s)->field, 5); \
	else \
		val = val >> __builtin_preserve_field_info((s)->field, 5); \
	val; \
})

#endif

char LICENSE[] SEC("license") = "GPL";
