/* config_json.h — small checked readers for synthesizer JSON configs,
 * shared by every synthesizer's parser so that the same mistake gets the
 * same message everywhere.  `name` prefixes every message (the synthesizer
 * or the JSON path), `what` names the key. */
#ifndef DP_SYNTH_CONFIG_JSON_H
#define DP_SYNTH_CONFIG_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/counter.h"
#include "synth/common/partition.h"

/* A JSON integer (or an integral real) in [lo, hi]. */
int dp_cfg_uint(const json_t *v, const char *name, const char *what, uint64_t lo, uint64_t hi, uint64_t *out,
                char *errstr, size_t errstr_size);
/* A finite JSON number. */
int dp_cfg_real(const json_t *v, const char *name, const char *what, double *out, char *errstr,
                size_t errstr_size);
/* An optional string that must be one of names (NULL-terminated): *out =
 * its index; absent: *out unchanged. */
int dp_cfg_choice(const json_t *v, const char *name, const char *what, const char *const *names, int *out,
                  char *errstr, size_t errstr_size);
/* An optional JSON boolean: *out = 1 or 0; absent: *out unchanged. */
int dp_cfg_bool(const json_t *v, const char *name, const char *what, int *out, char *errstr, size_t errstr_size);
/* The checks every synthesizer config starts with: a JSON object, every
 * key in `keys` (NULL-terminated), and "synthesizer", if present, naming
 * `name`. */
int dp_cfg_check_object(const json_t *cfg, const char *name, const char *const *keys, char *errstr,
                        size_t errstr_size);
/* "delta": the stream file sets its δ (for zCDP → (ε, δ) figures) on every
 * stream; a pure-ε synthesizer checks that it is a number and ignores it. */
int dp_cfg_unused_delta(const json_t *cfg, const char *name, char *errstr, size_t errstr_size);
/* 1 if k is in the NULL-terminated list. */
int dp_cfg_key_known(const char *k, const char *const *keys);

/* "attributes": [{"name": s, "categories": [label, …]}, …], 1..max_attrs
 * objects with unique names and 1..max_categories string labels each.
 * names[i] are strdup'd (the caller frees names[0..*n) even on error),
 * sizes[i] the label counts. */
int dp_cfg_attributes(const json_t *v, const char *name, uint32_t max_attrs, uint32_t max_categories, char **names,
                      uint32_t *sizes, uint32_t *n, char *errstr, size_t errstr_size);

/* "box": [[min, max], …], 1..DP_PARTITION_MAX_DIM pairs of finite min < max
 * with a finite width (spatial, hypercube). */
int dp_cfg_box(const json_t *v, const char *name, dp_box *b, char *errstr, size_t errstr_size);

/* "counter": a kind name or {"kind": name, "block": B, "buffers": d}. */
typedef struct dp_cfg_counter {
    dp_counter_kind kind;
    uint64_t        block;
    uint32_t        buffers;
} dp_cfg_counter;
int dp_cfg_counter_parse(const json_t *v, const char *name, dp_cfg_counter *out, char *errstr,
                         size_t errstr_size);

#endif
