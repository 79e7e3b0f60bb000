/* window.c — the sliding-window plan (plain integer C) and its CPU executor (window.h). */
#include "window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the plan */

/* The stage functions below are the plan of the CPU executor: DiamondTorre stages, groups of
 * one, margin r (cpu-diamond bounds-checks x, so only the r planes its stencil reads beyond the
 * grid are virtual). */
static void stage_plan(const tw_schedule *sc, tw_window_plan *p) { tw_window_plan_diamond(sc, sc->r, 1, p); }

void tw_window_touched(const tw_schedule *sc, int s, int *lo, int *hi) {
  tw_window_plan p;
  stage_plan(sc, &p);
  tw_window_group_touched(&p, sc->s_hi - s, lo, hi);
}

void tw_window_in_planes(const tw_schedule *sc, int s, int *lo, int *hi) {
  tw_window_plan p;
  stage_plan(sc, &p);
  tw_window_group_in(&p, sc->s_hi - s, lo, hi);
}

void tw_window_out_planes(const tw_schedule *sc, int s, int *lo, int *hi) {
  tw_window_plan p;
  stage_plan(sc, &p);
  tw_window_group_out(&p, sc->s_hi - s, lo, hi);
}

int tw_window_min_planes(const tw_schedule *sc, int prefetch) {
  tw_window_plan p;
  stage_plan(sc, &p);
  int most = 0;
  for (int s = sc->s_hi; s >= sc->s_lo; s--) {
    int lo, hi, unused;
    tw_window_group_touched(&p, sc->s_hi - s + prefetch, &lo, &unused);
    tw_window_group_touched(&p, sc->s_hi - s, &unused, &hi);
    if (hi - lo > most) most = hi - lo;
  }
  return most;
}

/* ---------------------------------------------------------------- the general plan */

static void plan_groups(tw_window_plan *p, int G) {
  p->G = G < 1 ? 1 : G;
  p->ngroups = (p->s_hi - p->s_lo + 1 + p->G - 1) / p->G;
}

void tw_window_plan_diamond(const tw_schedule *sc, int margin, int G, tw_window_plan *p) {
  p->N0 = sc->N0, p->r = sc->r, p->R = sc->R, p->nt = sc->nt, p->width = 2 * sc->R, p->margin = margin;
  p->s_hi = sc->s_hi, p->s_lo = sc->s_lo;
  plan_groups(p, G);
}

/* Slab stage s reaches the grid iff R·s ≤ N0 − 1 (step 0) and R·s + (nt − 1)·r + R − 1 ≥ 0. */
void tw_window_plan_slabs(int N0, int r, int R, int nt, int margin, int G, tw_window_plan *p) {
  p->N0 = N0, p->r = r, p->R = R, p->nt = nt, p->width = R, p->margin = margin;
  p->s_hi = tw_floordiv(N0 - 1, R);
  p->s_lo = -tw_floordiv((nt - 1) * r + R - 1, R);
  plan_groups(p, G);
}

void tw_window_group_stages(const tw_window_plan *p, int g, int *s_top, int *s_bot) {
  *s_top = p->s_hi - g * p->G;
  *s_bot = *s_top - p->G + 1;
  if (*s_bot < p->s_lo) *s_bot = p->s_lo;
}

/* Groups outside [0, ngroups) touch nothing: an empty interval at the end they would slide to,
 * so that the differences below give "all" for the first and the last group. Clipped intervals
 * keep both ends non-increasing in g, which is all the differences need. */
void tw_window_group_touched(const tw_window_plan *p, int g, int *lo, int *hi) {
  const int L = -p->margin, H = p->N0 + p->margin;
  if (g < 0) {
    *lo = *hi = H;
    return;
  }
  if (g >= p->ngroups) {
    *lo = *hi = L;
    return;
  }
  int top, bot;
  tw_window_group_stages(p, g, &top, &bot);
  *lo = p->R * bot - p->r;
  *hi = p->R * top + p->nt * p->r + p->width;
  if (*lo < L) *lo = L;
  if (*hi > H) *hi = H;
  if (*lo > *hi) *lo = *hi;
}

void tw_window_group_in(const tw_window_plan *p, int g, int *lo, int *hi) {
  int l0, h0, l1, h1;
  tw_window_group_touched(p, g, &l0, &h0);
  tw_window_group_touched(p, g - 1, &l1, &h1);
  *lo = l0;
  *hi = l1 < h0 ? l1 : h0;
  if (*hi < *lo) *hi = *lo;
}

void tw_window_group_out(const tw_window_plan *p, int g, int *lo, int *hi) {
  int l0, h0, l1, h1;
  tw_window_group_touched(p, g, &l0, &h0);
  tw_window_group_touched(p, g + 1, &l1, &h1);
  *hi = h0;
  *lo = h1 > l0 ? h1 : l0;
  if (*lo > *hi) *lo = *hi;
}

int tw_window_plan_min_planes(const tw_window_plan *p, int overlap) {
  int most = 0;
  for (int g = 0; g < p->ngroups; g++) {
    int lo, hi, unused;
    tw_window_group_touched(p, g + 1, &lo, &unused);
    tw_window_group_touched(p, g - (overlap ? 1 : 0), &unused, &hi);
    if (g + 1 >= p->ngroups) tw_window_group_touched(p, g, &lo, &unused);
    if (overlap && g == 0) tw_window_group_touched(p, g, &unused, &hi);
    if (hi - lo > most) most = hi - lo;
  }
  return most;
}

int tw_window_fit_height(int nt, int (*fits)(void *ctx, int h), void *ctx) {
  int lo = 1, hi = nt - 1, best = 0;
  while (lo <= hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(ctx, mid)) best = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  return best;
}

long tw_window_c2_repeats(const float *c2, int N0, size_t plane, unsigned char *same_next) {
  long n = 0;
  if (N0 > 0) same_next[N0 - 1] = 0;
  const char *off = getenv("TW_WINDOW_C2_REPEATS"); /* "0": none (a measurement switch: every plane over the link) */
  if (off && !strcmp(off, "0")) {
    memset(same_next, 0, (size_t)(N0 > 0 ? N0 : 0));
    return 0;
  }
#pragma omp parallel for schedule(dynamic, 8) reduction(+ : n)
  for (int x = 0; x < N0 - 1; x++) {
    const float *a = c2 + (size_t)x * plane;
    same_next[x] = memcmp(a, a + plane, plane * sizeof(float)) == 0; /* bits, so −0 ≠ +0 */
    n += same_next[x];
  }
  return n;
}

/* ---------------------------------------------------------------- the CPU executor */

uint64_t tw_window_cpu_ring_bytes(const tw_problem *pb, int W) {
  const uint64_t h = (uint64_t)pb->st.r;
  long sy, sx;
  /* the layout of cpu-diamond's tw_cpu_fields (the CPU window is its) */
  tw_cpu_strides(pb, tw_cpu_tower_align(pb->g.N[2], pb->st.r), &sy, &sx);
  return 3 * sizeof(float) * (uint64_t)sx * ((uint64_t)W + 2 * h);
}

void tw_window_cpu_need(const tw_problem *pb, int dts, int nt, tw_window_need *need) {
  tw_schedule sc;
  const int height = pb->steps < nt ? (int)(pb->steps > 0 ? pb->steps : 1) : nt;
  tw_schedule_init(&sc, pb->g.N[0], pb->g.N[1], pb->st.r, dts, height);
  need->min_planes = tw_window_min_planes(&sc, 0);
  /* the mirrors (cpu_fields.h) need W ≥ 2h; any real window is far larger */
  if (need->min_planes < 2 * pb->st.r) need->min_planes = 2 * pb->st.r;
  need->min_bytes = tw_window_cpu_ring_bytes(pb, need->min_planes);
  need->whole_bytes = tw_window_cpu_ring_bytes(pb, pb->g.N[0]);
  if (need->min_bytes > need->whole_bytes) need->min_bytes = need->whole_bytes;
}

tw_status tw_window_cpu_size(const tw_problem *pb, int dts, int nt, uint64_t cap, int *W, tw_error *err) {
  tw_window_need need;
  tw_window_cpu_need(pb, dts, nt, &need);
  *W = 0;
  if (cap == 0 || cap >= need.whole_bytes) return TW_OK;
  if (cap < need.min_bytes) {
    char have[32], want[32];
    tw_format_bytes((double)cap, have, sizeof have);
    tw_format_bytes((double)need.min_bytes, want, sizeof want);
    char what[200];
    if (need.min_bytes < need.whole_bytes)
      snprintf(what, sizeof what, "a window of %d x-planes of %d × %d cells, two levels and c²dt²",
               need.min_planes, pb->g.N[1], pb->g.N[2]);
    else
      snprintf(what, sizeof what, "the whole grid, %d x-planes of %d × %d cells, two levels and c²dt² (a window "
               "for this tower height would span all of it)", pb->g.N[0], pb->g.N[1], pb->g.N[2]);
    return tw_error_set(err, TW_ERANGE, "solver.device_memory = %s is too small for this job: the smallest cap "
                        "that works is %llu bytes (%s) for %s; order %d, dts %d, tower_height %d; raise "
                        "solver.device_memory%s", have, (unsigned long long)need.min_bytes, want, what, pb->order,
                        dts, nt, pb->tower_height ? " or lower solver.tower_height" : "");
  }
  const uint64_t per_plane = tw_window_cpu_ring_bytes(pb, 1) - tw_window_cpu_ring_bytes(pb, 0);
  const uint64_t fit = (cap - tw_window_cpu_ring_bytes(pb, 0)) / per_plane;
  /* cap < whole_bytes, so fit < N0: a real window */
  *W = fit > (uint64_t)need.min_planes ? (int)fit : need.min_planes;
  return TW_OK;
}

tw_status tw_window_create(const tw_problem *pb, tw_cpu_fields *host, int W, tw_window *w, tw_error *err) {
  memset(w, 0, sizeof *w);
  w->pb = pb;
  w->host = host;
  w->W = W;
  tw_status st = tw_cpu_fields_create_ring(pb, W, host, &w->ring, err);
  if (st) tw_error_prefix(err, "sliding window of %d x-planes", W);
  return st;
}

void tw_window_destroy(tw_window *w) {
  tw_cpu_fields_destroy(&w->ring);
  memset(w, 0, sizeof *w);
}

/* Write a whole plane (halos included) into slot σ of the ring and into its mirror. */
static void put_plane(tw_cpu_fields *ring, float *a, int slot, const float *src) {
  const size_t n = (size_t)ring->sx * sizeof(float);
  int m;
  if (src) memcpy(tw_cpu_plane(ring, a, slot), src, n);
  else memset(tw_cpu_plane(ring, a, slot), 0, n);
  if (tw_cpu_ring_mirror(ring, slot, &m)) memcpy(tw_cpu_plane(ring, a, m), tw_cpu_plane(ring, a, slot), n);
}

void tw_window_copy_in(tw_window *w, const tw_schedule *sc, int x) {
  tw_cpu_fields *ring = &w->ring, *host = w->host;
  const int slot = tw_cpu_slot(ring, x);
  const int real = tw_window_plane_is_real(sc, x);
  const int hs = real ? tw_cpu_slot(host, x) : 0;
  put_plane(ring, ring->p[0], slot, real ? tw_cpu_plane(host, host->p[0], hs) : NULL);
  put_plane(ring, ring->p[1], slot, real ? tw_cpu_plane(host, host->p[1], hs) : NULL);
  put_plane(ring, ring->c2, slot, real ? tw_cpu_plane(host, host->c2, hs) : NULL);
#ifdef TW_DEBUG_LEVELS
  int m;
  const int has_mirror = tw_cpu_ring_mirror(ring, slot, &m);
  for (int a = 0; a < 2; a++) { /* the levels travel with the plane; a virtual plane reads as zeros */
    tw_debug_level_plane(ring, slot, real ? host : NULL, hs, a, TW_LEVEL_ANY);
    if (has_mirror) tw_debug_level_plane(ring, m, ring, slot, a, 0);
  }
#endif
  if (real) {
    const double cells = (double)w->pb->g.N[1] * (double)w->pb->g.N[2];
#pragma omp atomic
    w->planes_in++;
#pragma omp atomic
    w->bytes_in += 12.0 * cells;
  }
}

void tw_window_copy_out(tw_window *w, const tw_schedule *sc, int x) {
  if (!tw_window_plane_is_real(sc, x)) return;
  tw_cpu_fields *ring = &w->ring, *host = w->host;
  const int slot = tw_cpu_slot(ring, x), hs = tw_cpu_slot(host, x);
  const size_t n = (size_t)ring->sx * sizeof(float);
  for (int a = 0; a < 2; a++) memcpy(tw_cpu_plane(host, host->p[a], hs), tw_cpu_plane(ring, ring->p[a], slot), n);
#ifdef TW_DEBUG_LEVELS
  for (int a = 0; a < 2; a++) tw_debug_level_plane(host, hs, ring, slot, a, 0);
#endif
  const double cells = (double)w->pb->g.N[1] * (double)w->pb->g.N[2];
#pragma omp atomic
  w->planes_out++;
#pragma omp atomic
  w->bytes_out += 8.0 * cells;
}
