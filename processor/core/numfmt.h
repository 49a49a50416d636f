/* numfmt.h — real numbers as people read them: the shortest decimal text
 * that reads back as the same double.
 *
 * "%.17g" always round-trips but prints 1e-6 as 9.9999999999999995e-07 and
 * 0.1 as 0.10000000000000001; the shortest round-trip form prints 1e-06
 * and 0.1, and still parses (strtod, JSON readers) to exactly the same
 * double, so nothing is lost.  Every JSON line dpstream writes (replay's
 * and export's releases and budget events) and every message that quotes
 * a configured number uses it. */
#ifndef DP_CORE_NUMFMT_H
#define DP_CORE_NUMFMT_H

#include <stddef.h>

/* Longest text dp_fmt_double writes, with its NUL ("-1.2345678901234567e-308"). */
#define DP_FMT_DOUBLE_MAX 32

/* Write the shortest "%.<p>g" form (p = 1..17) of a finite v that strtod
 * reads back as v into out (at least DP_FMT_DOUBLE_MAX bytes); non-finite
 * values as "nan", "inf" or "-inf" (callers writing JSON map them to null
 * first).  Returns the length written. */
size_t dp_fmt_double(double v, char *out, size_t out_size);

#endif
