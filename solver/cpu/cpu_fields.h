/* cpu_fields.h — internal to solver/: the host layout of the CPU kernels and the one row update
 * they share (cpu steps the grid in y-blocks swept along x, cpu-diamond tower by tower; both call
 * tw_cpu_update_row, so they are bitwise identical by construction of the schedule alone).
 *
 * Layout: every array carries a zero halo of h = r cells on each x and y face, and zero cells
 * between the z columns, so a stencil read never leaves the allocation and reads 0 outside the
 * padded grid (docs/design.md §1: p = 0 outside). Cell (i, j, k) of the padded grid is at
 * base + i·sx + j·sy + k, base = h·(sx + sy) + kz. For the vector loops along z (cpu_update.c)
 * kz = h rounded up to `align` floats, and the pitch sy is a multiple of `align`, so that k = 0 of
 * every column is on an align·4-byte boundary (the arrays are 64-byte aligned). The kz floats
 * before a column's k = 0 hold its free-surface ghosts k = −h … −1 (written by its own update) and,
 * before them, the zeros that the previous column reads past its end (k = Nz … Nz + h − 1); the
 * pitch adds floats after a column only where kz < 2h.
 * The alignment is the kernel's (tw_cpu_fields_create): `cpu` takes 8 floats (32 bytes; the
 * padding costs 8 floats a column, 3 % at Nz = 256, and the memory-bound stepwise kernel moves
 * that little more), cpu-diamond the vector of its build where the columns are long enough
 * (tw_cpu_tower_align: 16 floats in the x86-64-v4 build), so that no 64-byte vector of a tower
 * straddles two cache lines. On #21's job at order 8 (2-core Xeon) 64-byte columns ran cpu-diamond
 * +7–11 % and `cpu` −5–6 % (the 8 floats a column more): each kernel has the one it runs faster
 * with (docs/performance.md, sessions 27 and 29). The window's ring has its host fields' layout
 * (whole planes are copied). The layout changes no bit. */
#ifndef TW_CPU_FIELDS_H
#define TW_CPU_FIELDS_H

#include "problem.h"

typedef struct tw_cpu_fields {
  int h;                     /* halo = stencil radius */
  long sx, sy;               /* strides of x and y (z stride is 1); sx = sy·(N1 + 2h) */
  int kz;                    /* offset of k = 0 in a column: h rounded up to align (tw_cpu_kz) */
  int align;                 /* floats: kz and sy are multiples of it (8 or 16) */
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

/* Allocate zeroed fields for x-planes [x0, x0 + nx) of the padded grid (nx = N0: all), columns
 * aligned to `align` floats (TW_CPU_ALIGN_STEPWISE or tw_cpu_tower_align()), and copy c²dt² for
 * them from the problem. */
tw_status tw_cpu_fields_create(const tw_problem *pb, int x0, int nx, int align, tw_cpu_fields *f, tw_error *err);
/* A ring of W x-planes (W ≥ 2h) for the sliding window, in the layout of `like` (its alignment):
 * zeroed, no c²dt² (planes come in with tw_window's copies). */
tw_status tw_cpu_fields_create_ring(const tw_problem *pb, int W, const tw_cpu_fields *like, tw_cpu_fields *f,
                                    tw_error *err);
void tw_cpu_fields_destroy(tw_cpu_fields *f);
/* Both levels back to zero, as created (a new shot; c²dt² stays). */
void tw_cpu_fields_zero(tw_cpu_fields *f);

/* Advance columns [y0, y1) of x-plane i from level n to n + 1 (cpu_update.c): per column the
 * free-surface ghosts of level n (image method), the update of every k with the column's sources,
 * then the column's taps if level n + 1 is a sample. Reads levels n (x, y, z neighbours) and
 * n − 1 (own cells) only. */
void tw_cpu_update_row(const tw_problem *pb, tw_cpu_fields *f, int i, int y0, int y1, long n, const tw_tap_sink *sink);

/* Offset of k = 0 in a column, and the column pitch sy (floats) of the layout above, for columns
 * aligned to `align` floats. */
static inline int tw_cpu_kz(int h, int align) { return (h + align - 1) / align * align; }
static inline long tw_cpu_pitch(int Nz, int h, int align) {
  const int kz = tw_cpu_kz(h, align), tail = 2 * h > kz ? 2 * h - kz : 0; /* zeros past Nz not in the next kz */
  return ((long)kz + Nz + tail + align - 1) / align * align;
}
/* The kernels' column alignments (floats): `cpu`'s, and cpu-diamond's for columns of Nz cells and
 * halo h: the active variant's vector (at most TW_CPU_ALIGN_MAX), where that makes the pitch at
 * most 1/16 longer than `cpu`'s (the bytes a tower moves grow less than the 7–10 % the aligned
 * vectors gain: Nz = 256 at order 8, 272 floats against 264), else `cpu`'s (short columns: Nz = 22
 * would take 48 floats against 32). */
#define TW_CPU_ALIGN_STEPWISE 8
#define TW_CPU_ALIGN_MAX 16
int tw_cpu_tower_align(int Nz, int h);

/* The variants of the hot code (cpu_update.c is built once per variant: "base", the build's
 * target; "v3", x86-64-v3 with AVX2 and FMA, on x86-64). The active one is the best this CPU
 * runs, chosen when fields are first created; tests force one to compare them bitwise. */
typedef struct tw_cpu_impl {
  const char *name;
  void (*update_row)(const tw_problem *pb, tw_cpu_fields *f, int i, int y0, int y1, long n, const tw_tap_sink *sink);
  float (*fma_chains)(long n, float a, float b); /* bench: 96 multiply-add chains, n times */
  int fused;                                     /* fma_chains uses fused multiply-adds */
  int vw;                                        /* floats a vector of its row update (TW_CPU_VW) */
} tw_cpu_impl;
const tw_cpu_impl *tw_cpu_impl_active(void);
/* Force a variant by name ("base", "v3"), or NULL for the best; returns 0 when this build or
 * CPU lacks it (the active one is then unchanged). */
int tw_cpu_impl_select(const char *name);

/* Column pitch sy and plane size sx (floats) of the layout above, for a problem and an alignment. */
void tw_cpu_strides(const tw_problem *pb, int align, long *sy, long *sx);

/* cpu-diamond's DTS and tower height: solver.dts and solver.tower_height, or its own defaults
 * (cpu_diamond.c; not the GPU's), validated by tw_schedule_params. */
tw_status tw_cpu_diamond_params(const tw_problem *pb, int *dts, int *nt, tw_error *err);
/* Its default tile R (cells, dts = R / r) for stencil radius r, the kernels' y length N1, column
 * length Nz, threads, one core's L2 and the threads' L3 share in bytes (cpu_diamond.c: the rule
 * and the measurements behind it). */
int tw_cpu_default_tile(int r, int N1, int Nz, int threads, long l2, long l3_share);
/* Its plan under solver.device_memory: DTS, height (*nt_default: the default it lowered to fit the
 * cap, else 0) and window planes W (0: the whole grid); TW_ERANGE naming the smallest cap that works
 * when none fits. From the problem's sizes alone (tw_problem_sizes), so that `check` refuses what the
 * backend's create would. */
tw_status tw_cpu_diamond_plan(const tw_problem *pb, int *dts, int *nt, int *nt_default, int *W, tw_error *err);

/* Threads of the CPU kernels: solver.threads, or the OpenMP default. */
int tw_cpu_threads(const tw_problem *pb);
/* The same for a thread count asked for (solver.threads: 0 = all). */
int tw_cpu_threads_of(int requested);
/* Whether kernel "auto" runs cpu-diamond on a machine without a GPU, and why in words (why may be
 * NULL; cpu_diamond.c). */
int tw_cpu_auto_diamond(const tw_job *job, char *why, size_t n);

/* Size in bytes of this CPU's level-1 (data), 2 or 3 cache (Linux sysfs, else sysconf, else a
 * guess), cached after the first call. */
long tw_cpu_cache_bytes(int level);
/* The L3 that `threads` threads can count on: the L3, at most 10× their L2 and 64 MiB
 * (cpu_diamond.c: an L3 serves a socket; a VM sees its host's whole L3). */
long tw_cpu_l3_share(int threads);

/* The stepwise kernel's cache blocks: y-blocks of `by` columns (the last may be shorter), each
 * swept along x, so that the 2r + 1 planes of level n the sweep keeps for the x-derivative
 * ((2r + 1)·(by + 2r) columns) fit in a thread's half share of the L3. The number of blocks
 * (returned) is a multiple of the thread count where the grid allows, for an even static split. */
int tw_cpu_yblocks(const tw_problem *pb, int threads, int *by);

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
/* Called by the row update for each column: assert the levels column (i, j) (first cell at offset
 * c0) reads to go from n to n + 1, then record level n + 1 for it. */
void tw_debug_level_step(tw_cpu_fields *f, int r, int i, int j, long n, size_t c0);
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
