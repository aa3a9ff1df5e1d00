/* The hash of bytes: hash.h. */
#include "hash.h"

#include <string.h>

#define MIX 0xff51afd7ed558ccdULL

/* 8-byte words mixed in turn, the tail as one word, then murmur3's finaliser (the table
 * slot is the low bits, which the word loop mixes poorly). From 64 bytes on, 32-byte
 * blocks go first in four lanes folded into one: a lane's multiply chain allowed a word
 * every few cycles, and a module's run hashes its base's 2-5 MB and the base's kept keys
 * (4 MB in 0.81 ms with one lane). */
uint64_t hash_bytes(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, v;
    size_t i = 0;
    if (n >= 64) {
        uint64_t lane[4] = {h, h + 1, h + 2, h + 3};
        for (; i + 32 <= n; i += 32)
            for (int k = 0; k < 4; k++) {
                memcpy(&v, p + i + 8 * (size_t)k, 8);
                lane[k] = (lane[k] ^ v) * MIX;
                lane[k] ^= lane[k] >> 32;
            }
        for (int k = 0; k < 4; k++) {
            h = (h ^ lane[k]) * MIX;
            h ^= h >> 32;
        }
    }
    for (; i + 8 <= n; i += 8) {
        memcpy(&v, p + i, 8);
        h = (h ^ v) * MIX;
        h ^= h >> 32;
    }
    for (v = 0; i < n; i++) v = v << 8 | p[i];
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    h *= MIX;
    h ^= h >> 33;
    return h ? h : 1;
}
