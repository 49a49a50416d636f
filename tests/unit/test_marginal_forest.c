/* test_marginal_forest.c — `marginal`'s method "forest" (issue 39;
 * marginal_forest*.c, docs/privacy.md §5), white-box through the two
 * halves' ops (as test_marginal_estimate.c) on a 4-attribute table where
 * b follows a and e follows c (7 rows in 8) and the two groups are
 * independent:
 *
 *   - the rows are the model (forest_edges 8, 2 and 0): every root column holds round(n·node) values
 *     and, for every edge and every parent value v held by n_v rows, the
 *     child's counts are n_v·P(child | v) rounded up or down — the edge's
 *     released 2-way table is exactly the rounded conditionals; a pair in
 *     two trees meets hypergeometrically (within 6σ: at most ~2·10³ cell
 *     checks, and 2·10³·2Φ(−6) < 10⁻⁵ bounds a false alarm);
 *   - every step's ledger is exact: m_e counters of 2^20 units and the
 *     selection's round(s/(1−s)·m_e·2^20), spent = the budget bit for bit,
 *     under pure ε and ρ-zCDP; with forest_edges 0, d counters and no
 *     selection (and the rows then are the d roots' product); an epoch
 *     books the share only if its projected rows can find a strong edge
 *     (dp_forest_feeds, the rule restated here from N̂ and the config);
 *   - a small input (20 rows a step, ε = 1: every epoch under the EM's
 *     resolution) books no selection share at any step and releases the
 *     rows of forest_edges 0 — `independent`'s model, d 1-way counters at
 *     ε/d — bit for bit, step for step (the budget event names the
 *     configured mechanism; booking the share anyway, as before, fails it);
 *   - the candidate cap (dp_forest_cell_cap) is public: each selection's
 *     candidates are exactly the pairs under the cap computed from N̂ of
 *     step s_e − 1, the step and the config (the rule, restated), and a
 *     different table (60 rows a step against 40, one more at step 3) whose
 *     N̂ is set to the first's gets the same candidates; the cap binds (1 and
 *     5 of 6 pairs at steps 4 and 8). Computing the cap from the exact D⁺
 *     total instead fails it (checked);
 *   - a cap that excludes every pair (12 rows a step, ε = 0.5, forest_edges
 *     1, share 0.5: the EM's resolution alone would book the share at s_e =
 *     4) books nothing and releases forest_edges 0's rows bit for bit;
 *     counting the uncapped candidates in dp_forest_feeds fails it (checked);
 *   - the selection reads only the previous epoch's rows: one row more at
 *     step τ = 4 (epoch 2) leaves the releases of steps 1–3, the edges of
 *     steps 1–7 (none at steps 2–3: epoch 0 feeds no selection) and the
 *     selection utilities computed at step 4 bit for bit unchanged, and changes the utilities at step 8 (which read
 *     epoch 2); at large ε the dependent pairs (a, b) and (c, e) are chosen;
 *   - a snapshot mid-epoch (after step 5) or at an epoch's end (after
 *     step 7) restores into the bytes of the uninterrupted run;
 *   - the configuration: defaults, bounds, refusals. */
#include "dptest.h"
#include "marginal_testkit.h"

#include "synth/marginal/marginal_forest.h"

#include <math.h>

#define D 4
static const uint32_t SIZES[D] = {3, 2, 4, 2};

static json_t *cfg_of(int T, const char *budget, double value, const char *extra)
{
    return tk_cfg_text("{\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\",\"1\",\"2\"]},"
                       " {\"name\": \"b\", \"categories\": [\"x\",\"y\"]},"
                       " {\"name\": \"c\", \"categories\": [\"p\",\"q\",\"r\",\"s\"]},"
                       " {\"name\": \"e\", \"categories\": [\"u\",\"v\"]}],"
                       " \"horizon\": %d, \"%s\": %g, \"method\": \"forest\"%s}",
                       T, budget, value, extra ? extra : "");
}

static void make_row(uint64_t i, int32_t *r)
{
    uint64_t h = (i + 11) * 0xd1342543de82ef95ull;
    h ^= h >> 29;
    h *= 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
    r[0] = (int32_t)(h % 3);
    r[1] = (h >> 8) % 8 == 0 ? 1 - (r[0] == 0) : (r[0] == 0);
    r[2] = (int32_t)((h >> 16) % 4);
    r[3] = (h >> 24) % 8 == 0 ? 1 - (r[2] < 2) : (r[2] < 2);
}

typedef struct run_state {
    mk_run   r;
    int32_t *rows;   /* the last release's rows */
    uint64_t n, cap;
    dp_key   key;    /* the release keeps a pointer to its key: it lives as long as the run */
} run_state;

static void on_row(void *ctx, const dp_synth_record *r)
{
    run_state *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->rows = realloc(s->rows, s->cap * D * sizeof *s->rows);
    }
    memcpy(s->rows + s->n++ * D, r->value.row, D * sizeof *s->rows);
}

static void run_open(run_state *s, const json_t *j, const dp_key *key)
{
    memset(s, 0, sizeof *s);
    s->key = *key;
    mk_open(&s->r, j, &s->key, D, make_row);
    s->r.sink.on_record = on_row;
    s->r.sink.hook_ctx = s;
}

static void run_step(run_state *s, uint64_t t, int rows, int extra)
{
    s->n = 0;
    mk_step(&s->r, t, rows, extra);
}

static void run_close(run_state *s)
{
    mk_close(&s->r);
    free(s->rows);
}

/* Two runs side by side under one key. */
static void open_pair(run_state *a, run_state *b, const json_t *ja, const json_t *jb, uint8_t key_variant)
{
    dp_key key;
    dptest_key(&key, key_variant);
    run_open(a, ja, &key);
    run_open(b, jb, &key);
}

static const dp_forest *forest_of(const run_state *s)
{
    return ((const marginal_release *)s->r.rel)->forest;
}

/* b runs forest_edges 0: a released the same rows as b, bit for bit, with no edge and the same N̂. */
static int same_as_no_edges(const run_state *a, const run_state *b)
{
    return a->n == b->n && memcmp(a->rows, b->rows, a->n * D * sizeof *a->rows) == 0 && forest_of(a)->n_edges == 0 &&
           forest_of(a)->N == forest_of(b)->N;
}

static void close_pair(run_state *a, run_state *b, json_t *ja, json_t *jb)
{
    run_close(a);
    run_close(b);
    json_decref(ja);
    if (jb != ja)
        json_decref(jb);
}

static int in_rounding(uint64_t got, double want)
{
    return (double)got >= floor(want - 1e-9) && (double)got <= ceil(want + 1e-9);
}

/* The release against the model it was drawn from; returns the largest cross-tree z, counts the bad cells. */
static double check_rows(const run_state *s, int *bad, int *edges_seen)
{
    const marginal_release *m = (const marginal_release *)s->r.rel;
    const dp_forest *f = m->forest;
    uint64_t n = s->n;
    CU_ASSERT_EQUAL(n, m->last_rows);
    uint64_t one[D][4] = {{0}};
    for (uint64_t r = 0; r < n; r++)
        for (int a = 0; a < D; a++)
            one[a][s->rows[r * D + a]]++;
    for (int a = 0; a < D; a++) {
        if (f->parent[a] < 0) {   /* a root: round(n·node) */
            const double *w = f->node + m->one_off[a];
            double sw = 0;
            for (uint32_t v = 0; v < SIZES[a]; v++)
                sw += w[v];
            for (uint32_t v = 0; v < SIZES[a]; v++)
                *bad += !in_rounding(one[a][v], sw > 0 ? (double)n * w[v] / sw : (double)n / SIZES[a]);
            continue;
        }
        int p = f->parent[a];
        (*edges_seen)++;
        for (uint32_t v = 0; v < SIZES[p]; v++) {   /* the edge: round(n_v·P(a | v)) */
            uint64_t nv = 0, cnt[4] = {0};
            for (uint64_t r = 0; r < n; r++)
                if (s->rows[r * D + p] == (int32_t)v) {
                    nv++;
                    cnt[s->rows[r * D + a]]++;
                }
            const double *cd = f->cond + f->cond_off[a] + (uint64_t)v * SIZES[a];
            double sw = 0;
            for (uint32_t x = 0; x < SIZES[a]; x++)
                sw += cd[x];
            for (uint32_t x = 0; x < SIZES[a]; x++)
                if (nv && !in_rounding(cnt[x], sw > 0 ? (double)nv * cd[x] / sw : (double)nv / SIZES[a])) {
                    printf("\n    edge %d -> %d, parent value %u: %llu of %llu rows, n_v·P = %.3f", p, a, v,
                           (unsigned long long)cnt[x], (unsigned long long)nv, (double)nv * cd[x] / sw);
                    (*bad)++;
                }
        }
    }
    double worst = 0;
    for (int a = 0; a < D; a++)
        for (int b = a + 1; b < D; b++) {
            int ra = a, rb = b;
            while (f->parent[ra] >= 0)
                ra = f->parent[ra];
            while (f->parent[rb] >= 0)
                rb = f->parent[rb];
            if (ra == rb)
                continue;
            for (uint32_t x = 0; x < SIZES[a]; x++)
                for (uint32_t y = 0; y < SIZES[b]; y++) {
                    uint64_t k = 0;
                    for (uint64_t r = 0; r < n; r++)
                        k += s->rows[r * D + a] == (int32_t)x && s->rows[r * D + b] == (int32_t)y;
                    double ni = (double)one[a][x], nj = (double)one[b][y], nn = (double)n;
                    double mean = ni * nj / nn, var = nj * (ni / nn) * (1 - ni / nn) * (nn - nj) / (nn - 1);
                    if (fabs((double)k - mean) > 1e-9) {
                        double z = fabs((double)k - mean) / sqrt(var > 0 ? var : 1e-12);
                        worst = z > worst ? z : worst;
                    }
                }
        }
    return worst;
}

static void test_rows_are_the_rounded_conditionals(void)
{
    const int T = 12;
    static const char *const K[] = {"8", "2", "0"};   /* the default (up to 3 edges), two trees, no edge */
    for (int v = 0; v < 3; v++) {
        char extra[48];
        snprintf(extra, sizeof extra, ", \"forest_edges\": %s", K[v]);
        json_t *j = cfg_of(T, "epsilon", 20, extra);
        dp_key key;
        dptest_key(&key, 4);
        run_state s;
        run_open(&s, j, &key);
        int bad = 0, edges = 0;
        double worst = 0;
        for (int t = 1; t <= T; t++) {
            run_step(&s, (uint64_t)t, 300, 0);
            double z = check_rows(&s, &bad, &edges);
            worst = z > worst ? z : worst;
        }
        printf("\n    forest_edges %s: %d edge checks, largest cross-tree |cell - hypergeometric mean| / sd %.2f",
               K[v], edges, worst);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(v == 2 ? edges == 0 : edges >= T - 1);   /* edges from step 2 on: the check had something to check */
        CU_ASSERT(worst < 6);
        CU_ASSERT(v == 0 || worst > 0);   /* two trees, or d: cross-tree pairs were checked */
        run_close(&s);
        json_decref(j);
    }
}

static void test_ledger_exact_every_step(void)
{
    for (int v = 0; v < 3; v++) {   /* pure, zCDP, and pure without edges (no selection share) */
        const int T = 11, zcdp = v == 1, none = v == 2;
        const double budget = zcdp ? 0.3 : 0.6;
        json_t *j = cfg_of(T, zcdp ? "rho" : "epsilon", budget,
                           none ? ", \"forest_edges\": 0" : ", \"forest_select_share\": 0.2");
        dp_key key;
        dptest_key(&key, 2);
        run_state s;
        run_open(&s, j, &key);
        double n_prev = 0;   /* N̂ of the step before */
        int feeds = 0, booked = 0, unbooked = 0;
        for (int t = 1; t <= T; t++) {
            run_step(&s, (uint64_t)t, 150, 0);
            const dp_forest *f = forest_of(&s);
            const dp_ledger *l = s.r.ops->release_ledger(s.r.rel);
            uint64_t sel = none ? 0 : (uint64_t)llround(0.2 / 0.8 * f->n_kept * (double)(1u << 20));
            if ((t & (t - 1)) == 0) {   /* an epoch starts: does it book the share? (the rule, restated) */
                double eps = zcdp ? sqrt(8 * budget * sel / ((f->n_kept << 20) + sel) / 8)
                                  : budget * sel / ((f->n_kept << 20) + sel) / 8;
                feeds = t > 1 && 3 * t <= T + 1 && 2 * n_prev / (t - 1) * t >= 8 / eps * log(6.0);
            }
            sel = feeds ? sel : 0;
            booked += sel > 0;
            unbooked += !none && sel == 0;
            n_prev = f->N;
            CU_ASSERT_EQUAL(l->n_entries, f->n_kept + (sel > 0));
            CU_ASSERT(!none || f->n_kept == D);
            CU_ASSERT_EQUAL(l->units_total, ((uint64_t)f->n_kept << 20) + sel);
            CU_ASSERT_EQUAL(l->units_spent, l->units_total);
            CU_ASSERT(l->spent == budget);   /* exact: bit for bit */
            /* the counters' noise is at what the ledger books for each: (1 − s')·budget/m_e */
            for (uint64_t k = 0; k < f->kept_cells; k++)
                CU_ASSERT(dp_counter_config_of(f->cnt[k])->budget.value == l->entries[0].amount);
            for (size_t i = 0; i < f->n_kept; i++) {
                CU_ASSERT_EQUAL(l->entries[i].units, 1u << 20);
                CU_ASSERT_STRING_EQUAL(l->entries[i].mechanism, zcdp ? "marginal/counters/discrete_gaussian"
                                                                     : "marginal/counters/discrete_laplace");
            }
            if (sel) {
                CU_ASSERT_EQUAL(l->entries[l->n_entries - 1].units, sel);
                CU_ASSERT_STRING_EQUAL(l->entries[l->n_entries - 1].mechanism, "marginal/forest/select/exponential");
            }
            CU_ASSERT(s.r.sink.b_spent_step == budget);
            CU_ASSERT_STRING_EQUAL(s.r.sink.b_mechanism, none ? "marginal/counters/discrete_laplace"
                                                       : zcdp ? "marginal/counters+exponential/discrete_gaussian"
                                                              : "marginal/counters+exponential/discrete_laplace");
            CU_ASSERT(s.r.sink.b_spent_total == budget);
            CU_ASSERT_EQUAL(s.r.sink.b_status, t == T ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE);
            /* epoch 0 keeps the d 1-ways; later epochs fewer (edges cover >= 2 attributes each) */
            CU_ASSERT(t > 1 || f->n_kept == D);
        }
        /* pure: epoch 1 (300 rows, δ*·300 = 600) is under the EM's resolution (955 rows), epoch 2 (1 200) over
         * it, epoch 3 feeds no selection (3·8 > T + 1: the horizon rule); zCDP (58 rows) books epochs 1 and 2 */
        CU_ASSERT_EQUAL(booked, none ? 0 : zcdp ? 6 : 4);
        CU_ASSERT_EQUAL(unbooked, none ? 0 : zcdp ? 5 : 7);
        run_close(&s);
        json_decref(j);
    }
}

static void test_selection_reads_only_the_previous_epoch(void)
{
    const int T = 11, tau = 4;   /* 3·4 <= T + 1: epoch 2 feeds the selection at 8 (the horizon rule) */
    json_t *j = cfg_of(T, "epsilon", 200, NULL);
    run_state a, b;
    open_pair(&a, &b, j, j, 6);
    size_t len_before_tau = 0, nc = 0;
    int util_same_2 = 0, util_same_4 = 0, util_differ_8 = 0, edges_same = 1, ab = 0, ce = 0;
    for (int t = 1; t <= T; t++) {
        run_step(&a, (uint64_t)t, 200, 0);
        run_step(&b, (uint64_t)t, 200, t == tau);
        const marginal_release *ma = (const marginal_release *)a.r.rel, *mb = (const marginal_release *)b.r.rel;
        const dp_forest *fa = ma->forest, *fb = mb->forest;
        if (t < tau) {
            len_before_tau = a.r.sink.out.len;
            CU_ASSERT(a.r.sink.out.len == b.r.sink.out.len && memcmp(a.r.sink.out.data, b.r.sink.out.data, a.r.sink.out.len) == 0);
        }
        if (t < 8)
            edges_same &= fa->n_edges == fb->n_edges && memcmp(fa->edge_w, fb->edge_w, fa->n_edges * 4) == 0;
        for (size_t i = 0; i < ma->cfg.n_workloads; i++)
            nc += t == 1 && fa->cand[i];
        int same = memcmp(ma->util, mb->util, nc * sizeof *ma->util) == 0;   /* the selection's utilities */
        util_same_2 |= t == 2 && fa->n_edges == 0 && fb->n_edges == 0;   /* epoch 0 feeds no selection */
        util_same_4 |= t == 4 && same;
        util_differ_8 |= t == 8 && !same;
        for (uint32_t i = 0; t == T && i < fa->n_edges; i++) {
            const dp_marginal_workload *w = &ma->cfg.workloads[fa->edge_w[i]];
            ab |= w->attrs[0] == 0 && w->attrs[1] == 1;
            ce |= w->attrs[0] == 2 && w->attrs[1] == 3;
        }
    }
    CU_ASSERT(len_before_tau > 0);
    CU_ASSERT(a.r.sink.out.len != b.r.sink.out.len ||
              memcmp(a.r.sink.out.data, b.r.sink.out.data, a.r.sink.out.len) != 0);   /* the row did count */
    CU_ASSERT_EQUAL(nc, 6);
    CU_ASSERT(edges_same);
    CU_ASSERT(util_same_2);
    CU_ASSERT(util_same_4);
    CU_ASSERT(util_differ_8);
    CU_ASSERT(ab && ce);
    run_close(&a);
    run_close(&b);
    json_decref(j);
}

static void test_small_input_is_the_one_way_model(void)
{
    const int T = 12;
    json_t *j = cfg_of(T, "epsilon", 1, NULL), *j0 = cfg_of(T, "epsilon", 1, ", \"forest_edges\": 0");
    run_state a, b;
    open_pair(&a, &b, j, j0, 3);
    int same = 1, share = 0;
    for (int t = 1; t <= T; t++) {
        run_step(&a, (uint64_t)t, 20, 0);
        run_step(&b, (uint64_t)t, 20, 0);
        const dp_ledger *l = a.r.ops->release_ledger(a.r.rel);
        share |= forest_of(&a)->sel_units != 0 || l->n_entries != D || l->units_total != (uint64_t)D << 20;
        same &= same_as_no_edges(&a, &b);
    }
    CU_ASSERT(a.n > 0);
    CU_ASSERT_FALSE(share);
    CU_ASSERT(same);
    close_pair(&a, &b, j, j0);
}

/* The cap's rule, restated: the candidates of the selection at s (N̂ of step s − 1) are the pairs of at most
 * dp_forest_cell_cap cells; the selection's list must be exactly them, in workload order. */
static int cands_are_the_rule(const run_state *s, uint64_t step, double n_hat)
{
    const marginal_release *m = (const marginal_release *)s->r.rel;
    uint64_t cap = 0;
    CU_ASSERT_EQUAL_FATAL(dp_forest_cell_cap(m, n_hat, step - 1, step, &cap, NULL, 0), DP_OK);
    uint32_t n = 0, ok = 1;
    for (size_t i = 0; i < m->cfg.n_workloads; i++)
        if (m->forest->cand[i] && m->cfg.workloads[i].cells <= cap)
            ok &= n < m->forest->n_cand && m->cand[n++] == i;
    return ok && n == m->forest->n_cand;
}

static void test_candidates_are_public(void)
{
    const int T = 16;
    json_t *j = cfg_of(T, "epsilon", 0.4, ", \"forest_edges\": 2, \"forest_select_share\": 0.5");
    run_state a, b;
    open_pair(&a, &b, j, j, 4);
    int checked = 0, binding = 0, rule = 1, same = 1;
    for (int t = 1; t <= T; t++) {
        int sel = t > 2 && (t & (t - 1)) == 0 && forest_of(&a)->sel_units > 0;
        double n_a = forest_of(&a)->N;
        /* b: half as many rows again, a different table; its noisy total set to a's before the selection */
        if (sel)
            ((dp_forest *)forest_of(&b))->N = n_a;
        run_step(&a, (uint64_t)t, 40, 0);
        run_step(&b, (uint64_t)t, 60, t == 3);
        if (!sel)
            continue;
        const marginal_release *ma = (const marginal_release *)a.r.rel, *mb = (const marginal_release *)b.r.rel;
        checked++;
        binding |= ma->forest->n_cand > 0 && ma->forest->n_cand < 6;
        rule &= cands_are_the_rule(&a, (uint64_t)t, n_a) && cands_are_the_rule(&b, (uint64_t)t, n_a);
        same &= ma->forest->n_cand == mb->forest->n_cand &&
                memcmp(ma->cand, mb->cand, ma->forest->n_cand * sizeof *ma->cand) == 0;
        printf("\n    step %d: N̂ %.0f, %u of 6 pairs are candidates", t, n_a, ma->forest->n_cand);
    }
    CU_ASSERT(checked >= 2);
    CU_ASSERT(binding);   /* the cap excluded some pairs and kept others at some selection */
    CU_ASSERT(rule);
    CU_ASSERT(same);
    close_pair(&a, &b, j, j);
}

/* forest_edges 1 and share 0.5 let a 12-row step pass the EM's resolution (the rule without the cap, restated)
 * while no pair's mean cell would hold one counter sd: the cap leaves no candidate, so no share is booked. */
static void test_cap_excluding_every_pair_is_the_one_way_model(void)
{
    const int T = 15;
    json_t *j = cfg_of(T, "epsilon", 0.5, ", \"forest_edges\": 1, \"forest_select_share\": 0.5"),
           *j0 = cfg_of(T, "epsilon", 0.5, ", \"forest_edges\": 0");
    run_state a, b;
    open_pair(&a, &b, j, j0, 5);
    int same = 1, share = 0, uncapped_feeds = 0, capped_out = 1;
    double n_prev = 0;
    for (int t = 1; t <= T; t++) {
        if ((t & (t - 1)) == 0 && t > 1 && 3 * t <= T + 1) {   /* an epoch starts: the rules at s_e = t */
            const marginal_release *m = (const marginal_release *)a.r.rel;
            uint64_t sel = (uint64_t)llround(D * (double)(1u << 20)), cap = 0;   /* s/(1 − s)·m·2^20, m = d */
            double eps = dp_forest_pick_epsilon(&m->cfg, sel, ((uint64_t)D << 20) + sel);
            uncapped_feeds |= 2 * n_prev / (t - 1) * t >= 8 / eps * log(6.0);
            CU_ASSERT_EQUAL_FATAL(dp_forest_cell_cap(m, n_prev, (uint64_t)t - 1, 2 * (uint64_t)t, &cap, NULL, 0),
                                  DP_OK);
            capped_out &= cap < 4;   /* the smallest pair, (b, e), has 4 cells */
        }
        run_step(&a, (uint64_t)t, 12, 0);
        run_step(&b, (uint64_t)t, 12, 0);
        n_prev = forest_of(&a)->N;
        share |= forest_of(&a)->sel_units != 0;
        same &= same_as_no_edges(&a, &b);
    }
    CU_ASSERT(uncapped_feeds);   /* without the cap the share would have been booked */
    CU_ASSERT(capped_out);
    CU_ASSERT(a.n > 0);
    CU_ASSERT_FALSE(share);
    CU_ASSERT(same);
    close_pair(&a, &b, j, j0);
}

/* The horizon rule (dp_forest_feeds): epoch e books the share only if the edges picked at 2·s_e would serve
 * at least the s_e steps that paid, 3·s_e <= T + 1.  T = 10, 200 rows a step, ε = 20: epoch 1 (steps 2–3) books
 * (6 <= 11) and epoch 2 (steps 4–7) would pass the resolution and the cap (restated) but not the horizon rule
 * (12 > 11), so it books nothing and no selection reads its rows.  A neighbouring input (one row more at step
 * 5, in epoch 2) and a different table (230 rows a step) book the same units at every step: the decision reads
 * the configuration and the step, and N̂ only through the resolution rule, not the rows.  Booking epoch 2 as
 * the rule it replaced did (2·s_e <= T) fails it (checked). */
static void test_horizon_rule_books_no_share_for_edges_serving_fewer_steps(void)
{
    const int T = 10;
    json_t *j = cfg_of(T, "epsilon", 20, NULL);
    run_state a, b, c;
    open_pair(&a, &b, j, j, 7);
    run_open(&c, j, &a.key);
    int booked_1 = 1, booked_2 = 0, others_pass = 0, same = 1, kept = 1;
    double n_prev = 0;
    for (int t = 1; t <= T; t++) {
        if (t == 4) {   /* epoch 2 starts: the resolution and the cap, restated, would book */
            const marginal_release *m = (const marginal_release *)a.r.rel;
            uint64_t m_e = forest_of(&a)->n_kept, cap = 0;
            uint64_t sel = (uint64_t)llround(0.1 / 0.9 * (double)m_e * (double)(1u << 20));
            double eps = dp_forest_pick_epsilon(&m->cfg, sel, (m_e << 20) + sel);
            CU_ASSERT_EQUAL_FATAL(dp_forest_cell_cap(m, n_prev, 3, 8, &cap, NULL, 0), DP_OK);
            others_pass = 2 * n_prev / 3 * 4 >= 8 / eps * log(6.0) && cap >= 4 && 2 * t <= T;
        }
        run_step(&a, (uint64_t)t, 200, 0);
        run_step(&b, (uint64_t)t, 200, t == 5);
        run_step(&c, (uint64_t)t, 230, 0);
        n_prev = forest_of(&a)->N;
        const dp_ledger *la = a.r.ops->release_ledger(a.r.rel), *lb = b.r.ops->release_ledger(b.r.rel),
                        *lc = c.r.ops->release_ledger(c.r.rel);
        uint64_t sa = forest_of(&a)->sel_units;
        same &= sa == forest_of(&b)->sel_units && la->units_total == lb->units_total &&
                (sa > 0) == (forest_of(&c)->sel_units > 0) &&
                lc->units_total == ((uint64_t)forest_of(&c)->n_kept << 20) + forest_of(&c)->sel_units;
        if (t == 2 || t == 3)
            booked_1 &= sa > 0 && la->n_entries == forest_of(&a)->n_kept + 1;
        if (t >= 4)
            booked_2 |= sa > 0 || la->units_total != (uint64_t)forest_of(&a)->n_kept << 20;
        if (t >= 9)   /* no selection at 8: epoch 3 keeps epoch 2's edges */
            kept &= forest_of(&a)->n_edges > 0;
    }
    CU_ASSERT(others_pass);   /* without the horizon rule epoch 2 would book */
    CU_ASSERT(booked_1);
    CU_ASSERT_FALSE(booked_2);
    CU_ASSERT(same);
    CU_ASSERT(kept);
    run_close(&c);
    close_pair(&a, &b, j, j);
}

static void run_bytes(void *ctx, uint8_t key_variant, int restore_at, dp_buf *out)
{
    const int T = 11;
    json_t *j = ctx ? cfg_of(T, "rho", 0.5, ", \"counter\": \"tree\"") : cfg_of(T, "epsilon", 3, NULL);
    dp_key key;
    dptest_key(&key, key_variant);
    mk_run s;
    mk_open(&s, j, &key, D, make_row);
    for (int t = 1; t <= T; t++) {
        if (t == restore_at + 1 && restore_at)
            mk_restore(&s, j, &key);
        mk_step(&s, (uint64_t)t, 120, 0);
    }
    dp_buf_put_bytes(out, s.sink.out.data, s.sink.out.len);
    mk_close(&s);
    json_decref(j);
}

static void test_restore_mid_epoch_is_byte_identical(void)
{
    tk_check_replays(run_bytes, NULL, 1, 2, 5, 300);                          /* mid epoch 2 */
    tk_check_replays(run_bytes, NULL, 1, 2, 7, 300);                          /* epoch 2's last step */
    tk_check_replays(run_bytes, NULL, 1, 2, 3, 300);                          /* epoch 1: no share booked */
    tk_check_replays(run_bytes, "zcdp, tree counters", 3, 4, 6, 300);
}

static void test_config(void)
{
    json_t *j = cfg_of(3, "epsilon", 1, NULL);
    dp_marginal_config c;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(c.method, DP_MARGINAL_FOREST);
    CU_ASSERT_EQUAL(c.forest_edges, 8);
    CU_ASSERT_EQUAL(c.forest_pair_cells, 100);
    CU_ASSERT_DOUBLE_EQUAL(c.forest_select_share, 0.1, 0);
    CU_ASSERT_EQUAL(c.one_way_source[3], 2);   /* (a, e) */
    dp_marginal_config_free(&c);
    json_decref(j);
    j = cfg_of(3, "epsilon", 1, ", \"forest_edges\": 0, \"forest_pair_cells\": 6, \"forest_select_share\": 0.3");
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(c.forest_edges, 0);
    CU_ASSERT_EQUAL(c.forest_pair_cells, 6);
    CU_ASSERT_EQUAL(c.forest_select_share, 0);   /* no edges: no selection share */
    dp_marginal_config_free(&c);
    json_decref(j);
    static const struct { const char *extra, *needle; } bad[] = {
        {", \"forest_edges\": 64", "forest_edges"},
        {", \"forest_edges\": -1", "forest_edges"},
        {", \"forest_pair_cells\": 0", "forest_pair_cells"},
        {", \"forest_select_share\": 0", "forest_select_share"},
        {", \"forest_select_share\": 1", "forest_select_share"},
        {", \"forest_select_share\": \"x\"", "forest_select_share"},
        {", \"workloads\": [[\"a\", \"b\"], [\"b\", \"c\"]]", "attribute \"e\""},
        {", \"estimate\": \"all_measurements\"", "forest"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = cfg_of(3, "epsilon", 1, bad[i].extra);
        err[0] = '\0';
        CU_ASSERT_NOT_EQUAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
        if (!strstr(err, bad[i].needle))
            printf("\n    %s: %s", bad[i].extra, err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].needle));
        json_decref(j);
    }
    /* the forest keys belong to method forest (the default: refused only under another method named) */
    json_error_t e;
    j = json_loads("{\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\",\"1\"]}, {\"name\": \"b\", "
                   "\"categories\": [\"0\",\"1\"]}], \"horizon\": 2, \"epsilon\": 1, \"forest_edges\": 2, "
                   "\"method\": \"select_measure_fit\"}", 0, &e);
    CU_ASSERT_NOT_EQUAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "method \"forest\" only"));
    json_decref(j);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"forest: each edge's released 2-way table is the rounded conditionals, roots round(n·node), pairs in two "
         "trees hypergeometric within 6 sd",
         test_rows_are_the_rounded_conditionals},
        {"forest: every step's ledger is exact (m counters of 2^20 units + the selection share), pure, zCDP and "
         "without edges",
         test_ledger_exact_every_step},
        {"forest: one row more at step 4 changes no release before it, no edge before step 8, no selection utility "
         "before step 8; the dependent pairs are chosen at large eps",
         test_selection_reads_only_the_previous_epoch},
        {"forest: a small input books no selection share and releases forest_edges 0's rows (the 1-way model)",
         test_small_input_is_the_one_way_model},
        {"forest: the candidates are the pairs under the cap from N̂, the step and the config only: a different "
         "table with the same noisy total gets the same candidates",
         test_candidates_are_public},
        {"forest: an epoch whose edges would serve fewer steps than paid for them books no share (public rule)",
         test_horizon_rule_books_no_share_for_edges_serving_fewer_steps},
        {"forest: a cap that excludes every pair books no share and releases forest_edges 0's rows bit for bit",
         test_cap_excluding_every_pair_is_the_one_way_model},
        {"forest: a restore mid-epoch or at an epoch's end continues byte-identically; the key matters",
         test_restore_mid_epoch_is_byte_identical},
        {"forest: config defaults 8 / 100 / 0.1, bounds, refusals, keys only with method forest", test_config},
        {NULL, NULL},
    };
    return dptest_run("marginal_forest", cases);
}
