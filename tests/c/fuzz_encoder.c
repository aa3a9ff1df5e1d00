/* libFuzzer target: the DWARF encoder's plain C (dwarf/csrc/read.c, convert.c, keys.c,
 * locations.c, encoder.c) on untrusted bytes, without an interpreter. The input: a byte
 * of flags (byte order, functions and variables with a symbol table, argument registers,
 * keys), three 16-bit lengths, then .debug_abbrev, .debug_str, one blob that stands for
 * every other section (.debug_line_str, _str_offsets, _addr, _loc, _loclists) and
 * .debug_info, whose units are read one after another as sections.list_units finds them.
 * Each unit either is given up (a reason worded), or gives records whose items, names and
 * references lie inside their arrays and sections, and keys: new entries whose parts lie
 * inside entry_parts, tokens known, and the unit's key ids sorted, distinct and interned.
 * The symbol table is a fake that answers by the name's bytes, and counts its calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

enum { LITTLE = 1, SYMBOLS = 2, REGISTERS = 4, KEYS = 8, TAGS = 16 };

typedef struct {
    uint32_t places;           /* slots handed out this unit */
    char key[32];
} fake_symbols_t;

static int function_symbol(void *ctx, name_t name, const i128 *addresses, size_t n,
                           int *linked)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        if (addresses[i] % 2 == 0) *linked = 1;
    return name.len % 3 != 0;
}

static int is_kfunc(void *ctx, name_t name)
{
    (void)ctx;
    return name.len && name.p[0] == 'b';
}

static int place_variable(void *ctx, name_t name, i128 address, int every, uint32_t *slot)
{
    fake_symbols_t *s = ctx;
    if (!name.len || (address == 0 && !every)) return 0;
    *slot = s->places++;
    return 1;
}

static int var_extra(void *ctx, uint32_t slot, int linkage)
{
    fake_symbols_t *s = ctx;
    if (slot >= s->places || (linkage != 0 && linkage != 1)) abort();
    return 0;
}

static int var_key(void *ctx, uint32_t slot, const uint8_t **bytes, size_t *len)
{
    fake_symbols_t *s = ctx;
    if (slot >= s->places) abort();
    int n = snprintf(s->key, sizeof s->key, "(%u,)", slot % 4);
    *bytes = (const uint8_t *)s->key;
    *len = (size_t)n;
    return 0;
}

static int inside(const section_t *s, name_t name)
{
    return s->len && name.p >= s->buf && name.len <= s->len
        && (size_t)(name.p - s->buf) <= s->len - name.len;
}

/* A record's or item's name lies in a section the reader takes strings from, or is one
 * of the converter's own. */
static void check_name(const encoder_t *e, name_t name)
{
    static const char *const own[] = {"int", "bpf_kfunc"};
    if (!name.len || inside(&e->info, name) || inside(&e->str, name)
        || inside(&e->line_str, name))
        return;
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (name.len == strlen(own[i]) && !memcmp(name.p, own[i], name.len)) return;
    abort();
}

static void check_records(const encoder_t *e, uint32_t places)
{
    if (e->recs.n < 1 || e->recs.a[0].kind != 0) abort();
    for (size_t i = 0; i < e->recs.n; i++) {
        const rec_t *r = &e->recs.a[i];
        if (!r->set || r->item_first > e->items.n || r->nitems > e->items.n - r->item_first)
            abort();
        if (r->kind == K_VAR && r->var_extra >= places) abort();
        check_name(e, r->name);
        for (uint32_t k = 0; k < r->nitems; k++) check_name(e, e->items.a[r->item_first + k].name);
    }
}

/* The parts an entry of record r holds (keys.c's snapshot_parts). */
static size_t parts_of(const encoder_t *e, const rec_t *r)
{
    if (kind_in(KINDS_LEAF, r->kind)) return 0;
    size_t n = kind_in(KINDS_SINGLE_REF, r->kind) || r->kind == K_FUNC_PROTO;
    if (r->kind == K_ARRAY) n += 2;
    if (r->kind == K_STRUCT || r->kind == K_UNION || r->kind == K_FUNC_PROTO) n += r->nitems;
    return n;
}

static void check_keys(const encoder_t *e)
{
    size_t parts = 0;
    for (size_t i = 0; i < e->new_entries.n; i++) {
        const new_entry_t *made = &e->new_entries.a[i];
        if (made->rec == 0 || made->rec >= e->recs.n || made->part_first != parts) abort();
        parts += parts_of(e, &e->recs.a[made->rec]);
    }
    if (parts != e->entry_parts.n) abort();
    for (size_t i = 0; i < parts; i++) {
        const part_t *p = &e->entry_parts.a[i];
        if (p->tag > P_CYCLE || (p->tag == P_TOKEN && p->id >= e->token_list.n)) abort();
        if (p->tag == P_KEY && (p->id == 0 || p->id > e->entries.count)) abort();
    }
    for (size_t i = 0; i < e->unit_key_list.n; i++) {
        uint32_t key = e->unit_key_list.a[i];
        if (key == 0 || key > e->entries.count) abort();
        if (i && key <= e->unit_key_list.a[i - 1]) abort();
    }
}

/* The next unit's header at `offset` (sections.list_units, 32-bit DWARF); 0 when none. */
static int next_unit(const encoder_t *e, uint64_t offset, unit_t *u)
{
    const uint8_t *p = e->info.buf + offset;
    size_t left = e->info.len - offset;
    if (left < 11) return 0;
    uint64_t length = get_uint(p, 4, e->little);
    if (length >= 0xfffffff0u) return 0;
    int version = (int)get_uint(p + 4, 2, e->little);
    u->offset = offset;
    u->end = offset + 4 + length;
    u->version = version;
    u->offset_size = 4;
    if (version >= 5) {
        if (left < 12) return 0;
        u->address_size = p[7];
        u->abbrev_offset = get_uint(p + 8, 4, e->little);
        u->die_offset = offset + 12;
    } else {
        u->abbrev_offset = get_uint(p + 6, 4, e->little);
        u->address_size = p[10];
        u->die_offset = offset + 11;
    }
    return u->end > u->die_offset && u->end <= e->info.len;
}

static void encode_units(encoder_t *e, fake_symbols_t *symbols, int keys)
{
    unit_t u;
    for (uint64_t offset = 0; offset < e->info.len && next_unit(e, offset, &u);
         offset = u.end) {
        symbols->places = 0;
        int64_t language;
        int rc = unit_language(e, &u, &language);
        if (rc == -1 && (!e->bad || !e->why[0])) abort();
        if ((rc && rc != -1 && rc != -2 && rc != 1) || (!rc && language < -1)) abort();
        rc = encode_unit(e, &u);
        if (rc == -1 && (!e->bad || !e->why[0] || !memchr(e->why, 0, sizeof e->why))) abort();
        if (rc && rc != -1 && rc != -2) abort();
        if (rc) continue;
        check_records(e, symbols->places);
        if (!keys) {
            if (commit_skips(e)) abort();
            continue;
        }
        rc = add_unit_keys(e);
        if (rc && rc != -1 && rc != -2) abort();
        if (!rc) {
            check_keys(e);
            if (commit_skips(e)) abort();
        }
    }
}

static uint16_t length_at(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 7) return 0;
    uint8_t flags = data[0];
    size_t abbrev_len = length_at(data + 1), str_len = length_at(data + 3);
    size_t extra_len = length_at(data + 5), at = 7;
    if (abbrev_len + str_len + extra_len > size - at) return 0;
    fake_symbols_t symbols = {0};
    encoder_t e;
    memset(&e, 0, sizeof e);
    e.abbrev = (section_t){data + at, abbrev_len};
    e.str = (section_t){data + at + abbrev_len, str_len};
    section_t extra = {data + at + abbrev_len + str_len, extra_len};
    e.line_str = e.str_offsets = e.addr = e.loc = e.loclists = extra;
    at += abbrev_len + str_len + extra_len;
    e.info = (section_t){data + at, size - at};
    e.little = flags & LITTLE;
    e.has_symbols = (flags & SYMBOLS) != 0;
    e.features = F_FUNC | F_VAR | F_FLOAT | F_ENUM64 | F_DECL_TAG | F_DECL_TAG_KFUNCS
        | ((flags & TAGS) ? F_TYPE_TAG | F_GLOBAL_VAR : 0);
    static const uint8_t registers[] = {5, 4, 1, 2, 8, 9};
    if (flags & REGISTERS) {
        memcpy(e.registers, registers, sizeof registers);
        e.nregisters = sizeof registers;
    }
    e.calls = (encoder_calls_t){&symbols, function_symbol, is_kfunc, place_variable, var_extra,
                                var_key};
    encode_units(&e, &symbols, (flags & KEYS) != 0);
    encoder_free(&e);
    return 0;
}
