/* Growing arrays: grow.h. */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

int grow_array(void **a, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 4 / size) return -1;
        n *= 2;
    }
    void *p = realloc(*a, n * size);
    if (!p) return -1;
    *a = p;
    *cap = n;
    return 0;
}
