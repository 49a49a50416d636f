/* demo_kafka.c — `dpstream demo` through Kafka (see demo_kafka.h).
 *
 * Why step by step: the mock cluster keeps only the newest ~5 MiB per
 * partition (docs/kafka.md §6), so the panel is streamed — one step's updates,
 * then that step's releases — never preloaded.  Releases come back through
 * export_assemble (mock_harness.c): each (stream, step) is fed to the demo
 * views exactly once, after its record count and checksum are verified,
 * so the views see the same release sequence as the offline demo's sinks. */
#include "demo/demo_kafka.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "demo/demo_marginal.h"
#include "demo/demo_spatial.h"
#include "demo/demo_adaptive.h"
#include "demo/demo_hypercube.h"
#include "demo/mock_harness.h"
#include "core/dp_error.h"

typedef struct demo_run {
    dp_demo_state  *d;
    dp_demo_table  *tab;
    dp_demo_map    *map;
    dp_demo_modes  *modes;
    dp_demo_drops  *drops;
    dp_release_sink win, cum, tbl, mp, md, dr;
    uint64_t        win_budget_step, cum_budget_step;   /* newest budget event seen per stream */
} demo_run;

static int is_stream(const char *id, size_t len, const char *name)
{
    return len == strlen(name) && memcmp(id, name, len) == 0;
}

/* A complete release from Kafka: replay it into the demo's sinks exactly
 * as the synthesizer emitted it (records in release order, then the manifest). */
static int on_release(void *ctx, const dp_release_manifest *m, const dp_synth_record *recs, size_t n)
{
    demo_run *r = ctx;
    const dp_release_sink *s = is_stream(m->stream_id, m->stream_id_len, DP_DEMO_WINDOW_STREAM) ? &r->win
                               : is_stream(m->stream_id, m->stream_id_len, DP_DEMO_CUMULATIVE_STREAM) ? &r->cum
                               : is_stream(m->stream_id, m->stream_id_len, DP_DEMO_TABLE_STREAM)      ? &r->tbl
                               : is_stream(m->stream_id, m->stream_id_len, DP_DEMO_MAP_STREAM)        ? &r->mp
                               : is_stream(m->stream_id, m->stream_id_len, DP_DEMO_MODES_STREAM)      ? &r->md
                               : is_stream(m->stream_id, m->stream_id_len, DP_DEMO_DROPS_STREAM)      ? &r->dr
                                                                                                        : NULL;
    if (!s)
        return DP_OK;   /* not ours */
    for (size_t i = 0; i < n; i++) {
        int rc = s->record(s->ctx, &recs[i]);
        if (rc != DP_OK)
            return rc;
    }
    return s->manifest(s->ctx, m);
}

/* Budget events: the last copy per (stream, step) wins (the mock shows
 * aborted transactions' copies too, and those come first). */
static int on_budget(void *ctx, const dp_budget_event *e)
{
    demo_run *r = ctx;
    if (is_stream(e->stream_id, e->stream_id_len, DP_DEMO_WINDOW_STREAM)) {
        if (e->step >= r->win_budget_step) {
            r->win_budget_step = e->step;
            return r->win.budget(r->win.ctx, e);
        }
    } else if (is_stream(e->stream_id, e->stream_id_len, DP_DEMO_CUMULATIVE_STREAM)) {
        if (e->step >= r->cum_budget_step) {
            r->cum_budget_step = e->step;
            return r->cum.budget(r->cum.ctx, e);
        }
    } else if (is_stream(e->stream_id, e->stream_id_len, DP_DEMO_TABLE_STREAM)) {
        if (e->step >= r->tab->ledger.budget_step)
            return r->tbl.budget(r->tbl.ctx, e);
    } else if (is_stream(e->stream_id, e->stream_id_len, DP_DEMO_MAP_STREAM)) {
        if (e->step >= r->map->ledger.budget_step)
            return r->mp.budget(r->mp.ctx, e);
    } else if (is_stream(e->stream_id, e->stream_id_len, DP_DEMO_MODES_STREAM)) {
        if (e->step >= r->modes->ledger.budget_step)
            return r->md.budget(r->md.ctx, e);
    } else if (is_stream(e->stream_id, e->stream_id_len, DP_DEMO_DROPS_STREAM)) {
        if (e->step >= r->drops->ledger.budget_step)
            return r->dr.budget(r->dr.ctx, e);
    }
    return DP_OK;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_t *demo_streams(const dp_demo_params *p)
{
    json_t *w = dp_demo_window_config(p), *c = dp_demo_cumulative_config(p), *t = dp_demo_table_config(p),
           *m = dp_demo_map_config(p), *a = dp_demo_modes_config(p), *h = dp_demo_drops_config(p);
    if (!w || !c || !t || !m || !a || !h) {
        json_decref(w);
        json_decref(c);
        json_decref(t);
        json_decref(m);
        json_decref(a);
        json_decref(h);
        return NULL;
    }
    return json_pack("[{s:s, s:s, s:o}, {s:s, s:s, s:o}, {s:s, s:s, s:o}, {s:s, s:s, s:o}, {s:s, s:s, s:o}, "
                     "{s:s, s:s, s:o}]", "match",
                     DP_DEMO_WINDOW_STREAM, "synthesizer", "window", "config", w, "match", DP_DEMO_CUMULATIVE_STREAM,
                     "synthesizer", "cumulative", "config", c, "match", DP_DEMO_TABLE_STREAM, "synthesizer",
                     "marginal", "config", t, "match", DP_DEMO_MAP_STREAM, "synthesizer", "spatial", "config", m,
                     "match", DP_DEMO_MODES_STREAM, "synthesizer", "adaptive", "config", a, "match",
                     DP_DEMO_DROPS_STREAM, "synthesizer", "hypercube", "config", h);
}

/* The CLOSE_STEP marker of `stream` for month t. */
static int produce_marker(dp_mock_harness *h, const char *stream, uint64_t t, char *errstr, size_t errn)
{
    dp_update mk = {.stream_id = stream, .stream_id_len = strlen(stream), .step = t, .kind = DP_UPDATE_CLOSE_STEP};
    return dp_mock_produce(h, &mk, errstr, errn);
}

static int produce_update(void *ctx, const dp_update *u)
{
    char err[256];
    return dp_mock_produce(ctx, u, err, sizeof err);
}

int dp_demo_run_kafka(const dp_demo_params *p, const dp_key *key, int step_timeout_ms, FILE *f, char *errstr,
                      size_t errn)
{
    dp_panel_params pp;
    dp_demo_panel_params(p, &pp);
    dp_panel_gen gen;
    int rc = dp_panel_gen_init(&gen, &pp, errstr, errn);
    if (rc != DP_OK)
        return rc;
    dp_demo_state d;
    dp_demo_table tab;
    dp_demo_table_init(&tab, p);
    dp_demo_map mp;
    dp_demo_map_init(&mp, p);
    dp_demo_modes md;
    dp_demo_modes_init(&md, p);
    dp_demo_drops dr;
    dp_demo_drops_init(&dr, p);
    if ((rc = dp_demo_state_init(&d, p)) != DP_OK) {
        dp_demo_table_free(&tab);
        dp_demo_map_free(&mp);
        dp_demo_modes_free(&md);
        dp_demo_drops_free(&dr);
        dp_panel_gen_free(&gen);
        return dp_err(errstr, errn, rc, "demo: cannot set up views");
    }
    dp_mock_harness *h = NULL;
    json_t *streams = demo_streams(p);
    if (!streams) {
        rc = dp_err(errstr, errn, DP_ENOMEM, "demo: out of memory");
        goto out;
    }
    if ((rc = dp_mock_start(&h, "dpstream-demo", streams, 1, 1, errstr, errn)) != DP_OK)
        goto out;
    if ((rc = dp_mock_processor_start(h, key, "demo", 1000, errstr, errn)) != DP_OK)
        goto out;

    demo_run r = {.d = &d, .tab = &tab, .map = &mp, .modes = &md, .drops = &dr, .win = dp_demo_window_sink(&d),
                  .cum = dp_demo_cumulative_sink(&d), .tbl = dp_demo_table_sink(&tab), .mp = dp_demo_map_sink(&mp),
                  .md = dp_demo_modes_sink(&md), .dr = dp_demo_drops_sink(&dr)};
    dp_mock_outputs outs = {.sink = {.ctx = &r, .release = on_release, .notice = NULL},
                            .budget = on_budget,
                            .ctx = &r};
    dp_demo_print_intro_how(f, p, "Kafka: the real processor on librdkafka's in-process mock cluster");
    fflush(f);
    const char *ids[2] = {DP_DEMO_WINDOW_STREAM, DP_DEMO_CUMULATIVE_STREAM};
    char entity[32];
    for (uint64_t t = 1; t <= p->steps && rc == DP_OK; t++) {
        if ((rc = dp_panel_gen_next(&gen)) != DP_OK)
            break;
        for (int s = 0; s < 2 && rc == DP_OK; s++) {
            dp_update u = {.stream_id = ids[s], .stream_id_len = strlen(ids[s]), .step = t,
                           .kind = DP_UPDATE_REPORT, .entity_id = entity,
                           .payload = {.kind = DP_PAYLOAD_CATEGORY}};
            for (uint64_t i = 0; i < p->n && rc == DP_OK; i++) {
                u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "u%" PRIu64, i + 1);
                u.payload.category = gen.value[i];
                rc = dp_mock_produce(h, &u, errstr, errn);
            }
            /* Step 1 fixes the roster and only a marker closes it; later
             * steps close when the roster is complete and the marker is a
             * harmless duplicate (docs/design.md §2). */
            dp_update mk = {.stream_id = ids[s], .stream_id_len = strlen(ids[s]), .step = t,
                            .kind = DP_UPDATE_CLOSE_STEP};
            if (rc == DP_OK)
                rc = dp_mock_produce(h, &mk, errstr, errn);
        }
        if (rc == DP_OK && (rc = dp_demo_table_month(&tab, t, produce_update, h)) != DP_OK)
            rc = dp_err(errstr, errn, rc, "demo: producing the table stream's month %" PRIu64, t);
        if (rc == DP_OK)
            rc = produce_marker(h, DP_DEMO_TABLE_STREAM, t, errstr, errn);
        if (rc == DP_OK && (rc = dp_demo_map_month(&mp, t, produce_update, h)) != DP_OK)
            rc = dp_err(errstr, errn, rc, "demo: producing the map stream's month %" PRIu64, t);
        if (rc == DP_OK)
            rc = produce_marker(h, DP_DEMO_MAP_STREAM, t, errstr, errn);
        if (rc == DP_OK && (rc = dp_demo_modes_month(&md, t, produce_update, h)) != DP_OK)
            rc = dp_err(errstr, errn, rc, "demo: producing the modes stream's month %" PRIu64, t);
        if (rc == DP_OK)
            rc = produce_marker(h, DP_DEMO_MODES_STREAM, t, errstr, errn);
        if (rc == DP_OK && (rc = dp_demo_drops_month(&dr, t, produce_update, h)) != DP_OK)
            rc = dp_err(errstr, errn, rc, "demo: producing the drops stream's month %" PRIu64, t);
        if (rc == DP_OK)
            rc = produce_marker(h, DP_DEMO_DROPS_STREAM, t, errstr, errn);
        if (rc == DP_OK)
            rc = dp_mock_flush(h, step_timeout_ms, errstr, errn);
        if (rc == DP_OK)
            rc = dp_demo_truth_step(&d, gen.value, (size_t)p->n);
        int64_t deadline = mono_ms() + step_timeout_ms;
        const dp_export_asm *as = dp_mock_assembler(h);
        while (rc == DP_OK &&
               !(dp_export_asm_released(as, ids[0], strlen(ids[0]), t) &&
                 dp_export_asm_released(as, ids[1], strlen(ids[1]), t) &&
                 dp_export_asm_released(as, DP_DEMO_TABLE_STREAM, sizeof DP_DEMO_TABLE_STREAM - 1, t) &&
                 dp_export_asm_released(as, DP_DEMO_MAP_STREAM, sizeof DP_DEMO_MAP_STREAM - 1, t) &&
                 dp_export_asm_released(as, DP_DEMO_MODES_STREAM, sizeof DP_DEMO_MODES_STREAM - 1, t) &&
                 dp_export_asm_released(as, DP_DEMO_DROPS_STREAM, sizeof DP_DEMO_DROPS_STREAM - 1, t) &&
                 r.win_budget_step >= t && r.cum_budget_step >= t && tab.ledger.budget_step >= t && mp.ledger.budget_step >= t &&
                 md.ledger.budget_step >= t && dr.ledger.budget_step >= t)) {
            if (!dp_mock_processor_running(h)) {
                rc = dp_mock_processor_stop(h, errstr, errn);
                if (rc == DP_OK)
                    rc = dp_err(errstr, errn, DP_ESTATE, "demo: the processor stopped before step %" PRIu64
                                                         " was released", t);
                break;
            }
            if (mono_ms() > deadline) {
                rc = dp_err(errstr, errn, DP_EIO, "demo: step %" PRIu64 " was not released within %d ms",
                            t, step_timeout_ms);
                break;
            }
            rc = dp_mock_poll_outputs(h, 50, &outs, errstr, errn);
        }
        if (rc != DP_OK)
            break;
        if (d.win_syn.bad || d.cum_syn.bad || dp_demo_table_note(&tab, t) != DP_OK ||
            dp_demo_map_note(&mp, t) != DP_OK || dp_demo_modes_note(&md, t) != DP_OK ||
            dp_demo_drops_note(&dr, t) != DP_OK || dp_mock_dead_letters(h) ||
            dp_mock_undecodable(h)) {
            rc = dp_err(errstr, errn, DP_ESTATE, "demo: unexpected output (%" PRIu64 " dead letters, %" PRIu64
                        " undecodable messages, or a release not in the documented format)",
                        dp_mock_dead_letters(h), dp_mock_undecodable(h));
            break;
        }
        dp_demo_print_step(f, &d, t);
        fflush(f);
    }
    if (rc == DP_OK)
        rc = dp_mock_processor_stop(h, errstr, errn);
    if (rc == DP_OK) {
        dp_demo_print_ledger(f, &d);
        dp_demo_table_print(f, &tab);
        dp_demo_map_print(f, &mp);
        dp_demo_modes_print(f, &md);
        dp_demo_drops_print(f, &dr);
    }
out:
    dp_mock_destroy(h);
    json_decref(streams);
    dp_demo_state_free(&d);
    dp_demo_table_free(&tab);
    dp_demo_map_free(&mp);
    dp_demo_modes_free(&md);
    dp_demo_drops_free(&dr);
    dp_panel_gen_free(&gen);
    return rc;
}
