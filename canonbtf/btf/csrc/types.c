/* Reading the type section: record starts, edges, names and label fields (labels.py). */
#include "types.h"

#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((size_t)1 << 21)

void big_alloc_setup(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, (int)HUGE_PAGE);
#endif
}

void *big_alloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / 2 / size) return NULL;
    size_t bytes = n * size;
    if (!bytes) bytes = 1;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE) {
        bytes = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *p = aligned_alloc(HUGE_PAGE, bytes);
        if (p) madvise(p, bytes, MADV_HUGEPAGE);  /* a hint: 4 kB pages if refused */
        return p;
    }
#endif
    return malloc(bytes);
}

void *big_zalloc(size_t n, size_t size)
{
    void *p = big_alloc(n, size);
    if (p) memset(p, 0, n * size);
    return p;
}


/* Kinds whose vlen must be 0 (reader._parse_types: all but FUNC and the item kinds). */
static int vlen_must_be_zero(uint32_t kind)
{
    return kind != K_FUNC && !kind_item_words(kind);
}

static int check_record(const uint32_t *w, uint32_t kind, uint32_t vlen, uint32_t last_id,
                        uint32_t str_end)
{
    if (w[0] >= str_end) return -1;
    if (kind_in(KINDS_TYPED, kind) && w[2] > last_id) return -1;
    const uint32_t *rest = w + 3 + kind_fixed_words(kind);
    if (kind == K_ARRAY && (w[3] > last_id || w[4] > last_id)) return -1;
    uint32_t step = kind_item_words(kind);
    for (uint32_t j = 0; j < vlen; j++) {
        const uint32_t *item = rest + (size_t)j * step;
        if (kind == K_DATASEC) {
            if (item[0] > last_id) return -1;
            continue;
        }
        if (item[0] >= str_end) return -1;
        if ((kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO) && item[1] > last_id)
            return -1;
    }
    return 0;
}

int index_types(types_t *t, uint32_t str_end)
{
    size_t pos = 0, n = t->nwords, cap = 0;
    uint32_t count = 0;
    t->start = NULL;
    while (pos < n) {
        if (pos + 3 > n) goto bad;
        uint32_t info = t->w[pos + 1];
        uint32_t kind = (info >> 24) & 0x7F, vlen = info & 0xFFFFFF;
        if (kind == 0 || kind > K_MAX) goto bad;
        if (vlen && vlen_must_be_zero(kind)) goto bad;
        size_t words = 3 + kind_fixed_words(kind);
        if (kind != K_FUNC) words += (size_t)vlen * kind_item_words(kind);
        if (words > n - pos || count >= UINT32_MAX - t->first_id - 1) goto bad;
        if (GROW(t->start, cap, (size_t)count + 2)) goto bad;
        t->start[count++] = (uint32_t)pos;
        pos += words;
    }
    if (GROW(t->start, cap, (size_t)count + 1)) goto bad;
    t->start[count] = (uint32_t)pos;
    t->count = count;
    uint32_t last_id = t->first_id + count - 1;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t kind = t_kind(t, i);
        if (check_record(t->w + t->start[i], kind, kind == K_FUNC ? 0 : t_vlen(t, i), last_id,
                         str_end))
            goto bad;
    }
    return 0;
bad:
    free(t->start);
    t->start = NULL;
    return -1;
}

uint32_t edge_count(const types_t *t, uint32_t i)
{
    uint32_t kind = t_kind(t, i), vlen = t_vlen(t, i);
    switch (kind) {
    case K_FUNC_PROTO: return 1 + vlen;
    case K_STRUCT: case K_UNION: case K_DATASEC: return vlen;
    case K_ARRAY: return 2;
    default: return kind_in(KINDS_TYPED, kind);
    }
}

uint32_t type_edges(const types_t *t, uint32_t i, uint32_t *out)
{
    uint32_t kind = t_kind(t, i), vlen = t_vlen(t, i);
    const uint32_t *rest = t_rest(t, i);
    switch (kind) {
    case K_FUNC_PROTO:
        out[0] = t_sot(t, i);
        for (uint32_t j = 0; j < vlen; j++) out[1 + j] = rest[2 * j + 1];
        return 1 + vlen;
    case K_STRUCT: case K_UNION:
        for (uint32_t j = 0; j < vlen; j++) out[j] = rest[3 * j + 1];
        return vlen;
    case K_DATASEC:
        for (uint32_t j = 0; j < vlen; j++) out[j] = rest[3 * j];
        return vlen;
    case K_ARRAY:
        out[0] = rest[0];
        out[1] = rest[1];
        return 2;
    default:
        if (!kind_in(KINDS_TYPED, kind)) return 0;
        out[0] = t_sot(t, i);
        return 1;
    }
}

const uint8_t *name_at(const types_t *t, uint32_t off, uint32_t *len)
{
    for (int k = t->ntabs - 1; k >= 0; k--) {
        const strtab_t *tab = &t->tabs[k];
        if (off < tab->start) continue;
        uint32_t rel = off - tab->start;
        if (rel >= tab->len) break;
        const uint8_t *p = tab->data + rel;
        const uint8_t *end = memchr(p, 0, tab->len - rel);
        *len = end ? (uint32_t)(end - p) : tab->len - rel;
        return p;
    }
    *len = 0;
    return (const uint8_t *)"";
}

uint64_t enumerator_value(uint32_t kind, const uint32_t *item)
{
    return kind == K_ENUM64 ? item[1] | (uint64_t)item[2] << 32 : item[1];
}

int64_t enumerator_signed(uint32_t kind, uint64_t value)
{
    return kind == K_ENUM ? (int32_t)(uint32_t)value : (int64_t)value;
}

uint32_t label_size(const types_t *t, uint32_t i)
{
    switch (t_kind(t, i)) {
    case K_INT: case K_STRUCT: case K_UNION: case K_ENUM: case K_DATASEC: case K_FLOAT:
    case K_ENUM64: return t_sot(t, i);
    default: return 0;
    }
}

static void merge_pass(uint32_t *a, uint32_t *tmp, size_t lo, size_t mid, size_t hi,
                       cmp_fn cmp, const void *ctx)
{
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) tmp[k++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
    while (i < mid) tmp[k++] = a[i++];
    while (j < hi) tmp[k++] = a[j++];
    memcpy(a + lo, tmp + lo, (hi - lo) * sizeof *a);
}

int sort_u32(uint32_t *a, size_t n, cmp_fn cmp, const void *ctx)
{
    if (n < 2) return 0;
    /* Runs of 16 by insertion, then bottom-up merges. */
    for (size_t lo = 0; lo < n; lo += 16) {
        size_t hi = lo + 16 < n ? lo + 16 : n;
        for (size_t i = lo + 1; i < hi; i++) {
            uint32_t x = a[i];
            size_t j = i;
            while (j > lo && cmp(ctx, x, a[j - 1]) < 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
    }
    if (n <= 16) return 0;
    uint32_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return -1;
    for (size_t width = 16; width < n; width *= 2)
        for (size_t lo = 0; lo + width < n; lo += 2 * width) {
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            merge_pass(a, tmp, lo, lo + width, hi, cmp, ctx);
        }
    free(tmp);
    return 0;
}

/* Interned u32 strings (types.h). */

static uint64_t hash_words(const uint32_t *w, uint32_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ w[i]) * 0x100000001B3ull;
        h ^= h >> 31;
    }
    /* murmur3's finaliser: the slot is the low bits, which the loop mixes poorly */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int intern_grow(intern_t *in, size_t slots)
{
    uint64_t *slot = big_zalloc(slots, sizeof *slot);
    if (!slot) return -1;
    for (size_t k = 0; k < in->slots; k++) {
        if (!in->slot[k]) continue;
        size_t s = in->entry[(uint32_t)in->slot[k] - 1].hash & (slots - 1);
        while (slot[s]) s = (s + 1) & (slots - 1);
        slot[s] = in->slot[k];
    }
    free(in->slot);
    in->slot = slot;
    in->slots = slots;
    return 0;
}

uint32_t intern(intern_t *in, const uint32_t *w, uint32_t n, uint32_t *next)
{
    if ((in->nentry + 1) * 2 > in->slots && intern_grow(in, in->slots ? in->slots * 2 : 1024))
        return 0;
    uint64_t h = hash_words(w, n), tag = h >> 32 << 32;
    size_t s = h & (in->slots - 1);
    for (uint64_t v; (v = in->slot[s]); s = (s + 1) & (in->slots - 1)) {
        if ((v >> 32 << 32) != tag) continue;
        const intern_entry_t *e = &in->entry[(uint32_t)v - 1];
        if (e->len == n && !memcmp(in->pool + e->start, w, (size_t)n * sizeof *w)) return e->value;
    }
    if (in->npool + n > UINT32_MAX || in->nentry >= UINT32_MAX - 1
        || GROW(in->pool, in->cap_pool, in->npool + n) || GROW(in->entry, in->cap_entry, in->nentry + 1))
        return 0;
    memcpy(in->pool + in->npool, w, (size_t)n * sizeof *w);
    in->entry[in->nentry] = (intern_entry_t){(uint32_t)in->npool, n, (*next)++, (uint32_t)h};
    in->slot[s] = tag | ++in->nentry;
    in->npool += n;
    return in->entry[in->nentry - 1].value;
}

int intern_reserve(intern_t *in, size_t entries)
{
    size_t slots = in->slots ? in->slots : 1024;
    while (slots < 2 * (in->nentry + entries)) slots *= 2;
    return slots > in->slots ? intern_grow(in, slots) : 0;
}

void intern_free(intern_t *in)
{
    free(in->pool), free(in->slot), free(in->entry);
}
