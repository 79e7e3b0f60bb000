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
