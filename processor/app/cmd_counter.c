/* PLACEHOLDER-REPLACE: being implemented. */
#include "app/cli.h"
int cmd_counter(int argc, char **argv) { return cli_fail("counter", "not built yet"); }
