/* PLACEHOLDER-REPLACE: being implemented. */
#include "app/cli.h"
int cmd_demo(int argc, char **argv) { return cli_fail("demo", "not built yet"); }
