/* Second unit of funcs.gcc-dwarf5.o (see funcs_a.c): the twins, the strong fn_weak, the
 * definition of what funcs_a.c declares, and a parameter without a name (no FUNC). */
static int fn_twin(const char *s)
{
	return s[0];
}

static long fn_renamed(long second)
{
	return second * 3;
}

int fn_weak(int strong_arg)
{
	return strong_arg + 1;
}

int fn_declared(int v)
{
	return v - 1;
}

#pragma GCC diagnostic ignored "-Wpedantic"
#pragma clang diagnostic ignored "-Wc2x-extensions"
int fn_unnamed(int, int named)
{
	return named;
}

long __attribute__((section(".data..percpu"))) pcpu_total;

int fn_use_b(const char *s)
{
	return fn_twin(s) + (int)fn_renamed(2);
}
