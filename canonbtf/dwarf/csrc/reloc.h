/* RELA relocations of a debug section applied in one pass, in plain C (reloc.c); bound as
 * _core.relocate by native/csrc/pool_bindings.c. */
#ifndef CANONBTF_RELOC_H
#define CANONBTF_RELOC_H

#include <stddef.h>
#include <stdint.h>

#define RELOC_MAX_TYPES 8      /* relocation types one call knows at most */

/* A relocation type and the bytes it stores (4 or 8). */
typedef struct { uint32_t type; int width; } reloc_type_t;

/* The ELF64 RELA `entries` (24 bytes each; a torn last one ignored) applied to `data`
 * (`size` bytes) in place, each storing the low bytes of its symbol's value (from
 * `symtab`'s 24-byte ELF64 symbols) + addend. 0, or -1 for an entry whose type `types`
 * does not list, whose symbol is past the table or whose place is past the end: `data`
 * is then partly patched, and the caller throws it away. */
int relocate_section(uint8_t *data, size_t size, const uint8_t *entries, size_t entries_len,
                     const uint8_t *symtab, size_t symtab_len, int little,
                     const reloc_type_t *types, int ntypes);

#endif
