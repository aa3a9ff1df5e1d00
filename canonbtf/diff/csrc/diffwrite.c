/* diff's report written (diff/text.py is the reference): the text a person reads, or
 * the JSON a tool reads, of each change and of the whole, from the facts and details
 * difffacts.c makes, byte for byte as render_text and render_json write them. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diffwrite.h"

const char *const DIFF_FAMILY[] = {"struct", "union", "enum", "typedef", "fwd", "func", "var",
                                   "datasec", "int", "float", "decl_tag"};
static const char *const STATUS[] = {"removed", "added", "changed"};

/* ---- text ---- */

static int offset_text(text_t *b, uint64_t bits)
{
    return bits % 8 ? text_printf(b, "bit %" PRIu64, bits) : text_printf(b, "byte %" PRIu64, bits / 8);
}

static int number_text(text_t *b, const fact_t *x)
{
    return x->neg ? text_printf(b, "%" PRId64, (int64_t)x->a) : text_printf(b, "%" PRIu64, x->a);
}

static int unnamed_or(text_t *b, const facts_t *o, const fact_t *x)
{
    return x->l1 ? text_put(b, AT(o->arena, x->s1), x->l1) : text_puts(b, "(unnamed)");
}

/* text._plain of a value (NULL: none), or as an f-string writes it (`raw`). */
static int plain_text(text_t *b, const facts_t *o, const fact_t *x, int raw)
{
    if (!x) return text_puts(b, raw ? "None" : "(none)");
    switch (x->what) {
    case W_SIGNED: case W_VARARGS:
        return text_puts(b, raw ? (x->a ? "True" : "False") : (x->a ? "yes" : "no"));
    case W_SIZE: case W_BITS: case W_BIT_OFFSET:
        return text_printf(b, "%" PRIu64, x->a);
    default:
        return text_put(b, AT(o->arena, x->s1), x->l1);
    }
}

/* A detail's path: a member's, `where.name` of a value, a parameter's index, an entry's. */
static int path_text(text_t *b, const facts_t *o, const fact_t *x)
{
    const char *key = AT(o->arena, x->key);
    if (x->what != W_VALUE) return text_put(b, key, x->klen);
    if (x->wlen && (text_put(b, key, x->wlen) || text_puts(b, "."))) return -1;
    return text_put(b, key + x->wlen + 1, x->klen - x->wlen - 1);
}

static int member_text(text_t *b, const facts_t *o, const fact_t *x)
{
    if (text_put(b, AT(o->arena, x->s1), x->l1) || text_puts(b, " at ") || offset_text(b, x->a))
        return -1;
    return x->b ? text_printf(b, ", %" PRIu64 "-bit field", x->b) : 0;
}

static int bitfield_text(text_t *b, uint64_t size)
{
    return size ? text_printf(b, "%" PRIu64 " bits", size) : text_puts(b, "not a bitfield");
}

/* The part of a member's or parameter's line one detail adds (text._SAME_LINE). */
static int same_line_part(text_t *b, const detail_t *d, const facts_t *oa, const facts_t *ob)
{
    const fact_t *a = d->a, *x = d->b;
    switch (d->change) {
    case D_MEMBER_RETYPED:
        return text_puts(b, "type ") || text_put(b, AT(oa->arena, a->s1), a->l1)
            || text_puts(b, " -> ") || text_put(b, AT(ob->arena, x->s1), x->l1);
    case D_PARAM_RETYPED:
        return text_puts(b, "type ") || text_put(b, AT(oa->arena, a->s2), a->l2)
            || text_puts(b, " -> ") || text_put(b, AT(ob->arena, x->s2), x->l2);
    case D_MEMBER_MOVED:
        if (a->a % 8 == 0 && x->a % 8 == 0)
            return text_printf(b, "moved byte %" PRIu64 " -> byte %" PRIu64, a->a / 8, x->a / 8);
        return text_printf(b, "moved bit %" PRIu64 " -> bit %" PRIu64, a->a, x->a);
    case D_BITFIELD:
        return text_puts(b, "bitfield ") || bitfield_text(b, a->b) || text_puts(b, " -> ")
            || bitfield_text(b, x->b);
    default:   /* D_PARAM_RENAMED */
        return text_puts(b, "renamed ") || unnamed_or(b, oa, a) || text_puts(b, " -> ")
            || unnamed_or(b, ob, x);
    }
}

static int is_same_line(int change)
{
    return change == D_MEMBER_RETYPED || change == D_MEMBER_MOVED || change == D_BITFIELD
        || change == D_PARAM_RENAMED || change == D_PARAM_RETYPED;
}

/* text._detail_line of a detail with a line of its own. */
static int detail_line(text_t *b, const detail_t *d, const facts_t *oa, const facts_t *ob)
{
    const fact_t *a = d->a, *x = d->b, *one = a ? a : x;
    const facts_t *o = a ? oa : ob;
    switch (d->change) {
    case D_MEMBER_ADDED: case D_MEMBER_REMOVED:
        return text_puts(b, a ? "- member " : "+ member ") || path_text(b, o, one)
            || text_puts(b, ": ") || member_text(b, o, one);
    case D_VALUE_ADDED: case D_VALUE_REMOVED:
        return text_puts(b, a ? "- " : "+ ") || path_text(b, o, one) || text_puts(b, " = ")
            || number_text(b, one);
    case D_VALUE_CHANGED:
        return text_puts(b, "~ ") || path_text(b, oa, a) || text_puts(b, ": ") || number_text(b, a)
            || text_puts(b, " -> ") || number_text(b, x);
    case D_PARAM_ADDED: case D_PARAM_REMOVED:
        return text_puts(b, a ? "- param " : "+ param ") || path_text(b, o, one)
            || text_puts(b, " ") || unnamed_or(b, o, one) || text_puts(b, ": ")
            || text_put(b, AT(o->arena, one->s2), one->l2);
    case D_VAR_ADDED: case D_VAR_REMOVED:
        return text_puts(b, a ? "- variable " : "+ variable ") || path_text(b, o, one)
            || text_printf(b, ": size %" PRIu64 " at %" PRIu64, one->b, one->a);
    case D_VAR_RESIZED:
        return text_puts(b, "~ variable ") || path_text(b, oa, a)
            || text_printf(b, ": size %" PRIu64 " -> %" PRIu64 " (at %" PRIu64 " -> %" PRIu64 ")",
                           a->b, x->b, a->a, x->a);
    default: {   /* D_OTHER */
        int ret = one->what == W_RETURN;
        if (text_puts(b, "~ ")) return -1;
        if (ret) {
            if (text_puts(b, "return type")) return -1;
        } else {
            for (const char *w = FACT_WHAT[one->what]; *w; w++)
                if (text_put(b, *w == '_' ? " " : w, 1)) return -1;
        }
        return text_puts(b, ": ") || plain_text(b, oa, a, ret) || text_puts(b, " -> ")
            || plain_text(b, ob, x, ret);
    }
    }
}

/* text._change_lines of a changed root: its details, a member's or parameter's
 * changes on one line, and the datasec variables that moved counted at the end. */
static int detail_lines(text_t *b, const details_t *details, const facts_t *oa,
                        const facts_t *ob)
{
    const detail_t *held = NULL;
    size_t moved = 0, shown = 0;
    for (size_t k = 0; k < details->n; k++) {
        const detail_t *d = &details->d[k];
        if (d->change == D_VAR_MOVED) {
            moved++;
            continue;
        }
        if (!is_same_line(d->change)) {
            if (text_puts(b, "\n    ") || detail_line(b, d, oa, ob)) return -1;
            held = NULL;
            continue;
        }
        int param = d->change == D_PARAM_RENAMED || d->change == D_PARAM_RETYPED;
        int held_param = held && (held->change == D_PARAM_RENAMED || held->change == D_PARAM_RETYPED);
        if (held && param == held_param && held->a->klen == d->a->klen
            && !memcmp(AT(oa->arena, held->a->key), AT(oa->arena, d->a->key), d->a->klen)) {
            if (text_puts(b, ", ")) return -1;
        } else {
            if (text_puts(b, param ? "\n    ~ param " : "\n    ~ member ")
                || path_text(b, oa, d->a) || text_puts(b, ": "))
                return -1;
            held = d;
        }
        if (same_line_part(b, d, oa, ob)) return -1;
    }
    if (moved) {
        if (text_printf(b, "\n    ~ %zu variables at new offsets: ", moved)) return -1;
        for (size_t k = 0; k < details->n && shown < 5; k++) {
            const detail_t *d = &details->d[k];
            if (d->change != D_VAR_MOVED) continue;
            if ((shown++ && text_puts(b, ", ")) || path_text(b, oa, d->a)) return -1;
        }
        if (moved > 5 && text_printf(b, " and %zu more", moved - 5)) return -1;
    }
    return text_puts(b, "\n");
}


static int counts_text(text_t *b, const uint32_t counts[3])
{
    static const int order[] = {S_CHANGED, S_ADDED, S_REMOVED};
    int first = 1;
    for (int k = 0; k < 3; k++) {
        uint32_t n = counts[order[k]];
        if (!n) continue;
        if ((!first && text_puts(b, ", ")) || text_printf(b, "%" PRIu32 " %s", n, STATUS[order[k]]))
            return -1;
        first = 0;
    }
    return 0;
}

/* text._change_lines */
static int change_text(text_t *b, const diff_change_t *c)
{
    static const char *const marks[] = {"- ", "+ ", "~ "};
    if (text_puts(b, marks[c->status]) || text_puts(b, DIFF_FAMILY[c->family])
        || text_puts(b, " ") || text_put(b, c->name, c->nlen))
        return -1;
    if (c->status == S_CHANGED) return detail_lines(b, c->details, c->old, c->new);
    if (c->blen && (text_puts(b, ": ") || text_put(b, c->brief, c->blen))) return -1;
    return text_puts(b, "\n");
}

/* ---- JSON (json.dumps with ensure_ascii and no spaces) ---- */

static int json_str(text_t *b, const char *s, size_t n)
{
    if (text_put(b, "\"", 1)) return -1;
    for (size_t k = 0; k < n; k++) {
        unsigned char ch = (unsigned char)s[k];
        const char *esc = ch == '"' ? "\\\"" : ch == '\\' ? "\\\\" : ch == '\n' ? "\\n"
            : ch == '\r' ? "\\r" : ch == '\t' ? "\\t" : ch == '\b' ? "\\b" : ch == '\f' ? "\\f" : NULL;
        int rc = esc ? text_puts(b, esc)
            : ch < 0x20 || ch > 0x7E ? text_printf(b, "\\u%04x", ch) : text_put(b, &ch, 1);
        if (rc) return -1;
    }
    return text_put(b, "\"", 1);
}

static int json_text(text_t *b, const facts_t *o, size_t at, size_t len)
{
    return json_str(b, AT(o->arena, at), len);
}

/* A detail's path as the reference's Detail.path holds it. */
static int json_path(text_t *b, const detail_t *d, const facts_t *oa, const facts_t *ob)
{
    const fact_t *x = d->a ? d->a : d->b;
    const facts_t *o = d->a ? oa : ob;
    text_t path = {0};
    int rc = d->change == D_OTHER ? json_str(b, "", 0)
        : path_text(&path, o, x) || json_str(b, AT(path, 0), path.len);
    free(path.p);
    return rc;
}

/* One side's value of a detail (`x` NULL: null). */
static int json_value(text_t *b, int change, const facts_t *o, const fact_t *x)
{
    if (!x) return text_puts(b, "null");
    switch (change) {
    case D_MEMBER_ADDED: case D_MEMBER_REMOVED:
        return text_puts(b, "{\"type\":") || json_text(b, o, x->s1, x->l1)
            || text_printf(b, ",\"bit_offset\":%" PRIu64 ",\"bitfield_size\":%" PRIu64 "}", x->a, x->b);
    case D_MEMBER_RETYPED: case D_PARAM_RENAMED:
        return json_text(b, o, x->s1, x->l1);
    case D_PARAM_RETYPED:
        return json_text(b, o, x->s2, x->l2);
    case D_MEMBER_MOVED: case D_VAR_MOVED:
        return text_printf(b, "%" PRIu64, x->a);
    case D_BITFIELD:
        return text_printf(b, "%" PRIu64, x->b);
    case D_VALUE_ADDED: case D_VALUE_REMOVED: case D_VALUE_CHANGED:
        return number_text(b, x);
    case D_PARAM_ADDED: case D_PARAM_REMOVED:
        return text_puts(b, "{\"name\":") || json_text(b, o, x->s1, x->l1)
            || text_puts(b, ",\"type\":") || json_text(b, o, x->s2, x->l2) || text_puts(b, "}");
    case D_VAR_ADDED: case D_VAR_REMOVED: case D_VAR_RESIZED:
        return text_printf(b, "{\"offset\":%" PRIu64 ",\"size\":%" PRIu64 "}", x->a, x->b);
    default:   /* D_OTHER */
        switch (x->what) {
        case W_SIGNED: case W_VARARGS: return text_puts(b, x->a ? "true" : "false");
        case W_SIZE: case W_BITS: case W_BIT_OFFSET: return text_printf(b, "%" PRIu64, x->a);
        default: return json_text(b, o, x->s1, x->l1);
        }
    }
}

static const char *const CHANGE[] = {
    "member_added", "member_removed", "member_retyped", "member_moved", "bitfield_changed",
    "value_added", "value_removed", "value_changed", "param_added", "param_removed",
    "param_renamed", "param_retyped", "var_added", "var_removed", "var_resized", "var_moved"};

/* text._change_object */
static int change_json(text_t *b, const diff_change_t *c)
{
    if (text_puts(b, "{\"kind\":") || json_str(b, DIFF_FAMILY[c->family], strlen(DIFF_FAMILY[c->family]))
        || text_puts(b, ",\"name\":") || json_str(b, c->name, c->nlen)
        || text_printf(b, ",\"status\":\"%s\"", STATUS[c->status]))
        return -1;
    if (c->status != S_CHANGED)
        return text_puts(b, c->status == S_REMOVED ? ",\"old\":" : ",\"new\":")
            || json_str(b, c->brief, c->blen) || text_puts(b, "}");
    if (text_puts(b, ",\"details\":[")) return -1;
    for (size_t k = 0; k < c->details->n; k++) {
        const detail_t *d = &c->details->d[k];
        const fact_t *x = d->a ? d->a : d->b;
        if (k && text_puts(b, ",")) return -1;
        if (text_puts(b, "{\"change\":\"")) return -1;
        if (d->change == D_OTHER ? text_puts(b, FACT_WHAT[x->what]) || text_puts(b, "_changed")
                                 : text_puts(b, CHANGE[d->change]))
            return -1;
        if (text_puts(b, "\",\"path\":") || json_path(b, d, c->old, c->new)
            || text_puts(b, ",\"old\":") || json_value(b, d->change, c->old, d->a)
            || text_puts(b, ",\"new\":") || json_value(b, d->change, c->new, d->b)
            || text_puts(b, "}"))
            return -1;
    }
    return text_puts(b, "]}");
}

/* ---- the whole ---- */

int write_change(text_t *b, const diff_change_t *c, int json)
{
    return json ? change_json(b, c) : change_text(b, c);
}

static int json_counts(text_t *b, const uint32_t counts[3])
{
    return text_printf(b, "{\"added\":%" PRIu32 ",\"removed\":%" PRIu32 ",\"changed\":%" PRIu32 "}",
                       counts[S_ADDED], counts[S_REMOVED], counts[S_CHANGED]);
}

int write_head(text_t *b, size_t n, const uint32_t totals[3], const uint32_t counts[][3], int json)
{
    if (!json)
        return n ? text_printf(b, "%zu types differ: ", n) || counts_text(b, totals) || text_puts(b, "\n") : 0;
    if (text_puts(b, "{\"canonbtf_diff\":1,\"summary\":") || json_counts(b, totals)
        || text_puts(b, ",\"by_kind\":{"))
        return -1;
    int first = 1;
    for (int family = 0; family < F_COUNT; family++) {
        if (!counts[family][0] && !counts[family][1] && !counts[family][2]) continue;
        if ((!first && text_puts(b, ",")) || json_str(b, DIFF_FAMILY[family], strlen(DIFF_FAMILY[family]))
            || text_puts(b, ":") || json_counts(b, counts[family]))
            return -1;
        first = 0;
    }
    return text_puts(b, "},\"types\":[\n");
}

int write_section(text_t *b, int family, const uint32_t counts[3], int json)
{
    if (json) return 0;
    return text_puts(b, "\n== ") || text_puts(b, DIFF_FAMILY[family]) || text_puts(b, ": ")
        || counts_text(b, counts) || text_puts(b, " ==\n");
}

int write_between(text_t *b, int json)
{
    return json ? text_puts(b, ",\n") : 0;
}

int write_end(text_t *b, size_t n, int json)
{
    return json ? text_puts(b, n ? "\n]}\n" : "]}\n") : 0;
}
