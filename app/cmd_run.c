/* torrewave run JOB [--set k=v]... [-o FILE] [-q] [-v] [--resume] [--shots LIST] [--force] [--workers N]
 * Progress on stderr: one updating line on a terminal, a line every 5 s otherwise. SIGINT stops the
 * run at the next block; the output is removed, nothing is left under its name. SIGTERM and SIGUSR1
 * do the same without checkpointing; with it they write a checkpoint at the next block and exit 75
 * (resumable: --resume continues). SIGHUP (the terminal or ssh session gone) is SIGTERM, unless the
 * run was started with it ignored (nohup). A survey job (shots = { ... }) goes to survey_ui.c. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "tw_io.h"
#include "tw_solver.h"
#include "tw_survey.h"

static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) {
  if (stop_requested != SIGINT) stop_requested = sig; /* Ctrl-C wins over a suspend request */
}

typedef struct {
  int tty, quiet;
  double last_print;
  long step0;        /* the ETA's origin: the first report after the first block (which pays for */
  const tw_job *job; /* warm-up and first touches of memory, and would mislead it), at elapsed0 */
  int ref;           /* step0 and elapsed0 are set (before: a resumed run's checkpoint step) */
  double elapsed0;
} progress_state;

static void on_progress(void *user, long step, long steps, double elapsed, double cells_per_s) {
  progress_state *p = user;
  if (p->quiet) return;
  const double now = tw_wall_seconds();
  if (elapsed == 0.0) p->step0 = step; /* a resumed run announces its first step */
  else if (!p->ref) p->ref = 1, p->step0 = step, p->elapsed0 = elapsed;
  const int done = step >= steps;
  if (!done && now - p->last_print < (p->tty ? 0.2 : 5.0)) return;
  p->last_print = now;
  char eta[32];
  /* the rate since the reference; "--" until there is one */
  tw_app_fmt_duration(p->ref && step > p->step0 ? (elapsed - p->elapsed0) * (double)(steps - step) / (double)(step - p->step0)
                                                : -1,
                      eta, sizeof eta);
  fprintf(stderr, "%sstep %ld/%ld (%3.0f%%)  t = %.4g s  %.3g Gcell/s  ETA %s%s", p->tty ? "\r" : "", step, steps,
          100.0 * step / steps, step * p->job->dt, cells_per_s / 1e9, done ? "0s" : eta, p->tty ? "\033[K" : "\n");
  if (p->tty && done) fputc('\n', stderr);
  fflush(stderr);
}

/* The validation's findings, before the run starts. */
static void on_message(void *user, int warning, const char *text) {
  (void)user; /* printed with -q too: what the run removed, or what it warns about, must be said */
  fprintf(stderr, "torrewave: %s%s\n", warning ? "warning: " : "", text);
}

static int should_stop(void *user) {
  (void)user;
  if (!stop_requested) return TW_RUN_GO;
  return stop_requested == SIGINT ? TW_RUN_STOP : TW_RUN_SUSPEND; /* the driver: STOP without checkpoints */
}

/* The command line and the job file read: 0, or the exit status (TW_EXIT_USAGE, TW_EXIT_FAIL) with
 * why unsaid (a usage error's message without the command), a and job freed. */
static int load(int argc, char **argv, tw_job_args *a, tw_job **job, tw_error *why) {
  char usage[TW_ERROR_MSG] = "";
  tw_app_usage_keep(usage, sizeof usage);
  int rc = tw_app_job_args("run", argc, argv, a); /* (frees a on a usage error) */
  tw_app_usage_keep(NULL, 0);
  if (rc) return tw_error_set(why, TW_EINVAL, "%s", usage), rc;
  if (tw_job_load(a->job, a->sets, a->nsets, job, why)) rc = TW_EXIT_FAIL;
  else if ((*job)->nshots && a->resume)
    rc = TW_EXIT_USAGE, tw_error_set(why, TW_EINVAL, "--resume is for a single-shot job's checkpoint; a survey "
                                     "resumes by itself: run the same command again");
  else if (tw_app_survey_option(a, *job))
    rc = TW_EXIT_USAGE, tw_error_set(why, TW_EINVAL, "%s is a survey's option and %s has no shots group (shots = "
                                     "{ ... })", tw_app_survey_option(a, *job), a->job);
  if (rc) tw_job_destroy(*job), *job = NULL, tw_app_job_args_free(a);
  return rc;
}

/* Say why load (or the ranks together) refused the run; returns rc. */
static int say(int rc, const tw_error *why) {
  return rc == TW_EXIT_USAGE ? tw_app_usage("run", "%s", why->msg) : tw_app_fail(why);
}

static int run_run(int argc, char **argv) {
  tw_job_args a;
  tw_job *job = NULL;
  struct sigaction sa; /* (set before MPI starts, as they always were) */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
  struct sigaction hup;
  if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN) sigaction(SIGHUP, &sa, NULL);
  tw_error err = {0};
  int rank = 0, size = 1, rc = load(argc, argv, &a, &job, &err);
  /* Under a launcher of several ranks each rank has read the same command line and job file: rank 0
   * alone says what they found (every rank said it; an error on one rank only is named with its
   * rank), and every rank exits with its status. */
  if (tw_survey_launched(&rank, &size) && size != 1 && tw_survey_mpi_built()) {
    tw_survey_launch l;
    tw_error e = {0};
    if (tw_survey_join(rc ? &err : NULL, rc == TW_EXIT_USAGE, job && job->nshots, job ? job->path : NULL, &l, &e)) {
      if (!rc) tw_job_destroy(job), tw_app_job_args_free(&a);
      rc = l.usage ? TW_EXIT_USAGE : TW_EXIT_FAIL;
      if (!l.agreed && l.rank > 0) tw_error_prefix(&e, "rank %d", l.rank);
      if (!l.agreed || l.rank == 0) say(rc, &e);
      tw_survey_launch_end(&l);
      return rc;
    }
  } else if (rc) {
    return say(rc, &err);
  }
  const char *out = a.output ? a.output : job->output;
  if (job->nshots) {
    rc = tw_app_run_survey(&a, job, &stop_requested);
    tw_job_destroy(job);
    tw_app_job_args_free(&a);
    return rc;
  }
  /* A single-shot job under mpirun: rank 0 runs it, the others have nothing to do. */
  if (tw_survey_launched(&rank, &size) && rank > 0) {
    tw_job_destroy(job);
    tw_app_job_args_free(&a);
    return TW_EXIT_OK;
  }
  progress_state ps = {isatty(STDERR_FILENO), a.quiet, 0.0, 0, job, 0, 0.0};
  tw_run_hooks hooks = {on_progress, should_stop, &ps, a.resume, on_message};
  tw_run_report rep;
  tw_status st = tw_run_job(job, out, &hooks, &rep, &err);
  if (st == TW_ESUSPEND) {
    fprintf(stderr, "%storrewave: signal %d: %s\n", ps.tty && !a.quiet ? "\n" : "", (int)stop_requested, err.msg);
    rc = TW_EXIT_RESUMABLE;
  } else if (st == TW_EINTR) {
    fprintf(stderr, "\ntorrewave: interrupted by signal %d: %s\n", (int)stop_requested, err.msg);
    rc = TW_EXIT_INTR;
  } else if (st) {
    if (ps.tty && !a.quiet) fputc('\n', stderr);
    rc = tw_app_fail(&err);
  } else {
    char in[32], outb[32];
    fprintf(stderr,
            "torrewave: %s: %ld steps of %.3g s on %s in %.2f s (set-up %.2f s, %.2f s computing, %.3f Gcell/s, "
            "output %.2f s) -> %s\n",
            a.job, rep.steps, rep.dt, rep.kernel, rep.wall_s, tw_app_setup_seconds(&rep.phases), rep.compute_s,
            rep.gcells_per_s, rep.output_s, out);
    if (rep.window_planes) {
      char reused[96] = "";
      if (rep.c2_planes_reused)
        snprintf(reused, sizeof reused, " (c²dt² of %ld of them copied on the GPU: it repeats along x)",
                 rep.c2_planes_reused);
      fprintf(stderr, "torrewave: window of %d x-planes: %ld planes in%s (%s), %ld out (%s), copy wait %.1f%%\n",
              rep.window_planes, rep.planes_in, reused, tw_format_bytes(rep.bytes_in, in, sizeof in), rep.planes_out,
              tw_format_bytes(rep.bytes_out, outb, sizeof outb), 100.0 * rep.copy_wait_frac);
    }
    if (rep.note[0]) fprintf(stderr, "torrewave: %s\n", rep.note);
    if (rep.resumed_from) fprintf(stderr, "torrewave: resumed at step %ld (the figures above are this run's)\n",
                                  rep.resumed_from);
    if (rep.ckpt_taken) {
      char b[32];
      fprintf(stderr, "torrewave: %d checkpoint%s of %s (%s, %.2f s writing, the steps stood still %.2f s)%s; "
              "removed now that the output is complete\n", rep.checkpoints, rep.checkpoints == 1 ? "" : "s",
              tw_format_bytes(rep.ckpt_bytes, b, sizeof b), rep.ckpt_background ? "written in the background" :
              "written synchronously", rep.ckpt_write_s, rep.ckpt_stall_s,
              rep.ckpt_taken > rep.checkpoints ? " and one abandoned at the end, the run finishing first" : "");
    }
    if (a.verbose) tw_app_print_phases(stderr, &rep.phases, rep.wall_s);
    rc = TW_EXIT_OK;
  }
  tw_job_destroy(job);
  tw_app_job_args_free(&a);
  return rc;
}

static void help_run(FILE *o) {
  fprintf(o,
          "usage: torrewave run JOB.cfg [--set key=value]... [-o OUT.h5] [-q] [-v] [--resume]\n"
          "       torrewave run SURVEY.cfg [--shots LIST] [--force] [--workers N] [-o DIR] [-q] [-v]\n"
          "       mpirun -np N torrewave run SURVEY.cfg ...\n\n"
          "Run a forward-modelling job: traces and snapshots go to HDF5 (OUT.h5, default output.file of the\n"
          "job), written under a temporary name and renamed when complete; an XDMF sidecar for ParaView.\n"
          "A survey (shots = { ... } in the job) writes DIR/shot-00000.h5, ... (output.directory), one per\n"
          "shot, over every GPU of the host (one thread each) and, under mpirun, over every rank.\n\n"
          "  --set key=value  override a job-file value (job-file syntax: --set grid.n=[200,200,100],\n"
          "                   --set solver.kernel=cpu, --set 'time.steps = 500'); repeatable\n"
          "  -o, --output F   output file (a survey: its directory)\n"
          "  -q, --quiet      no progress line (a survey: nor its summary, unless shots failed or were not run)\n"
          "  -v, --verbose    the set-up's phases (model, medium, GPU init, backend, ...); a survey: a line per shot\n"
          "  --resume         continue from the job's checkpoint (checkpoint = { ... } in the job file)\n"
          "  --shots LIST     a survey: only these shots, e.g. 3-7,12 (shots count from 0, in job order)\n"
          "  --force          a survey: rerun shots that already have a complete file\n"
          "  --workers N      a survey: sessions per process (default: one per GPU; one for the CPU kernels);\n"
          "                   CPU kernels: N x solver.threads (or one thread each) at most 4 per CPU in all\n"
          "  --               the end of the options: a job file named -x.cfg after it\n\n"
          "Before computing, the job is validated as `torrewave check` does (its warnings are printed). The run\n"
          "holds a lock on the output's name (OUT.h5.lock): a second run onto the same output fails at once,\n"
          "naming the first. Temporaries of earlier runs of this output that were killed are removed (and\n"
          "said so). Progress goes to stderr (step, simulated time, Gcell/s, ETA; a survey: shots, rate,\n"
          "ETA). Ctrl-C stops the run and removes the partial output (a survey keeps its complete shots; rerun\n"
          "it to go on). With checkpoints (checkpoint = { every = 500; } or every_seconds = 600.0), SIGTERM,\n"
          "SIGUSR1 or SIGHUP (unless ignored: nohup) writes a checkpoint at the next time block and exits 75;\n"
          "`run --resume` continues from the checkpoint bit for bit (also after a crash or SIGKILL, from the\n"
          "last one). An existing checkpoint is never used without --resume nor overwritten: the run refuses\n"
          "to start.\n"
          "Exit status: 0 done, 1 error, 2 usage, 3 a survey ran but shots failed or were not run (they are\n"
          "listed), 75 stopped after a checkpoint (resumable), 130 interrupted.\n");
}

const tw_command tw_cmd_run = {"run", "run a job: traces and snapshots to HDF5", run_run, help_run, 0};
