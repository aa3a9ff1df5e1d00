/* canonbtf._btf.diff_plan: which roots diff (canonbtf/diff/) must describe.
 *
 * diff describes every root by facts in which references are C spellings; most roots of
 * two kernels are unchanged, and spelling them was most of its time. A root's facts are a
 * function of its record and of what it reaches through unnamed types: a named base type
 * (struct, union, enum, typedef, fwd, int, float with a name) and a func, var, datasec or
 * decl tag is only ever read as its kind, kind_flag and name (`ReferenceSpeller.label`,
 * `_other`, a datasec entry's name), anything else whole. So each type gets a *key*, a
 * number interned over both BTFs at once (exact: no hash is trusted): its whole record
 * with every name replaced by the name's id (equal bytes, equal ids, over both BTFs) and
 * every reference by what it refers to, a leaf's kind, kind_flag and name, or any other
 * type's key. Equal keys are equal records down to the leaves, so equal facts: a name
 * with one root on each side whose keys are equal is left out, and a root only added or
 * removed is not spelled (its facts are never read). No reference reads a leaf's key,
 * so a leaf's is not interned: a named root's pair is compared record by record.
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

/* The interned keys of both sides, and the one being built: a record's words with each
 * name as its name id and each reference as (TAG_VOID), (TAG_LEAF, kind and kind_flag,
 * name id) or (TAG_FULL, key), so that the words read back one way only. */
typedef struct {
    numbering_t in;
    uint32_t next;
    uint32_t *key;
    size_t cap, n;
    ranks_t names[2];        /* each side's, with name ids for ranks */
} keys_t;

/* Appends to the key being built, in room reserved before. */
static inline void put(keys_t *k, uint32_t word)
{
    k->key[k->n++] = word;
}

/* Names as numbers over both sides, exact: equal bytes as name_at reads them
 * (StringTable.get), equal name ids. Both sides' names are ranked at once (k->names, by
 * name_ranks_joint: by hashes, and no hash trusted), and their ranks are the ids: a key
 * holds one word per name, read with the record. Keys with the names' bytes inlined were
 * most of diff_plan's time, and a table of names looked up per use no better (a cache
 * miss per name). 0, or -1 when out of memory. */
static int name_ids(keys_t *k, const diff_side_t sides[2])
{
    const types_t *t[2] = {sides[0].t, sides[1].t};
    uint32_t n[2] = {t[0]->count, t[1]->count}, most = n[0] > n[1] ? n[0] : n[1];
    uint32_t *ids = big_alloc((size_t)most + 1, sizeof *ids);
    if (!ids) return -1;
    for (uint32_t i = 0; i < most; i++) ids[i] = i;
    const uint32_t *both[2] = {ids, ids};
    int rc = name_ranks_joint(2, t, both, n, 0, k->names);
    free(ids);
    return rc;
}

/* The name ids of own type i (k->names of its side): its name's, then its items'
 * (KINDS_ITEMS_NAMED). */
static const uint32_t *name_ids_of(const ranks_t *names, uint32_t i)
{
    return names->rank + names->first[i];
}

/* What a key holds of a name word: its id, or NO_NAME for offset 0, which the reference
 * tells from a name reading empty (a prototype's `...` is (0, 0), diff._proto_facts). */
#define NO_NAME UINT32_MAX
static inline uint32_t name_word(uint32_t offset, uint32_t id)
{
    return offset ? id : NO_NAME;
}

enum { RAW, REF, NAME };

/* What a role letter of kinds.def is here. */
static int role_of(const char *roles, uint32_t at)
{
    for (uint32_t i = 0; i < at; i++)
        if (!roles[i]) return RAW;   /* past the fields: the last value goes on */
    return roles[at] == 'N' ? NAME : roles[at] == 'T' ? REF : RAW;
}

/* What word j of a record of `kind` holds (the layout of types.c's type_edges and
 * renumber.c): a reference, a name offset, or anything else, as the table of kinds says. */
static int word_role(uint32_t kind, uint32_t j)
{
    if (j == 0) return NAME;
    if (j == 1) return RAW;
    if (j == 2) return kind_in(KINDS_TYPED, kind) ? REF : RAW;
    uint32_t fixed = kind_fixed_words(kind);
    if (j < 3 + fixed) return role_of(kind_fixed_roles(kind), j - 3);
    uint32_t per = kind_item_words(kind);
    if (!per) return RAW;
    return role_of(kind_item_roles(kind), (j - 3 - fixed) % per);
}

/* word_role of every word of each kind, built once: the first 3 + fixed words' roles, then
 * one item's (role[head .. head + per)), which the rest repeat. */
typedef struct {
    uint8_t role[K_MAX + 1][8], head[K_MAX + 1], end[K_MAX + 1];
} roles_t;

static void roles_init(roles_t *r)
{
    for (uint32_t kind = 1; kind <= K_MAX; kind++) {
        r->head[kind] = (uint8_t)(3 + kind_fixed_words(kind));
        r->end[kind] = (uint8_t)(r->head[kind] + kind_item_words(kind));
        for (uint32_t j = 0; j < r->end[kind]; j++) r->role[kind][j] = (uint8_t)word_role(kind, j);
    }
}

/* The entry of r->role[kind] after entry `at`, for the next word. */
static uint32_t next_role(const roles_t *r, uint32_t kind, uint32_t at)
{
    return at + 1 < r->end[kind] ? at + 1 : r->head[kind];
}

/* The entry of r->role[kind] for word j. */
static uint32_t role_entry(const roles_t *r, uint32_t kind, uint32_t j)
{
    uint32_t head = r->head[kind], per = r->end[kind] - head;
    return j < head || !per ? j : head + (j - head) % per;
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

/* A leaf's key: known (the record is compared with same_record, not interned: no
 * reference reads it). Intern numbers stay below it. */
#define LEAF_KEY UINT32_MAX

typedef struct {
    const types_t *t;
    uint8_t *dup;         /* by id: a duplicated name's root */
    uint32_t *key;        /* by id: the whole record's key (0: unknown) */
    uint8_t *reach;       /* by id: its unnamed closure reaches a duplicated leaf */
    uint64_t *leaf;       /* by id: a leaf's kind | kind_flag << 8, << 32 | its name id; 0 else */
    const ranks_t *names;    /* its name ids (name_ids_of) */
    const roles_t *roles;
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

/* A reference to `id` in the key being built (when `k`); sets *unknown for a type without
 * a key. */
static void put_ref(keys_t *k, const side_t *s, uint32_t id, int *unknown, int *reach)
{
    if (!id) {
        if (k) put(k, TAG_VOID);
    } else if (!s->leaf[id]) {
        *reach |= s->reach[id];
        *unknown |= !s->key[id];
        if (k) put(k, TAG_FULL), put(k, s->key[id]);
    } else {
        *reach |= s->dup[id];
        if (k) put(k, TAG_LEAF), put(k, (uint32_t)(s->leaf[id] >> 32)), put(k, (uint32_t)s->leaf[id]);
    }
}

/* Sets the key of type `id` once every non-leaf type it refers to has one, or is on the
 * walk's stack (a cycle: the key stays 0, and so do those of all that reach it); a leaf's
 * is only known or not (LEAF_KEY). */
static int full_key(keys_t *k, side_t *s, uint32_t id)
{
    const types_t *t = s->t;
    uint32_t nw = nwords(t, id), kind = t_kind(t, id - t->first_id);
    const uint32_t *w = record(t, id), *names = name_ids_of(s->names, id - t->first_id);
    int unknown = 0, reach = 0, leaf = s->leaf[id] != 0;
    keys_t *into = leaf ? NULL : k;
    k->n = 0;
    if (!leaf && GROW(k->key, k->cap, (size_t)nw * 3)) return -1;   /* 3 words a reference at most */
    const uint8_t *role = s->roles->role[kind];
    for (uint32_t j = 0, at = 0; j < nw; j++, at = next_role(s->roles, kind, at)) {
        if (role[at] == REF) put_ref(into, s, w[j], &unknown, &reach);
        else if (into) put(k, role[at] == NAME ? name_word(w[j], *names++) : w[j]);
    }
    s->reach[id] = (uint8_t)reach;
    if (unknown) return 0;
    if (leaf) s->key[id] = LEAF_KEY;
    else if (k->n > UINT32_MAX || !(s->key[id] = number_words(&k->in, k->key, (uint32_t)k->n, &k->next)))
        return -1;
    return 0;
}

/* A reference's part of the key (put_ref) as one number: void, a leaf's kind and name, or
 * a key (< 2^32, below a leaf's). */
static uint64_t ref_word(const side_t *s, uint32_t id)
{
    if (!id) return 0;
    return s->leaf[id] ? s->leaf[id] : (uint64_t)s->key[id] + 1;
}

/* Whether the keys of `a` (side 0) and `b` (side 1), both known, are equal: their records
 * read as full_key reads them, word by word. */
static int same_record(const side_t s[2], uint32_t a, uint32_t b)
{
    const types_t *ta = s[0].t, *tb = s[1].t;
    uint32_t nw = nwords(ta, a), kind = t_kind(ta, a - ta->first_id);
    if (nw != nwords(tb, b)) return 0;
    const uint32_t *wa = record(ta, a), *wb = record(tb, b);
    const uint32_t *na = name_ids_of(s[0].names, a - ta->first_id);
    const uint32_t *nb = name_ids_of(s[1].names, b - tb->first_id);
    const uint8_t *role = s[0].roles->role[kind];
    for (uint32_t j = 0, at = 0; j < nw; j++, at = next_role(s[0].roles, kind, at)) {
        int same;
        switch (role[at]) {
        case NAME: same = name_word(wa[j], *na++) == name_word(wb[j], *nb++); break;
        case REF: same = ref_word(&s[0], wa[j]) == ref_word(&s[1], wb[j]); break;
        default: same = wa[j] == wb[j];   /* word 1 first: the same kind from here */
        }
        if (!same) return 0;
    }
    return 1;
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
            const uint8_t *role = s->roles->role[kind];
            uint32_t at = role_entry(s->roles, kind, j);
            for (; j < nw; j++, at = next_role(s->roles, kind, at)) {
                uint32_t r = w[j];
                if (role[at] == REF && r && !state[r] && !s->leaf[r]) break;
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

uint32_t anon_end(const types_t *t, uint32_t id, char *way, size_t *len)
{
    size_t n = 0;
    for (uint32_t depth = 0; id && depth <= ANON_CHAIN; depth++) {
        uint32_t i = id - t->first_id, kind = t_kind(t, i);
        switch (kind) {
        case K_CONST: case K_VOLATILE: case K_RESTRICT: case K_TYPE_TAG:
            id = t_sot(t, i);
            break;
        case K_PTR: case K_ARRAY:
            if (way) memcpy(way + n, kind == K_PTR ? "->" : "[]", 2);
            n += 2;
            id = kind == K_PTR ? t_sot(t, i) : t_rest(t, i)[0];
            break;
        case K_STRUCT: case K_UNION: case K_ENUM: case K_ENUM64:
            if (len) *len = n;
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
    int rc = 0;
    for (uint32_t id = own_first; id <= last && !rc; id++) {
        uint32_t i = id - t->first_id, kind = t_kind(t, i);
        if (!t_name(t, i)) continue;
        uint32_t start = 0;
        if (kind == K_TYPEDEF || kind == K_VAR) {
            uint32_t end = anon_end(t, t_sot(t, i), NULL, NULL);
            if (end && !out[end]) out[end] = 1, start = end;
        } else if (kind == K_STRUCT || kind == K_UNION) {
            start = id;
        }
        if (start && !(rc = GROW(todo, cap, n + 1))) todo[n++] = start;
        while (n && !rc) {
            uint32_t at = todo[--n], j = at - t->first_id;
            if (t_kind(t, j) != K_STRUCT && t_kind(t, j) != K_UNION) continue;
            const uint32_t *rest = t_rest(t, j);
            for (uint32_t m = 0, vlen = t_vlen(t, j); m < vlen && !rc; m++) {
                uint32_t end = anon_end(t, rest[3 * m + 1], NULL, NULL);
                if (!end || out[end]) continue;
                out[end] = 1;
                if (!(rc = GROW(todo, cap, n + 1))) todo[n++] = end;
            }
        }
    }
    free(todo);
    return rc ? -1 : 0;
}

uint32_t diff_family(uint32_t kind)
{
    switch (kind) {
    case K_STRUCT: return F_STRUCT;
    case K_UNION: return F_UNION;
    case K_ENUM: case K_ENUM64: return F_ENUM;
    case K_TYPEDEF: return F_TYPEDEF;
    case K_FWD: return F_FWD;
    case K_FUNC: return F_FUNC;
    case K_VAR: return F_VAR;
    case K_DATASEC: return F_DATASEC;
    case K_INT: return F_INT;
    case K_FLOAT: return F_FLOAT;
    case K_DECL_TAG: return F_DECL_TAG;
    default: return F_COUNT;
    }
}

/* Named roots grouped by (family, name) over both sides, as diff._named_roots does. */
typedef struct {
    uint32_t count[2], first[2];   /* roots on each side, each side's first */
    uint32_t family, next;         /* the next group of the same name (0: none) */
} group_t;

typedef struct {
    uint32_t *head;    /* by name id: its first group (0: none) */
    uint32_t *of[2];   /* by id: the root's group (0: not a named root) */
    group_t *group;    /* from 1 */
    size_t n, cap;
} groups_t;

static int group_side(groups_t *g, const keys_t *k, const diff_side_t *d, int n)
{
    const types_t *t = d->t;
    uint32_t last = t->first_id + t->count - 1;
    if (!g->head && !(g->head = calloc(k->names[0].distinct, sizeof *g->head))) return -1;
    if (!(g->of[n] = calloc((size_t)last + 1, sizeof(uint32_t)))) return -1;
    for (uint32_t id = d->own_first; id <= last; id++) {
        uint32_t i = id - t->first_id, fam = diff_family(t_kind(t, i));
        if (fam >= F_DECL_TAG || !t_name(t, i)) continue;   /* decl tags: by their text */
        uint32_t name = *name_ids_of(&k->names[n], i), at = g->head[name];
        while (at && g->group[at].family != fam) at = g->group[at].next;
        if (!at) {
            if (GROW(g->group, g->cap, g->n + 2)) return -1;
            at = (uint32_t)++g->n;
            g->group[at] = (group_t){.family = fam, .next = g->head[name]};
            g->head[name] = at;
        }
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
static int plan_side(const groups_t *g, diff_side_t *sides, int n, const side_t s[2])
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
            uint32_t a = e->first[0], b = e->first[1];
            if (s[0].key[a] && s[1].key[b] && same_record(s, a, b)) {   /* the same */
                if (d->same) d->same[id] = 1;
                continue;
            }
        } else if (!is_dup(e)) {
            /* only added or removed: facts unread unless unknown, or the name reads empty
             * (an offset at a NUL: it is then shown by its first members, diff._anon_title) */
            uint32_t len;
            name_at(t, t_name(t, i), &len);
            spell = !s[n].key[id] || !len;
        }
        d->spell[id] = (uint8_t)spell;
        if (push(&d->roots, &d->nroots, &cap_roots, id)) return -1;
    }
    return 0;
}

/* Every type describing the plan's roots reads: the roots (and what decl tags are on),
 * and what they reach short of the leaves past them (whose kind and name are all that
 * is read). */
static int needed(diff_side_t *d, const side_t *s)
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
        else if (mark[id] || s->leaf[id]) continue;
        mark[id] = 1;
        const uint32_t *w = record(t, id);
        const uint8_t *role = s->roles->role[kind];
        uint32_t nw = nwords(t, id);
        for (uint32_t j = 0, at = 0; j < nw && !rc; j++, at = next_role(s->roles, kind, at)) {
            uint32_t r = w[j];
            if (role[at] != REF || !r || mark[r]) continue;
            if (s->leaf[r]) mark[r] = 1;
            else rc = push(&todo, &n, &cap, r);
        }
    }
    for (uint32_t id = 1; id <= last && !rc; id++)
        if (mark[id]) rc = push(&d->need, &d->nneed, &cap_need, id);
    free(mark), free(todo);
    return rc;
}

/* One side's arrays by id for side_keys, and its leaves' words (side_t.leaf); adds the
 * number of its other types (those interned) to *interned. */
static int side_init(side_t *s, const diff_side_t *d, const groups_t *g, int n,
                     const ranks_t *names, const roles_t *roles, size_t *interned)
{
    const types_t *t = d->t;
    uint32_t count = t->first_id + t->count;
    s->t = t, s->names = names, s->roles = roles;
    s->dup = calloc(count, 1), s->reach = calloc(count, 1);
    s->key = calloc(count, sizeof *s->key), s->leaf = calloc(count, sizeof *s->leaf);
    if (!s->dup || !s->reach || !s->key || !s->leaf) return -1;
    for (uint32_t id = 1; id < count; id++) {
        uint32_t i = id - t->first_id;
        s->dup[id] = g->of[n][id] && is_dup(&g->group[g->of[n][id]]);
        if (is_leaf(t, id))
            s->leaf[id] = (uint64_t)(t_kind(t, i) | t_kflag(t, i) << 8) << 32 | *name_ids_of(names, i);
        else
            ++*interned;
    }
    return 0;
}

int diff_plan(diff_side_t sides[2])
{
    keys_t k = {.next = 1};
    groups_t g = {0};
    side_t s[2];
    roles_t roles;
    memset(s, 0, sizeof s);
    roles_init(&roles);
    size_t interned = 0;
    int rc = name_ids(&k, sides);
    rc = rc || group_side(&g, &k, &sides[0], 0) || group_side(&g, &k, &sides[1], 1) ? -1 : 0;
    for (int n = 0; n < 2 && !rc; n++)
        rc = side_init(&s[n], &sides[n], &g, n, &k.names[n], &roles, &interned);
    rc = rc || intern_reserve(&k.in.table, interned);
    for (int n = 0; n < 2 && !rc; n++) {
        diff_side_t *d = &sides[n];
        side_t *e = &s[n];
        uint32_t count = d->t->first_id + d->t->count;
        rc = side_keys(&k, e);
        for (uint32_t id = 0; id < count && !rc; id++)
            if (e->reach[id]) e->key[id] = 0;
        if (d->key && !rc) memcpy(d->key, e->key, count * sizeof *d->key);
        for (uint32_t id = 1; id < count && !rc; id++)
            d->safe[id] = (uint8_t)((e->leaf[id] ? !e->dup[id] : e->key[id] != 0)
                                    | (e->key[id] != 0) << 1);
        if (!rc) rc = expanded(d->t, d->own_first, d->expanded);
    }
    for (int n = 0; n < 2 && !rc; n++) rc = plan_side(&g, sides, n, s) || needed(&sides[n], &s[n]);
    for (int n = 0; n < 2 && !rc; n++) {   /* handed over (diff_report groups by them) */
        sides[n].group = g.of[n], g.of[n] = NULL;
        sides[n].ngroups = g.n;
    }
    for (int n = 0; n < 2; n++) free(s[n].dup), free(s[n].reach), free(s[n].key), free(s[n].leaf);
    free(g.of[0]), free(g.of[1]), free(g.group);
    free(g.head), numbering_free(&k.in);
    free(k.key), ranks_free(&k.names[0]), ranks_free(&k.names[1]);
    return rc;
}
