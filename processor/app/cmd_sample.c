/* PLACEHOLDER-REPLACE: being implemented. */
#include "app/cli.h"
int cmd_sample(int argc, char **argv) { return cli_fail("sample", "not built yet"); }
