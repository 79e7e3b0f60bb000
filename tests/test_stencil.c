/* Stencil coefficients exact on polynomials up to the order, the float weights and the one
 * Laplacian on a polynomial field, and the stability bound of docs/design.md §1: a run just below the
 * limit stays bounded, just above it blows up. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "tw_boundary.h"
#include "tw_test.h"

/* Σ_m C_m (f(m) + f(−m) − 2 f(0)) must equal f''(0) for f = x^q, q ≤ order + 1. */
static void check_coefficients(void) {
  for (int order = 2; order <= 16; order += 2) {
    double C[9];
    int r = tw_fd_coefficients(order, C);
    CHECK(r == order / 2, "order %d: radius %d", order, r);
    for (int q = 0; q <= order + 1; q++) {
      double s = 0.0, scale = 0.0;
      for (int m = 1; m <= r; m++) {
        double fp = pow(m, q), fm = pow(-m, q), f0 = q == 0 ? 1.0 : 0.0;
        s += C[m] * (fp + fm - 2.0 * f0);
        scale += fabs(C[m]) * (fabs(fp) + fabs(fm));
      }
      double want = q == 2 ? 2.0 : 0.0;
      CHECK(fabs(s - want) <= 1e-13 * (1.0 + scale), "order %d, x^%d: %.17g, want %g", order, q, s, want);
    }
    /* Degree order + 2 must NOT be exact (the order is not higher than claimed). */
    double s = 0.0;
    for (int m = 1; m <= r; m++) s += C[m] * 2.0 * pow(m, order + 2);
    CHECK(fabs(s) > 1e-6, "order %d exact beyond its order?", order);
  }
  double C[9];
  CHECK(tw_fd_coefficients(3, C) == 0 && tw_fd_coefficients(18, C) == 0, "odd or too high orders rejected");
  CHECK(fabs(tw_fd_lambda(2) - 4.0) < 1e-15, "lambda order 2 = %g", tw_fd_lambda(2));
}

/* The shared float Laplacian on p = x² + 2y² + 3z² (cell units × d): exactly 2 + 4 + 6 = 12. */
static void check_laplacian(void) {
  const double d[3] = {2.0, 0.5, 1.0};
  for (int order = 2; order <= 16; order += 2) {
    tw_stencil st;
    int r = tw_stencil_setup(order, d, &st);
    REQUIRE(r == order / 2, "setup order %d", order);
    enum { W = 17 };
    float line[3][W];
    for (int m = 0; m < W; m++) {
      double u = m - W / 2;
      line[0][m] = (float)(u * d[0] * u * d[0] + 7.0);       /* x² + const */
      line[1][m] = (float)(2.0 * u * d[1] * u * d[1] + 7.0); /* 2y² */
      line[2][m] = (float)(3.0 * u * d[2] * u * d[2] + 7.0); /* 3z² */
    }
    /* The centre is shared: all three lines hold 7 at the centre. */
    float lap = tw_laplacian(r, &st, &line[0][W / 2], 1, &line[1][W / 2], 1, &line[2][W / 2], 1);
    CHECK(fabs(lap - 12.0) < 2e-4 * order, "order %d: laplacian %.8g, want 12", order, lap);
  }
}

/* The update leaves a constant field unchanged bit for bit, at every order and spacing (the pair
 * form of tw_stencil.h: L = 0 exactly). With a centre weight rounded apart from the pair weights,
 * order 8 at d = 10 m gave L = +3.5e-9 m⁻² · p, a velocity error visible against a float64 solution. */
static void check_constant_field(void) {
  tw_rng_seed(20261124);
  const double fixed[][3] = {{10, 10, 10}, {12.5, 12.5, 12.5}, {10, 10, 5}, {7.3, 3.1, 1.7}, {25, 20, 6.25}};
  const float values[] = {1.0f, -1.0f, 3.7e-3f, -123.456f, 1e-20f, 6.02e23f, 1.17549435e-38f};
  enum { W = 17 };
  float line[W];
  for (int order = 2; order <= 16; order += 2) {
    for (int t = 0; t < 25; t++) {
      double d[3];
      for (int a = 0; a < 3; a++) d[a] = t < 5 ? fixed[t][a] : 0.5 + 49.5 * tw_rnd_unit();
      tw_stencil st;
      const int r = tw_stencil_setup(order, d, &st);
      REQUIRE(r == order / 2, "setup order %d", order);
      for (size_t v = 0; v < sizeof values / sizeof values[0] + 3; v++) {
        float p = v < sizeof values / sizeof values[0] ? values[v] : (float)((tw_rnd_unit() - 0.5) * 1e4);
        for (int m = 0; m < W; m++) line[m] = p;
        const float lap = tw_laplacian(r, &st, &line[W / 2], 1, &line[W / 2], 1, &line[W / 2], 1);
        const float c2dt2 = (float)(tw_rnd_unit() * 0.3 * d[0] * d[0]);
        const float next = tw_cell_update(p, p, lap, c2dt2, 0.0f, 0.0f);
        CHECK(lap == 0.0f && memcmp(&next, &p, sizeof p) == 0,
              "order %d, d = [%g, %g, %g], p = %.9g: L = %.9g, p^{n+1} = %.9g", order, d[0], d[1], d[2], p, lap,
              next);
      }
    }
  }
}

/* The damping factor (tw_stencil.h): where only the column's part axy or only az is nonzero, the
 * update is the one-reciprocal form (2p − (1 − a)pm + c²dt²L) · RN(1/(1 + a)), bit for bit; where both
 * are, g = RN(RN(1/(1 + axy)) · RN(1/(1 + az))), within 2 ulp of 1/(1 + a + axy·az) and below
 * 1/(1 + a) (a little more damping); a = 0 gives the undamped update's bits. */
static void check_damping_factor(void) {
  tw_rng_seed(20261128);
  int n = 0;
  for (int t = 0; t < 20000; t++) {
    const float ax = (float)(tw_rnd_unit() * 0.4), ay = t % 3 ? 0.0f : (float)(tw_rnd_unit() * 0.4);
    const float az = t % 2 ? 0.0f : (float)(tw_rnd_unit() * 0.4);
    const float p0 = (float)(tw_rnd_unit() - 0.5), pm = (float)(tw_rnd_unit() - 0.5),
                lap = (float)(tw_rnd_unit() - 0.5);
    const float c2dt2 = (float)(tw_rnd_unit() * 0.3), axy = tw_damping_xy(ax, ay), a = tw_damping(ax, ay, az);
    const float got = tw_cell_update(p0, pm, lap, c2dt2, axy, az);
    if (az == 0.0f || axy == 0.0f) {
      const float want = tw_cell_damped_num(p0, pm, lap, c2dt2, 1.0f - a) * (1.0f / (1.0f + a));
      CHECK(memcmp(&got, &want, sizeof got) == 0, "ax %.9g ay %.9g az %.9g: %.9g, want %.9g", ax, ay, az, got, want);
    } else {
      const double g = tw_damp_g(axy, az), exact = 1.0 / ((1.0 + axy) * (1.0 + (double)az));
      CHECK(fabs(g - exact) <= 2.0 * 1.2e-7 * exact && g < 1.0 / (1.0 + a),
            "axy %.9g az %.9g: g %.9g, 1/((1+axy)(1+az)) %.9g", axy, az, g, exact);
    }
    n++;
  }
  const float z = tw_cell_update(0.5f, 0.25f, 0.125f, 0.2f, 0.0f, 0.0f),
              u = tw_cell_update_undamped(0.5f, 0.25f, 0.125f, 0.2f);
  CHECK(memcmp(&z, &u, sizeof z) == 0, "a = 0: %.9g, undamped %.9g", z, u);
  const float d0 = tw_cell_update_damped(0.5f, 0.25f, 0.125f, 0.2f, 0.0f, 0.0f);
  CHECK(memcmp(&d0, &u, sizeof d0) == 0, "damped formula at a = 0: %.9g, undamped %.9g", d0, u);
  printf("damping factor: %d cells\n", n);
}

/* Max |p| after `steps` steps of a homogeneous box with dt = factor × the stable limit. */
static double run_max(int order, double factor, int steps) {
  const int n[3] = {21, 19, 17};
  const double d[3] = {10.0, 12.0, 9.0};
  const double c = 2500.0;
  tw_problem pb;
  memset(&pb, 0, sizeof pb);
  const int zero[3] = {0, 0, 0};
  tw_grid_setup(&pb.g, n, d, NULL, zero, 0);
  pb.order = order;
  tw_stencil_setup(order, d, &pb.st);
  pb.steps = steps;
  pb.dt = factor * tw_stable_dt(order, d, c);
  size_t cells = tw_grid_cells(&pb.g);
  pb.c2dt2 = malloc(cells * sizeof(float));
  for (size_t i = 0; i < cells; i++) pb.c2dt2[i] = (float)(c * c * pb.dt * pb.dt);
  for (int a = 0; a < 3; a++) pb.a[a] = calloc((size_t)pb.g.N[a], sizeof(float));
  /* A one-step kick in one cell excites every mode, the fastest-growing one included. */
  int cell[1][3] = {{10, 9, 8}};
  pb.inj = cell;
  pb.ninj = 1;
  pb.S = calloc((size_t)steps, sizeof(float));
  pb.S[0] = 1.0f;
  pb.interval = 1;
  pb.nsamples = steps + 1;
  void *st = NULL;
  tw_error err;
  double mx = -1;
  if (tw_backend_cpu.create(&pb, &st, &err) == TW_OK && tw_backend_cpu.advance(st, 0, steps, NULL, &err) == TW_OK) {
    int lo[3] = {0, 0, 0}, cnt[3] = {pb.g.N[0], pb.g.N[1], pb.g.N[2]};
    float *f = malloc(cells * sizeof(float));
    tw_backend_cpu.extract(st, lo, cnt, 1, f, &err);
    mx = 0;
    for (size_t i = 0; i < cells; i++) mx = isfinite(f[i]) ? fmax(mx, fabs(f[i])) : INFINITY;
    free(f);
  }
  if (st) tw_backend_cpu.destroy(st);
  free(pb.c2dt2);
  free(pb.S);
  for (int a = 0; a < 3; a++) free(pb.a[a]);
  return mx;
}

static void check_stability(void) {
  for (int order = 2; order <= 8; order += 2) {
    /* The box's largest eigenvalue is a little below the infinite-grid bound (Dirichlet faces),
     * so "just above" is 3 % above; the unstable mode then grows by > 1.2 per step. */
    double below = run_max(order, 0.99, 600), above = run_max(order, 1.03, 600);
    printf("order %d: max |p| after 600 steps: %.3g at 0.99 x dt_max, %.3g at 1.03 x dt_max\n", order, below, above);
    CHECK(below >= 0 && below < 1e3, "order %d: stable run grew to %g", order, below);
    CHECK(!(above < 1e6), "order %d: unstable run stayed at %g", order, above);
  }
}

int main(void) {
  check_coefficients();
  check_laplacian();
  check_constant_field();
  check_damping_factor();
  check_stability();
  return tw_test_exit();
}
