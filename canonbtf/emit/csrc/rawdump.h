/* bpftool's `format raw` text in C (rawdump.c): emit/raw.py on words. */
#ifndef CANONBTF_RAWDUMP_H
#define CANONBTF_RAWDUMP_H

#include <Python.h>

#include "types.h"

/* Writes emit/raw.py's text of the own types of `t` through `write` (a callable taking
 * str), in chunks of at most RAW_CHUNK characters; `base` (NULL: none) holds the types
 * below t->first_id, which DATASEC entries may name. None, or NULL with the exception
 * `write` raised. */
PyObject *raw_dump(const types_t *t, const types_t *base, PyObject *write);

#endif
