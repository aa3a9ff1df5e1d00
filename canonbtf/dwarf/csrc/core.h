/* The compiled encode core: one unit's DWARF -> BTF records -> keys, in C.
 *
 * It mirrors canonbtf/dwarf/dies.py (reading), convert.py with type_records.py and
 * numbering.py (records) and keys.py
 * (KeyPool.add_unit) step for step; the pure-Python modules stay the reference and the
 * tests hold the two to the same records, keys and bytes.  Anything this core is not
 * sure to read exactly as the reference does (a read outside a section, an unknown
 * form, a value over 64 bits, an attribute form the reference turns into an odd value,
 * nesting deeper than MAX_DEPTH) makes it give the unit up with CoreFallback: the
 * worker then reads that unit with the pure path, which either encodes it or raises
 * the reference's error message.  So damaged input ends in the same message on both.
 *
 * Plain C: the sections are byte buffers, what the symbol table knows is asked through
 * encoder_calls_t, and results stay in the encoder's arrays; the Python face
 * (canonbtf.dwarf._core.UnitEncoder) is native/csrc/encoder_bindings.c.
 */
#ifndef CANONBTF_CORE_H
#define CANONBTF_CORE_H

#include <stdint.h>
#include <stddef.h>

typedef __int128 i128;

/* BTF kinds: the table of kinds (canonbtf/spec/kinds.py, native/csrc/kinds.h). */
#include "kinds.h"
#include "grow.h"
#include "plain.h"
#include "idmap.h"
#include "intern.h"

/* Features (canonbtf/dwarf/features.py), as bits the Python side sets
 * (canonbtf/spec/features.py, through the generated features.def). */
enum {
#define FEATURE(name, bit) F_##name = bit,
#include "features.def"
#undef FEATURE
};

/* Attribute slots: the attributes some tag wants (dwarf_numbers.WANTED_ATTRS). */
enum { S_NAME, S_TYPE, S_BYTE_SIZE, S_DECLARATION, S_ENCODING, S_BIT_SIZE, S_SIGNATURE,
       S_EXTERNAL, S_LOW_PC, S_ABSTRACT_ORIGIN, S_SPECIFICATION, S_CALLING_CONVENTION,
       S_LOCATION, S_DATA_MEMBER_LOCATION, S_DATA_BIT_OFFSET, S_BIT_OFFSET,
       S_CONST_VALUE, S_LOWER_BOUND, S_UPPER_BOUND, S_COUNT, S_STR_OFFSETS_BASE,
       S_ADDR_BASE, S_LOCLISTS_BASE, S_LANGUAGE, NSLOTS };

/* How a wanted attribute's value is read (dwarf_numbers.V_*). */
enum { V_NONE, V_STRING, V_REF, V_CONST, V_LOCATION, V_FLAG, V_SECTION_OFFSET, V_TEXT,
       V_ADDRESS, V_ADDRESS_EXPR, V_PARAM_LOCATION };

/* What a parameter's location attribute holds (attr_t.loc_kind): its summary
 * (locations.py), or a location list by section offset or by DW_FORM_loclistx index. */
enum { LOC_SUMMARY, LOC_LIST, LOC_LIST_INDEX };

enum { ROLE_SKIP, ROLE_TYPE, ROLE_CHILD, ROLE_UNIT, ROLE_VARIABLE };

#define MAX_DEPTH 200          /* deeper reference chains go to the pure path */
#define FAILED (-1)            /* numbering.FAILED */
#define UNSET INT64_MIN

typedef struct { const uint8_t *p; uint32_t len; } name_t;

typedef struct {
    uint8_t slot;
    uint8_t is_str;
    uint8_t addr_index;        /* an index into .debug_addr, resolved after the walk */
    uint8_t loc_kind;          /* LOC_*, for a parameter's location */
    name_t s;
    i128 v;
} attr_t;

typedef struct {
    uint64_t offset;
    uint32_t tag;
    uint32_t attr_first;
    uint8_t nattrs;
    uint8_t has_children;
    int32_t first_child, last_child, next;
} node_t;

typedef struct {
    uint32_t attr, form;
    int64_t implicit;
    int8_t slot;               /* -1: not wanted in the wanted reading */
    uint8_t vkind;
    uint8_t cls;               /* form class (read.c) */
    uint8_t size;              /* byte size of a fixed-size form */
} spec_t;

typedef struct {
    uint32_t tag;
    uint8_t defined, has_children, role;
    uint32_t spec_first;
    uint32_t nspecs;
    int64_t fixed_size;        /* >= 0: every form has a fixed size (skip by a constant) */
} abbrev_t;

typedef struct {
    uint8_t kind, kflag;
    name_t name;
    i128 sot;
    i128 extra;                /* INT word, FUNC flags, DECL_TAG component */
    int64_t elem, index;       /* ARRAY */
    i128 nelems;
    uint32_t var_extra;        /* VAR: the caller's slot of (linkage, section, offset, size) */
    uint32_t item_first, nitems;
    uint8_t set;
} rec_t;

typedef struct { name_t name; int64_t type; i128 value; } item_t;

/* Why a DIE or a part of a type is left out (the reference's texts: the binding's
 * reason_text). */
enum { R_NOT_TYPE, R_COMPLEX, R_IMAGINARY, R_DECIMAL, R_BIG_INT, R_TAG, R_ATOMIC,
       R_BY_VALUE, R_MEMBER, R_IN_STRUCT, R_IN_ARRAY, R_IN_ENUM, R_IN_PROTO,
       R_FUNC_PARAM, R_FUNC_RET, R_VAR, NREASONS };

/* A count of skips: of reason `code` (R_*) about DW_TAG `tag` (0 when the reason names
 * none), or of skipped DIEs of `tag` (code 0). */
typedef struct { uint32_t code; uint32_t tag; uint64_t count; } skip_t;

typedef VEC(skip_t) skip_counts_t;


/* What a reference of an entry stands for: void, the key id of what it refers to, the
 * token of a named aggregate or enum (its id), or a cycle (keys.py's parts). */
typedef struct { uint8_t tag; uint32_t id; } part_t;  /* P_VOID, P_KEY, P_TOKEN, P_CYCLE */
enum { P_VOID, P_KEY, P_TOKEN, P_CYCLE };

/* A token: ("aggregate", name, is_union) or ("enum", name). */
typedef struct { name_t name; uint8_t aggregate, is_union; } token_t;

/* An entry new to the encoder: made of record `rec` of the unit, its references standing
 * for the parts from entry_parts[part_first] on (none for a leaf kind). */
typedef struct { uint32_t rec; uint32_t part_first; } new_entry_t;

typedef struct encoder encoder_t;

/* What the encoder asks of its caller (the binding): the symbol table's answers and the
 * placing of variables. Each gets `ctx`; each returns -1 when it failed (the caller keeps
 * its own error and the unit ends), otherwise as said. */
typedef struct {
    void *ctx;
    /* 1 when a function symbol bears `name` (*linked: one of its addresses is among the
     * n given), 0 when none does */
    int (*function_symbol)(void *ctx, name_t name, const i128 *addresses, size_t n,
                           int *linked);
    /* 1 when `name` is a kfunc (a BTF_ID of a kfunc set), else 0 */
    int (*is_kfunc)(void *ctx, name_t name);
    /* 1 when a symbol confirms variable `name` at `address` (per-CPU only unless `every`):
     * its place is kept in the caller's *slot; 0 when none does */
    int (*place_variable)(void *ctx, name_t name, i128 address, int every, uint32_t *slot);
    /* the place in `slot` made the VAR's (linkage, section, offset, size): 0 */
    int (*var_extra)(void *ctx, uint32_t slot, int linkage);
    /* the bytes a VAR's extra in `slot` is keyed by (its repr): 0, *bytes kept by the
     * caller until the next unit */
    int (*var_key)(void *ctx, uint32_t slot, const uint8_t **bytes, size_t *len);
} encoder_calls_t;

typedef struct {
    uint64_t offset, end, die_offset;
    int version, offset_size, address_size;
    uint64_t abbrev_offset;
} unit_t;

/* A section's bytes (empty when the file has none), held by the caller for the
 * encoder's life. */
typedef struct { const uint8_t *buf; size_t len; } section_t;

/* One DWARF file's encoder, for one unit at a time. The caller sets the sections,
 * little, registers, features, has_symbols and calls, zeroes the rest, and frees it with
 * encoder_free. */
struct encoder {
    section_t info, abbrev, str, line_str, str_offsets, addr, loc, loclists;
    int little;
    uint8_t registers[16];     /* DWARF numbers of the argument registers (locations.py) */
    int nregisters;
    int features;
    int has_symbols;
    encoder_calls_t calls;
    skip_counts_t skips;       /* skip reasons of the committed units */
    skip_counts_t skipped_tags; /* DIEs skipped by tag, committed units */
    char why[160];             /* why the unit goes to the pure path */
    int bad;

    /* reading */
    unit_t unit;
    VEC(abbrev_t) abbrevs;
    VEC(spec_t) specs;
    VEC(node_t) nodes;
    VEC(attr_t) attrs;
    VEC(int32_t) types;        /* type nodes in DIE order */
    VEC(int32_t) type_at;      /* offset - die_offset -> type node, -1 */
    VEC(int32_t) stack;
    VEC(skip_t) pending_tags;  /* DIEs skipped outside a type, this unit */
    int have_sob, have_aob, have_lob;
    uint64_t sob, aob, lob;

    /* converting */
    VEC(rec_t) recs;
    VEC(item_t) items;
    VEC(int32_t) owners;
    VEC(int64_t) local;        /* per node: its record number, 0, FAILED or UNSET */
    intern_t nontype;          /* referenced offsets that are no type (counted once) */
    int64_t index_type;
    VEC(item_t) decl_tags;     /* name + component (in type) */
    VEC(int32_t) programs;
    VEC(i128) low_pcs;         /* a function's addresses: its own, its copies' */
    VEC(skip_t) pending_skips;
    int depth;

    /* keys */
    intern_t names;
    idmap_t str_names;         /* .debug_str offset + 1 -> name id (a name's bytes hashed once) */
    intern_t tokens;
    VEC(token_t) token_list;   /* by token id */
    intern_t entries;
    VEC(new_entry_t) new_entries;  /* the last unit's */
    VEC(part_t) entry_parts;
    VEC(part_t) part;
    VEC(uint8_t) waiting;
    VEC(uint8_t) on_path;
    VEC(uint32_t) key;
    VEC(int32_t) dfs;
    VEC(uint8_t) ser;
    VEC(uint32_t) unit_key_list;  /* the last unit's key ids, sorted, distinct */
    uint64_t type_dies;        /* type DIEs read, committed units */
};

/* encoder.c: the unit `u` read and converted: 0; -1 give it up (e->why); -2 out of
 * memory; -3 a call to the caller failed. */
int encode_unit(encoder_t *e, const unit_t *u);
void encoder_free(encoder_t *e);
/* read.c */
int read_unit(encoder_t *e);
/* The DW_AT_language of unit u's own DIE in *language (-1: none); 0, 1 where the
 * reference must read it (not a unit DIE, a form this does not mirror), or as
 * encode_unit fails. Reads the unit's abbreviations and its first DIE only. */
int unit_language(encoder_t *e, const unit_t *u, int64_t *language);
/* locations.c */
int64_t param_location_summary(const encoder_t *e, const attr_t *a);
int unexpected_register(int64_t summary, int expected);
int64_t expression_summary(const uint8_t *x, uint64_t n, int first);
/* convert.c: 0; -1 give the unit up; -3 a call to the caller failed */
int convert_unit(encoder_t *e);
const attr_t *node_attr(const encoder_t *e, const node_t *n, int slot);
int commit_skips(encoder_t *e);  /* 0, -2 out of memory */
/* keys.c */
/* 0; -1 give the unit up; -2 out of memory; -3 a call to the caller failed */
int add_unit_keys(encoder_t *e);
int64_t encoder_name_id(encoder_t *e, name_t name);

/* merge.c: merge_typed_sot, merge_item_roles */
#include "merge.h"

int fail(encoder_t *e, const char *fmt, ...);

#endif
