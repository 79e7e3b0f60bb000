/* tw_boundary.h — the padded grid, absorbing layers and the model extension (docs/design.md §1).
 * Absorbing layers are added OUTSIDE the user's model, `width` cells per face; with a free
 * surface the top face (k = 0) has none. Damping η grows from 0 to η_max as (distance/width)²,
 * η_max = 3·c_max·ln(1/R₀) / (2·width·d), R₀ = 1e-3. The free surface itself (image method) is
 * applied by the kernels when they gather z-neighbours above k = 0. */
#ifndef TW_BOUNDARY_H
#define TW_BOUNDARY_H

#include "tw_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_ABSORB_R0 1e-3

/* Fill g from the model grid and the absorbing widths per axis. */
void tw_grid_setup(tw_grid *g, const int n[3], const double d[3], const double origin[3], const int absorb[3],
                   int free_surface);

double tw_eta_max(int width, double d, double vmax);

/* a = η·dt/2 for every padded index along one axis: a[0 .. N[axis]). Zero inside the model.
 * The cell at padded index lo − m (or lo + n − 1 + m) is at distance m from the model. */
void tw_damping_profile(const tw_grid *g, int axis, double vmax, double dt, float *a);

/* c²·dt² on the padded grid [N0][N1][N2] from the model velocity [n0][n1][n2], edge values
 * extended into the layers. The product is formed in double and rounded once. With swap_xy the
 * grid's x and y are the model's y and x: vp is [n1][n0][n2] in the grid's terms. */
void tw_extend_c2dt2(const tw_grid *g, const float *vp, int swap_xy, double dt, float *c2dt2);
/* The same for a model that is one depth profile[n2] in every column (tw_velocity_load_compact):
 * the same value per cell, bit for bit, without an nx·ny·nz velocity array. */
void tw_extend_c2dt2_profile(const tw_grid *g, const float *profile, double dt, float *c2dt2);

#ifdef __cplusplus
}
#endif
#endif
