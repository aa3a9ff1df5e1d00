/* Growing arrays and big ones: grow.h. */
#include "grow.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((size_t)1 << 21)
#define FIRST_ROOM 16

int grow_array(void **a, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : FIRST_ROOM;
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

size_t grown_room(size_t used)
{
    if (!used) return 0;
    size_t room = FIRST_ROOM;
    while (room < used) room *= 2;
    return room;
}

void big_alloc_setup(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, (int)HUGE_PAGE);
#endif
}

int keep_freed_memory(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    /* The mapping threshold's largest value: half of glibc's HEAP_MAX_SIZE. */
    int most = sizeof(void *) >= 8 ? 32 << 20 : 512 << 10;
    return mallopt(M_MMAP_THRESHOLD, most) && mallopt(M_TRIM_THRESHOLD, 256 << 20);
#else
    return 0;
#endif
}

void *big_alloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / 2 / size) return NULL;
    size_t bytes = n * size;
    if (!bytes) bytes = 1;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE) {
        bytes = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *p = aligned_alloc(HUGE_PAGE, bytes);
        if (p) madvise(p, bytes, MADV_HUGEPAGE);  /* a hint: 4 kB pages if refused */
        return p;
    }
#endif
    return malloc(bytes);
}

void *big_zalloc(size_t n, size_t size)
{
    void *p = big_alloc(n, size);
    if (p) memset(p, 0, n * size);
    return p;
}

int zalloc_each(size_t n, ...)
{
    int failed = 0;
    va_list ap;
    va_start(ap, n);
    for (void **slot = va_arg(ap, void **); slot; slot = va_arg(ap, void **)) {
        size_t size = va_arg(ap, size_t);
        *slot = calloc(n, size);
        if (!*slot) failed = 1;
    }
    va_end(ap);
    return failed ? -1 : 0;
}
