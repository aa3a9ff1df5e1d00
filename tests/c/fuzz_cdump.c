/* libFuzzer target: the C header's emitter (emit/c/csrc/cdump.c) on untrusted bytes. The
 * input is a BTF blob; where index_types takes it, the shape check, the type facts, the
 * definitions, their placement (mentions as spelled, ranks in id order), each FUNC's
 * declaration and the definitions spelled again with `___N` names and suffixes all run.
 * Each either declines (reported through failure.h) or gives spellings whose ranges lie
 * inside their arrays, and a placement that is a permutation of the definitions. Only
 * what the header spells is spelled: types the shape check passes, and not huge (anonymous
 * types shared in a DAG are printed inline at each use, by the reference too: 2^depth
 * lines from a few hundred bytes; a struct's padding is a line per 8 bytes). */
#include <stdlib.h>
#include <string.h>

#include "btfblob.h"
#include "cdump.h"

#define MAX_EXPANDED 100000u

/* An upper bound of the lines a spelling of `id` makes (its references followed, each
 * unnamed one again at each use; a struct's or union's padding), saturating at
 * MAX_EXPANDED; memo 0 unknown. */
static uint32_t expanded(const types_t *t, uint32_t id, uint32_t *memo, uint32_t *edges,
                         int depth)
{
    if (id < t->first_id) return 1;
    uint32_t i = id - t->first_id, kind = t_kind(t, i);
    uint64_t total = 1 + (kind == K_STRUCT || kind == K_UNION ? t_sot(t, i) / 8 : 0);
    if (memo[i]) return memo[i];
    if (depth > 200) return MAX_EXPANDED;
    memo[i] = MAX_EXPANDED;             /* under way: a loop counts as huge */
    uint32_t n = type_edges(t, i, edges), *mine = malloc((n + 1) * sizeof *mine);
    if (!mine) abort();
    memcpy(mine, edges, n * sizeof *mine);
    for (uint32_t k = 0; k < n && total < MAX_EXPANDED; k++) {
        uint32_t e = mine[k], len = 0;
        if (e >= t->first_id) name_at(t, t_name(t, e - t->first_id), &len);
        total += len ? 1 : expanded(t, e, memo, edges, depth + 1);
    }
    free(mine);
    return memo[i] = total < MAX_EXPANDED ? (uint32_t)total : MAX_EXPANDED;
}

/* Whether the definitions are small enough to spell here. */
static int small_enough(const types_t *t)
{
    uint32_t *memo = calloc((size_t)t->count + 1, sizeof *memo);
    uint32_t *edges = malloc(((size_t)t->nwords + 2) * sizeof *edges);
    if (!memo || !edges) abort();
    uint64_t sum = 0;
    for (uint32_t i = 0; i < t->count && sum < MAX_EXPANDED; i++)
        sum += expanded(t, t->first_id + i, memo, edges, 0);
    free(memo);
    free(edges);
    return sum < MAX_EXPANDED;
}

static void check_spellings(const cdump_spellings_t *s)
{
    for (size_t k = 0; k < s->nitems; k++) {
        const cdump_spelling_t *one = &s->items[k];
        if (one->text_at + one->text_len > s->text.len
            || one->mention_at + one->nmentions > s->nmentions
            || one->enumerator_at + one->nenumerators > s->nenumerators)
            abort();
    }
}

/* Enumerator 1 of every definition gets a suffix. */
static int fuzz_suffix(void *arg, uint32_t id, size_t occurrence, const char **s, size_t *len)
{
    *s = occurrence == 1 ? "___9" : NULL;
    *len = 4;
    return 0;
}

static void placement(const types_t *t, uint32_t ptr_size, const cdump_spellings_t *s)
{
    size_t n = s->nitems, nids = (size_t)t->first_id + t->count, nforward = 0;
    uint32_t *defs = malloc((n + 1) * sizeof *defs), *sequence = malloc((n + 1) * sizeof *sequence);
    uint32_t *forward = malloc(nids * sizeof *forward);
    uint64_t *rank = malloc((n + 1) * sizeof *rank);
    size_t *at = malloc((n + 1) * sizeof *at), *count = malloc((n + 1) * sizeof *count);
    uint8_t *seen = calloc(nids, 1);
    if (!defs || !sequence || !forward || !rank || !at || !count || !seen) abort();
    for (size_t k = 0; k < n; k++) {
        defs[k] = s->items[k].id;
        rank[k] = n - k;
        at[k] = s->items[k].mention_at;
        count[k] = s->items[k].nmentions;
    }
    cdump_place_in_t in = {defs, rank, s->mentions, at, count, n};
    if (!cdump_placement(t, ptr_size, &in, sequence, forward, &nforward)) {
        for (size_t k = 0; k < n; k++) {
            if (sequence[k] >= nids || seen[sequence[k]]) abort();
            seen[sequence[k]] = 1;
        }
        if (nforward > nids) abort();
    }
    free(defs);
    free(sequence);
    free(forward);
    free(rank);
    free(at);
    free(count);
    free(seen);
}

/* Each FUNC declared as its own name, and the definitions again with a display name for
 * every third type. */
static void again(const types_t *t, uint32_t ptr_size, const cdump_spellings_t *defs)
{
    size_t nids = (size_t)t->first_id + t->count, nfuncs = 0;
    uint32_t *funcs = malloc(nids * sizeof *funcs), *ids = malloc((defs->nitems + 1) * sizeof *ids);
    cdump_name_t *names = malloc(nids * sizeof *names), *display = calloc(nids, sizeof *display);
    if (!funcs || !ids || !names || !display) abort();
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t len;
        const uint8_t *name = name_at(t, t_name(t, i), &len);
        if (t_kind(t, i) == K_FUNC) {
            funcs[nfuncs] = t->first_id + i;
            names[nfuncs++] = (cdump_name_t){(const char *)name, len};
        }
        if (i % 3 == 0) display[t->first_id + i] = (cdump_name_t){"renamed___1", 11};
    }
    for (size_t k = 0; k < defs->nitems; k++) ids[k] = defs->items[k].id;
    cdump_spellings_t s = {0};
    if (!cdump_declarations(t, ptr_size, display, funcs, names, nfuncs, &s)) check_spellings(&s);
    cdump_spellings_free(&s);
    if (!cdump_render(t, ptr_size, display, ids, defs->nitems, fuzz_suffix, NULL, &s))
        check_spellings(&s);
    cdump_spellings_free(&s);
    free(funcs);
    free(ids);
    free(names);
    free(display);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    blob_t b;
    if (blob_open(data, size, NULL, &b) == BLOB_OK && !cdump_facts_apply(&b.t)) {
        uint32_t ptr_size = cdump_pointer_size(&b.t), len;
        uint8_t *info = malloc((size_t)b.t.count + 1);
        if (!info) abort();
        cdump_info_bytes(&b.t, info);
        for (uint32_t id = 0; id <= b.t.count; id++) (void)cdump_type_name(&b.t, id, &len);
        for (uint32_t i = 0; i < b.t.count; i++)
            if (cdump_tagged_function(&b.t, i) >= b.t.first_id + b.t.count) abort();
        free(info);
        int shape = cdump_shape_ok(&b.t, ptr_size);
        cdump_spellings_t s = {0};
        if (shape == 1 && small_enough(&b.t) && !cdump_definitions(&b.t, ptr_size, &s)) {
            check_spellings(&s);
            placement(&b.t, ptr_size, &s);
            again(&b.t, ptr_size, &s);
        }
        cdump_spellings_free(&s);
    }
    blob_free(&b);
    return 0;
}
