/* nonfinite.c — does a wavefield hold inf or NaN? The driver asks at every block boundary
 * (tw_backend_ops.find_nonfinite): an overflow (a source far too strong, a value that grows past
 * float32) must stop the run with an error naming the step, not end it with exit status 0 and
 * non-finite traces. A non-finite value never heals: inf − inf and every update that reads NaN
 * give NaN, and every cell it reaches stays non-finite, so checking the current level at each
 * block boundary finds it within one block.
 *
 * Cost: one read of one level, 4 B per cell, per block. A float is non-finite when its exponent
 * bits are all ones; the test is integer-only and vectorizes (one OR per value), so the scan runs
 * at memory speed, against the ≥ 16 B per cell and step of the update (measured: README). */
#include <stdint.h>
#include <string.h>

#include "cpu_fields.h"

#define TW_SCAN_CHUNK 16384L

long tw_find_nonfinite_f32(const float *a, size_t n, long long *count) {
  const long nchunk = (long)((n + TW_SCAN_CHUNK - 1) / TW_SCAN_CHUNK);
  long first = -1;
  long long found = 0;
#pragma omp parallel for schedule(static) reduction(+ : found)
  for (long c = 0; c < nchunk; c++) {
    const size_t lo = (size_t)c * TW_SCAN_CHUNK, hi = lo + TW_SCAN_CHUNK < n ? lo + TW_SCAN_CHUNK : n;
    uint32_t bad = 0;
    for (size_t i = lo; i < hi; i++) {
      uint32_t u;
      memcpy(&u, a + i, sizeof u);
      bad += (u & 0x7f800000u) == 0x7f800000u;
    }
    found += bad;
  }
  *count = found;
  if (!found) return -1;
  for (size_t i = 0; i < n && first < 0; i++) { /* only after an overflow: find where, serially */
    uint32_t u;
    memcpy(&u, a + i, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) first = (long)i;
  }
  return first;
}

long long tw_cpu_find_nonfinite(const tw_cpu_fields *f, int parity, int cell[3]) {
  long long count = 0;
  const long at = tw_find_nonfinite_f32(f->p[parity], f->size, &count);
  if (at < 0) return 0;
  /* offset = (i + h)·sx + (j + h)·sy + kz + k (cpu_fields.h); a halo or ghost cell (the free
   * surface's image, z padding) is reported at the grid cell next to it */
  const long h = f->h;
  cell[0] = (int)(at / f->sx - h) + f->x0;
  cell[1] = (int)(at % f->sx / f->sy - h);
  cell[2] = (int)(at % f->sy - f->kz);
  for (int a = 1; a < 3; a++)
    if (cell[a] < 0) cell[a] = 0;
  if (cell[0] < f->x0) cell[0] = f->x0;
  return count;
}

/* The scan reads the level once (4 B per cell): ~0.5 % of a 0.5 s block on the CPU, but up to
 * ~20 % of one step at order 2 (measured: 3 ms for 13.8 M cells against 14 ms per step); so a block
 * is skipped when the computing since the last scan is under 20 scans' time (the last block never
 * is): at most ~5 %, and every block when blocks have the driver's usual length. */
tw_status tw_finite_check(tw_finite_watch *w, const tw_backend_ops *be, void *state, const tw_problem *pb,
                          const char *job_path, long end, double block_s, tw_error *err) {
  w->since_s += block_s;
  if (end < pb->steps && w->since_s < 20.0 * w->scan_s) return TW_OK;
  const long t = w->ok;
  const double t0 = tw_wall_seconds();
  long long count = 0;
  int cell[3];
  tw_status st = be->find_nonfinite ? be->find_nonfinite(state, &count, cell, err) : TW_OK;
  w->scan_s = tw_wall_seconds() - t0;
  w->since_s = 0.0;
  w->ok = end;
  if (st || !count) return st;
  const tw_grid *g = &pb->g;
  const long long cells = (long long)tw_grid_cells(g);
  if (count > cells) count = cells; /* the CPU layout's free-surface ghosts count too */
  int k[3], m[3], inside = 1; /* model cell in the kernels' axes, then the job's */
  for (int a = 0; a < 3; a++) k[a] = cell[a] - g->lo[a], inside &= k[a] >= 0 && k[a] < g->n[a];
  tw_xy_cell(pb->swap_xy, k, m);
  return tw_error_set(err, TW_ERANGE, "%s: the wavefield became non-finite (inf or NaN: float32 overflowed) between "
                      "step %ld (finite) and step %ld: %lld of %lld cells, e.g. model cell (%d, %d, %d)%s; nothing "
                      "was written. A source far too strong, or values growing without bound: check the wavelets' "
                      "amplitudes", job_path, t, end, count, cells, m[0], m[1], m[2],
                      inside ? "" : " (in the absorbing layers)");
}
