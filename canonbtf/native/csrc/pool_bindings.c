/* canonbtf.dwarf._core's functions over plain C: relocate (dwarf/csrc/reloc.c),
 * scan_symbols (symtab.c) and pool_unit (pool.c); the arguments made plain arrays and the
 * results made the reference's objects. A binding file of canonbtf.dwarf._core. */
#include "core_bindings.h"

#include "kinds.h"
#include "pool.h"
#include "reloc.h"
#include "symtab.h"

#include <stdlib.h>
#include <string.h>

/* ---- relocate ---- */

/* The relocation types `sizes` lists (type -> 4 or 8 bytes); -1 when it is not a dict of
 * at most RELOC_MAX_TYPES such pairs (a ValueError is set). */
static int known_types(PyObject *sizes, reloc_type_t *types)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    int n = 0;
    while (PyDict_Next(sizes, &pos, &key, &value)) {
        unsigned long type = PyLong_AsUnsignedLong(key);
        long width = PyLong_AsLong(value);
        if (PyErr_Occurred()) return -1;
        if (n == RELOC_MAX_TYPES || type > 0xFFFFFFFFul || (width != 4 && width != 8)) {
            PyErr_SetString(PyExc_ValueError, "relocation sizes: at most 8 types, of 4 or 8 bytes");
            return -1;
        }
        types[n].type = (uint32_t)type;
        types[n++].width = (int)width;
    }
    return n;
}

/* relocate(data, entries, symtab, little_endian, sizes) -> patched bytes, or None when an
 * entry has a type `sizes` (type -> 4 or 8) does not list, a symbol past the symbol
 * table, or a place past the section's end. */
PyObject *core_relocate(PyObject *self, PyObject *args)
{
    Py_buffer data, entries, symtab;
    int little;
    PyObject *sizes;
    if (!PyArg_ParseTuple(args, "y*y*y*pO!", &data, &entries, &symtab, &little,
                          &PyDict_Type, &sizes))
        return NULL;
    reloc_type_t types[RELOC_MAX_TYPES];
    int ntypes = known_types(sizes, types);
    PyObject *out = ntypes < 0 ? NULL : PyBytes_FromStringAndSize(data.buf, data.len);
    if (out && relocate_section((uint8_t *)PyBytes_AS_STRING(out), (size_t)data.len,
                                entries.buf, (size_t)entries.len, symtab.buf,
                                (size_t)symtab.len, little, types, ntypes)) {
        Py_DECREF(out);
        Py_INCREF(Py_None);
        out = Py_None;
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&entries);
    PyBuffer_Release(&symtab);
    return out;
}

/* ---- scan_symbols ---- */

/* Adds `item` to the container `dict[key]`, made by `make` when absent. */
static int add_to(PyObject *dict, PyObject *key, PyObject *(*make)(PyObject *),
                  int (*add)(PyObject *, PyObject *), PyObject *item)
{
    PyObject *container = PyDict_GetItemWithError(dict, key);
    if (!container) {
        if (PyErr_Occurred()) return -1;
        container = make(NULL);
        if (!container || PyDict_SetItem(dict, key, container) < 0) {
            Py_XDECREF(container);
            return -1;
        }
        Py_DECREF(container);  /* the dict holds it */
    }
    return add(container, item);
}

static PyObject *new_list(PyObject *unused) { return PyList_New(0); }

/* One symbol into the three results (as the loop of symbols.py `scan_symbols`); its name
 * latin-1, as symbols.py decodes it. */
static int take_symbol(const symbol_entry_t *s, const uint8_t *strtab, PyObject *functions,
                       PyObject *objects, PyObject *btf_ids)
{
    PyObject *name = PyUnicode_DecodeLatin1((const char *)strtab + s->name_at,
                                            (Py_ssize_t)s->name_len, NULL);
    PyObject *item = NULL, *key = NULL;
    int rc = name ? 0 : -1;
    if (!rc && (s->flags & SYMBOL_BTF_ID)) {
        item = Py_BuildValue("(IKKO)", s->shndx, (unsigned long long)s->value,
                             (unsigned long long)s->size, name);
        rc = item ? PyList_Append(btf_ids, item) : -1;
        Py_CLEAR(item);
    }
    if (!rc && (s->flags & SYMBOL_FUNCTION)) {
        item = PyLong_FromUnsignedLongLong(s->value);
        /* PySet_Add fills a brand-new frozenset: no one else sees these until we return. */
        rc = item ? add_to(functions, name, PyFrozenSet_New, PySet_Add, item) : -1;
    } else if (!rc && (s->flags & SYMBOL_OBJECT)) {
        key = Py_BuildValue("(OK)", name, (unsigned long long)s->value);
        item = Py_BuildValue("(IK)", s->shndx, (unsigned long long)s->size);
        rc = key && item ? add_to(objects, key, new_list, PyList_Append, item) : -1;
    }
    Py_XDECREF(name);
    Py_XDECREF(item);
    Py_XDECREF(key);
    return rc;
}

/* The objects' places sorted, as the reference leaves them. */
static int sort_places(PyObject *objects)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(objects, &pos, &key, &value))
        if (PyList_Sort(value) < 0) return -1;
    return 0;
}

/* scan_symbols(data, strtab, elf64, little_endian, btf_ids_index, alloc) ->
 * (functions, objects, btf_id_symbols), as symbols.py `scan_symbols`. */
PyObject *core_scan_symbols(PyObject *self, PyObject *args)
{
    Py_buffer data, strtab, alloc;
    int elf64, little;
    long btf_ids_index;
    if (!PyArg_ParseTuple(args, "y*y*ppl" "y*", &data, &strtab, &elf64, &little,
                          &btf_ids_index, &alloc))
        return NULL;
    symbol_entries_t kept = {0};
    PyObject *functions = PyDict_New(), *objects = PyDict_New(), *btf_ids = PyList_New(0);
    PyObject *out = NULL;
    if (!functions || !objects || !btf_ids) goto done;
    if (scan_symbol_table(data.buf, (size_t)data.len, strtab.buf, (size_t)strtab.len, elf64,
                          little, btf_ids_index, alloc.buf, (size_t)alloc.len, &kept)) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < kept.n; i++)
        if (take_symbol(&kept.a[i], strtab.buf, functions, objects, btf_ids) < 0) goto done;
    if (sort_places(objects) == 0)
        out = PyTuple_Pack(3, functions, objects, btf_ids);
done:
    free(kept.a);
    Py_XDECREF(functions);
    Py_XDECREF(objects);
    Py_XDECREF(btf_ids);
    PyBuffer_Release(&data);
    PyBuffer_Release(&strtab);
    PyBuffer_Release(&alloc);
    return out;
}

/* ---- pool_unit ---- */

/* The pool's own state (fragment.TypePool's) and the unit being pooled: pool.h's store. */
typedef struct {
    PyObject *unit;            /* the unit's records (a list, [0] unused) */
    PyObject *records, *acyclic, *cyclic, *names, *label_ranks;
} pool_state_t;

/* Whether size_or_type holds a type id, and the roles (Name, Type, Value) of an item's
 * fields (kinds.KINDS), of a kind record_refs checked. */
static int typed_sot(long kind) { return kind_in(KINDS_TYPED, (uint32_t)kind); }
static const char *item_roles(long kind) { return kind_item_roles((uint32_t)kind); }

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
    if (typed_sot(kind)) slots[n++] = PyTuple_GET_ITEM(rec, 3);
    PyObject *extra = PyTuple_GET_ITEM(rec, 4), *items = PyTuple_GET_ITEM(rec, 5);
    if (kind == K_ARRAY) {
        if (!PyTuple_CheckExact(extra) || PyTuple_GET_SIZE(extra) != 3) return -1;
        slots[n++] = PyTuple_GET_ITEM(extra, 0);
        slots[n++] = PyTuple_GET_ITEM(extra, 1);
    }
    if (!PyTuple_CheckExact(items)) return -1;
    const char *roles = item_roles(kind);
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
static PyObject *interned(pool_state_t *p, PyObject *name)
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

/* A record's items with every reference r as map[r] and names interned. */
static PyObject *remap_items(pool_state_t *p, PyObject *items, const char *roles,
                             const int64_t *map, int64_t first)
{
    Py_ssize_t width = (Py_ssize_t)strlen(roles), n = PyTuple_GET_SIZE(items);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t k = 0; out && k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k), *copy = PyTuple_New(width);
        for (Py_ssize_t j = 0; copy && j < width; j++) {
            PyObject *f = PyTuple_GET_ITEM(item, j), *g;
            if (roles[j] == 'T') g = mapped(f, map, first);
            else if (roles[j] == 'N') { g = interned(p, f); Py_XINCREF(g); }
            else { g = f; Py_INCREF(g); }
            if (!g) Py_CLEAR(copy);
            else PyTuple_SET_ITEM(copy, j, g);
        }
        if (!copy) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, k, copy);
    }
    return out;
}

/* The record with every reference r as map[r] and names interned (RECORD_REMAP then
 * RECORD_RENAME; the shape was checked by record_refs). */
static PyObject *remap_record(pool_state_t *p, PyObject *rec, const int64_t *map, int64_t first)
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
        if (i == 3 && typed_sot(kind)) {
            y = mapped(x, map, first);
        } else if (i == 4 && kind == K_ARRAY) {
            PyObject *a = mapped(PyTuple_GET_ITEM(x, 0), map, first), *b = mapped(PyTuple_GET_ITEM(x, 1), map, first);
            if (a && b) y = PyTuple_Pack(3, a, b, PyTuple_GET_ITEM(x, 2));
            Py_XDECREF(a);
            Py_XDECREF(b);
        } else if (i == 5) {
            y = remap_items(p, x, item_roles(kind), map, first);
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

static int append_record(pool_state_t *p, PyObject *rec, int64_t *id)
{
    *id = PyList_GET_SIZE(p->records);
    return PyList_Append(p->records, rec);
}

/* pool.h's acyclic: _pool_acyclic. */
static int store_acyclic(void *ctx, int32_t node, const int64_t *pool_id, int64_t *id)
{
    pool_state_t *p = ctx;
    PyObject *rec = remap_record(p, PyList_GET_ITEM(p->unit, node), pool_id, 0);
    if (!rec) return -1;
    PyObject *found = PyDict_GetItemWithError(p->acyclic, rec);
    int rc = -1;
    if (found) {
        *id = PyLong_AsLongLong(found);
        rc = *id == -1 && PyErr_Occurred() ? -1 : 0;
    } else if (!PyErr_Occurred()) {
        int64_t at;
        PyObject *key = NULL;
        if (!append_record(p, rec, &at) && (key = PyLong_FromLongLong(at))
            && !PyDict_SetItem(p->acyclic, rec, key)) {
            *id = at;
            rc = 0;
        }
        Py_XDECREF(key);
    }
    Py_DECREF(rec);
    return rc;
}

/* The reference's label_ranks on a cycle's n member records: a list of n ranks (not yet
 * checked to be in range). A new reference, NULL with the exception set. */
static PyObject *label_ranks_of(pool_state_t *p, PyObject *members, int32_t n)
{
    PyObject *ranks = PyObject_CallOneArg(p->label_ranks, members);
    if (ranks && (!PyList_CheckExact(ranks) || PyList_GET_SIZE(ranks) != n)) {
        PyErr_SetString(PyExc_TypeError, "label_ranks: a rank per record");
        Py_CLEAR(ranks);
    }
    return ranks;
}

/* The pool ids of a cycle's classes: its canonical form `key` met before, or its records
 * appended now (the members' references -1 - class as the new ids). A new reference. */
static PyObject *cycle_ids(pool_state_t *p, PyObject *key, int32_t classes)
{
    PyObject *ids = PyDict_GetItemWithError(p->cyclic, key);
    if (ids || PyErr_Occurred()) {
        Py_XINCREF(ids);
        return ids;
    }
    Py_ssize_t first = PyList_GET_SIZE(p->records);
    if (!(ids = PyTuple_New(classes))) return NULL;
    for (int32_t c = 0; c < classes; c++) {
        PyObject *id = PyLong_FromSsize_t(first + c);
        if (!id) goto fail;
        PyTuple_SET_ITEM(ids, c, id);
    }
    for (int32_t c = 0; c < classes; c++) {
        PyObject *rec = remap_record(p, PyTuple_GET_ITEM(key, c), NULL, first);
        int64_t at;
        int bad = !rec || append_record(p, rec, &at);
        Py_XDECREF(rec);
        if (bad) goto fail;
    }
    if (!PyDict_SetItem(p->cyclic, key, ids)) return ids;
fail:
    Py_DECREF(ids);
    return NULL;
}

/* `ask` (label_ranks_of or cycle_ids) on the records of the unit's `nodes`, their
 * references as pool_id gives them, as a list or a tuple: its answer (a new reference), or
 * NULL with the exception set. */
static PyObject *ask_about_records(pool_state_t *p, const int32_t *nodes, int32_t n,
                                   const int64_t *pool_id, int as_tuple,
                                   PyObject *(*ask)(pool_state_t *, PyObject *, int32_t))
{
    PyObject *records = as_tuple ? PyTuple_New(n) : PyList_New(n);
    for (int32_t i = 0; records && i < n; i++) {
        PyObject *rec = remap_record(p, PyList_GET_ITEM(p->unit, nodes[i]), pool_id, 0);
        if (!rec) Py_CLEAR(records);
        else if (as_tuple) PyTuple_SET_ITEM(records, i, rec);
        else PyList_SET_ITEM(records, i, rec);
    }
    PyObject *answer = records ? ask(p, records, n) : NULL;
    Py_XDECREF(records);
    return answer;
}

/* pool.h's label_ranks: the reference's label_ranks on the members' records. */
static int store_label_ranks(void *ctx, const int32_t *members, int32_t n,
                             const int64_t *pool_id, uint32_t *rank)
{
    PyObject *ranks = ask_about_records(ctx, members, n, pool_id, 0, label_ranks_of);
    if (!ranks) return -1;
    int32_t i = 0;
    long r;
    while (i < n && (r = PyLong_AsLong(PyList_GET_ITEM(ranks, i))) >= 0 && r < n)
        rank[i++] = (uint32_t)r;
    if (i < n && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "label_ranks: a bad rank");
    Py_DECREF(ranks);
    return i < n ? -1 : 0;
}

/* pool.h's cycle: _pool_cycle's canonical form hash-consed. */
static int store_cycle(void *ctx, const int32_t *representative, int32_t classes,
                       const int64_t *pool_id, int64_t *out)
{
    PyObject *ids = ask_about_records(ctx, representative, classes, pool_id, 1, cycle_ids);
    if (!ids) return -1;
    int rc = 0;
    for (int32_t c = 0; !rc && c < classes; c++) {
        out[c] = PyLong_AsLongLong(PyTuple_GET_ITEM(ids, c));
        rc = out[c] == -1 && PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(ids);
    return rc;
}

/* The unit's references as pool.h's graph (CSR), each record's shape checked first;
 * 0, or -1 with the exception set. */
static int unit_graph(PyObject *unit, Py_ssize_t count, size_t *ref_start, int32_t **refs)
{
    ref_start[0] = ref_start[count ? 1 : 0] = 0;
    for (Py_ssize_t node = 1; node < count; node++) {
        Py_ssize_t n = record_refs(PyList_GET_ITEM(unit, node), count, NULL);
        if (n < 0) {
            PyErr_Format(PyExc_ValueError, "pool_unit: record %zd not as the encoder makes it", node);
            return -1;
        }
        ref_start[node + 1] = ref_start[node] + (size_t)n;
    }
    size_t total = ref_start[count];
    if (!(*refs = malloc((total ? total : 1) * sizeof **refs))) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t node = 1; node < count; node++)
        record_refs(PyList_GET_ITEM(unit, node), count, *refs + ref_start[node]);
    return 0;
}

/* pool_unit(records, pool records, acyclic, cyclic, names, label_ranks) -> pool ids */
PyObject *core_pool_unit(PyObject *self, PyObject *args)
{
    pool_state_t p;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O", &PyList_Type, &p.unit, &PyList_Type, &p.records,
                          &PyDict_Type, &p.acyclic, &PyDict_Type, &p.cyclic, &PyDict_Type,
                          &p.names, &p.label_ranks))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(p.unit);
    if (count > INT32_MAX / 2)
        return PyErr_Format(PyExc_ValueError, "pool_unit: a unit of %zd records", count);
    size_t *ref_start = malloc(((size_t)count + 1) * sizeof *ref_start);
    int64_t *pool_id = malloc((count ? (size_t)count : 1) * sizeof *pool_id);
    int32_t *refs = NULL;
    PyObject *out = NULL;
    if (!ref_start || !pool_id) {
        PyErr_NoMemory();
        goto done;
    }
    if (unit_graph(p.unit, count, ref_start, &refs)) goto done;
    pool_graph_t graph = {(int32_t)count, ref_start, refs};
    pool_store_t store = {&p, store_acyclic, store_label_ranks, store_cycle};
    int rc = pool_unit(&graph, &store, pool_id);
    if (rc == POOL_NO_MEMORY) PyErr_NoMemory();
    if (rc) goto done;
    out = PyList_New(count);
    for (Py_ssize_t node = 0; out && node < count; node++) {
        PyObject *id = PyLong_FromLongLong(pool_id[node]);
        if (!id) Py_CLEAR(out);
        else PyList_SET_ITEM(out, node, id);
    }
done:
    free(ref_start);
    free(pool_id);
    free(refs);
    return out;
}
