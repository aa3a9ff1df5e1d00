/* Types defined inside function bodies, static and global functions, and a variable of
 * a type used nowhere else. */
struct outer_state {
	int level;
};

static int helper(struct outer_state *st)
{
	struct local_point {
		int x, y;
	} p = { st->level, 2 };
	typedef unsigned short local_u16;
	local_u16 n = (local_u16)p.y;
	{
		union inner_block { int i; float f; } u = { .i = n };
		return p.x + u.i;
	}
}

int entry(struct outer_state *st)
{
	return helper(st);
}
