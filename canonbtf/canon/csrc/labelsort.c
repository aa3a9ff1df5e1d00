/* Types sorted by label (labels.label) and names as ranks, on keys packed into integers.
 *
 * A comparison sort that reads records and strings at every comparison stops being
 * n log n in practice once the section outgrows the caches: at 1.5 M types (bench_all's
 * 16 x, 72 MB of records) every comparison missed them, and sorting by label took about
 * a second, against 0.03 s at 95 k types. Here each record and each string is read a
 * few times, in sequence where it can be: names become ranks by a radix sort of their
 * bytes, eight at a time (or, where only equality counts, of their hashes); each type's
 * label head (kind, vlen, name, kind_flag) packs into one 64-bit key sorted by radix;
 * only types with equal heads compare the rest (size, scalars), copied into one buffer
 * per run of equal heads. The order is labels.label's, as before. */
#include "types.h"

#include <stdlib.h>
#include <string.h>

/* Stable MSD radix sort of records (key, payload), two u64s each, by key, from byte
 * `byte` (7: the top one) down; the keys of recs[0..n) are equal above it. `tmp` holds n
 * records. A byte all the records share costs one counting pass and no move. */
static void msd_sort(uint64_t *recs, uint64_t *tmp, size_t n, int byte)
{
    while (n >= 32) {
        size_t count[256] = {0}, start[256];
        unsigned shift = 8 * (unsigned)byte;
        for (size_t j = 0; j < n; j++) count[(recs[2 * j] >> shift) & 0xFF]++;
        if (count[(recs[0] >> shift) & 0xFF] == n) {
            if (!byte--) return;
            continue;
        }
        size_t pos = 0;
        for (unsigned v = 0; v < 256; v++) start[v] = pos, pos += count[v];
        for (size_t j = 0; j < n; j++) {
            size_t at = start[(recs[2 * j] >> shift) & 0xFF]++;
            tmp[2 * at] = recs[2 * j], tmp[2 * at + 1] = recs[2 * j + 1];
        }
        memcpy(recs, tmp, n * 2 * sizeof *recs);
        if (!byte) return;
        size_t lo = 0;
        for (unsigned v = 0; v < 256; lo += count[v++])
            if (count[v] > 1) msd_sort(recs + 2 * lo, tmp, count[v], byte - 1);
        return;
    }
    for (size_t j = 1; j < n; j++) {  /* a counting pass costs its 256 buckets */
        uint64_t key = recs[2 * j], value = recs[2 * j + 1];
        size_t k = j;
        for (; k && recs[2 * k - 2] > key; k--) recs[2 * k] = recs[2 * k - 2], recs[2 * k + 1] = recs[2 * k - 1];
        recs[2 * k] = key, recs[2 * k + 1] = value;
    }
}

/* Bytes [8 depth, 8 depth + 8) of a string, big-endian, zeros past its end. */
static uint64_t chunk(const uint8_t *p, uint32_t len, size_t depth)
{
    size_t at = 8 * depth, left = at < len ? len - at : 0;
    uint64_t k = 0;
    if (left >= 8) {
        for (unsigned j = 0; j < 8; j++) k = k << 8 | p[at + j];
        return k;
    }
    for (unsigned j = 0; j < 8; j++) k = k << 8 | (j < left ? p[at + j] : 0);
    return k;
}

typedef struct {
    const uint8_t **ptr;        /* by distinct index d */
    const uint32_t *len;
    const uint64_t *second;     /* by d: chunk 1, read with the strings in section order */
} strs_t;

typedef struct { size_t lo, hi, depth; } span_t;

/* Whether the strings of records r[0..m) are all the same (a span of equal hashes: most
 * often one string of each view of name_ranks_joint, read once rather than by chunks). */
static int same_strings(const uint64_t *r, size_t m, const strs_t *s)
{
    uint64_t a = r[1];
    for (size_t j = 1; j < m; j++) {
        uint64_t b = r[2 * j + 1];
        if (s->len[a] != s->len[b] || memcmp(s->ptr[a], s->ptr[b], s->len[a])) return 0;
    }
    return 1;
}

/* Strings (by distinct index d) sorted: recs (key, d), keyed by the caller with chunk 0,
 * are in memcmp order when it returns, eq[j] set where the j-th equals the one before.
 * Spans of records with equal first 8 depth bytes are sorted by the next 8, until a chunk
 * ends their strings: each string is read once per 8 bytes it shares with another (past
 * the first 16). With `hashed` the caller keyed them by hash_bytes instead (0 for the
 * empty name): equal strings end up together, first the empty name, in no other order,
 * and only strings of equal hashes are read again; with `whole` (several views, where
 * most equal hashes are one string in each) compared whole first, and sorted by chunks
 * only when they differ. */
static int sort_strings(uint64_t *recs, uint64_t *tmp, size_t n, const strs_t *s, int hashed,
                        int whole, uint8_t *eq)
{
    span_t *todo = NULL;
    size_t ntodo = 0, cap = 0;
    memset(eq, 0, n);
    if (GROW(todo, cap, 1)) return -1;
    todo[ntodo++] = (span_t){0, n, 0};
    for (int top = 1; ntodo; top = 0) {
        span_t sp = todo[--ntodo];
        uint64_t *r = recs + 2 * sp.lo;
        size_t m = sp.hi - sp.lo;
        for (size_t j = 0; !top && j < m; j++) {
            uint64_t d = r[2 * j + 1];
            r[2 * j] = sp.depth == 1 && s->second ? s->second[d] : chunk(s->ptr[d], s->len[d], sp.depth);
        }
        msd_sort(r, tmp, m, 7);
        for (size_t j = 0; j < m;) {
            size_t e = j + 1;
            while (e < m && r[2 * e] == r[2 * j]) e++;
            if (e - j > 1 && (top && hashed ? whole && same_strings(r + 2 * j, e - j, s)
                                            : !(r[2 * j] & 0xFF))) {
                /* the strings end in this chunk, or are equal hashes of one string */
                memset(eq + sp.lo + j + 1, 1, e - j - 1);
            } else if (e - j > 1) {
                if (GROW(todo, cap, ntodo + 1)) {
                    free(todo);
                    return -1;
                }
                todo[ntodo++] = (span_t){sp.lo + j, sp.lo + e, top && hashed ? 0 : sp.depth + 1};
            }
            j = e;
        }
    }
    free(todo);
    return 0;
}

void ranks_free(ranks_t *r)
{
    free(r->first), free(r->rank), free((void *)r->ptr), free(r->len);
    memset(r, 0, sizeof *r);
}

/* Where each type's names start in r->rank (r->first), and their offsets there: the
 * type's name, then its items' (KINDS_ITEMS_NAMED). */
static int gather_names(const types_t *t, const uint32_t *ids, uint32_t n, ranks_t *r)
{
    size_t total = 0;
    r->first = big_alloc((size_t)n + 1, sizeof *r->first);
    if (!r->first) return -1;
    for (uint32_t k = 0; k < n; k++) {
        r->first[k] = (uint32_t)total;
        uint32_t i = ids[k];
        total += 1 + (kind_in(KINDS_ITEMS_NAMED, t_kind(t, i)) ? t_vlen(t, i) : 0);
        if (total > UINT32_MAX) return -1;
    }
    r->first[n] = (uint32_t)total;
    r->rank = big_alloc(total ? total : 1, sizeof *r->rank);
    if (!r->rank) return -1;
    uint32_t *u = r->rank;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = ids[k], kind = t_kind(t, i);
        *u++ = t_name(t, i);
        if (!kind_in(KINDS_ITEMS_NAMED, kind)) continue;
        uint32_t step = kind_item_words(kind), vlen = t_vlen(t, i);
        const uint32_t *item = t_rest(t, i);
        for (uint32_t j = 0; j < vlen; j++, item += step) *u++ = item[0];
    }
    return 0;
}

/* The distinct offsets of r->rank[0..nuses) as a bitmap over the string chain, with the
 * number of offsets below each of its words: the d-th distinct offset, in section order,
 * is found without a sort or a hash table (and the bitmap is an eighth of the strings). */
typedef struct {
    uint64_t *bits;
    uint32_t *below;
    size_t words;
} offsets_t;

static uint32_t offset_index(const offsets_t *o, uint32_t off)
{
    uint64_t mask = (1ULL << (off & 63)) - 1;
    return o->below[off >> 6] + (uint32_t)__builtin_popcountll(o->bits[off >> 6] & mask);
}

static int distinct_offsets(const types_t *t, const uint32_t *offs, size_t nuses, offsets_t *o,
                            uint32_t *nd)
{
    const strtab_t *last = &t->tabs[t->ntabs - 1];
    o->words = ((size_t)last->start + last->len) / 64 + 1;
    o->bits = big_zalloc(o->words, sizeof *o->bits);
    o->below = big_alloc(o->words, sizeof *o->below);
    if (!o->bits || !o->below) return -1;
    for (size_t u = 0; u < nuses; u++) o->bits[offs[u] >> 6] |= 1ULL << (offs[u] & 63);
    uint32_t total = 0;
    for (size_t w = 0; w < o->words; w++) {
        o->below[w] = total;
        total += (uint32_t)__builtin_popcountll(o->bits[w]);
    }
    *nd = total;
    return 0;
}

int name_ranks(const types_t *t, const uint32_t *ids, uint32_t n, int ordered, ranks_t *r)
{
    return name_ranks_joint(1, &t, &ids, &n, ordered, r);
}

int name_ranks_joint(int views, const types_t *const *t, const uint32_t *const *ids,
                     const uint32_t *n, int ordered, ranks_t *r)
{
    offsets_t *o = calloc((size_t)views, sizeof *o);
    uint64_t *recs = NULL, *tmp = NULL, *second = NULL;
    uint8_t *eq = NULL;
    uint32_t nd = 0, *rank_of = NULL, *len = NULL, *base = calloc((size_t)views, sizeof *base);
    const uint8_t **ptr = NULL;
    int rc = -1;
    for (int v = 0; v < views; v++) memset(&r[v], 0, sizeof r[v]);
    if (!o || !base) goto done;
    for (int v = 0; v < views; v++) {
        uint32_t count;
        if (gather_names(t[v], ids[v], n[v], &r[v])
            || distinct_offsets(t[v], r[v].rank, r[v].first[n[v]], &o[v], &count)
            || count > UINT32_MAX - 1 - nd)
            goto done;
        base[v] = nd, nd += count;
    }
    ptr = big_alloc((size_t)nd + 1, sizeof *ptr);
    len = big_alloc((size_t)nd + 1, sizeof *len);
    recs = big_alloc(((size_t)nd + 1) * 2, sizeof *recs);
    tmp = big_alloc(((size_t)nd + 1) * 2, sizeof *tmp);
    second = ordered ? big_alloc((size_t)nd + 1, sizeof *second) : NULL;
    eq = malloc((size_t)nd + 1);
    rank_of = big_alloc((size_t)nd + 1, sizeof *rank_of);
    if (!ptr || !len || !recs || !tmp || (ordered && !second) || !eq || !rank_of) goto done;
    uint32_t d = 0;
    for (int v = 0; v < views; v++)
        for (size_t w = 0; w < o[v].words; w++)  /* the strings in section order */
            for (uint64_t b = o[v].bits[w]; b; b &= b - 1, d++) {
                const uint8_t *p = ptr[d] = name_at(t[v], (uint32_t)(64 * w + (unsigned)__builtin_ctzll(b)), &len[d]);
                recs[2 * d] = !ordered ? (len[d] ? hash_bytes(p, len[d]) : 0) : chunk(p, len[d], 0);
                recs[2 * d + 1] = d;
                if (ordered) second[d] = chunk(p, len[d], 1);
            }
    strs_t strs = {ptr, len, second};
    if (sort_strings(recs, tmp, nd, &strs, !ordered, views > 1, eq)) goto done;
    uint32_t next = 0;
    for (size_t j = 0; j < nd; j++) {
        uint32_t e = (uint32_t)recs[2 * j + 1];
        if (!eq[j] && (j || len[e])) next++;  /* rank 0: the empty name */
        rank_of[e] = next;
    }
    for (int v = 0; v < views; v++) {
        ranks_t *rv = &r[v];
        rv->distinct = next + 1;
        rv->ptr = big_alloc((size_t)rv->distinct, sizeof *rv->ptr);
        rv->len = big_alloc((size_t)rv->distinct, sizeof *rv->len);
        if (!rv->ptr || !rv->len) goto done;
        if (v) {   /* a copy of the first's, in sequence */
            memcpy((void *)rv->ptr, r[0].ptr, rv->distinct * sizeof *rv->ptr);
            memcpy(rv->len, r[0].len, rv->distinct * sizeof *rv->len);
        } else {
            rv->ptr[0] = (const uint8_t *)"", rv->len[0] = 0;
            for (uint32_t e = 0; e < nd; e++) rv->ptr[rank_of[e]] = ptr[e], rv->len[rank_of[e]] = len[e];
        }
        for (size_t u = 0; u < rv->first[n[v]]; u++)
            rv->rank[u] = rank_of[base[v] + offset_index(&o[v], rv->rank[u])];
    }
    rc = 0;
done:
    for (int v = 0; o && v < views; v++) free(o[v].bits), free(o[v].below);
    free(o), free(base), free(recs), free(tmp), free(second), free(eq), free(rank_of);
    free((void *)ptr), free(len);
    for (int v = 0; rc && v < views; v++) ranks_free(&r[v]);
    return rc;
}

static int sized(uint32_t kind)
{
    return kind == K_INT || kind == K_STRUCT || kind == K_UNION || kind == K_ENUM
        || kind == K_DATASEC || kind == K_FLOAT || kind == K_ENUM64;
}

/* Words of label_tail for a type of `kind` with `vlen` items; 0 for the kinds without. */
size_t tail_count(uint32_t kind, uint32_t vlen)
{
    size_t n = sized(kind);
    switch (kind) {
    case K_STRUCT: case K_UNION: case K_ENUM: case K_ENUM64: return n + 3 * (size_t)vlen;
    case K_DATASEC: return n + 2 * (size_t)vlen;
    case K_FUNC_PROTO: return vlen;
    case K_INT: return n + 3;
    case K_ARRAY: case K_VAR: case K_DECL_TAG: return 1;
    default: return n;
    }
}

/* What follows kind_flag in type i's label (its size, then labels.scalars) as u32 words
 * that compare as the label does (names as ranks, signed values biased); `names` are
 * its name ranks (its own, then its items'). Writes tail_count words. */
void label_tail(const types_t *t, uint32_t i, const uint32_t *names, uint32_t *out)
{
    uint32_t kind = t_kind(t, i), vlen = t_vlen(t, i), kflag = t_kflag(t, i), n = 0;
    const uint32_t *r = t_rest(t, i);
    if (sized(kind)) out[n++] = t_sot(t, i);
    switch (kind) {
    case K_STRUCT: case K_UNION:
        for (uint32_t j = 0; j < vlen; j++, r += 3) {
            out[n++] = names[1 + j];
            out[n++] = kflag ? r[2] & 0xFFFFFF : r[2];
            out[n++] = kflag ? r[2] >> 24 : 0;
        }
        return;
    case K_INT:
        out[n] = (r[0] >> 24) & 0xF, out[n + 1] = (r[0] >> 16) & 0xFF, out[n + 2] = r[0] & 0xFF;
        return;
    case K_ENUM: case K_ENUM64: {
        uint32_t step = kind == K_ENUM ? 2 : 3;
        for (uint32_t j = 0; j < vlen; j++, r += step) {
            uint64_t v = enumerator_value(kind, r);
            if (kflag) v = (uint64_t)enumerator_signed(kind, v) ^ (1ULL << 63);
            out[n++] = names[1 + j];
            out[n++] = (uint32_t)(v >> 32);
            out[n++] = (uint32_t)v;
        }
        return;
    }
    case K_FUNC_PROTO:
        for (uint32_t j = 0; j < vlen; j++) out[n++] = names[1 + j];
        return;
    case K_ARRAY:
        out[n] = r[2];
        return;
    case K_DATASEC:
        for (uint32_t j = 0; j < vlen; j++, r += 3) out[n++] = r[1], out[n++] = r[2];
        return;
    case K_VAR:
        out[n] = r[0];
        return;
    case K_DECL_TAG:
        out[n] = r[0] ^ 0x80000000u;
        return;
    default:
        return;
    }
}

typedef struct {
    const uint32_t *buf;
    size_t width;
} rows_t;

static int by_row(const void *ctx, uint32_t a, uint32_t b)
{
    const rows_t *c = ctx;
    const uint32_t *x = c->buf + a * c->width, *y = c->buf + b * c->width;
    for (size_t j = 0; j < c->width; j++)
        if (x[j] != y[j]) return x[j] < y[j] ? -1 : 1;
    return 0;
}

typedef struct {
    const types_t *t;
    const uint32_t *ids;
    const ranks_t *names;
    uint32_t *buf;              /* rows, then the indices sorted by row */
    size_t cap;
    uint64_t *tmp;
} runs_t;

/* Records recs[0..m) (equal heads; payload: position in ids) sorted by their label tails,
 * stably; fresh[j] set where one's tail differs from the one before. */
static int sort_run(runs_t *c, uint64_t *recs, size_t m, uint8_t *fresh)
{
    uint32_t first = c->ids[recs[1]];
    size_t width = tail_count(t_kind(c->t, first), t_vlen(c->t, first));
    if (!width) return 0;
    if (m > SIZE_MAX / 4 / (width + 1) || GROW(c->buf, c->cap, m * (width + 1))) return -1;
    uint32_t *rows = c->buf, *index = c->buf + m * width;
    int in_order = 1;
    rows_t ctx = {rows, width};
    for (size_t j = 0; j < m; j++) {
        uint32_t k = (uint32_t)recs[2 * j + 1];
        label_tail(c->t, c->ids[k], c->names->rank + c->names->first[k], rows + j * width);
        index[j] = (uint32_t)j;
        if (j && in_order) in_order = by_row(&ctx, (uint32_t)j - 1, (uint32_t)j) <= 0;
    }
    if (!in_order && sort_u32(index, m, by_row, &ctx)) return -1;
    for (size_t j = 0; j < m; j++) {
        c->tmp[2 * j] = recs[2 * index[j]], c->tmp[2 * j + 1] = recs[2 * index[j] + 1];
        if (j && by_row(&ctx, index[j - 1], index[j])) fresh[j] = 1;
    }
    memcpy(recs, c->tmp, 2 * m * sizeof *recs);
    return 0;
}

int label_sort(const types_t *t, const uint32_t *ids, uint32_t n, const ranks_t *names,
               int by_name, uint32_t *out, uint8_t *fresh)
{
    uint64_t *recs = big_alloc(((size_t)n + 1) * 2, sizeof *recs);
    runs_t c = {t, ids, names, NULL, 0, big_alloc(((size_t)n + 1) * 2, sizeof *c.tmp)};
    int rc = -1;
    if (!recs || !c.tmp) goto done;
    /* The head as one key: kind 5 bits, vlen 24, name rank 32, kind_flag 1. */
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = ids[k];
        uint64_t kind = t_kind(t, i), vlen = t_vlen(t, i), name = names->rank[names->first[k]];
        recs[2 * k] = by_name ? name << 30 | kind << 25 | vlen << 1 | t_kflag(t, i)
                              : kind << 57 | vlen << 33 | name << 1 | t_kflag(t, i);
        recs[2 * k + 1] = k;
    }
    msd_sort(recs, c.tmp, n, 7);
    memset(fresh, 0, n);
    for (uint32_t j = 0; j < n;) {
        uint32_t e = j + 1;
        while (e < n && recs[2 * e] == recs[2 * j]) e++;
        fresh[j] = j > 0;
        if (e - j > 1 && sort_run(&c, recs + 2 * j, e - j, fresh + j)) goto done;
        j = e;
    }
    for (uint32_t j = 0; j < n; j++) out[j] = (uint32_t)recs[2 * j + 1];
    rc = 0;
done:
    free(recs), free(c.tmp), free(c.buf);
    return rc;
}
