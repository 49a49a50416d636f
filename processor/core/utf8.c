/* utf8.c — UTF-8 well-formedness (utf8.h). */
#include "core/utf8.h"

#include <stdint.h>

#include <string.h>

#include "core/dp_error.h"

/* Length of the well-formed sequence at s[0, n), or 0 if ill-formed. */
static size_t sequence_len(const unsigned char *s, size_t n)
{
    unsigned char b0 = s[0];
    if (b0 < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;   /* range of the second byte */
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        len = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        len = 3;
        if (b0 == 0xe0)
            lo = 0xa0;   /* no overlong 3-byte forms */
        else if (b0 == 0xed)
            hi = 0x9f;   /* no UTF-16 surrogates */
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        len = 4;
        if (b0 == 0xf0)
            lo = 0x90;   /* no overlong 4-byte forms */
        else if (b0 == 0xf4)
            hi = 0x8f;   /* nothing above U+10FFFF */
    } else {
        return 0;        /* continuation byte, C0/C1 overlong lead, or F5..FF */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

int dp_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = sequence_len(p + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

int dp_utf8_sanitize(dp_vec *out, const char *s, size_t n, size_t *out_len)
{
    static const char replacement[3] = {(char)0xef, (char)0xbf, (char)0xbd};   /* U+FFFD */
    /* Worst case: every byte becomes three. */
    if (n > (SIZE_MAX - 1) / 3 || dp_vec_reserve(out, 3 * n + 1, 1) != DP_OK)
        return DP_ENOMEM;
    const unsigned char *p = (const unsigned char *)s;
    char *o = out->p;
    size_t i = 0, j = 0;
    while (i < n) {
        size_t k = p[i] ? sequence_len(p + i, n - i) : 0;
        if (k) {
            memcpy(o + j, p + i, k);
            j += k;
            i += k;
        } else {
            memcpy(o + j, replacement, 3);
            j += 3;
            i += 1;
        }
    }
    o[j] = '\0';
    *out_len = j;
    return DP_OK;
}

int dp_id_text_valid(const char *s, size_t n)
{
    return (n == 0 || memchr(s, 0, n) == NULL) && dp_utf8_valid(s, n);
}
