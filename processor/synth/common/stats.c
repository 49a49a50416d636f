/* stats.c — exact, mergeable sufficient statistics of one step (stats.h).
 *
 * Cells are appended unsorted and canonicalised by dp_stats_finish (sort by
 * key, combine duplicates, drop zeros), so the finished form — and anything
 * computed from it — is independent of the order in which entities were
 * visited or shards merged. */
#include "synth/common/stats.h"

#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

#define STATS_MAGIC 0x31544154u   /* "TAT1" */

void dp_stats_init(dp_stats *s, uint64_t step)
{
    memset(s, 0, sizeof *s);
    s->step = step;
    s->sorted = 1;
}

void dp_stats_free(dp_stats *s)
{
    free(s->keys);
    free(s->counts);
    memset(s, 0, sizeof *s);
}

void dp_stats_clear(dp_stats *s, uint64_t step)
{
    s->step = step;
    s->n_cells = 0;
    memset(s->scalars, 0, sizeof s->scalars);
    s->sorted = 1;
}

static int stats_reserve(dp_stats *s, size_t need)
{
    if (need <= s->cap_cells)
        return DP_OK;
    size_t cap = s->cap_cells ? s->cap_cells : 16;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(uint64_t))
            return DP_ENOMEM;
        cap *= 2;
    }
    uint64_t *k = realloc(s->keys, cap * sizeof *k);
    if (!k)
        return DP_ENOMEM;
    s->keys = k;
    int64_t *c = realloc(s->counts, cap * sizeof *c);
    if (!c)
        return DP_ENOMEM;
    s->counts = c;
    s->cap_cells = cap;
    return DP_OK;
}

int dp_stats_add(dp_stats *s, uint64_t key, int64_t count)
{
    if (count == 0)
        return DP_OK;
    int rc = stats_reserve(s, s->n_cells + 1);
    if (rc != DP_OK)
        return rc;
    if (s->n_cells > 0 && s->keys[s->n_cells - 1] >= key)
        s->sorted = 0;
    s->keys[s->n_cells] = key;
    s->counts[s->n_cells] = count;
    s->n_cells++;
    return DP_OK;
}

typedef struct stats_cell {
    uint64_t key;
    int64_t  count;
} stats_cell;

static int stats_cell_cmp(const void *a, const void *b)
{
    uint64_t x = ((const stats_cell *)a)->key, y = ((const stats_cell *)b)->key;
    return x < y ? -1 : x > y;
}

int dp_stats_finish(dp_stats *s)
{
    if (!s->sorted && s->n_cells > 1) {
        /* qsort is not stable, but equal keys are summed below, and
         * integer addition is commutative: the result is canonical. */
        stats_cell *tmp = malloc(s->n_cells * sizeof *tmp);
        if (!tmp)
            return DP_ENOMEM;
        for (size_t i = 0; i < s->n_cells; i++) {
            tmp[i].key = s->keys[i];
            tmp[i].count = s->counts[i];
        }
        qsort(tmp, s->n_cells, sizeof *tmp, stats_cell_cmp);
        for (size_t i = 0; i < s->n_cells; i++) {
            s->keys[i] = tmp[i].key;
            s->counts[i] = tmp[i].count;
        }
        free(tmp);
    }
    size_t w = 0;
    for (size_t i = 0; i < s->n_cells; i++) {
        if (w > 0 && s->keys[w - 1] == s->keys[i]) {
            if (__builtin_add_overflow(s->counts[w - 1], s->counts[i], &s->counts[w - 1]))
                return DP_ERANGE;
        } else {
            if (w > 0 && s->counts[w - 1] == 0)
                w--;
            s->keys[w] = s->keys[i];
            s->counts[w] = s->counts[i];
            w++;
        }
    }
    if (w > 0 && s->counts[w - 1] == 0)
        w--;
    s->n_cells = w;
    s->sorted = 1;
    return DP_OK;
}

int64_t dp_stats_get(const dp_stats *s, uint64_t key)
{
    size_t lo = 0, hi = s->n_cells;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < s->n_cells && s->keys[lo] == key) ? s->counts[lo] : 0;
}

int dp_stats_merge(dp_stats *into, const dp_stats *from)
{
    if (into->step != from->step)
        return DP_EINVAL;
    if (!into->sorted || !from->sorted)
        return DP_ESTATE;
    for (int i = 0; i < DP_STATS_MAX_SCALARS; i++)
        if (__builtin_add_overflow(into->scalars[i], from->scalars[i], &into->scalars[i]))
            return DP_ERANGE;
    /* Two sorted runs merged in place from the back: O(a + b). */
    size_t a = into->n_cells, b = from->n_cells;
    int rc = stats_reserve(into, a + b);
    if (rc != DP_OK)
        return rc;
    size_t i = a, j = b, w = a + b;
    while (j > 0) {
        if (i > 0 && into->keys[i - 1] > from->keys[j - 1]) {
            into->keys[--w] = into->keys[--i];
            into->counts[w] = into->counts[i];
        } else {
            into->keys[--w] = from->keys[--j];
            into->counts[w] = from->counts[j];
        }
    }
    into->n_cells = a + b;
    /* Equal keys are now adjacent; finish combines them and drops zeros. */
    return dp_stats_finish(into);
}

int dp_stats_save(const dp_stats *s, dp_buf *b)
{
    if (!s->sorted)
        return DP_ESTATE;
    dp_buf_put_u32(b, STATS_MAGIC);
    dp_buf_put_u64(b, s->step);
    for (int i = 0; i < DP_STATS_MAX_SCALARS; i++)
        dp_buf_put_i64(b, s->scalars[i]);
    dp_buf_put_u64(b, s->n_cells);
    for (size_t i = 0; i < s->n_cells; i++) {
        dp_buf_put_u64(b, s->keys[i]);
        dp_buf_put_i64(b, s->counts[i]);
    }
    return dp_buf_status(b);
}

int dp_stats_load(dp_stats *s, dp_reader *r)
{
    if (dp_reader_u32(r) != STATS_MAGIC)
        return DP_ECORRUPT;
    uint64_t step = dp_reader_u64(r);
    dp_stats_clear(s, step);
    for (int i = 0; i < DP_STATS_MAX_SCALARS; i++)
        s->scalars[i] = dp_reader_i64(r);
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK)
        return DP_ECORRUPT;
    /* Each cell is 16 bytes: refuse counts the input cannot hold before allocating. */
    if (n > (r->len - r->off) / 16)
        return DP_ECORRUPT;
    int rc = stats_reserve(s, (size_t)n);
    if (rc != DP_OK)
        return rc;
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = dp_reader_u64(r);
        int64_t c = dp_reader_i64(r);
        if (c == 0 || (i > 0 && k <= prev))
            return DP_ECORRUPT;   /* not canonical */
        s->keys[i] = k;
        s->counts[i] = c;
        prev = k;
    }
    s->n_cells = (size_t)n;
    s->sorted = 1;
    return dp_reader_status(r) == DP_OK ? DP_OK : DP_ECORRUPT;
}
