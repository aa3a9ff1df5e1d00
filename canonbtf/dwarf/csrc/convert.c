/* One unit's type DIEs -> BTF records (convert.py's UnitConverter with its layers
 * type_records.py and numbering.py, step for step: the same numbering order, the same
 * records, the same skip reasons). */
#include "core.h"
#include "dwarf.h"
#include <string.h>
#include <stdlib.h>

#define ERR (INT64_MIN + 1)

/* Candidate flags of a FUNC (convert.FUNC_*). */
/* A FUNC candidate's flags (canonbtf/spec/features.py, through func_flags.def). */
enum {
#define FUNC_FLAG(name, bit) FUNC_##name = bit,
#include "func_flags.def"
#undef FUNC_FLAG
};

static const name_t EMPTY = {(const uint8_t *)"", 0};

static int skip(encoder_t *e, uint32_t code, uint32_t tag)
{
    for (size_t i = 0; i < e->pending_skips.n; i++) {
        skip_t *s = &e->pending_skips.a[i];
        if (s->code == code && s->tag == tag) { s->count++; return 0; }
    }
    skip_t s = {code, tag, 1};
    return VEC_PUSH(e->pending_skips, s) ? fail(e, "out of memory") : 0;
}

const attr_t *node_attr(const encoder_t *e, const node_t *n, int slot)
{
    if (!n->nattrs) return NULL;  /* attrs.a may be NULL: NULL + 0 is undefined */
    const attr_t *a = e->attrs.a + n->attr_first;
    for (uint32_t i = 0; i < n->nattrs; i++)
        if (a[i].slot == slot) return &a[i];
    return NULL;
}

static int truthy(const encoder_t *e, const node_t *n, int slot)
{
    const attr_t *a = node_attr(e, n, slot);
    return a && (a->is_str ? a->s.len != 0 : a->v != 0);
}

static name_t name_or_empty(const encoder_t *e, const node_t *n)
{
    const attr_t *a = node_attr(e, n, S_NAME);
    return a ? a->s : EMPTY;
}

static int name_is(const attr_t *a, const char *s)
{
    size_t n = strlen(s);
    return a && a->is_str && a->s.len == n && memcmp(a->s.p, s, n) == 0;
}

/* The type node at a DIE offset, -1 when none (`self.dies.get(offset)`). */
static int type_node(const encoder_t *e, i128 offset)
{
    const unit_t *u = &e->unit;
    if (offset < (i128)u->die_offset || offset >= (i128)u->end) return -1;
    return e->type_at.a[(uint64_t)(offset - (i128)u->die_offset)];
}

static int64_t add_rec(encoder_t *e, const rec_t *r)
{
    if (VEC_PUSH(e->recs, *r) || VEC_PUSH(e->owners, -1)) { fail(e, "out of memory"); return ERR; }
    e->recs.a[e->recs.n - 1].set = 1;
    return (int64_t)e->recs.n - 1;
}

static int64_t alloc_rec(encoder_t *e, int owner)
{
    rec_t r;
    memset(&r, 0, sizeof r);
    if (VEC_PUSH(e->recs, r) || VEC_PUSH(e->owners, owner)) { fail(e, "out of memory"); return ERR; }
    return (int64_t)e->recs.n - 1;
}

static int supported(uint32_t tag)
{
    switch (tag) {
    case TAG_pointer_type: case TAG_const_type: case TAG_volatile_type:
    case TAG_restrict_type: case TAG_typedef: case TAG_structure_type: case TAG_union_type:
    case TAG_class_type: case TAG_array_type: case TAG_enumeration_type:
    case TAG_subroutine_type: case TAG_atomic_type:
        return 1;
    }
    return 0;
}

static int by_value(uint32_t tag)
{
    return tag == TAG_typedef || tag == TAG_const_type || tag == TAG_volatile_type
        || tag == TAG_restrict_type || tag == TAG_array_type || tag == TAG_subroutine_type;
}

static int64_t number_node(encoder_t *e, int t);

/* `_number(offset)` */
static int64_t number(encoder_t *e, i128 offset)
{
    int t = type_node(e, offset);
    if (t >= 0)
        return number_node(e, t);
    int is_new = 0;
    if (intern_bytes(&e->nontype, (const uint8_t *)&offset, sizeof offset, &is_new) < 0) {
        fail(e, "out of memory");
        return ERR;
    }
    if (is_new && skip(e, R_NOT_TYPE, 0)) return ERR;
    return FAILED;
}

/* `_type_number(target)`: 0 for an absent reference. */
static int64_t ref_number(encoder_t *e, const attr_t *target)
{
    return target ? number(e, target->v) : 0;
}

/* `_unsupported(die)`: the skip reason, or -1 when the type is supported. */
static int unsupported(const encoder_t *e, const node_t *n)
{
    if (n->tag == TAG_base_type) {
        const attr_t *enc = node_attr(e, n, S_ENCODING);
        if (enc && enc->v == ATE_complex_float) return R_COMPLEX;
        if (enc && enc->v == ATE_imaginary_float) return R_IMAGINARY;
        if (enc && enc->v == ATE_decimal_float) return R_DECIMAL;
        const attr_t *size = node_attr(e, n, S_BYTE_SIZE);
        if (!(enc && enc->v == ATE_float) && size && size->v > 16) return R_BIG_INT;
        return -1;
    }
    return supported(n->tag) ? -1 : R_TAG;
}

static int64_t number_body(encoder_t *e, int t)
{
    const node_t *n = &e->nodes.a[t];
    uint32_t tag = n->tag;
    if (tag == TAG_unspecified_type) { e->local.a[t] = 0; return 0; }
    if (!supported(tag) || tag == TAG_atomic_type) {
        int reason = unsupported(e, n);
        if (reason >= 0) {
            if (skip(e, (uint32_t)reason, tag)) return ERR;
            e->local.a[t] = FAILED;
            return FAILED;
        }
    }
    e->local.a[t] = FAILED;  /* until decided: a cycle of by-value types fails */
    if (tag == TAG_atomic_type) {
        if (skip(e, R_ATOMIC, 0)) return ERR;
        int64_t r = ref_number(e, node_attr(e, n, S_TYPE));
        if (r == ERR) return ERR;
        e->local.a[t] = r;
        return r;
    }
    if (by_value(tag)) {
        const attr_t *dep = node_attr(e, n, S_TYPE);
        if (dep) {
            int64_t d = number(e, dep->v);
            if (d == ERR) return ERR;
            if (d == FAILED) return skip(e, R_BY_VALUE, tag) ? ERR : FAILED;
        }
        if (tag == TAG_subroutine_type) {
            for (int c = n->first_child; c >= 0; c = e->nodes.a[c].next) {
                const node_t *child = &e->nodes.a[c];
                if (child->tag != TAG_formal_parameter) continue;
                const attr_t *pt = node_attr(e, child, S_TYPE);
                if (!pt) continue;
                int64_t d = number(e, pt->v);
                if (d == ERR) return ERR;
                if (d == FAILED) return skip(e, R_BY_VALUE, tag) ? ERR : FAILED;
            }
        }
    }
    int64_t num = alloc_rec(e, t);
    if (num == ERR) return ERR;
    e->local.a[t] = num;
    return num;
}

static int64_t number_node(encoder_t *e, int t)
{
    if (e->local.a[t] != UNSET)
        return e->local.a[t];
    if (++e->depth > MAX_DEPTH) {
        fail(e, "types nested more than %d deep", MAX_DEPTH);
        return ERR;
    }
    int64_t r = number_body(e, t);
    e->depth--;
    return r;
}

/* -- records ------------------------------------------------------------------------ */

static int add_decl_tags(encoder_t *e, int64_t target)
{
    if (e->features & F_DECL_TAG) {
        for (size_t i = 0; i < e->decl_tags.n; i++) {
            rec_t r;
            memset(&r, 0, sizeof r);
            r.kind = K_DECL_TAG;
            r.name = e->decl_tags.a[i].name;
            r.sot = target;
            r.extra = e->decl_tags.a[i].value;
            if (add_rec(e, &r) == ERR) return -1;
        }
    }
    e->decl_tags.n = 0;
    return 0;
}

static int collect_one(encoder_t *e, const node_t *c, i128 component)
{
    if (c->tag != TAG_LLVM_annotation || !name_is(node_attr(e, c, S_NAME), "btf_decl_tag"))
        return 0;
    const attr_t *v = node_attr(e, c, S_CONST_VALUE);
    if (!v || !v->s.len) return 0;
    item_t it = {v->s, 0, component};
    return VEC_PUSH(e->decl_tags, it) ? fail(e, "out of memory") : 0;
}

/* `_collect_decl_tags(children, component)` over the children of node `parent`. */
static int collect_decl_tags(encoder_t *e, int parent, i128 component)
{
    for (int c = e->nodes.a[parent].first_child; c >= 0; c = e->nodes.a[c].next)
        if (collect_one(e, &e->nodes.a[c], component)) return -1;
    return 0;
}

static int64_t type_tags(encoder_t *e, int t, int64_t target)
{
    if (!(e->features & F_TYPE_TAG)) return target;
    for (int c = e->nodes.a[t].first_child; c >= 0; c = e->nodes.a[c].next) {
        const node_t *child = &e->nodes.a[c];
        if (child->tag != TAG_LLVM_annotation
            || !name_is(node_attr(e, child, S_NAME), "btf_type_tag"))
            continue;
        const attr_t *v = node_attr(e, child, S_CONST_VALUE);
        if (!v || !v->s.len) continue;
        rec_t r;
        memset(&r, 0, sizeof r);
        r.kind = K_TYPE_TAG;
        r.name = v->s;
        r.sot = target;
        target = add_rec(e, &r);
        if (target == ERR) return ERR;
    }
    return target;
}

static i128 signed64(i128 v)
{
    return v >= ((i128)1 << 63) ? v - ((i128)1 << 64) : v;
}

static int see_through(uint32_t tag)
{
    return tag == TAG_typedef || tag == TAG_const_type || tag == TAG_volatile_type
        || tag == TAG_restrict_type || tag == TAG_atomic_type;
}

static int sized(uint32_t tag)
{
    return tag == TAG_base_type || tag == TAG_structure_type || tag == TAG_union_type
        || tag == TAG_class_type || tag == TAG_enumeration_type || tag == TAG_pointer_type;
}

/* `_byte_size(offset)` */
static i128 byte_size_of(const encoder_t *e, const attr_t *ref)
{
    for (int i = 0; i < 64 && ref; i++) {
        int t = type_node(e, ref->v);
        if (t < 0) return 0;
        const node_t *n = &e->nodes.a[t];
        const attr_t *size = node_attr(e, n, S_BYTE_SIZE);
        if (size && sized(n->tag)) return size->v;
        if (!see_through(n->tag)) return 0;
        ref = node_attr(e, n, S_TYPE);
    }
    return 0;
}

/* `_signed_type(offset)` */
static int signed_type(const encoder_t *e, const attr_t *ref)
{
    for (int i = 0; i < 64 && ref; i++) {
        int t = type_node(e, ref->v);
        if (t < 0) return 0;
        const node_t *n = &e->nodes.a[t];
        if (n->tag == TAG_base_type) {
            const attr_t *enc = node_attr(e, n, S_ENCODING);
            return enc && (enc->v == ATE_signed || enc->v == ATE_signed_char);
        }
        if (!see_through(n->tag)) return 0;
        ref = node_attr(e, n, S_TYPE);
    }
    return 0;
}

static i128 member_bit_offset(const encoder_t *e, const node_t *m, i128 bit_size)
{
    const attr_t *dbo = node_attr(e, m, S_DATA_BIT_OFFSET);
    if (dbo) return dbo->v;
    const attr_t *loc = node_attr(e, m, S_DATA_MEMBER_LOCATION);
    i128 byte_offset = loc ? loc->v : 0;
    const attr_t *old = node_attr(e, m, S_BIT_OFFSET);
    if (!bit_size || !old) return byte_offset * 8;
    const attr_t *bs = node_attr(e, m, S_BYTE_SIZE);
    i128 storage = bs ? bs->v : byte_size_of(e, node_attr(e, m, S_TYPE));
    if (e->little) return byte_offset * 8 + storage * 8 - old->v - bit_size;
    return byte_offset * 8 + old->v;
}

static int push_item(encoder_t *e, name_t name, int64_t type, i128 value)
{
    item_t it = {name, type, value};
    return VEC_PUSH(e->items, it) ? fail(e, "out of memory") : 0;
}

static int make_struct(encoder_t *e, int t, rec_t *r)
{
    const node_t *n = &e->nodes.a[t];
    int is_union = n->tag == TAG_union_type;
    r->name = name_or_empty(e, n);
    if (truthy(e, n, S_DECLARATION)) {
        r->kind = K_FWD;
        r->kflag = (uint8_t)is_union;
        return 0;
    }
    const attr_t *size = node_attr(e, n, S_BYTE_SIZE);
    r->kind = is_union ? K_UNION : K_STRUCT;
    r->sot = size ? size->v : 0;
    r->item_first = (uint32_t)e->items.n;
    int bitfields = 0;
    for (int c = e->nodes.a[t].first_child; c >= 0; c = e->nodes.a[c].next) {
        const node_t *m = &e->nodes.a[c];
        if (m->tag != TAG_member) {
            if (m->tag == TAG_LLVM_annotation) {
                if (collect_one(e, m, -1)) return -1;
            } else if (skip(e, R_IN_STRUCT, m->tag)) {
                return -1;
            }
            continue;
        }
        if (truthy(e, m, S_EXTERNAL) || truthy(e, m, S_DECLARATION)) continue;
        const attr_t *target = node_attr(e, m, S_TYPE);
        int64_t type = 0;
        if (target) {
            type = number(e, target->v);
            if (type == ERR) return -1;
            m = &e->nodes.a[c];
            if (type == FAILED) {
                if (skip(e, R_MEMBER, 0)) return -1;
                continue;
            }
        }
        const attr_t *bs = node_attr(e, m, S_BIT_SIZE);
        i128 bit_size = bs ? bs->v : 0;
        i128 word;
        if (bit_size) {
            bitfields = 1;
            word = bit_size * ((i128)1 << 24) | member_bit_offset(e, m, bit_size);
        } else {
            const attr_t *dbo = node_attr(e, m, S_DATA_BIT_OFFSET);
            const attr_t *loc = node_attr(e, m, S_DATA_MEMBER_LOCATION);
            word = dbo ? dbo->v : (loc ? loc->v : 0) * 8;
        }
        i128 index = (i128)(e->items.n - r->item_first);
        if (m->has_children && collect_decl_tags(e, c, index)) return -1;
        if (push_item(e, name_or_empty(e, m), type, word)) return -1;
    }
    r->nitems = (uint32_t)(e->items.n - r->item_first);
    r->kflag = (uint8_t)bitfields;
    return 0;
}

static int64_t index_type(encoder_t *e);

static int make_array(encoder_t *e, int t, rec_t *r)
{
    i128 nelems = 1;
    int dimensions = 0;
    for (int c = e->nodes.a[t].first_child; c >= 0; c = e->nodes.a[c].next) {
        const node_t *s = &e->nodes.a[c];
        if (s->tag != TAG_subrange_type) {
            if (skip(e, R_IN_ARRAY, s->tag)) return -1;
            continue;
        }
        dimensions++;
        const attr_t *count = node_attr(e, s, S_COUNT);
        i128 value;
        if (count) {
            value = count->v;
        } else {
            const attr_t *upper = node_attr(e, s, S_UPPER_BOUND);
            if (!upper) {
                value = 0;
            } else {
                const attr_t *lower = node_attr(e, s, S_LOWER_BOUND);
                value = signed64(upper->v) - signed64(lower ? lower->v : 0) + 1;
                if (value < 0) value = 0;
            }
        }
        nelems = (nelems * value) & 0xFFFFFFFF;
    }
    if (!dimensions) nelems = 0;
    r->kind = K_ARRAY;
    r->name = EMPTY;
    r->elem = ref_number(e, node_attr(e, &e->nodes.a[t], S_TYPE));
    if (r->elem == ERR) return -1;
    r->index = index_type(e);
    if (r->index == ERR) return -1;
    r->nelems = nelems;
    return 0;
}

static int make_enum(encoder_t *e, int t, rec_t *r)
{
    const node_t *n = &e->nodes.a[t];
    r->name = name_or_empty(e, n);
    const attr_t *size = node_attr(e, n, S_BYTE_SIZE);
    r->kind = K_ENUM;
    if (truthy(e, n, S_DECLARATION) || !size) {
        r->sot = size ? size->v : 4;
        return 0;
    }
    r->sot = size->v;
    r->item_first = (uint32_t)e->items.n;
    int negative = 0;
    for (int c = n->first_child; c >= 0; c = e->nodes.a[c].next) {
        const node_t *m = &e->nodes.a[c];
        if (m->tag != TAG_enumerator) {
            if (skip(e, R_IN_ENUM, m->tag)) return -1;
            continue;
        }
        const attr_t *v = node_attr(e, m, S_CONST_VALUE);
        i128 value = v ? v->v : 0;
        if (value < 0) negative = 1;
        if (push_item(e, name_or_empty(e, m), 0, value)) return -1;
    }
    r->nitems = (uint32_t)(e->items.n - r->item_first);
    item_t *items = r->nitems ? e->items.a + r->item_first : NULL;
    if (size->v <= 4 || !(e->features & F_ENUM64)) {
        for (uint32_t i = 0; i < r->nitems; i++) items[i].value &= 0xFFFFFFFF;
        /* no sign without ENUM64: kernels before 6.0 reject an ENUM with kind_flag */
        r->kflag = (e->features & F_ENUM64) ? (uint8_t)negative : 0;
        return 0;
    }
    for (uint32_t i = 0; i < r->nitems; i++)
        items[i].value &= (i128)0xFFFFFFFFFFFFFFFFULL;
    r->kind = K_ENUM64;
    r->kflag = (uint8_t)signed_type(e, node_attr(e, n, S_TYPE));
    return 0;
}

static int make_func_proto(encoder_t *e, int t, rec_t *r)
{
    r->kind = K_FUNC_PROTO;
    r->name = EMPTY;
    r->item_first = (uint32_t)e->items.n;
    for (int c = e->nodes.a[t].first_child; c >= 0; c = e->nodes.a[c].next) {
        const node_t *p = &e->nodes.a[c];
        if (p->tag == TAG_formal_parameter) {
            int64_t type = ref_number(e, node_attr(e, p, S_TYPE));
            if (type == ERR) return -1;
            p = &e->nodes.a[c];
            if (push_item(e, name_or_empty(e, p), type, 0)) return -1;
        } else if (p->tag == TAG_unspecified_parameters) {
            if (push_item(e, EMPTY, 0, 0)) return -1;
        } else if (p->tag != TAG_LLVM_annotation) {
            if (skip(e, R_IN_PROTO, p->tag)) return -1;
        }
    }
    r->nitems = (uint32_t)(e->items.n - r->item_first);
    int64_t ret = ref_number(e, node_attr(e, &e->nodes.a[t], S_TYPE));
    if (ret == ERR) return -1;
    r->sot = ret;
    return 0;
}

static int make_base_type(encoder_t *e, int t, rec_t *r)
{
    const node_t *n = &e->nodes.a[t];
    const attr_t *size = node_attr(e, n, S_BYTE_SIZE);
    const attr_t *enc = node_attr(e, n, S_ENCODING);
    i128 bytes = size ? size->v : 0;
    r->name = name_or_empty(e, n);
    r->sot = bytes;
    r->kind = K_INT;
    if (enc && enc->v == ATE_float) {
        if (!(e->features & F_FLOAT)) { r->extra = bytes * 8; return 0; }
        r->kind = K_FLOAT;
        return 0;
    }
    i128 flags = 0;
    if (enc && enc->v == ATE_boolean) flags = 4;
    else if (enc && (enc->v == ATE_signed || enc->v == ATE_signed_char)) flags = 1;
    r->extra = (flags << 24) | (bytes * 8);
    return 0;
}

/* `_record(die)` for the type node t, written to record `number`. */
static int make_record(encoder_t *e, int t, int64_t number)
{
    rec_t r;
    memset(&r, 0, sizeof r);
    uint32_t tag = e->nodes.a[t].tag;
    int kind = 0;
    switch (tag) {
    case TAG_pointer_type: kind = K_PTR; break;
    case TAG_const_type: kind = K_CONST; break;
    case TAG_volatile_type: kind = K_VOLATILE; break;
    case TAG_restrict_type: kind = K_RESTRICT; break;
    case TAG_typedef: kind = K_TYPEDEF; break;
    }
    int rc = 0;
    if (kind) {
        r.kind = (uint8_t)kind;
        r.name = kind == K_TYPEDEF ? name_or_empty(e, &e->nodes.a[t]) : EMPTY;
        int64_t target = ref_number(e, node_attr(e, &e->nodes.a[t], S_TYPE));
        if (target == ERR) return -1;
        if (target == FAILED) target = 0;
        if (e->nodes.a[t].first_child >= 0) {
            if (kind == K_PTR) {
                target = type_tags(e, t, target);
                if (target == ERR) return -1;
            } else if (kind == K_TYPEDEF && collect_decl_tags(e, t, -1)) {
                return -1;
            }
        }
        r.sot = target;
    } else if (tag == TAG_base_type) {
        rc = make_base_type(e, t, &r);
    } else if (tag == TAG_structure_type || tag == TAG_class_type || tag == TAG_union_type) {
        rc = make_struct(e, t, &r);
    } else if (tag == TAG_array_type) {
        rc = make_array(e, t, &r);
    } else if (tag == TAG_enumeration_type) {
        rc = make_enum(e, t, &r);
    } else {
        rc = make_func_proto(e, t, &r);
    }
    if (rc) return -1;
    r.set = 1;
    e->recs.a[number] = r;
    return 0;
}

/* `_index()`: the unit's `int`, else a 4-byte signed `int` record of its own. */
static int64_t index_type(encoder_t *e)
{
    if (e->index_type != UNSET) return e->index_type;
    for (size_t i = 0; i < e->types.n; i++) {
        int t = e->types.a[i];
        const node_t *n = &e->nodes.a[t];
        if (n->tag != TAG_base_type || !name_is(node_attr(e, n, S_NAME), "int")) continue;
        int64_t num = number_node(e, t);
        if (num == ERR) return ERR;
        if (num > 0) { e->index_type = num; return num; }
    }
    rec_t r;
    memset(&r, 0, sizeof r);
    r.kind = K_INT;
    r.name.p = (const uint8_t *)"int";
    r.name.len = 3;
    r.sot = 4;
    r.extra = (1 << 24) | 32;
    e->index_type = add_rec(e, &r);
    return e->index_type;
}

/* -- functions and variables ---------------------------------------------------------- */

/* `_declared(attrs)`: a definition's attributes over those of what it completes. */
static void declared(const encoder_t *e, int t, const attr_t *view[NSLOTS])
{
    const node_t *n = &e->nodes.a[t];
    for (int s = 0; s < NSLOTS; s++) view[s] = NULL;
    for (uint32_t i = 0; i < n->nattrs; i++) {
        const attr_t *a = &e->attrs.a[n->attr_first + i];
        view[a->slot] = a;
    }
    const attr_t *spec = view[S_SPECIFICATION];
    for (int i = 0; i < 8 && spec; i++) {
        int target = type_node(e, spec->v);
        if (target < 0) break;
        const node_t *d = &e->nodes.a[target];
        for (uint32_t k = 0; k < d->nattrs; k++) {
            const attr_t *a = &e->attrs.a[d->attr_first + k];
            if (!view[a->slot]) view[a->slot] = a;
        }
        spec = node_attr(e, d, S_SPECIFICATION);
    }
}

static int view_truthy(const attr_t *a)
{
    return a && (a->is_str ? a->s.len != 0 : a->v != 0);
}

typedef struct { i128 origin; size_t order; i128 low_pc; int node; } copy_t;

static int compare_copies(const void *x, const void *y)
{
    const copy_t *a = x, *b = y;
    if (a->origin != b->origin) return a->origin < b->origin ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* `_moved`: whether a parameter of node t is in an unexpected register. */
static int moved(const encoder_t *e, int t)
{
    int index = 0;
    for (int c = e->nodes.a[t].first_child; c >= 0; c = e->nodes.a[c].next) {
        const node_t *p = &e->nodes.a[c];
        if (p->tag != TAG_formal_parameter) continue;
        if (index == e->nregisters) break;
        const attr_t *location = node_attr(e, p, S_LOCATION);
        if (location && unexpected_register(param_location_summary(e, location),
                                            e->registers[index]))
            return 1;
        index++;
    }
    return 0;
}

static int compare_origins(const void *x, const void *y)
{
    i128 a = *(const i128 *)x, b = *(const i128 *)y;
    return a < b ? -1 : a > b;
}

static int same_item(const item_t *a, const item_t *b)
{
    return a->type == b->type && a->name.len == b->name.len
        && (a->name.len == 0 || memcmp(a->name.p, b->name.p, a->name.len) == 0);
}

/* `_copy_parameters(copy.children, params)`: pushes the parameters of copy node `copy`
 * (in its order) after the definition's `nparams` items at `first`, by the rank of their
 * DW_AT_abstract_origin. Returns 1 when pushed, 0 when they are the definition's (nothing
 * left pushed), -1 on error. */
static int copy_parameters(encoder_t *e, int copy, size_t first, size_t nparams)
{
    size_t listed = 0, norigins = 0, named = 0;
    int missing = 0;
    for (int c = e->nodes.a[copy].first_child; c >= 0; c = e->nodes.a[c].next) {
        uint32_t tag = e->nodes.a[c].tag;
        if (tag == TAG_unspecified_parameters) listed++;
        if (tag != TAG_formal_parameter) continue;
        listed++;
        norigins++;
        if (!node_attr(e, &e->nodes.a[c], S_ABSTRACT_ORIGIN)) missing = 1;
    }
    size_t start = e->items.n;
    if (listed != nparams) {
        for (size_t i = 0; i < listed; i++)
            if (push_item(e, EMPTY, 0, 0)) return -1;
        return 1;
    }
    for (size_t i = 0; i < nparams; i++)
        if (e->items.a[first + i].name.len) named++;
    if (norigins != named || missing) return 0;
    i128 *sorted = malloc((norigins ? norigins : 1) * sizeof *sorted);
    size_t *index = malloc((named ? named : 1) * sizeof *index);
    if (!sorted || !index) { free(sorted); free(index); return fail(e, "out of memory"); }
    size_t k = 0;
    for (int c = e->nodes.a[copy].first_child; c >= 0; c = e->nodes.a[c].next)
        if (e->nodes.a[c].tag == TAG_formal_parameter)
            sorted[k++] = node_attr(e, &e->nodes.a[c], S_ABSTRACT_ORIGIN)->v;
    qsort(sorted, norigins, sizeof *sorted, compare_origins);
    int distinct = 1;
    for (size_t i = 1; i < norigins; i++)
        if (sorted[i] == sorted[i - 1]) distinct = 0;
    k = 0;
    for (size_t i = 0; i < nparams; i++)
        if (e->items.a[first + i].name.len) index[k++] = first + i;
    int rc = 0;
    for (int c = e->nodes.a[copy].first_child; c >= 0 && distinct; c = e->nodes.a[c].next) {
        uint32_t tag = e->nodes.a[c].tag;
        if (tag == TAG_unspecified_parameters) {
            if (push_item(e, EMPTY, 0, 0)) { rc = -1; break; }
        } else if (tag == TAG_formal_parameter) {
            i128 origin = node_attr(e, &e->nodes.a[c], S_ABSTRACT_ORIGIN)->v;
            const i128 *at = bsearch(&origin, sorted, norigins, sizeof *sorted,
                                     compare_origins);
            item_t it = e->items.a[index[at - sorted]];
            if (push_item(e, it.name, it.type, 0)) { rc = -1; break; }
        }
    }
    free(sorted);
    free(index);
    if (rc < 0) return -1;
    if (!distinct) return 0;
    int same = 1;
    for (size_t i = 0; i < nparams && same; i++)
        same = same_item(&e->items.a[first + i], &e->items.a[start + i]);
    if (same) { e->items.n = start; return 0; }
    return 1;
}

/* A FUNC_PROTO of the items from `first` on, returning `returns`, and a FUNC `name` of
 * it whose linkage field holds `flags`; the FUNC's number, or ERR. */
static int64_t add_function(encoder_t *e, name_t name, int64_t returns, size_t first,
                            i128 flags)
{
    rec_t proto;
    memset(&proto, 0, sizeof proto);
    proto.kind = K_FUNC_PROTO;
    proto.name = EMPTY;
    proto.sot = returns;
    proto.item_first = (uint32_t)first;
    proto.nitems = (uint32_t)(e->items.n - first);
    int64_t proto_number = add_rec(e, &proto);
    if (proto_number == ERR) return ERR;
    rec_t func;
    memset(&func, 0, sizeof func);
    func.kind = K_FUNC;
    func.name = name;
    func.sot = proto_number;
    func.extra = flags;
    return add_rec(e, &func);
}

/* The FUNC_PROTO and FUNC candidate flagged FUNC_PIECE for each of the `ncopies` copies
 * whose parameters differ from the definition's (`nparams` items at `first`). */
static int add_pieces(encoder_t *e, name_t name, int64_t returns, size_t first,
                      size_t nparams, const copy_t *copies, size_t ncopies)
{
    for (size_t i = 0; i < ncopies; i++) {
        size_t start = e->items.n;
        int r = copy_parameters(e, copies[i].node, first, nparams);
        if (r <= 0) {
            if (r < 0) return -1;
            continue;
        }
        if (add_function(e, name, returns, start, FUNC_CANDIDATE | FUNC_PIECE) == ERR)
            return -1;
    }
    return 0;
}

/* `_function(...)`: a FUNC candidate and its FUNC_PROTO for definition node t; `linked`:
 * a symbol of its name is at its address or at one of its copies'. */
static int function(encoder_t *e, int t, const attr_t *view[NSLOTS], int linked,
                    const copy_t *copies, size_t ncopies)
{
    e->decl_tags.n = 0;
    size_t first = e->items.n;
    for (int c = e->nodes.a[t].first_child; c >= 0; c = e->nodes.a[c].next) {
        const node_t *p = &e->nodes.a[c];
        if (p->tag == TAG_formal_parameter) {
            const attr_t *pname = node_attr(e, p, S_NAME);
            if (!pname || !pname->s.len) { e->items.n = first; return 0; }
            int64_t type = ref_number(e, node_attr(e, p, S_TYPE));
            if (type == ERR) return -1;
            if (type == FAILED) { e->items.n = first; return skip(e, R_FUNC_PARAM, 0); }
            if (push_item(e, pname->s, type, 0)) return -1;
            if (collect_decl_tags(e, c, (i128)(e->items.n - first - 1))) return -1;
        } else if (e->nodes.a[c].tag == TAG_unspecified_parameters) {
            if (push_item(e, EMPTY, 0, 0)) return -1;
        }
    }
    int64_t returns = ref_number(e, view[S_TYPE]);
    if (returns == ERR) return -1;
    if (returns == FAILED) {
        e->decl_tags.n = 0;
        e->items.n = first;
        return skip(e, R_FUNC_RET, 0);
    }
    if (collect_decl_tags(e, t, -1)) return -1;
    i128 flags = FUNC_CANDIDATE | (linked ? FUNC_LINKED : 0);
    if (view[S_CALLING_CONVENTION] && view[S_CALLING_CONVENTION]->v == CC_nocall)
        flags |= FUNC_NOCALL;
    if (e->nregisters) {
        int any = moved(e, t);
        for (size_t i = 0; i < ncopies && !any; i++)
            any = moved(e, copies[i].node);
        if (any) flags |= FUNC_MOVED;
    }
    size_t nparams = e->items.n - first;
    int64_t func_number = add_function(e, view[S_NAME]->s, returns, first, flags);
    if (func_number == ERR) return -1;
    if (e->has_symbols && (e->features & F_DECL_TAG_KFUNCS)) {
        int r = e->calls.is_kfunc(e->calls.ctx, view[S_NAME]->s);
        if (r < 0) return -3;
        if (r) {
            static const char kfunc[] = "bpf_kfunc";
            item_t it = {{(const uint8_t *)kfunc, sizeof kfunc - 1}, 0, -1};
            if (VEC_PUSH(e->decl_tags, it)) return fail(e, "out of memory");
        }
    }
    if (add_decl_tags(e, func_number)) return -1;
    return add_pieces(e, view[S_NAME]->s, returns, first, nparams, copies, ncopies);
}

enum { NO_SYMBOL = 2 };

/* Whether definition node t (`view`) is linked: a function symbol of its name at its
 * address or at one of its copies'. 1 linked, 0 not, NO_SYMBOL no symbol of its name (the
 * definition is left out), -1 give the unit up, -3 the caller's lookup failed. */
static int linked_to_symbol(encoder_t *e, const attr_t *view[NSLOTS], const copy_t *copies,
                            size_t ncopies)
{
    if (!e->has_symbols) return view_truthy(view[S_EXTERNAL]) ? 0 : NO_SYMBOL;
    e->low_pcs.n = 0;
    if (view[S_LOW_PC] && VEC_PUSH(e->low_pcs, view[S_LOW_PC]->v))
        return fail(e, "out of memory");
    for (size_t i = 0; i < ncopies; i++)
        if (VEC_PUSH(e->low_pcs, copies[i].low_pc)) return fail(e, "out of memory");
    int linked = 0;
    int r = e->calls.function_symbol(e->calls.ctx, view[S_NAME]->s, e->low_pcs.a,
                                     e->low_pcs.n, &linked);
    if (r < 0) return -3;
    return r ? linked : NO_SYMBOL;
}

/* `_functions()`. Returns -3 when a call to the caller failed. */
static int functions(encoder_t *e)
{
    VEC(copy_t) copies = {0};
    int rc = 0;
    for (size_t i = 0; i < e->programs.n; i++) {
        const node_t *n = &e->nodes.a[e->programs.a[i]];
        if (n->tag != TAG_subprogram || truthy(e, n, S_DECLARATION)) continue;
        const attr_t *origin = node_attr(e, n, S_ABSTRACT_ORIGIN);
        const attr_t *low = node_attr(e, n, S_LOW_PC);
        if (origin && low) {
            copy_t c = {origin->v, i, low->v, e->programs.a[i]};
            if (VEC_PUSH(copies, c)) { free(copies.a); return fail(e, "out of memory"); }
        }
    }
    if (copies.n)
        qsort(copies.a, copies.n, sizeof *copies.a, compare_copies);
    for (size_t i = 0; i < e->programs.n && !rc; i++) {
        int t = e->programs.a[i];
        const node_t *n = &e->nodes.a[t];
        if (n->tag != TAG_subprogram || truthy(e, n, S_DECLARATION)
            || node_attr(e, n, S_ABSTRACT_ORIGIN))
            continue;
        const attr_t *view[NSLOTS];
        declared(e, t, view);
        if (!view[S_NAME] || !view[S_NAME]->s.len) continue;
        /* this definition's out-of-line copies, in DIE order */
        i128 offset = e->nodes.a[t].offset;
        size_t lo = 0, hi = copies.n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (copies.a[mid].origin < offset) lo = mid + 1; else hi = mid;
        }
        size_t end = lo;
        while (end < copies.n && copies.a[end].origin == offset) end++;
        const copy_t *own = copies.n ? copies.a + lo : NULL;  /* NULL + 0 is undefined */
        int linked = linked_to_symbol(e, view, own, end - lo);
        if (linked == NO_SYMBOL) continue;
        rc = linked < 0 ? linked : function(e, t, view, linked, own, end - lo);
    }
    free(copies.a);
    return rc;
}

/* `_variables()`. */
static int variables(encoder_t *e)
{
    if (!e->has_symbols) return 0;
    int every = (e->features & F_GLOBAL_VAR) != 0;
    for (size_t i = 0; i < e->programs.n; i++) {
        int t = e->programs.a[i];
        const node_t *n = &e->nodes.a[t];
        if (n->tag != TAG_variable || truthy(e, n, S_DECLARATION)) continue;
        const attr_t *location = node_attr(e, n, S_LOCATION);
        if (!location) continue;
        const attr_t *view[NSLOTS];
        declared(e, t, view);
        if (!view[S_NAME] || !view[S_NAME]->s.len) continue;
        uint32_t slot;
        int placed = e->calls.place_variable(e->calls.ctx, view[S_NAME]->s, location->v,
                                             every, &slot);
        if (placed < 0) return -3;
        if (!placed) continue;
        int64_t type = ref_number(e, view[S_TYPE]);
        if (type == ERR) return -1;
        if (type == FAILED || type == 0) {
            if (skip(e, R_VAR, 0)) return -1;
            continue;
        }
        if (e->calls.var_extra(e->calls.ctx, slot, view_truthy(view[S_EXTERNAL])) < 0)
            return -3;
        rec_t r;
        memset(&r, 0, sizeof r);
        r.kind = K_VAR;
        r.name = view[S_NAME]->s;
        r.sot = type;
        r.var_extra = slot;
        int64_t var = add_rec(e, &r);
        if (var == ERR) return -1;
        e->decl_tags.n = 0;
        if (collect_decl_tags(e, t, -1) || add_decl_tags(e, var)) return -1;
    }
    return 0;
}

/* Records of the unit just read. 0 done, -1 give the unit up (e->why), -3 a call to the
 * caller failed (e->calls). */
int convert_unit(encoder_t *e)
{
    e->recs.n = e->items.n = e->owners.n = 0;
    e->decl_tags.n = e->programs.n = e->pending_skips.n = 0;
    e->index_type = UNSET;
    e->depth = 0;
    intern_clear(&e->nontype);
    if (VEC_RESERVE(e->local, e->nodes.n + 1)) return fail(e, "out of memory");
    for (size_t i = 0; i < e->nodes.n; i++) e->local.a[i] = UNSET;
    e->local.n = e->nodes.n;
    if (alloc_rec(e, -1) == ERR) return -1;  /* void */
    e->recs.a[0].set = 1;
    for (size_t i = 0; i < e->types.n; i++) {
        int t = e->types.a[i];
        uint32_t tag = e->nodes.a[t].tag;
        if (tag == TAG_subprogram || tag == TAG_variable) {
            if (VEC_PUSH(e->programs, t)) return fail(e, "out of memory");
        } else if (e->local.a[t] == UNSET) {
            if (tag == TAG_structure_type || tag == TAG_class_type || tag == TAG_union_type
                || tag == TAG_pointer_type || tag == TAG_enumeration_type) {
                int64_t num = alloc_rec(e, t);
                if (num == ERR) return -1;
                e->local.a[t] = num;
            } else if (number_node(e, t) == ERR) {
                return -1;
            }
        }
    }
    for (size_t number = 0; number < e->owners.n; number++) {
        int t = e->owners.a[number];
        if (t < 0) continue;
        const node_t *n = &e->nodes.a[t];
        if (n->tag == TAG_pointer_type && n->first_child < 0) {
            int64_t target = ref_number(e, node_attr(e, n, S_TYPE));
            if (target == ERR) return -1;
            rec_t r;
            memset(&r, 0, sizeof r);
            r.kind = K_PTR;
            r.name = EMPTY;
            r.sot = target == FAILED ? 0 : target;
            r.set = 1;
            e->recs.a[number] = r;
            continue;
        }
        if (make_record(e, t, (int64_t)number)) return -1;
        if (e->decl_tags.n && add_decl_tags(e, (int64_t)number)) return -1;
    }
    int rc;
    if ((e->features & F_FUNC) && (rc = functions(e))) return rc;
    if ((e->features & (F_VAR | F_GLOBAL_VAR)) && (rc = variables(e))) return rc;
    for (size_t i = 0; i < e->recs.n; i++)
        if (!e->recs.a[i].set) return fail(e, "a record left unmade");
    return 0;
}

/* Adds `count` of (code, tag) to `counts`, a list of distinct pairs in the order first
 * seen. */
static int count_into(skip_counts_t *counts, const skip_t *s)
{
    for (size_t i = 0; i < counts->n; i++) {
        skip_t *c = &counts->a[i];
        if (c->code == s->code && c->tag == s->tag) { c->count += s->count; return 0; }
    }
    return VEC_PUSH(*counts, *s);
}

/* A unit done: its skips and skipped tags join the encoder's counts. 0, or -2 when out
 * of memory. */
int commit_skips(encoder_t *e)
{
    for (size_t i = 0; i < e->pending_skips.n; i++)
        if (count_into(&e->skips, &e->pending_skips.a[i])) return -2;
    for (size_t i = 0; i < e->pending_tags.n; i++)
        if (count_into(&e->skipped_tags, &e->pending_tags.a[i])) return -2;
    e->pending_skips.n = e->pending_tags.n = 0;
    e->type_dies += e->types.n;
    return 0;
}
