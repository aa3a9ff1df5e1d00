/* First of two units linked together: defines struct shared_node, sees struct peer only
 * declared, and has its own static struct with the same name as one in multi_b.c. */
struct peer;

struct shared_node {
	struct shared_node *next;
	struct peer *peer;
	int value;
};

struct private_state {
	int a;
};

struct shared_node node_a;
struct private_state state_a;
struct peer *peer_a;
