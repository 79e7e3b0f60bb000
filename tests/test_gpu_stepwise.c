/* gpu-stepwise against the CPU reference, bitwise (memcmp), over a randomized matrix (docs/design.md §1:
 * CPU and GPU kernels do the same IEEE operations in the same order): orders 2–8, odd grid sizes, absorbing layers on
 * and off, free surface on and off, heterogeneous velocity, sources and receivers in corners, on
 * edges, on and just under the free surface, off-grid (trilinear), and random block lengths with
 * a decimated snapshot box after every block. Every tuning variant of the kernel must give
 * bitwise the same numbers as the default (same arithmetic, different tiling and x split), which
 * catches halo and tile-edge mistakes that a tolerance would hide; so must every launch split
 * (TW_STEPWISE_SLOTS: both rounds of the split, several x-chunks per tile).
 *
 * End to end too: a job file text through tw_job_load_string and tw_run_job with kernel cpu and
 * kernel gpu-stepwise, the HDF5 outputs read back and compared (traces and every snapshot).
 *
 * Environment: TW_TEST_SEED (default fixed), TW_TEST_CASES (default 16), TW_TEST_KERNEL. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "test_gpu_common.h"
#include "tw_io.h"

static double max_abs(const float *a, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
  return m;
}

/* Relative L2 of every snapshot box; returns the worst. */
static double worst_snapshot(const tg_run *a, const tg_run *b) {
  double worst = 0;
  for (int k = 0; k < a->nblocks; k++) {
    const size_t n = a->snap_off[k + 1] - a->snap_off[k];
    const double e = tw_rel_l2(a->snaps + a->snap_off[k], b->snaps + b->snap_off[k], n);
    if (!(e <= worst)) worst = e; /* NaN sticks */
  }
  return worst;
}

static void random_case(int i, uint64_t seed, tg_case *c) {
  static const int orders[4] = {2, 4, 6, 8};
  tg_seed(seed * 1315423911u + (uint64_t)i);
  memset(c, 0, sizeof *c);
  c->seed = seed + 7919u * (uint64_t)i;
  c->order = orders[i % 4];
  if (i == 0) { /* the fixed odd-size case of the issue */
    c->n[0] = 37, c->n[1] = 29, c->n[2] = 41;
  } else {
    for (int a = 0; a < 3; a++) c->n[a] = 2 * tg_int(7, 22) + 1; /* 15 .. 45 */
    if (i % 5 == 3) c->n[2] = 2 * tg_int(33, 40) + 1;             /* several z tiles */
  }
  const int aniso = i % 3 == 2;
  c->d[0] = 10.0, c->d[1] = aniso ? 12.0 : 10.0, c->d[2] = aniso ? 8.0 : 10.0;
  c->absorb = (i / 4) % 2 ? tg_int(3, 8) : 0;
  c->fs = (i / 2) % 2;
  c->hetero = i % 3 != 0;
  c->steps = tg_int(100, 200);
  c->interval = tg_int(1, 3);
  c->nsrc = tg_int(1, 3);
  c->nrec = tg_int(10, 30);
  c->src_interp = tg_int(0, 1) ? TW_INTERP_TRILINEAR : TW_INTERP_NEAREST;
  c->rec_interp = tg_int(0, 1) ? TW_INTERP_TRILINEAR : TW_INTERP_NEAREST;
}

/* ---------------------------------------------------------------- end to end: job → HDF5 */

static const char *const JOB =
    "grid = { n = [41, 37, 29]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { steps = 180; };\n"
    "model = { type = \"layered\";\n"
    "          layers = ( { top = 0.0; vp = 1500.0; }, { top = 125.0; vp = 2600.0; } ); };\n"
    "scheme = { order = 8; };\n"
    "boundary = { absorbing = 8; free_surface = true; };\n"
    "sources = ( { position = [200.0, 180.0, 30.0]; wavelet = { type = \"ricker\"; frequency = 15.0; }; },\n"
    "            { position = [400.0, 0.0, 280.0]; interpolation = \"trilinear\";\n"
    "              wavelet = { type = \"ricker\"; frequency = 12.0; amplitude = 2.0; }; } );\n"
    "receivers = { interval = 2; interpolation = \"trilinear\";\n"
    "              points = ( [0.0, 0.0, 5.0], [400.0, 360.0, 280.0], [133.3, 77.7, 5.0] );\n"
    "              lines = ( { from = [0.0, 183.0, 5.0]; to = [400.0, 183.0, 5.0]; count = 41; } ); };\n"
    "snapshots = { every = 60; decimate = 2; };\n"
    "solver = { kernel = \"cpu\"; };\n";

/* The result reads snapshots from the file: unlink path after tw_result_close. */
static tw_result *run_job(const char *kernel, int order, const char *tag, char path[512]) {
  char set_k[64], set_o[64];
  snprintf(path, 512, "%s/tests/gpu-stepwise-%s-%d.h5", TW_BINARY_DIR, tag, order);
  snprintf(set_k, sizeof set_k, "solver.kernel=\"%s\"", kernel);
  snprintf(set_o, sizeof set_o, "scheme.order=%d", order);
  const char *sets[2] = {set_k, set_o};
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(JOB, "<gpu-stepwise>", sets, 2, &job, &err) == TW_OK, "%s", err.msg);
  tw_run_report rep;
  REQUIRE(tw_run_job(job, path, NULL, &rep, &err) == TW_OK, "%s: %s", kernel, err.msg);
  CHECK(strcmp(rep.kernel, kernel) == 0, "ran %s, asked for %s", rep.kernel, kernel);
  tw_result *r = NULL;
  REQUIRE(tw_result_open(path, &r, &err) == TW_OK, "%s", err.msg);
  tw_job_destroy(job);
  return r;
}

static void end_to_end(const char *kernel, int order) {
  char pa[512], pb[512];
  tw_result *a = run_job("cpu", order, "cpu", pa), *b = run_job(kernel, order, "gpu", pb);
  REQUIRE(a->nrec == b->nrec && a->nsamples == b->nsamples && a->nsnap == b->nsnap, "result shapes differ");
  const size_t ntr = (size_t)a->nrec * a->nsamples;
  const long dtr = tg_first_diff(b->traces, a->traces, ntr);
  const size_t n = (size_t)a->snap_shape[0] * a->snap_shape[1] * a->snap_shape[2];
  float *sa = malloc(n * sizeof(float)), *sb = malloc(n * sizeof(float));
  REQUIRE(sa && sb, "out of memory");
  int snap_diff = -1;
  for (int k = 0; k < a->nsnap; k++) {
    tw_error err = {0};
    REQUIRE(tw_result_read_snapshot(a, k, sa, &err) == TW_OK, "%s", err.msg);
    REQUIRE(tw_result_read_snapshot(b, k, sb, &err) == TW_OK, "%s", err.msg);
    if (snap_diff < 0 && tg_first_diff(sb, sa, n) >= 0) snap_diff = k;
  }
  printf("end to end, order %d: job file -> tw_run_job -> HDF5, %s vs cpu: traces %s, %d snapshots %s "
         "(max |trace| %.3g)\n", order, kernel, dtr < 0 ? "bitwise equal" : "DIFFERENT", a->nsnap,
         snap_diff < 0 ? "bitwise equal" : "DIFFERENT", max_abs(a->traces, ntr));
  CHECK(dtr < 0, "end to end, order %d: traces differ from cpu first at element %ld (relative L2 %g)", order, dtr,
        tw_rel_l2(b->traces, a->traces, ntr));
  CHECK(snap_diff < 0, "end to end, order %d: snapshot %d differs from cpu", order, snap_diff);
  CHECK(a->nsnap == 3, "expected 3 snapshots, got %d", a->nsnap);
  free(sa), free(sb);
  tw_result_close(a);
  tw_result_close(b);
  unlink(pa);
  unlink(pb);
}

int main(void) {
  const char *kernel = tg_kernel_under_test("gpu-stepwise");
  const char *ref = "cpu";
  const char *e = getenv("TW_TEST_SEED");
  const uint64_t seed = e ? strtoull(e, NULL, 10) : 20251121u;
  e = getenv("TW_TEST_CASES");
  const int ncases = e ? atoi(e) : 16;
  printf("kernel %s against %s, bitwise, seed %llu, %d cases\n", kernel, ref, (unsigned long long)seed, ncases);
#ifdef TW_WITH_CUDA
  {
    /* The damping's reciprocal without __frcp_rn's range check (tw_stencil.h): every float in
     * [1, 2^32), a superset of the 1 + a any job gives, bitwise __frcp_rn's. */
    long long n = 0, bad = 0;
    float first = 0;
    tw_error err = {0};
    const tw_status st = tw_gpu_recip_check(1.0f, 4294967296.0f, &n, &bad, &first, &err);
    CHECK(st == TW_OK, "recip check: %s", err.msg);
    CHECK(st != TW_OK || (n == 32ll << 23 && bad == 0),
          "tw_dev_recip: %lld of %lld floats in [1, 2^32) differ from "
          "__frcp_rn, the first %.9g",
          bad, n, first);
    printf("device reciprocal: %lld floats in [1, 2^32), %lld differ from __frcp_rn\n", n, bad);
  }
#endif

  for (int i = 0; i < ncases; i++) {
    tg_case c;
    random_case(i, seed, &c);
    char desc[512];
    tg_case_print(&c, desc, sizeof desc);
    tw_error err = {0};
    tw_problem *pb = NULL;
    tw_status st = tg_problem(&c, 0.8, &pb, NULL, &err);
    REQUIRE(st == TW_OK, "case %d (%s): problem: %s", i, desc, err.msg);
    tg_sched sc;
    /* block lengths up to 16 steps, and up to 100 in every fifth case (a call then spans marks of
     * the receiver samples sent early: tw_gpu_samples_mark, every 32 steps) */
    REQUIRE(tg_sched_make(pb, i % 5 == 4 ? 100 : 1 + (i % 4) * 5, c.seed ^ 0xABCDu, &sc), "schedule");
    tg_run a, b;
    st = tg_drive(pb, ref, NULL, &sc, &a, &err);
    REQUIRE(st == TW_OK, "case %d: %s: %s", i, ref, err.msg);
    st = tg_drive(pb, kernel, NULL, &sc, &b, &err);
    CHECK(st == TW_OK, "case %d: %s: %s", i, kernel, err.msg);
    if (st == TW_OK) {
      const size_t ntr = (size_t)pb->nrec * (size_t)pb->nsamples;
      const double etr = tw_rel_l2(b.traces, a.traces, ntr);
      const double esn = worst_snapshot(&b, &a);
      printf("case %2d  %-118s  traces %.2e  snapshots %.2e  (max |trace| %.3g, %d blocks)\n", i, desc, etr, esn,
             max_abs(a.traces, ntr), sc.nblocks);
      const long dtr = tg_first_diff(b.traces, a.traces, ntr), dsn = tg_first_diff(b.snaps, a.snaps, a.snap_total);
      CHECK(dtr < 0, "case %d (%s): traces differ from %s first at element %ld: relative L2 %g", i, desc, ref, dtr, etr);
      CHECK(dsn < 0, "case %d (%s): snapshots differ from %s first at element %ld: relative L2 %g", i, desc, ref, dsn,
            esn);
      CHECK(max_abs(a.traces, ntr) > 0, "case %d: the reference traces are all zero: the case tests nothing", i);

#ifdef TW_WITH_CUDA
      /* Every variant bitwise equal to the default of the order. */
      if (strcmp(kernel, "gpu-stepwise") == 0) {
        for (int v = 0; v < tw_gpu_stepwise_variant_count(); v++) {
          const char *vn = tw_gpu_stepwise_variant_name(v);
          tg_run w;
          st = tg_drive(pb, kernel, vn, &sc, &w, &err);
          CHECK(st == TW_OK, "case %d: variant %s: %s", i, vn, err.msg);
          if (st) continue;
          const int same_tr = memcmp(w.traces, b.traces, ntr * sizeof(float)) == 0;
          const int same_sn = memcmp(w.snaps, b.snaps, b.snap_total * sizeof(float)) == 0;
          CHECK(same_tr && same_sn, "case %d: variant %s is not bitwise equal to the default (traces %s, "
                "snapshots %s; rel L2 %g / %g)", i, vn, same_tr ? "equal" : "differ", same_sn ? "equal" : "differ",
                tw_rel_l2(w.traces, b.traces, ntr), worst_snapshot(&w, &b));
          tg_run_free(&w);
        }
        /* The same bits whatever the launch split (TW_STEPWISE_SLOTS forces the resident block
         * count: every tile in round A; both rounds, round B in several x-chunks; more slots
         * than tiles). */
        static const char *const slots[3] = {"1", "4", "7"};
        for (int k = 0; k < 3; k++) {
          setenv("TW_STEPWISE_SLOTS", slots[k], 1);
          tg_run w;
          st = tg_drive(pb, kernel, NULL, &sc, &w, &err);
          unsetenv("TW_STEPWISE_SLOTS");
          CHECK(st == TW_OK, "case %d: %s slots: %s", i, slots[k], err.msg);
          if (st) continue;
          const int same = memcmp(w.traces, b.traces, ntr * sizeof(float)) == 0 &&
                           memcmp(w.snaps, b.snaps, b.snap_total * sizeof(float)) == 0;
          CHECK(same, "case %d: with %s resident blocks the result differs from the default split (rel L2 %g / %g)",
                i, slots[k], tw_rel_l2(w.traces, b.traces, ntr), worst_snapshot(&w, &b));
          tg_run_free(&w);
        }
      }
#endif
      tg_run_free(&b);
    }
    tg_run_free(&a);
    tg_sched_free(&sc);
    tw_problem_destroy(pb);
  }

  end_to_end(kernel, 2);
  end_to_end(kernel, 8);

  /* Errors name what was wrong: an order the kernel lacks, a grid over the memory cap. */
  if (strcmp(kernel, "gpu-stepwise") == 0) {
    tg_case c;
    random_case(1, seed, &c);
    c.order = 10;
    tw_error err = {0};
    tw_problem *pb = NULL;
    REQUIRE(tg_problem(&c, 0.8, &pb, NULL, &err) == TW_OK, "problem: %s", err.msg);
    void *st = NULL;
    tw_status rc = tw_backend_find(kernel)->create(pb, &st, &err);
    CHECK(rc == TW_EUNSUPPORTED && strstr(err.msg, "order 10"), "order 10: got %d: %s", rc, err.msg);
    printf("order 10 refused: %s\n", err.msg);
    if (rc == TW_OK) tw_backend_find(kernel)->destroy(st);
    pb->device_memory = 1024;
    pb->order = 8;
    tw_stencil_setup(8, pb->g.d, &pb->st);
    rc = tw_backend_find(kernel)->create(pb, &st, &err);
    /* a cap below the smallest window (test_gpu_window runs the window itself) */
    CHECK(rc == TW_ERANGE && strstr(err.msg, "smallest cap that works"), "memory cap: got %d: %s", rc, err.msg);
    printf("memory cap below the smallest window refused: %s\n", err.msg);
    if (rc == TW_OK) tw_backend_find(kernel)->destroy(st);
    tw_problem_destroy(pb);
  }
  return tw_test_exit();
}
