/* test_convergence — the solver converges to the analytic free-space solution of docs/design.md §1,
 * p = s(t − r/c)/(4π r), at the rates the scheme promises. Every run goes through the public
 * path a user takes: tw_job_load_string → tw_run_job (cpu kernel) → HDF5 → tw_result_open, and
 * tw_reference_write → tw_compare (the `torrewave reference` / `compare` code).
 *
 * Set-up, shared by both parts: c = 2000 m/s, a 15 Hz Ricker (t0 = 0.1 s) at the centre of a
 * 640 m cube with no absorbing layers, five receivers 85–104 m from it (along the axes and the
 * diagonals, so that the anisotropic part of the dispersion counts too). The record ends at
 * 0.25 s: the direct pulse has passed every receiver (r/c + t0 + 1/f ≈ 0.22 s) and the first
 * reflection from the Dirichlet faces has not arrived (its image paths are >= 540 m, so it is
 * negligible before 540/c + t0 − 1/f ≈ 0.30 s). So the only error is the discretization's.
 *
 * (a) Time: second order. At a fixed Courant number (0.9 of the stable limit), halving d and dt
 *     must cut the error by >= 3.5 (4 in the limit). Order 8 in space makes the spatial error
 *     negligible: at the Ricker's f_max ≈ 2.5 f (6 points per wavelength on the coarse grid) its
 *     relative phase-velocity error is 1.8e-4 against 7.8e-3 for the leapfrog's time error at
 *     this Courant number, so what is measured is the time error, (ω dt)²/24.
 * (b) Space: at a fixed small dt (c dt/d = 0.1, time error 7e-5 at the peak frequency) the error
 *     falls with the order: 2 → 4 → 8 (phase errors at the peak: 7e-3, 2e-4, 1e-7).
 * Measured numbers are printed (ctest -V) and recorded in docs/accuracy.md. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tw_io.h"
#include "tw_solver.h"
#include "tw_sources.h"
#include "tw_test.h"

static const char *const JOB =
    "grid = { n = [65, 65, 65]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { duration = 0.25; dt = 0.001; };\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "scheme = { order = 8; };\n"
    "boundary = { absorbing = 0; };\n"
    "sources = ( { position = [320.0, 320.0, 320.0];\n"
    "              wavelet = { type = \"ricker\"; frequency = 15.0; }; } );\n"
    "receivers = { points = ( [420.0, 320.0, 320.0], [320.0, 220.0, 320.0], [320.0, 320.0, 420.0],\n"
    "                         [380.0, 380.0, 380.0], [260.0, 380.0, 320.0] ); };\n"
    "solver = { kernel = \"cpu\"; };\n";

#define C_VP 2000.0

/* Stable dt of order `order` on spacing d (docs/design.md §1), times `courant`. */
static double dt_at(int order, double d, double courant) {
  const double dd[3] = {d, d, d};
  return courant * tw_stable_dt(order, dd, C_VP);
}

/* Relative L2 error of the traces of a run against the analytic reference, over all receivers
 * and the whole record. */
static double trace_error(int order, double d, double dt, const char *tag) {
  char n_set[128], d_set[128], dt_set[128], order_set[32], run_path[512], ref_path[512];
  const int n = (int)lround(640.0 / d) + 1;
  snprintf(n_set, sizeof n_set, "grid.n=[%d,%d,%d]", n, n, n);
  snprintf(d_set, sizeof d_set, "grid.d=[%.17g,%.17g,%.17g]", d, d, d);
  snprintf(dt_set, sizeof dt_set, "time.dt=%.17g", dt);
  snprintf(order_set, sizeof order_set, "scheme.order=%d", order);
  snprintf(run_path, sizeof run_path, "%s/tests/convergence-%s.h5", TW_BINARY_DIR, tag);
  snprintf(ref_path, sizeof ref_path, "%s/tests/convergence-%s-ref.h5", TW_BINARY_DIR, tag);
  const char *sets[] = {n_set, d_set, dt_set, order_set};
  tw_error err = {0};
  tw_job *job = NULL, *rjob = NULL;
  REQUIRE(tw_job_load_string(JOB, "<convergence>", sets, 4, &job, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_job_load_string(JOB, "<convergence>", sets, 4, &rjob, &err) == TW_OK, "%s", err.msg);
  tw_run_report rep;
  REQUIRE(tw_run_job(job, run_path, NULL, &rep, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_reference_write(rjob, ref_path, &err) == TW_OK, "%s", err.msg);
  tw_result *run = NULL, *ref = NULL;
  REQUIRE(tw_result_open(run_path, &run, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_result_open(ref_path, &ref, &err) == TW_OK, "%s", err.msg);
  tw_compare_report cr;
  REQUIRE(tw_compare(run, ref, NULL, &cr, &err) == TW_OK, "%s", err.msg);
  REQUIRE(cr.npairs == 5 && cr.nstat == 1, "pairs %ld, datasets %d", cr.npairs, cr.nstat);
  const double e = cr.stat[0].rel_l2;
  printf("  %-14s order %d  d = %5.2f m  dt = %.4e s  Courant %.3f  steps %4ld  rel L2 error %.4e  (%.1f s, %.3f "
         "Gcell/s)\n",
         tag, order, d, dt, tw_courant(order, (double[3]){d, d, d}, C_VP, dt), rep.steps, e, rep.wall_s,
         rep.gcells_per_s);
  fflush(stdout);
  tw_compare_report_free(&cr);
  tw_result_close(run);
  tw_result_close(ref);
  tw_job_destroy(job);
  tw_job_destroy(rjob);
  unlink(run_path);
  unlink(ref_path);
  return e;
}

/* (a) Fixed Courant number, d and dt halved: second order in time. */
static void time_convergence(void) {
  printf("(a) fixed Courant number 0.9, order 8: error ratio when d and dt are halved (expect ~4)\n");
  const double e1 = trace_error(8, 10.0, dt_at(8, 10.0, 0.9), "time-coarse");
  const double e2 = trace_error(8, 5.0, dt_at(8, 5.0, 0.9), "time-fine");
  const double ratio = e1 / e2;
  printf("  ratio %.3f, observed order %.2f\n", ratio, log(ratio) / log(2.0));
  CHECK(ratio >= 3.5, "halving d and dt cut the error by %.3f, expected >= 3.5 (second order)", ratio);
  CHECK(e1 < 0.05, "coarse error %.3e: the solver does not match the analytic solution", e1);
}

/* (b) Fixed fine dt: error falls with the spatial order. */
static void order_convergence(void) {
  printf("(b) fixed dt (c dt / d = 0.1), d = 10 m: error by spatial order (expect falling)\n");
  const double dt = 0.1 * 10.0 / C_VP;
  const double e2 = trace_error(2, 10.0, dt, "order-2");
  const double e4 = trace_error(4, 10.0, dt, "order-4");
  const double e8 = trace_error(8, 10.0, dt, "order-8");
  printf("  ratios: order 2 / order 4 = %.2f, order 4 / order 8 = %.2f\n", e2 / e4, e4 / e8);
  CHECK(e2 > 3.0 * e4, "order 4 (%.3e) is not clearly better than order 2 (%.3e)", e4, e2);
  CHECK(e4 > 2.0 * e8, "order 8 (%.3e) is not clearly better than order 4 (%.3e)", e8, e4);
  CHECK(e8 < 2e-3, "order 8 at c dt/d = 0.1: error %.3e, expected < 2e-3", e8);
}

int main(void) {
  time_convergence();
  order_convergence();
  return tw_test_exit();
}
