// smemupdate.cuh — what smemtile.cu and smemtower.cu share: four z cells of a column updated from a
// register window along z and float4 x/y neighbours, in solver/tw_stencil.h's order (per m the x,
// y and z terms, two chains), the undamped update; and the test weights.
#pragma once
#include "../../solver/tw_stencil.h"

template <int r>
struct Wt {
  float w[3][r + 1];
};

// The test stencil: the Taylor coefficients of order 2r over spacings 1, 1, 1.1 (z), for the kernel
// (w) and the host (st).
template <int r>
inline void test_weights(Wt<r> &w, tw_stencil &st) {
  const double C[5][5] = {
      {0}, {0, 1.0}, {0, 4.0 / 3, -1.0 / 12}, {0, 1.5, -0.15, 1.0 / 90}, {0, 1.6, -0.2, 8.0 / 315, -1.0 / 560}};
  st = {};
  st.r = r;
  for (int a = 0; a < 3; a++)
    for (int m = 1; m <= r; m++) w.w[a][m] = st.w[a][m] = (float)(C[r][m] / (a == 2 ? 1.1 : 1.0));
}

// Cells wk0 … wk0 + 3 of the window win (p^n along z, r cells of neighbours either side), x and y
// neighbours at ±m in xm[m], xp[m], ym[m], yp[m] (the same four cells), p^{n−1} pm, c²dt² c2: p^{n+1};
// DAMPED: tw_stencil.h's damped form from the column's axy = ax + ay and each cell's az (a = axy + az;
// exact for a = 0 too).
template <int r, int NW, bool DAMPED = false>
__host__ __device__ __forceinline__ float4 update4(const float (&win)[NW], int wk0, const float4 (&xm)[r + 1],
                                                   const float4 (&xp)[r + 1], const float4 (&ym)[r + 1],
                                                   const float4 (&yp)[r + 1], const float (&pm)[4],
                                                   const float (&c2)[4], const Wt<r> &w,
                                                   float axy = 0.f, const float (&az)[4] = {0.f, 0.f, 0.f, 0.f}) {
  float out[4];
#pragma unroll
  for (int e = 0; e < 4; e++) {
    const int wk = wk0 + e;
    const float p = win[wk], p0x2 = 2.0f * p;
    float c[2] = {0.0f, 0.0f};
#pragma unroll
    for (int m = 1; m <= r; m++) {
      const float *a = reinterpret_cast<const float *>(&xm[m]), *b = reinterpret_cast<const float *>(&xp[m]);
      const float *cc = reinterpret_cast<const float *>(&ym[m]), *d = reinterpret_cast<const float *>(&yp[m]);
      float acc = c[tw_lap_chain(m)];
      acc = tw_lap_term(acc, w.w[0][m], a[e], b[e], p0x2);
      acc = tw_lap_term(acc, w.w[1][m], cc[e], d[e], p0x2);
      acc = tw_lap_term(acc, w.w[2][m], win[wk - m], win[wk + m], p0x2);
      c[tw_lap_chain(m)] = acc;
    }
    const float lap = tw_lap_sum(r, c[0], c[1]);
    out[e] = DAMPED ? tw_cell_update_damped(p, pm[e], lap, c2[e], axy, az[e])
                    : tw_cell_update_undamped(p, pm[e], lap, c2[e]);
  }
  return make_float4(out[0], out[1], out[2], out[3]);
}
