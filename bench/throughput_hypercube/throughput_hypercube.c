/* throughput_hypercube.c — `hypercube`'s ingest rate and close time per
 * step up to t = 10^6 points (issue 17), measured side by side in one run:
 *
 *   bench_throughput_hypercube [--points 1000000] [--per-step 10000] [--epsilon 1] [--dims 2]
 *                              [--max-depth 20] [--repeat 3]
 *
 * Streams `points` clustered points, `per-step` a step (a step = that many
 * consecutive times of the paper).  Printed:
 *   - ingest points/s through dp_synth_ingest next to the bare cell lookup
 *     of the same points (dp_partition_path: the work the ingest half
 *     cannot avoid), and their ratio;
 *   - the close time per step over the last 10 % of the steps (t near
 *     `points`: every cell's counter step, Alg. 4 and the release of t
 *     synthetic points to a counting sink), next to drawing the same number
 *     of uniform points from the keyed DRBG alone (the output's floor), and
 *     their ratio; the depth and cell count there;
 *   - the peak RSS.
 * Each figure is the median of `repeat` runs (min–max in brackets). */
#include "synth/common/synth.h"

#include "core/dp_error.h"
#include "synth/common/partition.h"

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

/* The i-th point: three clusters (sums of uniforms) in [0,1]^d. */
static void point(uint64_t i, unsigned d, double *x)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
    int c = (int)(i % 3);
    for (unsigned k = 0; k < d; k++) {
        double u[2];
        for (int j = 0; j < 2; j++) {
            h ^= h >> 29;
            h *= 0xbf58476d1ce4e5b9ull;
            u[j] = (double)(h >> 11) * 0x1.0p-53;
        }
        x[k] = fmin(1, fmax(0, 0.25 + 0.25 * c + (u[0] + u[1] - 1) * 0.15 * (1 + k)));
    }
}

static uint64_t RECORDS;
static int count_record(void *ctx, const dp_synth_record *r)
{
    (void)ctx;
    (void)r;
    RECORDS++;
    return 0;
}
static double DEPTH, CELLS;
static int read_manifest(void *ctx, const dp_release_manifest *m)
{
    (void)ctx;
    for (size_t i = 0; i < m->n_debias; i++) {
        if (strcmp(m->debias[i].key, "depth") == 0)
            DEPTH = m->debias[i].value;
        if (strcmp(m->debias[i].key, "cells") == 0)
            CELLS = m->debias[i].value;
    }
    return 0;
}

typedef struct run_result { double ingest_pps, lookup_pps, close_s, uniform_s; } run_result;

static const char *VARIANT = "dense";   /* --variant: dense (the default since issue 38) or paper */

static run_result run_once(uint64_t points, uint64_t per_step, double eps, unsigned d, unsigned max_depth)
{
    char cfg_text[320];
    snprintf(cfg_text, sizeof cfg_text,
             "{\"epsilon\": %.17g, \"dims\": %u, \"points_per_step\": %llu, \"max_depth\": %u, "
             "\"max_release_points\": 17179869184, \"variant\": \"%s\"}",
             eps, d, (unsigned long long)per_step, max_depth, VARIANT);
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    dp_key key;
    memset(&key, 3, sizeof key);
    dp_synth_env env = {&key, "bench", 5};
    dp_synth *s;
    char err[256];
    if (dp_synth_create(&s, "hypercube", cfg, &env, err, sizeof err) != DP_OK) {
        fprintf(stderr, "bench_throughput_hypercube: %s\n", err);
        exit(2);
    }
    dp_release_sink sink = {NULL, count_record, read_manifest, NULL};
    uint64_t steps = (points + per_step - 1) / per_step, tail_from = steps - (steps + 9) / 10;
    double t_ingest = 0, t_close_tail = 0;
    uint64_t tail_steps = 0, tail_points = 0;
    double x[DP_PARTITION_MAX_DIM];
    for (uint64_t step = 1, i = 0; step <= steps; step++) {
        double t0 = now();
        for (uint64_t k = 0; k < per_step && i < points; k++, i++) {
            point(i, d, x);
            dp_update u = {.stream_id = "bench", .stream_id_len = 5, .step = step, .kind = DP_UPDATE_REPORT,
                           .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = d}};
            dp_reject_reason why;
            if (dp_synth_ingest(s, &u, &why) != DP_OK || why != DP_REJECT_NONE) {
                fprintf(stderr, "bench_throughput_hypercube: point %llu rejected\n", (unsigned long long)i);
                exit(2);
            }
        }
        double t1 = now();
        RECORDS = 0;
        if (dp_synth_close_step(s, &sink, err, sizeof err) != DP_OK) {
            fprintf(stderr, "bench_throughput_hypercube: close: %s\n", err);
            exit(2);
        }
        double t2 = now();
        t_ingest += t1 - t0;
        if (step > tail_from) {
            t_close_tail += t2 - t1;
            tail_steps++;
            tail_points += RECORDS;
        }
    }
    /* the bare lookup of the same points */
    dp_box box = {.d = d};
    for (unsigned k = 0; k < d; k++)
        box.hi[k] = 1;
    uint64_t sink_paths = 0;
    double t0 = now();
    for (uint64_t i = 0; i < points; i++) {
        point(i, d, x);
        sink_paths += dp_partition_path(&box, x, max_depth);
    }
    double t_lookup = now() - t0;
    /* the output's floor: as many uniform points from one keyed DRBG */
    dp_drbg g;
    dp_drbg_init(&g, &key, "bench", 5, 1, "uniform");
    t0 = now();
    for (uint64_t i = 0; i < tail_points; i++)
        dp_partition_sample(&box, 0, 0, &g, x);
    double t_uniform = now() - t0;
    dp_drbg_wipe(&g);
    if (sink_paths == 42)
        printf(" ");
    dp_synth_destroy(s);
    json_decref(cfg);
    return (run_result){(double)points / t_ingest, (double)points / t_lookup, t_close_tail / (double)tail_steps,
                        t_uniform / (double)tail_steps};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stat3(double *v, int n, double *med, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *med = v[n / 2];
    *lo = v[0];
    *hi = v[n - 1];
}

int main(int argc, char **argv)
{
    uint64_t points = 1000000, per_step = 10000;
    double eps = 1;
    unsigned d = 2, max_depth = 20;
    int repeat = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--points"))
            points = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--per-step"))
            per_step = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--epsilon"))
            eps = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--dims"))
            d = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-depth"))
            max_depth = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat"))
            repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--variant"))
            VARIANT = argv[i + 1];
        else {
            fprintf(stderr, "usage: bench_throughput_hypercube [--points N] [--per-step B] [--epsilon E] "
                            "[--dims D] [--max-depth D] [--repeat R] [--variant dense|paper]\n");
            return 2;
        }
    }
    if (repeat < 1 || repeat > 50 || !points || !per_step || d < 1 || d > DP_PARTITION_MAX_DIM)
        return 2;
    double ing[50], look[50], close[50], unif[50], r_ing[50], r_close[50];
    for (int r = 0; r < repeat; r++) {
        run_result x = run_once(points, per_step, eps, d, max_depth);
        ing[r] = x.ingest_pps;
        look[r] = x.lookup_pps;
        close[r] = x.close_s;
        unif[r] = x.uniform_s;
        r_ing[r] = x.lookup_pps / x.ingest_pps;
        r_close[r] = x.close_s / x.uniform_s;
    }
    double m, lo, hi;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("hypercube throughput: %llu points, %llu per step, eps %g, d %u, max_depth %u, %d runs\n",
           (unsigned long long)points, (unsigned long long)per_step, eps, d, max_depth, repeat);
    stat3(ing, repeat, &m, &lo, &hi);
    printf("  ingest (dp_synth_ingest)      %.3g points/s [%.3g-%.3g]\n", m, lo, hi);
    stat3(look, repeat, &m, &lo, &hi);
    printf("  bare cell lookup              %.3g points/s [%.3g-%.3g]\n", m, lo, hi);
    stat3(r_ing, repeat, &m, &lo, &hi);
    printf("  ratio lookup/ingest           %.2f [%.2f-%.2f]\n", m, lo, hi);
    stat3(close, repeat, &m, &lo, &hi);
    printf("  close per step, last 10%%      %.3f s [%.3f-%.3f] at depth %.0f, %.0f cells, ~%llu points\n", m, lo,
           hi, DEPTH, CELLS, (unsigned long long)points);
    stat3(unif, repeat, &m, &lo, &hi);
    printf("  uniform points alone          %.3f s [%.3f-%.3f]\n", m, lo, hi);
    stat3(r_close, repeat, &m, &lo, &hi);
    printf("  ratio close/uniform           %.2f [%.2f-%.2f]\n", m, lo, hi);
    printf("  peak RSS                      %.0f MB\n", (double)ru.ru_maxrss / 1024.0);
    return 0;
}
