#!/usr/bin/env bash
# Surveys on the GPU kernels (label gpu; skipped without a GPU): gpu-stepwise and gpu-diamond, fixed
# and moving receivers, run by two ranks of mpirun on one GPU (both ranks map to GPU 0) and, without
# MPI, by two worker threads sharing the GPU: every shot file's traces and snapshots are bit for bit
# those of the single-shot job at that shot's position, same kernel (tests/ckpt_lib.sh's same: h5diff,
# or torrewave compare --rtol 1e-300 where hdf5-tools is missing, as on the GPU machines). Then a
# survey killed midway (SIGKILL of one rank) and run again: only the missing shots run, all equal to
# the singles.
set -uo pipefail
T=$TORREWAVE
"$T" info 2>/dev/null | grep -q "gpu-diamond" || { echo "SKIP: no GPU kernels in this build"; exit 77; }
"$T" info 2>/dev/null | grep -Eq '^GPUs: [1-9]' || { echo "SKIP: no GPU present"; exit 77; }
source "$(dirname "$0")/../cli_lib.sh"
source "$TW_SOURCE_DIR/tests/survey_lib.sh"
sv_init
cd "$tmp"
# 8 shots on a 224 x 200 x 100 padded grid (order 2: gpu-diamond runs its towers, asked for with
# TW_DIAMOND_MODE since by default a grid this narrow across its sweep runs the stepwise kernel;
# order 8: the stepwise kernel), 600 steps: a fraction of a second per shot.
shots=("400.0 1000.0 20.0" "1600.0 600.0 35.0" "1000.0 1500.0 5.0" "300.0 300.0 20.0" "700.0 300.0 20.0"
       "1100.0 300.0 20.0" "1500.0 300.0 20.0" "1900.0 300.0 20.0")  # job order: positions, then the line
SV_SHOTS='shots = { positions = ( [400.0, 1000.0, 20.0], [1600.0, 600.0, 35.0], [1000.0, 1500.0, 5.0] );
          lines = ( { from = [300.0, 300.0, 20.0]; to = [1900.0, 300.0, 20.0]; count = 5; } );'
SV_WAVELET='wavelet = { type = "ricker"; frequency = 12.0; };'
SV_FIXED='receivers = { interval = 2; lines = ( { from = [0.0, 1000.0, 10.0]; to = [1990.0, 1000.0, 10.0]; count = 200; } ); };'
SV_OFFSETS=()  # a cross around the shot, 10 m below it
for o in -90 -50 -10 10 50 90; do SV_OFFSETS+=("$o 0 10" "0 $o 10"); done
job() { # job FILE KERNEL ORDER RECEIVERS [X Y Z]
  local f=$1 k=$2 o=$3 rm=$4
  shift 4
  SV_HEAD="grid = { n = [200, 176, 88]; d = [10.0, 10.0, 10.0]; };
time = { steps = 600; };
model = { type = \"layered\"; layers = ( { top = 0.0; vp = 1800.0; }, { top = 400.0; vp = 2600.0; } ); };
scheme = { order = $o; };  boundary = { absorbing = 12; free_surface = true; };
snapshots = { steps = [300, 600]; decimate = 4; };"
  sv_job "$f" "$k" "$rm" "$@"
}
for case in gpu-diamond:2:moving gpu-diamond:8:fixed gpu-stepwise:4:moving; do
  IFS=: read -r k o rm <<< "$case"
  if [ "$k:$o" = gpu-diamond:2 ]; then export TW_DIAMOND_MODE=persistent; else unset TW_DIAMOND_MODE; fi
  job survey.cfg "$k" "$o" "$rm"
  for i in "${!shots[@]}"; do
    job single.cfg "$k" "$o" "$rm" ${shots[$i]}
    "$T" run single.cfg -q -o "s-$k-$o-$i.h5" || { echo "FAIL: single shot $i ($case)"; fail=1; }
  done
  sv_both "$k-$o" 8 "r1 gpu0"
done
# Killed midway (one rank, SIGKILL), run again: the missing shots only, all equal to the singles.
unset TW_DIAMOND_MODE
if [ $mpi = 1 ]; then
  export TW_DIAMOND_MODE=persistent
  job survey.cfg gpu-diamond 2 moving
  mpirun -np 2 "$T" run survey.cfg -q -o killed &
  pid=$!
  for _ in $(seq 600); do
    [ "$(ls killed/shot-*.h5 2>/dev/null | wc -l)" -ge 2 ] && ls killed/*.part-* >/dev/null 2>&1 && break
    sleep 0.05
  done
  kill -9 "$(pgrep -P "$pid" | head -n 1)"
  wait "$pid" 2>/dev/null
  before=$(ls killed/shot-*.h5 | wc -l)
  echo "killed with $before complete shot files and $(ls killed/*.part-* 2>/dev/null | wc -l) temporary ones"
  expect 0 "$before complete \(skipped\), $((8 - before)) to run" -- mpirun -np 2 "$T" run survey.cfg -o killed
  ! ls killed/*.part-* killed/*.lock >/dev/null 2>&1 || { echo "FAIL: temporary or lock files left: $(ls killed)"; fail=1; }
  for i in $(seq 0 7); do same "killed/shot-0000$i.h5" "s-gpu-diamond-2-$i.h5" "killed and rerun, shot $i"; done
  unset TW_DIAMOND_MODE
fi
exit $fail
