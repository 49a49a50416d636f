/* cmd_keygen.c — `dpstream keygen --out F`: a fresh 32-byte noise key,
 * created with mode 0600 and never overwriting an existing file. */
#include "app/cli.h"
#include "core/dp_error.h"

#include <stdio.h>
#include <string.h>

static void keygen_usage(FILE *f)
{
    fprintf(f, "usage: dpstream keygen --out FILE\n"
               "  Writes 32 random bytes (from the OS CSPRNG) to FILE with mode 0600.\n"
               "  Refuses to overwrite an existing file.\n");
}

int cmd_keygen(int argc, char **argv)
{
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            keygen_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else {
            keygen_usage(stderr);
            return cli_fail("keygen", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!out) {
        keygen_usage(stderr);
        return cli_fail("keygen", "--out FILE is required");
    }
    dp_key key;
    char err[256];
    dp_key_generate(&key);
    int rc = dp_key_write_new_file(&key, out, err, sizeof err);
    dp_key_wipe(&key);
    if (rc != DP_OK) {
        cli_fail("keygen", "%s", err);
        return CLI_EXIT_IO;
    }
    fprintf(stderr, "dpstream keygen: wrote a new 32-byte key to %s (mode 0600)\n", out);
    return 0;
}
