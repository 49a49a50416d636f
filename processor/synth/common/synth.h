/* synth.h — the one interface every dpstream synthesizer implements
 * (docs/design.md §4).  A synthesizer is a state machine with no I/O: it is
 * created from a validated JSON config, ingests updates, and at each step
 * close draws noise from the keyed DRBG and emits its release through a
 * sink.  Snapshot/restore continue byte-identically.
 *
 * Each synthesizer is two halves, so one stream can later be sharded:
 *
 *   ingest  — per-entity state (roster, last k values, weights, rows, …);
 *             at step close it produces the step's exact sufficient
 *             statistics as a dp_stats (sparse histogram + scalars).
 *             Statistics of disjoint entity shards add up (dp_stats_merge).
 *   release — merged statistics → noise → synthetic update + manifest +
 *             budget event.  Only this half touches noise and budget.
 *
 * dp_synth bundles one ingest half and one release half for the common
 * single-shard case; the halves are also usable on their own (see
 * dp_synth_ops).
 *
 * Designed for all six seeds: `window`/`cumulative` (one category per
 * individual per step), `marginal` (inserted/deleted categorical rows),
 * `spatial` (points inserted/deleted), `adaptive` (histogram snapshots),
 * `hypercube` (one point in [0,1]^d per step); releases may be FULL (the
 * whole synthetic dataset) or DELTA (what changed this step). */
#ifndef DP_SYNTH_H
#define DP_SYNTH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/accountant.h"
#include "core/buf.h"
#include "core/drbg.h"
#include "synth/common/stats.h"

/* --- input ------------------------------------------------------------------ */

typedef enum dp_update_kind {
    DP_UPDATE_REPORT = 0,      /* an entity's value for a step (window, cumulative, hypercube, adaptive) */
    DP_UPDATE_INSERT = 1,      /* a row / point enters the dataset (marginal, spatial) */
    DP_UPDATE_DELETE = 2,      /* a row / point leaves the dataset (its entity required: ENTITY_REQUIRED) */
    DP_UPDATE_CLOSE_STEP = 3,  /* the step is closed (log-recorded boundary, docs/design.md §2) */
} dp_update_kind;

typedef enum dp_payload_kind {
    DP_PAYLOAD_NONE = 0,
    DP_PAYLOAD_CATEGORY = 1,   /* a bit or category index */
    DP_PAYLOAD_ROW = 2,        /* categorical row: one index per attribute */
    DP_PAYLOAD_POINT = 3,      /* coordinates */
} dp_payload_kind;

typedef struct dp_payload {
    dp_payload_kind kind;
    int64_t         category;
    const int32_t  *row;
    size_t          row_len;
    const double   *point;
    size_t          point_len;
} dp_payload;

/* One update; all pointers are borrowed for the duration of the call. */
typedef struct dp_update {
    const char     *stream_id;
    size_t          stream_id_len;
    uint64_t        step;            /* 1-based time step */
    dp_update_kind  kind;
    const char     *entity_id;       /* NULL if absent */
    size_t          entity_id_len;
    dp_payload      payload;
    int             has_event_time;
    int64_t         event_time_ms;
} dp_update;

/* Why an update was not used.  Rejections are data: the processor sends
 * them to the dead-letter topic with this code (docs/design.md §8). */
typedef enum dp_reject_reason {
    DP_REJECT_NONE = 0,
    DP_REJECT_MALFORMED,        /* undecodable / missing required fields */
    DP_REJECT_UNKNOWN_STREAM,   /* no synthesizer routed for the stream */
    DP_REJECT_WRONG_KIND,       /* update or payload kind the synthesizer does not take */
    DP_REJECT_UNKNOWN_ENTITY,   /* entity not in the roster fixed at step 1 */
    DP_REJECT_DUPLICATE_REPORT, /* second report of an entity in one step */
    DP_REJECT_OUT_OF_DOMAIN,    /* value outside the configured domain */
    DP_REJECT_LATE,             /* step already closed */
    DP_REJECT_FUTURE_STEP,      /* step beyond the currently open one */
    DP_REJECT_EXHAUSTED,        /* stream stopped: budget or horizon used up */
    DP_REJECT_KEY_MISMATCH,     /* Kafka key is not the stream id, or the partition is not the key's */
    DP_REJECT_STREAM_LIMIT,     /* a new stream id over its route's max_streams */
    DP_REJECT_NOT_PRESENT,      /* DELETE of a row that is not in the current data */
    DP_REJECT_USER_LIMIT,       /* user-level stream: no entity, or the entity's row events used up */
    DP_REJECT_INCOMPATIBLE_SCHEMA, /* framed with a writer schema id that cannot be read as Update */
    DP_REJECT_ENTITY_REQUIRED,  /* DELETE without an entity (it would match other people's rows) */
    DP_REJECT_REASON_COUNT
} dp_reject_reason;

const char *dp_reject_reason_name(dp_reject_reason r);   /* "UNKNOWN_ENTITY", … */
/* One human-readable sentence for the reason (dead letters, rejected.jsonl). */
const char *dp_reject_reason_text(dp_reject_reason r);

/* --- output ------------------------------------------------------------------ */

/* FULL: the records are the whole synthetic dataset; DELTA: what changed
 * since the previous release; NONE: no synthetic dataset exists yet at this
 * step (`window` before step k: its first release is at step k), so the
 * release holds no records — a function of the public step number and the
 * configuration only. */
typedef enum dp_release_mode { DP_RELEASE_FULL = 0, DP_RELEASE_DELTA = 1, DP_RELEASE_NONE = 2 } dp_release_mode;
#define DP_RELEASE_MODE_COUNT 3

/* "FULL", "DELTA", "NONE" (ReleaseManifest.mode's symbols); NULL if out of range. */
const char *dp_release_mode_name(dp_release_mode m);
/* The inverse: 0 and *out set, or -1 for any other string. */
int dp_release_mode_parse(const char *s, dp_release_mode *out);

/* One synthetic record of a release. */
typedef struct dp_synth_record {
    uint64_t   synthetic_id;
    dp_payload value;
} dp_synth_record;

/* A named real number in release metadata (noise parameters, debiasing
 * information, accuracy bounds).  Order is the synthesizer's, fixed. */
typedef struct dp_kv {
    const char *key;
    double      value;
} dp_kv;

typedef struct dp_release_manifest {
    const char     *stream_id;
    size_t          stream_id_len;
    uint64_t        step;
    const char     *synthesizer;      /* "window", "cumulative", … */
    dp_release_mode mode;
    uint64_t        record_count;
    int             clamped;          /* a noisy target was infeasible and clamped (docs/privacy.md §3) */
    const dp_kv    *debias;           /* e.g. {"n_pad", 41}, {"sigma2", 2000}, {"bins", 8} */
    size_t          n_debias;
} dp_release_manifest;

typedef enum dp_budget_status {
    DP_BUDGET_ACTIVE = 0,
    DP_BUDGET_EXHAUSTED = 1,          /* budget or horizon used up: stream stopped */
} dp_budget_status;

typedef struct dp_budget_event {
    const char       *stream_id;
    size_t            stream_id_len;
    uint64_t          step;
    dp_budget_status  status;
    const char       *mechanism;      /* e.g. "window/discrete_gaussian" */
    const char       *unit;           /* "user-level over horizon T", "event-level", … */
    const char       *neighbors;      /* "replace" or "add_remove" */
    const char       *public_inputs;  /* what the release treats as public, in words (docs/privacy.md §1) */
    const char       *key_fingerprint;/* dp_key_fingerprint of the noise key (filled in by dp_synth) */
    dp_privacy_model  model;
    double            spent_step;
    double            spent_total;
    double            budget_total;
    /* The exact ledger (accountant.h): the spends in integer units of
     * budget_total / budget_units; spent_units_total is exactly the sum of
     * the steps' spent_units_step (for an event-level synthesizer such as
     * marginal, whose steps compose in parallel, their maximum), and equals
     * budget_units when the plan has spent it all (then spent_total ==
     * budget_total exactly too). */
    uint64_t          spent_units_step;
    uint64_t          spent_units_total;
    uint64_t          budget_units;
    double            delta;          /* δ used for the (ε, δ) equivalents (zCDP only) */
    double            eps_simple;     /* zCDP → ε, simple bound (NaN for pure) */
    double            eps_cks;        /* zCDP → ε, CKS bound (or ε itself for pure) */
    const dp_kv      *noise;          /* e.g. {"sigma2", …}, {"n_pad", …} */
    size_t            n_noise;
    const dp_kv      *accuracy;       /* stated bound at β, e.g. {"beta", 0.05}, {"max_error", …} */
    size_t            n_accuracy;
} dp_budget_event;

/* Where a release goes.  Callbacks are invoked in a fixed order:
 * record × record_count, then manifest, then budget.  A non-zero return
 * aborts the close with that status (the synthesizer state is then
 * unspecified: callers restore from the last snapshot). */
typedef struct dp_release_sink {
    void *ctx;
    int (*record)(void *ctx, const dp_synth_record *r);
    int (*manifest)(void *ctx, const dp_release_manifest *m);
    int (*budget)(void *ctx, const dp_budget_event *e);
} dp_release_sink;

/* --- the synthesizer ------------------------------------------------------ */

/* What a synthesizer knows about its environment; the key is borrowed and
 * must outlive the synthesizer, the stream id is copied. */
typedef struct dp_synth_env {
    const dp_key *key;
    const char   *stream_id;
    size_t        stream_id_len;
} dp_synth_env;

typedef struct dp_synth dp_synth;

/* name: "window", "cumulative", …  config: the synthesizer's JSON object
 * (documented per synthesizer).  Unknown keys, missing required keys, and
 * plans that overspend the budget are refused with a message. */
int  dp_synth_create(dp_synth **out, const char *name, const json_t *config,
                     const dp_synth_env *env, char *errstr, size_t errstr_size);
void dp_synth_destroy(dp_synth *s);

/* Offer one REPORT/INSERT/DELETE update.  Returns DP_OK with *reason =
 * DP_REJECT_NONE if used, DP_OK with another reason if rejected (the
 * update is data for the dead-letter topic, not an error); a negative
 * status only for internal failures (out of memory).  A rejected update
 * changes no state at all (the processor relies on this to ingest runs of
 * updates as a batch and re-examine the ones after a roster completion). */
int  dp_synth_ingest(dp_synth *s, const dp_update *u, dp_reject_reason *reason);

/* Offer u[0..n) in order, reasons[i] for u[i]: exactly what n
 * calls of dp_synth_ingest would do (same reasons, same state, so the same
 * later releases and snapshots), but synthesizers with an
 * ingest_update_batch op overlap the memory accesses of consecutive
 * updates (a consumer hands over a whole poll's batch).  On a negative
 * status the failing update and all later ones were not applied and their
 * reasons are unspecified, as if the caller had stopped at that call. */
int  dp_synth_ingest_batch(dp_synth *s, const dp_update *u, size_t n, dp_reject_reason *reasons);

/* The step currently open (1 before anything closed). */
uint64_t dp_synth_open_step(const dp_synth *s);
/* 1 once the stream is stopped (budget or horizon used up): its release
 * half says so, or the public rule (dp_synth_plan_exhausted) over the
 * steps the ingest half closed — the same verdict on a combined bundle,
 * and the only one an ingest-only bundle can reach. */
int  dp_synth_exhausted(const dp_synth *s);
/* 1 when every rostered entity has reported in the open step (a close
 * trigger, docs/design.md §2); 0 if the synthesizer has no roster. */
int  dp_synth_roster_complete(const dp_synth *s);

/* Close the open step: ingest → stats → release through the sink.  After
 * the last step of the horizon the stream is exhausted and the budget
 * event says so.  Closing an exhausted stream returns DP_EHORIZON. */
int  dp_synth_close_step(dp_synth *s, const dp_release_sink *sink,
                         char *errstr, size_t errstr_size);

/* --- the two halves one at a time: a sharded stream (docs/kafka.md §10) ---
 *
 * dp_synth_close_step is exactly dp_synth_close_ingest's close followed by
 * dp_synth_release_stats of its statistics (one code path).  A sharded
 * stream splits them: each shard's bundle closes only its ingest half and
 * hands its statistics on (stream/stats_record.h); one bundle releases the
 * merged statistics of every shard (dp_stats_merger).  Only for
 * synthesizers whose ingest half shards by entity (shards_by_entity);
 * others are refused (DP_EINVAL). */

/* Close the ingest half's open step alone: its exact statistics into
 * *out (cleared and finished: what dp_stats_save encodes and a statistics
 * record carries), and the open step advances; the release half, the
 * ledger and the sink are not touched.  Refused (nothing changes): a
 * read-only state (DP_ESTATE), an exhausted stream (DP_EHORIZON; on an
 * ingest-only bundle by the public rule, dp_synth_exhausted). */
int  dp_synth_close_ingest(dp_synth *s, dp_stats *out, char *errstr, size_t errstr_size);

/* Release step merged->step from the merged statistics of every shard:
 * the records, manifest and budget event through sink, and the ledger's
 * spend, exactly as dp_synth_close_step releases the same statistics.
 * Refused before anything is released or spent: statistics of a step
 * already released or of a later step than the next one (a step
 * skipped) — DP_ESTATE naming both steps —, an exhausted stream
 * (DP_EHORIZON), a read-only state (DP_ESTATE). */
int  dp_synth_release_stats(dp_synth *s, const dp_stats *merged, const dp_release_sink *sink, char *errstr,
                            size_t errstr_size);

/* The step the release half releases next (1 before anything released). */
uint64_t dp_synth_release_next_step(const dp_synth *s);

/* The release half's state alone (ops->release_save: its part of a
 * dp_synth_snapshot, which ends with it): what a release instance of a
 * sharded stream keeps.  DP_ESTATE for a read-only state. */
int  dp_synth_release_state(const dp_synth *s, dp_buf *out);

/* One role's snapshot (docs/kafka.md §10): an ingest-role bundle (one
 * shard) keeps only its ingest half and open step, steps ahead of any
 * release; a release-role bundle only its release half (its ledger) and
 * next step.  Each is a distinct, versioned kind ("SYI1", "SYR1") headed
 * like dp_synth_snapshot's (name, key fingerprint, configuration) plus the
 * stream id; dp_synth_snapshot's combined kind is unchanged.
 * dp_synth_restore_role refuses, naming what it got, the other role's
 * snapshot or a combined one (a restore never mixes roles: DP_ECORRUPT),
 * a truncated one, another stream's or synthesizer's (DP_ECORRUPT), one
 * under another key (DP_EKEY), one of another configuration (the changed
 * fields, as dp_synth_restore), and a synthesizer whose ingest half does
 * not shard (DP_EINVAL).  The restored bundle does only its role's work:
 * dp_synth_close_step, dp_synth_snapshot, the other role's close or
 * snapshot are refused (DP_ESTATE).  A release-role snapshot does not hold
 * the merger's pending statistics: dp_stats_merger_save (stream layer). */
typedef enum dp_synth_role {
    DP_SYNTH_ROLE_ALL = 0,      /* a created bundle: both halves (today's single process) */
    DP_SYNTH_ROLE_INGEST = 1,
    DP_SYNTH_ROLE_RELEASE = 2,
} dp_synth_role;
int dp_synth_snapshot_role(const dp_synth *s, dp_synth_role role, dp_buf *out);
int dp_synth_restore_role(dp_synth **out, dp_synth_role role, const char *name, const json_t *config,
                          const dp_synth_env *env, const uint8_t *data, size_t len, char *errstr,
                          size_t errstr_size);
/* The same for inspection (as dp_synth_open_read_only): the state's own
 * key fingerprint is taken, not checked, and the bundle never closes,
 * releases or snapshots. */
int dp_synth_open_role_read_only(dp_synth **out, dp_synth_role role, const char *name, const json_t *config,
                                 const dp_synth_env *env, const uint8_t *data, size_t len, char *errstr,
                                 size_t errstr_size);

/* The public exhaustion rule (docs/kafka.md §10), one function for both
 * halves: a stream whose plan ends at step `last_step` (its last release:
 * ops->release_last_step; 0: no such public step) is exhausted once steps
 * 1..closed are closed.  The release half of window and cumulative stops
 * by it (and by a ledger refusal, which fails closed), an ingest-only
 * bundle by it alone: so an ingest instance turns updates away as
 * EXHAUSTED exactly when the combined close would. */
int  dp_synth_plan_exhausted(uint64_t last_step, uint64_t closed);

/* Exact state (both halves, ledger, step; never the key), headed by the
 * synthesizer's name, the noise key's fingerprint and the configuration it
 * runs under (canonical JSON: public).  A restore that fails to load the
 * state under the given config names the stream and the fields whose
 * values changed since the snapshot (old -> new) and what to do; one under
 * another key names both fingerprints (DP_EKEY). */
int  dp_synth_snapshot(const dp_synth *s, dp_buf *out);
int  dp_synth_restore(dp_synth **out, const char *name, const json_t *config,
                      const dp_synth_env *env, const uint8_t *data, size_t len,
                      char *errstr, size_t errstr_size);
/* Open a state to read it (`dpstream inspect-snapshot`) without
 * the noise key it was built with: dp_synth_restore, except that the key
 * fingerprint the state holds is taken (dp_synth_key_fingerprint says it)
 * instead of compared with env->key's — a throw-away env->key is fine.
 * Read-only: dp_synth_close_step and dp_synth_snapshot refuse it
 * (DP_ESTATE), so nothing is ever released or stored under a key that is
 * not the state's. */
int  dp_synth_open_read_only(dp_synth **out, const char *name, const json_t *config, const dp_synth_env *env,
                             const uint8_t *data, size_t len, char *errstr, size_t errstr_size);
/* The fingerprint of the noise key the state was built with (32
 * hex digits): env->key's, or for a read-only synthesizer the state's. */
const char *dp_synth_key_fingerprint(const dp_synth *s);

/* --- the plan: what a stream will spend, from its configuration ------------- */

/* Steps first..last each spend `spend` (in the ledger's model); last = 0:
 * every step from `first` on. */
typedef struct dp_plan_run {
    uint64_t first;
    uint64_t last;
    double   spend;
} dp_plan_run;

#define DP_PLAN_MAX_KV 12

/* A stream's privacy plan as `dpstream check-config` prints it: read from a
 * freshly created release half, so it depends on the configuration only —
 * no input, no key — and every field is public (the budget events publish
 * the same names and values step by step).  It outlives the synthesizer:
 * strings are literals or held in name_buf, and `runs` is owned
 * (dp_synth_plan_free). */
typedef struct dp_synth_plan {
    const char      *mechanism;       /* as the budget events name it */
    const char      *unit;
    const char      *neighbors;
    const char      *public_inputs;
    dp_privacy_model model;
    double           budget_total;    /* ρ or ε: per stream (per window under w-event) */
    double           delta;           /* δ of the (ε, δ) equivalents (zCDP; 0 for pure ε) */
    double           eps_simple;      /* the whole budget as ε at δ: simple bound (NaN for pure ε) */
    double           eps_cks;         /* … CKS bound (ε itself for pure ε) */
    uint64_t         horizon;         /* steps; 0: unbounded */
    /* How step spends add up to the stream's total: "sequential" (they
     * add up), "parallel" (each step's rows or points are its own: the total
     * is the largest step's spend), "w_event" (any w consecutive steps add
     * up to at most the budget). */
    const char      *composition;
    const char      *spend_rule;      /* one sentence: when and how much is spent */
    dp_plan_run     *runs;            /* per-step spends the configuration fixes; none when data decide them */
    size_t           n_runs;
    dp_kv            spend[DP_PLAN_MAX_KV];      /* named spends (per release, per decision, …) */
    size_t           n_spend;
    dp_kv            noise[DP_PLAN_MAX_KV];      /* noise parameters, as in the budget events */
    size_t           n_noise;
    dp_kv            accuracy[DP_PLAN_MAX_KV];   /* the stated accuracy, where the synthesizer states one */
    size_t           n_accuracy;
    char             name_buf[64];    /* a mechanism name built at run time (mechanism then points here:
                                         do not copy a plan by value) */
} dp_synth_plan;

/* The plan of s (plan.c).  DP_EINVAL if its synthesizer has no describe
 * op; DP_ENOMEM.  Call it on a synthesizer created for the purpose (a
 * throw-away key is fine: describing draws no noise). */
int  dp_synth_describe(const dp_synth *s, dp_synth_plan *out, char *errstr, size_t errstr_size);
void dp_synth_plan_free(dp_synth_plan *p);
/* For the describe ops: the budget and its (ε, δ) equivalents; one run
 * (merged into the previous one when it continues it with the same
 * spend); one named value (ignored past DP_PLAN_MAX_KV — the ops stay far
 * below it). */
void dp_plan_budget(dp_synth_plan *p, dp_privacy_model model, double budget, double delta);
int  dp_plan_run_add(dp_synth_plan *p, uint64_t first, uint64_t last, double spend);
void dp_plan_kv(dp_kv *arr, size_t *n, const char *key, double value);

/* The public head of a dp_synth_snapshot, read without restoring:
 * pointers borrow from the snapshot bytes (not NUL-terminated).  config is
 * NULL for a snapshot written before configurations were recorded.
 * DP_ECORRUPT if the bytes do not start like a snapshot. */
typedef struct dp_synth_snapshot_head {
    const char *name;
    size_t      name_len;
    const char *key_fp;
    size_t      key_fp_len;
    const char *config;         /* canonical JSON of the config it was written under, or NULL */
    size_t      config_len;
    uint64_t    open_step;
    size_t      state_offset;   /* where the halves' state begins */
} dp_synth_snapshot_head;
int  dp_synth_snapshot_header(const uint8_t *data, size_t len, dp_synth_snapshot_head *out);

/* --- the two halves, for sharded ingest ----------------------------------- */

typedef struct dp_ingest_half dp_ingest_half;
typedef struct dp_release_half dp_release_half;

typedef struct dp_synth_ops {
    const char *name;
    /* What is known of a synthesizer without creating one — written once
     * here rather than per name elsewhere.  example_config: a JSON object
     * it creates from (tests/unit/test_synth_contract.c walks the registry
     * with it); budget_zcdp_only: dp_synth_budget_zcdp_only; update_kind
     * (REPORT or INSERT) and payload_kind: what its data updates are. */
    const char     *example_config;
    int             budget_zcdp_only;
    /* 1 if its ingest half shards by entity: per-step statistics of
     * disjoint sets of entities merge into the whole's (dp_stats_merge),
     * whatever the order, so a route of it may be "sharded"
     * (tests/unit/test_synth_shards.c and tk_check_shards show it byte for byte). */
    int             shards_by_entity;
    dp_update_kind  update_kind;
    dp_payload_kind payload_kind;
    /* ingest half */
    int  (*ingest_create)(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size);
    int  (*ingest_update)(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason);
    /* Exact statistics of the open step (then the ingest half moves to the next step). */
    int  (*ingest_close)(dp_ingest_half *in, uint64_t step, dp_stats *out);
    int  (*ingest_roster_complete)(const dp_ingest_half *in);
    int  (*ingest_save)(const dp_ingest_half *in, dp_buf *b);
    int  (*ingest_load)(dp_ingest_half *in, dp_reader *r);
    void (*ingest_destroy)(dp_ingest_half *in);
    /* release half */
    int  (*release_create)(dp_release_half **out, const json_t *config, const dp_synth_env *env,
                           char *errstr, size_t errstr_size);
    int  (*release_step)(dp_release_half *rel, uint64_t step, const dp_stats *merged,
                         const dp_release_sink *sink, char *errstr, size_t errstr_size);
    int  (*release_exhausted)(const dp_release_half *rel);
    int  (*release_save)(const dp_release_half *rel, dp_buf *b);
    int  (*release_load)(dp_release_half *rel, dp_reader *r);
    void (*release_destroy)(dp_release_half *rel);
    /* The release half's per-stream budget ledger; NULL if it keeps none. */
    const dp_ledger *(*release_ledger)(const dp_release_half *rel);
    /* Optional. ingest_update on u[0..n) in order, with the same
     * reasons and resulting state as n ingest_update calls; may stop at
     * the first negative status.  NULL: callers loop over ingest_update. */
    int  (*ingest_update_batch)(dp_ingest_half *in, const dp_update *u, size_t n,
                                dp_reject_reason *reasons);
    /* Optional. The step each half will close next; a restore
     * refuses a state whose halves and bundle disagree on it. */
    uint64_t (*ingest_open_step)(const dp_ingest_half *in);
    uint64_t (*release_next_step)(const dp_release_half *rel);
    /* Optional. The plan (dp_synth_plan) of a release half: its
     * configuration's, whatever state it holds.  NULL: not described. */
    int  (*release_describe)(const dp_release_half *rel, dp_synth_plan *out);
    /* Optional. The last step the configuration's plan releases — its
     * horizon, or the step whose spend meets the budget if that comes
     * first — a public function of the configuration (docs/kafka.md §10):
     * after it the stream is exhausted (dp_synth_plan_exhausted).  NULL:
     * data decide when the stream stops (it cannot shard). */
    uint64_t (*release_last_step)(const dp_release_half *rel);
    /* Optional. After a release_load that refused, why, in a sentence
     * that says what the state is left as and what to do — when the
     * synthesizer can say more than "another configuration, or damaged",
     * e.g. that the configuration text is unchanged but now resolves to
     * another method (a changed default); "" otherwise (never NULL). */
    const char *(*release_load_refusal)(const dp_release_half *rel);
} dp_synth_ops;

/* NULL if unknown. */
const dp_synth_ops *dp_synth_ops_find(const char *name);
/* The registry in order (synth.c): the i-th synthesizer, NULL past the last. */
const dp_synth_ops *dp_synth_ops_at(size_t i);

/* 1 if the synthesizer accounts in ρ-zCDP only, so an "epsilon" in
 * its config is a total ε at its "delta" that it converts to ρ
 * (dp_zcdp_rho_for_eps_cks) — window, cumulative — rather than a pure-DP
 * budget (marginal, spatial, adaptive, hypercube): its ops'
 * budget_zcdp_only; 0 for an unknown name. */
int dp_synth_budget_zcdp_only(const char *name);

/* Its ops' shards_by_entity; 0 for an unknown name. */
int dp_synth_shards_by_entity(const char *name);

/* Fill e's spend fields from the ledger of one step of an
 * event-level synthesizer whose steps compose in parallel (every event is
 * touched only by its own step's mechanisms: `marginal`, `spatial`): the
 * step's spend is also the stream's total, the largest step's (docs/privacy.md
 * §1; the README's privacy section).  delta: for the zCDP → (ε, δ) figures. */
void dp_budget_event_parallel_steps(dp_budget_event *e, const dp_ledger *l, double delta);

/* The stream's budget ledger (owned by the release half; spends are
 * recorded before a step's records are emitted), or NULL. */
const dp_ledger *dp_synth_ledger(const dp_synth *s);

#endif
