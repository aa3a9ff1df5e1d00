/* libFuzzer target: canon/csrc/ (labels, partition refinement, renumbering, the dedup's
 * abstract keys) on untrusted bytes. The input is a BTF blob; its trailing bytes, when
 * there are any, redirect some ids as a dedup would (each byte the target of one id).
 * The first trailing byte also splits the types into a base and a module: the module's
 * keys over the base's kept keys (basekeys.c) must be those of the one section, and the
 * kept bytes with one byte changed (at the second trailing byte's position) are refused.
 *
 * Without a redirect the canonical order must be a fixed point: the section renumbered in
 * its canonical order, indexed again and ordered again, comes out in the same order and
 * renumbers to the same words and strings (docs/ORDER.md: the order depends only on what
 * the types are). */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "keptkeys.h"
#include "refined.h"

/* The canonical order of every own id of t (nodes: those redirect keeps); 0, -2, or abort. */
static int order_all(const types_t *t, const uint32_t *redirect, int by_name, uint32_t *out,
                     uint32_t *n)
{
    uint32_t *nodes = malloc(((size_t)t->count + 1) * sizeof *nodes);
    if (!nodes) abort();
    *n = 0;
    for (uint32_t j = 0; j < t->count; j++)
        if (!redirect || redirect[t->first_id + j] == t->first_id + j)
            nodes[(*n)++] = t->first_id + j;
    int alone;
    int rc = canonical_order(t, nodes, *n, redirect, by_name, out, &alone);
    if (rc == -1 || (rc == -2 && !redirect)) abort();
    /* The order is a permutation of the nodes. */
    uint8_t *seen = calloc((size_t)t->first_id + t->count, 1);
    if (!seen) abort();
    for (uint32_t j = 0; !rc && j < *n; j++) {
        if (out[j] < t->first_id || out[j] >= t->first_id + t->count || seen[out[j]]) abort();
        seen[out[j]] = 1;
    }
    free(seen);
    free(nodes);
    return rc;
}

/* The renumbered section as a view again (over its own strings). */
static void reindex(const renumbered_t *r, types_t *t, strtab_t *tab)
{
    *tab = (strtab_t){r->strings, 0, (uint32_t)r->strings_len};
    *t = (types_t){.w = r->words, .nwords = r->nwords, .first_id = 1, .tabs = tab, .ntabs = 1};
    if (index_types(t, (uint32_t)r->strings_len)) abort();
}

static void fixed_point(const types_t *t, int by_name, const uint32_t *order, uint32_t n)
{
    renumbered_t once, twice;
    if (renumber_types(t, order, n, NULL, 0, 1, &once)) abort();
    types_t again;
    strtab_t tab;
    reindex(&once, &again, &tab);
    uint32_t *order2 = malloc(((size_t)n + 1) * sizeof *order2), n2;
    if (!order2 || order_all(&again, NULL, by_name, order2, &n2) || n2 != n) abort();
    for (uint32_t j = 0; j < n; j++)
        if (order2[j] != 1 + j) abort();
    if (renumber_types(&again, order2, n, NULL, 0, 1, &twice)) abort();
    if (twice.nwords != once.nwords || twice.strings_len != once.strings_len
        || memcmp(twice.words, once.words, once.nwords * 4)
        || memcmp(twice.strings, once.strings, once.strings_len))
        abort();
    free(order2);
    free(again.start);
    free(once.words), free(once.strings), free(twice.words), free(twice.strings);
}

/* The largest prefix of t's types, up to `most`, that refers to none after it (a base). */
static uint32_t self_contained(const types_t *t, uint32_t most)
{
    uint32_t best = 0, reach = 0, *edges = NULL;
    for (uint32_t i = 0; i < t->count && i < most; i++) {
        free(edges);
        if (!(edges = malloc(((size_t)edge_count(t, i) + 1) * sizeof *edges))) abort();
        uint32_t n = type_edges(t, i, edges);
        for (uint32_t j = 0; j < n; j++)
            if (edges[j] > reach) reach = edges[j];
        if (reach <= i + 1) best = i + 1;
    }
    free(edges);
    return best;
}

/* The module's keys over the kept base agree with the one section's; a kept file with a
 * byte changed is refused (and reading it never goes out of bounds). */
static void kept(const types_t *t, const uint8_t *trailer, size_t ntrailer)
{
    uint8_t *blob;
    size_t len;
    uint32_t base_count = self_contained(t, 1 + trailer[0] % (t->count ? t->count : 1));
    int agree = kept_keys_agree(t, base_count, &blob, &len);
    if (agree < 0) return;
    if (!agree) abort();
    types_t base, module;
    if (split_views(t, base_count, &base, &module)) abort();
    if (ntrailer > 2) {
        size_t at = ((size_t)trailer[1] << 8 | trailer[2]) % len;
        base_keys_t bk;
        blob[at] ^= ntrailer > 3 && trailer[3] ? trailer[3] : 1;
        if (!base_keys_read(&base, blob, len, &bk)) abort();
        if (!base_keys_read(&base, blob, at & ~(size_t)3, &bk)) abort();  /* cut short */
    }
    free(blob), free(base.start), free(module.start);
}

/* The dedup's refinement (refined.c) of the ids sharing a key (key, token: by own index)
 * ends, and over a base and module split of the section (the first `base_count` types)
 * gives the same ranks, stand-ins and classes as over the one section; its merge groups
 * send each id to a representative of its class that itself stays. */
static void refined(const types_t *t, const uint32_t *key, const uint32_t *token,
                    uint32_t base_count)
{
    uint32_t last = t->count, nshared = 0;
    uint32_t *by_id = calloc((size_t)last + 1, sizeof *by_id);
    uint32_t *tok = calloc((size_t)last + 1, sizeof *tok);
    uint32_t *shared = malloc(((size_t)last + 1) * sizeof *shared);
    uint8_t *declares = calloc((size_t)last + 1, 1);
    if (!by_id || !tok || !shared || !declares) abort();
    for (uint32_t i = 0; i < last; i++) {
        by_id[i + 1] = key[i], tok[i + 1] = token[i];
        uint32_t kind = t_kind(t, i);
        declares[i + 1] = kind == K_FWD || ((kind == K_ENUM || kind == K_ENUM64) && !t_vlen(t, i));
    }
    for (uint32_t id = 1; id <= last; id++)
        for (uint32_t other = 1; other <= last; other++)
            if (other != id && by_id[other] == by_id[id]) {
                shared[nshared++] = id;
                break;
            }
    refined_t one, two;
    if (dedup_refined(NULL, t, by_id, tok, declares, last, shared, nshared, &one)) abort();
    types_t base, module;
    if (base_count && base_count < t->count && !split_views(t, base_count, &base, &module)) {
        if (dedup_refined(&base, &module, by_id, tok, declares, last, shared, nshared, &two))
            abort();
        size_t size = ((size_t)last + 1) * sizeof(uint32_t);
        if (memcmp(one.rank, two.rank, size) || memcmp(one.stands_for, two.stands_for, size)
            || memcmp(one.classes, two.classes, size))
            abort();
        refined_free(&two);
        free(base.start), free(module.start);
    }
    /* merge_map's groups: each id goes to a representative of its class that stays. */
    uint8_t *kinds = calloc((size_t)last + 1, 1);
    uint32_t *nodes, *reps, n;
    if (!kinds) abort();
    for (uint32_t i = 0; i < last; i++) kinds[i + 1] = (uint8_t)t_kind(t, i);
    int into = dedup_into(one.classes, NULL, declares, kinds, last, &nodes, &reps, &n);
    if (into == -1) abort();
    for (uint32_t j = 0; !into && j < n; j++) {
        if (one.classes[nodes[j]] != one.classes[reps[j]] || nodes[j] == reps[j]) abort();
        for (uint32_t k = 0; k < n; k++)
            if (nodes[k] == reps[j]) abort();
    }
    if (!into) free(nodes), free(reps);
    free(kinds);
    refined_free(&one);
    free(by_id), free(tok), free(shared), free(declares);
}

static void canon(const blob_t *b, const uint8_t *trailer)
{
    const types_t *t = &b->t;
    uint32_t nids = t->first_id + t->count, n;
    uint32_t *key = malloc(((size_t)t->count + 1) * sizeof *key);
    uint32_t *token = malloc(((size_t)t->count + 1) * sizeof *token);
    uint32_t *out = malloc(((size_t)t->count + 1) * sizeof *out);
    uint32_t *redirect = NULL;
    if (!key || !token || !out) abort();
    if (abstract_keys(t, b->trailer ? trailer[0] : 0, key, token)) abort();
    if (b->trailer) kept(t, trailer, b->trailer);
    if (t->first_id == 1 && t->count <= 4096)  /* the shared ids are found in O(n^2) */
        refined(t, key, token, self_contained(t, 1 + (b->trailer ? trailer[0] : 0)));
    if (b->trailer) {
        if (!(redirect = malloc((size_t)nids * sizeof *redirect))) abort();
        for (uint32_t id = 0; id < nids; id++)
            redirect[id] = id > 0 && id <= b->trailer ? trailer[id - 1] % nids : id;
    }
    for (int by_name = 0; by_name < 2; by_name++) {
        if (order_all(t, redirect, by_name, out, &n)) continue;
        if (!redirect) {
            fixed_point(t, by_name, out, n);
            continue;
        }
        renumbered_t r;
        if (renumber_types(t, out, n, redirect, 0, by_name, &r)) abort();
        free(r.words), free(r.strings);
    }
    free(key), free(token), free(out), free(redirect);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    blob_t b;
    if (blob_open(data, size, NULL, &b) == BLOB_OK) canon(&b, data + size - b.trailer);
    blob_free(&b);
    return 0;
}
