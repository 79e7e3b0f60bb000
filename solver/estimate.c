/* Memory estimates for `torrewave check`, without allocating the fields. */
#include <string.h>

#include "problem.h"
#include "tw_boundary.h"

tw_status tw_estimate_job(const tw_job *job, const char *kernel, tw_estimate *est, tw_error *err) {
  (void)err;
  memset(est, 0, sizeof *est);
  tw_grid_setup(&est->grid, job->n, job->d, job->origin, job->absorb, job->free_surface);
  const tw_grid *g = &est->grid;
  const double model = 4.0 * g->n[0] * (double)g->n[1] * g->n[2];
  const double cells = (double)tw_grid_cells(g);
  const int h = job->order / 2;
  const double halo = 4.0 * (g->N[0] + 2.0 * h) * (g->N[1] + 2.0 * h) * (g->N[2] + 2.0 * h);
  const double traces = 4.0 * (double)job->nrec * (job->steps / (job->rec_interval > 0 ? job->rec_interval : 1) + 1);
  /* c²dt² on the padded grid, the model while it is converted, sources and trace buffers. */
  est->host_bytes = 4.0 * cells + model + (traces < 128e6 ? traces : 128e6);
  if (tw_kernel_is_gpu(kernel)) {
    est->host_bytes += 8.0 * cells; /* the two time levels, for snapshots and the window */
    est->device_bytes = 12.0 * cells;
  } else {
    est->host_bytes += 3.0 * halo;  /* two levels and c²dt², each with a halo of r cells */
  }
  return TW_OK;
}

tw_status tw_estimate_fits(const tw_job *job, const char *kernel, const tw_estimate *est, tw_error *err) {
  char need[32], have[32];
  const double host = (double)tw_host_memory_available();
  if (host > 0 && est->host_bytes > host)
    return tw_error_set(err, TW_ENOMEM, "%s: the job needs %s of host memory and %s is available", job->path,
                        tw_format_bytes(est->host_bytes, need, sizeof need), tw_format_bytes(host, have, sizeof have));
  if (est->device_bytes > 0 && tw_kernel_is_gpu(kernel) && tw_gpu_count() > 0) {
    tw_gpu_props p;
    if (tw_gpu_props_get(0, &p, err)) return err->code;
    if (est->device_bytes > (double)p.mem_free)
      return tw_error_set(err, TW_ENOMEM, "%s: kernel %s needs %s of GPU memory and %s is free on %s", job->path, kernel,
                          tw_format_bytes(est->device_bytes, need, sizeof need),
                          tw_format_bytes((double)p.mem_free, have, sizeof have), p.name);
  }
  return TW_OK;
}
