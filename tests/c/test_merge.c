/* The keyed merge's plain C (dwarf/csrc/merge.c) without Python, as merge.h promises it:
 * two workers' groups of entries with shared keys merged once, a name two groups define
 * differently found unsafe with what reads it (and the units holding it), a declaration
 * folded into its definition, a cycle, the string table and the type section's words
 * checked word by word against the BTF format, and the failures' codes and messages.
 * The host is a small one: names from a fixed table, tokens and VAR placements numbered
 * in one array as the Python binding numbers its values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "kinds.h"
#include "merge.h"

/* Names by number. */
static const char *const NAMES[] = {"", "int", "s", "p", "v", ".data", "u"};
enum { N_EMPTY, N_INT, N_S, N_P, N_V, N_DATA, N_U };

/* A value of the host: a token, or a VAR's placement (linkage, offset, size). */
typedef struct { int is_token, is_enum, is_union; int64_t name; uint64_t linkage, offset, size; } value_t;

typedef struct {
    value_t values[16];
    size_t nvalues;
    uint64_t placed_type[4], placed_offset[4];
    size_t nplaced;
} host_t;

static int name_text(void *ctx, int64_t name, merge_text_t *out)
{
    *out = (merge_text_t){NAMES[name], strlen(NAMES[name]), 1};
    return 0;
}

static int object_truth(void *ctx, int64_t object) { return 1; }

static int64_t token(void *ctx, int is_enum, int64_t name, int is_union)
{
    host_t *h = ctx;
    for (size_t i = 0; i < h->nvalues; i++) {
        const value_t *v = &h->values[i];
        if (v->is_token && v->is_enum == is_enum && v->name == name && v->is_union == is_union)
            return (int64_t)i;
    }
    h->values[h->nvalues] = (value_t){1, is_enum, is_union, name, 0, 0, 0};
    return (int64_t)h->nvalues++;
}

static size_t object_count(void *ctx) { return ((host_t *)ctx)->nvalues; }

static int object_bits(void *ctx, int64_t object, int exact, uint64_t *out) { return 1; }

static int placement(void *ctx, int64_t object, uint64_t type_id, uint64_t *linkage)
{
    host_t *h = ctx;
    const value_t *v = &h->values[object];
    if (v->is_token) return 1;
    h->placed_type[h->nplaced] = type_id;
    h->placed_offset[h->nplaced++] = v->offset;
    *linkage = v->linkage;
    return 0;
}

static void start(merge_t *m, host_t *h)
{
    memset(h, 0, sizeof *h);
    merge_host_t host = {h, name_text, object_truth, token, object_count, object_bits,
                         placement};
    merge_init(m, &host);
}

#define I(x) {CELL_INT, (x)}
#define N(x) {CELL_NAME, (x)}
#define T(x) {CELL_TOKEN, (x)}
#define O(x) {CELL_OBJECT, (x)}
#define ADD(m, ...) do { const merge_cell_t c_[] = {__VA_ARGS__}; \
    CHECK(merge_add_entry((m), c_, sizeof c_ / sizeof *c_) == 0); } while (0)

static uint32_t info(int kind, int kflag, int vlen)
{
    return (uint32_t)kflag << 31 | (uint32_t)kind << 24 | (uint32_t)vlen;
}

/* Two groups, each sending int, a pointer to it, struct s { int *p; } and a VAR v of s:
 * four keys, numbered from `first_id` with names from `string_start` (1 and 0; or split BTF
 * over a base of first_id - 1 types whose strings end there, without an "" of its
 * own: the base's). */
static void shared_keys_merged_once(uint32_t first_id, uint32_t string_start)
{
    merge_t m;
    host_t h;
    start(&m, &h);
    h.values[h.nvalues++] = (value_t){0, 0, 0, N_DATA, 1, 16, 4};
    for (int group = 0; group < 2; group++) {
        CHECK(merge_begin_group(&m) == 0);
        ADD(&m, I(K_INT), N(N_INT), I(0), I(4), I(32), I(0));
        ADD(&m, I(K_PTR), N(N_EMPTY), I(0), I(1), I(0), I(0));
        ADD(&m, I(K_STRUCT), N(N_S), I(0), I(8), I(0), I(1), N(N_P), I(2), I(0));
        ADD(&m, I(K_VAR), N(N_V), I(0), I(3), O(0), I(0));
        m.received += 4;
        CHECK(merge_end_group(&m) == 0);
        const uint32_t keys[] = {1, 2, 3, 4};
        CHECK(merge_add_unit(&m, keys, 4) == 0);
    }
    CHECK(m.entries.count == 4 && m.received == 8);
    CHECK(merge_finish(&m, NULL, 0) == 0 && m.unsafe.n == 5);
    CHECK(!m.unsafe.a[1] && !m.unsafe.a[2] && !m.unsafe.a[3] && !m.unsafe.a[4]);
    CHECK(!merge_unit_redone(&m, 0) && !merge_unit_redone(&m, 1));
    const merge_cell_t ptr[] = {I(K_PTR), N(N_EMPTY), I(0), I(1), I(0), I(0)};
    const merge_cell_t other[] = {I(K_PTR), N(N_EMPTY), I(0), I(3), I(0), I(0)};
    int64_t key;
    CHECK(merge_find(&m, ptr, 6, &key) == 0 && key == 2);
    CHECK(merge_find(&m, other, 6, &key) == 0 && key == -2);
    uint32_t id = first_id - 1;  /* the type ids: id + 1 .. id + 5 */
    CHECK(merge_emit(&m, first_id) == 0 && m.emitted.n == 4);
    CHECK(m.type_of.a[1] == id + 1 && m.type_of.a[2] == id + 2 && m.type_of.a[4] == id + 4);
    /* a record the merged Btf appends: typedef p_t... named "p", of type 3 */
    const merge_cell_t record[] = {I(K_TYPEDEF), N(N_P), I(0), I(id + 3), I(0), I(0)};
    char *data;
    size_t len;
    CHECK(merge_strings_begin(&m) == 0 && merge_strings_add(&m, record) == 0);
    CHECK(merge_strings_table(&m, string_start, &data, &len) == 0);
    const char *names = string_start ? "int\0p\0s\0v\0" : "\0int\0p\0s\0v\0";
    CHECK(len == (string_start ? 10u : 11u) && memcmp(data, names, len) == 0);
    free(data);
    uint32_t at = string_start ? string_start - 1 : 0;  /* the names' offsets: at + 1, 5, 7, 9 */
    merge_words_t out;
    CHECK(merge_words_begin(&m, &out) == 0 && merge_words_add(&m, record, &out) == 0);
    const uint32_t words[] = {
        at + 1, info(K_INT, 0, 0), 4, 32,                       /* int */
        0, info(K_PTR, 0, 0), id + 1,                           /* int * */
        at + 7, info(K_STRUCT, 0, 1), 8, at + 5, id + 2, 0,     /* struct s { int *p; } */
        at + 9, info(K_VAR, 0, 0), id + 3, 1,                   /* v, global */
        at + 5, info(K_TYPEDEF, 0, 0), id + 3,                  /* the record */
    };
    CHECK(out.w.n == sizeof words / 4 && memcmp(out.w.a, words, sizeof words) == 0);
    CHECK(out.type_id == id + 5 && h.nplaced == 1 && h.placed_type[0] == id + 4);
    VEC_FREE(out.w);
    merge_free(&m);
}

static void shared_keys_in_a_base(void)
{
    shared_keys_merged_once(1, 0);
}

static void shared_keys_split_over_a_base(void)
{
    shared_keys_merged_once(101, 1000);
}

/* struct s defined once, and a pointer to its token: with the token split (a module's
 * base defines s otherwise) the pointer is unsafe, the definition stays; a split token
 * the host never numbered is declined. */
static void split_token_is_ambiguous(void)
{
    merge_t m;
    host_t h;
    for (int known = 1; known >= 0; known--) {
        start(&m, &h);
        int64_t s_token = token(&h, 0, N_S, 0);
        CHECK(merge_begin_group(&m) == 0);
        ADD(&m, I(K_STRUCT), N(N_S), I(0), I(4), I(0), I(0));
        ADD(&m, I(K_PTR), N(N_EMPTY), I(0), T(s_token), I(0), I(0));
        CHECK(merge_end_group(&m) == 0);
        const uint32_t keys[] = {1, 2};
        CHECK(merge_add_unit(&m, keys, 2) == 0);
        const int64_t split[] = {known ? s_token : s_token + 1};
        if (known) {
            CHECK(merge_finish(&m, split, 1) == 0);
            CHECK(!m.unsafe.a[1] && m.unsafe.a[2] && merge_unit_redone(&m, 0));
            CHECK(m.target.a[s_token] == 0);
        } else {
            CHECK(merge_finish(&m, split, 1) == -1 && m.failure.code == MERGE_DECLINED);
        }
        merge_free(&m);
    }
}

/* struct s defined twice (sizes 4 and 8): the pointer to its token is unsafe and so is
 * the unit holding it, the two definitions stay (each its own type); struct u's
 * declaration folds into its definition; a CYCLE part is unsafe; a VAR's placement goes
 * to the host with the VAR's type id. */
static void ambiguous_name_and_declaration(void)
{
    merge_t m;
    host_t h;
    start(&m, &h);
    int64_t s_token = token(&h, 0, N_S, 0);
    h.values[h.nvalues++] = (value_t){0, 0, 0, N_DATA, 1, 16, 4};
    CHECK(merge_begin_group(&m) == 0);
    ADD(&m, I(K_STRUCT), N(N_S), I(0), I(4), I(0), I(0));          /* key 1 */
    ADD(&m, I(K_PTR), N(N_EMPTY), I(0), T(s_token), I(0), I(0));  /* key 2 */
    ADD(&m, I(K_FWD), N(N_U), I(0), I(0), I(0), I(0));            /* key 3 */
    CHECK(merge_end_group(&m) == 0);
    const uint32_t first[] = {1}, second[] = {2, 3};
    CHECK(merge_add_unit(&m, first, 1) == 0 && merge_add_unit(&m, second, 2) == 0);
    CHECK(merge_begin_group(&m) == 0);
    ADD(&m, I(K_STRUCT), N(N_S), I(0), I(8), I(0), I(0));          /* key 4 */
    ADD(&m, I(K_STRUCT), N(N_U), I(0), I(4), I(0), I(0));          /* key 5 */
    ADD(&m, I(K_VAR), N(N_V), I(0), I(5), O(1), I(0));            /* key 6, of struct u */
    ADD(&m, I(K_PTR), N(N_EMPTY), I(0), I(-1), I(0), I(0));        /* key 7: a CYCLE */
    CHECK(merge_end_group(&m) == 0);
    const uint32_t third[] = {2, 3};                               /* keys 5 and 6 */
    CHECK(merge_add_unit(&m, third, 2) == 0);
    CHECK(merge_finish(&m, NULL, 0) == 0);
    const uint8_t unsafe[] = {0, 0, 1, 0, 0, 0, 0, 1};
    CHECK(m.unsafe.n == 8 && memcmp(m.unsafe.a, unsafe, 8) == 0);
    CHECK(!merge_unit_redone(&m, 0) && merge_unit_redone(&m, 1) && !merge_unit_redone(&m, 2));
    CHECK(merge_emit(&m, 1) == 0 && m.emitted.n == 4);
    CHECK(m.type_of.a[1] == 1 && m.type_of.a[4] == 2 && m.type_of.a[5] == 3);
    CHECK(m.type_of.a[3] == 3 && m.type_of.a[6] == 4 && !m.type_of.a[2] && !m.type_of.a[7]);
    char *data;
    size_t len;
    CHECK(merge_strings_begin(&m) == 0 && merge_strings_table(&m, 0, &data, &len) == 0);
    CHECK(len == 7 && memcmp(data, "\0s\0u\0v\0", 7) == 0);
    free(data);
    merge_words_t out;
    CHECK(merge_words_begin(&m, &out) == 0);
    const uint32_t words[] = {
        1, info(K_STRUCT, 0, 0), 4,                  /* 1: struct s, of 4 */
        1, info(K_STRUCT, 0, 0), 8,                  /* 2: struct s, of 8 */
        3, info(K_STRUCT, 0, 0), 4,                  /* 3: struct u */
        5, info(K_VAR, 0, 0), 3, 1,                  /* 4: v, global */
    };
    CHECK(out.w.n == sizeof words / 4 && memcmp(out.w.a, words, sizeof words) == 0);
    CHECK(h.nplaced == 1 && h.placed_type[0] == 4 && h.placed_offset[0] == 16);
    VEC_FREE(out.w);
    merge_free(&m);
}

/* Out of order, a value no word holds, a name strings() was not given. */
static void failures(void)
{
    merge_t m;
    host_t h;
    start(&m, &h);
    CHECK(merge_emit(&m, 1) == -1 && m.failure.code == MERGE_OUT_OF_ORDER);
    CHECK(strcmp(m.failure.why, "keyed merge: finish() first") == 0);
    CHECK(merge_begin_group(&m) == 0);
    ADD(&m, I(K_INT), N(N_INT), I(0), I(INT64_C(1) << 40), I(32), I(0));
    CHECK(merge_end_group(&m) == 0 && merge_finish(&m, NULL, 0) == 0 && merge_emit(&m, 1) == 0);
    CHECK(merge_begin_group(&m) == -1 && m.failure.code == MERGE_OUT_OF_ORDER);
    CHECK(strcmp(m.failure.why, "keyed merge already finished") == 0);
    merge_words_t out;
    CHECK(merge_words_begin(&m, &out) == -1);
    CHECK(strcmp(m.failure.why, "keyed merge: strings() first") == 0);
    char *data;
    size_t len;
    CHECK(merge_strings_begin(&m) == 0 && merge_strings_table(&m, 0, &data, &len) == 0);
    free(data);
    CHECK(merge_words_begin(&m, &out) == -1 && m.failure.code == MERGE_DECLINED);
    CHECK(strcmp(m.failure.why, "keyed merge: a value no 32-bit word holds") == 0);
    VEC_FREE(out.w);
    const merge_cell_t unnamed[] = {I(K_TYPEDEF), N(N_V), I(0), I(1), I(0), I(0)};
    out = (merge_words_t){{0}, 0, 0};
    CHECK(merge_words_add(&m, unnamed, &out) == -1 && m.failure.code == MERGE_DECLINED);
    CHECK(strcmp(m.failure.why, "keyed merge: a name strings() was not given") == 0);
    VEC_FREE(out.w);
    merge_free(&m);
    /* type ids that would pass 2**32 - 1 */
    start(&m, &h);
    CHECK(merge_begin_group(&m) == 0);
    ADD(&m, I(K_INT), N(N_INT), I(0), I(4), I(32), I(0));
    ADD(&m, I(K_PTR), N(N_EMPTY), I(0), I(1), I(0), I(0));
    CHECK(merge_end_group(&m) == 0 && merge_finish(&m, NULL, 0) == 0);
    CHECK(merge_emit(&m, UINT32_MAX) == -1 && m.failure.code == MERGE_DECLINED);
    CHECK(strcmp(m.failure.why, "keyed merge: type ids past 32 bits") == 0);
    merge_free(&m);
}

int main(void)
{
    RUN(shared_keys_in_a_base);
    RUN(shared_keys_split_over_a_base);
    RUN(split_token_is_ambiguous);
    RUN(ambiguous_name_and_declaration);
    RUN(failures);
    return ctest_status("test_merge");
}
