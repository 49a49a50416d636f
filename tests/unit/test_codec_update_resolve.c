/* test_codec_update_resolve.c — Updates written with another version of
 * the Update schema (codec.h, "writer schemas of Update";
 * codec_update_resolve.c):
 *   - newer writers (an added optional field), older writers (no
 *     event_time, no entity) and a writer with the fields in another order
 *     decode to exactly the update that dpstream's
 *     own schema gives;
 *   - writers that cannot be read (a field of another type, a missing
 *     required field, another enum, another record name, nested types in
 *     another namespace, not Avro, not in the registry) are DP_ESCHEMA, at add and at every decode, with the
 *     writer schema id in the message;
 *   - an id not added yet is DP_ENOTFOUND; without resolve_update_writers a
 *     foreign id stays MALFORMED (DP_EINVAL);
 *   - a truncated body or trailing bytes under a resolvable writer are
 *     DP_EINVAL (the writer schema's bounds check), and the Update rules
 *     still apply (step 0 refused);
 *   - resolved updates borrow from their own stores: many held at once;
 *   - the cache restarting past its bound decides the same way.
 * Teeth (each tried in codec_update_resolve.c, then reverted; each made
 * this test fail): mapping fields by position instead of by name (the
 * reordered writer), skipping avro_schema_equal (the string step and the
 * 5-symbol enum), not filling absent fields with null (the older writer). */
#include "dptest.h"

#include "codec/codec.h"
#include "core/dp_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OWN_ID 7u

static dp_codec *new_codec(int resolve)
{
    dp_codec_options o = {.framing = DP_CODEC_FRAMING_CONFLUENT, .resolve_update_writers = resolve};
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
        o.schema_id[t] = OWN_ID + (uint32_t)t;
    dp_codec *c = NULL;
    char err[256] = "";
    CU_ASSERT_FATAL(dp_codec_create(&c, &o, err, sizeof err) == DP_OK);
    return c;
}

/* --- a minimal Avro binary writer for hand-made writer schemas ------------- */

typedef struct msg {
    uint8_t b[512];
    size_t  n;
} msg;

static void put_header(msg *m, uint32_t id)
{
    m->n = 0;
    m->b[m->n++] = 0;
    for (int s = 24; s >= 0; s -= 8)
        m->b[m->n++] = (uint8_t)(id >> s);
}

static void put_long(msg *m, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (z >= 0x80) {
        m->b[m->n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    m->b[m->n++] = (uint8_t)z;
}

static void put_str(msg *m, const char *s)
{
    size_t len = strlen(s);
    put_long(m, (int64_t)len);
    memcpy(m->b + m->n, s, len);
    m->n += len;
}

/* The schema pieces, as in schemas/Update.avsc (docs dropped). */
#define KIND_T "{\"type\":\"enum\",\"name\":\"UpdateKind\",\"symbols\":[\"REPORT\",\"INSERT\",\"DELETE\",\"CLOSE_STEP\"]}"
#define PAYLOAD_T                                                                                                \
    "[\"null\",{\"type\":\"record\",\"name\":\"Category\",\"fields\":[{\"name\":\"value\",\"type\":\"long\"}]},"  \
    "{\"type\":\"record\",\"name\":\"CategoricalRow\",\"fields\":[{\"name\":\"values\",\"type\":{\"type\":"      \
    "\"array\",\"items\":\"int\"}}]},{\"type\":\"record\",\"name\":\"Point\",\"fields\":[{\"name\":"             \
    "\"coordinates\",\"type\":{\"type\":\"array\",\"items\":\"double\"}}]}]"
#define F_STREAM "{\"name\":\"stream\",\"type\":\"string\"}"
#define F_STEP   "{\"name\":\"step\",\"type\":\"long\"}"
#define F_KIND   "{\"name\":\"kind\",\"type\":" KIND_T "}"
#define F_ENTITY "{\"name\":\"entity\",\"type\":[\"null\",\"string\"],\"default\":null}"
#define F_PAYLOAD "{\"name\":\"payload\",\"type\":" PAYLOAD_T ",\"default\":null}"
#define F_TIME   "{\"name\":\"event_time\",\"type\":[\"null\",{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}],\"default\":null}"
#define F_SOURCE "{\"name\":\"source\",\"type\":[\"null\",\"string\"],\"default\":null}"
#define RECORD(name, fields) \
    "{\"type\":\"record\",\"name\":\"" name "\",\"namespace\":\"org.dpstream.v1\",\"fields\":[" fields "]}"

/* newer: "source" between entity and payload */
static const char NEWER[] = RECORD("Update", F_STREAM "," F_STEP "," F_KIND "," F_ENTITY "," F_SOURCE "," F_PAYLOAD
                                             "," F_TIME);
/* older: neither entity nor event_time */
static const char OLDER[] = RECORD("Update", F_STREAM "," F_STEP "," F_KIND "," F_PAYLOAD);
/* the same fields in another order */
static const char REORDERED[] = RECORD("Update", F_KIND "," F_PAYLOAD "," F_STREAM "," F_TIME "," F_STEP "," F_ENTITY);
/* the named types inside keep their full names: under another namespace
 * UpdateKind and the payload records are other types */
static const char RENAMESPACED[] =
    "{\"type\":\"record\",\"name\":\"Update\",\"namespace\":\"com.example\",\"fields\":[" F_STREAM "," F_STEP
    "," F_KIND "]}";

/* One REPORT of entity e1 with Category 1 (or, older, no entity) at step 3
 * of stream "s/1", written in each writer's field order. */
static void msg_newer(msg *m, uint32_t id)
{
    put_header(m, id);
    put_str(m, "s/1"); put_long(m, 3); put_long(m, 0);
    put_long(m, 1); put_str(m, "e1");          /* entity */
    put_long(m, 1); put_str(m, "producer-2");  /* source: read and dropped */
    put_long(m, 1); put_long(m, 1);            /* Category 1 */
    put_long(m, 1); put_long(m, 1700000000000);
}

static void msg_older(msg *m, uint32_t id, int64_t step)
{
    put_header(m, id);
    put_str(m, "s/1"); put_long(m, step); put_long(m, 0);
    put_long(m, 1); put_long(m, 1);
}

static void msg_reordered(msg *m, uint32_t id)
{
    put_header(m, id);
    put_long(m, 0);                            /* kind */
    put_long(m, 1); put_long(m, 1);            /* payload */
    put_str(m, "s/1");
    put_long(m, 1); put_long(m, 1700000000000);
    put_long(m, 3);                            /* step */
    put_long(m, 1); put_str(m, "e1");
}

/* What dpstream's own schema says for the same update. */
static void own_update(dp_codec *c, int with_entity, int with_time, msg *m)
{
    dp_update u;
    memset(&u, 0, sizeof u);
    u.stream_id = "s/1";
    u.stream_id_len = 3;
    u.step = 3;
    u.kind = DP_UPDATE_REPORT;
    if (with_entity) {
        u.entity_id = "e1";
        u.entity_id_len = 2;
    }
    u.payload.kind = DP_PAYLOAD_CATEGORY;
    u.payload.category = 1;
    u.has_event_time = with_time;
    u.event_time_ms = with_time ? 1700000000000 : 0;
    char err[256];
    CU_ASSERT_FATAL(dp_codec_encode_update(c, &u, m->b, sizeof m->b, &m->n, err, sizeof err) == DP_OK);
}

static int same(const dp_update *a, const dp_update *b)
{
    return a->stream_id_len == b->stream_id_len && memcmp(a->stream_id, b->stream_id, a->stream_id_len) == 0 &&
           a->step == b->step && a->kind == b->kind && (a->entity_id == NULL) == (b->entity_id == NULL) &&
           a->entity_id_len == b->entity_id_len &&
           (!a->entity_id || memcmp(a->entity_id, b->entity_id, a->entity_id_len) == 0) &&
           a->payload.kind == b->payload.kind && a->payload.category == b->payload.category &&
           a->has_event_time == b->has_event_time && a->event_time_ms == b->event_time_ms;
}

static void check_resolved(dp_codec *c, const msg *m, int with_entity, int with_time)
{
    dp_codec *own = new_codec(0);
    msg o;
    own_update(own, with_entity, with_time, &o);
    dp_update want, got;
    dp_update_store s1 = {0}, s2 = {0};
    char err[256] = "";
    CU_ASSERT_FATAL(dp_codec_decode_update_into(own, o.b, o.n, &want, &s1, err, sizeof err) == DP_OK);
    int rc = dp_codec_decode_update_into(c, m->b, m->n, &got, &s2, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "resolved decode: %s\n", err);
    CU_ASSERT_EQUAL(rc, DP_OK);
    CU_ASSERT(rc == DP_OK && same(&want, &got));
    dp_update_store_free(&s1);
    dp_update_store_free(&s2);
    dp_codec_destroy(own);
}

static void test_compatible_writers(void)
{
    dp_codec *c = new_codec(1);
    char err[256] = "";
    msg m;
    CU_ASSERT_FALSE(dp_codec_update_writer_known(c, 20));
    msg_newer(&m, 20);
    dp_update u;
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, m.b, m.n, &u, err, sizeof err), DP_ENOTFOUND);
    CU_ASSERT_EQUAL(dp_codec_add_update_writer(c, 20, NEWER, err, sizeof err), DP_OK);
    CU_ASSERT_TRUE(dp_codec_update_writer_known(c, 20));
    check_resolved(c, &m, 1, 1);

    CU_ASSERT_EQUAL(dp_codec_add_update_writer(c, 21, OLDER, err, sizeof err), DP_OK);
    msg_older(&m, 21, 3);
    check_resolved(c, &m, 0, 0);

    CU_ASSERT_EQUAL(dp_codec_add_update_writer(c, 22, REORDERED, err, sizeof err), DP_OK);
    msg_reordered(&m, 22);
    check_resolved(c, &m, 1, 1);

    /* the own id keeps the direct path and needs no add */
    CU_ASSERT_TRUE(dp_codec_update_writer_known(c, OWN_ID));
    own_update(c, 1, 0, &m);
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, m.b, m.n, &u, err, sizeof err), DP_OK);
    dp_codec_destroy(c);
}

static void test_incompatible_writers(void)
{
    static const struct {
        const char *name, *json, *why;
    } cases[] = {
        {"step a string", RECORD("Update", F_STREAM ",{\"name\":\"step\",\"type\":\"string\"}," F_KIND), "\"step\""},
        {"step an int (a promotion avro-c cannot be trusted with)",
         RECORD("Update", F_STREAM ",{\"name\":\"step\",\"type\":\"int\"}," F_KIND), "\"step\""},
        {"no stream", RECORD("Update", F_STEP "," F_KIND), "lacks the field \"stream\""},
        {"a fifth kind", RECORD("Update", F_STREAM "," F_STEP ",{\"name\":\"kind\",\"type\":{\"type\":\"enum\","
                                          "\"name\":\"UpdateKind\",\"symbols\":[\"REPORT\",\"INSERT\",\"DELETE\","
                                          "\"CLOSE_STEP\",\"UPSERT\"]}}"), "\"kind\""},
        {"another namespace for UpdateKind", RENAMESPACED, "\"kind\""},
        {"another record", RECORD("Event", F_STREAM "," F_STEP "," F_KIND), "named \"Event\""},
        {"not a record", "\"string\"", "not a record"},
        {"not Avro", "{\"type\": \"object\", \"properties\": {}}", "does not parse"},
        {"not in the registry", NULL, "no schema with that id"},
    };
    dp_codec *c = new_codec(1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t id = 100 + (uint32_t)i;
        char err[512] = "", want[64];
        int rc = dp_codec_add_update_writer(c, id, cases[i].json, err, sizeof err);
        snprintf(want, sizeof want, "writer schema id %u ", id);
        if (rc != DP_ESCHEMA || !strstr(err, want) || !strstr(err, cases[i].why))
            fprintf(stderr, "%s: rc %d, %s\n", cases[i].name, rc, err);
        CU_ASSERT_EQUAL(rc, DP_ESCHEMA);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].why));
        CU_ASSERT_TRUE(dp_codec_update_writer_known(c, id));
        msg m;
        msg_older(&m, id, 3);
        dp_update u;
        err[0] = '\0';
        CU_ASSERT_EQUAL(dp_codec_decode_update(c, m.b, m.n, &u, err, sizeof err), DP_ESCHEMA);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    }
    dp_codec_destroy(c);
}

static void test_malformed_under_a_writer(void)
{
    dp_codec *c = new_codec(1);
    char err[256] = "";
    CU_ASSERT_EQUAL(dp_codec_add_update_writer(c, 21, OLDER, err, sizeof err), DP_OK);
    msg m;
    dp_update u;
    msg_older(&m, 21, 3);
    for (size_t cut = DP_CODEC_CONFLUENT_HEADER; cut < m.n; cut++)
        CU_ASSERT_EQUAL(dp_codec_decode_update(c, m.b, cut, &u, err, sizeof err), DP_EINVAL);
    m.b[m.n++] = 0;
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, m.b, m.n, &u, err, sizeof err), DP_EINVAL);
    msg_older(&m, 21, 0);   /* the Update rules apply after resolution */
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, m.b, m.n, &u, err, sizeof err), DP_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "step 0"));
    dp_codec_destroy(c);

    /* without resolution a foreign id is malformed, as before */
    c = new_codec(0);
    msg_older(&m, 21, 3);
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, m.b, m.n, &u, err, sizeof err), DP_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "schema id 21"));
    dp_codec_destroy(c);
}

static void test_many_held_and_cache_restart(void)
{
    enum { N = 600 };
    dp_codec *c = new_codec(1);
    char err[256] = "";
    static dp_update u[N];
    static dp_update_store st[N];
    static msg m[N];
    int bad = 0;
    /* 600 ids, every third unreadable, over the cache's bound: each decode
     * re-adds its id when the cache forgot it, and decides the same way */
    for (int i = 0; i < N; i++) {
        uint32_t id = 1000 + (uint32_t)i;
        if (!dp_codec_update_writer_known(c, id)) {
            int rc = dp_codec_add_update_writer(c, id, i % 3 == 2 ? RECORD("Update", F_STEP) : NEWER, err, sizeof err);
            bad += rc != (i % 3 == 2 ? DP_ESCHEMA : DP_OK);
        }
        msg_newer(&m[i], id);
        int rc = dp_codec_decode_update_into(c, m[i].b, m[i].n, &u[i], &st[i], err, sizeof err);
        bad += rc != (i % 3 == 2 ? DP_ESCHEMA : DP_OK);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* strings borrow from each update's own store: all intact together */
    for (int i = 0; i < N; i++)
        if (i % 3 != 2)
            bad += u[i].stream_id_len != 3 || memcmp(u[i].stream_id, "s/1", 3) != 0 || u[i].entity_id_len != 2 ||
                   memcmp(u[i].entity_id, "e1", 2) != 0 || u[i].payload.category != 1;
    CU_ASSERT_EQUAL(bad, 0);
    for (int i = 0; i < N; i++)
        dp_update_store_free(&st[i]);
    dp_codec_destroy(c);
}

static const dptest_case CASES[] = {
    {"newer, older and reordered writer schemas read as the own schema", test_compatible_writers},
    {"unreadable writer schemas are DP_ESCHEMA naming the id", test_incompatible_writers},
    {"malformed bodies and the Update rules under a writer schema", test_malformed_under_a_writer},
    {"600 ids past the cache bound; resolved updates held at once", test_many_held_and_cache_restart},
    {NULL, NULL},
};

int main(void) { return dptest_run("codec_update_resolve", CASES); }
