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
 * interpolation (zero past the end). w->file is used as given (the job parser stores it
 * resolved from the job file's folder); job_path only names the job in messages. */
tw_status tw_wavelet_sample(const tw_wavelet_spec *w, const char *job_path, double dt, long nsteps, float *out,
                            tw_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* ================================================================ analytic reference (reference.c)
 * The free-space solution of DESIGN §1 for a homogeneous job: p(x, t) = Σ_s s_s(t − r_s/c) /
 * (4π r_s), r_s = |x − x_s|, at the job's receivers, sampled like a run (sample j at
 * t = j · interval · dt). Positions are where the run puts them: a nearest-cell source or
 * receiver sits at its cell, a trilinear one at its true position (the weighted mean of its
 * taps). Ricker wavelets are evaluated exactly between samples; file wavelets by linear
 * interpolation of the wavelet resampled to dt. s(t) = 0 for t < 0: the medium starts at rest. */
#ifndef TW_SOURCES_REFERENCE_H
#define TW_SOURCES_REFERENCE_H
#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_reference tw_reference;

/* Check that the job has an analytic solution (else TW_EUNSUPPORTED with the reason: model not
 * constant, a free surface, a receiver within d/2 of a source), finalize it (dt, steps) and
 * prepare the traces. Absorbing layers are allowed: the reference is free space. */
tw_status tw_reference_create(tw_job *job, tw_reference **out, tw_error *err);
long tw_reference_nsamples(const tw_reference *ref);
/* Samples [first, first + count) of every receiver into traces[nrec][count] (row stride count). */
void tw_reference_traces(const tw_reference *ref, long first, long count, float *traces);
/* p at receiver rec and time t (s), in double. */
double tw_reference_value(const tw_reference *ref, long rec, double t);
void tw_reference_destroy(tw_reference *ref);

/* tw_reference_create, then write path in the layout of a run (kernel "reference", no
 * snapshots) so that `torrewave compare` takes it directly. Nothing is left under path on error. */
tw_status tw_reference_write(tw_job *job, const char *path, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif /* TW_SOURCES_REFERENCE_H */
