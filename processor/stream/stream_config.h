/* stream_config.h — the processor's configuration file: which synthesizer
 * runs for which stream, with what parameters, plus the Kafka settings
 * (used by `dpstream replay`, the Kafka processor `dpstream run` and the
 * Kafka helper commands).
 *
 *   {
 *     "topics": {"prefix": "dpstream",             optional; defaults below
 *                "updates": "dpstream.updates", "synthetic": "dpstream.synthetic",
 *                "budget": "dpstream.budget", "dead_letter": "dpstream.deadletter",
 *                "state": "dpstream.state",
 *                "partitions": 4, "replication_factor": -1},
 *                the topics dpstream creates when they are missing (every
 *                command that writes or reads them creates what is missing
 *                with these, never relying on broker auto-creation; existing
 *                topics are left as they are): partitions 1..100000, default
 *                4; replication_factor -1 = the broker's
 *                default.replication.factor, or 1..32767
 *     "kafka":  {"bootstrap.servers": "127.0.0.1:9092", …},   optional;
 *                librdkafka properties, values strings (numbers and
 *                booleans are accepted and written in canonical form)
 *     "wire":   {"framing": "plain" | "confluent",    optional; default plain
 *                "schema_ids": {"Update": 1, "SyntheticRecord": 2,
 *                               "ReleaseManifest": 3, "BudgetEvent": 4,
 *                               "DeadLetter": 5, "Snapshot": 6}},
 *                the Kafka wire format of every message dpstream reads or
 *                writes (codec.h); "confluent" needs all six Schema
 *                Registry ids, each in 1..2^31-1; "plain" takes none.
 *                With "schema_registry" the framing is confluent and the
 *                ids come from the registry: "wire" may then say nothing
 *                but "framing": "confluent"
 *     "schema_registry": {"url": "http://registry:8081", …},   optional;
 *                dpstream registers its schemas there and resolves the
 *                writer schema of every input Update (registry.h has the
 *                keys, registry_subjects.h the subjects)
 *     "delta":  1e-6,                                 optional, in (0, 1);
 *                the δ of the published (ε, δ) equivalents; copied into
 *                every stream's synthesizer config as "delta" unless that
 *                config sets its own (synthesizers take a "delta" key by
 *                convention: every budget event states its δ)
 *     "streams": [                                    required, non-empty
 *       {"match": "panel-a",  "synthesizer": "window",     "config": {…}},
 *       {"prefix": "survey/", "synthesizer": "cumulative", "config": {…}}
 *     ]
 *   }
 *
 * Routing: a stream id is matched against the routes in file order and
 * the first route that matches wins — "match" equals the id exactly,
 * "prefix" is a byte prefix of it ("" matches every stream: a catch-all
 * that belongs last).  Each route names exactly one of the two.  A route
 * that an earlier route always shadows (same exact id, or an earlier
 * prefix that covers it) can never be used and is refused as a likely
 * mistake.  Ids starting with "__dpstream." are reserved (the state
 * topic's own keys): no route may name one and none routes there.
 *
 * Validation is complete at load time: unknown keys at any level, wrong
 * types, unknown synthesizers, and synthesizer configs that the
 * synthesizer itself refuses (unknown keys, missing keys, overspent
 * plans — checked by building the synthesizer once with a throw-away
 * key) are errors naming the JSON path, e.g.
 * "streams[1].config: window: k must be in 1..16". */
#ifndef DP_STREAM_STREAM_CONFIG_H
#define DP_STREAM_STREAM_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/registry.h"

#include "codec/codec.h"
#include "synth/common/step_gate.h"

typedef struct dp_stream_route {
    char   *match;          /* exact stream id, or NULL */
    char   *prefix;         /* stream id prefix, or NULL */
    size_t  match_len;      /* length of whichever of the two is set */
    char   *synthesizer;    /* "window", "cumulative", … */
    json_t *config;         /* the synthesizer's config object (owned; "delta" filled in) */
    dp_gate_policy gate;    /* when its steps close and how far data may run ahead */
    uint32_t max_streams;   /* prefix routes: streams it may create per input partition (0: no cap) */
    int      budget_group;  /* its streams share its budget: config's budget is already the share */
    int      sharded;       /* "sharded": keyed by stream id ‖ 0x00 ‖ entity id over every partition (shard_key.h) */
} dp_stream_route;

typedef struct dp_kafka_property {
    char *name;
    char *value;
} dp_kafka_property;

typedef struct dp_stream_config {
    char *topic_prefix;
    char *topic_updates;
    char *topic_synthetic;
    char *topic_budget;
    char *topic_dead_letter;
    char *topic_state;
    int   topic_partitions;           /* "topics.partitions": for topics dpstream creates */
    int   topic_replication_factor;   /* "topics.replication_factor", -1 = the broker's default */
    dp_kafka_property *kafka;      /* in file order */
    size_t             n_kafka;
    double             delta;
    dp_codec_framing   framing;                          /* "wire.framing" */
    uint32_t           schema_ids[DP_CODEC_TYPE_COUNT];  /* CONFLUENT only; from the registry
                                                            once dp_registry_setup ran */
    dp_registry_config *registry;                        /* "schema_registry", NULL: none */
    const char        *partitioner;  /* kafka.partitioner (a keyed one), or "consistent_random";
                                        points into `kafka` or at a literal */
    dp_stream_route   *routes;     /* in file order */
    size_t             n_routes;
} dp_stream_config;

#define DP_STREAM_CONFIG_DEFAULT_DELTA 1e-6
/* Partitions of the topics dpstream creates unless "topics.partitions"
 * says otherwise (what `dpstream produce` always used). */
#define DP_STREAM_DEFAULT_TOPIC_PARTITIONS 4

/* librdkafka's default partitioner, which dpstream's own producers use
 * unless the config's "kafka" object sets "partitioner" (Java clients
 * default to murmur2_random: set that when Java services produce). */
#define DP_STREAM_DEFAULT_PARTITIONER "consistent_random"

/* 1 if `name` is a librdkafka partitioner that maps a non-empty key to one
 * fixed partition (the processor checks every update against it). */
int dp_stream_partitioner_known(const char *name);

/* Parse and validate.  Returns DP_OK, DP_EINVAL (message in errstr), DP_EIO
 * (file) or DP_ENOMEM.  *out is NULL on failure. */
int dp_stream_config_from_json(dp_stream_config **out, const json_t *root,
                               char *errstr, size_t errstr_size);
int dp_stream_config_parse(dp_stream_config **out, const char *text, size_t len,
                           char *errstr, size_t errstr_size);
int dp_stream_config_load_file(dp_stream_config **out, const char *path,
                               char *errstr, size_t errstr_size);
void dp_stream_config_free(dp_stream_config *c);

/* The codec options of the configured wire format ("wire"): the one place
 * every Kafka reader and writer (processor, produce, load, export, mock
 * harness) gets its framing from, so they can never disagree. */
void dp_stream_config_codec_options(const dp_stream_config *c, dp_codec_options *out);

/* Confluent framing without a registry: refuse (naming the field) unless
 * wire.schema_ids has an id for every schema in `types`, a mask of
 * DP_STREAM_IDS_OF(DP_CODEC_...) bits — the schemas `command` reads or
 * writes.  DP_OK for plain framing and with a registry. */
#define DP_STREAM_IDS_OF(type) (1u << (unsigned)(type))
#define DP_STREAM_IDS_ALL ((1u << DP_CODEC_TYPE_COUNT) - 1u)
int dp_stream_config_require_ids(const dp_stream_config *c, unsigned types, const char *command, char *errstr,
                                 size_t n);

/* The route for a stream id (first match wins), or NULL. */
const dp_stream_route *dp_stream_config_route(const dp_stream_config *c,
                                              const char *stream_id, size_t len);

#endif
