/* test_partition.c — the hierarchical partition both `spatial` and (later)
 * `hypercube` use: hand-computed paths and regions; a point's cell and the
 * cell's region agree, and samples stay in their cell, in d = 1, 2, 3 and
 * on awkward boxes; the extension operator is consistent (every node's value
 * is the sum of its children's, the root's is Σ C, a virtual cell gets its
 * share); the tree's shape survives a snapshot and corrupt shapes are
 * refused. */
#include "dptest.h"

#include "core/dp_error.h"
#include "synth/common/partition.h"

#include <math.h>
#include <string.h>

static dp_box box2(void)
{
    dp_box b = {.d = 2};
    b.hi[0] = b.hi[1] = 1;
    return b;
}

static void test_hand_paths(void)
{
    dp_box b = box2();
    /* x first: (0.3, 0.8) is left (0), then upper (1), then x in [0.25, 0.5): upper (1) */
    double p[2] = {0.3, 0.8};
    CU_ASSERT_EQUAL(dp_partition_path(&b, p, 1), 0);
    CU_ASSERT_EQUAL(dp_partition_path(&b, p, 2), 1);
    CU_ASSERT_EQUAL(dp_partition_path(&b, p, 3), 3);
    /* midpoints go up; the box's upper faces belong to the box's last cell */
    double mid[2] = {0.5, 0.5}, corner[2] = {1, 1}, origin[2] = {0, 0};
    CU_ASSERT_EQUAL(dp_partition_path(&b, mid, 2), 3);
    CU_ASSERT_EQUAL(dp_partition_path(&b, corner, 4), 15);
    CU_ASSERT_EQUAL(dp_partition_path(&b, origin, 4), 0);
    double lo[2], hi[2];
    dp_partition_region(&b, 3, 3, lo, hi);   /* path 011: x in [0.25, 0.5), y in [0.5, 1) */
    CU_ASSERT(lo[0] == 0.25 && hi[0] == 0.5 && lo[1] == 0.5 && hi[1] == 1);
    CU_ASSERT_EQUAL(dp_partition_first(1, 1, 3), 4);
}

static void test_samples_in_cell(void)
{
    dp_key key;
    dptest_key(&key, 2);
    dp_drbg g;
    dp_drbg_init(&g, &key, "p", 1, 1, "test/partition");
    dp_box boxes[3] = {{.d = 1}, {.d = 2}, {.d = 3}};
    boxes[0].lo[0] = -3.7, boxes[0].hi[0] = 1e-3;
    boxes[1].lo[0] = 100, boxes[1].hi[0] = 100.0000001, boxes[1].lo[1] = -1e6, boxes[1].hi[1] = 1e6;
    for (int i = 0; i < 3; i++)
        boxes[2].lo[i] = -1, boxes[2].hi[i] = 2 + i;
    for (int bi = 0; bi < 3; bi++) {
        const dp_box *b = &boxes[bi];
        for (int trial = 0; trial < 3000; trial++) {
            uint32_t depth = (uint32_t)dp_drbg_uniform(&g, 41);
            uint64_t path = depth ? dp_drbg_u64(&g) >> (64 - depth) : 0;
            double x[3], lo[3], hi[3];
            dp_partition_sample(b, depth, path, &g, x);
            dp_partition_region(b, depth, path, lo, hi);
            CU_ASSERT(dp_box_contains(b, x));
            for (uint32_t i = 0; i < b->d; i++)
                CU_ASSERT(x[i] >= lo[i] && x[i] < hi[i]);
            CU_ASSERT_EQUAL(dp_partition_path(b, x, depth), path);
        }
    }
    dp_drbg_wipe(&g);
}

/* A random tree with random C: E(C) is consistent and keeps the mass. */
static void test_extension_consistent(void)
{
    dp_key key;
    dptest_key(&key, 4);
    dp_drbg g;
    dp_drbg_init(&g, &key, "p", 1, 1, "test/extend");
    for (int trial = 0; trial < 50; trial++) {
        dp_ptree t;
        CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&t, 4001), DP_OK);
        for (int i = 0; i < 300; i++) {
            uint32_t v = (uint32_t)dp_drbg_uniform(&g, t.n);
            if (t.nodes[v].depth < 12)
                CU_ASSERT_EQUAL(dp_ptree_split(&t, v), DP_OK);
        }
        int64_t C[4001];
        double A[4001], D[4001], sum = 0;
        for (uint32_t v = 0; v < t.n; v++) {
            C[v] = (int64_t)dp_drbg_uniform(&g, 2001) - 1000;
            sum += (double)C[v];
        }
        dp_ptree_extend(&t, C, A, D);
        CU_ASSERT(fabs(A[0] + (double)C[0] + D[0] - sum) < 1e-6);
        double worst = 0;
        for (uint32_t v = 0; v < t.n; v++) {
            uint32_t c = t.nodes[v].child;
            if (c == DP_PTREE_NONE)
                continue;
            double gv = A[v] + (double)C[v] + D[v];
            double gc = A[c] + (double)C[c] + D[c] + A[c + 1] + (double)C[c + 1] + D[c + 1];
            worst = fmax(worst, fabs(gv - gc));
        }
        CU_ASSERT(worst < 1e-6);
        dp_ptree_free(&t);
    }
    /* hand example: root C = 8 with children C = 2 and 0: the left child is
     * 8/2 + 2 = 6, the right 4, the root 10; a virtual grandchild of the right gets 2 */
    dp_ptree t;
    CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&t, 10), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&t, 0), DP_OK);
    int64_t C[3] = {8, 2, 0};
    double A[3], D[3];
    dp_ptree_extend(&t, C, A, D);
    CU_ASSERT_DOUBLE_EQUAL(A[0] + 8 + D[0], 10, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(A[1] + 2 + D[1], 6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(A[2] + 0 + D[2], 4, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL((A[2] + 0) / 2, 2, 1e-12);
    dp_ptree_free(&t);
    dp_drbg_wipe(&g);
}

static void test_tree_snapshot(void)
{
    dp_ptree t, u;
    CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&t, 100), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&t, 0), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&t, 2), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&t, 3), DP_OK);
    CU_ASSERT_EQUAL(t.nodes[5].path, 4);   /* 1, 0, 0 */
    CU_ASSERT_EQUAL(t.nodes[5].depth, 3);
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL_FATAL(dp_ptree_save(&t, &b), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&u, 100), DP_OK);
    dp_reader r;
    dp_reader_init(&r, b.data, b.len);
    CU_ASSERT_EQUAL_FATAL(dp_ptree_load(&u, &r), DP_OK);
    CU_ASSERT_EQUAL(u.n, t.n);
    CU_ASSERT(memcmp(u.nodes, t.nodes, t.n * sizeof *t.nodes) == 0);
    /* a child pointer that skips a pair, or points back, is refused */
    for (size_t off = 4; off + 4 <= b.len; off += 4) {
        uint8_t save[4];
        memcpy(save, b.data + off, 4);
        b.data[off] ^= 0x02;
        dp_ptree w;
        CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&w, 100), DP_OK);
        dp_reader_init(&r, b.data, b.len);
        CU_ASSERT_NOT_EQUAL(dp_ptree_load(&w, &r), DP_OK);
        dp_ptree_free(&w);
        memcpy(b.data + off, save, 4);
    }
    /* a restored one-node tree grows (its capacity is exactly what was loaded) */
    dp_ptree one, grown;
    CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&one, 100), DP_OK);
    b.len = 0;
    CU_ASSERT_EQUAL_FATAL(dp_ptree_save(&one, &b), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&grown, 100), DP_OK);
    dp_reader_init(&r, b.data, b.len);
    CU_ASSERT_EQUAL_FATAL(dp_ptree_load(&grown, &r), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&grown, 0), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&grown, 2), DP_OK);
    CU_ASSERT_EQUAL(grown.n, 5);
    CU_ASSERT_EQUAL(grown.nodes[4].path, 3);
    dp_ptree_free(&one);
    dp_ptree_free(&grown);
    /* the node limit holds */
    dp_ptree small;
    CU_ASSERT_EQUAL_FATAL(dp_ptree_init(&small, 3), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&small, 0), DP_OK);
    CU_ASSERT_EQUAL(dp_ptree_split(&small, 1), DP_ERANGE);
    CU_ASSERT_EQUAL(small.n, 3);
    dp_ptree_free(&small);
    dp_buf_free(&b);
    dp_ptree_free(&t);
    dp_ptree_free(&u);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"hand-computed paths and regions (x first, midpoints up)", test_hand_paths},
        {"a sample's cell is its cell, in d = 1, 2, 3", test_samples_in_cell},
        {"the extension is consistent and keeps the mass", test_extension_consistent},
        {"tree shape snapshot; corrupt shapes and the node limit refused", test_tree_snapshot},
        {NULL, NULL},
    };
    return dptest_run("partition", cases);
}
