/* bytes_map.c — see bytes_map.h. */
#include "core/bytes_map.h"

#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void dp_bytes_map_init(dp_bytes_map *m) { memset(m, 0, sizeof *m); }

void dp_bytes_map_free(dp_bytes_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

dp_bytes_map_slot *dp_bytes_map_find(const dp_bytes_map *m, const void *key, size_t key_len)
{
    if (m->cap == 0)
        return NULL;
    uint64_t h = fnv1a(key, key_len);
    for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        dp_bytes_map_slot *s = &m->slots[i];
        if (!s->key)
            return NULL;
        if (s->hash == h && s->key_len == key_len && memcmp(s->key, key, key_len) == 0)
            return s;
    }
}

static void place(dp_bytes_map_slot *slots, size_t cap, const dp_bytes_map_slot *s)
{
    size_t j = (size_t)s->hash & (cap - 1);
    while (slots[j].key)
        j = (j + 1) & (cap - 1);
    slots[j] = *s;
}

static int grow(dp_bytes_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    dp_bytes_map_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return DP_ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            place(slots, cap, &m->slots[i]);
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return DP_OK;
}

dp_bytes_map_slot *dp_bytes_map_upsert(dp_bytes_map *m, const void *key, size_t key_len)
{
    dp_bytes_map_slot *s = dp_bytes_map_find(m, key, key_len);
    if (s)
        return s;
    if ((m->count + 1) * 4 > m->cap * 3 && grow(m) != DP_OK)
        return NULL;
    char *copy = malloc(key_len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, key, key_len);
    copy[key_len] = '\0';
    dp_bytes_map_slot n = {.key = copy, .key_len = key_len, .hash = fnv1a(key, key_len), .value = NULL};
    size_t j = (size_t)n.hash & (m->cap - 1);
    while (m->slots[j].key)
        j = (j + 1) & (m->cap - 1);
    m->slots[j] = n;
    m->count++;
    return &m->slots[j];
}

int dp_bytes_map_filter(dp_bytes_map *m, int (*keep)(void *value, void *ctx),
                        void (*drop)(void *value, void *ctx), void *ctx)
{
    if (m->cap == 0)
        return DP_OK;
    dp_bytes_map_slot *slots = calloc(m->cap, sizeof *slots);
    if (!slots)
        return DP_ENOMEM;
    size_t count = 0;
    for (size_t i = 0; i < m->cap; i++) {
        dp_bytes_map_slot *s = &m->slots[i];
        if (!s->key)
            continue;
        if (keep(s->value, ctx)) {
            place(slots, m->cap, s);
            count++;
        } else {
            if (drop)
                drop(s->value, ctx);
            free(s->key);
        }
    }
    free(m->slots);
    m->slots = slots;
    m->count = count;
    return DP_OK;
}

int dp_bytes_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    int r = memcmp(a, b, alen < blen ? alen : blen);
    return r ? r : (alen > blen) - (alen < blen);
}

static int slot_cmp(const void *a, const void *b)
{
    const dp_bytes_map_slot *x = *(const dp_bytes_map_slot *const *)a, *y = *(const dp_bytes_map_slot *const *)b;
    return dp_bytes_key_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* A sort entry: the key's first 16 bytes as two big-endian words, padded
 * with zero bytes, beside its slot, so that most comparisons never load the
 * key (snapshots sort every live key of a synthesizer's state each step:
 * 10^6 keys in `spatial` and `adaptive`; bench/RESULTS.md, every
 * synthesizer through Kafka).  The order is dp_bytes_key_cmp's: where two
 * padded prefixes differ, at byte i, either both keys have real bytes up
 * to i and differ first there, or the shorter ends before i with every
 * byte equal to the other's (its padding 0 is below the other's nonzero
 * byte), i.e. it is a proper prefix of the other and comes first; equal
 * prefixes fall back to dp_bytes_key_cmp. */
typedef struct sort_entry {
    uint64_t                 hi, lo;
    const dp_bytes_map_slot *slot;
} sort_entry;

static uint64_t be_word(const char *k, size_t len, size_t at)
{
    uint64_t w = 0;
    for (size_t i = at; i < at + 8; i++)
        w = w << 8 | (i < len ? (uint8_t)k[i] : 0u);
    return w;
}

static int entry_cmp(const void *a, const void *b)
{
    const sort_entry *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return slot_cmp(&x->slot, &y->slot);
}

const dp_bytes_map_slot **dp_bytes_map_sorted(const dp_bytes_map *m, int (*keep)(const void *value), size_t *n)
{
    const dp_bytes_map_slot **v = malloc((m->count ? m->count : 1) * sizeof *v);
    sort_entry *e = malloc((m->count ? m->count : 1) * sizeof *e);
    if (!v || !e) {
        free(v);
        free(e);
        return NULL;
    }
    *n = 0;
    for (size_t i = 0; i < m->cap; i++) {
        const dp_bytes_map_slot *s = &m->slots[i];
        if (s->key && (!keep || keep(s->value)))
            e[(*n)++] = (sort_entry){be_word(s->key, s->key_len, 0), be_word(s->key, s->key_len, 8), s};
    }
    qsort(e, *n, sizeof *e, entry_cmp);
    for (size_t i = 0; i < *n; i++)
        v[i] = e[i].slot;
    free(e);
    return v;
}
