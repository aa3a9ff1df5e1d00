/* The one way both extensions grow an array, and allocate a big one read at random (a
 * shared runtime file of native/csrc/). */
#ifndef CANONBTF_GROW_H
#define CANONBTF_GROW_H

#include <stddef.h>
#include <stdlib.h>

/* Room for `need` elements of `size` bytes in *a (capacity *cap), doubling from 16;
 * 0, or -1 when out of memory or the size would overflow (*a is then unchanged). */
int grow_array(void **a, size_t *cap, size_t need, size_t size);
#define GROW(ptr, cap, need) grow_array((void **)&(ptr), &(cap), (need), sizeof *(ptr))
/* The capacity grow_array left an array grown from empty one need at a time to `used`
 * elements (0 for none): for an array that keeps its length but not its capacity. */
size_t grown_room(size_t used);

/* A growable array of T: `a` holds n elements, room for cap; a zeroed one is empty.
 * VEC_RESERVE and VEC_PUSH give 0, or -1 when out of memory; VEC_FREE empties it. */
#define VEC(T) struct { T *a; size_t n, cap; }
#define VEC_RESERVE(v, need) (((need) <= (v).cap) ? 0 : GROW((v).a, (v).cap, (need)))
#define VEC_PUSH(v, x) \
    (VEC_RESERVE(v, (v).n + 1) ? -1 : ((v).a[(v).n++] = (x), 0))
#define VEC_FREE(v) do { free((v).a); (v).a = NULL; (v).n = (v).cap = 0; } while (0)

/* n elements of `size` bytes (at least 1 byte), for an array read at random: on Linux
 * in 2 MB pages when it spans one (madvise; the kernel may refuse), which one TLB entry
 * covers where 4 kB pages took 512. At 1.5 M types (bench_all's 16 x) the page walks of
 * such reads were a third of the time of abstract_keys' intern table. Freed by free();
 * NULL when out of memory. big_zalloc zeroes it. */
void *big_alloc(size_t n, size_t size);
/* Once, at load: blocks of 2 MB and more are mapped and unmapped on their own (glibc's
 * M_MMAP_THRESHOLD fixed), not carved from the heap by a threshold that moves with every
 * free. With the moving threshold, `sort`'s peak RSS at 16 x the kernel went from 376 to
 * 552 MB on a change that only moved small allocations (freed big arrays stayed in the
 * heap, fragmented); fixed, it is 343 MB either way. */
void big_alloc_setup(void);
/* For a process that ends soon (canonbtf-pahole's run on one kernel module), in place of
 * big_alloc_setup's: blocks up to 32 MB come from the heap and up to 256 MB freed at its
 * top is kept, so a freed block serves the next one instead of new pages faulted in
 * (about 2.5 us each in a VM here; a module's run frees and allocates arrays over all of
 * its base's ids a dozen times): crc16.ko 4,008 -> 2,793 faults, 35.5 -> 31.1 ms. 1 when
 * the allocator took it (glibc), else 0. */
int keep_freed_memory(void);
void *big_zalloc(size_t n, size_t size);

/* Several zeroed arrays of n elements each, as calloc(n, size) would give them: the
 * arguments are (void **slot, size_t size) pairs (ZSLOT(p) names one), then NULL. 0, or -1
 * when one is out of memory; every slot then holds its array or NULL, and the caller frees
 * them as it frees them after use. */
int zalloc_each(size_t n, ...);
#define ZSLOT(p) (void **)&(p), sizeof *(p)
#define ZALLOC_EACH(n, ...) zalloc_each((n), __VA_ARGS__, (void **)NULL)
/* free() of each pointer named, NULL ones included: the arrays ZALLOC_EACH made, and the
 * like, released in one statement. */
#define FREE_EACH(...) do {                                                     \
        void *each_[] = {__VA_ARGS__};                                          \
        for (size_t i_ = 0; i_ < sizeof each_ / sizeof *each_; i_++) free(each_[i_]); \
    } while (0)

#endif
