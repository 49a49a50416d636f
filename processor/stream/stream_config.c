/* stream_config.c — load and validate the processor configuration; route
 * stream ids to synthesizers (first match wins).  See stream_config.h. */
#include "stream/stream_config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/state_record.h"
#include "synth/common/synth.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

static char *join(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *d = malloc(na + nb + 1);
    if (d) {
        memcpy(d, a, na);
        memcpy(d + na, b, nb + 1);
    }
    return d;
}

void dp_stream_config_free(dp_stream_config *c)
{
    if (!c)
        return;
    free(c->topic_prefix);
    free(c->topic_updates);
    free(c->topic_synthetic);
    free(c->topic_budget);
    free(c->topic_dead_letter);
    free(c->topic_state);
    dp_registry_config_free(c->registry);
    for (size_t i = 0; i < c->n_kafka; i++) {
        free(c->kafka[i].name);
        free(c->kafka[i].value);
    }
    free(c->kafka);
    for (size_t i = 0; i < c->n_routes; i++) {
        free(c->routes[i].match);
        free(c->routes[i].prefix);
        free(c->routes[i].synthesizer);
        json_decref(c->routes[i].config);
    }
    free(c->routes);
    free(c);
}

/* A topic name Kafka accepts: 1..249 characters of [a-zA-Z0-9._-]. */
static int topic_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 249 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

static int load_topics(dp_stream_config *c, const json_t *topics, char *errstr, size_t n)
{
    static const char *const KEYS[] = {"prefix", "updates", "synthetic", "budget", "dead_letter", "state"};
    static const char *const SUFFIX[] = {NULL, ".updates", ".synthetic", ".budget", ".deadletter", ".state"};
    char **slots[] = {&c->topic_prefix, &c->topic_updates, &c->topic_synthetic,
                      &c->topic_budget, &c->topic_dead_letter, &c->topic_state};
    const size_t NK = sizeof KEYS / sizeof KEYS[0];
    if (topics && !json_is_object(topics))
        return dp_err(errstr, n, DP_EINVAL, "topics: must be an object");
    c->topic_partitions = DP_STREAM_DEFAULT_TOPIC_PARTITIONS;
    c->topic_replication_factor = -1;
    if (topics) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)topics, key, val) {
            if (strcmp(key, "partitions") == 0) {
                if (!json_is_integer(val) || json_integer_value(val) < 1 || json_integer_value(val) > 100000)
                    return dp_err(errstr, n, DP_EINVAL, "topics.partitions: must be an integer in 1..100000 (the "
                                  "partitions of every topic dpstream creates)");
                c->topic_partitions = (int)json_integer_value(val);
                continue;
            }
            if (strcmp(key, "replication_factor") == 0) {
                if (!json_is_integer(val) || !(json_integer_value(val) == -1 ||
                                               (json_integer_value(val) >= 1 && json_integer_value(val) <= 32767)))
                    return dp_err(errstr, n, DP_EINVAL, "topics.replication_factor: must be -1 (the broker's "
                                  "default.replication.factor) or an integer in 1..32767");
                c->topic_replication_factor = (int)json_integer_value(val);
                continue;
            }
            size_t k = 0;
            while (k < NK && strcmp(key, KEYS[k]) != 0)
                k++;
            if (k == NK)
                return dp_err(errstr, n, DP_EINVAL,
                              "topics: unknown key \"%s\" (known: prefix, updates, synthetic, budget, dead_letter, state, "
                              "partitions, replication_factor)", key);
            if (!json_is_string(val) || !topic_name_ok(json_string_value(val)))
                return dp_err(errstr, n, DP_EINVAL,
                              "topics.%s: must be a Kafka topic name (1-249 characters of a-z A-Z 0-9 . _ -)", key);
            if (!(*slots[k] = dup_str(json_string_value(val))))
                return DP_ENOMEM;
        }
    }
    if (!c->topic_prefix && !(c->topic_prefix = dup_str("dpstream")))
        return DP_ENOMEM;
    for (size_t k = 1; k < NK; k++) {
        if (*slots[k])
            continue;
        if (!(*slots[k] = join(c->topic_prefix, SUFFIX[k])))
            return DP_ENOMEM;
        if (!topic_name_ok(*slots[k]))
            return dp_err(errstr, n, DP_EINVAL, "topics: derived topic name \"%s\" is too long", *slots[k]);
    }
    return DP_OK;
}

static int load_kafka(dp_stream_config *c, const json_t *kafka, char *errstr, size_t n)
{
    if (!kafka)
        return DP_OK;
    if (!json_is_object(kafka))
        return dp_err(errstr, n, DP_EINVAL, "kafka: must be an object of librdkafka properties");
    size_t cnt = json_object_size(kafka);
    if (cnt == 0)
        return DP_OK;
    c->kafka = calloc(cnt, sizeof *c->kafka);
    if (!c->kafka)
        return DP_ENOMEM;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)kafka, key, val) {
        char tmp[32];
        const char *s;
        if (key[0] == '\0')
            return dp_err(errstr, n, DP_EINVAL, "kafka: empty property name");
        if (json_is_string(val)) {
            s = json_string_value(val);
        } else if (json_is_integer(val)) {
            snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT, json_integer_value(val));
            s = tmp;
        } else if (json_is_boolean(val)) {
            s = json_is_true(val) ? "true" : "false";
        } else {
            return dp_err(errstr, n, DP_EINVAL, "kafka.%s: must be a string, integer or boolean", key);
        }
        dp_kafka_property *p = &c->kafka[c->n_kafka++];
        if (!(p->name = dup_str(key)) || !(p->value = dup_str(s)))
            return DP_ENOMEM;
        if (strcmp(key, "partitioner") == 0) {
            if (!dp_stream_partitioner_known(s))
                return dp_err(errstr, n, DP_EINVAL,
                              "kafka.partitioner: \"%s\" does not place a key in one fixed partition (use one of "
                              "consistent_random, consistent, murmur2_random, murmur2, fnv1a_random, fnv1a: "
                              "a stream's updates must all land in one partition)", s);
            c->partitioner = p->value;
        }
    }
    return DP_OK;
}

int dp_stream_partitioner_known(const char *name)
{
    static const char *const keyed[] = {"consistent_random", "consistent", "murmur2_random", "murmur2",
                                        "fnv1a_random", "fnv1a"};
    for (size_t i = 0; i < sizeof keyed / sizeof keyed[0]; i++)
        if (strcmp(name, keyed[i]) == 0)
            return 1;
    return 0;
}

/* "wire": the Kafka wire format (codec.h).  Without a registry, Confluent
 * framing needs the hand-registered id of every schema a command reads or
 * writes (a decoder refuses a frame whose id it does not know): the map may
 * name any of the six, and each command checks the ones it uses before it
 * touches Kafka (dp_stream_config_require_ids) — `produce` writes only
 * Update, so a producer's config need not carry the processor's ids. */
static int load_wire(dp_stream_config *c, const json_t *wire, char *errstr, size_t n)
{
    c->framing = c->registry ? DP_CODEC_FRAMING_CONFLUENT : DP_CODEC_FRAMING_PLAIN;
    if (!wire)
        return DP_OK;
    if (!json_is_object(wire))
        return dp_err(errstr, n, DP_EINVAL, "wire: must be an object");
    const json_t *jframing = NULL, *jids = NULL;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)wire, key, val) {
        if (strcmp(key, "framing") == 0) jframing = val;
        else if (strcmp(key, "schema_ids") == 0) jids = val;
        else
            return dp_err(errstr, n, DP_EINVAL, "wire: unknown key \"%s\" (known: framing, schema_ids)", key);
    }
    if (jframing) {
        const char *f = json_is_string(jframing) ? json_string_value(jframing) : NULL;
        if (f && strcmp(f, "plain") == 0)
            c->framing = DP_CODEC_FRAMING_PLAIN;
        else if (f && strcmp(f, "confluent") == 0)
            c->framing = DP_CODEC_FRAMING_CONFLUENT;
        else
            return dp_err(errstr, n, DP_EINVAL, "wire.framing: must be \"plain\" or \"confluent\"");
    }
    /* The registry's ids are the only ones: hand-pasted ids could only disagree. */
    if (c->registry && (c->framing != DP_CODEC_FRAMING_CONFLUENT || jids))
        return dp_err(errstr, n, DP_EINVAL,
                      "wire: with \"schema_registry\" the framing is \"confluent\" and the schema ids come from "
                      "the registry (drop \"schema_ids\")");
    if (c->registry)
        return DP_OK;
    if (c->framing == DP_CODEC_FRAMING_PLAIN) {
        if (jids)
            return dp_err(errstr, n, DP_EINVAL,
                          "wire.schema_ids: only meaningful with \"framing\": \"confluent\"");
        return DP_OK;
    }
    if (!jids || !json_is_object(jids))
        return dp_err(errstr, n, DP_EINVAL,
                      "wire.schema_ids: required object with the Schema Registry id of every schema "
                      "(Update, SyntheticRecord, ReleaseManifest, BudgetEvent, DeadLetter, Snapshot)");
    json_object_foreach((json_t *)jids, key, val) {
        int t = 0;
        while (t < DP_CODEC_TYPE_COUNT && strcmp(key, dp_codec_type_name((dp_codec_type)t)) != 0)
            t++;
        if (t == DP_CODEC_TYPE_COUNT)
            return dp_err(errstr, n, DP_EINVAL,
                          "wire.schema_ids: unknown key \"%s\" (known: Update, SyntheticRecord, ReleaseManifest, "
                          "BudgetEvent, DeadLetter, Snapshot)", key);
        /* Registry ids are positive Java ints: 1 .. 2^31-1. */
        if (!json_is_integer(val) || json_integer_value(val) < 1 || json_integer_value(val) > INT32_MAX)
            return dp_err(errstr, n, DP_EINVAL, "wire.schema_ids.%s: must be an integer in 1..2147483647", key);
        c->schema_ids[t] = (uint32_t)json_integer_value(val);
    }
    return DP_OK;
}

int dp_stream_config_require_ids(const dp_stream_config *c, unsigned types, const char *command, char *errstr,
                                 size_t n)
{
    if (c->framing != DP_CODEC_FRAMING_CONFLUENT || c->registry)
        return DP_OK;   /* plain framing needs no ids; a registry supplies them */
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
        if ((types & DP_STREAM_IDS_OF(t)) && c->schema_ids[t] == 0)
            return dp_err(errstr, n, DP_EINVAL,
                          "wire.schema_ids.%s: required with confluent framing: `%s` reads or writes %s messages",
                          dp_codec_type_name((dp_codec_type)t), command, dp_codec_type_name((dp_codec_type)t));
    return DP_OK;
}

void dp_stream_config_codec_options(const dp_stream_config *c, dp_codec_options *out)
{
    memset(out, 0, sizeof *out);
    out->framing = c->framing;
    if (c->framing == DP_CODEC_FRAMING_CONFLUENT)
        memcpy(out->schema_id, c->schema_ids, sizeof out->schema_id);
}

/* 1 if route `a` (earlier) matches every id route `b` matches. */
static int route_shadows(const dp_stream_route *a, const dp_stream_route *b)
{
    const char *bs = b->match ? b->match : b->prefix;
    if (a->match)
        return b->match && strcmp(a->match, b->match) == 0;
    return a->match_len <= b->match_len && memcmp(a->prefix, bs, a->match_len) == 0;
}

/* Build the synthesizer once with a throw-away all-zero key so that every
 * config error surfaces at load time, not when the first update of a
 * stream arrives.  Nothing is released, so the key is never used. */
static int check_synth_config(const dp_stream_route *r, size_t idx, char *errstr, size_t n)
{
    dp_key zero;
    memset(&zero, 0, sizeof zero);
    const char *id = r->match ? r->match : r->prefix;
    dp_synth_env env = {.key = &zero, .stream_id = id, .stream_id_len = r->match_len};
    if (r->match_len == 0) {
        env.stream_id = "config-check";
        env.stream_id_len = strlen(env.stream_id);
    }
    dp_synth *s = NULL;
    char err[512];
    err[0] = '\0';
    int rc = dp_synth_create(&s, r->synthesizer, r->config, &env, err, sizeof err);
    if (rc != DP_OK)
        return dp_err(errstr, n, rc == DP_ENOMEM ? DP_ENOMEM : DP_EINVAL, "streams[%zu].config: %s", idx,
                      err[0] ? err : dp_status_str(rc));
    dp_synth_destroy(s);
    return DP_OK;
}

/* "sharded": one stream over every partition of the updates topic, keyed
 * by entity (shard_key.h; docs/kafka.md §10).  Only for a synthesizer whose
 * ingest half shards by entity, and without what needs one shard to see
 * the whole stream: a step closing on a complete roster (a shard's roster
 * is complete long before the stream's; steps close on markers or the
 * timer, never on data) and max_streams (a count of streams per input
 * partition, where a sharded stream is on every partition). */
static int load_sharded(dp_stream_route *r, size_t idx, const json_t *j, char *errstr, size_t n)
{
    if (!json_is_boolean(j))
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu].sharded: must be true or false", idx);
    if (!json_is_true(j))
        return DP_OK;
    if (!dp_synth_shards_by_entity(r->synthesizer))
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu].sharded: synthesizer \"%s\" does not shard by entity (its "
                      "step's statistics are not the sum of per-entity shards': hypercube's points_per_step caps "
                      "all entities' points together; window, cumulative, adaptive, spatial, marginal shard)", idx,
                      r->synthesizer);
    if (r->gate.close_on_roster)
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu].sharded: not with close_on_complete_roster (a shard sees "
                      "only its entities; a sharded step closes on CLOSE_STEP markers or the step timer)", idx);
    if (r->max_streams)
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu].sharded: not with max_streams (it counts streams per "
                      "input partition; a sharded stream is on every partition)", idx);
    r->sharded = 1;
    return DP_OK;
}

static int load_route(dp_stream_config *c, size_t idx, const json_t *js, char *errstr, size_t n)
{
    dp_stream_route *r = &c->routes[idx];
    r->gate = dp_gate_policy_default;
    if (!json_is_object(js))
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu]: must be an object", idx);
    const json_t *jmatch = NULL, *jprefix = NULL, *jsynth = NULL, *jcfg = NULL, *jlook = NULL, *jroster = NULL,
                 *jmax = NULL, *jgroup = NULL, *jshard = NULL;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)js, key, val) {
        if (strcmp(key, "match") == 0) jmatch = val;
        else if (strcmp(key, "prefix") == 0) jprefix = val;
        else if (strcmp(key, "synthesizer") == 0) jsynth = val;
        else if (strcmp(key, "config") == 0) jcfg = val;
        else if (strcmp(key, "lookahead") == 0) jlook = val;
        else if (strcmp(key, "close_on_complete_roster") == 0) jroster = val;
        else if (strcmp(key, "max_streams") == 0) jmax = val;
        else if (strcmp(key, "budget_group") == 0) jgroup = val;
        else if (strcmp(key, "sharded") == 0) jshard = val;
        else
            return dp_err(errstr, n, DP_EINVAL,
                          "streams[%zu]: unknown key \"%s\" (known: match, prefix, synthesizer, config, lookahead, "
                          "close_on_complete_roster, max_streams, budget_group, sharded)", idx, key);
    }
    if (jlook) {
        if (!json_is_integer(jlook) || json_integer_value(jlook) < 0 ||
            json_integer_value(jlook) > DP_GATE_MAX_LOOKAHEAD)
            return dp_err(errstr, n, DP_EINVAL, "streams[%zu].lookahead: must be 0 or %d (steps of data held ahead of "
                          "the open step)", idx, DP_GATE_MAX_LOOKAHEAD);
        r->gate.lookahead = (uint32_t)json_integer_value(jlook);
    }
    if (jroster) {
        if (!json_is_boolean(jroster))
            return dp_err(errstr, n, DP_EINVAL, "streams[%zu].close_on_complete_roster: must be true or false", idx);
        r->gate.close_on_roster = json_is_true(jroster);
    }
    if ((jmatch != NULL) == (jprefix != NULL))
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu]: give exactly one of \"match\" (exact stream id) or \"prefix\"", idx);
    if (jmatch) {
        if (!json_is_string(jmatch) || json_string_length(jmatch) == 0 ||
            strlen(json_string_value(jmatch)) != json_string_length(jmatch))
            return dp_err(errstr, n, DP_EINVAL, "streams[%zu].match: must be a non-empty string", idx);
        if (!(r->match = dup_str(json_string_value(jmatch))))
            return DP_ENOMEM;
        r->match_len = strlen(r->match);
    } else {
        if (!json_is_string(jprefix) || strlen(json_string_value(jprefix)) != json_string_length(jprefix))
            return dp_err(errstr, n, DP_EINVAL, "streams[%zu].prefix: must be a string", idx);
        if (!(r->prefix = dup_str(json_string_value(jprefix))))
            return DP_ENOMEM;
        r->match_len = strlen(r->prefix);
    }
    const char *id = r->match ? r->match : r->prefix;
    if (strncmp(id, DP_STATE_RESERVED_KEY_PREFIX, sizeof DP_STATE_RESERVED_KEY_PREFIX - 1) == 0)
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu]: stream ids starting with \"%s\" are reserved for the "
                      "processor's own state records", idx, DP_STATE_RESERVED_KEY_PREFIX);
    if (!jsynth || !json_is_string(jsynth))
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu].synthesizer: required string", idx);
    if (!dp_synth_ops_find(json_string_value(jsynth)))
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu].synthesizer: unknown synthesizer \"%s\"", idx,
                      json_string_value(jsynth));
    if (!(r->synthesizer = dup_str(json_string_value(jsynth))))
        return DP_ENOMEM;
    if (!jcfg || !json_is_object(jcfg))
        return dp_err(errstr, n, DP_EINVAL, "streams[%zu].config: required object (the synthesizer's parameters)", idx);
    if (!(r->config = json_deep_copy(jcfg)))
        return DP_ENOMEM;
    if (jmax) {
        if (!r->prefix)
            return dp_err(errstr, n, DP_EINVAL, "streams[%zu].max_streams: only for a \"prefix\" route (a \"match\" "
                          "route has one stream)", idx);
        if (!json_is_integer(jmax) || json_integer_value(jmax) < 1 || json_integer_value(jmax) > 1000000)
            return dp_err(errstr, n, DP_EINVAL, "streams[%zu].max_streams: must be an integer in 1..1000000", idx);
        r->max_streams = (uint32_t)json_integer_value(jmax);
    }
    if (jgroup) {
        if (!json_is_boolean(jgroup))
            return dp_err(errstr, n, DP_EINVAL, "streams[%zu].budget_group: must be true or false", idx);
        if (json_is_true(jgroup)) {
            if (!r->max_streams)
                return dp_err(errstr, n, DP_EINVAL, "streams[%zu].budget_group: needs max_streams (the budget is "
                              "shared by at most that many streams)", idx);
            /* The route's budget is for all its streams together: each of
             * at most max_streams streams gets an equal share, so by
             * composition the same people across them are charged at most
             * the configured budget. */
            int shared = 0;
            /* A zCDP synthesizer's "epsilon" is a total (ε, δ): ρ composes
             * across the group's streams, ε at a fixed δ does not, so turn
             * it into ρ first and share that (sharing ε would give each
             * stream ρ(ε/n) ≈ ρ(ε)/n², a budget n times smaller than needed). */
            json_t *jeps = json_object_get(r->config, "epsilon");
            if (dp_synth_budget_zcdp_only(r->synthesizer) && jeps && json_is_number(jeps) &&
                !json_object_get(r->config, "rho")) {
                json_t *jd = json_object_get(r->config, "delta");
                double d = jd && json_is_number(jd) ? json_number_value(jd) : c->delta, rho;
                if (dp_zcdp_rho_for_eps_cks(json_number_value(jeps), d, &rho) != DP_OK)
                    return dp_err(errstr, n, DP_EINVAL, "streams[%zu].config.epsilon: must be > 0 (with delta in "
                                  "(0, 1))", idx);
                if (json_object_set_new(r->config, "rho", json_real(rho)) != 0 ||
                    json_object_del(r->config, "epsilon") != 0)
                    return DP_ENOMEM;
            }
            static const char *const budget_keys[] = {"rho", "epsilon"};
            for (size_t k = 0; k < 2; k++) {
                json_t *b = json_object_get(r->config, budget_keys[k]);
                if (b && json_is_number(b)) {
                    double share = json_number_value(b) / (double)r->max_streams;
                    if (json_object_set_new(r->config, budget_keys[k], json_real(share)) != 0)
                        return DP_ENOMEM;
                    shared = 1;
                }
            }
            if (!shared)
                return dp_err(errstr, n, DP_EINVAL, "streams[%zu].budget_group: the config has no numeric "
                              "\"rho\" or \"epsilon\" to share", idx);
            r->budget_group = 1;
        }
    }
    if (jshard && load_sharded(r, idx, jshard, errstr, n) != DP_OK)
        return DP_EINVAL;
    /* The file-wide δ applies to every stream that does not choose its own. */
    if (!json_object_get(r->config, "delta") &&
        json_object_set_new(r->config, "delta", json_real(c->delta)) != 0)
        return DP_ENOMEM;
    for (size_t j = 0; j < idx; j++)
        if (route_shadows(&c->routes[j], r))
            return dp_err(errstr, n, DP_EINVAL,
                          "streams[%zu]: unreachable: streams[%zu] (%s \"%s\") already matches every stream it would",
                          idx, j, c->routes[j].match ? "match" : "prefix",
                          c->routes[j].match ? c->routes[j].match : c->routes[j].prefix);
    return check_synth_config(r, idx, errstr, n);
}

int dp_stream_config_from_json(dp_stream_config **out, const json_t *root,
                               char *errstr, size_t errstr_size)
{
    *out = NULL;
    if (!json_is_object(root))
        return dp_err(errstr, errstr_size, DP_EINVAL, "the configuration must be a JSON object");
    dp_stream_config *c = calloc(1, sizeof *c);
    if (!c)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    const json_t *topics = NULL, *kafka = NULL, *delta = NULL, *streams = NULL, *wire = NULL, *registry = NULL;
    const char *key;
    json_t *val;
    int rc = DP_EINVAL;
    json_object_foreach((json_t *)root, key, val) {
        if (strcmp(key, "topics") == 0) topics = val;
        else if (strcmp(key, "kafka") == 0) kafka = val;
        else if (strcmp(key, "delta") == 0) delta = val;
        else if (strcmp(key, "streams") == 0) streams = val;
        else if (strcmp(key, "wire") == 0) wire = val;
        else if (strcmp(key, "schema_registry") == 0) registry = val;
        else {
            dp_err(errstr, errstr_size, DP_EINVAL,
                   "unknown top-level key \"%s\" (known: topics, kafka, wire, schema_registry, delta, streams)", key);
            goto fail;
        }
    }
    c->delta = DP_STREAM_CONFIG_DEFAULT_DELTA;
    if (delta) {
        if (!json_is_number(delta) || !(json_number_value(delta) > 0.0) || !(json_number_value(delta) < 1.0)) {
            dp_err(errstr, errstr_size, DP_EINVAL, "delta: must be a number in (0, 1)");
            goto fail;
        }
        c->delta = json_number_value(delta);
    }
    if ((rc = load_topics(c, topics, errstr, errstr_size)) != DP_OK)
        goto fail;
    c->partitioner = DP_STREAM_DEFAULT_PARTITIONER;
    if ((rc = load_kafka(c, kafka, errstr, errstr_size)) != DP_OK)
        goto fail;
    if (registry && (rc = dp_registry_config_parse(&c->registry, registry, errstr, errstr_size)) != DP_OK)
        goto fail;
    if ((rc = load_wire(c, wire, errstr, errstr_size)) != DP_OK)
        goto fail;
    rc = DP_EINVAL;
    if (!streams || !json_is_array(streams) || json_array_size(streams) == 0) {
        dp_err(errstr, errstr_size, DP_EINVAL, "streams: required non-empty array of routes");
        goto fail;
    }
    c->routes = calloc(json_array_size(streams), sizeof *c->routes);
    if (!c->routes) {
        rc = DP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < json_array_size(streams); i++) {
        c->n_routes = i + 1;
        if ((rc = load_route(c, i, json_array_get(streams, i), errstr, errstr_size)) != DP_OK)
            goto fail;
    }
    *out = c;
    return DP_OK;
fail:
    if (rc == DP_ENOMEM)
        dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    dp_stream_config_free(c);
    return rc;
}

int dp_stream_config_parse(dp_stream_config **out, const char *text, size_t len,
                           char *errstr, size_t errstr_size)
{
    json_error_t jerr;
    *out = NULL;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return dp_err(errstr, errstr_size, DP_EINVAL, "not valid JSON (line %d, column %d: %s)",
                      jerr.line, jerr.column, jerr.text);
    int rc = dp_stream_config_from_json(out, root, errstr, errstr_size);
    json_decref(root);
    return rc;
}

int dp_stream_config_load_file(dp_stream_config **out, const char *path,
                               char *errstr, size_t errstr_size)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot open %s", path);
    json_error_t jerr;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (!root)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: not valid JSON (line %d, column %d: %s)",
                      path, jerr.line, jerr.column, jerr.text);
    char err[768];
    int rc = dp_stream_config_from_json(out, root, err, sizeof err);
    json_decref(root);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, "%s: %s", path, err);
    return DP_OK;
}

const dp_stream_route *dp_stream_config_route(const dp_stream_config *c,
                                              const char *stream_id, size_t len)
{
    size_t reserved = sizeof DP_STATE_RESERVED_KEY_PREFIX - 1;
    if (len >= reserved && memcmp(stream_id, DP_STATE_RESERVED_KEY_PREFIX, reserved) == 0)
        return NULL;   /* the state topic's own key space */
    for (size_t i = 0; i < c->n_routes; i++) {
        const dp_stream_route *r = &c->routes[i];
        if (r->match ? (r->match_len == len && memcmp(r->match, stream_id, len) == 0)
                     : (r->match_len <= len && memcmp(r->prefix, stream_id, r->match_len) == 0))
            return r;
    }
    return NULL;
}
