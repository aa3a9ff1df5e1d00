/* canonbtf.dwarf._core's functions over plain C: relocate (dwarf/csrc/reloc.c),
 * scan_symbols (symtab.c) and pool_unit (pool.c); the arguments made plain arrays and the
 * results made the reference's objects. A binding file of canonbtf.dwarf._core. */
#include "core_bindings.h"

#include "reloc.h"

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
