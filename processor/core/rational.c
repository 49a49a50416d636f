#include "core/rational.h"
#include "core/dp_error.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

typedef unsigned __int128 u128;

static u128 gcd128(u128 a, u128 b)
{
    while (b) {
        u128 r = a % b;
        a = b;
        b = r;
    }
    return a;
}

dp_rational dp_rational_reduce(dp_rational r)
{
    if (r.den == 0)
        return r;
    u128 g = gcd128(r.num, r.den);
    if (g > 1) {
        r.num = (uint64_t)(r.num / g);
        r.den = (uint64_t)(r.den / g);
    }
    return r;
}

/* Digits of one unsigned integer into a 128-bit accumulator; returns the
 * number of digits read, or -1 on overflow past 2^127. */
static int read_digits(const char **pp, u128 *acc)
{
    const char *p = *pp;
    int n = 0;
    while (isdigit((unsigned char)*p)) {
        if (*acc > (((u128)1 << 123)))
            return -1;
        *acc = *acc * 10 + (u128)(*p - '0');
        p++;
        n++;
    }
    *pp = p;
    return n;
}

/* Fractional digits appended to acc; trailing zeros are skipped (they do
 * not change the value), so "0.1000…0" parses however many zeros follow.
 * Returns the number of digits read (or -1 on overflow) and adds the
 * number of digits actually folded into acc to *scale_digits. */
static int read_frac_digits(const char **pp, u128 *acc, int *scale_digits)
{
    const char *p = *pp;
    int n = 0, pending_zeros = 0;
    while (isdigit((unsigned char)*p)) {
        int dgt = *p - '0';
        p++;
        n++;
        if (dgt == 0) {
            pending_zeros++;
            continue;
        }
        for (int i = 0; i <= pending_zeros; i++) {
            if (*acc > (((u128)1 << 123)))
                return -1;
            *acc *= 10;
        }
        *acc += (u128)dgt;
        *scale_digits += pending_zeros + 1;
        pending_zeros = 0;
    }
    *pp = p;
    return n;
}

static int rational_from_128(u128 num, u128 den, dp_rational *out, const char *text,
                             char *errstr, size_t errstr_size)
{
    if (den == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "'%s': zero denominator", text);
    u128 g = gcd128(num, den);
    if (g == 0)
        g = 1;
    num /= g;
    den /= g;
    if (num > UINT64_MAX || den > UINT64_MAX)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "'%s': numerator or denominator does not fit 64 bits", text);
    out->num = (uint64_t)num;
    out->den = (uint64_t)den;
    return DP_OK;
}

/* Grammar: INT | INT '/' INT | DECIMAL [('e'|'E') ['+'|'-'] INT]
 * where DECIMAL = digits ['.' digits] | '.' digits.  No sign: noise
 * parameters are non-negative. */
int dp_rational_parse(const char *text, dp_rational *out, char *errstr, size_t errstr_size)
{
    const char *p = text;
    u128 num = 0, den = 1;
    int frac_digits = 0;

    if (!text || !*text)
        return dp_err(errstr, errstr_size, DP_EINVAL, "empty number");
    if (*p == '-')
        return dp_err(errstr, errstr_size, DP_EINVAL, "'%s': must not be negative", text);
    if (*p == '+')
        p++;
    int nint = read_digits(&p, &num);
    if (nint < 0)
        return dp_err(errstr, errstr_size, DP_ERANGE, "'%s': too many digits", text);

    if (*p == '/') {
        p++;
        u128 d = 0;
        int nd = read_digits(&p, &d);
        if (nint == 0 || nd <= 0 || *p != '\0')
            return dp_err(errstr, errstr_size, DP_EINVAL, "'%s': expected a/b with integers a, b", text);
        return rational_from_128(num, d, out, text, errstr, errstr_size);
    }
    int nfrac = 0;
    if (*p == '.') {
        p++;
        nfrac = read_frac_digits(&p, &num, &frac_digits);
        if (nfrac < 0)
            return dp_err(errstr, errstr_size, DP_ERANGE, "'%s': too many digits", text);
    }
    if (nint == 0 && nfrac == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "'%s' is not a number", text);
    int exp10 = -frac_digits;
    if (*p == 'e' || *p == 'E') {
        p++;
        int sign = 1;
        if (*p == '+' || *p == '-')
            sign = (*p++ == '-') ? -1 : 1;
        u128 e = 0;
        int ne = read_digits(&p, &e);
        if (ne == 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, "'%s': bad exponent", text);
        if (ne < 0 || e > 60)
            return dp_err(errstr, errstr_size, DP_ERANGE, "'%s': exponent out of range", text);
        exp10 += sign * (int)e;
    }
    if (*p != '\0')
        return dp_err(errstr, errstr_size, DP_EINVAL, "'%s': unexpected character '%c'", text, *p);
    for (; exp10 > 0; exp10--) {
        if (num > ((u128)1 << 123))
            return dp_err(errstr, errstr_size, DP_ERANGE, "'%s': too large", text);
        num *= 10;
    }
    for (; exp10 < 0; exp10++) {
        if (den > ((u128)1 << 123))
            return dp_err(errstr, errstr_size, DP_ERANGE, "'%s': too small", text);
        den *= 10;
    }
    return rational_from_128(num, den, out, text, errstr, errstr_size);
}

#define FROM_DOUBLE_DEN ((uint64_t)1 << 20)

int dp_rational_from_double_up(double x, dp_rational *out)
{
    if (!isfinite(x) || x < 0 || x > 0x1p43)
        return DP_ERANGE;
    double scaled = ceil(x * (double)FROM_DOUBLE_DEN);
    *out = dp_rational_reduce((dp_rational){(uint64_t)scaled, FROM_DOUBLE_DEN});
    return DP_OK;
}

double dp_rational_to_double(dp_rational r)
{
    return (double)r.num / (double)r.den;
}

/* Round half up, q = floor(x + 1/2), computed without the double rounding
 * of x + 0.5 (which maps 0.49999999999999994 to 1): floor(x) and x -
 * floor(x) are exact in binary floating point. */
static double round_half_up(double x)
{
    double f = floor(x);
    return (x - f >= 0.5) ? f + 1.0 : f;
}

#define FIXED_MAX_BITS 62
#define FIXED_LIMIT    0x1p62

int dp_fixed_encode(double v, unsigned frac_bits, int64_t *out)
{
    if (frac_bits > FIXED_MAX_BITS || !isfinite(v))
        return DP_ERANGE;
    double x = ldexp(v, (int)frac_bits);     /* exact: scaling by 2^k */
    if (!(fabs(x) < FIXED_LIMIT))
        return DP_ERANGE;
    *out = (int64_t)round_half_up(x);
    return DP_OK;
}

int dp_fixed_sensitivity(double delta, unsigned frac_bits, uint64_t *out)
{
    if (frac_bits > FIXED_MAX_BITS || !isfinite(delta) || delta < 0)
        return DP_ERANGE;
    double x = ceil(ldexp(delta, (int)frac_bits));
    if (!(x < FIXED_LIMIT))
        return DP_ERANGE;
    *out = (uint64_t)x;
    return DP_OK;
}

int64_t dp_fixed_from_double(double v, unsigned frac_bits)
{
    int64_t q;
    if (dp_fixed_encode(v, frac_bits, &q) == DP_OK)
        return q;
    if (frac_bits > FIXED_MAX_BITS || isnan(v))
        return 0;
    return v < 0 ? -(int64_t)((uint64_t)1 << 62) : (int64_t)((uint64_t)1 << 62);
}

double dp_fixed_to_double(int64_t q, unsigned frac_bits)
{
    return ldexp((double)q, -(int)frac_bits);
}
