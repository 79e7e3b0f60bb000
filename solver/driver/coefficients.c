#include <string.h>

#include "problem.h"

/* Weights of tw_stencil.h from the one coefficient table (tw_fd_coefficients), formed in double
 * and rounded once: w[a][m] = C_m / d_a². The pair form needs no centre weight (tw_stencil.h). */
int tw_stencil_setup(int order, const double d[3], tw_stencil *st) {
  double C[9];
  int r = tw_fd_coefficients(order, C);
  if (!r) return 0;
  memset(st, 0, sizeof *st);
  st->r = r;
  for (int a = 0; a < 3; a++)
    for (int m = 1; m <= r; m++) st->w[a][m] = (float)(C[m] / (d[a] * d[a]));
  return r;
}
