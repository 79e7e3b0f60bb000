// grouped.c — a measurement, not part of the solver (#21, docs/performance.md "Session 15"): the
// update's loop on its own, swept plane by plane over NX × NY × 256 cells (one step: every x plane,
// its rows, blocks of 16 z cells as solver/cpu/cpu_update.c), at two sizes: in the L3 (48 × 48: what the
// loop can do) and far beyond it (128 × 128: what memory leaves of it). Two forms of L:
//   pair:    solver/tw_stencil.h's, three brackets per m (x, y, z), 9 operations per m;
//   grouped: where the three spacings are equal, one bracket per m,
//            w·((((x₋ + x₊) + (y₋ + y₊)) + (z₋ + z₊)) − RN(6·p0)), 6 operations per m, also exactly 0
//            on a constant field (2c + 2c = 4c is exact, RN(4c + 2c) = RN(6c)).
// Subnormals flushed as the solver does (cpu_fields.c). Build and run:
//   gcc -O3 -march=x86-64-v4 -mprefer-vector-width=256 -fopenmp-simd -DR=4 -I solver
//       -o grouped scripts/experiments/grouped.c && taskset -c 1 ./grouped 48 48 && ./grouped 128 128
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xmmintrin.h>

#include "tw_stencil.h"
#ifndef R
#define R 4
#endif
#define NZ 256
#define H 8
#define SY (NZ + 2 * H)
#define TW_INLINE static inline __attribute__((always_inline))

TW_INLINE float lap_grouped(const float *w, const float *p, long sx, long sy) {
  const float p0x6 = 6.0f * p[0];
  float c0 = 0.0f, c1 = 0.0f;
  for (int m = 1; m <= R; m++) {
    const float s = ((p[-m * sx] + p[m * sx]) + (p[-m * sy] + p[m * sy])) + (p[-m] + p[m]);
    if (tw_lap_chain(m)) c1 = TW_MADD(w[m], s - p0x6, c1);
    else c0 = TW_MADD(w[m], s - p0x6, c0);
  }
  return tw_lap_sum(R, c0, c1);
}
TW_INLINE void cell(const tw_stencil *st, int grouped, const float *restrict cur, float *restrict old,
                    const float *restrict c2, long sx, long sy, int k) {
  const float lap = grouped ? lap_grouped(st->w[0], cur + k, sx, sy) : tw_laplacian(R, st, cur + k, sx, cur + k, sy, cur + k, 1);
  old[k] = tw_cell_update_undamped(cur[k], old[k], lap, c2[k]);
}
static float *A[2], *c2;
#define ROW(NAME, G)                                                                                  \
  __attribute__((noinline)) static void NAME(const tw_stencil *stp, const float *cur, float *old, long off, \
                                             long sx, long sy, int ny) {                              \
    const tw_stencil st = *stp;                                                                       \
    for (int y = 0; y < ny; y++)                                                                      \
      for (int kb = 0; kb < NZ; kb += 16) {                                                           \
        const long o = off + y * sy;                                                                  \
        _Pragma("omp simd") for (int k = kb; k < kb + 8; k++) {                                       \
          cell(&st, G, cur + o, old + o, c2 + o, sx, sy, k);                                          \
          cell(&st, G, cur + o, old + o, c2 + o, sx, sy, k + 8);                                      \
        }                                                                                             \
      }                                                                                               \
  }
ROW(row_pair, 0)
ROW(row_grouped, 1)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: %s NX NY\n", argv[0]), 2;
  const int NX = atoi(argv[1]), NY = atoi(argv[2]);
  const long sy = SY, sx = sy * (NY + 8), n = sx * (NX + 8);
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64; /* 64-byte aligned, as the solver's */
  for (int a = 0; a < 2; a++) A[a] = aligned_alloc(64, bytes), memset(A[a], 0, bytes);
  c2 = aligned_alloc(64, bytes);
  for (long i = 0; i < n; i++) c2[i] = 0.1f;
  for (int x = 4; x < NX + 4; x++)
    for (int y = 4; y < NY + 4; y++)
      for (int k = 0; k < NZ; k++)
        for (int a = 0; a < 2; a++) A[a][x * sx + y * sy + H + k] = (float)rand() / RAND_MAX;
  _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ and DAZ */
  const float wv[5] = {0, 1.6f, -0.2f, 0.025f, -0.0018f}; // order-8 weights' shape, scaled
  tw_stencil st;
  memset(&st, 0, sizeof st);
  st.r = R;
  for (int a = 0; a < 3; a++)
    for (int m = 1; m <= R; m++) st.w[a][m] = wv[m] * 0.05f;
  const double cells = (double)NX * NY * NZ;
  int steps = (int)(2e9 / cells / 40);
  if (steps < 4) steps = 4;
  for (int rep = 0; rep < 3; rep++) {
    double t[2];
    for (int v = 0; v < 2; v++) {
      const double t0 = now();
      for (int s = 0; s < steps; s++)
        for (int x = 4; x < NX + 4; x++)
          (v ? row_grouped : row_pair)(&st, A[s % 2], A[(s + 1) % 2], x * sx + 4 * sy + H, sx, sy, NY);
      t[v] = now() - t0;
    }
    printf("%d x %d x %d (%.1f MB), order %d: pair %.3f, grouped %.3f Gcell/s (%.2fx)\n", NX, NY, NZ,
           12.0 * (NX + 8) * (NY + 8) * SY / 1e6, 2 * R, cells * steps / t[0] / 1e9, cells * steps / t[1] / 1e9,
           t[0] / t[1]);
  }
  return 0;
}
