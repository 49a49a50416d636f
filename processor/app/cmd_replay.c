/* cmd_replay.c — `dpstream replay`: the options of an offline replay, one
 * dp_replay_run (connectors/replay/replay_run.h, which documents the
 * outputs), and its summary.
 *
 *   dpstream replay --config CONFIG.json --input UPDATES.jsonl --out DIR
 *                   (--key-file F | --key-hex H) [--ledger FILE]
 *
 * Exit status (cli.h): 0; 1 when lines were rejected and not one was used
 * (the outputs are still written: rejected.jsonl says why); 2 usage or
 * configuration; 3 an unreadable input or unwritable output; 5 a --ledger
 * refusal.
 *
 * Owns: the parsed options, the loaded configuration and key.  Calls:
 * replay_run (the replay), stream_config (loading). */
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "app/cli_plan.h"
#include "connectors/replay/replay_run.h"
#include "core/dp_error.h"
#include "stream/stream_config.h"

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

/* The summary on stdout; 1 when input lines were rejected and not one was used. */
static int print_summary(const char *cmd, const dp_replay_summary *st, const char *out_dir)
{
    printf("replay: %llu lines, %llu used, %llu rejected, %llu steps closed, %llu duplicate CLOSE_STEP markers ignored, %zu streams\n",
           (unsigned long long)st->lines, (unsigned long long)st->used, (unsigned long long)st->n_rejected,
           (unsigned long long)st->closes, (unsigned long long)st->duplicate_markers, st->streams);
    for (int r = 1; r < DP_REJECT_REASON_COUNT; r++)
        if (st->rejected[r])
            printf("  rejected %-18s %llu\n", dp_reject_reason_name((dp_reject_reason)r),
                   (unsigned long long)st->rejected[r]);
    /* Rejected lines are data, but input of which not one line could be
     * used is a wrong config, mapping or file, not a replay: say so in the
     * exit status (1, "ran, but something did not add up").  The outputs
     * are still written: rejected.jsonl says why each line was refused. */
    if (st->n_rejected > 0 && st->used == 0) {
        cli_fail(cmd, "all %llu input lines were rejected and none was used (%s/rejected.jsonl says why): is "
                 "this the input and the configuration meant for each other?", (unsigned long long)st->n_rejected,
                 out_dir);
        return CLI_EXIT_FAILED;
    }
    return 0;
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
    if (cli_warn_not_dp_routes(cfg, 0, err, sizeof err) != DP_OK) {
        dp_stream_config_free(cfg);
        dp_key_wipe(&key);
        return cli_fail(cmd, "%s", err);
    }
    dp_replay_options o = {.cfg = cfg, .key = &key, .input_path = input_path, .out_dir = out_dir,
                           .ledger_path = ledger_path};
    dp_replay_summary st;
    int rc = dp_replay_run(&o, &st, err, sizeof err);
    int status;
    if (rc == DP_OK) {
        status = print_summary(cmd, &st, out_dir);
    } else {
        if (err[0])
            cli_fail(cmd, "%s", err);
        status = rc == DP_EKEY ? CLI_EXIT_REFUSED : rc == DP_EIO ? CLI_EXIT_IO : CLI_EXIT_FAILED;
    }
    dp_stream_config_free(cfg);
    dp_key_wipe(&key);
    return status;
}
