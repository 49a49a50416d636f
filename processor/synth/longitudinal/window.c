/* window.c — `window`: synthetic data preserving every fixed time window
 * of length k (Bun, Gaboardi, Neunhoeffer, Zhang 2024 = seed 000, Alg. 1,
 * with the categorical extension of docs/privacy.md §3).
 *
 * What is public and what is protected, in plain words: each person's
 * whole sequence of answers is protected (user-level ρ-zCDP over T).  Public
 * are the configuration (T, k, c, n_pad, σ²) and the step boundaries; under
 * replace neighbours also who is on the roster and how many.  Everything in
 * a release — every synthetic record, n* (the sum of the noisy pattern
 * counts plus the padding) and the clamped flag — is computed from the
 * charged noisy counts, so under add/remove neighbours n is protected too.
 * How many people were missing (imputed) at a step is never published.
 *
 * Ingest half: the longitudinal roster (longitudinal.h) with the last k
 * values of each individual; at a step t >= k its statistics are the
 * pattern counts C_s, s ∈ X^k (key = base-c pattern, most recent value
 * least significant), plus scalars [0] roster size, [1] imputed count.
 *
 * Release half, at t = k..T:
 *   Ĉ_s = C_s + n_pad + N_Z(σ²)                                  for all s
 *   t = k: n* = Σ_s max(Ĉ_s, 0) synthetic individuals with those k-histories
 *   t > k: for every suffix z ∈ X^{k-1}: total_z = #{synthetic with suffix z},
 *          D = total_z - Σ_v Ĉ_{zv} = c·q + r (0 <= r < c),
 *          p_{zv} = Ĉ_{zv} + q, plus 1 for r categories chosen uniformly
 *          (c = 2: the paper's ±½ coin, eqs. (3)-(4)), so Σ_v p_{zv} = total_z
 *          exactly; then p_{zv} of the individuals with suffix z, chosen
 *          uniformly (partial Fisher–Yates), get value v.
 *
 * Privacy (Thm 3.1 with docs/privacy.md §3's neighbour correction): each
 * release step is the Gaussian mechanism on the histogram (C_s)_s.  Under
 * add_remove one individual moves one bin by 1 (ℓ2² = 1); under replace
 * it leaves one bin and enters another (ℓ2² = 2).  With
 *   σ² = (T-k+1)/(2ρ) · (2 if replace else 1)
 * each step is ρ/(T-k+1)-zCDP (Δ²/(2σ²), CKS 2020 for N_Z) and the
 * T-k+1 steps compose to ρ.  n_pad is public, every later decision is
 * post-processing of the noisy histograms.  σ² is rounded up to a
 * rational (more noise), so the real per-step cost is <= the charged one.
 *
 * Negative Ĉ_s (t = k) or negative targets p_{zv} (the β event of Thm 3.2)
 * are clamped — excess removed from the largest targets, ties chosen
 * uniformly — and the release is flagged, never aborted.
 *
 * Steps t < k release nothing: an empty manifest (record_count 0) and a
 * zero-spend budget event, so every step still closes visibly.
 *
 * Memory: the ingest half 1 + ceil(log2 c^k) bits per individual plus its
 * id (longitudinal.h); the release half ceil(log2 c^k) bits per synthetic
 * individual + 8·c^k bytes, and transiently 4 bytes per synthetic
 * individual at a close.  close is O(n + n* + c^k). */
#include "synth/longitudinal/longitudinal.h"
#include "synth/longitudinal/longitudinal_config.h"
#include "core/ledger_io.h"
#include "synth/longitudinal/longitudinal_math.h"
#include "synth/common/synth.h"

#include "core/dp_error.h"
#include "core/rational.h"
#include "core/sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ledger units per releasing step (the ledger is exact: accountant.h). */
#define WINDOW_UNIT_BITS 32

#define WINDOW_REL_MAGIC 0x4c455257u   /* "WREL" */

/* ------------------------------------------------------------------ ingest */

typedef struct window_ingest {
    dp_lingest     li;         /* first: the dp_lingest_half_* ops take it */
    dp_long_config cfg;
    int64_t       *counts;     /* scratch, c^k */
} window_ingest;

/* Manifests list the debiased pattern counts when there are at most this many. */
#define WINDOW_COUNTS_SHOWN 16

static int window_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr,
                                size_t errstr_size)
{
    *out = NULL;
    window_ingest *w = calloc(1, sizeof *w);
    if (!w)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_long_config_parse(&w->cfg, "window", config, 1, errstr, errstr_size);
    if (rc == DP_OK)
        rc = dp_lingest_init(&w->li, w->cfg.horizon, w->cfg.categories, w->cfg.k, 0, w->cfg.impute,
                             w->cfg.impute_value, errstr, errstr_size);
    if (rc == DP_OK && !(w->counts = calloc(w->li.hist_mod, sizeof *w->counts)))
        rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    if (rc != DP_OK) {
        dp_lingest_free(&w->li);
        free(w);
        return rc;
    }
    *out = (dp_ingest_half *)w;
    return DP_OK;
}

static int window_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out)
{
    window_ingest *w = (window_ingest *)in;
    dp_lingest *li = &w->li;
    int rc = dp_lingest_close_begin(li, step, out);
    if (rc != DP_OK)
        return rc;
    if (step >= w->cfg.k) {
        /* Dense counting then a sorted emit: O(n + c^k), no hashing. */
        memset(w->counts, 0, li->hist_mod * sizeof *w->counts);
        for (size_t i = 0; i < li->n; i++)
            w->counts[dp_lingest_hist(li, i)]++;
        for (uint64_t s = 0; s < li->hist_mod && rc == DP_OK; s++)
            rc = dp_stats_add(out, s, w->counts[s]);
        if (rc != DP_OK)
            return rc;
    }
    dp_lingest_advance(li);
    return dp_stats_finish(out);
}

static void window_ingest_destroy(dp_ingest_half *in)
{
    window_ingest *w = (window_ingest *)in;
    if (!w)
        return;
    dp_lingest_free(&w->li);
    free(w->counts);
    free(w);
}

/* ----------------------------------------------------------------- release */

typedef struct window_release {
    dp_long_config cfg;
    const dp_key  *key;
    char          *stream_id;
    size_t         stream_id_len;
    /* derived parameters */
    uint64_t       bins;        /* c^k */
    uint64_t       zbins;       /* c^{k-1} */
    uint64_t       releases;    /* R = T-k+1 */
    dp_rational    sigma2_q;
    double         sigma2;
    dp_dgauss      dg;
    uint64_t       n_pad;
    double         bound;       /* eq. (5) at beta, with the σ² used */
    double         rho_step;    /* ρ/R */
    /* state */
    uint64_t       done;        /* last released step */
    int            exhausted;
    dp_ledger      ledger;
    uint64_t       m;           /* synthetic population n* */
    dp_packed      pop;         /* pattern of each synthetic individual */
    int64_t       *p;           /* p_s: synthetic pattern counts, c^k */
    /* scratch */
    int64_t       *chat;        /* Ĉ_s */
    uint64_t      *off;         /* zbins + 1 bucket offsets */
    uint32_t      *idx;         /* m bucketed individuals */
    int32_t       *row;         /* k values of a step-k record */
} window_release;

static int window_release_create(dp_release_half **out, const json_t *config,
                                 const dp_synth_env *env, char *errstr, size_t errstr_size)
{
    *out = NULL;
    window_release *w = calloc(1, sizeof *w);
    if (!w)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_long_config_parse(&w->cfg, "window", config, 1, errstr, errstr_size);
    if (rc != DP_OK) {
        free(w);
        return rc;
    }
    const dp_long_config *c = &w->cfg;
    w->key = env->key;
    w->stream_id_len = env->stream_id ? env->stream_id_len : 0;
    w->stream_id = malloc(w->stream_id_len + 1);
    w->bins = 1;
    for (uint32_t i = 0; i < c->k; i++)
        w->bins *= c->categories;
    w->zbins = w->bins / c->categories;
    w->releases = c->horizon - c->k + 1;
    dp_packed_init(&w->pop, dp_bits_for(w->bins));
    w->p = calloc(w->bins, sizeof *w->p);
    w->chat = calloc(w->bins, sizeof *w->chat);
    w->off = calloc(w->zbins + 1, sizeof *w->off);
    w->row = calloc(c->k, sizeof *w->row);
    if (!w->stream_id || !w->p || !w->chat || !w->off || !w->row) {
        rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        goto fail;
    }
    if (w->stream_id_len)
        memcpy(w->stream_id, env->stream_id, w->stream_id_len);
    w->stream_id[w->stream_id_len] = '\0';

    /* σ² = (T-k+1)/(2ρ) · (2 under replace): docs/privacy.md §3. */
    double s2 = (double)w->releases / (2.0 * c->rho) * (c->replace ? 2.0 : 1.0);
    char why[256] = "";
    if (dp_rational_from_double_up(s2, &w->sigma2_q) != DP_OK ||
        (rc = dp_dgauss_prepare(&w->dg, w->sigma2_q, why, sizeof why)) != DP_OK) {
        rc = dp_err(errstr, errstr_size, DP_ERANGE,
                    "window: rho = %g gives the noise variance σ² = %g, outside the exact sampler's range%s%s "
                    "(with horizon %llu and k %u)", c->rho, s2, why[0] ? ": " : "", why,
                    (unsigned long long)c->horizon, c->k);
        goto fail;
    }
    w->sigma2 = dp_rational_to_double(w->sigma2_q);
    /* Eq. (5) / Cor. 3.3 with the σ² actually used: the per-bin error is
     * subgaussian with variance proxy (σ + ½)², union bound over c^k·R bins:
     * λ = (sqrt(2σ²) + 1/sqrt 2)·sqrt(ln(c^k R/β)). */
    double lg = log((double)w->bins * (double)w->releases / c->beta);
    w->bound = (sqrt(2.0 * w->sigma2) + 1.0 / sqrt(2.0)) * sqrt(lg > 0 ? lg : 0);
    if (c->n_pad_given) {
        w->n_pad = c->n_pad;
    } else {
        double np = ceil(w->bound);
        if (!(np < 1e15)) {
            rc = dp_err(errstr, errstr_size, DP_ERANGE, "window: n_pad %g out of range", np);
            goto fail;
        }
        w->n_pad = (uint64_t)np;
    }
    /* Every release carries c^k · n_pad padding records besides the n real
     * individuals: refuse at config time a plan whose padding alone is
     * larger than max_padding_records (default 10^7, ~100 MB of Avro per
     * release), naming the field, instead of writing gigabytes a step. */
    if ((double)w->bins * (double)w->n_pad > (double)c->max_padding_records) {
        rc = dp_err(errstr, errstr_size, DP_ERANGE,
                    "window: %s: the plan pads every release with c^k·n_pad = %.0f records (categories %u, k %u, "
                    "n_pad %llu), over max_padding_records = %llu; lower it or raise max_padding_records",
                    c->n_pad_given ? "n_pad" : (c->categories > 2 ? "categories" : "k"),
                    (double)w->bins * (double)w->n_pad, c->categories, c->k, (unsigned long long)w->n_pad,
                    (unsigned long long)c->max_padding_records);
        goto fail;
    }
    w->rho_step = c->rho / (double)w->releases;
    /* The plan: R equal spends of ρ/R, kept exact as 2^32 units each of
     * R·2^32, so the R-th spend brings the total to ρ bit for bit. */
    rc = dp_ledger_init_exact(&w->ledger, DP_PRIVACY_ZCDP, c->rho, (uint64_t)w->releases << WINDOW_UNIT_BITS,
                              errstr, errstr_size);
    if (rc != DP_OK)
        goto fail;
    rc = dp_ledger_check_plan(&w->ledger, (dp_privacy){DP_PRIVACY_ZCDP, w->rho_step * (double)w->releases},
                              errstr, errstr_size);
    if (rc != DP_OK)
        goto fail;
    *out = (dp_release_half *)w;
    return DP_OK;
fail:
    dp_ledger_free(&w->ledger);
    dp_packed_free(&w->pop);
    free(w->stream_id);
    free(w->p);
    free(w->chat);
    free(w->off);
    free(w->row);
    free(w);
    return rc;
}

static void window_release_destroy(dp_release_half *rel)
{
    window_release *w = (window_release *)rel;
    if (!w)
        return;
    dp_ledger_free(&w->ledger);
    dp_packed_free(&w->pop);
    free(w->stream_id);
    free(w->p);
    free(w->chat);
    free(w->off);
    free(w->idx);
    free(w->row);
    free(w);
}

/* The plan's last release: step T (the R = T−k+1 equal spends of steps
 * k..T meet the budget at T exactly) — public (docs/kafka.md §10). */
static uint64_t window_last_step(const dp_release_half *rel)
{
    return ((const window_release *)rel)->cfg.horizon;
}

/* The public rule over the steps released, or a refused spend (fail
 * closed); w->exhausted is its value as the snapshot records it. */
static int window_release_exhausted(const dp_release_half *rel)
{
    const window_release *w = (const window_release *)rel;
    return dp_synth_plan_exhausted(window_last_step(rel), w->done) || w->ledger.exhausted;
}

static const dp_ledger *window_release_ledger(const dp_release_half *rel)
{
    return &((const window_release *)rel)->ledger;
}

static void window_drbg(const window_release *w, dp_drbg *g, uint64_t step, const char *purpose)
{
    dp_drbg_init(g, w->key, w->stream_id, w->stream_id_len, step, purpose);
}

static int emit_event(window_release *w, uint64_t step, int clamped,
                      const dp_release_sink *sink, uint64_t records, dp_release_mode mode)
{
    const dp_long_config *c = &w->cfg;
    /* Then, for up to WINDOW_COUNTS_SHOWN patterns, "count.<s>": the synthetic
     * individuals with k-history s minus the padding, the debiased count
     * every window query is built from (post-processing of the released
     * records: public; the budget event's max_abs_error bounds its error). */
    char names[WINDOW_COUNTS_SHOWN][32];
    dp_kv debias[4 + WINDOW_COUNTS_SHOWN] = {
        {"n_pad", (double)w->n_pad},
        {"sigma2", w->sigma2},
        {"bins", (double)w->bins},
        {"population", (double)w->m},
    };
    size_t n_debias = 4;
    for (uint64_t s = 0; records && s < w->bins && w->bins <= WINDOW_COUNTS_SHOWN; s++) {
        snprintf(names[s], sizeof names[s], "count.%llu", (unsigned long long)s);
        debias[n_debias++] = (dp_kv){names[s], (double)w->p[s] - (double)w->n_pad};
    }
    dp_release_manifest m = {
        .stream_id = w->stream_id,
        .stream_id_len = w->stream_id_len,
        .step = step,
        .synthesizer = "window",
        .mode = mode,
        .record_count = records,
        .clamped = clamped,
        .debias = debias,
        .n_debias = n_debias,
    };
    int rc = sink->manifest ? sink->manifest(sink->ctx, &m) : 0;
    if (rc != 0)
        return rc;
    /* a budget configured as ε also names that ε (budget_total is its ρ) */
    dp_kv noise[] = {{"sigma2", w->sigma2}, {"n_pad", (double)w->n_pad}, {"budget_epsilon", c->epsilon}};
    dp_kv acc[] = {{"beta", c->beta}, {"max_abs_error", w->bound}};
    dp_budget_event e = {
        .stream_id = w->stream_id,
        .stream_id_len = w->stream_id_len,
        .step = step,
        .status = window_release_exhausted((dp_release_half *)w) ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE,
        .mechanism = "window/discrete_gaussian",
        .unit = "user-level over horizon T",
        .neighbors = dp_long_neighbors_name(c),
        .public_inputs = dp_long_public_inputs(c),
        .noise = noise,
        .n_noise = c->epsilon > 0 ? 3 : 2,
        .accuracy = acc,
        .n_accuracy = 2,
    };
    dp_long_fill_budget(&e, &w->ledger, c->delta);
    return sink->budget ? sink->budget(sink->ctx, &e) : 0;
}

static int window_release_step(dp_release_half *rel, uint64_t step, const dp_stats *st,
                               const dp_release_sink *sink, char *errstr, size_t errstr_size)
{
    window_release *w = (window_release *)rel;
    const dp_long_config *c = &w->cfg;
    if (window_release_exhausted(rel))
        return dp_err(errstr, errstr_size, DP_EHORIZON, "window: stream exhausted");
    if (step != w->done + 1 || st->step != step || !st->sorted)
        return dp_err(errstr, errstr_size, DP_ESTATE, "window: statistics for step %llu, expected %llu",
                      (unsigned long long)st->step, (unsigned long long)(w->done + 1));
    if (step < c->k) {
        if (st->n_cells != 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, "window: pattern counts before step k");
        w->done = step;
        return emit_event(w, step, 0, sink, 0, DP_RELEASE_NONE);   /* no dataset before step k */
    }

    /* Ĉ_s = C_s + n_pad + N_Z(σ²), drawn in pattern order from one
     * per-step generator labelled "window/noise". */
    for (size_t i = 0; i < st->n_cells; i++)
        if (st->keys[i] >= w->bins || st->counts[i] < 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, "window: pattern statistic out of range");
    memset(w->chat, 0, w->bins * sizeof *w->chat);
    for (size_t i = 0; i < st->n_cells; i++)
        w->chat[st->keys[i]] = st->counts[i];
    dp_drbg g;
    window_drbg(w, &g, step, "window/noise");
    for (uint64_t s = 0; s < w->bins; s++)
        w->chat[s] += (int64_t)w->n_pad + dp_dgauss_sample(&w->dg, &g);
    dp_drbg_wipe(&g);

    /* Charge the step before anything derived from the noise leaves. */
    int rc = dp_ledger_spend_units(&w->ledger, step, "window/discrete_gaussian", 1ull << WINDOW_UNIT_BITS, errstr,
                                   errstr_size);
    if (rc != DP_OK)
        return rc;

    int clamped = 0;
    uint64_t records = 0;
    if (step == c->k) {
        /* Initial population: Ĉ_s individuals with k-history s, ids in
         * pattern order (individuals are exchangeable). */
        uint64_t m = 0;
        for (uint64_t s = 0; s < w->bins; s++) {
            if (w->chat[s] < 0) {
                w->chat[s] = 0;
                clamped = 1;
            }
            m += (uint64_t)w->chat[s];
            if (m > UINT32_MAX - 1)
                return dp_err(errstr, errstr_size, DP_ERANGE,
                              "window: synthetic population exceeds 2^32-2 individuals");
        }
        if ((rc = dp_packed_resize(&w->pop, (size_t)m)) != DP_OK)
            return dp_err(errstr, errstr_size, rc, "window: out of memory for %llu synthetic individuals",
                          (unsigned long long)m);
        free(w->idx);
        if (!(w->idx = malloc((m ? m : 1) * sizeof *w->idx)))
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        w->m = m;
        uint64_t id = 0;
        for (uint64_t s = 0; s < w->bins; s++) {
            w->p[s] = w->chat[s];
            for (int64_t j = 0; j < w->chat[s]; j++)
                dp_packed_set(&w->pop, (size_t)id++, s);
        }
        for (uint64_t i = 0; i < m; i++) {
            uint64_t s = dp_packed_get(&w->pop, (size_t)i);
            for (uint32_t j = c->k; j-- > 0;) {
                w->row[j] = (int32_t)(s % c->categories);
                s /= c->categories;
            }
            dp_synth_record r = {.synthetic_id = i,
                                 .value = {.kind = DP_PAYLOAD_ROW, .row = w->row, .row_len = c->k}};
            if (sink->record && (rc = sink->record(sink->ctx, &r)) != 0)
                return rc;
        }
        records = m;
    } else {
        /* Bucket the synthetic individuals by suffix z (last k-1 values),
         * ascending id inside a bucket: a deterministic order. */
        const uint64_t zb = w->zbins, cc = c->categories;
        memset(w->off, 0, (zb + 1) * sizeof *w->off);
        for (uint64_t i = 0; i < w->m; i++)
            w->off[dp_packed_get(&w->pop, (size_t)i) % zb + 1]++;
        for (uint64_t z = 0; z < zb; z++)
            w->off[z + 1] += w->off[z];
        for (uint64_t i = 0; i < w->m; i++)
            w->idx[w->off[dp_packed_get(&w->pop, (size_t)i) % zb]++] = (uint32_t)i;
        for (uint64_t z = zb; z > 0; z--)
            w->off[z] = w->off[z - 1];
        w->off[0] = 0;

        dp_drbg g_round, g_assign, g_clamp;
        window_drbg(w, &g_round, step, "window/round");
        window_drbg(w, &g_assign, step, "window/assign");
        window_drbg(w, &g_clamp, step, "window/clamp");
        int64_t *t = malloc(cc * sizeof *t);
        uint32_t *perm = malloc(cc * sizeof *perm);
        int64_t *np = calloc(w->bins, sizeof *np);
        if (!t || !perm || !np) {
            free(t);
            free(perm);
            free(np);
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        }
        for (uint64_t z = 0; z < zb; z++) {
            int64_t total = (int64_t)(w->off[z + 1] - w->off[z]);
            clamped |= dp_window_project(w->chat + z * cc, (uint32_t)cc, total, &g_round, &g_clamp, t, perm);
            /* Assign: the first t[0] of a uniform shuffle get 0, the next
             * t[1] get 1, …; the last category takes the rest undrawn. */
            uint32_t *grp = w->idx + w->off[z];
            uint64_t pos = 0, n = (uint64_t)total;
            for (uint64_t v = 0; v < cc; v++) {
                uint64_t want = (uint64_t)t[v];
                if (v + 1 < cc)
                    dp_choose_uniform(&g_assign, grp + pos, n - pos, want);
                for (uint64_t j = 0; j < want; j++)
                    dp_packed_set(&w->pop, grp[pos + j], z * cc + v);
                pos += want;
                np[z * cc + v] = t[v];
            }
        }
        dp_drbg_wipe(&g_round);
        dp_drbg_wipe(&g_assign);
        dp_drbg_wipe(&g_clamp);
        memcpy(w->p, np, w->bins * sizeof *np);
        free(t);
        free(perm);
        free(np);
        for (uint64_t i = 0; i < w->m; i++) {
            dp_synth_record r = {
                .synthetic_id = i,
                .value = {.kind = DP_PAYLOAD_CATEGORY,
                          .category = (int64_t)(dp_packed_get(&w->pop, (size_t)i) % cc)}};
            if (sink->record && (rc = sink->record(sink->ctx, &r)) != 0)
                return rc;
        }
        records = w->m;
    }
    w->done = step;
    w->exhausted = dp_synth_plan_exhausted(window_last_step(rel), step);
    return emit_event(w, step, clamped, sink, records,
                      step == c->k ? DP_RELEASE_FULL : DP_RELEASE_DELTA);
}

static int window_release_save(const dp_release_half *rel, dp_buf *b)
{
    const window_release *w = (const window_release *)rel;
    dp_buf_put_u32(b, WINDOW_REL_MAGIC);
    /* Parameters that shape the state: a restore under another
     * configuration is refused rather than silently continued. */
    dp_buf_put_u64(b, w->cfg.horizon);
    dp_buf_put_u32(b, w->cfg.k);
    dp_buf_put_u32(b, w->cfg.categories);
    dp_buf_put_u64(b, w->sigma2_q.num);
    dp_buf_put_u64(b, w->sigma2_q.den);
    dp_buf_put_u64(b, w->n_pad);
    dp_buf_put_u64(b, w->done);
    dp_buf_put_u8(b, (uint8_t)w->exhausted);
    dp_buf_put_u64(b, w->m);
    for (uint64_t s = 0; s < w->bins; s++)
        dp_buf_put_i64(b, w->p[s]);
    dp_packed_save(&w->pop, b);
    int rc = dp_ledger_save(&w->ledger, b);
    return rc != DP_OK ? rc : dp_buf_status(b);
}

static int window_release_load(dp_release_half *rel, dp_reader *r)
{
    window_release *w = (window_release *)rel;
    if (dp_reader_u32(r) != WINDOW_REL_MAGIC || dp_reader_u64(r) != w->cfg.horizon ||
        dp_reader_u32(r) != w->cfg.k || dp_reader_u32(r) != w->cfg.categories ||
        dp_reader_u64(r) != w->sigma2_q.num || dp_reader_u64(r) != w->sigma2_q.den ||
        dp_reader_u64(r) != w->n_pad)
        return DP_ECORRUPT;
    w->done = dp_reader_u64(r);
    w->exhausted = dp_reader_u8(r) != 0;
    w->m = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || w->done > w->cfg.horizon || w->m > UINT32_MAX - 1)
        return DP_ECORRUPT;
    /* Same range checks as a fresh state: every count in 0..m, and the
     * sum (in 128 bits: no overflow whatever the values) exactly m. */
    __int128 sum = 0;
    for (uint64_t s = 0; s < w->bins; s++) {
        w->p[s] = dp_reader_i64(r);
        if (w->p[s] < 0 || (uint64_t)w->p[s] > w->m)
            return DP_ECORRUPT;
        sum += w->p[s];
    }
    int rc = dp_packed_load(&w->pop, r);
    if (rc != DP_OK)
        return rc;
    if (w->pop.n != w->m || sum != (__int128)w->m)
        return DP_ECORRUPT;
    for (uint64_t i = 0; i < w->m; i++)
        if (dp_packed_get(&w->pop, (size_t)i) >= w->bins)
            return DP_ECORRUPT;
    free(w->idx);
    if (!(w->idx = malloc((w->m ? w->m : 1) * sizeof *w->idx)))
        return DP_ENOMEM;
    return dp_ledger_load(&w->ledger, r);
}

static uint64_t window_next_step(const dp_release_half *rel)
{
    return ((const window_release *)rel)->done + 1;
}

/* The plan (synth.h): nothing before step k, then R = T−k+1 equal exact
 * spends of ρ/R; the figures the budget events carry at every step. */
static int window_release_describe(const dp_release_half *rel, dp_synth_plan *out)
{
    const window_release *w = (const window_release *)rel;
    const dp_long_config *c = &w->cfg;
    out->mechanism = "window/discrete_gaussian";
    out->unit = "user-level over horizon T";
    out->neighbors = dp_long_neighbors_name(c);
    out->public_inputs = dp_long_public_inputs(c);
    dp_plan_budget(out, DP_PRIVACY_ZCDP, c->rho, c->delta);
    out->horizon = c->horizon;
    out->composition = "sequential";
    out->spend_rule = "steps before k release nothing and spend nothing; each of the T-k+1 steps k..T releases "
                      "and spends rho/(T-k+1)";
    int rc = DP_OK;
    if (c->k > 1)
        rc = dp_plan_run_add(out, 1, c->k - 1, 0);
    if (rc == DP_OK)
        rc = dp_plan_run_add(out, c->k, c->horizon, dp_ledger_units_value(&w->ledger, 1ull << WINDOW_UNIT_BITS));
    dp_plan_kv(out->spend, &out->n_spend, "releases", (double)w->releases);
    dp_plan_kv(out->spend, &out->n_spend, "spent_step", dp_ledger_units_value(&w->ledger, 1ull << WINDOW_UNIT_BITS));
    dp_plan_kv(out->noise, &out->n_noise, "sigma2", w->sigma2);
    dp_plan_kv(out->noise, &out->n_noise, "n_pad", (double)w->n_pad);
    dp_plan_kv(out->noise, &out->n_noise, "bins", (double)w->bins);
    dp_plan_kv(out->noise, &out->n_noise, "padding_records", (double)w->bins * (double)w->n_pad);
    dp_plan_kv(out->accuracy, &out->n_accuracy, "beta", c->beta);
    dp_plan_kv(out->accuracy, &out->n_accuracy, "max_abs_error", w->bound);
    return rc;
}

const dp_synth_ops dp_synth_ops_window = {
    .name = "window",
    .example_config = "{\"horizon\":6,\"k\":2,\"categories\":2,\"rho\":1}",
    .budget_zcdp_only = 1,
    .shards_by_entity = 1,
    .update_kind = DP_UPDATE_REPORT,
    .payload_kind = DP_PAYLOAD_CATEGORY,
    .ingest_create = window_ingest_create,
    .ingest_update = dp_lingest_half_update,
    .ingest_update_batch = dp_lingest_half_update_batch,
    .ingest_close = window_ingest_close,
    .ingest_roster_complete = dp_lingest_half_roster_complete,
    .ingest_open_step = dp_lingest_half_open_step,
    .release_next_step = window_next_step,
    .ingest_save = dp_lingest_half_save,
    .ingest_load = dp_lingest_half_load,
    .ingest_destroy = window_ingest_destroy,
    .release_create = window_release_create,
    .release_step = window_release_step,
    .release_exhausted = window_release_exhausted,
    .release_save = window_release_save,
    .release_load = window_release_load,
    .release_destroy = window_release_destroy,
    .release_ledger = window_release_ledger,
    .release_describe = window_release_describe,
    .release_last_step = window_last_step,
};
