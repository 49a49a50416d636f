/* longitudinal_math.c — see longitudinal_math.h. */
#include "synth/longitudinal/longitudinal_math.h"

void dp_choose_uniform(dp_drbg *g, uint32_t *items, uint64_t n, uint64_t r)
{
    for (uint64_t j = 0; j < r && j + 1 < n; j++) {
        uint64_t u = j + dp_drbg_uniform(g, n - j);
        uint32_t tmp = items[j];
        items[j] = items[u];
        items[u] = tmp;
    }
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Σ t = total with every t >= 0, changing as little of the large entries
 * as possible (see the header).  Uses only noisy values: post-processing. */
static int clamp_targets(int64_t *t, uint32_t c, int64_t total, dp_drbg *g, uint32_t *scratch)
{
    int neg = 0;
    for (uint32_t v = 0; v < c; v++)
        if (t[v] < 0) {
            t[v] = 0;
            neg = 1;
        }
    if (!neg)
        return 0;
    int64_t hi = 0;
    for (uint32_t v = 0; v < c; v++)
        if (t[v] > hi)
            hi = t[v];
    /* Smallest level L with Σ min(t_v, L) >= total; Σ t >= total holds at hi. */
    int64_t lo = 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, s = 0;
        for (uint32_t v = 0; v < c; v++)
            s += t[v] < mid ? t[v] : mid;
        if (s >= total)
            hi = mid;
        else
            lo = mid + 1;
    }
    int64_t level = hi, sum = 0;
    uint32_t at = 0;
    for (uint32_t v = 0; v < c; v++) {
        if (t[v] >= level) {
            t[v] = level;
            scratch[at++] = v;
        }
        sum += t[v];
    }
    /* Σ min(t, L-1) < total, so the surplus is below the entries at L. */
    int64_t surplus = sum - total;
    if (surplus > 0) {
        dp_choose_uniform(g, scratch, at, (uint64_t)surplus);
        for (int64_t j = 0; j < surplus; j++)
            t[scratch[j]]--;
    }
    return 1;
}

int dp_window_project(const int64_t *chat, uint32_t c, int64_t total, dp_drbg *g_round,
                      dp_drbg *g_clamp, int64_t *t, uint32_t *scratch)
{
    int64_t sumc = 0;
    for (uint32_t v = 0; v < c; v++)
        sumc += chat[v];
    int64_t d = total - sumc;
    int64_t q = floor_div(d, (int64_t)c);
    int64_t r = d - q * (int64_t)c;
    for (uint32_t v = 0; v < c; v++) {
        t[v] = chat[v] + q;
        scratch[v] = v;
    }
    if (r > 0) {
        dp_choose_uniform(g_round, scratch, c, (uint64_t)r);
        for (int64_t j = 0; j < r; j++)
            t[scratch[j]]++;
    }
    return clamp_targets(t, c, total, g_clamp, scratch);
}

void dp_cumulative_monotonize(const int64_t *prev, const int64_t *noisy, uint64_t t, int64_t *out)
{
    out[0] = prev[0];
    for (uint64_t b = 1; b <= t; b++) {
        int64_t lower = b < t ? prev[b] : 0;   /* Ŝ_t^{t-1} = 0 */
        int64_t s = noisy[b] > lower ? noisy[b] : lower;
        out[b] = s < prev[b - 1] ? s : prev[b - 1];
    }
}
