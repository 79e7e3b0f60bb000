/* test_schedule — the DiamondTorre geometry (solver/plan/schedule.h) replayed on small grids of
 * columns with a time-level shadow per cell and array (the TW_DEBUG_LEVELS idea, here in the
 * test with its own tiny bookkeeping instead of the field update):
 *   - every read sees the level the update needs: x/y neighbours within r at level n in array
 *     n % 2, the cell itself at level n − 1 in array (n + 1) % 2;
 *   - every column is updated exactly once per step (the old value must be n − 1: a second
 *     update would see n + 1; after the block every cell is at t0 + h);
 *   - no two towers of one stage touch one (cell, array) where one of them writes (they run
 *     concurrently);
 *   - the stage and tower ranges are tight (the stage/tower just outside has no cell);
 *   - towers run as soon as their parents are done (tw_tower_preds: cpu-diamond's tasks,
 *     gpu-diamond's persistent grid): a random order that respects the parents gives the same
 *     levels, and two towers that the parents leave unordered (neither an ancestor of the other)
 *     never touch one (cell, array) where one of them writes — they may run at the same time;
 *   - negative controls: stages in increasing s, a tower's steps in the wrong order, two stages at
 *     once, or a parent left out, are caught.
 * The replay walks the schedule as cpu_diamond.c does (stages or tasks, towers, τ, rows x, y). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "schedule.h"
#include "tw_solver.h"
#include "tw_test.h"


/* Towers as tasks (replay_block_dataflow): for each (cell, array) the last writer and the readers
 * since, and each tower's ancestors through its parents. An access that conflicts with an earlier
 * one of a tower that is not its ancestor could happen at the same time: a race. */
enum { MAXREAD = 32 };
typedef struct {
  int words;                 /* 64-bit words per ancestor set */
  uint64_t *anc;             /* [tower][words] */
  int *wr[2], *nrd[2], *rd[2];
} dataflow;

typedef struct {
  int N0, N1, r;
  long *lvl[2];              /* level held by array a at column x·N1 + y */
  int *wr_tower[2], *wr_stage[2], *rd_tower[2], *rd_stage[2], *rd_multi[2];
  long updates;
  int stage_id;              /* unique per stage replayed (stage numbers repeat across blocks) */
  long bad_level, bad_race;  /* violations seen */
  dataflow *df;              /* set while a block replays as tasks: the race check is df's */
} shadow;

static void shadow_init(shadow *sh, int N0, int N1, int r, long t0) {
  memset(sh, 0, sizeof *sh);
  sh->N0 = N0, sh->N1 = N1, sh->r = r;
  const size_t n = (size_t)N0 * N1;
  for (int a = 0; a < 2; a++) {
    sh->lvl[a] = malloc(n * sizeof(long));
    sh->wr_tower[a] = malloc(n * sizeof(int));
    sh->wr_stage[a] = malloc(n * sizeof(int));
    sh->rd_tower[a] = malloc(n * sizeof(int));
    sh->rd_stage[a] = malloc(n * sizeof(int));
    sh->rd_multi[a] = malloc(n * sizeof(int));
    for (size_t c = 0; c < n; c++) {
      sh->wr_stage[a][c] = sh->rd_stage[a][c] = -1000000000;
      sh->lvl[a][c] = (t0 % 2 == a) ? t0 : t0 - 1; /* level m lives in array m % 2 */
    }
  }
}

static void shadow_free(shadow *sh) {
  for (int a = 0; a < 2; a++) {
    free(sh->lvl[a]), free(sh->wr_tower[a]), free(sh->wr_stage[a]);
    free(sh->rd_tower[a]), free(sh->rd_stage[a]), free(sh->rd_multi[a]);
  }
}

static int is_ancestor(const dataflow *df, int t, int p) { return (df->anc[(size_t)t * df->words + p / 64] >> (p % 64)) & 1; }

/* Tasks: a conflicting access of another tower must come from an ancestor of this one. */
static void note_access_dataflow(shadow *sh, int t, int a, size_t c, int write) {
  dataflow *df = sh->df;
  const int w = df->wr[a][c];
  int *rd = df->rd[a] + c * MAXREAD, *nrd = &df->nrd[a][c];
  if (w >= 0 && w != t && !is_ancestor(df, t, w)) sh->bad_race++;
  if (write) {
    for (int q = 0; q < *nrd; q++)
      if (rd[q] != t && !is_ancestor(df, t, rd[q])) sh->bad_race++;
    df->wr[a][c] = t, *nrd = 0;
    return;
  }
  for (int q = 0; q < *nrd; q++)
    if (rd[q] == t) return; /* each reading tower once */
  if (*nrd < MAXREAD) rd[(*nrd)++] = t;
  else sh->bad_race++; /* more readers than the test keeps: fails loudly */
}

/* Record an access of tower `tw` of stage (id) s to (cell c, array a); flag a write/read or
 * write/write pair between different towers of the stage (or, as tasks, towers not ordered by
 * their parents). */
static void note_access(shadow *sh, int s, int tw, int a, size_t c, int write) {
  if (sh->df) {
    note_access_dataflow(sh, tw, a, c, write);
    return;
  }
  if (write) {
    if (sh->wr_stage[a][c] == s && sh->wr_tower[a][c] != tw) sh->bad_race++;
    if (sh->rd_stage[a][c] == s && (sh->rd_tower[a][c] != tw || sh->rd_multi[a][c])) sh->bad_race++;
    sh->wr_stage[a][c] = s, sh->wr_tower[a][c] = tw;
  } else {
    if (sh->wr_stage[a][c] == s && sh->wr_tower[a][c] != tw) sh->bad_race++;
    if (sh->rd_stage[a][c] != s) sh->rd_stage[a][c] = s, sh->rd_tower[a][c] = tw, sh->rd_multi[a][c] = 0;
    else if (sh->rd_tower[a][c] != tw) sh->rd_multi[a][c] = 1;
  }
}

/* The update of column (x, y) from level n to n + 1, as tw_cpu_update_row does it for one column. */
static void update(shadow *sh, int s, int tw, int x, int y, long n) {
  const int cur = (int)(n % 2), old = (int)((n + 1) % 2), N0 = sh->N0, N1 = sh->N1;
  for (int m = -sh->r; m <= sh->r; m++) {
    const int nb[2][2] = {{x + m, y}, {x, y + m}};
    for (int e = 0; e < 2; e++) {
      const int i = nb[e][0], j = nb[e][1];
      if (i < 0 || i >= N0 || j < 0 || j >= N1) continue; /* outside: p = 0, nothing to check */
      const size_t c = (size_t)i * N1 + j;
      if (sh->lvl[cur][c] != n) sh->bad_level++;
      note_access(sh, s, tw, cur, c, 0);
    }
  }
  const size_t c = (size_t)x * N1 + y;
  if (sh->lvl[old][c] != n - 1) sh->bad_level++;
  note_access(sh, s, tw, old, c, 0);
  note_access(sh, s, tw, old, c, 1);
  sh->lvl[old][c] = n + 1;
  sh->updates++;
}

enum { FORWARD = 0, STAGES_UP = 1, STEPS_DOWN = 2, PAIRS_CONCURRENT = 3 };

/* Tower k of stage s through the block's steps (in reverse: a negative control), its rows and columns,
 * as cpu_diamond.c's run_tower walks them. */
static void replay_tower(shadow *sh, const tw_schedule *sc, int s, int k, long t0, int id, int tw, int reverse) {
  for (int u = 0; u < sc->nt; u++) {
    const int tau = reverse ? sc->nt - 1 - u : u;
    int x0, x1;
    tw_tower_rows(sc, s, tau, &x0, &x1);
    for (int x = x0; x < x1; x++) {
      int y0, y1;
      tw_tower_row_y(sc, s, k, tau, x, &y0, &y1);
      for (int y = y0; y < y1; y++) update(sh, id, tw, x, y, t0 + tau);
    }
  }
}

/* One block from level t0, walking the schedule like cpu_diamond.c; `mode` breaks it on purpose. */
static void replay_block(shadow *sh, const tw_schedule *sc, long t0, int mode) {
  const int nst = sc->s_hi - sc->s_lo + 1;
  for (int e = 0; e < nst; e++) {
    const int s = mode == STAGES_UP ? sc->s_lo + e : sc->s_hi - e;
    /* PAIRS_CONCURRENT: two consecutive stages treated as one concurrent group */
    const int id = mode == PAIRS_CONCURRENT && e % 2 ? sh->stage_id : ++sh->stage_id;
    for (int i = 0; i < tw_stage_towers(sc, s); i++)
      replay_tower(sh, sc, s, tw_stage_tower_k(sc, s, i), t0, id, mode == PAIRS_CONCURRENT ? 2 * i + e % 2 : i,
                   mode == STEPS_DOWN);
  }
}

/* Towers in a random order that respects tw_tower_preds (less the first parent of each tower when
 * `drop`: the negative control), replayed one after the other. Levels are checked by update(); a
 * (cell, array) touched by two towers, one of them writing, must be touched first by an ancestor of
 * the other (through parents), else the two could run at once: bad_race (note_access_dataflow). */
static void replay_block_dataflow(shadow *sh, const tw_schedule *sc, long t0, int drop) {
  const int nk = sc->kmax + 1, nst = sc->s_hi - sc->s_lo + 1;
  int *id = malloc(sizeof(int) * (size_t)nst * nk), n = 0;
  for (int i = 0; i < nst * nk; i++) id[i] = -1; /* (s, k) with no tower */
  int (*tw)[2] = malloc(sizeof(int[2]) * (size_t)nst * nk);
  for (int s = sc->s_hi; s >= sc->s_lo; s--)
    for (int i = 0; i < tw_stage_towers(sc, s); i++) {
      const int k = tw_stage_tower_k(sc, s, i);
      id[(s - sc->s_lo) * nk + k] = n;
      tw[n][0] = s, tw[n][1] = k, n++;
    }
  /* parents, children, and ancestor sets (parents are on larger stages: numbered earlier) */
  dataflow df = {(n + 63) / 64, NULL, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
  df.anc = calloc((size_t)n * df.words + 1, sizeof(uint64_t));
  int *npar = calloc((size_t)n + 1, sizeof(int)), (*child)[4] = malloc(sizeof(int[4]) * ((size_t)n + 1));
  int *nchild = calloc((size_t)n + 1, sizeof(int));
  for (int t = 0; t < n; t++) {
    int ps[2], pk[2];
    const int np = tw_tower_preds(sc, tw[t][0], tw[t][1], ps, pk);
    for (int j = drop ? 1 : 0; j < np; j++) {
      const int in = ps[j] >= sc->s_lo && ps[j] <= sc->s_hi && pk[j] >= 0 && pk[j] < nk;
      const int p = in ? id[(ps[j] - sc->s_lo) * nk + pk[j]] : -1;
      CHECK(p >= 0 && p < t, "parent (%d, %d) of (%d, %d) is not an earlier tower of the block", ps[j], pk[j],
            tw[t][0], tw[t][1]);
      if (p < 0 || p >= t) continue;
      df.anc[(size_t)t * df.words + p / 64] |= 1ull << (p % 64);
      for (int w = 0; w < df.words; w++) df.anc[(size_t)t * df.words + w] |= df.anc[(size_t)p * df.words + w];
      npar[t]++;
      child[p][nchild[p]++] = t;
    }
  }
  const size_t cells = (size_t)sh->N0 * sh->N1;
  for (int a = 0; a < 2; a++) {
    df.wr[a] = malloc(sizeof(int) * cells), df.nrd[a] = calloc(cells, sizeof(int));
    df.rd[a] = malloc(sizeof(int) * cells * MAXREAD);
    for (size_t c = 0; c < cells; c++) df.wr[a][c] = -1;
  }
  sh->df = &df;
  /* the random order: a ready tower at random, until none is left */
  int *ready = malloc(sizeof(int) * ((size_t)n + 1)), nready = 0;
  for (int t = 0; t < n; t++)
    if (!npar[t]) ready[nready++] = t;
  for (int done = 0; done < n; done++) {
    CHECK(nready > 0, "dataflow: no ready tower with %d of %d done", done, n);
    if (!nready) break;
    const int pick = (int)(tw_rnd() % (unsigned)nready), t = ready[pick];
    ready[pick] = ready[--nready];
    replay_tower(sh, sc, tw[t][0], tw[t][1], t0, -1, t, 0);
    for (int q = 0; q < nchild[t]; q++)
      if (--npar[child[t][q]] == 0) ready[nready++] = child[t][q];
  }
  sh->df = NULL;
  for (int a = 0; a < 2; a++) free(df.wr[a]), free(df.nrd[a]), free(df.rd[a]);
  free(ready), free(nchild), free(child), free(npar), free(df.anc), free(tw), free(id);
}

/* Columns a tower k (or, with whole, every tower of the stage, in range or not) has in the grid
 * over the block. */
static long cells_of(const tw_schedule *sc, int s, int k, int whole) {
  long n = 0;
  for (int tau = 0; tau < sc->nt; tau++) {
    int x0, x1;
    tw_tower_rows(sc, s, tau, &x0, &x1);
    for (int x = x0; x < x1; x++) {
      int kk0 = k, kk1 = k;
      if (whole) kk0 = -4, kk1 = sc->kmax + 4;
      for (int kk = kk0; kk <= kk1; kk++) {
        if (((kk - s) % 2 + 2) % 2) continue;
        int y0, y1;
        tw_tower_row_y(sc, s, kk, tau, x, &y0, &y1);
        if (y1 > y0) n += y1 - y0;
      }
    }
  }
  return n;
}

static long dataflow_blocks;

/* Several blocks of random heights (the last one of each call shorter) on one grid. */
static void check_grid(int N0, int N1, int r, int dts, int nt, long steps) {
  shadow sh;
  const long t_start = tw_rnd_in(1, 5);
  shadow_init(&sh, N0, N1, r, t_start);
  long t = t_start;
  int tight = 1;
  for (long done = 0; done < steps;) {
    tw_schedule sc;
    const int h = tw_block_height(done, steps, nt);
    tw_schedule_init(&sc, N0, N1, r, dts, h);
    /* stages s_hi + 1 and s_lo − 1 have no column in the grid; s_hi and s_lo have rows in it
     * (on a grid narrower than R in y their few cells can miss it: a harmless empty stage);
     * towers k just outside [0, kmax] have no column */
    int x0, x1, x2, x3;
    tw_tower_rows(&sc, sc.s_hi, 0, &x0, &x1);
    tw_tower_rows(&sc, sc.s_lo, h - 1, &x2, &x3);
    tight &= cells_of(&sc, sc.s_hi + 1, 0, 1) == 0 && cells_of(&sc, sc.s_lo - 1, 0, 1) == 0;
    tight &= x0 < x1 && x2 < x3;
    for (int s = sc.s_lo; s <= sc.s_hi; s++) {
      const int par = ((s % 2) + 2) % 2, nto = tw_stage_towers(&sc, s);
      tight &= cells_of(&sc, s, par - 2, 0) == 0 && cells_of(&sc, s, par + 2 * nto, 0) == 0;
    }
    const long before = sh.updates;
    /* stage by stage, or as tasks (cpu-diamond in core), at random per block */
    if (tw_rnd() % 2) replay_block(&sh, &sc, t, FORWARD);
    else replay_block_dataflow(&sh, &sc, t, 0), dataflow_blocks++;
    t += h;
    done += h;
    /* exactly once per step: N0·N1·h updates, every cell at t in one array and t − 1 in the other */
    CHECK(sh.updates - before == (long)N0 * N1 * h, "grid %dx%d r %d dts %d h %d: %ld updates, want %ld", N0, N1,
          r, dts, h, sh.updates - before, (long)N0 * N1 * h);
    long off = 0;
    for (size_t c = 0; c < (size_t)N0 * N1; c++) off += sh.lvl[t % 2][c] != t || sh.lvl[(t + 1) % 2][c] != t - 1;
    CHECK(off == 0, "grid %dx%d r %d dts %d h %d: %ld cells not at level %ld after the block", N0, N1, r, dts, h,
          off, t);
  }
  CHECK(tight, "grid %dx%d r %d dts %d nt %d: stage or tower range not tight", N0, N1, r, dts, nt);
  CHECK(sh.bad_level == 0, "grid %dx%d r %d dts %d nt %d: %ld reads of the wrong level", N0, N1, r, dts, nt,
        sh.bad_level);
  CHECK(sh.bad_race == 0, "grid %dx%d r %d dts %d nt %d: %ld conflicting accesses between towers of a stage", N0,
        N1, r, dts, nt, sh.bad_race);
  shadow_free(&sh);
}

/* Towers as tasks with the first parent of each left out must trip the shadow: on a grid with
 * several tower columns, and on one with a single column (kmax = 0, whose one parent is two
 * stages up). Several random orders each, since one order may happen to respect the lost parent. */
static void negative_dataflow(int N0, int N1, int r, int dts, int nt, const char *what) {
  long bad = 0, races = 0;
  for (int rep = 0; rep < 8; rep++) {
    shadow sh;
    tw_schedule sc;
    shadow_init(&sh, N0, N1, r, 1);
    tw_schedule_init(&sc, N0, N1, r, dts, nt);
    replay_block_dataflow(&sh, &sc, 1, 1);
    bad += sh.bad_level, races += sh.bad_race;
    shadow_free(&sh);
  }
  /* the race check flags the towers the lost parent leaves unordered whatever the order drawn */
  CHECK(races > 0, "negative control (a parent left out, %s) not caught", what);
  printf("negative control (a parent left out, %s): caught, %ld races (and %ld bad reads)\n", what, races, bad);
}

/* A wrongly ordered schedule must trip the shadow. */
static void negative_control(int mode, const char *what) {
  shadow sh;
  tw_schedule sc;
  shadow_init(&sh, 13, 11, 2, 1);
  tw_schedule_init(&sc, 13, 11, 2, 1, 4);
  replay_block(&sh, &sc, 1, mode);
  const long bad = mode == PAIRS_CONCURRENT ? sh.bad_race : sh.bad_level;
  CHECK(bad > 0, "negative control (%s) not caught", what);
  printf("negative control (%s): caught, %ld %s\n", what, bad, mode == PAIRS_CONCURRENT ? "races" : "bad reads");
  shadow_free(&sh);
}

static void check_params(void) {
  int d, nt;
  tw_error err = {0};
  for (int order = 2; order <= 16; order += 2) {
    CHECK(tw_schedule_params(order, 0, 0, &d, &nt, &err) == TW_OK, "order %d defaults: %s", order, err.msg);
    CHECK(d == tw_default_dts(order) && nt == tw_default_tower_height(order), "order %d: defaults not used", order);
    CHECK(d >= 1 && nt >= 1, "order %d: default dts %d, tower height %d", order, d, nt);
  }
  CHECK(tw_schedule_params(8, 3, 17, &d, &nt, &err) == TW_OK && d == 3 && nt == 17, "explicit values not kept");
  CHECK(tw_schedule_params(8, -1, 0, &d, &nt, &err) != TW_OK && strstr(err.msg, "solver.dts"), "dts −1: %s",
        err.msg);
  CHECK(tw_schedule_params(8, 0, -5, &d, &nt, &err) != TW_OK && strstr(err.msg, "solver.tower_height"),
        "tower height −5: %s", err.msg);
  CHECK(tw_schedule_params(8, 100, 0, &d, &nt, &err) != TW_OK && strstr(err.msg, "solver.dts"), "dts 100: %s",
        err.msg);
  CHECK(tw_schedule_params(2, 0, 1 << 20, &d, &nt, &err) != TW_OK && strstr(err.msg, "solver.tower_height"),
        "tower height 2^20: %s", err.msg);
  CHECK(tw_schedule_params(3, 0, 0, &d, &nt, &err) != TW_OK && strstr(err.msg, "order"), "order 3: %s", err.msg);
}

/* tw_schedule_parallelism against the tower DAG itself: every tower's longest chain of
 * predecessors (tw_tower_preds), each tower weighted by its active steps (tw_tower_steps), from
 * the first stage down; the block's tower-steps over the longest chain must be the function's value
 * (sums of integers: exact). */
static long parallelism_bad, parallelism_cases;
static void check_parallelism(int N0, int N1, int r, int dts, int nt) {
  tw_schedule sc;
  tw_schedule_init(&sc, N0, N1, r, dts, nt);
  const int ns = sc.s_hi - sc.s_lo + 1, nk = sc.kmax + 1;
  double *L = calloc((size_t)ns * nk, sizeof *L), all = 0.0, chain = 0.0;
  for (int s = sc.s_hi; s >= sc.s_lo; s--) {
    int lo, hi;
    tw_tower_steps(sc.R, sc.r, s, N0, nt, &lo, &hi);
    const int steps = hi > lo ? hi - lo : 0;
    for (int i = 0; i < tw_stage_towers(&sc, s); i++) {
      const int k = tw_stage_tower_k(&sc, s, i);
      int ps[2], pk[2];
      const int np = tw_tower_preds(&sc, s, k, ps, pk);
      double m = 0.0;
      for (int j = 0; j < np; j++)
        m = L[(size_t)(sc.s_hi - ps[j]) * nk + pk[j]] > m ? L[(size_t)(sc.s_hi - ps[j]) * nk + pk[j]] : m;
      L[(size_t)(sc.s_hi - s) * nk + k] = m + steps;
      chain = m + steps > chain ? m + steps : chain;
      all += steps;
    }
  }
  free(L);
  const double want = chain > 0 ? all / chain : 0.0, got = tw_schedule_parallelism(&sc);
  parallelism_cases++;
  if (got != want && parallelism_bad++ < 5)
    CHECK(0, "parallelism of %d x %d, r %d, dts %d, h %d: %.6g, the DAG's %.6g", N0, N1, r, dts, nt, got, want);
}

/* tw_gpu_tower_share at the grids of docs/performance.md, sessions 32, 35 and 36 (H200, order 2,
 * dts 3, h 128, the band buffers dia_init takes, layers of 20; each grid in the frame of its sweep:
 * N0 along it, N1 across): its share of the Nz table's gain must give the tower's measured rate over
 * gpu-stepwise's within 10 %, pick the kernel that measured faster, and blocks an SM whose rate was
 * within 2 % of the fastest count's among those run (the count it picks must have been run).
 * Session 35 (`bench` 256 steps, the x sweep): Nz 200–512, 1–2 blocks an SM fit; session 36 (32
 * steps): Nz 64–128, 4 or 8 fit, the x sweep forced on 4096 x N1 (call 2), and five other grids in
 * the sweep `auto` took (calls 3 and 5). */
static void check_share(void) {
  static const struct {
    int n0, n1, nz, bmax;
    double stepwise, tower[8]; /* Gcell/s measured: gpu-stepwise, the tower at 1 … bmax blocks an SM (0: not run) */
    double btol;               /* the chosen count's rate over the fastest's at least this (0: 0.98) */
  } m[] = {{2048, 1024, 256, 2, 244.8, {371.4, 376.7}, 0},
           {2048, 512, 256, 2, 264.8, {227.6, 196.0}, 0},
           {4096, 256, 256, 2, 263.3, {115.2, 100.6}, 0},
           {2048, 384, 512, 1, 240.1, {237.0}, 0},
           {1024, 1024, 512, 1, 245.0, {539.8}, 0},
           {2048, 1024, 512, 1, 254.8, {543.0}, 0},
           {1536, 768, 256, 2, 250.3, {331.5, 287.1}, 0},
           {2048, 640, 384, 1, 246.1, {358.7}, 0},
           {3000, 900, 200, 2, 214.8, {289.8, 261.1}, 0},
           {4000, 300, 400, 1, 224.2, {163.3}, 0},
           {2048, 1536, 256, 2, 251.4, {371.5, 523.0}, 0},
           {4096, 1024, 128, 4, 265.48, {186.53, 195.00, 176.98, 170.56}, 0},
           {4096, 2048, 128, 4, 262.98, {186.70, 339.40, 338.86, 319.37}, 0},
           {4096, 3072, 128, 4, 262.65, {187.07, 340.38, 437.26, 440.44}, 0},
           {4096, 4096, 128, 4, 260.27, {187.21, 340.91, 437.90, 509.67}, 0},
           {4096, 1024, 96, 4, 255.68, {139.73, 145.98, 132.72, 128.15}, 0},
           {4096, 2048, 96, 4, 252.99, {139.84, 254.26, 253.41, 239.36}, 0},
           {4096, 3072, 96, 4, 243.48, {140.04, 255.05, 327.93, 328.78}, 0},
           {4096, 4096, 96, 4, 248.24, {140.28, 255.50, 328.23, 382.10}, 0},
           {1500, 3000, 112, 4, 235.34, {0, 294.17, 376.17, 371.14}, 0},
           {2500, 2500, 128, 4, 261.97, {0, 338.40, 399.23, 371.76}, 0},
           {1536, 4096, 96, 4, 249.67, {0, 252.88, 323.89, 376.06}, 0},
           {2000, 2000, 100, 4, 214.02, {0, 263.46, 255.17, 241.33}, 0},
           {4096, 8192, 64, 8, 262.66, {0, 0, 0, 337.23, 0, 0, 471.49, 501.24}, 0.94}};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    tw_schedule sc;
    tw_schedule_init(&sc, m[i].n0, m[i].n1, 1, 3, 128);
    const int bmax = m[i].bmax;
    int b = 0;
    const double share = tw_gpu_tower_share(1, tw_schedule_parallelism(&sc), 132, bmax, &b);
    double best = 0.0;
    for (int j = 0; j < bmax; j++) best = m[i].tower[j] > best ? m[i].tower[j] : best;
    const double gain = tw_gpu_tower_gain(1, m[i].nz, 0.0) * share, meas = best / m[i].stepwise;
    CHECK((gain >= TW_TOWER_MIN_GAIN) == (meas >= 1.0), "%d x %d x %d: predicted %.2fx, measured %.2fx", m[i].n0,
          m[i].n1, m[i].nz, gain, meas);
    CHECK(fabs(gain / meas - 1.0) < 0.10, "%d x %d x %d: predicted %.2fx, measured %.2fx (off by more than 10 %%)",
          m[i].n0, m[i].n1, m[i].nz, gain, meas);
    const double at_b = b >= 1 && b <= bmax ? m[i].tower[b - 1] : 0.0;
    /* (4096 x 8192 x 64, 8 blocks of one warp fit: the one grid of bmax 8 measured; the model takes 7,
     * 6 % below 8 — its chain bound at b = 8, 0.94, where the grid kept all of the gain) */
    const double btol = m[i].btol > 0 ? m[i].btol : 0.98;
    CHECK(at_b >= btol * best,
          "%d x %d x %d: %d blocks an SM: %.1f Gcell/s measured (0: not run), %.1f at the fastest count", m[i].n0,
          m[i].n1, m[i].nz, b, at_b, best);
    printf(
        "%4d x %4d x %3d: %5.1f towers at a time, share %.2f, %d of %d blocks an SM: predicted %.2fx gpu-stepwise, "
        "measured %.2fx\n",
        m[i].n0, m[i].n1, m[i].nz, tw_schedule_parallelism(&sc), share, b, bmax, gain, meas);
  }
  /* Order 4 (session 42: dts 2, h 96, the tower forced, 32 steps x 3; 1 block an SM at Nz 129–256, 2
   * at Nz 65–128, 4 at 48–64; Nz 225–256 and 449–512, 8 warps a CTA, re-measured in session 43 with
   * the band by bulk copies): Nz 256 from 1024 to 2048 columns across, Nz 208–224 at 1024 across
   * (a share below 1), Nz 65–128 from P 160 to 512, and grids wider than the table's. Where `auto`
   * runs the tower it must have measured faster; where the tower measured 3 % faster it must run it,
   * unless the row is one the model only bounds (exact 0: 2 blocks an SM below P 320, where the chain
   * constant fitted at Nz 96 is 12 % low at Nz 128; 4 blocks an SM; over a cluster a grid shape other
   * than the lowest, 1024 x 1024); the exact rows within 10 %. Nz 352–512: the column over a cluster
   * of 2 CTAs (bmax 0: 66 clusters the workers). */
  static const struct {
    int n0, n1, nz, bmax, exact;
    double stepwise, tower;
  } m4[] = {{2048, 1024, 256, 1, 1, 246.93, 282.63}, {2048, 1280, 256, 1, 1, 250.74, 330.83},
            {2048, 1536, 256, 1, 1, 243.60, 332.15}, {2048, 2048, 256, 1, 1, 244.96, 333.33},
            {2048, 1280, 225, 1, 1, 224.41, 290.62}, {2048, 1280, 240, 1, 1, 237.17, 310.15},
            {4096, 2048, 256, 1, 0, 231.25, 335.03}, {4096, 2048, 225, 1, 0, 208.81, 294.22},
            {2048, 1024, 224, 1, 1, 237.29, 264.65}, {2048, 1024, 208, 1, 1, 222.33, 245.13},
            {2048, 2048, 208, 1, 1, 214.49, 285.73}, {4096, 2048, 224, 1, 1, 225.33, 309.87},
            {4096, 2048, 192, 1, 1, 246.66, 277.37}, {4096, 2048, 160, 1, 1, 233.74, 239.07},
            {2048, 1280, 129, 1, 1, 198.48, 190.59}, {4096, 2048, 128, 2, 0, 248.91, 237.67},
            {4096, 2560, 128, 2, 1, 251.91, 283.99}, {4096, 3072, 128, 2, 1, 250.18, 285.34},
            {4096, 4096, 128, 2, 1, 242.71, 285.84}, {2048, 2048, 128, 2, 0, 250.91, 237.16},
            {4096, 2048, 96, 2, 1, 237.65, 209.66},  {4096, 2560, 96, 2, 1, 232.55, 248.43},
            {4096, 3072, 96, 2, 1, 229.87, 264.40},  {4096, 4096, 80, 2, 1, 199.06, 218.20},
            {4096, 3072, 112, 2, 1, 224.12, 252.48}, {4096, 4096, 65, 2, 1, 163.40, 177.21},
            {2048, 1280, 128, 2, 0, 251.18, 190.74}, {4096, 4096, 64, 4, 0, 248.78, 217.81},
            {4096, 4096, 48, 4, 0, 195.78, 204.77},  {2048, 2048, 512, 0, 0, 224.55, 291.14},
            {1024, 1024, 512, 0, 1, 242.68, 285.48}, {4096, 2048, 512, 0, 0, 227.73, 292.30},
            {1024, 1024, 480, 0, 1, 228.21, 267.44}, {1024, 1024, 449, 0, 1, 214.82, 250.91},
            {2048, 1024, 512, 0, 0, 240.98, 289.59}, {2048, 1024, 449, 0, 0, 210.51, 254.09},
            {2048, 1024, 448, 0, 0, 244.54, 284.72}, {1024, 1024, 448, 0, 1, 245.87, 280.04},
            {4096, 2048, 448, 0, 0, 226.67, 288.06}, {1024, 1024, 384, 0, 1, 243.33, 252.63},
            {1024, 1024, 352, 0, 1, 232.50, 231.60}};
  for (size_t i = 0; i < sizeof m4 / sizeof m4[0]; i++) {
    tw_schedule sc;
    tw_schedule_init(&sc, m4[i].n0, m4[i].n1, 2, 2, 96);
    const int cl = m4[i].bmax == 0; /* (as dia_init: the clusters resident, one block each) */
    const double share = tw_gpu_tower_share(2, tw_schedule_parallelism(&sc), cl ? 66 : 132, cl ? 1 : m4[i].bmax, NULL);
    const double gain = tw_gpu_tower_gain(2, m4[i].nz, 0.0) * share, meas = m4[i].tower / m4[i].stepwise;
    CHECK(gain < TW_TOWER_MIN_GAIN || meas >= 1.0, "order 4, %d x %d x %d: the tower predicted %.2fx, ran %.2fx",
          m4[i].n0, m4[i].n1, m4[i].nz, gain, meas);
    if (m4[i].exact) {
      CHECK(gain >= TW_TOWER_MIN_GAIN || meas < TW_TOWER_MIN_GAIN, "order 4, %d x %d x %d: predicted %.2fx, ran %.2fx",
            m4[i].n0, m4[i].n1, m4[i].nz, gain, meas);
      CHECK(fabs(gain / meas - 1.0) < 0.10,
            "order 4, %d x %d x %d: predicted %.2fx, ran %.2fx (off by more than 10 %%)", m4[i].n0, m4[i].n1, m4[i].nz,
            gain, meas);
    }
    printf(
        "order 4, %4d x %4d x %3d: %5.1f towers at a time, share %.2f: predicted %.2fx gpu-stepwise, measured %.2fx\n",
        m4[i].n0, m4[i].n1, m4[i].nz, tw_schedule_parallelism(&sc), share, gain, meas);
  }
  /* order 4's points measured on the H200 only are not scaled for another GPU's bandwidth (Nz ≤ 128:
   * lower bounds; above 256: the cluster's), those of Nz 129–256 are (an H100: 3.35 TB/s) */
  CHECK(tw_gpu_tower_gain(2, 512, 3.35e12) == tw_gpu_tower_gain(2, 512, 0.0) &&
            tw_gpu_tower_gain(2, 300, 3.35e12) == tw_gpu_tower_gain(2, 300, 0.0) &&
            tw_gpu_tower_gain(2, 224, 3.35e12) > 1.2 * tw_gpu_tower_gain(2, 224, 0.0),
        "order 4's scaling for an H100: Nz 512 %.3f / %.3f, Nz 224 %.3f / %.3f", tw_gpu_tower_gain(2, 512, 3.35e12),
        tw_gpu_tower_gain(2, 512, 0.0), tw_gpu_tower_gain(2, 224, 3.35e12), tw_gpu_tower_gain(2, 224, 0.0));
  /* The towers' rate in calls of h steps against 32 (tw_gpu_tower_height_factor), measured on an
   * H200 (session 38, bench --steps h): order 2 dts 3 on 1024² × 512, order 4 dts 2 on 4096 × 2048 ×
   * 224 (one CTA) and on 1024² × 512 (a cluster); within 4.5 % at h 8, 3 % from h 12; 1 at h 32; a
   * call longer than the height is towers of equal height (h = L / ceil(L / nt)). */
  static const struct {
    int nt, h;
    double rel;
  } hf[] = {{128, 8, .782}, {128, 16, .921}, {128, 20, .953}, {128, 48, 1.033}, {128, 96, 1.064}, {128, 128, 1.071},
            {96, 8, .836},  {96, 16, .937},  {96, 20, .963},  {96, 48, 1.024},  {96, 96, 1.054},  {96, 12, .910},
            {96, 24, .977}, {96, 64, 1.041}, {96, 8, .842},   {96, 96, 1.052}};
  for (size_t i = 0; i < sizeof hf / sizeof hf[0]; i++) {
    const double f = tw_gpu_tower_height_factor(hf[i].nt, hf[i].h);
    CHECK(fabs(f / hf[i].rel - 1.0) < (hf[i].h >= 12 ? 0.03 : 0.045), "height %d of %d: factor %.3f, measured %.3f",
          hf[i].h, hf[i].nt, f, hf[i].rel);
  }
  CHECK(fabs(tw_gpu_tower_height_factor(96, 32) - 1.0) < 1e-12 &&
            tw_gpu_tower_height_factor(96, 0) == tw_gpu_tower_height_factor(96, 96) &&
            tw_gpu_tower_height_factor(96, 100) == tw_gpu_tower_height_factor(96, 50),
        "height factor: 1 at 32, the height where calls are unknown, equal blocks: %.4f %.4f %.4f %.4f",
        tw_gpu_tower_height_factor(96, 32), tw_gpu_tower_height_factor(96, 0), tw_gpu_tower_height_factor(96, 100),
        tw_gpu_tower_height_factor(96, 50));
  /* the calls' length a job gives: its steps over its cuts (snapshots, checkpoints by step, the end) */
  {
    tw_job job;
    memset(&job, 0, sizeof job);
    long snaps[12];
    for (int i = 0; i < 12; i++) snaps[i] = 100 * (i + 1);
    job.steps = 1200;
    const long none = tw_job_call_steps(&job);
    job.snap_steps = snaps, job.nsnap = 12;
    const long every100 = tw_job_call_steps(&job);
    job.ckpt_every = 300; /* (at snapshots' steps: no more cuts) */
    const long both = tw_job_call_steps(&job);
    job.ckpt_every = 250, job.nsnap = 0; /* 250, 500, 750, 1000 and the end */
    const long ck = tw_job_call_steps(&job);
    CHECK(none == 1200 && every100 == 100 && both == 100 && ck == 240, "calls' length: %ld %ld %ld %ld", none,
          every100, both, ck);
  }
  /* wide grids keep the whole gain with every block that fits, and the share never grows as the
   * grid narrows, whatever fits an SM (1 block: Nz 257–512, 2: 129–256, 4: 65–128, 8: up to 64) */
  for (int bmax = 1; bmax <= 8; bmax *= 2) {
    double last = 2.0;
    for (int n1 = 16384; n1 >= 32; n1 /= 2) {
      tw_schedule sc;
      tw_schedule_init(&sc, 2048, n1, 1, 3, 128);
      int b = 0;
      const double sh = tw_gpu_tower_share(1, tw_schedule_parallelism(&sc), 132, bmax, &b);
      CHECK(sh > 0.0 && sh <= 1.0 && sh <= last && b >= 1 && b <= bmax,
            "bmax %d: share %.3f (%d blocks) at N1 %d, %.3f at twice that", bmax, sh, b, n1, last);
      if (n1 == 16384)
        CHECK(sh == 1.0 && b == bmax, "bmax %d, N1 %d: share %.3f with %d blocks, a wide grid keeps the gain", bmax, n1,
              sh, b);
      last = sh;
    }
  }
}

int main(void) {
  tw_rng_seed(0x9E3779B97F4A7C15ull);
  check_params();
  check_share();
  /* Fixed corner cases: one column, one row, tile larger than the grid, tower taller than it. */
  const int fixed[][5] = {{1, 1, 1, 1, 1}, {1, 9, 2, 1, 3}, {9, 1, 1, 3, 5}, {2, 2, 4, 3, 20},
                          {7, 5, 1, 1, 40}, {16, 16, 4, 2, 9}, {5, 31, 3, 1, 2}};
  for (size_t c = 0; c < sizeof fixed / sizeof fixed[0]; c++)
    check_grid(fixed[c][0], fixed[c][1], fixed[c][2], fixed[c][3], fixed[c][4], 2 * fixed[c][4] + 3);
  /* Random grids: r = 1..4 and 8, dts 1..3, tower heights 1 .. beyond the x length. */
  int cases = 0;
  for (int rep = 0; rep < 1500; rep++) {
    const int rs[] = {1, 2, 3, 4, 8};
    const int r = rs[tw_rnd() % 5], dts = tw_rnd_in(1, 3), N0 = tw_rnd_in(1, 40), N1 = tw_rnd_in(1, 40);
    const int nt = tw_rnd() % 4 == 0 ? N0 / r + tw_rnd_in(1, 6) : tw_rnd_in(1, 12);
    check_grid(N0, N1, r, dts, nt, tw_rnd_in(1, 3 * nt + 2));
    check_parallelism(N0, N1, r, dts, nt);
    cases++;
  }
  /* and on grids of the size jobs have (the DAG of thousands to 10^5 towers) */
  for (int rep = 0; rep < 40; rep++)
    check_parallelism(tw_rnd_in(64, 2500), tw_rnd_in(16, 1500), tw_rnd_in(1, 4), tw_rnd_in(1, 3), tw_rnd_in(1, 200));
  printf("tower parallelism: %ld schedules against their DAG, %ld differ\n", parallelism_cases, parallelism_bad);
  printf("%d random schedules replayed (%ld blocks of them as tasks in random orders)\n", cases, dataflow_blocks);
  /* Even blocks (tw_even_height, tw_block_height): a call of n steps at height nt takes ⌈n / nt⌉
   * blocks, none longer than nt, their lengths within one step of each other less than the
   * block count, summing to n. */
  long even_bad = 0;
  for (int rep = 0; rep < 20000; rep++) {
    const int nt = tw_rnd() % 10 ? tw_rnd_in(1, 300) : tw_rnd_in(1, 3);
    const long n = tw_rnd() % 10 ? tw_rnd_in(1, 5000) : tw_rnd_in(1, 2 * nt);
    long blocks = 0, sum = 0, lo = n, hi = 0;
    for (long done = 0; done < n && blocks <= n; blocks++) {
      const int h = tw_block_height(done, n, nt);
      done += h, sum += h;
      lo = h < lo ? h : lo, hi = h > hi ? h : hi;
    }
    if (sum != n || blocks != (n + nt - 1) / nt || hi > nt || lo < 1 || hi - lo >= blocks ||
        hi != tw_even_height(nt, n))
      if (even_bad++ < 5)
        printf("even blocks: %ld steps at %d: %ld blocks of %ld..%ld, sum %ld\n", n, nt, blocks, lo, hi, sum);
  }
  CHECK(even_bad == 0, "even blocks: %ld of 20000 calls wrong", even_bad);
  CHECK(tw_even_height(209, 430) == 144 && tw_even_height(209, 1254) == 209 && tw_even_height(128, 100) == 100 &&
            tw_even_height(64, 200) == 50,
        "even heights: 430 steps at 209 -> %d (144), 1254 -> %d (209), 100 at 128 -> %d (100), 200 at 64 -> %d (50)",
        tw_even_height(209, 430), tw_even_height(209, 1254), tw_even_height(128, 100), tw_even_height(64, 200));
  printf("20000 calls cut into even blocks\n");
  negative_control(STAGES_UP, "stages in increasing s");
  negative_control(STEPS_DOWN, "a tower's steps in reverse");
  negative_control(PAIRS_CONCURRENT, "two stages run concurrently");
  negative_dataflow(17, 23, 2, 1, 5, "17 x 23 grid");
  negative_dataflow(21, 1, 1, 2, 6, "one tower column");
  return tw_test_exit();
}
