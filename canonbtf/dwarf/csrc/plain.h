/* What the DWARF core's C files share without Python: the file's integers in its byte
 * order. */
#ifndef CANONBTF_DWARF_PLAIN_H
#define CANONBTF_DWARF_PLAIN_H

#include <stdint.h>

/* The unsigned `size`-byte integer at p (size <= 8), in the file's byte order. */
static inline uint64_t get_uint(const uint8_t *p, int size, int little)
{
    uint64_t v = 0;
    if (little)
        for (int i = size - 1; i >= 0; i--) v = (v << 8) | p[i];
    else
        for (int i = 0; i < size; i++) v = (v << 8) | p[i];
    return v;
}

#endif
