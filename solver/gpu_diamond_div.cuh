// gpu_diamond_div.cuh — the damped update's division: the reciprocal paths, their proof kernel
// (check_fastdiv)
// Part of the gpu-diamond kernel: included by gpu_diamond.cu only (one translation unit, so
// that the templates see each other); the header of gpu_diamond.cu explains the design.
#pragma once

#include "gpu_diamond_base.cuh"

namespace {

// ---------------------------------------------------------------------------------- damped division

// num / d correctly rounded from y = RN(1/d): q0 = RN(num·y), the exact residual num − d·q0 (a
// fused multiply-add), one correction. check_fastdiv proves it on the GPU for every divisor d of
// the grid and every num in the range recip_hard accepts; ±0 stays ±0 (the residual step would
// give +0).
__device__ __forceinline__ float div_by_recip(float num, float d, float y) {
  const float q0 = num * y;
  const float q1 = __fmaf_rn(__fmaf_rn(-d, q0, num), y, q0);
  return num == 0.0f ? num : q1;
}
// A numerator outside [2^-100, 2^100] (or not finite): div_by_recip_tiny or the IEEE division then.
// (& and |, not && and ||: see damped_update)
__device__ __forceinline__ bool recip_hard(float num) {
  return (num != 0.0f) & !((fabsf(num) >= 0x1p-100f) & (fabsf(num) <= 0x1p100f));
}
// num / d correctly rounded for |num| ≤ 2^100, the tiny numerators included (the tails ahead of a
// wavefront: with them in its warp the damped update ran the IEEE division, whose slow path made
// a grid with absorbing layers 1.66x slower; docs/performance.md, session 6). For |num| < 2^-100
// it divides s = num·2^100 (exact, and inside div_by_recip's proven range) and scales the
// quotient q = RN(s/d) back: u = RN(q·2^-100) is exact while u is normal; on the subnormal grid
// (spacing 2^-149, 2^-49 scaled) it is RN(num/d) unless q fell exactly on a midpoint of that grid
// (|q − u·2^100| = 2^-50: the grid's midpoints lie on q's finer one) while num/d did not: then the
// sign of the residual s − d·q (the side num/d lies on) decides, and u moves one step 2^-149
// towards q. Checked against the IEEE division for every tiny numerator by test_gpu_diamond.
__device__ __forceinline__ float div_by_recip_tiny(float num, float d, float y) {
  const bool t = fabsf(num) < 0x1p-100f;
  const float s = t ? num * 0x1p100f : num;
  const float q = div_by_recip(s, d, y);
  const float u = t ? q * 0x1p-100f : q;
  const float diff = t ? q - u * 0x1p100f : 0.0f;  // exact: within half a grid step
  const float e = __fmaf_rn(-d, q, s);            // its sign: the side of q that s/d lies on
  // (e·diff does not underflow to 0 at a midpoint: e ≠ 0 is a multiple of 2^-96 there)
  return (fabsf(diff) == 0x1p-50f && e * diff > 0.0f) ? u + diff * 0x1p-99f : u;
}

// The damped update of the register tower's ZDAMP and YDAMP paths (run_tower, step 4): the
// numerators num = t − (1 − a)·p^{n−1} into G (p^{n−1} is not read again this step), then
// G / (1 + a), straight-line: by the reciprocal unless a numerator of the warp is out of its
// proven range (or `noproof`: none for these divisors). om(J, I) = 1 − a,
// d(J, I) = 1 + a, y(J, I) = RN(1/d) of cell J of column I. (Exempting the warp's undamped cells,
// d = 1, from the range check was tried: no faster; docs/performance.md, session 6.)
// A function, not a lambda, so that it is always inlined (a call would put G and C in memory).
template <int ND, int Z, typename P0, typename Lap, typename Fence, typename Om, typename D, typename Y>
__device__ __forceinline__ void damped_update(float (&Gv)[Z][ND], const float (&C)[Z][ND], P0 &&fgetD, Lap &&lap,
                                              Fence &&fence8, bool noproof, Om &&om, D &&d, Y &&y) {
  // The range check with bitwise operators: with || and && (short-circuit) the PTX branched per
  // cell, and the z-layer warp, whose step every other warp waits for at the barrier, made the
  // towers 18-26 % slower on a wavefield with absorbing layers (docs/performance.md, session 6).
  bool hard = false;
  sfor<0, ND>([&](auto I) {
    constexpr int i = I;
    sfor<0, Z>([&](auto J) {
      const float num = tw_cell_damped_num(fgetD(J, I), Gv[J][i], lap(J, I), C[J][i], om(J, I));
      Gv[J][i] = num;
      hard = hard | recip_hard(num);
    });
    fence8(I);
  });
  if (__any_sync(0xffffffffu, hard || noproof)) {
    // tiny numerators only: the scaled reciprocal; a huge one, one not finite, or no proof: IEEE
    bool huge = noproof;
    sfor<0, ND>([&](auto I) { sfor<0, Z>([&](auto J) { huge = huge || !(fabsf(Gv[J][I]) <= 0x1p100f); }); });
    if (__any_sync(0xffffffffu, huge))
      sfor<0, ND>([&](auto I) {
        sfor<0, Z>([&](auto J) { Gv[J][I] = Gv[J][I] == 0.0f ? Gv[J][I] : Gv[J][I] / d(J, I); });
      });
    else
      sfor<0, ND>([&](auto I) { sfor<0, Z>([&](auto J) { Gv[J][I] = div_by_recip_tiny(Gv[J][I], d(J, I), y(J, I)); }); });
  } else {
    sfor<0, ND>([&](auto I) { sfor<0, Z>([&](auto J) { Gv[J][I] = div_by_recip(Gv[J][I], d(J, I), y(J, I)); }); });
  }
}

// The z-damped update divides by d = 1 + a through y = RN(1/d): q0 = RN(num·y),
// q1 = RN(q0 + RN(num − d·q0)·y) (both by fused multiply-add). Whether q1 = RN(num / d) for every
// num depends, while num, q0 and the residual stay normal, only on num's significand (scaling by
// 2^e commutes with each rounding, and RN is odd): so one exponent of num decides all of
// |num| ∈ [2^-100, 2^100] (band 0 of this kernel). Below 2^-100, div_by_recip_tiny scales by 2^100
// into that range; its quotient is exact while num/d is normal and needs its midpoint rule where
// num/d is subnormal, i.e. num < 2^-126·d: bands 1 … nb − 1 are every float of [0, 2^(nb − 2 − 126))
// (the subnormals, then one binade each; positive ones suffice: every step is odd in num). The
// kernel counts, for each d, the numerators where the reciprocal path and the IEEE division differ.
__global__ void fastdiv_check_kernel(const float *d, int nd, unsigned *bad) {
  const unsigned m = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (m >= (1u << 23)) return;
  unsigned nbad = 0;
  if (b == 0) {
    const float num = __uint_as_float(0x3f800000u | m);
    for (int j = 0; j < nd; j++) nbad += __float_as_uint(div_by_recip(num, d[j], 1.0f / d[j])) != __float_as_uint(num / d[j]);
  } else {
    const float num = __uint_as_float(((b - 1) << 23) | m);
    for (int j = 0; j < nd; j++)
      nbad += __float_as_uint(div_by_recip_tiny(num, d[j], 1.0f / d[j])) != __float_as_uint(num / d[j]);
  }
  if (nbad) atomicAdd(bad, nbad);
}

}  // namespace
