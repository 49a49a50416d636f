/* snapshot_inspect.c — see snapshot_inspect.h.
 *
 * Owns: nothing past the call but the view it fills.  Calls: the codec
 * (the public header), state_record (assembly, unsealing, the MAC), the
 * stream config (the route: a synthesizer's state is read with its
 * configuration), synth (restore or read-only open, ledger, plan). */
#include "stream/snapshot_inspect.h"

#include <sodium.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int refuse(dp_snapshot_view *v, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(dp_snapshot_view *v, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->error, sizeof v->error, fmt, ap);
    va_end(ap);
    return v->status = status;
}

void dp_snapshot_view_free(dp_snapshot_view *v)
{
    if (!v)
        return;
    free(v->stream_id);
    free(v->synthesizer);
    free(v->updates_topic);
    dp_synth_plan_free(&v->plan);
    dp_synth_destroy(v->synth);
    if (v->state.data)
        sodium_memzero(v->state.data, v->state.cap);
    dp_buf_free(&v->state);
    memset(v, 0, sizeof *v);
}

/* The public header, from chunk 0 alone: no key needed, nothing private. */
static int read_header(dp_codec *codec, const dp_state_piece *first, dp_snapshot_view *v)
{
    dp_codec_snapshot s;
    char err[256] = "";
    if (dp_codec_decode_snapshot(codec, first->data, first->len, &s, err, sizeof err) != DP_OK)
        return refuse(v, DP_ECORRUPT, "not a snapshot: %s", err[0] ? err : "undecodable");
    if (s.chunk_index != 0)
        return refuse(v, DP_ECORRUPT, "the record under the stream's key is chunk %" PRIu32 ", not chunk 0",
                      s.chunk_index);
    v->stream_id = dup_n(s.stream_id, s.stream_id_len);
    v->synthesizer = dup_n(s.synthesizer, strlen(s.synthesizer));
    v->updates_topic = dup_n(s.input_topic, strlen(s.input_topic));
    if (!v->stream_id || !v->synthesizer || !v->updates_topic)
        return refuse(v, DP_ENOMEM, "out of memory");
    v->partition = s.input_partition;
    v->input_offset = s.input_offset;
    v->last_closed_step = s.last_closed_step;
    v->chunk_count = s.chunk_count;
    v->sealed = s.encrypted;
    v->stored_bytes = s.state_len;
    v->header_ok = 1;
    return DP_OK;
}

/* Which kind of state `state` is (docs/kafka.md §10: role_state.c's
 * layout): a shard's ingest-role snapshot ("SYI1"), a release instance's
 * blob(release-role snapshot "SYR1") ‖ blob(merger state) — *state and
 * *len then narrowed to the snapshot —, or else a combined one. */
static int role_kind(const uint8_t *state, size_t len, dp_synth_role *kind, const uint8_t **half, size_t *half_len,
                     size_t *merger_bytes)
{
    *kind = DP_SYNTH_ROLE_ALL;
    if (len >= 4 && memcmp(state, "SYI1", 4) == 0) {
        *kind = DP_SYNTH_ROLE_INGEST;
        return DP_OK;
    }
    if (len < 12 || memcmp(state + 8, "SYR1", 4) != 0)
        return DP_OK;
    dp_reader r;
    dp_reader_init(&r, state, len);
    size_t a = 0, b = 0;
    const uint8_t *snap = dp_reader_blob(&r, &a), *merger = dp_reader_blob(&r, &b);
    if (!snap || !merger || dp_reader_finish(&r) != DP_OK)
        return DP_ECORRUPT;
    *kind = DP_SYNTH_ROLE_RELEASE;
    *half = snap;
    *half_len = a;
    *merger_bytes = b;
    return DP_OK;
}

/* The synthesizer over the opened state: restored under the noise key if
 * given (so a state built under another key is refused, as run refuses
 * it), else read-only, which takes the state's own key fingerprint. */
static int open_synth(const dp_stream_config *cfg, const uint8_t *state, size_t len, const dp_key *noise_key,
                      dp_snapshot_view *v)
{
    const dp_stream_route *route = dp_stream_config_route(cfg, v->stream_id, strlen(v->stream_id));
    if (!route || strcmp(route->synthesizer, v->synthesizer) != 0)
        return refuse(v, DP_EINVAL, "the configuration does not route stream '%s' to %s, so its state cannot be "
                      "read (a synthesizer's state is read with its configuration)", v->stream_id, v->synthesizer);
    dp_key throwaway;
    memset(&throwaway, 0, sizeof throwaway);
    dp_synth_env env = {.key = noise_key ? noise_key : &throwaway, .stream_id = v->stream_id,
                        .stream_id_len = strlen(v->stream_id)};
    char err[512] = "";
    int rc = role_kind(state, len, &v->kind, &state, &len, &v->merger_bytes);
    if (rc != DP_OK)
        return refuse(v, rc, "stream '%s': its release state is truncated or malformed", v->stream_id);
    if (v->kind != DP_SYNTH_ROLE_ALL)
        rc = noise_key ? dp_synth_restore_role(&v->synth, v->kind, route->synthesizer, route->config, &env, state,
                                               len, err, sizeof err)
                       : dp_synth_open_role_read_only(&v->synth, v->kind, route->synthesizer, route->config, &env,
                                                      state, len, err, sizeof err);
    else
        rc = noise_key ? dp_synth_restore(&v->synth, route->synthesizer, route->config, &env, state, len, err,
                                          sizeof err)
                       : dp_synth_open_read_only(&v->synth, route->synthesizer, route->config, &env, state, len,
                                                 err, sizeof err);
    if (rc != DP_OK)
        return refuse(v, rc, "%s", err[0] ? err : dp_status_str(rc));
    v->key_checked = noise_key != NULL;
    snprintf(v->key_fingerprint, sizeof v->key_fingerprint, "%s", dp_synth_key_fingerprint(v->synth));
    err[0] = '\0';
    if ((rc = dp_synth_describe(v->synth, &v->plan, err, sizeof err)) != DP_OK)
        return refuse(v, rc, "%s", err[0] ? err : dp_status_str(rc));
    v->has_plan = 1;
    return DP_OK;
}

int dp_snapshot_inspect(dp_codec *codec, const dp_stream_config *cfg, const char *key, size_t key_len,
                        const dp_state_piece *first, dp_state_lookup_fn lookup, void *ctx, size_t n_keys,
                        const dp_key *state_key, const dp_key *noise_key, int keep_state, dp_snapshot_view *out)
{
    memset(out, 0, sizeof *out);
    dp_buf_init(&out->state);
    if (read_header(codec, first, out) != DP_OK)
        return out->status;
    const char *id = out->stream_id;
    unsigned long long step = (unsigned long long)out->last_closed_step;
    /* Which key opens it is the header's to say; the other is not used
     * for it (a sealed state has no MAC, a plaintext one no seal). */
    out->needs_key = (out->sealed && !state_key) || (!out->sealed && !noise_key);
    if (out->sealed && !state_key)
        return refuse(out, DP_EINVAL, "stream '%s': the snapshot is sealed; give the state key (--state-key-file) "
                      "to open it", id);
    if (!out->sealed && !noise_key)
        return refuse(out, DP_EINVAL, "stream '%s': the snapshot is not sealed (no state key was set); it is "
                      "authenticated with a MAC under the noise key: give --key-file to verify it", id);
    dp_state_record rec;
    dp_buf scratch;
    dp_buf_init(&scratch);
    char err[512] = "";
    int rc = dp_state_decode_newest(codec, key, key_len, first, lookup, ctx, n_keys,
                                    out->sealed ? state_key : NULL, noise_key, &rec, &scratch, NULL, err, sizeof err);
    if (rc != DP_OK) {
        refuse(out, rc == DP_ENOMEM ? DP_ENOMEM : DP_ECORRUPT, "stream '%s' at step %llu: %s; refusing it", id,
               step, err[0] ? err : dp_status_str(rc));
    } else {
        out->authenticated = 1;
        if (open_synth(cfg, rec.state, rec.state_len, noise_key, out) == DP_OK && keep_state) {
            dp_buf_put_bytes(&out->state, rec.state, rec.state_len);
            if (dp_buf_status(&out->state) != DP_OK)
                refuse(out, DP_ENOMEM, "out of memory");
        }
    }
    if (scratch.data)
        sodium_memzero(scratch.data, scratch.cap);
    dp_buf_free(&scratch);
    return out->status;
}
