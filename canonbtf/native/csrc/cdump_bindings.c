/* The C header's hot parts (emit/c/csrc/cdump.c, plain C) for Python: the arguments of
 * _btf.c_facts, c_shape_ok, c_definitions, c_render, c_declarations and c_placement
 * made plain arrays, and the results made the reference's objects (emit/c/accel.py). A
 * binding file of canonbtf._btf. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "cdump.h"
#include "grow.h"
#include "pyparts.h"

/* ---- c.type_facts ---- */

static PyObject *latin1(const uint8_t *s, uint32_t len)
{
    return PyUnicode_DecodeLatin1((const char *)s, len, NULL);
}

/* Each type's name, "" for void and the kinds a header never spells. */
static PyObject *type_names(const types_t *t)
{
    PyObject *result = PyList_New((Py_ssize_t)t->count + 1);
    for (uint32_t id = 0; result && id <= t->count; id++) {
        uint32_t len;
        const uint8_t *name = cdump_type_name(t, id, &len);
        PyObject *s = latin1(name, len);
        if (!s) Py_CLEAR(result);
        else PyList_SET_ITEM(result, id, s);
    }
    return result;
}

/* (FUNC id, FUNC name, tag name) of each DECL_TAG of a whole FUNC. */
static PyObject *function_tags(const types_t *t)
{
    PyObject *result = PyList_New(0);
    for (uint32_t i = 0; result && i < t->count; i++) {
        uint32_t target = cdump_tagged_function(t, i), len, flen;
        if (!target) continue;
        const uint8_t *name = name_at(t, t_name(t, i), &len);
        const uint8_t *fname = name_at(t, t_name(t, target - t->first_id), &flen);
        PyObject *one = Py_BuildValue("(kNN)", (unsigned long)target, latin1(fname, flen),
                                      latin1(name, len));
        if (!one || PyList_Append(result, one)) Py_CLEAR(result);
        Py_XDECREF(one);
    }
    return result;
}

PyObject *header_facts(const types_t *t)
{
    if (cdump_facts_apply(t)) return NULL;
    PyObject *info = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)t->count + 1);
    if (!info) return NULL;
    cdump_info_bytes(t, (uint8_t *)PyBytes_AS_STRING(info));
    PyObject *names = type_names(t), *tags = names ? function_tags(t) : NULL;
    PyObject *result = tags ? Py_BuildValue("(kOOO)", (unsigned long)cdump_pointer_size(t),
                                            info, names, tags) : NULL;
    Py_DECREF(info);
    Py_XDECREF(names);
    Py_XDECREF(tags);
    return result;
}

PyObject *header_shape_ok(const types_t *t, unsigned long ptr_size)
{
    int ok = cdump_shape_ok(t, ptr_size);
    return ok < 0 ? NULL : PyBool_FromLong(ok);
}

/* ---- spellings ---- */

/* What the spellings become: one (id, mode) tuple per id and mode, shared by every
 * mention (a header makes 40 k of them from 10 k definitions; made on first use). */
typedef struct {
    const types_t *t;
    const cdump_spellings_t *s;
    PyObject **pairs;
    size_t npairs;
} spelled_t;

static PyObject *mentions_list(spelled_t *o, const cdump_spelling_t *one)
{
    PyObject *list = PyList_New((Py_ssize_t)one->nmentions);
    for (size_t j = 0; list && j < one->nmentions; j++) {
        const cdump_mention_t *m = &o->s->mentions[one->mention_at + j];
        size_t slot = 2 * (size_t)m->id + m->mode;
        if (slot >= o->npairs) {
            PyErr_SetString(PyExc_ValueError, "a mention past the last type");
            Py_CLEAR(list);
            break;
        }
        if (!o->pairs[slot])
            o->pairs[slot] = Py_BuildValue("(kk)", (unsigned long)m->id, (unsigned long)m->mode);
        if (!o->pairs[slot]) {
            Py_CLEAR(list);
            break;
        }
        Py_INCREF(o->pairs[slot]);
        PyList_SET_ITEM(list, (Py_ssize_t)j, o->pairs[slot]);
    }
    return list;
}

static PyObject *enumerators_list(spelled_t *o, const cdump_spelling_t *one)
{
    PyObject *list = PyList_New((Py_ssize_t)one->nenumerators);
    for (size_t j = 0; list && j < one->nenumerators; j++) {
        uint32_t len;
        const uint8_t *name = name_at(o->t, o->s->enumerators[one->enumerator_at + j], &len);
        PyObject *s = latin1(name, len);
        if (!s) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)j, s);
    }
    return list;
}

/* (text, [(id, mode)], [enumerator]), or (text, [(id, mode)]) without `enumerators`. */
static PyObject *spelling_tuple(spelled_t *o, const cdump_spelling_t *one, int enumerators)
{
    PyObject *text = PyUnicode_DecodeLatin1(AT(o->s->text, one->text_at),
                                            (Py_ssize_t)one->text_len, NULL);
    PyObject *refs = text ? mentions_list(o, one) : NULL;
    PyObject *names = refs && enumerators ? enumerators_list(o, one) : NULL;
    if (!refs || (enumerators && !names)) {
        Py_XDECREF(text);
        Py_XDECREF(refs);
        return NULL;
    }
    return enumerators ? PyTuple_Pack(3, text, refs, names) : PyTuple_Pack(2, text, refs);
}

/* The list of every spelling of `s`; with `ids`, also the list of their ids in *ids. */
static PyObject *spellings_list(const types_t *t, const cdump_spellings_t *s, int enumerators,
                                PyObject **ids)
{
    spelled_t o = {t, s, NULL, 2 * ((size_t)t->first_id + t->count)};
    o.pairs = calloc(o.npairs, sizeof *o.pairs);
    PyObject *result = o.pairs ? PyList_New((Py_ssize_t)s->nitems) : PyErr_NoMemory();
    if (ids) *ids = result ? PyList_New((Py_ssize_t)s->nitems) : NULL;
    if (ids && !*ids) Py_CLEAR(result);
    for (size_t k = 0; result && k < s->nitems; k++) {
        PyObject *one = spelling_tuple(&o, &s->items[k], enumerators);
        PyObject *id = one && ids ? PyLong_FromUnsignedLong(s->items[k].id) : NULL;
        if (!one || (ids && !id)) {
            Py_XDECREF(one);
            Py_CLEAR(result);
            if (ids) Py_CLEAR(*ids);
            break;
        }
        PyList_SET_ITEM(result, (Py_ssize_t)k, one);
        if (ids) PyList_SET_ITEM(*ids, (Py_ssize_t)k, id);
    }
    for (size_t j = 0; o.pairs && j < o.npairs; j++) Py_XDECREF(o.pairs[j]);
    free(o.pairs);
    return result;
}

PyObject *header_definitions(const types_t *t, unsigned long ptr_size)
{
    cdump_spellings_t s = {0};
    PyObject *result = NULL, *ids = NULL, *spelled = NULL;
    if (!cdump_definitions(t, ptr_size, &s)) spelled = spellings_list(t, &s, 1, &ids);
    if (spelled) result = PyTuple_Pack(2, ids, spelled);
    Py_XDECREF(ids);
    Py_XDECREF(spelled);
    cdump_spellings_free(&s);
    return result;
}

/* An id from Python (past UINT32_MAX: one the C refuses as no own id); 0, or -1. */
static int id_of(PyObject *o, uint32_t *id)
{
    unsigned long v = PyLong_AsUnsignedLong(o);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return -1;
    *id = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    return 0;
}

/* display: None, or {id: latin-1 bytes} (kept alive by the caller's dict) by id. */
static int read_display(const types_t *t, PyObject *display, cdump_name_t **out)
{
    *out = NULL;
    if (display == Py_None) return 0;
    if (!PyDict_Check(display)) {
        PyErr_SetString(PyExc_ValueError, "display must be a dict");
        return -1;
    }
    size_t nids = (size_t)t->first_id + t->count;
    if (!(*out = calloc(nids, sizeof **out))) return PyErr_NoMemory(), -1;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(display, &pos, &key, &value)) {
        uint32_t id;
        if (id_of(key, &id)) return -1;
        if (id >= nids || !PyBytes_Check(value)) {
            PyErr_SetString(PyExc_ValueError, "display: {own id: bytes}");
            return -1;
        }
        (*out)[id] = (cdump_name_t){PyBytes_AS_STRING(value), (size_t)PyBytes_GET_SIZE(value)};
    }
    return 0;
}

/* The enumerator suffixes {id: {occurrence: str}} (cdump_suffix_fn), the last id's dict
 * at hand. */
typedef struct {
    PyObject *suffixes, *own;
    uint32_t id;
    int known;
} suffixes_t;

static int suffix_of(void *arg, uint32_t id, size_t occurrence, const char **s, size_t *len)
{
    suffixes_t *x = arg;
    *s = NULL;
    if (!x->known || x->id != id) {
        PyObject *key = PyLong_FromUnsignedLong(id);
        x->own = key ? PyDict_GetItemWithError(x->suffixes, key) : NULL;
        Py_XDECREF(key);
        if (!x->own && PyErr_Occurred()) return -1;
        if (x->own && !PyDict_Check(x->own)) {
            PyErr_SetString(PyExc_ValueError, "enumerator suffixes: {id: {occurrence: str}}");
            return -1;
        }
        x->id = id;
        x->known = 1;
    }
    if (!x->own) return 0;
    PyObject *key = PyLong_FromSize_t(occurrence);
    PyObject *suffix = key ? PyDict_GetItemWithError(x->own, key) : NULL;
    Py_XDECREF(key);
    if (!suffix) return PyErr_Occurred() ? -1 : 0;
    Py_ssize_t n;
    if (!(*s = PyUnicode_AsUTF8AndSize(suffix, &n))) return -1;
    *len = (size_t)n;
    return 0;
}

PyObject *header_render(const types_t *t, unsigned long ptr_size, PyObject *ids,
                        PyObject *display, PyObject *suffixes)
{
    if (!PyDict_Check(suffixes)) {
        PyErr_SetString(PyExc_ValueError, "enumerator suffixes must be a dict");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(ids, "ids must be a sequence"), *result = NULL;
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    uint32_t *own = malloc(((size_t)n + 1) * sizeof *own);
    cdump_name_t *shown = NULL;
    cdump_spellings_t s = {0};
    suffixes_t x = {suffixes, NULL, 0, 0};
    if (!own) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++)
        if (id_of(PySequence_Fast_GET_ITEM(seq, k), &own[k])) goto done;
    if (read_display(t, display, &shown)) goto done;
    if (!cdump_render(t, ptr_size, shown, own, (size_t)n, suffix_of, &x, &s))
        result = spellings_list(t, &s, 1, NULL);
done:
    cdump_spellings_free(&s);
    free(shown);
    free(own);
    Py_DECREF(seq);
    return result;
}

PyObject *header_declarations(const types_t *t, unsigned long ptr_size, PyObject *funcs,
                              PyObject *display)
{
    PyObject *seq = PySequence_Fast(funcs, "funcs must be a sequence"), *result = NULL;
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    uint32_t *fids = malloc(((size_t)n + 1) * sizeof *fids);
    cdump_name_t *names = malloc(((size_t)n + 1) * sizeof *names), *shown = NULL;
    cdump_spellings_t s = {0};
    if (!fids || !names) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        unsigned long fid;
        PyObject *name;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, k), "kS", &fid, &name)) goto done;
        fids[k] = fid > UINT32_MAX ? UINT32_MAX : (uint32_t)fid;
        names[k] = (cdump_name_t){PyBytes_AS_STRING(name), (size_t)PyBytes_GET_SIZE(name)};
    }
    if (read_display(t, display, &shown)) goto done;
    if (!cdump_declarations(t, ptr_size, shown, fids, names, (size_t)n, &s))
        result = spellings_list(t, &s, 0, NULL);
done:
    cdump_spellings_free(&s);
    free(shown);
    free(names);
    free(fids);
    Py_DECREF(seq);
    return result;
}

/* ---- placement ---- */

/* Placement's input from `defs` [id], `refs` {id: [(id, mode)]} and `ranks` {id: int}. */
typedef struct {
    cdump_place_in_t in;
    uint32_t *defs;
    uint64_t *rank;
    cdump_mention_t *mentions;
    size_t *mention_at, *nmentions, cap, total;
} place_args_t;

static void place_args_free(place_args_t *a)
{
    FREE_EACH(a->defs, a->rank, a->mentions, a->mention_at, a->nmentions);
}

/* The mentions `refs` of definition k, after those of the ones before it. */
static int read_mentions(place_args_t *a, size_t k, PyObject *refs)
{
    PyObject *seq = PySequence_Fast(refs, "refs must be a sequence");
    if (!seq) return -1;
    size_t at = a->total, n = (size_t)PySequence_Fast_GET_SIZE(seq);
    int rc = -1;
    if (GROW(a->mentions, a->cap, at + n)) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t j = 0; j < n; j++) {
        unsigned long r, mode;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)j), "kk", &r, &mode))
            goto done;
        a->mentions[at + j] = (cdump_mention_t){r > UINT32_MAX ? 0 : (uint32_t)r, mode != 0};
    }
    a->mention_at[k] = at;
    a->nmentions[k] = n;
    a->total = at + n;
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

static int place_args(place_args_t *a, PyObject *defs, PyObject *refs, PyObject *ranks)
{
    memset(a, 0, sizeof *a);
    if (!PyDict_Check(refs) || !PyDict_Check(ranks)) {
        PyErr_SetString(PyExc_ValueError, "refs and ranks must be dicts");
        return -1;
    }
    PyObject *seq = PySequence_Fast(defs, "defs must be a sequence");
    if (!seq) return -1;
    size_t n = (size_t)PySequence_Fast_GET_SIZE(seq);
    int rc = -1;
    if (ZALLOC_EACH(n + 1, ZSLOT(a->defs), ZSLOT(a->rank), ZSLOT(a->mention_at),
                    ZSLOT(a->nmentions))) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t k = 0; k < n; k++) {
        PyObject *key = PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)k);
        if (id_of(key, &a->defs[k])) goto done;
        PyObject *mentions = PyDict_GetItemWithError(refs, key);
        PyObject *r = mentions ? PyDict_GetItemWithError(ranks, key) : NULL;
        if (!mentions || !r) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "refs and ranks must cover the definitions");
            goto done;
        }
        a->rank[k] = PyLong_AsUnsignedLongLong(r);
        if (PyErr_Occurred() || read_mentions(a, k, mentions)) goto done;
    }
    a->in = (cdump_place_in_t){a->defs, a->rank, a->mentions, a->mention_at, a->nmentions, n};
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

static PyObject *u32_list(const uint32_t *ids, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t j = 0; list && j < n; j++) {
        PyObject *id = PyLong_FromUnsignedLong(ids[j]);
        if (!id) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)j, id);
    }
    return list;
}

PyObject *header_placement(const types_t *t, unsigned long ptr_size, PyObject *defs,
                           PyObject *refs, PyObject *ranks)
{
    place_args_t a;
    PyObject *result = NULL;
    uint32_t *sequence = NULL, *forward = NULL;
    size_t nforward = 0;
    if (place_args(&a, defs, refs, ranks)) goto done;
    sequence = malloc((a.in.n + 1) * sizeof *sequence);
    forward = malloc(((size_t)t->first_id + t->count) * sizeof *forward);
    if (!sequence || !forward) {
        PyErr_NoMemory();
        goto done;
    }
    if (cdump_placement(t, ptr_size, &a.in, sequence, forward, &nforward)) goto done;
    PyObject *seq_list = u32_list(sequence, a.in.n), *forward_list = u32_list(forward, nforward);
    if (seq_list && forward_list) result = PyTuple_Pack(2, seq_list, forward_list);
    Py_XDECREF(seq_list);
    Py_XDECREF(forward_list);
done:
    place_args_free(&a);
    free(sequence);
    free(forward);
    return result;
}
