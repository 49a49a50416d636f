/* test_marginal_pgm.c — `marginal`'s pgm fit (marginal_pgm.c) and its
 * junction tree (marginal_factor.c):
 *   * on a domain small enough for both, pgm and mw make the same fit (both
 *     are IPF on the same log-linear family), so every 2-way marginal —
 *     inside a clique or across cliques, chain or cycle — agrees to 1e-9;
 *   * rows drawn from the model match its clique marginals within the
 *     rounding (a clique-ignoring draw would not), and are deterministic;
 *   * save/load continues identically — bit for bit, also with several
 *     factors in one clique; a model over its size cap leaves
 *     the measurement out instead of failing;
 *   * at Adult scale (14 attributes, 6.4e17 cells) a fit and all 91 pair
 *     marginals run, and each fitted clique matches its measurement;
 *   * all pairs of one attribute in one traversal equal the pair-by-pair
 *     queries bit for bit;
 *   * a copy answers pair queries like its source (nothing memoised from
 *     the copy's old values survives);
 *   * the fit's incremental updates (dp_jtree_move_focus / dp_jtree_scale)
 *     give the focus clique the belief a full calibration would. */
#include "dptest.h"

#include "core/dp_error.h"
#include "synth/marginal/marginal.h"
#include "synth/marginal/marginal_factor.h"

#include <math.h>
#include <string.h>
#include <time.h>

static json_t *config(const char *attrs_json, const char *extra)
{
    char text[4096];
    /* the pgm fit is Alg. 3's: the method named (the default is forest) */
    snprintf(text, sizeof text, "{\"attributes\": %s, \"horizon\": 4, \"epsilon\": 1, \"method\": \"select_measure_fit\"%s}",
             attrs_json, extra);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static const char *SMALL = "[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]},"
                           "{\"name\":\"c\",\"categories\":[\"0\",\"1\",\"2\",\"3\"]},{\"name\":\"d\",\"categories\":[\"0\",\"1\"]}]";

/* A correlated "truth" over the small domain and its workload marginals as measurements (+ a fixed perturbation). */
static void truth_marginals(const dp_marginal_config *c, double meas[][16])
{
    double joint[48];
    for (int x = 0; x < 48; x++) {
        int a = x / 24, b = x / 8 % 3, cc = x / 2 % 4, d = x % 2;
        joint[x] = 1 + 5 * (a == (b > 0)) + 3 * (cc == b) + 2 * (d == a) + (cc == 3 && d == 1 ? 4 : 0);
    }
    for (size_t w = 0; w < c->n_workloads; w++) {
        dp_marginal_dense_marginal(c, joint, &c->workloads[w], meas[w]);
        for (uint64_t k = 0; k < c->workloads[w].cells; k++)
            meas[w][k] = meas[w][k] * 20 + (double)((k * 7 + w) % 5) - 2;
    }
}

static size_t workload_index(const dp_marginal_config *c, uint32_t a, uint32_t b)
{
    for (size_t w = 0; w < c->n_workloads; w++)
        if (c->workloads[w].k == 2 && c->workloads[w].attrs[0] == a && c->workloads[w].attrs[1] == b)
            return w;
    return SIZE_MAX;
}

/* The small domain's config, its perturbed truth marginals, and ms[i] =
 * the measurement of pair cl[i]. */
static void small_measurements(json_t **j, dp_marginal_config *c, double meas[][16], const uint32_t (*cl)[2],
                               size_t n_cl, dp_mmeasure *ms)
{
    *j = config(SMALL, "");
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(c, *j, err, sizeof err), DP_OK);
    truth_marginals(c, meas);
    for (size_t i = 0; i < n_cl; i++) {
        size_t w = workload_index(c, cl[i][0], cl[i][1]);
        ms[i] = (dp_mmeasure){&c->workloads[w], meas[w], 1, 0};
    }
}

static void agree_on(const uint32_t (*cl)[2], size_t n_cl, const char *what)
{
    json_t *j;
    dp_marginal_config c;
    char err[256];
    double meas[6][16];
    dp_mmeasure ms[6];
    small_measurements(&j, &c, meas, cl, n_cl, ms);
    dp_mmodel *mw, *pgm;
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_mw.create(&mw, &c, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&pgm, &c, err, sizeof err), DP_OK);
    double total = 0;
    for (uint64_t k = 0; k < ms[0].w->cells; k++)
        total += meas[workload_index(&c, cl[0][0], cl[0][1])][k];
    CU_ASSERT_EQUAL(dp_mmodel_mw.fit(mw, ms, n_cl, total, 25), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(pgm, ms, n_cl, total, 25), DP_OK);
    double worst = 0, qa[16], qb[16];
    for (size_t w = 0; w < c.n_workloads; w++) {
        CU_ASSERT_EQUAL(dp_mmodel_mw.marginal(mw, &c.workloads[w], qa), DP_OK);
        CU_ASSERT_EQUAL(dp_mmodel_pgm.marginal(pgm, &c.workloads[w], qb), DP_OK);
        for (uint64_t k = 0; k < c.workloads[w].cells; k++)
            worst = fmax(worst, fabs(qa[k] - qb[k]) / total);
    }
    printf("\n    %s: largest pair-marginal difference pgm vs mw %.2e (of the total)", what, worst);
    CU_ASSERT(worst < 1e-9);
    dp_mmodel_mw.destroy(mw);
    dp_mmodel_pgm.destroy(pgm);
    dp_marginal_config_free(&c);
    json_decref(j);
}

static void test_agrees_with_mw(void)
{
    static const uint32_t chain[3][2] = {{0, 1}, {1, 2}, {2, 3}};
    static const uint32_t cycle[3][2] = {{0, 1}, {1, 2}, {0, 2}};
    static const uint32_t star[3][2] = {{0, 3}, {1, 3}, {2, 3}};
    agree_on(chain, 3, "chain a-b-c-d");
    agree_on(cycle, 3, "cycle a-b-c");
    agree_on(star, 3, "star around d");
}

/* Three factors in one clique (the cycle a-b-c): after fits, a model
 * saved and loaded holds the same bits as the running one, and the next
 * fit agrees bit for bit — the log-potentials are sums of the factors,
 * not running sums of the fits' deltas (those differ in the last place). */
static void test_save_load_bit_exact(void)
{
    static const uint32_t cycle[3][2] = {{0, 1}, {1, 2}, {0, 2}};
    json_t *j;
    dp_marginal_config c;
    char err[256];
    double meas[6][16];
    dp_mmeasure ms[3];
    small_measurements(&j, &c, meas, cycle, 3, ms);
    dp_mmodel *run, *restored;
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&run, &c, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&restored, &c, err, sizeof err), DP_OK);
    for (uint32_t round = 0; round < 3; round++) {   /* steps: the measurements move a little each time */
        for (size_t i = 0; i < 3; i++)
            for (uint64_t k = 0; k < ms[i].w->cells; k++)
                meas[workload_index(&c, cycle[i][0], cycle[i][1])][k] += (double)((k + round) % 3) * 0.37;
        CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(run, ms, 3, 400 + round, 7), DP_OK);
    }
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.save(run, &b), DP_OK);
    dp_reader r;
    dp_reader_init(&r, b.data, b.len);
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.load(restored, &r), DP_OK);
    int same = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t w = 0; w < c.n_workloads; w++) {
            double qa[16], qb[16];
            CU_ASSERT_EQUAL(dp_mmodel_pgm.marginal(run, &c.workloads[w], qa), DP_OK);
            CU_ASSERT_EQUAL(dp_mmodel_pgm.marginal(restored, &c.workloads[w], qb), DP_OK);
            same &= memcmp(qa, qb, c.workloads[w].cells * sizeof *qa) == 0;
        }
        CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(run, ms, 3, 410, 7), DP_OK);   /* the step after the restore */
        CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(restored, ms, 3, 410, 7), DP_OK);
    }
    CU_ASSERT(same);
    dp_buf_free(&b);
    dp_mmodel_pgm.destroy(run);
    dp_mmodel_pgm.destroy(restored);
    dp_marginal_config_free(&c);
    json_decref(j);
}

static int collect(void *ctx, const int32_t *row)
{
    double *h = ctx;
    h[((row[0] * 3 + row[1]) * 4 + row[2]) * 2 + row[3]]++;
    h[48]++;
    return 0;
}

static void test_rows(void)
{
    json_t *j = config(SMALL, "");
    dp_marginal_config c;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    double meas[6][16];
    truth_marginals(&c, meas);
    dp_mmeasure ms[2] = {{&c.workloads[workload_index(&c, 0, 1)], meas[workload_index(&c, 0, 1)], 1, 0},
                         {&c.workloads[workload_index(&c, 1, 2)], meas[workload_index(&c, 1, 2)], 1, 0}};
    dp_mmodel *pgm, *mw;
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&pgm, &c, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_mw.create(&mw, &c, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(pgm, ms, 2, 5000, 20), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_mw.fit(mw, ms, 2, 5000, 20), DP_OK);
    dp_key key;
    dptest_key(&key, 4);
    double h1[49] = {0}, h2[49] = {0};
    dp_drbg g1, g2;
    dp_drbg_init(&g1, &key, "s", 1, 1, "test/rows");
    dp_drbg_init(&g2, &key, "s", 1, 1, "test/rows");
    CU_ASSERT_EQUAL(dp_mmodel_pgm.rows(pgm, 5000, &g1, collect, h1), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.rows(pgm, 5000, &g2, collect, h2), DP_OK);
    CU_ASSERT_EQUAL(h1[48], 5000);
    CU_ASSERT(memcmp(h1, h2, sizeof h1) == 0);   /* same DRBG, same rows */
    /* clique marginals of the rows = the model's within the rounding (±1 per
     * cell per rounding stage: two stages here) */
    double worst = 0, q[16], r[16];
    for (int i = 0; i < 2; i++) {
        dp_mmodel_mw.marginal(mw, ms[i].w, q);
        dp_marginal_dense_marginal(&c, h1, ms[i].w, r);
        for (uint64_t k = 0; k < ms[i].w->cells; k++)
            worst = fmax(worst, fabs(q[k] - r[k]));
    }
    printf("\n    rows vs model on the cliques: largest cell difference %.2f rows", worst);
    CU_ASSERT(worst <= 2.0 + 1e-9);
    /* an independent draw (ignoring the cliques) is far off: the check can fail */
    double indep[49] = {0}, pa[2] = {0}, pb[3] = {0}, pc[4] = {0}, pd[2] = {0}, full[48];
    dp_mmodel_mw_counts(mw, full);
    for (int x = 0; x < 48; x++) {
        pa[x / 24] += full[x] / 5000;
        pb[x / 8 % 3] += full[x] / 5000;
        pc[x / 2 % 4] += full[x] / 5000;
        pd[x % 2] += full[x] / 5000;
    }
    for (int x = 0; x < 48; x++)
        indep[x] = 5000 * pa[x / 24] * pb[x / 8 % 3] * pc[x / 2 % 4] * pd[x % 2];
    double worst_indep = 0;
    dp_mmodel_mw.marginal(mw, ms[0].w, q);
    dp_marginal_dense_marginal(&c, indep, ms[0].w, r);
    for (uint64_t k = 0; k < ms[0].w->cells; k++)
        worst_indep = fmax(worst_indep, fabs(q[k] - r[k]));
    CU_ASSERT(worst_indep > 50);
    /* save / load: the same model */
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.save(pgm, &b), DP_OK);
    dp_mmodel *back;
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&back, &c, err, sizeof err), DP_OK);
    dp_reader rd;
    dp_reader_init(&rd, b.data, b.len);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.load(back, &rd), DP_OK);
    double q1[16], q2[16];
    for (size_t w = 0; w < c.n_workloads; w++) {
        dp_mmodel_pgm.marginal(pgm, &c.workloads[w], q1);
        dp_mmodel_pgm.marginal(back, &c.workloads[w], q2);
        CU_ASSERT(memcmp(q1, q2, c.workloads[w].cells * sizeof *q1) == 0);
    }
    dp_buf_free(&b);
    dp_mmodel_pgm.destroy(back);
    dp_mmodel_pgm.destroy(pgm);
    dp_mmodel_mw.destroy(mw);
    dp_marginal_config_free(&c);
    json_decref(j);
}

static const char *adult_attrs(char *buf, size_t n)
{
    static const int sizes[14] = {85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2};
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int a = 0; a < 14; a++) {
        len += (size_t)snprintf(buf + len, n - len, "%s{\"name\":\"x%d\",\"categories\":[", a ? "," : "", a);
        for (int v = 0; v < sizes[a]; v++)
            len += (size_t)snprintf(buf + len, n - len, "%s\"%d\"", v ? "," : "", v);
        len += (size_t)snprintf(buf + len, n - len, "]}");
    }
    snprintf(buf + len, n - len, "]");
    return buf;
}

/* 16 pairs of the 14 Adult attributes: a spanning tree plus 3 cycles. */
static const uint32_t ADULT_PAIRS[16][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 8},
                                           {8, 9}, {9, 10}, {10, 11}, {11, 12}, {12, 13}, {0, 3}, {4, 8}, {5, 13}};

/* The 14-attribute Adult config with fit pgm, parsed into c (its JSON returned, to free). */
static json_t *adult_config(dp_marginal_config *c)
{
    static char attrs[16384];
    json_t *j = config(adult_attrs(attrs, sizeof attrs), ", \"fit\": \"pgm\"");
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(c, j, err, sizeof err), DP_OK);
    return j;
}

static void test_adult_scale(void)
{
    dp_marginal_config c;
    json_t *j = adult_config(&c);
    char err[256];
    CU_ASSERT_EQUAL(c.fit, DP_MARGINAL_FIT_PGM);
    const uint32_t (*pairs)[2] = ADULT_PAIRS;
    static double meas[16][10000];
    dp_mmeasure ms[16];
    for (int i = 0; i < 16; i++) {
        size_t w = workload_index(&c, pairs[i][0], pairs[i][1]);
        const dp_marginal_workload *wl = &c.workloads[w];
        for (uint64_t k = 0; k < wl->cells; k++)   /* a smooth positive table summing to ~48842 */
            meas[i][k] = 48842.0 / (double)wl->cells * (1 + 0.5 * sin((double)k * 0.7 + i));
        ms[i] = (dp_mmeasure){wl, meas[i], 1, 0};
    }
    dp_mmodel *m;
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&m, &c, err, sizeof err), DP_OK);
    clock_t t0 = clock();
    CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(m, ms, 16, 48842, 5), DP_OK);
    clock_t t1 = clock();
    static double q[10000];
    double sum_err = 0;
    for (size_t w = 0; w < c.n_workloads; w++) {
        CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.marginal(m, &c.workloads[w], q), DP_OK);
        double s = 0;
        for (uint64_t k = 0; k < c.workloads[w].cells; k++)
            s += q[k];
        CU_ASSERT(fabs(s - 48842) < 1e-6 * 48842);
    }
    clock_t t2 = clock();
    /* the last measurement fitted is matched up to its own inconsistency
     * with the total (the tables' sums differ from 48842 by < 1 %) */
    CU_ASSERT_EQUAL(dp_mmodel_pgm.marginal(m, ms[15].w, q), DP_OK);
    for (uint64_t k = 0; k < ms[15].w->cells; k++)
        sum_err += fabs(q[k] - meas[15][k]);
    printf("\n    Adult scale: 16 cliques, fit 5 passes %.2f s, 91 pair marginals %.2f s; last clique L1 off %.3g rows of 48842",
           (double)(t1 - t0) / CLOCKS_PER_SEC, (double)(t2 - t1) / CLOCKS_PER_SEC, sum_err);
    CU_ASSERT(sum_err < 0.01 * 48842);
    dp_mmodel_pgm.destroy(m);
    dp_marginal_config_free(&c);
    json_decref(j);

    /* a model cap too small for the cycle: the measurement that would break it is left out */
    j = config(SMALL, ", \"fit\": \"pgm\", \"max_model_cells\": 1024");
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    uint64_t cells;
    const uint32_t ab[2] = {0, 1}, bc[2] = {1, 2};
    const uint32_t *groups[2] = {ab, bc};
    const uint32_t ks[2] = {2, 2};
    CU_ASSERT_EQUAL(dp_jtree_build(NULL, 4, c.sizes, 2, groups, ks, 10, &cells), DP_ERANGE);
    CU_ASSERT_EQUAL(dp_jtree_build(NULL, 4, c.sizes, 2, groups, ks, 1024, &cells), DP_OK);
    CU_ASSERT_EQUAL(cells, 6 + 12 + 2);   /* {a,b}, {b,c}, {d} */
    dp_marginal_config_free(&c);
    json_decref(j);
}

/* One walk answering all pairs of an attribute (how the pgm fit fills its
 * cache) gives, bit for bit, what one walk per pair gives (dp_jtree_marginal;
 * each walk skips the subtrees without a wanted pair, so the two visit
 * different parts of the tree), for every cross-clique pair of a
 * 14-attribute tree with cycles and non-uniform potentials.  Correctness
 * against the full joint is test_agrees_with_mw's. */
typedef struct pairs_check { const dp_jtree *jt; const uint32_t *sizes; uint32_t a; int compared, equal; } pairs_check;

static int check_pair(void *ctx, uint32_t b, const double *p)
{
    pairs_check *pc = ctx;
    uint32_t asc[2] = {pc->a < b ? pc->a : b, pc->a < b ? b : pc->a};
    static double q[10000];
    if (dp_jtree_marginal(pc->jt, pc->sizes, asc, 2, q) != DP_OK)
        return DP_EINVAL;
    pc->compared++;
    pc->equal += memcmp(p, q, pc->sizes[asc[0]] * pc->sizes[asc[1]] * sizeof *q) == 0;
    return DP_OK;
}

static void test_pairs_of_is_pair_by_pair(void)
{
    dp_marginal_config c;
    json_t *j = adult_config(&c);
    const uint32_t (*pairs)[2] = ADULT_PAIRS;
    const uint32_t *groups[16];
    uint32_t ks[16];
    for (int i = 0; i < 16; i++) {
        groups[i] = pairs[i];
        ks[i] = 2;
    }
    dp_jtree jt;
    uint64_t cells;
    CU_ASSERT_EQUAL_FATAL(dp_jtree_build(&jt, c.n_attrs, c.sizes, 16, groups, ks, (uint64_t)1 << 20, &cells), DP_OK);
    for (uint32_t K = 0; K < jt.n_cliques; K++)
        for (uint64_t x = 0; x < jt.logpot[K].cells; x++)
            jt.logpot[K].v[x] = 0.8 * sin((double)x * 1.3 + K) + 0.3 * cos((double)(x % 7) * (K + 1));
    CU_ASSERT_EQUAL_FATAL(dp_jtree_calibrate(&jt, c.sizes), DP_OK);
    int cross = 0, compared = 0, equal = 0;
    for (uint32_t a = 0; a < c.n_attrs; a++) {
        uint8_t want[64] = {0};
        for (uint32_t b = 0; b < c.n_attrs; b++) {
            uint32_t asc[2] = {a < b ? a : b, a < b ? b : a};
            int a_carried = c.sizes[a] < c.sizes[b] || (c.sizes[a] == c.sizes[b] && a < b);
            if (b != a && a_carried && dp_jtree_find(&jt, asc, 2) < 0) {
                want[b] = 1;
                cross++;
            }
        }
        pairs_check pc = {&jt, c.sizes, a, 0, 0};
        CU_ASSERT_EQUAL(dp_jtree_pairs_of(&jt, c.sizes, a, want, check_pair, &pc), DP_OK);
        compared += pc.compared;
        equal += pc.equal;
    }
    printf("\n    %d cross-clique pairs, %d emitted, %d bit-identical", cross, compared, equal);
    CU_ASSERT(cross > 40);
    CU_ASSERT_EQUAL(compared, cross);
    CU_ASSERT_EQUAL(equal, cross);
    dp_jtree_free(&jt);
    dp_marginal_config_free(&c);
    json_decref(j);
}

/* A pair query whose carried table crosses a big clique through two wide
 * separators: the product runs over 85 × 100 × 100 × 99 ≈ 8.4e7 cells, over
 * the 2^26 guard that used to return DP_ERANGE and stop a pgm stream mid-way
 * (it did at step 16 of full Adult).  The answer is a distribution whose
 * margins are the cliques' own. */
static void test_pair_across_a_big_clique(void)
{
    const uint32_t sizes[5] = {85, 100, 100, 99, 90};   /* a is carried: fewer categories than e */
    const uint32_t abc[3] = {0, 1, 2}, bcd[3] = {1, 2, 3}, cde[3] = {2, 3, 4};
    const uint32_t *groups[3] = {abc, bcd, cde};
    const uint32_t ks[3] = {3, 3, 3};
    dp_jtree jt;
    uint64_t cells;
    CU_ASSERT_EQUAL_FATAL(dp_jtree_build(&jt, 5, sizes, 3, groups, ks, (uint64_t)1 << 22, &cells), DP_OK);
    for (uint32_t K = 0; K < jt.n_cliques; K++)
        for (uint64_t x = 0; x < jt.logpot[K].cells; x++)
            jt.logpot[K].v[x] = 0.5 * sin((double)x * 0.37 + K);
    CU_ASSERT_EQUAL_FATAL(dp_jtree_calibrate(&jt, sizes), DP_OK);
    const uint32_t ae[2] = {0, 4}, a[1] = {0}, e[1] = {4};
    CU_ASSERT_EQUAL_FATAL(dp_jtree_find(&jt, ae, 2), -1);
    static double pae[85 * 90], pa[85], pe[90];
    CU_ASSERT_EQUAL_FATAL(dp_jtree_marginal(&jt, sizes, ae, 2, pae), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_jtree_marginal(&jt, sizes, a, 1, pa), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_jtree_marginal(&jt, sizes, e, 1, pe), DP_OK);
    double worst = 0, se[90] = {0};
    for (int i = 0; i < 85; i++) {
        double sa = 0;
        for (int k = 0; k < 90; k++) {
            sa += pae[90 * i + k];
            se[k] += pae[90 * i + k];
        }
        worst = fmax(worst, fabs(sa - pa[i]));
    }
    for (int k = 0; k < 90; k++)
        worst = fmax(worst, fabs(se[k] - pe[k]));
    CU_ASSERT(worst < 1e-12);
    dp_jtree_free(&jt);
}

/* Calibration with potentials whose products fall into the denormal range
 * (IPF drives the log-potentials of cells measured as empty ever lower; on
 * full Adult with K = 8 this happened at step 27): a Hugin division by a
 * denormal separator value overflowed to inf and the beliefs became NaN.
 * They must stay finite, normalised distributions. */
static void test_calibrate_denormal_separators(void)
{
    const uint32_t sizes[3] = {2, 2, 2};
    const uint32_t ab[2] = {0, 1}, bc[2] = {1, 2};
    const uint32_t *groups[2] = {ab, bc};
    const uint32_t ks[2] = {2, 2};
    int bad = 0;
    for (int flip = 0; flip < 2; flip++) {
        dp_jtree jt;
        uint64_t cells;
        CU_ASSERT_EQUAL_FATAL(dp_jtree_build(&jt, 3, sizes, 2, groups, ks, 64, &cells), DP_OK);
        for (uint32_t K = 0; K < jt.n_cliques; K++) {
            const dp_factor *f = &jt.logpot[K];
            int has_c = f->attrs[f->k - 1] == 2;   /* {b, c} */
            for (uint64_t x = 0; x < f->cells; x++) {
                int b = has_c ? (int)(x / 2) : (int)(x % 2);   /* b's digit in {b,c} / {a,b} */
                double lo = (has_c ^ flip) ? -744.4 : -730.0;
                jt.logpot[K].v[x] = (has_c ^ flip) ? (b == 0 ? lo : 0) : (b == 1 ? lo : 0);
            }
        }
        CU_ASSERT_EQUAL_FATAL(dp_jtree_calibrate(&jt, sizes), DP_OK);
        for (uint32_t K = 0; K < jt.n_cliques; K++) {
            double sum = 0;
            for (uint64_t x = 0; x < jt.belief[K].cells; x++) {
                bad |= !isfinite(jt.belief[K].v[x]) || jt.belief[K].v[x] < 0;
                sum += jt.belief[K].v[x];
            }
            bad |= !(fabs(sum - 1) < 1e-9);
        }
        dp_jtree_free(&jt);
    }
    CU_ASSERT(!bad);
}

/* Two cliques whose log-potentials drifted apart on their shared attribute:
 * +800 on b = 1 in {a, b}, −800 in {b, c}.  The model is unchanged (the
 * shifts cancel in the sum), which is how iterative proportional fitting on
 * measurements that disagree about b leaves it, cycle after cycle; on full
 * Adult (ordered stream, ε = 2) |θ| passed 745 at step 36.  Exponentiating
 * each clique on its own underflows the cells the other clique keeps, and
 * the beliefs came out 0 everywhere (the model then released uniform rows).
 * Calibration must give the exact marginals of p ∝ exp(g₁(a,b) + g₂(b,c))
 * whatever the drift. */
static void test_calibrate_drifted_potentials(void)
{
    const uint32_t sizes[3] = {2, 3, 2};
    const uint32_t ab[2] = {0, 1}, bc[2] = {1, 2};
    const uint32_t *groups[2] = {ab, bc};
    const uint32_t ks[2] = {2, 2};
    double g1[2][3], g2[3][2], joint[2][3][2], z = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            g1[a][b] = 0.7 * sin(1.0 + a * 3 + b);
    for (int b = 0; b < 3; b++)
        for (int c = 0; c < 2; c++)
            g2[b][c] = 0.9 * cos(2.0 + b * 2 + c);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++)
                z += joint[a][b][c] = exp(g1[a][b] + g2[b][c]);
    for (int drift = 0; drift <= 2000; drift += 400) {
        dp_jtree jt;
        uint64_t cells;
        CU_ASSERT_EQUAL_FATAL(dp_jtree_build(&jt, 3, sizes, 2, groups, ks, 64, &cells), DP_OK);
        CU_ASSERT_EQUAL_FATAL(jt.n_cliques, 2);
        for (uint32_t K = 0; K < 2; K++) {
            dp_factor *f = &jt.logpot[K];
            int is_bc = f->attrs[0] == 1;
            for (uint64_t x = 0; x < f->cells; x++) {
                int b = is_bc ? (int)(x / 2) : (int)(x % 3), other = is_bc ? (int)(x % 2) : (int)(x / 3);
                double shift = b == 1 ? (is_bc ? -drift : drift) : 0;
                f->v[x] = (is_bc ? g2[b][other] : g1[other][b]) + shift;
            }
        }
        CU_ASSERT_EQUAL_FATAL(dp_jtree_calibrate(&jt, sizes), DP_OK);
        double worst = 0;
        for (uint32_t K = 0; K < 2; K++) {
            const dp_factor *f = &jt.belief[K];
            int is_bc = f->attrs[0] == 1;
            for (uint64_t x = 0; x < f->cells; x++) {
                double want = 0;
                for (int y = 0; y < 2; y++) {   /* sum out the attribute the clique lacks */
                    int b = is_bc ? (int)(x / 2) : (int)(x % 3), other = is_bc ? (int)(x % 2) : (int)(x / 3);
                    want += is_bc ? joint[y][b][other] : joint[other][b][y];
                }
                worst = fmax(worst, fabs(f->v[x] - want / z));
            }
        }
        CU_ASSERT(worst < 1e-12);
        if (!(worst < 1e-12))
            printf("\n  drift %d: largest belief error %g\n", drift, worst);
        dp_jtree_free(&jt);
    }
}

/* IPF's incremental updates against full calibration.  A branching tree
 * (cliques {0,1} {1,2} {2,3} {3,4} {1,5} {5,6}); a sequence of updates, each
 * at a clique away from the last — a ratio over one or two of its
 * attributes, applied to the belief by dp_jtree_scale and, as a log-ratio,
 * to the log-potential of a second tree that is calibrated afresh — and
 * after every update the focus clique's belief must equal the fresh one's
 * (to 1e-12).  Focus moves that skipped the path, or absorbed through the
 * wrong separator, leave errors of order 0.1 here. */
static void test_focus_updates_match_calibration(void)
{
    const uint32_t sizes[7] = {2, 3, 2, 4, 2, 3, 2};
    const uint32_t g[6][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {1, 5}, {5, 6}};
    const uint32_t *groups[6] = {g[0], g[1], g[2], g[3], g[4], g[5]};
    const uint32_t ks[6] = {2, 2, 2, 2, 2, 2};
    dp_jtree inc, ref;
    uint64_t cells;
    CU_ASSERT_EQUAL_FATAL(dp_jtree_build(&inc, 7, sizes, 6, groups, ks, 1024, &cells), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_jtree_build(&ref, 7, sizes, 6, groups, ks, 1024, &cells), DP_OK);
    CU_ASSERT_EQUAL_FATAL(inc.n_cliques, 6);
    for (uint32_t K = 0; K < inc.n_cliques; K++)
        for (uint64_t x = 0; x < inc.logpot[K].cells; x++)
            inc.logpot[K].v[x] = ref.logpot[K].v[x] = 0.8 * sin(1.0 + 7.0 * K + 3.0 * (double)x);
    CU_ASSERT_EQUAL_FATAL(dp_jtree_calibrate(&inc, sizes), DP_OK);
    double worst = 0;
    /* visit cliques far apart in the tree, and one twice in a row */
    const uint32_t visits[] = {0, 5, 3, 3, 4, 1, 5, 2, 0, 4};
    for (size_t v = 0; v < sizeof visits / sizeof *visits; v++) {
        uint32_t q = visits[v] % inc.n_cliques;
        const dp_factor *b = &inc.belief[q];
        uint32_t k = 1 + (uint32_t)(v % b->k);   /* over its first attribute, or both */
        dp_factor ratio;
        CU_ASSERT_EQUAL_FATAL(dp_factor_init(&ratio, b->attrs, k, sizes), DP_OK);
        dp_factor logr;
        CU_ASSERT_EQUAL_FATAL(dp_factor_init(&logr, b->attrs, k, sizes), DP_OK);
        for (uint64_t c = 0; c < ratio.cells; c++) {
            logr.v[c] = 1.5 * cos(2.0 + 5.0 * (double)v + (double)c);
            ratio.v[c] = exp(logr.v[c]);
        }
        CU_ASSERT_EQUAL_FATAL(dp_jtree_scale(&inc, sizes, q, &ratio), DP_OK);
        CU_ASSERT_EQUAL(inc.focus, (int32_t)q);
        dp_factor_add(&ref.logpot[q], &logr, sizes);
        CU_ASSERT_EQUAL_FATAL(dp_jtree_calibrate(&ref, sizes), DP_OK);
        for (uint64_t x = 0; x < b->cells; x++)
            worst = fmax(worst, fabs(b->v[x] - ref.belief[q].v[x]));
        dp_factor_free(&ratio);
        dp_factor_free(&logr);
    }
    CU_ASSERT(worst < 1e-12);
    if (!(worst < 1e-12))
        printf("\n  largest focus-belief error %g\n", worst);
    CU_ASSERT_EQUAL(dp_jtree_move_focus(&inc, sizes, inc.n_cliques), DP_ERANGE);
    CU_ASSERT_EQUAL_FATAL(dp_jtree_calibrate(&inc, sizes), DP_OK);
    CU_ASSERT_EQUAL(inc.focus, -1);
    dp_jtree_free(&inc);
    dp_jtree_free(&ref);
}

/* A copy onto a model of the same structure (g = h at a step's end) must
 * answer like its source: a pair across cliques on the copy equals the
 * source's, bit for bit, although the copy had answered it before from its
 * old values (the junction tree memoises conditionals; a copy that kept
 * them answered with the old model's — differences of order 0.1 here). */
static void test_copy_forgets_old_conditionals(void)
{
    static const uint32_t chain[3][2] = {{0, 1}, {1, 2}, {2, 3}};
    json_t *j;
    dp_marginal_config c;
    char err[256];
    double meas[6][16], other[6][16];
    dp_mmeasure ms[3], ms2[3];
    small_measurements(&j, &c, meas, chain, 3, ms);
    for (size_t i = 0; i < 3; i++) {   /* a second, different set on the same cliques */
        size_t w = (size_t)(ms[i].w - c.workloads);
        for (uint64_t k = 0; k < ms[i].w->cells; k++)
            other[w][k] = meas[w][(k + 1) % ms[i].w->cells] + (double)(k % 4) * 3;
        ms2[i] = (dp_mmeasure){ms[i].w, other[w], 1, 0};
    }
    dp_mmodel *src, *dst;
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&src, &c, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_pgm.create(&dst, &c, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(src, ms, 3, 400, 10), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.fit(dst, ms2, 3, 400, 10), DP_OK);
    const dp_marginal_workload *ad = &c.workloads[workload_index(&c, 0, 3)];
    double before[16], got[16], want[16];
    CU_ASSERT_EQUAL(dp_mmodel_pgm.marginal(dst, ad, before), DP_OK);   /* dst memoises its conditionals */
    CU_ASSERT_EQUAL(dp_mmodel_pgm.copy(dst, src), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.marginal(dst, ad, got), DP_OK);
    CU_ASSERT_EQUAL(dp_mmodel_pgm.marginal(src, ad, want), DP_OK);
    double worst = 0, moved = 0;
    for (uint64_t k = 0; k < ad->cells; k++) {
        worst = fmax(worst, fabs(got[k] - want[k]));
        moved = fmax(moved, fabs(before[k] - want[k]));
    }
    CU_ASSERT(moved > 1);   /* the two models differ on the pair */
    CU_ASSERT(memcmp(got, want, ad->cells * sizeof *got) == 0);
    if (worst > 0)
        printf("\n  copy answers the pair off by %g (the models differ by %g)\n", worst, moved);
    dp_mmodel_pgm.destroy(src);
    dp_mmodel_pgm.destroy(dst);
    dp_marginal_config_free(&c);
    json_decref(j);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"pgm and mw make the same fit (chain, cycle, star; pairs across cliques)", test_agrees_with_mw},
        {"rows match the clique marginals within rounding, deterministic; save/load", test_rows},
        {"save/load is bit-exact with several factors in one clique, and so is the next fit",
         test_save_load_bit_exact},
        {"Adult scale: 14 attributes, fit and all 91 pair marginals; junction-tree size cap", test_adult_scale},
        {"all pairs of an attribute in one traversal = pair by pair, bit for bit", test_pairs_of_is_pair_by_pair},
        {"a pair across a big clique (a product over 2^26 cells) is answered, with the cliques' margins",
         test_pair_across_a_big_clique},
        {"calibration stays finite when separator values are denormal", test_calibrate_denormal_separators},
        {"calibration is exact when two cliques' potentials drift apart by ±2000 on a shared attribute",
         test_calibrate_drifted_potentials},
        {"a copy onto a model of the same cliques answers like its source (no old conditionals)",
         test_copy_forgets_old_conditionals},
        {"IPF's incremental focus updates give the belief a full calibration gives", test_focus_updates_match_calibration},
        {NULL, NULL},
    };
    return dptest_run("marginal pgm", cases);
}
