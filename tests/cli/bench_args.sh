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
# A number followed by anything else, or blanks around it, is refused naming the option and the value
# (--gb 2x ran a 2 GiB bench; --cpu-grid 4294967344x48x48 wrapped to 48x48x48); nothing is measured.
quick=(--kernels cpu --reps 1 --no-ceiling)
expect 2 '--gb takes a positive size in GiB, got "2x"' -- "$TORREWAVE" bench "${quick[@]}" --cpu-grid 48x48x48 --steps 1 --orders 2 --gb 2x
nothing_out "$TORREWAVE" bench "${quick[@]}" --cpu-grid 48x48x48 --steps 1 --orders 2 --gb 2x
expect 2 '--gb takes a positive size in GiB, got "1.5 "' -- "$TORREWAVE" bench "${quick[@]}" --gb '1.5 '
expect 2 '--gb takes a positive size in GiB, got "inf"' -- "$TORREWAVE" bench "${quick[@]}" --gb inf
expect 2 '--cpu-grid takes NXxNYxNZ, got "4294967344x48x48"' -- "$TORREWAVE" bench "${quick[@]}" --cpu-grid 4294967344x48x48
expect 2 '--cpu-grid takes NXxNYxNZ, got " 48x48x48"' -- "$TORREWAVE" bench "${quick[@]}" --cpu-grid ' 48x48x48'
expect 2 '--grid takes NXxNYxNZ, got "64x64x64x"' -- "$TORREWAVE" bench "${quick[@]}" --grid 64x64x64x
expect 2 '--steps takes a count >= 1, got " 1"' -- "$TORREWAVE" bench "${quick[@]}" --steps ' 1'
expect 2 '--absorb takes a count >= 0, got "4294967316"' -- "$TORREWAVE" bench "${quick[@]}" --absorb 4294967316
expect 2 '--orders: " 2" is not an even order in 2..16' -- "$TORREWAVE" bench "${quick[@]}" --orders ' 2'
expect 0 'cpu +2 +48x48x48' -- "$TORREWAVE" bench "${quick[@]}" --cpu-grid 48x48x48 --steps 1 --orders 2 --gb 0.5
exit $fail
