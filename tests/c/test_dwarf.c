/* The DWARF core's plain C without Python: relocations applied (dwarf/csrc/reloc.c), the
 * symbol table scanned (symtab.c) and a unit's records pooled as a graph (pool.c), as
 * reloc.h, symtab.h and pool.h promise them, on handmade ELF bytes and graphs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "pool.h"
#include "reloc.h"
#include "symtab.h"

/* `v` as `size` bytes at p in the given byte order. */
static void put(uint8_t *p, int size, int little, uint64_t v)
{
    for (int i = 0; i < size; i++)
        p[little ? i : size - 1 - i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(const uint8_t *p, int size, int little)
{
    uint64_t v = 0;
    for (int i = 0; i < size; i++)
        v |= (uint64_t)p[little ? i : size - 1 - i] << (8 * i);
    return v;
}

/* ---- reloc.c ---- */

static void rela(uint8_t *entry, int little, uint64_t offset, uint32_t symbol, uint32_t type,
                 uint64_t addend)
{
    put(entry, 8, little, offset);
    put(entry + 8, 8, little, (uint64_t)symbol << 32 | type);
    put(entry + 16, 8, little, addend);
}

static const reloc_type_t X86_64[] = {{10, 4}, {1, 8}};   /* R_X86_64_32, R_X86_64_64 */

static void relocations_store_value_plus_addend(void)
{
    for (int little = 0; little < 2; little++) {
        uint8_t symtab[3 * 24] = {0}, entries[2 * 24 + 7], data[16];
        memset(data, 0xAA, sizeof data);
        put(symtab + 24 + 8, 8, little, 0x1000);
        put(symtab + 48 + 8, 8, little, 0x123456789ull);
        rela(entries, little, 2, 1, 10, 0x20);            /* 4 bytes at 2 */
        rela(entries + 24, little, 8, 2, 1, 1);           /* 8 bytes at 8 */
        memset(entries + 48, 0xFF, 7);                    /* a torn entry: ignored */
        CHECK(relocate_section(data, sizeof data, entries, sizeof entries, symtab,
                               sizeof symtab, little, X86_64, 2) == 0);
        CHECK(get(data + 2, 4, little) == 0x1020);
        CHECK(get(data + 8, 8, little) == 0x12345678Aull);
        CHECK(data[0] == 0xAA && data[1] == 0xAA && data[6] == 0xAA && data[7] == 0xAA);
    }
    /* 32 bits keep the low bytes of the sum. */
    uint8_t symtab[2 * 24] = {0}, entry[24], data[4] = {0};
    put(symtab + 24 + 8, 8, 1, 0xFFFFFFFFull);
    rela(entry, 1, 0, 1, 10, 2);
    CHECK(relocate_section(data, 4, entry, 24, symtab, sizeof symtab, 1, X86_64, 2) == 0);
    CHECK(get(data, 4, 1) == 1);
}

/* An unknown type, a symbol past the table, a place past the end: refused. */
static void relocations_refuse_what_they_cannot_apply(void)
{
    uint8_t symtab[2 * 24] = {0}, entry[24], data[8] = {0};
    rela(entry, 1, 0, 1, 2, 0);
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab, 1, X86_64, 2) == -1);
    rela(entry, 1, 0, 2, 10, 0);
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab, 1, X86_64, 2) == -1);
    rela(entry, 1, 0, 1, 10, 0);
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab - 1, 1, X86_64, 2) == -1);
    rela(entry, 1, 5, 1, 10, 0);
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab, 1, X86_64, 2) == -1);
    rela(entry, 1, 1, 1, 1, 0);
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab, 1, X86_64, 2) == -1);
    rela(entry, 1, UINT64_MAX - 1, 1, 10, 0);
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab, 1, X86_64, 2) == -1);
    rela(entry, 1, 4, 1, 10, 0);                          /* the last 4 bytes: fine */
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab, 1, X86_64, 2) == 0);
    CHECK(relocate_section(data, 8, entry, 24, symtab, sizeof symtab, 1, X86_64, 0) == -1);
    CHECK(relocate_section(data, 8, entry, 0, symtab, 0, 1, X86_64, 0) == 0);
}

/* ---- symtab.c ---- */

/* A symbol as ELF64 (24 bytes) or ELF32 (16 bytes) lays it out. */
static void symbol(uint8_t *p, int elf64, int little, uint32_t name, unsigned type,
                   unsigned shndx, uint64_t value, uint64_t size)
{
    if (elf64) {
        put(p, 4, little, name);
        p[4] = (uint8_t)type;
        p[5] = 0;
        put(p + 6, 2, little, shndx);
        put(p + 8, 8, little, value);
        put(p + 16, 8, little, size);
    } else {
        put(p, 4, little, name);
        put(p + 4, 4, little, value);
        put(p + 8, 4, little, size);
        p[12] = (uint8_t)type;
        p[13] = 0;
        put(p + 14, 2, little, shndx);
    }
}

enum { FUNC = 2, OBJECT = 1, NOTYPE = 0, GLOBAL = 0x10 };

static void symbols_kept_as_the_encoder_asks(void)
{
    static const uint8_t strtab[] = "\0main\0counter\0__BTF_ID__func__x\0tail";
    const uint8_t alloc[] = {0, 1, 0, 1};
    for (int elf64 = 0; elf64 < 2; elf64++)
        for (int little = 0; little < 2; little++) {
            size_t size = elf64 ? 24 : 16;
            uint8_t table[11 * 24] = {0};
            symbol(table + 1 * size, elf64, little, 1, GLOBAL | FUNC, 1, 0x100, 8);
            symbol(table + 2 * size, elf64, little, 6, OBJECT, 1, 0x200, 4);
            symbol(table + 3 * size, elf64, little, 6, OBJECT, 2, 0x300, 4);    /* not alloc */
            symbol(table + 4 * size, elf64, little, 6, OBJECT, 1, 0x400, 0);    /* no size */
            symbol(table + 5 * size, elf64, little, 14, NOTYPE, 3, 0x10, 0);    /* a BTF id */
            symbol(table + 6 * size, elf64, little, 1, FUNC, 0, 0x500, 0);      /* undefined */
            symbol(table + 7 * size, elf64, little, 1, FUNC, 0xFFF1, 0x500, 0); /* SHN_ABS */
            symbol(table + 8 * size, elf64, little, 32, FUNC, 3, 0x600, 0);     /* no NUL */
            symbol(table + 9 * size, elf64, little, 500, OBJECT, 3, 0x700, 2);  /* past strtab */
            symbol_entries_t out = {0};
            /* Half a symbol more: ignored. */
            CHECK(scan_symbol_table(table, 10 * size + size / 2, strtab, sizeof strtab - 1,
                                    elf64, little, 3, alloc, sizeof alloc, &out) == 0);
            CHECK(out.n == 5);
            if (out.n != 5) { free(out.a); continue; }
            const symbol_entry_t *s = out.a;
            CHECK(s[0].flags == SYMBOL_FUNCTION && s[0].value == 0x100 && s[0].shndx == 1);
            CHECK(s[0].name_at == 1 && s[0].name_len == 4);
            CHECK(s[1].flags == SYMBOL_OBJECT && s[1].value == 0x200 && s[1].size == 4);
            CHECK(s[1].name_at == 6 && s[1].name_len == 7);
            CHECK(s[2].flags == SYMBOL_BTF_ID && s[2].value == 0x10 && s[2].shndx == 3);
            CHECK(s[2].name_at == 14 && s[2].name_len == 17);
            CHECK(s[3].flags == (SYMBOL_BTF_ID | SYMBOL_FUNCTION) && s[3].name_at == 32);
            CHECK(s[3].name_len == 4);
            CHECK(s[4].flags == (SYMBOL_BTF_ID | SYMBOL_OBJECT) && s[4].name_len == 0);
            free(out.a);
        }
}

static void symbols_without_btf_ids_or_alloc(void)
{
    uint8_t table[2 * 24] = {0};
    symbol(table + 24, 1, 1, 0, OBJECT, 1, 8, 8);
    symbol_entries_t out = {0};
    CHECK(scan_symbol_table(table, sizeof table, (const uint8_t *)"", 0, 1, 1, -1, NULL, 0,
                            &out) == 0);
    CHECK(out.n == 0);
    CHECK(scan_symbol_table(table, 0, (const uint8_t *)"", 0, 1, 1, -1, NULL, 0, &out) == 0);
    CHECK(out.n == 0);
    free(out.a);
}

/* ---- pool.c ---- */

/* A store that numbers what it is given and records the calls. */
typedef struct {
    int64_t next;
    int32_t acyclic[16], nacyclic;
    int32_t members[16], nmembers;
    int32_t classes[4], ncycles;
    uint32_t rank[16];      /* by node: its label rank */
    int fail_at;            /* the call that fails (1-based), 0 none */
    int calls;
} counting_store_t;

static int count_acyclic(void *ctx, int32_t node, const int64_t *pool_id, int64_t *id)
{
    counting_store_t *s = ctx;
    if (++s->calls == s->fail_at) return -1;
    s->acyclic[s->nacyclic++] = node;
    *id = s->next++;
    return 0;
}

static int count_ranks(void *ctx, const int32_t *members, int32_t n, const int64_t *pool_id,
                       uint32_t *rank)
{
    counting_store_t *s = ctx;
    if (++s->calls == s->fail_at) return -1;
    for (int32_t i = 0; i < n; i++) {
        CHECK(pool_id[members[i]] == -1);
        s->members[s->nmembers++] = members[i];
        rank[i] = s->rank[members[i]];
    }
    return 0;
}

static int count_cycle(void *ctx, const int32_t *representative, int32_t classes,
                       const int64_t *pool_id, int64_t *ids)
{
    counting_store_t *s = ctx;
    if (++s->calls == s->fail_at) return -1;
    s->classes[s->ncycles++] = classes;
    for (int32_t c = 0; c < classes; c++) {
        CHECK(pool_id[representative[c]] == -1 - c);
        ids[c] = s->next++;
    }
    return 0;
}

static int pool_graph(counting_store_t *s, int32_t count, const size_t *start,
                      const int32_t *refs, int64_t *pool_id)
{
    pool_graph_t g = {count, start, refs};
    pool_store_t store = {s, count_acyclic, count_ranks, count_cycle};
    return pool_unit(&g, &store, pool_id);
}

/* 1 -> 2 -> 3 <-> 4, 5 -> 5, 6 alone: components in _strongly_connected's order (each
 * after what it reaches); 3 and 4 alike (one label) are one class, 5 refers to itself. */
static void pool_orders_components_and_merges_alike_members(void)
{
    /*                        0  1  2  3  4  5  6 */
    const size_t start[] = {0, 0, 1, 2, 3, 4, 5, 5};
    const int32_t refs[] = {2, 3, 4, 3, 5};
    counting_store_t s = {.next = 100};
    int64_t pool_id[7];
    CHECK(pool_graph(&s, 7, start, refs, pool_id) == 0);
    CHECK(s.ncycles == 2 && s.classes[0] == 1 && s.classes[1] == 1);
    CHECK(s.nacyclic == 3 && s.acyclic[0] == 2 && s.acyclic[1] == 1 && s.acyclic[2] == 6);
    CHECK(pool_id[0] == 0);
    CHECK(pool_id[3] == 100 && pool_id[4] == 100);      /* one class, one id */
    CHECK(pool_id[2] == 101 && pool_id[1] == 102);
    CHECK(pool_id[5] == 103 && pool_id[6] == 104);
}

/* A cycle 1 -> 2 -> 3 -> 1 whose labels differ at 1: refinement tells all three apart,
 * numbered in the order of their ranks. */
static void pool_refines_a_cycle_by_labels(void)
{
    const size_t start[] = {0, 0, 1, 2, 3};
    const int32_t refs[] = {2, 3, 1};
    counting_store_t s = {.next = 10, .rank = {0, 1, 0, 0}};
    int64_t pool_id[4];
    CHECK(pool_graph(&s, 4, start, refs, pool_id) == 0);
    CHECK(s.ncycles == 1 && s.classes[0] == 3 && s.nmembers == 3 && s.nacyclic == 0);
    /* Label 0 first (2 and 3), split by the rank each refers to (3's block before 1's):
     * 2, 3, then 1 (canon/refine.py's Partition gives {2: 0, 3: 1, 1: 2}). */
    CHECK(pool_id[2] == 10 && pool_id[3] == 11 && pool_id[1] == 12);
}

/* A store's failure stops the pooling with POOL_STORE_FAILED, at any call. */
static void pool_stops_at_a_store_failure(void)
{
    const size_t start[] = {0, 0, 1, 2, 3, 4, 5, 5};
    const int32_t refs[] = {2, 3, 4, 3, 5};
    for (int at = 1; at <= 8; at++) {
        counting_store_t s = {.fail_at = at};
        int64_t pool_id[7];
        CHECK(pool_graph(&s, 7, start, refs, pool_id) == (at <= 7 ? POOL_STORE_FAILED : 0));
    }
    counting_store_t s = {0};
    int64_t none[1];
    const size_t empty[] = {0};
    CHECK(pool_graph(&s, 0, empty, refs, none) == 0 && s.calls == 0);
    CHECK(pool_graph(&s, 1, start, refs, none) == 0 && s.calls == 0 && none[0] == 0);
}

int main(void)
{
    RUN(relocations_store_value_plus_addend);
    RUN(relocations_refuse_what_they_cannot_apply);
    RUN(symbols_kept_as_the_encoder_asks);
    RUN(symbols_without_btf_ids_or_alloc);
    RUN(pool_orders_components_and_merges_alike_members);
    RUN(pool_refines_a_cycle_by_labels);
    RUN(pool_stops_at_a_store_failure);
    return ctest_status("test_dwarf");
}
