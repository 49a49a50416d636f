/* http_server.c — see http_server.h.
 *
 * Every response is built from one acquired metrics view (or, for the
 * health endpoints, from the metrics' atomics) and copied into the
 * response, so the view is given back before the bytes go out and a slow
 * client holds nothing of the loop's. */
#include "app/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/dp_error.h"
#include "stream/log.h"

struct dp_http_server {
    struct MHD_Daemon *d;
    dp_metrics        *m;
    unsigned           port;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum MHD_Result send_bytes(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
                                  size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* the page loads only its own script and style and talks only to us */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                            "img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_json_status(struct MHD_Connection *c, unsigned status, const char *state,
                                        const char *reason)
{
    char body[1024], esc[700];
    size_t k = 0;
    for (const char *p = reason; p && *p && k + 7 < sizeof esc; p++) {   /* a JSON string */
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\')
            esc[k++] = '\\', esc[k++] = (char)ch;
        else if (ch < 0x20)
            k += (size_t)snprintf(esc + k, sizeof esc - k, "\\u%04x", ch);
        else
            esc[k++] = (char)ch;
    }
    esc[k] = '\0';
    int n = reason ? snprintf(body, sizeof body, "{\"status\":\"%s\",\"reason\":\"%s\"}\n", state, esc)
                   : snprintf(body, sizeof body, "{\"status\":\"%s\"}\n", state);
    return send_bytes(c, status, "application/json", body, (size_t)n);
}

/* %XX and '+' decoding of a path segment; 0 on a malformed escape or NUL. */
static int url_decode(const char *s, size_t len, char *out, size_t out_size, size_t *out_len)
{
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (k + 1 >= out_size)
            return 0;
        if (s[i] == '%') {
            unsigned v;
            char hex[3] = {0};
            if (i + 2 >= len)
                return 0;
            hex[0] = s[i + 1];
            hex[1] = s[i + 2];
            if (sscanf(hex, "%2x", &v) != 1 || v == 0)
                return 0;
            out[k++] = (char)v;
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    *out_len = k;
    return 1;
}

static enum MHD_Result serve_history(dp_http_server *s, struct MHD_Connection *c, const char *url)
{
    static const char PREFIX[] = "/api/streams/", SUFFIX[] = "/history";
    size_t ul = strlen(url), pl = sizeof PREFIX - 1, sl = sizeof SUFFIX - 1;
    char id[1024];
    size_t id_len;
    if (ul <= pl + sl || strcmp(url + ul - sl, SUFFIX) != 0 ||
        !url_decode(url + pl, ul - pl - sl, id, sizeof id, &id_len))
        return send_json_status(c, MHD_HTTP_NOT_FOUND, "not found", "no such resource");
    dp_metrics_view *v = dp_metrics_acquire(s->m);
    size_t len;
    const char *h = dp_metrics_view_history(v, id, id_len, &len);
    enum MHD_Result rc = h ? send_bytes(c, MHD_HTTP_OK, "application/json", h, len)
                           : send_json_status(c, MHD_HTTP_NOT_FOUND, "not found", "no released step of that stream");
    dp_metrics_release(s->m, v);
    return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **state)
{
    (void)version;
    (void)upload_data;
    dp_http_server *s = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return send_json_status(c, MHD_HTTP_METHOD_NOT_ALLOWED, "error", "only GET and HEAD");
    if (*upload_data_size != 0)   /* a GET with a body: not ours to read */
        return send_json_status(c, MHD_HTTP_BAD_REQUEST, "error", "unexpected request body");
    (void)state;
    char why[640];
    if (strcmp(url, "/metrics") == 0) {
        dp_metrics_view *v = dp_metrics_acquire(s->m);
        size_t len;
        const char *t = dp_metrics_view_prometheus(v, &len);
        enum MHD_Result rc = send_bytes(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", t, len);
        dp_metrics_release(s->m, v);
        return rc;
    }
    if (strcmp(url, "/healthz") == 0)
        return dp_metrics_alive(s->m, mono_ms(), why, sizeof why)
                   ? send_json_status(c, MHD_HTTP_OK, "ok", NULL)
                   : send_json_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, "stuck", why);
    if (strcmp(url, "/readyz") == 0)
        return dp_metrics_ready(s->m, why, sizeof why) ? send_json_status(c, MHD_HTTP_OK, "ready", NULL)
                                                     : send_json_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready", why);
    if (strcmp(url, "/api/streams") == 0) {
        dp_metrics_view *v = dp_metrics_acquire(s->m);
        size_t len;
        const char *t = dp_metrics_view_streams(v, &len);
        enum MHD_Result rc = send_bytes(c, MHD_HTTP_OK, "application/json", t, len);
        dp_metrics_release(s->m, v);
        return rc;
    }
    if (strncmp(url, "/api/streams/", 13) == 0)
        return serve_history(s, c, url);
    const char *path = strcmp(url, "/") == 0 ? "/index.html" : url;
    for (size_t i = 0; i < dp_http_assets_n; i++)
        if (strcmp(path, dp_http_assets[i].path) == 0)
            return send_bytes(c, MHD_HTTP_OK, dp_http_assets[i].content_type, dp_http_assets[i].body,
                              dp_http_assets[i].len);
    return send_json_status(c, MHD_HTTP_NOT_FOUND, "not found", "no such resource");
}

/* "HOST:PORT" or "[V6]:PORT" -> a numeric socket address (no DNS: a bind
 * address must be explicit). */
static int parse_address(const char *a, struct sockaddr_storage *ss, socklen_t *len, char *errstr, size_t n)
{
    char host[256];
    const char *colon = strrchr(a, ':');
    if (!colon || colon == a || !colon[1])
        return dp_err(errstr, n, DP_EINVAL, "--http: expected HOST:PORT, got '%s'", a);
    size_t hl = (size_t)(colon - a);
    if (a[0] == '[' && hl >= 2 && a[hl - 1] == ']')
        a++, hl -= 2;
    if (hl >= sizeof host)
        return dp_err(errstr, n, DP_EINVAL, "--http: host too long");
    memcpy(host, a, hl);
    host[hl] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, colon + 1, &hints, &res);
    if (gai != 0 || !res)
        return dp_err(errstr, n, DP_EINVAL, "--http: '%s' is not a numeric HOST:PORT (%s)", a, gai_strerror(gai));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return DP_OK;
}

int dp_http_start(dp_http_server **out, const dp_http_options *o, dp_metrics *m, char *errstr, size_t errstr_size)
{
    *out = NULL;
    struct sockaddr_storage ss;
    socklen_t sl;
    int rc = parse_address(o->address, &ss, &sl, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    dp_http_server *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    s->m = m;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_CONNECTION_LIMIT, o->max_connections ? o->max_connections : 32u,
                            MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s ? o->timeout_s : 10u,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->memory_limit ? o->memory_limit : (size_t)32768,
                            MHD_OPTION_END);
    if (!s->d) {
        free(s);
        return dp_err(errstr, errstr_size, DP_EIO, "--http: cannot listen on %s (in use, or not an address of this host)",
                      o->address);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    *out = s;
    return DP_OK;
}

unsigned dp_http_port(const dp_http_server *s) { return s->port; }

void dp_http_stop(dp_http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    free(s);
}
