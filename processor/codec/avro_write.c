/* avro_write.c — see avro_write.h. */
#include "codec/avro_write.h"

void dpc_avro_put_long(dp_buf *b, int64_t v)
{
    uint8_t *p = dp_buf_tail(b, DPC_AVRO_MAX_LONG);
    if (p)
        b->len += dpc_avro_write_long(p, v);
}

void dpc_avro_put_bytes(dp_buf *b, const void *p, size_t n)
{
    dpc_avro_put_long(b, (int64_t)n);
    dp_buf_put_bytes(b, p, n);
}
