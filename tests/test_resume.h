/* test_resume.h — the backends' checkpoint interface (tw_backend_ops save/load) against
 * uninterrupted runs, shared by test_checkpoint.c (cpu, cpu-diamond) and test_gpu_checkpoint.c
 * (gpu-stepwise, gpu-diamond): a run is cut at a random block end, its two levels go out through
 * save() and into a fresh backend of any kernel of the family (in core, or through the sliding
 * window under a device-memory cap) through load(), and the rest of the run must give traces and
 * snapshots bitwise equal (memcmp) to the run that never stopped. */
#ifndef TEST_RESUME_H
#define TEST_RESUME_H

#include "test_gpu_common.h"

/* A random case: orders 2..8 in turn, every third without absorbing layers (gpu-diamond runs its
 * own towers there at orders 2 and 4, the stepwise kernel elsewhere). Grids long in x, so that the
 * smallest window is well below the grid: 40..60 planes of up to 20 x 20 cells for the CPU; with
 * big, 160..220 planes of up to 60 x 60 (a GPU window's ring comes in 2 MiB pieces: at 110..150
 * planes the smallest stepwise ring of a 56 x 42 plane covered a 111-plane grid). */
static inline void tr_case(int i, uint64_t seed, int big, tg_case *c) {
  static const int orders[4] = {2, 4, 6, 8};
  tg_seed(seed * 2654435761u + (uint64_t)i);
  memset(c, 0, sizeof *c);
  c->seed = seed + 104729u * (uint64_t)i;
  c->order = orders[i % 4];
  for (int a = 0; a < 3; a++) {
    c->n[a] = big ? (a ? tg_int(40, 60) : tg_int(160, 220)) : (a ? tg_int(11, 20) : tg_int(40, 60));
    c->d[a] = 10.0;
  }
  c->absorb = i % 3 == 0 ? 0 : tg_int(3, 6);
  c->fs = tg_int(0, 1);
  c->hetero = i % 2;
  c->steps = tg_int(60, 120);
  c->interval = tg_int(1, 3);
  c->nsrc = tg_int(1, 3);
  c->nrec = tg_int(5, 20);
  c->src_interp = tg_int(0, 1) ? TW_INTERP_TRILINEAR : TW_INTERP_NEAREST;
  c->rec_interp = tg_int(0, 1) ? TW_INTERP_TRILINEAR : TW_INTERP_NEAREST;
}

/* The smallest device-memory cap a kernel runs this problem with (from its error message for a
 * 1-byte cap), 0 when it has none. */
static inline uint64_t tr_smallest_cap(tw_problem *pb, const char *kernel) {
  const tw_backend_ops *be = tw_backend_find(kernel);
  void *st = NULL;
  tw_error err = {0};
  pb->device_memory = 1;
  const tw_status rc = be->create(pb, &st, &err);
  pb->device_memory = 0;
  if (rc == TW_OK) be->destroy(st);
  const char *m = strstr(err.msg, "smallest cap that works is ");
  return m ? strtoull(m + strlen("smallest cap that works is "), NULL, 10) : 0;
}

static inline int tr_same(const tw_problem *pb, const tg_run *a, const tg_run *b) {
  return !memcmp(a->traces, b->traces, (size_t)pb->nrec * (size_t)pb->nsamples * sizeof(float)) &&
         a->snap_total == b->snap_total && !memcmp(a->snaps, b->snaps, a->snap_total * sizeof(float));
}

/* ncases cases; per case every ordered pair of kernels (a kernel with itself included), each side in
 * core and, when the kernel has one, through a window (its smallest cap; tower height 8 keeps the
 * window small). Returns the number of resumed runs compared. */
static inline int tr_matrix(const char *const *kernels, int nk, int ncases, int big, uint64_t seed) {
  int runs = 0, windowed = 0;
  for (int i = 0; i < ncases; i++) {
    tg_case c;
    tr_case(i, seed, big, &c);
    char what[256];
    tg_case_print(&c, what, sizeof what);
    tw_problem *pb = NULL;
    tw_error err = {0};
    REQUIRE(tg_problem(&c, 0.9, &pb, NULL, &err) == TW_OK, "case %d: %s", i, err.msg);
    pb->tower_height = 8;
    /* and on the CPU a tile of R = 4 cells (the GPU's default dts): cpu-diamond's own through a window, R = 16,
     * needs (8 + 1)·r + 32 planes for its smallest window, more than these grids have */
    if (!big) pb->dts = tw_default_dts(c.order);
    tg_sched sc;
    REQUIRE(tg_sched_make(pb, 20, c.seed, &sc), "schedule");
    tg_run ref;
    REQUIRE(tg_drive(pb, kernels[0], NULL, &sc, &ref, &err) == TW_OK, "case %d (%s): %s", i, what, err.msg);
    uint64_t cap[8] = {0};
    for (int k = 0; k < nk && k < 8; k++) cap[k] = tr_smallest_cap(pb, kernels[k]);
    for (int a = 0; a < nk; a++)
      for (int b = 0; b < nk; b++)
        for (int wa = 0; wa < 2; wa++)
          for (int wb = 0; wb < 2; wb++) {
            if ((wa && !cap[a]) || (wb && !cap[b])) continue;
            tg_resume rs = {tg_int(0, sc.nblocks - 2 > 0 ? sc.nblocks - 2 : 0), kernels[b], wb ? cap[b] : 0,
                            c.seed + 31u * (uint64_t)(a * 8 + b * 4 + wa * 2 + wb)};
            pb->device_memory = wa ? cap[a] : 0;
            tg_run out;
            const tw_status rc = tg_drive_resumed(pb, kernels[a], NULL, &sc, &rs, &out, &err);
            pb->device_memory = 0;
            CHECK(rc == TW_OK, "case %d (%s): %s%s -> %s%s: %s", i, what, kernels[a], wa ? " (window)" : "",
                  kernels[b], wb ? " (window)" : "", err.msg);
            if (rc) continue;
            runs++;
            windowed += out.windowed;
            CHECK(out.windowed == (wa || wb), "case %d (%s): %s%s -> %s%s: %s through a window", i, what, kernels[a],
                  wa ? " (window)" : "", kernels[b], wb ? " (window)" : "", out.windowed ? "went" : "did not go");
            CHECK(tr_same(pb, &ref, &out), "case %d (%s): %s%s cut after block %d of %d, resumed on %s%s: not bitwise "
                  "the uninterrupted %s run", i, what, kernels[a], wa ? " (window)" : "", rs.cut, sc.nblocks,
                  kernels[b], wb ? " (window)" : "", kernels[0]);
            tg_run_free(&out);
          }
    double peak = 0;
    for (long e = 0; e < pb->nrec * pb->nsamples; e++) peak = fabs(ref.traces[e]) > peak ? fabs(ref.traces[e]) : peak;
    CHECK(peak > 0, "case %d: all traces zero: the comparison tests nothing", i);
    printf("case %2d: %s: %d blocks, windows %s: resumed runs bitwise equal\n", i, what, sc.nblocks,
           cap[0] || cap[nk - 1] ? "too" : "none");
    tg_run_free(&ref);
    tg_sched_free(&sc);
    tw_problem_destroy(pb);
  }
  printf("%d resumed runs (%d through a window) compared bitwise\n", runs, windowed);
  CHECK(windowed > 0, "no run went through a window");
  return runs;
}

#endif
