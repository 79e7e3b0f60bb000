/* bench.c — `torrewave bench` without the printing: synthetic problems, and the timing of any
 * registered kernel through the backend interface (the same calls run.c makes), so that every
 * kernel is measured the same way. GPU kernels: CUDA events (gpu_bench.cu); CPU kernels: the
 * host's monotonic clock. docs/design.md §6: Gcell/s = padded cells × steps / seconds / 1e9. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_fields.h"
#include "problem.h"

struct tw_bench_problem {
  tw_problem *pb;
};

/* Largest stable dt (docs/design.md §1): c_max² dt² Σ_axis λ_axis ≤ 4. */
static double stable_dt(int order, const double d[3], double vmax) {
  double s = 0.0;
  for (int a = 0; a < 3; a++) s += tw_fd_lambda(order) / (d[a] * d[a]);
  return 2.0 / (vmax * sqrt(s));
}

/* Receivers of a bench problem: a line along x at 2 cells' depth. */
#define BENCH_RECEIVERS 128

/* The job of a bench problem on the padded grid N (n: its model cells), or an error: an axis with
 * fewer than 8 model cells inside its layers. */
static tw_status bench_job(int order, const int N[3], int absorb, int fs, long steps, tw_job *job, int n[3],
                           tw_error *err) {
  memset(job, 0, sizeof *job);
  job->path = "<bench>";
  for (int a = 0; a < 3; a++) {
    const int layers = (a == 2 && fs) ? absorb : 2 * absorb;
    n[a] = N[a] - layers;
    if (n[a] < 8)
      return tw_error_set(err, TW_EINVAL, "bench grid axis %d: %d cells leave %d model cells inside %d absorbing "
                          "cells per face (need at least 8)", a, N[a], n[a], absorb);
    job->n[a] = n[a];
    job->d[a] = 10.0;
    job->absorb[a] = absorb;
  }
  job->free_surface = fs;
  job->order = order;
  job->steps = steps > 0 ? steps : 1;
  job->rec_interval = 1;
  job->rec_interp = TW_INTERP_NEAREST;
  job->nrec = BENCH_RECEIVERS; /* (their positions: tw_bench_problem_create) */
  snprintf(job->kernel, sizeof job->kernel, "cpu");
  return TW_OK;
}

tw_status tw_bench_problem_check(int order, const int N[3], int absorb, int fs, int gpu, tw_error *err) {
  tw_job job;
  int n[3];
  tw_estimate est;
  tw_status st = bench_job(order, N, absorb, fs, 1, &job, n, err);
  if (!st) st = tw_estimate_job(&job, gpu ? "gpu-stepwise" : "cpu", &est, err);
  if (st) return st;
  const tw_grid *g = &est.grid; /* (cells in double: a size_t count wraps near 1.8e19) */
  const double host = (double)tw_host_memory_available(), cells = (double)g->N[0] * g->N[1] * (double)g->N[2];
  const double need = cells < 1e18 ? est.host_bytes : 16.0 * cells;
  char b1[32], b2[32];
  if (host > 0 && need > host)
    return tw_error_set(err, TW_ENOMEM,
                        "the problem needs %s%s of host memory and %s is available (%.3g cells, %.3g "
                        "bytes each); allowed about %.3g cells at most",
                        cells < 1e18 ? "" : "over ", tw_format_bytes(need, b1, sizeof b1),
                        tw_format_bytes(host, b2, sizeof b2), cells, need / cells, host / (need / cells));
  return TW_OK;
}

tw_status tw_bench_problem_create(int order, const int N[3], int absorb, int fs, long steps, uint64_t seed,
                                  tw_bench_problem **out, tw_error *err) {
  tw_job job;
  int n[3];
  tw_status st0 = bench_job(order, N, absorb, fs, steps, &job, n, err);
  if (st0) return st0;
  tw_velocity v;
  memset(&v, 0, sizeof v);
  memcpy(v.n, n, sizeof v.n);
  const size_t cells = (size_t)n[0] * n[1] * n[2];
  v.vp = malloc(cells * sizeof(float));
  tw_source_spec src;
  memset(&src, 0, sizeof src);
  double(*rec)[3] = malloc(BENCH_RECEIVERS * sizeof *rec);
  if (!v.vp || !rec) {
    free(v.vp), free(rec);
    return tw_error_set(err, TW_ENOMEM, "bench: cannot allocate the %zu MiB velocity model", cells * 4 >> 20);
  }
  /* Random velocity, 1500–4500 m/s: a hash per cell (threads agree, runs repeat). */
#pragma omp parallel for schedule(static)
  for (long i = 0; i < (long)n[0]; i++) {
    for (size_t c = (size_t)i * n[1] * n[2]; c < (size_t)(i + 1) * n[1] * n[2]; c++) {
      uint64_t z = c + seed * 0x9E3779B97F4A7C15ull;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      v.vp[c] = 1500.0f + 3000.0f * (float)((double)(z >> 11) * (1.0 / 9007199254740992.0));
    }
  }
  v.vmin = 1500.0, v.vmax = 4500.0;
  job.dt = 0.9 * stable_dt(order, job.d, v.vmax);
  job.dt_given = 1;
  src.pos[0] = 0.5 * (n[0] - 1) * job.d[0];
  src.pos[1] = 0.5 * (n[1] - 1) * job.d[1];
  src.pos[2] = 0.25 * (n[2] - 1) * job.d[2];
  src.interp = TW_INTERP_NEAREST;
  src.wavelet.type = TW_WAVELET_RICKER;
  src.wavelet.frequency = 10.0;
  src.wavelet.delay = 0.15;
  src.wavelet.amplitude = 1.0;
  job.sources = &src;
  job.nsources = 1;
  for (int r = 0; r < BENCH_RECEIVERS; r++) {
    rec[r][0] = (n[0] - 1) * job.d[0] * r / (BENCH_RECEIVERS - 1.0);
    rec[r][1] = src.pos[1];
    rec[r][2] = 2 * job.d[2];
  }
  job.rec = rec;
  tw_bench_problem *bp = calloc(1, sizeof *bp);
  tw_status st = bp ? tw_problem_create(&job, &v, &bp->pb, err) : tw_error_set(err, TW_ENOMEM, "out of memory");
  free(v.vp);
  free(rec);
  if (st) {
    free(bp);
    return st;
  }
  *out = bp;
  return TW_OK;
}

void tw_bench_problem_destroy(tw_bench_problem *bp) {
  if (!bp) return;
  tw_problem_destroy(bp->pb);
  free(bp);
}

int tw_bench_variant_count(const char *kernel) {
#ifdef TW_WITH_CUDA
  if (kernel && strcmp(kernel, "gpu-stepwise") == 0) return tw_gpu_stepwise_variant_count();
#endif
  (void)kernel;
  return 0;
}

const char *tw_bench_variant_name(const char *kernel, int i) {
#ifdef TW_WITH_CUDA
  if (kernel && strcmp(kernel, "gpu-stepwise") == 0) return tw_gpu_stepwise_variant_name(i);
#endif
  (void)kernel, (void)i;
  return NULL;
}

const char *tw_bench_variant_default(const char *kernel, int order) {
#ifdef TW_WITH_CUDA
  if (kernel && strcmp(kernel, "gpu-stepwise") == 0) return tw_gpu_stepwise_default_variant(order);
#endif
  (void)kernel, (void)order;
  return NULL;
}

typedef struct {
  const tw_backend_ops *be;
  void *state;
  long t, n;
  float *taps;
} advance_call;

static tw_status do_advance(void *arg, tw_error *err) {
  advance_call *a = arg;
  return a->be->advance(a->state, a->t, a->n, a->taps, err);
}

/* CPU time of the process, all threads (the bench's CPU kernels wait passively between
 * parallel regions only if OMP_WAIT_POLICY=passive; `torrewave bench` says so). */
static double cpu_seconds(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)) return 0;
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

tw_status tw_bench_kernel(tw_bench_problem *bp, const char *kernel, long steps, int reps, int warmup,
                          tw_bench_result *res, tw_error *err) {
  const tw_problem *pb = bp->pb;
  memset(res, 0, sizeof *res);
  snprintf(res->kernel, sizeof res->kernel, "%s", kernel);
  res->order = pb->order;
  tw_xy_cell(pb->swap_xy, pb->g.N, res->N); /* the grid as asked (the kernels may sweep its y) */
  res->steps = steps;
  res->reps = reps;
  if (steps < 1 || reps < 1 || warmup < 0)
    return tw_error_set(err, TW_EINVAL, "bench: steps %ld and reps %d must be >= 1, warmup %d >= 0", steps, reps,
                        warmup);
  if ((warmup + reps) * steps > pb->steps)
    return tw_error_set(err, TW_EINTERNAL, "bench: the problem holds %ld steps, the run needs %ld", pb->steps,
                        (long)(warmup + reps) * steps);
  char name[64];
  snprintf(name, sizeof name, "%s", kernel);
  /* Options after the name: +cap=SIZE (solver.device_memory: the sliding window), +h=N
   * (solver.tower_height), +dts=N, +rest (fields start at rest instead of small random values:
   * the time can depend on the data). The problem is copied (the backend keeps the pointer it is
   * given; the copy lives until destroy below). */
  tw_problem pbo = *pb;
  int rest = 0;
  for (char *plus = strrchr(name, '+'); plus; plus = strrchr(name, '+')) {
    *plus = 0;
    const char *opt = plus + 1;
    if (strncmp(opt, "cap=", 4) == 0) {
      if (tw_parse_memsize(opt + 4, &pbo.device_memory, err)) return tw_error_prefix(err, "bench: %s", kernel);
      if (!pbo.device_memory) return tw_error_set(err, TW_EINVAL, "bench: %s: +cap=0: a cap must be positive", kernel);
    } else if (strncmp(opt, "h=", 2) == 0 || strncmp(opt, "dts=", 4) == 0) {
      char *end;
      const char *num = opt + (opt[0] == 'h' ? 2 : 4);
      const long n = strtol(num, &end, 10);
      if (*end || n < 1 || n > 1 << 20)
        return tw_error_set(err, TW_EINVAL, "bench: kernel option \"+%s\" of %s: takes a positive integer", opt,
                            kernel);
      if (opt[0] == 'h') pbo.tower_height = (int)n;
      else pbo.dts = (int)n;
    } else if (strcmp(opt, "rest") == 0) {
      rest = 1;
    } else {
      return tw_error_set(err, TW_EINVAL, "bench: kernel option \"+%s\" of %s: known are +cap=SIZE, +h=STEPS, "
                          "+dts=N, +rest", opt, kernel);
    }
  }
  pbo.call_steps = steps; /* (every call advances `steps`) */
  pb = &pbo;
  (void)rest; /* CPU kernels start from rest anyway (fields are random only on the GPU) */
  char *at = strchr(name, '@');
  const char *variant = NULL;
  if (at) *at = 0, variant = at + 1;
  const tw_backend_ops *be = tw_backend_find(name);
  if (!be) {
    char list[256] = "";
    for (int i = 0; i < tw_kernel_count(); i++) {
      strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
      strncat(list, tw_kernel_name(i), sizeof list - strlen(list) - 1);
    }
    return tw_error_set(err, TW_EUNSUPPORTED, "bench: kernel \"%s\" is not in this build (it has: %s)", name, list);
  }
  if (be->needs_gpu && tw_gpu_count() == 0) return tw_error_set(err, TW_ENODEV, "bench: %s needs a GPU", name);
  if (variant && tw_bench_variant_count(name) == 0)
    return tw_error_set(err, TW_EINVAL, "bench: kernel %s has no tuning variants (\"%s\")", name, variant);

  void *state = NULL;
  tw_status st;
#ifdef TW_WITH_CUDA
  if (strcmp(name, "gpu-stepwise") == 0) {
    st = tw_gpu_stepwise_create_variant(pb, variant, &state, err);
    if (!st && !rest) st = tw_gpu_stepwise_randomize(state, 12345u, err);
    if (st && state) be->destroy(state), state = NULL;
  } else if (strcmp(name, "gpu-diamond") == 0) {
    /* Random fields where it runs the stepwise kernel, so the two compare on the same data;
     * its own towers start from rest (the note says so). */
    st = be->create(pb, &state, err);
    if (!st && (rest || tw_gpu_diamond_randomize(state, 12345u, err) != TW_OK))
      snprintf(res->note, sizeof res->note, "%s", "fields start at rest");
  } else
#endif
    st = be->create(pb, &state, err);
  if (st) return st;

  long first, count;
  tw_samples_in(pb, 0, steps, &first, &count);
  float *taps = malloc((size_t)(count + 1) * (size_t)(pb->ntap + 1) * sizeof(float));
  double *sec = malloc((size_t)reps * sizeof *sec);
  if (!taps || !sec) st = tw_error_set(err, TW_ENOMEM, "out of memory");
  advance_call call = {be, state, 0, steps, taps};
  double cpu_best = 0;
  res->gpu_timed = be->needs_gpu;
  if (strcmp(name, "cpu-diamond") == 0) tw_cpu_diamond_params(pb, &res->dts, &res->tower_height, NULL);
  for (int r = -warmup; r < reps && !st; r++) {
    double s = 0;
#ifdef TW_WITH_CUDA
    if (be->needs_gpu) {
      st = tw_gpu_time_call(do_advance, &call, &s, err);
    } else
#endif
    {
      const double t0 = tw_wall_seconds(), c0 = cpu_seconds();
      st = do_advance(&call, err);
      s = tw_wall_seconds() - t0;
      const double cs = cpu_seconds() - c0;
      if (r >= 0 && cs > 0 && (cpu_best == 0 || cs < cpu_best)) cpu_best = cs;
    }
    call.t += steps;
    if (r >= 0) sec[r] = s;
  }
  if (!st) {
    const double upd = (double)tw_grid_cells(&pb->g) * (double)steps;
    qsort(sec, (size_t)reps, sizeof *sec, cmp_double);
    res->gcells_med = upd / sec[reps / 2] / 1e9;   /* upper median for even reps */
    res->gcells_min = upd / sec[reps - 1] / 1e9;
    res->gcells_max = upd / sec[0] / 1e9;
    res->gbytes_med = 16.0 * res->gcells_med;
    if (cpu_best > 0) res->gcells_cpu = upd / cpu_best / 1e9;
    if (be->report) {
      tw_run_report rep;
      memset(&rep, 0, sizeof rep);
      be->report(state, &rep);
      if (rep.window_planes)
        snprintf(res->note, sizeof res->note, "copy wait %.1f %%, %.0f MB in + %.0f MB out per step; %.160s",
                 100.0 * rep.copy_wait_frac, rep.bytes_in / 1e6 / (double)(call.t ? call.t : 1),
                 rep.bytes_out / 1e6 / (double)(call.t ? call.t : 1), rep.note);
      else
        snprintf(res->note, sizeof res->note, "%s", rep.note);
    }
  }
  free(taps);
  free(sec);
  be->destroy(state);
  return st;
}

/* ---------------------------------------------------------------- host ceilings */

double tw_cpu_update_fp_ops(int order) { return 9.0 * (order / 2) + 4.0; }

double tw_cpu_fp_ginst(const tw_host_ceilings *c) { return (c->fma_fused ? 1.0 : 2.0) * c->fma_gfmas; }

double tw_cpu_arith_ceiling(const tw_host_ceilings *c, int order) {
  return tw_cpu_fp_ginst(c) / tw_cpu_update_fp_ops(order);
}

double tw_cpu_update_bytes(const char *kernel, int order, int dts) {
  if (kernel && strncmp(kernel, "cpu-diamond", 11) == 0 && dts > 0) return 20.0 / dts; /* 20·r/R, R = r·dts */
  (void)order;
  return 16.0;
}

static volatile float bench_sink;

tw_status tw_bench_host_ceilings(int threads, size_t bytes, int reps, tw_host_ceilings *c, tw_error *err) {
  memset(c, 0, sizeof *c);
#ifdef _OPENMP
  c->threads = threads > 0 ? threads : omp_get_max_threads();
#else
  c->threads = 1;
#endif
  const int nt = c->threads;
  /* memory: three arrays of `bytes` each, first-touched by the threads that stream them */
  const size_t n = bytes / sizeof(float);
  float *a = tw_alloc_large(n * sizeof(float)), *b = tw_alloc_large(n * sizeof(float)),
        *q = tw_alloc_large(n * sizeof(float)); /* huge pages, as the CPU fields */
  if (!a || !b || !q) {
    free(a), free(b), free(q);
    return tw_error_set(err, TW_ENOMEM, "bench: cannot allocate 3 × %zu MiB for the memory ceiling", n * 4 >> 20);
  }
#pragma omp parallel for schedule(static) num_threads(nt)
  for (size_t i = 0; i < n; i++) a[i] = 1e-3f, b[i] = 2e-3f, q[i] = 0.5f;
  double best = 0;
  for (int r = 0; r < reps; r++) {
    const double t0 = tw_wall_seconds();
#pragma omp parallel for schedule(static) num_threads(nt)
    for (size_t i = 0; i < n; i++) b[i] = q[i] * a[i] - b[i]; /* 3 reads, 1 write in place */
    const double s = tw_wall_seconds() - t0;
    if (s > 0 && 16.0 * (double)n / s > best) best = 16.0 * (double)n / s;
  }
  c->mem_gbps = best / 1e9;
  free(a), free(b), free(q);
  /* arithmetic: n_it iterations of 96 multiply-adds per thread (the active variant of the CPU
   * kernels' code, cpu_update.c), the best of reps */
  const tw_cpu_impl *impl = tw_cpu_impl_active();
  c->fma_fused = impl->fused;
  c->variant = impl->name;
  const long n_it = 200000;
  best = 0;
  float sink = 0;
  for (int r = 0; r < reps; r++) {
    const double t0 = tw_wall_seconds();
#pragma omp parallel num_threads(nt) reduction(+ : sink)
    {
      sink += impl->fma_chains(n_it, 0.999f, 1e-3f);
    }
    const double s = tw_wall_seconds() - t0;
    const double rate = (double)nt * (double)n_it * 96.0 / s;
    if (s > 0 && rate > best) best = rate;
  }
  c->fma_gfmas = best / 1e9;
  bench_sink = sink; /* the chains' results are used */
  return TW_OK;
}

#ifndef TW_WITH_CUDA
/* Without CUDA: no GPU facts, no copy ceiling. */
int tw_cuda_built(void) { return 0; }
void tw_cuda_versions(int *runtime, int *driver) { *runtime = *driver = 0; }
tw_status tw_gpu_props_get(int device, tw_gpu_props *p, tw_error *err) {
  memset(p, 0, sizeof *p);
  return tw_error_set(err, TW_ENODEV, "GPU %d: this build has no CUDA", device);
}
tw_status tw_gpu_recip_check(float lo, float hi, long long *checked, long long *mismatches, float *first,
                             tw_error *err) {
  (void)lo, (void)hi, (void)first;
  *checked = *mismatches = 0;
  return tw_error_set(err, TW_ENODEV, "this build has no CUDA: no device reciprocal");
}
tw_status tw_bench_copy_gbps(size_t bytes, int reps, double *gbps, tw_error *err) {
  (void)bytes, (void)reps;
  *gbps = 0;
  return tw_error_set(err, TW_ENODEV, "this build has no CUDA: no copy ceiling");
}
#endif
