/* utf8.h — UTF-8 well-formedness (Unicode 15, Table 3-7), one rule for
 * the codec (Avro strings must be UTF-8, and Java consumers would silently
 * replace anything else) and the JSON-lines connectors. */
#ifndef DP_UTF8_H
#define DP_UTF8_H

#include <stddef.h>

#include "core/vec.h"

/* 1 if s[0, n) is well-formed UTF-8 (no overlong forms, no surrogates,
 * nothing above U+10FFFF); NUL bytes are well-formed. */
int dp_utf8_valid(const char *s, size_t n);
/* The one rule for stream and entity ids everywhere (load, replay's JSON,
 * the Avro codec): well-formed UTF-8 without a NUL byte (a NUL would cut
 * the id short in C strings and file names).  1 if s[0, n) follows it. */
int dp_id_text_valid(const char *s, size_t n);
/* Copy s[0, n) into *out (chars) replacing every ill-formed sequence and
 * every NUL by U+FFFD; out is NUL-terminated.  DP_ENOMEM or DP_OK. */
int dp_utf8_sanitize(dp_vec *out, const char *s, size_t n, size_t *out_len);

#endif
