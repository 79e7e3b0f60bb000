/* test_gpu_common.h — shared by the GPU tests (test_gpu_*.c): build a problem from a compact case
 * description (by hand: a tw_job and a tw_velocity, straight into tw_problem_create), and drive a
 * backend through the tw_backend_ops interface the way run.c does (blocks of varying length,
 * snapshots at block ends, receiver taps combined with tw_receiver_combine), so that two kernels
 * can be compared on traces and snapshots.
 *
 * TW_TEST_KERNEL (environment) names the kernel under test (default gpu-stepwise); with a CPU
 * kernel there the tests run without a GPU, which checks the harness itself. */
#ifndef TEST_GPU_COMMON_H
#define TEST_GPU_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "tw_boundary.h"
#include "tw_sources.h"
#include "tw_test.h"

/* ---------------------------------------------------------------- randomness (reproducible) */

static uint64_t tg_rng_state = 0x9E3779B97F4A7C15ull;
static inline void tg_seed(uint64_t s) { tg_rng_state = s * 0x9E3779B97F4A7C15ull + 1; }
static inline uint64_t tg_next(void) { /* splitmix64 */
  uint64_t z = (tg_rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline double tg_unif(void) { return (double)(tg_next() >> 11) * (1.0 / 9007199254740992.0); }
static inline int tg_int(int lo, int hi) { return lo + (int)(tg_next() % (uint64_t)(hi - lo + 1)); } /* [lo, hi] */

/* ---------------------------------------------------------------- cases */

/* Where a source or receiver goes (model coordinates derived from the kind). */
typedef enum { TG_RANDOM, TG_CORNER, TG_EDGE, TG_SURFACE, TG_OFFGRID, TG_NKIND } tg_kind;

typedef struct tg_case {
  int order;
  int n[3];
  double d[3];
  int absorb;          /* cells per face (none on top with a free surface) */
  int fs;              /* free surface */
  int hetero;          /* heterogeneous velocity (layers + noise) */
  long steps;
  int interval;        /* receiver sampling */
  int nsrc, nrec;
  tw_interp src_interp, rec_interp;
  uint64_t seed;
  const double (*src_pos)[3];  /* explicit positions (model coordinates), else random kinds */
  const double (*rec_pos)[3];
} tg_case;

static inline void tg_case_print(const tg_case *c, char *buf, size_t len) {
  snprintf(buf, len, "order %d, n %dx%dx%d, absorb %d, fs %d, hetero %d, steps %ld, interval %d, %d src (%s), %d rec (%s)",
           c->order, c->n[0], c->n[1], c->n[2], c->absorb, c->fs, c->hetero, c->steps, c->interval, c->nsrc,
           c->src_interp == TW_INTERP_TRILINEAR ? "trilinear" : "nearest", c->nrec,
           c->rec_interp == TW_INTERP_TRILINEAR ? "trilinear" : "nearest");
}

/* A position of the given kind inside the model [0, (n−1)d] (origin 0). */
static inline void tg_position(const tg_case *c, tg_kind kind, double pos[3]) {
  for (int a = 0; a < 3; a++) {
    const double hi = (c->n[a] - 1) * c->d[a];
    switch (kind) {
      case TG_CORNER: pos[a] = tg_int(0, 1) ? hi : 0.0; break;
      case TG_EDGE: pos[a] = a == 0 ? tg_unif() * hi : (tg_int(0, 1) ? hi : 0.0); break;
      case TG_SURFACE: pos[a] = a == 2 ? 0.0 : tg_unif() * hi; break;
      case TG_OFFGRID: pos[a] = (0.5 + tg_int(1, c->n[a] - 3) + 0.37 * tg_unif()) * c->d[a]; break;
      default: pos[a] = tg_int(0, c->n[a] - 1) * c->d[a]; break;
    }
    if (pos[a] > hi) pos[a] = hi;
  }
  /* One step inside the free surface plane too, so that the cell under it is exercised. */
  if (kind == TG_SURFACE && tg_int(0, 1)) pos[2] = c->d[2] * tg_unif();
}

static inline double tg_stable_dt(int order, const double d[3], double vmax) {
  double s = 0.0;
  for (int a = 0; a < 3; a++) s += tw_fd_lambda(order) / (d[a] * d[a]);
  return 2.0 / (vmax * sqrt(s));
}

/* Build the problem of a case. Velocity: constant 2000 m/s, or layers 1500..3500 m/s with ±5 %
 * noise. Ricker sources with about 8 cells per wavelength at the slowest velocity. vp_out (may
 * be NULL) receives the velocity range. */
static inline tw_status tg_problem(const tg_case *c, double dt_margin, tw_problem **pb, double *fpeak, tw_error *err) {
  tg_seed(c->seed);
  tw_job job;
  memset(&job, 0, sizeof job);
  job.path = (char *)"<test>";
  for (int a = 0; a < 3; a++) {
    job.n[a] = c->n[a];
    job.d[a] = c->d[a];
    job.absorb[a] = c->absorb;
  }
  job.free_surface = c->fs;
  job.order = c->order;
  job.steps = c->steps;
  job.rec_interval = c->interval;
  job.rec_interp = c->rec_interp;
  snprintf(job.kernel, sizeof job.kernel, "cpu");

  const size_t nc = (size_t)c->n[0] * c->n[1] * c->n[2];
  tw_velocity v;
  memset(&v, 0, sizeof v);
  memcpy(v.n, c->n, sizeof v.n);
  v.vp = malloc(nc * sizeof(float));
  if (!v.vp) return tw_error_set(err, TW_ENOMEM, "velocity");
  v.vmin = 1e30, v.vmax = 0;
  const int nlayer = 1 + tg_int(1, 3);
  for (int i = 0; i < c->n[0]; i++)
    for (int j = 0; j < c->n[1]; j++)
      for (int k = 0; k < c->n[2]; k++) {
        double vp = 2000.0;
        if (c->hetero) {
          const int layer = k * nlayer / c->n[2];
          vp = 1500.0 + 2000.0 * layer / nlayer;
          vp *= 1.0 + 0.05 * (2.0 * tg_unif() - 1.0);
        }
        const size_t o = ((size_t)i * c->n[1] + j) * c->n[2] + k;
        v.vp[o] = (float)vp;
        if (v.vp[o] < v.vmin) v.vmin = v.vp[o];
        if (v.vp[o] > v.vmax) v.vmax = v.vp[o];
      }
  job.dt = dt_margin * tg_stable_dt(c->order, c->d, v.vmax);
  job.dt_given = 1;

  double dmax = c->d[0] > c->d[1] ? c->d[0] : c->d[1];
  if (c->d[2] > dmax) dmax = c->d[2];
  const double f = v.vmin / (8.0 * dmax * 2.5);
  if (fpeak) *fpeak = f;
  job.nsources = c->nsrc;
  job.sources = calloc((size_t)(c->nsrc ? c->nsrc : 1), sizeof *job.sources);
  job.nrec = c->nrec;
  job.rec = calloc((size_t)(c->nrec ? c->nrec : 1), sizeof *job.rec);
  if (!job.sources || !job.rec) {
    free(v.vp), free(job.sources), free(job.rec);
    return tw_error_set(err, TW_ENOMEM, "case");
  }
  for (int s = 0; s < c->nsrc; s++) {
    tw_source_spec *src = &job.sources[s];
    tg_kind kind = (tg_kind)((s + (int)(c->seed % TG_NKIND)) % TG_NKIND);
    if (c->src_pos) {
      kind = TG_RANDOM;
      memcpy(src->pos, c->src_pos[s], sizeof src->pos);
    } else {
      tg_position(c, kind, src->pos);
    }
    src->interp = kind == TG_OFFGRID ? TW_INTERP_TRILINEAR : c->src_interp;
    src->wavelet.type = TW_WAVELET_RICKER;
    src->wavelet.frequency = f * (1.0 + 0.2 * s);
    src->wavelet.delay = 1.2 / src->wavelet.frequency;
    src->wavelet.amplitude = 1.0 + s;
  }
  for (long r = 0; r < c->nrec; r++) {
    if (c->rec_pos) memcpy(job.rec[r], c->rec_pos[r], sizeof job.rec[r]);
    else tg_position(c, (tg_kind)(r % TG_NKIND), job.rec[r]);
  }

  tw_status st = tw_problem_create(&job, &v, pb, err);
  free(v.vp);
  free(job.sources);
  free(job.rec);
  return st;
}

/* ---------------------------------------------------------------- driving a backend */

typedef struct tg_run {
  float *traces;       /* [nrec][nsamples] */
  float *snaps;        /* all snapshot boxes, concatenated */
  size_t snap_total;
  size_t *snap_off;    /* [nblocks + 1] offsets of each block's box in snaps */
  int nblocks;
  double seconds;      /* wall time inside advance */
  int windowed;        /* a backend of the run went through the sliding window (its report says so) */
} tg_run;

/* A schedule: block lengths and, after each block, one snapshot box (padded-grid cells). */
typedef struct tg_sched {
  int nblocks;
  long *len;
  int (*lo)[3], (*cnt)[3];
  int *dec;
} tg_sched;

static inline void tg_sched_free(tg_sched *s) {
  free(s->len), free(s->lo), free(s->cnt), free(s->dec);
  memset(s, 0, sizeof *s);
}

/* Random block lengths 1..maxlen summing to steps; a random decimated box after each. */
static inline int tg_sched_make(const tw_problem *pb, int maxlen, uint64_t seed, tg_sched *s) {
  memset(s, 0, sizeof *s);
  tg_seed(seed);
  const long steps = pb->steps;
  s->len = malloc((size_t)steps * sizeof *s->len);
  s->lo = malloc((size_t)steps * sizeof *s->lo);
  s->cnt = malloc((size_t)steps * sizeof *s->cnt);
  s->dec = malloc((size_t)steps * sizeof *s->dec);
  if (!s->len || !s->lo || !s->cnt || !s->dec) return 0;
  long t = 0;
  while (t < steps) {
    long l = tg_int(1, maxlen);
    if (t + l > steps) l = steps - t;
    const int b = s->nblocks++;
    s->len[b] = l;
    t += l;
    s->dec[b] = tg_int(1, 3);
    for (int a = 0; a < 3; a++) {
      const int N = pb->g.N[a];
      s->lo[b][a] = tg_int(0, N / 3);
      const int room = (N - 1 - s->lo[b][a]) / s->dec[b] + 1;
      s->cnt[b][a] = tg_int(room / 2 > 0 ? room / 2 : 1, room);
    }
  }
  return 1;
}

/* First element where two float arrays differ in their bits (memcmp: −0 and +0 differ), or −1.
 * Every kernel, CPU and GPU, computes the same bits (docs/design.md §1.7): results are compared
 * with this, never within a tolerance. */
static inline long tg_first_diff(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(a + i, b + i, sizeof(float))) return (long)i;
  return -1;
}

static inline void tg_run_free(tg_run *r) {
  free(r->traces), free(r->snaps), free(r->snap_off);
  memset(r, 0, sizeof *r);
}

/* A backend of a kernel (variant: a gpu-stepwise tuning variant or NULL). */
static inline tw_status tg_create(const tw_problem *pb, const char *kernel, const char *variant,
                                  const tw_backend_ops **be, void **st, tw_error *err) {
  *be = tw_backend_find(kernel);
  if (!*be) return tw_error_set(err, TW_EUNSUPPORTED, "kernel %s is not in this build", kernel);
#ifdef TW_WITH_CUDA
  if (variant && strcmp(kernel, "gpu-stepwise") == 0) return tw_gpu_stepwise_create_variant(pb, variant, st, err);
#endif
  (void)variant;
  return (*be)->create(pb, st, err);
}

/* A checkpoint in the middle of tg_drive: after block `cut` the state goes out through save() in
 * plane ranges of random length, the backend is destroyed, `kernel` (with the memory cap
 * device_memory: a window or not) is created and gets the state through load() in other random
 * ranges, and runs the rest. */
typedef struct tg_resume {
  int cut;                   /* block index after which to switch; < 0: never */
  const char *kernel;
  uint64_t device_memory;
  uint64_t seed;
} tg_resume;

/* Whether a backend runs through the window (before it is destroyed). */
static inline int tg_windowed(const tw_backend_ops *be, void *st) {
  tw_run_report rep;
  memset(&rep, 0, sizeof rep);
  if (be->report) be->report(st, &rep);
  return rep.window_planes > 0;
}

static inline tw_status tg_switch(const tw_problem *pb, const tg_resume *rs, long t, const tw_backend_ops **be,
                                  void **st, int *windowed, tw_error *err) {
  const size_t plane = (size_t)pb->g.N[1] * pb->g.N[2], cells = tw_grid_cells(&pb->g);
  float *cur = malloc(cells * sizeof(float)), *prev = malloc(cells * sizeof(float));
  if (!cur || !prev) {
    free(cur), free(prev);
    return tw_error_set(err, TW_ENOMEM, "checkpoint buffers");
  }
  for (size_t c = 0; c < cells; c++) cur[c] = prev[c] = NAN; /* every value must come from save() */
  tg_seed(rs->seed);
  tw_status rc = TW_OK;
  for (int x = 0, n; !rc && x < pb->g.N[0]; x += n) {
    n = tg_int(1, pb->g.N[0] - x);
    rc = (*be)->save(*st, x, n, cur + (size_t)x * plane, prev + (size_t)x * plane, err);
  }
  *windowed |= tg_windowed(*be, *st);
  (*be)->destroy(*st);
  *st = NULL;
  tw_problem *mpb = (tw_problem *)pb; /* the cap is read at create only */
  const uint64_t cap = mpb->device_memory;
  mpb->device_memory = rs->device_memory;
  if (!rc) rc = tg_create(pb, rs->kernel, NULL, be, st, err);
  mpb->device_memory = cap;
  for (int x = 0, n; !rc && x < pb->g.N[0]; x += n) {
    n = tg_int(1, pb->g.N[0] - x);
    rc = (*be)->load(*st, t, x, n, cur + (size_t)x * plane, prev + (size_t)x * plane, err);
  }
  free(cur), free(prev);
  return rc;
}

/* Run the whole problem through a backend (variant: gpu-stepwise tuning variant or NULL); rs (or
 * NULL) switches to another backend through a checkpoint on the way. */
static inline tw_status tg_drive_resumed(const tw_problem *pb, const char *kernel, const char *variant,
                                         const tg_sched *sc, const tg_resume *rs, tg_run *out, tw_error *err) {
  memset(out, 0, sizeof *out);
  const tw_backend_ops *be = NULL;
  void *st = NULL;
  tw_status rc = tg_create(pb, kernel, variant, &be, &st, err);
  if (rc) return rc;
  out->nblocks = sc->nblocks;
  out->snap_off = calloc((size_t)sc->nblocks + 1, sizeof *out->snap_off);
  for (int b = 0; b < sc->nblocks; b++)
    out->snap_off[b + 1] = out->snap_off[b] + (size_t)sc->cnt[b][0] * sc->cnt[b][1] * sc->cnt[b][2];
  out->snap_total = out->snap_off[sc->nblocks];
  out->snaps = malloc((out->snap_total ? out->snap_total : 1) * sizeof(float));
  out->traces = calloc((size_t)(pb->nrec ? pb->nrec : 1) * (size_t)pb->nsamples, sizeof(float));
  float *taps = malloc((size_t)(pb->ntap + 1) * (size_t)pb->nsamples * sizeof(float));
  if (!out->snap_off || !out->snaps || !out->traces || !taps) {
    free(taps);
    be->destroy(st);
    return tw_error_set(err, TW_ENOMEM, "run buffers");
  }
  /* Poison: every tap value of every sample must be written by the kernel. */
  for (size_t i = 0; i < (size_t)(pb->ntap + 1) * (size_t)pb->nsamples; i++) taps[i] = NAN;
  long t = 0;
  for (int b = 0; b < sc->nblocks && !rc; b++) {
    long first, count;
    tw_samples_in(pb, t, sc->len[b], &first, &count);
    const double t0 = tw_wall_seconds();
    rc = be->advance(st, t, sc->len[b], taps + (size_t)first * pb->ntap, err);
    out->seconds += tw_wall_seconds() - t0;
    t += sc->len[b];
    if (!rc) rc = be->extract(st, sc->lo[b], sc->cnt[b], sc->dec[b], out->snaps + out->snap_off[b], err);
    if (!rc && rs && b == rs->cut) rc = tg_switch(pb, rs, t, &be, &st, &out->windowed, err);
  }
  /* Sample 0 is p⁰ = 0. */
  for (long i = 0; i < pb->ntap; i++) taps[i] = 0.0f;
  for (long r = 0; !rc && r < pb->nrec; r++)
    for (long smp = 0; smp < pb->nsamples; smp++) {
      float v[8];
      for (int k = 0; k < pb->rec_ntap[r]; k++) v[k] = taps[smp * pb->ntap + pb->rec_tap[r][k]];
      out->traces[r * pb->nsamples + smp] = tw_receiver_combine(pb->rec_ntap[r], pb->rec_w[r], v);
    }
  free(taps);
  if (st) {
    out->windowed |= tg_windowed(be, st);
    be->destroy(st);
  }
  return rc;
}

static inline tw_status tg_drive(const tw_problem *pb, const char *kernel, const char *variant, const tg_sched *sc,
                                 tg_run *out, tw_error *err) {
  return tg_drive_resumed(pb, kernel, variant, sc, NULL, out, err);
}

/* The kernel under test: TW_TEST_KERNEL or the default; skips (exit 77) when it needs a GPU and
 * none is present, or is not in this build. */
static inline const char *tg_kernel_under_test(const char *dflt) {
  const char *k = getenv("TW_TEST_KERNEL");
  if (!k || !*k) k = dflt;
  if (!tw_backend_find(k)) {
    if (tw_kernel_is_gpu(k)) TW_SKIP("no GPU: kernel %s is not in this build (built without CUDA)", k);
    TW_SKIP("kernel %s is not in this build", k);
  }
  if (tw_kernel_is_gpu(k) && tw_gpu_count() == 0) TW_SKIP("no GPU: %s needs one and none is present", k);
  return k;
}

#endif
