/* diff/pairing.settle_duplicates' graph work in C (diffjoint.c). */
#ifndef CANONBTF_DIFFJOINT_H
#define CANONBTF_DIFFJOINT_H

#include "types.h"

typedef struct {
    uint32_t *reach;     /* the ids the roots reach (void left out), ascending */
    uint32_t n;
    uint32_t *position;  /* by index into reach: its place in the side's canonical order */
} joint_side_t;

typedef struct {
    joint_side_t side[2];
    /* By joint id: 0 void, then side 0's reach as 1..n0, then side 1's: equal numbers,
     * equivalent types (dedup.equivalence_classes' equalities, not its numbers). */
    uint32_t *classes;
} joint_t;

/* What the roots (ids of each side, whose types start at id 1: t[k]->first_id == 1)
 * reach, ordered per side and refined together. 0; -1 out of memory; -2 a root that is
 * no id of its side. */
int diff_joint(const types_t *const t[2], const uint32_t *const roots[2],
               const uint32_t nroots[2], joint_t *out);
void joint_free(joint_t *j);

#endif
