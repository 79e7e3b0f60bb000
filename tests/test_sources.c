/* Sources and receivers (docs/design.md §1): placement weights and their fixed order, edges, the free
 * surface, Ricker values, and file wavelets resampled to dt. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tw_boundary.h"
#include "tw_solver.h"
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
  /* Frequencies and delays whose π²f²τ² overflows (f = 1e160 Hz, a delay of 1e300 s) were NaN:
   * finite values of the same pulse, its peak, and −0 in its far tail. */
  const double far = tw_ricker(0.0, 1e160, 1.5e-160, 1.0), near = tw_ricker(0.0, 1e150, 1.5e-150, 1.0);
  CHECK(isfinite(far) && fabs(far - near) <= 1e-12 * fabs(near) && near < 0, "f = 1e160: %g (1e150: %g)", far, near);
  CHECK(tw_ricker(0.0, 1e300, 0.0, 2.0) == 2.0, "f = 1e300, t = t0: %g", tw_ricker(0.0, 1e300, 0.0, 2.0));
  CHECK(tw_ricker(0.01, 25.0, 1e300, 3.0) == 0.0 && !isnan(tw_ricker(0.01, 25.0, 1e300, 3.0)), "delay 1e300: %g",
        tw_ricker(0.01, 25.0, 1e300, 3.0));
  /* The far tail (a = π²f²τ² past exp's underflow, said without calling exp): the formula's bits,
   * its −0 and +0 included, on both sides of the cut. */
  for (int i = 0; i <= 2000; i++) {
    const double fq = 10.0, t0 = 0.15, amp = i % 2 ? -1.5 : 1.5;
    const double t = t0 + sqrt(700.0 + 0.05 * i) / (M_PI * fq) * (i % 3 ? 1.0 : -1.0);
    const double pi = 3.14159265358979323846, a = pi * pi * fq * fq * (t - t0) * (t - t0);
    const double want = amp * (1.0 - 2.0 * a) * exp(-a), got = tw_ricker(t, fq, t0, amp);
    CHECK(memcmp(&want, &got, sizeof got) == 0, "ricker tail a = %.17g: %g, expected %g", a, got, want);
  }
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

/* ---------------------------------------------------------------- wavelet files: formats, resampling */

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  REQUIRE(f != NULL, "open %s", path);
  fputs(text, f);
  fclose(f);
}

/* Two columns (time, amplitude): the times give the sampling and the start; a wavelet starting
 * at t0 = 2 ms, 1 ms apart, resampled to 0.5 ms by linear interpolation (zero before and after). */
static void check_two_columns(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/w2.txt", dir);
  write_text(path, "# time amplitude\n0.002 1.0\n0.003, 3.0\n0.004\t-1.0  # last\n");
  tw_wavelet_spec w = {.type = TW_WAVELET_FILE, .file = path};
  tw_wavelet_samples fs;
  tw_error err;
  REQUIRE(tw_wavelet_read(&w, NULL, 0.0005, &fs, &err) == TW_OK, "%s", err.msg);
  CHECK(fs.columns == 2 && fs.n == 3 && fabs(fs.t0 - 0.002) < 1e-15 && fabs(fs.dt - 0.001) < 1e-15,
        "two columns: %d columns, %ld samples, t0 %g, dt %g", fs.columns, fs.n, fs.t0, fs.dt);
  tw_wavelet_samples_free(&fs);
  float s[13];
  REQUIRE(tw_wavelet_sample(&w, NULL, 0.0005, 12, s, &err) == TW_OK, "%s", err.msg);
  const float want[13] = {0, 0, 0, 0.5f, 1, 2, 3, 1, -1, -0.5f, 0, 0, 0};
  for (int i = 0; i < 13; i++) CHECK(fabs(s[i] - want[i]) < 1e-6, "two columns, sample %d: %g want %g", i, s[i], want[i]);
  /* a wavelet.dt that disagrees with the times is an error */
  w.file_dt = 0.002;
  CHECK(tw_wavelet_read(&w, NULL, 0.0005, &fs, &err) == TW_EFORMAT && strstr(err.msg, "spaced 0.001 s"), "dt: %s",
        err.msg);
  remove(path);
}

/* Line endings: LF, CRLF and CR alone (old Mac files) read alike. A CR-only file was one line: two
 * samples became one two-column sample (time 0, amplitude 1) and more were "more than two numbers"
 * on line 1; a bad line is named by its number in each. */
static void check_line_endings(const char *dir) {
  static const char *const eol[] = {"\n", "\r\n", "\r"};
  char path[600], text[256];
  snprintf(path, sizeof path, "%s/weol.txt", dir);
  for (int e = 0; e < 3; e++) {
    for (int two = 0; two < 2; two++) {
      const char *const *l = two ? (const char *const[]){"0.002 1.0", "0.003 3.0", "0.004 -1.0"}
                                 : (const char *const[]){"0.0", "1.0", "-0.5"};
      snprintf(text, sizeof text, "# samples%s%s%s%s%s%s%s", eol[e], l[0], eol[e], l[1], eol[e], l[2], eol[e]);
      write_text(path, text);
      tw_wavelet_spec w = {.type = TW_WAVELET_FILE, .file = path, .file_dt = two ? 0.0 : 0.001};
      tw_wavelet_samples fs;
      tw_error err;
      const tw_status st = tw_wavelet_read(&w, NULL, 0.0005, &fs, &err);
      CHECK(st == TW_OK, "eol %d, %d columns: %s", e, 1 + two, err.msg);
      if (st) continue;
      const double want = two ? 3.0 : 1.0;
      CHECK(fs.columns == 1 + two && fs.n == 3 && fs.v[1] == want && fabs(fs.dt - 0.001) < 1e-15,
            "eol %d: %d columns, %ld samples, v[1] %g, dt %g", e, fs.columns, fs.n, fs.n > 1 ? fs.v[1] : 0.0, fs.dt);
      tw_wavelet_samples_free(&fs);
    }
    snprintf(text, sizeof text, "1.0%s%sx%s", eol[e], eol[e], eol[e]); /* (a blank line between) */
    write_text(path, text);
    tw_wavelet_spec w = {.type = TW_WAVELET_FILE, .file = path, .file_dt = 0.001};
    tw_wavelet_samples fs;
    tw_error err;
    CHECK(tw_wavelet_read(&w, NULL, 0.0005, &fs, &err) == TW_EFORMAT &&
              strstr(err.msg, "line 3: not a number: got \"x\""),
          "eol %d, bad line: %s", e, err.msg);
  }
  remove(path);
}

/* The anti-alias filter, against a known signal: a file sampled 4x finer than the run holds a
 * component inside the run's band (f1) and one above its Nyquist frequency 1/(2 dt) (f2), each
 * under a smooth Gaussian envelope. Resampled to dt, f1 must come out as it went in and f2 must
 * vanish; sampling without the filter (linear interpolation, the old resampler) folds f2 onto
 * 1/dt − f2, as large as f1. Two pairs: one far from the band edge, one close to both of its
 * sides (the passband ends at 0.42/dt, the stopband starts at 0.58/dt). */
static void check_antialias(const char *dir) {
  const double dt = 1e-3, fdt = dt / 4, pi = 3.14159265358979323846;
  const double pairs[2][2] = {{100.0, 800.0}, {380.0, 650.0}};
  enum { NF = 1200, NS = 300 };
  for (int p = 0; p < 2; p++) {
    const double f1 = pairs[p][0], f2 = pairs[p][1];
    char path[600];
    snprintf(path, sizeof path, "%s/alias%d.txt", dir, p);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL, "open %s", path);
    for (int i = 0; i < NF; i++) {
      const double t = i * fdt, g = exp(-0.5 * pow((t - 0.15) / 0.03, 2));
      fprintf(f, "%.17g\n", g * (sin(2 * pi * f1 * t) + sin(2 * pi * f2 * t)));
    }
    fclose(f);
    tw_wavelet_spec w = {.type = TW_WAVELET_FILE, .file = path, .file_dt = fdt};
    float s[NS + 1];
    tw_error err;
    REQUIRE(tw_wavelet_sample(&w, NULL, dt, NS, s, &err) == TW_OK, "%s", err.msg);
    double emax = 0, lmax = 0;
    for (int m = 0; m <= NS; m++) {
      const double t = m * dt, low = exp(-0.5 * pow((t - 0.15) / 0.03, 2)) * sin(2 * pi * f1 * t);
      emax = fmax(emax, fabs(s[m] - low));
      lmax = fmax(lmax, fabs(low));
    }
    printf("anti-alias: f1 = %.0f Hz kept, f2 = %.0f Hz (aliases to %.0f Hz) removed: max error %.2e of the "
           "peak %.3f\n", f1, f2, 1 / dt - f2, emax / lmax, lmax);
    CHECK(emax < 1e-3 * lmax, "anti-alias %d: max |resampled - f1 component| = %.3e, peak %.3f", p, emax, lmax);
    remove(path);
  }
}

/* The highest frequency of a wavelet from its spectrum: a sampled Ricker gives 2.5 f back (the
 * fraction is chosen so), for several f and dt. */
static void check_fmax(void) {
  const double fr[3] = {5.0, 12.0, 40.0}, dts[3] = {2e-3, 5e-4, 2.5e-4};
  for (int i = 0; i < 3; i++) {
    const long n = (long)(6.0 / fr[i] / dts[i]);
    float *s = malloc((size_t)n * sizeof *s);
    REQUIRE(s != NULL, "malloc");
    for (long k = 0; k < n; k++) s[k] = (float)tw_ricker(k * dts[i], fr[i], 1.5 / fr[i], 1.0);
    const double f = tw_wavelet_fmax(s, n, dts[i]);
    CHECK(fabs(f - 2.5 * fr[i]) < 0.01 * 2.5 * fr[i], "fmax of a %g Hz Ricker at dt %g: %g Hz, want %g", fr[i], dts[i],
          f, 2.5 * fr[i]);
    free(s);
  }
  float zero[8] = {0};
  CHECK(tw_wavelet_fmax(zero, 8, 1e-3) == 0.0, "fmax of zeros");
}

/* Where sources and receivers act, as the output stores it (tw_points_at): model cells, weights,
 * and the position the weights stand for: a nearest point's cell, a trilinear point itself. */
static void check_points_at(void) {
  static const char *text =
      "grid = { n = [11, 9, 7]; d = [10.0, 20.0, 5.0]; origin = [100.0, -50.0, 0.0]; };\n"
      "time = { steps = 10; };\n"
      "model = { type = \"constant\"; vp = 2000.0; };\n"
      "boundary = { absorbing = 3; free_surface = true; };\n"
      "sources = ( { position = [134.9, -9.9, 15.0]; wavelet = { type = \"ricker\"; frequency = 10.0; }; },\n"
      "            { position = [122.5, 40.0, 3.75]; interpolation = \"trilinear\";\n"
      "              wavelet = { type = \"ricker\"; frequency = 10.0; }; } );\n"
      "receivers = { interpolation = \"trilinear\"; points = ( [122.5, 40.0, 3.75] ); };\n";
  tw_job *job = NULL;
  tw_error err = {0};
  REQUIRE(tw_job_load_string(text, "at.cfg", NULL, 0, &job, &err) == TW_OK, "%s", err.msg);
  tw_grid g;
  tw_grid_setup(&g, job->n, job->d, job->origin, job->absorb, job->free_surface);
  tw_points_at s, r;
  REQUIRE(tw_points_at_compute(job, &g, 0, &s, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_points_at_compute(job, &g, 1, &r, &err) == TW_OK, "%s", err.msg);
  CHECK(s.n == 2 && s.taps == 8 && r.n == 1 && r.taps == 8, "taps %d %d", s.taps, r.taps);
  /* source 0, nearest: cell (3, 2, 3) at (130, -10, 15), weight 1, the other slots unused */
  CHECK(s.interp[0] == 0 && s.cells[0] == 3 && s.cells[1] == 2 && s.cells[2] == 3 && s.weights[0] == 1.0 &&
            s.cells[3] == -1 && s.weights[1] == 0.0, "nearest source cells");
  CHECK(s.used[0][0] == 130.0 && s.used[0][1] == -10.0 && s.used[0][2] == 15.0, "nearest source used (%g, %g, %g)",
        s.used[0][0], s.used[0][1], s.used[0][2]);
  /* source 1 and the receiver, trilinear: 8 cells around, weights summing to 1, used = requested
   * (the taps on k = 0 are kept here: the output shows where the point lies) */
  const tw_points_at *t[2] = {&s, &r};
  for (int q = 0; q < 2; q++) {
    const long i = q ? 0 : 1;
    double sum = 0;
    for (int k = 0; k < 8; k++) sum += t[q]->weights[i * 8 + k];
    CHECK(t[q]->interp[i] == 1 && fabs(sum - 1.0) < 1e-14 && t[q]->cells[i * 24 + 2] == 0 && t[q]->cells[i * 24 + 5] == 1,
          "trilinear %d: weights sum %.17g", q, sum);
    CHECK(fabs(t[q]->used[i][0] - 122.5) < 1e-9 && fabs(t[q]->used[i][1] - 40.0) < 1e-9 &&
              fabs(t[q]->used[i][2] - 3.75) < 1e-9, "trilinear %d used (%g, %g, %g)", q, t[q]->used[i][0],
          t[q]->used[i][1], t[q]->used[i][2]);
  }
  tw_points_at_free(&s);
  tw_points_at_free(&r);
  tw_job_destroy(job);
}

int main(void) {
  check_placement();
  check_points_at();
  check_wavelets();
  char dir[] = "/tmp/tw_src2_XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL, "mkdtemp");
  check_two_columns(dir);
  check_line_endings(dir);
  check_antialias(dir);
  rmdir(dir);
  check_fmax();
  return tw_test_exit();
}
