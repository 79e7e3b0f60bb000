/* tw_test.h — the tests' tiny harness: CHECK records a failure and goes on; a test program
 * returns tw_test_exit(). TW_SKIP (exit 77) marks a test skipped (ctest SKIP_RETURN_CODE),
 * e.g. a GPU test where no GPU is present — always with a message saying why. */
#ifndef TW_TEST_H
#define TW_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tw_test_failures = 0;
static int tw_test_checks = 0;

/* Each macro evaluates its condition exactly once (it may have side effects). */
#define TW_CHECK_ONCE(cond, fatal, ...)                                         \
  do {                                                                          \
    tw_test_checks++;                                                           \
    if (!(cond)) {                                                              \
      tw_test_failures++;                                                       \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
      fprintf(stderr, __VA_ARGS__);                                             \
      fputc('\n', stderr);                                                      \
      if (fatal) exit(1);                                                       \
    }                                                                           \
  } while (0)

#define CHECK(cond, ...) TW_CHECK_ONCE(cond, 0, __VA_ARGS__)
/* Abort the test program on a failed precondition (nothing sensible can follow). */
#define REQUIRE(cond, ...) TW_CHECK_ONCE(cond, 1, __VA_ARGS__)

#define TW_SKIP(...)                                                            \
  do {                                                                          \
    printf("SKIP: ");                                                           \
    printf(__VA_ARGS__);                                                        \
    printf("\n");                                                               \
    exit(77);                                                                   \
  } while (0)

/* Random numbers for the CPU tests: xorshift64, reproducible from the seed each test program
 * gives first thing in main (tw_rng_seed). */
static unsigned long long tw_rng_state = 0x9E3779B97F4A7C15ull;
static inline void tw_rng_seed(unsigned long long s) { tw_rng_state = s; }
static inline unsigned tw_rnd(void) {
  tw_rng_state ^= tw_rng_state << 13;
  tw_rng_state ^= tw_rng_state >> 7;
  tw_rng_state ^= tw_rng_state << 17;
  return (unsigned)(tw_rng_state >> 11);
}
static inline int tw_rnd_in(int lo, int hi) { return lo + (int)(tw_rnd() % (unsigned)(hi - lo + 1)); } /* [lo, hi] */
static inline double tw_rnd_unit(void) { return (tw_rnd() & 0xFFFFFF) / (double)0x1000000; }     /* [0, 1) */

static inline int tw_test_exit(void) {
  printf("%d checks, %d failed\n", tw_test_checks, tw_test_failures);
  return tw_test_failures ? 1 : 0;
}

/* Relative L2 difference ||a − b|| / ||b|| (0 when both are zero). */
static inline double tw_rel_l2(const float *a, const float *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)a[i] - (double)b[i];
    num += d * d;
    den += (double)b[i] * (double)b[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Cell lists as the problem keeps them: (i, j, k) sorted, unique (problem.h). */
static inline int tw_test_cmp3(const void *a, const void *b) {
  const int *x = (const int *)a, *y = (const int *)b;
  for (int e = 0; e < 3; e++)
    if (x[e] != y[e]) return x[e] < y[e] ? -1 : 1;
  return 0;
}
/* Sort c[0..n) and drop repeats; returns the new count. */
static inline long tw_test_uniq_cells(int (*c)[3], long n) {
  qsort(c, (size_t)n, sizeof *c, tw_test_cmp3);
  long u = 0;
  for (long k = 0; k < n; k++)
    if (!u || tw_test_cmp3(c[u - 1], c[k])) memcpy(c[u++], c[k], sizeof c[k]);
  return u;
}

#ifdef TW_PROBLEM_H
/* A problem from job text with --set overrides, as `run` builds it (job, model, finalize, problem);
 * the caller destroys the three. For tests that drive a backend directly (problem.h first). */
static inline tw_problem *tw_test_job_problem(const char *text, const char *name, const char *const *sets, int nsets,
                                              tw_job **job, tw_velocity **v) {
  tw_problem *pb = NULL;
  tw_error err = {0};
  REQUIRE(tw_job_load_string(text, name, sets, nsets, job, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_velocity_load(*job, v, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_job_finalize(*job, (*v)->vmin, (*v)->vmax, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_problem_create(*job, *v, &pb, &err) == TW_OK, "%s", err.msg);
  return pb;
}
#endif

#endif
