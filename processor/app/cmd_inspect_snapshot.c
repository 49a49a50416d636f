/* cmd_inspect_snapshot.c — `dpstream inspect-snapshot`: what the state
 * topic holds for each stream, read from the broker.
 *
 *   dpstream inspect-snapshot --config CONFIG.json [--bootstrap HOST:PORT] [--stream ID]
 *                             [--state-key-file F] [--key-file F | --key-hex H]
 *                             [--json] [--dump-state] [--timeout-ms MS] [--log-format text|json]
 *                             [--release-state]
 *
 * Reads the config's state topic (read_committed, to its end), and for
 * each stream's newest snapshot (or only --stream's) prints: the stream and
 * its synthesizer, the budget ledger (spent of total, its entries), the
 * open step, the input offsets (the snapshot's own and its partition's
 * progress record) and a summary of the synthesizer — its key's
 * fingerprint, whether it is exhausted, and its configuration's plan
 * (snapshot_inspect.h).  A sealed snapshot is opened with --state-key-file
 * (its seal verified), a plaintext one verified with its MAC under the
 * noise key (--key-file/--key-hex); given, the noise key is also checked
 * against the one the state was built with.  The roles' state
 * (docs/kafka.md §10): a configuration with a sharded route has its state
 * topic read partition by partition (each shard's ingest-role snapshot
 * sits under the stream's id in its own partition); --release-state reads
 * <prefix>.release-state (each release stream's release half and merger).
 *
 * Never printed unless --dump-state is given: the state's other bytes —
 * rosters, per-entity values, exact counts, which are as private as the
 * input.  The keys are never printed; only the noise key's fingerprint,
 * which every budget event publishes.
 *
 * Exit status: 0 every snapshot shown was opened; 1 one could not be read
 * (corrupt, not routed by this configuration) or --stream has none; 2
 * usage, configuration, or a key a snapshot needs was not given; 4 Kafka
 * (unreachable, no state topic, timed out); 5 a snapshot fails
 * authentication (wrong state key, altered, or another noise key).
 *
 * Owns: the parsed options, the keys, the state topic as read.  Calls:
 * state_read (the topic), snapshot_inspect (each snapshot), codec. */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/cli_plan.h"
#include "core/bytes_map.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/snapshot_inspect.h"
#include "stream/state_read.h"
#include "stream/state_record.h"
#include "stream/stream_config.h"

static void inspect_usage(FILE *f)
{
    if (f == stderr && dp_log_get_format() == DP_LOG_FORMAT_JSON)
        return;   /* stderr carries JSON lines only */
    fprintf(f,
            "usage: dpstream inspect-snapshot --config CONFIG.json [--bootstrap HOST:PORT] [--stream ID]\n"
            "                                 [--state-key-file F] [--key-file F | --key-hex H]\n"
            "                                 [--json] [--dump-state] [--timeout-ms MS] [--release-state]\n"
            "                                 [--log-format text|json]\n"
            "\n"
            "Decodes the newest snapshot of every stream (or of --stream ID) on the config's\n"
            "state topic and prints its ledger, open step, input offsets and synthesizer\n"
            "summary.  Nothing private is printed unless --dump-state is given.\n"
            "  --bootstrap B        brokers (default $DPSTREAM_BOOTSTRAP_SERVERS, else the config's)\n"
            "  --state-key-file F   opens sealed snapshots (and verifies their seal)\n"
            "  --key-file/--key-hex the noise key: verifies plaintext snapshots' MAC, and checks\n"
            "                       that a state was built with this key\n"
            "  --json               one JSON document on stdout\n"
            "  --release-state      read the release role's <prefix>.release-state instead (a sharded\n"
            "                       stream's release half and merger; a sharded configuration's state\n"
            "                       topic holds each shard's ingest snapshot in its own partition)\n"
            "  --dump-state         also print each opened state's bytes in hex — PRIVATE: rosters,\n"
            "                       per-entity values, exact counts; handle it like the input\n"
            "  --timeout-ms MS      give up reading the state topic after MS (default 30000)\n"
            "Exit 0; 1 a snapshot could not be read or --stream has none; 2 usage or a missing\n"
            "key; 4 Kafka; 5 a snapshot fails authentication or was built with another key.\n");
}

/* --- which state-topic keys matter ---------------------------------------------------- */

typedef struct keep_ctx {
    const char *stream;   /* NULL: every stream */
    size_t      len;
} keep_ctx;

static int is_reserved(const void *key, size_t n)
{
    size_t r = sizeof DP_STATE_RESERVED_KEY_PREFIX - 1;
    return n >= r && memcmp(key, DP_STATE_RESERVED_KEY_PREFIX, r) == 0;
}

/* One stream's keys (its id, its chunk keys) and every progress record. */
static int keep_key(void *ctx, const void *key, size_t n)
{
    const keep_ctx *k = ctx;
    if (!k->stream || is_reserved(key, n))
        return 1;
    return n >= k->len && memcmp(key, k->stream, k->len) == 0 &&
           (n == k->len || ((const uint8_t *)key)[k->len] == DP_STATE_CHUNK_KEY_SEP);
}

/* The partition's progress record (state_record.h), if there is one. */
static int find_progress(dp_codec *codec, dp_bytes_map *latest, const char *topic, int32_t partition,
                         dp_state_record *out)
{
    char key[600];
    int n = snprintf(key, sizeof key, "%s%s/%" PRId32, DP_STATE_PROGRESS_KEY_PREFIX, topic, partition);
    if (n <= 0 || (size_t)n >= sizeof key)
        return 0;
    const dp_state_piece *v = dp_state_read_lookup(latest, key, (size_t)n);
    dp_buf scratch;
    dp_buf_init(&scratch);
    int ok = v && dp_state_decode(codec, v->data, v->len, NULL, NULL, out, &scratch, NULL, 0) == DP_OK &&
             out->kind == DP_STATE_PROGRESS;
    dp_buf_free(&scratch);   /* out->updates_topic pointed into it: not used by the callers */
    out->updates_topic = NULL;
    return ok;
}

/* --- output --------------------------------------------------------------------------- */

/* A line on stderr about one stream: "dpstream inspect-snapshot: ..." as
 * text, or under --log-format json an event with the stream and step. */
static void report(dp_log_level level, const char *event, const char *stream, uint64_t step, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void report(dp_log_level level, const char *event, const char *stream, uint64_t step, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (dp_log_get_format() == DP_LOG_FORMAT_JSON)
        dp_log_event(level, event, stream, stream ? strlen(stream) : 0, step, "%s", msg);
    else
        fprintf(stderr, "dpstream inspect-snapshot: %s\n", msg);
}

static void print_hex_text(const dp_buf *b)
{
    for (size_t i = 0; i < b->len; i += 32) {
        printf("    %08zx ", i);
        for (size_t j = i; j < b->len && j < i + 32; j++)
            printf("%02x", b->data[j]);
        printf("\n");
    }
}

static char *hex_string(const dp_buf *b)
{
    char *s = malloc(2 * b->len + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < b->len; i++)
        snprintf(s + 2 * i, 3, "%02x", b->data[i]);
    s[2 * b->len] = '\0';
    return s;
}

static const char *ledger_scope(const dp_snapshot_view *v)
{
    if (!v->has_plan)
        return "";
    if (strcmp(v->plan.composition, "parallel") == 0)
        return " (the last step's: steps compose in parallel, the stream's total is the largest step's)";
    return "";
}

static void print_text(const dp_snapshot_view *v, const dp_state_record *prog, int has_prog, int dump)
{
    printf("\nstream '%s'  %s\n", v->stream_id, v->synthesizer);
    printf("  %-12sstep %" PRIu64 " closed; %" PRIu32 " chunk(s), %zu bytes stored, %s\n", "snapshot",
           v->last_closed_step, v->chunk_count, v->stored_bytes,
           v->sealed ? "sealed with the state key (XChaCha20-Poly1305)" : "not sealed (MAC under the noise key)");
    printf("  %-12s%s[%" PRId32 "]: the stream's updates below offset %" PRId64 " are in this snapshot\n",
           "input", v->updates_topic, v->partition, v->input_offset);
    if (has_prog)
        printf("  %-12spartition %" PRId32 ": handled below offset %" PRId64 ", committed consumer offset %" PRId64
               "\n", "progress", prog->partition, prog->position, prog->resume);
    if (v->status != DP_OK) {
        printf("  %-12s%s\n", "ERROR", v->error);
        return;
    }
    printf("  %-12s%s; opened, %s\n", "status", dp_synth_exhausted(v->synth) ? "EXHAUSTED" : "ACTIVE",
           v->sealed ? "seal verified" : "MAC verified");
    if (v->kind == DP_SYNTH_ROLE_RELEASE)
        printf("  %-12srelease role (docs/kafka.md §10): step %" PRIu64 " released next; %zu bytes of merger state "
               "(the statistics of steps not all shards have sent)\n", "kind",
               dp_synth_release_next_step(v->synth), v->merger_bytes);
    else
        printf("  %-12sstep %" PRIu64 "\n", "open step", dp_synth_open_step(v->synth));
    if (v->kind == DP_SYNTH_ROLE_INGEST)
        printf("  %-12singest role (docs/kafka.md §10): shard %" PRId32 " of a sharded stream; its closed steps' "
               "statistics went to the stats topic\n", "kind", v->partition);
    printf("  %-12sfingerprint %s (%s)\n", "noise key", v->key_fingerprint,
           v->key_checked ? "the given key's" : "not checked: no --key-file");
    const dp_ledger *l = v->kind == DP_SYNTH_ROLE_INGEST ? NULL : dp_synth_ledger(v->synth);
    if (v->kind == DP_SYNTH_ROLE_INGEST) {
        printf("  %-12snone in a shard: the release role keeps the stream's (inspect --release-state)\n", "ledger");
    } else if (!l) {
        printf("  %-12snone: w-event budgets are per window (the budget events carry each window's spend)\n",
               "ledger");
    } else {
        printf("  %-12s%s: spent %.17g of %.17g, remaining %.17g", "ledger", dp_privacy_model_name(l->model),
               l->spent, l->budget, dp_ledger_remaining(l));
        if (l->units_total)
            printf("; units %" PRIu64 " of %" PRIu64, l->units_spent, l->units_total);
        printf("%s; %zu entr%s%s\n", l->exhausted ? "; exhausted" : "", l->n_entries,
               l->n_entries == 1 ? "y" : "ies", ledger_scope(v));
        for (size_t i = 0; i < l->n_entries; i++) {
            printf("  %-12sstep %" PRIu64 "  %-36s %.17g", "", l->entries[i].step, l->entries[i].mechanism,
                   l->entries[i].amount);
            if (l->units_total)
                printf(" (%" PRIu64 " units)", l->entries[i].units);
            printf("\n");
        }
    }
    if (v->has_plan)
        cli_plan_print(&v->plan);
    if (dump) {
        printf("  PRIVATE STATE (--dump-state): %zu bytes of raw synthesizer state — rosters, per-entity values,\n"
               "  exact counts; as private as the input, handle it so:\n", v->state.len);
        print_hex_text(&v->state);
    }
}

static json_t *ledger_json(const dp_ledger *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(dp_privacy_model_name(l->model)));
    json_object_set_new(o, "budget", cli_json_real(l->budget));
    json_object_set_new(o, "spent", cli_json_real(l->spent));
    json_object_set_new(o, "remaining", cli_json_real(dp_ledger_remaining(l)));
    json_object_set_new(o, "budget_units", l->units_total ? json_integer((json_int_t)l->units_total) : json_null());
    json_object_set_new(o, "spent_units", l->units_total ? json_integer((json_int_t)l->units_spent) : json_null());
    json_object_set_new(o, "exhausted", json_boolean(l->exhausted));
    json_t *es = json_array();
    for (size_t i = 0; i < l->n_entries; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "step", json_integer((json_int_t)l->entries[i].step));
        json_object_set_new(e, "mechanism", json_string(l->entries[i].mechanism));
        json_object_set_new(e, "amount", cli_json_real(l->entries[i].amount));
        json_object_set_new(e, "units", l->units_total ? json_integer((json_int_t)l->entries[i].units) : json_null());
        json_array_append_new(es, e);
    }
    json_object_set_new(o, "entries", es);
    return o;
}

static json_t *view_json(const dp_snapshot_view *v, const dp_state_record *prog, int has_prog, int dump)
{
    json_t *o = json_object();
    json_object_set_new(o, "stream", json_string(v->stream_id));
    json_object_set_new(o, "synthesizer", json_string(v->synthesizer));
    json_object_set_new(o, "updates_topic", json_string(v->updates_topic));
    json_object_set_new(o, "partition", json_integer(v->partition));
    json_object_set_new(o, "input_offset", json_integer(v->input_offset));
    json_object_set_new(o, "last_closed_step", json_integer((json_int_t)v->last_closed_step));
    json_object_set_new(o, "chunks", json_integer(v->chunk_count));
    json_object_set_new(o, "sealed", json_boolean(v->sealed));
    json_object_set_new(o, "stored_bytes", json_integer((json_int_t)v->stored_bytes));
    if (has_prog) {
        json_t *p = json_object();
        json_object_set_new(p, "position", json_integer(prog->position));
        json_object_set_new(p, "resume", json_integer(prog->resume));
        json_object_set_new(o, "progress", p);
    } else {
        json_object_set_new(o, "progress", json_null());
    }
    json_object_set_new(o, "authenticated", json_boolean(v->authenticated));
    json_object_set_new(o, "error", v->status == DP_OK ? json_null() : json_string(v->error));
    if (v->status != DP_OK)
        return o;
    static const char *const KIND[] = {"combined", "ingest", "release"};
    json_object_set_new(o, "kind", json_string(KIND[v->kind]));
    json_object_set_new(o, "open_step", v->kind == DP_SYNTH_ROLE_RELEASE
                                            ? json_null() : json_integer((json_int_t)dp_synth_open_step(v->synth)));
    if (v->kind == DP_SYNTH_ROLE_RELEASE) {
        json_object_set_new(o, "next_release_step", json_integer((json_int_t)dp_synth_release_next_step(v->synth)));
        json_object_set_new(o, "merger_state_bytes", json_integer((json_int_t)v->merger_bytes));
    }
    json_object_set_new(o, "exhausted", json_boolean(dp_synth_exhausted(v->synth)));
    json_object_set_new(o, "key_fingerprint", json_string(v->key_fingerprint));
    json_object_set_new(o, "noise_key_checked", json_boolean(v->key_checked));
    const dp_ledger *l = v->kind == DP_SYNTH_ROLE_INGEST ? NULL : dp_synth_ledger(v->synth);
    json_object_set_new(o, "ledger", l ? ledger_json(l) : json_null());
    if (v->has_plan) {
        json_t *p = json_object();
        cli_plan_json(&v->plan, p);
        json_object_set_new(o, "plan", p);
    }
    if (dump) {
        char *hex = hex_string(&v->state);
        json_object_set_new(o, "private_state_hex", hex ? json_string(hex) : json_null());
        free(hex);
    }
    return o;
}

/* The exit status a view calls for (the header's table). */
static int view_exit(const dp_snapshot_view *v)
{
    switch (v->status) {
    case DP_OK:       return CLI_EXIT_OK;
    case DP_EKEY:     return CLI_EXIT_REFUSED;
    case DP_ECORRUPT: return v->header_ok ? CLI_EXIT_REFUSED : CLI_EXIT_FAILED;   /* unauthentic : not a snapshot */
    case DP_EINVAL:   return v->needs_key ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
    default:          return CLI_EXIT_FAILED;
    }
}

/* The more serious of two exit statuses: refusal, usage, failure, ok. */
static int worse(int a, int b)
{
    static const int rank[] = {[CLI_EXIT_OK] = 0, [CLI_EXIT_FAILED] = 1, [CLI_EXIT_USAGE] = 2,
                               [CLI_EXIT_IO] = 2, [CLI_EXIT_KAFKA] = 3, [CLI_EXIT_REFUSED] = 4};
    return rank[b] > rank[a] ? b : a;
}

/* The command line, as parsed. */
typedef struct inspect_args {
    const char *config_path, *bootstrap, *stream, *state_key_file, *key_file, *key_hex;
    int         as_json, dump, release_state;
    uint64_t    timeout_ms;
} inspect_args;

/* Parse argv into a; -1 to go on, else the exit status (--help: 0). */
static int parse_inspect_args(const char *cmd, int argc, char **argv, inspect_args *a)
{
    *a = (inspect_args){.timeout_ms = 30000};
    if (cli_log_format_option(cmd, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            inspect_usage(stdout);
            return 0;
        }
        if (strcmp(o, "--json") == 0) {
            a->as_json = 1;
            continue;
        }
        if (strcmp(o, "--dump-state") == 0) {
            a->dump = 1;
            continue;
        }
        if (strcmp(o, "--release-state") == 0) {
            a->release_state = 1;
            continue;
        }
        if (i + 1 >= argc) {
            inspect_usage(stderr);
            return cli_fail(cmd, "option %s needs a value (or is unknown)", o);
        }
        const char *v = argv[++i];
        if (strcmp(o, "--config") == 0) a->config_path = v;
        else if (strcmp(o, "--bootstrap") == 0) a->bootstrap = v;
        else if (strcmp(o, "--stream") == 0) a->stream = v;
        else if (strcmp(o, "--state-key-file") == 0) a->state_key_file = v;
        else if (strcmp(o, "--key-file") == 0) a->key_file = v;
        else if (strcmp(o, "--key-hex") == 0) a->key_hex = v;
        else if (strcmp(o, "--log-format") == 0) continue;   /* cli_log_format_option took it */
        else if (strcmp(o, "--timeout-ms") == 0) {
            if (cli_parse_u64(v, &a->timeout_ms) != 0 || a->timeout_ms < 1 || a->timeout_ms > 3600000)
                return cli_fail(cmd, "--timeout-ms must be in 1..3600000");
        } else {
            inspect_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", o);
        }
    }
    if (!a->config_path) {
        inspect_usage(stderr);
        return cli_fail(cmd, "--config is required");
    }
    if (a->stream && !*a->stream)
        return cli_fail(cmd, "--stream must not be empty");
    return -1;
}

/* The snapshots of one map (the state topic, or one partition of it), in
 * key order, printed or added to doc; how many were shown added to *shown;
 * the exit status so far. */
static int show_map(const char *cmd, const inspect_args *a, const dp_stream_config *cfg, dp_codec *codec,
                    dp_bytes_map *latest, const dp_key *state_key, const dp_key *noise_key, json_t *doc,
                    size_t *shown)
{
    size_t n_all = 0;
    const dp_bytes_map_slot **keys = dp_bytes_map_sorted(latest, NULL, &n_all);
    if (!keys) {
        cli_fail(cmd, "out of memory");
        return CLI_EXIT_FAILED;
    }
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < n_all; i++) {
        const dp_bytes_map_slot *s = keys[i];
        if (!s->value || dp_state_key_is_chunk(s->key, s->key_len) || is_reserved(s->key, s->key_len))
            continue;   /* a tombstone; chunks i > 0 are read through chunk 0; progress records */
        dp_snapshot_view v;
        dp_snapshot_inspect(codec, cfg, s->key, s->key_len, s->value, dp_state_read_lookup, latest, latest->count,
                            state_key, noise_key, a->dump, &v);
        if (!v.header_ok) {
            /* not a snapshot at all: say so under its key */
            report(DP_LOG_ERROR, "snapshot_unreadable", NULL, 0, "state record under key '%.*s': %s",
                   (int)(s->key_len < 200 ? s->key_len : 200), s->key, v.error);
            status = worse(status, view_exit(&v));
            dp_snapshot_view_free(&v);
            continue;
        }
        dp_state_record prog;
        int has_prog = find_progress(codec, latest, v.updates_topic, v.partition, &prog);
        if (a->as_json)
            json_array_append_new(json_object_get(doc, "streams"), view_json(&v, &prog, has_prog, a->dump));
        else
            print_text(&v, &prog, has_prog, a->dump);
        if (v.status != DP_OK)
            report(DP_LOG_ERROR, "snapshot_refused", v.stream_id, v.last_closed_step, "%s", v.error);
        if (a->dump && v.status == DP_OK)
            report(DP_LOG_WARN, "private_state_printed", v.stream_id, v.last_closed_step,
                   "printed the PRIVATE state of stream '%s' (--dump-state)", v.stream_id);
        status = worse(status, view_exit(&v));
        dp_snapshot_view_free(&v);
        (*shown)++;
    }
    free(keys);
    return status;
}

/* Every stream's snapshot in maps[0..n_maps) (the state topic read to its
 * end: one map, or one per partition when a key lives in several — a
 * sharded stream's shards, docs/kafka.md §10), as text or one JSON
 * document; the exit status. */
static int show_snapshots(const char *cmd, const inspect_args *a, const dp_stream_config *cfg, dp_codec *codec,
                          dp_bytes_map *maps, int32_t n_maps, const dp_key *state_key, const dp_key *noise_key)
{
    int status = CLI_EXIT_OK;
    json_t *doc = NULL;
    if (a->as_json) {
        doc = json_object();
        json_object_set_new(doc, "state_topic", json_string(cfg->topic_state));
        json_object_set_new(doc, "streams", json_array());
    } else {
        printf("state topic %s, read to its end (committed records only)\n", cfg->topic_state);
    }
    size_t shown = 0;
    for (int32_t i = 0; i < n_maps; i++)
        status = worse(status, show_map(cmd, a, cfg, codec, &maps[i], state_key, noise_key, doc, &shown));
    if (a->stream && shown == 0) {
        cli_fail(cmd, "no snapshot of stream '%s' in %s (nothing committed for it yet?)", a->stream,
                 cfg->topic_state);
        status = worse(status, CLI_EXIT_FAILED);
    }
    if (a->as_json) {
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
    }
    json_decref(doc);
    return status;
}

int cmd_inspect_snapshot(int argc, char **argv)
{
    const char *cmd = "inspect-snapshot";
    inspect_args a;
    int status = parse_inspect_args(cmd, argc, argv, &a);
    if (status >= 0)
        return status;

    char err[1400];
    dp_key noise_key, state_key;
    int have_noise = a.key_file || a.key_hex, have_state = a.state_key_file != NULL;
    if (have_noise && cli_load_key(cmd, a.key_file, a.key_hex, &noise_key) != 0)
        return CLI_EXIT_USAGE;
    if (have_state && dp_key_load_file(&state_key, a.state_key_file, err, sizeof err) != DP_OK) {
        if (have_noise)
            dp_key_wipe(&noise_key);
        return cli_fail(cmd, "state key: %s", err);
    }
    status = CLI_EXIT_OK;
    dp_stream_config *cfg = NULL;
    dp_codec *codec = NULL;
    dp_bytes_map latest, *parts = &latest;
    dp_bytes_map_init(&latest);
    int32_t n_parts = 1;
    dp_stream_config rcfg;
    char rs_topic[300];
    int rc = dp_stream_config_load_file(&cfg, a.config_path, err, sizeof err);
    if (rc != DP_OK) {
        cli_fail(cmd, "%s", err);
        status = rc == DP_EIO ? CLI_EXIT_IO : CLI_EXIT_USAGE;
        goto out;
    }
    if (dp_stream_config_require_ids(cfg, DP_STREAM_IDS_OF(DP_CODEC_SNAPSHOT), "inspect-snapshot", err,
                                     sizeof err) != DP_OK) {
        cli_fail(cmd, "%s", err);
        status = CLI_EXIT_USAGE;
        goto out;
    }
    if ((status = cli_reader_codec(cmd, cfg, &codec)) != CLI_EXIT_OK)
        goto out;
    keep_ctx kc = {.stream = a.stream, .len = a.stream ? strlen(a.stream) : 0};
    const char *bootstrap = a.bootstrap ? a.bootstrap : dp_kafka_bootstrap_env();
    /* The roles' state (docs/kafka.md §10): a sharded stream's shards keep
     * their snapshots under one key in their own partitions, so such a
     * topic is read partition by partition; --release-state reads the
     * release role's topic. */
    int split = a.release_state;
    for (size_t i = 0; i < cfg->n_routes; i++)
        split |= cfg->routes[i].sharded;
    if (a.release_state) {
        snprintf(rs_topic, sizeof rs_topic, "%s.release-state", cfg->topic_prefix);
        rcfg = *cfg;
        rcfg.topic_state = rs_topic;
    }
    const dp_stream_config *rd = a.release_state ? &rcfg : cfg;
    if (split)
        rc = dp_state_read_topic_split(rd, bootstrap, keep_key, &kc, (int)a.timeout_ms, &parts, &n_parts, err,
                                       sizeof err);
    else
        rc = dp_state_read_topic(rd, bootstrap, keep_key, &kc, (int)a.timeout_ms, &latest, err, sizeof err);
    if (rc != DP_OK) {
        cli_fail(cmd, "%s", err);
        status = rc == DP_EINVAL ? CLI_EXIT_USAGE : rc == DP_EIO ? CLI_EXIT_KAFKA : CLI_EXIT_FAILED;
        goto out;
    }
    status = show_snapshots(cmd, &a, rd, codec, parts, n_parts, have_state ? &state_key : NULL,
                            have_noise ? &noise_key : NULL);
out:
    dp_state_read_free(&latest);
    if (parts != &latest) {
        for (int32_t i = 0; parts && i < n_parts; i++)
            dp_state_read_free(&parts[i]);
        free(parts);
    }
    dp_codec_destroy(codec);
    dp_stream_config_free(cfg);
    if (have_noise)
        dp_key_wipe(&noise_key);
    if (have_state)
        dp_key_wipe(&state_key);
    return status;
}
