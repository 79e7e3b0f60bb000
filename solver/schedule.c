/* schedule.c — parameters and stage range of the DiamondTorre schedule (geometry: schedule.h). */
#include "schedule.h"

#include "tw_solver.h"
#include "tw_stencil.h"

tw_status tw_schedule_params(int order, int dts, int tower_height, int *dts_out, int *nt_out, tw_error *err) {
  const int r = order / 2;
  if (order % 2 || r < 1 || r > TW_RMAX)
    return tw_error_set(err, TW_EINVAL, "scheme.order = %d: DiamondTorre needs an even order in 2..%d", order,
                        2 * TW_RMAX);
  if (dts < 0)
    return tw_error_set(err, TW_EINVAL, "solver.dts = %d: must be a positive integer (the diamond tile is R = "
                        "dts·order/2 cells); omit it for the default, %d for order %d", dts, tw_default_dts(order),
                        order);
  if (tower_height < 0)
    return tw_error_set(err, TW_EINVAL, "solver.tower_height = %d: must be a positive number of steps; omit it "
                        "for the default, %d for order %d", tower_height, tw_default_tower_height(order), order);
  const int d = dts ? dts : tw_default_dts(order);
  const int nt = tower_height ? tower_height : tw_default_tower_height(order);
  if (d > TW_TILE_MAX / r)
    return tw_error_set(err, TW_ERANGE, "solver.dts = %d: the diamond tile R = dts·order/2 = %ld cells is over "
                        "the limit of %d; use dts ≤ %d for order %d", d, (long)d * r, TW_TILE_MAX, TW_TILE_MAX / r,
                        order);
  if (nt > TW_TOWER_HEIGHT_MAX)
    return tw_error_set(err, TW_ERANGE, "solver.tower_height = %d: over the limit of %d steps (a block that tall "
                        "only makes the window larger)", nt, TW_TOWER_HEIGHT_MAX);
  *dts_out = d;
  *nt_out = nt;
  return TW_OK;
}

void tw_schedule_init(tw_schedule *sc, int N0, int N1, int r, int dts, int nt) {
  sc->N0 = N0;
  sc->N1 = N1;
  sc->r = r;
  sc->dts = dts;
  sc->R = r * dts;
  sc->nt = nt;
  /* First stage: its step-0 rows [Rs, Rs + 2R) still start inside the grid. */
  sc->s_hi = tw_floordiv(N0 - 1, sc->R);
  /* Last stage: its last rows, Rs + (nt−1)r + 2R − 1, still reach x = 0:
   * s ≥ ⌈(1 − 2R − (nt−1)r) / R⌉ = −⌊(2R + (nt−1)r − 1) / R⌋. */
  sc->s_lo = -tw_floordiv(2 * sc->R + (nt - 1) * r - 1, sc->R);
  /* Last tower centre R·k whose diamond still reaches y = N1 − 1: Rk − R + 1 ≤ N1 − 1. */
  sc->kmax = tw_floordiv(N1 + sc->R - 2, sc->R);
}
