/* canon/csrc/ without Python: the canonical order (order.c over native/csrc/refine.c,
 * labelsort.c) of small
 * known inputs as docs/ORDER.md defines it, the same renumbered bytes (renumber.c) for any
 * permutation of random graphs full of ties, renumbering's identity and its string
 * section, the dedup's abstract keys (abstract.c), and refused node lists. */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "ctest.h"
#include "keptkeys.h"
#include "minibtf.h"

static uint8_t buf[MINI_BLOB_MAX], buf2[MINI_BLOB_MAX];

/* The canonical order of every own type of b (by name or not) into out, and whether
 * refinement alone made it (*alone); rc of the call. */
static int order_of(const blob_t *b, int by_name, uint32_t *out, int *alone)
{
    uint32_t nodes[512];
    for (uint32_t j = 0; j < b->t.count; j++) nodes[j] = b->t.first_id + j;
    return canonical_order(&b->t, nodes, b->t.count, NULL, by_name, out, alone);
}

/* Distinct labels: kind, vlen, name, ... (by_name: name first). */
static void known_order(void)
{
    mini_t m;
    mini_init(&m);
    uint32_t b = mini_type(&m, 6, mini_str(&m, "b"), mini_info(K_STRUCT, 1, 0), 4u,
                           mini_str(&m, "m"), 4u, 0u);
    uint32_t p = mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 4u);
    uint32_t a = mini_type(&m, 6, mini_str(&m, "a"), mini_info(K_STRUCT, 1, 0), 8u,
                           mini_str(&m, "m"), 2u, 0u);
    uint32_t i = mini_type(&m, 4, mini_str(&m, "int"), mini_info(K_INT, 0, 0), 4u, 1u << 24 | 32);
    uint32_t c = mini_type(&m, 4, mini_str(&m, "char"), mini_info(K_INT, 0, 0), 1u, 8u);
    blob_t bl;
    CHECK(mini_open(&m, buf, &bl) == BLOB_OK);
    uint32_t out[5];
    int alone;
    CHECK(order_of(&bl, 0, out, &alone) == 0 && alone);
    CHECK(out[0] == c && out[1] == i && out[2] == p && out[3] == a && out[4] == b);
    CHECK(order_of(&bl, 1, out, &alone) == 0 && alone);
    CHECK(out[0] == p && out[1] == a && out[2] == b && out[3] == c && out[4] == i);
    /* The renumbered section: ids through the order, names in the order first met. */
    renumbered_t r;
    CHECK(renumber_types(&bl.t, out, 5, NULL, 0, 1, &r) == 0);
    static const char names[] = "\0a\0m\0b\0char\0int";
    CHECK(r.strings_len == sizeof names && !memcmp(r.strings, names, sizeof names));
    /* PTR (now 1) to int (now 5); a (now 2) holds the PTR; b (now 3) holds int. */
    CHECK(r.nwords == 23 && r.words[2] == 5 && r.words[3 + 3 + 1] == 1
          && r.words[3 + 6 + 3 + 1] == 5);
    free(r.words), free(r.strings);
    /* A node twice, or one not own: refused. */
    uint32_t twice[2] = {1, 1}, past[1] = {6};
    CHECK(canonical_order(&bl.t, twice, 2, NULL, 0, out, &alone) == -2);
    CHECK(canonical_order(&bl.t, past, 1, NULL, 0, out, &alone) == -2);
    blob_free(&bl);
}

/* A random type: kind, name, size and up to 4 references (ids from 0). */
typedef struct {
    uint32_t kind, name, size, nref, ref[4], item_name[4];
} gen_t;

static const char *const pool[] = {"", "a", "b", "x"};

static void random_types(gen_t *g, uint32_t n)
{
    static const uint32_t kinds[] = {K_INT, K_PTR, K_TYPEDEF, K_STRUCT, K_ARRAY, K_FUNC_PROTO,
                                     K_CONST};
    for (uint32_t j = 0; j < n; j++) {
        gen_t *t = &g[j];
        memset(t, 0, sizeof *t);
        t->kind = kinds[rand() % 7];
        t->name = (uint32_t)rand() % 4;
        t->size = 1u << (rand() % 3);
        if (t->kind == K_INT) t->name = 1 + (uint32_t)rand() % 2;
        if (t->kind == K_TYPEDEF) t->name = 1 + (uint32_t)rand() % 3;
        if (t->kind == K_PTR || t->kind == K_CONST || t->kind == K_ARRAY) t->name = 0;
        t->nref = t->kind == K_INT ? 0 : t->kind == K_ARRAY ? 2
                  : t->kind == K_STRUCT ? (uint32_t)rand() % 4
                  : t->kind == K_FUNC_PROTO ? 1 + (uint32_t)rand() % 3 : 1;
        for (uint32_t k = 0; k < t->nref; k++) {
            t->ref[k] = (uint32_t)rand() % (n + 1);   /* ties: few kinds, names and shapes */
            t->item_name[k] = (uint32_t)rand() % 4;
        }
    }
}

/* The types written with type j at id perm[j] (ids from 1). */
static void emit(mini_t *m, const gen_t *g, uint32_t n, const uint32_t *perm)
{
    mini_init(m);
    uint32_t inv[512];
    for (uint32_t j = 0; j < n; j++) inv[perm[j] - 1] = j;
    for (uint32_t pos = 0; pos < n; pos++) {
        const gen_t *t = &g[inv[pos]];
        uint32_t ref[4];
        for (uint32_t k = 0; k < t->nref; k++) ref[k] = t->ref[k] ? perm[t->ref[k] - 1] : 0;
        uint32_t name = mini_str(m, pool[t->name]);
        switch (t->kind) {
        case K_INT: mini_type(m, 4, name, mini_info(K_INT, 0, 0), t->size, t->size * 8); break;
        case K_ARRAY: mini_type(m, 6, 0u, mini_info(K_ARRAY, 0, 0), 0u, ref[0], ref[1], t->size);
            break;
        case K_STRUCT: case K_FUNC_PROTO: {
            uint32_t items = t->kind == K_STRUCT ? t->nref : t->nref - 1, first = t->nref - items;
            int step = t->kind == K_STRUCT ? 3 : 2;
            mini_type(m, 3, name, mini_info(t->kind, items, 0),
                      t->kind == K_STRUCT ? 8 * t->size : ref[0]);
            for (uint32_t k = 0; k < items; k++) {
                m->w[m->nw++] = mini_str(m, pool[t->item_name[first + k]]);
                m->w[m->nw++] = ref[first + k];
                if (step == 3) m->w[m->nw++] = 8 * k;
            }
            break;
        }
        default: mini_type(m, 3, name, mini_info(t->kind, 0, 0), ref[0]);
        }
    }
}

/* The renumbered bytes do not depend on the input's ids. */
static void permutation_invariant(void)
{
    srand(29);
    int differ = 0, tied = 0;
    for (int round = 0; round < 60; round++) {
        gen_t g[60];
        uint32_t n = 2 + (uint32_t)rand() % 58, ident[60], perm[60];
        random_types(g, n);
        for (uint32_t j = 0; j < n; j++) ident[j] = perm[j] = j + 1;
        for (uint32_t j = n - 1; j > 0; j--) {
            uint32_t k = (uint32_t)rand() % (j + 1), swap = perm[j];
            perm[j] = perm[k], perm[k] = swap;
        }
        mini_t ma, mb;
        emit(&ma, g, n, ident);
        emit(&mb, g, n, perm);
        blob_t a, b;
        CHECK(mini_open(&ma, buf, &a) == BLOB_OK && mini_open(&mb, buf2, &b) == BLOB_OK);
        differ += ma.nw == mb.nw && memcmp(ma.w, mb.w, ma.nw * 4) != 0;
        for (int by_name = 0; by_name < 2; by_name++) {
            uint32_t oa[60], ob[60];
            int alone, alone_b;
            CHECK(order_of(&a, by_name, oa, &alone) == 0 && order_of(&b, by_name, ob, &alone_b) == 0);
            CHECK(alone == alone_b);
            tied += !alone;
            renumbered_t ra, rb;
            CHECK(renumber_types(&a.t, oa, n, NULL, 0, 1, &ra) == 0);
            CHECK(renumber_types(&b.t, ob, n, NULL, 0, 1, &rb) == 0);
            int same = ra.nwords == rb.nwords && ra.strings_len == rb.strings_len
                       && !memcmp(ra.words, rb.words, ra.nwords * 4)
                       && !memcmp(ra.strings, rb.strings, ra.strings_len);
            CHECK(same);
            if (!same) fprintf(stderr, "  round %d (%u types, by_name %d)\n", round, n, by_name);
            free(ra.words), free(ra.strings), free(rb.words), free(rb.strings);
        }
        blob_free(&a), blob_free(&b);
    }
    printf("     60 graphs: %d inputs differ from their permutation, %d orders broke ties\n",
           differ, tied);
    CHECK(differ > 50 && tied > 10);
}

/* Renumbered in its own order without names: the same words. */
static void renumber_identity(void)
{
    mini_t m;
    mini_types(&m);
    blob_t b;
    CHECK(mini_open(&m, buf, &b) == BLOB_OK);
    uint32_t order[7] = {1, 2, 3, 4, 5, 6, 7};
    renumbered_t r;
    CHECK(renumber_types(&b.t, order, 7, NULL, 0, 0, &r) == 0);
    CHECK(r.nwords == m.nw && !memcmp(r.words, m.w, m.nw * 4) && !r.strings);
    free(r.words);
    /* Reversed: each reference through the new ids (the PTR to int now points at 7). */
    uint32_t reversed[7] = {7, 6, 5, 4, 3, 2, 1};
    CHECK(renumber_types(&b.t, reversed, 7, NULL, 0, 0, &r) == 0);
    CHECK(r.nwords == m.nw && r.words[r.nwords - 4 - 3 + 2] == 7);
    free(r.words);
    blob_free(&b);
}

/* Equal shapes, equal keys; another member type, another key (dedup._abstract_keys). */
static void abstract_keys_by_shape(void)
{
    mini_t m;
    mini_init(&m);
    mini_type(&m, 4, mini_str(&m, "int"), mini_info(K_INT, 0, 0), 4u, 1u << 24 | 32);
    mini_type(&m, 4, mini_str(&m, "char"), mini_info(K_INT, 0, 0), 1u, 8u);
    for (uint32_t k = 0; k < 3; k++)     /* struct s { int v; } twice, then { char v; } */
        mini_type(&m, 6, mini_str(&m, "s"), mini_info(K_STRUCT, 1, 0), 4u,
                  mini_str(&m, "v"), k < 2 ? 1u : 2u, 0u);
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 3u);
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 4u);
    blob_t b;
    CHECK(mini_open(&m, buf, &b) == BLOB_OK);
    uint32_t key[7], token[7];
    CHECK(abstract_keys(&b.t, 0, key, token) == 0);
    CHECK(key[2] == key[3] && key[2] != key[4] && key[0] != key[1]);
    CHECK(key[5] == key[6] && key[5] != key[2] && key[0] && key[4]);
    blob_free(&b);
}

/* A base and a module keyed over its kept keys as the one section is keyed; the kept
 * bytes cut short anywhere or with any one byte changed are refused. */
static void kept_keys_continue_the_base(void)
{
    mini_t m;
    mini_init(&m);
    uint32_t s = mini_str(&m, "s"), v = mini_str(&m, "v"), u = mini_str(&m, "u");
    mini_type(&m, 4, mini_str(&m, "int"), mini_info(K_INT, 0, 0), 4u, 1u << 24 | 32); /* 1 */
    mini_type(&m, 6, s, mini_info(K_STRUCT, 1, 0), 8u, v, 3u, 0u);                     /* 2 */
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 2u);                                  /* 3 */
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 5u);                 /* 4: a cycle of two */
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 4u);                                  /* 5 */
    mini_type(&m, 3, s, mini_info(K_FWD, 0, 0), 0u);                                   /* 6 */
    /* the module: the base's struct again, a new one, another pointer cycle */
    mini_type(&m, 6, s, mini_info(K_STRUCT, 1, 0), 8u, v, 8u, 0u);                     /* 7 */
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 7u);                                  /* 8 */
    mini_type(&m, 6, u, mini_info(K_UNION, 1, 0), 8u, v, 3u, 0u);                      /* 9 */
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 11u);                                /* 10 */
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 10u);                                /* 11 */
    mini_type(&m, 4, mini_str(&m, "int"), mini_info(K_INT, 0, 0), 4u, 1u << 24 | 32); /* 12 */
    blob_t b;
    CHECK(mini_open(&m, buf, &b) == BLOB_OK);
    uint8_t *kept;
    size_t len;
    CHECK(kept_keys_agree(&b.t, 6, &kept, &len) == 1);
    for (uint32_t at = 1; at <= b.t.count; at++) CHECK(kept_keys_agree(&b.t, at, NULL, NULL) != 0);
    types_t base, module;
    base_keys_t bk;
    CHECK(split_views(&b.t, 6, &base, &module) == 0);
    CHECK(base_keys_read(&base, kept, len, &bk) == 0);
    for (size_t cut = 0; cut < len; cut += 4) CHECK(base_keys_read(&base, kept, cut, &bk) == -1);
    for (size_t at = 0; at < len; at++) {
        kept[at] ^= 0x10;
        CHECK(base_keys_read(&base, kept, len, &bk) == -1);
        kept[at] ^= 0x10;
    }
    types_t other = base;
    other.count = 5;                                     /* another base's count */
    CHECK(base_keys_read(&other, kept, len, &bk) == -1);
    free(kept), free(base.start), free(module.start);
    blob_free(&b);
}

int main(void)
{
    big_alloc_setup();
    RUN(known_order);
    RUN(permutation_invariant);
    RUN(renumber_identity);
    RUN(abstract_keys_by_shape);
    RUN(kept_keys_continue_the_base);
    return ctest_status("test_canon");
}
