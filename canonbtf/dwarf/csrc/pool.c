/* fragment.py's TypePool.add_unit in C: a unit's records pooled into the pool's own
 * Python state (its record list and dicts, behind pool.h's callbacks), so the two
 * interleave freely and give the same pool ids and records. The reference's steps, each
 * mirrored in its order: Tarjan's components as _strongly_connected emits them,
 * hash-consing of a record outside any cycle, and for a cycle the canonical classes of
 * _refine (the labels ranked by the reference's own `label_ranks`, then the partition
 * refinement both extensions share, native/csrc/refine.c, as _refine uses
 * canon/refine.py's).
 *
 * The binding (native/csrc/pool_bindings.c) checks that the records are shaped as the
 * encoder makes them before anything is pooled; here they are a graph.
 */
#include "pool.h"

#include "grow.h"
#include "refine.h"

#include <stdlib.h>
#include <string.h>

typedef VEC(int32_t) i32vec_t;
typedef VEC(size_t) sizevec_t;

typedef struct {
    const pool_graph_t *g;
    const pool_store_t *store;
    int64_t *pool_id;
    int32_t *local;            /* per node of the cycle being pooled: its handle in it */
    /* The cycle being pooled's, grown to the largest cycle so far and freed with the unit. */
    VEC(uint32_t) label;       /* per member: its label rank */
    VEC(int32_t) representative;   /* per canonical class: a member of it */
    VEC(int64_t) ids;          /* per canonical class: its pool id */
} pool_t;

static size_t nrefs(const pool_graph_t *g, int32_t node)
{
    return g->ref_start[node + 1] - g->ref_start[node];
}

static const int32_t *refs_of(const pool_graph_t *g, int32_t node)
{
    return g->refs + g->ref_start[node];
}

/* A node reached: its visit number, and either emitted as a component of its own (no
 * references) or pushed onto the walk. 0, or -1 out of memory. */
static int visit(const pool_graph_t *g, int32_t node, int32_t *counter, int32_t *index,
                 int32_t *low, uint8_t *on_stack, i32vec_t *stack, i32vec_t *path,
                 sizevec_t *walk, i32vec_t *flat, i32vec_t *ends)
{
    index[node] = low[node] = (*counter)++;
    if (!nrefs(g, node))
        return VEC_PUSH(*flat, node) || VEC_PUSH(*ends, (int32_t)flat->n) ? -1 : 0;
    on_stack[node] = 1;
    return VEC_PUSH(*stack, node) || VEC_PUSH(*path, node) || VEC_PUSH(*walk, 0) ? -1 : 0;
}

/* Tarjan's components as _strongly_connected emits them: `flat` holds their nodes,
 * `ends` where each ends. 0, or -1 out of memory. */
static int components(const pool_graph_t *g, i32vec_t *flat, i32vec_t *ends)
{
    size_t count = (size_t)g->count;
    int32_t *index = calloc(count, sizeof *index), *low = calloc(count, sizeof *low);
    uint8_t *on_stack = calloc(count, 1);
    i32vec_t stack = {0}, path = {0};
    sizevec_t walk = {0};
    int rc = -1;
    if (!index || !low || !on_stack) goto done;
    int32_t counter = 1;
    for (int32_t root = 1; root < g->count; root++) {
        if (index[root]) continue;
        if (visit(g, root, &counter, index, low, on_stack, &stack, &path, &walk, flat, ends))
            goto done;
        while (path.n) {
            int32_t node = path.a[path.n - 1];
            size_t depth = path.n;
            while (path.n == depth && walk.a[walk.n - 1] < nrefs(g, node)) {
                int32_t target = refs_of(g, node)[walk.a[walk.n - 1]++];
                if (!index[target]) {
                    if (visit(g, target, &counter, index, low, on_stack, &stack, &path,
                              &walk, flat, ends))
                        goto done;
                } else if (on_stack[target] && index[target] < low[node]) {
                    low[node] = index[target];
                }
            }
            if (path.n != depth) continue;   /* descended */
            path.n--;
            walk.n--;
            if (path.n && low[node] < low[path.a[path.n - 1]]) low[path.a[path.n - 1]] = low[node];
            if (low[node] == index[node]) {
                int32_t member;
                do {
                    member = stack.a[--stack.n];
                    on_stack[member] = 0;
                    if (VEC_PUSH(*flat, member)) goto done;
                } while (member != node);
                if (VEC_PUSH(*ends, (int32_t)flat->n)) goto done;
            }
        }
    }
    rc = 0;
done:
    free(index);
    free(low);
    free(on_stack);
    free(stack.a);
    free(path.a);
    free(walk.a);
    return rc;
}

/* _refine: the canonical classes of the `n` members `comp` (pool_id -1 each) from their
 * label ranks label[0..n), refined by the classes of the members they reference: the
 * shared partition refinement (native/csrc/refine.c) on the members as handles 0..n-1,
 * the classes numbered in the partition's order into cls (by node). Returns how many
 * classes, -1 out of memory. */
static int32_t canonical_classes(pool_t *p, const int32_t *comp, int32_t n, const uint32_t *label,
                                 int32_t *cls)
{
    const pool_graph_t *g = p->g;
    refine_t r;
    uint32_t *sorted = malloc((size_t)n * sizeof *sorted), *start = calloc((size_t)n + 1, sizeof *start);
    uint8_t *fresh = malloc((size_t)n);
    int32_t count = -1;
    memset(&r, 0, sizeof r);
    if (!sorted || !start || !fresh) goto done;
    /* Members by label rank, then by handle (Partition's sorted (key, node) pairs). */
    for (int32_t i = 0; i < n; i++) start[label[i] + 1]++;
    for (int32_t c = 0; c < n; c++) start[c + 1] += start[c];
    for (int32_t i = 0; i < n; i++) sorted[start[label[i]]++] = (uint32_t)i;
    for (int32_t j = 0; j < n; j++) fresh[j] = !j || label[sorted[j]] != label[sorted[j - 1]];
    if (refine_init(&r, (uint32_t)n, 0, 0, sorted, (uint32_t)n)) goto done;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        p->local[comp[i]] = i;
        r.eoff[i] = (uint32_t)total;
        for (size_t k = 0; k < nrefs(g, comp[i]); k++) total += p->pool_id[refs_of(g, comp[i])[k]] < 0;
    }
    r.eoff[n] = (uint32_t)total;
    if (!(r.edge = malloc((total ? total : 1) * sizeof *r.edge))) goto done;
    for (int32_t i = 0, e = 0; i < n; i++)
        for (size_t k = 0; k < nrefs(g, comp[i]); k++) {
            int32_t target = refs_of(g, comp[i])[k];
            if (p->pool_id[target] < 0) r.edge[e++] = (uint32_t)p->local[target];
        }
    if (refine_referrers(&r)) goto done;
    refine_blocks(&r, fresh);
    if (r.nblocks && refine_run(&r, REFINE_FORWARD, 1)) goto done;
    count = 0;
    for (int32_t q = 0; q < n; q++) {
        uint32_t node = r.order[q];
        if (q && r.rank[node] != r.rank[r.order[q - 1]]) count++;
        cls[comp[node]] = count;
    }
    count++;
done:
    refine_free(&r);
    free(sorted);
    free(start);
    free(fresh);
    return count;
}

/* _pool_cycle: a strongly connected set pooled through its canonical form (the store
 * ranks its labels and hash-conses the form). 0, or a POOL_* failure. */
static int pool_cycle(pool_t *p, const int32_t *comp, int32_t n, int32_t *cls)
{
    const pool_store_t *store = p->store;
    if (VEC_RESERVE(p->label, (size_t)n)) return POOL_NO_MEMORY;
    for (int32_t i = 0; i < n; i++) p->pool_id[comp[i]] = -1;
    if (store->label_ranks(store->ctx, comp, n, p->pool_id, p->label.a)) return POOL_STORE_FAILED;
    int32_t count = canonical_classes(p, comp, n, p->label.a, cls);
    if (count < 0 || VEC_RESERVE(p->representative, (size_t)count)
        || VEC_RESERVE(p->ids, (size_t)count))
        return POOL_NO_MEMORY;
    for (int32_t i = 0; i < n; i++) {
        p->representative.a[cls[comp[i]]] = comp[i];
        p->pool_id[comp[i]] = -1 - cls[comp[i]];
    }
    if (store->cycle(store->ctx, p->representative.a, count, p->pool_id, p->ids.a))
        return POOL_STORE_FAILED;
    for (int32_t i = 0; i < n; i++) p->pool_id[comp[i]] = p->ids.a[cls[comp[i]]];
    return 0;
}

static int self_referring(const pool_graph_t *g, int32_t node)
{
    for (size_t r = 0; r < nrefs(g, node); r++)
        if (refs_of(g, node)[r] == node) return 1;
    return 0;
}

int pool_unit(const pool_graph_t *g, const pool_store_t *store, int64_t *pool_id)
{
    pool_t p = {.g = g, .store = store, .pool_id = pool_id};
    i32vec_t flat = {0}, ends = {0};
    size_t count = g->count > 0 ? (size_t)g->count : 1;
    int32_t *cls = calloc(count, sizeof *cls);
    int rc = POOL_NO_MEMORY;
    p.local = calloc(count, sizeof *p.local);
    if (!cls || !p.local || components(g, &flat, &ends)) goto done;
    memset(pool_id, 0, (size_t)(g->count > 0 ? g->count : 0) * sizeof *pool_id);
    int32_t begin = 0;
    for (size_t c = 0; c < ends.n; c++) {
        int32_t n = ends.a[c] - begin;
        const int32_t *comp = flat.a + begin;
        begin = ends.a[c];
        if (n == 1 && !self_referring(g, comp[0])) {
            if (store->acyclic(store->ctx, comp[0], pool_id, &pool_id[comp[0]])) {
                rc = POOL_STORE_FAILED;
                goto done;
            }
        } else if ((rc = pool_cycle(&p, comp, n, cls))) {
            goto done;
        }
    }
    rc = 0;
done:
    free(cls);
    free(p.local);
    free(flat.a);
    free(ends.a);
    VEC_FREE(p.label);
    VEC_FREE(p.representative);
    VEC_FREE(p.ids);
    return rc;
}
