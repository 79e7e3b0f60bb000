/* Sources and receivers (DESIGN §1): placement weights and their fixed order, edges, the free
 * surface, Ricker values, and file wavelets resampled to dt. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tw_boundary.h"
#include "tw_sources.h"
#include "tw_test.h"

static tw_grid grid(int fs) {
  const int n[3] = {11, 9, 7}, ab[3] = {3, 2, 4};
  const double d[3] = {10.0, 20.0, 5.0}, o[3] = {100.0, -50.0, 0.0};
  tw_grid g;
  tw_grid_setup(&g, n, d, o, ab, fs);
  return g;
}

static void check_placement(void) {
  tw_grid g = grid(0);
  tw_taps t;
  tw_error err;
  /* Nearest: rounds to the closest cell, padded indices offset by the layers. */
  double p[3] = {100.0 + 3 * 10.0 + 4.9, -50.0 + 2 * 20.0 + 10.1, 3 * 5.0};
  REQUIRE(tw_place(&g, p, TW_INTERP_NEAREST, 0, &t, &err) == TW_OK, "%s", err.msg);
  CHECK(t.ntap == 1 && t.ijk[0][0] == 3 + 3 && t.ijk[0][1] == 3 + 2 && t.ijk[0][2] == 3 + 4 && t.w[0] == 1.0,
        "nearest: %d taps at (%d,%d,%d)", t.ntap, t.ijk[0][0], t.ijk[0][1], t.ijk[0][2]);
  /* Trilinear: 8 weights in (i, j, k) order, low corner first, products of the fractions. */
  double q[3] = {100.0 + 2.25 * 10.0, -50.0 + 4.5 * 20.0, 1.75 * 5.0};
  REQUIRE(tw_place(&g, q, TW_INTERP_TRILINEAR, 0, &t, &err) == TW_OK, "%s", err.msg);
  CHECK(t.ntap == 8, "trilinear taps %d", t.ntap);
  double sum = 0;
  for (int a = 0, k = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 2; c++, k++) {
        double w = (a ? 0.25 : 0.75) * (b ? 0.5 : 0.5) * (c ? 0.75 : 0.25);
        CHECK(fabs(t.w[k] - w) < 1e-12, "tap %d weight %g want %g", k, t.w[k], w);
        CHECK(t.ijk[k][0] == 3 + 2 + a && t.ijk[k][1] == 2 + 4 + b && t.ijk[k][2] == 4 + 1 + c, "tap %d cell", k);
        sum += t.w[k];
      }
  CHECK(fabs(sum - 1.0) < 1e-14, "weights sum %.17g", sum);
  /* On the last cell of an axis: the upper neighbour would be outside, so it is not a tap. */
  double e[3] = {100.0 + 10 * 10.0, -50.0 + 8 * 20.0, 6 * 5.0};
  REQUIRE(tw_place(&g, e, TW_INTERP_TRILINEAR, 0, &t, &err) == TW_OK, "%s", err.msg);
  CHECK(t.ntap == 1 && t.ijk[0][0] == 3 + 10 && t.w[0] == 1.0, "corner: %d taps", t.ntap);
  /* Outside the model (even inside the absorbing layer) is an error naming axis and range. */
  double out[3] = {100.0 - 1.0, 0.0, 0.0};
  CHECK(tw_place(&g, out, TW_INTERP_NEAREST, 0, &t, &err) == TW_ERANGE && strstr(err.msg, "x = 99 m") &&
            strstr(err.msg, "100 .. 200"), "outside: %s", err.msg);
  /* Free surface: a source tap on k = 0 radiates nothing and is dropped; receivers keep it. */
  tw_grid f = grid(1);
  double s[3] = {150.0, 50.0, 2.5};
  REQUIRE(tw_place(&f, s, TW_INTERP_TRILINEAR, 1, &t, &err) == TW_OK, "%s", err.msg);
  CHECK(t.ntap == 1 && t.ijk[0][2] == 1 && fabs(t.w[0] - 0.5) < 1e-12, "surface drop: %d taps", t.ntap);
  REQUIRE(tw_place(&f, s, TW_INTERP_TRILINEAR, 0, &t, &err) == TW_OK, "%s", err.msg);
  CHECK(t.ntap == 2 && t.ijk[0][2] == 0, "surface kept for receivers: %d taps", t.ntap);
}

static void check_wavelets(void) {
  /* Ricker: peak A at t0, zero crossings at t0 ± 1/(π f √2). */
  CHECK(fabs(tw_ricker(0.1, 10.0, 0.1, 2.0) - 2.0) < 1e-15, "ricker peak");
  CHECK(fabs(tw_ricker(0.1 + 1.0 / (M_PI * 10.0 * sqrt(2.0)), 10.0, 0.1, 1.0)) < 1e-12, "ricker zero crossing");
  /* A file wavelet at 2 ms resampled to 1 ms: linear interpolation, zero past the end. */
  char dir[] = "/tmp/tw_src_XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL, "mkdtemp");
  char path[512];
  snprintf(path, sizeof path, "%s/w.txt", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f != NULL, "open %s", path);
  fprintf(f, "# a ramp\n0\n1.0\n\n3.0  # comment\n-1\n");
  fclose(f);
  tw_wavelet_spec w = {.type = TW_WAVELET_FILE, .file = path, .file_dt = 0.002};
  char job[600];
  snprintf(job, sizeof job, "%s/job.cfg", dir);
  float s[12];
  tw_error err;
  REQUIRE(tw_wavelet_sample(&w, job, 0.001, 11, s, &err) == TW_OK, "%s", err.msg);
  const float want[12] = {0, 0.5f, 1, 2, 3, 1, -1, -0.5f, 0, 0, 0, 0};
  for (int i = 0; i < 12; i++) CHECK(fabs(s[i] - want[i]) < 1e-6, "sample %d: %g want %g", i, s[i], want[i]);
  /* A malformed line is reported with the file and line. */
  f = fopen(path, "w");
  fprintf(f, "1\n2\nthree\n");
  fclose(f);
  CHECK(tw_wavelet_sample(&w, job, 0.001, 11, s, &err) == TW_EFORMAT && strstr(err.msg, "line 3"), "bad: %s",
        err.msg);
  remove(path);
  rmdir(dir);
}

int main(void) {
  check_placement();
  check_wavelets();
  return tw_test_exit();
}
