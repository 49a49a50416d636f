/* cmd_load.c — `dpstream load`: CSV or JSONL rows (or update JSON lines)
 * → dpstream Updates.
 *
 *   dpstream load --input FILE [--format csv|jsonl|updates] (--mapping M.json | flags…)
 *                 (--out UPDATES.jsonl | --topic T | --config CONFIG.json)
 *                 [--close-steps [--max-gap N]] [--rejects R.jsonl] [--quiet]
 *                 [--raw-invalid] [--partitions N] [--log-format text|json]
 *
 * The input format is chosen once (connectors/load/row_source.h: --format,
 * else the file name).  --format updates reads update JSON lines as they
 * are, with no mapping; a line that is not a valid update stops the load
 * (exit 1) unless --raw-invalid (Kafka only) produces it as raw bytes with
 * no key.  `dpstream produce` is an alias: cmd_produce.c maps its options
 * onto these and calls cli_load_as.
 *
 * The options become a mapping (connectors/load/load_mapping.h: from the
 * --mapping file, with flags overriding its keys) and a dp_load_options;
 * the load itself is connectors/load/load_run.c, which documents
 * --close-steps and rejected rows.
 *
 * --close-steps (docs/design.md §2: step boundaries are markers in the log):
 * per stream, when a row's step is after the stream's current step, a
 * CLOSE_STEP marker is written for every step from the current one up to
 * the row's step - 1 (an empty step in between is closed too, or the
 * processor would refuse the later rows as FUTURE_STEP); at end of input
 * the last step of every stream is closed, streams in order of first
 * appearance.  A row for a step already closed is rejected
 * (STEP_BACKWARDS: the input must be sorted by step within each stream),
 * and a row skipping more than --max-gap (default 10000) empty steps is
 * rejected (STEP_GAP), which catches a wrong origin or length before it
 * floods the log with markers.
 *
 * Rejected rows never stop the load: each is reported on stderr with its
 * line number and reason, and appended to --rejects as JSON lines
 * {"line":N,"reason":"…","text":"…","raw":"…"}.  Fatal errors exit with
 * the code of cli.h: 1 input that cannot be loaded at all (a column missing
 * from the header), 2 usage or a bad mapping, 3 an unreadable input or
 * unwritable output, 4 Kafka (no broker answers within
 * --connect-timeout-ms, a delivery failure); otherwise the exit code is 0
 * and a summary is printed.
 *
 * Owns: the parsed options, the files, the mapping.  Calls: load_mapping
 * (the mapping), load_run (the load), load_kafka (the Kafka target). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "connectors/load/load_kafka.h"
#include "connectors/load/load_mapping.h"
#include "connectors/load/load_run.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"

/* --- mapping from file + flags ------------------------------------------------------------ */

/* "12" → 12 (a JSON integer), anything else → a JSON string. */
static json_t *int_or_string(const char *s)
{
    int64_t v;
    if (cli_parse_i64(s, &v) == 0)
        return json_integer(v);
    return json_string(s);
}

static json_t *string_list(const char *csv)
{
    json_t *a = json_array();
    const char *p = csv;
    while (a) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (json_array_append_new(a, json_stringn(p, n)) != 0) {
            json_decref(a);
            return NULL;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return a;
}

typedef struct load_flags {
    const char *mapping, *stream, *stream_col, *step_col, *time_col, *time_format, *origin, *length;
    const char *entity_col, *kind, *kind_col, *value_col, *row_cols, *point_cols;
} load_flags;

static json_t *col_obj(const char *name) { return json_pack("{s:s}", "column", name); }

static int build_mapping(const load_flags *f, json_t **out, char *err, size_t errsz)
{
    json_t *root;
    if (f->mapping) {
        json_error_t jerr;
        root = json_load_file(f->mapping, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
            return dp_err(err, errsz, DP_EINVAL, "%s: line %d: %s", f->mapping, jerr.line, jerr.text);
        if (!json_is_object(root)) {
            json_decref(root);
            return dp_err(err, errsz, DP_EINVAL, "%s: the mapping must be a JSON object", f->mapping);
        }
    } else if (!(root = json_object())) {
        return dp_err(err, errsz, DP_ENOMEM, "out of memory");
    }
    int bad = 0;
    if (f->stream && f->stream_col)
        bad = dp_err(err, errsz, DP_EINVAL, "give --stream or --stream-column, not both");
    else if (f->stream)
        json_object_set_new(root, "stream", json_string(f->stream));
    else if (f->stream_col)
        json_object_set_new(root, "stream", col_obj(f->stream_col));
    if (!bad && (f->step_col || f->time_col || f->origin || f->length || f->time_format)) {
        if ((f->step_col != NULL) == (f->time_col != NULL)) {
            bad = dp_err(err, errsz, DP_EINVAL, "give exactly one of --step-column and --time-column");
        } else {
            json_t *st = json_object();
            json_object_set_new(st, f->step_col ? "column" : "time_column",
                                json_string(f->step_col ? f->step_col : f->time_col));
            if (f->time_format)
                json_object_set_new(st, "format", json_string(f->time_format));
            if (f->origin)
                json_object_set_new(st, "origin", int_or_string(f->origin));
            if (f->length)
                json_object_set_new(st, "length", int_or_string(f->length));
            json_object_set_new(root, "step", st);
        }
    }
    if (!bad && f->entity_col)
        json_object_set_new(root, "entity", col_obj(f->entity_col));
    if (!bad && f->kind && f->kind_col)
        bad = dp_err(err, errsz, DP_EINVAL, "give --kind or --kind-column, not both");
    else if (!bad && f->kind)
        json_object_set_new(root, "kind", json_string(f->kind));
    else if (!bad && f->kind_col)
        json_object_set_new(root, "kind", col_obj(f->kind_col));
    int n_payload = (f->value_col != NULL) + (f->row_cols != NULL) + (f->point_cols != NULL);
    if (!bad && n_payload > 1)
        bad = dp_err(err, errsz, DP_EINVAL, "give one of --value-column, --row-columns, --point-columns");
    else if (!bad && f->value_col)
        json_object_set_new(root, "payload", json_pack("{s:s,s:s}", "type", "category", "column", f->value_col));
    else if (!bad && n_payload == 1)
        json_object_set_new(root, "payload", json_pack("{s:s,s:o}", "type", f->row_cols ? "row" : "point",
                                                       "columns", string_list(f->row_cols ? f->row_cols : f->point_cols)));
    if (bad) {
        json_decref(root);
        return bad;
    }
    *out = root;
    return DP_OK;
}

static void load_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream load --input FILE [--format csv|jsonl|updates] (--mapping MAP.json | mapping flags)\n"
            "                     (--out UPDATES.jsonl | --topic TOPIC | --config CONFIG.json)\n"
            "                     [--close-steps [--max-gap N]] [--rejects REJECTS.jsonl] [--quiet]\n"
            "                     [--raw-invalid] [--partitions N] [--log-format text|json]\n"
            "\n"
            "Turns rows of a CSV file (RFC 4180, header row required) or of a JSON-lines file\n"
            "into dpstream updates, in input order.\n"
            "\n"
            "mapping flags (override the same keys of --mapping; see load_mapping.h):\n"
            "  --stream ID | --stream-column C        stream id: constant or from a column\n"
            "  --step-column C [--step-origin N] [--step-length N]\n"
            "                                         step = floor((C - origin) / length) + 1\n"
            "  --time-column C --step-origin T --step-length L [--time-format iso8601|epoch_s|epoch_ms]\n"
            "                                         step = floor((ts - T) / L) + 1; T an ISO-8601\n"
            "                                         time (or epoch seconds), L seconds or 15m/1h/1d/1w\n"
            "  --entity-column C                      entity id\n"
            "  --kind REPORT|INSERT|DELETE | --kind-column C   (default REPORT)\n"
            "  --value-column C | --row-columns C1,C2,.. | --point-columns X,Y,..\n"
            "                                         payload: category, row of ints, point\n"
            "                                         (category labels only via --mapping)\n"
            "output:\n"
            "  --out FILE          update JSON lines (\"-\" = stdout), the input of `dpstream replay`\n"
            "  --topic T / --config CONFIG.json\n"
            "                      produce Avro Updates to Kafka, key = stream id; topic from --topic\n"
            "                      or the config's updates topic; brokers from the config's \"kafka\"\n"
            "                      properties, $DPSTREAM_BOOTSTRAP_SERVERS or --bootstrap-servers;\n"
            "                      encoded exactly as `dpstream run` reads them (idempotent producer,\n"
            "                      every delivery confirmed before exit 0; the topic is created if\n"
            "                      missing, with the config's topics.partitions, default 4)\n"
            "  --connect-timeout-ms MS  Kafka: give up (exit 4) when no broker answers this long\n"
            "                      (default 10000)\n"
            "other:\n"
            "  --close-steps       emit CLOSE_STEP markers when a stream's step advances and at the end\n"
            "  --max-gap N         with --close-steps, reject rows skipping more than N steps (10000)\n"
            "  --rejects FILE      also write rejected rows there as JSON lines\n"
            "  --quiet             no progress lines on stderr (nor, for Kafka, the \"waiting for N\n"
            "                      acknowledgements\" lines while the last updates are confirmed)\n"
            "  --log-format text|json  stderr as text or JSON lines (as `dpstream run`)\n"
            "update lines (--format updates; `dpstream produce` is this with --config):\n"
            "  the input is update JSON lines as `dpstream replay` reads them, loaded as they are\n"
            "  (no mapping); a line that is not a valid update stops the load (exit 1), unless\n"
            "  --raw-invalid  (Kafka) produces it as raw bytes with no key, for dead-letter tests\n"
            "  --partitions N      Kafka: a topic created here gets N partitions (1..10000)\n");
}

/* The command line, as parsed. */
typedef struct load_args {
    load_flags fl;
    const char *input, *format, *out_path, *rejects_path, *max_gap_s, *connect_s, *partitions_s;
    dp_load_kafka_options ko;
    int close_steps, quiet, raw_invalid;
} load_args;

/* Parse argv into a; -1 to go on, else the exit status (--help: 0). */
static int parse_load_args(const char *cmd, int argc, char **argv, load_args *a)
{
    memset(a, 0, sizeof *a);
    if (cli_log_format_option(cmd, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    load_flags *fl = &a->fl;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char **slot = NULL;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            load_usage(stdout);
            return 0;
        }
        if (strcmp(o, "--close-steps") == 0) { a->close_steps = 1; continue; }
        if (strcmp(o, "--quiet") == 0) { a->quiet = 1; continue; }
        if (strcmp(o, "--raw-invalid") == 0) { a->raw_invalid = 1; continue; }
        if (strcmp(o, "--input") == 0) slot = &a->input;
        else if (strcmp(o, "--format") == 0) slot = &a->format;
        else if (strcmp(o, "--out") == 0) slot = &a->out_path;
        else if (strcmp(o, "--rejects") == 0) slot = &a->rejects_path;
        else if (strcmp(o, "--max-gap") == 0) slot = &a->max_gap_s;
        else if (strcmp(o, "--mapping") == 0) slot = &fl->mapping;
        else if (strcmp(o, "--stream") == 0) slot = &fl->stream;
        else if (strcmp(o, "--stream-column") == 0) slot = &fl->stream_col;
        else if (strcmp(o, "--step-column") == 0) slot = &fl->step_col;
        else if (strcmp(o, "--time-column") == 0) slot = &fl->time_col;
        else if (strcmp(o, "--time-format") == 0) slot = &fl->time_format;
        else if (strcmp(o, "--step-origin") == 0) slot = &fl->origin;
        else if (strcmp(o, "--step-length") == 0) slot = &fl->length;
        else if (strcmp(o, "--entity-column") == 0) slot = &fl->entity_col;
        else if (strcmp(o, "--kind") == 0) slot = &fl->kind;
        else if (strcmp(o, "--kind-column") == 0) slot = &fl->kind_col;
        else if (strcmp(o, "--value-column") == 0) slot = &fl->value_col;
        else if (strcmp(o, "--row-columns") == 0) slot = &fl->row_cols;
        else if (strcmp(o, "--point-columns") == 0) slot = &fl->point_cols;
        else if (strcmp(o, "--topic") == 0) slot = &a->ko.topic;
        else if (strcmp(o, "--config") == 0) slot = &a->ko.config_path;
        else if (strcmp(o, "--bootstrap-servers") == 0) slot = &a->ko.bootstrap;
        else if (strcmp(o, "--connect-timeout-ms") == 0) slot = &a->connect_s;
        else if (strcmp(o, "--partitions") == 0) slot = &a->partitions_s;
        else if (strcmp(o, "--log-format") == 0 && i + 1 < argc) { i++; continue; }   /* taken above */
        else {
            load_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", o);
        }
        if (i + 1 >= argc)
            return cli_fail(cmd, "option %s needs a value", o);
        *slot = argv[++i];
    }
    return -1;
}

/* Whether any mapping flag (or --mapping) was given. */
static int any_mapping_flag(const load_flags *f)
{
    const char *const v[] = {f->mapping, f->stream, f->stream_col, f->step_col, f->time_col, f->time_format, f->origin,
                             f->length, f->entity_col, f->kind, f->kind_col, f->value_col, f->row_cols, f->point_cols};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i])
            return 1;
    return 0;
}

/* The checks between options, the numbers, the format; -1 to go on, else
 * the exit status. */
static int check_load_args(const char *cmd, load_args *a, uint64_t *max_gap, dp_row_format *fmt)
{
    if (!a->input)
        return cli_fail(cmd, "--input is required (see --help)");
    int to_kafka = a->ko.topic || a->ko.config_path;
    if ((a->out_path != NULL) == to_kafka)
        return cli_fail(cmd, "give --out FILE, or --topic/--config for Kafka (one output)");
    uint64_t connect_ms = DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS, partitions = 0;
    *max_gap = 10000;
    if (a->connect_s && (cli_parse_u64(a->connect_s, &connect_ms) != 0 || connect_ms < 1 || connect_ms > 3600000))
        return cli_fail(cmd, "--connect-timeout-ms must be in 1..3600000");
    a->ko.connect_timeout_ms = (int)connect_ms;
    a->ko.quiet = a->quiet;
    a->ko.label = cmd;
    if (a->max_gap_s && (cli_parse_u64(a->max_gap_s, max_gap) != 0 || *max_gap == 0))
        return cli_fail(cmd, "--max-gap must be an integer >= 1");
    if (a->partitions_s && (cli_parse_u64(a->partitions_s, &partitions) != 0 || partitions < 1 || partitions > 10000))
        return cli_fail(cmd, "--partitions must be in 1..10000");
    a->ko.partitions = (int)partitions;
    char err[512];
    if (dp_row_format_choose(a->format, a->input, fmt, err, sizeof err) != DP_OK)
        return cli_fail(cmd, "%s", err);
    if (*fmt == DP_ROW_UPDATES && any_mapping_flag(&a->fl))
        return cli_fail(cmd, "--format updates reads update lines as they are: no mapping");
    if (*fmt == DP_ROW_UPDATES && a->close_steps)
        return cli_fail(cmd, "--close-steps needs a mapping (update lines carry their own CLOSE_STEP markers)");
    if (a->raw_invalid && (*fmt != DP_ROW_UPDATES || !to_kafka))
        return cli_fail(cmd, "--raw-invalid applies to --format updates into Kafka");
    return -1;
}

static void print_summary(const char *cmd, FILE *sf, dp_row_format fmt, const dp_load_kafka *kafka,
                          const dp_load_summary *sum)
{
    if (fmt == DP_ROW_UPDATES && kafka) {
        fprintf(sf, "%s: %llu updates and %llu raw lines to %s\n", cmd, (unsigned long long)sum->emitted,
                (unsigned long long)sum->raw, dp_load_kafka_topic(kafka));
        return;
    }
    fprintf(sf, "%s: %llu rows, %llu updates written, %llu CLOSE_STEP markers, %llu rejected, %zu streams\n", cmd,
            (unsigned long long)sum->rows, (unsigned long long)sum->emitted, (unsigned long long)sum->markers,
            (unsigned long long)sum->rejected, sum->streams);
    for (int k = 1; k < DP_LOAD_REJECT_COUNT; k++)
        if (sum->by_reason[k])
            fprintf(sf, "  rejected %-15s %llu\n", dp_load_reject_name((dp_load_reject)k),
                    (unsigned long long)sum->by_reason[k]);
}

int cli_load_as(const char *cmd, int argc, char **argv)
{
    load_args a;
    int status = parse_load_args(cmd, argc, argv, &a);
    if (status >= 0)
        return status;
    uint64_t max_gap;
    dp_row_format fmt;
    if ((status = check_load_args(cmd, &a, &max_gap, &fmt)) >= 0)
        return status;

    char err[512], run_err[1100];   /* run_err: room for an update line's refusal */
    dp_load_mapping map;
    memset(&map, 0, sizeof map);
    if (fmt != DP_ROW_UPDATES) {
        json_t *mj = NULL;
        if (build_mapping(&a.fl, &mj, err, sizeof err) != DP_OK)
            return cli_fail(cmd, "%s", err);
        int rc = dp_load_mapping_from_json(&map, mj, err, sizeof err);
        json_decref(mj);
        if (rc != DP_OK)
            return cli_fail(cmd, "mapping: %s", err);
    }

    status = CLI_EXIT_IO;
    FILE *in = NULL, *out = NULL, *rejects = NULL;
    dp_load_kafka *kafka = NULL;
    in = strcmp(a.input, "-") == 0 ? stdin : fopen(a.input, "rb");
    if (!in) {
        cli_fail(cmd, "cannot open %s: %s", a.input, strerror(errno));
        goto done;
    }
    if (a.rejects_path && !(rejects = fopen(a.rejects_path, "wb"))) {
        cli_fail(cmd, "cannot create %s: %s", a.rejects_path, strerror(errno));
        goto done;
    }
    if (a.ko.topic || a.ko.config_path) {
        if (dp_load_kafka_open(&kafka, &a.ko, err, sizeof err) != DP_OK) {
            cli_fail(cmd, "%s", err);
            status = CLI_EXIT_KAFKA;
            goto done;
        }
    } else if (!(out = strcmp(a.out_path, "-") == 0 ? stdout : fopen(a.out_path, "wb"))) {
        cli_fail(cmd, "cannot create %s: %s", a.out_path, strerror(errno));
        goto done;
    }
    /* update lines are the processor's own format: a bad one is a bad
     * file (stop), unless --raw-invalid puts it on the topic as it is */
    dp_load_options lo = {.map = &map, .in = in, .input_name = a.input, .format = fmt, .out = out, .kafka = kafka,
                          .rejects = rejects, .close_steps = a.close_steps, .max_gap = max_gap,
                          .quiet = a.quiet || dp_log_get_format() == DP_LOG_FORMAT_JSON, .label = cmd,
                          .strict = fmt == DP_ROW_UPDATES && !a.raw_invalid, .raw_invalid = a.raw_invalid};
    dp_load_summary sum;
    int lrc = dp_load_run(&lo, &sum, run_err, sizeof run_err);
    if (lrc != DP_OK) {
        cli_fail(cmd, "%s", run_err);
        /* a read or write error of a file, a delivery failure of Kafka, or
         * input that cannot be loaded at all (a column missing from the
         * header, no header, a bad update line) */
        status = lrc == DP_EIO ? (kafka ? CLI_EXIT_KAFKA : CLI_EXIT_IO) : CLI_EXIT_FAILED;
        goto done;
    }
    status = 0;
    print_summary(cmd, out == stdout ? stderr : stdout, fmt, kafka, &sum);
done:
    if (kafka)
        dp_load_kafka_close(kafka);
    if (out && out != stdout && fclose(out) != 0 && status == 0) {
        cli_fail(cmd, "write failed on %s", a.out_path);
        status = CLI_EXIT_IO;
    }
    if (rejects && fclose(rejects) != 0 && status == 0) {
        cli_fail(cmd, "write failed on %s", a.rejects_path);
        status = CLI_EXIT_IO;
    }
    if (in && in != stdin)
        fclose(in);
    dp_load_mapping_free(&map);
    return status;
}

int cmd_load(int argc, char **argv) { return cli_load_as("load", argc, argv); }
