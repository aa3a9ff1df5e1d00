/* u64 keys -> u32 values: idmap.h. */
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t mask)
{
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ULL;
    return (size_t)(key >> 17) & mask;
}

int idmap_get(const idmap_t *m, uint64_t key, uint32_t *val)
{
    if (!m->cap) return 0;
    size_t mask = m->cap - 1;
    for (size_t j = slot_of(key, mask); m->keys[j]; j = (j + 1) & mask)
        if (m->keys[j] == key) { *val = m->vals[j]; return 1; }
    return 0;
}

int idmap_put(idmap_t *m, uint64_t key, uint32_t val)
{
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t *keys = calloc(cap, sizeof *keys);
        uint32_t *vals = calloc(cap, sizeof *vals);
        if (!keys || !vals) { free(keys); free(vals); return -1; }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t j = slot_of(m->keys[i], cap - 1);
            while (keys[j]) j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t mask = m->cap - 1, j = slot_of(key, mask);
    while (m->keys[j] && m->keys[j] != key) j = (j + 1) & mask;
    if (!m->keys[j]) m->count++;
    m->keys[j] = key;
    m->vals[j] = val;
    return 0;
}

void idmap_free(idmap_t *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
