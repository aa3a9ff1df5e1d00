/* Records to and from `Type` objects: reader._parse_types and writer._words in C. A
 * binding file of canonbtf._btf (btf_bindings.c calls it): it only converts between
 * the words (btf/csrc/types.c reads them) and Python objects.
 *
 * `decode` makes exactly the objects the reader makes (the same fields, () for no items,
 * a list of tuples otherwise); `pack` writes exactly the words the writer writes, and
 * raises ValueError wherever the writer would fail, so the writer's message is given. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "idmap.h"
#include "pyparts.h"

static PyObject *item_tuple(uint32_t kind, const uint32_t *item)
{
    switch (kind) {
    case K_ENUM:
    case K_FUNC_PROTO:
        return Py_BuildValue("(kk)", (unsigned long)item[0], (unsigned long)item[1]);
    case K_ENUM64:
        return Py_BuildValue("(kK)", (unsigned long)item[0],
                             (unsigned long long)enumerator_value(kind, item));
    default:
        return Py_BuildValue("(kkk)", (unsigned long)item[0], (unsigned long)item[1],
                             (unsigned long)item[2]);
    }
}

static PyObject *items_of(const types_t *t, uint32_t i)
{
    uint32_t kind = t_kind(t, i), vlen = t_vlen(t, i), step = kind_item_words(kind);
    if (!step || !vlen) return PyTuple_New(0);
    PyObject *items = PyList_New(vlen);
    if (!items) return NULL;
    const uint32_t *item = t_rest(t, i);
    for (uint32_t j = 0; j < vlen; j++, item += step) {
        PyObject *one = item_tuple(kind, item);
        if (!one) {
            Py_DECREF(items);
            return NULL;
        }
        PyList_SET_ITEM(items, j, one);
    }
    return items;
}

static PyObject *extra_of(const types_t *t, uint32_t i)
{
    const uint32_t *rest = t_rest(t, i);
    switch (t_kind(t, i)) {
    case K_FUNC: return PyLong_FromUnsignedLong(t_vlen(t, i));
    case K_ARRAY:
        return Py_BuildValue("(kkk)", (unsigned long)rest[0], (unsigned long)rest[1],
                             (unsigned long)rest[2]);
    case K_INT: case K_VAR: return PyLong_FromUnsignedLong(rest[0]);
    case K_DECL_TAG: return PyLong_FromLong((int32_t)rest[0]);
    default: return PyLong_FromLong(0);
    }
}

PyObject *decode_types(const types_t *t, PyObject *type_class, const uint32_t *ids, size_t nids)
{
    PyObject *out = PyList_New(ids ? (Py_ssize_t)nids : (Py_ssize_t)t->count);
    if (!out) return NULL;
    for (uint32_t k = 0; k < (ids ? nids : t->count); k++) {
        uint32_t i = ids ? ids[k] - t->first_id : k;
        PyObject *extra = extra_of(t, i), *items = extra ? items_of(t, i) : NULL, *one = NULL;
        if (items)
            one = PyObject_CallFunction(type_class, "kkkkOO", (unsigned long)t_kind(t, i),
                                        (unsigned long)t_name(t, i),
                                        (unsigned long)t_kflag(t, i),
                                        (unsigned long)t_sot(t, i), extra, items);
        Py_XDECREF(extra);
        Py_XDECREF(items);
        if (!one) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, one);
    }
    return out;
}

typedef struct {
    uint32_t *w;
    size_t n, cap;
} words_t;

static int push(words_t *w, uint64_t value)
{
    if (value > UINT32_MAX) return -1;
    if (GROW(w->w, w->cap, w->n + 1)) return -1;
    w->w[w->n++] = (uint32_t)value;
    return 0;
}

/* A non-negative int that fits 64 bits, or -1 (an exception may be set: cleared later). */
static int word_of(PyObject *obj, uint64_t *out)
{
    if (!PyLong_Check(obj)) return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static int attr_word(PyObject *t, PyObject *name, uint64_t *out)
{
    PyObject *v = PyObject_GetAttr(t, name);
    if (!v) return -1;
    int rc = word_of(v, out);
    Py_DECREF(v);
    return rc;
}

static int pack_items(words_t *w, uint64_t kind, PyObject *items)
{
    PyObject *seq = PySequence_Fast(items, "items");
    if (!seq) return -1;
    int rc = 0;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq) && !rc; j++) {
        PyObject *item = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, j), "item");
        if (!item) {
            rc = -1;
            break;
        }
        Py_ssize_t size = PySequence_Fast_GET_SIZE(item);
        uint64_t v;
        if (kind == K_ENUM64) {
            rc = size != 2 || word_of(PySequence_Fast_GET_ITEM(item, 0), &v) || push(w, v);
            if (!rc) rc = word_of(PySequence_Fast_GET_ITEM(item, 1), &v)
                          || push(w, v & 0xFFFFFFFF) || push(w, v >> 32);
        } else {
            for (Py_ssize_t k = 0; k < size && !rc; k++)
                rc = word_of(PySequence_Fast_GET_ITEM(item, k), &v) || push(w, v);
        }
        Py_DECREF(item);
    }
    Py_DECREF(seq);
    return rc ? -1 : 0;
}

/* The fixed words of INT, VAR, DECL_TAG (extra & 0xFFFFFFFF) and ARRAY (three words). */
static int pack_extra(words_t *w, uint64_t kind, PyObject *extra)
{
    if (kind == K_ARRAY) {
        PyObject *seq = PySequence_Fast(extra, "extra");
        if (!seq) return -1;
        int rc = 0;
        uint64_t v;
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq) && !rc; k++)
            rc = word_of(PySequence_Fast_GET_ITEM(seq, k), &v) || push(w, v);
        Py_DECREF(seq);
        return rc ? -1 : 0;
    }
    if (!PyLong_Check(extra)) return -1;
    unsigned long long v = PyLong_AsUnsignedLongLongMask(extra);
    if (PyErr_Occurred()) return -1;
    return push(w, v & 0xFFFFFFFF);
}

static int pack_one(words_t *w, PyObject *t, PyObject *const *names)
{
    uint64_t kind, name_off, kflag, sot, vlen;
    if (attr_word(t, names[0], &kind) || attr_word(t, names[1], &name_off)
        || attr_word(t, names[2], &kflag) || attr_word(t, names[3], &sot))
        return -1;
    PyObject *extra = PyObject_GetAttr(t, names[4]);
    PyObject *items = extra ? PyObject_GetAttr(t, names[5]) : NULL;
    int rc = -1;
    if (!items) goto done;
    Py_ssize_t count = PyObject_Length(items);
    if (count < 0) goto done;
    if (kind == K_FUNC) {
        if (word_of(extra, &vlen)) goto done;
    } else {
        vlen = (uint64_t)count;
    }
    if (kflag > 1 || kind > 0xFF || push(w, name_off) || push(w, (kflag << 31) | (kind << 24) | vlen)
        || push(w, sot))
        goto done;
    if (kind_fixed_words((uint32_t)kind) && pack_extra(w, kind, extra)) goto done;
    rc = count ? pack_items(w, kind, items) : 0;
done:
    Py_XDECREF(extra);
    Py_XDECREF(items);
    return rc;
}

PyObject *pack_types(PyObject *types)
{
    static const char *const attr[] = {"kind", "name_off", "kflag", "size_or_type", "extra",
                                       "items"};
    PyObject *names[6] = {NULL};
    PyObject *seq = PySequence_Fast(types, "types must be a sequence"), *result = NULL;
    words_t w = {NULL, 0, 0};
    if (!seq) return NULL;
    for (int k = 0; k < 6; k++)
        if (!(names[k] = PyUnicode_InternFromString(attr[k]))) goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
        if (pack_one(&w, PySequence_Fast_GET_ITEM(seq, i), names)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "a record the writer would refuse");
            goto done;
        }
    result = PyBytes_FromStringAndSize((const char *)w.w, (Py_ssize_t)(w.n * 4));
done:
    for (int k = 0; k < 6; k++) Py_XDECREF(names[k]);
    Py_DECREF(seq);
    free(w.w);
    return result;
}

/* Names as `str` (latin-1, as StringTable holds them), one object per offset: the
 * offset + 1 mapped to its index in `names`. */
typedef struct {
    const types_t *t;
    idmap_t index;
    PyObject **names;
    size_t count, cap;
} name_cache_t;

/* A borrowed reference to the name at `off`. */
static PyObject *cached_name(name_cache_t *c, uint32_t off)
{
    uint32_t at;
    if (idmap_get(&c->index, (uint64_t)off + 1, &at)) return c->names[at];
    if (GROW(c->names, c->cap, c->count + 1)) return PyErr_NoMemory();
    uint32_t len;
    const uint8_t *p = name_at(c->t, off, &len);
    PyObject *name = PyUnicode_DecodeLatin1((const char *)p, len, NULL);
    if (!name) return NULL;
    if (idmap_put(&c->index, (uint64_t)off + 1, (uint32_t)c->count)) {
        Py_DECREF(name);
        return PyErr_NoMemory();
    }
    c->names[c->count++] = name;
    return name;
}

static void cache_free(name_cache_t *c)
{
    for (size_t j = 0; j < c->count; j++) Py_DECREF(c->names[j]);
    free(c->names);
    idmap_free(&c->index);
}

static PyObject *member_scalar(name_cache_t *c, uint32_t kind, uint32_t kflag,
                               const uint32_t *item)
{
    PyObject *name = cached_name(c, item[0]);
    if (!name) return NULL;
    switch (kind) {
    case K_STRUCT: case K_UNION:
        if (kflag)
            return Py_BuildValue("(Okk)", name, (unsigned long)(item[2] & 0xFFFFFF),
                                 (unsigned long)(item[2] >> 24));
        return Py_BuildValue("(Okk)", name, (unsigned long)item[2], 0UL);
    case K_FUNC_PROTO:
        Py_INCREF(name);
        return name;
    default: {
        uint64_t v = enumerator_value(kind, item);
        PyObject *value = kflag ? PyLong_FromLongLong(enumerator_signed(kind, v))
                                : PyLong_FromUnsignedLongLong(v);
        if (!value) return NULL;
        PyObject *pair = PyTuple_Pack(2, name, value);
        Py_DECREF(value);
        return pair;
    }
    }
}

/* labels.scalars of own type i. */
static PyObject *scalars_of(name_cache_t *c, uint32_t i)
{
    const types_t *t = c->t;
    uint32_t kind = t_kind(t, i), vlen = t_vlen(t, i), kflag = t_kflag(t, i);
    const uint32_t *rest = t_rest(t, i);
    switch (kind) {
    case K_INT:
        return Py_BuildValue("(kkk)", (unsigned long)((rest[0] >> 24) & 0xF),
                             (unsigned long)((rest[0] >> 16) & 0xFF), (unsigned long)(rest[0] & 0xFF));
    case K_ARRAY: return Py_BuildValue("(k)", (unsigned long)rest[2]);
    case K_VAR: return Py_BuildValue("(k)", (unsigned long)rest[0]);
    case K_DECL_TAG: return Py_BuildValue("(l)", (long)(int32_t)rest[0]);
    case K_STRUCT: case K_UNION: case K_ENUM: case K_ENUM64: case K_FUNC_PROTO: case K_DATASEC:
        break;
    default: return PyTuple_New(0);
    }
    PyObject *out = PyTuple_New(vlen);
    uint32_t step = kind_item_words(kind);
    for (uint32_t j = 0; out && j < vlen; j++, rest += step) {
        PyObject *one = kind == K_DATASEC
            ? Py_BuildValue("(kk)", (unsigned long)rest[1], (unsigned long)rest[2])
            : member_scalar(c, kind, kflag, rest);
        if (!one) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, j, one);
    }
    return out;
}

PyObject *label_tuples(const types_t *t)
{
    name_cache_t cache = {.t = t};
    PyObject *out = PyList_New(t->count);
    for (uint32_t i = 0; out && i < t->count; i++) {
        PyObject *name = cached_name(&cache, t_name(t, i));
        PyObject *scalars = name ? scalars_of(&cache, i) : NULL;
        PyObject *one = scalars ? Py_BuildValue("(kkOkkO)", (unsigned long)t_kind(t, i),
                                                (unsigned long)t_vlen(t, i), name,
                                                (unsigned long)t_kflag(t, i),
                                                (unsigned long)label_size(t, i), scalars)
                                : NULL;
        Py_XDECREF(scalars);
        if (!one) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, one);
    }
    cache_free(&cache);
    return out;
}
