/* line_reader.c — bounded line reading (line_reader.h). */
#include "connectors/jsonl/line_reader.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/dp_error.h"

int dp_line_reader_init(dp_line_reader *r, FILE *f, size_t max)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->max = max;
    struct stat st;
    r->stream = fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode);
    return (r->buf = malloc(max + 1)) ? DP_OK : DP_ENOMEM;
}

/* Refill the chunk.  From a pipe, up to the next newline only: fread waits
 * for a whole chunk (64 KiB), so `dpstream produce --input -` fed line by
 * line would send its lines in bursts a chunk apart
 * (bench/throughput/rebalance_pause.sh feeds one that way). */
static size_t fill(dp_line_reader *r)
{
    if (!r->stream)
        return fread(r->chunk, 1, sizeof r->chunk, r->f);
    size_t n = 0;
    int c;
    while (n < sizeof r->chunk && (c = getc(r->f)) != EOF) {
        r->chunk[n++] = (char)c;
        if (c == '\n')
            break;
    }
    return n;
}

void dp_line_reader_free(dp_line_reader *r)
{
    free(r->buf);
    r->buf = NULL;
}

int dp_line_next(dp_line_reader *r, size_t *len, int *truncated)
{
    size_t n = 0;
    int got_any = 0;
    *truncated = 0;
    for (;;) {
        if (r->chunk_pos == r->chunk_len) {
            if (r->eof)
                break;
            r->chunk_len = fill(r);
            r->chunk_pos = 0;
            if (r->chunk_len == 0) {
                if (ferror(r->f)) {
                    r->error = 1;
                    return -1;
                }
                r->eof = 1;
                break;
            }
        }
        got_any = 1;
        char *start = r->chunk + r->chunk_pos;
        size_t avail = r->chunk_len - r->chunk_pos;
        char *nl = memchr(start, '\n', avail);
        size_t take = nl ? (size_t)(nl - start) : avail;
        size_t keep = take;
        if (n + keep > r->max) {
            keep = r->max - n;
            *truncated = 1;
        }
        memcpy(r->buf + n, start, keep);
        n += keep;
        r->chunk_pos += take + (nl ? 1 : 0);
        if (nl)
            break;
    }
    if (!got_any)
        return 0;
    r->buf[n] = '\0';
    *len = n;
    return 1;
}
