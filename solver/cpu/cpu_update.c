/* cpu_update.c — the one row update both CPU kernels call (cpu_fields.h): cells of a row of
 * columns advanced one step with tw_stencil.h's update, vectorized along z.
 *
 * Where the time goes and why it is written this way (docs/performance.md, "CPU kernels"):
 *  - The loop over k is a `#pragma omp simd` loop over one block of 2·VW cells (VW floats a
 *    vector) that are either all undamped (a = 0: tw_cell_update_undamped) or all damped
 *    (tw_cell_update_damped: the z factor's reciprocal per cell, the column's hoisted out of the
 *    loop, and two multiplications): the choice is made per block, outside the loop, so the
 *    interior loop has no branch. Both give the bits of tw_cell_update (tw_stencil.h: the damped
 *    formula is exact for a = 0), so which kind of block a cell falls in changes no bit, and a
 *    column's last partial block can overlap the one before (run()): no remainder loops.
 *  - The stencil radius is a literal in each instantiation (row_r inlined per r), so the m loop of
 *    tw_laplacian unrolls and the weights stay in registers; z neighbours are unaligned loads of
 *    the cache lines the column already brings in (k = 0 sits on a 32-byte boundary: cpu_fields.h).
 *  - This file is built three times on x86-64 (solver/CMakeLists.txt): for the build's baseline,
 *    for x86-64-v3 (AVX2: 8 floats a vector instead of SSE2's 4) and for x86-64-v4 (AVX-512's 32
 *    registers: at order 8 the 12 weights, two chains per cell, two cells and the neighbour
 *    pointers outgrow 16, and v3 reloads them from the stack — 42 of the 138 instructions of its
 *    16-cell loop touch the stack, 9 in v4 with 8-float vectors, on the load ports that bound it;
 *    docs/performance.md, session 10; and 16-float vectors, half the instructions a cell: +2–8 %
 *    on a Xeon, session 27). cpu_fields.c picks the best at run time.
 *    All do the same IEEE operations in the same order — tw_stencil.h's explicit fmaf (one
 *    instruction in v3 and v4; libm's correctly rounded call in the baseline, where the loop stays
 *    scalar), no other contraction — so they give the same bits (test_cpu_diamond crosses them),
 *    and the bits of the GPU kernels.
 *  - Sources and receiver taps are found once per row (the lists are sorted by (i, j, k)), not by
 *    a search per column. */
#include "cpu_fields.h"

#ifndef TW_CPU_VARIANT
#define TW_CPU_VARIANT base
#endif
#define TW_CAT2(a, b) a##_##b
#define TW_CAT(a, b) TW_CAT2(a, b)
#define TW_CPU_FN(name) TW_CAT(name, TW_CPU_VARIANT)
#define TW_INLINE static inline __attribute__((always_inline))
/* VW: floats a vector of this build (solver/CMakeLists.txt: 16 for x86-64-v4, else 8); a block is
 * 2·VW cells of a column (block()). */
#ifndef TW_CPU_VW
#define TW_CPU_VW 8
#endif
#define TW_VW TW_CPU_VW
#define TW_BLK (2 * TW_CPU_VW)

/* Cell k of a column (pointers at its cell k = 0), damped or not. */
TW_INLINE void cell(const tw_stencil *st, const int r, const int damped, const float *restrict cur, float *restrict old,
                    const float *restrict c2, long sx, long sy, float axy, const float *restrict az, int k) {
  const float lap = tw_laplacian(r, st, cur + k, sx, cur + k, sy, cur + k, 1);
  old[k] = damped ? tw_cell_update_damped(cur[k], old[k], lap, c2[k], axy, az[k])
                  : tw_cell_update_undamped(cur[k], old[k], lap, c2[k]);
}

/* Cells [kb, kb + 2·VW) of one column in one VW-wide vector loop that computes k and k + VW per
 * iteration: L of a cell is two chains of dependent fused multiply-adds (tw_stencil.h), and the
 * second cell's two chains keep the FP units busy where one cell waits on latency (order 8, one
 * unfused chain: −9 % time in isolation; both use the same address registers, a constant
 * displacement apart). With two = 0 (a constant) the VW cells [kb, kb + VW) alone: a last partial
 * block whose new cells fit one vector. No mask and no condition on the store: every lane is
 * stored (see tail()). */
TW_INLINE void block(const tw_stencil *st, const int r, const int damped, const float *restrict cur,
                     float *restrict old, const float *restrict c2, long sx, long sy, float axy,
                     const float *restrict az, int kb, const int two) {
#pragma omp simd
  for (int k = kb; k < kb + TW_VW; k++) {
    cell(st, r, damped, cur, old, c2, sx, sy, axy, az, k);
    if (two) cell(st, r, damped, cur, old, c2, sx, sy, axy, az, k + TW_VW);
  }
}

/* The last partial block of a run: cells [from, k1) through the w cells [b, b + w) ending at k1 (w = VW
 * where the new cells fit one vector, else 2·VW), whose lanes below `from` overlap the block before.
 * Those lanes would read p^{n+1} where p^{n−1} was and must not be stored, so the block runs on a copy
 * of its p^{n−1} cells and only [from, k1) is copied back. A masked store instead (`if (k >= from)
 * old[k] = v`) was compiled cell by cell wherever the cell is damped — the division may not be
 * evaluated in lanes the source does not store, under GCC's default -ftrapping-math — and partly so
 * even undamped in the AVX-512 build: on #21's job with Nz = 270 instead of 256, 27 % of the samples
 * were in scalar code and cpu-diamond ran 1.44 instead of 1.89 Gcell/s (docs/performance.md, session
 * 28). The copy in and the blend back (branch free: it vectorizes) cost four vector moves a column in
 * the v4 build. */
TW_INLINE void tail(const tw_stencil *st, const int r, const int damped, const float *restrict cur, float *restrict old,
                    const float *restrict c2, long sx, long sy, float axy, const float *restrict az, int b, int from,
                    const int w) {
  float p[TW_BLK] __attribute__((aligned(64)));
  for (int k = 0; k < w; k++) p[k] = old[b + k];
  block(st, r, damped, cur + b, p, c2 + b, sx, sy, axy, az + b, 0, w == TW_BLK);
  for (int k = 0; k < w; k++) old[b + k] = k < from - b ? old[b + k] : p[k];
}

/* Cells [k0, k1) of a column without sources, in blocks of 2·VW from k0. A block is undamped where
 * the column is (ax = ay = 0) and the block lies in the model's own z range [lo, hi), where
 * a = (0 + 0) + 0 = 0 exactly; every other block takes the damped formula, which is exact for
 * a = 0 too (tw_stencil.h: the same bits), so a block that straddles a layer's edge needs no
 * split. The last partial block is the VW or 2·VW cells ending at k1, which overlap the block
 * before (tail(): its lanes below the new cells are computed on a copy and not stored). So every
 * cell goes through full vectors: the scalar and 4-wide remainder loops of three runs per column
 * took ~20 % of the time for ~6 % of the cells (256³ with layers of 20, perf, session 13). A run
 * shorter than a block (a column split by sources, Nz < 2·VW) goes cell by cell. The weights are
 * copied to the stack so that the compiler keeps them in registers (they cannot alias the stores). */
TW_INLINE void run(const tw_problem *pb, const int r, const float *cur, float *old, const float *c2, long sx, long sy,
                   float axy, int undamped_col, int k0, int k1) {
  const tw_stencil st = pb->st;
  const float *az = pb->a[2];
  const int lo = pb->g.lo[2], hi = pb->g.lo[2] + pb->g.n[2];
  if (k1 - k0 < TW_BLK) {
#pragma omp simd
    for (int k = k0; k < k1; k++) cell(&st, r, 1, cur, old, c2, sx, sy, axy, az, k);
    return;
  }
  /* full blocks [0, nb); blocks [u0, u1) lie in [lo, hi) of an undamped column. Three plain loops,
   * not a test per block: with both paths in one loop the compiler spilled twice as many address
   * registers (25 stack accesses per 16 cells instead of 11: order 8, 9 % slower). */
  const int nb = (k1 - k0) / TW_BLK;
  int u0 = 0, u1 = 0;
  if (undamped_col && hi - lo >= TW_BLK) {
    u0 = lo > k0 ? (lo - k0 + TW_BLK - 1) / TW_BLK : 0;
    u1 = hi < k1 ? (hi - k0) / TW_BLK : nb;
    if (u0 > nb) u0 = nb;
    if (u1 < u0) u1 = u0;
  }
  for (int b = 0; b < u0; b++) block(&st, r, 1, cur, old, c2, sx, sy, axy, az, k0 + TW_BLK * b, 1);
  for (int b = u0; b < u1; b++) block(&st, r, 0, cur, old, c2, sx, sy, axy, az, k0 + TW_BLK * b, 1);
  for (int b = u1; b < nb; b++) block(&st, r, 1, cur, old, c2, sx, sy, axy, az, k0 + TW_BLK * b, 1);
  const int kb = k0 + TW_BLK * nb; /* the last partial block: the VW or 2·VW cells ending at k1 */
  if (kb < k1) {
    const int one = k1 - kb <= TW_VW, b = k1 - (one ? TW_VW : TW_BLK);
    const int und = undamped_col && b >= lo && k1 <= hi;
    if (one) {
      if (und)
        tail(&st, r, 0, cur, old, c2, sx, sy, axy, az, b, kb, TW_VW);
      else
        tail(&st, r, 1, cur, old, c2, sx, sy, axy, az, b, kb, TW_VW);
    } else {
      if (und)
        tail(&st, r, 0, cur, old, c2, sx, sy, axy, az, b, kb, TW_BLK);
      else
        tail(&st, r, 1, cur, old, c2, sx, sy, axy, az, b, kb, TW_BLK);
    }
  }
}

/* First entry of a (i, j, k)-sorted cell list at or after column (i, j). */
static long first_at(const int (*c)[3], long n, int i, int j) {
  long lo = 0, hi = n;
  while (lo < hi) {
    const long mid = (lo + hi) / 2;
    if (c[mid][0] < i || (c[mid][0] == i && c[mid][1] < j)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

TW_INLINE void row_r(const tw_problem *pb, tw_cpu_fields *f, const int r, int i, int y0, int y1, long n,
                     const tw_tap_sink *sink) {
  const int Nz = pb->g.N[2];
  float *cur = f->p[n % 2], *old = f->p[(n + 1) % 2];
  const float ax = pb->a[0][i];
  /* the row's sources and taps: contiguous in the sorted lists */
  long s = pb->ninj ? first_at((const int (*)[3])pb->inj, pb->ninj, i, y0) : 0;
  const int sample = sink && pb->ntap && (n + 1) % pb->interval == 0;
  long t = sample ? first_at((const int (*)[3])pb->tap, pb->ntap, i, y0) : 0;
  float *taps = sample ? sink->taps + ((n + 1) / pb->interval - sink->first) * pb->ntap : NULL;
  for (int j = y0; j < y1; j++) {
    const size_t c0 = tw_cpu_off(f, i, j, 0);
    float *pc = cur + c0, *po = old + c0;
    const float *c2 = f->c2 + c0;
#ifdef TW_DEBUG_LEVELS
    tw_debug_level_step(f, r, i, j, n, c0);
#endif
    if (pb->free_surface) /* image method: ghost −m mirrors +m with the opposite sign */
      for (int m = 1; m <= r; m++) pc[-m] = m < Nz ? -pc[m] : 0.0f;
    const float ay = pb->a[1][j], axy = tw_damping_xy(ax, ay);
    const int undamped_col = ax == 0.0f && ay == 0.0f;
    /* runs of plain cells between the column's source cells (sorted by k, unique) */
    int k = 0;
    for (; s < pb->ninj && pb->inj[s][0] == i && pb->inj[s][1] == j; s++) {
      const int ks = pb->inj[s][2];
      run(pb, r, pc, po, c2, f->sx, f->sy, axy, undamped_col, k, ks);
      const float lap =
          tw_laplacian(r, &pb->st, pc + ks, f->sx, pc + ks, f->sy, pc + ks, 1) + pb->S[s * pb->steps + n];
      po[ks] = tw_cell_update(pc[ks], po[ks], lap, c2[ks], axy, pb->a[2][ks]);
      k = ks + 1;
    }
    run(pb, r, pc, po, c2, f->sx, f->sy, axy, undamped_col, k, Nz);
    /* taps of this column, when level n + 1 is a sample */
    for (; sample && t < pb->ntap && pb->tap[t][0] == i && pb->tap[t][1] == j; t++) taps[t] = po[pb->tap[t][2]];
  }
}

void TW_CPU_FN(tw_cpu_update_row)(const tw_problem *pb, tw_cpu_fields *f, int i, int y0, int y1, long n,
                                   const tw_tap_sink *sink) {
  switch (pb->st.r) {
    case 1: row_r(pb, f, 1, i, y0, y1, n, sink); break;
    case 2: row_r(pb, f, 2, i, y0, y1, n, sink); break;
    case 3: row_r(pb, f, 3, i, y0, y1, n, sink); break;
    case 4: row_r(pb, f, 4, i, y0, y1, n, sink); break;
    default: row_r(pb, f, pb->st.r, i, y0, y1, n, sink); break;
  }
}

/* The arithmetic ceiling of `torrewave bench` (bench.c): independent multiply-add chains, 96
 * floats = 12 AVX2 registers (FMA latency 4 × 2 pipes needs 8), fused where the variant's target
 * has FMA (x86-64-v3, aarch64), else a multiply and an add. The loop over j vectorizes and the
 * accumulators stay in registers across i. Returns a sum the caller keeps. */
#if defined(__FMA__) || defined(__aarch64__)
#define TW_FUSED 1
#else
#define TW_FUSED 0
#endif
#define TW_CHAINS 96
const int TW_CPU_FN(tw_cpu_fused) = TW_FUSED;
const int TW_CPU_FN(tw_cpu_vw) = TW_VW;
float TW_CPU_FN(tw_cpu_fma_chains)(long n, float a, float b) {
  float acc[TW_CHAINS];
  for (int j = 0; j < TW_CHAINS; j++) acc[j] = (float)j;
  for (long i = 0; i < n; i++) {
#pragma omp simd
    for (int j = 0; j < TW_CHAINS; j++) acc[j] = TW_FUSED ? __builtin_fmaf(acc[j], a, b) : acc[j] * a + b;
  }
  float s = 0;
  for (int j = 0; j < TW_CHAINS; j++) s += acc[j];
  return s;
}
