/* shard_merge.c — what a sharded stream's two stages cost per step as the
 * shard count grows (issue 40 §4; docs/kafka.md §10), offline and with the
 * code the roles run:
 *
 *   bench_shard_merge [--n 1000000] [--steps 4] [--shards 1,2,4,8,16,64]
 *                     [--synth window|cumulative] [--sealed]
 *
 * One stream of n individuals, each reporting a bit every step (a
 * two-state Markov panel, stay 0.9), split over S shards by entity (a hash
 * of the id: the partitioner's role).  Per step and S:
 *
 *   ingest  — every shard's dp_synth_ingest of its individuals, then
 *             dp_synth_close_ingest (its exact statistics) and
 *             dp_stats_record_encode (MAC'd, or sealed with --sealed):
 *             CPU per update summed over the shards;
 *   record  — the statistics record's bytes (max over shards), and all S;
 *   release — what one release instance does: dp_stats_record_decode
 *             (authentication) of the S records, dp_stats_merger_add,
 *             dp_stats_merger_take (the merge) and dp_synth_release_stats
 *             into a counting sink: ms per step, split into decode+merge
 *             and release.
 *
 * The claim it checks: per-update ingest cost does not grow with S, and
 * the release stage grows with the statistics' size × S, not with n.
 * Prints one line per (S, phase) figure; not a test.
 *
 * Owns: the shards' bundles and records.  Calls: synth (the two halves),
 * stats_record (encode, decode, merger). */
#include "core/buf.h"
#include "core/dp_error.h"
#include "stream/stats_record.h"
#include "synth/common/synth.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM "bench/sharded"
#define TOPIC "bench.updates"
#define MAX_SHARDS 256

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);   /* CPU time: the figure is per update */
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 32);
}

static uint64_t RECORDS;
static int count_record(void *ctx, const dp_synth_record *r)
{
    (void)ctx, (void)r;
    RECORDS++;
    return 0;
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "%s: %s\n", what, err);
    exit(1);
}

typedef struct bench {
    uint64_t n, steps;
    const char *synth;
    int sealed;
    uint8_t *bit;   /* each individual's current bit */
    dp_key key, state_key;
} bench;

static dp_synth *make(const bench *b, json_t *cfg)
{
    dp_synth_env env = {&b->key, STREAM, sizeof STREAM - 1};
    dp_synth *s;
    char err[512];
    if (dp_synth_create(&s, b->synth, cfg, &env, err, sizeof err) != DP_OK)
        die("create", err);
    return s;
}

/* One run at S shards; prints its figures. */
static void run_shards(bench *b, json_t *cfg, uint32_t S)
{
    dp_synth *shard[MAX_SHARDS], *rel = make(b, cfg);
    for (uint32_t k = 0; k < S; k++)
        shard[k] = make(b, cfg);
    memset(b->bit, 0, b->n);
    dp_stats_merger m;
    if (dp_stats_merger_init(&m, STREAM, sizeof STREAM - 1, S, 0) != DP_OK)
        die("merger", "init");
    dp_buf rec[MAX_SHARDS];
    dp_stats st, back, merged;
    dp_stats_init(&st, 0);
    dp_stats_init(&back, 0);
    dp_stats_init(&merged, 0);
    dp_release_sink sink = {NULL, count_record, NULL, NULL};
    char err[512], id[24];
    double ingest_s = 0, decode_s = 0, release_s = 0;
    size_t bytes_max = 0, bytes_all = 0;
    for (uint64_t t = 1; t <= b->steps; t++) {
        double a = now();
        for (uint64_t i = 0; i < b->n; i++) {
            uint64_t h = mix(i * 0x9e3779b97f4a7c15ull + t);
            if (t == 1 ? (h & 1) : (h % 10 == 0))
                b->bit[i] ^= 1;
            int len = snprintf(id, sizeof id, "u%llu", (unsigned long long)i);
            dp_update u = {.stream_id = STREAM, .stream_id_len = sizeof STREAM - 1, .step = t,
                           .kind = DP_UPDATE_REPORT, .entity_id = id, .entity_id_len = (size_t)len,
                           .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = b->bit[i]}};
            dp_reject_reason why;
            if (dp_synth_ingest(shard[mix(i) % S], &u, &why) != DP_OK || why != DP_REJECT_NONE)
                die("ingest", dp_reject_reason_name(why));
        }
        for (uint32_t k = 0; k < S; k++) {
            dp_buf_init(&rec[k]);
            if (dp_synth_close_ingest(shard[k], &st, err, sizeof err) != DP_OK)
                die("close_ingest", err);
            dp_stats_record r = {TOPIC, sizeof TOPIC - 1, STREAM, sizeof STREAM - 1, t, k, S};
            if (dp_stats_record_encode(&r, &st, b->sealed ? &b->state_key : NULL, &b->key, &rec[k], err,
                                       sizeof err) != DP_OK)
                die("encode", err);
            bytes_max = rec[k].len > bytes_max ? rec[k].len : bytes_max;
            bytes_all += rec[k].len;
        }
        double c = now();
        ingest_s += c - a;
        for (uint32_t k = 0; k < S; k++) {
            dp_stats_record r;
            if (dp_stats_record_decode(rec[k].data, rec[k].len, S, b->sealed ? &b->state_key : NULL, &b->key, &r,
                                       &back, err, sizeof err) != DP_OK ||
                dp_stats_merger_add(&m, &r, &back, err, sizeof err) != DP_OK)
                die("decode/add", err);
            dp_buf_free(&rec[k]);
        }
        if (!dp_stats_merger_complete(&m, t) || dp_stats_merger_take(&m, t, &merged) != DP_OK)
            die("take", "step incomplete");
        double d = now();
        decode_s += d - c;
        if (dp_synth_release_stats(rel, &merged, &sink, err, sizeof err) != DP_OK)
            die("release", err);
        release_s += now() - d;
    }
    /* the state each role keeps (what its snapshot writes) */
    size_t ingest_state = 0, ingest_state_max = 0;
    dp_buf snap;
    dp_buf_init(&snap);
    for (uint32_t k = 0; k < S; k++) {
        dp_buf_clear(&snap);
        if (dp_synth_snapshot_role(shard[k], DP_SYNTH_ROLE_INGEST, &snap) != DP_OK)
            die("snapshot", "ingest role");
        ingest_state += snap.len;
        ingest_state_max = snap.len > ingest_state_max ? snap.len : ingest_state_max;
    }
    dp_buf_clear(&snap);
    if (dp_synth_snapshot_role(rel, DP_SYNTH_ROLE_RELEASE, &snap) != DP_OK)
        die("snapshot", "release role");
    printf("S=%-3u %s n=%llu: ingest %.1f ns/update (all shards' CPU, incl. close_ingest and encode); "
           "stats record %zu B max, %.1f kB all shards a step; release stage %.3f ms/step = decode+merge "
           "%.3f + release %.3f (%llu records); state: ingest %.1f MB all shards (%.2f MB max), release %zu B\n",
           (unsigned)S, b->synth, (unsigned long long)b->n, 1e9 * ingest_s / ((double)b->n * b->steps),
           bytes_max, bytes_all / 1e3 / b->steps, 1e3 * (decode_s + release_s) / b->steps,
           1e3 * decode_s / b->steps, 1e3 * release_s / b->steps, (unsigned long long)RECORDS,
           ingest_state / 1e6, ingest_state_max / 1e6, snap.len);
    dp_buf_free(&snap);
    fflush(stdout);
    RECORDS = 0;
    dp_stats_free(&st);
    dp_stats_free(&back);
    dp_stats_free(&merged);
    dp_stats_merger_free(&m);
    for (uint32_t k = 0; k < S; k++)
        dp_synth_destroy(shard[k]);
    dp_synth_destroy(rel);
}

int main(int argc, char **argv)
{
    bench b = {.n = 1000000, .steps = 4, .synth = "window"};
    const char *shards = "1,2,4,8,16,64";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sealed")) b.sealed = 1;
        else if (i + 1 >= argc) { fprintf(stderr, "%s needs a value\n", argv[i]); return 2; }
        else if (!strcmp(argv[i], "--n")) b.n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--steps")) b.steps = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--shards")) shards = argv[++i];
        else if (!strcmp(argv[i], "--synth")) b.synth = argv[++i];
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    memset(&b.key, 0x42, sizeof b.key);
    memset(&b.state_key, 0x24, sizeof b.state_key);
    if (!(b.bit = malloc(b.n)))
        return 1;
    json_t *cfg = !strcmp(b.synth, "window")
                      ? json_pack("{s:I, s:i, s:i, s:f}", "horizon", (json_int_t)b.steps, "k", 3, "categories", 2,
                                  "rho", 1.0)
                      : json_pack("{s:I, s:f}", "horizon", (json_int_t)b.steps, "rho", 1.0);
    for (const char *p = shards; *p;) {
        unsigned long S = strtoul(p, (char **)&p, 10);
        if (S < 1 || S > MAX_SHARDS) {
            fprintf(stderr, "shard counts are 1..%d\n", MAX_SHARDS);
            return 2;
        }
        run_shards(&b, cfg, (uint32_t)S);
        p += *p == ',';
    }
    json_decref(cfg);
    free(b.bit);
    return 0;
}
