/* multiset.c — see multiset.h. */
#include "synth/common/multiset.h"

#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

static int64_t val_of(const dp_bytes_map_slot *s) { return (int64_t)(intptr_t)s->value; }
static void set_val(dp_bytes_map_slot *s, int64_t v) { s->value = (void *)(intptr_t)v; }

int dp_multiset_init(dp_multiset *m, size_t value_len, uint32_t max_events_per_user, int track_added)
{
    memset(m, 0, sizeof *m);
    m->value_len = value_len;
    m->max_events_per_user = max_events_per_user;
    m->track_added = track_added;
    dp_bytes_map_init(&m->items);
    dp_bytes_map_init(&m->delta);
    dp_bytes_map_init(&m->added);
    dp_bytes_map_init(&m->users);
    m->order_valid = 1;   /* no keys, in order */
    return (m->key = malloc(4 + DP_MULTISET_MAX_ENTITY + value_len)) ? DP_OK : DP_ENOMEM;
}

void dp_multiset_free(dp_multiset *m)
{
    dp_bytes_map_free(&m->items);
    dp_bytes_map_free(&m->delta);
    dp_bytes_map_free(&m->added);
    dp_bytes_map_free(&m->users);
    free(m->key);
    free(m->order);
    free(m->fresh);
    m->key = NULL;
    m->order = m->fresh = NULL;
    m->fresh_v = (dp_vec){NULL, 0};
    m->n_order = m->n_fresh = 0;
}

/* Room for one more fresh key (taken before the insert, so that a failed
 * update changes nothing). */
static int reserve_fresh(dp_multiset *m)
{
    int rc = dp_vec_reserve(&m->fresh_v, m->n_fresh + 1, sizeof *m->fresh);
    m->fresh = m->fresh_v.p;
    return rc;
}

dp_reject_reason dp_multiset_check_user(const dp_multiset *m, const dp_update *u)
{
    if (u->entity_id_len > DP_MULTISET_MAX_ENTITY)
        return DP_REJECT_MALFORMED;
    if (!m->max_events_per_user)
        return DP_REJECT_NONE;
    if (!u->entity_id || u->entity_id_len == 0)
        return DP_REJECT_USER_LIMIT;
    const dp_bytes_map_slot *s = dp_bytes_map_find(&m->users, u->entity_id, u->entity_id_len);
    return s && val_of(s) >= (int64_t)m->max_events_per_user ? DP_REJECT_USER_LIMIT : DP_REJECT_NONE;
}

/* (entity, value) key into m->key; its length. */
static size_t entity_value_key(dp_multiset *m, const dp_update *u, const uint8_t *value)
{
    uint32_t el = u->entity_id ? (uint32_t)u->entity_id_len : 0;
    m->key[0] = (uint8_t)el;
    m->key[1] = (uint8_t)(el >> 8);
    m->key[2] = (uint8_t)(el >> 16);
    m->key[3] = (uint8_t)(el >> 24);
    if (el)
        memcpy(m->key + 4, u->entity_id, el);
    memcpy(m->key + 4 + el, value, m->value_len);
    return 4 + el + m->value_len;
}

int dp_multiset_apply(dp_multiset *m, const dp_update *u, const uint8_t *value, dp_reject_reason *reason)
{
    /* Before any lookup: matched by value alone, an entity-less DELETE would
     * be used or NOT_PRESENT as someone else did or did not insert that
     * value — one person's data deciding about another's update. */
    if (u->kind == DP_UPDATE_DELETE && (!u->entity_id || u->entity_id_len == 0)) {
        *reason = DP_REJECT_ENTITY_REQUIRED;
        return DP_OK;
    }
    if ((*reason = dp_multiset_check_user(m, u)) != DP_REJECT_NONE)
        return DP_OK;
    size_t klen = entity_value_key(m, u, value);
    int del = u->kind == DP_UPDATE_DELETE;
    size_t had = m->items.count;
    if (!del && reserve_fresh(m) != DP_OK)
        return DP_ENOMEM;
    dp_bytes_map_slot *s = del ? dp_bytes_map_find(&m->items, m->key, klen) : dp_bytes_map_upsert(&m->items, m->key, klen);
    if (!s && !del)
        return DP_ENOMEM;
    if (m->items.count > had)   /* a new key (count 0 until set below) */
        m->fresh[m->n_fresh++] = (dp_multiset_key){s->key, s->key_len};
    if (del && (!s || val_of(s) <= 0)) {
        *reason = DP_REJECT_NOT_PRESENT;
        return DP_OK;
    }
    /* Reserve every slot before changing anything: a failed update changes nothing. */
    dp_bytes_map_slot *d = dp_bytes_map_upsert(&m->delta, value, m->value_len);
    dp_bytes_map_slot *a = d && m->track_added && !del ? dp_bytes_map_upsert(&m->added, value, m->value_len) : NULL;
    dp_bytes_map_slot *us = d && m->max_events_per_user ? dp_bytes_map_upsert(&m->users, u->entity_id, u->entity_id_len) : NULL;
    if (!d || (m->track_added && !del && !a) || (m->max_events_per_user && !us))
        return DP_ENOMEM;
    set_val(s, val_of(s) + (del ? -1 : 1));
    set_val(d, val_of(d) + (del ? -1 : 1));
    if (a)
        set_val(a, val_of(a) + 1);
    if (us)
        set_val(us, val_of(us) + 1);
    return DP_OK;
}

int dp_multiset_each(const dp_multiset *m, dp_multiset_change which,
                     int (*fn)(void *ctx, const uint8_t *value, int64_t count), void *ctx)
{
    const dp_bytes_map *map = which == DP_MULTISET_ADDED ? &m->added : &m->delta;
    for (size_t i = 0; i < map->cap; i++) {
        const dp_bytes_map_slot *s = &map->slots[i];
        int rc;
        if (s->key && val_of(s) != 0 && (rc = fn(ctx, (const uint8_t *)s->key, val_of(s))) != 0)
            return rc;
    }
    return DP_OK;
}

void dp_multiset_next_step(dp_multiset *m)
{
    dp_bytes_map_free(&m->delta);
    dp_bytes_map_init(&m->delta);
    dp_bytes_map_free(&m->added);
    dp_bytes_map_init(&m->added);
}

/* --- snapshots: every map written in key order ---------------------------- */

static int nonzero(const void *value) { return value != NULL; }

static int save_map(const dp_bytes_map *map, dp_buf *b)
{
    size_t n;
    const dp_bytes_map_slot **v = dp_bytes_map_sorted(map, nonzero, &n);
    if (!v)
        return DP_ENOMEM;
    dp_buf_put_u64(b, n);
    for (size_t i = 0; i < n; i++) {
        dp_buf_put_blob(b, v[i]->key, v[i]->key_len);
        dp_buf_put_i64(b, val_of(v[i]));
    }
    free(v);
    return dp_buf_status(b);
}

static int key_cmp(const void *a, const void *b)
{
    const dp_multiset_key *x = a, *y = b;
    return dp_bytes_key_cmp(x->key, x->len, y->key, y->len);
}

/* m->order brought up to date: the fresh keys sorted and merged in, or
 * (after a restore) every key of items sorted. */
static int update_order(dp_multiset *m)
{
    if (!m->order_valid) {
        size_t n;
        const dp_bytes_map_slot **v = dp_bytes_map_sorted(&m->items, NULL, &n);
        dp_multiset_key *o = v ? malloc((n ? n : 1) * sizeof *o) : NULL;
        if (!o) {
            free(v);
            return DP_ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
            o[i] = (dp_multiset_key){v[i]->key, v[i]->key_len};
        free(v);
        free(m->order);
        m->order = o;
        m->n_order = n;
        m->n_fresh = 0;
        m->order_valid = 1;
        return DP_OK;
    }
    if (m->n_fresh == 0)
        return DP_OK;
    size_t n = m->n_order + m->n_fresh, a = 0, b = 0, k = 0;
    dp_multiset_key *o = malloc(n * sizeof *o);
    if (!o)
        return DP_ENOMEM;
    qsort(m->fresh, m->n_fresh, sizeof *m->fresh, key_cmp);
    while (a < m->n_order || b < m->n_fresh)
        o[k++] = b == m->n_fresh || (a < m->n_order && key_cmp(&m->order[a], &m->fresh[b]) < 0) ? m->order[a++]
                                                                                              : m->fresh[b++];
    free(m->order);
    m->order = o;
    m->n_order = n;
    m->n_fresh = 0;
    return DP_OK;
}

/* items in key order, its zero counts left out: save_map's bytes, without
 * sorting every key again. */
static int save_items(dp_multiset *m, dp_buf *b)
{
    int rc = update_order(m);
    if (rc != DP_OK)
        return rc;
    size_t at = b->len, n = 0;
    dp_buf_put_u64(b, 0);   /* the count, set below */
    for (size_t i = 0; i < m->n_order; i++) {
        const dp_bytes_map_slot *s = dp_bytes_map_find(&m->items, m->order[i].key, m->order[i].len);
        if (!s || !s->value)
            continue;
        dp_buf_put_blob(b, s->key, s->key_len);
        dp_buf_put_i64(b, val_of(s));
        n++;
    }
    if ((rc = dp_buf_status(b)) == DP_OK)
        for (int i = 0; i < 8; i++)
            b->data[at + i] = (uint8_t)(n >> (8 * i));
    return rc;
}

typedef struct entry_check {
    const dp_multiset *m;
    int (*value_ok)(const uint8_t *value, const void *ctx);
    const void *ctx;
} entry_check;

typedef int (*entry_valid_fn)(const uint8_t *k, size_t len, int64_t v, const entry_check *c);

static int load_map(dp_bytes_map *map, dp_reader *r, entry_valid_fn valid, const entry_check *c)
{
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || n > (uint64_t)1 << 40)
        return DP_ECORRUPT;
    const uint8_t *prev = NULL;
    size_t prev_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *k = dp_reader_blob(r, &len);
        int64_t v = dp_reader_i64(r);
        if (!k || dp_reader_status(r) != DP_OK || v == 0 || !valid(k, len, v, c))
            return DP_ECORRUPT;
        if (prev && dp_bytes_key_cmp(prev, prev_len, k, len) >= 0)
            return DP_ECORRUPT;   /* strictly increasing: no duplicates, one canonical form */
        dp_bytes_map_slot *s = dp_bytes_map_upsert(map, k, len);
        if (!s)
            return DP_ENOMEM;
        set_val(s, v);
        prev = k;
        prev_len = len;
    }
    return DP_OK;
}

static int valid_item(const uint8_t *k, size_t len, int64_t v, const entry_check *c)
{
    if (len < 4 || v < 0)
        return 0;
    size_t el = (size_t)k[0] | (size_t)k[1] << 8 | (size_t)k[2] << 16 | (size_t)k[3] << 24;
    return el <= DP_MULTISET_MAX_ENTITY && len == 4 + el + c->m->value_len && c->value_ok(k + 4 + el, c->ctx);
}

static int valid_change(const uint8_t *k, size_t len, int64_t v, const entry_check *c)
{
    return len == c->m->value_len && c->value_ok(k, c->ctx) && v >= -((int64_t)1 << 40) && v <= (int64_t)1 << 40;
}

static int valid_added(const uint8_t *k, size_t len, int64_t v, const entry_check *c)
{
    return v > 0 && valid_change(k, len, v, c);
}

static int valid_user(const uint8_t *k, size_t len, int64_t v, const entry_check *c)
{
    return len >= 1 && len <= DP_MULTISET_MAX_ENTITY && v > 0 && v <= (int64_t)c->m->max_events_per_user;
}

/* The kept key order is a cache (the multiset is const to its callers):
 * the bytes are save_map's. */
int dp_multiset_save(const dp_multiset *m, dp_buf *b)
{
    int rc = save_items((dp_multiset *)(uintptr_t)m, b);
    if (rc == DP_OK)
        rc = save_map(&m->delta, b);
    if (rc == DP_OK && m->track_added)
        rc = save_map(&m->added, b);
    if (rc == DP_OK)
        rc = save_map(&m->users, b);
    return rc;
}

int dp_multiset_load(dp_multiset *m, dp_reader *r, int (*value_ok)(const uint8_t *value, const void *ctx),
                     const void *ctx)
{
    entry_check c = {m, value_ok, ctx};
    m->order_valid = 0;   /* sorted afresh at the next save */
    m->n_fresh = 0;
    int rc = load_map(&m->items, r, valid_item, &c);
    if (rc == DP_OK)
        rc = load_map(&m->delta, r, valid_change, &c);
    if (rc == DP_OK && m->track_added)
        rc = load_map(&m->added, r, valid_added, &c);
    if (rc == DP_OK)
        rc = load_map(&m->users, r, valid_user, &c);
    return rc;
}
