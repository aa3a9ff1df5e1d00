/* diff's plain C (diff/csrc/) for Python, a binding file of canonbtf._btf: the facts
 * (difffacts.c) as the reference's tuples, the spellings (diffspell.c) as str, and the
 * report (diffreport.c) with its pairing callback calling diff._CompiledPairing. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "diffreport.h"
#include "diffspell.h"
#include "pyparts.h"

static PyObject *text_str(const facts_t *o, size_t at, size_t len)
{
    return PyUnicode_DecodeLatin1(AT(o->arena, at), (Py_ssize_t)len, NULL);
}

static PyObject *fact_key(const facts_t *o, const fact_t *x)
{
    const char *what = FACT_WHAT[x->what];
    switch (x->what) {
    case W_MEMBER: case W_ENTRY: {
        PyObject *s = text_str(o, x->key, x->klen);
        return s ? Py_BuildValue("(sN)", what, s) : NULL;
    }
    case W_VALUE: {
        PyObject *w = text_str(o, x->key, x->wlen);
        PyObject *n = w ? text_str(o, x->key + x->wlen + 1, x->klen - x->wlen - 1) : NULL;
        if (!n) {
            Py_XDECREF(w);
            return NULL;
        }
        return Py_BuildValue("(sNN)", what, w, n);
    }
    case W_PARAM: {
        char tmp[16];
        size_t n = x->klen < sizeof tmp ? x->klen : sizeof tmp - 1;
        memcpy(tmp, AT(o->arena, x->key), n);
        tmp[n] = 0;
        return Py_BuildValue("(sk)", what, strtoul(tmp, NULL, 10));
    }
    default:
        return Py_BuildValue("(s)", what);
    }
}

static PyObject *fact_value(const facts_t *o, const fact_t *x)
{
    switch (x->what) {
    case W_MEMBER: {
        PyObject *s = text_str(o, x->s1, x->l1);
        return s ? Py_BuildValue("(NKK)", s, (unsigned long long)x->a, (unsigned long long)x->b) : NULL;
    }
    case W_PARAM: {
        PyObject *n = text_str(o, x->s1, x->l1), *s = n ? text_str(o, x->s2, x->l2) : NULL;
        if (!s) {
            Py_XDECREF(n);
            return NULL;
        }
        return Py_BuildValue("(NN)", n, s);
    }
    case W_ENTRY:
        return Py_BuildValue("(KK)", (unsigned long long)x->a, (unsigned long long)x->b);
    case W_VALUE:
        return x->neg ? PyLong_FromLongLong((long long)x->a)
                      : PyLong_FromUnsignedLongLong((unsigned long long)x->a);
    case W_SIGNED: case W_VARARGS:
        return PyBool_FromLong((long)x->a);
    case W_SIZE: case W_BITS: case W_BIT_OFFSET:
        return PyLong_FromUnsignedLongLong((unsigned long long)x->a);
    default:
        return text_str(o, x->s1, x->l1);
    }
}

PyObject *facts_tuple(const facts_t *o, size_t from, size_t to)
{
    PyObject *out = PyTuple_New((Py_ssize_t)(to - from));
    for (size_t j = from; out && j < to; j++) {
        PyObject *key = fact_key(o, &o->f[j]), *value = key ? fact_value(o, &o->f[j]) : NULL;
        PyObject *pair = value ? PyTuple_Pack(2, key, value) : NULL;
        Py_XDECREF(key), Py_XDECREF(value);
        if (!pair) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)(j - from), pair);
    }
    return out;
}

PyObject *cdump_diff_spell(const types_t *t, const void *ids, size_t n, const uint8_t *safe,
                           int briefs)
{
    cdump_speller_t *sp = cdump_speller_new(t, NULL, NULL);
    size_t nids = (size_t)t->first_id + t->count;
    PyObject *result = sp ? PyList_New((Py_ssize_t)n) : NULL;
    for (size_t k = 0; result && k < n; k++) {
        uint32_t id;
        memcpy(&id, (const char *)ids + 4 * k, 4);
        const char *p;
        size_t len;
        int touches;
        PyObject *text = NULL;
        if (id < nids && safe[id] & (briefs ? 2 : 1)) {
            if (!(briefs ? cdump_speller_brief(sp, id, &p, &len)
                         : cdump_speller_expr(sp, id, &p, &len, &touches))) {
                text = PyUnicode_DecodeLatin1(p, (Py_ssize_t)len, NULL);
                if (!text) Py_CLEAR(result);
            } else if (PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();   /* left to the reference */
            } else {
                Py_CLEAR(result);
            }
        }
        if (result && !text) {
            Py_INCREF(Py_None);
            text = Py_None;
        }
        if (result) PyList_SET_ITEM(result, (Py_ssize_t)k, text);
    }
    cdump_speller_free(sp);
    return result;
}

/* ---- the report's pairing: diff._CompiledPairing ---- */

typedef struct {
    PyObject *pairing;
    PyObject *dups, *anon[2];   /* what the pairing is told, as diff._CompiledPairing reads it */
    PyObject *roots[2];         /* the last duplicated name's lists of roots (borrowed) */
} pairing_ctx_t;

/* (family, name, [], []) into the duplicated names, its lists the current ones. */
static int tell_dup_name(void *ctx, int family, const char *name, size_t len)
{
    pairing_ctx_t *c = ctx;
    PyObject *str = PyUnicode_DecodeLatin1(name, (Py_ssize_t)len, NULL);
    PyObject *olds = str ? PyList_New(0) : NULL, *news = olds ? PyList_New(0) : NULL;
    PyObject *item = news ? Py_BuildValue("(iOOO)", family, str, olds, news) : NULL;
    int rc = item && !PyList_Append(c->dups, item) ? 0 : -1;
    c->roots[0] = rc ? NULL : olds, c->roots[1] = rc ? NULL : news;   /* held by item */
    Py_XDECREF(item), Py_XDECREF(str), Py_XDECREF(olds), Py_XDECREF(news);
    return rc;
}

/* (id, facts, spells a duplicated name) into the current duplicated name's side. */
static int tell_dup_root(void *ctx, int side, uint32_t id, const facts_t *facts, size_t from,
                         size_t to, int spells_dup)
{
    pairing_ctx_t *c = ctx;
    if (!c->roots[side]) {
        PyErr_SetString(PyExc_SystemError, "diff_report: a root before its name");
        return -1;
    }
    PyObject *tuple = facts_tuple(facts, from, to);
    PyObject *root = tuple ? Py_BuildValue("(kNN)", (unsigned long)id, tuple,
                                           PyBool_FromLong(spells_dup)) : NULL;
    int rc = root && !PyList_Append(c->roots[side], root) ? 0 : -1;
    Py_XDECREF(root);
    return rc;
}

/* (id, family, facts, spells a duplicated name) into the side's anonymous roots. */
static int tell_anon_root(void *ctx, int side, uint32_t id, int family, const facts_t *facts,
                          size_t from, size_t to, int spells_dup)
{
    pairing_ctx_t *c = ctx;
    PyObject *tuple = facts_tuple(facts, from, to);
    PyObject *root = tuple ? Py_BuildValue("(kiNN)", (unsigned long)id, family, tuple,
                                           PyBool_FromLong(spells_dup)) : NULL;
    int rc = root && !PyList_Append(c->anon[side], root) ? 0 : -1;
    Py_XDECREF(root);
    return rc;
}

/* An entry of the pairing's answer: (ordinal, status, old id, new id). */
static int entry_of(PyObject *item, diff_entry_t *x)
{
    unsigned long ordinal, status, old, new;
    if (!PyArg_ParseTuple(item, "kkkk", &ordinal, &status, &old, &new)) return -1;
    *x = (diff_entry_t){ordinal, status, old, new};
    return 0;
}

/* The pairing's answer ([[entry] per duplicated name], [entry]) as plain arrays. */
static int answer_of(PyObject *answer, diff_paired_t *out)
{
    PyObject *named, *anon;
    if (!PyArg_ParseTuple(answer, "O!O!", &PyList_Type, &named, &PyList_Type, &anon)) return -1;
    size_t nnamed = (size_t)PyList_GET_SIZE(named), total = (size_t)PyList_GET_SIZE(anon);
    for (size_t k = 0; k < nnamed; k++) {
        PyObject *entries = PyList_GET_ITEM(named, k);
        if (!PyList_Check(entries)) {
            PyErr_SetString(PyExc_ValueError, "pairing: one list of entries per duplicated name");
            return -1;
        }
        total += (size_t)PyList_GET_SIZE(entries);
    }
    out->entry = malloc((total + 1) * sizeof *out->entry);
    out->named_end = malloc((nnamed + 1) * sizeof *out->named_end);
    if (!out->entry || !out->named_end) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < nnamed; k++) {
        PyObject *entries = PyList_GET_ITEM(named, k);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(entries); j++)
            if (entry_of(PyList_GET_ITEM(entries, j), &out->entry[out->n++])) return -1;
        out->named_end[out->nnamed++] = out->n;
    }
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(anon); j++)
        if (entry_of(PyList_GET_ITEM(anon, j), &out->entry[out->n++])) return -1;
    return 0;
}

static int ask_pairing(void *ctx, diff_paired_t *out)
{
    pairing_ctx_t *c = ctx;
    PyObject *answer = PyObject_CallFunctionObjArgs(c->pairing, c->dups, c->anon[0], c->anon[1],
                                                    NULL);
    int rc = answer ? answer_of(answer, out) : -1;
    Py_XDECREF(answer);
    return rc;
}

PyObject *diff_report_object(diff_side_t plan[2], PyObject *pairing, int json)
{
    pairing_ctx_t c = {pairing, PyList_New(0), {PyList_New(0), PyList_New(0)}, {NULL, NULL}};
    diff_pairer_t pairer = {&c, tell_dup_name, tell_dup_root, tell_anon_root, ask_pairing};
    text_t out = {0};
    size_t nchanges;
    PyObject *result = NULL;
    if (c.dups && c.anon[0] && c.anon[1]) {
        if (!diff_report(plan, &pairer, json, &out, &nchanges))
            result = Py_BuildValue("(y#n)", AT(out, 0), (Py_ssize_t)out.len, (Py_ssize_t)nchanges);
        else if (PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();   /* left to the reference */
            Py_INCREF(Py_None);
            result = Py_None;
        }
    }
    free(out.p);
    Py_XDECREF(c.dups), Py_XDECREF(c.anon[0]), Py_XDECREF(c.anon[1]);
    return result;
}
