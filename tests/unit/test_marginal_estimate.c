/* test_marginal_estimate.c — `marginal`'s estimate "all_measurements"
 * (issue 39 item 1; marginal_estimate.c, docs/privacy.md §5):
 *
 *   - the weight is the derived one: a measurement of sd σ on |W| cells,
 *     τ steps old, with B rows a step, has the per-cell mean squared error
 *     bound σ² + (age·B)²/|W|, and the fit's fraction is π/max π — checked
 *     against hand-computed values, with B configured and with B = N̂_t/t;
 *   - the weights are a function of public quantities only: two
 *     neighbouring streams (one row more at step 2), the same key, whose
 *     selections coincide, get bit-identical weights at every step, while
 *     their kept measurements differ (so the comparison has teeth);
 *   - a restore mid-stream continues byte-identically (the kept
 *     measurements are in the snapshot);
 *   - the configuration refuses it where it means nothing. */
#include "dptest.h"
#include "marginal_testkit.h"

#include "synth/marginal/marginal_release.h"

#include <math.h>

static json_t *cfg_of(int T, const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\",\"1\",\"2\"]},"
             " {\"name\": \"b\", \"categories\": [\"x\",\"y\"]},"
             " {\"name\": \"c\", \"categories\": [\"p\",\"q\",\"r\",\"s\"]}],"
             " \"horizon\": %d, \"epsilon\": 0.2, \"selections_per_step\": 1, \"fit\": \"pgm\"%s%s}",
             T, extra && strstr(extra, "\"method\"") ? "" : ", \"method\": \"select_measure_fit\"", extra ? extra : "");
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static void test_weight_is_the_derived_variance_bound(void)
{
    /* σ = 3, |W| = 100, age 2, B = 50: 9 + (2·50)²/100 = 109 */
    CU_ASSERT_DOUBLE_EQUAL(dp_marginal_est_variance(3, 100, 2, 50), 109.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(dp_marginal_est_variance(3, 100, 0, 50), 9.0, 1e-12);
    for (int configured = 0; configured < 2; configured++) {
        json_t *j = cfg_of(10, configured ? ", \"estimate\": \"all_measurements\", \"drift_rows_per_step\": 10"
                                          : ", \"estimate\": \"all_measurements\"");
        dp_marginal_config c;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL_FATAL(c.n_workloads, 3);   /* (a,b) 6 cells, (a,c) 12, (b,c) 8 */
        uint64_t at[3] = {7, 5, 0};
        double sd[3] = {2, 3, 0}, damp[3];
        /* B = 10 configured, or N̂_t/t = 70/7 when not (the total is ignored when configured: pass another) */
        dp_marginal_est_damp(&c, 7, configured ? 12345 : 70, at, sd, damp);
        double v0 = 4, v1 = 9 + (2.0 * 10) * (2.0 * 10) / 12;
        CU_ASSERT_DOUBLE_EQUAL(damp[0], 1.0, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(damp[1], v0 / v1, 1e-12);
        CU_ASSERT_EQUAL(damp[2], 0.0);
        dp_marginal_config_free(&c);
        json_decref(j);
    }
}

/* A skewed, correlated row. */
static void make_row(uint64_t i, int32_t *r)
{
    uint64_t h = (i + 3) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    r[0] = (int32_t)(h % 5 < 3 ? 0 : h % 5 < 4 ? 1 : 2);
    r[1] = (int32_t)((h >> 8) % 4 < (uint64_t)(1 + r[0]) ? 1 : 0);
    r[2] = (int32_t)(((h >> 16) % 4 == 0) ? (h >> 20) % 4 : (uint64_t)r[0]);
}

typedef mk_run run_state;

static void run_open(run_state *s, const json_t *j, const dp_key *key)
{
    mk_open(s, j, key, 3, make_row);
}

#define run_step mk_step
#define run_close mk_close

/* Two runs of the same configuration under the same key (variant v). */
static void open_pair(run_state *a, run_state *b, const json_t *j, dp_key *key, uint8_t v)
{
    dptest_key(key, v);
    run_open(a, j, key);
    run_open(b, j, key);
}

static void test_weights_depend_on_public_quantities_only(void)
{
    const int T = 12, rows = 10;
    json_t *j = cfg_of(T, ", \"estimate\": \"all_measurements\", \"drift_rows_per_step\": 10");
    dp_key key;
    run_state a, b;
    open_pair(&a, &b, j, &key, 5);
    int same_steps = 0, values_differ = 0, partial = 0;
    for (int t = 1; t <= T; t++) {
        run_step(&a, (uint64_t)t, rows, 0);
        run_step(&b, (uint64_t)t, rows, t == 2);   /* b: one row event more, at step 2 */
        const marginal_release *ma = (const marginal_release *)a.rel, *mb = (const marginal_release *)b.rel;
        size_t nw = ma->cfg.n_workloads;
        if (memcmp(ma->est_step, mb->est_step, nw * sizeof *ma->est_step) != 0 ||
            memcmp(ma->est_sd, mb->est_sd, nw * sizeof *ma->est_sd) != 0)
            continue;   /* the selections differ: the weights may */
        same_steps++;
        CU_ASSERT_EQUAL(memcmp(ma->est_damp, mb->est_damp, nw * sizeof *ma->est_damp), 0);
        values_differ |= memcmp(ma->est_values, mb->est_values, ma->cfg.total_cells * sizeof(double)) != 0;
        for (size_t i = 0; i < nw; i++)
            partial |= ma->est_damp[i] >= 0.01 && ma->est_damp[i] < 1;   /* in the fit (EST_MIN_DAMP), damped */
    }
    CU_ASSERT(same_steps >= T / 2);   /* the comparison ran (a 1-row change rarely moves a selection) */
    CU_ASSERT(values_differ);         /* and the inputs it compared differ in what they measured */
    CU_ASSERT(partial);               /* with an older measurement in the fit, damped */
    run_close(&a);
    run_close(&b);
    json_decref(j);
}

static void snapshot(const run_state *s, dp_buf *in, dp_buf *rel)
{
    dp_buf_init(in);
    dp_buf_init(rel);
    CU_ASSERT_EQUAL_FATAL(s->ops->ingest_save(s->in, in), DP_OK);
    CU_ASSERT_EQUAL_FATAL(s->ops->release_save(s->rel, rel), DP_OK);
}

static void test_restore_continues_byte_identically(void)
{
    const int T = 8, rows = 10, cut = 4;
    json_t *j = cfg_of(T, ", \"estimate\": \"all_measurements\"");
    dp_key key;
    run_state a, b;
    open_pair(&a, &b, j, &key, 9);
    size_t a_at_cut = 0;
    for (int t = 1; t <= T; t++) {
        run_step(&a, (uint64_t)t, rows, 0);
        if (t <= cut)
            run_step(&b, (uint64_t)t, rows, 0);
        if (t == cut)
            a_at_cut = a.sink.out.len;
    }
    dp_buf bi, br;
    snapshot(&b, &bi, &br);
    uint64_t next = b.next;
    run_close(&b);
    run_open(&b, j, &key);
    dp_reader ri, rr;
    dp_reader_init(&ri, bi.data, bi.len);
    dp_reader_init(&rr, br.data, br.len);
    CU_ASSERT_EQUAL_FATAL(b.ops->ingest_load(b.in, &ri), DP_OK);
    CU_ASSERT_EQUAL_FATAL(b.ops->release_load(b.rel, &rr), DP_OK);
    b.next = next;
    for (int t = cut + 1; t <= T; t++)
        run_step(&b, (uint64_t)t, rows, 0);
    dp_buf sa, sb, xa, xb;
    snapshot(&a, &xa, &sa);
    snapshot(&b, &xb, &sb);
    /* the releases after the cut (drawn from the refitted model, not in the snapshot) and the final state */
    CU_ASSERT_EQUAL(a.sink.out.len - a_at_cut, b.sink.out.len);
    CU_ASSERT(a.sink.out.len - a_at_cut == b.sink.out.len &&
              memcmp(a.sink.out.data + a_at_cut, b.sink.out.data, b.sink.out.len) == 0);
    CU_ASSERT_EQUAL(sa.len, sb.len);
    CU_ASSERT(sa.len == sb.len && memcmp(sa.data, sb.data, sa.len) == 0);
    dp_buf *bufs[] = {&bi, &br, &sa, &sb, &xa, &xb};
    for (size_t i = 0; i < 6; i++)
        dp_buf_free(bufs[i]);
    run_close(&a);
    run_close(&b);
    json_decref(j);
}

static void test_config_refusals(void)
{
    const char *bad[] = {", \"estimate\": \"all_measurements\", \"method\": \"mwem\"",
                         ", \"estimate\": \"all_measurements\", \"method\": \"independent\"",
                         ", \"drift_rows_per_step\": 5",
                         ", \"estimate\": \"all_measurements\", \"drift_rows_per_step\": 0",
                         ", \"estimate\": \"every\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = cfg_of(4, bad[i]);
        dp_marginal_config c;
        char err[256] = "";
        CU_ASSERT_NOT_EQUAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
        CU_ASSERT(strstr(err, "estimate") || strstr(err, "drift_rows_per_step"));
        json_decref(j);
    }
    json_t *j = cfg_of(4, NULL);
    dp_marginal_config c;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(c.estimate, DP_MARGINAL_EST_SELECTED);   /* the default is Alg. 3 */
    dp_marginal_config_free(&c);
    json_decref(j);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"all_measurements: the weight is the derived bound sigma^2 + (age*B)^2/|W|, damped by pi/max pi",
         test_weight_is_the_derived_variance_bound},
        {"all_measurements: neighbouring streams with the same selections get bit-identical weights",
         test_weights_depend_on_public_quantities_only},
        {"all_measurements: a restore mid-stream continues byte-identically", test_restore_continues_byte_identically},
        {"all_measurements: refused with mwem/independent; drift_rows_per_step only with it; default selected",
         test_config_refusals},
        {NULL, NULL},
    };
    return dptest_run("marginal_estimate", cases);
}
