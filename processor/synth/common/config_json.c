/* config_json.c — see config_json.h. */
#include "synth/common/config_json.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int dp_cfg_key_known(const char *k, const char *const *keys)
{
    for (; *keys; keys++)
        if (strcmp(*keys, k) == 0)
            return 1;
    return 0;
}

/* A JSON integer (or an integral real) in [lo, hi]. */
int dp_cfg_uint(const json_t *v, const char *name, const char *what, uint64_t lo, uint64_t hi,
                uint64_t *out, char *errstr, size_t errstr_size)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi)
            return dp_err(errstr, errstr_size, DP_ERANGE, "%s: %s must be an integer in [%llu, %llu]",
                          name, what, (unsigned long long)lo, (unsigned long long)hi);
        *out = (uint64_t)x;
        return DP_OK;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x == floor(x) && x >= (double)lo && x <= (double)hi) {
            *out = (uint64_t)x;
            return DP_OK;
        }
    }
    return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %s must be an integer in [%llu, %llu]", name,
                  what, (unsigned long long)lo, (unsigned long long)hi);
}

int dp_cfg_real(const json_t *v, const char *name, const char *what, double *out,
                    char *errstr, size_t errstr_size)
{
    if (!json_is_number(v))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %s must be a number", name, what);
    *out = json_number_value(v);
    if (!isfinite(*out))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %s must be finite", name, what);
    return DP_OK;
}

int dp_cfg_counter_parse(const json_t *v, const char *name, dp_cfg_counter *c, char *errstr,
                         size_t errstr_size)
{
    const json_t *kind = v;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            if (strcmp(k, "kind") && strcmp(k, "block") && strcmp(k, "buffers"))
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s: unknown counter key \"%s\"", name, k);
        }
        kind = json_object_get(v, "kind");
        const json_t *b = json_object_get(v, "block");
        uint64_t u;
        if (b) {
            int rc = dp_cfg_uint(b, name, "counter.block", 1, UINT32_MAX, &u, errstr, errstr_size);
            if (rc != DP_OK)
                return rc;
            c->block = u;
        }
        b = json_object_get(v, "buffers");
        if (b) {
            int rc = dp_cfg_uint(b, name, "counter.buffers", 1, 1024, &u, errstr, errstr_size);
            if (rc != DP_OK)
                return rc;
            c->buffers = (uint32_t)u;
        }
    }
    if (!json_is_string(kind))
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: counter must be a kind name or {\"kind\": name, …}", name);
    if (dp_counter_kind_parse(json_string_value(kind), &c->kind) != DP_OK)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: unknown counter kind \"%s\"", name,
                      json_string_value(kind));
    return DP_OK;
}


int dp_cfg_choice(const json_t *v, const char *name, const char *what, const char *const *names, int *out,
                  char *errstr, size_t errstr_size)
{
    if (!v)
        return DP_OK;
    for (int i = 0; json_is_string(v) && names[i]; i++)
        if (strcmp(json_string_value(v), names[i]) == 0) {
            *out = i;
            return DP_OK;
        }
    char list[256] = "";
    size_t n = 0;
    for (int i = 0; names[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s\"%s\"", i ? ", " : "", names[i]);
    return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %s must be one of %s", name, what, list);
}

int dp_cfg_bool(const json_t *v, const char *name, const char *what, int *out, char *errstr, size_t errstr_size)
{
    if (!v)
        return DP_OK;
    if (!json_is_boolean(v))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %s must be true or false", name, what);
    *out = json_is_true(v);
    return DP_OK;
}

int dp_cfg_attributes(const json_t *v, const char *name, uint32_t max_attrs, uint32_t max_categories, char **names,
                      uint32_t *sizes, uint32_t *n, char *errstr, size_t errstr_size)
{
    *n = 0;
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > max_attrs)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: attributes must be an array of 1..%u objects", name,
                      max_attrs);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *a = json_array_get(v, i);
        if (!json_is_object(a))
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: attributes[%zu] must be an object", name, i);
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)a, k, x) {
            if (strcmp(k, "name") && strcmp(k, "categories"))
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s: attributes[%zu]: unknown key \"%s\"", name, i, k);
        }
        const json_t *nm = json_object_get(a, "name"), *cats = json_object_get(a, "categories");
        if (!json_is_string(nm) || json_string_length(nm) == 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: attributes[%zu].name must be a non-empty string", name,
                          i);
        for (uint32_t j = 0; j < *n; j++)
            if (strcmp(names[j], json_string_value(nm)) == 0)
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s: attributes[%zu].name \"%s\" repeats attributes[%u]",
                              name, i, json_string_value(nm), j);
        if (!json_is_array(cats) || json_array_size(cats) < 1 || json_array_size(cats) > max_categories)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: attributes[%zu].categories must be an array of 1..%u labels",
                          name, i, max_categories);
        for (size_t j = 0; j < json_array_size(cats); j++)
            if (!json_is_string(json_array_get(cats, j)))
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s: attributes[%zu].categories[%zu] must be a string",
                              name, i, j);
        if (!(names[*n] = strdup(json_string_value(nm))))
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        sizes[(*n)++] = (uint32_t)json_array_size(cats);
    }
    return DP_OK;
}

int dp_cfg_check_object(const json_t *cfg, const char *name, const char *const *keys, char *errstr,
                        size_t errstr_size)
{
    if (!json_is_object(cfg))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: config must be a JSON object", name);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)cfg, key, v) {
        if (!dp_cfg_key_known(key, keys))
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: unknown config key \"%s\"", name, key);
    }
    if ((v = json_object_get(cfg, "synthesizer")) && (!json_is_string(v) || strcmp(json_string_value(v), name)))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: config \"synthesizer\" names another synthesizer", name);
    return DP_OK;
}

int dp_cfg_unused_delta(const json_t *cfg, const char *name, char *errstr, size_t errstr_size)
{
    const json_t *v = json_object_get(cfg, "delta");
    double unused;
    return v ? dp_cfg_real(v, name, "delta", &unused, errstr, errstr_size) : DP_OK;
}

int dp_cfg_box(const json_t *v, const char *name, dp_box *b, char *errstr, size_t errstr_size)
{
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > DP_PARTITION_MAX_DIM)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: box must be an array of 1..%d [min, max] pairs",
                      name, DP_PARTITION_MAX_DIM);
    b->d = (uint32_t)json_array_size(v);
    for (uint32_t i = 0; i < b->d; i++) {
        const json_t *p = json_array_get(v, i);
        if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_number(json_array_get(p, 0)) ||
            !json_is_number(json_array_get(p, 1)))
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: box[%u] must be [min, max]", name, i);
        b->lo[i] = json_number_value(json_array_get(p, 0));
        b->hi[i] = json_number_value(json_array_get(p, 1));
        /* the width must be finite too: halving it must not overflow */
        if (!isfinite(b->lo[i]) || !isfinite(b->hi[i]) || !(b->lo[i] < b->hi[i]) || !isfinite(b->hi[i] - b->lo[i]))
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: box[%u] must have finite min < max", name, i);
    }
    return DP_OK;
}
