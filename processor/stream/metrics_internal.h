/* metrics_internal.h — the state metrics.c records and metrics_render.c
 * turns into a view.  Private to those two files. */
#ifndef DP_STREAM_METRICS_INTERNAL_H
#define DP_STREAM_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/bytes_map.h"
#include "stream/metrics.h"

#define MX_FIGS 24          /* manifest / accuracy figures kept per release */
#define MX_BROKERS 16
#define MX_BUCKETS 13

typedef struct mx_fig {
    char   key[40];
    double v;
} mx_fig;

/* A refcounted immutable string, shared by the views that hold it. */
typedef struct mx_text {
    atomic_int refs;
    size_t     len;
    char       data[];
} mx_text;

mx_text *mx_text_new(const char *s, size_t len);
void     mx_text_ref(mx_text *t);
void     mx_text_unref(mx_text *t);

typedef struct mx_hist {                /* a Prometheus histogram */
    uint64_t bucket[MX_BUCKETS];        /* cumulative at render time */
    uint64_t count;
    double   sum;
} mx_hist;

extern const double MX_SECONDS_BOUNDS[MX_BUCKETS];   /* the last is +Inf */
extern const double MX_RECORDS_BOUNDS[MX_BUCKETS];
void mx_hist_observe(mx_hist *h, const double *bounds, double v);

/* One stream's public figures (only from committed releases). */
typedef struct mx_stream {
    char       *id;
    size_t      id_len;
    const char *synthesizer;            /* a static name from the synthesizer */
    int         exhausted, have_budget, model;
    int         known;                  /* released or restored here: shown */
    uint64_t    steps, last_step, last_records;
    double      spent, total, eps, delta;
    char        mechanism[160];
    mx_fig      figs[MX_FIGS];          /* the last manifest's figures (for its history entry) */
    size_t      n_figs;
    uint64_t    figs_step;
    char      **entries;                /* ring of history entries (JSON objects) */
    uint32_t    n_entries, head;
    mx_text    *history;                /* rendered, shared with views; NULL when stale */
} mx_stream;

/* One shard's open step (ingest: shard >= 0) or one sharded stream's
 * next step to release and its shards' arrivals (release: shard < 0). */
typedef struct mx_progress {
    char    *id;
    size_t   id_len;
    int32_t  shard;
    uint64_t step;
    uint32_t shards;
    uint8_t *arrived;                   /* [shards] (release only) */
} mx_progress;

typedef enum mx_kind { MX_DEAD_LETTER, MX_RELEASE, MX_BUDGET } mx_kind;

/* One event of the open transaction. */
typedef struct mx_staged {
    mx_kind          kind;
    dp_reject_reason reason;
    char            *stream;
    size_t           stream_len;
    uint64_t         step, records;
    const char      *synthesizer;
    double           close_s;
    int              exhausted, model;
    double           spent, total, eps, delta;
    char             mechanism[160];
    mx_fig           figs[MX_FIGS], acc[MX_FIGS];
    size_t           n_figs, n_acc;
} mx_staged;

struct dp_metrics_view {
    atomic_int refs;
    mx_text   *prom, *streams;
    size_t     n;
    char     **ids;                     /* sorted; ids[i]'s history is hist[i] */
    size_t    *id_lens;
    mx_text  **hist;
};

struct dp_metrics {
    dp_metrics_options o;
    double             start_wall_s;
    /* the processor's thread */
    dp_bytes_map       streams;         /* id -> mx_stream* */
    mx_staged         *staged;
    size_t             n_staged, cap_staged;
    uint64_t          *consumed;        /* per partition */
    int64_t           *lag;
    int32_t            n_parts;
    uint64_t           accepted, rejected[DP_REJECT_REASON_COUNT], steps;
    uint64_t           txn_committed, txn_aborted, rewinds, restores;
    double             restore_s_total, restore_s_last;
    int64_t            restore_began_ms;
    int                assigned;
    mx_hist            close_s, commit_s, records;
    uint64_t           kafka_rx_bytes, kafka_tx_bytes;
    char               broker[MX_BROKERS][64];
    double             broker_rtt_s[MX_BROKERS];
    int                n_brokers;
    mx_progress       *prog;            /* sharded streams' progress for the next view */
    size_t             n_prog, cap_prog;
    int64_t            last_publish_ms;
    int                dirty;           /* something changed since the last view */
    /* shared with the HTTP threads */
    pthread_mutex_t    lock;            /* guards view and fatal_msg */
    dp_metrics_view   *view;
    atomic_llong       heartbeat_ms;
    atomic_int         restoring, joined, fatal;
    char               fatal_msg[512];
};

/* metrics_render.c: a new view of m's state (NULL on out of memory). */
dp_metrics_view *mx_render(dp_metrics *m);
void             mx_view_free(dp_metrics_view *v);
/* The stream's history JSON, rendered if stale. */
mx_text         *mx_stream_history(mx_stream *s);

#endif
