/* The ELF symbol table reduced to what the encoder asks of it, in one pass (symbols.py
 * `scan_symbols` is the reference): the parent reads it before the workers fork, so all
 * of it is sequential time (0.2 s in Python for the 6.1 kernel's 190,000 symbols). */
#include "symtab.h"

#include <string.h>

#include "plain.h"

#define STT_OBJECT 1
#define STT_FUNC 2
#define SHN_LORESERVE 0xFF00

typedef struct {
    uint64_t name, value, size;
    unsigned info, shndx;
} symbol_t;

static void parse_symbol(const uint8_t *p, int elf64, int little, symbol_t *s)
{
    if (elf64) {  /* name, info, other, shndx, value, size */
        s->name = get_uint(p, 4, little);
        s->info = p[4];
        s->shndx = (unsigned)get_uint(p + 6, 2, little);
        s->value = get_uint(p + 8, 8, little);
        s->size = get_uint(p + 16, 8, little);
    } else {  /* name, value, size, info, other, shndx */
        s->name = get_uint(p, 4, little);
        s->value = get_uint(p + 4, 4, little);
        s->size = get_uint(p + 8, 4, little);
        s->info = p[12];
        s->shndx = (unsigned)get_uint(p + 14, 2, little);
    }
}

/* What symbol `s` is to the encoder (SYMBOL_* flags), as the loop of symbols.py
 * `scan_symbols` takes it; 0 for nothing. */
static uint32_t symbol_flags(const symbol_t *s, int64_t btf_ids_index, const uint8_t *alloc,
                             size_t alloc_len)
{
    unsigned kind = s->info & 0xF;
    if (s->shndx == 0 || s->shndx >= SHN_LORESERVE) return 0;
    uint32_t flags = (int64_t)s->shndx == btf_ids_index ? SYMBOL_BTF_ID : 0;
    if (kind == STT_FUNC)
        flags |= SYMBOL_FUNCTION;
    else if (kind == STT_OBJECT && s->size && s->shndx < alloc_len && alloc[s->shndx])
        flags |= SYMBOL_OBJECT;
    return flags;
}

int scan_symbol_table(const uint8_t *data, size_t len, const uint8_t *strtab, size_t strtab_len,
                      int elf64, int little, int64_t btf_ids_index, const uint8_t *alloc,
                      size_t alloc_len, symbol_entries_t *out)
{
    size_t entry = elf64 ? 24 : 16, count = len / entry;
    for (size_t i = 0; i < count; i++) {
        symbol_t s;
        parse_symbol(data + i * entry, elf64, little, &s);
        symbol_entry_t kept = {.value = s.value, .size = s.size, .shndx = s.shndx,
                               .flags = symbol_flags(&s, btf_ids_index, alloc, alloc_len)};
        if (!kept.flags) continue;
        if (s.name < strtab_len) {
            const uint8_t *start = strtab + s.name;
            const uint8_t *nul = memchr(start, 0, strtab_len - s.name);
            kept.name_at = s.name;
            kept.name_len = nul ? (uint64_t)(nul - start) : strtab_len - s.name;
        }
        if (VEC_PUSH(*out, kept)) return -1;
    }
    return 0;
}
