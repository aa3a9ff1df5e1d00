/* diff's spelling of type references and one-line descriptions (btf/declarator.py's
 * ReferenceSpeller and diff/speller.py's _Speller are the reference), on the same
 * declarator chains as the C header's (emit/c/csrc/cspell.h): cdump_speller_* for the
 * plan's spellings (diff_bindings.c's cdump_diff_spell) and the compiled report
 * (diffreport.c, difffacts.c). Plain C: failures are reported through failure.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cspell.h"
#include "diffspell.h"
#include "failure.h"
#include "grow.h"

/* ---- diff's spelling (btf/declarator.py ReferenceSpeller, cdump_diff_spell) ----
 * The same chains as the header's, but a named type reads as its label (an anonymous one
 * as `struct {...}`), a chain's odd end as `<KIND name>`, parameters without names, and a
 * qualifier C has no place for noted in a comment. */

#define DIFF_CHAIN 48   /* btf/declarator.MAX_CHAIN */

static int put_kind_name(ctx_t *c, uint32_t kind, int lower)
{
    const char *name = kind_name(kind);
    if (!name) return putf(c, "kind %" PRIu32, kind);
    for (; *name; name++) {
        char ch = lower && *name >= 'A' && *name <= 'Z' ? (char)(*name - 'A' + 'a') : *name;
        if (put(c, &ch, 1)) return -1;
    }
    return 0;
}

/* ReferenceSpeller.label */
int diff_base(ctx_t *c, uint32_t id)
{
    uint32_t kind = kind_of(c, id), len;
    const uint8_t *name = name_of(c, id, &len);
    const char *tag = NULL;
    if (kind == K_STRUCT || kind == K_UNION || kind == K_FWD)
        tag = kind == K_UNION || (kind == K_FWD && kflag_of(c, id)) ? "union " : "struct ";
    else if (kind == K_ENUM || kind == K_ENUM64)
        tag = "enum ";
    if (tag && (puts_(c, tag) || (!len && puts_(c, "{...}")))) return -1;
    if (put(c, name, len)) return -1;
    if (!c->dup || !c->dup[id]) return 0;
    c->touched = 1;   /* _Speller.label */
    return c->tags && c->tags[id] ? putf(c, "#%" PRIu32, c->tags[id]) : 0;
}

/* ReferenceSpeller._other */
int diff_other(ctx_t *c, uint32_t id)
{
    if (id == CHAIN_CUT) return puts_(c, "...");
    return put(c, "<", 1) || put_kind_name(c, kind_of(c, id), 0) || put(c, " ", 1)
        || put_name(c, id) || put(c, ">", 1);
}

static int diff_expr(ctx_t *c, uint32_t id, int depth);

/* ReferenceSpeller._params */
int diff_params(ctx_t *c, uint32_t proto, int depth)
{
    uint32_t n = vlen_of(c, proto);
    const uint32_t *items = rest_of(c, proto);
    if (n == 0) return puts_(c, "void");
    for (uint32_t j = 0; j < n; j++) {
        if (j && puts_(c, ", ")) return -1;
        if (items[2 * j] || items[2 * j + 1] ? diff_expr(c, items[2 * j + 1], depth + 1)
                                             : puts_(c, "..."))
            return -1;
    }
    return 0;
}

/* ReferenceSpeller._word */
static int diff_word(ctx_t *c, uint32_t id)
{
    uint32_t kind = kind_of(c, id);
    switch (kind) {
    case K_ARRAY: return putf(c, "array[%" PRIu32 "] of", rest_of(c, id)[2]);
    case K_PTR: return puts_(c, "pointer to");
    case K_FUNC_PROTO: return puts_(c, "function returning");
    case K_TYPE_TAG: return puts_(c, "tag ") || put_name(c, id);
    default: return put_kind_name(c, kind, 1);
    }
}

/* ReferenceSpeller.decl: `fname` declared with type `id`, and the comment naming the
 * chain when a qualifier was left out. */
static int diff_decl(ctx_t *c, uint32_t id, const uint8_t *fname, uint32_t flen, int depth)
{
    uint32_t chain[DIFF_CHAIN + 1];
    int n = 0;
    for (;;) {   /* declarator_chain(types, id, DIFF_CHAIN) */
        chain[n++] = id;
        if (id == 0) break;
        if (n > DIFF_CHAIN) {
            chain[n - 1] = CHAIN_CUT;
            break;
        }
        uint32_t kind = kind_of(c, id);
        if (kind == K_ARRAY) id = rest_of(c, id)[0];
        else if (kind == K_PTR || is_qualifier(kind) || kind == K_TYPE_TAG || kind == K_FUNC_PROTO)
            id = sot_of(c, id);
        else break;
    }
    int outer = c->dropped;
    c->dropped = 0;
    if (chain_text(c, chain, n, fname, flen, 0, 0, depth + 1)) return -1;
    if (c->dropped) {
        if (puts_(c, " /* ")) return -1;
        size_t words = c->out.len;
        for (int i = 0; i < n - 1; i++)
            if ((i && put(c, " ", 1)) || diff_word(c, chain[i])) return -1;
        static const char *const tails[] = {" of", " to", " returning"};
        for (int k = 0; k < 3; k++) {   /* str.removesuffix, one after the other */
            size_t len = strlen(tails[k]);
            if (c->out.len - words >= len && !memcmp(c->out.p + c->out.len - len, tails[k], len))
                c->out.len -= len;
        }
        if (puts_(c, " */")) return -1;
    }
    c->dropped = outer;
    return 0;
}

/* ReferenceSpeller.expr, memoized as it is; a loop back into a spelling under way (the
 * reference's "..." placeholder, whose text depends on the order of spelling) and deep
 * nesting give up (ValueError): the caller leaves those to the reference. */
static int diff_expr(ctx_t *c, uint32_t id, int depth)
{
    if (c->spelled[id] == 2) {
        if (c->touches && c->touches[id]) c->touched = 1;
        return put(c, AT(c->memo, c->memo_at[id]), c->memo_len[id]);
    }
    if (c->spelled[id] == 1 || depth > DIFF_DEPTH) return fail(c, "left to the reference");
    c->spelled[id] = 1;
    c->under[c->nunder++] = id;
    size_t from = c->out.len;
    int outer = c->touched;
    c->touched = 0;
    if (diff_decl(c, id, NULL, 0, depth)) return -1;
    if (c->touches) c->touches[id] = (uint8_t)c->touched;
    c->touched |= outer;
    text_t keep = c->out;   /* the text goes on to the memo, which put() appends to */
    size_t len = keep.len - from;
    c->out = c->memo;
    c->memo_at[id] = c->out.len;
    int rc = put(c, AT(keep, from), len);   /* keep.p is NULL while nothing was put */
    c->memo = c->out;
    c->out = keep;
    if (rc) return -1;
    c->memo_len[id] = (uint32_t)len;
    c->spelled[id] = 2;
    c->nunder--;
    return 0;
}

/* diff's one-line description of an added or removed FUNC (_Speller.signature: `int
 * f(char *name, ...)`) or VAR (`int x[4]`); -1 with ValueError for any other kind. */
static int diff_brief(ctx_t *c, uint32_t id)
{
    uint32_t kind = kind_of(c, id), len, proto = sot_of(c, id);
    const uint8_t *name = name_of(c, id, &len);
    if (kind == K_VAR) return diff_decl(c, proto, name, len, 0);
    if (kind != K_FUNC) return fail(c, "left to the reference");
    if (!proto || kind_of(c, proto) != K_FUNC_PROTO)
        return put(c, name, len) || puts_(c, ": ") || diff_expr(c, proto, 0);
    size_t from = c->out.len;
    if (put(c, name, len) || put(c, "(", 1)) return -1;
    size_t params = c->out.len;
    const uint32_t *items = rest_of(c, proto);
    for (uint32_t j = 0, n = vlen_of(c, proto); j < n; j++) {
        uint32_t plen;
        const uint8_t *pname = name_at(c->t, items[2 * j], &plen);
        if (j && puts_(c, ", ")) return -1;
        if (items[2 * j] || items[2 * j + 1] ? diff_decl(c, items[2 * j + 1], pname, plen, 0)
                                             : puts_(c, "..."))
            return -1;
    }
    /* `', '.join(params) or 'void'`, then the declarator named by all that */
    if ((c->out.len == params && puts_(c, "void")) || put(c, ")", 1)) return -1;
    size_t flen = c->out.len - from;
    uint8_t *fname = malloc(flen);
    if (!fname) return fail_nomem(c);
    memcpy(fname, c->out.p + from, flen);
    c->out.len = from;
    int rc = diff_decl(c, sot_of(c, proto), fname, (uint32_t)flen, 0);
    free(fname);
    return rc;
}

/* ---- diff's speller for the compiled report (diffreport.c) ---- */

static const flavour_t DIFF_FLAVOUR = {diff_base, diff_other, diff_params};

struct cdump_speller {
    ctx_t c;
};

cdump_speller_t *cdump_speller_new(const types_t *t, const uint8_t *dup, const uint32_t *tags)
{
    cdump_speller_t *s = calloc(1, sizeof *s);
    if (!s) {
        failed_out_of_memory();
        return NULL;
    }
    ctx_t *c = &s->c;
    if (ctx_init(c, t, 8)) {
        ctx_free(c);
        free(s);
        return NULL;
    }
    c->diff = &DIFF_FLAVOUR;
    c->dup = dup;
    c->tags = tags;
    if (ZALLOC_EACH(c->nids, ZSLOT(c->spelled), ZSLOT(c->touches), ZSLOT(c->memo_at),
                    ZSLOT(c->memo_len))) {
        failed_out_of_memory();
        cdump_speller_free(s);
        return NULL;
    }
    return s;
}

void cdump_speller_free(cdump_speller_t *s)
{
    if (!s) return;
    ctx_free(&s->c);
    free(s);
}

/* After a failure (reported: failure.h) the spellings under way are forgotten and the
 * speller goes on: a memo entry is only made whole, so what is memoized stays true. A
 * caller goes on after a declined spelling (a loop, deep nesting) and stops after any
 * other failure. */
static int speller_failed(ctx_t *c)
{
    while (c->nunder) c->spelled[c->under[--c->nunder]] = 0;
    c->failed = c->dropped = 0;
    return -1;
}

int cdump_speller_expr(cdump_speller_t *s, uint32_t id, const char **text, size_t *len,
                       int *touches)
{
    ctx_t *c = &s->c;
    if (c->failed || id >= c->nids) return fail(c, "left to the reference");
    c->out.len = 0;
    c->touched = 0;
    if (diff_expr(c, id, 0)) return speller_failed(c);
    *text = c->out.p ? c->out.p : "";
    *len = c->out.len;
    *touches = c->touched;
    return 0;
}

int cdump_speller_brief(cdump_speller_t *s, uint32_t id, const char **text, size_t *len)
{
    ctx_t *c = &s->c;
    if (c->failed || id >= c->nids) return fail(c, "left to the reference");
    c->out.len = 0;
    if (kind_of(c, id) == K_TYPEDEF ? diff_expr(c, sot_of(c, id), 0) : diff_brief(c, id))
        return speller_failed(c);
    *text = c->out.p ? c->out.p : "";
    *len = c->out.len;
    return 0;
}

int cdump_speller_label(cdump_speller_t *s, uint32_t id, const char **text, size_t *len)
{
    ctx_t *c = &s->c;
    if (c->failed || id >= c->nids) return fail(c, "left to the reference");
    c->out.len = 0;
    if (diff_base(c, id)) return speller_failed(c);
    *text = c->out.p ? c->out.p : "";
    *len = c->out.len;
    return 0;
}
