/* range_hypercube.c — issue 38's check of `hypercube` against the uniform
 * baseline in any dimension: range-query relative error at every step on
 * [0,1]^d (bench_accuracy_spatial measures d = 2 against `spatial`).
 *
 *   bench_range_hypercube --points FILE --dims D --method hypercube|uniform [--variant V]
 *                         [--epsilon 1] [--key 1] [--queries 1000] [--max-depth 20]
 *
 * FILE: CSV rows "step,x1,…,xd" on [0,1]^d, steps ascending (no header).
 * Queries: `queries` axis-aligned boxes of each size, volume log-uniform in
 * [10^-4, 10^-3] (small), [10^-3, 10^-2] (medium), [10^-2, 10^-1] (large),
 * sides V^(1/d)·e^(u_i − ū) with u_i uniform on [−0.5, 0.5], placed
 * uniformly; drawn from a fixed seed (the same boxes for every method and
 * key).  rel_err = mean |ŝ − s| / (s + max(1, 0.001·n)) (seed 002's, as
 * bench_accuracy_spatial computes it), s and ŝ counting true and synthetic
 * points in the closed box.  Methods: `hypercube` (points_per_step = the
 * largest step; `--variant` passed through) and `uniform` (the true count of
 * uniform points, a data-independent baseline).  Prints per step:
 * method variant ε key step t rel_err_S rel_err_M rel_err_L. */
#include "synth/common/synth.h"

#include "core/dp_error.h"
#include "core/drbg.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 8

typedef struct vec { size_t n, cap; double *v; } vec;   /* points, d doubles each */

static void die(const char *m) { fprintf(stderr, "bench_range_hypercube: %s\n", m); exit(2); }

static void push(vec *a, const double *x, unsigned d)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 4096;
        if (!(a->v = realloc(a->v, a->cap * d * sizeof *a->v)))
            die("out of memory");
    }
    memcpy(a->v + a->n * d, x, d * sizeof *x);
    a->n++;
}

static double u01(dp_drbg *g) { return (double)(dp_drbg_u64(g) >> 11) * 0x1.0p-53; }

/* n queries per size: lo[q·d..], hi[q·d..], size = q / n. */
static void make_queries(unsigned d, size_t n, double *lo, double *hi)
{
    dp_key k;
    memset(&k, 0, sizeof k);
    dp_drbg g;
    dp_drbg_init(&g, &k, "range", 5, 0, "bench/range_hypercube/queries");
    for (size_t q = 0; q < 3 * n; q++) {
        int size = (int)(q / n);
        double vol = pow(10, -4 + size + u01(&g)), u[MAXD], mean = 0;
        for (unsigned i = 0; i < d; i++)
            mean += (u[i] = u01(&g) - 0.5) / d;
        for (unsigned i = 0; i < d; i++) {
            double s = fmin(1, pow(vol, 1.0 / d) * exp(u[i] - mean));
            lo[q * d + i] = u01(&g) * (1 - s);
            hi[q * d + i] = lo[q * d + i] + s;
        }
    }
    dp_drbg_wipe(&g);
}

static void answers(const vec *p, unsigned d, size_t nq, const double *lo, const double *hi, double *out)
{
    for (size_t q = 0; q < nq; q++) {
        double c = 0;
        for (size_t i = 0; i < p->n; i++) {
            const double *x = p->v + i * d;
            unsigned k = 0;
            while (k < d && x[k] >= lo[q * d + k] && x[k] <= hi[q * d + k])
                k++;
            c += k == d;
        }
        out[q] = c;
    }
}

typedef struct sinkctx { vec *syn; unsigned d; } sinkctx;

static int on_record(void *ctx, const dp_synth_record *r)
{
    sinkctx *c = ctx;
    if (r->value.kind != DP_PAYLOAD_POINT || r->value.point_len != c->d)
        die("release record is not a point of dimension d");
    push(c->syn, r->value.point, c->d);
    return 0;
}

static dp_synth *make_hypercube(unsigned d, double eps, uint64_t most, unsigned max_depth, const char *variant,
                                const dp_key *key)
{
    json_t *j = json_pack("{s:f, s:i, s:I, s:i}", "epsilon", eps, "dims", (int)d, "points_per_step",
                          (json_int_t)most, "max_depth", (int)max_depth);
    if (variant) {   /* "V" or "V:key=number:…" */
        char buf[256];
        snprintf(buf, sizeof buf, "%s", variant);
        char *save = NULL, *tok = strtok_r(buf, ":", &save);
        json_object_set_new(j, "variant", json_string(tok));
        while ((tok = strtok_r(NULL, ":", &save))) {
            char *eq = strchr(tok, '=');
            if (!eq)
                die("--variant V:key=number");
            *eq = '\0';
            double v = atof(eq + 1);
            json_object_set_new(j, tok, v == floor(v) ? json_integer((json_int_t)v) : json_real(v));
        }
    }
    char err[512];
    dp_synth *s = NULL;
    dp_synth_env env = {key, "bench/range", 11};
    if (dp_synth_create(&s, "hypercube", j, &env, err, sizeof err) != DP_OK)
        die(err);
    json_decref(j);
    return s;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *method = NULL, *variant = NULL;
    unsigned d = 2, max_depth = 20;
    double eps = 1;
    int keyn = 1;
    size_t nq = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--points")) path = v;
        else if (!strcmp(k, "--dims")) d = (unsigned)atoi(v);
        else if (!strcmp(k, "--method")) method = v;
        else if (!strcmp(k, "--variant")) variant = v;
        else if (!strcmp(k, "--epsilon")) eps = atof(v);
        else if (!strcmp(k, "--key")) keyn = atoi(v);
        else if (!strcmp(k, "--queries")) nq = (size_t)atol(v);
        else if (!strcmp(k, "--max-depth")) max_depth = (unsigned)atoi(v);
        else die("unknown option");
    }
    if (!path || !method || d < 1 || d > MAXD || nq < 1)
        die("usage: --points FILE --dims D --method hypercube|uniform [--variant V] [--epsilon E] [--key K] "
            "[--queries N] [--max-depth 20]");
    /* the stream */
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open the points");
    vec pts = {0};
    size_t cap = 0;
    uint32_t *step = NULL;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *p = line, *e;
        unsigned long s = strtoul(p, &e, 10);
        double x[MAXD];
        for (unsigned i = 0; i < d; i++) {
            if (*e != ',')
                die("bad points line");
            x[i] = strtod(e + 1, &e);
        }
        if (pts.n == cap) {
            cap = cap ? 2 * cap : 4096;
            if (!(step = realloc(step, cap * sizeof *step)))
                die("out of memory");
        }
        step[pts.n] = (uint32_t)s;
        push(&pts, x, d);
    }
    fclose(f);
    uint64_t most = 0;
    for (size_t i = 0, run = 0; i < pts.n; i++) {
        run = i && step[i] == step[i - 1] ? run + 1 : 1;
        most = run > most ? run : most;
    }
    double *lo = malloc(3 * nq * d * sizeof *lo), *hi = malloc(3 * nq * d * sizeof *hi);
    double *a = malloc(3 * nq * sizeof *a), *b = malloc(3 * nq * sizeof *b);
    if (!lo || !hi || !a || !b)
        die("out of memory");
    make_queries(d, nq, lo, hi);
    dp_key key;
    memset(&key, 0, sizeof key);
    key.bytes[0] = (uint8_t)keyn;
    key.bytes[31] = 0x5b;
    int hc = !strcmp(method, "hypercube");
    dp_synth *s = hc ? make_hypercube(d, eps, most ? most : 1, max_depth, variant, &key) : NULL;
    vec truth = {0}, syn = {0};
    sinkctx sc = {&syn, d};
    dp_release_sink sink = {&sc, on_record, NULL, NULL};
    char err[512];
    for (size_t i = 0; i < pts.n;) {
        uint32_t t = step[i];
        for (; i < pts.n && step[i] == t; i++) {
            push(&truth, pts.v + i * d, d);
            if (hc) {
                dp_update up = {.stream_id = "bench/range", .stream_id_len = 11, .step = t, .kind = DP_UPDATE_REPORT,
                                .payload = {.kind = DP_PAYLOAD_POINT, .point = pts.v + i * d, .point_len = d}};
                dp_reject_reason why;
                if (dp_synth_ingest(s, &up, &why) != DP_OK || why != DP_REJECT_NONE)
                    die("a point was rejected");
            }
        }
        syn.n = 0;
        if (hc) {
            if (dp_synth_close_step(s, &sink, err, sizeof err) != DP_OK)
                die(err);
        } else {
            dp_drbg g;
            dp_drbg_init(&g, &key, "uniform", 7, t, "bench/range_hypercube/uniform");
            double x[MAXD];
            for (size_t k = 0; k < truth.n; k++) {
                for (unsigned c = 0; c < d; c++)
                    x[c] = u01(&g);
                push(&syn, x, d);
            }
            dp_drbg_wipe(&g);
        }
        answers(&truth, d, 3 * nq, lo, hi, a);
        answers(&syn, d, 3 * nq, lo, hi, b);
        double err3[3] = {0}, fl = fmax(1, 0.001 * (double)truth.n);
        for (size_t q = 0; q < 3 * nq; q++)
            err3[q / nq] += fabs(b[q] - a[q]) / (a[q] + fl) / (double)nq;
        printf("%s %s %g %d %u %zu %.5f %.5f %.5f\n", method, variant ? variant : "-", eps, keyn, t, truth.n,
               err3[0], err3[1], err3[2]);
    }
    dp_synth_destroy(s);
    free(pts.v), free(truth.v), free(syn.v), free(step), free(lo), free(hi), free(a), free(b);
    return 0;
}
