/* Renumbering with the canonical string section: canon/renumber.py in C. */
#include "keyset.h"
#include "types.h"

#include <stdlib.h>
#include <string.h>

/* Open addressing over names (pointer, length) -> u32; 0 hash marks an empty slot. */
typedef struct {
    uint64_t *hash;
    const uint8_t **ptr;
    uint32_t *len, *value;
    size_t cap, count;
} names_t;

static int names_init(names_t *m, size_t expected)
{
    size_t cap = 64;
    while (cap < expected * 2) cap *= 2;
    memset(m, 0, sizeof *m);
    m->cap = cap;
    m->hash = big_zalloc(cap, sizeof *m->hash);
    m->ptr = big_alloc(cap, sizeof *m->ptr);
    m->len = big_alloc(cap, sizeof *m->len);
    m->value = big_alloc(cap, sizeof *m->value);
    return m->hash && m->ptr && m->len && m->value ? 0 : -1;
}

static void names_free(names_t *m)
{
    free(m->hash);
    free((void *)m->ptr);
    free(m->len);
    free(m->value);
}

/* The slot of a name: its own if present, else the empty one it would take. */
static size_t names_slot(const names_t *m, const uint8_t *p, uint32_t n, uint64_t h)
{
    size_t j = h & (m->cap - 1);
    while (m->hash[j] && !(m->hash[j] == h && m->len[j] == n && !memcmp(m->ptr[j], p, n)))
        j = (j + 1) & (m->cap - 1);
    return j;
}

static int names_grow(names_t *m)
{
    names_t bigger;
    if (names_init(&bigger, m->cap)) {
        names_free(&bigger);
        return -1;
    }
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->hash[j]) continue;
        size_t k = names_slot(&bigger, m->ptr[j], m->len[j], m->hash[j]);
        bigger.hash[k] = m->hash[j];
        bigger.ptr[k] = m->ptr[j];
        bigger.len[k] = m->len[j];
        bigger.value[k] = m->value[j];
    }
    bigger.count = m->count;
    names_free(m);
    *m = bigger;
    return 0;
}

/* The value of a name, or UINT32_MAX; with `add` (not UINT32_MAX) it is stored when absent.
 * Returns -2 when out of memory. */
static int64_t names_get(names_t *m, const uint8_t *p, uint32_t n, uint32_t add)
{
    uint64_t h = hash_bytes(p, n);
    size_t j = names_slot(m, p, n, h);
    if (m->hash[j]) return m->value[j];
    if (add == UINT32_MAX) return UINT32_MAX;
    if ((m->count + 1) * 2 > m->cap) {
        if (names_grow(m)) return -2;
        j = names_slot(m, p, n, h);
    }
    m->hash[j] = h;
    m->ptr[j] = p;
    m->len[j] = n;
    m->value[j] = add;
    m->count++;
    return UINT32_MAX;
}

/* A string's key in lend_names' filter: its length and its first and last bytes. */
static inline uint32_t lend_key(const uint8_t *p, uint32_t n)
{
    return (n & 0xFF) << 8 | (uint8_t)(n ? p[0] * 7u + p[n - 1] : 0);
}

/* For each name of `seq` not placed yet (lent[j] == UINT32_MAX): its lowest whole-string
 * offset in the lender's section `tab` (StringTable.offset_of), if it is there. The
 * wanted names are indexed and the section scanned once: indexing every string of the
 * lender (vmlinux's 2 MB) was most of a small module's renumbering, twice a run. A
 * string is hashed only when a wanted name shares its length and end bytes (a keyset.h
 * filter): hashing each of the base's strings was 6 % of a small module's run. */
static int lend_names(const strtab_t *tab, const ranks_t *r, const uint32_t *seq,
                      uint32_t nseq, uint32_t *lent)
{
    names_t wanted;
    keyset_t filter = {{0}};
    int rc = -1;
    if (names_init(&wanted, nseq)) goto done;
    for (uint32_t j = 0; j < nseq; j++) {
        if (lent[j] != UINT32_MAX) continue;
        const uint8_t *p = r->ptr[seq[j]];
        keyset_add(&filter, lend_key(p, r->len[seq[j]]));
        if (names_get(&wanted, p, r->len[seq[j]], j) == -2) goto done;
    }
    size_t missing = wanted.count;
    uint32_t pos = 0;
    while (missing && pos < tab->len) {
        const uint8_t *p = tab->data + pos;
        const uint8_t *end = memchr(p, 0, tab->len - pos);
        uint32_t n = end ? (uint32_t)(end - p) : tab->len - pos;
        if (!keyset_has(&filter, lend_key(p, n))) {
            pos += n + 1;
            continue;
        }
        int64_t j = names_get(&wanted, p, n, UINT32_MAX);
        if (j != UINT32_MAX && lent[j] == UINT32_MAX) {
            lent[j] = tab->start + pos;
            missing--;
        }
        pos += n + 1;
    }
    rc = 0;
done:
    names_free(&wanted);
    return rc;
}

typedef struct {
    ranks_t r;                     /* the names the records hold, in order (name_ranks) */
    uint32_t *offset;              /* by rank: the name's new offset */
} ordered_names_t;

/* Ranks in the order the records first hold them (the empty name's is 0, first). */
static uint32_t *first_held(const ranks_t *r, size_t uses, uint32_t *count)
{
    uint32_t *seq = big_alloc((size_t)r->distinct, sizeof *seq);
    uint8_t *seen = big_zalloc(r->distinct, 1);
    uint32_t n = 0;
    if (seq && seen)
        for (size_t u = 0; u < uses; u++)
            if (!seen[r->rank[u]]) seen[r->rank[u]] = 1, seq[n++] = r->rank[u];
    free(seen);
    *count = n;
    return seq;
}

/* New offsets of the ordered types' names (o->offset): "" at 0, a lender's lowest
 * whole-string offset (the deepest lender first), the others appended to the new section
 * `out` in the order first met. Names are ranked once (labelsort.c): a hash table of
 * strings read in the new order missed the caches at every use at 1.5 M types. */
static int place_names(const types_t *t, const uint32_t *own, uint32_t n, int nlenders,
                       ordered_names_t *o, uint8_t **out, size_t *out_len)
{
    const strtab_t *own_tab = &t->tabs[t->ntabs - 1];
    uint32_t nseq = 0, *seq = NULL, *lent = NULL;
    int rc = -1;
    if (name_ranks(t, own, n, 0, &o->r)) return -1;
    const ranks_t *r = &o->r;
    o->offset = big_alloc((size_t)r->distinct, sizeof *o->offset);
    seq = first_held(r, r->first[n], &nseq);
    lent = big_alloc((size_t)nseq + 1, sizeof *lent);
    if (!o->offset || !seq || !lent) goto done;
    for (uint32_t j = 0; j < nseq; j++) lent[j] = seq[j] ? UINT32_MAX : 0;
    for (int k = 0; k < nlenders; k++)
        if (lend_names(&t->tabs[k], r, seq, nseq, lent)) goto done;
    size_t size = nlenders ? 0 : 1;
    for (uint32_t j = 0; j < nseq; j++)
        size += lent[j] == UINT32_MAX ? (size_t)r->len[seq[j]] + 1 : 0;
    uint8_t *data = malloc(size ? size : 1);
    if (!data) goto done;
    size_t pos = 0;
    if (!nlenders) data[pos++] = 0;
    for (uint32_t j = 0; j < nseq; j++) {
        uint32_t rank = seq[j];
        o->offset[rank] = lent[j];
        if (lent[j] != UINT32_MAX) continue;
        o->offset[rank] = (uint32_t)(own_tab->start + pos);
        memcpy(data + pos, r->ptr[rank], r->len[rank]);
        pos += r->len[rank];
        data[pos++] = 0;
    }
    *out = data;
    *out_len = size;
    rc = 0;
done:
    free(seq), free(lent);
    return rc;
}

/* The next name of the records, in the order name_ranks met them (without placed names:
 * the offset moved by `shift`). */
static uint32_t next_name(ordered_names_t *o, size_t *use, uint32_t off, uint32_t shift)
{
    if (!o) return off + shift;
    return o->offset[o->r.rank[(*use)++]];
}

/* One record with ids through new_id and names through the placed names, or without
 * them moved by `shift` (Type.remap). */
static void remap_names(const types_t *t, uint32_t i, const uint32_t *new_id,
                        ordered_names_t *o, size_t *use, uint32_t shift, uint32_t *out)
{
    uint32_t kind = t_kind(t, i), words = t->start[i + 1] - t->start[i];
    memcpy(out, t->w + t->start[i], words * sizeof *out);
    out[0] = next_name(o, use, out[0], shift);
    if (kind_in(KINDS_TYPED, kind)) out[2] = new_id[out[2]];
    if (kind == K_ARRAY) {
        out[3] = new_id[out[3]];
        out[4] = new_id[out[4]];
    }
    uint32_t vlen = kind == K_FUNC ? 0 : t_vlen(t, i), step = kind_item_words(kind);
    uint32_t *item = out + 3 + kind_fixed_words(kind);
    for (uint32_t k = 0; k < vlen; k++, item += step) {
        if (kind == K_DATASEC) {
            item[0] = new_id[item[0]];
            continue;
        }
        item[0] = next_name(o, use, item[0], shift);
        if (kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO)
            item[1] = new_id[item[1]];
    }
}

void remap_record(const types_t *t, uint32_t i, const uint32_t *new_id, uint32_t shift,
                  uint32_t *out)
{
    remap_names(t, i, new_id, NULL, NULL, shift, out);
}

int renumber_types(const types_t *t, const uint32_t *order, uint32_t n,
                   const uint32_t *redirect, int nlenders, int names, renumbered_t *out)
{
    uint32_t nids = t->first_id + t->count;
    uint32_t *new_id = big_alloc((size_t)nids, sizeof *new_id), *own = NULL;
    ordered_names_t o;
    memset(&o, 0, sizeof o);
    memset(out, 0, sizeof *out);
    int rc = -1;
    if (!new_id) goto done;
    for (uint32_t id = 0; id < nids; id++) new_id[id] = id;
    for (uint32_t j = 0; j < n; j++) new_id[order[j]] = t->first_id + j;
    if (redirect)  /* the dedup may merge base types too (into each other or own ones) */
        for (uint32_t id = 1; id < nids; id++)
            if (redirect[id] != id) new_id[id] = new_id[redirect[id]];
    own = big_alloc((size_t)n + 1, sizeof *own);
    if (!own) goto done;
    size_t words = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = own[j] = order[j] - t->first_id;
        words += t->start[i + 1] - t->start[i];
    }
    if (names && place_names(t, own, n, nlenders, &o, &out->strings, &out->strings_len))
        goto done;
    out->words = big_alloc(words ? words : 1, sizeof *out->words);
    if (!out->words) goto done;
    size_t pos = 0, use = 0;
    for (uint32_t j = 0; j < n; j++) {
        remap_names(t, own[j], new_id, names ? &o : NULL, &use, 0, out->words + pos);
        pos += t->start[own[j] + 1] - t->start[own[j]];
    }
    out->nwords = words;
    rc = 0;
done:
    free(new_id), free(own), free(o.offset);
    ranks_free(&o.r);
    if (rc) {
        free(out->words);
        free(out->strings);
        memset(out, 0, sizeof *out);
    }
    return rc;
}
