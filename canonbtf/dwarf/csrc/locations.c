/* Parameters' locations summed up (canonbtf/dwarf/locations.py, step for step): the
 * first location description's register and the registers entry values name. A list
 * that runs out of its section or holds an entry kind not known here ends there, as in
 * the reference; nothing here gives a unit up.
 */
#include "core.h"

#include "dwarf.h"

#define REGISTER_BITS 6

enum { LLE_end_of_list, LLE_base_addressx, LLE_startx_endx, LLE_startx_length,
       LLE_offset_pair, LLE_default_location, LLE_base_address, LLE_start_end,
       LLE_start_length };

/* `expression_summary`. */
int64_t expression_summary(const uint8_t *x, uint64_t n, int first)
{
    uint64_t end = n;
    if (end > 1 && x[end - 1] == OP_stack_value)
        end--;
    if (end == 1 && first && x[0] >= OP_reg0 && x[0] <= OP_reg31)
        return x[0] - OP_reg0 + 1;
    if (end == 3 && (x[0] == OP_entry_value || x[0] == OP_GNU_entry_value) && x[1] == 1
        && x[2] >= OP_reg0 && x[2] <= OP_reg31)
        return (int64_t)1 << (REGISTER_BITS + x[2] - OP_reg0);
    return 0;
}

/* `unexpected_register`. */
int unexpected_register(int64_t summary, int expected)
{
    int64_t first = summary & ((1 << REGISTER_BITS) - 1);
    if (!first || first - 1 == expected)
        return 0;
    return !((summary >> (REGISTER_BITS + expected)) & 1);
}

/* A ULEB128 at *pos of data[0..size): 0 when it runs out (the list ends). Values over
 * 64 bits are only stepped over or compared with the section's size. */
static int uleb(const uint8_t *data, uint64_t size, uint64_t *pos, uint64_t *value)
{
    unsigned __int128 v = 0;
    unsigned shift = 0;
    for (;;) {
        if (*pos >= size) return 0;
        uint8_t b = data[(*pos)++];
        if (shift < 64) v |= (unsigned __int128)(b & 0x7F) << shift;
        else if (b & 0x7F) v = (unsigned __int128)1 << 64;
        shift += 7;
        if (b < 0x80) break;
    }
    *value = v >> 64 ? UINT64_MAX : (uint64_t)v;
    return 1;
}

/* `UnitLocations._loclists`. */
static int64_t loclists(const uint8_t *data, uint64_t size, uint64_t pos, int address_size)
{
    int64_t out = 0;
    int first = 1;
    uint64_t skip;
    while (pos < size) {
        uint8_t kind = data[pos++];
        if (kind == LLE_end_of_list) break;
        if (kind == LLE_base_addressx) {
            if (!uleb(data, size, &pos, &skip)) break;
            continue;
        }
        if (kind == LLE_base_address) { pos += (uint64_t)address_size; continue; }
        if (kind == LLE_startx_endx || kind == LLE_startx_length || kind == LLE_offset_pair) {
            if (!uleb(data, size, &pos, &skip) || !uleb(data, size, &pos, &skip)) break;
        } else if (kind == LLE_start_end) {
            pos += 2 * (uint64_t)address_size;
        } else if (kind == LLE_start_length) {
            pos += (uint64_t)address_size;
            if (!uleb(data, size, &pos, &skip)) break;
        } else if (kind != LLE_default_location) {
            break;
        }
        uint64_t length;
        if (!uleb(data, size, &pos, &length)) break;
        if (pos > size || length > size - pos) break;
        out |= expression_summary(data + pos, length, first);
        first = 0;
        pos += length;
    }
    return out;
}

/* `UnitLocations._loc`. */
static int64_t loc(const uint8_t *data, uint64_t size, uint64_t pos, int address_size,
                   int little)
{
    uint64_t largest = address_size == 8 ? UINT64_MAX : 0xFFFFFFFFu;
    int64_t out = 0;
    int first = 1;
    while (pos <= size && 2 * (uint64_t)address_size <= size - pos) {
        uint64_t begin = get_uint(data + pos, address_size, little);
        uint64_t end = get_uint(data + pos + address_size, address_size, little);
        pos += 2 * (uint64_t)address_size;
        if (begin == 0 && end == 0) break;
        if (begin == largest) continue;
        if (size - pos < 2) break;
        uint64_t length = get_uint(data + pos, 2, little);
        pos += 2;
        if (length > size - pos) break;
        out |= expression_summary(data + pos, length, first);
        first = 0;
        pos += length;
    }
    return out;
}

/* `UnitLocations.summary` of a parameter's location attribute in the current unit. */
int64_t param_location_summary(const encoder_t *e, const attr_t *a)
{
    if (a->loc_kind == LOC_SUMMARY)
        return (int64_t)a->v;
    const unit_t *u = &e->unit;
    const section_t *section = u->version >= 5 ? &e->loclists : &e->loc;
    const uint8_t *data = section->buf;
    uint64_t size = (uint64_t)section->len;
    if (a->v < 0 || a->v > (i128)UINT64_MAX) return 0;
    uint64_t offset = (uint64_t)a->v;
    if (a->loc_kind == LOC_LIST_INDEX) {
        if (!e->have_lob || u->version < 5) return 0;
        unsigned __int128 pos = (unsigned __int128)e->lob
            + (unsigned __int128)offset * (unsigned)u->offset_size;
        if (pos + (unsigned)u->offset_size > size) return 0;
        offset = e->lob + get_uint(data + (uint64_t)pos, u->offset_size, e->little);
        if (offset < e->lob) return 0;  /* wrapped past 64 bits */
    }
    if (u->address_size != 4 && u->address_size != 8) return 0;
    if (u->version >= 5) return loclists(data, size, offset, u->address_size);
    return loc(data, size, offset, u->address_size, e->little);
}
