/* canonbtf._btf: the type section checked, ordered and renumbered in C.
 *
 * Every function takes the type section as 32-bit words in host order, checks it as
 * the reader does, and raises ValueError for anything it would not take as the Python
 * reference does (btf/reader.py and canon/accel.py then run the reference, which
 * gives the message).
 * No global state; the GIL is held (each call is a fraction of a second). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basekeys.h"
#include "check.h"
#include "diffjoint.h"
#include "diffkeys.h"
#include "diffspell.h"
#include "failure.h"
#include "intern.h"
#include "keyset.h"
#include "pyparts.h"
#include "pytype.h"
#include "rawdump.h"
#include "refined.h"
#include "types.h"

typedef struct {
    types_t t;
    uint32_t *words;            /* a copy, or NULL where `held` is the words themselves */
    Py_buffer held;             /* an aligned bytes object's buffer (held.obj set) */
    strtab_t *tabs;
    Py_buffer *bufs;
    int nbufs;
    int borrowed;               /* a View's: freed with the View, not by view_free */
} view_t;

/* A checked view kept as a Python object (`view()`), given in place of the words to any
 * function here: vmlinux's 95 k records are indexed and checked once, not at every call
 * (a module's function checks decode its base's types one at a time). */
typedef struct {
    PyObject_HEAD
    view_t v;
} ViewObject;

static void view_free(view_t *v)
{
    if (v->borrowed) {
        memset(v, 0, sizeof *v);
        return;
    }
    for (int k = 0; k < v->nbufs; k++) PyBuffer_Release(&v->bufs[k]);
    if (v->held.obj) PyBuffer_Release(&v->held);
    free(v->bufs);
    free(v->tabs);
    free(v->words);
    free(v->t.start);
    memset(v, 0, sizeof *v);
}

static int bad(const char *what)
{
    PyErr_SetString(PyExc_ValueError, what);
    return -1;
}

/* The string chain: a sequence of (start, bytes-like), deepest base first, own last. */
static int read_tabs(view_t *v, PyObject *strings)
{
    PyObject *seq = PySequence_Fast(strings, "strings must be a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = -1;
    if (n < 1 || n > 64) {
        bad("strings must hold 1 to 64 tables");
        goto done;
    }
    v->tabs = calloc((size_t)n, sizeof *v->tabs);
    v->bufs = calloc((size_t)n, sizeof *v->bufs);
    if (!v->tabs || !v->bufs) {
        PyErr_NoMemory();
        goto done;
    }
    uint64_t end = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        unsigned long start;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, k), "ky*", &start, &v->bufs[k]))
            goto done;
        v->nbufs++;
        if (start != end || (uint64_t)start + (uint64_t)v->bufs[k].len > UINT32_MAX) {
            bad("string tables must follow one another");
            goto done;
        }
        v->tabs[k] = (strtab_t){v->bufs[k].buf, (uint32_t)start, (uint32_t)v->bufs[k].len};
        end = start + (uint64_t)v->bufs[k].len;
    }
    v->t.tabs = v->tabs;
    v->t.ntabs = (int)n;
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

static PyTypeObject ViewType;

/* A checked view of a type section: words (bytes-like, host order), first own id; or the
 * View made of them (then `strings` are the View's, and first_id must be its own). */
static int view_init(view_t *v, PyObject *words, unsigned long first_id, PyObject *strings)
{
    memset(v, 0, sizeof *v);
    if (Py_IS_TYPE(words, &ViewType)) {
        *v = ((ViewObject *)words)->v;
        v->borrowed = 1;
        return first_id == v->t.first_id ? 0 : bad("first_id is not the view's");
    }
    Py_buffer b;
    if (PyObject_GetBuffer(words, &b, PyBUF_SIMPLE)) return -1;
    if (b.len % 4 || first_id < 1 || first_id > UINT32_MAX / 2) {
        PyBuffer_Release(&b);
        return bad("words must be whole 32-bit words and first_id in range");
    }
    v->t.nwords = (size_t)b.len / 4;
    v->t.first_id = (uint32_t)first_id;
    if (PyBytes_CheckExact(words) && (uintptr_t)b.buf % sizeof(uint32_t) == 0) {
        /* Immutable and aligned: read in place (a copy of 4 MB per call saved). */
        v->held = b;
        v->t.w = b.buf;
    } else {
        v->words = malloc(b.len ? (size_t)b.len : 4);
        if (!v->words) {
            PyBuffer_Release(&b);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(v->words, b.buf, (size_t)b.len);
        v->t.w = v->words;
        PyBuffer_Release(&b);
    }
    if (read_tabs(v, strings)) return -1;
    const strtab_t *own_tab = &v->tabs[v->nbufs - 1];
    if (index_types(&v->t, own_tab->start + own_tab->len))
        return bad("the type section is not one the reader takes");
    return 0;
}

/* A u32 array argument of `need` entries (0: any), copied; NULL for None. */
static int u32_arg(PyObject *obj, size_t need, uint32_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (obj == Py_None) return 0;
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE)) return -1;
    if (b.len % 4 || (need && (size_t)b.len / 4 != need)) {
        PyBuffer_Release(&b);
        return bad("an id array has the wrong length");
    }
    *out = malloc(b.len ? (size_t)b.len : 4);
    if (!*out) {
        PyBuffer_Release(&b);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(*out, b.buf, (size_t)b.len);
    *count = (size_t)b.len / 4;
    PyBuffer_Release(&b);
    return 0;
}

static int check_redirect(const view_t *v, const uint32_t *redirect)
{
    uint32_t nids = v->t.first_id + v->t.count;
    for (uint32_t id = 0; id < nids; id++)
        if (redirect[id] >= nids) return bad("redirect holds an id past the last one");
    return 0;
}

/* The view of a type section with a list of own ids (`ids_obj`, a u32 array; None: NULL)
 * and an optional redirect (a new id per id, checked), as order and renumber take them.
 * 0, or -1 with an exception set; the caller frees the three either way. */
static int view_ids_redirect(view_t *v, PyObject *words, unsigned long first_id,
                             PyObject *strings, PyObject *ids_obj, uint32_t **ids,
                             size_t *nids, PyObject *redirect_obj, uint32_t **redirect)
{
    size_t nredirect;
    if (view_init(v, words, first_id, strings)
        || u32_arg(ids_obj, 0, ids, nids)
        || u32_arg(redirect_obj, v->t.first_id + v->t.count, redirect, &nredirect))
        return -1;
    return *redirect && check_redirect(v, *redirect) ? -1 : 0;
}

static PyObject *py_order(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"words", "first_id", "strings", "by_name", "nodes", "redirect", NULL};
    PyObject *words, *strings, *nodes_obj = Py_None, *redirect_obj = Py_None;
    unsigned long first_id;
    int by_name;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OkOp|OO", names, &words, &first_id, &strings,
                                     &by_name, &nodes_obj, &redirect_obj))
        return NULL;
    view_t v;
    uint32_t *nodes = NULL, *redirect = NULL, *out = NULL;
    size_t nnodes = 0;
    PyObject *result = NULL;
    if (view_ids_redirect(&v, words, first_id, strings, nodes_obj, &nodes, &nnodes,
                          redirect_obj, &redirect))
        goto done;
    if (!nodes) {
        nnodes = v.t.count;
        nodes = malloc((nnodes ? nnodes : 1) * sizeof *nodes);
        if (!nodes) goto nomem;
        for (uint32_t j = 0; j < v.t.count; j++) nodes[j] = v.t.first_id + j;
    }
    out = malloc((nnodes ? nnodes : 1) * sizeof *out);
    if (!out) goto nomem;
    int alone = 0;
    int rc = canonical_order(&v.t, nodes, (uint32_t)nnodes, redirect, by_name, out, &alone);
    if (rc == -2) {
        bad("nodes must be distinct own ids and edges must stay among them");
        goto done;
    }
    if (rc) goto nomem;
    result = Py_BuildValue("(y#O)", (const char *)out, (Py_ssize_t)(nnodes * 4),
                           alone ? Py_True : Py_False);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(out);
    free(nodes);
    free(redirect);
    view_free(&v);
    return result;
}

static PyObject *py_renumber(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"words", "first_id", "strings", "order", "redirect", "names", NULL};
    PyObject *words, *strings, *order_obj, *redirect_obj = Py_None;
    unsigned long first_id;
    int with_names = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OkOO|Op", names, &words, &first_id, &strings,
                                     &order_obj, &redirect_obj, &with_names))
        return NULL;
    view_t v;
    uint32_t *order = NULL, *redirect = NULL;
    size_t norder = 0;
    PyObject *result = NULL;
    if (view_ids_redirect(&v, words, first_id, strings, order_obj, &order, &norder,
                          redirect_obj, &redirect))
        goto done;
    uint32_t nids = v.t.first_id + v.t.count;
    for (size_t j = 0; j < norder; j++)
        if (order[j] < v.t.first_id || order[j] >= nids) {
            bad("order holds an id that is not an own one");
            goto done;
        }
    renumbered_t r;
    if (renumber_types(&v.t, order, (uint32_t)norder, redirect, v.nbufs - 1, with_names, &r)) {
        PyErr_NoMemory();
        goto done;
    }
    if (with_names)
        result = Py_BuildValue("(y#y#)", (const char *)r.words, (Py_ssize_t)(r.nwords * 4),
                               (const char *)r.strings, (Py_ssize_t)r.strings_len);
    else
        result = Py_BuildValue("(y#O)", (const char *)r.words, (Py_ssize_t)(r.nwords * 4),
                               Py_None);
    free(r.words);
    free(r.strings);
done:
    free(order);
    free(redirect);
    view_free(&v);
    return result;
}

/* The first own PTR, TYPEDEF or modifier whose target is a FUNC (validator.
 * order_dependent_reference), 0 when none; `base_kinds` holds the kind of each base id. */
static PyObject *py_func_reference(PyObject *self, PyObject *args)
{
    PyObject *words, *strings;
    unsigned long first_id;
    Py_buffer kinds;
    if (!PyArg_ParseTuple(args, "OkOy*", &words, &first_id, &strings, &kinds)) return NULL;
    view_t v;
    PyObject *result = NULL;
    if (view_init(&v, words, first_id, strings)) goto done;
    if ((uint64_t)kinds.len != first_id) {
        bad("base_kinds must hold one kind per id below first_id");
        goto done;
    }
    const uint8_t *base_kinds = kinds.buf;
    unsigned long found = 0;
    for (uint32_t i = 0; i < v.t.count && !found; i++) {
        uint32_t kind = t_kind(&v.t, i), target = t_sot(&v.t, i);
        if (!(kind == K_PTR || kind == K_TYPEDEF || kind == K_VOLATILE || kind == K_CONST
              || kind == K_RESTRICT || kind == K_TYPE_TAG) || !target)
            continue;
        uint32_t target_kind = target < v.t.first_id ? base_kinds[target]
                                                     : t_kind(&v.t, target - v.t.first_id);
        if (target_kind == K_FUNC) found = v.t.first_id + i;
    }
    result = PyLong_FromUnsignedLong(found);
done:
    PyBuffer_Release(&kinds);
    view_free(&v);
    return result;
}

/* The base levels of split BTF under view `v`: each a bytes-like of words, deepest
 * first, indexed as the reader checked it (ids from 1 on, names up to its own table).
 * Fills levels[0..nbases-1] (words copied into *copies), then levels[nbases] = v's. */
static int base_levels(const view_t *v, PyObject *bases, types_t *levels, uint32_t **copies,
                       Py_ssize_t nbases)
{
    uint32_t next = 1;
    for (Py_ssize_t k = 0; k < nbases; k++) {
        Py_buffer b;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(bases, k), &b, PyBUF_SIMPLE)) return -1;
        copies[k] = malloc(b.len ? (size_t)b.len : 4);
        if (!copies[k]) {
            PyBuffer_Release(&b);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(copies[k], b.buf, (size_t)b.len);
        types_t *t = &levels[k];
        *t = (types_t){.w = copies[k], .nwords = (size_t)b.len / 4, .first_id = next,
                       .tabs = v->tabs, .ntabs = (int)k + 1};
        int whole = b.len % 4 == 0;
        PyBuffer_Release(&b);
        const strtab_t *tab = &v->tabs[k];
        if (!whole || index_types(t, tab->start + tab->len))
            return bad("a base type section is not one the reader takes");
        if ((uint64_t)next + t->count > v->t.first_id) return bad("the bases hold too many types");
        next += t->count;
    }
    if (next != v->t.first_id) return bad("first_id must follow the bases' types");
    levels[nbases] = v->t;
    return 0;
}

#define MAX_CHAIN 40     /* more than a finding's longest chain of ids (check.c) */

/* The name at `off` in `t`'s string chain, as check/env.py CheckEnv.name_at reads it. */
static PyObject *name_str(const types_t *t, uint32_t off)
{
    uint32_t len;
    const uint8_t *p = name_at(t, off, &len);
    return PyUnicode_DecodeLatin1((const char *)p, len, NULL);
}

/* A tuple of `n` new references (stolen), or NULL (all released) when one is NULL. */
static PyObject *tuple_of(Py_ssize_t n, PyObject **items)
{
    PyObject *tuple = NULL;
    int whole = 1;
    for (Py_ssize_t j = 0; j < n; j++) whole &= items[j] != NULL;
    if (whole) tuple = PyTuple_New(n);
    for (Py_ssize_t j = 0; j < n; j++) {
        if (tuple) PyTuple_SET_ITEM(tuple, j, items[j]);
        else Py_XDECREF(items[j]);
    }
    return tuple;
}

static PyObject *none(void)
{
    Py_INCREF(Py_None);
    return Py_None;
}

/* One value of a finding as check/words takes it; *k moves past what it used. */
static PyObject *finding_value(const types_t *t, const check_value_t *v, uint32_t *k,
                               uint32_t count)
{
    const check_value_t *x = &v[(*k)++];
    switch (x->tag) {
    case V_NAME: return name_str(t, (uint32_t)x->v);
    case V_TYPE: {
        int exists = x->kind != CHECK_NO_KIND;
        PyObject *items[3] = {PyLong_FromLongLong(x->v),
                              exists ? PyLong_FromLong(x->kind) : none(),
                              exists ? name_str(t, x->name_off) : PyUnicode_FromString("")};
        return tuple_of(3, items);
    }
    case V_MEMBER: {
        uint32_t off = (uint32_t)(x->v >> 32);
        PyObject *items[2] = {off ? name_str(t, off) : none(),
                              PyLong_FromLongLong(x->v & 0xFFFFFFFF)};
        return tuple_of(2, items);
    }
    case V_CHAIN: {
        if (x->v < 0 || (uint64_t)x->v > count - *k) return bad("a chain past its finding"), NULL;
        PyObject *items[MAX_CHAIN];
        Py_ssize_t n = (Py_ssize_t)x->v;
        if (n > MAX_CHAIN) return bad("a chain too long"), NULL;
        for (Py_ssize_t j = 0; j < n; j++) items[j] = PyLong_FromLongLong(v[(*k)++].v);
        return tuple_of(n, items);
    }
    default: return PyLong_FromLongLong(x->v);
    }
}

/* (type id, kind, name, message key, values) of one finding. */
static PyObject *finding_tuple(const types_t *t, const check_findings_t *found, size_t i,
                               PyObject *const *keys)
{
    const check_finding_t *f = &found->f[i];
    const check_value_t *v = found->v + f->first;
    PyObject *values[MAX_CHAIN + 2];
    Py_ssize_t n = 0;
    for (uint32_t k = 0; k < f->count && n < MAX_CHAIN + 2;) values[n++] = finding_value(t, v, &k, f->count);
    Py_INCREF(keys[f->key]);
    PyObject *items[5] = {PyLong_FromUnsignedLong(f->id), PyLong_FromLong(f->kind),
                          name_str(t, f->name_off), keys[f->key], tuple_of(n, values)};
    return tuple_of(5, items);
}

/* Findings [start, end) as a list of finding_tuple. */
static PyObject *findings_list(const types_t *t, const check_findings_t *found, size_t start,
                               size_t end)
{
    PyObject *keys[256] = {0}, *list = PyList_New((Py_ssize_t)(end - start));
    int ok = list && CHECK_NKEYS <= 256;
    for (int k = 0; ok && k < CHECK_NKEYS; k++) ok = (keys[k] = PyUnicode_InternFromString(check_keys[k])) != NULL;
    for (size_t i = start; ok && i < end; i++) {
        PyObject *tuple = finding_tuple(t, found, i, keys);
        if (tuple) PyList_SET_ITEM(list, (Py_ssize_t)(i - start), tuple);
        else ok = 0;
    }
    for (int k = 0; k < CHECK_NKEYS && k < 256; k++) Py_XDECREF(keys[k]);
    if (!ok) Py_CLEAR(list);
    return list;
}

/* What rules_check hands Python: its findings and the view whose strings name them,
 * worded a chunk at a time (all as tuples at once were most of `check`'s memory). */
typedef struct {
    view_t v;
    check_findings_t found;
} checked_t;

#define FINDINGS_CAPSULE "canonbtf._btf.findings"

static void checked_free(checked_t *c)
{
    findings_free(&c->found);
    view_free(&c->v);
    free(c);
}

static void checked_capsule_free(PyObject *capsule)
{
    checked_t *c = PyCapsule_GetPointer(capsule, FINDINGS_CAPSULE);
    if (c) checked_free(c);
}

/* validator.validate_in_python's type-section violations (check.c), sorted by id, for
 * rules_findings to hand out; None where the reference must run. The own words, first
 * id, string chain, and the bases' words (deepest first). */
static PyObject *py_rules_check(PyObject *self, PyObject *args)
{
    PyObject *words, *strings, *bases_obj;
    unsigned long first_id;
    if (!PyArg_ParseTuple(args, "OkOO", &words, &first_id, &strings, &bases_obj)) return NULL;
    checked_t *c = calloc(1, sizeof *c);
    PyObject *result = NULL, *bases = PySequence_Tuple(bases_obj);
    Py_ssize_t nbases = bases ? PyTuple_GET_SIZE(bases) : 0;
    types_t *levels = NULL;
    uint32_t **copies = NULL;
    if (!c) PyErr_NoMemory();
    if (!c || !bases || view_init(&c->v, words, first_id, strings)) goto done;
    if (nbases != c->v.nbufs - 1) {
        bad("one string table per base and one own");
        goto done;
    }
    levels = calloc((size_t)nbases + 1, sizeof *levels);
    copies = calloc((size_t)nbases + 1, sizeof *copies);
    if (!levels || !copies) {
        PyErr_NoMemory();
        goto done;
    }
    if (base_levels(&c->v, bases, levels, copies, nbases)) goto done;
    int rc = rules_check(levels, (int)nbases + 1, &c->found);
    if (rc < 0) PyErr_NoMemory();
    else if (rc) result = (Py_INCREF(Py_None), Py_None);
    else if ((result = PyCapsule_New(c, FINDINGS_CAPSULE, checked_capsule_free))) c = NULL;
done:
    for (Py_ssize_t k = 0; levels && copies && k < nbases; k++) {
        free(levels[k].start);
        free(copies[k]);
    }
    free(levels);
    free(copies);
    Py_XDECREF(bases);
    if (c) checked_free(c);
    return result;
}

/* rules_check's findings from `start`, at most `count`, as (type id, kind, name,
 * check/words key, values); [] past the last. */
static PyObject *py_rules_findings(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    Py_ssize_t start, count;
    if (!PyArg_ParseTuple(args, "Onn", &capsule, &start, &count)) return NULL;
    checked_t *c = PyCapsule_GetPointer(capsule, FINDINGS_CAPSULE);
    if (!c) return NULL;
    if (start < 0 || count < 0) return bad("start and count must not be negative"), NULL;
    size_t nf = c->found.nf, from = (size_t)start < nf ? (size_t)start : nf;
    size_t end = (size_t)count < nf - from ? from + (size_t)count : nf;
    return findings_list(&c->v.t, &c->found, from, end);
}

/* A function of the checked type section alone: (words, first_id, strings) -> fn(view). */
static PyObject *on_view(PyObject *args, PyObject *(*fn)(const types_t *))
{
    PyObject *words, *strings;
    unsigned long first_id;
    if (!PyArg_ParseTuple(args, "OkO", &words, &first_id, &strings)) return NULL;
    view_t v;
    PyObject *result = NULL;
    if (!view_init(&v, words, first_id, strings)) result = fn(&v.t);
    view_free(&v);
    return result;
}

static PyObject *record_count(const types_t *t) { return PyLong_FromUnsignedLong(t->count); }

static PyObject *kind_bytes(const types_t *t)
{
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)t->count);
    if (!result) return NULL;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
    for (uint32_t i = 0; i < t->count; i++) out[i] = (uint8_t)t_kind(t, i);
    return result;
}

static PyObject *py_check(PyObject *self, PyObject *args) { return on_view(args, record_count); }
static PyObject *py_kinds(PyObject *self, PyObject *args) { return on_view(args, kind_bytes); }
static PyObject *py_labels(PyObject *self, PyObject *args) { return on_view(args, label_tuples); }

static PyObject *py_decode(PyObject *self, PyObject *args)
{
    PyObject *words, *strings, *type_class, *ids_arg = Py_None;
    unsigned long first_id;
    if (!PyArg_ParseTuple(args, "OkOO|O", &words, &first_id, &strings, &type_class, &ids_arg))
        return NULL;
    view_t v;
    PyObject *result = NULL;
    uint32_t *ids = NULL;
    size_t nids = 0;
    if (!view_init(&v, words, first_id, strings) && !u32_arg(ids_arg, 0, &ids, &nids)) {
        int ok = 1;
        for (size_t k = 0; k < nids && ok; k++)
            ok = ids[k] >= v.t.first_id && ids[k] - v.t.first_id < v.t.count;
        if (!ok) bad("an id is not one of the section's");
        else result = decode_types(&v.t, type_class, ids_arg == Py_None ? NULL : ids, nids);
    }
    free(ids);
    view_free(&v);
    return result;
}

static PyObject *py_pack(PyObject *self, PyObject *types)
{
    return pack_types(types);
}

/* dedup._sharing: the indexes 1.. of `values` (u32) whose value another index 1.. has too,
 * ascending, as u32 bytes; None when a value is too large to count in a table of a few
 * entries per value (the caller then counts in Python). */
static PyObject *py_sharing(PyObject *self, PyObject *values_obj)
{
    uint32_t *values, *counts = NULL;
    size_t n;
    if (u32_arg(values_obj, 0, &values, &n)) return NULL;
    PyObject *result = NULL;
    uint32_t most = 0;
    for (size_t i = 1; i < n; i++)
        if (values[i] > most) most = values[i];
    if (n < 2 || most > 4 * (uint64_t)n + 16) {
        free(values);
        if (n < 2) return PyBytes_FromStringAndSize(NULL, 0);
        Py_RETURN_NONE;
    }
    if (!(counts = big_zalloc((size_t)most + 1, sizeof *counts))) {
        free(values);
        return PyErr_NoMemory();
    }
    size_t shared = 0;
    for (size_t i = 1; i < n; i++) counts[values[i]]++;
    for (size_t i = 1; i < n; i++) shared += counts[values[i]] > 1;
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(shared * sizeof(uint32_t)));
    if (result) {
        uint32_t *out = (uint32_t *)PyBytes_AS_STRING(result);
        for (size_t i = 1, k = 0; i < n; i++)
            if (counts[values[i]] > 1) out[k++] = (uint32_t)i;
    }
    free(counts);
    free(values);
    return result;
}

/* The indices i >= 1 of u32 `values` whose value is one of u32 `wanted`, ascending, as
 * u32 bytes (dedup._named_groups: the definitions of the names a declaration has, among
 * a module's base's 95 k types); None when a value is too large for a table of a few
 * entries per value (the caller then looks in Python). */
static PyObject *py_members(PyObject *self, PyObject *args)
{
    PyObject *values_obj, *wanted_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "OO", &values_obj, &wanted_obj)) return NULL;
    uint32_t *values, *wanted = NULL, most = 0;
    uint8_t *in = NULL;
    size_t n, m;
    if (u32_arg(values_obj, 0, &values, &n)) return NULL;
    if (u32_arg(wanted_obj, 0, &wanted, &m)) goto done;
    for (size_t i = 1; i < n; i++)
        if (values[i] > most) most = values[i];
    if (most > 4 * (uint64_t)n + 16) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    if (!(in = big_zalloc((size_t)most + 1, 1))) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t k = 0; k < m; k++)
        if (wanted[k] <= most) in[wanted[k]] = 1;
    size_t count = 0;
    for (size_t i = 1; i < n; i++) count += in[values[i]];
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(count * sizeof(uint32_t)));
    if (result) {
        uint32_t *out = (uint32_t *)PyBytes_AS_STRING(result);
        for (size_t i = 1, k = 0; i < n; i++)
            if (in[values[i]]) out[k++] = (uint32_t)i;
    }
done:
    free(in), free(wanted), free(values);
    return result;
}

/* (key, token key, declares, kind) of void and every type (dedup._abstract_keys; keys as
 * u32 bytes, declares and kinds one byte each: dedup.is_declaration); a BTF with a base is refused
 * (its keys continue the base's). */
static PyObject *py_abstract_keys(PyObject *self, PyObject *args)
{
    PyObject *words, *strings;
    unsigned long first_id, base_count = 0;
    if (!PyArg_ParseTuple(args, "OkO|k", &words, &first_id, &strings, &base_count)) return NULL;
    if (first_id != 1) {
        bad("abstract keys are for a BTF without a base, or a base and its split BTF as one");
        return NULL;
    }
    view_t v;
    PyObject *result = NULL, *keys = NULL, *tokens = NULL, *declares = NULL, *kinds = NULL;
    if (view_init(&v, words, first_id, strings)) goto done;
    Py_ssize_t size = ((Py_ssize_t)v.t.count + 1) * 4;
    keys = PyBytes_FromStringAndSize(NULL, size);
    tokens = PyBytes_FromStringAndSize(NULL, size);
    if (!keys || !tokens) goto done;
    uint32_t *key = (uint32_t *)PyBytes_AS_STRING(keys), *token = (uint32_t *)PyBytes_AS_STRING(tokens);
    key[0] = token[0] = 0;
    if (base_count > v.t.count) {
        bad("abstract keys: the base has more types than the section");
        goto done;
    }
    if (abstract_keys(&v.t, (uint32_t)base_count, key + 1, token + 1)) {
        PyErr_NoMemory();
        goto done;
    }
    declares = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)v.t.count + 1);
    kinds = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)v.t.count + 1);
    if (!declares || !kinds) goto done;
    uint8_t *flag = (uint8_t *)PyBytes_AS_STRING(declares), *kind_of = (uint8_t *)PyBytes_AS_STRING(kinds);
    flag[0] = kind_of[0] = 0;
    for (uint32_t i = 0; i < v.t.count; i++) {
        uint32_t kind = t_kind(&v.t, i);
        kind_of[i + 1] = (uint8_t)kind;
        flag[i + 1] = kind == K_FWD || ((kind == K_ENUM || kind == K_ENUM64) && !t_vlen(&v.t, i));
    }
    result = PyTuple_Pack(4, keys, tokens, declares, kinds);
done:
    Py_XDECREF(keys);
    Py_XDECREF(tokens);
    Py_XDECREF(declares);
    Py_XDECREF(kinds);
    view_free(&v);
    return result;
}

/* Declaration flags and kinds of types [0, t->count) at flag[at..], kind_of[at..]. */
static void declares_and_kinds(const types_t *t, size_t at, uint8_t *flag, uint8_t *kind_of)
{
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t kind = t_kind(t, i);
        kind_of[at + i] = (uint8_t)kind;
        flag[at + i] = kind == K_FWD || ((kind == K_ENUM || kind == K_ENUM64) && !t_vlen(t, i));
    }
}

/* A kept file mapped read-only (its pages are the page cache's: read() into new memory
 * cost 6-8 ms of faults for vmlinux's 4 MB); len 0 where it cannot be (missing, not a
 * regular file, empty). Kept files are replaced by renaming, never rewritten in place. */
typedef struct {
    void *data;
    size_t len;
} mapped_t;

static void map_kept(const char *path, mapped_t *m)
{
    struct stat st;
    m->data = NULL, m->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0
        && (uint64_t)st.st_size <= SIZE_MAX / 2) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) m->data = p, m->len = (size_t)st.st_size;
    }
    close(fd);
}

/* The keys of a module over its base's kept part (basekeys.c), read from `path`; they
 * are made anew when it cannot be read or is not whole (damaged, of another version). */
static PyObject *keys_over(const view_t *b, const view_t *v, const char *path)
{
    PyObject *result = NULL, *keys = NULL, *tokens = NULL, *declares = NULL, *kinds = NULL;
    PyObject *made = NULL;
    mapped_t kept = {NULL, 0};
    base_keys_t bk;
    uint8_t *blob = NULL;
    size_t blob_len = 0;
    map_kept(path, &kept);
    if (!kept.len || base_keys_read(&b->t, kept.data, kept.len, &bk)) {
        if (base_keys_make(&b->t, &blob, &blob_len)) goto nomem;
        if (base_keys_read(&b->t, blob, blob_len, &bk)) {
            bad("keys over a base: the base's keys as made do not read back");
            goto done;
        }
        if (!(made = PyBytes_FromStringAndSize((const char *)blob, (Py_ssize_t)blob_len))) goto done;
    }
    size_t nb = b->t.count, total = nb + v->t.count + 1;
    keys = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * 4));
    tokens = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * 4));
    declares = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    kinds = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!keys || !tokens || !declares || !kinds) goto done;
    uint32_t *key = (uint32_t *)PyBytes_AS_STRING(keys), *token = (uint32_t *)PyBytes_AS_STRING(tokens);
    key[0] = token[0] = 0;
    memcpy(key + 1, bk.key, nb * 4), memcpy(token + 1, bk.token_key, nb * 4);
    if (abstract_keys_over(&b->t, &bk, &v->t, key + 1 + nb, token + 1 + nb)) goto nomem;
    uint8_t *flag = (uint8_t *)PyBytes_AS_STRING(declares), *kind_of = (uint8_t *)PyBytes_AS_STRING(kinds);
    flag[0] = kind_of[0] = 0;
    declares_and_kinds(&b->t, 1, flag, kind_of);
    declares_and_kinds(&v->t, 1 + nb, flag, kind_of);
    result = Py_BuildValue("(OOOOO)", keys, tokens, declares, kinds, made ? made : Py_None);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    if (kept.len) munmap(kept.data, kept.len);
    free(blob);
    Py_XDECREF(keys), Py_XDECREF(tokens), Py_XDECREF(declares), Py_XDECREF(kinds);
    Py_XDECREF(made);
    return result;
}

/* Whether the string chain of `t` starts with `base`'s whole chain. */
static int same_chain(const types_t *base, const types_t *t)
{
    if (t->ntabs != base->ntabs + 1) return 0;
    for (int k = 0; k < base->ntabs; k++) {
        const strtab_t *a = &base->tabs[k], *c = &t->tabs[k];
        if (a->start != c->start || a->len != c->len
            || (a->data != c->data && memcmp(a->data, c->data, a->len)))
            return 0;
    }
    return 1;
}

static PyObject *py_keys_over(PyObject *self, PyObject *args)
{
    PyObject *base_words, *base_strings, *words, *strings, *path;
    unsigned long first_id;
    if (!PyArg_ParseTuple(args, "OOOkOO&", &base_words, &base_strings, &words, &first_id,
                          &strings, PyUnicode_FSConverter, &path))
        return NULL;
    view_t b, v;
    PyObject *result = NULL;
    memset(&v, 0, sizeof v);
    if (view_init(&b, base_words, 1, base_strings)) return Py_DECREF(path), NULL;
    if (!view_init(&v, words, first_id, strings)) {
        if (first_id != (unsigned long)b.t.count + 1 || !same_chain(&b.t, &v.t))
            bad("keys over a base: the section does not follow the base");
        else
            result = keys_over(&b, &v, PyBytes_AS_STRING(path));
    }
    view_free(&v), view_free(&b);
    Py_DECREF(path);
    return result;
}

/* u32 bytes of the `count` entries at a. */
static PyObject *u32_bytes(const uint32_t *a, size_t count)
{
    return PyBytes_FromStringAndSize((const char *)a, (Py_ssize_t)(count * sizeof *a));
}

/* The views of dedup_refined: the own section at ids first_id.., after `base` (None: the
 * section starts at id 1). -1 with an exception set. */
static int refined_views(PyObject *base_words, PyObject *base_strings, PyObject *words,
                         unsigned long first_id, PyObject *strings, view_t *b, view_t *v)
{
    memset(b, 0, sizeof *b), memset(v, 0, sizeof *v);
    if (base_words == Py_None)
        return first_id == 1 ? view_init(v, words, 1, strings) : bad("no base: first_id must be 1");
    if (view_init(b, base_words, 1, base_strings) || view_init(v, words, first_id, strings))
        return -1;
    if (first_id != (unsigned long)b->t.count + 1 || !same_chain(&b->t, &v->t))
        return bad("refined over a base: the section does not follow the base");
    return 0;
}

/* dedup._refined on keyed_types' arrays (canon/csrc/refined.c): (rank, stands_for,
 * classes) of ids 0..last and the twins' candidates, as u32 bytes. */
static PyObject *py_dedup_refined(PyObject *self, PyObject *args)
{
    PyObject *base_words, *base_strings, *words, *strings, *key_obj, *token_obj, *shared_obj;
    unsigned long first_id;
    Py_buffer declares;
    if (!PyArg_ParseTuple(args, "OOOkOOOy*O", &base_words, &base_strings, &words, &first_id,
                          &strings, &key_obj, &token_obj, &declares, &shared_obj))
        return NULL;
    view_t b, v;
    uint32_t *key = NULL, *token = NULL, *shared = NULL;
    size_t count, nshared;
    refined_t r = {0};
    PyObject *result = NULL;
    if (refined_views(base_words, base_strings, words, first_id, strings, &b, &v)) goto done;
    uint32_t last = v.t.first_id + v.t.count - 1;
    if (u32_arg(key_obj, (size_t)last + 1, &key, &count)
        || u32_arg(token_obj, (size_t)last + 1, &token, &count)
        || u32_arg(shared_obj, 0, &shared, &nshared))
        goto done;
    if (!key || !token || !shared || (size_t)declares.len != (size_t)last + 1) {
        bad("refined: the keys, tokens and declaration flags must cover every id");
        goto done;
    }
    int rc = dedup_refined(base_words == Py_None ? NULL : &b.t, &v.t, key, token,
                           (const uint8_t *)declares.buf, last, shared, (uint32_t)nshared, &r);
    if (rc == -1) PyErr_NoMemory();
    else if (rc) bad("refined: a shared id or an edge out of range");
    else
        result = Py_BuildValue("NNNN", u32_bytes(r.rank, (size_t)last + 1),
                               u32_bytes(r.stands_for, (size_t)last + 1),
                               u32_bytes(r.classes, (size_t)last + 1),
                               u32_bytes(r.twins, r.ntwins));
done:
    refined_free(&r);
    free(key), free(token), free(shared);
    view_free(&v), view_free(&b);
    PyBuffer_Release(&declares);
    return result;
}

/* The ids first..last that `nodes` (u32) does not hold, ascending, as u32 bytes
 * (canon._kept_ids: a Python step per merged id was 3 % of a module's run). */
static PyObject *py_kept_ids(PyObject *self, PyObject *args)
{
    unsigned long first, last;
    PyObject *nodes_obj;
    if (!PyArg_ParseTuple(args, "kkO", &first, &last, &nodes_obj)) return NULL;
    uint32_t *nodes = NULL;
    size_t n;
    uint8_t *gone = NULL;
    PyObject *result = NULL;
    if (u32_arg(nodes_obj, 0, &nodes, &n)) return NULL;
    if (!nodes || first < 1 || last >= UINT32_MAX || first > last + 1) {
        bad("kept_ids: ids first..last and a u32 array");
        goto done;
    }
    if (!(gone = big_zalloc((size_t)last - first + 2, 1))) {
        PyErr_NoMemory();
        goto done;
    }
    size_t kept = (size_t)last - first + 1;
    for (size_t j = 0; j < n; j++)
        if (nodes[j] >= first && nodes[j] <= last && !gone[nodes[j] - first]) {
            gone[nodes[j] - first] = 1;
            kept--;
        }
    if (!(result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(kept * sizeof(uint32_t)))))
        goto done;
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(result);
    for (uint32_t id = (uint32_t)first, k = 0; id <= last && k < kept; id++)
        if (!gone[id - first]) out[k++] = id;
done:
    free(nodes), free(gone);
    return result;
}

/* dedup.merge_map's groups (refined.c): (ids, their representatives) as u32 bytes, or
 * None for class numbers it does not take. */
static PyObject *py_dedup_into(PyObject *self, PyObject *args)
{
    PyObject *classes_obj, *moved_obj;
    Py_buffer declares, kinds;
    if (!PyArg_ParseTuple(args, "OOy*y*", &classes_obj, &moved_obj, &declares, &kinds))
        return NULL;
    uint32_t *classes = NULL, *nodes = NULL, *reps = NULL, n = 0;
    size_t count;
    Py_buffer moved = {0};
    PyObject *result = NULL;
    if (u32_arg(classes_obj, 0, &classes, &count)
        || (moved_obj != Py_None && PyObject_GetBuffer(moved_obj, &moved, PyBUF_SIMPLE)))
        goto done;
    if (!classes || !count || count > UINT32_MAX || (size_t)declares.len != count
        || (size_t)kinds.len != count || (moved.obj && (size_t)moved.len != count)) {
        bad("dedup_into: classes, flags and kinds must cover the same ids");
        goto done;
    }
    int rc = dedup_into(classes, moved.obj ? moved.buf : NULL, declares.buf, kinds.buf,
                        (uint32_t)(count - 1), &nodes, &reps, &n);
    if (rc == -1) PyErr_NoMemory();
    else if (rc) result = Py_NewRef(Py_None);
    else result = Py_BuildValue("NN", u32_bytes(nodes, n), u32_bytes(reps, n));
done:
    free(classes), free(nodes), free(reps);
    if (moved.obj) PyBuffer_Release(&moved);
    PyBuffer_Release(&declares), PyBuffer_Release(&kinds);
    return result;
}

/* A redirect over ids 0..count-1 as u32 bytes: each id itself, but nodes[j] -> targets[j]
 * (canon/accel.py: 0..95 k made in Python was 5 % of a module's run). */
static PyObject *py_redirect(PyObject *self, PyObject *args)
{
    Py_ssize_t count;
    PyObject *nodes_obj, *targets_obj;
    if (!PyArg_ParseTuple(args, "nOO", &count, &nodes_obj, &targets_obj)) return NULL;
    uint32_t *nodes = NULL, *targets = NULL;
    size_t n, m;
    PyObject *result = NULL;
    if (u32_arg(nodes_obj, 0, &nodes, &n) || u32_arg(targets_obj, 0, &targets, &m)) goto done;
    if (count < 1 || (uint64_t)count > UINT32_MAX || !nodes || !targets || n != m) {
        bad("redirect: a count of ids and two arrays of the same length");
        goto done;
    }
    for (size_t j = 0; j < n; j++)
        if (nodes[j] >= (uint64_t)count || targets[j] >= (uint64_t)count) {
            bad("redirect: an id out of range");
            goto done;
        }
    if (!(result = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(uint32_t))))
        goto done;
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(result);
    for (Py_ssize_t id = 0; id < count; id++) out[id] = (uint32_t)id;
    for (size_t j = 0; j < n; j++) out[nodes[j]] = targets[j];
done:
    free(nodes), free(targets);
    return result;
}

/* A name for the kept keys of a base (words, strings) and `salt`: 32 hex digits of
 * hash_bytes of each (not a digest: basekeys.c compares all it finds). */
static PyObject *py_keys_name(PyObject *self, PyObject *args)
{
    Py_buffer parts[3];
    if (!PyArg_ParseTuple(args, "y*y*y*", &parts[0], &parts[1], &parts[2])) return NULL;
    uint64_t h[3];
    for (int k = 0; k < 3; k++) h[k] = hash_bytes(parts[k].buf, (size_t)parts[k].len);
    for (int k = 0; k < 3; k++) PyBuffer_Release(&parts[k]);
    char name[48];
    snprintf(name, sizeof name, "%016llx%016llx%08x", (unsigned long long)h[0],
             (unsigned long long)h[1], (unsigned)(h[2] >> 32));
    return PyUnicode_FromString(name);
}

/* The edges (Type.refs) of each of `nodes` (own ids, u32), as tuples of ids. */
static PyObject *py_edges(PyObject *self, PyObject *args)
{
    PyObject *words, *strings, *nodes_obj;
    unsigned long first_id;
    if (!PyArg_ParseTuple(args, "OkOO", &words, &first_id, &strings, &nodes_obj)) return NULL;
    view_t v;
    PyObject *result = NULL;
    uint32_t *nodes = NULL, *out = NULL;
    size_t nnodes;
    if (view_init(&v, words, first_id, strings) || u32_arg(nodes_obj, 0, &nodes, &nnodes))
        goto done;
    uint32_t most = 0;  /* of the nodes asked for: over a base's 95 k types, each call */
    for (size_t j = 0; j < nnodes; j++) {
        if (nodes[j] < v.t.first_id || nodes[j] - v.t.first_id >= v.t.count) {
            bad("edges: a node that is not an own id");
            goto done;
        }
        uint32_t n = edge_count(&v.t, nodes[j] - v.t.first_id);
        if (n > most) most = n;
    }
    out = malloc(((size_t)most + 1) * sizeof *out);
    if (!out || !(result = PyList_New((Py_ssize_t)nnodes))) {
        if (!out) PyErr_NoMemory();
        goto done;
    }
    for (size_t j = 0; j < nnodes; j++) {
        uint32_t n = type_edges(&v.t, nodes[j] - v.t.first_id, out);
        PyObject *edges = PyTuple_New(n);
        if (!edges) {
            Py_CLEAR(result);
            goto done;
        }
        for (uint32_t k = 0; k < n; k++) {
            PyObject *id = PyLong_FromUnsignedLong(out[k]);
            if (!id) {
                Py_DECREF(edges);
                Py_CLEAR(result);
                goto done;
            }
            PyTuple_SET_ITEM(edges, k, id);
        }
        PyList_SET_ITEM(result, (Py_ssize_t)j, edges);
    }
done:
    free(nodes);
    free(out);
    view_free(&v);
    return result;
}

/* The set `names` (bytes) as an intern table: a record's name is looked up there in C
 * (a bytes object and a set lookup per FUNC of vmlinux were 4 % of a module's run).
 * -1 with an exception set. */
static int names_table(PyObject *names, intern_t *table)
{
    memset(table, 0, sizeof *table);
    PyObject *it = PyObject_GetIter(names), *item;
    if (!it) return -1;
    while ((item = PyIter_Next(it))) {
        char *p;
        Py_ssize_t n;
        int is_new, failed = PyBytes_AsStringAndSize(item, &p, &n) != 0;
        if (!failed && intern_bytes(table, p, (size_t)n, &is_new) < 0) {
            PyErr_NoMemory();
            failed = 1;
        }
        Py_DECREF(item);
        if (failed) break;
    }
    Py_DECREF(it);
    if (!PyErr_Occurred()) return 0;
    intern_free(table);
    return -1;
}

/* heads' key of a name: its first two bytes, of the `n` from p on (a whole name, or the
 * rest of its table: a NUL first byte ends it). */
static uint32_t first_two(const uint8_t *p, size_t n)
{
    return (n ? p[0] : 0u) << 8 | (n > 1 && p[0] ? p[1] : 0u);
}

/* (id, name offset, vlen, size_or_type) of each own type of one kind, with a name in
 * the set `names` (bytes) unless it is None: what a caller needs of a few records
 * without decoding them all (functions._base_functions). */
static PyObject *py_heads(PyObject *self, PyObject *args)
{
    PyObject *words, *strings, *names = Py_None;
    unsigned long first_id, kind;
    if (!PyArg_ParseTuple(args, "OkOk|O", &words, &first_id, &strings, &kind, &names))
        return NULL;
    if (names != Py_None && !PyAnySet_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "names must be a set of bytes or None");
        return NULL;
    }
    intern_t wanted;
    memset(&wanted, 0, sizeof wanted);
    if (names != Py_None && names_table(names, &wanted)) return NULL;
    view_t v;
    PyObject *result = NULL;
    /* The wanted names' first two bytes (keyset.h): most names are passed over before
     * their length is found (22 k FUNCs of a module's base, each run). */
    keyset_t firsts = {{0}};
    for (size_t k = 0; k < wanted.count; k++) {
        size_t len;
        const uint8_t *p = intern_at(&wanted, (uint32_t)k, &len);
        keyset_add(&firsts, first_two(p, len));
    }
    if (view_init(&v, words, first_id, strings) || !(result = PyList_New(0))) goto done;
    for (uint32_t i = 0; i < v.t.count; i++) {
        if (t_kind(&v.t, i) != kind) continue;
        if (names != Py_None) {
            uint32_t avail, len;
            const uint8_t *name = name_span(&v.t, t_name(&v.t, i), &avail);
            if (!keyset_has(&firsts, first_two(name, avail))) continue;
            name = name_at(&v.t, t_name(&v.t, i), &len);
            if (intern_find(&wanted, name, len) < 0) continue;
        }
        PyObject *head = Py_BuildValue("(kkkk)", (unsigned long)(v.t.first_id + i),
                                       (unsigned long)t_name(&v.t, i),
                                       (unsigned long)t_vlen(&v.t, i),
                                       (unsigned long)t_sot(&v.t, i));
        if (!head || PyList_Append(result, head)) {
            Py_XDECREF(head);
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(head);
    }
done:
    view_free(&v);
    intern_free(&wanted);
    return result;
}

/* One side of diff_plan: (words, strings, own_first) with words from id 1. */
static int plan_arg(view_t *v, PyObject *arg, diff_side_t *d)
{
    PyObject *words, *strings;
    unsigned long own_first;
    if (!PyArg_ParseTuple(arg, "OOk", &words, &strings, &own_first)) return -1;
    if (view_init(v, words, 1, strings)) return -1;
    size_t count = (size_t)v->t.count + 1;
    if (own_first < 1 || own_first > count) return bad("own_first out of range");
    d->t = &v->t;
    d->own_first = (uint32_t)own_first;
    d->spell = calloc(count, 1);
    d->expanded = calloc(count, 1);
    d->safe = calloc(count, 1);
    if (!d->spell || !d->expanded || !d->safe) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* What plan_arg and diff_plan allocated for one side. */
static void plan_free(view_t *v, diff_side_t *d)
{
    free(d->spell), free(d->expanded), free(d->safe), free(d->roots), free(d->anon);
    free(d->need), free(d->key), free(d->same), free(d->group);
    view_free(v);
}

/* diff/pairing.settle_duplicates' graph work (diffjoint.c): each side's chain of words
 * from id 1, strings and root ids (u32). */
static PyObject *py_diff_joint(PyObject *self, PyObject *args)
{
    PyObject *words[2], *strings[2], *roots_obj[2];
    if (!PyArg_ParseTuple(args, "OOOOOO", &words[0], &strings[0], &roots_obj[0], &words[1],
                          &strings[1], &roots_obj[1]))
        return NULL;
    view_t v[2];
    memset(v, 0, sizeof v);
    uint32_t *roots[2] = {NULL, NULL};
    size_t nroots[2];
    PyObject *result = NULL;
    for (int k = 0; k < 2; k++)
        if (view_init(&v[k], words[k], 1, strings[k]) || u32_arg(roots_obj[k], 0, &roots[k], &nroots[k]))
            goto done;
    if (!roots[0] || !roots[1] || nroots[0] > UINT32_MAX || nroots[1] > UINT32_MAX) {
        bad("roots must be u32 arrays");
        goto done;
    }
    const types_t *t[2] = {&v[0].t, &v[1].t};
    const uint32_t *r[2] = {roots[0], roots[1]};
    const uint32_t n[2] = {(uint32_t)nroots[0], (uint32_t)nroots[1]};
    joint_t j;
    int rc = diff_joint(t, r, n, &j);
    if (rc == -2) {
        bad("a root is no type id of its side");
        goto done;
    }
    if (rc) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("(NNNNN)", u32_bytes(j.side[0].reach, j.side[0].n),
                           u32_bytes(j.side[0].position, j.side[0].n),
                           u32_bytes(j.side[1].reach, j.side[1].n),
                           u32_bytes(j.side[1].position, j.side[1].n),
                           u32_bytes(j.classes, j.side[0].n + j.side[1].n + 1));
    joint_free(&j);
done:
    for (int k = 0; k < 2; k++) {
        free(roots[k]);
        view_free(&v[k]);
    }
    return result;
}

/* (roots, spell, anon, need, spellings of need, briefs of roots) of one side's plan:
 * the texts made here (cdump_diff_spell) while the view is at hand. */
static PyObject *plan_result(const diff_side_t *d)
{
    PyObject *roots = u32_bytes(d->roots, d->nroots), *anon = u32_bytes(d->anon, d->nanon);
    PyObject *spell = PyBytes_FromStringAndSize((const char *)d->spell, (Py_ssize_t)d->t->count + 1);
    PyObject *need = u32_bytes(d->need, d->nneed);
    PyObject *spellings = cdump_diff_spell(d->t, d->need, d->nneed, d->safe, 0);
    PyObject *briefs = spellings ? cdump_diff_spell(d->t, d->roots, d->nroots, d->safe, 1) : NULL;
    PyObject *result = roots && anon && spell && need && spellings && briefs
        ? PyTuple_Pack(6, roots, spell, anon, need, spellings, briefs) : NULL;
    Py_XDECREF(roots), Py_XDECREF(anon), Py_XDECREF(spell), Py_XDECREF(need);
    Py_XDECREF(spellings), Py_XDECREF(briefs);
    return result;
}

static PyObject *py_diff_plan(PyObject *self, PyObject *args)
{
    PyObject *arg[2], *result = NULL, *side[2] = {NULL, NULL};
    if (!PyArg_ParseTuple(args, "OO", &arg[0], &arg[1])) return NULL;
    view_t v[2];
    diff_side_t d[2];
    memset(v, 0, sizeof v);
    memset(d, 0, sizeof d);
    if (!plan_arg(&v[0], arg[0], &d[0]) && !plan_arg(&v[1], arg[1], &d[1])) {
        if (diff_plan(d)) {
            PyErr_NoMemory();
        } else {
            for (int k = 0; k < 2; k++) side[k] = plan_result(&d[k]);
            if (side[0] && side[1]) result = PyTuple_Pack(2, side[0], side[1]);
        }
    }
    for (int k = 0; k < 2; k++) {
        Py_XDECREF(side[k]);
        plan_free(&v[k], &d[k]);
    }
    return result;
}

/* diff's report (diffreport.c): diff_report(old side, new side, pairing, json) with sides
 * as diff_plan's; (bytes, number of changes), or None where the reference must make it. */
static PyObject *py_diff_report(PyObject *self, PyObject *args)
{
    PyObject *arg[2], *pairing, *result = NULL;
    int json;
    if (!PyArg_ParseTuple(args, "OOOp", &arg[0], &arg[1], &pairing, &json)) return NULL;
    view_t v[2];
    diff_side_t d[2];
    memset(v, 0, sizeof v);
    memset(d, 0, sizeof d);
    if (!plan_arg(&v[0], arg[0], &d[0]) && !plan_arg(&v[1], arg[1], &d[1])) {
        for (int k = 0; k < 2; k++) {
            d[k].key = calloc((size_t)v[k].t.count + 1, sizeof *d[k].key);
            d[k].same = calloc((size_t)v[k].t.count + 1, 1);
        }
        if (!d[0].key || !d[1].key || !d[0].same || !d[1].same || diff_plan(d)) PyErr_NoMemory();
        else result = diff_report_object(d, pairing, json);
    }
    for (int k = 0; k < 2; k++) plan_free(&v[k], &d[k]);
    return result;
}

/* The C header's hot parts (cdump.c, bound by cdump_bindings.c) share one checked view of the type section, held by
 * a capsule: the header makes five calls, and each view costs a pass over the words. */
#define VIEW_CAPSULE "canonbtf._btf.view"

static void view_capsule_free(PyObject *capsule)
{
    view_t *v = PyCapsule_GetPointer(capsule, VIEW_CAPSULE);
    if (v) view_free(v);
    free(v);
}

static PyObject *py_c_view(PyObject *self, PyObject *args)
{
    PyObject *words, *strings;
    unsigned long first_id;
    if (!PyArg_ParseTuple(args, "OkO", &words, &first_id, &strings)) return NULL;
    view_t *v = malloc(sizeof *v);
    if (!v) return PyErr_NoMemory();
    if (view_init(v, words, first_id, strings)) {
        view_free(v);
        free(v);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(v, VIEW_CAPSULE, view_capsule_free);
    if (!capsule) {
        view_free(v);
        free(v);
    }
    return capsule;
}

static const types_t *view_of(PyObject *capsule)
{
    view_t *v = PyCapsule_GetPointer(capsule, VIEW_CAPSULE);
    return v ? &v->t : NULL;
}

static PyObject *py_c_facts(PyObject *self, PyObject *capsule)
{
    const types_t *t = view_of(capsule);
    return t ? header_facts(t) : NULL;
}

/* A function of the view and a pointer size: (view, ptr_size) -> fn(view, ptr_size). */
static PyObject *on_sized_view(PyObject *args, PyObject *(*fn)(const types_t *, unsigned long))
{
    PyObject *capsule;
    unsigned long ptr_size;
    if (!PyArg_ParseTuple(args, "Ok", &capsule, &ptr_size)) return NULL;
    const types_t *t = view_of(capsule);
    return t ? fn(t, ptr_size) : NULL;
}

static PyObject *py_c_shape_ok(PyObject *self, PyObject *args)
{
    return on_sized_view(args, header_shape_ok);
}

static PyObject *py_c_definitions(PyObject *self, PyObject *args)
{
    return on_sized_view(args, header_definitions);
}

static PyObject *py_c_render(PyObject *self, PyObject *args)
{
    PyObject *capsule, *ids, *display, *suffixes;
    unsigned long ptr_size;
    if (!PyArg_ParseTuple(args, "OkOOO", &capsule, &ptr_size, &ids, &display, &suffixes))
        return NULL;
    const types_t *t = view_of(capsule);
    return t ? header_render(t, ptr_size, ids, display, suffixes) : NULL;
}

static PyObject *py_c_declarations(PyObject *self, PyObject *args)
{
    PyObject *capsule, *funcs, *display;
    unsigned long ptr_size;
    if (!PyArg_ParseTuple(args, "OkOO", &capsule, &ptr_size, &funcs, &display)) return NULL;
    const types_t *t = view_of(capsule);
    return t ? header_declarations(t, ptr_size, funcs, display) : NULL;
}

static PyObject *py_c_placement(PyObject *self, PyObject *args)
{
    PyObject *capsule, *defs, *refs, *ranks;
    unsigned long ptr_size;
    if (!PyArg_ParseTuple(args, "OkOOO", &capsule, &ptr_size, &defs, &refs, &ranks)) return NULL;
    const types_t *t = view_of(capsule);
    return t ? header_placement(t, ptr_size, defs, refs, ranks) : NULL;
}

/* failure.h: what the plain-C parts report, as the exceptions their callers leave set
 * (MemoryError; ValueError where the reference then makes the result). */
void failed_out_of_memory(void) { PyErr_NoMemory(); }

void failed_declined(const char *why) { PyErr_SetString(PyExc_ValueError, why); }

/* raw_dump's writer: the chunk as a latin-1 str to the callable `write` (as the
 * reference writes); nonzero with its exception. */
static int write_latin1(void *write, const char *text, size_t len)
{
    PyObject *chunk = PyUnicode_DecodeLatin1(text, (Py_ssize_t)len, NULL);
    PyObject *done = chunk ? PyObject_CallOneArg(write, chunk) : NULL;
    Py_XDECREF(chunk);
    if (!done) return -1;
    Py_DECREF(done);
    return 0;
}

/* bpftool's raw text of a view's types through `write`, with the base's view (or None) for
 * the DATASEC entries that name a base type (rawdump.c). */
static PyObject *py_raw_dump(PyObject *self, PyObject *args)
{
    PyObject *capsule, *base_capsule, *write;
    if (!PyArg_ParseTuple(args, "OOO", &capsule, &base_capsule, &write)) return NULL;
    const types_t *t = view_of(capsule), *base = NULL;
    if (!t || (base_capsule != Py_None && !(base = view_of(base_capsule)))) return NULL;
    if (base && base->first_id + base->count != t->first_id)
        return PyErr_Format(PyExc_ValueError, "the base's ids do not end where the view's start");
    if (raw_dump(t, base, write_latin1, write)) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    Py_RETURN_NONE;
}

static void View_dealloc(ViewObject *self)
{
    view_free(&self->v);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ViewType = {
    PLAIN_TYPE_HEAD("canonbtf._btf.View", ViewObject, View_dealloc,
                    "A type section indexed and checked once (view()), taken in place of "
                    "its words."),
};

static PyObject *py_view(PyObject *self, PyObject *args)
{
    PyObject *words, *strings;
    unsigned long first_id;
    if (!PyArg_ParseTuple(args, "OkO", &words, &first_id, &strings)) return NULL;
    if (Py_IS_TYPE(words, &ViewType)) return Py_INCREF(words), words;
    ViewObject *view = PyObject_New(ViewObject, &ViewType);
    if (!view) return NULL;
    if (view_init(&view->v, words, first_id, strings)) {
        Py_DECREF(view);  /* its dealloc frees what view_init had taken */
        return NULL;
    }
    return (PyObject *)view;
}

/* grow.h's keep_freed_memory, for canonbtf-pahole's short runs. */
static PyObject *py_keep_freed_memory(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyBool_FromLong(keep_freed_memory());
}

static PyMethodDef methods[] = {
    {"diff_report", py_diff_report, METH_VARARGS,
     "diff_report(old side, new side, pairing, json) -> (the report as bytes, number of "
     "changes), or None where the reference must make it (sides as diff_plan's)"},
    {"diff_plan", py_diff_plan, METH_VARARGS,
     "diff_plan((words, strings, own_first), (same for new)) -> per side (u32 ids of the roots "
     "to describe, spell flag by id, u32 ids of anonymous roots, u32 ids read, [spelling of "
     "each id read or None], [brief of each root or None]) (diffkeys.c, diffspell.c)"},
    {"heads", py_heads, METH_VARARGS,
     "heads(words, first_id, strings, kind, names=None) -> [(id, name_off, vlen, size_or_type)] of "
     "that kind (and a name in the set `names`)"},
    {"edges", py_edges, METH_VARARGS,
     "edges(words, first_id, strings, nodes) -> [tuple of the ids each node refers to]"},
    {"diff_joint", py_diff_joint, METH_VARARGS,
     "diff_joint(old words, old strings, old roots, new words, new strings, new roots) -> "
     "(old reach, old positions, new reach, new positions, joint classes), u32 arrays"},
    {"view", py_view, METH_VARARGS,
     "view(words, first_id, strings) -> the section indexed and checked once: give it in "
     "place of the words (with the same first_id) to any function here."},
    {"members", py_members, METH_VARARGS,
     "members(values, wanted) -> u32 bytes: indices i >= 1 with values[i] in wanted; None "
     "when a value is too large."},
    {"sharing", py_sharing, METH_O,
     "sharing(u32 values) -> u32 bytes: the indexes 1.. whose value another index 1.. has, or None"},
    {"keys_over", py_keys_over, METH_VARARGS,
     "keys_over(base words, base strings, words, first_id, strings, path) -> (u32 keys, u32 "
     "token keys, declares, kinds, the base's kept keys made anew or None), as abstract_keys "
     "gives them for base and module as one section; path: the base's kept keys' file"},
    {"dedup_refined", py_dedup_refined, METH_VARARGS,
     "dedup_refined(base words or None, base strings, words, first_id, strings, u32 keys, "
     "u32 tokens, declares, u32 shared ids) -> (rank, stands_for, classes by id, the ids "
     "declared_twins groups) as u32 bytes: dedup._refined on keyed_types' arrays"},
    {"dedup_into", py_dedup_into, METH_VARARGS,
     "dedup_into(u32 classes, moved bytes or None, declares, kinds) -> (u32 ids, u32 "
     "representatives) of dedup.merge_map's groups, or None"},
    {"redirect", py_redirect, METH_VARARGS,
     "redirect(count, u32 ids, u32 targets) -> u32 bytes: each id 0..count-1 itself, but "
     "ids[j] -> targets[j]"},
    {"kept_ids", py_kept_ids, METH_VARARGS,
     "kept_ids(first, last, u32 ids) -> u32 bytes: the ids first..last not among ids"},
    {"keys_name", py_keys_name, METH_VARARGS,
     "keys_name(base words, base strings, salt) -> hex name of the base's kept keys"},
    {"abstract_keys", py_abstract_keys, METH_VARARGS,
     "abstract_keys(words, 1, strings, base_count=0) -> (u32 keys, u32 token keys, declaration "
     "flags, kinds), by id; the first base_count types are a split BTF's base"},
    {"decode", py_decode, METH_VARARGS,
     "decode(words, first_id, strings, Type, ids=None) -> [Type, ...] as the reader makes "
     "them (of every record, or of the own ids in u32 array `ids`)"},
    {"labels", py_labels, METH_VARARGS,
     "labels(words, first_id, strings) -> [label tuple of each own type] (labels.label)"},
    {"pack", py_pack, METH_O, "pack(types) -> bytes: the type section as the writer packs it"},
    {"check", py_check, METH_VARARGS,
     "check(words, first_id, strings) -> the number of records (ValueError: not as the reader takes)"},
    {"kinds", py_kinds, METH_VARARGS, "kinds(words, first_id, strings) -> one kind byte per record"},
    {"order", (PyCFunction)(void (*)(void))py_order, METH_VARARGS | METH_KEYWORDS,
     "order(words, first_id, strings, by_name, nodes=None, redirect=None) -> (u32 ids, alone)"},
    {"renumber", (PyCFunction)(void (*)(void))py_renumber, METH_VARARGS | METH_KEYWORDS,
     "renumber(words, first_id, strings, order, redirect=None) -> (words, strings)"},
    {"rules_check", py_rules_check, METH_VARARGS,
     "rules_check(words, first_id, strings, bases) -> the type section's violations as "
     "validator.validate_in_python reports them, for rules_findings; or None"},
    {"rules_findings", py_rules_findings, METH_VARARGS,
     "rules_findings(found, start, count) -> [(type id, kind, name, key, values)]"},
    {"func_reference", py_func_reference, METH_VARARGS,
     "func_reference(words, first_id, strings, base_kinds) -> own id or 0"},
    {"raw_dump", py_raw_dump, METH_VARARGS,
     "raw_dump(view, base_view, write) -> None: bpftool's raw text, in str chunks to write"},
    {"c_view", py_c_view, METH_VARARGS,
     "c_view(words, first_id, strings) -> the checked type section the c_ functions read"},
    {"c_facts", py_c_facts, METH_O,
     "c_facts(view) -> (pointer size, info top byte per id, name per id, "
     "[(FUNC id, FUNC name, tag name)])"},
    {"c_shape_ok", py_c_shape_ok, METH_VARARGS,
     "c_shape_ok(view, ptr_size) -> True: spellable as C; False: ask c_shape"},
    {"c_definitions", py_c_definitions, METH_VARARGS,
     "c_definitions(view, ptr_size) -> (ids, [(text, refs, enumerators)])"},
    {"c_declarations", py_c_declarations, METH_VARARGS,
     "c_declarations(view, ptr_size, [(FUNC id, name bytes)], display) -> [(text, refs)]"},
    {"c_render", py_c_render, METH_VARARGS,
     "c_render(view, ptr_size, ids, display, suffixes) -> [(text, refs, enumerators)]"},
    {"keep_freed_memory", py_keep_freed_memory, METH_NOARGS,
     "keep_freed_memory() -> whether the C allocator now keeps freed blocks for reuse "
     "(glibc): for a short process only, it changes how the whole process allocates"},
    {"c_placement", py_c_placement, METH_VARARGS,
     "c_placement(view, ptr_size, defs, refs, ranks) -> (order, forward)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_btf", "The type section checked, ordered and renumbered in C.", 0,
    methods,
};

PyMODINIT_FUNC PyInit__btf(void)
{
    big_alloc_setup();
    if (PyType_Ready(&ViewType) < 0) return NULL;
    return PyModule_Create(&module);
}
