/* Transitional (issue 29): pool.c, reloc.c, symtab.c and merge.c still use the Python
 * API, which dwarf/csrc/core.h no longer brings (nor PY_SSIZE_T_CLEAN) since the
 * encoder's split, so they are compiled here after Python.h until their own splits land
 * (branches dwarfpool29, dwarfmerge29); this file then goes, and they return to
 * setup.py's SOURCES beside their own binding files. */
#include "core_bindings.h"

#include "pool.c"
#include "reloc.c"
#include "symtab.c"
#include "merge.c"
