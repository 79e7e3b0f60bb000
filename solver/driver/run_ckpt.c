/* run_ckpt.c — the run driver's checkpoints (run_ckpt.h has the sequence; tw_io.h the files).
 *
 * What makes a resume bitwise: every kernel's result depends only on the two time levels at a
 * block boundary (not on where blocks end: the driver already sizes them by timing), the sources'
 * S^n and the receivers' taps are functions of the step, and the backends rebuild whatever else they
 * keep (gpu-stepwise's saved older level at source cells) from the loaded levels. So a checkpoint
 * is both levels plus the output so far.
 *
 * Cost: with a background copy (8 bytes per cell of host memory), the steps stand still only while
 * the backend copies both levels into it (a memcpy, or a device-to-host copy); a thread writes the
 * file meanwhile. Without room for the copy the write is synchronous, chunk by chunk. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run_ckpt.h"

struct tw_run_ckpt {
  char *path, *jpath;
  const tw_job *job;
  int resume;
  tw_ckpt_info found;        /* resume: the checkpoint's header */
  tw_ckpt_ident id;          /* this job's identity */
  uint64_t run_id;
  const tw_problem *pb;
  const tw_backend_ops *be;
  void *bst;
  char kernel[32];
  tw_ckpt_writer *w;
  tw_journal *j;
  tw_output_lock *lock;      /* "<ckpt>.lock": one run per checkpoint (NULL: not taken yet) */
  double last;               /* wall clock of the last checkpoint (or the start) */
  double t_start;            /* wall clock at start */
  int started;               /* start succeeded: checkpoints under path with run_id are this run's */
  double avail;              /* host memory available before the job allocated anything */
  /* resume: what the journal replayed */
  tw_output *out;
  long samples, snaps;
};

void tw_checkpoint_plan(const tw_grid *g, double host_bytes, double avail, tw_ckpt_plan *plan) {
  const double copy = 8.0 * (double)tw_grid_cells(g);
  if (avail <= 0) avail = (double)tw_host_memory_available();
  const char *sync = getenv("TW_CHECKPOINT_SYNC");
  plan->bytes = (double)tw_ckpt_file_bytes(g->N);
  /* Room for the copy beside the job and 1 GiB (or 5 %) to spare for the page cache and the rest. */
  const double spare = avail * 0.05 > 1073741824.0 ? avail * 0.05 : 1073741824.0;
  plan->background = !(sync && atoi(sync) == 1) && avail > 0 && host_bytes + copy + spare <= avail;
  plan->copy_bytes = plan->background ? copy : 0.0;
}

static void date_of(double unix_s, char *buf, size_t n) {
  time_t t = (time_t)unix_s;
  struct tm tm;
  if (!localtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm)) snprintf(buf, n, "an unknown time");
}

/* The checkpoint's lock ("<ckpt>.lock", as an output's): two runs of other outputs may name one
 * checkpoint.file, and the second truncated the first's journal, wrote its checkpoints over the
 * first's and, on completing, removed them. Where it cannot be created (a missing or read-only
 * folder: TW_EIO, and the validation names checkpoint.file) the start takes it. */
static tw_status take_lock(tw_run_ckpt *c, tw_error *err) {
  tw_error e = {0};
  tw_status st = tw_output_lock_take(c->path, TW_OUTPUT_RUN, &c->lock, &e);
  if (st == TW_EBUSY) {
    const long pid = tw_output_lock_holder(c->path);
    char who[48] = "its process unknown";
    if (pid > 0) snprintf(who, sizeof who, "process %ld", pid);
    return tw_error_set(err, TW_EBUSY, "checkpoint '%s' is in use by another torrewave run (%s, lock file '%s.lock'): "
                        "two runs cannot share a checkpoint; wait for it to finish, or give this run its own "
                        "checkpoint.file", c->path, who, c->path);
  }
  if (st) *err = e;
  return st;
}

tw_status tw_run_ckpt_open(const tw_job *job, const char *output, int resume, tw_run_ckpt **out, tw_error *err) {
  *out = NULL;
  if (!job->ckpt && !resume) return TW_OK;
  if (!job->ckpt)
    return tw_error_set(err, TW_EINVAL, "%s: --resume: the job has no checkpoint group (checkpoint = { every = 500; "
                        "}), so it has no checkpoint to resume", job->path);
  tw_run_ckpt *c = calloc(1, sizeof *c);
  if (!c || !(c->path = tw_checkpoint_path(job, output)) || !(c->jpath = malloc(strlen(c->path) + 9))) {
    tw_run_ckpt_close(c, TW_ENOMEM, NULL, NULL);
    return tw_error_set(err, TW_ENOMEM, "checkpoint: out of memory");
  }
  sprintf(c->jpath, "%s.journal", c->path);
  c->job = job;
  c->resume = resume;
  c->avail = (double)tw_host_memory_available();
  /* A checkpoint named like one of the run's files or an input: that reason first (the file may be
   * there, and "not a checkpoint" would hide why). */
  tw_status st = tw_output_check_ckpt(output, job, err);
  if (!st && (st = take_lock(c, err)) == TW_EIO)
    st = TW_OK, err->msg[0] = '\0'; /* not created: the validation or the start says why */
  const int exists = tw_checkpoint_exists(c->path);
  if (st) {
    /* (said above) */
  } else if (resume && !exists) {
    /* the default name follows the output: a run stopped under another -o left its checkpoint there */
    st = tw_error_set(err, TW_EINVAL, "--resume: no checkpoint '%s'%s%s; run without --resume to start over",
                      c->path, tw_checkpoint_exists(c->jpath) ? " (only its journal: the run stopped before its "
                                                                "first checkpoint)" : "",
                      job->ckpt_file ? "" : " (checkpoint.file is not given: it is the output's name + .ckpt, so a run "
                                            "stopped with another output left its checkpoint under that one's name: "
                                            "resume with that output, or name its checkpoint, e.g. --set "
                                            "'checkpoint.file=\"OTHER.h5.ckpt\"')");
  } else if (resume) {
    st = tw_ckpt_read_info(c->path, &c->found, err);
    if (st) tw_error_prefix(err, "--resume");
  } else if (exists) {
    tw_ckpt_info f;
    tw_error e = {0};
    if (tw_ckpt_read_info(c->path, &f, &e)) {
      st = tw_error_set(err, TW_EINVAL, "checkpoint '%s' already exists and cannot be read (%s): refusing to "
                        "overwrite it; if it is a damaged checkpoint of this job, remove it and '%s' to start over, "
                        "else choose another checkpoint.file", c->path, e.msg, c->jpath);
    } else {
      char when[64];
      date_of(f.written, when, sizeof when);
      st = tw_error_set(err, TW_EINVAL, "checkpoint '%s' already exists (step %ld of %ld, written by %s for '%s' on "
                        "%s): continue it by running the same command with --resume, or remove it and '%s' to "
                        "start over",
                        c->path, f.step, f.id.steps, f.kernel, f.job_path, when, c->jpath);
    }
  }
  if (st) {
    tw_run_ckpt_close(c, st, NULL, NULL);
    return st;
  }
  *out = c;
  return TW_OK;
}

tw_status tw_run_ckpt_ident(tw_run_ckpt *c, const tw_job *job, const tw_velocity *v, const tw_problem *pb,
                            tw_error *err) {
  tw_ckpt_ident_make(job, v->vp, pb->wavelets, &c->id);
  if (!c->resume) return TW_OK;
  tw_status st = tw_ckpt_match(c->path, &c->found, &c->id, err);
  int uN[3]; /* the grid in the job's axes: a checkpoint from before the kernels' axes (tw_grid_oriented) */
  tw_xy_cell(pb->swap_xy, pb->g.N, uN);
  if (!st && pb->swap_xy && !memcmp(c->found.N, uN, sizeof uN))
    st = tw_error_set(err, TW_EMISMATCH, "checkpoint '%s' holds the fields in the job's axes, as torrewave wrote them "
                      "before its kernels swept the longer horizontal axis (here y: they hold x and y exchanged); it "
                      "cannot continue this run: remove it and its journal to start over", c->path);
  else if (!st && memcmp(c->found.N, pb->g.N, sizeof c->found.N))
    st = tw_error_set(err, TW_EMISMATCH, "checkpoint '%s' holds a padded grid of %d x %d x %d cells, this job's is %d "
                      "x %d x %d", c->path, c->found.N[0], c->found.N[1], c->found.N[2], pb->g.N[0], pb->g.N[1], pb->g.N[2]);
  return st ? tw_error_prefix(err, "--resume") : TW_OK;
}

/* ---------------------------------------------------------------- resume */

static tw_status load_planes(void *ctx, int x0, int nx, float *cur, float *prev, tw_error *err) {
  tw_run_ckpt *c = ctx;
  return c->be->load(c->bst, c->found.step, x0, nx, cur, prev, err);
}

static tw_status replay_traces(void *user, long first, long count, const float *traces, tw_error *err) {
  tw_run_ckpt *c = user;
  if (first != c->samples)
    return tw_error_set(err, TW_EFORMAT, "samples %ld.. follow samples ..%ld", first, c->samples - 1);
  c->samples = first + count;
  return tw_output_write_traces(c->out, first, count, traces, err);
}

static tw_status replay_snapshot(void *user, int isnap, long step, const float *data, tw_error *err) {
  tw_run_ckpt *c = user;
  if (isnap != c->snaps) return tw_error_set(err, TW_EFORMAT, "snapshot %d follows %ld", isnap, c->snaps);
  c->snaps++;
  return tw_output_write_snapshot(c->out, isnap, step, data, err);
}

static tw_status resume(tw_run_ckpt *c, tw_output *out, tw_error *err) {
  tw_status st = tw_ckpt_read_fields(c->path, load_planes, c, err);
  if (st) return tw_error_prefix(err, "--resume");
  const tw_problem *pb = c->pb;
  const long t = c->found.step;
  c->out = out;
  c->samples = pb->nrec ? 0 : t / pb->interval + 1; /* no receivers: no trace records */
  int lo[3], cnt[3];
  tw_snapshot_box(c->job, lo, cnt);
  tw_journal_sink sink = {replay_traces, replay_snapshot, c, pb->nrec, (size_t)cnt[0] * cnt[1] * cnt[2]};
  if ((st = tw_journal_resume(c->jpath, &c->found, &sink, &c->j, err))) return tw_error_prefix(err, "--resume");
  long snaps = 0;
  while (snaps < c->job->nsnap && c->job->snap_steps[snaps] <= t) snaps++;
  if (c->samples != t / pb->interval + 1 || c->snaps != snaps)
    return tw_error_set(err, TW_EFORMAT, "--resume: checkpoint journal '%s' holds %ld samples and %ld snapshots; the "
                        "checkpoint of step %ld needs %ld and %ld", c->jpath, c->samples, c->snaps, t,
                        t / pb->interval + 1, snaps);
  c->run_id = c->found.run_id;
  return TW_OK;
}

tw_status tw_run_ckpt_start(tw_run_ckpt *c, const tw_problem *pb, const tw_backend_ops *be, void *bst,
                            tw_output *out, const char *kernel, double host_bytes, long *t0, tw_run_report *rep,
                            tw_error *err) {
  c->pb = pb, c->be = be, c->bst = bst;
  snprintf(c->kernel, sizeof c->kernel, "%s", kernel);
  *t0 = 0;
  tw_status st;
  if (!c->lock && (st = take_lock(c, err))) return st;
  if (c->resume) {
    if ((st = resume(c, out, err))) return st;
    *t0 = rep->resumed_from = c->found.step;
  } else {
    /* A run id ties the journal to its checkpoints; any distinct value per run will do. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->run_id = ((uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
    /* (An old journal without its checkpoint — a run that stopped before its first — is replaced.) */
    if ((st = tw_journal_create(c->jpath, c->run_id, &c->j, err))) return st;
  }
  tw_ckpt_plan plan;
  tw_checkpoint_plan(&pb->g, host_bytes, c->avail, &plan);
  rep->ckpt_background = plan.background;
  rep->ckpt_bytes = plan.bytes;
  c->last = c->t_start = tw_wall_seconds();
  st = tw_ckpt_writer_create(c->path, pb->g.N, plan.background, &c->w, err);
  c->started = !st;
  return st;
}

/* ---------------------------------------------------------------- during the run */

long tw_run_ckpt_next_step(const tw_run_ckpt *c, long t) {
  const long every = c->job->ckpt_every;
  return every > 0 ? (t / every + 1) * every : LONG_MAX;
}

tw_status tw_run_ckpt_traces(tw_run_ckpt *c, long first, long count, long nrec, const float *traces, tw_error *err) {
  return tw_journal_traces(c->j, first, count, nrec, traces, err);
}

tw_status tw_run_ckpt_snapshot(tw_run_ckpt *c, int isnap, long step, size_t n, const float *data, tw_error *err) {
  return tw_journal_snapshot(c->j, isnap, step, n, data, err);
}

static tw_status save_planes(void *ctx, int x0, int nx, float *cur, float *prev, tw_error *err) {
  tw_run_ckpt *c = ctx;
  return c->be->save(c->bst, x0, nx, cur, prev, err);
}

tw_status tw_run_ckpt_block_end(tw_run_ckpt *c, long t, int suspend, tw_status (*settle)(void *ctx, tw_error *err),
                                void *ctx, tw_run_report *rep, tw_error *err) {
  const double now = tw_wall_seconds();
  const tw_job *job = c->job;
  if (t <= 0 || t >= c->pb->steps) return TW_OK;
  const int due = suspend || (job->ckpt_every > 0 && t % job->ckpt_every == 0) ||
                  (job->ckpt_every_seconds > 0 && now - c->last >= job->ckpt_every_seconds);
  if (!due) return TW_OK;
  if (settle) {
    tw_status st = settle(ctx, err);
    if (st) return st;
  }
  tw_ckpt_info info;
  memset(&info, 0, sizeof info);
  info.id = c->id;
  memcpy(info.N, c->pb->g.N, sizeof info.N);
  info.step = t;
  info.run_id = c->run_id;
  tw_journal_position(c->j, &info.journal_len, &info.journal_crc);
  info.compute_s = c->found.compute_s + rep->compute_s;
  info.wall_s = c->found.wall_s + (now - c->t_start);
  info.written = (double)time(NULL);
  snprintf(info.kernel, sizeof info.kernel, "%s", c->kernel);
  snprintf(info.job_path, sizeof info.job_path, "%s", job->path);
  tw_status st = tw_ckpt_writer_submit(c->w, &info, save_planes, c, tw_journal_fd(c->j), err);
  rep->ckpt_taken++;
  if (!st && suspend) st = tw_ckpt_writer_wait(c->w, err);
  rep->ckpt_stall_s += tw_wall_seconds() - now;
  /* testing: TW_CHECKPOINT_PAUSE=SECONDS holds the run after each checkpoint, so that a test's
   * signal sent when a checkpoint appears finds the run still going (tests/cli/checkpoint.sh;
   * a fast run under load could end first). A signal ends the pause. */
  const char *pause = getenv("TW_CHECKPOINT_PAUSE");
  const double p = pause ? atof(pause) : 0.0;
  if (!st && !suspend && p > 0) {
    struct timespec ts = {(time_t)p, (long)((p - (double)(time_t)p) * 1e9)};
    nanosleep(&ts, NULL);
  }
  c->last = tw_wall_seconds();
  if (st) return tw_error_prefix(err, "checkpoint at step %ld", t);
  if (suspend)
    return tw_error_set(err, TW_ESUSPEND, "stopped at step %ld of %ld; checkpoint '%s' written: the same command "
                        "with --resume continues from it", t, c->pb->steps, c->path);
  return TW_OK;
}

void tw_run_ckpt_close(tw_run_ckpt *c, tw_status st, tw_run_report *rep, tw_error *err) {
  if (!c) return;
  if (c->w && rep) {
    const tw_ckpt_stats s = tw_ckpt_writer_stats(c->w);
    rep->checkpoints = s.written;
    rep->ckpt_write_s = s.write_s;
  }
  tw_ckpt_writer_destroy(c->w); /* abandons a write in progress: the previous checkpoint stays whole */
  tw_journal_close(c->j);
  tw_ckpt_info f;
  tw_error e;
  const int ours = c->started && !tw_ckpt_read_info(c->path, &f, &e) && f.run_id == c->run_id;
  if (st == TW_OK) {
    tw_checkpoint_remove(c->path);
  } else if (st != TW_ESUSPEND && ours && err) {
    const size_t len = strlen(err->msg);
    snprintf(err->msg + len, sizeof err->msg - len, " (checkpoint '%s' of step %ld is kept: --resume continues from "
             "it)", c->path, f.step);
  } else if (c->started && !c->resume && !ours) {
    unlink(c->jpath); /* a journal this run began and no checkpoint of it names: of no use */
  }
  tw_output_lock_release(c->lock); /* after the files: another run may take them from here */
  free(c->path), free(c->jpath);
  free(c);
}
