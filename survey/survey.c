/* survey.c — running a survey (tw_survey.h): per process a medium and worker threads with a
 * session each; the main thread of every process passes its workers' requests on (rank 0: serves
 * them, and those of the other ranks, from the list of shots to run).
 *
 * A worker and its process's main thread talk through a mailbox under one mutex: the worker posts
 * a request (the outcome of its last shot, its totals) and waits for an answer (a shot, or STOP);
 * the main thread takes the request, gets the answer (rank 0: from the list; other ranks: from rank
 * 0, one MPI round trip) and hands it back. A worker that cannot go on (its session could not be
 * created, or its backend failed) posts a last request marked retired and ends. Rank 0 is done
 * when every worker of every rank has had its STOP or retired; then every rank learns the outcome,
 * so that all exit with the same status.
 *
 * Sessions are destroyed only when every worker is done: on the window path the first session
 * pinned the medium's c²dt², which the others copy from (gpu_window.cu). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "survey_internal.h"

enum { NONE = -3, STOP = -1 };

typedef struct survey survey;

typedef struct worker {
  survey *sv;
  int slot, device;
  pthread_t th;
  int started;
  tw_session *session;
  tw_survey_worker stats;    /* its thread's; a copy travels with each request */
  /* the mailbox, under sv->mu */
  int posted;                /* a request waits for the main thread */
  survey_req req;
  long assigned;             /* the answer: a shot, STOP, or NONE yet */
  int exited;
} worker;

struct survey {
  tw_job *job;
  const tw_survey_opts *opts;
  const tw_survey_hooks *hooks;
  tw_survey_report *rep;
  survey_comm *comm;
  int lrank, lsize;
  int gpu, threads;
  tw_medium *medium;
  int medium_state;          /* 0: being built, 1: ready, −1: failed (under mu) */
  char medium_error[TW_ERROR_MSG]; /* whole: the workers' reason they could not start */
  char first_new[1024];   /* rank 0: the first component of the output directory that was not there
                             before this run ("": all were) */
  pthread_mutex_t mu;
  pthread_cond_t to_main, to_workers;
  worker *w;
  int nw;
  /* rank 0: the dispatcher */
  long *todo, next, running;
  int finished, total;       /* workers (of all ranks) that will ask no more; all of them */
  int *first_worker;         /* [nranks]: the rank's first row in rep->workers */
  long cap_results;
  double t_first, t_tick;
  int stopping;
  int agreed;                /* the error is one every rank returns, from one broadcast */
  int halt;                  /* (under mu) stop_workers ran: no request will be answered any more */
};

static int stop_asked(const survey *sv) {
  return sv->hooks && sv->hooks->should_stop && sv->hooks->should_stop(sv->hooks->user);
}

static int shot_should_stop(void *user) { return stop_asked(user); }

/* ---------------------------------------------------------------- workers */

/* Post a request; wait for the answer unless the worker retires (then STOP). */
/* Once the survey halts (stop_workers) no request is answered: a worker that posts after it (one
 * still creating its session, one finishing a shot) retires at once instead of waiting for ever,
 * which held its rank in pthread_join while the others waited in MPI_Finalize (a job refused on
 * one rank only, review of session 19). */
static long post(worker *w, int flags) {
  survey *sv = w->sv;
  pthread_mutex_lock(&sv->mu);
  long a = STOP;
  if (!sv->halt) {
    w->req.flags = flags;
    w->req.stats = w->stats;
    w->assigned = NONE;
    w->posted = 1;
    pthread_cond_signal(&sv->to_main);
    if (!(flags & REQ_RETIRED)) {
      while (w->assigned == NONE && !sv->halt) pthread_cond_wait(&sv->to_workers, &sv->mu);
      a = w->assigned == NONE ? STOP : w->assigned;
    }
  }
  pthread_mutex_unlock(&sv->mu);
  return a;
}

/* check_temps: the plan saw something other than a file under a name of the shot's temporaries. */
static void run_one(worker *w, long index, int check_temps) {
  survey *sv = w->sv;
  tw_survey_shot *r = &w->req.result;
  memset(r, 0, sizeof *r);
  r->index = index;
  memcpy(r->pos, sv->job->shots[index], sizeof r->pos);
  r->rank = sv->rep->rank, r->worker = w->slot, r->device = w->device;
  char path[1200];
  tw_survey_shot_path(sv->rep->directory, index, path, sizeof path);
  tw_shot shot = {index, {r->pos[0], r->pos[1], r->pos[2]}, sv->rep->hash};
  const tw_run_hooks hooks = {NULL, shot_should_stop, sv, 0, NULL};
  tw_run_report rr;
  tw_error e = {0};
  /* As a single run's output (io/outpath.c): a name that may be replaced (not a folder, a link, a
   * device or one of the job's inputs), and the shot's lock held while it is written, so that two
   * surveys in one directory never write the same shot (the second reports it failed, naming the
   * first's pid); a killed run's temporaries only regular files (the plan removed those). */
  tw_output_lock *lock = NULL;
  memset(&rr, 0, sizeof rr);
  r->status = tw_output_check_path(path, sv->job, 0, TW_OUTPUT_SHOT, &e);
  if (!r->status) r->status = tw_output_lock_take(path, TW_OUTPUT_SHOT, &lock, &e);
  if (!r->status && check_temps) {
    char **names = NULL;
    int n = 0;
    r->status = tw_output_stale(path, 0, TW_OUTPUT_SHOT, &names, &n, &e);
    tw_output_stale_free(names, n);
  }
  if (!r->status) r->status = tw_session_run(w->session, &shot, path, &hooks, &rr, &e);
  tw_output_lock_release(lock);
  w->req.msg[0] = '\0';
  if (r->status) snprintf(w->req.msg, sizeof w->req.msg, "%s", e.msg);
  r->wall_s = rr.wall_s, r->compute_s = rr.compute_s;
  r->tables_s = tw_phases_get(&rr.phases, "shot tables");
  r->open_s = tw_phases_get(&rr.phases, "output open");
  r->loop_s = tw_phases_get(&rr.phases, "time loop");
  r->close_s = tw_phases_get(&rr.phases, "output close");
  tw_survey_worker *s = &w->stats;
  if (r->status == TW_EINTR) return; /* stopped by a signal: neither run nor failed */
  s->shots++;
  s->failed += r->status != TW_OK;
  s->busy_s += r->wall_s, s->compute_s += r->compute_s;
  s->tables_s += r->tables_s, s->open_s += r->open_s, s->close_s += r->close_s;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  survey *sv = w->sv;
  tw_error e = {0};
  /* The first CUDA call (the context) while the main thread builds the medium. */
  double t = tw_wall_seconds();
  tw_status st = sv->gpu ? tw_gpu_init(w->device, &e) : TW_OK;
  const double init_s = tw_wall_seconds() - t;
  pthread_mutex_lock(&sv->mu);
  while (sv->medium_state == 0) pthread_cond_wait(&sv->to_workers, &sv->mu);
  const int ready = sv->medium_state > 0;
  pthread_mutex_unlock(&sv->mu);
  if (!st && !ready) st = tw_error_set(&e, TW_EINTERNAL, "%s", sv->medium_error);
  t = tw_wall_seconds();
  if (!st) st = tw_session_create(sv->medium, sv->rep->kernel, w->device, sv->threads, &w->session, NULL, &e);
  w->stats.setup_s = init_s + (tw_wall_seconds() - t);
  int flags = 0;
  if (st) {
    snprintf(w->stats.error, sizeof w->stats.error, "could not start: %s", e.msg);
    flags = REQ_RETIRED;
  }
  for (;;) {
    const long got = post(w, flags), shot = got & ~SURVEY_CHECK_TEMPS;
    if (got < 0) break;
    run_one(w, shot, (got & SURVEY_CHECK_TEMPS) != 0);
    flags = REQ_RESULT;
    if (w->req.result.status && tw_session_broken(w->session)) {
      snprintf(w->stats.error, sizeof w->stats.error, "stopped after shot %ld failed in its kernel: %s", shot,
               w->req.msg);
      flags |= REQ_RETIRED;
    }
  }
  pthread_mutex_lock(&sv->mu);
  w->exited = 1;
  pthread_cond_signal(&sv->to_main);
  pthread_mutex_unlock(&sv->mu);
  return NULL;
}

/* ---------------------------------------------------------------- rank 0: the dispatcher */

static void progress(survey *sv, const tw_survey_shot *shot) {
  const tw_survey_report *rep = sv->rep;
  if (!sv->hooks || !sv->hooks->progress) return;
  tw_survey_progress p = {rep->to_run, rep->done, rep->failed, sv->running, 0, 0, -1};
  const long ended = rep->nresults;
  if (sv->t_first > 0) p.elapsed_s = tw_wall_seconds() - sv->t_first;
  if (ended > 0 && p.elapsed_s > 0) {
    p.shots_per_s = ended / p.elapsed_s;
    p.eta_s = (rep->to_run - ended) / p.shots_per_s;
  }
  sv->hooks->progress(sv->hooks->user, &p, shot);
  sv->t_tick = tw_wall_seconds();
}

/* q's shot into rep->shots. Its message (q->msg, whole) is copied for a shot that did not run
 * only: the records of the shots that ran stay small (rank 0 keeps them all). */
static tw_status record(survey *sv, const survey_req *q, tw_error *err) {
  tw_survey_report *rep = sv->rep;
  if (rep->nresults == sv->cap_results) {
    const long cap = sv->cap_results ? 2 * sv->cap_results : 256;
    tw_survey_shot *p = realloc(rep->shots, (size_t)cap * sizeof *p);
    if (!p) return tw_error_set(err, TW_ENOMEM, "out of memory for the shots' outcomes");
    rep->shots = p, sv->cap_results = cap;
  }
  tw_survey_shot *r = &rep->shots[rep->nresults];
  *r = q->result;
  r->msg = NULL;
  if (r->status != TW_OK && !(r->msg = strdup(q->msg)))
    return tw_error_set(err, TW_ENOMEM, "out of memory for shot %ld's error", r->index);
  rep->nresults++;
  sv->running--;
  if (r->status == TW_OK) rep->done++;
  else if (r->status != TW_EINTR) rep->failed++;
  progress(sv, r);
  return TW_OK;
}

/* A request from worker q->stats.worker of rank src: its outcome recorded, the answer in *reply. */
static tw_status handle(survey *sv, int src, const survey_req *q, long *reply, tw_error *err) {
  tw_survey_report *rep = sv->rep;
  const int k = sv->first_worker[src] + q->stats.worker;
  if (src < 0 || src >= rep->nranks || q->stats.worker < 0 || k >= sv->first_worker[src + 1])
    return tw_error_set(err, TW_EINTERNAL, "rank %d: a request from worker %d, which it did not announce", src,
                        q->stats.worker);
  rep->workers[k] = q->stats;
  tw_status st = (q->flags & REQ_RESULT) ? record(sv, q, err) : TW_OK;
  *reply = STOP;
  if (!sv->stopping && stop_asked(sv)) sv->stopping = rep->stopped = 1;
  if ((q->flags & REQ_RETIRED) || sv->stopping || sv->next >= rep->to_run) {
    sv->finished++;
    return st;
  }
  if (sv->t_first == 0) sv->t_first = tw_wall_seconds();
  sv->running++;
  *reply = sv->todo[sv->next++];
  return st;
}

/* Every process's main thread until its part is done: its workers' requests (rank 0 answers them,
 * the others ask rank 0), and on rank 0 the other ranks' requests. */
static tw_status dispatch(survey *sv, tw_error *err) {
  const int root = sv->rep->rank == 0;
  for (;;) {
    int busy = 0;
    for (int i = 0; i < sv->nw; i++) {
      worker *w = &sv->w[i];
      survey_req q;
      pthread_mutex_lock(&sv->mu);
      const int got = w->posted;
      if (got) q = w->req, w->posted = 0;
      pthread_mutex_unlock(&sv->mu);
      if (!got) continue;
      busy = 1;
      const int waits = !(q.flags & REQ_RETIRED);
      if (!root && stop_asked(sv)) q.flags |= REQ_RETIRED; /* stopping here: ask for no more */
      long reply = STOP;
      const tw_status st = root ? handle(sv, 0, &q, &reply, err) : comm_request(sv->comm, &q, &reply, err);
      if (st) return st;
      if (waits) {
        pthread_mutex_lock(&sv->mu);
        w->assigned = (q.flags & REQ_RETIRED) ? STOP : reply;
        pthread_cond_broadcast(&sv->to_workers);
        pthread_mutex_unlock(&sv->mu);
      }
    }
    for (int got = 1; root && sv->comm && got;) {
      survey_req q;
      int src = 0;
      long reply = STOP;
      tw_status st = comm_poll(sv->comm, &q, &src, &got, err);
      if (!st && got) st = handle(sv, src, &q, &reply, err);
      if (!st && got) st = comm_reply(sv->comm, src, reply, err);
      if (st) return st;
      busy |= got;
    }
    pthread_mutex_lock(&sv->mu);
    int quiet = 1, posted = 0;
    for (int i = 0; i < sv->nw; i++) quiet &= sv->w[i].exited && !sv->w[i].posted, posted |= sv->w[i].posted;
    if (!busy && !posted && !(root ? sv->finished == sv->total : quiet)) {
      /* Nothing to do: wait for a worker (or, with MPI, poll again in a millisecond). */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += sv->comm ? 1000000L : 100000000L;
      if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&sv->to_main, &sv->mu, &ts);
    }
    pthread_mutex_unlock(&sv->mu);
    if (root ? sv->finished == sv->total : quiet) return TW_OK;
    if (root && sv->t_first > 0 && tw_wall_seconds() - sv->t_tick > 1.0) progress(sv, NULL);
  }
}

/* ---------------------------------------------------------------- set-up */

/* CPUs this process may run on (its affinity: mpirun binds ranks). */
static int cpus_here(int *all) {
  cpu_set_t set;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  int n = (int)(online > 0 ? online : 1);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) n = CPU_COUNT(&set);
  *all = n >= online;
  return n;
}

/* The CPU kernels' threads per worker when solver.threads does not say: the process's CPUs shared
 * among its nw workers and, when its affinity mask covers the host, the host's lsize ranks; at
 * least one each. */
static int threads_share(int nw, int lsize) {
  int all = 0;
  const int cpus = cpus_here(&all), share = nw * (all ? lsize : 1);
  return cpus / share > 0 ? cpus / share : 1;
}

/* One rank's workers, as the memory check counts them (gathered from the ranks of a host). */
typedef struct {
  int nw;               /* its sessions; 0: its threads were refused (nothing to count) */
  int workers;          /* --workers as given (0: the default) */
  double host, session; /* the job's host need (one session) and each further session's */
  double avail;         /* MemAvailable as this rank saw it, before any rank built its medium */
} workers_mem;

/* As --workers asks (an HDF5 that is not thread-safe makes it one worker, but the same job and
 * options are refused on every machine of as many CPUs): the CPU threads, and what the memory check
 * counts. Memory: each worker holds its session's fields (tw_estimate.session_bytes) beside the one
 * medium, so N workers need the job's host memory and N − 1 sessions more (1, 2, 4 workers of one
 * CPU survey peaked at 132, 225, 410 MB where the validation, one session, said 128 MiB for all). A
 * cpu-diamond ring under a cap is a session's too (1, 2, 3 workers under a 40 MiB cap peaked at 214,
 * 379, 543 MB: 40 MB of ring each, where one ring was counted). GPU workers by default: one per GPU
 * of the host, but under a launcher of several ranks the host's GPUs are shared, so one. */
static tw_status workers_need(const tw_job *job, const char *kernel, int workers, workers_mem *m, tw_error *err) {
  const int gpu = tw_kernel_is_gpu(kernel);
  int nw = workers > 0 ? workers : 1, rank = 0, size = 1;
  memset(m, 0, sizeof *m);
  m->workers = workers;
  m->avail = (double)tw_host_memory_available();
  if (gpu && workers <= 0 && !(tw_survey_launched(&rank, &size) && size > 1))
    nw = tw_gpu_count() > 1 ? tw_gpu_count() : 1;
  if (nw > SURVEY_MAX_WORKERS) nw = SURVEY_MAX_WORKERS;
  if (!gpu) {
    tw_status st = tw_check_threads(job, nw, job->threads ? job->threads : threads_share(nw, 1), err);
    if (st) return st;
  }
  tw_estimate est;
  tw_status st = tw_estimate_job(job, kernel, &est, err);
  const double ring = st ? 0 : tw_estimate_cpu_ring(job, kernel); /* (the validation's plan adds it so) */
  if (!st) m->nw = nw, m->host = est.host_bytes + ring, m->session = est.session_bytes + ring;
  return st;
}

/* The sessions of the n ranks of one host (all[n]: every rank holds its own medium, so each counts
 * the job's host need and its further sessions) against the host's available memory: the least
 * that any of them saw. One session in all is the validation's to check (tw_estimate_fits). The
 * same refusal on every rank of the host: they decide from the same figures. */
static tw_status workers_fit(const tw_job *job, const workers_mem *all, int n, tw_error *err) {
  double need = 0, host = all[0].avail;
  int sessions = 0, ranks = 0;
  const workers_mem *m = NULL; /* (a rank whose threads were refused counts none: it says why itself) */
  for (int r = 0; r < n; r++) {
    if (all[r].avail < host) host = all[r].avail;
    if (!all[r].nw) continue;
    if (!m) m = &all[r];
    need += all[r].host + (all[r].nw - 1) * all[r].session, sessions += all[r].nw, ranks++;
  }
  if (!m || sessions < 2 || host <= 0 || need <= host) return TW_OK;
  char b[4][32], who[160], allowed[200];
  const int nw = m->nw;
  long most = m->session > 0 ? 1 + (long)((host / ranks - m->host) / m->session) : nw;
  if (m->workers > 0)
    snprintf(who, sizeof who, "--workers %d", m->workers);
  else if (nw > 1)
    snprintf(who, sizeof who, "%d workers (one per GPU)", nw);
  else
    snprintf(who, sizeof who, "1 worker");
  if (ranks > 1) {
    /* each rank holds its medium and sessions: fewer workers each, or fewer ranks on the host */
    char host_name[64] = "";
    gethostname(host_name, sizeof host_name - 1);
    long fit = (long)(host / (m->host + (nw - 1) * m->session));
    if (fit < 1) fit = 1;
    snprintf(who + strlen(who), sizeof who - strlen(who), " on each of the %d ranks on host %s", ranks, host_name);
    if (most >= 1 && m->session > 0 && most < nw)
      snprintf(allowed, sizeof allowed,
               "allowed --workers at most %ld with %d ranks on this host, or at most %ld "
               "ranks on it with %d workers each",
               most, ranks, fit, nw);
    else
      snprintf(allowed, sizeof allowed, "allowed at most %ld ranks on this host with %d worker%s each", fit, nw,
               nw > 1 ? "s" : "");
  } else {
    snprintf(allowed, sizeof allowed, "allowed --workers at most %ld", most < 1 ? 1 : most);
  }
  /* TW_ECONFIG, as the threads' refusal: the job and its --workers refused on this host before any
   * shot (a survey's memory failure, TW_ENOMEM, retires a rank's workers and leaves its shots to a
   * rerun, which the same command would repeat) */
  return tw_error_set(err, TW_ECONFIG,
                      "%s: %s: %d sessions need about %s of host memory (%s %s and %s for each "
                      "further session's fields) and %s is available; %s, or a machine with more memory",
                      job->path, who, sessions, tw_format_bytes(need, b[0], sizeof b[0]),
                      ranks > 1 ? "each rank holds its own medium: the job" : "the job",
                      tw_format_bytes(m->host, b[1], sizeof b[1]), tw_format_bytes(m->session, b[2], sizeof b[2]),
                      tw_format_bytes(host, b[3], sizeof b[3]), allowed);
}

tw_status tw_survey_check_workers(const tw_job *job, const char *kernel, int workers, int ranks, tw_error *err) {
  workers_mem m;
  tw_status st = workers_need(job, kernel, workers, &m, err);
  if (st) return st;
  if (ranks < 1) ranks = 1;
  workers_mem *all = malloc((size_t)ranks * sizeof *all);
  if (!all) return tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int r = 0; r < ranks; r++) all[r] = m; /* (the same command on every rank of the host) */
  st = workers_fit(job, all, ranks, err);
  free(all);
  return st;
}

/* run: this rank's workers against the host's memory together with those of the other ranks on the
 * host (each rank checked alone passed, and together they could take more than the host has). Every
 * rank of the host takes part in the gather, its own threads refused or not. The refusal of the job
 * in *refused and why (every rank of the host finds the same); returned: a failure of the gather. */
static tw_status host_workers(survey *sv, tw_status *refused, tw_error *why, tw_error *err) {
  workers_mem mine, *all = calloc((size_t)sv->lsize, sizeof *all);
  if (!all) return tw_error_set(err, TW_ENOMEM, "out of memory");
  *refused = workers_need(sv->job, sv->rep->kernel, sv->opts->workers, &mine, why);
  const tw_status st = comm_local_allgather(sv->comm, &mine, (int)sizeof mine, all, err);
  if (!st && !*refused) *refused = workers_fit(sv->job, all, sv->lsize, why);
  free(all);
  return st;
}

/* This rank's workers and their devices: the GPUs of the host split among its ranks by their rank
 * on the host (GPU d to local rank d mod local ranks), or one GPU shared when the host has more
 * ranks than GPUs; one worker per GPU, or opts->workers over them in turn. The CPU kernels: one
 * worker (opts->workers if given), with the cores split among the workers and the host's ranks. */
static tw_status plan_workers(survey *sv, survey_hello *me, tw_error *err) {
  int dev[SURVEY_MAX_WORKERS], ndev = 0;
  sv->gpu = tw_kernel_is_gpu(sv->rep->kernel);
  if (sv->gpu) {
    const int G = tw_gpu_count();
    if (G < 1) return tw_error_set(err, TW_ENODEV, "kernel %s: no GPU on this host", sv->rep->kernel);
    if (sv->lsize <= G) {
      for (int d = 0; d < G && ndev < SURVEY_MAX_WORKERS; d++)
        if (d % sv->lsize == sv->lrank) dev[ndev++] = d;
    } else {
      dev[ndev++] = sv->lrank % G;
    }
  } else {
    dev[ndev++] = -1;
  }
  int nw = sv->opts->workers > 0 ? sv->opts->workers : ndev;
  if (nw > SURVEY_MAX_WORKERS) nw = SURVEY_MAX_WORKERS;
  if (nw > 1 && !tw_io_threadsafe()) nw = 1; /* HDF5 without its thread-safe build: one writer */
  if (!sv->gpu && sv->job->threads == 0) sv->threads = threads_share(nw, sv->lsize);
  sv->rep->threads = sv->gpu ? 0 : (sv->threads ? sv->threads : sv->job->threads);
  me->nworkers = nw;
  for (int i = 0; i < nw; i++) me->device[i] = dev[i % ndev];
  return TW_OK;
}

/* Rank 0: the table of every rank's workers from their hellos; the number that will ask. */
static tw_status workers_table(survey *sv, const survey_hello *all, tw_error *err) {
  tw_survey_report *rep = sv->rep;
  int rows = 0;
  sv->first_worker = calloc((size_t)rep->nranks + 1, sizeof *sv->first_worker);
  if (!sv->first_worker) return tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int r = 0; r < rep->nranks; r++) rows += all[r].nworkers > 0 ? all[r].nworkers : 1;
  rep->workers = calloc((size_t)rows, sizeof *rep->workers);
  if (!rep->workers) return tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int r = 0; r < rep->nranks; r++) {
    sv->first_worker[r] = rep->nworkers;
    const int n = all[r].nworkers > 0 ? all[r].nworkers : 1;
    for (int i = 0; i < n; i++) {
      tw_survey_worker *w = &rep->workers[rep->nworkers++];
      snprintf(w->host, sizeof w->host, "%s", all[r].host);
      w->rank = r, w->worker = i, w->device = all[r].nworkers > 0 ? all[r].device[i] : -1;
      if (all[r].nworkers == 0) snprintf(w->error, sizeof w->error, "could not start: %s", all[r].error);
    }
    sv->total += all[r].nworkers;
  }
  sv->first_worker[rep->nranks] = rep->nworkers;
  return TW_OK;
}

/* err = "<head>: <why>", why whole: where both do not fit a message, the head gives way from its
 * start ("...<its end>: <why>"). A rank's reason may fill a message alone (it names paths), and a
 * head written before it cut its end. */
static tw_status set_headed(tw_error *err, tw_status code, const char *head, const char *why) {
  const int room = TW_ERROR_MSG - 1, wl = (int)strnlen(why, (size_t)room), hl = (int)strlen(head);
  const int keep = room - wl - 5; /* (the head's end after "...", then ": ") */
  if (hl + 2 + wl <= room) return tw_error_set(err, code, "%s: %s", head, why);
  return keep > 0 ? tw_error_set(err, code, "...%s: %s", head + hl - keep, why) : tw_error_set(err, code, "%s", why);
}

/* What rank 0 tells every rank at the start and at the end. */
typedef struct {
  tw_status st;
  char msg[TW_ERROR_MSG];    /* whole: the error every rank returns (sent once per job) */
  char kernel[32], hash[24];
  long to_run;
  int total;
} survey_start;
typedef struct {
  long done, failed, not_run;
  int stopped;
} survey_end;

/* A status that refuses the job itself (bad settings, a medium the kernel cannot run, a time step
 * above the stability limit, SEG-Y's limits on its sampling): exit 1, not shots to rerun. EUNSTABLE
 * and EUNSUPPORTED (tw_job_finalize) were missing: such a job ended with every shot "not run", exit
 * 3 and the advice to run the same command again, which could never help. */
static int job_refused(tw_status st) {
  return st == TW_ECONFIG || st == TW_EINVAL || st == TW_ERANGE || st == TW_EUNSTABLE || st == TW_EUNSUPPORTED;
}

/* Rank 0's plan (kernel, hash, the shots to run) for every rank; an error on rank 0 is every rank's. */
static tw_status start(survey *sv, tw_error *err) {
  tw_survey_report *rep = sv->rep;
  survey_start s;
  memset(&s, 0, sizeof s);
  if (rep->rank == 0) {
    s.st = tw_kernel_resolve(sv->job->kernel, sv->job, s.kernel, sizeof s.kernel, err);
    if (s.st) tw_error_prefix(err, "%s", tw_job_where(sv->job, sv->job->kernel_where));
    if (!s.st) {
      tw_survey_hash(sv->job, s.kernel, s.hash);
      snprintf(rep->kernel, sizeof rep->kernel, "%s", s.kernel);
      snprintf(rep->hash, sizeof rep->hash, "%s", s.hash);
      survey_first_missing(rep->directory, sv->first_new, sizeof sv->first_new);
      s.st = survey_plan(sv->job, sv->opts, rep, &sv->todo, err);
    }
    if (s.st) snprintf(s.msg, sizeof s.msg, "%s", err->msg);
    s.to_run = rep->to_run;
    if (!s.st && sv->hooks && sv->hooks->plan) sv->hooks->plan(sv->hooks->user, rep);
  }
  tw_status st = comm_bcast(sv->comm, &s, (int)sizeof s, err);
  if (st) return st;
  if (s.st) {
    sv->agreed = 1;
    return rep->rank ? tw_error_set(err, s.st, "%s", s.msg) : s.st;
  }
  snprintf(rep->kernel, sizeof rep->kernel, "%s", s.kernel);
  snprintf(rep->hash, sizeof rep->hash, "%s", s.hash);
  rep->to_run = s.to_run;
  return TW_OK;
}

/* ---------------------------------------------------------------- the survey */

static void stop_workers(survey *sv) {
  pthread_mutex_lock(&sv->mu);
  sv->halt = 1;
  if (sv->medium_state == 0) sv->medium_state = -1, snprintf(sv->medium_error, sizeof sv->medium_error, "stopped");
  for (int i = 0; i < sv->nw; i++)
    if (sv->w[i].assigned == NONE) sv->w[i].assigned = STOP;
  pthread_cond_broadcast(&sv->to_workers);
  pthread_mutex_unlock(&sv->mu);
}

/* Rank 0: what killed runs left goes (survey_clean), once nothing can refuse the job any more, and
 * the hook hears of it and of the warnings (rep->warn). */
static tw_status clean(survey *sv, tw_error *err) {
  const tw_status st = survey_clean(sv->rep, sv->todo, err);
  if (!st && sv->hooks && sv->hooks->passed) sv->hooks->passed(sv->hooks->user, sv->rep);
  return st;
}

/* What each rank's medium said, gathered on rank 0: a refusal of the job itself (job_refused; the
 * first rank's goes to all), and the validation's warnings (none where the medium failed). */
typedef struct {
  int code;
  int usage;                 /* a usage error, of the command line (tw_survey_join only) */
  char msg[TW_ERROR_MSG];    /* whole (gathered and sent once per job): it may name long paths */
} job_refusal;

/* Rank 0's choice, the first rank's refusal or none (one), sent to every rank and returned as every
 * rank's error: an agreed error (*agreed = 1: the ranks end together, tw_survey_run). */
static tw_status share_refusal(survey_comm *c, job_refusal *one, int *agreed, tw_error *err) {
  tw_status st = comm_bcast(c, one, (int)sizeof *one, err);
  if (!st && one->code) st = tw_error_set(err, (tw_status)one->code, "%s", one->msg), *agreed = 1;
  return st;
}

/* A decision every rank takes on its own (its options and host: MPMD launches may differ) made
 * together: each rank's refusal gathered, the first (by rank) sent to all, so that no rank goes on
 * to a collective call while another has left for MPI_Finalize (an output directory too long on
 * one rank only hung the others). */
static tw_status agree(survey *sv, tw_status mine_st, const tw_error *mine, tw_error *err) {
  job_refusal me, one;
  memset(&me, 0, sizeof me), memset(&one, 0, sizeof one);
  if (mine_st) me.code = (int)mine_st, snprintf(me.msg, sizeof me.msg, "%s", mine->msg);
  job_refusal *all = sv->rep->root ? calloc((size_t)sv->rep->nranks, sizeof *all) : NULL;
  tw_status st = sv->rep->root && !all ? tw_error_set(err, TW_ENOMEM, "out of memory") : TW_OK;
  if (!st) st = comm_gather(sv->comm, &me, (int)sizeof me, all, err);
  for (int r = 0; !st && sv->rep->root && r < sv->rep->nranks && !one.code; r++)
    if (all[r].code) one = all[r];
  free(all);
  return st ? st : share_refusal(sv->comm, &one, &sv->agreed, err);
}
typedef struct {
  job_refusal refusal;
  int nwarn;
  char warn[TW_VALIDATE_MSGS][TW_ERROR_MSG];
} medium_said;

/* Rank 0: the ranks' warnings into rep->warn, each text once. Every rank validates the same job, so
 * they say the same: once, not once per rank (as the shots share the medium: not once per shot). A
 * rank whose medium failed (its host's memory, a file it cannot read) says none, so the others'
 * still count. */
static void gather_warnings(tw_survey_report *rep, const medium_said *all) {
  for (int r = 0; r < rep->nranks; r++)
    for (int i = 0; i < all[r].nwarn && rep->nwarn < TW_VALIDATE_MSGS; i++) {
      int seen = 0;
      for (int k = 0; k < rep->nwarn && !seen; k++) seen = strcmp(rep->warn[k], all[r].warn[i]) == 0;
      if (!seen) snprintf(rep->warn[rep->nwarn++], sizeof rep->warn[0], "%s", all[r].warn[i]);
    }
}

/* This rank's workers: started before the medium is built (their first CUDA call overlaps it),
 * then the medium, then the dispatcher until every worker is done. */
static tw_status run_workers(survey *sv, const survey_hello *me, tw_error *err) {
  tw_status st = TW_OK;
  sv->w = calloc((size_t)(me->nworkers ? me->nworkers : 1), sizeof *sv->w);
  if (!sv->w) return tw_error_set(err, TW_ENOMEM, "out of memory");
  sv->nw = me->nworkers;
  for (int i = 0; i < sv->nw; i++) {
    worker *w = &sv->w[i];
    w->sv = sv, w->slot = i, w->device = me->device[i], w->assigned = NONE;
    snprintf(w->stats.host, sizeof w->stats.host, "%s", me->host);
    w->stats.rank = sv->rep->rank, w->stats.worker = i, w->stats.device = w->device;
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
      st = tw_error_set(err, TW_ENOMEM, "cannot start worker thread %d", i);
      break;
    }
    w->started = 1;
  }
  if (!st) {
    tw_error e = {0};
    tw_status ms = TW_OK;
    st = host_workers(sv, &ms, &e, err);
    if (st) ms = tw_error_set(&e, st, "%s", err->msg); /* (the workers retire; the rank ends below) */
    if (!ms) ms = tw_medium_create(sv->job, &sv->medium, &sv->rep->setup, &e);
    pthread_mutex_lock(&sv->mu);
    sv->medium_state = ms ? -1 : 1;
    if (ms) snprintf(sv->medium_error, sizeof sv->medium_error, "%s", e.msg);
    pthread_cond_broadcast(&sv->to_workers);
    pthread_mutex_unlock(&sv->mu);
    /* The job itself refused by the medium's validation (a shot on the free surface, a cpu-diamond
     * DTS or cap, ...) or by its workers' threads in all: the survey fails as a bad job does (exit
     * 1), not as shots not run (no rerun can help). Decided together — a refusal that depends on
     * the host (its CPUs) must not leave the other ranks waiting in dispatch: the first rank's
     * reason goes to all. Other failures (a model file this host cannot read, its memory) leave
     * this rank's workers retired. */
    medium_said mine;
    memset(&mine, 0, sizeof mine);
    mine.refusal.code = job_refused(ms) ? (int)ms : 0;
    if (mine.refusal.code) snprintf(mine.refusal.msg, sizeof mine.refusal.msg, "%s", e.msg);
    mine.nwarn = tw_medium_nwarn(sv->medium);
    for (int i = 0; i < mine.nwarn; i++)
      snprintf(mine.warn[i], sizeof mine.warn[i], "%s", tw_medium_warning(sv->medium, i));
    medium_said *all = sv->rep->root ? calloc((size_t)sv->rep->nranks, sizeof *all) : NULL;
    job_refusal all1 = {0, 0, ""};
    if (sv->rep->root && !all) st = tw_error_set(err, TW_ENOMEM, "out of memory");
    if (!st) st = comm_gather(sv->comm, &mine, (int)sizeof mine, all, err);
    if (!st && sv->rep->root) {
      for (int r = 0; r < sv->rep->nranks && !all1.code; r++)
        if (all[r].refusal.code) all1 = all[r].refusal;
      if (!all1.code) gather_warnings(sv->rep, all); /* (a refused job: its error alone, as a single run) */
    }
    free(all);
    if (!st) st = share_refusal(sv->comm, &all1, &sv->agreed, err);
    if (!st && sv->rep->root) st = clean(sv, err); /* (the job passed: a refused one removes nothing) */
    if (!st) st = dispatch(sv, err);
  }
  if (st) stop_workers(sv);
  for (int i = 0; i < sv->nw; i++)
    if (sv->w[i].started) pthread_join(sv->w[i].th, NULL);
  double t = tw_wall_seconds();
  for (int i = 0; i < sv->nw; i++) tw_session_destroy(sv->w[i].session);
  tw_medium_destroy(sv->medium);
  tw_phases_add(&sv->rep->setup, "teardown", tw_wall_seconds() - t);
  return st;
}

tw_status tw_survey_run(tw_job *job, const tw_survey_opts *opts, const tw_survey_hooks *hooks, tw_survey_report *rep,
                        tw_error *err) {
  const double wall0 = tw_wall_seconds();
  memset(rep, 0, sizeof *rep);
  if (!job->nshots) return tw_error_set(err, TW_EINVAL, "%s: not a survey (no shots = { ... })", job->path);
  const tw_survey_opts none = {0};
  survey sv;
  memset(&sv, 0, sizeof sv);
  sv.job = job, sv.opts = opts ? opts : &none, sv.hooks = hooks, sv.rep = rep;
  pthread_mutex_init(&sv.mu, NULL);
  pthread_cond_init(&sv.to_main, NULL);
  pthread_cond_init(&sv.to_workers, NULL);
  const char *dir = sv.opts->directory ? sv.opts->directory : job->output_dir;
  tw_status st = comm_init(&sv.comm, &rep->rank, &rep->nranks, &sv.lrank, &sv.lsize, err);
  rep->mpi = sv.comm != NULL;
  rep->root = rep->rank == 0;
  /* A directory cut short would take the shots to another folder (maybe an unrelated one that
   * exists): refused, by every rank together (agree). */
  if (!st) {
    tw_error de = {0};
    st = agree(&sv, survey_dir_fits(dir, &de), &de, err);
  }
  if (!st) snprintf(rep->directory, sizeof rep->directory, "%s", dir);
  if (!st) st = start(&sv, err);
  if (!st && rep->root && rep->to_run == 0) st = clean(&sv, err); /* (nothing to run: nothing validates it) */
  survey_hello me, *all = NULL;
  memset(&me, 0, sizeof me);
  if (!st && rep->to_run > 0) {
    gethostname(me.host, sizeof me.host - 1);
    tw_error e = {0};
    /* This rank's part: the kernel on this host, its memory, its workers (an error here leaves the
     * rank without workers; the others go on, and rank 0 reports why). */
    char k[32];
    tw_estimate est;
    tw_status mine = tw_kernel_resolve(rep->kernel, job, k, sizeof k, &e);
    if (!mine) mine = tw_estimate_job(job, rep->kernel, &est, &e);
    if (!mine) mine = tw_estimate_fits(job, rep->kernel, &est, &e);
    if (!mine) mine = plan_workers(&sv, &me, &e);
    if (mine) snprintf(me.error, sizeof me.error, "%s", e.msg), me.nworkers = 0;
    if (rep->root && !(all = calloc((size_t)rep->nranks, sizeof *all))) st = tw_error_set(err, TW_ENOMEM, "out of memory");
    if (!st) st = comm_gather(sv.comm, &me, (int)sizeof me, all, err);
    if (!st && rep->root) st = workers_table(&sv, all, err);
    /* No worker anywhere: every rank returns the error. */
    survey_start s;
    memset(&s, 0, sizeof s);
    if (!st && rep->root) {
      s.total = sv.total;
      for (int r = 0; !s.total && r < rep->nranks; r++)
        if (all[r].error[0]) {
          char head[64];
          tw_error why = {0};
          snprintf(head, sizeof head, "no worker could start: rank %d", r);
          if (rep->nranks > 1) set_headed(&why, TW_ENODEV, head, all[r].error);
          snprintf(s.msg, sizeof s.msg, "%s", rep->nranks > 1 ? why.msg : all[r].error);
          break;
        }
    }
    if (!st) st = comm_bcast(sv.comm, &s, (int)sizeof s, err);
    if (!st && !s.total) st = tw_error_set(err, TW_ENODEV, "%s", s.msg), sv.agreed = 1;
    if (!st) st = run_workers(&sv, &me, err);
  }
  /* A bad job leaves no output directory it made, nor the folders made on the way to it (rmdir: only
   * if empty), back up to the first that was not there. */
  if (job_refused(st) && rep->root && sv.first_new[0]) {
    char d[sizeof rep->directory];
    snprintf(d, sizeof d, "%s", rep->directory);
    for (;;) {
      if (rmdir(d) != 0 || strcmp(d, sv.first_new) == 0) break;
      char *slash = strrchr(d, '/');
      if (!slash || slash == d) break;
      *slash = '\0';
    }
  }
  /* Every rank learns the outcome (the same exit status everywhere). */
  survey_end end = {rep->done, rep->failed, rep->to_run - rep->done - rep->failed, rep->stopped};
  if (!st && rep->to_run > 0) st = comm_bcast(sv.comm, &end, (int)sizeof end, err);
  if (!rep->root) rep->done = end.done, rep->failed = end.failed, rep->stopped = end.stopped;
  rep->not_run = end.not_run;
  rep->wall_s = tw_wall_seconds() - wall0;
  free(all);
  free(sv.w);
  free(sv.todo);
  free(sv.first_worker);
  pthread_cond_destroy(&sv.to_main);
  pthread_cond_destroy(&sv.to_workers);
  pthread_mutex_destroy(&sv.mu);
  /* A failure the other ranks cannot know of (a lost message): end the whole job after app/ has
   * said why (tw_survey_report_free). An error every rank learnt from one broadcast (rank 0's plan,
   * the job's refusal, no worker anywhere): every rank is here, past its last collective call and
   * with nothing in flight, so they end together (MPI_Finalize), and rank 0 alone need say it.
   * Either way, and after a survey whose shots failed (exit 3) too, MPI ends once rank 0 has said it,
   * the error or the summary: a rank that leaves first with a status other than 0 makes mpirun end
   * the job, rank 0 before it printed (fuzzing; tests/cli/survey.sh lost '2 shots failed: 1, 4'). */
  rep->agreed = st && sv.agreed;
  if (st && rep->nranks > 1 && !sv.agreed) rep->abort = sv.comm;
  else if (rep->nranks > 1)
    rep->finalize = sv.comm;
  else comm_finalize(sv.comm);
  return st;
}

/* MPI ended as an error left it, once app/ has said it: MPI_Abort after one the other ranks do not
 * know of, MPI_Finalize after an agreed one. */
static void end_mpi(survey_comm **abort, survey_comm **finalize) {
  if (*abort) comm_abort(*abort);
  if (*finalize) comm_finalize(*finalize);
  *abort = NULL, *finalize = NULL;
}

void tw_survey_report_free(tw_survey_report *rep) {
  if (!rep) return;
  for (long i = 0; rep->shots && i < rep->nresults; i++) free(rep->shots[i].msg);
  free(rep->shots);
  free(rep->workers);
  rep->shots = NULL, rep->workers = NULL;
  end_mpi(&rep->abort, &rep->finalize);
}

/* ---------------------------------------------------------------- a launch's start */

/* What a rank found before MPI started (tw_survey_join), gathered on rank 0. */
typedef struct {
  job_refusal error;         /* its error (code 0: its job loaded) */
  int survey;                /* its job is a survey */
  char host[64];
  char job[900];             /* its job file (two fit a message whole) */
} launch_said;

static const char *job_kind(const launch_said *s) { return s->survey ? "a survey" : "a single-shot job"; }

/* Rank 0: the first rank's error (another rank's named with its rank and host, its reason whole),
 * else, when the ranks' jobs are not all surveys or all single-shot jobs, that: the survey's ranks
 * would wait for the others in its collective calls while those ended MPI. */
static void launch_decide(const launch_said *all, int n, job_refusal *one) {
  for (int r = 0; r < n; r++) {
    if (!all[r].error.code) continue;
    *one = all[r].error;
    if (r > 0) {
      char head[128];
      tw_error e = {0};
      snprintf(head, sizeof head, "rank %d (host %s)", r, all[r].host);
      set_headed(&e, (tw_status)one->code, head, all[r].error.msg);
      snprintf(one->msg, sizeof one->msg, "%s", e.msg);
    }
    return;
  }
  for (int r = 1; r < n; r++)
    if (all[r].survey != all[0].survey) {
      one->code = TW_EINVAL;
      snprintf(one->msg, sizeof one->msg, "the ranks were given different jobs: rank 0's '%s' is %s, rank %d's '%s' "
               "%s; every rank of a launch runs the same job (a survey shares its shots among them, a single-shot "
               "job runs on rank 0)", all[0].job, job_kind(&all[0]), r, all[r].job, job_kind(&all[r]));
      return;
    }
}

tw_status tw_survey_join(const tw_error *mine, int usage, int survey, const char *job, tw_survey_launch *l,
                         tw_error *err) {
  memset(l, 0, sizeof *l);
  survey_comm *c = NULL;
  int nranks = 1, lrank, lsize;
  tw_status st = comm_init(&c, &l->rank, &nranks, &lrank, &lsize, err);
  launch_said me, *all = NULL;
  job_refusal one;
  memset(&me, 0, sizeof me), memset(&one, 0, sizeof one);
  if (mine) {
    me.error.code = mine->code ? (int)mine->code : (int)TW_EINVAL;
    me.error.usage = usage;
    snprintf(me.error.msg, sizeof me.error.msg, "%s", mine->msg);
  }
  me.survey = survey;
  snprintf(me.job, sizeof me.job, "%s", job ? job : "");
  gethostname(me.host, sizeof me.host - 1);
  if (!st && l->rank == 0 && !(all = calloc((size_t)nranks, sizeof *all)))
    st = tw_error_set(err, TW_ENOMEM, "out of memory");
  if (!st) st = comm_gather(c, &me, (int)sizeof me, all, err);
  if (!st && l->rank == 0) launch_decide(all, nranks, &one);
  free(all);
  if (!st) st = share_refusal(c, &one, &l->agreed, err);
  l->usage = st && l->agreed && one.usage;
  if (st && !l->agreed && nranks > 1) l->abort = c;
  else if (st) l->finalize = c; /* once rank 0 has said it (as tw_survey_run's agreed errors) */
  else if (survey) comm_free(c); /* tw_survey_run goes on with MPI */
  else comm_finalize(c);         /* a single-shot job: rank 0 runs it alone */
  return st;
}

void tw_survey_launch_end(tw_survey_launch *l) {
  if (l) end_mpi(&l->abort, &l->finalize);
}

/* ---------------------------------------------------------------- a command for rank 0 alone */

tw_status tw_survey_solo_begin(tw_survey_solo *s, tw_error *err) {
  int size, lrank, lsize;
  memset(s, 0, sizeof *s);
  s->host_ranks = 1;
  if (!tw_survey_launched(&s->rank, &size) || size == 1) return TW_OK;
  if (!tw_survey_mpi_built()) return TW_OK; /* (comm_init refuses a launch without MPI: a survey's) */
  const tw_status st = comm_init(&s->comm, &s->rank, &size, &lrank, &lsize, err);
  if (!st) s->host_ranks = lsize; /* (check counts them: each would hold its own medium) */
  return st;
}

tw_status tw_survey_solo_end(tw_survey_solo *s, tw_error *err) {
  tw_status st = comm_barrier(s->comm, err);
  if (!st) comm_finalize(s->comm); /* (after a failed barrier it could wait for ever: the launcher ends the job) */
  s->comm = NULL;
  return st;
}
