/* The C header's hot parts (cdump.c): emit/c/shape.py and emit/c/spell.py on words. */
#ifndef CANONBTF_CDUMP_H
#define CANONBTF_CDUMP_H

#include <Python.h>

#include "types.h"

/* True when the types are certainly spellable as C (c_shape_problem finds nothing),
 * False when the reference must look. */
PyObject *cdump_shape_ok(const types_t *t, unsigned long ptr_size);
/* (pointer size, info top byte per id, name per id, [(FUNC id, FUNC name, tag name)] of
 * the DECL_TAGs of whole FUNCs) as c.type_facts, for a BTF without a base. */
PyObject *cdump_facts(const types_t *t);
/* ([definition id], [(text, [(id, mode)], [enumerator])]) as c._Header._definitions. */
PyObject *cdump_definitions(const types_t *t, unsigned long ptr_size);
/* [(text, [(id, mode)], [enumerator])] of definitions `ids` with `display` names
 * ({id: bytes}) and enumerator `suffixes` ({id: {occurrence: str}}). */
PyObject *cdump_render(const types_t *t, unsigned long ptr_size, PyObject *ids,
                       PyObject *display, PyObject *suffixes);
/* [(text, [(id, mode)])] of each (FUNC id, name bytes) of `funcs`: the name declared with
 * the function's prototype (DefinitionSpeller.declaration), with `display` names. */
PyObject *cdump_declarations(const types_t *t, unsigned long ptr_size, PyObject *funcs,
                             PyObject *display);

/* (definitions in header order, tags to declare first) as order.Placement.order, from
 * `defs` [id], `refs` {id: [(id, mode)]} and canonical `ranks` {id: int}. */
PyObject *cdump_placement(const types_t *t, unsigned long ptr_size, PyObject *defs,
                          PyObject *refs, PyObject *ranks);

#endif
