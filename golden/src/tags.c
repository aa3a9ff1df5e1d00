/* btf_decl_tag and btf_type_tag annotations (clang only): tags on a struct, its members,
 * a typedef, a function and its parameters, a variable; type tags on pointers, two on
 * one pointer, and a tagged pointer to a tagged pointer. */
#define __tag(x) __attribute__((btf_decl_tag(x)))
#define __user __attribute__((btf_type_tag("user")))
#define __rcu __attribute__((btf_type_tag("rcu")))
#define __percpu __attribute__((btf_type_tag("percpu")))

struct tagged {
	int plain;
	int counted __tag("counter");
	char __user *buf;
	int __user __rcu *both;
	struct tagged __rcu * __percpu *nested;
} __tag("packet") __tag("second");

typedef unsigned long handle_t __tag("handle");

__tag("kfunc_like") int tagged_fn(struct tagged *t __tag("arg"), handle_t h)
{
	return t->plain + (int)h;
}

int __attribute__((section(".data..percpu"))) tagged_var __tag("var") = 1;
