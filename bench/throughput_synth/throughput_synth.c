/* throughput_synth.c — any synthesizer's own offline ingest rate: the
 * denominator of issue 41 §2's target ("end to end at least half of its
 * own ingest rate measured offline"), for the synthesizers that have no
 * dedicated bench (`adaptive`, `marginal`, `cumulative`), measured on the
 * very workload synth_e2e.sh sends through Kafka:
 *
 *   bench_throughput_synth --config CONFIG.json --input UPDATES.jsonl [--repeat 3]
 *
 * The JSON lines (one stream; CLOSE_STEP markers close its steps) are
 * parsed once into memory before any clock starts, so what is timed is
 * what `dpstream run` does per update after decoding: the step gate's
 * dp_gate_offer (roster, duplicate and domain checks, the synthesizer's
 * ingest) and, at each marker, dp_gate_close (noise, release to a counting
 * sink, the ledger).  `dpstream replay` of the same file adds JSON parsing
 * and JSON output; Kafka adds the consume, decode, produce and snapshot.
 *
 * Printed per repeat: updates/s offered (ingest alone), updates/s with the
 * closes, close time per step, records released, peak RSS.
 *
 * Owns: the parsed updates.  Calls: stream_config (the route), route_table
 * (dp_route_open: the synthesizer and gate `run` builds), step_gate,
 * update_json (parsing). */
#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"
#include "stream/route_table.h"
#include "stream/stream_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t RECORDS;
static int count_record(void *ctx, const dp_synth_record *r)
{
    (void)ctx, (void)r;
    RECORDS++;
    return 0;
}

/* Every line of path parsed into ups[0..*n); exits on a bad line (the
 * workload is generated: a bad line is a broken generator, not data). */
static dp_update_owned *read_updates(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(3);
    }
    size_t cap = 1024, len = 0;
    dp_update_owned *ups = malloc(cap * sizeof *ups);
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t got;
    char err[256];
    while (ups && (got = getline(&line, &line_cap, f)) > 0) {
        if (line[got - 1] == '\n')
            got--;
        if (len == cap && !(ups = realloc(ups, (cap *= 2) * sizeof *ups)))
            break;
        dp_update_owned_init(&ups[len]);
        if (dp_update_json_parse(line, (size_t)got, &ups[len], err, sizeof err) != DP_OK) {
            fprintf(stderr, "%s line %zu: %s\n", path, len + 1, err);
            exit(3);
        }
        len++;
    }
    free(line);
    fclose(f);
    if (!ups) {
        fprintf(stderr, "out of memory reading %s\n", path);
        exit(1);
    }
    *n = len;
    return ups;
}

/* The first route that takes stream id[0..len), as the routing rule reads
 * the file: exact match or byte prefix, in file order. */
static const dp_stream_route *route_for(const dp_stream_config *cfg, const char *id, size_t len)
{
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const dp_stream_route *r = &cfg->routes[i];
        if (r->match ? r->match_len == len && !memcmp(r->match, id, len)
                     : r->match_len <= len && !memcmp(r->prefix, id, r->match_len))
            return r;
    }
    return NULL;
}

static int held_applied(void *ctx, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len,
                        dp_reject_reason reason)
{
    (void)ctx, (void)u, (void)origin, (void)raw, (void)raw_len, (void)reason;
    return 0;
}

/* One pass over ups through a fresh synthesizer; 0 or exits. */
static void one_pass(const dp_stream_route *route, const dp_update_owned *ups, size_t n, int rep)
{
    dp_key key;
    memset(&key, 0x42, sizeof key);
    char err[512];
    dp_synth *s = NULL;
    dp_step_gate gate;
    const dp_update *first = &ups[0].u;
    if (dp_route_open(route, &key, first->stream_id, first->stream_id_len, &s, &gate, err, sizeof err) != DP_OK) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    dp_release_sink sink = {NULL, count_record, NULL, NULL};
    double offer_s = 0, close_s = 0;
    uint64_t used = 0, rejected = 0, closes = 0;
    RECORDS = 0;
    for (size_t i = 0; i < n; i++) {
        const dp_update *u = &ups[i].u;
        double a = now();
        dp_gate_verdict v;
        if (dp_gate_offer(&gate, u, i, NULL, 0, &v) != DP_OK) {
            fprintf(stderr, "offer failed at line %zu\n", i + 1);
            exit(1);
        }
        double b = now();
        offer_s += b - a;
        if (u->kind != DP_UPDATE_CLOSE_STEP)
            v.action == DP_GATE_REJECTED ? rejected++ : used++;
        /* as the consume loop does: a marker for the open step, or a
         * policy that closes on this update, closes the step */
        if (v.action == DP_GATE_CLOSE || (v.action == DP_GATE_USED && v.close_after)) {
            int due = 0;
            if (dp_gate_close(&gate, &sink, held_applied, NULL, &due, err, sizeof err) != DP_OK) {
                fprintf(stderr, "close: %s\n", err);
                exit(1);
            }
            close_s += now() - b;
            closes++;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("run %d: %s, %llu updates (%llu rejected), %llu steps: ingest %.0f upd/s (offer only), %.0f upd/s with "
           "the closes; close %.1f ms/step; %llu records released; peak RSS %ld MB\n",
           rep, route->synthesizer, (unsigned long long)(used + rejected), (unsigned long long)rejected,
           (unsigned long long)closes, (used + rejected) / offer_s, (used + rejected) / (offer_s + close_s),
           closes ? 1000 * close_s / closes : 0.0, (unsigned long long)RECORDS, ru.ru_maxrss / 1024);
    fflush(stdout);
    dp_gate_free(&gate);
    dp_synth_destroy(s);
}

int main(int argc, char **argv)
{
    const char *config = NULL, *input = NULL;
    int repeat = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--config")) config = argv[i + 1];
        else if (!strcmp(argv[i], "--input")) input = argv[i + 1];
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (!config || !input) {
        fprintf(stderr, "usage: bench_throughput_synth --config CONFIG.json --input UPDATES.jsonl [--repeat 3]\n");
        return 2;
    }
    char err[512];
    dp_stream_config *cfg;
    if (dp_stream_config_load_file(&cfg, config, err, sizeof err) != DP_OK) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    size_t n;
    dp_update_owned *ups = read_updates(input, &n);
    if (n == 0) {
        fprintf(stderr, "%s: no updates\n", input);
        return 2;
    }
    const dp_update *first = &ups[0].u;
    const dp_stream_route *route = route_for(cfg, first->stream_id, first->stream_id_len);
    if (!route) {
        fprintf(stderr, "no route takes stream %.*s\n", (int)first->stream_id_len, first->stream_id);
        return 2;
    }
    for (size_t i = 1; i < n; i++)
        if (ups[i].u.stream_id_len != first->stream_id_len ||
            memcmp(ups[i].u.stream_id, first->stream_id, first->stream_id_len)) {
            fprintf(stderr, "line %zu: one stream per input (the bench times one synthesizer)\n", i + 1);
            return 2;
        }
    for (int rep = 1; rep <= repeat; rep++)
        one_pass(route, ups, n, rep);
    for (size_t i = 0; i < n; i++)
        dp_update_owned_free(&ups[i]);
    free(ups);
    dp_stream_config_free(cfg);
    return 0;
}
