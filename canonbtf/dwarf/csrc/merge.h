/* The keyed merge's parent side (keys.py KeyedMerge) in plain C (merge.c): the workers'
 * entries unified, the unsafe keys found, the units to encode again listed, and the
 * merged type section written as words. native/csrc/merge_bindings.c is its Python face
 * (the _core.KeyedMerge type): it turns each entry or record tuple into cells (the
 * compiled encoder sends its entries as these cells already: keys.PackedEntries), and owns
 * the numbering of names and other values the cells refer to, which the merge reads
 * through the host callbacks below.
 *
 * An entry or record is a row of cells, (tag, value) pairs, in this order: kind (INT),
 * name (NAME), kflag, size_or_type (a reference when merge_typed_sot(kind), else a value),
 * extra (an ARRAY: elem and index (references) and nelems), the item count (INT), then
 * each item's fields by the roles of merge_item_roles(kind). A reference is an INT (a key
 * id or, in a record, a type id) or a TOKEN; a value is an INT, a NAME (a str) or an
 * OBJECT (anything else). Two entries are one key exactly when their cells are equal.
 */
#ifndef CANONBTF_MERGE_H
#define CANONBTF_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "grow.h"
#include "intern.h"

/* A cell's tag: an int by value, a name's number, another value's number (a VAR's
 * placement, an int past 64 bits), a token's number (tokens and values share one
 * numbering). */
enum { CELL_INT = 1, CELL_NAME, CELL_OBJECT, CELL_TOKEN };
typedef struct { int64_t tag, v; } merge_cell_t;
typedef VEC(merge_cell_t) merge_cells_t;

/* (tag, v) appended to `c`: 0, or -1 out of memory. */
static inline int merge_cells_push(merge_cells_t *c, int64_t tag, int64_t v)
{
    if (VEC_RESERVE(*c, c->n + 1)) return -1;
    c->a[c->n++] = (merge_cell_t){tag, v};
    return 0;
}

/* Whether size_or_type holds a type id; the roles (Name, Type, Value) of an item's
 * fields (kinds.KINDS). */
int merge_typed_sot(int64_t kind);
const char *merge_item_roles(int64_t kind);

/* A name's characters, as code units of `width` bytes (1: latin-1). */
typedef struct { const void *data; size_t len; int width; } merge_text_t;

/* What the merge asks of the numbering of names and values. The callbacks returning an
 * int give 0, or -1 after reporting their own failure (the merge then fails with
 * MERGE_HOST_FAILED). */
typedef struct {
    void *ctx;
    int (*name_text)(void *ctx, int64_t name, merge_text_t *out);
    /* Whether value `object` is true: 1 or 0 (or -1). */
    int (*object_truth)(void *ctx, int64_t object);
    /* The number of the token ("enum", name) or ("aggregate", name, is_union), in the
     * numbering of the cells' tokens; -1 when it fails. */
    int64_t (*token)(void *ctx, int is_enum, int64_t name, int is_union);
    /* How many values and tokens are numbered. */
    size_t (*object_count)(void *ctx);
    /* Value `object` as an int: its low 64 bits, or with `exact` its value in [0, 2^64);
     * 1 when it is no int (or, exact, out of that range). */
    int (*object_bits)(void *ctx, int64_t object, int exact, uint64_t *out);
    /* When value `object` is a VAR's placement (linkage, section, offset, size): taken
     * as type `type_id`'s, its linkage in *linkage; 1 when it is no placement. */
    int (*placement)(void *ctx, int64_t object, uint64_t type_id, uint64_t *linkage);
} merge_host_t;

/* Why a call failed: out of memory; input this C does not take (the Python reference
 * then runs); a call out of order; a host callback's failure; a name no latin-1 byte
 * string holds (`name`). `why` is the message. */
enum { MERGE_NO_MEMORY = 1, MERGE_DECLINED, MERGE_OUT_OF_ORDER, MERGE_HOST_FAILED,
       MERGE_NOT_LATIN1 };
typedef struct { int code; int64_t name; const char *why; } merge_failure_t;

/* The phases, in order: adding groups, unsafe keys found, types emitted, names placed. */
enum { MERGE_ADDING, MERGE_FOUND, MERGE_EMITTED, MERGE_PLACED };

typedef struct { size_t first, len; } merge_group_t;          /* a group's map in `maps` */
typedef struct { size_t group, first, count; } merge_unit_t;  /* keys in `unit_keys` */

typedef struct {
    merge_host_t host;
    intern_t entries;              /* cells; key id = intern id + 1 */
    VEC(int64_t) maps;             /* every group's worker id -> parent id */
    size_t group_first;            /* the map of the group being added */
    VEC(merge_group_t) groups;
    VEC(merge_unit_t) units;
    VEC(uint32_t) unit_keys;
    VEC(uint8_t) unsafe;           /* per key id */
    VEC(int64_t) token;            /* per key id: the number of its token, or -1 */
    VEC(uint32_t) target;          /* per value number: the key a safe token stands for */
    VEC(uint32_t) type_of;         /* per key id: its type id in the merged Btf */
    VEC(uint8_t) used;             /* per name number: named by a type of the merged Btf */
    VEC(uint32_t) name_offset;     /* per name number */
    VEC(uint32_t) emitted;         /* the keys with a type of their own, in type id order */
    uint32_t first_id;             /* the first type id (after a base's: split BTF) */
    uint32_t string_start;         /* the first string offset (after a base's strings) */
    size_t received;               /* entries received (the caller counts them) */
    int state;                     /* MERGE_ADDING .. MERGE_PLACED */
    merge_failure_t failure;
} merge_t;

/* The type section's words being written, and the type id of the last one. */
typedef struct { VEC(uint32_t) w; int keyed; uint64_t type_id; } merge_words_t;

/* Every function below returning an int gives 0, or -1 with m->failure set. */
void merge_init(merge_t *m, const merge_host_t *host);
void merge_free(merge_t *m);
/* 0 when the merge is in phase `state` or later, else MERGE_OUT_OF_ORDER. */
int merge_need(merge_t *m, int state);

/* A worker group: begin, its entries in order (key ids from 1; an entry's references
 * to the group's earlier keys map through merge_group_map), end, then its units' key
 * sets. */
int merge_begin_group(merge_t *m);
static inline const int64_t *merge_group_map(const merge_t *m, size_t *n)
{
    *n = m->maps.n - m->group_first;
    return m->maps.a + m->group_first;
}
int merge_add_entry(merge_t *m, const merge_cell_t *cells, size_t n);
int merge_end_group(merge_t *m);
int merge_add_unit(merge_t *m, const uint32_t *keys, size_t count);

/* The unsafe keys (m->unsafe, per key id) found, once; the tokens `split` (host object
 * numbers: names a module's base defines otherwise) count as ambiguous. */
int merge_finish(merge_t *m, const int64_t *split, size_t nsplit);
/* Whether unit u (in the order added) holds an unsafe key; after merge_finish. */
int merge_unit_redone(const merge_t *m, size_t u);
/* The key id of an entry, or -2 (keys.py's _UNKNOWN) when no worker sent it. */
int merge_find(merge_t *m, const merge_cell_t *cells, size_t n, int64_t *key);
/* Each safe key's type id (m->type_of; m->emitted: the keys with a type of their own),
 * numbered from `first_id`: 1, or for split BTF the id after its base's last. */
int merge_emit(merge_t *m, uint32_t first_id);

/* The string table: begin, each record the merged Btf appends, then the table (malloc'd
 * into *data, the caller frees it): "" then the names of its types, sorted. With `start`
 * (a base's string section's end: split BTF) the names only, at offsets from `start`;
 * "" is the base's. */
int merge_strings_begin(merge_t *m);
int merge_strings_add(merge_t *m, const merge_cell_t *record);
int merge_strings_table(merge_t *m, uint32_t start, char **data, size_t *len);

/* The type section's words (out zeroed first; the caller frees out->w.a): begin (the
 * safe keys' types), then each record given to the strings (a reference its type id). */
int merge_words_begin(merge_t *m, merge_words_t *out);
int merge_words_add(merge_t *m, const merge_cell_t *record, merge_words_t *out);

#endif
