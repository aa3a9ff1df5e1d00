/* The base's part of a module's abstract keys, kept between runs (canon/basecache.py).
 *
 * abstract.c numbers a base's tokens and keys before its split BTF's, and nothing in the
 * base refers to the module, so the base's numbers are the same for every module over
 * it. What a module's keys read of the base is kept here as flat u32 arrays, read in
 * place: the base's keys, token keys and label classes by type; its names (a name's id
 * is its entry, with the token numbers of the name); one base type of each label class;
 * and the items its keys were numbered from, each as the base type that spells it (or
 * its words, for the few that held a cycle's part). A module type's name, label and item
 * are found there by hash and compared in full, so the module continues the numbering
 * exactly as one walk over base and module would (tests/test_compiled_order.py).
 *
 * The file is untrusted: its header (magic, version, counts, sizes that add up to the
 * file's) and a checksum of all its words are checked before use, and every entry is
 * bounds-checked where it is read. */
#include <stdlib.h>
#include <string.h>

#include "basekeys.h"

#define MAGIC 0x4B424E43u       /* "CNBK" */
#define ITEM_POOL 0x80000000u   /* an item's third word: an offset into the pool */
#define NAME_WIDTH 5
#define LABEL_WIDTH 2
#define ITEM_WIDTH 3
#define NOT_A_NAME 0xFFFFFFFFu

enum { H_MAGIC, H_VERSION, H_COUNT, H_NEXT, H_CLASSES, H_NAMES, H_NAME_SLOTS, H_LABELS,
       H_LABEL_SLOTS, H_ITEMS, H_ITEM_SLOTS, H_POOL, H_SUM_LO, H_SUM_HI, H_WORDS };

static uint32_t hash32(const void *p, size_t n)
{
    return (uint32_t)(hash_bytes(p, n) >> 32);
}

/* The checksum of a file of n words: its header before the checksum, and all after it
 * (a change of any one word changes either hash). */
static uint64_t checksum(const uint32_t *w, size_t n)
{
    return hash_bytes(w, H_SUM_LO * 4) * 0x9E3779B97F4A7C15ULL
         ^ hash_bytes(w + H_WORDS, (n - H_WORDS) * 4);
}

/* ---- Writing ---- */

typedef struct {
    uint32_t *w;
    size_t n, cap;
} buf_t;

static int put_n(buf_t *b, const uint32_t *v, size_t n)
{
    if (GROW(b->w, b->cap, b->n + n + 1)) return -1;
    if (v) memcpy(b->w + b->n, v, n * sizeof *v);
    else memset(b->w + b->n, 0, n * sizeof *b->w);
    b->n += n;
    return 0;
}

static int put(buf_t *b, uint32_t v)
{
    return put_n(b, &v, 1);
}

static uint32_t slots_for(uint32_t count)
{
    uint32_t s = 2;
    while (s < 2 * (uint64_t)count) s <<= 1;
    return s;
}

/* The slots of the `count` entries at b->w[at..], appended to b. */
static int put_slots(buf_t *b, size_t at, uint32_t count, uint32_t width, uint32_t nslots)
{
    size_t s0 = b->n;
    if (put_n(b, NULL, nslots)) return -1;
    for (uint32_t e = 0; e < count; e++) {
        uint32_t pos = b->w[at + (size_t)e * width] & (nslots - 1);
        while (b->w[s0 + pos]) pos = (pos + 1) & (nslots - 1);
        b->w[s0 + pos] = e + 1;
    }
    return 0;
}

/* Type i's label as words, equal where label_sort finds the labels equal: kind, vlen,
 * kind_flag, name, label_tail; `names` as label_tail takes them. The count, 0 when out of
 * memory. */
static uint32_t label_words(const types_t *t, uint32_t i, const uint32_t *names,
                            uint32_t **buf, size_t *cap)
{
    uint32_t kind = t_kind(t, i), vlen = t_vlen(t, i);
    size_t n = 4 + tail_count(kind, vlen);
    if (n > UINT32_MAX / 4 || GROW(*buf, *cap, n)) return 0;
    uint32_t *w = *buf;
    w[0] = kind, w[1] = vlen, w[2] = t_kflag(t, i), w[3] = names[0];
    label_tail(t, i, names, w + 4);
    return (uint32_t)n;
}

/* The string offset of a name gathered by name_ranks (a pointer into one of t's tables). */
static uint32_t offset_of(const types_t *t, const uint8_t *p)
{
    for (int k = 0; k < t->ntabs; k++)
        if (p >= t->tabs[k].data && p < t->tabs[k].data + t->tabs[k].len)
            return t->tabs[k].start + (uint32_t)(p - t->tabs[k].data);
    return 0;
}

static int put_names(buf_t *b, const types_t *t, const keyed_state_t *st)
{
    const ranks_t *r = &st->names;
    uint32_t count = r->distinct - 1, d = r->distinct;
    size_t at = b->n;
    for (uint32_t k = 1; k < d; k++) {
        uint32_t e[NAME_WIDTH] = {hash32(r->ptr[k], r->len[k]), offset_of(t, r->ptr[k]),
                                  st->number[k], st->number[d + k], st->number[2 * (size_t)d + k]};
        if (put_n(b, e, NAME_WIDTH)) return -1;
    }
    return put_slots(b, at, count, NAME_WIDTH, slots_for(count));
}

static int put_labels(buf_t *b, const types_t *t, const keyed_state_t *st, uint32_t classes)
{
    uint32_t *rep = big_alloc((size_t)classes + 1, sizeof *rep), *words = NULL;
    size_t cap = 0, at = b->n;
    int rc = -1;
    if (!rep) return -1;
    memset(rep, 0xFF, ((size_t)classes + 1) * sizeof *rep);
    for (uint32_t i = t->count; i-- > 0;) rep[st->label[i]] = i;  /* the first of each */
    for (uint32_t c = 0; c < classes; c++) {
        const uint32_t *names = st->names.rank + st->names.first[rep[c]];
        uint32_t n = label_words(t, rep[c], names, &words, &cap);
        if (!n || put(b, hash32(words, (size_t)n * 4)) || put(b, rep[c])) goto done;
    }
    rc = put_slots(b, at, classes, LABEL_WIDTH, slots_for(classes));
done:
    free(rep), free(words);
    return rc;
}

/* Whether base type `rep`'s item (label class, its edges' parts, as the kept arrays give
 * them) is item[0..n). */
static int spells(const types_t *t, const uint32_t *label, const uint32_t *key,
                  const uint32_t *token_key, uint32_t rep, const uint32_t *item, uint32_t n,
                  uint32_t **edges, size_t *cap)
{
    if (rep >= t->count) return 0;
    uint32_t ne = edge_count(t, rep);
    if (ne + 1 != n || GROW(*edges, *cap, (size_t)ne + 1) || item[0] != label[rep]) return 0;
    type_edges(t, rep, *edges);
    for (uint32_t j = 0; j < ne; j++) {
        uint32_t s = (*edges)[j];
        uint32_t part = !s ? 0 : token_key[s - 1] ? token_key[s - 1] : key[s - 1];
        if (part != item[1 + j]) return 0;
    }
    return 1;
}

static int put_items(buf_t *b, buf_t *pool, const types_t *t, const keyed_state_t *st,
                     const uint32_t *key, const uint32_t *token_key)
{
    uint32_t *first = big_alloc((size_t)st->next + 1, sizeof *first), *edges = NULL;
    size_t cap = 0, at = b->n, count = st->in.table.count;
    int rc = -1;
    if (!first) return -1;
    memset(first, 0xFF, ((size_t)st->next + 1) * sizeof *first);
    for (uint32_t i = t->count; i-- > 0;) first[key[i]] = i;
    for (size_t id = 0; id < count; id++) {
        size_t len;
        const uint8_t *p = intern_at(&st->in.table, (uint32_t)id, &len);
        uint32_t n = (uint32_t)(len / 4), value = st->in.value[id], rep = first[value], ref = rep;
        const uint32_t *item = (const uint32_t *)p;
        if (!spells(t, st->label, key, token_key, rep, item, n, &edges, &cap)) {
            ref = ITEM_POOL | (uint32_t)pool->n;
            if (put(pool, n) || put_n(pool, item, n)) goto done;
        }
        uint32_t e[ITEM_WIDTH] = {hash32(p, len), value, ref};
        if (put_n(b, e, ITEM_WIDTH)) goto done;
    }
    rc = put_slots(b, at, (uint32_t)count, ITEM_WIDTH, slots_for((uint32_t)count));
done:
    free(first), free(edges);
    return rc;
}

static int keep_base(buf_t *b, const types_t *t, const keyed_state_t *st, const uint32_t *key,
                     const uint32_t *token_key)
{
    buf_t pool = {0};
    uint32_t classes = 0, n = t->count;
    int rc = -1;
    for (uint32_t i = 0; i < n; i++)
        if (st->label[i] >= classes) classes = st->label[i] + 1;
    if (put_n(b, NULL, H_WORDS) || put_n(b, key, n) || put_n(b, token_key, n)
        || put_n(b, st->label, n))
        goto done;
    size_t names_at = b->n;
    if (put_names(b, t, st)) goto done;
    size_t labels_at = b->n;
    if (put_labels(b, t, st, classes)) goto done;
    size_t items_at = b->n;
    if (put_items(b, &pool, t, st, key, token_key) || pool.n > ITEM_POOL - 1) goto done;
    size_t pool_at = b->n;
    if (put_n(b, pool.w, pool.n)) goto done;
    uint32_t *h = b->w;
    h[H_MAGIC] = MAGIC, h[H_VERSION] = BASE_KEYS_VERSION, h[H_COUNT] = n;
    h[H_NEXT] = st->next, h[H_CLASSES] = classes;
    h[H_NAMES] = st->names.distinct - 1;
    h[H_NAME_SLOTS] = (uint32_t)(labels_at - names_at - (size_t)h[H_NAMES] * NAME_WIDTH);
    h[H_LABELS] = classes;
    h[H_LABEL_SLOTS] = (uint32_t)(items_at - labels_at - (size_t)classes * LABEL_WIDTH);
    h[H_ITEMS] = (uint32_t)st->in.table.count;
    h[H_ITEM_SLOTS] = (uint32_t)(pool_at - items_at - (size_t)h[H_ITEMS] * ITEM_WIDTH);
    h[H_POOL] = (uint32_t)pool.n;
    uint64_t sum = checksum(b->w, b->n);
    h[H_SUM_LO] = (uint32_t)sum, h[H_SUM_HI] = (uint32_t)(sum >> 32);
    rc = 0;
done:
    free(pool.w);
    return rc;
}

int base_keys_make(const types_t *t, uint8_t **out, size_t *len)
{
    keyed_state_t st;
    buf_t b = {0};
    memset(&st, 0, sizeof st);
    uint32_t *key = big_alloc((size_t)t->count + 1, sizeof *key);
    uint32_t *token_key = big_alloc((size_t)t->count + 1, sizeof *token_key);
    int rc = -1;
    if (key && token_key && !abstract_keys_kept(t, t->count, key, token_key, &st)
        && !keep_base(&b, t, &st, key, token_key)) {
        *out = (uint8_t *)b.w, *len = b.n * 4;
        b.w = NULL;
        rc = 0;
    }
    free(b.w), free(key), free(token_key);
    keyed_state_free(&st);
    return rc;
}

/* ---- Reading ---- */

/* The table at w[*at..]: `count` entries of `width`, then `nslots` slots. */
static void take_table(table_t *tb, const uint32_t *w, size_t *at, uint32_t count,
                       uint32_t width, uint32_t nslots)
{
    tb->entry = w + *at, tb->count = count, tb->width = width;
    *at += (size_t)count * width;
    tb->slot = w + *at, tb->nslots = nslots;
    *at += nslots;
}

int base_keys_read(const types_t *base, const uint8_t *data, size_t len, base_keys_t *bk)
{
    memset(bk, 0, sizeof *bk);
    if (len % 4 || len < H_WORDS * 4 || (uintptr_t)data % 4) return -1;
    const uint32_t *w = (const uint32_t *)data;
    size_t n = len / 4;
    if (w[H_MAGIC] != MAGIC || w[H_VERSION] != BASE_KEYS_VERSION || w[H_COUNT] != base->count)
        return -1;
    const uint32_t slots[3] = {w[H_NAME_SLOTS], w[H_LABEL_SLOTS], w[H_ITEM_SLOTS]};
    for (int k = 0; k < 3; k++)
        if (slots[k] < 2 || (slots[k] & (slots[k] - 1))) return -1;
    uint64_t need = H_WORDS + 3 * (uint64_t)w[H_COUNT] + (uint64_t)w[H_NAMES] * NAME_WIDTH
                    + (uint64_t)w[H_LABELS] * LABEL_WIDTH + (uint64_t)w[H_ITEMS] * ITEM_WIDTH
                    + (uint64_t)slots[0] + slots[1] + slots[2] + w[H_POOL];
    if (need != n || w[H_POOL] > ITEM_POOL - 1) return -1;
    uint64_t sum = checksum(w, n);
    if ((uint32_t)sum != w[H_SUM_LO] || (uint32_t)(sum >> 32) != w[H_SUM_HI]) return -1;
    size_t at = H_WORDS, count = w[H_COUNT];
    bk->count = w[H_COUNT], bk->next = w[H_NEXT], bk->classes = w[H_CLASSES];
    bk->key = w + at, bk->token_key = w + at + count, bk->label = w + at + 2 * count;
    at += 3 * count;
    take_table(&bk->names, w, &at, w[H_NAMES], NAME_WIDTH, slots[0]);
    take_table(&bk->labels, w, &at, w[H_LABELS], LABEL_WIDTH, slots[1]);
    take_table(&bk->items, w, &at, w[H_ITEMS], ITEM_WIDTH, slots[2]);
    bk->pool = w + at, bk->npool = w[H_POOL];
    return 0;
}

typedef int (*match_fn)(const void *ctx, const uint32_t *entry);

/* The entry of `tb` of hash `h` that `match` takes, else NULL (a slot past the entries,
 * which only a damaged file could hold, ends the search). */
static const uint32_t *table_find(const table_t *tb, uint32_t h, match_fn match,
                                  const void *ctx)
{
    uint32_t mask = tb->nslots - 1;
    for (uint32_t pos = h & mask, step = 0; step < tb->nslots; step++, pos = (pos + 1) & mask) {
        uint32_t e = tb->slot[pos];
        if (!e || e > tb->count) return NULL;
        const uint32_t *entry = tb->entry + (size_t)(e - 1) * tb->width;
        if (entry[0] == h && match(ctx, entry)) return entry;
    }
    return NULL;
}

/* ---- A module's keys over a kept base ---- */

typedef struct {
    const types_t *base, *t;
    const base_keys_t *bk;
    intern_t names;                     /* the module's names the base has not */
    numbering_t labels, tokens;         /* label classes and tokens the base has not */
    uint32_t next_class;
    uint32_t *ids, *rep_ids, *words, *rep_words;
    size_t cap_ids, cap_rep_ids, cap_words, cap_rep_words;
} over_t;

typedef struct {
    const types_t *base;
    const uint8_t *p;
    uint32_t len;
} name_ctx_t;

static int same_name(const void *ctx, const uint32_t *entry)
{
    const name_ctx_t *c = ctx;
    uint32_t len;
    const uint8_t *q = name_at(c->base, entry[1], &len);
    return len == c->len && !memcmp(q, c->p, len);
}

/* The id of the name at string offset `off` of t: 0 for the empty name, the base's entry
 * + 1, else one after the base's; NOT_A_NAME when out of memory. */
static uint32_t name_id(over_t *o, uint32_t off)
{
    name_ctx_t c = {o->base, NULL, 0};
    c.p = name_at(o->t, off, &c.len);
    if (!c.len) return 0;
    const uint32_t *e = table_find(&o->bk->names, hash32(c.p, c.len), same_name, &c);
    if (e) return (uint32_t)((e - o->bk->names.entry) / NAME_WIDTH) + 1;
    int is_new;
    int64_t id = intern_bytes(&o->names, c.p, c.len, &is_new);
    return id < 0 || id > UINT32_MAX - 2 - (int64_t)o->bk->names.count ? NOT_A_NAME
         : o->bk->names.count + 1 + (uint32_t)id;
}

/* The name offsets of type i (its own, then its items', as name_ranks gathers them)
 * into *ids (grown); their count, 0 when out of memory. */
static uint32_t name_offsets(const types_t *t, uint32_t i, uint32_t **ids, size_t *cap)
{
    uint32_t kind = t_kind(t, i), vlen = kind_in(KINDS_ITEMS_NAMED, kind) ? t_vlen(t, i) : 0;
    if (GROW(*ids, *cap, (size_t)vlen + 1)) return 0;
    (*ids)[0] = t_name(t, i);
    uint32_t step = kind_item_words(kind);
    const uint32_t *item = t_rest(t, i);
    for (uint32_t j = 0; j < vlen; j++, item += step) (*ids)[1 + j] = item[0];
    return vlen + 1;
}

typedef struct {
    over_t *o;
    uint32_t names, n;                  /* the module type's names and its label's words */
} label_ctx_t;

/* Whether base type entry[1]'s label is module type c->i's (o->words): its names compared
 * as strings, in place. */
static int same_label(const void *ctx, const uint32_t *entry)
{
    const label_ctx_t *c = ctx;
    over_t *o = c->o;
    uint32_t rep = entry[1];
    if (rep >= o->base->count || t_kind(o->base, rep) != o->words[0]
        || t_vlen(o->base, rep) != o->words[1])
        return 0;
    uint32_t n = name_offsets(o->base, rep, &o->rep_ids, &o->cap_rep_ids);
    if (n != c->names) return 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t la, lb;
        const uint8_t *a = name_at(o->base, o->rep_ids[k], &la);
        const uint8_t *b = name_at(o->t, o->ids[c->names + k], &lb);
        o->rep_ids[k] = la == lb && !memcmp(a, b, la) ? o->ids[k] : NOT_A_NAME;
    }
    uint32_t m = label_words(o->base, rep, o->rep_ids, &o->rep_words, &o->cap_rep_words);
    return m && m == c->n && !memcmp(o->rep_words, o->words, (size_t)m * 4);
}

/* Label class and token key of own type i of the module. 0, or -1 when out of memory. */
static int label_and_token(over_t *o, uint32_t i, uint32_t *label, uint32_t *token_key,
                           uint32_t *next)
{
    const types_t *t = o->t;
    /* o->ids: the names' ids, then their offsets (same_label reads them as strings) */
    uint32_t n = name_offsets(t, i, &o->ids, &o->cap_ids);
    if (!n || GROW(o->ids, o->cap_ids, 2 * (size_t)n)) return -1;
    memcpy(o->ids + n, o->ids, (size_t)n * sizeof *o->ids);
    for (uint32_t k = 0; k < n; k++)
        if ((o->ids[k] = name_id(o, o->ids[n + k])) == NOT_A_NAME) return -1;
    uint32_t group = token_group(t, i), name = o->ids[0];
    token_key[i] = 0;
    if (group != 3 && name) {
        const table_t *names = &o->bk->names;
        token_key[i] = name <= names->count ? names->entry[(size_t)(name - 1) * NAME_WIDTH + 2 + group] : 0;
        uint32_t tok[2] = {group, name};
        if (!token_key[i] && !(token_key[i] = number_words(&o->tokens, tok, 2, next))) return -1;
    }
    uint32_t m = label_words(t, i, o->ids, &o->words, &o->cap_words);
    if (!m) return -1;
    label_ctx_t c = {o, n, m};
    const uint32_t *e = table_find(&o->bk->labels, hash32(o->words, (size_t)m * 4), same_label, &c);
    if (e) label[i] = o->bk->label[e[1]];
    else if (!(label[i] = number_words(&o->labels, o->words, m, &o->next_class))) return -1;
    return 0;
}

typedef struct {
    walk_t *w;
    uint32_t n;
} item_ctx_t;

static int same_item(const void *ctx, const uint32_t *entry)
{
    const item_ctx_t *c = ctx;
    walk_t *w = c->w;
    const base_keys_t *bk = w->bk;
    uint32_t ref = entry[2];
    if (ref & ITEM_POOL) {
        uint32_t at = ref & ~ITEM_POOL;
        return at < bk->npool && bk->pool[at] == c->n && bk->npool - at - 1 >= c->n
            && !memcmp(bk->pool + at + 1, w->item, (size_t)c->n * 4);
    }
    return spells(w->base, bk->label, bk->key, bk->token_key, ref, w->item,
                                     c->n, &w->spare, &w->cap_spare);
}

uint32_t continued_number(walk_t *w, uint32_t n)
{
    item_ctx_t c = {w, n};
    const uint32_t *e = table_find(&w->bk->items, hash32(w->item, (size_t)n * 4), same_item, &c);
    return e ? e[1] : number_words(&w->in, w->item, n, &w->next);
}

int abstract_keys_over(const types_t *base, const base_keys_t *bk, const types_t *t,
                       uint32_t *key, uint32_t *token_key)
{
    walk_t w;
    over_t o;
    memset(&w, 0, sizeof w), memset(&o, 0, sizeof o);
    o.base = base, o.t = t, o.bk = bk, o.next_class = bk->classes + 1;
    uint32_t *label = big_alloc((size_t)t->count + 1, sizeof *label);
    int rc = -1;
    if (!label || walk_init(&w, t, key, token_key)) goto done;
    w.bk = bk, w.base = base, w.label = label, w.next = bk->next;
    for (uint32_t i = 0; i < t->count; i++)
        if (label_and_token(&o, i, label, token_key, &w.next)) goto done;
    for (uint32_t i = 0; i < t->count; i++)
        if (!key[i] && walk_from(&w, i)) goto done;
    rc = 0;
done:
    free(label), free(o.ids), free(o.rep_ids), free(o.words), free(o.rep_words);
    intern_free(&o.names);
    numbering_free(&o.labels), numbering_free(&o.tokens);
    walk_free(&w);
    return rc;
}
