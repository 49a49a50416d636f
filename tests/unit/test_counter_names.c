/* test_counter_names.c — the counter kinds' names: the names the README and
 * configurations use, a round trip for every kind, and the kind named in the
 * calibration errors that the kind files raise through the common helpers
 * (counter_noise.c, counter_factor.c).  (Written by a helper on the layout
 * branch; ported.) */
#include <stdio.h>
#include <string.h>

#include "core/counter.h"
#include "core/dp_error.h"
#include "dptest.h"

/* In enum order: the names configurations ("counter": "honaker") use. */
static const char *const NAMES[DP_COUNTER_KIND_COUNT] = {
    "simple", "block", "block_unbounded", "tree", "hybrid",
    "honaker", "sqrt", "blt", "sparse", "sparse_inhomogeneous",
};

static void test_names_round_trip(void)
{
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        CU_ASSERT_STRING_EQUAL(dp_counter_kind_name((dp_counter_kind)k), NAMES[k]);
        dp_counter_kind back = DP_COUNTER_KIND_COUNT;
        CU_ASSERT_EQUAL(dp_counter_kind_parse(NAMES[k], &back), DP_OK);
        CU_ASSERT_EQUAL(back, (dp_counter_kind)k);
    }
    dp_counter_kind unused;
    CU_ASSERT_EQUAL(dp_counter_kind_parse("binary", &unused), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_counter_kind_parse("", &unused), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_counter_kind_parse(NULL, &unused), DP_EINVAL);
    CU_ASSERT_STRING_EQUAL(dp_counter_kind_name(DP_COUNTER_KIND_COUNT), "unknown");
    CU_ASSERT_STRING_EQUAL(dp_counter_kind_name((dp_counter_kind)-1), "unknown");
}

/* A budget so small that the noise scale overflows the rational the
 * samplers take: every kind refuses it while calibrating, inside its own
 * file, and the message names the kind it came from. */
static void test_calibration_errors_name_the_kind(void)
{
    dp_key key;
    dptest_key(&key, 7);
    dp_noise_source ns = {&key, "names", 5, "c"};
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        for (int pure = 0; pure <= 1; pure++) {
            dp_counter_config cfg;
            memset(&cfg, 0, sizeof cfg);
            cfg.kind = (dp_counter_kind)k;
            cfg.horizon = 16;
            cfg.budget.model = pure ? DP_PRIVACY_PURE : DP_PRIVACY_ZCDP;
            cfg.budget.value = 1e-300;
            dp_counter *c = NULL;
            char err[256] = "";
            int rc = dp_counter_create(&c, &cfg, &ns, err, sizeof err);
            CU_ASSERT_NOT_EQUAL(rc, DP_OK);
            dp_counter_destroy(c);
            if (strstr(err, "cannot be calibrated"))
                continue;   /* the kind does not offer this model at all */
            if (k == DP_COUNTER_SPARSE)
                continue;   /* refuses its threshold first ("sparse counting: threshold …") */
            char want[64];
            snprintf(want, sizeof want, "counter %s: ", NAMES[k]);
            if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, "out of range")) {
                fprintf(stderr, "\n  %s/%s: %s\n", NAMES[k], pure ? "eps" : "rho", err);
                CU_FAIL("calibration error does not name the kind");
            }
        }
    }
}

int main(void)
{
    static const dptest_case cases[] = {
        {"every kind's name, and back", test_names_round_trip},
        {"calibration errors name the kind", test_calibration_errors_name_the_kind},
        {NULL, NULL},
    };
    return dptest_run("counter names", cases);
}
