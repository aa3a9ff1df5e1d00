/* The validator's fast pass: validator.validate's verdict without its messages.
 *
 * Mirrors btf/validator.py (_check_blob, _check_type_tags), check_records.py and
 * check_resolve.py rule by rule, on the words the reader checked: the same kernel
 * resolve walk (32-entry stack, walk modes, what counts as resolved), the same sizes.
 * Where the reference reports a violation this stops and says "maybe not"; where the
 * reference could fail in another way (a base type it cannot size), too: the Python
 * validator then runs and gives its messages. It never says clean where the reference
 * reports anything; tests/test_compiled_check.py holds it to that.
 * In a clean run no type is ever broken, so there is no BROKEN state here. */
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define K_VOID 0
#define K_NULL (K_MAX + 1)          /* an id that does not exist (check_env.NULL) */
#define MAX_TYPE_ID 0xFFFFFu
#define MAX_NAME_OFFSET 0xFFFFFFu
#define MAX_VLEN 0xFFFFu
#define MAX_RESOLVE_DEPTH 32
#define POINTER_SIZE 8u
#define MAX_BLOB_SIZE (16u * 1024 * 1024)
#define MAX_NAME_LEN 512u
/* How deep a base type's resolution may recurse before this gives up (the reference
 * recurses in Python and would stop at its recursion limit). */
#define MAX_BASE_DEPTH 64

#define BIT(k) (1u << (k))
#define MODIFIERS (BIT(K_TYPEDEF) | BIT(K_VOLATILE) | BIT(K_CONST) | BIT(K_RESTRICT) \
                   | BIT(K_TYPE_TAG))
#define NEEDS_RESOLVE (MODIFIERS | BIT(K_PTR) | BIT(K_STRUCT) | BIT(K_UNION) | BIT(K_ARRAY) \
                       | BIT(K_VAR) | BIT(K_FUNC) | BIT(K_DECL_TAG) | BIT(K_DATASEC))
#define SOURCE_ONLY (BIT(K_VAR) | BIT(K_DECL_TAG) | BIT(K_DATASEC))
#define SIZED (BIT(K_INT) | BIT(K_STRUCT) | BIT(K_UNION) | BIT(K_ENUM) | BIT(K_DATASEC) \
               | BIT(K_FLOAT) | BIT(K_ENUM64))
#define DECL_TAG_TARGETS (BIT(K_FUNC) | BIT(K_STRUCT) | BIT(K_UNION) | BIT(K_VAR) \
                          | BIT(K_TYPEDEF))
#define IS(mask, kind) (((mask) >> (kind)) & 1u)

enum { NOT_VISITED, VISITED, RESOLVED };
enum { MODE_TBD, MODE_PTR, MODE_STRUCT };
/* How btf_type_id_size sizes a kind (sizes.py, with a VAR sized through its type). */
enum { SIZE_OWN, SIZE_POINTER, SIZE_ARRAY, SIZE_TARGET, SIZE_NONE };

typedef struct {
    uint32_t id, next;              /* the type, and its next member/entry to walk */
} entry_t;

/* check_env.CheckEnv: every id's record and kind, how far it is resolved, the stack. */
typedef struct {
    const uint32_t **rec;           /* by id; rec[0] unused */
    uint8_t *kind, *state, *base_done;
    uint32_t *rid, *rsize;
    uint32_t n, first;
    const types_t *own;             /* names come through its string chain */
    uint32_t str_end;
    entry_t stack[MAX_RESOLVE_DEPTH];
    int depth, mode, base_depth, split;
} env_t;

/* Step results: go on, a rule is broken (or the reference would not be sure), walk on. */
enum { OK = 0, BAD = -1, WALK = 1 };

static int size_rule(uint32_t kind)
{
    if (kind == K_VAR || IS(MODIFIERS, kind)) return SIZE_TARGET;
    if (kind == K_PTR) return SIZE_POINTER;
    if (kind == K_ARRAY) return SIZE_ARRAY;
    if (kind <= K_MAX && IS(SIZED, kind)) return SIZE_OWN;
    return SIZE_NONE;
}

static uint32_t kind_of(const env_t *e, uint32_t id) { return id < e->n ? e->kind[id] : K_NULL; }
static int nosize(uint32_t kind) { return size_rule(kind) == SIZE_NONE; }
static int modifier(uint32_t kind) { return kind <= K_MAX && IS(MODIFIERS, kind); }
static int source_only(uint32_t kind) { return kind <= K_MAX && IS(SOURCE_ONLY, kind); }
static int needs_resolve(uint32_t kind) { return kind <= K_MAX && IS(NEEDS_RESOLVE, kind); }
static uint32_t vlen_of(const uint32_t *r) { return r[1] & 0xFFFFFF; }
static uint32_t kflag_of(const uint32_t *r) { return r[1] >> 31; }

/* check_env._SINK: whether the walk, in its mode, stops at a type of this kind. */
static int sink(int mode, uint32_t kind)
{
    if (mode == MODE_TBD) return !needs_resolve(kind);
    if (modifier(kind)) return 0;
    if (mode == MODE_PTR) return kind != K_PTR;
    return kind != K_ARRAY && kind != K_STRUCT && kind != K_UNION;
}

/* -- names -------------------------------------------------------------------------- */

static int offset_ok(const env_t *e, uint32_t off) { return off < e->str_end && off <= MAX_NAME_OFFSET; }

static int ident_char(uint8_t c, int first)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.') return 1;
    if (c >= 0xC0 && c != 0xD7 && c != 0xF7) return 1;   /* Latin-1 letters */
    return !first && c >= '0' && c <= '9';
}

/* CheckEnv.is_identifier: check_env._IDENTIFIER on the name at `off`. */
static int is_identifier(const env_t *e, uint32_t off)
{
    uint32_t len;
    const uint8_t *p = name_at(e->own, off, &len);
    if (!len || len > MAX_NAME_LEN) return 0;
    for (uint32_t j = 0; j < len; j++)
        if (!ident_char(p[j], j == 0)) return 0;
    return 1;
}

static int has_name(const env_t *e, uint32_t off)
{
    uint32_t len;
    name_at(e->own, off, &len);
    return off && len;
}

/* check_records._SECTION_NAME. */
static int section_name(const env_t *e, uint32_t off)
{
    uint32_t len;
    const uint8_t *p = name_at(e->own, off, &len);
    if (!off || !len || len > MAX_NAME_LEN) return 0;
    for (uint32_t j = 0; j < len; j++)
        if (!((p[j] >= 0x20 && p[j] <= 0x7E) || p[j] >= 0xA0)) return 0;
    return 1;
}

static int required_identifier(const env_t *e, uint32_t off) { return off && is_identifier(e, off); }
static int optional_identifier(const env_t *e, uint32_t off) { return !off || is_identifier(e, off); }

/* -- pass 1: each record (check_records.py); 1 when it passes ------------------------- */

static int int_record(const uint32_t *r)
{
    uint32_t data = r[3], bits = data & 0xFF, offset = (data >> 16) & 0xFF, enc = data >> 24;
    if (kflag_of(r) || data & ~0x0FFFFFFFu || bits + offset > 128) return 0;
    if ((bits + offset + 7) / 8 > r[2]) return 0;
    return enc == 0 || enc == 1 || enc == 2 || enc == 4;
}

static int reference_record(const env_t *e, const uint32_t *r, uint32_t kind)
{
    if ((kflag_of(r) && kind != K_TYPE_TAG) || r[2] > MAX_TYPE_ID) return 0;
    if (kind == K_TYPEDEF) return required_identifier(e, r[0]);
    if (kind == K_TYPE_TAG) return has_name(e, r[0]);
    return !r[0];
}

static int array_record(const uint32_t *r)
{
    return !r[0] && !kflag_of(r) && !r[2] && r[3] && r[3] <= MAX_TYPE_ID && r[4]
        && r[4] <= MAX_TYPE_ID;
}

static int struct_record(const env_t *e, const uint32_t *r, uint32_t kind)
{
    if (!optional_identifier(e, r[0])) return 0;
    uint32_t size = r[2], kflag = kflag_of(r), vlen = vlen_of(r), last = 0;
    const uint32_t *m = r + 3;
    for (uint32_t i = 0; i < vlen; i++, m += 3) {
        if (!offset_ok(e, m[0]) || (m[0] && !is_identifier(e, m[0]))) return 0;
        if (!m[1] || m[1] > MAX_TYPE_ID) return 0;
        uint32_t offset = kflag ? m[2] & 0xFFFFFF : m[2];
        if ((kind == K_UNION && offset) || last > offset) return 0;
        if (((uint64_t)offset + 7) / 8 > size) return 0;
        last = offset;
    }
    return 1;
}

static int enum_record(const env_t *e, const uint32_t *r, uint32_t kind)
{
    uint32_t size = r[2], vlen = vlen_of(r), step = kind == K_ENUM ? 2 : 3;
    if (!(size == 1 || size == 2 || size == 4 || size == 8)) return 0;
    if (!optional_identifier(e, r[0])) return 0;
    const uint32_t *item = r + 3;
    for (uint32_t i = 0; i < vlen; i++, item += step)
        if (!offset_ok(e, item[0]) || !item[0] || !is_identifier(e, item[0])) return 0;
    return 1;
}

static int var_record(const env_t *e, const uint32_t *r)
{
    return !kflag_of(r) && required_identifier(e, r[0]) && r[2] && r[2] <= MAX_TYPE_ID
        && r[3] <= 1;
}

static int datasec_record(const env_t *e, const uint32_t *r)
{
    uint32_t size = r[2], vlen = vlen_of(r);
    if (!size || kflag_of(r) || !section_name(e, r[0])) return 0;
    uint64_t last_end = 0, total = 0;
    const uint32_t *v = r + 3;
    for (uint32_t i = 0; i < vlen; i++, v += 3) {
        uint32_t vtype = v[0], offset = v[1], vsize = v[2];
        if (!vtype || vtype > MAX_TYPE_ID || offset < last_end || offset >= size) return 0;
        if (!vsize || vsize > size) return 0;
        last_end = (uint64_t)offset + vsize;
        if (last_end > size) return 0;
        total += vsize;
    }
    return total <= size;
}

static int float_record(const uint32_t *r)
{
    uint32_t size = r[2];
    return !kflag_of(r) && (size == 2 || size == 4 || size == 8 || size == 12 || size == 16);
}

/* check_records.check_records for one own type: the common checks, then the kind's. */
static int record_ok(const env_t *e, uint32_t id)
{
    const uint32_t *r = e->rec[id];
    uint32_t kind = e->kind[id];
    if (vlen_of(r) > MAX_VLEN || !offset_ok(e, r[0])) return 0;
    switch (kind) {
    case K_INT: return int_record(r);
    case K_PTR: case K_TYPEDEF: case K_VOLATILE: case K_CONST: case K_RESTRICT: case K_TYPE_TAG:
        return reference_record(e, r, kind);
    case K_ARRAY: return array_record(r);
    case K_STRUCT: case K_UNION: return struct_record(e, r, kind);
    case K_ENUM: case K_ENUM64: return enum_record(e, r, kind);
    case K_FWD: return !r[2] && required_identifier(e, r[0]);
    case K_FUNC: return required_identifier(e, r[0]) && vlen_of(r) <= 1 && !kflag_of(r);
    case K_FUNC_PROTO: return !r[0] && !kflag_of(r);
    case K_VAR: return var_record(e, r);
    case K_DATASEC: return datasec_record(e, r);
    case K_FLOAT: return float_record(r);
    case K_DECL_TAG: return has_name(e, r[0]) && (int32_t)r[3] >= -1;
    default: return 0;
    }
}

/* -- what is resolved, to what (CheckEnv) -------------------------------------------- */

static int resolved(const env_t *e, uint32_t id) { return id < e->n && e->state[id] == RESOLVED; }
static int res_id(env_t *e, uint32_t id, uint32_t *out);

/* CheckEnv.id_size: 1 with the sized id and size, 0 for no size, BAD. */
static int id_size(env_t *e, uint32_t id, uint32_t *sid, uint32_t *size)
{
    int rule = size_rule(kind_of(e, id));
    if (rule == SIZE_NONE) return 0;
    if (rule == SIZE_TARGET) {
        if (res_id(e, id, &id)) return BAD;
        rule = size_rule(kind_of(e, id));
    }
    *sid = id;
    switch (rule) {
    case SIZE_OWN: *size = e->rec[id][2]; return 1;
    case SIZE_POINTER: *size = POINTER_SIZE; return 1;
    case SIZE_ARRAY: {
        uint32_t rid;   /* a base array's size is worked out with its resolved id */
        if (res_id(e, id, &rid)) return BAD;
        *size = e->rsize[id];
        return 1;
    }
    default: return 0;
    }
}

/* CheckEnv.base_resolution: what the resolve pass would have recorded for a base type. */
static int base_resolution(env_t *e, uint32_t id)
{
    if (e->base_depth >= MAX_BASE_DEPTH) return BAD;
    e->base_depth++;
    e->base_done[id] = 1;
    e->rid[id] = e->rsize[id] = 0;        /* breaks cycles, as the reference does */
    const uint32_t *r = e->rec[id];
    uint32_t kind = e->kind[id], rid = 0, size = 0, sid, ssize;
    int got = 0;
    if (kind == K_FUNC || kind == K_DECL_TAG) {
        rid = r[2];
    } else if (modifier(kind) || kind == K_PTR || kind == K_VAR) {
        got = id_size(e, r[2], &sid, &ssize);
        if (got == 1) rid = sid;
        else if (!got) got = res_id(e, r[2], &rid);
    } else if (kind == K_ARRAY) {
        got = id_size(e, r[3], &sid, &ssize);
        if (got == 1) {
            rid = sid;
            size = ssize * r[5];
        }
    }
    e->base_depth--;
    if (got == BAD) return BAD;
    e->rid[id] = rid;
    e->rsize[id] = size;
    return OK;
}

/* CheckEnv.resolved_id (a base type's worked out on first use). */
static int res_id(env_t *e, uint32_t id, uint32_t *out)
{
    if (id >= e->n) return BAD;
    if (id && id < e->first && !e->base_done[id] && base_resolution(e, id)) return BAD;
    *out = e->rid[id];
    return OK;
}

static int int_regular(const env_t *e, uint32_t id)
{
    uint32_t data = e->rec[id][3], bits = data & 0xFF, bytes = bits / 8;
    return !(bits & 7) && !((data >> 16) & 0xFF)
        && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16);
}

/* The number of items the reference's Type has (FUNC's vlen is its linkage). */
static uint32_t item_count(const env_t *e, uint32_t id)
{
    return item_words(e->kind[id]) ? vlen_of(e->rec[id]) : 0;
}

/* -- the resolve stack ---------------------------------------------------------------- */

static int push(env_t *e, uint32_t id)
{
    if (e->depth == MAX_RESOLVE_DEPTH || id >= e->n || e->state[id] != NOT_VISITED) return BAD;
    e->state[id] = VISITED;
    e->stack[e->depth++] = (entry_t){id, 0};
    if (e->mode == MODE_TBD) {
        uint32_t kind = e->kind[id];
        if (kind == K_PTR) e->mode = MODE_PTR;
        else if (kind == K_STRUCT || kind == K_UNION || kind == K_ARRAY) e->mode = MODE_STRUCT;
    }
    return WALK;
}

static int pop_resolved(env_t *e, uint32_t rid, uint32_t rsize)
{
    uint32_t id = e->stack[--e->depth].id;
    e->rid[id] = rid;
    e->rsize[id] = rsize;
    e->state[id] = RESOLVED;
    return OK;
}

static int walks_on(const env_t *e, uint32_t id)
{
    return !sink(e->mode, kind_of(e, id)) && !resolved(e, id);
}

/* -- pass 2: the resolve steps (check_resolve.py) ------------------------------------- */

/* _settled_target: OK with *out set, WALK (pushed) or BAD. */
static int settled_target(env_t *e, uint32_t id, int past_modifiers, uint32_t *out)
{
    uint32_t target = e->rec[id][2], kind = kind_of(e, target), rid;
    if (kind == K_NULL || source_only(kind)) return BAD;
    if (walks_on(e, target)) return push(e, target);
    if (past_modifiers && modifier(kind)) {         /* _follow_pointer */
        if (res_id(e, target, &rid)) return BAD;
        if (kind_of(e, rid) == K_PTR && walks_on(e, rid)) return push(e, rid);
    }
    *out = target;
    return OK;
}

/* _resolve_modifier and _resolve_ptr, with _finish_reference. */
static int resolve_reference(env_t *e, entry_t *entry, int past_modifiers)
{
    uint32_t target, sid, size;
    int s = settled_target(e, entry->id, past_modifiers, &target);
    if (s) return s;
    uint32_t kind = kind_of(e, target);
    int got = id_size(e, target, &sid, &size);
    if (got == BAD) return BAD;
    if (got) return pop_resolved(e, sid, 0);
    if (resolved(e, target)) {
        if (res_id(e, target, &target)) return BAD;
        kind = kind_of(e, target);
    }
    if (kind != K_VOID && kind != K_FWD && kind != K_FUNC_PROTO) return BAD;
    return pop_resolved(e, target, 0);
}

static int resolve_var(env_t *e, entry_t *entry)
{
    uint32_t target, sid, size;
    int s = settled_target(e, entry->id, 1, &target);
    if (s) return s;
    if (id_size(e, target, &sid, &size) != 1) return BAD;
    return pop_resolved(e, sid, 0);
}

/* _array_part_settled: OK, WALK (pushed) or BAD. */
static int array_part_settled(env_t *e, uint32_t part)
{
    uint32_t kind = kind_of(e, part);
    if (nosize(kind) || source_only(kind)) return BAD;
    return walks_on(e, part) ? push(e, part) : OK;
}

static int resolve_array(env_t *e, entry_t *entry)
{
    const uint32_t *r = e->rec[entry->id];
    uint32_t elem = r[3], index = r[4], nelems = r[5], sid, size;
    int s = array_part_settled(e, index);
    if (s) return s;
    if (id_size(e, index, &sid, &size) != 1 || kind_of(e, sid) != K_INT || !int_regular(e, sid))
        return BAD;
    if ((s = array_part_settled(e, elem))) return s;
    if (id_size(e, elem, &sid, &size) != 1) return BAD;
    if (kind_of(e, sid) == K_INT && !int_regular(e, sid)) return BAD;
    if (nelems && size > UINT32_MAX / nelems) return BAD;
    return pop_resolved(e, sid, size * nelems);
}

/* _check_span: an int member of `nbits` from bit `offset` inside a struct of `size`. */
static int span_ok(uint32_t size, uint64_t offset, uint32_t nbits)
{
    uint64_t copy_bits = nbits + (offset & 7), start = offset >> 3;
    return copy_bits <= 128 && size >= start && size - start >= (copy_bits + 7) / 8;
}

/* _kflag_int_member and _kflag_enum_member. */
static int kflag_member(const env_t *e, uint32_t size, uint32_t kind, uint32_t mtype,
                        uint32_t offset, uint32_t nbits)
{
    uint32_t max_bits = 32;
    if (kind == K_INT) {
        if (!int_regular(e, mtype)) return BAD;
        max_bits = e->rec[mtype][3] & 0xFF;
    }
    if (!nbits) {
        if (offset & 7) return BAD;
        nbits = max_bits;
    } else if (nbits > max_bits) {
        return BAD;
    }
    if (kind == K_INT) return span_ok(size, offset, nbits) ? OK : BAD;
    return size >= ((uint64_t)offset + nbits + 7) / 8 ? OK : BAD;
}

/* _check_member: member of struct record `st`, of type `mtype`, at `word`. */
static int check_member(env_t *e, const uint32_t *st, uint32_t mtype, uint32_t word)
{
    uint32_t kind = kind_of(e, mtype), size = st[2], sid, msize;
    if (modifier(kind)) {
        if (id_size(e, mtype, &sid, &msize) != 1) return BAD;
        mtype = sid;
        kind = kind_of(e, mtype);
    }
    if (kflag_of(st)) {
        if (kind == K_INT || kind == K_ENUM || kind == K_ENUM64)
            return kflag_member(e, size, kind, mtype, word & 0xFFFFFF, word >> 24);
        if (word >> 24) return BAD;
        word &= 0xFFFFFF;
    }
    switch (kind) {
    case K_INT: {
        uint32_t data = e->rec[mtype][3];
        uint64_t offset = (uint64_t)word + ((data >> 16) & 0xFF);
        return offset <= UINT32_MAX && span_ok(size, offset, data & 0xFF) ? OK : BAD;
    }
    case K_PTR: case K_ARRAY: case K_STRUCT: case K_UNION: case K_ENUM: case K_ENUM64:
        if (kind == K_PTR) msize = POINTER_SIZE;
        else if (id_size(e, mtype, &sid, &msize) != 1) return BAD;
        return !(word & 7) && (uint32_t)(size - (word >> 3)) >= msize ? OK : BAD;
    case K_FLOAT: {
        if (id_size(e, mtype, &sid, &msize) != 1) return BAD;
        uint32_t align = (msize < POINTER_SIZE ? msize : POINTER_SIZE) * 8;
        if (!align) return BAD;     /* a base FLOAT of size 0: member-type */
        return !(word % align) && (uint64_t)(word / 8) + msize <= size ? OK : BAD;
    }
    default:
        return BAD;
    }
}

static int resolve_struct(env_t *e, entry_t *entry)
{
    const uint32_t *st = e->rec[entry->id], *items = st + 3;
    uint32_t vlen = vlen_of(st);
    if (entry->next) {
        const uint32_t *m = items + 3 * (size_t)(entry->next - 1);
        if (!resolved(e, m[1]) || check_member(e, st, m[1], m[2])) return BAD;
    }
    for (uint32_t i = entry->next; i < vlen; i++) {
        const uint32_t *m = items + 3 * (size_t)i;
        uint32_t kind = kind_of(e, m[1]);
        if (nosize(kind) || source_only(kind)) return BAD;
        if (walks_on(e, m[1])) {
            entry->next = i + 1;
            return push(e, m[1]);
        }
        if (check_member(e, st, m[1], m[2])) return BAD;
    }
    return pop_resolved(e, 0, 0);
}

static int resolve_datasec(env_t *e, entry_t *entry)
{
    e->mode = MODE_TBD;
    const uint32_t *r = e->rec[entry->id];
    uint32_t vlen = vlen_of(r), sid, size;
    for (uint32_t i = entry->next; i < vlen; i++) {
        const uint32_t *v = r + 3 + 3 * (size_t)i;
        if (kind_of(e, v[0]) != K_VAR) return BAD;
        if (walks_on(e, v[0])) {
            entry->next = i + 1;
            return push(e, v[0]);
        }
        if (id_size(e, e->rec[v[0]][2], &sid, &size) != 1 || v[2] < size) return BAD;
    }
    return pop_resolved(e, 0, 0);
}

static int resolve_func(env_t *e, entry_t *entry)
{
    uint32_t proto = e->rec[entry->id][2];
    if (kind_of(e, proto) != K_FUNC_PROTO) return BAD;
    const uint32_t *p = e->rec[proto];
    for (uint32_t j = 0; j < vlen_of(p); j++)
        if (!p[3 + 2 * j] && p[4 + 2 * j]) return BAD;
    return pop_resolved(e, proto, 0);
}

static int resolve_decl_tag(env_t *e, entry_t *entry)
{
    const uint32_t *r = e->rec[entry->id];
    uint32_t target = r[2], kind = kind_of(e, target);
    if (kind > K_MAX || !IS(DECL_TAG_TARGETS, kind)) return BAD;
    if (walks_on(e, target)) return push(e, target);
    int32_t index = (int32_t)r[3];
    if (index != -1) {
        if (kind == K_VAR || kind == K_TYPEDEF || index < 0) return BAD;
        uint32_t holder = target;
        if (kind == K_FUNC) {
            holder = e->rec[target][2];
            if (!holder || holder >= e->n) return BAD;  /* void's components: none */
        }
        if ((uint32_t)index >= item_count(e, holder)) return BAD;
    }
    return pop_resolved(e, target, 0);
}

static int step(env_t *e, entry_t *entry)
{
    uint32_t kind = e->kind[entry->id];
    switch (kind) {
    case K_TYPEDEF: case K_VOLATILE: case K_CONST: case K_RESTRICT: case K_TYPE_TAG:
        return resolve_reference(e, entry, 0);
    case K_PTR: return resolve_reference(e, entry, 1);
    case K_VAR: return resolve_var(e, entry);
    case K_ARRAY: return resolve_array(e, entry);
    case K_STRUCT: case K_UNION: return resolve_struct(e, entry);
    case K_DATASEC: return resolve_datasec(e, entry);
    case K_FUNC: return resolve_func(e, entry);
    case K_DECL_TAG: return resolve_decl_tag(e, entry);
    default: return BAD;
    }
}

/* _resolve_valid: the kernel's consistency check once `id` is resolved. */
static int resolve_valid(env_t *e, uint32_t id)
{
    if (!resolved(e, id)) return 0;
    uint32_t kind = e->kind[id], rid = e->rid[id], rsize = e->rsize[id], sid, size;
    if (kind == K_STRUCT || kind == K_UNION || kind == K_DATASEC) return !rid && !rsize;
    if (kind == K_DECL_TAG || kind == K_FUNC) return rid && !rsize;
    if (modifier(kind) || kind == K_PTR || kind == K_VAR) {
        uint32_t rkind = kind_of(e, rid);
        return rkind != K_NULL && !modifier(rkind) && rkind != K_VAR && rkind != K_DATASEC;
    }
    if (kind == K_ARRAY) {
        const uint32_t *r = e->rec[id];
        return id_size(e, r[3], &sid, &size) == 1 && !modifier(kind_of(e, sid))
            && r[5] * size == rsize;
    }
    return 0;
}

/* _resolve: walk from `top` until it is resolved. */
static int resolve(env_t *e, uint32_t top)
{
    e->mode = MODE_TBD;
    e->depth = 0;
    if (push(e, top) == BAD) return BAD;
    while (e->depth)
        if (step(e, &e->stack[e->depth - 1]) == BAD) return BAD;
    return resolve_valid(e, top) ? OK : BAD;
}

/* A parameter or return type of a FUNC_PROTO: resolved first, then sized. */
static int proto_part_ok(env_t *e, uint32_t id)
{
    uint32_t kind = kind_of(e, id), sid, size;
    if (kind == K_NULL || source_only(kind)) return 0;
    if (needs_resolve(kind) && !resolved(e, id) && resolve(e, id)) return 0;
    return id_size(e, id, &sid, &size) == 1;
}

/* _func_proto_check. */
static int func_proto_ok(env_t *e, uint32_t id)
{
    const uint32_t *r = e->rec[id], *params = r + 3;
    uint32_t count = vlen_of(r);
    if (r[2] && !proto_part_ok(e, r[2])) return 0;
    if (count && !params[2 * (count - 1) + 1]) {
        if (params[2 * (count - 1)]) return 0;
        count--;
    }
    for (uint32_t j = 0; j < count; j++) {
        uint32_t name = params[2 * j], ptype = params[2 * j + 1], kind = kind_of(e, ptype);
        if (kind == K_NULL || source_only(kind)) return 0;
        if (name && !(offset_ok(e, name) && is_identifier(e, name))) return 0;
        if (!proto_part_ok(e, ptype)) return 0;
    }
    return 1;
}

/* check_resolve.check_all_resolve. */
static int all_resolve_ok(env_t *e)
{
    for (uint32_t id = e->first; id < e->n; id++) {
        uint32_t kind = e->kind[id];
        if (needs_resolve(kind) && e->state[id] != RESOLVED) {
            if (resolve(e, id)) return 0;
        } else if (kind == K_FUNC_PROTO && !func_proto_ok(e, id)) {
            return 0;
        }
    }
    return 1;
}

/* -- pass 3 and the blob (validator.py) ----------------------------------------------- */

/* validator._check_type_tags: type tags first in every chain of modifiers, chains short. */
static int type_tags_ok(const env_t *e)
{
    uint32_t good = e->first - 1;
    for (uint32_t id = e->first; id < e->n; id++) {
        uint32_t kind = e->kind[id], cur = id;
        if (!modifier(kind)) continue;
        int in_tags = kind == K_TYPE_TAG, budget = MAX_RESOLVE_DEPTH;
        while (modifier(kind)) {
            if (!budget--) return 0;
            if (kind == K_TYPE_TAG) {
                if (!in_tags) return 0;
            } else {
                in_tags = 0;
            }
            if (cur <= good) break;
            cur = e->rec[cur][2];
            if (cur >= e->n) break;
            kind = e->kind[cur];
        }
        good = id;
    }
    return 1;
}

/* validator._check_blob. */
static int blob_ok(const env_t *e, const blob_t *blob)
{
    const types_t *own = e->own;
    const strtab_t *strs = &own->tabs[own->ntabs - 1];
    int split = e->split;
    uint64_t size = 24 + (uint64_t)blob->header_tail_len + 4 * (uint64_t)own->nwords
                  + strs->len + blob->layout_len;
    if (blob->header_tail_nonzero || size > MAX_BLOB_SIZE) return 0;
    if (!split && !own->count) return 0;
    if (strs->len || !split) {
        if (!strs->len || strs->data[strs->len - 1] || strs->len - 1 > MAX_NAME_OFFSET) return 0;
        if (!split && strs->data[0]) return 0;
    }
    return e->n - 1 < MAX_TYPE_ID;
}

/* -- the environment ------------------------------------------------------------------ */

static void env_free(env_t *e)
{
    free((void *)e->rec);
    free(e->kind);
    free(e->state);
    free(e->base_done);
    free(e->rid);
    free(e->rsize);
}

static int env_init(env_t *e, const types_t *levels, int nlevels)
{
    memset(e, 0, sizeof *e);
    const types_t *own = &levels[nlevels - 1];
    uint64_t n = (uint64_t)own->first_id + own->count;
    if (n > UINT32_MAX) return BAD;
    e->n = (uint32_t)n;
    e->first = own->first_id;
    e->split = nlevels > 1;
    e->own = own;
    e->str_end = own->tabs[own->ntabs - 1].start + own->tabs[own->ntabs - 1].len;
    e->rec = calloc(n, sizeof *e->rec);
    e->kind = calloc(n, 1);
    e->state = calloc(n, 1);
    e->base_done = calloc(n, 1);
    e->rid = calloc(n, sizeof *e->rid);
    e->rsize = calloc(n, sizeof *e->rsize);
    if (!e->rec || !e->kind || !e->state || !e->base_done || !e->rid || !e->rsize) return -2;
    uint32_t next = 1;
    for (int k = 0; k < nlevels; k++) {
        const types_t *t = &levels[k];
        if (t->first_id != next) return BAD;
        for (uint32_t i = 0; i < t->count; i++) {
            e->rec[next + i] = t->w + t->start[i];
            e->kind[next + i] = (uint8_t)t_kind(t, i);
        }
        next += t->count;
    }
    /* Base types count as resolved; void too in split BTF (CheckEnv.__init__). */
    memset(e->state, RESOLVED, e->first);
    if (!e->split) e->state[0] = NOT_VISITED;
    return OK;
}

int rules_clean(const types_t *levels, int nlevels, const blob_t *blob)
{
    env_t e;
    int rc = env_init(&e, levels, nlevels);
    if (rc == OK) {
        rc = blob_ok(&e, blob);
        for (uint32_t id = e.first; rc && id < e.n; id++) rc = record_ok(&e, id);
        rc = rc && all_resolve_ok(&e) && type_tags_ok(&e);
    } else {
        rc = rc == BAD ? 0 : -1;
    }
    env_free(&e);
    return rc;
}
