/* The keyed merge's parent side (keys.py KeyedMerge) in C: the workers' entries
 * unified, the unsafe keys found, the units to encode again listed, and the merged
 * type section written as words, never as Python `Type`s.
 *
 * An entry is read from its tuple into cells, (tag, value) pairs with every reference
 * mapped into the parent's key ids; two entries are one key exactly when their cells
 * are equal, as the reference's tuples are equal: ints by value, names (str) and any
 * other value (a VAR's placement, an int past 64 bits, a token) by a Python dict that
 * numbers them.  Anything not shaped as the encoder makes it (an item of the wrong
 * length, a non-str name, a value no word holds) is a ValueError: keyed_core.py then
 * runs the reference, which gives the bytes or the error it gives.
 */
#include "core.h"
#include "pytype.h"
#include <stdlib.h>
#include <string.h>

enum { C_INT = 1, C_STR, C_OBJ, C_TOK };
typedef struct { int64_t tag, v; } cell_t;

typedef struct { size_t first, len; } group_t;          /* a group's map in `maps` */
typedef struct { size_t group, first, count; } unit_rec_t;  /* keys in `unit_keys` */

/* How references of a tuple become cells: through a worker's map (ids past it stay), or
 * through a Python mapping (records: their final type ids). */
typedef struct { const int64_t *a; size_t n; PyObject *seq; } refmap_t;

/* Objects numbered in the order first seen: `ids` maps one to its number, `list` holds
 * them by number. */
typedef struct { PyObject *ids, *list; } numbering_t;

typedef struct {
    PyObject_HEAD
    numbering_t names;             /* of str */
    numbering_t objs;              /* of other values and tokens */
    PyObject *unit_offsets;        /* per unit, as the worker gave it */
    intern_t entries;              /* cells; key id = intern id + 1 */
    VEC(cell_t) ser;
    VEC(int64_t) maps;             /* every group's worker id -> parent id */
    VEC(group_t) groups;
    VEC(unit_rec_t) units;
    VEC(uint32_t) unit_keys;
    VEC(uint8_t) unsafe;           /* per key id */
    VEC(int64_t) token;            /* per key id: object id of its token, or -1 */
    VEC(uint32_t) target;          /* per object id: the key a safe token stands for */
    VEC(uint32_t) type_of;         /* per key id: its type id in the merged Btf */
    VEC(uint8_t) used;             /* per name id: named by a type of the merged Btf */
    VEC(uint32_t) name_offset;     /* per name id */
    VEC(uint32_t) emitted;         /* the keys with a type of their own, in type id order */
    Py_ssize_t received;
    int state;   /* 0 adding groups, 1 unsafe keys found, 2 types emitted, 3 names placed */
} merge_t;

#define FREE_VEC(v) do { free((v).a); (v).a = NULL; (v).n = (v).cap = 0; } while (0)

static int nomem(void) { PyErr_NoMemory(); return -1; }

static int shape_error(const char *what)
{
    PyErr_Format(PyExc_ValueError, "keyed merge: %s", what);
    return -1;
}

int merge_typed_sot(int64_t kind)
{
    return kind >= 0 && kind_in(KINDS_TYPED, (uint32_t)kind);
}

/* The roles of an item's fields (kinds.def): Name, Type, Value. */
const char *merge_item_roles(int64_t kind)
{
    return kind >= 0 && kind <= K_MAX ? kind_item_roles((uint32_t)kind) : "";
}

static int put(merge_t *m, int64_t tag, int64_t v)
{
    if (VEC_RESERVE(m->ser, m->ser.n + 1)) return nomem();
    m->ser.a[m->ser.n++] = (cell_t){tag, v};
    return 0;
}

/* The id of `o` in a numbering dict (new ones appended to `list`). */
static int numbering_init(numbering_t *t)
{
    t->ids = PyDict_New();
    t->list = PyList_New(0);
    return t->ids && t->list ? 0 : -1;
}

static void numbering_free(numbering_t *t)
{
    Py_XDECREF(t->ids);
    Py_XDECREF(t->list);
}

/* The number of `o` in `t`, numbering it when new; -1 with an exception set. */
static int64_t number(numbering_t *t, PyObject *o)
{
    PyObject *found = PyDict_GetItemWithError(t->ids, o);
    if (found) return PyLong_AsLongLong(found);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t id = PyList_GET_SIZE(t->list);
    PyObject *key = PyLong_FromSsize_t(id);
    int rc = key ? PyDict_SetItem(t->ids, o, key) : -1;
    Py_XDECREF(key);
    if (rc || PyList_Append(t->list, o)) return -1;
    return id;
}

static int put_name(merge_t *m, PyObject *o)
{
    if (!PyUnicode_CheckExact(o)) return shape_error("a name that is no str");
    int64_t id = number(&m->names, o);
    return id < 0 ? -1 : put(m, C_STR, id);
}

static int put_value(merge_t *m, PyObject *o)
{
    if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (!overflow) return put(m, C_INT, v);
    } else if (PyUnicode_CheckExact(o)) {
        return put_name(m, o);
    }
    int64_t id = number(&m->objs, o);
    return id < 0 ? -1 : put(m, C_OBJ, id);
}

static int put_ref(merge_t *m, PyObject *o, const refmap_t *map)
{
    if (PyTuple_CheckExact(o) && !map->seq) {
        int64_t id = number(&m->objs, o);
        return id < 0 ? -1 : put(m, C_TOK, id);
    }
    if (!PyLong_Check(o)) return shape_error("a reference that is no int");
    if (map->seq) {
        PyObject *to = PyObject_GetItem(map->seq, o);
        if (!to) return -1;
        int rc = PyLong_Check(to) ? put_value(m, to) : shape_error("a type id that is no int");
        Py_DECREF(to);
        return rc;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow) return shape_error("a reference past 64 bits");
    return put(m, C_INT, v > 0 && (size_t)v < map->n ? map->a[v] : v);
}

static int put_role(merge_t *m, char role, PyObject *o, const refmap_t *map)
{
    if (role == 'N') return put_name(m, o);
    if (role == 'T') return put_ref(m, o, map);
    return put_value(m, o);
}

/* A record or entry tuple as cells in m->ser: kind, name, kflag, sot, extra (ARRAY:
 * three), item count, items. */
static int serialize(merge_t *m, PyObject *rec, const refmap_t *map)
{
    m->ser.n = 0;
    if (!PyTuple_CheckExact(rec) || PyTuple_GET_SIZE(rec) != 6)
        return shape_error("a record that is no 6-tuple");
    PyObject *k = PyTuple_GET_ITEM(rec, 0);
    long kind = PyLong_Check(k) ? PyLong_AsLong(k) : -1;
    if (kind == -1 && PyErr_Occurred()) return -1;
    if (kind < 0 || kind > K_ENUM64) return shape_error("an unknown kind");
    if (put(m, C_INT, kind) || put_name(m, PyTuple_GET_ITEM(rec, 1))
        || put_value(m, PyTuple_GET_ITEM(rec, 2)))
        return -1;
    PyObject *sot = PyTuple_GET_ITEM(rec, 3), *extra = PyTuple_GET_ITEM(rec, 4);
    if (merge_typed_sot(kind) ? put_ref(m, sot, map) : put_value(m, sot)) return -1;
    if (kind == K_ARRAY) {
        if (!PyTuple_CheckExact(extra) || PyTuple_GET_SIZE(extra) != 3)
            return shape_error("an ARRAY without (elem, index, nelems)");
        for (int i = 0; i < 3; i++)
            if (put_role(m, i < 2 ? 'T' : 'V', PyTuple_GET_ITEM(extra, i), map)) return -1;
    } else if (put_value(m, extra)) {
        return -1;
    }
    PyObject *items = PyTuple_GET_ITEM(rec, 5);
    if (!PyTuple_CheckExact(items)) return shape_error("items that are no tuple");
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    const char *roles = merge_item_roles(kind);
    Py_ssize_t width = (Py_ssize_t)strlen(roles);
    if (count && !width) return shape_error("items of a kind without items");
    if (put(m, C_INT, count)) return -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != width)
            return shape_error("an item not of its kind's shape");
        for (Py_ssize_t j = 0; j < width; j++)
            if (put_role(m, roles[j], PyTuple_GET_ITEM(item, j), map)) return -1;
    }
    return 0;
}

/* Where an entry's or record's fields sit in its cells. */
typedef struct {
    int64_t kind;
    const cell_t *name, *kflag, *sot, *extra, *items;
    int64_t nitems;
    const char *roles;
    size_t width;
} view_t;

static void view_of(const cell_t *c, view_t *v)
{
    v->kind = c[0].v;
    v->name = &c[1];
    v->kflag = &c[2];
    v->sot = &c[3];
    v->extra = &c[4];
    const cell_t *count = &c[v->kind == K_ARRAY ? 7 : 5];
    v->nitems = count->v;
    v->items = count + 1;
    v->roles = merge_item_roles(v->kind);
    v->width = strlen(v->roles);
}

static const cell_t *entry_cells(const merge_t *m, size_t key)
{
    size_t len;
    return (const cell_t *)intern_at(&m->entries, (uint32_t)key - 1, &len);
}

static size_t key_count(const merge_t *m) { return m->entries.count; }

/* Calls `visit(m, cell, arg)` for each reference cell of a view, in record order. */
typedef int (*ref_visit)(merge_t *, const cell_t *, void *);

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

static int intern_cells(merge_t *m, int insert, int64_t *key)
{
    int is_new = 0;
    const uint8_t *p = (const uint8_t *)m->ser.a;
    size_t n = m->ser.n * sizeof(cell_t);
    int64_t id = insert ? intern_bytes(&m->entries, p, n, &is_new)
                        : intern_find(&m->entries, p, n);
    if (insert && id < 0) return nomem();
    *key = id < 0 ? -2 : id + 1;  /* -2: keys.py's _UNKNOWN */
    return 0;
}

PyDoc_STRVAR(Merge_add_group_doc,
             "add_group(entry lists, [(unit offset, key ids)]): one worker group's fragments.");
static PyObject *Merge_add_group(merge_t *m, PyObject *args)
{
    PyObject *lists, *unit_keys;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &lists, &PyList_Type, &unit_keys))
        return NULL;
    if (m->state) return PyErr_Format(PyExc_RuntimeError, "keyed merge already finished");
    size_t first = m->maps.n;
    if (VEC_PUSH(m->maps, 0)) return PyErr_NoMemory();
    for (Py_ssize_t l = 0; l < PyList_GET_SIZE(lists); l++) {
        PyObject *entries = PyList_GET_ITEM(lists, l);
        if (!PyList_Check(entries)) return PyErr_Format(PyExc_TypeError, "entries: a list");
        m->received += PyList_GET_SIZE(entries);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
            refmap_t map = {m->maps.a + first, m->maps.n - first, NULL};
            int64_t key;
            if (serialize(m, PyList_GET_ITEM(entries, i), &map) || intern_cells(m, 1, &key))
                return NULL;
            if (VEC_PUSH(m->maps, key)) return PyErr_NoMemory();
        }
    }
    if (VEC_PUSH(m->groups, ((group_t){first, m->maps.n - first})))
        return PyErr_NoMemory();
    for (Py_ssize_t u = 0; u < PyList_GET_SIZE(unit_keys); u++) {
        PyObject *pair = PyList_GET_ITEM(unit_keys, u);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
            return PyErr_Format(PyExc_TypeError, "unit keys: (offset, key ids)");
        Py_buffer b;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, 1), &b, PyBUF_FORMAT)) return NULL;
        int ok = b.itemsize == 4 && b.format && strcmp(b.format, "I") == 0;
        size_t count = (size_t)b.len / 4;
        if (ok && !VEC_RESERVE(m->unit_keys, m->unit_keys.n + count)) {
            memcpy(m->unit_keys.a + m->unit_keys.n, b.buf, count * 4);
            ok = 2;
        }
        PyBuffer_Release(&b);
        if (ok != 2)
            return ok ? PyErr_NoMemory()
                      : PyErr_Format(PyExc_TypeError, "unit keys: an array of 'I'");
        unit_rec_t rec = {m->groups.n - 1, m->unit_keys.n, count};
        m->unit_keys.n += count;
        if (VEC_PUSH(m->units, rec)) return PyErr_NoMemory();
        if (PyList_Append(m->unit_offsets, PyTuple_GET_ITEM(pair, 0))) return NULL;
    }
    Py_RETURN_NONE;
}

/* -- unsafe keys (KeyedMerge._find_unsafe) --------------------------------------------- */

/* The object id of the token a key's entry stands for (dedup.token_of), or -1. */
static int64_t token_id(merge_t *m, const view_t *v)
{
    int64_t kind = v->kind;
    if (kind != K_STRUCT && kind != K_UNION && kind != K_FWD && kind != K_ENUM
        && kind != K_ENUM64)
        return -1;
    PyObject *name = PyList_GET_ITEM(m->names.list, v->name->v);
    if (!PyUnicode_GET_LENGTH(name)) return -1;
    PyObject *t;
    if (kind == K_ENUM || kind == K_ENUM64) {
        t = Py_BuildValue("(sO)", "enum", name);
    } else {
        int is_union = kind == K_UNION;
        if (kind == K_FWD) {
            const cell_t *f = v->kflag;
            if (f->tag == C_INT) is_union = f->v != 0;
            else if (f->tag == C_STR) is_union = PyUnicode_GET_LENGTH(PyList_GET_ITEM(m->names.list, f->v)) != 0;
            else is_union = PyObject_IsTrue(PyList_GET_ITEM(m->objs.list, f->v));
            if (is_union < 0) return -2;
        }
        t = Py_BuildValue("(sOO)", "aggregate", name, is_union ? Py_True : Py_False);
    }
    if (!t) return -2;
    int64_t id = number(&m->objs, t);
    Py_DECREF(t);
    return id < 0 ? -2 : id;
}

typedef VEC(uint32_t) u32vec_t;
typedef VEC(int64_t) i64vec_t;

/* Who reads whom, as CSR: node i's readers are fill[start[i] .. start[i + 1]). A node is
 * a key k (k) or an object t (nkeys + 1 + t); `seeds` gets the keys with a CYCLE part. */
typedef struct { u32vec_t start, fill; i64vec_t seeds; size_t nkeys, nodes; int64_t reader;
                 int filling; } readers_t;

static int64_t ref_node(const cell_t *c, size_t nkeys)
{
    if (c->tag == C_TOK) return (int64_t)nkeys + 1 + c->v;
    if (c->tag == C_INT && c->v > 0 && (size_t)c->v <= nkeys) return c->v;
    return -1;
}

static int add_reader(merge_t *m, const cell_t *c, void *arg)
{
    readers_t *r = arg;
    if (c->tag == C_INT && c->v == -1) return VEC_PUSH(r->seeds, r->reader) ? nomem() : 0;
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
    if (VEC_RESERVE(r->start, r->nodes + 1)) return nomem();
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
        if (VEC_RESERVE(r->fill, total + 1)) return nomem();
    }
    return 0;
}

/* Each key's token (m->token) and, per token, its definitions' and declarations' count
 * and first key: a token with two keys (definitions, else declarations) is a seed, one
 * with one key stands for it (m->target). */
static int read_tokens(merge_t *m, readers_t *r, size_t nobj)
{
    uint32_t *seen = calloc(nobj ? nobj * 4 : 1, sizeof *seen);
    if (!seen || VEC_RESERVE(m->target, nobj + 1)) { free(seen); return nomem(); }
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
        if (keys && keys[0] > 1) rc = VEC_PUSH(r->seeds, (int64_t)(r->nkeys + 1 + t)) ? nomem() : 0;
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
                return nomem();
        } else {
            size_t t = (size_t)item - r->nkeys - 1;
            if (unsafe_token[t]) continue;
            unsafe_token[t] = 1;
            m->target.a[t] = 0;
        }
        uint32_t first = r->start.a[item], end = r->start.a[item + 1];
        if (VEC_RESERVE(*work, work->n + (end - first))) return nomem();
        for (uint32_t i = first; i < end; i++) work->a[work->n++] = r->fill.a[i];
    }
    return 0;
}

static int find_unsafe(merge_t *m)
{
    size_t nkeys = key_count(m);
    if (VEC_RESERVE(m->token, nkeys + 1) || VEC_RESERVE(m->unsafe, nkeys + 1)) return nomem();
    m->token.n = m->unsafe.n = nkeys + 1;
    memset(m->unsafe.a, 0, nkeys + 1);
    m->token.a[0] = -1;
    for (size_t k = 1; k <= nkeys; k++) {
        view_t v;
        view_of(entry_cells(m, k), &v);
        if ((m->token.a[k] = token_id(m, &v)) == -2) return -1;
    }
    size_t nobj = (size_t)PyList_GET_SIZE(m->objs.list);
    readers_t r = {.nkeys = nkeys, .nodes = nkeys + 1 + nobj};
    uint8_t *unsafe_token = calloc(nobj ? nobj : 1, 1);
    int rc = !unsafe_token ? nomem()
             : build_readers(m, &r) || read_tokens(m, &r, nobj) || spread_unsafe(m, &r, unsafe_token)
             ? -1 : 0;
    free(unsafe_token);
    FREE_VEC(r.start);
    FREE_VEC(r.fill);
    FREE_VEC(r.seeds);
    return rc;
}

PyDoc_STRVAR(Merge_finish_doc,
             "finish() -> per key id, 1 where the key is unsafe (bytes).");
static PyObject *Merge_finish(merge_t *m, PyObject *noargs)
{
    (void)noargs;
    if (m->state == 0) {
        if (find_unsafe(m)) return NULL;
        m->state = 1;
    }
    return PyBytes_FromStringAndSize((const char *)m->unsafe.a, (Py_ssize_t)m->unsafe.n);
}

static int need_state(merge_t *m, int state)
{
    if (m->state >= state) return 0;
    static const char *const first[] = {"", "finish()", "emit()", "strings()"};
    PyErr_Format(PyExc_RuntimeError, "keyed merge: %s first", first[state]);
    return -1;
}

/* need_state, for a method that takes a list `arg` (TypeError naming `what` otherwise). */
static int need_list_in_state(merge_t *m, PyObject *arg, const char *what, int state)
{
    if (!PyList_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s: a list", what);
        return -1;
    }
    return need_state(m, state);
}

PyDoc_STRVAR(Merge_redo_units_doc,
             "redo_units() -> offsets of the units that hold an unsafe key.");
static PyObject *Merge_redo_units(merge_t *m, PyObject *noargs)
{
    (void)noargs;
    if (need_state(m, 1)) return NULL;
    PyObject *out = PyList_New(0);
    for (size_t u = 0; out && u < m->units.n; u++) {
        const unit_rec_t *rec = &m->units.a[u];
        const group_t *g = &m->groups.a[rec->group];
        const int64_t *map = m->maps.a + g->first;
        int bad = 0;
        for (size_t i = 0; i < rec->count && !bad; i++) {
            uint32_t w = m->unit_keys.a[rec->first + i];
            if (w >= 1 && w < g->len && map[w] > 0 && m->unsafe.a[map[w]]) bad = 1;
        }
        if (bad && PyList_Append(out, PyList_GET_ITEM(m->unit_offsets, u))) Py_CLEAR(out);
    }
    return out;
}

PyDoc_STRVAR(Merge_lookup_doc,
             "lookup(entries) -> [0, parent key id or -2 per entry]: a records-mode pool's "
             "entries, numbered from 1 with references among them, as keys.py's `_parent_ids`.");
static PyObject *Merge_lookup(merge_t *m, PyObject *entries)
{
    if (need_list_in_state(m, entries, "entries", 1)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(entries);
    int64_t *ids = malloc((size_t)(n + 1) * sizeof *ids);
    PyObject *out = ids ? PyList_New(n + 1) : PyErr_NoMemory();
    if (!out) { free(ids); return NULL; }
    ids[0] = 0;
    PyList_SET_ITEM(out, 0, PyLong_FromLong(0));
    for (Py_ssize_t i = 0; i < n; i++) {
        refmap_t map = {ids, (size_t)i + 1, NULL};
        PyObject *v = NULL;
        if (!serialize(m, PyList_GET_ITEM(entries, i), &map)
            && !intern_cells(m, 0, &ids[i + 1]))
            v = PyLong_FromLongLong(ids[i + 1]);
        if (!v) { Py_DECREF(out); free(ids); return NULL; }
        PyList_SET_ITEM(out, i + 1, v);
    }
    free(ids);
    return out;
}

/* -- build ------------------------------------------------------------------------------ */

static int emit(merge_t *m)
{
    size_t nkeys = key_count(m);
    if (VEC_RESERVE(m->type_of, nkeys + 1)) return nomem();
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
        if (VEC_PUSH(m->emitted, (uint32_t)k)) return nomem();
        m->type_of.a[k] = (uint32_t)m->emitted.n;
    }
    for (size_t k = 1; k <= nkeys; k++) {
        if (m->unsafe.a[k] || m->type_of.a[k]) continue;
        int64_t t = m->token.a[k];
        if (t < 0 || !m->target.a[t]) return shape_error("a safe key with no type");
        m->type_of.a[k] = m->type_of.a[m->target.a[t]];
    }
    return 0;
}

static int mark_name(merge_t *m, const cell_t *c)
{
    if (c->tag != C_STR) return shape_error("a name that is no str");
    size_t need = (size_t)PyList_GET_SIZE(m->names.list);
    if (m->used.n < need) {
        if (VEC_RESERVE(m->used, need)) return nomem();
        memset(m->used.a + m->used.n, 0, need - m->used.n);
        m->used.n = need;
    }
    m->used.a[c->v] = 1;
    return 0;
}

static int mark_names(merge_t *m, const cell_t *cells)
{
    view_t v;
    view_of(cells, &v);
    if (mark_name(m, v.name)) return -1;
    for (int64_t i = 0; i < v.nitems; i++)
        for (size_t j = 0; j < v.width; j++)
            if (v.roles[j] == 'N' && mark_name(m, &v.items[i * v.width + j])) return -1;
    return 0;
}

/* Serializes record i of `records` ([(record, type id map)]) into m->ser. */
static int record_cells(merge_t *m, PyObject *records, Py_ssize_t i)
{
    PyObject *pair = PyList_GET_ITEM(records, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
        return shape_error("records: (record, type ids)");
    refmap_t map = {NULL, 0, PyTuple_GET_ITEM(pair, 1)};
    return serialize(m, PyTuple_GET_ITEM(pair, 0), &map);
}

PyDoc_STRVAR(Merge_emit_doc,
             "emit() -> how many safe keys have a type of their own (type ids 1..that, in key "
             "order); the others' references go to their token's definition.");
static PyObject *Merge_emit(merge_t *m, PyObject *noargs)
{
    (void)noargs;
    if (need_state(m, 1)) return NULL;
    if (m->state == 1) {
        if (emit(m)) return NULL;
        m->state = 2;
    }
    return PyLong_FromSize_t(m->emitted.n);
}

typedef struct { PyObject *name; uint32_t id; } named_t;

/* Python's order of str: by code point (latin-1 names compare as their bytes). */
static int compare_names(const void *a, const void *b)
{
    PyObject *x = ((const named_t *)a)->name, *y = ((const named_t *)b)->name;
    if (PyUnicode_KIND(x) == PyUnicode_1BYTE_KIND && PyUnicode_KIND(y) == PyUnicode_1BYTE_KIND) {
        Py_ssize_t nx = PyUnicode_GET_LENGTH(x), ny = PyUnicode_GET_LENGTH(y);
        int c = memcmp(PyUnicode_1BYTE_DATA(x), PyUnicode_1BYTE_DATA(y),
                       (size_t)(nx < ny ? nx : ny));
        return c ? c : (nx > ny) - (nx < ny);
    }
    return PyUnicode_Compare(x, y);
}

PyDoc_STRVAR(Merge_strings_doc,
             "strings(records) -> the string table of the merged Btf (records_btf's): \"\" "
             "then the names of its types, sorted; the safe keys' types first, then `records` "
             "([(record, type id map)], appended after them).");
static PyObject *Merge_strings(merge_t *m, PyObject *records)
{
    if (need_list_in_state(m, records, "records", 2)) return NULL;
    m->used.n = 0;
    for (size_t i = 0; i < m->emitted.n; i++)
        if (mark_names(m, entry_cells(m, m->emitted.a[i]))) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++)
        if (record_cells(m, records, i) || mark_names(m, m->ser.a)) return NULL;
    size_t count = 0, nnames = (size_t)PyList_GET_SIZE(m->names.list);
    named_t *sorted = malloc((m->used.n + 1) * sizeof *sorted);
    if (!sorted || VEC_RESERVE(m->name_offset, nnames + 1)) { free(sorted); return PyErr_NoMemory(); }
    m->name_offset.n = nnames;
    memset(m->name_offset.a, 0, nnames * sizeof *m->name_offset.a);
    for (size_t id = 0; id < m->used.n; id++) {
        PyObject *name = PyList_GET_ITEM(m->names.list, id);
        if (m->used.a[id] && PyUnicode_GET_LENGTH(name))
            sorted[count++] = (named_t){name, (uint32_t)id};
    }
    qsort(sorted, count, sizeof *sorted, compare_names);
    VEC(char) data = {0};
    PyObject *out = NULL;
    if (VEC_PUSH(data, '\0')) { PyErr_NoMemory(); goto done; }
    for (size_t i = 0; i < count; i++) {
        Py_ssize_t n;
        const char *raw;
        PyObject *latin = NULL;
        if (PyUnicode_KIND(sorted[i].name) == PyUnicode_1BYTE_KIND) {
            raw = (const char *)PyUnicode_1BYTE_DATA(sorted[i].name);
            n = PyUnicode_GET_LENGTH(sorted[i].name);
        } else {
            latin = PyUnicode_AsLatin1String(sorted[i].name);
            if (!latin) goto done;
            raw = PyBytes_AS_STRING(latin);
            n = PyBytes_GET_SIZE(latin);
        }
        if (data.n > UINT32_MAX) {
            Py_XDECREF(latin);
            PyErr_SetString(PyExc_ValueError, "keyed merge: strings past 4 GiB");
            goto done;
        }
        m->name_offset.a[sorted[i].id] = (uint32_t)data.n;
        int rc = VEC_RESERVE(data, data.n + (size_t)n + 1);
        if (!rc) {
            memcpy(data.a + data.n, raw, (size_t)n);
            data.n += (size_t)n;
            data.a[data.n++] = '\0';
        }
        Py_XDECREF(latin);
        if (rc) { PyErr_NoMemory(); goto done; }
    }
    out = PyBytes_FromStringAndSize(data.a, (Py_ssize_t)data.n);
    m->state = 3;
done:
    free(sorted);
    FREE_VEC(data);
    return out;
}

typedef struct { VEC(uint32_t) w; int keyed; } words_t;

static int word(words_t *out, uint64_t v)
{
    return VEC_PUSH(out->w, (uint32_t)v) ? nomem() : 0;
}

/* A cell as one word (writer._words: a value no word holds is a ValueError). */
static int value_word(merge_t *m, const cell_t *c, uint64_t *out)
{
    if (c->tag == C_INT && c->v >= 0 && c->v <= (int64_t)UINT32_MAX) {
        *out = (uint64_t)c->v;
        return 0;
    }
    return shape_error("a value no 32-bit word holds");
}

/* A name's string offset (strings() placed every name of the records it was given). */
static int name_word(merge_t *m, const cell_t *c, uint64_t *out)
{
    if (c->tag != C_STR || (size_t)c->v >= m->used.n || !m->used.a[c->v])
        return shape_error("a name strings() was not given");
    *out = m->name_offset.a[c->v];
    return 0;
}

static int ref_word(merge_t *m, const cell_t *c, int keyed, uint64_t *out)
{
    if (!keyed) return value_word(m, c, out);
    size_t nkeys = key_count(m);
    if (c->tag == C_INT && c->v >= 0 && (size_t)c->v <= nkeys) {
        *out = c->v ? m->type_of.a[c->v] : 0;
        return 0;
    }
    if (c->tag == C_TOK && m->target.a[c->v]) {
        *out = m->type_of.a[m->target.a[c->v]];
        return 0;
    }
    return shape_error("a reference to no type");
}

/* The low 64 bits of an int cell (two's complement), as `value & mask` reads them. */
static int low_bits(merge_t *m, const cell_t *c, uint64_t *out)
{
    if (c->tag == C_INT) { *out = (uint64_t)c->v; return 0; }
    PyObject *o = c->tag == C_OBJ ? PyList_GET_ITEM(m->objs.list, c->v) : NULL;
    if (!o || !PyLong_Check(o)) return shape_error("a value that is no int");
    *out = PyLong_AsUnsignedLongLongMask(o);
    return *out == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

/* An int cell in [0, 2**64) (an ENUM64 value: its high word must fit one too). */
static int u64_value(merge_t *m, const cell_t *c, uint64_t *out)
{
    if (c->tag == C_INT && c->v >= 0) { *out = (uint64_t)c->v; return 0; }
    PyObject *o = c->tag == C_OBJ ? PyList_GET_ITEM(m->objs.list, c->v) : NULL;
    if (!o || !PyLong_Check(o)) return shape_error("an ENUM64 value no two words hold");
    *out = PyLong_AsUnsignedLongLong(o);
    if (*out == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return shape_error("an ENUM64 value no two words hold");
    }
    return 0;
}

/* The fixed word of INT, VAR, DECL_TAG; a VAR's placement joins `placed`. */
static int fixed_word(merge_t *m, const view_t *v, uint64_t type_id, PyObject *placed,
                      uint64_t *out)
{
    const cell_t *c = v->extra;
    if (v->kind == K_VAR && c->tag == C_OBJ && PyTuple_Check(PyList_GET_ITEM(m->objs.list, c->v))) {
        PyObject *place = PyList_GET_ITEM(m->objs.list, c->v);
        if (PyTuple_GET_SIZE(place) != 4) return shape_error("a VAR's placement not of 4");
        PyObject *linkage = PyTuple_GET_ITEM(place, 0);
        if (!PyLong_Check(linkage)) return shape_error("a VAR's linkage that is no int");
        PyObject *row = Py_BuildValue("(KOOO)", (unsigned long long)type_id,
                                      PyTuple_GET_ITEM(place, 1), PyTuple_GET_ITEM(place, 2),
                                      PyTuple_GET_ITEM(place, 3));
        int rc = row ? PyList_Append(placed, row) : -1;
        Py_XDECREF(row);
        if (rc) return -1;
        *out = PyLong_AsUnsignedLongLongMask(linkage);
        return *out == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
    }
    return low_bits(m, c, out);
}

/* One type's words, as writer._words writes its `Type`. */
static int write_type(merge_t *m, const cell_t *cells, uint64_t type_id, words_t *out,
                      PyObject *placed)
{
    view_t v;
    view_of(cells, &v);
    const cell_t *vlen_cell = v.kind == K_FUNC ? v.extra : NULL;
    int64_t vlen = vlen_cell ? vlen_cell->v : v.nitems;
    if ((vlen_cell && vlen_cell->tag != C_INT) || v.kflag->tag != C_INT || vlen < 0
        || v.kflag->v < 0 || v.kflag->v > 1 || vlen > (int64_t)UINT32_MAX)
        return shape_error("a kind flag or vlen no word holds");
    uint64_t info = ((uint64_t)v.kflag->v << 31) | ((uint64_t)v.kind << 24) | (uint64_t)vlen;
    if (info > UINT32_MAX) return shape_error("an info word past 32 bits");
    uint64_t w;
    if (name_word(m, v.name, &w) || word(out, w) || word(out, info)) return -1;
    if ((merge_typed_sot(v.kind) ? ref_word(m, v.sot, out->keyed, &w) : value_word(m, v.sot, &w))
        || word(out, w))
        return -1;
    if (v.kind == K_ARRAY) {
        for (int i = 0; i < 3; i++)
            if ((i < 2 ? ref_word(m, &v.extra[i], out->keyed, &w) : value_word(m, &v.extra[i], &w))
                || word(out, w))
                return -1;
    } else if (v.kind == K_INT || v.kind == K_VAR || v.kind == K_DECL_TAG) {
        if (fixed_word(m, &v, type_id, placed, &w) || word(out, w & 0xFFFFFFFFu)) return -1;
    }
    for (int64_t i = 0; i < v.nitems; i++) {
        const cell_t *item = &v.items[i * v.width];
        if (v.kind == K_ENUM64) {
            uint64_t value;
            if (name_word(m, &item[0], &w) || word(out, w)) return -1;
            if (u64_value(m, &item[1], &value) || word(out, value & 0xFFFFFFFFu)
                || word(out, value >> 32))
                return -1;
            continue;
        }
        for (size_t j = 0; j < v.width; j++)
            if ((v.roles[j] == 'T' ? ref_word(m, &item[j], out->keyed, &w)
                 : v.roles[j] == 'N' ? name_word(m, &item[j], &w) : value_word(m, &item[j], &w))
                || word(out, w))
                return -1;
    }
    return 0;
}

PyDoc_STRVAR(Merge_words_doc,
             "words(records) -> (type section words, [(VAR id, section, offset, size)]): the "
             "safe keys' types then `records` (as given to strings()).");
static PyObject *Merge_words(merge_t *m, PyObject *records)
{
    if (need_list_in_state(m, records, "records", 3)) return NULL;
    words_t out = {{0}, 1};
    PyObject *placed = PyList_New(0), *result = NULL;
    if (!placed) return NULL;
    uint64_t type_id = 0;
    for (size_t i = 0; i < m->emitted.n; i++)
        if (write_type(m, entry_cells(m, m->emitted.a[i]), ++type_id, &out, placed)) goto done;
    out.keyed = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        /* the cells of a record name only names that names() marked */
        if (record_cells(m, records, i) || write_type(m, m->ser.a, ++type_id, &out, placed))
            goto done;
    }
    result = Py_BuildValue("(y#O)", (const char *)out.w.a,
                           (Py_ssize_t)(out.w.n * sizeof(uint32_t)), placed);
done:
    FREE_VEC(out.w);
    Py_DECREF(placed);
    return result;
}

static PyObject *Merge_received(merge_t *m, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(m->received);
}

static PyObject *Merge_type_of(merge_t *m, void *closure)
{
    (void)closure;
    if (need_state(m, 2)) return NULL;
    return PyBytes_FromStringAndSize((const char *)m->type_of.a,
                                     (Py_ssize_t)(m->type_of.n * sizeof(uint32_t)));
}

static int Merge_init(merge_t *m, PyObject *args, PyObject *kw)
{
    if (!PyArg_ParseTuple(args, ":KeyedMerge")) return -1;
    if (m->names.ids) return 0;
    m->unit_offsets = PyList_New(0);
    if (!m->unit_offsets || numbering_init(&m->names) || numbering_init(&m->objs)) return -1;
    return 0;
}

static void Merge_dealloc(merge_t *m)
{
    numbering_free(&m->names);
    numbering_free(&m->objs);
    Py_XDECREF(m->unit_offsets);
    intern_free(&m->entries);
    FREE_VEC(m->ser); FREE_VEC(m->maps); FREE_VEC(m->groups); FREE_VEC(m->units);
    FREE_VEC(m->unit_keys); FREE_VEC(m->unsafe); FREE_VEC(m->token); FREE_VEC(m->target);
    FREE_VEC(m->type_of); FREE_VEC(m->used); FREE_VEC(m->name_offset); FREE_VEC(m->emitted);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyMethodDef Merge_methods[] = {
    METHOD_ROW(Merge, add_group, METH_VARARGS),
    METHOD_ROW(Merge, finish, METH_NOARGS),
    METHOD_ROW(Merge, redo_units, METH_NOARGS),
    METHOD_ROW(Merge, lookup, METH_O),
    METHOD_ROW(Merge, emit, METH_NOARGS),
    METHOD_ROW(Merge, strings, METH_O),
    METHOD_ROW(Merge, words, METH_O),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Merge_getset[] = {
    {"received", (getter)Merge_received, NULL, "entries received", NULL},
    {"type_of", (getter)Merge_type_of, NULL, "per key id, its type id (u32 bytes)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject MergeType = {
    PLAIN_TYPE_HEAD("canonbtf.dwarf._core.KeyedMerge", merge_t, Merge_dealloc,
                    "The keyed merge's parent side (keys.py KeyedMerge; dwarf/keyed_core.py)."),
    .tp_methods = Merge_methods,
    .tp_getset = Merge_getset,
    .tp_init = (initproc)Merge_init,
    .tp_new = PyType_GenericNew,
};
