/* line_reader.h — lines of a file with a hard cap on what is kept: a line
 * longer than the cap is cut to its first `max` bytes and flagged, and the
 * rest of it is read past without being stored, so memory stays one cap
 * plus a 64 KiB read buffer whatever the input (`dpstream replay` and the
 * JSON-lines path of `dpstream load`). */
#ifndef DP_CONNECTORS_LINE_READER_H
#define DP_CONNECTORS_LINE_READER_H

#include <stddef.h>
#include <stdio.h>

typedef struct dp_line_reader {
    FILE   *f;
    size_t  max;
    char   *buf;        /* the line (NUL-terminated), at most max bytes */
    char    chunk[1 << 16];
    size_t  chunk_len;
    size_t  chunk_pos;
    int     eof;
    int     error;      /* a read error happened */
    int     stream;     /* not a regular file (a pipe, a terminal): lines are handed out as they arrive */
} dp_line_reader;

/* DP_OK or DP_ENOMEM. */
int  dp_line_reader_init(dp_line_reader *r, FILE *f, size_t max);
void dp_line_reader_free(dp_line_reader *r);
/* The next line in r->buf without its "\n"; *truncated if it was longer
 * than max (only the first max bytes kept).  1, 0 at end of input, -1 on a
 * read error. */
int  dp_line_next(dp_line_reader *r, size_t *len, int *truncated);

#endif
