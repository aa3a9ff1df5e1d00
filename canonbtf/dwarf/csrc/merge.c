/* The keyed merge's parent side (keys.py KeyedMerge) in plain C (merge.h says what the
 * cells are): entries unified by their cells, the unsafe keys found, the units to encode
 * again listed, and the merged type section written as words, never as Python `Type`s.
 *
 * Anything not shaped as the encoder makes it (a value no word holds, a name strings()
 * was not given) is declined (MERGE_DECLINED): keyed_core.py then runs the reference,
 * which gives the bytes or the error it gives.
 */
#include "merge.h"

#include <stdlib.h>
#include <string.h>

#include "kinds.h"

static int failed(merge_t *m, int code, const char *why)
{
    m->failure = (merge_failure_t){code, -1, why};
    return -1;
}

static int nomem(merge_t *m) { return failed(m, MERGE_NO_MEMORY, "out of memory"); }
static int host_failed(merge_t *m) { return failed(m, MERGE_HOST_FAILED, "a callback failed"); }
#define DECLINE(m, what) failed((m), MERGE_DECLINED, "keyed merge: " what)

int merge_typed_sot(int64_t kind)
{
    return kind >= 0 && kind_in(KINDS_TYPED, (uint32_t)kind);
}

/* The roles of an item's fields (kinds.def): Name, Type, Value. */
const char *merge_item_roles(int64_t kind)
{
    return kind >= 0 && kind <= K_MAX ? kind_item_roles((uint32_t)kind) : "";
}

void merge_init(merge_t *m, const merge_host_t *host)
{
    memset(m, 0, sizeof *m);
    m->host = *host;
}

void merge_free(merge_t *m)
{
    intern_free(&m->entries);
    VEC_FREE(m->maps); VEC_FREE(m->groups); VEC_FREE(m->units); VEC_FREE(m->unit_keys);
    VEC_FREE(m->unsafe); VEC_FREE(m->token); VEC_FREE(m->target); VEC_FREE(m->type_of);
    VEC_FREE(m->used); VEC_FREE(m->name_offset); VEC_FREE(m->emitted);
}

int merge_need(merge_t *m, int state)
{
    static const char *const first[] = {"", "keyed merge: finish() first",
                                        "keyed merge: emit() first",
                                        "keyed merge: strings() first"};
    return m->state >= state ? 0 : failed(m, MERGE_OUT_OF_ORDER, first[state]);
}

/* Where an entry's or record's fields sit in its cells. */
typedef struct {
    int64_t kind;
    const merge_cell_t *name, *kflag, *sot, *extra, *items;
    int64_t nitems;
    const char *roles;
    size_t width;
} view_t;

static void view_of(const merge_cell_t *c, view_t *v)
{
    v->kind = c[0].v;
    v->name = &c[1];
    v->kflag = &c[2];
    v->sot = &c[3];
    v->extra = &c[4];
    const merge_cell_t *count = &c[v->kind == K_ARRAY ? 7 : 5];
    v->nitems = count->v;
    v->items = count + 1;
    v->roles = merge_item_roles(v->kind);
    v->width = strlen(v->roles);
}

static const merge_cell_t *entry_cells(const merge_t *m, size_t key)
{
    size_t len;
    return (const merge_cell_t *)intern_at(&m->entries, (uint32_t)key - 1, &len);
}

static size_t key_count(const merge_t *m) { return m->entries.count; }

/* Calls `visit(m, cell, arg)` for each reference cell of a view, in record order. */
typedef int (*ref_visit)(merge_t *, const merge_cell_t *, void *);

static int each_ref(merge_t *m, const view_t *v, ref_visit visit, void *arg)
{
    if (merge_typed_sot(v->kind) && visit(m, v->sot, arg)) return -1;
    if (v->kind == K_ARRAY && (visit(m, &v->extra[0], arg) || visit(m, &v->extra[1], arg)))
        return -1;
    for (int64_t i = 0; i < v->nitems; i++)
        for (size_t j = 0; j < v->width; j++)
            if (v->roles[j] == 'T' && visit(m, &v->items[i * v->width + j], arg)) return -1;
    return 0;
}

/* -- unify ------------------------------------------------------------------------------ */

int merge_begin_group(merge_t *m)
{
    if (m->state != MERGE_ADDING)
        return failed(m, MERGE_OUT_OF_ORDER, "keyed merge already finished");
    m->group_first = m->maps.n;
    return VEC_PUSH(m->maps, 0) ? nomem(m) : 0;
}

int merge_add_entry(merge_t *m, const merge_cell_t *cells, size_t n)
{
    int is_new = 0;
    int64_t id = intern_bytes(&m->entries, cells, n * sizeof *cells, &is_new);
    return id < 0 || VEC_PUSH(m->maps, id + 1) ? nomem(m) : 0;
}

int merge_end_group(merge_t *m)
{
    merge_group_t g = {m->group_first, m->maps.n - m->group_first};
    return VEC_PUSH(m->groups, g) ? nomem(m) : 0;
}

int merge_add_unit(merge_t *m, const uint32_t *keys, size_t count)
{
    if (VEC_RESERVE(m->unit_keys, m->unit_keys.n + count)) return nomem(m);
    memcpy(m->unit_keys.a + m->unit_keys.n, keys, count * sizeof *keys);
    merge_unit_t rec = {m->groups.n - 1, m->unit_keys.n, count};
    m->unit_keys.n += count;
    return VEC_PUSH(m->units, rec) ? nomem(m) : 0;
}

int merge_find(merge_t *m, const merge_cell_t *cells, size_t n, int64_t *key)
{
    if (merge_need(m, MERGE_FOUND)) return -1;
    int64_t id = intern_find(&m->entries, cells, n * sizeof *cells);
    *key = id < 0 ? -2 : id + 1;
    return 0;
}

/* -- unsafe keys (KeyedMerge._find_unsafe) --------------------------------------------- */

static int64_t name_length(merge_t *m, int64_t name)
{
    merge_text_t text;
    return m->host.name_text(m->host.ctx, name, &text) ? -1 : (int64_t)text.len;
}

/* The number of the token a key's entry stands for (dedup.token_of), -1 for none, or -2
 * when a callback failed. */
static int64_t token_id(merge_t *m, const view_t *v)
{
    int64_t kind = v->kind;
    if (kind != K_STRUCT && kind != K_UNION && kind != K_FWD && kind != K_ENUM
        && kind != K_ENUM64)
        return -1;
    int64_t len = name_length(m, v->name->v);
    if (len <= 0) return len < 0 ? -2 : -1;
    int is_enum = kind == K_ENUM || kind == K_ENUM64, is_union = kind == K_UNION;
    if (kind == K_FWD) {
        const merge_cell_t *f = v->kflag;
        if (f->tag == CELL_INT) {
            is_union = f->v != 0;
        } else if (f->tag == CELL_NAME) {
            int64_t flen = name_length(m, f->v);
            if (flen < 0) return -2;
            is_union = flen != 0;
        } else if ((is_union = m->host.object_truth(m->host.ctx, f->v)) < 0) {
            return -2;
        }
    }
    int64_t id = m->host.token(m->host.ctx, is_enum, v->name->v, is_union);
    return id < 0 ? -2 : id;
}

typedef VEC(uint32_t) u32vec_t;
typedef VEC(int64_t) i64vec_t;

/* Who reads whom, as CSR: node i's readers are fill[start[i] .. start[i + 1]). A node is
 * a key k (k) or a token t (nkeys + 1 + t); `seeds` gets the keys with a CYCLE part. */
typedef struct { u32vec_t start, fill; i64vec_t seeds; size_t nkeys, nodes; int64_t reader;
                 int filling; } readers_t;

static int64_t ref_node(const merge_cell_t *c, size_t nkeys)
{
    if (c->tag == CELL_TOKEN) return (int64_t)nkeys + 1 + c->v;
    if (c->tag == CELL_INT && c->v > 0 && (size_t)c->v <= nkeys) return c->v;
    return -1;
}

static int add_reader(merge_t *m, const merge_cell_t *c, void *arg)
{
    readers_t *r = arg;
    if (c->tag == CELL_INT && c->v == -1) return VEC_PUSH(r->seeds, r->reader) ? nomem(m) : 0;
    int64_t node = ref_node(c, r->nkeys);
    if (node >= 0) {
        if (r->filling) r->fill.a[--r->start.a[node]] = (uint32_t)r->reader;
        else r->start.a[node]++;
    }
    return 0;
}

/* Two passes over the entries' references: count, then fill from each node's end. */
static int build_readers(merge_t *m, readers_t *r)
{
    if (VEC_RESERVE(r->start, r->nodes + 1)) return nomem(m);
    memset(r->start.a, 0, (r->nodes + 1) * sizeof *r->start.a);
    for (r->filling = 0; r->filling < 2; r->filling++) {
        r->seeds.n = 0;
        for (size_t k = 1; k <= r->nkeys; k++) {
            view_t v;
            view_of(entry_cells(m, k), &v);
            r->reader = (int64_t)k;
            if (each_ref(m, &v, add_reader, r)) return -1;
        }
        if (r->filling) break;
        size_t total = 0;
        for (size_t i = 0; i < r->nodes; i++) {
            total += r->start.a[i];
            r->start.a[i] = (uint32_t)total;
        }
        r->start.a[r->nodes] = (uint32_t)total;
        if (VEC_RESERVE(r->fill, total + 1)) return nomem(m);
    }
    return 0;
}

/* Each key's token (m->token) and, per token, its definitions' and declarations' count
 * and first key: a token with two keys (definitions, else declarations) is a seed, one
 * with one key stands for it (m->target). */
static int read_tokens(merge_t *m, readers_t *r, size_t nobj)
{
    uint32_t *seen = calloc(nobj ? nobj * 4 : 1, sizeof *seen);
    if (!seen || VEC_RESERVE(m->target, nobj + 1)) { free(seen); return nomem(m); }
    memset(m->target.a, 0, (nobj + 1) * sizeof *m->target.a);
    m->target.n = nobj;
    for (size_t k = 1; k <= r->nkeys; k++) {
        view_t v;
        view_of(entry_cells(m, k), &v);
        int64_t t = m->token.a[k];
        if (t < 0) continue;
        int decl = v.kind == K_FWD || ((v.kind == K_ENUM || v.kind == K_ENUM64) && !v.nitems);
        uint32_t *s = seen + 4 * t + 2 * decl;
        if (!s[0]++) s[1] = (uint32_t)k;
    }
    int rc = 0;
    for (size_t t = 0; t < nobj && !rc; t++) {
        const uint32_t *s = seen + 4 * t, *keys = s[0] ? s : s[2] ? s + 2 : NULL;
        if (keys && keys[0] > 1)
            rc = VEC_PUSH(r->seeds, (int64_t)(r->nkeys + 1 + t)) ? nomem(m) : 0;
        else if (keys) m->target.a[t] = keys[1];
    }
    free(seen);
    return rc;
}

/* The least fixpoint from the seeds: a key is unsafe when a part is; a token when it is
 * ambiguous or the key it stands for is unsafe. */
static int spread_unsafe(merge_t *m, readers_t *r, uint8_t *unsafe_token)
{
    i64vec_t *work = &r->seeds;
    while (work->n) {
        int64_t item = work->a[--work->n];
        if ((size_t)item <= r->nkeys) {
            if (m->unsafe.a[item]) continue;
            m->unsafe.a[item] = 1;
            int64_t t = m->token.a[item];
            if (t >= 0 && m->target.a[t] == (uint32_t)item
                && VEC_PUSH(*work, (int64_t)(r->nkeys + 1 + t)))
                return nomem(m);
        } else {
            size_t t = (size_t)item - r->nkeys - 1;
            if (unsafe_token[t]) continue;
            unsafe_token[t] = 1;
            m->target.a[t] = 0;
        }
        uint32_t first = r->start.a[item], end = r->start.a[item + 1];
        if (VEC_RESERVE(*work, work->n + (end - first))) return nomem(m);
        for (uint32_t i = first; i < end; i++) work->a[work->n++] = r->fill.a[i];
    }
    return 0;
}

static int find_unsafe(merge_t *m, const int64_t *split, size_t nsplit)
{
    size_t nkeys = key_count(m);
    if (VEC_RESERVE(m->token, nkeys + 1) || VEC_RESERVE(m->unsafe, nkeys + 1)) return nomem(m);
    m->token.n = m->unsafe.n = nkeys + 1;
    memset(m->unsafe.a, 0, nkeys + 1);
    m->token.a[0] = -1;
    for (size_t k = 1; k <= nkeys; k++) {
        view_t v;
        view_of(entry_cells(m, k), &v);
        if ((m->token.a[k] = token_id(m, &v)) == -2) return host_failed(m);
    }
    size_t nobj = m->host.object_count(m->host.ctx);
    readers_t r = {.nkeys = nkeys, .nodes = nkeys + 1 + nobj};
    uint8_t *unsafe_token = calloc(nobj ? nobj : 1, 1);
    int rc = !unsafe_token ? nomem(m)
             : build_readers(m, &r) || read_tokens(m, &r, nobj) ? -1 : 0;
    for (size_t i = 0; i < nsplit && !rc; i++) {
        if (split[i] < 0 || (size_t)split[i] >= nobj) rc = DECLINE(m, "a split token unknown");
        else if (VEC_PUSH(r.seeds, (int64_t)(nkeys + 1) + split[i])) rc = nomem(m);
    }
    if (!rc && spread_unsafe(m, &r, unsafe_token)) rc = -1;
    free(unsafe_token);
    VEC_FREE(r.start);
    VEC_FREE(r.fill);
    VEC_FREE(r.seeds);
    return rc;
}

int merge_finish(merge_t *m, const int64_t *split, size_t nsplit)
{
    if (m->state == MERGE_ADDING) {
        if (find_unsafe(m, split, nsplit)) return -1;
        m->state = MERGE_FOUND;
    }
    return 0;
}

int merge_unit_redone(const merge_t *m, size_t u)
{
    const merge_unit_t *rec = &m->units.a[u];
    const merge_group_t *g = &m->groups.a[rec->group];
    const int64_t *map = m->maps.a + g->first;
    for (size_t i = 0; i < rec->count; i++) {
        uint32_t w = m->unit_keys.a[rec->first + i];
        if (w >= 1 && w < g->len && map[w] > 0 && m->unsafe.a[map[w]]) return 1;
    }
    return 0;
}

/* -- build ------------------------------------------------------------------------------ */

static int emit(merge_t *m)
{
    size_t nkeys = key_count(m);
    if (!m->first_id || nkeys > UINT32_MAX - (m->first_id - 1))
        return DECLINE(m, "type ids past 32 bits");
    if (VEC_RESERVE(m->type_of, nkeys + 1)) return nomem(m);
    m->type_of.n = nkeys + 1;
    memset(m->type_of.a, 0, (nkeys + 1) * sizeof *m->type_of.a);
    m->emitted.n = 0;
    for (size_t k = 1; k <= nkeys; k++) {
        if (m->unsafe.a[k]) continue;
        int64_t t = m->token.a[k];
        if (t >= 0 && m->target.a[t] && m->target.a[t] != k) {
            view_t v;
            view_of(entry_cells(m, k), &v);
            if (v.kind == K_FWD || ((v.kind == K_ENUM || v.kind == K_ENUM64) && !v.nitems))
                continue;  /* a declaration of a name with a definition */
        }
        if (VEC_PUSH(m->emitted, (uint32_t)k)) return nomem(m);
        m->type_of.a[k] = m->first_id - 1 + (uint32_t)m->emitted.n;
    }
    for (size_t k = 1; k <= nkeys; k++) {
        if (m->unsafe.a[k] || m->type_of.a[k]) continue;
        int64_t t = m->token.a[k];
        if (t < 0 || !m->target.a[t]) return DECLINE(m, "a safe key with no type");
        m->type_of.a[k] = m->type_of.a[m->target.a[t]];
    }
    return 0;
}

int merge_emit(merge_t *m, uint32_t first_id)
{
    if (merge_need(m, MERGE_FOUND)) return -1;
    if (m->state == MERGE_FOUND) {
        m->first_id = first_id;
        if (emit(m)) return -1;
        m->state = MERGE_EMITTED;
    }
    return 0;
}

/* -- strings ---------------------------------------------------------------------------- */

static int mark_name(merge_t *m, const merge_cell_t *c)
{
    if (c->tag != CELL_NAME) return DECLINE(m, "a name that is no str");
    size_t need = (size_t)c->v + 1;
    if (m->used.n < need) {
        if (VEC_RESERVE(m->used, need)) return nomem(m);
        memset(m->used.a + m->used.n, 0, need - m->used.n);
        m->used.n = need;
    }
    m->used.a[c->v] = 1;
    return 0;
}

int merge_strings_add(merge_t *m, const merge_cell_t *record)
{
    view_t v;
    view_of(record, &v);
    if (mark_name(m, v.name)) return -1;
    for (int64_t i = 0; i < v.nitems; i++)
        for (size_t j = 0; j < v.width; j++)
            if (v.roles[j] == 'N' && mark_name(m, &v.items[i * v.width + j])) return -1;
    return 0;
}

int merge_strings_begin(merge_t *m)
{
    if (merge_need(m, MERGE_EMITTED)) return -1;
    m->used.n = 0;
    for (size_t i = 0; i < m->emitted.n; i++)
        if (merge_strings_add(m, entry_cells(m, m->emitted.a[i]))) return -1;
    return 0;
}

/* A name to sort: its text, id, and (latin-1) its first 8 bytes as a big-endian number,
 * which decides most comparisons without a call (sorting veth.ko's 6 k names was 3 % of
 * its run). */
typedef struct { uint64_t prefix; merge_text_t text; uint32_t id; } named_t;

static uint32_t code_point(const merge_text_t *t, size_t i)
{
    if (t->width == 1) return ((const uint8_t *)t->data)[i];
    if (t->width == 2) return ((const uint16_t *)t->data)[i];
    return ((const uint32_t *)t->data)[i];
}

/* Python's order of str: by code point (latin-1 names compare as their bytes). */
static int compare_names(const void *a, const void *b)
{
    const merge_text_t *x = &((const named_t *)a)->text, *y = &((const named_t *)b)->text;
    uint64_t px = ((const named_t *)a)->prefix, py = ((const named_t *)b)->prefix;
    if (px != py && x->width == 1 && y->width == 1) return px < py ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    if (x->width == 1 && y->width == 1) {
        int c = memcmp(x->data, y->data, n);
        if (c) return c;
    } else {
        for (size_t i = 0; i < n; i++) {
            uint32_t cx = code_point(x, i), cy = code_point(y, i);
            if (cx != cy) return cx < cy ? -1 : 1;
        }
    }
    return (x->len > y->len) - (x->len < y->len);
}

/* The used names but "", sorted, into *sorted (count in *count). */
static int sorted_names(merge_t *m, named_t **sorted, size_t *count)
{
    *count = 0;
    if (!(*sorted = malloc((m->used.n + 1) * sizeof **sorted))) return nomem(m);
    for (size_t id = 0; id < m->used.n; id++) {
        if (!m->used.a[id]) continue;
        named_t *one = &(*sorted)[*count];
        if (m->host.name_text(m->host.ctx, (int64_t)id, &one->text)) return host_failed(m);
        one->id = (uint32_t)id;
        one->prefix = 0;
        if (one->text.width == 1)  /* else compared in full */
            for (size_t i = 0; i < 8; i++)
                one->prefix = one->prefix << 8
                              | (i < one->text.len ? ((const uint8_t *)one->text.data)[i] : 0);
        if (one->text.len) ++*count;
    }
    qsort(*sorted, *count, sizeof **sorted, compare_names);
    return 0;
}

/* "" (unless split: the base's) then each name, at its offset (m->name_offset), into
 * `data`. */
static int write_names(merge_t *m, const named_t *sorted, size_t count, void *data)
{
    VEC(char) *out = data;
    if (!m->string_start && VEC_PUSH(*out, '\0')) return nomem(m);
    for (size_t i = 0; i < count; i++) {
        const merge_text_t *text = &sorted[i].text;
        if (text->width != 1) {
            failed(m, MERGE_NOT_LATIN1, "keyed merge: a name no latin-1 string holds");
            m->failure.name = sorted[i].id;
            return -1;
        }
        if (out->n > UINT32_MAX - m->string_start) return DECLINE(m, "strings past 4 GiB");
        m->name_offset.a[sorted[i].id] = m->string_start + (uint32_t)out->n;
        if (VEC_RESERVE(*out, out->n + text->len + 1)) return nomem(m);
        memcpy(out->a + out->n, text->data, text->len);
        out->n += text->len;
        out->a[out->n++] = '\0';
    }
    return 0;
}

int merge_strings_table(merge_t *m, uint32_t start, char **data, size_t *len)
{
    if (merge_need(m, MERGE_EMITTED)) return -1;
    m->string_start = start;
    named_t *sorted = NULL;
    size_t count;
    VEC(char) table = {0};
    int rc = sorted_names(m, &sorted, &count);
    if (!rc && VEC_RESERVE(m->name_offset, m->used.n + 1)) rc = nomem(m);
    if (!rc) {
        m->name_offset.n = m->used.n;
        memset(m->name_offset.a, 0, m->used.n * sizeof *m->name_offset.a);
        rc = write_names(m, sorted, count, &table);
    }
    free(sorted);
    if (rc) {
        VEC_FREE(table);
        return -1;
    }
    *data = table.a;
    *len = table.n;
    m->state = MERGE_PLACED;
    return 0;
}

/* -- words ------------------------------------------------------------------------------ */

static int word(merge_t *m, merge_words_t *out, uint64_t v)
{
    return VEC_PUSH(out->w, (uint32_t)v) ? nomem(m) : 0;
}

/* A cell as one word (writer._words: a value no word holds is declined). */
static int value_word(merge_t *m, const merge_cell_t *c, uint64_t *out)
{
    if (c->tag == CELL_INT && c->v >= 0 && c->v <= (int64_t)UINT32_MAX) {
        *out = (uint64_t)c->v;
        return 0;
    }
    return DECLINE(m, "a value no 32-bit word holds");
}

/* A name's string offset (strings() placed every name of the records it was given). */
static int name_word(merge_t *m, const merge_cell_t *c, uint64_t *out)
{
    if (c->tag != CELL_NAME || (size_t)c->v >= m->used.n || !m->used.a[c->v])
        return DECLINE(m, "a name strings() was not given");
    *out = m->name_offset.a[c->v];
    return 0;
}

static int ref_word(merge_t *m, const merge_cell_t *c, int keyed, uint64_t *out)
{
    if (!keyed) return value_word(m, c, out);
    size_t nkeys = key_count(m);
    if (c->tag == CELL_INT && c->v >= 0 && (size_t)c->v <= nkeys) {
        *out = c->v ? m->type_of.a[c->v] : 0;
        return 0;
    }
    if (c->tag == CELL_TOKEN && m->target.a[c->v]) {
        *out = m->type_of.a[m->target.a[c->v]];
        return 0;
    }
    return DECLINE(m, "a reference to no type");
}

/* The low 64 bits of an int cell (two's complement), as `value & mask` reads them; an
 * ENUM64's value with `exact` (in [0, 2**64): its high word must fit one too). */
static int int_bits(merge_t *m, const merge_cell_t *c, int exact, uint64_t *out)
{
    if (c->tag == CELL_INT && (!exact || c->v >= 0)) {
        *out = (uint64_t)c->v;
        return 0;
    }
    int rc = c->tag == CELL_OBJECT ? m->host.object_bits(m->host.ctx, c->v, exact, out) : 1;
    if (rc < 0) return host_failed(m);
    if (rc == 0) return 0;
    return exact ? DECLINE(m, "an ENUM64 value no two words hold")
                 : DECLINE(m, "a value that is no int");
}

/* The fixed word of INT, VAR, DECL_TAG; a VAR's placement goes to the host. */
static int fixed_word(merge_t *m, const view_t *v, uint64_t type_id, uint64_t *out)
{
    const merge_cell_t *c = v->extra;
    if (v->kind == K_VAR && c->tag == CELL_OBJECT) {
        int rc = m->host.placement(m->host.ctx, c->v, type_id, out);
        if (rc <= 0) return rc ? host_failed(m) : 0;
    }
    return int_bits(m, c, 0, out);
}

static int item_words(merge_t *m, const view_t *v, merge_words_t *out)
{
    uint64_t w;
    for (int64_t i = 0; i < v->nitems; i++) {
        const merge_cell_t *item = &v->items[i * v->width];
        if (v->kind == K_ENUM64) {
            uint64_t value;
            if (name_word(m, &item[0], &w) || word(m, out, w)) return -1;
            if (int_bits(m, &item[1], 1, &value) || word(m, out, value & 0xFFFFFFFFu)
                || word(m, out, value >> 32))
                return -1;
            continue;
        }
        for (size_t j = 0; j < v->width; j++)
            if ((v->roles[j] == 'T' ? ref_word(m, &item[j], out->keyed, &w)
                 : v->roles[j] == 'N' ? name_word(m, &item[j], &w) : value_word(m, &item[j], &w))
                || word(m, out, w))
                return -1;
    }
    return 0;
}

/* One type's words, as writer._words writes its `Type`. */
static int write_type(merge_t *m, const merge_cell_t *cells, merge_words_t *out)
{
    view_t v;
    view_of(cells, &v);
    uint64_t type_id = ++out->type_id;
    const merge_cell_t *vlen_cell = v.kind == K_FUNC ? v.extra : NULL;
    int64_t vlen = vlen_cell ? vlen_cell->v : v.nitems;
    if ((vlen_cell && vlen_cell->tag != CELL_INT) || v.kflag->tag != CELL_INT || vlen < 0
        || v.kflag->v < 0 || v.kflag->v > 1 || vlen > (int64_t)UINT32_MAX)
        return DECLINE(m, "a kind flag or vlen no word holds");
    uint64_t info = ((uint64_t)v.kflag->v << 31) | ((uint64_t)v.kind << 24) | (uint64_t)vlen;
    if (info > UINT32_MAX) return DECLINE(m, "an info word past 32 bits");
    uint64_t w;
    if (name_word(m, v.name, &w) || word(m, out, w) || word(m, out, info)) return -1;
    if ((merge_typed_sot(v.kind) ? ref_word(m, v.sot, out->keyed, &w) : value_word(m, v.sot, &w))
        || word(m, out, w))
        return -1;
    if (v.kind == K_ARRAY) {
        for (int i = 0; i < 3; i++)
            if ((i < 2 ? ref_word(m, &v.extra[i], out->keyed, &w) : value_word(m, &v.extra[i], &w))
                || word(m, out, w))
                return -1;
    } else if (v.kind == K_INT || v.kind == K_VAR || v.kind == K_DECL_TAG) {
        if (fixed_word(m, &v, type_id, &w) || word(m, out, w & 0xFFFFFFFFu)) return -1;
    }
    return item_words(m, &v, out);
}

int merge_words_begin(merge_t *m, merge_words_t *out)
{
    memset(out, 0, sizeof *out);
    if (merge_need(m, MERGE_PLACED)) return -1;
    out->type_id = m->first_id - 1;
    out->keyed = 1;
    for (size_t i = 0; i < m->emitted.n; i++)
        if (write_type(m, entry_cells(m, m->emitted.a[i]), out)) return -1;
    out->keyed = 0;
    return 0;
}

int merge_words_add(merge_t *m, const merge_cell_t *record, merge_words_t *out)
{
    return merge_need(m, MERGE_PLACED) || write_type(m, record, out) ? -1 : 0;
}
