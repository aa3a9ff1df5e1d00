/* Anonymous unions and structs nested in structs, and a union of structs. */
struct packet {
	int kind;
	union {
		struct {
			unsigned short port;
			unsigned short proto;
		};
		unsigned int raw;
		char bytes[4];
	};
	struct {
		long a, b;
	} pair;
	union {
		void *ptr;
		unsigned long addr;
	} target;
};

union value {
	long long i;
	double d;
	float f;
	long double ld;
	struct packet *p;
};

struct packet use_packet;
union value use_value;
