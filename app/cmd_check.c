/* torrewave check JOB [--set k=v]... [-o FILE]
 * Validate a job without running it: the padded grid, dt and Courant number, points per
 * wavelength, memory needs against what the machine has, that the output is writable, and with a
 * checkpoint group what a checkpoint costs (its size; its write time at this disk's measured speed). */
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

/* The checkpoint line(s): size, how it is written, the write time at the measured disk speed, and a
 * checkpoint already there (which `run` refuses to overwrite, `run --resume` continues). */
static int report_checkpoint(const tw_job *job, const tw_estimate *est, const char *out, tw_error *err) {
  char *path = tw_checkpoint_path(job, out);
  if (!path) return tw_error_set(err, TW_ENOMEM, "out of memory");
  tw_ckpt_plan plan;
  tw_checkpoint_plan(&est->grid, est->host_bytes, 0.0, &plan);
  double rate = 0.0;
  tw_status st = tw_disk_write_rate(path, 64u << 20, &rate, err);
  if (st) {
    free(path);
    return st;
  }
  char b1[32], b2[32], b3[32], when[160] = "";
  size_t l = 0;
  if (job->ckpt_every) l += (size_t)snprintf(when + l, sizeof when - l, "every %ld steps, ", job->ckpt_every);
  if (job->ckpt_every_seconds > 0)
    l += (size_t)snprintf(when + l, sizeof when - l, "every %g s, ", job->ckpt_every_seconds);
  snprintf(when + l, sizeof when - l, "on SIGTERM or SIGUSR1");
  const double cells = (double)tw_grid_cells(&est->grid);
  printf("checkpoint   %s: %s each (two time levels of %.3g cells), %s\n", path,
         tw_format_bytes(plan.bytes, b1, sizeof b1), cells, when);
  printf("             this disk wrote %s/s (64 MiB probe, fsync'ed): about %.3g s per checkpoint, %s\n",
         tw_format_bytes(rate, b2, sizeof b2), rate > 0 ? plan.bytes / rate : 0.0,
         plan.background ? "written in the background while the steps go on"
                         : "written synchronously (the steps wait)");
  if (plan.background)
    printf("             background copy: %s of host memory (the steps stop only while it is filled)\n",
           tw_format_bytes(plan.copy_bytes, b3, sizeof b3));
  else
    printf("             no room for a background copy of %s beside the job's %s in the available memory\n",
           tw_format_bytes(8.0 * cells, b3, sizeof b3), tw_format_bytes(est->host_bytes, b2, sizeof b2));
  tw_ckpt_info f;
  tw_error e = {0};
  if (tw_checkpoint_exists(path)) {
    if (tw_ckpt_read_info(path, &f, &e))
      printf("             a file of that name exists and is not a usable checkpoint: %s\n", e.msg);
    else
      printf("             a checkpoint exists: step %ld of %ld, written by %s for '%s': `run --resume` continues "
             "it (`run` alone refuses to start)\n", f.step, f.id.steps, f.kernel, f.job_path);
  }
  free(path);
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
  printf("output       %s (writable)\n", out);
  if (job->ckpt && report_checkpoint(job, &est, out, &err)) return tw_app_fail(&err);
  printf("ok\n");
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
             "is available, and checks that the output path is writable. With a checkpoint group: the size of a\n"
             "checkpoint, its write time at this disk's speed (measured with a 64 MiB probe beside it), whether\n"
             "it is written in the background, and a checkpoint already there. Exit status 0 when the job can run,\n"
             "1 on any error (the message names the job file, line, key, value and what is allowed).\n");
}

const tw_command tw_cmd_check = {"check", "validate a job: grid, dt, Courant number, memory, output", run_check,
                                 help_check};
