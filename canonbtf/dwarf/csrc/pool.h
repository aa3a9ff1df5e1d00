/* fragment.py's TypePool.add_unit in plain C (pool.c): the order of a unit's records and
 * the canonical classes of its cycles, while the pool's own state (its record list and
 * dicts) stays in Python behind callbacks; bound as _core.pool_unit by
 * native/csrc/pool_bindings.c. */
#ifndef CANONBTF_POOL_H
#define CANONBTF_POOL_H

#include <stddef.h>
#include <stdint.h>

/* A unit's records as a graph: nodes 1..count-1 (0 unused), node i's nonzero references,
 * each a node, in record order at refs[ref_start[i] .. ref_start[i + 1]) (CSR). */
typedef struct {
    int32_t count;
    const size_t *ref_start;
    const int32_t *refs;
} pool_graph_t;

/* The pool's state, as the pooling asks it. `pool_id` is by node: a pooled node's pool
 * id, a member of the cycle under way -1, or once its classes are known -1 - class. Each
 * callback returns 0, or -1 after reporting its failure (the pooling then stops).
 * - acyclic: node's record with its references as pool_id gives (all pooled), hash-consed
 *   into the pool (_pool_acyclic): its pool id into *id.
 * - label_ranks: the rank in [0, n) of each of the n `members`' labels (the records with
 *   their references as pool_id gives) into rank[].
 * - cycle: the canonical form of a cycle, the records of `representative` (one member of
 *   each of its `classes` classes, in class order) with their references as pool_id
 *   gives, hash-consed into the pool (_pool_cycle): each class's pool id into ids[]. */
typedef struct {
    void *ctx;
    int (*acyclic)(void *ctx, int32_t node, const int64_t *pool_id, int64_t *id);
    int (*label_ranks)(void *ctx, const int32_t *members, int32_t n, const int64_t *pool_id,
                       uint32_t *rank);
    int (*cycle)(void *ctx, const int32_t *representative, int32_t classes,
                 const int64_t *pool_id, int64_t *ids);
} pool_store_t;

enum { POOL_STORE_FAILED = -1, POOL_NO_MEMORY = -2 };

/* Every node of `g` pooled into `store` in the reference's order (Tarjan's components as
 * _strongly_connected emits them), its pool id into pool_id[node] (count of them,
 * pool_id[0] 0). 0, POOL_STORE_FAILED after a callback's failure, or POOL_NO_MEMORY. */
int pool_unit(const pool_graph_t *g, const pool_store_t *store, int64_t *pool_id);

#endif
