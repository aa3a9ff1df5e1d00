/* bpftool's `format raw` text in C (rawdump.c): emit/raw.py on words. */
#ifndef CANONBTF_RAWDUMP_H
#define CANONBTF_RAWDUMP_H

#include <stddef.h>

#include "types.h"

/* Takes the next `len` bytes of the text (latin-1); 0, or nonzero to stop. */
typedef int (*raw_write_fn)(void *arg, const char *text, size_t len);

/* Writes emit/raw.py's text of the own types of `t` through `write(arg, ...)`, in chunks
 * of at most 1 MiB; `base` (NULL: none) holds the types below t->first_id, which DATASEC
 * entries may name. 0, or nonzero when out of memory or `write` stopped it. Plain C: the
 * binding (native/csrc/btf_bindings.c) writes the chunks as str. */
int raw_dump(const types_t *t, const types_t *base, raw_write_fn write, void *arg);

#endif
