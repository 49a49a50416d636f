/* accuracy_spatial.c — seed 002's evaluation (§5, Figures 1–19) of
 * `spatial`: PHDStream (our safe default and the paper variant) against
 * the paper's baselines on one point stream, by the authors' metric.
 *
 *   bench_accuracy_spatial --data DIR --method M [--counter simple|block8] [--epsilon E]
 *                          [--key K] [--every 14] [--max-depth 20] [--sensitivity 1] [--variant V]
 *
 * DIR is connectors/recipes/spatial/make_updates.py's output (points.csv: step,
 * move, x, y on [0,1]^2; queries.csv: x1,y1,x2,y2,size; stream.json: the
 * number of steps, trailing empty ones included).  Methods:
 *   phdstream        `spatial` behind synth.h (the code `dpstream` runs), variant safe
 *   phdstream-paper  the same, unsafe_paper_variant (NOT differentially private)
 *   b1   offline PrivTree (tree ε/2, leaf counts Lap(2/ε)) on the current data at
 *        every evaluated step — NOT differentially private over time (seed 002 §5.3)
 *   b2   offline PrivTree on the step's differential data (net counts), the
 *        synthetic counts scaled by the number of steps so far (§5.3)
 *   b3   offline PrivTree on the first step's data, then one counter per leaf at
 *        the full ε counting each later step's change on the frozen tree (§5.3)
 *   hypercube  `hypercube` behind synth.h (seed 004; insert-only streams: a point
 *        is a REPORT of one time), points_per_step = the largest step, max_depth
 *        as given, `--variant V` passed through when given (issue 38)
 *   uniform    the data-independent baseline: as many points as the true data
 *        has (the true count, not private), uniform on the box (issue 38)
 * Metrics: at step t with n live distinct points, over one size's queries,
 *   rel_err      = mean |ŝ − s| / (s + max(1, 0.001·n))   (PrivTree's relative error, true s below)
 *   rel_err_code = mean |ŝ − s| / (ŝ + max(1, 0.001·n))   (what the authors' code computes:
 *                  src/utils/spatial.py query_error_by_type passes the synthetic answers as x)
 * s and ŝ counting true and synthetic points strictly inside the rectangle.
 * Evaluated every `every` release steps after step 1 and at the last step
 * (the authors' t = 14, 28, …, 140, 149 is our step t + 1).  Prints one
 * line per evaluated step: method counter ε key step rel_err S M L, true and
 * synthetic points, leaves, the mean time per step so far, rel_err_code S M L. */
#include "synth/common/synth.h"

#include "core/counter.h"
#include "core/dp_error.h"
#include "core/bytes_map.h"
#include "synth/common/partition.h"
#include "synth/common/privtree.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct pt { double x, y; } pt;
typedef struct upd { uint32_t step; int move; pt p; } upd;
typedef struct query { double x1, y1, x2, y2; int size; } query;   /* size 0 small, 1 medium, 2 large */
typedef struct ptvec { size_t n, cap; pt *v; } ptvec;

static void die(const char *m) { fprintf(stderr, "bench_accuracy_spatial: %s\n", m); exit(2); }

static void push(ptvec *a, pt p)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 1024;
        if (!(a->v = realloc(a->v, a->cap * sizeof *a->v)))
            die("out of memory");
    }
    a->v[a->n++] = p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* --- the answers to range queries: points sorted by x, a strip per query ------------- */

static int by_x(const void *a, const void *b)
{
    double x = ((const pt *)a)->x, y = ((const pt *)b)->x;
    return (x > y) - (x < y);
}

static void answers(ptvec *pts, const query *q, size_t nq, uint64_t *out)
{
    qsort(pts->v, pts->n, sizeof *pts->v, by_x);
    for (size_t i = 0; i < nq; i++) {
        size_t lo = 0, hi = pts->n;   /* first x > x1 */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (pts->v[mid].x <= q[i].x1)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint64_t c = 0;
        for (size_t j = lo; j < pts->n && pts->v[j].x < q[i].x2; j++)
            c += pts->v[j].y > q[i].y1 && pts->v[j].y < q[i].y2;
        out[i] = c;
    }
}

/* --- the true data: a multiset of points ----------------------------------------------- */

typedef struct truth { dp_bytes_map live; } truth;

static void truth_apply(truth *t, const upd *u)
{
    dp_bytes_map_slot *s = dp_bytes_map_upsert(&t->live, &u->p, sizeof u->p);
    if (!s)
        die("out of memory");
    s->value = (void *)((intptr_t)s->value + u->move);
}

static void truth_points(const truth *t, ptvec *out)
{
    out->n = 0;
    for (size_t i = 0; i < t->live.cap; i++)   /* distinct live points; order irrelevant (sorted later) */
        if (t->live.slots[i].key && (intptr_t)t->live.slots[i].value > 0) {
            pt p;
            memcpy(&p, t->live.slots[i].key, sizeof p);
            push(out, p);
        }
}

/* --- offline PrivTree over a histogram of finest cells (the baselines) ----------------- */

typedef struct leaf { uint32_t depth; uint64_t path; } leaf;
typedef struct leafvec { size_t n, cap; leaf *v; } leafvec;

static void push_leaf(leafvec *a, leaf l)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        if (!(a->v = realloc(a->v, a->cap * sizeof *a->v)))
            die("out of memory");
    }
    a->v[a->n++] = l;
}

static void privtree_leaves(const dp_privtree *p, const dp_cell_sums *s, dp_drbg *g, leafvec *out)
{
    leafvec q = {0};
    push_leaf(&q, (leaf){0, 0});
    out->n = 0;
    for (size_t h = 0; h < q.n; h++) {
        leaf v = q.v[h];
        if (dp_privtree_split(p, 0, dp_cell_sums_range(s, v.depth, v.path), v.depth, g)) {
            push_leaf(&q, (leaf){v.depth + 1, v.path << 1});
            push_leaf(&q, (leaf){v.depth + 1, v.path << 1 | 1});
        } else {
            push_leaf(out, v);
        }
    }
    free(q.v);
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* sums of the given (point, weight) list by depth-h cell */
static void cell_sums_of(const dp_box *box, uint32_t h, const pt *p, const int *w, size_t n, dp_cell_sums *s)
{
    uint64_t *k = malloc((n + 1) * 2 * sizeof *k);
    if (!k)
        die("out of memory");
    for (size_t i = 0; i < n; i++) {
        double x[2] = {p[i].x, p[i].y};
        k[2 * i] = dp_partition_path(box, x, h);
        k[2 * i + 1] = (uint64_t)(int64_t)w[i];
    }
    qsort(k, n, 2 * sizeof *k, by_key);
    dp_cell_sums_reset(s);
    for (size_t i = 0; i < n;) {
        int64_t c = 0;
        size_t j = i;
        for (; j < n && k[2 * j] == k[2 * i]; j++)
            c += (int64_t)k[2 * j + 1];
        if (dp_cell_sums_add(s, k[2 * i], c) != DP_OK)
            die("out of memory");
        i = j;
    }
    free(k);
}

static void sample_leaves(const dp_box *box, const leafvec *lv, const double *count, dp_drbg *g, ptvec *out)
{
    out->n = 0;
    for (size_t i = 0; i < lv->n; i++) {
        double c = count[i] > 0 ? rint(count[i]) : 0;   /* round⁺, half to even like the authors' */
        for (uint64_t j = 0; j < (uint64_t)c; j++) {
            double x[2];
            dp_partition_sample(box, lv->v[i].depth, lv->v[i].path, g, x);
            push(out, (pt){x[0], x[1]});
        }
    }
}

/* --- main -------------------------------------------------------------------------------- */

typedef struct cfg {
    const char *data, *method, *counter, *variant;
    double eps;
    int key, every, sensitivity;
    uint32_t max_depth;
} cfg;

static upd *read_points(const char *dir, size_t *n, uint32_t *steps)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/points.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open points.csv");
    char line[256];
    if (!fgets(line, sizeof line, f))
        die("empty points.csv");
    size_t cap = 1 << 16;
    upd *u = malloc(cap * sizeof *u);
    *n = 0;
    *steps = 0;
    while (fgets(line, sizeof line, f)) {
        if (*n == cap && !(u = realloc(u, (cap *= 2) * sizeof *u)))
            die("out of memory");
        upd *x = &u[*n];
        if (sscanf(line, "%u,%d,%lf,%lf", &x->step, &x->move, &x->p.x, &x->p.y) != 4)
            die("bad points.csv line");
        *steps = x->step > *steps ? x->step : *steps;
        (*n)++;
    }
    fclose(f);
    return u;
}

static query *read_queries(const char *dir, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/queries.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open queries.csv");
    char line[512], size[32];
    if (!fgets(line, sizeof line, f))
        die("empty queries.csv");
    size_t cap = 1 << 14;
    query *q = malloc(cap * sizeof *q);
    *n = 0;
    while (fgets(line, sizeof line, f)) {
        if (*n == cap && !(q = realloc(q, (cap *= 2) * sizeof *q)))
            die("out of memory");
        query *x = &q[*n];
        if (sscanf(line, "%lf,%lf,%lf,%lf,%31s", &x->x1, &x->y1, &x->x2, &x->y2, size) != 5)
            die("bad queries.csv line");
        x->size = size[0] == 's' ? 0 : size[0] == 'm' ? 1 : 2;
        (*n)++;
    }
    fclose(f);
    return q;
}

typedef struct collect { ptvec *pts; int on; } collect;

static int on_record(void *ctx, const dp_synth_record *r)
{
    collect *c = ctx;
    if (c->on && r->value.kind == DP_PAYLOAD_POINT && r->value.point_len == 2)
        push(c->pts, (pt){r->value.point[0], r->value.point[1]});
    return 0;
}

static double LEAVES;
static int on_manifest(void *ctx, const dp_release_manifest *m)
{
    for (size_t i = 0; i < m->n_debias; i++)
        if (strcmp(m->debias[i].key, "leaves") == 0)
            LEAVES = m->debias[i].value;
        else if (strcmp(m->debias[i].key, "depth") == 0)   /* hypercube: its finest cells */
            LEAVES = ldexp(1.0, (int)m->debias[i].value);
    return 0;
}

static void report(const cfg *c, uint32_t step, const query *q, size_t nq, ptvec *truth_pts, ptvec *syn,
                   double leaves, double step_s)
{
    uint64_t *a = malloc(nq * sizeof *a), *b = malloc(nq * sizeof *b);
    if (!a || !b)
        die("out of memory");
    size_t n_true = truth_pts->n, n_syn = syn->n;
    answers(truth_pts, q, nq, a);
    answers(syn, q, nq, b);
    double sum[3] = {0}, code[3] = {0}, cnt[3] = {0}, floor_ = fmax(1, 0.001 * (double)n_true);
    for (size_t i = 0; i < nq; i++) {
        double e = fabs((double)b[i] - (double)a[i]);
        sum[q[i].size] += e / ((double)a[i] + floor_);
        code[q[i].size] += e / ((double)b[i] + floor_);
        cnt[q[i].size]++;
    }
    for (int k = 0; k < 3; k++)
        cnt[k] = fmax(cnt[k], 1);
    printf("%s %s %g %d %u %.5f %.5f %.5f %zu %zu %.0f %.6f %.5f %.5f %.5f\n", c->method, c->counter, c->eps, c->key,
           step, sum[0] / cnt[0], sum[1] / cnt[1], sum[2] / cnt[2], n_true, n_syn, leaves, step_s, code[0] / cnt[0],
           code[1] / cnt[1], code[2] / cnt[2]);
    fflush(stdout);
    free(a);
    free(b);
}

/* `spatial` (PHDStream) or `hypercube` behind synth.h, as dpstream runs them. */
static dp_synth *make_synth(const cfg *c, const dp_key *key, uint32_t steps, const upd *u, size_t nu)
{
    char err[512];
    json_t *j;
    const char *name = "spatial";
    if (!strcmp(c->method, "hypercube")) {
        uint64_t most = 0, run = 0;   /* the largest step (public: replacement fixes every step's count) */
        for (size_t i = 0; i < nu; i++) {
            if (u[i].move < 0)
                die("hypercube takes insert-only streams");
            run = i > 0 && u[i].step == u[i - 1].step ? run + 1 : 1;
            most = run > most ? run : most;
        }
        name = "hypercube";
        j = json_pack("{s:[[i,i],[i,i]], s:f, s:I, s:i}", "box", 0, 1, 0, 1, "epsilon", c->eps / c->sensitivity,
                      "points_per_step", (json_int_t)(most ? most : 1), "max_depth", (int)c->max_depth);
    } else {
        j = json_pack("{s:[[i,i],[i,i]], s:f, s:i, s:b, s:I, s:o}", "box", 0, 1, 0, 1, "epsilon",
                      c->eps / c->sensitivity, "max_depth", (int)c->max_depth, "unsafe_paper_variant",
                      !strcmp(c->method, "phdstream-paper"), "horizon", (json_int_t)steps,
                      "counter", !strcmp(c->counter, "block8") ? json_pack("{s:s,s:i}", "kind", "block", "block", 8)
                                                             : json_string("simple"));
    }
    if (c->variant) {   /* "V" or "V:key=number:…" (extra numeric keys, e.g. dense:depth_snr=2) */
        char buf[256];
        snprintf(buf, sizeof buf, "%s", c->variant);
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
    dp_synth_env env = {key, "bench/spatial", 13};
    dp_synth *s = NULL;
    if (dp_synth_create(&s, name, j, &env, err, sizeof err) != DP_OK)
        die(err);
    json_decref(j);
    return s;
}

int main(int argc, char **argv)
{
    cfg c = {.counter = "simple", .eps = 1, .key = 1, .every = 14, .sensitivity = 1, .max_depth = 20};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--data")) c.data = v;
        else if (!strcmp(k, "--method")) c.method = v;
        else if (!strcmp(k, "--counter")) c.counter = v;
        else if (!strcmp(k, "--epsilon")) c.eps = atof(v);
        else if (!strcmp(k, "--key")) c.key = atoi(v);
        else if (!strcmp(k, "--every")) c.every = atoi(v);
        else if (!strcmp(k, "--sensitivity")) c.sensitivity = atoi(v);
        else if (!strcmp(k, "--max-depth")) c.max_depth = (uint32_t)atoi(v);
        else if (!strcmp(k, "--variant")) c.variant = v;
        else die("unknown option");
    }
    if (!c.data || !c.method)
        die("usage: --data DIR --method phdstream|phdstream-paper|b1|b2|b3|hypercube|uniform [--counter simple|block8] "
            "[--epsilon E] [--key K] [--every N] [--variant V]");
    size_t nu, nq;
    uint32_t steps;
    upd *u = read_points(c.data, &nu, &steps);
    char spath[4096];
    snprintf(spath, sizeof spath, "%s/stream.json", c.data);
    json_error_t je;
    json_t *sj = json_load_file(spath, 0, &je);
    if (sj && json_integer_value(json_object_get(sj, "steps")) > (json_int_t)steps)
        steps = (uint32_t)json_integer_value(json_object_get(sj, "steps"));   /* trailing empty steps */
    json_decref(sj);
    query *q = read_queries(c.data, &nq);
    dp_key key;
    memset(&key, 0, sizeof key);
    key.bytes[0] = (uint8_t)c.key;
    key.bytes[1] = (uint8_t)(c.key >> 8);
    key.bytes[31] = 0x5a;
    dp_box box = {.d = 2};
    box.hi[0] = box.hi[1] = 1;
    truth tr;
    dp_bytes_map_init(&tr.live);
    ptvec tpts = {0}, syn = {0};
    int is_phd = !strncmp(c.method, "phdstream", 9), is_hc = !strcmp(c.method, "hypercube"),
        is_uni = !strcmp(c.method, "uniform");
    int block = !strcmp(c.counter, "block8");
    double eps_user = c.eps / c.sensitivity;   /* the authors' ε / change_sensitivity */
    char err[512];

    /* PHDStream through the synthesizer */
    dp_synth *s = NULL;
    collect col = {&syn, 0};
    dp_release_sink sink = {&col, on_record, on_manifest, NULL};
    if (is_phd || is_hc)
        s = make_synth(&c, &key, steps, u, nu);
    /* baselines' state */
    dp_privtree half;
    if (dp_privtree_prepare(&half, eps_user / 2, 0, c.max_depth, err, sizeof err) != DP_OK)
        die(err);
    dp_cell_sums sums;
    dp_cell_sums_init(&sums, c.max_depth);
    leafvec leaves = {0};
    double *leaf_val = NULL, *init_val = NULL;
    dp_counter **cnt = NULL;
    dp_rational lap_scale;
    dp_dlap lap;
    dp_rational_from_double_up(2.0 / eps_user, &lap_scale);   /* leaf counts: Lap(1/(ε/2)) */
    if (dp_dlap_prepare(&lap, lap_scale, err, sizeof err) != DP_OK)
        die(err);
    ptvec step_pts = {0};
    int *step_w = NULL;
    size_t step_cap = 0;

    double busy = 0;
    size_t i = 0;
    for (uint32_t t = 1; t <= steps; t++) {
        size_t first = i;
        for (; i < nu && u[i].step == t; i++)
            truth_apply(&tr, &u[i]);
        int eval = (t > 1 && (t - 1) % (uint32_t)c.every == 0) || t == steps || c.every == 1;   /* --every 1: all */
        double t0 = now(), step_leaves = 0;
        dp_drbg g;
        dp_drbg_init(&g, &key, c.method, strlen(c.method), t, "bench/baseline");
        if (is_uni) {
            if (eval) {   /* the true count, uniform on the box */
                truth_points(&tr, &tpts);
                syn.n = 0;
                for (size_t k = 0; k < tpts.n; k++) {
                    double x[2];
                    dp_partition_sample(&box, 0, 0, &g, x);
                    push(&syn, (pt){x[0], x[1]});
                }
            }
        } else if (is_phd || is_hc) {
            for (size_t k = first; k < i; k++) {
                double x[2] = {u[k].p.x, u[k].p.y};
                /* points.csv has no ids and `spatial` refuses a DELETE without
                 * an entity: the point's bits are its entity, so a delete
                 * removes a copy of its point as the source means (the
                 * statistics, and so the release, are the same for any ids). */
                char id[40];
                double nx = x[0] + 0.0, ny = x[1] + 0.0;   /* -0.0 is the point 0.0 */
                uint64_t bx, by;
                memcpy(&bx, &nx, 8);
                memcpy(&by, &ny, 8);
                snprintf(id, sizeof id, "%016llx%016llx", (unsigned long long)bx, (unsigned long long)by);
                dp_update up = {.stream_id = "bench/spatial", .stream_id_len = 13, .step = t,
                                .kind = u[k].move > 0 ? (is_hc ? DP_UPDATE_REPORT : DP_UPDATE_INSERT) : DP_UPDATE_DELETE,
                                .entity_id = id, .entity_id_len = 32,
                                .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = 2}};
                dp_reject_reason why;
                if (dp_synth_ingest(s, &up, &why) != DP_OK || why != DP_REJECT_NONE)
                    die("an update was rejected");
            }
            syn.n = 0;
            col.on = eval;
            if (dp_synth_close_step(s, &sink, err, sizeof err) != DP_OK)
                die(err);
            step_leaves = LEAVES;
        } else {
            int b1 = !strcmp(c.method, "b1"), b3 = !strcmp(c.method, "b3");
            int work = b3 || eval;   /* b1 and b2 run only where they are evaluated */
            if (work) {
                /* the current data (b1, and b3's first step) or this step's changes */
                if (b1 || (b3 && t == 1)) {
                    truth_points(&tr, &step_pts);
                } else {
                    step_pts.n = 0;
                    for (size_t k = first; k < i; k++)
                        push(&step_pts, u[k].p);
                }
                if (step_pts.n > step_cap && !(step_w = realloc(step_w, (step_cap = step_pts.n) * sizeof *step_w)))
                    die("out of memory");
                for (size_t k = 0; k < step_pts.n; k++)
                    step_w[k] = b1 || (b3 && t == 1) ? 1 : u[first + k].move;
                cell_sums_of(&box, c.max_depth, step_pts.v, step_w, step_pts.n, &sums);
            }
            if (b3 && t > 1) {   /* the change, counted on the frozen tree at the full ε */
                for (size_t l = 0; l < leaves.n; l++) {
                    int64_t out;
                    if (dp_counter_add(cnt[l], dp_cell_sums_range(&sums, leaves.v[l].depth, leaves.v[l].path),
                                       &out) != DP_OK)
                        die("counter refused a step");
                    leaf_val[l] = init_val[l] + (double)out;
                }
            } else if (work) {   /* offline PrivTree: tree ε/2, leaf counts Lap(2/ε) */
                privtree_leaves(&half, &sums, &g, &leaves);
                if (!(leaf_val = realloc(leaf_val, (leaves.n + 1) * sizeof *leaf_val)))
                    die("out of memory");
                double scale = !strcmp(c.method, "b2") ? (double)(t > 1 ? t - 1 : 1) : 1;
                for (size_t l = 0; l < leaves.n; l++)
                    leaf_val[l] = scale * ((double)dp_cell_sums_range(&sums, leaves.v[l].depth, leaves.v[l].path) +
                                           (double)dp_dlap_sample(&lap, &g));
                if (b3) {
                    if (!(cnt = calloc(leaves.n, sizeof *cnt)) || !(init_val = malloc((leaves.n + 1) * sizeof *init_val)))
                        die("out of memory");
                    memcpy(init_val, leaf_val, leaves.n * sizeof *init_val);
                    dp_counter_config cc = {.kind = block ? DP_COUNTER_BLOCK : DP_COUNTER_SIMPLE,
                                            .horizon = steps, .block = 8,
                                            .budget = {DP_PRIVACY_PURE, eps_user}, .neighbor_entries = 1,
                                            .max_abs_change = 1};
                    for (size_t l = 0; l < leaves.n; l++) {
                        char label[48];
                        snprintf(label, sizeof label, "bench/b3/%zu", l);
                        dp_noise_source ns = {&key, "bench/spatial", 13, label};
                        if (dp_counter_create(&cnt[l], &cc, &ns, err, sizeof err) != DP_OK)
                            die(err);
                    }
                }
            }
            step_leaves = (double)leaves.n;
            if (eval)
                sample_leaves(&box, &leaves, leaf_val, &g, &syn);
        }
        dp_drbg_wipe(&g);
        busy += now() - t0;
        if (eval) {
            truth_points(&tr, &tpts);
            report(&c, t, q, nq, &tpts, &syn, step_leaves, busy / t);
        }
    }
    dp_synth_destroy(s);
    return 0;
}
