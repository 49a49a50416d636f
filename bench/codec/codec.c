/* codec.c — bench_codec: decoding an Update message, the direct decoder
 * (dp_codec_decode_update, codec_update_decode.c) against avro-c's
 * generic value path it replaced (dpc_decode_update_generic: avro_check,
 * avro_value_read, field getters), side by side in one run.
 *
 * Messages are typical window-synthesizer updates as the processor sees
 * them: stream "win/retail-1" (12 bytes), entity "u" + 7 digits (8 bytes),
 * REPORT with a Category payload, Confluent framing, with and without
 * event_time; two wider payloads (Row of 8 ints, Point of 3 doubles) are
 * shown for reference.  Each case is a ring of 4096 distinct encoded
 * messages (varying entity, step, category, coordinates) stored back to
 * back like a fetched batch, decoded round after round (and the first 64
 * of them, hot in L1, to separate the decoder's own cost from memory); the rate is the best of --reps timed passes of --msgs
 * decodes, so a pass disturbed by other work on the machine does not set
 * the figure.  Before timing, every message of the ring is decoded by
 * both decoders and compared field by field (a wrong fast decoder would
 * be fast for nothing).
 *
 *   bench_codec [--msgs N] [--reps R]      (defaults 2 000 000, 5)
 *
 * Not a test: numbers depend on the machine and its load. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "codec/codec_internal.h"
#include "core/dp_error.h"
#include "core/drbg.h"

enum { RING = 4096, MSG_CAP = 256 };

/* The ring's messages back to back, as in a fetched Kafka batch. */
typedef struct ring {
    uint8_t  buf[RING * MSG_CAP];
    size_t   off[RING], len[RING];
} ring;

typedef int (*decode_fn)(dp_codec *, const void *, size_t, dp_update *, char *, size_t);

typedef struct bcase {
    const char *name;
    int         payload;      /* 1 Category, 2 Row[8], 3 Point[3] */
    int         event_time;
} bcase;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_codec: %s: %s\n", what, err);
    exit(1);
}

static int same_update(const dp_update *a, const dp_update *b)
{
    if (a->stream_id_len != b->stream_id_len || memcmp(a->stream_id, b->stream_id, a->stream_id_len) != 0 ||
        a->step != b->step || a->kind != b->kind || (a->entity_id == NULL) != (b->entity_id == NULL) ||
        a->entity_id_len != b->entity_id_len || (a->entity_id && memcmp(a->entity_id, b->entity_id, a->entity_id_len)) ||
        a->has_event_time != b->has_event_time || a->event_time_ms != b->event_time_ms ||
        a->payload.kind != b->payload.kind || a->payload.category != b->payload.category ||
        a->payload.row_len != b->payload.row_len || a->payload.point_len != b->payload.point_len)
        return 0;
    if (a->payload.row_len && memcmp(a->payload.row, b->payload.row, a->payload.row_len * sizeof(int32_t)))
        return 0;
    if (a->payload.point_len && memcmp(a->payload.point, b->payload.point, a->payload.point_len * sizeof(double)))
        return 0;
    return 1;
}

/* The ring of encoded messages of one case. */
static void fill_ring(dp_codec *c, const bcase *bc, ring *rg)
{
    size_t at = 0;
    dp_key key;
    memset(&key, 0x5a, sizeof key);
    dp_drbg g;
    dp_drbg_init(&g, &key, "bench-codec", 11, (uint64_t)bc->payload * 2 + (uint64_t)bc->event_time, "messages");
    char err[256];
    for (int i = 0; i < RING; i++) {
        char entity[16];
        snprintf(entity, sizeof entity, "u%07" PRIu64, dp_drbg_uniform(&g, 10000000));
        int32_t ints[8];
        double dbls[3];
        dp_update u = {.stream_id = "win/retail-1", .stream_id_len = 12, .step = 1 + (uint64_t)i / 512,
                       .kind = DP_UPDATE_REPORT, .entity_id = entity, .entity_id_len = 8};
        switch (bc->payload) {
        case 1: u.payload = (dp_payload){.kind = DP_PAYLOAD_CATEGORY, .category = (int64_t)dp_drbg_uniform(&g, 12)}; break;
        case 2:
            for (int k = 0; k < 8; k++)
                ints[k] = (int32_t)dp_drbg_uniform(&g, 5);
            u.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = ints, .row_len = 8};
            break;
        default:
            for (int k = 0; k < 3; k++)
                dbls[k] = (double)dp_drbg_uniform(&g, 1u << 20) / 1024.0 - 512.0;
            u.payload = (dp_payload){.kind = DP_PAYLOAD_POINT, .point = dbls, .point_len = 3};
            break;
        }
        if (bc->event_time) {
            u.has_event_time = 1;
            u.event_time_ms = INT64_C(1763800000000) + (int64_t)dp_drbg_uniform(&g, 86400000);
        }
        rg->off[i] = at;
        if (dp_codec_encode_update(c, &u, rg->buf + at, MSG_CAP, &rg->len[i], err, sizeof err) != DP_OK)
            die("encode", err);
        at += rg->len[i];
    }
}

/* Best-of-reps rate (messages per second) of one decoder cycling through
 * the first `span` messages of the ring. */
static double rate(dp_codec *c, decode_fn fn, const ring *rg, size_t span, long n, int reps, uint64_t *sink)
{
    char err[256];
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (long i = 0; i < n; i++) {
            dp_update u;
            size_t k = (size_t)i & (span - 1);
            if (fn(c, rg->buf + rg->off[k], rg->len[k], &u, err, sizeof err) != DP_OK)
                die("decode", err);
            *sink += u.step + (uint64_t)u.payload.category + u.entity_id_len + u.payload.row_len;
        }
        double dt = now_s() - t0;
        if (dt > 0 && (double)n / dt > best)
            best = (double)n / dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    long n = 2000000;
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--msgs") && i + 1 < argc)
            n = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_codec [--msgs N] [--reps R]\n");
            return 2;
        }
    }
    if (n < 1 || reps < 1) {
        fprintf(stderr, "bench_codec: --msgs and --reps must be >= 1\n");
        return 2;
    }
    dp_codec_options o = {.framing = DP_CODEC_FRAMING_CONFLUENT};
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
        o.schema_id[t] = 100u + (uint32_t)t;
    dp_codec *c = NULL;
    char err[256];
    if (dp_codec_create(&c, &o, err, sizeof err) != DP_OK)
        die("codec", err);

    static const bcase cases[] = {
        {"Category, no event_time", 1, 0},
        {"Category, event_time", 1, 1},
        {"Row[8], event_time", 2, 1},
        {"Point[3], event_time", 3, 1},
    };
    static ring rg;
    static const size_t spans[] = {RING, 64};
    uint64_t sink = 0;
    printf("Update decode, Confluent framing, best of %d x %ld decodes cycling through a ring of\n"
           "%d (a poll batch, ~160 KB) or 64 (hot in L1) distinct messages stored back to back\n",
           reps, n, RING);
    printf("%-26s %5s %6s %11s %11s %7s %10s %10s\n", "case", "ring", "bytes", "avro-c M/s", "direct M/s",
           "ratio", "avro-c ns", "direct ns");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fill_ring(c, &cases[i], &rg);
        size_t bytes = 0;
        for (int k = 0; k < RING; k++) {
            dp_update a, b;
            char e2[256];
            const uint8_t *m = rg.buf + rg.off[k];
            if (dpc_decode_update_generic(c, m, rg.len[k], &a, err, sizeof err) != DP_OK)
                die("generic decode", err);
            /* a's payload array lives in the codec's generic buffers, b's in
             * the codec's store: both stay valid across the other's call. */
            if (dp_codec_decode_update(c, m, rg.len[k], &b, e2, sizeof e2) != DP_OK)
                die("direct decode", e2);
            if (!same_update(&a, &b))
                die("check", "the two decoders disagree");
            bytes += rg.len[k];
        }
        for (size_t s = 0; s < sizeof spans / sizeof spans[0]; s++) {
            double g = rate(c, dpc_decode_update_generic, &rg, spans[s], n, reps, &sink);
            double f = rate(c, dp_codec_decode_update, &rg, spans[s], n, reps, &sink);
            printf("%-26s %5zu %6.1f %11.2f %11.2f %6.1fx %10.0f %10.1f\n", cases[i].name, spans[s],
                   (double)bytes / RING, g / 1e6, f / 1e6, f / g, 1e9 / g, 1e9 / f);
        }
    }
    printf("(checksum %" PRIu64 ")\n", sink);
    dp_codec_destroy(c);
    return 0;
}
