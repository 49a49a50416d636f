/* ledger_io.c — see ledger_io.h. */
#include "core/ledger_io.h"

#include "core/dp_error.h"

#include <stdlib.h>

int dp_ledger_save(const dp_ledger *l, dp_buf *b)
{
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = dp_ledger_serialize(l, &bytes, &n);
    if (rc != DP_OK)
        return rc;
    dp_buf_put_blob(b, bytes, n);
    free(bytes);
    return dp_buf_status(b);
}

int dp_ledger_load(dp_ledger *l, dp_reader *r)
{
    size_t n;
    const uint8_t *p = dp_reader_blob(r, &n);
    if (!p)
        return DP_ECORRUPT;
    dp_ledger fresh;
    int rc = dp_ledger_deserialize(&fresh, p, n, NULL, 0);
    if (rc != DP_OK)
        return DP_ECORRUPT;
    if (fresh.model != l->model || fresh.budget != l->budget) {
        dp_ledger_free(&fresh);
        return DP_ECORRUPT;
    }
    dp_ledger_free(l);
    *l = fresh;
    return DP_OK;
}

int dp_ledger_reset_exact(dp_ledger *l, dp_privacy_model model, double budget, uint64_t units, char *errstr,
                          size_t errstr_size)
{
    dp_ledger_free(l);
    return dp_ledger_init_exact(l, model, budget, units, errstr, errstr_size);
}
