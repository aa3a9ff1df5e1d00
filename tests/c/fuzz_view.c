/* libFuzzer target: the BTF view (btf/csrc/types.c) on untrusted bytes. The input is a
 * BTF blob, optionally followed by a split BTF over it (in the first one's trailing
 * bytes); each that index_types takes is walked whole (edges, names, sizes, enumerator
 * values) and every reference and name must be in bounds. */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"

static void walk(const types_t *t)
{
    uint32_t last = t->first_id + t->count - 1, len;
    uint32_t *e = malloc(((size_t)t->nwords + 2) * sizeof *e);
    if (!e) abort();
    if (t->start[t->count] != t->nwords) abort();
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t n = type_edges(t, i, e), kind = t_kind(t, i);
        if (n != edge_count(t, i)) abort();
        for (uint32_t k = 0; k < n; k++)
            if (e[k] > last) abort();
        const uint8_t *p = name_at(t, t_name(t, i), &len);
        if (len && p[len - 1] == 0) abort();
        (void)label_size(t, i);
        if (kind_item_words(kind) && kind != K_DATASEC && kind != K_FUNC) {
            const uint32_t *item = t_rest(t, i) + kind_fixed_words(kind);
            for (uint32_t j = 0; j < t_vlen(t, i); j++, item += kind_item_words(kind)) {
                name_at(t, item[0], &len);
                if (kind == K_ENUM || kind == K_ENUM64)
                    (void)enumerator_signed(kind, enumerator_value(kind, item));
            }
        }
    }
    free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    blob_t base, split = {0};
    if (blob_open(data, size, NULL, &base) == BLOB_OK) {
        walk(&base.t);
        size_t at = size - base.trailer;
        if (base.trailer && blob_open(data + at, base.trailer, &base, &split) == BLOB_OK)
            walk(&split.t);
        blob_free(&split);
    }
    blob_free(&base);
    return 0;
}
