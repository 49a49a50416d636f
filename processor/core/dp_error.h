/* dp_error.h — status codes shared by every dpstream layer.
 *
 * Functions return DP_OK (0) or a negative dp_status; where a caller needs
 * to know *why*, they also take an error buffer (errstr, errstr_size), the
 * librdkafka convention, and write one human-readable sentence into it. */
#ifndef DP_ERROR_H
#define DP_ERROR_H

#include <stddef.h>

typedef enum dp_status {
    DP_OK          = 0,
    DP_EINVAL      = -1,  /* malformed argument or configuration */
    DP_ERANGE      = -2,  /* parameter outside the documented supported range */
    DP_ENOMEM      = -3,
    DP_EBUDGET     = -4,  /* spend would exceed the privacy budget (fail closed) */
    DP_EHORIZON    = -5,  /* bounded mechanism used past its horizon (fail closed) */
    DP_ECORRUPT    = -6,  /* snapshot / serialized state does not parse */
    DP_EIO         = -7,
    DP_ESTATE      = -8,  /* call not valid in the object's current state */
    DP_ECANCELED   = -9,  /* stopped on request (a signal) before finishing */
    DP_EKEY        = -10, /* state built with another noise key (refused: double spend) */
    DP_ENOTFOUND   = -11, /* a lookup found nothing (e.g. a writer schema the codec was not given yet) */
    DP_ESCHEMA     = -12, /* data written with a schema the reader cannot resolve against its own */
} dp_status;

const char *dp_status_str(int status);

/* printf into errstr if it is non-NULL; returns `status` so callers can
 * write `return dp_err(errstr, n, DP_EINVAL, "bad k=%d", k);` */
int dp_err(char *errstr, size_t errstr_size, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
