// gpu_diamond_base.cuh — portability shims (the host emulation), compile-time loops, the tower's
// geometry tables (Geo)
// Part of the gpu-diamond kernel: included by gpu_diamond.cu only (one translation unit, so
// that the templates see each other); the header of gpu_diamond.cu explains the design.
#pragma once

#include <cuda_runtime.h>
#ifndef TW_DIAMOND_EMU
#include <cooperative_groups.h>  // clusters (cl_sync below)
#endif
// Thread-block clusters exist from sm_90: a build for older GPUs as well ("75;80;90") compiles the
// cluster tower's kernel for them with an empty body (dia_init never launches it where the GPU has
// no cluster launch) and without its cluster dimensions (DIA_CLUSTER_DIMS2); so does the emulation.
#if !defined(TW_DIAMOND_EMU) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900)
#define DIA_CLUSTERS 1
#define DIA_CLUSTER_DIMS2 __cluster_dims__(2, 1, 1)
#else
#define DIA_CLUSTERS 0
#define DIA_CLUSTER_DIMS2
#endif

#include <type_traits>
#include <utility>

namespace {

// ---------------------------------------------------------------------------------- portability

#ifdef TW_DIAMOND_EMU
#define DIA_DYN_SMEM(name) float *name = tw_emu_smem()
template <int Z>
__device__ inline void cp_async_z(float *dst, const float *src) {
  for (int j = 0; j < Z; j++) dst[j] = src[j];
}
__device__ inline void cp_async_16(float *dst, const float *src) {
  for (int j = 0; j < 4; j++) dst[j] = src[j];
}
__device__ inline void cp_async_commit() {}
template <int N>
__device__ inline void cp_async_wait() {}
__device__ inline void mbar_init(unsigned long long *, unsigned) {}
__device__ inline void mbar_expect_tx(unsigned long long *, unsigned) {}
__device__ inline void bulk_copy(float *dst, const float *src, unsigned bytes, unsigned long long *) {
  for (unsigned j = 0; j < bytes / 4; j++) dst[j] = src[j];
}
__device__ inline void mbar_wait(unsigned long long *, unsigned) {}
__device__ inline void fence_proxy_async() {}
__device__ inline int ld_acquire(const int *p) { return *(volatile const int *)p; }
__device__ inline void st_release(int *p, int v) { *(volatile int *)p = v; }
__device__ inline void dia_nanosleep(unsigned) {}
__device__ inline unsigned long long dia_clock_ns() { return 0; }
__device__ inline unsigned dia_smid() { return 0; }
#define DIA_LAUNCH(k, g, b, smem, stream, ...) tw_emu_launch(k, g, b, smem, __VA_ARGS__)
template <typename T>
__device__ inline T *at(T *base, int off) { return base + off; }
#else
#define DIA_DYN_SMEM(name) extern __shared__ __align__(16) float name[]  // (cp_async_16)
// Asynchronous global → shared copy of Z floats (4 or 8 bytes, aligned; sm_80+): the thread that
// issues it is the only one that reads the words, after cp_async_wait, so no barrier is involved.
template <int Z>
__device__ __forceinline__ void cp_async_z(float *dst, const float *src) {
  static_assert(Z == 1 || Z == 2, "4- or 8-byte copies");
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(4 * Z) : "memory");
}
// 16 bytes (4 z cells of one band item, both addresses 16-byte aligned): the cooperative band
// copies (gpu_diamond_tower.cuh: band_coop), issued by one lane for the 4 / Z threads whose cells
// they are.
__device__ __forceinline__ void cp_async_16(float *dst, const float *src) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// One-dimensional bulk copies (the TMA unit, sm_90) global → shared, counted on an mbarrier: one
// thread arms the barrier with the bytes of a phase (mbar_expect_tx), any threads issue the copies
// (bulk_copy: both addresses 16-byte aligned, a multiple of 16 bytes), and every thread that reads
// the words waits for the phase (mbar_wait: its parity, 0, 1, 0, … a use). A lane's copy is a loop
// over the warp's active lanes (ELECT, the addresses into uniform registers, UBLKCP), so a copy
// costs ~8 warp instructions: few large copies, not one a lane. The copies are the async proxy:
// shared words the threads wrote and global words another SM published (an acquire) before a copy
// reads or overwrites them need fence_proxy_async in the issuing thread first.
__device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_copy(float *dst, const float *src, unsigned bytes, unsigned long long *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n"
      "WAIT%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT%=;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async;\n" ::: "memory"); }
__device__ __forceinline__ int ld_acquire(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(int *p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void dia_nanosleep(unsigned ns) { __nanosleep(ns); }
// The GPU's global timer (ns) and the SM a block runs on: the persistent grid's trace.
__device__ __forceinline__ unsigned long long dia_clock_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned dia_smid() {
  unsigned v;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
  return v;
}
#define DIA_LAUNCH(k, g, b, smem, stream, ...) k<<<g, b, smem, stream>>>(__VA_ARGS__)
// base + off floats as one 32 x 32 → 64-bit multiply-add (IMAD.WIDE), off in a register (the band
// copies' offsets, from their table in shared memory): written out, the compiler sign-extends,
// shifts and adds (three instructions an address).
template <typename T>
__device__ __forceinline__ T *at(T *base, int off) {
  T *p;
  asm("mad.wide.s32 %0, %1, 4, %2;" : "=l"(p) : "r"(off), "l"(base));
  return p;
}
#endif
// base + a 64-bit offset in bytes (a column's, from the kernel parameters: dia_args.boff): IADD3
// and IADD3.X with a constant-bank operand
template <typename T>
__device__ __forceinline__ T *atb(T *base, long long bytes) {
  return (T *)((char *)base + bytes);
}

// A register tower whose z column is split over a thread-block cluster of CL CTAs (sm_90; CL = 1:
// one CTA, and none of this is emitted). Only the cluster tower's kernel instantiates CL > 1, and
// its body is compiled where DIA_CLUSTERS only. cl_sync: the barrier of the whole tower (the
// cluster's arrive.release and wait.acquire, so that the seam rows each CTA stored into its
// neighbours' shared memory are visible after it; it also orders every thread of each CTA, as
// __syncthreads). cl_arrive / cl_wait: its two halves (.aligned: a warp's threads execute each
// together); a thread alternates them, and between the two it may do work that does not read what
// the other CTAs stored. cl_smem: the address of p in the shared memory of the cluster's CTA `rank`
// (distributed shared memory, written with ordinary stores).
template <int CL>
__device__ __forceinline__ void cl_sync() {
  static_assert(CL == 1 || DIA_CLUSTERS, "clusters: sm_90 on, not in the host emulation");
  if constexpr (CL == 1) __syncthreads();
#if DIA_CLUSTERS
  else cooperative_groups::this_cluster().sync();
#endif
}
template <int CL>
__device__ __forceinline__ void cl_arrive() {
  static_assert(CL == 1 || DIA_CLUSTERS, "clusters: sm_90 on, not in the host emulation");
#if DIA_CLUSTERS
  if constexpr (CL > 1) asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
template <int CL>
__device__ __forceinline__ void cl_wait() {
  static_assert(CL == 1 || DIA_CLUSTERS, "clusters: sm_90 on, not in the host emulation");
#if DIA_CLUSTERS
  if constexpr (CL > 1) asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
template <int CL>
__device__ __forceinline__ int cl_rank() {
  static_assert(CL == 1 || DIA_CLUSTERS, "clusters: sm_90 on, not in the host emulation");
#if DIA_CLUSTERS
  if constexpr (CL > 1) return (int)cooperative_groups::this_cluster().block_rank();
#endif
  return 0;
}
template <int CL>
__device__ __forceinline__ float *cl_smem(float *p, int rank) {
  static_assert(CL == 1 || DIA_CLUSTERS, "clusters: sm_90 on, not in the host emulation");
#if DIA_CLUSTERS
  if constexpr (CL > 1) return cooperative_groups::this_cluster().map_shared_rank(p, rank);
#endif
  (void)rank;
  return p;
}

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

  // Where the value at (u, v) of the next frame comes from: this frame's D (*fromD, the index; it
  // was computed here) or the band (*fromB: appended to bu, bv; it is loaded).
  constexpr void next_source(int u, int v, int *fromD, int *fromB, int *bu, int *bv, int *nb) {
    if (inD(u + r, v + r)) {
      *fromD = dIdx(u + r, v + r), *fromB = -1;
    } else {
      *fromD = -1, *fromB = *nb;
      bu[*nb] = u, bv[*nb] = v;
      ++*nb;
    }
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
      next_source(u, v, &cfromC[c], &cfromB[c], bcu, bcv, &NBC);
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
    for (int w = 0; w < NW; w++) next_source(wu[w], wv[w], &fromG[w], &fromB[w], bfu, bfv, &NBF);
  }
};

}  // namespace
