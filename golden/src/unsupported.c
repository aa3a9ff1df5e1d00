/* What BTF cannot say: _Atomic (the qualifier is dropped), complex floats (skipped and
 * counted; a member of such a type is left out), a variable-length array (no constant
 * bound: zero elements). pahole 1.24 refuses this file. */
struct odd {
	_Atomic int counter;
	_Atomic(struct odd *) next;
	_Complex double z;
	int after;
};

int fill(int n)
{
	int vla[n];
	vla[0] = n;
	return vla[0];
}

struct odd use_odd;
