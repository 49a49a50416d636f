/* wire.c — see wire.h. */
#include "stream/wire.h"

#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"

static _Thread_local dp_codec *thread_codec;

int dp_wire_encode_update(const dp_update *u, dp_buf *out)
{
    if (!thread_codec) {
        dp_codec_options o;
        memset(&o, 0, sizeof o);
        o.framing = DP_CODEC_FRAMING_PLAIN;
        int rc = dp_codec_create(&thread_codec, &o, NULL, 0);
        if (rc != DP_OK)
            return rc;
    }
    return dp_codec_encode_update_buf(thread_codec, u, out, NULL, 0);
}

void dp_wire_thread_release(void)
{
    dp_codec_destroy(thread_codec);
    thread_codec = NULL;
}
