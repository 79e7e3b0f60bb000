/* tw_sources.h — wavelets and the placement of sources and receivers on the padded grid
 * (docs/design.md §1): nearest cell (weight 1) or trilinear weights over up to 8 cells, in a fixed order
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

/* s(t_n) for n = 0 .. nsteps (nsteps + 1 values). File wavelets: read with tw_wavelet_read and
 * resampled to dt with tw_wavelet_resample. w->file is used as given (the job parser stores it
 * resolved from the job file's folder); job_path names the job in messages ("job.cfg:LINE:
 * sources[i].wavelet.file: ..."; NULL: the file alone). */
tw_status tw_wavelet_sample(const tw_wavelet_spec *w, const char *job_path, double dt, long nsteps, float *out,
                            tw_error *err);

/* A wavelet file as read: one sample per line, "amplitude" (spaced by w->file_dt, or run_dt when
 * it is 0, from t0 = 0) or "time amplitude" (evenly spaced to 1 % of the spacing: they give dt and
 * t0; a wavelet.dt that disagrees is an error). Blank lines and '#' comments are skipped; every
 * line has the same number of columns; amplitudes fit float32. A bad line is reported with its
 * number and its content (non-printable bytes as \xNN). */
typedef struct tw_wavelet_samples {
  double *v;                 /* [n] amplitudes */
  long n;
  double t0, dt;             /* sample i is at t0 + i·dt */
  int columns;               /* 1 or 2 */
} tw_wavelet_samples;
tw_status tw_wavelet_read(const tw_wavelet_spec *w, const char *job_path, double run_dt, tw_wavelet_samples *out,
                          tw_error *err);
void tw_wavelet_samples_free(tw_wavelet_samples *s);

/* out[m] = s(m·dt), m = 0 .. nsteps, from x[i] at t0 + i·fdt (zero outside the file). dt <= fdt:
 * linear interpolation. dt > fdt: an anti-alias low-pass first (Kaiser-windowed sinc, cutoff at
 * the run's Nyquist 1/(2 dt), half width 16 dt), then sampling; frequencies below 0.42/dt pass,
 * and nothing above 0.58/dt aliases into that band. Values before t = 0 are dropped (the medium
 * starts at rest). */
void tw_wavelet_resample(const double *x, long n, double t0, double fdt, double dt, long nsteps, float *out);

/* The highest frequency of a sampled wavelet s[0..n) (dt apart), in Hz: the frequency above which
 * its amplitude spectrum stays below TW_FMAX_FRACTION of its peak. The fraction is the Ricker
 * spectrum's value at 2.5 times its peak frequency, (2.5)² e^(1 − 2.5²) = 6.25 e^−5.25, so a
 * sampled Ricker gives back the 2.5 f of docs/design.md §1's dispersion rule. 0 for an all-zero wavelet,
 * −1 when out of memory. */
#define TW_FMAX_FRACTION 0.03279699
double tw_wavelet_fmax(const float *s, long n, double dt);

#ifdef __cplusplus
}
#endif
#endif

/* ================================================================ analytic reference (reference.c)
 * The free-space solution of docs/design.md §1 for a homogeneous job: p(x, t) = Σ_s s_s(t − r_s/c) /
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
