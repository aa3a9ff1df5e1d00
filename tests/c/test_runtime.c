/* native/csrc/'s runtime without Python: the growth helper and its room (grow.c), the
 * hash (hash.c), the interning table (intern.c) and partition refinement's hooks
 * (refine.c), as grow.h, hash.h, intern.h and refine.h promise them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "grow.h"
#include "hash.h"
#include "intern.h"
#include "refine.h"

static void grow_doubles_from_16(void)
{
    uint32_t *a = NULL;
    size_t cap = 0;
    CHECK(GROW(a, cap, 1) == 0 && cap == 16 && a);
    CHECK(GROW(a, cap, 16) == 0 && cap == 16);
    CHECK(GROW(a, cap, 17) == 0 && cap == 32);
    CHECK(GROW(a, cap, 1000) == 0 && cap == 1024);
    for (size_t k = 0; k < 1000; k++) a[k] = (uint32_t)k;   /* ASan: the room is there */
    CHECK(a[999] == 999);
    free(a);
}

/* grown_room is the capacity GROW leaves an array grown one element at a time: what a
 * list that keeps only its length (cdump's push_u32) takes as its room. */
static void grown_room_is_what_grow_left(void)
{
    uint32_t *a = NULL;
    size_t cap = 0;
    CHECK(grown_room(0) == 0);
    for (size_t used = 1; used <= 5000; used++) {
        CHECK(GROW(a, cap, used) == 0);
        CHECK(grown_room(used) == cap);
        a[used - 1] = (uint32_t)used;  /* ASan: the room is there */
    }
    free(a);
}

/* A size that would overflow is refused and the array is left as it was. */
static void grow_refuses_overflow(void)
{
    uint64_t *a = NULL;
    size_t cap = 0;
    CHECK(GROW(a, cap, 4) == 0);
    uint64_t *before = a;
    a[0] = 42;
    CHECK(GROW(a, cap, SIZE_MAX / 8 + 1) == -1);
    CHECK(GROW(a, cap, SIZE_MAX / 2) == -1);
    CHECK(GROW(a, cap, SIZE_MAX) == -1);
    CHECK(a == before && cap == 16 && a[0] == 42);
    struct { char bytes[1 << 20]; } *big = NULL;
    size_t big_cap = 0;
    CHECK(GROW(big, big_cap, (SIZE_MAX >> 20) / 2) == -1 && !big && big_cap == 0);
    free(a);
}

static void big_alloc_bounds(void)
{
    CHECK(big_alloc(SIZE_MAX / 2, 4) == NULL);
    CHECK(big_zalloc(SIZE_MAX / 8, 16) == NULL);
    uint8_t *z = big_zalloc(3 << 20, 1);                     /* past one huge page */
    CHECK(z != NULL);
    int zero = 1;
    for (size_t k = 0; z && k < (size_t)3 << 20; k++) zero &= z[k] == 0;
    CHECK(zero);
    free(z);
    void *empty = big_alloc(0, 8);                           /* at least one byte */
    CHECK(empty != NULL);
    free(empty);
}

static void hash_is_of_the_bytes(void)
{
    char a[64], b[64];
    for (int k = 0; k < 64; k++) a[k] = b[k] = (char)(k * 7);
    CHECK(hash_bytes(a, 64) == hash_bytes(b, 64));
    CHECK(hash_bytes("", 0) != 0);
    /* Each length and each flipped byte gives another hash (no collisions among these). */
    uint64_t seen[64 + 64 * 8];
    size_t n = 0;
    for (size_t len = 1; len <= 64; len++) seen[n++] = hash_bytes(a, len);
    for (int k = 0; k < 64; k++)
        for (int bit = 0; bit < 8; bit++) {
            b[k] ^= (char)(1 << bit);
            seen[n++] = hash_bytes(b, 64);
            b[k] ^= (char)(1 << bit);
        }
    int distinct = 1;
    for (size_t i = 0; i < n; i++) {
        CHECK(seen[i] != 0);
        for (size_t j = 0; j < i; j++) distinct &= seen[i] != seen[j];
    }
    CHECK(distinct);
}

/* Dense ids in the order first interned, equal bytes equal ids, through many regrowths. */
static void intern_numbers_in_order(void)
{
    intern_t t;
    memset(&t, 0, sizeof t);
    int is_new;
    char buf[32];
    CHECK(intern_find(&t, "x", 1) == -1);
    enum { N = 100000 };
    for (int k = 0; k < N; k++) {
        int len = snprintf(buf, sizeof buf, "name%d", k * 7919 % N);
        CHECK(intern_bytes(&t, buf, (size_t)len, &is_new) == k && is_new);
    }
    CHECK(t.count == N);
    int all_found = 1, all_old = 1;
    for (int k = 0; k < N; k++) {
        int len = snprintf(buf, sizeof buf, "name%d", k * 7919 % N);
        all_found &= intern_find(&t, buf, (size_t)len) == k;
        all_old &= intern_bytes(&t, buf, (size_t)len, &is_new) == k && !is_new;
        size_t got;
        const uint8_t *p = intern_at(&t, (uint32_t)k, &got);
        all_found &= got == (size_t)len && !memcmp(p, buf, got);
    }
    CHECK(all_found && all_old && t.count == N);
    CHECK(intern_find(&t, "name", 4) == -1);
    CHECK(intern_bytes(&t, "", 0, &is_new) == N && is_new);   /* the empty string too */
    CHECK(intern_bytes(&t, "a\0b", 3, &is_new) == N + 1 && is_new);
    CHECK(intern_bytes(&t, "a", 1, &is_new) == N + 2 && is_new);   /* not "a\0b" */
    intern_clear(&t);
    CHECK(t.count == 0 && intern_find(&t, "name0", 5) == -1);
    CHECK(intern_bytes(&t, "name0", 5, &is_new) == 0 && is_new);
    CHECK(intern_reserve(&t, 5000) == 0 && t.slots >= 2 * 5001);
    intern_free(&t);
    CHECK(t.count == 0 && t.slot == NULL);
}

/* Nodes 1..5, keys 0 0 0 0 1; edges 1 -> 3 and 2 -> 4. */
static int five_nodes(refine_t *p)
{
    static const uint32_t nodes[] = {1, 2, 3, 4, 5};
    static const uint8_t fresh[] = {1, 0, 0, 0, 1};
    if (refine_init(p, 6, 1, 1, nodes, 5)) return -1;
    static const uint32_t eoff[] = {0, 1, 2, 2, 2, 2};
    memcpy(p->eoff, eoff, sizeof eoff);
    if (!(p->edge = malloc(2 * sizeof *p->edge))) return -1;
    p->edge[0] = 3, p->edge[1] = 4;
    if (refine_referrers(p)) return -1;
    refine_blocks(p, fresh);
    return 0;
}

static void refine_reads_through(void)
{
    refine_t p;
    uint32_t reads[6] = {0, 1, 2, 3, 4, 5};
    CHECK(five_nodes(&p) == 0 && refine_run(&p, REFINE_FORWARD, 1) == 0);
    CHECK(p.rank[1] == p.rank[2] && p.rank[3] == p.rank[4] && p.rank[1] != p.rank[3]);
    refine_free(&p);
    /* An edge to 4 reads 5's rank: 1 and 2 read different blocks. */
    reads[4] = 5;
    CHECK(five_nodes(&p) == 0);
    p.reads = reads;
    CHECK(refine_run(&p, REFINE_FORWARD, 1) == 0);
    CHECK(p.rank[1] != p.rank[2] && p.rank[3] == p.rank[4]);
    refine_free(&p);
}

typedef struct {
    uint32_t reads[6];
    int calls;
} redirect_t;

/* After the first round, edges to 4 read 5 and what reads 4 is touched again. */
static int redirect_after_round(void *ctx, refine_t *p)
{
    redirect_t *r = ctx;
    if (r->calls++) return 0;
    r->reads[4] = 5;
    return refine_add_referrers(p, 4);
}

static int stop_after_round(void *ctx, refine_t *p) { return -1; }

static void refine_after_round_hook(void)
{
    refine_t p;
    redirect_t r = {{0, 1, 2, 3, 4, 5}, 0};
    CHECK(five_nodes(&p) == 0);
    p.reads = r.reads, p.after_round = redirect_after_round, p.after_ctx = &r;
    CHECK(refine_run(&p, REFINE_FORWARD, 1) == 0);
    /* Round 1 splits {1,2} from {3,4}; the hook's readers make round 2 split 1 from 2. */
    CHECK(r.calls == 2 && p.rank[1] != p.rank[2] && p.rank[3] == p.rank[4]);
    refine_free(&p);
    CHECK(five_nodes(&p) == 0);
    p.after_round = stop_after_round;
    CHECK(refine_run(&p, REFINE_FORWARD, 1) == -1);
    refine_free(&p);
}

int main(void)
{
    big_alloc_setup();
    RUN(grow_doubles_from_16);
    RUN(grown_room_is_what_grow_left);
    RUN(grow_refuses_overflow);
    RUN(big_alloc_bounds);
    RUN(hash_is_of_the_bytes);
    RUN(intern_numbers_in_order);
    RUN(refine_reads_through);
    RUN(refine_after_round_hook);
    return ctest_status("test_runtime");
}
