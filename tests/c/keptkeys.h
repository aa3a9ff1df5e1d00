/* The kept keys of canon/csrc/basekeys.c checked against abstract_keys, for test_canon and
 * fuzz_canon: a section's first `base_count` types taken as a base, its keys made and
 * read back, the rest keyed over them as a module must be numbered as the one section. */
#ifndef CANONBTF_TESTS_KEPTKEYS_H
#define CANONBTF_TESTS_KEPTKEYS_H

#include <stdlib.h>
#include <string.h>

#include "basekeys.h"

/* t's types [0, base_count) as a base and the others as its split BTF (index_types
 * checks them as the reader would: the base may not refer past itself); 0, or -1. */
static inline int split_views(const types_t *t, uint32_t base_count, types_t *base,
                              types_t *module)
{
    const strtab_t *own = &t->tabs[t->ntabs - 1];
    uint32_t str_end = own->start + own->len;
    size_t at = t->start[base_count];
    *base = (types_t){.w = t->w, .nwords = at, .first_id = 1, .tabs = t->tabs, .ntabs = t->ntabs};
    *module = (types_t){.w = t->w + at, .nwords = t->nwords - at, .first_id = base_count + 1,
                        .tabs = t->tabs, .ntabs = t->ntabs};
    if (index_types(base, str_end)) return -1;
    if (base->count != base_count || index_types(module, str_end)) return free(base->start), -1;
    return 0;
}

/* Whether the keys of t (first_id 1) over its first base_count types as a kept base are
 * abstract_keys' as one section: 1 yes, 0 no, -1 where the split does not apply; the kept
 * bytes also in *kept (malloc'd) when asked. Aborts when out of memory. */
static inline int kept_keys_agree(const types_t *t, uint32_t base_count, uint8_t **kept,
                                  size_t *kept_len)
{
    types_t base, module;
    if (base_count == 0 || base_count > t->count || split_views(t, base_count, &base, &module))
        return -1;
    size_t n = (size_t)t->count + 1, len;
    uint32_t *key = malloc(n * 4), *token = malloc(n * 4), *key2 = malloc(n * 4), *token2 = malloc(n * 4);
    uint8_t *blob;
    base_keys_t bk;
    if (!key || !token || !key2 || !token2 || abstract_keys(t, base_count, key, token)
        || base_keys_make(&base, &blob, &len))
        abort();
    int agree = !base_keys_read(&base, blob, len, &bk)
             && !memcmp(bk.key, key, (size_t)base_count * 4)
             && !memcmp(bk.token_key, token, (size_t)base_count * 4);
    if (agree) {
        if (abstract_keys_over(&base, &bk, &module, key2, token2)) abort();
        agree = !memcmp(key2, key + base_count, (size_t)module.count * 4)
             && !memcmp(token2, token + base_count, (size_t)module.count * 4);
    }
    if (kept) *kept = blob, *kept_len = len;
    else free(blob);
    free(key), free(token), free(key2), free(token2), free(base.start), free(module.start);
    return agree;
}

#endif
