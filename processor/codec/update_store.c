/* update_store.c — storage for decoded Row / Point payloads (codec.h:
 * dp_update_store).  A leaf: the decoders and the codec's own cleanup use
 * it, it uses nothing of theirs. */
#include "codec/codec.h"

#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "core/vec.h"

int dp_update_store_reserve(dp_update_store *s, int is_double, size_t need)
{
    dp_vec v = is_double ? (dp_vec){s->dbls, s->dbls_cap} : (dp_vec){s->ints, s->ints_cap};
    int rc = dp_vec_reserve(&v, need, is_double ? sizeof(double) : sizeof(int32_t));
    if (is_double) {
        s->dbls = v.p;
        s->dbls_cap = v.cap;
    } else {
        s->ints = v.p;
        s->ints_cap = v.cap;
    }
    return rc;
}

void dp_update_store_free(dp_update_store *s)
{
    free(s->ints);
    free(s->dbls);
    free(s->bytes);
    memset(s, 0, sizeof *s);
}
