/* A BTF blob opened for the C tests and fuzz targets (btfblob.h). */
#include "btfblob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"

#define BTF_MAGIC 0xEB9F
#define HEADER_LEN 24
#define HEADER_LEN_WITH_LAYOUT 32

static uint32_t get32(const uint8_t *p, int swap)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}

typedef struct {
    uint32_t off, len;
} section_t;

/* The sections of the header (type, string, layout) checked as reader.parse checks
 * them: inside the body, not overlapping, the type section 4-byte aligned. */
static int sections_ok(const section_t *sec, int nsec, uint64_t body)
{
    for (int k = 0; k < nsec; k++)
        if ((uint64_t)sec[k].off + sec[k].len > body) return 0;
    for (int a = 0; a < nsec; a++)
        for (int b = 0; b < nsec; b++)
            if (a != b && sec[a].len && sec[b].len && sec[a].off <= sec[b].off
                && (uint64_t)sec[a].off + sec[a].len > sec[b].off)
                return 0;
    return sec[0].off % 4 == 0 && sec[0].len % 4 == 0;
}

static int strings_ok(const uint8_t *s, uint32_t len, int split)
{
    if (!split && (!len || s[0] != 0)) return 0;
    return !len || s[len - 1] == 0;
}

int blob_open(const uint8_t *data, size_t size, const blob_t *base, blob_t *out)
{
    memset(out, 0, sizeof *out);
    if (size < HEADER_LEN || size > UINT32_MAX) return BLOB_NOT_BTF;
    int swap;
    if (data[0] == (BTF_MAGIC & 0xFF) && data[1] == BTF_MAGIC >> 8) swap = 0;
    else if (data[0] == BTF_MAGIC >> 8 && data[1] == (BTF_MAGIC & 0xFF)) swap = 1;
    else return BLOB_NOT_BTF;
    if (data[2] != 1 || data[3] != 0) return BLOB_NOT_BTF;
    uint32_t hdr_len = get32(data + 4, swap);
    if (hdr_len < HEADER_LEN || hdr_len > size) return BLOB_NOT_BTF;
    section_t sec[3] = {{get32(data + 8, swap), get32(data + 12, swap)},
                        {get32(data + 16, swap), get32(data + 20, swap)}, {0, 0}};
    int nsec = 2;
    if (hdr_len >= HEADER_LEN_WITH_LAYOUT)
        sec[nsec++] = (section_t){get32(data + 24, swap), get32(data + 28, swap)};
    uint64_t body = size - hdr_len;
    if (!sections_ok(sec, nsec, body)) return BLOB_NOT_BTF;
    const uint8_t *strs = data + hdr_len + sec[1].off;
    if (!strings_ok(strs, sec[1].len, base != NULL)) return BLOB_NOT_BTF;
    uint64_t end = 0;
    for (int k = 0; k < nsec; k++)
        if ((uint64_t)sec[k].off + sec[k].len > end) end = (uint64_t)sec[k].off + sec[k].len;
    out->trailer = (size_t)(body - end);

    uint32_t str_start = base ? base->tabs[base->t.ntabs - 1].start
                                + base->tabs[base->t.ntabs - 1].len : 0;
    if ((uint64_t)str_start + sec[1].len > UINT32_MAX) return BLOB_NOT_BTF;
    int level = 0;
    if (base) {
        if (base->t.ntabs >= BLOB_MAX_LEVELS) return BLOB_NOT_BTF;
        for (; level < base->t.ntabs; level++) out->tabs[level] = base->tabs[level];
    }
    out->tabs[level] = (strtab_t){strs, str_start, sec[1].len};
    size_t nwords = sec[0].len / 4;
    out->words = malloc(nwords ? nwords * 4 : 4);
    if (!out->words) return BLOB_NOMEM;
    for (size_t k = 0; k < nwords; k++)
        out->words[k] = get32(data + hdr_len + sec[0].off + 4 * k, swap);
    out->t = (types_t){.w = out->words, .nwords = nwords,
                       .first_id = base ? base->t.first_id + base->t.count : 1,
                       .tabs = out->tabs, .ntabs = level + 1};
    if (index_types(&out->t, str_start + sec[1].len)) return BLOB_REFUSED;
    return BLOB_OK;
}

void blob_free(blob_t *b)
{
    free(b->words);
    free(b->t.start);
    memset(b, 0, sizeof *b);
}

int read_whole(const char *path, uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    size_t cap = 0;
    int rc = -1;
    for (;;) {
        if (*size == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            uint8_t *more = realloc(*data, cap);
            if (!more) goto done;
            *data = more;
        }
        size_t got = fread(*data + *size, 1, cap - *size, fp);
        *size += got;
        if (!got) break;
    }
    rc = ferror(fp) ? -1 : 0;
done:
    fclose(fp);
    if (rc) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

int failures_declined, failures_out_of_memory;
const char *failure_why;

void failed_out_of_memory(void) { failures_out_of_memory++; }

void failed_declined(const char *why)
{
    failures_declined++;
    failure_why = why;
}
