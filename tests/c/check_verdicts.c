/* The validator's verdicts on blobs, for tests/test_c_units.py to hold against
 * check/validator.py: `check_verdicts BASE|- BLOB...` prints, for each BLOB (over BASE, or
 * a base BTF itself for -), a line "# BLOB" and then "not-btf" (the header checks refuse
 * it), "refused" (index_types refuses its type section), "unsure" (rules_check leaves it to
 * the reference), or one line "ID KIND KEY" per finding, in order. Exit 0, or 2 when a
 * file cannot be read, the base is refused or memory runs out. */
#include <stdio.h>
#include <stdlib.h>

#include "btfblob.h"
#include "check.h"

static int verdict(const types_t *levels, int nlevels)
{
    check_findings_t out = {0};
    int rc = rules_check(levels, nlevels, &out);
    if (rc < 0) return 2;
    if (rc) puts("unsure");
    for (size_t k = 0; !rc && k < out.nf; k++)
        printf("%u %u %s\n", out.f[k].id, out.f[k].kind, check_keys[out.f[k].key]);
    findings_free(&out);
    return 0;
}

/* The verdict on one file over `base` (NULL: none); 0 or 2. */
static int judge(const char *path, const blob_t *base)
{
    uint8_t *data;
    size_t size;
    if (read_whole(path, &data, &size)) {
        fprintf(stderr, "check_verdicts: cannot read %s\n", path);
        return 2;
    }
    printf("# %s\n", path);
    blob_t own;
    int rc = 0, opened = blob_open(data, size, base, &own);
    if (opened == BLOB_NOMEM) rc = 2;
    else if (opened == BLOB_NOT_BTF) puts("not-btf");
    else if (opened == BLOB_REFUSED) puts("refused");
    else if (base) {
        types_t levels[2] = {base->t, own.t};
        rc = verdict(levels, 2);
    } else {
        rc = verdict(&own.t, 1);
    }
    blob_free(&own);
    free(data);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: check_verdicts BASE|- BLOB...\n");
        return 2;
    }
    uint8_t *base_data = NULL;
    size_t base_size;
    blob_t base = {0};
    int split = argv[1][0] != '-' || argv[1][1];
    if (split && (read_whole(argv[1], &base_data, &base_size)
                  || blob_open(base_data, base_size, NULL, &base) != BLOB_OK)) {
        fprintf(stderr, "check_verdicts: %s is not a base the reader takes\n", argv[1]);
        return 2;
    }
    int rc = 0;
    for (int k = 2; k < argc && !rc; k++) rc = judge(argv[k], split ? &base : NULL);
    blob_free(&base);
    free(base_data);
    return rc;
}
