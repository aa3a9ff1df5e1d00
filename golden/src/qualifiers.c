/* const/volatile/restrict chains, typedef chains, void and unspecified types. */
typedef unsigned long ulong_t;
typedef ulong_t size_like;
typedef const volatile size_like cv_size;

struct regs {
	volatile unsigned int status;
	const volatile unsigned int *const volatile mmio;
	const char *const *argv;
	char *restrict out;
	cv_size counters[2];
	const void *cookie;
	volatile void *volatile vptr;
	const struct regs *self;
	_Bool flag;
	float f;
	double d;
	long double ld;
	__int128 wide;
	unsigned __int128 uwide;
};

struct regs use_regs;
