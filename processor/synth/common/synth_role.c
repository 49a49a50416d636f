/* synth_role.c — one role's half alone (docs/kafka.md §10): the
 * ingest-role ("SYI1") and release-role ("SYR1") snapshots of a sharded
 * stream's bundle, and their restores, which never mix roles.
 *
 * Owns: the role snapshots' layout and their refusals.  Calls: synth.c
 * (the bundle: create, destroy, exhaustion, release step, the restore
 * refusal), the synthesizers' ops through the bundle, dp_error. */
#include "synth/common/synth.h"
#include "synth/common/synth_internal.h"

#include "core/dp_error.h"

#include <string.h>

/* --- one role's half alone (docs/kafka.md §10) --------------------------------------
 *   magic ("SYI1" ingest / "SYR1" release) ‖ blob(name) ‖ blob(key fingerprint)
 *   ‖ blob(config) ‖ blob(stream id) ‖ u64 step ‖ that half's state
 *
 * step: the ingest half's open step, or the release half's next step. */

static uint32_t role_magic(dp_synth_role role)
{
    return role == DP_SYNTH_ROLE_INGEST ? SYNTH_MAGIC_INGEST : SYNTH_MAGIC_RELEASE;
}

int dp_synth_snapshot_role(const dp_synth *s, dp_synth_role role, dp_buf *out)
{
    if (s->read_only || (role != DP_SYNTH_ROLE_INGEST && role != DP_SYNTH_ROLE_RELEASE) ||
        (s->role != DP_SYNTH_ROLE_ALL && s->role != role))
        return DP_ESTATE;
    if (!s->ops->shards_by_entity || !s->ops->release_next_step)
        return DP_EINVAL;
    dp_buf_put_u32(out, role_magic(role));
    dp_buf_put_blob(out, s->ops->name, strlen(s->ops->name));
    dp_buf_put_blob(out, s->key_fp, strlen(s->key_fp));
    dp_buf_put_blob(out, s->config_text, strlen(s->config_text));
    dp_buf_put_blob(out, s->sid, s->sid_len);
    dp_buf_put_u64(out, role == DP_SYNTH_ROLE_INGEST ? s->open_step : dp_synth_release_next_step(s));
    int rc = role == DP_SYNTH_ROLE_INGEST ? s->ops->ingest_save(s->in, out) : s->ops->release_save(s->rel, out);
    return rc != DP_OK ? rc : dp_buf_status(out);
}

/* The kind of snapshot `magic` is, for a refusal. */
static const char *kind_of(uint32_t magic)
{
    switch (magic) {
    case SYNTH_MAGIC_INGEST:  return "an ingest-role snapshot";
    case SYNTH_MAGIC_RELEASE: return "a release-role snapshot";
    case SYNTH_MAGIC:
    case SYNTH_MAGIC_V2:      return "a combined (single-process) snapshot";
    default:                  return "not a synthesizer snapshot";
    }
}

/* The role snapshot's head checked against s; r left at the half's state. */
static int role_head(dp_synth *s, dp_synth_role role, dp_reader *r, uint64_t *step, const char **cfg,
                     size_t *cfg_len, int read_only, char *errstr, size_t errstr_size)
{
    const char *want = role == DP_SYNTH_ROLE_INGEST ? "ingest" : "release";
    uint32_t magic = dp_reader_u32(r);
    size_t name_len = 0, fp_len = 0, sid_len = 0;
    const uint8_t *name = dp_reader_blob(r, &name_len), *fp = dp_reader_blob(r, &fp_len);
    *cfg = (const char *)dp_reader_blob(r, cfg_len);
    const uint8_t *sid = dp_reader_blob(r, &sid_len);
    *step = dp_reader_u64(r);
    if (magic != role_magic(role))
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "%s stream '%s': the %s role's restore was given %s; "
                      "refusing it (a restore never mixes roles)", s->ops->name, s->stream_id, want,
                      dp_reader_status(r) == DP_OK || magic ? kind_of(magic) : "a truncated snapshot");
    if (dp_reader_status(r) != DP_OK || !name || !fp || !*cfg || !sid)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "%s stream '%s': its %s-role snapshot is truncated or "
                      "malformed", s->ops->name, s->stream_id, want);
    if (name_len != strlen(s->ops->name) || memcmp(name, s->ops->name, name_len) != 0)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "%s: snapshot is not a %s synthesizer state",
                      s->ops->name, s->ops->name);
    if (sid_len != s->sid_len || memcmp(sid, s->sid, sid_len) != 0)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "%s stream '%s': its %s-role snapshot is of stream "
                      "'%.*s'; refusing it", s->ops->name, s->stream_id, want, (int)(sid_len < 120 ? sid_len : 120),
                      (const char *)sid);
    if (read_only && fp_len == DP_KEY_FINGERPRINT_HEX - 1) {
        /* inspection: the state's own key is reported, not checked */
        memcpy(s->key_fp, fp, fp_len);
        s->key_fp[fp_len] = '\0';
        return DP_OK;
    }
    if (fp_len != strlen(s->key_fp) || memcmp(fp, s->key_fp, fp_len) != 0)
        return dp_err(errstr, errstr_size, DP_EKEY, "%s stream '%s': its state was built with another noise key "
                      "(fingerprint %.*s, this key's is %s); refusing to continue — restart with the stream's "
                      "original key", s->ops->name, s->stream_id, fp_len < 64 ? (int)fp_len : 0,
                      (const char *)fp, s->key_fp);
    return DP_OK;
}

/* dp_synth_restore_role, or (read_only) dp_synth_open_role_read_only. */
static int restore_role(dp_synth **out, dp_synth_role role, const char *name, const json_t *config,
                        const dp_synth_env *env, const uint8_t *data, size_t len, int read_only, char *errstr,
                        size_t errstr_size)
{
    *out = NULL;
    dp_synth *s;
    int rc = dp_synth_create(&s, name, config, env, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if ((role != DP_SYNTH_ROLE_INGEST && role != DP_SYNTH_ROLE_RELEASE) || !s->ops->shards_by_entity ||
        !s->ops->release_next_step) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL, "%s stream '%s': no role snapshot (its ingest half does not "
                    "shard by entity, docs/kafka.md §10)", name, s->stream_id);
        dp_synth_destroy(s);
        return rc;
    }
    dp_reader r;
    dp_reader_init(&r, data, len);
    uint64_t step;
    const char *cfg;
    size_t cfg_len;
    s->read_only = read_only;
    rc = role_head(s, role, &r, &step, &cfg, &cfg_len, read_only, errstr, errstr_size);
    if (rc != DP_OK) {
        dp_synth_destroy(s);
        return rc;
    }
    s->role = role;
    if (role == DP_SYNTH_ROLE_INGEST) {
        s->open_step = step;
        rc = s->ops->ingest_load(s->in, &r);
    } else {
        rc = s->ops->release_load(s->rel, &r);
    }
    if (rc == DP_OK)
        rc = dp_reader_finish(&r);
    if (rc == DP_OK && (role == DP_SYNTH_ROLE_INGEST ? s->ops->ingest_open_step && s->ops->ingest_open_step(s->in)
                                                   != step : dp_synth_release_next_step(s) != step))
        rc = DP_ECORRUPT;   /* the half disagrees with its head */
    s->exhausted = dp_synth_exhausted(s);
    if (rc != DP_OK) {
        rc = rc == DP_ENOMEM ? dp_err(errstr, errstr_size, DP_ENOMEM, "%s stream '%s': out of memory restoring "
                                      "it", name, s->stream_id)
                             : dp_synth_restore_refusal(s, name, cfg, cfg_len, errstr, errstr_size);
        dp_synth_destroy(s);
        return rc;
    }
    *out = s;
    return DP_OK;
}

int dp_synth_restore_role(dp_synth **out, dp_synth_role role, const char *name, const json_t *config,
                          const dp_synth_env *env, const uint8_t *data, size_t len, char *errstr,
                          size_t errstr_size)
{
    return restore_role(out, role, name, config, env, data, len, 0, errstr, errstr_size);
}

int dp_synth_open_role_read_only(dp_synth **out, dp_synth_role role, const char *name, const json_t *config,
                                 const dp_synth_env *env, const uint8_t *data, size_t len, char *errstr,
                                 size_t errstr_size)
{
    return restore_role(out, role, name, config, env, data, len, 1, errstr, errstr_size);
}
