/* canonbtf._btf.diff_keys (diffkeys.c): which roots diff may leave unspelled. */
#ifndef CANONBTF_DIFFKEYS_H
#define CANONBTF_DIFFKEYS_H

#include "types.h"

/* One side: its types from id 1 (a base's first, for split BTF), where its own start, and
 * by id (count + 1 entries, 0 for void): `dup` in (roots of duplicated names), `key` and
 * `expanded` (zeroed) out. */
typedef struct {
    const types_t *t;
    uint32_t own_first;
    const uint8_t *dup;
    uint32_t *key;
    uint8_t *expanded;
} diff_side_t;

/* Keys of both sides' types, numbered together: equal nonzero keys, equal facts; 0 where
 * the facts must be spelled to know. 0, or -1 when out of memory. */
int diff_keys(const diff_side_t *old, const diff_side_t *new);

#endif
