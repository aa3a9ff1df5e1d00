/* Function pointers: prototypes with named and unnamed parameters, varargs, no
 * parameters, returning pointers to functions; typedefs of function types. */
typedef int (*compare_fn)(const void *a, const void *b);
typedef void handler_t(int signo);
typedef int printf_like(const char *fmt, ...);

struct ops {
	compare_fn cmp;
	handler_t *on_signal;
	printf_like *log;
	void (*no_args)(void);
	int (*old_style)();
	void (*(*get_callback)(int which))(long);
	int (*table[4])(int, int);
};

struct ops use_ops;
