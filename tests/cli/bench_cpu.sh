#!/usr/bin/env bash
# `torrewave bench` on the CPU kernels: both kernels timed beside the host's measured ceilings
# (memory stream and FMA peak), the roofline percentage per row, and the JSON with the same.
source "$TW_SOURCE_DIR/tests/cli_lib.sh"
cd "$tmp"
export OMP_NUM_THREADS=2 # cpu-diamond's tile depends on the threads (below)
expect 0 'host ceilings \([0-9]+ threads\): memory [0-9.]+ GB/s .* fp32 (FMA|multiply\+add) [0-9.]+ GFMA/s' -- \
  "$TORREWAVE" bench --kernels cpu,cpu-diamond --orders 2,8 --cpu-grid 40x36x44 --absorb 4 --steps 6 --reps 1 \
  --warmup 0 --json b.json
out="$tmp/out"
# one row per kernel and order, each with a positive rate and a percentage of its ceiling
for k in cpu cpu-diamond; do
  for o in 2 8; do
    row=$(grep -E "^$k +$o +40x36x44 " "$out" || true)
    [ -n "$row" ] || { echo "FAIL: no row for $k order $o"; cat "$out"; fail=1; continue; }
    echo "$row" | awk '{ if (!($4 > 0)) exit 1 }' || { echo "FAIL: $k order $o: rate not positive: $row"; fail=1; }
    echo "$row" | grep -Eq ' [0-9.]+ %  host clock, [0-9.]+ per CPU-s' || { echo "FAIL: $k $o: no ceiling %: $row"; fail=1; }
  done
done
grep -Eq '^CPU ceilings: memory [0-9.]+ GB/s .*order 2 [0-9.]+ Gcell/s; order 8 [0-9.]+ Gcell/s' "$out" ||
  { echo "FAIL: no CPU ceilings line"; cat "$out"; fail=1; }
# the JSON carries the ceilings and cpu-diamond's resolved tile: R = dts·r = N1 / 4T cells (N1 = 36, T the
# threads the run reports: 2, or 1 in a build without OpenMP), at least 8 (solver/cpu_diamond.c)
threads=$(sed -n 's/.*host ceilings (\([0-9]*\) threads).*/\1/p' "$out" | head -1)
python3 - b.json "${threads:-0}" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
T = int(sys.argv[2])
assert T >= 1, "no thread count in the bench's output"
assert d["host_mem_gbps"] > 0 and d["host_fma_gfmas"] > 0, d
rows = {(r["kernel"], r["order"]): r for r in d["results"]}
R = min(32, max(8, 36 // (4 * T)))
assert rows[("cpu-diamond", 2)]["dts"] == R and rows[("cpu-diamond", 8)]["dts"] == max(R // 4, 2), (T, R, rows)
assert all(r["pct_ceiling"] > 0 and r["gcells_per_cpu_second"] > 0 for r in d["results"]), d["results"]
print("json: ok")
PY
exit $fail
