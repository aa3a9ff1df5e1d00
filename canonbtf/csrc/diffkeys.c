/* canonbtf._btf.diff_plan: which roots diff (canonbtf/diff.py) must describe.
 *
 * diff describes every root by facts in which references are C spellings; most roots of
 * two kernels are unchanged, and spelling them was most of its time. A root's facts are a
 * function of its record and of what it reaches through unnamed types: a named base type
 * (struct, union, enum, typedef, fwd, int, float with a name) and a func, var, datasec or
 * decl tag is only ever read as its kind, kind_flag and name (`ReferenceSpeller.label`,
 * `_other`, a datasec entry's name), anything else whole. So each type gets a *key*, a
 * number interned over both BTFs at once (exact: no hash is trusted): its whole record
 * with every name replaced by the name's bytes and every reference by what it refers to,
 * a leaf's kind, kind_flag and name, or any other type's key. Equal keys are equal
 * records down to the leaves, so equal facts: a name with one root on each side whose
 * keys are equal is left out, and a root only added or removed is not spelled (its facts
 * are never read).
 *
 * A key is 0 ("spell it") where that does not hold or cannot be known: a type whose
 * unnamed closure has a cycle (malformed BTF; the speller's placeholders then depend on
 * the order it spells in, so every root that reaches one is spelled, in the reference's
 * order), and a root whose closure reaches a duplicated name (its tag is only known after
 * pairing). Also found: which anonymous aggregates no named root describes inside itself
 * (what `_Facts.expanded` leaves of them once every named root is spelled). */
#include <stdlib.h>
#include <string.h>

#include "diffkeys.h"

enum { TAG_VOID = 1, TAG_LEAF, TAG_FULL };
#define MAX_CHAIN 48   /* emit/declarator.MAX_CHAIN: anon_end stops past it */

/* The interned keys of both sides, and the one being built: a record's words with each
 * name inlined as (length, bytes) and each reference as (TAG_VOID), (TAG_LEAF, kind and
 * kind_flag, name) or (TAG_FULL, key), so that the words read back one way only. */
typedef struct {
    intern_t in;
    uint32_t next;
    uint32_t *key;
    size_t cap, n;
} keys_t;

static int put(keys_t *k, uint32_t word)
{
    if (GROW(k->key, k->cap, k->n + 1)) return -1;
    k->key[k->n++] = word;
    return 0;
}

/* A name's bytes, as StringTable.get reads them. */
static int put_name(keys_t *k, const types_t *t, uint32_t off)
{
    uint32_t len;
    const uint8_t *p = name_at(t, off, &len);
    size_t words = ((size_t)len + 3) / 4;
    if (put(k, len) || GROW(k->key, k->cap, k->n + words)) return -1;
    k->key[k->n + words - 1] = 0;
    memcpy(k->key + k->n, p, len);
    k->n += words;
    return 0;
}

enum { RAW, REF, NAME };

/* What word j of a record of `kind` holds (the layout of types.c's type_edges and
 * renumber.c): a reference, a name offset, or anything else. */
static int word_role(uint32_t kind, uint32_t j)
{
    if (j == 0) return NAME;
    if (j == 1) return RAW;
    if (j == 2) return typed_kind(kind) ? REF : RAW;
    uint32_t fixed = fixed_words(kind);
    if (j < 3 + fixed) return kind == K_ARRAY && j < 5 ? REF : RAW;
    uint32_t per = item_words(kind);
    if (!per) return RAW;
    uint32_t at = (j - 3 - fixed) % per;
    if (kind == K_DATASEC) return at == 0 ? REF : RAW;
    if (at == 0) return NAME;   /* items_named kinds */
    return at == 1 && (kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO) ? REF : RAW;
}

/* Whether references to type `id` read only its kind, kind_flag and name. */
static int is_leaf(const types_t *t, uint32_t id)
{
    uint32_t i = id - t->first_id;
    switch (t_kind(t, i)) {
    case K_INT: case K_FLOAT: case K_STRUCT: case K_UNION: case K_ENUM: case K_ENUM64:
    case K_FWD: case K_TYPEDEF:
        return t_name(t, i) != 0;
    case K_FUNC: case K_VAR: case K_DATASEC: case K_DECL_TAG:
        return 1;
    default:
        return 0;
    }
}

typedef struct {
    const types_t *t;
    const uint8_t *dup;   /* by id: a duplicated name's root */
    uint32_t *key;        /* by id: the whole record's key (0: unknown) */
    uint8_t *reach;       /* by id: its unnamed closure reaches a duplicated leaf */
} side_t;

static uint32_t nwords(const types_t *t, uint32_t id)
{
    uint32_t i = id - t->first_id;
    return t->start[i + 1] - t->start[i];
}

static const uint32_t *record(const types_t *t, uint32_t id)
{
    return t->w + t->start[id - t->first_id];
}

/* A reference to `id` in the key being built; sets *unknown for a type without a key. */
static int put_ref(keys_t *k, side_t *s, uint32_t id, int *unknown, int *reach)
{
    const types_t *t = s->t;
    if (!id) return put(k, TAG_VOID);
    if (!is_leaf(t, id)) {
        *reach |= s->reach[id];
        *unknown |= !s->key[id];
        return put(k, TAG_FULL) || put(k, s->key[id]);
    }
    uint32_t i = id - t->first_id;
    *reach |= s->dup[id];
    return put(k, TAG_LEAF) || put(k, t_kind(t, i) | t_kflag(t, i) << 8)
        || put_name(k, t, t_name(t, i));
}

/* Sets the key of type `id` once every non-leaf type it refers to has one, or is on the
 * walk's stack (a cycle: the key stays 0, and so do those of all that reach it). */
static int full_key(keys_t *k, side_t *s, uint32_t id)
{
    const types_t *t = s->t;
    uint32_t nw = nwords(t, id), kind = t_kind(t, id - t->first_id);
    const uint32_t *w = record(t, id);
    int unknown = 0, reach = 0, rc = 0;
    k->n = 0;
    for (uint32_t j = 0; j < nw && !rc; j++) {
        switch (word_role(kind, j)) {
        case NAME: rc = put_name(k, t, w[j]); break;
        case REF: rc = put_ref(k, s, w[j], &unknown, &reach); break;
        default: rc = put(k, w[j]);
        }
    }
    s->reach[id] = (uint8_t)reach;
    if (rc || unknown) return rc;
    if (k->n > UINT32_MAX || !(s->key[id] = intern(&k->in, k->key, (uint32_t)k->n, &k->next)))
        return -1;
    return 0;
}

/* Every type's key, children before parents (iteratively: malformed chains can be a
 * million types long). */
static int side_keys(keys_t *k, side_t *s)
{
    const types_t *t = s->t;
    uint32_t last = t->first_id + t->count - 1;
    uint8_t *state = calloc((size_t)last + 1, 1);   /* 1 on the stack, 2 done */
    uint32_t *stack = NULL, *pos = NULL;
    size_t cap = 0, cap_pos = 0, depth = 0;
    int rc = state ? 0 : -1;
    for (uint32_t root = 1; root <= last && !rc; root++) {
        if (state[root]) continue;
        if (GROW(stack, cap, 1) || GROW(pos, cap_pos, 1)) {
            rc = -1;
            break;
        }
        stack[0] = root, pos[0] = 0, depth = 1, state[root] = 1;
        while (depth && !rc) {
            uint32_t id = stack[depth - 1], j = pos[depth - 1];
            uint32_t nw = nwords(t, id), kind = t_kind(t, id - t->first_id);
            const uint32_t *w = record(t, id);
            for (; j < nw; j++) {
                uint32_t r = w[j];
                if (word_role(kind, j) == REF && r && !state[r] && !is_leaf(t, r)) break;
            }
            if (j < nw) {
                pos[depth - 1] = j + 1;
                if (GROW(stack, cap, depth + 1) || GROW(pos, cap_pos, depth + 1)) {
                    rc = -1;
                    break;
                }
                stack[depth] = w[j], pos[depth] = 0, state[w[j]] = 1, depth++;
                continue;
            }
            rc = full_key(k, s, id);
            state[id] = 2;
            depth--;
        }
    }
    free(state), free(stack), free(pos);
    return rc;
}

/* _Facts.anon_end: the anonymous aggregate a reference leads to through qualifiers, type
 * tags, arrays and pointers (0: none). */
static uint32_t anon_end(const types_t *t, uint32_t id)
{
    for (uint32_t depth = 0; id && depth <= MAX_CHAIN; depth++) {
        uint32_t i = id - t->first_id, kind = t_kind(t, i);
        switch (kind) {
        case K_CONST: case K_VOLATILE: case K_RESTRICT: case K_TYPE_TAG: case K_PTR:
            id = t_sot(t, i);
            break;
        case K_ARRAY:
            id = t_rest(t, i)[0];
            break;
        case K_STRUCT: case K_UNION: case K_ENUM: case K_ENUM64:
            return t_name(t, i) ? 0 : id;
        default:
            return 0;
        }
    }
    return 0;
}

/* _Facts.expanded after every named root of own ids from `own_first` was described: the
 * anonymous aggregates their members, targets and types reach, and so on inside those. */
static int expanded(const types_t *t, uint32_t own_first, uint8_t *out)
{
    uint32_t last = t->first_id + t->count - 1, *todo = NULL;
    size_t cap = 0, n = 0;
    for (uint32_t id = own_first; id <= last; id++) {
        uint32_t i = id - t->first_id, kind = t_kind(t, i);
        if (!t_name(t, i)) continue;
        if (kind == K_TYPEDEF || kind == K_VAR) {
            uint32_t end = anon_end(t, t_sot(t, i));
            if (end && !out[end]) {
                out[end] = 1;
                if (GROW(todo, cap, n + 1)) return -1;
                todo[n++] = end;
            }
        } else if (kind == K_STRUCT || kind == K_UNION) {
            if (GROW(todo, cap, n + 1)) return -1;
            todo[n++] = id;
        }
        while (n) {
            uint32_t at = todo[--n], j = at - t->first_id;
            if (t_kind(t, j) != K_STRUCT && t_kind(t, j) != K_UNION) continue;
            const uint32_t *rest = t_rest(t, j);
            for (uint32_t m = 0, vlen = t_vlen(t, j); m < vlen; m++) {
                uint32_t end = anon_end(t, rest[3 * m + 1]);
                if (!end || out[end]) continue;
                out[end] = 1;
                if (GROW(todo, cap, n + 1)) {
                    free(todo);
                    return -1;
                }
                todo[n++] = end;
            }
        }
    }
    free(todo);
    return 0;
}

/* diff's family of a kind (diff.FAMILIES, from 1; 0: not a named root's kind). */
static uint32_t family(uint32_t kind)
{
    switch (kind) {
    case K_STRUCT: return 1;
    case K_UNION: return 2;
    case K_ENUM: case K_ENUM64: return 3;
    case K_TYPEDEF: return 4;
    case K_FWD: return 5;
    case K_FUNC: return 6;
    case K_VAR: return 7;
    case K_DATASEC: return 8;
    case K_INT: return 9;
    case K_FLOAT: return 10;
    default: return 0;
    }
}

/* Named roots grouped by (family, name) over both sides, as diff._named_roots does. */
typedef struct {
    uint32_t count[2], first[2];   /* roots on each side, each side's first */
} group_t;

typedef struct {
    intern_t in;
    uint32_t next;
    uint32_t *of[2];   /* by id: the root's group (0: not a named root) */
    group_t *group;
    size_t cap;
} groups_t;

static int group_side(groups_t *g, keys_t *k, const diff_side_t *d, int n)
{
    const types_t *t = d->t;
    uint32_t last = t->first_id + t->count - 1;
    if (!(g->of[n] = calloc((size_t)last + 1, sizeof(uint32_t)))) return -1;
    for (uint32_t id = d->own_first; id <= last; id++) {
        uint32_t i = id - t->first_id, fam = family(t_kind(t, i));
        if (!fam || !t_name(t, i)) continue;
        k->n = 0;
        if (put(k, fam) || put_name(k, t, t_name(t, i))) return -1;
        uint32_t before = g->next, at = intern(&g->in, k->key, (uint32_t)k->n, &g->next);
        if (!at || GROW(g->group, g->cap, (size_t)g->next)) return -1;
        if (g->next != before) memset(&g->group[at], 0, sizeof g->group[at]);
        group_t *e = &g->group[at];
        if (!e->count[n]) e->first[n] = id;
        e->count[n]++;
        g->of[n][id] = at;
    }
    return 0;
}

static int is_dup(const group_t *e) { return e->count[0] > 1 || e->count[1] > 1; }

static int push(uint32_t **list, size_t *n, size_t *cap, uint32_t id)
{
    if (GROW(*list, *cap, *n + 1)) return -1;
    (*list)[(*n)++] = id;
    return 0;
}

/* What diff reads of one side (diffkeys.h), once both sides' keys are known. */
static int plan_side(const groups_t *g, diff_side_t *sides, int n, const uint32_t *keys[2])
{
    diff_side_t *d = &sides[n];
    const types_t *t = d->t;
    uint32_t last = t->first_id + t->count - 1;
    size_t cap_roots = 0, cap_anon = 0;
    for (uint32_t id = d->own_first; id <= last; id++) {
        uint32_t i = id - t->first_id, kind = t_kind(t, i), at = g->of[n][id];
        if (kind == K_DECL_TAG) {
            if (push(&d->roots, &d->nroots, &cap_roots, id)) return -1;
            continue;
        }
        if (!at) {
            int aggregate = kind == K_STRUCT || kind == K_UNION || kind == K_ENUM || kind == K_ENUM64;
            if (aggregate && !t_name(t, i) && !d->expanded[id]
                && push(&d->anon, &d->nanon, &cap_anon, id))
                return -1;
            continue;
        }
        const group_t *e = &g->group[at];
        int spell = 1;
        if (!is_dup(e) && e->count[0] && e->count[1]) {
            uint32_t key = keys[0][e->first[0]];
            if (key && key == keys[1][e->first[1]]) continue;   /* the same on both sides */
        } else if (!is_dup(e)) {
            /* only added or removed: facts unread unless unknown, or the name reads empty
             * (an offset at a NUL: it is then shown by its first members, diff._anon_title) */
            uint32_t len;
            name_at(t, t_name(t, i), &len);
            spell = !keys[n][id] || !len;
        }
        d->spell[id] = (uint8_t)spell;
        if (push(&d->roots, &d->nroots, &cap_roots, id)) return -1;
    }
    return 0;
}

/* Every type describing the plan's roots reads: the roots (and what decl tags are on),
 * and what they reach short of the leaves past them (whose kind and name are all that
 * is read). */
static int needed(diff_side_t *d)
{
    const types_t *t = d->t;
    uint32_t last = t->first_id + t->count - 1, *todo = NULL;
    size_t n = 0, cap = 0, cap_need = 0;
    uint8_t *mark = calloc((size_t)last + 1, 1);   /* 1 seen, 2 a start */
    int rc = mark ? 0 : -1;
    for (size_t k = 0; k < d->nroots + d->nanon && !rc; k++) {
        uint32_t id = k < d->nroots ? d->roots[k] : d->anon[k - d->nroots];
        mark[id] = 2;
        rc = push(&todo, &n, &cap, id);
        uint32_t i = id - t->first_id, target = t_sot(t, i);
        if (!rc && t_kind(t, i) == K_DECL_TAG && target) {
            mark[target] = 2;
            rc = push(&todo, &n, &cap, target);
        }
    }
    while (n && !rc) {
        uint32_t id = todo[--n], kind = t_kind(t, id - t->first_id);
        if (mark[id] == 2) mark[id] = 1;
        else if (mark[id] || is_leaf(t, id)) continue;
        mark[id] = 1;
        const uint32_t *w = record(t, id);
        for (uint32_t j = 0, nw = nwords(t, id); j < nw && !rc; j++) {
            uint32_t r = w[j];
            if (word_role(kind, j) != REF || !r || mark[r]) continue;
            if (is_leaf(t, r)) mark[r] = 1;
            else rc = push(&todo, &n, &cap, r);
        }
    }
    for (uint32_t id = 1; id <= last && !rc; id++)
        if (mark[id]) rc = push(&d->need, &d->nneed, &cap_need, id);
    free(mark), free(todo);
    return rc;
}

int diff_plan(diff_side_t sides[2])
{
    keys_t k = {.next = 1};
    groups_t g = {.next = 1};
    uint32_t *keys[2] = {NULL, NULL};
    uint8_t *dup = NULL, *reach = NULL;
    int rc = group_side(&g, &k, &sides[0], 0) || group_side(&g, &k, &sides[1], 1) ? -1 : 0;
    for (int n = 0; n < 2 && !rc; n++) {
        const diff_side_t *d = &sides[n];
        uint32_t count = d->t->first_id + d->t->count;
        free(dup), free(reach);
        dup = calloc(count, 1), reach = calloc(count, 1);
        keys[n] = calloc(count, sizeof(uint32_t));
        if (!dup || !reach || !keys[n]) {
            rc = -1;
            break;
        }
        for (uint32_t id = 0; id < count; id++)
            dup[id] = g.of[n][id] && is_dup(&g.group[g.of[n][id]]);
        side_t s = {d->t, dup, keys[n], reach};
        rc = side_keys(&k, &s);
        for (uint32_t id = 0; id < count && !rc; id++)
            if (reach[id]) keys[n][id] = 0;
        if (d->key && !rc) memcpy(d->key, keys[n], count * sizeof *d->key);
        for (uint32_t id = 1; id < count && !rc; id++)
            d->safe[id] = (uint8_t)((is_leaf(d->t, id) ? !dup[id] : keys[n][id] != 0)
                                    | (keys[n][id] != 0) << 1);
        if (!rc) rc = expanded(d->t, d->own_first, d->expanded);
    }
    const uint32_t *read[2] = {keys[0], keys[1]};
    for (int n = 0; n < 2 && !rc; n++) rc = plan_side(&g, sides, n, read) || needed(&sides[n]);
    free(dup), free(reach), free(keys[0]), free(keys[1]);
    free(g.of[0]), free(g.of[1]), free(g.group);
    intern_free(&g.in), intern_free(&k.in);
    free(k.key);
    return rc;
}
