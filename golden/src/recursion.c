/* Recursive, mutually recursive and forward-declared structs. */
struct list_head {
	struct list_head *next, *prev;
};

struct tree;
struct forest {
	struct tree **trees;
	unsigned int count;
	struct forest *parent;
};

struct tree {
	struct forest *owner;
	struct tree *left, *right;
	struct list_head siblings;
};

struct opaque;
union opaque_union;

struct holder {
	struct opaque *hidden;
	union opaque_union *hidden_union;
	struct never_defined *also_hidden;
	struct tree root;
};

struct holder use_holder;
