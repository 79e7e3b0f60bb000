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
    return tw_error_set(err, TW_EINVAL, "solver.dts: must be a positive integer (the diamond tile is R = dts·order/2 "
                        "cells): got %d; allowed 1..%d for order %d, or the key left out for the default (%d)", dts,
                        TW_TILE_MAX / r, order, tw_default_dts(order));
  if (tower_height < 0)
    return tw_error_set(err, TW_EINVAL, "solver.tower_height: must be a positive number of steps: got %d; allowed "
                        "1..%d, or the key left out for the default (%d for order %d)", tower_height,
                        TW_TOWER_HEIGHT_MAX, tw_default_tower_height(order), order);
  const int d = dts ? dts : tw_default_dts(order);
  const int nt = tower_height ? tower_height : tw_default_tower_height(order);
  if (d > TW_TILE_MAX / r)
    return tw_error_set(err, TW_ERANGE, "solver.dts: the diamond tile R = dts·order/2 = %ld cells is over the limit "
                        "of %d: got %d; allowed 1..%d for order %d", (long)d * r, TW_TILE_MAX, d, TW_TILE_MAX / r,
                        order);
  if (nt > TW_TOWER_HEIGHT_MAX)
    return tw_error_set(err, TW_ERANGE, "solver.tower_height: over the limit of %d steps (a block that tall only "
                        "makes the window larger): got %d; allowed 1..%d", TW_TOWER_HEIGHT_MAX, nt,
                        TW_TOWER_HEIGHT_MAX);
  *dts_out = d;
  *nt_out = nt;
  return TW_OK;
}
