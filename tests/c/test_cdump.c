/* The C header's emitter (emit/c/csrc/cdump.c) without Python.
 *
 *   test_cdump                      handmade cases: definitions, display names and
 *                                   enumerator suffixes, declarations, placement, facts,
 *                                   and every input it must decline
 *   test_cdump --write DIR          the handmade BTF into DIR/handmade-header.btf
 *   test_cdump --spell FILE...      each file's shape check and definitions (id, text,
 *                                   mentions, enumerators; bytes in hex), which
 *                                   tests/test_c_units.py holds to the Python reference */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "cdump.h"
#include "ctest.h"
#include "minibtf.h"

/* Every kind a header spells. Ids: 1 int, 2 int *, 3 struct s {int a; int *b;},
 * 4 int[4], 5 int (int x), 6 FUNC f, 7 enum64 e64 {A = -1}, 8 long int, 9 struct bits
 * (bit-fields), 10 union u {int a; struct s b;}, 11 enum {B = 1, C = 2}, 12 proto *,
 * 13 typedef fn_t, 14 struct opaque (FWD), 15 const opaque, 16 its pointer, 17 enum
 * {X}, 18 struct s2 {const struct opaque *p; int arr[4]; enum {X} e; fn_t cb;},
 * 19 DECL_TAG bpf_kfunc on f, 20 enum small {S = 1} of 1 byte, 21 TYPE_TAG user on int,
 * 22 its pointer, 23 struct tagged, 24 struct gap (padding). */
static void header_types(mini_t *m)
{
    mini_types(m);
    mini_type(m, 4, mini_str(m, "long int"), mini_info(K_INT, 0, 0), 8u, 1u << 24 | 64);
    mini_type(m, 12, mini_str(m, "bits"), mini_info(K_STRUCT, 3, 1), 8u,
              mini_str(m, "x"), 1u, 3u << 24 | 0, mini_str(m, "y"), 1u, 5u << 24 | 3,
              mini_str(m, "z"), 8u, 20u << 24 | 32);
    mini_type(m, 9, mini_str(m, "u"), mini_info(K_UNION, 2, 0), 16u,
              mini_str(m, "a"), 1u, 0u, mini_str(m, "b"), 3u, 0u);
    mini_type(m, 7, 0u, mini_info(K_ENUM, 2, 0), 4u, mini_str(m, "B"), 1u,
              mini_str(m, "C"), 2u);
    mini_type(m, 3, 0u, mini_info(K_PTR, 0, 0), 5u);
    mini_type(m, 3, mini_str(m, "fn_t"), mini_info(K_TYPEDEF, 0, 0), 12u);
    mini_type(m, 3, mini_str(m, "opaque"), mini_info(K_FWD, 0, 0), 0u);
    mini_type(m, 3, 0u, mini_info(K_CONST, 0, 0), 14u);
    mini_type(m, 3, 0u, mini_info(K_PTR, 0, 0), 15u);
    mini_type(m, 5, 0u, mini_info(K_ENUM, 1, 0), 4u, mini_str(m, "X"), 0u);
    mini_type(m, 15, mini_str(m, "s2"), mini_info(K_STRUCT, 4, 0), 40u,
              mini_str(m, "p"), 16u, 0u, mini_str(m, "arr"), 4u, 64u,
              mini_str(m, "e"), 17u, 192u, mini_str(m, "cb"), 13u, 256u);
    mini_type(m, 4, mini_str(m, "bpf_kfunc"), mini_info(K_DECL_TAG, 0, 0), 6u, 0xFFFFFFFFu);
    mini_type(m, 5, mini_str(m, "small"), mini_info(K_ENUM, 1, 0), 1u, mini_str(m, "S"), 1u);
    mini_type(m, 3, mini_str(m, "user"), mini_info(K_TYPE_TAG, 0, 0), 1u);
    mini_type(m, 3, 0u, mini_info(K_PTR, 0, 0), 21u);
    mini_type(m, 6, mini_str(m, "tagged"), mini_info(K_STRUCT, 1, 0), 8u,
              mini_str(m, "q"), 22u, 0u);
    mini_type(m, 9, mini_str(m, "gap"), mini_info(K_STRUCT, 2, 0), 16u,
              mini_str(m, "a"), 1u, 0u, mini_str(m, "b"), 1u, 96u);
}

static const uint32_t HEADER_DEFS[] = {3, 7, 9, 10, 11, 13, 14, 18, 20, 23, 24};
#define NDEFS (sizeof HEADER_DEFS / sizeof *HEADER_DEFS)

static int open_header_types(uint8_t *buf, blob_t *b)
{
    mini_t m;
    header_types(&m);
    return mini_open(&m, buf, b);
}

/* The text of spelling k, NUL-terminated in `out` (room for `room` bytes). */
static const char *text_of(const cdump_spellings_t *s, size_t k, char *out, size_t room)
{
    size_t n = s->items[k].text_len < room - 1 ? s->items[k].text_len : room - 1;
    memcpy(out, s->text.p + s->items[k].text_at, n);
    out[n] = 0;
    return out;
}

/* Whether spelling k mentions `id` in `mode`. */
static int mentions(const cdump_spellings_t *s, size_t k, uint32_t id, uint32_t mode)
{
    for (size_t j = 0; j < s->items[k].nmentions; j++) {
        const cdump_mention_t *x = &s->mentions[s->items[k].mention_at + j];
        if (x->id == id && x->mode == mode) return 1;
    }
    return 0;
}

static size_t item_of(const cdump_spellings_t *s, uint32_t id)
{
    for (size_t k = 0; k < s->nitems; k++)
        if (s->items[k].id == id) return k;
    return SIZE_MAX;
}

static void definitions_of_every_kind(void)
{
    static uint8_t buf[MINI_BLOB_MAX];
    blob_t b;
    CHECK(open_header_types(buf, &b) == BLOB_OK);
    CHECK(cdump_shape_ok(&b.t, 8) == 1);
    cdump_spellings_t s = {0};
    int declined = failures_declined;
    CHECK(cdump_definitions(&b.t, 8, &s) == 0 && failures_declined == declined);
    CHECK(s.nitems == NDEFS);
    for (size_t k = 0; k < s.nitems && k < NDEFS; k++) CHECK(s.items[k].id == HEADER_DEFS[k]);
    char text[512];
    size_t s2 = item_of(&s, 18), u = item_of(&s, 10);
    CHECK(s2 != SIZE_MAX && u != SIZE_MAX);
    if (s2 != SIZE_MAX && u != SIZE_MAX) {
        /* The anonymous enum {X} is printed inside s2 (so no definition of its own). */
        CHECK(strstr(text_of(&s, s2, text, sizeof text), "enum {\n\t\tX = 0,\n\t} e;") != NULL);
        CHECK(s.items[s2].nenumerators == 1);
        CHECK(mentions(&s, s2, 14, CDUMP_REF) && mentions(&s, s2, 13, CDUMP_VALUE));
        CHECK(mentions(&s, u, 3, CDUMP_VALUE) && s.items[u].nmentions == 1);
    }
    cdump_spellings_free(&s);
    blob_free(&b);
}

/* A suffix callback: "___1" for enumerator 0 of e64; -1 (a failed callback) for any of
 * small's. */
static int test_suffix(void *arg, uint32_t id, size_t occurrence, const char **s, size_t *len)
{
    int *calls = arg;
    ++*calls;
    *s = NULL;
    if (id == 20) return -1;
    if (id == 7 && occurrence == 0) {
        *s = "___1";
        *len = 4;
    }
    return 0;
}

static void display_names_and_suffixes(void)
{
    static uint8_t buf[MINI_BLOB_MAX];
    blob_t b;
    CHECK(open_header_types(buf, &b) == BLOB_OK);
    cdump_name_t display[25] = {{0}};
    display[3] = (cdump_name_t){"s___2", 5};
    display[13] = (cdump_name_t){"fn_t___3", 8};
    const uint32_t ids[] = {3, 10, 7, 18};
    cdump_spellings_t s = {0};
    int calls = 0;
    CHECK(cdump_render(&b.t, 8, display, ids, 4, test_suffix, &calls, &s) == 0);
    CHECK(s.nitems == 4 && calls == 2);   /* e64's A and s2's X */
    char text[512];
    if (s.nitems == 4) {
        CHECK(!strncmp(text_of(&s, 0, text, sizeof text), "struct s___2 {", 14));
        CHECK(strstr(text_of(&s, 1, text, sizeof text), "\tstruct s___2 b;\n") != NULL);
        CHECK(strstr(text_of(&s, 2, text, sizeof text), "\tA___1 = -1LL,\n") != NULL);
        CHECK(strstr(text_of(&s, 3, text, sizeof text), "\tfn_t___3 cb;\n") != NULL);
    }
    /* A failed callback stops the call, and the C reports nothing over it. */
    cdump_spellings_free(&s);
    const uint32_t small[] = {20};
    int declined = failures_declined, nomem = failures_out_of_memory;
    CHECK(cdump_render(&b.t, 8, NULL, small, 1, test_suffix, &calls, &s) == -1);
    CHECK(failures_declined == declined && failures_out_of_memory == nomem);
    cdump_spellings_free(&s);
    blob_free(&b);
}

static void declarations(void)
{
    static uint8_t buf[MINI_BLOB_MAX];
    blob_t b;
    CHECK(open_header_types(buf, &b) == BLOB_OK);
    const uint32_t funcs[] = {6};
    const cdump_name_t names[] = {{"bpf_f", 5}};
    cdump_spellings_t s = {0};
    char text[128];
    CHECK(cdump_declarations(&b.t, 8, NULL, funcs, names, 1, &s) == 0 && s.nitems == 1);
    if (s.nitems == 1) {
        CHECK(!strcmp(text_of(&s, 0, text, sizeof text), "int bpf_f(int x)"));
        CHECK(s.items[0].nmentions == 0 && s.items[0].nenumerators == 0);
    }
    cdump_spellings_free(&s);
    blob_free(&b);
}

/* The placement of the definitions, ranks in id order: each before what holds it by
 * value or names it, and opaque (a declaration) before s2. */
static void placement(void)
{
    static uint8_t buf[MINI_BLOB_MAX];
    blob_t b;
    CHECK(open_header_types(buf, &b) == BLOB_OK);
    cdump_spellings_t s = {0};
    CHECK(cdump_definitions(&b.t, 8, &s) == 0 && s.nitems == NDEFS);
    uint32_t defs[NDEFS], sequence[NDEFS], forward[32], place[32] = {0};
    uint64_t rank[NDEFS];
    size_t mention_at[NDEFS], nmentions[NDEFS], nforward = 99;
    for (size_t k = 0; k < NDEFS && k < s.nitems; k++) {
        defs[k] = s.items[k].id;
        rank[k] = k;
        mention_at[k] = s.items[k].mention_at;
        nmentions[k] = s.items[k].nmentions;
    }
    cdump_place_in_t in = {defs, rank, s.mentions, mention_at, nmentions, NDEFS};
    int placed = cdump_placement(&b.t, 8, &in, sequence, forward, &nforward);
    CHECK(placed == 0);
    for (size_t k = 0; !placed && k < NDEFS; k++) place[sequence[k]] = (uint32_t)k + 1;
    for (size_t k = 0; k < NDEFS; k++) CHECK(place[HEADER_DEFS[k]] != 0);
    CHECK(place[3] < place[10] && place[13] < place[18] && place[14] < place[18]);
    CHECK(nforward == 0);
    /* Inputs it declines: a mention of no type, a definition twice. */
    cdump_mention_t bad = {25, CDUMP_VALUE};
    size_t bad_at[NDEFS] = {0}, bad_count[NDEFS] = {1};
    cdump_place_in_t past = {defs, rank, &bad, bad_at, bad_count, NDEFS};
    int declined = failures_declined;
    CHECK(cdump_placement(&b.t, 8, &past, sequence, forward, &nforward) == -1);
    defs[1] = defs[0];
    CHECK(cdump_placement(&b.t, 8, &in, sequence, forward, &nforward) == -1);
    CHECK(failures_declined == declined + 2);
    cdump_spellings_free(&s);
    blob_free(&b);
}

static void type_facts(void)
{
    static uint8_t buf[MINI_BLOB_MAX];
    blob_t b;
    CHECK(open_header_types(buf, &b) == BLOB_OK);
    const types_t *t = &b.t;
    uint8_t info[25];
    uint32_t len;
    CHECK(cdump_facts_apply(t) == 0 && cdump_pointer_size(t) == 8);
    cdump_info_bytes(t, info);
    CHECK(info[0] == 0 && info[1] == K_INT && info[7] == (K_ENUM64 | 0x80));
    CHECK(cdump_type_name(t, 6, &len) && len == 0);          /* a FUNC's name is not spelled */
    CHECK(memcmp(cdump_type_name(t, 3, &len), "s", 1) == 0 && len == 1);
    CHECK(cdump_type_name(t, 0, &len) && len == 0 && cdump_type_name(t, 25, &len) && len == 0);
    CHECK(cdump_tagged_function(t, 18) == 6 && cdump_tagged_function(t, 5) == 0);
    blob_free(&b);
}

/* Inputs the C leaves to the reference: each declined (ValueError), nothing spelled. */
static void declined_inputs(void)
{
    static uint8_t buf[MINI_BLOB_MAX], split_buf[MINI_BLOB_MAX];
    blob_t b, split;
    CHECK(open_header_types(buf, &b) == BLOB_OK);
    mini_t m;
    mini_init(&m);
    mini_type(&m, 3, 0u, mini_info(K_PTR, 0, 0), 3u);
    CHECK(blob_open(split_buf, mini_blob(&m, split_buf), &b, &split) == BLOB_OK);
    cdump_spellings_t s = {0};
    int declined = failures_declined;
    const uint32_t not_own[] = {0}, not_def[] = {1}, not_func[] = {3};
    const cdump_name_t name = {"x", 1};
    CHECK(cdump_definitions(&split.t, 8, &s) == -1 && cdump_facts_apply(&split.t) == -1);
    CHECK(cdump_shape_ok(&b.t, 3) == -1);
    CHECK(cdump_render(&b.t, 8, NULL, not_own, 1, NULL, NULL, &s) == -1);
    CHECK(cdump_render(&b.t, 8, NULL, not_def, 1, NULL, NULL, &s) == -1);
    CHECK(cdump_declarations(&b.t, 8, NULL, not_func, &name, 1, &s) == -1);
    CHECK(failures_declined == declined + 6 && s.nitems == 0);
    cdump_spellings_free(&s);
    blob_free(&split);
    blob_free(&b);
}

static void put_hex(const void *p, size_t n)
{
    for (size_t j = 0; j < n; j++) printf("%02x", ((const uint8_t *)p)[j]);
}

/* One file's shape check and definitions, one line each (hex text, mentions id:mode,
 * hex enumerator names); "declined" where the C leaves the file to the reference. */
static int spell_file(const char *path)
{
    uint8_t *data;
    size_t size;
    blob_t b;
    if (read_whole(path, &data, &size)) return -1;
    printf("# %s\n", path);
    cdump_spellings_t s = {0};
    int shape = -1;
    if (blob_open(data, size, NULL, &b) == BLOB_OK) shape = cdump_shape_ok(&b.t, cdump_pointer_size(&b.t));
    if (shape < 0 || cdump_definitions(&b.t, cdump_pointer_size(&b.t), &s)) {
        printf("declined\n");
    } else {
        printf("shape %d\n", shape);
        for (size_t k = 0; k < s.nitems; k++) {
            const cdump_spelling_t *one = &s.items[k];
            printf("def %u ", one->id);
            put_hex(s.text.p + one->text_at, one->text_len);
            for (size_t j = 0; j < one->nmentions; j++)
                printf(" %u:%u", s.mentions[one->mention_at + j].id,
                       s.mentions[one->mention_at + j].mode);
            printf(" |");
            for (size_t j = 0; j < one->nenumerators; j++) {
                uint32_t len;
                const uint8_t *name = name_at(&b.t, s.enumerators[one->enumerator_at + j], &len);
                printf(" ");
                put_hex(name, len);
            }
            printf("\n");
        }
    }
    cdump_spellings_free(&s);
    blob_free(&b);
    free(data);
    return 0;
}

static int write_blob(const char *dir)
{
    mini_t m;
    header_types(&m);
    static uint8_t buf[MINI_BLOB_MAX];
    char path[4096];
    snprintf(path, sizeof path, "%s/handmade-header.btf", dir);
    FILE *fp = fopen(path, "wb");
    size_t n = mini_blob(&m, buf);
    int rc = fp && fwrite(buf, 1, n, fp) == n ? 0 : -1;
    if (fp && fclose(fp)) rc = -1;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_blob(argv[2]) ? 1 : 0;
    if (argc >= 2 && !strcmp(argv[1], "--spell")) {
        for (int k = 2; k < argc; k++)
            if (spell_file(argv[k])) return 1;
        return 0;
    }
    RUN(definitions_of_every_kind);
    RUN(display_names_and_suffixes);
    RUN(declarations);
    RUN(placement);
    RUN(type_facts);
    RUN(declined_inputs);
    return ctest_status("test_cdump");
}
