/* The validator in C (check.c): every violation of the kernel's rules, as structured
 * findings that check/words.py words.
 *
 * check/validator.py and its check_*.py are the reference; this reports what they report,
 * in their order, as a message key and raw values, on the words the reader checked, so a
 * BTF is validated without making its Python `Type`s. Where the reference could fail in
 * another way (a base type it cannot resolve) it says "unsure" and the reference runs. */
#ifndef CANONBTF_CHECK_H
#define CANONBTF_CHECK_H

#include "types.h"

/* How a value is shown (check/words' value kinds; int formats are the template's). */
enum { V_INT, V_NAME, V_TYPE, V_MEMBER, V_CHAIN };
#define CHECK_NO_KIND 0xFF      /* V_TYPE of void or of an id that does not exist */

typedef struct {
    int64_t v;          /* V_INT the int, V_NAME a name offset, V_TYPE a type id, V_MEMBER
                         * (name offset << 32) | index, V_CHAIN how many V_INT ids follow */
    uint32_t name_off;  /* V_TYPE: the type's name offset */
    uint8_t tag, kind;  /* V_TYPE: the type's kind, or CHECK_NO_KIND */
} check_value_t;

typedef struct {
    uint32_t id, name_off;      /* the type at fault and its name offset */
    uint32_t first, count;      /* its values, in check_findings_t.v */
    uint16_t key;               /* into check_keys */
    uint8_t kind;
} check_finding_t;

typedef struct {
    check_finding_t *f;
    size_t nf, capf;
    check_value_t *v;
    size_t nv, capv;
} check_findings_t;

/* The message keys (spec/messages.MESSAGES), by a finding's key; CHECK_NKEYS of them. */
extern const char *const check_keys[];
extern const int CHECK_NKEYS;

/* The type-section violations validator.validate_in_python reports for the BTF whose
 * levels are `levels[0..nlevels-1]` (the deepest base first, the checked BTF last; each
 * indexed by index_types with its own first id and the string chain up to its own
 * table), sorted by type id, into `out` (the blob's own checks are check/validator.py's). 0,
 * 1 when unsure (the reference must run), -1 out of memory. */
int rules_check(const types_t *levels, int nlevels, check_findings_t *out);
void findings_free(check_findings_t *out);

#endif
