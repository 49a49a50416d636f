/* test_key_fingerprint.c — the noise key's fingerprint (issue 12.4): a
 * keyed hash that is stable, differs between keys and shows nothing of the
 * key; every budget event carries it; a stream's state restores only under
 * the key it was built with, and the refusal names the stream. */
#include "dptest.h"
#include "synth_testkit.h"

#include <ctype.h>
#include <sodium.h>

static json_t *window_cfg(void)
{
    json_error_t e;
    return json_loads("{\"horizon\": 4, \"k\": 1, \"categories\": 2, \"rho\": 1}", 0, &e);
}

static void test_fingerprint(void)
{
    dp_key a, b;
    dptest_key(&a, 1);
    dptest_key(&b, 2);
    char fa[DP_KEY_FINGERPRINT_HEX], fa2[DP_KEY_FINGERPRINT_HEX], fb[DP_KEY_FINGERPRINT_HEX];
    dp_key_fingerprint(&a, fa);
    dp_key_fingerprint(&a, fa2);
    dp_key_fingerprint(&b, fb);
    CU_ASSERT_EQUAL(strlen(fa), 32);
    for (size_t i = 0; i < 32; i++)
        CU_ASSERT(isxdigit((unsigned char)fa[i]) && !isupper((unsigned char)fa[i]));
    CU_ASSERT_STRING_EQUAL(fa, fa2);
    CU_ASSERT_STRING_NOT_EQUAL(fa, fb);
    /* not the key, nor its hex, nor an unkeyed hash of it */
    char hex[2 * DP_KEY_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, a.bytes, sizeof a.bytes);
    CU_ASSERT(strstr(hex, fa) == NULL);
    uint8_t h[16];
    crypto_generichash(h, sizeof h, a.bytes, sizeof a.bytes, NULL, 0);
    char hh[33];
    sodium_bin2hex(hh, sizeof hh, h, sizeof h);
    CU_ASSERT_STRING_NOT_EQUAL(fa, hh);
}

static void test_budget_event_and_restore(void)
{
    dp_key a, b;
    dptest_key(&a, 1);
    dptest_key(&b, 2);
    char fa[DP_KEY_FINGERPRINT_HEX];
    dp_key_fingerprint(&a, fa);
    json_t *cfg = window_cfg();
    dp_synth_env env = {&a, "panel-7", 7};
    dp_synth *s = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "window", cfg, &env, err, sizeof err), DP_OK);
    dp_reject_reason why;
    tk_report(s, 1, "u1", 1, &why);
    tk_report(s, 1, "u2", 0, &why);
    /* capture the fingerprint the budget event carries */
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
    dp_buf snap;
    dp_buf_init(&snap);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &snap), DP_OK);
    tk_sink_free(&k);

    /* the same key restores */
    dp_synth *s2 = NULL;
    CU_ASSERT_EQUAL_FATAL(dp_synth_restore(&s2, "window", cfg, &env, snap.data, snap.len, err, sizeof err), DP_OK);
    dp_synth_destroy(s2);

    /* another key: refused, and the message names the stream and both fingerprints */
    dp_synth_env env_b = {&b, "panel-7", 7};
    err[0] = '\0';
    CU_ASSERT_EQUAL(dp_synth_restore(&s2, "window", cfg, &env_b, snap.data, snap.len, err, sizeof err), DP_EKEY);
    CU_ASSERT_PTR_NULL(s2);
    CU_ASSERT(strstr(err, "'panel-7'") != NULL);
    CU_ASSERT(strstr(err, fa) != NULL);
    CU_ASSERT(strstr(err, "another noise key") != NULL);
    dp_buf_free(&snap);
    dp_synth_destroy(s);
    json_decref(cfg);
}

static char g_seen_fp[64];

static int grab_budget(void *ctx, const dp_budget_event *e)
{
    (void)ctx;
    snprintf(g_seen_fp, sizeof g_seen_fp, "%s", e->key_fingerprint ? e->key_fingerprint : "");
    return 0;
}

static void test_every_budget_event_names_the_key(void)
{
    dp_key a;
    dptest_key(&a, 5);
    char fa[DP_KEY_FINGERPRINT_HEX];
    dp_key_fingerprint(&a, fa);
    json_t *cfg = window_cfg();
    dp_synth_env env = {&a, "s", 1};
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "window", cfg, &env, err, sizeof err), DP_OK);
    dp_reject_reason why;
    tk_report(s, 1, "u1", 1, &why);
    dp_release_sink sink = {.ctx = NULL, .record = NULL, .manifest = NULL, .budget = grab_budget};
    for (int t = 1; t <= 4; t++) {
        g_seen_fp[0] = '\0';
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
        CU_ASSERT_STRING_EQUAL(g_seen_fp, fa);
    }
    dp_synth_destroy(s);
    json_decref(cfg);
}

/* The bundle's open step and its halves' must agree on restore (issue
 * 13.A2: a mismatch used to leave the stream silently stuck). */
static void test_halves_agree_on_open_step(void)
{
    dp_key a;
    dptest_key(&a, 1);
    json_t *cfg = window_cfg();
    dp_synth_env env = {&a, "s", 1};
    dp_synth *s = NULL, *back = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "window", cfg, &env, err, sizeof err), DP_OK);
    dp_reject_reason why;
    tk_report(s, 1, "u1", 1, &why);
    dp_release_sink none = {0};
    CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &none, err, sizeof err), DP_OK);
    dp_buf snap;
    dp_buf_init(&snap);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &snap), DP_OK);
    /* magic u32 | blob "window" | blob fingerprint (32) | blob config | open step u64 */
    dp_synth_snapshot_head h;
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_header(snap.data, snap.len, &h), DP_OK);
    size_t at = 4 + 8 + strlen("window") + 8 + 32 + 8 + h.config_len;
    CU_ASSERT_EQUAL_FATAL(h.state_offset, at + 8);
    CU_ASSERT_EQUAL_FATAL(snap.data[at], 2);   /* step 1 closed: 2 is open */
    snap.data[at] = 3;
    CU_ASSERT_EQUAL(dp_synth_restore(&back, "window", cfg, &env, snap.data, snap.len, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NULL(back);
    CU_ASSERT(strstr(err, "disagree on the open step") != NULL);
    snap.data[at] = 2;
    CU_ASSERT_EQUAL(dp_synth_restore(&back, "window", cfg, &env, snap.data, snap.len, err, sizeof err), DP_OK);
    dp_synth_destroy(back);
    dp_buf_free(&snap);
    dp_synth_destroy(s);
    json_decref(cfg);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"fingerprint: stable, key-dependent, reveals nothing obvious", test_fingerprint},
        {"restore under another key is refused, naming the stream", test_budget_event_and_restore},
        {"every budget event carries the key's fingerprint", test_every_budget_event_names_the_key},
        {"a restore whose halves disagree on the open step is refused", test_halves_agree_on_open_step},
        {NULL, NULL},
    };
    return dptest_run("key_fingerprint", cases);
}
