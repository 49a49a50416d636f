#include "core/dp_error.h"

#include <stdarg.h>
#include <stdio.h>

const char *dp_status_str(int status)
{
    switch (status) {
    case DP_OK:       return "ok";
    case DP_EINVAL:   return "invalid argument";
    case DP_ERANGE:   return "parameter out of supported range";
    case DP_ENOMEM:   return "out of memory";
    case DP_EBUDGET:  return "privacy budget exhausted";
    case DP_EHORIZON: return "horizon exhausted";
    case DP_ECORRUPT: return "corrupt serialized state";
    case DP_EIO:      return "I/O error";
    case DP_ESTATE:   return "invalid state";
    case DP_ECANCELED: return "canceled";
    case DP_EKEY:      return "state built with another noise key";
    case DP_ENOTFOUND: return "not found";
    case DP_ESCHEMA:   return "incompatible writer schema";
    default:          return "unknown error";
    }
}

int dp_err(char *errstr, size_t errstr_size, int status, const char *fmt, ...)
{
    if (errstr && errstr_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, errstr_size, fmt, ap);
        va_end(ap);
    }
    return status;
}
