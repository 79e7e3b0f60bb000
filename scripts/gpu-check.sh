#!/usr/bin/env bash
# gpu-check.sh — on a GPU machine: build for sm_90 with the compiler's resource report, run the
# `gpu` tests, then the bench (orders 2, 4, 8 on a >= 2 GiB per time level grid), and end with ONE
# summary table (tests passed/failed, bench rows against the measured ceiling).
#
# usage: scripts/gpu-check.sh [KERNELS]
#   KERNELS   comma list for the bench (default: every GPU kernel `torrewave info --kernels` lists;
#             add gpu-stepwise@all to time every gpu-stepwise tuning variant)
# environment:
#   OUT         folder for the logs (default build-gpu-check/logs)
#   BUILD_DIR   build folder (default build-gpu-check)
#   ORDERS=2,4,8  GB=2 (GiB per time level)  STEPS=20  REPS=5
#   SKIP_TESTS=1 / SKIP_BENCH=1
#   NCU=1       also profile one launch of the default gpu-stepwise kernel per order in NCU_ORDERS
#               (default 2,8) with Nsight Compute (--clock-control none): ncu.txt
#   TARGETS     build only these targets (default: all)
#   TESTS       ctest -R regex among the gpu tests (default: all of label gpu)
#   DIAMOND_BENCH="GB ORDER DTS H [absorbing] [zN] [nzN];..."  register-tower configurations timed
#               by `test_gpu_diamond --bench` against gpu-stepwise in the same process (diamond.txt)
#   DIAG="GB ORDER DTS H [absorbing] [zN];..."  the same configurations also timed by two diagnostic
#               builds of test_gpu_diamond (TW_DIAMOND_NOMEM: no per-step global traffic, what the SM
#               does; TW_DIAMOND_NOCOMP: no update, what the memory does; wrong results, times only),
#               one row each in diamond.txt
#   TRACE="GRID[;GRID...]"  per-tower times of the last launch of an order-2 gpu-diamond bench run
#               on each grid (TW_DIAMOND_TRACE, scripts/diamond-trace.py: span, work bound, critical
#               path, run time per step by class of tower), appended to diamond.txt
#   SKIP_E2E=1 / SKIP_WINDOW=1 / SKIP_BUILD=1 (no cmake build: only what needs none, e.g. SMEM)
#   SMEM=MASK   build scripts/experiments/smemtower.cu (a measurement, not the solver) and time the
#               layouts whose bit is set in MASK (its all(): 16383 = every one), each checked bitwise
#               against the host (diamond.txt); SMEM_NCU=MASK also profiles one launch of those
#               layouts with Nsight Compute (warp states, instructions, shared-memory wavefronts: ncu.txt);
#               SMEM_BLOCK=MASK: its whole blocks (blocks(), 4095 = all; bits 0-5 z slabs, checked on
#               200 x 170 x 96; bits 6-11 the column over a cluster, checked on 200 x 170 x 128 and
#               96 x 80 x 512; each timed on 1024 x 1024 x 512 at heights 32 and 64, BLOCK_NT=32 only
#               one), SMEM=0 to run only those
#   JOBS="ORDER:STEPS:KERNEL[:key=value...];..."  real runs of configs/realistic.cfg (jobs.txt)
#   FUZZ="jobs.py arguments"  the job campaign on the GPU kernels, last, for at most FUZZ_S seconds
#               (default 300): scripts/fuzz/jobs.py --gpu only --cores $(nproc) FUZZ (e.g. FUZZ="--random
#               40 --regions 6 --seed 7 --only random,region"; 3-6 s a job); fuzz.txt, failures in the
#               summary. Needs h5diff, h5dump, h5ls: from .deps/usr/bin where the machine has none
#               (../shared/tools/device-deps.sh hdf5-tools libsegyio1 libsegyio-dev: segyio too, so that
#               the surveys' SEG-Y outputs run; without it jobs.py leaves output.segy out)
# Logs (at most 8 files, what the lent GPU machines send back): build.log (with `nvcc -Xptxas -v`),
# ptxas.txt (registers/spills per kernel), ctest-gpu.log, bench.txt (torrewave info + bench),
# bench.json, ncu.txt, fuzz.txt, summary.txt.
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD_DIR:-$ROOT/build-gpu-check}
LOG=${OUT:-$B/logs}
ORDERS=${ORDERS:-2,4,8}
GB=${GB:-2}
STEPS=${STEPS:-20}
REPS=${REPS:-5}
mkdir -p "$LOG"
t_start=$(date +%s)

# libconfig comes from .deps where the machine has no package registry.
if [ -d "$ROOT/.deps/usr/lib/x86_64-linux-gnu/pkgconfig" ]; then
  export PKG_CONFIG_SYSROOT_DIR=$ROOT/.deps
  export PKG_CONFIG_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  export CMAKE_PREFIX_PATH=$ROOT/.deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}  # segyio
fi

echo "== gpu-check: $(date -u +%FT%TZ) on $(hostname)" | tee "$LOG/build.log"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv 2>&1 | tee -a "$LOG/build.log"

# ---------------------------------------------------------------- build (sm_90, -Xptxas -v)
build_ok=1
[ "${SKIP_BUILD:-0}" = 1 ] && build_ok=0
[ $build_ok = 1 ] && {
  cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS="-Xptxas=-v" &&
    cmake --build "$B" -j"$(nproc)" ${TARGETS:+--target $TARGETS}
} >>"$LOG/build.log" 2>&1 || build_ok=0
TW=$B/app/torrewave
[ -x "$TW" ] || build_ok=0
[ "${SKIP_BUILD:-0}" = 1 ] && echo "build: skipped (SKIP_BUILD=1)" ||
  echo "build: $([ $build_ok = 1 ] && echo ok || echo FAILED) ($(($(date +%s) - t_start)) s)"

# Registers, shared memory and spills of every kernel, from ptxas's report in the build log.
python3 - "$LOG/build.log" >"$LOG/ptxas.txt" <<'EOF'
import re, subprocess, sys
fn, rows = None, []
props = {}
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"Compiling entry function '(\S+)' for '(sm_\d+a?)'", line)
    if m: fn = m.group(1); continue
    m = re.search(r"Function properties for (\S+)", line)
    if m: fn = m.group(1); continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and fn: props[fn] = m.groups(); continue
    m = re.search(r"Used (\d+) registers", line)
    if m and fn:
        s = re.search(r"(\d+) bytes smem", line)
        rows.append((fn, m.group(1), s.group(1) if s else "0") + props.get(fn, ("?", "?", "?")))
names = [r[0] for r in rows]
try:
    dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
except Exception:
    dem = names
if len(dem) != len(names): dem = names
print(f"{'kernel':<80} {'regs':>5} {'smem':>6} {'stack':>6} {'spill st':>8} {'spill ld':>8}")
seen = set()
for (n, regs, smem, stack, sst, sld), d in zip(rows, dem):
    d = re.sub(r"\(anonymous namespace\)::", "", d)
    d = re.sub(r"\(.*\)$", "", d)
    if d in seen: continue
    seen.add(d)
    print(f"{d[:80]:<80} {regs:>5} {smem:>6} {stack:>6} {sst:>8} {sld:>8}")
EOF
grep -E "stepwise_kernel|inject|kernel  " "$LOG/ptxas.txt" | head -40

# ---------------------------------------------------------------- tests (label gpu)
tests_line="not run"
if [ $build_ok = 1 ] && [ "${SKIP_TESTS:-0}" != 1 ]; then
  (cd "$B" && ctest -L gpu ${TESTS:+-R "$TESTS"} --output-on-failure --timeout 600 -V) >"$LOG/ctest-gpu.log" 2>&1
  tests_line=$(grep -E "tests passed|tests failed" "$LOG/ctest-gpu.log" | tail -1)
  grep -E "^[0-9]+: (case|end to end|order|memory cap)|FAIL|SKIP|Test +#|tests passed" "$LOG/ctest-gpu.log" | sed 's/^[0-9]*: //' | cut -c1-200
fi

# ---------------------------------------------------------------- bench
bench_ok=0
if [ $build_ok = 1 ] && [ "${SKIP_BENCH:-0}" != 1 ]; then
  "$TW" info | tee "$LOG/bench.txt"
  KERNELS=${1:-$("$TW" info --kernels | awk '$2 == "gpu" { print $1 }' | paste -sd, -)}
  if [ -z "$KERNELS" ]; then
    echo "bench: no GPU kernel usable here (torrewave info --kernels lists none)" | tee "$LOG/bench.txt"
  else
    "$TW" bench --kernels "$KERNELS" --orders "$ORDERS" --gb "$GB" --steps "$STEPS" --reps "$REPS" \
      --json "$LOG/bench.json" 2>&1 | tee -a "$LOG/bench.txt" && bench_ok=1
  fi
fi

# ---------------------------------------------------------------- register-tower configurations
if [ $build_ok = 1 ] && [ -n "${DIAMOND_BENCH:-}" ]; then
  : >"$LOG/diamond.txt"
  IFS=';' read -ra cfgs <<<"$DIAMOND_BENCH"
  for c in "${cfgs[@]}"; do
    "$B/tests/test_gpu_diamond" --bench $c >>"$LOG/diamond.txt" 2>&1 || echo "failed: $c" >>"$LOG/diamond.txt"
  done
  grep -E "register tower|failed" "$LOG/diamond.txt" | cut -c1-260
fi

# ---------------------------------------------------------------- the SM's part and the memory's part
if [ $build_ok = 1 ] && [ -n "${DIAG:-}" ]; then
  for v in NOMEM NOCOMP; do
    (cmake -S "$ROOT" -B "$B-$v" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      "-DCMAKE_CUDA_FLAGS=-DTW_DIAMOND_$v" && cmake --build "$B-$v" -j"$(nproc)" --target test_gpu_diamond) \
      >>"$LOG/build.log" 2>&1 &
  done
  wait
  IFS=';' read -ra cfgs <<<"$DIAG"
  for c in "${cfgs[@]}"; do
    for v in "" -NOMEM -NOCOMP; do
      "$B$v/tests/test_gpu_diamond" --bench $c 2>&1 | grep "register tower" | sed "s/^/diag ${v#-}${v:+ }/" |
        tee -a "$LOG/diamond.txt" | cut -c1-160
    done
  done
fi

# ---------------------------------------------------------------- tower traces (optional)
if [ $build_ok = 1 ] && [ -n "${TRACE:-}" ]; then
  IFS=';' read -ra grids <<<"$TRACE"
  for g in "${grids[@]}"; do
    TW_DIAMOND_TRACE=$B/trace.txt "$TW" bench --kernels gpu-diamond --orders 2 --grid "$g" --steps 256 --reps 1 \
      --warmup 1 --no-ceiling >/dev/null 2>&1 &&
      python3 "$ROOT/scripts/diamond-trace.py" "$B/trace.txt" | tee -a "$LOG/diamond.txt" ||
      echo "trace failed: $g" | tee -a "$LOG/diamond.txt"
  done
fi

# ---------------------------------------------------------------- Nsight Compute (optional)
if [ $build_ok = 1 ] && [ "${NCU:-0}" = 1 ]; then
  NCU_BIN=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -z "$NCU_BIN" ]; then
    echo "ncu: not found" | tee "$LOG/ncu.txt"
  else
    : >"$LOG/ncu.txt"
    for o in $(tr , ' ' <<<"${NCU_ORDERS:-2,8}"); do
      echo "== order $o: one gpu-stepwise launch (the default variant), ${GB} GiB per level" >>"$LOG/ncu.txt"
      "$NCU_BIN" --clock-control none -k regex:"stepwise_kernel|zrun_kernel" -s 5 -c 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
        --section LaunchStats \
        "$TW" bench --kernels gpu-stepwise --orders "$o" --gb "$GB" --steps 2 --reps 2 --warmup 1 --no-ceiling \
        >>"$LOG/ncu.txt" 2>&1 || echo "ncu failed (rc $?)" >>"$LOG/ncu.txt"
    done
    grep -E "^== order|DRAM Throughput|Memory Throughput|L2 Hit Rate|L1/TEX Hit|Duration|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Compute \(SM\) Throughput|dram__bytes|Mem Busy|Max Bandwidth" "$LOG/ncu.txt" | head -60
  fi
fi

# ---------------------------------------------------------------- end to end (job files)
# The quick start through every kernel, and the layered job at order 2 (where gpu-diamond runs
# its register towers) through cpu and both GPU kernels; `torrewave compare` exactly (rtol 1e-30:
# every kernel computes the same bits, docs/design.md §1.7).
e2e_line="not run"
if [ $build_ok = 1 ] && [ "${SKIP_E2E:-0}" != 1 ]; then
  E=$B/e2e
  mkdir -p "$E"
  : >"$LOG/e2e.txt"
  # gpu-diamond runs the stepwise kernel where its towers would be slower (absorbing layers in z):
  # TW_DIAMOND_MODE=persistent makes it run its register towers here, so they are what is compared.
  for k in cpu gpu-stepwise gpu-diamond; do
    TW_DIAMOND_MODE=persistent "$TW" run "$ROOT/configs/quickstart.cfg" --set solver.kernel=$k -o "$E/q-$k.h5" -q \
      2>>"$LOG/e2e.txt"
  done
  for k in cpu gpu-stepwise gpu-diamond; do
    TW_DIAMOND_MODE=persistent "$TW" run "$ROOT/configs/layered.cfg" --set solver.kernel=$k --set scheme.order=2 \
      -o "$E/l-$k.h5" -q 2>>"$LOG/e2e.txt"
  done
  n=0 ok=0
  for pair in "q-cpu q-gpu-stepwise 1e-30" "q-cpu q-gpu-diamond 1e-30" "q-gpu-stepwise q-gpu-diamond 1e-30" \
              "l-cpu l-gpu-stepwise 1e-30" "l-gpu-stepwise l-gpu-diamond 1e-30"; do
    set -- $pair
    n=$((n + 1))
    echo "== compare $1 $2 --rtol $3" >>"$LOG/e2e.txt"
    "$TW" compare "$E/$1.h5" "$E/$2.h5" --rtol "$3" --strict >>"$LOG/e2e.txt" 2>&1 && ok=$((ok + 1))
  done
  e2e_line="$ok/$n comparisons within tolerance (e2e.txt)"
  grep -E "^torrewave:|^== compare|relative|L2" "$LOG/e2e.txt" | cut -c1-160
fi

# ---------------------------------------------------------------- real jobs (run summaries)
# JOBS="ORDER:STEPS:KERNEL[:key=value...];..." runs configs/realistic.cfg (JOB_FILE overrides) with
# scheme.order, time.steps and solver.kernel set; each run's summary line (wall, computing, Gcell/s)
# goes to jobs.txt. Runs of several lengths give the marginal rate per step beside the summary's.
if [ $build_ok = 1 ] && [ -n "${JOBS:-}" ]; then
  JF=${JOB_FILE:-$ROOT/configs/realistic.cfg}
  : >"$LOG/jobs.txt"
  IFS=';' read -ra js <<<"$JOBS"
  for j in "${js[@]}"; do
    IFS=':' read -ra f <<<"$j"
    sets=(--set "scheme.order=${f[0]}" --set "time.steps=${f[1]}" --set "solver.kernel=${f[2]}")
    for kv in "${f[@]:3}"; do sets+=(--set "$kv"); done
    echo "== job order ${f[0]} steps ${f[1]} ${f[2]} ${f[*]:3}" >>"$LOG/jobs.txt"
    t0=$(date +%s%N)
    "$TW" run "$JF" "${sets[@]}" -o "$B/job.h5" -q >>"$LOG/jobs.txt" 2>&1 || echo "job failed: $j" >>"$LOG/jobs.txt"
    echo "process: $((($(date +%s%N) - t0) / 1000000)) ms wall" >>"$LOG/jobs.txt"
  done
  grep -E "^== job|torrewave:|process:|failed" "$LOG/jobs.txt" | cut -c1-260
fi

# ---------------------------------------------------------------- the shared-memory tower prototype
smem_ok=1
if [ -n "${SMEM:-}" ]; then
  echo "== smemtower, layouts $SMEM" >>"$LOG/diamond.txt"
  mkdir -p "$B"
  if nvcc -O3 -arch=sm_90 -std=c++17 -fmad=false -ftz=true -I"$ROOT/common" -Xptxas -v -o "$B/smemtower" \
    "$ROOT/scripts/experiments/smemtower.cu" >>"$LOG/build.log" 2>&1; then
    : >"$B/smem.out"
    # line by line into the log, so that a call cut off at its time limit still sends back what ran
    [ "$SMEM" != 0 ] && { ONLY=$SMEM stdbuf -oL "$B/smemtower" 3 2>&1 | tee -a "$LOG/diamond.txt" >>"$B/smem.out" || smem_ok=0; }
    [ -n "${SMEM_BLOCK:-}" ] && { BLOCK=$SMEM_BLOCK stdbuf -oL "$B/smemtower" 3 2>&1 | tee -a "$LOG/diamond.txt" >>"$B/smem.out" || smem_ok=0; }
    grep -q FAILED "$B/smem.out" && smem_ok=0
    cut -c1-220 "$B/smem.out"
    if [ -n "${SMEM_NCU:-}" ]; then
      NCU_BIN=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      echo "== smemtower layouts $SMEM_NCU, one launch each (height 32)" >>"$LOG/ncu.txt"
      PROF=1 NOCHECK=1 ONLY=$SMEM_NCU timeout 400 "$NCU_BIN" --clock-control none -k regex:tower_kernel \
        --section WarpStateStats --section SchedulerStats --section LaunchStats \
        --metrics smsp__thread_inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active \
        "$B/smemtower" >>"$LOG/ncu.txt" 2>&1 || echo "ncu failed (rc $?)" >>"$LOG/ncu.txt"
      grep -E "tower_kernel<|Stall|Warp Cycles|thread_inst|wavefronts|conflicts|issue_active|Issued Warp" "$LOG/ncu.txt" |
        sed 's/  */ /g' | cut -c1-160 | head -80
    fi
  else
    smem_ok=0
    echo "smemtower: build FAILED (build.log)" | tee -a "$LOG/diamond.txt"
  fi
fi

# ---------------------------------------------------------------- the sliding window (bench)
# In-core against windowed on one grid with the cap 8x below the fields (12 B per cell), at the
# orders in WINDOW_ORDERS, over tower heights (WINDOW_H2 for order 2, WINDOW_H8 for order 8; `auto`:
# the backend's choice). Steps per repetition: a multiple of every height (a window moves the grid
# once per block; WINDOW_STEPS2 for order 2).
# WINDOW_GRID (default 3400x2176x256: 22.7 GB of fields, a ring of ~400 planes at the default
# cap), WINDOW_CAP (default fields / 8). Both runs start from the same random fields.
if [ $build_ok = 1 ] && [ "${SKIP_WINDOW:-0}" != 1 ]; then
  WG=${WINDOW_GRID:-3400x2176x256}
  cells=$(($(tr x '*' <<<"$WG")))
  CAP=${WINDOW_CAP:-$((cells * 12 / 8))}
  : >"$LOG/window.txt"
  for o in $(tr , ' ' <<<"${WINDOW_ORDERS:-2,8}"); do
    if [ "$o" = 2 ]; then hs=${WINDOW_H2:-128,256,auto}; steps=${WINDOW_STEPS2:-256}; ab=0; else hs=${WINDOW_H8:-48,64}; steps=192; ab=20; fi
    ks="gpu-diamond"
    for h in $(tr , ' ' <<<"$hs"); do
      if [ "$h" = auto ]; then ks="$ks,gpu-diamond+cap=$CAP"; else ks="$ks,gpu-diamond+cap=$CAP+h=$h"; fi
    done
    echo "== order $o, grid $WG, cap $CAP B, absorb $ab, $steps steps per repetition" | tee -a "$LOG/window.txt"
    "$TW" bench --kernels "$ks" --orders "$o" --grid "$WG" --absorb "$ab" --steps "$steps" --reps "${WINDOW_REPS:-3}" \
      --no-ceiling --json "$LOG/window-$o.json" >>"$LOG/window.txt" 2>&1
  done
  grep -vE "problem built" "$LOG/window.txt" | cut -c1-300
fi

# ---------------------------------------------------------------- the job campaign (optional, last)
fuzz_line=""
if [ $build_ok = 1 ] && [ -n "${FUZZ:-}" ]; then
  command -v h5diff >/dev/null || export PATH=$ROOT/.deps/usr/bin:$PATH
  # (the campaign prints its totals at the end, and each failure as it happens on stderr: a run cut
  # by the time limit still says what it found)
  timeout "${FUZZ_S:-300}" python3 "$ROOT/scripts/fuzz/jobs.py" --build "$B" --work "$B/fuzz" --cores "$(nproc)" \
    --gpu only $FUZZ >"$LOG/fuzz.txt" 2>&1
  rc=$?
  fuzz_line="$(grep -E "valid jobs" "$LOG/fuzz.txt" | cut -c1-220)"
  [ -n "$fuzz_line" ] || fuzz_line="cut at ${FUZZ_S:-300} s: $(grep -E "^[0-9]+/[0-9]+ jobs" "$LOG/fuzz.txt" | tail -1)"
  fuzz_line="$fuzz_line; exit $rc, $(grep -c "^FAIL" "$LOG/fuzz.txt") failure lines"
  grep "^FAIL" "$LOG/fuzz.txt" | sort | uniq | head -20
fi

# ---------------------------------------------------------------- one summary table
{
  echo
  echo "== summary ($(($(date +%s) - t_start)) s)"
  echo "build:  $([ "${SKIP_BUILD:-0}" = 1 ] && echo skipped || { [ $build_ok = 1 ] && echo ok || echo FAILED, see build.log; })"
  echo "tests:  ${tests_line}"
  echo "e2e:    ${e2e_line}"
  [ -n "$fuzz_line" ] && echo "fuzz:   $fuzz_line" && grep "^FAIL" "$LOG/fuzz.txt" | sed 's/^/fuzz:   /' | sort -u | head -10
  if [ -s "$LOG/bench.json" ]; then
    python3 - "$LOG/bench.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"bench:  {d['device']}; copy {d['copy_gbps']:.0f} GB/s -> ceiling {d['ceiling_gcells']:.1f} Gcell/s at 16 B/update")
print(f"  {'kernel':<24} {'order':>5} {'grid':>15} {'Gcell/s':>8} {'min':>8} {'max':>8} {'GB/s':>6} {'% ceil':>7}")
for r in d["results"]:
    g = "x".join(str(v) for v in r["grid"])
    print(f"  {r['kernel']:<24} {r['order']:>5} {g:>15} {r['gcells_median']:>8.1f} {r['gcells_min']:>8.1f} "
          f"{r['gcells_max']:>8.1f} {r['gbytes_per_s']:>6.0f} {r['pct_ceiling']:>6.1f}%")
EOF
  else
    echo "bench:  $([ "${SKIP_BENCH:-0}" = 1 ] || [ "${SKIP_BUILD:-0}" = 1 ] && echo skipped || echo 'no results (see bench.txt)')"
  fi
  [ -s "$LOG/diamond.txt" ] && grep -E "register tower|failed" "$LOG/diamond.txt" | sed 's/^/diamond: /' | cut -c1-200
  [ -s "$LOG/diamond.txt" ] && grep -E "^order .* steps(: |, )|FAILED" "$LOG/diamond.txt" |
    sed -E 's/^/smem: /; s/, [0-9]+ towers of [0-9]+ columns x [0-9]+//; s/ \([0-9.]+ per SM\), [0-9.]+ us a launch//' | cut -c1-200
  [ $smem_ok = 1 ] || echo "smem: FAILED (diamond.txt)"
  for f in "$LOG"/window-*.json; do
    [ -s "$f" ] || continue
    python3 - "$f" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["results"]
base = rs[0]["gcells_median"] if rs else 0
for r in rs:
    g = "x".join(str(v) for v in r["grid"])
    rel = f"{100 * r['gcells_median'] / base:5.1f}% of in-core" if base else ""
    print(f"window: {r['kernel']:<36} order {r['order']} {g:>15} {r['gcells_median']:>8.1f} Gcell/s {rel}")
EOF
  done
} | tee "$LOG/summary.txt"
[ $smem_ok = 1 ] || exit 1
[ "${SKIP_BUILD:-0}" = 1 ] && exit 0
[ $build_ok = 1 ] && ! grep -qE "[1-9][0-9]* tests failed" <<<"$tests_line" || exit 1
