/* test_gpu_diamond — gpu-diamond against gpu-stepwise and against the cpu reference, BITWISE (memcmp
 * of receiver taps and of snapshot boxes; every kernel computes the same bits, docs/design.md §1), over a
 * randomized matrix of problems built directly as tw_problem (no job file): orders 2/4/6/8,
 * DTS 1–3, tower heights from 1 to more than the grid's x length, odd grid sizes, Nz from 1 to
 * more than one warp (and tall columns beyond a block of one thread per z cell), sources and
 * receiver taps in corners, on edges and on the free surface (random S per step), trilinear
 * 8-cell groups, a full surface grid of taps, absorbing layers on and off, free surface on and
 * off, advance calls of random lengths (as the driver makes them end at snapshots) with a full
 * snapshot and a decimated box after each. Each case runs the three implementations of
 * gpu-diamond (TW_DIAMOND_MODE = persistent, stage, generic; at order 2 also the register tower
 * with two z cells per thread, TW_DIAMOND_ZPT = 2): all must be bitwise equal to gpu-stepwise.
 * Then focused cases: tall columns, and the tails of a wavefront in the absorbing layers (values
 * below 2^-100 down to the subnormals in the damped paths' cells).
 *
 * Environment: TW_TEST_SEED, TW_TEST_CASES (cases per order, default 12),
 * TW_DIAMOND_BITWISE_REF (the kernel the results must equal bitwise, default gpu-stepwise; the
 * host emulation of the kernel used in development sets it to cpu).
 *
 * `test_gpu_diamond --window` (ctest test_gpu_window) runs the sliding window instead: each case
 * under several solver.device_memory caps, from the smallest that works up, BITWISE equal to the
 * in-core run of the same implementation, every grid plane in and out once per block, and a cap
 * one byte below the smallest refused with the message that names it.
 *
 * `test_gpu_diamond --bench [GB]` times gpu-diamond (DTS, tower heights and z cells per thread, the
 * three modes, receivers on and off) against gpu-stepwise on one large grid and prints the table of
 * docs/performance.md; `--bench GB ORDER DTS HEIGHT [absorbing] [zN] [nzN] [taps]` times one
 * register-tower configuration (N z cells per thread; a column of N cells instead of 256), few
 * launches: what a profiler wants; `absorbing` puts layers on every face, `absorbxz` etc. on those
 * axes only, `taps` the 10^5 receivers of the table. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "tw_boundary.h"
#include "test_gpu_common.h"
#include "tw_test.h"
#include "window.h"


typedef struct {
  int order, n[3], absorb[3], fs;
  long steps;
  int interval, trilinear, surface_grid;
  int dts, height;
} spec;

/* Interesting cells: the 8 corners, edges and faces, the free surface (k = 0, 1), random ones;
 * with trilinear, 8-cell groups. */
static long pick_cells(const tw_grid *g, int trilinear, int (*out)[3], long room) {
  const int *N = g->N;
  long n = 0;
  for (int c = 0; c < 8 && n < room; c++, n++)
    for (int a = 0; a < 3; a++) out[n][a] = (c >> a) & 1 ? N[a] - 1 : 0;
  for (int e = 0; e < 8 && n < room; e++, n++)
    for (int a = 0; a < 3; a++) out[n][a] = tg_next() % 3 == 0 ? (tg_next() % 2 ? N[a] - 1 : 0) : tg_int(0, N[a] - 1);
  for (int e = 0; e < 6 && n < room; e++, n++)
    out[n][0] = tg_int(0, N[0] - 1), out[n][1] = tg_int(0, N[1] - 1), out[n][2] = e % 3 == 2 ? tg_int(0, N[2] - 1) : e % 3;
  for (int e = 0; trilinear && e < 3 && n + 8 <= room; e++) {
    int lo[3];
    for (int a = 0; a < 3; a++) lo[a] = N[a] > 1 ? tg_int(0, N[a] - 2) : 0;
    if (e == 0) lo[2] = 0; /* one group at the free surface */
    for (int c = 0; c < 8; c++, n++)
      for (int a = 0; a < 3; a++) out[n][a] = lo[a] + ((c >> a) & 1 && N[a] > 1);
  }
  for (long i = 0; i < n; i++) /* clamp (thin grids) */
    for (int a = 0; a < 3; a++) out[i][a] = out[i][a] >= N[a] ? N[a] - 1 : out[i][a];
  return tw_test_uniq_cells(out, n);
}

/* A problem as the solver builds it (tw_problem_destroy frees it): random c²dt² in [0.3, 0.95]
 * of the stable range, damping profiles, injection cells with random S, tap cells, one
 * receiver per tap (so traces are the raw tap values) plus trilinear receivers over groups. */
static tw_problem *make_problem(const spec *sp, int full_surface_taps) {
  tw_problem *pb = calloc(1, sizeof *pb);
  REQUIRE(pb, "alloc");
  const double d[3] = {10.0, 10.0, 10.0}, origin[3] = {0, 0, 0};
  tw_grid_setup(&pb->g, sp->n, d, origin, sp->absorb, sp->fs);
  pb->order = sp->order;
  REQUIRE(tw_stencil_setup(sp->order, d, &pb->st) == sp->order / 2, "stencil for order %d", sp->order);
  pb->dt = 1e-3;
  pb->steps = sp->steps;
  pb->free_surface = sp->fs;
  pb->dts = sp->dts;
  pb->tower_height = sp->height;
  const size_t cells = tw_grid_cells(&pb->g);
  const double c2max = 4.0 / (3.0 * tw_fd_lambda(sp->order) / (d[0] * d[0]));
  pb->c2dt2 = malloc(cells * sizeof(float));
  REQUIRE(pb->c2dt2, "alloc c2");
  for (size_t c = 0; c < cells; c++) pb->c2dt2[c] = (float)(c2max * (0.3 + 0.65 * tg_unif()));
  /* half the media repeat along x in runs (a plane equal to the next: the window copies its c²dt²
   * on the device, tw_gpu_window_in), the others nowhere */
  const size_t plane = (size_t)pb->g.N[1] * (size_t)pb->g.N[2];
  if (tg_next() % 2)
    for (int x = pb->g.N[0] - 2; x >= 0; x--)
      if (tg_next() % 4) memcpy(pb->c2dt2 + (size_t)x * plane, pb->c2dt2 + (size_t)(x + 1) * plane, plane * sizeof(float));
  for (int a = 0; a < 3; a++) {
    pb->a[a] = malloc((size_t)pb->g.N[a] * sizeof(float));
    tw_damping_profile(&pb->g, a, sqrt(c2max) / pb->dt, pb->dt, pb->a[a]);
  }
  const int *N = pb->g.N;
  const long room = 64 + (full_surface_taps ? 2L * N[0] * N[1] : 0);
  int(*buf)[3] = malloc((size_t)room * sizeof *buf);
  REQUIRE(buf, "alloc cells");
  pb->ninj = (int)pick_cells(&pb->g, sp->trilinear, buf, 64);
  pb->inj = malloc((size_t)pb->ninj * sizeof *pb->inj);
  memcpy(pb->inj, buf, (size_t)pb->ninj * sizeof *buf);
  pb->S = malloc((size_t)pb->ninj * (size_t)pb->steps * sizeof(float));
  for (long e = 0; e < pb->ninj * pb->steps; e++) pb->S[e] = (float)(2.0 * tg_unif() - 1.0);
  long nt = pick_cells(&pb->g, sp->trilinear, buf, 64);
  if (full_surface_taps) /* every column at the two top layers: a surface receiver grid */
    for (int i = 0; i < N[0]; i++)
      for (int j = 0; j < N[1]; j++)
        for (int k = 0; k < 2 && k < N[2]; k++) buf[nt][0] = i, buf[nt][1] = j, buf[nt][2] = k, nt++;
  pb->ntap = tw_test_uniq_cells(buf, nt);
  pb->tap = malloc((size_t)pb->ntap * sizeof *pb->tap);
  memcpy(pb->tap, buf, (size_t)pb->ntap * sizeof *buf);
  free(buf);
  pb->interval = sp->interval;
  pb->nsamples = pb->steps / pb->interval + 1;
  pb->nrec = pb->ntap;
  pb->rec_ntap = malloc((size_t)pb->nrec * sizeof *pb->rec_ntap);
  pb->rec_tap = malloc((size_t)pb->nrec * sizeof *pb->rec_tap);
  pb->rec_w = malloc((size_t)pb->nrec * sizeof *pb->rec_w);
  for (long r = 0; r < pb->nrec; r++) {
    pb->rec_ntap[r] = 1;
    pb->rec_tap[r][0] = r;
    pb->rec_w[r][0] = 1.0f;
  }
  return pb;
}

/* One run of a backend through random advance calls; taps[nsamples][ntap] and the snapshots. */
typedef struct {
  float *taps;
  float *snaps;
  size_t nsnap;
  double seconds;
  tw_run_report rep;  /* the backend's report after the run */
} run_out;

typedef struct {
  int nblocks;
  int full_every;  /* full snapshots after every block (0), or every k-th and the last (k) */
  long len[4096];
  int lo[4096][3], cnt[4096][3], dec[4096];
} schedule;

static void make_schedule(const tw_problem *pb, long nt, schedule *sc) {
  sc->nblocks = 0;
  sc->full_every = 0;
  for (long t = 0; t < pb->steps && sc->nblocks < 4096;) {
    /* like the driver: multiples of the kernel's block, or ending early at a "snapshot" */
    long n = tg_next() % 3 ? nt * tg_int(1, 3) : tg_int(1, (int)nt + 2);
    if (t + n > pb->steps || sc->nblocks == 4095) n = pb->steps - t;
    const int b = sc->nblocks++;
    sc->len[b] = n;
    t += n;
    sc->dec[b] = tg_int(1, 2);
    for (int a = 0; a < 3; a++) {
      const int Na = pb->g.N[a];
      sc->lo[b][a] = tg_int(0, Na - 1);
      sc->cnt[b][a] = tg_int(1, (Na - 1 - sc->lo[b][a]) / sc->dec[b] + 1);
    }
  }
}

static int full_snap(const schedule *sc, int b) {
  return sc->full_every == 0 || b % sc->full_every == 0 || b == sc->nblocks - 1;
}

/* The implementation knobs of gpu-diamond for one create: TW_DIAMOND_MODE = `mode` up to a "/zN"
 * suffix, which sets TW_DIAMOND_ZPT = N (z cells per thread of the register tower), a "/sy" or
 * "/sx" suffix, TW_DIAMOND_SWEEP = y or x (the towers across x, sweeping y, where the tower has
 * that kernel: order 2, dts 3, two z), a "/bN", TW_DIAMOND_BANDS = N (the tower of N band buffers
 * where it has one: order 2, dts 3, two z, N = 2 or 3), a "/cN", TW_DIAMOND_CL = N (the tower's z
 * column over a cluster of N CTAs where it has one: order 4, dts 2; 1: never), and a last "/kN",
 * TW_DIAMOND_BULK = N (1: the band by bulk copies where the tower has them, order 4, dts 2, whatever
 * the CTA's warps; 0: never); NULL: the defaults. */
/* the suffixes of a mode and their variables, taken off its end in this order */
static const struct {
  const char *suffix, *var;
} mode_knobs[] = {{"/k", "TW_DIAMOND_BULK"},
                  {"/c", "TW_DIAMOND_CL"},
                  {"/b", "TW_DIAMOND_BANDS"},
                  {"/s", "TW_DIAMOND_SWEEP"},
                  {"/z", "TW_DIAMOND_ZPT"}};
static void mode_env(const char *mode) {
  if (!mode) return;
  char m[32];
  snprintf(m, sizeof m, "%s", mode);
  for (size_t i = 0; i < sizeof mode_knobs / sizeof mode_knobs[0]; i++) {
    char *k = strstr(m, mode_knobs[i].suffix);
    if (k) {
      setenv(mode_knobs[i].var, k + 2, 1);
      *k = 0;
    }
  }
  if (*m) setenv("TW_DIAMOND_MODE", m, 1);
}
static void mode_env_clear(void) {
  unsetenv("TW_DIAMOND_MODE");
  for (size_t i = 0; i < sizeof mode_knobs / sizeof mode_knobs[0]; i++) unsetenv(mode_knobs[i].var);
}
/* be->create with the knobs of `mode` set for it (mode_env). */
static tw_status create_in_mode(const tw_backend_ops *be, const tw_problem *pb, const char *mode, void **st,
                                tw_error *err) {
  mode_env(mode);
  *st = NULL;
  const tw_status rc = be->create(pb, st, err);
  mode_env_clear();
  return rc;
}

static tw_status run_backend(const tw_problem *pb, const char *kernel, const char *mode, const schedule *sc,
                             run_out *out, tw_error *err) {
  memset(out, 0, sizeof *out);
  const tw_backend_ops *be = tw_backend_find(kernel);
  if (!be) return tw_error_set(err, TW_EUNSUPPORTED, "kernel %s is not in this build", kernel);
  void *st;
  tw_status rc = create_in_mode(be, pb, mode, &st, err);
  if (rc) return rc;
  const int *N = pb->g.N;
  const size_t cells = tw_grid_cells(&pb->g);
  size_t nsnap = 0;
  for (int b = 0; b < sc->nblocks; b++)
    nsnap += (full_snap(sc, b) ? cells : 0) + (size_t)sc->cnt[b][0] * sc->cnt[b][1] * sc->cnt[b][2];
  out->nsnap = nsnap;
  out->snaps = malloc(nsnap * sizeof(float));
  out->taps = malloc((size_t)(pb->ntap + 1) * (size_t)pb->nsamples * sizeof(float));
  if (!out->snaps || !out->taps) {
    be->destroy(st);
    return tw_error_set(err, TW_ENOMEM, "run buffers");
  }
  /* Poison: every tap of every sample must be written. */
  memset(out->taps, 0xFF, (size_t)(pb->ntap + 1) * (size_t)pb->nsamples * sizeof(float));
  memset(out->taps, 0, (size_t)pb->ntap * sizeof(float)); /* sample 0: p⁰ = 0 */
  size_t o = 0;
  long t = 0;
  for (int b = 0; b < sc->nblocks && !rc; b++) {
    long first, count;
    tw_samples_in(pb, t, sc->len[b], &first, &count);
    const double t0 = tw_wall_seconds();
    rc = be->advance(st, t, sc->len[b], out->taps + (size_t)first * (size_t)pb->ntap, err);
    out->seconds += tw_wall_seconds() - t0;
    t += sc->len[b];
    const int lo[3] = {0, 0, 0};
    if (full_snap(sc, b)) {
      if (!rc) rc = be->extract(st, lo, N, 1, out->snaps + o, err);
      o += cells;
    }
    if (!rc) rc = be->extract(st, sc->lo[b], sc->cnt[b], sc->dec[b], out->snaps + o, err);
    o += (size_t)sc->cnt[b][0] * sc->cnt[b][1] * sc->cnt[b][2];
  }
  if (be->report) be->report(st, &out->rep);
  be->destroy(st);
  return rc;
}

static void free_run(run_out *r) {
  free(r->taps), free(r->snaps);
  memset(r, 0, sizeof *r);
}

static int nonfinite(const float *a, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(a[i])) return 1;
  return 0;
}

static void random_spec(spec *sp, int order, int i) {
  memset(sp, 0, sizeof *sp);
  sp->order = order;
  for (int a = 0; a < 3; a++) sp->n[a] = 2 * tg_int(2, 12) + 1; /* odd, 5 .. 25 */
  if (i % 5 == 1) sp->n[2] = tg_int(33, 70);                     /* several warps in z */
  if (i % 7 == 3) sp->n[tg_int(0, 2)] = tg_int(1, 3);            /* very thin */
  if (i % 6 == 4) sp->n[0] = 2 * tg_int(15, 30) + 1;             /* long in x: many stages */
  const int ab = tg_next() % 3 ? tg_int(1, 5) : 0;
  for (int a = 0; a < 3; a++) sp->absorb[a] = tg_next() % 4 ? ab : tg_int(0, 3);
  sp->fs = (i / 2) % 2;
  sp->interval = tg_int(1, 3);
  sp->trilinear = tg_next() % 2;
  sp->surface_grid = i % 4 == 2;
  int Nmax = 0;
  for (int a = 0; a < 3; a++) Nmax = sp->n[a] + 2 * sp->absorb[a] > Nmax ? sp->n[a] + 2 * sp->absorb[a] : Nmax;
  sp->steps = Nmax + tg_int(4, 24);
  sp->dts = 1 + i % 3;
  const int r = order / 2;
  const int N0 = sp->n[0] + 2 * sp->absorb[0];
  const int heights[4] = {1, tg_int(2, 7), tg_int(8, 24), N0 / r + tg_int(1, 8)};
  sp->height = heights[(i / 3) % 4];
}

static int sweeps_y;     /* runs whose towers swept y (the report says so) */
static int clusters_run; /* runs of order 4's tower over a cluster of 2 CTAs */
static int bulk_run;     /* runs of order 4's tower with its band by bulk copies */
static int bands_run[2]; /* runs of the dts-3 tower of two z with 2 and with 3 band buffers asked and run */
static void matrix(const char *bitref, int ncases) {
  /* the three implementations forced, and the default (which may run the stepwise kernel where
   * DiamondTorre cannot win: the report says so); at order 2 also the other choice of z cells per
   * thread (the defaults: DTS 2 two, DTS 1 and 3 one; DTS 1 has no Z = 2 tower and then runs the
   * generic one), and the dts-3 tower of two z sweeping y and x, whatever the grid's shape (the
   * default takes y where that has more towers at a time: grids longer in x), each sweep with 2
   * and with 3 band buffers (the default takes 3 where the blocks leave the SM enough L1); at order
   * 4 the dts-2 tower's z column over a cluster of 2 CTAs (the default only where one CTA cannot
   * hold the column), persistent and per stage, and its band by bulk copies (the default only at 8
   * warps a CTA, Nz 225–256 or 449–512), on one CTA and over a cluster */
  static const char *modes[14] = {"persistent",       "stage",
                                  "generic",          NULL,
                                  "persistent/z2",    "stage/z1",
                                  "persistent/sy/b3", "stage/z2/sy/b2",
                                  "persistent/sx/b2", "persistent/sx/b3",
                                  "persistent/c2",    "stage/c2",
                                  "persistent/k1",    "stage/c2/k1"};
  const int have_ref = tw_backend_find(bitref) != NULL;
  if (!have_ref) printf("NOTE: %s is not in this build: compared with cpu only\n", bitref);
  int total = 0;
  for (int order = 2; order <= 8; order += 2)
    for (int i = 0; i < ncases; i++) {
      spec sp;
      random_spec(&sp, order, i);
      tw_problem *pb = make_problem(&sp, sp.surface_grid);
      char what[320];
      snprintf(what, sizeof what, "order %d dts %d height %d grid %dx%dx%d absorb %d/%d/%d fs %d interval %d tri %d "
               "taps %ld inj %d", order, sp.dts, sp.height, pb->g.N[0], pb->g.N[1], pb->g.N[2], sp.absorb[0],
               sp.absorb[1], sp.absorb[2], sp.fs, sp.interval, sp.trilinear, pb->ntap, pb->ninj);
      schedule *sc = malloc(sizeof *sc);
      REQUIRE(sc, "alloc");
      make_schedule(pb, sp.height, sc);
      tw_error err = {0};
      run_out cpu, ref, dia;
      REQUIRE(run_backend(pb, "cpu", NULL, sc, &cpu, &err) == TW_OK, "%s: cpu: %s", what, err.msg);
      const size_t ntaps = (size_t)pb->ntap * (size_t)pb->nsamples;
      int ref_ok = 0;
      if (have_ref) {
        tw_status rc = run_backend(pb, bitref, NULL, sc, &ref, &err);
        CHECK(rc == TW_OK, "%s: %s: %s", what, bitref, err.msg);
        ref_ok = rc == TW_OK;
      }
      for (int m = 0; m < (order <= 4 ? 14 : 4); m++) {
        if (m >= 4 && (order == 2) != (m < 10)) continue;
        const int dts = pb->dts;
        if (m >= 6 && m < 10) pb->dts = 3;  // (dts changes no bit: the sweep's tower is dts 3's)
        if (m >= 10) pb->dts = 2;           // (the cluster's tower is dts 2's)
        tw_status rc = run_backend(pb, "gpu-diamond", modes[m], sc, &dia, &err);
        pb->dts = dts;
        const char *ml = modes[m] ? modes[m] : "default";
        CHECK(rc == TW_OK, "%s [%s]: gpu-diamond: %s", what, ml, err.msg);
        if (rc) continue;
        /* the sweep asked for ran, where the dts-3 tower of two z did (it has both) */
        if (m >= 6 && strstr(dia.rep.note, "dts 3 (R = 3)") && strstr(dia.rep.note, "x 2 z,")) {
          CHECK((strstr(dia.rep.note, "sweeping y") != NULL) == (m < 8), "%s [%s]: ran '%s'", what, ml, dia.rep.note);
          const int nb = m == 6 || m == 9 ? 3 : 2;
          const int ran = strstr(dia.rep.note, nb == 3 ? "3 band buffers" : "2 band buffers") != NULL;
          CHECK(ran, "%s [%s]: ran '%s'", what, ml, dia.rep.note);
          bands_run[nb - 2] += ran;
        }
        if (m == 10 || m == 11 || m == 13) {
          const int ran = strstr(dia.rep.note, "x 2 CTAs (a cluster)") != NULL;
          CHECK(ran, "%s [%s]: ran '%s'", what, ml, dia.rep.note);
          clusters_run += ran;
        }
        if (m >= 10) { /* bulk copies where asked (k1), else the cp.async copies at these small Nz */
          const int ran = strstr(dia.rep.note, "band buffers by bulk copies") != NULL;
          CHECK(ran == (m >= 12), "%s [%s]: ran '%s'", what, ml, dia.rep.note);
          bulk_run += ran;
        }
        sweeps_y += strstr(dia.rep.note, "sweeping y") != NULL;
        CHECK(!nonfinite(dia.taps, ntaps), "%s [%s]: taps not all written (NaN poison left)", what, ml);
        if (ref_ok) {
          const long dt = tg_first_diff(dia.taps, ref.taps, ntaps), ds = tg_first_diff(dia.snaps, ref.snaps, dia.nsnap);
          CHECK(dt < 0, "%s [%s]: taps differ from %s first at sample %ld tap %ld (%d,%d,%d): %.9g vs %.9g", what,
                ml, bitref, dt / (pb->ntap ? pb->ntap : 1), dt % (pb->ntap ? pb->ntap : 1),
                dt >= 0 ? pb->tap[dt % pb->ntap][0] : 0, dt >= 0 ? pb->tap[dt % pb->ntap][1] : 0,
                dt >= 0 ? pb->tap[dt % pb->ntap][2] : 0, dt >= 0 ? dia.taps[dt] : 0.0, dt >= 0 ? ref.taps[dt] : 0.0);
          CHECK(ds < 0, "%s [%s]: snapshots differ from %s first at element %ld: %.9g vs %.9g", what, ml, bitref,
                ds, ds >= 0 ? dia.snaps[ds] : 0.0, ds >= 0 ? ref.snaps[ds] : 0.0);
        }
        const long ct = tg_first_diff(dia.taps, cpu.taps, ntaps), cs = tg_first_diff(dia.snaps, cpu.snaps, dia.nsnap);
        CHECK(ct < 0 && cs < 0, "%s [%s]: not bitwise equal to cpu: taps first at %ld, snapshots at %ld (rel L2 %.3g, "
              "%.3g)", what, ml, ct, cs, tw_rel_l2(dia.taps, cpu.taps, ntaps), tw_rel_l2(dia.snaps, cpu.snaps, dia.nsnap));
        if (m == 0) printf("%-150s cpu: %s\n", what, ct < 0 && cs < 0 ? "bitwise equal" : "DIFFERENT");
        free_run(&dia);
      }
      /* the case means something only if the waves reached most of the grid: the last full
       * snapshot (a box follows it) */
      const size_t cells = tw_grid_cells(&pb->g);
      const size_t last_box = (size_t)sc->cnt[sc->nblocks - 1][0] * sc->cnt[sc->nblocks - 1][1] * sc->cnt[sc->nblocks - 1][2];
      const float *last = cpu.snaps + cpu.nsnap - last_box - cells;
      size_t nonzero = 0;
      for (size_t c = 0; c < cells; c++) nonzero += last[c] != 0.0f;
      CHECK(nonzero * 2 >= cells, "%s: only %zu of %zu cells reached by the waves", what, nonzero, cells);
      if (have_ref) free_run(&ref);
      free_run(&cpu);
      free(sc);
      tw_problem_destroy(pb);
      total++;
    }
  printf(
      "%d cases (%d runs with the towers sweeping y; %d with 2 band buffers, %d with 3; %d over a cluster; %d with "
      "bulk copies)\n",
      total, sweeps_y, bands_run[0], bands_run[1], clusters_run, bulk_run);
  /* the forced sweeps and band buffers ran somewhere (the report's format, the random specs) */
  CHECK(sweeps_y > 0 && bands_run[0] > 0 && bands_run[1] > 0 && clusters_run > 0 && bulk_run > 0,
        "%d runs swept y, %d ran 2 band buffers, %d ran 3, %d over a cluster, %d bulk copies", sweeps_y, bands_run[0],
        bands_run[1], clusters_run, bulk_run);
}

/* One problem through gpu-diamond (`mode`; NULL: the defaults) against cpu and `bitref`, bitwise;
 * `want`: a piece of the report that must appear. Returns the number of
 * tiny values (0 < |p| < 2^-100) the cpu run's full snapshots hold inside the absorbing layers. */
static long focused_case(const char *bitref, const char *what, const tw_problem *pb, const schedule *sc,
                         const char *mode, const char *want) {
  tw_error err = {0};
  run_out a, b;
  long tiny = 0;
  REQUIRE(run_backend(pb, "cpu", NULL, sc, &a, &err) == TW_OK, "%s: cpu: %s", what, err.msg);
  const int *N = pb->g.N;
  const size_t cells = tw_grid_cells(&pb->g);
  size_t o = 0;
  for (int bl = 0; bl < sc->nblocks; bl++) {
    if (full_snap(sc, bl)) {
      for (size_t c = 0; c < cells; c++) {
        const int i = (int)(c / ((size_t)N[1] * N[2])), j = (int)(c / N[2] % N[1]), k = (int)(c % N[2]);
        const int damped = pb->a[0][i] != 0.0f || pb->a[1][j] != 0.0f || pb->a[2][k] != 0.0f;
        tiny += damped && a.snaps[o + c] != 0.0f && fabsf(a.snaps[o + c]) < 0x1p-100f;
      }
      o += cells;
    }
    o += (size_t)sc->cnt[bl][0] * sc->cnt[bl][1] * sc->cnt[bl][2];
  }
  tw_status rc = run_backend(pb, "gpu-diamond", mode, sc, &b, &err);
  CHECK(rc == TW_OK, "%s: gpu-diamond: %s", what, err.msg);
  if (!rc) {
    const size_t ntaps = (size_t)pb->ntap * (size_t)pb->nsamples;
    const double et = tw_rel_l2(b.taps, a.taps, ntaps), es = tw_rel_l2(b.snaps, a.snaps, b.nsnap);
    CHECK(tg_first_diff(b.taps, a.taps, ntaps) < 0 && tg_first_diff(b.snaps, a.snaps, b.nsnap) < 0,
          "%s: not bitwise equal to cpu: taps rel L2 %.3g, snapshots %.3g", what, et, es);
    CHECK(!want || strstr(b.rep.note, want), "%s: ran '%s', expected '%s'", what, b.rep.note, want);
    if (tw_backend_find(bitref)) {
      run_out c;
      if (run_backend(pb, bitref, NULL, sc, &c, &err) == TW_OK) {
        CHECK(tg_first_diff(b.taps, c.taps, ntaps) < 0 && tg_first_diff(b.snaps, c.snaps, b.nsnap) < 0,
              "%s: not bitwise equal to %s", what, bitref);
        free_run(&c);
      }
    }
    printf("%s: cpu rel L2 taps %.2e snapshots %.2e; %s\n", what, et, es, b.rep.note);
    free_run(&b);
  }
  free_run(&a);
  return tiny;
}

/* A tall column: Nz above one block of one thread per z cell. Order 4 (Nz 1100): no register
 * tower holds it (the stepwise kernel by default); Nz 500 and 300: the dts-2 tower over a cluster of
 * 2 CTAs (256 and 160 threads each: 8 and 5 warps, so the warps away from the seam wait for the
 * cluster's barrier after their update; at 8 its band by bulk copies, as at Nz 240 on one CTA,
 * unless "/k0" asks for the cp.async copies); order 2: the register tower with two z cells per thread
 * (Nz 500: DTS 3; Nz 700: DTS 2), which the report must name (`want`), run persistent or as `mode`. */
static void tall_column_in(const char *bitref, int order, int nz, int dts, const char *mode, const char *want) {
  spec sp;
  memset(&sp, 0, sizeof sp);
  sp.order = order, sp.n[0] = 5, sp.n[1] = 4, sp.n[2] = nz, sp.fs = 1, sp.interval = 2, sp.trilinear = 1;
  sp.absorb[2] = 3, sp.steps = 40, sp.dts = dts, sp.height = 7;
  tw_problem *pb = make_problem(&sp, 0);
  schedule *sc = malloc(sizeof *sc);
  REQUIRE(sc, "alloc");
  make_schedule(pb, sp.height, sc);
  char what[64];
  snprintf(what, sizeof what, "tall column (order %d, Nz %d, dts %d%s%s)", order, nz, dts, mode ? ", " : "",
           mode ? mode : "");
  focused_case(bitref, what, pb, sc, mode ? mode : want ? "persistent" : NULL, want);
  free(sc);
  tw_problem_destroy(pb);
}
static void tall_column(const char *bitref, int order, int nz, int dts, const char *want) {
  tall_column_in(bitref, order, nz, dts, NULL, want);
}

/* The tails ahead of a wavefront: one source under the free surface, waves run into the
 * absorbing layers for ~100 steps, so that the damped updates see numerators far below 2^-100,
 * down to the subnormals (where a division, or an emulated one, would take other paths). The
 * case counts: the cpu run must show such values inside the layers. */
static void tails_case(const char *bitref, int order, int dts, const char *mode, const char *want) {
  spec sp;
  memset(&sp, 0, sizeof sp);
  sp.order = order, sp.n[0] = 15, sp.n[1] = 15, sp.n[2] = 60, sp.fs = 1, sp.interval = 3;
  sp.absorb[0] = sp.absorb[1] = sp.absorb[2] = 6, sp.steps = 110, sp.dts = dts, sp.height = 16;
  tw_problem *pb = make_problem(&sp, 0);
  pb->ninj = 1; /* one source (S of row 0), near the top in the middle */
  pb->inj[0][0] = pb->g.N[0] / 2, pb->inj[0][1] = pb->g.N[1] / 2, pb->inj[0][2] = 2;
  schedule *sc = malloc(sizeof *sc);
  REQUIRE(sc, "alloc");
  /* advance calls of 5 steps, a full snapshot after each: the tails pass through a layer in more
   * steps than that, so the count sees them whatever the random problem */
  sc->nblocks = 0, sc->full_every = 0;
  for (long t = 0; t < sp.steps; t += 5) {
    const int b = sc->nblocks++;
    sc->len[b] = sp.steps - t < 5 ? sp.steps - t : 5;
    sc->dec[b] = 1;
    for (int a = 0; a < 3; a++) sc->lo[b][a] = 0, sc->cnt[b][a] = 1;
  }
  char what[96];
  snprintf(what, sizeof what, "tails (order %d, dts %d, %s)", order, dts, mode ? mode : "default");
  const long tiny = focused_case(bitref, what, pb, sc, mode, want);
  CHECK(tiny > 0, "%s: no value below 2^-100 inside the layers: the case tests nothing", what);
  printf("%s: %ld tiny values in the layers' snapshots\n", what, tiny);
  free(sc);
  tw_problem_destroy(pb);
}

/* ------------------------------------------------------------------ the sliding window (issue 6) */

/* The smallest solver.device_memory that works, from the message of a create with a 1-byte cap. */
static uint64_t smallest_cap(tw_problem *pb, const char *kernel) {
  const tw_backend_ops *be = tw_backend_find(kernel);
  pb->device_memory = 1;
  void *st = NULL;
  tw_error err = {0};
  const tw_status rc = be->create(pb, &st, &err);
  pb->device_memory = 0;
  if (rc == TW_OK) be->destroy(st);
  const char *m = strstr(err.msg, "smallest cap that works is ");
  CHECK(rc == TW_ERANGE && m, "%s with a 1-byte cap: status %d, message '%s'", kernel, (int)rc, err.msg);
  return m ? strtoull(m + strlen("smallest cap that works is "), NULL, 10) : 0;
}

/* The largest solver.device_memory that still slides a window (0: none found), by bisection on
 * creates (the report of a created backend gives its ring). Its ring can hold more than a block's
 * span — the case where the next block's planes must not take the slots of higher planes (whose
 * in-copies would not wait for their own write-back: gpu_window.cu, tw_gpu_window_run_plan). */
static uint64_t largest_windowed_cap(tw_problem *pb, const char *kernel, const char *mode, uint64_t lo) {
  const tw_backend_ops *be = tw_backend_find(kernel);
  uint64_t hi = 16 * (uint64_t)(pb->g.N[0] + 128) * (uint64_t)(pb->g.N[1] + 128) * (uint64_t)(pb->g.N[2] + 128);
  uint64_t found = 0;
  while (lo < hi && hi - lo > 1024) {
    const uint64_t mid = lo + (hi - lo) / 2;
    pb->device_memory = mid;
    void *st = NULL;
    tw_error err = {0};
    tw_run_report rep;
    memset(&rep, 0, sizeof rep);
    if (create_in_mode(be, pb, mode, &st, &err) != TW_OK) {
      lo = mid;
      continue;
    }
    if (be->report) be->report(st, &rep);
    be->destroy(st);
    if (rep.window_planes > 0) found = mid, lo = mid;
    else hi = mid;
  }
  pb->device_memory = 0;
  return found;
}

static long blocks_of(const schedule *sc, long nt) {
  long b = 0;
  for (int i = 0; i < sc->nblocks; i++) b += (sc->len[i] + nt - 1) / nt;
  return b;
}

/* One case: the in-core run of `kernel` (gpu-diamond: in implementation `mode`, or NULL for its
 * default, which may be the stepwise kernel's slabs), then capped runs from the smallest cap up. */
static int window_case(const spec *sp, const char *kernel, const char *mode) {
  tw_problem *pb = make_problem(sp, sp->surface_grid);
  char what[320];
  snprintf(what, sizeof what, "window %s [%s] order %d dts %d height %d grid %dx%dx%d absorb %d/%d/%d fs %d tri %d taps %ld",
           kernel, mode ? mode : "default", sp->order, sp->dts, sp->height, pb->g.N[0], pb->g.N[1], pb->g.N[2], sp->absorb[0],
           sp->absorb[1], sp->absorb[2], sp->fs, sp->trilinear, pb->ntap);
  schedule *sc = malloc(sizeof *sc);
  REQUIRE(sc, "alloc");
  make_schedule(pb, sp->height, sc);
  sc->full_every = 5;
  tw_error err = {0};
  run_out ref, win;
  int runs = 0;
  mode_env(mode);
  const uint64_t smallest = smallest_cap(pb, kernel);
  mode_env_clear();
  REQUIRE(run_backend(pb, kernel, mode, sc, &ref, &err) == TW_OK, "%s: in-core: %s", what, err.msg);
  if (mode && strstr(mode, "/c2")) CHECK(strstr(ref.rep.note, "x 2 CTAs"), "%s: ran '%s'", what, ref.rep.note);
  if (mode && strstr(mode, "/k1")) CHECK(strstr(ref.rep.note, "by bulk copies"), "%s: ran '%s'", what, ref.rep.note);
  const size_t ntaps = (size_t)pb->ntap * (size_t)pb->nsamples;
  unsigned char *same = malloc((size_t)pb->g.N[0]);
  REQUIRE(same, "alloc");
  const long repeats = tw_window_c2_repeats(pb->c2dt2, pb->g.N[0], (size_t)pb->g.N[1] * pb->g.N[2], same);
  free(same);
  const uint64_t largest = smallest ? largest_windowed_cap(pb, kernel, mode, 2 * smallest) : 0;
  const uint64_t caps[5] = {smallest, smallest + smallest / 3, 2 * smallest, smallest - 1, largest};
  /* The copies go in chunks of ~8 MB (gpu_window.cu: CHUNK_BYTES), more than a whole group of these
   * small planes: the first cap runs with chunks of one plane (every in-chunk after its own slots'
   * release), the second with chunks of 2–5 planes, the third with the default. */
  char chunk[2][32];
  snprintf(chunk[0], sizeof chunk[0], "1");
  snprintf(chunk[1], sizeof chunk[1], "%.0f", 4.0 * pb->g.N[1] * pb->g.N[2] * tg_int(2, 5));
  for (int c = 0; c < 5 && smallest; c++) {
    if (c == 4 && !largest) continue;
    pb->device_memory = caps[c];
    if (c < 2) setenv("TW_WINDOW_CHUNK_BYTES", chunk[c], 1);
    tw_status rc = run_backend(pb, kernel, mode, sc, &win, &err);
    unsetenv("TW_WINDOW_CHUNK_BYTES");
    if (c == 3) {
      CHECK(rc == TW_ERANGE && strstr(err.msg, "smallest cap that works"), "%s: cap %llu (one below the smallest) "
            "gave status %d: %s", what, (unsigned long long)caps[c], (int)rc, err.msg);
      if (!rc) free_run(&win);
      continue;
    }
    CHECK(rc == TW_OK, "%s: cap %llu: %s", what, (unsigned long long)caps[c], err.msg);
    if (rc) continue;
    runs++;
    const long dt = tg_first_diff(win.taps, ref.taps, ntaps), ds = tg_first_diff(win.snaps, ref.snaps, win.nsnap);
    CHECK(dt < 0 && ds < 0, "%s: cap %llu (%d planes, copy chunks of %s B): not bitwise equal to the in-core run: "
          "taps first at %ld, snapshots first at %ld", what, (unsigned long long)caps[c], win.rep.window_planes,
          c < 2 ? chunk[c] : "~8e6", dt, ds);
    /* every grid plane in and out once per block (the stepwise slabs: blocks of tower_height too);
     * c²dt² of every plane that repeats the next copied on the device, each block — except under
     * persistent towers, which take every plane over the link (gpu_diamond.cu: window_setup) */
    const int persistent = strstr(win.rep.note, "register tower, persistent") != NULL;
    const long want = blocks_of(sc, sp->height) * pb->g.N[0];
    const long reused = persistent ? 0 : blocks_of(sc, sp->height) * repeats;
    const double plane = (double)pb->g.N[1] * pb->g.N[2];
    if (win.rep.window_planes) {
      CHECK(win.rep.planes_in == want && win.rep.planes_out == want && win.rep.c2_planes_reused == reused &&
            win.rep.bytes_in == plane * (12.0 * want - 4.0 * reused) && win.rep.bytes_out == 8.0 * plane * want,
            "%s: cap %llu: %ld planes in (c² of %ld from the ring), %ld out (%g, %g B), want %ld (%ld)", what,
            (unsigned long long)caps[c], win.rep.planes_in, win.rep.c2_planes_reused, win.rep.planes_out,
            win.rep.bytes_in, win.rep.bytes_out, want, reused);
    }
    if (c == 4) {
      CHECK(win.rep.window_planes > 0, "%s: the largest windowed cap %llu ran without a window", what,
            (unsigned long long)largest);
      printf("  largest windowed cap %llu B: %d planes for %d grid planes\n", (unsigned long long)largest,
             win.rep.window_planes, pb->g.N[0]);
    }
    if (c == 0) {
      CHECK(win.rep.window_planes > 0, "%s: the smallest cap ran without a window", what);
      printf("%-140s smallest cap %llu B: %d planes, c² repeats in %ld of %d; %s\n", what,
             (unsigned long long)smallest, win.rep.window_planes, repeats, pb->g.N[0], win.rep.note);
    }
    free_run(&win);
  }
  pb->device_memory = 0;
  free_run(&ref);
  free(sc);
  tw_problem_destroy(pb);
  return runs;
}

/* A job without solver.tower_height under a cap that holds the ring of height 8 but not that of
 * the default height: the kernel takes the tallest height that fits (tw_window_fit_height), says
 * so in its report, and computes the in-core run's bits. */
static int window_lowered(int order, const char *kernel, const char *mode) {
  spec sp;
  random_spec(&sp, order, 1);
  sp.n[0] = 600, sp.n[1] = 480, sp.n[2] = 40; /* planes of ~230 KB: a ring of many 2 MiB granules */
  sp.steps = 40, sp.height = 8, sp.dts = order == 2 ? 3 : 1;
  tw_problem *pb = make_problem(&sp, 0);
  char what[200];
  snprintf(what, sizeof what, "lowered height: %s [%s] order %d grid %dx%dx%d", kernel, mode ? mode : "default", order,
           pb->g.N[0], pb->g.N[1], pb->g.N[2]);
  schedule *sc = malloc(sizeof *sc);
  REQUIRE(sc, "alloc");
  make_schedule(pb, 20, sc);
  mode_env(mode);
  const uint64_t cap = smallest_cap(pb, kernel); /* for tower_height 8 */
  mode_env_clear();
  pb->tower_height = 0;
  tw_error err = {0};
  run_out ref, win;
  REQUIRE(run_backend(pb, kernel, mode, sc, &ref, &err) == TW_OK, "%s: in-core: %s", what, err.msg);
  pb->device_memory = cap;
  const tw_status rc = run_backend(pb, kernel, mode, sc, &win, &err);
  CHECK(rc == TW_OK, "%s: cap %llu: %s", what, (unsigned long long)cap, err.msg);
  int ok = 0;
  if (rc == TW_OK) {
    const size_t ntaps = (size_t)pb->ntap * (size_t)pb->nsamples;
    ok = tg_first_diff(win.taps, ref.taps, ntaps) < 0 && tg_first_diff(win.snaps, ref.snaps, win.nsnap) < 0;
    CHECK(ok, "%s: cap %llu: not bitwise equal to the in-core run", what, (unsigned long long)cap);
    CHECK(win.rep.window_planes > 0 && strstr(win.rep.note, "lowered to fit"), "%s: cap %llu: %d planes, report '%s'",
          what, (unsigned long long)cap, win.rep.window_planes, win.rep.note);
    printf("%s: cap %llu B: %s\n", what, (unsigned long long)cap, win.rep.note);
    free_run(&win);
  }
  pb->device_memory = 0;
  free_run(&ref);
  free(sc);
  tw_problem_destroy(pb);
  return ok;
}

static void window_matrix(int ncases) {
  /* gpu-diamond's three tower implementations forced, its default (orders 6 and 8 and grids with
   * z layers: the stepwise kernel's slabs), and gpu-stepwise itself */
  static const char *modes[5] = {"persistent", "stage", "generic", NULL, NULL};
  static const char *modes2[5] = {"persistent", "persistent/z2", "stage", "stage/z1", NULL}; /* order 2 */
  int cases = 0, runs = 0;
  for (int order = 2; order <= 8; order += 2)
    for (int i = 0; i < ncases; i++) {
      spec sp;
      random_spec(&sp, order, i);
      /* Planes of 64–128 KB: a ring is a whole number of 2 MB granules (gpu_window.cuh), so with
       * smaller planes the smallest ring would hold the whole grid and never wrap. Long in x: the
       * window slides over several ring lengths. */
      sp.n[0] = tg_int(150, 300);
      sp.n[1] = tg_int(470, 490);
      sp.n[2] = tg_next() % 2 ? tg_int(1, 32) : tg_int(33, 64);
      sp.steps = tg_int(10, 60);
      const int heights[4] = {1, tg_int(2, 9), tg_int(10, 30), tg_int(2, 30)};
      sp.height = heights[i % 4];
      sp.dts = order == 2 ? tg_int(1, 3) : order == 4 ? tg_int(1, 2) : 1;
      if (i % 5 == 3) sp.absorb[2] = tg_int(1, 4);
      runs += window_case(&sp, i % 5 == 4 ? "gpu-stepwise" : "gpu-diamond", (order == 2 ? modes2 : modes)[i % 5]);
      cases++;
    }
  /* Persistent window groups go on two streams (gpu_diamond.cu: win_group_launch): with one y column
   * of towers (N1 = 1, kmax = 0) every other stage has none, so with one stage per launch
   * (TW_DIAMOND_STAGES=1) every other group launches no blocks and the next group must not wait for
   * them; and the one-stream path (TW_DIAMOND_STREAMS=1) stays checked. */
  for (int j = 0; j < 2; j++) {
    spec sp;
    random_spec(&sp, 2, 100 + j);
    if (j == 0) { /* one y cell: planes of 1–2 KB, so many of them that the ring (2 MB granules) wraps */
      sp.absorb[1] = 0;
      sp.n[0] = tg_int(4000, 6000), sp.n[1] = 1, sp.n[2] = tg_int(300, 480);
      sp.steps = tg_int(20, 40);
      sp.height = tg_int(10, 30);
    } else {
      sp.n[0] = tg_int(200, 300), sp.n[1] = tg_int(470, 490), sp.n[2] = tg_int(33, 64);
      sp.steps = tg_int(20, 60);
      sp.height = tg_int(2, 30);
    }
    sp.dts = tg_int(1, 3);
    setenv(j == 0 ? "TW_DIAMOND_STAGES" : "TW_DIAMOND_STREAMS", "1", 1);
    runs += window_case(&sp, "gpu-diamond", "persistent");
    unsetenv(j == 0 ? "TW_DIAMOND_STAGES" : "TW_DIAMOND_STREAMS");
    cases++;
  }
  /* order 4's tower over a cluster of 2 CTAs (dts 2), persistent (its window groups on two streams)
   * and per stage; with its band by bulk copies, over a cluster and on one CTA */
  static const char *o4modes[4] = {"persistent/c2", "stage/c2", "persistent/c2/k1", "persistent/k1"};
  for (int j = 0; j < 4; j++) {
    spec sp;
    random_spec(&sp, 4, 110 + j);
    sp.n[0] = tg_int(150, 300), sp.n[1] = tg_int(470, 490), sp.n[2] = tg_int(33, 100);
    sp.steps = tg_int(10, 60);
    sp.height = tg_int(2, 30);
    sp.dts = 2;
    runs += window_case(&sp, "gpu-diamond", o4modes[j]);
    cases++;
  }
  const int lowered = window_lowered(2, "gpu-diamond", "persistent") + window_lowered(8, "gpu-stepwise", NULL) +
                      window_lowered(8, "gpu-diamond", NULL);
  printf("window: %d cases, %d capped runs bitwise equal to in-core; %d of 3 runs with a lowered height\n", cases,
         runs, lowered);
}

/* ------------------------------------------------------------------ timing (docs/performance.md) */

/* Gcell/s of one configuration: a warm-up advance, then `reps` advances of `steps`. */
static double time_kernel(const tw_problem *pb, const char *kernel, const char *mode, long steps, char *note,
                          size_t notelen) {
  const tw_backend_ops *be = tw_backend_find(kernel);
  if (!be) return 0;
  void *st;
  tw_error err = {0};
  tw_status rc = create_in_mode(be, pb, mode, &st, &err);
  if (rc) {
    printf("  %s: %s\n", kernel, err.msg);
    return 0;
  }
  float *taps = malloc((size_t)(pb->ntap + 1) * (size_t)(steps / pb->interval + 2) * sizeof(float));
  const long warm = be->block_steps(st);
  double best = 1e30;
  long t = 0;
  if (be->advance(st, t, warm, taps, &err) != TW_OK) printf("  %s: %s\n", kernel, err.msg);
  t += warm;
  for (int rep = 0; rep < 3; rep++) {
    const double t0 = tw_wall_seconds();
    rc = be->advance(st, t, steps, taps, &err);
    const double dt = tw_wall_seconds() - t0;
    t += steps;
    if (rc) {
      printf("  %s: %s\n", kernel, err.msg);
      break;
    }
    if (dt < best) best = dt;
  }
  tw_run_report rep;
  memset(&rep, 0, sizeof rep);
  if (be->report) be->report(st, &rep);
  snprintf(note, notelen, "%s", rep.note);
  be->destroy(st);
  free(taps);
  return rc ? 0 : (double)tw_grid_cells(&pb->g) * (double)steps / best / 1e9;
}

/* The bench problem: Ny large (towers per stage ≈ Ny / 2R ≥ 2 per SM at R = 4), Nz = 256 (one
 * block of 256 threads per tower), Nx from the size: 12 B per cell (two levels and c²dt²); random
 * c²dt² in the stable range, no absorbing layers, no receivers. */
static tw_problem *bench_problem(double gb, int order, int nz, double *c2max) {
  const int ny = 2176;
  int nx = (int)(gb * 1e9 / 12.0 / ((double)ny * nz));
  if (nx < 400) nx = 400;
  const int n[3] = {nx, ny, nz}, none[3] = {0, 0, 0};
  const double d[3] = {10.0, 10.0, 10.0}, origin[3] = {0, 0, 0};
  tw_problem *pb = calloc(1, sizeof *pb);
  tw_grid_setup(&pb->g, n, d, origin, none, 0);
  pb->order = order;
  tw_stencil_setup(order, d, &pb->st);
  pb->dt = 1e-3;
  pb->steps = 100000;
  const size_t cells = tw_grid_cells(&pb->g);
  *c2max = 4.0 / (3.0 * tw_fd_lambda(order) / 100.0);
  pb->c2dt2 = malloc(cells * sizeof(float));
  for (size_t c = 0; c < cells; c++) pb->c2dt2[c] = (float)(*c2max * (0.3 + 0.65 * (double)((c * 2654435761u) % 1000) / 1000.0));
  for (int a = 0; a < 3; a++) pb->a[a] = calloc((size_t)pb->g.N[a], sizeof(float));
  pb->interval = 2;
  pb->nsamples = pb->steps / 2 + 1;
  return pb;
}

/* Absorbing layers of 20 cells on the faces of the axes in `axes` (bit a: axis a), and a free
 * surface on top, as in a real job (axes = 7). */
static void bench_absorbing(tw_problem *pb, double c2max, int axes) {
  const int ab[3] = {20, 20, 20}, n2[3] = {pb->g.N[0] - 40, pb->g.N[1] - 40, pb->g.N[2] - 20};
  tw_grid g2;
  tw_grid_setup(&g2, n2, pb->g.d, pb->g.origin, ab, 1);
  for (int a = 0; a < 3; a++)
    if (axes >> a & 1) tw_damping_profile(&g2, a, sqrt(c2max) / pb->dt, pb->dt, pb->a[a]);
  pb->free_surface = 1;
}

/* Receivers at scale (#5: < 5 % of the run): a 400 x 250 surface grid, 10^5 taps at z = 2, sorted
 * and unique (nx ≥ 400 and ny ≥ 2000 here); the interval is the problem's (2). */
static void bench_taps(tw_problem *pb) {
  const int nx = pb->g.N[0];
  pb->ntap = 400L * 250L;
  pb->tap = malloc((size_t)pb->ntap * sizeof *pb->tap);
  for (long t = 0; t < pb->ntap; t++) pb->tap[t][0] = (int)(t / 250) * nx / 400, pb->tap[t][1] = (int)(t % 250) * 8, pb->tap[t][2] = 2;
}

/* One register-tower configuration and gpu-stepwise (what a profiler run wants: few launches);
 * absorb: the axes with layers (bench_absorbing), z: z cells per thread (0: the backend's choice),
 * nz: the column. */
static void bench_one(double gb, int order, int dts, int h, int absorb, int z, int nz, int taps) {
  double c2max;
  tw_problem *pb = bench_problem(gb, order, nz, &c2max);
  if (absorb) bench_absorbing(pb, c2max, absorb);
  if (taps) bench_taps(pb);
  char note[512], mode[32];
  printf("bench grid %d x %d x %d\n", pb->g.N[0], pb->g.N[1], pb->g.N[2]);
  const double sw = time_kernel(pb, "gpu-stepwise", NULL, 16, note, sizeof note);
  pb->dts = dts, pb->tower_height = h;
  if (z) snprintf(mode, sizeof mode, "persistent/z%d", z);
  else snprintf(mode, sizeof mode, "persistent");
  const double g = time_kernel(pb, "gpu-diamond", mode, 2L * h, note, sizeof note);
  printf("order %d  gpu-stepwise %7.1f  register tower dts %d h %3d %7.1f Gcell/s  %5.2fx   %s\n", order, sw, dts, h, g,
         sw > 0 ? g / sw : 0, note);
  tw_problem_destroy(pb);
}

static void bench(double gb) {
  for (int order = 2; order <= 8; order += 2) {
    double c2max;
    tw_problem *pb = bench_problem(gb, order, 256, &c2max);
    const int nx = pb->g.N[0], ny = pb->g.N[1], nz = pb->g.N[2];
    if (order == 2)
      printf("bench grid %d x %d x %d = %.0f M cells (%.2f GB of fields)\n", nx, ny, nz, (double)nx * ny * nz / 1e6,
             12.0 * nx * ny * nz / 1e9);
    char note[512];
    const double sw = time_kernel(pb, "gpu-stepwise", NULL, 16, note, sizeof note);
    printf("order %d  gpu-stepwise                 %7.1f Gcell/s   %s\n", order, sw, note);
    /* the register tower over DTS, tower height and z cells per thread (forced: the default may
     * hand a tower that cannot win to the stepwise kernel); two z cells per thread exist at
     * order 2, DTS 2 and 3 */
    const int r = order / 2;
    const int ndts = r == 1 ? 3 : r == 2 ? 2 : r == 3 ? 1 : 0; /* order 8: no register tower fits Nz = 256 */
    const int heights[3] = {32, 64, 128};
    for (int z = 1; z <= 2; z++)
      for (int di = 0; di < (z == 1 ? ndts : r == 1 ? 2 : 0); di++)
        for (int hi = 0; hi < 3; hi++) {
          pb->dts = r == 1 ? 2 + di : 1 + di;
          pb->tower_height = heights[hi];
          const double g = time_kernel(pb, "gpu-diamond", z == 1 ? "persistent/z1" : "persistent/z2", 2L * heights[hi],
                                       note, sizeof note);
          printf("order %d  register tower dts %d h %3d %7.1f Gcell/s  %5.2fx   %s\n", order, pb->dts, pb->tower_height, g,
                 sw > 0 ? g / sw : 0, note);
        }
    /* the defaults per order: the implementations, and what the backend picks by itself */
    pb->dts = 0, pb->tower_height = 0;
    static const char *modes[4] = {"persistent", "stage", "generic", NULL};
    double base = 0;
    for (int m = 0; m < 4; m++) {
      const double g = time_kernel(pb, "gpu-diamond", modes[m], m == 2 ? 32 : 256, note, sizeof note);
      if (m == 0) base = g;
      printf("order %d  defaults, %-10s        %7.1f Gcell/s  %5.2fx   %s\n", order, modes[m] ? modes[m] : "auto", g,
             sw > 0 ? g / sw : 0, note);
    }
    /* receivers: a 400 x 250 surface grid (10^5 taps) at interval 2, register tower */
    bench_taps(pb);
    double g = time_kernel(pb, "gpu-diamond", "persistent", 256, note, sizeof note);
    printf("order %d  + 1e5 receivers, persistent  %7.1f Gcell/s  (%.1f %% slower)\n", order, g,
           base > 0 ? 100.0 * (1.0 - g / base) : 0);
    free(pb->tap);
    pb->tap = NULL;
    pb->ntap = 0;
    /* absorbing layers (20 cells on every face but the free surface), as in a real job */
    {
      bench_absorbing(pb, c2max, 7);
      const double s2 = time_kernel(pb, "gpu-stepwise", NULL, 16, note, sizeof note);
      g = time_kernel(pb, "gpu-diamond", "persistent", 256, note, sizeof note);
      printf("order %d  absorbing 20 + free surface: gpu-stepwise %7.1f, register tower %7.1f Gcell/s (%5.2fx)\n", order,
             s2, g, s2 > 0 ? g / s2 : 0);
    }
    tw_problem_destroy(pb);
  }
}

int main(int argc, char **argv) {
  if (!tw_backend_find("gpu-diamond")) TW_SKIP("no GPU: gpu-diamond is not in this build (built without CUDA)");
  if (tw_gpu_count() == 0) TW_SKIP("no GPU: gpu-diamond needs one and none is present");
  if (argc > 1 && strcmp(argv[1], "--window") == 0) {
    const char *e = getenv("TW_TEST_SEED");
    tg_rng_state = e ? strtoull(e, NULL, 10) : 20261121u;
    e = getenv("TW_TEST_CASES");
    window_matrix(e ? atoi(e) : 5);
    return tw_test_exit();
  }
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    if (argc > 5) {
      int absorbing = 0, z = 0, nz = 256, taps = 0;
      for (int a = 6; a < argc; a++) {
        if (!strcmp(argv[a], "absorbing")) absorbing = 7;
        else if (!strcmp(argv[a], "taps")) taps = 1;
        else if (!strncmp(argv[a], "absorb", 6)) /* absorbx, absorbyz, …: layers on those axes only */
          for (const char *c = argv[a] + 6; *c; c++) absorbing |= *c == 'x' ? 1 : *c == 'y' ? 2 : *c == 'z' ? 4 : 0;
        else if (!strncmp(argv[a], "nz", 2)) nz = atoi(argv[a] + 2);
        else if (argv[a][0] == 'z') z = atoi(argv[a] + 1);
      }
      bench_one(atof(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), absorbing, z, nz, taps);
    }
    else bench(argc > 2 ? atof(argv[2]) : 4.3);
    return 0;
  }
  const char *e = getenv("TW_TEST_SEED");
  tg_rng_state = e ? strtoull(e, NULL, 10) : 20251122u;
  e = getenv("TW_TEST_CASES");
  const int ncases = e ? atoi(e) : 12;
  const char *bitref = getenv("TW_DIAMOND_BITWISE_REF");
  if (!bitref || !*bitref) bitref = "gpu-stepwise";
  printf("gpu-diamond against %s and cpu, bitwise, %d cases per order\n", bitref, ncases);
  matrix(bitref, ncases);
  tall_column(bitref, 4, 1100, 2, NULL);
  /* order 4 at 8 warps a CTA: the band by bulk copies by default, one CTA and over a cluster; the
   * cp.async copies asked for instead */
  tall_column(bitref, 4, 500, 2, "2 band buffers by bulk copies");
  tall_column_in(bitref, 4, 500, 2, "stage", "2 band buffers by bulk copies");
  tall_column_in(bitref, 4, 500, 2, "persistent/k0", "2 band buffers, ");
  tall_column_in(bitref, 4, 240, 2, "persistent", "2 band buffers by bulk copies");
  tall_column_in(bitref, 4, 240, 2, "stage/k0", "2 band buffers, ");
  tall_column_in(bitref, 4, 300, 2, "persistent", "160 threads x 1 z x 2 CTAs (a cluster)");
  tall_column_in(bitref, 4, 300, 2, "stage", "160 threads x 1 z x 2 CTAs (a cluster)");
  tall_column(bitref, 2, 500, 3, "dts 3 (R = 3), tower height 7, 256 threads x 2 z");
  tall_column(bitref, 2, 700, 3, "x 2 z");
  tails_case(bitref, 2, 3, "persistent/z1", "1 z");
  tails_case(bitref, 2, 3, "persistent/z2", "2 z");
  tails_case(bitref, 2, 4, "persistent", "dts 4");
  /* by default a short column runs the stepwise kernel where the towers are slower (on an H200 or
   * an H100; on a GPU of much less memory bandwidth the tower): the note gives the prediction */
  tails_case(bitref, 2, 4, NULL, "x the stepwise kernel");
  tails_case(bitref, 4, 2, "persistent", "dts 2");
  return tw_test_exit();
}
