/* The validator's fast pass (check.c): whether a BTF breaks none of the kernel's rules.
 *
 * btf/validator.py and its check_*.py are the reference; this answers only "clean" or
 * "maybe not", on the words the reader checked, so a clean BTF is validated without
 * making its Python `Type`s. It never says clean where the reference finds a violation. */
#ifndef CANONBTF_CHECK_H
#define CANONBTF_CHECK_H

#include "types.h"

/* The blob around the type section, for validator._check_blob. */
typedef struct {
    int header_tail_nonzero;    /* a header byte past the 24 the kernel knows is set */
    size_t header_tail_len, layout_len;
} blob_t;

/* Whether validator.validate would return no violation for the BTF whose levels are
 * `levels[0..nlevels-1]` (the deepest base first, the checked BTF last; each indexed by
 * index_types with its own first id and the string chain up to its own table). 1 clean,
 * 0 maybe not, -1 out of memory. */
int rules_clean(const types_t *levels, int nlevels, const blob_t *blob);

#endif
