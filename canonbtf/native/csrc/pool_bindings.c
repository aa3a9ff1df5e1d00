/* canonbtf.dwarf._core's functions over plain C: relocate (dwarf/csrc/reloc.c),
 * scan_symbols (symtab.c) and pool_unit (pool.c); the arguments made plain arrays and the
 * results made the reference's objects. A binding file of canonbtf.dwarf._core. */
#include "core_bindings.h"

#include "reloc.h"
#include "symtab.h"

#include <stdlib.h>

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
