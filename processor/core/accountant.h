/* accountant.h — privacy budgets, composition, conversions, and the
 * per-stream ledger that fails closed (docs/privacy.md §1, docs/design.md §3).
 *
 * Two models: pure ε-DP (budgets add) and ρ-zCDP (budgets add; Bun &
 * Steinke 2016).  A pure ε mechanism is ε²/2-zCDP, so a zCDP ledger can
 * absorb pure spends; the reverse conversion does not exist and is refused. */
#ifndef DP_ACCOUNTANT_H
#define DP_ACCOUNTANT_H

#include <stddef.h>
#include <stdint.h>

typedef enum dp_privacy_model {
    DP_PRIVACY_ZCDP = 1,   /* value is ρ */
    DP_PRIVACY_PURE = 2,   /* value is ε */
} dp_privacy_model;

typedef struct dp_privacy {
    dp_privacy_model model;
    double value;
} dp_privacy;

const char *dp_privacy_model_name(dp_privacy_model m);   /* "zcdp" / "pure" */

/* ε-DP ⇒ (ε²/2)-zCDP. */
double dp_pure_to_zcdp(double epsilon);          /* NaN if ε < 0 or not finite */

/* ρ-zCDP ⇒ (ε, δ)-DP, simple bound: ε = ρ + 2·sqrt(ρ·ln(1/δ)) (BS16 Prop 1.3). */
double dp_zcdp_to_eps_simple(double rho, double delta);  /* NaN if ρ < 0 or δ ∉ (0,1) */

/* Tighter conversion (Canonne, Kamath, Steinke 2020, Prop. 12):
 *   δ(ε) = inf_{α>1} exp((α-1)(αρ-ε)) / (α-1) · (1-1/α)^α
 * dp_zcdp_delta_cks evaluates the infimum (minimising over α numerically);
 * dp_zcdp_to_eps_cks finds the smallest ε with δ(ε) <= delta by bisection.
 * Both return 0 or DP_EINVAL for ρ < 0, δ ∉ (0,1) (or ε < 0); DP_ERANGE
 * only if the bisection bracket cannot be established (not seen in practice).
 * Precision: ln δ to ~1e-13 absolute, ε to ~1e-12 relative (checked against
 * 60-digit mpmath values in tests/unit/test_accountant.c for ρ ∈ [1e-8, 100]).
 * Any α gives a valid δ, so minimiser error only makes δ larger, and the
 * returned ε always satisfies the computed δ(ε) <= delta: both err on the
 * conservative side.  ρ = 0 gives δ = 0 and ε = 0 exactly. */
int dp_zcdp_delta_cks(double rho, double epsilon, double *delta);
int dp_zcdp_to_eps_cks(double rho, double delta, double *epsilon);

/* The inverse, for budgets people state as (ε, δ): the largest ρ (found by
 * bisection on dp_zcdp_delta_cks, then rounded down to 8 significant
 * digits so that the same (ε, δ) gives the same ρ on every libm) with
 * dp_zcdp_to_eps_cks(ρ, δ) <= ε.  DP_EINVAL for ε <= 0 or not finite, or
 * δ ∉ (0,1); DP_ERANGE if no bracket is found (not seen in practice). */
int dp_zcdp_rho_for_eps_cks(double epsilon, double delta, double *rho);

/* Cost of `cost` expressed in `model`; DP_EINVAL if not convertible
 * (zCDP cannot be expressed as pure ε). */
int dp_privacy_convert(dp_privacy cost, dp_privacy_model model, double *out);

/* Budget metadata for a release (docs/design.md §3, dp_budget_event): the
 * (ε, δ) equivalents of a total spend.  For zCDP, *eps_simple and *eps_cks
 * are the two conversions above at `delta` (δ ∈ (0,1), else DP_EINVAL).
 * For pure ε, `delta` is ignored, *eps_simple = NaN and *eps_cks = ε, the
 * convention of dp_budget_event.  DP_EINVAL for a negative / non-finite
 * value or an unknown model. */
int dp_privacy_describe(dp_privacy total, double delta,
                        double *eps_simple, double *eps_cks);

/* --- ledger -------------------------------------------------------------- */

#define DP_LEDGER_MECH_MAX 40

typedef struct dp_ledger_entry {
    uint64_t step;
    double   amount;                        /* in the ledger's model */
    uint64_t units;                         /* exact ledgers: the spend in units (see below) */
    char     mechanism[DP_LEDGER_MECH_MAX]; /* NUL-terminated label */
} dp_ledger_entry;

typedef struct dp_ledger {
    dp_privacy_model  model;
    double            budget;       /* total ρ or ε for the stream */
    double            spent;        /* Σ amount, accumulated in entry order */
    int               exhausted;    /* set once a spend is refused or budget is met */
    /* Exact ledgers (dp_ledger_init_exact): the budget is units_total
     * units, every spend a whole number of them, so totals are integer
     * sums — the last spend of a plan that uses it all makes spent equal
     * budget bit for bit (no float sums: 0.49999999999999994 of 0.5).
     * 0 for a ledger kept in doubles. */
    uint64_t          units_total;
    uint64_t          units_spent;
    size_t            n_entries;
    size_t            cap_entries;
    dp_ledger_entry  *entries;
} dp_ledger;

/* Relative slack for comparisons against the budget: a budget split into
 * many equal floating-point parts must still sum to "at most" the budget.
 * 1e-9 relative is far below any meaningful privacy difference. */
#define DP_LEDGER_REL_SLACK 1e-9

int  dp_ledger_init(dp_ledger *l, dp_privacy_model model, double budget,
                    char *errstr, size_t errstr_size);
void dp_ledger_free(dp_ledger *l);

/* An exact ledger of `budget` split into units_total units (>= 1).  Its
 * doubles are functions of the units: amount = budget · units / units_total
 * rounded to nearest, spent likewise of units_spent, and spent == budget
 * exactly once units_spent == units_total (then it is exhausted, with no
 * slack: the units are exact). */
int  dp_ledger_init_exact(dp_ledger *l, dp_privacy_model model, double budget, uint64_t units_total,
                          char *errstr, size_t errstr_size);
/* Record `units` units (exact ledgers only; refusals as dp_ledger_spend). */
int  dp_ledger_spend_units(dp_ledger *l, uint64_t step, const char *mechanism, uint64_t units,
                           char *errstr, size_t errstr_size);
/* budget · units / units_total, the double an exact ledger reports for units. */
double dp_ledger_units_value(const dp_ledger *l, uint64_t units);
/* Split `total` units over n parts in proportion to the weights w[i] > 0,
 * exactly: floor shares, then the remainder one unit at a time to the
 * largest fractional parts (ties to the lower index).  Σ out = total. */
int  dp_ledger_split_units(const double *w, size_t n, uint64_t total, uint64_t *out);

/* Would spending `planned` in total (e.g. a synthesizer's whole plan over
 * its horizon) fit the budget?  Used to refuse configurations up front.
 * DP_OK if spent + planned (converted to the ledger's model) is within the
 * budget plus slack; DP_EBUDGET if not or if the ledger is exhausted;
 * DP_EINVAL for an unconvertible / malformed cost.  Never modifies *l. */
int  dp_ledger_check_plan(const dp_ledger *l, dp_privacy planned,
                          char *errstr, size_t errstr_size);

/* Record one spend.  Refuses (DP_EBUDGET, nothing recorded, ledger marked
 * exhausted) if it would exceed the budget.  Fail closed: every refusal
 * marks the ledger exhausted, including DP_EINVAL (label empty or longer
 * than DP_LEDGER_MECH_MAX-1, negative/non-finite cost, a zCDP cost in a
 * pure ledger) and DP_ENOMEM; once exhausted, every later spend (even of 0)
 * and every plan check is refused.  A pure ε spend in a zCDP ledger is
 * recorded as ε²/2.  The ledger also becomes exhausted when a spend brings
 * the total within DP_LEDGER_REL_SLACK of the budget. */
int  dp_ledger_spend(dp_ledger *l, uint64_t step, const char *mechanism,
                     dp_privacy cost, char *errstr, size_t errstr_size);

/* budget - spent in the ledger's model, clamped at 0; 0 once exhausted. */
double dp_ledger_remaining(const dp_ledger *l);

/* Exact binary serialization (doubles as IEEE-754 bit patterns, little
 * endian, versioned).  *out is malloc'd; free() it.
 * Deserialize treats *l as uninitialised (it is not freed first); on any
 * error *l is left empty (safe to dp_ledger_free) and the status is
 * DP_ECORRUPT for truncated, damaged (64-bit FNV-1a checksum) or
 * inconsistent input (spent != Σ amounts in entry order, spent past the
 * budget, met budget not marked exhausted, bad model/label/amount);
 * DP_ENOMEM if the entries cannot be allocated. */
int dp_ledger_serialize(const dp_ledger *l, uint8_t **out, size_t *out_len);
int dp_ledger_deserialize(dp_ledger *l, const uint8_t *buf, size_t len,
                          char *errstr, size_t errstr_size);

#endif
