/* The run driver: job → problem → kernel → output. It owns the time blocks (each ends at a
 * snapshot step, the final step, or a chunk boundary sized for ~0.5 s of work), turns receiver
 * taps into traces (one fixed order for every kernel), and streams traces and snapshots to
 * the HDF5 writer. On error or stop request the output is aborted: nothing under its name.
 * Checkpoints (run_ckpt.h; single-shot runs): block ends at checkpoint steps too, every output
 * write journaled, a resumed run starts at the checkpoint's step with the journal replayed into its
 * output.
 *
 * Three layers, so that a survey pays for the first two once (tw_solver.h):
 *   medium   the model and what follows from it alone: c²dt², damping, wavelets;
 *   session  a backend on the medium: its fields allocated, c²dt² uploaded, once;
 *   shot     the shot's source and receiver tables, a reset of the backend (both levels to zero),
 *            the time loop, one output file.
 * tw_run_job is one of each, timed phase by phase (tw_run_report.phases). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "problem.h"
#include "run_ckpt.h"
#include "schedule.h"
#include "tw_boundary.h"

/* ---------------------------------------------------------------- phases */

void tw_phases_add(tw_phases *p, const char *name, double seconds) {
  if (!p) return;
  for (int i = 0; i < p->n; i++)
    if (strcmp(p->e[i].name, name) == 0) {
      p->e[i].s += seconds;
      return;
    }
  if (p->n == TW_MAX_PHASES) {
    p->e[p->n - 1].s += seconds;
    return;
  }
  snprintf(p->e[p->n].name, sizeof p->e[p->n].name, "%s", name);
  p->e[p->n++].s = seconds;
}

double tw_phases_get(const tw_phases *p, const char *name) {
  for (int i = 0; p && i < p->n; i++)
    if (strcmp(p->e[i].name, name) == 0) return p->e[i].s;
  return 0.0;
}

/* Seconds since *t, and *t moved to now: phase timing in one line. */
static double lap(double *t) {
  const double now = tw_wall_seconds(), d = now - *t;
  *t = now;
  return d;
}

/* ---------------------------------------------------------------- medium */

struct tw_medium {
  const tw_job *job;
  tw_problem *pb;            /* the medium: no shot tables */
  double vmin, vmax;
  tw_velocity *model;        /* the whole model, for output.model (every shot's file), else NULL */
  int nwarn;                 /* tw_medium_create: its validation's warnings, for the caller to say */
  char warn[TW_VALIDATE_MSGS][TW_ERROR_MSG];
};

/* The medium from a validated, finalized job and its model v (whole or compact; taken over: kept
 * as m->model when keep_model, for output.model and a checkpoint's identity, else freed). */
static tw_status medium_from(const tw_job *job, tw_velocity *v, int keep_model, tw_medium **out, tw_phases *ph,
                             tw_error *err) {
  *out = NULL;
  tw_medium *m = calloc(1, sizeof *m);
  double t = tw_wall_seconds();
  tw_status st = m ? TW_OK : tw_error_set(err, TW_ENOMEM, "out of memory");
  if (!st) {
    m->job = job;
    m->vmin = v->vmin, m->vmax = v->vmax;
    st = tw_problem_create_medium(job, v, &m->pb, err);
  }
  if (!st && keep_model) m->model = v, v = NULL;
  tw_velocity_destroy(v);
  tw_phases_add(ph, "medium", lap(&t));
  if (st) {
    tw_medium_destroy(m);
    return st;
  }
  *out = m;
  return TW_OK;
}

tw_status tw_medium_create(tw_job *job, tw_medium **out, tw_phases *ph, tw_error *err) {
  *out = NULL;
  /* What `check` validates, but the output (a survey's shots each have theirs). */
  tw_validation val;
  tw_velocity *v = NULL;
  double t = tw_wall_seconds();
  tw_status st = tw_job_validate(job, NULL, TW_VALIDATE_RUN, &val, &v, err);
  tw_validation_free(&val);
  tw_phases_add(ph, "model (validation)", lap(&t));
  if (!st) st = medium_from(job, v, job->output_model, out, ph, err);
  /* Its warnings stay with it: the caller says them once (a survey: once for all its shots and ranks). */
  if (!st) {
    (*out)->nwarn = val.nwarn;
    memcpy((*out)->warn, val.warn, sizeof val.warn);
  }
  return st;
}

int tw_medium_nwarn(const tw_medium *m) { return m ? m->nwarn : 0; }

const char *tw_medium_warning(const tw_medium *m, int i) { return m && i >= 0 && i < m->nwarn ? m->warn[i] : NULL; }

void tw_medium_destroy(tw_medium *m) {
  if (!m) return;
  tw_problem_destroy(m->pb);
  tw_velocity_destroy(m->model);
  free(m);
}

void tw_medium_range(const tw_medium *m, double *vmin, double *vmax) {
  *vmin = m->vmin;
  *vmax = m->vmax;
}

/* ---------------------------------------------------------------- session */

struct tw_session {
  const tw_medium *m;
  tw_problem *pb;            /* the medium's arrays, this session's shot tables */
  const tw_backend_ops *be;
  void *bst;
  char kernel[32];
  int device, threads;
  int rec_ready;             /* pb and the backend hold the fixed receivers (a survey's shots share them) */
  double (*src)[3];          /* [nsources]: the current shot's source positions */
  double (*rec)[3];          /* [nrec]: its receiver positions (the output's coordinates) */
  float *taps, *traces, *snap, *snap_k;  /* snap_k: a snapshot in the kernels' axes (swap_xy) */
  size_t taps_cap, traces_cap, snap_cap, snap_k_cap;  /* floats */
  double wall_origin;        /* tw_run_job: the run's start (the file's wall_time counts the set-up) */
  int broken;                /* the backend failed (reset, advance, snapshot): do not trust it again */
  tw_run_ckpt *ck;           /* tw_run_job with checkpoints: taken over by the shot (NULL otherwise) */
  double ckpt_host_bytes;    /* the job's host memory estimate (a background checkpoint copy fits beside) */
};

int tw_session_broken(const tw_session *s) { return s->broken; }

void tw_session_destroy(tw_session *s) {
  if (!s) return;
  tw_run_ckpt_close(s->ck, TW_EINTERNAL, NULL, NULL); /* (none left: a shot closes it) */
  if (s->bst) s->be->destroy(s->bst);
  tw_problem_destroy(s->pb);
  free(s->src), free(s->rec);
  free(s->taps), free(s->traces), free(s->snap), free(s->snap_k);
  free(s);
}

tw_status tw_session_create(const tw_medium *m, const char *kernel, int device, int threads, tw_session **out,
                            tw_phases *ph, tw_error *err) {
  *out = NULL;
  const tw_job *job = m->job;
  tw_session *s = calloc(1, sizeof *s);
  if (!s) return tw_error_set(err, TW_ENOMEM, "out of memory");
  s->m = m;
  s->device = device;
  s->threads = threads;
  snprintf(s->kernel, sizeof s->kernel, "%s", kernel);
  s->be = tw_backend_find(kernel);
  s->src = malloc((size_t)(job->nsources ? job->nsources : 1) * sizeof *s->src);
  s->rec = malloc((size_t)(job->nrec ? job->nrec : 1) * sizeof *s->rec);
  double t = tw_wall_seconds();
  tw_status st = s->be ? TW_OK : tw_error_set(err, TW_EINVAL, "unknown kernel \"%s\"", kernel);
  if (!st && (!s->src || !s->rec)) st = tw_error_set(err, TW_ENOMEM, "out of memory for %ld receivers", job->nrec);
  if (!st && s->be->needs_gpu) st = tw_gpu_init(device, err); /* this thread's device; the context exists */
  tw_phases_add(ph, "gpu init", lap(&t));
  if (!st) st = tw_problem_borrow(m->pb, &s->pb, err);
  if (!st && threads > 0) s->pb->threads = threads;
#ifdef _OPENMP
  /* the backend's set-up (zeroing, comparing planes) in the session's share of the cores too: a
   * survey creates its sessions from several threads at once */
  if (!st && s->pb->threads > 0) omp_set_num_threads(s->pb->threads);
#endif
  /* The backend's own parts go to ph through the problem (solver-internal). */
  if (!st) {
    s->pb->phases = ph;
    st = s->be->create(s->pb, &s->bst, err);
    s->pb->phases = NULL;
    if (st) s->bst = NULL;
    if (st) tw_problem_axes_note(s->pb, err);
  }
  tw_phases_add(ph, "backend", lap(&t));
  if (st) {
    tw_session_destroy(s);
    return st;
  }
  *out = s;
  return TW_OK;
}

typedef struct {
  const tw_job *job;
  const tw_run_hooks *hooks;
  tw_session *s;
  tw_problem *pb;
  const tw_backend_ops *be;
  void *bst;
  tw_output *out;
  long max_chunk_samples;
  int snap_lo[3], snap_cnt[3];
  tw_run_ckpt *ck;           /* NULL: no checkpoints */
  long t0;                   /* the first step (the checkpoint's when resumed) */
} run_ctx;

/* traces[rec][count] = Σ_t w_t · tap_t for the count samples in taps[sample][ntap]. */
static void combine_traces(const tw_problem *pb, const float *taps, long count, float *traces) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < pb->nrec; r++) {
    float v[8];
    for (long s = 0; s < count; s++) {
      for (int t = 0; t < pb->rec_ntap[r]; t++) v[t] = taps[s * pb->ntap + pb->rec_tap[r][t]];
      traces[r * count + s] = tw_receiver_combine(pb->rec_ntap[r], pb->rec_w[r], v);
    }
  }
}

/* The snapshot box (the job's axes) from the backend (the kernels' axes: with swap_xy the box is
 * extracted with x and y exchanged, then transposed back). */
static tw_status extract_snapshot(run_ctx *c, tw_error *err) {
  const tw_problem *pb = c->pb;
  const int *n = c->snap_cnt;
  int lo[3], klo[3], kn[3];
  tw_xy_cell(pb->swap_xy, c->snap_lo, lo);
  for (int a = 0; a < 3; a++) klo[a] = pb->g.lo[a] + lo[a];
  tw_xy_cell(pb->swap_xy, n, kn);
  if (!pb->swap_xy) return c->be->extract(c->bst, klo, kn, c->job->snap_decimate, c->s->snap, err);
  tw_status st = c->be->extract(c->bst, klo, kn, c->job->snap_decimate, c->s->snap_k, err);
  if (st) return st;
  const size_t nz = (size_t)n[2];
#pragma omp parallel for schedule(static)
  for (int x = 0; x < n[0]; x++)
    for (int y = 0; y < n[1]; y++)
      memcpy(c->s->snap + ((size_t)x * n[1] + y) * nz, c->s->snap_k + ((size_t)y * n[0] + x) * nz, nz * sizeof(float));
  return TW_OK;
}

/* The extracted snapshot (c->s->snap) into the output and the checkpoint journal. */
static tw_status store_snapshot(run_ctx *c, int isnap, long step, tw_error *err) {
  tw_status st = tw_output_write_snapshot(c->out, isnap, step, c->s->snap, err);
  if (!st && c->ck)
    st = tw_run_ckpt_snapshot(c->ck, isnap, step, (size_t)c->snap_cnt[0] * c->snap_cnt[1] * c->snap_cnt[2],
                              c->s->snap, err);
  return st;
}

/* Traces of samples [first, first + count), v[nrec][count], to the output (and the checkpoint
 * journal). */
static tw_status write_traces(run_ctx *c, long first, long count, const float *v, tw_error *err) {
  tw_status st = tw_output_write_traces(c->out, first, count, v, err);
  if (!st && c->ck) st = tw_run_ckpt_traces(c->ck, first, count, c->pb->nrec, v, err);
  return st;
}

/* A snapshot stored while the kernel computes the next blocks. With a GPU kernel the host's cores
 * are idle during an advance, and storing can cost more than a block (a 1000 x 1000 x 500
 * snapshot: 2 GB transposed to the file's order and written, ~1.5 s on an H200's host; 100 steps
 * of that grid at order 8: 0.26 s). One store at a time, from the session's one snapshot buffer:
 * the time loop settles it (snap_settle) before anything else touches the output, the journal or
 * the buffer — the next snapshot, a checkpoint, the end of the loop — so HDF5 (not thread-safe in
 * every build) is never called from two threads at once, and a failed store stops the run at the
 * next settle as a synchronous one would have stopped it. The blocks' traces in the meantime are
 * held (put_traces: up to the traces buffer's bound, c->max_chunk_samples) and written after the
 * store, in order. With a CPU kernel the store competes with the kernel's threads for the cores,
 * and still pays: configs/realistic.cfg on 2 cores, cpu, 12 steps, 3 snapshots: 24.0 s → 14.9 s
 * (computing 5.7 → 7.5 s, output 16.0 → 6.3 s; docs/performance.md, session 25).
 * TW_SNAPSHOT_ASYNC=0 stores in between, as before (a test switch: the tests compare both). */
typedef struct {
  run_ctx *c;
  int on;                    /* stores go to the thread */
  int running;               /* a thread was started and not yet joined */
  atomic_int done;           /* its store has returned */
  pthread_t th;
  int isnap;
  long step;
  tw_status st;
  tw_error err;
  float *held;               /* [nrec][c->max_chunk_samples]: traces held while it runs */
  long held_first, held_count;
  double pause;              /* testing: TW_SNAPSHOT_STORE_PAUSE=SECONDS before each store, so that
                                the next blocks' traces are held (tests/cli/output_safety.sh) */
} snap_store;

static void *snap_thread(void *arg) {
  snap_store *w = arg;
#ifdef _OPENMP
  /* A new thread starts from OpenMP's defaults (every core), not from the session's setting: the
   * store's parallel regions (the transposition into the file's order) took all cores on top of
   * the kernel's solver.threads, and in a survey each worker's store took them all again. */
  if (w->c->pb->threads > 0) omp_set_num_threads(w->c->pb->threads);
#endif
  if (w->pause > 0) {
    struct timespec ts = {(time_t)w->pause, (long)((w->pause - (double)(time_t)w->pause) * 1e9)};
    nanosleep(&ts, NULL);
  }
  w->st = store_snapshot(w->c, w->isnap, w->step, &w->err);
  atomic_store(&w->done, 1);
  return NULL;
}

/* Wait for the store in flight, if any (its failure becomes the loop's), then write the traces
 * held meanwhile. */
static tw_status snap_settle(void *arg, tw_error *err) {
  snap_store *w = arg;
  if (w->running) {
    pthread_join(w->th, NULL);
    w->running = 0;
    if (w->st) {
      *err = w->err;
      w->held_count = 0;
      return w->st;
    }
  }
  if (!w->held_count) return TW_OK;
  const long nrec = w->c->pb->nrec, M = w->c->max_chunk_samples, n = w->held_count;
  for (long r = 1; r < nrec; r++) memmove(w->held + r * n, w->held + r * M, (size_t)n * sizeof(float));
  w->held_count = 0;
  return write_traces(w->c, w->held_first, n, w->held, err);
}

/* This block's traces (c->s->traces, [nrec][count]): held while a store runs and they fit the
 * holding buffer, else written (after the store settles). */
static tw_status put_traces(run_ctx *c, snap_store *w, long first, long count, tw_error *err) {
  const long nrec = c->pb->nrec, M = c->max_chunk_samples;
  if (w->running && !atomic_load(&w->done) && w->held_count + count <= M) {
    if (!w->held) w->held = tw_alloc_large((size_t)nrec * (size_t)M * sizeof(float));
    if (w->held) {
      if (!w->held_count) w->held_first = first;
      for (long r = 0; r < nrec; r++)
        memcpy(w->held + r * M + w->held_count, c->s->traces + r * count, (size_t)count * sizeof(float));
      w->held_count += count;
      return TW_OK;
    }
  }
  tw_status st = snap_settle(w, err);
  if (!st) st = write_traces(c, first, count, c->s->traces, err);
  return st;
}

/* Snapshot isnap (step) out of the backend, then stored — by the thread when w->on (it returns at
 * once), else here. The store in flight must be settled first. */
static tw_status write_snapshot(run_ctx *c, snap_store *w, int isnap, long step, tw_error *err) {
  tw_status st = extract_snapshot(c, err);
  if (st) {
    c->s->broken = 1;
    return st;
  }
  if (w->on) {
    w->isnap = isnap, w->step = step, w->st = TW_OK;
    atomic_store(&w->done, 0);
    /* The thread is born with every signal blocked: a stop request (SIGINT, SIGTERM, ...) goes to
     * the threads that handle it, never interrupts the store's writes. */
    sigset_t all, old;
    sigfillset(&all);
    const int masked = pthread_sigmask(SIG_BLOCK, &all, &old) == 0;
    const int made = pthread_create(&w->th, NULL, snap_thread, w) == 0;
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (made) {
      w->running = 1;
      return TW_OK;
    }
  }
  return store_snapshot(c, isnap, step, err); /* (no thread to be had: here) */
}

/* A survey shot's stamp (with the root attribute "shot", its index): what a rerun compares to skip
 * it (tw_shot_stamp_read). */
static tw_status stamp_shot(tw_output *o, const tw_job *job, const tw_shot *shot, tw_error *err) {
  tw_status st = tw_output_set_attr_doubles(o, "source_position", 3, shot->pos, err);
  if (!st) st = tw_output_set_attr_string(o, "job_hash", shot->hash ? shot->hash : "", err);
  if (!st) st = tw_output_set_attr_long(o, "shot_count", job->nshots, err);
  if (!st) st = tw_output_set_attr_string(o, "receiver_mode", job->rec_moving ? "moving" : "fixed", err);
  return st;
}

/* The output stores the model's range (and, with output.model, the model itself: the medium kept
 * it whole for that). */
static tw_status open_output(run_ctx *c, const char *path, const tw_shot *shot, tw_error *err) {
  const tw_job *job = c->job;
  tw_output_desc d = {0};
  d.vp_min = c->s->m->vmin;
  d.vp_max = c->s->m->vmax;
  d.vp = job->output_model && c->s->m->model ? c->s->m->model->vp : NULL;
  d.shot = shot ? shot->index : 0;
  d.job = job;
  d.path = path;
  d.role = shot ? TW_OUTPUT_SHOT : TW_OUTPUT_RUN;
  d.kernel = c->s->kernel;
  d.dt = job->dt;
  d.steps = job->steps;
  d.nrec = job->nrec;
  d.rec = (const double (*)[3])c->s->rec;
  d.nsamples = c->pb->nsamples;
  d.nsrc = job->nsources;
  d.src = (const double (*)[3])c->s->src;
  d.wavelets = c->pb->wavelets;
  d.nsnap = job->nsnap;
  tw_snapshot_box(job, c->snap_lo, c->snap_cnt);
  memcpy(d.snap_lo, c->snap_lo, sizeof d.snap_lo);
  memcpy(d.snap_n, c->snap_cnt, sizeof d.snap_n);
  d.snap_dec = job->snap_decimate > 0 ? job->snap_decimate : 1;
  /* where the sources and receivers act (this shot's), beside their requested coordinates */
  tw_points_at src_at = {0}, rec_at = {0};
  tw_grid ug; /* the job's axes (the problem's grid is the kernels': tw_grid_oriented) */
  tw_grid_of_job(job, &ug);
  tw_status st = tw_points_at_compute_at(job, &ug, 0, (const double (*)[3])c->s->src, &src_at, err);
  if (!st) st = tw_points_at_compute_at(job, &ug, 1, (const double (*)[3])c->s->rec, &rec_at, err);
  d.src_at = &src_at;
  d.rec_at = &rec_at;
  if (!st) st = tw_output_create(&d, &c->out, err);
  if (!st && shot) st = stamp_shot(c->out, job, shot, err);
  tw_points_at_free(&src_at);
  tw_points_at_free(&rec_at);
  return st;
}

/* The user's request after a block (TW_RUN_GO, _STOP or _SUSPEND; a suspend without checkpointing
 * stops). */
static int poll_stop(const run_ctx *c) {
  const int stop = c->hooks && c->hooks->should_stop ? c->hooks->should_stop(c->hooks->user) : TW_RUN_GO;
  return stop == TW_RUN_SUSPEND && !c->ck ? TW_RUN_STOP : stop;
}

/* Advance to the end, block by block. */
static tw_status time_loop(run_ctx *c, tw_run_report *rep, tw_error *err) {
  const tw_problem *pb = c->pb;
  const double cells = (double)tw_grid_cells(&pb->g);
  const long bs = c->be->block_steps ? c->be->block_steps(c->bst) : 1;
  long chunk = bs, t = c->t0;
  tw_finite_watch fw = {c->t0, 0.0, 0.0};
  int isnap = 0;
  while (isnap < c->job->nsnap && c->job->snap_steps[isnap] <= t) isnap++; /* resumed: written before */
  const char *as = getenv("TW_SNAPSHOT_ASYNC");
  const char *ap = getenv("TW_SNAPSHOT_STORE_PAUSE");
  snap_store w = {.c = c, .on = !(as && strcmp(as, "0") == 0), .pause = ap ? atof(ap) : 0.0};
  tw_status st = TW_OK;
  float *taps = c->s->taps, *traces = c->s->traces;
  /* Sample 0 is p⁰ = 0 (the medium is at rest). */
  memset(traces, 0, (size_t)pb->nrec * sizeof(float));
  if (pb->nrec && t == 0) st = write_traces(c, 0, 1, traces, err);
  const double t_start = tw_wall_seconds();
  if (t > 0 && c->hooks && c->hooks->progress) c->hooks->progress(c->hooks->user, t, pb->steps, 0.0, 0.0);
  while (!st && t < pb->steps) {
    /* The next cut — a snapshot, a checkpoint, the end — in equal blocks (tw_even_height): calls of
     * chunk / bs of them, as many blocks as bs would take, none short. */
    long cut = pb->steps;
    if (isnap < c->job->nsnap && c->job->snap_steps[isnap] < cut) cut = c->job->snap_steps[isnap];
    if (c->ck && tw_run_ckpt_next_step(c->ck, t) < cut) cut = tw_run_ckpt_next_step(c->ck, t);
    long end = t + (bs > 1 ? chunk / bs * tw_even_height((int)bs, cut - t) : chunk);
    if (end > cut) end = cut;
    /* The taps buffer bounds the block length too. */
    long first, count;
    tw_samples_in(pb, t, end - t, &first, &count);
    while (count > c->max_chunk_samples) {
      end = t + (end - t) / 2;
      tw_samples_in(pb, t, end - t, &first, &count);
    }
    const double t0 = tw_wall_seconds();
    st = c->be->advance(c->bst, t, end - t, taps, err);
    if (!st) st = tw_finite_check(&fw, c->be, c->bst, pb, c->job->path, end, tw_wall_seconds() - t0, err);
    const double dtw = tw_wall_seconds() - t0;
    rep->compute_s += dtw;
    if (st) {
      c->s->broken = 1;
      break;
    }
    const double t1 = tw_wall_seconds();
    if (count && pb->nrec) {
      combine_traces(pb, taps, count, traces);
      st = put_traces(c, &w, first, count, err);
    }
    int stop = TW_RUN_GO, unstored = 0;
    if (!st && isnap < c->job->nsnap && c->job->snap_steps[isnap] == end) {
      st = snap_settle(&w, err);
      /* A stop asked while the last store was waited for (seconds for a large box) discards the
       * output: start no new store, which the stop would then wait for too. A suspend keeps it
       * (a resumed run takes the snapshots up to its checkpoint's step as written). */
      if (!st) stop = poll_stop(c);
      unstored = !st && stop == TW_RUN_STOP;
      if (!st && !unstored) st = write_snapshot(c, &w, isnap, end, err);
      isnap++;
    }
    rep->output_s += tw_wall_seconds() - t1;
    /* Aim the next block at ~0.5 s of work, in whole multiples of the kernel's block. */
    const double rate = dtw > 0 ? (end - t) / dtw : 1e9;
    long want = (long)(0.5 * rate / bs) * bs;
    chunk = want < bs ? bs : (want > 64 * chunk ? 64 * chunk : want);
    t = end;
    if (c->hooks && c->hooks->progress)
      c->hooks->progress(c->hooks->user, t, pb->steps, tw_wall_seconds() - t_start,
                         rep->compute_s > 0 ? cells * (t - c->t0) / rep->compute_s : 0.0);
    if (!st && stop == TW_RUN_GO) stop = poll_stop(c);
    /* No checkpoint of a step whose snapshot was not stored: its journal would lack the snapshot, so
     * --resume would refuse it, and it would have replaced the previous checkpoint, which resumes. */
    if (!st && c->ck && !unstored)
      st = tw_run_ckpt_block_end(c->ck, t, stop == TW_RUN_SUSPEND, snap_settle, &w, rep, err);
    if (!st && stop == TW_RUN_STOP)
      st = tw_error_set(err, TW_EINTR, "stopped at step %ld of %ld; no output written", t, pb->steps);
  }
  /* the last store: the output is complete only with it (a loop that failed keeps its own error) */
  const double t1 = tw_wall_seconds();
  tw_error e2;
  const tw_status st2 = snap_settle(&w, &e2);
  if (!st && st2) st = st2, *err = e2;
  free(w.held);
  rep->output_s += tw_wall_seconds() - t1;
  return st;
}

/* A buffer of at least n floats (grow only: a survey's shots reuse it). */
static int ensure(float **p, size_t *cap, size_t n) {
  if (n <= *cap && *p) return 1;
  free(*p);
  *p = tw_alloc_large((n ? n : 1) * sizeof(float)); /* a snapshot can be GBs: huge pages fault faster */
  *cap = *p ? n : 0;
  return *p != NULL;
}

static tw_status alloc_buffers(run_ctx *c, tw_error *err) {
  const tw_problem *pb = c->pb;
  tw_session *s = c->s;
  /* Taps of up to max_chunk_samples samples: at most 64 MiB of taps and 64 MiB of traces. */
  long per = (long)((pb->ntap > pb->nrec ? pb->ntap : pb->nrec) + 1);
  c->max_chunk_samples = (64L << 20) / (4 * per);
  if (c->max_chunk_samples < 1) c->max_chunk_samples = 1;
  if (c->max_chunk_samples > pb->nsamples) c->max_chunk_samples = pb->nsamples;
  const size_t snap = (size_t)c->snap_cnt[0] * c->snap_cnt[1] * c->snap_cnt[2];
  if (!ensure(&s->taps, &s->taps_cap, (size_t)c->max_chunk_samples * (size_t)(pb->ntap + 1)) ||
      !ensure(&s->traces, &s->traces_cap, (size_t)c->max_chunk_samples * (size_t)(pb->nrec + 1)) ||
      !ensure(&s->snap, &s->snap_cap, c->job->nsnap ? snap : 1) ||
      (pb->swap_xy && !ensure(&s->snap_k, &s->snap_k_cap, c->job->nsnap ? snap : 1)))
    return tw_error_set(err, TW_ENOMEM, "out of memory for output buffers");
  return TW_OK;
}

/* The shot's tables into the problem and the backend: its sources always, the receivers when they
 * move with the shot or were never set; then the backend's reset (both levels to zero). */
static tw_status shot_tables(tw_session *s, const tw_shot *shot, tw_error *err) {
  const tw_job *job = s->m->job;
  const double zero[3] = {0, 0, 0};
  const int moving = shot && job->rec_moving;
  const double *offset = moving ? shot->pos : zero;
  for (int i = 0; i < job->nsources; i++) memcpy(s->src[i], shot ? shot->pos : job->sources[i].pos, sizeof s->src[i]);
  for (long r = 0; r < job->nrec; r++)
    for (int a = 0; a < 3; a++) s->rec[r][a] = job->rec[r][a] + offset[a];
  unsigned what = TW_RESET_SOURCES;
  tw_status st = tw_problem_set_sources(s->pb, job, (const double (*)[3])s->src, err);
  if (!st && (!s->rec_ready || moving)) {
    what |= TW_RESET_RECEIVERS;
    s->rec_ready = 0;
    st = tw_problem_set_receivers(s->pb, job, offset, err);
  }
  if (!st && (st = s->be->reset(s->bst, what, err))) s->broken = 1;
  /* Fixed receivers stay for the next shot; after a failure everything is set again. */
  s->rec_ready = !st && !moving;
  if (st && shot) tw_error_prefix(err, "shot %ld", shot->index);
  return st;
}

tw_status tw_session_run(tw_session *s, const tw_shot *shot, const char *output_path, const tw_run_hooks *hooks,
                         tw_run_report *rep, tw_error *err) {
  const tw_job *job = s->m->job;
  const double wall0 = s->wall_origin > 0 ? s->wall_origin : tw_wall_seconds();
  memset(rep, 0, sizeof *rep);
  snprintf(rep->kernel, sizeof rep->kernel, "%s", s->kernel);
#ifdef _OPENMP
  /* The parallel regions this thread starts (the CPU kernels): the session's share of the cores,
   * or solver.threads. */
  if (s->pb->threads > 0) omp_set_num_threads(s->pb->threads);
#endif
  if (s->be->needs_gpu) {
    tw_status st = tw_gpu_init(s->device, err); /* the calling thread's device (cheap once set) */
    if (st) return st;
  }
  run_ctx c = {0};
  int kept = 0; /* the output refused at publishing, the result kept whole (tw_output_close_kept) */
  c.job = job;
  c.hooks = hooks;
  c.s = s;
  c.pb = s->pb;
  c.be = s->be;
  c.bst = s->bst;
  c.ck = s->ck;
  double t = tw_wall_seconds();
  tw_status st = shot_tables(s, shot, err);
  tw_phases_add(&rep->phases, "shot tables", lap(&t));
  if (!st) st = open_output(&c, output_path, shot, err);
  if (!st) st = alloc_buffers(&c, err);
  tw_phases_add(&rep->phases, "output open", lap(&t));
  /* With checkpoints: resume (the fields into the backend, the journal into the output) or start a
   * new journal. */
  if (!st && c.ck) {
    st = tw_run_ckpt_start(c.ck, s->pb, s->be, s->bst, c.out, s->kernel, s->ckpt_host_bytes, &c.t0, rep, err);
    tw_phases_add(&rep->phases, c.t0 ? "checkpoint read" : "checkpoint journal", lap(&t));
  }
  if (!st) st = time_loop(&c, rep, err);
  tw_phases_add(&rep->phases, "time loop", lap(&t));
  rep->steps = job->steps;
  rep->dt = job->dt;
  rep->cell_updates = (double)tw_grid_cells(&s->pb->g) * (double)(job->steps - c.t0);
  rep->gcells_per_s = rep->compute_s > 0 ? rep->cell_updates / rep->compute_s / 1e9 : 0;
  if (s->be->report) s->be->report(s->bst, rep);
  if (s->pb->swap_xy) { /* the report's grid words (x-planes, ...) are the kernels' */
    const size_t l = strlen(rep->note);
    snprintf(rep->note + l, sizeof rep->note - l, "%sthe kernels sweep the job's y axis (longer than x) as their x",
             l ? "; " : "");
  }
  if (!st) {
    rep->wall_s = tw_wall_seconds() - wall0;
    st = tw_output_set_attr_double(c.out, "wall_time", rep->wall_s, err);
    if (!st) st = tw_output_set_attr_double(c.out, "gcells_per_s", rep->gcells_per_s, err);
    if (!st) st = tw_output_set_attr_double(c.out, "compute_time", rep->compute_s, err);
    if (!st && c.t0) st = tw_output_set_attr_double(c.out, "resumed_at_step", (double)c.t0, err);
    if (!st) {
      st = tw_output_close_kept(c.out, &kept, err);
      c.out = NULL;
    }
  }
  if (c.out) tw_output_abort(c.out);
  /* After the output is complete: only then go the checkpoint files; also when it was refused at
   * publishing but kept whole, the run complete (--resume would compute its end again: no use). */
  tw_run_ckpt_close(c.ck, kept ? TW_OK : st, rep, err);
  s->ck = NULL;
  tw_phases_add(&rep->phases, "output close", lap(&t));
  rep->wall_s = tw_wall_seconds() - wall0;
  return st;
}

/* ---------------------------------------------------------------- one job */

/* The first CUDA call in a thread of its own, while the calling thread builds the model. */
typedef struct {
  int device;
  tw_status st;
  tw_error err;
} gpu_warmup;

static void *gpu_warmup_main(void *arg) {
  gpu_warmup *w = arg;
  w->st = tw_gpu_init(w->device, &w->err);
  return NULL;
}

tw_status tw_run_job(tw_job *job, const char *output_path, const tw_run_hooks *hooks, tw_run_report *rep,
                     tw_error *err) {
  const double wall0 = tw_wall_seconds();
  memset(rep, 0, sizeof *rep);
  tw_phases setup = {0};
  tw_medium *m = NULL;
  tw_session *s = NULL;
  tw_velocity *v = NULL;
  tw_validation val = {0};
  double t = tw_wall_seconds();
  /* The checkpoint first: it measures the host memory available before the job allocates anything. */
  tw_run_ckpt *ck = NULL;
  tw_status st = tw_run_ckpt_open(job, output_path, hooks && hooks->resume, &ck, err);
  /* The first CUDA call (the context) in a thread of its own while the model is read and checked. */
  char kernel[32] = "";
  gpu_warmup warm = {0, TW_OK, {0}};
  pthread_t th;
  const int warming = !st && tw_kernel_resolve(job->kernel, job, kernel, sizeof kernel, NULL) == TW_OK &&
                      tw_kernel_is_gpu(kernel) && pthread_create(&th, NULL, gpu_warmup_main, &warm) == 0;
  /* What `check` validates (kernel, memory, the output's name and lock, model, wavelets, ...). */
  if (!st) st = tw_job_validate(job, output_path, TW_VALIDATE_RUN, &val, &v, err);
  tw_phases_add(&setup, "model (validation)", lap(&t));
  snprintf(rep->kernel, sizeof rep->kernel, "%s", val.kernel);
  if (!st) tw_validation_tell(&val, hooks);
  if (!st) st = medium_from(job, v, job->output_model || ck, &m, &setup, err);
  else tw_velocity_destroy(v);
  if (warming) {
    t = tw_wall_seconds();
    pthread_join(th, NULL);
    tw_phases_add(&setup, "gpu init (rest)", tw_wall_seconds() - t); /* what the model did not hide */
    if (!st && warm.st) st = tw_error_set(err, warm.st, "%s", warm.err.msg);
  }
  if (!st && ck) st = tw_run_ckpt_ident(ck, job, m->model, m->pb, err); /* hashes the model's values */
  if (!st && ck && !job->output_model) tw_velocity_destroy(m->model), m->model = NULL;
  if (!st) st = tw_session_create(m, val.kernel, 0, 0, &s, &setup, err);
  if (!st) {
    s->wall_origin = wall0;
    s->ck = ck, ck = NULL; /* the shot resumes or journals, and closes it */
    s->ckpt_host_bytes = val.est.host_bytes;
    st = tw_session_run(s, NULL, output_path, hooks, rep, err);
    tw_phases shot = rep->phases; /* the set-up first, then the shot's phases */
    rep->phases = setup;
    for (int i = 0; i < shot.n; i++) tw_phases_add(&rep->phases, shot.e[i].name, shot.e[i].s);
  } else {
    rep->phases = setup;
    rep->steps = job->steps;
    rep->dt = job->dt;
  }
  tw_run_ckpt_close(ck, st, rep, err); /* failed before the shot took it: the checkpoint files stay */
  t = tw_wall_seconds();
  tw_session_destroy(s);
  tw_medium_destroy(m);
  tw_validation_free(&val); /* the output's lock: held until both files are published */
  tw_phases_add(&rep->phases, "teardown", lap(&t));
  rep->wall_s = tw_wall_seconds() - wall0;
  return st;
}
