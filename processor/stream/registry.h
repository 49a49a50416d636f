/* registry.h — a small client of the Confluent Schema Registry REST API
 * (what Confluent's registry, Apicurio's /apis/ccompat/v7 and Redpanda
 * serve), over libcurl.
 *
 * The config's "schema_registry" object (README, "Schema Registry"):
 *   {"url": "http://registry:8081",                 required; http or https
 *    "basic.auth.credentials.source": "USER_INFO",  optional; the only source
 *    "basic.auth.user.info": "user:password",       optional; HTTP basic auth
 *    "ssl.ca.location": "/path/ca.pem",             optional; CA bundle
 *    "ssl.certificate.location": "/path/cert.pem",  optional; client certificate
 *    "ssl.key.location": "/path/key.pem",           optional; its key
 *    "ssl.key.password": "…",                       optional
 *    "enable.ssl.certificate.verification": true,   optional
 *    "request.timeout.ms": 10000,                   optional; per attempt
 *    "max.retries": 3,                              optional
 *    "retries.wait.ms": 1000,                       optional; first backoff
 *    "retries.max.wait.ms": 20000,                  optional; backoff cap
 *    "compatibility": "BACKWARD"}                   optional; null: leave alone
 * Key names follow Confluent's clients.  A request is retried on transport
 * errors, 408, 429 and 5xx, with backoff doubling from retries.wait.ms up to
 * retries.max.wait.ms; after max.retries it fails with DP_EIO and the last
 * error — callers fail closed (the processor stops rather than guess).
 * The user info and key password are never logged or printed. */
#ifndef DP_STREAM_REGISTRY_H
#define DP_STREAM_REGISTRY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dp_registry_config {
    char *url;                 /* without a trailing slash */
    char *user_info;           /* "user:password" or NULL */
    char *ca_location;
    char *cert_location;
    char *key_location;
    char *key_password;
    int   verify_peer;         /* enable.ssl.certificate.verification */
    long  request_timeout_ms;
    int   max_retries;
    long  retry_wait_ms;
    long  retry_max_wait_ms;
    char *compatibility;       /* level dpstream sets on its subjects, NULL: none */
} dp_registry_config;

/* Parse the "schema_registry" object; errors name the key
 * ("schema_registry.max.retries: …").  *out is NULL on failure. */
int  dp_registry_config_parse(dp_registry_config **out, const json_t *obj, char *errstr, size_t errstr_size);
void dp_registry_config_free(dp_registry_config *c);

typedef struct dp_registry dp_registry;

/* The client keeps its own copy of the config. */
int  dp_registry_new(dp_registry **out, const dp_registry_config *cfg, char *errstr, size_t errstr_size);
void dp_registry_free(dp_registry *r);

/* POST /subjects/{subject}/versions: register (or find) schema_json under
 * subject; *id is its global id.  DP_ESCHEMA if the registry refuses it as
 * incompatible with the subject's earlier versions (409) or invalid (422). */
int dp_registry_register(dp_registry *r, const char *subject, const char *schema_json, uint32_t *id,
                         char *errstr, size_t errstr_size);
/* POST /subjects/{subject}: the id of schema_json if it is registered
 * under subject (nothing is registered); DP_ENOTFOUND if it is not. */
int dp_registry_lookup(dp_registry *r, const char *subject, const char *schema_json, uint32_t *id,
                       char *errstr, size_t errstr_size);
/* GET /schemas/ids/{id}: *schema_json (malloc'd) is the schema's text.
 * DP_ENOTFOUND if the registry has no schema with that id (404);
 * DP_ESCHEMA if it is not an Avro schema (schemaType JSON or PROTOBUF). */
int dp_registry_schema(dp_registry *r, uint32_t id, char **schema_json, char *errstr, size_t errstr_size);
/* PUT /config/{subject}: the subject's compatibility level. */
int dp_registry_set_compatibility(dp_registry *r, const char *subject, const char *level,
                                  char *errstr, size_t errstr_size);

#endif
