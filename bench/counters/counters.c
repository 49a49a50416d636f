/* bench/counters/counters.c — every continual-counter kind of
 * docs/privacy.md §2 through the dp_counter interface: analytic max-over-t
 * and mean error variance (dp_counter_variance, t = 1..T) as a ratio to
 * tree(T) at the same budget, and measured time per dp_counter_add.
 *
 *   bench_counters [T ...]     (default 1024 65536)
 *
 * Budgets: ρ = 1 (zCDP) for every kind that supports it; ε = 1 (pure) for
 * every kind, reported in a second table (the sparse kinds are pure only).
 * Kinds whose create fails (not built yet, or the model is unsupported)
 * are shown as n/a.  Variances marked '≤' are stated upper bounds
 * (dp_counter_variance_is_exact = 0), not exact values.  The input stream
 * is x_t = t mod 2.  Timing: the best of `rounds` runs of T adds (filters
 * interference on a shared host); it includes creation-independent work
 * only (create is timed separately as setup). */
#include "core/counter.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench_key(dp_key *k)
{
    for (int i = 0; i < DP_KEY_BYTES; i++)
        k->bytes[i] = (uint8_t)(0x3C ^ i);
}

typedef struct row {
    int    ok;
    int    exact;
    double maxv, meanv, ns, setup_ms;
    char   err[160];
} row;

static int create(dp_counter **c, dp_counter_kind kind, uint64_t T, dp_privacy p, const dp_key *key,
                  char *err, size_t n)
{
    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.horizon = T;
    cfg.budget = p;
    dp_noise_source ns = {key, "bench", 5, "b"};
    return dp_counter_create(c, &cfg, &ns, err, n);
}

static row measure(dp_counter_kind kind, uint64_t T, dp_privacy p, const dp_key *key)
{
    row r;
    memset(&r, 0, sizeof r);
    dp_counter *c;
    double t0 = now_sec();
    if (create(&c, kind, T, p, key, r.err, sizeof r.err) != DP_OK)
        return r;
    r.setup_ms = 1e3 * (now_sec() - t0);
    r.exact = dp_counter_variance_is_exact(c);
    double sum = 0;
    for (uint64_t t = 1; t <= T; t++) {
        double v = dp_counter_variance(c, t);
        r.maxv = fmax(r.maxv, v);
        sum += v;
    }
    r.meanv = sum / (double)T;
    dp_counter_destroy(c);
    int rounds = T <= 4096 ? 5 : 2;
    r.ns = INFINITY;
    for (int k = 0; k < rounds; k++) {
        if (create(&c, kind, T, p, key, r.err, sizeof r.err) != DP_OK)
            return r;
        int64_t out;
        double s = now_sec();
        for (uint64_t t = 1; t <= T; t++) {
            if (dp_counter_add(c, (int64_t)(t & 1), &out) != DP_OK) {
                snprintf(r.err, sizeof r.err, "add failed at t=%llu", (unsigned long long)t);
                dp_counter_destroy(c);
                return r;
            }
        }
        r.ns = fmin(r.ns, 1e9 * (now_sec() - s) / (double)T);
        dp_counter_destroy(c);
    }
    r.ok = 1;
    return r;
}

static void table(uint64_t T, dp_privacy p, const dp_key *key)
{
    printf("\n### T = %llu, %s = %g\n\n", (unsigned long long)T,
           p.model == DP_PRIVACY_ZCDP ? "rho" : "eps", p.value);
    row rows[DP_COUNTER_KIND_COUNT];
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        rows[k] = measure((dp_counter_kind)k, T, p, key);
        fflush(stdout);
    }
    const row *tree = &rows[DP_COUNTER_TREE];
    printf("| kind | max var | max / tree | mean var | mean / tree | ns/step | setup ms |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        const row *r = &rows[k];
        const char *name = dp_counter_kind_name((dp_counter_kind)k);
        if (!r->ok) {
            printf("| %s | n/a | n/a | n/a | n/a | n/a | n/a |\n", name);
            continue;
        }
        const char *b = r->exact ? "" : "≤ ";
        if (tree->ok)
            printf("| %s | %s%.4g | %s%.4f | %s%.4g | %s%.4f | %.0f | %.1f |\n", name, b, r->maxv, b,
                   r->maxv / tree->maxv, b, r->meanv, b, r->meanv / tree->meanv, r->ns, r->setup_ms);
        else
            printf("| %s | %s%.4g | n/a | %s%.4g | n/a | %.0f | %.1f |\n", name, b, r->maxv, b, r->meanv,
                   r->ns, r->setup_ms);
    }
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++)
        if (!rows[k].ok)
            printf("\n%s: n/a — %s", dp_counter_kind_name((dp_counter_kind)k), rows[k].err);
    printf("\n");
}

int main(int argc, char **argv)
{
    uint64_t Ts[8] = {1024, 65536};
    int nT = 2;
    if (argc > 1) {
        nT = 0;
        for (int i = 1; i < argc && nT < 8; i++)
            Ts[nT++] = strtoull(argv[i], NULL, 10);
    }
    dp_key key;
    bench_key(&key);
    for (int i = 0; i < nT; i++) {
        table(Ts[i], (dp_privacy){DP_PRIVACY_ZCDP, 1.0}, &key);
        table(Ts[i], (dp_privacy){DP_PRIVACY_PURE, 1.0}, &key);
    }
    return 0;
}
