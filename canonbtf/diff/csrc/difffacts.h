/* diff's facts and their comparison in C (difffacts.c), for the report (diffreport.c). */
#ifndef CANONBTF_DIFFFACTS_H
#define CANONBTF_DIFFFACTS_H

#include <stddef.h>
#include <stdint.h>

#include "diffspell.h"
#include "diffkeys.h"
#include "text.h"
#include "types.h"

/* What a fact is about: its key's first part (diff._Facts), in FACT_WHAT's spelling. */
enum {
    W_SIZE, W_WIDTH, W_SIGNED, W_MEMBER, W_VALUE, W_LINKAGE, W_RETURN, W_PARAM, W_VARARGS,
    W_PROTO, W_TARGET, W_TYPE, W_ENTRY, W_ENCODING, W_BITS, W_BIT_OFFSET, W_FWD_KIND, W_COUNT
};
extern const char *const FACT_WHAT[W_COUNT];

/* One (key, value) of a root's facts; texts are places in the list's arena. The key's
 * text: a member's path, a value's where "\0" name (wlen: where's length), a parameter's
 * index in decimal, a datasec entry's name; none for the rest. The value: `s1` the
 * spelling (member, return, proto, target, type) or word (width, linkage, encoding,
 * fwd_kind) or a parameter's name with `s2` its spelling; numbers `a` (size, bits,
 * bit_offset, a bool, an enumerator, a negative one with `neg`, a member's bit offset,
 * an entry's offset) and `b` (a bitfield's size, an entry's size). */
typedef struct {
    uint8_t what, neg;
    size_t key, klen, wlen;
    size_t s1, l1, s2, l2;
    uint64_t a, b;
} fact_t;

typedef struct {
    text_t arena;
    fact_t *f;
    size_t n, cap;
} facts_t;

/* Making one side's facts: its types (from id 1), speller, and by id the anonymous
 * aggregates described so far (`expanded`, _Facts.expanded) and scratch `seen` (zeroed). */
typedef struct {
    const types_t *t;
    cdump_speller_t *sp;
    uint8_t *expanded, *seen;
    facts_t *out;
    text_t path;
    int dup;      /* the facts made last spell a duplicated name */
    int depth;
} facter_t;

/* _Facts.of: root `id`'s facts appended to F->out (F->dup set as its second part). 0, or
 * -1 with ValueError (left to the reference) or MemoryError. */
int root_facts(facter_t *F, uint32_t id);
/* A hash of facts [from, to) of `o`: equal facts, equal hashes. */
uint64_t facts_hash(const facts_t *o, size_t from, size_t to);
int same_facts(const facts_t *oa, size_t a0, size_t a1, const facts_t *ob, size_t b0, size_t b1);

/* diff._compare's details (diff/text.py names them). */
enum {
    D_MEMBER_ADDED, D_MEMBER_REMOVED, D_MEMBER_RETYPED, D_MEMBER_MOVED, D_BITFIELD,
    D_VALUE_ADDED, D_VALUE_REMOVED, D_VALUE_CHANGED, D_PARAM_ADDED, D_PARAM_REMOVED,
    D_PARAM_RENAMED, D_PARAM_RETYPED, D_VAR_ADDED, D_VAR_REMOVED, D_VAR_RESIZED, D_VAR_MOVED,
    D_OTHER   /* "<what>_changed" */
};
typedef struct {
    int change;
    const fact_t *a, *b;   /* old and new (NULL: none) */
} detail_t;
typedef struct {
    detail_t *d;
    size_t n, cap;
} details_t;
/* The details of old facts [a0, a1) of `oa` against new [b0, b1) of `ob`, appended to d. */
int compare_facts(const facts_t *oa, size_t a0, size_t a1, const facts_t *ob, size_t b0,
                  size_t b1, details_t *d);

#endif
