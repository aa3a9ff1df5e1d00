/* Functions and per-CPU variables, first of two units linked into funcs.gcc-dwarf5.o: a
 * global function, static functions with twins in funcs_b.c (one with another
 * prototype, one differing only in its parameter name), a __weak definition that
 * funcs_b.c overrides, a varargs function, a declaration, per-CPU variables (section
 * .data..percpu, global and static) and a plain global (a VAR only with global_var). */
struct fn_state {
	int value;
};

int fn_global(struct fn_state *s, int delta)
{
	return s->value + delta;
}

/* funcs_b.c has a fn_twin of another prototype: the name keeps no FUNC. */
static int fn_twin(int x)
{
	return x + 1;
}

/* funcs_b.c's fn_renamed has the same types: one FUNC. */
static long fn_renamed(long first)
{
	return first * 2;
}

/* Overridden by the strong definition in funcs_b.c, whose parameter name wins. */
int __attribute__((weak)) fn_weak(int weak_arg)
{
	return weak_arg;
}

int fn_varargs(const char *fmt, ...)
{
	return fmt[0];
}

extern int fn_declared(int v);

int __attribute__((section(".data..percpu"))) pcpu_counter;
static struct fn_state __attribute__((section(".data..percpu"))) pcpu_state;
int plain_global = 3;

int fn_use_a(int v)
{
	pcpu_state.value = v;
	return fn_twin(v) + (int)fn_renamed(v) + fn_declared(v) + pcpu_counter;
}
