/* diff/pairing.settle_duplicates' graph work in C: what the roots of "alike" duplicated
 * names reach on each side, each side's canonical order of it (canonical_order of
 * diff/pairing._Graph of one side) and the equivalence classes of both sides in one
 * graph (dedup.equivalence_classes of the _Graph of both). On generic kernels those
 * roots reach most of the kernel (two `struct dma_chan` and what they point to), which
 * the reference walked, ordered and refined in Python.
 *
 * Both graphs are made as the reference makes them: the reached types renumbered 1..n in
 * id order (side 0 first, then side 1), names unchanged; in the joint graph side 1's
 * name offsets move past side 0's strings, so every name reads as on its own side. */
#include "diffjoint.h"

#include <stdlib.h>
#include <string.h>

#include "refined.h"

typedef struct {
    uint32_t *words;
    size_t nwords;
} words_t;

/* The ids `roots` reach (void left out), ascending; -2 for a root out of range. */
static int reach(const types_t *t, const uint32_t *roots, uint32_t nroots, joint_side_t *s)
{
    uint32_t nids = t->first_id + t->count;
    uint8_t *seen = big_zalloc(nids, 1);
    uint32_t *stack = NULL, *edges = NULL;
    size_t nstack = 0, cap_stack = 0, cap_edges = 0;
    int rc = -1;
    if (!seen) goto done;
    for (uint32_t k = 0; k < nroots; k++) {
        if (roots[k] < t->first_id || roots[k] >= nids) {
            rc = -2;
            goto done;
        }
        if (seen[roots[k]]) continue;
        seen[roots[k]] = 1;
        if (GROW(stack, cap_stack, nstack + 1)) goto done;
        stack[nstack++] = roots[k];
    }
    while (nstack) {
        uint32_t i = stack[--nstack] - t->first_id;
        if (GROW(edges, cap_edges, (size_t)edge_count(t, i) + 1)) goto done;
        uint32_t n = type_edges(t, i, edges);
        if (GROW(stack, cap_stack, nstack + n)) goto done;
        for (uint32_t j = 0; j < n; j++)
            if (edges[j] >= t->first_id && !seen[edges[j]]) {  /* checked by index_types */
                seen[edges[j]] = 1;
                stack[nstack++] = edges[j];
            }
    }
    s->n = 0;
    for (uint32_t id = t->first_id; id < nids; id++) s->n += seen[id];
    s->reach = big_alloc((size_t)s->n + 1, sizeof *s->reach);
    s->position = big_alloc((size_t)s->n + 1, sizeof *s->position);
    if (!s->reach || !s->position) goto done;
    s->n = 0;
    for (uint32_t id = t->first_id; id < nids; id++)
        if (seen[id]) s->reach[s->n++] = id;
    rc = 0;
done:
    free(seen), free(stack), free(edges);
    return rc;
}

/* The records of the reached ids, renumbered from `first_new` in id order, names moved
 * by `shift`, appended to `out`. */
static int append_records(const types_t *t, const joint_side_t *s, uint32_t first_new,
                          uint32_t shift, words_t *out)
{
    uint32_t nids = t->first_id + t->count;
    uint32_t *new_id = big_zalloc(nids, sizeof *new_id);
    if (!new_id) return -1;
    size_t words = out->nwords;
    for (uint32_t j = 0; j < s->n; j++) {
        uint32_t i = s->reach[j] - t->first_id;
        new_id[s->reach[j]] = first_new + j;
        words += t->start[i + 1] - t->start[i];
    }
    uint32_t *grown = realloc(out->words, (words ? words : 1) * sizeof *grown);
    if (!grown) {
        free(new_id);
        return -1;
    }
    out->words = grown;
    for (uint32_t j = 0; j < s->n; j++) {
        uint32_t i = s->reach[j] - t->first_id;
        remap_record(t, i, new_id, shift, out->words + out->nwords);
        out->nwords += t->start[i + 1] - t->start[i];
    }
    free(new_id);
    return 0;
}

/* The end of a string chain (its tables follow one another from 0). */
static uint32_t strings_end(const types_t *t)
{
    const strtab_t *own = &t->tabs[t->ntabs - 1];
    return own->start + own->len;
}

/* The side's reached types on their own, ids 1..n: each one's place in their canonical
 * order ("kind" order), into s->position. */
static int side_order(const types_t *t, joint_side_t *s)
{
    words_t w = {0};
    types_t own = {0};
    uint32_t *nodes = NULL, *order = NULL;
    int alone, rc = -1;
    if (append_records(t, s, 1, 0, &w)) goto done;
    own = (types_t){.w = w.words, .nwords = w.nwords, .first_id = 1, .tabs = t->tabs,
                    .ntabs = t->ntabs};
    if (index_types(&own, strings_end(t)) || own.count != s->n) goto done;
    nodes = big_alloc((size_t)s->n + 1, sizeof *nodes);
    order = big_alloc((size_t)s->n + 1, sizeof *order);
    if (!nodes || !order) goto done;
    for (uint32_t j = 0; j < s->n; j++) nodes[j] = j + 1;
    if (canonical_order(&own, nodes, s->n, NULL, 0, order, &alone)) goto done;
    for (uint32_t k = 0; k < s->n; k++) s->position[order[k] - 1] = k;
    rc = 0;
done:
    free(w.words), free(own.start), free(nodes), free(order);
    return rc;
}

static int is_declaration_of(const types_t *t, uint32_t i)
{
    uint32_t kind = t_kind(t, i);
    return kind == K_FWD || ((kind == K_ENUM || kind == K_ENUM64) && !t_vlen(t, i));
}

static int by_key(const void *ctx, uint32_t a, uint32_t b)
{
    const uint32_t *key = ctx;
    if (key[a - 1] != key[b - 1]) return key[a - 1] < key[b - 1] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The edges of ids 1..n (handles are ids, CSR by own index) and their referrers. */
static int joint_edges(refine_t *p, const types_t *t)
{
    uint32_t n = t->count;
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        p->eoff[i] = (uint32_t)total;
        total += edge_count(t, i);
    }
    if (total > UINT32_MAX) return -1;
    p->eoff[n] = (uint32_t)total;
    p->edge = big_alloc(total ? total : 1, sizeof *p->edge);
    if (!p->edge) return -1;
    for (uint32_t i = 0; i < n; i++) type_edges(t, i, p->edge + p->eoff[i]);
    return refine_referrers(p);
}

/* dedup._refined's partition on the joint graph (canon/csrc/refined.c, on the shared
 * refinement): blocks from the abstract keys, split by the ranks the edges read (a
 * declaration's readers read the definition it stands for) until nothing splits; then
 * each declaration takes the class of the definition it stands for. cls: by id, 0 for
 * void; equal numbers, one class. token, declares: by own index. */
static int refine_joint(const types_t *t, const uint32_t *key, const uint32_t *token,
                        const uint8_t *declares, uint32_t *cls)
{
    uint32_t n = t->count, *nodes = big_alloc((size_t)n + 1, sizeof *nodes);
    uint8_t *fresh = big_alloc((size_t)n + 1, 1);
    refine_t p;
    memset(&p, 0, sizeof p);
    int rc = -1;
    if (!nodes || !fresh) goto done;
    for (uint32_t j = 0; j < n; j++) nodes[j] = j + 1;
    if (sort_u32(nodes, n, by_key, key) || refine_init(&p, n + 1, 1, 1, nodes, n)
        || joint_edges(&p, t))
        goto done;
    for (uint32_t j = 0; j < n; j++) fresh[j] = !j || key[nodes[j] - 1] != key[nodes[j - 1] - 1];
    refine_blocks(&p, fresh);
    if (refine_settled(&p, token, declares, n)) goto done;
    for (uint32_t id = 0; id <= n; id++) cls[id] = p.rank[p.reads[id]];
    rc = 0;
done:
    free(nodes), free(fresh), free(p.reads);
    refine_free(&p);
    return rc;
}

/* The classes of the joint graph `t` (ids 1..count), by id. */
static int joint_classes(const types_t *t, uint32_t *cls)
{
    uint32_t n = t->count;
    uint32_t *key = big_alloc((size_t)n + 1, sizeof *key);
    uint32_t *token = big_alloc((size_t)n + 1, sizeof *token);
    uint8_t *declares = big_alloc((size_t)n + 1, 1);
    int rc = -1;
    if (!key || !token || !declares || abstract_keys(t, 0, key, token)) goto done;
    for (uint32_t i = 0; i < n; i++) declares[i] = (uint8_t)is_declaration_of(t, i);
    rc = refine_joint(t, key, token, declares, cls);
done:
    free(key), free(token), free(declares);
    return rc;
}

/* Both sides' reached types in one graph, side 1's names after side 0's strings: its
 * string tables are both sides' (side 1's moved past side 0's end), read in place. */
static int joint_graph(const types_t *const t[2], const joint_side_t *s, words_t *w,
                       types_t *joint)
{
    uint32_t end0 = strings_end(t[0]), end1 = strings_end(t[1]);
    if ((uint64_t)end0 + end1 > UINT32_MAX) return -1;
    int ntabs = t[0]->ntabs + t[1]->ntabs;
    strtab_t *tab = malloc((size_t)ntabs * sizeof *tab);
    if (!tab) return -1;
    for (int k = 0, at = 0; k < 2; k++)
        for (int j = 0; j < t[k]->ntabs; j++, at++) {
            tab[at] = t[k]->tabs[j];
            tab[at].start += k ? end0 : 0;
        }
    joint->tabs = tab;
    if (append_records(t[0], &s[0], 1, 0, w) || append_records(t[1], &s[1], 1 + s[0].n, end0, w))
        return -1;
    *joint = (types_t){.w = w->words, .nwords = w->nwords, .first_id = 1, .tabs = tab, .ntabs = ntabs};
    if (index_types(joint, end0 + end1) || joint->count != s[0].n + s[1].n) return -1;
    return 0;
}

int diff_joint(const types_t *const t[2], const uint32_t *const roots[2],
               const uint32_t nroots[2], joint_t *out)
{
    memset(out, 0, sizeof *out);
    words_t w = {0};
    types_t joint = {0};
    int rc = -1;
    for (int k = 0; k < 2; k++) {
        if ((rc = reach(t[k], roots[k], nroots[k], &out->side[k])) != 0) goto done;
        rc = -1;
        if (side_order(t[k], &out->side[k])) goto done;
    }
    out->classes = big_alloc((size_t)out->side[0].n + out->side[1].n + 1, sizeof *out->classes);
    if (!out->classes || joint_graph(t, out->side, &w, &joint)) goto done;
    rc = joint_classes(&joint, out->classes);
done:
    free(w.words), free(joint.start), free((void *)joint.tabs);
    if (rc) joint_free(out);
    return rc;
}

void joint_free(joint_t *j)
{
    for (int k = 0; k < 2; k++) free(j->side[k].reach), free(j->side[k].position);
    free(j->classes);
    memset(j, 0, sizeof *j);
}
