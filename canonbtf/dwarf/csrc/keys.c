/* Keys of a unit's records (keys.py's KeyPool.add_unit, the same entries in the same
 * order), and the records and entries as the Python tuples the reference makes. */
#include "core.h"
#include <string.h>
#include <stdlib.h>

/* A reference in size_or_type only; none at all (the table of kinds, kinds.def). */
static int single_ref(int kind) { return kind_in(KINDS_SINGLE_REF, (uint32_t)kind); }
static int leaf_kind(int kind) { return kind_in(KINDS_LEAF, (uint32_t)kind); }

PyObject *py_from_i128(i128 v)
{
    if (v >= INT64_MIN && v <= INT64_MAX)
        return PyLong_FromLongLong((long long)v);
    if (v >= 0 && v <= (i128)UINT64_MAX)
        return PyLong_FromUnsignedLongLong((unsigned long long)v);
    /* beyond 64 bits: hi * 2**64 + lo */
    PyObject *hi = PyLong_FromLongLong((long long)(v >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)(v & UINT64_MAX));
    PyObject *shift = PyLong_FromLong(64);
    PyObject *big = hi && shift ? PyNumber_Lshift(hi, shift) : NULL;
    PyObject *sum = big && lo ? PyNumber_Add(big, lo) : NULL;
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(shift);
    Py_XDECREF(big);
    return sum;
}

/* The dense id of a name. Most names are .debug_str strings that every unit repeats:
 * those are looked up by their offset before their bytes are hashed (intern_bytes was
 * the core's hottest function, 14 % of a keyed worker's samples under perf). */
static int64_t name_id(encoder_t *e, name_t name)
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
    if (is_new && VEC_PUSH(e->name_objs, (PyObject *)NULL)) return -1;
    if (key && idmap_put(&e->str_names, key, (uint32_t)id)) return -1;
    return id;
}

/* The str of a name (latin-1, as the reference decodes), shared per distinct name;
 * a borrowed reference. */
PyObject *name_object(encoder_t *e, name_t name)
{
    int64_t id = name_id(e, name);
    if (id < 0) return PyErr_NoMemory();
    PyObject *obj = e->name_objs.a[id];
    if (!obj) {
        obj = PyUnicode_DecodeLatin1((const char *)name.p, name.len, NULL);
        if (!obj) return NULL;
        e->name_objs.a[id] = obj;
    }
    return obj;
}

static PyObject *int_object(i128 v) { return py_from_i128(v); }

/* A reference as the record holds it: the record number. */
static PyObject *ref_object(int64_t number) { return PyLong_FromLongLong(number); }

typedef PyObject *(*ref_fn)(encoder_t *, int64_t);

static PyObject *plain_ref(encoder_t *e, int64_t n) { (void)e; return ref_object(n); }

static PyObject *part_object(encoder_t *e, int64_t n)
{
    part_t p = e->part.a[n];
    switch (p.tag) {
    case P_VOID: return PyLong_FromLong(0);
    case P_KEY: return PyLong_FromUnsignedLong(p.id);
    case P_CYCLE: return PyLong_FromLong(-1);
    }
    PyObject *t = e->token_objs.a[p.id];
    Py_INCREF(t);
    return t;
}

/* (kind, name, kflag, size_or_type, extra, items) with each reference made by `ref`. */
static PyObject *tuple_of(encoder_t *e, const rec_t *r, ref_fn ref)
{
    int kind = r->kind;
    PyObject *name = name_object(e, r->name);
    if (!name) return NULL;
    Py_INCREF(name);
    PyObject *sot = NULL, *extra = NULL, *items = NULL;
    if (single_ref(kind) || kind == K_FUNC_PROTO)
        sot = ref(e, (int64_t)r->sot);
    else
        sot = int_object(r->sot);
    if (kind == K_VAR) {
        extra = PyList_GET_ITEM(e->places, r->var_extra);
        Py_INCREF(extra);
    } else if (kind == K_ARRAY) {
        PyObject *elem = ref(e, r->elem), *index = ref(e, r->index);
        PyObject *nelems = int_object(r->nelems);
        if (elem && index && nelems) extra = PyTuple_Pack(3, elem, index, nelems);
        Py_XDECREF(elem);
        Py_XDECREF(index);
        Py_XDECREF(nelems);
    } else {
        extra = int_object(r->extra);
    }
    items = PyTuple_New(r->nitems);
    for (uint32_t i = 0; items && i < r->nitems; i++) {
        const item_t *it = &e->items.a[r->item_first + i];
        PyObject *iname = name_object(e, it->name), *item = NULL;
        if (iname) {
            if (kind == K_STRUCT || kind == K_UNION) {
                PyObject *t = ref(e, it->type), *o = int_object(it->value);
                if (t && o) item = PyTuple_Pack(3, iname, t, o);
                Py_XDECREF(t);
                Py_XDECREF(o);
            } else if (kind == K_FUNC_PROTO) {
                PyObject *t = ref(e, it->type);
                if (t) item = PyTuple_Pack(2, iname, t);
                Py_XDECREF(t);
            } else {
                PyObject *v = int_object(it->value);
                if (v) item = PyTuple_Pack(2, iname, v);
                Py_XDECREF(v);
            }
        }
        if (!item) { Py_CLEAR(items); break; }
        PyTuple_SET_ITEM(items, i, item);
    }
    PyObject *out = NULL;
    PyObject *k = PyLong_FromLong(kind), *kflag = PyLong_FromLong(r->kflag);
    if (k && kflag && sot && extra && items)
        out = PyTuple_Pack(6, k, name, kflag, sot, extra, items);
    Py_XDECREF(k);
    Py_XDECREF(kflag);
    Py_DECREF(name);
    Py_XDECREF(sot);
    Py_XDECREF(extra);
    Py_XDECREF(items);
    return out;
}

PyObject *record_object(encoder_t *e, const rec_t *r)
{
    return tuple_of(e, r, plain_ref);
}

/* -- keys ------------------------------------------------------------------------------ */

static int ser_put(encoder_t *e, const void *p, size_t n)
{
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
    int64_t id = name_id(e, name);
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
        PyObject *repr = PyObject_Repr(PyList_GET_ITEM(e->places, r->var_extra));
        if (!repr) return -2;
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(repr, &n);
        int rc = text ? ser_put(e, text, (size_t)n) : -2;
        Py_DECREF(repr);
        if (rc) return rc;
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

/* Interns record n's entry; returns its key id (>= 1), 0 on failure. */
static uint32_t entry_key(encoder_t *e, int64_t n)
{
    const rec_t *r = &e->recs.a[n];
    int rc = serialize_entry(e, r);
    if (rc) {
        if (rc == -1) PyErr_NoMemory();
        return 0;
    }
    int is_new = 0;
    int64_t id = intern_bytes(&e->entries, e->ser.a, e->ser.n, &is_new);
    if (id < 0) { PyErr_NoMemory(); return 0; }
    if (is_new) {
        PyObject *entry = leaf_kind(r->kind) ? record_object(e, r) : tuple_of(e, r, part_object);
        if (!entry) return 0;
        int app = PyList_Append(e->new_entries, entry);
        Py_DECREF(entry);
        if (app) return 0;
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

/* `_keys_from(root, ...)`: keys of root and of the records it waits for, depth first. */
static int keys_from(encoder_t *e, int64_t root)
{
    e->dfs.n = 0;
    if (push_dfs(e, root)) return -1;
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
                if (push_dfs(e, target)) return -1;
                continue;
            }
        } else if (!leaf_kind(kind) && !e->on_path.a[node]) {
            size_t before = e->dfs.n;
            if (kind == K_FUNC_PROTO && e->waiting.a[(int64_t)r->sot]
                && push_dfs(e, (int64_t)r->sot))
                return -1;
            if (kind == K_ARRAY) {
                if (e->waiting.a[r->elem] && push_dfs(e, r->elem)) return -1;
                if (e->waiting.a[r->index] && push_dfs(e, r->index)) return -1;
            }
            for (uint32_t i = 0; i < r->nitems; i++) {
                int64_t t = e->items.a[r->item_first + i].type;
                if ((kind == K_STRUCT || kind == K_UNION || kind == K_FUNC_PROTO)
                    && e->waiting.a[t] && push_dfs(e, t))
                    return -1;
            }
            if (e->dfs.n != before) {
                e->on_path.a[node] = 1;
                e->waiting.a[node] = 0;
                continue;
            }
        }
        uint32_t found = entry_key(e, node);
        if (!found) return -2;
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

static int token_of(encoder_t *e, const rec_t *r, part_t *out)
{
    uint8_t buf[6];
    int aggregate = r->kind != K_ENUM && r->kind != K_ENUM64;
    int is_union = r->kind == K_UNION || (r->kind == K_FWD && r->kflag);
    int64_t nid = name_id(e, r->name);
    if (nid < 0) return -1;
    uint32_t v = (uint32_t)nid;
    buf[0] = (uint8_t)aggregate;
    buf[1] = (uint8_t)(aggregate && is_union);
    memcpy(buf + 2, &v, 4);
    int is_new = 0;
    int64_t id = intern_bytes(&e->tokens, buf, sizeof buf, &is_new);
    if (id < 0) return -1;
    if (is_new) {
        PyObject *name = name_object(e, r->name), *t;
        if (!name) return -2;
        if (aggregate)
            t = Py_BuildValue("(sOO)", "aggregate", name, is_union ? Py_True : Py_False);
        else
            t = Py_BuildValue("(sO)", "enum", name);
        if (!t) return -2;
        if (VEC_PUSH(e->token_objs, t)) { Py_DECREF(t); return -1; }
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

/* The keys of the unit just converted: new entries join e->new_entries, the unit's
 * key set joins e->unit_keys. 0; -1 give the unit up (before any entry is made, so the
 * pool holds nothing of it); -2 a Python exception is set. */
int add_unit_keys(encoder_t *e)
{
    size_t count = e->recs.n;
    if (!refs_valid(e)) return fail(e, "a record refers to no record");
    if (VEC_RESERVE(e->part, count) || VEC_RESERVE(e->waiting, count)
        || VEC_RESERVE(e->on_path, count) || VEC_RESERVE(e->key, count)) {
        PyErr_NoMemory();
        return -2;
    }
    for (size_t n = 0; n < count; n++) {
        e->part.a[n].tag = n ? P_CYCLE : P_VOID;
        e->part.a[n].id = 0;
        e->waiting.a[n] = n != 0;
        e->on_path.a[n] = 0;
        e->key.a[n] = 0;
    }
    for (size_t n = 1; n < count; n++) {
        const rec_t *r = &e->recs.a[n];
        int k = r->kind;
        if (kind_in(KINDS_TOKEN, (uint32_t)k)
            && r->name.len) {
            int rc = token_of(e, r, &e->part.a[n]);
            if (rc == -1) PyErr_NoMemory();
            if (rc) return -2;
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
            if (rc == -1) PyErr_NoMemory();
            if (rc) return -2;
            continue;
        }
        uint32_t found = entry_key(e, (int64_t)root);
        if (!found) return -2;
        set_key(e, (int64_t)root, found);
    }
    /* the unit's key set, sorted */
    e->unit_key_list.n = 0;
    if (VEC_RESERVE(e->unit_key_list, count)) { PyErr_NoMemory(); return -2; }
    for (size_t n = 1; n < count; n++) e->unit_key_list.a[e->unit_key_list.n++] = e->key.a[n];
    qsort(e->unit_key_list.a, e->unit_key_list.n, sizeof(uint32_t), compare_u32);
    size_t unique = 0;
    for (size_t i = 0; i < e->unit_key_list.n; i++)
        if (!unique || e->unit_key_list.a[unique - 1] != e->unit_key_list.a[i])
            e->unit_key_list.a[unique++] = e->unit_key_list.a[i];
    PyObject *keys = PyBytes_FromStringAndSize((const char *)e->unit_key_list.a,
                                               (Py_ssize_t)(unique * sizeof(uint32_t)));
    PyObject *item = keys ? Py_BuildValue("(KN)", (unsigned long long)e->unit.offset, keys)
                          : NULL;
    if (!item) return -2;
    int rc = PyList_Append(e->unit_keys, item);
    Py_DECREF(item);
    return rc ? -2 : 0;
}

void keys_free(encoder_t *e)
{
    for (size_t i = 0; i < e->name_objs.n; i++) Py_XDECREF(e->name_objs.a[i]);
    for (size_t i = 0; i < e->token_objs.n; i++) Py_XDECREF(e->token_objs.a[i]);
    free(e->name_objs.a);
    free(e->token_objs.a);
    e->name_objs.a = NULL;
    e->token_objs.a = NULL;
    e->name_objs.n = e->token_objs.n = 0;
}
