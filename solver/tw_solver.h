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

typedef struct tw_problem tw_problem;

/* Everything a kernel needs, built from a finalized job and its velocity model. */
tw_status tw_problem_create(const tw_job *job, const tw_velocity *v, tw_problem **out, tw_error *err);
void tw_problem_destroy(tw_problem *pb);
const tw_grid *tw_problem_grid(const tw_problem *pb);

/* Kernels this build knows; usable ones depend on the machine (a GPU for gpu-*). */
int tw_kernel_count(void);
const char *tw_kernel_name(int i);
int tw_kernel_is_gpu(const char *name);
/* "auto" → gpu-diamond, else gpu-stepwise with a GPU, else cpu. Unknown names: error. */
tw_status tw_kernel_resolve(const char *requested, char *out, size_t len, tw_error *err);

/* Defaults per order for the DiamondTorre parameters. */
int tw_default_dts(int order);
int tw_default_tower_height(int order);

typedef struct tw_run_hooks {
  /* Called after each chunk of steps (the app rate-limits what it prints). */
  void (*progress)(void *user, long step, long steps, double elapsed_s, double cells_per_s);
  /* Return non-zero to stop: the run ends with TW_EINTR and the output is removed. */
  int (*should_stop)(void *user);
  void *user;
} tw_run_hooks;

typedef struct tw_run_report {
  char kernel[32];
  double wall_s;             /* whole run, set-up and output included */
  double compute_s;          /* time inside the kernel's advance calls */
  double cell_updates;       /* padded cells × steps */
  double gcells_per_s;       /* cell_updates / compute_s / 1e9 */
  long steps;
  double dt;
  /* sliding window (zero when the whole grid is resident) */
  int window_planes;         /* x-planes in the window ring, 0 = whole grid */
  long planes_in, planes_out;
  double bytes_in, bytes_out;
  double copy_wait_frac;     /* share of kernel time spent waiting for copies */
  char note[256];            /* e.g. "window used: grid does not fit the GPU" */
} tw_run_report;

/* Run a job to completion: load the model, finalize, build the problem, run the kernel, write
 * the output under a temporary name, rename it when complete. On any error or stop request
 * nothing is left under output_path. */
tw_status tw_run_job(tw_job *job, const char *output_path, const tw_run_hooks *hooks, tw_run_report *rep,
                     tw_error *err);

/* Memory estimates (bytes) for `check`, from a finalized job without allocating the fields. */
typedef struct tw_estimate {
  tw_grid grid;
  double host_bytes;         /* fields + model + buffers on the host */
  double device_bytes;       /* on the GPU (0 for CPU kernels) */
  int window_planes;         /* planes in the window if one is needed, 0 = whole grid */
} tw_estimate;
tw_status tw_estimate_job(const tw_job *job, const char *kernel, tw_estimate *est, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
