/* The kernel registry: names → backends, and the choice behind kernel = "auto". */
#include <stdio.h>
#include <string.h>

#include "cpu_fields.h"
#include "problem.h"

extern const tw_backend_ops tw_backend_cpu_diamond; /* cpu_diamond.c */
#ifdef TW_WITH_CUDA
extern const tw_backend_ops tw_backend_gpu_diamond; /* gpu_diamond.cu */
#endif
static const tw_backend_ops *const registry[] = {
    &tw_backend_cpu,
    &tw_backend_cpu_diamond,
#ifdef TW_WITH_CUDA
    &tw_backend_gpu_stepwise,
    &tw_backend_gpu_diamond,
#endif
};
#define NREG ((int)(sizeof registry / sizeof registry[0]))

/* Every name the job file accepts, built here or not (docs/design.md §1b). */
static const char *const known[] = {"cpu", "cpu-diamond", "gpu-stepwise", "gpu-diamond"};
#define NKNOWN ((int)(sizeof known / sizeof known[0]))

int tw_kernel_count(void) { return NREG; }
const char *tw_kernel_name(int i) { return (i >= 0 && i < NREG) ? registry[i]->name : NULL; }
int tw_kernel_is_gpu(const char *name) { return name && strncmp(name, "gpu-", 4) == 0; }

const tw_backend_ops *tw_backend_find(const char *name) {
  for (int i = 0; i < NREG; i++)
    if (strcmp(registry[i]->name, name) == 0) return registry[i];
  return NULL;
}

#ifndef TW_WITH_CUDA
int tw_gpu_count(void) { return 0; }
tw_status tw_gpu_init(int device, tw_error *err) {
  (void)device, (void)err;
  return TW_OK;
}
#endif

tw_status tw_kernel_resolve(const char *requested, const tw_job *job, char *out, size_t len, tw_error *err) {
  if (!requested || !*requested || strcmp(requested, "auto") == 0) {
    const char *pick = job && tw_cpu_auto_diamond(job, NULL, 0) ? "cpu-diamond" : "cpu";
    if (tw_gpu_count() > 0) pick = tw_backend_find("gpu-diamond") ? "gpu-diamond" : "gpu-stepwise";
    if (!tw_backend_find(pick)) pick = "cpu";
    snprintf(out, len, "%s", pick);
    return TW_OK;
  }
  int is_known = 0;
  for (int i = 0; i < NKNOWN; i++) is_known |= strcmp(known[i], requested) == 0;
  if (!is_known)
    return tw_error_set(err, TW_EINVAL, "solver.kernel: unknown kernel \"%s\"; allowed: auto, cpu, cpu-diamond, "
                        "gpu-stepwise, gpu-diamond", requested);
  const tw_backend_ops *b = tw_backend_find(requested);
  if (!b)
    return tw_error_set(err, TW_EUNSUPPORTED, "solver.kernel: \"%s\" is not available in this build%s", requested,
                        tw_kernel_is_gpu(requested) ? " (built without CUDA)" : "");
  if (b->needs_gpu && tw_gpu_count() == 0)
    return tw_error_set(err, TW_ENODEV, "solver.kernel: \"%s\" needs a GPU and none is present "
                        "(use kernel = \"cpu\" or \"auto\")", requested);
  snprintf(out, len, "%s", requested);
  return TW_OK;
}

void tw_kernel_auto_note(const tw_job *job, const char *kernel, char *buf, size_t n) {
  buf[0] = 0;
  if (!n || (*job->kernel && strcmp(job->kernel, "auto") != 0) || tw_kernel_is_gpu(kernel)) return;
  char why[160];
  tw_cpu_auto_diamond(job, why, sizeof why);
  snprintf(buf, n, "auto without a GPU: %s", why);
}

/* DiamondTorre defaults (schedule.h; measured in docs/performance.md, "cpu-diamond").
 * dts: the tile R = dts·order/2 is held near 3–4 cells: the GPU kernel keeps a tower's 2R² columns
 * in registers. Order 2 uses DTS 4 (cpu-diamond: see below). gpu-diamond asks for DTS 3
 * at order 2 itself when the job names none: its tower with two z cells per thread ran at 559
 * Gcell/s against 544 for DTS 4 on an H200, 465 against 440 on a wavefield with layers
 * (docs/performance.md "gpu-diamond", session 6); larger Nz lower the DTS by themselves (DTS 2 up
 * to Nz = 768).
 * On the CPU, R from 4 to 8 measured alike (a tower and its halo stay in L2).
 * tower_height: the sliding window moves 20 B per cell per block (docs/design.md §3), so the copies keep
 * pace with a kernel of P cell·steps/s only if height ≥ 20·P / 66.7e9 (the window's measured pace,
 * both directions together): ~150 for order 2 at ~500 Gcell/s (gpu-diamond doubles the default in the window
 * there), less for the slower high orders. The window, (height + 1)·r + 2R planes, grows
 * with r·height, hence lower heights for higher orders. All are multiples of 2·dts (a
 * register-resident diamond is back in its starting layout after 2·dts steps). On the CPU the
 * height barely matters between 16 and 128. */
int tw_default_dts(int order) { return order <= 2 ? 4 : (order <= 4 ? 2 : 1); }
int tw_default_tower_height(int order) { return order <= 2 ? 128 : (order <= 4 ? 96 : 64); }
