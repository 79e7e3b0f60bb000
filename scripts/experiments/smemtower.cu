// smemtower.cu — a measurement, not part of the solver (#16, docs/performance.md "Session 16", "Session 17"): a
// DiamondTorre tower whose state lives in shared memory, with its geometry and its band — the step
// after smemtile.cu, which measured the same update on a fixed tile.
//
// One CTA runs one tower of a stage (solver/plan/schedule.h's geometry in rotated coordinates a = x + y,
// b = x − y: at local step τ the tower updates the diamond a ∈ [A, A + 2R), b ∈ [B, B + 2R),
// a ≡ b mod 2, A = 2Rp + τr, B = 2Rq + τr) for nt steps; a thread updates X diamond columns (X = 2:
// two neighbours in x, sharing their x-line) over ZC / ZS of their z cells, z columns of ZC cells
// (zero above and below: the z split over a cluster is smemtile.cu's). Shared memory holds both
// time levels of the tower's square with its halo, a ∈ [A − r, A + 2R + r) and likewise b, in a
// ring of S rows of S/2 slots (S = 2R + 2r; (a, b) in row a mod S, slot (b mod S)/2): the square
// moves by (r, r) a step, so the slots that its low edges leave are the ones its high edges take.
// Each step:
//   - the columns that left the diamond the step before are stored (both levels: their last),
//   - the band for the next step comes in by cp.async: every column of the next square that this
//     step does not compute (a strip of width 2r: the diamond's new columns and the halo around
//     them), at level τ + 1,
//   - every thread updates its columns (c²dt² from global memory, the other values from the ring).
// At the end the diamond's columns are stored. The kernel runs one stage's towers (independent:
// schedule.h), with every column outside the towers at the levels the arrays hold; the host
// replays the same stage tower by tower on the two arrays with tw_stencil.h's update (as cpu-diamond
// runs a tower) and the result is compared bit for bit.
// Towers of height 32 and 128 (their difference: a step's own cost; the host checks height 32).
// The layouts compared: all() at the end (docs/performance.md, sessions 16 and 17).
//   nvcc -O3 -arch=sm_90 -std=c++17 -fmad=false -ftz=true -I common -o smemtower scripts/experiments/smemtower.cu
//   ./smemtower [reps]     ONLY=mask: the layouts whose bit is set; DIAG=1: also without parts of
//                          the band (timing only, wrong bits); PROF=1 NOCHECK=1: one launch each,
//                          for ncu; EMU=1: no GPU, the kernel's threads emulated on the host
//                          (Tower) against the host's stage, bit for bit; BLOCK=mask: whole
//                          blocks instead (blocks(): persistent CTAs over every tower's slabs,
//                          or clusters over whole towers, the column split among their CTAs)
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../solver/plan/schedule.h"
#include "ck.cuh"
#include "smemupdate.cuh"

constexpr int ZOFF = 4;  // a column's cell k = 0 at float 4 of its slot: r ≤ 4 zeros below and above

// The tower's layout. Template parameters: r, R (the diamond a ∈ [A, A + 2R), b ∈ [B, B + 2R)),
// ZC (the z cells of a column), X (diamond columns a thread: 1, or 2 adjacent in x — (a, b) and
// (a + 1, b + 1) — sharing the x-neighbours they both read), ZS (threads a column: its z cells split
// in ZS runs, so that X = 2 keeps enough warps).
// Shared memory: per level S rows (a mod S) of S/2 slots ((b mod S) / 2) of PZ floats, a row padded
// by 4δ floats. Lanes: thread-rows of R cells (X = 1: a row of the diamond; X = 2: a pair of rows)
// follow each other without padding, so a quarter-warp of 8 lanes may hold the end of one
// thread-row and the start of the next; δ shifts each ring row's banks so that a lane's float4 group
// is u·(its lane) + const (u = PZ / 4, odd) for every access of a step, whatever the neighbour offset:
// 8 consecutive lanes never share a bank group (conditions: S/2 a multiple of 8, X·(u·S/2 + δ) ≡ u·R
// mod 8, S·δ ≡ 0 mod 8 for the ring's wrap).
template <int r, int R, int ZC, int X, int ZS>
struct TG {
  static constexpr int S = 2 * R + 2 * r, SH = S / 2;
  static constexpr int NC = 2 * R * R;  // the diamond's columns
  static constexpr int PZ = (ZC + 2 * ZOFF) / 4 % 2 ? ZC + 2 * ZOFF : ZC + 2 * ZOFF + 4, U = PZ / 4;
  static constexpr int delta() {
    for (int d = 0; d < 8; d++)
      if ((X * (U * SH + d) - U * R) % 8 == 0 && (S * d) % 8 == 0) return d;
    return -1;
  }
  static constexpr int D = delta(), RP = SH * PZ + 4 * D, BUF = S * RP;
  static constexpr int NCT = NC / X, NT = NCT * ZS, ZCT = ZC / ZS;  // threads; z cells a thread
  static_assert(SH % 8 == 0, "S / 2 must be a multiple of 8 (banks across the ring's wrap in b)");
  static_assert(D >= 0, "no row skew keeps the lanes' banks apart");
  static_assert(ZC % (4 * ZS) == 0 && NT <= 1024, "layout");
  static_assert(2 * BUF * 4 <= 232448, "two levels exceed the shared memory of a CTA");
};

__host__ __device__ inline size_t gcol(int N1, int zc, int x, int y) { return ((size_t)x * N1 + y) * zc; }
__host__ __device__ inline int pmod(int v, int s) { return (v % s + s) % s; }
// v ∈ [−s, 2s) → v mod s
__host__ __device__ __forceinline__ int wrap(int v, int s) { return v < 0 ? v + s : v >= s ? v - s : v; }

// The device's asynchronous copy and read-only load, and the host's stand-ins for the emulation (a
// CTA run thread after thread between its barriers, EMU=1).
__host__ __device__ __forceinline__ void cp16(float *dst, const float *src) {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((uint32_t)__cvta_generic_to_shared(dst)), "l"(src)
               : "memory");
#else
  memcpy(dst, src, 16);
#endif
}
__host__ __device__ __forceinline__ float4 ldg4(const float4 *p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

// The band's columns, the same every step relative to the tower's corner (A, B): the columns of the
// next square (side 2R + 2r from (A, B)) that a step does not compute, α ≥ 2R or β ≥ 2R ("load"), and
// the columns that left the diamond, α < r or β < r from (A − r, B − r) ("store"), α ≡ β mod 2. The
// host lists them; a thread takes items j = t, t + NT, … (item j: column j / NCH, chunk j mod NCH of
// 16 bytes) and keeps them packed in registers (α | β << 8 | chunk << 16), so that a step's band costs
// a few instructions an item instead of enumerating the strips (a first version did: 25 of its 76
// instructions per update). A loaded column brings the z window of the next step, ZC cells and,
// where the slab leans (LZ > 0), a chunk of halo either side (outside that the ring keeps zeros).
template <class G, int r, int R, int ZC, int LZ>
struct Band {
  static constexpr int S = 2 * R + 2 * r, NCH = LZ ? ZC / 4 + 2 : ZC / 4;
  static constexpr int NL = (S * S - 4 * R * R) / 2, NS = (4 * R * R - (2 * R - r) * (2 * R - r)) / 2;
  static constexpr int LI = (NL * NCH + G::NT - 1) / G::NT, SI = (NS * (ZC / 4) + G::NT - 1) / G::NT;
};
template <int r, int R>
static std::vector<int> band_cells(bool load) {
  std::vector<int> v;
  const int n = load ? 2 * R + 2 * r : 2 * R;
  for (int al = 0; al < n; al++)
    for (int be = 0; be < n; be++)
      if (((al ^ be) & 1) == 0 && (load ? (al >= 2 * R || be >= 2 * R) : (al < r || be < r))) v.push_back(al | be << 8);
  return v;
}

// Columns of any length NZ: z slabs. With LZ = 0 a tower's column is its ZC cells (NZ = ZC: the z
// split of a longer column over a cluster is smemtile.cu's). With LZ = 4 the column is cut into
// slabs of ZC cells that lean down LZ cells a step: slab c computes z ∈ [L, L + ZC), L = c·ZC − τ·LZ,
// clipped to [0, NZ), and a CTA runs its tower's slabs one after another, each over the steps where
// it meets the grid — the z counterpart of the towers' lean in x and y. LZ ≥ r: what slab c reads
// at step τ below L was computed by slab c − 1 at step τ − 1, and slab c − 1's later steps wrote
// only below that. Per step each diamond column brings in its new bottom, level τ + 1 at [L − 8, L)
// (slab c − 1's top; 8 ≥ LZ + r cells, so that where r < LZ the next step's p^{n−1} below L − r is
// there too), and stores its own top for slab c + 1, level τ + 1 at [L + ZC − 8, L + ZC). A
// column's z window is a ring of PZ floats in its slot (z at (z + ZOFF) mod PZ), live over
// ZC + LZ + r ≤ PZ − 4 cells. Cells outside [0, NZ) are zero in the ring, never computed or stored.

// One thread's program: the kernel runs it on every thread of a CTA, with a barrier between the
// phases; the emulation (EMU=1) runs each phase for every thread in turn. Within a phase a thread
// writes only what no other thread of the phase reads or writes (the band's slots are outside the
// diamond the update reads in that buffer, the leaving columns are read before the barrier that lets
// the band take their slots), so both orders give the same bits.
//
// CLU (whole blocks only): the column split over the CTAs of a thread-block cluster instead of
// slabs — CTA `rank` of nr holds z ∈ [rank·ZC, rank·ZC + ZC) of every column of the tower for all
// its steps (NZ = nr·ZC), and a column's z halo (r ≤ 4 cells, a float4 either side) is read from the
// neighbouring CTA's ring through distributed shared memory when the window is formed: the ring's
// layout is the same in every CTA of the cluster, so the halo of slot o is slot o of rank ± 1. One
// cluster barrier a step (instead of the CTA's) makes level τ + 1 of every rank visible before step
// τ + 1 reads it, and keeps a rank from overwriting level τ (its buffer for τ + 2) while another
// still reads it.
template <int r, int R, int ZC, int X, int ZS, int C2M, int LZ, bool FULL = false, bool PHYS = false, bool CLU = false>
struct Tower {
  using G = TG<r, R, ZC, X, ZS>;
  using BD = Band<G, r, R, ZC, LZ>;
  static constexpr int S = G::S, ZCT = G::ZCT, NW = ZCT + 2 * ZOFF, K0 = -r, K1 = r + X - 1, NQ = ZCT / 4;
  static constexpr int PZ = G::PZ;
  static_assert(LZ == 0 || (LZ == 4 && r <= LZ && ZC + LZ + 4 <= PZ - 4 && ZC >= 16), "lean");
  static_assert(!CLU || (LZ == 0 && FULL && r <= 4), "a cluster's column: whole blocks without slabs");
  // c²dt² (C2M): 0 every run of a step loaded at the step's start, 1 a step ahead, 2 a run ahead
  static constexpr bool PRE = C2M == 1;
  float *sm, *g0, *g1;
  const float *c2g;
  int N0, N1, NZ, nt, diag;                                 // N0: FULL only
  const float *ax = nullptr, *ay = nullptr, *az = nullptr;  // PHYS: damping per axis (null: none)
  int fs = 0;                                               // PHYS: a free surface at z = 0
  int t, zh, da, db, z0, A0, B0, As, Bs;                    // As, Bs: the square's corner mod S at this step
  int sl;                                                   // the slab (LZ > 0), the rank (CLU)
  int nr = 1;                                               // CLU: the cluster's CTAs
  float *const *peer = nullptr;                             // CLU, emulation: every rank's shared memory
  int lit[BD::LI], sit[BD::SI];                             // this thread's band items, −1: none
  float4 c2n[X][C2M == 2 ? 1 : NQ];                         // C2M 1: the next step's runs; 2: the next run
  float4 c2r[X][NQ];                                        // this step's (C2M 0, 1)

  // level m in buffer m & 1 and in array m & 1 (level −1 in g1); selects, not arrays, so that
  // nothing is indexed at run time (local memory)
  __host__ __device__ __forceinline__ float *buf(int i) const { return i ? sm + G::BUF : sm; }
  __host__ __device__ __forceinline__ float *gl(int i) const { return i ? g1 : g0; }
  // a column's slot in the ring: row ra, b slot rb (both already reduced mod S); z within it: zpos
  __host__ __device__ __forceinline__ int soff(int ra, int rb) const { return ra * G::RP + (rb >> 1) * G::PZ; }
  __host__ __device__ __forceinline__ int zpos(int z) const {
    return LZ ? pmod(z + ZOFF, PZ) : CLU ? z - sl * ZC + ZOFF : z + ZOFF;
  }
  __host__ __device__ __forceinline__ int Lz(int tau) const { return LZ ? sl * ZC - tau * LZ : CLU ? sl * ZC : 0; }
  // CLU: a float4 at offset o of rank q's shared memory (the same layout in every rank)
  __host__ __device__ __forceinline__ float4 peer4(int q, int o) const {
#ifdef __CUDA_ARCH__
    return *reinterpret_cast<const float4 *>(cooperative_groups::this_cluster().map_shared_rank(sm + o, q));
#else
    return *reinterpret_cast<const float4 *>(peer[q] + o);
#endif
  }
  __host__ __device__ __forceinline__ bool inside(int z) const { return z >= 0 && z < NZ; }  // a chunk at z
  // FULL: whether column (a, b) is in the grid (towers at its edges are clipped: outside, zeros)
  __host__ __device__ __forceinline__ bool colin(int a, int b) const {
    if (!FULL) return true;
    const int x = (a + b) / 2, y = (a - b) / 2;
    return x >= 0 && x < N0 && y >= 0 && y < N1;
  }
  __host__ __device__ __forceinline__ bool ownin(int tau, int e) const {
    return colin(A0 + tau * r + da + e, B0 + tau * r + db + e);
  }
  // an item's global offset from its square's corner column (x, y) = ((A + B) / 2, (A − B) / 2) — a's
  // and b's sums and differences are even —, so that a step adds one base instead of forming x and y
  // per item (kept as offsets in registers, they spilled: 288 threads cap a thread at 168 registers)
  __host__ __device__ __forceinline__ int goff(int it) const {
    const int al = it & 255, be = it >> 8 & 255;
    return ((al + be) >> 1) * (N1 * NZ) + ((al - be) >> 1) * NZ;
  }
  __host__ __device__ __forceinline__ size_t corner(int tau) const {
    const int A = A0 + tau * r, B = B0 + tau * r;
    return ((size_t)((A + B) / 2) * N1 + (A - B) / 2) * NZ;
  }
  // the global column of this thread's column e at step τ, and its slot
  __host__ __device__ __forceinline__ size_t gown(int tau, int e) const {
    const int a = A0 + tau * r + da + e, b = B0 + tau * r + db + e;
    return gcol(N1, NZ, (a + b) / 2, (a - b) / 2);
  }
  __host__ __device__ __forceinline__ int sown(int tau, int e) const {
    return soff(pmod(A0 + tau * r + da + e, S), pmod(B0 + tau * r + db + e, S));
  }
  __host__ __device__ __forceinline__ float4 c2at(int tau, int e, int qq) const {
    const int z = Lz(tau) + z0 + 4 * qq;
    if ((LZ && !inside(z)) || !ownin(tau, e)) return make_float4(0.f, 0.f, 0.f, 0.f);
    return ldg4(reinterpret_cast<const float4 *>(c2g + ((diag & 4) ? gcol(N1, NZ, 0, t) : gown(tau, e)) + z));
  }
  __host__ __device__ __forceinline__ static void zero4(float *p) {
    *reinterpret_cast<float4 *>(p) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  // a chunk of 4 cells at z into the ring slot: from the array, or zeros outside the grid
  __host__ __device__ __forceinline__ void fetch(float *slot, const float *gcolumn, int z) const {
    if (!LZ || inside(z))
      cp16(slot + zpos(z), gcolumn + z);
    else
      zero4(slot + zpos(z));
  }

  // What the thread keeps; shared memory must be zero before the first slab comes in.
  __host__ __device__ __forceinline__ void setup(float *sm_, float *g0_, float *g1_, const float *c2g_, int N0_,
                                                 int N1_, int NZ_, int nt_, int diag_, int t_,
                                                 const int *__restrict__ lcells, const int *__restrict__ scells) {
    sm = sm_, g0 = g0_, g1 = g1_, c2g = c2g_, N0 = N0_, N1 = N1_, NZ = NZ_, nt = nt_, diag = diag_, t = t_;
    const int L = t % G::NCT;
    da = X == 1 ? L / R : 2 * (L / R), db = X == 1 ? 2 * (L % R) + (da & 1) : 2 * (L % R);
    zh = t / G::NCT, z0 = zh * ZCT;  // this thread's first z cell in the slab
#pragma unroll
    for (int i = 0; i < BD::LI; i++) {
      const int j = t + i * G::NT;
      lit[i] = j < BD::NL * BD::NCH ? lcells[j / BD::NCH] | (j % BD::NCH) << 16 : -1;
    }
#pragma unroll
    for (int i = 0; i < BD::SI; i++) {
      const int j = t + i * G::NT;
      sit[i] = j < BD::NS * (ZC / 4) ? scells[j / (ZC / 4)] | (j % (ZC / 4)) << 16 : -1;
    }
  }
  __host__ __device__ __forceinline__ void physics(const float *ax_, const float *ay_, const float *az_, int fs_) {
    ax = ax_, ay = ay_, az = az_, fs = fs_;
  }
  // The tower T(p, q) of stage s = p + q, k = p − q (schedule.h).
  __host__ __device__ __forceinline__ void place(int s, int k) { A0 = R * (s + k), B0 = R * (s - k); }
  // The steps [τs, τe) where slab c meets the grid (all of them with LZ = 0).
  __host__ __device__ static void slab_steps(int c, int NZ, int nt, int *ts, int *te) {
    if (!LZ) {
      *ts = 0, *te = nt;
      return;
    }
    constexpr int lz = LZ ? LZ : 1;  // (LZ = 0 returned above)
    const int d = c * ZC - NZ;       // L < NZ from τ > d / LZ; L + ZC > 0 until τ < (c + 1)·ZC / LZ
    *ts = d < 0 ? 0 : d / lz + 1;
    const int e = ((c + 1) * ZC + lz - 1) / lz;
    *te = e < nt ? e : nt;
  }
  __host__ __device__ static int slabs(int NZ, int nt) { return LZ ? (NZ + (nt - 1) * LZ + ZC - 1) / ZC : 1; }

  // Slab c from step τs: the square of τs at level τs (its z window), the diamond's level τs − 1.
  __host__ __device__ __forceinline__ void begin_slab(int c, int ts) {
    sl = c, As = pmod(A0 + ts * r, S), Bs = pmod(B0 + ts * r, S);
#pragma unroll
    for (int e = 0; e < X; e++)
#pragma unroll
      for (int qq = 0; qq < (C2M == 2 ? 1 : NQ); qq++)
        c2n[e][qq] = C2M ? c2at(ts, e, qq) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __host__ __device__ __forceinline__ void load_square(int ts, int nthr) const {
    const int n = 2 * R + 2 * r, cols = n * n, L = Lz(ts), zb = LZ ? L - 4 : L;
    const int A = A0 + ts * r, B = B0 + ts * r;
    for (int j = t; j < cols * BD::NCH; j += nthr) {
      const int i = j / BD::NCH, c = j % BD::NCH, al = i / n, be = i % n;
      if ((al ^ be) & 1) continue;
      const int a = A - r + al, b = B - r + be, x = (a + b) / 2, y = (a - b) / 2, z = zb + 4 * c;
      const int so = soff(pmod(a, S), pmod(b, S));
      const bool in = colin(a, b), dia = al >= r && al < r + 2 * R && be >= r && be < r + 2 * R && z >= L && z < L + ZC;
      if (!in) {
        zero4(buf(ts & 1) + so + zpos(z));
        if (dia) zero4(buf((ts + 1) & 1) + so + zpos(z));
        continue;
      }
      fetch(buf(ts & 1) + so, gl(ts & 1) + gcol(N1, NZ, x, y), z);
      if (dia) fetch(buf((ts + 1) & 1) + so, gl((ts + 1) & 1) + gcol(N1, NZ, x, y), z);
    }
  }

  // Step τ before its barrier: this step's c²dt² asked for, the columns that left the diamond at this
  // step (in it at τ − 1) stored, both levels (their last), and the top of step τ − 1 (LZ).
  __host__ __device__ __forceinline__ void step_out(int tau, int ts) {
    const int cb = tau & 1, nb = cb ^ 1;
    if (C2M != 2)
#pragma unroll
      for (int e = 0; e < X; e++)
#pragma unroll
        for (int qq = 0; qq < NQ; qq++) c2r[e][qq] = PRE ? c2n[e][qq] : c2at(tau, e, qq);
    if (PRE && tau + 1 < nt)
#pragma unroll
      for (int e = 0; e < X; e++)
#pragma unroll
        for (int qq = 0; qq < NQ; qq++) c2n[e][qq] = c2at(tau + 1, e, qq);
    if (tau > ts && !(diag & 2)) {
      const size_t gb = corner(tau) - (size_t)r * N1 * NZ;  // from (A − r, B − r)
      const int zl = Lz(tau - 1);                           // what step τ − 1 computed
#pragma unroll
      for (int i = 0; i < BD::SI; i++)
        if (sit[i] >= 0) {
          const int al = sit[i] & 255, be = sit[i] >> 8 & 255, z = zl + 4 * (sit[i] >> 16);
          if ((LZ && !inside(z)) || !colin(A0 + tau * r - r + al, B0 + tau * r - r + be)) continue;
          const int sl = soff(wrap(As - r + al, S), wrap(Bs - r + be, S)) + zpos(z);
          const size_t g = gb + goff(sit[i]) + z;
          *reinterpret_cast<float4 *>(gl(tau & 1) + g) = *reinterpret_cast<const float4 *>(buf(cb) + sl);
          *reinterpret_cast<float4 *>(gl((tau - 1) & 1) + g) = *reinterpret_cast<const float4 *>(buf(nb) + sl);
        }
      if (LZ && zh == ZS - 1)  // the top of what step τ − 1 computed: slab c + 1's bottom at its step τ − 1
#pragma unroll
        for (int e = 0; e < X; e++) {
          if (!ownin(tau - 1, e)) continue;
          const size_t g = gown(tau - 1, e);
          const int so = sown(tau - 1, e);
#pragma unroll
          for (int h = 2; h >= 1; h--) {
            const int z = zl + ZC - 4 * h;
            if (inside(z))
              *reinterpret_cast<float4 *>(gl(tau & 1) + g + z) =
                  *reinterpret_cast<const float4 *>(buf(cb) + so + zpos(z));
          }
        }
    }
  }

  // Step τ after the barrier: the band of step τ + 1 asked for, into the buffer of level τ + 1 —
  // every column of the square of τ + 1 (from (A, B), side 2R + 2r) that this step does not compute:
  // its top strip of width 2r, the diamond's new columns and the halo around them (the halo's side
  // corners hold other towers' columns, read at a new level every step); with LZ, the diamond's new
  // bottom too —, then this thread's X columns updated, z cells L + z0 … L + z0 + ZCT − 1.
  __host__ __device__ __forceinline__ void step_in(int tau, int te, const Wt<r> &w) {
    const int cb = tau & 1, nb = cb ^ 1, L = Lz(tau);
    if (tau + 1 < te && !(diag & 1)) {
      const size_t gb = corner(tau);
      const int zb = LZ ? L - LZ - 4 : L;  // the window of step τ + 1 from its first chunk
#pragma unroll
      for (int i = 0; i < BD::LI; i++)
        if (lit[i] >= 0) {
          const int al = lit[i] & 255, be = lit[i] >> 8 & 255, z = zb + 4 * (lit[i] >> 16);
          float *slot = buf(nb) + soff(wrap(As + al, S), wrap(Bs + be, S));
          if (colin(A0 + tau * r + al, B0 + tau * r + be))
            fetch(slot, gl((tau + 1) & 1) + gb + goff(lit[i]), z);
          else
            zero4(slot + zpos(z));
        }
      if (LZ && zh == 0)  // the new bottom of this thread's columns
#pragma unroll
        for (int e = 0; e < X; e++) {
          const int so = sown(tau, e);
          if (!ownin(tau, e)) {
            zero4(buf(nb) + so + zpos(L - 8)), zero4(buf(nb) + so + zpos(L - 4));
            continue;
          }
          const size_t g = gown(tau, e);
          fetch(buf(nb) + so, gl((tau + 1) & 1) + g, L - 8);
          fetch(buf(nb) + so, gl((tau + 1) & 1) + g, L - 4);
        }
    }
    // offsets (k1, k2) from the first column (a, b): ring row and slot of a + k1 and b + k2, k ∈ [K0, K1]
    int ro[K1 - K0 + 1], co[K1 - K0 + 1];
#pragma unroll
    for (int kk = K0; kk <= K1; kk++) {
      ro[kk - K0] = wrap(As + da + kk, S) * G::RP;
      co[kk - K0] = (wrap(Bs + db + kk, S) >> 1) * G::PZ;
    }
    const auto off = [&](int k1, int k2) { return ro[k1 - K0] + co[k2 - K0]; };
    // z positions of the window's chunks (chunk q: z = L + z0 − 4 + 4q; run qq is chunk qq + 1)
    int zq[NW / 4];
#pragma unroll
    for (int q = 0; q < NW / 4; q++) zq[q] = q == 0 ? zpos(L + z0 - 4) : LZ ? wrap(zq[q - 1] + 4, PZ) : zq[q - 1] + 4;
    const float *cur = buf(cb);
    float *nxt = buf(nb);
    // the x-line (a + j, b + j), j ∈ [−r, r + X − 1]: the own columns are j = 0 … X − 1
    float win[X][NW];
#pragma unroll
    for (int e = 0; e < X; e++)
#pragma unroll
      for (int q = 0; q < NW / 4; q++) {
        const float4 v = *reinterpret_cast<const float4 *>(cur + off(e, e) + zq[q]);
        win[e][4 * q] = v.x, win[e][4 * q + 1] = v.y, win[e][4 * q + 2] = v.z, win[e][4 * q + 3] = v.w;
      }
    // CLU: the z halo from the ranks below and above — their top / bottom float4 of the same slot, at
    // level τ (complete in every rank since the last cluster barrier); the ring's own halo positions
    // stay zero, as they must where no rank lies beyond (z < 0, z ≥ NZ). (Copied into the ring in
    // step_out instead, where fewer registers are live, it spilled more: 292 against 112 bytes at
    // order 8, 75.3 against 107.0 Gcell/s.)
    if (CLU)
#pragma unroll
      for (int e = 0; e < X; e++) {
        const int o = (cur - sm) + off(e, e);
        if (zh == 0 && sl > 0) {
          const float4 v = peer4(sl - 1, o + ZC + ZOFF - 4);
          win[e][0] = v.x, win[e][1] = v.y, win[e][2] = v.z, win[e][3] = v.w;
        }
        if (zh == ZS - 1 && sl < nr - 1) {
          const float4 v = peer4(sl + 1, o + ZOFF);
          constexpr int q = NW - 4;
          win[e][q] = v.x, win[e][q + 1] = v.y, win[e][q + 2] = v.z, win[e][q + 3] = v.w;
        }
      }
    // a free surface: the window's cells above z = 0 are ghosts, −p at the mirror cell (cpu_update.c's
    // image method), formed in registers from the window itself (nothing else reads above z = 0)
    const int zw = L + z0 - ZOFF;  // the window's first z
    if (PHYS && fs && zw < 0)
#pragma unroll
      for (int e = 0; e < X; e++)
#pragma unroll
        for (int j = 0; j < NW; j++)
#pragma unroll
          for (int m = 1; m <= r; m++)
            if (j + 2 * m < NW && zw + j == -m) win[e][j] = m < NZ ? -win[e][j + 2 * m] : 0.0f;
    // damping: (ax + ay) of this thread's columns (tw_damping's order: (ax + ay) + az)
    float axy[X];
    bool und[X];  // the column is outside the x and y layers
#pragma unroll
    for (int e = 0; e < X; e++) {
      axy[e] = 0.0f, und[e] = true;
      if (PHYS && ax && ownin(tau, e)) {
        const int a = A0 + tau * r + da + e, b = B0 + tau * r + db + e;
        const float fx = ax[(a + b) / 2], fy = ay[(a - b) / 2];
        axy[e] = tw_damping_xy(fx, fy), und[e] = fx == 0.0f && fy == 0.0f;
      }
    }
#pragma unroll
    for (int qq = 0; qq < NQ; qq++) {
      const int zo = zq[qq + 1];
      // this run's c²dt²; C2M 2: the next run's (or the next step's first) asked for
      float4 c2q[X];
#pragma unroll
      for (int e = 0; e < X; e++) {
        c2q[e] = C2M == 2 ? c2n[e][0] : c2r[e][qq];
        if (C2M == 2)
          c2n[e][0] = qq + 1 < NQ    ? c2at(tau, e, qq + 1)
                      : tau + 1 < nt ? c2at(tau + 1, e, 0)
                                     : make_float4(0.f, 0.f, 0.f, 0.f);
      }
      if (LZ && !inside(L + z0 + 4 * qq)) {  // outside the grid: stays zero
#pragma unroll
        for (int e = 0; e < X; e++) zero4(nxt + off(e, e) + zo);
      } else {  // (FULL: a column outside the grid has zeros in its slot and c²dt² = 0, so its update is +0)
        float4 line[K1 - K0 + 1];
#pragma unroll
        for (int j = K0; j <= K1; j++)
          line[j - K0] = j >= 0 && j < X ? make_float4(win[j][4 * qq + ZOFF], win[j][4 * qq + ZOFF + 1],
                                                       win[j][4 * qq + ZOFF + 2], win[j][4 * qq + ZOFF + 3])
                                         : *reinterpret_cast<const float4 *>(cur + off(j, j) + zo);
#pragma unroll
        for (int e = 0; e < X; e++) {
          float4 xm[r + 1], xp[r + 1], ym[r + 1], yp[r + 1];
#pragma unroll
          for (int m = 1; m <= r; m++) {
            xm[m] = line[e - m - K0], xp[m] = line[e + m - K0];
            ym[m] = *reinterpret_cast<const float4 *>(cur + off(e - m, e + m) + zo);
            yp[m] = *reinterpret_cast<const float4 *>(cur + off(e + m, e - m) + zo);
          }
          float *o = nxt + off(e, e) + zo;
          const float4 pm4 = *reinterpret_cast<const float4 *>(o), c24 = c2q[e];
          const float pmv[4] = {pm4.x, pm4.y, pm4.z, pm4.w}, c2s[4] = {c24.x, c24.y, c24.z, c24.w};
          bool damped = false;  // a run of 4 cells damped where any of its cells is (exact at a = 0)
          float zs[4] = {0.f, 0.f, 0.f, 0.f};
          if (PHYS && ax) {
            const float4 z4 = ldg4(reinterpret_cast<const float4 *>(az + L + z0 + 4 * qq));
            zs[0] = z4.x, zs[1] = z4.y, zs[2] = z4.z, zs[3] = z4.w;
#pragma unroll
            for (int i = 0; i < 4; i++) damped |= !(und[e] && zs[i] == 0.0f);
          }
          *reinterpret_cast<float4 *>(o) =
              damped ? update4<r, NW, true>(win[e], 4 * qq + ZOFF, xm, xp, ym, yp, pmv, c2s, w, axy[e], zs)
                     : update4<r>(win[e], 4 * qq + ZOFF, xm, xp, ym, yp, pmv, c2s, w);
        }
      }
    }
    As = wrap(As + r, S), Bs = wrap(Bs + r, S);
  }

  // The diamond of the slab's last step τl: levels τl + 1 and τl over what it computed.
  __host__ __device__ __forceinline__ void finish(int tl) const {
#pragma unroll
    for (int e = 0; e < X; e++) {
      if (!ownin(tl, e)) continue;
      const size_t g = gown(tl, e);
      const int so = sown(tl, e);
#pragma unroll
      for (int c = 0; c < NQ; c++) {
        const int z = Lz(tl) + z0 + 4 * c;
        if (LZ && !inside(z)) continue;
        *reinterpret_cast<float4 *>(gl((tl + 1) & 1) + g + z) =
            *reinterpret_cast<const float4 *>(buf((tl + 1) & 1) + so + zpos(z));
        *reinterpret_cast<float4 *>(gl(tl & 1) + g + z) = *reinterpret_cast<const float4 *>(buf(tl & 1) + so + zpos(z));
      }
    }
  }
};

template <int r, int R, int ZC, int X, int ZS, int C2M, int LZ>
__global__ void __launch_bounds__(TG<r, R, ZC, X, ZS>::NT, 1)
    tower_kernel(float *__restrict__ g0, float *__restrict__ g1, const float *__restrict__ c2g, Wt<r> w, int N1, int NZ,
                 int s, int k0, int nt, int diag, const int *__restrict__ lcells, const int *__restrict__ scells) {
  using G = TG<r, R, ZC, X, ZS>;
  using TT = Tower<r, R, ZC, X, ZS, C2M, LZ>;
  extern __shared__ float4 sm4[];
  float *sm = reinterpret_cast<float *>(sm4);
  for (int i = threadIdx.x; i < 2 * G::BUF; i += blockDim.x) sm[i] = 0.0f;
  TT T;
  T.setup(sm, g0, g1, c2g, 0, N1, NZ, nt, diag, threadIdx.x, lcells, scells);
  T.place(s, k0 + 2 * blockIdx.x);
  const int nsl = TT::slabs(NZ, nt);
  for (int c = 0; c < nsl; c++) {
    int ts, te;
    TT::slab_steps(c, NZ, nt, &ts, &te);
    if (ts >= te) continue;
    T.begin_slab(c, ts);
    __syncthreads();  // the slab before read out (and the zeros written) before this one comes in
    T.load_square(ts, blockDim.x);
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    for (int tau = ts; tau < te; tau++) {
      T.step_out(tau, ts);
      if (tau > ts) __syncthreads();  // the leaving columns read out before the band takes their slots
      T.step_in(tau, te, w);
      asm volatile("cp.async.wait_all;" ::: "memory");
      __syncthreads();
    }
    T.finish(te - 1);
  }
}

// The same CTAs on the host, thread after thread between the barriers: the kernel's indexing checked
// without a GPU (EMU=1; the kernel's own run is what the timings and the device check are of).
template <int r, int R, int ZC, int X, int ZS, int C2M, int LZ>
static void emulate(std::vector<float> &g0, std::vector<float> &g1, const std::vector<float> &c2, const Wt<r> &w,
                    int N1, int NZ, int s, int k0, int ntow, int nt, const int *lcells, const int *scells) {
  using G = TG<r, R, ZC, X, ZS>;
  using TT = Tower<r, R, ZC, X, ZS, C2M, LZ>;
  std::vector<float> sm(2 * (size_t)G::BUF);
  std::vector<TT> T(G::NT);
  for (int b = 0; b < ntow; b++) {
    std::fill(sm.begin(), sm.end(), 0.0f);
    for (int t = 0; t < G::NT; t++) {
      T[t].setup(sm.data(), g0.data(), g1.data(), c2.data(), 0, N1, NZ, nt, 0, t, lcells, scells);
      T[t].place(s, k0 + 2 * b);
    }
    for (int c = 0; c < TT::slabs(NZ, nt); c++) {
      int ts, te;
      TT::slab_steps(c, NZ, nt, &ts, &te);
      if (ts >= te) continue;
      for (int t = 0; t < G::NT; t++) T[t].begin_slab(c, ts);
      for (int t = 0; t < G::NT; t++) T[t].load_square(ts, G::NT);
      for (int tau = ts; tau < te; tau++) {
        for (int t = 0; t < G::NT; t++) T[t].step_out(tau, ts);
        for (int t = 0; t < G::NT; t++) T[t].step_in(tau, te, w);
      }
      for (int t = 0; t < G::NT; t++) T[t].finish(te - 1);
    }
  }
}

// The host: the same stage, tower after tower, on the two arrays (cpu-diamond's way).
template <int r, int R>
static void host_stage(std::vector<float> &g0, std::vector<float> &g1, const std::vector<float> &c2, int N1, int NZ,
                       int s, int k0, int ntow, int nt, const tw_stencil &st) {
  std::vector<float> *gl[2] = {&g0, &g1};
  for (int i = 0; i < ntow; i++) {
    const int k = k0 + 2 * i, p = (s + k) / 2, q = (s - k) / 2;
    for (int tau = 0; tau < nt; tau++) {
      const std::vector<float> &cur = *gl[tau & 1];
      std::vector<float> &nxt = *gl[(tau + 1) & 1];
      for (int da = 0; da < 2 * R; da++)
        for (int db = da & 1; db < 2 * R; db += 2) {
          const int a = 2 * R * p + tau * r + da, b = 2 * R * q + tau * r + db, x = (a + b) / 2, y = (a - b) / 2;
          for (int z = 0; z < NZ; z++) {
            const size_t o = gcol(N1, NZ, x, y) + z;
            // z neighbours: zero outside [0, NZ)
            float zb[2 * 8 + 1];
            for (int m = -r; m <= r; m++) zb[m + r] = (z + m >= 0 && z + m < NZ) ? cur[o + m] : 0.0f;
            const float lap = tw_laplacian(r, &st, &cur[o], (long)N1 * NZ, &cur[o], NZ, &zb[r], 1);
            nxt[o] = tw_cell_update_undamped(cur[o], nxt[o], lap, c2[o]);
          }
        }
    }
  }
}

static bool g_emu;  // EMU=1: the host's emulation of the kernel against the host's stage, no GPU

// Two levels of random fields and a c²dt² in [0.05, 0.15) (stable for the test weights).
static void random_fields(size_t n, unsigned seed, std::vector<float> &h0, std::vector<float> &h1,
                          std::vector<float> &hc2) {
  h0.resize(n), h1.resize(n), hc2.resize(n);
  // a 64-bit hash of (seed, i) (splitmix64's finalizer): rand() took ~30 s for the 1.6 G values of
  // a 1024² × 512 block
  const auto u = [seed](size_t i) {
    uint64_t z = (uint64_t)seed << 40 ^ i * 0x9E3779B97F4A7C15ull;
    z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9ull, z = (z ^ z >> 27) * 0x94D049BB133111EBull;
    return (float)((z ^ z >> 31) >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  };
  for (size_t i = 0; i < n; i++) {
    h0[i] = u(3 * i) - 0.5f;
    h1[i] = u(3 * i + 1) - 0.5f;
    hc2[i] = 0.05f + 0.1f * u(3 * i + 2);
  }
}
static const char *c2m_name(int c2m) { return c2m == 1 ? " c2 a step ahead" : c2m == 2 ? " c2 a run ahead" : ""; }

template <int r, int R, int ZC, int X, int ZS, int C2M = 0, int LZ = 0>
static void run(int reps, int nt, const cudaDeviceProp &prop, int diag = 0, int NZ = ZC) {
  using G = TG<r, R, ZC, X, ZS>;
  using BD = Band<G, r, R, ZC, LZ>;
  const int ntow = g_emu ? 6 : prop.multiProcessorCount;  // one wave
  if (!LZ) NZ = ZC;
  // stage s = 4 and towers k0, k0 + 2, …: every square of every step inside the grid
  const int s = 4, k0 = 4;
  const int N0 = R * s + (nt - 1) * r + 2 * R + 2 * r + 8;
  const int N1 = R * (k0 + 2 * ntow) + 2 * R + 8;
  const size_t n = (size_t)N0 * N1 * NZ;
  std::vector<float> h0, h1, hc2;
  random_fields(n, 777 + r, h0, h1, hc2);
  tw_stencil st;
  Wt<r> w;
  test_weights(w, st);
  const std::vector<int> lc = band_cells<r, R>(true), sc = band_cells<r, R>(false);
  if ((int)lc.size() != BD::NL || (int)sc.size() != BD::NS) {
    fprintf(stderr, "band lists: %zu / %zu columns, expected %d / %d\n", lc.size(), sc.size(), BD::NL, BD::NS);
    exit(1);
  }
  char name[160];
  snprintf(name, sizeof name, "order %d, R = %d (DTS %d), X %d ZS %d%s%s (%d threads)", 2 * r, R, R / r, X, ZS,
           c2m_name(C2M), LZ ? ", z slabs" : "", G::NT);
  if (g_emu) {
    if (diag || nt > 32) return;
    std::vector<float> e0(h0), e1(h1);
    emulate<r, R, ZC, X, ZS, C2M, LZ>(e0, e1, hc2, w, N1, NZ, s, k0, ntow, nt, lc.data(), sc.data());
    host_stage<r, R>(h0, h1, hc2, N1, NZ, s, k0, ntow, nt, st);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += memcmp(&h0[i], &e0[i], 4) != 0 || memcmp(&h1[i], &e1[i], 4) != 0;
    printf("emulated: %s, %d towers of columns x %d, %d steps: %s", name, ntow, NZ, nt, bad ? "FAILED" : "bitwise");
    if (bad) printf(" (%zu of %zu cells differ)", bad, n);
    printf("\n");
    return;
  }
  float *d0, *d1, *dc2;
  for (float **a : {&d0, &d1, &dc2}) CK(cudaMalloc(a, n * 4));
  int *dl, *ds;
  CK(cudaMalloc(&dl, lc.size() * sizeof(int)));
  CK(cudaMalloc(&ds, sc.size() * sizeof(int)));
  CK(cudaMemcpy(dl, lc.data(), lc.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ds, sc.data(), sc.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dc2, hc2.data(), n * 4, cudaMemcpyHostToDevice));
  const size_t smem = 2 * (size_t)G::BUF * sizeof(float);
  auto kern = tower_kernel<r, R, ZC, X, ZS, C2M, LZ>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int rep = 0; rep <= reps; rep++) {  // rep 0: the checked run (fresh arrays)
    CK(cudaMemcpy(d0, h0.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d1, h1.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaEventRecord(e0));
    kern<<<ntow, G::NT, smem>>>(d0, d1, dc2, w, N1, NZ, s, k0, nt, diag, dl, ds);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (rep > 0 && ms < best) best = ms;
  }
  // the check: the last run started from the same arrays as the host
  std::vector<float> o0(n), o1(n);
  CK(cudaMemcpy(o0.data(), d0, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(o1.data(), d1, n * 4, cudaMemcpyDeviceToHost));
  // the host replays short towers on short columns only (time: 132 towers x 512 cells x 32 steps ~ 20 s);
  // the slabs on long columns are checked on 256 cells and in the whole blocks
  const bool check = nt <= 32 && NZ <= 256 && !getenv("NOCHECK");
  if (check) host_stage<r, R>(h0, h1, hc2, N1, NZ, s, k0, ntow, nt, st);
  size_t bad = 0;
  for (size_t i = 0; check && i < n; i++) bad += memcmp(&h0[i], &o0[i], 4) != 0 || memcmp(&h1[i], &o1[i], 4) != 0;
  const double cells = (double)ntow * G::NC * NZ * nt;
  const double rate = cells / (best * 1e-3) / 1e9;
  // bytes a tower moves per step: the band in (two strips, one level each), the leaving strip out
  // (two levels), c²dt² of every column
  const double band = ((2.0 * R + 2 * r) * (2 * R + 2 * r) - 4.0 * R * R) / 2 +  // in: one level
                      (4.0 * R * R - (2.0 * R - r) * (2 * R - r)) / 2 * 2;       // out: two levels
  if (diag)
    printf("(diagnostic %d: %s%s%s, wrong bits) ", diag, diag & 1 ? "no band in " : "", diag & 2 ? "no band out " : "",
           diag & 4 ? "c2dt2 not gathered" : "");
  printf(
      "%s, %d towers of %d columns x %d, %d steps: %zu KB smem, %.2f us/step, %7.1f Gcell/s (%.2f per SM), %.1f us a "
      "launch; band %.1f B/update + c2dt2 4; check %s\n",
      name, ntow, G::NC, NZ, nt, smem >> 10, best * 1e3 / nt, rate, rate / ntow, best * 1e3, band * 4 / G::NC,
      !check ? "not run"
      : bad  ? "FAILED"
             : "bitwise");
  if (bad) printf("  %zu of %zu cells differ\n", bad, n);
  for (float *a : {d0, d1, dc2}) CK(cudaFree(a));
  CK(cudaFree(dl));
  CK(cudaFree(ds));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

// ---------------------------------------------------------------- whole blocks (FULL)
// Every tower of a block of nt steps on a whole grid N0 × N1 × NZ, as the solver would run it:
// schedule.h's stages and towers (clipped at the grid's edges), each tower's slabs as separate work
// items that persistent CTAs take in order — stage by stage, within a stage slab by slab — and start
// once the items they depend on are done: the tower's parents' same slab (tw_tower_preds) and its own
// slab below. (A tower's slabs in one CTA, as in the stage kernel, would chain ~N0 / R towers of
// whole columns: 98 × ~2.7 ms at 1024² × 512, order 8, against ~74 ms of work on 132 SMs.) The
// order is a topological one, so the host runs the items one after another in it (EMU=1), and no
// CTA waits for an item that no CTA has taken.
struct Item {
  int s, k, c, ts, te, dep[3];  // dep: item indices, −1 none
};
template <int r, int R, int ZC, int LZ>
static std::vector<Item> block_items(int N0, int N1, int NZ, int nt) {
  tw_schedule sc;
  tw_schedule_init(&sc, N0, N1, r, R / r, nt);
  std::vector<Item> v;
  std::vector<int> index((size_t)(sc.s_hi - sc.s_lo + 1) * (sc.kmax + 1) * 64, -1);
  const int nsl = LZ ? (NZ + (nt - 1) * LZ + ZC - 1) / ZC : 1;
  const auto at = [&](int s, int k, int c) -> int & {
    return index[((size_t)(s - sc.s_lo) * (sc.kmax + 1) + k) * 64 + c];
  };
  for (int s = sc.s_hi; s >= sc.s_lo; s--)
    for (int c = 0; c < nsl; c++)
      for (int i = 0; i < tw_stage_towers(&sc, s); i++) {
        const int k = tw_stage_tower_k(&sc, s, i);
        int ts, te;
        Tower<r, R, ZC, 1, 1, 0, LZ, true>::slab_steps(c, NZ, nt, &ts, &te);
        if (ts >= te) continue;
        Item it{s, k, c, ts, te, {-1, -1, -1}};
        int ps[2], pk[2];
        const int np = tw_tower_preds(&sc, s, k, ps, pk);
        for (int j = 0; j < np; j++) it.dep[j] = at(ps[j], pk[j], c);
        if (c > 0) it.dep[2] = at(s, k, c - 1);
        at(s, k, c) = (int)v.size();
        v.push_back(it);
      }
  if (getenv("LEX")) return v;
  // Wavefront order. Taken stage by stage and slab by slab, the ~132 items in flight are ~3 slabs
  // of one stage's ~43 towers, and each waits for the slab below it, taken just before: ~1/3 of
  // the CTAs compute (measured: 3.1x below the work bound). Every dependency of an item lies on
  // the diagonal before its own, d = (s_hi - s) + c, so items sorted by d (stably) are still in a
  // topological order, and one diagonal holds ~43 x min(slabs, stages) independent items.
  std::vector<int> perm(v.size()), inv(v.size());
  for (size_t i = 0; i < v.size(); i++) perm[i] = (int)i;
  const auto diag = [&](const Item &it) { return sc.s_hi - it.s + it.c; };
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) { return diag(v[a]) < diag(v[b]); });
  for (size_t i = 0; i < perm.size(); i++) inv[perm[i]] = (int)i;
  std::vector<Item> w(v.size());
  for (size_t i = 0; i < perm.size(); i++) {
    w[i] = v[perm[i]];
    for (int &d : w[i].dep)
      if (d >= 0) d = inv[d];
  }
  return w;
}

template <int r, int R, int ZC, int X, int ZS, int C2M, int LZ, bool PHYS>
__global__ void __launch_bounds__(TG<r, R, ZC, X, ZS>::NT, 1)
    block_kernel(float *__restrict__ g0, float *__restrict__ g1, const float *__restrict__ c2g, Wt<r> w, int N0, int N1,
                 int NZ, int nt, const Item *__restrict__ items, int nitems, int *next, int *done,
                 const int *__restrict__ lcells, const int *__restrict__ scells, const float *ax, const float *ay,
                 const float *az, int fs) {
  using TT = Tower<r, R, ZC, X, ZS, C2M, LZ, true, PHYS>;
  using G = TG<r, R, ZC, X, ZS>;
  extern __shared__ float4 sm4[];
  __shared__ int item;
  for (int i = threadIdx.x; i < 2 * G::BUF; i += blockDim.x) reinterpret_cast<float *>(sm4)[i] = 0.0f;
  TT T;
  T.setup(reinterpret_cast<float *>(sm4), g0, g1, c2g, N0, N1, NZ, nt, 0, threadIdx.x, lcells, scells);
  T.physics(ax, ay, az, fs);
  for (;;) {
    if (threadIdx.x == 0) {
      const int i = atomicAdd(next, 1);
      if (i < nitems)
        for (int d : items[i].dep)  // its inputs: done (and their stores seen, the fences below)
          if (d >= 0)
            while (atomicAdd(&done[d], 0) == 0) {
            }
      __threadfence();
      item = i;
    }
    __syncthreads();  // (also: the previous item's shared memory read out before this one comes in)
    const int i = item;
    if (i >= nitems) return;
    const Item it = items[i];
    T.place(it.s, it.k);
    T.begin_slab(it.c, it.ts);
    T.load_square(it.ts, blockDim.x);
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    for (int tau = it.ts; tau < it.te; tau++) {
      T.step_out(tau, it.ts);
      if (tau > it.ts) __syncthreads();
      T.step_in(tau, it.te, w);
      asm volatile("cp.async.wait_all;" ::: "memory");
      __syncthreads();
    }
    T.finish(it.te - 1);
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicExch(&done[i], 1);
    }
  }
}

// The same items (whole towers: no slabs) taken by clusters of nr CTAs, the column split over them
// (Tower's CLU). Rank 0 takes an item and waits for its inputs; every rank reads it from rank 0's
// shared memory between two cluster barriers (the second: no rank leaves while another may still
// read rank 0). A rank's stores are fenced before the cluster barrier after which rank 0 marks
// the item done, so that a later item's CTAs in other clusters see them.
template <int r, int R, int ZC, int X, int ZS, int C2M, bool PHYS>
__global__ void __launch_bounds__(TG<r, R, ZC, X, ZS>::NT, 1)
    cluster_kernel(float *__restrict__ g0, float *__restrict__ g1, const float *__restrict__ c2g, Wt<r> w, int N0,
                   int N1, int NZ, int nt, const Item *__restrict__ items, int nitems, int *next, int *done,
                   const int *__restrict__ lcells, const int *__restrict__ scells, const float *ax, const float *ay,
                   const float *az, int fs) {
  using TT = Tower<r, R, ZC, X, ZS, C2M, 0, true, PHYS, true>;
  using G = TG<r, R, ZC, X, ZS>;
  namespace cg = cooperative_groups;
  cg::cluster_group cl = cg::this_cluster();
  const int rank = (int)cl.block_rank();
  extern __shared__ float4 sm4[];
  __shared__ int item;
  for (int i = threadIdx.x; i < 2 * G::BUF; i += blockDim.x) reinterpret_cast<float *>(sm4)[i] = 0.0f;
  TT T;
  T.setup(reinterpret_cast<float *>(sm4), g0, g1, c2g, N0, N1, NZ, nt, 0, threadIdx.x, lcells, scells);
  T.physics(ax, ay, az, fs);
  T.nr = (int)cl.num_blocks();
  for (;;) {
    if (rank == 0 && threadIdx.x == 0) {
      const int i = atomicAdd(next, 1);
      if (i < nitems)
        for (int d : items[i].dep)
          if (d >= 0)
            while (atomicAdd(&done[d], 0) == 0) {
            }
      __threadfence();
      item = i;
    }
    cl.sync();
    const int i = *cl.map_shared_rank(&item, 0);
    cl.sync();
    if (i >= nitems) return;
    const Item it = items[i];
    T.place(it.s, it.k);
    T.begin_slab(rank, 0);
    T.load_square(0, blockDim.x);
    asm volatile("cp.async.wait_all;" ::: "memory");
    cl.sync();  // every rank's level 0 in before a halo is read
    for (int tau = 0; tau < nt; tau++) {
      T.step_out(tau, 0);
      if (tau > 0) __syncthreads();
      T.step_in(tau, nt, w);
      asm volatile("cp.async.wait_all;" ::: "memory");
      cl.sync();
    }
    T.finish(nt - 1);
    __threadfence();
    cl.sync();
    if (rank == 0 && threadIdx.x == 0) {
      __threadfence();
      atomicExch(&done[i], 1);
    }
  }
}

// The cluster's CTAs on the host: every rank's threads in turn between the barriers.
template <int r, int R, int ZC, int X, int ZS, int C2M, bool PHYS>
static void emulate_cluster(std::vector<float> &g0, std::vector<float> &g1, const std::vector<float> &c2,
                            const Wt<r> &w, int N0, int N1, int NZ, int nt, const std::vector<Item> &items,
                            const int *lcells, const int *scells, const float *ax, const float *ay, const float *az,
                            int fs) {
  using G = TG<r, R, ZC, X, ZS>;
  using TT = Tower<r, R, ZC, X, ZS, C2M, 0, true, PHYS, true>;
  const int nr = NZ / ZC;
  std::vector<std::vector<float>> sm(nr, std::vector<float>(2 * (size_t)G::BUF, 0.0f));
  std::vector<float *> peers(nr);
  for (int q = 0; q < nr; q++) peers[q] = sm[q].data();
  std::vector<TT> T((size_t)nr * G::NT);
  for (int q = 0; q < nr; q++)
    for (int t = 0; t < G::NT; t++) {
      TT &u = T[(size_t)q * G::NT + t];
      u.setup(sm[q].data(), g0.data(), g1.data(), c2.data(), N0, N1, NZ, nt, 0, t, lcells, scells);
      u.physics(ax, ay, az, fs);
      u.nr = nr, u.peer = peers.data();
    }
  for (const Item &it : items) {
    for (size_t j = 0; j < T.size(); j++) T[j].place(it.s, it.k), T[j].begin_slab((int)(j / G::NT), 0);
    for (TT &u : T) u.load_square(0, G::NT);
    for (int tau = 0; tau < nt; tau++) {
      for (TT &u : T) u.step_out(tau, 0);
      for (TT &u : T) u.step_in(tau, nt, w);
    }
    for (TT &u : T) u.finish(nt - 1);
  }
}

template <int r, int R, int ZC, int X, int ZS, int C2M, int LZ, bool PHYS>
static void emulate_block(std::vector<float> &g0, std::vector<float> &g1, const std::vector<float> &c2, const Wt<r> &w,
                          int N0, int N1, int NZ, int nt, const std::vector<Item> &items, const int *lcells,
                          const int *scells, const float *ax, const float *ay, const float *az, int fs) {
  using G = TG<r, R, ZC, X, ZS>;
  using TT = Tower<r, R, ZC, X, ZS, C2M, LZ, true, PHYS>;
  // with LZ, every position a slab reads is written (zeros outside the grid): the emulation starts
  // from ones to show it; with LZ = 0 the z halo is never written and stays as the kernel leaves it, 0
  std::vector<float> sm(2 * (size_t)G::BUF, LZ ? 1.0f : 0.0f);
  std::vector<TT> T(G::NT);
  for (int t = 0; t < G::NT; t++) {
    T[t].setup(sm.data(), g0.data(), g1.data(), c2.data(), N0, N1, NZ, nt, 0, t, lcells, scells);
    T[t].physics(ax, ay, az, fs);
  }
  for (const Item &it : items) {
    for (TT &u : T) u.place(it.s, it.k), u.begin_slab(it.c, it.ts);
    for (TT &u : T) u.load_square(it.ts, G::NT);
    for (int tau = it.ts; tau < it.te; tau++) {
      for (TT &u : T) u.step_out(tau, it.ts);
      for (TT &u : T) u.step_in(tau, it.te, w);
    }
    for (TT &u : T) u.finish(it.te - 1);
  }
}

// The host's reference for a block: nt plain steps over the whole grid, zero outside it; with
// damping (ax: null for none), tw_stencil.h's tw_cell_update with a = (ax + ay) + az; with a free
// surface, cpu_update.c's ghosts above z = 0 (−p at the mirror cell, 0 beyond the column).
template <int r>
static void host_block(std::vector<float> &g0, std::vector<float> &g1, const std::vector<float> &c2, int N0, int N1,
                       int NZ, int nt, const tw_stencil &st, const float *ax, const float *ay, const float *az,
                       int fs) {
  std::vector<float> *gl[2] = {&g0, &g1};
  for (int tau = 0; tau < nt; tau++) {
    const std::vector<float> &cur = *gl[tau & 1];
    std::vector<float> &nxt = *gl[(tau + 1) & 1];
    for (int x = 0; x < N0; x++)
      for (int y = 0; y < N1; y++)
        for (int z = 0; z < NZ; z++) {
          const auto v = [&](int xx, int yy, int zz) {
            if (fs && zz < 0 && zz >= -r && xx >= 0 && xx < N0 && yy >= 0 && yy < N1)
              return -zz < NZ ? -cur[gcol(N1, NZ, xx, yy) - zz] : 0.0f;
            return xx < 0 || xx >= N0 || yy < 0 || yy >= N1 || zz < 0 || zz >= NZ ? 0.0f
                                                                                  : cur[gcol(N1, NZ, xx, yy) + zz];
          };
          float px[2 * 8 + 1], py[2 * 8 + 1], pz[2 * 8 + 1];
          for (int m = -r; m <= r; m++)
            px[m + r] = v(x + m, y, z), py[m + r] = v(x, y + m, z), pz[m + r] = v(x, y, z + m);
          const size_t o = gcol(N1, NZ, x, y) + z;
          const float lap = tw_laplacian(r, &st, &px[r], 1, &py[r], 1, &pz[r], 1);
          nxt[o] = ax ? tw_cell_update(cur[o], nxt[o], lap, c2[o], tw_damping_xy(ax[x], ay[y]), az[z])
                      : tw_cell_update_undamped(cur[o], nxt[o], lap, c2[o]);
        }
  }
}

// Absorbing layers of W cells on every face (the top too without a free surface): a ramp of a = η dt/2
// like boundary's profile in shape (the values need only be the same for the kernel and the host).
static std::vector<float> layer_profile(int n, int W, bool low) {
  std::vector<float> a(n, 0.0f);
  for (int i = 0; i < n; i++) {
    const int d = i < W && low ? W - i : i >= n - W ? i - (n - W - 1) : 0;
    a[i] = d ? 0.02f * (float)(d * d) / (float)(W * W) : 0.0f;
  }
  return a;
}

template <int r, int R, int ZC, int X, int ZS, int C2M, int LZ, bool PHYS = false, bool CLU = false>
static void run_block(int reps, int N0, int N1, int NZ, int nt, bool check) {
  static_assert(!CLU || LZ == 0, "a cluster's column has no slabs");
  constexpr bool phys = PHYS;
  using G = TG<r, R, ZC, X, ZS>;
  const std::vector<Item> items = block_items<r, R, ZC, LZ>(N0, N1, NZ, nt);
  const size_t n = (size_t)N0 * N1 * NZ;
  std::vector<float> h0, h1, hc2;
  random_fields(n, 999 + r, h0, h1, hc2);
  tw_stencil st;
  Wt<r> w;
  test_weights(w, st);
  const std::vector<int> lc = band_cells<r, R>(true), sc = band_cells<r, R>(false);
  const int W = N0 >= 256 ? 12 : 5, fs = phys;  // layers (the realistic job's 12), a free surface
  const std::vector<float> hax = layer_profile(N0, W, true), hay = layer_profile(N1, W, true),
                           haz = layer_profile(NZ, W, !fs);
  const float *pax = phys ? hax.data() : nullptr, *pay = phys ? hay.data() : nullptr;
  const float *paz = phys ? haz.data() : nullptr;
  char name[240];
  char clu[40] = "";
  if (CLU) snprintf(clu, sizeof clu, ", z over a cluster of %d", NZ / ZC);
  snprintf(name, sizeof name, "order %d, R = %d, X %d ZS %d%s%s%s%s, whole block %d x %d x %d, %d steps, %zu items",
           2 * r, R, X, ZS, c2m_name(C2M), LZ ? ", z slabs" : "", clu, phys ? ", layers and a free surface" : "", N0,
           N1, NZ, nt, items.size());
  std::vector<float> o0, o1;
  double ms_best = 0;
  if (g_emu) {
    o0 = h0, o1 = h1;
    if constexpr (CLU)
      emulate_cluster<r, R, ZC, X, ZS, C2M, PHYS>(o0, o1, hc2, w, N0, N1, NZ, nt, items, lc.data(), sc.data(), pax, pay,
                                                  paz, fs);
    else
      emulate_block<r, R, ZC, X, ZS, C2M, LZ, PHYS>(o0, o1, hc2, w, N0, N1, NZ, nt, items, lc.data(), sc.data(), pax,
                                                    pay, paz, fs);
  } else {
    float *d0, *d1, *dc2;
    for (float **a : {&d0, &d1, &dc2}) CK(cudaMalloc(a, n * 4));
    int *dl, *ds, *dn, *dd;
    Item *di;
    float *dax = nullptr, *day = nullptr, *daz = nullptr;
    if (phys) {
      CK(cudaMalloc(&dax, N0 * 4));
      CK(cudaMalloc(&day, N1 * 4));
      CK(cudaMalloc(&daz, NZ * 4));
      CK(cudaMemcpy(dax, pax, N0 * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(day, pay, N1 * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(daz, paz, NZ * 4, cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc(&dl, lc.size() * sizeof(int)));
    CK(cudaMalloc(&ds, sc.size() * sizeof(int)));
    CK(cudaMalloc(&di, items.size() * sizeof(Item)));
    CK(cudaMalloc(&dn, sizeof(int)));
    CK(cudaMalloc(&dd, items.size() * sizeof(int)));
    CK(cudaMemcpy(dl, lc.data(), lc.size() * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ds, sc.data(), sc.size() * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(di, items.data(), items.size() * sizeof(Item), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc2, hc2.data(), n * 4, cudaMemcpyHostToDevice));
    const size_t smem = 2 * (size_t)G::BUF * sizeof(float);
    auto kern = [] {
      if constexpr (CLU)
        return cluster_kernel<r, R, ZC, X, ZS, C2M, PHYS>;
      else
        return block_kernel<r, R, ZC, X, ZS, C2M, LZ, PHYS>;
    }();
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // CLU: as many clusters of NZ / ZC CTAs as are resident at once (whole GPCs: not every SM)
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    int nclu = 0;
    if (CLU) {
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = NZ / ZC, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
      cfg.blockDim = dim3(G::NT), cfg.dynamicSmemBytes = smem, cfg.attrs = attr, cfg.numAttrs = 1;
      cfg.gridDim = dim3(NZ / ZC * (sms / (NZ / ZC)));
      CK(cudaOccupancyMaxActiveClusters(&nclu, kern, &cfg));
      cfg.gridDim = dim3(NZ / ZC * nclu);
      printf("  %d clusters of %d CTAs resident (%d of %d SMs)\n", nclu, NZ / ZC, nclu * NZ / ZC, sms);
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int rep = 0; rep <= reps; rep++) {  // rep 0: the checked run
      CK(cudaMemcpy(d0, h0.data(), n * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(d1, h1.data(), n * 4, cudaMemcpyHostToDevice));
      CK(cudaMemset(dn, 0, sizeof(int)));
      CK(cudaMemset(dd, 0, items.size() * sizeof(int)));
      CK(cudaEventRecord(e0));
      if (CLU)
        CK(cudaLaunchKernelEx(&cfg, kern, d0, d1, (const float *)dc2, w, N0, N1, NZ, nt, (const Item *)di,
                              (int)items.size(), dn, dd, (const int *)dl, (const int *)ds, (const float *)dax,
                              (const float *)day, (const float *)daz, fs));
      else
        kern<<<sms, G::NT, smem>>>(d0, d1, dc2, w, N0, N1, NZ, nt, di, (int)items.size(), dn, dd, dl, ds, dax, day, daz,
                                   fs);
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (rep == 0 && check) {
        o0.resize(n), o1.resize(n);
        CK(cudaMemcpy(o0.data(), d0, n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(o1.data(), d1, n * 4, cudaMemcpyDeviceToHost));
      }
      if ((rep > 0 || reps == 0) && ms < best) best = ms;
    }
    ms_best = best;
    for (float *a : {d0, d1, dc2}) CK(cudaFree(a));
    for (int *a : {dl, ds, dn, dd}) CK(cudaFree(a));
    for (float *a : {dax, day, daz}) CK(cudaFree(a));
    CK(cudaFree(di));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
  }
  size_t bad = 0;
  if (check) {
    host_block<r>(h0, h1, hc2, N0, N1, NZ, nt, st, pax, pay, paz, fs);
    for (size_t i = 0; i < n; i++) bad += memcmp(&h0[i], &o0[i], 4) != 0 || memcmp(&h1[i], &o1[i], 4) != 0;
  }
  if (g_emu)
    printf("emulated: %s: %s", name, !check ? "not checked" : bad ? "FAILED" : "bitwise");
  else
    printf("%s: %.3f ms, %7.1f Gcell/s; check %s", name, ms_best, (double)n * nt / (ms_best * 1e-3) / 1e9,
           !check ? "not run"
           : bad  ? "FAILED"
                  : "bitwise");
  if (bad) printf(" (%zu of %zu cells differ)", bad, n);
  printf("\n");
}

// The layouts compared (one line each; ONLY=mask runs the i-th where bit i is set).
static void all(int reps, int nt, const cudaDeviceProp &prop, int only, int diag) {
  int i = 0;
  const auto one = [&](auto f) {
    if (only < 0 || only & 1 << i) f();
    i++;
  };
  // order 8, DTS 3: S = 32
  one([&] { run<4, 12, 32, 1, 1>(reps, nt, prop, diag); });
  one([&] { run<4, 12, 32, 2, 1>(reps, nt, prop, diag); });
  one([&] { run<4, 12, 32, 2, 2>(reps, nt, prop, diag); });
  // order 4, DTS 7: S = 32
  one([&] { run<2, 14, 32, 1, 1>(reps, nt, prop, diag); });
  one([&] { run<2, 14, 32, 2, 1>(reps, nt, prop, diag); });
  one([&] { run<2, 14, 32, 2, 2>(reps, nt, prop, diag); });
  // c²dt² a step ahead, a run ahead
  one([&] { run<4, 12, 32, 2, 2, 1>(reps, nt, prop, diag); });
  one([&] { run<2, 14, 32, 2, 2, 1>(reps, nt, prop, diag); });
  one([&] { run<4, 12, 32, 2, 2, 2>(reps, nt, prop, diag); });
  one([&] { run<2, 14, 32, 2, 2, 2>(reps, nt, prop, diag); });
  // columns of any length in z slabs (emulated on shorter ones: 96 = 3 slabs' worth, 44 not a
  // multiple of a slab)
  one([&] { run<4, 12, 32, 2, 2, 2, 4>(reps, nt, prop, diag, g_emu ? 96 : 512); });
  one([&] { run<2, 14, 32, 2, 2, 2, 4>(reps, nt, prop, diag, g_emu ? 96 : 512); });
  one([&] { run<4, 12, 32, 1, 1, 0, 4>(reps, nt, prop, diag, g_emu ? 44 : 256); });
  one([&] { run<2, 14, 32, 2, 2, 0, 4>(reps, nt, prop, diag, g_emu ? 44 : 256); });
  // order 2, DTS 15: S = 32 (X = 2 has no row skew here: 2·(U·16 + δ) − U·15 is odd)
  one([&] { run<1, 15, 32, 1, 1>(reps, nt, prop, diag); });
}

// Whole blocks (BLOCK=mask): checked on small grids (the host's reference is plain steps), timed on
// the issue's grid, 1024 × 1024 × 512 (without the check: the host would take minutes).
static void blocks(int reps, int only) {
  int i = 0;
  const auto one = [&](auto f) {
    if (only < 0 || only & 1 << i) f();
    i++;
  };
  const auto sizes = [&](auto f) {
    if (g_emu) {
      f(70, 58, 44, 12, true), f(61, 90, 96, 20, true);
    } else {
      f(200, 170, 96, 32, true);
      for (int nt : {32, 64})  // BLOCK_NT=n: only that height (the host's random fields take ~30 s)
        if (!getenv("BLOCK_NT") || atoi(getenv("BLOCK_NT")) == nt) f(1024, 1024, 512, nt, false);
    }
  };
  one([&] {
    sizes([&](int a, int b, int c, int nt, bool k) { run_block<4, 12, 32, 2, 2, 2, 4>(reps, a, b, c, nt, k); });
  });
  one([&] {
    sizes([&](int a, int b, int c, int nt, bool k) { run_block<2, 14, 32, 2, 2, 2, 4>(reps, a, b, c, nt, k); });
  });
  one([&] {
    sizes([&](int a, int b, int c, int nt, bool k) { run_block<4, 12, 32, 2, 2, 0, 4>(reps, a, b, c, nt, k); });
  });
  one([&] {
    sizes([&](int a, int b, int, int nt, bool k) { run_block<4, 12, 32, 2, 2, 2, 0>(reps, a, b, 32, nt, k); });
  });
  // with absorbing layers and a free surface (the realistic job's boundary)
  one([&] {
    sizes([&](int a, int b, int c, int nt, bool k) { run_block<4, 12, 32, 2, 2, 2, 4, true>(reps, a, b, c, nt, k); });
  });
  one([&] {
    sizes([&](int a, int b, int c, int nt, bool k) { run_block<2, 14, 32, 2, 2, 2, 4, true>(reps, a, b, c, nt, k); });
  });
  // the column over a cluster (CLU): checked on 2 and 4 ranks (emulated) or 4 and 16 (the GPU),
  // timed with 16 (1024 × 1024 × 512: 32 z cells a rank)
  const auto csizes = [&](auto f) {
    if (g_emu) {
      f(70, 58, 64, 12, true), f(61, 90, 128, 20, true);
    } else {
      f(200, 170, 128, 32, true), f(96, 80, 512, 32, true);
      for (int nt : {32, 64})
        if (!getenv("BLOCK_NT") || atoi(getenv("BLOCK_NT")) == nt) f(1024, 1024, 512, nt, false);
    }
  };
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<4, 12, 32, 2, 2, 0, 0, false, true>(reps, a, b, c, nt, k);
    });
  });
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<2, 14, 32, 2, 2, 2, 0, false, true>(reps, a, b, c, nt, k);
    });
  });
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<4, 12, 32, 2, 2, 0, 0, true, true>(reps, a, b, c, nt, k);
    });
  });
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<2, 14, 32, 2, 2, 2, 0, true, true>(reps, a, b, c, nt, k);
    });
  });
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<2, 14, 32, 1, 1, 0, 0, false, true>(reps, a, b, c, nt, k);
    });
  });
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<4, 12, 32, 1, 1, 0, 0, false, true>(reps, a, b, c, nt, k);
    });
  });
  // order 2 (DTS 15), without and with the realistic boundary
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<1, 15, 32, 1, 1, 0, 0, false, true>(reps, a, b, c, nt, k);
    });
  });
  one([&] {
    csizes([&](int a, int b, int c, int nt, bool k) {
      run_block<1, 15, 32, 1, 1, 0, 0, true, true>(reps, a, b, c, nt, k);
    });
  });
}

int main(int argc, char **argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 3;
  const int only = getenv("ONLY") ? atoi(getenv("ONLY")) : -1;
  cudaDeviceProp prop{};
  g_emu = getenv("EMU") != nullptr;
  const int block = getenv("BLOCK") ? atoi(getenv("BLOCK")) : 0;
  if (g_emu) {
    if (block)
      blocks(0, block);
    else
      all(0, 32, prop, only, 0);
    return 0;
  }
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (getenv("PROF")) {  // one launch each, for ncu
    all(0, 32, prop, only, 0);
    return 0;
  }
  if (block) {
    blocks(reps, block);
    return 0;
  }
  for (int nt : {32, 128}) all(reps, nt, prop, only, 0);  // tower heights: the difference is a step's own cost
  if (getenv("DIAG"))
    for (int d : {1, 2, 3, 4, 7}) all(reps, 128, prop, only, d);
  return 0;
}
