/* cumulative.c — `cumulative`: synthetic bit streams preserving the
 * cumulative queries S_b^t = #{i : x_i^1 + … + x_i^t >= b} (seed 000,
 * Alg. 2, docs/privacy.md §4).
 *
 * Ingest half: the longitudinal roster with each individual's last bit
 * (for carry_forward) and its weight so far; the statistics of step t are
 *   z_b^t = #{i : weight before t = b-1 and x_i^t = 1}   (key b, 1 <= b <= t)
 * plus scalars [0] roster size n, [1] imputed count.
 *
 * Release half: one continual counter M_b per threshold b = 1..T (any kind,
 * dp_counter_create; default tree), horizon T-b+1, fed z_b^t from t = b.
 *   Ŝ_0^t = n;  Ŝ_b^t = min(max(S̃_b^t, Ŝ_b^{t-1}), Ŝ_{b-1}^{t-1})   (Lemma 4.2)
 *   ẑ_b^t = Ŝ_b^t - Ŝ_b^{t-1} synthetic individuals of weight b-1, chosen
 *   uniformly (partial Fisher–Yates), get 1; the rest of that weight get 0.
 * The synthetic population is exactly n (public, as in the paper).
 * What is public and what is protected, in plain words: each person's
 * whole sequence of bits is protected (user-level ρ-zCDP over T); public
 * are the roster size n (every release has n records), the configuration
 * (T, the counter, σ²) and the step boundaries.  So add/remove neighbours,
 * which would protect n, are refused unless assume_public_n declares it
 * public (budget events say so).  How many people were missing (imputed)
 * at a step is never published.
 *
 * Privacy (Thm 4.1 + docs/privacy.md §4): one individual's sequence
 * contributes to each stream z_b in at most one entry (the step at which
 * its weight reaches b), with value 1.  Under add_remove that is one
 * changed entry per stream; under replace, the two sequences' entries may
 * sit at different steps — two changed entries, so each counter is
 * created with neighbor_entries = 2 (its ℓ2² sensitivity doubles).  Each
 * M_b is ρ_b-zCDP for its stream, the streams are disjoint functions of
 * the data, and Σ_b ρ_b = ρ composes to ρ-zCDP.  Everything after the
 * counters is post-processing.
 *
 * Budget split.  Tree counters: exactly Cor. B.1,
 *   ρ_b = ρ · L_b³ / Σ_b' L_b'³,  L_b = max(ceil(log2(T-b+1)), 1),
 * which equalises the counters' worst-case error bounds.  Any other kind:
 * the same equalisation done on the counter's own analytic variance.  For
 * a linear counter with horizon H and budget ρ_b the output variance is
 * v(H)/ρ_b, v(H) = ρ_probe · max_{t<=H} Var_probe(t) of a probe counter
 * of that kind with horizon H and budget ρ_probe (variance ∝ 1/ρ), so
 * equal worst-case variance needs ρ_b ∝ v(T-b+1):
 *   ρ_b = ρ · v(T-b+1) / Σ_b' v(T-b'+1).
 * (For the tree, v(H) ∝ levels(H)·max popcount, close to L³'s cubic only
 * through Cor. B.1's looser L_t² bound; the tree keeps the paper's weights.)
 *
 * Accounting: the whole ρ_b of counter M_b is charged at step b, when
 * M_b first releases; an upper bound on the loss of the prefix released so
 * far, reaching ρ at step T.
 *
 * Accuracy (budget event): for every counter kind, a Gaussian-tail union
 * bound over the T(T+1)/2 released counts from the counters' actual
 * variances, sqrt(2 · max_{b,t} Var_b(t) · ln(T(T+1)/β)) (not Cor. B.1's
 * L = ⌈log₂ H⌉ form, which undercounts the tree's levels).
 * Lemma 4.2: monotonization does not increase the maximum error.
 *
 * Memory: ingest 1 + 1 + ceil(log2(T+1)) bits per individual plus its id;
 * release ceil(log2(T+1)) bits per synthetic individual, T counters, and
 * transiently 4 bytes + 1 bit per synthetic individual at a close.  close
 * is O(n + T·counter step). */
#include "synth/longitudinal/longitudinal.h"
#include "synth/longitudinal/longitudinal_config.h"
#include "core/ledger_io.h"
#include "synth/longitudinal/longitudinal_math.h"
#include "synth/common/synth.h"

#include "core/counter.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ledger's units (exact: accountant.h). */
#define CUMUL_LEDGER_UNITS (1ull << 52)

#define CUMUL_REL_MAGIC 0x4c455243u   /* "CREL" */

/* ------------------------------------------------------------------ ingest */

typedef struct cumul_ingest {
    dp_lingest     li;       /* first (dp_lingest_half_* ops); hist_len 1 (the last bit), aux = weight */
    dp_long_config cfg;
} cumul_ingest;

static int cumul_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr,
                               size_t errstr_size)
{
    *out = NULL;
    cumul_ingest *w = calloc(1, sizeof *w);
    if (!w)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_long_config_parse(&w->cfg, "cumulative", config, 0, errstr, errstr_size);
    if (rc == DP_OK)
        rc = dp_lingest_init(&w->li, w->cfg.horizon, 2, 1, dp_bits_for(w->cfg.horizon + 1),
                             w->cfg.impute, w->cfg.impute_value, errstr, errstr_size);
    if (rc != DP_OK) {
        dp_lingest_free(&w->li);
        free(w);
        return rc;
    }
    *out = (dp_ingest_half *)w;
    return DP_OK;
}

static int cumul_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out)
{
    cumul_ingest *w = (cumul_ingest *)in;
    dp_lingest *li = &w->li;
    int rc = dp_lingest_close_begin(li, step, out);
    if (rc != DP_OK)
        return rc;
    /* z_b^t, b = weight-before + 1, counted densely (weights <= t-1). */
    int64_t *z = calloc(step + 1, sizeof *z);
    if (!z)
        return DP_ENOMEM;
    for (size_t i = 0; i < li->n; i++) {
        if (dp_lingest_hist(li, i) == 1) {
            uint64_t wgt = dp_lingest_aux(li, i);
            z[wgt + 1]++;
            dp_lingest_set_aux(li, i, wgt + 1);
        }
    }
    for (uint64_t b = 1; b <= step && rc == DP_OK; b++)
        rc = dp_stats_add(out, b, z[b]);
    free(z);
    if (rc != DP_OK)
        return rc;
    dp_lingest_advance(li);
    return dp_stats_finish(out);
}

static int cumul_ingest_load(dp_ingest_half *in, dp_reader *r)
{
    cumul_ingest *w = (cumul_ingest *)in;
    int rc = dp_lingest_load(&w->li, r);
    if (rc != DP_OK)
        return rc;
    /* A weight can never exceed the steps closed so far. */
    for (size_t i = 0; i < w->li.n; i++)
        if (dp_lingest_aux(&w->li, i) >= w->li.open_step)
            return DP_ECORRUPT;
    return DP_OK;
}

static void cumul_ingest_destroy(dp_ingest_half *in)
{
    cumul_ingest *w = (cumul_ingest *)in;
    if (!w)
        return;
    dp_lingest_free(&w->li);
    free(w);
}

/* ----------------------------------------------------------------- release */

typedef struct cumul_release {
    dp_long_config cfg;
    const dp_key  *key;
    char          *stream_id;
    size_t         stream_id_len;
    uint64_t       T;
    double        *rho_b;        /* [1..T]: counter M_b's ρ (at most its charge) */
    uint64_t      *units_b;      /* [1..T]: M_b's charge in ledger units */
    dp_counter   **M;            /* [1..T] */
    double         bound;
    double         sigma2_max;   /* the largest variance of any released count (counters over their horizons) */
    char           mechanism[DP_LEDGER_MECH_MAX];
    /* state */
    uint64_t       done;
    uint64_t       last;         /* cumul_last_step: public */
    int            exhausted;
    dp_ledger      ledger;
    int            have_n;
    uint64_t       n;            /* synthetic population = roster size */
    int64_t       *S;            /* Ŝ_b^{done}, b = 0..T+1 */
    dp_packed      pop;          /* synthetic weights */
    /* scratch */
    int64_t       *Snew;
    int64_t       *noisy;        /* S̃_b^t */
    uint64_t      *off;          /* T + 2 */
    uint32_t      *idx;
    uint8_t       *bit;
} cumul_release;

static void cumul_release_destroy(dp_release_half *rel)
{
    cumul_release *w = (cumul_release *)rel;
    if (!w)
        return;
    if (w->M)
        for (uint64_t b = 1; b <= w->T; b++)
            dp_counter_destroy(w->M[b]);
    dp_ledger_free(&w->ledger);
    dp_packed_free(&w->pop);
    free(w->M);
    free(w->rho_b);
    free(w->units_b);
    free(w->stream_id);
    free(w->S);
    free(w->Snew);
    free(w->noisy);
    free(w->off);
    free(w->idx);
    free(w->bit);
    free(w);
}

static uint64_t cumul_last_step(const dp_release_half *rel);

static dp_counter_config counter_config(const cumul_release *w, uint64_t horizon, double rho)
{
    /* Counter M_b runs for T-b+1 steps, so the last ones are shorter than a
     * configured block: a block never exceeds its counter's horizon (B = H
     * is one block, the whole horizon). */
    uint64_t block = w->cfg.counter_block > horizon ? horizon : w->cfg.counter_block;
    dp_counter_config cc = {
        .kind = w->cfg.counter_kind,
        .horizon = horizon,
        .block = block,
        .buffers = w->cfg.counter_buffers,
        .budget = {DP_PRIVACY_ZCDP, rho},
        .neighbor_entries = w->cfg.replace ? 2 : 1,
        .max_abs_change = 1,
    };
    return cc;
}

/* Largest analytic output variance of a counter over its horizon. */
static double counter_max_variance(const dp_counter *c, uint64_t horizon)
{
    double mx = 0;
    for (uint64_t t = 1; t <= horizon; t++) {
        double v = dp_counter_variance(c, t);
        if (v > mx)
            mx = v;
    }
    return mx;
}

static int cumul_release_create(dp_release_half **out, const json_t *config,
                                const dp_synth_env *env, char *errstr, size_t errstr_size)
{
    *out = NULL;
    cumul_release *w = calloc(1, sizeof *w);
    if (!w)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_long_config_parse(&w->cfg, "cumulative", config, 0, errstr, errstr_size);
    if (rc != DP_OK) {
        free(w);
        return rc;
    }
    const dp_long_config *c = &w->cfg;
    const uint64_t T = c->horizon;
    w->T = T;
    w->key = env->key;
    w->stream_id_len = env->stream_id ? env->stream_id_len : 0;
    w->stream_id = malloc(w->stream_id_len + 1);
    w->rho_b = calloc(T + 1, sizeof *w->rho_b);
    w->M = calloc(T + 1, sizeof *w->M);
    w->S = calloc(T + 2, sizeof *w->S);
    w->Snew = calloc(T + 2, sizeof *w->Snew);
    w->noisy = calloc(T + 2, sizeof *w->noisy);
    w->off = calloc(T + 2, sizeof *w->off);
    dp_packed_init(&w->pop, dp_bits_for(T + 1));
    if (!w->stream_id || !w->rho_b || !w->M || !w->S || !w->Snew || !w->noisy || !w->off) {
        cumul_release_destroy((dp_release_half *)w);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (w->stream_id_len)
        memcpy(w->stream_id, env->stream_id, w->stream_id_len);
    w->stream_id[w->stream_id_len] = '\0';
    snprintf(w->mechanism, sizeof w->mechanism, "cumulative/%s", dp_counter_kind_name(c->counter_kind));

    /* Weights of the ρ split (see the header comment): a counter (or a
     * probe) per horizon, so let the kind prepare every horizon at once. */
    dp_counter_config all_horizons = counter_config(w, T, c->rho);
    rc = dp_counter_prepare_horizons(&all_horizons, T);
    if (rc != DP_OK) {
        cumul_release_destroy((dp_release_half *)w);
        return dp_err(errstr, errstr_size, rc, "cumulative: counter %s: cannot prepare its horizons",
                      dp_counter_kind_name(c->counter_kind));
    }
    for (uint64_t b = 1; b <= T; b++) {
        uint64_t H = T - b + 1;
        double wb;
        if (c->counter_kind == DP_COUNTER_TREE) {
            unsigned L = 0;
            while (((uint64_t)1 << L) < H)
                L++;                         /* ceil(log2 H) */
            double Lb = L > 1 ? (double)L : 1.0;
            wb = Lb * Lb * Lb;
        } else {
            const double rho_probe = 1e-3;
            dp_counter_config pc = counter_config(w, H, rho_probe);
            dp_noise_source ns = {env->key, w->stream_id, w->stream_id_len, "cumulative/probe"};
            dp_counter *probe;
            rc = dp_counter_create(&probe, &pc, &ns, errstr, errstr_size);
            if (rc != DP_OK) {
                cumul_release_destroy((dp_release_half *)w);
                return rc;
            }
            wb = counter_max_variance(probe, H) * rho_probe;
            dp_counter_destroy(probe);
            if (!(wb > 0) || !isfinite(wb)) {
                cumul_release_destroy((dp_release_half *)w);
                return dp_err(errstr, errstr_size, DP_EINVAL,
                              "cumulative: counter %s reports no usable variance",
                              dp_counter_kind_name(c->counter_kind));
            }
        }
        w->rho_b[b] = wb;
    }
    /* The plan, exact: ρ as 2^52 ledger units split over the T counters
     * in proportion to their weights (accountant.h), so the spends add up
     * to ρ bit for bit.  Each counter is calibrated on at most what it is
     * charged: ρ·units/2^52 rounded down. */
    uint64_t *units = calloc(T + 1, sizeof *units);
    if (!units || dp_ledger_split_units(w->rho_b + 1, T, CUMUL_LEDGER_UNITS, units + 1) != DP_OK) {
        free(units);
        cumul_release_destroy((dp_release_half *)w);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "cumulative: out of memory");
    }
    w->units_b = units;
    rc = dp_ledger_init_exact(&w->ledger, DP_PRIVACY_ZCDP, c->rho, CUMUL_LEDGER_UNITS, errstr, errstr_size);
    double planned = 0;
    for (uint64_t b = 1; b <= T; b++) {
        w->rho_b[b] = nextafter(dp_ledger_units_value(&w->ledger, units[b]), 0.0);
        planned += w->rho_b[b];
    }
    if (rc == DP_OK)
        rc = dp_ledger_check_plan(&w->ledger, (dp_privacy){DP_PRIVACY_ZCDP, planned}, errstr, errstr_size);
    if (rc != DP_OK) {
        cumul_release_destroy((dp_release_half *)w);
        return rc;
    }

    double vmax = 0;
    for (uint64_t b = 1; b <= T; b++) {
        char label[48];
        snprintf(label, sizeof label, "cumulative/M%llu", (unsigned long long)b);
        dp_counter_config cc = counter_config(w, T - b + 1, w->rho_b[b]);
        dp_noise_source ns = {env->key, w->stream_id, w->stream_id_len, label};
        char why[256] = "";
        rc = dp_counter_create(&w->M[b], &cc, &ns, why, sizeof why);
        if (rc != DP_OK) {
            dp_err(errstr, errstr_size, rc, "cumulative: rho = %g: counter M_%llu's noise is out of range: %s", c->rho,
                   (unsigned long long)b, why);
            cumul_release_destroy((dp_release_half *)w);
            return rc;
        }
        double v = counter_max_variance(w->M[b], T - b + 1);
        if (v > vmax)
            vmax = v;
    }
    /* The stated bound comes from the counters' actual variances, for
     * every kind (the tree too: Cor. B.1's L = ⌈log₂ H⌉ undercounts the
     * ⌊log₂ H⌋ + 1 levels the binary mechanism noises, and at T = 6 its
     * bound failed for M_5 alone ~6 % of the time against β = 0.05).
     * Each released count's error is a sum of independent discrete
     * Gaussians (subgaussian with proxy σ², CKS20) — and for honaker
     * a bounded rounding term, proxy ¼, included in its variance bound —
     * so P[|e| > α] <= 2·exp(-α²/(2v)) with v its reported variance; a
     * union bound over the T(T+1)/2 released counts gives
     *   α = sqrt(2 · max v · ln(T(T+1)/β)),
     * and monotonization does not increase the maximum error (Lemma 4.2). */
    w->bound = sqrt(2.0 * vmax * log((double)T * (double)(T + 1) / c->beta));
    w->sigma2_max = vmax;
    w->last = cumul_last_step((dp_release_half *)w);
    *out = (dp_release_half *)w;
    return DP_OK;
}

/* The plan's last release (docs/kafka.md §10): the first step whose
 * counter's charge brings the planned units to the whole budget — step T
 * unless the split left the last counters no unit — public: a function
 * of the configuration only. */
static uint64_t cumul_last_step(const dp_release_half *rel)
{
    const cumul_release *w = (const cumul_release *)rel;
    uint64_t planned = 0;
    for (uint64_t b = 1; b <= w->T; b++)
        if ((planned += w->units_b[b]) >= CUMUL_LEDGER_UNITS)
            return b;
    return w->T;
}

/* The public rule over the steps released, or a refused spend (fail
 * closed); w->exhausted is its value as the snapshot records it. */
static int cumul_release_exhausted(const dp_release_half *rel)
{
    const cumul_release *w = (const cumul_release *)rel;
    return dp_synth_plan_exhausted(w->last, w->done) || w->ledger.exhausted;
}

static const dp_ledger *cumul_release_ledger(const dp_release_half *rel)
{
    return &((const cumul_release *)rel)->ledger;
}

static int cumul_emit_event(cumul_release *w, uint64_t step, double spent, double sigma2_max,
                            const dp_release_sink *sink)
{
    const dp_long_config *c = &w->cfg;
    /* Then the released cumulative counts "count.<b>" = Ŝ_b^t, b = 1..min(t, 16):
     * how many synthetic individuals have at least b ones so far (what the
     * records add up to: public; max_abs_error bounds their error). */
    char names[16][32];
    dp_kv debias[2 + 16] = {{"population", (double)w->n}, {"sigma2_max", sigma2_max}};
    size_t n_debias = 2;
    for (uint64_t b = 1; b <= step && b <= 16; b++) {
        snprintf(names[b - 1], sizeof names[b - 1], "count.%llu", (unsigned long long)b);
        debias[n_debias++] = (dp_kv){names[b - 1], (double)w->S[b]};
    }
    dp_release_manifest m = {
        .stream_id = w->stream_id,
        .stream_id_len = w->stream_id_len,
        .step = step,
        .synthesizer = "cumulative",
        .mode = DP_RELEASE_DELTA,
        .record_count = w->n,
        .clamped = 0,
        .debias = debias,
        .n_debias = n_debias,
    };
    int rc = sink->manifest ? sink->manifest(sink->ctx, &m) : 0;
    if (rc != 0)
        return rc;
    /* a budget configured as ε also names that ε (budget_total is its ρ) */
    dp_kv noise[] = {{"sigma2_max", sigma2_max}, {"rho_step", spent}, {"counters", (double)step},
                     {"budget_epsilon", c->epsilon}};
    dp_kv acc[] = {{"beta", c->beta}, {"max_abs_error", w->bound}};
    dp_budget_event e = {
        .stream_id = w->stream_id,
        .stream_id_len = w->stream_id_len,
        .step = step,
        .status = cumul_release_exhausted((dp_release_half *)w) ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE,
        .mechanism = w->mechanism,
        .unit = "user-level over horizon T",
        .neighbors = dp_long_neighbors_name(c),
        .public_inputs = dp_long_public_inputs(c),
        .noise = noise,
        .n_noise = c->epsilon > 0 ? 4 : 3,
        .accuracy = acc,
        .n_accuracy = 2,
    };
    dp_long_fill_budget(&e, &w->ledger, c->delta);
    return sink->budget ? sink->budget(sink->ctx, &e) : 0;
}

static int cumul_release_step(dp_release_half *rel, uint64_t t, const dp_stats *st,
                              const dp_release_sink *sink, char *errstr, size_t errstr_size)
{
    cumul_release *w = (cumul_release *)rel;
    if (cumul_release_exhausted(rel))
        return dp_err(errstr, errstr_size, DP_EHORIZON, "cumulative: stream exhausted");
    if (t != w->done + 1 || st->step != t || !st->sorted)
        return dp_err(errstr, errstr_size, DP_ESTATE, "cumulative: statistics for step %llu, expected %llu",
                      (unsigned long long)st->step, (unsigned long long)(w->done + 1));
    if (st->scalars[0] < 0 || (uint64_t)st->scalars[0] > UINT32_MAX - 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "cumulative: roster size out of range");
    uint64_t n = (uint64_t)st->scalars[0];
    if (!w->have_n) {
        int rc = dp_packed_resize(&w->pop, (size_t)n);
        free(w->idx);
        free(w->bit);
        w->idx = malloc((n ? n : 1) * sizeof *w->idx);
        w->bit = malloc(n ? n : 1);
        if (rc != DP_OK || !w->idx || !w->bit)
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory for %llu individuals",
                          (unsigned long long)n);
        w->n = n;
        w->have_n = 1;
        w->S[0] = (int64_t)n;
    } else if (n != w->n) {
        return dp_err(errstr, errstr_size, DP_EINVAL, "cumulative: roster size changed from %llu to %llu",
                      (unsigned long long)w->n, (unsigned long long)n);
    }
    for (size_t i = 0; i < st->n_cells; i++)
        if (st->keys[i] < 1 || st->keys[i] > t || st->counts[i] < 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, "cumulative: z_b statistic out of range");

    /* Counter M_t starts now: charge its whole budget first. */
    int rc = dp_ledger_spend_units(&w->ledger, t, w->mechanism, w->units_b[t], errstr, errstr_size);
    if (rc != DP_OK)
        return rc;

    double sigma2_max = 0;
    for (uint64_t b = 1; b <= t; b++) {
        int64_t noisy;
        rc = dp_counter_add(w->M[b], dp_stats_get(st, b), &noisy);
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, "cumulative: counter M_%llu at step %llu: %s",
                          (unsigned long long)b, (unsigned long long)t, dp_status_str(rc));
        double v = dp_counter_variance(w->M[b], t - b + 1);
        if (v > sigma2_max)
            sigma2_max = v;
        w->noisy[b] = noisy;
    }

    /* Lemma 4.2: Ŝ_b^{t-1} <= Ŝ_b^t <= Ŝ_{b-1}^{t-1}. */
    dp_cumulative_monotonize(w->S, w->noisy, t, w->Snew);

    /* Bucket synthetic individuals by weight (ascending id inside). */
    memset(w->off, 0, (t + 1) * sizeof *w->off);
    for (uint64_t i = 0; i < w->n; i++)
        w->off[dp_packed_get(&w->pop, (size_t)i) + 1]++;
    for (uint64_t b = 0; b < t; b++)
        w->off[b + 1] += w->off[b];
    for (uint64_t i = 0; i < w->n; i++)
        w->idx[w->off[dp_packed_get(&w->pop, (size_t)i)]++] = (uint32_t)i;
    for (uint64_t b = t; b > 0; b--)
        w->off[b] = w->off[b - 1];
    w->off[0] = 0;
    memset(w->bit, 0, w->n ? w->n : 1);

    dp_drbg g;
    dp_drbg_init(&g, w->key, w->stream_id, w->stream_id_len, t, "cumulative/assign");
    for (uint64_t b = 1; b <= t; b++) {
        uint32_t *grp = w->idx + w->off[b - 1];
        uint64_t size = w->off[b] - w->off[b - 1];
        int64_t zhat = w->Snew[b] - w->S[b];
        /* Monotonization keeps 0 <= ẑ <= group size; the group of weight
         * b-1 holds exactly Ŝ_{b-1}^{t-1} - Ŝ_b^{t-1} individuals. */
        if (zhat < 0 || (uint64_t)zhat > size) {
            dp_drbg_wipe(&g);
            return dp_err(errstr, errstr_size, DP_ESTATE, "cumulative: inconsistent synthetic state");
        }
        dp_choose_uniform(&g, grp, size, (uint64_t)zhat);
        for (uint64_t j = 0; j < (uint64_t)zhat; j++) {
            w->bit[grp[j]] = 1;
            dp_packed_set(&w->pop, grp[j], b);
        }
    }
    dp_drbg_wipe(&g);
    memcpy(w->S, w->Snew, (t + 1) * sizeof *w->S);
    for (uint64_t i = 0; i < w->n; i++) {
        dp_synth_record r = {.synthetic_id = i,
                             .value = {.kind = DP_PAYLOAD_CATEGORY, .category = w->bit[i]}};
        if (sink->record && (rc = sink->record(sink->ctx, &r)) != 0)
            return rc;
    }
    w->done = t;
    w->exhausted = dp_synth_plan_exhausted(w->last, t);
    return cumul_emit_event(w, t, w->rho_b[t], sigma2_max, sink);
}

static int cumul_release_save(const dp_release_half *rel, dp_buf *b)
{
    const cumul_release *w = (const cumul_release *)rel;
    dp_buf_put_u32(b, CUMUL_REL_MAGIC);
    dp_buf_put_u64(b, w->T);
    dp_buf_put_u32(b, (uint32_t)w->cfg.counter_kind);
    dp_buf_put_u8(b, (uint8_t)w->cfg.replace);
    for (uint64_t i = 1; i <= w->T; i++)
        dp_buf_put_f64(b, w->rho_b[i]);
    dp_buf_put_u64(b, w->done);
    dp_buf_put_u8(b, (uint8_t)w->exhausted);
    dp_buf_put_u8(b, (uint8_t)w->have_n);
    dp_buf_put_u64(b, w->n);
    for (uint64_t i = 0; i <= w->T + 1; i++)
        dp_buf_put_i64(b, w->S[i]);
    dp_packed_save(&w->pop, b);
    for (uint64_t i = 1; i <= w->T; i++) {
        dp_buf cb;
        dp_buf_init(&cb);
        int rc = dp_counter_snapshot(w->M[i], &cb);
        if (rc == DP_OK)
            dp_buf_put_blob(b, cb.data, cb.len);
        dp_buf_free(&cb);
        if (rc != DP_OK)
            return rc;
    }
    int rc = dp_ledger_save(&w->ledger, b);
    return rc != DP_OK ? rc : dp_buf_status(b);
}

static int cumul_release_load(dp_release_half *rel, dp_reader *r)
{
    cumul_release *w = (cumul_release *)rel;
    if (dp_reader_u32(r) != CUMUL_REL_MAGIC || dp_reader_u64(r) != w->T ||
        dp_reader_u32(r) != (uint32_t)w->cfg.counter_kind || dp_reader_u8(r) != (uint8_t)w->cfg.replace)
        return DP_ECORRUPT;
    for (uint64_t i = 1; i <= w->T; i++)
        if (dp_reader_f64(r) != w->rho_b[i])
            return DP_ECORRUPT;
    w->done = dp_reader_u64(r);
    w->exhausted = dp_reader_u8(r) != 0;
    w->have_n = dp_reader_u8(r) != 0;
    w->n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || w->done > w->T || w->n > UINT32_MAX - 1)
        return DP_ECORRUPT;
    /* Same range checks as a fresh state: Ŝ_b counts synthetic individuals,
     * so 0 <= Ŝ_b <= n and non-increasing in b (no overflow below). */
    int64_t cap = w->have_n ? (int64_t)w->n : 0;
    for (uint64_t i = 0; i <= w->T + 1; i++) {
        w->S[i] = dp_reader_i64(r);
        if (w->S[i] < 0 || w->S[i] > cap || (i > 0 && w->S[i] > w->S[i - 1]))
            return DP_ECORRUPT;
    }
    int rc = dp_packed_load(&w->pop, r);
    if (rc != DP_OK)
        return rc;
    if (w->pop.n != (w->have_n ? w->n : 0))
        return DP_ECORRUPT;
    /* Synthetic weights must match the Ŝ they were built from. */
    for (uint64_t b = 0; b <= w->done; b++)
        w->off[b] = 0;
    for (uint64_t i = 0; i < w->pop.n; i++) {
        uint64_t wt = dp_packed_get(&w->pop, (size_t)i);
        if (wt > w->done)
            return DP_ECORRUPT;
        w->off[wt]++;
    }
    if (w->have_n)
        for (uint64_t b = 0; b <= w->done; b++)
            if ((int64_t)w->off[b] != w->S[b] - w->S[b + 1])
                return DP_ECORRUPT;
    for (uint64_t i = 1; i <= w->T; i++) {
        size_t len;
        const uint8_t *p = dp_reader_blob(r, &len);
        if (!p)
            return DP_ECORRUPT;
        dp_counter *c;
        rc = dp_counter_restore_expect(&c, p, len, w->key, dp_counter_config_of(w->M[i]), NULL, 0);
        if (rc != DP_OK)
            return DP_ECORRUPT;
        const dp_counter_config *a = dp_counter_config_of(c), *e = dp_counter_config_of(w->M[i]);
        if (a->kind != e->kind || a->horizon != e->horizon || a->budget.value != e->budget.value ||
            a->neighbor_entries != e->neighbor_entries ||
            dp_counter_steps(c) != (w->done >= i ? w->done - i + 1 : 0)) {
            dp_counter_destroy(c);
            return DP_ECORRUPT;
        }
        dp_counter_destroy(w->M[i]);
        w->M[i] = c;
    }
    if (w->have_n) {
        free(w->idx);
        free(w->bit);
        w->idx = malloc((w->n ? w->n : 1) * sizeof *w->idx);
        w->bit = malloc(w->n ? w->n : 1);
        if (!w->idx || !w->bit)
            return DP_ENOMEM;
    }
    return dp_ledger_load(&w->ledger, r);
}

static uint64_t cumul_next_step(const dp_release_half *rel)
{
    return ((const cumul_release *)rel)->done + 1;
}

/* The plan (synth.h): step t starts counter M_t and spends its share of ρ
 * (units_b, split in proportion to the counters' variances). */
static int cumul_release_describe(const dp_release_half *rel, dp_synth_plan *out)
{
    const cumul_release *w = (const cumul_release *)rel;
    const dp_long_config *c = &w->cfg;
    snprintf(out->name_buf, sizeof out->name_buf, "%s", w->mechanism);
    out->mechanism = out->name_buf;
    out->unit = "user-level over horizon T";
    out->neighbors = dp_long_neighbors_name(c);
    out->public_inputs = dp_long_public_inputs(c);
    dp_plan_budget(out, DP_PRIVACY_ZCDP, c->rho, c->delta);
    out->horizon = w->T;
    out->composition = "sequential";
    out->spend_rule = "step t starts the counter M_t over steps t..T and spends its share of rho, split over the T "
                      "counters in proportion to their error variances";
    int rc = DP_OK;
    for (uint64_t b = 1; b <= w->T && rc == DP_OK; b++)
        rc = dp_plan_run_add(out, b, b, dp_ledger_units_value(&w->ledger, w->units_b[b]));
    dp_plan_kv(out->spend, &out->n_spend, "counters_over_horizon", (double)w->T);
    dp_plan_kv(out->noise, &out->n_noise, "sigma2_max", w->sigma2_max);
    dp_plan_kv(out->accuracy, &out->n_accuracy, "beta", c->beta);
    dp_plan_kv(out->accuracy, &out->n_accuracy, "max_abs_error", w->bound);
    return rc;
}

const dp_synth_ops dp_synth_ops_cumulative = {
    .name = "cumulative",
    .example_config = "{\"horizon\":6,\"rho\":1}",
    .budget_zcdp_only = 1,
    .shards_by_entity = 1,
    .update_kind = DP_UPDATE_REPORT,
    .payload_kind = DP_PAYLOAD_CATEGORY,
    .ingest_create = cumul_ingest_create,
    .ingest_update = dp_lingest_half_update,
    .ingest_update_batch = dp_lingest_half_update_batch,
    .ingest_close = cumul_ingest_close,
    .ingest_roster_complete = dp_lingest_half_roster_complete,
    .ingest_open_step = dp_lingest_half_open_step,
    .release_next_step = cumul_next_step,
    .ingest_save = dp_lingest_half_save,
    .ingest_load = cumul_ingest_load,
    .ingest_destroy = cumul_ingest_destroy,
    .release_create = cumul_release_create,
    .release_step = cumul_release_step,
    .release_exhausted = cumul_release_exhausted,
    .release_save = cumul_release_save,
    .release_load = cumul_release_load,
    .release_destroy = cumul_release_destroy,
    .release_ledger = cumul_release_ledger,
    .release_describe = cumul_release_describe,
    .release_last_step = cumul_last_step,
};
