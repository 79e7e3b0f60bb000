/* Memory estimates for `torrewave check`, without allocating the fields; the predicted gain of
 * gpu-diamond's register towers, shared by the kernel's choice and `check`. */
#include <math.h>
#include <string.h>

#include "problem.h"
#include "tw_boundary.h"
#include "window.h"

/* The sliding window of a GPU kernel (docs/design.md §3): under solver.device_memory, or on its own when
 * the grid exceeds the GPU's free memory. The smallest window is that of the stepwise kernel's
 * slabs of r planes (every GPU kernel can run it: gpu-diamond's towers need more and fall back
 * to nothing smaller), for the job's tower height; without one, for height 1: the kernels lower
 * their default height to fit the cap (tw_window_fit_height). */
static void gpu_window(const tw_job *job, tw_estimate *est) {
  tw_grid kg; /* the window slides along the kernels' x: the longer horizontal axis */
  tw_grid_oriented(job, &kg);
  const tw_grid *g = &kg;
  double cap = (double)job->device_memory;
  if (!job->device_memory && tw_gpu_count() > 0) {
    tw_gpu_props p;
    tw_error e = {0};
    const double reserve = tw_gpu_props_get(0, &p, &e) == TW_OK ? tw_gpu_reserve_bytes((double)p.mem_total) : 0.0;
    if (reserve > 0 && est->device_bytes > (double)p.mem_free - reserve) {
      cap = (double)p.mem_free > reserve ? (double)p.mem_free - reserve : 0.0;
      est->window_auto = 1;
    }
  }
  if (cap <= 0 || est->device_bytes <= cap) return;
  const double plane = 12.0 * g->N[1] * (double)g->N[2];
  int dts = 0, nt = 0;
  tw_error e = {0};
  if (tw_schedule_params(job->order, job->dts, job->tower_height, &dts, &nt, &e)) return;
  if (!job->tower_height) nt = 1;
  if (job->steps > 0 && job->steps < nt) nt = (int)job->steps;
  tw_window_plan pl;
  tw_window_plan_slabs(g->N[0], job->order / 2, job->order / 2, nt, 0, 1, &pl);
  est->window_min_bytes = plane * tw_window_plan_min_planes(&pl, 0);
  est->device_bytes = cap;
  est->window_planes = (int)(cap / plane);
}

tw_status tw_estimate_job(const tw_job *job, const char *kernel, tw_estimate *est, tw_error *err) {
  (void)err;
  memset(est, 0, sizeof *est);
  tw_grid_of_job(job, &est->grid);
  const tw_grid *g = &est->grid;
  const double model = 4.0 * g->n[0] * (double)g->n[1] * g->n[2];
  const double cells = (double)tw_grid_cells(g);
  const int h = job->order / 2;
  const int align = strcmp(kernel, "cpu-diamond") ? TW_CPU_ALIGN_STEPWISE : tw_cpu_tower_align(g->N[2], h);
  const double halo = 4.0 * (g->N[0] + 2.0 * h) * (g->N[1] + 2.0 * h) * (double)tw_cpu_pitch(g->N[2], h, align);
  const double traces = 4.0 * (double)job->nrec * (job->steps / (job->rec_interval > 0 ? job->rec_interval : 1) + 1);
  /* c²dt² on the padded grid, the model while it is converted, sources and trace buffers; the
   * receivers' tables, ~200 B each (up to 8 taps: cells, indices, weights; positions; the output's
   * chunk column: 2e7 receivers peaked at 3.8 GB, ~190 B each, where this said 123 MiB) */
  const double per_rec = job->rec_interp == TW_INTERP_TRILINEAR ? 520.0 : 200.0; /* (2e6 trilinear: 1.03 GB) */
  est->host_bytes = 4.0 * cells + model + (traces < 128e6 ? traces : 128e6) + per_rec * (double)job->nrec;
  if (tw_kernel_is_gpu(kernel)) {
    est->session_bytes = 8.0 * cells; /* the two time levels, for snapshots and the window */
    est->device_bytes = 12.0 * cells;
    gpu_window(job, est);
  } else {
    est->session_bytes = 3.0 * halo;  /* two levels and c²dt² in the CPU layout (cpu_fields.h) */
  }
  est->host_bytes += est->session_bytes;
  /* Snapshots (run.c): the box's buffer, twice where the kernels sweep y as their x (a copy in their
   * axes), the writer's slab in the file's order, and the traces held while a snapshot is stored.
   * (Left out until session 25: a 300 x 360 x 300 cpu job with one snapshot peaked at 998 MiB where
   * this said 733.) */
  if (job->nsnap > 0) {
    int lo[3], cnt[3];
    tw_grid kg;
    tw_snapshot_box(job, lo, cnt);
    const double box = 4.0 * cnt[0] * (double)cnt[1] * cnt[2];
    /* (the slab holds at least one z-plane of the box, beyond TW_OUTPUT_SLAB_BYTES where a plane is larger) */
    const double plane = 4.0 * cnt[0] * (double)cnt[1];
    const double slab = plane > (double)TW_OUTPUT_SLAB_BYTES ? plane : (double)TW_OUTPUT_SLAB_BYTES;
    const double held = 64.0 * 1024 * 1024;
    est->host_bytes += box * (tw_grid_oriented(job, &kg) ? 2 : 1) + (box < slab ? box : slab) +
                       (traces < held ? traces : held);
  }
  return TW_OK;
}

tw_status tw_estimate_fits(const tw_job *job, const char *kernel, const tw_estimate *est, tw_error *err) {
  char need[32], have[32], n[96];
  const double host = (double)tw_host_memory_available(), cells = (double)tw_grid_cells(&est->grid);
  snprintf(n, sizeof n, "[%d, %d, %d]", job->n[0], job->n[1], job->n[2]);
  if (host > 0 && est->host_bytes > host)
    return tw_error_set(err, TW_ENOMEM, "%s: grid.n: the job needs %s of host memory and %s is available: got %s "
                        "(%.3g cells padded, %.3g bytes each with kernel %s); allowed about %.3g cells padded at most: "
                        "a coarser grid, or a machine with more memory", tw_job_where(job, job->n_where),
                        tw_format_bytes(est->host_bytes, need, sizeof need), tw_format_bytes(host, have, sizeof have), n,
                        cells, est->host_bytes / cells, kernel, host / (est->host_bytes / cells));
  /* (window_min_bytes says a window is needed; window_planes is 0 where the cap is below one x-plane) */
  if (tw_kernel_is_gpu(kernel) && est->window_min_bytes > 0 && est->device_bytes < est->window_min_bytes) {
    if (est->window_auto)
      return tw_error_set(err, TW_ENOMEM, "%s: grid.n: kernel %s: the grid does not fit the GPU's free memory (%s) "
                          "and the smallest window, about %s, does not either: got %s; allowed a smaller grid%s",
                          tw_job_where(job, job->n_where), kernel, tw_format_bytes(est->device_bytes, have, sizeof have),
                          tw_format_bytes(est->window_min_bytes, need, sizeof need), n,
                          job->tower_height ? ", or a lower solver.tower_height" : "");
    return tw_error_set(err, TW_ERANGE, "%s: solver.device_memory = %s is below the smallest window the GPU kernels "
                        "can run for this job, about %s; allowed at least that: raise solver.device_memory%s",
                        tw_job_where(job, job->dm_where), tw_format_bytes(est->device_bytes, have, sizeof have),
                        tw_format_bytes(est->window_min_bytes, need, sizeof need),
                        job->tower_height ? " or lower solver.tower_height" : "");
  }
  return TW_OK;
}

/* Where the register towers that pass gpu-diamond's model beat the stepwise kernel, measured: the
 * forced tower's rate over gpu-stepwise's on an H200 at a share of 1 (tw_gpu_tower_share: a grid
 * wide enough across its sweep that every block an SM that fits has a tower to run), layers of 20
 * cells (the bottom one included) under a free surface, the default DTS (order 2: 3, order 4: 2)
 * and band buffers (order 2: 2 where 3 would leave the SM too little L1, NZp 64, 128, 256 and 512:
 * gpu_diamond.cu, TOWER_L1_ROOM); linear in Nz between the points, constant outside them. Order 2
 * (docs/performance.md, sessions 35 and 36): Nz 144–192, 224, 256 and the multiples of 64 up to
 * 512 on 1024 x 2048 x Nz swept along y (2048 across, P 342 towers at a time, 1–2 blocks an SM;
 * 64 steps x 3); the rest on 4096 x 4096 (Nz 65–208: P 683, 2–4 blocks), 4096 x 2048 (Nz 257–449,
 * 1 block) and 4096 x 8192 swept along y (Nz 32–64: P 1366, 7–8 blocks of one warp), 32 steps x 3.
 * Session 35 had taken Nz 64–128 from 1024 x 2048 too, where 4–8 blocks an SM keep only 0.4–0.7 of
 * this (a share the model then applied twice: it predicted 0.8–1.37x where the towers ran up to
 * 1.9x). The same Nz on the two kinds of grid agreed within 4 % (Nz 144: 1.59 on 4096 x 4096). The
 * ratio is not smooth in Nz, so there is a point on each side of every multiple of 64 (the tower's
 * warps: 64 z cells each, its rate goes with Nz over the padded column, and its blocks an SM change
 * with the warps) and of 32 (the stepwise kernel's z tile: it runs 10–25 % slower on columns just
 * above one, Nz 65 173 Gcell/s, 128 260). The towers are held by the SMs and the stepwise kernel by
 * memory, so on a GPU with less DRAM bandwidth B the towers gain: the ratio scales by (B_H200 /
 * B)^0.7, fitted on an H100 (3.35 TB/s, the same SMs and clock; session 12, the damping of then):
 * there the 20 points measured 1.21–1.40 times the H200 ratio (the model: 1.29), and the choice at
 * TW_TOWER_MIN_GAIN was the faster kernel at all 40 points on both GPUs, or within 1 %. Both have
 * 132 SMs at 1.98 GHz; on a GPU with fewer or slower SMs (an H100 PCIe: 114 at 1.755 GHz) the
 * towers would gain less than this predicts — not measured. */
typedef struct {
  int nz;
  float q;
} tower_point;
static const tower_point tower_o2[] = {{32, .900f},   {48, 1.720f},  {64, 1.908f},  {65, 1.509f},  {72, 1.505f},
                                       {80, 1.472f},  {96, 1.518f},  {104, 1.899f}, {112, 1.879f}, {120, 1.935f},
                                       {128, 1.940f}, {129, 1.587f}, {136, 1.587f}, {144, 1.527f}, {160, 1.558f},
                                       {176, 1.786f}, {192, 1.817f}, {193, 1.950f}, {208, 1.969f}, {224, 1.862f},
                                       {256, 2.014f}, {257, 1.492f}, {288, 1.491f}, {320, 1.559f}, {321, 1.793f},
                                       {384, 1.797f}, {385, 2.007f}, {448, 2.023f}, {449, 2.105f}, {512, 2.065f}};
/* order 4 (dts 2, one z cell a thread, the band by cooperative 16-byte copies and, since session 41,
 * the z exchange by 16-byte accesses: gpu_diamond_tower.cuh), the tower forced, 32 steps x 3 (session
 * 42; at 8 warps a CTA, Nz 225–256 and 449–512, the band by bulk copies since session 43, measured
 * then). The stepwise kernel's rate moves with the grid's shape while the tower's does not (Nz 256:
 * the tower 285–287 Gcell/s on 2048 x 1280, 2048 x 2048 and 4096 x 2048, the stepwise kernel 249,
 * 245 and 225–233; over a cluster the same), so each point is the lowest ratio of the grids of a
 * share of 1 measured there:
 *  - Nz 129–256 (one CTA, 5–8 warps, 1 block an SM): 2048 x 1280 (P 160), the lowest at every point
 *    (4096 x 2048, P 256: within 0.3 % at Nz 176 and 192, 4–10 % above elsewhere; 2048 x 2048 1–3 %
 *    above at Nz 192–256). The tower wins from Nz ~166 (1.11–1.12x at 176–192, 1.30–1.32x at
 *    193–224, where the stepwise kernel's 64-cell z tile is short; 1.30–1.32x at 225–256 with the
 *    bulk copies, 1.12–1.14x before: the tower 331 Gcell/s at Nz 256 on 2048 x 1280, 2048 x 2048 and
 *    4096 x 2048, 1.32 / 1.36 / 1.45x).
 *  - Nz 65–128 (2 blocks an SM, towers of 3–4 warps): the lowest of 4096 x 4096 (P 512), 4096 x 3072
 *    (P 384) and at Nz 128 also 4096 x 2560 (P 320, its full rate: 284 against 286) and 3072 x 3072,
 *    where the tower runs at a share of 1 (1.08–1.14x; 4096 x 2048, P 256, 0.79–0.83 of that rate:
 *    TOWER_CHAIN_O4_SHARED). Nz 48 and 64 (4 blocks an SM): 4096 x 4096, raw, under the share the
 *    model then applies (0.69 there), so a lower bound. Below Nz 48 nothing was measured: no gain.
 *  - Nz 257–512 (the column over a cluster of 2 CTAs, one an SM, 5–8 warps each; 66 clusters): the
 *    lowest of 1024 x 1024, 2048 x 1024 and 4096 x 2048 (1024 x 1024's at every Nz but 320; 4096 x
 *    2048 measured 1.13 / 1.26 / 1.27x at Nz 384 / 416 / 448, and with the bulk copies 1.28x at
 *    512; 1024 x 1024 1.17–1.18x at 449–512, 1.05x before them). The tower wins from Nz ~378.
 * Points up to Nz 128 and over a cluster are not scaled for a GPU's bandwidth (tw_gpu_tower_gain):
 * measured on an H200 only. On 2048 x 1024 (P 128, a share of 0.86 by the model) the
 * ratios are within 3 % of table x share (Nz 208 / 224 / 256: 1.10 / 1.12 / 0.98x). */
static const tower_point tower_o4[] = {{47, 0.0f},    {48, 1.046f},  {64, .876f},   {65, 1.085f},  {72, 1.084f},
                                       {80, 1.096f},  {96, 1.141f},  {112, 1.127f}, {128, 1.127f}, {129, .960f},
                                       {160, .983f},  {176, 1.110f}, {192, 1.122f}, {193, 1.295f}, {208, 1.305f},
                                       {224, 1.316f}, {225, 1.295f}, {240, 1.308f}, {256, 1.319f}, {257, .827f},
                                       {288, .835f},  {320, .884f},  {352, .996f},  {384, 1.038f}, {416, 1.115f},
                                       {448, 1.139f}, {449, 1.168f}, {480, 1.172f}, {512, 1.176f}};
#define TOWER_BW_EXPONENT 0.7

static double tower_interp(const tower_point *t, int n, int nz) {
  if (nz <= t[0].nz) return t[0].q;
  for (int i = 1; i < n; i++)
    if (nz <= t[i].nz) return t[i - 1].q + (double)(nz - t[i - 1].nz) / (t[i].nz - t[i - 1].nz) * (t[i].q - t[i - 1].q);
  return t[n - 1].q;
}

double tw_gpu_tower_gain(int r, int nz, double bw) {
  double q;
  if (r == 1)
    q = tower_interp(tower_o2, (int)(sizeof tower_o2 / sizeof tower_o2[0]), nz);
  else if (r == 2) {
    q = tower_interp(tower_o4, (int)(sizeof tower_o4 / sizeof tower_o4[0]), nz);
    /* the points up to Nz 128 (2–4 blocks an SM; at 48–64 lower bounds, below 48 none measured)
     * and those above 256 (the cluster's) were not measured on another GPU: a GPU of less
     * bandwidth is predicted no more than that there */
    if (nz <= 128 || nz > 256) return q;
  } else {
    return 0.0;
  }
  return q * (bw > 0 ? pow(TW_H200_DRAM_BYTES_PER_S / bw, TOWER_BW_EXPONENT) : 1.0);
}

/* The share of tw_gpu_tower_gain that a persistent grid keeps on a grid of P towers of parallelism
 * (tw_schedule_parallelism), measured on an H200 (docs/performance.md, sessions 32, 35 and 36:
 * order 2, dts 3, the x sweep, layers of 20; Nz 96–128: 64 threads a tower, bmax = 4 blocks an SM
 * fit; Nz 200–256: 128 threads, bmax 2; Nz 384–512: 1). With b blocks an SM launched, two bounds:
 *   - the workers: b of bmax blocks an SM run at work(b) = 1 − (1 − b/bmax)^1.7 of the SMs' full
 *     rate (measured at bmax 4: 0.37, 0.67, 0.86, 1; at bmax 2: 0.71, 1 — the SM's resident warps,
 *     whatever the blocks they come in: a tower of 2 warps alone hides little of its latency);
 *   - the chain: a block takes at least its longest chain of towers, so the rate is at most P towers
 *     at the rate each one has, u(b) of the SM's full rate: alone, work(1); beside others, 1.54 ·
 *     b^−0.36 / bmax (a tower's steps go at a pace set by the blocks beside it, b, and its cells
 *     are 1/bmax of what the SM holds; fitted at bmax 2 and 4: at b = 2 both measured 1.13–1.18 /
 *     bmax, the formula 1.20 / bmax).
 * The share is the larger over b of the lower of the two, and that b is the blocks to launch: more
 * workers than towers to run only slow the chain (4096 × 2048 × 128, P 342: 4 blocks 319 Gcell/s,
 * 3 blocks 339), fewer leave SMs idle (2048 × 1536 × 256, P 257: 1 block 372, 2 blocks 523). On 24
 * grids (P 43–1366, Nz 64–512, bmax 1–8) it gives the tower's rate within 7 % (every b run within
 * 11 %; test_schedule allows 10 %), against TW_TOWER_MIN_GAIN the faster kernel on each, and blocks
 * an SM within 2 % of the fastest count but on the one grid of bmax 8 measured, 4096 × 8192 × 64:
 * there it takes 7 blocks where 8 ran 6 % faster (its chain bound at b = 8, 0.94, was not reached).
 * At TW_TOWER_MIN_GAIN's edge that error can take the slower kernel: 1024 × 2048 × 96 (swept along
 * y, P 342, 2 blocks) was predicted 1.05x and ran 0.98x (session 36). Off the grids it was fitted
 * to it can miss by more: 2000 × 1500 × 200 was predicted 1.95x and ran 1.64x (each kernel's rate
 * moved 8 % with the grid's shape, in opposite directions).
 * Session 35's form (work (b/bmax)^0.49, a chain of P/b) was fitted at bmax ≤ 2 only: at bmax 4 it
 * predicted 0.65 of the gain on grids of P 171 (1024 across), where 0.38 ran.
 * Order 4's towers (r = 2; one block an SM at Nz 129–256) keep less on a chain: at P 128 (2048 x
 * 1024 x 256) 0.858 of their rate where order 2's form says 0.97, and all of it from P 160 (session
 * 37): the chain bound there is TOWER_CHAIN_O4 times order 2's. One point fits it; orders 6 and 8
 * have no tower that `auto` runs. At 2 blocks an SM (Nz 65–128, towers of 3–4 warps) its chain is
 * slower still (session 42, 4096 x N1, the tower's rate against its rate at P 512): Nz 128 0.83 at
 * P 256, 0.99–1.0 from P 320; Nz 96 0.79 at P 256, 0.94 at P 320, 1.0 at P 384. TOWER_CHAIN_O4_SHARED
 * fits the lowest of these (Nz 96, P 320; at P 256 it predicts 0.75, below both) and serves every bmax
 * ≥ 2 (bmax 4, Nz ≤ 64, not fitted: the lower constant, under table points that are lower bounds). */
#define TOWER_CHAIN_O4 0.885
#define TOWER_CHAIN_O4_SHARED 0.643

static double tower_work(int b, int bmax) { return 1.0 - pow(1.0 - (double)b / bmax, 1.7); }
double tw_gpu_tower_share(int r, double P, int sms, int bmax, int *blocks) {
  if (bmax < 1) bmax = 1;
  double best = 0.0;
  int bb = bmax;
  if (sms >= 1 && P > 0) {
    const double work1 = tower_work(1, bmax);
    const double chain_r = r < 2 ? 1.0 : bmax == 1 ? TOWER_CHAIN_O4 : TOWER_CHAIN_O4_SHARED;
    for (int b = 1; b <= bmax; b++) {
      const double work = tower_work(b, bmax);
      const double pace = 1.54 * pow((double)b, -0.36) / bmax;
      const double chain = (pace < work1 ? pace : work1) * chain_r * P / sms;
      const double share = chain < work ? chain : work;
      if (share > best) best = share, bb = b;
    }
  } else {
    best = 1.0;
  }
  if (blocks) *blocks = bb;
  return best < 1.0 ? best : 1.0;
}

/* A call of L steps runs ceil(L / nt) towers of equal height h a column, and a tower has a fixed
 * cost (its first loads, its ticket and its predecessors' flags, its last stores, the DAG's fill
 * and drain) of about TOWER_FIXED_STEPS steps of its work: its rate goes as h / (h + c). Fitted on
 * the towers' rate in calls of 8–256 steps against 32 (H200, session 38: order 2 on 1024² × 512,
 * order 4 on 4096 × 2048 × 224 and over a cluster on 1024² × 512; gpu-stepwise's rate did not move):
 * within 4.4 % at h 8, 3 % from h 12 (test_schedule). The tables were measured in calls of 32
 * (order 2's points at Nz 257–512 in calls of 64: this puts them 4 % higher, far from the
 * threshold). */
#define TOWER_FIXED_STEPS 2.7
double tw_gpu_tower_height_factor(int nt, long call_steps) {
  if (nt < 1) return 1.0;
  double h = nt;
  if (call_steps > 0) {
    const long blocks = (call_steps + nt - 1) / nt;
    h = (double)call_steps / (double)blocks;
  }
  const double c = TOWER_FIXED_STEPS;
  return (h / (h + c)) / (32.0 / (32.0 + c));
}

double tw_gpu_dram_bytes_per_s(int mem_clock_khz, int bus_bits) {
  return mem_clock_khz > 0 && bus_bits > 0 ? 2.0 * mem_clock_khz * 1e3 * bus_bits / 8.0 : 0.0;
}
