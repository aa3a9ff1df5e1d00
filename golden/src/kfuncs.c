/* kfunc sets in .BTF_ids laid out as the kernel's BTF_KFUNCS_START / BTF_ID_FLAGS macros
 * lay them out (include/linux/btf_ids.h, 6.9 and later): a set8 whose flags word says
 * BTF_SET8_KFUNCS holds kfunc_one and kfunc_two (DECL_TAG 'bpf_kfunc'), a set8 with
 * flags 0 holds not_a_kfunc (no tag). */
int kfunc_one(int a)
{
	return a + 1;
}

int kfunc_two(long b)
{
	return (int)b;
}

int not_a_kfunc(int c)
{
	return c;
}

#define BTF_ID(name, n) \
	".local __BTF_ID__func__" #name "__" #n "\n" \
	".type __BTF_ID__func__" #name "__" #n ", @object\n" \
	".size __BTF_ID__func__" #name "__" #n ", 4\n" \
	"__BTF_ID__func__" #name "__" #n ":\n" \
	".zero 4\n" \
	".long 0\n"

asm(".pushsection .BTF_ids,\"a\"\n"
    ".local __BTF_ID__set8__golden_kfuncs\n"
    "__BTF_ID__set8__golden_kfuncs:\n"
    ".long 0\n"
    ".long 1\n"
    BTF_ID(kfunc_one, 1)
    BTF_ID(kfunc_two, 2)
    ".size __BTF_ID__set8__golden_kfuncs, .-__BTF_ID__set8__golden_kfuncs\n"
    ".local __BTF_ID__set8__golden_plain\n"
    "__BTF_ID__set8__golden_plain:\n"
    ".long 0\n"
    ".long 0\n"
    BTF_ID(not_a_kfunc, 3)
    ".size __BTF_ID__set8__golden_plain, .-__BTF_ID__set8__golden_plain\n"
    ".popsection\n");
