/* The C header's hot parts on the type section's words: the shape check and the
 * spelling of definitions; the declarator chains (chain_text) and the speller's context
 * (cspell.h) are shared with diff's spelling (diff/csrc/diffspell.c).
 *
 * emit/c/shape.py, emit/c/spell.py, btf/declarator.py and btf/sizes.py are the
 * reference; this mirrors them for a BTF without a base (a vmlinux), so `dump --format c`
 * makes no Python object per type. The shape check here only answers "certainly
 * spellable" (the reference then is not run) or "maybe not" (the reference runs and
 * gives the message); the spelling gives the reference's text, mentions and enumerators
 * byte for byte. Anything odd (sizes past 2^56, chains past MAX_CHAIN, a by-value loop
 * the caller did not rule out) is declined (ValueError) and the caller runs the
 * reference. Plain C (cdump.h): native/csrc/cdump_bindings.c makes and reads the Python
 * objects. Every read is bounds-checked by index_types (references up to the last id,
 * names inside the string chain); the caller's ids are checked here; no global state. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdump.h"
#include "cspell.h"
#include "failure.h"
#include "grow.h"


int fail(ctx_t *c, const char *what)
{
    if (!c->failed) {
        failed_declined(what);
        c->failed = CTX_DECLINED;
    }
    return -1;
}

int fail_nomem(ctx_t *c)
{
    if (!c->failed) {
        failed_out_of_memory();
        c->failed = CTX_BROKEN;
    }
    return -1;
}


const uint8_t *name_of(const ctx_t *c, uint32_t id, uint32_t *len)
{
    return name_at(c->t, t_name(c->t, idx(c, id)), len);
}

int ctx_init(ctx_t *c, const types_t *t, uint64_t ptr_size)
{
    memset(c, 0, sizeof *c);
    c->t = t;
    c->nids = t->first_id + t->count;
    c->ptr_size = ptr_size;
    if (ZALLOC_EACH(c->nids, ZSLOT(c->state), ZSLOT(c->is_inline), ZSLOT(c->size),
                    ZSLOT(c->align)))
        return fail_nomem(c);
    return 0;
}

void ctx_free(ctx_t *c)
{
    FREE_EACH(c->touches, c->state, c->is_inline, c->size, c->align, c->out.p, c->spelled,
              c->memo_at, c->memo_len, c->memo.p);
}

/* ---- text ---- */

/* text.c reports its own failures. */
int put(ctx_t *c, const void *s, size_t n)
{
    if (!text_put(&c->out, s, n)) return 0;
    if (!c->failed) c->failed = CTX_BROKEN;
    return -1;
}

int puts_(ctx_t *c, const char *s) { return put(c, s, strlen(s)); }

int putf(ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = c->failed ? -1 : text_vprintf(&c->out, fmt, ap);
    va_end(ap);
    if (rc && !c->failed) c->failed = CTX_BROKEN;
    return rc;
}

static int put_tabs(ctx_t *c, int level)
{
    for (int i = 0; i < level; i++)
        if (put(c, "\t", 1)) return -1;
    return 0;
}

/* The display name of `id` (its `___N` name) or its BTF name. */
static int put_display(ctx_t *c, uint32_t id)
{
    if (c->display && c->display[id].p) return put(c, c->display[id].p, c->display[id].len);
    uint32_t len;
    const uint8_t *name = name_of(c, id, &len);
    return put(c, name, len);
}

int put_name(ctx_t *c, uint32_t id)
{
    uint32_t len;
    const uint8_t *name = name_of(c, id, &len);
    return put(c, name, len);
}

static int has_name(const ctx_t *c, uint32_t id)
{
    uint32_t len;
    name_of(c, id, &len);
    return len != 0;
}

/* The definition under way mentions `id` (its spelling's mentions). */
static int mention(ctx_t *c, uint32_t id, int mode)
{
    if (id >= c->nids) return fail(c, "a mention past the last type");
    cdump_spellings_t *s = c->into;
    if (GROW(s->mentions, s->mentions_cap, s->nmentions + 1)) return fail_nomem(c);
    s->mentions[s->nmentions++] = (cdump_mention_t){id, mode != CDUMP_VALUE};
    return 0;
}

/* ---- sizes (btf/sizes.py) ---- */

static uint64_t round_up(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

static uint64_t natural_align(uint64_t size)
{
    uint64_t align = 1;
    while (align < size && align < 16 && size % (align * 2) == 0) align *= 2;
    return align;
}

static uint64_t bitfield_position(uint64_t cur, uint64_t bits, uint64_t unit)
{
    if (cur / unit == (cur + bits - 1) / unit) return cur;
    return round_up(cur, unit);
}

typedef struct {
    uint64_t offset, bits, align, width;
} member_t;

typedef struct {
    int packed;
    uint64_t align, explicit_align;
    uint32_t n;
    member_t *m;
    uint8_t *has_pad;            /* per member index, and n for the end */
    uint64_t *pad_from, *pad_to;
} layout_t;

static void layout_free(layout_t *l)
{
    FREE_EACH(l->m, l->has_pad, l->pad_from, l->pad_to);
}

static int measure(ctx_t *c, uint32_t id, int depth, uint64_t *size, uint64_t *align);

/* TypeSizes._members: the members' placement and whether natural placement misses. */
static int layout_members(ctx_t *c, uint32_t id, int depth, layout_t *l, uint64_t *max_align,
                          uint64_t *largest)
{
    int is_struct = kind_of(c, id) == K_STRUCT, kflag = kflag_of(c, id);
    const uint32_t *items = rest_of(c, id);
    uint64_t cur = 0;
    *max_align = 1;
    *largest = 0;
    for (uint32_t j = 0; j < l->n; j++) {
        uint32_t name_off = items[3 * j], mtype = items[3 * j + 1], word = items[3 * j + 2];
        uint64_t offset = word, bits = 0, size, align;
        if (kflag) {
            bits = word >> 24;
            offset = word & 0xFFFFFF;
        }
        if (measure(c, mtype, depth + 1, &size, &align)) return -1;
        if (bits) {
            l->m[j] = (member_t){offset, bits, align, bits};
            if (name_off && align > *max_align) *max_align = align;
            if (is_struct) {
                uint64_t unit = align * 8;
                if (offset < bitfield_position(cur, bits, unit) || offset % unit + bits > size * 8)
                    l->packed = 1;
                cur = offset + bits;
            }
            if ((bits + 7) / 8 > *largest) *largest = (bits + 7) / 8;
        } else {
            l->m[j] = (member_t){offset, 0, align, size * 8};
            if (align > *max_align) *max_align = align;
            if (offset % (align * 8) || (is_struct && offset < round_up(cur, align * 8)))
                l->packed = 1;
            cur = offset + size * 8;
            if (size > *largest) *largest = size;
        }
    }
    return 0;
}

static void set_pad(layout_t *l, uint32_t at, uint64_t from, uint64_t to)
{
    l->has_pad[at] = 1;
    l->pad_from[at] = from;
    l->pad_to[at] = to;
}

/* sizes._struct_padding */
static void struct_padding(layout_t *l, uint64_t size)
{
    uint64_t cur = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        member_t *m = &l->m[i];
        if (m->offset > cur) {
            uint64_t pos;
            if (l->packed) pos = m->bits ? cur : round_up(cur, 8);
            else if (m->bits) pos = bitfield_position(cur, m->bits, m->align * 8);
            else pos = round_up(cur, m->align * 8);
            if (m->offset > pos) set_pad(l, i, cur, m->offset);
        }
        cur = m->offset + m->width;
    }
    if (cur < size * 8 && round_up(cur, l->align * 8) != size * 8) set_pad(l, l->n, cur, size * 8);
}

/* TypeSizes.layout of struct or union `id`; free with layout_free. */
static int layout(ctx_t *c, uint32_t id, int depth, layout_t *l)
{
    memset(l, 0, sizeof *l);
    l->n = vlen_of(c, id);
    size_t n = l->n + 1;
    if (ZALLOC_EACH(n, ZSLOT(l->m), ZSLOT(l->has_pad), ZSLOT(l->pad_from), ZSLOT(l->pad_to)))
        return fail_nomem(c);
    uint64_t max_align, largest, size = sot_of(c, id);
    if (layout_members(c, id, depth, l, &max_align, &largest)) return -1;
    if (size % max_align) l->packed = 1;
    l->align = l->packed ? 1 : max_align;
    if (kind_of(c, id) == K_STRUCT) {
        struct_padding(l, size);
    } else if (!l->packed && round_up(largest, max_align) < size) {
        if (size <= 8) {
            set_pad(l, l->n, 0, size * 8);
        } else {
            uint64_t wider = max_align * 2;
            while (wider <= size && round_up(largest, wider) < size) wider *= 2;
            if (round_up(largest, wider) == size) l->align = l->explicit_align = wider;
        }
    }
    return 0;
}

static int sized_kind(uint32_t kind)
{
    return kind == K_INT || kind == K_STRUCT || kind == K_UNION || kind == K_ENUM
        || kind == K_DATASEC || kind == K_FLOAT || kind == K_ENUM64;
}

/* TypeSizes.measure: (size, alignment) of `id`, memoized. */
static int measure(ctx_t *c, uint32_t id, int depth, uint64_t *size, uint64_t *align)
{
    if (id == 0) {
        *size = 0;
        *align = 1;
        return 0;
    }
    if (c->state[id] == 2) {
        *size = c->size[id];
        *align = c->align[id];
        return 0;
    }
    if (c->state[id] == 1 || depth > MAX_DEPTH) return fail(c, "types hold themselves by value");
    c->state[id] = 1;
    uint32_t kind = kind_of(c, id);
    uint64_t s = 0, a = 1;
    if (sized_kind(kind)) {
        s = sot_of(c, id);
        if (kind == K_STRUCT || kind == K_UNION) {
            layout_t l;
            int rc = layout(c, id, depth, &l);
            a = l.align;
            layout_free(&l);
            if (rc) return -1;
        } else {
            a = natural_align(s);
        }
    } else if (kind == K_PTR) {
        s = a = c->ptr_size;
    } else if (kind == K_ARRAY) {
        uint64_t es;
        if (measure(c, rest_of(c, id)[0], depth + 1, &es, &a)) return -1;
        uint64_t nelems = rest_of(c, id)[2];
        if (nelems && es > SIZE_LIMIT / nelems) return fail(c, "a type too large to size");
        s = nelems * es;
    } else if (kind == K_TYPEDEF || kind == K_CONST || kind == K_VOLATILE || kind == K_RESTRICT
               || kind == K_TYPE_TAG) {
        if (measure(c, sot_of(c, id), depth + 1, &s, &a)) return -1;
    }
    if (a > SIZE_LIMIT) return fail(c, "a type too large to size");
    c->size[id] = s;
    c->align[id] = a;
    c->state[id] = 2;
    *size = s;
    *align = a;
    return 0;
}

/* ---- spelling (emit/c/spell.py, btf/declarator.py) ---- */

enum { VALUE = CDUMP_VALUE, REF = CDUMP_REF };

int is_qualifier(uint32_t kind)
{
    return kind == K_CONST || kind == K_VOLATILE || kind == K_RESTRICT;
}

static const char *qualifier(uint32_t kind)
{
    return kind == K_CONST ? "const" : kind == K_VOLATILE ? "volatile" : "restrict";
}

static int named_kind(uint32_t kind)
{
    return kind == K_STRUCT || kind == K_UNION || kind == K_ENUM || kind == K_ENUM64
        || kind == K_FWD || kind == K_TYPEDEF;
}

/* DefinitionSpeller._specifier: writes the plain specifier of `id` and returns 1 (with
 * *names: it names a definition), or writes nothing and returns 0. */
static int specifier(ctx_t *c, uint32_t id, int *names, int write)
{
    *names = 0;
    if (id == 0) return write && puts_(c, "void") ? -1 : 1;
    if (!has_name(c, id)) return 0;
    uint32_t kind = kind_of(c, id);
    const char *tag = NULL;
    int display = 1;
    switch (kind) {
    case K_INT: case K_FLOAT: display = 0; break;
    case K_TYPEDEF: break;
    case K_STRUCT: tag = "struct "; break;
    case K_UNION: tag = "union "; break;
    case K_ENUM: case K_ENUM64: tag = "enum "; break;
    case K_FWD: tag = kflag_of(c, id) ? "union " : "struct "; display = 0; break;
    default: return 0;
    }
    *names = named_kind(kind);
    if (!write) return 1;
    if (tag && puts_(c, tag)) return -1;
    if (display ? put_display(c, id) : put_name(c, id)) return -1;
    return 1;
}

static int put_fname(ctx_t *c, const uint8_t *fname, uint32_t flen, int last_ptr)
{
    if (!flen) return 0;
    if (!last_ptr && put(c, " ", 1)) return -1;
    return put(c, fname, flen);
}

static int decl(ctx_t *c, uint32_t id, const uint8_t *fname, uint32_t flen, int level, int mode,
                int depth);
static int struct_text(ctx_t *c, uint32_t id, int level, int depth);
static int enum_text(ctx_t *c, uint32_t id, int level);

/* Declarators._prefix_qualifiers */
static int prefix_qualifiers(ctx_t *c, const uint32_t *chain, int i)
{
    while (i >= 0) {
        uint32_t kind = kind_of(c, chain[i]);
        if (!is_qualifier(kind)) break;
        if (puts_(c, qualifier(kind)) || put(c, " ", 1)) return -2;
        i--;
    }
    return i;
}

static int skip_qualifiers(ctx_t *c, const uint32_t *chain, int i)
{
    while (i >= 0 && is_qualifier(kind_of(c, chain[i]))) i--, c->dropped = 1;
    return i;
}


/* DefinitionSpeller._base */
static int base_text(ctx_t *c, uint32_t id, int mode, int level, int depth)
{
    uint32_t kind = kind_of(c, id);
    int named = has_name(c, id);
    switch (kind) {
    case K_INT: case K_FLOAT:
        return put_name(c, id);
    case K_STRUCT: case K_UNION:
        if (!named) return struct_text(c, id, level, depth + 1);
        if (mention(c, id, mode) || puts_(c, kind == K_STRUCT ? "struct " : "union ")) return -1;
        return put_display(c, id);
    case K_ENUM: case K_ENUM64:
        if (!named) return enum_text(c, id, level);
        if (mention(c, id, mode) || puts_(c, "enum ")) return -1;
        return put_display(c, id);
    case K_FWD:
        if (mention(c, id, mode) || puts_(c, kflag_of(c, id) ? "union " : "struct ")) return -1;
        return put_name(c, id);
    default: /* TYPEDEF */
        if (mention(c, id, mode)) return -1;
        return put_display(c, id);
    }
}

/* DefinitionSpeller._params */
static int params_text(ctx_t *c, uint32_t proto, int level, int depth)
{
    uint32_t n = vlen_of(c, proto);
    const uint32_t *items = rest_of(c, proto);
    if (n == 0 || (n == 1 && items[1] == 0)) return puts_(c, "void");
    for (uint32_t j = 0; j < n; j++) {
        if (j && puts_(c, ", ")) return -1;
        if (j == n - 1 && items[2 * j + 1] == 0) return puts_(c, "...");
        uint32_t len;
        const uint8_t *name = name_at(c->t, items[2 * j], &len);
        if (decl(c, items[2 * j + 1], name, len, level, REF, depth + 1)) return -1;
    }
    return 0;
}

static int is_base_kind(uint32_t kind)
{
    return kind == K_INT || kind == K_FLOAT || kind == K_STRUCT || kind == K_UNION
        || kind == K_ENUM || kind == K_ENUM64 || kind == K_FWD || kind == K_TYPEDEF;
}

/* Declarators._chain: chain[:end] with declarator name `fname`. */
int chain_text(ctx_t *c, const uint32_t *chain, int end, const uint8_t *fname,
                      uint32_t flen, int level, int mode, int depth)
{
    if (depth > MAX_DEPTH) return fail(c, "declarators nested too deep");
    int last_ptr = 1;
    int i = end - 1;
    while (i >= 0) {
        uint32_t id = chain[i--];
        if (id == 0 || id == CHAIN_CUT) {
            if ((i = prefix_qualifiers(c, chain, i)) == -2) return -1;
            if (id == 0 ? puts_(c, "void")
                : c->diff ? c->diff->other(c, id) : fail(c, "a chain cut short"))
                return -1;
            last_ptr = 0;
            continue;
        }
        uint32_t kind = kind_of(c, id);
        if (is_base_kind(kind)) {
            if ((i = prefix_qualifiers(c, chain, i)) == -2) return -1;
            if (c->diff ? c->diff->base(c, id) : base_text(c, id, mode, level, depth)) return -1;
        } else if (kind == K_PTR) {
            if (puts_(c, last_ptr ? "*" : " *")) return -1;
        } else if (is_qualifier(kind)) {
            if (put(c, " ", 1) || puts_(c, qualifier(kind))) return -1;
        } else if (kind == K_TYPE_TAG) {
            if (puts_(c, kflag_of(c, id) ? " __attribute__((" : " __attribute__((btf_type_tag(\"")
                || put_name(c, id) || puts_(c, kflag_of(c, id) ? "))" : "\")))"))
                return -1;
        } else if (kind == K_ARRAY) {
            i = skip_qualifiers(c, chain, i);
            uint32_t nelems = rest_of(c, id)[2];
            if (i < 0) {
                if (put_fname(c, fname, flen, last_ptr)) return -1;
                return putf(c, "[%" PRIu32 "]", nelems);
            }
            int multidim = kind_of(c, chain[i]) == K_ARRAY;
            if (flen && !last_ptr && put(c, " ", 1)) return -1;
            if (!multidim && put(c, "(", 1)) return -1;
            if (chain_text(c, chain, i + 1, fname, flen, level, mode, depth + 1)) return -1;
            if (!multidim && put(c, ")", 1)) return -1;
            return putf(c, "[%" PRIu32 "]", nelems);
        } else if (kind == K_FUNC_PROTO) {
            i = skip_qualifiers(c, chain, i);
            if (i >= 0) {
                if (puts_(c, " (")
                    || chain_text(c, chain, i + 1, fname, flen, level, mode, depth + 1)
                    || put(c, ")", 1))
                    return -1;
            } else if (put_fname(c, fname, flen, last_ptr)) {
                return -1;
            }
            if (put(c, "(", 1)
                || (c->diff ? c->diff->params(c, id, depth) : params_text(c, id, level, depth))
                || put(c, ")", 1))
                return -1;
            return 0;
        } else if (c->diff && c->diff->other(c, id)) {   /* the header: nothing */
            return -1;
        }
        last_ptr = kind == K_PTR;
    }
    return put_fname(c, fname, flen, last_ptr);
}

/* DefinitionSpeller._decl: `fname` declared with type `id`. */
static int decl(ctx_t *c, uint32_t id, const uint8_t *fname, uint32_t flen, int level, int mode,
                int depth)
{
    /* The fast path (_simple_decl): `T name` and `T *name`. */
    int names, simple;
    int through_pointer = id != 0 && kind_of(c, id) == K_PTR;
    uint32_t spelled = through_pointer ? sot_of(c, id) : id;
    simple = specifier(c, spelled, &names, 0);
    if (simple) {
        if (names && mention(c, spelled, through_pointer ? REF : mode)) return -1;
        if (specifier(c, spelled, &names, 1) < 0) return -1;
        if (through_pointer) {
            if (puts_(c, " *")) return -1;
        } else if (flen && put(c, " ", 1)) {
            return -1;
        }
        return put(c, fname, flen);
    }
    uint32_t chain[MAX_CHAIN];
    int n = 0;
    for (;;) {
        if (n == MAX_CHAIN) return fail(c, "a declarator chain too long");
        chain[n++] = id;
        if (id == 0) break;
        uint32_t kind = kind_of(c, id);
        if (kind == K_ARRAY) id = rest_of(c, id)[0];
        else if (kind == K_PTR || is_qualifier(kind) || kind == K_TYPE_TAG || kind == K_FUNC_PROTO)
            id = sot_of(c, id);
        else break;
    }
    int base_mode = mode;
    for (int i = n - 2; i >= 0; i--) {
        uint32_t kind = kind_of(c, chain[i]);
        if (kind == K_ARRAY) {
            base_mode = VALUE;
            break;
        }
        if (kind == K_PTR || kind == K_FUNC_PROTO) {
            base_mode = REF;
            break;
        }
    }
    return chain_text(c, chain, n, fname, flen, level, base_mode, depth + 1);
}

/* DefinitionSpeller._padding: unnamed bit-fields from bit `cur` to bit `end`. */
static int padding_text(ctx_t *c, uint64_t cur, uint64_t end, int level, int packed)
{
    const char *long64 = c->ptr_size == 8 ? "long" : "long long";
    while (cur < end) {
        uint64_t boundary = round_up(cur, 64);
        if (end >= boundary + 64 && (cur == boundary || !packed)) {
            if (put(c, "\n", 1) || put_tabs(c, level) || putf(c, "%s: 64;", long64)) return -1;
            cur = boundary + 64;
            continue;
        }
        uint64_t stop = boundary > cur ? boundary : cur + 64;
        if (stop > end) stop = end;
        static const uint64_t units[] = {8, 16, 32, 64};
        const char *unit_names[] = {"char", "short", "int", long64};
        for (int u = 0; u < 4; u++) {
            if (cur / units[u] == (stop - 1) / units[u]) {
                if (put(c, "\n", 1) || put_tabs(c, level)
                    || putf(c, "%s: %" PRIu64 ";", unit_names[u], stop - cur))
                    return -1;
                break;
            }
        }
        cur = stop;
    }
    return 0;
}

/* DefinitionSpeller._struct */
static int struct_text(ctx_t *c, uint32_t id, int level, int depth)
{
    if (depth > MAX_DEPTH) return fail(c, "structs nested too deep");
    int is_struct = kind_of(c, id) == K_STRUCT, kflag = kflag_of(c, id);
    if (puts_(c, is_struct ? "struct " : "union ")) return -1;
    if (has_name(c, id) && (put_display(c, id) || put(c, " ", 1))) return -1;
    if (put(c, "{", 1)) return -1;
    layout_t l;
    int rc = -1;
    if (layout(c, id, depth, &l)) goto done;
    const uint32_t *items = rest_of(c, id);
    int any = 0;
    for (uint32_t j = 0; j <= l.n; j++) {
        if (l.has_pad[j]) {
            if (padding_text(c, l.pad_from[j], l.pad_to[j], level + 1, l.packed)) goto done;
            any = 1;
        }
        if (j == l.n) break;
        uint32_t len, word = items[3 * j + 2];
        const uint8_t *name = name_at(c->t, items[3 * j], &len);
        if (put(c, "\n", 1) || put_tabs(c, level + 1)
            || decl(c, items[3 * j + 1], name, len, level + 1, VALUE, depth + 1))
            goto done;
        if (kflag && word >> 24 ? putf(c, ": %" PRIu32 ";", word >> 24) : put(c, ";", 1)) goto done;
        any = 1;
    }
    if (any && (put(c, "\n", 1) || put_tabs(c, level))) goto done;
    if (put(c, "}", 1)) goto done;
    if (l.packed) {
        if (puts_(c, " __attribute__((packed))")) goto done;
    } else if (l.explicit_align) {
        if (putf(c, " __attribute__((aligned(%" PRIu64 ")))", l.explicit_align)) goto done;
    }
    rc = 0;
done:
    layout_free(&l);
    return rc;
}

/* DefinitionSpeller._natural_enum_size */
static uint64_t natural_enum_size(ctx_t *c, uint32_t id)
{
    uint32_t kind = kind_of(c, id), n = vlen_of(c, id), step = kind == K_ENUM64 ? 3 : 2;
    if (!n) return 4;
    const uint32_t *items = rest_of(c, id);
    if (!kflag_of(c, id)) {
        for (uint32_t j = 0; j < n; j++)
            if (enumerator_value(kind, items + step * j) > 0xFFFFFFFFULL) return 8;
        return 4;
    }
    int64_t low = INT64_MAX, high = INT64_MIN;
    for (uint32_t j = 0; j < n; j++) {
        int64_t v = enumerator_signed(kind, enumerator_value(kind, items + step * j));
        if (v < low) low = v;
        if (v > high) high = v;
    }
    if ((low >= 0 && high <= 0xFFFFFFFFLL) || (low >= -(1LL << 31) && high < (1LL << 31)))
        return 4;
    return 8;
}

static int enumerator_line(ctx_t *c, uint32_t kind, int is_signed, const uint32_t *item,
                           int level)
{
    uint32_t len;
    const uint8_t *name = name_at(c->t, item[0], &len);
    cdump_spellings_t *s = c->into;
    size_t occurrence = s->nenumerators - s->items[s->nitems - 1].enumerator_at;
    if (GROW(s->enumerators, s->enumerators_cap, s->nenumerators + 1)) return fail_nomem(c);
    s->enumerators[s->nenumerators++] = item[0];
    const char *suffix = NULL;
    size_t slen = 0;
    if (c->suffix && c->suffix(c->suffix_arg, c->spelling, occurrence, &suffix, &slen)) {
        c->failed = CTX_BROKEN;   /* the callback reported it */
        return -1;
    }
    if (put(c, "\n", 1) || put_tabs(c, level) || put(c, name, len)) return -1;
    if (suffix && put(c, suffix, slen)) return -1;
    uint64_t value = enumerator_value(kind, item);
    if (is_signed) {
        int64_t v = enumerator_signed(kind, value);
        return kind == K_ENUM64 ? putf(c, " = %" PRId64 "LL,", v) : putf(c, " = %" PRId64 ",", v);
    }
    return kind == K_ENUM64 ? putf(c, " = %" PRIu64 "ULL,", value) : putf(c, " = %" PRIu64 ",", value);
}

/* DefinitionSpeller._enum */
static int enum_text(ctx_t *c, uint32_t id, int level)
{
    uint32_t kind = kind_of(c, id), n = vlen_of(c, id), step = kind == K_ENUM64 ? 3 : 2;
    if (puts_(c, "enum ")) return -1;
    if (has_name(c, id)) {
        if (put_display(c, id)) return -1;
        if (!n) return 0;
        if (put(c, " ", 1)) return -1;
    } else {
        c->is_inline[id] = 1;
    }
    if (put(c, "{", 1)) return -1;
    const uint32_t *items = rest_of(c, id);
    for (uint32_t j = 0; j < n; j++)
        if (enumerator_line(c, kind, kflag_of(c, id), items + step * j, level + 1)) return -1;
    if (put(c, "\n", 1) || put_tabs(c, level) || put(c, "}", 1)) return -1;
    uint64_t size = sot_of(c, id);
    const char *mode = size == c->ptr_size ? "word" : size == 1 ? "byte" : size == 2 ? "HI"
                       : size == 8 ? "DI" : NULL;
    if (mode && size != natural_enum_size(c, id))
        return putf(c, " __attribute__((mode(%s)))", mode);
    return 0;
}

static int is_va_list(ctx_t *c, uint32_t id, const char *what)
{
    uint32_t len;
    const uint8_t *name = name_of(c, id, &len);
    return len == strlen(what) && !memcmp(name, what, len);
}

/* spell.is_builtin_typedef: a typedef the compiler defines itself (bpftool leaves it out;
 * a struct, union, enum or fwd of that name is an ordinary definition). */
static int is_builtin_typedef(ctx_t *c, uint32_t id)
{
    return kind_of(c, id) == K_TYPEDEF && is_va_list(c, id, "__builtin_va_list");
}

/* A new spelling of `id` in c->into, its text from here on in c->out. */
static int spelling_start(ctx_t *c, uint32_t id)
{
    cdump_spellings_t *s = c->into;
    if (GROW(s->items, s->items_cap, s->nitems + 1)) return fail_nomem(c);
    s->items[s->nitems++] = (cdump_spelling_t){id, c->out.len, 0, s->nmentions, 0,
                                               s->nenumerators, 0};
    c->spelling = id;
    return 0;
}

/* The spelling under way is whole (or, rc nonzero, failed: the call stops). */
static int spelling_end(ctx_t *c, int rc)
{
    if (rc) return c->failed ? -1 : fail(c, "spelling failed");
    cdump_spellings_t *s = c->into;
    cdump_spelling_t *one = &s->items[s->nitems - 1];
    one->text_len = c->out.len - one->text_at;
    one->nmentions = s->nmentions - one->mention_at;
    one->nenumerators = s->nenumerators - one->enumerator_at;
    return 0;
}

/* DefinitionSpeller.render: (text, [(id, mode) mentioned], [enumerator]) of definition d. */
static int render(ctx_t *c, uint32_t d)
{
    if (spelling_start(c, d)) return -1;
    uint32_t kind = kind_of(c, d);
    int rc;
    if (kind == K_STRUCT || kind == K_UNION) {
        rc = struct_text(c, d, 0, 0);
    } else if (kind == K_ENUM || kind == K_ENUM64) {
        rc = enum_text(c, d, 0);
    } else if (kind == K_FWD) {
        rc = puts_(c, kflag_of(c, d) ? "union " : "struct ") || put_name(c, d);
    } else if (sot_of(c, d) == 0 && is_va_list(c, d, "__gnuc_va_list")) {
        rc = puts_(c, "typedef __builtin_va_list __gnuc_va_list");
    } else {
        int shown = c->display && c->display[d].p;
        uint32_t len;
        const uint8_t *name = shown ? (const uint8_t *)c->display[d].p : name_of(c, d, &len);
        size_t nlen = shown ? c->display[d].len : len;
        if (nlen > UINT32_MAX) return fail(c, "a name too long");
        rc = puts_(c, "typedef ") || decl(c, sot_of(c, d), name, (uint32_t)nlen, 0, REF, 0);
    }
    return spelling_end(c, rc || puts_(c, ";\n\n"));
}

/* The spellings of c->into put in id order (each id spelled once). */
static int by_id(ctx_t *c)
{
    cdump_spellings_t *s = c->into;
    uint32_t *at = malloc(c->nids * sizeof *at);
    cdump_spelling_t *items = malloc((s->nitems ? s->nitems : 1) * sizeof *items);
    if (!at || !items) {
        free(at);
        free(items);
        return fail_nomem(c);
    }
    memset(at, 0xFF, c->nids * sizeof *at);
    for (size_t k = 0; k < s->nitems; k++) at[s->items[k].id] = (uint32_t)k;
    size_t n = 0;
    for (uint32_t id = 0; id < c->nids; id++)
        if (at[id] != UINT32_MAX) items[n++] = s->items[at[id]];
    free(at);
    free(s->items);
    s->items = items;
    s->items_cap = s->nitems;
    return 0;
}

/* c._Header._definitions: the definitions' spellings, in id order. */
static int definitions(ctx_t *c)
{
    const types_t *t = c->t;
    uint32_t first = t->first_id, *anonymous = malloc((t->count + 1) * sizeof *anonymous);
    uint8_t *is_def = calloc(c->nids, 1);
    uint32_t nanon = 0;
    int rc = -1;
    if (!anonymous || !is_def) {
        fail_nomem(c);
        goto done;
    }
    for (uint32_t id = first; id < c->nids; id++) {
        uint32_t kind = kind_of(c, id);
        if (has_name(c, id)) {
            if (named_kind(kind) && !is_builtin_typedef(c, id)) is_def[id] = 1;
        } else if (kind == K_ENUM || kind == K_ENUM64) {
            anonymous[nanon++] = id;
        }
    }
    /* Named definitions first (they print anonymous enums inline), then the rest. */
    for (int pass = 0; pass < 2; pass++) {
        uint32_t n = pass ? nanon : c->nids;
        for (uint32_t j = pass ? 0 : first; j < n; j++) {
            uint32_t id = pass ? anonymous[j] : j;
            if (pass ? c->is_inline[id] : !is_def[id]) continue;
            if (render(c, id)) goto done;
        }
    }
    rc = by_id(c);
done:
    free(anonymous);
    free(is_def);
    return rc;
}

/* ---- the shape check (emit/c/shape.py), conservatively ---- */

enum { BY_VALUE, SPELLING };

/* Whether `id` is a named struct or union (c_shape: its tag ends a spelling path). */
static int is_tag(ctx_t *c, uint32_t id)
{
    uint32_t kind = kind_of(c, id);
    return (kind == K_STRUCT || kind == K_UNION) && has_name(c, id);
}

/* The j-th edge of `id` in graph `which` (sizes.by_value_edges, c_shape._spelling_edges),
 * 0 for an edge the walk skips (void, a tag on a spelling path); -1 past the last. */
static int64_t edge_at(ctx_t *c, uint32_t id, int which, uint32_t j)
{
    uint32_t kind = kind_of(c, id), target;
    if (kind == K_STRUCT || kind == K_UNION) {
        if (j >= vlen_of(c, id)) return -1;
        target = rest_of(c, id)[3 * j + 1];
    } else if (kind == K_FUNC_PROTO && which == SPELLING) {
        if (j > vlen_of(c, id)) return -1;
        target = j ? rest_of(c, id)[2 * (j - 1) + 1] : sot_of(c, id);
    } else if (kind == K_ARRAY) {
        if (j) return -1;
        target = rest_of(c, id)[0];
    } else if (kind == K_TYPEDEF || kind == K_CONST || kind == K_VOLATILE || kind == K_RESTRICT
               || kind == K_TYPE_TAG || (kind == K_PTR && which == SPELLING)) {
        if (j) return -1;
        target = sot_of(c, id);
    } else {
        return -1;
    }
    if (target && which == SPELLING && is_tag(c, target)) return 0;
    return target;
}

/* 1 when graph `which` has no loop and no path of more than SAFE_NESTING types, else 0
 * (or -1 out of memory). Iterative depth-first search; depth[] is the longest path down. */
static int shallow_and_acyclic(ctx_t *c, int which)
{
    uint32_t *depth = calloc(c->nids, sizeof *depth);  /* 0 new, UINT32_MAX on the path */
    uint32_t *node = malloc((SAFE_NESTING + 2) * sizeof *node);
    uint32_t *next = malloc((SAFE_NESTING + 2) * sizeof *next);
    int ok = -1;
    if (!depth || !node || !next) {
        fail_nomem(c);
        goto done;
    }
    ok = 1;
    for (uint32_t root = c->t->first_id; root < c->nids && ok == 1; root++) {
        if (depth[root]) continue;
        int top = 0;
        node[0] = root;
        next[0] = 0;
        depth[root] = UINT32_MAX;
        while (top >= 0) {
            uint32_t id = node[top];
            int64_t target = edge_at(c, id, which, next[top]++);
            if (target < 0) {
                uint32_t deepest = 0;
                for (uint32_t j = 0; (target = edge_at(c, id, which, j)) >= 0; j++)
                    if (target && depth[target] > deepest) deepest = depth[target];
                depth[id] = deepest + 1;
                if (depth[id] > SAFE_NESTING) ok = 0;
                top--;
                continue;
            }
            if (target == 0) continue;
            if (depth[target] == UINT32_MAX || top + 1 >= SAFE_NESTING) {
                ok = 0;
                break;
            }
            if (depth[target]) continue;
            depth[target] = UINT32_MAX;
            node[++top] = (uint32_t)target;
            next[top] = 0;
        }
    }
done:
    free(depth);
    free(node);
    free(next);
    return ok;
}

/* No struct needs more than MAX_PADDING bytes of padding (c_shape._padding_problem). */
static int padding_fits(ctx_t *c)
{
    for (uint32_t id = c->t->first_id; id < c->nids; id++) {
        if (kind_of(c, id) != K_STRUCT) continue;
        int kflag = kflag_of(c, id);
        const uint32_t *items = rest_of(c, id);
        int64_t cur = 0, gap = 0;
        for (uint32_t j = 0; j < vlen_of(c, id); j++) {
            uint32_t word = items[3 * j + 2];
            int64_t offset = kflag ? word & 0xFFFFFF : word, bits = kflag ? word >> 24 : 0;
            uint64_t size, align;
            if (!bits && measure(c, items[3 * j + 1], 0, &size, &align)) return -1;
            if (offset - cur > gap) gap = offset - cur;
            cur = offset + (bits ? bits : 8 * (int64_t)size);
        }
        if (8 * (int64_t)sot_of(c, id) - cur > gap) gap = 8 * (int64_t)sot_of(c, id) - cur;
        if (gap > (int64_t)MAX_PADDING_BITS) return 0;
    }
    return 1;
}

static int shape_ok(ctx_t *c)
{
    for (uint32_t id = c->t->first_id; id < c->nids; id++) {
        uint32_t kind = kind_of(c, id);
        if ((kind == K_FWD || kind == K_TYPEDEF) && !has_name(c, id)) return 0;
    }
    int ok = shallow_and_acyclic(c, BY_VALUE);
    if (ok == 1) ok = padding_fits(c);
    if (ok == 1) ok = shallow_and_acyclic(c, SPELLING);
    return ok;
}

/* ---- entry points ---- */

static int start(ctx_t *c, const types_t *t, uint64_t ptr_size)
{
    if (t->first_id != 1 || t->ntabs != 1 || (ptr_size != 4 && ptr_size != 8)) {
        memset(c, 0, sizeof *c);
        return fail(c, "a BTF without a base and a pointer size of 4 or 8");
    }
    return ctx_init(c, t, ptr_size);
}

int cdump_shape_ok(const types_t *t, uint64_t ptr_size)
{
    ctx_t c;
    int ok = start(&c, t, ptr_size) ? -1 : shape_ok(&c);
    ctx_free(&c);
    return ok;
}

void cdump_spellings_free(cdump_spellings_t *s)
{
    free(s->text.p);
    free(s->mentions);
    free(s->enumerators);
    free(s->items);
    memset(s, 0, sizeof *s);
}

/* A spelling call's end: the text made into `out`, and the context freed. */
static int finish(ctx_t *c, cdump_spellings_t *out, int rc)
{
    out->text = c->out;
    c->out = (text_t){0};
    ctx_free(c);
    return rc;
}

int cdump_definitions(const types_t *t, uint64_t ptr_size, cdump_spellings_t *out)
{
    ctx_t c;
    int rc = start(&c, t, ptr_size);
    c.into = out;
    return finish(&c, out, rc ? rc : definitions(&c));
}

int cdump_render(const types_t *t, uint64_t ptr_size, const cdump_name_t *display,
                 const uint32_t *ids, size_t n, cdump_suffix_fn suffix, void *arg,
                 cdump_spellings_t *out)
{
    ctx_t c;
    int rc = start(&c, t, ptr_size);
    c.into = out;
    c.display = display;
    c.suffix = suffix;
    c.suffix_arg = arg;
    for (size_t k = 0; !rc && k < n; k++) {
        if (ids[k] < t->first_id || ids[k] >= c.nids) rc = fail(&c, "ids must be own ids");
        else if (!named_kind(kind_of(&c, ids[k]))) rc = fail(&c, "ids must be definitions");
        else rc = render(&c, ids[k]);
    }
    return finish(&c, out, rc);
}

/* DefinitionSpeller.declaration: (text, [(id, mode) mentioned]) of `name` declared with
 * the prototype of FUNC `fid` (a kfunc's `extern` line). */
static int declaration(ctx_t *c, uint32_t fid, const cdump_name_t *name)
{
    if (fid < c->t->first_id || fid >= c->nids || kind_of(c, fid) != K_FUNC)
        return fail(c, "funcs must be own FUNC ids");
    if (name->len > UINT32_MAX) return fail(c, "a name too long");
    if (spelling_start(c, fid)) return -1;
    return spelling_end(c, decl(c, sot_of(c, fid), (const uint8_t *)name->p,
                                (uint32_t)name->len, 0, REF, 0));
}

int cdump_declarations(const types_t *t, uint64_t ptr_size, const cdump_name_t *display,
                       const uint32_t *funcs, const cdump_name_t *names, size_t n,
                       cdump_spellings_t *out)
{
    ctx_t c;
    int rc = start(&c, t, ptr_size);
    c.into = out;
    c.display = display;
    for (size_t k = 0; !rc && k < n; k++) rc = declaration(&c, funcs[k], &names[k]);
    return finish(&c, out, rc);
}

/* ---- c.type_facts ---- */

int cdump_facts_apply(const types_t *t)
{
    if (t->first_id == 1 && t->ntabs == 1) return 0;
    failed_declined("a BTF without a base");
    return -1;
}

uint32_t cdump_pointer_size(const types_t *t)
{
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t size = t_sot(t, i), len;
        if (t_kind(t, i) != K_INT || (size != 4 && size != 8)) continue;
        const uint8_t *name = name_at(t, t_name(t, i), &len);
        if ((len == 8 && !memcmp(name, "long int", 8))
            || (len == 17 && !memcmp(name, "long unsigned int", 17)))
            return size;
    }
    return 8;
}

void cdump_info_bytes(const types_t *t, uint8_t *out)
{
    out[0] = 0;
    for (uint32_t i = 0; i < t->count; i++) out[i + 1] = (uint8_t)(t->w[t->start[i] + 1] >> 24);
}

/* A header never spells the name of these kinds (c.UNSPELLED_KINDS). */
static int unspelled(uint32_t kind)
{
    return kind == K_FUNC || kind == K_VAR || kind == K_DATASEC || kind == K_DECL_TAG;
}

const uint8_t *cdump_type_name(const types_t *t, uint32_t id, uint32_t *len)
{
    if (id < t->first_id || id - t->first_id >= t->count
        || unspelled(t_kind(t, id - t->first_id))) {
        *len = 0;
        return (const uint8_t *)"";
    }
    return name_at(t, t_name(t, id - t->first_id), len);
}

uint32_t cdump_tagged_function(const types_t *t, uint32_t i)
{
    uint32_t target = t_sot(t, i);
    if (t_kind(t, i) != K_DECL_TAG || t_kflag(t, i) || t_rest(t, i)[0] != 0xFFFFFFFFu
        || target < t->first_id || target - t->first_id >= t->count
        || t_kind(t, target - t->first_id) != K_FUNC)
        return 0;
    return target;
}

/* ---- placement (emit/c/order.py) ---- */

enum { R_COMPOSITE, R_TYPEDEF, R_BUILTIN, R_OTHER };

typedef struct {
    ctx_t *c;
    uint32_t ndefs;
    uint32_t *defs;              /* definition ids, as given */
    int32_t *pos;                /* per id: index into defs, or -1 */
    uint32_t **complete;         /* per id: complete_deps (count first), or NULL */
    uint8_t *completing;
    uint32_t **needs;            /* per def index: ids needed before it (count first) */
    uint32_t **declared;         /* per def index: tags it needs declared (count first) */
    uint32_t **users;            /* per def index: def indexes that need it (count first) */
} place_t;

static int role(ctx_t *c, uint32_t id)
{
    uint32_t kind = kind_of(c, id);
    if (kind == K_STRUCT || kind == K_UNION) return R_COMPOSITE;
    if (kind == K_TYPEDEF) return is_builtin_typedef(c, id) ? R_BUILTIN : R_TYPEDEF;
    return R_OTHER;
}

/* A growing u32 list whose first entry is its length; its room is not stored but
 * grown_room's for that length. */
static int push_u32(uint32_t **list, uint32_t value)
{
    int fresh = *list == NULL;
    size_t n = fresh ? 0 : (*list)[0], room = grown_room(fresh ? 0 : n + 1);
    if (n >= UINT32_MAX || GROW(*list, room, n + 2)) return -1;
    if (fresh) (*list)[0] = 0;
    (*list)[++(*list)[0]] = value;
    return 0;
}

/* Placement.complete_deps: definitions a by-value use of typedef `id` needs. */
static int complete_deps(place_t *p, uint32_t id, int depth)
{
    ctx_t *c = p->c;
    if (p->complete[id] || p->completing[id]) return 0;
    if (depth > MAX_DEPTH) return fail(c, "typedefs nested too deep");
    p->completing[id] = 1;
    uint32_t *out = NULL, *stack = NULL;
    int rc = -1;
    if (push_u32(&out, 0) || push_u32(&stack, 0)) goto nomem;
    out[0] = stack[0] = 0;
    for (uint32_t j = 0; edge_at(c, id, BY_VALUE, j) >= 0; j++)
        if (edge_at(c, id, BY_VALUE, j) && push_u32(&stack, (uint32_t)edge_at(c, id, BY_VALUE, j)))
            goto nomem;
    while (stack[0]) {
        uint32_t r = stack[stack[0]--], kind = kind_of(c, r);
        if (kind == K_TYPEDEF) {
            if (!is_builtin_typedef(c, r) && push_u32(&out, r)) goto nomem;
            if (complete_deps(p, r, depth + 1)) goto done;
            for (uint32_t k = 1; p->complete[r] && k <= p->complete[r][0]; k++)
                if (push_u32(&out, p->complete[r][k])) goto nomem;
        } else if (has_name(c, r) && (named_kind(kind))) {
            if (push_u32(&out, r)) goto nomem;
        } else {
            int64_t e;
            for (uint32_t j = 0; (e = edge_at(c, r, BY_VALUE, j)) >= 0; j++)
                if (e && push_u32(&stack, (uint32_t)e)) goto nomem;
        }
    }
    p->complete[id] = out;
    out = NULL;
    rc = 0;
    goto done;
nomem:
    fail_nomem(c);
done:
    p->completing[id] = 0;
    free(out);
    free(stack);
    return rc;
}

/* Placement.dependencies of definition index k, from its mentions refs[0..nrefs). */
static int dependencies(place_t *p, uint32_t k, const cdump_mention_t *refs, size_t nrefs,
                        uint32_t *seen, uint32_t stamp)
{
    ctx_t *c = p->c;
    uint32_t d = p->defs[k];
    seen[d] = stamp;  /* before.discard(d) */
    for (size_t j = 0; j < nrefs; j++) {
        uint32_t r = refs[j].id, mode = refs[j].mode;
        if (r == 0 || r >= c->nids) return fail(c, "a mention that is not a type");
        int what = role(c, r), before = 0;
        if (what == R_COMPOSITE) {
            if (mode == VALUE) before = 1;
            else if (r != d && push_u32(&p->declared[k], r)) return fail_nomem(c);
        } else if (what == R_OTHER || what == R_TYPEDEF) {
            before = 1;
        }
        if (before && seen[r] != stamp) {
            if (p->pos[r] < 0) return fail(c, "a dependency that is not a definition");
            seen[r] = stamp;
            if (push_u32(&p->needs[k], r)) return fail_nomem(c);
        }
        if ((what == R_TYPEDEF || what == R_BUILTIN) && mode == VALUE) {
            if (complete_deps(p, r, 0)) return -1;
            for (uint32_t i = 1; p->complete[r] && i <= p->complete[r][0]; i++) {
                uint32_t x = p->complete[r][i];
                if (seen[x] == stamp) continue;
                if (p->pos[x] < 0) return fail(c, "a dependency that is not a definition");
                seen[x] = stamp;
                if (push_u32(&p->needs[k], x)) return fail_nomem(c);
            }
        }
    }
    return 0;
}

static uint32_t count_of(const uint32_t *list) { return list ? list[0] : 0; }

/* order._is_linkage */
static int is_linkage(ctx_t *c, uint32_t id)
{
    if ((uint64_t)sot_of(c, id) > 2 * c->ptr_size) return 0;
    const uint32_t *items = rest_of(c, id);
    for (uint32_t j = 0; j < vlen_of(c, id); j++) {
        uint32_t held = items[3 * j + 1];
        if (held == 0 || kind_of(c, held) != K_PTR) return 0;
    }
    return 1;
}

/* Placement._placement_keys, with ranks `rank` per definition index. */
static int placement_keys(place_t *p, const uint64_t *rank, uint64_t *key)
{
    ctx_t *c = p->c;
    uint32_t n = p->ndefs;
    int64_t *level = malloc((n ? n : 1) * sizeof *level);
    uint32_t *waiting = malloc((n ? n : 1) * sizeof *waiting), *queue = malloc((n ? n : 1) * sizeof *queue);
    int rc = -1;
    if (!level || !waiting || !queue) {
        fail_nomem(c);
        goto done;
    }
    uint32_t top = 0;
    for (uint32_t k = 0; k < n; k++) {
        level[k] = -1;  /* not reached: level.get(d, 0) */
        waiting[k] = count_of(p->needs[k]);
        if (!waiting[k]) queue[top++] = k;
    }
    while (top) {
        uint32_t k = queue[--top], d = p->defs[k];
        if (role(c, d) == R_COMPOSITE) {
            int64_t deepest = -1;
            for (uint32_t i = 1; i <= count_of(p->needs[k]); i++) {
                uint32_t x = p->needs[k][i];
                if (role(c, x) == R_COMPOSITE && level[p->pos[x]] > deepest) deepest = level[p->pos[x]];
            }
            level[k] = 1 + deepest;
        }
        for (uint32_t i = 1; i <= count_of(p->users[k]); i++) {
            uint32_t u = p->users[k][i];
            if (--waiting[u] == 0) queue[top++] = u;
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t d = p->defs[k], kind = kind_of(c, d);
        uint64_t group;
        if (kind == K_STRUCT || kind == K_UNION) {
            uint64_t band = is_linkage(c, d) ? 0 : 1 + (uint64_t)(level[k] < 0 ? 0 : level[k]) / 2;
            group = (2ULL << 16) + band;
        } else {
            group = (uint64_t)(kind == K_TYPEDEF) << 16;
        }
        if (rank[k] >= (1ULL << 32) || group >= (1ULL << 31)) {
            fail(c, "a rank out of range");
            goto done;
        }
        key[k] = (group << 32) + rank[k];
    }
    rc = 0;
done:
    free(level);
    free(waiting);
    free(queue);
    return rc;
}

/* A binary min-heap of (key << 0, def index) pairs, keys unique. */
typedef struct {
    uint64_t *key;
    uint32_t *k;
    size_t n;
} heap_t;

static void heap_push(heap_t *h, uint64_t key, uint32_t k)
{
    size_t i = h->n++;
    while (i) {
        size_t parent = (i - 1) / 2;
        if (h->key[parent] <= key) break;
        h->key[i] = h->key[parent];
        h->k[i] = h->k[parent];
        i = parent;
    }
    h->key[i] = key;
    h->k[i] = k;
}

static uint32_t heap_pop(heap_t *h)
{
    uint32_t top = h->k[0];
    uint64_t key = h->key[--h->n];
    uint32_t k = h->k[h->n];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n) break;
        if (child + 1 < h->n && h->key[child + 1] < h->key[child]) child++;
        if (h->key[child] >= key) break;
        h->key[i] = h->key[child];
        h->k[i] = h->k[child];
        i = child;
    }
    if (h->n) {
        h->key[i] = key;
        h->k[i] = k;
    }
    return top;
}

/* Placement.order: Kahn's algorithm with a heap of placement keys. The heap holds at
 * most one entry per push: one per definition plus one per cycle broken. Each tag is
 * forwarded once: at most nids of them. */
static int place_order(place_t *p, const uint64_t *key, uint32_t *sequence, uint32_t *forward,
                       size_t *nforward_out)
{
    ctx_t *c = p->c;
    uint32_t n = p->ndefs;
    size_t room = 2 * (size_t)n + 1;
    heap_t h = {malloc(room * sizeof *h.key), malloc(room * sizeof *h.k), 0};
    int64_t *waiting = malloc((n + 1) * sizeof *waiting);
    uint8_t *done = calloc(n + 1, 1), *forwarded = calloc(c->nids, 1);
    uint32_t nseq = 0;
    size_t nforward = 0;
    int rc = -1;
    if (!h.key || !h.k || !waiting || !done || !forwarded) {
        fail_nomem(c);
        goto out;
    }
    for (uint32_t k = 0; k < n; k++) {
        waiting[k] = count_of(p->needs[k]);
        if (!waiting[k]) heap_push(&h, key[k], k);
    }
    while (nseq < n) {
        if (!h.n) {  /* a cycle of by-value uses: break it at the smallest key */
            uint32_t best = UINT32_MAX;
            for (uint32_t k = 0; k < n; k++)
                if (!done[k] && (best == UINT32_MAX || key[k] < key[best])) best = k;
            if (h.n >= room) break;
            heap_push(&h, key[best], best);
        }
        uint32_t k = heap_pop(&h);
        if (done[k]) continue;
        done[k] = 1;
        sequence[nseq++] = p->defs[k];
        for (uint32_t i = 1; i <= count_of(p->declared[k]); i++) {
            uint32_t tag = p->declared[k][i];
            if ((p->pos[tag] < 0 || !done[p->pos[tag]]) && !forwarded[tag]) {
                forwarded[tag] = 1;
                forward[nforward++] = tag;
            }
        }
        for (uint32_t i = 1; i <= count_of(p->users[k]); i++) {
            uint32_t u = p->users[k][i];
            if (--waiting[u] == 0) {
                if (h.n >= room) break;
                heap_push(&h, key[u], u);
            }
        }
    }
    if (nseq < n) {
        fail(c, "the placement heap overflowed");
        goto out;
    }
    *nforward_out = nforward;
    rc = 0;
out:
    free(h.key);
    free(h.k);
    free(waiting);
    free(done);
    free(forwarded);
    return rc;
}

static void place_free(place_t *p)
{
    uint32_t nids = p->c ? p->c->nids : 0;
    for (uint32_t id = 0; p->complete && id < nids; id++) free(p->complete[id]);
    for (uint32_t k = 0; k < p->ndefs; k++) {
        if (p->needs) free(p->needs[k]);
        if (p->declared) free(p->declared[k]);
        if (p->users) free(p->users[k]);
    }
    FREE_EACH(p->complete, p->completing, p->needs, p->declared, p->users, p->defs, p->pos);
}

/* The definitions, their needs and users. */
static int place_init(place_t *p, ctx_t *c, const cdump_place_in_t *in)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    int rc = -1;
    uint32_t *seen = NULL;
    if (in->n >= c->nids) return fail(c, "more definitions than types");
    p->ndefs = (uint32_t)in->n;
    size_t slots = in->n + 1;
    p->defs = malloc(slots * sizeof *p->defs);
    p->pos = malloc(c->nids * sizeof *p->pos);
    p->complete = calloc(c->nids, sizeof *p->complete);
    p->completing = calloc(c->nids, 1);
    p->needs = calloc(slots, sizeof *p->needs);
    p->declared = calloc(slots, sizeof *p->declared);
    p->users = calloc(slots, sizeof *p->users);
    seen = calloc(c->nids, sizeof *seen);
    if (!p->defs || !p->pos || !p->complete || !p->completing || !p->needs || !p->declared
        || !p->users || !seen) {
        fail_nomem(c);
        goto done;
    }
    memset(p->pos, 0xFF, c->nids * sizeof *p->pos);
    for (uint32_t k = 0; k < p->ndefs; k++) {
        uint32_t d = in->defs[k];
        if (d < c->t->first_id || d >= c->nids || p->pos[d] >= 0) {
            fail(c, "defs must be distinct own ids");
            goto done;
        }
        p->defs[k] = d;
        p->pos[d] = (int32_t)k;
    }
    for (uint32_t k = 0; k < p->ndefs; k++) {
        size_t n = in->nmentions[k];
        if (dependencies(p, k, n ? in->mentions + in->mention_at[k] : NULL, n, seen, k + 1))
            goto done;
        for (uint32_t i = 1; i <= count_of(p->needs[k]); i++)
            if (push_u32(&p->users[p->pos[p->needs[k][i]]], k)) {
                fail_nomem(c);
                goto done;
            }
    }
    rc = 0;
done:
    free(seen);
    return rc;
}

int cdump_placement(const types_t *t, uint64_t ptr_size, const cdump_place_in_t *in,
                    uint32_t *sequence, uint32_t *forward, size_t *nforward)
{
    ctx_t c;
    place_t p;
    memset(&p, 0, sizeof p);
    uint64_t *key = NULL;
    int rc = -1;
    if (start(&c, t, ptr_size) || place_init(&p, &c, in)) goto done;
    key = malloc((in->n + 1) * sizeof *key);
    if (!key) {
        fail_nomem(&c);
        goto done;
    }
    if (placement_keys(&p, in->rank, key)) goto done;
    rc = place_order(&p, key, sequence, forward, nforward);
done:
    place_free(&p);
    free(key);
    ctx_free(&c);
    return rc;
}
