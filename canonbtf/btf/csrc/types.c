/* Reading the type section: record starts, edges, names and label fields (labels.py). */
#include "types.h"

#include <stdlib.h>
#include <string.h>

/* Kinds whose vlen must be 0 (reader._parse_types: all but FUNC and the item kinds). */
static int vlen_must_be_zero(uint32_t kind)
{
    return kind != K_FUNC && !kind_item_words(kind);
}

/* The largest string offset and type id one record holds (its own name, an item's name, a
 * reference), folded into *name and *ref. */
static void record_maxima(const uint32_t *w, uint32_t kind, uint32_t vlen, uint32_t *name,
                          uint32_t *ref)
{
    uint32_t n = *name > w[0] ? *name : w[0], r = *ref;
    if (kind_in(KINDS_TYPED, kind) && w[2] > r) r = w[2];
    const uint32_t *item = w + 3 + kind_fixed_words(kind);
    switch (kind) {
    case K_ARRAY:
        if (w[3] > r) r = w[3];
        if (w[4] > r) r = w[4];
        break;
    case K_STRUCT: case K_UNION: case K_FUNC_PROTO: {
        uint32_t step = kind_item_words(kind);
        for (uint32_t j = 0; j < vlen; j++, item += step) {
            if (item[0] > n) n = item[0];
            if (item[1] > r) r = item[1];
        }
        break;
    }
    case K_DATASEC:
        for (uint32_t j = 0; j < vlen; j++, item += 3)
            if (item[0] > r) r = item[0];
        break;
    case K_FUNC:
        break;  /* vlen is its linkage */
    default: {
        uint32_t step = kind_item_words(kind);  /* enumerators: a name each */
        for (uint32_t j = 0; j < vlen; j++, item += step)
            if (item[0] > n) n = item[0];
    }
    }
    *name = n;
    *ref = r;
}

/* One pass: each record's start, its shape checked, and the largest name and reference
 * compared at the end (a second pass checking each record against the last id was half
 * of indexing a module's base, once per run). */
int index_types(types_t *t, uint32_t str_end)
{
    size_t pos = 0, n = t->nwords;
    uint32_t count = 0, max_name = 0, max_ref = 0;
    t->start = malloc((n / 3 + 2) * sizeof *t->start);  /* a record is 3 words or more */
    if (!t->start) return -1;
    while (pos < n) {
        if (pos + 3 > n) goto bad;
        const uint32_t *w = t->w + pos;
        uint32_t kind = (w[1] >> 24) & 0x7F, vlen = w[1] & 0xFFFFFF;
        if (kind == 0 || kind > K_MAX) goto bad;
        if (vlen && vlen_must_be_zero(kind)) goto bad;
        size_t words = 3 + kind_fixed_words(kind);
        if (kind != K_FUNC) words += (size_t)vlen * kind_item_words(kind);
        if (words > n - pos || count >= UINT32_MAX - t->first_id - 1) goto bad;
        t->start[count++] = (uint32_t)pos;
        record_maxima(w, kind, vlen, &max_name, &max_ref);
        pos += words;
    }
    t->start[count] = (uint32_t)pos;
    t->count = count;
    if ((count && max_name >= str_end) || max_ref > t->first_id + count - 1) goto bad;
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

const uint8_t *name_span(const types_t *t, uint32_t off, uint32_t *avail)
{
    for (int k = t->ntabs - 1; k >= 0; k--) {
        const strtab_t *tab = &t->tabs[k];
        if (off < tab->start) continue;
        uint32_t rel = off - tab->start;
        if (rel >= tab->len) break;
        *avail = tab->len - rel;
        return tab->data + rel;
    }
    *avail = 0;
    return (const uint8_t *)"";
}

const uint8_t *name_at(const types_t *t, uint32_t off, uint32_t *len)
{
    uint32_t avail;
    const uint8_t *p = name_span(t, off, &avail);
    const uint8_t *end = memchr(p, 0, avail);
    *len = end ? (uint32_t)(end - p) : avail;
    return p;
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

/* Interned u32 strings (types.h). */

uint32_t number_words(numbering_t *in, const uint32_t *w, uint32_t n, uint32_t *next)
{
    int is_new;
    int64_t id = intern_bytes(&in->table, w, (size_t)n * sizeof *w, &is_new);
    if (id < 0) return 0;
    if (is_new) {
        if (GROW(in->value, in->cap_value, (size_t)id + 1)) return 0;
        in->value[id] = (*next)++;
    }
    return in->value[id];
}

void numbering_free(numbering_t *in)
{
    intern_free(&in->table);
    free(in->value);
}
