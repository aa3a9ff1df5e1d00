/* A BTF blob opened for the C tests and fuzz targets: the header checked as
 * btf/reader.parse checks it, the type section copied into host-order words and indexed
 * by index_types (btf/csrc/types.c), the string chain of a base and its split BTF.
 *
 * Test code only: the extension gets its words and strings from btf/reader.py through
 * native/csrc/btf_bindings.c, which this stands in for (failure.h's reports included), so
 * that the Python-free C can run without an interpreter. */
#ifndef CANONBTF_TESTS_BTFBLOB_H
#define CANONBTF_TESTS_BTFBLOB_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

#define BLOB_MAX_LEVELS 2        /* a base and one split BTF over it */

typedef struct {
    types_t t;                   /* the own types (t.start NULL until indexed) */
    uint32_t *words;             /* the type section in host order */
    strtab_t tabs[BLOB_MAX_LEVELS];
    size_t trailer;              /* bytes after the last section (the reader ignores them) */
} blob_t;

/* What blob_open made of the bytes. */
enum { BLOB_OK = 0, BLOB_NOT_BTF = 1, BLOB_REFUSED = 2, BLOB_NOMEM = -1 };

/* Open data[0..size) over `base` (NULL: a base BTF): BLOB_NOT_BTF when the reader's header
 * checks refuse it, BLOB_REFUSED when index_types refuses the type section, BLOB_OK with
 * *out filled (blob_free it either way). `data` must outlive *out (the strings point into
 * it). */
int blob_open(const uint8_t *data, size_t size, const blob_t *base, blob_t *out);
void blob_free(blob_t *b);

/* failure.h's reports (the bindings raise them as exceptions): counted here, the last
 * reason kept, for the tests to read. */
extern int failures_declined, failures_out_of_memory;
extern const char *failure_why;

/* The whole of a file in *data (malloc'ed), its size in *size; 0, or -1. */
int read_whole(const char *path, uint8_t **data, size_t *size);

#endif
