// gpu_stepwise_zrun.cuh — gpu-stepwise's second thread layout: a run of V = 4 consecutive z cells
// per thread (one float4), included by gpu_stepwise.cu after sweep_split.
//
// Why (docs/performance.md, session 11): the one-cell-per-thread kernel (stepwise_kernel) spends
// 104 thread instructions per update at order 8 for 40 floating-point operations: every y- and
// z-neighbour is its own shared-memory load (16 at order 8) and the x queue moves one register per
// neighbour plane per cell. With four z cells per thread the neighbours come four at a time:
//   z:  two LDS.128 (the runs below and above; the thread's own run is in registers),
//   y:  2r LDS.128 (one per neighbour row),
//   x:  the register queue of 2r + 1 float4s, as before,
// so per update ≈ 40 FP + (2r + 2)/4 loads + 2r queue moves + ¾ global loads: ~55 predicted at
// order 8; measured 88 (Nsight: the per-plane addressing, halo copies and predicates of a thread
// are shared by 4 cells only), against 104, and the L2 at 91 % of its throughput holds it there.
// What must hold is stepwise_kernel's contract, bit for bit (the variant test compares every
// variant with the default): the same tw_lap_term chains in the same order, the same damped and
// undamped forms, 0 outside the padded grid, −p[−k] above a free surface, source cells recomputed
// afterwards by tw_dev_inject_kernel.
//
// Tile: BZ = 4·ZT z cells × BY = TY rows, one row and one run per thread (threadIdx.x along z:
// ZT threads read 16·ZT contiguous bytes of a row). Shared plane tile, double-buffered:
// [BY + 2r rows][HZ + BZ + HZ] with HZ = 4 ≥ r, so that every run starts on 16 bytes.
// Cells k ≥ Nzp of the last z tile (Nzp is a multiple of 32, a run of 4 lies wholly in or out) read
// as 0 and are never written; cells in [N2, Nzp) are zero padding in memory and never written.

template <int R, int ZT, int TY, int MINB>
__global__ void __launch_bounds__(ZT *TY, MINB)
    zrun_kernel(const float *__restrict__ pn, float *__restrict__ pio, const float *__restrict__ c2,
                const float *__restrict__ ax, const float *__restrict__ ay, const float *__restrict__ az,
                const tw_dev_layout L, const __grid_constant__ sweep_split sp, const __grid_constant__ tw_stencil st) {
  constexpr int V = 4, HZ = 4, BZ = V * ZT, BY = TY;
  constexpr int SW = HZ + BZ + HZ, SH = BY + 2 * R;
  static_assert(R <= HZ, "the z halo is one float4 on each side");
  static_assert(TY >= 2 * R, "the y halo (2R rows of ZT runs) is loaded by one run per thread");
  static_assert(ROW_ROUND % BY == 0, "tiles must not pass the padded rows (tw_dev_layout_make)");
  __shared__ __align__(16) float sm[2][SH][SW];

  const int tx = threadIdx.x, ty = threadIdx.y, lin = ty * ZT + tx;
  int tile, xb, xe;
  split_block(sp, (int)blockIdx.x, &tile, &xb, &xe);
  const int k0 = (tile % sp.tz) * BZ, kt = k0 + V * tx;  // first z cell of the thread's run
  const int j0 = (tile / sp.tz) * BY, j = j0 + ty;
  const int N0 = L.N[0], N1 = L.N[1], N2 = L.N[2], Nzp = L.Nzp;
  const long long sx = L.sx;
  const bool zin = kt < Nzp;              // the run lies in the row (else it reads 0)
  const bool wr = j < N1 && kt < N2;      // some cell of the run is in the grid
  const int o = j * Nzp + kt;             // the run inside an x plane (32-bit: create() checks)

  // Damping of the run's cells, a = (ax + ay) + az: when ay and the four az are 0, a plane with
  // ax = 0 gives a = 0 exactly, the undamped form (tw_cell_update takes the same branch). Any other
  // plane takes the damped form for all four cells, exact where a = 0 (tw_stencil.h).
  const float ayj = j < N1 ? ay[j] : 0.0f;
  float azv[V];
  bool yz0 = ayj == 0.0f;
#pragma unroll
  for (int e = 0; e < V; e++) {
    azv[e] = kt + e < N2 ? az[kt + e] : 0.0f;
    yz0 = yz0 && azv[e] == 0.0f;
  }

  // y halo: thread lin < 2R·ZT copies run hc of halo row hr: rows j0 − R + hr (shared row hr) for
  // hr < R, else j0 + BY + hr − R (shared row BY + hr). Those rows exist in memory (YPAD ≥ R zero
  // rows, N1 rounded up to ROW_ROUND); runs past Nzp are zeroed once.
  const bool yh = lin < 2 * R * ZT;
  const int hr = lin / ZT, hc = lin % ZT;
  const int ysrow = hr < R ? hr : BY + hr, yjrow = hr < R ? j0 - R + hr : j0 + BY + hr - R;
  const bool yhin = yh && k0 + V * hc < Nzp;
  const int yo = yjrow * Nzp + k0 + V * hc;
  // z halo: thread tx = 0 of a row copies the run below k0 (HZ cells), tx = ZT − 1 the run above
  // k0 + BZ. Below k = 0: the free-surface image −p[−k] for k = −1 … −min(R, N2 − 1), else 0.
  const bool zlo = tx == 0, zhi = tx == ZT - 1;
  const bool zlo_copy = zlo && k0 > 0, zhi_copy = zhi && k0 + BZ < Nzp;
  const int fs_n = zlo && k0 == 0 && L.fs ? (R < N2 - 1 ? R : N2 - 1) : 0;  // image cells to copy

  auto halo_async = [&](int x, int b) {
    const float *pnx = pn + (long long)x * sx;
    if (yhin) __pipeline_memcpy_async(&sm[b][ysrow][HZ + V * hc], pnx + yo, 16);
    if (zlo_copy) __pipeline_memcpy_async(&sm[b][R + ty][0], pnx + (o - HZ), 16);
    if (zhi_copy) __pipeline_memcpy_async(&sm[b][R + ty][HZ + BZ], pnx + (o + V), 16);
    for (int m = 1; m <= fs_n; m++) __pipeline_memcpy_async(&sm[b][R + ty][HZ - m], pnx + (o + m), 4);
    __pipeline_commit();
  };
  // Slots no copy ever writes hold 0 in both buffers.
  const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int b = 0; b < 2; b++) {
    if (yh && !yhin) *(float4 *)&sm[b][ysrow][HZ + V * hc] = zero4;
    if (zlo && !zlo_copy)
      for (int m = fs_n + 1; m <= HZ; m++) sm[b][R + ty][HZ - m] = 0.0f;
    if (zhi && !zhi_copy) *(float4 *)&sm[b][R + ty][HZ + BZ] = zero4;
  }

  struct pre {
    float4 lead, pm, c2;  // p^n at plane x + R (enters the queue at x), p^{n−1} and c²dt² at x
    float ax;
  };
  auto load = [&](int x, pre &P) {
    const long long ox = (long long)x * sx + o;
    P.lead = zin && x + R < N0 ? *(const float4 *)(pn + ox + (long long)R * sx) : zero4;
    P.pm = zin ? *(const float4 *)(pio + ox) : zero4;
    P.c2 = zin ? *(const float4 *)(c2 + ox) : zero4;
    P.ax = ax[x];
  };

  // Register queue: qv[m] = p^n at plane x − R + m. (Rotating the planes through the slots in an
  // x loop unrolled 2R + 1 times, instead of 2R float4 moves per plane, measured slower: 97
  // instead of 88 instructions per update at order 8, 157.6 against 195.8 Gcell/s; the copies of
  // the body and the runtime shared-buffer index cost more than the moves. docs/performance.md.)
  constexpr int Q = 2 * R + 1;
  float4 qv[Q];
#pragma unroll
  for (int m = 0; m < 2 * R; m++) {
    const int xp = xb - R + m;
    qv[m] = zin && xp >= 0 && xp < N0 ? *(const float4 *)(pn + (long long)xp * sx + o) : zero4;
  }
  pre P;
  if (xb < xe) {
    load(xb, P);
    halo_async(xb, 0);
  }

  auto body = [&](int x, int buf) {
    qv[2 * R] = P.lead;
    const float4 pm = P.pm, cc = P.c2, own = qv[R];
    const float axv = P.ax;
    *(float4 *)&sm[buf][R + ty][HZ + V * tx] = own;
    __pipeline_wait_prior(0);  // this thread's halo copies for plane x have landed
#pragma unroll
    for (int m = 1; m <= R; m++)
      if (m <= fs_n) sm[buf][R + ty][HZ - m] = -sm[buf][R + ty][HZ - m];
    if (x + 1 < xe) load(x + 1, P);  // in flight across the barrier and the update
    __syncthreads();
    // Buffer buf ^ 1 was last read by plane x − 1, which every thread has finished.
    if (x + 1 < xe) halo_async(x + 1, buf ^ 1);

    const float *row = &sm[buf][R + ty][HZ + V * tx];
    float zz[3 * V];  // z: the run below, the thread's own run, the run above
    {
      const float4 lo = *(const float4 *)(row - V), hi = *(const float4 *)(row + V);
      zz[0] = lo.x, zz[1] = lo.y, zz[2] = lo.z, zz[3] = lo.w;
      zz[4] = own.x, zz[5] = own.y, zz[6] = own.z, zz[7] = own.w;
      zz[8] = hi.x, zz[9] = hi.y, zz[10] = hi.z, zz[11] = hi.w;
    }
    float ym[R + 1][V], yp[R + 1][V];  // y: rows ∓m of the run
#pragma unroll
    for (int m = 1; m <= R; m++) {
      const float4 a = *(const float4 *)(row - m * SW), b = *(const float4 *)(row + m * SW);
      ym[m][0] = a.x, ym[m][1] = a.y, ym[m][2] = a.z, ym[m][3] = a.w;
      yp[m][0] = b.x, yp[m][1] = b.y, yp[m][2] = b.z, yp[m][3] = b.w;
    }
    float xq[2 * R + 1][V];
#pragma unroll
    for (int m = 0; m <= 2 * R; m++) {
      const float4 v = qv[m];
      xq[m][0] = v.x, xq[m][1] = v.y, xq[m][2] = v.z, xq[m][3] = v.w;
    }
    const float pmv[V] = {pm.x, pm.y, pm.z, pm.w}, c2v[V] = {cc.x, cc.y, cc.z, cc.w};
    const bool fast = yz0 && axv == 0.0f;
    const float axy = tw_damping_xy(axv, ayj);
    float out[V], lapv[V];
#pragma unroll
    for (int e = 0; e < V; e++) {
      const float p0 = xq[R][e], p0x2 = 2.0f * p0;
      float c[2] = {0.0f, 0.0f};  // the chains of tw_laplacian
#pragma unroll
      for (int m = 1; m <= R; m++) {
        float acc = c[tw_lap_chain(m)];
        acc = tw_lap_term(acc, st.w[0][m], xq[R - m][e], xq[R + m][e], p0x2);
        acc = tw_lap_term(acc, st.w[1][m], ym[m][e], yp[m][e], p0x2);
        acc = tw_lap_term(acc, st.w[2][m], zz[V + e - m], zz[V + e + m], p0x2);
        c[tw_lap_chain(m)] = acc;
      }
      lapv[e] = tw_lap_sum(R, c[0], c[1]);
      out[e] = tw_cell_update_undamped(p0, pmv[e], lapv[e], c2v[e]);
    }
    // A damped plane redoes the four updates with the damped form (one reciprocal for the column,
    // one per cell for z): apart from the undamped loop it holds only lapv, so the order-4 kernel
    // keeps 96 registers and 5 blocks per SM (with the two-factor form in a damped branch per cell
    // it took 100-102, and a variant at 101 ran 4 blocks and 8 % slower; docs/performance.md,
    // session 34).
    if (!fast) {
      const float gxy = tw_damp_recip(axy);
#pragma unroll
      for (int e = 0; e < V; e++)
        out[e] = tw_cell_update_damped_col(xq[R][e], pmv[e], lapv[e], c2v[e], axy, gxy, azv[e]);
    }
    if (wr) {
      float *dst = pio + (long long)x * sx + o;
      if (kt + V <= N2) {
        *(float4 *)dst = make_float4(out[0], out[1], out[2], out[3]);
      } else {
#pragma unroll
        for (int e = 0; e < V; e++)
          if (kt + e < N2) dst[e] = out[e];
      }
    }
#pragma unroll
    for (int m = 0; m < 2 * R; m++) qv[m] = qv[m + 1];
  };

  // Unrolled by 2: the shared buffer is a constant per half. One barrier per plane suffices: a
  // thread writes buffer b again only after the next plane's barrier, which every reader of b has
  // passed.
  int x = xb;
  for (; x + 1 < xe; x += 2) {
    body(x, 0);
    body(x + 1, 1);
  }
  if (x < xe) body(x, 0);
}
