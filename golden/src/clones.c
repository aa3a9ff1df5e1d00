/* Built with gcc -O2 (clones.gcc-O2.o): functions whose code exists only as clones with a
 * changed ABI (fn_constprop.constprop.0, fn_isra.isra.0) and an inlined-only function
 * have no symbol of their own name, so no FUNC; fn_kept keeps its plain symbol. */
struct clone_state {
	int value;
	int other;
};

static __attribute__((noinline)) int fn_constprop(int a, int b)
{
	return a * b + a;
}

static __attribute__((noinline)) int fn_isra(struct clone_state *s)
{
	return s->value * 3;
}

static inline int fn_inlined(int y)
{
	return y * 3 + 1;
}

__attribute__((noinline)) int fn_kept(int a, int b)
{
	return a * b - fn_inlined(a);
}

int fn_clone_entry(int x, struct clone_state *s)
{
	return fn_constprop(x, 4) + fn_constprop(x + 1, 4) + fn_isra(s) + fn_kept(x, s->other);
}
