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

/* diff's spellings (btf/declarator.py ReferenceSpeller.expr) of types `ids` (n u32), or
 * with `briefs` the one-line descriptions of FUNCs and VARs (diff._Speller.brief), types
 * from id 1: a str each, None where the reference must spell it: bit 0 (spellings) or 1
 * (briefs) of safe[id] unset, another kind, a loop back into a spelling under way, deep
 * nesting. */
PyObject *cdump_diff_spell(const types_t *t, const void *ids, size_t n, const uint8_t *safe,
                           int briefs);

/* diff's reference speller (diff._Speller) for the compiled report: `dup` by id, a
 * duplicated name's root (NULL: none), `tags` by id its tag (0: untagged; NULL: none).
 * NULL with MemoryError set. */
typedef struct cdump_speller cdump_speller_t;
cdump_speller_t *cdump_speller_new(const types_t *t, const uint8_t *dup, const uint32_t *tags);
void cdump_speller_free(cdump_speller_t *s);
/* The text (valid until the next call) of ReferenceSpeller.expr(id) and whether it names
 * a duplicated type; of _Speller.brief(id) for a FUNC, VAR or TYPEDEF; of label(id). 0,
 * or -1 with ValueError set (a loop, deep nesting: left to the reference; the speller
 * forgets what was under way and goes on) or MemoryError (it then refuses every call). */
int cdump_speller_expr(cdump_speller_t *s, uint32_t id, const char **text, size_t *len,
                       int *touches);
int cdump_speller_brief(cdump_speller_t *s, uint32_t id, const char **text, size_t *len);
int cdump_speller_label(cdump_speller_t *s, uint32_t id, const char **text, size_t *len);

#endif
