#!/usr/bin/env bash
# `torrewave bench` with grids it cannot build: refused before anything is measured, with a clear
# message, nothing on stdout (no header, no empty table), and the exit status of §10.7.
source "$TW_SOURCE_DIR/tests/cli_lib.sh"
cd "$tmp"
nothing_out() { # the command's stdout alone is empty
  "$@" 2>/dev/null | (! grep -q .) || { echo "FAIL: $*: something on stdout"; fail=1; }
}
# A grid its absorbing layers leave too little of: a usage error (2) naming the options (was: the
# header, one error per order, an empty table on stdout, status 1).
expect 2 '--cpu-grid 32x32x32 with --absorb 20: bench grid axis 0: 32 cells leave -8 model cells' -- \
  "$TORREWAVE" bench --kernels cpu --cpu-grid 32x32x32 --steps 1 --reps 1
nothing_out "$TORREWAVE" bench --kernels cpu --cpu-grid 32x32x32 --steps 1 --reps 1
expect 2 '--cpu-grid 64x64x64 with --absorb 40 --no-free-surface' -- \
  "$TORREWAVE" bench --kernels cpu --cpu-grid 64x64x64 --absorb 40 --no-free-surface
# A grid about twice the available memory, each array less than it: it was allocated and filled
# (swap, or the OOM killer); now refused at once. (ulimit -v 4 GiB: a build without the check fails on
# malloc here instead of taking the machine's memory.)
avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
side=$(python3 -c "print(int((2 * $avail_kb * 1024 / 20) ** (1 / 3)) + 1)")
start=$(date +%s)
expect 1 "bench: --cpu-grid ${side}x${side}x${side}: the problem needs .* of host memory and .* is available .*allowed about" -- \
  bash -c "ulimit -v 4194304; exec \"\$0\" bench --kernels cpu --cpu-grid ${side}x${side}x${side} --orders 2" \
  "$TORREWAVE"
(($(date +%s) - start < 10)) || { echo "FAIL: the refusal took $(($(date +%s) - start)) s"; fail=1; }
nothing_out bash -c "ulimit -v 4194304; exec \"\$0\" bench --kernels cpu --cpu-grid 1000000000x1000000000x1000000000" "$TORREWAVE"
expect 1 'needs over .* PiB of host memory' -- "$TORREWAVE" bench --cpu-grid 2000000000x2000000000x2000000000
exit $fail
