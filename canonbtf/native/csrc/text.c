/* A growing byte buffer for the compiled text makers (cdump.c, difffacts.c, diffreport.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "grow.h"
#include "text.h"

int text_put(text_t *b, const void *s, size_t n)
{
    if (!n) return 0;
    if (GROW(b->p, b->cap, b->len + n)) {
        failed_out_of_memory();
        return -1;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

int text_puts(text_t *b, const char *s) { return text_put(b, s, strlen(s)); }

int text_repeat(text_t *b, size_t at, size_t n)
{
    if (GROW(b->p, b->cap, b->len + n)) {
        failed_out_of_memory();
        return -1;
    }
    if (n) memcpy(b->p + b->len, b->p + at, n);
    b->len += n;
    return 0;
}

int text_vprintf(text_t *b, const char *fmt, va_list ap)
{
    char tmp[128];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        failed_declined("formatted text too long");
        return -1;
    }
    return text_put(b, tmp, (size_t)n);
}

int text_printf(text_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = text_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}
