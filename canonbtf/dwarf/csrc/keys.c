/* Keys of a unit's records (keys.py's KeyPool.add_unit, the same entries in the same
 * order). The entries new to the encoder are left in e->new_entries with the parts their
 * references were at that moment (e->entry_parts), for the binding to make the
 * reference's tuples of. */
#include "core.h"
#include <string.h>
#include <stdlib.h>

/* A reference in size_or_type only; none at all (the table of kinds, kinds.def). */
static int single_ref(int kind) { return kind_in(KINDS_SINGLE_REF, (uint32_t)kind); }
static int leaf_kind(int kind) { return kind_in(KINDS_LEAF, (uint32_t)kind); }

/* The dense id of a name. Most names are .debug_str strings that every unit repeats:
 * those are looked up by their offset before their bytes are hashed (intern_bytes was
 * the core's hottest function, 14 % of a keyed worker's samples under perf). */
int64_t encoder_name_id(encoder_t *e, name_t name)
{
    const uint8_t *str = e->str.buf;
    uint64_t key = 0;
    uint32_t cached;
    if (str && name.p >= str && name.p < str + e->str.len) {
        key = (uint64_t)(name.p - str) + 1;
        if (idmap_get(&e->str_names, key, &cached)) return cached;
    }
    int is_new = 0;
    int64_t id = intern_bytes(&e->names, name.p, name.len, &is_new);
    if (id < 0) return -1;
    if (key && idmap_put(&e->str_names, key, (uint32_t)id)) return -1;
    return id;
}

/* -- keys ------------------------------------------------------------------------------ */

static int ser_put(encoder_t *e, const void *p, size_t n)
{
    if (!n) return 0;  /* ser.a may be NULL */
    if (VEC_RESERVE(e->ser, e->ser.n + n)) return -1;
    memcpy(e->ser.a + e->ser.n, p, n);
    e->ser.n += n;
    return 0;
}

static int ser_i128(encoder_t *e, i128 v) { return ser_put(e, &v, sizeof v); }

static int ser_part(encoder_t *e, int64_t n)
{
    part_t p = e->part.a[n];
    uint8_t buf[5] = {p.tag};
    memcpy(buf + 1, &p.id, 4);
    return ser_put(e, buf, sizeof buf);
}

static int ser_name(encoder_t *e, name_t name)
{
    int64_t id = encoder_name_id(e, name);
    if (id < 0) return -1;
    uint32_t v = (uint32_t)id;
    return ser_put(e, &v, 4);
}

/* The bytes an entry is interned by: equal exactly when the reference's entry tuples
 * are equal. */
static int serialize_entry(encoder_t *e, const rec_t *r)
{
    int kind = r->kind;
    uint8_t head[2] = {r->kind, r->kflag};
    e->ser.n = 0;
    if (ser_put(e, head, 2) || ser_name(e, r->name)) return -1;
    if (single_ref(kind) || kind == K_FUNC_PROTO) {
        if (ser_part(e, (int64_t)r->sot)) return -1;
    } else if (ser_i128(e, r->sot)) {
        return -1;
    }
    if (kind == K_VAR) {
        const uint8_t *text;
        size_t n;
        if (e->calls.var_key(e->calls.ctx, r->var_extra, &text, &n) < 0) return -3;
        if (ser_put(e, text, n)) return -1;
    } else if (kind == K_ARRAY) {
        if (ser_part(e, r->elem) || ser_part(e, r->index) || ser_i128(e, r->nelems))
            return -1;
    } else if (ser_i128(e, r->extra)) {
        return -1;
    }
    uint32_t count = r->nitems;
    if (ser_put(e, &count, 4)) return -1;
    for (uint32_t i = 0; i < count; i++) {
        const item_t *it = &e->items.a[r->item_first + i];
        if (ser_name(e, it->name)) return -1;
        if (kind == K_STRUCT || kind == K_UNION) {
            if (ser_part(e, it->type) || ser_i128(e, it->value)) return -1;
        } else if (kind == K_FUNC_PROTO) {
            if (ser_part(e, it->type)) return -1;
        } else if (ser_i128(e, it->value)) {
            return -1;
        }
    }
    return 0;
}

/* The parts record n's references are now, in the order the entry holds them. */
static int snapshot_parts(encoder_t *e, const rec_t *r)
{
    int kind = r->kind;
    if ((single_ref(kind) || kind == K_FUNC_PROTO)
        && VEC_PUSH(e->entry_parts, e->part.a[(int64_t)r->sot]))
        return -1;
    if (kind == K_ARRAY && (VEC_PUSH(e->entry_parts, e->part.a[r->elem])
                            || VEC_PUSH(e->entry_parts, e->part.a[r->index])))
        return -1;
    if (kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO)
        for (uint32_t i = 0; i < r->nitems; i++)
            if (VEC_PUSH(e->entry_parts, e->part.a[e->items.a[r->item_first + i].type]))
                return -1;
    return 0;
}

/* Interns record n's entry; its key id (>= 1), or 0 with *rc -2 (out of memory) or -3
 * (a call to the caller failed). */
static uint32_t entry_key(encoder_t *e, int64_t n, int *rc)
{
    const rec_t *r = &e->recs.a[n];
    int made = serialize_entry(e, r);
    if (made) {
        *rc = made == -3 ? -3 : -2;
        return 0;
    }
    int is_new = 0;
    int64_t id = intern_bytes(&e->entries, e->ser.a, e->ser.n, &is_new);
    if (id < 0) { *rc = -2; return 0; }
    if (is_new) {
        new_entry_t entry = {(uint32_t)n, (uint32_t)e->entry_parts.n};
        if (VEC_PUSH(e->new_entries, entry) || (!leaf_kind(r->kind) && snapshot_parts(e, r))) {
            *rc = -2;
            return 0;
        }
    }
    return (uint32_t)id + 1;
}

static void set_key(encoder_t *e, int64_t n, uint32_t found)
{
    e->key.a[n] = found;
    if (e->part.a[n].tag == P_CYCLE) {
        e->part.a[n].tag = P_KEY;
        e->part.a[n].id = found;
    }
    e->waiting.a[n] = 0;
}

static int push_dfs(encoder_t *e, int64_t n)
{
    return VEC_PUSH(e->dfs, (int32_t)n);
}

/* `_keys_from(root, ...)`: keys of root and of the records it waits for, depth first.
 * 0, -2 out of memory, -3 a call to the caller failed. */
static int keys_from(encoder_t *e, int64_t root)
{
    e->dfs.n = 0;
    if (push_dfs(e, root)) return -2;
    while (e->dfs.n) {
        int64_t node = e->dfs.a[e->dfs.n - 1];
        if (e->key.a[node]) { e->dfs.n--; continue; }
        const rec_t *r = &e->recs.a[node];
        int kind = r->kind;
        if (single_ref(kind)) {
            int64_t target = (int64_t)r->sot;
            if (e->waiting.a[target] && !e->on_path.a[node]) {
                e->on_path.a[node] = 1;
                e->waiting.a[node] = 0;
                if (push_dfs(e, target)) return -2;
                continue;
            }
        } else if (!leaf_kind(kind) && !e->on_path.a[node]) {
            size_t before = e->dfs.n;
            if (kind == K_FUNC_PROTO && e->waiting.a[(int64_t)r->sot]
                && push_dfs(e, (int64_t)r->sot))
                return -2;
            if (kind == K_ARRAY) {
                if (e->waiting.a[r->elem] && push_dfs(e, r->elem)) return -2;
                if (e->waiting.a[r->index] && push_dfs(e, r->index)) return -2;
            }
            for (uint32_t i = 0; i < r->nitems; i++) {
                int64_t t = e->items.a[r->item_first + i].type;
                if ((kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO)
                    && e->waiting.a[t] && push_dfs(e, t))
                    return -2;
            }
            if (e->dfs.n != before) {
                e->on_path.a[node] = 1;
                e->waiting.a[node] = 0;
                continue;
            }
        }
        int rc = 0;
        uint32_t found = entry_key(e, node, &rc);
        if (!found) return rc;
        set_key(e, node, found);
        e->on_path.a[node] = 0;
        e->dfs.n--;
    }
    return 0;
}

static int valid_ref(int64_t n, size_t count) { return n >= 0 && (size_t)n < count; }

/* Every reference of the unit's records is a record number (the reference would index
 * its lists with anything else, -1 included). */
static int refs_valid(encoder_t *e)
{
    size_t count = e->recs.n;
    for (size_t n = 1; n < count; n++) {
        const rec_t *r = &e->recs.a[n];
        int kind = r->kind;
        if ((single_ref(kind) || kind == K_FUNC_PROTO) && !valid_ref((int64_t)r->sot, count))
            return 0;
        if (kind == K_ARRAY && (!valid_ref(r->elem, count) || !valid_ref(r->index, count)))
            return 0;
        if (kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO)
            for (uint32_t i = 0; i < r->nitems; i++)
                if (!valid_ref(e->items.a[r->item_first + i].type, count)) return 0;
    }
    return 1;
}

/* The token standing for named record r (its kind's family and its name). 0, or -1 when
 * out of memory. */
static int token_of(encoder_t *e, const rec_t *r, part_t *out)
{
    uint8_t buf[6];
    int aggregate = r->kind != K_ENUM && r->kind != K_ENUM64;
    int is_union = r->kind == K_UNION || (r->kind == K_FWD && r->kflag);
    int64_t nid = encoder_name_id(e, r->name);
    if (nid < 0) return -1;
    uint32_t v = (uint32_t)nid;
    buf[0] = (uint8_t)aggregate;
    buf[1] = (uint8_t)(aggregate && is_union);
    memcpy(buf + 2, &v, 4);
    int is_new = 0;
    int64_t id = intern_bytes(&e->tokens, buf, sizeof buf, &is_new);
    if (id < 0) return -1;
    if (is_new) {
        token_t token = {r->name, (uint8_t)aggregate, (uint8_t)(aggregate && is_union)};
        if (VEC_PUSH(e->token_list, token)) return -1;
    }
    out->tag = P_TOKEN;
    out->id = (uint32_t)id;
    return 0;
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The keys of the unit just converted: the entries new to the encoder in e->new_entries
 * (their parts in e->entry_parts), the unit's sorted key set in e->unit_key_list. 0; -1
 * give the unit up (before any entry is made, so the pool holds nothing of it); -2 out
 * of memory; -3 a call to the caller failed. */
int add_unit_keys(encoder_t *e)
{
    size_t count = e->recs.n;
    e->new_entries.n = e->entry_parts.n = e->unit_key_list.n = 0;
    if (!refs_valid(e)) return fail(e, "a record refers to no record");
    if (VEC_RESERVE(e->part, count) || VEC_RESERVE(e->waiting, count)
        || VEC_RESERVE(e->on_path, count) || VEC_RESERVE(e->key, count))
        return -2;
    for (size_t n = 0; n < count; n++) {
        e->part.a[n].tag = n ? P_CYCLE : P_VOID;
        e->part.a[n].id = 0;
        e->waiting.a[n] = n != 0;
        e->on_path.a[n] = 0;
        e->key.a[n] = 0;
    }
    for (size_t n = 1; n < count; n++) {
        const rec_t *r = &e->recs.a[n];
        if (kind_in(KINDS_TOKEN, (uint32_t)r->kind) && r->name.len) {
            if (token_of(e, r, &e->part.a[n])) return -2;
            e->waiting.a[n] = 0;
        }
    }
    for (size_t root = 1; root < count; root++) {
        if (e->key.a[root]) continue;
        const rec_t *r = &e->recs.a[root];
        int kind = r->kind, wait = 0;
        if (single_ref(kind)) {
            wait = e->waiting.a[(int64_t)r->sot];
        } else if (kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO) {
            if (kind == K_FUNC_PROTO) wait = e->waiting.a[(int64_t)r->sot];
            for (uint32_t i = 0; i < r->nitems && !wait; i++)
                wait = e->waiting.a[e->items.a[r->item_first + i].type];
        } else if (!leaf_kind(kind)) {
            wait = 1;
        }
        if (wait) {
            int rc = keys_from(e, (int64_t)root);
            if (rc) return rc;
            continue;
        }
        int rc = 0;
        uint32_t found = entry_key(e, (int64_t)root, &rc);
        if (!found) return rc;
        set_key(e, (int64_t)root, found);
    }
    /* the unit's key set, sorted */
    if (VEC_RESERVE(e->unit_key_list, count)) return -2;
    for (size_t n = 1; n < count; n++) e->unit_key_list.a[e->unit_key_list.n++] = e->key.a[n];
    qsort(e->unit_key_list.a, e->unit_key_list.n, sizeof(uint32_t), compare_u32);
    size_t unique = 0;
    for (size_t i = 0; i < e->unit_key_list.n; i++)
        if (!unique || e->unit_key_list.a[unique - 1] != e->unit_key_list.a[i])
            e->unit_key_list.a[unique++] = e->unit_key_list.a[i];
    e->unit_key_list.n = unique;
    return 0;
}
