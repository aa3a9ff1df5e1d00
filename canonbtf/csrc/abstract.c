/* canon/dedup._abstract_keys for a BTF without a base: the dedup's first partition.
 *
 * A type's key is its label and its edges, where an edge to a named struct, union or
 * enum (a token) is that name and any other edge is the target's key. The numbers are
 * the reference's, not only its equalities: tokens are numbered first, in id order, then
 * keys in the order its depth-first walk finishes them (the refinement sorts by them). */
#include <stdlib.h>
#include <string.h>

#include "types.h"

#define CYCLE 0xFFFFFFFFu   /* an edge closing a cycle through anonymous types (-1) */
#define TOKEN 0xFFFFFFFEu   /* first word of a token's item; a label class is smaller */

static int by_label(const void *ctx, uint32_t a, uint32_t b) { return label_cmp(ctx, a, b, 1); }

/* Label class of every own type: equal labels, equal classes. */
static int label_classes(const types_t *t, uint32_t *cls)
{
    uint32_t *ids = malloc(((size_t)t->count + 1) * sizeof *ids);
    if (!ids) return -1;
    for (uint32_t i = 0; i < t->count; i++) ids[i] = i;
    if (sort_u32(ids, t->count, by_label, t)) {
        free(ids);
        return -1;
    }
    uint32_t c = 0;
    for (uint32_t k = 0; k < t->count; k++) {
        if (k && label_cmp(t, ids[k - 1], ids[k], 1)) c++;
        cls[ids[k]] = c;
    }
    free(ids);
    return 0;
}

/* dedup.token_of as (group, name): group 0/1 a struct/union name, 2 an enum's; -1 none. */
static int token_group(const types_t *t, uint32_t i)
{
    uint32_t kind = t_kind(t, i), len;
    name_at(t, t_name(t, i), &len);
    if (!len) return -1;
    if (kind == K_STRUCT || kind == K_UNION) return kind == K_UNION;
    if (kind == K_FWD) return (int)t_kflag(t, i);
    if (kind == K_ENUM || kind == K_ENUM64) return 2;
    return -1;
}

typedef struct {
    const types_t *t;
    const int *group;
} tokens_ctx;

static int by_token(const void *ctx, uint32_t a, uint32_t b)
{
    const tokens_ctx *c = ctx;
    if (c->group[a] != c->group[b]) return c->group[a] < c->group[b] ? -1 : 1;
    uint32_t la, lb;
    const uint8_t *na = name_at(c->t, t_name(c->t, a), &la), *nb = name_at(c->t, t_name(c->t, b), &lb);
    int d = memcmp(na, nb, la < lb ? la : lb);
    if (d) return d < 0 ? -1 : 1;
    return la < lb ? -1 : la > lb;
}

/* Token numbers (token_key, by own index; 0 for none), in id order of first use. */
static int token_keys(const types_t *t, uint32_t *token_key, uint32_t *next)
{
    int rc = -1;
    int *group = malloc(((size_t)t->count + 1) * sizeof *group);
    uint32_t *ids = malloc(((size_t)t->count + 1) * sizeof *ids);
    uint32_t *same = malloc(((size_t)t->count + 1) * sizeof *same);  /* -> first of its token */
    if (!group || !ids || !same) goto done;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count; i++)
        if ((group[i] = token_group(t, i)) >= 0) ids[n++] = i;
    tokens_ctx ctx = {t, group};
    if (sort_u32(ids, n, by_token, &ctx)) goto done;
    for (uint32_t k = 0; k < n; k++)  /* a stable sort: the first of a run is its lowest id */
        same[ids[k]] = k && !by_token(&ctx, ids[k - 1], ids[k]) ? same[ids[k - 1]] : ids[k];
    for (uint32_t i = 0; i < t->count; i++) {
        token_key[i] = 0;
        if (group[i] < 0) continue;
        token_key[i] = same[i] == i ? (*next)++ : token_key[same[i]];
    }
    rc = 0;
done:
    free(group), free(ids), free(same);
    return rc;
}

typedef struct {
    const types_t *t;
    const uint32_t *label, *token_key;
    uint32_t *key;
    uint8_t *on_path;
    uint32_t *stack, *edges, *item;
    size_t nstack, cap_stack, cap_item;
    intern_t in;
    uint32_t next;
} walk_t;

/* The key of own type `node` from its edges' parts; 0 when out of memory. */
static uint32_t finish(walk_t *w, uint32_t node)
{
    const types_t *t = w->t;
    uint32_t n = type_edges(t, node, w->edges);
    if (GROW(w->item, w->cap_item, (size_t)n + 1)) return 0;
    w->item[0] = w->label[node];
    for (uint32_t j = 0; j < n; j++) {
        uint32_t s = w->edges[j];
        w->item[1 + j] = !s ? 0 : w->token_key[s - 1] ? w->token_key[s - 1]
                       : w->key[s - 1] ? w->key[s - 1] : CYCLE;
    }
    return intern(&w->in, w->item, n + 1, &w->next);
}

static int push(walk_t *w, uint32_t node)
{
    if (GROW(w->stack, w->cap_stack, w->nstack + 1)) return -1;
    w->stack[w->nstack++] = node;
    return 0;
}

/* Keys of `root` and what it waits for, depth first (dedup._abstract_keys' walk). */
static int walk_from(walk_t *w, uint32_t root)
{
    const types_t *t = w->t;
    if (push(w, root)) return -1;
    while (w->nstack) {
        uint32_t node = w->stack[w->nstack - 1];
        if (w->key[node]) {
            w->nstack--;
            continue;
        }
        if (!w->on_path[node]) {
            uint32_t n = type_edges(t, node, w->edges), pending = 0;
            for (uint32_t j = 0; j < n; j++) {
                uint32_t s = w->edges[j];
                if (s && !w->token_key[s - 1] && !w->key[s - 1] && !w->on_path[s - 1]) {
                    if (push(w, s - 1)) return -1;
                    pending++;
                }
            }
            if (pending) {
                w->on_path[node] = 1;
                continue;
            }
        }
        if (!(w->key[node] = finish(w, node))) return -1;
        w->on_path[node] = 0;
        w->nstack--;
    }
    return 0;
}

int abstract_keys(const types_t *t, uint32_t *key, uint32_t *token_key)
{
    walk_t w = {.t = t, .token_key = token_key, .key = key, .next = 1};
    uint32_t most = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t n = edge_count(t, i);
        if (n > most) most = n;
    }
    uint32_t *label = malloc(((size_t)t->count + 1) * sizeof *label);
    w.label = label;
    w.on_path = calloc((size_t)t->count + 1, 1);
    w.edges = malloc(((size_t)most + 1) * sizeof *w.edges);
    int rc = -1;
    if (!label || !w.on_path || !w.edges || label_classes(t, label)
        || token_keys(t, token_key, &w.next))
        goto done;
    memset(key, 0, (size_t)t->count * sizeof *key);
    for (uint32_t i = 0; i < t->count; i++)
        if (!key[i] && walk_from(&w, i)) goto done;
    rc = 0;
done:
    free(label), free(w.on_path), free(w.edges), free(w.stack), free(w.item);
    intern_free(&w.in);
    return rc;
}
