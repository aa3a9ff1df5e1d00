/* The one map of numbers both extensions use (a shared runtime file of native/csrc/):
 * u64 keys (never 0) -> u32 values, open addressing. A zeroed idmap_t is empty. The DWARF
 * core maps DIE and string offsets with it, records_bindings.c a name's offset + 1 to its str. */
#ifndef CANONBTF_IDMAP_H
#define CANONBTF_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t *keys; uint32_t *vals; size_t cap, count; } idmap_t;
/* 1 with *val set when `key` is in the map, else 0. */
int idmap_get(const idmap_t *m, uint64_t key, uint32_t *val);
/* Sets key -> val; 0, or -1 when out of memory (the map is then unchanged). */
int idmap_put(idmap_t *m, uint64_t key, uint32_t val);
void idmap_free(idmap_t *m);

#endif
