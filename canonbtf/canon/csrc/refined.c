/* dedup._refined in C (refined.h): the settle step on the shared refinement (refine.c),
 * and the module dedup's partition of the ids that share a key. */
#include "refined.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sort.h"

/* The names dedup._refined settles (_named_groups): by token, its declarations and (for
 * the tokens some declaration has) its definitions, ids ascending, CSR. */
typedef struct {
    const uint32_t *token;      /* by own index (id - 1): token number, 0 none */
    const uint8_t *declares;    /* by own index */
    uint32_t ntokens;
    uint32_t *decl_off, *decl, *def_off, *def;
    uint32_t *stamp, epoch;     /* by token: settled in the current round */
} names_t;

/* Ids 1..n of `token` with `declares` as `want`, into off (count + 2 entries, zeroed)
 * and out; only the tokens `only` has (NULL: every one). */
static uint32_t *token_lists(const names_t *c, uint32_t n, int want, const uint32_t *only,
                             uint32_t *off)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t tok = c->token[i];
        if (tok && (c->declares[i] != 0) == want && (!only || only[tok + 1] > only[tok]))
            off[tok + 2]++;
    }
    for (uint32_t k = 0; k < c->ntokens; k++) off[k + 2] += off[k + 1];
    uint32_t *out = big_alloc((size_t)off[c->ntokens + 1] + 1, sizeof *out);
    if (!out) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t tok = c->token[i];
        if (tok && (c->declares[i] != 0) == want && (!only || only[tok + 1] > only[tok]))
            out[off[tok + 1]++] = i + 1;
    }
    return out;
}

static int names_init(names_t *c, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (c->token[i] >= c->ntokens) c->ntokens = c->token[i] + 1;
    size_t slots = (size_t)c->ntokens + 2;
    c->decl_off = big_zalloc(slots, sizeof *c->decl_off);
    c->def_off = big_zalloc(slots, sizeof *c->def_off);
    c->stamp = big_zalloc(slots, sizeof *c->stamp);
    if (!c->decl_off || !c->def_off || !c->stamp
        || !(c->decl = token_lists(c, n, 1, NULL, c->decl_off))
        || !(c->def = token_lists(c, n, 0, c->decl_off, c->def_off)))
        return -1;
    return 0;
}

static void names_free(names_t *c)
{
    free(c->decl_off), free(c->decl), free(c->def_off), free(c->def), free(c->stamp);
}

/* dedup._refined's settle: a name's declarations stand for (read the rank of) its first
 * definition while its definitions share a class. */
static void settle(const names_t *c, refine_t *p, uint32_t tok)
{
    uint32_t target = 0, d0 = c->def_off[tok], d1 = c->def_off[tok + 1];
    if (d0 < d1) {
        target = c->def[d0];
        for (uint32_t j = d0 + 1; j < d1 && target; j++)
            if (p->rank[c->def[j]] != p->rank[target]) target = 0;
    }
    for (uint32_t j = c->decl_off[tok]; j < c->decl_off[tok + 1]; j++)
        p->reads[c->decl[j]] = target ? target : c->decl[j];
}

/* dedup._refined's after_round: the names whose definitions changed rank are settled
 * again, and what reads their declarations is touched. */
static int resettle(void *ctx, refine_t *p)
{
    names_t *c = ctx;
    uint32_t epoch = ++c->epoch;
    for (size_t j = 0; j < p->changed_n; j++) {
        uint32_t i = p->changed[j] - 1, tok = c->token[i];
        if (!tok || c->declares[i] || c->decl_off[tok] == c->decl_off[tok + 1]
            || c->stamp[tok] == epoch)
            continue;
        c->stamp[tok] = epoch;
        settle(c, p, tok);
        for (uint32_t k = c->decl_off[tok]; k < c->decl_off[tok + 1]; k++)
            if (refine_add_referrers(p, c->decl[k])) return -1;
    }
    return 0;
}

int refine_settled(refine_t *p, const uint32_t *token, const uint8_t *declares, uint32_t n)
{
    names_t c = {.token = token, .declares = declares};
    int rc = -1;
    if (names_init(&c, n) || !(p->reads = big_alloc((size_t)n + 1, sizeof *p->reads)))
        goto done;
    for (uint32_t id = 0; id <= n; id++) p->reads[id] = id;
    for (uint32_t tok = 1; tok < c.ntokens; tok++) settle(&c, p, tok);
    p->after_round = resettle;
    p->after_ctx = &c;
    rc = refine_run(p, REFINE_FORWARD, 1);
    p->after_round = NULL;
    p->after_ctx = NULL;
done:
    names_free(&c);
    return rc;
}

static int by_key(const void *ctx, uint32_t a, uint32_t b)
{
    const uint32_t *key = ctx;
    if (key[a] != key[b]) return key[a] < key[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The view that holds `id`, and its own index there; NULL when none does. */
static const types_t *holder(const types_t *base, const types_t *own, uint32_t id,
                             uint32_t *i)
{
    const types_t *t = id >= own->first_id ? own : base;
    if (!t || id < t->first_id || id - t->first_id >= t->count) return NULL;
    *i = id - t->first_id;
    return t;
}

/* The edges of the refined ids (CSR by handle - 1; the others have none). */
static int shared_edges(refine_t *p, const types_t *base, const types_t *own, uint32_t last)
{
    size_t total = 0;
    for (uint32_t id = 1; id <= last; id++) {
        p->eoff[id - 1] = (uint32_t)total;
        if (!p->inset[id]) continue;
        uint32_t i = 0;
        const types_t *t = holder(base, own, id, &i);
        if (!t) return -2;
        total += edge_count(t, i);
        if (total > UINT32_MAX) return -1;
    }
    p->eoff[last] = (uint32_t)total;
    p->edge = big_alloc(total ? total : 1, sizeof *p->edge);
    if (!p->edge) return -1;
    for (uint32_t id = 1; id <= last; id++)
        if (p->inset[id]) {
            uint32_t i = 0;
            const types_t *t = holder(base, own, id, &i);
            type_edges(t, i, p->edge + p->eoff[id - 1]);
        }
    p->referrers_of_all = 1;  /* a base declaration a shared id reads may settle */
    return refine_referrers(p);
}

static int by_id(const void *ctx, uint32_t a, uint32_t b)
{
    return a < b ? -1 : a > b;
}

/* out->twins: of `nodes` (sorted by key), the runs of one key with two or more ranks. */
static int twin_candidates(const uint32_t *key, const uint32_t *rank, const uint32_t *nodes,
                           uint32_t n, refined_t *out)
{
    if (!(out->twins = big_alloc((size_t)n + 1, sizeof *out->twins))) return -1;
    for (uint32_t start = 0, end; start < n; start = end) {
        int ranks = 0;
        for (end = start + 1; end < n && key[nodes[end]] == key[nodes[start]]; end++)
            ranks |= rank[nodes[end]] != rank[nodes[start]];
        if (ranks)
            for (uint32_t j = start; j < end; j++) out->twins[out->ntwins++] = nodes[j];
    }
    return sort_u32(out->twins, out->ntwins, by_id, NULL);
}

int dedup_refined(const types_t *base, const types_t *own, const uint32_t *key,
                  const uint32_t *token, const uint8_t *declares, uint32_t last,
                  const uint32_t *shared, uint32_t nshared, refined_t *out)
{
    memset(out, 0, sizeof *out);
    refine_t p;
    memset(&p, 0, sizeof p);
    uint32_t *nodes = big_alloc((size_t)nshared + 1, sizeof *nodes);
    uint8_t *fresh = big_alloc((size_t)nshared + 1, 1);
    int rc = -1;
    if (!nodes || !fresh || last == UINT32_MAX) goto done;
    memcpy(nodes, shared, (size_t)nshared * sizeof *nodes);
    if (sort_u32(nodes, nshared, by_key, key)) goto done;
    if ((rc = refine_init(&p, last + 1, 1, last + 1, nodes, nshared)) != 0
        || (rc = shared_edges(&p, base, own, last)) != 0)
        goto done;
    rc = -1;
    for (uint32_t j = 0; j < nshared; j++) fresh[j] = !j || key[nodes[j]] != key[nodes[j - 1]];
    refine_blocks(&p, fresh);
    if (refine_settled(&p, token + 1, declares + 1, last)) goto done;
    out->rank = big_alloc((size_t)last + 1, sizeof *out->rank);
    out->stands_for = big_alloc((size_t)last + 1, sizeof *out->stands_for);
    out->classes = big_alloc((size_t)last + 1, sizeof *out->classes);
    if (!out->rank || !out->stands_for || !out->classes) goto done;
    for (uint32_t id = 0; id <= last; id++) {
        out->rank[id] = p.rank[id];
        out->stands_for[id] = p.reads[id] != id ? p.reads[id] : 0;
        out->classes[id] = p.rank[p.reads[id]];
    }
    if (twin_candidates(key, p.rank, nodes, nshared, out)) goto done;
    rc = 0;
done:
    free(nodes), free(fresh), free(p.reads);
    refine_free(&p);
    if (rc) refined_free(out);
    return rc;
}

void refined_free(refined_t *r)
{
    free(r->rank), free(r->stands_for), free(r->classes), free(r->twins);
    memset(r, 0, sizeof *r);
}

/* Whether id a goes before id b as a group's representative. */
static int better(const uint8_t *moved, const uint8_t *declares, uint32_t a, uint32_t b)
{
    int ma = moved && moved[a], mb = moved && moved[b];
    if (ma != mb) return ma < mb;
    if (!declares[a] != !declares[b]) return !declares[a];
    return a < b;
}

int dedup_into(const uint32_t *classes, const uint8_t *moved, const uint8_t *declares,
               const uint8_t *kinds, uint32_t last, uint32_t **nodes, uint32_t **reps,
               uint32_t *n)
{
    *nodes = *reps = NULL;
    *n = 0;
    uint32_t most = 0;
    for (uint32_t id = 1; id <= last; id++)
        if (classes[id] > most) most = classes[id];
    if (most > 4 * (uint64_t)last + 16) return -2;
    uint32_t *count = big_zalloc((size_t)most + 1, sizeof *count);
    uint32_t *first = big_zalloc((size_t)most + 1, sizeof *first);
    uint32_t *rep = big_zalloc((size_t)most + 1, sizeof *rep);
    int rc = -1;
    if (!count || !first || !rep) goto done;
    uint32_t pairs = 0;
    for (uint32_t id = 1; id <= last; id++) {
        uint32_t c = classes[id];
        if (!count[c]++) first[c] = rep[c] = id;
        else if (better(moved, declares, id, rep[c])) rep[c] = id;
    }
    for (uint32_t id = 1; id <= last; id++) {
        uint32_t c = classes[id];
        pairs += count[c] > 1 && kinds[first[c]] != K_VAR && id != rep[c];
    }
    *nodes = big_alloc((size_t)pairs + 1, sizeof **nodes);
    *reps = big_alloc((size_t)pairs + 1, sizeof **reps);
    if (!*nodes || !*reps) goto done;
    for (uint32_t id = 1; id <= last; id++) {
        uint32_t c = classes[id];
        if (count[c] > 1 && kinds[first[c]] != K_VAR && id != rep[c]) {
            (*nodes)[*n] = id;
            (*reps)[(*n)++] = rep[c];
        }
    }
    rc = 0;
done:
    free(count), free(first), free(rep);
    if (rc) free(*nodes), free(*reps), *nodes = *reps = NULL;
    return rc;
}
