// addr.c — a measurement, not part of the solver (#21, docs/performance.md "Session 20"): the
// order-8 update's loop with fewer neighbour address registers, in the L3 and beyond it. Session 13
// found the loop in cache held by its loads, 11 of them per 16 cells reloads of neighbour base
// pointers that GCC spills (19 live pointers: x±m, y±m, p, p^{n-1}, c²dt²; 15 general registers).
// Three loops, the same arithmetic in the same order (tw_stencil.h), checked bitwise:
//   pair:  the solver's (cpu_update.c's block(), undamped);
//   addr:  a column's cells addressed as [pk + S·{1,2,4}] from one moving pointer pk and eight
//          stride registers (±sx, ±3sx, ±sy, ±3sy, in bytes) that an empty asm statement marks as
//          changed every block, so that GCC cannot hoist pk + 2·sx & co. into registers of their
//          own (GCC forms the addresses in registers anyway: slower);
//   const: the y stride a compile-time constant (-DSYC, the padded column), the y neighbours at
//          immediate offsets: what the idea can give (+6 % in the L3, +5 % beyond: both kernels);
//   const sx and sy: the x stride a constant too (-DSXC; NY = 48 by default), every neighbour at an
//          immediate offset — a tower-local buffer's bound (session 21: the same as const sy).
//   gcc -O3 -march=x86-64-v4 -mprefer-vector-width=256 -fopenmp-simd -I solver -DSYC=272
//       -o addr scripts/experiments/addr.c && taskset -c 1 ./addr 48 48 256 && ./addr 128 128 256
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xmmintrin.h>

#include "tw_stencil.h"
#define R 4
#define H 8
#define TW_INLINE static inline __attribute__((always_inline))

static float *A[2], *B, *c2;

TW_INLINE void cell(const tw_stencil *st, const float *restrict cur, float *restrict old, const float *restrict c2,
                    long sx, long sy, int k) {
  const float lap = tw_laplacian(R, st, cur + k, sx, cur + k, sy, cur + k, 1);
  old[k] = tw_cell_update_undamped(cur[k], old[k], lap, c2[k]);
}
/* A row of columns, two 8-wide vectors of cells per iteration: cpu_update.c's block(), undamped.
 * ROW(name, SX, SY) makes it with the x and y strides as written: the run-time arguments (the
 * solver's form) or compile-time constants (the neighbours at immediate offsets). */
#define ROW(name, SX, SY)                                                                                  \
  __attribute__((noinline)) static void name(const tw_stencil *stp, const float *cur, float *old,          \
                                             const float *c2, long off, long sx, long sy, int ny, int nz) { \
    const tw_stencil st = *stp;                                                                            \
    (void)sx, (void)sy;                                                                                    \
    for (int y = 0; y < ny; y++)                                                                           \
      for (int kb = 0; kb < nz; kb += 16) {                                                                \
        const long o = off + y * (SY);                                                                     \
        _Pragma("omp simd") for (int k = kb; k < kb + 8; k++) {                                            \
          cell(&st, cur + o, old + o, c2 + o, SX, SY, k);                                                  \
          cell(&st, cur + o, old + o, c2 + o, SX, SY, k + 8);                                              \
        }                                                                                                  \
      }                                                                                                    \
  }
/* the y stride a compile-time constant (-DSYC) */
#ifndef SYC
#define SYC 272
#endif
/* the x stride a compile-time constant too (-DSXC, default the padded plane of a 48-column grid):
 * every neighbour at an immediate offset from one pointer — what a tower-local buffer of fixed
 * strides could give a tower's loop (session 21: nothing beyond the constant y stride) */
#ifndef SXC
#define SXC (SYC * 56)
#endif
ROW(row_pair, sx, sy)    /* the solver's form */
ROW(row_const, sx, SYC)  /* the y neighbours at immediate offsets: the bound of the idea */
ROW(row_cxy, SXC, SYC)   /* every neighbour at an immediate offset */

/* one cell, lane k of the block at pk (bytes); P(o): the value o bytes from the cell */
#define P(o) (*(const float *)(pk + (o) + 4 * k))
TW_INLINE float lap_addr(const tw_stencil *st, const char *pk, int k, long X1, long NX1, long X3, long NX3, long Y1,
                         long NY1, long Y3, long NY3) {
  const float p0x2 = 2.0f * P(0);
  float c0 = 0.0f, c1 = 0.0f;
  /* m = 1 (chain 0), 2 (chain 1), 3 (chain 0), 4 (chain 1): x, y, z each */
  c0 = tw_lap_term(c0, st->w[0][1], P(NX1), P(X1), p0x2);
  c0 = tw_lap_term(c0, st->w[1][1], P(NY1), P(Y1), p0x2);
  c0 = tw_lap_term(c0, st->w[2][1], P(-4), P(4), p0x2);
  c1 = tw_lap_term(c1, st->w[0][2], P(2 * NX1), P(2 * X1), p0x2);
  c1 = tw_lap_term(c1, st->w[1][2], P(2 * NY1), P(2 * Y1), p0x2);
  c1 = tw_lap_term(c1, st->w[2][2], P(-8), P(8), p0x2);
  c0 = tw_lap_term(c0, st->w[0][3], P(NX3), P(X3), p0x2);
  c0 = tw_lap_term(c0, st->w[1][3], P(NY3), P(Y3), p0x2);
  c0 = tw_lap_term(c0, st->w[2][3], P(-12), P(12), p0x2);
  c1 = tw_lap_term(c1, st->w[0][4], P(4 * NX1), P(4 * X1), p0x2);
  c1 = tw_lap_term(c1, st->w[1][4], P(4 * NY1), P(4 * Y1), p0x2);
  c1 = tw_lap_term(c1, st->w[2][4], P(-16), P(16), p0x2);
  return tw_lap_sum(R, c0, c1);
}
__attribute__((noinline)) static void row_addr(const tw_stencil *stp, const float *cur, float *old, const float *c2,
                                               long off, long sx, long sy, int ny, int nz) {
  const tw_stencil st = *stp;
  long X1 = 4 * sx, NX1 = -4 * sx, X3 = 12 * sx, NX3 = -12 * sx;
  long Y1 = 4 * sy, NY1 = -4 * sy, Y3 = 12 * sy, NY3 = -12 * sy;
  long dO = (const char *)old - (const char *)cur, dC = (const char *)c2 - (const char *)cur;
  for (int y = 0; y < ny; y++) {
    const char *pk = (const char *)(cur + off + y * sy);
    const char *end = pk + 4 * (long)nz;
    for (; pk < end; pk += 64) {
      __asm__("" : "+r"(pk), "+r"(X1), "+r"(NX1), "+r"(X3), "+r"(NX3), "+r"(Y1), "+r"(NY1), "+r"(Y3), "+r"(NY3),
              "+r"(dO), "+r"(dC));
#pragma omp simd
      for (int k = 0; k < 8; k++) {
        for (int h = 0; h < 2; h++) {
          const int kk = k + 8 * h;
#define Q(o) (*(const float *)(pk + (o) + 4 * kk))
          const float lap = lap_addr(&st, pk + 32 * h, k, X1, NX1, X3, NX3, Y1, NY1, Y3, NY3);
          float *po = (float *)(pk + dO + 4 * kk);
          *po = tw_cell_update_undamped(Q(0), *po, lap, Q(dC));
        }
      }
    }
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
  if (argc < 4) return fprintf(stderr, "usage: %s NX NY NZ\n", argv[0]), 2;
  const int NX = atoi(argv[1]), NY = atoi(argv[2]), NZ = atoi(argv[3]);
  const long sy = (NZ + 2 * H + 15) / 16 * 16, sx = sy * (NY + 8), n = sx * (NX + 8);
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64; /* 64-byte aligned, as the solver's */
  for (int a = 0; a < 2; a++) A[a] = aligned_alloc(64, bytes), memset(A[a], 0, bytes);
  B = aligned_alloc(64, bytes);
  c2 = aligned_alloc(64, bytes);
  for (long i = 0; i < n; i++) c2[i] = 0.1f + 0.01f * (i % 7);
  for (int x = 4; x < NX + 4; x++)
    for (int y = 4; y < NY + 4; y++)
      for (int k = 0; k < NZ; k++)
        for (int a = 0; a < 2; a++) A[a][x * sx + y * sy + H + k] = (float)rand() / RAND_MAX;
  _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ and DAZ */
  const float wv[5] = {0, 1.6f, -0.2f, 0.025f, -0.0018f};
  tw_stencil st;
  memset(&st, 0, sizeof st);
  st.r = R;
  for (int a = 0; a < 3; a++)
    for (int m = 1; m <= R; m++) st.w[a][m] = wv[m] * (0.05f + 0.01f * a);
  /* bits: one step of each from the same fields */
  memcpy(B, A[1], bytes);
  for (int x = 4; x < NX + 4; x++) row_pair(&st, A[0], A[1], c2, x * sx + 4 * sy + H, sx, sy, NY, NZ);
  for (int x = 4; x < NX + 4; x++) row_addr(&st, A[0], B, c2, x * sx + 4 * sy + H, sx, sy, NY, NZ);
  printf("bits: %s\n", memcmp(A[1], B, bytes) ? "DIFFER" : "same");
  if (sy != SYC) return fprintf(stderr, "build with -DSYC=%ld\n", sy), 2;
  memcpy(B, A[0], bytes);
  for (int x = 4; x < NX + 4; x++) row_const(&st, A[1], B, c2, x * sx + 4 * sy + H, sx, sy, NY, NZ);
  for (int x = 4; x < NX + 4; x++) row_pair(&st, A[1], A[0], c2, x * sx + 4 * sy + H, sx, sy, NY, NZ);
  printf("bits (const sy): %s\n", memcmp(A[0], B, bytes) ? "DIFFER" : "same");
  const int cxy = sx == SXC; /* the constant x stride fits this grid (NY = 48 by default) */
  if (cxy) {
    memcpy(B, A[1], bytes);
    for (int x = 4; x < NX + 4; x++) row_cxy(&st, A[0], B, c2, x * sx + 4 * sy + H, sx, sy, NY, NZ);
    for (int x = 4; x < NX + 4; x++) row_pair(&st, A[0], A[1], c2, x * sx + 4 * sy + H, sx, sy, NY, NZ);
    printf("bits (const sx, sy): %s\n", memcmp(A[1], B, bytes) ? "DIFFER" : "same");
  }
  const double cells = (double)NX * NY * NZ;
  int steps = (int)(2e9 / cells / 40);
  if (steps < 4) steps = 4;
  for (int rep = 0; rep < 3; rep++) {
    double t[4] = {0, 0, 0, 0};
    for (int v = 0; v < 3 + cxy; v++) {
      const double t0 = now();
      for (int s = 0; s < steps; s++)
        for (int x = 4; x < NX + 4; x++)
          (v == 3 ? row_cxy : v == 2 ? row_const : v ? row_addr : row_pair)(&st, A[s % 2], A[(s + 1) % 2], c2,
                                                                             x * sx + 4 * sy + H, sx, sy, NY, NZ);
      t[v] = now() - t0;
    }
    printf("%d x %d x %d (%.1f MB): pair %.3f, addr %.3f, const sy %.3f, const sx and sy %.3f Gcell/s\n", NX, NY,
           NZ, 12.0 * (NX + 8) * (NY + 8) * sy / 1e6, cells * steps / t[0] / 1e9, cells * steps / t[1] / 1e9,
           cells * steps / t[2] / 1e9, cxy ? cells * steps / t[3] / 1e9 : 0.0);
  }
  return 0;
}
