/* vec.c — growable arrays (vec.h). */
#include "core/vec.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/dp_error.h"

int dp_vec_reserve(dp_vec *v, size_t n, size_t elem_size)
{
    if (n <= v->cap)
        return DP_OK;
    size_t cap = v->cap ? v->cap : 16;
    while (cap < n)
        cap = cap > SIZE_MAX / 2 ? n : cap * 2;
    if (cap > SIZE_MAX / elem_size)
        return DP_ENOMEM;
    void *p = realloc(v->p, cap * elem_size);
    if (!p)
        return DP_ENOMEM;
    v->p = p;
    v->cap = cap;
    return DP_OK;
}
