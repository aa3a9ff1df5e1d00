/* Records to and from `Type` objects (records.c). */
#ifndef CANONBTF_RECORDS_H
#define CANONBTF_RECORDS_H

#include <Python.h>

#include "types.h"

/* A list of `type_class(kind, name_off, kflag, size_or_type, extra, items)`, one per
 * record (or per id of `ids`, own ids the caller checked), as reader._parse_types makes
 * them. */
PyObject *decode_types(const types_t *t, PyObject *type_class, const uint32_t *ids, size_t nids);
/* The type section of `types` (Type objects) as bytes of host-order words, as
 * writer.type_words packs them; ValueError where the writer would fail. */
PyObject *pack_types(PyObject *types);

/* labels.label(t, names) of every own type, in id order ("kind" order). */
PyObject *label_tuples(const types_t *t);

#endif
