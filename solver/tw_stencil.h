/* tw_stencil.h — the one cell update of docs/design.md §1, shared by every kernel (CPU and CUDA).
 * Internal to solver/: no CUDA types, compiles as C11 and as CUDA C++.
 *
 * Contract (docs/design.md §1):
 *   L       = Σ_axis Σ_{m=1..r} C_m/d_axis² (p[+m] + p[−m] − 2 p[0])
 *   p^{n+1} = (2 p^n − (1 − a) p^{n−1} + c²dt² (L + S^n)) / ((1 + axy)(1 + az)),
 *   a = axy + az = η dt / 2, axy = ax + ay (1 + a wherever axy or az is 0)
 * Form used here (the one fixed order of summation every kernel shares): the pair form
 *   T_m = wx_m ((x₋m + x₊m) − 2p0), then wy_m (…), then wz_m (…)   (three terms, tw_lap_term)
 *   two chains, each accumulated from 0 in increasing m: chain 0 the terms of odd m, chain 1 those
 *   of even m; L = chain 0 + chain 1 (r ≥ 2), L = chain 0 (r = 1) (tw_lap_chain, tw_lap_sum).
 *   Two chains because L's terms are one dependent multiply-add each: one chain of 3r terms (12 at
 *   order 8, 4 cycles apiece on a CPU) held the vectorized CPU update to its latency; two halve it
 *   and cost one add (docs/performance.md, "CPU kernels", session 9);
 *   every bracket is exactly 0 on a constant field (x + x and 2x are exact), so L = 0 and the
 *   update leaves a constant field unchanged bit for bit at every order and spacing. (A centre
 *   weight wc = −2 Σ w rounded to float does not cancel the rounded pair weights: at order 8,
 *   d = 10 m, the operator gained +3.5e-9 m⁻² · p, a velocity error that showed as a delay
 *   growing with distance against a float64 solution of the scheme; tests/test_stencil.c.)
 *   L += S only in cells that have a source (so S = 0 cells are bitwise untouched);
 *   t = 2 p0 + c2dt2 · L;   p^{n+1} = a == 0 ? t − pm : (t − (1 − a)·pm) · g,
 *   a = (ax + ay) + az,   g = RN(RN(1/(1 + (ax + ay))) · RN(1/(1 + az))).
 * The damped update multiplies by correctly rounded reciprocals instead of dividing (where one
 * factor is 1, one rounding more, ≤ 1 ulp from the quotient; where both are not, three roundings,
 * within ~3 ulp of num/((1 + axy)(1 + az))): they are the same bits on the host (IEEE 1/x)
 * and the device (__frcp_rn, tw_dev_recip), so every kernel may precompute them and no kernel has
 * to emulate a division bit for bit. g takes the horizontal and the vertical factor apart
 * (tw_damp_g): a kernel precomputes one per column, the other per z, and no cell needs a
 * reciprocal of its own. Where only one of ax + ay and az is nonzero (every damped cell but the
 * edges where a z layer meets an x or y layer) g is RN(1/(1 + a)); in those edges the denominator
 * is (1 + axy)(1 + az) = 1 + a + axy·az, a little more damping inside the layer. (Until session 34
 * g was RN(1/(1 + a)): gpu-diamond's towers paid a reciprocal per cell in every step inside an x
 * layer; docs/performance.md, sessions 33–34.) A multiplication has no slow path for tiny
 * numerators (the tails ahead of a wavefront), so the damped cells cost the same on any field.
 * The a == 0 branch is the general formula evaluated exactly (1 − 0 = 1, g = 1, x · 1 = x), so it
 * changes no bit; it only skips the damping arithmetic in the interior.
 * Multiply-adds: TW_MADD is an explicit fused multiply-add everywhere — __fmaf_rn on the device
 * (the CUDA sources are built with -fmad=false, so no other product is fused), fmaf on the host
 * (ISO C without -ffp-contract=fast fuses nothing else; one instruction where the target has FMA,
 * x86-64-v3 and aarch64, else libm's correctly rounded fmaf). CPU and GPU kernels do the same IEEE
 * operations in the same order, and both flush subnormals to zero (the CPU kernels set FTZ and
 * DAZ, the CUDA sources are built with -ftz=true). */
#ifndef TW_STENCIL_H
#define TW_STENCIL_H

#ifdef __CUDACC__
#define TW_HD __host__ __device__ __forceinline__
#elif defined(__GNUC__)
/* Always inlined on the host too: the CPU kernels vectorize loops that call these (cpu_update.c),
 * and an out-of-line call in such a loop keeps it scalar. */
#define TW_HD static inline __attribute__((always_inline))
#else
#define TW_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define TW_MADD(a, b, c) __fmaf_rn((a), (b), (c))
#elif defined(__GNUC__)
#define TW_MADD(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#include <math.h>
#define TW_MADD(a, b, c) fmaf((a), (b), (c))
#endif

/* Largest stencil radius: order 16. GPU kernels instantiate r = 1..4 (orders 2..8). */
#define TW_RMAX 8

typedef struct tw_stencil {
  int r;                        /* radius = order / 2 */
  float w[3][TW_RMAX + 1];      /* w[axis][m] = C_m / d_axis², m = 1..r (w[axis][0] unused) */
} tw_stencil;

/* The Laplacian at one cell. px, py, pz point at the cell's value in three addressings of the
 * same field (they may be registers, shared memory or global memory); the neighbour at offset
 * ±m along an axis is p?[±m·s?]. The caller guarantees that every neighbour read holds the
 * right value: 0 outside the padded grid, −p[m−k] above a free surface (image method). */
/* One pair term of L: acc + w·((p₋ + p₊) − 2p0), with p0x2 = 2·p0. Kernels that hold the
 * neighbours in their own addressing (gpu-diamond's register towers) call this in the order of
 * tw_laplacian: two accumulators from 0, m = 1..r, the terms of m (x, then y, then z) into chain
 * tw_lap_chain(m), and L = tw_lap_sum(r, chain 0, chain 1). */
TW_HD float tw_lap_term(float acc, float w, float pminus, float pplus, float p0x2) {
  return TW_MADD(w, (pminus + pplus) - p0x2, acc);
}

/* The chain that the terms of m go to: 0 for odd m, 1 for even m. */
TW_HD int tw_lap_chain(int m) { return (m - 1) & 1; }

/* L from its two chains (r = 1 has no even m: chain 0 alone, not chain 0 + 0, which would turn
 * −0 into +0). */
TW_HD float tw_lap_sum(int r, float chain0, float chain1) { return r >= 2 ? chain0 + chain1 : chain0; }

TW_HD float tw_laplacian(int r, const tw_stencil *st, const float *px, long sx, const float *py, long sy,
                         const float *pz, long sz) {
  const float p0x2 = 2.0f * px[0];
  float c0 = 0.0f, c1 = 0.0f; /* chains 0 and 1: where r is a constant the selects fold away */
  for (int m = 1; m <= r; m++) {
    float acc = tw_lap_chain(m) ? c1 : c0;
    acc = tw_lap_term(acc, st->w[0][m], px[-m * sx], px[m * sx], p0x2);
    acc = tw_lap_term(acc, st->w[1][m], py[-m * sy], py[m * sy], p0x2);
    acc = tw_lap_term(acc, st->w[2][m], pz[-m * sz], pz[m * sz], p0x2);
    if (tw_lap_chain(m)) c1 = acc;
    else c0 = acc;
  }
  return tw_lap_sum(r, c0, c1);
}

/* Time update of one cell: p0 = p^n, pm = p^{n−1}, lap = L (+ S in source cells),
 * c2dt2 = c²dt², a = η dt/2 as (ax[i] + ay[j]) + az[k]: the functions below. Returns p^{n+1}. */
/* The update where a == 0 (outside the absorbing layers): the general formula below with
 * a = 0, evaluated exactly. Kernels that know a cell is undamped may call it directly (branch
 * free, so the CPU loop vectorizes); the result is bitwise the same. */
TW_HD float tw_cell_update_undamped(float p0, float pm, float lap, float c2dt2) {
  return TW_MADD(c2dt2, lap, 2.0f * p0) - pm;
}

/* The damped update's numerator, with om = 1 − a: what is multiplied by g (tw_damp_g). */
TW_HD float tw_cell_damped_num(float p0, float pm, float lap, float c2dt2, float om) {
  return TW_MADD(c2dt2, lap, 2.0f * p0) - om * pm;
}

#if defined(__CUDACC__)
/* RN(1/x) for x ∈ [1, 2^32): __frcp_rn's own fast path for such x (the hardware estimate, then one
 * Newton step: the correctly rounded quotient, the host's bits) without its range check, which with
 * its branch to the slow path for subnormal or huge x made 7 of its 10 instructions — gpu-stepwise
 * takes one or two per damped cell (docs/performance.md, session 34). tw_gpu_recip_check
 * (tests/test_gpu_stepwise.c) compares it with __frcp_rn for every float in that range. */
__device__ __forceinline__ float tw_dev_recip(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return __fmaf_rn(r, -__fmaf_rn(x, r, -1.0f), r);
}
#endif

/* RN(1/(1 + a)), a ≥ 0: one factor of the damping; a = 0 gives exactly 1. a = η dt/2 stays below
 * 30 for any stable job (boundary.c: η ≤ 3 v ln(1/R0)/(2 w d)), so 1 + a ∈ [1, 2^24) lies in
 * tw_dev_recip's range. */
TW_HD float tw_damp_recip(float a) {
#if defined(__CUDA_ARCH__)
  return tw_dev_recip(1.0f + a);
#else
  return 1.0f / (1.0f + a);
#endif
}

/* The damping of a cell from the per-axis tables, in the one order every kernel uses: its
 * horizontal part axy = ax + ay (a per column), then a = axy + az. */
TW_HD float tw_damping_xy(float ax, float ay) { return ax + ay; }
TW_HD float tw_damping(float ax, float ay, float az) { return tw_damping_xy(ax, ay) + az; }

/* g, the damping factor of a cell with a = axy + az: the column's factor times the z factor (a
 * product: exact where either is 1). tw_damp_g_col takes the column's factor gxy =
 * tw_damp_recip(axy) already computed (once per column and step, not per cell). */
TW_HD float tw_damp_g_col(float gxy, float az) { return gxy * tw_damp_recip(az); }
TW_HD float tw_damp_g(float axy, float az) { return tw_damp_g_col(tw_damp_recip(axy), az); }

/* The damped formula with om = 1 − a and its factor g = tw_damp_g(axy, az), of the same cell. */
TW_HD float tw_cell_update_damped_g(float p0, float pm, float lap, float c2dt2, float om, float g) {
  return tw_cell_damped_num(p0, pm, lap, c2dt2, om) * g;
}

/* The damped formula from the cell's axy and az (_col: with the column's factor gxy =
 * tw_damp_recip(axy) taken ahead, once per column and step). Exact for a = 0 too — (1 − 0)·pm = pm,
 * g = 1, x · 1 = x: the bits of tw_cell_update_undamped —, so a kernel may run it for every cell of
 * a group that straddles a layer's edge. */
TW_HD float tw_cell_update_damped_col(float p0, float pm, float lap, float c2dt2, float axy, float gxy, float az) {
  return tw_cell_update_damped_g(p0, pm, lap, c2dt2, 1.0f - (axy + az), tw_damp_g_col(gxy, az));
}
TW_HD float tw_cell_update_damped(float p0, float pm, float lap, float c2dt2, float axy, float az) {
  /* (tw_cell_update_damped_col with gxy = tw_damp_recip(axy), written out: with the reciprocal
   * passed as an argument nvcc emits other code for the kernels that call this per cell) */
  return tw_cell_update_damped_g(p0, pm, lap, c2dt2, 1.0f - (axy + az), tw_damp_g(axy, az));
}

/* p^{n+1} of a cell with the horizontal damping axy = tw_damping_xy(ax, ay) and az. */
TW_HD float tw_cell_update(float p0, float pm, float lap, float c2dt2, float axy, float az) {
  if (axy + az == 0.0f) return tw_cell_update_undamped(p0, pm, lap, c2dt2);
  return tw_cell_update_damped(p0, pm, lap, c2dt2, axy, az);
}

/* Trilinear (or nearest: ntap = 1) receiver value from its tap values, fixed order. Kernels
 * record raw tap values; the driver combines them with this, so all kernels agree bitwise. */
TW_HD float tw_receiver_combine(int ntap, const float *w, const float *v) {
  float acc = 0.0f;
  for (int t = 0; t < ntap; t++) acc = TW_MADD(w[t], v[t], acc);
  return acc;
}

#endif
