#include "tw_boundary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tw_grid_setup(tw_grid *g, const int n[3], const double d[3], const double origin[3], const int absorb[3],
                   int free_surface) {
  memset(g, 0, sizeof *g);
  for (int a = 0; a < 3; a++) {
    g->n[a] = n[a];
    g->d[a] = d[a];
    g->origin[a] = origin ? origin[a] : 0.0;
    g->lo[a] = absorb[a];
    g->hi[a] = absorb[a];
  }
  if (free_surface) g->lo[2] = 0; /* the free surface is the top face k = 0 */
  for (int a = 0; a < 3; a++) g->N[a] = g->lo[a] + g->n[a] + g->hi[a];
}

double tw_eta_max(int width, double d, double vmax) {
  return width > 0 ? 3.0 * vmax * log(1.0 / TW_ABSORB_R0) / (2.0 * width * d) : 0.0;
}

void tw_damping_profile(const tw_grid *g, int axis, double vmax, double dt, float *a) {
  const int N = g->N[axis], lo = g->lo[axis], n = g->n[axis];
  /* Each face has its own width: lo before the model, hi after it. */
  const double emax_lo = tw_eta_max(lo, g->d[axis], vmax), emax_hi = tw_eta_max(g->hi[axis], g->d[axis], vmax);
  for (int i = 0; i < N; i++) {
    double eta = 0.0;
    if (i < lo) {
      double q = (double)(lo - i) / lo;
      eta = emax_lo * q * q;
    } else if (i >= lo + n) {
      double q = (double)(i - (lo + n - 1)) / g->hi[axis];
      eta = emax_hi * q * q;
    }
    a[i] = (float)(eta * dt / 2.0);
  }
}

/* Clamp a padded index to the model: the layers copy the nearest edge value. */
static inline int clamp_model(int P, int lo, int n) {
  int i = P - lo;
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/* c²dt² of one velocity, formed in double and rounded once (every path below). */
static inline float c2dt2_of(float vp, double dt) {
  const double c = vp;
  return (float)(c * c * dt * dt);
}

/* Planes in parallel: each thread writes its own planes, and a value does not depend on the order
 * (the fresh array's pages are also faulted in by many threads at once: most of the time here). */
void tw_extend_c2dt2(const tw_grid *g, const float *vp, int swap_xy, double dt, float *c2dt2) {
#pragma omp parallel for schedule(static)
  for (int I = 0; I < g->N[0]; I++) {
    const int i = clamp_model(I, g->lo[0], g->n[0]);
    float *o = c2dt2 + (size_t)I * (size_t)g->N[1] * (size_t)g->N[2];
    for (int J = 0; J < g->N[1]; J++) {
      const int j = clamp_model(J, g->lo[1], g->n[1]);
      const float *col = vp + (swap_xy ? (size_t)j * g->n[0] + i : (size_t)i * g->n[1] + j) * g->n[2];
      for (int K = 0; K < g->N[2]; K++) *o++ = c2dt2_of(col[clamp_model(K, g->lo[2], g->n[2])], dt);
    }
  }
}

void tw_extend_c2dt2_profile(const tw_grid *g, const float *profile, double dt, float *c2dt2) {
  const size_t nz = (size_t)g->N[2];
  float *col = malloc(nz * sizeof *col);
  if (!col) { /* (a few KB) then each cell on its own */
    for (size_t e = 0; e < tw_grid_cells(g); e++) c2dt2[e] = c2dt2_of(profile[clamp_model((int)(e % nz), g->lo[2], g->n[2])], dt);
    return;
  }
  for (int K = 0; K < g->N[2]; K++) col[K] = c2dt2_of(profile[clamp_model(K, g->lo[2], g->n[2])], dt);
  const long ncol = (long)g->N[0] * g->N[1];
#pragma omp parallel for schedule(static)
  for (long c = 0; c < ncol; c++) memcpy(c2dt2 + (size_t)c * nz, col, nz * sizeof *col);
  free(col);
}
