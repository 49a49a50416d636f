/* counter.c — the common half of every continual counter: the kind
 * table, validation, step bookkeeping, horizon enforcement (fail closed)
 * and the snapshot envelope.  The mechanisms live in counter_<kind>.c;
 * what they share for drawing noise is counter_noise.c. */
#include "core/counter_impl.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const dp_counter_ops *const KIND_OPS[DP_COUNTER_KIND_COUNT] = {
    [DP_COUNTER_SIMPLE] = &dp_counter_ops_simple,
    [DP_COUNTER_BLOCK] = &dp_counter_ops_block,
    [DP_COUNTER_BLOCK_UNBOUNDED] = &dp_counter_ops_block_unbounded,
    [DP_COUNTER_TREE] = &dp_counter_ops_tree,
    [DP_COUNTER_HYBRID] = &dp_counter_ops_hybrid,
    [DP_COUNTER_HONAKER] = &dp_counter_ops_honaker,
    [DP_COUNTER_SQRT] = &dp_counter_ops_sqrt,
    [DP_COUNTER_BLT] = &dp_counter_ops_blt,
    [DP_COUNTER_SPARSE] = &dp_counter_ops_sparse,
    [DP_COUNTER_SPARSE_INHOMOGENEOUS] = &dp_counter_ops_sparse_inhomogeneous,
};

int dp_counter_prepare_horizons(const dp_counter_config *cfg, uint64_t max_horizon)
{
    if ((unsigned)cfg->kind >= DP_COUNTER_KIND_COUNT)
        return DP_EINVAL;
    const dp_counter_ops *ops = KIND_OPS[cfg->kind];
    return ops->prepare_horizons ? ops->prepare_horizons(cfg, max_horizon) : DP_OK;
}

static int counter_alloc(dp_counter **out, const dp_counter_config *cfg, const dp_key *key,
                         const char *stream_id, size_t stream_id_len, const char *label,
                         char *errstr, size_t errstr_size)
{
    if ((unsigned)cfg->kind >= DP_COUNTER_KIND_COUNT)
        return dp_err(errstr, errstr_size, DP_EINVAL, "unknown counter kind %d", (int)cfg->kind);
    const dp_counter_ops *ops = KIND_OPS[cfg->kind];
    const char *name = dp_counter_kind_name(cfg->kind);

    if (!key)
        return dp_err(errstr, errstr_size, DP_EINVAL, "counter %s: no noise key", name);
    if (ops->bounded && cfg->horizon == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "counter %s needs a horizon T >= 1", name);
    if (cfg->budget.model == DP_PRIVACY_PURE && !ops->supports_pure)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "counter %s cannot be calibrated to pure epsilon; use rho (zCDP)", name);
    if (cfg->budget.model == DP_PRIVACY_ZCDP && !ops->supports_zcdp)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "counter %s cannot be calibrated to rho (zCDP); use epsilon", name);
    if (cfg->budget.model != DP_PRIVACY_PURE && cfg->budget.model != DP_PRIVACY_ZCDP)
        return dp_err(errstr, errstr_size, DP_EINVAL, "counter %s: unknown privacy model", name);
    if (!(cfg->budget.value > 0) || !isfinite(cfg->budget.value))
        return dp_err(errstr, errstr_size, DP_EINVAL, "counter %s: budget must be a positive number", name);
    if (cfg->neighbor_entries > 2)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "counter %s: neighbor_entries must be 1 or 2", name);

    dp_counter *c = calloc(1, sizeof *c);
    if (!c)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    c->ops = ops;
    c->cfg = *cfg;
    if (c->cfg.neighbor_entries == 0)
        c->cfg.neighbor_entries = 1;
    if (c->cfg.max_abs_change == 0)
        c->cfg.max_abs_change = 1;
    if (!ops->bounded)
        c->cfg.horizon = 0;
    c->key = key;
    c->stream_id = malloc(stream_id_len + 1);
    c->label = strdup(label ? label : "counter");
    if (!c->stream_id || !c->label) {
        free(c->stream_id);
        free(c->label);
        free(c);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (stream_id_len)
        memcpy(c->stream_id, stream_id, stream_id_len);
    c->stream_id[stream_id_len] = '\0';
    c->stream_id_len = stream_id_len;

    int rc = ops->init(c, errstr, errstr_size);
    if (rc != DP_OK) {
        free(c->stream_id);
        free(c->label);
        free(c);
        return rc;
    }
    *out = c;
    return DP_OK;
}

int dp_counter_create(dp_counter **out, const dp_counter_config *cfg,
                      const dp_noise_source *noise, char *errstr, size_t errstr_size)
{
    if (!out || !cfg || !noise)
        return dp_err(errstr, errstr_size, DP_EINVAL, "dp_counter_create: NULL argument");
    return counter_alloc(out, cfg, noise->key, noise->stream_id ? noise->stream_id : "",
                         noise->stream_id ? noise->stream_id_len : 0, noise->label,
                         errstr, errstr_size);
}

void dp_counter_destroy(dp_counter *c)
{
    if (!c)
        return;
    if (c->ops && c->ops->fini)
        c->ops->fini(c);
    free(c->stream_id);
    free(c->label);
    free(c);
}

int dp_counter_add(dp_counter *c, int64_t x, int64_t *noisy_prefix)
{
    if (c->ops->bounded && c->t >= c->cfg.horizon)
        return DP_EHORIZON;
    int rc = c->ops->add(c, x, noisy_prefix);
    if (rc == DP_OK)
        c->t++;
    return rc;
}

uint64_t dp_counter_steps(const dp_counter *c) { return c->t; }

const dp_counter_config *dp_counter_config_of(const dp_counter *c) { return &c->cfg; }

double dp_counter_variance(const dp_counter *c, uint64_t t)
{
    if (t == 0 || (c->ops->bounded && t > c->cfg.horizon))
        return NAN;
    return c->ops->variance(c, t);
}

int dp_counter_variance_is_exact(const dp_counter *c) { return c->ops->exact_variance; }

double dp_counter_variance_between(const dp_counter *c, uint64_t a, uint64_t b)
{
    if (a >= b)
        return NAN;
    if (a == 0)
        return dp_counter_variance(c, b);
    double vb = dp_counter_variance(c, b);
    if (c->ops->variance_between && !isnan(vb))
        return c->ops->variance_between(c, a, b);
    double sd = sqrt(dp_counter_variance(c, a)) + sqrt(vb);
    return sd * sd;
}

int dp_counter_variance_between_is_exact(const dp_counter *c)
{
    return c->ops->variance_between != NULL && c->ops->exact_variance;
}


int dp_counter_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    return c->ops->sensitivity(c, l1, l2sq);
}

/* --- snapshot envelope ---------------------------------------------------- */

#define COUNTER_SNAPSHOT_MAGIC   0x44504354u   /* "DPCT" */
#define COUNTER_SNAPSHOT_VERSION 1u

int dp_counter_snapshot(const dp_counter *c, dp_buf *b)
{
    dp_buf_put_u32(b, COUNTER_SNAPSHOT_MAGIC);
    dp_buf_put_u32(b, COUNTER_SNAPSHOT_VERSION);
    dp_buf_put_u32(b, (uint32_t)c->cfg.kind);
    dp_buf_put_u64(b, c->cfg.horizon);
    dp_buf_put_u64(b, c->cfg.block);
    dp_buf_put_u32(b, c->cfg.buffers);
    dp_buf_put_u32(b, (uint32_t)c->cfg.budget.model);
    dp_buf_put_f64(b, c->cfg.budget.value);
    dp_buf_put_u32(b, c->cfg.neighbor_entries);
    dp_buf_put_u64(b, c->cfg.max_abs_change);
    dp_buf_put_blob(b, c->stream_id, c->stream_id_len);
    dp_buf_put_blob(b, c->label, strlen(c->label));
    dp_buf_put_u64(b, c->t);
    int rc = c->ops->save(c, b);
    if (rc != DP_OK)
        return rc;
    return dp_buf_status(b);
}

int dp_counter_restore(dp_counter **out, const uint8_t *data, size_t len,
                       const dp_key *key, char *errstr, size_t errstr_size)
{
    return dp_counter_restore_expect(out, data, len, key, NULL, errstr, errstr_size);
}

int dp_counter_restore_expect(dp_counter **out, const uint8_t *data, size_t len, const dp_key *key,
                              const dp_counter_config *expect, char *errstr, size_t errstr_size)
{
    dp_reader r;
    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    dp_reader_init(&r, data, len);
    uint32_t magic = dp_reader_u32(&r), version = dp_reader_u32(&r);
    if (dp_reader_status(&r) != DP_OK || magic != COUNTER_SNAPSHOT_MAGIC)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "not a counter snapshot");
    if (version != COUNTER_SNAPSHOT_VERSION)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "unsupported counter snapshot version %u", version);
    cfg.kind = (dp_counter_kind)dp_reader_u32(&r);
    cfg.horizon = dp_reader_u64(&r);
    cfg.block = dp_reader_u64(&r);
    cfg.buffers = dp_reader_u32(&r);
    cfg.budget.model = (dp_privacy_model)dp_reader_u32(&r);
    cfg.budget.value = dp_reader_f64(&r);
    cfg.neighbor_entries = dp_reader_u32(&r);
    cfg.max_abs_change = dp_reader_u64(&r);
    size_t sid_len, label_len;
    const uint8_t *sid = dp_reader_blob(&r, &sid_len);
    const uint8_t *lab = dp_reader_blob(&r, &label_len);
    uint64_t t = dp_reader_u64(&r);
    if (dp_reader_status(&r) != DP_OK || label_len > 1024)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "truncated counter snapshot");
    char label[1025];
    memcpy(label, lab, label_len);
    label[label_len] = '\0';
    /* Compare with what the caller will accept before building anything:
     * some kinds fit their parameters at creation (sqrt, blt), which a
     * forged header must not be able to make expensive. */
    if (expect && (cfg.kind != expect->kind || cfg.horizon != expect->horizon || cfg.block != expect->block ||
                   cfg.buffers != expect->buffers || cfg.budget.model != expect->budget.model ||
                   cfg.budget.value != expect->budget.value || cfg.neighbor_entries != expect->neighbor_entries ||
                   cfg.max_abs_change != expect->max_abs_change))
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "counter snapshot of another configuration");

    dp_counter *c;
    int rc = counter_alloc(&c, &cfg, key, (const char *)sid, sid_len, label, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if (c->ops->bounded && t > c->cfg.horizon) {
        dp_counter_destroy(c);
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "counter snapshot step beyond horizon");
    }
    c->t = t;
    rc = c->ops->load(c, &r);
    if (rc == DP_OK)
        rc = dp_reader_finish(&r);
    if (rc != DP_OK) {
        dp_counter_destroy(c);
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "corrupt %s counter state", dp_counter_kind_name(cfg.kind));
    }
    *out = c;
    return DP_OK;
}
