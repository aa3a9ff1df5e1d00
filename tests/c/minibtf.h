/* Small BTF blobs written word by word for the C unit tests: a type section and a string
 * section behind a little-endian 24-byte header, as btf/format.py lays them out. */
#ifndef CANONBTF_TESTS_MINIBTF_H
#define CANONBTF_TESTS_MINIBTF_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "btfblob.h"
#include "kinds.h"

typedef struct {
    uint32_t w[1024];
    size_t nw;
    char s[2048];
    size_t ns;
    uint32_t types;              /* records added so far */
} mini_t;

static inline void mini_init(mini_t *m)
{
    memset(m, 0, sizeof *m);
    m->ns = 1;                   /* the empty name at offset 0 */
}

/* The offset of `name` in the string section (added once). */
static inline uint32_t mini_str(mini_t *m, const char *name)
{
    size_t n = strlen(name);
    if (!n) return 0;
    for (size_t off = 1; off + n < m->ns; off++)
        if (!memcmp(m->s + off, name, n + 1) && m->s[off - 1] == 0) return (uint32_t)off;
    memcpy(m->s + m->ns, name, n + 1);
    m->ns += n + 1;
    return (uint32_t)(m->ns - n - 1);
}

static inline uint32_t mini_info(uint32_t kind, uint32_t vlen, uint32_t kflag)
{
    return kflag << 31 | kind << 24 | vlen;
}

/* One record of `n` words; returns its type id (from 1). */
static inline uint32_t mini_type(mini_t *m, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int k = 0; k < n; k++) m->w[m->nw++] = va_arg(ap, uint32_t);
    va_end(ap);
    return ++m->types;
}

/* The blob (header, types, strings) into out (room for 24 + 4 * nw + ns bytes); its size. */
static inline size_t mini_blob(const mini_t *m, uint8_t *out)
{
    uint32_t type_len = (uint32_t)(m->nw * 4), str_len = (uint32_t)m->ns;
    uint32_t header[6] = {0x0001EB9Fu, 24, 0, type_len, type_len, str_len};
    memcpy(out, header, sizeof header);          /* the tests run on little-endian hosts */
    memcpy(out + 24, m->w, type_len);
    memcpy(out + 24 + type_len, m->s, str_len);
    return 24 + (size_t)type_len + str_len;
}

/* The tests' good types, ids 1-7 (word positions in brackets): int [0-3], int * [4-6],
 * struct s { int a; int *b; } [7-15], int[4] [16-21], int (*)(int x) [22-26], f [27-29],
 * enum e64 { A = -1 } [30-35]; the string "1s" is there for a bad name. */
static inline void mini_types(mini_t *m)
{
    mini_init(m);
    mini_type(m, 4, mini_str(m, "int"), mini_info(K_INT, 0, 0), 4u, 1u << 24 | 32);
    mini_type(m, 3, 0u, mini_info(K_PTR, 0, 0), 1u);
    mini_type(m, 9, mini_str(m, "s"), mini_info(K_STRUCT, 2, 0), 16u,
              mini_str(m, "a"), 1u, 0u, mini_str(m, "b"), 2u, 64u);
    mini_type(m, 6, 0u, mini_info(K_ARRAY, 0, 0), 0u, 1u, 1u, 4u);
    mini_type(m, 5, 0u, mini_info(K_FUNC_PROTO, 1, 0), 1u, mini_str(m, "x"), 1u);
    mini_type(m, 3, mini_str(m, "f"), mini_info(K_FUNC, 1, 0), 5u);
    mini_type(m, 6, mini_str(m, "e64"), mini_info(K_ENUM64, 1, 1), 8u,
              mini_str(m, "A"), 0xFFFFFFFFu, 0xFFFFFFFFu);
    mini_str(m, "1s");
}

#define MINI_BLOB_MAX (24 + sizeof(((mini_t *)0)->w) + sizeof(((mini_t *)0)->s))

/* The blob of m written into buf (MINI_BLOB_MAX bytes) and opened (btfblob.h). */
static inline int mini_open(const mini_t *m, uint8_t *buf, blob_t *b)
{
    return blob_open(buf, mini_blob(m, buf), NULL, b);
}

#endif
