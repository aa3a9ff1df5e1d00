/* libFuzzer target: the DWARF core's plain C on untrusted bytes: a symbol table scanned
 * (dwarf/csrc/symtab.c), relocations applied (reloc.c) and a unit's references pooled
 * (pool.c). The input: a byte of flags (ELF64, little-endian, the section of BTF ids),
 * two 16-bit lengths, then the parts they cut. Every kept symbol's name must lie inside
 * the string table and its flags say something; the pooling must meet its graph in
 * _strongly_connected's order (what a record references pooled before it, or in its own
 * cycle) and give every node an id. */
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "reloc.h"
#include "symtab.h"

#define MAX_NODES 64

static const reloc_type_t TYPES[] = {{10, 4}, {1, 8}, {2, 4}};

static void scan(const uint8_t *table, size_t len, const uint8_t *strtab, size_t strtab_len,
                 int elf64, int little, int64_t btf_ids, const uint8_t *alloc, size_t alloc_len)
{
    symbol_entries_t out = {0};
    if (scan_symbol_table(table, len, strtab, strtab_len, elf64, little, btf_ids, alloc,
                          alloc_len, &out))
        abort();
    for (size_t i = 0; i < out.n; i++) {
        const symbol_entry_t *s = &out.a[i];
        if (!s->flags || s->name_at > strtab_len || s->name_len > strtab_len - s->name_at)
            abort();
        if (s->name_len && memchr(strtab + s->name_at, 0, s->name_len)) abort();
    }
    free(out.a);
}

static void relocate(const uint8_t *section, size_t size, const uint8_t *entries,
                     size_t entries_len, const uint8_t *symtab, size_t symtab_len, int little)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) abort();
    memcpy(copy, section, size);
    relocate_section(copy, size, entries, entries_len, symtab, symtab_len, little, TYPES, 3);
    free(copy);
}

/* A store that checks what it is given against the graph. */
typedef struct {
    const pool_graph_t *g;
    int64_t next;
} checking_store_t;

/* Every reference of `node` pooled (>= 0), or with `classes` a member of the cycle. */
static void check_refs(const pool_graph_t *g, int32_t node, const int64_t *pool_id,
                       int32_t classes, int in_cycle)
{
    for (size_t k = g->ref_start[node]; k < g->ref_start[node + 1]; k++) {
        int64_t id = pool_id[g->refs[k]];
        if (id < -(int64_t)classes || (id < 0 && !in_cycle)) abort();
    }
}

static int store_acyclic(void *ctx, int32_t node, const int64_t *pool_id, int64_t *id)
{
    checking_store_t *s = ctx;
    check_refs(s->g, node, pool_id, 0, 0);
    *id = s->next++;
    return 0;
}

static int store_ranks(void *ctx, const int32_t *members, int32_t n, const int64_t *pool_id,
                       uint32_t *rank)
{
    checking_store_t *s = ctx;
    for (int32_t i = 0; i < n; i++) {
        if (pool_id[members[i]] != -1) abort();
        check_refs(s->g, members[i], pool_id, 1, 1);
        rank[i] = (uint32_t)((s->g->ref_start[members[i] + 1] - s->g->ref_start[members[i]]) % (size_t)n);
    }
    return 0;
}

static int store_cycle(void *ctx, const int32_t *representative, int32_t classes,
                       const int64_t *pool_id, int64_t *ids)
{
    checking_store_t *s = ctx;
    for (int32_t c = 0; c < classes; c++) {
        if (pool_id[representative[c]] != -1 - c) abort();
        check_refs(s->g, representative[c], pool_id, classes, 1);
        ids[c] = s->next++;
    }
    return 0;
}

/* The bytes as a graph: up to MAX_NODES nodes, each byte a reference (node 0 a byte of
 * 0 ends a node's references). */
static void pool(const uint8_t *bytes, size_t len)
{
    size_t start[MAX_NODES + 1] = {0};
    int32_t refs[4096], count = 1;
    size_t n = 0;
    for (size_t i = 0; i < len && n < 4096 && count < MAX_NODES - 1; i++) {
        if (!bytes[i]) {
            start[++count] = n;
            continue;
        }
        refs[n++] = 1 + bytes[i] % (MAX_NODES - 1);
    }
    start[++count] = n;
    /* References past the last node: onto node 1. */
    for (size_t k = 0; k < n; k++)
        if (refs[k] >= count) refs[k] = 1;
    pool_graph_t g = {count, start, refs};
    checking_store_t s = {&g, 0};
    pool_store_t store = {&s, store_acyclic, store_ranks, store_cycle};
    int64_t pool_id[MAX_NODES];
    if (pool_unit(&g, &store, pool_id) || pool_id[0]) abort();
    for (int32_t node = 1; node < count; node++)
        if (pool_id[node] < 0 || pool_id[node] >= s.next) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5) return 0;
    int elf64 = data[0] & 1, little = (data[0] >> 1) & 1;
    int64_t btf_ids = (int64_t)(data[0] >> 2) - 1;
    size_t rest = size - 5, a = (data[1] | (size_t)data[2] << 8) % (rest + 1);
    size_t b = (data[3] | (size_t)data[4] << 8) % (rest - a + 1);
    const uint8_t *first = data + 5, *second = first + a, *third = second + b;
    size_t c = rest - a - b;
    scan(first, a, second, b, elf64, little, btf_ids, third, c);
    relocate(third, c, first, a, second, b, little);
    pool(second, b);
    return 0;
}
