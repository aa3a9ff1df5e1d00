/* canonbtf._btf, the type section checked, ordered and renumbered: declarations.
 *
 * canon/order.py, canon/refine.py, canon/labels.py and canon/renumber.py are the
 * reference; this mirrors them on the raw type section (32-bit words in host order),
 * so no Python object is made per type. docs/ORDER.md defines what both compute. */
#ifndef CANONBTF_ORDER_TYPES_H
#define CANONBTF_ORDER_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "grow.h"
#include "intern.h"
#include "kinds.h"
#include "sort.h"

/* One string section of the chain (a base's, the base's base's, or the BTF's own). */
typedef struct {
    const uint8_t *data;
    uint32_t start, len;
} strtab_t;

/* The own types of one BTF: record starts into the word array, and the string chain. */
typedef struct {
    const uint32_t *w;
    size_t nwords;
    uint32_t first_id, count;   /* own ids are first_id .. first_id + count - 1 */
    uint32_t *start;            /* count + 1 word positions */
    const strtab_t *tabs;       /* deepest base first, own last */
    int ntabs;
} types_t;

static inline uint32_t t_kind(const types_t *t, uint32_t i) { return (t->w[t->start[i] + 1] >> 24) & 0x7F; }
static inline uint32_t t_vlen(const types_t *t, uint32_t i) { return t->w[t->start[i] + 1] & 0xFFFFFF; }
static inline uint32_t t_kflag(const types_t *t, uint32_t i) { return t->w[t->start[i] + 1] >> 31; }
static inline uint32_t t_name(const types_t *t, uint32_t i) { return t->w[t->start[i]]; }
static inline uint32_t t_sot(const types_t *t, uint32_t i) { return t->w[t->start[i] + 2]; }
/* The words after the common three. */
static inline const uint32_t *t_rest(const types_t *t, uint32_t i) { return t->w + t->start[i] + 3; }

/* Record starts of a type section (t->w, t->nwords, t->first_id set), checked as
 * reader._parse_types and _check_references check it (references up to the last own id,
 * names below str_end); 0, or -1 when the reference would reject the section (it then
 * gives the message). */
int index_types(types_t *t, uint32_t str_end);
/* Referenced ids of own type i, in record order (Type.refs); returns how many. */
uint32_t type_edges(const types_t *t, uint32_t i, uint32_t *out);
uint32_t edge_count(const types_t *t, uint32_t i);
/* The name at a string offset (length-bounded, as StringTable.get). */
const uint8_t *name_at(const types_t *t, uint32_t off, uint32_t *len);
/* The bytes from a string offset to the end of its table (*avail of them; "" and 0 for an
 * offset no table holds): a name's first bytes without finding its end. */
const uint8_t *name_span(const types_t *t, uint32_t off, uint32_t *avail);
/* The label's size field: the record's size for sized kinds, else 0 (labels.label_head). */
uint32_t label_size(const types_t *t, uint32_t i);
/* An ENUM or ENUM64 item's value, unsigned, and as signed (kind_flag 1) for its width. */
uint64_t enumerator_value(uint32_t kind, const uint32_t *item);
int64_t enumerator_signed(uint32_t kind, uint64_t value);

/* The names of some own types as ranks: equal strings, equal ranks; rank 0 is the empty
 * name; when made `ordered`, in name order (memcmp, a proper prefix first) (labelsort.c). */
typedef struct {
    uint32_t *first;           /* by position in the ids ranked: its first entry in rank[] */
    uint32_t *rank;            /* each type's name, then its items' (KINDS_ITEMS_NAMED) */
    const uint8_t **ptr;       /* by rank: the string */
    uint32_t *len;
    uint32_t distinct;         /* ranks are below it */
} ranks_t;
/* Ranks of the names of own types ids[0..n); in name order when `ordered` (else only
 * equalities count: no string is compared unless its hash is another's). 0, or -1 when
 * out of memory. */
int name_ranks(const types_t *t, const uint32_t *ids, uint32_t n, int ordered, ranks_t *r);
/* name_ranks of several views at once, into one rank space: r[v] ranks the names of own
 * types ids[v][0..n[v]) of t[v], and equal strings have equal ranks across the views
 * (each r[v] holds every rank's string). */
int name_ranks_joint(int views, const types_t *const *t, const uint32_t *const *ids,
                     const uint32_t *n, int ordered, ranks_t *r);
void ranks_free(ranks_t *r);
/* The positions 0..n-1 of own types ids[0..n) in label order (labels.label, name first
 * when by_name; a stable sort) into out; fresh[j] is 1 where the j-th label differs from
 * the one before. `names`: name_ranks of the same ids. 0, or -1 when out of memory. */
int label_sort(const types_t *t, const uint32_t *ids, uint32_t n, const ranks_t *names,
               int by_name, uint32_t *out, uint8_t *fresh);
/* What follows kind_flag in own type i's label, as label_sort compares it: tail_count
 * words, names[0] its name and names[1 + j] item j's, as numbers equal where the names
 * are (name ranks, or basekeys.c's name ids). */
size_t tail_count(uint32_t kind, uint32_t vlen);
void label_tail(const types_t *t, uint32_t i, const uint32_t *names, uint32_t *out);

/* The canonical order of `nodes` (own ids) with edges redirected through `redirect`
 * (indexed by id, NULL: none): written to `out` (count of nodes). Sets *alone when
 * refinement by referenced types alone made it. 0, or -1 when out of memory. */
int canonical_order(const types_t *t, const uint32_t *nodes, uint32_t nnodes,
                    const uint32_t *redirect, int by_name, uint32_t *out, int *alone);

/* dedup._abstract_keys: key and token number (0: none) of every own type, by own index,
 * numbered as the reference numbers them; `base_count` > 0: the first `base_count` types
 * are a split BTF's base (numbered as dedup.BaseIndex numbers them, the rest after).
 * 0, or -1 when out of memory. */
int abstract_keys(const types_t *t, uint32_t base_count, uint32_t *key, uint32_t *token_key);

/* The renumbered type section (host-order words) and its new string section. */
typedef struct {
    uint32_t *words;
    size_t nwords;
    uint8_t *strings;
    size_t strings_len;
} renumbered_t;

/* canon/renumber.renumber: the types `order` (own ids) in that order, ids through new
 * ids (merged ids, redirect[id] != id, take their target's); with `names`, names into a
 * new section after the first `nlenders` string tables, which lend the names they hold
 * (else names and strings stay as they are). */
int renumber_types(const types_t *t, const uint32_t *order, uint32_t n,
                   const uint32_t *redirect, int nlenders, int names, renumbered_t *out);

/* Own record i with ids through new_id (indexed by id) and name offsets moved by
 * `shift`, into out (as many words as the record). */
void remap_record(const types_t *t, uint32_t i, const uint32_t *new_id, uint32_t shift,
                  uint32_t *out);

/* Interned u32 strings -> the caller's numbers: equal strings, equal numbers; a new one
 * takes (*next)++ (a zeroed numbering_t is empty). native/csrc/intern.h's table holds the
 * strings, by id. */
typedef struct {
    intern_t table;
    uint32_t *value;                    /* by the table's id */
    size_t cap_value;
} numbering_t;
/* The number of item `w` (n words), `*next` and a new entry if it is new; 0 when out of
 * memory. */
uint32_t number_words(numbering_t *in, const uint32_t *w, uint32_t n, uint32_t *next);
void numbering_free(numbering_t *in);



#endif
