/* The hash of bytes: hash.h. */
#include "hash.h"

#include <string.h>

/* 8-byte words mixed in turn, the tail as one word, then murmur3's finaliser (the table
 * slot is the low bits, which the word loop mixes poorly). */
uint64_t hash_bytes(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, v;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&v, p + i, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    for (v = 0; i < n; i++) v = v << 8 | p[i];
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h ? h : 1;
}
