/* diff's report written as text or JSON (diffwrite.c). */
#ifndef CANONBTF_DIFFWRITE_H
#define CANONBTF_DIFFWRITE_H

#include <stdint.h>

#include "difffacts.h"

/* The families' names (diffkeys.h's F_*), and the statuses in report order. */
extern const char *const DIFF_FAMILY[F_COUNT];
enum { S_REMOVED, S_ADDED, S_CHANGED };

/* One change: its family, status and shown name; an added or removed root's one-line
 * description, or a changed one's details with the facts they point into. */
typedef struct {
    int family, status;
    const char *name;
    size_t nlen;
    const char *brief;
    size_t blen;
    const details_t *details;
    const facts_t *old, *new;
} diff_change_t;

/* The report is: head, then the changes in report order, each family's first preceded by
 * its section and every other change by what goes between, then the end. */
int write_head(text_t *b, size_t n, const uint32_t totals[3], const uint32_t counts[][3], int json);
int write_section(text_t *b, int family, const uint32_t counts[3], int json);
int write_change(text_t *b, const diff_change_t *c, int json);
int write_between(text_t *b, int json);
int write_end(text_t *b, size_t n, int json);

#endif
