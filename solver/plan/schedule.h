/* schedule.h — the DiamondTorre tower geometry of docs/design.md §2 as plain integer C: which stages a
 * time block has, which towers a stage has, which columns (x, y) a tower updates at each local
 * step, clipped to the grid. No CUDA and no memory: the CPU path (cpu_diamond.c), the window
 * plan (window.c) and the GPU kernel all follow these functions. The small per-row helpers are
 * inline and __host__ __device__ under nvcc, so a kernel can call them per thread.
 *
 * Geometry. Columns are (x, y) cell indices of the padded grid, x ∈ [0, N0), y ∈ [0, N1); every
 * update advances the whole z column. Rotated coordinates a = x + y, b = x − y (a ≡ b mod 2).
 * r = stencil radius (order/2), R = r·DTS the tile size. A block advances levels t0 → t0 + nt;
 * local step τ = 0 … nt−1 computes level t0+τ+1 from t0+τ (and t0+τ−1 at the cell itself).
 *
 *   Tower T(p, q) at step τ updates the columns with
 *     a ∈ [2Rp + τr, 2Rp + τr + 2R)  and  b ∈ [2Rq + τr, 2Rq + τr + 2R).
 *
 * Tiling: for a fixed τ the squares [2Rp + τr, +2R) × [2Rq + τr, +2R) tile the (a, b) plane,
 * and every (x, y) has exactly one (a, b) (with a ≡ b mod 2), so every column is updated
 * exactly once per step (test_schedule checks it).
 *
 * In (x, y) the tower is a diamond. With s = p + q (its stage) and k = p − q (k ≡ s mod 2):
 *   x = (a + b)/2 ∈ [X0, X0 + 2R),  X0 = R·s + τ·r   (all towers of a stage share these rows),
 *   row x = X0 + u has y ∈ [c − w, c + w],  c = R·k,  w = min(u, 2R − 1 − u),
 * i.e. 2R rows of widths 1, 3, …, 2R−1, 2R−1, …, 1 (2R² columns), centred on y = c, moving +r in
 * x per step ("leaning") while y stays. A fixed-x row is one contiguous y range, so the kernels
 * iterate rows x → [y0, y1) (tw_tower_rows, tw_tower_row_y).
 *
 * Dependencies (why stages in decreasing s and two arrays suffice). A stencil read at offset ±m
 * (m ≤ r) along x or y changes both a and b by at most r. Let T(p, q) update cell z at step τ
 * and read a neighbour z' (|a'−a| ≤ r, |b'−b| ≤ r) at level n = t0+τ from array n % 2.
 *  - z' must have had all its updates of steps τ' < τ: those belong to the tower containing
 *    (a', b') at τ', P' = ⌊(a' − τ'r)/2R⌋ ≥ ⌊(a − τr)/2R⌋ = p because a' − τ'r ≥ a − r − (τ−1)r;
 *    likewise Q' ≥ q. So it is T(p, q) itself at an earlier step, or a tower of a larger stage
 *    (P' + Q' > s): already done. Per block, T(p, q) needs T(p+1, q) and T(p, q+1) (and through
 *    them everything to the right); nothing else.
 *  - z' must not yet have had its step τ+1 update (it writes level n+2 into array n % 2): that
 *    belongs to P' ≤ p, Q' ≤ q: T(p, q) later, or a smaller stage: not yet run. Its step-τ
 *    update writes array (n+1) % 2, which T(p, q) reads only at its own cells.
 *  - The own value p^{n−1} in array (n+1) % 2 was written at step τ−2 and only step τ of z
 *    (this update) overwrites it.
 * Towers of one stage (P + Q = s, P ≠ p) are never both a writer and another's reader of one
 * (cell, array): the two bullets above confine the writers of what T(p, q) reads to P ≥ p and
 * Q ≥ q (earlier) or P ≤ p and Q ≤ q (later), and a sibling has P > p, Q < q or the reverse.
 * So a stage's towers run concurrently with no synchronization, and stages run in decreasing s
 * (the next stage is shifted −R in x, +R in y). test_schedule replays this with a time-level
 * shadow and a per-stage race check; running the stages in increasing s is caught there.
 *
 * Stage range of a block of height nt: stage s updates rows x ∈ [Rs + τr, Rs + τr + 2R) for
 * τ ∈ [0, nt); it reaches the grid iff Rs ≤ N0 − 1 and Rs + (nt−1)r + 2R − 1 ≥ 0. Towers of a
 * stage: the diamond of centre c = Rk spans y ∈ [c − R + 1, c + R − 1], so 0 ≤ k ≤ ⌊(N1+R−2)/R⌋
 * with k ≡ s (mod 2). Towers partly outside the grid are clipped per row. */
#ifndef TW_SCHEDULE_H
#define TW_SCHEDULE_H

#include <stdlib.h>
#include <string.h>

#include "tw_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define TW_SCHED_HD __host__ __device__ __forceinline__
#else
#define TW_SCHED_HD static inline
#endif

/* TW_TILE_MAX and TW_TOWER_HEIGHT_MAX, the limits on solver.dts and solver.tower_height: tw_common.h
 * (the job's parse tells the same range for a value below 1). */

typedef struct tw_schedule {
  int N0, N1;        /* columns of the padded grid: x ∈ [0, N0), y ∈ [0, N1) */
  int r, dts, R;     /* stencil radius, diamond tile size, R = r·dts */
  int nt;            /* height of this block: local steps τ = 0 … nt−1 */
  int s_hi, s_lo;    /* stages run s = s_hi, s_hi − 1, …, s_lo */
  int kmax;          /* tower centres y = R·k, 0 ≤ k ≤ kmax, k ≡ s (mod 2) */
} tw_schedule;

/* ⌊a / b⌋ for b > 0 and any sign of a. */
TW_SCHED_HD int tw_floordiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Resolve solver.dts and solver.tower_height for an order: 0 means the default per order
 * (tw_default_dts, tw_default_tower_height); negative or absurd values are an error whose
 * message names the key, the value and what is allowed. */
tw_status tw_schedule_params(int order, int dts, int tower_height, int *dts_out, int *nt_out, tw_error *err);

/* The schedule of one block of height nt (≥ 1) on an N0 × N1 grid of columns, for valid
 * parameters (tw_schedule_params). Inline, like the helpers below, so that a standalone
 * measurement (scripts/experiments) can follow the same geometry without the solver's library. */
TW_SCHED_HD void tw_schedule_init(tw_schedule *sc, int N0, int N1, int r, int dts, int nt) {
  sc->N0 = N0;
  sc->N1 = N1;
  sc->r = r;
  sc->dts = dts;
  sc->R = r * dts;
  sc->nt = nt;
  /* First stage: its step-0 rows [Rs, Rs + 2R) still start inside the grid. */
  sc->s_hi = tw_floordiv(N0 - 1, sc->R);
  /* Last stage: its last rows, Rs + (nt−1)r + 2R − 1, still reach x = 0:
   * s ≥ ⌈(1 − 2R − (nt−1)r) / R⌉ = −⌊(2R + (nt−1)r − 1) / R⌋. */
  sc->s_lo = -tw_floordiv(2 * sc->R + (nt - 1) * r - 1, sc->R);
  /* Last tower centre R·k whose diamond still reaches y = N1 − 1: Rk − R + 1 ≤ N1 − 1. */
  sc->kmax = tw_floordiv(N1 + sc->R - 2, sc->R);
}

/* Number of towers of stage s, and the centre index k of its i-th tower (y centre R·k). */
TW_SCHED_HD int tw_stage_towers(const tw_schedule *sc, int s) {
  const int par = ((s % 2) + 2) % 2; /* s mod 2, also for negative s */
  return sc->kmax >= par ? (sc->kmax - par) / 2 + 1 : 0;
}
TW_SCHED_HD int tw_stage_tower_k(const tw_schedule *sc, int s, int i) {
  (void)sc;
  return ((s % 2) + 2) % 2 + 2 * i;
}

/* The towers that T(s, k) must wait for when towers run as soon as they can (cpu-diamond's
 * tasks, gpu-diamond's persistent grid) instead of stage by stage: its parents T(p + 1, q) and
 * T(p, q + 1), i.e. (s + 1, k + 1) and (s + 1, k − 1), those of them the block has. Through their
 * own parents they cover everything up-right of T(p, q) in the (p, q) lattice — every tower that
 * writes what T(p, q) reads before it (the dependencies above), and every tower that reads what
 * T(p, q) overwrites: a tower with p' ≥ p, q' ≥ q, (p', q') ≠ (p, q) —, and a lattice path between two
 * towers of the block can keep its k between theirs, so it never leaves [0, kmax]. Except with one
 * tower column (kmax = 0: k = 0 on even stages only), where neither parent exists: then (s + 2, 0).
 * Writes up to two (stage, k) pairs and returns how many (test_schedule replays random orders
 * that respect them, and runs of towers that they leave unordered, with a race check). */
TW_SCHED_HD int tw_tower_preds(const tw_schedule *sc, int s, int k, int ps[2], int pk[2]) {
  int n = 0;
  if (sc->kmax == 0) {
    if (s + 2 <= sc->s_hi) ps[n] = s + 2, pk[n] = 0, n++;
    return n;
  }
  if (s + 1 > sc->s_hi) return 0;
  if (k + 1 <= sc->kmax) ps[n] = s + 1, pk[n] = k + 1, n++;
  if (k - 1 >= 0) ps[n] = s + 1, pk[n] = k - 1, n++;
  return n;
}

/* The steps [lo, hi) of a block of height nt in which a tower of stage s has rows in the grid
 * (x ∈ [0, N0)): lo = ⌈(1 − 2R − Rs) / r⌉, hi = ⌊(N0 − 1 − Rs) / r⌋ + 1, clipped to [0, nt]. The
 * same for every tower of the stage (y clipping leaves a tower its steps). */
TW_SCHED_HD void tw_tower_steps(int R, int r, int s, int N0, int nt, int *lo, int *hi) {
  const int l = -tw_floordiv(2 * R - 1 + R * s, r);
  const int h = tw_floordiv(N0 - 1 - R * s, r) + 1;
  *lo = l > 0 ? l : 0;
  *hi = h < nt ? h : nt;
}

/* The block's average parallelism in towers: its tower-steps (each tower's active steps, summed)
 * over those of its longest chain of towers that wait for each other. A tower waits for its
 * parents in the stage before (tw_tower_preds), and every tower has one there while the block has
 * two tower columns (kmax ≥ 1; with one, the stage two before), so the longest chain passes through
 * every stage that has towers and its length is their active steps summed: the parallelism is
 * the stages' tower counts weighted by their steps, about N1 / (2R) (test_schedule checks it against
 * the DAG's longest path). A persistent grid of more workers than this waits on the chain
 * (docs/performance.md, session 32: 2048 × 1024 × 256 at order 2, dts 3: 171 towers, 264 workers,
 * half of their time waiting for parents). */
static inline double tw_schedule_parallelism(const tw_schedule *sc) {
  double all = 0.0, chain = 0.0;
  for (int s = sc->s_hi; s >= sc->s_lo; s--) {
    int lo, hi;
    tw_tower_steps(sc->R, sc->r, s, sc->N0, sc->nt, &lo, &hi);
    const int n = tw_stage_towers(sc, s);
    if (n < 1 || hi <= lo) continue;
    all += (double)n * (hi - lo);
    chain += hi - lo;
  }
  return chain > 0 ? all / chain : 0.0;
}

/* First row of stage s at step τ, unclipped: the diamond spans x ∈ [X0, X0 + 2R). */
TW_SCHED_HD int tw_tower_x0(const tw_schedule *sc, int s, int tau) { return sc->R * s + tau * sc->r; }

/* Rows [x0, x1) of a tower of stage s at step τ that lie in the grid (empty when x0 ≥ x1). */
TW_SCHED_HD void tw_tower_rows(const tw_schedule *sc, int s, int tau, int *x0, int *x1) {
  const int X0 = tw_tower_x0(sc, s, tau);
  *x0 = X0 > 0 ? X0 : 0;
  *x1 = X0 + 2 * sc->R < sc->N0 ? X0 + 2 * sc->R : sc->N0;
}

/* Columns [y0, y1) of row x (from tw_tower_rows) of tower k of stage s at step τ, clipped to
 * the grid (empty when y0 ≥ y1). */
TW_SCHED_HD void tw_tower_row_y(const tw_schedule *sc, int s, int k, int tau, int x, int *y0, int *y1) {
  const int u = x - tw_tower_x0(sc, s, tau), c = sc->R * k;
  const int w = u < 2 * sc->R - 1 - u ? u : 2 * sc->R - 1 - u;
  *y0 = c - w > 0 ? c - w : 0;
  *y1 = c + w + 1 < sc->N1 ? c + w + 1 : sc->N1;
}

/* x-planes that stage s touches during the block: the rows it updates and the r planes its
 * stencil reads on either side, [Rs − r, Rs + nt·r + 2R), not clipped. */
TW_SCHED_HD void tw_stage_planes(const tw_schedule *sc, int s, int *lo, int *hi) {
  *lo = sc->R * s - sc->r;
  *hi = sc->R * s + sc->nt * sc->r + 2 * sc->R;
}

/* The length of the blocks that take `steps` steps in blocks of at most h (h >= 1): as many as h
 * needs, ⌈steps / h⌉, all of this length but the last, up to ⌈steps / h⌉ − 1 steps shorter;
 * `steps` itself where it is at most h. A block costs the same overhead whatever its length — a
 * window moves the whole grid over the link, in and out, once a block (docs/design.md §3.5), a
 * tower block fills and drains — so 209, 209 and 12 for 430 steps pay three for the work of two and
 * a bit; 144, 144 and 142 pay the same three, each hidden behind more work (session 26, H200, the
 * GPU windows at 8× over the cap: order 2 on 2048² × 640, 430 steps, 326–332 → 402 Gcell/s; order
 * 8 on 3400 × 2176 × 256, 200 steps at h 64, 145–147 → 173, in core 180). */
static inline int tw_even_height(int h, long steps) {
  if (h < 1) h = 1;
  if (steps <= h) return steps >= 1 ? (int)steps : h;
  const char *off = getenv("TW_EVEN_BLOCKS"); /* "0": blocks of h, the last shorter (a measurement switch) */
  if (off && !strcmp(off, "0")) return h;
  const long blocks = (steps + h - 1) / h;
  return (int)((steps + blocks - 1) / blocks);
}

/* Steps of the next block inside an advance of n steps of which `done` are done: tw_even_height's
 * blocks (the tower height's where n is a multiple of it). The caller ends advance calls at
 * snapshots, checkpoints and the end, and sizes them by tw_even_height too (run.c: time_loop). */
static inline int tw_block_height(long done, long n, int nt) {
  const int e = tw_even_height(nt, n);
  return n - done < e ? (int)(n - done) : e;
}

#ifdef __cplusplus
}
#endif
#endif
