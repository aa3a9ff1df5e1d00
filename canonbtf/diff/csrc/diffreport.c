/* diff's report (diff.diff_btfs, then diff/text.py's render_text or render_json) made in
 * plain C (diffreport.h), the pairing of duplicated names and anonymous roots left to a
 * callback (diff_bindings.c: diff._CompiledPairing, for canonbtf._btf.diff_report).
 *
 * diff/ and diff/text.py are the reference. Here: diff_plan (diffkeys.c) marks the
 * names with one root on each side and the same record on both; the roots are grouped by
 * family and name; each side's anonymous roots are found as _anonymous_roots finds them;
 * the `pairing` callback (diff._CompiledPairing) pairs and numbers the duplicated names
 * and pairs the anonymous roots, from their facts without tags; then every entry is
 * described with tags (difffacts.c), compared, written (diffwrite.c), and sorted as the
 * reference sorts its changes. Decl tags of one text are paired in order (the reference
 * gives them no tags: their names are not duplicated names, and their facts are empty).
 * Any spelling the reference would make with a placeholder is declined (failure.h): the
 * caller then runs the reference. No global state. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "difffacts.h"
#include "diffreport.h"
#include "diffwrite.h"
#include "failure.h"
#include "grow.h"

/* Roots of one family and name (decl tags: of one text) on both sides. */
typedef struct {
    uint8_t family;
    size_t name, nlen;                       /* in the report's names */
    uint32_t count[2], head[2], tail[2];     /* roots per side, a list through side.next */
} group_t;

typedef struct {
    const types_t *t;
    uint32_t own_first, nids;
    const uint32_t *key;      /* diff_plan's keys (0: unknown) */
    const uint8_t *same;      /* diff_plan's: the same as the other side's root */
    const uint32_t *planned;  /* diff_plan's group of a named root (0: none) */
    uint8_t *expanded;        /* _Facts.expanded */
    uint8_t *dup, *seen;
    uint32_t *tags, *next, *anon;
    size_t nanon;
    cdump_speller_t *plain, *tagged;   /* without tags (the pairing's), with them */
    facts_t facts;
} side_t;

/* One change of the report: what and where, the shown name and the lines. */
typedef struct {
    uint8_t family, status;
    size_t name, nlen, text, tlen;
} change_t;

typedef struct {
    side_t side[2];
    group_t *group;
    size_t ngroups, cap_groups;
    uint32_t *of_planned;     /* by diff_plan's group: its index here + 1 (0: none yet) */
    size_t nplanned;
    size_t *slot, mask, nhashed;   /* decl tags' groups by text: index + 1, 0 empty */
    text_t names, out, line;
    change_t *change;
    size_t nchanges, cap_changes;
    details_t details;
    int json;
} report_t;

/* ---- groups ---- */

static uint64_t name_hash(int family, const char *p, size_t n)
{
    return hash_bytes((const uint8_t *)p, (uint32_t)n) * 31 + (uint64_t)family;
}

static int grow_table(report_t *r)
{
    size_t slots = r->mask ? 2 * (r->mask + 1) : 1024;
    size_t *slot = calloc(slots, sizeof *slot);
    if (!slot) {
        failed_out_of_memory();
        return -1;
    }
    for (size_t g = 0; g < r->ngroups; g++) {
        const group_t *e = &r->group[g];
        if (e->family != F_DECL_TAG) continue;
        size_t s = name_hash(e->family, AT(r->names, e->name), e->nlen) & (slots - 1);
        while (slot[s]) s = (s + 1) & (slots - 1);
        slot[s] = g + 1;
    }
    free(r->slot);
    r->slot = slot;
    r->mask = slots - 1;
    return 0;
}

/* A new group of (family, name), its index + 1 in *at. */
static int new_group(report_t *r, int family, const void *name, size_t len, size_t *at)
{
    if (GROW(r->group, r->cap_groups, r->ngroups + 1)) {
        failed_out_of_memory();
        return -1;
    }
    group_t *e = &r->group[r->ngroups];
    memset(e, 0, sizeof *e);
    e->family = (uint8_t)family;
    e->name = r->names.len;
    e->nlen = len;
    if (text_put(&r->names, name, len)) return -1;
    *at = ++r->ngroups;
    return 0;
}

/* Root `id` of side n last into group `at` (index + 1). */
static void add_root(report_t *r, int n, size_t at, uint32_t id)
{
    group_t *e = &r->group[at - 1];
    side_t *d = &r->side[n];
    if (e->count[n]) d->next[e->tail[n]] = id;
    else e->head[n] = id;
    e->tail[n] = id;
    e->count[n]++;
}

/* Decl tag `id` of side n into the group of its text. */
static int join_text_group(report_t *r, int n, uint32_t id, const void *name, size_t len)
{
    if (2 * (r->nhashed + 1) > r->mask && grow_table(r)) return -1;
    size_t s = name_hash(F_DECL_TAG, name, len) & r->mask;
    for (; r->slot[s]; s = (s + 1) & r->mask) {
        const group_t *e = &r->group[r->slot[s] - 1];
        if (e->family == F_DECL_TAG && e->nlen == len && !memcmp(AT(r->names, e->name), name, len))
            break;
    }
    if (!r->slot[s]) {
        if (new_group(r, F_DECL_TAG, name, len, &r->slot[s])) return -1;
        r->nhashed++;
    }
    add_root(r, n, r->slot[s], id);
    return 0;
}

/* Named root `id` of side n into the group diff_plan put it in (by family and name over
 * both sides, as a hash of the name would: equal bytes, equal group). */
static int join_planned_group(report_t *r, int n, uint32_t id, int family)
{
    const side_t *d = &r->side[n];
    uint32_t planned = d->planned[id], len;
    if (!planned || planned > r->nplanned) {
        failed_declined("diff_plan left a named root out of its groups");
        return -1;
    }
    uint32_t *at = &r->of_planned[planned];
    if (!*at) {
        size_t made;
        const uint8_t *name = name_at(d->t, t_name(d->t, id - 1), &len);
        if (new_group(r, family, name, len, &made)) return -1;
        *at = (uint32_t)made;
    }
    add_root(r, n, *at, id);
    return 0;
}

/* diff._Speller.decl_tag_name: a decl tag is its value and what it is on. */
static int decl_tag_name(side_t *d, uint32_t id, text_t *b)
{
    const types_t *t = d->t;
    uint32_t i = id - 1, len, target = t_sot(t, i);
    const uint8_t *value = name_at(t, t_name(t, i), &len);
    b->len = 0;
    if (!target) return text_put(b, value, len) || text_puts(b, " on void");   /* no "attribute" */
    if (t_kflag(t, i) && text_puts(b, "attribute ")) return -1;
    if (text_put(b, value, len) || text_puts(b, " on ")) return -1;
    uint32_t kind = t_kind(t, target - 1);
    int family = diff_family(kind);
    const char *text;
    size_t tlen;
    if (kind == K_FUNC || kind == K_VAR || kind == K_TYPEDEF || kind == K_INT || kind == K_FLOAT) {
        const uint8_t *name = name_at(t, t_name(t, target - 1), &len);
        if (text_puts(b, DIFF_FAMILY[family]) || text_puts(b, " ") || text_put(b, name, len)) return -1;
    } else {
        if (cdump_speller_label(d->plain, target, &text, &tlen) || text_put(b, text, tlen)) return -1;
    }
    int32_t index = (int32_t)t_rest(t, i)[0];
    if (index < 0) return 0;
    uint32_t item = (uint32_t)index, tkind = kind;
    const uint32_t *items = t_rest(t, target - 1);
    const char *what = "component";
    uint32_t name_off = 0;
    if ((tkind == K_STRUCT || tkind == K_UNION) && item < t_vlen(t, target - 1)) {
        what = "member", name_off = items[3 * item];
    } else if (tkind == K_FUNC && t_sot(t, target - 1)) {
        uint32_t proto = t_sot(t, target - 1);
        if (t_kind(t, proto - 1) == K_FUNC_PROTO && item < t_vlen(t, proto - 1))
            what = "param", name_off = t_rest(t, proto - 1)[2 * item];
    }
    const uint8_t *name = name_at(t, name_off, &len);
    if (text_printf(b, " %s ", what)) return -1;
    return len ? text_put(b, name, len) : text_printf(b, "%" PRIu32, item);
}

/* Every own root of side n into its group: named types, then decl tags (as diff._diff
 * adds them). */
static int group_side(report_t *r, int n)
{
    side_t *d = &r->side[n];
    const types_t *t = d->t;
    text_t b = {0};
    int rc = 0;
    for (int tags = 0; tags < 2 && !rc; tags++) {
        for (uint32_t id = d->own_first; id < d->nids && !rc; id++) {
            uint32_t i = id - 1, kind = t_kind(t, i);
            int family = diff_family(kind);
            if (family == F_COUNT || (kind == K_DECL_TAG) != tags) continue;
            if (kind == K_DECL_TAG)
                rc = decl_tag_name(d, id, &b) || join_text_group(r, n, id, b.p, b.len);
            else if (t_name(t, i))
                rc = join_planned_group(r, n, id, family);
        }
    }
    free(b.p);
    return rc;
}

static int is_dup(const group_t *e)
{
    return e->family != F_DECL_TAG && (e->count[0] > 1 || e->count[1] > 1);
}

/* ---- what the pairing is told ---- */

/* Side d's root `id` described by speller `sp` into its list, emptied first; *dup, whether
 * the facts spell a duplicated name. */
static int describe(side_t *d, cdump_speller_t *sp, uint32_t id, int *dup)
{
    facter_t F = {d->t, sp, d->expanded, d->seen, &d->facts, {0}, 0, 0};
    d->facts.n = d->facts.arena.len = 0;
    int rc = root_facts(&F, id);
    free(F.path.p);
    *dup = F.dup;
    return rc;
}

/* Each duplicated name and its roots (facts without tags), side 0's then side 1's. */
static int tell_duplicates(report_t *r, const diff_pairer_t *pairer)
{
    for (size_t g = 0; g < r->ngroups; g++) {
        const group_t *e = &r->group[g];
        if (!is_dup(e)) continue;
        if (pairer->dup_name(pairer->ctx, e->family, AT(r->names, e->name), e->nlen)) return -1;
        for (int n = 0; n < 2; n++) {
            side_t *d = &r->side[n];
            uint32_t id = e->head[n];
            for (uint32_t k = 0; k < e->count[n]; k++, id = d->next[id]) {
                int dup;
                if (describe(d, d->plain, id, &dup)
                    || pairer->dup_root(pairer->ctx, n, id, &d->facts, 0, d->facts.n, dup))
                    return -1;
            }
        }
    }
    return 0;
}

/* One side's anonymous roots: their facts without tags (in the side's list, kept), and
 * whether the pairing is spared them. */
typedef struct {
    uint32_t id;
    uint8_t spells_dup, spared;
    size_t from, to;
    uint64_t hash;
} anon_root_t;

/* diff._anonymous_roots: anonymous aggregates no named root describes, first those no
 * other such aggregate holds, then any still undescribed, each described as it comes
 * (describing one can describe the next). */
static int anonymous_roots(side_t *d, anon_root_t **out, size_t *nout)
{
    const types_t *t = d->t;
    uint8_t *mark = calloc(d->nids, 1);   /* bit 0 held, bit 1 made */
    uint32_t *left = malloc((d->nanon + 1) * sizeof *left);
    uint32_t *order = malloc((2 * d->nanon + 1) * sizeof *order);
    anon_root_t *roots = malloc((d->nanon + 1) * sizeof *roots);
    size_t n = 0, nleft = 0, nroots = 0;
    int rc = mark && left && order && roots ? 0 : -1;
    if (rc) failed_out_of_memory();
    for (size_t k = 0; !rc && k < d->nanon; k++) {
        uint32_t id = d->anon[k], i = id - 1;
        if (d->expanded[id]) continue;
        left[nleft++] = id;
        if (t_kind(t, i) != K_STRUCT && t_kind(t, i) != K_UNION) continue;
        const uint32_t *items = t_rest(t, i);
        for (uint32_t m = 0, vlen = t_vlen(t, i); m < vlen; m++) {
            uint32_t end = anon_end(t, items[3 * m + 1], NULL, NULL);
            if (end && end != id) mark[end] |= 1;
        }
    }
    for (size_t k = 0; !rc && k < nleft; k++)
        if (!(mark[left[k]] & 1)) order[n++] = left[k];
    for (size_t k = 0; !rc && k < nleft; k++) order[n++] = left[k];
    d->facts.n = d->facts.arena.len = 0;
    facter_t F = {d->t, d->plain, d->expanded, d->seen, &d->facts, {0}, 0, 0};
    for (size_t k = 0; !rc && k < n; k++) {
        uint32_t id = order[k];
        if (mark[id] & 2 || (mark[id] & 1 && d->expanded[id])) continue;
        mark[id] |= 2;
        anon_root_t *a = &roots[nroots++];
        a->id = id, a->spared = 0, a->from = d->facts.n;
        rc = root_facts(&F, id);
        a->to = d->facts.n, a->spells_dup = (uint8_t)F.dup;
        a->hash = facts_hash(&d->facts, a->from, a->to);
    }
    free(F.path.p), free(mark), free(left), free(order);
    if (rc) {
        free(roots);
        return -1;
    }
    *out = roots, *nout = nroots;
    return 0;
}

/* Anonymous roots the pairing is spared: where every root with the same facts, on both
 * sides, has one key (the same record, down to the leaves), they are interchangeable,
 * and pair_anonymous would pair as many as both sides have; those are left out. */
static int spare_alike(report_t *r, anon_root_t *roots[2], size_t n[2])
{
    size_t total = n[0] + n[1], slots = 16;
    while (slots < 2 * total + 2) slots *= 2;
    /* per class: its first root (side << 63 | index), counts, key, mixed */
    typedef struct { size_t first; uint32_t count[2], key, mixed, taken[2]; } class_t;
    size_t *slot = malloc(slots * sizeof *slot), nclasses = 0;
    class_t *cls = malloc((total + 1) * sizeof *cls);
    uint32_t *of[2] = {malloc((n[0] + 1) * sizeof(uint32_t)), malloc((n[1] + 1) * sizeof(uint32_t))};
    int rc = slot && cls && of[0] && of[1] ? 0 : -1;
    if (rc) failed_out_of_memory();
    else memset(slot, 0xFF, slots * sizeof *slot);
    for (int s = 0; !rc && s < 2; s++) {
        const side_t *d = &r->side[s];
        for (size_t j = 0; j < n[s]; j++) {
            const anon_root_t *a = &roots[s][j];
            size_t at = a->hash & (slots - 1);
            for (; slot[at] != SIZE_MAX; at = (at + 1) & (slots - 1)) {
                const class_t *c = &cls[slot[at]];
                int cs = (int)(c->first >> 63);
                const anon_root_t *b = &roots[cs][c->first & (SIZE_MAX >> 1)];
                if (b->hash == a->hash
                    && same_facts(&r->side[cs].facts, b->from, b->to, &d->facts, a->from, a->to))
                    break;
            }
            if (slot[at] == SIZE_MAX) {
                slot[at] = nclasses;
                cls[nclasses++] = (class_t){(size_t)s << 63 | j, {0, 0}, d->key[a->id], 0, {0, 0}};
            }
            class_t *c = &cls[slot[at]];
            c->count[s]++;
            c->mixed |= c->key != d->key[a->id] || !c->key;
            of[s][j] = (uint32_t)slot[at];
        }
    }
    for (int s = 0; !rc && s < 2; s++) {
        for (size_t j = 0; j < n[s]; j++) {
            class_t *c = &cls[of[s][j]];
            uint32_t shared = c->count[0] < c->count[1] ? c->count[0] : c->count[1];
            if (!c->mixed && c->taken[s] < shared) {
                c->taken[s]++;
                roots[s][j].spared = 1;
            }
        }
    }
    free(slot), free(cls), free(of[0]), free(of[1]);
    return rc;
}

/* Side n's anonymous roots not spared, facts without tags. */
static int tell_anonymous(report_t *r, int n, const anon_root_t *roots, size_t nroots,
                          const diff_pairer_t *pairer)
{
    const side_t *d = &r->side[n];
    for (size_t k = 0; k < nroots; k++) {
        const anon_root_t *a = &roots[k];
        if (!a->spared && pairer->anon_root(pairer->ctx, n, a->id, diff_family(t_kind(d->t, a->id - 1)),
                                            &d->facts, a->from, a->to, a->spells_dup))
            return -1;
    }
    return 0;
}

/* ---- the report ---- */

static int add_change(report_t *r, int family, int status, size_t name, size_t nlen, size_t text)
{
    if (GROW(r->change, r->cap_changes, r->nchanges + 1)) {
        failed_out_of_memory();
        return -1;
    }
    r->change[r->nchanges++] = (change_t){(uint8_t)family, (uint8_t)status, name, nlen, text,
                                          r->out.len - text};
    return 0;
}

/* Facts with tags of side n's root `id`, as [*from, *to) of its list (emptied first). */
static int tagged_facts(side_t *d, uint32_t id, size_t *from, size_t *to)
{
    int dup;
    *from = 0;
    int rc = describe(d, d->tagged, id, &dup);
    *to = d->facts.n;
    return rc;
}

/* diff._anon_title: an anonymous root shown by its first members or enumerators. */
static int anon_title(text_t *b, const facts_t *o, size_t from, size_t to)
{
    size_t shown = 0;
    if (text_puts(b, "(anon) {")) return -1;
    for (size_t j = from; j < to; j++) {
        const fact_t *x = &o->f[j];
        const char *key = AT(o->arena, x->key);
        int member = x->what == W_MEMBER;
        if (member) {
            for (size_t k = 0; k < x->klen && member; k++)
                member = key[k] != '.' && key[k] != '[' && key[k] != '-';
        }
        if (x->what != W_VALUE && !member) continue;
        if (++shown > 3) return text_puts(b, ", ...}");
        if (shown > 1 && text_puts(b, ", ")) return -1;
        if (member ? text_put(b, AT(o->arena, x->s1), x->l1) || text_puts(b, " ")
                         || text_put(b, key, x->klen)
                   : text_put(b, key + x->wlen + 1, x->klen - x->wlen - 1))
            return -1;
    }
    return text_puts(b, "}");
}

/* The shown name of an entry into r->names: its name (with its tag), or its title. */
static int shown_name(report_t *r, const group_t *e, uint32_t ordinal, const facts_t *o,
                      size_t from, size_t to, size_t *at, size_t *len)
{
    *at = r->names.len;
    int rc;
    if (!e || !e->nlen) rc = anon_title(&r->names, o, from, to);
    else if ((rc = text_repeat(&r->names, e->name, e->nlen)) == 0 && ordinal)
        rc = text_printf(&r->names, "#%" PRIu32, ordinal);
    *len = r->names.len - *at;
    return rc;
}

static int count_text(text_t *b, const char *noun, uint32_t n)
{
    return text_printf(b, "%" PRIu32 " %s%s", n, noun, n == 1 ? "" : "s");
}

/* diff._Speller.brief: a one-line description of an added or removed root. */
static int brief(side_t *d, uint32_t id, text_t *b)
{
    const types_t *t = d->t;
    uint32_t i = id - 1, kind = t_kind(t, i), size = t_sot(t, i), n = t_vlen(t, i);
    const char *text;
    size_t len;
    b->len = 0;
    switch (kind) {
    case K_STRUCT: case K_UNION:
        return text_printf(b, "size %" PRIu32 ", ", size) || count_text(b, "member", n);
    case K_ENUM: case K_ENUM64:
        return text_printf(b, "size %" PRIu32 ", ", size) || count_text(b, "value", n);
    case K_DATASEC:
        return text_printf(b, "size %" PRIu32 ", ", size) || count_text(b, "variable", n);
    case K_INT: case K_FLOAT:
        return text_printf(b, "size %" PRIu32, size);
    case K_FWD:
        return text_puts(b, t_kflag(t, i) ? "union" : "struct");
    case K_TYPEDEF: case K_FUNC: case K_VAR:
        return cdump_speller_brief(d->tagged, id, &text, &len) || text_put(b, text, len);
    default:
        return 0;
    }
}

/* An added (n 1) or removed (n 0) root. */
static int one_sided(report_t *r, const group_t *e, int n, uint32_t id, uint32_t ordinal)
{
    side_t *d = &r->side[n];
    size_t from = 0, to = 0, name, nlen, text = r->out.len;
    int family = e ? e->family : diff_family(t_kind(d->t, id - 1));
    if ((!e || !e->nlen) && tagged_facts(d, id, &from, &to)) return -1;
    if (shown_name(r, e, ordinal, &d->facts, from, to, &name, &nlen) || brief(d, id, &r->line))
        return -1;
    diff_change_t c = {family, n ? S_ADDED : S_REMOVED, AT(r->names, name), nlen,
                       AT(r->line, 0), r->line.len, NULL, NULL, NULL};
    if (write_change(&r->out, &c, r->json)) return -1;
    return add_change(r, family, c.status, name, nlen, text);
}

/* A pair: reported when its facts with tags differ. */
static int pair(report_t *r, const group_t *e, uint32_t old, uint32_t new, uint32_t ordinal)
{
    side_t *a = &r->side[0], *b = &r->side[1];
    size_t a0, a1, b0, b1, name, nlen, text = r->out.len;
    if (tagged_facts(a, old, &a0, &a1) || tagged_facts(b, new, &b0, &b1)) return -1;
    if (same_facts(&a->facts, a0, a1, &b->facts, b0, b1)) return 0;
    int family = e ? e->family : diff_family(t_kind(b->t, new - 1));
    r->details.n = 0;
    if (shown_name(r, e, ordinal, &b->facts, b0, b1, &name, &nlen)
        || compare_facts(&a->facts, a0, a1, &b->facts, b0, b1, &r->details))
        return -1;
    diff_change_t c = {family, S_CHANGED, AT(r->names, name), nlen, NULL, 0, &r->details,
                       &a->facts, &b->facts};
    if (write_change(&r->out, &c, r->json)) return -1;
    return add_change(r, family, S_CHANGED, name, nlen, text);
}

/* An entry the pairing gave. */
static int paired_entry(report_t *r, const group_t *e, const diff_entry_t *x)
{
    uint64_t status = x->status, old = x->old, new = x->new;
    if (status > DIFF_ADDED
        || (status != DIFF_ADDED && (old < r->side[0].own_first || old >= r->side[0].nids))
        || (status != DIFF_REMOVED && (new < r->side[1].own_first || new >= r->side[1].nids))) {
        failed_declined("pairing: an id out of range");
        return -1;
    }
    uint32_t ordinal = (uint32_t)x->ordinal;
    if (status == DIFF_PAIR) return pair(r, e, (uint32_t)old, (uint32_t)new, ordinal);
    return status == DIFF_REMOVED ? one_sided(r, e, 0, (uint32_t)old, ordinal)
                                  : one_sided(r, e, 1, (uint32_t)new, ordinal);
}

/* The tags the pairing gave to the roots of one duplicated name: entries [from, to). */
static void tag_group(report_t *r, const diff_entry_t *entry, size_t from, size_t to)
{
    for (size_t k = from; k < to; k++) {
        const diff_entry_t *x = &entry[k];
        if (x->status != DIFF_ADDED && x->old < r->side[0].nids)
            r->side[0].tags[x->old] = (uint32_t)x->ordinal;
        if (x->status != DIFF_REMOVED && x->new < r->side[1].nids)
            r->side[1].tags[x->new] = (uint32_t)x->ordinal;
    }
}

/* The entries of one group without duplicates (diff._named_entries). */
static int plain_group(report_t *r, const group_t *e)
{
    if (e->family == F_DECL_TAG) {   /* paired in order; the rest added or removed */
        uint32_t shared = e->count[0] < e->count[1] ? e->count[0] : e->count[1];
        for (int n = 0; n < 2; n++) {
            uint32_t id = e->head[n];
            for (uint32_t k = 0; k < e->count[n]; k++, id = r->side[n].next[id])
                if (k >= shared && one_sided(r, e, n, id, 0)) return -1;
        }
        return 0;
    }
    if (e->count[0] && e->count[1])
        return r->side[0].same[e->head[0]] ? 0 : pair(r, e, e->head[0], e->head[1], 0);
    return e->count[0] ? one_sided(r, e, 0, e->head[0], 0) : one_sided(r, e, 1, e->head[1], 0);
}

static int by_report_order(const void *ctx, uint32_t x, uint32_t y)
{
    const report_t *r = ctx;
    const change_t *a = &r->change[x], *b = &r->change[y];
    if (a->family != b->family) return a->family < b->family ? -1 : 1;
    if (a->status != b->status) return a->status < b->status ? -1 : 1;
    size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
    int c = n ? memcmp(AT(r->names, a->name), AT(r->names, b->name), n) : 0;
    if (c) return c;
    return a->nlen < b->nlen ? -1 : a->nlen > b->nlen;
}

/* render_text or render_json into *out. */
static int render(report_t *r, text_t *out)
{
    uint32_t *order = malloc((r->nchanges + 1) * sizeof *order);
    uint32_t counts[F_COUNT][3], totals[3] = {0, 0, 0};
    text_t *b = out;
    int rc = -1;
    if (!order) {
        failed_out_of_memory();
        return -1;
    }
    memset(counts, 0, sizeof counts);
    for (size_t k = 0; k < r->nchanges; k++) {
        order[k] = (uint32_t)k;
        counts[r->change[k].family][r->change[k].status]++;
        totals[r->change[k].status]++;
    }
    if (sort_u32(order, r->nchanges, by_report_order, r)) {
        failed_out_of_memory();
        goto done;
    }
    if (write_head(b, r->nchanges, totals, (const uint32_t (*)[3])counts, r->json)) goto done;
    int family = -1;
    for (size_t k = 0; k < r->nchanges; k++) {
        const change_t *c = &r->change[order[k]];
        if (k && write_between(b, r->json)) goto done;
        if (c->family != family) {
            family = c->family;
            if (write_section(b, family, counts[family], r->json)) goto done;
        }
        if (text_put(b, AT(r->out, c->text), c->tlen)) goto done;
    }
    rc = write_end(b, r->nchanges, r->json);
done:
    free(order);
    return rc;
}

/* Every entry, in the reference's order: the named groups (duplicated names as the
 * pairing gave them), then the anonymous roots. */
static int report_entries(report_t *r, const diff_paired_t *paired)
{
    size_t k = 0, from = 0;
    for (size_t g = 0; g < r->ngroups; g++) {
        if (!is_dup(&r->group[g])) continue;
        if (k >= paired->nnamed || paired->named_end[k] < from || paired->named_end[k] > paired->n) {
            failed_declined("pairing: one list of entries per duplicated name");
            return -1;
        }
        tag_group(r, paired->entry, from, paired->named_end[k]);
        from = paired->named_end[k++];
    }
    k = from = 0;
    for (size_t g = 0; g < r->ngroups; g++) {
        const group_t *e = &r->group[g];
        if (!is_dup(e)) {
            if (plain_group(r, e)) return -1;
            continue;
        }
        for (size_t j = from; j < paired->named_end[k]; j++)
            if (paired_entry(r, e, &paired->entry[j])) return -1;
        from = paired->named_end[k++];
    }
    from = paired->nnamed ? paired->named_end[paired->nnamed - 1] : 0;
    for (size_t j = from; j < paired->n; j++)
        if (paired_entry(r, NULL, &paired->entry[j])) return -1;
    return 0;
}

static int side_init(side_t *d, const diff_side_t *plan)
{
    d->t = plan->t;
    d->own_first = plan->own_first;
    d->nids = plan->t->count + 1;
    d->key = plan->key;
    d->same = plan->same;
    d->planned = plan->group;
    d->expanded = plan->expanded;
    d->anon = plan->anon;
    d->nanon = plan->nanon;
    if (ZALLOC_EACH(d->nids, ZSLOT(d->dup), ZSLOT(d->seen), ZSLOT(d->tags), ZSLOT(d->next))) {
        failed_out_of_memory();
        return -1;
    }
    return 0;
}

static void side_free(side_t *d)
{
    FREE_EACH(d->dup, d->seen, d->tags, d->next);
    cdump_speller_free(d->plain), cdump_speller_free(d->tagged);
    free(d->facts.arena.p), free(d->facts.f);
}

/* Groups both sides' roots and marks the duplicated names' roots. */
static int group_roots(report_t *r, diff_side_t plan[2])
{
    r->nplanned = plan[0].ngroups;
    if (!plan[0].group || !plan[1].group || plan[1].ngroups != r->nplanned
        || r->nplanned >= UINT32_MAX
        || !(r->of_planned = calloc(r->nplanned + 1, sizeof *r->of_planned))) {
        failed_out_of_memory();
        return -1;
    }
    for (int n = 0; n < 2; n++) {
        side_t *d = &r->side[n];
        if (!(d->plain = cdump_speller_new(d->t, d->dup, NULL))
            || !(d->tagged = cdump_speller_new(d->t, d->dup, d->tags)))
            return -1;
    }
    if (group_side(r, 0) || group_side(r, 1)) return -1;
    for (size_t g = 0; g < r->ngroups; g++) {
        const group_t *e = &r->group[g];
        if (!is_dup(e)) continue;
        for (int n = 0; n < 2; n++) {
            uint32_t id = e->head[n];
            for (uint32_t k = 0; k < e->count[n]; k++, id = r->side[n].next[id]) r->side[n].dup[id] = 1;
        }
    }
    return 0;
}

int diff_report(diff_side_t plan[2], const diff_pairer_t *pairer, int json, text_t *out,
                size_t *nchanges)
{
    report_t r;
    diff_paired_t paired = {0};
    anon_root_t *roots[2] = {NULL, NULL};
    size_t nroots[2] = {0, 0};
    int rc = -1;
    memset(&r, 0, sizeof r);
    r.json = json;
    out->len = 0;
    if (side_init(&r.side[0], &plan[0]) || side_init(&r.side[1], &plan[1])
        || group_roots(&r, plan) || tell_duplicates(&r, pairer)
        || anonymous_roots(&r.side[0], &roots[0], &nroots[0])
        || anonymous_roots(&r.side[1], &roots[1], &nroots[1]) || spare_alike(&r, roots, nroots)
        || tell_anonymous(&r, 0, roots[0], nroots[0], pairer)
        || tell_anonymous(&r, 1, roots[1], nroots[1], pairer) || pairer->pair(pairer->ctx, &paired)
        || report_entries(&r, &paired) || render(&r, out))
        goto done;
    *nchanges = r.nchanges;
    rc = 0;
done:
    free(paired.entry), free(paired.named_end);
    free(roots[0]), free(roots[1]);
    side_free(&r.side[0]), side_free(&r.side[1]);
    free(r.group), free(r.of_planned), free(r.slot), free(r.names.p), free(r.out.p), free(r.line.p), free(r.change);
    free(r.details.d);
    return rc;
}
