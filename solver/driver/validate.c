/* validate.c — the one validation of a job, called by `check` (which prints what it found) and by
 * the run driver (which then computes): whatever check accepts, run accepts. In order, cheapest
 * first, so that a run fails before it reads a large model or computes anything:
 *   kernel and memory; the output's name (outpath.c: inputs, links, devices; the lock and earlier
 *   runs' temporaries, which run removes last, once everything else has passed); the model (values
 *   inside the physical range) and finalize (dt, steps); the wavelets (files read and checked,
 *   float32 range, the source term's range, the highest frequency → points per wavelength);
 *   sources and receivers on a free surface; the output's size against the free space; warnings
 *   (dispersion, nothing sampled, settings ignored); for check, an estimate of the run time.
 * Also here, because check and run both need them: the snapshot box and where the sources and
 * receivers act (tw_points_at, stored in the output). */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu_fields.h"
#include "problem.h"
#include "schedule.h"
#include "tw_boundary.h"
#include "tw_sources.h"
#include "window.h"

/* ---------------------------------------------------------------- shared with the run */

void tw_snapshot_box(const tw_job *job, int model_lo[3], int cnt[3]) {
  const int dec = job->snap_decimate > 0 ? job->snap_decimate : 1;
  for (int a = 0; a < 3; a++) {
    /* the cells inside the region, within the slack the validation allowed its corners (tw_axis_inside):
     * a corner on the last cell keeps it, and none lies past it. The parser refuses a region with no
     * cell on an axis (parse_region), so there is at least one, and decimation from it keeps it. */
    int i0, i1;
    tw_axis_span(job->origin[a], job->d[a], job->n[a], job->snap_from[a], job->snap_to[a], &i0, &i1);
    model_lo[a] = i0;
    cnt[a] = i1 >= i0 ? (i1 - i0) / dec + 1 : 0;
  }
}

void tw_points_at_free(tw_points_at *p) {
  if (!p) return;
  free(p->cells);
  free(p->weights);
  free(p->used);
  free(p->interp);
  memset(p, 0, sizeof *p);
}

/* Point i of the job's sources or receivers. */
/* Point i of the job's sources or receivers (at[i] instead of the job's position when at is given:
 * a survey's shot). */
static const double *point_of(const tw_job *job, int receivers, const double (*at)[3], long i, tw_interp *interp) {
  *interp = receivers ? job->rec_interp : job->sources[i].interp;
  return at ? at[i] : receivers ? job->rec[i] : job->sources[i].pos;
}

tw_status tw_points_at_compute(const tw_job *job, const tw_grid *g, int receivers, tw_points_at *out,
                               tw_error *err) {
  return tw_points_at_compute_at(job, g, receivers, NULL, out, err);
}

tw_status tw_points_at_compute_at(const tw_job *job, const tw_grid *g, int receivers, const double (*at)[3],
                                  tw_points_at *out, tw_error *err) {
  memset(out, 0, sizeof *out);
  const long n = receivers ? job->nrec : job->nsources;
  int tri = 0;
  for (long i = 0; i < n && !tri; i++) {
    tw_interp it;
    point_of(job, receivers, at, i, &it);
    tri = it == TW_INTERP_TRILINEAR;
  }
  out->n = n;
  out->taps = tri ? 8 : 1;
  const size_t m = (size_t)(n ? n : 1);
  out->cells = malloc(m * (size_t)out->taps * 3 * sizeof *out->cells);
  out->weights = calloc(m * (size_t)out->taps, sizeof *out->weights);
  out->used = malloc(m * sizeof *out->used);
  out->interp = malloc(m);
  if (!out->cells || !out->weights || !out->used || !out->interp) {
    tw_points_at_free(out);
    return tw_error_set(err, TW_ENOMEM, "out of memory for the placement of %ld %s", n,
                        receivers ? "receivers" : "sources");
  }
  for (long i = 0; i < n; i++) {
    tw_interp it;
    const double *pos = point_of(job, receivers, at, i, &it);
    tw_taps t;
    tw_status st = tw_place(g, pos, it, 0, &t, err);
    if (st) {
      tw_points_at_free(out);
      return st;
    }
    int *c = out->cells + (size_t)i * (size_t)out->taps * 3;
    double *w = out->weights + (size_t)i * (size_t)out->taps;
    for (int k = 0; k < out->taps * 3; k++) c[k] = -1;
    out->used[i][0] = out->used[i][1] = out->used[i][2] = 0.0;
    for (int k = 0; k < t.ntap; k++) {
      w[k] = t.w[k];
      for (int a = 0; a < 3; a++) {
        c[3 * k + a] = t.ijk[k][a] - g->lo[a];
        out->used[i][a] += t.w[k] * (g->origin[a] + c[3 * k + a] * g->d[a]);
      }
    }
    out->interp[i] = (unsigned char)(it == TW_INTERP_TRILINEAR);
  }
  return TW_OK;
}

/* ---------------------------------------------------------------- messages */

static void warn(tw_validation *val, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void warn(tw_validation *val, const char *fmt, ...) {
  if (val->nwarn >= TW_VALIDATE_MSGS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(val->warn[val->nwarn++], sizeof val->warn[0], fmt, ap);
  va_end(ap);
}

static const char *num(char *buf, size_t n, double v) {
  snprintf(buf, n, "%.10g", v);
  if (isfinite(v) && !strpbrk(buf, ".eE") && strlen(buf) + 2 < n) strcat(buf, ".0");
  return buf;
}

/* ---------------------------------------------------------------- sources */

/* Samples of a wavelet to take: the run's steps + 1, or more for a file wavelet that lasts longer
 * (its spectrum is its whole spectrum: cut at the run's end, the cut itself would count as high
 * frequencies), with the resampling filter's tail. */
static long wavelet_samples(const tw_source_spec *src, const tw_job *job, double span[4], tw_error *err) {
  if (src->wavelet.type != TW_WAVELET_FILE) return job->steps + 1;
  tw_wavelet_samples fs;
  if (tw_wavelet_read(&src->wavelet, job->path, job->dt, &fs, err)) return -1;
  const double end = fs.t0 + (double)fs.n * fs.dt;
  /* span: the times of its first and last samples, and of its first and last non-zero ones (none:
   * the second pair stays reversed) */
  span[0] = fs.t0, span[1] = fs.t0 + (double)(fs.n - 1) * fs.dt, span[2] = INFINITY, span[3] = -INFINITY;
  for (long i = 0; i < fs.n; i++)
    if (fs.v[i] != 0.0) {
      const double t = fs.t0 + (double)i * fs.dt;
      span[2] = t < span[2] ? t : span[2], span[3] = t;
    }
  tw_wavelet_samples_free(&fs);
  const long n = (long)ceil(end / job->dt) + 40; /* > the resampler's ±16 steps */
  return n > job->steps + 1 ? n : job->steps + 1;
}

/* Sources that share a cell add up there: their sum, S as the run forms it, inside float32 too. */
static tw_status check_shared_cells(const tw_job *job, double c2dt2, tw_error *err) {
  double peak;
  int a, b, n;
  tw_status st = tw_problem_source_peak(job, &peak, &a, &b, &n, err);
  if (st || (peak <= FLT_MAX && peak * c2dt2 <= FLT_MAX)) return st;
  char who[96];
  if (b < 0) snprintf(who, sizeof who, "sources[%d]", a);
  else snprintf(who, sizeof who, "sources[%d] and sources[%d]%s", a, b, n > 2 ? " (and more)" : "");
  return tw_error_set(err, TW_ERANGE, "%s: %s: the source term overflows float32 in a cell they share (their "
                      "terms add up): S = Σ w·s / (dx dy dz) = %.3g, c²dt²·S = %.3g there; allowed |S| and c²dt²·|S| "
                      "<= 3.4e38: lower the amplitudes", tw_job_where(job, job->sources[a].where), who, peak,
                      peak * c2dt2);
}

/* Source i's wavelet is zero at every step of the run, as the run samples it: it radiates nothing,
 * which the run would not say. A warning, as for amplitude = 0 (settings_warnings, which says it
 * already), not a refusal: such a job is valid, only useless. The advice follows the cause: a Ricker
 * whose pulse (delay ± 2 periods) misses the run's window is delayed wrongly, one whose pulse is in it
 * has an amplitude that underflows float32; a file holds only zeros, or non-zero samples within the
 * run's time that underflow, or samples outside it (its span, wavelet_samples, against the window). */
static void silent_source(const tw_job *job, int i, const double span[4], tw_validation *val) {
  const tw_wavelet_spec *w = &job->sources[i].wavelet;
  char a[32], b[32], c[32], d[32], end[32], run[160], nz[96] = " (all zero)";
  const char *all = job->nsources == 1 ? " (every trace and snapshot will be zero)" : "";
  const double t_end = (double)job->steps * job->dt;
  snprintf(end, sizeof end, "%.6g", t_end);
  snprintf(run, sizeof run, "t = 0 .. %s s (%ld steps of %g s)", end, job->steps, job->dt);
  const char *where = tw_job_where(job, w->where);
  if (w->type == TW_WAVELET_RICKER) {
    if (w->amplitude == 0.0) return;
    /* the step nearest the pulse's peak: beyond ~3.2 periods from it the pulse is below float32's
     * range at any amplitude up to 1 (exp(−π²f²τ²) < 1e−45) */
    double n = round(w->delay / job->dt);
    n = n < 0.0 ? 0.0 : n > (double)job->steps ? (double)job->steps : n;
    const double gap = fabs(w->delay - n * job->dt);
    const int reach = w->delay - 2.0 / w->frequency <= t_end && w->delay + 2.0 / w->frequency >= 0.0;
    if (reach && gap * w->frequency > 3.0)
      warn(val, "%s: sources[%d].wavelet: the Ricker wavelet of %g Hz delayed %s s is zero (in float32) at every "
           "step of the run, %s: its pulse, %.3g ms wide, falls between the steps (the nearest at t = %s s, %.3g "
           "periods from its peak); that source radiates nothing%s; allowed: a frequency the steps resolve (f·dt "
           "well below 1) or a delay on a step", where, i, w->frequency, num(a, sizeof a, w->delay),
           run, 2000.0 / w->frequency, num(b, sizeof b, n * job->dt), gap * w->frequency, all);
    else if (reach)
      warn(val, "%s: sources[%d].wavelet: the Ricker wavelet of %g Hz delayed %s s, amplitude %g, is zero in float32 "
           "at every step of the run, %s: the run reaches its pulse (the delay ± 2 periods), but its values there "
           "underflow; that source radiates nothing%s; allowed: a larger amplitude", where, i, w->frequency, num(a, sizeof a, w->delay),
           w->amplitude, run, all);
    else
      warn(val, "%s: sources[%d].wavelet: the Ricker wavelet of %g Hz delayed %s s is zero (in float32) at every "
           "step of the run, %s: that source radiates nothing%s; allowed: a delay within the run", where, i,
           w->frequency, num(a, sizeof a, w->delay), run, all);
    return;
  }
  const int any = span[2] <= span[3]; /* a non-zero sample */
  if (!any) {
    warn(val, "%s: sources[%d].wavelet.file '%s': it holds only zeros (t = %s .. %s s), so that source radiates "
         "nothing%s; allowed: a wavelet with non-zero samples", where, i, w->file, num(a, sizeof a, span[0]),
         num(b, sizeof b, span[1]), all);
    return;
  }
  if (span[2] != span[0] || span[3] != span[1])
    snprintf(nz, sizeof nz, " (non-zero at t = %s .. %s s)", num(c, sizeof c, span[2]), num(d, sizeof d, span[3]));
  else
    nz[0] = '\0';
  if (span[2] <= t_end && span[3] >= 0.0) /* non-zero within the window: the values underflow */
    warn(val, "%s: sources[%d].wavelet.file '%s': its samples lie at t = %s .. %s s%s, within the run's steps at %s, "
         "but sampled there the wavelet is zero throughout in float32 (its values underflow), so that source "
         "radiates nothing%s; allowed: larger values", where, i, w->file, num(a, sizeof a, span[0]),
         num(b, sizeof b, span[1]), nz, run, all);
  else
    warn(val, "%s: sources[%d].wavelet.file '%s': its samples lie at t = %s .. %s s%s, the run's steps at %s: "
         "sampled there the wavelet is zero throughout, so that source radiates nothing%s; allowed: samples within "
         "the run's time (a two-column file's times are the run's, from t = 0)", where, i, w->file,
         num(a, sizeof a, span[0]), num(b, sizeof b, span[1]), nz, run, all);
}

/* Each source's wavelet as the run will sample it: files read and checked (tw_wavelet_sample),
 * the source term S = w·s/(dx dy dz) and c²dt²·S inside float32, and the highest frequency. */
static tw_status check_sources(const tw_job *job, double vmax, tw_validation *val, tw_error *err) {
  const double vol = job->d[0] * job->d[1] * job->d[2], c2dt2 = vmax * vmax * job->dt * job->dt;
  tw_status st = TW_OK;
  for (int i = 0; i < job->nsources && !st; i++) {
    const tw_source_spec *src = &job->sources[i];
    double span[4] = {0, 0, 0, 0}; /* (a file's only) */
    const long n = wavelet_samples(src, job, span, err);
    float *s = n > 0 ? malloc((size_t)n * sizeof *s) : NULL;
    if (n < 0) return err->code;
    if (!s) return tw_error_set(err, TW_ENOMEM, "%s: out of memory for the wavelets", job->path);
    st = tw_wavelet_sample(&src->wavelet, job->path, job->dt, n - 1, s, err);
    double peak = 0.0;
    for (long k = 0; !st && k <= job->steps; k++) peak = fabs(s[k]) > peak ? fabs(s[k]) : peak;
    if (!st && (peak / vol > FLT_MAX || peak / vol * c2dt2 > FLT_MAX)) {
      char p[64];
      st = tw_error_set(err, TW_ERANGE, "%s: sources[%d].wavelet: the source term overflows float32: got a peak "
                        "of %s, and S = s / (dx dy dz) = %.3g, c²dt²·S = %.3g; allowed |S| and c²dt²·|S| <= 3.4e38: "
                        "lower the amplitude", tw_job_where(job, src->wavelet.where), i, num(p, sizeof p, peak),
                        peak / vol, peak / vol * c2dt2);
    }
    if (!st && peak == 0.0) silent_source(job, i, span, val);
    double f = 0.0;
    if (!st && src->wavelet.type == TW_WAVELET_RICKER) {
      f = 2.5 * src->wavelet.frequency; /* docs/design.md §1; the spectral rule below gives the same */
    } else if (!st) {
      f = tw_wavelet_fmax(s, n, job->dt);
      if (f < 0) st = tw_error_set(err, TW_ENOMEM, "%s: out of memory for a wavelet's spectrum", job->path);
      if (f > val->fmax) val->fmax_from_file = 1;
    }
    if (f > val->fmax) val->fmax = f;
    free(s);
  }
  if (!st && job->nsources > 1) st = check_shared_cells(job, c2dt2, err);
  if (st) return st;
  double dmax = 0.0;
  for (int a = 0; a < 3; a++) dmax = job->d[a] > dmax ? job->d[a] : dmax;
  val->ppw = val->fmax > 0 ? val->vmin / (val->fmax * dmax) : INFINITY;
  const double thr = tw_ppw_warn_threshold(job->order);
  char ppw[32], fmax[32];
  if (val->ppw < thr)
    warn(val, "%s points per wavelength at %s Hz is low for order %d (want >= %.0f): expect numerical "
         "dispersion; refine d or lower the frequency", tw_format_decimal(val->ppw, 1, ppw, sizeof ppw),
         tw_format_decimal(val->fmax, 1, fmax, sizeof fmax), job->order, thr);
  return TW_OK;
}

/* ---------------------------------------------------------------- the free surface */

/* With a free surface p = 0 on the plane k = 0: a source whose every tap lies there radiates
 * nothing, a receiver there records only zeros. Both are refused (nearest: a depth within half a
 * cell of the surface; trilinear: on the plane itself). */
static int on_surface(const tw_grid *g, const double pos[3], tw_interp it) {
  if (pos[2] >= g->origin[2] + g->d[2]) return 0; /* quick: more than a cell deep */
  tw_taps t;
  if (tw_place(g, pos, it, 0, &t, NULL)) return 0; /* outside: the parser said so already */
  for (int k = 0; k < t.ntap; k++)
    if (t.ijk[k][2] != 0) return 0;
  return 1;
}

static tw_status surface_error(const tw_job *job, const char *loc, const char *what, const double p[3],
                               tw_interp it, tw_error *err) {
  char x[64], y[64], z[64], s[64], half[64];
  num(s, sizeof s, job->origin[2]);
  num(half, sizeof half, job->origin[2] + 0.5 * job->d[2]);
  return tw_error_set(err, TW_ECONFIG, "%s: on the free surface: got [%s, %s, %s]; %s %s on the plane z = %s m, "
                      "where p = 0 (boundary.free_surface), so it would %s: allowed a depth of at least %s m (half a "
                      "cell below the surface)%s", loc, num(x, sizeof x, p[0]), num(y, sizeof y, p[1]),
                      num(z, sizeof z, p[2]), what, it == TW_INTERP_NEAREST ? "has its nearest cell" : "lies",
                      s, strstr(what, "source") ? "radiate nothing" : "record only zeros", half,
                      it == TW_INTERP_NEAREST ? ", or interpolation = \"trilinear\" (any depth below the plane)" : "");
}

/* A survey: every shot's source, and a moving spread's receivers under every shot. Only the depth
 * decides (all taps on k = 0): each shot with each distinct depth offset of the spread. */
static tw_status check_surface_shots(const tw_job *job, const tw_grid *g, tw_error *err) {
  char loc[TW_WHERE_MAX + 120]; /* a where and the point's key */
  const tw_interp si = job->sources[0].interp;
  for (long s = 0; s < job->nshots; s++)
    if (on_surface(g, job->shots[s], si)) {
      char what[64];
      tw_job_point_where(job, job->shot_groups, job->nshot_groups, s, "shot", loc, sizeof loc);
      snprintf(what, sizeof what, "the source of shot %ld", s);
      return surface_error(job, loc, what, job->shots[s], si, err);
    }
  if (!job->rec_moving) return TW_OK;
  for (long r = 0; r < job->nrec; r++) {
    long first = 0; /* the first receiver of this depth offset: each offset once */
    while (job->rec[first][2] != job->rec[r][2]) first++;
    if (first != r) continue;
    for (long s = 0; s < job->nshots; s++) {
      const double p[3] = {job->shots[s][0] + job->rec[r][0], job->shots[s][1] + job->rec[r][1],
                           job->shots[s][2] + job->rec[r][2]};
      if (!on_surface(g, p, job->rec_interp)) continue;
      char what[96];
      tw_job_point_where(job, job->rec_groups, job->nrec_groups, r, "receiver", loc, sizeof loc);
      snprintf(what, sizeof what, "the receiver (moving: offsets from the shot) under shot %ld", s);
      return surface_error(job, loc, what, p, job->rec_interp, err);
    }
  }
  return TW_OK;
}

static tw_status check_surface(const tw_job *job, const tw_grid *g, tw_error *err) {
  if (!job->free_surface) return TW_OK;
  if (job->nshots) {
    tw_status st = check_surface_shots(job, g, err);
    if (st || job->rec_moving) return st;
  }
  char loc[TW_WHERE_MAX + 120]; /* a where and the point's key */
  for (int i = 0; !job->nshots && i < job->nsources; i++)
    if (on_surface(g, job->sources[i].pos, job->sources[i].interp)) {
      snprintf(loc, sizeof loc, "%s: sources[%d].position", tw_job_where(job, job->sources[i].where), i);
      return surface_error(job, loc, "the source", job->sources[i].pos, job->sources[i].interp, err);
    }
  for (long r = 0; r < job->nrec; r++) {
    if (!on_surface(g, job->rec[r], job->rec_interp)) continue;
    tw_job_point_where(job, job->rec_groups, job->nrec_groups, r, "receiver", loc, sizeof loc);
    char what[96];
    snprintf(what, sizeof what, "the receiver (number %ld of the output)", r);
    return surface_error(job, loc, what, job->rec[r], job->rec_interp, err);
  }
  return TW_OK;
}

/* ---------------------------------------------------------------- the output */

static tw_status check_output(const tw_job *job, const char *output, tw_validation *val, tw_error *err) {
  int lo[3], cnt[3];
  tw_snapshot_box(job, lo, cnt);
  const int interval = job->rec_interval > 0 ? job->rec_interval : 1;
  tw_points_at sp = {job->nsources, 8, NULL, NULL, NULL, NULL};
  tw_points_at rp = {job->nrec, job->rec_interp == TW_INTERP_TRILINEAR ? 8 : 1, NULL, NULL, NULL, NULL};
  tw_output_desc d = {0};
  d.job = job;
  d.steps = job->steps;
  d.nrec = job->nrec;
  d.nsamples = job->steps / interval + 1;
  d.nsrc = job->nsources;
  d.nsnap = job->nsnap;
  memcpy(d.snap_n, cnt, sizeof cnt);
  static const float stored_model = 0.0f; /* only whether output.model stores the model counts */
  d.vp = job->output_model ? &stored_model : NULL;
  d.src_at = &sp;
  d.rec_at = job->nrec ? &rp : NULL;
  val->trace_bytes = 4.0 * (double)d.nrec * (double)d.nsamples;
  val->snapshot_bytes = 4.0 * (double)d.nsnap * cnt[0] * (double)cnt[1] * cnt[2];
  val->output_bytes = tw_output_expected_bytes(&d);
  if (!output) return TW_OK;
  val->nbeside = tw_output_beside_files(output, job, val->beside); /* check names them */
  val->free_bytes = tw_output_free_bytes(output);
  /* the earlier runs' temporaries a run removes once validated (val->stale) free their space first */
  double stale_bytes = 0.0;
  struct stat sb_stale;
  for (int i = 0; i < val->nstale; i++)
    if (lstat(val->stale[i], &sb_stale) == 0) stale_bytes += 512.0 * (double)sb_stale.st_blocks;
  char nb[32], tb[32], fb[32], sb[32];
  if (val->free_bytes >= 0 && val->output_bytes > val->free_bytes + stale_bytes)
    return tw_error_set(err, TW_EIO, "%s: output '%s' needs about %s (traces %s, snapshots %s), but only %s is free "
                        "on its file system%s; free space, write it elsewhere (-o), or keep fewer snapshots "
                        "(snapshots.every, decimate, region)", job->path, output,
                        tw_format_bytes(val->output_bytes, nb, sizeof nb),
                        tw_format_bytes(val->trace_bytes, tb, sizeof tb),
                        tw_format_bytes(val->snapshot_bytes, sb, sizeof sb),
                        tw_format_bytes(val->free_bytes + stale_bytes, fb, sizeof fb),
                        stale_bytes > 0 ? " (with the earlier runs' temporaries a run removes)" : "");
  if (val->free_bytes > 0 && val->snapshot_bytes > 0.5 * val->free_bytes)
    warn(val, "the snapshots alone take %s, %.0f%% of the %s free on the output's file system",
         tw_format_bytes(val->snapshot_bytes, sb, sizeof sb), 100.0 * val->snapshot_bytes / val->free_bytes,
         tw_format_bytes(val->free_bytes, fb, sizeof fb));
  return TW_OK;
}

/* cpu-diamond under solver.device_memory: the plan its create will make (a window of W planes, a
 * height lowered to fit), so that `check` refuses the cap that `run` would, both before anything is
 * allocated, and names where the cap is given. */
static tw_status check_cpu_window(const tw_job *job, tw_validate_mode mode, const char *output, tw_validation *val,
                                  tw_error *err) {
  if (strcmp(val->kernel, "cpu-diamond")) return TW_OK;
  tw_problem pb;
  int dts, nt, nt_default, W;
  /* solver.dts and solver.tower_height are past check_schedule, which refused, where each is given,
   * any value beyond the schedule's limits: the only limits tw_cpu_diamond_params applies (its own
   * default tile is at most TW_CPU_TILE_MAX = 64 cells, under TW_TILE_MAX) */
  tw_status st = tw_problem_sizes(job, &pb, err);
  if (!st) st = tw_cpu_diamond_params(&pb, &dts, &nt, err);
  if (st) return tw_error_prefix(err, "%s", job->path);
  st = tw_cpu_diamond_plan(&pb, &dts, &nt, &nt_default, &W, err); /* the window under the cap */
  if (st) {
    tw_problem_axes_note(&pb, err);
    return tw_error_prefix(err, "%s", tw_job_where(job, job->dm_where));
  }
  val->est.window_planes = W;
  val->est.window_height = W ? nt : 0;
  if (W) {
    /* the ring is a second buffer beside the whole fields (tw_cpu_diamond's create): up to the cap
     * more than the grid alone, which tw_estimate_job counted (a cap of 40 MiB on 95 MiB of fields
     * took 159 MiB where check said 95 MiB, and the memory refusal let it through) */
    val->est.host_bytes += (double)tw_window_cpu_ring_bytes(&pb, W);
    val->est.session_bytes += (double)tw_window_cpu_ring_bytes(&pb, W); /* a ring per session */
    st = tw_estimate_fits(job, val->kernel, &val->est, err);
    if (st) return st;
  }
  /* check says it; so does a single run's summary (the kernel's note), but not a survey's: its
   * validation (tw_medium_create: no output, each shot has its own) warns for it */
  if (W && nt_default && (mode == TW_VALIDATE_CHECK || !output))
    warn(val, "cpu-diamond lowers its tower height from %d to %d steps so that its window fits "
         "solver.device_memory", nt_default, nt);
  return TW_OK;
}

double tw_estimate_cpu_ring(const tw_job *job, const char *kernel) {
  if (strcmp(kernel, "cpu-diamond")) return 0;
  tw_problem pb;
  tw_error e = {0};
  int dts, nt, nt_default, W = 0;
  if (tw_problem_sizes(job, &pb, &e) || tw_cpu_diamond_params(&pb, &dts, &nt, &e) ||
      tw_cpu_diamond_plan(&pb, &dts, &nt, &nt_default, &W, &e))
    return 0; /* (check_cpu_window refuses it, with the reason) */
  return W ? (double)tw_window_cpu_ring_bytes(&pb, W) : 0;
}

/* The CPU threads a run would start against this machine: far more than its CPUs only slows a run
 * down, and libgomp cannot start tens of thousands (a crash inside it, or its own one-line abort).
 * At most 4 per CPU, in all: workers (a survey's --workers) × threads_each. */
tw_status tw_check_threads(const tw_job *job, int workers, int threads_each, tw_error *err) {
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN), max = 4 * ncpu;
  if (ncpu <= 0 || (long)workers * threads_each <= max) return TW_OK;
  const char *at = tw_job_where(job, job->threads_where);
  if (workers > 1 && job->threads) {
    char allowed[160];
    if (max / workers)
      snprintf(allowed, sizeof allowed, "allowed at most %ld with --workers %d (%ld threads in all), or fewer workers",
               max / workers, workers, max);
    else
      snprintf(allowed, sizeof allowed, "allowed --workers at most %ld (%ld threads in all)", max, max);
    return tw_error_set(err, TW_ECONFIG, "%s: solver.threads: --workers %d x solver.threads = %ld CPU threads, over 4 "
                        "per CPU on this machine's %ld CPUs: got %d; %s", at, workers, (long)workers * threads_each,
                        ncpu, job->threads, allowed);
  }
  if (workers > 1)
    return tw_error_set(err, TW_ECONFIG, "%s: --workers %d: %d workers x %d CPU thread%s each (solver.threads not "
                        "given: the CPUs shared among the workers, at least one each) = %ld CPU threads, over 4 per CPU "
                        "on this machine's %ld CPUs; allowed --workers at most %ld", job->path, workers, workers,
                        threads_each, threads_each == 1 ? "" : "s", (long)workers * threads_each, ncpu,
                        max / threads_each);
  if (job->threads)
    return tw_error_set(err, TW_ECONFIG, "%s: solver.threads: over 4 threads per CPU on this machine's %ld CPUs: got "
                        "%d; allowed 1..%ld, or 0 / the key left out for one per CPU", at, ncpu, job->threads, max);
  return tw_error_set(err, TW_ECONFIG, "%s: OpenMP's default thread count is %d (OMP_NUM_THREADS?): this machine "
                      "has %ld CPUs; allowed at most %ld (4 per CPU): set solver.threads or OMP_NUM_THREADS lower",
                      job->path, threads_each, ncpu, max);
}

/* solver.dts and solver.tower_height within the schedule's limits (tw_schedule_params), whichever
 * kernel runs: a value no kernel takes is refused where it is given, before anything is read. */
static tw_status check_schedule(const tw_job *job, tw_error *err) {
  int dts, nt;
  if (job->dts && tw_schedule_params(job->order, job->dts, 0, &dts, &nt, err))
    return tw_error_prefix(err, "%s", tw_job_where(job, job->dts_where));
  if (job->tower_height && tw_schedule_params(job->order, 0, job->tower_height, &dts, &nt, err))
    return tw_error_prefix(err, "%s", tw_job_where(job, job->height_where));
  return TW_OK;
}

static void settings_warnings(const tw_job *job, tw_validation *val) {
  for (int s = 0; s < job->nsources; s++)
    if (job->sources[s].wavelet.type == TW_WAVELET_RICKER && job->sources[s].wavelet.amplitude == 0.0)
      warn(val, "sources[%d].wavelet.amplitude = 0: that source radiates nothing%s", s,
           job->nsources == 1 ? " (every trace and snapshot will be zero)" : "");
  /* a layer whose top is below the last cell is in no cell (io/model.c: layered_vp, the same test) */
  const double z_last = job->origin[2] + (double)(job->n[2] - 1) * job->d[2];
  for (int l = 1; job->model.type == TW_MODEL_LAYERED && l < job->model.nlayers; l++) {
    const double top = job->model.layers[l].top;
    if (tw_axis_reached(job->origin[2], job->d[2], job->n[2] - 1, top)) continue;
    char a[64], b[64];
    warn(val, "%s: model.layers[%d].top = %s lies below the model's last cell (z = %s): that layer is in no cell of "
         "the model; allowed: a top within grid.origin[2] .. %s, or a deeper grid", tw_job_where(job, job->model.where),
         l, num(a, sizeof a, top), num(b, sizeof b, z_last), b);
    break; /* the tops increase: the later ones are below it too */
  }
  if (job->snap_every > job->steps)
    warn(val, "snapshots.every = %ld is beyond the last step (%ld): no snapshot will be written", job->snap_every,
         job->steps);
  if (job->nrec > 0 && job->rec_interval > job->steps)
    warn(val, "receivers.interval = %d is beyond the last step (%ld): the traces hold only sample 0 (t = 0, p = 0)",
         job->rec_interval, job->steps);
  if (job->device_memory && strcmp(val->kernel, "cpu") == 0)
    warn(val, "solver.device_memory is ignored by kernel cpu (it caps the GPU kernels' memory and cpu-diamond's "
         "window)");
}

/* ---------------------------------------------------------------- run time (check) */

/* gpu-stepwise on an H200, orders 2, 4, 6, 8, with absorbing layers and a free surface (`torrewave
 * bench`, docs/performance.md, session 11): Gcell/s, scaled by the GPU's memory bandwidth against the
 * H200's (the kernel is bound by memory; order 8 on an H200 by the L2). gpu-diamond runs
 * the same kernel unless its register tower is predicted faster on this GPU (tw_gpu_tower_gain
 * times tw_gpu_tower_share, the kernel's own choice): then that prediction times the stepwise rate.
 * The towers exist for columns of up to ~768 cells at order 2 and 512 at order 4 (one block of
 * Nz / Z threads must fit: gpu_diamond.cu, reg_kernels; order 4's, at 220 registers, takes at most
 * 256 threads, and above Nz 256 its column goes over a cluster of 2 CTAs); the realistic job on an
 * H100: 419 Gcell/s estimated, 398 measured (session 12). */
static const double gpu_rates[4] = {260, 240, 210, 200};

/* CPU kernels: a short calibration, the job's kernel and order on a grid of at most 64 x 64 x 256
 * cells: one warm-up call and three timed calls of 4 steps (a few tens of ms on 2 cores). */
static void estimate_runtime(const tw_job *job, tw_validation *val) {
  const double work = (double)tw_grid_cells(&val->est.grid) * (double)job->steps;
  double rate = 0.0;
  if (tw_kernel_is_gpu(val->kernel)) {
    const int o = job->order / 2 - 1;
    if (o < 0 || o > 3) return;
    tw_gpu_props p;
    tw_error e = {0};
    const int have_props = tw_gpu_props_get(0, &p, &e) == TW_OK;
    const double bw = have_props ? tw_gpu_dram_bytes_per_s(p.mem_clock_khz, p.bus_bits) : 0;
    const int sms = have_props && p.sms > 0 ? p.sms : 132; /* an H200's, as the rates are */
    const double scale = bw > 0 ? bw / TW_H200_DRAM_BYTES_PER_S : 1.0;
    rate = gpu_rates[o] * 1e9 * scale;
    snprintf(val->run_basis, sizeof val->run_basis, "from gpu-stepwise's H200 bench rate (%.0f Gcell/s at order %d, "
             "docs/performance.md) x %.2f for this GPU's memory bandwidth", gpu_rates[o], job->order, scale);
    const int nz = val->est.grid.N[2], r = job->order / 2;
    double gain = tw_gpu_tower_gain(r, nz, bw);
    {
      /* the share a narrow grid keeps (tw_gpu_tower_share, as dia_init applies it), with the
       * kernel's axes, dts and height, and the default towers' shape: at order 2 two z cells a
       * thread, at order 4 one, on whole warps, up to 256 threads of ~250 registers an SM; and the
       * towers' height in the run's calls */
      int dts = 0, nt = 0;
      tw_grid kg;
      tw_error e2 = {0};
      tw_grid_oriented(job, &kg);
      if (!tw_schedule_params(job->order, job->dts ? job->dts : (r == 1 ? 3 : 0), job->tower_height, &dts, &nt, &e2)) {
        tw_schedule sc;
        tw_schedule_init(&sc, kg.N[0], kg.N[1], r, dts, nt);
        const int threads = (nz + 32 * (r == 1 ? 2 : 1) - 1) / (32 * (r == 1 ? 2 : 1)) * 32;
        const int bmax = threads < 256 ? 256 / threads : 1;
        /* order 4 above Nz 256: the column over a cluster of 2 CTAs, the workers sms / 2 clusters */
        const int cluster = r == 2 && nz > 256;
        double share = tw_gpu_tower_share(r, tw_schedule_parallelism(&sc), cluster ? sms / 2 : sms, bmax, NULL);
        /* in core the two-z dts-3 tower (Nz up to 512: its shared memory) may sweep y (dia_init) */
        if (r == 1 && dts == 3 && nz <= 512 && !val->est.window_planes) {
          tw_schedule_init(&sc, kg.N[1], kg.N[0], r, dts, nt);
          const double sy = tw_gpu_tower_share(r, tw_schedule_parallelism(&sc), sms, bmax, NULL);
          share = sy > share ? sy : share;
        }
        gain *= share * tw_gpu_tower_height_factor(nt, tw_job_call_steps(job));
      }
    }
    /* (order 4 above Nz 256 over a cluster: a GPU of sm_90 on, or none known, as an H200) */
    const int nz_max = r == 1 ? 768 : (!have_props || p.cc_major >= 9 ? 512 : 256);
    if (strcmp(val->kernel, "gpu-diamond") == 0 && gain >= TW_TOWER_MIN_GAIN && nz <= nz_max) {
      rate *= gain;
      const size_t l = strlen(val->run_basis);
      snprintf(val->run_basis + l, sizeof val->run_basis - l, " x %.2f for gpu-diamond's register tower", gain);
    }
    if (val->est.window_planes) {
      int dts = 0, nt = 0;
      tw_error e2 = {0};
      if (!tw_schedule_params(job->order, job->dts, job->tower_height, &dts, &nt, &e2)) {
        const double copy = TW_WINDOW_LINK_BYTES_PER_S * nt / 20.0; /* the window keeps pace up to this rate */
        if (copy < rate) rate = copy;
        strncat(val->run_basis, "; the window's copies bound it", sizeof val->run_basis - strlen(val->run_basis) - 1);
      }
    }
  } else {
    int N[3];
    const int cap[3] = {64, 64, 256};
    for (int a = 0; a < 3; a++) N[a] = val->est.grid.N[a] < cap[a] ? val->est.grid.N[a] : cap[a];
    for (int a = 0; a < 3; a++) N[a] = N[a] < 24 ? 24 : N[a];
    tw_bench_problem *bp = NULL;
    tw_bench_result res;
    tw_error e = {0};
    const long steps = 4;
    if (tw_bench_problem_create(job->order, N, 4, job->free_surface, 4 * steps, 1, &bp, &e) == TW_OK &&
        tw_bench_kernel(bp, val->kernel, steps, 3, 1, &res, &e) == TW_OK)
      rate = res.gcells_max * 1e9; /* the best of three: other work on the machine only slows a call */
    tw_bench_problem_destroy(bp);
    snprintf(val->run_basis, sizeof val->run_basis, "calibrated here: %s ran %.3g Gcell/s on %d x %d x %d cells",
             val->kernel, rate / 1e9, N[0], N[1], N[2]);
  }
  if (rate > 0) val->run_seconds = work / rate;
}

/* ---------------------------------------------------------------- the entry point */

/* The time since *t, as a phase of the validation; *t moves to now. */
static void phase(tw_validation *val, const char *name, double *t) {
  const double now = tw_wall_seconds();
  tw_phases_add(&val->phases, name, now - *t);
  *t = now;
}

tw_status tw_job_validate(tw_job *job, const char *output, tw_validate_mode mode, tw_validation *val,
                          tw_velocity **vout, tw_error *err) {
  memset(val, 0, sizeof *val);
  val->ppw = INFINITY;
  val->free_bytes = -1.0;
  if (vout) *vout = NULL;
  tw_velocity *v = NULL;
  double t = tw_wall_seconds();
  tw_status st = tw_kernel_resolve(job->kernel, job, val->kernel, sizeof val->kernel, err);
  if (st) tw_error_prefix(err, "%s", tw_job_where(job, job->kernel_where));
  if (!st) st = tw_check_threads(job, 1, tw_cpu_threads_of(job->threads), err);
  if (!st) st = check_schedule(job, err);
  phase(val, "kernel (CUDA: the GPU count)", &t);
  /* memory from the grid alone, before the model or any field is allocated */
  if (!st) st = tw_estimate_job(job, val->kernel, &val->est, err);
  if (!st) st = tw_estimate_fits(job, val->kernel, &val->est, err);
  phase(val, "memory (GPU: its free memory)", &t);
  if (!st && output) {
    st = tw_output_check_path(output, job, mode == TW_VALIDATE_CHECK, TW_OUTPUT_RUN, err);
    if (!st) st = tw_output_check_ckpt(output, job, err);
    if (!st && mode == TW_VALIDATE_RUN) {
      st = tw_output_lock_take(output, TW_OUTPUT_RUN, &val->lock, err);
      if (!st && !tw_output_lock_held(val->lock))
        warn(val, "the output's file system has no file locks: another run writing '%s' at the same time would "
             "not be detected", output);
    } else if (!st) {
      val->lock_holder = tw_output_lock_holder(output);
      if (val->lock_holder)
        warn(val, "output '%s' is being written by another torrewave run now (process %ld): a run started now "
             "would be refused", output, val->lock_holder);
    }
    /* listed now (check shows them), removed by run only once the whole validation has passed
     * (below): a run refused by any later check removes none */
    if (!st) st = tw_output_stale(output, 0, TW_OUTPUT_RUN, &val->stale, &val->nstale, err);
    val->output_exists = tw_output_exists(output);
  }
  phase(val, "output's name, lock, temporaries", &t);
  /* The model whole only where its values are used (output.model, a checkpoint's identity); a
   * depth-profile model otherwise stays its profile (tw_velocity_load_compact: ~1 s less on 0.5 G
   * cells). */
  const int whole = vout && (job->output_model || job->ckpt);
  if (!st) st = whole ? tw_velocity_load(job, &v, err) : tw_velocity_load_compact(job, &v, err);
  if (!st) {
    val->vmin = v->vmin;
    val->vmax = v->vmax;
    st = tw_job_finalize(job, v->vmin, v->vmax, err);
  }
  phase(val, "model (read or depth profile; checked)", &t);
  if (!st) st = check_sources(job, v->vmax, val, err);
  if (!st) st = check_surface(job, &val->est.grid, err);
  if (!st) st = check_output(job, output, val, err);
  if (!st) st = check_cpu_window(job, mode, output, val, err);
  if (!st && mode == TW_VALIDATE_RUN && val->nstale) { /* all passed: the temporaries go (the lock is held) */
    tw_output_stale_free(val->stale, val->nstale);
    val->stale = NULL, val->nstale = 0;
    st = tw_output_stale(output, 1, TW_OUTPUT_RUN, &val->stale, &val->nstale, err);
  }
  if (!st) settings_warnings(job, val);
  phase(val, "wavelets, surface, output size", &t);
  if (!st && mode == TW_VALIDATE_CHECK) estimate_runtime(job, val);
  phase(val, "run-time estimate (GPU clocks; CPU bench)", &t);
  if (st || !vout) tw_velocity_destroy(v);
  else *vout = v;
  return st;
}

void tw_validation_tell(const tw_validation *val, const tw_run_hooks *hooks) {
  if (!hooks || !hooks->message) return;
  for (int i = 0; i < val->nwarn; i++) hooks->message(hooks->user, 1, val->warn[i]);
  for (int i = 0; i < val->nstale; i++) {
    char msg[1200];
    snprintf(msg, sizeof msg, "removed '%s', left by an earlier run of this output whose process is gone",
             val->stale[i]);
    hooks->message(hooks->user, 0, msg);
  }
}

void tw_validation_free(tw_validation *val) {
  if (!val) return;
  tw_output_lock_release(val->lock);
  tw_output_stale_free(val->stale, val->nstale);
  tw_output_beside_free(val->beside, val->nbeside);
  val->nbeside = 0;
  val->lock = NULL;
  val->stale = NULL;
  val->nstale = 0;
}
