/* canonbtf.dwarf._core's binding: the UnitEncoder type over the plain encoder
 * (dwarf/csrc/core.h: read.c, convert.c, keys.c), and the module init with its method
 * table (the other bindings' functions and types: core_bindings.h).
 *
 * No global state: everything a unit needs lives in the encoder object. The GIL is
 * held throughout: each worker is a process of its own running one unit at a time,
 * and the encoder's calls (encoder_calls_t) ask the symbol table here, in Python.
 */
#include "core.h"
#include "core_bindings.h"
#include "pytype.h"
#include <stdlib.h>
#include <string.h>

enum { NSECTIONS = 8 };

/* New entries packed (keys.PackedEntries): merge.h's cells, each entry's end, and the
 * names and other values the cells number, each listed once. */
typedef struct {
    merge_cells_t cells;
    VEC(uint32_t) ends;
    PyObject *names;           /* list of str */
    PyObject *objects;         /* list: tokens, VAR places, ints past 64 bits */
    VEC(uint32_t) name_slot;   /* by name id: 1 + its index in `names`, 0 when not there */
    VEC(uint32_t) token_slot;  /* by token id: 1 + its index in `objects`, 0 likewise */
} packing_t;

/* (cells, ends, names, objects) of what `p` packed, which starts again empty; a new
 * reference, or NULL. */
static PyObject *packing_take(packing_t *p)
{
    PyObject *names = PyList_New(0), *objects = PyList_New(0);
    PyObject *out = !names || !objects ? NULL
        : Py_BuildValue("(y#y#OO)",  /* y# of NULL would be None */
                        p->cells.a ? (const char *)p->cells.a : "",
                        (Py_ssize_t)(p->cells.n * sizeof *p->cells.a),
                        p->ends.a ? (const char *)p->ends.a : "",
                        (Py_ssize_t)(p->ends.n * sizeof *p->ends.a), p->names, p->objects);
    if (!out) {
        Py_XDECREF(names);
        Py_XDECREF(objects);
        return NULL;
    }
    Py_SETREF(p->names, names);
    Py_SETREF(p->objects, objects);
    p->cells.n = p->ends.n = 0;
    if (p->name_slot.n) memset(p->name_slot.a, 0, p->name_slot.n * sizeof *p->name_slot.a);
    if (p->token_slot.n) memset(p->token_slot.a, 0, p->token_slot.n * sizeof *p->token_slot.a);
    return out;
}

/* The plain encoder with what its Python face holds: the sections' buffers, the symbol
 * table's answers, the objects made (names, tokens: by the core's ids) and the fragment
 * until take_fragment. */
typedef struct {
    PyObject_HEAD
    encoder_t core;
    Py_buffer sections[NSECTIONS];
    PyObject *functions;       /* dict name -> frozenset of addresses, or None */
    PyObject *kfuncs;          /* set of names, or None */
    PyObject *place_variable;  /* callable or None */
    PyObject *tag_names;       /* dict tag -> name */
    PyObject *fallback;        /* the exception class for "read this unit in Python" */
    PyObject *places;          /* list: this unit's VAR places, then extras, by slot */
    PyObject *place_keys;      /* list: this unit's reprs of VAR extras (var_key) */
    PyObject *unit_keys;       /* list of (unit offset, bytes of u32 key ids) */
    VEC(PyObject *) name_objs; /* by name id */
    packing_t packed;          /* the new entries until take_fragment */
} UnitEncoder;

static void clear_objects(PyObject **objects, size_t n)
{
    for (size_t i = 0; i < n; i++) Py_XDECREF(objects[i]);
    free(objects);
}

static void Encoder_dealloc(UnitEncoder *e)
{
    for (int i = 0; i < NSECTIONS; i++)
        if (e->sections[i].obj) PyBuffer_Release(&e->sections[i]);
    Py_XDECREF(e->functions);
    Py_XDECREF(e->kfuncs);
    Py_XDECREF(e->place_variable);
    Py_XDECREF(e->tag_names);
    Py_XDECREF(e->fallback);
    Py_XDECREF(e->places);
    Py_XDECREF(e->place_keys);
    Py_XDECREF(e->unit_keys);
    clear_objects(e->name_objs.a, e->name_objs.n);
    Py_XDECREF(e->packed.names);
    Py_XDECREF(e->packed.objects);
    VEC_FREE(e->packed.cells);
    VEC_FREE(e->packed.ends);
    VEC_FREE(e->packed.name_slot);
    VEC_FREE(e->packed.token_slot);
    encoder_free(&e->core);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

/* -- Python objects of names, records and entries --------------------------------- */

static PyObject *py_from_i128(i128 v)
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

/* The str of name `id` (the core's name id of `name`: latin-1, as the reference
 * decodes), shared per distinct name; a borrowed reference. */
static PyObject *name_of_id(UnitEncoder *e, int64_t id, name_t name)
{
    if (id < 0) return PyErr_NoMemory();
    while (e->name_objs.n <= (size_t)id)
        if (VEC_PUSH(e->name_objs, (PyObject *)NULL)) return PyErr_NoMemory();
    PyObject *obj = e->name_objs.a[id];
    if (!obj) {
        obj = PyUnicode_DecodeLatin1((const char *)name.p, name.len, NULL);
        if (!obj) return NULL;
        e->name_objs.a[id] = obj;
    }
    return obj;
}

static PyObject *name_object(UnitEncoder *e, name_t name)
{
    return name_of_id(e, encoder_name_id(&e->core, name), name);
}

/* An item of a record of `kind`: (name, type, offset), (name, type) or (name, value). */
static PyObject *item_object(UnitEncoder *e, int kind, const item_t *it)
{
    PyObject *name = name_object(e, it->name), *item = NULL;
    if (!name) return NULL;
    if (kind == K_STRUCT || kind == K_UNION) {
        PyObject *t = PyLong_FromLongLong(it->type), *o = py_from_i128(it->value);
        if (t && o) item = PyTuple_Pack(3, name, t, o);
        Py_XDECREF(t);
        Py_XDECREF(o);
    } else if (kind == K_FUNC_PROTO) {
        PyObject *t = PyLong_FromLongLong(it->type);
        if (t) item = PyTuple_Pack(2, name, t);
        Py_XDECREF(t);
    } else {
        PyObject *v = py_from_i128(it->value);
        if (v) item = PyTuple_Pack(2, name, v);
        Py_XDECREF(v);
    }
    return item;
}

/* The record's extra field: the VAR's place, the ARRAY's (elem, index, nelems), else
 * the number. */
static PyObject *extra_object(UnitEncoder *e, const rec_t *r)
{
    if (r->kind == K_VAR) {
        PyObject *extra = PyList_GET_ITEM(e->places, r->var_extra);
        Py_INCREF(extra);
        return extra;
    }
    if (r->kind != K_ARRAY) return py_from_i128(r->extra);
    PyObject *elem = PyLong_FromLongLong(r->elem), *index = PyLong_FromLongLong(r->index);
    PyObject *nelems = py_from_i128(r->nelems), *extra = NULL;
    if (elem && index && nelems) extra = PyTuple_Pack(3, elem, index, nelems);
    Py_XDECREF(elem);
    Py_XDECREF(index);
    Py_XDECREF(nelems);
    return extra;
}

/* (kind, name, kflag, size_or_type, extra, items), references as record numbers. */
static PyObject *record_object(UnitEncoder *e, const rec_t *r)
{
    int kind = r->kind;
    PyObject *name = name_object(e, r->name);
    if (!name) return NULL;
    Py_INCREF(name);
    PyObject *sot = kind_in(KINDS_SINGLE_REF, (uint32_t)kind) || kind == K_FUNC_PROTO
        ? PyLong_FromLongLong((int64_t)r->sot) : py_from_i128(r->sot);
    PyObject *extra = sot ? extra_object(e, r) : NULL;
    PyObject *items = extra ? PyTuple_New(r->nitems) : NULL;
    for (uint32_t i = 0; items && i < r->nitems; i++) {
        PyObject *item = item_object(e, kind, &e->core.items.a[r->item_first + i]);
        if (!item) { Py_CLEAR(items); break; }
        PyTuple_SET_ITEM(items, i, item);
    }
    PyObject *out = NULL;
    PyObject *k = PyLong_FromLong(kind), *kflag = PyLong_FromLong(r->kflag);
    if (k && kflag && items)
        out = PyTuple_Pack(6, k, name, kflag, sot, extra, items);
    Py_XDECREF(k);
    Py_XDECREF(kflag);
    Py_DECREF(name);
    Py_XDECREF(sot);
    Py_XDECREF(extra);
    Py_XDECREF(items);
    return out;
}

/* -- new entries, packed --------------------------------------------------------------
 * An entry is the cells merge.h describes (the merge reads them without a tuple made
 * for each entry, then unpacked for each field: 19 M of veth.ko's 233 M instructions);
 * keys.PackedEntries.unpacked gives the tuples keys.py makes. A reference is an INT (0
 * void, -1 a cycle, else the key id) or a TOKEN. */

static int pack(UnitEncoder *e, int64_t tag, int64_t v)
{
    return merge_cells_push(&e->packed.cells, tag, v) ? (PyErr_NoMemory(), -1) : 0;
}

/* `o`'s index in `list` through `slot` (1 + index, 0: not there yet: appended). */
static int pack_listed(UnitEncoder *e, int64_t tag, uint32_t *slot, PyObject *list,
                       PyObject *o)
{
    if (!*slot) {
        if (PyList_Append(list, o)) return -1;
        *slot = (uint32_t)PyList_GET_SIZE(list);
    }
    return pack(e, tag, (int64_t)*slot - 1);
}

static int pack_name(UnitEncoder *e, name_t name)
{
    int64_t id = encoder_name_id(&e->core, name);
    PyObject *s = name_of_id(e, id, name);
    if (!s) return -1;
    packing_t *p = &e->packed;
    while (p->name_slot.n <= (size_t)id)
        if (VEC_PUSH(p->name_slot, 0u)) return PyErr_NoMemory(), -1;
    return pack_listed(e, CELL_NAME, &p->name_slot.a[id], p->names, s);
}

/* `o` (a borrowed reference) as an OBJECT cell of its own. */
static int pack_object(UnitEncoder *e, PyObject *o)
{
    PyObject *objects = e->packed.objects;
    return PyList_Append(objects, o) ? -1
         : pack(e, CELL_OBJECT, PyList_GET_SIZE(objects) - 1);
}

static int pack_int(UnitEncoder *e, i128 v)
{
    if (v >= INT64_MIN && v <= INT64_MAX) return pack(e, CELL_INT, (int64_t)v);
    PyObject *o = py_from_i128(v);
    int rc = o ? pack_object(e, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/* A token's tuple ("aggregate", name, is_union) or ("enum", name), made once per token
 * id. */
static int pack_token(UnitEncoder *e, uint32_t id)
{
    packing_t *p = &e->packed;
    while (p->token_slot.n <= id)
        if (VEC_PUSH(p->token_slot, 0u)) return PyErr_NoMemory(), -1;
    if (p->token_slot.a[id]) return pack(e, CELL_TOKEN, (int64_t)p->token_slot.a[id] - 1);
    const token_t *token = &e->core.token_list.a[id];
    PyObject *name = name_object(e, token->name);
    PyObject *t = !name ? NULL : token->aggregate
        ? Py_BuildValue("(sOO)", "aggregate", name, token->is_union ? Py_True : Py_False)
        : Py_BuildValue("(sO)", "enum", name);
    int rc = t ? pack_listed(e, CELL_TOKEN, &p->token_slot.a[id], p->objects, t) : -1;
    Py_XDECREF(t);
    return rc;
}

static int pack_part(UnitEncoder *e, const part_t **parts)
{
    part_t p = *(*parts)++;
    switch (p.tag) {
    case P_VOID: return pack(e, CELL_INT, 0);
    case P_KEY: return pack(e, CELL_INT, p.id);
    case P_CYCLE: return pack(e, CELL_INT, -1);
    }
    return pack_token(e, p.id);
}

/* Record `r`'s entry, its references the parts from `parts` on, in merge.h's order. */
static int pack_entry(UnitEncoder *e, const rec_t *r, const part_t *parts)
{
    int kind = r->kind;
    if (pack(e, CELL_INT, kind) || pack_name(e, r->name) || pack(e, CELL_INT, r->kflag))
        return -1;
    if (kind_in(KINDS_SINGLE_REF, (uint32_t)kind) || kind == K_FUNC_PROTO
        ? pack_part(e, &parts) : pack_int(e, r->sot))
        return -1;
    if (kind == K_VAR) {
        if (pack_object(e, PyList_GET_ITEM(e->places, r->var_extra))) return -1;
    } else if (kind == K_ARRAY) {
        if (pack_part(e, &parts) || pack_part(e, &parts) || pack_int(e, r->nelems)) return -1;
    } else if (pack_int(e, r->extra)) {
        return -1;
    }
    if (pack(e, CELL_INT, r->nitems)) return -1;
    for (uint32_t i = 0; i < r->nitems; i++) {
        const item_t *it = &e->core.items.a[r->item_first + i];
        if (pack_name(e, it->name)) return -1;
        int rc = kind == K_STRUCT || kind == K_UNION
            ? pack_part(e, &parts) || pack_int(e, it->value)
            : kind == K_FUNC_PROTO ? pack_part(e, &parts) : pack_int(e, it->value);
        if (rc) return -1;
    }
    size_t end = e->packed.cells.n;
    if (end > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a fragment of more than 2**32 cells");
        return -1;
    }
    return VEC_PUSH(e->packed.ends, (uint32_t)end) ? (PyErr_NoMemory(), -1) : 0;
}

/* The unit's new entries (as keys.py makes them) and its key set join the fragment. */
static int take_unit_keys(UnitEncoder *e)
{
    const encoder_t *core = &e->core;
    for (size_t i = 0; i < core->new_entries.n; i++) {
        const new_entry_t *made = &core->new_entries.a[i];
        const part_t *parts = core->entry_parts.a ? core->entry_parts.a + made->part_first
                                                   : NULL;  /* a leaf's: none */
        if (pack_entry(e, &core->recs.a[made->rec], parts)) return -1;
    }
    size_t size = core->unit_key_list.n * sizeof(uint32_t);
    PyObject *keys = PyBytes_FromStringAndSize((const char *)core->unit_key_list.a,
                                               (Py_ssize_t)size);
    PyObject *item = keys ? Py_BuildValue("(KN)", (unsigned long long)core->unit.offset, keys)
                          : NULL;
    if (!item) return -1;
    int rc = PyList_Append(e->unit_keys, item);
    Py_DECREF(item);
    return rc;
}

/* -- the encoder's calls (encoder_calls_t) ------------------------------------------- */

/* `name in functions`, and whether one of `addresses` is in its set. */
static int call_function_symbol(void *ctx, name_t name, const i128 *addresses, size_t n,
                           int *linked)
{
    UnitEncoder *e = ctx;
    PyObject *name_obj = name_object(e, name);
    if (!name_obj) return -1;
    PyObject *found = PyDict_GetItemWithError(e->functions, name_obj);
    if (!found) return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(found);
    int r = 0;
    for (size_t i = 0; i < n && !*linked && r >= 0; i++) {
        PyObject *address = py_from_i128(addresses[i]);
        r = address ? PySet_Contains(found, address) : -1;
        Py_XDECREF(address);
        if (r > 0) *linked = 1;
    }
    Py_DECREF(found);
    return r < 0 ? -1 : 1;
}

static int call_is_kfunc(void *ctx, name_t name)
{
    UnitEncoder *e = ctx;
    if (e->kfuncs == Py_None) return 0;
    PyObject *name_obj = name_object(e, name);
    return name_obj ? PySequence_Contains(e->kfuncs, name_obj) : -1;
}

/* place_variable(name, address, every): its answer kept in the unit's list of places. */
static int call_place_variable(void *ctx, name_t name, i128 address, int every,
                               uint32_t *slot)
{
    UnitEncoder *e = ctx;
    PyObject *name_obj = name_object(e, name);
    if (!name_obj) return -1;
    PyObject *value = py_from_i128(address);
    if (!value) return -1;
    PyObject *place = PyObject_CallFunctionObjArgs(e->place_variable, name_obj, value,
                                                   every ? Py_True : Py_False, NULL);
    Py_DECREF(value);
    if (!place) return -1;
    if (place == Py_None) { Py_DECREF(place); return 0; }
    *slot = (uint32_t)PyList_GET_SIZE(e->places);
    int r = PyList_Append(e->places, place);
    Py_DECREF(place);
    return r < 0 ? -1 : 1;
}

/* The place in `slot` becomes (linkage, *place). */
static int call_var_extra(void *ctx, uint32_t slot, int linkage)
{
    UnitEncoder *e = ctx;
    PyObject *linkage_obj = PyLong_FromLong(linkage);
    PyObject *head = linkage_obj ? PyTuple_Pack(1, linkage_obj) : NULL;
    Py_XDECREF(linkage_obj);
    PyObject *tail = head ? PySequence_Tuple(PyList_GET_ITEM(e->places, slot)) : NULL;
    PyObject *extra = tail ? PySequence_Concat(head, tail) : NULL;
    Py_XDECREF(head);
    Py_XDECREF(tail);
    return extra ? PyList_SetItem(e->places, slot, extra) : -1;
}

/* repr() of the VAR extra in `slot`, kept until the next unit. */
static int call_var_key(void *ctx, uint32_t slot, const uint8_t **bytes, size_t *len)
{
    UnitEncoder *e = ctx;
    PyObject *repr = PyObject_Repr(PyList_GET_ITEM(e->places, slot));
    if (!repr) return -1;
    int r = PyList_Append(e->place_keys, repr);
    Py_DECREF(repr);
    if (r) return -1;
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(repr, &n);
    if (!text) return -1;
    *bytes = (const uint8_t *)text;
    *len = (size_t)n;
    return 0;
}

/* The section in `obj` (any bytes-like object) held as `b`, seen by the core as `out`. */
static int hold_section(PyObject *obj, Py_buffer *b, section_t *out)
{
    if (PyObject_GetBuffer(obj, b, PyBUF_SIMPLE)) return -1;
    out->buf = b->buf;
    out->len = (size_t)b->len;
    return 0;
}

/* The arguments that are objects: kept, and the lists the encoder fills made. */
static int keep_objects(UnitEncoder *e, PyObject *functions, PyObject *kfuncs,
                        PyObject *place_variable, PyObject *tag_names, PyObject *fallback)
{
    Py_INCREF(functions); e->functions = functions;
    Py_INCREF(kfuncs); e->kfuncs = kfuncs;
    Py_INCREF(place_variable); e->place_variable = place_variable;
    Py_INCREF(tag_names); e->tag_names = tag_names;
    Py_INCREF(fallback); e->fallback = fallback;
    e->places = PyList_New(0);
    e->place_keys = PyList_New(0);
    e->unit_keys = PyList_New(0);
    e->packed.names = PyList_New(0);
    e->packed.objects = PyList_New(0);
    e->core.calls = (encoder_calls_t){e, call_function_symbol, call_is_kfunc,
                                      call_place_variable, call_var_extra, call_var_key};
    return e->places && e->place_keys && e->unit_keys && e->packed.names && e->packed.objects
        ? 0 : -1;
}

static int Encoder_init(UnitEncoder *e, PyObject *args, PyObject *kw)
{
    static char *names[] = {"info", "abbrev", "str", "line_str", "str_offsets", "addr",
                            "loc", "loclists", "registers",
                            "little_endian", "features", "has_symbols",
                            "functions", "kfuncs", "place_variable", "tag_names", "fallback",
                            NULL};
    PyObject *sections[NSECTIONS];
    const char *registers;
    Py_ssize_t nregisters;
    int little, features, has_symbols;
    PyObject *functions, *kfuncs, *place_variable, *tag_names, *fallback;
    if (e->places) {
        PyErr_SetString(PyExc_RuntimeError, "UnitEncoder is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOOOy#pipOOOO!O:UnitEncoder", names,
                                     &sections[0], &sections[1], &sections[2], &sections[3],
                                     &sections[4], &sections[5], &sections[6], &sections[7],
                                     &registers, &nregisters,
                                     &little, &features, &has_symbols,
                                     &functions, &kfuncs, &place_variable, &PyDict_Type,
                                     &tag_names, &fallback))
        return -1;
    if (has_symbols && (!PyDict_Check(functions) || !PyCallable_Check(place_variable))) {
        PyErr_SetString(PyExc_TypeError, "symbols need a functions dict and place_variable");
        return -1;
    }
    encoder_t *core = &e->core;
    section_t *seen[NSECTIONS] = {&core->info, &core->abbrev, &core->str, &core->line_str,
                                  &core->str_offsets, &core->addr, &core->loc,
                                  &core->loclists};
    for (int i = 0; i < NSECTIONS; i++)
        if (hold_section(sections[i], &e->sections[i], seen[i])) return -1;
    if (nregisters > (Py_ssize_t)sizeof core->registers) {
        PyErr_SetString(PyExc_ValueError, "too many argument registers");
        return -1;
    }
    memcpy(core->registers, registers, (size_t)nregisters);
    core->nregisters = (int)nregisters;
    core->little = little;
    core->features = features;
    core->has_symbols = has_symbols;
    return keep_objects(e, functions, kfuncs, place_variable, tag_names, fallback);
}

static int parse_unit(UnitEncoder *e, PyObject *unit, unit_t *u)
{
    unsigned long long offset, end, die_offset, abbrev_offset;
    int version, offset_size, address_size;
    if (!e->places) {
        PyErr_SetString(PyExc_RuntimeError, "UnitEncoder is not initialised");
        return -1;
    }
    if (!PyArg_ParseTuple(unit, "KKKiiiK:unit", &offset, &end, &die_offset, &version,
                          &offset_size, &address_size, &abbrev_offset))
        return -1;
    if (offset_size != 4 && offset_size != 8) {
        PyErr_SetString(PyExc_ValueError, "offset size must be 4 or 8");
        return -1;
    }
    if (PyList_SetSlice(e->places, 0, PyList_GET_SIZE(e->places), NULL)
        || PyList_SetSlice(e->place_keys, 0, PyList_GET_SIZE(e->place_keys), NULL))
        return -1;
    *u = (unit_t){offset, end, die_offset, version, offset_size, address_size, abbrev_offset};
    return 0;
}

/* The exception of the core's answer `rc` (encode_unit's): CoreFallback naming the unit
 * and why (PyErr_Format has no %llx), MemoryError, or the one a call raised. */
static void raise_for(UnitEncoder *e, int rc)
{
    if (rc == -3 || PyErr_Occurred()) return;
    if (rc == -2 && !e->core.bad) {
        PyErr_NoMemory();
        return;
    }
    char text[256];
    snprintf(text, sizeof text, "unit at .debug_info offset %#llx: %s",
             (unsigned long long)e->core.unit.offset, e->core.why);
    PyErr_SetString(e->fallback, text);
}

/* Reads and converts the unit; raises CoreFallback when it goes to the pure path. */
static int encode(UnitEncoder *e, PyObject *unit)
{
    unit_t u;
    if (parse_unit(e, unit, &u)) return -1;
    int rc = encode_unit(&e->core, &u);
    if (rc) raise_for(e, rc);
    return rc ? -1 : 0;
}

PyDoc_STRVAR(Encoder_records_doc,
             "records(unit) -> the unit's BTF records, as convert.convert_unit makes them.");
static PyObject *Encoder_records(UnitEncoder *e, PyObject *unit)
{
    if (encode(e, unit)) return NULL;
    PyObject *list = PyList_New((Py_ssize_t)e->core.recs.n);
    if (!list) return NULL;
    Py_INCREF(Py_None);
    PyList_SET_ITEM(list, 0, Py_None);
    for (size_t i = 1; i < e->core.recs.n; i++) {
        PyObject *r = record_object(e, &e->core.recs.a[i]);
        if (!r) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, r);
    }
    if (commit_skips(&e->core)) { Py_DECREF(list); return PyErr_NoMemory(); }
    return list;
}

PyDoc_STRVAR(Encoder_add_keys_doc,
             "add_keys(unit): the unit's records keyed into this encoder's pool (keys.KeyPool).");
static PyObject *Encoder_add_keys(UnitEncoder *e, PyObject *unit)
{
    if (encode(e, unit)) return NULL;
    int rc = add_unit_keys(&e->core);
    if (rc == -2) return PyErr_NoMemory();
    if (rc) {
        raise_for(e, rc);
        return NULL;
    }
    if (take_unit_keys(e)) return NULL;
    if (commit_skips(&e->core)) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(Encoder_take_fragment_doc,
             "take_fragment() -> ((cells, ends, names, objects): the new entries as "
             "keys.PackedEntries holds them, [(unit offset, key ids as u32 bytes)]).");
static PyObject *Encoder_take_fragment(UnitEncoder *e, PyObject *noargs)
{
    (void)noargs;
    PyObject *units = PyList_New(0), *packed = units ? packing_take(&e->packed) : NULL;
    PyObject *out = packed ? Py_BuildValue("(NO)", packed, e->unit_keys) : NULL;
    if (!out) {
        Py_XDECREF(units);
        return NULL;
    }
    Py_SETREF(e->unit_keys, units);
    return out;
}

/* A skip reason's text, as the reference words it: by reason its text, or with %U its
 * format around the tag's name (tag_names, else the tag in hex). */
static PyObject *reason_text(UnitEncoder *e, const skip_t *s)
{
    static const char *const texts[NREASONS] = {
        [R_NOT_TYPE] = "reference to a DIE that is not a type of its unit",
        [R_COMPLEX] = "complex float base type",
        [R_IMAGINARY] = "imaginary float base type",
        [R_DECIMAL] = "decimal float base type",
        [R_BIG_INT] = "integer base type over 16 bytes",
        [R_TAG] = "DW_TAG_%U",
        [R_ATOMIC] = "_Atomic qualifier dropped",
        [R_BY_VALUE] = "DW_TAG_%U of a skipped type",
        [R_MEMBER] = "member of a skipped type left out",
        [R_IN_STRUCT] = "DW_TAG_%U in a struct or union",
        [R_IN_ARRAY] = "DW_TAG_%U in an array",
        [R_IN_ENUM] = "DW_TAG_%U in an enum",
        [R_IN_PROTO] = "DW_TAG_%U in a prototype",
        [R_FUNC_PARAM] = "function with a parameter of a skipped type",
        [R_FUNC_RET] = "function returning a skipped type",
        [R_VAR] = "variable of a skipped or void type",
    };
    const char *text = texts[s->code];
    if (!strstr(text, "%U"))
        return PyUnicode_FromString(text);
    PyObject *tag = PyLong_FromUnsignedLong(s->tag);
    if (!tag) return NULL;
    PyObject *name = PyDict_GetItemWithError(e->tag_names, tag);
    Py_DECREF(tag);
    if (name) {
        Py_INCREF(name);
    } else {
        if (PyErr_Occurred()) return NULL;
        name = PyUnicode_FromFormat("0x%x", s->tag);
        if (!name) return NULL;
    }
    PyObject *made = PyUnicode_FromFormat(text, name);
    Py_DECREF(name);
    return made;
}

/* dict[key] += count */
static int count_into(PyObject *dict, PyObject *key, uint64_t count)
{
    PyObject *old = PyDict_GetItemWithError(dict, key);
    if (!old && PyErr_Occurred()) return -1;
    PyObject *add = PyLong_FromUnsignedLongLong(count);
    if (!add) return -1;
    PyObject *sum = old ? PyNumber_Add(old, add) : (Py_INCREF(add), add);
    Py_DECREF(add);
    if (!sum) return -1;
    int r = PyDict_SetItem(dict, key, sum);
    Py_DECREF(sum);
    return r;
}

/* The committed counts as the reference's dicts: reason text -> count, tag -> count. */
static int counts_as_dicts(UnitEncoder *e, PyObject *reasons, PyObject *tags)
{
    for (size_t i = 0; i < e->core.skips.n; i++) {
        PyObject *reason = reason_text(e, &e->core.skips.a[i]);
        if (!reason) return -1;
        int r = count_into(reasons, reason, e->core.skips.a[i].count);
        Py_DECREF(reason);
        if (r) return -1;
    }
    for (size_t i = 0; i < e->core.skipped_tags.n; i++) {
        PyObject *tag = PyLong_FromUnsignedLong(e->core.skipped_tags.a[i].tag);
        if (!tag) return -1;
        int r = count_into(tags, tag, e->core.skipped_tags.a[i].count);
        Py_DECREF(tag);
        if (r) return -1;
    }
    return 0;
}

PyDoc_STRVAR(Encoder_take_counts_doc,
             "take_counts() -> (skip reasons, skipped tags, type DIEs) since the last call.");
static PyObject *Encoder_take_counts(UnitEncoder *e, PyObject *noargs)
{
    (void)noargs;
    if (!e->places) {
        PyErr_SetString(PyExc_RuntimeError, "UnitEncoder is not initialised");
        return NULL;
    }
    PyObject *skips = PyDict_New(), *tags = PyDict_New();
    PyObject *out = NULL;
    if (skips && tags && !counts_as_dicts(e, skips, tags))
        out = Py_BuildValue("(OOK)", skips, tags, (unsigned long long)e->core.type_dies);
    Py_XDECREF(skips);
    Py_XDECREF(tags);
    if (!out) return NULL;
    e->core.skips.n = e->core.skipped_tags.n = 0;
    e->core.type_dies = 0;
    return out;
}

PyDoc_STRVAR(Encoder_language_doc,
             "language(unit) -> the DW_AT_language of the unit's own DIE, or None; "
             "CoreFallback where dies.unit_attribute must read it.");
static PyObject *Encoder_language(UnitEncoder *e, PyObject *unit)
{
    unit_t u;
    int64_t language;
    if (parse_unit(e, unit, &u)) return NULL;
    int rc = unit_language(&e->core, &u, &language);
    if (rc == 1) {
        PyErr_SetString(e->fallback, "a unit DIE the reference reads");
        return NULL;
    }
    if (rc) {
        raise_for(e, rc);
        return NULL;
    }
    if (language < 0) Py_RETURN_NONE;
    return PyLong_FromLongLong(language);
}

static PyMethodDef Encoder_methods[] = {
    METHOD_ROW(Encoder, records, METH_O),
    METHOD_ROW(Encoder, language, METH_O),
    METHOD_ROW(Encoder, add_keys, METH_O),
    METHOD_ROW(Encoder, take_fragment, METH_NOARGS),
    METHOD_ROW(Encoder, take_counts, METH_NOARGS),
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EncoderType = {
    PLAIN_TYPE_HEAD("canonbtf.dwarf._core.UnitEncoder", UnitEncoder, Encoder_dealloc,
                    "Reads, converts and keys units of one DWARF file (canonbtf/dwarf/core.py)."),
    .tp_methods = Encoder_methods,
    .tp_init = (initproc)Encoder_init,
    .tp_new = PyType_GenericNew,
};

static PyMethodDef core_functions[] = {
    {"relocate", core_relocate, METH_VARARGS,
     "relocate(data, entries, symtab, little_endian, sizes) -> data with ELF64 RELA "
     "entries applied (sections._relocated), or None for one it cannot apply."},
    {"scan_symbols", core_scan_symbols, METH_VARARGS,
     "scan_symbols(data, strtab, elf64, little_endian, btf_ids_index, alloc) -> "
     "(functions, objects, btf_id_symbols), as symbols.scan_symbols."},
    {"pool_unit", core_pool_unit, METH_VARARGS,
     "pool_unit(records, pool records, acyclic, cyclic, names, label_ranks) -> pool ids: "
     "fragment.TypePool.add_unit on the pool's own state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core",
    "The compiled encode core: DWARF units to BTF records and keys.", -1, core_functions,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&EncoderType) < 0 || PyType_Ready(&MergeType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    Py_INCREF(&EncoderType);
    Py_INCREF(&MergeType);
    if (PyModule_AddObject(m, "UnitEncoder", (PyObject *)&EncoderType) < 0
        || PyModule_AddObject(m, "KeyedMerge", (PyObject *)&MergeType) < 0
        || PyModule_AddIntConstant(m, "MAX_DEPTH", MAX_DEPTH) < 0) {
        Py_DECREF(&EncoderType);
        Py_DECREF(&MergeType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
