/* RELA relocations of a debug section applied in one pass (sections.py `_relocated` is
 * the reference): in a module (ET_REL) string and cross-unit offsets are relocations,
 * 729,000 of them in xfs.ko's .debug_info. */
#include "reloc.h"

#include "plain.h"

int relocate_section(uint8_t *data, size_t size, const uint8_t *entries, size_t entries_len,
                     const uint8_t *symtab, size_t symtab_len, int little,
                     const reloc_type_t *types, int ntypes)
{
    size_t count = entries_len / 24, symbol_count = symtab_len / 24;
    uint32_t last_type = 0;
    int width = 0;  /* of last_type: a section's relocations are mostly of one type */
    for (size_t i = 0; i < count; i++) {
        const uint8_t *entry = entries + 24 * i;
        uint64_t offset = get_uint(entry, 8, little), info = get_uint(entry + 8, 8, little);
        uint64_t addend = get_uint(entry + 16, 8, little), symbol = info >> 32;
        if (!i || (uint32_t)info != last_type) {
            last_type = (uint32_t)info;
            width = 0;
            for (int k = 0; k < ntypes; k++)
                if (types[k].type == last_type) width = types[k].width;
        }
        if (!width || symbol >= symbol_count || offset > size || size - offset < (uint64_t)width)
            return -1;
        uint64_t value = get_uint(symtab + 24 * symbol + 8, 8, little) + addend;
        put_uint(data + offset, width, little, value);
    }
    return 0;
}
