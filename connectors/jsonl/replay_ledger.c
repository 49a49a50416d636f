/* replay_ledger.c — the release ledger of `dpstream replay` (replay_ledger.h). */
#include "connectors/jsonl/replay_ledger.h"

#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"
#include "core/drbg.h"

#define LEDGER_MAX_STREAM 4096

/* What the ledger remembers of one released step: every distinct (key,
 * input) it was released under, as a list — a step released from changed
 * input under a rotated key must not make the ledger forget the earlier
 * release (else the old key could then release other input, or another key
 * the old input). */
typedef struct ledger_rec {
    char               key_fp[DP_KEY_FINGERPRINT_HEX];
    uint8_t            digest[DP_GATE_DIGEST_BYTES];
    struct ledger_rec *next;
} ledger_rec;

/* stream ‖ 0 ‖ step as 8 bytes little-endian: no two (stream, step) alike
 * (a stream id holds no NUL byte). */
static size_t rec_key(const char *stream, size_t len, uint64_t step, uint8_t *out)
{
    memcpy(out, stream, len);
    out[len] = 0;
    for (int i = 0; i < 8; i++)
        out[len + 1 + (size_t)i] = (uint8_t)(step >> (8 * i));
    return len + 9;
}

static int remember(dp_replay_ledger *l, const char *stream, size_t len, uint64_t step, const char *key_fp,
                    const uint8_t digest[DP_GATE_DIGEST_BYTES])
{
    uint8_t key[LEDGER_MAX_STREAM + 9];
    dp_bytes_map_slot *slot = dp_bytes_map_upsert(&l->seen, key, rec_key(stream, len, step, key));
    if (!slot)
        return DP_ENOMEM;
    for (const ledger_rec *r = slot->value; r; r = r->next)
        if (strcmp(r->key_fp, key_fp) == 0 && memcmp(r->digest, digest, DP_GATE_DIGEST_BYTES) == 0)
            return DP_OK;   /* an identical re-run: known already */
    ledger_rec *r = malloc(sizeof *r);
    if (!r)
        return DP_ENOMEM;
    snprintf(r->key_fp, sizeof r->key_fp, "%s", key_fp);
    memcpy(r->digest, digest, DP_GATE_DIGEST_BYTES);
    r->next = slot->value;
    slot->value = r;
    return DP_OK;
}

static int parse_salt(dp_replay_ledger *l, const char *line, size_t n)
{
    json_error_t je;
    json_t *o = json_loadb(line, n, 0, &je);
    const json_t *s = json_object_get(o, "ledger_salt");
    size_t got = 0;
    int ok = json_is_string(s) && sodium_hex2bin(l->salt, sizeof l->salt, json_string_value(s), json_string_length(s),
                                                 NULL, &got, NULL) == 0 && got == sizeof l->salt;
    json_decref(o);
    return ok ? DP_OK : DP_EINVAL;
}

static int parse_line(dp_replay_ledger *l, const char *line, size_t n)
{
    json_error_t je;
    json_t *o = json_loadb(line, n, 0, &je);
    const json_t *s = json_object_get(o, "stream"), *st = json_object_get(o, "step"),
                 *fp = json_object_get(o, "key_fingerprint"), *dg = json_object_get(o, "input_digest");
    uint8_t digest[DP_GATE_DIGEST_BYTES];
    size_t dlen = 0;
    int ok = json_is_string(s) && json_string_length(s) > 0 && json_string_length(s) <= LEDGER_MAX_STREAM &&
             json_is_integer(st) && json_integer_value(st) >= 1 && json_is_string(fp) &&
             json_string_length(fp) == DP_KEY_FINGERPRINT_HEX - 1 && json_is_string(dg) &&
             sodium_hex2bin(digest, sizeof digest, json_string_value(dg), json_string_length(dg), NULL, &dlen,
                            NULL) == 0 &&
             dlen == sizeof digest;
    int rc = ok ? remember(l, json_string_value(s), json_string_length(s), (uint64_t)json_integer_value(st),
                           json_string_value(fp), digest)
                : DP_EINVAL;
    json_decref(o);
    return rc;
}

int dp_replay_ledger_open(dp_replay_ledger *l, const char *path, char *err, size_t errsz)
{
    memset(l, 0, sizeof *l);
    dp_bytes_map_init(&l->seen);
    if (!(l->path = strdup(path)))
        return dp_err(err, errsz, DP_ENOMEM, "out of memory");
    FILE *f = fopen(path, "r");
    if (f) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        unsigned long no = 0;
        int rc = DP_OK;
        while (rc == DP_OK && (n = getline(&line, &cap, f)) > 0) {
            no++;
            while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                n--;
            if (n == 0)
                continue;
            if ((rc = no == 1 ? parse_salt(l, line, (size_t)n) : parse_line(l, line, (size_t)n)) != DP_OK)
                dp_err(err, errsz, rc, "ledger %s line %lu: %s", path, no,
                       rc == DP_ENOMEM ? "out of memory" : "not a ledger line");
        }
        free(line);
        fclose(f);
        if (rc != DP_OK)
            return rc;
        if (no == 0)
            return dp_err(err, errsz, DP_EINVAL, "ledger %s is empty (no salt line)", path);
        if (!(l->append = fopen(path, "a")))
            return dp_err(err, errsz, DP_EIO, "cannot append to ledger %s: %s", path, strerror(errno));
        return DP_OK;
    }
    if (errno != ENOENT)
        return dp_err(err, errsz, DP_EIO, "cannot read ledger %s: %s", path, strerror(errno));
    /* a new ledger: a fresh salt (the ledger's own; releases never see it) */
    randombytes_buf(l->salt, sizeof l->salt);
    char hex[2 * sizeof l->salt + 1];
    sodium_bin2hex(hex, sizeof hex, l->salt, sizeof l->salt);
    if (!(l->append = fopen(path, "a")) || fprintf(l->append, "{\"ledger_salt\":\"%s\"}\n", hex) < 0 ||
        fflush(l->append) != 0)
        return dp_err(err, errsz, DP_EIO, "cannot create ledger %s: %s", path, strerror(errno));
    return DP_OK;
}

void dp_replay_ledger_close(dp_replay_ledger *l)
{
    for (size_t i = 0; i < l->seen.cap; i++)
        for (ledger_rec *r = dp_bytes_map_at(&l->seen, i), *next; r; r = next) {
            next = r->next;
            free(r);
        }
    dp_bytes_map_free(&l->seen);
    if (l->append)
        fclose(l->append);
    free(l->path);
    sodium_memzero(l->salt, sizeof l->salt);
    memset(l, 0, sizeof *l);
}

int dp_replay_ledger_check(const dp_replay_ledger *l, const char *stream, size_t stream_len, uint64_t step,
                           const char *key_fp, const uint8_t digest[DP_GATE_DIGEST_BYTES], char *err,
                           size_t errsz)
{
    if (stream_len > LEDGER_MAX_STREAM)
        return dp_err(err, errsz, DP_EINVAL, "stream id longer than %d bytes", LEDGER_MAX_STREAM);
    uint8_t key[LEDGER_MAX_STREAM + 9];
    dp_bytes_map_slot *slot = dp_bytes_map_find(&l->seen, key, rec_key(stream, stream_len, step, key));
    for (const ledger_rec *r = slot ? slot->value : NULL; r; r = r->next) {
        int same_key = strcmp(r->key_fp, key_fp) == 0;
        int same_input = memcmp(r->digest, digest, DP_GATE_DIGEST_BYTES) == 0;
        if (same_key && !same_input)
            return dp_err(err, errsz, DP_EKEY,
                          "stream '%.*s' step %llu was already released under this key from different input "
                          "(ledger %s): releasing it again would reveal the difference exactly; use a new key or a "
                          "new stream id",
                          (int)(stream_len < 200 ? stream_len : 200), stream, (unsigned long long)step, l->path);
        if (!same_key && same_input)
            return dp_err(err, errsz, DP_EKEY,
                          "stream '%.*s' step %llu was already released from this input under another key (ledger "
                          "%s, fingerprint %s): fresh noise over the same data spends its budget a second time",
                          (int)(stream_len < 200 ? stream_len : 200), stream, (unsigned long long)step, l->path,
                          r->key_fp);
    }
    return DP_OK;
}

int dp_replay_ledger_record(dp_replay_ledger *l, const char *stream, size_t stream_len, uint64_t step,
                            const char *key_fp, const uint8_t digest[DP_GATE_DIGEST_BYTES], char *err,
                            size_t errsz)
{
    char hex[2 * DP_GATE_DIGEST_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, digest, DP_GATE_DIGEST_BYTES);
    dp_jbuf b;
    dp_jbuf_init(&b);
    dp_jbuf_puts(&b, "{\"stream\":");
    dp_jbuf_string(&b, stream, stream_len);
    dp_jbuf_puts(&b, ",\"step\":");
    dp_jbuf_u64(&b, step);
    dp_jbuf_puts(&b, ",\"key_fingerprint\":\"");
    dp_jbuf_puts(&b, key_fp);
    dp_jbuf_puts(&b, "\",\"input_digest\":\"");
    dp_jbuf_puts(&b, hex);
    dp_jbuf_puts(&b, "\"}\n");
    int rc = b.oom ? DP_ENOMEM : DP_OK;
    if (rc == DP_OK && (fwrite(b.data, 1, b.len, l->append) != b.len || fflush(l->append) != 0))
        rc = dp_err(err, errsz, DP_EIO, "cannot append to ledger %s", l->path);
    dp_jbuf_free(&b);
    if (rc == DP_OK && (rc = remember(l, stream, stream_len, step, key_fp, digest)) != DP_OK)
        dp_err(err, errsz, rc, "out of memory");
    return rc;
}
