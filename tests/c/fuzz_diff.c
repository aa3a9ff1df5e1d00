/* libFuzzer target: diff's Python-free C (diff/csrc/diffjoint.c, diffkeys.c, and the
 * report: diffreport.c, difffacts.c, diffspell.c, diffwrite.c) on untrusted bytes. The
 * input is two BTF blobs, the second in the first's trailing bytes; when index_types
 * takes both, their joint graph from every type as a root, and the plan of which roots
 * diff describes, are made, and their ids must be ids of their side; then the report of
 * the pair, text and JSON, with a pairing in C that pairs in the order it is told (ids
 * and facts must be the side's), and the report of the first blob against itself, which
 * must find no change when it is made (a copy reports nothing). */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "diffjoint.h"
#include "diffkeys.h"
#include "diffreport.h"
#include "grow.h"

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

/* The pairing: roots as told, per duplicated name and side, then the anonymous ones. */
typedef struct {
    const types_t *t[2];
    uint32_t *ids[2];
    size_t n[2], cap[2];
    size_t (*name_end)[2], nnames, cap_names;   /* by name: the end of its roots per side */
    size_t anon_from[2];                      /* where the anonymous roots begin */
    int anon_told;
} pairer_ctx_t;

static void check_root(const pairer_ctx_t *c, int side, uint32_t id, const facts_t *facts,
                       size_t from, size_t to)
{
    if (side < 0 || side > 1 || !id || id > c->t[side]->count || from > to || to > facts->n)
        abort();
}

static int keep(pairer_ctx_t *c, int side, uint32_t id)
{
    if (GROW(c->ids[side], c->cap[side], c->n[side] + 1)) return -1;
    c->ids[side][c->n[side]++] = id;
    return 0;
}

static int told_name(void *ctx, int family, const char *name, size_t len)
{
    pairer_ctx_t *c = ctx;
    if (c->anon_told || family < 0 || family >= F_COUNT || (len && !name)) abort();
    if (GROW(c->name_end, c->cap_names, c->nnames + 1)) return -1;
    c->name_end[c->nnames][0] = c->n[0], c->name_end[c->nnames][1] = c->n[1];
    c->nnames++;
    return 0;
}

static int told_root(void *ctx, int side, uint32_t id, const facts_t *facts, size_t from,
                     size_t to, int spells_dup)
{
    pairer_ctx_t *c = ctx;
    check_root(c, side, id, facts, from, to);
    if (!c->nnames || c->anon_told) abort();   /* a root before its name, or late */
    if (keep(c, side, id)) return -1;
    c->name_end[c->nnames - 1][side] = c->n[side];
    return 0;
}

static int told_anon(void *ctx, int side, uint32_t id, int family, const facts_t *facts,
                     size_t from, size_t to, int spells_dup)
{
    pairer_ctx_t *c = ctx;
    check_root(c, side, id, facts, from, to);
    if (!c->anon_told) {
        c->anon_told = 1;
        c->anon_from[0] = c->n[0], c->anon_from[1] = c->n[1];
    }
    return keep(c, side, id);
}

/* Roots [a0, a1) and [b0, b1) paired in order, the rest removed or added, numbered from
 * 1 when `numbered`. */
static void pair_in_order(const pairer_ctx_t *c, size_t a0, size_t a1, size_t b0, size_t b1,
                          int numbered, diff_paired_t *out)
{
    uint64_t ordinal = 0;
    for (; a0 < a1 || b0 < b1; ordinal++) {
        diff_entry_t *x = &out->entry[out->n++];
        x->ordinal = numbered ? ordinal + 1 : 0;
        x->status = a0 < a1 && b0 < b1 ? DIFF_PAIR : a0 < a1 ? DIFF_REMOVED : DIFF_ADDED;
        x->old = x->status != DIFF_ADDED ? c->ids[0][a0++] : 0;
        x->new = x->status != DIFF_REMOVED ? c->ids[1][b0++] : 0;
    }
}

static int answer(void *ctx, diff_paired_t *out)
{
    pairer_ctx_t *c = ctx;
    if (!c->anon_told) c->anon_from[0] = c->n[0], c->anon_from[1] = c->n[1];
    out->entry = malloc((c->n[0] + c->n[1] + 1) * sizeof *out->entry);
    out->named_end = malloc((c->nnames + 1) * sizeof *out->named_end);
    if (!out->entry || !out->named_end) return -1;
    size_t from[2] = {0, 0};
    for (size_t k = 0; k < c->nnames; k++) {
        pair_in_order(c, from[0], c->name_end[k][0], from[1], c->name_end[k][1], 1, out);
        from[0] = c->name_end[k][0], from[1] = c->name_end[k][1];
        out->named_end[out->nnamed++] = out->n;
    }
    pair_in_order(c, c->anon_from[0], c->n[0], c->anon_from[1], c->n[1], 0, out);
    return 0;
}

/* Both sides of a against b set up for diff_plan (with `keys`, also what the report
 * needs) and planned. */
static void planned(diff_side_t d[2], const types_t *a, const types_t *b, int keys)
{
    memset(d, 0, 2 * sizeof *d);
    const types_t *t[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        size_t count = (size_t)t[k]->count + 1;
        d[k].t = t[k];
        d[k].own_first = 1;
        d[k].spell = calloc(count, 1), d[k].expanded = calloc(count, 1);
        d[k].safe = calloc(count, 1);
        if (keys) d[k].key = calloc(count, sizeof *d[k].key), d[k].same = calloc(count, 1);
        if (!d[k].spell || !d[k].expanded || !d[k].safe || (keys && (!d[k].key || !d[k].same)))
            abort();
    }
    if (diff_plan(d)) abort();
}

static void sides_free(diff_side_t d[2])
{
    for (int k = 0; k < 2; k++) {
        free(d[k].spell), free(d[k].expanded), free(d[k].safe), free(d[k].roots);
        free(d[k].anon), free(d[k].need), free(d[k].key), free(d[k].same), free(d[k].group);
    }
}

/* The report of a against b (planned), with the pairing above: -1 declined or out of
 * memory, else the number of changes. */
static long report(const types_t *a, const types_t *b, int json)
{
    diff_side_t d[2];
    planned(d, a, b, 1);
    pairer_ctx_t c = {.t = {a, b}};
    diff_pairer_t pairer = {&c, told_name, told_root, told_anon, answer};
    text_t out = {0};
    size_t nchanges = 0;
    long rc = diff_report(d, &pairer, json, &out, &nchanges) ? -1 : (long)nchanges;
    if (rc >= 0 && (json || rc) && !out.len) abort();   /* JSON or changes: some text */
    free(out.p), free(c.ids[0]), free(c.ids[1]), free(c.name_end);
    sides_free(d);
    return rc;
}

static void plan(const types_t *a, const types_t *b)
{
    diff_side_t d[2];
    const types_t *t[2] = {a, b};
    planned(d, a, b, 0);
    for (int k = 0; k < 2; k++) {
        for (size_t j = 0; j < d[k].nroots; j++)
            if (!d[k].roots[j] || d[k].roots[j] > t[k]->count) abort();
        for (size_t j = 0; j < d[k].nneed; j++)
            if (d[k].need[j] > t[k]->count) abort();
    }
    sides_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    blob_t a, b = {0};
    if (blob_open(data, size, NULL, &a) == BLOB_OK && a.trailer
        && blob_open(data + size - a.trailer, a.trailer, NULL, &b) == BLOB_OK) {
        joint(&a.t, &b.t);
        plan(&a.t, &b.t);
        report(&a.t, &b.t, 0);
        report(&a.t, &b.t, 1);
        if (report(&a.t, &a.t, 0) > 0) abort();
    }
    blob_free(&a), blob_free(&b);
    return 0;
}
