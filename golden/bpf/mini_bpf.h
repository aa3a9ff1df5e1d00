/* The few libbpf macros and helpers these programs use (libbpf's headers are not needed).
 * Include after vmlinux.h. */
#define SEC(name) __attribute__((section(name), used))

static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;
static __u64 (*bpf_get_current_task)(void) = (void *)35;

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

char LICENSE[] SEC("license") = "GPL";
