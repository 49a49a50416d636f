/* registry_subjects.h — dpstream's schemas in a schema registry: which
 * subject each is registered under, and the registration at startup.
 *
 * Subjects follow Confluent's TopicRecordNameStrategy,
 * "<topic>-<record full name>", e.g. "dpstream.synthetic-org.dpstream.v1.ReleaseManifest":
 *   * the synthetic topic carries two record types (SyntheticRecord and
 *     ReleaseManifest), which the default TopicNameStrategy ("<topic>-value",
 *     one schema line per topic) cannot hold;
 *   * unlike RecordNameStrategy (the record name alone), deployments with
 *     different topic prefixes that share a registry evolve their schemas,
 *     and set their compatibility levels, independently.
 * Producers of the updates topic on Confluent's serializers use the same
 * strategy (subject.name.strategy = topic_record_subject_name_strategy /
 * TopicRecordNameStrategy) so that their Update versions are checked
 * against dpstream's under one subject. */
#ifndef DP_STREAM_REGISTRY_SUBJECTS_H
#define DP_STREAM_REGISTRY_SUBJECTS_H

#include <stddef.h>

#include "codec/codec.h"
#include "stream/registry.h"
#include "stream/stream_config.h"

/* The topic of c that carries message type t (the state topic for Snapshot). */
const char *dp_registry_topic_of(const dp_stream_config *c, dp_codec_type t);
/* "<topic>-org.dpstream.v1.<Name>" into out; DP_OK or DP_ERANGE. */
int dp_registry_subject(const dp_stream_config *c, dp_codec_type t, char *out, size_t n);

/* How dp_registry_setup gets the ids. */
typedef enum dp_registry_mode {
    DP_REGISTRY_REGISTER,   /* writers: register (idempotent) and set the compatibility level */
    DP_REGISTRY_LOOKUP,     /* read-only tools: find the ids, change nothing in the registry */
} dp_registry_mode;

/* With a "schema_registry" in c: connect, register (or look up) the six
 * schemas under their subjects, and store the ids in c (c->schema_ids;
 * framing is CONFLUENT already), so every codec made from c frames with
 * them.  *out is the client, for the processor's lookups of writer schemas
 * (NULL when c has no registry).  Fails (DP_EIO, DP_ESCHEMA, DP_ENOTFOUND
 * for a lookup of a schema never registered) with the registry's answer:
 * dpstream does not run on ids it could not get. */
int dp_registry_setup(dp_stream_config *c, dp_registry_mode mode, dp_registry **out, char *errstr,
                      size_t errstr_size);

#endif
