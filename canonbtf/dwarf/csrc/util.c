/* An interning table (bytes -> dense ids). */
#include "core.h"
#include <stdlib.h>
#include <string.h>

/* FNV-1a over 8-byte words, then a final mix; never 0 (0 marks an empty slot). */
uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h ? h : 1;
}

int intern_init(intern_t *t)
{
    memset(t, 0, sizeof *t);
    t->cap = 64;
    t->hashes = calloc(t->cap, sizeof *t->hashes);
    t->ids = calloc(t->cap, sizeof *t->ids);
    if (!t->hashes || !t->ids || VEC_PUSH(t->starts, 0)) {
        intern_free(t);
        return -1;
    }
    return 0;
}

void intern_free(intern_t *t)
{
    free(t->hashes);
    free(t->ids);
    free(t->arena.a);
    free(t->starts.a);
    memset(t, 0, sizeof *t);
}

void intern_clear(intern_t *t)
{
    if (!t->count) return;
    memset(t->hashes, 0, t->cap * sizeof *t->hashes);
    t->count = 0;
    t->arena.n = 0;
    t->starts.n = 1;
}

static int rehash(intern_t *t)
{
    size_t cap = t->cap * 2;
    uint64_t *hashes = calloc(cap, sizeof *hashes);
    uint32_t *ids = calloc(cap, sizeof *ids);
    if (!hashes || !ids) { free(hashes); free(ids); return -1; }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->hashes[i]) continue;
        size_t j = t->hashes[i] & (cap - 1);
        while (hashes[j]) j = (j + 1) & (cap - 1);
        hashes[j] = t->hashes[i];
        ids[j] = t->ids[i];
    }
    free(t->hashes);
    free(t->ids);
    t->hashes = hashes;
    t->ids = ids;
    t->cap = cap;
    return 0;
}

int64_t intern_bytes(intern_t *t, const uint8_t *p, size_t n, int *is_new)
{
    uint64_t h = hash_bytes(p, n);
    size_t mask = t->cap - 1, j = h & mask;
    *is_new = 0;
    while (t->hashes[j]) {
        if (t->hashes[j] == h) {
            uint32_t id = t->ids[j];
            size_t start = t->starts.a[id], len = t->starts.a[id + 1] - start;
            if (len == n && (n == 0 || memcmp(t->arena.a + start, p, n) == 0)) return id;
        }
        j = (j + 1) & mask;
    }
    if (t->count >= UINT32_MAX - 1) return -1;
    if (VEC_RESERVE(t->arena, t->arena.n + n) || VEC_RESERVE(t->starts, t->count + 2))
        return -1;
    if (n) memcpy(t->arena.a + t->arena.n, p, n);
    t->arena.n += n;
    uint32_t id = (uint32_t)t->count++;
    t->starts.a[id + 1] = t->arena.n;
    t->starts.n = t->count + 1;
    t->hashes[j] = h;
    t->ids[j] = id;
    *is_new = 1;
    if (t->count * 2 > t->cap && rehash(t)) return -1;
    return id;
}

int64_t intern_find(const intern_t *t, const uint8_t *p, size_t n)
{
    uint64_t h = hash_bytes(p, n);
    size_t mask = t->cap - 1;
    for (size_t j = h & mask; t->hashes[j]; j = (j + 1) & mask) {
        if (t->hashes[j] != h) continue;
        uint32_t id = t->ids[j];
        size_t start = t->starts.a[id], len = t->starts.a[id + 1] - start;
        if (len == n && (n == 0 || memcmp(t->arena.a + start, p, n) == 0)) return id;
    }
    return -1;
}

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
