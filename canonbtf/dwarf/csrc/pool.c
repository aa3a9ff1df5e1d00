/* fragment.py's TypePool.add_unit in C: a unit's records pooled into the pool's own
 * Python state (its record list and dicts), so the two interleave freely and give the
 * same pool ids and records. The reference's steps, each mirrored in its order:
 * Tarjan's components as _strongly_connected emits them, hash-consing of a record
 * outside any cycle, and for a cycle the canonical classes of _refine (the labels
 * ranked by the reference's own `label_ranks`, then the partition refinement both
 * extensions share, native/csrc/refine.c, as _refine uses canon/refine.py's).
 *
 * A unit whose records are not shaped as the encoder makes them (a reference out of the
 * unit, a name that is no str) is a ValueError before anything is pooled: fragment.py
 * then pools it with the reference.
 */
#include "core.h"
#include "refine.h"
#include <stdlib.h>
#include <string.h>

typedef VEC(int32_t) i32vec_t;

typedef struct {
    PyObject *unit;            /* the unit's records (a list, [0] unused) */
    PyObject *records, *acyclic, *cyclic, *names, *label_ranks;
    Py_ssize_t count;
    int64_t *pool_id;
    int32_t **refs;            /* per node: its nonzero references, record order */
    uint32_t *nrefs;
    int32_t *local;            /* per node of the cycle being pooled: its handle in it */
} pool_t;

/* The references of a record in record order, each checked to be a node of the unit;
 * `out` (may be NULL) gets the nonzero ones. Returns how many, -1 for a bad shape. */
static Py_ssize_t record_refs(PyObject *rec, Py_ssize_t count, int32_t *out)
{
    if (!PyTuple_CheckExact(rec) || PyTuple_GET_SIZE(rec) != 6) return -1;
    PyObject *k = PyTuple_GET_ITEM(rec, 0);
    long kind = PyLong_CheckExact(k) ? PyLong_AsLong(k) : -1;
    if (kind < 0 || kind > K_ENUM64 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(rec, 1)))
        return -1;
    PyObject *slots[64];
    Py_ssize_t n = 0, found = 0;
    if (merge_typed_sot(kind)) slots[n++] = PyTuple_GET_ITEM(rec, 3);
    PyObject *extra = PyTuple_GET_ITEM(rec, 4), *items = PyTuple_GET_ITEM(rec, 5);
    if (kind == K_ARRAY) {
        if (!PyTuple_CheckExact(extra) || PyTuple_GET_SIZE(extra) != 3) return -1;
        slots[n++] = PyTuple_GET_ITEM(extra, 0);
        slots[n++] = PyTuple_GET_ITEM(extra, 1);
    }
    if (!PyTuple_CheckExact(items)) return -1;
    const char *roles = merge_item_roles(kind);
    Py_ssize_t width = (Py_ssize_t)strlen(roles), nitems = PyTuple_GET_SIZE(items);
    if (nitems && !width) return -1;
    for (Py_ssize_t i = 0; i <= nitems; i++) {
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *r = slots[j];
            long v = PyLong_CheckExact(r) ? PyLong_AsLong(r) : -1;
            if (v < 0 || v >= count) { PyErr_Clear(); return -1; }
            if (v) {
                if (out) out[found] = (int32_t)v;
                found++;
            }
        }
        n = 0;
        if (i == nitems) break;
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != width) return -1;
        for (Py_ssize_t j = 0; j < width; j++) {
            PyObject *x = PyTuple_GET_ITEM(item, j);
            if (roles[j] == 'T') slots[n++] = x;
            else if (roles[j] == 'N' && !PyUnicode_CheckExact(x)) return -1;
        }
    }
    return found;
}

/* The interned name (RECORD_RENAME's _Interned); a borrowed reference. */
static PyObject *interned(pool_t *p, PyObject *name)
{
    return PyDict_SetDefault(p->names, name, name);
}

/* A reference as the map gives it: map[r] (pool ids; a cycle's members as negative
 * numbers), or without a map, r < 0 (the member of class -1 - r) as first - 1 - r. */
static PyObject *mapped(PyObject *r, const int64_t *map, int64_t first)
{
    long long v = PyLong_AsLongLong(r);
    if (v == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLongLong(map ? map[v] : v < 0 ? first - 1 - v : v);
}

/* The record with every reference r as map[r] and names interned (RECORD_REMAP then
 * RECORD_RENAME; the shape was checked by record_refs). */
static PyObject *remap_record(pool_t *p, PyObject *rec, const int64_t *map, int64_t first)
{
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(rec, 0));
    PyObject *out = PyTuple_New(6);
    if (!out) return NULL;
    PyObject *name = interned(p, PyTuple_GET_ITEM(rec, 1));
    if (!name) goto fail;
    Py_INCREF(name);
    PyTuple_SET_ITEM(out, 1, name);
    for (int i = 0; i < 6; i += (i == 0 ? 2 : 1)) {
        PyObject *x = PyTuple_GET_ITEM(rec, i), *y = NULL;
        if (i == 3 && merge_typed_sot(kind)) {
            y = mapped(x, map, first);
        } else if (i == 4 && kind == K_ARRAY) {
            PyObject *a = mapped(PyTuple_GET_ITEM(x, 0), map, first), *b = mapped(PyTuple_GET_ITEM(x, 1), map, first);
            if (a && b) y = PyTuple_Pack(3, a, b, PyTuple_GET_ITEM(x, 2));
            Py_XDECREF(a);
            Py_XDECREF(b);
        } else if (i == 5) {
            const char *roles = merge_item_roles(kind);
            Py_ssize_t width = (Py_ssize_t)strlen(roles), n = PyTuple_GET_SIZE(x);
            y = PyTuple_New(n);
            for (Py_ssize_t k = 0; y && k < n; k++) {
                PyObject *item = PyTuple_GET_ITEM(x, k), *copy = PyTuple_New(width);
                for (Py_ssize_t j = 0; copy && j < width; j++) {
                    PyObject *f = PyTuple_GET_ITEM(item, j), *g;
                    if (roles[j] == 'T') g = mapped(f, map, first);
                    else if (roles[j] == 'N') { g = interned(p, f); Py_XINCREF(g); }
                    else { g = f; Py_INCREF(g); }
                    if (!g) Py_CLEAR(copy);
                    else PyTuple_SET_ITEM(copy, j, g);
                }
                if (!copy) Py_CLEAR(y);
                else PyTuple_SET_ITEM(y, k, copy);
            }
        } else {
            y = x;
            Py_INCREF(y);
        }
        if (!y) goto fail;
        PyTuple_SET_ITEM(out, i, y);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static int append_record(pool_t *p, PyObject *rec, int64_t *id)
{
    *id = PyList_GET_SIZE(p->records);
    return PyList_Append(p->records, rec);
}

/* _pool_acyclic */
static int pool_acyclic(pool_t *p, int32_t node)
{
    PyObject *rec = remap_record(p, PyList_GET_ITEM(p->unit, node), p->pool_id, 0);
    if (!rec) return -1;
    PyObject *found = PyDict_GetItemWithError(p->acyclic, rec);
    int rc = -1;
    if (found) {
        p->pool_id[node] = PyLong_AsLongLong(found);
        rc = 0;
    } else if (!PyErr_Occurred()) {
        int64_t id;
        PyObject *key = NULL;
        if (!append_record(p, rec, &id) && (key = PyLong_FromLongLong(id))
            && !PyDict_SetItem(p->acyclic, rec, key)) {
            p->pool_id[node] = id;
            rc = 0;
        }
        Py_XDECREF(key);
    }
    Py_DECREF(rec);
    return rc;
}

/* Tarjan's components as _strongly_connected emits them: `flat` holds their nodes,
 * `ends` where each ends. */
static int components(pool_t *p, i32vec_t *flat, i32vec_t *ends)
{
    Py_ssize_t count = p->count;
    int32_t *index = calloc((size_t)count, sizeof *index), *low = calloc((size_t)count, sizeof *low);
    uint8_t *on_stack = calloc((size_t)count, 1);
    i32vec_t stack = {0}, path = {0}, walk = {0};
    int rc = -1;
    if (!index || !low || !on_stack) goto done;
    int32_t counter = 1;
    for (int32_t root = 1; root < count; root++) {
        if (index[root]) continue;
        index[root] = low[root] = counter++;
        if (!p->nrefs[root]) {
            if (VEC_PUSH(*flat, root) || VEC_PUSH(*ends, (int32_t)flat->n)) goto done;
            continue;
        }
        on_stack[root] = 1;
        if (VEC_PUSH(stack, root) || VEC_PUSH(path, root) || VEC_PUSH(walk, 0)) goto done;
        while (path.n) {
            int32_t node = path.a[path.n - 1];
            int descended = 0;
            while ((uint32_t)walk.a[walk.n - 1] < p->nrefs[node]) {
                int32_t target = p->refs[node][walk.a[walk.n - 1]++];
                if (!index[target]) {
                    index[target] = low[target] = counter++;
                    if (!p->nrefs[target]) {
                        if (VEC_PUSH(*flat, target) || VEC_PUSH(*ends, (int32_t)flat->n))
                            goto done;
                        continue;
                    }
                    on_stack[target] = 1;
                    if (VEC_PUSH(stack, target) || VEC_PUSH(path, target) || VEC_PUSH(walk, 0))
                        goto done;
                    descended = 1;
                    break;
                }
                if (on_stack[target] && index[target] < low[node]) low[node] = index[target];
            }
            if (descended) continue;
            path.n--;
            walk.n--;
            if (path.n && low[node] < low[path.a[path.n - 1]]) low[path.a[path.n - 1]] = low[node];
            if (low[node] == index[node]) {
                int32_t member;
                do {
                    member = stack.a[--stack.n];
                    on_stack[member] = 0;
                    if (VEC_PUSH(*flat, member)) goto done;
                } while (member != node);
                if (VEC_PUSH(*ends, (int32_t)flat->n)) goto done;
            }
        }
    }
    rc = 0;
done:
    if (rc) PyErr_NoMemory();
    free(index);
    free(low);
    free(on_stack);
    free(stack.a);
    free(path.a);
    free(walk.a);
    return rc;
}

/* _refine: the canonical classes of the `n` members `comp` (pool_id -1 each) from their
 * label ranks label[0..n), refined by the classes of the members they reference: the
 * shared partition refinement (native/csrc/refine.c) on the members as handles 0..n-1,
 * the classes numbered in the partition's order into cls (by node). Returns how many
 * classes, -1 out of memory. */
static int32_t canonical_classes(pool_t *p, const int32_t *comp, int32_t n, const uint32_t *label,
                                 int32_t *cls)
{
    refine_t r;
    uint32_t *sorted = malloc((size_t)n * sizeof *sorted), *start = calloc((size_t)n + 1, sizeof *start);
    uint8_t *fresh = malloc((size_t)n);
    int32_t count = -1;
    memset(&r, 0, sizeof r);
    if (!sorted || !start || !fresh) goto done;
    /* Members by label rank, then by handle (Partition's sorted (key, node) pairs). */
    for (int32_t i = 0; i < n; i++) start[label[i] + 1]++;
    for (int32_t c = 0; c < n; c++) start[c + 1] += start[c];
    for (int32_t i = 0; i < n; i++) sorted[start[label[i]]++] = (uint32_t)i;
    for (int32_t j = 0; j < n; j++) fresh[j] = !j || label[sorted[j]] != label[sorted[j - 1]];
    if (refine_init(&r, (uint32_t)n, 0, 0, sorted, (uint32_t)n)) goto done;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        p->local[comp[i]] = i;
        r.eoff[i] = (uint32_t)total;
        for (uint32_t k = 0; k < p->nrefs[comp[i]]; k++) total += p->pool_id[p->refs[comp[i]][k]] < 0;
    }
    r.eoff[n] = (uint32_t)total;
    if (!(r.edge = malloc((total ? total : 1) * sizeof *r.edge))) goto done;
    for (int32_t i = 0, e = 0; i < n; i++)
        for (uint32_t k = 0; k < p->nrefs[comp[i]]; k++) {
            int32_t target = p->refs[comp[i]][k];
            if (p->pool_id[target] < 0) r.edge[e++] = (uint32_t)p->local[target];
        }
    if (refine_referrers(&r)) goto done;
    refine_blocks(&r, fresh);
    if (r.nblocks && refine_run(&r, REFINE_FORWARD, 1)) goto done;
    count = 0;
    for (int32_t q = 0; q < n; q++) {
        uint32_t node = r.order[q];
        if (q && r.rank[node] != r.rank[r.order[q - 1]]) count++;
        cls[comp[node]] = count;
    }
    count++;
done:
    if (count < 0) PyErr_NoMemory();
    refine_free(&r);
    free(sorted);
    free(start);
    free(fresh);
    return count;
}

/* _pool_cycle: a strongly connected set pooled through its canonical form. */
static int pool_cycle(pool_t *p, const int32_t *comp, int32_t n, int32_t *cls)
{
    int rc = -1;
    PyObject *inside = PyList_New(n), *ranks = NULL, *key = NULL, *ids = NULL;
    int32_t *representative = NULL;
    uint32_t *label = NULL;
    if (!inside) return -1;
    for (int32_t i = 0; i < n; i++) p->pool_id[comp[i]] = -1;
    for (int32_t i = 0; i < n; i++) {
        PyObject *rec = remap_record(p, PyList_GET_ITEM(p->unit, comp[i]), p->pool_id, 0);
        if (!rec) goto done;
        PyList_SET_ITEM(inside, i, rec);
    }
    ranks = PyObject_CallOneArg(p->label_ranks, inside);
    if (!ranks) goto done;
    if (!PyList_CheckExact(ranks) || PyList_GET_SIZE(ranks) != n) {
        PyErr_SetString(PyExc_TypeError, "label_ranks: a rank per record");
        goto done;
    }
    if (!(label = malloc((size_t)n * sizeof *label))) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        long r = PyLong_AsLong(PyList_GET_ITEM(ranks, i));
        if (r < 0 || r >= n) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "label_ranks: a bad rank");
            goto done;
        }
        label[i] = (uint32_t)r;
    }
    int32_t count = canonical_classes(p, comp, n, label, cls);
    if (count < 0) goto done;
    if (!(representative = malloc((size_t)count * sizeof *representative))) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        representative[cls[comp[i]]] = comp[i];
        p->pool_id[comp[i]] = -1 - cls[comp[i]];
    }
    if (!(key = PyTuple_New(count))) goto done;
    for (int32_t c = 0; c < count; c++) {
        PyObject *rec = remap_record(p, PyList_GET_ITEM(p->unit, representative[c]), p->pool_id, 0);
        if (!rec) goto done;
        PyTuple_SET_ITEM(key, c, rec);
    }
    ids = PyDict_GetItemWithError(p->cyclic, key);
    if (ids) {
        Py_INCREF(ids);
    } else {
        if (PyErr_Occurred()) goto done;
        Py_ssize_t first = PyList_GET_SIZE(p->records);
        if (!(ids = PyTuple_New(count))) goto done;
        for (int32_t c = 0; c < count; c++) {
            PyObject *id = PyLong_FromSsize_t(first + c);
            if (!id) goto done;
            PyTuple_SET_ITEM(ids, c, id);
        }
        for (int32_t c = 0; c < count; c++) {
            PyObject *rec = remap_record(p, PyTuple_GET_ITEM(key, c), NULL, first);
            int64_t at;
            int bad = !rec || append_record(p, rec, &at);
            Py_XDECREF(rec);
            if (bad) goto done;
        }
        if (PyDict_SetItem(p->cyclic, key, ids)) goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        PyObject *id = PyTuple_GET_ITEM(ids, cls[comp[i]]);
        p->pool_id[comp[i]] = PyLong_AsLongLong(id);
    }
    rc = 0;
done:
    Py_DECREF(inside);
    Py_XDECREF(ranks);
    Py_XDECREF(key);
    Py_XDECREF(ids);
    free(representative);
    free(label);
    return rc;
}

static int self_referring(const pool_t *p, int32_t node)
{
    for (uint32_t r = 0; r < p->nrefs[node]; r++)
        if (p->refs[node][r] == node) return 1;
    return 0;
}

static int pool_components(pool_t *p)
{
    i32vec_t flat = {0}, ends = {0};
    int32_t *cls = calloc((size_t)p->count, sizeof *cls);
    int rc = -1;
    p->local = calloc((size_t)p->count, sizeof *p->local);
    if (!cls || !p->local) { PyErr_NoMemory(); goto done; }
    if (components(p, &flat, &ends)) goto done;
    int32_t begin = 0;
    for (size_t c = 0; c < ends.n; c++) {
        int32_t n = ends.a[c] - begin;
        const int32_t *comp = flat.a + begin;
        begin = ends.a[c];
        if (n == 1 && !self_referring(p, comp[0]) ? pool_acyclic(p, comp[0])
                                                   : pool_cycle(p, comp, n, cls))
            goto done;
    }
    rc = 0;
done:
    free(cls);
    free(p->local);
    free(flat.a);
    free(ends.a);
    return rc;
}

/* pool_unit(records, pool records, acyclic, cyclic, names, label_ranks) -> pool ids */
PyObject *core_pool_unit(PyObject *self, PyObject *args)
{
    pool_t p = {0};
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O", &PyList_Type, &p.unit, &PyList_Type, &p.records,
                          &PyDict_Type, &p.acyclic, &PyDict_Type, &p.cyclic, &PyDict_Type,
                          &p.names, &p.label_ranks))
        return NULL;
    p.count = PyList_GET_SIZE(p.unit);
    if (p.count > INT32_MAX / 2)
        return PyErr_Format(PyExc_ValueError, "pool_unit: a unit of %zd records", p.count);
    size_t count = (size_t)p.count ? (size_t)p.count : 1;
    PyObject *out = NULL;
    p.pool_id = calloc(count, sizeof *p.pool_id);
    p.refs = calloc(count, sizeof *p.refs);
    p.nrefs = calloc(count, sizeof *p.nrefs);
    if (!p.pool_id || !p.refs || !p.nrefs) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t node = 1; node < p.count; node++) {
        PyObject *rec = PyList_GET_ITEM(p.unit, node);
        Py_ssize_t n = record_refs(rec, p.count, NULL);
        if (n < 0) {
            PyErr_Format(PyExc_ValueError, "pool_unit: record %zd not as the encoder makes it", node);
            goto done;
        }
        if (n && !(p.refs[node] = malloc((size_t)n * sizeof **p.refs))) { PyErr_NoMemory(); goto done; }
        record_refs(rec, p.count, p.refs[node]);
        p.nrefs[node] = (uint32_t)n;
    }
    if (pool_components(&p)) goto done;
    out = PyList_New(p.count);
    for (Py_ssize_t node = 0; out && node < p.count; node++) {
        PyObject *id = PyLong_FromLongLong(p.pool_id[node]);
        if (!id) Py_CLEAR(out);
        else PyList_SET_ITEM(out, node, id);
    }
done:
    for (Py_ssize_t node = 0; p.refs && node < p.count; node++) free(p.refs[node]);
    free(p.refs);
    free(p.nrefs);
    free(p.pool_id);
    return out;
}
