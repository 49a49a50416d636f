/* processor_state.c — the helpers every part of the processor uses on the
 * shared state (processor_internal.h): the clock, the fatal flag, the
 * partition table and the stream table.
 *
 * Owns: fatal, fatal_refused and fatal_msg; the stream table's membership
 * and lifetime (streams); the partition table (parts, n_parts) with each
 * partition's assigned and kept flags (and kept_end); the cached input
 * partition count; each stream's kind and table key (a shard's: stream id
 * ‖ 0x00 ‖ partition, docs/kafka.md §10).  Calls no other part of the
 * processor; kafka_util for the partition count, stats_record to free a
 * release stream's merger. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/processor_internal.h"

int64_t ps_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ps_state_init(proc *p)
{
    dp_bytes_map_init(&p->streams);
    p->parts = NULL;
    p->n_parts = 0;
}

void ps_state_free(proc *p)
{
    ps_part_unassign(p, -1);
    ps_forget_kept(p);
    dp_bytes_map_free(&p->streams);
    free(p->parts);
    p->parts = NULL;
    p->n_parts = 0;
}

void ps_set_fatal(proc *p, const char *fmt, const char *detail)
{
    if (!p->fatal) {
        p->fatal = 1;
        snprintf(p->fatal_msg, sizeof p->fatal_msg, fmt, detail);
        if (p->o->metrics)
            dp_metrics_fatal(p->o->metrics, p->fatal_msg);
    }
}

void ps_set_refused(proc *p, const char *fmt, const char *detail)
{
    ps_set_fatal(p, fmt, detail);
    p->fatal_refused = 1;
}

/* --- partitions and streams ---------------------------------------------------- */

ps_partition *ps_part_get(proc *p, int32_t id)
{
    if (id < 0)
        return NULL;
    if (id >= p->n_parts) {
        int32_t n = id + 1;
        ps_partition *np = realloc(p->parts, (size_t)n * sizeof *np);
        if (!np)
            return NULL;
        for (int32_t i = p->n_parts; i < n; i++)
            np[i] = (ps_partition){.assigned = 0, .position = NO_OFFSET, .resume = RD_KAFKA_OFFSET_BEGINNING};
        p->parts = np;
        p->n_parts = n;
    }
    return &p->parts[id];
}

ps_partition *ps_part_assign(proc *p, int32_t id)
{
    ps_partition *pp = ps_part_get(p, id);
    if (pp)
        *pp = (ps_partition){.assigned = 1, .position = NO_OFFSET, .resume = RD_KAFKA_OFFSET_BEGINNING};
    return pp;
}

void ps_part_unassign(proc *p, int32_t id)
{
    if (id < 0) {
        for (int32_t i = 0; i < p->n_parts; i++)
            p->parts[i].assigned = 0;
        return;
    }
    ps_partition *pp = ps_part_get(p, id);
    if (pp)
        pp->assigned = 0;
}

void ps_stream_free(ps_stream *s)
{
    if (!s)
        return;
    dp_gate_free(&s->gate);
    dp_synth_destroy(s->synth);
    dp_buf_free(&s->cas_digests);
    if (s->kind == PS_STREAM_RELEASE)
        dp_stats_merger_free(&s->merger);
    free(s->tkey);
    free(s->id);
    free(s);
}

static void drop_stream_cb(void *value, void *ctx) { (void)ctx; ps_stream_free(value); }

static int keep_assigned_cb(void *value, void *ctx)
{
    proc *p = ctx;
    ps_stream *s = value;
    return s->partition >= 0 && s->partition < p->n_parts &&
           (p->parts[s->partition].assigned || p->parts[s->partition].kept);
}

/* Drop the streams of partitions no longer assigned (nor kept). */
int ps_drop_unassigned_streams(proc *p)
{
    return dp_bytes_map_filter(&p->streams, keep_assigned_cb, drop_stream_cb, p);
}

void ps_part_keep(proc *p, int32_t id, int64_t end)
{
    ps_partition *pp = ps_part_get(p, id);
    if (pp && pp->assigned) {
        pp->kept = 1;
        pp->kept_end = end;
    }
}

void ps_part_take_back(proc *p, int32_t id)
{
    ps_partition *pp = ps_part_get(p, id);
    if (pp && pp->kept) {
        pp->kept = 0;
        pp->assigned = 1;
    }
}

int ps_forget_kept(proc *p)
{
    for (int32_t i = 0; i < p->n_parts; i++)
        p->parts[i].kept = 0;
    return ps_drop_unassigned_streams(p);
}

ps_stream_kind ps_stream_kind_of(const proc *p, const dp_stream_route *route)
{
    if (!route->sharded)
        return PS_STREAM_WHOLE;
    return p->o->role == DP_PROCESSOR_ROLE_RELEASE ? PS_STREAM_RELEASE : PS_STREAM_SHARD;
}

size_t ps_shard_table_key(const char *id, size_t id_len, int32_t partition, char *out, size_t out_size)
{
    if (id_len + 5 > out_size)
        return 0;
    memcpy(out, id, id_len);
    out[id_len] = 0;
    for (int i = 0; i < 4; i++)
        out[id_len + 1 + i] = (char)(((uint32_t)partition >> (24 - 8 * i)) & 0xffu);
    return id_len + 5;
}

ps_stream *ps_stream_new(proc *p, const char *id, size_t len, const dp_stream_route *route,
                             int32_t partition)
{
    ps_stream *s = calloc(1, sizeof *s);
    if (!s || !(s->id = malloc(len + 1)) || !(s->tkey = malloc(len + 5))) {
        if (s)
            free(s->id);
        free(s);
        return NULL;
    }
    s->kind = ps_stream_kind_of(p, route);
    s->tkey_len = s->kind == PS_STREAM_SHARD ? ps_shard_table_key(id, len, partition, s->tkey, len + 5) : len;
    if (s->kind != PS_STREAM_SHARD)
        memcpy(s->tkey, id, len);
    memcpy(s->id, id, len);
    s->id[len] = '\0';
    s->id_len = len;
    s->route = route;
    s->partition = partition;
    s->skip_below = 0;
    s->pending = NO_OFFSET;
    dp_buf_init(&s->cas_digests);
    return s;
}

int ps_stream_put(proc *p, ps_stream *s)
{
    dp_bytes_map_slot *slot = dp_bytes_map_upsert(&p->streams, s->tkey, s->tkey_len);
    if (!slot) {
        ps_stream_free(s);
        return DP_ENOMEM;
    }
    ps_stream_free(slot->value);
    slot->value = s;
    return DP_OK;
}

void ps_input_partitions_forget(proc *p) { p->n_input_partitions = 0; }

int32_t ps_input_partition_count(proc *p)
{
    if (p->n_input_partitions <= 0)
        p->n_input_partitions = dp_kafka_topic_partition_count(p->consumer, p->cfg->topic_updates, 5000);
    return p->n_input_partitions;
}
