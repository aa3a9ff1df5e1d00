/* libFuzzer target: the validator (check/csrc/check.c) on untrusted bytes. The input is a
 * BTF blob, optionally followed by a split BTF over it (in its trailing bytes); each level
 * index_types takes is validated, and the findings must be well formed: in type-id order,
 * own ids, keys from the table, values inside the values array. */
#include <stdlib.h>

#include "btfblob.h"
#include "check.h"

static void validate(const types_t *levels, int nlevels)
{
    check_findings_t out = {0};
    int rc = rules_check(levels, nlevels, &out);
    if (rc < 0 || rc > 1) abort();
    const types_t *own = &levels[nlevels - 1];
    for (size_t k = 0; k < out.nf; k++) {
        const check_finding_t *f = &out.f[k];
        if (f->key >= CHECK_NKEYS || (k && f->id < out.f[k - 1].id)) abort();
        if (f->id < own->first_id || f->id >= own->first_id + own->count) abort();
        if ((size_t)f->first + f->count > out.nv) abort();
    }
    findings_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    blob_t base, split = {0};
    if (blob_open(data, size, NULL, &base) == BLOB_OK) {
        validate(&base.t, 1);
        size_t at = size - base.trailer;
        if (base.trailer && blob_open(data + at, base.trailer, &base, &split) == BLOB_OK) {
            types_t levels[2] = {base.t, split.t};
            validate(levels, 2);
        }
        blob_free(&split);
    }
    blob_free(&base);
    return 0;
}
