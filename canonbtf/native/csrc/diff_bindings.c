/* diff's facts (diff/csrc/difffacts.c makes them in plain C) as the reference's tuples,
 * for the pairing the compiled report calls in Python (diffreport.c). A binding file of
 * canonbtf._btf. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

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
