/* test_hypercube.c — `hypercube` (seed 004) through synth.h, the paper's
 * rule ("variant": "paper"; "dense", the default since issue 38, has
 * test_hypercube_dense.c, and runs here the generic claims: DELTA = FULL,
 * bad input, shards): config errors
 * name their key; the budget schedule's per-point cost stays within ε over
 * any number of levels (d = 1..6, checked numerically to 10^4 levels) and
 * the ledger reports it; Alg. 4's split keeps the sum and the sign
 * condition on every small input; every release has exactly t points in
 * the box, spread as the consistent counts say; with a large budget the
 * synthetic points follow the data; a level's fold noise has the discrete
 * Laplace variance of its budget (a chi-square-style bound; a wrong scale
 * fails it); d = 1's late cells, replaying the history, equal cells that
 * ran from step 1 (an independent brute-force run of Alg. 3); DELTA applied
 * = FULL; replays byte-identical, restore continues, key matters; bad input
 * rejected with its reason and changing nothing; sharded ingest = bundle. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/counter_sparse_cell.h"
#include "core/rational.h"
#include "core/sample.h"
#include "synth/hypercube/hypercube.h"
#include "synth/common/partition.h"

#include <math.h>

static void expect_refused(const char *text, const char *needle) { tk_expect_refused("hypercube", text, needle); }

static void test_config_errors(void)
{
    expect_refused("{\"epsilon\": 1, \"colour\": 2}", "\"colour\"");
    expect_refused("{\"dims\": 2}", "epsilon");
    expect_refused("{\"epsilon\": 0}", "epsilon");
    expect_refused("{\"epsilon\": 1, \"dims\": 0}", "dims");
    expect_refused("{\"epsilon\": 1, \"dims\": 3, \"box\": [[0, 1], [0, 1]]}", "dims");
    expect_refused("{\"epsilon\": 1, \"box\": [[1, 0]]}", "box[0]");
    expect_refused("{\"epsilon\": 1, \"max_depth\": 29}", "max_depth");
    expect_refused("{\"epsilon\": 1, \"points_per_step\": 0}", "points_per_step");
    expect_refused("{\"epsilon\": 1, \"output\": \"some\"}", "output");
}

static dp_hypercube_config config_of(const char *text)
{
    json_t *j = tk_cfg_text("%s", text);
    dp_hypercube_config c;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_hypercube_config_parse(&c, j, err, sizeof err), DP_OK);
    json_decref(j);
    return c;
}

/* Prop. 4.1 / 5.1: the cost of a point, 2·Σ_j ε_{j,r}, never exceeds ε,
 * at any level; for d >= 2 it is ε(1 − α^{−min(r,D)}) (eq. 4.2), for d = 1
 * the partial sum of 6ε/π²·Σ 1/(j+1)². */
static void test_schedule_within_budget(void)
{
    for (unsigned d = 1; d <= 6; d++) {
        char text[128];
        snprintf(text, sizeof text, "{\"epsilon\": 0.7, \"dims\": %u, \"max_depth\": 28, \"variant\": \"paper\"}", d);
        dp_hypercube_config c = config_of(text);
        double alpha, C1, worst = 0;
        dp_hypercube_schedule_constants(&c, &alpha, &C1);
        for (unsigned r = 0; r <= 10000; r++) {
            double e = dp_hypercube_eps_point(&c, r);
            worst = e > worst ? e : worst;
            CU_ASSERT(e <= c.epsilon * (1 + 1e-12));
            if (d >= 2) {
                unsigned rr = r < 28 ? r : 28;
                CU_ASSERT_DOUBLE_EQUAL(e, c.epsilon * (1 - pow(alpha, -(double)rr)), 1e-12);
            }
        }
        if (d == 1) {   /* 2·Σ_{j=1..28} 3ε/(π²(j+1)²) */
            double s = 0;
            for (unsigned j = 1; j <= 28; j++)
                s += 6 * c.epsilon / (M_PI * M_PI * (j + 1) * (j + 1));
            CU_ASSERT_DOUBLE_EQUAL(worst, s, 1e-12);
            CU_ASSERT(worst < c.epsilon * (1 - 6 / (M_PI * M_PI)) + 1e-12);
        }
        printf("\n    d=%u: largest cost of a point over 10^4 levels %.6f of ε = %.1f", d, worst, c.epsilon);
    }
}

static void test_split_sign_condition(void)
{
    for (int64_t m = 0; m <= 40; m++)
        for (int64_t a = -5; a <= 45; a++)
            for (int64_t b = -5; b <= 45; b++) {
                uint64_t m0, m1;
                dp_partition_split_count((uint64_t)m, a, b, &m0, &m1);
                int64_t ca = a > 0 ? a : 0, cb = b > 0 ? b : 0;
                CU_ASSERT_EQUAL(m0 + m1, (uint64_t)m);
                CU_ASSERT(((int64_t)m0 - ca) * ((int64_t)m1 - cb) >= 0);
                if (ca + cb == 0)
                    CU_ASSERT_EQUAL(m0, (uint64_t)m / 2);
            }
    uint64_t m0, m1;   /* no overflow at the extremes */
    dp_partition_split_count(UINT64_MAX, INT64_MAX, INT64_MAX, &m0, &m1);
    CU_ASSERT_EQUAL(m0, UINT64_MAX / 2);
    CU_ASSERT_EQUAL(m1, UINT64_MAX - UINT64_MAX / 2);
}

/* --- running a stream ------------------------------------------------------------------------- */

static dp_update point_update(uint64_t step, const double *x, size_t d)
{
    dp_update u = {.stream_id = "hc/1", .stream_id_len = 4, .step = step, .kind = DP_UPDATE_REPORT,
                   .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = d}};
    return u;
}

/* The i-th point of a stream on [0,1]^d: a mixture of a blob near
 * (0.2, 0.3, …) and uniform noise. */
static void make_point(uint64_t i, unsigned d, double *x)
{
    for (unsigned k = 0; k < d; k++) {
        uint64_t h = (i * 16 + k + 1) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 32;
        double u = (double)(h >> 11) / 9007199254740992.0;
        x[k] = (i % 4) ? 0.2 + 0.1 * k + 0.1 * u : u;
    }
}

typedef struct run_out {
    uint64_t t;
    int      bad;        /* a record outside the box or with the wrong dimension */
} run_out;

static void check_record(void *ctx, const dp_synth_record *r)
{
    run_out *o = ctx;
    for (size_t k = 0; k < r->value.point_len; k++)
        if (!(r->value.point[k] >= 0 && r->value.point[k] <= 1))
            o->bad = 1;
}

static int close_step(dp_synth *s, tk_sink *k)
{
    dp_release_sink rs = tk_sink_of(k);
    char err[256];
    int rc = dp_synth_close_step(s, &rs, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    close: %s", err);
    return rc;
}

static void feed(dp_synth *s, uint64_t step, uint64_t from, uint64_t n, unsigned d)
{
    double x[8];
    for (uint64_t i = from; i < from + n; i++) {
        make_point(i, d, x);
        dp_update u = point_update(step, x, d);
        dp_reject_reason why;
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
        CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    }
}

static int create(dp_synth **s, const json_t *cfg, uint8_t key_variant, dp_key *key)
{
    dptest_key(key, key_variant);
    dp_synth_env env = {key, "hc/1", 4};
    char err[256];
    int rc = dp_synth_create(s, "hypercube", cfg, &env, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    create: %s", err);
    return rc;
}

/* Every FULL release has exactly t points, inside the box; the manifest's
 * depth follows t_j = ceil(2^j/ε); the ledger's cost rises with the level
 * and stays within ε. */
static void test_exactly_t_points(void)
{
    for (unsigned d = 1; d <= 3; d++) {
        char text[160];
        /* ε = 0.25: the first steps (t < t_1 = 8) release the root only */
        snprintf(text, sizeof text, "{\"epsilon\": 0.25, \"dims\": %u, \"points_per_step\": 37, \"max_depth\": 9, "
                 "\"variant\": \"paper\"}", d);
        json_t *j = tk_cfg_text("%s", text);
        dp_synth *s;
        dp_key key;
        CU_ASSERT_EQUAL_FATAL(create(&s, j, 1, &key), DP_OK);
        tk_sink k;
        tk_sink_init(&k);
        run_out o = {0};
        k.on_record = check_record;
        k.hook_ctx = &o;
        uint64_t t = 0;
        double last_spent = 0;
        for (uint64_t step = 1; step <= 40; step++) {
            uint64_t n = step <= 3 ? step : step % 7 == 3 ? 0 : (step * 13) % 38;   /* 0..37 points, some steps empty */
            feed(s, step, t, n, d);
            t += n;
            uint64_t before = k.records;
            CU_ASSERT_EQUAL_FATAL(close_step(s, &k), DP_OK);
            CU_ASSERT_EQUAL(k.records - before, t);
            CU_ASSERT_EQUAL((uint64_t)tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "t"), t);
            unsigned depth = 0;
            while (depth < 9 && (double)t >= ceil(ldexp(1.0, (int)depth + 1) / 0.25))
                depth++;
            CU_ASSERT_EQUAL((unsigned)tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "depth"), depth);
            CU_ASSERT(k.b_spent_total <= 0.25 && k.b_spent_total >= last_spent);
            if (step <= 3 && d >= 2)
                CU_ASSERT_EQUAL(depth, 0);   /* nothing counted, nothing spent yet */
            last_spent = k.b_spent_total;
            if (n == 0)
                CU_ASSERT_EQUAL(k.b_spent_step, 0);
        }
        CU_ASSERT(!o.bad);
        CU_ASSERT(last_spent > 0);
        printf("\n    d=%u: t=%llu, spent %.4f of 0.25", d, (unsigned long long)t, last_spent);
        tk_sink_free(&k);
        dp_synth_destroy(s);
        json_decref(j);
    }
}

typedef struct quad_ctx { uint64_t in_quadrant, total; } quad_ctx;

static void count_quadrant(void *ctx, const dp_synth_record *r)
{
    quad_ctx *q = ctx;
    q->total++;
    q->in_quadrant += r->value.point[0] < 0.5 && r->value.point[1] < 0.5;
}

/* 2 steps of 16384 points in the lower-left quadrant, ε = 1: step 1's
 * depth-2 counters have no closed segment yet (threshold ~ 18 ln h / ε_{2,14}
 * ≈ 17 000 > 16 384), so the release is uniform; at step 2 the level ends,
 * the fold adds the level's total ± Lap(2/ε_{2,14} ≈ 200) and the release
 * puts nearly everything in the quadrant. */
static void test_follows_the_data(void)
{
    json_t *j = tk_cfg_text("{\"epsilon\": 1, \"points_per_step\": 16384, \"max_depth\": 15, \"variant\": \"paper\"}");
    dp_synth *s;
    dp_key key;
    CU_ASSERT_EQUAL_FATAL(create(&s, j, 2, &key), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    quad_ctx q = {0};
    k.on_record = count_quadrant;
    k.hook_ctx = &q;
    double x[2];
    for (uint64_t step = 1; step <= 2; step++) {
        for (uint64_t i = 0; i < 16384; i++) {
            make_point(i + step * 16384, 2, x);
            x[0] *= 0.49, x[1] *= 0.49;
            dp_update u = point_update(step, x, 2);
            dp_reject_reason why;
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
        }
        q = (quad_ctx){0};
        CU_ASSERT_EQUAL_FATAL(close_step(s, &k), DP_OK);
        printf("\n    step %llu: %.3f of %llu points in the quadrant", (unsigned long long)step,
               (double)q.in_quadrant / (double)q.total, (unsigned long long)q.total);
    }
    CU_ASSERT(q.in_quadrant > 0.95 * (double)q.total);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

/* One cell through one level of a constant stream, then the fold: S̃ − the
 * level's true total is exactly the fold's draw, Lap_Z(2/ε).  Its variance
 * over many keys is compared with the exact discrete Laplace variance
 * (4.5σ bound on the sample variance: sd ratio sqrt(2/(K−1) + κ/K) with
 * excess kurtosis κ = 3 of the Laplace); the wrong scale 1/ε fails it. */
static double fold_variance(double scale_factor, int keys)
{
    dp_isc_level lv;
    char err[128];
    CU_ASSERT_EQUAL_FATAL(dp_isc_level_prepare(&lv, 0.5, 64, err, sizeof err), DP_OK);
    if (scale_factor != 1) {
        dp_rational r;
        CU_ASSERT_EQUAL_FATAL(dp_rational_from_double_up(2.0 / 0.5 * scale_factor, &r), DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_dlap_prepare(&lv.fold, r, err, sizeof err), DP_OK);
    }
    double sumsq = 0;
    for (int key_i = 0; key_i < keys; key_i++) {
        dp_key key;
        dptest_key(&key, 3);
        memcpy(key.bytes, &key_i, sizeof key_i);
        dp_isc_keys kk = {&key, "f", 1, "cell", 0, 0};
        dp_isc_cell c = {0};
        int64_t total = 0;
        for (uint64_t u = 1; u <= 64; u++) {
            dp_drbg g;
            dp_drbg_init(&g, &key, "f", 1, u, "q");
            CU_ASSERT_EQUAL(dp_isc_step(&c, &lv, 3, 3, &g, &kk), DP_OK);
            total += 3;
        }
        dp_drbg g;
        dp_drbg_init(&g, &key, "f", 1, 3, "fold");
        CU_ASSERT_EQUAL(dp_isc_fold(&c, &lv, &g), DP_OK);
        double e = (double)(dp_isc_output(&c) - total);
        sumsq += e * e;
    }
    return sumsq / keys;
}

static void test_fold_noise_variance(void)
{
    enum { KEYS = 4000 };
    dp_rational r;
    CU_ASSERT_EQUAL_FATAL(dp_rational_from_double_up(2.0 / 0.5, &r), DP_OK);
    double want = dp_dlap_variance(r), tol = 4.5 * sqrt(2.0 / (KEYS - 1) + 3.0 / KEYS);
    double got = fold_variance(1, KEYS), wrong = fold_variance(0.5, KEYS);
    printf("\n    fold noise variance %.3f, discrete Laplace(4) %.3f (±%.1f%%); with the scale halved %.3f", got,
           want, 100 * tol, wrong);
    CU_ASSERT(fabs(got / want - 1) <= tol);
    CU_ASSERT(fabs(wrong / want - 1) > tol);
}

/* d = 1: cells created late replay the history.  A brute-force Alg. 1 in
 * which every cell of every depth runs from step 1 (r₀ = 0) with the same
 * keyed draws must give the same counter outputs at every step. */
static void test_d1_replay_equals_from_start(void)
{
    enum { D = 6, STEPS = 60, B = 3 };
    const double eps = 2.0;
    json_t *j = tk_cfg_text("{\"epsilon\": 2, \"dims\": 1, \"points_per_step\": 3, \"max_depth\": 6, \"variant\": \"paper\"}");
    dp_hypercube_config cfg = config_of("{\"epsilon\": 2, \"dims\": 1, \"points_per_step\": 3, \"max_depth\": 6, \"variant\": \"paper\"}");
    dp_key key;
    dptest_key(&key, 5);
    dp_synth_env env = {&key, "hc/1", 4};
    const dp_synth_ops *ops = dp_synth_ops_find("hypercube");
    dp_ingest_half *in;
    dp_release_half *rel;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&in, j, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(ops->release_create(&rel, j, &env, err, sizeof err), DP_OK);
    /* the brute force */
    dp_isc_cell *cells[D + 1];
    for (unsigned d = 1; d <= D; d++)
        cells[d] = calloc((size_t)1 << d, sizeof *cells[d]);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink rs = tk_sink_of(&k);
    dp_stats st;
    dp_stats_init(&st, 1);
    uint64_t t = 0, compared = 0;
    unsigned last_level = 0;
    for (uint64_t step = 1; step <= STEPS; step++) {
        uint64_t n = step < 20 ? B : (step % 2 ? 1 : 2);
        double x[1];
        for (uint64_t i = 0; i < n; i++) {
            make_point(t + i, 1, x);
            dp_update u = point_update(step, x, 1);
            dp_reject_reason why;
            CU_ASSERT_EQUAL(ops->ingest_update(in, &u, &why), DP_OK);
        }
        dp_stats_clear(&st, step);
        CU_ASSERT_EQUAL_FATAL(ops->ingest_close(in, step, &st), DP_OK);
        CU_ASSERT_EQUAL_FATAL(ops->release_step(rel, step, &st, &rs, err, sizeof err), DP_OK);
        t += n;
        unsigned level = 0;
        while ((double)t >= ceil(ldexp(1.0, (int)level + 1) / eps))
            level++;
        for (unsigned d = 1; d <= D; d++) {
            dp_isc_level lv;
            uint64_t lo = last_level == 0 ? 1 : (uint64_t)ceil(ldexp(1.0, (int)last_level) / eps);
            uint64_t hi = (uint64_t)ceil(ldexp(1.0, (int)last_level + 1) / eps);
            char ql[32];
            if (step > 1 && level != last_level) {
                CU_ASSERT_EQUAL_FATAL(dp_isc_level_prepare(&lv, dp_hypercube_eps(&cfg, d, last_level), hi - lo, err,
                                                           sizeof err), DP_OK);
                snprintf(ql, sizeof ql, "hypercube/fold/%u", d);
                dp_drbg g;
                dp_drbg_init(&g, &key, "hc/1", 4, last_level, ql);
                for (uint64_t p = 0; p < ((uint64_t)1 << d); p++)
                    CU_ASSERT_EQUAL(dp_isc_fold(&cells[d][p], &lv, &g), DP_OK);
            }
            lo = level == 0 ? 1 : (uint64_t)ceil(ldexp(1.0, (int)level) / eps);
            hi = (uint64_t)ceil(ldexp(1.0, (int)level + 1) / eps);
            CU_ASSERT_EQUAL_FATAL(dp_isc_level_prepare(&lv, dp_hypercube_eps(&cfg, d, level), hi - lo, err, sizeof err),
                                  DP_OK);
            snprintf(ql, sizeof ql, "hypercube/q/%u", d);
            dp_drbg g;
            dp_drbg_init(&g, &key, "hc/1", 4, step, ql);
            size_t i = 0;
            for (uint64_t p = 0; p < ((uint64_t)1 << d); p++) {
                int64_t xin = 0;
                while (i < st.n_cells && (st.keys[i] >> (D - d)) == p)
                    xin += st.counts[i++];
                dp_isc_keys kk = {&key, "hc/1", 4, "hypercube", d, p};
                CU_ASSERT_EQUAL(dp_isc_step(&cells[d][p], &lv, level, xin, &g, &kk), DP_OK);
            }
            int64_t got[1 << D];
            if (dp_hypercube_counts(rel, d, got, (uint64_t)1 << d) == DP_OK) {
                for (uint64_t p = 0; p < ((uint64_t)1 << d); p++)
                    CU_ASSERT_EQUAL(got[p], dp_isc_output(&cells[d][p]));
                compared++;
            }
        }
        last_level = level;
    }
    printf("\n    t=%llu, final level %u: %llu (step, depth) pairs compared", (unsigned long long)t, last_level,
           (unsigned long long)compared);
    CU_ASSERT(compared > 100);
    CU_ASSERT(last_level > D);   /* the deepest cells were created late */
    for (unsigned d = 1; d <= D; d++)
        free(cells[d]);
    dp_stats_free(&st);
    tk_sink_free(&k);
    ops->ingest_destroy(in);
    ops->release_destroy(rel);
    json_decref(j);
}

/* --- DELTA = FULL ---------------------------------------------------------------------------- */

typedef struct pt { uint64_t id; double x[2]; int gone; } pt;
typedef struct pt_set { size_t n, cap; pt *v; int bad; } pt_set;

static int pt_cmp(const void *a, const void *b)
{
    uint64_t x = ((const pt *)a)->id, y = ((const pt *)b)->id;
    return x < y ? -1 : x > y;
}

static void pt_add(void *ctx, const dp_synth_record *r)
{
    pt_set *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    pt p = {.id = r->synthetic_id, .gone = r->value.point_len == 0};
    for (size_t k = 0; k < r->value.point_len && k < 2; k++)
        p.x[k] = r->value.point[k];
    s->v[s->n++] = p;
}

/* Sort; a removal cancels the earlier record with its id. */
static void pt_settle(pt_set *s)
{
    qsort(s->v, s->n, sizeof *s->v, pt_cmp);   /* not stable: fix the order of equal ids below */
    size_t w = 0;
    for (size_t i = 0; i < s->n;) {
        size_t e = i;
        int adds = 0, dels = 0;
        pt keep = s->v[i];
        while (e < s->n && s->v[e].id == s->v[i].id) {
            if (s->v[e].gone)
                dels++;
            else
                adds++, keep = s->v[e];
            e++;
        }
        if (adds - dels == 1)
            s->v[w++] = keep;
        else if (adds - dels != 0)
            s->bad = 1;
        i = e;
    }
    s->n = w;
}

static void test_delta_output(void)
{
    json_t *jf = tk_cfg_text("{\"epsilon\": 3, \"points_per_step\": 50, \"max_depth\": 8}");
    json_t *jd = tk_cfg_text("{\"epsilon\": 3, \"points_per_step\": 50, \"max_depth\": 8, \"output\": \"delta\"}");
    dp_synth *sf, *sd;
    dp_key key;
    CU_ASSERT_EQUAL_FATAL(create(&sf, jf, 4, &key), DP_OK);
    CU_ASSERT_EQUAL_FATAL(create(&sd, jd, 4, &key), DP_OK);
    pt_set full = {0}, applied = {0};
    tk_sink kf, kd;
    tk_sink_init(&kf);
    tk_sink_init(&kd);
    kf.on_record = pt_add;
    kf.hook_ctx = &full;
    kd.on_record = pt_add;
    kd.hook_ctx = &applied;
    uint64_t t = 0, delta_records = 0;
    for (uint64_t step = 1; step <= 30; step++) {
        full.n = 0;
        uint64_t n = step % 5 == 0 ? 0 : 50, before = kd.records;
        feed(sf, step, t, n, 2);
        feed(sd, step, t, n, 2);
        t += n;
        CU_ASSERT_EQUAL_FATAL(close_step(sf, &kf), DP_OK);
        CU_ASSERT_EQUAL_FATAL(close_step(sd, &kd), DP_OK);
        CU_ASSERT_EQUAL(kd.m_mode, DP_RELEASE_DELTA);
        CU_ASSERT_EQUAL(kd.m_records, kd.records - before);
        delta_records += kd.records - before;
        pt_settle(&full);
        pt_settle(&applied);
        CU_ASSERT_FATAL(!full.bad && !applied.bad);
        CU_ASSERT_EQUAL_FATAL(full.n, t);
        CU_ASSERT_EQUAL_FATAL(applied.n, full.n);
        size_t same = 0;
        for (size_t i = 0; i < full.n; i++)
            same += full.v[i].id == applied.v[i].id && full.v[i].x[0] == applied.v[i].x[0] &&
                    full.v[i].x[1] == applied.v[i].x[1];
        CU_ASSERT_EQUAL(same, full.n);
        if (step % 5 == 0)
            CU_ASSERT_EQUAL(kd.records - before, 0);   /* an empty step changes nothing */
    }
    printf("\n    30 steps, t=%llu: %llu delta records for %llu full records", (unsigned long long)t,
           (unsigned long long)delta_records, (unsigned long long)kf.records);
    CU_ASSERT(delta_records * 2 < kf.records);
    free(full.v);
    free(applied.v);
    tk_sink_free(&kf);
    tk_sink_free(&kd);
    dp_synth_destroy(sf);
    dp_synth_destroy(sd);
    json_decref(jf);
    json_decref(jd);
}

/* --- determinism, bad input, shards ----------------------------------------------------------- */

typedef struct det_ctx { const char *cfg; unsigned d; } det_ctx;

static void det_run(void *ctx, uint8_t key_variant, int restore_at, dp_buf *out)
{
    const det_ctx *c = ctx;
    json_t *j = tk_cfg_text("%s", c->cfg);
    dp_synth *s;
    dp_key key;
    CU_ASSERT_EQUAL_FATAL(create(&s, j, key_variant, &key), DP_OK);
    dp_synth_env env = {&key, "hc/1", 4};
    tk_sink k;
    tk_sink_init(&k);
    uint64_t t = 0;
    for (int step = 1; step <= 24; step++) {
        uint64_t n = (uint64_t)(step * 7 % 11);
        feed(s, (uint64_t)step, t, n, c->d);
        t += n;
        if (step == restore_at)   /* mid-step: the open step's points are in the snapshot too */
            tk_snapshot_restore(&s, "hypercube", j, &env, NULL);
        CU_ASSERT_EQUAL_FATAL(close_step(s, &k), DP_OK);
    }
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_determinism_and_restore(void)
{
    det_ctx c2 = {"{\"epsilon\": 4, \"points_per_step\": 10, \"max_depth\": 7, \"variant\": \"paper\"}", 2};
    det_ctx c1 = {"{\"epsilon\": 4, \"dims\": 1, \"points_per_step\": 10, \"max_depth\": 7, \"output\": \"delta\", "
                  "\"variant\": \"paper\"}", 1};
    det_ctx c3 = {"{\"epsilon\": 4, \"dims\": 3, \"points_per_step\": 10, \"max_depth\": 5, \"variant\": \"paper\"}", 3};
    for (int restore_at = 3; restore_at <= 19; restore_at += 8) {
        tk_check_replays(det_run, &c2, 1, 2, restore_at, 1000);
        tk_check_replays(det_run, &c1, 1, 2, restore_at, 1000);
        tk_check_replays(det_run, &c3, 1, 2, restore_at, 1000);
    }
}

static void test_bad_input(void)
{
    json_t *j = tk_cfg_text("{\"epsilon\": 1, \"box\": [[-1, 1], [0, 10]], \"points_per_step\": 2}");
    dp_synth *s;
    dp_key key;
    CU_ASSERT_EQUAL_FATAL(create(&s, j, 6, &key), DP_OK);
    dp_buf before, after;
    dp_buf_init(&before);
    dp_buf_init(&after);
    CU_ASSERT_EQUAL(dp_synth_snapshot(s, &before), DP_OK);
    const double outside[2] = {1.5, 3}, nan_pt[2] = {NAN, 1}, inf_pt[2] = {0, INFINITY}, ok[2] = {-0.5, 9.9};
    struct { dp_update u; dp_reject_reason want; } cases[] = {
        {point_update(1, outside, 2), DP_REJECT_OUT_OF_DOMAIN},
        {point_update(1, ok, 1), DP_REJECT_OUT_OF_DOMAIN},
        {point_update(1, nan_pt, 2), DP_REJECT_MALFORMED},
        {point_update(1, inf_pt, 2), DP_REJECT_MALFORMED},
        {point_update(2, ok, 2), DP_REJECT_FUTURE_STEP},
    };
    cases[1].u.payload.point_len = 1;
    dp_update del = point_update(1, ok, 2), cat = point_update(1, ok, 2);
    del.kind = DP_UPDATE_DELETE;
    cat.payload = (dp_payload){.kind = DP_PAYLOAD_CATEGORY, .category = 1};
    dp_reject_reason why;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &cases[i].u, &why), DP_OK);
        CU_ASSERT_EQUAL(why, cases[i].want);
    }
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &del, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &cat, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    CU_ASSERT_EQUAL(dp_synth_snapshot(s, &after), DP_OK);
    CU_ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
    /* two points fill the step; the third is rejected */
    dp_update u = point_update(1, ok, 2);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
        CU_ASSERT_EQUAL(why, i < 2 ? DP_REJECT_NONE : DP_REJECT_DUPLICATE_REPORT);
    }
    tk_sink k;
    tk_sink_init(&k);
    run_out o = {0};
    CU_ASSERT_EQUAL_FATAL(close_step(s, &k), DP_OK);
    CU_ASSERT_EQUAL(k.records, 2);
    (void)o;
    u.step = 1;
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_LATE);
    tk_sink_free(&k);
    dp_buf_free(&before);
    dp_buf_free(&after);
    dp_synth_destroy(s);
    json_decref(j);
}

typedef struct shard_ctx { char id[32]; double x[2]; } shard_ctx;

static dp_update shard_update(void *ctx, int t, int i)
{
    shard_ctx *c = ctx;
    snprintf(c->id, sizeof c->id, "sensor-%d", i % 13);
    make_point((uint64_t)(t * 100 + i), 2, c->x);
    dp_update u = point_update((uint64_t)t, c->x, 2);
    u.entity_id = c->id;
    u.entity_id_len = strlen(c->id);
    return u;
}

static void test_shards_merge(void)
{
    json_t *j = tk_cfg_text("{\"epsilon\": 2, \"points_per_step\": 60, \"max_depth\": 8}");
    dp_key key;
    dptest_key(&key, 8);
    dp_synth_env env = {&key, "hc/1", 4};
    shard_ctx c;
    CU_ASSERT(tk_check_shards("hypercube", j, &env, 6, 60, shard_update, &c) == 60 * (1 + 2 + 3 + 4 + 5 + 6));
    json_decref(j);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"config errors name their key", test_config_errors},
        {"budget schedule: a point costs <= ε at every level (eq. 4.2, 5.1)", test_schedule_within_budget},
        {"Alg. 4's split keeps the sum and the sign condition", test_split_sign_condition},
        {"every release has exactly t points in the box; depth and ledger by level", test_exactly_t_points},
        {"with a large budget the synthetic points follow the data", test_follows_the_data},
        {"a level's fold noise has the discrete Laplace variance of its budget", test_fold_noise_variance},
        {"d = 1: cells created late replay the history = cells run from step 1", test_d1_replay_equals_from_start},
        {"output delta: removals + additions applied = the FULL release", test_delta_output},
        {"replay byte-identical, restore continues byte-identically, key matters", test_determinism_and_restore},
        {"bad points rejected with their reason, changing nothing; a full step rejects", test_bad_input},
        {"entity-sharded ingest merged = the bundle, byte for byte", test_shards_merge},
        {NULL, NULL},
    };
    return dptest_run("hypercube", cases);
}
