// gpu_diamond_tower.cuh — the register tower (run_tower, tower_kernel) and the generic tower
// Part of the gpu-diamond kernel: included by gpu_diamond.cu only (one translation unit, so
// that the templates see each other); the header of gpu_diamond.cu explains the design.
#pragma once

#include "gpu_diamond_args.cuh"

namespace {

// The damped update of the register tower's ZDAMP and DAMPED paths (run_tower, step 4), with the
// arithmetic of tw_cell_update_damped_g: p^{n+1} = num · g, num = t − (1 − a)·p^{n−1}, g = tw_damp_g
// from the factors precomputed per z and per column. om(J, I) = 1 − a, g(J, I) of cell J of column
// I. A function, not a lambda, so that it is always inlined (a call would put G and C in memory).
// (Until 2026-11 the form divided by 1 + a, which this path emulated through a reciprocal proven
// exact per divisor at start-up, with a scaled path for tiny numerators: the multiplication made
// all of that unnecessary; docs/performance.md, session 8.)
template <int ND, int Z, typename P0, typename Lap, typename Fence, typename Om, typename G>
__device__ __forceinline__ void damped_update(float (&Gv)[Z][ND], const float (&C)[Z][ND], P0 &&fgetD, Lap &&lap,
                                              Fence &&fence8, Om &&om, G &&g) {
  sfor<0, ND>([&](auto I) {
    constexpr int i = I;
    sfor<0, Z>([&](auto J) { Gv[J][i] = tw_cell_update_damped_g(fgetD(J, I), Gv[J][i], lap(J, I), C[J][i], om(J, I), g(J, I)); });
    fence8(I);
  });
}

// ---------------------------------------------------------------------------------- register tower

// Shared memory of the register tower, in floats: the double-buffered z exchange
// [2][(NZp + 2H) / Z][PZ] (xaddr), the band buffers (the current frame's, read by HS, and the next
// NB − 1 frames', in flight): per thread [NZp / Z][SB] (item J of buffer b at word (b·nb + J)·Z of
// thread k's SB), or cooperative [NB][NZp / 4][NBIo][4] from a 16-byte boundary (band_coop), or
// for the bulk copies the NB mbarriers and [NB][NBI][BULK_NZ] from a 16-byte boundary, then
// the damping of the current frame's ND columns [2][ND][2] (axy and its factor, by step parity),
// the cooperative copies' column offsets (OT), and one word for the persistent ticket. H: halo rows
// above z = 0 (r, rounded up to whole groups of Z). NZp: the CTA's z cells (over a cluster of CL
// CTAs, the column's NZp / CL).
template <int r, int DTS>
struct Tab {
  static constexpr Geo<r, DTS> T{};
};
template <int r, int Z>
__host__ __device__ constexpr int halo_rows() {
  return (r + Z - 1) / Z * Z;
}
// The exchange by 16-byte accesses (one z cell a thread, ND a multiple of 4): a thread stores its
// p^n of columns 4q … 4q + 3 with one STS.128 and reads a z-neighbour's four with one LDS.128, a
// quarter of the instructions of 4-byte accesses (the order-4 tower's step was held by the LSU
// queue: short-scoreboard, MIO- and LG-throttle stalls 1.6 cycles an instruction, which moved
// between them, but did not shrink, when its other loads were reordered: docs/performance.md,
// session 41). Groups 16·m bytes apart, m odd: the 8 threads of each quarter warp hit distinct banks.
template <int r, int DTS, int Z>
__host__ __device__ constexpr bool exch_vec() {
  return Z == 1 && Tab<r, DTS>::T.ND % 4 == 0;
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr int exch_group() {
  constexpr int n = Tab<r, DTS>::T.ND + Tab<r, DTS>::T.NL;
  return exch_vec<r, DTS, Z>() ? 4 * odd_up((n + 3) / 4) : Z * odd_up(n);
}
// Floats of one z-exchange buffer of a CTA of NZc cells: (NZc + 2H) / Z groups of PZ (xaddr).
template <int r, int DTS, int Z>
__host__ __device__ constexpr int exch_floats(int NZc) {
  return (NZc + 2 * halo_rows<r, Z>()) / Z * exch_group<r, DTS, Z>();
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr int band_stride_nb(int nb) {
  return Z * odd_up(nb * (Tab<r, DTS>::T.NBF + Tab<r, DTS>::T.NBC));
}
// The band's layout, one of two:
//  * per thread: thread k's items at k·SB (SB odd: distinct banks), its Z cells of an item copied by
//    the thread itself, Z·4 bytes a cp.async;
//  * cooperative (band_coop): [NZp / 4 groups of 4 z cells][odd_up(NBI) items][4], one 16-byte copy
//    per (group, item), issued by a lane of the warp that holds the group, 4 / Z items a warp
//    instruction; thread k reads item J of its group k / (4 / Z) at offset 4·J (an immediate), the
//    lanes of one item on distinct banks (the odd item count). The lanes' column offsets come from
//    a table in shared memory (OT), one load a copy; a __syncwarp after the wait (which the host
//    emulation, TW_DIAMOND_EMU, must make a real barrier of its warp's threads). The 16-byte
//    global addresses need NZp, SX and SY in multiples of 4 floats (window_setup checks the ring).
// At order 4 (Z = 1: 54 items a step for 32 updates) the per-thread copies held the tower in the
// LSU queue (lg_throttle 1.21 stalls an issued instruction) and the cooperative ones run it 10–14 %
// faster (242 → 266 Gcell/s on 4096 × 2048 × 256); at order 2 (Z = 2: 8-byte copies, 0.13) the
// table's loads cost more than the copies they save, 3–6 % (docs/performance.md, session 37).
template <int r, int DTS, int Z>
__host__ __device__ constexpr bool band_coop() {
  return r >= 2;
}
// The band by bulk copies (BULK; order 4's DTS-2 tower, whose CTA holds at most BULK_NZ z cells):
// one 1D bulk copy (the TMA unit) a band item, the CTA's whole z column of it, issued by one lane
// of the CTA each, counted on the buffer's mbarrier; [NB][NBI][BULK_NZ], the items BULK_NZ floats
// apart whatever the CTA's height (a constant, so that the HS reads keep immediate offsets), the
// NB barriers in the 4 words before it. Per step a warp issues ~7 copies of ~8 instructions (a loop
// over its lanes: the copy's addresses go through uniform registers) in place of 14 16-byte
// cp.async, their 14 offset loads and address pairs: at 8 warps a CTA the copies, all issued
// together after the step's barrier, each waited for the register pair the one before read (the
// long-scoreboard stall of session 41); measured +12–17 % there, −5 … 0 % at 6–7 warps, where
// there is no such burst and the wait for the whole band (the slowest of 54 copies) costs more
// (dia_init takes it at 8 warps: docs/performance.md, session 43).
constexpr int BULK_NZ = 256;
template <int r, int DTS, int Z>
__host__ __device__ constexpr bool band_bulk_fits() {
  return r == 2 && DTS == 2 && Z == 1;
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr int coop_items() {  // items a warp's copy instruction covers
  return 4 / Z;
}
template <int r, int DTS, int Z>
__host__ __device__ constexpr int coop_table() {  // OT entries: NBF and NBC rounded up to whole instructions
  constexpr int I = coop_items<r, DTS, Z>();
  return ((Tab<r, DTS>::T.NBF + I - 1) / I + (Tab<r, DTS>::T.NBC + I - 1) / I) * I;
}
template <int r, int DTS, int Z, bool BULK = false>
__host__ __device__ constexpr size_t smem_floats(int NZp, int nb) {
  const size_t xch = 2 * (size_t)((NZp + 2 * halo_rows<r, Z>()) / Z) * exch_group<r, DTS, Z>();
  if (BULK)
    return (xch + 3) / 4 * 4 + 4 + (size_t)nb * BULK_NZ * (Tab<r, DTS>::T.NBF + Tab<r, DTS>::T.NBC) +
           2 * 2 * (size_t)Geo<r, DTS>::ND + coop_table<r, DTS, Z>() + 1;
  if (band_coop<r, DTS, Z>())
    return (xch + 3) / 4 * 4 + (size_t)nb * NZp * odd_up(Tab<r, DTS>::T.NBF + Tab<r, DTS>::T.NBC) +
           2 * 2 * (size_t)Geo<r, DTS>::ND + coop_table<r, DTS, Z>() + 1;
  return xch + (size_t)(NZp / Z) * band_stride_nb<r, DTS, Z>(nb) + 2 * 2 * (size_t)Geo<r, DTS>::ND + 1;
}
// Band buffers, the most a tower has: 3 (copies two steps ahead: measured 2–30 % faster at order 2,
// where a step is short against the DRAM latency) when that still fits 227 KB at the block's
// largest Nz (256·Z), else 2 (one step ahead: orders 4 and 6, whose bands are 2–4 times larger).
// A tower of 3 may also be built with 2 (the NB parameter): the third buffer's shared memory comes
// out of the SM's L1, and where the blocks an SM would leave only 28 KiB of it the tower of 2 runs
// 7–14 % faster (dia_init's choice; docs/performance.md, session 35).
template <int r, int DTS, int Z>
__host__ __device__ constexpr int band_buffers() {
  return smem_floats<r, DTS, Z>(256 * Z, 3) <= 227 * 1024 / 4 ? 3 : 2;
}
template <int r, int DTS, int Z, int NB = band_buffers<r, DTS, Z>(), bool BULK = false>
__host__ __device__ size_t tower_smem_bytes(int NZp) {
  return smem_floats<r, DTS, Z, BULK>(NZp, NB) * sizeof(float);
}

// Diagnostic builds (never the default: their results are wrong), to split a tower's time into
// what the SM does and what the memory does (docs/performance.md, session 7; gpu-check.sh DIAG).
// TW_DIAMOND_NOMEM leaves out the per-step global traffic — the band copies and the stores of the
// leaving columns: the bench then times the exchange, the barrier, the arithmetic and the frame
// shift, the tower's ceiling whatever DRAM could give (the first and last steps still load and
// store). TW_DIAMOND_NOCOMP leaves out the update (step 4: the stencil, its z-neighbour reads, the
// damping) and keeps the traffic, the exchange's stores, the barrier and the frame shift.
#ifdef TW_DIAMOND_NOMEM
constexpr bool NOMEM = true;
#else
constexpr bool NOMEM = false;
#endif
#ifdef TW_DIAMOND_NOCOMP
constexpr bool NOCOMP = true;
#else
constexpr bool NOCOMP = false;
#endif

// One tower of stage s, centre k (kk), through the block's active steps. Every thread of the
// block calls it (barriers inside). Thread k holds the Z adjacent z cells z = Z·k + j, j < Z
// (Z = 2 halves the memory instructions per update: 8-byte loads, stores and band copies, and
// one of a cell's two z-neighbours at order 2 is the thread's other cell, in a register).
// Register budget per thread: Z·(NW + 2·ND) floats of tower state (F, G, C) plus the band being
// moved in Z·(NBF + NBC) and addressing: for R = 4, r = 1, Z = 1 that is 50 + 64 + 25 ≈ 140
// (ptxas -v: docs/performance.md). The band of step τ+1 is copied asynchronously into shared
// memory during step τ (cp.async: a step of latency hiding without holding registers) and moved
// into registers at the end of step τ.
//
// YX: the towers sweep the grid's y (dia_args.yx): the frame's x is the grid's y, so the Laplacian
// adds the frame's y term (the grid's x) before its x term, the order of tw_laplacian, and the
// result is the same bits as in the grid's own frame.
//
// Over a cluster (CL > 1): CTA c of the cluster holds the z cells [c·NZc, (c + 1)·NZc), NZc = NZp /
// CL, its thread k the cells c·NZc + Z·k + j; everything above is per CTA with z offset by c·NZc
// (its shared memory sized for NZc), except the exchange's halo rows at a seam: the threads holding
// the last H cells above it and the first H below also write their p^n into the neighbour's halo
// rows (distributed shared memory), and the step's barrier is the cluster's. Why: a tower whose
// column needs more registers than one SM has (order 4: 254 a thread, at most 256 z cells a CTA)
// runs over two SMs instead of not at all (docs/performance.md, session 38).
//
// BULK: the band by bulk copies (band_bulk_fits), the buffers' barriers' phases in bph (bit b: the
// parity of buffer b's next phase, the same in every thread, carried from tower to tower).
template <int r, int DTS, int Z, bool YX, int NB, int CL, bool BULK>
__device__ __forceinline__ void run_tower(const dia_args &A, int s, int kk, float *sm, unsigned &bph) {
  using G = Geo<r, DTS>;
  using TB = Tab<r, DTS>;  // the tables; read only in constexpr initializers (compile-time)
  constexpr int R = G::R, ND = G::ND, NW = TB::T.NW, NBF = TB::T.NBF, NBC = TB::T.NBC, NL = TB::T.NL;
  constexpr int H = halo_rows<r, Z>();
  constexpr int PZ = exch_group<r, DTS, Z>();
  constexpr bool VZ = exch_vec<r, DTS, Z>();  // the exchange of the diamond's columns by 16 bytes
  constexpr int PD = NB - 1;  // prefetch distance in steps (NB buffers)
  static_assert(NB >= 2 && NB <= band_buffers<r, DTS, Z>(), "band buffers: 2, or 3 where they fit");
  constexpr int SB = band_stride_nb<r, DTS, Z>(NB);
  constexpr int NBI = NBF + NBC;  // band items per frame
  const int k = threadIdx.x;
  const int NZp = A.NZp;     // the column's z pitch in memory
  const int NZc = NZp / CL;  // the z cells of this CTA
  const int rank = cl_rank<CL>();
  const int zb = rank * NZc;  // its first z cell
  static_assert((2 * R + 2 * r) * (2 * R + 2 * r + 1) <= DIA_OFF_MAX, "column offset table too small");

  int tlo, thi;
  active_steps(R, r, s, A.N0, A.h, &tlo, &thi);
  if (tlo >= thi) return;  // uniform over the block
  const int Y0 = R * kk;
  const int key = (A.s_hi - s) * (A.kmax + 1) + kk;
  int ecur, eend;
  tower_events(A, key, &ecur, &eend);

  float *const xb = sm;  // [2][(NZc + 2H) / Z][PZ]
  const int XBSZ = exch_floats<r, DTS, Z>(NZc);
  // the band: cooperative [NB][NZc / 4][NBIo][4] from a 16-byte boundary (BULK: its barriers, then
  // [NB][NBI][BULK_NZ]), else [NZc / Z][SB]
  constexpr bool COOP = band_coop<r, DTS, Z>();
  static_assert(!BULK || (band_bulk_fits<r, DTS, Z>() && NB == 2), "bulk copies: order 4's DTS-2 tower, 2 buffers");
  constexpr int NBIo = odd_up(NBI), IPW = coop_items<r, DTS, Z>();
  constexpr int NIF = (NBF + IPW - 1) / IPW, NIC = (NBC + IPW - 1) / IPW;  // copy instructions: p, c²dt²
  constexpr int BQ = BULK ? BULK_NZ : COOP ? 4 : Z;  // floats between a thread's consecutive items
  float *const band0 = sm + (COOP ? (2 * XBSZ + 3) / 4 * 4 + (BULK ? 4 : 0) : 2 * XBSZ);
  unsigned long long *const bars = (unsigned long long *)(band0 - 4);  // BULK: [NB]
  const int BSTR = BULK ? NBI * BULK_NZ : COOP ? NZc * NBIo : NBI * Z;  // floats between buffers, in a thread's view
  float *const bandk = BULK ? band0 + k : COOP ? band0 + k / (4 / Z) * NBIo * 4 + k % (4 / Z) * Z : band0 + k * SB;
  // [2][ND][2]: axy and RN(1/(1 + axy)) of a column; then (COOP) OT, the column offsets of the
  // band items, p then c²dt²
  float *const sdamp = band0 + (BULK ? NB * NBI * BULK_NZ : COOP ? NB * NZc * NBIo : NZc / Z * SB);
  int *const otab = (int *)(sdamp + 4 * ND);
  static_assert(ND <= 32, "the columns' damping: one warp");
  float azk[Z];
  for (int j = 0; j < Z; j++) azk[j] = A.az[zb + Z * k + j];
  // Damping anywhere in this thread's warp (z layers): the FAST/GENERAL choice is made per warp,
  // so that a warp straddling a layer's edge runs one path, not both.
  // (From the zero range, as for y below: a scan of the warp's 32·Z values of az, each load behind
  // the branch on the one before, cost ~1 µs of a tower's set-up; a vote over azk made the order-2
  // tower's step loop 6–10 % slower: docs/performance.md, session 40.)
  const int zw = zb + 32 * Z * (k >> 5);  // the warp's first z cell
  const bool wz = !(zw >= A.zz0 && zw + 32 * Z <= A.zz1);
  // Damping is zero in y for the whole tower? (x is checked per step.)
  const bool ydamp = !(Y0 - (R - 1) >= A.yz0 && Y0 + (R - 1) < A.yz1);
  const int myc = gather_column(k);  // receivers: the column this thread gathers (32 | blockDim.x)
  const int myslot = myc < ND ? gather_slot<r, R>(myc) : 0;

  // Offset in bytes of a column (dx, dy) from the frame's base (x = X0, y = Y0, z = Z·k): from the
  // table in the kernel parameters (constant bank), so that an address costs a 64-bit add with a
  // constant operand (atb) and the offsets hold no registers across the step loop; off, in floats
  // (the copies' offset table, OT).
  auto boff = [&](int dx, int dy) { return A.boff[(dx + r) * (2 * R + 2 * r + 1) + dy + R + r]; };
  auto off = [&](int dx, int dy) { return (int)(boff(dx, dy) >> 2); };
  auto base_of = [&](int X0) { return (long long)X0 * A.SX + (long long)Y0 * A.SY + zb + Z * k; };
  // Seam rows (CL > 1): the exchange buffer of the CTA above (rank − 1) gets the p^n of this CTA's
  // first H cells in its halo rows below its column; the one below (rank + 1), of the last H cells,
  // in its rows above. (A thread's group of Z rows is one unit: H is a multiple of Z.)
  float *seam = nullptr;
  if constexpr (CL > 1) {
    if (rank > 0 && k < H / Z) seam = cl_smem<CL>(xb, rank - 1) + (NZc / Z + H / Z + k) * PZ;
    else if (rank < CL - 1 && k >= (NZc - H) / Z) seam = cl_smem<CL>(xb, rank + 1) + (k - (NZc - H) / Z) * PZ;
  }
  // The warps at a seam (the first of a CTA below one, the last of a CTA above one: they store the
  // seam rows and read the neighbour's) wait for the cluster's barrier before their update; the
  // others only before their next arrival, after theirs, so that the barrier's latency (~0.3 µs
  // across two SMs, against a step of ~4 µs) is hidden behind their work (step 1). Every thread
  // arrives with release, though only the seam warps store remotely: relaxed arrivals for the
  // others took the MEMBAR stalls away but ran 2.6–3.1 % slower (they queued at the CTA barrier
  // instead), and an mbarrier of the two seam warps alone in place of the cluster barrier 5.6 %
  // slower (254 registers; docs/performance.md, session 39).
  const bool seamw = CL > 1 && ((rank > 0 && (k >> 5) == 0) || (rank < CL - 1 && (k >> 5) == (int)blockDim.x / 32 - 1));

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
    if constexpr (HS && b >= 0) return bcur[b * BQ + j];
    else return F[j][w];
  };
  auto fgetD = [&](auto Jc, auto Ic) -> float {  // the same for diamond column i
    return fget(Jc, std::integral_constant<int, TB::T.dw[Ic]>{});
  };

  // Band of frame τ1 (origin R·s + τ1·r): p^{t0+τ1} of the BF cells (values other towers computed,
  // final: see the header), c²dt² of the entering columns; into buffer τ1 mod NB.
  // COOP: lane l of warp w copies z group 8Z·w + l % 8Z of items J ≡ l / 8Z (mod IPW)
  const int cq = (k & 31) / (8 * Z), cz = 32 * Z * (k >> 5) + 4 * ((k & 31) % (8 * Z));
  // BULK: lane l of warp w copies the items w + nw·l + nt·i (nw warps, nt threads), one each where
  // nt ≥ NBI (a permutation of the threads: the copies spread over the warps)
  const int bj = (k >> 5) + (int)(blockDim.x >> 5) * (k & 31);
  auto band_issue_async = [&](int tau1) {
    if (!NOMEM && tau1 < thi) {
      if constexpr (BULK) {
        unsigned long long *const bar = bars + tau1 % NB;
        if (k == 0) mbar_expect_tx(bar, (unsigned)(NBI * NZc * sizeof(float)));
        const long long b1 = (long long)(R * s + tau1 * r) * A.SX + (long long)Y0 * A.SY + zb;
        for (int j = bj; j < NBI; j += blockDim.x)
          bulk_copy(band0 + (tau1 % NB) * BSTR + j * BULK_NZ,
                    at((j < NBF ? lvl(A, A.t0 + tau1) : A.c2) + b1, otab[j < NBF ? j : NIF * IPW + j - NBF]),
                    (unsigned)(NZc * sizeof(float)), bar);
      } else if constexpr (COOP) {
        float *const dq = band0 + (tau1 % NB) * BSTR + cz / 4 * NBIo * 4 + 4 * cq;
        const int *const tq = otab + cq;
        const long long b1 = (long long)(R * s + tau1 * r) * A.SX + (long long)Y0 * A.SY + zb + cz;
        const float *const srcb = lvl(A, A.t0 + tau1) + b1, *const c2b = A.c2 + b1;
        sfor<0, NIF>([&](auto I) {
          if (I < NIF - 1 || cq < NBF - (NIF - 1) * IPW) cp_async_16(dq + I * IPW * 4, at(srcb, tq[I * IPW]));
        });
        sfor<0, NIC>([&](auto I) {
          if (I < NIC - 1 || cq < NBC - (NIC - 1) * IPW)
            cp_async_16(dq + (NBF + I * IPW) * 4, at(c2b, tq[NIF * IPW + I * IPW]));
        });
      } else {
        float *dst = bandk + (tau1 % NB) * NBI * Z;
        const float *src = lvl(A, A.t0 + tau1);
        const long long b1 = base_of(R * s + tau1 * r);
        const float *const srcb = src + b1, *const c2b = A.c2 + b1;
        sfor<0, NBF>([&](auto J) {
          constexpr int u = TB::T.bfu[J], v = TB::T.bfv[J];
          cp_async_z<Z>(dst + J * Z, atb(srcb, boff((u + v) / 2, (u - v) / 2)));
        });
        sfor<0, NBC>([&](auto J) {
          constexpr int u = TB::T.bcu[J], v = TB::T.bcv[J];
          cp_async_z<Z>(dst + (NBF + J) * Z, atb(c2b, boff((u + v) / 2, (u - v) / 2)));
        });
      }
    }
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };

  // Zero the halo rows of both exchange buffers: groups [0, H/Z) (above z = 0: zero, or the image
  // written every step by the ghost threads) and [(NZc + H)/Z, (NZc + 2H)/Z) (below the column).
  // Not those at a seam: the neighbour CTA writes them every step.
  for (int e = threadIdx.x; e < 2 * 2 * (H / Z) * PZ; e += blockDim.x) {
    const int b = e / (2 * (H / Z) * PZ), rem = e % (2 * (H / Z) * PZ), g = rem / PZ, col = rem % PZ;
    if (g < H / Z ? rank == 0 : rank == CL - 1) xb[b * XBSZ + (g < H / Z ? g : NZc / Z + g) * PZ + col] = 0.0f;
  }
  if constexpr (COOP) {  // OT: entry J for p item J, NIF·IPW + J for c²dt² item J
    const int nt = blockDim.x;
    sfor<0, NBF>([&](auto J) {
      constexpr int u = TB::T.bfu[J], v = TB::T.bfv[J];
      if ((int)threadIdx.x == J % nt) otab[J] = off((u + v) / 2, (u - v) / 2);
    });
    sfor<0, NBC>([&](auto J) {
      constexpr int u = TB::T.bcu[J], v = TB::T.bcv[J];
      if ((int)threadIdx.x == J % nt) otab[NIF * IPW + J] = off((u + v) / 2, (u - v) / 2);
    });
  }
  // before the ghost threads write the image rows (and the copies read OT); over a cluster, before
  // any CTA stores into another's shared memory (every CTA of the cluster has started)
  cl_sync<CL>();

  // The first active step: the whole working set from memory.
  {
    const long long n = A.t0 + tlo;
    const float *cur = lvl(A, n), *old = lvl(A, n + 1);
    const long long b0 = base_of(R * s + tlo * r);
    float *const bfirst = bandk + (tlo % NB) * BSTR;
    sfor<0, NW>([&](auto I) {
      constexpr int u = TB::T.wu[I], v = TB::T.wv[I], b = TB::T.fromB[I];
      load_z<Z>(atb(cur + b0, boff((u + v) / 2, (u - v) / 2)), [&](auto J, float val) {
        if constexpr (HS && b >= 0) bfirst[b * BQ + J] = val;
        else F[J][I] = val;
      });
      // a one-time phase, but its register peak would set the whole kernel's count: in chunks
      if constexpr (I % 16 == 15) asm volatile("" ::: "memory");
    });
    sfor<0, ND>([&](auto I) {
      constexpr int u = TB::T.du[I], v = TB::T.dv[I];
      load_z<Z>(atb(old + b0, boff((u + v) / 2, (u - v) / 2)), [&](auto J, float val) { Gv[J][I] = val; });
      load_z<Z, true>(atb(A.c2 + b0, boff((u + v) / 2, (u - v) / 2)), [&](auto J, float val) { C[J][I] = val; });
      if constexpr (I % 16 == 15) asm volatile("" ::: "memory");
    });
  }
  if constexpr (BULK) {  // (the first frame's HS words and the parents' columns, before the async proxy)
    __syncthreads();
    if (bj < NBI) fence_proxy_async();
  }
  for (int j = 1; j < PD; j++) band_issue_async(tlo + j);
  colrec nextrec = {0, 0, 0, 0};
  // level t0 + tlo modulo the sample interval, counted up per step (a 64-bit remainder per step
  // cost 16 % of the run with receivers)
  int phase = A.ntap ? (int)((A.t0 + tlo) % A.interval) : 1;
  // the taps row of the next sample level this tower gathers: the first one above t0 + tlo (that
  // level itself came from memory); levels are gathered in increasing order, one row each
  long long trow = A.ntap ? (A.t0 + tlo) / A.interval + 1 - A.first : 0;
  // The z factors (step 4): 1 − a where a = az[z] alone (ZDAMP), and RN(1/(1 + az)), the factor of
  // tw_damp_g every damped path multiplies by. The towers take RN(1/(1 + a)) as __frcp_rn, the bits
  // of tw_damp_recip (tw_gpu_recip_check: every float in [1, 2^32)): with tw_damp_recip's
  // branch-free form the default tower ran 3 % slower (461 against 476 Gcell/s, docs/performance.md
  // session 34): the per-step factors no longer sat in a block of their own, and the schedule of the
  // whole step changed.
  const auto damp_recip = [](float a) { return __frcp_rn(1.0f + a); };
  float az_om[Z], az_g[Z];
  for (int j = 0; j < Z; j++) {
    az_om[j] = 1.0f - tw_damping(0.0f, 0.0f, azk[j]);
    az_g[j] = damp_recip(azk[j]);
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
    bcur = bandk + (tau % NB) * BSTR;
    const bool tap_prev = A.ntap && phase == 0 && tau > tlo;  // level n, computed at τ−1
    const int phase1 = phase + 1 == A.interval ? 0 : phase + 1;
    const bool tap_next = A.ntap && phase1 == 0;  // level n + 1, computed now
    phase = phase1;
    // Receiver records: the columns whose taps are gathered at the start of step τ+1 (or in the
    // flush) are this frame's: loaded a whole step ahead of their use, after this step's gather
    // (below: issued before the barrier, the load shared a scoreboard with the one of the step
    // before, and the gather's first test of `mine` waited for this step's load, 2.8 % of the
    // order-4 tower's stall samples; moved, +1–2.7 % at order 2 and order 4 over a cluster or at 6
    // warps, −2 % in order 4's one-CTA tower with bulk copies, which keeps it here; at the end of the
    // step, −5 … −9 %: docs/performance.md, session 45).
    constexpr bool REC_EARLY = BULK && CL == 1;
    const colrec mine = nextrec;
    if (REC_EARLY && tap_next && myc < ND) nextrec = load_colrec<R>(A, myc, X0, Y0);

    // 1. exchange: p^n of the diamond for the z-neighbours (+ the image above a free surface,
    //    + the columns that left D last step when level n is a sample).
    auto store_row = [&](float *dst) {
      // VZ: the row's values first, then its stores (the HS columns' values are loads from the band:
      // one between two of the row's STS.128, each store waited for its load; and a store is never
      // moved above a later load of another buffer, which the compiler cannot tell apart from the
      // row. 3 % of the order-4 tower's stall samples: +1.2–3.7 %, docs/performance.md session 45)
      if constexpr (VZ) {
        float t[ND];
        sfor<0, ND>([&](auto I) { t[I] = fgetD(std::integral_constant<int, 0>{}, I); });
        sfor<0, ND / 4>([&](auto Q) {
          *reinterpret_cast<float4 *>(dst + 4 * Q) = make_float4(t[4 * Q], t[4 * Q + 1], t[4 * Q + 2], t[4 * Q + 3]);
        });
      } else
        sfor<0, ND>([&](auto I) { store_z<Z>(dst + Z * I, [&](auto J) { return fgetD(J, I); }); });
    };
    store_row(row);
    if constexpr (CL > 1)
      if (seam) store_row(seam + (tau & 1) * XBSZ);
    // (free surface: the threads holding z = 1 … r write the image −p[z] to row H − z; the
    // condition evaluated here, not held across the loop: that register made the z-damped
    // path spill at order 2, DTS 4)
    sfor<0, Z>([&](auto J) {
      const int z = zb + Z * k + J;
      if (A.fs && z >= 1 && z <= r && z < A.N2) {
        float *const grow = xbb + xaddr<Z>(H - z, 0, PZ);
        sfor<0, ND>([&](auto I) { grow[Z * I] = -fgetD(J, I); });
      }
    });
    if (tap_prev)
      sfor<0, NL>([&](auto L) {
        store_z<Z>(row + Z * (ND + L), [&](auto J) { return fget(J, std::integral_constant<int, TB::T.plw[L]>{}); });
      });
    // the damping of this frame's columns in steps that touch an x or y layer (elsewhere axy = +0
    // and its factor 1): thread i computes column i's axy = tw_damping_xy(ax, ay) and RN(1/(1 + axy))
    // (D column i at u = i / R, v = 2(i % R) + (u & 1): row (u + v) / 2, y (u − v) / 2)
    const bool xdamp = !(X0 >= A.xz0 && X0 + 2 * R <= A.xz1);
    const bool xydamp = ydamp || xdamp;
    float *const sd = sdamp + (tau & 1) * 2 * ND;
    if (xydamp && k < ND) {
      const int u = k / R, v = 2 * (k % R) + (u & 1);
      const float axy = tw_damping_xy(__ldg(&A.ax[X0 + (u + v) / 2]), __ldg(&A.ay[Y0 + (u - v) / 2]));
      sd[2 * k] = axy;
      sd[2 * k + 1] = damp_recip(axy);
    }
    if constexpr (CL > 1) cl_arrive<CL>();  // (the seam rows: waited for below, at a seam first)
    __syncthreads();
    if constexpr (CL > 1)
      if (seamw) cl_wait<CL>();
    if (tap_prev) gather_taps<r, R, Z, H>(A, xbb, PZ, X0 - r, Y0, trow++, myc, myslot, mine, zb, NZc);
    if (!REC_EARLY && tap_next && myc < ND) nextrec = load_colrec<R>(A, myc, X0, Y0);

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
    //    FAST    no damping in the warp's cells, no source (the interior);
    //    ZDAMP   damping in z only (a = az[z], the same for all of a cell's columns), per warp;
    //    DAMPED  a step that touches an x or y layer, without a source: a = axy + az, g = the
    //            column's factor (sd) times the cell's z factor; the whole block, one path;
    //    SOURCE  a source in this tower's step: DAMPED's arithmetic (axy = 0 and its factor 1 outside
    //            the x and y layers) with S added to L in the source cells.
    //    No path takes a reciprocal per cell (tw_damp_g). The layers' towers form a dependency chain
    //    through the stages, and every tower crosses the x layers: a step of theirs costs a few
    //    multiplications a cell more than the interior's (docs/performance.md, sessions 5, 33).
    const bool src = e1 > e0;  // uniform over the block
    // p^n of the cell j + d (d ≠ 0, relative to the thread's first cell) in column i: the thread's
    // own register when that cell is its own, else the exchange buffer
    auto zget = [&](auto Jc, auto Ic, auto Dc) -> float {
      constexpr int jd = (int)Jc + (int)Dc;
      if constexpr (jd >= 0 && jd < Z) {
        return fgetD(std::integral_constant<int, jd>{}, Ic);
      } else if constexpr (VZ) {  // (the four columns' loads of a group are one: the compiler merges them)
        const float4 q = *reinterpret_cast<const float4 *>(row + jd * PZ + 4 * ((int)Ic / 4));
        constexpr int c = (int)Ic % 4;
        return c == 0 ? q.x : c == 1 ? q.y : c == 2 ? q.z : q.w;
      } else {
        return row[floor_div(jd, Z) * PZ + (jd - floor_div(jd, Z) * Z) + Z * (int)Ic];
      }
    };
    auto lap = [&](auto J, auto I) -> float {
      constexpr int i = I;
      const float p0x2 = 2.0f * fgetD(J, I);
      float chain[2] = {0.0f, 0.0f};
      sfor<1, r + 1>([&](auto M) {
        constexpr int m = M;
        constexpr int xm = TB::T.nb[i][0][m - 1], xp = TB::T.nb[i][1][m - 1];
        constexpr int ym = TB::T.nb[i][2][m - 1], yp = TB::T.nb[i][3][m - 1];
        float &acc = chain[tw_lap_chain(m)];
        if constexpr (YX) {  // (the grid's x is the frame's y: its weights, first)
          acc = tw_lap_term(acc, A.st.w[0][m], fget(J, std::integral_constant<int, ym>{}), fget(J, std::integral_constant<int, yp>{}), p0x2);
          acc = tw_lap_term(acc, A.st.w[1][m], fget(J, std::integral_constant<int, xm>{}), fget(J, std::integral_constant<int, xp>{}), p0x2);
        } else {
          acc = tw_lap_term(acc, A.st.w[0][m], fget(J, std::integral_constant<int, xm>{}), fget(J, std::integral_constant<int, xp>{}), p0x2);
          acc = tw_lap_term(acc, A.st.w[1][m], fget(J, std::integral_constant<int, ym>{}), fget(J, std::integral_constant<int, yp>{}), p0x2);
        }
        acc = tw_lap_term(acc, A.st.w[2][m], zget(J, I, std::integral_constant<int, -m>{}), zget(J, I, std::integral_constant<int, m>{}), p0x2);
      });
      return tw_lap_sum(r, chain[0], chain[1]);
    };
    // 1 − a and g of cell (j, column i) in a step that touches an x or y layer (tw_cell_update_damped)
    auto col_om = [&](auto J, auto I) -> float { return 1.0f - (sd[2 * (int)I] + azk[J]); };
    auto col_g = [&](auto J, auto I) -> float { return sd[2 * (int)I + 1] * az_g[J]; };
    // Keep the scheduler from hoisting every shared-memory load of the step ahead of the
    // arithmetic (it would, and run out of registers at high order): a fence every 8 columns.
    auto fence8 = [](auto I) {
      if constexpr (I % 8 == 7) asm volatile("" ::: "memory");
    };
    if constexpr (NOCOMP) {
    } else if (src) {
      sfor<0, ND>([&](auto I) {
        constexpr int i = I;
        sfor<0, Z>([&](auto J) {
          const float p0 = fgetD(J, I);
          float acc = lap(J, I);
          const int z = zb + Z * k + J;
#pragma unroll 1
          for (int e = e0; e < e1; e++)
            if (A.ev[e].col == i && A.ev[e].k == z) acc = acc + A.ev[e].S;
          // the damped formula for every cell, a = 0 included (exact there: tw_stencil.h), so that a
          // warp that straddles a layer's edge takes one path instead of both
          Gv[J][i] = tw_cell_update_damped_g(p0, Gv[J][i], acc, C[J][i], xydamp ? col_om(J, I) : az_om[J],
                                             xydamp ? col_g(J, I) : az_g[J]);
        });
        fence8(I);
      });
    } else if (xydamp) {
      damped_update<ND, Z>(Gv, C, fgetD, lap, fence8, col_om, col_g);
    } else if (wz) {
      damped_update<ND, Z>(Gv, C, fgetD, lap, fence8, [&](auto J, auto) { return az_om[J]; },
                           [&](auto J, auto) { return az_g[J]; });
    } else {
      sfor<0, ND>([&](auto I) {
        sfor<0, Z>([&](auto J) { Gv[J][I] = tw_cell_update_undamped(fgetD(J, I), Gv[J][I], lap(J, I), C[J][I]); });
        fence8(I);
      });
    }

    // 5. columns that leave D: p^{n+1} and, when this tower computed it, p^n.
    float *const nxt = lvl(A, n + 1) + b0, *const curp = lvl(A, n) + b0;
    if constexpr (!NOMEM) sfor<0, NL>([&](auto L) {
      constexpr int i = TB::T.lc[L], u = TB::T.du[i], v = TB::T.dv[i];
      constexpr bool prev = TB::T.prevIn[i];
      store_z<Z>(atb(nxt, boff((u + v) / 2, (u - v) / 2)), [&](auto J) { return Gv[J][i]; });
      if constexpr (prev)
        if (tau > tlo)
          store_z<Z>(atb(curp, boff((u + v) / 2, (u - v) / 2)),
                     [&](auto J) { return fgetD(J, std::integral_constant<int, i>{}); });
    });

    if constexpr (CL > 1)
      if (!seamw) cl_wait<CL>();

    if (tau + 1 < thi) {
      // 6. shift to frame τ+1: what this tower computed, what it loaded.
      if constexpr (BULK) {
        if (!NOMEM) {
          const int b1 = (tau + 1) % NB;
          mbar_wait(bars + b1, (bph >> b1) & 1u);
          bph ^= 1u << b1;
        }
      } else {
        cp_async_wait<PD - 1>();  // the band of τ+1 (the later ones may still be in flight)
        if constexpr (COOP) __syncwarp();  // (the other lanes' copies of this thread's cells)
      }
      const float *srcb = bandk + ((tau + 1) % NB) * BSTR;
      if constexpr (!HS)
        sfor<0, NBF>([&](auto B) { load_z<Z>(srcb + B * BQ, [&](auto J, float x) { BF[J][B] = x; }); });
      sfor<0, NBC>([&](auto B) { load_z<Z>(srcb + (NBF + B) * BQ, [&](auto J, float x) { BC[J][B] = x; }); });
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
          store_z<Z>(atb(nxt, boff((u + v) / 2, (u - v) / 2)), [&](auto J) { return Gv[J][i]; });
          if constexpr (prev)
            if (tau > tlo) store_z<Z>(atb(curp, boff((u + v) / 2, (u - v) / 2)), [&](auto J) { return fgetD(J, I); });
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
        gather_taps<r, R, Z, H>(A, xbn, PZ, X0, Y0, trow, myc, myslot, nextrec, zb, NZc);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the exchange buffers are reused by the next tower (persistent mode)
}

// Decode a ticket of the persistent grid into (stage, tower centre): stages from s_top down, each
// with tw_stage_towers towers (two alternating counts).
__host__ __device__ __forceinline__ void decode_ticket(const dia_args &A, int t, int *s, int *kk) {
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
// The kernel's body, one CTA (CL = 1) or a cluster of CL CTAs a tower: rank 0 takes the tickets
// (and hands each to the others' shared memory), waits for the predecessors and marks the tower
// done after the cluster's barrier; every CTA's stores are fenced before that barrier.
template <int r, int DTS, int Z, bool YX, int NB, int CL, bool BULK>
__device__ __forceinline__ void tower_body(const dia_args &A) {
  DIA_DYN_SMEM(sm);
  unsigned bph = 0;  // BULK: the parity of each band buffer's next phase, bit b
  if constexpr (BULK) {  // (the barriers: the 4 words before the band, after both exchange buffers: run_tower)
    const int XBSZ = exch_floats<r, DTS, Z>(A.NZp / CL);
    if (threadIdx.x == 0)
      for (int b = 0; b < NB; b++) mbar_init((unsigned long long *)(sm + (2 * XBSZ + 3) / 4 * 4) + b, 1);
    __syncthreads();
  }
  if (!A.persistent) {
    const int s = A.s;
    run_tower<r, DTS, Z, YX, NB, CL, BULK>(A, s, ((s % 2) + 2) % 2 + 2 * (int)(blockIdx.x / CL), sm, bph);
    return;
  }
  const int rank = cl_rank<CL>();
  int *const sh_ticket = (int *)(sm + (tower_smem_bytes<r, DTS, Z, NB, BULK>(A.NZp / CL) / sizeof(float) - 1));
  // (every CTA of the cluster has started before rank 0 stores the first ticket into their shared
  // memory: compute-sanitizer's racecheck flagged that store without it)
  if constexpr (CL > 1) cl_sync<CL>();
  // (A tower costs ~2–3 steps more than its steps, most of it between its parents' flags and its
  // first step's barrier. Taking the next ticket when a tower ends, polling both parents at once,
  // or prefetching the next tower's first frame into the L2 there, measured no faster:
  // docs/performance.md, session 39.)
  for (;;) {
    if (threadIdx.x == 0 && rank == 0) {
      const int t = (int)(atomicAdd(A.ticket, 1u) - A.ticket_base);
      for (int c = 0; c < CL; c++) *(int *)cl_smem<CL>((float *)sh_ticket, c) = t;
    }
    cl_sync<CL>();
    const int t = sh_ticket[0];
    cl_sync<CL>();  // (before the next ticket's store)
    if (t >= A.ntowers) break;
    int s, kk;
    decode_ticket(A, t, &s, &kk);
    // (trace: stored at once, so that nothing extra stays live across run_tower)
    if (A.trace && threadIdx.x == 0 && rank == 0) A.trace[4 * (size_t)t] = dia_clock_ns();
    if (threadIdx.x == 0) {
      // Everything up-right of T(p, q) in the (p, q) lattice must be done: its parents
      // (schedule.h, tw_tower_preds, the rule cpu-diamond's tasks follow too) cover it. (Every CTA
      // of a cluster waits itself, so that each acquires the stores it reads.)
      tw_schedule sc;
      sc.s_hi = A.s_hi, sc.kmax = A.kmax;
      int ps[2], pk[2];
      const int np = tw_tower_preds(&sc, s, kk, ps, pk);
      for (int j = 0; j < np; j++)
        while (ld_acquire(&A.done[flag_index(A, ps[j], pk[j])]) < A.epoch) dia_nanosleep(100);
      __threadfence();
    }
    if (A.trace && threadIdx.x == 0 && rank == 0) A.trace[4 * (size_t)t + 1] = dia_clock_ns();
    __syncthreads();
    run_tower<r, DTS, Z, YX, NB, CL, BULK>(A, s, kk, sm, bph);
    __threadfence();
    cl_sync<CL>();  // every CTA of the tower has stored its part
    if (threadIdx.x == 0 && rank == 0) {
      if (A.trace) {
        const size_t tt = (size_t)sh_ticket[0];  // (not written again before the barrier above the next ticket)
        A.trace[4 * tt + 2] = dia_clock_ns();
        A.trace[4 * tt + 3] = dia_smid();
      }
      st_release(&A.done[flag_index(A, s, kk)], A.epoch);
    }
  }
}
template <int r, int DTS, int Z, bool YX = false, int NB = band_buffers<r, DTS, Z>(), bool BULK = false>
__global__ void __launch_bounds__(tower_max_threads<r, DTS, Z>(), 1) tower_kernel(const dia_args A) {
  tower_body<r, DTS, Z, YX, NB, 1, BULK>(A);
}
// The z column over a cluster of 2 CTAs (sm_90), each of at most tower_max_threads: order 4's
// tower at Nz 257–512.
template <int r, int DTS, int Z, bool YX = false, int NB = band_buffers<r, DTS, Z>(), bool BULK = false>
__global__ void DIA_CLUSTER_DIMS2 __launch_bounds__(tower_max_threads<r, DTS, Z>(), 1)
    tower_kernel_cl2(const dia_args A) {
#if DIA_CLUSTERS
  tower_body<r, DTS, Z, YX, NB, 2, BULK>(A);
#endif
}

// ---------------------------------------------------------------------------------- generic tower

// p^n at (column offset cb, z = kz + m) with docs/design.md §1's rules in z (x/y padding is zero).
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
        const long long cb = (long long)x * A.SX + (long long)y * A.SY;
        const float axv = A.ax[x], ayv = A.ay[y];
        colrec ct = {0, 0, 0, 0};
        if (tapstep) ct = A.coltap[(long long)x * A.N1 + y];
        for (int kz = threadIdx.x; kz < A.N2; kz += blockDim.x) {
          const long long c = cb + kz;
          const float p0 = cur[c], p0x2 = 2.0f * p0;
          float chain[2] = {0.0f, 0.0f};
#pragma unroll
          for (int m = 1; m <= r; m++) {
            float &a = chain[tw_lap_chain(m)];
            // (the grid's x first: with A.yx the frame's x is the grid's y)
            const long long sg = A.yx ? A.SY : A.SX, sh = A.yx ? A.SX : A.SY;
            a = tw_lap_term(a, A.st.w[0][m], cur[c - m * sg], cur[c + m * sg], p0x2);
            a = tw_lap_term(a, A.st.w[1][m], cur[c - m * sh], cur[c + m * sh], p0x2);
            a = tw_lap_term(a, A.st.w[2][m], zval(A, cur, cb, kz - m), zval(A, cur, cb, kz + m), p0x2);
          }
          float acc = tw_lap_sum(r, chain[0], chain[1]);
          for (int e = e0; e < e1; e++)
            if (A.ev[e].col == col && A.ev[e].k == kz) acc = acc + A.ev[e].S;
          const float val = tw_cell_update(p0, nxt[c], acc, A.c2[c], tw_damping_xy(axv, ayv), A.az[kz]);
          nxt[c] = val;
          for (int t = ct.first; t < ct.first + ct.count; t++)
            if (A.tapk[t] == kz) A.taps[tap_row(A, n + 1) * A.ntap + t] = val;
        }
      }
    __syncthreads();
  }
}

}  // namespace
