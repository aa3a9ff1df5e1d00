/* Helpers shared by the tools of a project, as real BPF projects keep them (libbpf-tools'
 * core_fixes.bpf.h, bits.bpf.h): each program calls some, but clang compiles all of them,
 * so its vmlinux.h must define every type they read. */
#ifndef COMMON_H
#define COMMON_H

#define AF_INET 2
#define AF_INET6 10

static __always_inline u64 cfs_rq_load(struct cfs_rq *cfs_rq)
{
	return BPF_CORE_READ(cfs_rq, avg.load_avg);
}

static __always_inline dev_t bdev_dev(struct block_device *bdev)
{
	return BPF_CORE_READ(bdev, bd_dev);
}

static __always_inline bool is_kernel_thread(struct task_struct *task)
{
	return BPF_CORE_READ(task, flags) & 0x00200000;
}

static __always_inline __u32 task_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

#endif
