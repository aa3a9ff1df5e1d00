/* A set of 16-bit keys, one bit each (8 kB), for filters that pass over most strings of a
 * large table before any is hashed or its end found: the caller picks the key (a name's
 * first two bytes, or its length and end bytes), a shared runtime file of native/csrc/.
 * A key not in the set is surely not wanted; one in it is looked up as before. */
#ifndef CANONBTF_KEYSET_H
#define CANONBTF_KEYSET_H

#include <stdint.h>

typedef struct { uint64_t bit[1024]; } keyset_t;

static inline void keyset_add(keyset_t *s, uint32_t key)
{
    key &= 0xFFFF;
    s->bit[key >> 6] |= 1ULL << (key & 63);
}

static inline int keyset_has(const keyset_t *s, uint32_t key)
{
    key &= 0xFFFF;
    return (int)(s->bit[key >> 6] >> (key & 63) & 1);
}

#endif
