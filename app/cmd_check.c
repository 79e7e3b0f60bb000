/* torrewave check JOB [--set k=v]... [-o FILE]
 * Validate a job without running it: the padded grid, dt and Courant number, points per
 * wavelength, memory needs against what the machine has, and that the output is writable. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "tw_io.h"
#include "tw_solver.h"

/* The output's folder must accept a new file: create and remove a probe there. */
static int check_writable(const char *path, tw_error *err) {
  char probe[4096];
  snprintf(probe, sizeof probe, "%s.check-%ld", path, (long)getpid());
  FILE *f = fopen(probe, "w");
  if (!f) return tw_error_set(err, TW_EIO, "output '%s' is not writable: %s", path, strerror(errno));
  fclose(f);
  remove(probe);
  return TW_OK;
}

static int report(const tw_job *job, const tw_velocity *v, const char *kernel, const char *out) {
  tw_estimate est;
  tw_error err = {0};
  if (tw_estimate_job(job, kernel, &est, &err)) return tw_app_fail(&err);
  const tw_grid *g = &est.grid;
  char hb[32], db[32], ab[32];
  printf("job          %s\n", job->path);
  printf("model        %d x %d x %d cells, d = %g x %g x %g m, vp %.1f .. %.1f m/s\n", g->n[0], g->n[1], g->n[2],
         g->d[0], g->d[1], g->d[2], v->vmin, v->vmax);
  printf("padded grid  %d x %d x %d = %.3g cells (absorbing %d/%d/%d%s)\n", g->N[0], g->N[1], g->N[2],
         (double)tw_grid_cells(g), job->absorb[0], job->absorb[1], job->absorb[2],
         job->free_surface ? ", free surface on top" : "");
  const double courant = tw_courant(job->order, job->d, v->vmax, job->dt);
  printf("time         %ld steps of dt = %.6g s (%.4g s), order %d, Courant %.3f (<= 1 stable)\n", job->steps,
         job->dt, job->steps * job->dt, job->order, courant);
  const double ppw = tw_points_per_wavelength(job, v->vmin), thr = tw_ppw_warn_threshold(job->order);
  if (ppw < 1e30) {
    printf("dispersion   %.1f points per wavelength at 2.5 x the peak frequency\n", ppw);
    if (ppw < thr)
      printf("warning: %.1f points per wavelength is low for order %d (want >= %.0f): expect numerical "
             "dispersion; refine d or lower the frequency\n", ppw, job->order, thr);
  }
  printf("sources      %d; receivers %ld every %d steps (%ld samples); snapshots %d\n", job->nsources, job->nrec,
         job->rec_interval, job->steps / job->rec_interval + 1, job->nsnap);
  printf("kernel       %s\n", kernel);
  const double host_avail = (double)tw_host_memory_available();
  printf("memory       host %s (available %s)", tw_format_bytes(est.host_bytes, hb, sizeof hb),
         host_avail > 0 ? tw_format_bytes(host_avail, ab, sizeof ab) : "unknown");
  if (est.device_bytes > 0) printf(", device %s", tw_format_bytes(est.device_bytes, db, sizeof db));
  if (est.window_planes) printf(", window of %d x-planes", est.window_planes);
  printf("\n");
  if (tw_estimate_fits(job, kernel, &est, &err)) return tw_app_fail(&err);
  if (check_writable(out, &err)) return tw_app_fail(&err);
  printf("output       %s (writable)\nok\n", out);
  return TW_EXIT_OK;
}

static int run_check(int argc, char **argv) {
  tw_job_args a;
  tw_job *job = NULL;
  int rc = tw_app_load_job("check", argc, argv, &a, &job);
  if (rc) return rc;
  tw_error err = {0};
  tw_velocity *v = NULL;
  char kernel[32];
  tw_status st = tw_kernel_resolve(job->kernel, kernel, sizeof kernel, &err);
  if (st) tw_error_prefix(&err, "%s", a.job);
  tw_estimate est;
  if (!st) st = tw_estimate_job(job, kernel, &est, &err);
  if (!st) st = tw_estimate_fits(job, kernel, &est, &err); /* before the model is read */
  if (!st) st = tw_velocity_load(job, &v, &err);
  if (!st) st = tw_job_finalize(job, v->vmin, v->vmax, &err);
  rc = st ? tw_app_fail(&err) : report(job, v, kernel, a.output ? a.output : job->output);
  tw_velocity_destroy(v);
  tw_job_destroy(job);
  tw_app_job_args_free(&a);
  return rc;
}

static void help_check(FILE *o) {
  fprintf(o, "usage: torrewave check JOB.cfg [--set key=value]... [-o OUT.h5]\n\n"
             "Validate a job without running it. Prints the padded grid, dt and the Courant number, points per\n"
             "wavelength (with a warning when low for the order), host and device memory estimates against what\n"
             "is available, and checks that the output path is writable. Exit status 0 when the job can run,\n"
             "1 on any error (the message names the job file, line, key, value and what is allowed).\n");
}

const tw_command tw_cmd_check = {"check", "validate a job: grid, dt, Courant number, memory, output", run_check,
                                 help_check};
