/* `torrewave run` of a survey job (shots = { ... }): the plan, the job's warnings (once), one
 * progress line (shots done, rate, ETA), a line per shot with -v, the summary table per worker, the
 * failed shots and the exit status. Only the process that reports (rank 0, or the only one)
 * prints, except its own errors. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "tw_io.h"
#include "tw_survey.h"

typedef struct {
  int tty, quiet, verbose;
  double last;
  int line_open;             /* a progress line without its newline is on the terminal */
  const tw_job *job;
  volatile sig_atomic_t *stop;
} survey_ui;

static int ui_stop(void *user) { return *((survey_ui *)user)->stop != 0; }

static void end_line(survey_ui *u) {
  if (u->line_open) fputc('\n', stderr);
  u->line_open = 0;
}

static void ui_plan(void *user, const tw_survey_report *r) {
  survey_ui *u = user;
  if (u->quiet) return;
  fprintf(stderr, "torrewave: survey %s: %ld shots", u->job->path, r->nshots);
  if (r->selected != r->nshots) fprintf(stderr, ", %ld selected", r->selected);
  fprintf(stderr, "; %ld complete (skipped), %ld to run; kernel %s -> %s/shot-NNNNN.h5 (job hash %s)\n", r->complete,
          r->to_run, r->kernel, r->directory, r->hash);
  if (r->foreign)
    fprintf(stderr, "torrewave: %ld shot files there are not this job's shots (another job, an edited shot list, "
            "or not shot files): they will be replaced\n", r->foreign);
}

/* After the job passed every check (a refused job removes nothing, and says nothing of it): its
 * warnings, once for the whole survey, in the words of `check` and of a single run (with -q too,
 * as a single run: what it warns of must be said), then what went. */
static void ui_passed(void *user, const tw_survey_report *r) {
  const survey_ui *u = user;
  for (int i = 0; i < r->nwarn; i++) fprintf(stderr, "torrewave: warning: %s\n", r->warn[i]);
  if (!u->quiet && r->stale_removed)
    fprintf(stderr, "torrewave: removed %ld temporary files of an interrupted run\n", r->stale_removed);
}

static void print_shot(const tw_survey_shot *s) {
  char dev[16] = "cpu";
  if (s->device >= 0) snprintf(dev, sizeof dev, "gpu%d", s->device);
  if (s->status == TW_OK)
    fprintf(stderr, "shot %ld [%.10g, %.10g, %.10g]: done on rank %d %s in %.2f s (%.2f s computing)\n", s->index,
            s->pos[0], s->pos[1], s->pos[2], s->rank, dev, s->wall_s, s->compute_s);
  else
    fprintf(stderr, "shot %ld [%.10g, %.10g, %.10g]: %s on rank %d %s: %s\n", s->index, s->pos[0], s->pos[1], s->pos[2],
            s->status == TW_EINTR ? "stopped" : "FAILED", s->rank, dev, s->msg);
}

static void ui_progress(void *user, const tw_survey_progress *p, const tw_survey_shot *shot) {
  survey_ui *u = user;
  if (u->quiet) return;
  const double now = tw_wall_seconds();
  const int all = p->done + p->failed >= p->total;
  if (shot && (u->verbose || (shot->status && shot->status != TW_EINTR))) {
    if (u->tty && u->line_open) fputs("\r\033[K", stderr), u->line_open = 0;
    print_shot(shot);
  }
  if (!all && now - u->last < (u->tty ? 0.2 : 10.0)) return;
  u->last = now;
  char eta[32];
  tw_app_fmt_duration(p->eta_s, eta, sizeof eta);
  fprintf(stderr, "%ssurvey: %ld/%ld shots done", u->tty ? "\r" : "", p->done, p->total);
  if (p->failed) fprintf(stderr, " (%ld failed)", p->failed);
  char rate[32] = "--";
  if (p->shots_per_s > 0) snprintf(rate, sizeof rate, "%.3g", 60.0 * p->shots_per_s);
  fprintf(stderr, ", %ld running, %s shots/min, ETA %s%s", p->running, rate, eta, u->tty ? "\033[K" : "\n");
  u->line_open = u->tty;
  fflush(stderr);
}

static void worker_name(const tw_survey_worker *w, int mpi, char *buf, size_t n) {
  char dev[16] = "cpu";
  if (w->device >= 0) snprintf(dev, sizeof dev, "gpu%d", w->device);
  if (mpi) snprintf(buf, n, "%.24s r%d %s", w->host, w->rank, dev);
  else snprintf(buf, n, "%s%s%.0d", dev, w->worker ? "." : "", w->worker);
}

static void summary(const tw_survey_report *r, const tw_job_args *a) {
  if (r->to_run == 0) {
    fprintf(stderr, "torrewave: survey %s: all %ld selected shots are complete in %s (--force reruns them)\n", a->job,
            r->selected, r->directory);
    return;
  }
  char wall[32];
  tw_app_fmt_duration(r->wall_s, wall, sizeof wall);
  const long ran = r->done + r->failed;
  fprintf(stderr, "torrewave: survey %s: %ld of %ld shots run in %s (%.2f shots/min): %ld done, %ld failed, %ld not "
          "run; %ld complete before -> %s\n", a->job, ran, r->to_run, wall, r->wall_s > 0 ? 60.0 * ran / r->wall_s : 0.0,
          r->done, r->failed, r->not_run, r->complete, r->directory);
  fprintf(stderr, "  %-28s %6s %6s %9s %9s %9s %11s %9s\n", "worker", "shots", "failed", "set-up s", "shot s",
          "compute s", "overhead s", "overhead");
  double tables = 0, open = 0, close = 0;
  long shots = 0;
  for (int i = 0; i < r->nworkers; i++) {
    const tw_survey_worker *w = &r->workers[i];
    char name[64];
    worker_name(w, r->mpi, name, sizeof name);
    const double per = w->shots ? w->busy_s / w->shots : 0, comp = w->shots ? w->compute_s / w->shots : 0;
    fprintf(stderr, "  %-28s %6ld %6ld %9.2f %9.3f %9.3f %11.3f %8.1f%%\n", name, w->shots, w->failed, w->setup_s, per,
            comp, per - comp, comp > 0 ? 100.0 * (per - comp) / comp : 0.0);
    tables += w->tables_s, open += w->open_s, close += w->close_s, shots += w->shots;
  }
  fprintf(stderr, "  set-up (this process):");
  for (int i = 0; i < r->setup.n; i++) fprintf(stderr, "%s %s %.3f s", i ? "," : "", r->setup.e[i].name, r->setup.e[i].s);
  if (shots)
    fprintf(stderr, "\n  per shot (mean): tables and reset %.4f s, output open %.4f s, output close %.4f s (the rest of "
            "the overhead: trace and snapshot writes in the time loop)\n", tables / shots, open / shots, close / shots);
  else
    fputc('\n', stderr);
  if (r->threads > 0) fprintf(stderr, "  CPU threads per worker: %d\n", r->threads);
  for (int i = 0; i < r->nworkers; i++)
    if (r->workers[i].error[0]) {
      char name[64];
      worker_name(&r->workers[i], r->mpi, name, sizeof name);
      fprintf(stderr, "  worker %s %s\n", name, r->workers[i].error);
    }
  if (!r->failed && !r->not_run) return;
  /* The shots that did not end complete, in index order, for the message and the rerun line. */
  long *idx = malloc((size_t)(r->nresults ? r->nresults : 1) * sizeof *idx), n = 0;
  for (long i = 0; idx && i < r->nresults; i++)
    if (r->shots[i].status != TW_OK && r->shots[i].status != TW_EINTR) {
      if (!a->verbose) print_shot(&r->shots[i]);
      idx[n++] = r->shots[i].index;
    }
  for (long i = 1; i < n; i++)
    for (long j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
      const long t = idx[j];
      idx[j] = idx[j - 1], idx[j - 1] = t;
    }
  if (r->failed) {
    fprintf(stderr, "torrewave: %ld shot%s failed:", r->failed, r->failed > 1 ? "s" : "");
    for (long i = 0; i < n && i < 50; i++) fprintf(stderr, "%s %ld", i ? "," : "", idx[i]);
    fprintf(stderr, "%s\n", n > 50 ? ", ..." : "");
  }
  if (r->not_run) fprintf(stderr, "torrewave: %ld shot%s not run\n", r->not_run, r->not_run > 1 ? "s" : "");
  if (!r->stopped)
    fprintf(stderr, "torrewave: run the same command again to run only the shots without a complete file\n");
  free(idx);
}

int tw_app_run_survey(const tw_job_args *a, tw_job *job, volatile sig_atomic_t *stop) {
  survey_ui u = {isatty(STDERR_FILENO), a->quiet, a->verbose, 0.0, 0, job, stop};
  const tw_survey_opts opts = {a->shots, a->force, a->output, a->workers};
  const tw_survey_hooks hooks = {ui_plan, ui_passed, ui_progress, ui_stop, &u};
  tw_survey_report rep;
  tw_error err = {0};
  const tw_status st = tw_survey_run(job, &opts, &hooks, &rep, &err);
  int rc;
  end_line(&u);
  if (st == TW_EINTR || (!st && rep.stopped)) {
    if (rep.root) {
      if (!st) summary(&rep, a);
      fprintf(stderr, "torrewave: survey interrupted by signal %d; the complete shots stay, run it again to go on\n",
              (int)*stop);
    }
    rc = TW_EXIT_INTR;
  } else if (st && !rep.root && rep.agreed) {
    rc = TW_EXIT_FAIL; /* rank 0 says it: every rank has the same error */
  } else if (st) {
    if (!rep.root) tw_error_prefix(&err, "rank %d", rep.rank);
    rc = tw_app_fail(&err);
  } else {
    if (rep.root && (!a->quiet || rep.failed || rep.not_run)) summary(&rep, a);
    rc = rep.failed || rep.not_run ? TW_EXIT_SHOTS : TW_EXIT_OK;
  }
  tw_survey_report_free(&rep);
  return rc;
}
