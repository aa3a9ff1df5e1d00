/* The C speller's context, shared by the header's spelling (cdump.c) and diff's
 * (diff/csrc/diffspell.c): the same declarator chains (chain_text), read as
 * btf/declarator.py and emit/c/spell.py read them; `diff` picks the flavour. Internal to
 * those two files: nothing here is part of the extension's interface. Plain C: a failure
 * is reported through failure.h as it happens and kept in `failed`. */
#ifndef CANONBTF_CSPELL_H
#define CANONBTF_CSPELL_H

#include <stdint.h>

#include "cdump.h"
#include "text.h"
#include "types.h"

/* Deeper by-value or spelling nesting than this is left to the reference, which allows
 * 150 (c_shape.MAX_NESTING): below it, the reference certainly finds nothing. */
#define SAFE_NESTING 100
/* c_shape.MAX_PADDING, in bits. */
#define MAX_PADDING_BITS (8ULL << 20)
/* Longer declarator chains or deeper recursion only come from input the shape check
 * refuses; past these the call gives up (ValueError) instead of trusting it. */
#define MAX_CHAIN 160
#define MAX_DEPTH 1000
/* diff's spelling: deeper nesting of prototypes is left to the reference (whose own
 * recursion limit then decides what happens); chain_text counts two levels a prototype. */
#define DIFF_DEPTH 64
/* Sizes past this (in bytes) are left to the reference, whose integers do not overflow. */
#define SIZE_LIMIT (1ULL << 56)

/* ctx_t.failed: nothing yet; an input left to the reference (fail: ValueError); out of
 * memory, or a caller's callback failed with its own report (the call cannot go on). */
enum { CTX_OK = 0, CTX_DECLINED = 1, CTX_BROKEN = 2 };

typedef struct ctx ctx_t;

/* A flavour of the chains' spelling other than the header's (diff's: diffspell.c): how a
 * named base type, a chain's odd end (or CHAIN_CUT) and a prototype's parameters read. */
typedef struct {
    int (*base)(ctx_t *c, uint32_t id);
    int (*other)(ctx_t *c, uint32_t id);
    int (*params)(ctx_t *c, uint32_t proto, int depth);
} flavour_t;

struct ctx {
    const types_t *t;
    uint32_t nids;
    uint64_t ptr_size;
    /* measure() memo: 0 unknown, 1 in progress, 2 known. */
    uint8_t *state;
    uint64_t *size, *align;
    uint8_t *is_inline;          /* anonymous enums printed inside some definition */
    const cdump_name_t *display; /* the caller's `___N` name per id ({NULL, 0}: none), or NULL */
    /* The definition under way: the `___N` suffix of its enumerators (or NULL), and where
     * its mentions and enumerators go (the header's spelling; NULL in diff's). */
    cdump_suffix_fn suffix;
    void *suffix_arg;
    uint32_t spelling;
    cdump_spellings_t *into;
    text_t out;
    int failed;                  /* CTX_*: reported as it happened */
    /* diff's flavour (cdump_diff_spell): references spelled as ReferenceSpeller does;
     * NULL: the header's. */
    const flavour_t *diff;
    int dropped;                 /* a qualifier C has no place for was left out */
    uint8_t *spelled;            /* expr memo by id: 0 unknown, 1 under way, 2 in memo */
    /* diff's duplicated names (diff._Speller): by id, a duplicated name's root and its
     * tag (0: none yet), or NULL; whether a spelling (by id, memoized) and the one under
     * way named such a type. */
    const uint8_t *dup;
    const uint32_t *tags;
    uint8_t *touches;
    int touched;
    uint32_t under[DIFF_DEPTH / 2 + 2];   /* the ids under way, innermost last */
    int nunder;
    size_t *memo_at;
    uint32_t *memo_len;
    text_t memo;
};

/* ---- type access (own ids only: no base) ---- */

static inline uint32_t idx(const ctx_t *c, uint32_t id) { return id - c->t->first_id; }
static inline uint32_t kind_of(const ctx_t *c, uint32_t id) { return t_kind(c->t, idx(c, id)); }
static inline uint32_t vlen_of(const ctx_t *c, uint32_t id) { return t_vlen(c->t, idx(c, id)); }
static inline uint32_t kflag_of(const ctx_t *c, uint32_t id) { return t_kflag(c->t, idx(c, id)); }
static inline uint32_t sot_of(const ctx_t *c, uint32_t id) { return t_sot(c->t, idx(c, id)); }
static inline const uint32_t *rest_of(const ctx_t *c, uint32_t id) { return t_rest(c->t, idx(c, id)); }

/* The shared part (cdump.c); hidden: not exported from the extension. */
#pragma GCC visibility push(hidden)
/* ValueError(what) (CTX_DECLINED) unless a failure is reported already; -1. */
int fail(ctx_t *c, const char *what);
/* MemoryError (CTX_BROKEN); -1. */
int fail_nomem(ctx_t *c);
const uint8_t *name_of(const ctx_t *c, uint32_t id, uint32_t *len);
/* 0, or -1 reported (fail_nomem); ctx_free it either way. */
int ctx_init(ctx_t *c, const types_t *t, uint64_t ptr_size);
void ctx_free(ctx_t *c);
int put(ctx_t *c, const void *s, size_t n);
int puts_(ctx_t *c, const char *s);
int putf(ctx_t *c, const char *fmt, ...);
int put_name(ctx_t *c, uint32_t id);
int is_qualifier(uint32_t kind);
/* Declarators._chain: chain[:end] with declarator name `fname`. */
int chain_text(ctx_t *c, const uint32_t *chain, int end, const uint8_t *fname,
               uint32_t flen, int level, int mode, int depth);

/* diff's flavour (ReferenceSpeller) (diff/csrc/diffspell.c), which it reaches through
 * ctx_t.diff: the header's C (cdump.c) links without it. */
#define CHAIN_CUT UINT32_MAX   /* declarator_chain's -1: a chain past DIFF_CHAIN */
int diff_base(ctx_t *c, uint32_t id);
int diff_other(ctx_t *c, uint32_t id);
int diff_params(ctx_t *c, uint32_t proto, int depth);

#pragma GCC visibility pop

#endif
