#include "cpu_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Zeroed arrays for nx planes plus the halo. */
static tw_status fields_alloc(const tw_problem *pb, int x0, int nx, tw_cpu_fields *f, tw_error *err) {
  const tw_grid *g = &pb->g;
  memset(f, 0, sizeof *f);
  f->h = pb->st.r;
  f->x0 = x0;
  f->nx = nx;
  f->sy = g->N[2] + 2 * f->h;
  f->sx = f->sy * (long)(g->N[1] + 2 * f->h);
  f->size = (size_t)f->sx * (size_t)(nx + 2 * f->h);
  f->base = (size_t)f->h * (size_t)(f->sx + f->sy + 1);
  /* Zeroed by all threads, on huge pages where the system gives them (the first touch is most of
   * the set-up of a large grid). */
  for (int a = 0; a < 2; a++) f->p[a] = tw_alloc_large(f->size * sizeof(float));
  f->c2 = tw_alloc_large(f->size * sizeof(float));
  for (int a = 0; a < 3; a++) {
    float *q = a < 2 ? f->p[a] : f->c2;
    if (q) tw_zero_floats(q, f->size);
  }
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
  return TW_OK;
}

tw_status tw_cpu_fields_create(const tw_problem *pb, int x0, int nx, tw_cpu_fields *f, tw_error *err) {
  const tw_grid *g = &pb->g;
  tw_status st = fields_alloc(pb, x0, nx, f, err);
  if (st) return st;
#pragma omp parallel for schedule(static)
  for (int i = x0; i < x0 + nx; i++)
    for (int j = 0; j < g->N[1]; j++)
      memcpy(f->c2 + tw_cpu_off(f, i, j, 0), pb->c2dt2 + tw_grid_index(g, i, j, 0), (size_t)g->N[2] * sizeof(float));
#ifdef TW_DEBUG_LEVELS
  init_levels(f);
#endif
  return TW_OK;
}

tw_status tw_cpu_fields_create_ring(const tw_problem *pb, int W, tw_cpu_fields *f, tw_error *err) {
  if (W < 2 * pb->st.r)
    return tw_error_set(err, TW_EINTERNAL, "window ring of %d planes is below 2r = %d", W, 2 * pb->st.r);
  tw_status st = fields_alloc(pb, 0, W, f, err);
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

/* Lists are sorted by (i, j, k): binary search for the first entry >= (i, j, 0). */
static long lower_bound(const int (*c)[3], long n, int i, int j) {
  long lo = 0, hi = n;
  while (lo < hi) {
    long mid = (lo + hi) / 2;
    if (c[mid][0] < i || (c[mid][0] == i && c[mid][1] < j)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void tw_column_range(const int (*cells)[3], long n, int i, int j, long *lo, long *hi) {
  long a = lower_bound(cells, n, i, j), b = a;
  while (b < n && cells[b][0] == i && cells[b][1] == j) b++;
  *lo = a;
  *hi = b;
}

/* Update cells k in [k0, k1) of one column, no source term. */
/* Always inlined with a literal r (see update_run_r) so the stencil loop unrolls. */
/* Cells k in [k0, k1) of one column; damped selects the general update (compile-time after
 * inlining, so the undamped loop has no branch and vectorizes). */
static inline __attribute__((always_inline)) void update_cells(const tw_problem *pb, tw_cpu_fields *f, float *cur,
                                                               float *old, size_t c0, float ax, float ay, int k0,
                                                               int k1, const int r, const int damped) {
  const float *az = pb->a[2];
  for (int k = k0; k < k1; k++) {
    const size_t c = c0 + k;
    float lap = tw_laplacian(r, &pb->st, cur + c, f->sx, cur + c, f->sy, cur + c, 1);
    old[c] = damped ? tw_cell_update(cur[c], old[c], lap, f->c2[c], tw_damping(ax, ay, az[k]))
                    : tw_cell_update_undamped(cur[c], old[c], lap, f->c2[c]);
  }
}

/* Always inlined with a literal r (see update_run) so the stencil loop unrolls. In a column with
 * ax = ay = 0, the model's own z range [lo, lo + n) has a = (0 + 0) + 0 = 0 exactly: those
 * cells take the undamped path, which is the same arithmetic (tw_stencil.h). */
static inline __attribute__((always_inline)) void update_run_k(const tw_problem *pb, tw_cpu_fields *f, float *cur,
                                                               float *old, size_t c0, float ax, float ay, int k0,
                                                               int k1, const int r) {
  int lo = pb->g.lo[2], hi = pb->g.lo[2] + pb->g.n[2];
  if (ax != 0.0f || ay != 0.0f || lo >= k1 || hi <= k0) {
    update_cells(pb, f, cur, old, c0, ax, ay, k0, k1, r, 1);
    return;
  }
  if (lo < k0) lo = k0;
  if (hi > k1) hi = k1;
  update_cells(pb, f, cur, old, c0, ax, ay, k0, lo, r, 1);
  update_cells(pb, f, cur, old, c0, ax, ay, lo, hi, r, 0);
  update_cells(pb, f, cur, old, c0, ax, ay, hi, k1, r, 1);
}

static void update_run(const tw_problem *pb, tw_cpu_fields *f, float *cur, float *old, size_t c0, float ax,
                       float ay, int k0, int k1) {
  switch (pb->st.r) {
    case 1: update_run_k(pb, f, cur, old, c0, ax, ay, k0, k1, 1); break;
    case 2: update_run_k(pb, f, cur, old, c0, ax, ay, k0, k1, 2); break;
    case 3: update_run_k(pb, f, cur, old, c0, ax, ay, k0, k1, 3); break;
    case 4: update_run_k(pb, f, cur, old, c0, ax, ay, k0, k1, 4); break;
    default: update_run_k(pb, f, cur, old, c0, ax, ay, k0, k1, pb->st.r); break;
  }
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

/* Assert the levels column (i, j) reads to go from n to n + 1. */
static void level_check(const tw_cpu_fields *f, int r, int i, int j, long n, size_t c0) {
  const long *cur = f->lvl[n % 2], *old = f->lvl[(n + 1) % 2];
  const size_t c = tw_cpu_col(f, c0), px = (size_t)(f->sx / f->sy);
  for (int m = 1; m <= r; m++) {
    const size_t nb[4] = {c - m * px, c + m * px, c - m, c + m};
    static const char *const name[4] = {"neighbour x−m", "neighbour x+m", "neighbour y−m", "neighbour y+m"};
    for (int e = 0; e < 4; e++)
      if (cur[nb[e]] != n && cur[nb[e]] != TW_LEVEL_ANY) level_bad(i, j, n, name[e], cur[nb[e]], n);
  }
  if (old[c] != n - 1) level_bad(i, j, n, "its own older level", old[c], n - 1);
}
#endif

void tw_cpu_update_column(const tw_problem *pb, tw_cpu_fields *f, int i, int j, long n, const tw_tap_sink *sink) {
  const int r = pb->st.r, Nz = pb->g.N[2];
  float *cur = f->p[n % 2], *old = f->p[(n + 1) % 2];
  const size_t c0 = tw_cpu_off(f, i, j, 0);
#ifdef TW_DEBUG_LEVELS
  level_check(f, r, i, j, n, c0);
  f->lvl[(n + 1) % 2][tw_cpu_col(f, c0)] = n + 1;
#endif
  if (pb->free_surface) /* image method: ghost −m mirrors +m with the opposite sign */
    for (int m = 1; m <= r; m++) cur[c0 - m] = m < Nz ? -cur[c0 + m] : 0.0f;
  const float ax = pb->a[0][i], ay = pb->a[1][j];
  long lo = 0, hi = 0;
  if (pb->ninj) tw_column_range((const int (*)[3])pb->inj, pb->ninj, i, j, &lo, &hi);
  /* Runs of plain cells between the column's source cells (sorted by k, unique). */
  int k = 0;
  for (long s = lo; s < hi; s++) {
    const int ks = pb->inj[s][2];
    update_run(pb, f, cur, old, c0, ax, ay, k, ks);
    const size_t c = c0 + ks;
    float lap = tw_laplacian(r, &pb->st, cur + c, f->sx, cur + c, f->sy, cur + c, 1) + pb->S[s * pb->steps + n];
    old[c] = tw_cell_update(cur[c], old[c], lap, f->c2[c], tw_damping(ax, ay, pb->a[2][ks]));
    k = ks + 1;
  }
  update_run(pb, f, cur, old, c0, ax, ay, k, Nz);
  /* Taps of this column, when level n + 1 is a sample. */
  if (sink && pb->ntap && (n + 1) % pb->interval == 0) {
    long tlo, thi;
    tw_column_range((const int (*)[3])pb->tap, pb->ntap, i, j, &tlo, &thi);
    float *row = sink->taps + ((n + 1) / pb->interval - sink->first) * pb->ntap;
    for (long t = tlo; t < thi; t++) row[t] = old[c0 + pb->tap[t][2]];
  }
}

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

void tw_cpu_extract(const tw_cpu_fields *f, int parity, const int lo[3], const int cnt[3], int dec, float *out) {
  const float *p = f->p[parity];
  size_t o = 0;
  for (int a = 0; a < cnt[0]; a++)
    for (int b = 0; b < cnt[1]; b++) {
      const float *col = p + tw_cpu_off(f, lo[0] + a * dec, lo[1] + b * dec, lo[2]);
      for (int c = 0; c < cnt[2]; c++) out[o++] = col[(size_t)c * dec];
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
