/* Reading one unit's DIEs (dies.py's DieReader): abbreviations, the walk, attributes.
 * Every read is checked against its section; a read outside it, or anything the
 * reference reader would read differently, gives the unit up (fail()).
 */
#include "core.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dwarf.h"

/* Quiet child tags (dwarf_numbers.QUIET_CHILD_TAGS): not counted when skipped. */
static int quiet_child(uint32_t tag)
{
    return tag == TAG_formal_parameter || tag == TAG_unspecified_parameters
        || tag == TAG_LLVM_annotation;
}

static int type_tag(uint32_t tag)
{
    switch (tag) {
    case TAG_array_type: case TAG_class_type: case TAG_enumeration_type:
    case TAG_pointer_type: case TAG_reference_type: case TAG_string_type:
    case TAG_structure_type: case TAG_subroutine_type: case TAG_typedef:
    case TAG_union_type: case TAG_ptr_to_member_type: case TAG_set_type:
    case TAG_base_type: case TAG_const_type: case TAG_file_type: case TAG_packed_type:
    case TAG_volatile_type: case TAG_restrict_type: case TAG_interface_type:
    case TAG_unspecified_type: case TAG_shared_type: case TAG_rvalue_reference_type:
    case TAG_coarray_type: case TAG_dynamic_type: case TAG_atomic_type:
    case TAG_immutable_type:
        return 1;
    }
    return 0;
}

static int child_tag(uint32_t tag)
{
    switch (tag) {
    case TAG_member: case TAG_enumerator: case TAG_subrange_type: case TAG_formal_parameter:
    case TAG_unspecified_parameters: case TAG_generic_subrange: case TAG_inheritance:
    case TAG_variant_part: case TAG_LLVM_annotation:
        return 1;
    }
    return 0;
}

/* dwarf_numbers.WANTED_ATTRS, through the generated wanted_attrs.def: the slot and value
 * kind of `attr` for a DIE of `tag`; V_NONE when not wanted. role_of gives a tag the
 * role its table is read in, so the tag alone decides, as in dies.py. */
static int wanted(uint32_t tag, uint32_t attr, int8_t *slot)
{
    switch ((uint64_t)tag << 32 | attr) {
#define WANTED_ATTR(tag, attr, slot_name, value_kind) \
    case (uint64_t)tag << 32 | attr: *slot = slot_name; return value_kind;
#include "wanted_attrs.def"
#undef WANTED_ATTR
    }
    return V_NONE;
}

/* Form classes. */
enum { C_FIXED, C_DATA16, C_ULEB, C_SLEB, C_STRING, C_BLOCK, C_FLAG_PRESENT, C_IMPLICIT,
       C_BAD };

/* Class and, for fixed forms, byte size of `form` in this unit; C_BAD: the reference
 * raises (unknown form, DW_FORM_indirect, an address size it cannot read). */
static int form_class(const unit_t *u, uint32_t form, int *size)
{
    int addr_ok = u->address_size == 1 || u->address_size == 2 || u->address_size == 4
        || u->address_size == 8;
    switch (form) {
    case FORM_data1: case FORM_ref1: case FORM_flag: case FORM_strx1: case FORM_addrx1:
        *size = 1; return C_FIXED;
    case FORM_data2: case FORM_ref2: case FORM_strx2: case FORM_addrx2:
        *size = 2; return C_FIXED;
    case FORM_strx3: case FORM_addrx3:
        *size = 3; return C_FIXED;
    case FORM_data4: case FORM_ref4: case FORM_strx4: case FORM_addrx4: case FORM_ref_sup4:
        *size = 4; return C_FIXED;
    case FORM_data8: case FORM_ref8: case FORM_ref_sig8: case FORM_ref_sup8:
        *size = 8; return C_FIXED;
    case FORM_data16:
        *size = 16; return C_DATA16;
    case FORM_strp: case FORM_line_strp: case FORM_sec_offset: case FORM_GNU_strp_alt:
    case FORM_GNU_ref_alt: case FORM_strp_sup:
        *size = u->offset_size; return C_FIXED;
    case FORM_ref_addr:
        if (u->version >= 3) { *size = u->offset_size; return C_FIXED; }
        if (!addr_ok) return C_BAD;
        *size = u->address_size; return C_FIXED;
    case FORM_addr:
        if (!addr_ok) return C_BAD;
        *size = u->address_size; return C_FIXED;
    case FORM_flag_present: *size = 0; return C_FLAG_PRESENT;
    case FORM_implicit_const: *size = 0; return C_IMPLICIT;
    case FORM_udata: case FORM_ref_udata: case FORM_strx: case FORM_addrx:
    case FORM_loclistx: case FORM_rnglistx: case FORM_GNU_addr_index:
    case FORM_GNU_str_index:
        return C_ULEB;
    case FORM_sdata: return C_SLEB;
    case FORM_string: return C_STRING;
    case FORM_exprloc: case FORM_block: case FORM_block1: case FORM_block2:
    case FORM_block4:
        return C_BLOCK;
    }
    return C_BAD;
}

static int is_string_form(uint32_t f)
{
    return f == FORM_strp || f == FORM_line_strp || f == FORM_string || f == FORM_strx
        || f == FORM_strx1 || f == FORM_strx2 || f == FORM_strx3 || f == FORM_strx4
        || f == FORM_GNU_str_index;
}

static int is_addrx_form(uint32_t f)
{
    return f == FORM_addrx || f == FORM_addrx1 || f == FORM_addrx2 || f == FORM_addrx3
        || f == FORM_addrx4 || f == FORM_GNU_addr_index;
}

static int is_const_form(uint32_t f)
{
    return f == FORM_data1 || f == FORM_data2 || f == FORM_data4 || f == FORM_data8
        || f == FORM_udata || f == FORM_sdata || f == FORM_implicit_const;
}

/* What the wanted reading makes of (kind, form): 1 a value, 0 nothing (the reference
 * leaves the attribute out), -1 something this core does not mirror. */
static int regular(int vkind, uint32_t form, int cls)
{
    if (cls == C_DATA16)
        return 0;
    if (cls == C_FLAG_PRESENT)
        return vkind == V_FLAG ? 1 : -1;
    switch (vkind) {
    case V_STRING:
        return is_string_form(form) ? 1 : -1;
    case V_REF:
        return (form == FORM_ref1 || form == FORM_ref2 || form == FORM_ref4
                || form == FORM_ref8 || form == FORM_ref_udata || form == FORM_ref_addr)
            ? 1 : -1;
    case V_CONST:
        return is_const_form(form);
    case V_LOCATION:
        return is_const_form(form) || cls == C_BLOCK;
    case V_FLAG:
        return (form == FORM_flag || is_const_form(form)) ? 1 : -1;
    case V_SECTION_OFFSET:
        return (form == FORM_sec_offset || is_const_form(form)) && form != FORM_sdata
            ? 1 : -1;
    case V_TEXT:
        if (cls == C_IMPLICIT) return -1;
        return is_string_form(form);
    case V_ADDRESS:
        return form == FORM_addr || is_addrx_form(form) || cls == C_IMPLICIT;
    case V_ADDRESS_EXPR:
        return cls == C_BLOCK || cls == C_IMPLICIT;
    case V_PARAM_LOCATION:
        /* an implicit constant: the reference keeps it as it is; not mirrored */
        if (cls == C_IMPLICIT) return -1;
        return cls == C_BLOCK || form == FORM_sec_offset || form == FORM_loclistx;
    }
    return 0;
}

int fail(encoder_t *e, const char *fmt, ...)
{
    if (!e->bad) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->why, sizeof e->why, fmt, ap);
        va_end(ap);
        e->bad = 1;
    }
    return -1;
}

/* -- cursor ---------------------------------------------------------------------- */

/* ULEB128 at *pos of buf[0..size); sets *over when the value needs more than 64 bits. */
static inline uint64_t rd_uleb(encoder_t *e, const uint8_t *buf, uint64_t size,
                               uint64_t *pos, int *over)
{
    unsigned __int128 v = 0;
    uint64_t p = *pos;
    unsigned shift = 0;
    for (;;) {
        if (p >= size) { fail(e, "LEB128 past the end of its section"); *pos = size; return 0; }
        uint8_t b = buf[p++];
        if (shift < 120) v |= (unsigned __int128)(b & 0x7F) << shift;
        else if (b & 0x7F) *over = 1;
        shift += 7;
        if (b < 0x80) break;
    }
    if (v >> 64) *over = 1;
    *pos = p;
    return (uint64_t)v;
}

/* SLEB128, likewise: *over when the value is outside int64. */
static inline int64_t rd_sleb(encoder_t *e, const uint8_t *buf, uint64_t size,
                              uint64_t *pos, int *over)
{
    unsigned __int128 v = 0;
    uint64_t p = *pos;
    unsigned shift = 0;
    uint8_t b;
    for (;;) {
        if (p >= size) { fail(e, "LEB128 past the end of its section"); *pos = size; return 0; }
        b = buf[p++];
        if (shift < 120) v |= (unsigned __int128)(b & 0x7F) << shift;
        else if ((b & 0x7F) != ((b & 0x40) ? 0x7F : 0)) *over = 1;
        shift += 7;
        if (b < 0x80) break;
    }
    if (shift < 128 && (b & 0x40)) v |= ~(unsigned __int128)0 << shift;
    i128 s = (i128)v;
    if (s < INT64_MIN || s > INT64_MAX) *over = 1;
    *pos = p;
    return (int64_t)s;
}

/* A NUL-terminated string at `offset` of a section (the reference's _StringCache). */
static int section_string(encoder_t *e, const section_t *sec, uint64_t offset, name_t *out,
                          const char *what)
{
    const uint8_t *p = sec->buf;
    uint64_t n = (uint64_t)sec->len;
    if (offset >= n)
        return fail(e, "string offset outside %s", what);
    const uint8_t *nul = memchr(p + offset, 0, n - offset);
    if (!nul)
        return fail(e, "string outside %s", what);
    if (nul - (p + offset) > UINT32_MAX)
        return fail(e, "string too long");
    out->p = p + offset;
    out->len = (uint32_t)(nul - (p + offset));
    return 0;
}

static int indexed_string(encoder_t *e, uint64_t index, name_t *out)
{
    const unit_t *u = &e->unit;
    if (!e->have_sob)
        return fail(e, "DW_FORM_strx without DW_AT_str_offsets_base");
    i128 pos = (i128)e->sob + (i128)index * u->offset_size;
    if (pos + u->offset_size > (i128)e->str_offsets.len)
        return fail(e, "string index outside .debug_str_offsets");
    uint64_t off = get_uint((const uint8_t *)e->str_offsets.buf + (uint64_t)pos,
                            u->offset_size, e->little);
    return section_string(e, &e->str, off, out, ".debug_str");
}

/* -- abbreviations ------------------------------------------------------------------ */

static int declares(const encoder_t *e, const abbrev_t *ab)
{
    for (uint32_t i = 0; i < ab->nspecs; i++) {
        const spec_t *s = &e->specs.a[ab->spec_first + i];
        if (s->attr == AT_declaration && s->form == FORM_flag_present)
            return 1;
    }
    return 0;
}

/* An abbreviation's (attribute, form) pairs at *pos, appended to e->specs. */
static int read_specs(encoder_t *e, const uint8_t *data, uint64_t size, uint64_t *pos)
{
    int over = 0;
    for (;;) {
        uint64_t attr = rd_uleb(e, data, size, pos, &over);
        uint64_t form = rd_uleb(e, data, size, pos, &over);
        if (e->bad) return -1;
        if (over || attr > UINT32_MAX || form > UINT32_MAX)
            return fail(e, "attribute or form number too large");
        if (attr == 0 && form == 0)
            return 0;
        spec_t s = {(uint32_t)attr, (uint32_t)form, 0, -1, V_NONE, 0, 0};
        if (form == FORM_implicit_const) {
            s.implicit = rd_sleb(e, data, size, pos, &over);
            if (e->bad) return -1;
            if (over) return fail(e, "implicit constant over 64 bits");
        }
        if (VEC_PUSH(e->specs, s)) return -2;
    }
}

static int role_of(encoder_t *e, abbrev_t *ab)
{
    if (ab->tag == TAG_subprogram) return declares(e, ab) ? ROLE_SKIP : ROLE_TYPE;
    if (type_tag(ab->tag)) return ROLE_TYPE;
    if (child_tag(ab->tag)) return ROLE_CHILD;
    if (ab->tag == TAG_compile_unit || ab->tag == TAG_partial_unit) return ROLE_UNIT;
    if (ab->tag == TAG_variable) return ROLE_VARIABLE;
    return ROLE_SKIP;
}

/* Each spec's form class and size (the abbreviation's fixed size for skipping a DIE),
 * and for a DIE the encoder reads, the slot and value kind of the attributes it wants. */
static int classify_specs(encoder_t *e, abbrev_t *ab)
{
    uint32_t seen = 0;
    ab->fixed_size = 0;
    for (uint32_t i = 0; i < ab->nspecs; i++) {
        spec_t *s = &e->specs.a[ab->spec_first + i];
        int sz = 0;
        int cls = form_class(&e->unit, s->form, &sz);
        if (cls == C_BAD)
            return fail(e, "form %#x", s->form);
        s->cls = (uint8_t)cls;
        s->size = (uint8_t)sz;
        if (cls == C_FIXED || cls == C_DATA16 || cls == C_FLAG_PRESENT || cls == C_IMPLICIT) {
            if (ab->fixed_size >= 0) ab->fixed_size += sz;
        } else {
            ab->fixed_size = -1;
        }
        if (ab->role == ROLE_SKIP)
            continue;
        int8_t slot = -1;
        int vk = wanted(ab->tag, s->attr, &slot);
        if (vk == V_NONE)
            continue;
        int r = regular(vk, s->form, cls);
        if (r < 0)
            return fail(e, "attribute %#x in form %#x", s->attr, s->form);
        if (seen & (1u << slot))
            return fail(e, "attribute %#x repeated in an abbreviation", s->attr);
        seen |= 1u << slot;
        if (r > 0) {
            s->slot = slot;
            s->vkind = (uint8_t)vk;
        }
    }
    return 0;
}

/* Every abbreviation of the unit's table, checked as the reference compiles them all. */
static int parse_abbrevs(encoder_t *e)
{
    const uint8_t *data = e->abbrev.buf;
    uint64_t size = (uint64_t)e->abbrev.len;
    uint64_t pos = e->unit.abbrev_offset;
    int over = 0, r;
    e->abbrevs.n = 0;
    e->specs.n = 0;
    for (;;) {
        if (pos >= size)
            return fail(e, "abbreviation table runs past the end of .debug_abbrev");
        uint64_t code = rd_uleb(e, data, size, &pos, &over);
        if (e->bad) return -1;
        if (code == 0)
            break;
        if (code > 1 << 20 || over)
            return fail(e, "abbreviation code %llu too large", (unsigned long long)code);
        uint64_t tag = rd_uleb(e, data, size, &pos, &over);
        if (pos >= size || over || tag > UINT32_MAX)
            return fail(e, "truncated abbreviation");
        abbrev_t ab = {0};
        ab.tag = (uint32_t)tag;
        ab.defined = 1;
        ab.has_children = data[pos++] != 0;
        ab.spec_first = (uint32_t)e->specs.n;
        if ((r = read_specs(e, data, size, &pos))) return r;
        ab.nspecs = (uint32_t)(e->specs.n - ab.spec_first);
        ab.role = role_of(e, &ab);
        if ((r = classify_specs(e, &ab))) return r;
        if (VEC_RESERVE(e->abbrevs, code + 1)) return -2;
        while (e->abbrevs.n <= code) {
            abbrev_t empty = {0};
            e->abbrevs.a[e->abbrevs.n++] = empty;
        }
        e->abbrevs.a[code] = ab;
    }
    return 0;
}

/* -- attributes --------------------------------------------------------------------- */

static int location_value(encoder_t *e, const uint8_t *x, uint64_t n, attr_t *a)
{
    if (n && (x[0] == OP_plus_uconst || x[0] == OP_constu)) {
        uint64_t p = 1;
        int over = 0;
        uint64_t v = rd_uleb(e, x, n, &p, &over);
        if (e->bad) return -1;
        if (over) return fail(e, "location over 64 bits");
        if (p == n) { a->v = v; return 1; }
    }
    return 0;
}

static int address_expression(encoder_t *e, const uint8_t *x, uint64_t n, attr_t *a)
{
    int asz = e->unit.address_size;
    if (!n) return 0;
    if (x[0] == OP_addr && n == 1 + (uint64_t)asz) {
        if (asz > 8) return fail(e, "address size %d", asz);
        a->v = get_uint(x + 1, asz, e->little);
        return 1;
    }
    if (x[0] == OP_addrx || x[0] == OP_GNU_addr_index) {
        uint64_t p = 1;
        int over = 0;
        uint64_t v = rd_uleb(e, x, n, &p, &over);
        if (e->bad) return -1;
        if (over) return fail(e, "address index over 64 bits");
        if (p == n) { a->v = v; a->addr_index = 1; return 1; }
    }
    return 0;
}

/* What one attribute's form holds: a number, a block, or (in a->s) an inline string. */
typedef struct {
    uint64_t raw;
    const uint8_t *block;
    uint64_t block_len;
} form_value_t;

/* Steps *p over one attribute of spec `s`, keeping its value in `fv` (and an inline
 * string in a->s) when `take`. */
static int step_form(encoder_t *e, const spec_t *s, int take, uint64_t *p, attr_t *a,
                     form_value_t *fv)
{
    const uint8_t *buf = e->info.buf;
    uint64_t size = (uint64_t)e->info.len;
    int sz = s->size, over = 0;
    switch (s->cls) {
    case C_FIXED:
    case C_DATA16:
        if (*p + (uint64_t)sz > size)
            return fail(e, "attribute past the end of .debug_info");
        if (take && s->cls == C_FIXED)
            fv->raw = get_uint(buf + *p, sz, e->little);
        *p += (uint64_t)sz;
        return 0;
    case C_FLAG_PRESENT:
    case C_IMPLICIT:
        return 0;
    case C_ULEB:
    case C_SLEB:
        fv->raw = s->cls == C_ULEB ? rd_uleb(e, buf, size, p, &over)
                                   : (uint64_t)rd_sleb(e, buf, size, p, &over);
        if (e->bad) return -1;
        if (over && take) return fail(e, "value over 64 bits");
        return 0;
    case C_STRING: {
        const uint8_t *nul = *p < size ? memchr(buf + *p, 0, size - *p) : NULL;
        if (!nul) return fail(e, "unterminated string");
        if (take) { a->s.p = buf + *p; a->s.len = (uint32_t)(nul - (buf + *p)); }
        *p = (uint64_t)(nul - buf) + 1;
        return 0;
    }
    case C_BLOCK: {
        uint64_t len;
        if (s->form == FORM_exprloc || s->form == FORM_block) {
            len = rd_uleb(e, buf, size, p, &over);
            if (e->bad) return -1;
            if (over) return fail(e, "block length over 64 bits");
        } else {
            int lsz = s->form == FORM_block1 ? 1 : s->form == FORM_block2 ? 2 : 4;
            if (*p + (uint64_t)lsz > size) return fail(e, "block past the end");
            len = get_uint(buf + *p, lsz, e->little);
            *p += (uint64_t)lsz;
        }
        if (len > size - *p) return fail(e, "block past the end of .debug_info");
        fv->block = buf + *p;
        fv->block_len = len;
        *p += len;
        return 0;
    }
    }
    return fail(e, "form %#x", s->form);
}

/* The value of a wanted attribute from what its form held: 1 when `a` holds it, 0 when
 * the attribute says nothing the encoder reads (a location it does not take), -1 on
 * failure. */
static int attr_value(encoder_t *e, const spec_t *s, const form_value_t *fv, attr_t *a)
{
    switch (s->vkind) {
    case V_STRING:
    case V_TEXT:
        a->is_str = 1;
        if (s->form == FORM_string) return 1;
        if (s->form == FORM_strp)
            return section_string(e, &e->str, fv->raw, &a->s, ".debug_str") ? -1 : 1;
        if (s->form == FORM_line_strp)
            return section_string(e, &e->line_str, fv->raw, &a->s, ".debug_line_str") ? -1 : 1;
        return indexed_string(e, fv->raw, &a->s) ? -1 : 1;
    case V_REF:
        a->v = (i128)fv->raw;
        if (s->form != FORM_ref_addr) a->v += (i128)e->unit.offset;
        return 1;
    case V_FLAG:
        if (s->cls == C_FLAG_PRESENT) a->v = 1;
        else if (s->cls == C_IMPLICIT) a->v = s->implicit;
        else if (s->form == FORM_sdata) a->v = (int64_t)fv->raw != 0;
        else a->v = fv->raw != 0;
        return 1;
    case V_PARAM_LOCATION:
        if (s->cls == C_BLOCK) {
            a->v = expression_summary(fv->block, fv->block_len, 1);
            a->loc_kind = LOC_SUMMARY;
        } else {
            a->v = fv->raw;
            a->loc_kind = s->form == FORM_loclistx ? LOC_LIST_INDEX : LOC_LIST;
        }
        return 1;
    case V_CONST:
    case V_SECTION_OFFSET:
    case V_ADDRESS:
    case V_LOCATION:
    case V_ADDRESS_EXPR:
        if (s->cls == C_IMPLICIT) { a->v = s->implicit; return 1; }
        if (s->cls == C_BLOCK)
            return s->vkind == V_LOCATION ? location_value(e, fv->block, fv->block_len, a)
                                          : address_expression(e, fv->block, fv->block_len, a);
        if (s->form == FORM_sdata) a->v = (int64_t)fv->raw;
        else a->v = fv->raw;
        if (s->vkind == V_ADDRESS && is_addrx_form(s->form)) a->addr_index = 1;
        return 1;
    }
    return 0;
}

/* Steps over (want == 0) or reads the attributes of a DIE of abbreviation `ab` at *pos;
 * read values are appended to e->attrs. Returns the number appended, -1 on failure. */
static int read_attrs(encoder_t *e, const abbrev_t *ab, uint64_t *pos, int want)
{
    uint64_t p = *pos;
    int count = 0;
    if (!want && ab->fixed_size >= 0) {
        *pos = p + (uint64_t)ab->fixed_size;
        return 0;
    }
    for (uint32_t i = 0; i < ab->nspecs; i++) {
        const spec_t *s = &e->specs.a[ab->spec_first + i];
        int take = want && s->slot >= 0;
        attr_t a = {0};
        a.slot = (uint8_t)s->slot;
        form_value_t fv = {0, NULL, 0};
        if (step_form(e, s, take, &p, &a, &fv)) return -1;
        if (!take || s->cls == C_DATA16)
            continue;
        int got = attr_value(e, s, &fv, &a);
        if (got < 0) return -1;
        if (got) {
            if (VEC_PUSH(e->attrs, a)) return -2;
            count++;
        }
    }
    *pos = p;
    return count;
}

/* -- the walk ------------------------------------------------------------------------ */

static int new_node(encoder_t *e, uint64_t offset, const abbrev_t *ab, uint32_t first,
                    int nattrs)
{
    node_t n = {offset, ab->tag, first, (uint8_t)nattrs, ab->has_children, -1, -1, -1};
    if (nattrs > 255) return fail(e, "too many attributes");
    if (VEC_PUSH(e->nodes, n)) return -2;
    return (int)(e->nodes.n - 1);
}

static void append_child(encoder_t *e, int parent, int child)
{
    node_t *p = &e->nodes.a[parent];
    if (p->last_child < 0) p->first_child = child;
    else e->nodes.a[p->last_child].next = child;
    p->last_child = child;
}

static int count_skipped(encoder_t *e, uint32_t tag)
{
    if (quiet_child(tag)) return 0;
    for (size_t i = 0; i < e->pending_tags.n; i++)
        if (e->pending_tags.a[i].tag == tag) { e->pending_tags.a[i].count++; return 0; }
    skip_t s = {0, tag, 1};
    return VEC_PUSH(e->pending_tags, s);
}

static int resolve_addresses(encoder_t *e)
{
    const unit_t *u = &e->unit;
    for (size_t i = 0; i < e->types.n; i++) {
        node_t *n = &e->nodes.a[e->types.a[i]];
        if (n->tag != TAG_subprogram && n->tag != TAG_variable) continue;
        for (uint32_t k = 0; k < n->nattrs; k++) {
            attr_t *a = &e->attrs.a[n->attr_first + k];
            if (!a->addr_index) continue;
            if (!e->have_aob) return fail(e, "an address index without DW_AT_addr_base");
            if (u->address_size < 1 || u->address_size > 8)
                return fail(e, "address size %d", u->address_size);
            i128 pos = (i128)e->aob + a->v * u->address_size;
            if (pos + u->address_size > (i128)e->addr.len)
                return fail(e, "address index outside .debug_addr");
            a->v = get_uint((const uint8_t *)e->addr.buf + (uint64_t)pos, u->address_size,
                            e->little);
            a->addr_index = 0;
        }
    }
    return 0;
}

/* Into the children of a DIE: `into` is their parent node (-1: children not kept). */
static int descend(encoder_t *e, int *parent, int *depth, int into)
{
    if (VEC_PUSH(e->stack, *parent)) return -2;
    *parent = into;
    (*depth)++;
    return 0;
}

/* The unit DIE's DW_AT_str_offsets_base and DW_AT_addr_base, read as its attributes
 * `first`.. (dropped from e->attrs after). */
static int take_unit_bases(encoder_t *e, uint32_t first, int nattrs)
{
    e->have_sob = e->have_aob = e->have_lob = 0;
    for (int k = 0; k < nattrs; k++) {
        const attr_t *a = &e->attrs.a[first + k];
        if (a->v < 0)
            return fail(e, "negative section offset");
        if (a->slot == S_STR_OFFSETS_BASE) { e->have_sob = 1; e->sob = (uint64_t)a->v; }
        if (a->slot == S_ADDR_BASE) { e->have_aob = 1; e->aob = (uint64_t)a->v; }
        if (a->slot == S_LOCLISTS_BASE) { e->have_lob = 1; e->lob = (uint64_t)a->v; }
    }
    e->attrs.n = first;
    return 0;
}

int unit_language(encoder_t *e, const unit_t *u, int64_t *language)
{
    const uint8_t *buf = e->info.buf;
    uint64_t size = (uint64_t)e->info.len, pos = u->die_offset;
    int over = 0, r;
    e->unit = *u;
    e->bad = 0;
    e->why[0] = 0;
    *language = -1;
    if (u->end > size || pos >= u->end)
        return fail(e, "unit outside .debug_info");
    if ((r = parse_abbrevs(e))) return r;
    uint64_t code = rd_uleb(e, buf, size, &pos, &over);
    if (e->bad) return -1;
    if (over || !code || code >= e->abbrevs.n || !e->abbrevs.a[code].defined)
        return fail(e, "the unit's DIE uses an undefined abbreviation code");
    const abbrev_t *ab = &e->abbrevs.a[code];
    if (ab->role != ROLE_UNIT) return 1;
    for (uint32_t i = 0; i < ab->nspecs; i++) {
        const spec_t *s = &e->specs.a[ab->spec_first + i];
        if (s->attr == AT_language && s->cls == C_DATA16) return 1;
    }
    e->attrs.n = 0;
    int nattrs = read_attrs(e, ab, &pos, 1);
    if (nattrs < 0) return nattrs;
    int rc = 0;
    for (int k = 0; k < nattrs; k++) {
        i128 v = e->attrs.a[k].v;
        if (e->attrs.a[k].slot != S_LANGUAGE) continue;
        if (v < 0 || v > INT64_MAX) rc = 1;  /* -1 says none here */
        else *language = (int64_t)v;
    }
    e->attrs.n = 0;
    return rc;
}

int read_unit(encoder_t *e)
{
    const unit_t *u = &e->unit;
    const uint8_t *buf = e->info.buf;
    uint64_t size = (uint64_t)e->info.len;
    uint64_t pos = u->die_offset, end = u->end;
    int depth = 0, parent = -1, over = 0, r;
    if (end > size || pos > end)
        return fail(e, "unit outside .debug_info");
    e->nodes.n = e->attrs.n = e->types.n = e->stack.n = e->pending_tags.n = 0;
    e->have_sob = e->have_aob = e->have_lob = 0;
    if ((r = parse_abbrevs(e))) return r;
    uint64_t span = end - u->die_offset;
    if (VEC_RESERVE(e->type_at, span + 1)) return -2;
    memset(e->type_at.a, 0xFF, (span + 1) * sizeof(int32_t));
    e->type_at.n = span + 1;
    while (pos < end) {
        uint64_t die_offset = pos;
        uint64_t code = rd_uleb(e, buf, size, &pos, &over);
        if (e->bad) return -1;
        if (code == 0) {
            if (depth == 0) continue;
            parent = e->stack.a[--e->stack.n];
            depth--;
            continue;
        }
        if (over || code >= e->abbrevs.n || !e->abbrevs.a[code].defined)
            return fail(e, "DIE at %#llx uses an undefined abbreviation code",
                        (unsigned long long)die_offset);
        const abbrev_t *ab = &e->abbrevs.a[code];
        int role = ab->role;
        uint32_t first = (uint32_t)e->attrs.n;
        int nattrs;
        if (role == ROLE_VARIABLE && depth != 1)
            role = ROLE_SKIP;
        if (role == ROLE_CHILD) {
            int leaf_orphan = parent < 0 && !ab->has_children;
            nattrs = read_attrs(e, ab, &pos, !leaf_orphan);
            if (nattrs < 0) return nattrs;
            if (parent >= 0) {
                int child = new_node(e, die_offset, ab, first, nattrs);
                if (child < 0) return child;
                append_child(e, parent, child);
                if (ab->has_children && (r = descend(e, &parent, &depth, child))) return r;
                continue;
            }
            e->attrs.n = first;
            if ((r = count_skipped(e, ab->tag))) return r;
        } else if (role == ROLE_TYPE || role == ROLE_VARIABLE) {
            nattrs = read_attrs(e, ab, &pos, 1);
            if (nattrs < 0) return nattrs;
            int n = new_node(e, die_offset, ab, first, nattrs);
            if (n < 0) return n;
            if (VEC_PUSH(e->types, n)) return -2;
            e->type_at.a[die_offset - u->die_offset] = n;
            if (ab->has_children && (r = descend(e, &parent, &depth, n))) return r;
            continue;
        } else if (role == ROLE_UNIT) {
            nattrs = read_attrs(e, ab, &pos, 1);
            if (nattrs < 0) return nattrs;
            if ((r = take_unit_bases(e, first, nattrs))) return r;
        } else {
            nattrs = read_attrs(e, ab, &pos, 0);
            if (nattrs < 0) return nattrs;
        }
        if (ab->has_children && (r = descend(e, &parent, &depth, -1))) return r;
    }
    return resolve_addresses(e);
}
