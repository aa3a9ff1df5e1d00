/* The BTF kinds as canonbtf/spec/kinds.py's table has them, through the generated
 * kinds.def: the one kind enum (K_*), the sets (KINDS_*, a bit per kind), the words and
 * item roles by kind and the one kind-name table. Both extensions include this. */
#ifndef CANONBTF_KINDS_H
#define CANONBTF_KINDS_H

#include <stdint.h>

enum {
#define KIND(name, number, fixed_words, item_words, fixed_roles, item_roles) K_##name = number,
#define KIND_SET(name, mask)
#include "kinds.def"
#undef KIND
#undef KIND_SET
    K_COUNT
};
#define K_MAX (K_COUNT - 1)

enum {
#define KIND(name, number, fixed_words, item_words, fixed_roles, item_roles)
#define KIND_SET(name, mask) KINDS_##name = mask,
#include "kinds.def"
#undef KIND
#undef KIND_SET
};

/* Whether `kind` is in the set `set` (KINDS_*); kinds past the table are in none. */
static inline int kind_in(uint32_t set, uint32_t kind) { return kind < 32 && ((set >> kind) & 1u); }

/* Words after the common three; words per vlen item (0: none). Unknown kinds: 0. */
static inline uint32_t kind_fixed_words(uint32_t kind)
{
    switch (kind) {
#define KIND(name, number, fixed_words, item_words, fixed_roles, item_roles) case number: return fixed_words;
#define KIND_SET(name, mask)
#include "kinds.def"
#undef KIND
#undef KIND_SET
    default: return 0;
    }
}

static inline uint32_t kind_item_words(uint32_t kind)
{
    switch (kind) {
#define KIND(name, number, fixed_words, item_words, fixed_roles, item_roles) case number: return item_words;
#define KIND_SET(name, mask)
#include "kinds.def"
#undef KIND
#undef KIND_SET
    default: return 0;
    }
}

/* The role of each fixed word, and of each field of an item: N a name, T a type id,
 * V a value ("": none). */
static inline const char *kind_fixed_roles(uint32_t kind)
{
    switch (kind) {
#define KIND(name, number, fixed_words, item_words, fixed_roles, item_roles) case number: return fixed_roles;
#define KIND_SET(name, mask)
#include "kinds.def"
#undef KIND
#undef KIND_SET
    default: return "";
    }
}

static inline const char *kind_item_roles(uint32_t kind)
{
    switch (kind) {
#define KIND(name, number, fixed_words, item_words, fixed_roles, item_roles) case number: return item_roles;
#define KIND_SET(name, mask)
#include "kinds.def"
#undef KIND
#undef KIND_SET
    default: return "";
    }
}

/* The kind's name as format.kind_name spells it ("UNKN", "INT", ...); NULL past the table. */
static inline const char *kind_name(uint32_t kind)
{
    switch (kind) {
#define KIND(name, number, fixed_words, item_words, fixed_roles, item_roles) case number: return #name;
#define KIND_SET(name, mask)
#include "kinds.def"
#undef KIND
#undef KIND_SET
    default: return 0;
    }
}

#endif
