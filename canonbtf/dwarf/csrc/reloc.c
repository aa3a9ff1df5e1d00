/* RELA relocations of a debug section applied in one pass (sections.py `_relocated` is
 * the reference): in a module (ET_REL) string and cross-unit offsets are relocations,
 * 729,000 of them in xfs.ko's .debug_info. */
#include "core.h"
#include <string.h>

static void store(uint8_t *p, int size, int little, uint64_t v)
{
    for (int i = 0; i < size; i++)
        p[little ? i : size - 1 - i] = (uint8_t)(v >> (8 * i));
}

#define MAX_KINDS 8

/* The relocation types `sizes` lists (type -> 4 or 8 bytes); -1 when it is not a dict of
 * at most MAX_KINDS such pairs (a ValueError is set). */
static int known_types(PyObject *sizes, uint32_t *types, int *widths)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    int n = 0;
    while (PyDict_Next(sizes, &pos, &key, &value)) {
        unsigned long type = PyLong_AsUnsignedLong(key);
        long width = PyLong_AsLong(value);
        if (PyErr_Occurred()) return -1;
        if (n == MAX_KINDS || type > 0xFFFFFFFFul || (width != 4 && width != 8)) {
            PyErr_SetString(PyExc_ValueError, "relocation sizes: at most 8 types, of 4 or 8 bytes");
            return -1;
        }
        types[n] = (uint32_t)type;
        widths[n++] = (int)width;
    }
    return n;
}

/* relocate(data, entries, symtab, little_endian, sizes) -> patched bytes, or None when an
 * entry has a type `sizes` (type -> 4 or 8) does not list, a symbol past the symbol
 * table, or a place past the section's end. Entries and symbols are ELF64 (24 bytes);
 * a relocation stores the low bytes of symbol value + addend. */
PyObject *core_relocate(PyObject *self, PyObject *args)
{
    Py_buffer data, entries, symtab;
    int little;
    PyObject *sizes;
    if (!PyArg_ParseTuple(args, "y*y*y*pO!", &data, &entries, &symtab, &little,
                          &PyDict_Type, &sizes))
        return NULL;
    uint32_t types[MAX_KINDS];
    int widths[MAX_KINDS];
    int kinds = known_types(sizes, types, widths);
    PyObject *out = kinds < 0 ? NULL : PyBytes_FromStringAndSize(data.buf, data.len);
    if (!out) goto done;
    uint8_t *patched = (uint8_t *)PyBytes_AS_STRING(out);
    const uint8_t *rela = entries.buf, *symbols = symtab.buf;
    size_t count = (size_t)entries.len / 24, symbol_count = (size_t)symtab.len / 24;
    size_t size = (size_t)data.len;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *entry = rela + 24 * i;
        uint64_t offset = get_uint(entry, 8, little), info = get_uint(entry + 8, 8, little);
        uint64_t addend = get_uint(entry + 16, 8, little), symbol = info >> 32;
        int width = 0;
        for (int k = 0; k < kinds; k++)
            if (types[k] == (uint32_t)info) width = widths[k];
        if (!width || symbol >= symbol_count || offset > size || size - offset < (uint64_t)width) {
            Py_DECREF(out);
            Py_INCREF(Py_None);
            out = Py_None;
            goto done;
        }
        store(patched + offset, width, little, get_uint(symbols + 24 * symbol + 8, 8, little) + addend);
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&entries);
    PyBuffer_Release(&symtab);
    return out;
}
