/* Enums: unsigned, signed (negative values), 64-bit, signed 64-bit, packed and a
 * forward-declared enum (GNU extension). */
enum small { S0, S1, S2 };
enum negative { NEG_MIN = -2147483647 - 1, NEG_ONE = -1, NEG_ZERO = 0, NEG_BIG = 16 };
enum big { BIG_LOW = 1, BIG_HIGH = 1ULL << 40, BIG_TOP = 1ULL << 63 };
enum big_signed { BS_NEG = -5, BS_LARGE = 1LL << 50 };
enum __attribute__((packed)) tiny { T0, T1 = 200 };
enum unsigned_full { UF_MAX = 0xffffffffu };
enum declared_only;
enum { ANON_A = 7, ANON_B = 9 };

struct uses_enums {
	enum small s;
	enum negative n;
	enum big b;
	enum big_signed bs;
	enum tiny t;
	enum unsigned_full uf;
	enum declared_only *later;
	int anon;
};

struct uses_enums use_enums;
int anon_value = ANON_B;
