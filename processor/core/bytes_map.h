/* bytes_map.h — a small open-addressing hash map from byte strings to
 * pointers (stream ids -> per-stream state, state-topic keys -> records).
 *
 * Iteration order depends on hashes and insertion history, so callers
 * must never let it decide an output byte: the processor iterates only to
 * compute minima, to free, or to fire timers whose effect (a CLOSE_STEP
 * marker) is itself recorded in the log (docs/design.md §2). */
#ifndef DP_CORE_BYTES_MAP_H
#define DP_CORE_BYTES_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp_bytes_map_slot {
    char    *key;       /* owned copy, NUL-terminated; NULL = empty slot */
    size_t   key_len;
    uint64_t hash;
    void    *value;
} dp_bytes_map_slot;

typedef struct dp_bytes_map {
    dp_bytes_map_slot *slots;   /* capacity a power of two */
    size_t             cap;
    size_t             count;
} dp_bytes_map;

void  dp_bytes_map_init(dp_bytes_map *m);
/* Frees the keys; values are the caller's (free them first via iteration). */
void  dp_bytes_map_free(dp_bytes_map *m);
/* The value in slot i (0 <= i < cap), or NULL for an empty slot; for
 * iterations whose order cannot reach an output (see above). */
static inline void *dp_bytes_map_at(const dp_bytes_map *m, size_t i)
{
    return m->slots[i].key ? m->slots[i].value : NULL;
}

/* The slot of key, or NULL. */
dp_bytes_map_slot *dp_bytes_map_find(const dp_bytes_map *m, const void *key, size_t key_len);
/* The slot of key, inserted with value NULL if absent; NULL on out of memory. */
dp_bytes_map_slot *dp_bytes_map_upsert(dp_bytes_map *m, const void *key, size_t key_len);
/* Byte-string order: memcmp over the common length, then the shorter
 * first — the canonical order snapshots write map entries in. */
int dp_bytes_key_cmp(const void *a, size_t alen, const void *b, size_t blen);
/* The occupied slots whose value passes keep (NULL: all), in key order, as
 * a malloc'd array (free it; the slots stay the map's); *n their count.
 * NULL on out of memory. */
const dp_bytes_map_slot **dp_bytes_map_sorted(const dp_bytes_map *m, int (*keep)(const void *value), size_t *n);

/* Remove every slot for which keep(value, ctx) is 0 (after calling
 * drop(value, ctx) on it).  DP_OK or DP_ENOMEM (map unchanged then). */
int dp_bytes_map_filter(dp_bytes_map *m, int (*keep)(void *value, void *ctx),
                        void (*drop)(void *value, void *ctx), void *ctx);

#endif
