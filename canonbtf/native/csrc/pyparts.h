/* What the binding files call that builds or takes Python objects: records_bindings.c's,
 * cdump_bindings.c's and diff_bindings.c's conversions. Only the binding files include
 * this header; every other header of the extension is plain C. */
#ifndef CANONBTF_PYPARTS_H
#define CANONBTF_PYPARTS_H

#include <Python.h>

#include "difffacts.h"
#include "diffkeys.h"
#include "types.h"

/* ---- records_bindings.c (a binding file): records to and from `Type` objects ---- */

/* A list of `type_class(kind, name_off, kflag, size_or_type, extra, items)`, one per
 * record (or per id of `ids`, own ids the caller checked), as reader._parse_types makes
 * them. */
PyObject *decode_types(const types_t *t, PyObject *type_class, const uint32_t *ids, size_t nids);
/* The type section of `types` (Type objects) as bytes of host-order words, as
 * writer.type_words packs them; ValueError where the writer would fail. */
PyObject *pack_types(PyObject *types);

/* labels.label(t, names) of every own type, in id order ("kind" order). */
PyObject *label_tuples(const types_t *t);

/* ---- cdump_bindings.c (a binding file): the C header's parts (emit/c/csrc/cdump.c) ---- */

/* True when the types are certainly spellable as C (c_shape_problem finds nothing),
 * False when the reference must look. */
PyObject *header_shape_ok(const types_t *t, unsigned long ptr_size);
/* (pointer size, info top byte per id, name per id, [(FUNC id, FUNC name, tag name)] of
 * the DECL_TAGs of whole FUNCs) as c.type_facts, for a BTF without a base. */
PyObject *header_facts(const types_t *t);
/* ([definition id], [(text, [(id, mode)], [enumerator])]) as c._Header._definitions. */
PyObject *header_definitions(const types_t *t, unsigned long ptr_size);
/* [(text, [(id, mode)], [enumerator])] of definitions `ids` with `display` names
 * ({id: bytes}) and enumerator `suffixes` ({id: {occurrence: str}}). */
PyObject *header_render(const types_t *t, unsigned long ptr_size, PyObject *ids,
                        PyObject *display, PyObject *suffixes);
/* [(text, [(id, mode)])] of each (FUNC id, name bytes) of `funcs`: the name declared with
 * the function's prototype (DefinitionSpeller.declaration), with `display` names. */
PyObject *header_declarations(const types_t *t, unsigned long ptr_size, PyObject *funcs,
                              PyObject *display);
/* (definitions in header order, tags to declare first) as order.Placement.order, from
 * `defs` [id], `refs` {id: [(id, mode)]} and canonical `ranks` {id: int}. */
PyObject *header_placement(const types_t *t, unsigned long ptr_size, PyObject *defs,
                           PyObject *refs, PyObject *ranks);

/* ---- diff_bindings.c (a binding file): diff's facts, spellings and report ---- */

/* The reference's tuple of facts [from, to) of `o`. */
PyObject *facts_tuple(const facts_t *o, size_t from, size_t to);

/* diff's spellings (btf/declarator.py ReferenceSpeller.expr) of types `ids` (n u32), or
 * with `briefs` the one-line descriptions of FUNCs and VARs (diff._Speller.brief), types
 * from id 1: a str each, None where the reference must spell it: bit 0 (spellings) or 1
 * (briefs) of safe[id] unset, another kind, a loop back into a spelling under way, deep
 * nesting. */
PyObject *cdump_diff_spell(const types_t *t, const void *ids, size_t n, const uint8_t *safe,
                           int briefs);

/* canonbtf._btf.diff_report (diff/csrc/diffreport.c): the report of two sides planned by
 * diff_plan (with keys): (bytes, number of changes), the text render_text writes
 * (latin-1) or with `json` render_json's; `pairing(duplicates, old anonymous roots, new
 * anonymous roots)` pairs what names do not (diff._CompiledPairing). None where the
 * reference must make it. */
PyObject *diff_report_object(diff_side_t plan[2], PyObject *pairing, int json);

#endif
