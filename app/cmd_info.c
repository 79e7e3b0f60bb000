/* placeholder: `torrewave info` is being written */
#include "app.h"

static int run_info(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "torrewave info: not available yet\n");
  return TW_EXIT_FAIL;
}
static void help_info(FILE *out) { fprintf(out, "usage: torrewave info (not available yet)\n"); }
const tw_command tw_cmd_info = {"info", "(not available yet)", run_info, help_info};
