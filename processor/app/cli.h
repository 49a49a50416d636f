/* cli.h — the dpstream command-line entry points and the small helpers
 * they share (flag parsing, key loading, error reporting). */
#ifndef DP_CLI_H
#define DP_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"
#include "core/rational.h"
#include "stream/stream_config.h"

/* Each subcommand: argv[0] is the subcommand name; returns the exit code. */
int cmd_sample(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_counter(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_gen_panel(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_produce(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_load(int argc, char **argv);
/* `dpstream load` with messages as `dpstream CMD` (cmd_produce.c: the alias). */
int cli_load_as(const char *cmd, int argc, char **argv);
int cmd_check_config(int argc, char **argv);
int cmd_inspect_snapshot(int argc, char **argv);
int cmd_migrate_state(int argc, char **argv);

/* Exit codes of every subcommand (README "Exit codes"). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILED = 1,    /* ran, but something did not add up (bad input rows are data, not failures) */
    CLI_EXIT_USAGE = 2,     /* usage or configuration error */
    CLI_EXIT_IO = 3,        /* a file could not be read or written */
    CLI_EXIT_KAFKA = 4,     /* Kafka: unreachable, a delivery or transaction failed, fenced */
    CLI_EXIT_REFUSED = 5,   /* a privacy refusal: another key, reused noise, a ledger conflict */
};

/* Print "dpstream <cmd>: <message>" to stderr — or, under
 * --log-format json, one JSON log line (event "cli_error") — and return 2
 * (usage/config errors) so callers can `return cli_fail(...)`. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `--log-format text|json` (stream/log.h), taken from anywhere in argv
 * before the other options are parsed, so that with json even a usage
 * error after it is a JSON line.  Sets the format; returns 0, or -1 after
 * reporting an unknown format. */
int cli_log_format_option(const char *cmd, int argc, char **argv);

/* Strict numeric parsing: the whole string must be consumed. 0 or -1. */
/* With a "schema_registry" in cfg: register dpstream's schemas (writers) or
 * look them up (read_only: export, inspect-snapshot change nothing) and put
 * their ids into cfg (dp_registry_setup), for commands that only need the
 * ids.  0, or -1 after printing the registry's error. */
int cli_registry_ids(const char *cmd, dp_stream_config *cfg, int read_only);
/* For the commands that read dpstream's topics (inspect-snapshot,
 * migrate-state): the schema ids looked up (cli_registry_ids, read only)
 * and a codec for cfg's framing in *out.  CLI_EXIT_OK, or the exit status
 * after printing why (CLI_EXIT_KAFKA: the registry; CLI_EXIT_FAILED). */
struct dp_codec;
int cli_reader_codec(const char *cmd, dp_stream_config *cfg, struct dp_codec **out);
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_i64(const char *s, int64_t *out);
int cli_parse_double(const char *s, double *out);

/* 1 if `path` (existing or not) would lie inside directory `dir`: its
 * directory, resolved, is dir (resolved) or below it. */
int cli_path_inside(const char *path, const char *dir);

/* Load the noise key from exactly one of --key-file / --key-hex (either may
 * be NULL).  Prints the error and returns -1 on failure. */
int cli_load_key(const char *cmd, const char *key_file, const char *key_hex, dp_key *key);

#endif
