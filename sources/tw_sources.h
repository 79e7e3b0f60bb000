/* tw_sources.h — wavelets and the placement of sources and receivers on the padded grid
 * (DESIGN §1): nearest cell (weight 1) or trilinear weights over up to 8 cells, in a fixed order
 * (i, then j, then k, low corner first), summing to 1. */
#ifndef TW_SOURCES_H
#define TW_SOURCES_H

#include "tw_common.h"
#include "tw_io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_taps {
  int ntap;          /* 1..8 */
  int ijk[8][3];     /* padded-grid cells */
  double w[8];       /* weights, sum 1 */
} tw_taps;

/* Place a point given in model coordinates. It must lie inside the model
 * [origin, origin + (n − 1) d] on every axis (else TW_ERANGE naming axis, value and range).
 * Taps with zero weight are dropped. drop_surface: drop taps on the free-surface plane k = 0
 * (a pressure source there radiates nothing: its image cancels it). If every tap is dropped,
 * ntap = 0. */
tw_status tw_place(const tw_grid *g, const double pos[3], tw_interp interp, int drop_surface, tw_taps *out,
                   tw_error *err);

/* Ricker wavelet s(t) = A (1 − 2π²f²τ²) exp(−π²f²τ²), τ = t − t0. */
double tw_ricker(double t, double f, double t0, double amplitude);

/* s(t_n) for n = 0 .. nsteps (nsteps + 1 values). File wavelets: one sample per line ('#'
 * comments allowed), sampled at w->file_dt (0: the run's dt), resampled to dt by linear
 * interpolation (zero past the end). job_path resolves relative file names. */
tw_status tw_wavelet_sample(const tw_wavelet_spec *w, const char *job_path, double dt, long nsteps, float *out,
                            tw_error *err);

/* Resolve a file name relative to the folder of job_path (absolute names unchanged). malloc'd. */
char *tw_resolve_path(const char *job_path, const char *file);

#ifdef __cplusplus
}
#endif
#endif
