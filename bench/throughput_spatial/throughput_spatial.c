/* throughput_spatial.c — `spatial`'s ingest rate and close time at 10^6
 * live points (issue 15), measured side by side in one run:
 *
 *   bench_throughput_spatial [--points 1000000] [--steps 10] [--churn 10000] [--epsilon 1] [--repeat 3]
 *
 * Phase 1 inserts `points` clustered points over `steps` steps; phase 2
 * runs `steps` more steps that each delete `churn` old points and insert
 * `churn` new ones.  Printed: ingest points/s through dp_synth_ingest next
 * to a bare (entity, point) → count hash-map upsert of the same points (the
 * multiset the ingest half must keep anyway), their ratio, the close time
 * per step in phase 2 (tree growth, counters, extension and the release of
 * ~10^6 synthetic points to a counting sink), and the peak RSS. */
#include "synth/common/synth.h"

#include "core/bytes_map.h"
#include "core/dp_error.h"

#include <jansson.h>
#include <math.h>
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

/* The i-th point: three Gaussian-ish clusters (sums of uniforms) on [0,1]^2. */
static void point(uint64_t i, double *x)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
    double u[4];
    for (int k = 0; k < 4; k++) {
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        u[k] = (double)(h >> 11) * 0x1.0p-53;
    }
    static const double C[3][2] = {{0.3, 0.3}, {0.7, 0.6}, {0.4, 0.8}};
    int c = (int)(i % 3);
    x[0] = fmin(1, fmax(0, C[c][0] + (u[0] + u[1] - 1) * 0.15));
    x[1] = fmin(1, fmax(0, C[c][1] + (u[2] + u[3] - 1) * 0.15));
}

static uint64_t RECORDS;
static int count_record(void *ctx, const dp_synth_record *r) { RECORDS++; return 0; }

int main(int argc, char **argv)
{
    uint64_t n = 1000000, steps = 10, churn = 10000, repeat = 3;
    double eps = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--points")) n = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--steps")) steps = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--churn")) churn = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--epsilon")) eps = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat")) repeat = strtoull(argv[i + 1], NULL, 10);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    dp_key key;
    memset(&key, 0x42, sizeof key);
    char err[512];
    for (uint64_t rep = 0; rep < repeat; rep++) {
        /* the bare multiset: (entity length, entity "p<i>", point) -> count,
         * the key the ingest half builds for the same update */
        dp_bytes_map bare;
        dp_bytes_map_init(&bare);
        double t0 = now();
        for (uint64_t i = 0; i < n; i++) {
            uint8_t k[4 + 24 + 16] = {0};
            double x[2];
            point(i, x);
            int el = snprintf((char *)k + 4, 24, "p%llu", (unsigned long long)i);
            k[0] = (uint8_t)el;
            memcpy(k + 4 + el, x, 16);
            dp_bytes_map_slot *s = dp_bytes_map_upsert(&bare, k, 4 + (size_t)el + 16);
            if (!s)
                return 1;
            s->value = (void *)((intptr_t)s->value + 1);
        }
        double bare_s = now() - t0;
        dp_bytes_map_free(&bare);

        json_t *cfg = json_pack("{s:f, s:I, s:i}", "epsilon", eps, "horizon", (json_int_t)(2 * steps), "max_depth", 20);
        dp_synth_env env = {&key, "bench/tp", 8};
        dp_synth *s;
        if (dp_synth_create(&s, "spatial", cfg, &env, err, sizeof err) != DP_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        dp_release_sink sink = {NULL, count_record, NULL, NULL};
        double ingest_s = 0, close1 = 0, close2 = 0;
        uint64_t next = 0, oldest = 0;
        double x[2];
        for (uint64_t t = 1; t <= 2 * steps; t++) {
            uint64_t ins = t <= steps ? n / steps : churn, del = t <= steps ? 0 : churn;
            double a = now();
            for (uint64_t i = 0; i < ins + del; i++) {
                int is_del = i >= ins;
                uint64_t p = is_del ? oldest++ : next++;
                point(p, x);
                char id[24];   /* point p is entity p's: a DELETE must name its entity */
                int id_len = snprintf(id, sizeof id, "p%llu", (unsigned long long)p);
                dp_update u = {.stream_id = "bench/tp", .stream_id_len = 8, .step = t,
                               .kind = is_del ? DP_UPDATE_DELETE : DP_UPDATE_INSERT,
                               .entity_id = id, .entity_id_len = (size_t)id_len,
                               .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = 2}};
                dp_reject_reason why;
                if (dp_synth_ingest(s, &u, &why) != DP_OK || why != DP_REJECT_NONE)
                    return 1;
            }
            double b = now();
            RECORDS = 0;
            if (dp_synth_close_step(s, &sink, err, sizeof err) != DP_OK) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            double c = now();
            if (t <= steps) {
                ingest_s += b - a;
                close1 += c - b;
            } else {
                close2 += c - b;
            }
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("run %llu: ingest %.2f M points/s through spatial vs %.2f M/s bare hash upsert (ratio %.2f); "
               "close %.0f ms/step while loading, %.0f ms/step at %llu live points with %llu+%llu churn "
               "(%llu synthetic points released); peak RSS %ld MB\n",
               (unsigned long long)rep + 1, n / ingest_s / 1e6, n / bare_s / 1e6, bare_s / ingest_s,
               1000 * close1 / steps, 1000 * close2 / steps, (unsigned long long)(next - oldest),
               (unsigned long long)churn, (unsigned long long)churn, (unsigned long long)RECORDS,
               ru.ru_maxrss / 1024);
        fflush(stdout);
        dp_synth_destroy(s);
        json_decref(cfg);
    }
    return 0;
}
