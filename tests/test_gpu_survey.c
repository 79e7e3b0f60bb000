/* test_gpu_survey.c — surveys on the GPU kernels (label gpu; skipped without a GPU): one session
 * runs the shots of a survey one after another and every shot's file equals a fresh single-shot
 * run of it, bit for bit (survey_check.h), for
 *   - gpu-stepwise in core and through its sliding window,
 *   - gpu-diamond's register towers (the persistent launch, and one launch per stage), its
 *     generic tower, its stepwise fallback, and its towers through the window,
 * with fixed and moving spreads, nearest and trilinear receivers and sources. This is what the
 * backends' reset must give: both levels zeroed (device or the window's host levels), the source
 * tables and the per-plane index (gpu-stepwise) or the tower events (gpu-diamond) and the receiver
 * index rebuilt, device buffers grown when a table outgrows them. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>

#include "problem.h"
#include "survey_check.h"

/* The smallest solver.device_memory that works for a case, from the message of a session create
 * (the window's own arithmetic: planes of the ring, 2 MiB granules) under the cap the validation
 * names about (its smallest window, from the host; the validation refuses anything below that), or
 * that cap where the session runs at it. */
static unsigned long long smallest_cap(const sc_case *c, const char *kernel) {
  sc_case probe = *c;
  char solver[300];
  snprintf(solver, sizeof solver, "solver = { kernel = \"%s\"; device_memory = 1; };", kernel);
  probe.solver = solver;
  char *text = sc_text(&probe, 1, NULL, 0);
  tw_error err = {0};
  tw_job *job = NULL;
  tw_medium *m = NULL;
  tw_session *s = NULL;
  REQUIRE(tw_job_load_string(text, "probe", NULL, 0, &job, &err) == TW_OK, "%s", err.msg);
  tw_estimate est;
  REQUIRE(tw_estimate_job(job, kernel, &est, &err) == TW_OK && est.window_min_bytes > 0, "%s: no window: %s", kernel,
          err.msg);
  job->device_memory = (uint64_t)ceil(est.window_min_bytes);
  REQUIRE(tw_medium_create(job, &m, NULL, &err) == TW_OK, "%s", err.msg);
  const tw_status rc = tw_session_create(m, kernel, 0, 0, &s, NULL, &err);
  const char *at = rc == TW_OK ? NULL : strstr(err.msg, "smallest cap that works is ");
  CHECK(rc == TW_OK || (rc == TW_ERANGE && at), "%s under the validation's smallest window (%llu B): status %d, '%s'",
        kernel, (unsigned long long)job->device_memory, (int)rc, err.msg);
  unsigned long long cap = job->device_memory; /* (it runs at the validation's smallest window) */
  if (rc != TW_OK) cap = at ? strtoull(at + strlen("smallest cap that works is "), NULL, 10) : 0;
  tw_session_destroy(s);
  tw_medium_destroy(m);
  tw_job_destroy(job);
  free(text);
  return cap;
}

/* A window case: the cap a fifth above the smallest, so that the ring is a real window that slides. */
static int window_case(sc_case c, const char *kernel, const char *extra, const char *tag) {
  static char solver[400];
  const unsigned long long cap = smallest_cap(&c, kernel) * 6 / 5;
  snprintf(solver, sizeof solver, "solver = { kernel = \"%s\"; device_memory = %llu; %s };", kernel, cap, extra);
  c.solver = solver;
  c.window = 1;
  return sc_run_case(&c, kernel, 0, tag);
}

int main(void) {
  if (!tw_backend_find("gpu-diamond")) TW_SKIP("no GPU: the GPU kernels are not in this build (built without CUDA)");
  if (tw_gpu_count() == 0) TW_SKIP("no GPU: the GPU kernels need one and none is present");
  /* Long in x, narrow planes: a window of a few hundred planes slides over it. (A ring comes in
   * 2 MiB granules, ~140 of these planes: at 330 planes gpu-stepwise's smallest cap × 6/5 held the
   * whole grid, H200 run 6.) */
  static const char *const LONG = "grid = { n = [1000, 30, 22]; d = [10.0, 10.0, 10.0]; };\n";
  int shots = 0;
  static const struct {
    sc_case c;
    const char *kernel, *mode; /* TW_DIAMOND_MODE for gpu-diamond (NULL: its default choice) */
  } cases[] = {
      {{4, 0, "nearest", "nearest", "solver = { kernel = \"gpu-stepwise\"; };", NULL, 0}, "gpu-stepwise", NULL},
      {{8, 1, "trilinear", "trilinear", "solver = { kernel = \"gpu-stepwise\"; };", NULL, 0}, "gpu-stepwise", NULL},
      {{2, 1, "nearest", "trilinear", "solver = { kernel = \"gpu-diamond\"; };", NULL, 0}, "gpu-diamond", "persistent"},
      {{2, 0, "trilinear", "nearest", "solver = { kernel = \"gpu-diamond\"; tower_height = 12; };", NULL, 0}, "gpu-diamond",
       "stage"},
      {{4, 1, "trilinear", "trilinear", "solver = { kernel = \"gpu-diamond\"; dts = 2; tower_height = 8; };", NULL, 0},
       "gpu-diamond", "persistent"},
      {{6, 0, "nearest", "trilinear", "solver = { kernel = \"gpu-diamond\"; tower_height = 6; };", NULL, 0}, "gpu-diamond",
       "generic"},
      {{8, 1, "nearest", "nearest", "solver = { kernel = \"gpu-diamond\"; };", NULL, 0}, "gpu-diamond", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char tag[48];
    snprintf(tag, sizeof tag, "%s%zu%s%s", cases[i].kernel, i, cases[i].mode ? "-" : "",
             cases[i].mode ? cases[i].mode : "");
    if (cases[i].mode) setenv("TW_DIAMOND_MODE", cases[i].mode, 1);
    else unsetenv("TW_DIAMOND_MODE");
    shots += sc_run_case(&cases[i].c, cases[i].kernel, 0, tag);
  }
  unsetenv("TW_DIAMOND_MODE");
  /* Through the sliding window: the stepwise slabs, gpu-diamond's default (its towers at order 2). */
  const sc_case w8 = {8, 1, "trilinear", "nearest", NULL, LONG, 1}, w2 = {2, 0, "nearest", "trilinear", NULL, LONG, 1};
  shots += window_case(w8, "gpu-stepwise", "tower_height = 10;", "gpu-stepwise-window");
  shots += window_case(w2, "gpu-diamond", "tower_height = 16;", "gpu-diamond-window");
  printf("GPU surveys: %d shots, each equal to its single-shot run\n", shots);
  return tw_test_exit();
}
