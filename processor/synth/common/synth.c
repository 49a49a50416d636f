/* synth.c — the synthesizer registry and the single-shard bundle
 * (synth.h): one ingest half + one release half (which owns the stream's
 * budget ledger) + the open step.
 *
 * Close = ingest_close (exact statistics of the step) → release_step
 * (noise, synthetic update, budget event).  The bundle adds no state of
 * its own beyond the open step and a reusable statistics buffer, so a
 * sharded deployment (many ingest halves, one release half) releases
 * exactly what the bundle releases (tests/unit/test_synth_shards.c).
 * The close is its two halves composed: dp_synth_close_ingest's close,
 * then dp_synth_release_stats's release — callable one at a time for a
 * sharded stream (docs/kafka.md §10; tests/unit/test_shard_seam.c).
 *
 * Owns: the bundle (both halves, open step, statistics buffer, config
 * text, stream id, role; its layout in synth_internal.h) and the combined
 * snapshot; the per-role snapshots are synth_role.c's (docs/kafka.md
 * §10).  Calls: the synthesizers' ops, stats, plan (the
 * exhaustion rule), accountant (key fingerprint), numfmt. */
#include "synth/common/synth.h"
#include "synth/common/synth_internal.h"

#include "core/dp_error.h"
#include "core/numfmt.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>


extern const dp_synth_ops dp_synth_ops_window;
extern const dp_synth_ops dp_synth_ops_cumulative;
extern const dp_synth_ops dp_synth_ops_marginal;
extern const dp_synth_ops dp_synth_ops_spatial;
extern const dp_synth_ops dp_synth_ops_adaptive;
extern const dp_synth_ops dp_synth_ops_hypercube;

static const dp_synth_ops *const REGISTRY[] = {
    &dp_synth_ops_window,
    &dp_synth_ops_cumulative,
    &dp_synth_ops_marginal,
    &dp_synth_ops_spatial,
    &dp_synth_ops_adaptive,
    &dp_synth_ops_hypercube,
    NULL,
};

const dp_synth_ops *dp_synth_ops_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; REGISTRY[i]; i++)
        if (strcmp(REGISTRY[i]->name, name) == 0)
            return REGISTRY[i];
    return NULL;
}

const dp_synth_ops *dp_synth_ops_at(size_t i)
{
    return i < sizeof REGISTRY / sizeof REGISTRY[0] ? REGISTRY[i] : NULL;
}

int dp_synth_budget_zcdp_only(const char *name)
{
    const dp_synth_ops *ops = dp_synth_ops_find(name);
    return ops && ops->budget_zcdp_only;
}

int dp_synth_shards_by_entity(const char *name)
{
    const dp_synth_ops *ops = dp_synth_ops_find(name);
    return ops && ops->shards_by_entity;
}

static const char *const REASON_NAMES[DP_REJECT_REASON_COUNT] = {
    [DP_REJECT_NONE] = "NONE",
    [DP_REJECT_MALFORMED] = "MALFORMED",
    [DP_REJECT_UNKNOWN_STREAM] = "UNKNOWN_STREAM",
    [DP_REJECT_WRONG_KIND] = "WRONG_KIND",
    [DP_REJECT_UNKNOWN_ENTITY] = "UNKNOWN_ENTITY",
    [DP_REJECT_DUPLICATE_REPORT] = "DUPLICATE_REPORT",
    [DP_REJECT_OUT_OF_DOMAIN] = "OUT_OF_DOMAIN",
    [DP_REJECT_LATE] = "LATE",
    [DP_REJECT_FUTURE_STEP] = "FUTURE_STEP",
    [DP_REJECT_EXHAUSTED] = "EXHAUSTED",
    [DP_REJECT_KEY_MISMATCH] = "KEY_MISMATCH",
    [DP_REJECT_STREAM_LIMIT] = "STREAM_LIMIT",
    [DP_REJECT_NOT_PRESENT] = "NOT_PRESENT",
    [DP_REJECT_USER_LIMIT] = "USER_LIMIT",
    [DP_REJECT_INCOMPATIBLE_SCHEMA] = "INCOMPATIBLE_SCHEMA",
    [DP_REJECT_ENTITY_REQUIRED] = "ENTITY_REQUIRED",
};

static const char *const RELEASE_MODE_NAMES[DP_RELEASE_MODE_COUNT] = {
    [DP_RELEASE_FULL] = "FULL",
    [DP_RELEASE_DELTA] = "DELTA",
    [DP_RELEASE_NONE] = "NONE",
};

const char *dp_release_mode_name(dp_release_mode m)
{
    return (unsigned)m < DP_RELEASE_MODE_COUNT ? RELEASE_MODE_NAMES[m] : NULL;
}

int dp_release_mode_parse(const char *s, dp_release_mode *out)
{
    for (int i = 0; s && i < DP_RELEASE_MODE_COUNT; i++)
        if (strcmp(s, RELEASE_MODE_NAMES[i]) == 0) {
            *out = (dp_release_mode)i;
            return 0;
        }
    return -1;
}

const char *dp_reject_reason_name(dp_reject_reason r)
{
    if ((unsigned)r >= DP_REJECT_REASON_COUNT)
        return "UNKNOWN_REASON";
    return REASON_NAMES[r];
}

const char *dp_reject_reason_text(dp_reject_reason r)
{
    switch (r) {
    case DP_REJECT_MALFORMED:        return "not a valid Update";
    case DP_REJECT_UNKNOWN_STREAM:   return "no stream route matches this stream id";
    case DP_REJECT_WRONG_KIND:       return "update or payload kind not taken by this stream's synthesizer";
    case DP_REJECT_UNKNOWN_ENTITY:   return "entity not in the roster fixed at step 1";
    case DP_REJECT_DUPLICATE_REPORT: return "entity already reported in this step";
    case DP_REJECT_OUT_OF_DOMAIN:    return "value outside the configured domain";
    case DP_REJECT_LATE:             return "step already closed";
    case DP_REJECT_FUTURE_STEP:      return "step after the stream's open step";
    case DP_REJECT_EXHAUSTED:        return "stream stopped: budget or horizon used up";
    case DP_REJECT_KEY_MISMATCH:     return "Kafka key is not the stream id, or the message is not in that key's partition";
    case DP_REJECT_STREAM_LIMIT:     return "a new stream id over its route's max_streams";
    case DP_REJECT_NOT_PRESENT:      return "DELETE of a row that is not in the current data (for its entity)";
    case DP_REJECT_USER_LIMIT:       return "user-level stream: the update has no entity, or its entity used its max_rows_per_user row events";
    case DP_REJECT_INCOMPATIBLE_SCHEMA: return "written with a schema (registry id) that cannot be read as dpstream's Update";
    case DP_REJECT_ENTITY_REQUIRED:  return "DELETE without an entity: a delete must name the entity whose row or point it removes";
    default:                         return "refused by the synthesizer";
    }
}


int dp_synth_create(dp_synth **out, const char *name, const json_t *config,
                    const dp_synth_env *env, char *errstr, size_t errstr_size)
{
    *out = NULL;
    const dp_synth_ops *ops = dp_synth_ops_find(name);
    if (!ops)
        return dp_err(errstr, errstr_size, DP_EINVAL, "unknown synthesizer \"%s\"", name ? name : "(null)");
    if (!env || !env->key)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: no noise key", name);
    dp_synth *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    s->ops = ops;
    s->open_step = 1;
    dp_key_fingerprint(env->key, s->key_fp);
    snprintf(s->stream_id, sizeof s->stream_id, "%.*s", (int)(env->stream_id_len < 120 ? env->stream_id_len : 120),
             env->stream_id ? env->stream_id : "");
    dp_stats_init(&s->stats, 1);
    /* Public (the configuration is public, README "Privacy semantics"), and
     * what lets a refused restore say which field changed. */
    s->sid_len = env->stream_id ? env->stream_id_len : 0;
    if (!(s->config_text = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)) ||
        !(s->sid = malloc(s->sid_len + 1))) {
        dp_synth_destroy(s);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    memcpy(s->sid, s->sid_len ? env->stream_id : "", s->sid_len);
    int rc = ops->ingest_create(&s->in, config, errstr, errstr_size);
    if (rc == DP_OK)
        rc = ops->release_create(&s->rel, config, env, errstr, errstr_size);
    if (rc != DP_OK) {
        dp_synth_destroy(s);
        return rc;
    }
    s->last_step = ops->release_last_step ? ops->release_last_step(s->rel) : 0;
    s->exhausted = dp_synth_exhausted(s);
    *out = s;
    return DP_OK;
}

void dp_synth_destroy(dp_synth *s)
{
    if (!s)
        return;
    if (s->in)
        s->ops->ingest_destroy(s->in);
    if (s->rel)
        s->ops->release_destroy(s->rel);
    dp_stats_free(&s->stats);
    free(s->config_text);
    free(s->sid);
    free(s);
}


int dp_synth_ingest(dp_synth *s, const dp_update *u, dp_reject_reason *reason)
{
    /* A stopped stream takes nothing, whatever the update (fail closed). */
    if (s->exhausted) {
        *reason = DP_REJECT_EXHAUSTED;
        return DP_OK;
    }
    return s->ops->ingest_update(s->in, u, reason);
}

int dp_synth_ingest_batch(dp_synth *s, const dp_update *u, size_t n, dp_reject_reason *reasons)
{
    /* The exhausted flag changes only at close/restore, never within a batch. */
    if (s->exhausted) {
        for (size_t i = 0; i < n; i++)
            reasons[i] = DP_REJECT_EXHAUSTED;
        return DP_OK;
    }
    if (s->ops->ingest_update_batch)
        return s->ops->ingest_update_batch(s->in, u, n, reasons);
    for (size_t i = 0; i < n; i++) {
        int rc = s->ops->ingest_update(s->in, &u[i], &reasons[i]);
        if (rc != DP_OK)
            return rc;
    }
    return DP_OK;
}

uint64_t dp_synth_open_step(const dp_synth *s) { return s->open_step; }

int dp_synth_exhausted(const dp_synth *s)
{
    return s->ops->release_exhausted(s->rel) || dp_synth_plan_exhausted(s->last_step, s->open_step - 1);
}

int dp_synth_roster_complete(const dp_synth *s)
{
    if (dp_synth_exhausted(s) || !s->ops->ingest_roster_complete)
        return 0;
    return s->ops->ingest_roster_complete(s->in);
}

static int sink_record_fwd(void *ctx, const dp_synth_record *r)
{
    const dp_synth *s = ctx;
    return s->sink->record ? s->sink->record(s->sink->ctx, r) : 0;
}

static int sink_manifest_fwd(void *ctx, const dp_release_manifest *m)
{
    const dp_synth *s = ctx;
    return s->sink->manifest ? s->sink->manifest(s->sink->ctx, m) : 0;
}

static int sink_budget_fp(void *ctx, const dp_budget_event *e)
{
    const dp_synth *s = ctx;
    dp_budget_event with = *e;
    with.key_fingerprint = s->key_fp;
    return s->sink->budget ? s->sink->budget(s->sink->ctx, &with) : 0;
}

/* Why s may not close or release step `step` now (DP_OK if it may). */
static int close_refusal(const dp_synth *s, uint64_t step, char *errstr, size_t errstr_size)
{
    if (s->read_only)
        return dp_err(errstr, errstr_size, DP_ESTATE, "%s stream '%s': opened read-only, for inspection; it "
                      "cannot release", s->ops->name, s->stream_id);
    if (dp_synth_exhausted(s))
        return dp_err(errstr, errstr_size, DP_EHORIZON,
                      "%s: stream exhausted (horizon or budget used up); step %llu not released",
                      s->ops->name, (unsigned long long)step);
    return DP_OK;
}

/* The ingest half's close: the open step's exact statistics into *out.
 * The open step is the caller's to advance. */
static int ingest_close(dp_synth *s, dp_stats *out, char *errstr, size_t errstr_size)
{
    dp_stats_clear(out, s->open_step);
    int rc = s->ops->ingest_close(s->in, s->open_step, out);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, "%s: computing step %llu statistics: %s", s->ops->name,
                      (unsigned long long)s->open_step, dp_status_str(rc));
    return DP_OK;
}

/* The release half's step `step` from its statistics st. */
static int release(dp_synth *s, uint64_t step, const dp_stats *st, const dp_release_sink *sink, char *errstr,
                   size_t errstr_size)
{
    /* Every budget event names the key's fingerprint: the release halves
     * do not know the key, the bundle does. */
    dp_release_sink wrapped = {.ctx = s, .record = sink_record_fwd, .manifest = sink_manifest_fwd,
                               .budget = sink_budget_fp};
    s->sink = sink;
    int rc = s->ops->release_step(s->rel, step, st, &wrapped, errstr, errstr_size);
    s->sink = NULL;
    s->exhausted = dp_synth_exhausted(s);   /* also after a failed release */
    return rc;
}

/* A bundle restored for one role does only that role's work
 * (docs/kafka.md §10): `want` is the role the call needs (ALL: the
 * combined close). */
static int role_refusal(const dp_synth *s, dp_synth_role want, char *errstr, size_t errstr_size)
{
    static const char *const WHAT[] = {"combined", "ingest", "release"};
    if (s->role == DP_SYNTH_ROLE_ALL || s->role == want)
        return DP_OK;
    return dp_err(errstr, errstr_size, DP_ESTATE, "%s stream '%s': restored for the %s role, it cannot do the %s "
                  "role's work (a bundle never mixes roles)", s->ops->name, s->stream_id, WHAT[s->role], WHAT[want]);
}

int dp_synth_close_step(dp_synth *s, const dp_release_sink *sink, char *errstr, size_t errstr_size)
{
    int rc = role_refusal(s, DP_SYNTH_ROLE_ALL, errstr, errstr_size);
    if (rc == DP_OK)
        rc = close_refusal(s, s->open_step, errstr, errstr_size);
    if (rc == DP_OK)
        rc = ingest_close(s, &s->stats, errstr, errstr_size);
    if (rc == DP_OK)
        rc = release(s, s->open_step, &s->stats, sink, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    s->open_step++;
    s->exhausted = dp_synth_exhausted(s);
    return DP_OK;
}

static int split_refusal(const dp_synth *s, uint64_t step, char *errstr, size_t errstr_size)
{
    if (!s->ops->shards_by_entity)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s stream '%s': its ingest half does not shard by "
                      "entity, so its close is not split (docs/kafka.md §10)", s->ops->name, s->stream_id);
    return close_refusal(s, step, errstr, errstr_size);
}

int dp_synth_close_ingest(dp_synth *s, dp_stats *out, char *errstr, size_t errstr_size)
{
    int rc = role_refusal(s, DP_SYNTH_ROLE_INGEST, errstr, errstr_size);
    if (rc == DP_OK)
        rc = split_refusal(s, s->open_step, errstr, errstr_size);
    if (rc == DP_OK)
        rc = ingest_close(s, out, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    s->open_step++;
    s->exhausted = dp_synth_exhausted(s);
    return DP_OK;
}

uint64_t dp_synth_release_next_step(const dp_synth *s)
{
    return s->ops->release_next_step ? s->ops->release_next_step(s->rel) : s->open_step;
}

int dp_synth_release_stats(dp_synth *s, const dp_stats *merged, const dp_release_sink *sink, char *errstr,
                           size_t errstr_size)
{
    int rc = role_refusal(s, DP_SYNTH_ROLE_RELEASE, errstr, errstr_size);
    if (rc == DP_OK)
        rc = split_refusal(s, merged->step, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    uint64_t next = dp_synth_release_next_step(s);
    if (merged->step != next)
        return dp_err(errstr, errstr_size, DP_ESTATE, "%s stream '%s': statistics of step %llu, but step %llu is "
                      "the next to release (%s); nothing released", s->ops->name, s->stream_id,
                      (unsigned long long)merged->step, (unsigned long long)next,
                      merged->step < next ? "that step is already released" : "a step would be skipped");
    return release(s, merged->step, merged, sink, errstr, errstr_size);
}

int dp_synth_release_state(const dp_synth *s, dp_buf *out)
{
    if (s->read_only)
        return DP_ESTATE;
    int rc = s->ops->release_save(s->rel, out);
    return rc != DP_OK ? rc : dp_buf_status(out);
}

int dp_synth_describe(const dp_synth *s, dp_synth_plan *out, char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    if (!s->ops->release_describe)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: the synthesizer does not describe its plan", s->ops->name);
    int rc = s->ops->release_describe(s->rel, out);
    if (rc != DP_OK) {
        dp_synth_plan_free(out);
        return dp_err(errstr, errstr_size, rc, "%s: describing the plan: %s", s->ops->name, dp_status_str(rc));
    }
    return DP_OK;
}

const dp_ledger *dp_synth_ledger(const dp_synth *s)
{
    return s->ops->release_ledger ? s->ops->release_ledger(s->rel) : NULL;
}

int dp_synth_snapshot(const dp_synth *s, dp_buf *out)
{
    if (s->read_only || s->role != DP_SYNTH_ROLE_ALL)
        return DP_ESTATE;   /* its key is not the state's: nothing may be stored from it */
    dp_buf_put_u32(out, SYNTH_MAGIC);
    dp_buf_put_blob(out, s->ops->name, strlen(s->ops->name));
    dp_buf_put_blob(out, s->key_fp, strlen(s->key_fp));
    dp_buf_put_blob(out, s->config_text, strlen(s->config_text));
    dp_buf_put_u64(out, s->open_step);
    int rc = s->ops->ingest_save(s->in, out);
    if (rc == DP_OK)
        rc = s->ops->release_save(s->rel, out);
    return rc != DP_OK ? rc : dp_buf_status(out);
}

const char *dp_synth_key_fingerprint(const dp_synth *s) { return s->key_fp; }

int dp_synth_snapshot_header(const uint8_t *data, size_t len, dp_synth_snapshot_head *out)
{
    memset(out, 0, sizeof *out);
    dp_reader r;
    dp_reader_init(&r, data, len);
    uint32_t magic = dp_reader_u32(&r);
    if (magic != SYNTH_MAGIC && magic != SYNTH_MAGIC_V2)
        return DP_ECORRUPT;
    const uint8_t *name = dp_reader_blob(&r, &out->name_len);
    const uint8_t *fp = dp_reader_blob(&r, &out->key_fp_len);
    const uint8_t *cfg = magic == SYNTH_MAGIC ? dp_reader_blob(&r, &out->config_len) : NULL;
    out->open_step = dp_reader_u64(&r);
    if (dp_reader_status(&r) != DP_OK || !name || !fp || (magic == SYNTH_MAGIC && !cfg))
        return DP_ECORRUPT;
    out->name = (const char *)name;
    out->key_fp = (const char *)fp;
    out->config = (const char *)cfg;
    out->state_offset = r.off;
    return DP_OK;
}

/* --- what changed: the snapshot's configuration against this one ------------------- */

typedef struct diff_out {
    char  *p;
    size_t n, len;
    int    count;
} diff_out;

static void diff_puts(diff_out *d, const char *s, size_t n)
{
    if (d->len + 1 >= d->n)
        return;
    size_t room = d->n - d->len - 1;
    if (n > room)
        n = room;
    memcpy(d->p + d->len, s, n);
    d->len += n;
    d->p[d->len] = '\0';
}

static void diff_str(diff_out *d, const char *s) { diff_puts(d, s, strlen(s)); }

/* A JSON value as a person reads it: numbers in their shortest form
 * (0.5, not 0.50000000000000000), strings quoted, containers compact. */
static void diff_value(diff_out *d, const json_t *v)
{
    char num[DP_FMT_DOUBLE_MAX + 8];
    if (!v) {
        diff_str(d, "(absent)");
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        diff_str(d, num);
    } else if (json_is_real(v)) {
        diff_puts(d, num, dp_fmt_double(json_real_value(v), num, sizeof num));
    } else if (json_is_string(v)) {
        diff_str(d, "\"");
        diff_puts(d, json_string_value(v), json_string_length(v) < 80 ? json_string_length(v) : 80);
        diff_str(d, "\"");
    } else if (json_is_array(v)) {
        diff_str(d, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                diff_str(d, ",");
            diff_value(d, json_array_get(v, i));
        }
        diff_str(d, "]");
    } else if (json_is_object(v)) {
        diff_str(d, "{");
        const char *k;
        json_t *e;
        int first = 1;
        json_object_foreach((json_t *)v, k, e) {
            if (!first)
                diff_str(d, ",");
            first = 0;
            diff_str(d, "\"");
            diff_str(d, k);
            diff_str(d, "\":");
            diff_value(d, e);
        }
        diff_str(d, "}");
    } else {
        diff_str(d, json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
    }
}

/* Equal as configuration values: 1 and 1.0 are the same number. */
static int same_value(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

/* "path: old -> new" for every differing key, objects compared key by key
 * (sorted: jansson keeps insertion order, and both came from sorted text). */
static void diff_objects(diff_out *d, const json_t *was, const json_t *now, const char *path)
{
    const json_t *sides[2] = {was, now};
    for (int side = 0; side < 2; side++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)sides[side], k, v) {
            const json_t *a = json_object_get(was, k), *b = json_object_get(now, k);
            if (side == 1 && a)
                continue;   /* keys of both were handled on the first pass */
            if (a && b && same_value(a, b))
                continue;
            char sub[160];
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
            if (json_is_object(a) && json_is_object(b)) {
                diff_objects(d, a, b, sub);
                continue;
            }
            if (d->count++)
                diff_str(d, ", ");
            diff_str(d, sub);
            diff_str(d, " ");
            diff_value(d, a);
            diff_str(d, " -> ");
            diff_value(d, b);
        }
    }
}

/* Why a snapshot that did not load was refused, as specifically as the
 * snapshot allows: the synthesizer's reason, the changed fields, or that
 * none changed. */
int dp_synth_restore_refusal(const dp_synth *s, const char *name, const char *old_cfg, size_t old_len, char *errstr,
                             size_t errstr_size)
{
    const char *why = s->ops->release_load_refusal ? s->ops->release_load_refusal(s->rel) : "";
    if (*why)   /* e.g. the configuration text is unchanged but now means another method (a changed default) */
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "%s stream '%s': %s", name, s->stream_id, why);
    if (!old_cfg)
        return dp_err(errstr, errstr_size, DP_ECORRUPT,
                      "%s stream '%s': its snapshot does not match this configuration or is corrupt (the snapshot "
                      "predates configurations recorded in snapshots, so the changed field cannot be named); if "
                      "you changed the stream's configuration, restore the old values, or start the new "
                      "configuration under a new stream id: a stream's budget and plan are fixed when it starts "
                      "(budgets cannot be raised in place)", name, s->stream_id);
    json_t *was = json_loadb(old_cfg, old_len, JSON_DECODE_ANY, NULL);
    json_t *now = json_loads(s->config_text, JSON_DECODE_ANY, NULL);
    char changes[640] = "";
    diff_out d = {changes, sizeof changes, 0, 0};
    if (json_is_object(was) && json_is_object(now))
        diff_objects(&d, was, now, "");
    else if (!was || !now || !same_value(was, now))
        d.count = -1;
    json_decref(was);
    json_decref(now);
    if (d.count == 0)
        return dp_err(errstr, errstr_size, DP_ECORRUPT,
                      "%s stream '%s': its snapshot does not restore although the configuration is the one it was "
                      "written under: the state is damaged; refusing it", name, s->stream_id);
    return dp_err(errstr, errstr_size, DP_ECORRUPT,
                  "%s stream '%s': its snapshot was written under another configuration (%s); refusing to "
                  "restore it: a stream's budget and plan are fixed when it starts, so budgets cannot be raised "
                  "in place — restore the old values, or start the new configuration under a new stream id (the "
                  "old id's spent budget stays spent)", name, s->stream_id,
                  d.count > 0 ? changes : "its recorded configuration cannot be read");
}

/* dp_synth_restore, or (read_only) dp_synth_open_read_only. */
static int restore(dp_synth **out, const char *name, const json_t *config, const dp_synth_env *env,
                   const uint8_t *data, size_t len, int read_only, char *errstr, size_t errstr_size)
{
    *out = NULL;
    dp_synth *s;
    int rc = dp_synth_create(&s, name, config, env, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    s->read_only = read_only;
    dp_synth_snapshot_head h;
    if (dp_synth_snapshot_header(data, len, &h) != DP_OK || h.name_len != strlen(name) ||
        memcmp(h.name, name, h.name_len) != 0) {
        dp_synth_destroy(s);
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "%s: snapshot is not a %s synthesizer state",
                      name, name);
    }
    if (read_only && h.key_fp_len == DP_KEY_FINGERPRINT_HEX - 1) {
        /* Inspection: the state's own key is reported, not checked. */
        memcpy(s->key_fp, h.key_fp, h.key_fp_len);
        s->key_fp[h.key_fp_len] = '\0';
    } else if (h.key_fp_len != strlen(s->key_fp) || memcmp(h.key_fp, s->key_fp, h.key_fp_len) != 0) {
        rc = dp_err(errstr, errstr_size, DP_EKEY,
                    "%s stream '%s': its state was built with another noise key (fingerprint %.*s, this key's "
                    "is %s); refusing to continue: fresh noise over the same data would spend its budget a "
                    "second time — restart with the stream's original key", name, s->stream_id,
                    h.key_fp_len < 64 ? (int)h.key_fp_len : 0, h.key_fp, s->key_fp);
        dp_synth_destroy(s);
        return rc;
    }
    dp_reader r;
    dp_reader_init(&r, data, len);
    r.off = h.state_offset;
    s->open_step = h.open_step;
    rc = s->ops->ingest_load(s->in, &r);
    if (rc == DP_OK)
        rc = s->ops->release_load(s->rel, &r);
    if (rc == DP_OK)
        rc = dp_reader_finish(&r);
    if (rc == DP_OK &&
        ((s->ops->ingest_open_step && s->ops->ingest_open_step(s->in) != s->open_step) ||
         (s->ops->release_next_step && s->ops->release_next_step(s->rel) != s->open_step))) {
        unsigned long long a = s->ops->ingest_open_step ? s->ops->ingest_open_step(s->in) : s->open_step,
                           b = s->ops->release_next_step ? s->ops->release_next_step(s->rel) : s->open_step;
        rc = dp_err(errstr, errstr_size, DP_ECORRUPT,
                    "%s stream '%s': snapshot halves disagree on the open step (bundle %llu, ingest %llu, "
                    "release %llu); refusing it", name, s->stream_id, (unsigned long long)s->open_step, a, b);
        dp_synth_destroy(s);
        return rc;
    }
    s->exhausted = dp_synth_exhausted(s);
    if (rc != DP_OK) {
        if (rc == DP_ENOMEM)
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "%s stream '%s': out of memory restoring it", name,
                        s->stream_id);
        else
            rc = dp_synth_restore_refusal(s, name, h.config, h.config_len, errstr, errstr_size);
        dp_synth_destroy(s);
        return rc;
    }
    *out = s;
    return DP_OK;
}

int dp_synth_restore(dp_synth **out, const char *name, const json_t *config,
                     const dp_synth_env *env, const uint8_t *data, size_t len,
                     char *errstr, size_t errstr_size)
{
    return restore(out, name, config, env, data, len, 0, errstr, errstr_size);
}

int dp_synth_open_read_only(dp_synth **out, const char *name, const json_t *config, const dp_synth_env *env,
                            const uint8_t *data, size_t len, char *errstr, size_t errstr_size)
{
    return restore(out, name, config, env, data, len, 1, errstr, errstr_size);
}
