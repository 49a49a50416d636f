/* marginal_counters.c — per-cell continual counters, the code every
 * counter-keeping method of `marginal` shares (docs/privacy.md §5).  Owns:
 * making a marginal's per-cell counters under one label prefix
 * ("<prefix>/c<cell>"), feeding them a change vector, and reading an
 * attribute's 1-way change off a workload; a select_measure_fit workload's
 * counters, made the first time it is selected (by a step, or by a restore
 * of a stream that had selected it) — each counter has its own noise label,
 * so creating them lazily shifts no other draw; and the offset r(t, W) that
 * anchors the counters on an earlier release (§6.2); a counter's exact
 * snapshot (its last prefix sum, then its bytes) and restore.  Calls core/counter;
 * marginal_method.c, marginal_independent.c and marginal_forest*.c call it. */
#include "synth/marginal/marginal_release.h"

#include "core/dp_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dp_marginal_cells_create(const marginal_release *m, const dp_counter_config *cc, dp_counter **cnt,
                             uint64_t cells, const char *prefix, char *errstr, size_t errstr_size)
{
    char why[256] = "";
    for (uint64_t k = 0; k < cells; k++) {
        char label[64];
        snprintf(label, sizeof label, "%s/c%llu", prefix, (unsigned long long)k);
        dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, label};
        int rc = dp_counter_create(&cnt[k], cc, &ns, why, sizeof why);
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": counter: %s", why);
    }
    return DP_OK;
}

int dp_marginal_cells_add(dp_counter **cnt, int64_t *last, const int64_t *dv, uint64_t cells, double *total,
                          char *errstr, size_t errstr_size)
{
    double t = 0;
    for (uint64_t k = 0; k < cells; k++) {
        int rc = dp_counter_add(cnt[k], dv[k], &last[k]);
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": counter of cell %llu: %s", (unsigned long long)k,
                          dp_status_str(rc));
        t += (double)last[k];
    }
    if (total)
        *total = t;
    return DP_OK;
}

void dp_marginal_one_way_delta(const marginal_release *m, uint32_t a, int64_t *out)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_marginal_workload *w = &c->workloads[c->one_way_source[a]];
    uint64_t stride = 1;
    for (uint32_t j = w->k; j-- > 0 && w->attrs[j] != a;)
        stride *= c->sizes[w->attrs[j]];
    memset(out, 0, c->sizes[a] * sizeof *out);
    for (uint64_t cell = 0; cell < w->cells; cell++)
        out[(cell / stride) % c->sizes[a]] += m->d[w->offset + cell];
}


/* One counter: its last noisy prefix sum, then its snapshot as a blob. */
int dp_marginal_put_counter(dp_buf *b, int64_t last, const dp_counter *cn)
{
    dp_buf_put_i64(b, last);
    dp_buf cb;
    dp_buf_init(&cb);
    int rc = dp_counter_snapshot(cn, &cb);
    if (rc == DP_OK)
        dp_buf_put_blob(b, cb.data, cb.len);
    dp_buf_free(&cb);
    return rc;
}

/* put_counter's inverse into *slot (created with the configuration to expect), which must have `steps` steps. */
int dp_marginal_get_counter(const marginal_release *m, dp_reader *r, dp_counter **slot, int64_t *last, uint64_t steps)
{
    char why[128];
    *last = dp_reader_i64(r);
    size_t len;
    const uint8_t *p = dp_reader_blob(r, &len);
    if (!p)
        return DP_ECORRUPT;
    dp_counter *cn = NULL;
    if (dp_counter_restore_expect(&cn, p, len, m->key, dp_counter_config_of(*slot), why, sizeof why) != DP_OK)
        return DP_ECORRUPT;
    if (dp_counter_steps(cn) != steps) {
        dp_counter_destroy(cn);
        return DP_ECORRUPT;
    }
    dp_counter_destroy(*slot);
    *slot = cn;
    return DP_OK;
}

int dp_marginal_ensure_counters(marginal_release *m, size_t i, char *errstr, size_t errstr_size)
{
    wl_state *w = &m->wl[i];
    if (w->cnt)
        return DP_OK;
    uint64_t cells = m->cfg.workloads[i].cells;
    w->cnt = calloc(cells, sizeof *w->cnt);
    w->c_last = calloc(cells, sizeof *w->c_last);
    if (!w->cnt || !w->c_last)
        return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    char prefix[32];
    snprintf(prefix, sizeof prefix, NAME "/w%zu", i);
    return dp_marginal_cells_create(m, &m->ccfg, w->cnt, cells, prefix, errstr, errstr_size);
}

int dp_marginal_r_from_g(const marginal_release *m, size_t i, double *out)
{
    const wl_state *s = &m->wl[i];
    const dp_marginal_workload *w = &m->cfg.workloads[i];
    int rc = m->mops->marginal(m->g, w, out);
    if (rc != DP_OK)
        return rc;
    if (s->c_last)
        for (uint64_t k = 0; k < w->cells; k++)
            out[k] -= (double)s->c_last[k];
    return DP_OK;
}
