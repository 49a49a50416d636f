/* kafka_admin.c — the few topic operations the integration tests need and
 * this machine has no Kafka command-line tools for (scripts/kafka-local.sh
 * runs the broker from its jars only).  Built next to the dpstream binary.
 *
 *   kafka_admin BOOTSTRAP partitions TOPIC          print the partition count
 *   kafka_admin BOOTSTRAP replication TOPIC         print partition 0's replica count
 *   kafka_admin BOOTSTRAP config TOPIC NAME         print one topic config value
 *   kafka_admin BOOTSTRAP add-partitions TOPIC N    grow TOPIC to N partitions
 *   kafka_admin BOOTSTRAP set-config TOPIC NAME VALUE
 *                                                   set one topic config (AlterConfigs: the
 *                                                   topic's other dynamic configs are reset)
 *
 * Exit 0 on success, 1 with a message on stderr (a missing topic too). */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_MS 20000

static int die(const char *what, const char *why)
{
    fprintf(stderr, "kafka_admin: %s: %s\n", what, why);
    return 1;
}

/* The topic's metadata, or NULL (reported) if it is missing. */
static const struct rd_kafka_metadata_topic *topic_md(rd_kafka_t *rk, const char *topic,
                                                      const struct rd_kafka_metadata **md)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, md, TIMEOUT_MS);
    rd_kafka_topic_destroy(t);
    if (e) {
        die(topic, rd_kafka_err2str(e));
        return NULL;
    }
    if ((*md)->topic_cnt != 1 || (*md)->topics[0].err) {
        die(topic, rd_kafka_err2str((*md)->topic_cnt == 1 ? (*md)->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
        return NULL;
    }
    return &(*md)->topics[0];
}

/* Run one admin request and return its result event, or NULL (reported). */
static rd_kafka_event_t *admin_wait(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *what)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS + 5000);
    if (!ev) {
        die(what, "timed out");
        return NULL;
    }
    if (rd_kafka_event_error(ev)) {
        die(what, rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        return NULL;
    }
    (void)rk;
    return ev;
}

static int add_partitions(rd_kafka_t *rk, const char *topic, int total)
{
    char err[512];
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)total, err, sizeof err);
    if (!np)
        return die(topic, err);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
    rd_kafka_event_t *ev = admin_wait(rk, q, "CreatePartitions");
    int rc = 1;
    if (ev) {
        size_t n = 0;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(ev), &n);
        rc = n == 1 && !rd_kafka_topic_result_error(res[0]) ? 0
             : die(topic, n == 1 ? rd_kafka_topic_result_error_string(res[0]) : "no result");
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_NewPartitions_destroy(np);
    rd_kafka_queue_destroy(q);
    return rc;
}

static int topic_config(rd_kafka_t *rk, const char *topic, const char *name, const char *value)
{
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    if (value) {
        rd_kafka_ConfigResource_set_config(res, name, value);
        rd_kafka_AlterConfigs(rk, &res, 1, NULL, q);
    } else {
        rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    }
    rd_kafka_event_t *ev = admin_wait(rk, q, value ? "AlterConfigs" : "DescribeConfigs");
    int rc = 1;
    if (ev) {
        size_t n = 0;
        const rd_kafka_ConfigResource_t **out =
            value ? rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev), &n)
                  : rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
        if (n != 1 || rd_kafka_ConfigResource_error(out[0])) {
            rc = die(topic, n == 1 ? rd_kafka_ConfigResource_error_string(out[0]) : "no result");
        } else if (value) {
            rc = 0;
        } else {
            size_t ne = 0;
            const rd_kafka_ConfigEntry_t **e = rd_kafka_ConfigResource_configs(out[0], &ne);
            for (size_t i = 0; i < ne && rc; i++)
                if (strcmp(rd_kafka_ConfigEntry_name(e[i]), name) == 0) {
                    const char *v = rd_kafka_ConfigEntry_value(e[i]);
                    printf("%s\n", v ? v : "");
                    rc = 0;
                }
            if (rc)
                die(name, "no such topic config");
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_queue_destroy(q);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: kafka_admin BOOTSTRAP partitions|replication|config|add-partitions|set-config "
                        "TOPIC [ARGS]\n");
        return 2;
    }
    const char *boot = argv[1], *cmd = argv[2], *topic = argv[3];
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", boot, err, sizeof err) != RD_KAFKA_CONF_OK)
        return die("bootstrap.servers", err);
    /* a consumer handle: its metadata requests never auto-create a topic */
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk)
        return die("client", err);
    int rc = 2;
    const struct rd_kafka_metadata *md = NULL;
    if (strcmp(cmd, "partitions") == 0 || strcmp(cmd, "replication") == 0) {
        const struct rd_kafka_metadata_topic *t = topic_md(rk, topic, &md);
        rc = 1;
        if (t && strcmp(cmd, "partitions") == 0) {
            printf("%d\n", t->partition_cnt);
            rc = 0;
        } else if (t && t->partition_cnt > 0) {
            printf("%d\n", t->partitions[0].replica_cnt);
            rc = 0;
        }
    } else if (strcmp(cmd, "config") == 0 && argc == 5) {
        rc = topic_config(rk, topic, argv[4], NULL);
    } else if (strcmp(cmd, "add-partitions") == 0 && argc == 5) {
        rc = add_partitions(rk, topic, atoi(argv[4]));
    } else if (strcmp(cmd, "set-config") == 0 && argc == 6) {
        rc = topic_config(rk, topic, argv[4], argv[5]);
    } else {
        fprintf(stderr, "kafka_admin: unknown command or wrong arguments: %s\n", cmd);
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
    return rc;
}
