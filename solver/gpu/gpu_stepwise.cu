// gpu_stepwise.cu — kernel "gpu-stepwise": one time step per launch, the classic 2.5D design
// (Micikevicius): 2D thread blocks over (y, z) with z fastest, the slowest axis x looped inside the
// block, the x-neighbours of each cell in a register queue, the (y, z) plane tile with its halo in
// shared memory. Two thread layouts: zrun_kernel (gpu_stepwise_zrun.cuh, the default: four z
// cells per thread) and stepwise_kernel below (one z cell per thread in NY rows: one warp = 32
// consecutive z cells of one row, 128 B coalesced).
//
// What must hold (docs/design.md §1):
//  * every cell is computed with tw_laplacian / tw_damping_xy / tw_cell_update of tw_stencil.h, with
//    the same values in the same order as every other kernel: x-neighbours come from the register
//    queue, y- and z-neighbours from shared memory; outside the padded grid they are 0, above a
//    free surface they are the image −p[−k] (put into the z halo, as the CPU puts it into its
//    ghost cells);
//  * source cells add S^n inside their own update: the main kernel updates every cell without S,
//    then tw_dev_inject_kernel recomputes the (few) source cells with S from p^n, which the step
//    leaves untouched, and the saved p^{n−1} (gpu_common.cuh);
//  * receivers are gathered on the device at sample levels and copied to the host once per
//    advance call; nothing crosses to the host per step.
//
// Speed (docs/design.md §6): 16 B per update move through DRAM (read p^n, p^{n−1}, c²dt², write p^{n+1});
// halo re-reads should hit L2. One __syncthreads per x plane: the shared tile is double-buffered.
// Loads for plane x + D are issued before the barrier of plane x (software prefetch, D = 1 or 2
// iterations ahead, with the loop unrolled by 2 so that the prefetch registers never move).
// Variants (rows per thread, prefetch distance, occupancy, async halos) are compiled side by side, timed
// against each other by `torrewave bench` ("gpu-stepwise@VARIANT"); each order has its default.
#include <cuda_pipeline.h>
#include <algorithm>
#include <cmath>
#include <functional>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "gpu_common.cuh"
#include "gpu_window.cuh"

namespace {

constexpr int BZ = 32;  // z cells per tile: one warp

// Values for one x plane, loaded D iterations before they are used.
template <int NY>
struct Pre {
  float lead[NY];  // p^n at plane x + R: enters the register queue at plane x
  float pm[NY];    // p^{n−1} at plane x
  float c2[NY];    // c²dt² at plane x
  float hz[NY];    // the z-halo value of each of the thread's rows (lanes tx < 2R)
  float hyt, hyb;  // the y-halo rows above and below the tile (threads ty < R)
  float ax;        // damping a of plane x
};

// Which (tile, x-chunk) each block of one launch updates (planes [xlo, xlo + nx); tiles of BY rows
// × 32 z cells, tile t at z-tile t % tz, y-tile t / tz). Two rounds, each chunk-major (consecutive
// blocks: neighbouring tiles at the same x, so y-halo rows are a neighbour's fresh loads, in L2,
// and DRAM streams whole planes): round A, tiles [0, ta) in chunks of ca planes, ta a multiple of
// the blocks resident at once (whole waves); round B, the other tiles in chunks of cb, as many as
// fill the last waves best. Blocks start in index order as slots free up, so faster SMs take more
// and no block runs long enough to drift far out of phase. Every (tile, plane) is covered once.
struct sweep_split {
  int xlo, nx, tz, ntile;
  int ta, ca, na;  // round A: tiles [0, ta), na chunks of ca planes
  int cb, nb;      // round B: tiles [ta, ntile), nb chunks of cb planes
  long long blocks;
};

__device__ __forceinline__ void split_block(const sweep_split &sp, int b, int *t, int *xb, int *xe) {
  const int a = sp.ta * sp.na;  // < 2^31: create() bounds tiles × 64 chunks
  const bool A = b < a;
  const int rest = A ? sp.ta : sp.ntile - sp.ta, bb = A ? b : b - a, c = bb / rest, w = A ? sp.ca : sp.cb;
  *t = (A ? 0 : sp.ta) + (bb - c * rest);
  *xb = sp.xlo + c * w;
  *xe = sp.xlo + min((c + 1) * w, sp.nx);
}

// Device rows are padded to a multiple of ROW_ROUND (tw_dev_layout_make): tiles of BY | ROW_ROUND
// rows, with their y halos (≤ TW_GPU_YPAD), never read past the padded plane.
constexpr int ROW_ROUND = 32;

#include "gpu_stepwise_zrun.cuh"

// One launch advances its planes one step: p^{n+1} = update(p^n, p^{n−1}) into pio (which holds
// p^{n−1} on entry). Block (TY × 32 threads) = a tile of BY = TY·NY rows × 32 z cells; each
// thread owns NY cells (rows ty, ty + TY, ...) in every x plane of its chunk [xb, xe) (sweep_split).
// AH (async halo): the y and z halos of plane x + 1 go straight from global to the other shared
// buffer with cp.async (no registers held for them), issued after plane x's barrier; the lanes
// of the free-surface image negate their own copies after waiting for them. Halo cells outside
// the grid are zeroed once: no one else ever writes them.
template <int R, int TY, int NY, int D, int MINB, bool AH>
__global__ void __launch_bounds__(BZ *TY, MINB)
    stepwise_kernel(const float *__restrict__ pn, float *__restrict__ pio, const float *__restrict__ c2,
                    const float *__restrict__ ax, const float *__restrict__ ay, const float *__restrict__ az,
                    const tw_dev_layout L, const __grid_constant__ sweep_split sp,
                    const __grid_constant__ tw_stencil st) {
  constexpr int BY = TY * NY;     // rows per tile
  constexpr int SW = BZ + 2 * R;  // shared row: R halo + 32 + R halo
  constexpr int SH = BY + 2 * R;
  static_assert(TY >= R, "the y halo is loaded by threads ty < R");
  static_assert(BZ >= 2 * R, "the z halo is loaded by lanes tx < 2R");
  __shared__ float sm[2][SH][SW];

  const int tx = threadIdx.x, ty = threadIdx.y;
  int tile, xb, xe;  // planes [xb, xe) of the grid, or of a window's slab
  split_block(sp, (int)blockIdx.x, &tile, &xb, &xe);
  const int k0 = (tile % sp.tz) * BZ, k = k0 + tx;
  const int j0 = (tile / sp.tz) * BY;
  const int N0 = L.N[0], N1 = L.N[1], N2 = L.N[2];
  const long long sx = L.sx;

  // Offsets inside an x plane are 32-bit (create() checks that a plane has < 2^31 floats); every
  // offset of the thread derives from o0 and the row pitch, which keeps the register count down.
  const int Nzp = L.Nzp;
  const int o0 = (j0 + ty) * Nzp + k;  // row q is at o0 + q·TY·Nzp
  // Rows beyond N1 and cells beyond N2 read zero padding and are never written.
  bool wr[NY];
  float ayq[NY];
#pragma unroll
  for (int q = 0; q < NY; q++) {
    const int j = j0 + ty + q * TY;
    wr[q] = j < N1 && k < N2;
    ayq[q] = j < N1 ? ay[j] : 0.0f;
  }
  const float azk = k < N2 ? az[k] : 0.0f;

  // z halo: lanes 0..R−1 hold cells k0 − R + tx (left), lanes R..2R−1 cells k0 + 32 + tx − R.
  // mode 0: zero (outside the grid), 1: copy, 2: free-surface image −p[−k].
  const int kk = tx < R ? k0 - R + tx : k0 + BZ + tx - R;
  int zmode = 0, ksrc = 0;
  if (tx < 2 * R) {
    if (kk < 0) {
      if (L.fs && -kk < N2) zmode = 2, ksrc = -kk;
    } else if (kk < N2) {
      zmode = 1, ksrc = kk;
    }
  }
  const int zcol = tx < R ? tx : BZ + tx;  // = kk − k0 + R
  const int dz = ksrc - k;                 // z-halo source of row q: o0 + q·TY·Nzp + dz

  // y halo: rows j0 − R + ty above (o0 − R·Nzp), j0 + BY + ty below (o0 + BY·Nzp); they exist in
  // memory (TW_GPU_YPAD zero rows, N1 rounded up to 32 ≥ BY), so no bounds check.
  const bool yh = ty < R;

  auto load = [&](int x, Pre<NY> &P) {
    const float *pnx = pn + (long long)x * sx;
    const float *pmx = pio + (long long)x * sx;
    const float *c2x = c2 + (long long)x * sx;
    const bool lead_in = x + R < N0;  // planes beyond the grid are zero
    const float *pnl = pnx + (long long)R * sx;
#pragma unroll
    for (int q = 0; q < NY; q++) {
      const int oq = o0 + q * TY * Nzp;
      P.lead[q] = lead_in ? pnl[oq] : 0.0f;
      P.pm[q] = pmx[oq];
      P.c2[q] = c2x[oq];
      if (!AH) {
        const float v = zmode ? pnx[oq + dz] : 0.0f;
        P.hz[q] = zmode == 2 ? -v : v;
      }
    }
    if (!AH && yh) {
      P.hyt = pnx[o0 - R * Nzp];
      P.hyb = pnx[o0 + BY * Nzp];
    }
    P.ax = ax[x];
  };

  // AH: the halos of plane x into shared buffer b, asynchronously (one commit group per plane).
  auto halo_async = [&](int x, int b) {
    const float *pnx = pn + (long long)x * sx;
#pragma unroll
    for (int q = 0; q < NY; q++)
      if (zmode) __pipeline_memcpy_async(&sm[b][R + ty + q * TY][zcol], pnx + (o0 + q * TY * Nzp + dz), 4);
    if (yh) {
      __pipeline_memcpy_async(&sm[b][ty][R + tx], pnx + (o0 - R * Nzp), 4);
      __pipeline_memcpy_async(&sm[b][R + BY + ty][R + tx], pnx + (o0 + BY * Nzp), 4);
    }
    __pipeline_commit();
  };

  // Register queue: qv[q][m] = p^n at plane x − R + m of row q.
  float qv[NY][2 * R + 1];
#pragma unroll
  for (int m = 0; m < 2 * R; m++) {
    const int xp = xb - R + m;
    const bool in = xp >= 0 && xp < N0;
#pragma unroll
    for (int q = 0; q < NY; q++) qv[q][m] = in ? pn[(long long)xp * sx + o0 + q * TY * Nzp] : 0.0f;
  }
  Pre<NY> P[D];
#pragma unroll
  for (int d = 0; d < D; d++)
    if (xb + d < xe) load(xb + d, P[d]);
  if (AH) {
    if (tx < 2 * R && zmode == 0)
#pragma unroll
      for (int q = 0; q < NY; q++) sm[0][R + ty + q * TY][zcol] = sm[1][R + ty + q * TY][zcol] = 0.0f;
    if (xb < xe) halo_async(xb, 0);
  }

  auto body = [&](int x, Pre<NY> &Q, int buf) {
    float pmc[NY], c2c[NY];
#pragma unroll
    for (int q = 0; q < NY; q++) {
      qv[q][2 * R] = Q.lead[q];
      pmc[q] = Q.pm[q];
      c2c[q] = Q.c2[q];
      sm[buf][R + ty + q * TY][R + tx] = qv[q][R];
      if (!AH && tx < 2 * R) sm[buf][R + ty + q * TY][zcol] = Q.hz[q];
    }
    if (!AH && yh) {
      sm[buf][ty][R + tx] = Q.hyt;
      sm[buf][R + BY + ty][R + tx] = Q.hyb;
    }
    if (AH) {
      __pipeline_wait_prior(0);  // this thread's halo copies for plane x have landed
      if (zmode == 2)
#pragma unroll
        for (int q = 0; q < NY; q++) sm[buf][R + ty + q * TY][zcol] = -sm[buf][R + ty + q * TY][zcol];
    }
    const float axv = Q.ax;
    if (x + D < xe) load(x + D, Q);  // prefetch: in flight across the barrier and the update
    __syncthreads();
    // Buffer buf ^ 1 was last read by plane x − 1, which every thread has finished (barrier above).
    if (AH && x + 1 < xe) halo_async(x + 1, buf ^ 1);
    float *outx = pio + (long long)x * sx;
#pragma unroll
    for (int q = 0; q < NY; q++) {
      const float *s0 = &sm[buf][R + ty + q * TY][R + tx];
      const float lap = tw_laplacian(R, &st, &qv[q][R], 1, s0, SW, s0, 1);
      const float v = tw_cell_update(qv[q][R], pmc[q], lap, c2c[q], tw_damping_xy(axv, ayq[q]), azk);
      if (wr[q]) outx[o0 + q * TY * Nzp] = v;
    }
#pragma unroll
    for (int q = 0; q < NY; q++)
#pragma unroll
      for (int m = 0; m < 2 * R; m++) qv[q][m] = qv[q][m + 1];
  };

  // Unrolled by 2: shared buffer and prefetch set are compile-time per half (buffer x & 1 of the
  // chunk; set (x − xb) mod D). One barrier per plane suffices: a thread writes buffer b again only
  // after the next plane's barrier, which every reader of b has passed.
  int x = xb;
  for (; x + 1 < xe; x += 2) {
    body(x, P[0], 0);
    body(x + 1, P[1 % D], 1);
  }
  if (x < xe) body(x, P[0], 0);
}

// Bench only: small random values in every cell of the grid (padding stays zero), so that timings
// never run on zeros. A hash of (cell e = (i·N1 + j)·N2 + k, seed): reproducible, the same on the
// device (in core) and on the host (the window's host fields), so both runs time the same data.
__host__ __device__ inline float bench_value(unsigned long long e, unsigned long long seed) {
  unsigned long long z = e + seed * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return 1e-3f * ((float)(z >> 40) * (1.0f / 16777216.0f) - 0.5f);
}

__global__ void randomize_kernel(float *p, tw_dev_layout L, unsigned long long seed) {
  const long long total = (long long)L.N[0] * L.N[1] * L.N[2];
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const int k = (int)(e % L.N[2]);
    const long long ij = e / L.N[2];
    const int j = (int)(ij % L.N[1]), i = (int)(ij / L.N[1]);
    p[tw_dev_off(L, i, j, k)] = bench_value((unsigned long long)e, seed);
  }
}

// save[s] = p at injection cell s (after randomizing: the saved p^{−1} of the source cells).
__global__ void gather_inj_kernel(const float *p, tw_dev_layout L, const int *inj, int ninj, float *save) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < ninj) save[s] = p[tw_dev_off(L, inj[3 * s], inj[3 * s + 1], inj[3 * s + 2])];
}

typedef void (*kernel_fn)(const float *, float *, const float *, const float *, const float *, const float *,
                          tw_dev_layout, sweep_split, tw_stencil);

struct variant {
  const char *name;
  int tx, ty;  // block: threads along z, along y
  int bz, by;  // tile: z cells, rows
  kernel_fn fn[TW_GPU_RMAX];  // radius 1..4
};

#define TW_SW_VARIANT(NAME, TY, NY, D, MINB, AH)                                                      \
  {                                                                                                 \
    NAME, BZ, TY, BZ, (TY) * (NY), {                                                                \
      stepwise_kernel<1, TY, NY, D, MINB, AH>, stepwise_kernel<2, TY, NY, D, MINB, AH>,             \
          stepwise_kernel<3, TY, NY, D, MINB, AH>, stepwise_kernel<4, TY, NY, D, MINB, AH>          \
    }                                                                                               \
  }
// zrun_kernel (gpu_stepwise_zrun.cuh): ZT threads × 4 z cells along z, TY rows.
#define TW_ZR_VARIANT(NAME, ZT, TY, MINB)                                                              \
  {                                                                                                 \
    NAME, ZT, TY, 4 * (ZT), TY, {                                                                   \
      zrun_kernel<1, ZT, TY, MINB>, zrun_kernel<2, ZT, TY, MINB>, zrun_kernel<3, ZT, TY, MINB>,     \
          zrun_kernel<4, ZT, TY, MINB>                                                              \
    }                                                                                               \
  }

// Names: tTY = threads in y, nNY = rows per thread, dD = prefetch distance (planes), bMINB =
// blocks per SM the register budget is set for (65536 / (threads·MINB)), a = async halos (AH);
// zZT·yTY: zrun_kernel, ZT threads of 4 z cells each along z, TY rows.
// Measured on an H200 in one run, 1024 x 1024 x 512 (2 GiB per level), 20 steps x 3, Gcell/s
// (copy ceiling 261; docs/performance.md, session 11):   order 2     4      8
//   z16y8b4 (default)                                      257.9  232.5  201.3   (<= 128 registers; 4 B spill at 8)
//   z16y16b2                                               257.6  212.7  197.7
//   z32y8b2                                                258.0  212.5  195.4
//   z8y16b4                                                243.1  220.4  196.3
//   t4n4d1b4a (the default before)                         236.8  224.1  195.0   (80-118 registers)
// Earlier (% of the copy ceiling):   order 2   4     8
//   t4n4d1b4a                           88.0  84.3  75.1
//   t8n4d1b2a                           88.6  77.5  72.0
//   t8n2d1b4a                           81.2  79.4  65.6
//   t16n2d1b2a, t8n2d1b4, t16n2d1b2, t8n2d1b3a, t8n2d2b3a, t8n1d1b4a, t16n1d1b2, t8n4d2b2a: all
//   below these at every order, removed.
// Four z cells per thread pay most: each y and z neighbour load brings four cells (LDS.128), and
// a warp's global accesses are 16-byte (88 instead of 104 thread instructions per update at
// order 8). At order 8 the L2 runs at 91 % of its throughput (y halos of 2r rows per 8-row tile
// come through it): larger tiles or a second plane of prefetch did not pay there. Among the
// one-cell-per-thread variants, four rows per thread paid most; halos by cp.async everywhere.
const variant variants[] = {
    TW_ZR_VARIANT("z16y8b4", 16, 8, 4),             TW_ZR_VARIANT("z16y16b2", 16, 16, 2),
    TW_ZR_VARIANT("z32y8b2", 32, 8, 2),             TW_ZR_VARIANT("z8y16b4", 8, 16, 4),
    TW_SW_VARIANT("t4n4d1b4a", 4, 4, 1, 4, true),   TW_SW_VARIANT("t8n4d1b2a", 8, 4, 1, 2, true),
    TW_SW_VARIANT("t8n2d1b4a", 8, 2, 1, 4, true),
};
constexpr int NVARIANT = (int)(sizeof variants / sizeof variants[0]);
// The default variant: of the two zrun tiles, the one with the higher rate per padded z cell. A z
// pitch Nzp (a multiple of 32) that is not a multiple of the tile's 64 cells leaves idle threads in
// the last z tile (Nz 268: 10 %, Nz 96: 25 %), where the 32-cell tile is faster. rel = the rate
// of each on a grid both fill (1024 x 1024 x 512), per radius; on an H200 (docs/performance.md,
// session 11) the rule picked the faster one on 1024² x {300, 512, 544}, 3424 x 1024 x 268 and
// 2048² x 96 at orders 2 and 8, or one within 1 % (order 2, Nz 268).
struct zdefault {
  const char *name;
  double rel[TW_GPU_RMAX];
};
const zdefault zdefaults[] = {{"z16y8b4", {1.0, 1.0, 1.0, 1.0}}, {"z8y16b4", {0.94, 0.95, 0.95, 0.975}}};

const variant *variant_named(const char *name) {
  for (int i = 0; i < NVARIANT; i++)
    if (strcmp(variants[i].name, name) == 0) return &variants[i];
  return NULL;
}

const char *default_variant(int r, int Nzp) {
  const char *best = zdefaults[0].name;
  double best_rate = 0;
  for (const zdefault &d : zdefaults) {
    const int bz = variant_named(d.name)->bz;
    const long cover = (long)(Nzp + bz - 1) / bz * bz;  // z cells the tiles span
    const double rate = d.rel[(r >= 1 && r <= TW_GPU_RMAX ? r : 1) - 1] * Nzp / (double)cover;
    if (rate > best_rate * (1 + 1e-9)) best = d.name, best_rate = rate;
  }
  return best;
}

struct gs_state {
  const tw_problem *pb;
  const variant *var;
  kernel_fn fn;
  tw_dev_layout L;
  cudaStream_t stream;
  tw_gpu_samples samples;  // receiver samples, to the host while later steps compute
  float *alloc[3];     // p0, p1, c2 allocations
  size_t cells;        // floats per allocation (padding included)
  float *p[2], *c2;    // at cell (0, 0, 0)
  float *ax, *ay, *az;
  // the shot tables (gs_tables): grow-only device buffers, capacities in elements
  int *inj;
  float *S, *save;
  int *tap;
  size_t inj_cap, S_cap, save_cap, tap_cap;
  float *taps;
  size_t taps_cap;     // floats
  float *stage;
  size_t stage_cap;    // floats
  unsigned long long *nf;  // the non-finite scan's result (tw_gpu_find_nonfinite)
  int sms, blocks_per_sm, tz, ntile;
  long slots;           // blocks resident at once (TW_STEPWISE_SLOTS overrides: tests of the split)
  sweep_split in_core;  // the whole grid's launch
  dim3 block;
  long level;
  int dirty;            // the fields changed since creation or the last reset (gs_reset zeroes them)
  // sliding window (docs/design.md §3) when the grid is not resident: win != NULL. The sweep: blocks of nt
  // steps; stage s at step τ is one launch over the slab of SR planes [SR·s + τ·r, + SR), stages in
  // decreasing s (tw_window_plan_slabs; test_window proves the order against a time-level shadow).
  tw_gpu_window *win;
  int nt, SR;
  sweep_split slab;     // a full slab's launch (the edge slabs compute theirs)
  // Consecutive stages overlap on two streams (stream, stream2): stage s − 1's step τ waits only for
  // stage s's step τ − 1 (step_ev[g % 2][τ − 1] of the group before), so one stage's launch tails
  // fill with the other's blocks (slab_group_run).
  cudaStream_t stream2;
  cudaEvent_t *step_ev[2];  // [nt] each (host arrays: gs_state is calloc'ed)
  int nstep_ev;
  int *inj_at, *tap_at;  // host: first injection cell / tap with x ≥ i, i = 0 … N0
  double win_s;
  char win_why[256];
};

void gs_free(gs_state *s) {
  if (!s) return;
  // Errors are ignored here: this runs on error paths too, where the context may be broken.
  for (int a = 0; a < 3; a++) cudaFree(s->alloc[a]);
  cudaFree(s->ax), cudaFree(s->ay), cudaFree(s->az);
  cudaFree(s->inj), cudaFree(s->S), cudaFree(s->save);
  cudaFree(s->tap), cudaFree(s->taps), cudaFree(s->stage), cudaFree(s->nf);
  if (s->stream) cudaStreamDestroy(s->stream);
  if (s->stream2) cudaStreamDestroy(s->stream2);
  for (int a = 0; a < 2; a++) {
    for (int i = 0; s->step_ev[a] && i < s->nstep_ev; i++)
      if (s->step_ev[a][i]) cudaEventDestroy(s->step_ev[a][i]);
    free(s->step_ev[a]);
  }
  tw_gpu_samples_free(&s->samples);
  tw_gpu_window_destroy(s->win);
  free(s->inj_at), free(s->tap_at);
  cudaGetLastError();
  free(s);
}

// Host-to-device copy of n elements into a grow-only buffer (tw_dev_ensure), on `stream`.
template <typename T>
tw_status dev_put(T **dst, size_t *cap, const T *src, size_t n, const char *what, cudaStream_t stream, tw_error *err) {
  tw_status st = tw_dev_ensure(dst, cap, n, what, err);
  if (!st && n) TW_CUDA_TRY(err, cudaMemcpyAsync(*dst, src, n * sizeof(T), cudaMemcpyHostToDevice, stream));
  return st;
}

// The shot tables on the device and their per-plane index on the host (sources and taps are sorted
// by cell, so those of the planes [xa, xb) are one index range): the sources' cells, S and the saved
// p^{n−1} (0: the medium starts at rest) with TW_RESET_SOURCES, the receivers' tap cells with
// TW_RESET_RECEIVERS. Returns when the copies are done (the host tables change with the next shot).
tw_status gs_tables(gs_state *s, unsigned what, tw_error *err) {
  const tw_problem *pb = s->pb;
  const int N0 = pb->g.N[0];
  const size_t ni = (size_t)pb->ninj, nt = (size_t)pb->ntap;
  tw_status st = TW_OK;
  if (what & TW_RESET_SOURCES) {
    if ((st = dev_put(&s->inj, &s->inj_cap, ni ? &pb->inj[0][0] : (const int *)NULL, 3 * ni, "source cells",
                      s->stream, err)))
      return st;
    if ((st = dev_put(&s->S, &s->S_cap, (const float *)pb->S, ni * (size_t)pb->steps, "source terms", s->stream, err)))
      return st;
    if ((st = tw_dev_ensure(&s->save, &s->save_cap, ni, "source cells' level n - 1", err))) return st;
    if (ni) TW_CUDA_TRY(err, cudaMemsetAsync(s->save, 0, ni * sizeof(float), s->stream));
    for (int i = 0, c = 0; i <= N0; i++) {
      while (c < pb->ninj && pb->inj[c][0] < i) c++;
      s->inj_at[i] = c;
    }
  }
  if (what & TW_RESET_RECEIVERS) {
    if ((st = dev_put(&s->tap, &s->tap_cap, nt ? &pb->tap[0][0] : (const int *)NULL, 3 * nt, "receiver taps",
                      s->stream, err)))
      return st;
    for (long i = 0, t = 0; i <= N0; i++) {
      while (t < pb->ntap && pb->tap[t][0] < i) t++;
      s->tap_at[i] = (int)t;
    }
  }
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  return TW_OK;
}


// Chunks of n planes out of nx, at most 64 of them, that fill `items`-tile rounds into the fewest
// wave-planes: cost ∝ waves × (planes per chunk + R/2 for the queue warm-up, which reads 2R planes
// of p^n: about R/2 planes' traffic). Chunks longer than CMAX are not considered where shorter
// ones exist: a long block drifts out of phase with its neighbours (measured: one wave of
// 3400-plane blocks ran 8 % slower than 104-plane chunks, docs/performance.md).
int best_chunks(long items, int nx, long slots, int R) {
  const int CMAX = 512;
  double best = 1e300;
  int best_n = 1, best_over = 1;
  for (int n = 1; n <= 64 && n <= nx; n++) {
    const long per = (nx + n - 1) / n;
    const double waves = std::ceil((double)items * n / (double)slots);
    const double cost = waves * ((double)per + 0.5 * R);
    const int over = per > CMAX;  // compared first: a chunk within CMAX beats any longer one
    if (over < best_over || (over == best_over && cost < best * (1 - 1e-9))) best = cost, best_n = n, best_over = over;
  }
  return best_n;
}

// The launch over planes [xlo, xlo + nx) (sweep_split): round A takes the largest multiple of the
// resident slots in tiles, round B the rest.
sweep_split make_split(const gs_state *s, int xlo, int nx) {
  const int R = s->pb->st.r;
  sweep_split sp;
  sp.xlo = xlo, sp.nx = nx, sp.tz = s->tz, sp.ntile = s->ntile;
  sp.ta = (int)(s->ntile / s->slots * s->slots);
  sp.na = sp.ta ? best_chunks(sp.ta, nx, s->slots, R) : 1;
  sp.ca = (nx + sp.na - 1) / sp.na;
  sp.na = (nx + sp.ca - 1) / sp.ca;
  const long rest = s->ntile - sp.ta;
  sp.nb = rest ? best_chunks(rest, nx, s->slots, R) : 1;
  sp.cb = (nx + sp.nb - 1) / sp.nb;
  sp.nb = rest ? (nx + sp.cb - 1) / sp.cb : 0;
  sp.blocks = (long long)sp.ta * sp.na + (long long)rest * sp.nb;
  return sp;
}

// The ring planes for slabs of SR planes and blocks of nt steps (overlap: copies both ways beside
// the kernels, tw_window_plan_min_planes).
int gs_ring_planes(int N0, int r, int SR, int nt, int overlap) {
  tw_window_plan p;
  tw_window_plan_slabs(N0, r, SR, nt, 0, 1, &p);
  return tw_window_plan_min_planes(&p, overlap);
}

// The widest slab (r up to 256 planes) whose ring with copies overlapping both ways fits W planes,
// else r (the smallest ring: in-copies may then wait for out-copies).
int gs_slab_planes(int N0, int r, int nt, int W) {
  int lo = r, hi = 256 < N0 ? 256 : N0;
  if (hi < lo) hi = lo;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (gs_ring_planes(N0, r, mid, nt, 1) <= W) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The tower height for a job without solver.tower_height whose default height's ring does not fit
// the cap. A taller block moves the grid less often (12 B per cell in per block, docs/design.md §3)
// but leaves the ring less room for slabs, and narrow slabs cost: each reads its stencil's planes
// beyond its own and is one launch per step. Candidates: the heights whose ring still holds slabs
// of 2r planes with the copies overlapping both ways (slabs of r launch a tiny kernel per step and
// their in-copies wait for out-copies: 1024 x 1024 x 512 under 800 MB, height 29 with slabs of 4
// ran 48 Gcell/s, height 25 with slabs of 8 87), else the tallest whose ring fits, else 0 (none
// fits). Among the candidates, the rate is predicted as the smaller of
//   the copies' pace   B·h / (b + 8)  (B = TW_WINDOW_LINK_BYTES_PER_S, both directions together;
//                                    b = in_bytes a cell per block: 12, or 8 where c²dt² repeats
//                                    along x and comes from the ring's next plane, tw_gpu_window_in)
//   the slabs' pace    I / (1 + c / SR(h)),  c = r/2 + I·L / (plane cells)
// with I the in-core rate (0.65 of the DRAM bandwidth over 16 B: the stepwise kernel at order 8
// ran 0.66 on the H200, 0.75 on the H100), SR(h) the widest slab the ring holds (gs_slab_planes)
// and L = 8 µs a launch; c was fitted on 2048 x 2048 x 640 at order 8 (3.2 planes). The tallest
// height within 2 % of the best prediction is taken: the model is no finer than that, and a taller
// block moves fewer bytes. Measured on an H200 (order 8, docs/performance.md, session 20):
// 2048 x 2048 x 640 under 4.03 GB (in core 187.8), heights 40 / 44 / 48 / 52 / 56 ran
// 158.0 / 164.5 / 162.2 / 158.4 / 134.9 and the tallest candidate (57, slabs of 8) 148.4;
// 3424 x 1024 x 268 under 1.41 GB: 48 / 52 / 64 (the default, fits) 144.5 / 156.6 / 157.1. This
// rule on the square grid: 162.7 / 163.5 (h = 48 set by hand 163.2 / 163.5, two rounds); on
// 1024 x 1024 x 512 under 800 MB it keeps the tallest candidate (76.7).
// Without the device's bandwidth, the tallest candidate.
int gs_window_height(const gs_state *s, const tw_problem *pb, uint64_t cap, const tw_gpu_plane_layout &WL0,
                     const std::function<double()> &in_bytes) {
  const int r = pb->st.r, N0 = pb->g.N[0], nt0 = s->nt;
  tw_gpu_plane_layout L = WL0;
  int W = 0, q = 1, sp = 0;
  uint64_t smallest = 0;
  tw_error e = {};
  // the ring the cap holds (its size does not depend on the height, only whether it is enough)
  if (tw_gpu_window_fit(&L, cap, gs_ring_planes(N0, r, r, 1, 0), N0, &W, &q, &smallest, &sp, &e) || !W) return 0;
  int tallest = 0, wide = 0;
  for (int h = 1; h <= nt0; h++) {
    if (gs_ring_planes(N0, r, r, h, 0) > W) break;  // taller rings only grow
    tallest = h;
    if (gs_ring_planes(N0, r, 2 * r, h, 1) <= W) wide = h;
  }
  int dev = 0;
  tw_gpu_props gp;
  const double bw = wide && cudaGetDevice(&dev) == cudaSuccess && tw_gpu_props_get(dev, &gp, &e) == TW_OK
                        ? tw_gpu_dram_bytes_per_s(gp.mem_clock_khz, gp.bus_bits)
                        : 0.0;
  if (!bw) return wide ? wide : tallest;
  const double I = 0.65 * bw / 16.0, plane = (double)pb->g.N[1] * pb->g.N[2], b_in = in_bytes();
  const double c = 0.5 * r + I * 8e-6 / plane;
  std::vector<double> rate((size_t)wide + 1, 0.0);
  double best = 0;
  for (int h = 1; h <= wide; h++) {
    const double SR = gs_slab_planes(N0, r, h, W);
    rate[h] = std::min(TW_WINDOW_LINK_BYTES_PER_S * h / (b_in + 8.0), I / (1.0 + c / SR));
    best = std::max(best, rate[h]);
  }
  int h = wide;
  while (h > 1 && rate[h] < 0.98 * best) h--;
  return h;
}

// The sliding window for the stepwise kernel: blocks of solver.tower_height steps (the copies move
// 20 B per cell per block, docs/design.md §3) swept by slabs of SR planes; SR as wide as the ring allows
// with copies overlapping both ways (wider slabs: fewer launches, less queue warm-up per plane),
// down to r for the smallest ring.
tw_status gs_window_setup(gs_state *s, const tw_problem *pb, uint64_t cap, int automatic, double whole, tw_error *err) {
  const int r = pb->st.r, N0 = pb->g.N[0];
  int dts = 0;
  tw_status st = tw_schedule_params(pb->order, 0, pb->tower_height, &dts, &s->nt, err);
  if (st) return st;
  if (pb->steps < s->nt) s->nt = pb->steps > 0 ? (int)pb->steps : 1;
  auto planes = [&](int SR, int overlap) { return gs_ring_planes(N0, r, SR, s->nt, overlap); };
  // c²dt² planes that repeat the next: copied on the device (tw_gpu_window_in), not over the link.
  // A pass over c²dt², made once a ring is known to fit (not for a cap that fits none).
  std::vector<unsigned char> same;
  double b_in = 12.0;
  auto in_bytes = [&]() {
    if (same.empty()) {
      same.resize((size_t)N0);
      const long n = tw_window_c2_repeats(pb->c2dt2, N0, (size_t)pb->g.N[1] * (size_t)pb->g.N[2], same.data());
      b_in = 8.0 + 4.0 * (double)(N0 - n) / N0;
    }
    return b_in;
  };
  const tw_gpu_plane_layout WL0 = {N0, pb->g.N[1], pb->g.N[2], s->L.Nyp, s->L.Nzp, TW_GPU_YPAD};
  tw_gpu_plane_layout WL = WL0;
  int W = 0, q = 1, sp = 0;
  uint64_t smallest = 0;
  if ((st = tw_gpu_window_fit(&WL, cap, planes(r, 0), N0, &W, &q, &smallest, &sp, err))) return st;
  // Without a tower_height in the job, a cap too small for the default height's ring takes a lower
  // height (gs_window_height).
  int nt_default = 0;
  if (!W && !pb->tower_height) {
    const int h = gs_window_height(s, pb, cap, WL0, in_bytes);
    nt_default = s->nt, s->nt = h ? h : 1;  // none fits: height 1, whose ring the error names
    WL = WL0;
    if ((st = tw_gpu_window_fit(&WL, cap, planes(r, 0), N0, &W, &q, &smallest, &sp, err))) return st;
  }
  if (!W) {
    char params[64];
    snprintf(params, sizeof params, "stepwise slabs of %d planes, tower_height %d", r, s->nt);
    return tw_gpu_window_too_small(err, pb, cap, automatic, sp, smallest, whole, params);
  }
  s->L.Nyp = WL.NYd;
  s->L.sx = WL.SX;  // the ring's plane pitch (tw_gpu_window_fit)
  // The widest slab whose ring, with copies overlapping both ways, fits. Wider: fewer launches per
  // step and less queue warm-up per plane (the ring grows by 3 planes per plane of SR: one being
  // computed, one coming in, one going out).
  s->SR = gs_slab_planes(N0, r, s->nt, W);
  in_bytes();
  if ((st = tw_gpu_window_create(pb, &WL, W, same.data(), &s->win, err))) return st;
  // Blocking, as s->stream (gs_init): ordered with the legacy default stream too.
  TW_CUDA_TRY(err, cudaStreamCreate(&s->stream2));
  for (int a = 0; a < 2; a++)
    if (!(s->step_ev[a] = (cudaEvent_t *)calloc((size_t)s->nt, sizeof(cudaEvent_t))))
      return tw_error_set(err, TW_ENOMEM, "out of memory");
  s->nstep_ev = s->nt;
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < s->nt; i++) TW_CUDA_TRY(err, cudaEventCreateWithFlags(&s->step_ev[a][i], cudaEventDisableTiming));
  char b[32], lowered[48] = "";
  if (nt_default) snprintf(lowered, sizeof lowered, " (the default %d lowered to fit)", nt_default);
  snprintf(s->win_why, sizeof s->win_why, "%s; window of %d x-planes (%s), blocks of %d steps%s in slabs of %d planes",
           automatic ? "the grid does not fit the GPU's free memory" : "the grid is above solver.device_memory", W,
           tw_format_bytes((double)tw_gpu_window_bytes(&WL, W), b, sizeof b), s->nt, lowered, s->SR);
  return TW_OK;
}

tw_status gs_init(gs_state *s, const tw_problem *pb, const variant *var, tw_error *err) {
  const tw_grid *g = &pb->g;
  const int R = pb->st.r;
  s->pb = pb;
  s->var = var;
  if (R < 1 || R > TW_GPU_RMAX)
    return tw_error_set(err, TW_EUNSUPPORTED, "order %d is not supported (orders 2, 4, 6, 8; use kernel \"cpu\")",
                        pb->order);
  s->fn = var->fn[R - 1];
  s->L = tw_dev_layout_make(g, ROW_ROUND, pb->free_surface);
  if (s->L.sx > 0x7fffffffLL)  // the kernel indexes inside a plane with 32-bit offsets
    return tw_error_set(err, TW_EUNSUPPORTED, "an x plane of %d x %d cells is too large (at most 2^31 cells with "
                        "padding)", g->N[1], g->N[2]);
  const size_t cells = (size_t)g->N[0] * (size_t)s->L.sx;  // per array, padding included
  const double need = 3.0 * (double)cells * sizeof(float);
  int dev = 0;
  TW_CUDA_TRY(err, cudaGetDevice(&dev));
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&s->sms, cudaDevAttrMultiProcessorCount, dev));
  // A blocking stream: it is ordered with the legacy default stream, so `torrewave bench` can
  // bracket an advance call with events on stream 0.
  TW_CUDA_TRY(err, cudaStreamCreate(&s->stream));
  if (tw_status st0 = tw_gpu_samples_init(&s->samples, err)) return st0;
  // The whole grid resident, or the sliding window (tw_gpu_window_decide).
  uint64_t wcap = 0;
  int automatic = 0;
  tw_status st = tw_gpu_window_decide(pb, need, &wcap, &automatic, err);
  if (st) return st;
  double t = tw_wall_seconds();  // the parts of the set-up (run report), each waited for
  if (wcap) {
    if ((st = gs_window_setup(s, pb, wcap, automatic, need, err))) return st;
    tw_phases_add(pb->phases, "backend: window (all of it)", tw_wall_seconds() - t);
  } else {
    const long long yoff = (long long)TW_GPU_YPAD * s->L.Nzp;
    s->cells = cells;
    for (int a = 0; a < 3; a++) {
      TW_CUDA_TRY(err, cudaMalloc((void **)&s->alloc[a], cells * sizeof(float)));
      TW_CUDA_TRY(err, cudaMemsetAsync(s->alloc[a], 0, cells * sizeof(float), s->stream));
    }
    TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
    tw_phases_add(pb->phases, "backend: fields (cudaMalloc, zero)", tw_wall_seconds() - t);
    s->p[0] = s->alloc[0] + yoff;
    s->p[1] = s->alloc[1] + yoff;
    s->c2 = s->alloc[2] + yoff;
    // c²dt² rows [N0][N1][N2] → rows of pitch Nzp, YPAD rows into each plane of Nyp rows
    if ((st = tw_gpu_upload_grid(pb->c2dt2, g->N, s->alloc[2], s->L.Nzp, s->L.Nyp, 0, TW_GPU_YPAD, s->stream,
                                 pb->phases, err)))
      return st;
  }
  t = tw_wall_seconds();
  s->inj_at = (int *)malloc((size_t)(g->N[0] + 1) * sizeof(int));
  s->tap_at = (int *)malloc((size_t)(g->N[0] + 1) * sizeof(int));
  if (!s->inj_at || !s->tap_at) return tw_error_set(err, TW_ENOMEM, "per-plane source and receiver index");

  size_t cap[3] = {0, 0, 0};
  float **damp[3] = {&s->ax, &s->ay, &s->az};
  for (int a = 0; a < 3; a++)
    if ((st = dev_put(damp[a], &cap[a], (const float *)pb->a[a], (size_t)g->N[a], "damping table", s->stream, err)))
      return st;
  if ((st = gs_tables(s, TW_RESET_SOURCES | TW_RESET_RECEIVERS, err))) return st;
  tw_phases_add(pb->phases, "backend: damping, tables", tw_wall_seconds() - t);

  const int threads = var->tx * var->ty;
  TW_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s->blocks_per_sm, (const void *)s->fn, threads, 0));
  if (s->blocks_per_sm < 1)
    return tw_error_set(err, TW_EINTERNAL, "kernel variant %s (order %d) cannot be resident on GPU %d", var->name,
                        pb->order, dev);
  const int by = var->by;
  const long tz = (s->L.Nzp + var->bz - 1) / var->bz, tyy = (g->N[1] + by - 1) / by;
  if (tz * tyy * 64 > 0x7fffffffL)  // blocks of one launch: tiles × at most 64 chunks
    return tw_error_set(err, TW_EUNSUPPORTED, "a plane of %d x %d cells has too many tiles for one launch", g->N[1],
                        g->N[2]);
  s->tz = (int)tz, s->ntile = (int)(tz * tyy);
  s->slots = (long)s->sms * s->blocks_per_sm;
  // Tests force few slots on small grids, so that both rounds of the split run: any slot count
  // gives the same bits, only the speed depends on it.
  const char *e = getenv("TW_STEPWISE_SLOTS");
  if (e && atol(e) > 0) s->slots = atol(e);
  s->in_core = make_split(s, 0, g->N[0]);
  if (s->win) s->slab = make_split(s, 0, s->SR);
  s->block = dim3((unsigned)var->tx, (unsigned)var->ty, 1);
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  s->level = 0;
  return TW_OK;
}

// One step m of the planes of split sp (the grid, or a window's slab; c2 with the same origin as
// cur and nxt): the stepwise kernel, then the step's source cells and, at a sample level, the
// taps of those planes (sources and taps are sorted by x: one index range each).
tw_status slab_step(gs_state *s, const float *cur, float *nxt, const float *c2, const sweep_split &sp, long m,
                    long first, cudaStream_t stream, tw_error *err) {
  const tw_problem *pb = s->pb;
  const int xa = sp.xlo, xb = sp.xlo + sp.nx;
  s->fn<<<(unsigned)sp.blocks, s->block, 0, stream>>>(cur, nxt, c2, s->ax, s->ay, s->az, s->L, sp, pb->st);
  TW_CUDA_LAUNCHED(err, "stepwise_kernel");
  const int i0 = s->inj_at[xa], ni = s->inj_at[xb] - i0;
  if (ni) {
    const unsigned b = (unsigned)((ni + 127) / 128);
    const int *inj = s->inj + 3 * i0;
    const float *S = s->S + (size_t)i0 * (size_t)pb->steps;
    float *save = s->save + i0;
    switch (pb->st.r) {
#define TW_INJECT(R_)                                                                                               tw_dev_inject_kernel<R_><<<b, 128, 0, stream>>>(cur, nxt, c2, s->ax, s->ay, s->az, s->L, pb->st, inj, ni, S,                                                      pb->steps, m, save)
      case 1: TW_INJECT(1); break;
      case 2: TW_INJECT(2); break;
      case 3: TW_INJECT(3); break;
      default: TW_INJECT(4); break;
#undef TW_INJECT
    }
    TW_CUDA_LAUNCHED(err, "tw_dev_inject_kernel");
  }
  const int t0 = s->tap_at[xa], nt = s->tap_at[xb] - t0;
  if (nt && (m + 1) % pb->interval == 0) {
    float *row = s->taps + (size_t)((m + 1) / pb->interval - first) * (size_t)pb->ntap + t0;
    tw_dev_taps_kernel<<<(unsigned)((nt + 255) / 256), 256, 0, stream>>>(nxt, s->L, s->tap + 3 * t0, nt, row);
    TW_CUDA_LAUNCHED(err, "tw_dev_taps_kernel");
  }
  return TW_OK;
}

// A window group (one slab stage, G = 1): its nt slab steps on the ring at origin lo.
struct slab_group {
  gs_state *s;
  const tw_window_plan *p;
  long tb, first;
};
// Why two stages may overlap (the plan: stage s at step τ computes planes [R·s + τ·r, + R), level
// τ + 1 into the array of level τ − 1): stage s − 1 at step τ reads level τ on planes below
// R·s + (τ + 1)·r, which stage s wrote at step τ − 1 (hence the wait) and overwrites only from its
// step τ + 1 on, from plane R·s + (τ + 1)·r up; it writes below R·s + τ·r, where stage s reads level τ
// (the other array) from step τ on, never level τ − 1. Source cells and taps of a plane are updated
// by one stage per step, in step order through the same waits. Stage s − 2 runs on stage s's
// stream, after it. Measured (H200, order 8, 1600 x 3072 x 320 at 8x over the cap): 187.1 Gcell/s
// against 166.6 with one stream, 92.9 % of in-core (docs/performance.md, session 13).
tw_status slab_group_run(void *ctx, int g, int lo, cudaStream_t stream, tw_error *err) {
  const slab_group &c = *(const slab_group *)ctx;
  gs_state *s = c.s;
  const int stage = c.p->s_hi - g, N0 = s->L.N[0];
  float *o[2] = {tw_gpu_window_origin(s->win, 0, lo), tw_gpu_window_origin(s->win, 1, lo)};
  const float *c2 = tw_gpu_window_origin(s->win, 2, lo);
  cudaEvent_t *mine = s->step_ev[g % 2], *before = s->step_ev[(g + 1) % 2];
  for (int tau = 0; tau < c.p->nt; tau++) {
    if (g > 0 && tau > 0) TW_CUDA_TRY(err, cudaStreamWaitEvent(stream, before[(size_t)tau - 1], 0));
    const int X0 = c.p->R * stage + tau * c.p->r;
    const int xa = X0 > 0 ? X0 : 0, xb = X0 + c.p->R < N0 ? X0 + c.p->R : N0;
    if (xa < xb) {
      const long m = c.tb + tau;
      sweep_split sp = s->slab;
      if (xb - xa != sp.nx) sp = make_split(s, xa, xb - xa);  // an edge slab
      sp.xlo = xa;
      tw_status st = slab_step(s, o[m % 2], o[(m + 1) % 2], c2, sp, m, c.first, stream, err);
      if (st) return st;
    }
    TW_CUDA_TRY(err, cudaEventRecord(mine[(size_t)tau], stream));  // (also where this stage skips τ)
  }
  // The planes this group sends back (run_plan, after fn) include the r planes that stage s + 1
  // wrote at its last step (this stage read them at its own): the out-copies wait for that step.
  if (g > 0) TW_CUDA_TRY(err, cudaStreamWaitEvent(stream, before[(size_t)c.p->nt - 1], 0));
  return TW_OK;
}

tw_status gs_advance_impl(gs_state *s, long t0, long n, float *taps, tw_error *err) {
  const tw_problem *pb = s->pb;
  long first, count;
  tw_status st = tw_gpu_advance_begin(pb, s->level, t0, n, &s->taps, &s->taps_cap, &s->samples, &first, &count, err);
  if (st) return st;
  const double w0 = tw_wall_seconds();
  if (s->win) {
    for (long done = 0; done < n;) {
      const int h = tw_block_height(done, n, s->nt);
      tw_window_plan p;
      tw_window_plan_slabs(s->L.N[0], pb->st.r, s->SR, h, 0, 1, &p);
      slab_group ctx = {s, &p, t0 + done, first};
      const cudaStream_t streams[2] = {s->stream, s->stream2};
      // the block's start: the second stream after everything before it on s->stream
      TW_CUDA_TRY(err, cudaEventRecord(s->step_ev[0][0], s->stream));
      TW_CUDA_TRY(err, cudaStreamWaitEvent(s->stream2, s->step_ev[0][0], 0));
      if ((st = tw_gpu_window_run_plan(s->win, streams, 2, &p, slab_group_run, &ctx, err))) return st;
      // the block's end on s->stream: the second stream's work before everything that follows
      TW_CUDA_TRY(err, cudaEventRecord(s->step_ev[1][0], s->stream2));
      TW_CUDA_TRY(err, cudaStreamWaitEvent(s->stream, s->step_ev[1][0], 0));
      done += h;
      if (done < n && (st = tw_gpu_samples_mark(&s->samples, pb, s->stream, t0 + done, err))) return st;
    }
  } else {
    // a mark every SAMPLE_MARK steps: the samples before it go to the host while the rest compute
    constexpr long SAMPLE_MARK = 32;
    for (long m = t0; m < t0 + n; m++) {
      if ((st = slab_step(s, s->p[m % 2], s->p[(m + 1) % 2], s->c2, s->in_core, m, first, s->stream, err))) return st;
      if ((m + 1 - t0) % SAMPLE_MARK == 0 && m + 1 < t0 + n &&
          (st = tw_gpu_samples_mark(&s->samples, pb, s->stream, m + 1, err)))
        return st;
    }
  }
  // The block boundary: the whole field is at level t0 + n.
  st = tw_gpu_advance_end(s->stream, &s->samples, pb, first, count, taps, s->taps, s->win, w0, &s->win_s, err);
  if (st) return st;
  s->level = t0 + n;
  s->dirty = 1;
  return TW_OK;
}

// A new shot (problem.h): both levels to zero — on the device, or the window's host levels (the
// ring's grid cells are written by every in-copy before they are read) — and the tables again.
tw_status gs_reset_impl(gs_state *s, unsigned what, tw_error *err) {
  tw_status st = s->dirty ? tw_gpu_levels_zero(s->win, s->alloc, s->cells, s->stream, err) : TW_OK;
  if (!st) st = gs_tables(s, what, err);  // (synchronizes the stream: the memsets are done too)
  if (st) return st;
  s->level = 0;
  s->dirty = 0;
  s->win_s = 0;
  return TW_OK;
}

tw_status gs_extract_impl(gs_state *s, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err) {
  return tw_gpu_snapshot(s->L, s->p[s->level % 2], s->win, s->level, s->stream, &s->stage, &s->stage_cap, lo, cnt, dec,
                         out, err);
}

const variant *find_variant(const char *name, int r, int Nzp) {
  if (!name || !*name || strcmp(name, "default") == 0) name = default_variant(r, Nzp);
  return variant_named(name);
}

// ------------------------------------------------------------------ backend interface

tw_status gs_create(const tw_problem *pb, void **state, tw_error *err) {
  return tw_gpu_stepwise_create_variant(pb, NULL, state, err);
}

tw_status gs_advance(void *state, long t0, long n, float *taps, tw_error *err) {
  tw_status st = gs_advance_impl((gs_state *)state, t0, n, taps, err);
  if (st) tw_error_prefix(err, "gpu-stepwise: advancing steps %ld..%ld", t0, t0 + n);
  return st;
}

tw_status gs_extract(void *state, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err) {
  tw_status st = gs_extract_impl((gs_state *)state, lo, cnt, dec, out, err);
  if (st) tw_error_prefix(err, "gpu-stepwise: snapshot");
  return st;
}

tw_status gs_save(void *state, int x0, int nx, float *cur, float *prev, tw_error *err) {
  gs_state *s = (gs_state *)state;
  tw_status st = tw_gpu_checkpoint_planes(s->L, s->p, s->win, s->level, x0, nx, cur, prev, 0, s->stream, err);
  if (st) tw_error_prefix(err, "gpu-stepwise: checkpoint");
  return st;
}

tw_status gs_load(void *state, long t, int x0, int nx, const float *cur, const float *prev, tw_error *err) {
  gs_state *s = (gs_state *)state;
  const tw_problem *pb = s->pb;
  // (load: the host buffers are only read)
  tw_status st =
      tw_gpu_checkpoint_planes(s->L, s->p, s->win, t, x0, nx, (float *)cur, (float *)prev, 1, s->stream, err);
  // The state besides the two levels: the source cells' saved p^{t−1} (the inject kernel's older
  // level, see slab_step), from prev for the source cells of these planes (sorted by x).
  const int c0 = s->inj_at[x0], nc = s->inj_at[x0 + nx] - c0;
  if (!st && nc) {
    float *v = (float *)malloc((size_t)nc * sizeof(float));
    if (!v) return tw_error_set(err, TW_ENOMEM, "gpu-stepwise: checkpoint: out of memory");
    const size_t N1 = (size_t)pb->g.N[1], N2 = (size_t)pb->g.N[2];
    for (int c = 0; c < nc; c++) {
      const int *q = pb->inj[c0 + c];
      v[c] = prev[((size_t)(q[0] - x0) * N1 + (size_t)q[1]) * N2 + (size_t)q[2]];
    }
    const cudaError_t e = cudaMemcpy(s->save + c0, v, (size_t)nc * sizeof(float), cudaMemcpyHostToDevice);
    free(v);
    if (e != cudaSuccess) st = tw_cuda_fail(err, e, "cudaMemcpy (source cells' older level)", __FILE__, __LINE__);
  }
  if (st) return tw_error_prefix(err, "gpu-stepwise: loading a checkpoint");
  s->level = t;
  s->dirty = 1;
  return TW_OK;
}

tw_status gs_reset(void *state, unsigned what, tw_error *err) {
  tw_status st = gs_reset_impl((gs_state *)state, what, err);
  if (st) tw_error_prefix(err, "gpu-stepwise: new shot");
  return st;
}

long gs_block_steps(void *state) {
  const gs_state *s = (const gs_state *)state;
  return s->win ? s->nt : 1;  // a window moves the grid once per block: whole blocks
}

void gs_report(void *state, tw_run_report *rep) {
  const gs_state *s = (const gs_state *)state;
  if (s->win) {
    tw_gpu_window_report(s->win, s->win_s, rep);
    snprintf(rep->note, sizeof rep->note, "gpu-stepwise variant %s: %d blocks/SM on %d SMs; %s, chunks of %d/%d planes",
             s->var->name, s->blocks_per_sm, s->sms, s->win_why, s->slab.ca, s->slab.cb);
    return;
  }
  const sweep_split &sp = s->in_core;
  snprintf(rep->note, sizeof rep->note, "gpu-stepwise variant %s: %d blocks/SM on %d SMs; %d tiles in %d chunks of "
           "%d planes, %d in %d of %d", s->var->name, s->blocks_per_sm, s->sms, sp.ta, sp.na, sp.ca,
           sp.ntile - sp.ta, sp.nb, sp.cb);
}

void gs_destroy(void *state) { gs_free((gs_state *)state); }

tw_status gs_find_nonfinite(void *state, long long *count, int cell[3], tw_error *err) {
  gs_state *s = (gs_state *)state;
  tw_status st = tw_gpu_find_nonfinite(s->L, s->p[s->level % 2], s->win, &s->nf, s->stream, count, cell, err);
  if (st) tw_error_prefix(err, "gpu-stepwise: non-finite check");
  return st;
}

}  // namespace

extern "C" {

int tw_gpu_stepwise_variant_count(void) { return NVARIANT; }
const char *tw_gpu_stepwise_default_variant(int order) {
  return order >= 2 && order <= 2 * TW_GPU_RMAX ? "z16y8b4, or z8y16b4 where Nz leaves its tiles idler" : NULL;
}
const char *tw_gpu_stepwise_variant_name(int i) { return i >= 0 && i < NVARIANT ? variants[i].name : NULL; }

tw_status tw_gpu_stepwise_create_variant(const tw_problem *pb, const char *variant_name, void **state, tw_error *err) {
  const variant *v = find_variant(variant_name, pb->st.r, tw_dev_layout_make(&pb->g, ROW_ROUND, pb->free_surface).Nzp);
  if (!v) {
    char list[256] = "";
    for (int i = 0; i < NVARIANT; i++) {
      strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
      strncat(list, variants[i].name, sizeof list - strlen(list) - 1);
    }
    return tw_error_set(err, TW_EINVAL, "gpu-stepwise: unknown variant \"%s\"; known: %s", variant_name, list);
  }
  gs_state *s = (gs_state *)calloc(1, sizeof *s);
  if (!s) return tw_error_set(err, TW_ENOMEM, "gpu-stepwise: out of memory");
  tw_status st = gs_init(s, pb, v, err);
  if (st) {
    tw_error_prefix(err, "gpu-stepwise");
    gs_free(s);
    return st;
  }
  *state = s;
  return TW_OK;
}

tw_status tw_gpu_stepwise_randomize(void *state, uint64_t seed, tw_error *err) {
  gs_state *s = (gs_state *)state;
  s->dirty = 1;
  if (s->win) {  // the full fields are on the host: fill them there, and the sources' saved p^{−1}
    const tw_grid *g = &s->pb->g;
    const size_t cells = (size_t)g->N[0] * g->N[1] * g->N[2];
    for (int a = 0; a < 2; a++) {
      float *p = tw_gpu_window_level(s->win, a);
      for (size_t e = 0; e < cells; e++) p[e] = bench_value(e, seed * 2 + a + 1);
    }
    const int ninj = s->pb->ninj;
    float *save = (float *)malloc((size_t)(ninj ? ninj : 1) * sizeof(float));
    if (!save) return tw_error_set(err, TW_ENOMEM, "gpu-stepwise: out of memory");
    for (int c = 0; c < ninj; c++)
      save[c] = tw_gpu_window_level(s->win, 1)[((size_t)s->pb->inj[c][0] * g->N[1] + s->pb->inj[c][1]) * g->N[2] +
                                                s->pb->inj[c][2]];
    const cudaError_t e = ninj ? cudaMemcpy(s->save, save, (size_t)ninj * sizeof(float), cudaMemcpyHostToDevice)
                               : cudaSuccess;
    free(save);
    TW_CUDA_TRY(err, e);
    return TW_OK;
  }
  const unsigned blocks = (unsigned)s->sms * 8;
  // Level 0 is in p[0], level −1 in p[1] (level m lives in array m mod 2).
  for (int a = 0; a < 2; a++) {
    randomize_kernel<<<blocks, 256, 0, s->stream>>>(s->p[a], s->L, seed * 2 + a + 1);
    TW_CUDA_LAUNCHED(err, "randomize_kernel");
  }
  if (s->pb->ninj) {
    gather_inj_kernel<<<(s->pb->ninj + 127) / 128, 128, 0, s->stream>>>(s->p[1], s->L, s->inj, s->pb->ninj, s->save);
    TW_CUDA_LAUNCHED(err, "gather_inj_kernel");
  }
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  return TW_OK;
}

const tw_backend_ops tw_backend_gpu_stepwise = {
    "gpu-stepwise", 1, gs_create, gs_advance, gs_extract, gs_block_steps, gs_reset, gs_report, gs_destroy, gs_save,
    gs_load, gs_find_nonfinite,
};
}
