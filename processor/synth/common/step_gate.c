/* step_gate.c — accept / hold / reject / close, in one place (step_gate.h). */
#include "synth/common/step_gate.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

const dp_gate_policy dp_gate_policy_default = {.lookahead = 1, .close_on_roster = 0};

/* A held update and everything it points to, in one allocation:
 * [raw][stream id][entity id][row][point], so nothing borrowed from the
 * caller outlives the offer. */
struct dp_gate_held {
    dp_update u;
    uint64_t       origin;
    uint8_t       *blob;
    const uint8_t *raw;
    size_t         raw_len;
};

void dp_gate_init(dp_step_gate *g, dp_synth *synth, const dp_gate_policy *policy)
{
    memset(g, 0, sizeof *g);
    g->synth = synth;
    g->policy = policy ? *policy : dp_gate_policy_default;
}

void dp_gate_drop_held(dp_step_gate *g)
{
    for (size_t i = 0; i < g->n_held; i++)
        free(g->held[i].blob);
    g->n_held = 0;
}

void dp_gate_free(dp_step_gate *g)
{
    dp_gate_drop_held(g);
    free(g->held);
    g->held = NULL;
    g->cap_held = 0;
    sodium_memzero(g->digest_key, sizeof g->digest_key);
}

static void reject(dp_gate_verdict *v, dp_reject_reason r, const char *text)
{
    v->action = DP_GATE_REJECTED;
    v->reason = r;
    snprintf(v->text, sizeof v->text, "%s", text ? text : dp_reject_reason_text(r));
}

static int hold(dp_step_gate *g, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len)
{
    if (g->n_held == g->cap_held) {
        size_t cap = g->cap_held ? 2 * g->cap_held : 64;
        dp_gate_held *h = realloc(g->held, cap * sizeof *h);
        if (!h)
            return DP_ENOMEM;
        g->held = h;
        g->cap_held = cap;
    }
    size_t row_bytes = u->payload.row_len * sizeof(int32_t);
    size_t pt_bytes = u->payload.point_len * sizeof(double);
    /* doubles first so they stay aligned; then ints; then bytes */
    size_t need = pt_bytes + row_bytes + raw_len + u->stream_id_len + u->entity_id_len + 1;
    uint8_t *blob = malloc(need);
    if (!blob)
        return DP_ENOMEM;
    dp_gate_held *h = &g->held[g->n_held];
    h->u = *u;
    h->origin = origin;
    h->blob = blob;
    h->raw_len = raw_len;
    uint8_t *at = blob;
    if (pt_bytes) {
        memcpy(at, u->payload.point, pt_bytes);
        h->u.payload.point = (const double *)(void *)at;
        at += pt_bytes;
    }
    if (row_bytes) {
        memcpy(at, u->payload.row, row_bytes);
        h->u.payload.row = (const int32_t *)(void *)at;
        at += row_bytes;
    }
    if (raw_len)
        memcpy(at, raw, raw_len);
    h->raw = at;
    at += raw_len;
    memcpy(at, u->stream_id, u->stream_id_len);
    h->u.stream_id = (const char *)at;
    at += u->stream_id_len;
    if (u->entity_id) {
        memcpy(at, u->entity_id, u->entity_id_len);
        h->u.entity_id = (const char *)at;
    }
    g->n_held++;
    return DP_OK;
}

static void put_u64(crypto_generichash_state *h, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    crypto_generichash_update(h, b, 8);
}

/* Adds one used update to the open step's multiset digest.  Every field
 * is length-prefixed so that no two different updates encode alike. */
static void digest_add(dp_step_gate *g, const dp_update *u)
{
    crypto_generichash_state h;
    uint8_t out[DP_GATE_DIGEST_BYTES];
    crypto_generichash_init(&h, g->digest_key, sizeof g->digest_key, sizeof out);
    put_u64(&h, (uint64_t)u->kind);
    put_u64(&h, u->step);
    put_u64(&h, u->entity_id ? u->entity_id_len + 1 : 0);
    if (u->entity_id)
        crypto_generichash_update(&h, (const uint8_t *)u->entity_id, u->entity_id_len);
    put_u64(&h, (uint64_t)u->payload.kind);
    put_u64(&h, (uint64_t)u->payload.category);
    put_u64(&h, u->payload.row_len);
    for (size_t i = 0; i < u->payload.row_len; i++)
        put_u64(&h, (uint64_t)(int64_t)u->payload.row[i]);
    put_u64(&h, u->payload.point_len);
    for (size_t i = 0; i < u->payload.point_len; i++) {
        uint64_t bits;
        memcpy(&bits, &u->payload.point[i], sizeof bits);
        put_u64(&h, bits);
    }
    crypto_generichash_final(&h, out, sizeof out);
    for (size_t lane = 0; lane < DP_GATE_DIGEST_BYTES / 8; lane++) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v |= (uint64_t)out[8 * lane + (size_t)i] << (8 * i);
        g->digest_sum[lane] += v;
    }
}

void dp_gate_track_input(dp_step_gate *g, const uint8_t key[32])
{
    g->digest_on = 1;
    memcpy(g->digest_key, key, sizeof g->digest_key);
    memset(g->digest_sum, 0, sizeof g->digest_sum);
}

void dp_gate_open_digest(const dp_step_gate *g, uint8_t out[DP_GATE_DIGEST_BYTES])
{
    for (size_t lane = 0; lane < DP_GATE_DIGEST_BYTES / 8; lane++)
        for (int i = 0; i < 8; i++)
            out[8 * lane + (size_t)i] = (uint8_t)(g->digest_sum[lane] >> (8 * i));
}

static int close_due_now(const dp_step_gate *g)
{
    return g->policy.close_on_roster && dp_synth_roster_complete(g->synth);
}

int dp_gate_offer(dp_step_gate *g, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len,
                  dp_gate_verdict *v)
{
    char msg[160];
    memset(v, 0, sizeof *v);
    uint64_t open = dp_synth_open_step(g->synth);
    if (u->kind == DP_UPDATE_CLOSE_STEP) {
        if (u->step < open) {
            v->action = DP_GATE_IGNORED;
            return DP_OK;
        }
        if (dp_synth_exhausted(g->synth)) {
            reject(v, DP_REJECT_EXHAUSTED, NULL);
            return DP_OK;
        }
        if (u->step > open) {
            snprintf(msg, sizeof msg, "CLOSE_STEP for step %llu but step %llu is open", (unsigned long long)u->step,
                     (unsigned long long)open);
            reject(v, DP_REJECT_FUTURE_STEP, msg);
            return DP_OK;
        }
        v->action = DP_GATE_CLOSE;
        return DP_OK;
    }
    if (dp_synth_exhausted(g->synth)) {
        reject(v, DP_REJECT_EXHAUSTED, NULL);
        return DP_OK;
    }
    if (u->step != open) {
        if (u->step > open && u->step - open <= g->policy.lookahead) {
            int rc = hold(g, u, origin, raw, raw_len);
            if (rc == DP_OK)
                v->action = DP_GATE_BUFFERED;
            return rc;
        }
        dp_reject_reason r = u->step < open ? DP_REJECT_LATE : DP_REJECT_FUTURE_STEP;
        snprintf(msg, sizeof msg, "%s (update for step %llu, open step %llu)", dp_reject_reason_text(r),
                 (unsigned long long)u->step, (unsigned long long)open);
        reject(v, r, msg);
        return DP_OK;
    }
    dp_reject_reason reason = DP_REJECT_NONE;
    int rc = dp_synth_ingest(g->synth, u, &reason);
    if (rc != DP_OK)
        return rc;
    if (reason != DP_REJECT_NONE) {
        reject(v, reason, NULL);
        return DP_OK;
    }
    v->action = DP_GATE_USED;
    if (g->digest_on)
        digest_add(g, u);
    v->close_after = close_due_now(g);
    return DP_OK;
}

int dp_gate_run_eligible(const dp_step_gate *g, const dp_update *u)
{
    return u->kind != DP_UPDATE_CLOSE_STEP && !dp_synth_exhausted(g->synth) &&
           u->step == dp_synth_open_step(g->synth);
}

int dp_gate_offer_run(dp_step_gate *g, const dp_update *u, size_t n, dp_reject_reason *reasons, size_t *taken,
                      int *close_due)
{
    *taken = 0;
    *close_due = 0;
    int rc = dp_synth_ingest_batch(g->synth, u, n, reasons);
    if (rc != DP_OK)
        return rc;
    size_t cut = n;
    if (close_due_now(g)) {
        /* The roster completed at the run's last used update j: every
         * later update of the step was rejected (each rostered entity has
         * reported) and a rejection changes no state, so the run is cut
         * after j and the rest is offered again after the close. */
        while (cut > 0 && reasons[cut - 1] != DP_REJECT_NONE)
            cut--;
        if (cut == 0)   /* cannot happen: the roster was incomplete before the run */
            return DP_ESTATE;
        *close_due = 1;
    }
    if (g->digest_on)
        for (size_t i = 0; i < cut; i++)
            if (reasons[i] == DP_REJECT_NONE)
                digest_add(g, &u[i]);
    *taken = cut;
    return DP_OK;
}

/* After a close: apply what was held for the step that opened. */
static int opened(dp_step_gate *g, dp_gate_applied_fn applied, void *ctx, int *close_due)
{
    int rc = DP_OK;
    memset(g->digest_sum, 0, sizeof g->digest_sum);
    /* Apply what was held for the step that just opened, in arrival
     * order; keep the rest (none while lookahead <= 1). */
    uint64_t open = dp_synth_open_step(g->synth);
    size_t keep = 0;
    for (size_t i = 0; i < g->n_held; i++) {
        dp_gate_held *h = &g->held[i];
        if (h->u.step != open || rc != DP_OK) {
            g->held[keep++] = *h;
            continue;
        }
        dp_reject_reason reason = DP_REJECT_NONE;
        if (dp_synth_exhausted(g->synth))
            reason = DP_REJECT_EXHAUSTED;
        else if ((rc = dp_synth_ingest(g->synth, &h->u, &reason)) != DP_OK) {
            g->held[keep++] = *h;
            continue;
        }
        if (reason == DP_REJECT_NONE && g->digest_on)
            digest_add(g, &h->u);
        rc = applied ? applied(ctx, &h->u, h->origin, h->raw, h->raw_len, reason) : DP_OK;
        free(h->blob);
    }
    g->n_held = keep;
    if (rc == DP_OK)
        *close_due = close_due_now(g);
    return rc;
}

int dp_gate_close(dp_step_gate *g, const dp_release_sink *sink, dp_gate_applied_fn applied, void *ctx,
                  int *close_due, char *errstr, size_t errstr_size)
{
    *close_due = 0;
    int rc = dp_synth_close_step(g->synth, sink, errstr, errstr_size);
    return rc != DP_OK ? rc : opened(g, applied, ctx, close_due);
}

int dp_gate_close_ingest(dp_step_gate *g, dp_stats *out, dp_gate_applied_fn applied, void *ctx, int *close_due,
                         char *errstr, size_t errstr_size)
{
    *close_due = 0;
    int rc = dp_synth_close_ingest(g->synth, out, errstr, errstr_size);
    return rc != DP_OK ? rc : opened(g, applied, ctx, close_due);
}

uint64_t dp_gate_first_held_origin(const dp_step_gate *g)
{
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < g->n_held; i++)
        if (g->held[i].origin < first)
            first = g->held[i].origin;
    return first;
}

size_t dp_gate_held_count(const dp_step_gate *g) { return g->n_held; }
