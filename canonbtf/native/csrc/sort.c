/* The one stable sort of u32 values with a context comparator (a shared runtime file of
 * native/csrc/): insertion sort of runs of 16, then bottom-up merges. */
#include "sort.h"

#include <stdlib.h>
#include <string.h>

static void merge_pass(uint32_t *a, uint32_t *tmp, size_t lo, size_t mid, size_t hi,
                       cmp_fn cmp, const void *ctx)
{
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) tmp[k++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
    while (i < mid) tmp[k++] = a[i++];
    while (j < hi) tmp[k++] = a[j++];
    memcpy(a + lo, tmp + lo, (hi - lo) * sizeof *a);
}

int sort_u32(uint32_t *a, size_t n, cmp_fn cmp, const void *ctx)
{
    if (n < 2) return 0;
    /* Runs of 16 by insertion, then bottom-up merges. */
    for (size_t lo = 0; lo < n; lo += 16) {
        size_t hi = lo + 16 < n ? lo + 16 : n;
        for (size_t i = lo + 1; i < hi; i++) {
            uint32_t x = a[i];
            size_t j = i;
            while (j > lo && cmp(ctx, x, a[j - 1]) < 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
    }
    if (n <= 16) return 0;
    uint32_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return -1;
    for (size_t width = 16; width < n; width *= 2)
        for (size_t lo = 0; lo + width < n; lo += 2 * width) {
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            merge_pass(a, tmp, lo, lo + width, hi, cmp, ctx);
        }
    free(tmp);
    return 0;
}
