/* Second unit: defines struct peer, sees struct shared_node only declared, and has a
 * different struct private_state (two definitions of one name stay two types). */
struct shared_node;

struct peer {
	struct shared_node *node;
	long id;
};

struct private_state {
	long b;
	long c;
};

struct peer peer_b;
struct private_state state_b;
struct shared_node *node_b;
