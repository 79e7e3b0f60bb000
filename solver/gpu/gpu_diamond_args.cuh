// gpu_diamond_args.cuh — the kernels' arguments, events, receiver records and the small device
// helpers they share
// Part of the gpu-diamond kernel: included by gpu_diamond.cu only (one translation unit, so
// that the templates see each other); the header of gpu_diamond.cu explains the design.
#pragma once

#include "gpu_diamond_base.cuh"
#include "gpu_common.cuh"
#include "schedule.h"

namespace {

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
  long long SX;                  // floats per x plane (NYd·NZp, or a window ring's pitch)
  long long SY;                  // floats per y column (NZp)
  // x and y are the towers' frame: x the axis the stages sweep. yx: the frame is the grid's with x
  // and y exchanged (SX = NZp, SY = the grid's x pitch; ax, ay, N0, N1, the zero ranges, events and
  // receiver records exchanged too), so that a grid long in x has its towers across x (dia_init).
  // The fields stay in the grid's layout; only the Laplacian's terms keep the grid's order.
  int yx;
  int NZp, N0, N1, N2, fs;
  tw_stencil st;
  long long t0;  // level at the start of the block
  int h, R;      // block height; tile size (the generic tower's R is a run-time value)
  int s_hi, s_lo, kmax, s;  // stage range, tower range, the stage of a stage launch
  int s_top;                // persistent mode: the first stage of this launch (s_hi, or a window group's)
  int xz0, xz1, yz0, yz1;   // ax == 0 on [xz0, xz1), ay == 0 on [yz0, yz1)
  int zz0, zz1;             // az == 0 on [zz0, zz1) (z is never swapped with x or y: YX)
  const dia_event *ev;      // this block's events, sorted by (key, tau)
  int nev;
  const colrec *coltap;     // [N0·N1]
  const int *tapk;          // k of each tap
  float *taps;              // [sample − first][ntap]
  long long ntap, first;
  int interval;
  // Offsets in bytes of the columns (dx, dy), dx ∈ [−r, 2R + r), dy ∈ [−R − r, R + r], of a register
  // tower from its frame's base: boff[(dx + r)·(2R + 2r + 1) + dy + R + r] = 4·(dx·SX + dy·SY).
  // 64-bit and in bytes, so that an address is the base plus the offset (ULDC.64 once a column,
  // IADD3 and IADD3.X an address): from 32-bit offsets in floats the compiler made each 64-bit in
  // uniform registers first (ULDC, USHF, UIMAD.WIDE, UMOV), and the order-4 tower's 24 stores a step
  // of the columns that leave D took 135 instructions, 4.2 an update (docs/performance.md, session 44).
  long long boff[DIA_OFF_MAX];
  int *done;  // persistent mode: per-tower done flags (a block's launches share them: A.epoch)
  // Persistent mode: the launch's ticket counter, not reset between launches (only at each advance
  // call): this launch's tickets are *ticket − ticket_base (mod 2^32), and every block takes one past
  // the last tower before it exits, so a launch of n towers on g blocks moves the counter by exactly
  // n + g (gpu_diamond.cu: launch_stages; win_group_launch waits for a window group's first ticket).
  unsigned *ticket, ticket_base;
  int epoch, persistent, ntowers;
  // persistent mode, TW_DIAMOND_TRACE: per ticket the times (ns) it was taken, its parents were
  // done and it was done, and the SM (dia_trace_write); NULL: no trace
  unsigned long long *trace;
};

__device__ __forceinline__ float *lvl(const dia_args &A, long long m) { return (m & 1) ? A.p1 : A.p0; }

// Steps [tlo, thi) in which a tower of stage s has columns inside the grid (schedule.h:
// tw_tower_steps, which the launch's parallelism estimate counts too).
__host__ __device__ __forceinline__ void active_steps(int R, int r, int s, int N0, int h, int *tlo, int *thi) {
  tw_tower_steps(R, r, s, N0, h, tlo, thi);
}

// The first event index in [lo, hi] whose key is >= key, searched by a whole warp (every lane
// active, key the same in all: the towers' blocks are whole warps, TW_GPU_ZALIGN): 32 probes a
// round, so one round per factor of 32 in hi − lo, not one dependent load per halving. A tower's
// set-up waits on this chain: a binary search took ~10 L2 round trips at a realistic call's ~740
// events (one trilinear source, 92 steps; docs/performance.md, sessions 39–40).
__device__ __forceinline__ int warp_lower_bound(const dia_args &A, int key, int lo, int hi) {
  const int lane = threadIdx.x & 31;
  // invariant: the index sought is in [lo, hi] (hi ≤ nev)
  while (hi - lo > 32) {
    const int w = (hi - lo + 31) >> 5;  // lane j probes lo + j·w, the start of piece j
    const int i = lo + lane * w;
    const int c = __popc(__ballot_sync(0xffffffffu, i < hi && A.ev[i].key < key));  // probes below it
    if (c == 0) return lo;
    const int top = lo + c * w;  // the first probe at or past it (or past hi)
    lo += (c - 1) * w + 1;
    hi = top < hi ? top : hi;
  }
  return lo + __popc(__ballot_sync(0xffffffffu, lo + lane < hi && A.ev[lo + lane].key < key));
}

// The events of one tower: [e0, e1) with ev.key == key (called by whole warps, as above).
__device__ __forceinline__ void tower_events(const dia_args &A, int key, int *e0, int *e1) {
  *e0 = warp_lower_bound(A, key, 0, A.nev);
  *e1 = warp_lower_bound(A, key + 1, *e0, A.nev);
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
// groups PZ words apart (exch_group: PZ = Z·SS, SS odd, so that the threads of a warp hit distinct
// banks, per half-warp for 8-byte accesses; or, where the exchange goes by 16-byte accesses of four
// columns (exch_vec), PZ = 4·m, m odd: distinct banks per quarter warp), column c of a row at word
// Z·c of its group.
template <int Z>
__host__ __device__ __forceinline__ int xaddr(int row, int col, int PZ) { return (row / Z) * PZ + row % Z + Z * col; }

// Record the taps of the columns of a frame (origin X0f, Y0) that reached a sample level (row `row`
// of the taps buffer), from an exchange buffer (xaddr) whose columns are laid out by gather_slot:
// column-parallel over the block's threads, thread k taking columns myc, myc + blockDim.x, … with
// myc = gather_column(k) (a few columns per warp, not all in warp 0: the warp that gathers is late
// at the next barrier). `mine` is the record of column myc, loaded a step ahead so that its
// latency is hidden. The CTA holds the z cells [zlo, zlo + nzc) of the column (over a cluster each
// CTA records the taps of its part; its rows are local, z − zlo + H).
__device__ __forceinline__ int gather_column(int k) { return (k & 31) * (int)(blockDim.x / 32) + (k >> 5); }
template <int r, int R, int Z, int H>
__device__ __forceinline__ void gather_taps(const dia_args &A, const float *xbb, int PZ, int X0f, int Y0, long long row,
                                            int myc, int myslot, const colrec &mine, int zlo, int nzc) {
  constexpr int ND = 2 * R * R;
  if (myc >= ND) return;
  for (int c = myc; c < ND; c += blockDim.x) {
    const colrec ct = c == myc ? mine : load_colrec<R>(A, c, X0f, Y0);
    if (ct.count == 0) continue;
    const int slot = c == myc ? myslot : gather_slot<r, R>(c);
    for (int j = 0; j < ct.count; j++) {
      const int kz = (j == 0 ? ct.k0 : j == 1 ? ct.k1 : A.tapk[ct.first + j]) - zlo;
      if ((unsigned)kz < (unsigned)nzc) A.taps[row * A.ntap + ct.first + j] = xbb[xaddr<Z>(kz + H, slot, PZ)];
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

}  // namespace
