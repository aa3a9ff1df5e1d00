/* canon/dedup._abstract_keys: the dedup's first partition, of a BTF without a base or of a
 * split BTF laid after its base as one section (`base_count` leading types).
 *
 * A type's key is its label and its edges, where an edge to a named struct, union or
 * enum (a token) is that name and any other edge is the target's key. The numbers are
 * the reference's, not only its equalities: tokens are numbered first, in id order, then
 * keys in the order its depth-first walk finishes them (the refinement sorts by them).
 * With a base, the numbers are those of the reference's base index continued over the
 * module (dedup.BaseIndex, then `_reference_inputs`): the base's tokens and keys first,
 * then the module's tokens, then its keys; nothing in the base refers to the module, so
 * walking the base's roots first finishes only base types. basekeys.c keeps the base's
 * part between runs and continues it over a module's own section (the walk below). */
#include <stdlib.h>
#include <string.h>

#include "basekeys.h"

/* Label class of every own type: equal labels, equal classes. */
static int label_classes(const types_t *t, const uint32_t *ids, const ranks_t *names,
                         uint32_t *cls)
{
    uint32_t *order = big_alloc((size_t)t->count + 1, sizeof *order);
    uint8_t *fresh = malloc((size_t)t->count + 1);
    int rc = -1;
    if (order && fresh && !label_sort(t, ids, t->count, names, 0, order, fresh)) {
        uint32_t c = 0;
        for (uint32_t k = 0; k < t->count; k++) cls[order[k]] = c += fresh[k];
        rc = 0;
    }
    free(order), free(fresh);
    return rc;
}

uint32_t token_group(const types_t *t, uint32_t i)
{
    uint32_t kind = t_kind(t, i);
    if (kind == K_STRUCT || kind == K_UNION) return kind == K_UNION;
    if (kind == K_FWD) return t_kflag(t, i);
    if (kind == K_ENUM || kind == K_ENUM64) return 2;
    return 3;
}

/* Token numbers (token_key, by own index; 0 for none) of types [from, to), in id order of
 * first use, continuing `number` (3 * names->distinct slots, zeroed at first): a token is
 * dedup.token_of's (group, name), group 0/1 a struct/union name, 2 an enum's. */
static void token_keys(const types_t *t, const ranks_t *names, uint32_t from, uint32_t to,
                       uint32_t *number, uint32_t *token_key, uint32_t *next)
{
    for (uint32_t i = from; i < to; i++) {
        uint32_t group = token_group(t, i), name = names->rank[names->first[i]];
        token_key[i] = 0;
        if (group == 3 || !name) continue;  /* rank 0: the empty name */
        uint32_t *slot = &number[group * (size_t)names->distinct + name];
        token_key[i] = *slot ? *slot : (*slot = (*next)++);
    }
}

/* The part of an edge to id `s` in a key: 0 for void, the target's token or key, CYCLE
 * for an own target not keyed yet; ids below the section's are the base's (`bk`). */
static uint32_t edge_part(const walk_t *w, uint32_t s)
{
    if (!s) return 0;
    if (s < w->t->first_id) return w->bk->token_key[s - 1] ? w->bk->token_key[s - 1] : w->bk->key[s - 1];
    uint32_t j = s - w->t->first_id;
    return w->token_key[j] ? w->token_key[j] : w->key[j] ? w->key[j] : CYCLE;
}

/* The key of own type `node` from its edges' parts; 0 when out of memory. */
static uint32_t finish(walk_t *w, uint32_t node)
{
    const types_t *t = w->t;
    uint32_t n = type_edges(t, node, w->edges);
    if (GROW(w->item, w->cap_item, (size_t)n + 1)) return 0;
    w->item[0] = w->label[node];
    for (uint32_t j = 0; j < n; j++) w->item[1 + j] = edge_part(w, w->edges[j]);
    if (w->bk) return continued_number(w, n + 1);
    return number_words(&w->in, w->item, n + 1, &w->next);
}

static int push(walk_t *w, uint32_t node)
{
    if (GROW(w->stack, w->cap_stack, w->nstack + 1)) return -1;
    w->stack[w->nstack++] = node;
    return 0;
}

/* Keys of `root` and what it waits for, depth first (dedup._abstract_keys' walk). */
int walk_from(walk_t *w, uint32_t root)
{
    const types_t *t = w->t;
    uint32_t first = t->first_id;
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
                if (s >= first && !w->token_key[s - first] && !w->key[s - first]
                    && !w->on_path[s - first]) {
                    if (push(w, s - first)) return -1;
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

/* Room for the walk over `t`: its path flags and an edge buffer for its largest type. */
int walk_init(walk_t *w, const types_t *t, uint32_t *key, uint32_t *token_key)
{
    uint32_t most = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t n = edge_count(t, i);
        if (n > most) most = n;
    }
    w->t = t, w->key = key, w->token_key = token_key, w->next = 1;
    w->on_path = big_zalloc((size_t)t->count + 1, 1);
    w->edges = big_alloc((size_t)most + 1, sizeof *w->edges);
    w->cap_edges = (size_t)most + 1;
    memset(key, 0, (size_t)t->count * sizeof *key);
    return w->on_path && w->edges ? 0 : -1;
}

void walk_free(walk_t *w)
{
    free(w->on_path), free(w->edges), free(w->stack), free(w->item), free(w->spare);
    numbering_free(&w->in);
    memset(w, 0, sizeof *w);
}

int abstract_keys_kept(const types_t *t, uint32_t base_count, uint32_t *key,
                       uint32_t *token_key, keyed_state_t *keep)
{
    walk_t w;
    memset(&w, 0, sizeof w);
    uint32_t *label = big_alloc((size_t)t->count + 1, sizeof *label);
    uint32_t *ids = big_alloc((size_t)t->count + 1, sizeof *ids);
    uint32_t *number = NULL;
    ranks_t names;
    memset(&names, 0, sizeof names);
    if (base_count > t->count) base_count = t->count;
    int rc = -1;
    if (!label || !ids || walk_init(&w, t, key, token_key)) goto done;
    w.label = label;
    for (uint32_t i = 0; i < t->count; i++) ids[i] = i;
    if (name_ranks(t, ids, t->count, 0, &names)) goto done;
    if (label_classes(t, ids, &names, label)) goto done;
    if (!(number = big_zalloc(3 * (size_t)names.distinct, sizeof *number))) goto done;
    free(ids);
    ids = NULL;
    if (intern_reserve(&w.in.table, t->count)) goto done;  /* a key per type at most */
    /* The base's tokens and keys, then the module's: [0, base_count), [base_count, count). */
    const uint32_t bounds[3] = {0, base_count, t->count};
    for (int part = 0; part < 2; part++) {
        token_keys(t, &names, bounds[part], bounds[part + 1], number, token_key, &w.next);
        for (uint32_t i = bounds[part]; i < bounds[part + 1]; i++)
            if (!key[i] && walk_from(&w, i)) goto done;
    }
    rc = 0;
    if (keep) {  /* handed over, not freed */
        keep->names = names, keep->label = label, keep->number = number;
        keep->in = w.in, keep->next = w.next;
        memset(&names, 0, sizeof names), memset(&w.in, 0, sizeof w.in);
        label = number = NULL;
    }
done:
    free(number), free(label), free(ids);
    ranks_free(&names);
    walk_free(&w);
    return rc;
}

int abstract_keys(const types_t *t, uint32_t base_count, uint32_t *key, uint32_t *token_key)
{
    return abstract_keys_kept(t, base_count, key, token_key, NULL);
}

void keyed_state_free(keyed_state_t *s)
{
    ranks_free(&s->names);
    free(s->label), free(s->number);
    numbering_free(&s->in);
    memset(s, 0, sizeof *s);
}
