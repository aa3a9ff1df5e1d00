/* dedup._refined in C (refined.c): the dedup's partition refinement, where a
 * declaration reads the rank of the definition it stands for while the definitions of
 * its name share a class. Used by the module dedup (dedup_refined) and by diff's joint
 * classes (diff/csrc/diffjoint.c, through refine_settled). Plain C, no interpreter. */
#ifndef CANONBTF_REFINED_H
#define CANONBTF_REFINED_H

#include <stdint.h>

#include "refine.h"
#include "types.h"

/* Refine `p` (set up by the caller: refine_init, the edges, refine_referrers,
 * refine_blocks; handles are type ids 0..n) to the end, settling names as
 * dedup._refined does. token[i], declares[i]: of id i + 1 (the abstract keys' token
 * numbers, 0 for none). p->reads is allocated here (by handle; the caller frees it):
 * rank[reads[id]] is then id's class. 0, -1 out of memory. */
int refine_settled(refine_t *p, const uint32_t *token, const uint8_t *declares, uint32_t n);

/* What dedup._refined gives, by id 0..last. */
typedef struct {
    uint32_t *rank;       /* the refined rank; an id alone with its key keeps its id */
    uint32_t *stands_for; /* a declaration: the definition it stands for, else 0 */
    uint32_t *classes;    /* rank, or a declaration's definition's rank */
    uint32_t *twins;      /* the shared ids whose key's ids ended in two or more ranks,
                           * ascending: all that twins.declared_twins groups */
    uint32_t ntwins;
} refined_t;

/* dedup._refined of ids 1..last: `shared` (ascending, the ids whose key another id has)
 * refined from their keys, positions after every id; the others keep their id as rank.
 * key, token, declares by id (index 0: void). The edges of an id below own->first_id
 * are read from `base` (NULL when own starts at 1). 0, -1 out of memory, -2 an id or an
 * edge out of range. out is zeroed first; refined_free releases it. */
int dedup_refined(const types_t *base, const types_t *own, const uint32_t *key,
                  const uint32_t *token, const uint8_t *declares, uint32_t last,
                  const uint32_t *shared, uint32_t nshared, refined_t *out);
void refined_free(refined_t *r);

/* dedup.merge_map's groups: of ids 1..last sharing a class, each id but its group's
 * representative (the least by (moved, declares, id)) -> the representative; groups
 * whose first id is a VAR are left out. Ascending by id into nodes and reps (malloc'd,
 * n pairs). 0, -1 out of memory, -2 class numbers this does not take. */
int dedup_into(const uint32_t *classes, const uint8_t *moved, const uint8_t *declares,
               const uint8_t *kinds, uint32_t last, uint32_t **nodes, uint32_t **reps,
               uint32_t *n);

#endif
