/* export_assemble.h — rebuilding whole releases from the synthetic topic
 * (docs/design.md §5; schemas/SyntheticRecord.avsc, schemas/ReleaseManifest.avsc)
 * for `dpstream export`.  No Kafka and no Avro here: the caller decodes
 * messages and feeds record chunks and manifests in the order it sees
 * them, so the logic is testable with any interleaving.
 *
 * A release (stream, step) is handed to the caller exactly once, and only
 * when all of these hold:
 *   - its manifest has arrived;
 *   - chunks 0 .. chunk_count-1 have all arrived (chunks with an index
 *     >= chunk_count are ignored);
 *   - the chunks hold exactly record_count records;
 *   - if the manifest carries a checksum, the BLAKE2b-256 of the records'
 *     canonical encodings (schemas/ReleaseManifest.avsc, computed by the
 *     codec's dp_codec_checksum_*) equals it.
 * Until then nothing of the release is passed on: a partial release is
 * never written.
 *
 * Duplicates (a replayed or aborted transaction re-sends chunks and
 * manifests; a read_uncommitted reader, or librdkafka's mock cluster, sees
 * aborted ones) are resolved by "the latest copy wins": a chunk with an
 * index already held replaces the held one, a later manifest replaces an
 * earlier one.  Within a partition the committed attempt's messages come
 * after any aborted attempt's, so at the moment the committed manifest
 * arrives the held chunks are the committed ones; the count and checksum
 * check catches every other case.  Anything that arrives for a release
 * already handed out is dropped (counted), so replays never write a
 * release twice.  A manifest that fails the check is kept, with its
 * chunks, until a later chunk or manifest makes the release consistent.
 *
 * Memory: the records of incomplete releases (a release is freed when it
 * is handed out), plus, per stream, the set of released steps stored as
 * disjoint ranges [lo, hi] — one range per stream when steps are
 * released in order, as they are from one partition. */
#ifndef DP_APP_EXPORT_ASSEMBLE_H
#define DP_APP_EXPORT_ASSEMBLE_H

#include <stddef.h>
#include <stdint.h>

#include "synth/common/synth.h"

#define DP_EXPORT_CHECKSUM_BYTES 32   /* = DP_CODEC_CHECKSUM_BYTES */

/* A decoded manifest (all pointers borrowed for the call). */
typedef struct dp_export_manifest {
    dp_release_manifest m;          /* stream, step, synthesizer, mode, record_count, debias, … */
    uint32_t chunk_count;
    int      has_checksum;          /* 0 for sources without one (replay's releases.jsonl) */
    uint8_t  checksum[DP_EXPORT_CHECKSUM_BYTES];
} dp_export_manifest;

typedef struct dp_export_sink {
    void *ctx;
    /* A complete, verified release: its manifest and records in release
     * order.  A non-zero return is passed back to the feeding call (the
     * release then counts as not handed out and stays pending). */
    int  (*release)(void *ctx, const dp_release_manifest *m, const dp_synth_record *records, size_t n);
    /* Optional diagnostics (one sentence). */
    void (*notice)(void *ctx, const char *stream, size_t stream_len, uint64_t step, const char *text);
} dp_export_sink;

typedef struct dp_export_stats {
    uint64_t chunks;                /* chunks fed */
    uint64_t manifests;             /* manifests fed */
    uint64_t released;              /* releases handed out */
    uint64_t records_released;
    uint64_t replaced_chunks;       /* a chunk index arrived again before its release completed */
    uint64_t replaced_manifests;
    uint64_t late_duplicates;       /* chunks / manifests for releases already handed out */
    uint64_t failed_checks;         /* a complete set of chunks disagreed with its manifest */
} dp_export_stats;

typedef struct dp_export_asm dp_export_asm;

int  dp_export_asm_create(dp_export_asm **out);
void dp_export_asm_destroy(dp_export_asm *a);

/* Feed one chunk (records copied).  DP_OK, DP_ENOMEM, or the sink's status. */
int dp_export_asm_chunk(dp_export_asm *a, const char *stream, size_t stream_len, uint64_t step,
                        uint32_t chunk_index, const dp_synth_record *records, size_t n,
                        const dp_export_sink *sink);

/* Feed one manifest (copied).  DP_OK, DP_ENOMEM, or the sink's status. */
int dp_export_asm_manifest(dp_export_asm *a, const dp_export_manifest *m, const dp_export_sink *sink);

/* 1 if (stream, step) has been handed out. */
int dp_export_asm_released(const dp_export_asm *a, const char *stream, size_t stream_len, uint64_t step);

const dp_export_stats *dp_export_asm_stats(const dp_export_asm *a);

/* Releases still incomplete, sorted by (stream bytes, step): calls fn for
 * each with a one-sentence description of what is missing.  Returns the
 * number of pending releases. */
size_t dp_export_asm_pending(const dp_export_asm *a,
                             void (*fn)(void *ctx, const char *stream, size_t stream_len, uint64_t step,
                                        const char *what),
                             void *ctx);

#endif
