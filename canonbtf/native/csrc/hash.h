/* The one hash of bytes both extensions use (a shared runtime file of native/csrc/): for
 * hash tables only. No output may depend on a hash value (an order, a number): tables
 * number what they hold in the order it comes, and compare the bytes. */
#ifndef CANONBTF_HASH_H
#define CANONBTF_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit hash of p[0..n), never 0 (0 marks an empty slot). */
uint64_t hash_bytes(const void *p, size_t n);

#endif
