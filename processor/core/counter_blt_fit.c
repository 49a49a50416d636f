/* counter_blt_fit.c — the parameters (θ, ω) of blt(T, d), fitted
 * (counter_blt.c's header says what is fitted and why; this file is how).
 *
 * The fit of one horizon is a coordinate search over three numbers
 * (θ_min, θ_max, λ) of a quadrature of the arcsine law, costed by the
 * exact objective sens²(R)·max_t ‖row_t(L)‖², an O(T·d) recursion.  The
 * recursion is a serial dependency chain (each step's feedback needs the
 * last), so one evaluation keeps the CPU's floating-point units mostly
 * idle, waiting on latency.  `cumulative` needs a fit for every horizon
 * 1..T (its ρ split), and those searches are independent: this file runs
 * FIT_LANES of them in lockstep, each search a state machine that stops
 * at every probe it has to cost, and costs the lanes' probes in one loop
 * whose chains overlap in the CPU.  Each lane performs exactly the
 * floating-point operations, in exactly the order, of a lone evaluation
 * (no operation mixes lanes; no reassociation), so every fitted double —
 * and so every counter and every release — is the same bit for bit as
 * one search at a time (tests/unit/test_counter_blt_fit.c holds them, and
 * the objective, to the plain search written out as the specification).
 *
 * Fits are memoised per (T, d) for the process: check-config and stream
 * creation each build a stream, and `cumulative` creates a counter and a
 * probe per horizon.  Owns: the memo (under a mutex).  Calls: libm,
 * pthreads. */
#include "core/counter_blt.h"
#include "core/dp_error.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FIT_GROUPS 3   /* vectors of 2 lanes side by side: 3 measured fastest of 2-4 */
#define FIT_LANES (2 * FIT_GROUPS)
#define UNROLL_GROUPS _Pragma("GCC unroll 8")
#define FIT_ROUNDS 12
#define SEEN_MAX 512

/* --- the quadrature and the objective ------------------------------------ */

static double arcsine_cdf(double theta)
{
    if (theta <= 0)
        return 0;
    if (theta >= 1)
        return 1;
    return 2.0 / 3.14159265358979323846 * asin(sqrt(theta));
}

void dp_blt_quadrature(unsigned d, double vmin, double vmax, double lam, double *theta, double *omega)
{
    double v[DP_BLT_MAX_BUFFERS];
    for (unsigned i = 0; i < d; i++) {
        v[i] = d == 1 ? 0.5 * (vmin + vmax) : vmax + (vmin - vmax) * (double)i / (double)(d - 1);
        theta[i] = 1.0 - exp(v[i]);
    }
    for (unsigned i = 0; i < d; i++) {
        double lo = i == 0 ? 0.0 : 1.0 - exp(0.5 * (v[i - 1] + v[i]));
        double hi = i + 1 == d ? 1.0 : 1.0 - exp(0.5 * (v[i] + v[i + 1]));
        omega[i] = lam * (arcsine_cdf(hi) - arcsine_cdf(lo)) * theta[i];
    }
}

/* FIT_LANES evaluations of the objective in flight, as FIT_GROUPS groups
 * of two lanes (a group is one SSE2-sized vector of 2 doubles; lane j is
 * element j % 2 of group j / 2): the parameters and the two recursions' state
 * (r's powers and s2 = Σ r_k²; the feedback buffers b, k = R^{-1} e_1,
 * l = its prefix sums, acc = Σ l², accsum = Σ acc).  GCC/Clang vector
 * extensions: each operation is the IEEE operation element by element, so
 * lane j computes exactly what a scalar evaluation would. */
typedef double blt_v __attribute__((vector_size(2 * sizeof(double))));

typedef struct blt_lanes {
    uint64_t T[FIT_LANES];   /* 0: an idle lane (all zeros) */
    blt_v theta[DP_BLT_MAX_BUFFERS][FIT_GROUPS], omega[DP_BLT_MAX_BUFFERS][FIT_GROUPS];
    blt_v pw[DP_BLT_MAX_BUFFERS][FIT_GROUPS], b[DP_BLT_MAX_BUFFERS][FIT_GROUPS];
    blt_v s2[FIT_GROUPS], kprev[FIT_GROUPS], l[FIT_GROUPS], acc[FIT_GROUPS], accsum[FIT_GROUPS];
} blt_lanes;

/* Zero every lane, then give lane j the parameters (θ, ω) and horizon T. */
static void lanes_clear(blt_lanes *x)
{
    memset(x, 0, sizeof *x);
}

static void lanes_set(blt_lanes *x, unsigned j, uint64_t T, unsigned d, const double *theta, const double *omega)
{
    unsigned g = j / 2, e = j % 2;
    x->T[j] = T;
    for (unsigned i = 0; i < d; i++) {
        x->theta[i][g][e] = theta[i];
        x->omega[i][g][e] = omega[i];
        x->pw[i][g][e] = 1.0;
    }
    x->s2[g][e] = 1.0;   /* r_0² */
}

/* Steps t0..t1-1 of every lane: per lane the operations, in their order,
 * of one evaluation (s2's term k = t, then the feedback's step t).  The
 * groups' loops are unrolled so that their accumulators stay in registers
 * and their dependency chains overlap. */
static void lanes_run(blt_lanes *x, unsigned d, uint64_t t0, uint64_t t1)
{
    const blt_v zero = {0, 0}, one = {1.0, 1.0};
    blt_v s2[FIT_GROUPS], kp[FIT_GROUPS], l[FIT_GROUPS], acc[FIT_GROUPS], sum[FIT_GROUPS];
    UNROLL_GROUPS
    for (unsigned g = 0; g < FIT_GROUPS; g++)
        s2[g] = x->s2[g], kp[g] = x->kprev[g], l[g] = x->l[g], acc[g] = x->acc[g], sum[g] = x->accsum[g];
    for (uint64_t t = t0; t < t1; t++) {
        if (t > 0) {
            blt_v r[FIT_GROUPS] = {{0, 0}};   /* every group zero */
            for (unsigned i = 0; i < d; i++) {
                UNROLL_GROUPS
                for (unsigned g = 0; g < FIT_GROUPS; g++) {
                    r[g] += x->omega[i][g] * x->pw[i][g];
                    x->pw[i][g] *= x->theta[i][g];
                }
            }
            UNROLL_GROUPS
            for (unsigned g = 0; g < FIT_GROUPS; g++)
                s2[g] += r[g] * r[g];
        }
        blt_v f[FIT_GROUPS] = {{0, 0}};
        for (unsigned i = 0; i < d; i++) {
            UNROLL_GROUPS
            for (unsigned g = 0; g < FIT_GROUPS; g++) {
                x->b[i][g] = x->theta[i][g] * x->b[i][g] + kp[g];
                f[g] += x->omega[i][g] * x->b[i][g];
            }
        }
        UNROLL_GROUPS
        for (unsigned g = 0; g < FIT_GROUPS; g++) {
            kp[g] = (t == 0 ? one : zero) - f[g];
            l[g] += kp[g];
            acc[g] += l[g] * l[g];
            sum[g] += acc[g];
        }
    }
    UNROLL_GROUPS
    for (unsigned g = 0; g < FIT_GROUPS; g++)
        x->s2[g] = s2[g], x->kprev[g] = kp[g], x->l[g] = l[g], x->acc[g] = acc[g], x->accsum[g] = sum[g];
}

/* Run the lanes to their horizons; lane j's sums at its own T go to
 * s2[j], acc[j], accsum[j].  Lanes past their T run on harmlessly until
 * the longest is done. */
static void lanes_finish(blt_lanes *x, unsigned d, double *s2, double *acc, double *accsum)
{
    uint64_t t = 0;
    for (;;) {
        uint64_t tnext = 0;   /* the shortest horizon still ahead */
        for (unsigned j = 0; j < FIT_LANES; j++)
            if (x->T[j] > t && (!tnext || x->T[j] < tnext))
                tnext = x->T[j];
        if (!tnext)
            return;
        lanes_run(x, d, t, tnext);
        t = tnext;
        for (unsigned j = 0; j < FIT_LANES; j++)
            if (x->T[j] == t) {
                s2[j] = x->s2[j / 2][j % 2];
                acc[j] = x->acc[j / 2][j % 2];
                accsum[j] = x->accsum[j / 2][j % 2];
            }
    }
}

int dp_blt_objective(uint64_t T, unsigned d, const double *theta, const double *omega,
                     double *sens2, double *maxvar, double *meanvar)
{
    if (d == 0 || d > DP_BLT_MAX_BUFFERS || T == 0)
        return DP_EINVAL;
    blt_lanes *x = malloc(sizeof *x);
    if (!x)
        return DP_ENOMEM;
    double s2[FIT_LANES], acc[FIT_LANES], accsum[FIT_LANES];
    lanes_clear(x);
    lanes_set(x, 0, T, d, theta, omega);
    lanes_finish(x, d, s2, acc, accsum);
    free(x);
    if (sens2)
        *sens2 = s2[0];
    if (maxvar)
        *maxvar = acc[0];
    if (meanvar)
        *meanvar = accsum[0] / (double)T;
    return DP_OK;
}

/* --- one horizon's search, as a state machine ---------------------------- */

/* p = (log(1-θ_max), log(1-θ_min), log λ).  The search probes p ± step_k
 * along each coordinate in turn (moving to a probe that lowers the cost),
 * repeats the pass while it moves, then halves the steps: FIT_ROUNDS
 * rounds.  It comes back to points it costed a pass ago (a move and the
 * opposite probe); those are looked up, not recomputed — the same double
 * either way. */
typedef struct blt_search {
    uint64_t T;
    unsigned d;
    size_t row;                   /* which of fit_many's horizons */
    double p[3], lo[3], hi[3], step[3], best;
    double q[3];                  /* the probe awaiting its cost */
    int costed_start;             /* 0 until the start point's cost is in */
    int round, k, sgn, improved;  /* where the search is */
    size_t n_seen;
    double seen_q[SEEN_MAX][3], seen_cost[SEEN_MAX];
} blt_search;

static void search_start(blt_search *s, uint64_t T, unsigned d)
{
    memset(s, 0, sizeof *s);
    s->T = T;
    s->d = d;
    /* Start at the natural scales 1/T .. 1/2 with the plain quadrature. */
    double start[3] = {log(1.0 / (double)(T + 1)), log(0.5), 0.0};
    double lo[3] = {log(1.0 / (64.0 * (double)T + 64.0)), log(1.0 / (64.0 * (double)T + 64.0)), -3.0};
    double hi[3] = {log(0.999), log(0.999), 3.0};
    double step[3] = {1.0, 1.0, 0.25};
    memcpy(s->p, start, sizeof start);
    memcpy(s->lo, lo, sizeof lo);
    memcpy(s->hi, hi, sizeof hi);
    memcpy(s->step, step, sizeof step);
    memcpy(s->q, start, sizeof start);   /* the first probe: the start */
    s->sgn = -1;
}

static void search_apply(blt_search *s, double cost)
{
    if (cost < s->best * (1.0 - 1e-9)) {
        s->best = cost;
        memcpy(s->p, s->q, sizeof s->p);
        s->improved = 1;
    }
}

/* The cost of s->q is in: record it and apply it. */
static void search_take(blt_search *s, double cost)
{
    if (s->n_seen < SEEN_MAX) {
        memcpy(s->seen_q[s->n_seen], s->q, sizeof s->q);
        s->seen_cost[s->n_seen++] = cost;
    }
    if (!s->costed_start) {
        s->costed_start = 1;
        s->best = cost;
        return;
    }
    search_apply(s, cost);
}

static int search_seen(const blt_search *s, double *cost)
{
    for (size_t i = 0; i < s->n_seen; i++)
        if (s->seen_q[i][0] == s->q[0] && s->seen_q[i][1] == s->q[1] && s->seen_q[i][2] == s->q[2]) {
            *cost = s->seen_cost[i];
            return 1;
        }
    return 0;
}

/* Move to the next probe that needs costing: 1 with it in s->q, or 0 when
 * the search is over (the fit is s->p). */
static int search_next(blt_search *s)
{
    for (;;) {
        if (s->round >= FIT_ROUNDS)
            return 0;
        if (s->k == 3) {   /* end of a pass */
            if (s->improved) {
                s->improved = 0;
            } else {
                for (int k = 0; k < 3; k++)
                    s->step[k] *= 0.5;
                s->round++;
            }
            s->k = 0;
            s->sgn = -1;
            continue;
        }
        int k = s->k;
        memcpy(s->q, s->p, sizeof s->q);
        s->q[k] += s->sgn * s->step[k];
        if (s->sgn < 0) {
            s->sgn = 1;
        } else {
            s->sgn = -1;
            s->k++;
        }
        if (s->q[k] < s->lo[k] || s->q[k] > s->hi[k] || s->q[0] >= s->q[1] - 1e-3)
            continue;
        double cost;
        if (search_seen(s, &cost)) {
            search_apply(s, cost);
            continue;
        }
        return 1;
    }
}

/* Cost the pending probes of n <= FIT_LANES searches together, one lane
 * each. */
static void searches_cost(blt_search **s, unsigned n, unsigned d, blt_lanes *x)
{
    double s2[FIT_LANES], acc[FIT_LANES], accsum[FIT_LANES];
    lanes_clear(x);
    for (unsigned j = 0; j < n; j++) {
        double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS];
        dp_blt_quadrature(d, s[j]->q[0], s[j]->q[1], exp(s[j]->q[2]), th, om);
        lanes_set(x, j, s[j]->T, d, th, om);
    }
    lanes_finish(x, d, s2, acc, accsum);
    for (unsigned j = 0; j < n; j++) {
        double c = s2[j] * acc[j];
        search_take(s[j], isfinite(c) ? c : INFINITY);
    }
}

/* --- the memo ------------------------------------------------------------ */

/* The fit is a pure function of (T, d); the memo returns the very doubles
 * the search found, so the counters (and the releases) are the same bit
 * for bit.  At most MEMO_MAX entries (~36 MB); past that, fits are
 * recomputed. */
typedef struct blt_fit_memo {
    uint64_t T;                        /* 0: empty slot */
    unsigned d;
    double   theta[DP_BLT_MAX_BUFFERS], omega[DP_BLT_MAX_BUFFERS];
} blt_fit_memo;

#define MEMO_MAX ((size_t)1 << 17)
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static blt_fit_memo   *memo;
static size_t          memo_cap, memo_n;

static size_t memo_slot(const blt_fit_memo *tab, size_t cap, uint64_t T, unsigned d)
{
    size_t i = (size_t)((T * 0x9e3779b97f4a7c15ull) ^ d) & (cap - 1);
    while (tab[i].T && !(tab[i].T == T && tab[i].d == d))
        i = (i + 1) & (cap - 1);
    return i;
}

/* Grow the table to keep it at most half full; 0 if it cannot (then the
 * caller does not store).  Under memo_lock. */
static int memo_reserve(void)
{
    if (memo_n + 1 <= memo_cap / 2)
        return 1;
    size_t cap = memo_cap ? memo_cap * 2 : 1024;
    if (cap / 2 > MEMO_MAX)
        return 0;
    blt_fit_memo *tab = calloc(cap, sizeof *tab);
    if (!tab)
        return 0;
    for (size_t i = 0; i < memo_cap; i++)
        if (memo[i].T)
            tab[memo_slot(tab, cap, memo[i].T, memo[i].d)] = memo[i];
    free(memo);
    memo = tab;
    memo_cap = cap;
    return 1;
}

/* 1 and the fit if (T, d) is memoised (theta, omega may be NULL). */
static int memo_get(uint64_t T, unsigned d, double *theta, double *omega)
{
    int found = 0;
    pthread_mutex_lock(&memo_lock);
    if (memo_cap) {
        const blt_fit_memo *e = &memo[memo_slot(memo, memo_cap, T, d)];
        if (e->T) {
            found = 1;
            if (theta)
                memcpy(theta, e->theta, d * sizeof *theta);
            if (omega)
                memcpy(omega, e->omega, d * sizeof *omega);
        }
    }
    pthread_mutex_unlock(&memo_lock);
    return found;
}

static void memo_put(uint64_t T, unsigned d, const double *theta, const double *omega)
{
    pthread_mutex_lock(&memo_lock);
    if (memo_reserve()) {
        blt_fit_memo *e = &memo[memo_slot(memo, memo_cap, T, d)];
        if (!e->T) {
            e->T = T;
            e->d = d;
            memcpy(e->theta, theta, d * sizeof *theta);
            memcpy(e->omega, omega, d * sizeof *omega);
            memo_n++;
        }
    }
    pthread_mutex_unlock(&memo_lock);
}

/* --- fitting many horizons ------------------------------------------------- */

/* Fit horizons[0..n) (all with d buffers), FIT_LANES searches at a time:
 * a lane whose search ends takes the next horizon.  Each fit goes to the
 * memo and, if `theta`/`omega` are given, to row i of them (d doubles a
 * row).  The searches outside the memo lock: a fit at 10^4 takes ~20 ms. */
static int fit_many(const uint64_t *horizons, size_t n, unsigned d, double *theta, double *omega)
{
    blt_search *pool = malloc(FIT_LANES * sizeof *pool);
    blt_lanes *lanes = malloc(sizeof *lanes);
    if (!pool || !lanes) {
        free(pool);
        free(lanes);
        return DP_ENOMEM;
    }
    blt_search *live[FIT_LANES], *idle[FIT_LANES];   /* searches running; pool slots free */
    unsigned nlive = 0, nidle = FIT_LANES;
    for (unsigned j = 0; j < FIT_LANES; j++)
        idle[j] = &pool[j];
    for (size_t next = 0;;) {
        while (nidle && next < n) {   /* a free slot takes the next horizon */
            blt_search *s = idle[--nidle];
            search_start(s, horizons[next], d);
            s->row = next++;
            live[nlive++] = s;
        }
        if (!nlive)
            break;
        searches_cost(live, nlive, d, lanes);
        unsigned m = 0;
        for (unsigned j = 0; j < nlive; j++) {
            blt_search *s = live[j];
            if (search_next(s)) {
                live[m++] = s;
                continue;
            }
            double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS];
            dp_blt_quadrature(d, s->p[0], s->p[1], exp(s->p[2]), th, om);
            memo_put(s->T, d, th, om);
            if (theta)
                memcpy(theta + s->row * d, th, d * sizeof *th);
            if (omega)
                memcpy(omega + s->row * d, om, d * sizeof *om);
            idle[nidle++] = s;
        }
        nlive = m;
    }
    free(lanes);
    free(pool);
    return DP_OK;
}

int dp_blt_fit(uint64_t T, unsigned d, double *theta, double *omega)
{
    if (d == 0 || d > DP_BLT_MAX_BUFFERS || T == 0)
        return DP_EINVAL;
    if (memo_get(T, d, theta, omega))
        return DP_OK;
    return fit_many(&T, 1, d, theta, omega);
}

int dp_blt_fit_horizons(uint64_t max_horizon, unsigned d)
{
    if (d == 0 || d > DP_BLT_MAX_BUFFERS || max_horizon == 0)
        return DP_EINVAL;
    if (max_horizon > MEMO_MAX)
        return DP_OK;   /* would not fit in the memo: each counter fits its own */
    uint64_t *unfitted = malloc(max_horizon * sizeof *unfitted);
    if (!unfitted)
        return DP_ENOMEM;
    size_t n = 0;
    for (uint64_t H = 1; H <= max_horizon; H++)
        if (!memo_get(H, d, NULL, NULL))
            unfitted[n++] = H;
    int rc = fit_many(unfitted, n, d, NULL, NULL);
    free(unfitted);
    return rc;
}
