/* synth_internal.h — the bundle's layout, shared by synth.c (the bundle,
 * the combined snapshot) and synth_role.c (the per-role snapshots,
 * docs/kafka.md §10); nothing outside synth/common includes it.
 *
 * Owns: struct dp_synth and the snapshot kinds' magics.  Calls: nothing. */
#ifndef DPSTREAM_SYNTH_INTERNAL_H
#define DPSTREAM_SYNTH_INTERNAL_H

#include "synth/common/synth.h"

#define SYNTH_MAGIC_V2 0x324e5953u   /* "SYN2": with the key fingerprint */
#define SYNTH_MAGIC    0x334e5953u   /* "SYN3": and the configuration it was written under */
/* One role's half alone (docs/kafka.md §10): distinct kinds, never mixed. */
#define SYNTH_MAGIC_INGEST  0x31495953u   /* "SYI1": an ingest-role bundle (one shard) */
#define SYNTH_MAGIC_RELEASE 0x31525953u   /* "SYR1": a release-role bundle */

struct dp_synth {
    const dp_synth_ops *ops;
    dp_ingest_half    *in;
    dp_release_half   *rel;
    uint64_t            open_step;    /* the ingest half's: the step it closes next */
    uint64_t            last_step;    /* ops->release_last_step: public; 0 if data decide */
    dp_stats            stats;
    /* dp_synth_exhausted, cached for the per-update path: the halves are
     * private to the bundle and change only in a close or a restore,
     * after which the cache is refreshed. */
    int                 exhausted;
    char                key_fp[DP_KEY_FINGERPRINT_HEX];   /* of env->key (read-only: of the state's key) */
    int                 read_only;                        /* dp_synth_open_read_only: never releases */
    const dp_release_sink *sink;                          /* during a close: the caller's */
    char                stream_id[128];                   /* for messages (truncated) */
    char               *config_text;   /* the config, canonical JSON (sorted keys): snapshots record it */
    char               *sid;           /* the whole stream id: role snapshots record it */
    size_t              sid_len;
    dp_synth_role       role;          /* DP_SYNTH_ROLE_ALL, or the role a role snapshot restored */
};

/* Why a snapshot that did not load was refused (synth.c): the changed
 * configuration fields, or that nothing changed and the state is damaged. */
int dp_synth_restore_refusal(const dp_synth *s, const char *name, const char *old_cfg, size_t old_len,
                             char *errstr, size_t errstr_size);

#endif
