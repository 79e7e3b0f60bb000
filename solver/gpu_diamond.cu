// gpu_diamond.cu — kernel "gpu-diamond": DiamondTorre on the GPU (DESIGN §2).
//
// Geometry: exactly schedule.h (the same functions cpu-diamond runs, proven bitwise against the
// stepwise CPU reference in test_schedule / test_cpu_diamond). Rotated a = x + y, b = x − y;
// tower T(p, q) (stage s = p + q, centre index k = p − q) updates at local step τ the columns
// a ∈ [2Rp + τr, +2R), b ∈ [2Rq + τr, +2R). In tower-local coordinates u = a − 2Rp − τr,
// v = b − 2Rq − τr (u ≡ v mod 2) the diamond D is always [0, 2R)²: column (u, v) is at
// x = X0 + (u + v)/2, y = Y0 + (u − v)/2 with X0 = R·s + τr, Y0 = R·k. The frame moves by
// (r, r) in (u, v), i.e. +r in x, per step. Stages run in decreasing s, one CUDA block per tower
// (or a persistent grid that starts a tower when its two predecessors are done).
//
// Implementations behind one backend, bitwise equal to each other and to gpu-stepwise:
//  * the register tower (tower_kernel<r, DTS, Z>): Z = 1 or 2 adjacent z cells per thread
//    (blockDim = Nz rounded up to 32·Z, over Z; Z = 2 where one thread per cell would not fit a
//    block: Nz up to 512 at order 2, and with half the memory instructions per update: 8-byte
//    loads, stores and copies, one z-neighbour in a register); each thread keeps, for its z
//    cells, the tower's working set in registers across the tower's steps: F = p^n on the window
//    W = D ∪ cross(D) ∪ (D + (r, r)) (the diamond, every x/y neighbour its stencil reads, and the
//    cells that enter the diamond next step, whose p^n is their p^{n−1} then), G = p^{n−1} on D, C = c²dt² on D. Per step only the band of W that
//    this tower did not compute itself is loaded (p^{n+1} of the leading edge, c²dt² of the
//    entering columns; cp.async into shared memory one or two steps ahead) and only the columns
//    that leave D are stored (their last two levels). z-neighbours: each thread writes its p^n of
//    the 2R² columns to shared memory, one barrier, then reads z ± m from there (double-buffered:
//    one barrier per step). All table indices are compile-time (Geo<r, DTS> below, unrolled with
//    sfor), so the arrays live in registers; at high order the halo part of W stays in the shared
//    band buffer instead (HS). Launched per stage, or (default) as a persistent grid that takes
//    towers by ticket and starts one when its two predecessors have set their done flags.
//  * the generic tower (generic_kernel<r>): any R, any Nz (z looped inside the block); reads every
//    neighbour from global memory (L1/L2), writes every update back, one barrier per step. Slower
//    than gpu-stepwise (docs/performance.md): a second opinion for the tests, run on request only.
//  * the stepwise kernel itself: by default gpu-diamond runs a register tower only where its
//    locality model moves clearly fewer bytes per update than gpu-stepwise's 16 and one block of
//    Nz / Z threads fits (the DTS is lowered until it does); elsewhere (orders 6 and 8, very large
//    Nz) it delegates to gpu-stepwise — the same numbers, the better speed — and report() says why.
//
// Why the stages need no other synchronization (schedule.h has the argument): every value a tower
// reads from memory was written by a tower of a larger stage (finished: earlier launch, or a done
// flag in persistent mode) or by itself; a sibling of the same stage never writes what it reads.
// The register tower reads early (the band of step τ+1 or τ+2 is copied during step τ): those
// cells are not computed by this tower before they are used (the band of τ+j excludes D(τ+j−1),
// and D(τ+j−2) lies outside W(τ+j)), so their values are final when loaded. It stores late (a column's two levels when it leaves D): no sibling reads them and
// successors start after the stage.
//
// Out-of-grid cells: device arrays carry zero x/y padding wide enough for every cell a tower
// touches (PX ≥ 2R + 2r, PY ≥ 2R + r on each side) with c²dt² = 0 there, so the register tower
// updates padding cells like any other and they stay exactly +0 (2·0 − 0 + 0·L = +0): no bounds
// checks in the update. z: rows k ≥ Nz are zero (c²dt² = 0, never nonzero); above k = 0 the
// shared-memory halo holds 0 or, with a free surface, the image −p[m] (m < Nz), as the CPU and
// the stepwise kernel make it.
//
// Sliding window (gpu_window.cuh): when the grid is above solver.device_memory or the free GPU
// memory, the fields live in host memory and p0/p1/c2 of each launch are origins into a ring of
// x-planes (double-mapped, so the kernels index it like the whole grid); a launch runs G stages of
// a tw_window_plan while the next G stages' planes come in. The x padding is then virtual planes
// (zeros) of the plan's margin M = 2R + r, the reach of a tower past the grid.
//
// Sources: a per-advance list of events (tower, step, column, k, S^n), sorted by tower; a tower
// finds its range by binary search and adds S inside the cell's update (lap + S, as every kernel).
// Receivers: at a sample level the values of the columns the tower computed are in the shared
// exchange buffer of the next step (D ∩ D(τ+1) anyway, the columns that left D in extra slots), so
// a few lanes of every warp gather them column-parallel through a per-column tap index: no
// per-cell cost.
//
// The host emulation used in development compiles this file as C++ with a shim (TW_DIAMOND_EMU):
// OS threads with a barrier per CUDA block. It is not part of the build.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu_common.cuh"
#include "gpu_window.cuh"
#include "schedule.h"

namespace {

// ---------------------------------------------------------------------------------- portability

#ifdef TW_DIAMOND_EMU
#define DIA_DYN_SMEM(name) float *name = tw_emu_smem()
template <int Z>
__device__ inline void cp_async_z(float *dst, const float *src) {
  for (int j = 0; j < Z; j++) dst[j] = src[j];
}
__device__ inline void cp_async_commit() {}
template <int N>
__device__ inline void cp_async_wait() {}
__device__ inline int ld_acquire(const int *p) { return *(volatile const int *)p; }
__device__ inline void st_release(int *p, int v) { *(volatile int *)p = v; }
__device__ inline void dia_nanosleep(unsigned) {}
#define DIA_LAUNCH(k, g, b, smem, stream, ...) tw_emu_launch(k, g, b, smem, __VA_ARGS__)
template <typename T>
__device__ inline T *at(T *base, int off) { return base + off; }
#else
#define DIA_DYN_SMEM(name) extern __shared__ float name[]
// Asynchronous global → shared copy of Z floats (4 or 8 bytes, aligned; sm_80+): the thread that
// issues it is the only one that reads the words, after cp_async_wait, so no barrier is involved.
template <int Z>
__device__ __forceinline__ void cp_async_z(float *dst, const float *src) {
  static_assert(Z == 1 || Z == 2, "4- or 8-byte copies");
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(4 * Z) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ int ld_acquire(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(int *p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void dia_nanosleep(unsigned ns) { __nanosleep(ns); }
#define DIA_LAUNCH(k, g, b, smem, stream, ...) k<<<g, b, smem, stream>>>(__VA_ARGS__)
// base + off floats as one 32 x 32 → 64-bit multiply-add (IMAD.WIDE): written out, the compiler
// sign-extends, shifts and adds (three instructions per address, ~40 addresses per step).
template <typename T>
__device__ __forceinline__ T *at(T *base, int off) {
  T *p;
  asm("mad.wide.s32 %0, %1, 4, %2;" : "=l"(p) : "r"(off), "l"(base));
  return p;
}
#endif

// Compile-time loop: f(integral_constant<int, I>) for I in [B, E), so that table lookups with I
// are constant expressions and register arrays are only ever indexed by constants.
template <int B, int E, typename Fn>
__host__ __device__ __forceinline__ void sfor(Fn &&f) {
  if constexpr (B < E) {
    f(std::integral_constant<int, B>{});
    sfor<B + 1, E>(f);
  }
}

constexpr int odd_up(int n) { return n | 1; }

// ---------------------------------------------------------------------------------- geometry

// The register tower's tables for radius r and tile R = r·DTS, in tower-local (u, v) of one frame
// (see the header). All of this is evaluated by the compiler.
template <int r, int DTS>
struct Geo {
  static constexpr int R = r * DTS;
  static constexpr int ND = 2 * R * R;  // columns of the diamond
  static constexpr int BS = 2 * R + 2 * r;  // W lies in the box [−r, 2R + r)²
  static constexpr int NWMAX = BS * BS;

  int wid[BS][BS] = {};     // W index of (u, v) at [u + r][v + r], −1 if not in W
  int NW = 0;
  int wu[NWMAX] = {}, wv[NWMAX] = {};
  int du[ND] = {}, dv[ND] = {};  // D column c: u = c / R, v = 2(c % R) + (u & 1)
  int dw[ND] = {};               // its W index
  int nb[ND][4][r] = {};         // W index of its x−m, x+m, y−m, y+m neighbour
  // Shift to the next frame (u', v') = (u − r, v − r):
  int fromG[NWMAX] = {}, fromB[NWMAX] = {};  // F'[w] = G[fromG] (computed) or BF[fromB] (loaded)
  int NBF = 0;
  int bfu[NWMAX] = {}, bfv[NWMAX] = {};      // band cells (next-frame coordinates)
  int gsrc[ND] = {};                         // G'[c] = F[gsrc]
  int cfromC[ND] = {}, cfromB[ND] = {};      // C'[c] = C[cfromC] or BC[cfromB]
  int NBC = 0;
  int bcu[ND] = {}, bcv[ND] = {};
  // Columns that leave D after a step (u < r or v < r) and whether this tower computed their
  // previous level too (they were in the previous frame's D: u, v < 2R − r).
  int NL = 0;
  int lc[ND] = {};
  int lidx[ND] = {};
  bool leaving[ND] = {}, prevIn[ND] = {};
  int plw[ND] = {};  // W index, in the next frame, of leaving column j (for the tap exchange)

  static constexpr bool inD(int u, int v) { return u >= 0 && u < 2 * R && v >= 0 && v < 2 * R && ((u - v) & 1) == 0; }
  static constexpr int dIdx(int u, int v) { return u * R + (v >> 1); }
  constexpr int W(int u, int v) const {
    return (u >= -r && u < 2 * R + r && v >= -r && v < 2 * R + r) ? wid[u + r][v + r] : -1;
  }

  constexpr Geo() {
    for (int u = -r; u < 2 * R + r; u++)
      for (int v = -r; v < 2 * R + r; v++) {
        wid[u + r][v + r] = -1;
        if ((u - v) & 1) continue;
        bool in = inD(u, v) || inD(u - r, v - r);
        for (int m = 1; m <= r; m++)
          in = in || inD(u - m, v - m) || inD(u + m, v + m) || inD(u - m, v + m) || inD(u + m, v - m);
        if (in) {
          wu[NW] = u, wv[NW] = v;
          wid[u + r][v + r] = NW++;
        }
      }
    for (int c = 0; c < ND; c++) {
      const int u = c / R, v = 2 * (c % R) + (u & 1);
      du[c] = u, dv[c] = v;
      dw[c] = W(u, v);
      for (int m = 1; m <= r; m++) {
        nb[c][0][m - 1] = W(u - m, v - m);
        nb[c][1][m - 1] = W(u + m, v + m);
        nb[c][2][m - 1] = W(u - m, v + m);
        nb[c][3][m - 1] = W(u + m, v - m);
      }
      gsrc[c] = W(u + r, v + r);
      if (inD(u + r, v + r)) {
        cfromC[c] = dIdx(u + r, v + r), cfromB[c] = -1;
      } else {
        cfromC[c] = -1, cfromB[c] = NBC;
        bcu[NBC] = u, bcv[NBC] = v;
        NBC++;
      }
      leaving[c] = u < r || v < r;
      prevIn[c] = u < 2 * R - r && v < 2 * R - r;
      if (leaving[c]) {
        lidx[c] = NL;
        lc[NL] = c;
        plw[NL] = W(u - r, v - r);
        NL++;
      } else {
        lidx[c] = -1;
      }
    }
    for (int w = 0; w < NW; w++) {
      const int u = wu[w], v = wv[w];
      if (inD(u + r, v + r)) {
        fromG[w] = dIdx(u + r, v + r), fromB[w] = -1;
      } else {
        fromG[w] = -1, fromB[w] = NBF;
        bfu[NBF] = u, bfv[NBF] = v;
        NBF++;
      }
    }
  }
};


// ---------------------------------------------------------------------------------- kernel args

struct dia_event {
  int key;  // tower: (s_hi − s)·(kmax + 1) + k, increasing in launch/ticket order
  int tau;  // local step
  int col;  // diamond column c = u·R + (v >> 1) at that step
  int k;
  float S;  // S^n of the cell, n = t0 + tau
};

// Receiver index of one column: its taps [first, first + count) of the sorted tap list, and the k
// of the first two (a nearest receiver has one tap per column, a trilinear one two), so that the
// common cases need one 16-byte load.
struct alignas(16) colrec {
  int first, count, k0, k1;
};

// The largest column-offset table of a register tower (order 8, DTS 1: 16 x 17).
constexpr int DIA_OFF_MAX = 16 * 17;

struct dia_args {
  float *p0, *p1;                // level m in p[m & 1]; pointers at cell (0, 0, 0)
  const float *c2, *ax, *ay, *az;  // c2 like p; ax[x], ay[y], az[k] indexable over the padding
  long long SX;                  // floats per x plane (NYd·NZp)
  int NZp, N0, N1, N2, fs;
  tw_stencil st;
  long long t0;  // level at the start of the block
  int h, R;      // block height; tile size (the generic tower's R is a run-time value)
  int s_hi, s_lo, kmax, s;  // stage range, tower range, the stage of a stage launch
  int s_top;                // persistent mode: the first stage of this launch (s_hi, or a window group's)
  int xz0, xz1, yz0, yz1;   // ax == 0 on [xz0, xz1), ay == 0 on [yz0, yz1)
  const dia_event *ev;      // this block's events, sorted by (key, tau)
  int nev;
  const colrec *coltap;     // [N0·N1]
  const int *tapk;          // k of each tap
  float *taps;              // [sample − first][ntap]
  long long ntap, first;
  int interval;
  // Offsets of the columns (dx, dy), dx ∈ [−r, 2R + r), dy ∈ [−R − r, R + r], of a register tower
  // from its frame's base: off[(dx + r)·(2R + 2r + 1) + dy + R + r] = dx·SX + dy·NZp.
  int off[DIA_OFF_MAX];
  int fastdiv;   // the z-damped update may divide by 1 + az through its reciprocal (check_fastdiv)
  int fastdivy;  // the y-damped update may divide by 1 + (ay + az) the same way
  int *done, *ticket;  // persistent mode: per-tower done flags, the ticket counter
  int epoch, persistent, ntowers;
};

__device__ __forceinline__ float *lvl(const dia_args &A, long long m) { return (m & 1) ? A.p1 : A.p0; }

// Steps [tlo, thi) in which a tower of stage s has columns inside the grid: X0 = R·s + τr must
// satisfy X0 + 2R − 1 ≥ 0 and X0 ≤ N0 − 1.
__host__ __device__ __forceinline__ void active_steps(int R, int r, int s, int N0, int h, int *tlo, int *thi) {
  const int lo = -tw_floordiv(2 * R - 1 + R * s, r);  // ⌈(1 − 2R − Rs) / r⌉
  const int hi = tw_floordiv(N0 - 1 - R * s, r) + 1;
  *tlo = lo > 0 ? lo : 0;
  *thi = hi < h ? hi : h;
}

// The events of one tower: [e0, e1) with ev.key == key.
__device__ __forceinline__ void tower_events(const dia_args &A, int key, int *e0, int *e1) {
  int lo = 0, hi = A.nev;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (A.ev[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  int e = lo;
  while (e < A.nev && A.ev[e].key == key) e++;
  *e0 = lo;
  *e1 = e;
}

// Row of the taps buffer for level L (a sample level).
__device__ __forceinline__ long long tap_row(const dia_args &A, long long L) { return L / A.interval - A.first; }

// Slot in the exchange buffer (frame τ+1 numbering, extra slots ND + j for the leaving columns)
// where the value that column c of frame τ reached at step τ sits.
template <int r, int R>
__device__ __forceinline__ int gather_slot(int c) {
  const int u = c / R, v = 2 * (c % R) + (u & 1);
  if (u >= r && v >= r) return (u - r) * R + ((v - r) >> 1);
  int j = 0;
  for (int c2 = 0; c2 < c; c2++) {
    const int u2 = c2 / R, v2 = 2 * (c2 % R) + (u2 & 1);
    j += u2 < r || v2 < r;
  }
  return 2 * R * R + j;
}

// The receiver record of column c of a frame (origin X0f, Y0); empty outside the grid.
template <int R>
__device__ __forceinline__ colrec load_colrec(const dia_args &A, int c, int X0f, int Y0) {
  const int u = c / R, v = 2 * (c % R) + (u & 1);
  const int x = X0f + ((u + v) >> 1), y = Y0 + ((u - v) >> 1);
  colrec z = {0, 0, 0, 0};
  if (x < 0 || x >= A.N0 || y < 0 || y >= A.N1) return z;
  return A.coltap[(long long)x * A.N1 + y];
}

// The exchange buffer of the register tower: rows (z + H, H halo rows above z = 0) in groups of Z
// (a thread's Z adjacent z cells, so that it writes its values of a column with one Z-wide store),
// groups PZ words apart (PZ = Z·SS, SS odd: the threads of a warp hit distinct banks, per half-warp
// for 8-byte accesses), column c of a row at word Z·c of its group.
template <int Z>
__host__ __device__ __forceinline__ int xaddr(int row, int col, int PZ) { return (row / Z) * PZ + row % Z + Z * col; }

// Record the taps of the columns of a frame (origin X0f, Y0) that reached a sample level (row `row`
// of the taps buffer), from an exchange buffer (xaddr) whose columns are laid out by gather_slot:
// column-parallel over the block's threads, thread k taking columns myc, myc + blockDim.x, … with
// myc = gather_column(k) (a few columns per warp, not all in warp 0: the warp that gathers is late
// at the next barrier). `mine` is the record of column myc, loaded a step ahead so that its
// latency is hidden.
__device__ __forceinline__ int gather_column(int k) { return (k & 31) * (int)(blockDim.x / 32) + (k >> 5); }
template <int r, int R, int Z, int H>
__device__ __forceinline__ void gather_taps(const dia_args &A, const float *xbb, int PZ, int X0f, int Y0, long long row,
                                            int myc, int myslot, const colrec &mine) {
  constexpr int ND = 2 * R * R;
  if (myc >= ND) return;
  for (int c = myc; c < ND; c += blockDim.x) {
    const colrec ct = c == myc ? mine : load_colrec<R>(A, c, X0f, Y0);
    if (ct.count == 0) continue;
    const int slot = c == myc ? myslot : gather_slot<r, R>(c);
    for (int j = 0; j < ct.count; j++) {
      const int kz = j == 0 ? ct.k0 : j == 1 ? ct.k1 : A.tapk[ct.first + j];
      A.taps[row * A.ntap + ct.first + j] = xbb[xaddr<Z>(kz + H, slot, PZ)];
    }
  }
}

// Z adjacent floats (8-byte aligned when Z = 2) as one access: v(J) / put(J, x) with J an
// integral_constant, so that register arrays stay indexed by constants.
template <int Z, typename Fn>
__device__ __forceinline__ void store_z(float *p, Fn &&v) {
  static_assert(Z == 1 || Z == 2, "1 or 2 z cells per thread");
  if constexpr (Z == 1) *p = v(std::integral_constant<int, 0>{});
  else *reinterpret_cast<float2 *>(p) = make_float2(v(std::integral_constant<int, 0>{}), v(std::integral_constant<int, 1>{}));
}
template <int Z, bool RO = false, typename Fn>
__device__ __forceinline__ void load_z(const float *p, Fn &&put) {
  if constexpr (Z == 1) {
    put(std::integral_constant<int, 0>{}, RO ? __ldg(p) : *p);
  } else {
    const float2 t = RO ? __ldg(reinterpret_cast<const float2 *>(p)) : *reinterpret_cast<const float2 *>(p);
    put(std::integral_constant<int, 0>{}, t.x);
    put(std::integral_constant<int, 1>{}, t.y);
  }
}

constexpr int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// num / d correctly rounded from y = RN(1/d): q0 = RN(num·y), the exact residual num − d·q0 (a
// fused multiply-add), one correction. check_fastdiv proves it on the GPU for every divisor d of
// the grid and every num in the range recip_hard accepts; ±0 stays ±0 (the residual step would
// give +0).
__device__ __forceinline__ float div_by_recip(float num, float d, float y) {
  const float q0 = num * y;
  const float q1 = __fmaf_rn(__fmaf_rn(-d, q0, num), y, q0);
  return num == 0.0f ? num : q1;
}
// A numerator outside [2^-100, 2^100] (or not finite): the IEEE division then.
__device__ __forceinline__ bool recip_hard(float num) {
  return num != 0.0f && !(fabsf(num) >= 0x1p-100f && fabsf(num) <= 0x1p100f);
}

// The damped update of the register tower's ZDAMP and YDAMP paths (run_tower, step 4): the
// numerators num = t − (1 − a)·p^{n−1} into G (p^{n−1} is not read again this step), then
// G / (1 + a), straight-line: by the reciprocal unless a numerator of the warp is out of its
// proven range (or `noproof`: none for these divisors). om(J, I) = 1 − a,
// d(J, I) = 1 + a, y(J, I) = RN(1/d) of cell J of column I.
// A function, not a lambda, so that it is always inlined (a call would put G and C in memory).
template <int ND, int Z, typename P0, typename Lap, typename Fence, typename Om, typename D, typename Y>
__device__ __forceinline__ void damped_update(float (&Gv)[Z][ND], const float (&C)[Z][ND], P0 &&fgetD, Lap &&lap,
                                              Fence &&fence8, bool noproof, Om &&om, D &&d, Y &&y) {
  bool hard = false;
  sfor<0, ND>([&](auto I) {
    constexpr int i = I;
    sfor<0, Z>([&](auto J) {
      const float p0 = fgetD(J, I);
      const float t = TW_MADD(C[J][i], lap(J, I), 2.0f * p0);
      const float num = t - om(J, I) * Gv[J][i];
      Gv[J][i] = num;
      hard = hard || recip_hard(num);
    });
    fence8(I);
  });
  if (__any_sync(0xffffffffu, hard || noproof)) {
    sfor<0, ND>([&](auto I) {
      sfor<0, Z>([&](auto J) { Gv[J][I] = Gv[J][I] == 0.0f ? Gv[J][I] : Gv[J][I] / d(J, I); });
    });
  } else {
    sfor<0, ND>([&](auto I) { sfor<0, Z>([&](auto J) { Gv[J][I] = div_by_recip(Gv[J][I], d(J, I), y(J, I)); }); });
  }
}

// ---------------------------------------------------------------------------------- register tower

// Shared memory of the register tower, in floats: the double-buffered z exchange
// [2][(NZp + 2H) / Z][PZ] (xaddr), the band buffers [NZp / Z][SB] (thread-private: the current
// frame's, read by HS, and the next NB − 1 frames', in flight; item J of buffer b at word
// (b·nb + J)·Z), the damping of the current frame [2][4R] (x then y), the reciprocals of a y-layer
// tower's divisors [NZp / Z][SR] (thread-private: column c of the tower's 2R − 1 y columns, cell j
// at word c·Z + j), and one word for the persistent ticket. H: halo rows above z = 0 (r, rounded
// up to whole groups of Z).
template <int r, int DTS>
struct Tab {
  static constexpr Geo<r, DTS> T{};
};
template <int r, int Z>
__host__ __device__ constexpr int halo_rows() {
  return (r + Z - 1) / Z * Z;
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr int exch_group() {
  return Z * odd_up(Tab<r, DTS>::T.ND + Tab<r, DTS>::T.NL);
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr int band_stride_nb(int nb) {
  return Z * odd_up(nb * (Tab<r, DTS>::T.NBF + Tab<r, DTS>::T.NBC));
}
// Whether a register tower has the YDAMP path (run_tower, step 4). Measured on an H200 (session 5,
// docs/performance.md): order 2 DTS 3 with two z cells per thread 305 -> 350 Gcell/s on the project
// bench's grid with layers; in the one-cell towers it raised DTS 4 from 246 to 253 registers and
// cost 6 % in the interior without a gain on a real wavefield.
template <int r, int DTS, int Z>
__host__ __device__ constexpr bool has_ypath() {
  return Z == 2;
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr int recip_stride() {
  return has_ypath<r, DTS, Z>() ? odd_up((2 * r * DTS - 1) * Z) : 0;
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr size_t smem_floats(int NZp, int nb) {
  return 2 * (size_t)((NZp + 2 * halo_rows<r, Z>()) / Z) * exch_group<r, DTS, Z>() +
         (size_t)(NZp / Z) * band_stride_nb<r, DTS, Z>(nb) + 2 * 4 * (size_t)(r * DTS) +
         (size_t)(NZp / Z) * recip_stride<r, DTS, Z>() + 1;
}
// Band buffers: 3 (copies two steps ahead: measured 2–30 % faster at order 2, where a step is
// short against the DRAM latency) when that still fits 227 KB at the block's largest Nz
// (256·Z), else 2 (one step ahead: orders 4 and 6, whose bands are 2–4 times larger).
template <int r, int DTS, int Z>
__host__ __device__ constexpr int band_buffers() {
  return smem_floats<r, DTS, Z>(256 * Z, 3) <= 227 * 1024 / 4 ? 3 : 2;
}
template <int r, int DTS, int Z>
__host__ __device__ size_t tower_smem_bytes(int NZp) {
  return smem_floats<r, DTS, Z>(NZp, band_buffers<r, DTS, Z>()) * sizeof(float);
}

// One tower of stage s, centre k (kk), through the block's active steps. Every thread of the
// block calls it (barriers inside). Thread k holds the Z adjacent z cells z = Z·k + j, j < Z
// (Z = 2 halves the memory instructions per update: 8-byte loads, stores and band copies, and
// one of a cell's two z-neighbours at order 2 is the thread's other cell, in a register).
// Register budget per thread: Z·(NW + 2·ND) floats of tower state (F, G, C) plus the band being
// moved in Z·(NBF + NBC) and addressing: for R = 4, r = 1, Z = 1 that is 50 + 64 + 25 ≈ 140
// (ptxas -v: docs/performance.md). The band of step τ+1 is copied asynchronously into shared
// memory during step τ (cp.async: a step of latency hiding without holding registers) and moved
// into registers at the end of step τ.
template <int r, int DTS, int Z>
__device__ __forceinline__ void run_tower(const dia_args &A, int s, int kk, float *sm) {
  using G = Geo<r, DTS>;
  using TB = Tab<r, DTS>;  // the tables; read only in constexpr initializers (compile-time)
  constexpr int R = G::R, ND = G::ND, NW = TB::T.NW, NBF = TB::T.NBF, NBC = TB::T.NBC, NL = TB::T.NL;
  constexpr int H = halo_rows<r, Z>();
  constexpr int PZ = exch_group<r, DTS, Z>();
  constexpr int NB = band_buffers<r, DTS, Z>(), PD = NB - 1;  // buffers, prefetch distance in steps
  constexpr int SB = band_stride_nb<r, DTS, Z>(NB);
  constexpr int NBI = NBF + NBC;  // band items per frame
  const int k = threadIdx.x;
  const int NZp = A.NZp;
  static_assert((2 * R + 2 * r) * (2 * R + 2 * r + 1) <= DIA_OFF_MAX, "column offset table too small");

  int tlo, thi;
  active_steps(R, r, s, A.N0, A.h, &tlo, &thi);
  if (tlo >= thi) return;  // uniform over the block
  const int Y0 = R * kk;
  const int key = (A.s_hi - s) * (A.kmax + 1) + kk;
  int ecur, eend;
  tower_events(A, key, &ecur, &eend);

  float *const xb = sm;                                         // [2][(NZp + 2H) / Z][PZ]
  const int XBSZ = (NZp + 2 * H) / Z * PZ;
  float *const bandk = sm + 2 * XBSZ + k * SB;                  // [NB][NBI][Z] of thread k
  float *const sdamp = sm + 2 * XBSZ + NZp / Z * SB;            // [2][4R]: ax of the frame, ay
  float *const srec = sdamp + 8 * R + k * recip_stride<r, DTS, Z>();  // [2R − 1][Z] of thread k
  float azk[Z];
  for (int j = 0; j < Z; j++) azk[j] = A.az[Z * k + j];
  // Damping anywhere in this thread's warp (z layers): the FAST/GENERAL choice is made per warp,
  // so that a warp straddling a layer's edge runs one path, not both.
  bool wz = false;
  for (int j = 0; j < 32 * Z; j++) wz = wz || A.az[(k & ~31) * Z + j] != 0.0f;
  // Damping is zero in y for the whole tower? (x is checked per step.)
  const bool ydamp = !(Y0 - (R - 1) >= A.yz0 && Y0 + (R - 1) < A.yz1);
  // A tower in a y layer: the reciprocal of each divisor 1 + ((0 + ay) + az) of its cells, for
  // the steps outside the x layers (YDAMP below), with tw_damping's order of operations.
  constexpr bool YP = has_ypath<r, DTS, Z>();
  if (YP && ydamp && A.fastdivy)
    for (int c = 0; c < 2 * R - 1; c++)
      for (int j = 0; j < Z; j++) srec[c * Z + j] = 1.0f / (1.0f + tw_damping(0.0f, A.ay[Y0 - (R - 1) + c], azk[j]));
  const int myc = gather_column(k);  // receivers: the column this thread gathers (32 | blockDim.x)
  const int myslot = myc < ND ? gather_slot<r, R>(myc) : 0;

  // Offset of a column (dx, dy) from the frame's base (x = X0, y = Y0, z = Z·k): from the table in
  // the kernel parameters (constant bank), so that an address costs one multiply-add with a
  // constant operand and the offsets hold no registers across the step loop.
  auto off = [&](int dx, int dy) { return A.off[(dx + r) * (2 * R + 2 * r + 1) + dy + R + r]; };
  auto base_of = [&](int X0) { return (long long)X0 * A.SX + (long long)Y0 * NZp + Z * k; };

  float F[Z][NW], Gv[Z][ND], C[Z][ND];
  float BF[Z][NBF > 0 ? NBF : 1], BC[Z][NBC > 0 ? NBC : 1];
  // HS ("halo in shared memory"): the cells of W that this tower did not compute (fromB ≥ 0) stay
  // in the band buffer they were copied into and are read from there at each use; only the
  // computed ones (ND of them) are registers. Chosen where the state NW + 2·ND would not fit the
  // 255 registers next to everything else (high orders: W is mostly the cross-stencil halo).
  constexpr bool HS = NW + 2 * ND > 130;
  const float *bcur = bandk;  // the band buffer of the current frame (HS reads)
  // p^n of W cell w for the thread's cell j
  auto fget = [&](auto Jc, auto Wc) -> float {
    constexpr int j = Jc, w = Wc;
    constexpr int b = TB::T.fromB[w];
    if constexpr (HS && b >= 0) return bcur[b * Z + j];
    else return F[j][w];
  };
  auto fgetD = [&](auto Jc, auto Ic) -> float {  // the same for diamond column i
    return fget(Jc, std::integral_constant<int, TB::T.dw[Ic]>{});
  };

  // Band of frame τ1 (origin R·s + τ1·r): p^{t0+τ1} of the BF cells (values other towers computed,
  // final: see the header), c²dt² of the entering columns; into buffer τ1 mod NB.
  auto band_issue_async = [&](int tau1) {
    if (tau1 < thi) {
      float *dst = bandk + (tau1 % NB) * NBI * Z;
      const float *src = lvl(A, A.t0 + tau1);
      const long long b1 = base_of(R * s + tau1 * r);
      const float *const srcb = src + b1, *const c2b = A.c2 + b1;
      sfor<0, NBF>([&](auto J) {
        constexpr int u = TB::T.bfu[J], v = TB::T.bfv[J];
        cp_async_z<Z>(dst + J * Z, at(srcb, off((u + v) / 2, (u - v) / 2)));
      });
      sfor<0, NBC>([&](auto J) {
        constexpr int u = TB::T.bcu[J], v = TB::T.bcv[J];
        cp_async_z<Z>(dst + (NBF + J) * Z, at(c2b, off((u + v) / 2, (u - v) / 2)));
      });
    }
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };

  // Zero the halo rows of both exchange buffers: groups [0, H/Z) (above z = 0: zero, or the image
  // written every step by the ghost threads) and [(NZp + H)/Z, (NZp + 2H)/Z) (below the column).
  for (int e = threadIdx.x; e < 2 * 2 * (H / Z) * PZ; e += blockDim.x) {
    const int b = e / (2 * (H / Z) * PZ), rem = e % (2 * (H / Z) * PZ), g = rem / PZ, col = rem % PZ;
    xb[b * XBSZ + (g < H / Z ? g : NZp / Z + g) * PZ + col] = 0.0f;
  }
  __syncthreads();  // before the ghost threads write the image rows

  // The first active step: the whole working set from memory.
  {
    const long long n = A.t0 + tlo;
    const float *cur = lvl(A, n), *old = lvl(A, n + 1);
    const long long b0 = base_of(R * s + tlo * r);
    float *const bfirst = bandk + (tlo % NB) * NBI * Z;
    sfor<0, NW>([&](auto I) {
      constexpr int u = TB::T.wu[I], v = TB::T.wv[I], b = TB::T.fromB[I];
      load_z<Z>(cur + b0 + off((u + v) / 2, (u - v) / 2), [&](auto J, float val) {
        if constexpr (HS && b >= 0) bfirst[b * Z + J] = val;
        else F[J][I] = val;
      });
      // a one-time phase, but its register peak would set the whole kernel's count: in chunks
      if constexpr (I % 16 == 15) asm volatile("" ::: "memory");
    });
    sfor<0, ND>([&](auto I) {
      constexpr int u = TB::T.du[I], v = TB::T.dv[I];
      load_z<Z>(old + b0 + off((u + v) / 2, (u - v) / 2), [&](auto J, float val) { Gv[J][I] = val; });
      load_z<Z, true>(A.c2 + b0 + off((u + v) / 2, (u - v) / 2), [&](auto J, float val) { C[J][I] = val; });
      if constexpr (I % 16 == 15) asm volatile("" ::: "memory");
    });
  }
  for (int j = 1; j < PD; j++) band_issue_async(tlo + j);
  colrec nextrec = {0, 0, 0, 0};
  // level t0 + tlo modulo the sample interval, counted up per step (a 64-bit remainder per step
  // cost 16 % of the run with receivers)
  int phase = A.ntap ? (int)((A.t0 + tlo) % A.interval) : 1;
  // the taps row of the next sample level this tower gathers: the first one above t0 + tlo (that
  // level itself came from memory); levels are gathered in increasing order, one row each
  long long trow = A.ntap ? (A.t0 + tlo) / A.interval + 1 - A.first : 0;
  // The z-damped update (step 4): a = az[z] for each of the thread's cells, p^{n+1} = num / (1 + a).
  float az_om[Z], az_d[Z], az_y[Z];
  for (int j = 0; j < Z; j++) {
    az_om[j] = 1.0f - tw_damping(0.0f, 0.0f, azk[j]);
    az_d[j] = 1.0f + tw_damping(0.0f, 0.0f, azk[j]);
    az_y[j] = 1.0f / az_d[j];
  }

  // (unrolled by 2, which would halve the frame-shift moves: 255 registers and 8 % slower,
  // 32 % with absorbing layers: docs/performance.md, session 5)
#pragma unroll 1
  for (int tau = tlo; tau < thi; tau++) {
    const long long n = A.t0 + tau;  // this step computes level n + 1
    const int X0 = R * s + tau * r;
    const long long b0 = base_of(X0);
    float *const xbb = xb + (tau & 1) * XBSZ;
    float *const row = xbb + (k + H / Z) * PZ;  // the thread's group of rows
    bcur = bandk + (tau % NB) * NBI * Z;
    const bool tap_prev = A.ntap && phase == 0 && tau > tlo;  // level n, computed at τ−1
    const int phase1 = phase + 1 == A.interval ? 0 : phase + 1;
    const bool tap_next = A.ntap && phase1 == 0;  // level n + 1, computed now
    phase = phase1;
    // Receiver records: the columns whose taps are gathered at the start of step τ+1 (or in the
    // flush) are this frame's: load them a whole step ahead of their use.
    const colrec mine = nextrec;
    if (tap_next && myc < ND) nextrec = load_colrec<R>(A, myc, X0, Y0);

    // 1. exchange: p^n of the diamond for the z-neighbours (+ the image above a free surface,
    //    + the columns that left D last step when level n is a sample).
    sfor<0, ND>([&](auto I) { store_z<Z>(row + Z * I, [&](auto J) { return fgetD(J, I); }); });
    // (free surface: the threads holding z = 1 … r write the image −p[z] to row H − z; the
    // condition evaluated here, not held across the loop: that register made the z-damped
    // path spill at order 2, DTS 4)
    sfor<0, Z>([&](auto J) {
      const int z = Z * k + J;
      if (A.fs && z >= 1 && z <= r && z < A.N2) {
        float *const grow = xbb + xaddr<Z>(H - z, 0, PZ);
        sfor<0, ND>([&](auto I) { grow[Z * I] = -fgetD(J, I); });
      }
    });
    if (tap_prev)
      sfor<0, NL>([&](auto L) {
        store_z<Z>(row + Z * (ND + L), [&](auto J) { return fget(J, std::integral_constant<int, TB::T.plw[L]>{}); });
      });
    // the damping of this frame for GENERAL steps: ax of its 2R rows, ay of the tower's 2R − 1 columns
    // (only in steps that touch an x or y layer: elsewhere ax = ay = +0 and GENERAL uses +0)
    const bool xdamp = !(X0 >= A.xz0 && X0 + 2 * R <= A.xz1);
    const bool xydamp = ydamp || xdamp;
    float *const sd = sdamp + (tau & 1) * 4 * R;
    if (xydamp) {
      if (k < 2 * R) sd[k] = __ldg(&A.ax[X0 + k]);
      else if (k < 4 * R - 1) sd[k] = __ldg(&A.ay[Y0 - (R - 1) + (k - 2 * R)]);
    }
    __syncthreads();
    if (tap_prev) gather_taps<r, R, Z, H>(A, xbb, PZ, X0 - r, Y0, trow++, myc, myslot, mine);

    // 2. start the copies of the band of step τ + PD into buffer (τ + PD) mod NB, last read in step
    //    τ − 1, before the barrier above.
    band_issue_async(tau + PD);

    // 3. the events (sources) of this step
    int e1 = ecur;
    while (e1 < eend && A.ev[e1].tau == tau) e1++;
    const int e0 = ecur;
    ecur = e1;

    // 4. the update of the 2R² columns: p^{n+1} into G. Four paths, with the arithmetic and order
    //    of tw_laplacian / tw_cell_update:
    //    FAST   no damping in the warp's cells, no source (the interior);
    //    ZDAMP  damping in z only (a = az[z], the same for all of a cell's columns), per warp;
    //    YDAMP  a tower in a y layer, in a step outside the x layers and without a source: a per
    //           y column and z, its reciprocals precomputed per tower (srec);
    //    FULL   damping in x in this step (a per cell) or a source in this tower's step.
    //    ZDAMP and YDAMP compute all numerators first, then the divisions, straight-line: by the
    //    reciprocal (div_by_recip) unless a numerator of the warp is out of its proven range.
    //    The layers' towers run YDAMP/FULL every step and form a dependency chain through the
    //    stages: their speed paces the whole block (docs/performance.md, session 5).
    const bool ypath = YP && ydamp && !xdamp && e1 == e0 && A.fastdivy;  // uniform over the block
    const bool full = (xydamp || e1 > e0) && !ypath;               // uniform over the block
    // p^n of the cell j + d (d ≠ 0, relative to the thread's first cell) in column i: the thread's
    // own register when that cell is its own, else the exchange buffer
    auto zget = [&](auto Jc, auto Ic, auto Dc) -> float {
      constexpr int jd = (int)Jc + (int)Dc;
      if constexpr (jd >= 0 && jd < Z) return fgetD(std::integral_constant<int, jd>{}, Ic);
      else return row[floor_div(jd, Z) * PZ + (jd - floor_div(jd, Z) * Z) + Z * (int)Ic];
    };
    auto lap = [&](auto J, auto I) -> float {
      constexpr int i = I;
      const float p0 = fgetD(J, I);
      float acc = A.st.wc * p0;
      sfor<1, r + 1>([&](auto M) {
        constexpr int m = M;
        constexpr int xm = TB::T.nb[i][0][m - 1], xp = TB::T.nb[i][1][m - 1];
        constexpr int ym = TB::T.nb[i][2][m - 1], yp = TB::T.nb[i][3][m - 1];
        acc = TW_MADD(A.st.w[0][m], fget(J, std::integral_constant<int, xm>{}) + fget(J, std::integral_constant<int, xp>{}), acc);
        acc = TW_MADD(A.st.w[1][m], fget(J, std::integral_constant<int, ym>{}) + fget(J, std::integral_constant<int, yp>{}), acc);
        acc = TW_MADD(A.st.w[2][m], zget(J, I, std::integral_constant<int, -m>{}) + zget(J, I, std::integral_constant<int, m>{}), acc);
      });
      return acc;
    };
    // a of cell (j, column i) in a step that touches an x or y layer: ax of its row, ay of its
    // column (the frame's tables in sd), az of its z
    auto cell_damping = [&](auto J, auto I) -> float {
      constexpr int u = TB::T.du[I], v = TB::T.dv[I];
      return tw_damping(sd[(u + v) / 2], sd[2 * R + (u - v) / 2 + R - 1], azk[J]);
    };
    // Keep the scheduler from hoisting every shared-memory load of the step ahead of the
    // arithmetic (it would, and run out of registers at high order): a fence every 8 columns.
    auto fence8 = [](auto I) {
      if constexpr (I % 8 == 7) asm volatile("" ::: "memory");
    };
    if (full) {
      sfor<0, ND>([&](auto I) {
        constexpr int i = I;
        sfor<0, Z>([&](auto J) {
          const float p0 = fgetD(J, I);
          float acc = lap(J, I);
          const int z = Z * k + J;
#pragma unroll 1
          for (int e = e0; e < e1; e++)
            if (A.ev[e].col == i && A.ev[e].k == z) acc = acc + A.ev[e].S;
          const float a = xydamp ? cell_damping(J, I) : tw_damping(0.0f, 0.0f, azk[J]);
          // tw_cell_update's damped formula for every cell, a = 0 included: there it is exact
          // ((1 − 0)·pm = pm, x / 1 = x: the same bits as t − pm, tw_stencil.h), and a warp that
          // straddles a layer's edge takes one path instead of both.
          const float t = TW_MADD(C[J][i], acc, 2.0f * p0);
          const float num = t - (1.0f - a) * Gv[J][i];
          Gv[J][i] = num == 0.0f ? num : num / (1.0f + a);
        });
        fence8(I);
      });
    } else if (ypath) {
      // (1 − a and 1 + a from the same a, as FULL computes them; check_fastdiv proved the
      // reciprocal for every divisor 1 + ((0 + ay) + az) of the grid)
      if constexpr (YP)
        damped_update<ND, Z>(Gv, C, fgetD, lap, fence8, false, [&](auto J, auto I) { return 1.0f - cell_damping(J, I); },
                             [&](auto J, auto I) { return 1.0f + cell_damping(J, I); },
                             [&](auto J, auto I) {
                               constexpr int u = TB::T.du[I], v = TB::T.dv[I];
                               return srec[((u - v) / 2 + R - 1) * Z + J];
                             });
    } else if (wz) {
      damped_update<ND, Z>(Gv, C, fgetD, lap, fence8, !A.fastdiv, [&](auto J, auto) { return az_om[J]; },
                           [&](auto J, auto) { return az_d[J]; }, [&](auto J, auto) { return az_y[J]; });
    } else {
      sfor<0, ND>([&](auto I) {
        sfor<0, Z>([&](auto J) { Gv[J][I] = tw_cell_update_undamped(fgetD(J, I), Gv[J][I], lap(J, I), C[J][I]); });
        fence8(I);
      });
    }

    // 5. columns that leave D: p^{n+1} and, when this tower computed it, p^n.
    float *const nxt = lvl(A, n + 1) + b0, *const curp = lvl(A, n) + b0;
    sfor<0, NL>([&](auto L) {
      constexpr int i = TB::T.lc[L], u = TB::T.du[i], v = TB::T.dv[i];
      constexpr bool prev = TB::T.prevIn[i];
      store_z<Z>(at(nxt, off((u + v) / 2, (u - v) / 2)), [&](auto J) { return Gv[J][i]; });
      if constexpr (prev)
        if (tau > tlo)
          store_z<Z>(at(curp, off((u + v) / 2, (u - v) / 2)),
                     [&](auto J) { return fgetD(J, std::integral_constant<int, i>{}); });
    });

    if (tau + 1 < thi) {
      // 6. shift to frame τ+1: what this tower computed, what it loaded.
      cp_async_wait<PD - 1>();  // the band of τ+1 (the later ones may still be in flight)
      const float *srcb = bandk + ((tau + 1) % NB) * NBI * Z;
      if constexpr (!HS)
        sfor<0, NBF>([&](auto B) { load_z<Z>(srcb + B * Z, [&](auto J, float x) { BF[J][B] = x; }); });
      sfor<0, NBC>([&](auto B) { load_z<Z>(srcb + (NBF + B) * Z, [&](auto J, float x) { BC[J][B] = x; }); });
      sfor<0, Z>([&](auto J) {
        float Fn[NW], Gn[ND], Cn[ND];
        sfor<0, NW>([&](auto I) {
          constexpr int g = TB::T.fromG[I], b = TB::T.fromB[I];
          if constexpr (g >= 0) Fn[I] = Gv[J][g];
          else if constexpr (!HS) Fn[I] = BF[J][b];  // HS: stays in the band buffer of frame τ+1
        });
        sfor<0, ND>([&](auto I) {
          constexpr int w = TB::T.gsrc[I], c = TB::T.cfromC[I], b = TB::T.cfromB[I];
          Gn[I] = fget(J, std::integral_constant<int, w>{});
          if constexpr (c >= 0) Cn[I] = C[J][c];
          else Cn[I] = BC[J][b];
        });
        sfor<0, NW>([&](auto I) {
          if constexpr (!HS || TB::T.fromG[I] >= 0) F[J][I] = Fn[I];
        });
        sfor<0, ND>([&](auto I) {
          Gv[J][I] = Gn[I];
          C[J][I] = Cn[I];
        });
      });
    } else {
      // 7. the last step: store the rest of D (its last two levels), record its taps.
      sfor<0, ND>([&](auto I) {
        constexpr int i = I, u = TB::T.du[i], v = TB::T.dv[i];
        constexpr bool leave = TB::T.leaving[i], prev = TB::T.prevIn[i];
        if constexpr (!leave) {
          store_z<Z>(at(nxt, off((u + v) / 2, (u - v) / 2)), [&](auto J) { return Gv[J][i]; });
          if constexpr (prev)
            if (tau > tlo) store_z<Z>(at(curp, off((u + v) / 2, (u - v) / 2)), [&](auto J) { return fgetD(J, I); });
        }
      });
      if (tap_next) {
        float *const xbn = xb + ((tau + 1) & 1) * XBSZ;
        float *const rown = xbn + (k + H / Z) * PZ;
        sfor<0, ND>([&](auto I) {
          constexpr int i = I, u = TB::T.du[i], v = TB::T.dv[i], li = TB::T.lidx[i];
          constexpr bool leave = TB::T.leaving[i];
          constexpr int slot = leave ? ND + li : G::dIdx(u - r, v - r);
          store_z<Z>(rown + Z * slot, [&](auto J) { return Gv[J][i]; });
        });
        __syncthreads();
        gather_taps<r, R, Z, H>(A, xbn, PZ, X0, Y0, trow, myc, myslot, nextrec);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the exchange buffers are reused by the next tower (persistent mode)
}

// Decode a ticket of the persistent grid into (stage, tower centre): stages from s_top down, each
// with tw_stage_towers towers (two alternating counts).
__device__ __forceinline__ void decode_ticket(const dia_args &A, int t, int *s, int *kk) {
  const int par_hi = ((A.s_top % 2) + 2) % 2;
  const int c_hi = A.kmax >= par_hi ? (A.kmax - par_hi) / 2 + 1 : 0;
  const int par_nx = 1 - par_hi;
  const int c_nx = A.kmax >= par_nx ? (A.kmax - par_nx) / 2 + 1 : 0;
  const int P = c_hi + c_nx;
  const int pair = t / P, rem = t % P;
  if (rem < c_hi) {
    *s = A.s_top - 2 * pair;
    *kk = par_hi + 2 * rem;
  } else {
    *s = A.s_top - 2 * pair - 1;
    *kk = par_nx + 2 * (rem - c_hi);
  }
}

__device__ __forceinline__ int flag_index(const dia_args &A, int s, int kk) { return (s - A.s_lo) * (A.kmax + 1) + kk; }

// The register tower kernel. Stage mode: block b of a launch for stage A.s is its b-th tower.
// Persistent mode: each block takes tickets (stage-major order), waits for the tower's two
// predecessors T(p+1, q), T(p, q+1) = (s+1, k±1) to be done, runs it, and marks it done. A block
// waits only for towers with smaller tickets, which running blocks took: no deadlock, whatever
// the grid size.
// The largest block a register tower is compiled for (ptxas then keeps it within 65536 / that
// registers): small towers (Z·R ≤ 2, ~130 registers unbounded) are held to 128 registers, so
// that two blocks of 256 threads share an SM (one tower's barrier wait is the other's issue
// slots) and 512 threads fit one block; order 2 DTS 3 (~168) to 384 threads; the rest need up to
// 255 (256 threads).
template <int r, int DTS, int Z>
constexpr int tower_max_threads() {
  return r * DTS * Z <= 2 ? 512 : (r == 1 && DTS == 3 && Z == 1 ? 384 : r == 1 && DTS == 2 && Z == 2 ? 384 : 256);
}
template <int r, int DTS, int Z>
__global__ void __launch_bounds__(tower_max_threads<r, DTS, Z>(), 1) tower_kernel(const dia_args A) {
  DIA_DYN_SMEM(sm);
  if (!A.persistent) {
    const int s = A.s;
    run_tower<r, DTS, Z>(A, s, ((s % 2) + 2) % 2 + 2 * (int)blockIdx.x, sm);
    return;
  }
  int *const sh_ticket = (int *)(sm + (tower_smem_bytes<r, DTS, Z>(A.NZp) / sizeof(float) - 1));
  for (;;) {
    if (threadIdx.x == 0) sh_ticket[0] = atomicAdd(A.ticket, 1);
    __syncthreads();
    const int t = sh_ticket[0];
    __syncthreads();
    if (t >= A.ntowers) break;
    int s, kk;
    decode_ticket(A, t, &s, &kk);
    if (threadIdx.x == 0 && s + 1 <= A.s_hi) {
      if (kk + 1 <= A.kmax)
        while (ld_acquire(&A.done[flag_index(A, s + 1, kk + 1)]) < A.epoch) dia_nanosleep(100);
      if (kk - 1 >= 0)
        while (ld_acquire(&A.done[flag_index(A, s + 1, kk - 1)]) < A.epoch) dia_nanosleep(100);
      // Everything up-right of T(p, q) in the (p, q) lattice must be done; the two parents cover
      // it through their own waits whenever one of them exists. With a single tower column
      // (kmax = 0: only k = 0, on even stages) neither exists: wait for (s + 2, 0) instead.
      if (A.kmax == 0 && s + 2 <= A.s_hi)
        while (ld_acquire(&A.done[flag_index(A, s + 2, 0)]) < A.epoch) dia_nanosleep(100);
      __threadfence();
    }
    __syncthreads();
    run_tower<r, DTS, Z>(A, s, kk, sm);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) st_release(&A.done[flag_index(A, s, kk)], A.epoch);
  }
}

// ---------------------------------------------------------------------------------- generic tower

// p^n at (column offset cb, z = kz + m) with DESIGN §1's rules in z (x/y padding is zero).
__device__ __forceinline__ float zval(const dia_args &A, const float *cur, long long cb, int kz) {
  if (kz >= A.N2) return 0.0f;
  if (kz < 0) return (A.fs && -kz < A.N2) ? -cur[cb - kz] : 0.0f;
  return cur[cb + kz];
}

// One tower per block, z looped over the threads; every value through global memory.
template <int r>
__global__ void generic_kernel(const dia_args A) {
  const int s = A.s, R = A.R;
  const int kk = ((s % 2) + 2) % 2 + 2 * (int)blockIdx.x;
  int tlo, thi;
  active_steps(R, r, s, A.N0, A.h, &tlo, &thi);
  if (tlo >= thi) return;
  const int Y0 = R * kk;
  const int key = (A.s_hi - s) * (A.kmax + 1) + kk;
  int ecur, eend;
  tower_events(A, key, &ecur, &eend);
  for (int tau = tlo; tau < thi; tau++) {
    const long long n = A.t0 + tau;
    const float *cur = lvl(A, n);
    float *nxt = lvl(A, n + 1);
    const int X0 = R * s + tau * r;
    int e1 = ecur;
    while (e1 < eend && A.ev[e1].tau == tau) e1++;
    const int e0 = ecur;
    ecur = e1;
    const bool tapstep = A.ntap && (n + 1) % A.interval == 0;
    for (int u = 0; u < 2 * R; u++)
      for (int v = u & 1; v < 2 * R; v += 2) {
        const int x = X0 + ((u + v) >> 1), y = Y0 + ((u - v) >> 1);
        if (x < 0 || x >= A.N0 || y < 0 || y >= A.N1) continue;
        const int col = u * R + (v >> 1);
        const long long cb = (long long)x * A.SX + (long long)y * A.NZp;
        const float axv = A.ax[x], ayv = A.ay[y];
        colrec ct = {0, 0, 0, 0};
        if (tapstep) ct = A.coltap[(long long)x * A.N1 + y];
        for (int kz = threadIdx.x; kz < A.N2; kz += blockDim.x) {
          const long long c = cb + kz;
          const float p0 = cur[c];
          float acc = A.st.wc * p0;
#pragma unroll
          for (int m = 1; m <= r; m++) {
            acc = TW_MADD(A.st.w[0][m], cur[c - m * A.SX] + cur[c + m * A.SX], acc);
            acc = TW_MADD(A.st.w[1][m], cur[c - m * A.NZp] + cur[c + m * A.NZp], acc);
            acc = TW_MADD(A.st.w[2][m], zval(A, cur, cb, kz - m) + zval(A, cur, cb, kz + m), acc);
          }
          for (int e = e0; e < e1; e++)
            if (A.ev[e].col == col && A.ev[e].k == kz) acc = acc + A.ev[e].S;
          const float val = tw_cell_update(p0, nxt[c], acc, A.c2[c], tw_damping(axv, ayv, A.az[kz]));
          nxt[c] = val;
          for (int t = ct.first; t < ct.first + ct.count; t++)
            if (A.tapk[t] == kz) A.taps[tap_row(A, n + 1) * A.ntap + t] = val;
        }
      }
    __syncthreads();
  }
}

// ---------------------------------------------------------------------------------- host side

typedef void (*kernel_fn)(dia_args);

enum { MODE_STAGE = 0, MODE_PERSISTENT = 1, MODE_GENERIC = 2 };

struct reg_kernel {
  int r, dts, z;  // radius, DTS, z cells per thread
  kernel_fn fn;
  size_t (*smem)(int NZp);
  double bpu;  // the locality model: DRAM bytes per cell update in steady state
};

// Bytes per update a register tower moves when nothing hits in L2: per step it loads its band
// (NBF values of p, NBC of c²dt²) and stores the columns leaving D (one or two levels each), for
// ND updates. (The tower's first load and last store add (NW + 4·ND)·4 / (ND·height).)
template <int r, int DTS>
constexpr double model_bpu() {
  int prev = 0;
  for (int c = 0; c < Tab<r, DTS>::T.ND; c++) prev += Tab<r, DTS>::T.leaving[c] && Tab<r, DTS>::T.prevIn[c];
  return 4.0 * (Tab<r, DTS>::T.NBF + Tab<r, DTS>::T.NBC + Tab<r, DTS>::T.NL + prev) / Tab<r, DTS>::T.ND;
}

// gpu-stepwise moves 16 B per update (read p^n, p^{n−1}, c²dt², write p^{n+1}): a register tower
// that cannot beat it by this margin in the model (the DTS-1 towers of orders 4–8 move 19 B) is
// not used by default; gpu-diamond then runs the stepwise kernel (docs/performance.md).
// With absorbing layers on the z faces a tower must move at most half of that (see dia_init).
constexpr double STEPWISE_BPU = 16.0, MODEL_MARGIN = 0.85, Z_DAMPED_MARGIN = 0.5;

#define DIA_REG(R_, D_, Z_) {R_, D_, Z_, tower_kernel<R_, D_, Z_>, tower_smem_bytes<R_, D_, Z_>, model_bpu<R_, D_>()}

// Every instantiation costs compile time (about 10–30 s each): the tuned defaults and their
// neighbours in the DTS table of docs/performance.md; two z cells per thread where the state fits
// (order 2, DTS 2 and 3: Nz up to 768 and 512). For one (r, DTS) the first entry that fits is
// taken: the order is the measured preference (H200, session 5: DTS 2 with Z = 2 435 Gcell/s
// against 330 with Z = 1, three blocks per SM; DTS 3 with Z = 1 506 against 482).
const reg_kernel reg_kernels[] = {
    DIA_REG(1, 1, 1), DIA_REG(1, 2, 2), DIA_REG(1, 2, 1), DIA_REG(1, 3, 1), DIA_REG(1, 3, 2), DIA_REG(1, 4, 1),
    DIA_REG(2, 1, 1), DIA_REG(2, 2, 1), DIA_REG(3, 1, 1),
    // order 8 (r = 4) has none: DTS 1 needs 367 KB of shared memory at Nz = 256 (227 KB on an SM)
};
constexpr int NREGK = (int)(sizeof reg_kernels / sizeof reg_kernels[0]);

const kernel_fn generic_kernels[TW_GPU_RMAX] = {generic_kernel<1>, generic_kernel<2>, generic_kernel<3>,
                                                generic_kernel<4>};

struct dia_state {
  const tw_problem *pb;
  int r, dts, R, nt;
  int zpt;      // z cells per thread of the register tower
  int dts_req;  // the dts asked for (dts may be lower: the largest register tower that fits)
  int mode;
  double bpu;     // the chosen register tower's model bytes per update
  void *sw;       // delegate: the stepwise kernel's state, when DiamondTorre cannot win here
  kernel_fn fn;
  size_t smem;
  int threads, regs, blocks_per_sm, sms;
  // layout
  int N0, N1, N2, NZp, PX, PY, NXd, NYd;
  long long SX;
  float *alloc[3];
  float *p[2], *c2;
  float *ax_a, *ay_a, *az_a;  // allocations
  float *ax, *ay, *az;        // index 0 of the grid
  int xz0, xz1, yz0, yz1;
  // receivers
  colrec *coltap;
  int *tapk;
  float *taps;
  size_t taps_cap;
  // sources: events of one advance call
  std::vector<dia_event> hev;
  std::vector<size_t> ev_block;  // first event of each block of the call
  dia_event *ev;
  size_t ev_cap;
  int fastdiv, fastdivy;  // check_fastdiv passed for the z-damped / y-damped divisors
  // persistent mode
  int *done, *ticket;
  size_t done_cap;
  int epoch;
  float *stage;
  size_t stage_cap;
  cudaStream_t stream;
  long level;
  char why[160];  // why this implementation was chosen (report)
  // sliding window (DESIGN §3), when the grid is not resident: win != NULL
  tw_gpu_window *win;
  int G, M;        // stages per launch, virtual planes on each side (the towers' reach past the grid)
  double win_s;    // host time inside windowed advance calls (the copy-wait share's denominator)
  char win_why[200];
};

// The z-damped update divides by d = 1 + a through y = RN(1/d): q0 = RN(num·y),
// q1 = RN(q0 + RN(num − d·q0)·y) (both by fused multiply-add). Whether q1 = RN(num / d) for every
// num depends, while num, q0 and the residual stay normal, only on num's significand (scaling by
// 2^e commutes with each rounding, and RN is odd): so one exponent of num decides all of
// |num| ∈ [2^-100, 2^100]; the kernel uses the IEEE division for the other values (and 0 keeps its
// sign). This kernel counts, for each d, the significands of [1, 2) where the two differ.
__global__ void fastdiv_check_kernel(const float *d, int nd, unsigned *bad) {
  const unsigned m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= (1u << 23)) return;
  const float num = __uint_as_float(0x3f800000u | m);
  unsigned nbad = 0;
  for (int j = 0; j < nd; j++) nbad += __float_as_uint(div_by_recip(num, d[j], 1.0f / d[j])) != __float_as_uint(num / d[j]);
  if (nbad) atomicAdd(bad, nbad);
}

// Whether the reciprocal division is exact for every divisor in d (fastdiv_check_kernel: 2^23
// significands per divisor, about a millisecond per 400 divisors on an H200).
tw_status check_divisors(dia_state *s, std::vector<float> d, int *ok, tw_error *err) {
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  *ok = 1;
  if (d.empty()) return TW_OK;
  float *dd = NULL;
  unsigned *bad = NULL, hbad = 0;
  size_t cap = 0;
  tw_status st = tw_dev_ensure(&dd, &cap, d.size(), "division check", err);
  if (!st) {
    cudaError_t ce = cudaMalloc(&bad, sizeof(unsigned));
    if (ce == cudaSuccess) ce = cudaMemsetAsync(bad, 0, sizeof(unsigned), s->stream);
    if (ce == cudaSuccess) ce = cudaMemcpyAsync(dd, d.data(), d.size() * sizeof(float), cudaMemcpyHostToDevice, s->stream);
    if (ce == cudaSuccess) {
      fastdiv_check_kernel<<<(1u << 23) / 256, 256, 0, s->stream>>>(dd, (int)d.size(), bad);
      ce = cudaGetLastError();
    }
    if (ce == cudaSuccess) ce = cudaMemcpyAsync(&hbad, bad, sizeof(unsigned), cudaMemcpyDeviceToHost, s->stream);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(s->stream);
    if (ce != cudaSuccess)
      st = tw_error_set(err, TW_ECUDA, "division check (%d divisors): %s", (int)d.size(), cudaGetErrorString(ce));
  }
  cudaFree(dd), cudaFree(bad);
  *ok = !st && hbad == 0;
  return st;
}

// The divisors of the damped paths: ZDAMP's 1 + az[k] (s->fastdiv) and YDAMP's
// 1 + ((0 + ay[y]) + az[k]) for every pair of values the two profiles take (s->fastdivy; zero
// included: a y-layer tower has cells outside the z layers).
tw_status check_fastdiv(dia_state *s, const tw_problem *pb, tw_error *err) {
  std::vector<float> az(pb->a[2], pb->a[2] + s->N2), ay(pb->a[1], pb->a[1] + s->N1), dz, dy;
  az.push_back(0.0f), ay.push_back(0.0f);
  std::sort(az.begin(), az.end()), std::sort(ay.begin(), ay.end());
  az.erase(std::unique(az.begin(), az.end()), az.end());
  ay.erase(std::unique(ay.begin(), ay.end()), ay.end());
  for (float a : az)
    if (a != 0.0f) dz.push_back(1.0f + tw_damping(0.0f, 0.0f, a));
  if (ay.size() > 1)
    for (float b : ay)
      for (float a : az) dy.push_back(1.0f + tw_damping(0.0f, b, a));
  tw_status st = check_divisors(s, dz, &s->fastdiv, err);
  // (beyond a few thousand pairs the proof would take seconds: such layers keep the FULL path)
  if (!st && dy.size() <= 4096) st = check_divisors(s, dy, &s->fastdivy, err);
  else s->fastdivy = 0;
  return st;
}

void dia_free(dia_state *s) {
  if (!s) return;
  if (s->sw) tw_backend_gpu_stepwise.destroy(s->sw);
  // Errors are ignored: this also runs on error paths where the context may be broken.
  for (int a = 0; a < 3; a++) cudaFree(s->alloc[a]);
  cudaFree(s->ax_a), cudaFree(s->ay_a), cudaFree(s->az_a);
  cudaFree(s->coltap), cudaFree(s->tapk), cudaFree(s->taps), cudaFree(s->ev);
  cudaFree(s->done), cudaFree(s->ticket), cudaFree(s->stage);
  if (s->stream) cudaStreamDestroy(s->stream);
  tw_gpu_window_destroy(s->win);
  cudaGetLastError();
  delete s;
}

// The interval [z0, z1) where a damping profile is zero (the model's interior), or empty.
void zero_range(const float *a, int n, int *z0, int *z1) {
  int lo = 0;
  while (lo < n && a[lo] != 0.0f) lo++;
  int hi = lo;
  while (hi < n && a[hi] == 0.0f) hi++;
  for (int i = hi; i < n; i++)
    if (a[i] == 0.0f) {  // not one interval: treat every column as damped (always correct)
      lo = hi = 0;
      break;
    }
  *z0 = lo;
  *z1 = hi;
}


// The sliding window: the ring's size from the cap (bytes for the three arrays' planes), the
// number of stages per launch from the ring. A tower reaches 2R + r planes past the grid (its
// diamond starts at x ≥ 1 − 2R, its reads r further): those are the virtual planes, M.
tw_status window_setup(dia_state *s, const tw_problem *pb, uint64_t cap, int automatic, tw_error *err) {
  const int r = s->r, R = s->R;
  s->M = 2 * R + r;
  tw_schedule sc;
  auto schedule = [&]() {
    tw_schedule_init(&sc, s->N0, s->N1, r, s->dts, pb->steps < s->nt ? (int)(pb->steps > 0 ? pb->steps : 1) : s->nt);
  };
  auto planes = [&](int G, int overlap) {
    tw_window_plan p;
    tw_window_plan_diamond(&sc, s->M, G, &p);
    return tw_window_plan_min_planes(&p, overlap);
  };
  tw_gpu_plane_layout L = {s->N0, s->N1, s->N2, s->NYd, s->NZp, s->PY};
  int W = 0, q = 1, sp = 0;
  uint64_t smallest = 0;
  tw_status st;
  // The copies (20 B per cell and block, DESIGN §3) hide behind a block only when it is tall
  // enough; the register towers of order 2 run at ~500 Gcell/s, where the default height of 128
  // leaves the run waiting for copies (75 % of in-core, 96 % at 256: docs/performance.md). So
  // without a tower_height in the job, the window takes twice the default where the ring still
  // holds two launches of it with the copies overlapping.
  const int nt0 = s->nt;
  if (!pb->tower_height && s->mode != MODE_GENERIC && s->bpu < 0.5 * STEPWISE_BPU) {
    s->nt = 2 * nt0;
    schedule();
    tw_gpu_plane_layout L2 = L;
    if ((st = tw_gpu_window_fit(&L2, cap, planes(1, 0), s->N0 + 2 * s->M, &W, &q, &smallest, &sp, err))) return st;
    if (!W || planes(2, 1) > W) s->nt = nt0;
  }
  schedule();
  st = tw_gpu_window_fit(&L, cap, planes(1, 0), s->N0 + 2 * s->M, &W, &q, &smallest, &sp, err);
  if (st) return st;
  if (!W) {
    char params[64];
    snprintf(params, sizeof params, "dts %d, tower_height %d", s->dts, sc.nt);
    return tw_gpu_window_too_small(err, pb, cap, automatic, sp, smallest, params);
  }
  s->NYd = L.NYd;
  s->SX = (long long)s->NYd * s->NZp;
  if (s->SX * (2 * R + 2 * r + 2) >= (1LL << 31))
    return tw_error_set(err, TW_EUNSUPPORTED, "an x plane of %d x %d cells is too large for 32-bit in-tower offsets",
                        s->N1, s->N2);
  // As many stages per launch as the ring holds with copies overlapping both ways (a launch
  // boundary drains the GPU for about one tower); at least 1 (then copies may wait).
  s->G = 1;
  for (int G = 2; G <= 64; G++)
    if (planes(G, 1) <= W) s->G = G;
  if ((st = tw_gpu_window_create(pb, &L, W, &s->win, err))) return st;
  char b1[32];
  snprintf(s->win_why, sizeof s->win_why, "%s; window of %d x-planes (%s), %d stages per launch",
           automatic ? "the grid does not fit the GPU's free memory" : "the grid is above solver.device_memory", W,
           tw_format_bytes((double)tw_gpu_window_bytes(&L, W), b1, sizeof b1), s->G);
  return TW_OK;
}

tw_status dia_init(dia_state *s, const tw_problem *pb, tw_error *err) {
  const tw_grid *g = &pb->g;
  s->pb = pb;
  s->r = pb->st.r;
  if (s->r < 1 || s->r > TW_GPU_RMAX)
    return tw_error_set(err, TW_EUNSUPPORTED, "order %d is not supported (orders 2, 4, 6, 8; use kernel \"cpu\")",
                        pb->order);
  tw_status st = tw_schedule_params(pb->order, pb->dts, pb->tower_height, &s->dts, &s->nt, err);
  if (st) return st;
  s->R = s->r * s->dts;
  s->N0 = g->N[0], s->N1 = g->N[1], s->N2 = g->N[2];
  s->NZp = (s->N2 + TW_GPU_ZALIGN - 1) / TW_GPU_ZALIGN * TW_GPU_ZALIGN;
  const int R = s->R, r = s->r;
  // Padding: the register tower touches x ∈ (−2R − r, N0 + 2R + r) (its band one step ahead:
  // + r more) and y ∈ [−R + 1 − r, N1 + 2R − 2 + r]; +1 for good measure.
  s->PX = 2 * R + 2 * r + 1;
  s->PY = 2 * R + r + 1;
  s->NXd = s->N0 + 2 * s->PX;
  s->NYd = s->N1 + 2 * s->PY;
  s->zpt = 1;
  int dev = 0;
  TW_CUDA_TRY(err, cudaGetDevice(&dev));
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&s->sms, cudaDevAttrMultiProcessorCount, dev));
  int smem_optin = 0;
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  TW_CUDA_TRY(err, cudaStreamCreate(&s->stream));

  // Which implementation: the register tower when (r, dts) is instantiated and one block of
  // NZp / Z threads fits (registers and shared memory), Z = 1 or else 2 z cells per thread; the
  // generic tower otherwise. Environment (tuning and test knobs: the tests compare the
  // implementations bitwise, docs/performance.md their speed): TW_DIAMOND_MODE = persistent
  // (default) | stage | generic; TW_DIAMOND_ZPT = 1 | 2 allows only that Z.
  const char *me = getenv("TW_DIAMOND_MODE");
  int mode = MODE_PERSISTENT;
  if (me && strcmp(me, "stage") == 0) mode = MODE_STAGE;
  if (me && strcmp(me, "generic") == 0) mode = MODE_GENERIC;
  const char *mz = getenv("TW_DIAMOND_ZPT");
  const int zforce = mz && *mz ? atoi(mz) : 0;
  s->fn = NULL;
  s->dts_req = s->dts;
  snprintf(s->why, sizeof s->why, "generic tower requested");
  // The largest dts ≤ the requested one whose register tower fits: dts changes no bit of the
  // result (the schedule is exact for any tile), only the speed, and a smaller register tower is
  // far faster than the generic one.
  for (int d = s->dts; mode != MODE_GENERIC && d >= 1 && !s->fn; d--) {
    char why[160];
    snprintf(why, sizeof why, "no register tower for order %d with dts %d%s (R = %d: too many registers)", pb->order,
             d, zforce ? " and the z per thread asked" : "", r * d);
    for (int i = 0; i < NREGK && !s->fn; i++) {
      const reg_kernel *rk = &reg_kernels[i];
      const int z = rk->z;
      if (rk->r != r || rk->dts != d || (zforce && z != zforce)) continue;
      // a warp covers 32·Z cells of z: the column is padded to a whole number of warps
      const int nzp = (s->N2 + 32 * z - 1) / (32 * z) * (32 * z), threads = nzp / z;
      cudaFuncAttributes fa;
      TW_CUDA_TRY(err, cudaFuncGetAttributes(&fa, (const void *)rk->fn));
      const size_t smem = rk->smem(nzp);
      if (threads > fa.maxThreadsPerBlock) {
        snprintf(why, sizeof why, "Nz = %d needs %d threads (%d z per thread), the register tower of dts %d (%d "
                 "registers) allows %d", s->N2, threads, z, d, fa.numRegs, fa.maxThreadsPerBlock);
      } else if (smem > (size_t)smem_optin) {
        snprintf(why, sizeof why, "the register tower of dts %d needs %zu B of shared memory for Nz = %d, %d available",
                 d, smem, s->N2, smem_optin);
      } else {
        TW_CUDA_TRY(err, cudaFuncSetAttribute((const void *)rk->fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)smem));
        TW_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s->blocks_per_sm, (const void *)rk->fn,
                                                                       threads, smem));
        if (s->blocks_per_sm >= 1) {
          s->fn = rk->fn;
          s->smem = smem;
          s->threads = threads;
          s->zpt = z;
          s->NZp = nzp;
          s->regs = fa.numRegs;
          s->mode = mode;
          s->dts = d;
          s->R = r * d;
          s->bpu = rk->bpu;
        } else {
          snprintf(why, sizeof why, "the register tower of dts %d cannot be resident with %d threads", d, threads);
        }
      }
    }
    if (d == s->dts_req) snprintf(s->why, sizeof s->why, "%s", why);
  }
  // Without a request (TW_DIAMOND_MODE), DiamondTorre runs where it wins: a register tower that
  // fits and moves clearly fewer bytes than gpu-stepwise. Otherwise (no tower fits this Nz, or
  // only a DTS-1 tower of order ≥ 4, which moves more) the stepwise kernel does the work: the
  // same numbers bitwise, at the better speed; report() says so. The generic tower is slower
  // than either (docs/performance.md) and runs only on request.
  // Absorbing layers on the z faces put damped cells in every column, so every tower carries a
  // warp on the damped path and the step barrier paces the whole tower by it. Measured on an H200
  // (docs/performance.md, session 4, with the branch-free z-damped update): order 2, dts 3:
  // 1.51x gpu-stepwise; order 4, dts 2: 0.99x. Such grids run a register tower only where its model
  // moves at most half of gpu-stepwise's bytes.
  const int z_damped = pb->g.lo[2] > 0 || pb->g.hi[2] > 0;
  const double margin = z_damped ? Z_DAMPED_MARGIN : MODEL_MARGIN;
  if (!(me && *me) && (!s->fn || s->bpu > margin * STEPWISE_BPU)) {
    char why[sizeof s->why];
    if (s->fn && z_damped)
      snprintf(why, sizeof why, "z layers (%d/%d cells): a dts-%d tower (%.1f B/update) is not faster there",
               pb->g.lo[2], pb->g.hi[2], s->dts, s->bpu);
    else if (s->fn)
      snprintf(why, sizeof why, "the register tower of order %d with dts %d moves %.1f B per update in the model, "
               "gpu-stepwise 16", pb->order, s->dts, s->bpu);
    else
      snprintf(why, sizeof why, "%s", s->why);
    snprintf(s->why, sizeof s->why, "%s", why);
    tw_status st2 = tw_backend_gpu_stepwise.create(pb, &s->sw, err);
    if (st2) return tw_error_prefix(err, "running the stepwise kernel (%s)", s->why);
    return TW_OK;
  }
  if (!s->fn) {
    s->mode = MODE_GENERIC;
    s->fn = generic_kernels[r - 1];
    s->smem = 0;
    s->threads = s->NZp < 256 ? s->NZp : 256;
    cudaFuncAttributes fa;
    TW_CUDA_TRY(err, cudaFuncGetAttributes(&fa, (const void *)s->fn));
    s->regs = fa.numRegs;
    TW_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s->blocks_per_sm, (const void *)s->fn, s->threads, 0));
  }

  // the layout, with the column padding of the chosen tower (NZp above)
  s->SX = (long long)s->NYd * s->NZp;
  if (s->SX * (2 * s->R + 2 * r + 2) >= (1LL << 31))
    return tw_error_set(err, TW_EUNSUPPORTED, "an x plane of %d x %d cells is too large for 32-bit in-tower offsets",
                        s->N1, s->N2);
  const size_t cells = (size_t)s->NXd * (size_t)s->SX;
  const double need = 3.0 * (double)cells * sizeof(float);
  // The whole grid resident, or the sliding window (tw_gpu_window_decide).
  uint64_t wcap = 0;
  int automatic = 0;
  if ((st = tw_gpu_window_decide(pb, need, &wcap, &automatic, err))) return st;
  if (wcap) {
    if ((st = window_setup(s, pb, wcap, automatic, err))) return st;
  } else {
    // Fields: zero everywhere (the padding stays zero), c²dt² copied into the interior.
    const long long org = (long long)s->PX * s->SX + (long long)s->PY * s->NZp;
    size_t cap = 0;
    for (int a = 0; a < 3; a++) {
      cap = 0;
      if ((st = tw_dev_ensure(&s->alloc[a], &cap, cells, "gpu-diamond fields", err))) return st;
      TW_CUDA_TRY(err, cudaMemsetAsync(s->alloc[a], 0, cells * sizeof(float), s->stream));
    }
    s->p[0] = s->alloc[0] + org;
    s->p[1] = s->alloc[1] + org;
    s->c2 = s->alloc[2] + org;
    cudaMemcpy3DParms cp;
    memset(&cp, 0, sizeof cp);
    cp.srcPtr = make_cudaPitchedPtr((void *)pb->c2dt2, (size_t)s->N2 * sizeof(float), (size_t)s->N2, (size_t)s->N1);
    cp.dstPtr = make_cudaPitchedPtr(s->alloc[2], (size_t)s->NZp * sizeof(float), (size_t)s->NZp, (size_t)s->NYd);
    cp.dstPos = make_cudaPos(0, (size_t)s->PY, (size_t)s->PX);
    cp.extent = make_cudaExtent((size_t)s->N2 * sizeof(float), (size_t)s->N1, (size_t)s->N0);
    cp.kind = cudaMemcpyHostToDevice;
    TW_CUDA_TRY(err, cudaMemcpy3DAsync(&cp, s->stream));
  }
  size_t cap = 0;

  // Damping tables over the padded index ranges (zero outside the grid).
  cap = 0;
  if ((st = tw_dev_ensure(&s->ax_a, &cap, (size_t)s->NXd, "damping table", err))) return st;
  cap = 0;
  if ((st = tw_dev_ensure(&s->ay_a, &cap, (size_t)s->NYd, "damping table", err))) return st;
  cap = 0;
  if ((st = tw_dev_ensure(&s->az_a, &cap, (size_t)s->NZp, "damping table", err))) return st;
  TW_CUDA_TRY(err, cudaMemsetAsync(s->ax_a, 0, (size_t)s->NXd * sizeof(float), s->stream));
  TW_CUDA_TRY(err, cudaMemsetAsync(s->ay_a, 0, (size_t)s->NYd * sizeof(float), s->stream));
  TW_CUDA_TRY(err, cudaMemsetAsync(s->az_a, 0, (size_t)s->NZp * sizeof(float), s->stream));
  s->ax = s->ax_a + s->PX;
  s->ay = s->ay_a + s->PY;
  s->az = s->az_a;
  TW_CUDA_TRY(err, cudaMemcpyAsync(s->ax, pb->a[0], (size_t)s->N0 * sizeof(float), cudaMemcpyHostToDevice, s->stream));
  TW_CUDA_TRY(err, cudaMemcpyAsync(s->ay, pb->a[1], (size_t)s->N1 * sizeof(float), cudaMemcpyHostToDevice, s->stream));
  TW_CUDA_TRY(err, cudaMemcpyAsync(s->az, pb->a[2], (size_t)s->N2 * sizeof(float), cudaMemcpyHostToDevice, s->stream));
  zero_range(pb->a[0], s->N0, &s->xz0, &s->xz1);
  zero_range(pb->a[1], s->N1, &s->yz0, &s->yz1);

  // Receivers: per column (first tap, count) over the sorted tap list, and each tap's k.
  if (pb->ntap) {
    const colrec empty = {0, 0, 0, 0};
    std::vector<colrec> ct((size_t)s->N0 * (size_t)s->N1, empty);
    std::vector<int> tk((size_t)pb->ntap);
    for (long t = 0; t < pb->ntap; t++) {
      colrec &c = ct[(size_t)pb->tap[t][0] * (size_t)s->N1 + (size_t)pb->tap[t][1]];
      if (c.count == 0) c.first = (int)t;
      if (c.first + c.count != t)
        return tw_error_set(err, TW_EINTERNAL, "receiver taps are not sorted by cell (tap %ld)", t);
      if (c.count == 0) c.k0 = pb->tap[t][2];
      if (c.count == 1) c.k1 = pb->tap[t][2];
      c.count++;
      tk[(size_t)t] = pb->tap[t][2];
    }
    cap = 0;
    if ((st = tw_dev_ensure(&s->coltap, &cap, ct.size(), "receiver index", err))) return st;
    cap = 0;
    if ((st = tw_dev_ensure(&s->tapk, &cap, tk.size(), "receiver index", err))) return st;
    TW_CUDA_TRY(err, cudaMemcpyAsync(s->coltap, ct.data(), ct.size() * sizeof(colrec), cudaMemcpyHostToDevice, s->stream));
    TW_CUDA_TRY(err, cudaMemcpyAsync(s->tapk, tk.data(), tk.size() * sizeof(int), cudaMemcpyHostToDevice, s->stream));
    // The vectors go out of scope: make sure the copies are done.
    TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  }

  if ((st = check_fastdiv(s, pb, err))) return st;

  // Persistent mode: done flags for the tallest block, the ticket counter.
  if (s->mode == MODE_PERSISTENT) {
    tw_schedule sc;
    tw_schedule_init(&sc, s->N0, s->N1, r, s->dts, s->nt);
    const size_t nflags = (size_t)(sc.s_hi - sc.s_lo + 1) * (size_t)(sc.kmax + 1);
    if ((st = tw_dev_ensure(&s->done, &s->done_cap, nflags, "tower flags", err))) return st;
    TW_CUDA_TRY(err, cudaMemsetAsync(s->done, 0, nflags * sizeof(int), s->stream));
    cap = 0;
    if ((st = tw_dev_ensure(&s->ticket, &cap, (size_t)1, "tower tickets", err))) return st;
  }
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  s->level = 0;
  return TW_OK;
}

// Sources of one block: for every injection cell and step, the tower that updates it then and
// the column inside that tower (the same integer geometry as schedule.h).
void block_events(dia_state *s, const tw_schedule *sc, long t0b) {
  const tw_problem *pb = s->pb;
  const int R = s->R, r = s->r;
  const size_t first = s->hev.size();
  for (int c = 0; c < pb->ninj; c++) {
    const int x = pb->inj[c][0], y = pb->inj[c][1];
    const int a = x + y, b = x - y;
    for (int tau = 0; tau < sc->nt; tau++) {
      const int p = tw_floordiv(a - tau * r, 2 * R), q = tw_floordiv(b - tau * r, 2 * R);
      const int u = a - tau * r - 2 * R * p, v = b - tau * r - 2 * R * q;
      dia_event e;
      e.key = (sc->s_hi - (p + q)) * (sc->kmax + 1) + (p - q);
      e.tau = tau;
      e.col = u * R + (v >> 1);
      e.k = pb->inj[c][2];
      e.S = pb->S[(size_t)c * (size_t)pb->steps + (size_t)(t0b + tau)];
      s->hev.push_back(e);
    }
  }
  std::sort(s->hev.begin() + (long)first, s->hev.end(), [](const dia_event &x, const dia_event &y) {
    if (x.key != y.key) return x.key < y.key;
    if (x.tau != y.tau) return x.tau < y.tau;
    if (x.col != y.col) return x.col < y.col;
    return x.k < y.k;
  });
}

dia_args base_args(const dia_state *s) {
  const tw_problem *pb = s->pb;
  dia_args A;
  memset(&A, 0, sizeof A);
  A.p0 = s->p[0], A.p1 = s->p[1];
  A.c2 = s->c2, A.ax = s->ax, A.ay = s->ay, A.az = s->az;
  A.SX = s->SX;
  A.NZp = s->NZp, A.N0 = s->N0, A.N1 = s->N1, A.N2 = s->N2, A.fs = pb->free_surface;
  A.st = pb->st;
  A.R = s->R;
  A.xz0 = s->xz0, A.xz1 = s->xz1, A.yz0 = s->yz0, A.yz1 = s->yz1;
  A.coltap = s->coltap, A.tapk = s->tapk, A.taps = s->taps;
  A.ntap = pb->ntap, A.interval = pb->interval;
  A.fastdiv = s->fastdiv;
  A.fastdivy = s->fastdivy;
  const int R = s->R, r = s->r, ny = 2 * R + 2 * r + 1;
  if ((2 * R + 2 * r) * ny <= DIA_OFF_MAX)  // else no register tower runs (the generic one)
    for (int dx = -r; dx < 2 * R + r; dx++)
      for (int dy = -R - r; dy <= R + r; dy++) A.off[(dx + r) * ny + dy + R + r] = (int)(dx * s->SX + dy * s->NZp);
  A.done = s->done, A.ticket = s->ticket;
  return A;
}

// The towers of stages s_top down to s_bot of one block (A: the block's arguments): one persistent
// launch, or one launch per stage.
tw_status launch_stages(dia_state *s, const tw_schedule &sc, dia_args A, int s_top, int s_bot, tw_error *err) {
  if (s->mode == MODE_PERSISTENT) {
    long ntow = 0;
    for (int stg = s_top; stg >= s_bot; stg--) ntow += tw_stage_towers(&sc, stg);
    A.persistent = 1;
    A.s_top = s_top;
    A.ntowers = (int)ntow;
    TW_CUDA_TRY(err, cudaMemsetAsync(s->ticket, 0, sizeof(int), s->stream));
    long grid = (long)s->blocks_per_sm * s->sms;
    if (grid > ntow) grid = ntow;
    if (grid > 0) {
      DIA_LAUNCH(s->fn, dim3((unsigned)grid), dim3((unsigned)s->threads), s->smem, s->stream, A);
      TW_CUDA_LAUNCHED(err, "gpu-diamond tower kernel (persistent)");
    }
    return TW_OK;
  }
  for (int stg = s_top; stg >= s_bot; stg--) {
    const int ntow = tw_stage_towers(&sc, stg);
    if (!ntow) continue;
    A.s = stg;
    DIA_LAUNCH(s->fn, dim3((unsigned)ntow), dim3((unsigned)s->threads), s->smem, s->stream, A);
    TW_CUDA_LAUNCHED(err, "gpu-diamond tower kernel (one stage)");
  }
  return TW_OK;
}

// A window group: the block's arguments with the ring's origins at the group's first plane.
struct win_group {
  dia_state *s;
  const tw_schedule *sc;
  const tw_window_plan *p;
  const dia_args *A;
};
tw_status win_group_launch(void *ctx, int g, int lo, tw_error *err) {
  const win_group &c = *(const win_group *)ctx;
  dia_args A = *c.A;
  A.p0 = tw_gpu_window_origin(c.s->win, 0, lo);
  A.p1 = tw_gpu_window_origin(c.s->win, 1, lo);
  A.c2 = tw_gpu_window_origin(c.s->win, 2, lo);
  int top, bot;
  tw_window_group_stages(c.p, g, &top, &bot);
  return launch_stages(c.s, *c.sc, A, top, bot, err);
}

tw_status dia_advance_impl(dia_state *s, long t0, long n, float *taps, tw_error *err) {
  const tw_problem *pb = s->pb;
  long first, count;
  tw_status st = tw_gpu_advance_begin(pb, s->level, t0, n, &s->taps, &s->taps_cap, &first, &count, err);
  if (st) return st;

  // The blocks of this call and their source events, uploaded once.
  s->hev.clear();
  s->ev_block.clear();
  std::vector<tw_schedule> blocks;
  for (long done = 0; done < n;) {
    tw_schedule sc;
    tw_schedule_init(&sc, s->N0, s->N1, s->r, s->dts, tw_block_height(done, n, s->nt));
    s->ev_block.push_back(s->hev.size());
    block_events(s, &sc, t0 + done);
    blocks.push_back(sc);
    done += sc.nt;
  }
  s->ev_block.push_back(s->hev.size());
  if (!s->hev.empty()) {
    if ((st = tw_dev_ensure(&s->ev, &s->ev_cap, s->hev.size(), "source events", err))) return st;
    TW_CUDA_TRY(err, cudaMemcpyAsync(s->ev, s->hev.data(), s->hev.size() * sizeof(dia_event), cudaMemcpyHostToDevice,
                                     s->stream));
  }

  dia_args A = base_args(s);
  A.taps = s->taps;
  A.first = first;
  const double w0 = tw_wall_seconds();
  long tb = t0;
  for (size_t b = 0; b < blocks.size(); b++) {
    const tw_schedule &sc = blocks[b];
    A.t0 = tb;
    A.h = sc.nt;
    A.s_hi = sc.s_hi, A.s_lo = sc.s_lo, A.kmax = sc.kmax;
    A.ev = s->ev + s->ev_block[b];
    A.nev = (int)(s->ev_block[b + 1] - s->ev_block[b]);
    A.epoch = ++s->epoch;  // one per block: the done flags of a block's launches
    if (s->win) {
      // Window: group g + 1's planes come in while group g computes, g's finished planes go back
      // after it (the ring holds both; gpu_window.cuh orders the copies).
      tw_window_plan p;
      tw_window_plan_diamond(&sc, s->M, s->G, &p);
      win_group ctx = {s, &sc, &p, &A};
      if ((st = tw_gpu_window_run_plan(s->win, s->stream, &p, win_group_launch, &ctx, err))) return st;
    } else if ((st = launch_stages(s, sc, A, sc.s_hi, sc.s_lo, err))) {
      return st;
    }
    tb += sc.nt;
  }
  st = tw_gpu_advance_end(s->stream, taps, s->taps, (size_t)count * (size_t)pb->ntap, s->win, w0, &s->win_s, err);
  if (st) return st;
  s->level = t0 + n;
  return TW_OK;
}

tw_status dia_extract_impl(dia_state *s, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err) {
  tw_dev_layout L;
  L.N[0] = s->N0, L.N[1] = s->N1, L.N[2] = s->N2;
  L.Nyp = s->NYd, L.Nzp = s->NZp, L.sx = s->SX, L.fs = s->pb->free_surface;
  return tw_gpu_snapshot(L, s->p[s->level % 2], s->win, s->level, s->stream, &s->stage, &s->stage_cap, lo, cnt, dec,
                         out, err);
}

// ------------------------------------------------------------------ backend interface

tw_status dd_create(const tw_problem *pb, void **state, tw_error *err) {
  dia_state *s = new (std::nothrow) dia_state();
  if (!s) return tw_error_set(err, TW_ENOMEM, "gpu-diamond: out of memory");
  tw_status st = dia_init(s, pb, err);
  if (st) {
    tw_error_prefix(err, "gpu-diamond");
    dia_free(s);
    return st;
  }
  *state = s;
  return TW_OK;
}

tw_status dd_advance(void *state, long t0, long n, float *taps, tw_error *err) {
  dia_state *s = (dia_state *)state;
  tw_status st = s->sw ? tw_backend_gpu_stepwise.advance(s->sw, t0, n, taps, err) : dia_advance_impl(s, t0, n, taps, err);
  if (st) tw_error_prefix(err, "gpu-diamond: advancing steps %ld..%ld", t0, t0 + n);
  return st;
}

tw_status dd_extract(void *state, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err) {
  dia_state *s = (dia_state *)state;
  tw_status st = s->sw ? tw_backend_gpu_stepwise.extract(s->sw, lo, cnt, dec, out, err)
                       : dia_extract_impl(s, lo, cnt, dec, out, err);
  if (st) tw_error_prefix(err, "gpu-diamond: snapshot");
  return st;
}

long dd_block_steps(void *state) {
  const dia_state *s = (const dia_state *)state;
  return s->sw ? tw_backend_gpu_stepwise.block_steps(s->sw) : s->nt;
}

// The window's counters (nothing without a window).
void window_report(const dia_state *s, tw_run_report *rep) {
  if (s->win) tw_gpu_window_report(s->win, s->win_s, rep);
}

void dd_report(void *state, tw_run_report *rep) {
  const dia_state *s = (const dia_state *)state;
  if (s->sw) {
    tw_run_report sub;
    memset(&sub, 0, sizeof sub);
    if (tw_backend_gpu_stepwise.report) tw_backend_gpu_stepwise.report(s->sw, &sub);
    // the stepwise kernel's window counters are this run's
    rep->window_planes = sub.window_planes;
    rep->planes_in = sub.planes_in, rep->planes_out = sub.planes_out;
    rep->bytes_in = sub.bytes_in, rep->bytes_out = sub.bytes_out;
    rep->copy_wait_frac = sub.copy_wait_frac;
    snprintf(rep->note, sizeof rep->note, "gpu-diamond ran the stepwise kernel (%.80s); %.150s", s->why, sub.note);
    return;
  }
  if (s->mode == MODE_GENERIC) {
    snprintf(rep->note, sizeof rep->note, "gpu-diamond generic tower (%s): order %d, dts %d (R = %d), tower height %d, "
             "%d threads, %d registers%s%s", s->why, s->pb->order, s->dts, s->R, s->nt, s->threads, s->regs,
             s->win ? "; " : "", s->win ? s->win_why : "");
    window_report(s, rep);
    return;
  }
  char lowered[200] = "";
  if (s->dts != s->dts_req) snprintf(lowered, sizeof lowered, " (dts %d asked: %s)", s->dts_req, s->why);
  char win[240] = "";
  if (s->win) snprintf(win, sizeof win, "; %s", s->win_why);
  window_report(s, rep);
  snprintf(rep->note, sizeof rep->note, "gpu-diamond register tower, %s: order %d, dts %d%s (R = %d), tower height %d, "
           "%d threads x %d z, %d registers, %d blocks/SM on %d SMs%s",
           s->mode == MODE_PERSISTENT ? "persistent" : "stage launches", s->pb->order, s->dts, lowered, s->R, s->nt,
           s->threads, s->zpt, s->regs, s->blocks_per_sm, s->sms, win);
}

void dd_destroy(void *state) { dia_free((dia_state *)state); }

}  // namespace

extern "C" tw_status tw_gpu_diamond_randomize(void *state, uint64_t seed, tw_error *err) {
  dia_state *s = (dia_state *)state;
  if (!s->sw) return tw_error_set(err, TW_EUNSUPPORTED, "gpu-diamond: random fields only in the stepwise fallback");
  return tw_gpu_stepwise_randomize(s->sw, seed, err);
}

extern "C" {
extern const tw_backend_ops tw_backend_gpu_diamond;  // registered in backends.c
const tw_backend_ops tw_backend_gpu_diamond = {
    "gpu-diamond", 1, dd_create, dd_advance, dd_extract, dd_block_steps, dd_report, dd_destroy,
};
}
