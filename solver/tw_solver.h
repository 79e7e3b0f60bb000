/* tw_solver.h — running a job: the problem on the padded grid, the kernels (backends) behind
 * one interface, the run driver that streams traces and snapshots to the output, and estimates
 * for `torrewave check`. */
#ifndef TW_SOLVER_H
#define TW_SOLVER_H

#include <stdint.h>

#include "tw_common.h"
#include "tw_io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The update's arithmetic, by name (docs/design.md §1.2–1.3). Every kernel computes the same bits
 * under it; a result computed under another form differs in its last bits. A survey's job hash
 * carries it, so that a restart reruns the shot files an older form computed. Change it with the
 * form. */
#define TW_UPDATE_FORM                                                                                 \
  "pair form in two fused chains, g = RN(RN(1/(1+(ax+ay))) * RN(1/(1+az))), subnormals flushed, "      \
  "x the longer horizontal axis (2026-11-28)"

typedef struct tw_problem tw_problem;

/* Everything a kernel needs, built from a finalized job and its velocity model. */
tw_status tw_problem_create(const tw_job *job, const tw_velocity *v, tw_problem **out, tw_error *err);
void tw_problem_destroy(tw_problem *pb);
/* The grid as the kernels see it: x and y exchanged where the job's y is longer (tw_grid_oriented). */
const tw_grid *tw_problem_grid(const tw_problem *pb);

/* Kernels this build knows; usable ones depend on the machine (a GPU for gpu-*). */
int tw_kernel_count(void);
const char *tw_kernel_name(int i);
int tw_kernel_is_gpu(const char *name);
/* "auto" → gpu-diamond, else gpu-stepwise with a GPU; without one cpu-diamond where its towers pay
 * (job given: the kernels' padded y length ≥ 16 × the threads, no solver.device_memory), else cpu
 * (cpu_diamond.c: tw_cpu_auto_diamond). Unknown names: error. */
tw_status tw_kernel_resolve(const char *requested, const tw_job *job, char *out, size_t len, tw_error *err);
/* Why "auto" took the CPU kernel it took, in words ("" when the job names a kernel or a GPU runs). */
void tw_kernel_auto_note(const tw_job *job, const char *kernel, char *buf, size_t n);

/* Defaults per order for the DiamondTorre parameters. */
int tw_default_dts(int order);
int tw_default_tower_height(int order);

/* should_stop's answers. */
enum { TW_RUN_GO = 0, TW_RUN_STOP = 1, TW_RUN_SUSPEND = 2 };

typedef struct tw_run_hooks {
  /* Called after each chunk of steps (the app rate-limits what it prints); once more with
   * elapsed_s = 0 before the first step of a resumed run (step = the checkpoint's). */
  void (*progress)(void *user, long step, long steps, double elapsed_s, double cells_per_s);
  /* Asked at each block end. TW_RUN_STOP: the run ends with TW_EINTR and the output is removed.
   * TW_RUN_SUSPEND with checkpointing configured: a checkpoint of that step is written, and once it
   * is on disk the run ends with TW_ESUSPEND (resumable; the output so far is in the checkpoint's
   * journal); without checkpointing it is TW_RUN_STOP. */
  int (*should_stop)(void *user);
  void *user;
  /* 1: continue from the job's checkpoint (torrewave run --resume). */
  int resume;
  /* What the run's validation found before it started (may be NULL): warnings (warning = 1:
   * dispersion, settings that do nothing) and notes (earlier runs' temporaries removed). */
  void (*message)(void *user, int warning, const char *text);
} tw_run_hooks;

/* Where the wall time of a run went: named phases in the order they first ran, seconds each (a
 * name added again accumulates). The run report's set-up breakdown (README, "Set-up time"). */
#define TW_MAX_PHASES 24
typedef struct tw_phases {
  int n;
  struct {
    char name[48];
    double s;
  } e[TW_MAX_PHASES];
} tw_phases;
/* p may be NULL (nothing recorded); past TW_MAX_PHASES names, the last entry accumulates. */
void tw_phases_add(tw_phases *p, const char *name, double seconds);
double tw_phases_get(const tw_phases *p, const char *name);   /* 0 when absent */

typedef struct tw_run_report {
  char kernel[32];
  double wall_s;             /* whole run, set-up and output included */
  double compute_s;          /* time inside the kernel's advance calls */
  double output_s;           /* time in the time loop's output: traces, snapshots (their extraction too) */
  double cell_updates;       /* padded cells × steps */
  double gcells_per_s;       /* cell_updates / compute_s / 1e9 */
  long steps;
  double dt;
  /* sliding window (zero when the whole grid is resident) */
  int window_planes;         /* x-planes in the window ring, 0 = whole grid */
  long planes_in, planes_out;
  double bytes_in, bytes_out;
  long c2_planes_reused;     /* GPU: in-planes whose c²dt² repeats the next plane's, copied on the device
                                (not over the link, not in bytes_in) */
  double copy_wait_frac;     /* share of kernel time spent waiting for copies (per compute stream) */
  char note[512];            /* e.g. "window used: grid does not fit the GPU" */
  /* checkpoints (zero without a checkpoint group) */
  long resumed_from;         /* the step this run resumed at (0: it started from rest); the times and
                                cell_updates above count this run's steps only */
  int checkpoints;           /* checkpoints written by this run */
  int ckpt_taken;            /* checkpoints begun (a background one still being written when the run
                                completes is abandoned: the checkpoint files go anyway) */
  int ckpt_background;       /* 1: written by a thread while the steps went on */
  double ckpt_bytes;         /* one checkpoint */
  double ckpt_write_s;       /* writing them (open to rename, summed) */
  double ckpt_stall_s;       /* time the steps stood still for them (copy, or the whole write) */
  /* Set-up, time loop and teardown, phase by phase: "model" (read or built, checked), "medium"
   * (c²dt², damping, wavelets), "gpu init" (the first CUDA call: the context), "backend" (its
   * fields and tables; GPU backends add "backend: ..." parts), "shot tables" (sources, receivers,
   * reset), "output open", "time loop" (compute and writes), "output close", "teardown". */
  tw_phases phases;
} tw_run_report;

/* Run a job to completion: load the model, finalize, build the problem, run the kernel, write
 * the output under a temporary name, rename it when complete. On any error or stop request
 * nothing is left under output_path. (A medium, a session, one shot: the functions below.) */
tw_status tw_run_job(tw_job *job, const char *output_path, const tw_run_hooks *hooks, tw_run_report *rep,
                     tw_error *err);

/* What checkpoints of a job cost (`check`, `run`): bytes of one, and whether they are written in the
 * background: a host copy of both levels fits beside the job's host_bytes in avail, the memory
 * available before the job allocates anything (0: MemAvailable now). The environment's
 * TW_CHECKPOINT_SYNC=1 forces a synchronous write. */
typedef struct tw_ckpt_plan {
  double bytes;
  int background;
  double copy_bytes;         /* host memory of the background copy (0 when synchronous) */
} tw_ckpt_plan;
void tw_checkpoint_plan(const tw_grid *g, double host_bytes, double avail, tw_ckpt_plan *plan);

/* ---------------------------------------------------------------- many shots: medium and session
 * A survey builds the medium once per process (the model read or built, c²dt², damping, the
 * wavelets), one session per device on it (the backend with its fields, created once), and runs
 * shot after shot through a session: per shot only the source and receiver tables are rebuilt,
 * the fields zeroed, and the shot's output written. A shot run through a session gives the same
 * bits as a fresh single-shot run of that shot (tests/test_survey.c, test_gpu_survey.c). */
typedef struct tw_medium tw_medium;
typedef struct tw_session tw_session;

/* Load the job's model (a depth-profile model is never filled out: tw_velocity_load_compact),
 * finalize the job (dt, steps, snapshots), build the medium. ph (may be NULL) gets "model" and
 * "medium". The job must outlive the medium. */
tw_status tw_medium_create(tw_job *job, tw_medium **out, tw_phases *ph, tw_error *err);
void tw_medium_destroy(tw_medium *m);
void tw_medium_range(const tw_medium *m, double *vmin, double *vmax);
/* The warnings of the validation tw_medium_create made (what `check` prints for the job, and a
 * single run says before it starts): their number, and warning i (NULL out of range). Nothing
 * prints them here: the caller says them, once (a survey: rank 0, for all its shots and ranks). */
int tw_medium_nwarn(const tw_medium *m);
const char *tw_medium_warning(const tw_medium *m, int i);

/* The first CUDA call on `device` from the calling thread (it creates the device's context: a
 * large part of a GPU run's set-up, so a run makes it while the model is being built). No-op
 * without CUDA. */
tw_status tw_gpu_init(int device, tw_error *err);

/* A session: kernel (a resolved name) on the medium, its backend on `device` (GPU kernels; the
 * calling thread's device is set) with `threads` CPU threads (0: the job's solver.threads). Use a
 * session from one thread at a time. ph (may be NULL) gets "backend" and its parts. */
tw_status tw_session_create(const tw_medium *m, const char *kernel, int device, int threads, tw_session **out,
                            tw_phases *ph, tw_error *err);
void tw_session_destroy(tw_session *s);

/* One shot. shot NULL: the job's own sources and receivers (a single-shot job). Otherwise a
 * survey's shot: the job's one source at shot->pos, the receivers at their positions ("fixed") or
 * offset by shot->pos ("moving"); the file gets the shot's stamp (shot, source_position,
 * job_hash: tw_shot_stamp_read). The output is written under a temporary name and renamed when
 * complete; on error or stop nothing is left under output_path. rep: this shot alone (phases from
 * "shot tables" on). */
typedef struct tw_shot {
  long index;
  double pos[3];
  const char *hash;          /* the job hash the file carries (16 hex digits) */
} tw_shot;
tw_status tw_session_run(tw_session *s, const tw_shot *shot, const char *output_path, const tw_run_hooks *hooks,
                         tw_run_report *rep, tw_error *err);
/* After a failed shot: whether the backend itself failed (a reset, an advance, a snapshot: on a GPU
 * the context may be unusable), rather than the output. A broken session runs no further shot. */
int tw_session_broken(const tw_session *s);

/* Memory estimates (bytes) for `check`, from a finalized job without allocating the fields. */
typedef struct tw_estimate {
  tw_grid grid;
  double host_bytes;         /* fields + model + buffers on the host */
  double session_bytes;      /* of those, what each session holds alone (a survey's workers: one each, the
                                medium shared): the CPU kernels' two levels and c²dt² in their layout,
                                the GPU kernels' two host levels */
  double device_bytes;       /* on the GPU (0 for CPU kernels) */
  int window_planes;         /* planes in the window if one is needed, 0 = whole grid */
  int window_height;         /* cpu-diamond's window: its tower height (the plan its create makes) */
  int window_auto;           /* 1: no cap, but the grid exceeds the GPU's free memory */
  double window_min_bytes;   /* GPU kernels: the smallest window any of them runs (about: the GPU
                                rounds a ring up to its 2 MiB mapping granularity) */
} tw_estimate;
tw_status tw_estimate_job(const tw_job *job, const char *kernel, tw_estimate *est, tw_error *err);
/* cpu-diamond under solver.device_memory: the bytes of its window's ring, a second buffer beside the
 * fields that every session holds (the plan its create makes, which the validation adds to
 * tw_estimate_job's); 0 for another kernel, no cap, no window, or a plan the validation refuses. */
double tw_estimate_cpu_ring(const tw_job *job, const char *kernel);
/* The estimate against the machine: host need over MemAvailable is TW_ENOMEM naming both sizes; a
 * GPU kernel's window below its smallest (solver.device_memory too small, or no cap and the free
 * GPU memory too small for even the smallest window) is TW_ERANGE / TW_ENOMEM. A grid above the
 * cap or the free GPU memory is not an error: the solver streams it through a window. Called by `run` before anything is
 * allocated, and by `check`. */
tw_status tw_estimate_fits(const tw_job *job, const char *kernel, const tw_estimate *est, tw_error *err);

/* At most 4 CPU threads per CPU of this machine, in all: `workers` sessions (a survey's --workers;
 * 1 for a run) of threads_each each. TW_ECONFIG names solver.threads where it is given, or
 * --workers, and both values. */
tw_status tw_check_threads(const tw_job *job, int workers, int threads_each, tw_error *err);

/* ---------------------------------------------------------------- validation (validate.c)
 * The one validation of a job: `check` prints what it finds, tw_run_job performs it before it
 * computes anything, so whatever check accepts, run accepts. */
#define TW_VALIDATE_MSGS 16
typedef enum { TW_VALIDATE_CHECK, TW_VALIDATE_RUN } tw_validate_mode;
typedef struct tw_validation {
  char kernel[32];           /* the kernel that runs ("auto" resolved) */
  tw_estimate est;           /* memory, and the padded grid */
  double vmin, vmax;         /* the model's velocities (m/s) */
  double fmax;               /* the sources' highest frequency (Hz): 2.5 f of a Ricker; for a file
                                wavelet, where its spectrum falls for good below TW_FMAX_FRACTION of
                                its peak (tw_wavelet_fmax) */
  int fmax_from_file;        /* fmax is a file wavelet's */
  double ppw;                /* points per wavelength, vmin / (fmax · max d); INFINITY without fmax */
  double trace_bytes, snapshot_bytes, output_bytes; /* the output file (output_bytes: all of it) */
  double free_bytes;         /* on the output's file system; −1 unknown */
  int output_exists;         /* an existing output will be replaced */
  tw_output_beside beside[2]; /* its existing sidecar and SEG-Y file that a run replaces or removes */
  int nbeside;
  long lock_holder;          /* check: the process writing this output now (−1: one, pid unknown) */
  char **stale;              /* temporaries of earlier runs whose process is gone: check lists them, */
  int nstale;                /* run removes them (holding the lock) once the whole validation passed */
  double run_seconds;        /* check: an estimate of the computing time (0: unknown) */
  char run_basis[256];       /* how it was estimated */
  int nwarn;
  char warn[TW_VALIDATE_MSGS][TW_ERROR_MSG]; /* as long as an error: a warning may name where, as errors do */
  tw_output_lock *lock;      /* run: the output's lock, held until tw_validation_free */
  tw_phases phases;          /* where the validation's time went (check -v) */
} tw_validation;

/* Validate and finalize a job for output (NULL: no output checks). TW_VALIDATE_RUN also takes the
 * output's lock and removes earlier runs' temporaries; TW_VALIDATE_CHECK lists them and estimates
 * the run time. On success *v (when v is not NULL) is the loaded model. val is always set: free it
 * with tw_validation_free (which releases the lock), on error too. */
tw_status tw_job_validate(tw_job *job, const char *output, tw_validate_mode mode, tw_validation *val,
                          tw_velocity **v, tw_error *err);
void tw_validation_free(tw_validation *val);
/* Say what the validation found through hooks->message: its warnings, and the earlier runs'
 * temporaries it removed (run). */
void tw_validation_tell(const tw_validation *val, const tw_run_hooks *hooks);

/* The job's padded grid as every kernel sees it: x and y swapped where the padded y is longer than
 * the padded x (returns 1 then, else 0), so that the kernels sweep, and the sliding window slides
 * along, the longer horizontal axis. A rule on the shape alone: every kernel gets the same problem,
 * so all compute the same bits, and a job and its mirror image (x and y exchanged in the grid, the
 * model, sources and receivers) compute the same bits too (docs/design.md §1.7). Everything the
 * user sees (snapshots, traces, reported cells, the output) stays in the job's axes. */
int tw_grid_oriented(const tw_job *job, tw_grid *g);
/* The job's padded grid in the job's own axes (what the user sees; est->grid of tw_estimate_job). */
void tw_grid_of_job(const tw_job *job, tw_grid *g);
/* The snapshot region of a job in model cells: first cell lo[] and cells kept cnt[] per axis. */
void tw_snapshot_box(const tw_job *job, int lo[3], int cnt[3]);
/* Where the job's sources (receivers = 0) or receivers act on the padded grid g, as the output
 * stores it (tw_points_at, tw_io.h). Free with tw_points_at_free. */
tw_status tw_points_at_compute(const tw_job *job, const tw_grid *g, int receivers, tw_points_at *out, tw_error *err);
/* The same at positions at[] instead of the job's (a survey's shot: its source, its receivers). */
tw_status tw_points_at_compute_at(const tw_job *job, const tw_grid *g, int receivers, const double (*at)[3],
                                  tw_points_at *out, tw_error *err);
void tw_points_at_free(tw_points_at *p);

#ifdef __cplusplus
}
#endif

/* ---------------------------------------------------------------- benchmark and GPU facts
 * (`torrewave bench`, `torrewave info`; bench.c, gpu_bench.cu, gpu_info.cu) */
#ifdef __cplusplus
extern "C" {
#endif

/* A synthetic problem on the padded grid N (what Gcell/s counts): random velocity 1500–4500 m/s,
 * absorbing layers of `absorb` cells inside N, a free surface on top when fs, one Ricker source
 * in the middle, a line of 128 receivers near the top sampled every step. It holds S for
 * `steps` steps: at least (warmup + reps) × steps per repetition of every kernel run on it. */
typedef struct tw_bench_problem tw_bench_problem;
tw_status tw_bench_problem_create(int order, const int N[3], int absorb, int fs, long steps, uint64_t seed,
                                  tw_bench_problem **out, tw_error *err);
void tw_bench_problem_destroy(tw_bench_problem *bp);
/* Whether tw_bench_problem_create can build that problem, without allocating it: TW_EINVAL when an
 * axis leaves fewer than 8 model cells inside its layers, TW_ENOMEM when its host memory (gpu: with
 * the GPU kernels' host copies) is over what is available, both said in err. */
tw_status tw_bench_problem_check(int order, const int N[3], int absorb, int fs, int gpu, tw_error *err);

typedef struct tw_bench_result {
  char kernel[64];
  int order;
  int N[3];
  long steps;                /* per timed repetition */
  int reps;
  double gcells_med, gcells_min, gcells_max;
  double gbytes_med;         /* effective GB/s: 16 B per update × the median rate */
  int gpu_timed;             /* 1: CUDA events around each advance call; 0: host clock */
  double gcells_cpu;         /* host clock: updates per CPU-second of the process, best repetition
                              * (less disturbed than the wall clock on a shared machine) */
  int dts, tower_height;     /* DiamondTorre kernels: the parameters that ran (defaults resolved) */
  char note[512];            /* the backend's report note (variant, occupancy, split) */
} tw_bench_result;

/* Time a kernel on the problem: a fresh backend, `warmup` untimed advance calls of `steps`
 * steps, then `reps` timed ones. kernel: a registry name, or "gpu-stepwise@VARIANT". GPU
 * kernels start from random fields (never timed on zeros), when the backend allows it. */
tw_status tw_bench_kernel(tw_bench_problem *bp, const char *kernel, long steps, int reps, int warmup,
                          tw_bench_result *res, tw_error *err);

/* Tuning variants of a kernel that `bench` can time as "KERNEL@VARIANT" (0 if none). */
int tw_bench_variant_count(const char *kernel);
const char *tw_bench_variant_name(const char *kernel, int i);
const char *tw_bench_variant_default(const char *kernel, int order);  /* NULL if none */

/* The stepwise ceiling (docs/design.md §6): a device-to-device cudaMemcpy of `bytes`, median of reps,
 * in GB/s counting bytes read + written. TW_ENODEV without a GPU. */
tw_status tw_bench_copy_gbps(size_t bytes, int reps, double *gbps, tw_error *err);

/* The host's ceilings for the CPU kernels (docs/design.md §6, measured in the same run): memory, a
 * stream that reads three arrays and writes one of them in place (what a stepwise update does
 * per cell: p^n, p^{n−1}, c²dt² in, p^{n+1} out), (bytes read + written) / s over three arrays
 * of `bytes` each (far above the L3), the best of `reps`; arithmetic, fp32 fused multiply-adds per second from
 * independent chains in registers (hardware FMA where the CPU has it: fma_fused = 1; else
 * multiply + add pairs). Both with `threads` OpenMP threads (0: the OpenMP default). */
typedef struct tw_host_ceilings {
  int threads;
  double mem_gbps;
  double fma_gfmas;          /* 1e9 FMA/s (an FMA is 2 flops) */
  int fma_fused;
  const char *variant;       /* the build of the CPU kernels' hot code this CPU runs: base, v3, v4 */
} tw_host_ceilings;
tw_status tw_bench_host_ceilings(int threads, size_t bytes, int reps, tw_host_ceilings *c, tw_error *err);
/* The CPU kernels' models for those ceilings: floating-point instructions of one (undamped) cell
 * update as the vector loop issues them, per lane (tw_stencil.h: 3r pair terms of an add, a
 * subtraction and a fused multiply-add; 2·p0, the sum of the two chains, and the time update's
 * multiply-add and subtraction: 9r + 4, 40 at order 8). Every one takes an issue slot of the FP
 * pipes that the FMA peak measures, an add as much as an FMA, so the arithmetic ceiling is the
 * peak's instructions a second over this count (one core of a 2-core Xeon ran the order-8 update
 * in its L2 at 93 % of it; docs/performance.md, session 28) — not its flops, which would put the
 * ceiling 1.3× higher at order 8. And DRAM bytes per update of a kernel (cpu: 16, the stream
 * above; cpu-diamond with tile R = r·dts: 20·r/R, a tower's leading edge in, 12 B, and its
 * trailing edge out, 8 B, per column and step; docs/performance.md "CPU kernels"). */
double tw_cpu_update_fp_ops(int order);
/* FP instructions a second, 1e9 (one per FMA of the peak where it is fused, two where it is a
 * multiply and an add), and the arithmetic ceiling in Gcell/s: that over tw_cpu_update_fp_ops. */
double tw_cpu_fp_ginst(const tw_host_ceilings *c);
double tw_cpu_arith_ceiling(const tw_host_ceilings *c, int order);
double tw_cpu_update_bytes(const char *kernel, int order, int dts);

/* GPU facts. tw_cuda_built: 1 when this build has the CUDA kernels. */
typedef struct tw_gpu_props {
  char name[256];
  int cc_major, cc_minor;
  int sms;
  size_t mem_total, mem_free;
  int l2_bytes;
  int clock_khz, mem_clock_khz, bus_bits;   /* 0 where the device does not say */
  size_t smem_per_block_optin;
  int regs_per_sm, max_threads_per_sm;
} tw_gpu_props;
int tw_cuda_built(void);
/* GPUs visible to this process (0 without CUDA or without a device). */
int tw_gpu_count(void);
/* CUDA runtime and driver versions as 1000·major + 10·minor (0 when unknown). */
void tw_cuda_versions(int *runtime, int *driver);
tw_status tw_gpu_props_get(int device, tw_gpu_props *p, tw_error *err);
/* A test's tool: the device reciprocal of the damping (tw_stencil.h, tw_dev_recip) against
 * __frcp_rn for every float in [lo, hi), 1 ≤ lo < hi < inf, on the current device: how many the
 * kernel compared (counted on the device), how many differ and the first that does (all bits set
 * where none). TW_ENODEV without CUDA. */
tw_status tw_gpu_recip_check(float lo, float hi, long long *checked, long long *mismatches, float *first,
                             tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
