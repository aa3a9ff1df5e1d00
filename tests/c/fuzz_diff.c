/* libFuzzer target: diff's Python-free C (diff/csrc/diffjoint.c, diffkeys.c) on untrusted
 * bytes. The input is two BTF blobs, the second in the first's trailing bytes; when
 * index_types takes both, their joint graph from every type as a root, and the plan of
 * which roots diff describes, are made, and their ids must be ids of their side. */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "diffjoint.h"
#include "diffkeys.h"

static void joint(const types_t *a, const types_t *b)
{
    const types_t *t[2] = {a, b};
    uint32_t *roots[2];
    uint32_t n[2] = {a->count, b->count};
    for (int k = 0; k < 2; k++) {
        if (!(roots[k] = malloc(((size_t)n[k] + 1) * sizeof *roots[k]))) abort();
        for (uint32_t j = 0; j < n[k]; j++) roots[k][j] = n[k] - j;   /* from the last id */
    }
    const uint32_t *r[2] = {roots[0], roots[1]};
    joint_t out;
    if (diff_joint(t, r, n, &out)) abort();
    for (int k = 0; k < 2; k++)
        for (uint32_t j = 0; j < out.side[k].n; j++)
            if (!out.side[k].reach[j] || out.side[k].reach[j] > n[k]
                || (j && out.side[k].reach[j] <= out.side[k].reach[j - 1]))
                abort();
    joint_free(&out);
    free(roots[0]), free(roots[1]);
}

static void plan(const types_t *a, const types_t *b)
{
    diff_side_t d[2];
    memset(d, 0, sizeof d);
    const types_t *t[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        size_t count = (size_t)t[k]->count + 1;
        d[k].t = t[k];
        d[k].own_first = 1;
        d[k].spell = calloc(count, 1), d[k].expanded = calloc(count, 1);
        d[k].safe = calloc(count, 1);
        if (!d[k].spell || !d[k].expanded || !d[k].safe) abort();
    }
    if (diff_plan(d)) abort();
    for (int k = 0; k < 2; k++) {
        for (size_t j = 0; j < d[k].nroots; j++)
            if (!d[k].roots[j] || d[k].roots[j] > t[k]->count) abort();
        for (size_t j = 0; j < d[k].nneed; j++)
            if (d[k].need[j] > t[k]->count) abort();
        free(d[k].spell), free(d[k].expanded), free(d[k].safe), free(d[k].roots);
        free(d[k].anon), free(d[k].need), free(d[k].key), free(d[k].same), free(d[k].group);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    blob_t a, b = {0};
    if (blob_open(data, size, NULL, &a) == BLOB_OK && a.trailer
        && blob_open(data + size - a.trailer, a.trailer, NULL, &b) == BLOB_OK) {
        joint(&a.t, &b.t);
        plan(&a.t, &b.t);
    }
    blob_free(&a), blob_free(&b);
    return 0;
}
