// gpu_diamond.cu — kernel "gpu-diamond": DiamondTorre on the GPU (docs/design.md §2).
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
//    (blockDim = Nz rounded up to 32·Z, over Z; Z = 2 at order 2 DTS 2 and 3 — the faster ones,
//    and they fit Nz up to 768 and 512 — with half the memory instructions per update: 8-byte
//    loads, stores and copies, one z-neighbour in a register); each thread keeps, for its z
//    cells, the tower's working set in registers across the tower's steps: F = p^n on the window
//    W = D ∪ cross(D) ∪ (D + (r, r)) (the diamond, every x/y neighbour its stencil reads, and the
//    cells that enter the diamond next step, whose p^n is their p^{n−1} then), G = p^{n−1} on D, C = c²dt² on D. Per step only the band of W that
//    this tower did not compute itself is loaded (p^{n+1} of the leading edge, c²dt² of the
//    entering columns; cp.async into shared memory one or two steps ahead, at orders 4 and 6 by the
//    warp's lanes together, 16 bytes a copy: gpu_diamond_tower.cuh, band_coop; at order 4 with 8 warps
//    a CTA one bulk copy (TMA) an item: BULK_NZ) and only the columns
//    that leave D are stored (their last two levels). z-neighbours: each thread writes its p^n of
//    the 2R² columns to shared memory, one barrier, then reads z ± m from there (double-buffered:
//    one barrier per step). All table indices are compile-time (Geo<r, DTS> below, unrolled with
//    sfor), so the arrays live in registers; at high order the halo part of W stays in the shared
//    band buffer instead (HS). Launched per stage, or (default) as a persistent grid that takes
//    towers by ticket and starts one when its two predecessors have set their done flags. Order
//    4's column above 256 cells goes over a cluster of 2 CTAs (tower_kernel_cl2: the seam's halo
//    rows through distributed shared memory, the cluster's barrier a step).
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
// Files: gpu_diamond_base.cuh (portability shims, compile-time loops, the geometry tables Geo),
// gpu_diamond_args.cuh (the kernels' arguments and small device helpers), gpu_diamond_tower.cuh (the
// register and generic towers, the damped update); this file: the host side (which tower, memory, sources, launches, the window, the
// backend interface). One translation unit: the .cuh files are included here only.
//
// The host emulation used in development compiles this file as C++ with a shim (TW_DIAMOND_EMU):
// OS threads with a barrier per CUDA block. It is not part of the build.
#include <cuda.h>  // driver types only: cuStreamWaitValue32 comes through cudaGetDriverEntryPointByVersion
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

#include "gpu_diamond_tower.cuh"

namespace {

// ---------------------------------------------------------------------------------- host side

typedef void (*kernel_fn)(dia_args);

enum { MODE_STAGE = 0, MODE_PERSISTENT = 1, MODE_GENERIC = 2 };

struct reg_kernel {
  int r, dts, z;  // radius, DTS, z cells per thread
  int cl;         // CTAs a tower (2: a thread-block cluster holds its z column)
  int nb;         // band buffers (gpu_diamond_tower.cuh: band_buffers)
  int bulk;       // the band by bulk copies (gpu_diamond_tower.cuh: BULK_NZ), taken at BULK_WARPS
  kernel_fn fn;
  kernel_fn fn_yx;  // the same tower sweeping the grid's y (dia_args.yx), or NULL where not built
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
// that cannot beat it by this margin in the model (the DTS-1 towers of orders 4–8 move 18–19 B) is
// not used by default; gpu-diamond then runs the stepwise kernel (docs/performance.md).
// With absorbing layers on the z faces a tower must move at most 0.62 of that.
constexpr double STEPWISE_BPU = 16.0, MODEL_MARGIN = 0.85, Z_DAMPED_MARGIN = 0.62;

// The L1 of an SM is what its shared memory leaves of 256 KiB (H100 / H200: the carveout is one of
// 0, 8, 16, 32, 64, 100, 132, 164, 196 or 228 KiB), and the towers need it (their global loads go
// through it: cp.async of 8 bytes). The order-2 tower with 3 band buffers at Nz 512 (207 KiB, 28
// KiB of L1) ran at 480 Gcell/s, with 2 (171 KiB, 60 KiB of L1) at 543; at Nz 448, 3 buffers (181
// KiB, 60 KiB of L1) 540 against 515 with 2; the tower at Nz 448 forced to the 228 KiB carveout 452
// (docs/performance.md, session 35). So a tower of more buffers runs only where its blocks an SM
// leave at least this much of the SM's shared memory to the L1; else its sibling of fewer. The
// blocks counted are those that fit, not those launched (tw_gpu_tower_share may launch fewer):
// at 1 block of 2 (Nz 256) 2 buffers still measured faster on 4 of 5 grids (3.6 % slower on
// 2048 × 1024 × 256).
constexpr int TOWER_L1_ROOM = 32 * 1024;

#define DIA_REG(R_, D_, Z_)                                                                                   \
  {R_, D_, Z_, 1, band_buffers<R_, D_, Z_>(), 0, tower_kernel<R_, D_, Z_>, NULL, tower_smem_bytes<R_, D_, Z_>, \
   model_bpu<R_, D_>()}
#define DIA_REG_YX(R_, D_, Z_, NB_)                                                                  \
  {R_, D_, Z_, 1, NB_, 0, tower_kernel<R_, D_, Z_, false, NB_>, tower_kernel<R_, D_, Z_, true, NB_>, \
   tower_smem_bytes<R_, D_, Z_, NB_>, model_bpu<R_, D_>()}
#define DIA_REG_CL2(R_, D_, Z_)                                                                                   \
  {R_, D_, Z_, 2, band_buffers<R_, D_, Z_>(), 0, tower_kernel_cl2<R_, D_, Z_>, NULL, tower_smem_bytes<R_, D_, Z_>, \
   model_bpu<R_, D_>()}
// the same tower with its band by bulk copies (2 buffers), one CTA or a cluster of CL_
#define DIA_REG_BULK(R_, D_, Z_, CL_)                                                                     \
  {R_, D_, Z_, CL_, 2, 1,                                                                                 \
   CL_ > 1 ? tower_kernel_cl2<R_, D_, Z_, false, 2, true> : tower_kernel<R_, D_, Z_, false, 2, true>, NULL, \
   tower_smem_bytes<R_, D_, Z_, 2, true>, model_bpu<R_, D_>()}
// The CTA size at which a tower that has bulk copies takes them (8 warps: session 43, +12–17 % there,
// −5 … 0 % at 6–7 warps; gpu_diamond_tower.cuh: BULK_NZ).
constexpr int BULK_WARPS = 8;

// Every instantiation costs compile time (about 10–30 s each): the tuned defaults and their
// neighbours in the DTS table of docs/performance.md; two z cells per thread where the state fits
// (order 2, DTS 2 and 3: Nz up to 768 and 512). For one (r, DTS) the first entry that fits is
// taken: the order is the measured preference (H200, session 5: DTS 2 with Z = 2 435 Gcell/s
// against 330 with Z = 1, three blocks per SM; session 6: DTS 3 with Z = 2 559 against 511 on
// zero fields, 465 against 418 on a wavefield with layers, then with a y-layer path since removed:
// session 34). The default tower (order 2, DTS 3, Z = 2) also sweeps y, for grids long in x
// (dia_init: the towers' parallelism), and comes with 3 band buffers and with 2: the first where
// its blocks leave the SM enough L1, else the second (dia_init: TOWER_L1_ROOM). Order 4's DTS-2
// tower also comes with its z column over a cluster of 2 CTAs, after its one-CTA twin: taken where
// the twin does not fit (Nz 257–512: 254 registers, at most 256 threads a CTA). (Order 2's twin
// fits to Nz 512 and ran 0.96x over a cluster there: session 31.) Both come with their band by bulk
// copies as well, ahead of them: taken where a CTA has BULK_WARPS warps (dia_init).
const reg_kernel reg_kernels[] = {
    DIA_REG(1, 1, 1),         DIA_REG(1, 2, 2),         DIA_REG(1, 2, 1),  DIA_REG_YX(1, 3, 2, 3),
    DIA_REG_YX(1, 3, 2, 2),   DIA_REG(1, 3, 1),         DIA_REG(1, 4, 1),  DIA_REG(2, 1, 1),
    DIA_REG_BULK(2, 2, 1, 1), DIA_REG(2, 2, 1),         DIA_REG_BULK(2, 2, 1, 2), DIA_REG_CL2(2, 2, 1),
    DIA_REG(3, 1, 1),
    // order 8 (r = 4) has none: DTS 1 needs 367 KB of shared memory at Nz = 256 (227 KB on an SM)
};
constexpr int NREGK = (int)(sizeof reg_kernels / sizeof reg_kernels[0]);

const kernel_fn generic_kernels[TW_GPU_RMAX] = {generic_kernel<1>, generic_kernel<2>, generic_kernel<3>,
                                                generic_kernel<4>};

struct dia_state {
  const tw_problem *pb;
  int r, dts, R, nt;
  int zpt;      // z cells per thread of the register tower
  int cl;       // its CTAs a tower (2: a cluster); the persistent grid's workers are towers
  int nb;       // its band buffers
  int bulk;     // its band by bulk copies
  int dts_req;  // the dts asked for (dts may be lower: the largest register tower that fits)
  int mode;
  double bpu;     // the chosen register tower's model bytes per update
  double gain;    // its predicted rate over the stepwise kernel's on this GPU (tw_gpu_tower_gain; 0: none)
  double par;     // the tower DAG's parallelism in towers (tw_schedule_parallelism)
  int yx;         // the towers sweep the grid's y (dia_args.yx): in core, where that is wider
  int K0, K1;     // the towers' frame: columns along the sweep and across it (N0, N1, or exchanged)
  void *sw;       // delegate: the stepwise kernel's state, when DiamondTorre cannot win here
  kernel_fn fn;
  kernel_fn fn_yx;  // the chosen register tower sweeping y (reg_kernel.fn_yx), or NULL
  size_t smem;
  int threads, regs, blocks_per_sm, sms;
  int clusters;  // cl > 1: the clusters resident at once (the persistent grid's workers)
  // layout
  int N0, N1, N2, NZp, PX, PY, NXd, NYd;
  long long SX;
  float *alloc[3];
  size_t cells;  // floats per allocation (padding included)
  float *p[2], *c2;
  float *ax_a, *ay_a, *az_a;  // allocations
  float *ax, *ay, *az;        // index 0 of the grid
  int xz0, xz1, yz0, yz1, zz0, zz1;
  // receivers (dia_receivers: grow-only, capacities in elements)
  colrec *coltap;
  int *tapk;
  size_t coltap_cap, tapk_cap;
  float *taps;
  size_t taps_cap;
  // sources: events of one advance call
  std::vector<dia_event> hev;
  std::vector<size_t> ev_block;  // first event of each block of the call
  dia_event *ev;
  size_t ev_cap;
  // persistent mode: done flags; ticket counters for launches of even and odd window groups (zeroed
  // at each advance call: issued[i] is where counter i stands after the launches so far, base[i]
  // where the last one on it started, ran[i] whether that launch had blocks)
  int *done;
  unsigned *ticket;
  size_t done_cap;
  int epoch;
  unsigned issued[2], base[2];
  int ran[2];
  const char *trace_path;  // TW_DIAMOND_TRACE: the last persistent launch's tower times, as text
  unsigned long long *trace;
  size_t trace_cap;
  float *stage;
  size_t stage_cap;
  unsigned long long *nf;  // the non-finite scan's result (tw_gpu_find_nonfinite)
  cudaStream_t stream;
  // The window's second stream (persistent mode): window group g launches on stream g % 2, so that
  // group g + 1's towers start on the SMs that group g's drain frees (win_group_launch);
  // wait32: the driver's cuStreamWaitValue32, or NULL (then one stream).
  cudaStream_t stream2;
  cudaEvent_t launched[2];  // after the last launch on stream i
  CUresult (*wait32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  tw_gpu_samples samples;  // receiver samples of finished blocks, to the host early
  long level;
  int dirty;      // the fields changed since creation or the last reset (dd_reset zeroes them)
  char why[160];  // why this implementation was chosen (report)
  // sliding window (docs/design.md §3), when the grid is not resident: win != NULL
  tw_gpu_window *win;
  int G, M;        // stages per launch, virtual planes on each side (the towers' reach past the grid)
  double win_s;    // host time inside windowed advance calls (the copy-wait share's denominator)
  char win_why[256];
};


void dia_free(dia_state *s) {
  if (!s) return;
  if (s->sw) tw_backend_gpu_stepwise.destroy(s->sw);
  // Errors are ignored: this also runs on error paths where the context may be broken.
  for (int a = 0; a < 3; a++) cudaFree(s->alloc[a]);
  cudaFree(s->ax_a), cudaFree(s->ay_a), cudaFree(s->az_a);
  cudaFree(s->coltap), cudaFree(s->tapk), cudaFree(s->taps), cudaFree(s->ev);
  cudaFree(s->done), cudaFree(s->ticket), cudaFree(s->stage), cudaFree(s->trace), cudaFree(s->nf);
  if (s->stream) cudaStreamDestroy(s->stream);
  if (s->stream2) cudaStreamDestroy(s->stream2);
  for (int i = 0; i < 2; i++)
    if (s->launched[i]) cudaEventDestroy(s->launched[i]);
  tw_gpu_samples_free(&s->samples);
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
  // The tables are 0 over the padding: a zero run that reaches an edge goes on beyond it, so that
  // the towers clipped by that edge take the undamped paths (without this, every edge tower of a
  // grid without layers ran a damped path: 1.9x the interior's time per step, on the critical path,
  // when that path took a reciprocal per cell; measured before session 34)
  if (lo < hi && lo == 0) lo = -(1 << 29);
  if (lo < hi && hi == n) hi = 1 << 29;
  *z0 = lo;
  *z1 = hi;
}


// The window's second stream for persistent launches (win_group_launch), where the driver has
// cuStreamWaitValue32 (stream memory operations; the H100 and H200 drivers do): group g + 1 then
// starts on the SMs that group g's last towers leave idle — a launch boundary otherwise drains the
// GPU for about one tower, which on a grid whose ring holds one or two stages per launch was half
// the time (1024² × 512 under 800 MB at order 2: 236 Gcell/s against 445 in core, session 23).
// Without it, one stream, as before.
tw_status window_streams(dia_state *s, tw_error *err) {
  const char *one = getenv("TW_DIAMOND_STREAMS");  // "1": one stream (a measurement switch)
  if (one && !strcmp(one, "1")) return TW_OK;
  cudaDriverEntryPointQueryResult q;
  void *fn = nullptr;
  if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !fn) {
    cudaGetLastError();
    return TW_OK;
  }
  s->wait32 = (CUresult(*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int))fn;
  TW_CUDA_TRY(err, cudaStreamCreate(&s->stream2));
  for (int i = 0; i < 2; i++) TW_CUDA_TRY(err, cudaEventCreateWithFlags(&s->launched[i], cudaEventDisableTiming));
  // A wait that holds at once (the counters start at 0): a driver that refuses stream memory
  // operations says so here, and the window keeps one stream.
  // (The counters are zero: dia_init synchronized their memset.)
  if (s->wait32((CUstream)s->stream2, (CUdeviceptr)s->ticket, 0u, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
    cudaStreamDestroy(s->stream2);
    s->stream2 = nullptr;
  }
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream2 ? s->stream2 : s->stream));
  return TW_OK;
}

// The sliding window: the ring's size from the cap (bytes for the three arrays' planes), the
// number of stages per launch from the ring. A tower reaches 2R + r planes past the grid (its
// diamond starts at x ≥ 1 − 2R, its reads r further): those are the virtual planes, M.
tw_status window_setup(dia_state *s, const tw_problem *pb, uint64_t cap, int automatic, double whole, tw_error *err) {
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
  // Without a tower_height in the job, the height trades the copies against the ring's room. A
  // taller block moves the grid less often (12 B a cell in per block, docs/design.md §3.5), but its
  // stage spans more planes, and where the ring cannot hold the next launch's planes beside the
  // running one with a little to spare, the in-copies wait for the slots the last out-copies free.
  // Measured (session 23, H200, order 2, 1024² × 512, steps a multiple of the height; in core 444
  // Gcell/s), against the link's one-way pace P(h) = 52 GB/s · h / 12 B: under 800 MB (a ring of 112
  // planes) heights 72–94, whose ring holds the next launch's planes and 5–27 more, ran 0.83–0.88
  // P(h) (h = 94: 359); h = 98 with 1 to spare 0.76 P (323); h = 102, whose ring does not hold the
  // next planes, 0.56 P (249, the tallest that fits, which this rule replaced); under 1.6 GB (224
  // planes) 144 / 176 / 208 ran 420 / 430 / 435; on 2048² × 640 at 8× over the cap (240 planes, in
  // core ~410; session 24; the dts-2 tower, which Nz = 640 takes) 128 / 192 / 208 / 224 ran 385 /
  // 400 / 404 / 405 (192 / 208 / 224: 7 / 4 / 2 stages a launch) and 232, whose ring does not hold
  // the next launch's planes, 328. So each height up to the default, or up to twice the default
  // (any tower: until session 26 only one of < 8 B per update, which left the dts-2 tower at 128)
  // while the ring holds 4 stages a launch and 2R planes more (conservative: 224 with 2 ran as well
  // as 208 with 4), is
  // predicted at min(I, P(h)) · e with e = 0.88 where the ring holds the next launch's planes and 2R
  // more, 0.76 where it holds them, else 0.56 (I: the tower's predicted in-core rate,
  // tw_gpu_tower_gain over 0.65 of the DRAM bandwidth in 16 B), and the tallest within 2 % of the
  // best is taken.
  const int nt0 = s->nt;
  int nt_default = 0;  // the default height, where a lower one was taken (the report says so)
  if (!pb->tower_height && s->mode == MODE_PERSISTENT) {
    s->nt = 1;
    schedule();
    tw_gpu_plane_layout L2 = L;
    if ((st = tw_gpu_window_fit(&L2, cap, planes(1, 0), s->N0 + 2 * s->M, &W, &q, &smallest, &sp, err))) return st;
    const int hmax = 2 * nt0;
    int dev = 0;
    tw_gpu_props gp;
    tw_error perr = {};  // a GPU that does not say its bandwidth: the link's pace alone
    const double bw = cudaGetDevice(&dev) == cudaSuccess && tw_gpu_props_get(dev, &gp, &perr) == TW_OK
                          ? tw_gpu_dram_bytes_per_s(gp.mem_clock_khz, gp.bus_bits)
                          : 0.0;
    const double I = bw > 0 && s->gain > 0 ? s->gain * 0.65 * bw / 16.0 : 1e30;
    std::vector<double> rate((size_t)hmax + 1, 0.0);
    double best = 0;
    for (int h = 1; W && h <= hmax; h++) {  // (W: the ring the cap holds, whatever the height)
      s->nt = h;
      schedule();
      if (planes(1, 0) > W || (h > nt0 && planes(4, 1) + 2 * R > W)) break;  // taller rings only grow
      const int next = planes(1, 1);
      const double e = next + 2 * R <= W ? 0.88 : next <= W ? 0.76 : 0.56;
      rate[(size_t)h] = std::min(I, TW_WINDOW_LINK_ONE_WAY_BYTES_PER_S * h / 12.0) * e;
      best = std::max(best, rate[(size_t)h]);
    }
    int h = best > 0 ? hmax : 0;
    while (h > 0 && rate[(size_t)h] < 0.98 * best) h--;
    s->nt = h >= 1 ? h : nt0;  // none fits: the default, lowered below
    if (h >= 1 && h < nt0) nt_default = nt0;
  }
  schedule();
  const tw_gpu_plane_layout L0 = L;
  st = tw_gpu_window_fit(&L, cap, planes(1, 0), s->N0 + 2 * s->M, &W, &q, &smallest, &sp, err);
  if (st) return st;
  // A cap too small for the default height's ring takes the tallest height that fits
  // (tw_window_fit_height).
  if (!W && !pb->tower_height) {
    auto fits = [&](int h) {
      const int keep = s->nt;
      s->nt = h;
      schedule();
      tw_gpu_plane_layout L2 = L0;
      int W2 = 0, q2 = 1, sp2 = 0;
      uint64_t sm2 = 0;
      tw_error e2 = {};
      const bool ok =
          tw_gpu_window_fit(&L2, cap, planes(1, 0), s->N0 + 2 * s->M, &W2, &q2, &sm2, &sp2, &e2) == TW_OK && W2 > 0;
      s->nt = keep;
      schedule();
      return ok;
    };
    const int h = tw_window_fit_height(s->nt, [](void *c, int hh) { return (int)(*(decltype(fits) *)c)(hh); }, &fits);
    nt_default = s->nt, s->nt = h ? h : 1, L = L0;  // none fits: height 1, whose ring the error names
    schedule();
    if ((st = tw_gpu_window_fit(&L, cap, planes(1, 0), s->N0 + 2 * s->M, &W, &q, &smallest, &sp, err))) return st;
  }
  if (!W) {
    char params[64];
    snprintf(params, sizeof params, "dts %d, tower_height %d", s->dts, sc.nt);
    return tw_gpu_window_too_small(err, pb, cap, automatic, sp, smallest, whole, params);
  }
  s->NYd = L.NYd;
  s->SX = L.SX;  // the ring's plane pitch (tw_gpu_window_fit)
  // (in core SX = NYd·NZp, NZp a multiple of 32: the 16-byte band copies need SX, SY = NZp and the
  // ring's origin in multiples of 4 floats, gpu_diamond_tower.cuh: band_coop)
  if (s->SX % 4 || s->NZp % 4)
    return tw_error_set(err, TW_EUNSUPPORTED, "the window's plane pitch %lld floats is not a multiple of 4", s->SX);
  if (s->SX * (2 * R + 2 * r + 2) >= (1LL << 31))
    return tw_error_set(err, TW_EUNSUPPORTED, "an x plane of %d x %d cells is too large for 32-bit in-tower offsets",
                        s->N1, s->N2);
  // As many stages per launch as the ring holds with copies overlapping both ways (a launch
  // boundary drains the GPU for about one tower); at least 1 (then copies may wait).
  s->G = 1;
  for (int G = 2; G <= 64; G++)
    if (planes(G, 1) <= W) s->G = G;
  // TW_DIAMOND_STAGES=N: at most N stages per launch (a test and measurement switch: with one y
  // column of towers and N = 1, every other group has no tower, test_gpu_diamond's window_matrix).
  if (const char *e = getenv("TW_DIAMOND_STAGES"))
    if (atoi(e) >= 1 && atoi(e) < s->G) s->G = atoi(e);
  // c²dt² planes that repeat the next (layers, gradients) are copied on the device by a kernel on
  // the in-stream (tw_gpu_window_in), which cannot start while persistent towers hold every SM: it
  // waited for each launch's end (realistic.cfg at order 2 under 1600M: 371–376 Gcell/s, copy wait
  // 45 %, against 436–437 and 4 % with every plane over the link, session 26; a device-to-device
  // cudaMemcpyAsync is a kernel too and did the same). Persistent towers take every plane over the
  // link; the other modes launch stage by stage and take the repeats (NULL: the window finds them).
  std::vector<unsigned char> over_link;
  if (s->mode == MODE_PERSISTENT) over_link.assign((size_t)s->N0, 0);
  if ((st = tw_gpu_window_create(pb, &L, W, over_link.empty() ? NULL : over_link.data(), &s->win, err))) return st;
  char b1[32], lowered[96] = "";
  if (nt_default)
    snprintf(lowered, sizeof lowered, "; tower height %d (the default %d lowered to fit the ring)", s->nt, nt_default);
  snprintf(s->win_why, sizeof s->win_why, "%s; window of %d x-planes (%s), %d stages per launch%s",
           automatic ? "the grid does not fit the GPU's free memory" : "the grid is above solver.device_memory", W,
           tw_format_bytes((double)tw_gpu_window_bytes(&L, W), b1, sizeof b1), s->G, lowered);
  return TW_OK;
}

// Receivers: per column (first tap, count) over the sorted tap list, and each tap's k. Returns when
// the copies are done (the host tables change with the next shot).
tw_status dia_receivers(dia_state *s, tw_error *err) {
  const tw_problem *pb = s->pb;
  if (!pb->ntap) return TW_OK;
  const colrec empty = {0, 0, 0, 0};
  std::vector<colrec> ct((size_t)s->K0 * (size_t)s->K1, empty);  // (the towers' frame)
  std::vector<int> tk((size_t)pb->ntap);
  for (long t = 0; t < pb->ntap; t++) {
    const int fx = pb->tap[t][s->yx ? 1 : 0], fy = pb->tap[t][s->yx ? 0 : 1];
    colrec &c = ct[(size_t)fx * (size_t)s->K1 + (size_t)fy];
    if (c.count == 0) c.first = (int)t;
    if (c.first + c.count != t)
      return tw_error_set(err, TW_EINTERNAL, "receiver taps are not sorted by cell (tap %ld)", t);
    if (c.count == 0) c.k0 = pb->tap[t][2];
    if (c.count == 1) c.k1 = pb->tap[t][2];
    c.count++;
    tk[(size_t)t] = pb->tap[t][2];
  }
  tw_status st;
  if ((st = tw_dev_ensure(&s->coltap, &s->coltap_cap, ct.size(), "receiver index", err))) return st;
  if ((st = tw_dev_ensure(&s->tapk, &s->tapk_cap, tk.size(), "receiver index", err))) return st;
  TW_CUDA_TRY(err, cudaMemcpyAsync(s->coltap, ct.data(), ct.size() * sizeof(colrec), cudaMemcpyHostToDevice, s->stream));
  TW_CUDA_TRY(err, cudaMemcpyAsync(s->tapk, tk.data(), tk.size() * sizeof(int), cudaMemcpyHostToDevice, s->stream));
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));  // the vectors go out of scope
  return TW_OK;
}

// The blocks of a register tower (either sweep) that can be resident on an SM with its dynamic
// shared memory allowed: 0 where none can.
static tw_status resident_blocks(const void *fn, int threads, size_t smem, int *blocks, tw_error *err) {
  TW_CUDA_TRY(err, cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  TW_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, fn, threads, smem));
  return TW_OK;
}
// A tower over clusters of cl CTAs (its cluster size compiled in): how many clusters can be
// resident on the GPU at once (0: none).
static tw_status resident_clusters(const void *fn, int cl, int threads, size_t smem, int sms, int *clusters,
                                   tw_error *err) {
  TW_CUDA_TRY(err, cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = dim3((unsigned)(cl * sms));
  cfg.blockDim = dim3((unsigned)threads);
  cfg.dynamicSmemBytes = smem;
  TW_CUDA_TRY(err, cudaOccupancyMaxActiveClusters(clusters, fn, &cfg));
  return TW_OK;
}

tw_status dia_init(dia_state *s, const tw_problem *pb, tw_error *err) {
  const tw_grid *g = &pb->g;
  s->pb = pb;
  s->r = pb->st.r;
  if (s->r < 1 || s->r > TW_GPU_RMAX)
    return tw_error_set(err, TW_EUNSUPPORTED, "order %d is not supported (orders 2, 4, 6, 8; use kernel \"cpu\")",
                        pb->order);
  // Without solver.dts, order 2 takes DTS 3 here (the shared default, 4, stays cpu-diamond's): its
  // two-z tower measured 1.03x DTS 4 on zero fields, 1.06x on a wavefield with absorbing layers
  // (H200, docs/performance.md, session 6, with the y-layer path removed in session 34).
  const int dts_gpu = pb->dts ? pb->dts : (pb->order == 2 ? 3 : 0);
  tw_status st = tw_schedule_params(pb->order, dts_gpu, pb->tower_height, &s->dts, &s->nt, err);
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
  s->nb = 0;
  s->bulk = 0;
  int dev = 0;
  TW_CUDA_TRY(err, cudaGetDevice(&dev));
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&s->sms, cudaDevAttrMultiProcessorCount, dev));
  int smem_optin = 0, smem_sm = 0, smem_rsv = 0;
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&smem_rsv, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  TW_CUDA_TRY(err, cudaStreamCreate(&s->stream));
  if (tw_status st0 = tw_gpu_samples_init(&s->samples, err)) return st0;

  // Which implementation: the register tower when (r, dts) is instantiated and one block of
  // NZp / Z threads fits (registers and shared memory), Z = 1 or else 2 z cells per thread; the
  // generic tower otherwise. Environment (tuning and test knobs: the tests compare the
  // implementations bitwise, docs/performance.md their speed): TW_DIAMOND_MODE = persistent
  // (default) | stage | generic; TW_DIAMOND_ZPT = 1 | 2 allows only that Z; TW_DIAMOND_BANDS = 2 | 3
  // the tower of that many band buffers where it has one (else TOWER_L1_ROOM decides; any other
  // value than 2 or 3 leaves the rule out and takes the first tower that fits, 3 buffers);
  // TW_DIAMOND_BULK = 1 | 0 the tower's band by bulk copies (or not) where it has them, whatever
  // the CTA's warps (else at BULK_WARPS); TW_DIAMOND_TRACE = FILE writes the towers' times of the
  // last persistent launch (dia_trace_write).
  const char *me = getenv("TW_DIAMOND_MODE");
  int mode = MODE_PERSISTENT;
  if (me && strcmp(me, "stage") == 0) mode = MODE_STAGE;
  if (me && strcmp(me, "generic") == 0) mode = MODE_GENERIC;
  const char *mtr = getenv("TW_DIAMOND_TRACE");
  s->trace_path = mtr && *mtr ? mtr : NULL;
  const char *mz = getenv("TW_DIAMOND_ZPT");
  const int zforce = mz && *mz ? atoi(mz) : 0;
  const char *mbands = getenv("TW_DIAMOND_BANDS");
  const int bforce = mbands && *mbands ? atoi(mbands) : 0;
  const char *mcl = getenv("TW_DIAMOND_CL");
  const int clforce = mcl && *mcl ? atoi(mcl) : 0;
  const char *mbulk = getenv("TW_DIAMOND_BULK");
  const int bulkforce = mbulk && *mbulk ? atoi(mbulk) != 0 : -1;
  // clusters (the towers of cl > 1): a GPU that launches them (sm_90 on) running the kernel's code
  // for sm_90 or later (a build for older targets compiles its body empty there), never in the host
  // emulation
  int cluster_launch = 0;
  TW_CUDA_TRY(err, cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev));
  cluster_launch = cluster_launch && DIA_CLUSTERS;
  // the entry of reg_kernels of the same tower as entry i with nb band buffers and bulk copies or
  // not (-1: none)
  auto sibling = [](int i, int nb, int bulk) {
    for (int j = 0; j < NREGK; j++)
      if (reg_kernels[j].r == reg_kernels[i].r && reg_kernels[j].dts == reg_kernels[i].dts &&
          reg_kernels[j].z == reg_kernels[i].z && reg_kernels[j].cl == reg_kernels[i].cl &&
          reg_kernels[j].nb == nb && reg_kernels[j].bulk == bulk)
        return j;
    return -1;
  };
  s->fn = NULL;
  s->cl = 1;
  s->clusters = 0;
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
      const int z = rk->z, cl = rk->cl;
      if (rk->r != r || rk->dts != d || (zforce && z != zforce) || (clforce && cl != clforce)) continue;
      if (bforce && rk->nb != bforce && sibling(i, bforce, rk->bulk) >= 0) continue;
      // a warp covers 32·Z cells of z: the column is padded to a whole number of warps (a CTA's
      // part of it, over a cluster)
      const int nzp = (s->N2 + 32 * z * cl - 1) / (32 * z * cl) * (32 * z * cl), threads = nzp / (z * cl);
      // bulk copies at BULK_WARPS warps a CTA (TW_DIAMOND_BULK: always, or never), else the twin
      const int want_bulk = bulkforce >= 0 ? bulkforce : threads == 32 * BULK_WARPS;
      if (rk->bulk ? !want_bulk : want_bulk && sibling(i, rk->nb, 1) >= 0) continue;
      cudaFuncAttributes fa;
      TW_CUDA_TRY(err, cudaFuncGetAttributes(&fa, (const void *)rk->fn));
      const size_t smem = rk->smem(nzp / cl);
      if (cl > 1 && !(cluster_launch && fa.binaryVersion >= 90)) {
        snprintf(why, sizeof why, "Nz = %d needs the tower of dts %d over a cluster of CTAs, which this GPU or "
                 "build cannot launch (sm_90 on)", s->N2, d);
      } else if (threads > fa.maxThreadsPerBlock) {
        snprintf(why, sizeof why, "Nz = %d needs %d threads (%d z per thread%s), the register tower of dts %d (%d "
                 "registers) allows %d", s->N2, threads, z, cl > 1 ? ", 2 CTAs" : "", d, fa.numRegs,
                 fa.maxThreadsPerBlock);
      } else if (smem > (size_t)smem_optin) {
        snprintf(why, sizeof why, "the register tower of dts %d needs %zu B of shared memory for Nz = %d, %d available",
                 d, smem, s->N2, smem_optin);
      } else {
        if (cl > 1) {  // (one CTA an SM: the clusters resident, as blocks an SM)
          int nclu = 0;
          if ((st = resident_clusters((const void *)rk->fn, cl, threads, smem, s->sms, &nclu, err))) return st;
          s->blocks_per_sm = nclu >= 1 ? 1 : 0;
          s->clusters = nclu;
        } else if ((st = resident_blocks((const void *)rk->fn, threads, smem, &s->blocks_per_sm, err))) {
          return st;
        }
        const double footprint = (double)s->blocks_per_sm * (double)(smem + (size_t)smem_rsv);
        if (!bforce && s->blocks_per_sm >= 1 && sibling(i, rk->nb - 1, rk->bulk) > i && footprint > smem_sm - TOWER_L1_ROOM)
          continue;  // the sibling of fewer buffers, next in the table, leaves the L1 more
        if (s->blocks_per_sm >= 1) {
          s->fn = rk->fn;
          s->fn_yx = rk->fn_yx;
          s->smem = smem;
          s->threads = threads;
          s->zpt = z;
          s->cl = cl;
          s->nb = rk->nb;
          s->bulk = rk->bulk;
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
  // The tower DAG's parallelism P (a block's tower-steps over its longest chain's, about N1 / 2R
  // towers): a persistent grid of more workers than P waits on the chain, so the blocks an SM and
  // the share of the predicted gain below that the grid keeps come from tw_gpu_tower_share
  // (docs/performance.md, session 32: on narrow grids the towers ran at 0.33–0.71× the stepwise
  // kernel). TW_DIAMOND_BLOCKS_PER_SM = N (a measurement knob) sets the blocks an SM instead, up to
  // what fits; any grid is correct (tower_kernel).
  double share = 1.0;
  s->yx = 0;
  if (s->fn) {
    tw_schedule sc;
    tw_schedule_init(&sc, s->N0, s->N1, r, s->dts, s->nt);
    s->par = tw_schedule_parallelism(&sc);
    int b = s->blocks_per_sm;
    // (over clusters the workers are the clusters, each tower on cl SMs: the share of as many
    // "SMs" as clusters, one block each)
    share = s->cl > 1 ? tw_gpu_tower_share(r, s->par, s->clusters, 1, &b)
                      : tw_gpu_tower_share(r, s->par, s->sms, s->blocks_per_sm, &b);
    // Across x instead (dia_args.yx): a grid longer in x than in y has more towers at a time when
    // they sweep y. In core only (the window's ring slides along x: decided with the x-y padding
    // both sides need, PX), where the tower has that kernel, and where the share gains 2 %.
    // TW_DIAMOND_SWEEP = x | y forces one (a test and measurement knob; y where it can run).
    const char *sw = getenv("TW_DIAMOND_SWEEP");
    if (s->fn_yx && !(sw && strcmp(sw, "x") == 0)) {
      tw_schedule sy;
      tw_schedule_init(&sy, s->N1, s->N0, r, s->dts, s->nt);
      const double py = tw_schedule_parallelism(&sy);
      int by = 1, bmax_y = 0;
      cudaFuncAttributes fy;
      TW_CUDA_TRY(err, cudaFuncGetAttributes(&fy, (const void *)s->fn_yx));
      if ((st = resident_blocks((const void *)s->fn_yx, s->threads, s->smem, &bmax_y, err))) return st;
      const double sy_share = bmax_y >= 1 ? tw_gpu_tower_share(r, py, s->sms, bmax_y, &by) : 0.0;
      uint64_t wc = 0;
      int wa = 0;
      const double need_yx = 3.0 * sizeof(float) * (double)(s->N0 + 2 * s->PX) * (double)(s->N1 + 2 * s->PX) * s->NZp;
      if ((st = tw_gpu_window_decide(pb, need_yx, &wc, &wa, err))) return st;
      if (bmax_y >= 1 && !wc && ((sw && strcmp(sw, "y") == 0) || sy_share > 1.02 * share)) {
        s->yx = 1;
        s->fn = s->fn_yx;
        s->regs = fy.numRegs;
        s->blocks_per_sm = bmax_y;
        s->par = py;
        share = sy_share;
        b = by;
        s->PY = s->PX;  // the grid's y is the frame's x: the x padding on both axes
        s->NYd = s->N1 + 2 * s->PY;
      }
    }
    const char *mb = getenv("TW_DIAMOND_BLOCKS_PER_SM");
    if (mb && atoi(mb) >= 1) b = atoi(mb) < s->blocks_per_sm ? atoi(mb) : s->blocks_per_sm;
    if (s->mode == MODE_PERSISTENT) s->blocks_per_sm = b;
  }
  s->K0 = s->yx ? s->N1 : s->N0;
  s->K1 = s->yx ? s->N0 : s->N1;
  // Without a request (TW_DIAMOND_MODE), DiamondTorre runs where it wins: a register tower that
  // fits and moves clearly fewer bytes than gpu-stepwise. Otherwise (no tower fits this Nz, or
  // only a DTS-1 tower of order ≥ 4, which moves more) the stepwise kernel does the work: the
  // same numbers bitwise, at the better speed; report() says so. The generic tower is slower
  // than either (docs/performance.md) and runs only on request.
  // Absorbing layers on the z faces put damped cells in every column, so every tower carries a
  // warp on the damped path and the step barrier paces the whole tower by it: there a tower must
  // move at most 0.62 of gpu-stepwise's bytes (order 2, dts 3: 1.85x, session 6).
  // Against the stepwise kernel a tower that passes the model still wins only on tall enough
  // columns of wide enough grids, and by how much depends on the GPU's memory (estimate.c:
  // tw_gpu_tower_gain at a share of 1, times tw_gpu_tower_share; a tower of Nz ≤ 128 is one or two
  // warps per block, 4–8 blocks an SM, order 4's, at 254 registers, one block of up to 8 warps per
  // SM): on an H200 order 2 from ~400–560 columns across the sweep at Nz 257–512, ~590–790 at Nz
  // 129–256, ~1 400–2 150 at Nz 65–128, ~3 300 at Nz 64 (1.5–2.1x where every block has a tower),
  // and order 4 at Nz 65–128 from ~2 500–2 600 columns across (1.08–1.14x), at Nz ~166–256 from
  // ~950–1 100 (1.11–1.32x) and at Nz ~380–512 over a cluster from ~550–600 (1.04–1.14x; session
  // 42); on an H100
  // the ratios are 1.29x higher (measured in session 12: order 2 from Nz 80, 1.15x, order 4 from Nz
  // 160, 1.09–1.31x; order 4's points up to Nz 128 and those over a cluster, measured on an H200
  // only, are not scaled). TW_DIAMOND_MODE runs any tower on request.
  const int z_damped = pb->g.lo[2] > 0 || pb->g.hi[2] > 0;
  tw_gpu_props gp;
  tw_error gerr = {};  // a GPU that does not say its memory clock is predicted as an H200 (bw = 0)
  const double bw =
      tw_gpu_props_get(dev, &gp, &gerr) == TW_OK ? tw_gpu_dram_bytes_per_s(gp.mem_clock_khz, gp.bus_bits) : 0.0;
  // (and at the towers' height in this run's calls: tw_gpu_tower_height_factor)
  s->gain = s->fn ? tw_gpu_tower_gain(s->r, g->N[2], bw) * share * tw_gpu_tower_height_factor(s->nt, pb->call_steps)
                  : 0.0;
  const int tower_pays = s->gain >= TW_TOWER_MIN_GAIN;
  const double margin = z_damped ? Z_DAMPED_MARGIN : MODEL_MARGIN;
  if (!(me && *me) && (!s->fn || !tower_pays || s->bpu > margin * STEPWISE_BPU)) {
    char why[sizeof s->why];
    if (s->fn && s->r > 2)
      snprintf(why, sizeof why, "no register tower of order %d is faster than the stepwise kernel", pb->order);
    else if (s->fn && !tower_pays && share < 1.0)
      snprintf(why, sizeof why, "%d x %d columns: %.0f towers run at a time for %d SMs, order %d's tower (dts %d) "
               "predicted at %.2fx the stepwise kernel on this GPU", s->N0, s->N1, s->par, s->sms, pb->order, s->dts,
               s->gain);
    else if (s->fn && !tower_pays)
      snprintf(why, sizeof why, "Nz = %d: order %d's tower (dts %d) predicted at %.2fx the stepwise kernel on this "
               "GPU (%.2f TB/s%s)", g->N[2], pb->order, s->dts, s->gain, bw / 1e12, bw > 0 ? "" : ": unknown, as an H200");
    else if (s->fn && z_damped)
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
  double t = tw_wall_seconds();  // the parts of the set-up (run report), each waited for
  if (wcap) {
    if ((st = window_setup(s, pb, wcap, automatic, need, err))) return st;
    tw_phases_add(pb->phases, "backend: window (all of it)", tw_wall_seconds() - t);
  } else {
    // Fields: zero everywhere (the padding stays zero), c²dt² copied into the interior.
    const long long org = (long long)s->PX * s->SX + (long long)s->PY * s->NZp;
    s->cells = cells;
    for (int a = 0; a < 3; a++) {
      size_t cap = 0;
      if ((st = tw_dev_ensure(&s->alloc[a], &cap, cells, "gpu-diamond fields", err))) return st;
      TW_CUDA_TRY(err, cudaMemsetAsync(s->alloc[a], 0, cells * sizeof(float), s->stream));
    }
    TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
    tw_phases_add(pb->phases, "backend: fields (cudaMalloc, zero)", tw_wall_seconds() - t);
    s->p[0] = s->alloc[0] + org;
    s->p[1] = s->alloc[1] + org;
    s->c2 = s->alloc[2] + org;
    const int N[3] = {s->N0, s->N1, s->N2};
    if ((st = tw_gpu_upload_grid(pb->c2dt2, N, s->alloc[2], s->NZp, s->NYd, s->PX, s->PY, s->stream, pb->phases,
                                 err)))
      return st;
  }
  t = tw_wall_seconds();
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
  zero_range(pb->a[2], s->N2, &s->zz0, &s->zz1);

  if ((st = dia_receivers(s, err))) return st;
  tw_phases_add(pb->phases, "backend: damping, receivers", tw_wall_seconds() - t);

  // Persistent mode: done flags for the tallest block, the ticket counter.
  if (s->mode == MODE_PERSISTENT) {
    tw_schedule sc;
    tw_schedule_init(&sc, s->K0, s->K1, r, s->dts, s->nt);
    const size_t nflags = (size_t)(sc.s_hi - sc.s_lo + 1) * (size_t)(sc.kmax + 1);
    if ((st = tw_dev_ensure(&s->done, &s->done_cap, nflags, "tower flags", err))) return st;
    TW_CUDA_TRY(err, cudaMemsetAsync(s->done, 0, nflags * sizeof(int), s->stream));
    cap = 0;
    if ((st = tw_dev_ensure(&s->ticket, &cap, (size_t)2, "tower tickets", err))) return st;
    TW_CUDA_TRY(err, cudaMemsetAsync(s->ticket, 0, 2 * sizeof(unsigned), s->stream));
    s->issued[0] = s->issued[1] = 0;
  }
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  if (s->mode == MODE_PERSISTENT && s->win && (st = window_streams(s, err))) return st;
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
    const int x = pb->inj[c][s->yx ? 1 : 0], y = pb->inj[c][s->yx ? 0 : 1];  // (the towers' frame)
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
  // (the towers' frame: the grid's with x and y exchanged where they sweep y, dia_args.yx)
  A.yx = s->yx;
  A.SX = s->yx ? s->NZp : s->SX;
  A.SY = s->yx ? s->SX : s->NZp;
  if (s->yx) std::swap(A.ax, A.ay);
  A.NZp = s->NZp, A.N0 = s->K0, A.N1 = s->K1, A.N2 = s->N2, A.fs = pb->free_surface;
  A.st = pb->st;
  A.R = s->R;
  A.xz0 = s->xz0, A.xz1 = s->xz1, A.yz0 = s->yz0, A.yz1 = s->yz1;
  if (s->yx) std::swap(A.xz0, A.yz0), std::swap(A.xz1, A.yz1);
  A.zz0 = s->zz0, A.zz1 = s->zz1;
  A.coltap = s->coltap, A.tapk = s->tapk, A.taps = s->taps;
  A.ntap = pb->ntap, A.interval = pb->interval;
  const int R = s->R, r = s->r, ny = 2 * R + 2 * r + 1;
  if ((2 * R + 2 * r) * ny <= DIA_OFF_MAX)  // else no register tower runs (the generic one)
    for (int dx = -r; dx < 2 * R + r; dx++)
      for (int dy = -R - r; dy <= R + r; dy++)
        A.boff[(dx + r) * ny + dy + R + r] = (dx * A.SX + dy * A.SY) * (long long)sizeof(float);
  A.done = s->done;
  return A;
}

// The persistent launch's workers: clusters of s->cl blocks (one block of each takes the tickets
// for all), or blocks where a tower is one CTA.
long dia_workers(const dia_state *s) { return s->cl > 1 ? (long)s->clusters : (long)s->blocks_per_sm * s->sms; }

// TW_DIAMOND_TRACE (a diagnostic: it synchronizes after every persistent launch): the launch's
// towers, one line each — ticket, stage, tower, the times (ns from the first ticket) it was taken,
// its parents were done and it was done, its SM — after a header with the geometry and layers.
// The file holds the last launch; scripts/diamond-trace.py reads it (critical path, waits).
tw_status dia_trace_write(dia_state *s, const dia_args &A, long ntow, cudaStream_t stream, tw_error *err) {
  std::vector<unsigned long long> tr((size_t)ntow * 4);
  TW_CUDA_TRY(err, cudaStreamSynchronize(stream));
  TW_CUDA_TRY(err, cudaMemcpy(tr.data(), s->trace, tr.size() * sizeof(tr[0]), cudaMemcpyDeviceToHost));
  FILE *f = fopen(s->trace_path, "w");
  if (!f) return tw_error_set(err, TW_EIO, "TW_DIAMOND_TRACE=%s: cannot open for writing", s->trace_path);
  unsigned long long t0 = ~0ull;
  for (long t = 0; t < ntow; t++) t0 = tr[(size_t)t * 4] < t0 ? tr[(size_t)t * 4] : t0;
  fprintf(f, "# gpu-diamond trace: r %d dts %d R %d Z %d h %d N0 %d N1 %d N2 %d xz %d %d yz %d %d s_top %d kmax %d "
          "blocks %ld threads %d cl %d\n# ticket stage tower taken ready done sm\n",
          s->r, s->dts, s->R, s->zpt, A.h, A.N0, A.N1, s->N2, A.xz0, A.xz1, A.yz0, A.yz1, A.s_top, A.kmax,
          dia_workers(s), s->threads, s->cl);
  for (long t = 0; t < ntow; t++) {
    const unsigned long long *e = &tr[(size_t)t * 4];
    int st, kk;
    decode_ticket(A, (int)t, &st, &kk);
    fprintf(f, "%ld %d %d %llu %llu %llu %llu\n", t, st, kk, e[0] - t0, e[1] - t0, e[2] - t0, e[3]);
  }
  const int bad = ferror(f);
  if (fclose(f) || bad) return tw_error_set(err, TW_EIO, "TW_DIAMOND_TRACE=%s: write failed", s->trace_path);
  return TW_OK;
}

// The towers of stages s_top down to s_bot of one block (A: the block's arguments) on `stream`: one
// persistent launch taking tickets from counter c (0 in core; a window group's parity), or one
// launch per stage.
tw_status launch_stages(dia_state *s, const tw_schedule &sc, dia_args A, int s_top, int s_bot, cudaStream_t stream,
                        int c, tw_error *err) {
  if (s->mode == MODE_PERSISTENT) {
    long ntow = 0;
    for (int stg = s_top; stg >= s_bot; stg--) ntow += tw_stage_towers(&sc, stg);
    A.persistent = 1;
    A.s_top = s_top;
    A.ntowers = (int)ntow;
    A.ticket = s->ticket + c;
    A.ticket_base = s->issued[c];
    long grid = dia_workers(s);
    if (grid > ntow) grid = ntow;
    s->ran[c] = grid > 0;
    s->base[c] = s->issued[c];
    if (s->trace_path && grid > 0) {
      tw_status st = tw_dev_ensure(&s->trace, &s->trace_cap, (size_t)ntow * 4, "tower trace", err);
      if (st) return st;
      A.trace = s->trace;
    }
    if (grid > 0) {
      DIA_LAUNCH(s->fn, dim3((unsigned)(grid * s->cl)), dim3((unsigned)s->threads), s->smem, stream, A);
      TW_CUDA_LAUNCHED(err, "gpu-diamond tower kernel (persistent)");
      s->issued[c] += (unsigned)(ntow + grid);  // each worker's last take finds no tower (tower_body)
      if (A.trace) return dia_trace_write(s, A, ntow, stream, err);
    }
    return TW_OK;
  }
  for (int stg = s_top; stg >= s_bot; stg--) {
    const int ntow = tw_stage_towers(&sc, stg);
    if (!ntow) continue;
    A.s = stg;
    DIA_LAUNCH(s->fn, dim3((unsigned)(ntow * s->cl)), dim3((unsigned)s->threads), s->smem, stream, A);
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
tw_status win_group_launch(void *ctx, int g, int lo, cudaStream_t stream, tw_error *err) {
  const win_group &c = *(const win_group *)ctx;
  dia_state *s = c.s;
  dia_args A = *c.A;
  A.p0 = tw_gpu_window_origin(s->win, 0, lo);
  A.p1 = tw_gpu_window_origin(s->win, 1, lo);
  A.c2 = tw_gpu_window_origin(s->win, 2, lo);
  int top, bot;
  tw_window_group_stages(c.p, g, &top, &bot);
  if (!s->stream2) return launch_stages(s, *c.sc, A, top, bot, stream, 0, err);
  // Two streams: group g on stream g % 2 (run_plan), so that its blocks take the SMs that group
  // g − 1's last towers leave idle; its towers wait for their parents in g − 1 by the done flags,
  // which the block shares (A.epoch). A waiting block holds its SM, so g must not start before
  // g − 1 has a block running: then g − 1 finishes every tower it has (they wait only for g − 2,
  // finished before g on this stream, and for towers its own running blocks took), whatever the
  // order in which the SMs go to the two grids. Hence the wait for g − 1's first ticket.
  const int me = g % 2, prev = 1 - me;
  if (g > 0 && s->ran[prev]) {
    const CUresult r = s->wait32((CUstream)stream, (CUdeviceptr)(s->ticket + prev), s->base[prev] + 1u,
                                 CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS)
      return tw_error_set(err, TW_ECUDA, "cuStreamWaitValue32 failed (%s:%d): CUresult %d", __FILE__, __LINE__, (int)r);
  }
  tw_status st = launch_stages(s, *c.sc, A, top, bot, stream, me, err);
  if (st) return st;
  TW_CUDA_TRY(err, cudaEventRecord(s->launched[me], stream));
  // The planes run_plan sends back after this group (on this stream) may have been written by
  // g − 1's towers too: its launch must be complete.
  if (g > 0) TW_CUDA_TRY(err, cudaStreamWaitEvent(stream, s->launched[prev], 0));
  return TW_OK;
}

tw_status dia_advance_impl(dia_state *s, long t0, long n, float *taps, tw_error *err) {
  const tw_problem *pb = s->pb;
  long first, count;
  tw_status st = tw_gpu_advance_begin(pb, s->level, t0, n, &s->taps, &s->taps_cap, &s->samples, &first, &count, err);
  if (st) return st;

  // The blocks of this call and their source events, uploaded once.
  s->hev.clear();
  s->ev_block.clear();
  std::vector<tw_schedule> blocks;
  for (long done = 0; done < n;) {
    tw_schedule sc;
    tw_schedule_init(&sc, s->K0, s->K1, s->r, s->dts, tw_block_height(done, n, s->nt));
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

  // The ticket counters from zero at every call (launch_stages counts on them; a mismatch left by a
  // failed call would skip towers silently): stream2 follows s->stream at each block's start.
  if (s->mode == MODE_PERSISTENT) {
    TW_CUDA_TRY(err, cudaMemsetAsync(s->ticket, 0, 2 * sizeof(unsigned), s->stream));
    s->issued[0] = s->issued[1] = 0;
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
      const cudaStream_t streams[2] = {s->stream, s->stream2};
      const int ns = s->stream2 ? 2 : 1;
      if (ns == 2) {  // the block starts on stream2 after everything before it on s->stream
        TW_CUDA_TRY(err, cudaEventRecord(s->launched[0], s->stream));
        TW_CUDA_TRY(err, cudaStreamWaitEvent(s->stream2, s->launched[0], 0));
      }
      st = tw_gpu_window_run_plan(s->win, streams, ns, &p, win_group_launch, &ctx, err);
      if (st && ns == 2) {  // what stream2 has queued goes before anything later on s->stream
        if (cudaEventRecord(s->launched[1], s->stream2) || cudaStreamWaitEvent(s->stream, s->launched[1], 0))
          cudaStreamSynchronize(s->stream2);
        cudaGetLastError();
      }
      if (st) return st;
      if (ns == 2) {  // and ends on s->stream after stream2's work
        TW_CUDA_TRY(err, cudaEventRecord(s->launched[1], s->stream2));
        TW_CUDA_TRY(err, cudaStreamWaitEvent(s->stream, s->launched[1], 0));
      }
    } else if ((st = launch_stages(s, sc, A, sc.s_hi, sc.s_lo, s->stream, 0, err))) {
      return st;
    }
    tb += sc.nt;
    if (b + 1 < blocks.size() && (st = tw_gpu_samples_mark(&s->samples, pb, s->stream, tb, err))) return st;
  }
  st = tw_gpu_advance_end(s->stream, &s->samples, pb, first, count, taps, s->taps, s->win, w0, &s->win_s, err);
  if (st) return st;
  s->level = t0 + n;
  s->dirty = 1;
  return TW_OK;
}

// A new shot (problem.h): both levels to zero — on the device, padding included (the towers keep it
// +0 anyway), or the window's host levels — and the receivers' index again. The sources need
// nothing: their events are built from the problem's tables at every advance call. The done flags
// need nothing either: every block has a new epoch.
tw_status dia_reset(dia_state *s, unsigned what, tw_error *err) {
  tw_status st = s->dirty ? tw_gpu_levels_zero(s->win, s->alloc, s->cells, s->stream, err) : TW_OK;
  if (!st && (what & TW_RESET_RECEIVERS)) st = dia_receivers(s, err);
  if (st) return st;
  TW_CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  s->level = 0;
  s->dirty = 0;
  s->win_s = 0;
  return TW_OK;
}

// The device arrays as the shared GPU helpers see them (pointers at cell (0, 0, 0)).
tw_dev_layout dia_layout(const dia_state *s) {
  tw_dev_layout L;
  L.N[0] = s->N0, L.N[1] = s->N1, L.N[2] = s->N2;
  L.Nyp = s->NYd, L.Nzp = s->NZp, L.sx = s->SX, L.fs = s->pb->free_surface;
  return L;
}

tw_status dia_extract_impl(dia_state *s, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err) {
  const tw_dev_layout L = dia_layout(s);
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

// Checkpoints: the towers keep nothing between advance calls but the two levels (sources are
// added inside the updates; the padding stays zero), so the planes are the whole state.
tw_status dd_save(void *state, int x0, int nx, float *cur, float *prev, tw_error *err) {
  dia_state *s = (dia_state *)state;
  tw_status st = s->sw ? tw_backend_gpu_stepwise.save(s->sw, x0, nx, cur, prev, err)
                       : tw_gpu_checkpoint_planes(dia_layout(s), s->p, s->win, s->level, x0, nx, cur, prev, 0,
                                                  s->stream, err);
  if (st) tw_error_prefix(err, "gpu-diamond: checkpoint");
  return st;
}

tw_status dd_load(void *state, long t, int x0, int nx, const float *cur, const float *prev, tw_error *err) {
  dia_state *s = (dia_state *)state;
  // (load: the host buffers are only read)
  tw_status st = s->sw ? tw_backend_gpu_stepwise.load(s->sw, t, x0, nx, cur, prev, err)
                       : tw_gpu_checkpoint_planes(dia_layout(s), s->p, s->win, t, x0, nx, (float *)cur, (float *)prev,
                                                  1, s->stream, err);
  if (st) return tw_error_prefix(err, "gpu-diamond: loading a checkpoint");
  s->level = t;
  s->dirty = 1;
  return TW_OK;
}

tw_status dd_reset(void *state, unsigned what, tw_error *err) {
  dia_state *s = (dia_state *)state;
  tw_status st = s->sw ? tw_backend_gpu_stepwise.reset(s->sw, what, err) : dia_reset(s, what, err);
  if (st) tw_error_prefix(err, "gpu-diamond: new shot");
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
    rep->c2_planes_reused = sub.c2_planes_reused;
    rep->copy_wait_frac = sub.copy_wait_frac;
    snprintf(rep->note, sizeof rep->note, "gpu-diamond ran the stepwise kernel (%.150s); %.320s", s->why, sub.note);
    return;
  }
  if (s->mode == MODE_GENERIC) {
    // the figures first, the reasons after: a bench line shows the note's first 160 characters
    snprintf(rep->note, sizeof rep->note, "gpu-diamond generic tower: order %d, dts %d (R = %d), tower height %d, "
             "%d threads, %d registers (%s)%s%s", s->pb->order, s->dts, s->R, s->nt, s->threads, s->regs, s->why,
             s->win ? "; " : "", s->win ? s->win_why : "");
    window_report(s, rep);
    return;
  }
  char lowered[200] = "";
  if (s->dts != s->dts_req) snprintf(lowered, sizeof lowered, "; dts %d asked: %s", s->dts_req, s->why);
  char win[sizeof s->win_why + 2] = "";
  if (s->win) snprintf(win, sizeof win, "; %s", s->win_why);
  window_report(s, rep);
  char gain[112] = "";
  if (s->gain > 0)
    snprintf(gain, sizeof gain, "; predicted %.2fx the stepwise kernel on this GPU (%.0f towers at a time)", s->gain,
             s->par);
  // the figures first, the reasons after: a bench line shows the note's first 160 characters (the
  // tower height had fallen off it behind a lowered dts's reason)
  snprintf(rep->note, sizeof rep->note, "gpu-diamond register tower, %s: order %d, dts %d (R = %d), tower height %d, "
           "%d threads x %d z%s, %d registers, %d band buffers%s, %d blocks/SM on %d SMs%s%s%s%s",
           s->mode == MODE_PERSISTENT ? "persistent" : "stage launches", s->pb->order, s->dts, s->R, s->nt, s->threads,
           s->zpt, s->cl > 1 ? " x 2 CTAs (a cluster)" : "", s->regs, s->nb, s->bulk ? " by bulk copies" : "",
           s->blocks_per_sm, s->sms,
           s->yx ? ", sweeping y" : "", lowered, gain, win);
}

void dd_destroy(void *state) { dia_free((dia_state *)state); }

tw_status dd_find_nonfinite(void *state, long long *count, int cell[3], tw_error *err) {
  dia_state *s = (dia_state *)state;
  if (s->sw) return tw_backend_gpu_stepwise.find_nonfinite(s->sw, count, cell, err);
  tw_status st = tw_gpu_find_nonfinite(dia_layout(s), s->p[s->level % 2], s->win, &s->nf, s->stream, count, cell, err);
  if (st) tw_error_prefix(err, "gpu-diamond: non-finite check");
  return st;
}

}  // namespace

extern "C" tw_status tw_gpu_diamond_randomize(void *state, uint64_t seed, tw_error *err) {
  dia_state *s = (dia_state *)state;
  if (!s->sw) return tw_error_set(err, TW_EUNSUPPORTED, "gpu-diamond: random fields only in the stepwise fallback");
  return tw_gpu_stepwise_randomize(s->sw, seed, err);
}

extern "C" {
extern const tw_backend_ops tw_backend_gpu_diamond;  // registered in backends.c
const tw_backend_ops tw_backend_gpu_diamond = {
    "gpu-diamond", 1, dd_create, dd_advance, dd_extract, dd_block_steps, dd_reset, dd_report, dd_destroy, dd_save,
    dd_load, dd_find_nonfinite,
};
}
