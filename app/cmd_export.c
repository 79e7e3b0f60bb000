/* torrewave export RESULT.h5 [--segy OUT.sgy]
 * Convert the receiver traces of an existing result file to SEG-Y (what output.segy = true writes
 * at the end of a run), through segyio; the file appears only when complete. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "tw_io.h"

static void help_export(FILE *o) {
  fprintf(o,
          "usage: torrewave export RESULT.h5 [--segy OUT.sgy]\n\n"
          "Write the receiver traces of a torrewave result file as SEG-Y rev 1 (IEEE float samples; headers:\n"
          "shot, source and receiver x, y and depth to the centimetre, offset, samples, interval; README.md\n"
          "\"SEG-Y\" lists them). The default OUT.sgy is RESULT.sgy beside RESULT.h5. The file is written under a\n"
          "temporary name and renamed when complete; it may replace only a SEG-Y file torrewave wrote (an earlier\n"
          "export or output.segy), never another file (export does not know the job: a job file or a velocity\n"
          "model under that name stays), the result file itself, a symbolic link, a folder or a device. SEG-Y\n"
          "stores the sample interval in whole microseconds and at most 32767 samples per trace: other results\n"
          "are refused with what to change in the job.\n"
          "Needs a build with segyio (`torrewave info` says). Exit status: 0 done, 1 error, 2 usage.\n");
}

static int run_export(int argc, char **argv) {
  static const tw_app_opt opts[] = {{NULL, "--segy", "OUT.sgy", 0}};
  tw_app_args it = {"export", argc, argv, opts, 1, 1, 0, {0}};
  const char *in = NULL, *segy = NULL, *v;
  for (int k; (k = tw_app_next(&it, &v)) != TW_APP_END;) {
    if (k == TW_APP_BAD) return TW_EXIT_USAGE;
    if (k == 0) segy = v;
    else if (in) return tw_app_usage("export", "more than one result file (\"%s\" and \"%s\")", in, v);
    else in = v;
  }
  if (!in) return tw_app_usage("export", "no result file given");
  char *def = segy ? NULL : tw_segy_path(in);
  const char *out = segy ? segy : def;
  tw_error err = {0};
  int rc;
  if (!out) {
    rc = tw_app_usage("export", "out of memory");
  } else if ((tw_segy_available() && /* (without segyio, export says that first) */
              tw_output_check_file(out, "SEG-Y output", "--segy FILE", in, "the result file being exported",
                                   tw_segy_ours, "a SEG-Y file torrewave wrote (export replaces only those)", &err)) ||
             tw_segy_export(in, out, &err)) {
    rc = tw_app_fail(&err);
  } else {
    fprintf(stderr, "torrewave: %s -> %s\n", in, out);
    rc = TW_EXIT_OK;
  }
  free(def);
  return rc;
}

const tw_command tw_cmd_export = {"export", "convert a result's traces to SEG-Y (segyio)", run_export, help_export, 1};
