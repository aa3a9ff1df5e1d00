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
 */
#ifndef CANONBTF_CORE_H
#define CANONBTF_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
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
       S_ADDR_BASE, S_LOCLISTS_BASE, NSLOTS };

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
    PyObject *var_extra;       /* VAR: (linkage, section, offset, size), owned */
    uint32_t item_first, nitems;
    uint8_t set;
} rec_t;

typedef struct { name_t name; int64_t type; i128 value; } item_t;

typedef struct { uint32_t code; uint32_t tag; uint64_t count; } skip_t;


typedef struct { uint8_t tag; uint32_t id; } part_t;  /* P_VOID, P_KEY, P_TOKEN, P_CYCLE */
enum { P_VOID, P_KEY, P_TOKEN, P_CYCLE };

typedef struct encoder encoder_t;

typedef struct {
    uint64_t offset, end, die_offset;
    int version, offset_size, address_size;
    uint64_t abbrev_offset;
} unit_t;

struct encoder {
    PyObject_HEAD
    Py_buffer info, abbrev, str, line_str, str_offsets, addr, loc, loclists;
    int little;
    uint8_t registers[16];     /* DWARF numbers of the argument registers (locations.py) */
    int nregisters;
    int features;
    int has_symbols;
    PyObject *functions;       /* dict name -> frozenset of addresses, or None */
    PyObject *kfuncs;          /* set of names, or None */
    PyObject *place_variable;  /* callable or None */
    PyObject *tag_names;       /* dict tag -> name */
    PyObject *fallback;        /* the exception class for "read this unit in Python" */
    PyObject *empty_set;       /* frozenset(): a function's addresses without a symtab */
    PyObject *skips;           /* dict reason -> count (committed units) */
    PyObject *skipped_tags;    /* dict tag -> count (committed units) */
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
    VEC(skip_t) pending_skips;
    int depth;

    /* keys */
    intern_t names;
    idmap_t str_names;         /* .debug_str offset + 1 -> name id (a name's bytes hashed once) */
    VEC(PyObject *) name_objs;
    intern_t tokens;
    VEC(PyObject *) token_objs;
    intern_t entries;
    PyObject *new_entries;     /* list */
    PyObject *unit_keys;       /* list of (unit offset, bytes of u32 key ids) */
    VEC(part_t) part;
    VEC(uint8_t) waiting;
    VEC(uint8_t) on_path;
    VEC(uint32_t) key;
    VEC(int32_t) dfs;
    VEC(uint8_t) ser;
    VEC(uint32_t) unit_key_list;
    uint64_t type_dies;        /* type DIEs read, committed units */
};

/* read.c */
int read_unit(encoder_t *e);
/* locations.c */
int64_t param_location_summary(const encoder_t *e, const attr_t *a);
int unexpected_register(int64_t summary, int expected);
int64_t expression_summary(const uint8_t *x, uint64_t n, int first);
/* convert.c */
int convert_unit(encoder_t *e);
const attr_t *node_attr(const encoder_t *e, const node_t *n, int slot);
int commit_skips(encoder_t *e);
/* keys.c */
int add_unit_keys(encoder_t *e);
PyObject *name_object(encoder_t *e, name_t name);
PyObject *py_from_i128(i128 v);
PyObject *record_object(encoder_t *e, const rec_t *r);
void keys_free(encoder_t *e);

/* merge.c: merge_typed_sot, merge_item_roles */
#include "merge.h"

int fail(encoder_t *e, const char *fmt, ...);

#endif
