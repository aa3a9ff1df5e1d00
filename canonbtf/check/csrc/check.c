/* The validator in C: every violation validator.validate_in_python reports, as findings.
 *
 * Mirrors check/validator.py (_check_type_tags), check/records.py and check/resolve.py rule
 * by rule, on the words the reader checked: the same kernel resolve walk (32-entry stack,
 * walk modes, what counts as resolved), the same sizes, the same findings in the same
 * order, and the same silence where a walk reaches a type that already failed (BROKEN).
 * A finding is a check/words message key and its raw values (check.h); Python words it,
 * so no message is written twice. Where the reference could fail in another way (a base
 * type it cannot resolve) this says "unsure" and the reference runs.
 * tests/test_compiled_check.py holds both to the same text. */
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define K_VOID 0
#define K_NULL (K_MAX + 1)          /* an id that does not exist (env.NULL) */
#define MAX_TYPE_ID 0xFFFFFu
#define MAX_NAME_OFFSET 0xFFFFFFu
#define MAX_VLEN 0xFFFFu
#define MAX_RESOLVE_DEPTH 32
#define POINTER_SIZE 8u
#define MAX_NAME_LEN 512u
/* How deep a base type's resolution may recurse before this gives up (the reference
 * recurses in Python and would stop at its recursion limit). */
#define MAX_BASE_DEPTH 64
/* The most values one finding has: a resolve-depth chain, its length, the next id. */
#define MAX_VALUES (MAX_RESOLVE_DEPTH + 2)


/* The message keys, check/words' table's (spec/messages.py, through the generated
 * check_keys.def): M_<KEY> indexes check_keys. */
#define CHECK_KEY(name, text) M_##name,
enum {
#include "check_keys.def"
    NKEYS
};
#undef CHECK_KEY
#define CHECK_KEY(name, text) text,
const char *const check_keys[] = {
#include "check_keys.def"
};
#undef CHECK_KEY
const int CHECK_NKEYS = NKEYS;

enum { NOT_VISITED, VISITED, RESOLVED, BROKEN };
enum { MODE_TBD, MODE_PTR, MODE_STRUCT };
/* How btf_type_id_size sizes a kind (sizes.py, with a VAR sized through its type). */
enum { SIZE_OWN, SIZE_POINTER, SIZE_ARRAY, SIZE_TARGET, SIZE_NONE };

typedef struct {
    uint32_t id, next;              /* the type, and its next member/entry to walk */
} entry_t;

/* env.CheckEnv: every id's record and kind, how far it is resolved, the stack, the
 * finding being raised (the reference's Reject) and those reported. */
typedef struct {
    const uint32_t **rec;           /* by id; rec[0] unused */
    uint8_t *kind, *state, *base_done;
    uint32_t *rid, *rsize;
    uint32_t n, first;
    const types_t *own;             /* names come through its string chain */
    uint32_t str_end;
    entry_t stack[MAX_RESOLVE_DEPTH];
    int depth, mode, base_depth, split, oom;
    uint32_t top, fail_id;
    int fail_key, nfail;
    check_value_t fail_values[MAX_VALUES];
    check_findings_t *out;
} env_t;

/* Step results: go on, a rule is broken (the finding raised), the walk reached a type
 * that already failed (the reference's Broken: stop quietly), the reference would not
 * be sure (the whole check falls back to it); walk on. */
enum { OK = 0, BAD = -1, BROKE = -2, UNSURE = -3, WALK = 1 };
#define STOPS(s) ((s) < 0)

static int size_rule(uint32_t kind)
{
    if (kind == K_VAR || kind_in(KINDS_MODIFIER, kind)) return SIZE_TARGET;
    if (kind == K_PTR) return SIZE_POINTER;
    if (kind == K_ARRAY) return SIZE_ARRAY;
    if (kind_in(KINDS_SIZED, kind)) return SIZE_OWN;
    return SIZE_NONE;
}

static uint32_t kind_of(const env_t *e, uint32_t id) { return id < e->n ? e->kind[id] : K_NULL; }
static int nosize(uint32_t kind) { return size_rule(kind) == SIZE_NONE; }
static int modifier(uint32_t kind) { return kind_in(KINDS_MODIFIER, kind); }
static int source_only(uint32_t kind) { return kind_in(KINDS_SOURCE_ONLY, kind); }
static int needs_resolve(uint32_t kind) { return kind_in(KINDS_NEEDS_RESOLVE, kind); }
static uint32_t vlen_of(const uint32_t *r) { return r[1] & 0xFFFFFF; }
static uint32_t kflag_of(const uint32_t *r) { return r[1] >> 31; }

/* env._SINK: whether the walk, in its mode, stops at a type of this kind. */
static int sink(int mode, uint32_t kind)
{
    if (mode == MODE_TBD) return !needs_resolve(kind);
    if (modifier(kind)) return 0;
    if (mode == MODE_PTR) return kind != K_PTR;
    return kind != K_ARRAY && kind != K_STRUCT && kind != K_UNION;
}

/* -- findings (CheckEnv.report, Reject) ------------------------------------------------ */

static check_value_t v_int(int64_t v) { return (check_value_t){v, 0, V_INT, 0}; }
static check_value_t v_name(uint32_t off) { return (check_value_t){off, 0, V_NAME, 0}; }
static check_value_t v_member(uint32_t off, uint32_t index)
{
    return (check_value_t){((int64_t)off << 32) | index, 0, V_MEMBER, 0};
}

/* CheckEnv.ref: a type as the wording describes it. */
static check_value_t v_type(const env_t *e, uint32_t id)
{
    if (!id || id >= e->n) return (check_value_t){id, 0, V_TYPE, CHECK_NO_KIND};
    return (check_value_t){id, e->rec[id][0], V_TYPE, e->kind[id]};
}

/* Raise finding `key` at `id` with `count` values (the reference's Reject): BAD. */
static int fail_n(env_t *e, uint32_t id, int key, int count, const check_value_t *values)
{
    e->fail_id = id;
    e->fail_key = key;
    e->nfail = count;
    if (count) memcpy(e->fail_values, values, (size_t)count * sizeof *values);
    return BAD;
}

#define FAIL(e, id, key, ...) fail_n(e, id, key, \
    (int)(sizeof((check_value_t[]){__VA_ARGS__}) / sizeof(check_value_t)), \
    (check_value_t[]){__VA_ARGS__})
#define FAIL0(e, id, key) fail_n(e, id, key, 0, NULL)

/* CheckEnv.report of the finding raised: kept, and its type is now broken. */
static void report(env_t *e)
{
    check_findings_t *out = e->out;
    uint32_t id = e->fail_id;
    if (GROW(out->f, out->capf, out->nf + 1) || GROW(out->v, out->capv, out->nv + (size_t)e->nfail)) {
        e->oom = 1;
        return;
    }
    check_finding_t *f = &out->f[out->nf++];
    f->id = id;
    f->name_off = e->rec[id][0];
    f->kind = e->kind[id];
    f->key = (uint16_t)e->fail_key;
    f->first = (uint32_t)out->nv;
    f->count = (uint32_t)e->nfail;
    if (e->nfail) memcpy(out->v + out->nv, e->fail_values, (size_t)e->nfail * sizeof *out->v);
    out->nv += (size_t)e->nfail;
    e->state[id] = BROKEN;
}

/* -- names -------------------------------------------------------------------------- */

static int offset_ok(const env_t *e, uint32_t off) { return off < e->str_end && off <= MAX_NAME_OFFSET; }

static int ident_char(uint8_t c, int first)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.') return 1;
    if (c >= 0xC0 && c != 0xD7 && c != 0xF7) return 1;   /* Latin-1 letters */
    return !first && c >= '0' && c <= '9';
}

/* CheckEnv.is_identifier: env._IDENTIFIER on the name at `off`. */
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

/* records._SECTION_NAME. */
static int section_name(const env_t *e, uint32_t off)
{
    uint32_t len;
    const uint8_t *p = name_at(e->own, off, &len);
    if (!off || !len || len > MAX_NAME_LEN) return 0;
    for (uint32_t j = 0; j < len; j++)
        if (!((p[j] >= 0x20 && p[j] <= 0x7E) || p[j] >= 0xA0)) return 0;
    return 1;
}

/* -- pass 1: each record (check/records.py); OK or BAD with the finding raised -------- */

static int optional_identifier(env_t *e, uint32_t id, const uint32_t *r)
{
    if (r[0] && !is_identifier(e, r[0])) return FAIL(e, id, M_NAME_IDENTIFIER, v_int(e->kind[id]));
    return OK;
}

static int required_identifier(env_t *e, uint32_t id, const uint32_t *r)
{
    if (!r[0]) return FAIL(e, id, M_NAME_MISSING, v_int(e->kind[id]));
    return optional_identifier(e, id, r);
}

static int int_record(env_t *e, uint32_t id, const uint32_t *r)
{
    uint32_t data = r[3], bits = data & 0xFF, offset = (data >> 16) & 0xFF, enc = data >> 24;
    if (kflag_of(r)) return FAIL(e, id, M_KIND_FLAG, v_int(K_INT));
    if (data & ~0x0FFFFFFFu) return FAIL(e, id, M_INT_DATA, v_int(data));
    if (bits + offset > 128) return FAIL(e, id, M_INT_128, v_int(offset), v_int(bits));
    if ((bits + offset + 7) / 8 > r[2])
        return FAIL(e, id, M_INT_SIZE, v_int(offset), v_int(bits), v_int(r[2]));
    if (!(enc == 0 || enc == 1 || enc == 2 || enc == 4)) return FAIL(e, id, M_INT_ENCODING, v_int(enc));
    return OK;
}

static int reference_record(env_t *e, uint32_t id, const uint32_t *r, uint32_t kind)
{
    if (kflag_of(r) && kind != K_TYPE_TAG) return FAIL(e, id, M_KIND_FLAG, v_int(kind));
    if (r[2] > MAX_TYPE_ID) return FAIL(e, id, M_TYPE_ID_MAX, v_int(r[2]));
    if (kind == K_TYPEDEF) return required_identifier(e, id, r);
    if (kind == K_TYPE_TAG) return has_name(e, r[0]) ? OK : FAIL0(e, id, M_NAME_TYPE_TAG);
    return r[0] ? FAIL(e, id, M_NAME_FORBIDDEN, v_int(kind)) : OK;
}

static int array_record(env_t *e, uint32_t id, const uint32_t *r)
{
    if (r[0]) return FAIL0(e, id, M_NAME_ARRAY);
    if (kflag_of(r)) return FAIL(e, id, M_KIND_FLAG, v_int(K_ARRAY));
    if (r[2]) return FAIL(e, id, M_ARRAY_SIZE, v_int(r[2]));
    if (!r[3] || r[3] > MAX_TYPE_ID) return FAIL(e, id, M_ARRAY_ELEM_ID, v_int(r[3]));
    if (!r[4] || r[4] > MAX_TYPE_ID) return FAIL(e, id, M_ARRAY_INDEX_ID, v_int(r[4]));
    return OK;
}

static int struct_record(env_t *e, uint32_t id, const uint32_t *r, uint32_t kind)
{
    if (optional_identifier(e, id, r)) return BAD;
    uint32_t size = r[2], kflag = kflag_of(r), vlen = vlen_of(r), last = 0;
    const uint32_t *m = r + 3;
    for (uint32_t i = 0; i < vlen; i++, m += 3) {
        if (!offset_ok(e, m[0]))
            return FAIL(e, id, M_MEMBER_NAME_OFFSET, v_int(i), v_int(m[0]), v_int(e->str_end));
        if (m[0] && !is_identifier(e, m[0])) return FAIL(e, id, M_MEMBER_NAME, v_int(i), v_name(m[0]));
        if (!m[1] || m[1] > MAX_TYPE_ID)
            return FAIL(e, id, M_MEMBER_TYPE_ID, v_member(m[0], i), v_int(m[1]));
        uint32_t offset = kflag ? m[2] & 0xFFFFFF : m[2];
        if (kind == K_UNION && offset)
            return FAIL(e, id, M_UNION_MEMBER_OFFSET, v_member(m[0], i), v_int(offset));
        if (last > offset)
            return FAIL(e, id, M_MEMBER_ORDER, v_member(m[0], i), v_int(offset), v_int(last));
        if (((uint64_t)offset + 7) / 8 > size)
            return FAIL(e, id, M_MEMBER_PAST, v_member(m[0], i), v_int(offset), v_int(kind),
                        v_int(size));
        last = offset;
    }
    return OK;
}

static int enum_record(env_t *e, uint32_t id, const uint32_t *r, uint32_t kind)
{
    uint32_t size = r[2], vlen = vlen_of(r), step = kind == K_ENUM ? 2 : 3;
    if (!(size == 1 || size == 2 || size == 4 || size == 8)) return FAIL(e, id, M_ENUM_SIZE, v_int(size));
    if (optional_identifier(e, id, r)) return BAD;
    const uint32_t *item = r + 3;
    for (uint32_t i = 0; i < vlen; i++, item += step) {
        if (!offset_ok(e, item[0]))
            return FAIL(e, id, M_VALUE_NAME_OFFSET, v_int(i), v_int(item[0]), v_int(e->str_end));
        if (!item[0]) return FAIL(e, id, M_VALUE_NO_NAME, v_int(i));
        if (!is_identifier(e, item[0])) return FAIL(e, id, M_VALUE_NAME, v_int(i), v_name(item[0]));
    }
    return OK;
}

static int func_record(env_t *e, uint32_t id, const uint32_t *r)
{
    if (required_identifier(e, id, r)) return BAD;
    if (vlen_of(r) > 1) return FAIL(e, id, M_FUNC_LINKAGE, v_int(vlen_of(r)));
    return kflag_of(r) ? FAIL(e, id, M_KIND_FLAG, v_int(K_FUNC)) : OK;
}

static int var_record(env_t *e, uint32_t id, const uint32_t *r)
{
    if (kflag_of(r)) return FAIL(e, id, M_KIND_FLAG, v_int(K_VAR));
    if (required_identifier(e, id, r)) return BAD;
    if (!r[2] || r[2] > MAX_TYPE_ID) return FAIL(e, id, M_VAR_TYPE_ID, v_int(r[2]));
    return r[3] > 1 ? FAIL(e, id, M_VAR_LINKAGE, v_int(r[3])) : OK;
}

static int datasec_record(env_t *e, uint32_t id, const uint32_t *r)
{
    uint32_t size = r[2], vlen = vlen_of(r);
    if (!size) return FAIL0(e, id, M_DATASEC_SIZE);
    if (kflag_of(r)) return FAIL(e, id, M_KIND_FLAG, v_int(K_DATASEC));
    if (!section_name(e, r[0])) return FAIL0(e, id, M_NAME_DATASEC);
    uint64_t last_end = 0, total = 0;
    const uint32_t *v = r + 3;
    for (uint32_t i = 0; i < vlen; i++, v += 3) {
        uint32_t vtype = v[0], offset = v[1], vsize = v[2];
        if (!vtype || vtype > MAX_TYPE_ID) return FAIL(e, id, M_DATASEC_TYPE_ID, v_int(i), v_int(vtype));
        if (offset < last_end)
            return FAIL(e, id, M_DATASEC_ORDER, v_int(i), v_int(offset), v_int((int64_t)last_end));
        if (offset >= size) return FAIL(e, id, M_DATASEC_OFFSET, v_int(i), v_int(offset), v_int(size));
        if (!vsize || vsize > size) return FAIL(e, id, M_DATASEC_ENTRY_SIZE, v_int(i), v_int(vsize));
        last_end = (uint64_t)offset + vsize;
        if (last_end > size)
            return FAIL(e, id, M_DATASEC_END, v_int(i), v_int((int64_t)last_end), v_int(size));
        total += vsize;
    }
    return total > size ? FAIL(e, id, M_DATASEC_TOTAL, v_int((int64_t)total), v_int(size)) : OK;
}

static int float_record(env_t *e, uint32_t id, const uint32_t *r)
{
    uint32_t size = r[2];
    if (kflag_of(r)) return FAIL(e, id, M_KIND_FLAG, v_int(K_FLOAT));
    if (size == 2 || size == 4 || size == 8 || size == 12 || size == 16) return OK;
    return FAIL(e, id, M_FLOAT_SIZE, v_int(size));
}

/* records.check_records for one own type: the common checks, then the kind's. */
static int record_check(env_t *e, uint32_t id)
{
    const uint32_t *r = e->rec[id];
    uint32_t kind = e->kind[id];
    if (vlen_of(r) > MAX_VLEN) return FAIL(e, id, M_VLEN, v_int(vlen_of(r)));
    if (!offset_ok(e, r[0])) return FAIL(e, id, M_NAME_OFFSET, v_int(r[0]), v_int(e->str_end));
    switch (kind) {
    case K_INT: return int_record(e, id, r);
    case K_PTR: case K_TYPEDEF: case K_VOLATILE: case K_CONST: case K_RESTRICT: case K_TYPE_TAG:
        return reference_record(e, id, r, kind);
    case K_ARRAY: return array_record(e, id, r);
    case K_STRUCT: case K_UNION: return struct_record(e, id, r, kind);
    case K_ENUM: case K_ENUM64: return enum_record(e, id, r, kind);
    case K_FWD:
        return r[2] ? FAIL(e, id, M_FWD, v_int(r[2])) : required_identifier(e, id, r);
    case K_FUNC: return func_record(e, id, r);
    case K_FUNC_PROTO:
        if (r[0]) return FAIL(e, id, M_NAME_FORBIDDEN, v_int(kind));
        return kflag_of(r) ? FAIL(e, id, M_KIND_FLAG, v_int(kind)) : OK;
    case K_VAR: return var_record(e, id, r);
    case K_DATASEC: return datasec_record(e, id, r);
    case K_FLOAT: return float_record(e, id, r);
    case K_DECL_TAG:
        if (!has_name(e, r[0])) return FAIL0(e, id, M_NAME_DECL_TAG);
        return (int32_t)r[3] < -1 ? FAIL(e, id, M_DECL_TAG_INDEX, v_int((int32_t)r[3])) : OK;
    default: return UNSURE;     /* the reader refuses unknown kinds */
    }
}

/* -- what is resolved, to what (CheckEnv) -------------------------------------------- */

/* CheckEnv.resolved: 1 or 0, BROKE for a type that already failed. */
static int is_resolved(const env_t *e, uint32_t id)
{
    if (id >= e->n) return UNSURE;
    if (e->state[id] == BROKEN) return BROKE;
    return e->state[id] == RESOLVED;
}

static int res_id(env_t *e, uint32_t id, uint32_t *out);

/* CheckEnv.id_size: 1 with the sized id and size, 0 for no size, or a stop. */
static int id_size(env_t *e, uint32_t id, uint32_t *sid, uint32_t *size)
{
    int rule = size_rule(kind_of(e, id));
    if (rule == SIZE_NONE) return 0;
    if (e->state[id] == BROKEN) return BROKE;
    if (rule == SIZE_TARGET) {
        if (res_id(e, id, &id)) return UNSURE;
        rule = size_rule(kind_of(e, id));
    }
    *sid = id;
    switch (rule) {
    case SIZE_OWN: *size = e->rec[id][2]; return 1;
    case SIZE_POINTER: *size = POINTER_SIZE; return 1;
    case SIZE_ARRAY: {
        uint32_t rid;   /* a base array's size is worked out with its resolved id */
        if (res_id(e, id, &rid)) return UNSURE;
        *size = e->rsize[id];
        return 1;
    }
    default: return 0;
    }
}

/* CheckEnv.base_resolution: what the resolve pass would have recorded for a base type. */
static int base_resolution(env_t *e, uint32_t id)
{
    if (e->base_depth >= MAX_BASE_DEPTH) return UNSURE;
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
    if (STOPS(got)) return UNSURE;
    e->rid[id] = rid;
    e->rsize[id] = size;
    return OK;
}

/* CheckEnv.resolved_id (a base type's worked out on first use). */
static int res_id(env_t *e, uint32_t id, uint32_t *out)
{
    if (id >= e->n) return UNSURE;
    if (id && id < e->first && !e->base_done[id] && base_resolution(e, id)) return UNSURE;
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
    return kind_item_words(e->kind[id]) ? vlen_of(e->rec[id]) : 0;
}

/* -- the resolve stack ---------------------------------------------------------------- */

/* The resolve-depth or loop finding: the stack's ids from `from`, then `id`. */
static int fail_chain(env_t *e, int key, int from, uint32_t id)
{
    check_value_t values[MAX_VALUES];
    int count = 0;
    values[count++] = v_int(0);
    for (int k = from; k < e->depth; k++) values[count++] = v_int(e->stack[k].id);
    values[0] = (check_value_t){count - 1, 0, V_CHAIN, 0};
    values[count++] = v_int(id);
    return fail_n(e, e->top, key, count, values);
}

static int push(env_t *e, uint32_t id)
{
    if (e->depth == MAX_RESOLVE_DEPTH) return fail_chain(e, M_RESOLVE_DEPTH, 0, id);
    if (id >= e->n) return UNSURE;
    if (e->state[id] == BROKEN) return BROKE;
    if (e->state[id] != NOT_VISITED) {
        int from = 0;
        while (from < e->depth && e->stack[from].id != id) from++;
        return fail_chain(e, M_LOOP, from == e->depth ? 0 : from, id);
    }
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

/* CheckEnv.walks_on: 1 or 0, or a stop. */
static int walks_on(const env_t *e, uint32_t id)
{
    if (sink(e->mode, kind_of(e, id))) return 0;
    int r = is_resolved(e, id);
    return STOPS(r) ? r : !r;
}

/* Push `id` when the walk must go there first: WALK, 0, or a stop. */
static int walk_to(env_t *e, uint32_t id)
{
    int w = walks_on(e, id);
    return w == 1 ? push(e, id) : w;
}

/* -- pass 2: the resolve steps (check/resolve.py) ------------------------------------- */

/* _settled_target: OK with *out set, WALK (pushed) or a stop. */
static int settled_target(env_t *e, uint32_t id, int past_modifiers, uint32_t *out)
{
    uint32_t target = e->rec[id][2], kind = kind_of(e, target), rid;
    if (target >= e->n) return FAIL(e, id, M_REFERS_MISSING, v_type(e, target));
    if (kind == K_NULL || source_only(kind))
        return FAIL(e, id, M_REFERS_SOURCE, v_type(e, target), v_int(e->kind[id]));
    int s = walk_to(e, target);
    if (s) return s;
    if (past_modifiers && modifier(kind)) {         /* _follow_pointer */
        if (res_id(e, target, &rid)) return UNSURE;
        if (kind_of(e, rid) == K_PTR && (s = walk_to(e, rid))) return s;
    }
    *out = target;
    return OK;
}

/* _resolve_modifier and _resolve_ptr, with _finish_reference. */
static int resolve_reference(env_t *e, entry_t *entry, int past_modifiers)
{
    uint32_t id = entry->id, target, sid, size;
    int s = settled_target(e, id, past_modifiers, &target);
    if (s) return s;
    uint32_t kind = kind_of(e, target);
    int got = id_size(e, target, &sid, &size);
    if (STOPS(got)) return got;
    if (got) return pop_resolved(e, sid, 0);
    int r = is_resolved(e, target);
    if (STOPS(r)) return r;
    if (r) {
        if (res_id(e, target, &target)) return UNSURE;
        kind = kind_of(e, target);
    }
    if (kind != K_VOID && kind != K_FWD && kind != K_FUNC_PROTO)
        return FAIL(e, id, M_REFERS_UNSIZED, v_type(e, target));
    return pop_resolved(e, target, 0);
}

static int resolve_var(env_t *e, entry_t *entry)
{
    uint32_t target, sid, size;
    int s = settled_target(e, entry->id, 1, &target);
    if (s) return s;
    int got = id_size(e, target, &sid, &size);
    if (STOPS(got)) return got;
    if (!got) return FAIL(e, entry->id, M_VAR_UNSIZED, v_type(e, target));
    return pop_resolved(e, sid, 0);
}

/* _array_part_settled: OK, WALK (pushed) or a stop. */
static int array_part_settled(env_t *e, uint32_t id, uint32_t part, int key)
{
    uint32_t kind = kind_of(e, part);
    if (nosize(kind) || source_only(kind)) return FAIL(e, id, key, v_type(e, part));
    return walk_to(e, part);
}

static int resolve_array(env_t *e, entry_t *entry)
{
    uint32_t id = entry->id;
    const uint32_t *r = e->rec[id];
    uint32_t elem = r[3], index = r[4], nelems = r[5], sid, size;
    int s = array_part_settled(e, id, index, M_ARRAY_INDEX_KIND);
    if (s) return s;
    if (STOPS(s = id_size(e, index, &sid, &size))) return s;
    if (!s || kind_of(e, sid) != K_INT || !int_regular(e, sid))
        return FAIL(e, id, M_ARRAY_INDEX_INT, v_type(e, index));
    if ((s = array_part_settled(e, id, elem, M_ARRAY_ELEM_KIND))) return s;
    if (STOPS(s = id_size(e, elem, &sid, &size))) return s;
    if (!s) return FAIL(e, id, M_ARRAY_ELEM_UNSIZED, v_type(e, elem));
    if (kind_of(e, sid) == K_INT && !int_regular(e, sid))
        return FAIL(e, id, M_ARRAY_ELEM_INT, v_type(e, elem));
    if (nelems && size > UINT32_MAX / nelems)
        return FAIL(e, id, M_ARRAY_OVERFLOW, v_int(nelems), v_int(size));
    return pop_resolved(e, sid, size * nelems);
}

/* A member under check (resolve._Member): member `index` of struct `sid`, of type
 * `mtype` (past modifiers) of kind `kind`. */
typedef struct {
    uint32_t sid, index, mtype, kind;
    const uint32_t *st;
} member_t;

static check_value_t label(const member_t *m) { return v_member(m->st[3 + 3 * m->index], m->index); }

/* _Member.past: a member running past its struct: `values`, then its kind and size. */
static int past(env_t *e, const member_t *m, int key, int64_t a, int64_t b, int count)
{
    check_value_t values[5] = {label(m), v_int(a), v_int(b)};
    values[count + 1] = v_int(e->kind[m->sid]);
    values[count + 2] = v_int(m->st[2]);
    return fail_n(e, m->sid, key, count + 3, values);
}

/* _check_span: an int member of `nbits` from bit `offset` (shown at `shown`). */
static int check_span(env_t *e, const member_t *m, uint64_t offset, uint32_t nbits, uint32_t shown)
{
    uint64_t copy_bits = nbits + (offset & 7), start = offset >> 3, size = m->st[2];
    if (copy_bits > 128) return FAIL(e, m->sid, M_MEMBER_128, label(m));
    if (size < start || size - start < (copy_bits + 7) / 8)
        return past(e, m, M_MEMBER_BITS_PAST, shown, nbits, 2);
    return OK;
}

/* _kflag_int_member and _kflag_enum_member. */
static int kflag_member(env_t *e, const member_t *m, uint32_t offset, uint32_t nbits)
{
    uint32_t max_bits = 32;
    if (m->kind == K_INT) {
        if (!int_regular(e, m->mtype))
            return FAIL(e, m->sid, M_MEMBER_KFLAG_INT, label(m), v_type(e, m->mtype));
        max_bits = e->rec[m->mtype][3] & 0xFF;
    }
    if (!nbits) {
        if (offset & 7) return FAIL(e, m->sid, M_MEMBER_BYTE_ALIGN, label(m), v_int(offset));
        nbits = max_bits;
    } else if (nbits > max_bits) {
        if (m->kind == K_INT)
            return FAIL(e, m->sid, M_MEMBER_INT_BITS, label(m), v_int(nbits), v_int(max_bits));
        return FAIL(e, m->sid, M_MEMBER_ENUM_BITS, label(m), v_int(nbits));
    }
    if (m->kind == K_INT) return check_span(e, m, offset, nbits, offset);
    uint64_t end = ((uint64_t)offset + nbits + 7) / 8;
    return m->st[2] < end ? past(e, m, M_MEMBER_END_PAST, (int64_t)end, 0, 1) : OK;
}

/* _int_member, _byte_member, _float_member and _not_a_member, without kind_flag. */
static int plain_member(env_t *e, const member_t *m, uint32_t word)
{
    uint32_t size = m->st[2], sid, msize;
    int got;
    switch (m->kind) {
    case K_INT: {
        uint32_t data = e->rec[m->mtype][3];
        uint64_t offset = (uint64_t)word + ((data >> 16) & 0xFF);
        if (offset > UINT32_MAX) return FAIL(e, m->sid, M_MEMBER_OVERFLOW, label(m));
        return check_span(e, m, offset, data & 0xFF, word);
    }
    case K_PTR: case K_ARRAY: case K_STRUCT: case K_UNION: case K_ENUM: case K_ENUM64:
        if (m->kind == K_PTR) msize = POINTER_SIZE;
        else if ((got = id_size(e, m->mtype, &sid, &msize)) != 1) return STOPS(got) ? got : UNSURE;
        if (word & 7) return FAIL(e, m->sid, M_MEMBER_BYTE_ALIGN, label(m), v_int(word));
        if ((uint32_t)(size - (word >> 3)) < msize)
            return past(e, m, M_MEMBER_BYTES_PAST, word, msize, 2);
        return OK;
    case K_FLOAT: {
        if ((got = id_size(e, m->mtype, &sid, &msize)) != 1) return STOPS(got) ? got : UNSURE;
        if (!msize) return FAIL(e, m->sid, M_MEMBER_FLOAT_0, label(m), v_type(e, m->mtype));
        uint32_t align = (msize < POINTER_SIZE ? msize : POINTER_SIZE) * 8;
        if (word % align) return FAIL(e, m->sid, M_MEMBER_FLOAT_ALIGN, label(m), v_int(word));
        if ((uint64_t)(word / 8) + msize > size)
            return past(e, m, M_MEMBER_BYTES_PAST, word, msize, 2);
        return OK;
    }
    default:
        return FAIL(e, m->sid, M_MEMBER_KIND, label(m), v_type(e, m->mtype));
    }
}

/* _check_member: member `index` of struct `sid`, of type `mtype`, at `word`. */
static int check_member(env_t *e, uint32_t sid, uint32_t index, uint32_t mtype, uint32_t word)
{
    member_t m = {sid, index, mtype, kind_of(e, mtype), e->rec[sid]};
    uint32_t msize;
    if (modifier(m.kind)) {
        int got = id_size(e, mtype, &m.mtype, &msize);
        if (STOPS(got)) return got;
        if (!got) return FAIL(e, sid, M_MEMBER_UNSIZED, label(&m), v_type(e, mtype));
        m.kind = kind_of(e, m.mtype);
    }
    if (m.mtype >= e->n) return UNSURE;
    if (e->state[m.mtype] == BROKEN) return BROKE;
    if (kflag_of(m.st)) {
        if (m.kind == K_INT || m.kind == K_ENUM || m.kind == K_ENUM64)
            return kflag_member(e, &m, word & 0xFFFFFF, word >> 24);
        if (word >> 24) return FAIL(e, sid, M_MEMBER_BITFIELD, label(&m), v_type(e, m.mtype));
        word &= 0xFFFFFF;
    }
    return plain_member(e, &m, word);
}

static int resolve_struct(env_t *e, entry_t *entry)
{
    uint32_t id = entry->id;
    const uint32_t *st = e->rec[id], *items = st + 3;
    uint32_t vlen = vlen_of(st);
    int s;
    if (entry->next) {
        const uint32_t *m = items + 3 * (size_t)(entry->next - 1);
        if (STOPS(s = is_resolved(e, m[1]))) return s;
        if (!s) return FAIL(e, id, M_MEMBER_UNRESOLVED, v_int(entry->next - 1));
        if ((s = check_member(e, id, entry->next - 1, m[1], m[2]))) return s;
    }
    for (uint32_t i = entry->next; i < vlen; i++) {
        const uint32_t *m = items + 3 * (size_t)i;
        uint32_t kind = kind_of(e, m[1]);
        if (nosize(kind) || source_only(kind))
            return FAIL(e, id, M_MEMBER_UNSIZED, v_member(m[0], i), v_type(e, m[1]));
        if (STOPS(s = walks_on(e, m[1]))) return s;
        if (s) {
            entry->next = i + 1;
            return push(e, m[1]);
        }
        if ((s = check_member(e, id, i, m[1], m[2]))) return s;
    }
    return pop_resolved(e, 0, 0);
}

static int resolve_datasec(env_t *e, entry_t *entry)
{
    e->mode = MODE_TBD;
    uint32_t id = entry->id, sid, size;
    const uint32_t *r = e->rec[id];
    uint32_t vlen = vlen_of(r);
    int s;
    for (uint32_t i = entry->next; i < vlen; i++) {
        const uint32_t *v = r + 3 + 3 * (size_t)i;
        if (kind_of(e, v[0]) != K_VAR) return FAIL(e, id, M_DATASEC_NOT_VAR, v_int(i), v_type(e, v[0]));
        if (STOPS(s = walks_on(e, v[0]))) return s;
        if (s) {
            entry->next = i + 1;
            return push(e, v[0]);
        }
        if (STOPS(s = id_size(e, e->rec[v[0]][2], &sid, &size))) return s;
        if (!s) return FAIL(e, id, M_DATASEC_UNSIZED, v_int(i), v_int(v[0]));
        if (v[2] < size) return FAIL(e, id, M_DATASEC_SMALL, v_int(i), v_int(v[2]), v_int(size));
    }
    return pop_resolved(e, 0, 0);
}

static int resolve_func(env_t *e, entry_t *entry)
{
    uint32_t id = entry->id, proto = e->rec[id][2];
    if (kind_of(e, proto) != K_FUNC_PROTO) return FAIL(e, id, M_FUNC_NOT_PROTO, v_type(e, proto));
    if (e->state[proto] == BROKEN) return BROKE;
    const uint32_t *p = e->rec[proto];
    for (uint32_t j = 0; j < vlen_of(p); j++)
        if (!p[3 + 2 * j] && p[4 + 2 * j]) return FAIL(e, id, M_FUNC_PARAM_NAME, v_int(j + 1), v_int(proto));
    return pop_resolved(e, proto, 0);
}

static int resolve_decl_tag(env_t *e, entry_t *entry)
{
    uint32_t id = entry->id;
    const uint32_t *r = e->rec[id];
    uint32_t target = r[2], kind = kind_of(e, target);
    if (!kind_in(KINDS_DECL_TAG_TARGET, kind))
        return FAIL(e, id, M_DECL_TAG_TARGET, v_type(e, target));
    int s = walk_to(e, target);
    if (s) return s;
    int32_t index = (int32_t)r[3];
    if (index != -1) {
        if (kind == K_VAR || kind == K_TYPEDEF) return FAIL(e, id, M_DECL_TAG_NONE, v_int(index), v_int(kind));
        if (index < 0) return UNSURE;
        uint32_t holder = target;
        if (kind == K_FUNC) holder = e->rec[target][2];
        if (holder >= e->n) return UNSURE;
        uint32_t vlen = holder ? item_count(e, holder) : 0;
        if ((uint32_t)index >= vlen)
            return FAIL(e, id, M_DECL_TAG_RANGE, v_int(index), v_type(e, target), v_int(vlen));
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
    default: return FAIL0(e, entry->id, M_RESOLVE_KIND);
    }
}

/* _resolve_valid: the kernel's consistency check once `id` is resolved; 1, 0 or a stop. */
static int resolve_valid(env_t *e, uint32_t id)
{
    int s = is_resolved(e, id);
    if (s <= 0) return s;
    uint32_t kind = e->kind[id], rid = e->rid[id], rsize = e->rsize[id], sid, size;
    if (kind == K_STRUCT || kind == K_UNION || kind == K_DATASEC) return !rid && !rsize;
    if (kind == K_DECL_TAG || kind == K_FUNC) return rid && !rsize;
    if (modifier(kind) || kind == K_PTR || kind == K_VAR) {
        uint32_t rkind = kind_of(e, rid);
        return rkind != K_NULL && !modifier(rkind) && rkind != K_VAR && rkind != K_DATASEC;
    }
    if (kind == K_ARRAY) {
        const uint32_t *r = e->rec[id];
        if (STOPS(s = id_size(e, r[3], &sid, &size))) return s;
        return s && !modifier(kind_of(e, sid)) && r[5] * size == rsize;
    }
    return 0;
}

/* _resolve: walk from `top` until it is resolved; OK, or BAD once the finding (if any)
 * is reported and the walk's types are broken; UNSURE. */
static int resolve(env_t *e, uint32_t top)
{
    e->top = top;
    e->mode = MODE_TBD;
    e->depth = 0;
    int s = push(e, top);
    while (!STOPS(s) && e->depth) s = step(e, &e->stack[e->depth - 1]);
    if (!STOPS(s) && !(s = resolve_valid(e, top))) s = FAIL0(e, top, M_RESOLVE_STATE);
    if (!STOPS(s)) return OK;
    if (s == UNSURE) return UNSURE;
    if (s == BAD) report(e);
    for (int k = 0; k < e->depth; k++) e->state[e->stack[k].id] = BROKEN;
    e->state[top] = BROKEN;
    e->depth = 0;
    return BAD;
}

/* A return or parameter type of FUNC_PROTO `proto` resolved first when it must be:
 * OK, BROKE once `proto` is broken, UNSURE. */
static int resolve_part(env_t *e, uint32_t proto, uint32_t part, uint32_t kind)
{
    if (!needs_resolve(kind)) return OK;
    int s = is_resolved(e, part);
    if (STOPS(s) || s) return s < 0 ? s : OK;
    if ((s = resolve(e, part)) == UNSURE) return s;
    if (s) e->state[proto] = BROKEN;
    return s ? BROKE : OK;
}

/* _func_proto_check: OK, BAD (the finding raised), BROKE (the caller breaks `id`
 * unless resolve_part did) or UNSURE. */
static int func_proto_check(env_t *e, uint32_t id)
{
    const uint32_t *r = e->rec[id], *params = r + 3;
    uint32_t count = vlen_of(r), ret = r[2], kind, sid, size;
    int s;
    if (ret) {
        kind = kind_of(e, ret);
        if (kind == K_NULL || source_only(kind)) return FAIL(e, id, M_PROTO_RETURN, v_type(e, ret));
        if ((s = resolve_part(e, id, ret, kind))) return s;
        if (STOPS(s = id_size(e, ret, &sid, &size))) return s;
        if (!s) return FAIL(e, id, M_PROTO_RETURN_UNSIZED, v_type(e, ret));
    }
    if (count && !params[2 * (count - 1) + 1]) {
        if (params[2 * (count - 1)]) return FAIL0(e, id, M_PROTO_VARARG);
        count--;
    }
    for (uint32_t j = 0; j < count; j++) {
        uint32_t name = params[2 * j], ptype = params[2 * j + 1];
        kind = kind_of(e, ptype);
        if (kind == K_NULL || source_only(kind))
            return FAIL(e, id, M_PROTO_PARAM, v_int(j + 1), v_type(e, ptype));
        if (name && !(offset_ok(e, name) && is_identifier(e, name)))
            return FAIL(e, id, M_PROTO_PARAM_NAME, v_int(j + 1), v_name(name));
        if ((s = resolve_part(e, id, ptype, kind))) return s;
        if (STOPS(s = id_size(e, ptype, &sid, &size))) return s;
        if (!s) return FAIL(e, id, M_PROTO_PARAM_UNSIZED, v_int(j + 1), v_type(e, ptype));
    }
    return OK;
}

/* resolve.check_all_resolve: OK or UNSURE. */
static int all_resolve(env_t *e)
{
    for (uint32_t id = e->first; id < e->n && !e->oom; id++) {
        if (e->state[id] == BROKEN) continue;
        uint32_t kind = e->kind[id];
        int s = OK;
        if (needs_resolve(kind) && e->state[id] != RESOLVED) {
            s = resolve(e, id);
        } else if (kind == K_FUNC_PROTO) {
            s = func_proto_check(e, id);
            if (s == BAD) report(e);
            else if (s == BROKE) e->state[id] = BROKEN;
        }
        if (s == UNSURE) return UNSURE;
    }
    return OK;
}

/* -- pass 3 (check/validator.py) -------------------------------------------------------------- */

/* validator._check_type_tags: type tags first in every chain of modifiers, chains short. */
static void type_tags(env_t *e)
{
    uint32_t good = e->first - 1;
    for (uint32_t id = e->first; id < e->n && !e->oom; id++) {
        uint32_t kind = e->kind[id], cur = id;
        if (!modifier(kind) || e->state[id] == BROKEN) continue;
        int in_tags = kind == K_TYPE_TAG, budget = MAX_RESOLVE_DEPTH;
        while (modifier(kind)) {
            if (!budget--) {
                FAIL0(e, id, M_MODIFIER_CHAIN);
                report(e);
                break;
            }
            if (kind == K_TYPE_TAG) {
                if (!in_tags) {
                    FAIL(e, id, M_TYPE_TAG_ORDER, v_int(cur));
                    report(e);
                    break;
                }
            } else {
                in_tags = 0;
            }
            if (cur <= good) break;
            cur = e->rec[cur][2];
            if (cur >= e->n || e->state[cur] == BROKEN) break;
            kind = e->kind[cur];
        }
        good = id;
    }
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
    if (n > UINT32_MAX) return UNSURE;
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
    if (!e->rec || !e->kind || !e->state || !e->base_done || !e->rid || !e->rsize) return BAD;
    uint32_t next = 1;
    for (int k = 0; k < nlevels; k++) {
        const types_t *t = &levels[k];
        if (t->first_id != next) return UNSURE;
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

static int by_id(const void *a, const void *b)
{
    const check_finding_t *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

void findings_free(check_findings_t *out)
{
    free(out->f);
    free(out->v);
    memset(out, 0, sizeof *out);
}

int rules_check(const types_t *levels, int nlevels, check_findings_t *out)
{
    env_t e;
    memset(out, 0, sizeof *out);
    int rc = env_init(&e, levels, nlevels);
    e.out = out;
    if (rc == OK) {
        for (uint32_t id = e.first; rc == OK && id < e.n && !e.oom; id++) {
            int s = record_check(&e, id);
            if (s == BAD) report(&e);
            else if (s == UNSURE) rc = UNSURE;
        }
        if (rc == OK) rc = all_resolve(&e);
        if (rc == OK) type_tags(&e);
    }
    env_free(&e);
    if (rc == BAD || e.oom) {
        findings_free(out);
        return -1;
    }
    if (rc == UNSURE) {
        findings_free(out);
        return 1;
    }
    /* Findings of one type never repeat; ids in the resolve pass may come out of order. */
    size_t sorted = 1;
    while (sorted < out->nf && out->f[sorted - 1].id < out->f[sorted].id) sorted++;
    if (sorted < out->nf) qsort(out->f, out->nf, sizeof *out->f, by_id);
    return 0;
}
