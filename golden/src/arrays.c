/* Flexible, zero-length, multi-dimensional arrays and arrays of pointers. */
struct buffer {
	unsigned int len;
	char data[];
};

struct old_style {
	int n;
	int items[0];
};

struct matrix {
	double m[3][4];
	char grid[2][3][5];
	const char *names[8];
	int (*rows)[16];
};

int table[10][20];
struct buffer *use_buffer;
struct old_style use_old;
struct matrix use_matrix;
