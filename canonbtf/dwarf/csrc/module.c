/* canonbtf.dwarf._core: the UnitEncoder type, one per worker process.
 *
 * No global state: everything a unit needs lives in the encoder object. The GIL is
 * held throughout: each worker is a process of its own running one unit at a time,
 * and the converter calls back into Python for symbol lookups.
 */
#include "core.h"
#include "core_bindings.h"
#include "pytype.h"
#include <stdlib.h>
#include <string.h>

#define FREE_VEC(v) do { free((v).a); (v).a = NULL; (v).n = (v).cap = 0; } while (0)

static void release_buffer(Py_buffer *b)
{
    if (b->obj) PyBuffer_Release(b);
}

static void Encoder_dealloc(encoder_t *e)
{
    release_buffer(&e->info);
    release_buffer(&e->abbrev);
    release_buffer(&e->str);
    release_buffer(&e->line_str);
    release_buffer(&e->str_offsets);
    release_buffer(&e->addr);
    release_buffer(&e->loc);
    release_buffer(&e->loclists);
    for (size_t i = 0; i < e->recs.n; i++) Py_XDECREF(e->recs.a[i].var_extra);
    Py_XDECREF(e->functions);
    Py_XDECREF(e->kfuncs);
    Py_XDECREF(e->place_variable);
    Py_XDECREF(e->tag_names);
    Py_XDECREF(e->fallback);
    Py_XDECREF(e->empty_set);
    Py_XDECREF(e->skips);
    Py_XDECREF(e->skipped_tags);
    Py_XDECREF(e->new_entries);
    Py_XDECREF(e->unit_keys);
    FREE_VEC(e->abbrevs); FREE_VEC(e->specs); FREE_VEC(e->nodes); FREE_VEC(e->attrs);
    FREE_VEC(e->types); FREE_VEC(e->type_at); FREE_VEC(e->stack);
    FREE_VEC(e->pending_tags); FREE_VEC(e->recs); FREE_VEC(e->items); FREE_VEC(e->owners);
    FREE_VEC(e->local);
    FREE_VEC(e->decl_tags); FREE_VEC(e->programs); FREE_VEC(e->pending_skips);
    FREE_VEC(e->part); FREE_VEC(e->waiting); FREE_VEC(e->on_path); FREE_VEC(e->key);
    FREE_VEC(e->dfs); FREE_VEC(e->ser); FREE_VEC(e->unit_key_list);
    intern_free(&e->nontype);
    intern_free(&e->names);
    idmap_free(&e->str_names);
    intern_free(&e->tokens);
    intern_free(&e->entries);
    keys_free(e);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static int get_buffer(PyObject *obj, Py_buffer *b)
{
    return PyObject_GetBuffer(obj, b, PyBUF_SIMPLE);
}

static int Encoder_init(encoder_t *e, PyObject *args, PyObject *kw)
{
    static char *names[] = {"info", "abbrev", "str", "line_str", "str_offsets", "addr",
                            "loc", "loclists", "registers",
                            "little_endian", "features", "has_symbols",
                            "functions", "kfuncs", "place_variable", "tag_names", "fallback",
                            NULL};
    PyObject *info, *abbrev, *str, *line_str, *str_offsets, *addr, *loc, *loclists;
    const char *registers;
    Py_ssize_t nregisters;
    int little, features, has_symbols;
    PyObject *functions, *kfuncs, *place_variable, *tag_names, *fallback;
    if (e->skips) {
        PyErr_SetString(PyExc_RuntimeError, "UnitEncoder is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOOOy#pipOOOO!O:UnitEncoder", names,
                                     &info, &abbrev, &str, &line_str, &str_offsets, &addr,
                                     &loc, &loclists, &registers, &nregisters,
                                     &little, &features, &has_symbols,
                                     &functions, &kfuncs, &place_variable, &PyDict_Type,
                                     &tag_names, &fallback))
        return -1;
    if (has_symbols && (!PyDict_Check(functions) || !PyCallable_Check(place_variable))) {
        PyErr_SetString(PyExc_TypeError, "symbols need a functions dict and place_variable");
        return -1;
    }
    if (get_buffer(info, &e->info) || get_buffer(abbrev, &e->abbrev) || get_buffer(str, &e->str)
        || get_buffer(line_str, &e->line_str) || get_buffer(str_offsets, &e->str_offsets)
        || get_buffer(addr, &e->addr) || get_buffer(loc, &e->loc)
        || get_buffer(loclists, &e->loclists))
        return -1;
    if (nregisters > (Py_ssize_t)sizeof e->registers) {
        PyErr_SetString(PyExc_ValueError, "too many argument registers");
        return -1;
    }
    memcpy(e->registers, registers, (size_t)nregisters);
    e->nregisters = (int)nregisters;
    e->little = little;
    e->features = features;
    e->has_symbols = has_symbols;
    Py_INCREF(functions); e->functions = functions;
    Py_INCREF(kfuncs); e->kfuncs = kfuncs;
    Py_INCREF(place_variable); e->place_variable = place_variable;
    Py_INCREF(tag_names); e->tag_names = tag_names;
    Py_INCREF(fallback); e->fallback = fallback;
    e->empty_set = PyFrozenSet_New(NULL);
    e->skips = PyDict_New();
    e->skipped_tags = PyDict_New();
    e->new_entries = PyList_New(0);
    e->unit_keys = PyList_New(0);
    if (!e->empty_set || !e->skips || !e->skipped_tags || !e->new_entries || !e->unit_keys)
        return -1;
    return 0;
}

static int parse_unit(encoder_t *e, PyObject *unit)
{
    unsigned long long offset, end, die_offset, abbrev_offset;
    int version, offset_size, address_size;
    if (!e->skips) {
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
    unit_t u = {offset, end, die_offset, version, offset_size, address_size, abbrev_offset};
    e->unit = u;
    e->bad = 0;
    e->why[0] = 0;
    return 0;
}

/* Raises CoreFallback naming the unit and why (PyErr_Format has no %llx). */
static void give_up(encoder_t *e)
{
    char text[256];
    snprintf(text, sizeof text, "unit at .debug_info offset %#llx: %s",
             (unsigned long long)e->unit.offset, e->why);
    PyErr_SetString(e->fallback, text);
}

/* Reads and converts the unit; raises CoreFallback when it goes to the pure path. */
static int encode(encoder_t *e, PyObject *unit)
{
    if (parse_unit(e, unit)) return -1;
    int rc = read_unit(e);
    if (!rc) rc = convert_unit(e);
    if (rc == -2 && !e->bad && !PyErr_Occurred()) PyErr_NoMemory();
    if (rc && e->bad && !PyErr_Occurred())
        give_up(e);
    return rc ? -1 : 0;
}

PyDoc_STRVAR(Encoder_records_doc,
             "records(unit) -> the unit's BTF records, as convert.convert_unit makes them.");
static PyObject *Encoder_records(encoder_t *e, PyObject *unit)
{
    if (encode(e, unit)) return NULL;
    PyObject *list = PyList_New((Py_ssize_t)e->recs.n);
    if (!list) return NULL;
    Py_INCREF(Py_None);
    PyList_SET_ITEM(list, 0, Py_None);
    for (size_t i = 1; i < e->recs.n; i++) {
        PyObject *r = record_object(e, &e->recs.a[i]);
        if (!r) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, r);
    }
    if (commit_skips(e)) { Py_DECREF(list); return NULL; }
    return list;
}

PyDoc_STRVAR(Encoder_add_keys_doc,
             "add_keys(unit): the unit's records keyed into this encoder's pool (keys.KeyPool).");
static PyObject *Encoder_add_keys(encoder_t *e, PyObject *unit)
{
    if (encode(e, unit)) return NULL;
    int rc = add_unit_keys(e);
    if (rc == -1) {
        give_up(e);
        return NULL;
    }
    if (rc || commit_skips(e)) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(Encoder_take_fragment_doc,
             "take_fragment() -> (new entries, [(unit offset, key ids as u32 bytes)]).");
static PyObject *Encoder_take_fragment(encoder_t *e, PyObject *noargs)
{
    (void)noargs;
    PyObject *entries = PyList_New(0), *units = PyList_New(0);
    if (!entries || !units) { Py_XDECREF(entries); Py_XDECREF(units); return NULL; }
    PyObject *out = Py_BuildValue("(OO)", e->new_entries, e->unit_keys);
    if (!out) { Py_DECREF(entries); Py_DECREF(units); return NULL; }
    Py_SETREF(e->new_entries, entries);
    Py_SETREF(e->unit_keys, units);
    return out;
}

PyDoc_STRVAR(Encoder_take_counts_doc,
             "take_counts() -> (skip reasons, skipped tags, type DIEs) since the last call.");
static PyObject *Encoder_take_counts(encoder_t *e, PyObject *noargs)
{
    (void)noargs;
    PyObject *skips = PyDict_New(), *tags = PyDict_New();
    if (!skips || !tags) { Py_XDECREF(skips); Py_XDECREF(tags); return NULL; }
    PyObject *out = Py_BuildValue("(OOK)", e->skips, e->skipped_tags,
                                  (unsigned long long)e->type_dies);
    if (!out) { Py_DECREF(skips); Py_DECREF(tags); return NULL; }
    Py_SETREF(e->skips, skips);
    Py_SETREF(e->skipped_tags, tags);
    e->type_dies = 0;
    return out;
}

static PyMethodDef Encoder_methods[] = {
    METHOD_ROW(Encoder, records, METH_O),
    METHOD_ROW(Encoder, add_keys, METH_O),
    METHOD_ROW(Encoder, take_fragment, METH_NOARGS),
    METHOD_ROW(Encoder, take_counts, METH_NOARGS),
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EncoderType = {
    PLAIN_TYPE_HEAD("canonbtf.dwarf._core.UnitEncoder", encoder_t, Encoder_dealloc,
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
