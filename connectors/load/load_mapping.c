/* load_mapping.c — mapping objects and the row →
 * Update conversion of `dpstream load` (formats in load_mapping.h). */
#include "connectors/load/load_mapping.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"

static const char *const REJECT_NAMES[DP_LOAD_REJECT_COUNT] = {
    "OK", "BAD_RECORD", "TOO_LONG", "FIELD_COUNT", "MISSING_VALUE", "BAD_NUMBER",
    "UNKNOWN_LABEL", "BAD_TIMESTAMP", "BEFORE_ORIGIN", "BAD_STRING", "BAD_KIND",
    "STEP_BACKWARDS", "STEP_GAP",
};

const char *dp_load_reject_name(dp_load_reject r)
{
    return (unsigned)r < DP_LOAD_REJECT_COUNT ? REJECT_NAMES[r] : "UNKNOWN";
}

/* --- label maps --------------------------------------------------------------------- */

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const dp_label_entry *)a)->label, ((const dp_label_entry *)b)->label);
}

static void label_map_free(dp_label_map *lm)
{
    for (size_t i = 0; i < lm->n; i++)
        free(lm->items[i].label);
    free(lm->items);
    lm->items = NULL;
    lm->n = 0;
}

/* Find s[0..n) (not NUL-terminated). */
static const dp_label_entry *label_find(const dp_label_map *lm, const char *s, size_t n)
{
    size_t lo = 0, hi = lm->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *l = lm->items[mid].label;
        size_t ln = strlen(l);
        int c = memcmp(l, s, ln < n ? ln : n);
        if (c == 0)
            c = ln < n ? -1 : ln > n ? 1 : 0;
        if (c == 0)
            return &lm->items[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* {"label": integer, …} (or, for kinds, {"label": "INSERT", …}). */
static int label_map_from_json(dp_label_map *lm, const json_t *obj, int kinds, const char *path,
                               char *errstr, size_t errstr_size)
{
    if (!json_is_object(obj) || json_object_size(obj) == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s must be a non-empty object of labels", path);
    size_t n = json_object_size(obj);
    lm->items = calloc(n, sizeof *lm->items);
    if (!lm->items)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int64_t value;
        if (kinds) {
            dp_update_kind k;
            if (!json_is_string(v) || dp_update_json_kind_parse(json_string_value(v), &k) != 0 ||
                k == DP_UPDATE_CLOSE_STEP)
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s.%s must be \"REPORT\", \"INSERT\" or \"DELETE\"",
                              path, key);
            value = k;
        } else {
            if (!json_is_integer(v))
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s.%s must be an integer", path, key);
            value = (int64_t)json_integer_value(v);
        }
        if (!(lm->items[lm->n].label = strdup(key)))
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        lm->items[lm->n++].value = value;
    }
    /* sorted by label: lookups are binary searches, and the table's order
     * never depends on the JSON object's internal hash order */
    qsort(lm->items, lm->n, sizeof *lm->items, label_cmp);
    return DP_OK;
}

/* --- mapping ------------------------------------------------------------------------- */

void dp_load_mapping_free(dp_load_mapping *m)
{
    for (size_t i = 0; i < m->n_columns; i++)
        free(m->columns[i]);
    free(m->columns);
    free(m->stream_const);
    label_map_free(&m->kind_labels);
    if (m->value_labels)
        for (size_t i = 0; i < m->n_values; i++)
            label_map_free(&m->value_labels[i]);
    free(m->value_labels);
    free(m->value_cols);
    memset(m, 0, sizeof *m);
}

static int add_column(dp_load_mapping *m, const char *name, int *idx)
{
    for (size_t i = 0; i < m->n_columns; i++)
        if (strcmp(m->columns[i], name) == 0) {
            *idx = (int)i;
            return 0;
        }
    char **c = realloc(m->columns, (m->n_columns + 1) * sizeof *c);
    if (!c)
        return -1;
    m->columns = c;
    if (!(c[m->n_columns] = strdup(name)))
        return -1;
    *idx = (int)m->n_columns++;
    return 0;
}

/* Only the listed keys may appear in obj. */
static int check_keys(const json_t *obj, const char *path, const char *const *allowed,
                      char *errstr, size_t errstr_size)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int ok = 0;
        for (size_t i = 0; allowed[i]; i++)
            if (strcmp(key, allowed[i]) == 0)
                ok = 1;
        if (!ok)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: unknown key \"%s\"", path, key);
    }
    return DP_OK;
}

/* {"column": "name"} → column index. */
static int column_ref(dp_load_mapping *m, const json_t *v, const char *path, int *idx,
                      char *errstr, size_t errstr_size)
{
    static const char *const KEYS[] = {"column", NULL};
    if (!json_is_object(v))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s must be an object {\"column\": NAME}", path);
    int rc = check_keys(v, path, KEYS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    const json_t *c = json_object_get(v, "column");
    if (!json_is_string(c) || json_string_length(c) == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s.column must be a non-empty string", path);
    if (add_column(m, json_string_value(c), idx) != 0)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    return DP_OK;
}

static int parse_step(dp_load_mapping *m, const json_t *v, char *errstr, size_t errstr_size)
{
    static const char *const KEYS[] = {"column", "time_column", "format", "origin", "length", NULL};
    if (!json_is_object(v))
        return dp_err(errstr, errstr_size, DP_EINVAL, "step must be an object");
    int rc = check_keys(v, "step", KEYS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    const json_t *col = json_object_get(v, "column"), *tcol = json_object_get(v, "time_column");
    const json_t *fmt = json_object_get(v, "format"), *origin = json_object_get(v, "origin"),
                 *length = json_object_get(v, "length");
    if ((col != NULL) == (tcol != NULL))
        return dp_err(errstr, errstr_size, DP_EINVAL, "step needs exactly one of \"column\" and \"time_column\"");
    const json_t *name = col ? col : tcol;
    if (!json_is_string(name) || json_string_length(name) == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "step.%s must be a non-empty string",
                      col ? "column" : "time_column");
    if (add_column(m, json_string_value(name), &m->step_col) != 0)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    if (col) {
        m->step_from_time = 0;
        if (fmt)
            return dp_err(errstr, errstr_size, DP_EINVAL, "step.format applies only to a time_column");
        m->step_origin = 1;
        m->step_length = 1;
        if (origin) {
            if (!json_is_integer(origin))
                return dp_err(errstr, errstr_size, DP_EINVAL, "step.origin must be an integer for an integer step column");
            m->step_origin = (int64_t)json_integer_value(origin);
        }
        if (length) {
            if (!json_is_integer(length) || json_integer_value(length) < 1)
                return dp_err(errstr, errstr_size, DP_EINVAL, "step.length must be an integer >= 1");
            m->step_length = (int64_t)json_integer_value(length);
        }
        return DP_OK;
    }
    m->step_from_time = 1;
    m->time_format = DP_TS_ISO8601;
    if (fmt) {
        const char *f = json_is_string(fmt) ? json_string_value(fmt) : "";
        if (strcmp(f, "iso8601") == 0) m->time_format = DP_TS_ISO8601;
        else if (strcmp(f, "epoch_s") == 0) m->time_format = DP_TS_EPOCH_S;
        else if (strcmp(f, "epoch_ms") == 0) m->time_format = DP_TS_EPOCH_MS;
        else
            return dp_err(errstr, errstr_size, DP_EINVAL, "step.format must be \"iso8601\", \"epoch_s\" or \"epoch_ms\"");
    }
    if (!origin || !length)
        return dp_err(errstr, errstr_size, DP_EINVAL, "a time_column step needs \"origin\" and \"length\"");
    if (json_is_string(origin)) {
        if (dp_load_parse_timestamp(json_string_value(origin), json_string_length(origin), DP_TS_ISO8601,
                                    &m->step_origin) != 0)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "step.origin \"%s\" is not an ISO-8601 timestamp with a zone (e.g. 2024-01-01T00:00:00Z)",
                          json_string_value(origin));
    } else if (json_is_integer(origin)) {
        json_int_t s = json_integer_value(origin);
        if (s > INT64_MAX / 1000 || s < INT64_MIN / 1000)
            return dp_err(errstr, errstr_size, DP_EINVAL, "step.origin out of range");
        m->step_origin = (int64_t)s * 1000;
    } else {
        return dp_err(errstr, errstr_size, DP_EINVAL, "step.origin must be an ISO-8601 string or epoch seconds");
    }
    if (json_is_string(length)) {
        if (dp_load_parse_duration(json_string_value(length), &m->step_length) != 0)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "step.length \"%s\" must be <n><unit> with n >= 1 and unit ms, s, m, h, d or w",
                          json_string_value(length));
    } else if (json_is_integer(length) && json_integer_value(length) >= 1 &&
               json_integer_value(length) <= INT64_MAX / 1000) {
        m->step_length = (int64_t)json_integer_value(length) * 1000;
    } else {
        return dp_err(errstr, errstr_size, DP_EINVAL, "step.length must be seconds (integer >= 1) or a duration string");
    }
    return DP_OK;
}

static int parse_kind(dp_load_mapping *m, const json_t *v, char *errstr, size_t errstr_size)
{
    m->kind_const = DP_UPDATE_REPORT;
    m->kind_col = -1;
    if (!v)
        return DP_OK;
    if (json_is_string(v)) {
        if (dp_update_json_kind_parse(json_string_value(v), &m->kind_const) != 0 ||
            m->kind_const == DP_UPDATE_CLOSE_STEP)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "kind must be \"REPORT\", \"INSERT\" or \"DELETE\" (CLOSE_STEP markers come from --close-steps)");
        return DP_OK;
    }
    static const char *const KEYS[] = {"column", "labels", NULL};
    if (!json_is_object(v))
        return dp_err(errstr, errstr_size, DP_EINVAL, "kind must be a kind name or {\"column\": NAME}");
    int rc = check_keys(v, "kind", KEYS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    const json_t *c = json_object_get(v, "column");
    if (!json_is_string(c) || json_string_length(c) == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "kind.column must be a non-empty string");
    if (add_column(m, json_string_value(c), &m->kind_col) != 0)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    const json_t *labels = json_object_get(v, "labels");
    if (labels)
        return label_map_from_json(&m->kind_labels, labels, 1, "kind.labels", errstr, errstr_size);
    return DP_OK;
}

static int parse_payload(dp_load_mapping *m, const json_t *v, char *errstr, size_t errstr_size)
{
    static const char *const KEYS[] = {"type", "column", "columns", "labels", NULL};
    if (!json_is_object(v))
        return dp_err(errstr, errstr_size, DP_EINVAL, "payload must be an object");
    int rc = check_keys(v, "payload", KEYS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    const json_t *type = json_object_get(v, "type"), *col = json_object_get(v, "column"),
                 *cols = json_object_get(v, "columns"), *labels = json_object_get(v, "labels");
    const char *t = json_is_string(type) ? json_string_value(type) : "";
    if (strcmp(t, "category") == 0) {
        m->payload = DP_PAYLOAD_CATEGORY;
        if (!json_is_string(col) || json_string_length(col) == 0 || cols)
            return dp_err(errstr, errstr_size, DP_EINVAL, "a category payload needs \"column\": NAME (not \"columns\")");
        m->n_values = 1;
        m->value_cols = calloc(1, sizeof *m->value_cols);
        m->value_labels = calloc(1, sizeof *m->value_labels);
        if (!m->value_cols || !m->value_labels || add_column(m, json_string_value(col), &m->value_cols[0]) != 0)
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        if (labels)
            return label_map_from_json(&m->value_labels[0], labels, 0, "payload.labels", errstr, errstr_size);
        return DP_OK;
    }
    if (strcmp(t, "row") != 0 && strcmp(t, "point") != 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "payload.type must be \"category\", \"row\" or \"point\"");
    m->payload = strcmp(t, "row") == 0 ? DP_PAYLOAD_ROW : DP_PAYLOAD_POINT;
    if (col || !json_is_array(cols) || json_array_size(cols) == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "a %s payload needs \"columns\": [NAME, …] (not \"column\")", t);
    m->n_values = json_array_size(cols);
    m->value_cols = calloc(m->n_values, sizeof *m->value_cols);
    m->value_labels = calloc(m->n_values, sizeof *m->value_labels);
    if (!m->value_cols || !m->value_labels)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->n_values; i++) {
        const json_t *c = json_array_get(cols, i);
        if (!json_is_string(c) || json_string_length(c) == 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, "payload.columns[%zu] must be a non-empty string", i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(json_string_value(json_array_get(cols, j)), json_string_value(c)) == 0)
                return dp_err(errstr, errstr_size, DP_EINVAL, "payload.columns lists \"%s\" twice", json_string_value(c));
        if (add_column(m, json_string_value(c), &m->value_cols[i]) != 0)
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (labels) {
        if (m->payload == DP_PAYLOAD_POINT)
            return dp_err(errstr, errstr_size, DP_EINVAL, "payload.labels applies to category and row payloads, not points");
        if (!json_is_object(labels))
            return dp_err(errstr, errstr_size, DP_EINVAL, "payload.labels must be {COLUMN: {LABEL: INDEX, …}, …}");
        const char *key;
        json_t *lv;
        json_object_foreach((json_t *)labels, key, lv) {
            size_t i = 0;
            while (i < m->n_values && strcmp(json_string_value(json_array_get(cols, i)), key) != 0)
                i++;
            if (i == m->n_values)
                return dp_err(errstr, errstr_size, DP_EINVAL, "payload.labels names \"%s\", which is not in payload.columns", key);
            char path[256];
            snprintf(path, sizeof path, "payload.labels.%s", key);
            rc = label_map_from_json(&m->value_labels[i], lv, 0, path, errstr, errstr_size);
            if (rc != DP_OK)
                return rc;
        }
    }
    return DP_OK;
}

int dp_load_mapping_from_json(dp_load_mapping *m, const json_t *root, char *errstr, size_t errstr_size)
{
    static const char *const KEYS[] = {"stream", "step", "entity", "kind", "payload", NULL};
    memset(m, 0, sizeof *m);
    m->stream_col = m->step_col = m->entity_col = m->kind_col = -1;
    int rc;
    if (!json_is_object(root)) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL, "the mapping must be a JSON object");
        goto fail;
    }
    if ((rc = check_keys(root, "mapping", KEYS, errstr, errstr_size)) != DP_OK)
        goto fail;
    const json_t *stream = json_object_get(root, "stream");
    if (!stream) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL, "mapping needs \"stream\" (a constant id or {\"column\": NAME})");
        goto fail;
    }
    if (json_is_string(stream)) {
        if (json_string_length(stream) == 0 || !dp_id_text_valid(json_string_value(stream), json_string_length(stream))) {
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "stream must be a non-empty string");
            goto fail;
        }
        if (!(m->stream_const = strdup(json_string_value(stream)))) {
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
            goto fail;
        }
    } else if ((rc = column_ref(m, stream, "stream", &m->stream_col, errstr, errstr_size)) != DP_OK) {
        goto fail;
    }
    const json_t *step = json_object_get(root, "step");
    if (!step) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL, "mapping needs \"step\" ({\"column\": …} or {\"time_column\": …})");
        goto fail;
    }
    if ((rc = parse_step(m, step, errstr, errstr_size)) != DP_OK)
        goto fail;
    const json_t *entity = json_object_get(root, "entity");
    if (entity && (rc = column_ref(m, entity, "entity", &m->entity_col, errstr, errstr_size)) != DP_OK)
        goto fail;
    if ((rc = parse_kind(m, json_object_get(root, "kind"), errstr, errstr_size)) != DP_OK)
        goto fail;
    const json_t *payload = json_object_get(root, "payload");
    if (!payload) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL, "mapping needs \"payload\"");
        goto fail;
    }
    if ((rc = parse_payload(m, payload, errstr, errstr_size)) != DP_OK)
        goto fail;
    return DP_OK;
fail:
    dp_load_mapping_free(m);
    return rc;
}

/* --- conversion ---------------------------------------------------------------------- */

void dp_load_row_init(dp_load_row *r) { memset(r, 0, sizeof *r); }

void dp_load_row_free(dp_load_row *r)
{
    free(r->stream);
    free(r->entity);
    dp_payload_buf_free(&r->pay);
    memset(r, 0, sizeof *r);
}

static int copy_str(char **dst, size_t *cap, const char *s, size_t n)
{
    if (n + 1 > *cap) {
        size_t c = *cap ? *cap : 64;
        while (c < n + 1)
            c *= 2;
        char *d = realloc(*dst, c);
        if (!d)
            return -1;
        *dst = d;
        *cap = c;
    }
    memcpy(*dst, s, n);
    (*dst)[n] = '\0';
    return 0;
}

/* Quote at most 60 bytes of a value in a message (bytes kept as is: the
 * message is escaped when it is written as JSON). */
#define SHOW(n) ((int)((n) < 60 ? (n) : 60))

static dp_load_reject need(const dp_load_mapping *m, const char *const *vals, const size_t *lens, int col,
                           char *errstr, size_t errstr_size)
{
    if (!vals[col] || lens[col] == 0) {
        dp_err(errstr, errstr_size, DP_EINVAL, "missing value in column \"%s\"", m->columns[col]);
        return DP_LOAD_MISSING_VALUE;
    }
    return DP_LOAD_OK;
}

/* An integer, or a label when the column has labels. */
static dp_load_reject int_or_label(const dp_load_mapping *m, const dp_label_map *lm, const char *v, size_t n,
                                   int col, int64_t *out, char *errstr, size_t errstr_size)
{
    if (lm && lm->n) {
        const dp_label_entry *e = label_find(lm, v, n);
        if (!e) {
            dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": \"%.*s\" is not one of the mapping's labels",
                   m->columns[col], SHOW(n), v);
            return DP_LOAD_UNKNOWN_LABEL;
        }
        *out = e->value;
        return DP_LOAD_OK;
    }
    if (dp_load_parse_int(v, n, out) != 0) {
        dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": \"%.*s\" is not an integer",
               m->columns[col], SHOW(n), v);
        return DP_LOAD_BAD_NUMBER;
    }
    return DP_LOAD_OK;
}

static int parse_finite(const char *v, size_t n, double *out)
{
    char tmp[128];
    if (n == 0 || n >= sizeof tmp)
        return -1;
    memcpy(tmp, v, n);
    tmp[n] = '\0';
    /* decimal only: strtod would also take "inf", "nan" and hex floats */
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789+-.eE", tmp[i]))
            return -1;
    char *end;
    errno = 0;
    double d = strtod(tmp, &end);
    if (*end || errno == ERANGE || !isfinite(d))
        return -1;
    *out = d;
    return 0;
}

dp_load_reject dp_load_row_convert(const dp_load_mapping *m, const char *const *vals, const size_t *lens,
                                   dp_load_row *out, int *oom, char *errstr, size_t errstr_size)
{
    dp_load_reject r;
    dp_update *u = &out->u;
    memset(u, 0, sizeof *u);
    *oom = 0;

    /* stream */
    const char *sv = m->stream_const;
    size_t sn = sv ? strlen(sv) : 0;
    if (!sv) {
        if ((r = need(m, vals, lens, m->stream_col, errstr, errstr_size)) != DP_LOAD_OK)
            return r;
        sv = vals[m->stream_col];
        sn = lens[m->stream_col];
        if (!dp_id_text_valid(sv, sn)) {
            dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": stream id is not valid UTF-8 or holds a NUL byte",
                   m->columns[m->stream_col]);
            return DP_LOAD_BAD_STRING;
        }
    }
    if (copy_str(&out->stream, &out->stream_cap, sv, sn) != 0)
        goto oom;
    u->stream_id = out->stream;
    u->stream_id_len = sn;

    /* step */
    if ((r = need(m, vals, lens, m->step_col, errstr, errstr_size)) != DP_LOAD_OK)
        return r;
    const char *tv = vals[m->step_col];
    size_t tn = lens[m->step_col];
    int64_t v;
    if (m->step_from_time) {
        if (dp_load_parse_timestamp(tv, tn, m->time_format, &v) != 0) {
            static const char *const FMT[] = {"an ISO-8601 timestamp with a zone", "epoch seconds", "epoch milliseconds"};
            dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": \"%.*s\" is not %s", m->columns[m->step_col],
                   SHOW(tn), tv, FMT[m->time_format]);
            return DP_LOAD_BAD_TIMESTAMP;
        }
        u->has_event_time = 1;
        u->event_time_ms = v;
    } else if (dp_load_parse_int(tv, tn, &v) != 0) {
        dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": step \"%.*s\" is not an integer",
               m->columns[m->step_col], SHOW(tn), tv);
        return DP_LOAD_BAD_NUMBER;
    }
    if (dp_load_step_of(v, m->step_origin, m->step_length, &u->step) != 0) {
        dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": \"%.*s\" is before the step origin (step would be < 1)",
               m->columns[m->step_col], SHOW(tn), tv);
        return DP_LOAD_BEFORE_ORIGIN;
    }

    /* entity */
    if (m->entity_col >= 0) {
        if ((r = need(m, vals, lens, m->entity_col, errstr, errstr_size)) != DP_LOAD_OK)
            return r;
        const char *ev = vals[m->entity_col];
        size_t en = lens[m->entity_col];
        if (!dp_id_text_valid(ev, en)) {
            dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": entity id is not valid UTF-8 or holds a NUL byte",
                   m->columns[m->entity_col]);
            return DP_LOAD_BAD_STRING;
        }
        if (copy_str(&out->entity, &out->entity_cap, ev, en) != 0)
            goto oom;
        u->entity_id = out->entity;
        u->entity_id_len = en;
    }

    /* kind */
    u->kind = m->kind_const;
    if (m->kind_col >= 0) {
        if ((r = need(m, vals, lens, m->kind_col, errstr, errstr_size)) != DP_LOAD_OK)
            return r;
        const char *kv = vals[m->kind_col];
        size_t kn = lens[m->kind_col];
        const dp_label_entry *e = m->kind_labels.n ? label_find(&m->kind_labels, kv, kn) : NULL;
        if (e) {
            u->kind = (dp_update_kind)e->value;
        } else {
            char tmp[16];
            dp_update_kind k;
            if (kn >= sizeof tmp || (memcpy(tmp, kv, kn), tmp[kn] = '\0', dp_update_json_kind_parse(tmp, &k) != 0) ||
                k == DP_UPDATE_CLOSE_STEP) {
                dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": \"%.*s\" is not REPORT, INSERT, DELETE%s",
                       m->columns[m->kind_col], SHOW(kn), kv, m->kind_labels.n ? " or a kind label" : "");
                return DP_LOAD_BAD_KIND;
            }
            u->kind = k;
        }
    }

    /* payload */
    if (m->payload == DP_PAYLOAD_CATEGORY) {
        int c = m->value_cols[0];
        if ((r = need(m, vals, lens, c, errstr, errstr_size)) != DP_LOAD_OK)
            return r;
        if ((r = int_or_label(m, &m->value_labels[0], vals[c], lens[c], c, &v, errstr, errstr_size)) != DP_LOAD_OK)
            return r;
        u->payload.kind = DP_PAYLOAD_CATEGORY;
        u->payload.category = v;
        return DP_LOAD_OK;
    }
    int32_t *row = NULL;
    double *pt = NULL;
    if (m->payload == DP_PAYLOAD_ROW ? !(row = dp_payload_buf_row(&out->pay, m->n_values))
                                     : !(pt = dp_payload_buf_point(&out->pay, m->n_values)))
        goto oom;
    for (size_t i = 0; i < m->n_values; i++) {
        int c = m->value_cols[i];
        if ((r = need(m, vals, lens, c, errstr, errstr_size)) != DP_LOAD_OK)
            return r;
        if (m->payload == DP_PAYLOAD_ROW) {
            if ((r = int_or_label(m, &m->value_labels[i], vals[c], lens[c], c, &v, errstr, errstr_size)) != DP_LOAD_OK)
                return r;
            if (v < INT32_MIN || v > INT32_MAX) {
                dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": %lld is outside int32 range",
                       m->columns[c], (long long)v);
                return DP_LOAD_BAD_NUMBER;
            }
            row[i] = (int32_t)v;
        } else if (parse_finite(vals[c], lens[c], &pt[i]) != 0) {
            dp_err(errstr, errstr_size, DP_EINVAL, "column \"%s\": \"%.*s\" is not a finite decimal number",
                   m->columns[c], SHOW(lens[c]), vals[c]);
            return DP_LOAD_BAD_NUMBER;
        }
    }
    u->payload.kind = m->payload;
    if (m->payload == DP_PAYLOAD_ROW) {
        u->payload.row = row;
        u->payload.row_len = m->n_values;
    } else {
        u->payload.point = pt;
        u->payload.point_len = m->n_values;
    }
    return DP_LOAD_OK;
oom:
    *oom = 1;
    dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    return DP_LOAD_BAD_RECORD;
}
