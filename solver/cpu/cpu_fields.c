#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "cpu_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

void tw_zero_floats(float *p, size_t n) {
  const size_t chunk = (size_t)1 << 20;
  const long nchunk = (long)((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < nchunk; c++) {
    const size_t lo = (size_t)c * chunk, len = n - lo < chunk ? n - lo : chunk;
    memset(p + lo, 0, len * sizeof *p);
  }
}

#ifdef TW_DEBUG_LEVELS
/* The shadow of fresh fields: grid planes at levels 0 (p[0]) and −1 (p[1]), a ring poisoned (its
 * planes get levels with the copies in), halo columns TW_LEVEL_ANY. */
static void init_levels(tw_cpu_fields *f) {
  const size_t ncol = f->size / (size_t)f->sy;
  for (int a = 0; a < 2; a++)
    for (size_t c = 0; c < ncol; c++) f->lvl[a][c] = TW_LEVEL_ANY;
  if (f->wrap) {
    for (int sl = -f->h; sl < f->wrap + f->h; sl++)
      for (int a = 0; a < 2; a++) tw_debug_level_plane(f, sl, NULL, 0, a, TW_LEVEL_POISON);
    return;
  }
  for (int i = f->x0; i < f->x0 + f->nx; i++)
    for (int a = 0; a < 2; a++) tw_debug_level_plane(f, tw_cpu_slot(f, i), NULL, 0, a, a == 0 ? 0 : -1);
}
#endif

void tw_cpu_fields_zero(tw_cpu_fields *f) {
  tw_zero_floats(f->p[0], f->size);
  tw_zero_floats(f->p[1], f->size);
#ifdef TW_DEBUG_LEVELS
  init_levels(f);
#endif
}

/* ---------------------------------------------------------------- variants of the hot code */
void tw_cpu_update_row_base(const tw_problem *pb, tw_cpu_fields *f, int i, int y0, int y1, long n,
                            const tw_tap_sink *sink);
float tw_cpu_fma_chains_base(long n, float a, float b);
extern const int tw_cpu_fused_base, tw_cpu_vw_base;
#define TW_CPU_VARIANT_DECL(v)                                                                      \
  void tw_cpu_update_row_##v(const tw_problem *pb, tw_cpu_fields *f, int i, int y0, int y1, long n, \
                             const tw_tap_sink *sink);                                              \
  float tw_cpu_fma_chains_##v(long n, float a, float b);                                            \
  extern const int tw_cpu_fused_##v, tw_cpu_vw_##v;
#ifdef TW_HAVE_CPU_V3
TW_CPU_VARIANT_DECL(v3)
#endif
#ifdef TW_HAVE_CPU_V4
TW_CPU_VARIANT_DECL(v4)
#endif

static const tw_cpu_impl *impl_active;

/* The variants of this build, best first, each with whether this CPU runs it. */
static int impl_list(const tw_cpu_impl **list, int *runs) {
  /* filled once at run time: the `fused` flags are constants of other translation units */
  static tw_cpu_impl base;
  if (!base.name)
    base = (tw_cpu_impl){"base", tw_cpu_update_row_base, tw_cpu_fma_chains_base, tw_cpu_fused_base, tw_cpu_vw_base};
  int n = 0;
#if defined(TW_HAVE_CPU_V3) || defined(TW_HAVE_CPU_V4)
  __builtin_cpu_init();
#endif
#ifdef TW_HAVE_CPU_V4
  static tw_cpu_impl v4;
  if (!v4.name) v4 = (tw_cpu_impl){"v4", tw_cpu_update_row_v4, tw_cpu_fma_chains_v4, tw_cpu_fused_v4, tw_cpu_vw_v4};
  list[n] = &v4, runs[n++] = __builtin_cpu_supports("x86-64-v4");
#endif
#ifdef TW_HAVE_CPU_V3
  static tw_cpu_impl v3;
  if (!v3.name) v3 = (tw_cpu_impl){"v3", tw_cpu_update_row_v3, tw_cpu_fma_chains_v3, tw_cpu_fused_v3, tw_cpu_vw_v3};
  list[n] = &v3, runs[n++] = __builtin_cpu_supports("x86-64-v3");
#endif
  list[n] = &base, runs[n++] = 1;
  return n;
}

/* The named variant (NULL: the best this CPU runs), or NULL when this build or CPU lacks it. */
static const tw_cpu_impl *impl_find(const char *name) {
  const tw_cpu_impl *list[3];
  int runs[3];
  const int n = impl_list(list, runs);
  for (int i = 0; i < n; i++)
    if (runs[i] && (!name || strcmp(name, list[i]->name) == 0)) return list[i];
  return NULL;
}

const tw_cpu_impl *tw_cpu_impl_active(void) {
  if (!impl_active) { /* TW_CPU_VARIANT=base|v3|v4 forces one (A/B timings); one this CPU lacks is ignored */
    const char *v = getenv("TW_CPU_VARIANT");
    impl_active = v && *v ? impl_find(v) : NULL;
    if (!impl_active) impl_active = impl_find(NULL);
  }
  return impl_active;
}

int tw_cpu_tower_align(int Nz, int h) {
  const int vw = tw_cpu_impl_active()->vw, a = TW_CPU_ALIGN_STEPWISE;
  const int v = vw < a ? a : vw > TW_CPU_ALIGN_MAX ? TW_CPU_ALIGN_MAX : vw;
  return 16 * tw_cpu_pitch(Nz, h, v) <= 17 * tw_cpu_pitch(Nz, h, a) ? v : a;
}

int tw_cpu_impl_select(const char *name) {
  const tw_cpu_impl *i = impl_find(name);
  if (i) impl_active = i;
  return i != NULL;
}

void tw_cpu_update_row(const tw_problem *pb, tw_cpu_fields *f, int i, int y0, int y1, long n,
                       const tw_tap_sink *sink) {
  impl_active->update_row(pb, f, i, y0, y1, n, sink); /* set by tw_cpu_fields_create */
}

void tw_cpu_strides(const tw_problem *pb, int align, long *sy, long *sx) {
  const int h = pb->st.r;
  *sy = tw_cpu_pitch(pb->g.N[2], h, align);
  *sx = *sy * (long)(pb->g.N[1] + 2 * h);
}

int tw_cpu_threads_of(int requested) {
#ifdef _OPENMP
  return requested > 0 ? requested : omp_get_max_threads();
#else
  (void)requested;
  return 1;
#endif
}
int tw_cpu_threads(const tw_problem *pb) { return tw_cpu_threads_of(pb->threads); }

long tw_cpu_cache_bytes(int level) {
  static long size[4];
  if (level < 1 || level > 3) return 0;
  if (size[level]) return size[level];
  long bytes = 0;
  /* Linux sysfs first: glibc's sysconf reported a 256 MiB L3 for this VM's 32 MiB */
  for (int idx = 0; idx < 8 && !bytes; idx++) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
    FILE *f = fopen(path, "r");
    int lv = 0;
    if (!f) break;
    if (fscanf(f, "%d", &lv) != 1) lv = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
    char type[32] = "";
    if ((f = fopen(path, "r"))) {
      if (fscanf(f, "%31s", type) != 1) type[0] = 0;
      fclose(f);
    }
    if (lv != level || strcmp(type, "Instruction") == 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
    if ((f = fopen(path, "r"))) {
      long k = 0;
      char unit = 'K';
      if (fscanf(f, "%ld%c", &k, &unit) >= 1) bytes = unit == 'M' ? k << 20 : k << 10;
      fclose(f);
    }
  }
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (!bytes) bytes = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
#endif
  if (bytes <= 0) bytes = level == 1 ? 32L << 10 : level == 2 ? 512L << 10 : 8L << 20;
  return size[level] = bytes;
}

int tw_cpu_yblocks(const tw_problem *pb, int threads, int *by) {
  const int N1 = pb->g.N[1], r = pb->st.r;
  long sy, sx;
  tw_cpu_strides(pb, TW_CPU_ALIGN_STEPWISE, &sy, &sx); /* `cpu`'s layout: its blocks */
  /* the 2r + 1 planes of level n that a sweep along x keeps, in each thread's half share of the
   * L3 (docs/performance.md: blocks sized for the L2 measured slower, the y halos re-read) */
  long want = tw_cpu_cache_bytes(3) / 2 / threads / ((2L * r + 1) * sy * (long)sizeof(float)) - 2L * r;
  if (want < 8) want = 8;
  int nb = (int)((N1 + want - 1) / want);
  if (nb < threads) nb = threads < N1 ? threads : N1;
  nb = (nb + threads - 1) / threads * threads; /* every thread the same number of blocks */
  if (nb > N1) nb = N1;
  *by = (N1 + nb - 1) / nb;
  return (N1 + *by - 1) / *by;
}

/* Arrays for nx planes plus the halo, zeroed, on huge pages where the system gives them
 * (tw_alloc_large: the memory-bound stepwise kernel +11-12 % against 4 KiB pages, whose ends stop
 * the hardware prefetchers). The first write of every page (which places it near the thread that
 * writes it first, on a machine with several memory nodes) is made by the thread that will update
 * it in the stepwise kernel: y-block b's columns, halo columns with the first and last block, by
 * the same static OpenMP schedule as cpu.c. c²dt² is copied in the same loop. */
static tw_status fields_alloc(const tw_problem *pb, int x0, int nx, int align, int copy_c2, tw_cpu_fields *f,
                              tw_error *err) {
  const tw_grid *g = &pb->g;
  tw_cpu_impl_active(); /* choose the variant here, before any thread runs a kernel */
  memset(f, 0, sizeof *f);
  if (align < 8 || align > TW_CPU_ALIGN_MAX || align & (align - 1))
    return tw_error_set(err, TW_EINTERNAL, "CPU fields: column alignment %d floats (allowed 8 … %d, a power of 2)",
                        align, TW_CPU_ALIGN_MAX);
  f->h = pb->st.r;
  f->align = align;
  f->kz = tw_cpu_kz(f->h, align);
  f->x0 = x0;
  f->nx = nx;
  tw_cpu_strides(pb, align, &f->sy, &f->sx);
  f->size = (size_t)f->sx * (size_t)(nx + 2 * f->h);
  f->base = (size_t)f->h * (size_t)(f->sx + f->sy) + (size_t)f->kz;
  for (int a = 0; a < 2; a++) f->p[a] = tw_alloc_large(f->size * sizeof(float));
  f->c2 = tw_alloc_large(f->size * sizeof(float));
#ifdef TW_DEBUG_LEVELS
  const size_t ncol = f->size / (size_t)f->sy;
  for (int a = 0; a < 2; a++) f->lvl[a] = malloc(ncol * sizeof(long));
  if (!f->lvl[0] || !f->lvl[1]) {
    tw_cpu_fields_destroy(f);
    return tw_error_set(err, TW_ENOMEM, "cannot allocate the time-level shadow");
  }
#endif
  if (!f->p[0] || !f->p[1] || !f->c2) {
    tw_cpu_fields_destroy(f);
    return tw_error_set(err, TW_ENOMEM, "cannot allocate %zu MiB for the CPU fields",
                        3 * f->size * sizeof(float) >> 20);
  }
  const int threads = tw_cpu_threads(pb), N1 = g->N[1];
  int by;
  const int nb = tw_cpu_yblocks(pb, threads, &by);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int b = 0; b < nb; b++) {
    const int c0 = b == 0 ? -f->h : b * by, c1 = b == nb - 1 ? N1 + f->h : (b + 1) * by; /* columns */
    const size_t len = (size_t)(c1 - c0) * (size_t)f->sy;
    for (int sl = -f->h; sl < nx + f->h; sl++) {
      const size_t o = (size_t)(f->h + sl) * (size_t)f->sx + (size_t)(f->h + c0) * (size_t)f->sy;
      for (int a = 0; a < 3; a++) memset((a < 2 ? f->p[a] : f->c2) + o, 0, len * sizeof(float));
      const int i = x0 + sl;
      if (!copy_c2 || sl < 0 || sl >= nx) continue;
      for (int j = b * by; j < (b + 1) * by && j < N1; j++)
        memcpy(f->c2 + tw_cpu_off(f, i, j, 0), pb->c2dt2 + tw_grid_index(g, i, j, 0), (size_t)g->N[2] * sizeof(float));
    }
  }
  return TW_OK;
}

tw_status tw_cpu_fields_create(const tw_problem *pb, int x0, int nx, int align, tw_cpu_fields *f, tw_error *err) {
  tw_status st = fields_alloc(pb, x0, nx, align, 1, f, err);
  if (st) return st;
#ifdef TW_DEBUG_LEVELS
  init_levels(f);
#endif
  return TW_OK;
}

tw_status tw_cpu_fields_create_ring(const tw_problem *pb, int W, const tw_cpu_fields *like, tw_cpu_fields *f,
                                    tw_error *err) {
  if (W < 2 * pb->st.r)
    return tw_error_set(err, TW_EINTERNAL, "window ring of %d planes is below 2r = %d", W, 2 * pb->st.r);
  tw_status st = fields_alloc(pb, 0, W, like->align, 0, f, err);
  if (!st) f->wrap = W;
#ifdef TW_DEBUG_LEVELS
  if (!st) init_levels(f);
#endif
  return st;
}

void tw_cpu_flush_denormals(void) {
#if defined(__SSE__) || defined(__x86_64__)
  _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
#endif
}

void tw_cpu_fields_destroy(tw_cpu_fields *f) {
#ifdef TW_DEBUG_LEVELS
  free(f->lvl[0]);
  free(f->lvl[1]);
#endif
  free(f->p[0]);
  free(f->p[1]);
  free(f->c2);
  memset(f, 0, sizeof *f);
}

#ifdef TW_DEBUG_LEVELS
static long level_errors;
static char level_first[256];

long tw_debug_level_errors(char *first, size_t len) {
  long n;
#pragma omp critical(tw_debug_levels)
  {
    n = level_errors;
    if (first && len) snprintf(first, len, "%s", level_first);
  }
  return n;
}

void tw_debug_level_reset(void) {
#pragma omp critical(tw_debug_levels)
  {
    level_errors = 0;
    level_first[0] = 0;
  }
}

void tw_debug_level_plane(tw_cpu_fields *to, int dst_slot, const tw_cpu_fields *from, int src_slot, int a,
                          long level) {
  const size_t ncol = (size_t)(to->sx / to->sy); /* columns per plane, y halos included */
  long *d = to->lvl[a] + (size_t)(to->h + dst_slot) * ncol;
  for (size_t c = 0; c < ncol; c++) {
    const int y_halo = c < (size_t)to->h || c >= ncol - (size_t)to->h;
    d[c] = from ? from->lvl[a][(size_t)(from->h + src_slot) * ncol + c] : (y_halo ? TW_LEVEL_ANY : level);
  }
}

static void level_bad(int i, int j, long n, const char *what, long got, long want) {
#pragma omp critical(tw_debug_levels)
  {
    if (!level_errors++)
      snprintf(level_first, sizeof level_first, "column (%d, %d), step %ld → %ld: %s holds level %ld, needs %ld", i,
               j, n, n + 1, what, got, want);
  }
}

void tw_debug_level_step(tw_cpu_fields *f, int r, int i, int j, long n, size_t c0) {
  const long *cur = f->lvl[n % 2], *old = f->lvl[(n + 1) % 2];
  const size_t c = tw_cpu_col(f, c0), px = (size_t)(f->sx / f->sy);
  for (int m = 1; m <= r; m++) {
    const size_t nb[4] = {c - m * px, c + m * px, c - m, c + m};
    static const char *const name[4] = {"neighbour x−m", "neighbour x+m", "neighbour y−m", "neighbour y+m"};
    for (int e = 0; e < 4; e++)
      if (cur[nb[e]] != n && cur[nb[e]] != TW_LEVEL_ANY) level_bad(i, j, n, name[e], cur[nb[e]], n);
  }
  if (old[c] != n - 1) level_bad(i, j, n, "its own older level", old[c], n - 1);
  f->lvl[(n + 1) % 2][c] = n + 1;
}
#endif

void tw_cpu_ring_sync_row(tw_cpu_fields *f, int i, int y0, int y1, int parity) {
  int m;
  const int slot = tw_cpu_slot(f, i);
  if (y0 >= y1 || !tw_cpu_ring_mirror(f, slot, &m)) return;
  /* columns y0 … y1−1 with the z halos between them: one contiguous run; the halos are the
   * row's own free-surface ghosts, never read through a mirror, so copying them is harmless */
  float *a = f->p[parity];
  const size_t o = (size_t)y0 * (size_t)f->sy, len = (size_t)(y1 - y0) * (size_t)f->sy;
  memcpy(tw_cpu_plane(f, a, m) + f->h * f->sy + o, tw_cpu_plane(f, a, slot) + f->h * f->sy + o, len * sizeof(float));
#ifdef TW_DEBUG_LEVELS
  const size_t ncol = (size_t)(f->sx / f->sy);
  for (int y = y0; y < y1; y++)
    f->lvl[parity][(size_t)(f->h + m) * ncol + f->h + y] = f->lvl[parity][(size_t)(f->h + slot) * ncol + f->h + y];
#endif
}

void tw_gather_box(const float *p, size_t sx, size_t sy, const int lo[3], const int cnt[3], int dec, float *out) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int a = 0; a < cnt[0]; a++)
    for (int b = 0; b < cnt[1]; b++) {
      const float *col = p + (size_t)(lo[0] + a * dec) * sx + (size_t)(lo[1] + b * dec) * sy + (size_t)lo[2];
      float *o = out + ((size_t)a * cnt[1] + b) * cnt[2];
      for (int c = 0; c < cnt[2]; c++) o[c] = col[(size_t)c * dec];
    }
}

void tw_cpu_extract(const tw_cpu_fields *f, int parity, const int lo[3], const int cnt[3], int dec, float *out) {
  const float *p = f->p[parity];
  /* all threads: a snapshot can be gigabytes, and the time loop waits for its extraction */
#pragma omp parallel for collapse(2) schedule(static)
  for (int a = 0; a < cnt[0]; a++)
    for (int b = 0; b < cnt[1]; b++) {
      const float *col = p + tw_cpu_off(f, lo[0] + a * dec, lo[1] + b * dec, lo[2]);
      float *o = out + ((size_t)a * cnt[1] + b) * cnt[2];
      for (int c = 0; c < cnt[2]; c++) o[c] = col[(size_t)c * dec];
    }
}

void tw_cpu_planes(tw_cpu_fields *f, const tw_grid *g, long level, int x0, int nx, float *cur, float *prev, int load) {
  const int N1 = g->N[1], N2 = g->N[2];
  float *buf[2] = {cur, prev};
  const size_t row = (size_t)N2 * sizeof(float);
#pragma omp parallel for collapse(2) schedule(static)
  for (int a = 0; a < 2; a++)
    for (int i = x0; i < x0 + nx; i++) {
      float *fa = f->p[(level + a) % 2]; /* a = 0: level, in p[level % 2]; a = 1: level − 1 */
      for (int j = 0; j < N1; j++) {
        float *c = buf[a] + ((size_t)(i - x0) * N1 + j) * N2, *o = fa + tw_cpu_off(f, i, j, 0);
        if (load) memcpy(o, c, row);
        else memcpy(c, o, row);
      }
#ifdef TW_DEBUG_LEVELS
      if (load) tw_debug_level_plane(f, tw_cpu_slot(f, i), NULL, 0, (int)((level + a) % 2), level - a);
#endif
    }
}
