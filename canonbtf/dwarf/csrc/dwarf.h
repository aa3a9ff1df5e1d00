/* The DWARF numbers the compiled core uses: canonbtf/spec/dwarf_numbers.py's, through
 * the generated dwarf_numbers.def (canonbtf/spec/gen_c.py). */
#ifndef CANONBTF_DWARF_H
#define CANONBTF_DWARF_H

#define DWARF_NUMBER(name, value) name = value,
enum {
#include "dwarf_numbers.def"
};
#undef DWARF_NUMBER

#endif
