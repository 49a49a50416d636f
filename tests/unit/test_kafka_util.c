/* test_kafka_util.c — the Kafka plumbing every command shares
 * (stream/kafka_util.h), on librdkafka's in-process mock cluster (no
 * broker needed): the reachability check, the flush that shows its wait,
 * and the topic specs a config gives.  The real-broker side (topics
 * created as configured) is tests/integration/kafka_topics.sh. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/dp_error.h"
#include "dptest.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/stream_config.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A mock cluster of one broker, owned by its own client. */
typedef struct mock {
    rd_kafka_t              *owner;
    rd_kafka_mock_cluster_t *mc;
    char                     bootstrap[256];
} mock;

static void mock_start(mock *m)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", NULL, 0);
    m->owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m->owner);
    m->mc = rd_kafka_mock_cluster_new(m->owner, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m->mc);
    snprintf(m->bootstrap, sizeof m->bootstrap, "%s", rd_kafka_mock_cluster_bootstraps(m->mc));
    CU_ASSERT_EQUAL(rd_kafka_mock_topic_create(m->mc, "t", 1, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void mock_stop(mock *m)
{
    rd_kafka_mock_cluster_destroy(m->mc);
    rd_kafka_destroy(m->owner);
}

static int failed_flag;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (msg->err)
        failed_flag = 1;
}

static rd_kafka_t *producer(const char *bootstrap, const char *message_timeout_ms)
{
    const char *const kv[][2] = {{"enable.idempotence", "true"}, {"acks", "all"},
                                 {"message.timeout.ms", message_timeout_ms}};
    char err[512];
    rd_kafka_conf_t *conf = dp_kafka_conf(NULL, bootstrap, kv, 3, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
    return rk;
}

/* Run fn with stderr going to a file; return what it wrote (malloc'd). */
static char *capture_stderr(int (*fn)(void *), void *arg, int *rc)
{
    char path[] = "/tmp/dptest-stderr-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    *rc = fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fdopen(fd, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *text = calloc(1, (size_t)n + 1);
    if (n > 0 && fread(text, 1, (size_t)n, f) != (size_t)n)
        text[0] = '\0';
    fclose(f);
    unlink(path);
    return text;
}

static int check_unreachable(void *arg)
{
    char *err = arg;
    rd_kafka_t *rk = producer("127.0.0.1:1", "5000");
    int rc = dp_kafka_check_reachable(rk, 800, err, 1024);
    rd_kafka_destroy(rk);
    return rc;
}

/* Nobody listens on port 1: DP_EIO within the timeout, naming the
 * bootstrap servers and the reason, and nothing else on stderr — the
 * reconnection errors are held back until a check succeeds, so this runs
 * first, before any check of this process has reached a broker. */
static void test_unreachable(void)
{
    char err[1024] = "";
    int64_t t0 = now_ms();
    int rc;
    char *said = capture_stderr(check_unreachable, err, &rc);
    int64_t took = now_ms() - t0;
    CU_ASSERT_EQUAL(rc, DP_EIO);
    CU_ASSERT(took >= 700 && took < 5000);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot reach 127.0.0.1:1 ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "Connection refused"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "within 800 ms"));
    CU_ASSERT_PTR_NULL(strstr(said, "error"));
    if (!strstr(err, "Connection refused") || strstr(said, "error"))
        fprintf(stderr, "\n  message: %s\n  stderr: %s", err, said);
    free(said);
}

static void test_reachable(void)
{
    mock m;
    mock_start(&m);
    char err[1024] = "";
    rd_kafka_t *rk = producer(m.bootstrap, "5000");
    CU_ASSERT_EQUAL(dp_kafka_check_reachable(rk, 5000, err, sizeof err), DP_OK);
    rd_kafka_destroy(rk);
    mock_stop(&m);
}

typedef struct flush_case {
    rd_kafka_t *rk;
    int         quiet;
} flush_case;

static int do_flush(void *arg)
{
    flush_case *c = arg;
    return dp_kafka_flush_progress(c->rk, "test", &failed_flag, c->quiet);
}

/* Acknowledgements that take 4.5 s (the broker's round trip): the flush
 * waits for them, says so on stderr while it waits, and succeeds. */
static void test_flush_shows_its_wait(void)
{
    mock m;
    mock_start(&m);
    rd_kafka_t *rk = producer(m.bootstrap, "60000");
    char err[1024];
    CU_ASSERT_EQUAL_FATAL(dp_kafka_check_reachable(rk, 5000, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(rd_kafka_mock_broker_set_rtt(m.mc, 1, 4500), RD_KAFKA_RESP_ERR_NO_ERROR);
    failed_flag = 0;
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_VALUE("x", 1),
                                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                        RD_KAFKA_RESP_ERR_NO_ERROR);
    flush_case c = {rk, 0};
    int rc;
    int64_t t0 = now_ms();
    char *said = capture_stderr(do_flush, &c, &rc);
    CU_ASSERT_EQUAL(rc, DP_OK);
    CU_ASSERT(now_ms() - t0 >= 3000);
    CU_ASSERT_PTR_NOT_NULL(strstr(said, "dpstream test: waiting for "));
    CU_ASSERT_PTR_NOT_NULL(strstr(said, " acknowledgements from "));
    CU_ASSERT_PTR_NOT_NULL(strstr(said, m.bootstrap));
    if (!strstr(said, "acknowledgements from"))
        fprintf(stderr, "\n  stderr: %s", said);
    free(said);
    CU_ASSERT_EQUAL(rd_kafka_outq_len(rk), 0);

    /* quiet: the same wait, not a word */
    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_VALUE("y", 1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                      RD_KAFKA_V_END);
    c.quiet = 1;
    said = capture_stderr(do_flush, &c, &rc);
    CU_ASSERT_EQUAL(rc, DP_OK);
    CU_ASSERT_EQUAL(said[0], '\0');
    free(said);
    rd_kafka_destroy(rk);
    mock_stop(&m);
}

/* A message nobody acknowledges fails at its message timeout; the flush
 * reports the failure instead of hanging or succeeding. */
static void test_flush_reports_failure(void)
{
    mock m;
    mock_start(&m);
    rd_kafka_t *rk = producer(m.bootstrap, "1500");
    char err[1024];
    CU_ASSERT_EQUAL_FATAL(dp_kafka_check_reachable(rk, 5000, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(rd_kafka_mock_broker_set_rtt(m.mc, 1, 8000), RD_KAFKA_RESP_ERR_NO_ERROR);
    failed_flag = 0;
    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_VALUE("z", 1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                      RD_KAFKA_V_END);
    flush_case c = {rk, 1};
    int rc;
    int64_t t0 = now_ms();
    char *said = capture_stderr(do_flush, &c, &rc);
    free(said);
    CU_ASSERT_EQUAL(rc, DP_EIO);
    CU_ASSERT_EQUAL(failed_flag, 1);
    CU_ASSERT(now_ms() - t0 < 7000);
    rd_kafka_destroy(rk);
    mock_stop(&m);
}

/* topics.partitions and topics.replication_factor become every created
 * topic's spec; the defaults are 4 partitions and the broker's factor. */
static void test_topic_specs(void)
{
    char err[512];
    dp_stream_config *c = NULL;
    const char *streams = "\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\","
                          "\"config\":{\"horizon\":2,\"k\":1,\"rho\":1}}]}";
    char text[512];
    snprintf(text, sizeof text, "{%s", streams);
    CU_ASSERT_EQUAL_FATAL(dp_stream_config_parse(&c, text, strlen(text), err, sizeof err), DP_OK);
    dp_topic_spec s = dp_kafka_topic_spec(c, c->topic_state, 1);
    CU_ASSERT_EQUAL(s.partitions, 4);
    CU_ASSERT_EQUAL(s.replication, -1);
    CU_ASSERT_EQUAL(s.compact, 1);
    CU_ASSERT_STRING_EQUAL(s.name, "dpstream.state");
    dp_stream_config_free(c);
    snprintf(text, sizeof text, "{\"topics\":{\"prefix\":\"x\",\"partitions\":12,\"replication_factor\":3},%s",
             streams);
    CU_ASSERT_EQUAL_FATAL(dp_stream_config_parse(&c, text, strlen(text), err, sizeof err), DP_OK);
    s = dp_kafka_topic_spec(c, c->topic_updates, 0);
    CU_ASSERT_EQUAL(s.partitions, 12);
    CU_ASSERT_EQUAL(s.replication, 3);
    CU_ASSERT_STRING_EQUAL(s.name, "x.updates");
    dp_stream_config_free(c);
    static const char *const BAD[][2] = {
        {"{\"topics\":{\"partitions\":0},", "topics.partitions: must be an integer in 1..100000"},
        {"{\"topics\":{\"partitions\":\"4\"},", "topics.partitions"},
        {"{\"topics\":{\"replication_factor\":0},", "topics.replication_factor: must be -1"},
        {"{\"topics\":{\"replication_factor\":1.5},", "topics.replication_factor"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        snprintf(text, sizeof text, "%s%s", BAD[i][0], streams);
        CU_ASSERT_EQUAL(dp_stream_config_parse(&c, text, strlen(text), err, sizeof err), DP_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, BAD[i][1]));
    }
}

static const dptest_case CASES[] = {
    {"reachability: port 1 is reported in time, in one message", test_unreachable},
    {"reachability: a (mock) broker answers", test_reachable},
    {"flush: a slow acknowledgement is waited for, and the wait is shown", test_flush_shows_its_wait},
    {"flush: an unacknowledged message fails the flush", test_flush_reports_failure},
    {"topic specs from topics.partitions / replication_factor", test_topic_specs},
    {NULL, NULL},
};

int main(void)
{
    dp_log_set_level(DP_LOG_WARN);
    return dptest_run("kafka_util", CASES);
}
