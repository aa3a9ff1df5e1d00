/* canonbtf._btf.diff_plan (diffkeys.c): which roots diff must describe. */
#ifndef CANONBTF_DIFFKEYS_H
#define CANONBTF_DIFFKEYS_H

#include <stddef.h>

#include "types.h"

/* One side: its types from id 1 (a base's first, for split BTF) and where its own start
 * (in); by id, zeroed, count + 1 entries with 0 for void: `spell` (the root's facts are
 * read) and `expanded` (scratch); malloc'd lists of ids (out): `roots`, the named roots
 * whose name is not one root on each side with equal keys, and every decl tag, in id
 * order; `anon`, the anonymous aggregates no named root describes (_Facts.expanded);
 * `need`, every type describing those reads, in id order; by id (out), `safe`: bit 0,
 * the type's spelling as a reference depends on nothing but the types (no loop, no
 * duplicated name, whose tag is known only after pairing), bit 1, so does all its record
 * reads (its key is known); by id (out, when not NULL, count + 1 entries): `key`, a
 * non-leaf type's key (0: unknown), equal keys over both sides meaning equal facts, and
 * `same`, a named root left out as the same as the one root of its name on the other
 * side; malloc'd by id (out, count + 1 entries): `group`, a named root's (decl tags
 * aside) group of its family and name, numbered from 1 over both sides (`ngroups` of
 * them, the same on both), 0 for any other type. */
typedef struct {
    const types_t *t;
    uint32_t own_first;
    uint8_t *spell, *expanded, *safe;
    uint32_t *key;
    uint8_t *same;
    uint32_t *roots, *anon, *need, *group;
    size_t nroots, nanon, nneed, ngroups;
} diff_side_t;

/* diff.FAMILIES, in report order (F_COUNT of them), and a kind's (F_COUNT: none). */
enum { F_STRUCT, F_UNION, F_ENUM, F_TYPEDEF, F_FWD, F_FUNC, F_VAR, F_DATASEC, F_INT, F_FLOAT,
       F_DECL_TAG, F_COUNT };
uint32_t diff_family(uint32_t kind);

/* _Facts.anon_end: the anonymous aggregate a reference leads to through qualifiers, type
 * tags, arrays and pointers (0: none), and with `way` (ANON_WAY bytes) the way there
 * ("[]", "->", ...; *len bytes). */
#define ANON_CHAIN 48   /* btf/declarator.MAX_CHAIN: anon_end stops past it */
#define ANON_WAY (2 * (ANON_CHAIN + 1))
uint32_t anon_end(const types_t *t, uint32_t id, char *way, size_t *len);

/* Fills both sides' outputs. 0, or -1 when out of memory (the lists are then freed by the
 * caller all the same). */
int diff_plan(diff_side_t sides[2]);

#endif
