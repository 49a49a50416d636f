/* marginal_counters.c — a workload's per-cell continual counters, made the
 * first time the workload is selected (by a step, or by a restore of a
 * stream that had selected it).  Each counter has its own noise label
 * (workload, cell), so creating them lazily shifts no other draw.  And the
 * offset r(t, W) that anchors the counters on an earlier release (§6.2). */
#include "synth/marginal/marginal_release.h"

#include "core/dp_error.h"

#include <stdio.h>
#include <stdlib.h>


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
    for (uint64_t c = 0; c < cells; c++) {
        char label[48];
        snprintf(label, sizeof label, NAME "/w%zu/c%llu", i, (unsigned long long)c);
        dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, label};
        int rc = dp_counter_create(&w->cnt[c], &m->ccfg, &ns, errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
    }
    return DP_OK;
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
