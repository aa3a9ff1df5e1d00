/* Reading the type section: record starts, edges, names and label fields (labels.py). */
#include "types.h"

#include <stdlib.h>
#include <string.h>

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
