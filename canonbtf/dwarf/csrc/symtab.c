/* The ELF symbol table reduced to what the encoder asks of it, in one pass (symbols.py
 * `scan_symbols` is the reference): the parent reads it before the workers fork, so all
 * of it is sequential time (0.2 s in Python for the 6.1 kernel's 190,000 symbols). */
#include "core.h"
#include <string.h>

#define STT_OBJECT 1
#define STT_FUNC 2
#define SHN_LORESERVE 0xFF00

/* The string at `offset` of the string table, up to its NUL or the table's end (latin-1,
 * as symbols.py decodes it); "" past the end. */
static PyObject *name_at(const uint8_t *strtab, size_t size, uint64_t offset)
{
    if (offset >= size) return PyUnicode_FromStringAndSize("", 0);
    const uint8_t *start = strtab + offset;
    const uint8_t *nul = memchr(start, 0, size - offset);
    size_t length = nul ? (size_t)(nul - start) : size - offset;
    return PyUnicode_DecodeLatin1((const char *)start, (Py_ssize_t)length, NULL);
}

typedef struct {
    uint64_t name, value, size;
    unsigned info, shndx;
} symbol_t;

static void parse_symbol(const uint8_t *p, int elf64, int little, symbol_t *s)
{
    if (elf64) {  /* name, info, other, shndx, value, size */
        s->name = get_uint(p, 4, little);
        s->info = p[4];
        s->shndx = (unsigned)get_uint(p + 6, 2, little);
        s->value = get_uint(p + 8, 8, little);
        s->size = get_uint(p + 16, 8, little);
    } else {  /* name, value, size, info, other, shndx */
        s->name = get_uint(p, 4, little);
        s->value = get_uint(p + 4, 4, little);
        s->size = get_uint(p + 8, 4, little);
        s->info = p[12];
        s->shndx = (unsigned)get_uint(p + 14, 2, little);
    }
}

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

/* One symbol into the three results (as the loop of symbols.py `scan_symbols`). */
static int take_symbol(const symbol_t *s, PyObject *name, long btf_ids_index,
                       const Py_buffer *alloc, PyObject *functions, PyObject *objects,
                       PyObject *btf_ids)
{
    unsigned kind = s->info & 0xF;
    PyObject *item = NULL, *key = NULL;
    int rc = 0;
    if ((long)s->shndx == btf_ids_index) {
        item = Py_BuildValue("(IKKO)", s->shndx, (unsigned long long)s->value,
                             (unsigned long long)s->size, name);
        rc = item ? PyList_Append(btf_ids, item) : -1;
        Py_XDECREF(item);
        item = NULL;
    }
    if (rc < 0) return -1;
    if (kind == STT_FUNC) {
        item = PyLong_FromUnsignedLongLong(s->value);
        /* PySet_Add fills a brand-new frozenset: no one else sees these until we return. */
        rc = item ? add_to(functions, name, PyFrozenSet_New, PySet_Add, item) : -1;
    } else if (kind == STT_OBJECT && s->size && s->shndx < (unsigned)alloc->len
               && ((const uint8_t *)alloc->buf)[s->shndx]) {
        key = Py_BuildValue("(OK)", name, (unsigned long long)s->value);
        item = Py_BuildValue("(IK)", s->shndx, (unsigned long long)s->size);
        rc = key && item ? add_to(objects, key, new_list, PyList_Append, item) : -1;
    }
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
    PyObject *functions = PyDict_New(), *objects = PyDict_New(), *btf_ids = PyList_New(0);
    PyObject *out = NULL;
    if (!functions || !objects || !btf_ids) goto done;
    size_t entry = elf64 ? 24 : 16, count = (size_t)data.len / entry;
    for (size_t i = 0; i < count; i++) {
        symbol_t s;
        parse_symbol((const uint8_t *)data.buf + i * entry, elf64, little, &s);
        unsigned kind = s.info & 0xF;
        if (s.shndx == 0 || s.shndx >= SHN_LORESERVE) continue;
        if (kind != STT_FUNC && kind != STT_OBJECT && (long)s.shndx != btf_ids_index) continue;
        PyObject *name = name_at(strtab.buf, (size_t)strtab.len, s.name);
        int rc = name ? take_symbol(&s, name, btf_ids_index, &alloc, functions, objects,
                                    btf_ids) : -1;
        Py_XDECREF(name);
        if (rc < 0) goto done;
    }
    if (sort_places(objects) == 0)
        out = PyTuple_Pack(3, functions, objects, btf_ids);
done:
    Py_XDECREF(functions);
    Py_XDECREF(objects);
    Py_XDECREF(btf_ids);
    PyBuffer_Release(&data);
    PyBuffer_Release(&strtab);
    PyBuffer_Release(&alloc);
    return out;
}
