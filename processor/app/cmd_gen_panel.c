/* cmd_gen_panel.c — `dpstream gen-panel`: write a deterministic Markov
 * panel (panel_gen.h) as update JSON lines (update_json.h), step by step:
 * all REPORTs of step 1 (individuals u1..uN in order), then optionally a
 * CLOSE_STEP marker, then step 2, … */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "connectors/panel/panel_gen.h"
#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"

static void gen_panel_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream gen-panel --n N --steps T --categories C --stay P[,P2,...]\n"
            "                          --seed-hex H [--initial Q1,...,QC] [--stream S]\n"
            "                          [--close-steps] [--out FILE]\n"
            "\n"
            "Writes N individuals x T steps of a Markov panel as update JSON lines\n"
            "(one REPORT per individual and step, entity ids u1..uN) to FILE or stdout.\n"
            "  --stay P          probability of keeping one's category from one step to the\n"
            "                    next (one value for all categories, or C comma-separated);\n"
            "                    otherwise move to one of the other categories uniformly\n"
            "  --initial Q...    law of the step-1 category (default: the chain's stationary\n"
            "                    law, pi_j proportional to 1/(1-stay_j); uniform if a stay is 1)\n"
            "  --seed-hex H      64 hex digits; the same seed and parameters give the same panel\n"
            "  --stream S        stream id written in every line (default panel)\n"
            "  --close-steps     append a CLOSE_STEP marker after each step's reports\n");
}

/* Parse "a" or "a,b,c" into out[0..want); a single value is repeated. */
static int parse_prob_list(const char *s, double *out, uint32_t want, int allow_single)
{
    uint32_t n = 0;
    const char *p = s;
    char tmp[64];
    while (1) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof tmp || n >= want)
            return -1;
        memcpy(tmp, p, len);
        tmp[len] = '\0';
        if (cli_parse_double(tmp, &out[n]) != 0)
            return -1;
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (n == 1 && allow_single) {
        for (uint32_t j = 1; j < want; j++)
            out[j] = out[0];
        return 0;
    }
    return n == want ? 0 : -1;
}

int cmd_gen_panel(int argc, char **argv)
{
    const char *cmd = "gen-panel";
    const char *n_s = NULL, *steps_s = NULL, *cat_s = NULL, *stay_s = NULL, *seed_s = NULL;
    const char *init_s = NULL, *stream = "panel", *out_path = NULL;
    int close_steps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            gen_panel_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--close-steps") == 0) {
            close_steps = 1;
            continue;
        }
        if (strcmp(a, "--n") == 0) slot = &n_s;
        else if (strcmp(a, "--steps") == 0) slot = &steps_s;
        else if (strcmp(a, "--categories") == 0) slot = &cat_s;
        else if (strcmp(a, "--stay") == 0) slot = &stay_s;
        else if (strcmp(a, "--seed-hex") == 0) slot = &seed_s;
        else if (strcmp(a, "--initial") == 0) slot = &init_s;
        else if (strcmp(a, "--stream") == 0) slot = &stream;
        else if (strcmp(a, "--out") == 0) slot = &out_path;
        else {
            gen_panel_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
        if (i + 1 >= argc)
            return cli_fail(cmd, "option %s needs a value", a);
        *slot = argv[++i];
    }
    if (!n_s || !steps_s || !cat_s || !stay_s || !seed_s) {
        gen_panel_usage(stderr);
        return cli_fail(cmd, "--n, --steps, --categories, --stay and --seed-hex are required");
    }
    dp_panel_params p;
    memset(&p, 0, sizeof p);
    uint64_t cats;
    if (cli_parse_u64(n_s, &p.n) != 0 || p.n == 0)
        return cli_fail(cmd, "--n must be a positive integer");
    if (cli_parse_u64(steps_s, &p.steps) != 0 || p.steps == 0)
        return cli_fail(cmd, "--steps must be a positive integer");
    if (cli_parse_u64(cat_s, &cats) != 0 || cats < 2 || cats > DP_PANEL_MAX_CATEGORIES)
        return cli_fail(cmd, "--categories must be in 2..%d", DP_PANEL_MAX_CATEGORIES);
    p.categories = (uint32_t)cats;
    if (parse_prob_list(stay_s, p.stay, p.categories, 1) != 0)
        return cli_fail(cmd, "--stay must be one probability or %u comma-separated ones", p.categories);
    if (init_s) {
        if (parse_prob_list(init_s, p.initial, p.categories, 0) != 0)
            return cli_fail(cmd, "--initial must be %u comma-separated probabilities", p.categories);
        p.has_initial = 1;
    }
    if (stream[0] == '\0')
        return cli_fail(cmd, "--stream must not be empty");
    char err[256];
    if (dp_key_from_hex(&p.seed, seed_s, err, sizeof err) != DP_OK)
        return cli_fail(cmd, "--seed-hex: %s", err);
    dp_panel_gen g;
    int rc = dp_panel_gen_init(&g, &p, err, sizeof err);
    dp_key_wipe(&p.seed);
    if (rc != DP_OK)
        return cli_fail(cmd, "%s", err);

    FILE *out = stdout;
    if (out_path && !(out = fopen(out_path, "wb"))) {
        dp_panel_gen_free(&g);
        return cli_fail(cmd, "cannot create %s", out_path);
    }
    int status = 0;
    dp_jbuf b;
    dp_jbuf_init(&b);
    char entity[32];
    dp_update u;
    memset(&u, 0, sizeof u);
    u.stream_id = stream;
    u.stream_id_len = strlen(stream);
    while (dp_panel_gen_next(&g) == DP_OK && status == 0) {
        u.step = g.step;
        u.kind = DP_UPDATE_REPORT;
        u.payload.kind = DP_PAYLOAD_CATEGORY;
        u.entity_id = entity;
        for (uint64_t i = 0; i < p.n && status == 0; i++) {
            u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "u%llu", (unsigned long long)(i + 1));
            u.payload.category = g.value[i];
            if (dp_update_json_format(&b, &u) != 0)
                status = cli_fail(cmd, "cannot format update (stream id not UTF-8, or out of memory)");
            if (b.len >= (1u << 16)) {
                if (fwrite(b.data, 1, b.len, out) != b.len)
                    status = cli_fail(cmd, "write failed");
                dp_jbuf_reset(&b);
            }
        }
        if (close_steps && status == 0) {
            dp_update m = {.stream_id = stream, .stream_id_len = strlen(stream),
                           .step = g.step, .kind = DP_UPDATE_CLOSE_STEP};
            if (dp_update_json_format(&b, &m) != 0)
                status = cli_fail(cmd, "cannot format update");
        }
    }
    if (status == 0 && b.len && fwrite(b.data, 1, b.len, out) != b.len)
        status = cli_fail(cmd, "write failed");
    if (out != stdout ? fclose(out) != 0 : fflush(out) != 0)
        status = status ? status : cli_fail(cmd, "write failed");
    dp_jbuf_free(&b);
    dp_panel_gen_free(&g);
    return status ? 1 : 0;
}
