/* pgm_vs_mbi.c — the C half of bench/pgm_vs_mbi (run.py drives it): fit
 * `marginal`'s pgm model (marginal_pgm.c) to given noisy marginals and
 * print every workload's fitted marginal, so run.py can score it against
 * Private-PGM's fit of the same measurements.
 *
 *   bench_pgm_vs_mbi CONFIG.json MEASUREMENTS.txt TOTAL ITERATIONS > FITTED.txt
 *
 * CONFIG.json: a `marginal` config (attributes, workloads); MEASUREMENTS.txt:
 * one line per measurement, "k a_1 … a_k v_1 … v_cells"; output: one line
 * per configured workload, "k a_1 … a_k v_1 … v_cells", then "seconds S". */
#include "synth/marginal/marginal.h"

#include "core/dp_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_pgm_vs_mbi CONFIG.json MEASUREMENTS.txt TOTAL ITERATIONS\n");
        return 2;
    }
    json_error_t je;
    json_t *j = json_load_file(argv[1], 0, &je);
    dp_marginal_config c;
    char err[512];
    if (!j || dp_marginal_config_parse(&c, j, err, sizeof err) != DP_OK) {
        fprintf(stderr, "config: %s\n", j ? err : je.text);
        return 1;
    }
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    dp_mmeasure ms[256];
    size_t n = 0;
    uint32_t k;
    while (n < 256 && fscanf(f, "%u", &k) == 1) {
        uint32_t a[DP_MARGINAL_MAX_WAY];
        for (uint32_t i = 0; i < k; i++)
            if (fscanf(f, "%u", &a[i]) != 1)
                return 1;
        const dp_marginal_workload *w = NULL;
        for (size_t i = 0; i < c.n_workloads && !w; i++)
            if (c.workloads[i].k == k && memcmp(c.workloads[i].attrs, a, k * sizeof *a) == 0)
                w = &c.workloads[i];
        if (!w) {
            fprintf(stderr, "measurement on attributes not among the workloads\n");
            return 1;
        }
        double *v = malloc(w->cells * sizeof *v);
        for (uint64_t x = 0; x < w->cells; x++)
            if (fscanf(f, "%lf", &v[x]) != 1)
                return 1;
        ms[n++] = (dp_mmeasure){w, v, 1, 0};
    }
    fclose(f);
    dp_mmodel *m;
    if (dp_mmodel_pgm.create(&m, &c, err, sizeof err) != DP_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = dp_mmodel_pgm.fit(m, ms, n, atof(argv[3]), (uint32_t)atoi(argv[4]));
    double *q = malloc(DP_MARGINAL_MAX_WORKLOAD_CELLS * sizeof *q);
    for (size_t i = 0; i < c.n_workloads && rc == DP_OK; i++)
        rc = dp_mmodel_pgm.marginal(m, &c.workloads[i], q);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != DP_OK) {
        fprintf(stderr, "fit: %s\n", dp_status_str(rc));
        return 1;
    }
    for (size_t i = 0; i < c.n_workloads; i++) {
        const dp_marginal_workload *w = &c.workloads[i];
        dp_mmodel_pgm.marginal(m, w, q);
        printf("%u", w->k);
        for (uint32_t a = 0; a < w->k; a++)
            printf(" %u", w->attrs[a]);
        for (uint64_t x = 0; x < w->cells; x++)
            printf(" %.17g", q[x]);
        printf("\n");
    }
    printf("seconds %.6f\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    free(q);
    for (size_t i = 0; i < n; i++)
        free((void *)ms[i].values);
    dp_mmodel_pgm.destroy(m);
    dp_marginal_config_free(&c);
    json_decref(j);
    return 0;
}
