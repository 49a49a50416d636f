/* counter_sparse_cell.c — seed 004 Alg. 3 / Alg. 2 in compact per-cell
 * state (privacy and keying in counter_sparse_cell.h).
 *
 * The binary mechanism over segment counts keeps no p-sums: after n closed
 * segments its output Σ_{bit i of n} α̂_i equals the true total of those
 * segments plus the noise of the nodes (i, n >> i) for the set bits i, and
 * each node's noise is a keyed draw, so the state is two integers. */
#include "core/counter_sparse_cell.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>

static int prepare_dlap(dp_dlap *d, double *var, double scale, char *errstr, size_t errstr_size)
{
    dp_rational r;
    if (dp_rational_from_double_up(scale, &r) != DP_OK || r.num == 0)
        return dp_err(errstr, errstr_size, DP_ERANGE, "sparse counting: Laplace scale %g out of range", scale);
    *var = dp_dlap_variance(r);
    return dp_dlap_prepare(d, r, errstr, errstr_size);
}

static unsigned floor_log2(uint64_t x)
{
    unsigned l = 0;
    while (x >>= 1)
        l++;
    return l;
}

int dp_isc_level_prepare(dp_isc_level *lv, double eps, uint64_t h, char *errstr, size_t errstr_size)
{
    if (!(eps > 0) || !isfinite(eps) || h == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "sparse counting: ε %g, horizon %llu", eps,
                      (unsigned long long)h);
    lv->eps = eps;
    lv->h = h;
    double t0 = ceil(9.0 * log((double)h) / (eps / 2));
    if (!(t0 >= 0) || t0 > 1e15)
        return dp_err(errstr, errstr_size, DP_ERANGE, "sparse counting: threshold %g out of range", t0);
    lv->T0 = (int64_t)t0;
    lv->L = floor_log2(h) + 1;
    int rc = prepare_dlap(&lv->svt, &lv->var_svt, 16.0 / eps, errstr, errstr_size);
    if (rc == DP_OK)
        rc = prepare_dlap(&lv->node, &lv->var_node, 4.0 * lv->L / eps, errstr, errstr_size);
    if (rc == DP_OK)
        rc = prepare_dlap(&lv->fold, &lv->var_fold, 2.0 / eps, errstr, errstr_size);
    if (rc == DP_OK)
        rc = prepare_dlap(&lv->dense, &lv->var_dense, 1.0 / eps, errstr, errstr_size);
    return rc;
}


static int64_t keyed_draw(const dp_isc_keys *k, const dp_dlap *d, unsigned r, const char *what, uint64_t a,
                          uint64_t b)
{
    char label[160];
    snprintf(label, sizeof label, "%s/%llu/%llu/%s/%llu/%llu", k->prefix, (unsigned long long)k->a,
             (unsigned long long)k->b, what, (unsigned long long)a, (unsigned long long)b);
    dp_drbg g;
    dp_drbg_init(&g, k->key, k->stream_id, k->stream_id_len, r, label);
    int64_t v = dp_dlap_sample(d, &g);
    dp_drbg_wipe(&g);
    return v;
}

static int64_t threshold_noise(const dp_isc_keys *k, const dp_isc_level *lv, unsigned r, uint32_t seg)
{
    return keyed_draw(k, &lv->svt, r, "thr", seg, 0);
}

/* The tree's output after n closed segments whose true total is `closed`. */
static int tree_output(const dp_isc_keys *k, const dp_isc_level *lv, unsigned r, uint32_t n, int64_t closed,
                       int64_t *out)
{
    int64_t acc = closed;
    for (unsigned i = 0; i < lv->L; i++) {
        if (!((n >> i) & 1))
            continue;
        int64_t z = keyed_draw(k, &lv->node, r, "node", i, n >> i);
        if (__builtin_add_overflow(acc, z, &acc))
            return DP_ERANGE;
    }
    *out = acc;
    return DP_OK;
}

int dp_isc_step(dp_isc_cell *c, const dp_isc_level *lv, unsigned r, int64_t x, dp_drbg *qg, const dp_isc_keys *k)
{
    if (x > DP_ISC_MAX_INPUT || x < -DP_ISC_MAX_INPUT)
        return DP_EINVAL;
    int64_t open;
    if (__builtin_add_overflow(c->open, x, &open) || open == INT64_MIN)
        return DP_ERANGE;
    int64_t lambda = c->seg_open ? c->lambda : threshold_noise(k, lv, r, c->nseg);
    int64_t q = dp_dlap_sample(&lv->svt, qg);
    /* |N| + λ' > T0 + λ, in 128 bits */
    if ((__int128)(open < 0 ? -open : open) + q > (__int128)lv->T0 + lambda) {
        if ((uint64_t)c->nseg + 1 >= ((uint64_t)1 << lv->L) || c->nseg == UINT32_MAX)
            return DP_EHORIZON;
        int64_t closed, Ntil;
        if (__builtin_add_overflow(c->closed, open, &closed) ||
            tree_output(k, lv, r, c->nseg + 1, closed, &Ntil) != DP_OK)
            return DP_ERANGE;
        c->closed = closed;
        c->Ntil = Ntil;
        c->nseg++;
        c->open = 0;
        c->seg_open = 0;
        c->lambda = 0;
    } else {
        c->open = open;
        c->lambda = lambda;
        c->seg_open = 1;
    }
    return DP_OK;
}

int dp_isc_fold(dp_isc_cell *c, const dp_isc_level *lv, dp_drbg *fg)
{
    int64_t z = dp_dlap_sample(&lv->fold, fg), s;
    if (__builtin_add_overflow(c->Stil, c->closed, &s) || __builtin_add_overflow(s, c->open, &s) ||
        __builtin_add_overflow(s, z, &s))
        return DP_ERANGE;
    *c = (dp_isc_cell){.Stil = s};
    return DP_OK;
}

int dp_isc_add(dp_isc_cell *c, int64_t x)
{
    if (x > DP_ISC_MAX_INPUT || x < -DP_ISC_MAX_INPUT)
        return DP_EINVAL;
    int64_t open;
    if (__builtin_add_overflow(c->open, x, &open))
        return DP_ERANGE;
    c->open = open;
    return DP_OK;
}

int dp_isc_fold_dense(dp_isc_cell *c, const dp_isc_level *lv, dp_drbg *fg)
{
    int64_t z = dp_dlap_sample(&lv->dense, fg), s;
    if (__builtin_add_overflow(c->Stil, c->open, &s) || __builtin_add_overflow(s, z, &s))
        return DP_ERANGE;
    *c = (dp_isc_cell){.Stil = s};
    return DP_OK;
}

void dp_isc_save(const dp_isc_cell *c, dp_buf *b)
{
    dp_buf_put_i64(b, c->Stil);
    dp_buf_put_i64(b, c->closed);
    dp_buf_put_i64(b, c->open);
    dp_buf_put_u32(b, c->nseg);
    dp_buf_put_u8(b, (uint8_t)c->seg_open);
}

int dp_isc_load(dp_isc_cell *c, const dp_isc_level *lv, unsigned r, const dp_isc_keys *k, dp_reader *rd)
{
    const int64_t lim = (int64_t)1 << 60;
    c->Stil = dp_reader_i64(rd);
    c->closed = dp_reader_i64(rd);
    c->open = dp_reader_i64(rd);
    c->nseg = dp_reader_u32(rd);
    uint8_t so = dp_reader_u8(rd);
    if (dp_reader_status(rd) != DP_OK || so > 1 || c->Stil > lim || c->Stil < -lim || c->closed > lim ||
        c->closed < -lim || c->open > lim || c->open < -lim || (uint64_t)c->nseg >= ((uint64_t)1 << lv->L))
        return DP_ECORRUPT;
    c->seg_open = so;
    c->lambda = so ? threshold_noise(k, lv, r, c->nseg) : 0;
    c->Ntil = 0;
    if (c->nseg && tree_output(k, lv, r, c->nseg, c->closed, &c->Ntil) != DP_OK)
        return DP_ECORRUPT;
    return DP_OK;
}
