/* cpu-diamond — DiamondTorre on the CPU (docs/design.md §2), the portable proof of the schedule that the
 * GPU kernel follows. Per time block (the tower height; the driver ends advance calls at
 * snapshots and the final step, and the last block of a call is shorter): the stages in
 * decreasing s, OpenMP over the towers of a stage (they are independent, schedule.h), each tower
 * runs its local steps τ = 0 … nt−1 over its clipped diamond. Every column goes through
 * tw_cpu_update_row, the function the stepwise `cpu` backend uses, with its sources and
 * receiver taps: bitwise equality with `cpu` rests on the schedule alone.
 *
 * With solver.device_memory below the whole grid, the towers work on a ring of x-planes and the
 * full fields stay in the host copy (window.h): planes come in before the stage that first
 * touches them and go back after the last stage that touches them. Snapshots read the host copy
 * at block boundaries, when every plane is back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fields.h"
#include "schedule.h"
#include "window.h"

typedef struct {
  const tw_problem *pb;
  int dts, nt;               /* resolved DiamondTorre parameters */
  int nt_default;            /* the default height, where nt was lowered to fit the cap (else 0) */
  tw_cpu_fields host;        /* the full fields (what the solver updates without a window) */
  int windowed;
  tw_window win;
  long level;                /* the level the whole field is at */
  int dirty;                 /* advanced since it was created or reset */
} dia_state;

static void dia_destroy(void *state) {
  dia_state *s = state;
  if (!s) return;
  if (s->windowed) tw_window_destroy(&s->win);
  tw_cpu_fields_destroy(&s->host);
  free(s);
}

/* cpu-diamond's own defaults (the GPU's, tw_default_dts, size a tower for registers): the tile
 * R = r·dts, in cells. A tower step updates 2R² columns: its footprint, three arrays (p^n,
 * p^{n−1}, c²dt²), is F = 2R²·Nz·12 B. Two things pull R apart (docs/performance.md, session 29):
 *  - the halo: a step reads r rows and r columns beyond its diamond, a share ~r/R of its loads,
 *    and a row's fixed work is spread over ~R columns: larger R is cheaper per cell;
 *  - the cache the step's data is reused from: a tower reads at step τ what it wrote at τ − 1 and
 *    τ − 2. Where F fits one core's L2 (R₂ below), that is the L2; beyond it the L3, whose reuse
 *    holds while F stays within the thread's share (R₃).
 * So (tw_cpu_default_tile): the L2 tower R₂ = ⌊√(0.6·L2 / (24 B·Nz))⌋ where its halo share is
 * small, R₂ ≥ 7r; else the larger of R₂ and the L3 tower R₃ = ⌊√(0.7·L3 share / T / (24 B·Nz))⌋;
 * then at most 3·N1 / 8T, so that a stage has ≥ 4T/3 towers (~N1 / 2R; they run as tasks,
 * run_towers, but the parallelism stays ~N1 / 2R), clamped to [8, 64].
 * Measured (bench, Gcell/s, the tile that won; the rule's pick in brackets):
 *  - 2-core Xeon (2 MiB L2, share 40 MiB): 256³ order 2 R 12–16 [14] +20–25 % over R = 32, order 4
 *    R 14–16 [14], order 6 R 48–54 [48], order 8 R 48–56 [48] +4–6 %; 256² × 512 order 2 R 11–12
 *    [10], orders 4–8 R 32–40 [34]; 512² × 128 order 2 R 16–20 [20], order 8 R 64 [64];
 *  - the 16-core Xeon host, 512² × 256: 16 threads R 12 [12] (R 8 −3–10 %, R 16 −10–18 %: a tower
 *    a thread is too few), 8 threads R 16 [14 / 24 at orders 2 / 8]; 256³, 16 threads R 8 [8] (R 12
 *    −30 %); 2 threads as on the 2-core Xeon at order 2, flat within ±5 % from R 32 to 56 at order 8.
 * Below 8 the short rows and tips cost more than the cache saves. Through the window
 * (solver.device_memory below the grid) R = 16, the tile its ring was sized and measured with (it
 * runs stage by stage: copies go with stages). Height: 32 and 64 measured alike at order 8 (order
 * 2: +3 % at 64); 32 keeps the window small. */
#define TW_CPU_TILE_MIN 8
#define TW_CPU_TILE_MAX 64
#define TW_CPU_TILE_WINDOW 16
#define TW_CPU_HEIGHT 32

int tw_cpu_default_tile(int r, int N1, int Nz, int threads, long l2, long l3_share) {
  const double column = 24.0 * Nz; /* a column's bytes in F, per R² */
  const int T = threads > 0 ? threads : 1;
  const int R2 = (int)sqrt(0.6 * (double)l2 / column);
  const int R3 = (int)sqrt(0.7 * (double)l3_share / T / column);
  int R = R2 >= 7 * r ? R2 : R2 > R3 ? R2 : R3;
  const int par = 3 * N1 / (8 * T);
  if (R > par) R = par;
  return R < TW_CPU_TILE_MIN ? TW_CPU_TILE_MIN : R > TW_CPU_TILE_MAX ? TW_CPU_TILE_MAX : R;
}

static int cpu_default_dts(const tw_problem *pb) {
  const int r = pb->st.r, T = tw_cpu_threads(pb);
  int R = tw_cpu_default_tile(r, pb->g.N[1], pb->g.N[2], T, tw_cpu_cache_bytes(2), tw_cpu_l3_share(T));
  if (pb->device_memory) {
    tw_window_need need;
    tw_window_cpu_need(pb, 1, TW_CPU_HEIGHT, &need);
    if (pb->device_memory < need.whole_bytes) R = TW_CPU_TILE_WINDOW;
  }
  /* R / r rounded down, but not below the floor (order 6: R = 8 → dts 3, not 2) */
  int d = R / r;
  if (d * r < TW_CPU_TILE_MIN) d = (TW_CPU_TILE_MIN + r - 1) / r;
  return d > 1 ? d : 1;
}

/* The L3 the threads can count on (the tile rule's R₃): the one sysfs gives, but at most 10× the
 * threads' L2 and at most 64 MiB: an L3 serves a whole socket, and a VM of a few cores sees its
 * host's whole L3 (480 MiB on the 2-core Xeon of sessions 27–29: 40 MiB counted for 2 threads). */
#define TW_CPU_L3_MAX (64L << 20)
long tw_cpu_l3_share(int threads) {
  const long l3 = tw_cpu_cache_bytes(3), l2 = tw_cpu_cache_bytes(2);
  long share = 10L * (threads > 0 ? threads : 1) * l2;
  if (share > TW_CPU_L3_MAX) share = TW_CPU_L3_MAX;
  return l3 < share ? l3 : share;
}

/* "auto" without a GPU: cpu-diamond where its towers keep every thread busy at the smallest tile
 * (a stage has ~N1 / 2R towers; R = 8: N1 ≥ 16 T); else cpu, and cpu under solver.device_memory
 * (cpu-diamond would slide a window that `cpu` does not need). Both give the same bits.
 * Since session 29 (the L2 towers, 64-byte columns) the towers ran at least as fast as `cpu` at every
 * size measured where a thread has 16 columns: on the 2-core Xeon (2 threads, bench, orders 2 / 8)
 * 32³ 1.4× / 1.1–1.2×, 64³ 1.3× / 1.13–1.16×, 96³ 1.3× / 1.06×, 128³ 1.41–1.46× / 1.11–1.13×, 192³
 * 1.52–1.59× / 1.21–1.24×, 256³ 2.4× / 1.6×; on the 16-core Xeon host with 8 threads 96³ (N1 < 16 T)
 * 0.99–1.07×, 128³ 1.13–1.21× / 1.09–1.18×, 192³ 1.14–1.15× / 1.09–1.14×; with 16 threads `cpu` won
 * below N1 = 16 T (96³ 1.2–2×, 128³ mixed, 192³ 1.03–1.08×), cpu-diamond from 256³ (1.18–1.29× /
 * 1.23–1.25×).
 * Before, the rule also asked for fields over twice the L3 share (tw_cpu_l3_share, 80 MB here),
 * from a Zen 4 (sessions 13–14: `cpu` as fast or up to 15 % faster at order 8 up to ~36 MB, with the
 * tiles and 32-byte columns of then; not measured since). */
int tw_cpu_auto_diamond(const tw_job *job, char *why, size_t n) {
  if (job->device_memory) {
    if (why) snprintf(why, n, "solver.device_memory is set (cpu-diamond would slide a window)");
    return 0;
  }
  tw_grid g;
  tw_grid_oriented(job, &g);
  const int T = tw_cpu_threads_of(job->threads);
  if (g.N[1] < 16 * T) {
    if (why)
      snprintf(why, n, "%d columns across give too few towers for %d threads (cpu-diamond wants >= 16 "
               "a thread)", g.N[1], T);
    return 0;
  }
  if (why) snprintf(why, n, "%d columns across give towers to all %d threads (>= 16 a thread)", g.N[1], T);
  return 1;
}

tw_status tw_cpu_diamond_params(const tw_problem *pb, int *dts, int *nt, tw_error *err) {
  const int d = pb->dts ? pb->dts : cpu_default_dts(pb);
  return tw_schedule_params(pb->order, d, pb->tower_height ? pb->tower_height : TW_CPU_HEIGHT, dts, nt, err);
}

/* Whether the ring of tower height h fits the cap (tw_window_fit_height). */
struct fit_ctx {
  const tw_problem *pb;
  int dts;
};
static int ring_fits(void *ctx, int h) {
  const struct fit_ctx *c = ctx;
  tw_window_need need;
  tw_window_cpu_need(c->pb, c->dts, h, &need);
  return need.min_bytes <= c->pb->device_memory;
}

tw_status tw_cpu_diamond_plan(const tw_problem *pb, int *dts, int *nt, int *nt_default, int *W, tw_error *err) {
  *nt_default = 0, *W = 0;
  tw_status st = tw_cpu_diamond_params(pb, dts, nt, err);
  /* a cap too small for the default height's ring: the tallest height that fits */
  struct fit_ctx fc = {pb, *dts};
  if (!st && !pb->tower_height && pb->device_memory && !ring_fits(&fc, *nt)) {
    const int h = tw_window_fit_height(*nt, ring_fits, &fc);
    *nt_default = *nt, *nt = h ? h : 1; /* none fits: height 1, whose ring the error names */
  }
  if (!st) st = tw_window_cpu_size(pb, *dts, *nt, pb->device_memory, W, err);
  return st;
}

static tw_status dia_create(const tw_problem *pb, void **state, tw_error *err) {
  dia_state *s = calloc(1, sizeof *s);
  if (!s) return tw_error_set(err, TW_ENOMEM, "out of memory");
  s->pb = pb;
  int W = 0;
  tw_status st = tw_cpu_diamond_plan(pb, &s->dts, &s->nt, &s->nt_default, &W, err);
  if (!st) st = tw_cpu_fields_create(pb, 0, pb->g.N[0], tw_cpu_tower_align(pb->g.N[2], pb->st.r), &s->host, err);
  if (!st && W) {
    st = tw_window_create(pb, &s->host, W, &s->win, err);
    s->windowed = !st;
  }
  if (st) {
    dia_destroy(s);
    return st;
  }
  *state = s;
  return TW_OK;
}

/* One tower (centre k of stage s) through the block's local steps; level t0 + τ → t0 + τ + 1. */
static void run_tower(const tw_problem *pb, tw_cpu_fields *f, const tw_schedule *sc, int s, int k, long t0,
                      const tw_tap_sink *sink) {
  for (int tau = 0; tau < sc->nt; tau++) {
    const long n = t0 + tau;
    int x0, x1;
    tw_tower_rows(sc, s, tau, &x0, &x1);
    for (int x = x0; x < x1; x++) {
      int y0, y1;
      tw_tower_row_y(sc, s, k, tau, x, &y0, &y1);
      if (y0 < y1) tw_cpu_update_row(pb, f, x, y0, y1, n, sink);
      if (f->wrap) tw_cpu_ring_sync_row(f, x, y0, y1, (int)((n + 1) % 2));
    }
  }
}

/* The stages of one block, run by every thread of the enclosing parallel region (orphaned
 * worksharing loops): their implicit barriers separate the copies in, the stage's towers, and
 * the copies back, so stage s − 1 starts only when stage s is complete. */
static void run_stages(const tw_problem *pb, tw_cpu_fields *f, tw_window *w, const tw_schedule *sc, long t0,
                       const tw_tap_sink *sink) {
  for (int s = sc->s_hi; s >= sc->s_lo; s--) {
    int lo, hi;
    if (w) {
      tw_window_in_planes(sc, s, &lo, &hi);
#pragma omp for schedule(static)
      for (int x = lo; x < hi; x++) tw_window_copy_in(w, sc, x);
    }
    const int ntow = tw_stage_towers(sc, s);
#pragma omp for schedule(static)
    for (int i = 0; i < ntow; i++) run_tower(pb, f, sc, s, tw_stage_tower_k(sc, s, i), t0, sink);
    if (w) {
      tw_window_out_planes(sc, s, &lo, &hi);
#pragma omp for schedule(static)
      for (int x = lo; x < hi; x++) tw_window_copy_out(w, sc, x);
    }
  }
}

/* The towers of one block in core, each an OpenMP task that starts once its parents
 * (tw_tower_preds) are done, instead of stage by stage: a thread that finishes its share of a
 * stage takes towers of the next ones instead of waiting at the stage's barrier (a stage has
 * ~N1 / 2R towers, clipped ones at its ends: with two threads and barriers 12 % of the CPU time
 * was spent waiting, order 8, 256³; docs/performance.md, session 14). One dependence token per
 * tower; a parent the block does not have is `none`, which no task writes. Created in stage
 * order by one thread, so the order without OpenMP is the stage order. */
static void run_towers(const tw_problem *pb, tw_cpu_fields *f, const tw_schedule *sc, long t0,
                       const tw_tap_sink *sink, char *tok) {
  const int nk = sc->kmax + 1;
  char none = 0;
  (void)none;
#pragma omp single
  for (int s = sc->s_hi; s >= sc->s_lo; s--)
    for (int i = 0; i < tw_stage_towers(sc, s); i++) {
      const int k = tw_stage_tower_k(sc, s, i);
      int ps[2], pk[2];
      const int np = tw_tower_preds(sc, s, k, ps, pk);
      char *me = tok + (size_t)(s - sc->s_lo) * nk + k;
      char *a = np > 0 ? tok + (size_t)(ps[0] - sc->s_lo) * nk + pk[0] : &none;
      char *b = np > 1 ? tok + (size_t)(ps[1] - sc->s_lo) * nk + pk[1] : &none;
      (void)a, (void)b, (void)me;
#pragma omp task default(shared) firstprivate(s, k) depend(in : *a, *b) depend(out : *me)
      run_tower(pb, f, sc, s, k, t0, sink);
    }
}

/* One block of height sc->nt from level t0, in one parallel region: stage by stage through the
 * window (its copies are per stage), else as tasks (run_towers; stage by stage when the token
 * array cannot be had). */
static void run_block(dia_state *st, const tw_schedule *sc, long t0, const tw_tap_sink *sink) {
  const tw_problem *pb = st->pb;
  tw_window *w = st->windowed ? &st->win : NULL;
  tw_cpu_fields *f = w ? &w->ring : &st->host;
  char *tok = w ? NULL : calloc((size_t)(sc->s_hi - sc->s_lo + 1) * (sc->kmax + 1), 1);
  tw_cpu_flush_denormals(); /* the calling thread too, when OpenMP is off */
#pragma omp parallel num_threads(tw_cpu_threads(pb))
  {
    tw_cpu_flush_denormals(); /* in every thread, as the cpu backend does: both must flush alike */
    if (tok) run_towers(pb, f, sc, t0, sink, tok);
    else run_stages(pb, f, w, sc, t0, sink);
  }
  free(tok);
}

static tw_status dia_advance(void *state, long t0, long n, float *taps, tw_error *err) {
  dia_state *s = state;
  const tw_problem *pb = s->pb;
  long first, count;
  (void)err;
  tw_samples_in(pb, t0, n, &first, &count);
  const tw_tap_sink sink = {taps, first};
  for (long done = 0; done < n;) {
    tw_schedule sc;
    const int h = tw_block_height(done, n, s->nt);
    tw_schedule_init(&sc, pb->g.N[0], pb->g.N[1], pb->st.r, s->dts, h);
    run_block(s, &sc, t0 + done, &sink);
    done += h;
  }
  s->level = t0 + n;
  s->dirty = 1;
  return TW_OK;
}

/* The tables are read from the problem in every column update: a reset is the fields alone (the
 * ring too, so that nothing differs from a fresh backend, though every plane is copied in before
 * it is read). */
static tw_status dia_reset(void *state, unsigned what, tw_error *err) {
  dia_state *s = state;
  (void)what, (void)err;
  if (s->dirty) {
    tw_cpu_fields_zero(&s->host);
    if (s->windowed) tw_cpu_fields_zero(&s->win.ring);
  }
  s->win.planes_in = s->win.planes_out = 0; /* the report counts one shot */
  s->win.bytes_in = s->win.bytes_out = 0;
  s->level = 0;
  s->dirty = 0;
  return TW_OK;
}

static tw_status dia_extract(void *state, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err) {
  dia_state *s = state;
  (void)err;
  tw_cpu_extract(&s->host, (int)(s->level % 2), lo, cnt, dec, out);
  return TW_OK;
}

/* With a window too, the host copy is the whole field at a block boundary (every plane went back). */
static tw_status dia_save(void *state, int x0, int nx, float *cur, float *prev, tw_error *err) {
  dia_state *s = state;
  (void)err;
  tw_cpu_planes(&s->host, &s->pb->g, s->level, x0, nx, cur, prev, 0);
  return TW_OK;
}

static tw_status dia_load(void *state, long t, int x0, int nx, const float *cur, const float *prev, tw_error *err) {
  dia_state *s = state;
  (void)err;
  tw_cpu_planes(&s->host, &s->pb->g, t, x0, nx, (float *)cur, (float *)prev, 1); /* load: read only */
  s->level = t;
  s->dirty = 1;
  return TW_OK;
}

static long dia_block_steps(void *state) { return ((dia_state *)state)->nt; }

/* At a block boundary the host copy is whole, window or not (as for snapshots). */
static tw_status dia_find_nonfinite(void *state, long long *count, int cell[3], tw_error *err) {
  dia_state *s = state;
  (void)err;
  *count = tw_cpu_find_nonfinite(&s->host, (int)(s->level % 2), cell);
  return TW_OK;
}

static void dia_report(void *state, tw_run_report *rep) {
  dia_state *s = state;
  if (!s->windowed) return;
  rep->window_planes = s->win.W;
  rep->planes_in = s->win.planes_in;
  rep->planes_out = s->win.planes_out;
  rep->bytes_in = s->win.bytes_in;
  rep->bytes_out = s->win.bytes_out;
  char cap[32];
  tw_format_bytes((double)s->pb->device_memory, cap, sizeof cap);
  char lowered[64] = "";
  if (s->nt_default) snprintf(lowered, sizeof lowered, ", the default %d lowered to fit the cap", s->nt_default);
  snprintf(rep->note, sizeof rep->note, "sliding window of %d x-planes: the grid does not fit solver.device_memory "
           "= %s (dts %d, tower height %d%s)", s->win.W, cap, s->dts, s->nt, lowered);
}

const tw_backend_ops tw_backend_cpu_diamond = {
    .name = "cpu-diamond",
    .needs_gpu = 0,
    .create = dia_create,
    .advance = dia_advance,
    .extract = dia_extract,
    .block_steps = dia_block_steps,
    .reset = dia_reset,
    .report = dia_report,
    .destroy = dia_destroy,
    .save = dia_save,
    .load = dia_load,
    .find_nonfinite = dia_find_nonfinite,
};
