/* replay_run.c — one offline replay (replay_run.h): the synthesizer state
 * machines run over a file of update JSON lines, without Kafka; `dpstream
 * replay` (app/cmd_replay.c) is its command line.
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
 * Which stream an update belongs to, and whether a new one may be created
 * (routes, max_streams), is decided by stream/route_table.h, the same rule
 * the Kafka consume loop applies.  Outputs are written as NAME.partial and
 * renamed into place only when the whole replay succeeded: a failed replay
 * leaves no partial file behind.
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
 * sight from the first matching route.
 *
 * Owns: the stream table (a synthesizer and step gate per stream id), the
 * output files and their buffers, the summary counts.  Calls: line_reader
 * and update_json (input lines, output lines), route_table (an update's
 * stream), step_gate (what each update does, closes), replay_ledger
 * (--ledger). */
#include "connectors/replay/replay_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "connectors/jsonl/line_reader.h"
#include "connectors/jsonl/replay_ledger.h"
#include "connectors/jsonl/update_json.h"
#include "core/bytes_map.h"
#include "core/dp_error.h"
#include "stream/route_table.h"
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

/* One log, one partition: route_table.h counts max_streams in partition 0. */
static const dp_stream_route *slot_route_of(const void *stream, int32_t *partition)
{
    const stream_slot *s = stream;
    *partition = 0;
    return s->route;
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

typedef dp_replay_summary replay_stats;

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

    dp_route_table t = {.cfg = cfg, .streams = tab, .route_of = slot_route_of};
    void *found = NULL;
    const dp_stream_route *route = NULL;
    stream_slot *s = NULL;
    switch (dp_route_update(&t, u->stream_id, u->stream_id_len, 0, &found, &route)) {
    case DP_ROUTE_KNOWN:
        s = found;
        break;
    case DP_ROUTE_MISPLACED:
        return DP_ESTATE;          /* no placement check here: one log */
    case DP_ROUTE_UNKNOWN:
        return reject(o, st, line_no, DP_REJECT_UNKNOWN_STREAM, dp_reject_reason_text(DP_REJECT_UNKNOWN_STREAM),
                      line, len, 0);
    case DP_ROUTE_FULL:
        snprintf(msg, sizeof msg, "stream would exceed its route's max_streams (%u)", (unsigned)route->max_streams);
        return reject(o, st, line_no, DP_REJECT_STREAM_LIMIT, msg, line, len, 0);
    case DP_ROUTE_NEW:
        if (!(s = table_insert(tab, u->stream_id, u->stream_id_len)))
            return DP_ENOMEM;
        s->route = route;
        char err[512];
        rc = dp_route_open(route, key, s->id, s->id_len, &s->synth, &s->gate, err, sizeof err);
        if (rc != DP_OK) {
            fprintf(stderr, "dpstream replay: line %llu: cannot create synthesizer '%s' for stream '%s': %s\n",
                    (unsigned long long)line_no, route->synthesizer, s->id, err[0] ? err : dp_status_str(rc));
            return rc;
        }
        if (o->ledger)
            dp_gate_track_input(&s->gate, o->ledger->salt);
        break;
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

/* Outputs: NAME.partial until finish_outputs renames (ok) or removes them. */
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

/* --- one replay ------------------------------------------------------------------ */

typedef struct replay {
    const dp_replay_options *opt;
    replay_out       o;
    dp_replay_ledger ledger;
    FILE            *in;
    dp_line_reader   rd;
    dp_bytes_map     tab;
    dp_update_owned  upd;
} replay;

#define FAIL(...) (snprintf(err, errsz, __VA_ARGS__), DP_EIO)

/* The ledger, the input, the output directory and its three .partial files. */
static int replay_open(replay *r, char *err, size_t errsz)
{
    const dp_replay_options *opt = r->opt;
    dp_key_fingerprint(opt->key, r->o.key_fp);
    if (opt->ledger_path) {
        if (dp_replay_ledger_open(&r->ledger, opt->ledger_path, err, errsz) != DP_OK) {
            dp_replay_ledger_close(&r->ledger);   /* what it read before the bad line */
            return DP_EIO;
        }
        r->o.ledger = &r->ledger;
    }
    r->in = strcmp(opt->input_path, "-") == 0 ? stdin : fopen(opt->input_path, "rb");
    if (!r->in)
        return FAIL("cannot open %s: %s", opt->input_path, strerror(errno));
    if (mkdir(opt->out_dir, 0755) != 0 && errno != EEXIST)
        return FAIL("cannot create directory %s: %s", opt->out_dir, strerror(errno));
    if (!(r->o.releases = open_out(opt->out_dir, "releases.jsonl")) ||
        !(r->o.budget = open_out(opt->out_dir, "budget.jsonl")) ||
        !(r->o.rejected = open_out(opt->out_dir, "rejected.jsonl")))
        return DP_EIO;   /* open_out said which */
    if (dp_line_reader_init(&r->rd, r->in, REPLAY_MAX_LINE) != DP_OK) {
        snprintf(err, errsz, "out of memory");
        return DP_ENOMEM;
    }
    return DP_OK;
}

/* Every input line, then the buffered output. */
static int replay_lines(replay *r, dp_replay_summary *st, char *err, size_t errsz)
{
    size_t len;
    int truncated;
    int rc = DP_OK;
    while (rc == DP_OK && dp_line_next(&r->rd, &len, &truncated) == 1) {
        st->lines++;
        if (len == 0 || (len == 1 && r->rd.buf[0] == '\r'))
            continue;   /* blank lines carry nothing; not an error */
        rc = replay_line(r->opt->cfg, r->opt->key, &r->tab, &r->o, st, &r->upd, st->lines, r->rd.buf, len,
                         truncated);
    }
    if (r->rd.error)
        return FAIL("read error on %s", r->opt->input_path);
    if (rc != DP_OK) {
        if (rc == DP_ENOMEM || rc == DP_EIO)
            snprintf(err, errsz, "line %llu: %s", (unsigned long long)st->lines, dp_status_str(rc));
        return rc;
    }
    if (flush_buf(&r->o.rel_buf, r->o.releases, 1) != DP_OK || flush_buf(&r->o.bud_buf, r->o.budget, 1) != DP_OK ||
        flush_buf(&r->o.rej_buf, r->o.rejected, 1) != DP_OK)
        return FAIL("write failed");
    for (int i = 0; i < DP_REJECT_REASON_COUNT; i++)
        st->n_rejected += st->rejected[i];
    st->streams = r->tab.count;
    return DP_OK;
}

/* Close the outputs and rename them into place (rc DP_OK) or remove them. */
static int replay_close(replay *r, int rc, char *err, size_t errsz)
{
    int close_failed = 0;
    if (r->o.releases && fclose(r->o.releases) != 0)
        close_failed = 1;
    if (r->o.budget && fclose(r->o.budget) != 0)
        close_failed = 1;
    if (r->o.rejected && fclose(r->o.rejected) != 0)
        close_failed = 1;
    if (close_failed && rc == DP_OK)
        rc = FAIL("write failed");
    if (r->o.releases || r->o.budget || r->o.rejected)
        finish_outputs(r->opt->out_dir, rc == DP_OK);
    if (r->in && r->in != stdin)
        fclose(r->in);
    dp_line_reader_free(&r->rd);
    dp_jbuf_free(&r->o.rel_buf);
    dp_jbuf_free(&r->o.bud_buf);
    dp_jbuf_free(&r->o.rej_buf);
    dp_update_owned_free(&r->upd);
    if (r->o.ledger)
        dp_replay_ledger_close(&r->ledger);
    table_free(&r->tab);
    return rc;
}

int dp_replay_run(const dp_replay_options *opt, dp_replay_summary *sum, char *err, size_t errsz)
{
    replay r;
    memset(&r, 0, sizeof r);
    memset(sum, 0, sizeof *sum);
    err[0] = '\0';
    r.opt = opt;
    dp_jbuf_init(&r.o.rel_buf);
    dp_jbuf_init(&r.o.bud_buf);
    dp_jbuf_init(&r.o.rej_buf);
    dp_bytes_map_init(&r.tab);
    dp_update_owned_init(&r.upd);
    int rc = replay_open(&r, err, errsz);
    if (rc == DP_OK)
        rc = replay_lines(&r, sum, err, errsz);
    return replay_close(&r, rc, err, errsz);
}
