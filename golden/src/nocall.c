/* Built with clang -O2 through LLVM IR whose prototype of fn_nocall is marked
 * DW_CC_nocall (golden/rebuild.sh), as clang marks a function whose ABI an optimization
 * changed: no FUNC for fn_nocall, one for fn_calls. */
int nocall_sink;

static __attribute__((noinline)) int fn_nocall(int a)
{
	nocall_sink = a;
	return a * 2;
}

long fn_calls(long x)
{
	fn_nocall((int)x);
	return fn_nocall((int)x + 1);
}
