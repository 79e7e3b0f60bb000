// smemtower.cu — a measurement, not part of the solver (#16, docs/performance.md "Session 16"): a
// DiamondTorre tower whose state lives in shared memory, with its geometry and its band — the step
// after smemtile.cu, which measured the same update on a fixed tile.
//
// One CTA runs one tower of a stage (solver/schedule.h's geometry in rotated coordinates a = x + y,
// b = x − y: at local step τ the tower updates the diamond a ∈ [A, A + 2R), b ∈ [B, B + 2R),
// a ≡ b mod 2, A = 2Rp + τr, B = 2Rq + τr) for nt steps, one thread a diamond column (a row of R
// columns on R rounded up to 8 lanes), z columns of ZC = 32 cells (zero above and below: the z split
// over a cluster is smemtile.cu's). Shared memory holds both time levels of the tower's square with
// its halo, a ∈ [A − r, A + 2R + r) and likewise b, in a ring of S × S/2 columns (S = 2R + 2r, a power
// of two; (a, b) in slot (a mod S)·S/2 + (b mod S)/2): the square moves by (r, r) a step, so the slots
// that its low edges leave are the ones its high edges take. Each step:
//   - the columns that left the diamond the step before are stored (both levels: their last),
//   - the band for the next step comes in by cp.async: every column of the next square that this
//     step does not compute (a strip of width 2r: the diamond's new columns and the halo around
//     them), at level τ + 1,
//   - every thread updates its column (c²dt² from global memory, the other values from the ring).
// At the end the diamond's columns are stored. The kernel runs one stage's towers (independent:
// schedule.h), with every column outside the towers at the levels the arrays hold; the host
// replays the same stage tower by tower on the two arrays with tw_stencil.h's update (as cpu-diamond
// runs a tower) and the result is compared bit for bit.
// Towers of height 32 and 128 (their difference: a step's own cost; the host checks height 32).
//   nvcc -O3 -arch=sm_90 -std=c++17 -fmad=false -ftz=true -o smemtower scripts/experiments/smemtower.cu
//   ./smemtower [reps]     DIAG=1: also without parts of the band (timing only, wrong bits);
//                          PROF=1 NOCHECK=1: one launch each, for ncu
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ck.cuh"
#include "smemupdate.cuh"

constexpr int ZC = 32, ZOFF = 4, PZ = 44;  // as smemtile.cu: column pitch 44 floats, k = 0 at 4

template <int r, int R>
struct TG {
  static constexpr int S = 2 * R + 2 * r;  // ring side in a and in b
  static constexpr int SH = S / 2;         // slots per a (checkerboard)
  static constexpr int NSLOT = S * SH;
  static constexpr int NC = 2 * R * R;  // the diamond's columns
  // threads: a row of the diamond (fixed a − A, R columns) on RL lanes, RL = R rounded up to 8, so
  // that the 8 lanes of a quarter-warp never straddle two rows: straddling rows put two lanes on one
  // bank group (their b / 2 mod 8 repeat) and cost 25 % more shared-memory wavefronts (Nsight)
  static constexpr int RL = (R + 7) / 8 * 8, NT = 2 * R * RL;
  static constexpr int BUF = NSLOT * PZ;
  static_assert((S & (S - 1)) == 0, "the ring side must be a power of two");
};

__host__ __device__ inline size_t gcol(int N1, int x, int y) { return ((size_t)x * N1 + y) * ZC; }

template <int r, int R>
__device__ __forceinline__ int slot_of(int a, int b) {
  using G = TG<r, R>;
  return ((a & (G::S - 1)) * G::SH + ((b & (G::S - 1)) >> 1)) * PZ + ZOFF;
}

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(float *dst, const float *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}

// The band's columns, the same every step relative to the tower's corner (A, B): the columns of the
// next square (side 2R + 2r from (A, B)) that a step does not compute, α ≥ 2R or β ≥ 2R ("load"), and
// the columns that left the diamond, α < r or β < r from (A − r, B − r) ("store"), α ≡ β mod 2. The
// host lists them; a thread takes items j = t, t + NT, … (item j: column j / 8, chunk j % 8 of 16
// bytes) and keeps them packed in registers (α | β << 8 | chunk << 16), so that a step's band costs
// a few instructions an item instead of enumerating the strips (a first version did: 25 of its 76
// instructions per update).
template <int r, int R>
struct Band {
  static constexpr int S = 2 * R + 2 * r;
  static constexpr int NL = (S * S - 4 * R * R) / 2, NS = (4 * R * R - (2 * R - r) * (2 * R - r)) / 2;
  static constexpr int NT = TG<r, R>::NT, LI = (NL * (ZC / 4) + NT - 1) / NT, SI = (NS * (ZC / 4) + NT - 1) / NT;
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

template <int r, int R>
__global__ void __launch_bounds__(TG<r, R>::NT, 1)
    tower_kernel(float *__restrict__ g0, float *__restrict__ g1, const float *__restrict__ c2g, Wt<r> w, int N1, int s,
                 int k0, int nt, int diag, const int *__restrict__ lcells, const int *__restrict__ scells) {
  using G = TG<r, R>;
  using BD = Band<r, R>;
  extern __shared__ float4 sm4[];
  float *sm = reinterpret_cast<float *>(sm4);
  // level m in buffer m & 1 and in array m & 1 (level −1 in g1); selects, not arrays, so that
  // nothing is indexed at run time (local memory)
  const auto buf = [&](int i) { return i ? sm + G::BUF : sm; };
  const auto gl = [&](int i) { return i ? g1 : g0; };
  const int k = k0 + 2 * blockIdx.x, p = (s + k) / 2, q = (s - k) / 2;
  const int t = threadIdx.x, da = t / G::RL, db = 2 * (t % G::RL) + (da & 1);
  const bool active = t % G::RL < R;  // a lane of the row's padding: band items and barriers only
  for (int i = t; i < 2 * G::BUF; i += blockDim.x) sm[i] = 0.0f;
  int lit[BD::LI], sit[BD::SI];  // this thread's band items, −1: none
#pragma unroll
  for (int i = 0; i < BD::LI; i++) {
    const int j = t + i * BD::NT;
    lit[i] = j < BD::NL * (ZC / 4) ? lcells[j / (ZC / 4)] | (j % (ZC / 4)) << 16 : -1;
  }
#pragma unroll
  for (int i = 0; i < BD::SI; i++) {
    const int j = t + i * BD::NT;
    sit[i] = j < BD::NS * (ZC / 4) ? scells[j / (ZC / 4)] | (j % (ZC / 4)) << 16 : -1;
  }
  __syncthreads();
  // the square of step 0 at level 0, the diamond's level −1
  {
    const int A = 2 * R * p, B = 2 * R * q;
    const int n = 2 * R + 2 * r, cols = n * n;
    for (int j = t; j < cols * (ZC / 4); j += blockDim.x) {
      const int i = j / (ZC / 4), c = j % (ZC / 4), al = i / n, be = i % n;
      if ((al ^ be) & 1) continue;
      const int a = A - r + al, b = B - r + be, x = (a + b) / 2, y = (a - b) / 2;
      cp16(buf(0) + slot_of<r, R>(a, b) + 4 * c, gl(0) + gcol(N1, x, y) + 4 * c);
      if (al >= r && al < r + 2 * R && be >= r && be < r + 2 * R)
        cp16(buf(1) + slot_of<r, R>(a, b) + 4 * c, gl(1) + gcol(N1, x, y) + 4 * c);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
  }
  for (int tau = 0; tau < nt; tau++) {
    const int cb = tau & 1, nb = cb ^ 1;
    const int A = 2 * R * p + tau * r, B = 2 * R * q + tau * r;
    const int a = A + da, b = B + db, x = (a + b) / 2, y = (a - b) / 2;
    float4 c2r[ZC / 4];  // this column's c²dt², loaded first: its latency behind the band's work
    {
      const float4 *c2v = reinterpret_cast<const float4 *>(c2g + ((diag & 4) ? gcol(N1, 0, t) : gcol(N1, x, y)));
#pragma unroll
      for (int qq = 0; qq < ZC / 4; qq++) c2r[qq] = active ? __ldg(c2v + qq) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    // 1. the columns that left the diamond at this step (in it at τ − 1): both levels, their last
    if (tau > 0 && !(diag & 2)) {
#pragma unroll
      for (int i = 0; i < BD::SI; i++)
        if (sit[i] >= 0) {
          const int a = A - r + (sit[i] & 255), b = B - r + (sit[i] >> 8 & 255), c = sit[i] >> 16;
          const int x = (a + b) / 2, y = (a - b) / 2, sl = slot_of<r, R>(a, b) + 4 * c;
          const size_t g = gcol(N1, x, y) + 4 * c;
          *reinterpret_cast<float4 *>(gl(tau & 1) + g) = *reinterpret_cast<const float4 *>(buf(cb) + sl);
          *reinterpret_cast<float4 *>(gl((tau - 1) & 1) + g) = *reinterpret_cast<const float4 *>(buf(nb) + sl);
        }
      __syncthreads();  // read out before the band below takes their slots
    }
    // 2. the band of step τ + 1, into the buffer of level τ + 1: every column of the square of τ + 1
    //    (from (A, B), side 2R + 2r) that this step does not compute — its top strip of width 2r,
    //    the diamond's new columns and the halo around them (the halo's side corners hold other
    //    towers' columns, read at a new level every step)
    if (tau + 1 < nt && !(diag & 1))
#pragma unroll
      for (int i = 0; i < BD::LI; i++)
        if (lit[i] >= 0) {
          const int a = A + (lit[i] & 255), b = B + (lit[i] >> 8 & 255), c = lit[i] >> 16;
          const int x = (a + b) / 2, y = (a - b) / 2;
          cp16(buf(nb) + slot_of<r, R>(a, b) + 4 * c, gl((tau + 1) & 1) + gcol(N1, x, y) + 4 * c);
        }
    // 3. the update of this thread's column
    if (active) {
      const float *cur = buf(cb) + slot_of<r, R>(a, b);
      float *nxt = buf(nb) + slot_of<r, R>(a, b);
      const float *cx[2 * r + 1], *cy[2 * r + 1];
#pragma unroll
      for (int m = 1; m <= r; m++) {
        cx[r - m] = buf(cb) + slot_of<r, R>(a - m, b - m), cx[r + m] = buf(cb) + slot_of<r, R>(a + m, b + m);
        cy[r - m] = buf(cb) + slot_of<r, R>(a - m, b + m), cy[r + m] = buf(cb) + slot_of<r, R>(a + m, b - m);
      }
      float win[ZC + 2 * ZOFF];
#pragma unroll
      for (int qq = 0; qq < (ZC + 2 * ZOFF) / 4; qq++) {
        const float4 v = *reinterpret_cast<const float4 *>(cur - ZOFF + 4 * qq);
        win[4 * qq] = v.x, win[4 * qq + 1] = v.y, win[4 * qq + 2] = v.z, win[4 * qq + 3] = v.w;
      }
#pragma unroll
      for (int qq = 0; qq < ZC / 4; qq++) {
        float4 xm[r + 1], xp[r + 1], ym[r + 1], yp[r + 1];
#pragma unroll
        for (int m = 1; m <= r; m++) {
          xm[m] = *reinterpret_cast<const float4 *>(cx[r - m] + 4 * qq);
          xp[m] = *reinterpret_cast<const float4 *>(cx[r + m] + 4 * qq);
          ym[m] = *reinterpret_cast<const float4 *>(cy[r - m] + 4 * qq);
          yp[m] = *reinterpret_cast<const float4 *>(cy[r + m] + 4 * qq);
        }
        const float4 pm4 = *reinterpret_cast<const float4 *>(nxt + 4 * qq), c24 = c2r[qq];
        const float pmv[4] = {pm4.x, pm4.y, pm4.z, pm4.w}, c2s[4] = {c24.x, c24.y, c24.z, c24.w};
        *reinterpret_cast<float4 *>(nxt + 4 * qq) = update4<r>(win, 4 * qq + ZOFF, xm, xp, ym, yp, pmv, c2s, w);
      }
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
  }
  // the diamond of the last step: levels nt and nt − 1
  if (active) {
    const int A = 2 * R * p + (nt - 1) * r, B = 2 * R * q + (nt - 1) * r;
    const int a = A + da, b = B + db, x = (a + b) / 2, y = (a - b) / 2, sl = slot_of<r, R>(a, b);
#pragma unroll
    for (int c = 0; c < ZC / 4; c++) {
      *reinterpret_cast<float4 *>(gl(nt & 1) + gcol(N1, x, y) + 4 * c) =
          *reinterpret_cast<const float4 *>(buf(nt & 1) + sl + 4 * c);
      *reinterpret_cast<float4 *>(gl((nt - 1) & 1) + gcol(N1, x, y) + 4 * c) =
          *reinterpret_cast<const float4 *>(buf((nt - 1) & 1) + sl + 4 * c);
    }
  }
}

// The host: the same stage, tower after tower, on the two arrays (cpu-diamond's way).
template <int r, int R>
static void host_stage(std::vector<float> &g0, std::vector<float> &g1, const std::vector<float> &c2, int N1, int s,
                       int k0, int ntow, int nt, const tw_stencil &st) {
  std::vector<float> *gl[2] = {&g0, &g1};
  for (int i = 0; i < ntow; i++) {
    const int k = k0 + 2 * i, p = (s + k) / 2, q = (s - k) / 2;
    for (int tau = 0; tau < nt; tau++) {
      const std::vector<float> &cur = *gl[tau & 1];
      std::vector<float> &nxt = *gl[(tau + 1) & 1];
      for (int da = 0; da < 2 * R; da++)
        for (int db = da & 1; db < 2 * R; db += 2) {
          const int a = 2 * R * p + tau * r + da, b = 2 * R * q + tau * r + db, x = (a + b) / 2, y = (a - b) / 2;
          for (int z = 0; z < ZC; z++) {
            const size_t o = gcol(N1, x, y) + z;
            // z neighbours: zero outside [0, ZC)
            float zb[2 * 8 + 1];
            for (int m = -r; m <= r; m++) zb[m + r] = (z + m >= 0 && z + m < ZC) ? cur[o + m] : 0.0f;
            const float lap = tw_laplacian(r, &st, &cur[o], (long)N1 * ZC, &cur[o], ZC, &zb[r], 1);
            nxt[o] = tw_cell_update_undamped(cur[o], nxt[o], lap, c2[o]);
          }
        }
    }
  }
}

template <int r, int R>
static void run(int reps, int nt, const cudaDeviceProp &prop, int diag = 0) {
  using G = TG<r, R>;
  const int ntow = prop.multiProcessorCount;  // one wave
  // stage s = 4 and towers k0, k0 + 2, …: every square of every step inside the grid
  const int s = 4, k0 = 4;
  const int N0 = R * s + (nt - 1) * r + 2 * R + 2 * r + 8;
  const int N1 = R * (k0 + 2 * ntow) + 2 * R + 8;
  const size_t n = (size_t)N0 * N1 * ZC;
  std::vector<float> h0(n), h1(n), hc2(n);
  srand(777 + r);
  for (size_t i = 0; i < n; i++) {
    h0[i] = (float)rand() / RAND_MAX - 0.5f;
    h1[i] = (float)rand() / RAND_MAX - 0.5f;
    hc2[i] = 0.05f + 0.1f * (float)rand() / RAND_MAX;
  }
  tw_stencil st;
  Wt<r> w;
  test_weights(w, st);
  float *d0, *d1, *dc2;
  for (float **a : {&d0, &d1, &dc2}) CK(cudaMalloc(a, n * 4));
  const std::vector<int> lc = band_cells<r, R>(true), sc = band_cells<r, R>(false);
  if ((int)lc.size() != Band<r, R>::NL || (int)sc.size() != Band<r, R>::NS) {
    fprintf(stderr, "band lists: %zu / %zu columns, expected %d / %d\n", lc.size(), sc.size(), Band<r, R>::NL,
            Band<r, R>::NS);
    exit(1);
  }
  int *dl, *ds;
  CK(cudaMalloc(&dl, lc.size() * sizeof(int)));
  CK(cudaMalloc(&ds, sc.size() * sizeof(int)));
  CK(cudaMemcpy(dl, lc.data(), lc.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ds, sc.data(), sc.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dc2, hc2.data(), n * 4, cudaMemcpyHostToDevice));
  const size_t smem = 2 * (size_t)G::BUF * sizeof(float);
  auto kern = tower_kernel<r, R>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int rep = 0; rep <= reps; rep++) {  // rep 0: the checked run (fresh arrays)
    CK(cudaMemcpy(d0, h0.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d1, h1.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaEventRecord(e0));
    kern<<<ntow, G::NT, smem>>>(d0, d1, dc2, w, N1, s, k0, nt, diag, dl, ds);
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
  const bool check = nt <= 32 && !getenv("NOCHECK");  // the host replays short towers only (time)
  if (check) host_stage<r, R>(h0, h1, hc2, N1, s, k0, ntow, nt, st);
  size_t bad = 0;
  for (size_t i = 0; check && i < n; i++) bad += memcmp(&h0[i], &o0[i], 4) != 0 || memcmp(&h1[i], &o1[i], 4) != 0;
  const double cells = (double)ntow * G::NC * ZC * nt;
  const double rate = cells / (best * 1e-3) / 1e9;
  // bytes a tower moves per step: the band in (two strips, one level each), the leaving strip out
  // (two levels), c²dt² of every column
  const double band = ((2.0 * R + 2 * r) * (2 * R + 2 * r) - 4.0 * R * R) / 2 +  // in: one level
                      (4.0 * R * R - (2.0 * R - r) * (2 * R - r)) / 2 * 2;       // out: two levels
  if (diag)
    printf("(diagnostic %d: %s%s%s, wrong bits) ", diag, diag & 1 ? "no band in " : "", diag & 2 ? "no band out " : "",
           diag & 4 ? "c2dt2 not gathered" : "");
  printf(
      "order %d, R = %d (DTS %d), %d towers of %d columns x %d, %d steps: %zu KB smem, %.2f us/step, %7.1f "
      "Gcell/s (%.2f per SM), %.1f us a launch; band %.1f B/update + c2dt2 4; check %s\n",
      2 * r, R, R / r, ntow, G::NC, ZC, nt, smem >> 10, best * 1e3 / nt, rate, rate / ntow, best * 1e3,
      band * ZC * 4 / (G::NC * ZC),
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

int main(int argc, char **argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 3;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (!getenv("PROF"))
    for (int nt : {32, 128}) {     // tower heights: the difference is the cost of a step alone
      run<4, 12>(reps, nt, prop);  // order 8, DTS 3: S = 32
      run<2, 14>(reps, nt, prop);  // order 4, DTS 7: S = 32
    }
  if (getenv("PROF")) {  // one launch each, for ncu
    run<4, 12>(0, 32, prop);
    run<4, 12>(0, 32, prop, 7);
    return 0;
  }
  if (getenv("DIAG"))
    for (int d : {1, 2, 3, 4, 7}) run<4, 12>(reps, 128, prop, d);
  return 0;
}
