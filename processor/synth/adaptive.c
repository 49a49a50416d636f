/* adaptive.c — the release half of `adaptive`: DSFT and DSAT (Li, Xiong,
 * Jiang, Liu 2015, Alg. 1–2) corrected to be differentially private
 * (ALGORITHMS.md §7), and the w-event baselines BD and BA (Kellaris,
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
 *    (synth/svt.h; `unsafe_paper_variant: true` runs the published rules
 *    instead, for comparison only: every budget event says it is not DP.)
 *  - The last step releases with all unspent release budget if fewer than
 *    C releases were made (Alg. 1 line 10; the count is public).
 * d is compared on a 2^20 fixed-point grid: the floored distance moves by
 * at most ⌈Δ·2^20⌉ + 1 grid units, and that is the sensitivity the noise is
 * calibrated to (discrete Laplace, scales rounded up).
 * Ledger: the whole ε, exact units — ε₁ charged at step 1 (SVT's cost is
 * incurred by its run as a whole), ε₂/C at each release.
 *
 * DSFT / DSAT, w-event ε-DP (the paper's Alg. 3, corrected as ALGORITHMS.md
 * §7): the decisions run as a chain of AboveThreshold instances (svt.h with
 * c = 1), each ε_AT = ε₁/(C+1), a new one (a fresh ρ) after every positive;
 * a decision is only made while the last w−1 steps released fewer than C
 * times, so at most C positives fall in any window and at most C+1
 * instances overlap it: ε₁.  Each release costs ε₂/C, at most C per window:
 * ε₂.  The threshold path is public as above, its rate counted in the window.
 * Step 1 releases unconditionally (it counts against its windows).
 *
 * BD / BA, w-event ε-DP (any w consecutive steps of a user's reports).
 * Each step's dissimilarity S_i = Σ_b |H_i[b] − H̃[b]| (sensitivity 1)
 * gets DLap(w/(f·ε)) (f·ε/w per step, f·ε per window, f = test_fraction,
 * ½ in Kellaris et al.); publication budgets come from the other (1−f)ε:
 *  - BD: ε_{i,2} = ((1−f)ε − Σ_{last w−1 steps} ε_{m,2})/2
 *  - BA: ε_u = (1−f)ε/w; after a publication with ε_{l,2} the next
 *    ε_{l,2}/ε_u − 1 steps are nullified (republish, spend nothing); then
 *    ε_{i,2} = ε_u·min(t_A, w), t_A the steps absorbed since.
 * Publish H_i + DLap(1/ε_{i,2}) if S̃_i/U > 1/ε_{i,2}, else republish.  The
 * window sums (publications + f·ε of tests) are checked at every step
 * (fail closed).  Step 1 publishes
 * without a test, with the method's ε_{1,2}.
 *
 * Output: a release is the noisy histogram as synthetic rows (FULL: max(0,
 * H̃[b]) rows of category b) and as `count.<b>` in the manifest; a repeat
 * step is a DELTA with no records whose manifest names the step it repeats.
 * Public (ALGORITHMS.md §1): the configuration, the step boundaries, and
 * which steps released — the SVT's (or the tests') charged output. */
#include "synth/adaptive.h"

#include "core/dp_error.h"
#include "core/rational.h"
#include "core/sample.h"
#include "synth/svt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADAPTIVE_REL_MAGIC 0x4c455241u   /* "AREL" */
#define NAME "adaptive"
#define GRID_BITS 20
#define GRID ((double)(1 << GRID_BITS))
#define RELEASE_UNITS ((uint64_t)1 << 16)

typedef struct adaptive_release {
    dp_adaptive_config cfg;
    const dp_key      *key;
    char              *stream_id;
    size_t             stream_id_len;
    /* plan: dsat / dsft */
    uint64_t           units_decision;      /* ε₁ in ledger units; each release RELEASE_UNITS */
    double             eps_release;         /* ε₂/C */
    int64_t            delta_grid;          /* ⌈Δ·2^20⌉ + 1 */
    dp_svt             svt;
    dp_dlap            release_noise;
    /* plan: bd / ba */
    dp_dlap            dis_noise;           /* DLap(2w/ε) */
    /* state */
    uint64_t           done;
    int                exhausted;
    uint64_t           releases, last_release;
    double             T;
    int64_t           *noisy;               /* H̃ of the last release */
    double            *window;              /* w-event: ε spent at each of the last w steps (ring) */
    uint8_t           *wflags;              /* w-event dsat/dsft: 1 released, 2 positive, per step (ring) */
    uint64_t           nullified_until;     /* ba */
    dp_ledger          ledger;              /* dsat/dsft: the whole stream */
    /* the last step, for its events */
    int                released;
    double             spent_step, spent_window;
    double             spent_decision;      /* the part of spent_step for decisions (SVT, tests) */
    double             last_eps2;
    /* scratch */
    int64_t           *hist;
    dp_kv             *kv;
    char             (*kv_names)[24];
} adaptive_release;

static void adaptive_release_destroy(dp_release_half *rel)
{
    adaptive_release *m = (adaptive_release *)rel;
    if (!m)
        return;
    dp_ledger_free(&m->ledger);
    free(m->stream_id);
    free(m->noisy);
    free(m->window);
    free(m->wflags);
    free(m->hist);
    free(m->kv);
    free(m->kv_names);
    free(m);
}

static int prepare_dlap(dp_dlap *d, double scale, const char *what, char *errstr, size_t errstr_size)
{
    dp_rational q;
    char why[256] = "";
    if (!(scale > 0) || dp_rational_from_double_up(scale, &q) != DP_OK || dp_dlap_prepare(d, q, why, sizeof why))
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": %s noise scale %g out of range%s%s", what, scale,
                      why[0] ? ": " : "", why);
    return DP_OK;
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
    if ((rc = prepare_dlap(&m->release_noise, 1.0 / m->eps_release, "release", errstr, errstr_size)) != DP_OK)
        return rc;
    if (c->max_releases > 1 &&   /* c = C − 1 positives after the unconditional first release */
        (rc = dp_svt_prepare(&m->svt, eps1, c->max_releases - 1, c->max_releases, m->delta_grid,
                             (int64_t)(2 * GRID), c->unsafe_paper, errstr, errstr_size)) != DP_OK)
        return rc;
    m->T = c->threshold;
    return dp_ledger_check_plan(&m->ledger, (dp_privacy){DP_PRIVACY_PURE, eps1 + C * m->eps_release}, errstr,
                                errstr_size);
}

/* w-event DSFT/DSAT: ε₁ = kε over the window's C+1 AboveThreshold
 * instances, ε₂ = (1−k)ε over its C releases. */
static int plan_svt_window(adaptive_release *m, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    double eps1 = c->decision_fraction * c->epsilon, C = (double)c->max_releases;
    m->eps_release = (c->epsilon - eps1) / C;
    m->delta_grid = (int64_t)ceil(2.0 / (double)c->n_min * GRID) + 1;
    m->T = c->threshold;
    int rc = prepare_dlap(&m->release_noise, 1.0 / m->eps_release, "release", errstr, errstr_size);
    if (rc == DP_OK)
        rc = dp_svt_prepare(&m->svt, eps1 / (C + 1), 1, 1, m->delta_grid, (int64_t)(2 * GRID), 0, errstr, errstr_size);
    return rc;
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
        (c->w_event && (!(m->window = calloc(c->w, sizeof *m->window)) ||
                        !(m->wflags = calloc(c->w, sizeof *m->wflags))))) {
        adaptive_release_destroy((dp_release_half *)m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (m->stream_id_len)
        memcpy(m->stream_id, env->stream_id, m->stream_id_len);
    m->stream_id[m->stream_id_len] = '\0';
    for (uint32_t b = 0; b < U; b++)
        snprintf(m->kv_names[b], sizeof m->kv_names[b], "count.%u", b);
    rc = c->method >= DP_ADAPTIVE_BD
             ? prepare_dlap(&m->dis_noise, c->w / (c->test_fraction * c->epsilon), "dissimilarity", errstr,
                            errstr_size)
         : c->w_event ? plan_svt_window(m, errstr, errstr_size)
                      : plan_svt(m, errstr, errstr_size);
    if (rc != DP_OK) {
        adaptive_release_destroy((dp_release_half *)m);
        return rc;
    }
    *out = (dp_release_half *)m;
    return DP_OK;
}

static void step_drbg(const adaptive_release *m, dp_drbg *g, uint64_t step, const char *label)
{
    dp_drbg_init(g, m->key, m->stream_id, m->stream_id_len, step, label);
}

/* H̃ = H + DLap(scale) per bin, from the step's "release" stream. */
static void release_histogram(adaptive_release *m, uint64_t step, const dp_dlap *noise)
{
    dp_drbg g;
    step_drbg(m, &g, step, NAME "/release");
    for (uint32_t b = 0; b < m->cfg.categories; b++)
        m->noisy[b] = m->hist[b] + dp_dlap_sample(noise, &g);
    dp_drbg_wipe(&g);
    m->released = 1;
    m->releases++;
    m->last_release = step;
}

/* --- DSFT / DSAT ------------------------------------------------------------------ */

/* floor(2^20 · ‖H/max(n, n_min) − H̃/ñ‖₁), ñ the released rows' total (uniform if none). */
static int64_t distance_grid(const adaptive_release *m)
{
    const dp_adaptive_config *c = &m->cfg;
    double n = 0, nt = 0;
    for (uint32_t b = 0; b < c->categories; b++) {
        n += (double)m->hist[b];
        nt += m->noisy[b] > 0 ? (double)m->noisy[b] : 0;
    }
    double norm = n > (double)c->n_min ? n : (double)c->n_min, d = 0;
    for (uint32_t b = 0; b < c->categories; b++) {
        double q = nt > 0 ? (m->noisy[b] > 0 ? (double)m->noisy[b] / nt : 0) : 1.0 / c->categories;
        d += fabs((double)m->hist[b] / norm - q);
    }
    return (int64_t)floor(d * GRID);
}

/* DSAT's threshold update (Alg. 2 lines 6–8, proportional term only): the
 * public T_i (corrected) or, in the paper variant, the noisy threshold. */
static void dsat_threshold(adaptive_release *m, double rate)
{
    const dp_adaptive_config *c = &m->cfg;
    double e = fabs(fabs(rate) - c->delta_sp) / c->delta_sp, u = c->theta_p * e;
    m->T = rate <= 0 ? fmax(0, m->T - u) : fmin(2, m->T + u);
    dp_svt_move(&m->svt, (int64_t)floor(u * GRID), rate > 0);
}

/* One sparse-vector decision on this step's distance (its own draw stream). */
static int svt_positive(adaptive_release *m, uint64_t i)
{
    dp_drbg g;
    step_drbg(m, &g, i, NAME "/svt");
    int positive = dp_svt_decide(&m->svt, distance_grid(m), (int64_t)floor(m->T * GRID), &g);
    dp_drbg_wipe(&g);
    return positive;
}

static int step_svt(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    int rc = DP_OK;
    uint64_t before = m->ledger.units_spent;
    if (i == 1) {
        /* the SVT's ε₁ (its threshold noise is drawn now) and the first release */
        if ((rc = dp_ledger_spend_units(&m->ledger, i, NAME "/svt", m->units_decision, errstr, errstr_size)))
            return rc;
        if (c->max_releases > 1) {
            dp_drbg g;
            step_drbg(m, &g, 1, NAME "/rho");
            dp_svt_start(&m->svt, (int64_t)floor(m->T * GRID), &g);
            dp_drbg_wipe(&g);
        }
        if ((rc = dp_ledger_spend_units(&m->ledger, i, NAME "/release", RELEASE_UNITS, errstr, errstr_size)))
            return rc;
        release_histogram(m, i, &m->release_noise);
    } else if (m->releases < c->max_releases) {
        int decide = 1;
        if (c->method == DP_ADAPTIVE_DSAT) {
            decide = i > c->burn_in;
            if (decide)   /* the release rate so far against C/N */
                dsat_threshold(m, (double)m->releases / (double)i - (double)c->max_releases / (double)c->horizon);
        }
        if (decide) {
            if (svt_positive(m, i)) {
                if ((rc = dp_ledger_spend_units(&m->ledger, i, NAME "/release", RELEASE_UNITS, errstr, errstr_size)))
                    return rc;
                release_histogram(m, i, &m->release_noise);
            }
        }
        if (!m->released && i == c->horizon) {
            /* Alg. 1 line 10: the unspent release budget on the last snapshot */
            uint64_t left = (c->max_releases - m->releases) * RELEASE_UNITS;
            dp_dlap last;
            if ((rc = prepare_dlap(&last, 1.0 / dp_ledger_units_value(&m->ledger, left), "last release", errstr,
                                   errstr_size)) ||
                (rc = dp_ledger_spend_units(&m->ledger, i, NAME "/release", left, errstr, errstr_size)))
                return rc;
            release_histogram(m, i, &last);
        }
    }
    m->spent_step = dp_ledger_units_value(&m->ledger, m->ledger.units_spent - before);
    m->spent_decision = i == 1 ? dp_ledger_units_value(&m->ledger, m->units_decision) : 0;
    return DP_OK;
}

/* --- w-event DSFT / DSAT ------------------------------------------------------------- */

/* Steps among the last `last` before this one (m->done + 1) whose flags have `bit`. */
static uint32_t window_count(const adaptive_release *m, uint32_t last, uint8_t bit)
{
    uint32_t n = 0;
    for (uint32_t k = 1; k <= last && k < m->done + 1 && k <= m->cfg.w; k++)
        n += (m->wflags[(m->done + 1 - k) % m->cfg.w] & bit) != 0;
    return n;
}

static void start_instance(adaptive_release *m, uint64_t i)
{
    dp_drbg g;
    step_drbg(m, &g, i, NAME "/rho");
    dp_svt_start(&m->svt, (int64_t)floor(m->T * GRID), &g);
    dp_drbg_wipe(&g);
}

static int step_svt_window(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    uint32_t w = c->w;
    double eps1 = c->decision_fraction * c->epsilon, eps_at = eps1 / ((double)c->max_releases + 1);
    uint8_t flags = 0;
    if (i == 1) {
        release_histogram(m, i, &m->release_noise);
        start_instance(m, i);
        flags = 1;
    } else if (window_count(m, w - 1, 1) < c->max_releases) {
        int decide = 1;
        if (c->method == DP_ADAPTIVE_DSAT) {
            decide = i > c->burn_in;
            if (decide) {   /* the public path, its rate over the window */
                uint64_t span = i < w ? i : w;
                dsat_threshold(m, (double)window_count(m, w - 1, 1) / (double)span - (double)c->max_releases / w);
            }
        }
        if (decide) {
            if (svt_positive(m, i)) {
                release_histogram(m, i, &m->release_noise);
                start_instance(m, i);   /* AboveThreshold restarts */
                flags = 3;
            }
        }
    }
    m->wflags[i % w] = flags;
    /* spends: a release's ε₂/C, and ε_AT for each AboveThreshold instance started (step 1, positives) */
    m->window[i % w] = (flags & 1 ? m->eps_release : 0) + (flags & 2 || i == 1 ? eps_at : 0);
    /* fail closed: the window's instances (positives + 1) and releases */
    uint32_t pos = window_count(m, w - 1, 2) + (flags & 2 ? 1 : 0),
             rel = window_count(m, w - 1, 1) + (flags & 1 ? 1 : 0);
    m->spent_window = (double)(pos + 1) * eps_at + (double)rel * m->eps_release;
    if (rel > c->max_releases || m->spent_window > c->epsilon * (1 + 1e-9))
        return dp_err(errstr, errstr_size, DP_EBUDGET, NAME ": the w-window would spend %g of %g", m->spent_window,
                      c->epsilon);
    m->spent_step = m->window[i % w];
    m->spent_decision = flags & 2 || i == 1 ? eps_at : 0;   /* a new AboveThreshold instance */
    return DP_OK;
}

/* --- BD / BA ---------------------------------------------------------------------- */

static double window_sum(const adaptive_release *m, uint32_t last)   /* the last `last` steps before this one */
{
    double s = 0;
    for (uint32_t k = 1; k <= last && k < m->done + 1 && k <= m->cfg.w; k++)
        s += m->window[(m->done + 1 - k) % m->cfg.w];
    return s;
}

static int step_window(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    uint32_t w = c->w;
    double eps = c->epsilon, f = c->test_fraction, eps_pub = (1 - f) * eps, eps_u = eps_pub / w, eps2 = 0,
           dis_spend = 0;
    int publish = 0;
    if (c->method == DP_ADAPTIVE_BD) {
        eps2 = (eps_pub - window_sum(m, w - 1)) / 2;
    } else {
        /* t_A: the steps since the last nullified one (all of them before any publication) */
        uint64_t absorbed = m->last_release ? (i > m->nullified_until ? i - m->nullified_until : 0) : i;
        eps2 = i <= m->nullified_until ? 0 : eps_u * (double)(absorbed < w ? absorbed : w);
    }
    if (i == 1) {
        publish = eps2 > 0;
    } else if (eps2 > 0) {
        /* the dissimilarity test: f·ε/w */
        dp_drbg g;
        step_drbg(m, &g, i, NAME "/dissimilarity");
        int64_t s = 0;
        for (uint32_t b = 0; b < c->categories; b++)
            s += llabs(m->hist[b] - m->noisy[b]);
        double noisy = (double)(s + dp_dlap_sample(&m->dis_noise, &g));
        dp_drbg_wipe(&g);
        dis_spend = f * eps / w;
        publish = noisy / c->categories > 1.0 / eps2;
    }
    double pub_spend = 0;
    if (publish) {
        dp_dlap noise;
        int rc = prepare_dlap(&noise, 1.0 / eps2, "publication", errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
        release_histogram(m, i, &noise);
        pub_spend = eps2;
        if (c->method == DP_ADAPTIVE_BA)   /* nullify ε_{l,2}/ε_u − 1 steps */
            m->nullified_until = i + (uint64_t)llround(eps2 / eps_u) - 1;
    }
    m->window[i % w] = pub_spend;
    /* fail closed: the window's publications and tests within ε */
    m->spent_window = window_sum(m, w - 1) + pub_spend + f * eps;
    if (m->spent_window > eps * (1 + 1e-9))
        return dp_err(errstr, errstr_size, DP_EBUDGET, NAME ": the w-window would spend %g of %g", m->spent_window,
                      eps);
    m->spent_step = dis_spend + pub_spend;
    m->spent_decision = dis_spend;
    m->last_eps2 = eps2;
    return DP_OK;
}

/* --- output --------------------------------------------------------------------------- */

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
    static const char *const MECH[] = {NAME "/dsat+svt+discrete_laplace", NAME "/dsft+svt+discrete_laplace",
                                       NAME "/bd+discrete_laplace", NAME "/ba+discrete_laplace"};
    static const char *const UNSAFE[] = {
        NAME "/dsat-published-rules: NOT DIFFERENTIALLY PRIVATE (the noisy threshold is clipped; comparison only)",
        NAME "/dsft-published-rules: NOT DIFFERENTIALLY PRIVATE (1.5x the stated decision budget; comparison only)"};
    dp_kv noise_svt[] = {{"dp", c->unsafe_paper ? 0 : 1},
                         {"decision_spent_step", m->spent_decision},
                         {"release_spent_step", m->spent_step - m->spent_decision},
                         {"svt_epsilon_threshold", m->svt.eps_a},
                         {"svt_epsilon_queries", m->svt.eps_b},
                         {"distance_sensitivity", c->n_min ? 2.0 / (double)c->n_min : 0},
                         {"release_scale", m->eps_release > 0 ? 1.0 / m->eps_release : 0},
                         {"max_releases", (double)c->max_releases}};
    dp_kv noise_win[] = {{"decision_spent_step", m->spent_decision},
                         {"release_spent_step", m->spent_step - m->spent_decision},
                         {"dissimilarity_scale", c->w / (c->test_fraction * c->epsilon)},
                         {"publication_epsilon", m->last_eps2},
                         {"w", (double)c->w}};
    dp_budget_event e = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .status = m->exhausted ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE,
        .mechanism = c->unsafe_paper ? UNSAFE[c->method] : MECH[c->method],
        .unit = c->w_event ? "w-event: a user's reports in any w consecutive steps"
                           : "user-level: a user's whole series of reports over the horizon",
        .neighbors = "add_remove",
        .public_inputs = "the configuration (categories, budget, horizon, n_min, thresholds) and the step boundaries; "
                         "which steps release is the mechanism's charged output",
        .model = DP_PRIVACY_PURE,
        .noise = c->method >= DP_ADAPTIVE_BD ? noise_win : noise_svt,
        .n_noise = c->method >= DP_ADAPTIVE_BD ? sizeof noise_win / sizeof noise_win[0]
                                               : sizeof noise_svt / sizeof noise_svt[0],
        .delta = 0,
        .eps_simple = NAN,
        .eps_cks = c->epsilon,
    };
    e.spent_step = m->spent_step;
    if (c->w_event) {
        e.spent_total = m->spent_window;   /* the current window's, at most ε */
        e.budget_total = c->epsilon;
        e.eps_cks = m->spent_window;
    } else {
        e.spent_total = m->ledger.spent;
        e.budget_total = m->ledger.budget;
        e.spent_units_total = m->ledger.units_spent;
        e.budget_units = m->ledger.units_total;
        e.eps_cks = m->ledger.spent;
    }
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
    int rc = c->method >= DP_ADAPTIVE_BD ? step_window(m, step, errstr, errstr_size)
             : c->w_event                ? step_svt_window(m, step, errstr, errstr_size)
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

/* The plan (synth.h).  Which steps release is the mechanism's output, so
 * there are no per-step runs: the named spends say what a decision and a
 * release cost and how many there can be. */
static int adaptive_release_describe(const dp_release_half *rel, dp_synth_plan *out)
{
    const adaptive_release *m = (const adaptive_release *)rel;
    const dp_adaptive_config *c = &m->cfg;
    static const char *const MECH[] = {NAME "/dsat+svt+discrete_laplace", NAME "/dsft+svt+discrete_laplace",
                                       NAME "/bd+discrete_laplace", NAME "/ba+discrete_laplace"};
    static const char *const UNSAFE[] = {
        NAME "/dsat-published-rules: NOT DIFFERENTIALLY PRIVATE (the noisy threshold is clipped; comparison only)",
        NAME "/dsft-published-rules: NOT DIFFERENTIALLY PRIVATE (1.5x the stated decision budget; comparison only)"};
    out->mechanism = c->unsafe_paper ? UNSAFE[c->method] : MECH[c->method];
    out->unit = c->w_event ? "w-event: a user's reports in any w consecutive steps"
                           : "user-level: a user's whole series of reports over the horizon";
    out->neighbors = "add_remove";
    out->public_inputs = "the configuration (categories, budget, horizon, n_min, thresholds) and the step boundaries; "
                         "which steps release is the mechanism's charged output";
    dp_plan_budget(out, DP_PRIVACY_PURE, c->epsilon, 0);
    out->horizon = c->horizon;
    out->composition = c->w_event ? "w_event" : "sequential";
    double C = (double)c->max_releases;
    if (c->method >= DP_ADAPTIVE_BD) {
        out->spend_rule = "every step after the first spends test_fraction*epsilon/w on a noisy dissimilarity test; "
                          "a publication spends its budget from the window's (1 - test_fraction)*epsilon "
                          "(bd: half of what the last w-1 steps left; ba: what the steps it absorbed saved)";
        dp_plan_kv(out->spend, &out->n_spend, "test_epsilon_step", c->test_fraction * c->epsilon / c->w);
        dp_plan_kv(out->spend, &out->n_spend, "publication_epsilon_window", (1 - c->test_fraction) * c->epsilon);
        dp_plan_kv(out->spend, &out->n_spend, "w", (double)c->w);
        dp_plan_kv(out->noise, &out->n_noise, "dissimilarity_scale", c->w / (c->test_fraction * c->epsilon));
        dp_plan_kv(out->noise, &out->n_noise, "w", (double)c->w);
        return DP_OK;
    }
    if (c->w_event) {
        double eps1 = c->decision_fraction * c->epsilon;
        out->spend_rule = "step 1 releases; then a chain of AboveThreshold instances decides, each starting at step 1 "
                          "or after a release and spending decision_epsilon; each release spends release_epsilon; at "
                          "most max_releases releases in any w steps";
        dp_plan_kv(out->spend, &out->n_spend, "decision_epsilon", eps1 / (C + 1));
        dp_plan_kv(out->spend, &out->n_spend, "release_epsilon", m->eps_release);
        dp_plan_kv(out->spend, &out->n_spend, "max_releases", C);
        dp_plan_kv(out->spend, &out->n_spend, "w", (double)c->w);
    } else {
        out->spend_rule = "step 1 spends decision_epsilon (the sparse vector's whole cost) and release_epsilon (the "
                          "first release); each later release spends release_epsilon, at most max_releases in all; "
                          "steps that repeat the last release spend nothing; the last step releases with what is left "
                          "if fewer were made";
        dp_plan_kv(out->spend, &out->n_spend, "decision_epsilon", dp_ledger_units_value(&m->ledger, m->units_decision));
        dp_plan_kv(out->spend, &out->n_spend, "release_epsilon", m->eps_release);
        dp_plan_kv(out->spend, &out->n_spend, "max_releases", C);
    }
    dp_plan_kv(out->noise, &out->n_noise, "dp", c->unsafe_paper ? 0 : 1);
    dp_plan_kv(out->noise, &out->n_noise, "svt_epsilon_threshold", m->svt.eps_a);
    dp_plan_kv(out->noise, &out->n_noise, "svt_epsilon_queries", m->svt.eps_b);
    dp_plan_kv(out->noise, &out->n_noise, "distance_sensitivity", 2.0 / (double)c->n_min);
    dp_plan_kv(out->noise, &out->n_noise, "release_scale", m->eps_release > 0 ? 1.0 / m->eps_release : 0);
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
    dp_buf_put_f64(b, c->epsilon);
    dp_buf_put_u64(b, m->done);
    dp_buf_put_u8(b, (uint8_t)m->exhausted);
    dp_buf_put_u64(b, m->releases);
    dp_buf_put_u64(b, m->last_release);
    dp_buf_put_i64(b, m->svt.rho);
    dp_buf_put_i64(b, m->svt.noisy_threshold);
    dp_buf_put_f64(b, m->T);
    dp_buf_put_u64(b, m->nullified_until);
    dp_buf_put_f64(b, m->spent_window);
    for (uint32_t k = 0; k < c->categories; k++)
        dp_buf_put_i64(b, m->noisy[k]);
    for (uint32_t k = 0; c->w_event && k < c->w; k++) {
        dp_buf_put_f64(b, m->window[k]);
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
        dp_reader_f64(r) != c->epsilon)
        return DP_ECORRUPT;
    m->done = dp_reader_u64(r);
    m->exhausted = dp_reader_u8(r) != 0;
    m->releases = dp_reader_u64(r);
    m->last_release = dp_reader_u64(r);
    m->svt.rho = dp_reader_i64(r);
    m->svt.noisy_threshold = dp_reader_i64(r);
    m->T = dp_reader_f64(r);
    m->nullified_until = dp_reader_u64(r);
    m->spent_window = dp_reader_f64(r);
    if (dp_reader_status(r) != DP_OK || m->done > c->horizon || m->releases > m->done ||
        m->last_release > m->done || !(m->T >= 0 && m->T <= 2) || m->nullified_until > c->horizon + c->w ||
        !(m->spent_window >= 0 && m->spent_window <= c->epsilon * 2) || llabs(m->svt.rho) > ((int64_t)1 << 60) ||
        m->svt.noisy_threshold < -((int64_t)1 << 60) || m->svt.noisy_threshold > ((int64_t)1 << 60) ||
        (!c->w_event && m->releases > c->max_releases))
        return DP_ECORRUPT;
    for (uint32_t k = 0; k < c->categories; k++) {
        m->noisy[k] = dp_reader_i64(r);
        if (llabs(m->noisy[k]) > ((int64_t)1 << 50))
            return DP_ECORRUPT;
    }
    for (uint32_t k = 0; c->w_event && k < c->w; k++) {
        m->window[k] = dp_reader_f64(r);
        m->wflags[k] = dp_reader_u8(r);
        if (!(m->window[k] >= 0 && m->window[k] <= c->epsilon) || m->wflags[k] > 3)
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
    .release_describe = adaptive_release_describe,
};
