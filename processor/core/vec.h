/* vec.h — a growable array of fixed-size elements (decode storage that is
 * reused from message to message). */
#ifndef DP_VEC_H
#define DP_VEC_H

#include <stddef.h>

typedef struct dp_vec {
    void  *p;
    size_t cap;     /* in elements */
} dp_vec;

/* Grow v to hold at least n elements of elem_size bytes (contents kept).
 * DP_OK or DP_ENOMEM. */
int dp_vec_reserve(dp_vec *v, size_t n, size_t elem_size);

#endif
