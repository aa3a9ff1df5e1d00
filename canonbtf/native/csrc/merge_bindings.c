/* The keyed merge (dwarf/csrc/merge.c, plain C) for Python: the _core.KeyedMerge type,
 * a binding file of canonbtf.dwarf._core. It reads each entry or record tuple, or the
 * compiled encoder's packed entries (keys.PackedEntries), into cells (merge.h), with
 * every reference mapped into the parent's key ids; two entries
 * are one key exactly when their cells are equal, as the reference's tuples are equal:
 * ints by value, names (str) and any other value (a VAR's placement, an int past 64
 * bits, a token) by a Python dict that numbers them, which the merge reads through its
 * host callbacks. Anything not shaped as the encoder makes it (an item of the wrong
 * length, a non-str name) is a ValueError: keyed_core.py then runs the reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "core_bindings.h"
#include "kinds.h"
#include "merge.h"
#include "pytype.h"

/* Objects numbered in the order first seen: `ids` maps one to its number, `list` holds
 * them by number. */
typedef struct { PyObject *ids, *list; } numbering_t;

/* Names (str) numbered likewise, by their characters in C: a dict's insert (with an
 * int object made) was 545 instructions a name, 3 % of veth.ko's run; `key` is the
 * bytes interned: the str's width, then its characters. */
typedef struct { intern_t ids; VEC(uint8_t) key; PyObject *list; } name_numbering_t;

typedef struct {
    PyObject_HEAD
    merge_t merge;
    name_numbering_t names;
    numbering_t objs;              /* of other values and tokens */
    PyObject *unit_offsets;        /* per unit, as the worker gave it */
    merge_cells_t cells;           /* the entry or record being read */
    PyObject *placed;              /* during words(): the VARs' placements */
} merge_object_t;

/* How references of a tuple become cells: through a worker's map (ids past it stay), or
 * through a Python mapping (records: their final type ids). */
typedef struct { const int64_t *a; size_t n; PyObject *seq; } refmap_t;

#define SHAPE_ERROR(what) (PyErr_SetString(PyExc_ValueError, "keyed merge: " what), -1)

/* The merge's failure as the exception it is; NULL. */
static PyObject *raise_failure(merge_object_t *o)
{
    const merge_failure_t *f = &o->merge.failure;
    if (f->code == MERGE_NO_MEMORY) return PyErr_NoMemory();
    if (f->code == MERGE_DECLINED) PyErr_SetString(PyExc_ValueError, f->why);
    else if (f->code == MERGE_OUT_OF_ORDER) PyErr_SetString(PyExc_RuntimeError, f->why);
    else if (f->code == MERGE_NOT_LATIN1)  /* the codec's own UnicodeEncodeError */
        Py_XDECREF(PyUnicode_AsLatin1String(PyList_GET_ITEM(o->names.list, f->name)));
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, f->why);
    return NULL;
}

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

/* The number of name `s` (an exact str), numbering it when new; -1 with an exception
 * set. CPython keeps a str in its narrowest width, so equal strs give equal keys. */
static int64_t number_name(name_numbering_t *t, PyObject *s)
{
    size_t width = (size_t)PyUnicode_KIND(s), n = (size_t)PyUnicode_GET_LENGTH(s) * width;
    if (VEC_RESERVE(t->key, n + 1)) {
        PyErr_NoMemory();
        return -1;
    }
    t->key.a[0] = (uint8_t)width;
    memcpy(t->key.a + 1, PyUnicode_DATA(s), n);
    int is_new = 0;
    int64_t id = intern_bytes(&t->ids, t->key.a, n + 1, &is_new);
    if (id < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return is_new && PyList_Append(t->list, s) ? -1 : id;
}

/* -- the host callbacks (merge_host_t) --------------------------------------------------- */

static int name_text(void *ctx, int64_t name, merge_text_t *out)
{
    PyObject *s = PyList_GET_ITEM(((merge_object_t *)ctx)->names.list, name);
    int kind = PyUnicode_KIND(s);
    *out = (merge_text_t){PyUnicode_DATA(s), (size_t)PyUnicode_GET_LENGTH(s),
                          kind == PyUnicode_1BYTE_KIND ? 1 : kind == PyUnicode_2BYTE_KIND ? 2 : 4};
    return 0;
}

static PyObject *object_at(void *ctx, int64_t object)
{
    return PyList_GET_ITEM(((merge_object_t *)ctx)->objs.list, object);
}

static int object_truth(void *ctx, int64_t object)
{
    return PyObject_IsTrue(object_at(ctx, object));
}

static int64_t token(void *ctx, int is_enum, int64_t name, int is_union)
{
    merge_object_t *o = ctx;
    PyObject *s = PyList_GET_ITEM(o->names.list, name);
    PyObject *t = is_enum ? Py_BuildValue("(sO)", "enum", s)
                          : Py_BuildValue("(sOO)", "aggregate", s, is_union ? Py_True : Py_False);
    if (!t) return -1;
    int64_t id = number(&o->objs, t);
    Py_DECREF(t);
    return id;
}

static size_t object_count(void *ctx)
{
    return (size_t)PyList_GET_SIZE(((merge_object_t *)ctx)->objs.list);
}

static int object_bits(void *ctx, int64_t object, int exact, uint64_t *out)
{
    PyObject *v = object_at(ctx, object);
    if (!PyLong_Check(v)) return 1;
    *out = exact ? PyLong_AsUnsignedLongLong(v) : PyLong_AsUnsignedLongLongMask(v);
    if (*out != (uint64_t)-1 || !PyErr_Occurred()) return 0;
    if (!exact) return -1;
    PyErr_Clear();
    return 1;
}

/* A VAR's placement joins the `placed` list of words(): (type id, section, offset, size). */
static int placement(void *ctx, int64_t object, uint64_t type_id, uint64_t *linkage)
{
    PyObject *place = object_at(ctx, object);
    if (!PyTuple_Check(place)) return 1;
    if (PyTuple_GET_SIZE(place) != 4) return SHAPE_ERROR("a VAR's placement not of 4");
    PyObject *link = PyTuple_GET_ITEM(place, 0);
    if (!PyLong_Check(link)) return SHAPE_ERROR("a VAR's linkage that is no int");
    PyObject *row = Py_BuildValue("(KOOO)", (unsigned long long)type_id,
                                  PyTuple_GET_ITEM(place, 1), PyTuple_GET_ITEM(place, 2),
                                  PyTuple_GET_ITEM(place, 3));
    int rc = row ? PyList_Append(((merge_object_t *)ctx)->placed, row) : -1;
    Py_XDECREF(row);
    if (rc) return -1;
    *linkage = PyLong_AsUnsignedLongLongMask(link);
    return *linkage == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

static const merge_host_t HOST = {NULL, name_text, object_truth, token, object_count,
                                  object_bits, placement};

/* -- records and entries as cells --------------------------------------------------------- */

static int put(merge_object_t *o, int64_t tag, int64_t v)
{
    return merge_cells_push(&o->cells, tag, v) ? (PyErr_NoMemory(), -1) : 0;
}

static int put_name(merge_object_t *o, PyObject *s)
{
    if (!PyUnicode_CheckExact(s)) return SHAPE_ERROR("a name that is no str");
    int64_t id = number_name(&o->names, s);
    return id < 0 ? -1 : put(o, CELL_NAME, id);
}

static int put_value(merge_object_t *o, PyObject *v)
{
    if (PyLong_Check(v)) {
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (n == -1 && PyErr_Occurred()) return -1;
        if (!overflow) return put(o, CELL_INT, n);
    } else if (PyUnicode_CheckExact(v)) {
        return put_name(o, v);
    }
    int64_t id = number(&o->objs, v);
    return id < 0 ? -1 : put(o, CELL_OBJECT, id);
}

static int put_ref(merge_object_t *o, PyObject *r, const refmap_t *map)
{
    if (PyTuple_CheckExact(r) && !map->seq) {
        int64_t id = number(&o->objs, r);
        return id < 0 ? -1 : put(o, CELL_TOKEN, id);
    }
    if (!PyLong_Check(r)) return SHAPE_ERROR("a reference that is no int");
    if (map->seq) {
        PyObject *to = PyObject_GetItem(map->seq, r);
        if (!to) return -1;
        int rc = PyLong_Check(to) ? put_value(o, to) : SHAPE_ERROR("a type id that is no int");
        Py_DECREF(to);
        return rc;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(r, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow) return SHAPE_ERROR("a reference past 64 bits");
    return put(o, CELL_INT, v > 0 && (size_t)v < map->n ? map->a[v] : v);
}

static int put_role(merge_object_t *o, char role, PyObject *field, const refmap_t *map)
{
    if (role == 'N') return put_name(o, field);
    if (role == 'T') return put_ref(o, field, map);
    return put_value(o, field);
}

static int put_items(merge_object_t *o, long kind, PyObject *items, const refmap_t *map)
{
    if (!PyTuple_CheckExact(items)) return SHAPE_ERROR("items that are no tuple");
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    const char *roles = merge_item_roles(kind);
    Py_ssize_t width = (Py_ssize_t)strlen(roles);
    if (count && !width) return SHAPE_ERROR("items of a kind without items");
    if (put(o, CELL_INT, count)) return -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != width)
            return SHAPE_ERROR("an item not of its kind's shape");
        for (Py_ssize_t j = 0; j < width; j++)
            if (put_role(o, roles[j], PyTuple_GET_ITEM(item, j), map)) return -1;
    }
    return 0;
}

/* A record or entry tuple as cells in o->cells (merge.h's order). */
static int read_cells(merge_object_t *o, PyObject *rec, const refmap_t *map)
{
    o->cells.n = 0;
    if (!PyTuple_CheckExact(rec) || PyTuple_GET_SIZE(rec) != 6)
        return SHAPE_ERROR("a record that is no 6-tuple");
    PyObject *k = PyTuple_GET_ITEM(rec, 0);
    long kind = PyLong_Check(k) ? PyLong_AsLong(k) : -1;
    if (kind == -1 && PyErr_Occurred()) return -1;
    if (kind < 0 || kind > K_ENUM64) return SHAPE_ERROR("an unknown kind");
    if (put(o, CELL_INT, kind) || put_name(o, PyTuple_GET_ITEM(rec, 1))
        || put_value(o, PyTuple_GET_ITEM(rec, 2)))
        return -1;
    PyObject *sot = PyTuple_GET_ITEM(rec, 3), *extra = PyTuple_GET_ITEM(rec, 4);
    if (merge_typed_sot(kind) ? put_ref(o, sot, map) : put_value(o, sot)) return -1;
    if (kind == K_ARRAY) {
        if (!PyTuple_CheckExact(extra) || PyTuple_GET_SIZE(extra) != 3)
            return SHAPE_ERROR("an ARRAY without (elem, index, nelems)");
        for (int i = 0; i < 3; i++)
            if (put_role(o, i < 2 ? 'T' : 'V', PyTuple_GET_ITEM(extra, i), map)) return -1;
    } else if (put_value(o, extra)) {
        return -1;
    }
    return put_items(o, kind, PyTuple_GET_ITEM(rec, 5), map);
}

/* -- packed entries (keys.PackedEntries: the compiled encoder's) -------------------------
 * The same cells as read_cells makes of the tuples that PackedEntries.unpacked gives,
 * with the same errors: a NAME or OBJECT/TOKEN cell is taken as the object it numbers
 * in `names` or `objects`, numbered here where first met (the tuples' order) and
 * remembered per index, so each name costs one dict lookup per fragment, not one per
 * occurrence. */

typedef struct {
    const char *cells;             /* merge_cell_t, unaligned */
    size_t ncells;
    PyObject *names, *objects;     /* lists */
    int64_t *name_id, *object_id;  /* per index: its number here, or -1 */
} packed_t;

static merge_cell_t packed_cell(const packed_t *pk, size_t i)
{
    merge_cell_t c;
    memcpy(&c, pk->cells + i * sizeof c, sizeof c);
    return c;
}

/* Cell `c` as put_role takes the field of `role` it stands for. */
static int put_packed(merge_object_t *o, char role, merge_cell_t c, const packed_t *pk,
                      const refmap_t *map)
{
    if (c.tag == CELL_INT) {
        if (role == 'N') return SHAPE_ERROR("a name that is no str");
        int64_t v = role == 'T' && c.v > 0 && (uint64_t)c.v < map->n ? map->a[c.v] : c.v;
        return put(o, CELL_INT, v);
    }
    if (c.tag == CELL_NAME) {
        if (c.v < 0 || c.v >= PyList_GET_SIZE(pk->names))
            return SHAPE_ERROR("a name past the fragment's names");
        PyObject *s = PyList_GET_ITEM(pk->names, c.v);
        if (role == 'T' || !PyUnicode_CheckExact(s)) return put_role(o, role, s, map);
        if (pk->name_id[c.v] < 0 && (pk->name_id[c.v] = number_name(&o->names, s)) < 0)
            return -1;
        return put(o, CELL_NAME, pk->name_id[c.v]);
    }
    if (c.tag != CELL_OBJECT && c.tag != CELL_TOKEN) return SHAPE_ERROR("a cell of no tag");
    if (c.v < 0 || c.v >= PyList_GET_SIZE(pk->objects))
        return SHAPE_ERROR("a value past the fragment's objects");
    PyObject *v = PyList_GET_ITEM(pk->objects, c.v);
    if (role == 'N' || PyLong_Check(v) || PyUnicode_CheckExact(v)
        || (role == 'T' && !PyTuple_CheckExact(v)))
        return put_role(o, role, v, map);
    if (pk->object_id[c.v] < 0 && (pk->object_id[c.v] = number(&o->objs, v)) < 0) return -1;
    return put(o, role == 'T' ? CELL_TOKEN : CELL_OBJECT, pk->object_id[c.v]);
}

/* Cells [first, end) of `pk`, one entry, into o->cells (as read_cells). */
static int read_packed(merge_object_t *o, const packed_t *pk, size_t first, size_t end,
                       const refmap_t *map)
{
    o->cells.n = 0;
    merge_cell_t kind = packed_cell(pk, first);
    if (kind.tag != CELL_INT || kind.v < 0 || kind.v > K_ENUM64)
        return SHAPE_ERROR("an unknown kind");
    size_t fixed = kind.v == K_ARRAY ? 8 : 6;  /* to the item count, with it */
    if (end - first < fixed) return SHAPE_ERROR("an entry cut short");
    char roles_before[8] = {'V', 'N', 'V', merge_typed_sot(kind.v) ? 'T' : 'V', 'V'};
    if (kind.v == K_ARRAY) memcpy(roles_before + 4, "TTV", 3);
    if (put(o, CELL_INT, kind.v)) return -1;
    for (size_t i = 1; i + 1 < fixed; i++)
        if (put_packed(o, roles_before[i], packed_cell(pk, first + i), pk, map)) return -1;
    merge_cell_t count = packed_cell(pk, first + fixed - 1);
    const char *roles = merge_item_roles(kind.v);
    size_t width = strlen(roles), rest = end - first - fixed;
    if (count.tag != CELL_INT || count.v < 0 || (uint64_t)count.v > rest
        || (width ? (size_t)count.v * width != rest : count.v || rest))
        return SHAPE_ERROR("items not of their kind's shape");
    if (put(o, CELL_INT, count.v)) return -1;
    for (size_t i = 0; i < rest; i++)
        if (put_packed(o, roles[i % width], packed_cell(pk, first + fixed + i), pk, map))
            return -1;
    return 0;
}

/* The entries of `pk`, ending at each of `ends` (n u32s, unaligned), interned. */
static int add_packed_entries(merge_object_t *o, packed_t *pk, const char *ends, size_t n)
{
    size_t nnames = (size_t)PyList_GET_SIZE(pk->names);
    size_t nobjects = (size_t)PyList_GET_SIZE(pk->objects);
    pk->name_id = malloc((nnames + 1) * sizeof *pk->name_id);
    pk->object_id = malloc((nobjects + 1) * sizeof *pk->object_id);
    /* the names are distinct: most are new to a module's one fragment */
    if (!pk->name_id || !pk->object_id || intern_reserve(&o->names.ids, nnames)) {
        PyErr_NoMemory();
        return -1;
    }
    memset(pk->name_id, 0xff, nnames * sizeof *pk->name_id);        /* -1 */
    memset(pk->object_id, 0xff, nobjects * sizeof *pk->object_id);
    o->merge.received += n;
    size_t first = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t end;
        memcpy(&end, ends + i * sizeof end, sizeof end);
        if (end <= first || end > pk->ncells) return SHAPE_ERROR("an entry's end out of order");
        refmap_t map = {NULL, 0, NULL};
        map.a = merge_group_map(&o->merge, &map.n);
        if (read_packed(o, pk, first, end, &map)) return -1;
        if (merge_add_entry(&o->merge, o->cells.a, o->cells.n)) return raise_failure(o), -1;
        first = end;
    }
    return first == pk->ncells ? 0 : SHAPE_ERROR("cells past the last entry");
}

/* A fragment's PackedEntries (cells, ends, names, objects), each entry interned with
 * its references mapped. */
static int add_packed(merge_object_t *o, PyObject *packed)
{
    if (!PyTuple_Check(packed) || PyTuple_GET_SIZE(packed) != 4
        || !PyList_Check(PyTuple_GET_ITEM(packed, 2))
        || !PyList_Check(PyTuple_GET_ITEM(packed, 3))) {
        PyErr_SetString(PyExc_TypeError, "entries: a list, or (cells, ends, names, objects)");
        return -1;
    }
    Py_buffer cells, ends;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(packed, 0), &cells, PyBUF_SIMPLE)) return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(packed, 1), &ends, PyBUF_SIMPLE)) {
        PyBuffer_Release(&cells);
        return -1;
    }
    packed_t pk = {cells.buf, (size_t)cells.len / sizeof(merge_cell_t),
                   PyTuple_GET_ITEM(packed, 2), PyTuple_GET_ITEM(packed, 3), NULL, NULL};
    int rc = cells.len % (Py_ssize_t)sizeof(merge_cell_t) || ends.len % 4
        ? SHAPE_ERROR("cells or ends of a partial element")
        : add_packed_entries(o, &pk, ends.buf, (size_t)ends.len / 4);
    free(pk.name_id);
    free(pk.object_id);
    PyBuffer_Release(&cells);
    PyBuffer_Release(&ends);
    return rc;
}

/* merge_need, for a method that takes a list `arg` (TypeError naming `what` otherwise). */
static int need_list_in_state(merge_object_t *o, PyObject *arg, const char *what, int state)
{
    if (!PyList_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s: a list", what);
        return -1;
    }
    if (merge_need(&o->merge, state)) {
        raise_failure(o);
        return -1;
    }
    return 0;
}

/* strings()' or words()' `records` ([(record, type id map)]) each read into o->cells and
 * added after the safe keys' types: to the names in use (words NULL) or to `words`. 0, or
 * -1 with the exception set. */
static int add_records(merge_object_t *o, PyObject *records, merge_words_t *words)
{
    if (need_list_in_state(o, records, "records", words ? MERGE_PLACED : MERGE_EMITTED))
        return -1;
    merge_t *m = &o->merge;
    if (words ? merge_words_begin(m, words) : merge_strings_begin(m)) return raise_failure(o), -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        PyObject *pair = PyList_GET_ITEM(records, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
            return SHAPE_ERROR("records: (record, type ids)");
        refmap_t map = {NULL, 0, PyTuple_GET_ITEM(pair, 1)};
        if (read_cells(o, PyTuple_GET_ITEM(pair, 0), &map)) return -1;
        /* words(): the cells of a record name only names that strings() marked */
        if (words ? merge_words_add(m, o->cells.a, words) : merge_strings_add(m, o->cells.a))
            return raise_failure(o), -1;
    }
    return 0;
}

/* -- the methods ---------------------------------------------------------------------------- */

/* One list of a group's entries, each interned with its references mapped. */
static int add_entries(merge_object_t *o, PyObject *entries)
{
    if (!PyList_Check(entries)) return add_packed(o, entries);
    o->merge.received += (size_t)PyList_GET_SIZE(entries);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        refmap_t map = {NULL, 0, NULL};
        map.a = merge_group_map(&o->merge, &map.n);
        if (read_cells(o, PyList_GET_ITEM(entries, i), &map)) return -1;
        if (merge_add_entry(&o->merge, o->cells.a, o->cells.n)) return raise_failure(o), -1;
    }
    return 0;
}

/* A unit's (offset, array('I') of key ids). */
static int add_unit(merge_object_t *o, PyObject *pair)
{
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "unit keys: (offset, key ids)");
        return -1;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, 1), &b, PyBUF_FORMAT | PyBUF_ND)) return -1;
    int ok = b.itemsize == 4 && b.format && strcmp(b.format, "I") == 0;
    int rc = ok ? merge_add_unit(&o->merge, b.buf, (size_t)b.len / 4) : -1;
    PyBuffer_Release(&b);
    if (!ok) PyErr_SetString(PyExc_TypeError, "unit keys: an array of 'I'");
    else if (rc) raise_failure(o);
    return rc ? -1 : PyList_Append(o->unit_offsets, PyTuple_GET_ITEM(pair, 0));
}

PyDoc_STRVAR(Merge_add_group_doc,
             "add_group(entry lists, [(unit offset, key ids)]): one worker group's fragments "
             "(each list of entry tuples, or keys.PackedEntries).");
static PyObject *Merge_add_group(merge_object_t *o, PyObject *args)
{
    PyObject *lists, *unit_keys;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &lists, &PyList_Type, &unit_keys))
        return NULL;
    if (merge_begin_group(&o->merge)) return raise_failure(o);
    for (Py_ssize_t l = 0; l < PyList_GET_SIZE(lists); l++)
        if (add_entries(o, PyList_GET_ITEM(lists, l))) return NULL;
    if (merge_end_group(&o->merge)) return raise_failure(o);
    for (Py_ssize_t u = 0; u < PyList_GET_SIZE(unit_keys); u++)
        if (add_unit(o, PyList_GET_ITEM(unit_keys, u))) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(Merge_finish_doc,
             "finish(split=()) -> per key id, 1 where the key is unsafe (bytes); the tokens "
             "in `split` (as dedup.token_of makes them: names a module's base defines "
             "otherwise) count as ambiguous.");
static PyObject *Merge_finish(merge_object_t *o, PyObject *args)
{
    PyObject *split = NULL;
    if (!PyArg_ParseTuple(args, "|O", &split)) return NULL;
    PyObject *seq = split ? PySequence_Fast(split, "split: a sequence of tokens") : NULL;
    if (split && !seq) return NULL;
    Py_ssize_t n = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
    int64_t *tokens = malloc((size_t)(n + 1) * sizeof *tokens);
    int rc = tokens ? 0 : (PyErr_NoMemory(), -1);
    for (Py_ssize_t i = 0; i < n && !rc; i++)
        if ((tokens[i] = number(&o->objs, PySequence_Fast_GET_ITEM(seq, i))) < 0) rc = -1;
    if (!rc && merge_finish(&o->merge, tokens, (size_t)n)) rc = (raise_failure(o), -1);
    free(tokens);
    Py_XDECREF(seq);
    if (rc) return NULL;
    return PyBytes_FromStringAndSize((const char *)o->merge.unsafe.a,
                                     (Py_ssize_t)o->merge.unsafe.n);
}

PyDoc_STRVAR(Merge_redo_units_doc,
             "redo_units() -> offsets of the units that hold an unsafe key.");
static PyObject *Merge_redo_units(merge_object_t *o, PyObject *noargs)
{
    (void)noargs;
    if (merge_need(&o->merge, MERGE_FOUND)) return raise_failure(o);
    PyObject *out = PyList_New(0);
    for (size_t u = 0; out && u < o->merge.units.n; u++)
        if (merge_unit_redone(&o->merge, u)
            && PyList_Append(out, PyList_GET_ITEM(o->unit_offsets, (Py_ssize_t)u)))
            Py_CLEAR(out);
    return out;
}

PyDoc_STRVAR(Merge_lookup_doc,
             "lookup(entries) -> [0, parent key id or -2 per entry]: a records-mode pool's "
             "entries, numbered from 1 with references among them, as keys.py's `_parent_ids`.");
static PyObject *Merge_lookup(merge_object_t *o, PyObject *entries)
{
    if (need_list_in_state(o, entries, "entries", MERGE_FOUND)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(entries);
    int64_t *ids = malloc((size_t)(n + 1) * sizeof *ids);
    PyObject *out = ids ? PyList_New(n + 1) : PyErr_NoMemory();
    if (!out) { free(ids); return NULL; }
    ids[0] = 0;
    PyList_SET_ITEM(out, 0, PyLong_FromLong(0));
    for (Py_ssize_t i = 0; i < n; i++) {
        refmap_t map = {ids, (size_t)i + 1, NULL};
        PyObject *v = NULL;
        if (!read_cells(o, PyList_GET_ITEM(entries, i), &map)) {
            if (merge_find(&o->merge, o->cells.a, o->cells.n, &ids[i + 1])) raise_failure(o);
            else v = PyLong_FromLongLong(ids[i + 1]);
        }
        if (!v) { Py_DECREF(out); free(ids); return NULL; }
        PyList_SET_ITEM(out, i + 1, v);
    }
    free(ids);
    return out;
}

PyDoc_STRVAR(Merge_emit_doc,
             "emit(first_id) -> how many safe keys have a type of their own (type ids from "
             "first_id, in key order: 1, or split BTF's first); the others' references go to "
             "their token's definition.");
static PyObject *Merge_emit(merge_object_t *o, PyObject *first_id)
{
    unsigned long first = PyLong_AsUnsignedLong(first_id);
    if (first == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    if (first < 1 || first > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "first_id: from 1 to 2**32 - 1");
        return NULL;
    }
    if (merge_emit(&o->merge, (uint32_t)first)) return raise_failure(o);
    return PyLong_FromSize_t(o->merge.emitted.n);
}

PyDoc_STRVAR(Merge_strings_doc,
             "strings(records, start) -> the string table of the merged Btf (records_btf's): "
             "\"\" (unless split: start, the base's end, is not 0) then the names of its types, "
             "sorted; the safe keys' types first, then `records` ([(record, type id map)], "
             "appended after them).");
static PyObject *Merge_strings(merge_object_t *o, PyObject *args)
{
    PyObject *records;
    unsigned int start;
    if (!PyArg_ParseTuple(args, "OI", &records, &start) || add_records(o, records, NULL))
        return NULL;
    char *data;
    size_t len;
    if (merge_strings_table(&o->merge, start, &data, &len)) return raise_failure(o);
    PyObject *out = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
    free(data);
    return out;
}

PyDoc_STRVAR(Merge_words_doc,
             "words(records) -> (type section words, [(VAR id, section, offset, size)]): the "
             "safe keys' types then `records` (as given to strings()).");
static PyObject *Merge_words(merge_object_t *o, PyObject *records)
{
    merge_words_t out = {0};
    PyObject *result = NULL;
    if (!(o->placed = PyList_New(0))) return NULL;
    if (!add_records(o, records, &out))
        result = Py_BuildValue("(y#O)", (const char *)out.w.a,
                               (Py_ssize_t)(out.w.n * sizeof(uint32_t)), o->placed);
    VEC_FREE(out.w);
    Py_CLEAR(o->placed);
    return result;
}

static PyObject *Merge_received(merge_object_t *o, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(o->merge.received);
}

static PyObject *Merge_type_of(merge_object_t *o, void *closure)
{
    (void)closure;
    if (merge_need(&o->merge, MERGE_EMITTED)) return raise_failure(o);
    return PyBytes_FromStringAndSize((const char *)o->merge.type_of.a,
                                     (Py_ssize_t)(o->merge.type_of.n * sizeof(uint32_t)));
}

static int Merge_init(merge_object_t *o, PyObject *args, PyObject *kw)
{
    if (!PyArg_ParseTuple(args, ":KeyedMerge")) return -1;
    if (o->unit_offsets) return 0;
    merge_host_t host = HOST;
    host.ctx = o;
    merge_init(&o->merge, &host);
    o->unit_offsets = PyList_New(0);
    o->names.list = PyList_New(0);
    if (!o->unit_offsets || !o->names.list || numbering_init(&o->objs)) return -1;
    return 0;
}

static void Merge_dealloc(merge_object_t *o)
{
    intern_free(&o->names.ids);
    VEC_FREE(o->names.key);
    Py_XDECREF(o->names.list);
    numbering_free(&o->objs);
    Py_XDECREF(o->unit_offsets);
    merge_free(&o->merge);
    VEC_FREE(o->cells);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyMethodDef Merge_methods[] = {
    METHOD_ROW(Merge, add_group, METH_VARARGS),
    METHOD_ROW(Merge, finish, METH_VARARGS),
    METHOD_ROW(Merge, redo_units, METH_NOARGS),
    METHOD_ROW(Merge, lookup, METH_O),
    METHOD_ROW(Merge, emit, METH_O),
    METHOD_ROW(Merge, strings, METH_VARARGS),
    METHOD_ROW(Merge, words, METH_O),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Merge_getset[] = {
    {"received", (getter)Merge_received, NULL, "entries received", NULL},
    {"type_of", (getter)Merge_type_of, NULL, "per key id, its type id (u32 bytes)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject MergeType = {
    PLAIN_TYPE_HEAD("canonbtf.dwarf._core.KeyedMerge", merge_object_t, Merge_dealloc,
                    "The keyed merge's parent side (keys.py KeyedMerge; dwarf/keyed_core.py)."),
    .tp_methods = Merge_methods,
    .tp_getset = Merge_getset,
    .tp_init = (initproc)Merge_init,
    .tp_new = PyType_GenericNew,
};
