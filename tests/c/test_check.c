/* The validator (check/csrc/check.c) without Python: the tests' good types pass, each
 * one-word damage gives the finding the kernel's rule names (the key, at the type),
 * real BTF the kernel loaded (arguments: BTF files, SPLIT:BASE for a module) has no
 * finding, and cut or damaged real BTF gives well-formed findings. tests/test_c_units.py
 * holds this C to check/validator.py's verdicts on the same blobs (check_verdicts.c). */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "check.h"
#include "ctest.h"
#include "minibtf.h"

static int key_of(const char *name)
{
    for (int k = 0; k < CHECK_NKEYS; k++)
        if (!strcmp(check_keys[k], name)) return k;
    return -1;
}

/* The findings of levels (a base, or a base and a split BTF), well formed; rules_check's
 * return value in *rc. */
static check_findings_t findings(const types_t *levels, int nlevels, int *rc)
{
    check_findings_t out = {0};
    *rc = rules_check(levels, nlevels, &out);
    CHECK(*rc == 0 || *rc == 1);
    const types_t *own = &levels[nlevels - 1];
    int sorted = 1, owned = 1, keyed = 1, valued = 1;
    for (size_t k = 0; k < out.nf; k++) {
        const check_finding_t *f = &out.f[k];
        sorted &= !k || f->id >= out.f[k - 1].id;
        owned &= f->id >= own->first_id && f->id < own->first_id + own->count;
        keyed &= f->key < CHECK_NKEYS;
        valued &= (size_t)f->first + f->count <= out.nv;
    }
    CHECK(sorted && owned && keyed && valued);
    return out;
}

static void good_types_pass(void)
{
    mini_t m;
    mini_types(&m);
    static uint8_t buf[MINI_BLOB_MAX];
    blob_t b;
    CHECK(mini_open(&m, buf, &b) == BLOB_OK);
    int rc;
    check_findings_t out = findings(&b.t, 1, &rc);
    CHECK(rc == 0 && out.nf == 0);
    findings_free(&out);
    blob_free(&b);
}

/* One word of the good types changed: the first finding is `key` at type `id`. */
static void damage_named(void)
{
    mini_t m;
    mini_types(&m);
    const uint32_t bad_name = mini_str(&m, "1s");
    static const struct { size_t word; uint32_t value; const char *key; uint32_t id; } cases[] = {
        {3, 200, "int-128", 1},                          /* 200 bits */
        {3, 1u << 24 | 64, "int-size", 1},               /* 64 bits in 4 bytes */
        {3, 3u << 24 | 32, "int-encoding", 1},           /* SIGNED | CHAR */
        {4, 1, "name-forbidden", 2},                     /* a named PTR */
        {9, 1, "member-past", 3},                        /* b at bit 64 of a 1-byte struct */
        {12, 96, "member-order", 3},                     /* a at bit 96, b at 64 */
        {14, 3, "loop", 3},                              /* s holds an s by value */
        {18, 4, "array-size", 4},                        /* an ARRAY with a size */
        {28, 2u | (uint32_t)K_FUNC << 24, "func-linkage", 6},   /* extern */
        {29, 1, "func-not-proto", 6},                    /* f's type is int */
        {32, 3, "enum-size", 7},
        {27, 0, "name-missing", 6},                      /* a FUNC without a name */
    };
    static uint8_t buf[MINI_BLOB_MAX];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        mini_types(&m);
        m.w[cases[c].word] = cases[c].value;
        blob_t b;
        CHECK(mini_open(&m, buf, &b) == BLOB_OK);
        int rc, key = key_of(cases[c].key);
        check_findings_t out = findings(&b.t, 1, &rc);
        int hit = rc == 0 && out.nf && out.f[0].key == key && out.f[0].id == cases[c].id;
        CHECK(key >= 0 && hit);
        if (!hit)
            fprintf(stderr, "  case %zu: want %s at %u, got %zu findings, first %s at %u\n", c,
                    cases[c].key, cases[c].id, out.nf, out.nf ? check_keys[out.f[0].key] : "-",
                    out.nf ? out.f[0].id : 0);
        findings_free(&out);
        blob_free(&b);
    }
    mini_types(&m);
    m.w[7] = bad_name;                                   /* struct "1s" */
    blob_t b;
    CHECK(mini_open(&m, buf, &b) == BLOB_OK);
    int rc;
    check_findings_t out = findings(&b.t, 1, &rc);
    CHECK(out.nf == 1 && out.f[0].key == key_of("name-identifier") && out.f[0].id == 3);
    findings_free(&out);
    blob_free(&b);
}

/* A real blob (over a base): no finding; cut or damaged: well-formed findings. */
static void real_blob(const char *path, const char *base_path)
{
    uint8_t *data, *base_data = NULL, *cut;
    size_t size, base_size = 0;
    CHECK(read_whole(path, &data, &size) == 0);
    if (base_path) CHECK(read_whole(base_path, &base_data, &base_size) == 0);
    if (!data || (base_path && !base_data)) return;
    blob_t base, b;
    types_t levels[2];
    int nlevels = 1, rc;
    if (base_path) {
        CHECK(blob_open(base_data, base_size, NULL, &base) == BLOB_OK);
        levels[0] = base.t;
        nlevels = 2;
    }
    CHECK(blob_open(data, size, base_path ? &base : NULL, &b) == BLOB_OK);
    levels[nlevels - 1] = b.t;
    check_findings_t out = findings(levels, nlevels, &rc);
    CHECK(rc == 0 && out.nf == 0);
    findings_free(&out);
    uint32_t hdr_len, type_off, type_len;
    memcpy(&hdr_len, data + 4, 4), memcpy(&type_off, data + 8, 4), memcpy(&type_len, data + 12, 4);
    cut = malloc(size);
    int with_findings = 0, taken = 0;
    srand(29);
    /* 32 times a word set to a small value, 16 times cut short and a word set at random. */
    for (int k = 0; cut && type_len && k < 48; k++) {
        memcpy(cut, data, size);
        uint32_t len = k < 32 ? type_len : (uint32_t)rand() % (type_len / 4) * 4;
        uint32_t v = k < 32 ? (uint32_t)rand() % 64 : (uint32_t)rand();
        memcpy(cut + 12, &len, 4);
        if (len) memcpy(cut + hdr_len + type_off + (uint32_t)rand() % len / 4 * 4, &v, 4);
        blob_t c;
        if (blob_open(cut, size, base_path ? &base : NULL, &c) == BLOB_OK) {
            levels[nlevels - 1] = c.t;
            out = findings(levels, nlevels, &rc);
            with_findings += out.nf > 0;
            taken++;
            findings_free(&out);
        }
        blob_free(&c);
    }
    printf("     %s: %u types; of 48 damaged, %d taken, %d of them with findings\n", path,
           b.t.count, taken, with_findings);
    CHECK(with_findings > 0);
    free(cut);
    blob_free(&b);
    if (base_path) blob_free(&base);
    free(data), free(base_data);
}

/* Arguments: BTF files the kernel loads, each a base or SPLIT:BASE. */
int main(int argc, char **argv)
{
    big_alloc_setup();
    RUN(good_types_pass);
    RUN(damage_named);
    for (int k = 1; k < argc; k++) {
        char *colon = strchr(argv[k], ':');
        if (colon) *colon = 0;
        int before = ctest_failures;
        real_blob(argv[k], colon ? colon + 1 : NULL);
        printf("%s real_blob %s\n", ctest_failures == before ? "ok  " : "FAIL", argv[k]);
    }
    return ctest_status("test_check");
}
