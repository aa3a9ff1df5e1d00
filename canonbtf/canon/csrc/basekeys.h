/* The base's part of a module's abstract keys, kept between runs (basekeys.c), and the
 * walk of abstract.c that both the one-section keys and the continuation over a module
 * use. */
#ifndef CANONBTF_BASEKEYS_H
#define CANONBTF_BASEKEYS_H

#include "types.h"

#define CYCLE 0xFFFFFFFFu   /* an edge closing a cycle through anonymous types (-1) */
#define BASE_KEYS_VERSION 1u

/* A flat table of hashed entries read in place: `width` u32s an entry, the first the
 * hash's high half; slots (a power of two) hold entry + 1, 0 for empty, probed in turn. */
typedef struct {
    const uint32_t *entry, *slot;
    uint32_t count, width, nslots;
} table_t;

/* A base's keys as kept (basekeys.c), checked and read in place from the file's bytes. */
typedef struct {
    const uint32_t *key, *token_key, *label;    /* by base index */
    uint32_t count, next, classes;              /* next: the first number after the base's */
    table_t names;      /* (hash, string offset, token of group 0, 1, 2): a name's id is entry + 1 */
    table_t labels;     /* (hash, a base type of the class) */
    table_t items;      /* (hash, key, a base type whose item it is, or ITEM_POOL | pool offset) */
    const uint32_t *pool;                       /* (length, words) of items no type spells */
    uint32_t npool;
} base_keys_t;

/* What abstract_keys_kept leaves: the base's names, label classes, token slots, items. */
typedef struct {
    ranks_t names;
    uint32_t *label, *number;
    numbering_t in;
    uint32_t next;
} keyed_state_t;

typedef struct walk {
    const types_t *t;
    const base_keys_t *bk;          /* the base below t->first_id, or NULL (one section) */
    const types_t *base;            /* its types (with bk) */
    const uint32_t *label, *token_key;
    uint32_t *key;
    uint8_t *on_path;
    uint32_t *stack, *edges, *item, *spare;     /* spare: a base type's edges */
    size_t nstack, cap_stack, cap_item, cap_edges, cap_spare;
    numbering_t in;
    uint32_t next;
} walk_t;

uint32_t token_group(const types_t *t, uint32_t i);
int walk_init(walk_t *w, const types_t *t, uint32_t *key, uint32_t *token_key);
int walk_from(walk_t *w, uint32_t root);
void walk_free(walk_t *w);
/* abstract_keys, and with `keep` what it numbered the base by (keyed_state_free). */
int abstract_keys_kept(const types_t *t, uint32_t base_count, uint32_t *key,
                       uint32_t *token_key, keyed_state_t *keep);
void keyed_state_free(keyed_state_t *s);
/* The number of w->item[0..n) (basekeys.c): the base's, else the module's next. */
uint32_t continued_number(walk_t *w, uint32_t n);

/* The base's keys of `base` (a BTF without a base) as the file's bytes (malloc'd). 0, or
 * -1 when out of memory. */
int base_keys_make(const types_t *base, uint8_t **out, size_t *len);
/* `bk` read from data[0..len) (4-byte aligned), checked against `base`; -1 when the bytes
 * are not a whole, undamaged file of this version for a base of that many types. */
int base_keys_read(const types_t *base, const uint8_t *data, size_t len, base_keys_t *bk);
/* Keys and token keys (by own index) of the types of `t`, a split BTF over `base`,
 * numbered as abstract_keys numbers the two as one section. 0, or -1 when out of
 * memory. */
int abstract_keys_over(const types_t *base, const base_keys_t *bk, const types_t *t,
                       uint32_t *key, uint32_t *token_key);

#endif
