/* throughput.c — bench_throughput: the Kafka processor (`dpstream run`,
 * stream/processor.h) on a real broker (scripts/kafka-local.sh), in one run:
 *
 *   1. fill  — an updates topic with n individuals × T steps of Avro
 *      Updates (one stream "tp-0", window synthesizer k = 3, c = 2), a
 *      CLOSE_STEP marker after each step, produced by a fast idempotent
 *      producer (acks=all, large linger/batches, no compression by default) with the codec, as
 *      load_kafka.c encodes them;
 *   2. rates — (a) raw consume of that topic with exactly the processor's
 *      consumer settings (same config, same fixed properties, same
 *      consume loop) and no processing, then (a') the same
 *      with Avro decoding of every message; (b) dp_processor_run end to end
 *      in a thread (fresh group and transactional id): decode, route,
 *      ingest, close steps, produce releases, commit.  Completion is the
 *      moment the last step's budget event is visible to a read_committed
 *      reader.  Two windows are reported:
 *        total  — from subscribe / processor start (group join, setup,
 *                 roster building at step 1 included) to the end;
 *        steady — steps 2..T: for (a) from consuming step 1's marker to
 *                 the last message, for (b) from step 1's budget event to
 *                 step T's; both cover the same (T-1)(n+1) messages;
 *      (c) the fair ceiling (issue 41 §1, copy_pipeline.h): a bare
 *      librdkafka consume→produce pipeline on the same topic that commits,
 *      per step, a transaction holding exactly the messages (and bytes)
 *      dpstream's transaction of that step held, with the consumed
 *      offsets; timed as (b), through its own budget topic.  RESULT
 *      ceiling prints b/c and each pass's process CPU per message
 *      (--no-copy-pass leaves it out);
 *   3. latency — with a fresh processor on fresh topics, S streams of
 *      n_lat individuals (default 25 000) over L steps, one step of one
 *      stream at a time: produce the step's updates, wait until the
 *      processor has had time to ingest them (--settle-ms), then time from
 *      just before the CLOSE_STEP marker is produced to the moment its
 *      budget event (the last message of the step's transaction) is
 *      dequeued by a read_committed reader.  At steps >= 2 the last
 *      individual does not report (it is imputed by carry-forward): a
 *      complete roster would close the step on its last update, before
 *      the marker, and the marker would measure nothing.
 *
 * --copy-of PREFIX --stream ID --per-step M --steps T runs only the copy
 * pass (c), over the topics of a deployment that `dpstream run` has already
 * processed: any synthesizer's workload (bench/throughput/synth_e2e.sh).
 *
 * Also printed: the process's CPU seconds in each window and the processor
 * thread's own CPU time (pthread CPU clock), so a run on a loaded machine
 * still shows the cost per update and how busy the processor was.
 * --sharded runs the two roles instead (issue 40 §4): bench/throughput/sharded.sh
 * with `dpstream run --role ingest|release` processes (run_sharded below).
 *
 * --kafka NAME=VALUE adds a librdkafka property to the config's "kafka"
 * object, i.e. to every client alike (e.g. queued.min.messages: librdkafka
 * < 2.2 backs off 1 s whenever a partition's prefetch queue is full, which
 * throttles any consumer slower than the fetcher; see bench/RESULTS.md).
 *
 * Every topic created here has a unique "bench-tp-<pid>-<ns>" prefix and is
 * deleted at the end (with the consumer groups), also after a failure,
 * unless --keep-topics.  The broker is never started or stopped here.
 *
 * Not a test: numbers depend on the machine and its load.  No output of
 * dpstream depends on the clock; only this driver reads it. */
#define _GNU_SOURCE   /* pthread_setname_np */
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "connectors/panel/panel_gen.h"
#include "bench_kafka.h"
#include "copy_pipeline.h"
#include "state_disk.h"
#include "codec/codec.h"
#include "core/buf.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/processor.h"
#include "stream/stream_config.h"


typedef struct bench_opts {
    uint64_t    n, steps;                  /* throughput phase */
    uint64_t    lat_n, lat_streams, lat_steps;
    int64_t     settle_ms;                 /* 0: derived from the measured end-to-end rate */
    const char *bootstrap;
    const char *compression;
    uint32_t    chunk_records;
    int64_t     timeout_s;
    int         no_throughput, no_latency, no_decode_pass, no_copy_pass, keep_topics, verbose, debug_log;
    const char *copy_of, *copy_stream;     /* --copy-of PREFIX --stream ID: only the copy pass (below) */
    const char *kafka_kv[16][2];           /* --kafka NAME=VALUE: added to the config's "kafka" object */
    size_t      n_kafka_kv;
    char       *kafka_buf[16];
} bench_opts;

/* --- configuration ------------------------------------------------------------------ */

static dp_stream_config *make_config(const bench_opts *o, const char *prefix, const char *route_prefix,
                                     uint64_t horizon, char *errstr, size_t errn)
{
    /* seed 000's window synthesizer at the accuracy benchmark's settings */
    json_t *win = json_pack("{s:I, s:i, s:i, s:f, s:s}", "horizon", (json_int_t)horizon, "k", 3, "categories", 2,
                            "rho", 0.005, "neighbors", "replace");
    json_t *root = win ? json_pack("{s:{s:s}, s:{s:s}, s:[{s:s, s:s, s:o}]}", "topics", "prefix", prefix,
                                   "kafka", "bootstrap.servers", o->bootstrap,
                                   "streams", "prefix", route_prefix, "synthesizer", "window", "config", win)
                       : NULL;
    /* every client (processor, raw consumer, producers) gets the extra
     * properties, so the raw consumer keeps the processor's settings */
    json_t *kafka = root ? json_object_get(root, "kafka") : NULL;
    for (size_t i = 0; kafka && i < o->n_kafka_kv; i++)
        json_object_set_new(kafka, o->kafka_kv[i][0], json_string(o->kafka_kv[i][1]));
    if (!root) {
        dp_err(errstr, errn, DP_ENOMEM, "out of memory");
        return NULL;
    }
    dp_stream_config *cfg = NULL;
    if (dp_stream_config_from_json(&cfg, root, errstr, errn) != DP_OK)
        cfg = NULL;
    json_decref(root);
    return cfg;
}

/* --- phases ----------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* nearest-rank percentile */
static double pct_ms(const int64_t *sorted_us, size_t n, double p)
{
    size_t r = (size_t)((p / 100.0) * (double)n + 0.999999999);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return (double)sorted_us[r - 1] / 1000.0;
}

/* The windows of a pass whose thread `pt` releases through `w`'s budget
 * topic: t0 / pc0 are set by the caller just before the thread starts. */
typedef struct pass_times {
    int64_t t0, t_step1, t_end;
    double  pc0, pc1, pc2;   /* process CPU at start, step 1, step T */
    double  tc1, tc2;        /* the pass thread's own CPU at step 1, step T */
    double  mc1, mc2;        /* the machine's busy CPU at step 1, step T */
    int64_t disk1, disk2;    /* the state topic on the broker's disk at step 1, step T */
} pass_times;

static void pass_begin(pass_times *m)
{
    memset(m, 0, sizeof *m);
    m->t0 = now_us();
    m->pc0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
}

static int time_pass(watcher *w, proc_thread *pt, uint64_t steps, const char *state_topic, int64_t deadline,
                     pass_times *m, char *errstr, size_t errn)
{
    clockid_t tclock;
    if (pthread_getcpuclockid(pt->thread, &tclock) != 0)
        return dp_err(errstr, errn, DP_EIO, "no CPU clock for the pass's thread");
    int rc = watcher_wait(w, 0, 1, pt, deadline, 10, &m->t_step1, errstr, errn);
    if (rc != DP_OK)
        return rc;
    m->pc1 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    m->tc1 = cpu_s(tclock);
    m->mc1 = machine_busy_s();
    m->disk1 = bench_topic_disk_bytes(bench_broker_data_dir(), state_topic);
    if ((rc = watcher_wait(w, 0, steps, pt, deadline, 10, &m->t_end, errstr, errn)) != DP_OK)
        return rc;
    m->pc2 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    m->tc2 = cpu_s(tclock);   /* before the join: the clock dies with the thread */
    m->mc2 = machine_busy_s();
    m->disk2 = bench_topic_disk_bytes(bench_broker_data_dir(), state_topic);
    return DP_OK;
}

static double steady_s(const pass_times *m) { return (double)(m->t_end - m->t_step1) / 1e6; }

/* 1. fill: n individuals x T steps and a marker after each step. */
static int fill_updates(const bench_opts *o, const dp_stream_config *cfg, const char *stream, char *errstr,
                        size_t errn)
{
    producer p = {0};
    dp_panel_gen g;
    memset(&g, 0, sizeof g);
    const uint64_t total = (o->n + 1) * o->steps;
    int rc = panel_init(&g, o->n, o->steps, errstr, errn);
    if (rc == DP_OK)
        rc = producer_open(&p, cfg, 1, o->compression, errstr, errn);
    int64_t f0 = now_us();
    for (uint64_t t = 1; t <= o->steps && rc == DP_OK; t++) {
        if ((rc = dp_panel_gen_next(&g)) != DP_OK)
            break;
        rc = send_step(&p, stream, &g, t, o->n, errstr, errn);
        if (rc == DP_OK)
            rc = send_marker(&p, stream, t, errstr, errn);
    }
    if (rc == DP_OK)
        rc = producer_flush(&p, errstr, errn);
    if (rc == DP_OK) {
        double fill_s = (double)(now_us() - f0) / 1e6;
        int64_t hw = high_watermark(p.rk, cfg->topic_updates);
        printf("fill: %" PRIu64 " messages (%" PRIu64 " individuals x %" PRIu64 " steps + %" PRIu64
               " markers) in %.2f s = %.0f msg/s (idempotent, acks=all, linger 50 ms, %s); topic high watermark %"
               PRId64 "\n",
               total, o->n, o->steps, o->steps, fill_s, (double)total / fill_s, o->compression, hw);
        fflush(stdout);
        /* idempotent producer and one partition: the offsets are exactly 0..total-1 */
        if (hw != (int64_t)total)
            rc = dp_err(errstr, errn, DP_ESTATE, "updates topic holds %" PRId64 " messages, expected %" PRIu64, hw,
                        total);
    }
    producer_close(&p);
    dp_panel_gen_free(&g);
    return rc;
}

/* 2a. raw consume, then (a') with Avro decoding. */
static int raw_passes(const bench_opts *o, const dp_stream_config *cfg, const char *topic_prefix, created *cr,
                      int64_t deadline, raw_result *raw, char *errstr, size_t errn)
{
    char group[200];
    const uint64_t per_step = o->n + 1, total = per_step * o->steps;
    raw_result rawd;
    snprintf(group, sizeof group, "%s.raw", topic_prefix);
    add_group(cr, group);
    int rc = raw_consume(cfg, group, total, per_step, 0, deadline, raw, errstr, errn);
    if (rc != DP_OK)
        return rc;
    printf("raw consume (no decode): %" PRIu64 " msgs, %.1f MB payload; total %.2f s = %.0f msg/s; "
           "steady (steps 2..T) %.2f s = %.0f msg/s; process CPU %.2f s total, %.2f s steady = %.0f msg per CPU-s; "
           "machine busy %.2f of %ld CPUs (steady)\n",
           raw->msgs, (double)raw->bytes / 1e6, raw->total_s, (double)raw->msgs / raw->total_s, raw->steady_s,
           (double)(total - per_step) / raw->steady_s, raw->total_cpu, raw->steady_cpu,
           (double)(total - per_step) / raw->steady_cpu, raw->steady_machine / raw->steady_s,
           sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
    if (o->no_decode_pass)
        return DP_OK;
    snprintf(group, sizeof group, "%s.rawdecode", topic_prefix);
    add_group(cr, group);
    if ((rc = raw_consume(cfg, group, total, per_step, 1, deadline, &rawd, errstr, errn)) != DP_OK)
        return rc;
    printf("raw consume + Avro decode: total %.2f s = %.0f msg/s; steady %.2f s = %.0f msg/s; "
           "%.0f msg per CPU-s (steady); %" PRIu64 " decode errors\n",
           rawd.total_s, (double)rawd.msgs / rawd.total_s, rawd.steady_s,
           (double)(total - per_step) / rawd.steady_s, (double)(total - per_step) / rawd.steady_cpu,
           rawd.decode_errors);
    fflush(stdout);
    if (rawd.decode_errors)
        return dp_err(errstr, errn, DP_ESTATE, "raw decode pass: %" PRIu64 " undecodable updates", rawd.decode_errors);
    return DP_OK;
}

/* 2b. dp_processor_run end to end. */
static int dpstream_pass(const bench_opts *o, const dp_stream_config *cfg, const char *topic_prefix, created *cr,
                         int64_t deadline, pass_times *m, char *errstr, size_t errn)
{
    char group[200];
    const uint64_t per_step = o->n + 1, total = per_step * o->steps, steady_msgs = total - per_step;
    watcher w = {0};
    proc_thread pt = {0};
    const char *ids[1] = {"tp-0"};
    snprintf(group, sizeof group, "%s.processor", topic_prefix);   /* the processor's default group id */
    add_group(cr, group);
    int rc = watcher_open(&w, cfg, "bench-watch", o->steps, ids, 1, "50", errstr, errn);
    pass_begin(m);
    if (rc == DP_OK)
        rc = proc_start(&pt, cfg, o->chunk_records, errstr, errn);
    if (rc == DP_OK)
        rc = time_pass(&w, &pt, o->steps, cfg->topic_state, deadline, m, errstr, errn);
    if (rc == DP_OK)
        rc = proc_stop(&pt, errstr, errn);
    if (rc != DP_OK)
        goto out;
    int64_t dlq = high_watermark(w.rk, cfg->topic_dead_letter);
    int64_t synth = high_watermark(w.rk, cfg->topic_synthetic);
    int64_t state = high_watermark(w.rk, cfg->topic_state);
    watcher_poll(&w, 200);
    uint64_t released = 0;
    for (uint64_t t = 1; t <= o->steps; t++) {
        released += w.s[0].seen_us[t] != 0;
        if (o->verbose && w.s[0].seen_us[t])
            printf("  step %" PRIu64 " released at +%.3f s\n", t, (double)(w.s[0].seen_us[t] - m->t0) / 1e6);
    }
    double tot_s = (double)(m->t_end - m->t0) / 1e6, st_s = steady_s(m);
    printf("end to end: step 1 released %.2f s after the processor started\n", (double)(m->t_step1 - m->t0) / 1e6);
    printf("end to end (dpstream run): total %.2f s = %.0f msg/s; steady (steps 2..T) %.2f s = %.0f msg/s; "
           "%" PRIu64 "/%" PRIu64 " steps released; output offsets: synthetic %" PRId64 ", state %" PRId64
           ", dead letters %" PRId64 "\n",
           tot_s, (double)total / tot_s, st_s, (double)steady_msgs / st_s, released, o->steps, synth, state, dlq);
    printf("end to end CPU: process %.2f s total, %.2f s steady = %.0f msg per CPU-s; processor thread %.2f s "
           "steady = %.2f us/msg (%.0f%% of the steady wall time); machine busy %.2f of %ld CPUs (steady)\n",
           m->pc2 - m->pc0, m->pc2 - m->pc1, (double)steady_msgs / (m->pc2 - m->pc1), m->tc2 - m->tc1,
           1e6 * (m->tc2 - m->tc1) / (double)steady_msgs, 100.0 * (m->tc2 - m->tc1) / st_s, (m->mc2 - m->mc1) / st_s,
           sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
    if (released != o->steps || dlq != 0)
        rc = dp_err(errstr, errn, DP_ESTATE, "unexpected outputs: %" PRIu64 " steps released, %" PRId64
                    " dead letters", released, dlq);
out:
    if (pt.started) {
        char e2[256];
        proc_stop(&pt, e2, sizeof e2);
    }
    watcher_close(&w);
    return rc;
}

/* 2c. the copy pipeline (copy_pipeline.h): the same updates topic, the
 * dpstream pass's transactions replayed into topics of its own. */
static int copy_pass_run(const bench_opts *o, const dp_stream_config *cfg, const char *prefix, const char *stream,
                         rd_kafka_t *admin, created *cr, int64_t deadline, pass_times *m, char *errstr, size_t errn)
{
    char cprefix[128], group[200];
    snprintf(cprefix, sizeof cprefix, "%s-tpc", prefix);
    snprintf(group, sizeof group, "%s.copy", cprefix);
    const uint64_t per_step = o->n + 1, total = per_step * o->steps, steady_msgs = total - per_step;
    dp_stream_config *ccfg = make_config(o, cprefix, "tp-", o->steps, errstr, errn);
    if (!ccfg)
        return DP_EINVAL;
    copy_plan pl;
    copy_pass cp;
    memset(&cp, 0, sizeof cp);
    watcher w = {0};
    const char *ids[1] = {stream};
    int rc = copy_plan_read(&pl, cfg, o->steps, deadline, errstr, errn);
    if (rc == DP_OK) {
        printf("copy plan (the dpstream pass's committed outputs, per run): synthetic %" PRIu64 " msgs %.2f MB, "
               "budget %" PRIu64 " msgs, state %" PRIu64 " msgs %.2f MB; %zu transactions; step T's: %zu msgs\n",
               pl.msgs_per[COPY_SYNTHETIC], (double)pl.bytes_per[COPY_SYNTHETIC] / 1e6, pl.msgs_per[COPY_BUDGET],
               pl.msgs_per[COPY_STATE], (double)pl.bytes_per[COPY_STATE] / 1e6, pl.n_txn,
               pl.txn_start[pl.n_txn] - pl.txn_start[pl.n_txn - 1]);
        fflush(stdout);
        rc = create_topics(admin, ccfg, cr, errstr, errn);
    }
    add_group(cr, group);
    if (rc == DP_OK)
        rc = watcher_open(&w, ccfg, "bench-watch", o->steps, ids, 1, "50", errstr, errn);
    pass_begin(m);
    if (rc == DP_OK)
        rc = copy_start(&cp, cfg, ccfg, &pl, group, per_step, total, errstr, errn);
    if (rc == DP_OK)
        rc = time_pass(&w, &cp.t, o->steps, ccfg->topic_state, deadline, m, errstr, errn);
    if (rc == DP_OK)
        rc = proc_stop(&cp.t, errstr, errn);
    if (rc == DP_OK) {
        double tot_s = (double)(m->t_end - m->t0) / 1e6, st_s = steady_s(m);
        printf("copy pipeline (librdkafka only): total %.2f s = %.0f msg/s; steady %.2f s = %.0f msg/s; "
               "%" PRIu64 " transactions, %" PRIu64 " msgs produced; process CPU %.2f s steady = %.0f msg per CPU-s; "
               "copy thread %.2f s steady; machine busy %.2f of %ld CPUs (steady)\n",
               tot_s, (double)total / tot_s, st_s, (double)steady_msgs / st_s, cp.txns, cp.produced,
               m->pc2 - m->pc1, (double)steady_msgs / (m->pc2 - m->pc1), m->tc2 - m->tc1, (m->mc2 - m->mc1) / st_s,
               sysconf(_SC_NPROCESSORS_ONLN));
        fflush(stdout);
        if (cp.produced != pl.n)
            rc = dp_err(errstr, errn, DP_ESTATE, "copy produced %" PRIu64 " of %zu planned messages", cp.produced, pl.n);
    }
    if (cp.t.started) {
        char e2[256];
        proc_stop(&cp.t, e2, sizeof e2);
    }
    watcher_close(&w);
    copy_plan_free(&pl);
    dp_stream_config_free(ccfg);
    return rc;
}

static void state_disk_line(const dp_stream_config *cfg, const pass_times *m, uint64_t steps)
{
    /* The state topic's log segments on the broker's disk: after step 1
     * (its full snapshot; what of step 2 was already appended, uncommitted,
     * counts there, so the steady figure may be low by up to a step's
     * bytes / (T-1)) and after step T. */
    if (m->disk1 >= 0 && m->disk2 >= 0 && steps > 1)
        printf("RESULT state topic on disk: %.2f MB after step 1, %.2f MB after step %" PRIu64 ": %.3f MB per steady "
               "step (steps 2..T), %.3f MB per step over all\n",
               (double)m->disk1 / 1e6, (double)m->disk2 / 1e6, steps, (double)(m->disk2 - m->disk1) / 1e6 / (double)(steps - 1),
               (double)m->disk2 / 1e6 / (double)steps);
    else
        printf("state topic on disk: unknown (no partition of %s under %s)\n", cfg->topic_state,
               bench_broker_data_dir());
}

static int run_throughput(const bench_opts *o, const char *prefix, rd_kafka_t *admin, created *cr, double *e2e_rate,
                          char *errstr, size_t errn)
{
    char topic_prefix[128];
    snprintf(topic_prefix, sizeof topic_prefix, "%s-tp", prefix);
    dp_stream_config *cfg = make_config(o, topic_prefix, "tp-", o->steps, errstr, errn);
    if (!cfg)
        return DP_EINVAL;
    const uint64_t per_step = o->n + 1, total = per_step * o->steps, steady_msgs = total - per_step;
    int64_t deadline = now_us() + o->timeout_s * 1000000;
    raw_result raw;
    pass_times b, c;
    int rc = create_topics(admin, cfg, cr, errstr, errn);
    if (rc == DP_OK)
        rc = fill_updates(o, cfg, "tp-0", errstr, errn);
    if (rc == DP_OK)
        rc = raw_passes(o, cfg, topic_prefix, cr, deadline, &raw, errstr, errn);
    if (rc == DP_OK)
        rc = dpstream_pass(o, cfg, topic_prefix, cr, deadline, &b, errstr, errn);
    if (rc != DP_OK)
        goto out;
    double ra = (double)steady_msgs / raw.steady_s, rb = (double)steady_msgs / steady_s(&b);
    double rca = (double)steady_msgs / raw.steady_cpu, rcb = (double)steady_msgs / (b.pc2 - b.pc1);
    printf("RESULT throughput n=%" PRIu64 " T=%" PRIu64 " updates=%" PRIu64 ": raw %.0f msg/s, end-to-end %.0f "
           "msg/s, ratio b/a %.3f (steady wall); total-window ratio %.3f; per CPU-second: raw %.0f, end-to-end "
           "%.0f, ratio %.3f; machine CPU-s per message, end-to-end / raw %.2f\n",
           o->n, o->steps, o->n * o->steps, ra, rb, rb / ra,
           ((double)total / ((double)(b.t_end - b.t0) / 1e6)) / ((double)raw.msgs / raw.total_s), rca, rcb,
           rcb / rca, (b.mc2 - b.mc1) / raw.steady_machine);
    state_disk_line(cfg, &b, o->steps);
    fflush(stdout);
    *e2e_rate = rb;
    if (o->no_copy_pass || (rc = copy_pass_run(o, cfg, prefix, "tp-0", admin, cr, deadline, &c, errstr, errn)) != DP_OK)
        goto out;
    double rc_ = (double)steady_msgs / steady_s(&c);
    double us_a = 1e6 * raw.steady_cpu / (double)steady_msgs, us_b = 1e6 * (b.pc2 - b.pc1) / (double)steady_msgs,
           us_c = 1e6 * (c.pc2 - c.pc1) / (double)steady_msgs;
    printf("RESULT ceiling n=%" PRIu64 " T=%" PRIu64 ": raw %.0f, dpstream %.0f, copy %.0f msg/s (steady wall); "
           "b/a %.3f, b/c %.3f; process CPU us per message (steady): raw %.3f, dpstream %.3f, copy %.3f; "
           "CPU dpstream/copy %.3f, copy/raw %.3f; pass thread CPU us per message: dpstream %.3f, copy %.3f\n",
           o->n, o->steps, ra, rb, rc_, rb / ra, rb / rc_, us_a, us_b, us_c, us_b / us_c, us_c / us_a,
           1e6 * (b.tc2 - b.tc1) / (double)steady_msgs, 1e6 * (c.tc2 - c.tc1) / (double)steady_msgs);
    fflush(stdout);
out:
    dp_stream_config_free(cfg);
    return rc;
}

/* --copy-of PREFIX: the copy pass alone, over the topics of a deployment
 * that `dpstream run` has already processed (bench/throughput/synth_e2e.sh:
 * any synthesizer end to end): its updates topic holds T steps of
 * --per-step messages each, the CLOSE_STEP marker last, in one partition,
 * and its outputs exactly T transactions (one stream, --stream ID). */
static int run_copy_of(const bench_opts *o, const char *prefix, rd_kafka_t *admin, created *cr, char *errstr,
                       size_t errn)
{
    dp_stream_config *cfg = make_config(o, o->copy_of, "x", o->steps, errstr, errn);
    if (!cfg)
        return DP_EINVAL;
    pass_times c;
    const uint64_t steady_msgs = (o->n + 1) * (o->steps - 1);
    int rc = copy_pass_run(o, cfg, prefix, o->copy_stream, admin, cr, now_us() + o->timeout_s * 1000000, &c, errstr,
                           errn);
    if (rc == DP_OK)
        printf("RESULT copy-of %s stream %s per-step %" PRIu64 " T=%" PRIu64 ": copy %.0f msg/s (steady wall, steps "
               "2..T), process CPU %.3f us per message\n",
               o->copy_of, o->copy_stream, o->n + 1, o->steps, (double)steady_msgs / steady_s(&c),
               1e6 * (c.pc2 - c.pc1) / (double)steady_msgs);
    fflush(stdout);
    dp_stream_config_free(cfg);
    return rc;
}

/* The latency phase's warm-up stream (watcher index `si`): 100 individuals, one step. */
static int latency_warmup(const bench_opts *o, producer *p, producer *mp, watcher *w, size_t si, const char *id,
                          proc_thread *pt, int64_t deadline, char *errstr, size_t errn)
{
    dp_panel_gen wg;
    memset(&wg, 0, sizeof wg);
    int64_t tw = 0;
    int rc = panel_init(&wg, 100, o->lat_steps, errstr, errn);
    if (rc == DP_OK)
        rc = dp_panel_gen_next(&wg);
    if (rc == DP_OK)
        rc = send_step(p, id, &wg, 1, 100, errstr, errn);
    if (rc == DP_OK)
        rc = producer_flush(p, errstr, errn);
    /* through the marker producer: its first message waits for the
     * topic's metadata and the idempotent producer id */
    if (rc == DP_OK)
        rc = send_marker(mp, id, 1, errstr, errn);
    if (rc == DP_OK)
        rc = producer_flush(mp, errstr, errn);
    if (rc == DP_OK)
        rc = watcher_wait(w, si, 1, pt, deadline, 1, &tw, errstr, errn);
    dp_panel_gen_free(&wg);
    return rc;
}

static int run_latency(const bench_opts *o, const char *prefix, rd_kafka_t *admin, created *cr, double e2e_rate,
                       char *errstr, size_t errn)
{
    char topic_prefix[128], group[200];
    snprintf(topic_prefix, sizeof topic_prefix, "%s-lat", prefix);
    dp_stream_config *cfg = make_config(o, topic_prefix, "lat-", o->lat_steps, errstr, errn);
    if (!cfg)
        return DP_EINVAL;
    producer p = {0}, mp = {0};
    watcher w = {0};
    proc_thread pt = {0};
    dp_panel_gen g;
    memset(&g, 0, sizeof g);
    size_t ns = (size_t)o->lat_streams, nsamp = 0;
    char (*names)[32] = calloc(ns + 1, sizeof *names);   /* + the warm-up stream */
    const char **ids = calloc(ns + 1, sizeof *ids);
    int64_t *lat = calloc(ns * o->lat_steps, sizeof *lat);
    int64_t *lat_first = calloc(ns, sizeof *lat_first);
    int64_t *lat_rel = calloc(ns * o->lat_steps, sizeof *lat_rel);   /* steps >= k = 3: records released */
    int64_t *lat_early = calloc(2 * ns, sizeof *lat_early);          /* steps 1-2 */
    size_t nrel = 0, nearly = 0;
    int64_t deadline = now_us() + o->timeout_s * 1000000;
    int rc = names && ids && lat && lat_first && lat_rel && lat_early ? DP_OK : DP_ENOMEM;
    for (size_t i = 0; rc == DP_OK && i < ns; i++) {
        snprintf(names[i], sizeof names[i], "lat-%02zu", i);
        ids[i] = names[i];
    }
    if (rc == DP_OK) {
        snprintf(names[ns], sizeof names[ns], "lat-warmup");
        ids[ns] = names[ns];
    }
    /* time for the processor to ingest one step before its marker: 4x the
     * measured end-to-end rate, at least 300 ms */
    int64_t settle = o->settle_ms;
    if (settle <= 0) {
        settle = e2e_rate > 0 ? (int64_t)(4000.0 * (double)o->lat_n / e2e_rate) : 1000;
        if (settle < 300)
            settle = 300;
    }
    if (rc == DP_OK)
        rc = create_topics(admin, cfg, cr, errstr, errn);
    if (rc == DP_OK)
        rc = panel_init(&g, o->lat_n, o->lat_steps, errstr, errn);
    if (rc == DP_OK)
        rc = producer_open(&p, cfg, 1, o->compression, errstr, errn);
    if (rc == DP_OK)
        rc = producer_open(&mp, cfg, 0, o->compression, errstr, errn);
    snprintf(group, sizeof group, "%s.processor", topic_prefix);
    add_group(cr, group);
    if (rc == DP_OK)
        rc = watcher_open(&w, cfg, "bench-watch", o->lat_steps, ids, ns + 1, "5", errstr, errn);
    if (rc == DP_OK)
        rc = proc_start(&pt, cfg, o->chunk_records, errstr, errn);
    /* warm-up: one small stream released once, so no sample includes the
     * processor's or the producers' startup (group join, init_transactions,
     * state read, metadata, producer ids) */
    if (rc == DP_OK)
        rc = latency_warmup(o, &p, &mp, &w, ns, ids[ns], &pt, deadline, errstr, errn);
    /* every stream's data is the same panel (the stream id is not mixed into
     * panel_gen's randomness); streams differ in noise */
    for (uint64_t t = 1; t <= o->lat_steps && rc == DP_OK; t++) {
        if ((rc = dp_panel_gen_next(&g)) != DP_OK)
            break;
        for (size_t s = 0; s < ns && rc == DP_OK; s++) {
            uint64_t n_report = t == 1 ? o->lat_n : o->lat_n - 1;
            if ((rc = send_step(&p, ids[s], &g, t, n_report, errstr, errn)) != DP_OK ||
                (rc = producer_flush(&p, errstr, errn)) != DP_OK)
                break;
            sleep_ms(t == 1 ? 2 * settle : settle);   /* step 1 also builds the roster */
            watcher_poll(&w, 0);
            int64_t t0 = now_us(), t1 = 0;
            if ((rc = send_marker(&mp, ids[s], t, errstr, errn)) != DP_OK)
                break;
            rd_kafka_poll(mp.rk, 0);
            if ((rc = watcher_wait(&w, s, t, &pt, deadline, 1, &t1, errstr, errn)) != DP_OK)
                break;
            lat[nsamp++] = t1 - t0;
            if (o->verbose)
                printf("  sample %s step %" PRIu64 ": %.1f ms\n", ids[s], t, (double)(t1 - t0) / 1000.0);
            if (t == 1)
                lat_first[s] = t1 - t0;
            if (t >= 3)
                lat_rel[nrel++] = t1 - t0;
            else
                lat_early[nearly++] = t1 - t0;
        }
    }
    if (rc == DP_OK)
        rc = producer_flush(&mp, errstr, errn);
    if (rc == DP_OK)
        rc = proc_stop(&pt, errstr, errn);
    if (rc == DP_OK) {
        int64_t dlq = high_watermark(w.rk, cfg->topic_dead_letter);
        qsort(lat, nsamp, sizeof *lat, cmp_i64);
        double sum = 0;
        for (size_t i = 0; i < nsamp; i++)
            sum += (double)lat[i];
        qsort(lat_first, ns, sizeof *lat_first, cmp_i64);
        qsort(lat_rel, nrel, sizeof *lat_rel, cmp_i64);
        qsort(lat_early, nearly, sizeof *lat_early, cmp_i64);
        printf("latency (CLOSE_STEP produced -> budget event visible read_committed), n=%" PRIu64 ", %zu streams x %"
               PRIu64 " steps, settle %" PRId64 " ms: %zu samples, min %.1f ms, p50 %.1f ms, p90 %.1f ms, p99 %.1f "
               "ms, max %.1f ms, mean %.1f ms; step-1 closes (roster build) p50 %.1f ms max %.1f ms; dead letters %"
               PRId64 "\n",
               o->lat_n, ns, o->lat_steps, settle, nsamp, (double)lat[0] / 1000.0, pct_ms(lat, nsamp, 50),
               pct_ms(lat, nsamp, 90), pct_ms(lat, nsamp, 99), (double)lat[nsamp - 1] / 1000.0, sum / (double)nsamp / 1000.0,
               pct_ms(lat_first, ns, 50), (double)lat_first[ns - 1] / 1000.0, dlq);
        if (nrel)
            printf("  steps >= 3 (the window releases n synthetic records): %zu samples, p50 %.1f ms, p99 %.1f ms; "
                   "steps 1-2 (no records yet): %zu samples, p50 %.1f ms\n",
                   nrel, pct_ms(lat_rel, nrel, 50), pct_ms(lat_rel, nrel, 99), nearly,
                   nearly ? pct_ms(lat_early, nearly, 50) : 0.0);
        printf("RESULT latency n=%" PRIu64 " samples=%zu: p50 %.1f ms, p99 %.1f ms\n", o->lat_n, nsamp,
               pct_ms(lat, nsamp, 50), pct_ms(lat, nsamp, 99));
        fflush(stdout);
        if (dlq != 0)
            rc = dp_err(errstr, errn, DP_ESTATE, "latency phase: %" PRId64 " dead letters", dlq);
    }
    if (pt.started) {
        char e2[256];
        proc_stop(&pt, e2, sizeof e2);
    }
    watcher_close(&w);
    producer_close(&p);
    producer_close(&mp);
    dp_panel_gen_free(&g);
    dp_stream_config_free(cfg);
    free(names);
    free(ids);
    free(lat);
    free(lat_first);
    free(lat_rel);
    free(lat_early);
    return rc;
}

/* --sharded [N [T [P [INSTANCES]]]]: the two roles' run (issue 40 §4;
 * docs/kafka.md §10) with `dpstream run` processes beside this binary, driven
 * by bench/throughput/sharded.sh (found next to this source file), which says
 * what it measures.  Separate processes, so each instance's CPU is its own. */
static int run_sharded(int argc, char **argv)
{
    char exe[4096], bin[4200], script[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return fprintf(stderr, "bench_throughput: cannot find its own path\n"), 1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    snprintf(bin, sizeof bin, "%s/dpstream", exe);
    snprintf(script, sizeof script, "%s", __FILE__);
    slash = strrchr(script, '/');
    snprintf(slash ? slash + 1 : script, sizeof script - (size_t)(slash ? slash + 1 - script : 0), "sharded.sh");
    char *args[10] = {"bash", script, bin};
    for (int i = 2, k = 3; i < argc && k < 9; i++)
        args[k++] = argv[i];
    execv("/bin/bash", args);
    perror("bench_throughput: bash");
    return 1;
}

/* --- main ------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_throughput [--individuals N (1000000)] [--steps T (10)]\n"
            "         [--latency-individuals N (25000)] [--latency-streams S (10)] [--latency-steps L (12)]\n"
            "         [--settle-ms MS (auto)] [--chunk-records R (1000)] [--compression none|lz4|… (none)]\n"
            "         [--bootstrap HOST:PORT ($DPSTREAM_BOOTSTRAP_SERVERS or 127.0.0.1:39092)]\n"
            "         [--timeout-s S (1800)] [--no-throughput] [--no-latency] [--no-decode-pass] [--no-copy-pass]\n"
            "         [--keep-topics]\n"
            "         [--copy-of PREFIX --stream ID --per-step M --steps T (only the copy pass, over the topics\n"
            "          of a deployment `dpstream run` has processed: bench/throughput/synth_e2e.sh)]\n"
            "         [--kafka NAME=VALUE (librdkafka property for every client; repeatable)]\n"
            "         [--verbose (print every latency sample)] [--debug-log (processor debug log)]\n"
            "       bench_throughput --sharded [N (1000000) [T (6) [P (4) [\"1 2 4\" (ingest instances)]]]]\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (!s[0] || *end || v == 0)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    bench_opts o = {.n = 1000000, .steps = 10, .lat_n = 25000, .lat_streams = 10, .lat_steps = 12,
                    .compression = "none", .chunk_records = 1000, .timeout_s = 1800};
    o.bootstrap = dp_kafka_bootstrap_env() ? dp_kafka_bootstrap_env() : "127.0.0.1:39092";
    if (argc > 1 && !strcmp(argv[1], "--sharded"))
        return run_sharded(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x = 0;
        int bad = 0;
        if (!strcmp(a, "--no-throughput")) { o.no_throughput = 1; continue; }
        if (!strcmp(a, "--no-latency")) { o.no_latency = 1; continue; }
        if (!strcmp(a, "--no-decode-pass")) { o.no_decode_pass = 1; continue; }
        if (!strcmp(a, "--no-copy-pass")) { o.no_copy_pass = 1; continue; }
        if (!strcmp(a, "--keep-topics")) { o.keep_topics = 1; continue; }
        if (!strcmp(a, "--verbose")) { o.verbose = 1; continue; }
        if (!strcmp(a, "--debug-log")) { o.debug_log = 1; continue; }
        if (!v) { usage(); return 2; }
        i++;
        if (!strcmp(a, "--individuals")) bad = parse_u64(v, &o.n);
        else if (!strcmp(a, "--steps")) bad = parse_u64(v, &o.steps);
        else if (!strcmp(a, "--latency-individuals")) bad = parse_u64(v, &o.lat_n) || o.lat_n < 2;
        else if (!strcmp(a, "--latency-streams")) bad = parse_u64(v, &o.lat_streams) || o.lat_streams > 100;
        else if (!strcmp(a, "--latency-steps")) bad = parse_u64(v, &o.lat_steps);
        else if (!strcmp(a, "--settle-ms")) { bad = parse_u64(v, &x); o.settle_ms = (int64_t)x; }
        else if (!strcmp(a, "--chunk-records")) { bad = parse_u64(v, &x) || x > 1000000; o.chunk_records = (uint32_t)x; }
        else if (!strcmp(a, "--timeout-s")) { bad = parse_u64(v, &x); o.timeout_s = (int64_t)x; }
        else if (!strcmp(a, "--compression")) o.compression = v;
        else if (!strcmp(a, "--copy-of")) o.copy_of = v;
        else if (!strcmp(a, "--stream")) o.copy_stream = v;
        else if (!strcmp(a, "--per-step")) { bad = parse_u64(v, &x) || x < 2; o.n = x - 1; }
        else if (!strcmp(a, "--bootstrap")) o.bootstrap = v;
        else if (!strcmp(a, "--kafka") && o.n_kafka_kv < 16 && strchr(v, '=') && v[0] != '=') {
            char *kv = strdup(v);
            if (!kv) return 1;
            o.kafka_buf[o.n_kafka_kv] = kv;
            *strchr(kv, '=') = '\0';
            o.kafka_kv[o.n_kafka_kv][0] = kv;
            o.kafka_kv[o.n_kafka_kv][1] = kv + strlen(kv) + 1;
            o.n_kafka_kv++;
        }
        else bad = 1;
        if (bad) { usage(); return 2; }
    }
    dp_log_set_level(o.debug_log ? DP_LOG_DEBUG : DP_LOG_WARN);

    /* unique per run: pid + monotonic ns (names only; nothing else depends on it) */
    char prefix[96];
    snprintf(prefix, sizeof prefix, "bench-tp-%ld-%" PRId64, (long)getpid(), now_us());
    char err[2048];
    created cr;
    memset(&cr, 0, sizeof cr);
    dp_stream_config *acfg = make_config(&o, prefix, "x", 12, err, sizeof err);
    if (!acfg) {
        fprintf(stderr, "bench_throughput: %s\n", err);
        return 1;
    }
    /* no auto-creation: this handle knows the topics, and a metadata
     * refresh after DeleteTopics must not bring them back */
    const char *const admin_kv[][2] = {{"allow.auto.create.topics", "false"}};
    rd_kafka_conf_t *aconf = dp_kafka_conf(acfg, NULL, admin_kv, 1, err, sizeof err);
    rd_kafka_t *admin = aconf ? rd_kafka_new(RD_KAFKA_PRODUCER, aconf, err, sizeof err) : NULL;
    if (!admin) {
        fprintf(stderr, "bench_throughput: admin client: %s\n", err);
        dp_stream_config_free(acfg);
        return 1;
    }
    printf("bench_throughput: broker %s, topic prefix %s, librdkafka %s, extra kafka properties:", o.bootstrap, prefix,
           rd_kafka_version_str());
    for (size_t i = 0; i < o.n_kafka_kv; i++)
        printf(" %s=%s", o.kafka_kv[i][0], o.kafka_kv[i][1]);
    printf("%s\n", o.n_kafka_kv ? "" : " none");
    fflush(stdout);
    int rc = DP_OK;
    double e2e = 0;
    if (o.copy_of)
        rc = o.copy_stream && o.steps > 1 ? run_copy_of(&o, prefix, admin, &cr, err, sizeof err)
                                          : dp_err(err, sizeof err, DP_EINVAL, "--copy-of needs --stream and --steps > 1");
    else if (!o.no_throughput)
        rc = run_throughput(&o, prefix, admin, &cr, &e2e, err, sizeof err);
    if (rc == DP_OK && !o.no_latency && !o.copy_of)
        rc = run_latency(&o, prefix, admin, &cr, e2e, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "bench_throughput: %s\n", err);
    if (!o.keep_topics)
        delete_created(admin, &cr);
    else
        printf("kept topics with prefix %s\n", prefix);
    rd_kafka_destroy(admin);
    dp_stream_config_free(acfg);
    for (size_t i = 0; i < o.n_kafka_kv; i++)
        free(o.kafka_buf[i]);
    return rc == DP_OK ? 0 : 1;
}
