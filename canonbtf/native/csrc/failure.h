/* How the plain-C parts of canonbtf._btf (text.c, diff/csrc/difffacts.c) report a failure
 * before they return -1: the binding (btf_bindings.c) turns the report into the exception
 * their callers leave set for Python. */
#ifndef CANONBTF_FAILURE_H
#define CANONBTF_FAILURE_H

/* Out of memory: MemoryError. */
void failed_out_of_memory(void);
/* Input this C does not take, which the Python reference then handles: ValueError(why). */
void failed_declined(const char *why);

#endif
