/* window.h — the host-memory sliding window of docs/design.md §3.
 *
 * The full fields (both time levels and c²dt²) stay in host memory; the solver works on a ring
 * of W x-planes ("device" memory: a GPU buffer, or on the CPU path a second host buffer), plane
 * x in slot x mod W (the GPU window rotates that per block, gpu_window.cu). During a block, stage
 * s touches the planes [Rs − r, Rs + nt·r + 2R)
 * (tw_stage_planes): its updated rows and r planes of stencil reads on each side. Stages run in
 * decreasing s, so this interval slides left by R per stage: cells to its right are finished for
 * the block (level t0 + nt), cells to its left untouched (level t0). Hence, per block:
 *   - before stage s, bring in the planes it touches that stage s + 1 did not (all of them
 *     for the first stage): R planes at its left end;
 *   - after stage s, write back the planes it touched that stage s − 1 will not (all that are
 *     left after the last stage): R planes at its right end;
 * and every plane comes in exactly once and goes back exactly once per block, both levels and c²
 * in (12 B per cell), both levels out (8 B). The live planes always form an interval of at most
 * tw_window_min_planes planes, so with W at least that, no two live planes share a slot.
 *
 * Planes are indexed over [−r, N0 + r): the r planes on each side of the grid are "virtual":
 * they must read as zero (p = 0 outside the grid) and are brought in as zeros, never written
 * back. A kernel that bounds-checks its x reads may skip them; the plan includes them so a ring
 * kernel can read x ± m without a test.
 *
 * The plan part (tw_window_*_planes) is plain integer C on a tw_schedule, independent of where
 * the copies go: the GPU window uses it with its own copy engine. The CPU executor below moves
 * planes between two tw_cpu_fields. */
#ifndef TW_WINDOW_H
#define TW_WINDOW_H

#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the plan (plain C) */

/* Planes stage s touches, clipped to [−r, N0 + r): [lo, hi). */
void tw_window_touched(const tw_schedule *sc, int s, int *lo, int *hi);
/* Planes to bring in before stage s runs (may be empty: lo ≥ hi). */
void tw_window_in_planes(const tw_schedule *sc, int s, int *lo, int *hi);
/* Planes to write back after stage s ran (may be empty). */
void tw_window_out_planes(const tw_schedule *sc, int s, int *lo, int *hi);
/* Ring planes a block needs when planes are brought in `prefetch` stages ahead (0: just before
 * the stage; a kernel that overlaps copies with the stage k stages earlier needs k): the largest
 * number of planes live at once, max over s of |[lo(s − prefetch), hi(s)) ∩ [−r, N0 + r)|. */
int tw_window_min_planes(const tw_schedule *sc, int prefetch);
/* The same plan for any sweep of stages in decreasing s where stage s, at local step τ of a block
 * of nt steps, updates the rows [R·s + τ·r, R·s + τ·r + width) and reads r planes on each side,
 * so that it touches [R·s − r, R·s + nt·r + width): DiamondTorre stages (width 2R, the schedule
 * above) or the slabs of the stepwise kernel (width R: stage s at step τ is one launch over those
 * R rows). Planes are clipped to [−margin, N0 + margin): the planes a kernel can touch outside the
 * grid (its zero padding; 0 for a kernel that bounds-checks x). Stages go in groups of G, s_hi
 * down (one kernel launch per group on the GPU); per block, group g
 *   - touches [lo(g), hi(g)) = the union of its stages' planes (both ends slide left),
 *   - brings in [lo(g), lo(g − 1)) before it runs (all of its planes for g = 0),
 *   - writes back [hi(g + 1), hi(g)) after it ran (all that remain for the last group),
 * so every plane of the block's span comes in once and goes back once. */
typedef struct tw_window_plan {
  int N0, r, R, nt, width, margin;
  int s_hi, s_lo;  /* stages run s_hi, s_hi − 1, …, s_lo */
  int G, ngroups;  /* stages per group; groups g = 0 … ngroups − 1 */
} tw_window_plan;
/* The plan of a DiamondTorre block (schedule sc) and of a block of stepwise slabs of R rows. */
void tw_window_plan_diamond(const tw_schedule *sc, int margin, int G, tw_window_plan *p);
void tw_window_plan_slabs(int N0, int r, int R, int nt, int margin, int G, tw_window_plan *p);
/* Stages [s_bot, s_top] of group g. */
void tw_window_group_stages(const tw_window_plan *p, int g, int *s_top, int *s_bot);
void tw_window_group_touched(const tw_window_plan *p, int g, int *lo, int *hi);
void tw_window_group_in(const tw_window_plan *p, int g, int *lo, int *hi);
void tw_window_group_out(const tw_window_plan *p, int g, int *lo, int *hi);
/* Ring planes for copies one group ahead: the planes of group g and those coming in for g + 1
 * must be distinct slots, max over g of hi(g) − lo(g + 1) (overlap 0: the smallest ring that
 * works; the in-copies of g + 1 then wait for the out-copies of g − 1 where slots are shared). With
 * overlap 1 also the out-copies of g − 1 stay apart: max of hi(g − 1) − lo(g + 1) (copies both
 * ways overlap the kernel of g). */
int tw_window_plan_min_planes(const tw_window_plan *p, int overlap);

/* The tower height of a job without solver.tower_height whose default height's ring does not fit
 * its cap: the tallest h in [1, nt) with fits(ctx, h), or 0 when none. Every height gives the same
 * bits (a block boundary is only where the field is whole); a lower one moves the grid more often
 * (20 B per cell per block, docs/design.md §3), which only the run's speed notices. `fits` must be
 * monotone (a ring that holds height h holds every lower one): a bisection. */
int tw_window_fit_height(int nt, int (*fits)(void *ctx, int h), void *ctx);

/* Host-to-device bandwidth the window's model assumes while the out-copies run beside (PCIe 5 x16
 * on the H200 machines: 49.5 GB/s alone, docs/design.md §3; 36 GB/s in with 24 GB/s out at a 20 %
 * copy wait on 3424 x 1024 x 268, order 8): with 12 B per cell in per block of h steps, the copies
 * keep pace up to this·h/12 cell updates per second. The models use it as the link below. */
#define TW_WINDOW_H2D_BYTES_PER_S 40e9
/* The same link as both directions together (40 GB/s in while 8/12 of that goes out: 66.7 GB/s): a
 * block of h steps whose in-copies move `in` bytes a cell (12, or 8 where c²dt² repeats along x:
 * tw_window_c2_repeats) and its out-copies 8 keeps pace up to this·h / (in + 8) cell updates per
 * second. Measured on the H200 (session 21): 68 GB/s both ways on 2032² × 632 at order 8, in 8 and
 * 12 B alike. An effective pace, not the link: PCIe is full duplex (~52 GB/s each way, 95–100
 * together, session 22), and the in-copies then waited for whole out-batches (now chunks: the copy
 * wait of 2048² × 640 fell from 11.7 to 1.2 % at the same heights); the heights it picks were
 * measured (docs/performance.md, sessions 20–21), so it stays until a sweep shows better ones. */
#define TW_WINDOW_LINK_BYTES_PER_S (TW_WINDOW_H2D_BYTES_PER_S * 20.0 / 12.0)

/* The link's pace one way (H2D or D2H alone; PCIe is full duplex): 51–55 GB/s on the H200 machines for
 * copies of 2–64 MB (session 22's probe, docs/design.md §3.5). gpu-diamond's window height rule
 * (gpu_diamond.cu: window_setup) predicts the in-copies' pace with it. */
#define TW_WINDOW_LINK_ONE_WAY_BYTES_PER_S 52e9

/* GPU memory a kernel leaves free beside its fields (the CUDA context, receivers, flags, staging):
 * a grid above free − reserve runs through the window. Shared by the GPU kernels and `check`. */
static inline double tw_gpu_reserve_bytes(double total) { return 512.0 * 1024 * 1024 + 0.02 * total; }

/* The x-planes of c²dt² (c2: [N0][plane] floats, plane = N1·N2) that repeat the next plane bit for
 * bit: same_next[x] = 1 where plane x equals plane x + 1, else 0 (same_next[N0 − 1] = 0); returns
 * how many do. The GPU window brings planes in from high x to low (every sweep is in decreasing s),
 * so plane x + 1 is in the ring when plane x comes in, and a repeating plane is copied there on the
 * device instead of over the link: 4 of the 12 B a cell that come in per block (docs/design.md
 * §3.3). A medium that varies with depth only (layers, gradients) repeats everywhere; a fully 3-D
 * one nowhere (the comparison then stops at each plane's first differing cell). OpenMP over x. */
long tw_window_c2_repeats(const float *c2, int N0, size_t plane, unsigned char *same_next);

/* Whether plane x is a grid plane (copied) or a virtual zero plane outside the grid. */
static inline int tw_window_plane_is_real(const tw_schedule *sc, int x) { return x >= 0 && x < sc->N0; }

#ifdef __cplusplus
}
#endif

/* ---------------------------------------------------------------- the CPU executor */
#ifndef __CUDACC__
#include "cpu_fields.h"

typedef struct tw_window {
  const tw_problem *pb;
  tw_cpu_fields *host;       /* the full fields, not owned */
  tw_cpu_fields ring;        /* W planes, wrap = W; what the solver updates */
  int W;
  long planes_in, planes_out;   /* grid planes moved (virtual zero planes not counted) */
  double bytes_in, bytes_out;   /* payload: N1·N2 cells × (12 B in, 8 B out) per plane */
} tw_window;

/* What a job needs on the CPU path, for DiamondTorre parameters dts, nt (resolved): the ring
 * planes of the tallest block (min(nt, steps)), the bytes of that smallest ring, and the bytes
 * of the whole grid (three arrays with their halos, as tw_cpu_fields allocates them). */
typedef struct tw_window_need {
  int min_planes;
  uint64_t min_bytes;
  uint64_t whole_bytes;
} tw_window_need;
void tw_window_cpu_need(const tw_problem *pb, int dts, int nt, tw_window_need *need);
uint64_t tw_window_cpu_ring_bytes(const tw_problem *pb, int W);

/* Ring planes under the cap `cap` bytes (pb->device_memory): 0 when the whole grid fits or there
 * is no cap (no window, no copies), else the most planes that fit. A cap below the smallest ring
 * is an error that names the smallest cap that works. */
tw_status tw_window_cpu_size(const tw_problem *pb, int dts, int nt, uint64_t cap, int *W, tw_error *err);

tw_status tw_window_create(const tw_problem *pb, tw_cpu_fields *host, int W, tw_window *w, tw_error *err);
void tw_window_destroy(tw_window *w);
/* Copy one plane in (grid plane: both levels and c²dt² from the host; virtual: zeros) or back
 * (grid planes only: both levels). Distinct planes may be copied concurrently. */
void tw_window_copy_in(tw_window *w, const tw_schedule *sc, int x);
void tw_window_copy_out(tw_window *w, const tw_schedule *sc, int x);
#endif

#endif
