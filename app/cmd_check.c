/* torrewave check JOB [--set k=v]... [-o FILE] [--shots LIST] [-v]
 * Validate a job without running it, through the validation `run` performs (tw_job_validate), so
 * that whatever check accepts, run accepts; then print what it found: the padded grid, dt against
 * the stability limit, points per wavelength, memory, an estimate of the run time, the output's
 * size and whether it replaces a file, earlier runs' leftovers, every warning, and with a checkpoint
 * group what a checkpoint costs (its size; its write time at this disk's measured speed). A survey
 * (shots = { ... }): its shots, one shot file's size and all of them, and the survey's time per
 * shot, on one GPU and on the GPUs of this host. -v: where check's own time went. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "tw_io.h"
#include "tw_solver.h"
#include "tw_survey.h"

static void fmt_seconds(double s, char *buf, size_t n) {
  if (s < 60) snprintf(buf, n, "%.2g s", s);
  else if (s < 3600) snprintf(buf, n, "%.0f min", s / 60);
  else if (s < 48 * 3600) snprintf(buf, n, "%.1f h", s / 3600);
  else snprintf(buf, n, "%.1f days", s / 86400);
}

/* The checkpoint line(s): size, how it is written, the write time at the measured disk speed, and a
 * checkpoint already there (which `run` refuses to overwrite, `run --resume` continues). */
static int report_checkpoint(const tw_job *job, const tw_estimate *est, const char *out, tw_error *err) {
  char *path = tw_checkpoint_path(job, out);
  if (!path) return tw_error_set(err, TW_ENOMEM, "out of memory");
  tw_ckpt_plan plan;
  tw_grid kg; /* the file holds the kernels' planes (x the longer horizontal axis) */
  tw_grid_oriented(job, &kg);
  tw_checkpoint_plan(&kg, est->host_bytes, 0.0, &plan);
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
  snprintf(when + l, sizeof when - l, "on SIGTERM, SIGUSR1 or SIGHUP");
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
    if (tw_ckpt_read_info(path, &f, &e)) { /* neither run nor run --resume would take it: refused as run does */
      tw_error_set(err, TW_EINVAL, "checkpoint '%s' already exists and cannot be read (%s): run refuses to "
                   "overwrite it; if it is a damaged checkpoint of this job, remove it and '%s.journal' to start "
                   "over, else choose another checkpoint.file", path, e.msg, path);
      free(path);
      return TW_EINVAL;
    } else
      printf("             a checkpoint exists: step %ld of %ld, written by %s for '%s': `run --resume` continues "
             "it (`run` alone refuses to start)\n", f.step, f.id.steps, f.kernel, f.job_path);
  }
  free(path);
  return TW_OK;
}

/* A survey: its shots, files and time (from the validation's run-time estimate and output size), and
 * that the directory takes new files (the run makes it when missing: then its parent must). */
static int survey_report(const tw_job *job, const tw_validation *val, const tw_job_args *a) {
  tw_error err = {0};
  long sel = job->nshots;
  if (a->shots) {
    unsigned char *m = malloc((size_t)job->nshots);
    if (!m) return tw_app_fail(&(tw_error){TW_ENOMEM, "out of memory"});
    tw_status st = tw_survey_select(a->shots, job->nshots, m, &err);
    sel = 0;
    for (long i = 0; !st && i < job->nshots; i++) sel += m[i];
    free(m);
    if (st) return tw_app_fail(&err);
  }
  const char *dir = a->output ? a->output : job->output_dir;
  char b1[32], b2[32], t1[32], t2[32], t3[32];
  printf("survey       %ld shots (%ld selected), receivers %s; %s/shot-00000.h5 ... about %s each, %s in all\n",
         job->nshots, sel, job->rec_moving ? "moving with the shot" : "fixed", dir,
         tw_format_bytes(val->output_bytes, b1, sizeof b1), tw_format_bytes(val->output_bytes * (double)sel, b2, sizeof b2));
  if (val->run_seconds > 0) {
    /* The per-shot overhead is held under 5 % of the computing (docs/survey.md). */
    const double shot = val->run_seconds * 1.05;
    const int gpus = tw_kernel_is_gpu(val->kernel) ? tw_gpu_count() : 0;
    fmt_seconds(shot, t1, sizeof t1);
    fmt_seconds(shot * (double)sel, t2, sizeof t2);
    printf("survey time  about %s per shot, %s for the selected shots on %s\n", t1, t2,
           tw_kernel_is_gpu(val->kernel) ? "1 GPU" : "this host");
    if (gpus > 1) {
      fmt_seconds(shot * (double)((sel + gpus - 1) / gpus), t3, sizeof t3);
      printf("             %s on the %d GPUs of this host (a worker each; more hosts: mpirun)\n", t3, gpus);
    }
  }
  char probe[1200];
  struct stat sb;
  if (tw_survey_check_dir(dir, &err) || tw_survey_check_inputs(job, dir, &err) ||
      tw_survey_check_theirs(job, dir, a->shots, &err)) {
    if (!a->output) tw_error_prefix(&err, "%s", tw_job_where(job, job->output_dir_where));
    return tw_app_fail(&err);
  }
  const int exists = stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
  if (exists) snprintf(probe, sizeof probe, "%s/.check-%ld", dir, (long)getpid());
  else snprintf(probe, sizeof probe, "%s.check-%ld", dir, (long)getpid());
  FILE *f = fopen(probe, "w");
  if (!f) {
    tw_error_set(&err, TW_EIO, "output.directory '%s': %s does not take new files: %s", dir,
                 exists ? "it" : "its parent", strerror(errno));
    return tw_app_fail(&err);
  }
  fclose(f);
  remove(probe);
  printf("output       %s/ (%s, writable)\n", dir, exists ? "exists" : "made by the run");
  return TW_EXIT_OK;
}

static int report(const tw_job *job, const tw_validation *val, const char *out, const tw_job_args *a) {
  const tw_grid *g = &val->est.grid;
  int rc;
  char hb[32], db[32], ab[32], ob[32], tb[32], sb[32], fb[32], n0[32], n1[32];
  printf("job          %s\n", job->path);
  printf("model        %d x %d x %d cells, d = %g x %g x %g m, vp %s .. %s m/s\n", g->n[0], g->n[1], g->n[2],
         g->d[0], g->d[1], g->d[2], tw_format_decimal(val->vmin, 1, n0, sizeof n0),
         tw_format_decimal(val->vmax, 1, n1, sizeof n1));
  printf("padded grid  %d x %d x %d = %.3g cells (absorbing %d/%d/%d%s)\n", g->N[0], g->N[1], g->N[2],
         (double)tw_grid_cells(g), job->absorb[0], job->absorb[1], job->absorb[2],
         job->free_surface ? ", free surface on top" : "");
  tw_grid kg;
  if (tw_grid_oriented(job, &kg))
    printf("sweep        along y, the longer horizontal axis: the kernels see x and y exchanged (results in the "
           "job's axes)\n");
  printf("time         %ld steps of dt = %.6g s (%.4g s), order %d\n", job->steps, job->dt, job->steps * job->dt,
         job->order);
  double dmin = g->d[0];
  for (int a = 1; a < 3; a++) dmin = g->d[a] < dmin ? g->d[a] : dmin;
  printf("stability    dt / stable limit = %.3f (<= 1 is stable; %s); c dt / d = %.3f (vmax, smallest d)\n",
         tw_courant(job->order, job->d, val->vmax, job->dt),
         job->dt_given ? "time.dt as given" : "time.dt_margin x the limit", val->vmax * job->dt / dmin);
  if (isfinite(val->ppw))
    printf("dispersion   %s points per wavelength at %s Hz (%s)\n", tw_format_decimal(val->ppw, 1, n0, sizeof n0),
           tw_format_decimal(val->fmax, 1, n1, sizeof n1),
           val->fmax_from_file ? "where a wavelet file's spectrum stays below 3.3% of its peak"
                               : "2.5 x the Ricker's peak frequency");
  printf("sources      %d; receivers %ld every %d steps (%ld samples); snapshots %d\n", job->nsources, job->nrec,
         job->rec_interval, job->steps / job->rec_interval + 1, job->nsnap);
  char auto_note[224];
  tw_kernel_auto_note(job, val->kernel, auto_note, sizeof auto_note);
  printf("kernel       %s%s%s%s\n", val->kernel, *auto_note ? " (" : "", auto_note, *auto_note ? ")" : "");
  const double host_avail = (double)tw_host_memory_available();
  printf("memory       host %s (available %s)", tw_format_bytes(val->est.host_bytes, hb, sizeof hb),
         host_avail > 0 ? tw_format_bytes(host_avail, ab, sizeof ab) : "unknown");
  if (val->est.device_bytes > 0) printf(", device %s", tw_format_bytes(val->est.device_bytes, db, sizeof db));
  if (val->est.window_planes) printf(", window of %d x-planes", val->est.window_planes);
  if (val->est.window_height) { /* each block brings every plane in (both levels, c²dt²) and both levels back */
    char in[32], out[32];
    const double cells = (double)tw_grid_cells(g);
    printf(", tower height %d: %s in and %s out a block", val->est.window_height,
           tw_format_bytes(12.0 * cells, in, sizeof in), tw_format_bytes(8.0 * cells, out, sizeof out));
  }
  printf("\n");
  if (val->run_seconds > 0) {
    char rt[32];
    fmt_seconds(val->run_seconds, rt, sizeof rt);
    printf("run time     about %s of computing (%s)\n", rt, val->run_basis);
  }
  if (job->nshots) {
    if ((rc = survey_report(job, val, a))) return rc;
  } else {
    printf("output       %s: about %s (traces %s, snapshots %s)", out,
           tw_format_bytes(val->output_bytes, ob, sizeof ob), tw_format_bytes(val->trace_bytes, tb, sizeof tb),
           tw_format_bytes(val->snapshot_bytes, sb, sizeof sb));
    if (val->free_bytes >= 0) printf("; %s free there", tw_format_bytes(val->free_bytes, fb, sizeof fb));
    printf("\n");
  }
  if (val->output_exists) printf("             %s exists: a run will replace it\n", out);
  for (int i = 0; i < val->nbeside; i++)
    if (val->beside[i].removed)
      printf("             %s exists: a run removes it (the %s of an earlier run; this run writes none)\n",
             val->beside[i].path, val->beside[i].what);
    else
      printf("             %s exists: a run will replace it (its %s)\n", val->beside[i].path, val->beside[i].what);
  for (int i = 0; i < val->nstale; i++)
    printf("stale        %s: left by an earlier run that was killed (its process is gone); the next run of this "
           "output removes it\n", val->stale[i]);
  tw_error err = {0};
  if (job->ckpt && report_checkpoint(job, &val->est, out, &err)) return tw_app_fail(&err);
  for (int i = 0; i < val->nwarn; i++) printf("warning: %s\n", val->warn[i]);
  printf("ok\n");
  return TW_EXIT_OK;
}

static int run_check(int argc, char **argv) {
  tw_job_args a;
  tw_job *job = NULL;
  int rc = tw_app_load_job("check", argc, argv, &a, &job);
  if (rc) return rc;
  tw_error err = {0};
  tw_validation val;
  const double t0 = tw_wall_seconds();
  /* A survey's files are checked per shot when they are written (its directory below). */
  const char *out = job->nshots ? NULL : a.output ? a.output : job->output;
  if (tw_job_validate(job, out, TW_VALIDATE_CHECK, &val, NULL, &err) ||
      (job->nshots && tw_survey_check_workers(job, val.kernel, a.workers, tw_app_host_ranks(), &err))) {
    rc = tw_app_fail(&err);
  } else {
    rc = report(job, &val, out, &a);
  }
  if (a.verbose) tw_app_print_phases(stdout, &val.phases, tw_wall_seconds() - t0);
  tw_validation_free(&val);
  tw_job_destroy(job);
  tw_app_job_args_free(&a);
  return rc;
}

static void help_check(FILE *o) {
  fprintf(o, "usage: torrewave check JOB.cfg [--set key=value]... [-o OUT.h5 | -o DIR] [--shots LIST] [--workers N]\n"
             "                      [-v]\n\n"
             "Validate a job without running it, exactly as `torrewave run` validates it before computing: the job\n"
             "file, the model (velocities in the physical range), the wavelets (files read; float32 range; their\n"
             "highest frequency), sources and receivers against a free surface, memory, and the output (its name\n"
             "is not an input, a link or a device; its folder is writable; it fits the free space). Prints the\n"
             "padded grid, dt against the stability limit and c dt / d, points per wavelength, memory, an estimate\n"
             "of the run time, the output's size, whether it replaces a file, temporaries left by earlier runs that\n"
             "were killed, and every warning. With a checkpoint group: the size of a checkpoint, its write time at\n"
             "this disk's speed (measured with a 64 MiB probe beside it), whether it is written in the background,\n"
             "and a checkpoint already there. For a survey (shots = { ... }): the shots (--shots LIST: those\n"
             "selected), one shot file's size and all of them, and the survey's time per shot, on one GPU and on\n"
             "this host's GPUs; --workers N: the CPU threads of N workers held to 4 per CPU, as `run` holds them.\n"
             "-v: where check's own time went (kernel, memory, output, model, wavelets, ...).\n"
             "Exit status 0 when the job can run, 1 on any error (the message names the job file, line, key,\n"
             "value and what is allowed), 2 usage.\n");
}

const tw_command tw_cmd_check = {"check", "validate a job: grid, dt, dispersion, memory, run time, output", run_check,
                                 help_check, 1};
