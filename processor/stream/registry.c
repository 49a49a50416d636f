/* registry.c — the Schema Registry client (registry.h). */
#include "stream/registry.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/dp_error.h"

#define CONTENT_TYPE "application/vnd.schemaregistry.v1+json"

struct dp_registry {
    dp_registry_config cfg;
    CURL              *curl;
    dp_buf             resp;
};

/* --- config ------------------------------------------------------------------ */

void dp_registry_config_free(dp_registry_config *c)
{
    if (!c)
        return;
    free(c->url);
    free(c->user_info);
    free(c->ca_location);
    free(c->cert_location);
    free(c->key_location);
    free(c->key_password);
    free(c->compatibility);
    free(c);
}

static int get_string(const json_t *v, const char *key, char **out, char *errstr, size_t n)
{
    if (!json_is_string(v) || json_string_length(v) == 0)
        return dp_err(errstr, n, DP_EINVAL, "schema_registry.%s: must be a non-empty string", key);
    if (!(*out = strdup(json_string_value(v))))
        return dp_err(errstr, n, DP_ENOMEM, "out of memory");
    return DP_OK;
}

static int get_int(const json_t *v, const char *key, long lo, long hi, long *out, char *errstr, size_t n)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return dp_err(errstr, n, DP_EINVAL, "schema_registry.%s: must be an integer in %ld..%ld", key, lo, hi);
    *out = (long)json_integer_value(v);
    return DP_OK;
}

static const char *const LEVELS[] = {"BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
                                     "FULL", "FULL_TRANSITIVE", "NONE"};

static int parse_key(dp_registry_config *c, const char *key, const json_t *v, char *errstr, size_t n)
{
    long x;
    int rc;
    if (strcmp(key, "url") == 0) {
        if ((rc = get_string(v, key, &c->url, errstr, n)) != DP_OK)
            return rc;
        size_t len = strlen(c->url);
        while (len > 0 && c->url[len - 1] == '/')
            c->url[--len] = '\0';
        if (strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0)
            return dp_err(errstr, n, DP_EINVAL, "schema_registry.url: must start with http:// or https://");
        return DP_OK;
    }
    if (strcmp(key, "basic.auth.credentials.source") == 0) {
        if (!json_is_string(v) || strcmp(json_string_value(v), "USER_INFO") != 0)
            return dp_err(errstr, n, DP_EINVAL, "schema_registry.%s: only \"USER_INFO\" is supported", key);
        return DP_OK;
    }
    if (strcmp(key, "basic.auth.user.info") == 0) {
        if ((rc = get_string(v, key, &c->user_info, errstr, n)) != DP_OK)
            return rc;
        /* the value itself is a secret: the message names only the key */
        if (!strchr(c->user_info, ':'))
            return dp_err(errstr, n, DP_EINVAL, "schema_registry.%s: must be \"user:password\"", key);
        return DP_OK;
    }
    if (strcmp(key, "ssl.ca.location") == 0)
        return get_string(v, key, &c->ca_location, errstr, n);
    if (strcmp(key, "ssl.certificate.location") == 0)
        return get_string(v, key, &c->cert_location, errstr, n);
    if (strcmp(key, "ssl.key.location") == 0)
        return get_string(v, key, &c->key_location, errstr, n);
    if (strcmp(key, "ssl.key.password") == 0)
        return get_string(v, key, &c->key_password, errstr, n);
    if (strcmp(key, "enable.ssl.certificate.verification") == 0) {
        if (!json_is_boolean(v))
            return dp_err(errstr, n, DP_EINVAL, "schema_registry.%s: must be true or false", key);
        c->verify_peer = json_is_true(v);
        return DP_OK;
    }
    if (strcmp(key, "request.timeout.ms") == 0) {
        if ((rc = get_int(v, key, 100, 600000, &x, errstr, n)) == DP_OK)
            c->request_timeout_ms = x;
        return rc;
    }
    if (strcmp(key, "max.retries") == 0) {
        if ((rc = get_int(v, key, 0, 100, &x, errstr, n)) == DP_OK)
            c->max_retries = (int)x;
        return rc;
    }
    if (strcmp(key, "retries.wait.ms") == 0) {
        if ((rc = get_int(v, key, 0, 600000, &x, errstr, n)) == DP_OK)
            c->retry_wait_ms = x;
        return rc;
    }
    if (strcmp(key, "retries.max.wait.ms") == 0) {
        if ((rc = get_int(v, key, 0, 600000, &x, errstr, n)) == DP_OK)
            c->retry_max_wait_ms = x;
        return rc;
    }
    if (strcmp(key, "compatibility") == 0) {
        free(c->compatibility);
        c->compatibility = NULL;
        if (json_is_null(v))
            return DP_OK;
        for (size_t i = 0; json_is_string(v) && i < sizeof LEVELS / sizeof LEVELS[0]; i++)
            if (strcmp(json_string_value(v), LEVELS[i]) == 0)
                return (c->compatibility = strdup(LEVELS[i])) ? DP_OK : dp_err(errstr, n, DP_ENOMEM, "out of memory");
        return dp_err(errstr, n, DP_EINVAL,
                      "schema_registry.compatibility: must be null or one of BACKWARD, BACKWARD_TRANSITIVE, FORWARD, "
                      "FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE");
    }
    return dp_err(errstr, n, DP_EINVAL,
                  "schema_registry: unknown key \"%s\" (known: url, basic.auth.credentials.source, "
                  "basic.auth.user.info, ssl.ca.location, ssl.certificate.location, ssl.key.location, "
                  "ssl.key.password, enable.ssl.certificate.verification, request.timeout.ms, max.retries, "
                  "retries.wait.ms, retries.max.wait.ms, compatibility)", key);
}

int dp_registry_config_parse(dp_registry_config **out, const json_t *obj, char *errstr, size_t errstr_size)
{
    *out = NULL;
    if (!json_is_object(obj))
        return dp_err(errstr, errstr_size, DP_EINVAL, "schema_registry: must be an object");
    dp_registry_config *c = calloc(1, sizeof *c);
    if (!c || !(c->compatibility = strdup("BACKWARD"))) {
        free(c);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    c->verify_peer = 1;
    c->request_timeout_ms = 10000;
    c->max_retries = 3;
    c->retry_wait_ms = 1000;
    c->retry_max_wait_ms = 20000;
    const char *key;
    json_t *v;
    int rc = DP_OK;
    json_object_foreach((json_t *)obj, key, v) {
        if ((rc = parse_key(c, key, v, errstr, errstr_size)) != DP_OK)
            break;
    }
    if (rc == DP_OK && !c->url)
        rc = dp_err(errstr, errstr_size, DP_EINVAL, "schema_registry.url: required");
    if (rc == DP_OK && (c->cert_location != NULL) != (c->key_location != NULL))
        rc = dp_err(errstr, errstr_size, DP_EINVAL,
                    "schema_registry: ssl.certificate.location and ssl.key.location go together");
    if (rc != DP_OK) {
        dp_registry_config_free(c);
        return rc;
    }
    *out = c;
    return DP_OK;
}

/* --- the client ---------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;
static void curl_init(void) { curl_init_rc = (int)curl_global_init(CURL_GLOBAL_DEFAULT); }

static char *dup_or_null(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

void dp_registry_free(dp_registry *r)
{
    if (!r)
        return;
    if (r->curl)
        curl_easy_cleanup(r->curl);
    free(r->cfg.url);
    free(r->cfg.user_info);
    free(r->cfg.ca_location);
    free(r->cfg.cert_location);
    free(r->cfg.key_location);
    free(r->cfg.key_password);
    free(r->cfg.compatibility);
    dp_buf_free(&r->resp);
    free(r);
}

int dp_registry_new(dp_registry **out, const dp_registry_config *cfg, char *errstr, size_t errstr_size)
{
    *out = NULL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != 0)
        return dp_err(errstr, errstr_size, DP_EIO, "schema registry: libcurl initialisation failed");
    dp_registry *r = calloc(1, sizeof *r);
    if (!r)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int oom = 0;
    r->cfg = *cfg;
    r->cfg.url = dup_or_null(cfg->url, &oom);
    r->cfg.user_info = dup_or_null(cfg->user_info, &oom);
    r->cfg.ca_location = dup_or_null(cfg->ca_location, &oom);
    r->cfg.cert_location = dup_or_null(cfg->cert_location, &oom);
    r->cfg.key_location = dup_or_null(cfg->key_location, &oom);
    r->cfg.key_password = dup_or_null(cfg->key_password, &oom);
    r->cfg.compatibility = dup_or_null(cfg->compatibility, &oom);
    dp_buf_init(&r->resp);
    if (oom || !(r->curl = curl_easy_init())) {
        dp_registry_free(r);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "schema registry: out of memory");
    }
    *out = r;
    return DP_OK;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *opaque)
{
    dp_buf *b = opaque;
    /* A registry answer is a schema or an id; anything this large is not one. */
    if (b->len + size * nmemb > 16u << 20)
        return 0;
    dp_buf_put_bytes(b, p, size * nmemb);
    return b->failed ? 0 : size * nmemb;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One request with retries.  *status is the final HTTP status; the body is
 * in r->resp (NUL-terminated).  DP_EIO when no attempt got an answer that
 * is not worth retrying. */
static int request(dp_registry *r, const char *method, const char *path, const char *body, long *status,
                   char *errstr, size_t errstr_size)
{
    char url[2048];
    if ((size_t)snprintf(url, sizeof url, "%s%s", r->cfg.url, path) >= sizeof url)
        return dp_err(errstr, errstr_size, DP_EINVAL, "schema registry: URL too long");
    CURL *h = r->curl;
    struct curl_slist *hdrs = NULL, *h1, *h2;
    h1 = curl_slist_append(hdrs, "Accept: " CONTENT_TYPE ", application/json");
    h2 = h1 ? curl_slist_append(h1, "Content-Type: " CONTENT_TYPE) : NULL;
    if (!h2) {
        curl_slist_free_all(h1);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "schema registry: out of memory");
    }
    hdrs = h2;
    long wait = r->cfg.retry_wait_ms;
    int rc = DP_EIO;
    char last[512] = "no attempt";
    for (int attempt = 0; attempt <= r->cfg.max_retries; attempt++) {
        if (attempt > 0) {
            sleep_ms(wait);
            wait = wait * 2 > r->cfg.retry_max_wait_ms ? r->cfg.retry_max_wait_ms : wait * 2;
        }
        curl_easy_reset(h);
        r->resp.len = 0;
        r->resp.failed = 0;
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->cfg.request_timeout_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, r->cfg.request_timeout_ms);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &r->resp);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        if (body)
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        if (r->cfg.user_info) {
            curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
            curl_easy_setopt(h, CURLOPT_USERPWD, r->cfg.user_info);
        }
        if (r->cfg.ca_location)
            curl_easy_setopt(h, CURLOPT_CAINFO, r->cfg.ca_location);
        if (r->cfg.cert_location)
            curl_easy_setopt(h, CURLOPT_SSLCERT, r->cfg.cert_location);
        if (r->cfg.key_location)
            curl_easy_setopt(h, CURLOPT_SSLKEY, r->cfg.key_location);
        if (r->cfg.key_password)
            curl_easy_setopt(h, CURLOPT_KEYPASSWD, r->cfg.key_password);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, r->cfg.verify_peer ? 1L : 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, r->cfg.verify_peer ? 2L : 0L);
        CURLcode cc = curl_easy_perform(h);
        dp_buf_put_u8(&r->resp, 0);
        if (r->resp.failed) {
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "schema registry: out of memory");
            break;
        }
        r->resp.len--;
        if (cc != CURLE_OK) {
            snprintf(last, sizeof last, "%s", curl_easy_strerror(cc));
            continue;
        }
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        if (*status == 408 || *status == 429 || *status >= 500) {
            snprintf(last, sizeof last, "HTTP %ld: %.300s", *status, (const char *)r->resp.data);
            continue;
        }
        rc = DP_OK;
        break;
    }
    curl_slist_free_all(hdrs);
    if (rc == DP_EIO)
        dp_err(errstr, errstr_size, DP_EIO, "schema registry %s %s%s: %s (after %d attempt%s)", method, r->cfg.url,
               path, last, r->cfg.max_retries + 1, r->cfg.max_retries ? "s" : "");
    return rc;
}

/* The registry's own error sentence ({"error_code": …, "message": …}). */
static void answer_text(const dp_registry *r, long status, char *out, size_t n)
{
    json_t *j = json_loadb((const char *)r->resp.data, r->resp.len, 0, NULL);
    const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
    snprintf(out, n, "HTTP %ld: %.300s", status, msg ? msg : (const char *)r->resp.data);
    json_decref(j);
}

static int subject_path(dp_registry *r, const char *fmt, const char *subject, char *out, size_t n,
                        char *errstr, size_t errstr_size)
{
    char *esc = curl_easy_escape(r->curl, subject, 0);
    if (!esc)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "schema registry: out of memory");
    int w = snprintf(out, n, fmt, esc);
    curl_free(esc);
    if (w < 0 || (size_t)w >= n)
        return dp_err(errstr, errstr_size, DP_EINVAL, "schema registry: subject \"%s\" too long", subject);
    return DP_OK;
}

/* POST {"schema": schema_json} to path; the answer's "id". */
static int post_schema(dp_registry *r, const char *path, const char *subject, const char *schema_json, int lookup,
                       uint32_t *id, char *errstr, size_t errstr_size)
{
    char why[400];
    json_t *req = json_pack("{s:s}", "schema", schema_json);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "schema registry: out of memory");
    long status = 0;
    int rc = request(r, "POST", path, body, &status, errstr, errstr_size);
    free(body);
    if (rc != DP_OK)
        return rc;
    const char *what = lookup ? "looking up the schema of" : "registering under";
    if (lookup && status == 404) {
        answer_text(r, status, why, sizeof why);
        return dp_err(errstr, errstr_size, DP_ENOTFOUND,
                      "schema registry: dpstream's schema is not registered under subject %s (%s); `dpstream run` or "
                      "`produce` registers it", subject, why);
    }
    if (!lookup && (status == 409 || status == 422)) {
        answer_text(r, status, why, sizeof why);
        return dp_err(errstr, errstr_size, DP_ESCHEMA, "schema registry refused the schema under subject %s: %s",
                      subject, why);
    }
    if (status != 200) {
        answer_text(r, status, why, sizeof why);
        return dp_err(errstr, errstr_size, DP_EIO, "schema registry: %s subject %s: %s", what, subject, why);
    }
    json_t *j = json_loadb((const char *)r->resp.data, r->resp.len, 0, NULL);
    json_t *jid = j ? json_object_get(j, "id") : NULL;
    json_int_t v = json_is_integer(jid) ? json_integer_value(jid) : 0;
    json_decref(j);
    if (v < 1 || v > INT32_MAX)
        return dp_err(errstr, errstr_size, DP_EIO, "schema registry: %s subject %s: no valid id in %.200s", what,
                      subject, (const char *)r->resp.data);
    *id = (uint32_t)v;
    return DP_OK;
}

int dp_registry_register(dp_registry *r, const char *subject, const char *schema_json, uint32_t *id,
                         char *errstr, size_t errstr_size)
{
    char path[1024];
    int rc = subject_path(r, "/subjects/%s/versions", subject, path, sizeof path, errstr, errstr_size);
    return rc != DP_OK ? rc : post_schema(r, path, subject, schema_json, 0, id, errstr, errstr_size);
}

int dp_registry_lookup(dp_registry *r, const char *subject, const char *schema_json, uint32_t *id,
                       char *errstr, size_t errstr_size)
{
    char path[1024];
    int rc = subject_path(r, "/subjects/%s", subject, path, sizeof path, errstr, errstr_size);
    return rc != DP_OK ? rc : post_schema(r, path, subject, schema_json, 1, id, errstr, errstr_size);
}

int dp_registry_schema(dp_registry *r, uint32_t id, char **schema_json, char *errstr, size_t errstr_size)
{
    *schema_json = NULL;
    char path[64], why[400];
    snprintf(path, sizeof path, "/schemas/ids/%" PRIu32, id);
    long status = 0;
    int rc = request(r, "GET", path, NULL, &status, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if (status == 404) {
        answer_text(r, status, why, sizeof why);
        return dp_err(errstr, errstr_size, DP_ENOTFOUND, "schema registry has no schema id %" PRIu32 " (%s)", id,
                      why);
    }
    if (status != 200) {
        answer_text(r, status, why, sizeof why);
        return dp_err(errstr, errstr_size, DP_EIO, "schema registry: schema id %" PRIu32 ": %s", id, why);
    }
    json_t *j = json_loadb((const char *)r->resp.data, r->resp.len, 0, NULL);
    const char *type = j ? json_string_value(json_object_get(j, "schemaType")) : NULL;
    const char *text = j ? json_string_value(json_object_get(j, "schema")) : NULL;
    if (type && strcmp(type, "AVRO") != 0) {
        rc = dp_err(errstr, errstr_size, DP_ESCHEMA, "schema id %" PRIu32 " is a %s schema, not Avro", id, type);
    } else if (!text) {
        rc = dp_err(errstr, errstr_size, DP_EIO, "schema registry: schema id %" PRIu32 ": no schema in %.200s", id,
                    (const char *)r->resp.data);
    } else if (!(*schema_json = strdup(text))) {
        rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    json_decref(j);
    return rc;
}

int dp_registry_set_compatibility(dp_registry *r, const char *subject, const char *level,
                                  char *errstr, size_t errstr_size)
{
    char path[1024], why[400], body[64];
    int rc = subject_path(r, "/config/%s", subject, path, sizeof path, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    snprintf(body, sizeof body, "{\"compatibility\":\"%s\"}", level);
    long status = 0;
    if ((rc = request(r, "PUT", path, body, &status, errstr, errstr_size)) != DP_OK)
        return rc;
    if (status != 200) {
        answer_text(r, status, why, sizeof why);
        return dp_err(errstr, errstr_size, DP_EIO, "schema registry: setting compatibility %s on subject %s: %s",
                      level, subject, why);
    }
    return DP_OK;
}
