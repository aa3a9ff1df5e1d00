/* Bitfields: DWARF 4 DW_AT_bit_offset vs DWARF 5 DW_AT_data_bit_offset, straddling
 * storage units, signed and unsigned, bool, enum-typed and whole-width bitfields. */
#include <stdbool.h>

enum colour { RED, GREEN, BLUE };

struct flags {
	unsigned int a : 1;
	unsigned int b : 3;
	signed int c : 4;
	unsigned int d : 24;
	unsigned long long wide : 40;
	unsigned long long rest : 24;
	bool on : 1;
	enum colour hue : 2;
	unsigned char tail;
	unsigned int full : 32;
	short s : 9;
};

struct after_gap {
	char c;
	unsigned int x : 5;
	unsigned int : 0;
	unsigned int y : 7;
	unsigned int : 3;
	unsigned int z : 2;
};

struct flags use_flags;
struct after_gap use_after_gap;
