/* The one stable sort of u32 values (a shared runtime file of native/csrc/). */
#ifndef CANONBTF_SORT_H
#define CANONBTF_SORT_H

#include <stddef.h>
#include <stdint.h>

/* A stable merge sort of u32 values with a context comparator; 0, or -1 when out of
 * memory. */
typedef int (*cmp_fn)(const void *ctx, uint32_t a, uint32_t b);
int sort_u32(uint32_t *a, size_t n, cmp_fn cmp, const void *ctx);

#endif
