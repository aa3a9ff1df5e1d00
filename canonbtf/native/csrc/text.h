/* A growing byte buffer (text.c). */
#ifndef CANONBTF_TEXT_H
#define CANONBTF_TEXT_H

#include <stdarg.h>
#include <stddef.h>

/* A growing byte buffer, in plain C. The text_ functions return -1 on failure, reported
 * (failure.h) as out of memory, or declined for a text_printf piece past 127 bytes. */
typedef struct {
    char *p;
    size_t len, cap;
} text_t;
/* The text at `at` of a buffer (never a null pointer, even when it is empty). */
#define AT(b, at) ((b).p ? (b).p + (at) : "")
int text_put(text_t *b, const void *s, size_t n);
int text_puts(text_t *b, const char *s);
/* Appends n bytes the buffer holds at `at` (which growing it may move). */
int text_repeat(text_t *b, size_t at, size_t n);
int text_printf(text_t *b, const char *fmt, ...);
int text_vprintf(text_t *b, const char *fmt, va_list ap);

#endif
