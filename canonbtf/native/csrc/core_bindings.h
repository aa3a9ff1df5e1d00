/* What canonbtf.dwarf._core's module init (encoder_bindings.c) takes from the DWARF
 * core's other binding files: their types and functions. A binding header (Python.h
 * allowed, like pyparts.h). */
#ifndef CANONBTF_CORE_BINDINGS_H
#define CANONBTF_CORE_BINDINGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* _core.relocate, _core.scan_symbols, _core.pool_unit (METH_VARARGS) */
PyObject *core_relocate(PyObject *self, PyObject *args);
PyObject *core_scan_symbols(PyObject *self, PyObject *args);
PyObject *core_pool_unit(PyObject *self, PyObject *args);

/* _core.KeyedMerge */
extern PyTypeObject MergeType;

#endif
