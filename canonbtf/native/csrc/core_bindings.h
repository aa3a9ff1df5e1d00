/* What canonbtf.dwarf._core's module init takes from its binding files (Python.h allowed:
 * a binding header, like pyparts.h). */
#ifndef CANONBTF_CORE_BINDINGS_H
#define CANONBTF_CORE_BINDINGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* ---- pool_bindings.c: relocate, scan_symbols, pool_unit (METH_VARARGS) ---- */
PyObject *core_relocate(PyObject *self, PyObject *args);
PyObject *core_scan_symbols(PyObject *self, PyObject *args);
PyObject *core_pool_unit(PyObject *self, PyObject *args);

#endif
