/* The ELF symbol table reduced to what the encoder asks of it, in plain C (symtab.c);
 * bound as _core.scan_symbols by native/csrc/pool_bindings.c, which builds the
 * reference's dicts and list from the entries. */
#ifndef CANONBTF_SYMTAB_H
#define CANONBTF_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "grow.h"

/* What a symbol is to the encoder (flags; one symbol may be a BTF id and either other):
 * an STT_FUNC; a sized STT_OBJECT in a section `alloc` flags; a symbol in the section of
 * BTF ids. */
enum { SYMBOL_FUNCTION = 1, SYMBOL_OBJECT = 2, SYMBOL_BTF_ID = 4 };

/* One symbol the encoder keeps: its name as the bytes [name_at, name_at + name_len) of
 * the string table (up to its NUL or the table's end; empty past the end). */
typedef struct {
    uint64_t name_at, name_len, value, size;
    uint32_t shndx, flags;
} symbol_entry_t;

typedef VEC(symbol_entry_t) symbol_entries_t;

/* The symbols of table `data` (ELF64's 24-byte or ELF32's 16-byte entries in the file's
 * byte order; a torn last one ignored) that are something to the encoder, in table
 * order, appended to *out (the caller frees out->a); section `btf_ids_index` (-1: none)
 * holds the BTF ids, and alloc[i] (i < alloc_len) flags an allocated section. 0, or -1
 * out of memory. */
int scan_symbol_table(const uint8_t *data, size_t len, const uint8_t *strtab, size_t strtab_len,
                      int elf64, int little, int64_t btf_ids_index, const uint8_t *alloc,
                      size_t alloc_len, symbol_entries_t *out);

#endif
