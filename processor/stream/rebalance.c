/* rebalance.c — partitions coming and going: the rebalance callback
 * (restore then assign; on revocation commit what is open and drop the
 * revoked streams), the rewind after an aborted transaction (forget
 * everything, restore as a restarted instance would), and the re-seek after
 * a rebalance that happened inside a consume call.
 *
 * An eager rebalance's revocation keeps the revoked partitions' streams
 * in memory after its commit (keep_revoked); restore checks and resumes
 * the ones that come back, and the others are dropped once the assignment
 * is known.
 *
 * Owns: generation.  Calls: restore, restore_read (the kept partitions'
 * state watermarks), committer (finish or abort the open transaction; the
 * rewind count), processor_state (unassign and keep partitions, drop their
 * streams, forget the input partition count). */
#include "stream/rebalance.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "stream/log.h"
#include "stream/processor_internal.h"
#include "stream/committer.h"
#include "stream/restore.h"
#include "stream/restore_read.h"

/* Seek every partition of l to its offset; DP_EIO (logged) if any fails. */
static int seek_to(proc *p, rd_kafka_topic_partition_list_t *l)
{
    if (l->cnt == 0)
        return DP_OK;
    rd_kafka_error_t *e = rd_kafka_seek_partitions(p->consumer, l, KAFKA_TIMEOUT_MS);
    if (e) {
        dp_log(DP_LOG_ERROR, "seek failed: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return DP_EIO;
    }
    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].err) {
            dp_log(DP_LOG_ERROR, "seek of partition %" PRId32 " failed: %s", l->elems[i].partition,
                   rd_kafka_err2str(l->elems[i].err));
            return DP_EIO;
        }
    return DP_OK;
}

/* After an aborted transaction: forget everything in memory and restore
 * the assigned partitions exactly as a restarted instance would. */
#define MAX_REWINDS_IN_ROW 5

int ps_rewind_assigned(proc *p)
{
    ps_commit_wait(p);   /* its outcome no longer matters: everything is restored */
    /* A failure that repeats after restoring (e.g. a message the broker
     * will never accept) would loop forever: give up instead. */
    if (ps_txn_rewinding(p) > MAX_REWINDS_IN_ROW) {
        ps_set_fatal(p, "%s", "transactions keep failing after restoring from the state topic; stopping");
        return DP_EIO;
    }
    ps_part_unassign(p, -1);
    int rc = ps_forget_kept(p);   /* all of them */
    if (rc != DP_OK)
        return rc;
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_topic_partition_list_t *cur = NULL;
    if (rd_kafka_assignment(p->consumer, &cur) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return DP_EIO;
    l = rd_kafka_topic_partition_list_copy(cur);
    rd_kafka_topic_partition_list_destroy(cur);
    dp_log_event(DP_LOG_WARN, "rewind", NULL, 0, 0,
                 "transaction aborted: rewinding %d partition(s) to their last committed state", l->cnt);
    if (p->o->metrics)
        dp_metrics_rewind(p->o->metrics);
    rc = ps_restore_partitions(p, l);
    if (rc == DP_OK && (rc = seek_to(p, l)) != DP_OK)
        ps_set_fatal(p, "%s", "seek after rewind failed");
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* A rebalance callback ran inside the consume call that fetched the
 * current batch: which of its messages came before the callback and which
 * after cannot be told, so none is handled and every assigned partition is
 * sought back to where handling stopped (or, if nothing was handled since
 * its restore, to where the restore put it). */
int ps_reseek_assigned(proc *p)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(p->consumer, &l) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return DP_EIO;
    int rc = DP_OK;
    for (int i = 0; i < l->cnt && rc == DP_OK; i++) {
        ps_partition *pp = ps_part_get(p, l->elems[i].partition);
        if (!pp)
            rc = DP_ENOMEM;
        else
            l->elems[i].offset = pp->position != NO_OFFSET ? pp->position : pp->resume;
    }
    if (rc == DP_OK)
        rc = seek_to(p, l);
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* An eager rebalance revokes every partition and assigns again, most of
 * them to the same instance: keep the streams of the revoked partitions in
 * memory (ps_partition.kept) when what they hold is exactly what was just
 * committed — the revocation's commit succeeded, nothing is open, no
 * rewind is pending and the partitions were revoked, not lost — and note
 * each one's state partition high watermark, against which restore checks
 * that nobody wrote it before the partition came back (docs/kafka.md §2).
 * The cooperative protocol never revokes what stays. */
static void keep_revoked(proc *p, rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts)
{
    if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS || rd_kafka_assignment_lost(rk) || ps_txn_is_open(p) ||
        ps_txn_need_rewind(p) || p->fatal || parts->cnt == 0)
        return;   /* (no commit runs: the callback waited for it) */
    int64_t *end = calloc((size_t)parts->cnt, sizeof *end);
    if (!end || restore_read_ends(p, parts, end) != DP_OK) {
        free(end);
        return;   /* restored when it comes back, as any partition */
    }
    for (int i = 0; i < parts->cnt; i++)
        ps_part_keep(p, parts->elems[i].partition, end[i]);
    free(end);
}

/* Tell the metrics how many partitions this instance holds now. */
static void count_assigned(proc *p)
{
    if (!p->o->metrics)
        return;
    int n = 0;
    for (int32_t i = 0; i < p->n_parts; i++)
        n += p->parts[i].assigned != 0;
    dp_metrics_partitions(p->o->metrics, n);
}

void ps_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                         void *opaque)
{
    proc *p = opaque;
    int64_t t0 = ps_now_ms();   /* the callback's time: what the partitions that stay wait */
    p->generation++;
    ps_input_partitions_forget(p);   /* the topic may have grown: ask again */
    ps_commit_wait(p);   /* a restore reads the state topic this commit writes */
    int cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (p->fatal) {
            /* Do not consume what we could not restore. */
            return;
        }
        int rc = ps_restore_partitions(p, parts);
        if (rc == DP_OK)
            rc = ps_forget_kept(p);   /* kept, but assigned elsewhere */
        if (rc == DP_ECANCELED) {
            dp_log(DP_LOG_INFO, "%s", "shutdown requested while restoring; partitions left unassigned");
            return;
        }
        if (rc != DP_OK) {
            ps_set_fatal(p, "restoring assigned partitions failed: %s", dp_status_str(rc));
            return;
        }
        rd_kafka_error_t *e = NULL;
        if (cooperative)
            e = rd_kafka_incremental_assign(rk, parts);
        else {
            rd_kafka_resp_err_t ae = rd_kafka_assign(rk, parts);
            if (ae)
                ps_set_fatal(p, "assign failed: %s", rd_kafka_err2str(ae));
        }
        if (e) {
            ps_set_fatal(p, "incremental assign failed: %s", rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        }
        dp_log_event(DP_LOG_INFO, "rebalance_assign", NULL, 0, 0, "assigned %d partition(s) of %s (%s; callback "
                     "%" PRId64 " ms)", parts->cnt, p->cfg->topic_updates, cooperative ? "incremental" : "eager",
                     ps_now_ms() - t0);
        count_assigned(p);
        return;
    }
    /* Revocation (or lost partitions): finish what is open, then forget
     * the revoked streams; their next owner restores them. */
    ps_commit_wait(p);
    if (ps_txn_is_open(p)) {
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
            ps_txn_commit(p, 1);
        else
            ps_txn_abort(p);
    }
    if (!cooperative)
        keep_revoked(p, rk, err, parts);
    for (int i = 0; i < parts->cnt; i++)
        ps_part_unassign(p, parts->elems[i].partition);
    ps_drop_unassigned_streams(p);
    if (cooperative) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
        if (e)
            rd_kafka_error_destroy(e);
    } else {
        rd_kafka_assign(rk, NULL);
    }
    dp_log_event(DP_LOG_INFO, "rebalance_revoke", NULL, 0, 0, "revoked %d partition(s) of %s (%s; callback %" PRId64
                 " ms)", parts->cnt, p->cfg->topic_updates, cooperative ? "incremental" : "eager", ps_now_ms() - t0);
    count_assigned(p);
}
