/* Partition refinement: canon/refine.py's Partition in C, the one both extensions use
 * (a shared runtime file of native/csrc/): the canonical order (canon/csrc/order.c),
 * the DWARF pool's canonical form of a cycle (dwarf/csrc/pool.c), and dedup._refined
 * with its after-round settle (canon/csrc/refined.c: a module's dedup, diff's joint
 * classes).
 *
 * Nodes are handles 0..nslots-1; `nodes` of them are refined, the others keep the rank
 * they have (their handle) and must not fall in the positions' range. The same
 * synchronous rounds as the reference, the same rank values (a block's rank is a value
 * inside its position range; a split keeps it for the sub-block whose range still holds
 * it), the same "touched members only" rounds, so the order is the reference's and a
 * round costs what changed rather than the size of the blocks. */
#ifndef CANONBTF_REFINE_H
#define CANONBTF_REFINE_H

#include <stddef.h>
#include <stdint.h>

/* A signature: the ranks of a node's edges; with REFINE_BOTH, then its referrers'
 * (rank, edge index) pairs, sorted (order.break_ties' `both`). */
enum { REFINE_FORWARD, REFINE_BOTH };

typedef struct { uint32_t first, count; } refine_range_t;
typedef struct { uint32_t value, gfirst, gcount; int rest; } refine_plan_t;

typedef struct refine refine_t;
struct refine {
    uint32_t offset, n, nslots, first; /* positions [offset, offset + n); CSR by handle - first */
    uint32_t *order, *where, *rank;    /* by position - offset; by handle; by handle */
    uint32_t *bstart, *bend;           /* by rank value - offset; bend 0: no block */
    uint32_t nblocks;                  /* blocks of two or more nodes */
    uint8_t *inset;                    /* by handle: a node being refined */
    uint32_t *eoff, *edge;             /* edges, CSR: written by the caller */
    uint32_t *poff, *pred, *pidx;      /* referrers and their edge index (refine_referrers) */
    uint32_t *stamp, epoch;            /* by handle: marks of the current step */
    /* scratch of a round */
    uint32_t *sig; size_t sig_n, sig_cap;
    uint32_t *soff, *slen; size_t soff_cap, slen_cap;
    uint64_t *pairs; size_t pairs_cap;
    uint32_t *changed; size_t changed_n, changed_cap;  /* nodes whose rank changed */
    uint32_t *readers; size_t readers_n, readers_cap;
    uint32_t *pnodes; size_t pnodes_n, pnodes_cap;
    refine_range_t *groups; size_t groups_n, groups_cap;
    refine_plan_t *plans; size_t plans_n, plans_cap;
    uint32_t *tmp; size_t tmp_cap;
    int mode;
    /* Set by the caller after refine_init, or left NULL (canon, dwarf): by handle, the
     * handle whose rank an edge to it reads (diff's declarations read the definition they
     * stand for); and a hook called after each round that changed ranks, with p->changed
     * and the readers collected, which may change `reads` and add readers
     * (refine_add_referrers) (dedup._refined's after_round). 0, or -1 to stop. */
    uint32_t *reads;
    int (*after_round)(void *ctx, refine_t *p);
    void *after_ctx;
    /* Set before refine_referrers when `reads` may send an edge to a handle outside the
     * nodes being refined (the module dedup's declarations of the base): the referrers of
     * every handle are kept, not only of the nodes being refined. */
    int referrers_of_all;
};

/* Room for `nodes` (handles below nslots, each once; p->order gets them in this order),
 * every handle's rank its own. The caller then writes the edges, CSR for handles
 * first..nslots-1: eoff (allocated here, zeroed) and edge (which it allocates). 0, -1
 * out of memory, -2 a bad node. p is zeroed first; refine_free releases it whatever the
 * result. */
int refine_init(refine_t *p, uint32_t nslots, uint32_t first, uint32_t offset,
                const uint32_t *nodes, uint32_t n);
/* The referrers of each node among the nodes being refined (of every handle with
 * p->referrers_of_all), from the edges the caller wrote. 0, -1 out of memory, -2 an edge
 * to a handle not below nslots. */
int refine_referrers(refine_t *p);
/* The initial blocks: p->order as the caller sorted it, a new block where fresh[j]. */
void refine_blocks(refine_t *p, const uint8_t *fresh);
static inline int refine_is_block(const refine_t *p, uint32_t value)
{
    return value >= p->offset && value - p->offset < p->n && p->bend[value - p->offset];
}
static inline uint32_t refine_at(const refine_t *p, uint32_t position)
{
    return p->order[position - p->offset];
}
/* Partition.refine: rounds until no block splits. With `full` every block is dirty in
 * the first round; otherwise the readers collected (refine_collect_readers) are touched.
 * 0, or -1 out of memory or stopped by the after_round hook. */
int refine_run(refine_t *p, int mode, int full);
/* The nodes that read the ranks of p->changed (their referrers; with `both`, also the
 * nodes they reference) into p->readers. */
int refine_collect_readers(refine_t *p, int both);
/* The referrers of `node` (the nodes whose edges read it) added to p->readers. */
int refine_add_referrers(refine_t *p, uint32_t node);
/* Partition.discretize: every member of block `value` a block of its own, by handle. */
int refine_discretize(refine_t *p, uint32_t value);
/* Partition.individualize: `node` first in its block; p->changed gets the nodes whose
 * rank changed. */
int refine_individualize(refine_t *p, uint32_t value, uint32_t node);
void refine_free(refine_t *p);

#endif
