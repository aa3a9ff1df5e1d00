/* The BTF view over raw words (btf/csrc/types.c) without Python: index_types takes what
 * btf/reader.py takes and refuses what it refuses (damaged records, references past the
 * last id, names past the strings), the edges, names and values it hands the passes, and
 * on real blobs (arguments: BTF files) every cut and every damaged word either refused or
 * indexed with every reference and name in bounds (ASan/UBSan watch the reads). */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "ctest.h"
#include "minibtf.h"

static void view_of_good_types(void)
{
    mini_t m;
    mini_types(&m);
    static uint8_t buf[MINI_BLOB_MAX];
    blob_t b;
    CHECK(mini_open(&m, buf, &b) == BLOB_OK);
    const types_t *t = &b.t;
    CHECK(t->count == 7 && t->start[7] == t->nwords && t->first_id == 1);
    uint32_t e[8], len;
    CHECK(type_edges(t, 2, e) == 2 && e[0] == 1 && e[1] == 2 && edge_count(t, 2) == 2);
    CHECK(type_edges(t, 3, e) == 2 && e[0] == 1 && e[1] == 1);
    CHECK(type_edges(t, 4, e) == 2 && e[0] == 1 && e[1] == 1 && edge_count(t, 4) == 2);
    CHECK(type_edges(t, 5, e) == 1 && e[0] == 5 && type_edges(t, 0, e) == 0);
    const uint8_t *name = name_at(t, t_name(t, 2), &len);
    CHECK(len == 1 && name[0] == 's');
    CHECK(label_size(t, 2) == 16 && label_size(t, 1) == 0 && label_size(t, 6) == 8);
    const uint32_t *item = t_rest(t, 6);
    CHECK(enumerator_value(K_ENUM64, item) == UINT64_MAX);
    CHECK(enumerator_signed(K_ENUM64, UINT64_MAX) == -1);
    CHECK(enumerator_signed(K_ENUM, 0xFFFFFFFFu) == -1);
    CHECK(t_kind(t, 5) == K_FUNC && t_vlen(t, 5) == 1 && t_kflag(t, 6) == 1);
    blob_free(&b);
}

/* One word of the good types changed, and whether the reader takes the result. */
static void refused_when_damaged(void)
{
    static const struct { size_t word; uint32_t value; int taken; } cases[] = {
        {1, 1u << 24 | 1, 0},             /* INT with a vlen */
        {6, 8, 0},                        /* PTR to id 8 of 7 */
        {6, 7, 1},                        /* PTR to the last id */
        {14, 9, 0},                       /* a member's type past the last id */
        {0, 4096, 0},                     /* a name past the strings */
        {1, 0, 0},                        /* kind 0 */
        {1, (uint32_t)(K_MAX + 1) << 24, 0},    /* a kind past the table */
        {20, 100, 0},                     /* ARRAY's index type past the last id */
        {23, (uint32_t)K_FLOAT << 24 | 1, 0},  /* FUNC_PROTO becomes a FLOAT with a vlen */
    };
    static uint8_t buf[MINI_BLOB_MAX];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        mini_t m;
        mini_types(&m);
        m.w[cases[c].word] = cases[c].value;
        blob_t b;
        int rc = mini_open(&m, buf, &b);
        CHECK(rc == (cases[c].taken ? BLOB_OK : BLOB_REFUSED));
        if (rc != (cases[c].taken ? BLOB_OK : BLOB_REFUSED))
            fprintf(stderr, "  case %zu: rc %d\n", c, rc);
        blob_free(&b);
    }
    mini_t m;
    mini_types(&m);
    m.nw--;                               /* the last record cut short */
    blob_t b;
    CHECK(mini_open(&m, buf, &b) == BLOB_REFUSED);
    blob_free(&b);
}

/* Names read within their table, through a chain, and never past its end. */
static void names_bounded(void)
{
    static const uint8_t base[] = "\0int\0long", own[] = {'x', 0, 'y', 'z'};
    strtab_t tabs[2] = {{base, 0, sizeof base}, {own, sizeof base, sizeof own}};
    types_t t = {.tabs = tabs, .ntabs = 2};
    uint32_t len;
    const uint8_t *p = name_at(&t, 1, &len);
    CHECK(len == 3 && !memcmp(p, "int", 3));
    p = name_at(&t, sizeof base, &len);
    CHECK(len == 1 && p[0] == 'x');
    p = name_at(&t, sizeof base + 2, &len);   /* "yz" without its NUL: bounded */
    CHECK(len == 2 && p == own + 2);
    p = name_at(&t, sizeof base + 4, &len);   /* past the last table */
    CHECK(len == 0 && p[0] == 0);
    p = name_at(&t, UINT32_MAX, &len);
    CHECK(len == 0);
}

/* Every reference and name of an indexed section is in bounds (what the passes rely on). */
static int in_bounds(const types_t *t)
{
    uint32_t last = t->first_id + t->count - 1, str_end = t->tabs[t->ntabs - 1].start
                    + t->tabs[t->ntabs - 1].len;
    uint32_t *e = malloc(((size_t)t->nwords + 2) * sizeof *e);
    int ok = e != NULL && t->start[t->count] == t->nwords;
    for (uint32_t i = 0; ok && i < t->count; i++) {
        ok &= t->start[i] < t->start[i + 1] && t_name(t, i) < str_end;
        uint32_t n = type_edges(t, i, e);
        ok &= n == edge_count(t, i);
        for (uint32_t k = 0; k < n; k++) ok &= e[k] <= last;
    }
    free(e);
    return ok;
}

static void real_blob(const char *path, const uint8_t *base_data, size_t base_size)
{
    uint8_t *data, *cut;
    size_t size;
    CHECK(read_whole(path, &data, &size) == 0);
    if (!data) return;
    blob_t base, b;
    const blob_t *over = NULL;
    if (base_data) {
        CHECK(blob_open(base_data, base_size, NULL, &base) == BLOB_OK);
        over = &base;
    }
    CHECK(blob_open(data, size, over, &b) == BLOB_OK && in_bounds(&b.t));
    uint32_t hdr_len, type_off, type_len;
    memcpy(&hdr_len, data + 4, 4), memcpy(&type_off, data + 8, 4), memcpy(&type_len, data + 12, 4);
    /* The type section cut at 64 places: refused, or indexed with everything in bounds. */
    cut = malloc(size);
    CHECK(cut != NULL);
    int taken = 0, refused = 0;
    srand(29);
    for (int k = 1; cut && k <= 128; k++) {
        memcpy(cut, data, size);
        uint32_t len = k <= 64 ? type_len / 4 / 64 * (uint32_t)k * 4
                               : (uint32_t)rand() % (type_len / 4) * 4;
        memcpy(cut + 12, &len, 4);
        /* ...and from k > 64 on, a word of it damaged. */
        if (k > 64 && len) {
            uint32_t at = hdr_len + type_off + (uint32_t)rand() % len / 4 * 4, v = (uint32_t)rand();
            memcpy(cut + at, &v, 4);
        }
        blob_t c;
        int rc = blob_open(cut, size, over, &c);
        CHECK(rc == BLOB_OK || rc == BLOB_REFUSED);
        if (rc == BLOB_OK) CHECK(in_bounds(&c.t) && c.t.count <= b.t.count);
        taken += rc == BLOB_OK, refused += rc == BLOB_REFUSED;
        blob_free(&c);
    }
    printf("     %s: %u types; of 128 cut or damaged, %d taken, %d refused\n", path, b.t.count,
           taken, refused);
    CHECK(refused > 0);
    free(cut);
    blob_free(&b);
    if (over) blob_free(&base);
    free(data);
}

/* Arguments: BTF files, each a base or "SPLIT:BASE". */
int main(int argc, char **argv)
{
    big_alloc_setup();
    RUN(view_of_good_types);
    RUN(refused_when_damaged);
    RUN(names_bounded);
    for (int k = 1; k < argc; k++) {
        char *colon = strchr(argv[k], ':');
        uint8_t *base = NULL;
        size_t base_size = 0;
        if (colon) {
            *colon = 0;
            CHECK(read_whole(colon + 1, &base, &base_size) == 0);
        }
        int before = ctest_failures;
        real_blob(argv[k], base, base_size);
        free(base);
        printf("%s real_blob %s\n", ctest_failures == before ? "ok  " : "FAIL", argv[k]);
    }
    return ctest_status("test_view");
}
