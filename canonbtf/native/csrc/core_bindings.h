/* What canonbtf.dwarf._core's module init takes from its binding files (the
 * *_bindings.c of native/csrc/): their types and functions. A binding header. */
#ifndef CANONBTF_CORE_BINDINGS_H
#define CANONBTF_CORE_BINDINGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* merge_bindings.c: _core.KeyedMerge (dwarf/csrc/merge.c). */
extern PyTypeObject MergeType;

/* pool_bindings.c: _core.relocate, scan_symbols and pool_unit (dwarf/csrc/reloc.c,
 * symtab.c, pool.c). */
PyObject *core_relocate(PyObject *self, PyObject *args);
PyObject *core_scan_symbols(PyObject *self, PyObject *args);
PyObject *core_pool_unit(PyObject *self, PyObject *args);

#endif
