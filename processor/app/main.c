/* main.c — dpstream's command dispatcher. */
#include "app/cli.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    {"demo",    cmd_demo,    "run the embedded default demo (no broker needed)"},
    {"sample",  cmd_sample,  "print exact discrete Laplace/Gaussian draws from the keyed DRBG"},
    {"keygen",  cmd_keygen,  "write a fresh 32-byte noise key file (mode 0600)"},
    {"counter", cmd_counter, "run a private continual counter over integers on stdin"},
    {"replay",  cmd_replay,  "run the configured synthesizers over update JSON lines, without Kafka"},
    {"gen-panel", cmd_gen_panel, "write a deterministic Markov panel as update JSON lines"},
    {"run",     cmd_run,     "run the Kafka processor (consumer group, one transaction per closed step)"},
    {"produce", cmd_produce, "produce update JSON lines to the updates topic as Avro, keyed by stream id"},
    {"export",  cmd_export,  "read the committed output topics and write them as JSON lines"},
    {"load",    cmd_load,    "turn CSV or JSONL rows into updates (JSON lines file or Kafka)"},
    {"check-config", cmd_check_config, "validate a config as run/replay do and print each stream's privacy plan"},
    {"inspect-snapshot", cmd_inspect_snapshot, "decode the state topic's snapshots: ledger, open step, offsets"},
    {"migrate-state", cmd_migrate_state, "copy a state topic into a new one co-partitioned with the updates topic"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: dpstream <command> [options]\n"
               "       dpstream help [COMMAND] | --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(f, "  %-16s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "\n'dpstream help <command>' (or 'dpstream <command> --help') describes its options.\n");
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(name, COMMANDS[i].name) == 0)
            return &COMMANDS[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    fprintf(stderr, "dpstream: unknown command '%s'\n\n", name);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *a = argv[1];
    if (strcmp(a, "--version") == 0 || strcmp(a, "version") == 0) {
        printf("dpstream %s\n", DPSTREAM_VERSION);
        return 0;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || (strcmp(a, "help") == 0 && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (strcmp(a, "help") == 0) {
        /* `help CMD` is `CMD --help`: each command owns its usage text */
        const command *c = find_command(argv[2]);
        if (!c)
            return unknown_command(argv[2]);
        char *help_argv[] = {argv[2], "--help", NULL};
        return c->run(2, help_argv);
    }
    const command *c = find_command(a);
    return c ? c->run(argc - 1, argv + 1) : unknown_command(a);
}
