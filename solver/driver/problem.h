/* problem.h — internal to solver/: the problem every kernel receives, and the kernel (backend)
 * interface. A backend advances the two time levels and records receiver tap values; the
 * driver (run.c) owns time blocks, traces, snapshots and output. */
#ifndef TW_PROBLEM_H
#define TW_PROBLEM_H

#include "tw_solver.h"
#include "tw_stencil.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Level m of the field lives in array m % 2 (p^{m+1} overwrites p^{m−1}).
 *
 * Two parts: the medium (grid, stencil, c²dt², damping, wavelets, run parameters), which no shot
 * changes, and the shot tables (sources: inj, S; receivers: tap, rec_*), which a survey rebuilds
 * per shot (tw_problem_set_sources / _set_receivers) before it resets the backend. */
struct tw_problem {
  tw_grid g;                 /* padded grid, as the kernels see it (tw_grid_oriented) */
  int swap_xy;               /* the kernels' x is the job's y and their y the job's x */
  int order;
  tw_stencil st;
  double dt;
  long steps;
  int free_surface;

  float *c2dt2;              /* [N0][N1][N2] c²dt², z fastest */
  float *a[3];               /* damping a = η dt/2 per padded index of each axis */

  /* Sources: injection cells, unique, sorted by (i, j, k); S[c·steps + n] = S^n of cell c,
   * i.e. Σ_s w_s s_s(t_n)/(dx dy dz), formed in double, rounded once to float. */
  int ninj;
  int (*inj)[3];
  float *S;

  /* Receivers: unique tap cells sorted by (i, j, k); each receiver combines up to 8 of them
   * with tw_receiver_combine in its fixed tap order. Sample j is level j·interval. */
  int interval;
  long nsamples;             /* floor(steps / interval) + 1 */
  long ntap;
  int (*tap)[3];
  long nrec;
  int *rec_ntap;             /* [nrec] */
  long (*rec_tap)[8];        /* [nrec][8] indices into tap */
  float (*rec_w)[8];         /* [nrec][8] */

  /* DiamondTorre parameters (0 = default per order) and the memory cap (0 = none). */
  int dts, tower_height;
  /* The advance calls' usual length where the caller knows it, 0 where not: a run's steps over its
   * cuts (tw_job_call_steps), bench's --steps. A call of n steps is ceil(n / height) towers of
   * equal height, and a tower's fixed cost weighs more in a short one: gpu-diamond predicts its
   * gain at that height (tw_gpu_tower_height_factor). */
  long call_steps;
  uint64_t device_memory;
  int threads;               /* CPU threads, 0 = OpenMP default */

  /* Kept for the output: the sources' wavelets s(t_n), [nsrc][steps + 1]. */
  int nsrc;
  float *wavelets;

  int borrowed;              /* c2dt2, a[] and wavelets belong to another problem (the medium) */
  tw_phases *phases;         /* during a backend's create (may be NULL): where it times its parts */
};

/* A point or cell in the job's axes from the kernels' (and back: the swap is its own inverse). */
static inline void tw_xy_point(int swap, const double in[3], double out[3]) {
  const double a = in[0], b = in[1];
  out[0] = swap ? b : a, out[1] = swap ? a : b, out[2] = in[2];
}
static inline void tw_xy_cell(int swap, const int in[3], int out[3]) {
  const int a = in[0], b = in[1];
  out[0] = swap ? b : a, out[1] = swap ? a : b, out[2] = in[2];
}

/* The medium alone (no sources, no receivers), from a finalized job and its velocity model
 * (whole or compact). */
tw_status tw_problem_create_medium(const tw_job *job, const tw_velocity *v, tw_problem **out, tw_error *err);
/* The sizes and parameters of the problem a finalized job gives (grid, order, stencil, steps, the
 * solver's settings), no arrays and nothing allocated: what `check` needs to size a kernel's plan. */
tw_status tw_problem_sizes(const tw_job *job, tw_problem *pb, tw_error *err);
/* The mean length of a run's segments between cuts: its snapshots, its checkpoints by step
 * (checkpoint.every; those by wall clock are not known ahead) and its end. The driver advances each
 * segment in equal blocks of at most the kernel's height (run.c: time_loop). */
long tw_job_call_steps(const tw_job *job);
/* A kernel's message speaks of its own axes (x-planes, N0 x N1 x N2): on a job swept along y, append
 * which they are. */
void tw_problem_axes_note(const tw_problem *pb, tw_error *err);
/* A problem of its own (for one session) on a medium: the medium's arrays shared, read-only,
 * not freed with it; no shot tables yet. The medium must outlive it. */
tw_status tw_problem_borrow(const tw_problem *medium, tw_problem **out, tw_error *err);
/* The shot tables, replacing what was there: the job's sources at pos[0 .. nsources) (sources
 * placed with their interpolation, S from the wavelets), the job's receivers at rec[r] + offset. */
tw_status tw_problem_set_sources(tw_problem *pb, const tw_job *job, const double (*pos)[3], tw_error *err);
tw_status tw_problem_set_receivers(tw_problem *pb, const tw_job *job, const double offset[3], tw_error *err);
/* The largest |S^n| of any injection cell of the job's sources at their positions, in double
 * before S is rounded to float (several sources in one cell add up), and that cell's sources: the
 * first two (*second -1 when one) and how many. What the validation bounds (§10.1). */
tw_status tw_problem_source_peak(const tw_job *job, double *peak, int *first, int *second, int *nshared,
                                 tw_error *err);

/* Samples that fall in the levels (t0, t0 + n]: first = t0/interval + 1, count may be 0. */
static inline void tw_samples_in(const tw_problem *pb, long t0, long n, long *first, long *count) {
  long f = t0 / pb->interval + 1, l = (t0 + n) / pb->interval;
  *first = f;
  *count = l >= f ? l - f + 1 : 0;
}

typedef struct tw_backend_ops {
  const char *name;
  int needs_gpu;
  tw_status (*create)(const tw_problem *pb, void **state, tw_error *err);
  /* Advance from level t0 to level t0 + n. For every sample j in tw_samples_in(t0, n), store
   * the value of tap t at level j·interval in taps[(j − first)·ntap + t]. Every level that ends
   * a call is a block boundary: the whole field is at level t0 + n afterwards. */
  tw_status (*advance)(void *state, long t0, long n, float *taps, tw_error *err);
  /* Copy the current level of padded cells lo + dec·(i, j, k), i < cnt[0] ... into
   * out[cnt0][cnt1][cnt2]. */
  tw_status (*extract)(void *state, const int lo[3], const int cnt[3], int dec, float *out, tw_error *err);
  /* Steps per advance call that suit the kernel (a tower height); the driver uses multiples of
   * it and shortens the last block or those that end at a snapshot. */
  long (*block_steps)(void *state);
  /* A new shot on the same medium: both time levels back to zero (level 0, the medium at rest:
   * afterwards the backend computes what a fresh one would, bit for bit), and the problem's shot
   * tables, which the caller has just rebuilt, taken up again: the sources' with TW_RESET_SOURCES,
   * the receivers' with TW_RESET_RECEIVERS (a fixed spread keeps its receivers). Nothing else is
   * rebuilt; device buffers are reallocated only when a table outgrows them. A fresh backend that
   * has not advanced skips the zeroing. */
  tw_status (*reset)(void *state, unsigned what, tw_error *err);
  void (*report)(void *state, tw_run_report *rep);   /* may be NULL */
  void (*destroy)(void *state);
  /* Checkpoints, at a block boundary (after create or an advance call). save: x-planes
   * [x0, x0 + nx) of the current level t into cur and of level t − 1 into prev, each [nx][N1][N2],
   * z fastest, no padding — the same bytes whatever the kernel, so that another kernel of the family
   * resumes them bit for bit. load: the reverse, before the first advance of a resumed run; once
   * every plane is loaded the field is at level t and the next advance starts from t. Any state a
   * kernel keeps between steps besides the two levels is rebuilt from them here. */
  tw_status (*save)(void *state, int x0, int nx, float *cur, float *prev, tw_error *err);
  tw_status (*load)(void *state, long t, int x0, int nx, const float *cur, const float *prev, tw_error *err);
  /* Whether the current level holds inf or NaN (an overflow): *count = how many values (0: none;
   * padding may count), and cell = the padded cell of one of them. The driver asks after every
   * advance call (a block boundary); a backend answers from where the field is resident (device,
   * or the host copy of a window) at about one read of the level. May be NULL (never checked). */
  tw_status (*find_nonfinite)(void *state, long long *count, int cell[3], tw_error *err);
} tw_backend_ops;

enum { TW_RESET_SOURCES = 1, TW_RESET_RECEIVERS = 2 };

/* The first non-finite value of a[0..n): its index, −1 when every value is finite; *count: how
 * many (nonfinite.c; OpenMP, vectorized integer test). */
long tw_find_nonfinite_f32(const float *a, size_t n, long long *count);

/* The run driver's watch over the field (nonfinite.c): after the advance call that ended at level
 * `end` (it took block_s seconds), ask the backend whether the field holds inf or NaN; an error
 * (TW_ERANGE) names the steps between which it appeared (the last level found finite, and end).
 * Level 0 is finite: start from {0}. */
typedef struct tw_finite_watch {
  long ok;                   /* the last level found finite */
  double scan_s, since_s;    /* the last scan's time; computing since it */
} tw_finite_watch;
tw_status tw_finite_check(tw_finite_watch *w, const tw_backend_ops *be, void *state, const tw_problem *pb,
                          const char *job_path, long end, double block_s, tw_error *err);

const tw_backend_ops *tw_backend_find(const char *name);

/* Zero n floats with all threads (a reset of large host fields; first touch of fresh ones). */
void tw_zero_floats(float *p, size_t n);
/* out[a][b][c] = p[(lo0 + a·dec)·sx + (lo1 + b·dec)·sy + lo2 + c·dec] for a < cnt[0], b < cnt[1], c < cnt[2],
 * with all threads (a snapshot of a field in host memory: gigabytes, and the time loop waits). */
void tw_gather_box(const float *p, size_t sx, size_t sy, const int lo[3], const int cnt[3], int dec, float *out);

/* Stencil weights for an order and spacing; returns r, 0 for an unsupported order. */
int tw_stencil_setup(int order, const double d[3], tw_stencil *st);

/* GPUs visible to this process (0 without CUDA or without a device). */
int tw_gpu_count(void);

/* gpu-diamond's register tower against the stepwise kernel (estimate.c: measured on an H200 per Nz,
 * scaled for the GPU's DRAM bandwidth in bytes/s, 0: unknown): the predicted ratio of their rates at
 * radius r (orders 2 and 4; 0 for orders whose towers never win) on columns of nz cells. gpu-diamond
 * runs the tower where the ratio is at least TW_TOWER_MIN_GAIN (gpu_diamond.cu: dia_init), and
 * `check` estimates its rate with it (validate.c). */
#define TW_TOWER_MIN_GAIN 1.03
double tw_gpu_tower_gain(int r, int nz, double dram_bytes_per_s);
/* The share of that ratio a persistent grid of towers of radius r keeps where the tower DAG is
 * narrow: P its average parallelism in towers (plan/schedule.h: tw_schedule_parallelism), the GPU's
 * SMs, bmax the tower's blocks that fit an SM; *blocks (may be NULL): the blocks an SM to launch, in
 * [1, bmax]. In (0, 1]; estimate.c says what it was fitted on. */
double tw_gpu_tower_share(int r, double P, int sms, int bmax, int *blocks);
/* The towers' rate at their height in the calls against the tables' (measured in calls of 32
 * steps): nt the tower height, call_steps the calls' length (tw_problem.call_steps; 0: unknown,
 * taken as long). */
double tw_gpu_tower_height_factor(int nt, long call_steps);
/* A GPU's DRAM bandwidth from its memory clock (kHz) and bus width (bits), double data rate; 0 when
 * either is unknown. TW_H200_DRAM_BYTES_PER_S: the H200's, the GPU the tables of rates were measured
 * on, as its attributes give it (6144 bits, ~3.13 GHz: 4.8 TB/s; `check` printed a scale of 0.98
 * against the 4.92 of nvidia-smi's 3201 MHz, session 12), so that an H200 scales by 1. */
double tw_gpu_dram_bytes_per_s(int mem_clock_khz, int bus_bits);
#define TW_H200_DRAM_BYTES_PER_S 4.8e12

/* Backends. */
extern const tw_backend_ops tw_backend_cpu;
#ifdef __cplusplus
}
#endif

/* gpu-stepwise (gpu_stepwise.cu, CUDA builds only). Tuning variants for `torrewave bench`
 * ("gpu-stepwise@NAME"); the registry's kernel uses the default variant of the order. */
#ifdef TW_WITH_CUDA
#ifdef __cplusplus
extern "C" {
#endif
extern const tw_backend_ops tw_backend_gpu_stepwise;
int tw_gpu_stepwise_variant_count(void);
const char *tw_gpu_stepwise_variant_name(int i);
const char *tw_gpu_stepwise_default_variant(int order);   /* NULL for an order it lacks */
/* variant NULL, "" or "default" = the default of the problem's order. */
tw_status tw_gpu_stepwise_create_variant(const tw_problem *pb, const char *variant, void **state, tw_error *err);
/* Bench only: fill levels 0 and −1 with small random values (timing never runs on zeros). */
tw_status tw_gpu_stepwise_randomize(void *state, uint64_t seed, tw_error *err);
/* The same for a gpu-diamond state that runs the stepwise kernel (TW_EUNSUPPORTED when it runs
 * its own towers: the bench then starts it from rest and says so). */
tw_status tw_gpu_diamond_randomize(void *state, uint64_t seed, tw_error *err);
/* Time fn(arg) between two CUDA events recorded on the legacy default stream (gpu_bench.cu). */
tw_status tw_gpu_time_call(tw_status (*fn)(void *arg, tw_error *err), void *arg, double *seconds, tw_error *err);
#ifdef __cplusplus
}
#endif
#endif
#endif
