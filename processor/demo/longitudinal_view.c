/* longitudinal_view.c — consumer-side statistics of window / cumulative
 * releases and of the true panel (see longitudinal_view.h). */
#include "demo/longitudinal_view.h"

#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

double dp_kv_find(const dp_kv *kv, size_t n, const char *key, double dflt)
{
    for (size_t i = 0; i < n; i++)
        if (kv[i].key && strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return dflt;
}

double dp_manifest_debias(const dp_release_manifest *m, const char *key, double dflt)
{
    return dp_kv_find(m->debias, m->n_debias, key, dflt);
}

static int grow_u64(uint64_t **a, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    uint64_t *p = realloc(*a, c * sizeof *p);
    if (!p)
        return -1;
    memset(p + *cap, 0, (c - *cap) * sizeof *p);
    *a = p;
    *cap = c;
    return 0;
}

/* --- window ------------------------------------------------------------------ */

int dp_window_view_init(dp_window_view *v, uint32_t k, uint32_t c)
{
    memset(v, 0, sizeof *v);
    if (k < 1 || c < 2)
        return DP_EINVAL;
    uint64_t bins = 1;
    for (uint32_t j = 0; j < k; j++) {
        if (bins > (1u << 24) / c)
            return DP_ERANGE;
        bins *= c;
    }
    v->k = k;
    v->c = c;
    v->bins = bins;
    v->hist = calloc(bins, sizeof *v->hist);
    return v->hist ? DP_OK : DP_ENOMEM;
}

void dp_window_view_free(dp_window_view *v)
{
    free(v->code);
    free(v->hist);
    memset(v, 0, sizeof *v);
}

static void window_rebuild_hist(dp_window_view *v)
{
    memset(v->hist, 0, v->bins * sizeof *v->hist);
    for (size_t i = 0; i < v->n; i++)
        v->hist[v->code[i]]++;
}

int dp_window_view_record(dp_window_view *v, const dp_synth_record *r)
{
    if (r->synthetic_id >= SIZE_MAX / 2) {
        v->bad = 1;
        return DP_EINVAL;
    }
    size_t id = (size_t)r->synthetic_id;
    if (grow_u64(&v->code, &v->cap, id + 1) != 0)
        return DP_ENOMEM;
    if (id + 1 > v->n)
        v->n = id + 1;
    const dp_payload *p = &r->value;
    if (p->kind == DP_PAYLOAD_ROW && p->row_len == v->k) {
        uint64_t code = 0;
        for (size_t j = 0; j < p->row_len; j++) {
            if (p->row[j] < 0 || (uint32_t)p->row[j] >= v->c) {
                v->bad = 1;
                return DP_EINVAL;
            }
            code = code * v->c + (uint64_t)p->row[j];
        }
        v->code[id] = code;
        return DP_OK;
    }
    if (p->kind == DP_PAYLOAD_CATEGORY && p->category >= 0 && (uint64_t)p->category < v->c) {
        v->code[id] = (v->code[id] * v->c + (uint64_t)p->category) % v->bins;
        return DP_OK;
    }
    v->bad = 1;
    return DP_EINVAL;
}

int dp_window_view_manifest(dp_window_view *v, const dp_release_manifest *m)
{
    if (m->record_count > 0 && m->mode == DP_RELEASE_FULL)
        v->values_seen = v->k;          /* the k-histories arrived as rows */
    else
        v->values_seen++;
    v->n_pad = dp_manifest_debias(m, "n_pad", 0);
    v->population = (uint64_t)dp_manifest_debias(m, "population", (double)v->n);
    v->clamped = m->clamped;
    if (v->values_seen >= v->k)
        window_rebuild_hist(v);
    return DP_OK;
}

int dp_window_view_truth_step(dp_window_view *v, const uint8_t *values, size_t n)
{
    if (grow_u64(&v->code, &v->cap, n) != 0)
        return DP_ENOMEM;
    v->n = n;
    v->population = n;
    for (size_t i = 0; i < n; i++)
        v->code[i] = (v->code[i] * v->c + values[i]) % v->bins;
    v->values_seen++;
    if (v->values_seen >= v->k)
        window_rebuild_hist(v);
    return DP_OK;
}

double dp_window_view_fraction_true(const dp_window_view *v, uint64_t code)
{
    return v->n ? (double)v->hist[code] / (double)v->n : 0.0;
}

double dp_window_view_fraction_raw(const dp_window_view *v, uint64_t code)
{
    return v->population ? (double)v->hist[code] / (double)v->population : 0.0;
}

double dp_window_view_fraction_debiased(const dp_window_view *v, uint64_t code)
{
    double denom = (double)v->population - (double)v->bins * v->n_pad;
    return denom > 0 ? ((double)v->hist[code] - v->n_pad) / denom : 0.0;
}

/* --- cumulative ---------------------------------------------------------------- */

int dp_cumulative_view_init(dp_cumulative_view *v, uint64_t horizon)
{
    memset(v, 0, sizeof *v);
    if (horizon < 1 || horizon > (1u << 20))
        return DP_EINVAL;
    v->horizon = horizon;
    v->at_least = calloc(horizon + 2, sizeof *v->at_least);
    return v->at_least ? DP_OK : DP_ENOMEM;
}

void dp_cumulative_view_free(dp_cumulative_view *v)
{
    free(v->weight);
    free(v->at_least);
    memset(v, 0, sizeof *v);
}

static int grow_u32(uint32_t **a, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    uint32_t *p = realloc(*a, c * sizeof *p);
    if (!p)
        return -1;
    memset(p + *cap, 0, (c - *cap) * sizeof *p);
    *a = p;
    *cap = c;
    return 0;
}

static void cumulative_rebuild(dp_cumulative_view *v)
{
    memset(v->at_least, 0, (v->horizon + 2) * sizeof *v->at_least);
    for (size_t i = 0; i < v->n; i++) {
        uint32_t w = v->weight[i];
        v->at_least[w <= v->horizon ? w : v->horizon]++;
    }
    /* suffix sums: at_least[b] = #{weight >= b} */
    for (uint64_t b = v->horizon; b-- > 0;)
        v->at_least[b] += v->at_least[b + 1];
}

int dp_cumulative_view_record(dp_cumulative_view *v, const dp_synth_record *r)
{
    if (r->synthetic_id >= SIZE_MAX / 2 || r->value.kind != DP_PAYLOAD_CATEGORY ||
        (r->value.category != 0 && r->value.category != 1)) {
        v->bad = 1;
        return DP_EINVAL;
    }
    size_t id = (size_t)r->synthetic_id;
    if (grow_u32(&v->weight, &v->cap, id + 1) != 0)
        return DP_ENOMEM;
    if (id + 1 > v->n)
        v->n = id + 1;
    v->weight[id] += (uint32_t)r->value.category;
    v->step_records++;
    return DP_OK;
}

int dp_cumulative_view_manifest(dp_cumulative_view *v, const dp_release_manifest *m)
{
    v->steps++;
    v->step_records = 0;
    cumulative_rebuild(v);
    return DP_OK;
}

int dp_cumulative_view_truth_step(dp_cumulative_view *v, const uint8_t *bits, size_t n)
{
    if (grow_u32(&v->weight, &v->cap, n) != 0)
        return DP_ENOMEM;
    v->n = n;
    for (size_t i = 0; i < n; i++)
        v->weight[i] += bits[i] ? 1u : 0u;
    v->steps++;
    cumulative_rebuild(v);
    return DP_OK;
}
