/* The one interning table of both extensions (a shared runtime file of native/csrc/):
 * byte strings -> dense ids from 0, in the order they are first interned (never by hash),
 * so equal bytes, equal ids. A zeroed intern_t is empty.
 *
 * Open addressing; a slot is 8 bytes (the hash's high half and an entry), so a probe's
 * cache line holds eight: most items are new, and their probe misses the caches once
 * (abstract_keys at 1.5 M types); the entries and their bytes are appended in order. */
#ifndef CANONBTF_INTERN_H
#define CANONBTF_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"

typedef struct {
    size_t start;                       /* in pool */
    uint32_t len, hash;                 /* hash: the low half, for regrowing */
} intern_entry_t;

typedef struct {
    uint8_t *pool;
    size_t npool, cap_pool;
    uint64_t *slot;                     /* hash >> 32 << 32 | id + 1; 0: empty */
    intern_entry_t *entry;              /* by id */
    size_t count, cap_entry, slots;
} intern_t;

/* The id of p[0..n) (new ids are `count` before the call; *is_new says which); -1 when
 * out of memory or past 2^32 - 2 ids or 4 GiB a string. */
int64_t intern_bytes(intern_t *t, const void *p, size_t n, int *is_new);
/* The id of p[0..n), or -1 when it was never interned. */
int64_t intern_find(const intern_t *t, const void *p, size_t n);
/* The bytes of id `id` (< count), their length in *len. */
const uint8_t *intern_at(const intern_t *t, uint32_t id, size_t *len);
/* Room for `entries` more strings without growing the slots; 0 or -1 out of memory. */
int intern_reserve(intern_t *t, size_t entries);
/* Empty again, keeping its memory. */
void intern_clear(intern_t *t);
void intern_free(intern_t *t);

#endif
