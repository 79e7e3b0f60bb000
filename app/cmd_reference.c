/* torrewave reference JOB [--set k=v]... [-o REF.h5] [-q]
 * Analytic free-space traces of a homogeneous job (sources/reference.c), written in the layout
 * of a run so that `torrewave compare RUN.h5 REF.h5` takes them directly. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "tw_io.h"
#include "tw_sources.h"

/* Default output: the job's output name with "-reference" before the extension, so that a
 * plain `torrewave reference job.cfg` never overwrites the run's own file. */
static char *default_output(const char *run_output) {
  const char *dot = strrchr(run_output, '.'), *slash = strrchr(run_output, '/');
  if (!dot || (slash && dot < slash)) dot = run_output + strlen(run_output);
  size_t stem = (size_t)(dot - run_output);
  char *out = malloc(strlen(run_output) + 16);
  if (out) sprintf(out, "%.*s-reference%s", (int)stem, run_output, dot);
  return out;
}

static int run_reference(int argc, char **argv) {
  tw_job_args a;
  tw_job *job = NULL;
  int rc = tw_app_load_job("reference", argc, argv, &a, &job);
  if (rc) return rc;
  tw_error err = {0};
  if (job->nshots) {
    rc = tw_app_fail(&(tw_error){TW_EUNSUPPORTED, "reference: a survey job (shots = { ... }) has no single source "
                                                  "position; write a single-shot job for the shot you want"});
    tw_job_destroy(job);
    tw_app_job_args_free(&a);
    return rc;
  }
  char *def = a.output ? NULL : default_output(job->output);
  const char *out = a.output ? a.output : def;
  const double t0 = tw_wall_seconds();
  if (!out) {
    rc = tw_app_fail(&(tw_error){TW_ENOMEM, "out of memory"});
  } else if (job->nrec == 0) {
    tw_error_set(&err, TW_ECONFIG, "%s: receivers: the job has no receivers, so there is no reference to compute; "
                 "add receivers.points, .lines or .grids", a.job);
    rc = tw_app_fail(&err);
  } else if (tw_reference_write(job, out, &err)) {
    rc = tw_app_fail(&err);
  } else {
    if (!a.quiet)
      fprintf(stderr, "torrewave: %s: analytic reference, %ld receivers x %ld samples (dt %.6g s) in %.2f s -> %s\n",
              a.job, job->nrec, job->steps / (job->rec_interval > 0 ? job->rec_interval : 1) + 1, job->dt,
              tw_wall_seconds() - t0, out);
    rc = TW_EXIT_OK;
  }
  free(def);
  tw_job_destroy(job);
  tw_app_job_args_free(&a);
  return rc;
}

static void help_reference(FILE *o) {
  fprintf(o,
          "usage: torrewave reference JOB.cfg [--set key=value]... [-o REF.h5] [-q]\n\n"
          "Analytic traces of a homogeneous job at its receivers: the free-space solution\n"
          "p(r, t) = sum over sources of s(t - r/c) / (4 pi r), with the job's own wavelets, sampled like\n"
          "a run (sample j at t = j * receivers.interval * dt), written in the same HDF5 layout (kernel\n"
          "\"reference\", no snapshots), so that `torrewave compare RUN.h5 REF.h5` takes it directly.\n"
          "Nearest-cell sources and receivers sit at their cells, trilinear ones at their true positions.\n\n"
          "Refused, with the reason: a model other than model.type = \"constant\", a free surface, a\n"
          "receiver closer than d/2 to a source. Absorbing layers are allowed (the reference is free\n"
          "space: what the layers fail to absorb shows up in the comparison).\n\n"
          "  --set key=value  override a job-file value, as for `torrewave run`\n"
          "  -o, --output F   output file (default: output.file with \"-reference\" before the extension)\n"
          "  -q, --quiet      no summary line\n\n"
          "Exit status: 0 written, 1 error (job refused, bad input), 2 usage.\n");
}

const tw_command tw_cmd_reference = {"reference", "analytic free-space traces of a homogeneous job (for compare)",
                                     run_reference, help_reference, 1};
