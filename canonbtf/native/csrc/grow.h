/* The one way both extensions grow an array (a shared runtime file of native/csrc/). */
#ifndef CANONBTF_GROW_H
#define CANONBTF_GROW_H

#include <stddef.h>

/* Room for `need` elements of `size` bytes in *a (capacity *cap), doubling from 16;
 * 0, or -1 when out of memory or the size would overflow (*a is then unchanged). */
int grow_array(void **a, size_t *cap, size_t need, size_t size);
#define GROW(ptr, cap, need) grow_array((void **)&(ptr), &(cap), (need), sizeof *(ptr))

#endif
