/* placeholder: `torrewave bench` is being written */
#include "app.h"

static int run_bench(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "torrewave bench: not available yet\n");
  return TW_EXIT_FAIL;
}
static void help_bench(FILE *out) { fprintf(out, "usage: torrewave bench (not available yet)\n"); }
const tw_command tw_cmd_bench = {"bench", "(not available yet)", run_bench, help_bench};
