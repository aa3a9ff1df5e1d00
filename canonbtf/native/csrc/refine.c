/* Partition refinement (refine.h): canon/refine.py's Partition in C. */
#include "refine.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sort.h"

static uint32_t mid(uint32_t start, uint32_t end) { return start + (end - start) / 2; }
static uint32_t own(const refine_t *p, uint32_t id) { return id - p->first; }

static void set_block(refine_t *p, uint32_t value, uint32_t start, uint32_t end)
{
    p->bstart[value - p->offset] = start;
    p->bend[value - p->offset] = end;
    p->nblocks++;
}

static void drop_block(refine_t *p, uint32_t value, uint32_t *start, uint32_t *end)
{
    *start = p->bstart[value - p->offset];
    *end = p->bend[value - p->offset];
    p->bend[value - p->offset] = 0;
    p->nblocks--;
}

static void place(refine_t *p, uint32_t node, uint32_t position)
{
    p->order[position - p->offset] = node;
    p->where[node] = position;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Appends `node`'s signature to the scratch buffer as entry `k`. */
static int add_sig(refine_t *p, uint32_t node, size_t k)
{
    uint32_t o = own(p, node), ne = p->eoff[o + 1] - p->eoff[o];
    uint32_t np = p->mode == REFINE_BOTH ? p->poff[o + 1] - p->poff[o] : 0;
    /* One slot more than the signature: an empty one of the first node would leave p->sig
     * NULL, and NULL + 0 is undefined behaviour (UBSan stops on it). */
    if (GROW(p->sig, p->sig_cap, p->sig_n + ne + 2 * (size_t)np + 1)) return -1;
    uint32_t *s = p->sig + p->sig_n;
    const uint32_t *edge = p->edge + p->eoff[o];
    if (p->reads)
        for (uint32_t j = 0; j < ne; j++) s[j] = p->rank[p->reads[edge[j]]];
    else
        for (uint32_t j = 0; j < ne; j++) s[j] = p->rank[edge[j]];
    if (np) {
        if (GROW(p->pairs, p->pairs_cap, np)) return -1;
        for (uint32_t j = 0; j < np; j++) {
            uint32_t q = p->poff[o] + j;
            p->pairs[j] = ((uint64_t)p->rank[p->pred[q]] << 32) | p->pidx[q];
        }
        qsort(p->pairs, np, sizeof *p->pairs, u64_cmp);
        for (uint32_t j = 0; j < np; j++) {
            s[ne + 2 * j] = (uint32_t)(p->pairs[j] >> 32);
            s[ne + 2 * j + 1] = (uint32_t)p->pairs[j];
        }
    }
    p->soff[k] = (uint32_t)p->sig_n;
    p->slen[k] = ne + 2 * np;
    p->sig_n += ne + 2 * (size_t)np;
    return 0;
}

static int sig_cmp(const void *ctx, uint32_t a, uint32_t b)
{
    const refine_t *p = ctx;
    const uint32_t *x = p->sig + p->soff[a], *y = p->sig + p->soff[b];
    uint32_t la = p->slen[a], lb = p->slen[b], n = la < lb ? la : lb;
    for (uint32_t i = 0; i < n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return la < lb ? -1 : la > lb;
}

/* Signatures of nodes[0..k) (and of `rest`, as entry k, unless it is UINT32_MAX), sorted:
 * the entries' indices go to p->tmp. Returns the number of distinct signatures or -1. */
static long sorted_sigs(refine_t *p, const uint32_t *nodes, uint32_t k, uint32_t rest)
{
    uint32_t total = k + (rest != UINT32_MAX);
    if (GROW(p->soff, p->soff_cap, total) || GROW(p->slen, p->slen_cap, total)
        || GROW(p->tmp, p->tmp_cap, total))
        return -1;
    p->sig_n = 0;
    for (uint32_t j = 0; j < total; j++) {
        if (add_sig(p, j < k ? nodes[j] : rest, j)) return -1;
        p->tmp[j] = j;
    }
    if (sort_u32(p->tmp, total, sig_cmp, p)) return -1;
    long runs = 1;
    for (uint32_t j = 1; j < total; j++) runs += sig_cmp(p, p->tmp[j - 1], p->tmp[j]) != 0;
    return runs;
}

/* A plan for block `value` from the sorted entries (nodes[] by entry; entry k is the rest
 * representative when has_rest). */
static int add_plan(refine_t *p, uint32_t value, const uint32_t *nodes, uint32_t k, int has_rest)
{
    uint32_t total = k + (has_rest != 0);
    if (GROW(p->plans, p->plans_cap, p->plans_n + 1)) return -1;
    refine_plan_t *plan = &p->plans[p->plans_n++];
    plan->value = value;
    plan->gfirst = (uint32_t)p->groups_n;
    plan->gcount = 0;
    plan->rest = -1;
    for (uint32_t j = 0; j < total; j++) {
        uint32_t e = p->tmp[j];
        if (j == 0 || sig_cmp(p, p->tmp[j - 1], e)) {
            if (GROW(p->groups, p->groups_cap, p->groups_n + 1)) return -1;
            p->groups[p->groups_n++] = (refine_range_t){(uint32_t)p->pnodes_n, 0};
            plan->gcount++;
        }
        if (e == k) {
            plan->rest = (int)plan->gcount - 1;
            continue;
        }
        if (GROW(p->pnodes, p->pnodes_cap, p->pnodes_n + 1)) return -1;
        p->pnodes[p->pnodes_n++] = nodes[e];
        p->groups[p->groups_n - 1].count++;
    }
    return 0;
}

static int push_changed(refine_t *p, uint32_t node)
{
    if (GROW(p->changed, p->changed_cap, p->changed_n + 1)) return -1;
    p->changed[p->changed_n++] = node;
    return 0;
}

/* refine.Partition._place: movers into the positions outside the rest group's range. */
static void place_movers(refine_t *p, const refine_plan_t *plan, const uint32_t *lo, const uint32_t *hi,
                         uint32_t start)
{
    uint32_t rest_lo = lo[plan->rest], rest_hi = hi[plan->rest];
    uint32_t epoch = ++p->epoch;
    size_t nmovers = 0;
    for (uint32_t g = 0; g < plan->gcount; g++) {
        if ((int)g == plan->rest) continue;
        refine_range_t r = p->groups[plan->gfirst + g];
        for (uint32_t j = 0; j < r.count; j++) p->stamp[p->pnodes[r.first + j]] = epoch;
        nmovers += r.count;
    }
    if (!nmovers) return;
    /* Movers inside the rest range swap with non-movers outside it, pairwise in order. */
    uint32_t free_pos = start;
    for (uint32_t g = 0; g < plan->gcount; g++) {
        if ((int)g == plan->rest) continue;
        refine_range_t r = p->groups[plan->gfirst + g];
        for (uint32_t j = 0; j < r.count; j++) {
            uint32_t node = p->pnodes[r.first + j], here = p->where[node];
            if (here < rest_lo || here >= rest_hi) continue;
            for (;;) {
                if (free_pos == rest_lo) free_pos = rest_hi;
                if (p->stamp[refine_at(p, free_pos)] != epoch) break;
                free_pos++;
            }
            uint32_t other = refine_at(p, free_pos);
            place(p, other, here);
            place(p, node, free_pos);
            free_pos++;
        }
    }
    uint32_t pos = start;
    for (uint32_t g = 0; g < plan->gcount; g++) {
        if ((int)g == plan->rest) continue;
        refine_range_t r = p->groups[plan->gfirst + g];
        for (uint32_t j = 0; j < r.count; j++) {
            if (pos == rest_lo) pos = rest_hi;
            place(p, p->pnodes[r.first + j], pos++);
        }
    }
}

/* refine.Partition._split. */
static int apply_plan(refine_t *p, const refine_plan_t *plan)
{
    uint32_t start, end, value = plan->value;
    drop_block(p, value, &start, &end);
    uint32_t listed = 0;
    for (uint32_t g = 0; g < plan->gcount; g++) listed += p->groups[plan->gfirst + g].count;
    uint32_t rest = end - start - listed;
    if (GROW(p->tmp, p->tmp_cap, 2 * (size_t)plan->gcount)) return -1;
    uint32_t *lo = p->tmp, *hi = p->tmp + plan->gcount, pos = start;
    for (uint32_t g = 0; g < plan->gcount; g++) {
        uint32_t size = p->groups[plan->gfirst + g].count + ((int)g == plan->rest ? rest : 0);
        lo[g] = pos;
        hi[g] = pos + size;
        pos += size;
    }
    if (plan->rest < 0) {
        pos = start;
        for (uint32_t g = 0; g < plan->gcount; g++) {
            refine_range_t r = p->groups[plan->gfirst + g];
            for (uint32_t j = 0; j < r.count; j++) place(p, p->pnodes[r.first + j], pos++);
        }
    } else {
        place_movers(p, plan, lo, hi, start);
    }
    for (uint32_t g = 0; g < plan->gcount; g++) {
        uint32_t new = value;
        if (!(lo[g] <= value && value < hi[g])) {
            new = mid(lo[g], hi[g]);
            if ((int)g == plan->rest) {
                for (uint32_t q = lo[g]; q < hi[g]; q++) {
                    p->rank[refine_at(p, q)] = new;
                    if (push_changed(p, refine_at(p, q))) return -1;
                }
            } else {
                refine_range_t r = p->groups[plan->gfirst + g];
                for (uint32_t j = 0; j < r.count; j++) {
                    p->rank[p->pnodes[r.first + j]] = new;
                    if (push_changed(p, p->pnodes[r.first + j])) return -1;
                }
            }
        }
        if (hi[g] - lo[g] > 1) set_block(p, new, lo[g], hi[g]);
    }
    return 0;
}

/* Plans for every block, all members' signatures computed (a round with every block dirty). */
static int plan_full(refine_t *p)
{
    for (uint32_t v = p->offset; v - p->offset < p->n; v++) {
        if (!refine_is_block(p, v)) continue;
        uint32_t s = p->bstart[v - p->offset], e = p->bend[v - p->offset];
        long runs = sorted_sigs(p, p->order + (s - p->offset), e - s, UINT32_MAX);
        if (runs < 0) return -1;
        if (runs > 1 && add_plan(p, v, p->order + (s - p->offset), e - s, 0)) return -1;
    }
    return 0;
}

static int by_rank(const void *ctx, uint32_t a, uint32_t b)
{
    const uint32_t *rank = ctx;
    return rank[a] < rank[b] ? -1 : rank[a] > rank[b];
}

/* Plans for the blocks that hold readers: only touched members can have a new signature;
 * the others share one, computed from a representative. */
static int plan_touched(refine_t *p)
{
    uint32_t epoch = ++p->epoch;
    size_t k = 0;
    for (size_t j = 0; j < p->readers_n; j++) {
        uint32_t node = p->readers[j];
        if (p->stamp[node] == epoch || !refine_is_block(p, p->rank[node])) continue;
        p->stamp[node] = epoch;
        p->readers[k++] = node;
    }
    p->readers_n = k;
    if (sort_u32(p->readers, k, by_rank, p->rank)) return -1;
    for (size_t j = 0; j < k;) {
        uint32_t value = p->rank[p->readers[j]];
        size_t e = j;
        while (e < k && p->rank[p->readers[e]] == value) e++;
        uint32_t start = p->bstart[value - p->offset], end = p->bend[value - p->offset];
        uint32_t count = (uint32_t)(e - j), rest = UINT32_MAX;
        if (count != end - start) {
            uint32_t pos = start;
            while (p->stamp[refine_at(p, pos)] == epoch) pos++;
            rest = refine_at(p, pos);
        }
        long runs = sorted_sigs(p, p->readers + j, count, rest);
        if (runs < 0) return -1;
        if (runs > 1 && add_plan(p, value, p->readers + j, count, rest != UINT32_MAX)) return -1;
        j = e;
    }
    return 0;
}

int refine_collect_readers(refine_t *p, int both)
{
    p->readers_n = 0;
    for (size_t j = 0; j < p->changed_n; j++) {
        uint32_t o = own(p, p->changed[j]);
        uint32_t np = p->poff[o + 1] - p->poff[o];
        uint32_t ne = both ? p->eoff[o + 1] - p->eoff[o] : 0;
        if (GROW(p->readers, p->readers_cap, p->readers_n + np + ne)) return -1;
        for (uint32_t q = 0; q < np; q++) p->readers[p->readers_n++] = p->pred[p->poff[o] + q];
        for (uint32_t q = 0; q < ne; q++) {
            uint32_t target = p->edge[p->eoff[o] + q];
            if (p->inset[target]) p->readers[p->readers_n++] = target;
        }
    }
    return 0;
}

int refine_add_referrers(refine_t *p, uint32_t node)
{
    uint32_t o = own(p, node), np = p->poff[o + 1] - p->poff[o];
    if (!np) return 0;
    if (GROW(p->readers, p->readers_cap, p->readers_n + np)) return -1;
    memcpy(p->readers + p->readers_n, p->pred + p->poff[o], (size_t)np * sizeof *p->readers);
    p->readers_n += np;
    return 0;
}

int refine_init(refine_t *p, uint32_t nslots, uint32_t first, uint32_t offset,
                const uint32_t *nodes, uint32_t n)
{
    memset(p, 0, sizeof *p);
    p->offset = offset;
    p->n = n;
    p->nslots = nslots;
    p->first = first;
    p->order = big_alloc((size_t)n + 1, sizeof *p->order);
    p->where = big_zalloc(nslots, sizeof *p->where);
    p->rank = big_alloc(nslots, sizeof *p->rank);
    p->bstart = big_zalloc((size_t)n + 1, sizeof *p->bstart);
    p->bend = big_zalloc((size_t)n + 1, sizeof *p->bend);
    p->inset = big_zalloc(nslots, 1);
    p->stamp = big_zalloc(nslots, sizeof *p->stamp);
    p->eoff = big_zalloc((size_t)(nslots - first) + 1, sizeof *p->eoff);
    if (!p->order || !p->where || !p->rank || !p->bstart || !p->bend || !p->inset || !p->stamp
        || !p->eoff)
        return -1;
    for (uint32_t id = 0; id < nslots; id++) p->rank[id] = id;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t id = nodes[j];
        if (id < first || id >= nslots || p->inset[id]) return -2;
        p->inset[id] = 1;
        p->order[j] = id;
    }
    return 0;
}

/* Whether the referrers of `target` are kept (its handle has a slot from `first`). */
static int kept_referrer(const refine_t *p, uint32_t target)
{
    return p->inset[target] || (p->referrers_of_all && target >= p->first);
}

int refine_referrers(refine_t *p)
{
    uint32_t count = p->nslots - p->first;
    size_t total = p->eoff[count];
    p->poff = big_zalloc((size_t)count + 2, sizeof *p->poff);
    p->pred = big_alloc(total ? total : 1, sizeof *p->pred);
    p->pidx = big_alloc(total ? total : 1, sizeof *p->pidx);
    if (!p->poff || !p->pred || !p->pidx) return -1;
    for (size_t j = 0; j < total; j++) {
        uint32_t target = p->edge[j];
        if (target >= p->nslots) return -2;
        if (kept_referrer(p, target)) p->poff[own(p, target) + 2]++;
    }
    for (uint32_t o = 0; o < count; o++) p->poff[o + 2] += p->poff[o + 1];
    for (uint32_t o = 0; o < count; o++) {
        for (uint32_t j = p->eoff[o]; j < p->eoff[o + 1]; j++) {
            uint32_t target = p->edge[j];
            if (!kept_referrer(p, target)) continue;
            uint32_t slot = p->poff[own(p, target) + 1]++;
            p->pred[slot] = p->first + o;
            p->pidx[slot] = j - p->eoff[o];
        }
    }
    return 0;
}

void refine_blocks(refine_t *p, const uint8_t *fresh)
{
    uint32_t n = p->n;
    for (uint32_t s = 0; s < n;) {
        uint32_t e = s + 1;
        while (e < n && !fresh[e]) e++;
        uint32_t value = mid(p->offset + s, p->offset + e);
        for (uint32_t q = s; q < e; q++) {
            p->rank[p->order[q]] = value;
            p->where[p->order[q]] = p->offset + q;
        }
        if (e - s > 1) set_block(p, value, p->offset + s, p->offset + e);
        s = e;
    }
}

/* refine.Partition.refine: rounds until no block splits. With `full` every block is
 * dirty in the first round; otherwise the readers already collected are touched. */
int refine_run(refine_t *p, int mode, int full)
{
    p->mode = mode;
    for (;;) {
        p->plans_n = p->groups_n = p->pnodes_n = 0;
        if (full ? plan_full(p) : plan_touched(p)) return -1;
        full = 0;
        p->changed_n = 0;
        for (size_t j = 0; j < p->plans_n; j++)
            if (apply_plan(p, &p->plans[j])) return -1;
        if (refine_collect_readers(p, mode == REFINE_BOTH)) return -1;
        if (p->after_round && p->changed_n && p->after_round(p->after_ctx, p)) return -1;
        if (!p->readers_n) return 0;
    }
}

static int by_id(const void *ctx, uint32_t a, uint32_t b) { return a < b ? -1 : a > b; }

int refine_discretize(refine_t *p, uint32_t value)
{
    uint32_t start, end;
    drop_block(p, value, &start, &end);
    if (sort_u32(p->order + (start - p->offset), end - start, by_id, NULL)) return -1;
    for (uint32_t q = start; q < end; q++) {
        p->rank[refine_at(p, q)] = q;
        p->where[refine_at(p, q)] = q;
    }
    return 0;
}

/* refine.Partition.individualize: `node` first in its block; p->changed gets the nodes
 * whose rank changed. */
int refine_individualize(refine_t *p, uint32_t value, uint32_t node)
{
    uint32_t start, end;
    drop_block(p, value, &start, &end);
    uint32_t first = refine_at(p, start), here = p->where[node];
    place(p, first, here);
    place(p, node, start);
    p->changed_n = 0;
    uint32_t rest_value = value;
    if (value != start) {
        p->rank[node] = start;
        if (push_changed(p, node)) return -1;
    } else {
        rest_value = mid(start + 1, end);
        for (uint32_t q = start + 1; q < end; q++) {
            p->rank[refine_at(p, q)] = rest_value;
            if (push_changed(p, refine_at(p, q))) return -1;
        }
    }
    if (end - start > 2) set_block(p, rest_value, start + 1, end);
    return 0;
}

void refine_free(refine_t *p)
{
    void *arrays[] = {p->order, p->where, p->rank, p->bstart, p->bend, p->inset, p->eoff,
                      p->edge, p->poff, p->pred, p->pidx, p->stamp, p->sig, p->soff, p->slen,
                      p->pairs, p->changed, p->readers, p->pnodes, p->groups, p->plans, p->tmp};
    for (size_t j = 0; j < sizeof arrays / sizeof *arrays; j++) free(arrays[j]);
}

