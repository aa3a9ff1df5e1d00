/* What the DWARF core's C files share without Python: the file's integers in its byte
 * order. */
#ifndef CANONBTF_DWARF_PLAIN_H
#define CANONBTF_DWARF_PLAIN_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) \
    && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PLAIN_HOST_LITTLE 1
#else
#define PLAIN_HOST_LITTLE 0
#endif

/* The unsigned `size`-byte integer at p (size <= 8), in the file's byte order. A file in
 * the host's order (little-endian on x86 and arm64) loads whole words: the byte loop was
 * 340 instructions a relocation of a module's .debug_info (222 k in ext4.ko). */
static inline uint64_t get_uint(const uint8_t *p, int size, int little)
{
    if (PLAIN_HOST_LITTLE && little) {
        uint64_t w;
        uint32_t h;
        uint16_t q;
        switch (size) {
        case 8: memcpy(&w, p, 8); return w;
        case 4: memcpy(&h, p, 4); return h;
        case 2: memcpy(&q, p, 2); return q;
        case 1: return p[0];
        default: break;
        }
    }
    uint64_t v = 0;
    if (little)
        for (int i = size - 1; i >= 0; i--) v = (v << 8) | p[i];
    else
        for (int i = 0; i < size; i++) v = (v << 8) | p[i];
    return v;
}

/* The low `size` bytes (size <= 8) of v stored at p in the file's byte order. */
static inline void put_uint(uint8_t *p, int size, int little, uint64_t v)
{
    if (PLAIN_HOST_LITTLE && little) {
        uint32_t h = (uint32_t)v;
        switch (size) {
        case 8: memcpy(p, &v, 8); return;
        case 4: memcpy(p, &h, 4); return;
        default: break;
        }
    }
    for (int i = 0; i < size; i++)
        p[little ? i : size - 1 - i] = (uint8_t)(v >> (8 * i));
}

#endif
