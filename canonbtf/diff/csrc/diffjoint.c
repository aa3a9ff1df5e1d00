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

typedef struct {
    const types_t *t;
    const uint32_t *token;      /* by own index: token number (abstract_keys), 0 none */
    uint8_t *declares;          /* by own index */
    uint32_t *first_def;        /* by token: the lowest id defining it, 0 none */
    uint32_t *def_class;        /* by token: its definitions' one class, 0 when several */
    uint32_t ntokens;
} names_ctx_t;

/* Each token's definitions' class while they share one (dedup._refined's `settle`). */
static void settle(names_ctx_t *c, const uint32_t *cls)
{
    memset(c->def_class, 0xFF, (size_t)c->ntokens * sizeof *c->def_class);
    for (uint32_t i = 0; i < c->t->count; i++) {
        uint32_t tok = c->token[i];
        if (!tok || c->declares[i]) continue;
        uint32_t *d = &c->def_class[tok];
        *d = *d == UINT32_MAX ? cls[i + 1] : *d == cls[i + 1] ? *d : 0;
    }
}

/* What a reference to `id` reads: the class of the definition a declaration stands for
 * (its name's definitions share a class), else the class of `id`. */
static uint32_t read_class(const names_ctx_t *c, const uint32_t *cls, uint32_t id)
{
    if (!id) return 0;
    uint32_t i = id - 1, tok = c->token[i];
    if (tok && c->declares[i] && c->first_def[tok] && c->def_class[tok])
        return c->def_class[tok];
    return cls[id];
}

/* dedup._refined's partition on the joint graph: from the abstract keys, split by the
 * classes the edges read until nothing splits (the greatest fixpoint the reference's
 * rounds reach too: classes only split); then each declaration takes the class of the
 * definition it stands for. cls: by id, 0 for void. */
static int refine_joint(const types_t *t, const uint32_t *key, names_ctx_t *c, uint32_t *cls)
{
    uint32_t n = t->count, most = 0, *item = NULL, *next_cls = NULL;
    for (uint32_t i = 0; i < n; i++)
        if (edge_count(t, i) > most) most = edge_count(t, i);
    item = big_alloc((size_t)most + 2, sizeof *item);
    next_cls = big_alloc((size_t)n + 1, sizeof *next_cls);
    intern_t in;
    memset(&in, 0, sizeof in);
    int rc = -1;
    if (!item || !next_cls) goto done;
    cls[0] = next_cls[0] = 0;
    for (uint32_t i = 0; i < n; i++) cls[i + 1] = key[i];
    size_t count = 0;
    for (;;) {
        settle(c, cls);
        intern_clear(&in);
        if (intern_reserve(&in, n)) goto done;  /* a class per type at most */
        for (uint32_t i = 0; i < n; i++) {
            uint32_t m = type_edges(t, i, item + 1);
            item[0] = cls[i + 1];
            for (uint32_t j = 1; j <= m; j++) item[j] = read_class(c, cls, item[j]);
            int is_new;
            int64_t id = intern_bytes(&in, item, ((size_t)m + 1) * sizeof *item, &is_new);
            if (id < 0) goto done;
            next_cls[i + 1] = (uint32_t)id + 1;  /* classes from 1, in order of first use */
        }
        memcpy(cls, next_cls, ((size_t)n + 1) * sizeof *cls);
        if (in.count == count) break;  /* a refinement with as many classes: the same */
        count = in.count;
    }
    settle(c, cls);
    for (uint32_t i = 0; i < n; i++) next_cls[i + 1] = read_class(c, cls, i + 1);
    memcpy(cls, next_cls, ((size_t)n + 1) * sizeof *cls);
    rc = 0;
done:
    free(item), free(next_cls);
    intern_free(&in);
    return rc;
}

/* The classes of the joint graph `t` (ids 1..count), by id. */
static int joint_classes(const types_t *t, uint32_t *cls)
{
    uint32_t n = t->count;
    uint32_t *key = big_alloc((size_t)n + 1, sizeof *key);
    uint32_t *token = big_alloc((size_t)n + 1, sizeof *token);
    names_ctx_t c = {.t = t, .token = token, .declares = big_alloc((size_t)n + 1, 1)};
    int rc = -1;
    if (!key || !token || !c.declares || abstract_keys(t, 0, key, token)) goto done;
    for (uint32_t i = 0; i < n; i++) {
        c.declares[i] = (uint8_t)is_declaration_of(t, i);
        if (token[i] + 1 > c.ntokens) c.ntokens = token[i] + 1;
    }
    c.first_def = big_zalloc((size_t)c.ntokens + 1, sizeof *c.first_def);
    c.def_class = big_alloc((size_t)c.ntokens + 1, sizeof *c.def_class);
    if (!c.first_def || !c.def_class) goto done;
    for (uint32_t i = 0; i < n; i++)
        if (token[i] && !c.declares[i] && !c.first_def[token[i]]) c.first_def[token[i]] = i + 1;
    rc = refine_joint(t, key, &c, cls);
done:
    free(key), free(token), free(c.declares), free(c.first_def), free(c.def_class);
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
