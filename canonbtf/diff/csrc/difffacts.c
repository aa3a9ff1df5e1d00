/* diff's facts (diff._Facts) and their comparison (diff._compare), on the type section's
 * words, for the compiled report (diffreport.c).
 *
 * A root's facts are (key, value) pairs: its size, members under the member path C uses
 * (anonymous aggregates described inside it), enumerators, parameters, and so on, with
 * every reference written as its C spelling (diffspell.c, on the header's declarator chains). diff/ is the
 * reference and says what each fact is; this makes the same pairs, byte for byte, as
 * records in an arena (native/csrc/diff_bindings.c turns them into the reference's tuples
 * where Python pairs roots). Anything the reference would spell with a placeholder (a
 * loop) or nest past MAX_NESTING is declined (failure.h): the caller then runs the
 * reference. Plain C. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "difffacts.h"
#include "failure.h"

/* Anonymous aggregates nested deeper than this inside one root are left to the reference. */
#define MAX_NESTING 200

const char *const FACT_WHAT[W_COUNT] = {
    "size", "width", "signed", "member", "value", "linkage", "return", "param", "varargs",
    "proto", "target", "type", "entry", "encoding", "bits", "bit_offset", "fwd_kind"};

static int give_up(void)
{
    failed_declined("left to the reference");
    return -1;
}

/* ---- making facts ---- */

static fact_t *add(facter_t *F, int what)
{
    facts_t *o = F->out;
    if (GROW(o->f, o->cap, o->n + 1)) {
        failed_out_of_memory();
        return NULL;
    }
    fact_t *x = &o->f[o->n++];
    memset(x, 0, sizeof *x);
    x->what = (uint8_t)what;
    return x;
}

/* Text into the arena, its place in *at. */
static int keep(facter_t *F, const void *s, size_t n, size_t *at)
{
    *at = F->out->arena.len;
    return text_put(&F->out->arena, s, n);
}

static int keep_name(facter_t *F, uint32_t off, size_t *at, size_t *len)
{
    uint32_t n;
    const uint8_t *p = name_at(F->t, off, &n);
    *len = n;
    return keep(F, p, n, at);
}

/* _Facts._expr: the spelling of a reference, noting whether it names a duplicate. */
static int spell(facter_t *F, uint32_t id, size_t *at, size_t *len)
{
    const char *text;
    int touches;
    if (cdump_speller_expr(F->sp, id, &text, len, &touches)) return -1;
    F->dup |= touches;
    return keep(F, text, *len, at);
}

static fact_t *add_text(facter_t *F, int what, const char *s)
{
    fact_t *x = add(F, what);
    if (!x) return NULL;
    x->l1 = strlen(s);
    return keep(F, s, x->l1, &x->s1) ? NULL : x;
}

static fact_t *add_number(facter_t *F, int what, uint64_t value)
{
    fact_t *x = add(F, what);
    if (x) x->a = value;
    return x;
}

static fact_t *add_spelled(facter_t *F, int what, uint32_t id)
{
    fact_t *x = add(F, what);
    if (!x) return NULL;
    size_t at, len;
    if (spell(F, id, &at, &len)) return NULL;
    x = &F->out->f[F->out->n - 1];
    x->s1 = at, x->l1 = len;
    return x;
}

static int expand(facter_t *F, uint32_t id, uint64_t base);

/* The path buffer holds `path`; the way behind it into F->path (_way_prefix). */
static int way_prefix(facter_t *F, const char *way, size_t len)
{
    if (text_put(&F->path, way, len)) return -1;
    if (len >= 2 && !memcmp(way + len - 2, "->", 2)) return 0;
    return F->path.len ? text_put(&F->path, ".", 1) : 0;
}

/* _Facts._members: the members of struct or union `id` under the path in F->path. */
static int members(facter_t *F, uint32_t id, uint64_t base)
{
    const types_t *t = F->t;
    uint32_t i = id - t->first_id, kflag = t_kflag(t, i), n = t_vlen(t, i);
    const uint32_t *items = t_rest(t, i);
    size_t prefix = F->path.len, waylen = 0;
    char way[ANON_WAY];
    int rc = 0;
    for (uint32_t m = 0; m < n && !rc; m++) {
        uint32_t word = items[3 * m + 2], len;
        uint64_t bit_offset = kflag ? word & 0xFFFFFF : word, bitfield = kflag ? word >> 24 : 0;
        const uint8_t *text = name_at(t, items[3 * m], &len);
        F->path.len = prefix;
        if ((rc = text_put(&F->path, text, len))) break;
        if (len) {
            fact_t *x = add(F, W_MEMBER);
            size_t at, slen;
            if (!x || keep(F, F->path.p, F->path.len, &x->key)) {
                rc = -1;
                break;
            }
            x->klen = F->path.len;
            if ((rc = spell(F, items[3 * m + 1], &at, &slen))) break;
            x = &F->out->f[F->out->n - 1];
            x->s1 = at, x->l1 = slen, x->a = base + bit_offset, x->b = bitfield;
        }
        uint32_t end = anon_end(t, items[3 * m + 1], way, &waylen);
        if (!end) continue;
        if (!waylen) {
            if (len) rc = text_put(&F->path, ".", 1);
            else F->path.len = prefix;
            if (!rc) rc = expand(F, end, base + bit_offset);
        } else {
            if (!len) rc = text_puts(&F->path, "(anon)");
            if (!rc) rc = way_prefix(F, way, waylen) || expand(F, end, 0);
        }
    }
    F->path.len = prefix;
    return rc;
}

/* _Facts._values: the enumerators of `id` under the path in F->path. */
static int values(facter_t *F, uint32_t id)
{
    const types_t *t = F->t;
    uint32_t i = id - t->first_id, kind = t_kind(t, i), n = t_vlen(t, i);
    uint32_t per = kind == K_ENUM64 ? 3 : 2, kflag = t_kflag(t, i);
    const uint32_t *items = t_rest(t, i);
    size_t where = F->path.len;
    if (where && F->path.p[where - 1] == '.') where--;
    for (uint32_t m = 0; m < n; m++) {
        fact_t *x = add(F, W_VALUE);
        uint32_t len;
        const uint8_t *name = name_at(t, items[per * m], &len);
        if (!x || keep(F, F->path.p, where, &x->key)) return -1;
        size_t ignored;
        if (keep(F, "\0", 1, &ignored) || keep(F, name, len, &ignored))
            return -1;
        x = &F->out->f[F->out->n - 1];
        x->wlen = where;
        x->klen = where + 1 + len;
        uint64_t value = enumerator_value(kind, items + per * m);
        if (kflag) {
            int64_t s = enumerator_signed(kind, value);
            x->neg = s < 0;
            value = (uint64_t)s;
        }
        x->a = value;
    }
    return 0;
}

/* _Facts._expand: the inside of anonymous aggregate `id` under the path in F->path. */
static int expand(facter_t *F, uint32_t id, uint64_t base)
{
    if (F->seen[id]) return 0;
    F->expanded[id] = 1;
    const types_t *t = F->t;
    uint32_t kind = t_kind(t, id - t->first_id);
    if (kind == K_ENUM || kind == K_ENUM64) return values(F, id);
    if (++F->depth > MAX_NESTING) return give_up();
    F->seen[id] = 1;
    int rc = members(F, id, base);
    F->seen[id] = 0;
    F->depth--;
    return rc;
}

/* _Facts._expand_reference */
static int expand_reference(facter_t *F, uint32_t id)
{
    char way[ANON_WAY];
    size_t waylen = 0;
    uint32_t end = anon_end(F->t, id, way, &waylen);
    F->path.len = 0;
    return end ? way_prefix(F, way, waylen) || expand(F, end, 0) : 0;
}

static const char *linkage(uint32_t value, char *tmp, size_t n)
{
    static const char *const names[] = {"static", "global", "extern"};
    if (value < 3) return names[value];
    snprintf(tmp, n, "%" PRIu32, value);
    return tmp;
}

/* _Facts._proto_facts */
static int proto_facts(facter_t *F, uint32_t proto)
{
    const types_t *t = F->t;
    if (!proto || t_kind(t, proto - t->first_id) != K_FUNC_PROTO)
        return add_spelled(F, W_PROTO, proto) ? 0 : -1;
    uint32_t i = proto - t->first_id, n = t_vlen(t, i);
    const uint32_t *items = t_rest(t, i);
    if (!add_spelled(F, W_RETURN, t_sot(t, i))) return -1;
    int varargs = n && !items[2 * (n - 1)] && !items[2 * (n - 1) + 1];
    for (uint32_t j = 0; j < n - (uint32_t)varargs; j++) {
        char index[16];
        int ilen = snprintf(index, sizeof index, "%" PRIu32, j + 1);
        fact_t *x = add(F, W_PARAM);
        size_t at, len, sat, slen;
        if (!x || keep(F, index, (size_t)ilen, &x->key) || keep_name(F, items[2 * j], &at, &len)
            || spell(F, items[2 * j + 1], &sat, &slen))
            return -1;
        x = &F->out->f[F->out->n - 1];
        x->klen = (size_t)ilen, x->s1 = at, x->l1 = len, x->s2 = sat, x->l2 = slen;
    }
    return add_number(F, W_VARARGS, (uint64_t)varargs) ? 0 : -1;
}

static int int_facts(facter_t *F, uint32_t i)
{
    const types_t *t = F->t;
    uint32_t word = t_rest(t, i)[0], bits = word >> 24;
    char encoding[32] = "";
    static const char *const flags[] = {"signed", "char", "bool"};
    for (int k = 0; k < 3; k++) {
        if (!(bits & (1u << k))) continue;
        if (*encoding) strcat(encoding, "|");
        strcat(encoding, flags[k]);
    }
    return !add_number(F, W_SIZE, t_sot(t, i))
        || !add_text(F, W_ENCODING, *encoding ? encoding : "unsigned")
        || !add_number(F, W_BITS, word & 0xFF) || !add_number(F, W_BIT_OFFSET, (word >> 16) & 0xFF)
        ? -1 : 0;
}

static int datasec_facts(facter_t *F, uint32_t i)
{
    const types_t *t = F->t;
    const uint32_t *items = t_rest(t, i);
    if (!add_number(F, W_SIZE, t_sot(t, i))) return -1;
    for (uint32_t j = 0, n = t_vlen(t, i); j < n; j++) {
        uint32_t var = items[3 * j];
        fact_t *x = add(F, W_ENTRY);
        size_t len = 0;
        if (!x) return -1;
        if (var ? keep_name(F, t_name(t, var - t->first_id), &x->key, &len)
                : keep(F, "", 0, &x->key))
            return -1;
        x = &F->out->f[F->out->n - 1];
        x->klen = len, x->a = items[3 * j + 1], x->b = items[3 * j + 2];
    }
    return 0;
}

/* ---- keys: a fact's identity (what, key text) ---- */

static uint64_t key_hash(const facts_t *o, const fact_t *x)
{
    return hash_bytes((const uint8_t *)AT(o->arena, x->key), (uint32_t)x->klen) * 31 + x->what;
}

static int same_key(const facts_t *oa, const fact_t *a, const facts_t *ob, const fact_t *b)
{
    return a->what == b->what && a->klen == b->klen
        && (!a->klen || !memcmp(AT(oa->arena, a->key), AT(ob->arena, b->key), a->klen));
}

/* Fact keys of one list -> the index of their last occurrence put (SIZE_MAX: none). */
typedef struct {
    size_t *slot;
    size_t mask;
} key_table_t;

static int key_table_init(key_table_t *k, size_t n)
{
    size_t slots = 16;
    while (slots < 2 * n + 2) slots *= 2;
    k->slot = malloc(slots * sizeof *k->slot);
    if (!k->slot) {
        failed_out_of_memory();
        return -1;
    }
    memset(k->slot, 0xFF, slots * sizeof *k->slot);
    k->mask = slots - 1;
    return 0;
}

/* The slot of the key of fact `x` (of list `from`) in table `k` of list `o`: its index
 * there, or SIZE_MAX where it would go. */
static size_t *key_slot(const key_table_t *k, const facts_t *o, const facts_t *from,
                        const fact_t *x)
{
    for (size_t s = key_hash(from, x) & k->mask;; s = (s + 1) & k->mask) {
        size_t j = k->slot[s];
        if (j == SIZE_MAX || same_key(o, &o->f[j], from, x)) return &k->slot[s];
    }
}

/* Where the key of `x` (of list `from`) is in `o` (SIZE_MAX: nowhere). */
static size_t key_find(const key_table_t *k, const facts_t *o, const facts_t *from,
                       const fact_t *x)
{
    return *key_slot(k, o, from, x);
}

/* Fact j of `o` as its key's occurrence (the last put wins, as dict() keeps it). */
static void key_put(key_table_t *k, const facts_t *o, size_t j)
{
    *key_slot(k, o, o, &o->f[j]) = j;
}

/* A table of each key's last occurrence in `o` facts [from, to). */
static int last_table(key_table_t *k, const facts_t *o, size_t from, size_t to)
{
    if (key_table_init(k, to - from)) return -1;
    for (size_t j = from; j < to; j++) key_put(k, o, j);
    return 0;
}

/* _unique_keys: malformed BTF can repeat a member or enumerator name; each repeat's last
 * key part gets `#n`, the first n from 2 no key so far has. */
static int unique_keys(facter_t *F, size_t from)
{
    facts_t *o = F->out;
    key_table_t seen;
    int rc = key_table_init(&seen, o->n - from);
    for (size_t j = from; j < o->n && !rc; j++) {
        fact_t *x = &o->f[j];
        size_t base = x->key, blen = x->klen;
        for (uint32_t k = 2; !rc && key_find(&seen, o, o, x) != SIZE_MAX; k++) {
            char tag[16];
            int tlen = snprintf(tag, sizeof tag, "#%" PRIu32, k);
            x->key = o->arena.len, x->klen = blen + (size_t)tlen;
            rc = text_repeat(&o->arena, base, blen) || text_put(&o->arena, tag, (size_t)tlen);
        }
        if (!rc) key_put(&seen, o, j);
    }
    free(seen.slot);
    return rc;
}

int root_facts(facter_t *F, uint32_t id)
{
    const types_t *t = F->t;
    uint32_t i = id - t->first_id, kind = t_kind(t, i);
    size_t from = F->out->n;
    char tmp[16];
    int rc = 0;
    F->dup = 0;
    F->path.len = 0;
    F->depth = 0;
    switch (kind) {
    case K_STRUCT: case K_UNION:
        if (!add_number(F, W_SIZE, t_sot(t, i))) return -1;
        F->seen[id] = 1;
        rc = members(F, id, 0);
        F->seen[id] = 0;
        break;
    case K_ENUM: case K_ENUM64:
        rc = !add_text(F, W_WIDTH, kind == K_ENUM64 ? "64-bit" : "32-bit")
            || !add_number(F, W_SIZE, t_sot(t, i)) || !add_number(F, W_SIGNED, t_kflag(t, i))
            || values(F, id) ? -1 : 0;
        break;
    case K_FUNC:
        rc = !add_text(F, W_LINKAGE, linkage(t_vlen(t, i), tmp, sizeof tmp))
            || proto_facts(F, t_sot(t, i)) ? -1 : 0;
        break;
    case K_TYPEDEF:
        rc = !add_spelled(F, W_TARGET, t_sot(t, i)) || expand_reference(F, t_sot(t, i)) ? -1 : 0;
        break;
    case K_VAR:
        rc = !add_spelled(F, W_TYPE, t_sot(t, i))
            || !add_text(F, W_LINKAGE, linkage(t_rest(t, i)[0], tmp, sizeof tmp))
            || expand_reference(F, t_sot(t, i)) ? -1 : 0;
        break;
    case K_DATASEC: rc = datasec_facts(F, i); break;
    case K_INT: rc = int_facts(F, i); break;
    case K_FLOAT: rc = add_number(F, W_SIZE, t_sot(t, i)) ? 0 : -1; break;
    case K_FWD: rc = add_text(F, W_FWD_KIND, t_kflag(t, i) ? "union" : "struct") ? 0 : -1; break;
    default: break;
    }
    if (rc) return -1;
    int aggregate = kind == K_STRUCT || kind == K_UNION || kind == K_ENUM || kind == K_ENUM64;
    return aggregate ? unique_keys(F, from) : 0;
}

/* ---- comparing ---- */

uint64_t facts_hash(const facts_t *o, size_t from, size_t to)
{
    uint64_t h = 0;
    for (size_t j = from; j < to; j++) {
        const fact_t *x = &o->f[j];
        uint64_t numbers[3] = {x->what | (uint64_t)x->neg << 8, x->a, x->b};
        h = h * 31 + hash_bytes((const uint8_t *)numbers, sizeof numbers);
        h = h * 31 + key_hash(o, x);
        h = h * 31 + hash_bytes((const uint8_t *)AT(o->arena, x->s1), (uint32_t)x->l1);
        h = h * 31 + hash_bytes((const uint8_t *)AT(o->arena, x->s2), (uint32_t)x->l2);
    }
    return h;
}

static int same_text(const facts_t *oa, size_t a, size_t la, const facts_t *ob, size_t b, size_t lb)
{
    return la == lb && (!la || !memcmp(AT(oa->arena, a), AT(ob->arena, b), la));
}

int same_value(const facts_t *oa, const fact_t *a, const facts_t *ob, const fact_t *b)
{
    return a->neg == b->neg && a->a == b->a && a->b == b->b
        && same_text(oa, a->s1, a->l1, ob, b->s1, b->l1)
        && same_text(oa, a->s2, a->l2, ob, b->s2, b->l2);
}

int same_facts(const facts_t *oa, size_t a0, size_t a1, const facts_t *ob, size_t b0, size_t b1)
{
    if (a1 - a0 != b1 - b0) return 0;
    for (size_t j = 0; j < a1 - a0; j++) {
        const fact_t *a = &oa->f[a0 + j], *b = &ob->f[b0 + j];
        if (!same_key(oa, a, ob, b) || !same_value(oa, a, ob, b)) return 0;
    }
    return 1;
}

static int add_detail(details_t *d, int change, const fact_t *a, const fact_t *b)
{
    if (GROW(d->d, d->cap, d->n + 1)) {
        failed_out_of_memory();
        return -1;
    }
    d->d[d->n++] = (detail_t){change, a, b};
    return 0;
}

/* One key's details (diff._compare's body), `a` and `b` its last values (NULL: none). */
static int key_details(details_t *d, details_t *moved, const facts_t *oa, const fact_t *a,
                       const facts_t *ob, const fact_t *b)
{
    const fact_t *x = a ? a : b;
    switch (x->what) {
    case W_MEMBER:
        if (!a) return add_detail(d, D_MEMBER_ADDED, a, b);
        if (!b) return add_detail(d, D_MEMBER_REMOVED, a, b);
        if (!same_text(oa, a->s1, a->l1, ob, b->s1, b->l1) && add_detail(d, D_MEMBER_RETYPED, a, b))
            return -1;
        if (a->a != b->a && add_detail(d, D_MEMBER_MOVED, a, b)) return -1;
        return a->b != b->b ? add_detail(d, D_BITFIELD, a, b) : 0;
    case W_VALUE:
        return add_detail(d, !a ? D_VALUE_ADDED : !b ? D_VALUE_REMOVED : D_VALUE_CHANGED, a, b);
    case W_PARAM:
        if (!a) return add_detail(d, D_PARAM_ADDED, a, b);
        if (!b) return add_detail(d, D_PARAM_REMOVED, a, b);
        if (!same_text(oa, a->s1, a->l1, ob, b->s1, b->l1) && add_detail(d, D_PARAM_RENAMED, a, b))
            return -1;
        return !same_text(oa, a->s2, a->l2, ob, b->s2, b->l2) ? add_detail(d, D_PARAM_RETYPED, a, b) : 0;
    case W_ENTRY:
        if (!a) return add_detail(d, D_VAR_ADDED, a, b);
        if (!b) return add_detail(d, D_VAR_REMOVED, a, b);
        if (a->b != b->b) return add_detail(d, D_VAR_RESIZED, a, b);
        return add_detail(moved, D_VAR_MOVED, a, b);
    default:
        return add_detail(d, D_OTHER, a, b);
    }
}

int compare_facts(const facts_t *oa, size_t a0, size_t a1, const facts_t *ob, size_t b0,
                  size_t b1, details_t *d)
{
    key_table_t old = {NULL, 0}, new = {NULL, 0};
    details_t moved = {0};
    int rc = last_table(&old, oa, a0, a1) || last_table(&new, ob, b0, b1) ? -1 : 0;
    for (size_t j = a0; j < a1 && !rc; j++) {
        const fact_t *a = &oa->f[key_find(&old, oa, oa, &oa->f[j])];
        size_t at = key_find(&new, ob, oa, a);
        const fact_t *b = at == SIZE_MAX ? NULL : &ob->f[at];
        if (b && same_value(oa, a, ob, b)) continue;
        rc = key_details(d, &moved, oa, a, ob, b);
    }
    for (size_t j = b0; j < b1 && !rc; j++) {
        if (key_find(&old, oa, ob, &ob->f[j]) != SIZE_MAX) continue;
        rc = key_details(d, &moved, oa, NULL, ob, &ob->f[key_find(&new, ob, ob, &ob->f[j])]);
    }
    for (size_t j = 0; j < moved.n && !rc; j++) rc = add_detail(d, D_VAR_MOVED, moved.d[j].a, moved.d[j].b);
    free(old.slot), free(new.slot);
    free(moved.d);
    return rc;
}
