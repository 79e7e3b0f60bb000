/* test_window — the sliding-window plan (solver/plan/window.h) and its CPU executor.
 * Plan, replayed on random schedules with copies `prefetch` stages ahead (0, 1, 2) and a ring of
 * the smallest size it reports (and larger ones):
 *   - every plane of [−r, N0 + r) comes in exactly once and goes back exactly once per block;
 *   - a plane is in the ring whenever a stage touches it: every row a tower updates and the r
 *     planes it reads on each side (cross-checked against the schedule's own rows);
 *   - no two live planes share a ring slot (x mod W), and the smallest ring is reached;
 * Executor: planes copied in equal the host's (both levels and c²dt², and the mirrors of the
 * edge slots), virtual planes are zeros, copies back change only the levels, the counters count
 * grid planes only. (The backend-level totals — N0 planes each way per block — are checked in
 * test_cpu_diamond over the randomized matrix.) */
#include <string.h>

#include "problem.h"
#include "tw_boundary.h"
#include "tw_io.h"
#include "tw_solver.h"
#include "tw_test.h"
#include "window.h"

static int mod(int a, int W) { return ((a % W) + W) % W; }

typedef struct {
  int r, N0, W;
  int *resident, *count_in, *count_out, *slot; /* per plane x + r; slot: occupant + r, −1 free */
  int live, most;
  long bad;
} ring_model;

static void bring_in(ring_model *m, int lo, int hi) {
  for (int x = lo; x < hi; x++) {
    const int e = x + m->r, sl = mod(x, m->W);
    if (m->resident[e]) m->bad++;
    if (m->slot[sl] >= 0) m->bad++; /* slot still taken by a live plane */
    m->slot[sl] = e;
    m->resident[e] = 1;
    m->count_in[e]++;
    if (++m->live > m->most) m->most = m->live;
  }
}

static void write_back(ring_model *m, int lo, int hi) {
  for (int x = lo; x < hi; x++) {
    const int e = x + m->r, sl = mod(x, m->W);
    if (!m->resident[e] || m->slot[sl] != e) m->bad++;
    m->slot[sl] = -1;
    m->resident[e] = 0;
    m->count_out[e]++;
    m->live--;
  }
}

/* Every plane stage s reads or writes, from the schedule's rows, must be resident. */
static void check_stage_resident(ring_model *m, const tw_schedule *sc, int s) {
  for (int tau = 0; tau < sc->nt; tau++) {
    int x0, x1;
    tw_tower_rows(sc, s, tau, &x0, &x1);
    for (int x = x0; x < x1; x++)
      for (int dx = -sc->r; dx <= sc->r; dx++)
        if (!m->resident[x + dx + m->r]) m->bad++;
  }
}

static void plan_case(int N0, int r, int dts, int nt, int prefetch, int extra) {
  tw_schedule sc;
  tw_schedule_init(&sc, N0, 7, r, dts, nt);
  const int need = tw_window_min_planes(&sc, prefetch);
  ring_model m = {.r = r, .N0 = N0, .W = need + extra};
  const int np = N0 + 2 * r;
  m.resident = calloc((size_t)np, sizeof(int));
  m.count_in = calloc((size_t)np, sizeof(int));
  m.count_out = calloc((size_t)np, sizeof(int));
  m.slot = malloc((size_t)m.W * sizeof(int));
  for (int e = 0; e < m.W; e++) m.slot[e] = -1;
  for (int s = sc.s_hi; s >= sc.s_lo; s--) {
    int lo, hi;
    /* planes arrive `prefetch` stages ahead: before the first stage, those of the first
     * prefetch + 1 stages; before stage s, those of stage s − prefetch */
    for (int a = s == sc.s_hi ? s : s - prefetch; a >= s - prefetch && a >= sc.s_lo; a--) {
      tw_window_in_planes(&sc, a, &lo, &hi);
      bring_in(&m, lo, hi);
    }
    int tl, th;
    tw_window_touched(&sc, s, &tl, &th);
    for (int x = tl; x < th; x++) m.bad += !m.resident[x + r];
    check_stage_resident(&m, &sc, s);
    tw_window_out_planes(&sc, s, &lo, &hi);
    write_back(&m, lo, hi);
  }
  long wrong = 0;
  for (int e = 0; e < np; e++) wrong += m.count_in[e] != 1 || m.count_out[e] != 1 || m.resident[e];
  CHECK(wrong == 0, "N0 %d r %d dts %d nt %d prefetch %d: %ld planes not in and out exactly once", N0, r, dts, nt,
        prefetch, wrong);
  CHECK(m.bad == 0, "N0 %d r %d dts %d nt %d prefetch %d W %d: %ld residency or slot violations", N0, r, dts, nt,
        prefetch, m.W, m.bad);
  CHECK(m.most == need, "N0 %d r %d dts %d nt %d prefetch %d: %d planes live at most, min_planes says %d", N0, r,
        dts, nt, prefetch, m.most, need);
  const int model = (nt + 1) * r + 2 * r * dts + prefetch * r * dts; /* docs/design.md §3, unclipped */
  /* clipped to the grid's planes, and the interval moves by R per stage, so it may miss by < R */
  const int cap = model < np ? model : np;
  CHECK(need <= cap && need > cap - r * dts, "N0 %d r %d dts %d nt %d prefetch %d: %d planes, model %d", N0, r,
        dts, nt, prefetch, need, model);
  free(m.resident), free(m.count_in), free(m.count_out), free(m.slot);
}

/* The general plan (groups of G stages, DiamondTorre or stepwise slabs, any margin), replayed as
 * the GPU window runs it: in(0); for each group g: in(g + 1), the kernel of g, out(g) (overlap 0)
 * or out(g − 1) (overlap 1, out(last) at the end), on a ring of the size the plan reports. Every
 * row a stage updates at each step, and its ±r neighbours inside [−margin, N0 + margin), must be
 * resident during the group's kernel; for slabs the stages must also tile every step and respect
 * the time levels (the slab schedule has no schedule.h of its own: its proof is this shadow). */
static void group_plan_case(int slabs, int N0, int r, int dts, int nt, int margin, int G, int overlap) {
  tw_window_plan p;
  tw_schedule sc;
  const int R = slabs ? tw_rnd_in(r, 4 * r * dts) : r * dts; /* slabs: any width ≥ r */
  if (slabs) {
    tw_window_plan_slabs(N0, r, R, nt, margin, G, &p);
  } else {
    tw_schedule_init(&sc, N0, 9, r, dts, nt);
    tw_window_plan_diamond(&sc, margin, G, &p);
  }
  const int need = tw_window_plan_min_planes(&p, overlap);
  ring_model m = {.r = margin, .N0 = N0, .W = need};
  const int np = N0 + 2 * margin;
  m.resident = calloc((size_t)np, sizeof(int));
  m.count_in = calloc((size_t)np, sizeof(int));
  m.count_out = calloc((size_t)np, sizeof(int));
  m.slot = malloc((size_t)m.W * sizeof(int));
  int *lev = calloc((size_t)N0, sizeof(int)), *nxt = calloc((size_t)N0, sizeof(int));
  for (int e = 0; e < m.W; e++) m.slot[e] = -1;
  long lev_bad = 0, tile_bad = 0, next_bad = 0;
  int lo, hi;
  tw_window_group_in(&p, 0, &lo, &hi);
  next_bad += lo < hi && hi < N0; /* the block's first planes reach the top: plane hi is nowhere */
  bring_in(&m, lo, hi);
  for (int g = 0; g < p.ngroups; g++) {
    tw_window_group_in(&p, g + 1, &lo, &hi);
    /* The GPU window copies a plane's c²dt² from plane x + 1 (tw_gpu_window_in) when that one is in
     * the ring: the plane just above an in-interval must be live when the interval comes in, i.e.
     * in, and not among the planes group g − 1 sends back (issued before these in-copies on the GPU,
     * which sends group g's back after it ran; the model here may write back one group later). */
    if (g + 1 < p.ngroups && lo < hi && hi < N0) {
      int olo, ohi;
      tw_window_group_out(&p, g - 1, &olo, &ohi);
      next_bad += !m.resident[hi + margin] || (hi >= olo && hi < ohi);
    }
    if (g + 1 < p.ngroups) bring_in(&m, lo, hi);
    int top, bot;
    tw_window_group_stages(&p, g, &top, &bot);
    for (int s = top; s >= bot; s--)
      for (int tau = 0; tau < nt; tau++) {
        const int X0 = slabs ? R * s + tau * r : tw_tower_x0(&sc, s, tau);
        const int x0 = X0 > 0 ? X0 : 0, x1 = X0 + p.width < N0 ? X0 + p.width : N0;
        for (int x = x0; x < x1; x++) {
          for (int dx = -r; dx <= r; dx++)
            if (x + dx >= -margin && x + dx < N0 + margin) m.bad += !m.resident[x + dx + margin];
          if (!slabs) continue;
          lev_bad += lev[x] != tau;
          for (int dx = -r; dx <= r; dx++)
            if (dx && x + dx >= 0 && x + dx < N0) lev_bad += lev[x + dx] != tau && lev[x + dx] != tau + 1;
          nxt[x]++;
        }
        if (slabs)
          for (int x = x0; x < x1; x++) lev[x]++;
      }
    if (!overlap || g > 0) {
      tw_window_group_out(&p, overlap ? g - 1 : g, &lo, &hi);
      write_back(&m, lo, hi);
    }
  }
  if (overlap) {
    tw_window_group_out(&p, p.ngroups - 1, &lo, &hi);
    write_back(&m, lo, hi);
  }
  if (slabs)
    for (int x = 0; x < N0; x++) tile_bad += nxt[x] != nt || lev[x] != nt;
  int span_lo, span_hi, unused;
  tw_window_group_touched(&p, p.ngroups - 1, &span_lo, &unused);
  tw_window_group_touched(&p, 0, &unused, &span_hi);
  long wrong = 0;
  for (int x = -margin; x < N0 + margin; x++) {
    const int e = x + margin, want = x >= span_lo && x < span_hi;
    wrong += m.count_in[e] != want || m.count_out[e] != want || m.resident[e];
  }
  CHECK(wrong == 0 && m.bad == 0 && lev_bad == 0 && tile_bad == 0 && next_bad == 0,
        "%s N0 %d r %d dts %d nt %d margin %d G %d overlap %d W %d: %ld planes not in/out once, %ld residency or "
        "slot violations, %ld level violations, %ld untiled, %ld in-intervals whose next plane is not live",
        slabs ? "slabs" : "diamond", N0, r, dts, nt, margin, G, overlap, m.W, wrong, m.bad, lev_bad, tile_bad,
        next_bad);
  CHECK(m.most <= need && need <= np, "plan %d live at most, min_planes %d, %d planes in all", m.most, need, np);
  free(m.resident), free(m.count_in), free(m.count_out), free(m.slot), free(lev), free(nxt);
}

/* tw_window_c2_repeats against a plane-by-plane comparison of the bits: planes in random runs of
 * copies, some differing in one cell only (the last, or the first), −0 against +0, NaN payloads. */
static void repeats_case(int N0, int plane) {
  float *c2 = malloc((size_t)N0 * plane * sizeof(float));
  unsigned char *same = malloc((size_t)N0 + 1);
  uint32_t *bits = (uint32_t *)c2;
  for (int x = N0 - 1; x >= 0; x--) {
    uint32_t *p = bits + (size_t)x * plane;
    if (x < N0 - 1 && tw_rnd() % 3) memcpy(p, p + plane, (size_t)plane * sizeof(float));
    else
      for (int c = 0; c < plane; c++) p[c] = tw_rnd() % 5 ? 0x3f800000u + (uint32_t)(tw_rnd() % 7) : 0;
    if (x < N0 - 1 && tw_rnd() % 4 == 0) { /* one cell off: its last or first, by a sign or a payload */
      const int c = tw_rnd() % 2 ? plane - 1 : 0;
      p[c] = p[c + plane] ^ (tw_rnd() % 2 ? 0x80000000u : 0x00000001u);
      if (tw_rnd() % 2) p[c] = p[c + plane] = 0x7fc00000u | (uint32_t)(tw_rnd() % 3); /* NaNs: equal iff same bits */
    }
  }
  same[N0] = 7; /* a sentinel: nothing past the N0 flags is written */
  long want = 0, bad = 0;
  const long got = tw_window_c2_repeats(c2, N0, (size_t)plane, same);
  for (int x = 0; x < N0; x++) {
    const int eq = x < N0 - 1 && !memcmp(bits + (size_t)x * plane, bits + (size_t)(x + 1) * plane, plane * 4u);
    want += eq;
    bad += same[x] != eq;
  }
  CHECK(got == want && bad == 0 && same[N0] == 7, "c2 repeats N0 %d plane %d: %ld counted, %ld by bits, %ld flags "
        "wrong", N0, plane, got, want, bad);
  free(c2), free(same);
}

/* Negative control: the slab shadow catches stages run in increasing s. */
static long slabs_reversed_violations(int N0, int r, int R, int nt) {
  tw_window_plan p;
  tw_window_plan_slabs(N0, r, R, nt, 0, 1, &p);
  int *lev = calloc((size_t)N0, sizeof(int));
  long bad = 0;
  for (int s = p.s_lo; s <= p.s_hi; s++)
    for (int tau = 0; tau < nt; tau++) {
      const int X0 = R * s + tau * r, x0 = X0 > 0 ? X0 : 0, x1 = X0 + R < N0 ? X0 + R : N0;
      for (int x = x0; x < x1; x++)
        for (int dx = -r; dx <= r; dx++)
          if (x + dx >= 0 && x + dx < N0) bad += lev[x + dx] != tau && lev[x + dx] != tau + 1;
      for (int x = x0; x < x1; x++) lev[x]++;
    }
  free(lev);
  return bad;
}

/* The executor on a small problem: copies in, mirrors, virtual planes, copies back, counters. */
static void executor_case(int order, int N0, int W) {
  tw_problem pb;
  memset(&pb, 0, sizeof pb);
  const int n[3] = {N0, 5, 4}, absorb[3] = {0, 0, 0};
  const double d[3] = {1, 1, 1};
  tw_grid_setup(&pb.g, n, d, NULL, absorb, 0);
  REQUIRE(tw_stencil_setup(order, d, &pb.st), "stencil");
  pb.order = order;
  const size_t cells = tw_grid_cells(&pb.g);
  pb.c2dt2 = malloc(cells * sizeof(float));
  for (size_t c = 0; c < cells; c++) pb.c2dt2[c] = (float)(tw_rnd() % 1000) / 1000.0f;
  tw_cpu_fields host;
  tw_error err = {0};
  REQUIRE(tw_cpu_fields_create(&pb, 0, N0, tw_cpu_tower_align(pb.g.N[2], pb.st.r), &host, &err) == TW_OK, "host: %s",
          err.msg);
  for (int i = 0; i < N0; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 4; k++)
        for (int a = 0; a < 2; a++) host.p[a][tw_cpu_off(&host, i, j, k)] = (float)(tw_rnd() % 997) + 0.5f * a;
  tw_window w;
  REQUIRE(tw_window_create(&pb, &host, W, &w, &err) == TW_OK, "window: %s", err.msg);
  tw_schedule sc;
  tw_schedule_init(&sc, N0, 5, order / 2, 1, 1);
  const int h = order / 2;
  long bad = 0;
  for (int x = -h; x < N0 + h; x++) {
    tw_window_copy_in(&w, &sc, x);
    const int sl = tw_cpu_slot(&w.ring, x);
    int msl = sl, has_mirror = tw_cpu_ring_mirror(&w.ring, sl, &msl);
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 4; k++) {
        const size_t o = tw_cpu_off(&w.ring, x, j, k);
        const ptrdiff_t mo = (ptrdiff_t)o + (ptrdiff_t)(msl - sl) * w.ring.sx;
        for (int a = 0; a < 3; a++) {
          const float *ring = a < 2 ? w.ring.p[a] : w.ring.c2, *hst = a < 2 ? host.p[a] : host.c2;
          const float want = x >= 0 && x < N0 ? hst[tw_cpu_off(&host, x, j, k)] : 0.0f;
          bad += ring[o] != want;
          if (has_mirror && a < 2) bad += ring[mo] != want;
        }
        w.ring.p[0][o] += 1.0f, w.ring.p[1][o] += 2.0f; /* the "update" */
        w.ring.c2[o] = -1.0f;                            /* must not go back */
      }
    const float c2_before = x >= 0 && x < N0 ? host.c2[tw_cpu_off(&host, x, 0, 0)] : 0.0f;
    const float p0_before = x >= 0 && x < N0 ? host.p[0][tw_cpu_off(&host, x, 0, 0)] : 0.0f;
    tw_window_copy_out(&w, &sc, x);
    if (x >= 0 && x < N0) {
      bad += host.p[0][tw_cpu_off(&host, x, 0, 0)] != p0_before + 1.0f;
      bad += host.c2[tw_cpu_off(&host, x, 0, 0)] != c2_before;
    }
  }
  CHECK(bad == 0, "executor order %d N0 %d W %d: %ld wrong values", order, N0, W, bad);
  CHECK(w.planes_in == N0 && w.planes_out == N0, "executor: %ld in, %ld out, want %d (grid planes only)",
        w.planes_in, w.planes_out, N0);
  CHECK(w.bytes_in == 12.0 * N0 * 5 * 4 && w.bytes_out == 8.0 * N0 * 5 * 4, "executor bytes %g in, %g out",
        w.bytes_in, w.bytes_out);
  tw_window_destroy(&w);
  tw_cpu_fields_destroy(&host);
  free(pb.c2dt2);
}

/* The GPU kernels' cap in the validation (estimate.c: `check` and `run` before anything is allocated):
 * below the smallest window — however far below, down to one byte — solver.device_memory is refused
 * naming it; at that window it passes; a cap that holds the fields needs no window. No GPU is
 * involved: with a cap the estimate is the host's arithmetic. */
static void gpu_cap_case(int nx, int ny, int nz, int order) {
  char n[64], o[32];
  snprintf(n, sizeof n, "grid.n=[%d, %d, %d]", nx, ny, nz);
  snprintf(o, sizeof o, "scheme.order=%d", order);
  const char *base =
      "grid = { n = [8, 8, 8]; d = [10, 10, 10]; };\n"
      "time = { steps = 30; };\n"
      "model = { type = \"constant\"; vp = 2000; };\n"
      "sources = ( { position = (0, 0, 0); wavelet = { type = \"ricker\"; frequency = 10; }; } );\n"
      "solver = { kernel = \"gpu-stepwise\"; };\n";
  const char *ov[] = {n, o};
  tw_job *job = NULL;
  tw_error err = {0};
  if (tw_job_load_string(base, "cap.cfg", ov, 2, &job, &err)) {
    CHECK(0, "job %s %s: %s", n, o, err.msg);
    return;
  }
  tw_estimate est;
  CHECK(tw_estimate_job(job, "gpu-stepwise", &est, &err) == TW_OK, "%s", err.msg);
  /* (the window slides along the longer horizontal axis: a plane spans the shorter one and z) */
  const int across = est.grid.N[0] < est.grid.N[1] ? est.grid.N[0] : est.grid.N[1];
  const double fields = est.device_bytes, plane = 12.0 * across * est.grid.N[2];
  job->device_memory = (uint64_t)(fields / 2); /* a window (of at least the smallest, or refused) */
  tw_estimate_job(job, "gpu-stepwise", &est, &err);
  const double least = est.window_min_bytes;
  CHECK(least >= plane && least < fields, "%s %s: the smallest window %.0f B (planes of %.0f B, fields %.0f B)", n, o,
        least, plane, fields);
  const uint64_t caps[] = {1, (uint64_t)plane - 1, (uint64_t)least - 1, (uint64_t)least, (uint64_t)fields};
  for (int i = 0; i < 5; i++) {
    job->device_memory = caps[i];
    tw_error e = {0};
    tw_estimate_job(job, "gpu-stepwise", &est, &e);
    const tw_status st = tw_estimate_fits(job, "gpu-stepwise", &est, &e);
    if (caps[i] < least)
      CHECK(st == TW_ERANGE && strstr(e.msg, "solver.device_memory") && strstr(e.msg, "smallest window"),
            "%s %s: a cap of %llu B below the smallest window (%.0f B): status %d: %s", n, o,
            (unsigned long long)caps[i], least, st, e.msg);
    else
      CHECK(st == TW_OK, "%s %s: a cap of %llu B (smallest window %.0f B): %s", n, o, (unsigned long long)caps[i],
            least, e.msg);
  }
  tw_job_destroy(job);
}

int main(void) {
  tw_rng_seed(0xD1B54A32D192ED03ull);
  int cases = 0;
  for (int rep = 0; rep < 600; rep++) {
    const int rs[] = {1, 2, 3, 4};
    const int r = rs[tw_rnd() % 4], dts = tw_rnd_in(1, 3), N0 = tw_rnd_in(1, 80);
    const int nt = tw_rnd() % 5 == 0 ? N0 / r + tw_rnd_in(1, 5) : tw_rnd_in(1, 16);
    plan_case(N0, r, dts, nt, tw_rnd_in(0, 2), tw_rnd() % 2 ? 0 : tw_rnd_in(1, 9));
    cases++;
  }
  printf("%d window plans replayed\n", cases);
  int gcases = 0;
  for (int rep = 0; rep < 1500; rep++) {
    const int r = tw_rnd_in(1, 4), dts = tw_rnd_in(1, 3), N0 = tw_rnd_in(1, 120), slabs = tw_rnd() % 2;
    const int nt = tw_rnd() % 5 == 0 ? N0 / r + tw_rnd_in(1, 5) : tw_rnd_in(1, 16);
    const int margin = slabs ? tw_rnd_in(0, 2) * r : r + tw_rnd_in(0, 2) * r * dts;
    group_plan_case(slabs, N0, r, dts, nt, margin, tw_rnd() % 3 ? tw_rnd_in(1, 6) : tw_rnd_in(7, 40), tw_rnd() % 2);
    gcases++;
  }
  printf("%d group plans replayed (DiamondTorre stages and stepwise slabs, G 1..40, copies overlapped or not)\n",
         gcases);
  CHECK(slabs_reversed_violations(50, 2, 4, 6) > 0, "slab shadow: stages in increasing s went unnoticed");
  for (int rep = 0; rep < 200; rep++) repeats_case(tw_rnd_in(1, 40), tw_rnd_in(1, 300));
  printf("200 media checked for planes repeating along x\n");
  executor_case(2, 9, 4);
  executor_case(8, 23, 8);
  executor_case(8, 23, 11);
  executor_case(4, 3, 5);
  const int shapes[][4] = {{8, 8, 8, 8}, {2, 1, 1, 8}, {31, 67, 2, 8}, {53, 2, 7, 2}, {300, 40, 20, 4}, {1, 1, 211, 2}};
  for (int i = 0; i < 6; i++) gpu_cap_case(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
  printf("6 GPU caps against the smallest window\n");
  return tw_test_exit();
}
