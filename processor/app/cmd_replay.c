/* cmd_replay.c — `dpstream replay`: run the synthesizer state machines over
 * a file of update JSON lines, without Kafka.
 *
 *   dpstream replay --config CONFIG.json --input UPDATES.jsonl --out DIR
 *                   (--key-file F | --key-hex H)
 *
 * Writes DIR/releases.jsonl (every synthetic record of every closed step,
 * then that step's manifest), DIR/budget.jsonl (one budget event per
 * release) and DIR/rejected.jsonl (one line per refused input line), all
 * in input order, formatted by update_json.c.  The output is a pure
 * function of (input, config, key) — docs/design.md §2 — so running twice gives
 * byte-identical files; nothing depends on time or on hash-table order
 * (the stream table is only ever looked up, never iterated for output).
 *
 * What each update does — use it, hold it for the next step, reject it
 * (and why), close the step — is decided by the step gate
 * (synth/common/step_gate.h), the same module the Kafka processor calls, so both
 * paths release the same bytes.  Steps close on CLOSE_STEP markers (and,
 * for routes that opt in, when the roster is complete); at end of input
 * the open step of every stream stays open (its data is not released),
 * exactly as a processor that has not yet seen the marker.  The live
 * processor's step timer works by appending a marker to the log, so a
 * replay of that log sees it as an ordinary CLOSE_STEP.  A duplicate
 * marker for a closed step is counted in the summary, not rejected.
 *
 * Exit status (cli.h): 0; 1 when lines were rejected and not one was used
 * (the outputs are still written: rejected.jsonl says why); 2 usage or
 * configuration; 3 an unreadable input or unwritable output; 5 a --ledger
 * refusal.
 *
 * Rejections (reason codes of synth.h, dp_reject_reason_name) go to
 * rejected.jsonl with their input line number; an update held for the
 * next step is judged, and if rejected written, when that step opens.
 *   MALFORMED       the line is not a valid update (update_json.h) or is
 *                   longer than REPLAY_MAX_LINE bytes
 *   UNKNOWN_STREAM  no route in the config matches the stream id
 *   others          the step gate's (step_gate.h)
 *
 * Memory: one input line at a time (at most REPLAY_MAX_LINE bytes kept),
 * the output buffers, and one synthesizer per stream id, created on first
 * sight from the first matching route. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "app/cli.h"
#include "core/bytes_map.h"
#include "stream/stream_config.h"
#include "connectors/jsonl/line_reader.h"
#include "connectors/jsonl/replay_ledger.h"
#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"
#include "synth/common/step_gate.h"
#include "synth/common/synth.h"

#define REPLAY_MAX_LINE   (1u << 20)   /* longer lines are rejected, not buffered */
#define REPLAY_FLUSH_AT   (1u << 16)

/* --- per-stream state --------------------------------------------------------- */

/* A stream's synthesizer; the map (core/bytes_map.h) owns `id`. */
typedef struct stream_slot {
    const char  *id;
    size_t       id_len;
    const dp_stream_route *route;
    dp_synth    *synth;
    dp_step_gate gate;
} stream_slot;

static stream_slot *table_find(const dp_bytes_map *t, const char *id, size_t len)
{
    dp_bytes_map_slot *e = dp_bytes_map_find(t, id, len);
    return e ? e->value : NULL;
}

static stream_slot *table_insert(dp_bytes_map *t, const char *id, size_t len)
{
    dp_bytes_map_slot *e = dp_bytes_map_upsert(t, id, len);
    stream_slot *s = e ? calloc(1, sizeof *s) : NULL;
    if (!s)
        return NULL;
    s->id = e->key;
    s->id_len = e->key_len;
    e->value = s;
    return s;
}

static void table_free(dp_bytes_map *t)
{
    for (size_t i = 0; i < t->cap; i++) {
        stream_slot *s = dp_bytes_map_at(t, i);
        if (s) {
            dp_gate_free(&s->gate);
            dp_synth_destroy(s->synth);
        }
        free(s);
    }
    dp_bytes_map_free(t);
}

/* --- the run ------------------------------------------------------------------- */

typedef struct replay_out {
    dp_replay_ledger *ledger;     /* --ledger, or NULL */
    char        key_fp[DP_KEY_FINGERPRINT_HEX];
    FILE       *releases;
    FILE       *budget;
    FILE       *rejected;
    dp_jbuf     rel_buf;
    dp_jbuf     bud_buf;
    dp_jbuf     rej_buf;
    /* the close in progress, for record lines */
    const char *stream_id;
    size_t      stream_id_len;
    uint64_t    step;
    int         io_error;
} replay_out;

static int flush_buf(dp_jbuf *b, FILE *f, int force)
{
    if (b->oom)
        return DP_ENOMEM;
    if (b->len == 0 || (!force && b->len < REPLAY_FLUSH_AT))
        return DP_OK;
    size_t n = b->len;
    size_t w = fwrite(b->data, 1, n, f);
    dp_jbuf_reset(b);
    return w == n ? DP_OK : DP_EIO;
}

static int sink_record(void *ctx, const dp_synth_record *r)
{
    replay_out *o = ctx;
    if (dp_update_json_format_record(&o->rel_buf, o->stream_id, o->stream_id_len, o->step, r) != 0)
        return DP_ENOMEM;
    return flush_buf(&o->rel_buf, o->releases, 0);
}

static int sink_manifest(void *ctx, const dp_release_manifest *m)
{
    replay_out *o = ctx;
    if (dp_update_json_format_manifest(&o->rel_buf, m) != 0)
        return DP_ENOMEM;
    return flush_buf(&o->rel_buf, o->releases, 0);
}

static int sink_budget(void *ctx, const dp_budget_event *e)
{
    replay_out *o = ctx;
    if (dp_update_json_format_budget(&o->bud_buf, e) != 0)
        return DP_ENOMEM;
    return flush_buf(&o->bud_buf, o->budget, 0);
}

typedef struct replay_stats {
    uint64_t lines;
    uint64_t used;
    uint64_t closes;
    uint64_t duplicate_markers;
    uint64_t rejected[DP_REJECT_REASON_COUNT];
} replay_stats;

static int reject(replay_out *o, replay_stats *st, uint64_t line_no, dp_reject_reason reason,
                  const char *text, const char *raw, size_t raw_len, int truncated)
{
    st->rejected[reason]++;
    if (dp_update_json_format_rejected(&o->rej_buf, line_no, reason, text, raw, raw_len, truncated) != 0)
        return DP_ENOMEM;
    return flush_buf(&o->rej_buf, o->rejected, 0);
}

/* A held update's verdict at the close that opened its step. */
typedef struct applied_ctx {
    replay_out   *o;
    replay_stats *st;
} applied_ctx;

static int held_applied(void *ctx, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len,
                        dp_reject_reason reason)
{
    (void)u;
    applied_ctx *a = ctx;
    if (reason == DP_REJECT_NONE) {
        a->st->used++;
        return DP_OK;
    }
    return reject(a->o, a->st, origin, reason, dp_reject_reason_text(reason), (const char *)raw, raw_len, 0);
}

/* Close s's open step (and, while the policy says so, the steps that held
 * updates complete at once). */
static int close_step(replay_out *o, replay_stats *st, stream_slot *s, uint64_t line_no)
{
    dp_release_sink sink = {.ctx = o, .record = sink_record, .manifest = sink_manifest, .budget = sink_budget};
    applied_ctx actx = {.o = o, .st = st};
    char err[512];
    int again = 1;
    while (again) {
        o->stream_id = s->id;
        o->stream_id_len = s->id_len;
        o->step = dp_synth_open_step(s->synth);
        err[0] = '\0';
        uint8_t digest[DP_GATE_DIGEST_BYTES];
        dp_gate_open_digest(&s->gate, digest);
        if (o->ledger && dp_replay_ledger_check(o->ledger, s->id, s->id_len, o->step, o->key_fp, digest, err,
                                                sizeof err) != DP_OK) {
            fprintf(stderr, "dpstream replay: line %llu: refused: %s\n", (unsigned long long)line_no, err);
            return DP_EKEY;
        }
        int rc = dp_gate_close(&s->gate, &sink, held_applied, &actx, &again, err, sizeof err);
        if (rc == DP_OK && o->ledger)
            rc = dp_replay_ledger_record(o->ledger, s->id, s->id_len, o->step, o->key_fp, digest, err, sizeof err);
        if (rc != DP_OK) {
            fprintf(stderr, "dpstream replay: line %llu: closing step %llu of stream '%s' failed: %s\n",
                    (unsigned long long)line_no, (unsigned long long)o->step, s->id,
                    err[0] ? err : dp_status_str(rc));
            return rc;
        }
        st->closes++;
    }
    return DP_OK;
}

/* How many streams `route` has created (replay reads one log: one partition). */
static uint32_t route_streams(const dp_bytes_map *tab, const dp_stream_route *route)
{
    uint32_t n = 0;
    for (size_t i = 0; i < tab->cap; i++) {
        const stream_slot *s = dp_bytes_map_at(tab, i);
        n += s && s->route == route;
    }
    return n;
}

/* Process one line; returns DP_OK or a fatal status (I/O, memory, close failure). */
static int replay_line(const dp_stream_config *cfg, const dp_key *key, dp_bytes_map *tab,
                       replay_out *o, replay_stats *st, dp_update_owned *upd,
                       uint64_t line_no, const char *line, size_t len, int truncated)
{
    char msg[384];
    if (truncated) {
        snprintf(msg, sizeof msg, "line longer than %u bytes", REPLAY_MAX_LINE);
        return reject(o, st, line_no, DP_REJECT_MALFORMED, msg, line, 256, 1);
    }
    int rc = dp_update_json_parse(line, len, upd, msg, sizeof msg);
    if (rc == DP_ENOMEM)
        return rc;
    if (rc != DP_OK)
        return reject(o, st, line_no, DP_REJECT_MALFORMED, msg, line, len, 0);
    const dp_update *u = &upd->u;

    stream_slot *s = table_find(tab, u->stream_id, u->stream_id_len);
    if (!s) {
        const dp_stream_route *route = dp_stream_config_route(cfg, u->stream_id, u->stream_id_len);
        if (!route)
            return reject(o, st, line_no, DP_REJECT_UNKNOWN_STREAM, dp_reject_reason_text(DP_REJECT_UNKNOWN_STREAM),
                          line, len, 0);
        if (route->max_streams && route_streams(tab, route) >= route->max_streams) {
            snprintf(msg, sizeof msg, "stream would exceed its route's max_streams (%u)", (unsigned)route->max_streams);
            return reject(o, st, line_no, DP_REJECT_STREAM_LIMIT, msg, line, len, 0);
        }
        if (!(s = table_insert(tab, u->stream_id, u->stream_id_len)))
            return DP_ENOMEM;
        s->route = route;
        dp_synth_env env = {.key = key, .stream_id = s->id, .stream_id_len = s->id_len};
        char err[512];
        err[0] = '\0';
        rc = dp_synth_create(&s->synth, route->synthesizer, route->config, &env, err, sizeof err);
        if (rc != DP_OK) {
            fprintf(stderr, "dpstream replay: line %llu: cannot create synthesizer '%s' for stream '%s': %s\n",
                    (unsigned long long)line_no, route->synthesizer, s->id, err[0] ? err : dp_status_str(rc));
            return rc;
        }
        dp_gate_init(&s->gate, s->synth, &route->gate);
        if (o->ledger)
            dp_gate_track_input(&s->gate, o->ledger->salt);
    }

    dp_gate_verdict v;
    rc = dp_gate_offer(&s->gate, u, line_no, (const uint8_t *)line, len, &v);
    if (rc != DP_OK) {
        fprintf(stderr, "dpstream replay: line %llu: ingest failed: %s\n", (unsigned long long)line_no,
                dp_status_str(rc));
        return rc;
    }
    switch (v.action) {
    case DP_GATE_IGNORED:
        st->duplicate_markers++;   /* already closed: harmless, see the header */
        return DP_OK;
    case DP_GATE_REJECTED:
        return reject(o, st, line_no, v.reason, v.text, line, len, 0);
    case DP_GATE_BUFFERED:
        return DP_OK;              /* counted when its step opens */
    case DP_GATE_CLOSE:
        st->used++;
        return close_step(o, st, s, line_no);
    case DP_GATE_USED:
        st->used++;
        return v.close_after ? close_step(o, st, s, line_no) : DP_OK;
    }
    return DP_ESTATE;
}

static void replay_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream replay --config CONFIG.json --input UPDATES.jsonl --out DIR\n"
            "                       (--key-file F | --key-hex H) [--ledger FILE]\n"
            "\n"
            "Runs the configured synthesizers over update JSON lines (\"-\" reads stdin)\n"
            "without Kafka and writes DIR/releases.jsonl, DIR/budget.jsonl and\n"
            "DIR/rejected.jsonl.  Same key and input give byte-identical output.\n"
            "A CLOSE_STEP marker closes a stream's step (a complete roster too, where\n"
            "the route sets close_on_complete_roster); at end of input open steps stay\n"
            "open (not released).\n"
            "--ledger FILE records every released step (stream, step, key fingerprint,\n"
            "a keyed digest of its input) and refuses to release a step again under the\n"
            "same key from different input, or from the same input under another key.\n"
            "Exit 1 if input lines were rejected and not one was used (the files are still\n"
            "written: rejected.jsonl says why).\n");
}

/* Outputs are written as NAME.partial and renamed into place only when
 * the whole replay succeeded (finish_outputs): a failed replay leaves no
 * partial file behind. */
static const char *const OUT_NAMES[3] = {"releases.jsonl", "budget.jsonl", "rejected.jsonl"};

static void finish_outputs(const char *dir, int ok)
{
    for (int i = 0; i < 3; i++) {
        char tmp[4096], fin[4096];
        snprintf(tmp, sizeof tmp, "%s/%s.partial", dir, OUT_NAMES[i]);
        snprintf(fin, sizeof fin, "%s/%s", dir, OUT_NAMES[i]);
        if (ok) {
            if (rename(tmp, fin) != 0)
                fprintf(stderr, "dpstream replay: cannot rename %s: %s\n", tmp, strerror(errno));
        } else {
            unlink(tmp);
        }
    }
}

static FILE *open_out(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2 + 8;
    char *path = malloc(n);
    if (!path)
        return NULL;
    snprintf(path, n, "%s/%s.partial", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        fprintf(stderr, "dpstream replay: cannot create %s: %s\n", path, strerror(errno));
    free(path);
    return f;
}

int cmd_replay(int argc, char **argv)
{
    const char *cmd = "replay";
    const char *config_path = NULL, *input_path = NULL, *out_dir = NULL, *key_file = NULL, *key_hex = NULL,
               *ledger_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            replay_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--config") == 0) slot = &config_path;
        else if (strcmp(a, "--input") == 0) slot = &input_path;
        else if (strcmp(a, "--out") == 0) slot = &out_dir;
        else if (strcmp(a, "--key-file") == 0) slot = &key_file;
        else if (strcmp(a, "--key-hex") == 0) slot = &key_hex;
        else if (strcmp(a, "--ledger") == 0) slot = &ledger_path;
        else {
            replay_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
        if (i + 1 >= argc)
            return cli_fail(cmd, "option %s needs a value", a);
        *slot = argv[++i];
    }
    if (!config_path || !input_path || !out_dir) {
        replay_usage(stderr);
        return cli_fail(cmd, "--config, --input and --out are required");
    }
    dp_key key;
    if (cli_load_key(cmd, key_file, key_hex, &key) != 0)
        return 2;
    char err[1024];
    dp_stream_config *cfg = NULL;
    if (dp_stream_config_load_file(&cfg, config_path, err, sizeof err) != DP_OK) {
        dp_key_wipe(&key);
        return cli_fail(cmd, "%s", err);
    }
    int status = 2, all_rejected = 0;
    FILE *in = NULL;
    replay_out o;
    memset(&o, 0, sizeof o);
    dp_jbuf_init(&o.rel_buf);
    dp_jbuf_init(&o.bud_buf);
    dp_jbuf_init(&o.rej_buf);
    dp_line_reader rd;
    memset(&rd, 0, sizeof rd);
    dp_bytes_map tab;
    dp_bytes_map_init(&tab);
    dp_update_owned upd;
    dp_update_owned_init(&upd);
    replay_stats st;
    memset(&st, 0, sizeof st);
    dp_replay_ledger ledger;
    memset(&ledger, 0, sizeof ledger);
    dp_key_fingerprint(&key, o.key_fp);
    if (ledger_path) {
        if (dp_replay_ledger_open(&ledger, ledger_path, err, sizeof err) != DP_OK) {
            dp_replay_ledger_close(&ledger);   /* what it read before the bad line */
            cli_fail(cmd, "%s", err);
            status = CLI_EXIT_IO;
            goto done;
        }
        o.ledger = &ledger;
    }

    status = CLI_EXIT_IO;
    in = strcmp(input_path, "-") == 0 ? stdin : fopen(input_path, "rb");
    if (!in) {
        cli_fail(cmd, "cannot open %s: %s", input_path, strerror(errno));
        goto done;
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        cli_fail(cmd, "cannot create directory %s: %s", out_dir, strerror(errno));
        goto done;
    }
    if (!(o.releases = open_out(out_dir, "releases.jsonl")) || !(o.budget = open_out(out_dir, "budget.jsonl")) ||
        !(o.rejected = open_out(out_dir, "rejected.jsonl")))
        goto done;
    status = CLI_EXIT_FAILED;
    if (dp_line_reader_init(&rd, in, REPLAY_MAX_LINE) != DP_OK) {
        cli_fail(cmd, "out of memory");
        goto done;
    }
    size_t len;
    int truncated, got;
    int rc = DP_OK;
    while (rc == DP_OK && (got = dp_line_next(&rd, &len, &truncated)) == 1) {
        st.lines++;
        if (len == 0 || (len == 1 && rd.buf[0] == '\r'))
            continue;   /* blank lines carry nothing; not an error */
        rc = replay_line(cfg, &key, &tab, &o, &st, &upd, st.lines, rd.buf, len, truncated);
    }
    if (rd.error) {
        cli_fail(cmd, "read error on %s", input_path);
        status = CLI_EXIT_IO;
        goto done;
    }
    if (rc != DP_OK) {
        if (rc == DP_ENOMEM || rc == DP_EIO)
            cli_fail(cmd, "line %llu: %s", (unsigned long long)st.lines, dp_status_str(rc));
        status = rc == DP_EKEY ? CLI_EXIT_REFUSED : rc == DP_EIO ? CLI_EXIT_IO : CLI_EXIT_FAILED;
        goto done;
    }
    if (flush_buf(&o.rel_buf, o.releases, 1) != DP_OK || flush_buf(&o.bud_buf, o.budget, 1) != DP_OK ||
        flush_buf(&o.rej_buf, o.rejected, 1) != DP_OK) {
        cli_fail(cmd, "write failed");
        status = CLI_EXIT_IO;
        goto done;
    }
    status = 0;
    uint64_t n_rej = 0;
    for (int r = 0; r < DP_REJECT_REASON_COUNT; r++)
        n_rej += st.rejected[r];
    /* Rejected lines are data, but input of which not one line could be
     * used is a wrong config, mapping or file, not a replay: say so in the
     * exit status (1, "ran, but something did not add up").  The outputs
     * are still written: rejected.jsonl says why each line was refused. */
    if (n_rej > 0 && st.used == 0) {
        status = CLI_EXIT_FAILED;
        all_rejected = 1;
    }
    printf("replay: %llu lines, %llu used, %llu rejected, %llu steps closed, %llu duplicate CLOSE_STEP markers ignored, %zu streams\n",
           (unsigned long long)st.lines, (unsigned long long)st.used, (unsigned long long)n_rej,
           (unsigned long long)st.closes, (unsigned long long)st.duplicate_markers, tab.count);
    for (int r = 1; r < DP_REJECT_REASON_COUNT; r++)
        if (st.rejected[r])
            printf("  rejected %-18s %llu\n", dp_reject_reason_name((dp_reject_reason)r),
                   (unsigned long long)st.rejected[r]);
    if (all_rejected)
        cli_fail(cmd, "all %llu input lines were rejected and none was used (%s/rejected.jsonl says why): is "
                 "this the input and the configuration meant for each other?", (unsigned long long)n_rej, out_dir);
done:
    {
        int close_failed = 0;
        if (o.releases && fclose(o.releases) != 0)
            close_failed = 1;
        if (o.budget && fclose(o.budget) != 0)
            close_failed = 1;
        if (o.rejected && fclose(o.rejected) != 0)
            close_failed = 1;
        if (close_failed && (status == 0 || all_rejected)) {
            all_rejected = 0;
            cli_fail(cmd, "write failed");
            status = CLI_EXIT_IO;
        }
        if (o.releases || o.budget || o.rejected)
            finish_outputs(out_dir, status == 0 || all_rejected);
    }
    if (in && in != stdin)
        fclose(in);
    dp_line_reader_free(&rd);
    dp_jbuf_free(&o.rel_buf);
    dp_jbuf_free(&o.bud_buf);
    dp_jbuf_free(&o.rej_buf);
    dp_update_owned_free(&upd);
    if (o.ledger)
        dp_replay_ledger_close(&ledger);
    table_free(&tab);
    dp_stream_config_free(cfg);
    dp_key_wipe(&key);
    return status;
}
