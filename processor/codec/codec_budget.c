/* codec_budget.c — the BudgetEvent message (schemas/BudgetEvent.avsc). */
#include "codec/codec_internal.h"

#include <math.h>
#include <string.h>

#include "core/dp_error.h"

_Static_assert(DP_BUDGET_ACTIVE == 0 && DP_BUDGET_EXHAUSTED == 1,
               "dp_budget_status must match BudgetStatus's symbols");

/* NeighborRelation symbols by position, as the strings synth.h uses. */
static const char *const NEIGHBORS[] = {"replace", "add_remove"};

static int fill_budget(dp_codec *c, const dp_budget_event *e, char *errstr, size_t errstr_size)
{
    if (e->spent_units_step > (uint64_t)INT64_MAX || e->spent_units_total > (uint64_t)INT64_MAX ||
        e->budget_units > (uint64_t)INT64_MAX)
        return dp_err(errstr, errstr_size, DP_EINVAL, "BudgetEvent: ledger units out of range");
    if (e->step < 1 || e->step > (uint64_t)INT64_MAX)
        return dp_err(errstr, errstr_size, DP_EINVAL, "BudgetEvent: step %llu outside 1..2^63-1",
                      (unsigned long long)e->step);
    if (e->status != DP_BUDGET_ACTIVE && e->status != DP_BUDGET_EXHAUSTED)
        return dp_err(errstr, errstr_size, DP_EINVAL, "BudgetEvent: unknown status %d", (int)e->status);
    int model;
    if (e->model == DP_PRIVACY_ZCDP)
        model = 0;
    else if (e->model == DP_PRIVACY_PURE)
        model = 1;
    else
        return dp_err(errstr, errstr_size, DP_EINVAL, "BudgetEvent: unknown privacy model %d",
                      (int)e->model);
    int neighbors = -1;
    for (int i = 0; i < 2; i++)
        if (e->neighbors && strcmp(e->neighbors, NEIGHBORS[i]) == 0)
            neighbors = i;
    if (neighbors < 0)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "BudgetEvent: neighbors must be \"replace\" or \"add_remove\"");
    if (!e->mechanism || !e->unit)
        return dp_err(errstr, errstr_size, DP_EINVAL, "BudgetEvent: mechanism and unit are required");
    avro_value_t *v = dpc_begin(c, DP_CODEC_BUDGET_EVENT);
    avro_value_t f[BUD_NFIELDS];
    for (int i = 0; i < BUD_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "BudgetEvent");
    int rc;
    if ((rc = dpc_set_str(c, &f[BUD_STREAM], e->stream_id, e->stream_id_len, 1,
                          "BudgetEvent.stream", errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_str(c, &f[BUD_MECH], e->mechanism, strlen(e->mechanism), 1,
                          "BudgetEvent.mechanism", errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_str(c, &f[BUD_UNIT], e->unit, strlen(e->unit), 1, "BudgetEvent.unit",
                          errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_named_values(&f[BUD_NOISE], e->noise, e->n_noise, "BudgetEvent.noise",
                                   errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_named_values(&f[BUD_ACCURACY], e->accuracy, e->n_accuracy,
                                   "BudgetEvent.accuracy", errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_str(c, &f[BUD_PUBLIC], e->public_inputs ? e->public_inputs : "",
                          e->public_inputs ? strlen(e->public_inputs) : 0, 0, "BudgetEvent.public_inputs", errstr,
                          errstr_size)) != DP_OK ||
        (rc = dpc_set_str(c, &f[BUD_KEY_FP], e->key_fingerprint ? e->key_fingerprint : "",
                          e->key_fingerprint ? strlen(e->key_fingerprint) : 0, 0, "BudgetEvent.key_fingerprint",
                          errstr, errstr_size)) != DP_OK)
        return rc;
    if (avro_value_set_long(&f[BUD_STEP], (int64_t)e->step) != 0 ||
        avro_value_set_enum(&f[BUD_STATUS], (int)e->status) != 0 ||
        avro_value_set_enum(&f[BUD_NEIGHBORS], neighbors) != 0 ||
        avro_value_set_enum(&f[BUD_MODEL], model) != 0 ||
        avro_value_set_double(&f[BUD_SPENT_STEP], e->spent_step) != 0 ||
        avro_value_set_double(&f[BUD_SPENT_TOTAL], e->spent_total) != 0 ||
        avro_value_set_double(&f[BUD_BUDGET_TOTAL], e->budget_total) != 0 ||
        dpc_set_opt_double(&f[BUD_DELTA], e->delta) != DP_OK ||
        dpc_set_opt_double(&f[BUD_EPS_SIMPLE], e->eps_simple) != DP_OK ||
        dpc_set_opt_double(&f[BUD_EPS_CKS], e->eps_cks) != DP_OK ||
        avro_value_set_long(&f[BUD_UNITS_STEP], (int64_t)e->spent_units_step) != 0 ||
        avro_value_set_long(&f[BUD_UNITS_TOTAL], (int64_t)e->spent_units_total) != 0 ||
        avro_value_set_long(&f[BUD_UNITS_BUDGET], (int64_t)e->budget_units) != 0)
        return dpc_avro_fail(errstr, errstr_size, "BudgetEvent");
    return DP_OK;
}

int dp_codec_encode_budget(dp_codec *c, const dp_budget_event *e, void *buf, size_t cap,
                           size_t *len, char *errstr, size_t errstr_size)
{
    int rc = fill_budget(c, e, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write(c, DP_CODEC_BUDGET_EVENT, buf, cap, len, errstr, errstr_size);
}

int dp_codec_encode_budget_buf(dp_codec *c, const dp_budget_event *e, dp_buf *out,
                               char *errstr, size_t errstr_size)
{
    int rc = fill_budget(c, e, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write_buf(c, DP_CODEC_BUDGET_EVENT, out, errstr, errstr_size);
}

int dp_codec_decode_budget(dp_codec *c, const void *data, size_t len, dp_budget_event *out,
                           char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    avro_value_t *v;
    int rc = dpc_read(c, DP_CODEC_BUDGET_EVENT, data, len, &v, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    avro_value_t f[BUD_NFIELDS];
    for (int i = 0; i < BUD_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "BudgetEvent");
    dp_budget_event e;
    memset(&e, 0, sizeof e);
    int64_t step, units[3];
    int status, neighbors, model;
    size_t n_noise, n_acc, slen;
    if (avro_value_get_long(&f[BUD_STEP], &step) != 0 ||
        avro_value_get_enum(&f[BUD_STATUS], &status) != 0 ||
        avro_value_get_enum(&f[BUD_NEIGHBORS], &neighbors) != 0 ||
        avro_value_get_enum(&f[BUD_MODEL], &model) != 0 ||
        avro_value_get_double(&f[BUD_SPENT_STEP], &e.spent_step) != 0 ||
        avro_value_get_double(&f[BUD_SPENT_TOTAL], &e.spent_total) != 0 ||
        avro_value_get_double(&f[BUD_BUDGET_TOTAL], &e.budget_total) != 0 ||
        dpc_get_opt_double(&f[BUD_DELTA], &e.delta) != DP_OK ||
        dpc_get_opt_double(&f[BUD_EPS_SIMPLE], &e.eps_simple) != DP_OK ||
        dpc_get_opt_double(&f[BUD_EPS_CKS], &e.eps_cks) != DP_OK ||
        avro_value_get_long(&f[BUD_UNITS_STEP], &units[0]) != 0 ||
        avro_value_get_long(&f[BUD_UNITS_TOTAL], &units[1]) != 0 ||
        avro_value_get_long(&f[BUD_UNITS_BUDGET], &units[2]) != 0 ||
        avro_value_get_size(&f[BUD_NOISE], &n_noise) != 0 ||
        avro_value_get_size(&f[BUD_ACCURACY], &n_acc) != 0)
        return dpc_avro_fail(errstr, errstr_size, "BudgetEvent");
    if (step < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "BudgetEvent: step %lld is not >= 1",
                      (long long)step);
    if (units[0] < 0 || units[1] < 0 || units[2] < 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "BudgetEvent: negative ledger units");
    e.spent_units_step = (uint64_t)units[0];
    e.spent_units_total = (uint64_t)units[1];
    e.budget_units = (uint64_t)units[2];
    if ((rc = dpc_get_str(&f[BUD_STREAM], &e.stream_id, &e.stream_id_len, 1, "BudgetEvent.stream",
                          errstr, errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[BUD_MECH], &e.mechanism, &slen, 1, "BudgetEvent.mechanism", errstr,
                          errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[BUD_UNIT], &e.unit, &slen, 1, "BudgetEvent.unit", errstr,
                          errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[BUD_PUBLIC], &e.public_inputs, &slen, 0, "BudgetEvent.public_inputs", errstr,
                          errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[BUD_KEY_FP], &e.key_fingerprint, &slen, 0, "BudgetEvent.key_fingerprint", errstr,
                          errstr_size)) != DP_OK)
        return rc;
    if (n_noise > SIZE_MAX - n_acc ||
        dp_vec_reserve(&c->budget_kv, n_noise + n_acc, sizeof(dp_kv)) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "BudgetEvent: out of memory");
    dp_kv *kv = c->budget_kv.p;
    if ((rc = dpc_get_named_values(&f[BUD_NOISE], kv, &e.n_noise, "BudgetEvent.noise", errstr,
                                   errstr_size)) != DP_OK ||
        (rc = dpc_get_named_values(&f[BUD_ACCURACY], kv + n_noise, &e.n_accuracy,
                                   "BudgetEvent.accuracy", errstr, errstr_size)) != DP_OK)
        return rc;
    e.noise = kv;
    e.accuracy = kv + n_noise;
    e.step = (uint64_t)step;
    e.status = (dp_budget_status)status;
    e.neighbors = NEIGHBORS[neighbors];
    e.model = model == 0 ? DP_PRIVACY_ZCDP : DP_PRIVACY_PURE;
    *out = e;
    return DP_OK;
}
