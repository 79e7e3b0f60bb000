/* cpu_fields.h — internal to solver/: the host layout of the CPU kernels and the one column
 * update they share (cpu steps the grid plane by plane, cpu-diamond tower by tower; both call
 * tw_cpu_update_column, so they are bitwise identical by construction of the schedule alone).
 *
 * Layout: every array carries a zero halo of h = r cells on each face, so a stencil read never
 * leaves the allocation and reads 0 outside the padded grid (DESIGN §1: p = 0 outside).
 * Cell (i, j, k) of the padded grid is at base + i·sx + j·sy + k, with base = h·(sx + sy + 1). */
#ifndef TW_CPU_FIELDS_H
#define TW_CPU_FIELDS_H

#include "problem.h"

typedef struct tw_cpu_fields {
  int h;                     /* halo = stencil radius */
  long sx, sy;               /* strides of x and y (z stride is 1) */
  size_t base, size;         /* offset of cell (0,0,0); floats per array */
  float *p[2];               /* level m is in p[m % 2] */
  float *c2;                 /* c²dt² (halo cells unused) */
  int x0, nx;                /* x-planes held: [x0, x0 + nx) (window); whole grid: 0, N0 */
  int wrap;                  /* 0: planes as above. W > 0: a ring of nx = W planes (window.c),
                              * plane x in slot x mod W; the x-halo planes mirror the slots at the
                              * other end of the ring (tw_cpu_ring_mirror) */
#ifdef TW_DEBUG_LEVELS
  long *lvl[2];              /* time level held by each column of p[a], indexed by offset / sy
                              * (tw_cpu_col); TW_LEVEL_ANY: a zero halo column, any level reads */
#endif
} tw_cpu_fields;

/* Where a column update records receiver taps. */
typedef struct tw_tap_sink {
  float *taps;               /* [sample − first][ntap] */
  long first;                /* first sample of this advance call */
} tw_tap_sink;

/* Slot of x-plane i: i − x0, or i mod W in a ring. */
static inline int tw_cpu_slot(const tw_cpu_fields *f, int i) {
  if (!f->wrap) return i - f->x0;
  const int s = i % f->wrap;
  return s < 0 ? s + f->wrap : s;
}

static inline size_t tw_cpu_off(const tw_cpu_fields *f, int i, int j, int k) {
  return f->base + (size_t)tw_cpu_slot(f, i) * (size_t)f->sx + (size_t)j * (size_t)f->sy + (size_t)k;
}

/* Ring mirrors. A stencil read x ± m (m ≤ h) with a constant stride sx must not fall off the
 * ring, so the h halo planes before slot 0 and after slot W − 1 hold copies of the slots at the
 * other end: slot σ < h is mirrored at σ + W, slot σ ≥ W − h at σ − W (needs W ≥ 2h). Whoever
 * writes a mirrored slot writes the mirror too, in the same thread, right after: readers see the
 * same values in the same order (same dependency argument, schedule.h). Returns 1 and the
 * mirror's slot (offset it like a slot, may be negative) when σ has one. */
static inline int tw_cpu_ring_mirror(const tw_cpu_fields *f, int slot, int *mirror) {
  if (!f->wrap) return 0;
  if (slot < f->h) *mirror = slot + f->wrap;
  else if (slot >= f->wrap - f->h) *mirror = slot - f->wrap;
  else return 0;
  return 1;
}

/* Address of the first float of plane slot σ (σ ∈ [−h, nx + h)), halos included: sx floats. */
static inline float *tw_cpu_plane(const tw_cpu_fields *f, float *a, int slot) {
  return a + (ptrdiff_t)(f->h + slot) * f->sx;
}

/* Allocate zeroed fields for x-planes [x0, x0 + nx) of the padded grid (nx = N0: all), and
 * copy c²dt² for them from the problem. */
tw_status tw_cpu_fields_create(const tw_problem *pb, int x0, int nx, tw_cpu_fields *f, tw_error *err);
/* A ring of W x-planes (W ≥ 2h) for the sliding window: zeroed, no c²dt² (planes come in with
 * tw_window's copies). */
tw_status tw_cpu_fields_create_ring(const tw_problem *pb, int W, tw_cpu_fields *f, tw_error *err);
void tw_cpu_fields_destroy(tw_cpu_fields *f);
/* Both levels back to zero, as created (a new shot; c²dt² stays). */
void tw_cpu_fields_zero(tw_cpu_fields *f);

/* Index ranges [lo, hi) of the sorted cell lists (inj or tap) that lie in column (i, j). */
void tw_column_range(const int (*cells)[3], long n, int i, int j, long *lo, long *hi);

/* Advance column (i, j) from level n to n + 1: free-surface ghosts of level n (image method),
 * the update of every k with the column's sources, then the taps of the column if level n + 1
 * is a sample. Reads levels n (x, y, z neighbours) and n − 1 (own cells) only. */
void tw_cpu_update_column(const tw_problem *pb, tw_cpu_fields *f, int i, int j, long n, const tw_tap_sink *sink);

/* In a ring, after columns [y0, y1) of plane i were updated into level array `parity`, copy them
 * to the plane's mirror if it has one (no-op otherwise; see tw_cpu_ring_mirror). */
void tw_cpu_ring_sync_row(tw_cpu_fields *f, int i, int y0, int y1, int parity);

/* Flush denormals to zero (FTZ and DAZ) in the calling thread. Every CPU kernel calls it in
 * each of its threads before updating cells: the leading edge of a wavefront and the absorbing
 * layers otherwise fill the grid with denormals, which x86 handles ~100x slower. All CPU
 * kernels flush alike, so they stay bitwise equal; against the GPU (which keeps denormals) the
 * difference is below 1e-38 absolute. */
void tw_cpu_flush_denormals(void);

#ifdef TW_DEBUG_LEVELS
/* The time-level shadow (cmake -DTW_DEBUG_LEVELS=ON): every column update asserts that its x/y
 * neighbours within r hold level n in p[n % 2] and its own p[(n+1) % 2] holds level n − 1, then
 * records level n + 1. Grid columns start at levels 0 (p[0]) and −1 (p[1]); a ring starts
 * poisoned (TW_LEVEL_POISON never matches) and gets levels with the planes copied in. A wrong
 * read is counted (library code does not print): tw_debug_level_errors returns the count since
 * the last reset and the first violation in words. */
#define TW_LEVEL_ANY (-(1L << 62))
#define TW_LEVEL_POISON (-(1L << 61))
static inline size_t tw_cpu_col(const tw_cpu_fields *f, size_t off) { return off / (size_t)f->sy; }
long tw_debug_level_errors(char *first, size_t len);
void tw_debug_level_reset(void);
/* Copy the shadow of whole plane src_slot of fields `from` (array a) to dst_slot of `to`, or
 * set it to `level` when from is NULL. */
void tw_debug_level_plane(tw_cpu_fields *to, int dst_slot, const tw_cpu_fields *from, int src_slot, int a,
                          long level);
#endif

/* Checkpoints (tw_backend_ops save/load): x-planes [x0, x0 + nx) of level `level` (cur) and
 * level − 1 (prev), canonical [nx][N1][N2], out of whole-grid fields (load = 0) or into them
 * (load = 1; the halos stay as they are: zero, and the free-surface ghosts are rewritten by every
 * column update before they are read). */
void tw_cpu_planes(tw_cpu_fields *f, const tw_grid *g, long level, int x0, int nx, float *cur, float *prev, int load);
/* How many values of level array `parity` of f (whole grid, not a ring) are inf or NaN
 * (nonfinite.c; halo and ghost cells count too), and the padded cell of the first in memory order. */
long long tw_cpu_find_nonfinite(const tw_cpu_fields *f, int parity, int cell[3]);

/* Copy the current level of a padded-cell box (decimated) out of the fields. */
void tw_cpu_extract(const tw_cpu_fields *f, int parity, const int lo[3], const int cnt[3], int dec, float *out);

#endif
