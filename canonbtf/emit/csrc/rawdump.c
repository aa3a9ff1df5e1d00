/* bpftool 7.1's `format raw` text of a checked type section: emit/raw.py (the
 * reference) on the packed words, so that no Type object or line string is made.
 *
 * The text goes out in bounded chunks (never the whole of it in memory: 16 x a vmlinux is
 * 0.4 GB of text), each chunk to the caller's writer. */
#include "rawdump.h"

#include <stdlib.h>
#include <string.h>

#define RAW_CHUNK (1 << 20)

typedef struct {
    char buf[RAW_CHUNK];
    size_t n;
    raw_write_fn write;
    void *arg;
} sink_t;

/* A known kind's name as bpftool spells it (kind 0 differently from kind_name). */
static const char *kind_text(uint32_t kind) { return kind ? kind_name(kind) : "UNKNOWN"; }
static const char *const LINKAGE_TEXT[3] = {"static", "global", "extern"};

static int flush(sink_t *s)
{
    if (!s->n) return 0;
    int rc = s->write(s->arg, s->buf, s->n);
    s->n = 0;
    return rc;
}

/* Any length: a name may be as long as its string section. */
static int put(sink_t *s, const void *p, size_t len)
{
    const char *c = p;
    while (len) {
        if (s->n == RAW_CHUNK && flush(s)) return -1;
        size_t room = RAW_CHUNK - s->n, take = len < room ? len : room;
        memcpy(s->buf + s->n, c, take);
        s->n += take;
        c += take;
        len -= take;
    }
    return 0;
}

#define PUT(s, lit) put((s), (lit), sizeof(lit) - 1)

static int put_str(sink_t *s, const char *text) { return put(s, text, strlen(text)); }

static int put_u64(sink_t *s, uint64_t v)
{
    char tmp[24];
    char *p = tmp + sizeof tmp;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return put(s, p, (size_t)(tmp + sizeof tmp - p));
}

static int put_i64(sink_t *s, int64_t v)
{
    if (v >= 0) return put_u64(s, (uint64_t)v);
    return PUT(s, "-") || put_u64(s, 0 - (uint64_t)v);
}

/* The name at a string offset, quoted; offset 0 is "(anon)" (raw.py's name). */
static int put_name(sink_t *s, const types_t *t, uint32_t off)
{
    if (PUT(s, "'")) return -1;
    if (!off) {
        if (PUT(s, "(anon)")) return -1;
    } else {
        uint32_t len;
        const uint8_t *p = name_at(t, off, &len);
        if (put(s, p, len)) return -1;
    }
    return PUT(s, "'");
}

static const char *linkage(uint32_t value)
{
    return value < 3 ? LINKAGE_TEXT[value] : "(unknown)";
}

static const char *int_encoding(uint32_t value)
{
    switch (value) {
    case 0: return "(none)";
    case 1: return "SIGNED";
    case 2: return "CHAR";
    case 4: return "BOOL";
    default: return "UNKN";
    }
}

/* " size=N vlen=N\n", the head's end of the kinds with items. */
static int put_size_vlen(sink_t *s, uint32_t size, uint32_t vlen)
{
    return PUT(s, " size=") || put_u64(s, size) || PUT(s, " vlen=") || put_u64(s, vlen)
        || PUT(s, "\n");
}

static int members(sink_t *s, const types_t *t, uint32_t i)
{
    uint32_t vlen = t_vlen(t, i), kflag = t_kflag(t, i);
    const uint32_t *m = t_rest(t, i);
    if (put_size_vlen(s, t_sot(t, i), vlen)) return -1;
    for (uint32_t j = 0; j < vlen; j++, m += 3) {
        uint32_t bitfield = kflag ? m[2] >> 24 : 0;
        if (PUT(s, "\t") || put_name(s, t, m[0]) || PUT(s, " type_id=") || put_u64(s, m[1])
            || PUT(s, " bits_offset=") || put_u64(s, bitfield ? m[2] & 0xFFFFFF : m[2]))
            return -1;
        if (bitfield && (PUT(s, " bitfield_size=") || put_u64(s, bitfield))) return -1;
        if (PUT(s, "\n")) return -1;
    }
    return 0;
}

static int params(sink_t *s, const types_t *t, uint32_t i)
{
    uint32_t vlen = t_vlen(t, i);
    const uint32_t *p = t_rest(t, i);
    if (PUT(s, " ret_type_id=") || put_u64(s, t_sot(t, i)) || PUT(s, " vlen=")
        || put_u64(s, vlen) || PUT(s, "\n"))
        return -1;
    for (uint32_t j = 0; j < vlen; j++, p += 2)
        if (PUT(s, "\t") || put_name(s, t, p[0]) || PUT(s, " type_id=") || put_u64(s, p[1])
            || PUT(s, "\n"))
            return -1;
    return 0;
}

static int enumerators(sink_t *s, const types_t *t, uint32_t i)
{
    uint32_t kind = t_kind(t, i), vlen = t_vlen(t, i), kflag = t_kflag(t, i);
    uint32_t step = kind_item_words(kind);
    const uint32_t *e = t_rest(t, i);
    if (PUT(s, " encoding=") || put_str(s, kflag ? "SIGNED" : "UNSIGNED")
        || put_size_vlen(s, t_sot(t, i), vlen))
        return -1;
    const char *suffix = kind == K_ENUM ? "" : kflag ? "LL" : "ULL";
    for (uint32_t j = 0; j < vlen; j++, e += step) {
        uint64_t value = enumerator_value(kind, e);
        if (PUT(s, "\t") || put_name(s, t, e[0]) || PUT(s, " val=")
            || (kflag ? put_i64(s, enumerator_signed(kind, value)) : put_u64(s, value))
            || put_str(s, suffix) || PUT(s, "\n"))
            return -1;
    }
    return 0;
}

/* The kind and name offset of type `id` (void: kind 0, no name); 0, or -1 for an id
 * neither section holds. */
static int kind_and_name(const types_t *t, const types_t *base, uint32_t id, uint32_t *kind,
                         uint32_t *name)
{
    *kind = *name = 0;
    if (!id) return 0;
    const types_t *in = id >= t->first_id ? t : base;
    if (!in || id < in->first_id || id - in->first_id >= in->count) return -1;
    *kind = t_kind(in, id - in->first_id);
    *name = t_name(in, id - in->first_id);
    return 0;
}

static int section_entries(sink_t *s, const types_t *t, const types_t *base, uint32_t i)
{
    uint32_t vlen = t_vlen(t, i);
    const uint32_t *v = t_rest(t, i);
    if (put_size_vlen(s, t_sot(t, i), vlen)) return -1;
    for (uint32_t j = 0; j < vlen; j++, v += 3) {
        uint32_t kind, name;
        int known = !kind_and_name(t, base, v[0], &kind, &name);
        if (PUT(s, "\ttype_id=") || put_u64(s, v[0]) || PUT(s, " offset=") || put_u64(s, v[1])
            || PUT(s, " size=") || put_u64(s, v[2]))
            return -1;
        /* Names come from the section holding them: a base's names are below t's. */
        if (known && (PUT(s, " (") || put_str(s, kind_text(kind)) || PUT(s, " ")
                      || put_name(s, t, name) || PUT(s, ")")))
            return -1;
        if (PUT(s, "\n")) return -1;
    }
    return 0;
}

/* What follows the head `[id] KIND 'name'` (raw.py's _RawText methods, by kind). */
static int type_tail(sink_t *s, const types_t *t, const types_t *base, uint32_t i)
{
    uint32_t kind = t_kind(t, i), sot = t_sot(t, i);
    const uint32_t *rest = t_rest(t, i);
    switch (kind) {
    case K_STRUCT: case K_UNION: return members(s, t, i);
    case K_PTR: case K_TYPEDEF: case K_CONST: case K_VOLATILE: case K_RESTRICT: case K_TYPE_TAG:
        return PUT(s, " type_id=") || put_u64(s, sot) || PUT(s, "\n");
    case K_FUNC_PROTO: return params(s, t, i);
    case K_FUNC:
        return PUT(s, " type_id=") || put_u64(s, sot) || PUT(s, " linkage=")
            || put_str(s, linkage(t_vlen(t, i))) || PUT(s, "\n");
    case K_INT:
        return PUT(s, " size=") || put_u64(s, sot) || PUT(s, " bits_offset=")
            || put_u64(s, (rest[0] >> 16) & 0xFF) || PUT(s, " nr_bits=")
            || put_u64(s, rest[0] & 0xFF) || PUT(s, " encoding=")
            || put_str(s, int_encoding(rest[0] >> 24)) || PUT(s, "\n");
    case K_ARRAY:
        return PUT(s, " type_id=") || put_u64(s, rest[0]) || PUT(s, " index_type_id=")
            || put_u64(s, rest[1]) || PUT(s, " nr_elems=") || put_u64(s, rest[2])
            || PUT(s, "\n");
    case K_ENUM: case K_ENUM64: return enumerators(s, t, i);
    case K_FWD: return PUT(s, " fwd_kind=") || put_str(s, t_kflag(t, i) ? "union" : "struct")
            || PUT(s, "\n");
    case K_VAR:
        return PUT(s, " type_id=") || put_u64(s, sot) || PUT(s, ", linkage=")
            || put_str(s, linkage(rest[0])) || PUT(s, "\n");
    case K_DATASEC: return section_entries(s, t, base, i);
    case K_FLOAT: return PUT(s, " size=") || put_u64(s, sot) || PUT(s, "\n");
    case K_DECL_TAG:
        return PUT(s, " type_id=") || put_u64(s, sot) || PUT(s, " component_idx=")
            || put_i64(s, (int32_t)rest[0]) || PUT(s, "\n");
    default: return PUT(s, "\n");
    }
}

int raw_dump(const types_t *t, const types_t *base, raw_write_fn write, void *arg)
{
    sink_t *s = malloc(sizeof *s);
    if (!s) return -1;
    s->n = 0;
    s->write = write;
    s->arg = arg;
    int rc = 0;
    for (uint32_t i = 0; i < t->count && !rc; i++) {
        uint32_t kind = t_kind(t, i);
        rc = PUT(s, "[") || put_u64(s, (uint64_t)t->first_id + i) || PUT(s, "] ")
            || put_str(s, kind_text(kind)) || PUT(s, " ") || put_name(s, t, t_name(t, i))
            || type_tail(s, t, base, i);
    }
    if (!rc) rc = flush(s);
    free(s);
    return rc;
}
