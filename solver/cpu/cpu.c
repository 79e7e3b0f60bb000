/* cpu — the reference solver: the stepwise update of docs/design.md §1, one time step at a time. Each step
 * sweeps the grid in y-blocks (tw_cpu_yblocks: the 2r + 1 planes of a block that the x-derivative
 * needs stay in L2 while the block is swept along x), OpenMP over the blocks with the static split
 * that placed their pages (cpu_fields.c), one parallel region for the whole call. Every cell goes
 * through tw_cpu_update_row (cpu_update.c). */
#include <stdlib.h>
#include <string.h>

#include "cpu_fields.h"

typedef struct {
  const tw_problem *pb;
  tw_cpu_fields f;
  long level; /* the level the whole field is at */
  int dirty;  /* advanced since it was created or reset */
} cpu_state;

static tw_status cpu_create(const tw_problem *pb, void **state, tw_error *err) {
  cpu_state *s = calloc(1, sizeof *s);
  if (!s) return tw_error_set(err, TW_ENOMEM, "out of memory");
  s->pb = pb;
  tw_status st = tw_cpu_fields_create(pb, 0, pb->g.N[0], TW_CPU_ALIGN_STEPWISE, &s->f, err);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return TW_OK;
}

static tw_status cpu_advance(void *state, long t0, long n, float *taps, tw_error *err) {
  cpu_state *s = state;
  const tw_problem *pb = s->pb;
  long first, count;
  tw_samples_in(pb, t0, n, &first, &count);
  const tw_tap_sink sink = {taps, first};
  const int N0 = pb->g.N[0], N1 = pb->g.N[1], threads = tw_cpu_threads(pb);
  int by;
  const int nb = tw_cpu_yblocks(pb, threads, &by);
  (void)err;
  tw_cpu_flush_denormals(); /* the calling thread too, when OpenMP is off */
#pragma omp parallel num_threads(threads)
  {
    tw_cpu_flush_denormals();
    for (long m = t0; m < t0 + n; m++) {
#pragma omp for schedule(static)
      for (int b = 0; b < nb; b++) {
        const int y0 = b * by, y1 = y0 + by < N1 ? y0 + by : N1;
        for (int i = 0; i < N0; i++) tw_cpu_update_row(pb, &s->f, i, y0, y1, m, &sink);
      }
    }
  }
  s->level = t0 + n;
  s->dirty = 1;
  return TW_OK;
}

/* The tables are read from the problem at every step: a reset is the fields alone. */
static tw_status cpu_reset(void *state, unsigned what, tw_error *err) {
  cpu_state *s = state;
  (void)what, (void)err;
  if (s->dirty) tw_cpu_fields_zero(&s->f);
  s->level = 0;
  s->dirty = 0;
  return TW_OK;
}

static tw_status cpu_extract(void *state, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err) {
  cpu_state *s = state;
  (void)err;
  tw_cpu_extract(&s->f, (int)(s->level % 2), lo, cnt, dec, out);
  return TW_OK;
}

static tw_status cpu_save(void *state, int x0, int nx, float *cur, float *prev, tw_error *err) {
  cpu_state *s = state;
  (void)err;
  tw_cpu_planes(&s->f, &s->pb->g, s->level, x0, nx, cur, prev, 0);
  return TW_OK;
}

static tw_status cpu_load(void *state, long t, int x0, int nx, const float *cur, const float *prev, tw_error *err) {
  cpu_state *s = state;
  (void)err;
  tw_cpu_planes(&s->f, &s->pb->g, t, x0, nx, (float *)cur, (float *)prev, 1); /* load: read only */
  s->level = t;
  s->dirty = 1;
  return TW_OK;
}

static long cpu_block_steps(void *state) {
  (void)state;
  return 1;
}

static tw_status cpu_find_nonfinite(void *state, long long *count, int cell[3], tw_error *err) {
  cpu_state *s = state;
  (void)err;
  *count = tw_cpu_find_nonfinite(&s->f, (int)(s->level % 2), cell);
  return TW_OK;
}

static void cpu_destroy(void *state) {
  cpu_state *s = state;
  if (!s) return;
  tw_cpu_fields_destroy(&s->f);
  free(s);
}

const tw_backend_ops tw_backend_cpu = {
    .name = "cpu",
    .needs_gpu = 0,
    .create = cpu_create,
    .advance = cpu_advance,
    .extract = cpu_extract,
    .block_steps = cpu_block_steps,
    .reset = cpu_reset,
    .report = NULL,
    .destroy = cpu_destroy,
    .save = cpu_save,
    .load = cpu_load,
    .find_nonfinite = cpu_find_nonfinite,
};
