/* test_nonfinite.c — a wavefield that overflows float32 stops the run with an error naming the
 * steps, for every kernel, in core and through a sliding window (tw_backend_ops.find_nonfinite,
 * checked by the driver at every block boundary). Before, such a run ended with exit status 0 and
 * inf/NaN traces.
 *
 * The job: a source of amplitude 3e38 in 1 m cells (the validation accepts it: the source term and
 * c²dt² times it fit float32), whose field overflows a few steps after the wavelet's onset. For
 * each kernel: stepping one step at a time through the backend, find_nonfinite says 0 until some
 * step n*, then > 0 (and the same job at amplitude 1 stays finite); tw_run_job then fails with
 * TW_ERANGE, its message names steps A < n* <= B, and nothing is left under the output's name.
 * test_gpu_nonfinite.c includes this file with the GPU kernels (label gpu: skipped without one). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "problem.h"
#include "tw_io.h"
#include "tw_solver.h"
#include "tw_test.h"

#ifdef TW_NONFINITE_GPU
/* GPU grids are larger: a window must be smaller than the grid, in rings of 2 MiB granules (at
 * 96 x 128 x 128 the smallest cap's ring held all 104 planes: no window, H200 run 6). */
#define NF_GRID "n = [400, 64, 64]"
static const char *const kernels[] = {"gpu-stepwise", "gpu-diamond"};
#else
#define NF_GRID "n = [30, 30, 30]"
static const char *const kernels[] = {"cpu", "cpu-diamond"};
#endif
#define NKERNEL ((int)(sizeof kernels / sizeof kernels[0]))

static const char *const JOB =
    "grid = { " NF_GRID "; d = [1.0, 1.0, 1.0]; };\n"
    "time = { steps = 240; };\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "boundary = { absorbing = 4; };\n"
    "sources = ( { position = [15.0, 15.0, 15.0];\n"
    "              wavelet = { type = \"ricker\"; frequency = 100.0; amplitude = AMPLITUDE; }; } );\n"
    "receivers = { points = ( [5.0, 5.0, 5.0] ); };\n"
    "solver = { tower_height = 4; dts = 1; };\n";

/* The job text with its amplitude. */
static char *job_text(const char *amplitude) {
  const char *at = strstr(JOB, "AMPLITUDE");
  char *t = malloc(strlen(JOB) + 32);
  sprintf(t, "%.*s%s%s", (int)(at - JOB), JOB, amplitude, at + strlen("AMPLITUDE"));
  return t;
}

static tw_job *load(const char *amplitude, const char *kernel, const char *extra) {
  char *text = job_text(amplitude), kset[64];
  snprintf(kset, sizeof kset, "solver.kernel=\"%s\"", kernel);
  const char *sets[2] = {kset, extra};
  tw_job *job = NULL;
  tw_error err = {0};
  tw_status st = tw_job_load_string(text, "nf.cfg", sets, extra ? 2 : 1, &job, &err);
  free(text);
  REQUIRE(st == TW_OK, "%s", err.msg);
  return job;
}

/* The first step after which the kernel's field holds a non-finite value (0: none in the run),
 * stepping through the backend one step at a time. */
static long first_nonfinite_step(const char *amplitude, const char *kernel) {
  tw_job *job = load(amplitude, kernel, NULL);
  tw_validation val;
  tw_velocity *v = NULL;
  tw_problem *pb = NULL;
  tw_error err = {0};
  REQUIRE(tw_job_validate(job, NULL, TW_VALIDATE_RUN, &val, &v, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_problem_create(job, v, &pb, &err) == TW_OK, "%s", err.msg);
  const tw_backend_ops *be = tw_backend_find(kernel);
  REQUIRE(be && be->find_nonfinite, "%s: no find_nonfinite", kernel);
  void *state = NULL;
  REQUIRE(be->create(pb, &state, &err) == TW_OK, "%s: %s", kernel, err.msg);
  float *taps = malloc((size_t)(pb->ntap + 1) * sizeof *taps);
  long found = 0;
  for (long t = 0; t < pb->steps && !found; t++) {
    REQUIRE(be->advance(state, t, 1, taps, &err) == TW_OK, "%s: %s", kernel, err.msg);
    long long count = -1;
    int cell[3] = {-1, -1, -1};
    REQUIRE(be->find_nonfinite(state, &count, cell, &err) == TW_OK, "%s: %s", kernel, err.msg);
    CHECK(count >= 0, "%s: count %lld", kernel, count);
    if (count > 0) {
      found = t + 1;
      CHECK(cell[0] >= 0 && cell[0] < pb->g.N[0] && cell[1] >= 0 && cell[1] < pb->g.N[1] && cell[2] >= 0 &&
                cell[2] < pb->g.N[2], "%s: cell (%d, %d, %d) outside the padded grid", kernel, cell[0], cell[1], cell[2]);
    }
  }
  free(taps);
  be->destroy(state);
  tw_problem_destroy(pb);
  tw_velocity_destroy(v);
  tw_validation_free(&val);
  tw_job_destroy(job);
  return found;
}

static int leftovers(const char *path) {
  char p[600];
  int n = access(path, F_OK) == 0;
  snprintf(p, sizeof p, "%s.lock", path);
  n += access(p, F_OK) == 0;
  snprintf(p, sizeof p, "%s.part-%ld", path, (long)getpid());
  n += access(p, F_OK) == 0;
  return n;
}

/* tw_run_job on the overflowing job: TW_ERANGE, steps A < nstar <= B in the message. */
static void run_fails(const char *kernel, const char *extra, const char *what, long nstar) {
  char path[512];
  snprintf(path, sizeof path, "%s/tests/nonfinite-%s.h5", TW_BINARY_DIR, kernel);
  unlink(path);
  tw_job *job = load("3e38", kernel, extra);
  tw_run_report rep;
  tw_error err = {0};
  tw_status st = tw_run_job(job, path, NULL, &rep, &err);
  long a = -1, b = -1;
  const char *at = strstr(err.msg, "between step ");
  if (at) sscanf(at, "between step %ld (finite) and step %ld", &a, &b);
  CHECK(st == TW_ERANGE && strstr(err.msg, "became non-finite") && at, "%s %s: status %d: %s", kernel, what, (int)st,
        err.msg);
  CHECK(a >= 0 && a < nstar && nstar <= b, "%s %s: steps %ld..%ld do not bracket the first non-finite step %ld",
        kernel, what, a, b, nstar);
  CHECK(leftovers(path) == 0, "%s %s: files left under '%s'", kernel, what, path);
  if (extra) CHECK(rep.window_planes > 0, "%s %s: no window (%s)", kernel, what, rep.note);
  printf("%s %s: %s\n", kernel, what, err.msg);
  tw_job_destroy(job);
}

/* The smallest solver.device_memory that runs this job through a window, from the message that
 * refuses a smaller one ("the smallest cap that works is N bytes"). cpu-diamond's validation names
 * it for any cap (1 KiB here); for a GPU kernel the validation names the smallest window about (the
 * planes, from the host) and refuses anything below, so the cap asked is that estimate, which the
 * kernel's ring (whole 2 MiB granules) exceeds, or runs at. */
static long smallest_cap(const char *kernel) {
  tw_job *job = load("1.0", kernel, "solver.device_memory=\"1K\"");
  char path[512];
  snprintf(path, sizeof path, "%s/tests/nonfinite-cap.h5", TW_BINARY_DIR);
  tw_run_report rep;
  tw_error err = {0};
  if (strncmp(kernel, "gpu", 3) == 0) {
    tw_estimate est;
    REQUIRE(tw_estimate_job(job, kernel, &est, &err) == TW_OK && est.window_min_bytes > 0, "%s: no window: %s", kernel,
            err.msg);
    job->device_memory = (uint64_t)ceil(est.window_min_bytes);
  }
  tw_status st = tw_run_job(job, path, NULL, &rep, &err);
  long cap = st == TW_OK ? (long)job->device_memory : 0;
  const char *at = strstr(err.msg, "the smallest cap that works is ");
  if (at && st != TW_OK) cap = atol(at + strlen("the smallest cap that works is "));
  CHECK(cap > 0 && !strstr(err.msg, "the whole grid"), "%s: no window cap: %s", kernel, err.msg);
  tw_job_destroy(job);
  return cap;
}

static void unit_scan(void) {
  enum { N = 100003 };
  float *a = malloc(N * sizeof *a);
  for (int i = 0; i < N; i++) a[i] = (float)(i % 7) * 1e-30f; /* finite, subnormal ones among them */
  a[5] = 3.0e38f;
  long long count = -1;
  CHECK(tw_find_nonfinite_f32(a, N, &count) == -1 && count == 0, "finite array: count %lld", count);
  a[70001] = INFINITY;
  a[12345] = NAN;
  a[99999] = -INFINITY;
  CHECK(tw_find_nonfinite_f32(a, N, &count) == 12345 && count == 3, "first %ld, count %lld",
        tw_find_nonfinite_f32(a, N, &count), count);
  free(a);
}

int main(void) {
#ifdef TW_NONFINITE_GPU
  if (tw_gpu_count() == 0) {
    printf("SKIP: no GPU\n");
    return 77;
  }
#endif
  unit_scan();
  for (int k = 0; k < NKERNEL; k++) {
    CHECK(first_nonfinite_step("1.0", kernels[k]) == 0, "%s: a source of amplitude 1 gave non-finite values",
          kernels[k]);
    const long nstar = first_nonfinite_step("3e38", kernels[k]);
    CHECK(nstar > 0, "%s: the overflowing job stayed finite", kernels[k]);
    printf("%s: the field is first non-finite at step %ld\n", kernels[k], nstar);
    run_fails(kernels[k], NULL, "in core", nstar);
    if (strcmp(kernels[k], "cpu") == 0) continue; /* the stepwise CPU kernel has no window */
    const long cap = smallest_cap(kernels[k]);
    char extra[64];
    snprintf(extra, sizeof extra, "solver.device_memory=%ld", cap + cap / 8);
    run_fails(kernels[k], extra, "through a window", nstar);
  }
  return tw_test_exit();
}
