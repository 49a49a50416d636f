/* load_values.c — the strict value parsers of `dpstream load`: integers,
 * timestamps (ISO 8601, epoch seconds or milliseconds), durations, and the
 * step of a timestamp.  Strict because a loader that guesses would turn
 * malformed input into data; every parser accepts the whole field or
 * nothing (formats in load_mapping.h). */
#include "connectors/load/load_mapping.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dp_load_parse_int(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n == 0)
        return -1;
    if (s[0] == '-' || s[0] == '+') {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return -1;
    uint64_t mag = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            return -1;
        mag = mag * 10 + d;
    }
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1u)
            return -1;
        *out = mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX)
            return -1;
        *out = (int64_t)mag;
    }
    return 0;
}

/* Exactly `k` decimal digits at s[*i]. */
static int digits(const char *s, size_t n, size_t *i, int k, int *out)
{
    int v = 0;
    for (int j = 0; j < k; j++) {
        if (*i >= n || s[*i] < '0' || s[*i] > '9')
            return -1;
        v = v * 10 + (s[(*i)++] - '0');
    }
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days
 * inverse: count whole 400-year eras of 146097 days, then the day within
 * the era with March as the first month so the leap day comes last). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int DAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return DAYS[m - 1];
}

/* The digits of a decimal fraction starting at *i (after its separator) as
 * whole milliseconds, truncated; *rest = 1 if a truncated digit was not 0.
 * -1 without a digit. */
static int frac_millis(const char *s, size_t n, size_t *i, int64_t *ms, int *rest)
{
    int nd = 0;
    *ms = 0;
    *rest = 0;
    for (; *i < n && s[*i] >= '0' && s[*i] <= '9'; (*i)++, nd++) {
        if (nd < 3)
            *ms = *ms * 10 + (s[*i] - '0');
        else if (s[*i] != '0')
            *rest = 1;
    }
    if (nd == 0)
        return -1;
    for (; nd < 3; nd++)
        *ms *= 10;
    return 0;
}

static int parse_iso8601(const char *s, size_t n, int64_t *ms)
{
    size_t i = 0;
    int y, mo, d, hh = 0, mi = 0, ss = 0;
    int64_t frac_ms = 0;
    if (digits(s, n, &i, 4, &y) || i >= n || s[i++] != '-' || digits(s, n, &i, 2, &mo) || i >= n ||
        s[i++] != '-' || digits(s, n, &i, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return -1;
    int64_t offset_min = 0;
    if (i < n) {
        if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
            return -1;
        i++;
        if (digits(s, n, &i, 2, &hh) || i >= n || s[i++] != ':' || digits(s, n, &i, 2, &mi))
            return -1;
        if (i < n && s[i] == ':') {
            i++;
            if (digits(s, n, &i, 2, &ss))
                return -1;
            if (i < n && (s[i] == '.' || s[i] == ',')) {
                i++;
                int rest;   /* unused: a time of day is positive, so truncating is flooring */
                if (frac_millis(s, n, &i, &frac_ms, &rest))
                    return -1;
            }
        }
        if (hh > 23 || mi > 59 || ss > 59)
            return -1;
        if (i >= n)
            return -1;   /* no zone designator: refused, see load_mapping.h */
        if (s[i] == 'Z' || s[i] == 'z') {
            i++;
        } else if (s[i] == '+' || s[i] == '-') {
            int sign = s[i++] == '-' ? -1 : 1;
            int oh, om = 0;
            if (digits(s, n, &i, 2, &oh))
                return -1;
            if (i < n && s[i] == ':')
                i++;
            if (i < n && digits(s, n, &i, 2, &om))
                return -1;
            if (oh > 23 || om > 59)
                return -1;
            offset_min = sign * (oh * 60 + om);
        } else {
            return -1;
        }
        if (i != n)
            return -1;
    }
    int64_t days = days_from_civil(y, mo, d);
    int64_t secs = days * 86400 + hh * 3600 + mi * 60 + ss - offset_min * 60;
    *ms = secs * 1000 + frac_ms;
    return 0;
}

/* Epoch seconds with an optional decimal fraction, floored to ms. */
static int parse_epoch_s(const char *s, size_t n, int64_t *ms)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i++;
    }
    size_t int_start = i;
    uint64_t mag = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        if (mag > (uint64_t)INT64_MAX / 10000)   /* keeps mag*1000+999 in range */
            return -1;
        mag = mag * 10 + (uint64_t)(s[i++] - '0');
    }
    if (i == int_start)
        return -1;
    int64_t frac = 0;
    int rest = 0;
    if (i < n && s[i] == '.') {
        i++;
        if (frac_millis(s, n, &i, &frac, &rest))
            return -1;
    }
    if (i != n)
        return -1;
    uint64_t v = mag * 1000 + (uint64_t)frac;
    /* floor: a negative time with a sub-millisecond rest rounds down */
    *ms = neg ? -(int64_t)v - rest : (int64_t)v;
    return 0;
}

int dp_load_parse_timestamp(const char *s, size_t n, dp_ts_format f, int64_t *ms)
{
    switch (f) {
    case DP_TS_ISO8601:  return parse_iso8601(s, n, ms);
    case DP_TS_EPOCH_S:  return parse_epoch_s(s, n, ms);
    case DP_TS_EPOCH_MS: return dp_load_parse_int(s, n, ms);
    }
    return -1;
}

int dp_load_parse_duration(const char *s, int64_t *ms)
{
    size_t n = strlen(s), i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    int64_t v;
    if (i == 0 || dp_load_parse_int(s, i, &v) != 0 || v <= 0)
        return -1;
    const char *u = s + i;
    int64_t mult;
    if (strcmp(u, "ms") == 0) mult = 1;
    else if (strcmp(u, "s") == 0) mult = 1000;
    else if (strcmp(u, "m") == 0) mult = 60000;
    else if (strcmp(u, "h") == 0) mult = 3600000;
    else if (strcmp(u, "d") == 0) mult = 86400000;
    else if (strcmp(u, "w") == 0) mult = 604800000;
    else return -1;
    if (v > INT64_MAX / mult)
        return -1;
    *ms = v * mult;
    return 0;
}

int dp_load_step_of(int64_t v, int64_t origin, int64_t length, uint64_t *step)
{
    if (length <= 0 || v < origin)
        return -1;
    /* v >= origin, so the difference is non-negative and fits in uint64 */
    uint64_t diff = (uint64_t)v - (uint64_t)origin;
    uint64_t q = diff / (uint64_t)length;
    if (q >= (uint64_t)INT64_MAX)
        return -1;   /* steps are 1..2^63-1 (update_json.h) */
    *step = q + 1;
    return 0;
}
