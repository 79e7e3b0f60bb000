#!/usr/bin/env bash
# solver.threads holds for a snapshot stored on a thread of its own (run.c, snap_store): its
# transposition into the file's order runs on the session's threads, as it does when stored in
# between (TW_SNAPSHOT_ASYNC=0). Counted as threads the run creates (strace -f): with solver.threads
# = 1, storing on the thread creates that one thread more, no OpenMP team (session 25: a team of
# every core, in each survey worker's store). Needs strace and two CPUs, else skipped (77).
set -uo pipefail
source "$(dirname "$0")/../cli_lib.sh"
T=$TORREWAVE
command -v strace >/dev/null 2>&1 || { echo "skip: no strace"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "skip: one CPU (OpenMP's default team is one thread)"; exit 77; }
strace -f -qq -o /dev/null true 2>/dev/null || { echo "skip: strace cannot trace here"; exit 77; }
cd "$tmp"
# 136 x 136 x 128: the writer's slab of 112 planes (two chunks of 56) is past the transposition's
# threshold for threads (1 Mi values)
cat > th.cfg <<'CFG'
grid = { n = [136, 136, 128]; d = [10.0, 10.0, 10.0]; };
time = { steps = 6; };
model = { type = "constant"; vp = 2000.0; };
sources = ( { position = [680.0, 680.0, 640.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { points = ( [100.0, 100.0, 100.0] ); };
snapshots = { steps = [3]; };
solver = { kernel = "cpu"; threads = 1; };
CFG
made() { # made ASYNC: the threads one run creates
  env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT TW_SNAPSHOT_ASYNC=$1 \
    strace -f -qq -e trace=clone,clone3 -o "st$1.txt" "$T" run th.cfg -o "t$1.h5" -q 2>/dev/null ||
    { echo "FAIL: the run (TW_SNAPSHOT_ASYNC=$1)"; fail=1; }
  grep -Ec 'clone3?(\(| resumed>).*= [1-9][0-9]*$' "st$1.txt"
}
sync=$(made 0)
async=$(made 1)
if [ "$async" = $((sync + 1)) ]; then
  echo "ok: the store's thread alone ($sync threads in between, $async on the thread)"
else
  echo "FAIL: storing on a thread created $async threads, in between $sync (want one more: the store's)"; fail=1
fi
expect 0 "" -- "$T" compare t0.h5 t1.h5 --strict --rtol 0
exit $fail
