/* reference.c — the analytic free-space reference of a homogeneous job (docs/design.md §1):
 * p(x, t) = Σ_s s_s(t − r_s/c) / (4π r_s). With the source scaling S = w·s/(dx dy dz) the
 * discrete solution converges to exactly this, so a run of the same job can be compared with it
 * (`torrewave reference JOB -o ref.h5`, then `torrewave compare run.h5 ref.h5`).
 *
 * Positions are those the run uses: tw_place's taps on the model grid, averaged with their
 * weights — the cell itself for "nearest", the true position for "trilinear" (inside the model).
 * That way the reference measures the propagation error, not the snapping of positions. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tw_sources.h"

#define PI 3.14159265358979323846
#define TRACE_BUFFER_FLOATS (16L << 20) /* 64 MiB of traces per write */

struct tw_reference {
  const tw_job *job;
  double c, dt;
  long steps, nsamples, nrec;
  int interval, nsrc;
  double (*rpos)[3];         /* effective receiver positions */
  double (*spos)[3];         /* effective source positions */
  double **wfile;            /* [nsrc]: file wavelets resampled to dt ([steps + 1]), NULL for Ricker */
  float *wavelets;           /* [nsrc][steps + 1] s(t_n), as a run writes them */
};

static const char *model_name(tw_model_type t) {
  static const char *const names[] = {"constant", "layered", "gradient", "hdf5", "raw", "segy"};
  return (t >= 0 && t <= TW_MODEL_SEGY) ? names[t] : "unknown";
}

/* What the analytic solution cannot describe. */
static tw_status check_job(const tw_job *job, tw_error *err) {
  if (job->model.type != TW_MODEL_CONSTANT)
    return tw_error_set(err, TW_EUNSUPPORTED,
                        "%s: model.type is \"%s\": the analytic reference needs a homogeneous model "
                        "(model.type = \"constant\")",
                        tw_job_where(job, job->model.where), model_name(job->model.type));
  if (job->free_surface)
    return tw_error_set(err, TW_EUNSUPPORTED,
                        "%s: boundary.free_surface is true: the analytic reference is the free-space solution "
                        "and has no surface reflection (absorbing layers are fine)",
                        tw_job_where(job, job->free_surface_where));
  if (!(job->model.vp > 0))
    return tw_error_set(err, TW_EINVAL, "%s: model.vp = %g: must be positive", tw_job_where(job, job->model.where),
                        job->model.vp);
  return TW_OK;
}

/* The model grid without absorbing layers: tw_place then gives model cell indices. */
static void model_grid(const tw_job *job, tw_grid *g) {
  memset(g, 0, sizeof *g);
  for (int a = 0; a < 3; a++) {
    g->n[a] = g->N[a] = job->n[a];
    g->d[a] = job->d[a];
    g->origin[a] = job->origin[a];
  }
}

/* Where the run puts a point: the weighted mean of its taps' cell centres. */
static tw_status effective_position(const tw_grid *g, const double pos[3], tw_interp interp, double out[3],
                                    tw_error *err) {
  tw_taps t;
  tw_status st = tw_place(g, pos, interp, 0, &t, err);
  if (st) return st;
  out[0] = out[1] = out[2] = 0.0;
  for (int k = 0; k < t.ntap; k++)
    for (int a = 0; a < 3; a++) out[a] += t.w[k] * (g->origin[a] + t.ijk[k][a] * g->d[a]);
  return TW_OK;
}

static double distance(const double *p, const double *q) {
  const double dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
  return sqrt(dx * dx + dy * dy + dz * dz);
}

static tw_status place_all(tw_reference *ref, tw_error *err) {
  const tw_job *job = ref->job;
  tw_grid g;
  model_grid(job, &g);
  for (int s = 0; s < ref->nsrc; s++) {
    tw_status st = effective_position(&g, job->sources[s].pos, job->sources[s].interp, ref->spos[s], err);
    if (st) return tw_error_prefix(err, "%s: sources[%d].position", tw_job_where(job, job->sources[s].where), s);
  }
  for (long r = 0; r < ref->nrec; r++) {
    tw_status st = effective_position(&g, job->rec[r], job->rec_interp, ref->rpos[r], err);
    char loc[TW_WHERE_MAX + 120];
    if (st) tw_job_point_where(job, job->rec_groups, job->nrec_groups, r, "receiver", loc, sizeof loc);
    if (st) return tw_error_prefix(err, "%s", loc);
  }
  return TW_OK;
}

/* 1/(4π r) is singular at a source: a receiver there has no analytic value to compare with. */
static tw_status check_distances(const tw_reference *ref, tw_error *err) {
  const tw_job *job = ref->job;
  const double rmin = 0.5 * fmin(job->d[0], fmin(job->d[1], job->d[2]));
  for (long r = 0; r < ref->nrec; r++)
    for (int s = 0; s < ref->nsrc; s++) {
      const double dist = distance(ref->rpos[r], ref->spos[s]);
      char loc[TW_WHERE_MAX + 120];
      if (dist < rmin) tw_job_point_where(job, job->rec_groups, job->nrec_groups, r, "receiver", loc, sizeof loc);
      if (dist < rmin)
        return tw_error_set(
            err, TW_EUNSUPPORTED,
            "%s: receiver %ld at (%.10g, %.10g, %.10g) m and sources[%d] at (%.10g, %.10g, %.10g) m are %g m apart "
            "where the run places them (at (%.10g, %.10g, %.10g) and (%.10g, %.10g, %.10g) m: nearest interpolation "
            "puts a point at its cell): the analytic solution 1/(4 pi r) is singular there (needs "
            "r >= d/2 = %g m)",
            loc, r, job->rec[r][0], job->rec[r][1], job->rec[r][2], s, job->sources[s].pos[0], job->sources[s].pos[1],
            job->sources[s].pos[2], dist, ref->rpos[r][0], ref->rpos[r][1], ref->rpos[r][2], ref->spos[s][0],
            ref->spos[s][1], ref->spos[s][2], rmin);
    }
  return TW_OK;
}

/* s(t_n) of every source as a run samples it; file wavelets also kept in double for
 * interpolation between samples. */
static tw_status sample_wavelets(tw_reference *ref, tw_error *err) {
  const tw_job *job = ref->job;
  const size_t len = (size_t)ref->steps + 1;
  for (int s = 0; s < ref->nsrc; s++) {
    float *w = ref->wavelets + (size_t)s * len;
    tw_status st = tw_wavelet_sample(&job->sources[s].wavelet, job->path, ref->dt, ref->steps, w, err);
    if (st) return st; /* the message names the job file, line and sources[s].wavelet */
    if (job->sources[s].wavelet.type != TW_WAVELET_FILE) continue;
    if (!(ref->wfile[s] = malloc(len * sizeof(double))))
      return tw_error_set(err, TW_ENOMEM, "%s: out of memory for sources[%d].wavelet", job->path, s);
    for (size_t n = 0; n < len; n++) ref->wfile[s][n] = w[n];
  }
  return TW_OK;
}

static tw_status alloc_reference(tw_reference *ref, tw_error *err) {
  const size_t nsrc = (size_t)(ref->nsrc ? ref->nsrc : 1), nrec = (size_t)(ref->nrec ? ref->nrec : 1);
  ref->rpos = malloc(nrec * sizeof *ref->rpos);
  ref->spos = malloc(nsrc * sizeof *ref->spos);
  ref->wfile = calloc(nsrc, sizeof *ref->wfile);
  ref->wavelets = malloc(nsrc * ((size_t)ref->steps + 1) * sizeof(float));
  if (!ref->rpos || !ref->spos || !ref->wfile || !ref->wavelets)
    return tw_error_set(err, TW_ENOMEM, "%s: out of memory for the reference (%ld receivers, %d sources, %ld steps)",
                        ref->job->path, ref->nrec, ref->nsrc, ref->steps);
  return TW_OK;
}

tw_status tw_reference_create(tw_job *job, tw_reference **out, tw_error *err) {
  *out = NULL;
  tw_status st = check_job(job, err);
  /* The velocity the run has: the model is float32 (io/model.c), and the run's dt comes from that
   * float's range. The job's double (2000.1 m/s) gave another dt, and compare refused the pair. */
  const double c = (float)job->model.vp;
  if (!st) st = tw_job_finalize(job, c, c, err);
  if (st) return st;
  tw_reference *ref = calloc(1, sizeof *ref);
  if (!ref) return tw_error_set(err, TW_ENOMEM, "%s: out of memory", job->path);
  ref->job = job;
  ref->c = c;
  ref->dt = job->dt;
  ref->steps = job->steps;
  ref->interval = job->rec_interval > 0 ? job->rec_interval : 1;
  ref->nsamples = job->steps / ref->interval + 1;
  ref->nrec = job->nrec;
  ref->nsrc = job->nsources;
  st = alloc_reference(ref, err);
  if (!st) st = place_all(ref, err);
  if (!st) st = check_distances(ref, err);
  if (!st) st = sample_wavelets(ref, err);
  if (st) {
    tw_reference_destroy(ref);
    return st;
  }
  *out = ref;
  return TW_OK;
}

long tw_reference_nsamples(const tw_reference *ref) { return ref->nsamples; }

/* s_s(tau): 0 before the start; Ricker exactly; a file wavelet linearly between its samples
 * at dt (0 past the last). */
static double wavelet_at(const tw_reference *ref, int s, double tau) {
  if (tau < 0) return 0.0;
  const double *wf = ref->wfile[s];
  if (!wf) {
    const tw_wavelet_spec *w = &ref->job->sources[s].wavelet;
    return tw_ricker(tau, w->frequency, w->delay, w->amplitude);
  }
  const double u = tau / ref->dt;
  const long i = (long)floor(u);
  const double f = u - (double)i;
  if (i > ref->steps) return 0.0;
  return wf[i] * (1.0 - f) + (i + 1 <= ref->steps ? wf[i + 1] * f : 0.0);
}

/* The value at t of a receiver whose distances to the sources are dist[nsrc]. */
static double value_at(const tw_reference *ref, const double *dist, double t) {
  double p = 0.0;
  for (int s = 0; s < ref->nsrc; s++) p += wavelet_at(ref, s, t - dist[s] / ref->c) / (4.0 * PI * dist[s]);
  return p;
}

double tw_reference_value(const tw_reference *ref, long rec, double t) {
  double p = 0.0;
  for (int s = 0; s < ref->nsrc; s++) {
    const double r = distance(ref->rpos[rec], ref->spos[s]);
    p += wavelet_at(ref, s, t - r / ref->c) / (4.0 * PI * r);
  }
  return p;
}

/* tw_reference_value for every receiver and sample, the distances once per receiver and the
 * receivers in parallel: every value on its own, the same bits. */
void tw_reference_traces(const tw_reference *ref, long first, long count, float *traces) {
  const double sdt = ref->interval * ref->dt;
#pragma omp parallel
  {
    double one[8], *dist = ref->nsrc <= 8 ? one : malloc((size_t)ref->nsrc * sizeof *dist);
#pragma omp for schedule(dynamic, 64)
    for (long r = 0; r < ref->nrec; r++) {
      if (!dist) { /* out of memory for the distances: each value computes its own */
        for (long j = 0; j < count; j++)
          traces[(size_t)r * (size_t)count + (size_t)j] = (float)tw_reference_value(ref, r, (double)(first + j) * sdt);
        continue;
      }
      for (int s = 0; s < ref->nsrc; s++) dist[s] = distance(ref->rpos[r], ref->spos[s]);
      for (long j = 0; j < count; j++)
        traces[(size_t)r * (size_t)count + (size_t)j] = (float)value_at(ref, dist, (double)(first + j) * sdt);
    }
    if (dist != one) free(dist);
  }
}

void tw_reference_destroy(tw_reference *ref) {
  if (!ref) return;
  for (int s = 0; ref->wfile && s < ref->nsrc; s++) free(ref->wfile[s]);
  free(ref->wfile);
  free(ref->rpos);
  free(ref->spos);
  free(ref->wavelets);
  free(ref);
}

/* ---------------------------------------------------------------- writing */

/* The job as the reference's output is checked and written: its traces alone. It writes no snapshot,
 * so no sidecar, and the rules of the sidecar's name are none of its (a file of another there was
 * refused as one it would replace; it stays). */
static tw_job traces_only(const tw_job *job) {
  tw_job v = *job;
  v.nsnap = 0, v.snap_every = 0;
  return v;
}

/* job: traces_only(ref->job), which the output keeps until it is closed. */
static tw_status open_reference_output(const tw_reference *ref, const tw_job *job, const char *path, tw_output **o,
                                       tw_error *err) {
  double(*src)[3] = malloc((size_t)(ref->nsrc ? ref->nsrc : 1) * sizeof *src);
  if (!src) return tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int s = 0; s < ref->nsrc; s++) memcpy(src[s], job->sources[s].pos, sizeof src[s]);
  tw_output_desc d = {0};
  d.job = job;
  d.path = path;
  d.kernel = "reference";
  d.dt = ref->dt;
  d.steps = ref->steps;
  d.nrec = ref->nrec;
  d.rec = (const double (*)[3])job->rec; /* the job's coordinates: compare pairs by them */
  d.nsamples = ref->nsamples;
  d.nsrc = ref->nsrc;
  d.src = (const double (*)[3])src;
  d.wavelets = ref->wavelets;
  d.nsnap = 0;
  d.snap_dec = 1;
  d.vp_min = d.vp_max = ref->c; /* the reference solves constant models only, at the run's float32 vp */
  tw_status st = tw_output_create(&d, o, err);
  free(src);
  return st;
}

/* Traces in sample chunks that keep the buffer near TRACE_BUFFER_FLOATS. */
static tw_status write_traces(const tw_reference *ref, tw_output *o, tw_error *err) {
  if (ref->nrec == 0) return TW_OK;
  long chunk = TRACE_BUFFER_FLOATS / ref->nrec;
  if (chunk < 1) chunk = 1;
  if (chunk > ref->nsamples) chunk = ref->nsamples;
  float *buf = malloc((size_t)chunk * (size_t)ref->nrec * sizeof(float));
  if (!buf) return tw_error_set(err, TW_ENOMEM, "out of memory for %ld x %ld trace samples", ref->nrec, chunk);
  tw_status st = TW_OK;
  for (long first = 0; first < ref->nsamples && !st; first += chunk) {
    const long count = first + chunk <= ref->nsamples ? chunk : ref->nsamples - first;
    tw_reference_traces(ref, first, count, buf);
    st = tw_output_write_traces(o, first, count, buf, err);
  }
  free(buf);
  return st;
}

tw_status tw_reference_write(tw_job *job, const char *path, tw_error *err) {
  tw_reference *ref = NULL;
  tw_output *o = NULL;
  tw_output_lock *lock = NULL;
  const double wall0 = tw_wall_seconds();
  /* the output's name and lock, as for a run (outpath.c) */
  tw_job view = traces_only(job);
  tw_status st = tw_output_check_path(path, &view, 0, TW_OUTPUT_RUN, err);
  if (!st) st = tw_output_lock_take(path, TW_OUTPUT_RUN, &lock, err);
  if (!st) st = tw_reference_create(job, &ref, err);
  if (!st) view = traces_only(job); /* (finalized: its dt and steps) */
  if (!st) st = open_reference_output(ref, &view, path, &o, err);
  if (!st) st = write_traces(ref, o, err);
  if (!st) st = tw_output_set_attr_double(o, "wall_time", tw_wall_seconds() - wall0, err);
  if (!st) st = tw_output_set_attr_string(o, "reference", "free-space solution p = s(t - r/c) / (4 pi r)", err);
  if (!st) {
    st = tw_output_close(o, err);
    o = NULL;
  }
  if (o) tw_output_abort(o);
  tw_output_lock_release(lock);
  tw_reference_destroy(ref);
  return st;
}
