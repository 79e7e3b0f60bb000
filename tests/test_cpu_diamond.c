/* test_cpu_diamond — cpu-diamond against the stepwise cpu backend, bitwise (memcmp), through the
 * backend interface (create/advance/extract), over a randomized matrix of problems built
 * directly as tw_problem (no job file): orders 2/4/6/8, DTS 1–3, tower heights from 1 to more
 * than the grid's x length, odd grid sizes, sources and receiver taps in corners, on edges and
 * on the free surface, trilinear tap groups, with and without absorbing layers and free
 * surface, window caps from the smallest that works up to the whole grid, advance calls of
 * random lengths (as the driver makes them end at snapshots) with snapshots (full field and a
 * decimated box) compared after each. Also: the window's counts (every grid plane in and out
 * once per block), the cap errors (naming the smallest cap that works), rejected parameters, one
 * job end to end through tw_run_job (files compared bitwise), and in a -DTW_DEBUG_LEVELS=ON build
 * the time-level shadow of every column update of both kernels, with a negative control.
 *
 * TW_DIAMOND_BENCH="..." in the environment runs one timing instead (see bench(); used for
 * docs/performance.md). */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "problem.h"
#include "tw_boundary.h"
#include "tw_test.h"
#include "window.h"


typedef struct {
  int order, n[3], absorb[3], free_surface;
  long steps;
  int interval, trilinear;
} spec;

/* Interesting cells: the 8 corners, edge and face midpoints, the free surface, random ones;
 * with trilinear, the 8-cell groups around some of them (as tw_place makes them). */
static long pick_cells(const tw_grid *g, int trilinear, int (*out)[3], int room) {
  const int *N = g->N;
  long n = 0;
  for (int c = 0; c < 8 && n < room; c++, n++)
    for (int a = 0; a < 3; a++) out[n][a] = (c >> a) & 1 ? N[a] - 1 : 0;
  for (int e = 0; e < 6 && n < room; e++, n++) /* on edges and faces, k = 0 (surface) half of them */
    for (int a = 0; a < 3; a++) out[n][a] = tw_rnd() % 3 == 0 ? (tw_rnd() % 2 ? N[a] - 1 : 0) : tw_rnd_in(0, N[a] - 1);
  for (int e = 0; e < 4 && n < room; e++, n++)
    out[n][0] = tw_rnd_in(0, N[0] - 1), out[n][1] = tw_rnd_in(0, N[1] - 1), out[n][2] = e % 2 ? 0 : tw_rnd_in(0, N[2] - 1);
  for (int e = 0; trilinear && e < 4 && n + 8 <= room; e++) {
    int lo[3];
    for (int a = 0; a < 3; a++) lo[a] = N[a] > 1 ? tw_rnd_in(0, N[a] - 2) : 0;
    for (int c = 0; c < 8; c++, n++)
      for (int a = 0; a < 3; a++) out[n][a] = lo[a] + ((c >> a) & 1 && N[a] > 1);
  }
  return tw_test_uniq_cells(out, n);
}

static tw_problem *make_problem(const spec *sp) {
  tw_problem *pb = calloc(1, sizeof *pb);
  const double d[3] = {10.0, 10.0, 10.0}, origin[3] = {0, 0, 0};
  tw_grid_setup(&pb->g, sp->n, d, origin, sp->absorb, sp->free_surface);
  pb->order = sp->order;
  REQUIRE(tw_stencil_setup(sp->order, d, &pb->st) == sp->order / 2, "stencil for order %d", sp->order);
  pb->dt = 1e-3;
  pb->steps = sp->steps;
  pb->free_surface = sp->free_surface;
  const size_t cells = tw_grid_cells(&pb->g);
  /* c²dt² in [0.3, 0.95] of the stability limit c²dt² Σ_axis λ/d² ≤ 4 */
  const double c2max = 4.0 / (3.0 * tw_fd_lambda(sp->order) / (d[0] * d[0]));
  pb->c2dt2 = malloc(cells * sizeof(float));
  for (size_t c = 0; c < cells; c++) pb->c2dt2[c] = (float)(c2max * (0.3 + 0.65 * tw_rnd_unit()));
  for (int a = 0; a < 3; a++) {
    pb->a[a] = malloc((size_t)pb->g.N[a] * sizeof(float));
    tw_damping_profile(&pb->g, a, sqrt(c2max) / pb->dt, pb->dt, pb->a[a]);
  }
  int(*buf)[3] = malloc(64 * sizeof *buf);
  pb->ninj = (int)pick_cells(&pb->g, sp->trilinear, buf, 64);
  pb->inj = malloc((size_t)pb->ninj * sizeof *pb->inj);
  memcpy(pb->inj, buf, (size_t)pb->ninj * sizeof *buf);
  pb->S = malloc((size_t)pb->ninj * (size_t)pb->steps * sizeof(float));
  for (long e = 0; e < pb->ninj * pb->steps; e++) pb->S[e] = (float)(2.0 * tw_rnd_unit() - 1.0);
  pb->ntap = pick_cells(&pb->g, sp->trilinear, buf, 64);
  pb->tap = malloc((size_t)pb->ntap * sizeof *pb->tap);
  memcpy(pb->tap, buf, (size_t)pb->ntap * sizeof *buf);
  free(buf);
  pb->interval = sp->interval;
  pb->nsamples = pb->steps / pb->interval + 1;
  return pb;
}

static void free_problem(tw_problem *pb) {
  free(pb->c2dt2);
  for (int a = 0; a < 3; a++) free(pb->a[a]);
  free(pb->inj), free(pb->S), free(pb->tap);
  free(pb);
}

static const tw_backend_ops *backend(const char *name) {
  const tw_backend_ops *b = tw_backend_find(name);
  REQUIRE(b, "backend %s not registered", name);
  return b;
}

typedef struct {
  long planes_in, planes_out, blocks;
  int window_planes;
} run_counts;

/* Variants of the CPU kernels' hot code (cpu_fields.h): where this build and CPU have two or
 * more, the matrix runs cpu with one and cpu-diamond with another (every pair in turn), so the
 * bitwise comparison also holds the variants to the same bits. */
static const char *variant_ref, *variant_dia;
static int variant_cases;
static const char *variants[3];
static int nvariants;

/* The variants this build and CPU run (tw_cpu_impl_select accepts them), then the default again. */
static void find_variants(void) {
  static const char *const names[3] = {"base", "v3", "v4"};
  nvariants = 0;
  for (int i = 0; i < 3; i++)
    if (tw_cpu_impl_select(names[i])) variants[nvariants++] = names[i];
  tw_cpu_impl_select(NULL);
}

static void use_variant(const char *name) {
  if (name) REQUIRE(tw_cpu_impl_select(name), "variant %s", name);
}

/* Advance both backends through the same random advance calls; compare taps and snapshots
 * bitwise after each. Returns the number of mismatches. */
static int compare_run(tw_problem *pb, const char *what, run_counts *rc) {
  const tw_backend_ops *ref = backend("cpu"), *dia = backend("cpu-diamond");
  void *sr = NULL, *sd = NULL;
  tw_error err = {0};
  REQUIRE(ref->create(pb, &sr, &err) == TW_OK, "%s: cpu create: %s", what, err.msg);
  if (dia->create(pb, &sd, &err) != TW_OK) {
    CHECK(0, "%s: cpu-diamond create: %s", what, err.msg);
    ref->destroy(sr);
    return 1;
  }
  const int *N = pb->g.N;
  const size_t cells = tw_grid_cells(&pb->g);
  float *fa = malloc(cells * sizeof(float)), *fb = malloc(cells * sizeof(float));
  float *ta = malloc((size_t)pb->nsamples * (size_t)pb->ntap * sizeof(float));
  float *tb = malloc((size_t)pb->nsamples * (size_t)pb->ntap * sizeof(float));
  const long nt = dia->block_steps(sd);
  int bad = 0;
  rc->blocks = 0;
  for (long t = 0; t < pb->steps && !bad;) {
    /* like the driver: multiples of the block, or ending early at a "snapshot" */
    long n = tw_rnd() % 3 ? nt * tw_rnd_in(1, 3) : tw_rnd_in(1, (int)nt + 2);
    if (t + n > pb->steps) n = pb->steps - t;
    long first, count;
    tw_samples_in(pb, t, n, &first, &count);
    memset(ta, 0xA5, (size_t)(count + 1) * (size_t)pb->ntap * sizeof(float));
    memset(tb, 0x5A, (size_t)(count + 1) * (size_t)pb->ntap * sizeof(float));
    use_variant(variant_ref);
    REQUIRE(ref->advance(sr, t, n, ta, &err) == TW_OK, "%s: cpu advance: %s", what, err.msg);
    use_variant(variant_dia);
    REQUIRE(dia->advance(sd, t, n, tb, &err) == TW_OK, "%s: cpu-diamond advance: %s", what, err.msg);
    rc->blocks += (n + nt - 1) / nt;
    if (count && memcmp(ta, tb, (size_t)count * (size_t)pb->ntap * sizeof(float))) {
      CHECK(0, "%s: taps differ in samples %ld..%ld", what, first, first + count - 1);
      bad++;
    }
    t += n;
    const int lo[3] = {0, 0, 0};
    REQUIRE(ref->extract(sr, lo, N, 1, fa, &err) == TW_OK, "%s: extract", what);
    REQUIRE(dia->extract(sd, lo, N, 1, fb, &err) == TW_OK, "%s: extract", what);
    if (memcmp(fa, fb, cells * sizeof(float))) {
      size_t c = 0;
      while (c < cells && !memcmp(fa + c, fb + c, sizeof(float))) c++;
      CHECK(0, "%s: snapshot at step %ld differs first at cell (%zu, %zu, %zu): %.9g vs %.9g", what, t,
            c / ((size_t)N[1] * N[2]), c / N[2] % N[1], c % N[2], fa[c], fb[c]);
      bad++;
    }
    /* a decimated box, as snapshots with a region take it */
    int blo[3], bcnt[3];
    const int dec = tw_rnd_in(1, 2);
    for (int a = 0; a < 3; a++) blo[a] = tw_rnd_in(0, N[a] - 1), bcnt[a] = tw_rnd_in(1, (N[a] - 1 - blo[a]) / dec + 1);
    REQUIRE(ref->extract(sr, blo, bcnt, dec, fa, &err) == TW_OK, "%s: extract box", what);
    REQUIRE(dia->extract(sd, blo, bcnt, dec, fb, &err) == TW_OK, "%s: extract box", what);
    if (memcmp(fa, fb, (size_t)bcnt[0] * bcnt[1] * bcnt[2] * sizeof(float))) {
      CHECK(0, "%s: decimated snapshot box at step %ld differs", what, t);
      bad++;
    }
  }
  /* The comparison means something only if the waves filled the grid. */
  const int lo[3] = {0, 0, 0};
  REQUIRE(ref->extract(sr, lo, N, 1, fa, &err) == TW_OK, "%s: extract", what);
  size_t nonzero = 0;
  for (size_t c = 0; c < cells; c++) nonzero += fa[c] != 0.0f;
  CHECK(nonzero * 10 >= cells * 9, "%s: only %zu of %zu cells reached by the waves", what, nonzero, cells);
  tw_run_report rep;
  memset(&rep, 0, sizeof rep);
  if (dia->report) dia->report(sd, &rep);
  rc->planes_in = rep.planes_in, rc->planes_out = rep.planes_out, rc->window_planes = rep.window_planes;
  free(fa), free(fb), free(ta), free(tb);
  ref->destroy(sr);
  dia->destroy(sd);
  return bad;
}

static void random_spec(spec *sp, int order) {
  sp->order = order;
  for (int a = 0; a < 3; a++) sp->n[a] = 2 * tw_rnd_in(1, 8) + 1;  /* odd, 3 .. 17 */
  if (tw_rnd() % 4 == 0) sp->n[tw_rnd() % 3] = tw_rnd_in(1, 4);          /* sometimes very thin */
  const int ab = tw_rnd() % 3 ? tw_rnd_in(1, 4) : 0;
  for (int a = 0; a < 3; a++) sp->absorb[a] = tw_rnd() % 4 ? ab : tw_rnd_in(0, 3);
  sp->free_surface = tw_rnd() % 2;
  sp->interval = tw_rnd_in(1, 3);
  sp->trilinear = tw_rnd() % 2;
  /* enough steps for the wave to cross the grid (it moves ≥ 1 cell per step) */
  int Nmax = 0;
  for (int a = 0; a < 3; a++) Nmax = sp->n[a] + 2 * sp->absorb[a] > Nmax ? sp->n[a] + 2 * sp->absorb[a] : Nmax;
  sp->steps = Nmax + tw_rnd_in(2, 14);
}

/* The matrix: every order × DTS 1–3, a few tower heights (1, small, beyond the x length) and
 * window caps (none, smallest, between, whole grid). */
static void matrix(void) {
  int cases = 0, windowed = 0;
  find_variants();
  for (int order = 2; order <= 8; order += 2)
    for (int dts = 1; dts <= 3; dts++)
      for (int hcase = 0; hcase < 4; hcase++)
        for (int ccase = 0; ccase < 4; ccase++) {
          spec sp;
          random_spec(&sp, order);
          /* window cases: a grid long in x, so that a window is smaller than the grid */
          if (ccase == 1 || ccase == 2) sp.n[0] = 2 * tw_rnd_in(12, 30) + 1, sp.steps = tw_rnd_in(12, 40);
          tw_problem *pb = make_problem(&sp);
          const int r = order / 2;
          const int heights[4] = {1, tw_rnd_in(2, 6), tw_rnd_in(7, 20), pb->g.N[0] / r + tw_rnd_in(1, 8)};
          pb->dts = dts;
          pb->tower_height = heights[hcase];
          pb->threads = tw_rnd_in(1, 3);
          tw_window_need need;
          int d2, nt2;
          REQUIRE(tw_schedule_params(order, dts, pb->tower_height, &d2, &nt2, NULL) == TW_OK, "params");
          tw_window_cpu_need(pb, dts, nt2, &need);
          const uint64_t span = need.whole_bytes - need.min_bytes;
          const uint64_t caps[4] = {0, need.min_bytes, need.min_bytes + (uint64_t)(tw_rnd_unit() * (double)span),
                                    need.whole_bytes};
          pb->device_memory = caps[ccase];
          char what[256];
          snprintf(what, sizeof what, "order %d dts %d height %d grid %dx%dx%d absorb %d/%d/%d fs %d interval %d "
                   "tri %d cap %llu (min %llu, whole %llu) threads %d", order, dts, pb->tower_height, pb->g.N[0],
                   pb->g.N[1], pb->g.N[2], sp.absorb[0], sp.absorb[1], sp.absorb[2], sp.free_surface,
                   sp.interval, sp.trilinear, (unsigned long long)pb->device_memory,
                   (unsigned long long)need.min_bytes, (unsigned long long)need.whole_bytes, pb->threads);
          run_counts rc = {0};
          if (nvariants > 1) { /* cross them: pairs (0, 1), (1, 2), …, (n − 1, 0) */
            variant_ref = variants[cases % nvariants], variant_dia = variants[(cases + 1) % nvariants];
            variant_cases++;
          }
          compare_run(pb, what, &rc);
          variant_ref = variant_dia = NULL;
          tw_cpu_impl_select(NULL);
          if (rc.window_planes) {
            windowed++;
            /* every grid plane in once and out once per block */
            CHECK(rc.planes_in == rc.blocks * pb->g.N[0] && rc.planes_out == rc.planes_in,
                  "%s: %ld planes in, %ld out over %ld blocks of %d planes", what, rc.planes_in, rc.planes_out,
                  rc.blocks, pb->g.N[0]);
          } else {
            CHECK(rc.planes_in == 0 && rc.planes_out == 0, "%s: copies without a window", what);
          }
          cases++;
          free_problem(pb);
        }
  char names[64] = "";
  for (int i = 0; i < nvariants; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? " " : "", variants[i]);
  printf("%d randomized cases compared bitwise (%d through a sliding window; %d with cpu and cpu-diamond on "
         "different variants of the hot code, of %s)\n", cases, windowed, variant_cases, names);
}

/* ---------------------------------------------------------------- an independent reference
 * The cpu backend against a plain triple loop over an unpadded array that spells docs/design.md §1 out:
 * p = 0 outside the grid, the image −p(k') above a free surface, the terms of tw_stencil.h in
 * their one order, sources added to L. Bitwise: this holds the CPU layout (z padding shared
 * between columns, ghosts, halos), the vectorized runs and both variants of the hot code to the
 * contract, which the cpu/cpu-diamond matrix (same layout on both sides) cannot. */
static float ref_at(const float *p, const int *N, int fs, int i, int j, int k) {
  if (i < 0 || i >= N[0] || j < 0 || j >= N[1] || k >= N[2]) return 0.0f;
  if (k < 0) return fs && -k < N[2] ? -p[((size_t)i * N[1] + j) * N[2] + (size_t)(-k)] : 0.0f;
  return p[((size_t)i * N[1] + j) * N[2] + k];
}

static void ref_step(const tw_problem *pb, const float *cur, float *old, long n) {
  const int *N = pb->g.N, r = pb->st.r, fs = pb->free_surface;
  for (int i = 0; i < N[0]; i++)
    for (int j = 0; j < N[1]; j++)
      for (int k = 0; k < N[2]; k++) {
        const float p0 = ref_at(cur, N, fs, i, j, k), p0x2 = 2.0f * p0;
        float chain[2] = {0.0f, 0.0f};
        for (int m = 1; m <= r; m++) {
          float *a = &chain[tw_lap_chain(m)];
          *a = tw_lap_term(*a, pb->st.w[0][m], ref_at(cur, N, fs, i - m, j, k), ref_at(cur, N, fs, i + m, j, k), p0x2);
          *a = tw_lap_term(*a, pb->st.w[1][m], ref_at(cur, N, fs, i, j - m, k), ref_at(cur, N, fs, i, j + m, k), p0x2);
          *a = tw_lap_term(*a, pb->st.w[2][m], ref_at(cur, N, fs, i, j, k - m), ref_at(cur, N, fs, i, j, k + m), p0x2);
        }
        float lap = tw_lap_sum(r, chain[0], chain[1]);
        for (int s = 0; s < pb->ninj; s++)
          if (pb->inj[s][0] == i && pb->inj[s][1] == j && pb->inj[s][2] == k) lap += pb->S[s * pb->steps + n];
        const size_t c = ((size_t)i * N[1] + j) * N[2] + k;
        old[c] = tw_cell_update(p0, old[c], lap, pb->c2dt2[c], tw_damping_xy(pb->a[0][i], pb->a[1][j]), pb->a[2][k]);
      }
}

static void reference(void) {
  int cases = 0, bad = 0;
  for (int order = 2; order <= 16; order += 2)
    for (int rep = 0; rep < 5; rep++) {
      spec sp;
      random_spec(&sp, order);
      if (rep >= 3) { /* long columns: several blocks, undamped ones between layers, a partial last */
        sp.n[0] = 2 * tw_rnd_in(1, 3) + 1, sp.n[1] = 2 * tw_rnd_in(1, 3) + 1, sp.n[2] = 40;
        /* padded N2 = 32q + t: the last partial block (cpu_update.c: tail) is one vector of the v4
         * build where t ≤ 16 (rep 3) and two where t > 16 (rep 4, which runs on v3 where this CPU has
         * it: 8-float vectors, one or two by t mod 16) */
        tw_grid g0;
        const double d0[3] = {10.0, 10.0, 10.0}, o0[3] = {0, 0, 0};
        tw_grid_setup(&g0, sp.n, d0, o0, sp.absorb, sp.free_surface);
        const int pad = g0.N[2] - sp.n[2], t = rep == 3 ? tw_rnd_in(1, 16) : tw_rnd_in(17, 31);
        sp.n[2] = 32 * tw_rnd_in(1, 2) + t - pad;
        if (sp.n[2] < 8) sp.n[2] += 32;
        sp.steps = sp.n[2] / 2 + tw_rnd_in(2, 14);
      }
      tw_problem *pb = make_problem(&sp);
      pb->threads = tw_rnd_in(1, 2);
      const size_t cells = tw_grid_cells(&pb->g);
      float *lv[2] = {calloc(cells, sizeof(float)), calloc(cells, sizeof(float))}, *got = malloc(cells * sizeof(float));
      const tw_backend_ops *ref = backend("cpu");
      void *st = NULL;
      tw_error err = {0};
      REQUIRE(ref->create(pb, &st, &err) == TW_OK, "reference: cpu create: %s", err.msg);
      float *taps = malloc((size_t)(pb->nsamples + 1) * (size_t)(pb->ntap + 1) * sizeof(float));
      const char *variant = rep == 2 && tw_cpu_impl_select("base") ? "base"
                            : rep == 4 && tw_cpu_impl_select("v3") ? "v3"
                                                                   : tw_cpu_impl_active()->name;
      tw_cpu_flush_denormals(); /* the backend flushes in its threads: the reference alike */
      for (long n = 0; n < pb->steps; n++) {
        ref_step(pb, lv[n % 2], lv[(n + 1) % 2], n);
        REQUIRE(ref->advance(st, n, 1, taps, &err) == TW_OK, "reference: advance: %s", err.msg);
      }
      const int lo[3] = {0, 0, 0};
      REQUIRE(ref->extract(st, lo, pb->g.N, 1, got, &err) == TW_OK, "reference: extract");
      const float *want = lv[pb->steps % 2];
      size_t c = 0, nonzero = 0;
      while (c < cells && !memcmp(got + c, want + c, sizeof(float))) nonzero += want[c++] != 0.0f;
      if (c < cells) bad++;
      CHECK(c == cells, "reference, order %d grid %dx%dx%d fs %d variant %s: cell (%zu, %zu, %zu) is %.9g, the plain "
            "loop gives %.9g", order, pb->g.N[0], pb->g.N[1], pb->g.N[2], pb->free_surface, variant,
            c / ((size_t)pb->g.N[1] * pb->g.N[2]), c / pb->g.N[2] % pb->g.N[1], c % pb->g.N[2], got[c], want[c]);
      CHECK(c < cells || nonzero * 10 >= cells * 9, "reference, order %d: only %zu of %zu cells reached", order,
            nonzero, cells);
      tw_cpu_impl_select(NULL);
      ref->destroy(st);
      free(lv[0]), free(lv[1]), free(got), free(taps);
      free_problem(pb);
      cases++;
    }
  printf("%d problems (orders 2..16) stepped by the cpu backend equal bitwise to a plain loop over docs/design.md §1 "
         "(%d differ)\n", cases, bad);
}

/* Caps: one byte below the smallest is refused with a message naming the smallest. */
static void cap_errors(void) {
  spec sp = {.order = 8, .n = {41, 9, 7}, .absorb = {0, 0, 0}, .free_surface = 1, .steps = 30, .interval = 1};
  tw_problem *pb = make_problem(&sp);
  pb->dts = 1;
  pb->tower_height = 3;
  tw_window_need need;
  tw_window_cpu_need(pb, 1, 3, &need);
  CHECK(need.min_planes == (3 + 1) * 4 + 2 * 4, "min planes %d, want (nt+1)r + 2R = 24", need.min_planes);
  const tw_backend_ops *dia = backend("cpu-diamond");
  void *sd = NULL;
  tw_error err = {0};
  char want[32];
  snprintf(want, sizeof want, "%llu", (unsigned long long)need.min_bytes);
  pb->device_memory = need.min_bytes - 1;
  CHECK(dia->create(pb, &sd, &err) == TW_ERANGE && strstr(err.msg, "solver.device_memory") && strstr(err.msg, want),
        "cap below the smallest: %s", err.msg);
  printf("cap error: %s\n", err.msg);
  pb->device_memory = need.min_bytes;
  CHECK(dia->create(pb, &sd, &err) == TW_OK, "smallest cap refused: %s", err.msg);
  if (sd) dia->destroy(sd), sd = NULL;
  /* a tower so tall that no window is smaller than the grid: the smallest cap is the grid */
  pb->tower_height = 20;
  tw_window_cpu_need(pb, 1, 20, &need);
  CHECK(need.min_bytes == need.whole_bytes, "tall towers: min %llu, whole %llu",
        (unsigned long long)need.min_bytes, (unsigned long long)need.whole_bytes);
  pb->device_memory = need.whole_bytes - 1;
  CHECK(dia->create(pb, &sd, &err) == TW_ERANGE && strstr(err.msg, "whole grid"), "tall towers: %s", err.msg);
  /* rejected parameters */
  pb->device_memory = 0;
  pb->tower_height = -2;
  CHECK(dia->create(pb, &sd, &err) == TW_EINVAL && strstr(err.msg, "solver.tower_height"), "height −2: %s",
        err.msg);
  pb->tower_height = 0;
  pb->dts = -1;
  CHECK(dia->create(pb, &sd, &err) == TW_EINVAL && strstr(err.msg, "solver.dts"), "dts −1: %s", err.msg);
  pb->dts = 500;
  CHECK(dia->create(pb, &sd, &err) == TW_ERANGE && strstr(err.msg, "solver.dts"), "dts 500: %s", err.msg);
  free_problem(pb);
}

/* ---------------------------------------------------------------- end to end
 * The same job through tw_run_job (job parser, driver blocks ending at snapshots, trace
 * combination, HDF5 output) with cpu and with cpu-diamond through a window: the files' traces
 * and snapshots are bitwise equal, and the run summary reports the window's copies. */
static const char *const JOB =
    "grid = { n = [41, 21, 17]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { steps = 61; };\n"
    "model = { type = \"gradient\"; vp0 = 1500.0; gradient = 3.0; };\n"
    "scheme = { order = 8; };\n"
    "boundary = { absorbing = 5; free_surface = true; };\n"
    "sources = ( { position = [103.0, 47.0, 31.0]; interpolation = \"trilinear\";\n"
    "              wavelet = { type = \"ricker\"; frequency = 40.0; }; },\n"
    "            { position = [0.0, 200.0, 4.0]; interpolation = \"trilinear\";\n"
    "              wavelet = { type = \"ricker\"; frequency = 30.0; }; } );\n"
    "receivers = { interval = 2; interpolation = \"trilinear\";\n"
    "              points = ( [0.0, 0.0, 3.0], [400.0, 200.0, 160.0], [211.0, 93.0, 3.0] );\n"
    "              lines = ( { from = [0.0, 101.0, 13.0]; to = [400.0, 101.0, 13.0]; count = 23; } ); };\n"
    "snapshots = { steps = [5, 6, 29, 60]; decimate = 2; };\n";

/* A job without solver.tower_height whose cap is too small for the default height's ring: the
 * tallest height whose ring fits (tw_window_fit_height), said in the report, bitwise equal to cpu;
 * below the ring of height 1 the error names that ring and does not tell to lower the height. */
static void lowered_height(void) {
  spec sp = {.order = 8, .n = {301, 9, 7}, .absorb = {2, 2, 2}, .free_surface = 1, .steps = 60, .interval = 2};
  tw_problem *pb = make_problem(&sp);
  pb->dts = 1;
  tw_window_need n1, n8, n9;
  tw_window_cpu_need(pb, 1, 1, &n1);
  tw_window_cpu_need(pb, 1, 8, &n8);
  tw_window_cpu_need(pb, 1, 9, &n9);
  REQUIRE(n8.min_bytes < n9.min_bytes && n9.min_bytes < n9.whole_bytes, "ring sizes");
  pb->device_memory = (n8.min_bytes + n9.min_bytes) / 2; /* fits height 8, not 9 (nor the default 32) */
  const tw_backend_ops *dia = backend("cpu-diamond");
  void *sd = NULL;
  tw_error err = {0};
  REQUIRE(dia->create(pb, &sd, &err) == TW_OK, "lowered height: create: %s", err.msg);
  CHECK(dia->block_steps(sd) == 8, "lowered height: block of %ld steps, want 8", dia->block_steps(sd));
  tw_run_report rep;
  memset(&rep, 0, sizeof rep);
  dia->report(sd, &rep);
  dia->destroy(sd);
  run_counts rc;
  const int bad = compare_run(pb, "lowered height", &rc);
  CHECK(rc.window_planes > 0, "lowered height: ran without a window");
  CHECK(strstr(rep.note, "lowered to fit"), "lowered height: the report does not say so: %s", rep.note);
  printf("lowered height: cap %llu B, %s; %sbitwise equal to cpu\n", (unsigned long long)pb->device_memory, rep.note,
         bad ? "NOT " : "");
  char want[32];
  snprintf(want, sizeof want, "%llu", (unsigned long long)n1.min_bytes);
  pb->device_memory = n1.min_bytes - 1;
  CHECK(dia->create(pb, &sd, &err) == TW_ERANGE && strstr(err.msg, want) && strstr(err.msg, "tower_height 1") &&
            !strstr(err.msg, "lower solver.tower_height"),
        "below the ring of height 1: %s", err.msg);
  free_problem(pb);
}

static tw_result *run_job(const char *kernel_set, const char *extra, const char *tag, tw_run_report *rep) {
  char path[512];
  snprintf(path, sizeof path, "%s/tests/cpu-diamond-%s.h5", TW_BINARY_DIR, tag);
  const char *sets[2] = {kernel_set, extra};
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(JOB, tag, sets, extra ? 2 : 1, &job, &err) == TW_OK, "%s: %s", tag, err.msg);
  REQUIRE(tw_run_job(job, path, NULL, rep, &err) == TW_OK, "%s: %s", tag, err.msg);
  tw_result *r = NULL;
  REQUIRE(tw_result_open(path, &r, &err) == TW_OK, "%s: %s", tag, err.msg);
  tw_job_destroy(job);
  return r;
}

static void end_to_end(void) {
  tw_run_report ra, rb;
  tw_result *a = run_job("solver.kernel=\"cpu\"", NULL, "ref", &ra);
  tw_result *b = run_job("solver.kernel=\"cpu-diamond\"", "solver={kernel=\"cpu-diamond\"; dts=1; tower_height=3; "
                         "device_memory=\"800K\";}", "window", &rb);
  REQUIRE(a->nrec == b->nrec && a->nsamples == b->nsamples && a->nsnap == 4 && b->nsnap == 4, "result shapes");
  CHECK(!memcmp(a->traces, b->traces, (size_t)a->nrec * a->nsamples * sizeof(float)), "end to end: traces differ");
  const size_t n = (size_t)a->snap_shape[0] * a->snap_shape[1] * a->snap_shape[2];
  float *sa = malloc(n * sizeof(float)), *sb = malloc(n * sizeof(float));
  tw_error err = {0};
  for (int i = 0; i < 4; i++) {
    REQUIRE(tw_result_read_snapshot(a, i, sa, &err) == TW_OK && tw_result_read_snapshot(b, i, sb, &err) == TW_OK,
            "%s", err.msg);
    CHECK(!memcmp(sa, sb, n * sizeof(float)), "end to end: snapshot %d (step %ld) differs", i, a->snap_steps[i]);
  }
  float peak = 0;
  for (long e = 0; e < a->nrec * a->nsamples; e++) peak = fabsf(a->traces[e]) > peak ? fabsf(a->traces[e]) : peak;
  CHECK(peak > 0, "end to end: silent traces");
  const long N0 = 41 + 2 * 5, plane = (21 + 2 * 5) * (17 + 5);
  CHECK(rb.window_planes > 0 && rb.window_planes < N0, "end to end: window of %d planes", rb.window_planes);
  CHECK(rb.planes_in > 0 && rb.planes_in == rb.planes_out && rb.planes_in % N0 == 0, "end to end: %ld in, %ld out",
        rb.planes_in, rb.planes_out);
  CHECK(rb.bytes_in == 12.0 * plane * rb.planes_in && rb.bytes_out == 8.0 * plane * rb.planes_out,
        "end to end: bytes %g in, %g out", rb.bytes_in, rb.bytes_out);
  CHECK(ra.window_planes == 0 && ra.planes_in == 0, "end to end: cpu reports a window");
  printf("end to end: traces and 4 snapshots bitwise equal; window %d planes, %ld planes in and out (%ld blocks), "
         "%.0f + %.0f bytes; %s\n", rb.window_planes, rb.planes_in, rb.planes_in / N0, rb.bytes_in, rb.bytes_out,
         rb.note);
  free(sa), free(sb);
  unlink(a->path), unlink(b->path);
  tw_result_close(a);
  tw_result_close(b);
}

/* The memory check counts the window's ring, a buffer beside the whole fields: with a cap the job
 * needs up to the cap more, not the same (check said 95 MiB where the run took 159 MiB). */
static void window_memory(void) {
  const char *plain[] = {"solver={kernel=\"cpu-diamond\"; dts=1; tower_height=3;}"};
  const char *capped[] = {"solver={kernel=\"cpu-diamond\"; dts=1; tower_height=3; device_memory=\"800K\";}"};
  double host[2] = {0, 0};
  int planes[2] = {0, 0};
  for (int c = 0; c < 2; c++) {
    tw_error err = {0};
    tw_job *job = NULL;
    REQUIRE(tw_job_load_string(JOB, "mem", c ? capped : plain, 1, &job, &err) == TW_OK, "%s", err.msg);
    tw_validation val;
    CHECK(tw_job_validate(job, NULL, TW_VALIDATE_CHECK, &val, NULL, &err) == TW_OK, "%s", err.msg);
    host[c] = val.est.host_bytes, planes[c] = val.est.window_planes;
    tw_validation_free(&val);
    tw_job_destroy(job);
  }
  const double plane = 12.0 * (21 + 2 * 5) * (17 + 5), ring = host[1] - host[0];
  CHECK(!planes[0] && planes[1] > 0 && ring >= planes[1] * plane && ring <= 800.0 * 1024,
        "window memory: %d planes, %.0f bytes more than without the cap (%.0f .. %.0f)", planes[1], ring,
        planes[1] * plane, 800.0 * 1024);
}

/* ---------------------------------------------------------------- timing (not part of CI)
 * TW_DIAMOND_BENCH="N0,N1,N2,steps,order,dts,height,cap_MiB[,threads]": one problem (sources
 * and taps as in the matrix), timed for `cpu` (dts 0) or `cpu-diamond` after two warm-up steps;
 * prints Gcell/s and the window's copies per cell update. cap_MiB 0: no cap; −f: f times the
 * smallest ring that works. Used for docs/performance.md. */
static void bench(const char *arg) {
  int n0, n1, n2, steps, order, dts, height, threads = 0;
  double cap_mib;
  if (sscanf(arg, "%d,%d,%d,%d,%d,%d,%d,%lf,%d", &n0, &n1, &n2, &steps, &order, &dts, &height, &cap_mib, &threads) <
      8) {
    fprintf(stderr, "TW_DIAMOND_BENCH: want N0,N1,N2,steps,order,dts,height,cap_MiB[,threads]\n");
    exit(2);
  }
  spec sp = {.order = order, .n = {n0, n1, n2}, .absorb = {0, 0, 0}, .free_surface = 0, .steps = steps,
             .interval = 1};
  tw_problem *pb = make_problem(&sp);
  pb->dts = dts, pb->tower_height = height, pb->threads = threads;
  pb->device_memory = (uint64_t)(cap_mib * 1048576.0);
  if (cap_mib < 0 && dts) { /* −f: f times the smallest ring that works */
    int d2, nt2;
    tw_window_need need;
    REQUIRE(tw_schedule_params(order, dts, height, &d2, &nt2, NULL) == TW_OK, "bench params");
    tw_window_cpu_need(pb, d2, nt2, &need);
    pb->device_memory = (uint64_t)(-cap_mib * (double)need.min_bytes);
  }
  const tw_backend_ops *b = backend(dts ? "cpu-diamond" : "cpu");
  const char *variant = getenv("TW_CPU_VARIANT"); /* base | v3: force a variant of the hot code */
  void *st = NULL;
  tw_error err = {0};
  REQUIRE(b->create(pb, &st, &err) == TW_OK, "bench create: %s", err.msg);
  if (variant && *variant) REQUIRE(tw_cpu_impl_select(variant), "TW_CPU_VARIANT=%s: not in this build or CPU", variant);
  float *taps = malloc((size_t)pb->nsamples * (size_t)pb->ntap * sizeof(float));
  const long warm = 2; /* both levels written once: page faults out of the timing */
  b->advance(st, 0, warm, taps, &err);
  tw_run_report rep0;
  memset(&rep0, 0, sizeof rep0);
  if (b->report) b->report(st, &rep0);
  struct timespec c0, c1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  const double t0 = tw_wall_seconds();
  REQUIRE(b->advance(st, warm, steps - warm, taps, &err) == TW_OK, "bench advance: %s", err.msg);
  const double sec = tw_wall_seconds() - t0;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  const double cpu_sec = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
  tw_run_report rep;
  memset(&rep, 0, sizeof rep);
  if (b->report) b->report(st, &rep);
  const double upd = (double)tw_grid_cells(&pb->g) * (double)(steps - warm);
  const double in = rep.bytes_in - rep0.bytes_in, out = rep.bytes_out - rep0.bytes_out;
  printf("%s %-11s order %d dts %d height %4d grid %dx%dx%d: %.3f Gcell/s (%.3f per CPU-second)  window %d planes "
         "(%.1f MiB)  copied %.3f B/update (in %.3f, out %.3f)\n", tw_cpu_impl_active()->name, b->name, order, dts, height, n0, n1, n2,
         upd / sec / 1e9, upd / cpu_sec / 1e9,
         rep.window_planes, rep.window_planes ? tw_window_cpu_ring_bytes(pb, rep.window_planes) / 1048576.0 : 0.0,
         (in + out) / upd, in / upd, out / upd);
  free(taps);
  b->destroy(st);
  free_problem(pb);
}

/* ---------------------------------------------------------------- the instrumented build
 * With -DTW_DEBUG_LEVELS=ON every column update of both backends (and every plane the window
 * moves) carries a time-level shadow: the matrix above must leave no wrong read, and updates
 * made in a wrong order on purpose must be caught (negative control). */
static void debug_levels(void) {
#ifdef TW_DEBUG_LEVELS
  char first[256];
  const long bad = tw_debug_level_errors(first, sizeof first);
  CHECK(bad == 0, "time-level shadow: %ld wrong reads over the matrix; first: %s", bad, first);
  spec sp = {.order = 4, .n = {9, 9, 5}, .absorb = {0, 0, 0}, .free_surface = 0, .steps = 4, .interval = 1};
  tw_problem *pb = make_problem(&sp);
  tw_cpu_fields f;
  tw_error err = {0};
  REQUIRE(tw_cpu_fields_create(pb, 0, 9, TW_CPU_ALIGN_STEPWISE, &f, &err) == TW_OK, "%s", err.msg);
  tw_debug_level_reset();
  tw_cpu_update_row(pb, &f, 4, 4, 5, 0, NULL);
  CHECK(tw_debug_level_errors(NULL, 0) == 0, "a first update in order was flagged");
  tw_cpu_update_row(pb, &f, 4, 5, 6, 1, NULL); /* step 1 before its neighbours did step 0 */
  const long caught = tw_debug_level_errors(first, sizeof first);
  CHECK(caught > 0, "negative control: a step-1 update with step-0 neighbours was not caught");
  printf("time-level shadow: %ld wrong reads in the matrix; negative control caught %ld (%s)\n", bad, caught, first);
  tw_debug_level_reset();
  tw_cpu_fields_destroy(&f);
  free_problem(pb);
#else
  printf("time-level shadow: not in this build (cmake -DTW_DEBUG_LEVELS=ON); test_schedule replays it\n");
#endif
}

/* kernel = "auto" on a machine without a GPU (this test's build may have one: then auto is a GPU
 * kernel and only the rule itself is checked): cpu-diamond where the y axis gives 16 columns a thread
 * and no device_memory is set, else cpu, and `check`'s note says why. */
static void auto_rule(void) {
  struct {
    const char *grid, *threads, *extra, *want, *why;
  } cases[] = {
      /* 12 B x 1.2e9 cells: beyond any L3 */
      {"grid.n=[2000,2000,300]", "solver.threads=2", NULL, "cpu-diamond", "towers to all 2 threads"},
      /* small grids too: 22 + 2·5 = 32 columns for 2 threads, 31 too few */
      {"grid.n=[41,22,17]", "solver.threads=2", NULL, "cpu-diamond", "32 columns across give towers"},
      {"grid.n=[41,21,17]", "solver.threads=2", NULL, "cpu", "31 columns across give too few towers"},
      /* 2000 + 2·5 columns < 16 × 200 threads */
      {"grid.n=[2000,2000,300]", "solver.threads=200", NULL, "cpu", "too few towers for 200 threads"},
      {"grid.n=[2000,2000,300]", "solver.threads=2", "solver.device_memory=\"1G\"", "cpu", "device_memory is set"},
      /* y long (swept along y): the kernels' y is the job's x, 41 + 2·5 = 51 columns < 16 × 4 */
      {"grid.n=[41,4000,300]", "solver.threads=4", NULL, "cpu", "51 columns across"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *sets[3] = {cases[i].grid, cases[i].threads, cases[i].extra};
    tw_error err = {0};
    tw_job *job = NULL;
    REQUIRE(tw_job_load_string(JOB, "auto", sets, cases[i].extra ? 3 : 2, &job, &err) == TW_OK, "%s", err.msg);
    char why[160] = "", kernel[32] = "", note[224] = "";
    const int dia = tw_cpu_auto_diamond(job, why, sizeof why);
    CHECK(dia == !strcmp(cases[i].want, "cpu-diamond") && strstr(why, cases[i].why), "case %zu (%s, %s): %d, %s", i,
          cases[i].grid, cases[i].threads, dia, why);
    CHECK(tw_kernel_resolve("auto", job, kernel, sizeof kernel, &err) == TW_OK, "%s", err.msg);
    if (!tw_kernel_is_gpu(kernel)) {
      CHECK(!strcmp(kernel, cases[i].want), "case %zu: auto resolved to %s, want %s", i, kernel, cases[i].want);
      tw_kernel_auto_note(job, kernel, note, sizeof note);
      CHECK(strstr(note, "auto without a GPU: ") == note && strstr(note, cases[i].why), "case %zu: note %s", i, note);
    }
    tw_job_destroy(job);
  }
  /* the L3 the rule counts: the L3, at most 10× the threads' L2 and 64 MiB (an L3 serves a socket) */
  for (int T = 1; T <= 64; T *= 4) {
    const long share = tw_cpu_l3_share(T), l3 = tw_cpu_cache_bytes(3);
    long cap = 10L * T * tw_cpu_cache_bytes(2);
    if (cap > 64L << 20) cap = 64L << 20;
    CHECK(share == (l3 < cap ? l3 : cap), "L3 share of %d threads: %ld, L3 %ld, cap %ld", T, share, l3, cap);
  }
  /* no job: cpu without a GPU; a kernel by name: no note */
  char kernel[32] = "", note[8] = "x";
  CHECK(tw_kernel_resolve("auto", NULL, kernel, sizeof kernel, NULL) == TW_OK, "auto without a job");
  CHECK(tw_kernel_is_gpu(kernel) || !strcmp(kernel, "cpu"), "auto without a job: %s", kernel);
  tw_job *job = NULL;
  tw_error err = {0};
  const char *named[] = {"solver.kernel=\"cpu\""};
  REQUIRE(tw_job_load_string(JOB, "named", named, 1, &job, &err) == TW_OK, "%s", err.msg);
  tw_kernel_auto_note(job, "cpu", note, sizeof note);
  CHECK(!note[0], "a named kernel got a note: %s", note);
  tw_job_destroy(job);
}

/* Columns long enough for cpu-diamond to align them to its vector (cpu_fields.h: tw_cpu_tower_align;
 * the matrix's short columns keep `cpu`'s layout): both kernels, in core and through the window
 * (whose ring takes the host fields' layout), bitwise equal with each holding its own layout. */
static void aligned_columns(void) {
  int cases = 0, aligned = 0;
  for (int order = 2; order <= 8; order += 6)
    for (int ccase = 0; ccase < 2; ccase++) {
      spec sp = {.order = order,
                 .n = {2 * tw_rnd_in(30, 40) + 1, 9, 150},
                 .absorb = {2, 2, 2},
                 .free_surface = tw_rnd() % 2,
                 .interval = tw_rnd_in(1, 3),
                 .trilinear = tw_rnd() % 2};
      /* padded N2 a multiple of 16 (≥ 120): the pitch on 16 floats is N2 + 16, within 1/16 of N2 + 8 */
      tw_grid g0;
      const double d0[3] = {10.0, 10.0, 10.0}, o0[3] = {0, 0, 0};
      tw_grid_setup(&g0, sp.n, d0, o0, sp.absorb, sp.free_surface);
      sp.n[2] = 16 * tw_rnd_in(10, 11) - (g0.N[2] - sp.n[2]);
      sp.steps = 16 * 11 + tw_rnd_in(2, 14); /* the waves cross the grid's longest axis */
      tw_problem *pb = make_problem(&sp);
      const int r = order / 2;
      pb->dts = 1;
      pb->tower_height = tw_rnd_in(4, 12);
      pb->threads = tw_rnd_in(1, 2);
      const int align = tw_cpu_tower_align(pb->g.N[2], r);
      CHECK(align ==
                (tw_cpu_impl_active()->vw > TW_CPU_ALIGN_STEPWISE ? tw_cpu_impl_active()->vw : TW_CPU_ALIGN_STEPWISE),
            "Nz %d, order %d: cpu-diamond's alignment %d with %d-float vectors", pb->g.N[2], order, align,
            tw_cpu_impl_active()->vw);
      aligned += align > TW_CPU_ALIGN_STEPWISE;
      if (ccase) {
        tw_window_need need;
        int d2, nt2;
        REQUIRE(tw_schedule_params(order, pb->dts, pb->tower_height, &d2, &nt2, NULL) == TW_OK, "params");
        tw_window_cpu_need(pb, pb->dts, nt2, &need);
        pb->device_memory = need.min_bytes;
      }
      char what[160];
      snprintf(what, sizeof what, "aligned columns: order %d grid %dx%dx%d dts %d height %d cap %llu", order,
               pb->g.N[0], pb->g.N[1], pb->g.N[2], pb->dts, pb->tower_height, (unsigned long long)pb->device_memory);
      run_counts rc = {0};
      compare_run(pb, what, &rc);
      CHECK(!ccase || rc.window_planes, "%s: no window", what);
      free_problem(pb);
      cases++;
    }
  printf("aligned columns: %d cases, %d with cpu-diamond's columns on %d floats (`cpu`: %d), bitwise equal\n", cases,
         aligned, tw_cpu_impl_active()->vw, TW_CPU_ALIGN_STEPWISE);
}

/* cpu-diamond's default tile (cpu_diamond.c: tw_cpu_default_tile) on the caches of the machines it
 * was measured on (the picks the measurements chose), and what it must keep on any: [8, 64], a stage
 * of ≥ 4T/3 towers, a step's footprint within 60 % of the L2 or 70 % of the thread's L3 share; both
 * kinds of tower occur over the range. */
static void tile_rule(void) {
  const long Mi = 1L << 20;
  static const struct {
    int r, N1, Nz, T;
    long l2, share; /* MiB */
    int want;
  } measured[] = {
      /* the 2-core Xeon (2 MiB L2, share 40 MiB) */
      {1, 256, 256, 2, 2, 40, 14},
      {2, 256, 256, 2, 2, 40, 14},
      {3, 256, 256, 2, 2, 40, 48},
      {4, 256, 256, 2, 2, 40, 48},
      {1, 256, 512, 2, 2, 40, 10},
      {4, 256, 512, 2, 2, 40, 34},
      {1, 512, 128, 2, 2, 40, 20},
      {4, 512, 128, 2, 2, 40, 64},
      /* the 16-core host (2 MiB L2 a core, share 64 MiB) */
      {1, 512, 256, 16, 2, 64, 12},
      {4, 512, 256, 16, 2, 64, 12},
      {4, 256, 256, 16, 2, 64, 8},
      {1, 512, 256, 8, 2, 64, 14},
      {4, 512, 256, 8, 2, 64, 24},
  };
  for (size_t i = 0; i < sizeof measured / sizeof *measured; i++) {
    const int R = tw_cpu_default_tile(measured[i].r, measured[i].N1, measured[i].Nz, measured[i].T, measured[i].l2 * Mi,
                                      measured[i].share * Mi);
    CHECK(R == measured[i].want, "case %zu: tile %d, want %d", i, R, measured[i].want);
  }
  const long l2s[] = {512L << 10, 1 * Mi, 2 * Mi}, shares[] = {8 * Mi, 20 * Mi, 64 * Mi};
  int bad = 0, l2_towers = 0, l3_towers = 0;
  for (int r = 1; r <= 4; r++)
    for (int N1 = 16; N1 <= 2048; N1 *= 2)
      for (int Nz = 32; Nz <= 2048; Nz *= 2)
        for (int T = 1; T <= 64; T *= 2)
          for (int c = 0; c < 3; c++) {
            const long l2 = l2s[c], share = shares[c];
            const int R = tw_cpu_default_tile(r, N1, Nz, T, l2, share);
            const double F = 24.0 * R * R * Nz;
            const int l2_tower = F <= 0.6 * l2 && R >= 7 * r;
            l2_towers += l2_tower;
            l3_towers += !l2_tower && R > 8 && F <= 0.7 * share / T;
            bad += R < 8 || R > 64 || (R > 8 && 8 * T * R > 3 * N1) || (R > 8 && F > 0.6 * l2 && F > 0.7 * share / T);
          }
  CHECK(!bad, "%d tiles outside [8, 64], the parallelism limit or the caches", bad);
  CHECK(l2_towers > 0 && l3_towers > 0, "both kinds of tower: %d in the L2, %d in the L3", l2_towers, l3_towers);
}

int main(void) {
  tw_rng_seed(0x2545F4914F6CDD1Dull);
  const char *b = getenv("TW_DIAMOND_BENCH");
  if (b && *b) {
    bench(b);
    return 0;
  }
  matrix();
  reference();
  cap_errors();
  lowered_height();
  end_to_end();
  window_memory();
  debug_levels();
  auto_rule();
  tile_rule();
  aligned_columns();
  return tw_test_exit();
}
