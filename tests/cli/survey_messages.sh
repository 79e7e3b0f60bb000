#!/usr/bin/env bash
# A survey's errors whole, and said once:
#   1. a job refused by its medium (a shot on the free surface), its file in a folder of 400
#      characters (the error names it twice, about 750 characters): `run` says the very error `check`
#      says, not its first 600 characters; under `mpirun -np 2` once (rank 0's: every rank knows it),
#      and the ranks end without MPI_Abort.
set -uo pipefail
source "$(dirname "$0")/../cli_lib.sh"
T=$TORREWAVE
source "$TW_SOURCE_DIR/tests/survey_lib.sh"
sv_init
cd "$tmp"

a=$(printf 'a%.0s' {1..200}) b=$(printf 'b%.0s' {1..200})  # a folder name has at most 255 bytes
long="$a/$b"
mkdir -p "$long"
cat > "$long/job.cfg" <<'JOB'
grid = { n = [30, 28, 20]; d = [10.0, 10.0, 10.0]; };
time = { steps = 20; };
model = { type = "constant"; vp = 2000.0; };
scheme = { order = 4; };  boundary = { absorbing = 6; free_surface = true; };
solver = { kernel = "cpu"; threads = 1; };
shots = { positions = ( [50.0, 140.0, 0.0], [250.0, 60.0, 40.0] );
          lines = ( { from = [50.0, 100.0, 30.0]; to = [250.0, 100.0, 30.0]; count = 5; } ); receivers = "fixed"; };
sources = ( { wavelet = { type = "ricker"; frequency = 20.0; }; } );
receivers = { lines = ( { from = [0.0, 140.0, 10.0]; to = [290.0, 140.0, 10.0]; count = 30; } ); };
JOB

# ---------------------------------------------------------------- 1. a refusal, whole and once
expect 1 "free_surface" -- "$T" check "$long/job.cfg" -o refused
want=$(grep '^torrewave: error: ' "$tmp/out")
[ ${#want} -gt 700 ] || { echo "FAIL: check's error has ${#want} characters (the repro needs over 700)"; fail=1; }
same_error() { # same_error WHAT: the output's error lines are exactly check's, once
  local got
  got=$(grep 'error: ' "$tmp/out")
  if [ "$got" != "$want" ]; then
    echo "FAIL: $1: the error is not check's (${#want} characters), once; got ${#got}:"; cat "$tmp/out"; fail=1
  else echo "ok: $1: check's error, whole, once"; fi
}
expect 1 "free_surface" -- "$T" run "$long/job.cfg" -o refused
same_error "run"
[ ! -e refused ] || { echo "FAIL: the refused run left its output directory"; fail=1; }
if [ $mpi = 1 ]; then
  expect 1 "free_surface" -- mpirun -np 2 "$T" run "$long/job.cfg" -o refused
  same_error "mpirun -np 2 run"
  ! grep -q MPI_ABORT "$tmp/out" || { echo "FAIL: a refusal every rank knows ended in MPI_Abort"; fail=1; }
fi
exit $fail
