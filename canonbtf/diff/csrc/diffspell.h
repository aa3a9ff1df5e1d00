/* diff's spelling in C (diffspell.c): the compiled report's speller (the plan's
 * spellings, which make str objects: pyparts.h). */
#ifndef CANONBTF_DIFFSPELL_H
#define CANONBTF_DIFFSPELL_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

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
