/* What canonbtf.dwarf._core's module init takes from the DWARF core's binding files
 * (the *_bindings.c of native/csrc/): their types and functions. A binding header. */
#ifndef CANONBTF_CORE_BINDINGS_H
#define CANONBTF_CORE_BINDINGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* merge_bindings.c: _core.KeyedMerge (dwarf/csrc/merge.c). */
extern PyTypeObject MergeType;

#endif
