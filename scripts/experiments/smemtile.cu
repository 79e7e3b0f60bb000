// smemtile.cu — a measurement, not part of the solver (#16, docs/performance.md
// "Session 16"): the SM's ceiling for a tower family at orders 4–8 whose state
// lives in shared memory instead of registers, its z column split over the CTAs
// of a thread-block cluster.
//
// Each CTA holds a tile of X × Y columns × ZC cells: p^n and p^{n+1} in two
// shared buffers (with halos of r cells, zero in x and y), p^{n−1} and c²dt² of
// its own cells in registers. A thread owns one column: it loads the column's
// window of p^n (its ZC cells and r above and below) into registers, then
// updates it in runs of four z cells, the x/y neighbours read from shared
// memory as float4 (4·r loads per run), the z neighbours from the window. The
// cells of one column stacked over the CL CTAs of a cluster form one z column
// of ZC·CL cells: after each step a CTA writes its r edge planes into its
// neighbours' halos through distributed shared memory and the cluster
// synchronizes (CL = 1: no cluster, zero z halos, one __syncthreads a step).
// Without a band (NB = 0) there is no global memory in the time loop: this is
// what the SM gives (as session 7's TW_DIAMOND_NOMEM measured the register
// towers); NB > 0 adds a tower's band traffic (below). A real tower would add
// the diamond's geometry (its rows, the frame moving r planes a step) and the
// physics (damping, sources, receivers, free surface). Every configuration is
// checked bitwise against the same steps on the host (solver/tw_stencil.h, a
// zero-padded box per cluster).
//   nvcc -O3 -arch=sm_90 -std=c++17 -fmad=false -ftz=true -o smemtile scripts/experiments/smemtile.cu
//   ./smemtile [steps reps]       (PROF=1: one short launch each, for ncu)
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ck.cuh"
#include "smemupdate.cuh"

namespace cg = cooperative_groups;

// Hopper's asynchronous DSMEM stores: st.async writes into a CTA of the cluster
// and completes bytes on an mbarrier there, so a CTA waits for its two
// neighbours' halo planes with a local poll instead of a cluster-wide barrier
// (MBAR below).
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t mapa(uint32_t a, int rank) {
  uint32_t o;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(o) : "r"(a), "r"(rank));
  return o;
}
__device__ __forceinline__ void st_async4(uint32_t a, float4 v, uint32_t bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 "
      "[%0], {%1, %2, %3, %4}, [%5];" ::"r"(a),
      "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; "
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, "
        "[%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
}

// The column's k = 0 in shared memory: float4-aligned, room for r ≤ 4 below. The column pitch PZ
// (floats): ≥ ZOFF + ZC + r, and 44 mod 32 = 12 keeps the 8 lanes of a quarter-warp (consecutive y)
// on distinct banks for float4 loads.
constexpr int ZOFF = 4;
constexpr int PZ = 44;

template <int r, int X, int Y, int ZC>
struct Geo {
  static constexpr int PY = Y + 2 * r, PX = X + 2 * r;
  static constexpr int BUF = PX * PY * PZ;  // floats per buffer
  static constexpr int NW = ZC + 2 * ZOFF;  // window of a column, registers
  static_assert(ZC % 4 == 0 && ZOFF + ZC + r <= PZ, "column does not fit the pitch");
};

// Global layout of the test data: [cluster][rank][x][y][k], ZC cells a column.
template <int X, int Y, int ZC>
__host__ __device__ inline size_t gidx(int cid, int CL, int rank, int x, int y, int k) {
  return ((((size_t)cid * CL + rank) * X + x) * Y + y) * ZC + k;
}

// The exchange of z halos between the CTAs of a cluster after each step:
//   SYNC: a float4 store into the neighbour's shared memory (through the cluster window), then a
//         cluster-wide barrier (every CTA waits for every other);
//   MBAR: st.async, which completes its bytes on an mbarrier in the receiving CTA; each CTA waits
//         for its own halo (its two neighbours' planes) with a local poll, and a __syncthreads
//         covers its own columns.
// (Measured and left out: scalar remote stores, 0.8 µs a step more than float4; splitting the
// cluster barrier into an arrive after the edge runs and a wait after the interior: no gain.)
enum Xch { NONE, SYNC, MBAR };

// ZT cells of a column per thread (ZT = ZC: one thread a column; ZT = ZC / 2:
// two, more warps). NB > 0: a tower's band traffic besides, for timing: each
// step NB new columns of three arrays (p^n, p^{n−1}, c²dt²: what enters a
// diamond) come from global memory into a staging area by cp.async, and NB
// leaving columns of two arrays go back, through DRAM (slots far beyond the
// L2); a diamond of R = r·DTS takes r/R = 1/DTS of its columns new each step.
// The staged data is not used by the update, so the bitwise check still holds.
constexpr int SLOTS = 16384;  // band slots per array region: 16384 · NB columns, far beyond the L2
template <int r, int X, int Y, int ZC, int ZT, Xch XC, int NB, int NS>
__global__ void __launch_bounds__(X *Y *(ZC / ZT), 1)
    tile_kernel(const float *__restrict__ p0, const float *__restrict__ pm0, const float *__restrict__ c20,
                float *__restrict__ pout, float *__restrict__ pmout, Wt<r> w, int nsteps, int CL,
                const float4 *__restrict__ band_in, float4 *__restrict__ band_out) {
  using G = Geo<r, X, Y, ZC>;
  constexpr int NP = ZC / ZT, NWT = ZT + 2 * ZOFF;
  static_assert(ZC % ZT == 0 && ZT % 4 == 0, "runs of four");
  extern __shared__ float4 sm4[];
  float *sm = reinterpret_cast<float *>(sm4);
  const int t = threadIdx.x % (X * Y), part = threadIdx.x / (X * Y), kb = part * ZT;
  const int y = t % Y,
            x = t / Y;  // lanes along y: consecutive columns, distinct banks
  const int rank = XC != NONE ? (int)cg::this_cluster().block_rank() : 0;
  const int cid = blockIdx.x / CL;
  for (int i = threadIdx.x; i < 2 * G::BUF; i += blockDim.x) sm[i] = 0.0f;
  __syncthreads();
  const int col = ((x + r) * G::PY + (y + r)) * PZ + ZOFF;  // k = 0 of this thread's column
  float pm[ZT], c2[ZT];
#pragma unroll
  for (int k = 0; k < ZT; k++) {
    const size_t g = gidx<X, Y, ZC>(cid, CL, rank, x, y, kb + k);
    sm[col + kb + k] = p0[g];
    pm[k] = pm0[g];
    c2[k] = c20[g];
  }
  // z halos of level n from the neighbouring ranks' cells (zero beyond the
  // cluster's column)
  if (part == 0)
#pragma unroll
    for (int k = 1; k <= r; k++) {
      if (rank > 0) sm[col - k] = p0[gidx<X, Y, ZC>(cid, CL, rank - 1, x, y, ZC - k)];
      if (rank < CL - 1) sm[col + ZC - 1 + k] = p0[gidx<X, Y, ZC>(cid, CL, rank + 1, x, y, k - 1)];
    }
  // MBAR: bars[c] counts the halo bytes that arrive in buffer c (one local
  // arrive a phase); bars[2] the band's bytes (NS = 0)
  unsigned long long *bars = reinterpret_cast<unsigned long long *>(sm + 2 * G::BUF);
  const int nnb = (rank > 0) + (rank < CL - 1);
  const uint32_t halo_bytes = (uint32_t)(nnb * X * Y * 16);
  uint32_t ph = 0;  // bit c: the parity of bars[c]'s next phase
  if ((XC == MBAR || (NB && NS == 0)) && threadIdx.x == 0) {
    for (int c = 0; c < 3; c++)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bars[c])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (XC != NONE) cg::this_cluster().sync();
  int b = 0;
  for (int step = 0; step < nsteps; step++) {
    const float *cur = sm + b * G::BUF + col + kb;
    float *nxt = sm + (b ^ 1) * G::BUF + col + kb;
    if (XC == MBAR) {
      if (step > 0 && nnb) bar_wait(smem_u32(&bars[b]), (ph >> b) & 1),
                           ph ^= 1u << b;  // the halo of cur is in
      if (threadIdx.x == 0 && nnb)         // the bytes the neighbours will send into nxt's halo this step
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bars[b ^ 1])),
                     "r"(halo_bytes)
                     : "memory");
    }
    // the leaving columns of an earlier step's band out, this step's band in (NS stages: NS = 2 keeps
    // each step's loads in flight through the next step)
    if (NB) {
      constexpr int CIN = NB * 3 * ZC / 4, COUT = NB * 2 * ZC / 4;  // float4 chunks
      float4 *stage = reinterpret_cast<float4 *>(sm + 2 * G::BUF + 8) + (NS ? step % NS : 0) * CIN;
      const long long slot = ((long long)step * gridDim.x + blockIdx.x) % SLOTS;
      // NS = 0: the bulk copy engine (TMA), a copy per column (ZC·4 bytes) issued by one warp,
      // completing on bars[2]; the stage is read out before it is refilled
      if (NS == 0) {
        constexpr uint32_t CB = ZC * 4;
        if (threadIdx.x < 32) {
          for (int c = threadIdx.x; c < 2 * NB; c += 32)
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(band_out + slot * COUT +
                                                                                             c * (ZC / 4)),
                         "r"(smem_u32(stage + c * (ZC / 4))), "r"(CB)
                         : "memory");
          asm volatile("cp.async.bulk.commit_group;" ::: "memory");
          asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
          __syncwarp();
          if (threadIdx.x == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bars[2])),
                         "r"(CIN * 16)
                         : "memory");
          __syncwarp();
          for (int c = threadIdx.x; c < 3 * NB; c += 32)
            asm volatile(
                "cp.async.bulk.shared::cluster.global.mbarrier::"
                "complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_u32(stage + c * (ZC / 4))),
                "l"(band_in + slot * CIN + c * (ZC / 4)), "r"(CB), "r"(smem_u32(&bars[2]))
                : "memory");
        }
      } else {
        for (int c = threadIdx.x; c < COUT; c += blockDim.x) band_out[slot * COUT + c] = stage[c];
        for (int c = threadIdx.x; c < CIN; c += blockDim.x)
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(&stage[c])),
                       "l"(&band_in[slot * CIN + c])
                       : "memory");
        asm volatile("cp.async.commit_group;" ::: "memory");
      }
    }
    float win[NWT];  // kb + (−ZOFF … ZT + ZOFF − 1)
#pragma unroll
    for (int q = 0; q < NWT / 4; q++) {
      const float4 v = *reinterpret_cast<const float4 *>(cur - ZOFF + 4 * q);
      win[4 * q] = v.x, win[4 * q + 1] = v.y, win[4 * q + 2] = v.z, win[4 * q + 3] = v.w;
    }
#pragma unroll
    for (int q = 0; q < ZT / 4; q++) {
      float4 xm[r + 1], xp[r + 1], ym[r + 1], yp[r + 1];
#pragma unroll
      for (int m = 1; m <= r; m++) {
        xm[m] = *reinterpret_cast<const float4 *>(cur + 4 * q - m * G::PY * PZ);
        xp[m] = *reinterpret_cast<const float4 *>(cur + 4 * q + m * G::PY * PZ);
        ym[m] = *reinterpret_cast<const float4 *>(cur + 4 * q - m * PZ);
        yp[m] = *reinterpret_cast<const float4 *>(cur + 4 * q + m * PZ);
      }
      const float pmq[4] = {pm[4 * q], pm[4 * q + 1], pm[4 * q + 2], pm[4 * q + 3]};
      const float c2q[4] = {c2[4 * q], c2[4 * q + 1], c2[4 * q + 2], c2[4 * q + 3]};
      const float4 o = update4<r>(win, 4 * q + ZOFF, xm, xp, ym, yp, pmq, c2q, w);
#pragma unroll
      for (int e = 0; e < 4; e++) pm[4 * q + e] = win[4 * q + ZOFF + e];
      *reinterpret_cast<float4 *>(nxt + 4 * q) = o;
      const float out[4] = {o.x, o.y, o.z, o.w};
      // the edge runs into the neighbours' halos of the same buffer: the bottom
      // r cells to rank − 1 (its k = ZC … ZC + r − 1), the top r to rank + 1
      // (its k = −r … −1); one float4 each, which at order < 8 also writes
      // zeros into halo cells that no update reads
      if (XC != NONE && q == 0 && part == 0 && rank > 0) {
        const float4 v = make_float4(out[0], out[1], r > 2 ? out[2] : 0.0f, r > 3 ? out[3] : 0.0f);
        if (XC == MBAR)
          st_async4(mapa(smem_u32(nxt + ZC), rank - 1), v, mapa(smem_u32(&bars[b ^ 1]), rank - 1));
        else
          *reinterpret_cast<float4 *>(cg::this_cluster().map_shared_rank(nxt, rank - 1) + ZC) = v;
      }
      if (XC != NONE && q == ZT / 4 - 1 && part == NP - 1 && rank < CL - 1) {
        const float4 v = make_float4(r > 3 ? out[0] : 0.0f, r > 2 ? out[1] : 0.0f, out[2], out[3]);
        if (XC == MBAR)
          st_async4(mapa(smem_u32(nxt + ZT - 4 - ZC), rank + 1), v, mapa(smem_u32(&bars[b ^ 1]), rank + 1));
        else
          *reinterpret_cast<float4 *>(cg::this_cluster().map_shared_rank(nxt, rank + 1) + ZT - 4 - ZC) = v;
      }
    }
    if (NB && NS == 0) bar_wait(smem_u32(&bars[2]), step & 1);
    if (NB && NS == 1) asm volatile("cp.async.wait_group 0;" ::: "memory");
    if (NB && NS == 2) asm volatile("cp.async.wait_group 1;" ::: "memory");
    if (XC == SYNC)
      cg::this_cluster().sync();
    else
      __syncthreads();  // MBAR: own columns complete; the halo is waited for at the next step
    b ^= 1;
  }
  if (XC == MBAR) {  // the last step's halo must land before any CTA of the cluster exits
    if (nsteps > 0 && nnb) bar_wait(smem_u32(&bars[b]), (ph >> b) & 1);
    cg::this_cluster().sync();
  }
  const float *cur = sm + b * G::BUF + col + kb;
#pragma unroll
  for (int k = 0; k < ZT; k++) {
    const size_t g = gidx<X, Y, ZC>(cid, CL, rank, x, y, kb + k);
    pout[g] = cur[k];
    pmout[g] = pm[k];
  }
}

// The host reference: a box of X × Y × (ZC·CL) cells per cluster, zero outside,
// the same update.
template <int r, int X, int Y, int ZC>
static void host_steps(std::vector<float> &p, std::vector<float> &pm, const std::vector<float> &c2, int ncl, int CL,
                       const tw_stencil &st, int nsteps) {
  const int NZ = ZC * CL, PX = X + 2 * r, PY = Y + 2 * r, PZh = NZ + 2 * r;
  std::vector<float> a((size_t)PX * PY * PZh), b2(a.size());
  auto at = [&](int x, int y, int z) { return ((size_t)(x + r) * PY + (y + r)) * PZh + (z + r); };
  auto gi = [&](int cid, int x, int y, int z) { return gidx<X, Y, ZC>(cid, CL, z / ZC, x, y, z % ZC); };
  for (int cid = 0; cid < ncl; cid++) {
    std::fill(a.begin(), a.end(), 0.0f);
    for (int x = 0; x < X; x++)
      for (int y = 0; y < Y; y++)
        for (int z = 0; z < NZ; z++) a[at(x, y, z)] = p[gi(cid, x, y, z)];
    for (int s = 0; s < nsteps; s++) {
      std::fill(b2.begin(), b2.end(), 0.0f);
      for (int x = 0; x < X; x++)
        for (int y = 0; y < Y; y++)
          for (int z = 0; z < NZ; z++) {
            const float *c = &a[at(x, y, z)];
            const float lap = tw_laplacian(r, &st, c, (long)PY * PZh, c, PZh, c, 1);
            const size_t g = gi(cid, x, y, z);
            b2[at(x, y, z)] = tw_cell_update_undamped(*c, pm[g], lap, c2[g]);
            pm[g] = *c;
          }
      std::swap(a, b2);
    }
    for (int x = 0; x < X; x++)
      for (int y = 0; y < Y; y++)
        for (int z = 0; z < NZ; z++) p[gi(cid, x, y, z)] = a[at(x, y, z)];
  }
}

template <int r, int X, int Y, int ZC, int ZT, Xch XC, int NB = 0, int NS = 1>
static void run(int CL, int nsteps, int reps, const cudaDeviceProp &prop) {
  using G = Geo<r, X, Y, ZC>;
  const size_t stage = (size_t)(NS ? NS : 1) * NB * 3 * ZC * sizeof(float);
  const size_t smem = 2 * (size_t)G::BUF * sizeof(float) + 32 + stage;  // + mbarriers + the band
  if (smem > (size_t)prop.sharedMemPerBlockOptin) {
    printf(
        "order %d tile %dx%dx%d band %d: %zu bytes of shared memory do not "
        "fit\n",
        2 * r, X, Y, ZC, NB, smem);
    return;
  }
  const bool clu = XC != NONE;
  auto kern = tile_kernel<r, X, Y, ZC, ZT, XC, NB, NS>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  if (CL > 8) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CL, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(X * Y * (ZC / ZT));
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int ncl = prop.multiProcessorCount / CL;
  cfg.gridDim = dim3(ncl * CL);
  if (clu) {
    int active = 0;
    CK(cudaOccupancyMaxActiveClusters(&active, kern, &cfg));
    if (active <= 0) {
      printf("order %d tile %dx%dx%d cluster %2d: does not fit\n", 2 * r, X, Y, ZC, CL);
      return;
    }
    ncl = active;
    cfg.gridDim = dim3(ncl * CL);
  }
  const size_t n = (size_t)ncl * CL * X * Y * ZC;
  std::vector<float> hp(n), hpm(n), hc2(n);
  srand(12345 + 7 * r + CL);
  for (size_t i = 0; i < n; i++) {
    hp[i] = (float)rand() / RAND_MAX - 0.5f;
    hpm[i] = (float)rand() / RAND_MAX - 0.5f;
    hc2[i] = 0.05f + 0.1f * (float)rand() / RAND_MAX;
  }
  tw_stencil st;
  Wt<r> w;
  test_weights(w, st);
  float *dp, *dpm, *dc2, *op, *opm;
  for (float **a : {&dp, &dpm, &dc2, &op, &opm}) CK(cudaMalloc(a, n * 4));
  float4 *bin = nullptr, *bout = nullptr;  // the band's slots (NB > 0)
  if (NB) {
    CK(cudaMalloc(&bin, (size_t)SLOTS * NB * 3 * ZC * 4));
    CK(cudaMalloc(&bout, (size_t)SLOTS * NB * 2 * ZC * 4));
    CK(cudaMemset(bin, 0, (size_t)SLOTS * NB * 3 * ZC * 4));
  }
  CK(cudaMemcpy(dp, hp.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dpm, hpm.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dc2, hc2.data(), n * 4, cudaMemcpyHostToDevice));
  // bitwise check: 7 steps against the host
  const int chk = 7;
  CK(cudaLaunchKernelEx(&cfg, kern, (const float *)dp, (const float *)dpm, (const float *)dc2, op, opm, w, chk, CL,
                        (const float4 *)bin, bout));
  CK(cudaDeviceSynchronize());
  std::vector<float> gp(n), gpm(n);
  CK(cudaMemcpy(gp.data(), op, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(gpm.data(), opm, n * 4, cudaMemcpyDeviceToHost));
  const int ncheck = ncl < 2 ? ncl : 2;  // the host checks the first clusters
  std::vector<float> rp(hp), rpm(hpm);
  host_steps<r, X, Y, ZC>(rp, rpm, hc2, ncheck, CL, st, chk);
  const size_t nc = (size_t)ncheck * CL * X * Y * ZC;
  size_t bad = 0;
  for (size_t i = 0; i < nc; i++) bad += memcmp(&rp[i], &gp[i], 4) != 0 || memcmp(&rpm[i], &gpm[i], 4) != 0;
  if (getenv("PROF")) nsteps = 50, reps = 1;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int rep = 0; rep < reps; rep++) {
    CK(cudaEventRecord(e0));
    CK(cudaLaunchKernelEx(&cfg, kern, (const float *)dp, (const float *)dpm, (const float *)dc2, op, opm, w, nsteps, CL,
                          (const float4 *)bin, bout));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms < best) best = ms;
  }
  const double rate = (double)n * nsteps / (best * 1e-3) / 1e9;
  const char *band = !NB ? "" : NS == 0 ? ", bulk copies" : NS == 1 ? ", cp.async" : ", cp.async, 2 stages";
  const char *xch = XC == SYNC ? " (float4 + cluster barrier)" : XC == MBAR ? " (st.async + mbarrier)" : "";
  printf(
      "order %d tile %dx%dx%d, %2d cells a thread, band %.1f B/update%s, "
      "cluster %2d%s: %3d CTAs (%d SMs), "
      "%zu KB smem, %.2f us/step, %7.1f Gcell/s (%.2f per SM), check %s "
      "(%zu cells, %d steps)\n",
      2 * r, X, Y, ZC, ZT, 20.0 * NB / (X * Y), band, CL, xch, ncl * CL, prop.multiProcessorCount, smem >> 10,
      best * 1e3 / nsteps, rate, rate / (ncl * CL), bad ? "FAILED" : "bitwise", nc, chk);
  if (bad) printf("  %zu of %zu cells differ\n", bad, nc);
  for (float *a : {dp, dpm, dc2, op, opm}) CK(cudaFree(a));
  CK(cudaFree(bin));
  CK(cudaFree(bout));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

int main(int argc, char **argv) {
  const int nsteps = argc > 1 ? atoi(argv[1]) : 2000, reps = argc > 2 ? atoi(argv[2]) : 3;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  printf("%s, %d SMs, %d MHz\n", prop.name, prop.multiProcessorCount, khz / 1000);
  // 1. the tile alone (one CTA a column: zero z halos), one or two threads a column, two shapes
  run<4, 16, 16, 32, 32, NONE>(1, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, NONE>(1, nsteps, reps, prop);
  run<4, 16, 16, 32, 16, NONE>(1, nsteps, reps, prop);
  run<2, 16, 16, 32, 16, NONE>(1, nsteps, reps, prop);
  run<4, 8, 32, 32, 32, NONE>(1, nsteps, reps, prop);
  // 2. the z column over a cluster: float4 stores and a cluster barrier, or st.async and mbarriers
  for (int CL : {2, 8}) {
    run<4, 16, 16, 32, 32, SYNC>(CL, nsteps, reps, prop);
    run<2, 16, 16, 32, 32, SYNC>(CL, nsteps, reps, prop);
  }
  for (int CL : {2, 4, 8, 16}) {
    run<4, 16, 16, 32, 32, MBAR>(CL, nsteps, reps, prop);
    run<2, 16, 16, 32, 32, MBAR>(CL, nsteps, reps, prop);
    run<4, 16, 16, 32, 16, MBAR>(CL, nsteps, reps, prop);
    run<2, 16, 16, 32, 16, MBAR>(CL, nsteps, reps, prop);
  }
  // 3. with a tower's band: 1/4 of the columns new each step at order 8 (DTS 4), 1/6 and 1/4 at order 4;
  //    by cp.async (one stage or two), or by bulk copies of a column each
  // 4), 1/6 and 1/4 at
  //    order 4; by cp.async (one stage or two), or by bulk copies of a column
  //    each
  run<4, 16, 16, 32, 32, NONE, 64, 1>(1, nsteps, reps, prop);
  run<4, 16, 16, 32, 32, MBAR, 64, 1>(2, nsteps, reps, prop);
  run<4, 16, 16, 32, 32, MBAR, 64, 1>(8, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, NONE, 43, 1>(1, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, NONE, 64, 1>(1, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, MBAR, 43, 1>(8, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, MBAR, 64, 1>(2, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, MBAR, 64, 1>(8, nsteps, reps, prop);
  run<4, 16, 12, 32, 32, NONE>(1, nsteps, reps,
                               prop);  // room for two stages at order 8
  run<4, 16, 12, 32, 32, NONE, 48, 1>(1, nsteps, reps, prop);
  run<4, 16, 12, 32, 32, NONE, 48, 2>(1, nsteps, reps, prop);
  run<4, 16, 12, 32, 32, MBAR, 48, 1>(8, nsteps, reps, prop);
  run<4, 16, 12, 32, 32, MBAR, 48, 2>(8, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, NONE, 64, 2>(1, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, MBAR, 64, 2>(8, nsteps, reps, prop);
  run<4, 16, 16, 32, 32, NONE, 64, 0>(1, nsteps, reps, prop);
  run<4, 16, 16, 32, 32, MBAR, 64, 0>(8, nsteps, reps, prop);
  run<2, 16, 16, 32, 32, MBAR, 43, 0>(8, nsteps, reps, prop);
  return 0;
}
