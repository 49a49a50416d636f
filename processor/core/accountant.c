/* accountant.c — privacy models, the zCDP → (ε, δ) conversions and the
 * per-stream ledger that fails closed (docs/privacy.md §1, docs/design.md §3).
 *
 * Nothing here draws randomness or releases data; it only decides whether
 * a release may happen and records what it cost.  Every refusal is a
 * privacy decision, so the ledger errs towards refusing: a spend that
 * cannot be recorded (over budget, malformed cost, unconvertible model)
 * marks the ledger exhausted and the stream stops. */
#include "core/accountant.h"
#include "core/buf.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dp_privacy_model_name(dp_privacy_model m)
{
    switch (m) {
    case DP_PRIVACY_ZCDP: return "zcdp";
    case DP_PRIVACY_PURE: return "pure";
    default:              return "unknown";
    }
}

static int model_valid(dp_privacy_model m)
{
    return m == DP_PRIVACY_ZCDP || m == DP_PRIVACY_PURE;
}

/* Bun & Steinke 2016, Prop. 1.4: an ε-DP mechanism is (ε²/2)-zCDP. */
double dp_pure_to_zcdp(double epsilon)
{
    if (!(epsilon >= 0) || !isfinite(epsilon))
        return NAN;
    return epsilon * epsilon / 2.0;
}

/* Bun & Steinke 2016, Prop. 1.3: ρ-zCDP ⇒ (ρ + 2·sqrt(ρ·ln(1/δ)), δ)-DP.
 * It is the CKS expression below with the factor (1/α)(1-1/α)^(α-1) < 1
 * dropped and α chosen in closed form, hence never tighter than CKS. */
double dp_zcdp_to_eps_simple(double rho, double delta)
{
    if (!(rho >= 0) || !isfinite(rho) || !(delta > 0) || !(delta < 1))
        return NAN;
    return rho + 2.0 * sqrt(rho * -log(delta));
}

/* --- CKS conversion --------------------------------------------------------
 *
 * Canonne, Kamath, Steinke 2020, Prop. 12 / Cor. 13: ρ-zCDP is (α, αρ)-RDP
 * for every α > 1, and (α, τ)-RDP implies (ε, δ)-DP with
 *     δ = exp((α-1)(τ-ε)) / (α-1) · (1 - 1/α)^α.
 * Substituting x = α - 1 > 0 and taking logs,
 *     f(x) = x·((1+x)ρ - ε) + x·ln x - (1+x)·ln(1+x)
 *          = x·((1+x)ρ - ε) - x·log1p(1/x) - log1p(x),
 * the second form being free of overflow for large x and of cancellation
 * between x·ln x and (1+x)·ln(1+x) for both small and large x.
 *
 * f''(x) = 2ρ + 1/x - 1/(1+x) > 0, so f is strictly convex on (0, ∞) and
 * its minimiser is the unique root of the increasing function
 *     f'(x) = g(x) = ρ(1+2x) - ε - log1p(1/x),
 * which goes to -∞ as x → 0 and, when ρ > 0, to +∞ as x → ∞.  We bracket
 * that root and bisect on t = ln x (x spans hundreds of orders of magnitude
 * between ρ = 100 and ρ = 1e-8).  Every x > 0 gives a valid δ, so an
 * imprecise minimiser can only make δ larger, i.e. conservative; near the
 * root the error in f is quadratic in the error in x and is negligible.
 *
 * Precision: f is evaluated with an absolute error of a few ulp of its
 * largest term (|x·ε| ≲ 1e3 across the supported range), so ln δ is good to
 * ~1e-13 absolute, and ε from dp_zcdp_to_eps_cks to ~1e-12 relative
 * (test_accountant compares with 60-digit mpmath values).  ρ = 0 is exact:
 * δ = 0 for every ε ≥ 0, and ε = 0 for every δ. */

static double cks_f(double x, double rho, double eps)
{
    double v = x * ((1.0 + x) * rho - eps) - x * log1p(1.0 / x) - log1p(x);
    return isnan(v) ? INFINITY : v;
}

static double cks_g(double x, double rho, double eps)
{
    return rho * (1.0 + 2.0 * x) - eps - log1p(1.0 / x);
}

/* ln of the CKS δ for ρ > 0, ε ≥ 0, capped at 0 (δ <= 1 is trivial). */
static double cks_log_delta(double rho, double eps)
{
    /* Lower end: log1p(1/x) >= -ln x, so g(x) <= ρ(1+2x) - ε + ln x, which
     * for x <= 1 is < 0 once ln x < ε - 3ρ.  Below e^-700 doubles lose x;
     * there the optimum has δ ≈ 1 anyway and any x is a valid bound. */
    double t_lo = fmin(0.0, eps - 3.0 * rho - 1.0);
    if (t_lo < -700.0)
        t_lo = -700.0;
    /* Upper end: for x >= 1, log1p(1/x) <= 1/x <= 1, so g(x) >= ρ + 2ρx - ε - 1,
     * which is > 0 for x >= (ε+1)/(2ρ). */
    double x_hi = fmax(1.0, (eps + 1.0) / (2.0 * rho));
    double t_hi = log(x_hi);
    if (!(t_hi <= 690.0))
        t_hi = 690.0;

    double best = INFINITY;
    if (cks_g(exp(t_lo), rho, eps) >= 0) {
        best = cks_f(exp(t_lo), rho, eps);
    } else if (cks_g(exp(t_hi), rho, eps) <= 0) {
        best = cks_f(exp(t_hi), rho, eps);
    } else {
        for (int i = 0; i < 200; i++) {
            double mid = t_lo + (t_hi - t_lo) / 2.0;
            if (mid <= t_lo || mid >= t_hi)
                break;
            if (cks_g(exp(mid), rho, eps) < 0)
                t_lo = mid;
            else
                t_hi = mid;
        }
        best = fmin(cks_f(exp(t_lo), rho, eps), cks_f(exp(t_hi), rho, eps));
    }
    return best < 0 ? best : 0.0;
}

/* δ for ρ >= 0, ε >= 0 (ρ = 0 is perfectly private: δ = 0). */
static double cks_delta(double rho, double eps)
{
    return rho == 0 ? 0.0 : exp(cks_log_delta(rho, eps));
}

int dp_zcdp_delta_cks(double rho, double epsilon, double *delta)
{
    if (!delta || !(rho >= 0) || !isfinite(rho) || !(epsilon >= 0) || !isfinite(epsilon))
        return DP_EINVAL;
    *delta = cks_delta(rho, epsilon);
    return DP_OK;
}

int dp_zcdp_to_eps_cks(double rho, double delta, double *epsilon)
{
    if (!epsilon || !(rho >= 0) || !isfinite(rho) || !(delta > 0) || !(delta < 1))
        return DP_EINVAL;
    if (rho == 0) {
        *epsilon = 0;
        return DP_OK;
    }
    /* δ(ε) is non-increasing in ε (f decreases in ε for every x), so the
     * smallest ε with δ(ε) <= target is found by bisection.  The test is
     * exactly the one dp_zcdp_delta_cks reports (exp of the same ln δ), so
     * a caller re-checking the returned ε sees δ(ε) <= delta bit for bit. */
    if (cks_delta(rho, 0.0) <= delta) {
        *epsilon = 0;
        return DP_OK;
    }
    /* The simple bound satisfies the CKS condition (see above); the loop
     * only guards against rounding at its last ulp. */
    double hi = dp_zcdp_to_eps_simple(rho, delta);
    int grow = 0;
    while (cks_delta(rho, hi) > delta) {
        if (++grow > 64 || !isfinite(hi))
            return DP_ERANGE;
        hi = hi * 2.0 + 1e-300;
    }
    double lo = 0.0;
    for (int i = 0; i < 2000; i++) {
        double mid = lo + (hi - lo) / 2.0;
        if (mid <= lo || mid >= hi)
            break;
        if (cks_delta(rho, mid) <= delta)
            hi = mid;
        else
            lo = mid;
    }
    /* hi always satisfies δ(hi) <= delta: the returned ε is on the safe side. */
    *epsilon = hi;
    return DP_OK;
}

/* The largest ρ whose CKS conversion stays within (ε, δ): people state
 * budgets as (ε, δ); the zCDP synthesizers account in ρ.  δ_cks(ρ, ε) is
 * non-decreasing in ρ (f grows with ρ for every x), so bisect on ρ with
 * exactly the test dp_zcdp_delta_cks reports.  The simple bound's inverse,
 * ρ_s = (sqrt(ln(1/δ) + ε) - sqrt(ln(1/δ)))², satisfies it (CKS is never
 * looser), so it brackets from below; ε brackets from above unless δ is
 * huge, and the doubling loop covers that.
 *
 * The result is then rounded down to 8 significant decimal digits.  Not
 * for looks alone: a stream's ρ is fixed by its first snapshot (the ledger
 * holds it), and a libm that differs in its last bit of exp or log1p would
 * otherwise derive another ρ from the same ε after an upgrade, and refuse to
 * restore; 1e-12 relative noise crosses an 8-digit boundary about once in
 * 10^4 conversions.  Rounding down keeps it conservative: the final check
 * confirms dp_zcdp_to_eps_cks(ρ, δ) ≤ ε, the figure every budget event
 * reports. */
int dp_zcdp_rho_for_eps_cks(double epsilon, double delta, double *rho)
{
    if (!rho || !(epsilon > 0) || !isfinite(epsilon) || !(delta > 0) || !(delta < 1))
        return DP_EINVAL;
    double L = -log(delta);
    double lo = sqrt(L + epsilon) - sqrt(L);
    lo *= lo;
    if (!(cks_delta(lo, epsilon) <= delta))
        lo = 0.0;
    double hi = fmax(epsilon, 2.0 * lo);
    for (int grow = 0; cks_delta(hi, epsilon) <= delta; grow++) {
        if (grow > 64 || !isfinite(hi))
            return DP_ERANGE;
        hi *= 2.0;
    }
    for (int i = 0; i < 2000; i++) {
        double mid = lo + (hi - lo) / 2.0;
        if (mid <= lo || mid >= hi)
            break;
        if (cks_delta(mid, epsilon) <= delta)
            lo = mid;
        else
            hi = mid;
    }
    if (!(lo > 0))
        return DP_ERANGE;
    /* lo = k · 10^(e-7) with k = 10^7..10^8-1, rounded down; the text form
     * makes it the double nearest that decimal, which prints as written. */
    int e10 = (int)floor(log10(lo));
    long long k = (long long)floor(lo / pow(10.0, e10 - 7)) + 1;   /* +1: floor may land one low */
    for (int tries = 0; tries < 4 && k > 0; tries++, k--) {
        char text[48];
        snprintf(text, sizeof text, "%llde%d", k, e10 - 7);
        double r = strtod(text, NULL);
        double eps_back;
        if (r <= lo && dp_zcdp_to_eps_cks(r, delta, &eps_back) == DP_OK && eps_back <= epsilon) {
            *rho = r;
            return DP_OK;
        }
    }
    return DP_ERANGE;
}

int dp_privacy_convert(dp_privacy cost, dp_privacy_model model, double *out)
{
    if (!out || !model_valid(cost.model) || !model_valid(model)
        || !(cost.value >= 0) || !isfinite(cost.value))
        return DP_EINVAL;
    if (cost.model == model) {
        *out = cost.value;
        return DP_OK;
    }
    if (cost.model == DP_PRIVACY_PURE && model == DP_PRIVACY_ZCDP) {
        *out = dp_pure_to_zcdp(cost.value);
        return DP_OK;
    }
    /* ρ-zCDP implies no finite pure ε (Gaussian noise is unbounded). */
    return DP_EINVAL;
}

int dp_privacy_describe(dp_privacy total, double delta, double *eps_simple, double *eps_cks)
{
    if (!eps_simple || !eps_cks || !model_valid(total.model)
        || !(total.value >= 0) || !isfinite(total.value))
        return DP_EINVAL;
    if (total.model == DP_PRIVACY_PURE) {
        *eps_simple = NAN;
        *eps_cks = total.value;
        return DP_OK;
    }
    if (!(delta > 0) || !(delta < 1))
        return DP_EINVAL;
    double c;
    int rc = dp_zcdp_to_eps_cks(total.value, delta, &c);
    if (rc != DP_OK)
        return rc;
    *eps_simple = dp_zcdp_to_eps_simple(total.value, delta);
    *eps_cks = c;
    return DP_OK;
}

/* --- ledger ---------------------------------------------------------------- */

/* Upper limit a total may reach: the budget plus DP_LEDGER_REL_SLACK of it. */
static double ledger_limit(const dp_ledger *l)
{
    return l->budget + l->budget * DP_LEDGER_REL_SLACK;
}

/* The budget counts as met once what is left is within the slack: nothing
 * meaningful could be released with it. */
static int ledger_met(const dp_ledger *l)
{
    return l->spent >= l->budget - l->budget * DP_LEDGER_REL_SLACK;
}

int dp_ledger_init(dp_ledger *l, dp_privacy_model model, double budget,
                   char *errstr, size_t errstr_size)
{
    if (!l)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ledger: NULL ledger");
    memset(l, 0, sizeof *l);
    if (!model_valid(model))
        return dp_err(errstr, errstr_size, DP_EINVAL, "ledger: unknown privacy model %d", (int)model);
    if (!(budget > 0) || !isfinite(budget))
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "ledger: %s budget must be a positive finite number", dp_privacy_model_name(model));
    l->model = model;
    l->budget = budget;
    return DP_OK;
}

int dp_ledger_init_exact(dp_ledger *l, dp_privacy_model model, double budget, uint64_t units_total,
                         char *errstr, size_t errstr_size)
{
    int rc = dp_ledger_init(l, model, budget, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if (units_total == 0 || units_total > (1ull << 62))
        return dp_err(errstr, errstr_size, DP_EINVAL, "ledger: units_total must be in 1..2^62");
    l->units_total = units_total;
    return DP_OK;
}

double dp_ledger_units_value(const dp_ledger *l, uint64_t units)
{
    if (units == l->units_total)
        return l->budget;
    /* budget · units is exact in long double for units < 2^62 only up to
     * its 64-bit mantissa; one rounding there and one to double, both
     * deterministic (IEEE), so every replay reports the same figure. */
    return (double)((long double)l->budget * (long double)units / (long double)l->units_total);
}

int dp_ledger_split_units(const double *w, size_t n, uint64_t total, uint64_t *out)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(w[i] > 0) || !isfinite(w[i]))
            return DP_EINVAL;
        sum += w[i];
    }
    if (n == 0 || !isfinite(sum))
        return DP_EINVAL;
    uint64_t given = 0;
    long double *frac = malloc(n * sizeof *frac);
    if (!frac)
        return DP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        long double share = (long double)total * (long double)w[i] / (long double)sum;
        uint64_t f = (uint64_t)share;
        if (f > total - given)
            f = total - given;
        out[i] = f;
        frac[i] = share - (long double)f;
        given += f;
    }
    while (given < total) {   /* at most n rounds: each share lost less than one unit */
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (frac[i] > frac[best])
                best = i;
        out[best]++;
        frac[best] = -1;
        given++;
    }
    free(frac);
    return DP_OK;
}

void dp_ledger_free(dp_ledger *l)
{
    if (!l)
        return;
    free(l->entries);
    memset(l, 0, sizeof *l);
}

int dp_ledger_check_plan(const dp_ledger *l, dp_privacy planned,
                         char *errstr, size_t errstr_size)
{
    if (!l || !model_valid(l->model))
        return dp_err(errstr, errstr_size, DP_EINVAL, "ledger: not initialised");
    double amount;
    if (dp_privacy_convert(planned, l->model, &amount) != DP_OK)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "planned %s cost %g cannot be accounted in a %s ledger",
                      dp_privacy_model_name(planned.model), planned.value,
                      dp_privacy_model_name(l->model));
    if (l->exhausted)
        return dp_err(errstr, errstr_size, DP_EBUDGET, "privacy budget already exhausted");
    if (!(l->spent + amount <= ledger_limit(l)))
        return dp_err(errstr, errstr_size, DP_EBUDGET,
                      "planned %s spend %.17g exceeds the remaining budget %.17g (of %.17g)",
                      dp_privacy_model_name(l->model), amount, dp_ledger_remaining(l), l->budget);
    return DP_OK;
}

/* A new entry (step, label) at the end, or NULL (out of memory; the ledger
 * is then exhausted: fail closed). */
static dp_ledger_entry *ledger_append(dp_ledger *l, uint64_t step, const char *mechanism, size_t mlen)
{
    if (l->n_entries == l->cap_entries) {
        size_t cap = l->cap_entries ? l->cap_entries * 2 : 16;
        dp_ledger_entry *e = cap > SIZE_MAX / sizeof *e ? NULL : realloc(l->entries, cap * sizeof *e);
        if (!e) {
            l->exhausted = 1;
            return NULL;
        }
        l->entries = e;
        l->cap_entries = cap;
    }
    dp_ledger_entry *e = &l->entries[l->n_entries++];
    memset(e, 0, sizeof *e);
    e->step = step;
    memcpy(e->mechanism, mechanism, mlen);
    return e;
}

int dp_ledger_spend(dp_ledger *l, uint64_t step, const char *mechanism,
                    dp_privacy cost, char *errstr, size_t errstr_size)
{
    if (!l || !model_valid(l->model))
        return dp_err(errstr, errstr_size, DP_EINVAL, "ledger: not initialised");
    /* Every refusal below exhausts the ledger: the caller was about to
     * release something whose cost we could not record. */
    if (l->exhausted)
        return dp_err(errstr, errstr_size, DP_EBUDGET,
                      "privacy budget exhausted; refusing %s at step %llu",
                      mechanism ? mechanism : "(unnamed)", (unsigned long long)step);
    size_t mlen = mechanism ? strlen(mechanism) : 0;
    if (!mechanism || mlen == 0 || mlen >= DP_LEDGER_MECH_MAX) {
        l->exhausted = 1;
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "ledger: mechanism label must have 1..%d characters", DP_LEDGER_MECH_MAX - 1);
    }
    double amount;
    if (dp_privacy_convert(cost, l->model, &amount) != DP_OK) {
        l->exhausted = 1;
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: %s cost %g cannot be accounted in a %s ledger", mechanism,
                      dp_privacy_model_name(cost.model), cost.value, dp_privacy_model_name(l->model));
    }
    double total = l->spent + amount;
    if (!(total <= ledger_limit(l))) {
        l->exhausted = 1;
        return dp_err(errstr, errstr_size, DP_EBUDGET,
                      "%s at step %llu would spend %s %.17g; only %.17g of %.17g remains",
                      mechanism, (unsigned long long)step, dp_privacy_model_name(l->model),
                      amount, dp_ledger_remaining(l), l->budget);
    }
    dp_ledger_entry *e = ledger_append(l, step, mechanism, mlen);
    if (!e)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "ledger: out of memory recording %s", mechanism);
    e->amount = amount;
    l->spent = total;
    if (ledger_met(l))
        l->exhausted = 1;
    return DP_OK;
}

int dp_ledger_spend_units(dp_ledger *l, uint64_t step, const char *mechanism, uint64_t units,
                          char *errstr, size_t errstr_size)
{
    if (!l || !model_valid(l->model) || l->units_total == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ledger: not an exact ledger");
    if (l->exhausted)
        return dp_err(errstr, errstr_size, DP_EBUDGET, "privacy budget exhausted; refusing %s at step %llu",
                      mechanism ? mechanism : "(unnamed)", (unsigned long long)step);
    size_t mlen = mechanism ? strlen(mechanism) : 0;
    if (!mechanism || mlen == 0 || mlen >= DP_LEDGER_MECH_MAX) {
        l->exhausted = 1;
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "ledger: mechanism label must have 1..%d characters", DP_LEDGER_MECH_MAX - 1);
    }
    if (units > l->units_total - l->units_spent) {
        l->exhausted = 1;
        return dp_err(errstr, errstr_size, DP_EBUDGET,
                      "%s at step %llu would spend %llu units; only %llu of %llu remain", mechanism,
                      (unsigned long long)step, (unsigned long long)units,
                      (unsigned long long)(l->units_total - l->units_spent), (unsigned long long)l->units_total);
    }
    dp_ledger_entry *e = ledger_append(l, step, mechanism, mlen);
    if (!e)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "ledger: out of memory recording %s", mechanism);
    e->units = units;
    e->amount = dp_ledger_units_value(l, units);
    l->units_spent += units;
    l->spent = dp_ledger_units_value(l, l->units_spent);
    if (l->units_spent == l->units_total)
        l->exhausted = 1;
    return DP_OK;
}

double dp_ledger_remaining(const dp_ledger *l)
{
    if (!l || l->exhausted)
        return 0.0;
    double r = l->budget - l->spent;
    return r > 0 ? r : 0.0;
}

/* --- serialization ----------------------------------------------------------
 *
 * Layout (all little endian, via buf.h):
 *   u32 magic "DPLG" | u32 version | u32 model | f64 budget | f64 spent |
 *   u8 exhausted | u64 n_entries |
 *   n × (u64 step | f64 amount | u8 label_len | label bytes) |
 *   u64 FNV-1a-64 of every preceding byte.
 * The checksum catches accidental damage (any single changed byte is always
 * detected: each FNV step is a bijection of the state), the structural
 * checks catch everything a well-formed but wrong snapshot could claim —
 * above all a `spent` that is not the entries' sum, which would silently
 * hand back budget. */

#define LEDGER_MAGIC   0x474c5044u   /* "DPLG" read as little-endian bytes */
#define LEDGER_VERSION 1u
#define LEDGER_VERSION_EXACT 2u   /* + u64 units_total, u64 units_spent; entries + u64 units */
#define LEDGER_MIN_ENTRY (8 + 8 + 1 + 1)

static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int dp_ledger_serialize(const dp_ledger *l, uint8_t **out, size_t *out_len)
{
    if (!l || !out || !out_len || !model_valid(l->model))
        return DP_EINVAL;
    dp_buf b;
    dp_buf_init(&b);
    dp_buf_put_u32(&b, LEDGER_MAGIC);
    int exact = l->units_total > 0;
    dp_buf_put_u32(&b, exact ? LEDGER_VERSION_EXACT : LEDGER_VERSION);
    dp_buf_put_u32(&b, (uint32_t)l->model);
    dp_buf_put_f64(&b, l->budget);
    dp_buf_put_f64(&b, l->spent);
    dp_buf_put_u8(&b, l->exhausted ? 1 : 0);
    if (exact) {
        dp_buf_put_u64(&b, l->units_total);
        dp_buf_put_u64(&b, l->units_spent);
    }
    dp_buf_put_u64(&b, (uint64_t)l->n_entries);
    for (size_t i = 0; i < l->n_entries; i++) {
        const dp_ledger_entry *e = &l->entries[i];
        size_t mlen = strnlen(e->mechanism, DP_LEDGER_MECH_MAX);
        if (mlen >= DP_LEDGER_MECH_MAX) {
            dp_buf_free(&b);
            return DP_EINVAL;
        }
        dp_buf_put_u64(&b, e->step);
        dp_buf_put_f64(&b, e->amount);
        if (exact)
            dp_buf_put_u64(&b, e->units);
        dp_buf_put_u8(&b, (uint8_t)mlen);
        dp_buf_put_bytes(&b, e->mechanism, mlen);
    }
    int rc = dp_buf_status(&b);
    if (rc == DP_OK) {
        dp_buf_put_u64(&b, fnv1a64(b.data, b.len));
        rc = dp_buf_status(&b);
    }
    if (rc != DP_OK) {
        dp_buf_free(&b);
        return rc;
    }
    *out = b.data;
    *out_len = b.len;
    return DP_OK;
}

int dp_ledger_deserialize(dp_ledger *l, const uint8_t *buf, size_t len,
                          char *errstr, size_t errstr_size)
{
    if (!l)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ledger: NULL ledger");
    memset(l, 0, sizeof *l);
    if (!buf || len < 8)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "ledger snapshot truncated (%zu bytes)", len);

    dp_reader tail;
    dp_reader_init(&tail, buf + len - 8, 8);
    if (dp_reader_u64(&tail) != fnv1a64(buf, len - 8))
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "ledger snapshot checksum mismatch");

    dp_reader r;
    dp_reader_init(&r, buf, len - 8);
    uint32_t magic = dp_reader_u32(&r);
    uint32_t version = dp_reader_u32(&r);
    if (dp_reader_status(&r) != DP_OK || magic != LEDGER_MAGIC)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "not a ledger snapshot");
    if (version != LEDGER_VERSION && version != LEDGER_VERSION_EXACT)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "unsupported ledger snapshot version %u", version);
    int exact = version == LEDGER_VERSION_EXACT;
    uint32_t model = dp_reader_u32(&r);
    double budget = dp_reader_f64(&r);
    double spent = dp_reader_f64(&r);
    uint8_t exhausted = dp_reader_u8(&r);
    uint64_t units_total = exact ? dp_reader_u64(&r) : 0, units_spent = exact ? dp_reader_u64(&r) : 0;
    uint64_t n = dp_reader_u64(&r);
    if (dp_reader_status(&r) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "ledger snapshot header truncated");
    if (!model_valid((dp_privacy_model)model) || !(budget > 0) || !isfinite(budget)
        || exhausted > 1 || (exact && (units_total == 0 || units_total > (1ull << 62) || units_spent > units_total)))
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "ledger snapshot header is invalid");
    /* Bound n by the bytes present before allocating anything. */
    if (n > (r.len - r.off) / (LEDGER_MIN_ENTRY + (exact ? 8 : 0)))
        return dp_err(errstr, errstr_size, DP_ECORRUPT,
                      "ledger snapshot claims %llu entries in %zu bytes",
                      (unsigned long long)n, r.len - r.off);

    dp_ledger tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.model = (dp_privacy_model)model;
    tmp.budget = budget;
    tmp.units_total = units_total;
    uint64_t units_sum = 0;
    if (n > 0) {
        tmp.entries = calloc((size_t)n, sizeof *tmp.entries);
        if (!tmp.entries)
            return dp_err(errstr, errstr_size, DP_ENOMEM, "ledger: out of memory restoring %llu entries",
                          (unsigned long long)n);
        tmp.cap_entries = (size_t)n;
    }
    double sum = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        dp_ledger_entry *e = &tmp.entries[i];
        e->step = dp_reader_u64(&r);
        e->amount = dp_reader_f64(&r);
        e->units = exact ? dp_reader_u64(&r) : 0;
        uint8_t mlen = dp_reader_u8(&r);
        int units_ok = !exact || (e->units <= units_total - units_sum &&
                                  memcmp(&e->amount, &(double){dp_ledger_units_value(&tmp, e->units)}, sizeof(double)) == 0);
        units_sum += exact && units_ok ? e->units : 0;
        if (dp_reader_status(&r) != DP_OK || !units_ok || mlen == 0 || mlen >= DP_LEDGER_MECH_MAX
            || dp_reader_bytes(&r, e->mechanism, mlen) != DP_OK
            || memchr(e->mechanism, '\0', mlen) != NULL
            || !(e->amount >= 0) || !isfinite(e->amount)) {
            free(tmp.entries);
            return dp_err(errstr, errstr_size, DP_ECORRUPT, "ledger snapshot entry %llu is invalid",
                          (unsigned long long)i);
        }
        sum += e->amount;   /* same order and operations as dp_ledger_spend */
        tmp.n_entries = (size_t)i + 1;
    }
    if (dp_reader_finish(&r) != DP_OK) {
        free(tmp.entries);
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "ledger snapshot has trailing bytes");
    }
    tmp.spent = spent;
    tmp.exhausted = exhausted;
    tmp.units_spent = units_spent;
    /* The stored total must be exactly the entries' sum, no ledger can have
     * recorded past its limit, and a met budget must be marked exhausted.
     * Exact ledgers: the same in units, and the doubles must be the units'. */
    double exact_spent = exact ? dp_ledger_units_value(&tmp, units_spent) : 0;
    if (exact ? (units_sum != units_spent || memcmp(&exact_spent, &spent, sizeof spent) != 0 ||
                 (units_spent == units_total && !exhausted))
              : (memcmp(&sum, &spent, sizeof sum) != 0 || !(spent <= ledger_limit(&tmp)) ||
                 (ledger_met(&tmp) && !exhausted))) {
        free(tmp.entries);
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "ledger snapshot totals are inconsistent");
    }
    *l = tmp;
    return DP_OK;
}
