/* adaptive.c — the release half of `adaptive`: DSFT and DSAT (Li, Xiong,
 * Jiang, Liu 2015, Alg. 1–2) corrected to be differentially private
 * (docs/privacy.md §7), and the w-event baselines BD and BA (Kellaris,
 * Papadopoulos, Xiao, Papadias 2014, Alg. 2–3).
 *
 * DSFT / DSAT, user-level ε-DP over the horizon N (add/remove one user's
 * whole series; each user holds one value per snapshot).  ε₁ = kε for the
 * decisions, ε₂ = (1−k)ε for at most C releases of ε₂/C each.
 *  - Step 1 releases H_1 + DLap(C/ε₂) per bin unconditionally: one user
 *    changes one bin by 1, so each release is (ε₂/C)-DP; C releases, ε₂.
 *  - Later steps: the distance d_i = ‖H_i/max(n_i, n_min) − H̃_j/ñ_j‖₁ to the
 *    last release H̃_j (ñ_j its clamped total) has sensitivity Δ = 2/n_min
 *    at every step at once (one user more moves H/max(n, n_min) by at most
 *    2/(n+1) <= 2/n_min in L1 when n >= n_min, by 1/n_min below it).  The
 *    published rules are not DP (§7: DSFT forgets the 2Δ shift, DSAT clamps
 *    the noisy threshold), so the decision is Lyu, Su, Li 2017's SVT (Alg. 1)
 *    with c = C − 1 positives: ρ ~ Lap(Δ/ε_a) drawn once, each query
 *    d_i + Lap(2cΔ/ε_b) >= T_i + ρ, ε_a + ε_b = ε₁, ε_a : ε_b = 1 : (2c)^{2/3}
 *    (their Thm 4's optimum), stopping after c positives: ε₁-DP in all.
 *    The threshold path T_i is public: DSFT keeps T; DSAT moves it by the
 *    proportional PID term, a function of the number of releases so far
 *    and i only (Alg. 2 lines 6–8), clipped to [0, 2] — the clip acts on the
 *    public T_i, never on the noisy threshold T_i + ρ.
 *    (synth/common/svt.h; `unsafe_paper_variant: true` runs the published rules
 *    instead, for comparison only: every budget event says it is not DP.)
 *  - The last step releases with all unspent release budget if fewer than
 *    C releases were made (Alg. 1 line 10; the count is public).
 * d is compared on a 2^20 fixed-point grid: the floored distance moves by
 * at most ⌈Δ·2^20⌉ + 1 grid units, and that is the sensitivity the noise is
 * calibrated to (discrete Laplace, scales rounded up).
 * Ledger: the whole ε, exact units — ε₁ charged at step 1 (SVT's cost is
 * incurred by its run as a whole), ε₂/C at each release.
 *
 * Under w-event privacy all four methods run in adaptive_window.c, each
 * with an integer ledger per window; BD / BA are Kellaris et al.'s
 * baselines.
 *
 * Output: a release is the noisy histogram as synthetic rows (FULL: max(0,
 * H̃[b]) rows of category b) and as `count.<b>` in the manifest; a repeat
 * step is a DELTA with no records whose manifest names the step it repeats.
 * Public (docs/privacy.md §1): the configuration, the step boundaries, and
 * which steps released — the SVT's (or the tests') charged output. */
#include "synth/adaptive/adaptive.h"
#include "synth/adaptive/adaptive_internal.h"

#include "core/dp_error.h"
#include "core/rational.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADAPTIVE_REL_MAGIC 0x32455241u   /* "ARE2": w-event windows in integer units */
#define NAME ADAPTIVE_NAME
#define GRID ADAPTIVE_GRID
#define RELEASE_UNITS ADAPTIVE_RELEASE_UNITS

static void adaptive_release_destroy(dp_release_half *rel)
{
    adaptive_release *m = (adaptive_release *)rel;
    if (!m)
        return;
    dp_ledger_free(&m->ledger);
    free(m->stream_id);
    free(m->noisy);
    free(m->wunits);
    free(m->wpub);
    free(m->wflags);
    free(m->hist);
    free(m->kv);
    free(m->kv_names);
    free(m);
}

static int plan_svt(adaptive_release *m, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    double k = c->decision_fraction, C = (double)c->max_releases;
    m->units_decision = (uint64_t)llround(k / (1 - k) * C * (double)RELEASE_UNITS);
    if (m->units_decision < 1)
        m->units_decision = 1;
    uint64_t total = m->units_decision + c->max_releases * RELEASE_UNITS;
    int rc = dp_ledger_init_exact(&m->ledger, DP_PRIVACY_PURE, c->epsilon, total, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    double eps1 = dp_ledger_units_value(&m->ledger, m->units_decision);
    m->eps_release = dp_ledger_units_value(&m->ledger, RELEASE_UNITS);
    double delta = 2.0 / (double)c->n_min;
    m->delta_grid = (int64_t)ceil(delta * GRID) + 1;
    if ((rc = adaptive_prepare_dlap(&m->release_noise, 1.0 / m->eps_release, "release", errstr, errstr_size)) != DP_OK)
        return rc;
    if (c->max_releases > 1 &&   /* c = C − 1 positives after the unconditional first release */
        (rc = dp_svt_prepare(&m->svt, eps1, c->max_releases - 1, c->max_releases, m->delta_grid,
                             (int64_t)(2 * GRID), c->unsafe_paper, errstr, errstr_size)) != DP_OK)
        return rc;
    m->T = c->threshold;
    return dp_ledger_check_plan(&m->ledger, (dp_privacy){DP_PRIVACY_PURE, eps1 + C * m->eps_release}, errstr,
                                errstr_size);
}

static int adaptive_release_create(dp_release_half **out, const json_t *config, const dp_synth_env *env,
                                   char *errstr, size_t errstr_size)
{
    *out = NULL;
    adaptive_release *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_adaptive_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    const dp_adaptive_config *c = &m->cfg;
    m->key = env->key;
    m->stream_id_len = env->stream_id ? env->stream_id_len : 0;
    uint32_t U = c->categories;
    if (!(m->stream_id = malloc(m->stream_id_len + 1)) || !(m->noisy = calloc(U, sizeof *m->noisy)) ||
        !(m->hist = calloc(U, sizeof *m->hist)) || !(m->kv = calloc(U + 16, sizeof *m->kv)) ||
        !(m->kv_names = calloc(U, sizeof *m->kv_names)) ||
        (c->w_event && (!(m->wunits = calloc(c->w, sizeof *m->wunits)) ||
                        !(m->wpub = calloc(c->w, sizeof *m->wpub)) ||
                        !(m->wflags = calloc(c->w, sizeof *m->wflags))))) {
        adaptive_release_destroy((dp_release_half *)m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (m->stream_id_len)
        memcpy(m->stream_id, env->stream_id, m->stream_id_len);
    m->stream_id[m->stream_id_len] = '\0';
    for (uint32_t b = 0; b < U; b++)
        snprintf(m->kv_names[b], sizeof m->kv_names[b], "count.%u", b);
    rc = c->method >= DP_ADAPTIVE_BD ? adaptive_plan_bd_ba(m, errstr, errstr_size)
         : c->w_event                ? adaptive_plan_svt_window(m, errstr, errstr_size)
                                     : plan_svt(m, errstr, errstr_size);
    if (rc != DP_OK) {
        adaptive_release_destroy((dp_release_half *)m);
        return rc;
    }
    *out = (dp_release_half *)m;
    return DP_OK;
}

/* --- user-level DSFT / DSAT ------------------------------------------------------------ */

static int step_svt(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    int rc = DP_OK;
    uint64_t before = m->ledger.units_spent;
    if (i == 1) {
        /* the SVT's ε₁ (its threshold noise is drawn now) and the first release */
        if ((rc = dp_ledger_spend_units(&m->ledger, i, NAME "/svt", m->units_decision, errstr, errstr_size)))
            return rc;
        if (c->max_releases > 1)
            adaptive_svt_start(m, 1);
        if ((rc = dp_ledger_spend_units(&m->ledger, i, NAME "/release", RELEASE_UNITS, errstr, errstr_size)))
            return rc;
        adaptive_release_histogram(m, i, &m->release_noise);
    } else if (m->releases < c->max_releases) {
        int decide = 1;
        if (c->method == DP_ADAPTIVE_DSAT) {
            decide = i > c->burn_in;
            if (decide)   /* the release rate so far against C/N */
                adaptive_dsat_threshold(m, (double)m->releases / (double)i -
                                               (double)c->max_releases / (double)c->horizon);
        }
        if (decide) {
            if (adaptive_svt_positive(m, i)) {
                if ((rc = dp_ledger_spend_units(&m->ledger, i, NAME "/release", RELEASE_UNITS, errstr, errstr_size)))
                    return rc;
                adaptive_release_histogram(m, i, &m->release_noise);
            }
        }
        if (!m->released && i == c->horizon) {
            /* Alg. 1 line 10: the unspent release budget on the last snapshot */
            uint64_t left = (c->max_releases - m->releases) * RELEASE_UNITS;
            dp_dlap last;
            if ((rc = adaptive_prepare_dlap(&last, 1.0 / dp_ledger_units_value(&m->ledger, left), "last release",
                                            errstr, errstr_size)) ||
                (rc = dp_ledger_spend_units(&m->ledger, i, NAME "/release", left, errstr, errstr_size)))
                return rc;
            adaptive_release_histogram(m, i, &last);
        }
    }
    m->units_step = m->ledger.units_spent - before;
    m->units_step_decision = i == 1 ? m->units_decision : 0;
    return DP_OK;
}

/* --- output --------------------------------------------------------------------------- */

static const char *mechanism(const dp_adaptive_config *c)
{
    static const char *const MECH[] = {NAME "/dsat+svt+discrete_laplace", NAME "/dsft+svt+discrete_laplace",
                                       NAME "/bd+discrete_laplace", NAME "/ba+discrete_laplace"};
    static const char *const UNSAFE[] = {
        NAME "/dsat-published-rules: NOT DIFFERENTIALLY PRIVATE (the noisy threshold is clipped; comparison only)",
        NAME "/dsft-published-rules: NOT DIFFERENTIALLY PRIVATE (1.5x the stated decision budget; comparison only)"};
    return c->unsafe_paper ? UNSAFE[c->method] : MECH[c->method];
}

/* The protected unit, as the budget events and the plan state it. */
static const char *unit_text(const dp_adaptive_config *c)
{
    if (!c->w_event)
        return c->standing ? "user-level: a user's whole series of reports over the horizon (each snapshot holds "
                             "every user's standing value)"
                           : "user-level: a user's whole series of reports over the horizon (each snapshot holds "
                             "the reports made in its step)";
    return c->standing ? "w-event over standing values (opt-in): a report stands in every later snapshot until the "
                         "user's next report, so it is protected for the w steps of any window it stands in: a value "
                         "standing k steps costs ceil(k/w)*epsilon; noise calibrated for a replacement (L1 = 2)"
                       : "w-event: a user's reports in any w consecutive steps (each snapshot holds only the reports "
                         "made in its step, so a report is in exactly one snapshot)";
}

#define PUBLIC_INPUTS                                                                                                 \
    "the configuration (categories, budget, horizon, n_min, thresholds) and the step boundaries; which steps release " \
    "is the mechanism's charged output"

/* ε of `units` in this stream's ledger: the whole stream's (user-level) or a window's (w-event). */
static double units_value(const adaptive_release *m, uint64_t units)
{
    return m->cfg.w_event ? adaptive_window_value(m, units) : dp_ledger_units_value(&m->ledger, units);
}

static int emit(adaptive_release *m, uint64_t step, const dp_release_sink *sink)
{
    const dp_adaptive_config *c = &m->cfg;
    uint64_t records = 0;
    if (m->released) {
        for (uint32_t b = 0; b < c->categories; b++)
            for (int64_t k = 0; k < m->noisy[b]; k++) {
                dp_synth_record r = {.synthetic_id = records++, .value = {.kind = DP_PAYLOAD_CATEGORY, .category = b}};
                int rc = sink->record ? sink->record(sink->ctx, &r) : 0;
                if (rc != 0)
                    return rc;
            }
    }
    size_t n = 0;
    dp_kv *kv = m->kv;
    kv[n++] = (dp_kv){"released", m->released};
    kv[n++] = (dp_kv){"repeat_of", m->released ? 0 : (double)m->last_release};
    kv[n++] = (dp_kv){"releases", (double)m->releases};
    if (c->method < DP_ADAPTIVE_BD)
        kv[n++] = (dp_kv){"threshold", m->T};
    for (uint32_t b = 0; b < c->categories && m->released; b++)
        kv[n++] = (dp_kv){m->kv_names[b], (double)m->noisy[b]};
    dp_release_manifest man = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .synthesizer = NAME,
        .mode = m->released ? DP_RELEASE_FULL : DP_RELEASE_DELTA,
        .record_count = records,
        .debias = kv,
        .n_debias = n,
    };
    int rc = sink->manifest ? sink->manifest(sink->ctx, &man) : 0;
    if (rc != 0)
        return rc;
    dp_kv noise_svt[] = {{"dp", c->unsafe_paper ? 0 : 1},
                         {"decision_spent_step", units_value(m, m->units_step_decision)},
                         {"release_spent_step", units_value(m, m->units_step - m->units_step_decision)},
                         {"svt_epsilon_threshold", m->svt.eps_a},
                         {"svt_epsilon_queries", m->svt.eps_b},
                         {"distance_sensitivity", c->n_min ? 2.0 / (double)c->n_min : 0},
                         {"release_sensitivity", (double)c->sensitivity},
                         {"release_scale", m->eps_release > 0 ? (double)c->sensitivity / m->eps_release : 0},
                         {"max_releases", (double)c->max_releases}};
    dp_kv noise_win[] = {{"dp", 1},
                         {"decision_spent_step", units_value(m, m->units_step_decision)},
                         {"release_spent_step", units_value(m, m->units_step - m->units_step_decision)},
                         {"dissimilarity_scale", (double)c->sensitivity / adaptive_window_value(m, m->units_test)},
                         {"release_sensitivity", (double)c->sensitivity},
                         {"publication_epsilon", m->last_eps2},
                         {"w", (double)c->w}};
    dp_budget_event e = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .status = m->exhausted ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE,
        .mechanism = mechanism(c),
        .unit = unit_text(c),
        .neighbors = "add_remove",
        .public_inputs = PUBLIC_INPUTS,
        .model = DP_PRIVACY_PURE,
        .noise = c->method >= DP_ADAPTIVE_BD ? noise_win : noise_svt,
        .n_noise = c->method >= DP_ADAPTIVE_BD ? sizeof noise_win / sizeof noise_win[0]
                                               : sizeof noise_svt / sizeof noise_svt[0],
        .delta = 0,
        .eps_simple = NAN,
        .spent_step = units_value(m, m->units_step),
        .spent_units_step = m->units_step,
    };
    if (c->w_event) {   /* the current window's exact ledger: at most ε, B units */
        e.spent_units_total = m->units_spent_window;
        e.budget_units = m->units_window;
        e.spent_total = adaptive_window_value(m, m->units_spent_window);
        e.budget_total = c->epsilon;
    } else {
        e.spent_units_total = m->ledger.units_spent;
        e.budget_units = m->ledger.units_total;
        e.spent_total = m->ledger.spent;
        e.budget_total = m->ledger.budget;
    }
    e.eps_cks = e.spent_total;
    return sink->budget ? sink->budget(sink->ctx, &e) : 0;
}

static int adaptive_release_step(dp_release_half *rel, uint64_t step, const dp_stats *st,
                                 const dp_release_sink *sink, char *errstr, size_t errstr_size)
{
    adaptive_release *m = (adaptive_release *)rel;
    const dp_adaptive_config *c = &m->cfg;
    if (m->exhausted)
        return dp_err(errstr, errstr_size, DP_EHORIZON, NAME ": stream exhausted");
    if (step != m->done + 1 || st->step != step || !st->sorted)
        return dp_err(errstr, errstr_size, DP_ESTATE, NAME ": statistics for step %llu, expected %llu",
                      (unsigned long long)st->step, (unsigned long long)(m->done + 1));
    memset(m->hist, 0, c->categories * sizeof *m->hist);
    for (size_t i = 0; i < st->n_cells; i++) {
        if (st->keys[i] >= c->categories || st->counts[i] < 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": histogram statistic out of range");
        m->hist[st->keys[i]] = st->counts[i];
    }
    m->released = 0;
    int rc = c->method >= DP_ADAPTIVE_BD ? adaptive_step_bd_ba(m, step, errstr, errstr_size)
             : c->w_event                ? adaptive_step_svt_window(m, step, errstr, errstr_size)
                                         : step_svt(m, step, errstr, errstr_size);
    if (rc != DP_OK) {
        m->exhausted = 1;   /* fail closed */
        return rc;
    }
    m->done = step;
    if (step >= c->horizon)
        m->exhausted = 1;
    return emit(m, step, sink);
}

static int adaptive_release_exhausted(const dp_release_half *rel) { return ((const adaptive_release *)rel)->exhausted; }

static const dp_ledger *adaptive_release_ledger(const dp_release_half *rel)
{
    const adaptive_release *m = (const adaptive_release *)rel;
    return m->cfg.w_event ? NULL : &m->ledger;
}

static uint64_t adaptive_next_step(const dp_release_half *rel) { return ((const adaptive_release *)rel)->done + 1; }

/* The last step the plan releases (synth.h): the horizon; adaptive exhausts by it alone
 * (and fails closed on a refused step), so an ingest-only bundle of a sharded
 * stream stops where the combined close would (docs/kafka.md §10). */
static uint64_t adaptive_last_step(const dp_release_half *rel)
{
    return ((const adaptive_release *)rel)->cfg.horizon;
}

/* The plan (synth.h).  Which steps release is the mechanism's output, so
 * there are no per-step runs: the named spends say what a decision and a
 * release cost and how many there can be. */
static int adaptive_release_describe(const dp_release_half *rel, dp_synth_plan *out)
{
    const adaptive_release *m = (const adaptive_release *)rel;
    const dp_adaptive_config *c = &m->cfg;
    out->mechanism = mechanism(c);
    out->unit = unit_text(c);
    out->neighbors = "add_remove";
    out->public_inputs = PUBLIC_INPUTS;
    dp_plan_budget(out, DP_PRIVACY_PURE, c->epsilon, 0);
    out->horizon = c->horizon;
    out->composition = c->w_event ? "w_event" : "sequential";
    if (c->w_event)
        adaptive_describe_window(m, out);
    else {
        out->spend_rule = "step 1 spends decision_epsilon (the sparse vector's whole cost) and release_epsilon (the "
                          "first release); each later release spends release_epsilon, at most max_releases in all; "
                          "steps that repeat the last release spend nothing; the last step releases with what is left "
                          "if fewer were made";
        dp_plan_kv(out->spend, &out->n_spend, "decision_epsilon", dp_ledger_units_value(&m->ledger, m->units_decision));
        dp_plan_kv(out->spend, &out->n_spend, "release_epsilon", m->eps_release);
        dp_plan_kv(out->spend, &out->n_spend, "max_releases", (double)c->max_releases);
    }
    dp_plan_kv(out->noise, &out->n_noise, "dp", c->unsafe_paper ? 0 : 1);
    dp_plan_kv(out->noise, &out->n_noise, "release_sensitivity", (double)c->sensitivity);
    if (c->method >= DP_ADAPTIVE_BD) {
        dp_plan_kv(out->noise, &out->n_noise, "w", (double)c->w);
        return DP_OK;
    }
    dp_plan_kv(out->noise, &out->n_noise, "svt_epsilon_threshold", m->svt.eps_a);
    dp_plan_kv(out->noise, &out->n_noise, "svt_epsilon_queries", m->svt.eps_b);
    dp_plan_kv(out->noise, &out->n_noise, "distance_sensitivity", 2.0 / (double)c->n_min);
    dp_plan_kv(out->noise, &out->n_noise, "release_scale",
               m->eps_release > 0 ? (double)c->sensitivity / m->eps_release : 0);
    dp_plan_kv(out->noise, &out->n_noise, "threshold", c->threshold);
    return DP_OK;
}

/* --- snapshots ------------------------------------------------------------------------ */

static int adaptive_release_save(const dp_release_half *rel, dp_buf *b)
{
    const adaptive_release *m = (const adaptive_release *)rel;
    const dp_adaptive_config *c = &m->cfg;
    dp_buf_put_u32(b, ADAPTIVE_REL_MAGIC);
    dp_buf_put_u32(b, c->categories);
    dp_buf_put_u8(b, (uint8_t)c->method);
    dp_buf_put_u8(b, (uint8_t)c->unsafe_paper);
    dp_buf_put_u8(b, (uint8_t)c->standing);
    dp_buf_put_f64(b, c->epsilon);
    dp_buf_put_u64(b, m->done);
    dp_buf_put_u8(b, (uint8_t)m->exhausted);
    dp_buf_put_u64(b, m->releases);
    dp_buf_put_u64(b, m->last_release);
    dp_buf_put_i64(b, m->svt.rho);
    dp_buf_put_i64(b, m->svt.noisy_threshold);
    dp_buf_put_f64(b, m->T);
    dp_buf_put_u64(b, m->nullified_until);
    dp_buf_put_u64(b, m->units_spent_window);
    for (uint32_t k = 0; k < c->categories; k++)
        dp_buf_put_i64(b, m->noisy[k]);
    for (uint32_t k = 0; c->w_event && k < c->w; k++) {
        dp_buf_put_u64(b, m->wunits[k]);
        dp_buf_put_u64(b, m->wpub[k]);
        dp_buf_put_u8(b, m->wflags[k]);
    }
    if (!c->w_event) {
        uint8_t *p = NULL;
        size_t len = 0;
        int rc = dp_ledger_serialize(&m->ledger, &p, &len);
        if (rc != DP_OK)
            return rc;
        dp_buf_put_blob(b, p, len);
        free(p);
    }
    return dp_buf_status(b);
}

static int adaptive_release_load(dp_release_half *rel, dp_reader *r)
{
    adaptive_release *m = (adaptive_release *)rel;
    const dp_adaptive_config *c = &m->cfg;
    if (dp_reader_u32(r) != ADAPTIVE_REL_MAGIC || dp_reader_u32(r) != c->categories ||
        dp_reader_u8(r) != (uint8_t)c->method || dp_reader_u8(r) != (uint8_t)c->unsafe_paper ||
        dp_reader_u8(r) != (uint8_t)c->standing || dp_reader_f64(r) != c->epsilon)
        return DP_ECORRUPT;
    m->done = dp_reader_u64(r);
    m->exhausted = dp_reader_u8(r) != 0;
    m->releases = dp_reader_u64(r);
    m->last_release = dp_reader_u64(r);
    m->svt.rho = dp_reader_i64(r);
    m->svt.noisy_threshold = dp_reader_i64(r);
    m->T = dp_reader_f64(r);
    m->nullified_until = dp_reader_u64(r);
    m->units_spent_window = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || m->done > c->horizon || m->releases > m->done ||
        m->last_release > m->done || !(m->T >= 0 && m->T <= 2) || m->nullified_until > c->horizon + c->w ||
        m->units_spent_window > m->units_window || llabs(m->svt.rho) > ((int64_t)1 << 60) ||
        m->svt.noisy_threshold < -((int64_t)1 << 60) || m->svt.noisy_threshold > ((int64_t)1 << 60) ||
        (!c->w_event && m->releases > c->max_releases))
        return DP_ECORRUPT;
    for (uint32_t k = 0; k < c->categories; k++) {
        m->noisy[k] = dp_reader_i64(r);
        if (llabs(m->noisy[k]) > ((int64_t)1 << 50))
            return DP_ECORRUPT;
    }
    for (uint32_t k = 0; c->w_event && k < c->w; k++) {
        m->wunits[k] = dp_reader_u64(r);
        m->wpub[k] = dp_reader_u64(r);
        m->wflags[k] = dp_reader_u8(r);
        if (m->wunits[k] > m->units_window || m->wpub[k] > m->wunits[k] || m->wflags[k] > 3)
            return DP_ECORRUPT;
    }
    if (!c->w_event) {
        size_t len;
        const uint8_t *p = dp_reader_blob(r, &len);
        dp_ledger l;
        char why[128];
        if (!p || dp_ledger_deserialize(&l, p, len, why, sizeof why) != DP_OK)
            return DP_ECORRUPT;
        if (l.units_total != m->ledger.units_total || l.budget != m->ledger.budget || l.model != m->ledger.model) {
            dp_ledger_free(&l);
            return DP_ECORRUPT;
        }
        dp_ledger_free(&m->ledger);
        m->ledger = l;
    }
    return dp_reader_status(r);
}

const dp_synth_ops dp_synth_ops_adaptive = {
    .name = NAME,
    .example_config = "{\"categories\":3,\"epsilon\":1,\"horizon\":6,\"method\":\"ba\",\"privacy\":\"w_event\",\"w\":3}",
    .shards_by_entity = 1,
    .update_kind = DP_UPDATE_REPORT,
    .payload_kind = DP_PAYLOAD_CATEGORY,
    .ingest_create = dp_adaptive_ingest_create,
    .ingest_update = dp_adaptive_ingest_update,
    .ingest_close = dp_adaptive_ingest_close,
    .ingest_roster_complete = dp_adaptive_ingest_roster_complete,
    .ingest_save = dp_adaptive_ingest_save,
    .ingest_load = dp_adaptive_ingest_load,
    .ingest_destroy = dp_adaptive_ingest_destroy,
    .ingest_open_step = dp_adaptive_ingest_open_step,
    .release_create = adaptive_release_create,
    .release_step = adaptive_release_step,
    .release_exhausted = adaptive_release_exhausted,
    .release_save = adaptive_release_save,
    .release_load = adaptive_release_load,
    .release_destroy = adaptive_release_destroy,
    .release_ledger = adaptive_release_ledger,
    .release_next_step = adaptive_next_step,
    .release_last_step = adaptive_last_step,
    .release_describe = adaptive_release_describe,
};
