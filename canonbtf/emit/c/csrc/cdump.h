/* The C header's hot parts in plain C (cdump.c): the type facts, the shape check, the
 * spelling of definitions and declarations, and their placement, on a checked view of a
 * type section without a base (types.h) and plain arrays. native/csrc/cdump_bindings.c
 * turns Python's arguments into these and the results into the reference's objects.
 *
 * Every function returning int gives 0 (or the answer), or -1 after reporting the failure
 * through failure.h: ValueError where the input is one this C leaves to the reference (a
 * BTF with a base, a pointer size other than 4 or 8, ids that are not definitions, sizes
 * past 2^56, chains past MAX_CHAIN, a by-value loop the caller did not rule out),
 * MemoryError. */
#ifndef CANONBTF_CDUMP_H
#define CANONBTF_CDUMP_H

#include <stddef.h>
#include <stdint.h>

#include "text.h"
#include "types.h"

/* Bytes the caller owns (a `___N` name, a declared function's name); p NULL: none. */
typedef struct {
    const char *p;
    size_t len;
} cdump_name_t;

/* One mention of a type in a spelling: DefinitionSpeller's (id, VALUE or REF). */
enum { CDUMP_VALUE = 0, CDUMP_REF = 1 };
typedef struct {
    uint32_t id, mode;
} cdump_mention_t;

/* DefinitionSpeller.render's (text, [(id, mode)], [enumerator]) of one definition (or
 * declaration's (text, [(id, mode)])): ranges of the set's arrays. */
typedef struct {
    uint32_t id;                 /* the definition, or the declared FUNC */
    size_t text_at, text_len;
    size_t mention_at, nmentions;
    size_t enumerator_at, nenumerators;
} cdump_spelling_t;

/* Spellings one call made, in the order it gives them; zero it before the call and free
 * it with cdump_spellings_free whatever the call returned. */
typedef struct {
    text_t text;
    cdump_mention_t *mentions;
    size_t nmentions, mentions_cap;
    uint32_t *enumerators;       /* each enumerator's name offset (name_at), as spelled */
    size_t nenumerators, enumerators_cap;
    cdump_spelling_t *items;
    size_t nitems, items_cap;
} cdump_spellings_t;
void cdump_spellings_free(cdump_spellings_t *s);

/* The `___N` suffix of the enumerator at `occurrence` (counted from 0 in definition `id`)
 * in *s, *len, or *s NULL for none; 0, or -1 when the callback failed (it reports that
 * itself, and the call stops). */
typedef int (*cdump_suffix_fn)(void *arg, uint32_t id, size_t occurrence, const char **s,
                               size_t *len);

/* ---- c.type_facts ---- */

/* 0 when `t` has no base (the facts apply), else -1 reported. */
int cdump_facts_apply(const types_t *t);
/* sizes.pointer_size: that of the first INT `long int` or `long unsigned int` of size 4
 * or 8, else 8. */
uint32_t cdump_pointer_size(const types_t *t);
/* The top byte of each type's info word (kind | kind_flag << 7), 0 for void: count + 1. */
void cdump_info_bytes(const types_t *t, uint8_t *out);
/* The name of type `id` (0 .. count), "" for void and the kinds a header never spells. */
const uint8_t *cdump_type_name(const types_t *t, uint32_t id, uint32_t *len);
/* The FUNC `id` tagged whole (component -1, kind_flag 0) by DECL_TAG of own index i, or 0
 * when type i is no such tag. */
uint32_t cdump_tagged_function(const types_t *t, uint32_t i);

/* ---- the shape check and the spelling ---- */

/* 1 when the types are certainly spellable as C (c_shape_problem finds nothing), 0 when
 * the reference must look; -1. */
int cdump_shape_ok(const types_t *t, uint64_t ptr_size);
/* c._Header._definitions: every definition's spelling, in id order. */
int cdump_definitions(const types_t *t, uint64_t ptr_size, cdump_spellings_t *out);
/* The spellings of definitions ids[0..n) with `display` names (by id, t->first_id +
 * t->count entries, or NULL) and enumerator suffixes from `suffix` (or NULL). */
int cdump_render(const types_t *t, uint64_t ptr_size, const cdump_name_t *display,
                 const uint32_t *ids, size_t n, cdump_suffix_fn suffix, void *arg,
                 cdump_spellings_t *out);
/* DefinitionSpeller.declaration of each names[k] declared with the prototype of FUNC
 * funcs[k] (a kfunc's `extern` line), with `display` names; no enumerators. */
int cdump_declarations(const types_t *t, uint64_t ptr_size, const cdump_name_t *display,
                       const uint32_t *funcs, const cdump_name_t *names, size_t n,
                       cdump_spellings_t *out);

/* ---- placement (emit/c/order.py) ---- */

/* order.Placement's input: definitions defs[0..n) with canonical ranks rank[k] and their
 * spellings' mentions: nmentions[k] of them from mentions[mention_at[k]]. */
typedef struct {
    const uint32_t *defs;
    const uint64_t *rank;
    const cdump_mention_t *mentions;
    const size_t *mention_at, *nmentions;
    size_t n;
} cdump_place_in_t;

/* order.Placement.order: the definitions in header order into sequence[0..n), the tags
 * to declare first into forward (room for t->first_id + t->count ids), their number in
 * *nforward. */
int cdump_placement(const types_t *t, uint64_t ptr_size, const cdump_place_in_t *in,
                    uint32_t *sequence, uint32_t *forward, size_t *nforward);

#endif
