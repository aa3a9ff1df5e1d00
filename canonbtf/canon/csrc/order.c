/* The canonical order: canon/order.py in C, on the shared partition refinement
 * (native/csrc/refine.c, canon/refine.py's Partition): labels, refinement by referenced
 * types, then the same tie-breaks as the reference, so the order is the reference's. */
#include "types.h"
#include "refine.h"

#include <stdlib.h>
#include <string.h>

/* Edges (redirected) of the nodes being ordered (handles are type ids, CSR by own index),
 * and their referrers among them. */
static int build_graph(refine_t *p, const types_t *t, const uint32_t *redirect)
{
    uint32_t count = t->count;
    size_t total = 0;
    for (uint32_t o = 0; o < count; o++) {
        p->eoff[o] = (uint32_t)total;
        if (p->inset[t->first_id + o]) total += edge_count(t, o);
    }
    p->eoff[count] = (uint32_t)total;
    p->edge = big_alloc(total ? total : 1, sizeof *p->edge);
    if (!p->edge) return -1;
    for (uint32_t o = 0; o < count; o++) {
        if (!p->inset[t->first_id + o]) continue;
        uint32_t *e = p->edge + p->eoff[o], ne = type_edges(t, o, e);
        if (redirect)
            for (uint32_t j = 0; j < ne; j++) e[j] = redirect[e[j]];
    }
    return refine_referrers(p);
}

/* refine.Partition.__init__: nodes sorted by label, equal labels in one block. */
static int label_blocks(refine_t *p, const types_t *t, int by_name)
{
    uint32_t n = p->n, *ids = big_alloc((size_t)n + 1, sizeof *ids);
    uint32_t *order = big_alloc((size_t)n + 1, sizeof *order);
    uint8_t *fresh = malloc((size_t)n + 1);
    ranks_t names;
    int rc = -1;
    memset(&names, 0, sizeof names);
    if (!ids || !order || !fresh) goto done;
    for (uint32_t j = 0; j < n; j++) ids[j] = p->order[j] - t->first_id;
    if (name_ranks(t, ids, n, 1, &names) || label_sort(t, ids, n, &names, by_name, order, fresh))
        goto done;
    for (uint32_t j = 0; j < n; j++) ids[j] = p->order[order[j]];
    memcpy(p->order, ids, (size_t)n * sizeof *ids);
    refine_blocks(p, fresh);
    rc = 0;
done:
    free(ids), free(order), free(fresh);
    ranks_free(&names);
    return rc;
}

/* Whether every type that reads or is read by the block's members is alone in its block. */
static int neighbours_settled(const refine_t *p, uint32_t start, uint32_t end)
{
    for (uint32_t q = start; q < end; q++) {
        uint32_t o = refine_at(p, q) - p->first;
        for (uint32_t j = p->poff[o]; j < p->poff[o + 1]; j++)
            if (refine_is_block(p, p->rank[p->pred[j]])) return 0;
        for (uint32_t j = p->eoff[o]; j < p->eoff[o + 1]; j++)
            if (p->inset[p->edge[j]] && refine_is_block(p, p->rank[p->edge[j]])) return 0;
    }
    return 1;
}

/* order.break_ties: refine by both directions, then individualize the lowest id of the
 * first tied block until every block is a single type. */
static int break_ties(refine_t *p)
{
    if (refine_run(p, REFINE_BOTH, 1)) return -1;
    uint32_t position = p->offset;
    while (p->nblocks) {
        uint32_t value = p->rank[refine_at(p, position)];
        while (!refine_is_block(p, value)) value = p->rank[refine_at(p, ++position)];
        uint32_t start = p->bstart[value - p->offset], end = p->bend[value - p->offset];
        if (neighbours_settled(p, start, end)) {
            if (refine_discretize(p, value)) return -1;
            continue;
        }
        uint32_t chosen = refine_at(p, start);
        for (uint32_t q = start + 1; q < end; q++)
            if (refine_at(p, q) < chosen) chosen = refine_at(p, q);
        if (refine_individualize(p, value, chosen) || refine_collect_readers(p, 1)
            || refine_run(p, REFINE_BOTH, 0))
            return -1;
    }
    return 0;
}

int canonical_order(const types_t *t, const uint32_t *nodes, uint32_t nnodes,
                    const uint32_t *redirect, int by_name, uint32_t *out, int *alone)
{
    refine_t p;
    int rc = refine_init(&p, t->first_id + t->count, t->first_id, t->first_id, nodes, nnodes);
    if (!rc) rc = build_graph(&p, t, redirect);
    if (!rc) rc = label_blocks(&p, t, by_name);
    if (!rc) rc = refine_run(&p, REFINE_FORWARD, 1);
    if (!rc) {
        *alone = p.nblocks == 0;
        if (p.nblocks) rc = break_ties(&p);
    }
    if (!rc) memcpy(out, p.order, (size_t)nnodes * sizeof *out);
    refine_free(&p);
    return rc;
}
