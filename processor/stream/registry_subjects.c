/* registry_subjects.c — registration of dpstream's schemas (registry_subjects.h). */
#include "stream/registry_subjects.h"

#include <stdio.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/log.h"

/* The namespace of every schema in schemas/. */
#define NAMESPACE "org.dpstream.v1"

const char *dp_registry_topic_of(const dp_stream_config *c, dp_codec_type t)
{
    switch (t) {
    case DP_CODEC_UPDATE:           return c->topic_updates;
    case DP_CODEC_SYNTHETIC_RECORD: return c->topic_synthetic;
    case DP_CODEC_RELEASE_MANIFEST: return c->topic_synthetic;
    case DP_CODEC_BUDGET_EVENT:     return c->topic_budget;
    case DP_CODEC_DEAD_LETTER:      return c->topic_dead_letter;
    case DP_CODEC_SNAPSHOT:         return c->topic_state;
    default:                        return NULL;
    }
}

int dp_registry_subject(const dp_stream_config *c, dp_codec_type t, char *out, size_t n)
{
    const char *topic = dp_registry_topic_of(c, t);
    if (!topic)
        return DP_EINVAL;
    int w = snprintf(out, n, "%s-" NAMESPACE ".%s", topic, dp_codec_type_name(t));
    return w < 0 || (size_t)w >= n ? DP_ERANGE : DP_OK;
}

int dp_registry_setup(dp_stream_config *c, dp_registry_mode mode, dp_registry **out, char *errstr,
                      size_t errstr_size)
{
    *out = NULL;
    if (!c->registry)
        return DP_OK;
    dp_registry *r;
    int rc = dp_registry_new(&r, c->registry, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    char subject[512];
    for (int t = 0; t < DP_CODEC_TYPE_COUNT && rc == DP_OK; t++) {
        if (dp_registry_subject(c, (dp_codec_type)t, subject, sizeof subject) != DP_OK) {
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "schema registry: subject for %s too long",
                        dp_codec_type_name((dp_codec_type)t));
            break;
        }
        uint32_t id = 0;
        const char *json = dp_codec_schema_json((dp_codec_type)t);
        if (mode == DP_REGISTRY_LOOKUP) {
            rc = dp_registry_lookup(r, subject, json, &id, errstr, errstr_size);
        } else {
            rc = dp_registry_register(r, subject, json, &id, errstr, errstr_size);
        }
        /* The level goes on after the first version exists: a registry may
         * refuse configuring a subject it does not know yet. */
        if (rc == DP_OK && mode == DP_REGISTRY_REGISTER && c->registry->compatibility)
            rc = dp_registry_set_compatibility(r, subject, c->registry->compatibility, errstr, errstr_size);
        if (rc == DP_OK) {
            c->schema_ids[t] = id;
            dp_log(DP_LOG_DEBUG, "schema registry: %s is id %u (subject %s)", dp_codec_type_name((dp_codec_type)t),
                   id, subject);
        }
    }
    if (rc != DP_OK) {
        dp_registry_free(r);
        return rc;
    }
    c->framing = DP_CODEC_FRAMING_CONFLUENT;
    *out = r;
    return DP_OK;
}
