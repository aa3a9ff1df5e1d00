/* diff's spelling in plain C (diffspell.c): the speller of the plan's spellings
 * (diff_bindings.c's cdump_diff_spell) and of the compiled report. */
#ifndef CANONBTF_DIFFSPELL_H
#define CANONBTF_DIFFSPELL_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* diff's reference speller (diff._Speller) for the compiled report: `dup` by id, a
 * duplicated name's root (NULL: none), `tags` by id its tag (0: untagged; NULL: none).
 * NULL out of memory (reported: failure.h). */
typedef struct cdump_speller cdump_speller_t;
cdump_speller_t *cdump_speller_new(const types_t *t, const uint8_t *dup, const uint32_t *tags);
void cdump_speller_free(cdump_speller_t *s);
/* The text (valid until the next call) of ReferenceSpeller.expr(id) and whether it names
 * a duplicated type; of _Speller.brief(id) for a FUNC, VAR or TYPEDEF; of label(id). 0,
 * or -1 after a failure reported through failure.h: declined (a loop, deep nesting,
 * another kind: left to the reference) or out of memory. Either way the speller forgets
 * what was under way and can be asked again. */
int cdump_speller_expr(cdump_speller_t *s, uint32_t id, const char **text, size_t *len,
                       int *touches);
int cdump_speller_brief(cdump_speller_t *s, uint32_t id, const char **text, size_t *len);
int cdump_speller_label(cdump_speller_t *s, uint32_t id, const char **text, size_t *len);

#endif
