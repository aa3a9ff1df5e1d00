/* The interning table: intern.h. */
#include "intern.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static int intern_grow(intern_t *t, size_t slots)
{
    uint64_t *slot = big_zalloc(slots, sizeof *slot);
    if (!slot) return -1;
    for (size_t k = 0; k < t->slots; k++) {
        if (!t->slot[k]) continue;
        size_t s = t->entry[(uint32_t)t->slot[k] - 1].hash & (slots - 1);
        while (slot[s]) s = (s + 1) & (slots - 1);
        slot[s] = t->slot[k];
    }
    free(t->slot);
    t->slot = slot;
    t->slots = slots;
    return 0;
}

/* The slot holding p[0..n) (hash h), or the empty slot where it would go. */
static size_t slot_of(const intern_t *t, const void *p, size_t n, uint64_t h)
{
    uint64_t tag = h >> 32 << 32;
    size_t s = h & (t->slots - 1);
    for (uint64_t v; (v = t->slot[s]); s = (s + 1) & (t->slots - 1)) {
        if ((v >> 32 << 32) != tag) continue;
        const intern_entry_t *e = &t->entry[(uint32_t)v - 1];
        if (e->len == n && (!n || !memcmp(t->pool + e->start, p, n))) break;
    }
    return s;
}

int64_t intern_bytes(intern_t *t, const void *p, size_t n, int *is_new)
{
    *is_new = 0;
    if ((t->count + 1) * 2 > t->slots && intern_grow(t, t->slots ? t->slots * 2 : 1024))
        return -1;
    uint64_t h = hash_bytes(p, n);
    size_t s = slot_of(t, p, n, h);
    if (t->slot[s]) return (uint32_t)t->slot[s] - 1;
    if (n > UINT32_MAX || t->count >= UINT32_MAX - 1
        || GROW(t->pool, t->cap_pool, t->npool + n) || GROW(t->entry, t->cap_entry, t->count + 1))
        return -1;
    if (n) memcpy(t->pool + t->npool, p, n);
    t->entry[t->count] = (intern_entry_t){t->npool, (uint32_t)n, (uint32_t)h};
    t->npool += n;
    t->slot[s] = h >> 32 << 32 | ++t->count;
    *is_new = 1;
    return (int64_t)t->count - 1;
}

int64_t intern_find(const intern_t *t, const void *p, size_t n)
{
    if (!t->count) return -1;
    uint64_t v = t->slot[slot_of(t, p, n, hash_bytes(p, n))];
    return v ? (int64_t)(uint32_t)v - 1 : -1;
}

const uint8_t *intern_at(const intern_t *t, uint32_t id, size_t *len)
{
    *len = t->entry[id].len;
    return t->pool + t->entry[id].start;
}

int intern_reserve(intern_t *t, size_t entries)
{
    size_t slots = t->slots ? t->slots : 1024;
    while (slots < 2 * (t->count + entries)) slots *= 2;
    return slots > t->slots ? intern_grow(t, slots) : 0;
}

void intern_clear(intern_t *t)
{
    if (t->slots) memset(t->slot, 0, t->slots * sizeof *t->slot);
    t->count = t->npool = 0;
}

void intern_free(intern_t *t)
{
    free(t->pool), free(t->slot), free(t->entry);
    memset(t, 0, sizeof *t);
}
