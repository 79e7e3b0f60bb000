// rows2.c — a measurement, not part of the solver (#21, docs/performance.md "Session 14"): does
// updating two adjacent x-rows together, their 2r + 2 x-planes loaded once for both, beat one row at
// a time in cache at order 8? One row: one 8-cell vector per iteration (A), or two, k and k + 8, as
// solver/cpu/cpu_update.c does (A2); two rows: one vector (B) or two (B2) per iteration. Rows x and x + 1 of 16 × 256 columns (in L2), AVX2 vectors, the
// arithmetic order of solver/tw_stencil.h (pair terms, two chains, explicit fused multiply-adds, the
// undamped update); B and B2 are checked bitwise against A first.
// Build and run: gcc -O3 -march=x86-64-v4 -mprefer-vector-width=256 -o rows2 rows2.c && taskset -c 1 ./rows2
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define NZ 256
#define NY 16
#define NX 12
#define H 8
#define SY (NZ + 2 * H)
#define SX ((long)SY * (NY + 8))
static float *cur, *oldA, *oldB, *c2;
static inline __m256 L(const float *p) { return _mm256_loadu_ps(p); }
static inline __m256 term(__m256 acc, __m256 wv, __m256 a, __m256 b, __m256 p0x2) {
  return _mm256_fmadd_ps(wv, _mm256_sub_ps(_mm256_add_ps(a, b), p0x2), acc);
}
static void rowA(int x, __m256 W[3][5]) {
  const __m256 two = _mm256_set1_ps(2.0f);
  for (int y = 4; y < 4 + NY; y++) {
    const float *p = cur + x * SX + y * SY + H;
    float *o = oldA + x * SX + y * SY + H;
    const float *c = c2 + x * SX + y * SY + H;
    for (int k = 0; k < NZ; k += 8) {
      const __m256 p0 = L(p + k), p0x2 = _mm256_mul_ps(two, p0);
      __m256 ch[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
      for (int m = 1; m <= 4; m++) {
        __m256 a = ch[(m - 1) & 1];
        a = term(a, W[0][m], L(p + k - m * SX), L(p + k + m * SX), p0x2);
        a = term(a, W[1][m], L(p + k - m * SY), L(p + k + m * SY), p0x2);
        a = term(a, W[2][m], L(p + k - m), L(p + k + m), p0x2);
        ch[(m - 1) & 1] = a;
      }
      const __m256 lap = _mm256_add_ps(ch[0], ch[1]);
      _mm256_storeu_ps(o + k, _mm256_sub_ps(_mm256_fmadd_ps(L(c + k), lap, p0x2), L(o + k)));
    }
  }
}
static void rowA2(int x, __m256 W[3][5]) {
  const __m256 two = _mm256_set1_ps(2.0f);
  for (int y = 4; y < 4 + NY; y++) {
    const float *p = cur + x * SX + y * SY + H;
    float *o = oldA + x * SX + y * SY + H;
    const float *c = c2 + x * SX + y * SY + H;
    for (int k = 0; k < NZ; k += 16) {
      __m256 lap[2], p0x2[2];
      for (int h = 0; h < 2; h++) {
        const int kk = k + 8 * h;
        p0x2[h] = _mm256_mul_ps(two, L(p + kk));
        __m256 ch[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int m = 1; m <= 4; m++) {
          __m256 a = ch[(m - 1) & 1];
          a = term(a, W[0][m], L(p + kk - m * SX), L(p + kk + m * SX), p0x2[h]);
          a = term(a, W[1][m], L(p + kk - m * SY), L(p + kk + m * SY), p0x2[h]);
          a = term(a, W[2][m], L(p + kk - m), L(p + kk + m), p0x2[h]);
          ch[(m - 1) & 1] = a;
        }
        lap[h] = _mm256_add_ps(ch[0], ch[1]);
      }
      for (int h = 0; h < 2; h++)
        _mm256_storeu_ps(o + k + 8 * h, _mm256_sub_ps(_mm256_fmadd_ps(L(c + k + 8 * h), lap[h], p0x2[h]), L(o + k + 8 * h)));
    }
  }
}
static void rowB2(int x, __m256 W[3][5]) {  // rows x and x+1, two vectors each
  const __m256 two = _mm256_set1_ps(2.0f);
  for (int y = 4; y < 4 + NY; y++) {
    const float *p = cur + x * SX + y * SY + H;
    float *o = oldB + x * SX + y * SY + H;
    const float *c = c2 + x * SX + y * SY + H;
    for (int k = 0; k < NZ; k += 16) {
      __m256 lap[2][2], p0x2[2][2];
      for (int h = 0; h < 2; h++) {
        const int kk = k + 8 * h;
        __m256 P[10];
        for (int j = 0; j < 10; j++) P[j] = L(p + kk + (j - 4) * SX);
        for (int rr = 0; rr < 2; rr++) {
          const float *q = p + rr * SX;
          p0x2[rr][h] = _mm256_mul_ps(two, P[4 + rr]);
          __m256 ch[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
          for (int m = 1; m <= 4; m++) {
            __m256 a = ch[(m - 1) & 1];
            a = term(a, W[0][m], P[4 + rr - m], P[4 + rr + m], p0x2[rr][h]);
            a = term(a, W[1][m], L(q + kk - m * SY), L(q + kk + m * SY), p0x2[rr][h]);
            a = term(a, W[2][m], L(q + kk - m), L(q + kk + m), p0x2[rr][h]);
            ch[(m - 1) & 1] = a;
          }
          lap[rr][h] = _mm256_add_ps(ch[0], ch[1]);
        }
      }
      for (int rr = 0; rr < 2; rr++)
        for (int h = 0; h < 2; h++) {
          float *oo = o + rr * SX + k + 8 * h;
          _mm256_storeu_ps(oo, _mm256_sub_ps(_mm256_fmadd_ps(L(c + rr * SX + k + 8 * h), lap[rr][h], p0x2[rr][h]), L(oo)));
        }
    }
  }
}
static void rowB(int x, __m256 W[3][5]) {  // rows x and x+1
  const __m256 two = _mm256_set1_ps(2.0f);
  for (int y = 4; y < 4 + NY; y++) {
    const float *p = cur + x * SX + y * SY + H;
    float *o = oldB + x * SX + y * SY + H;
    const float *c = c2 + x * SX + y * SY + H;
    for (int k = 0; k < NZ; k += 8) {
      __m256 P[10];
      for (int j = 0; j < 10; j++) P[j] = L(p + k + (j - 4) * SX);
      for (int rr = 0; rr < 2; rr++) {
        const float *q = p + rr * SX;
        const __m256 p0 = P[4 + rr], p0x2 = _mm256_mul_ps(two, p0);
        __m256 ch[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int m = 1; m <= 4; m++) {
          __m256 a = ch[(m - 1) & 1];
          a = term(a, W[0][m], P[4 + rr - m], P[4 + rr + m], p0x2);
          a = term(a, W[1][m], L(q + k - m * SY), L(q + k + m * SY), p0x2);
          a = term(a, W[2][m], L(q + k - m), L(q + k + m), p0x2);
          ch[(m - 1) & 1] = a;
        }
        const __m256 lap = _mm256_add_ps(ch[0], ch[1]);
        float *oo = o + rr * SX;
        _mm256_storeu_ps(oo + k, _mm256_sub_ps(_mm256_fmadd_ps(L(c + rr * SX + k), lap, p0x2), L(oo + k)));
      }
    }
  }
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(void) {
  const long n = SX * NX;
  cur = aligned_alloc(64, n * 4); oldA = aligned_alloc(64, n * 4); oldB = aligned_alloc(64, n * 4); c2 = aligned_alloc(64, n * 4);
  srand(1);
  for (long i = 0; i < n; i++) cur[i] = rand() / (float)RAND_MAX, oldA[i] = oldB[i] = rand() / (float)RAND_MAX, c2[i] = 0.1f;
  const float wv[5] = {0, 1.6f, -0.2f, 0.025f, -0.0018f};
  __m256 W[3][5];
  for (int a = 0; a < 3; a++) for (int m = 1; m <= 4; m++) W[a][m] = _mm256_set1_ps(wv[m] * (1 + a * 0.1f));
  // correctness: one pass
  rowA(4, W); rowA(5, W); rowB(4, W);
  printf("bitwise (B): %s\n", memcmp(oldA, oldB, n * 4) ? "DIFFER" : "equal");
  memcpy(oldB, oldA, n * 4);
  rowA(4, W); rowA(5, W); rowB2(4, W);
  printf("bitwise (B2): %s\n", memcmp(oldA, oldB, n * 4) ? "DIFFER" : "equal");
  for (int rep = 0; rep < 8; rep++) {
    const int iters = 4000;
    double t0 = now();
    for (int i = 0; i < iters; i++) { rowA(4, W); rowA(5, W); }
    double ta = now() - t0;
    t0 = now();
    for (int i = 0; i < iters; i++) rowB(4, W);
    double tb = now() - t0;
    t0 = now();
    for (int i = 0; i < iters; i++) { rowA2(4, W); rowA2(5, W); }
    double ta2 = now() - t0;
    t0 = now();
    for (int i = 0; i < iters; i++) rowB2(4, W);
    double tb2 = now() - t0;
    printf("B2 (two rows, two vectors): %.3f  B2/A2 %.3f  ", 2.0 * NY * NZ * iters / tb2 / 1e9, ta2 / tb2);
    printf("A2 (two vectors a row): %.3f Gcell/s  B/A2 %.3f  ", 2.0 * NY * NZ * iters / ta2 / 1e9, ta2 / tb);
    const double cells = 2.0 * NY * NZ * iters;
    printf("A one row: %.3f Gcell/s   B two rows: %.3f Gcell/s   B/A %.3f\n", cells / ta / 1e9, cells / tb / 1e9, ta / tb);
  }
  return 0;
}
