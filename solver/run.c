/* The run driver: job → problem → kernel → output. It owns the time blocks (each ends at a
 * snapshot step, the final step, or a chunk boundary sized for ~0.5 s of work), turns receiver
 * taps into traces (one fixed order for every kernel), and streams traces and snapshots to
 * the HDF5 writer. On error or stop request the output is aborted: nothing under its name.
 * Checkpoints (run_ckpt.h): block ends at checkpoint steps too, every output write journaled, a
 * resumed run starts at the checkpoint's step with the journal replayed into its output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "run_ckpt.h"

typedef struct {
  tw_job *job;
  const tw_run_hooks *hooks;
  tw_problem *pb;
  const tw_backend_ops *be;
  void *bst;
  tw_output *out;
  float *taps, *traces, *snap;
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

static tw_status write_snapshot(run_ctx *c, int isnap, long step, tw_error *err) {
  const tw_grid *g = &c->pb->g;
  int lo[3];
  for (int a = 0; a < 3; a++) lo[a] = g->lo[a] + c->snap_lo[a];
  tw_status st = c->be->extract(c->bst, lo, c->snap_cnt, c->job->snap_decimate, c->snap, err);
  if (!st) st = tw_output_write_snapshot(c->out, isnap, step, c->snap, err);
  if (!st && c->ck)
    st = tw_run_ckpt_snapshot(c->ck, isnap, step, (size_t)c->snap_cnt[0] * c->snap_cnt[1] * c->snap_cnt[2], c->snap,
                              err);
  return st;
}

/* Traces of samples [first, first + count) to the output (and the checkpoint journal). */
static tw_status write_traces(run_ctx *c, long first, long count, tw_error *err) {
  tw_status st = tw_output_write_traces(c->out, first, count, c->traces, err);
  if (!st && c->ck) st = tw_run_ckpt_traces(c->ck, first, count, c->pb->nrec, c->traces, err);
  return st;
}

/* Opened while the velocity model is still at hand: the output stores its range (and, with
 * output.model, the model itself). */
static tw_status open_output(run_ctx *c, const char *path, const char *kernel, const tw_velocity *v, tw_error *err) {
  const tw_job *job = c->job;
  tw_output_desc d = {0};
  d.vp_min = v->vmin;
  d.vp_max = v->vmax;
  d.vp = job->output_model ? v->vp : NULL;
  d.job = job;
  d.path = path;
  d.kernel = kernel;
  d.dt = job->dt;
  d.steps = job->steps;
  d.nrec = job->nrec;
  d.rec = (const double (*)[3])job->rec;
  d.nsamples = c->pb->nsamples;
  d.nsrc = job->nsources;
  double(*src)[3] = malloc((size_t)(job->nsources ? job->nsources : 1) * sizeof *src);
  if (!src) return tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int s = 0; s < job->nsources; s++) memcpy(src[s], job->sources[s].pos, sizeof src[s]);
  d.src = (const double (*)[3])src;
  d.wavelets = c->pb->wavelets;
  d.nsnap = job->nsnap;
  tw_snapshot_box(job, c->snap_lo, c->snap_cnt);
  memcpy(d.snap_lo, c->snap_lo, sizeof d.snap_lo);
  memcpy(d.snap_n, c->snap_cnt, sizeof d.snap_n);
  d.snap_dec = job->snap_decimate > 0 ? job->snap_decimate : 1;
  /* where the sources and receivers act, beside their requested coordinates */
  tw_points_at src_at = {0}, rec_at = {0};
  tw_status st = tw_points_at_compute(job, &c->pb->g, 0, &src_at, err);
  if (!st) st = tw_points_at_compute(job, &c->pb->g, 1, &rec_at, err);
  d.src_at = &src_at;
  d.rec_at = &rec_at;
  if (!st) st = tw_output_create(&d, &c->out, err);
  tw_points_at_free(&src_at);
  tw_points_at_free(&rec_at);
  free(src);
  return st;
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
  tw_status st = TW_OK;
  /* Sample 0 is p⁰ = 0 (the medium is at rest). */
  memset(c->traces, 0, (size_t)pb->nrec * sizeof(float));
  if (pb->nrec && t == 0) st = write_traces(c, 0, 1, err);
  const double t_start = tw_wall_seconds();
  if (t > 0 && c->hooks && c->hooks->progress) c->hooks->progress(c->hooks->user, t, pb->steps, 0.0, 0.0);
  while (!st && t < pb->steps) {
    long end = t + chunk;
    if (isnap < c->job->nsnap && c->job->snap_steps[isnap] < end) end = c->job->snap_steps[isnap];
    if (c->ck && tw_run_ckpt_next_step(c->ck, t) < end) end = tw_run_ckpt_next_step(c->ck, t);
    if (end > pb->steps) end = pb->steps;
    /* The taps buffer bounds the block length too. */
    long first, count;
    tw_samples_in(pb, t, end - t, &first, &count);
    while (count > c->max_chunk_samples) {
      end = t + (end - t) / 2;
      tw_samples_in(pb, t, end - t, &first, &count);
    }
    const double t0 = tw_wall_seconds();
    st = c->be->advance(c->bst, t, end - t, c->taps, err);
    if (!st) st = tw_finite_check(&fw, c->be, c->bst, pb, c->job->path, end, tw_wall_seconds() - t0, err);
    const double dtw = tw_wall_seconds() - t0;
    rep->compute_s += dtw;
    if (st) break;
    if (count && pb->nrec) {
      combine_traces(pb, c->taps, count, c->traces);
      st = write_traces(c, first, count, err);
    }
    if (!st && isnap < c->job->nsnap && c->job->snap_steps[isnap] == end) {
      st = write_snapshot(c, isnap, end, err);
      isnap++;
    }
    /* Aim the next block at ~0.5 s of work, in whole multiples of the kernel's block. */
    const double rate = dtw > 0 ? (end - t) / dtw : 1e9;
    long want = (long)(0.5 * rate / bs) * bs;
    chunk = want < bs ? bs : (want > 64 * chunk ? 64 * chunk : want);
    t = end;
    if (c->hooks && c->hooks->progress)
      c->hooks->progress(c->hooks->user, t, pb->steps, tw_wall_seconds() - t_start,
                         rep->compute_s > 0 ? cells * (t - c->t0) / rep->compute_s : 0.0);
    int stop = !st && c->hooks && c->hooks->should_stop ? c->hooks->should_stop(c->hooks->user) : TW_RUN_GO;
    if (stop == TW_RUN_SUSPEND && !c->ck) stop = TW_RUN_STOP; /* no checkpointing: as today */
    if (!st && c->ck) st = tw_run_ckpt_block_end(c->ck, t, stop == TW_RUN_SUSPEND, rep, err);
    if (!st && stop == TW_RUN_STOP)
      st = tw_error_set(err, TW_EINTR, "stopped at step %ld of %ld; no output written", t, pb->steps);
  }
  return st;
}

static tw_status alloc_buffers(run_ctx *c, tw_error *err) {
  const tw_problem *pb = c->pb;
  /* Taps of up to max_chunk_samples samples: at most 64 MiB of taps and 64 MiB of traces. */
  long per = (long)((pb->ntap > pb->nrec ? pb->ntap : pb->nrec) + 1);
  c->max_chunk_samples = (64L << 20) / (4 * per);
  if (c->max_chunk_samples < 1) c->max_chunk_samples = 1;
  if (c->max_chunk_samples > pb->nsamples) c->max_chunk_samples = pb->nsamples;
  c->taps = malloc((size_t)c->max_chunk_samples * (size_t)(pb->ntap + 1) * sizeof(float));
  c->traces = malloc((size_t)c->max_chunk_samples * (size_t)(pb->nrec + 1) * sizeof(float));
  size_t snap = (size_t)c->snap_cnt[0] * c->snap_cnt[1] * c->snap_cnt[2];
  c->snap = malloc((c->job->nsnap ? snap : 1) * sizeof(float));
  if (!c->taps || !c->traces || !c->snap) return tw_error_set(err, TW_ENOMEM, "out of memory for output buffers");
  return TW_OK;
}

tw_status tw_run_job(tw_job *job, const char *output_path, const tw_run_hooks *hooks, tw_run_report *rep,
                     tw_error *err) {
  const double wall0 = tw_wall_seconds();
  run_ctx c = {0};
  c.job = job;
  c.hooks = hooks;
  memset(rep, 0, sizeof *rep);
  tw_velocity *v = NULL;
  /* The checkpoint first: it measures the host memory available before the job allocates anything. */
  tw_status st = tw_run_ckpt_open(job, output_path, hooks && hooks->resume, &c.ck, err);
  /* What `check` validates (kernel, memory, the output's name and lock, model, wavelets, ...). */
  tw_validation val = {0};
  if (!st) st = tw_job_validate(job, output_path, TW_VALIDATE_RUN, &val, &v, err);
  snprintf(rep->kernel, sizeof rep->kernel, "%s", val.kernel);
  if (!st) tw_validation_tell(&val, hooks);
  const tw_estimate est = val.est;
  if (!st) st = tw_problem_create(job, v, &c.pb, err);
  if (!st && c.ck) st = tw_run_ckpt_ident(c.ck, job, v, c.pb, err); /* hashes the model: before it goes */
  if (!st) st = open_output(&c, output_path, rep->kernel, v, err);
  tw_velocity_destroy(v);
  if (!st) {
    c.be = tw_backend_find(rep->kernel);
    st = c.be->create(c.pb, &c.bst, err);
  }
  if (!st) st = alloc_buffers(&c, err);
  if (!st && c.ck) st = tw_run_ckpt_start(c.ck, c.pb, c.be, c.bst, c.out, rep->kernel, est.host_bytes, &c.t0, rep, err);
  if (!st) st = time_loop(&c, rep, err);
  rep->steps = job->steps;
  rep->dt = job->dt;
  if (c.pb) rep->cell_updates = (double)tw_grid_cells(&c.pb->g) * (double)(job->steps - c.t0);
  rep->gcells_per_s = rep->compute_s > 0 ? rep->cell_updates / rep->compute_s / 1e9 : 0;
  if (c.be && c.bst && c.be->report) c.be->report(c.bst, rep);
  if (!st) {
    rep->wall_s = tw_wall_seconds() - wall0;
    st = tw_output_set_attr_double(c.out, "wall_time", rep->wall_s, err);
    if (!st) st = tw_output_set_attr_double(c.out, "gcells_per_s", rep->gcells_per_s, err);
    if (!st) st = tw_output_set_attr_double(c.out, "compute_time", rep->compute_s, err);
    if (!st && c.t0) st = tw_output_set_attr_double(c.out, "resumed_at_step", (double)c.t0, err);
    if (!st) {
      st = tw_output_close(c.out, err);
      c.out = NULL;
    }
  }
  if (c.out) tw_output_abort(c.out);
  tw_run_ckpt_close(c.ck, st, rep, err); /* after the output is complete: only then go the checkpoint files */
  if (c.bst) c.be->destroy(c.bst);
  tw_problem_destroy(c.pb);
  free(c.taps);
  free(c.traces);
  free(c.snap);
  tw_validation_free(&val); /* the output's lock: held until both files are published */
  rep->wall_s = tw_wall_seconds() - wall0;
  return st;
}
