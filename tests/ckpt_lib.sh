# ckpt_lib.sh — sourced by tests/cli/checkpoint.sh and gpu_checkpoint.sh (after cli_lib.sh): runs
# killed at random moments and resumed, and bitwise comparison of results.
#   same A B                   traces, snapshots and their steps of B bitwise those of A (h5diff)
#   gone PATH...               none of them exists
#   ms                         the clock in milliseconds
#   signal_after_checkpoint SIG PID CKPT
#                              send SIG to PID as soon as a new checkpoint CKPT appears (a file
#                              under that name that was not there, or replaced, since the call)
#   killed_runs JOB OUT RUN_MS KILLS ENTRY...
#       run JOB into OUT again and again, each run on the next ENTRY ("kernel", or "kernel:CAP:HEIGHT"
#       for solver.device_memory = CAP and solver.tower_height = HEIGHT: the sliding window), with
#       --resume whenever a checkpoint is
#       there; the first KILLS runs get SIGKILL at a random moment within RUN_MS milliseconds (a
#       kill before the first checkpoint leaves none: the next run starts over), the rest finish.
# Bitwise: h5diff without tolerance where it is installed; else (the GPU machines have no
# hdf5-tools) torrewave compare with a relative L2 bound no nonzero float difference can meet.
same() {
  local d ok=1
  if command -v h5diff >/dev/null 2>&1; then
    for d in /receivers/traces /snapshots/p /snapshots/steps; do h5diff -q "$1" "$2" "$d" || ok=0; done
  else
    "$T" compare "$1" "$2" --rtol 1e-300 >/dev/null 2>&1 || ok=0
  fi
  if [ $ok = 1 ]; then echo "ok: $2 is bitwise $1"; else echo "FAIL: $2 differs from $1"; fail=1; fi
}
gone() {
  local f
  for f in "$@"; do [ -e "$f" ] && { echo "FAIL: $f is left"; fail=1; }; done
  return 0
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }
signal_after_checkpoint() {
  local old i
  old=$(stat -c %i "$3" 2>/dev/null || echo none)
  for i in $(seq 3000); do  # 30 s at most
    [ "$(stat -c %i "$3" 2>/dev/null || echo none)" != "$old" ] && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.01
  done
  kill -s "$1" "$2" 2>/dev/null
}
killed_runs() {
  local job=$1 out=$2 run_ms=$3 kills=$4; shift 4
  local entries=("$@") i=0 st=1 k cap h pid
  while [ $st != 0 ] && [ $i -lt $((kills + 4)) ]; do
    IFS=: read -r k cap h <<< "${entries[$((i % ${#entries[@]}))]}"
    local args=(run "$job" -q -o "$out" --set "solver.kernel=\"$k\"")
    [ -n "$cap" ] && args+=(--set "solver.device_memory=\"$cap\"")
    [ -n "$h" ] && args+=(--set "solver.tower_height=$h")
    [ -e "$out.ckpt" ] && args+=(--resume)
    "$T" "${args[@]}" 2> "$out.log" &
    pid=$!
    if [ $i -lt "$kills" ]; then
      sleep "$(awk -v m="$run_ms" -v r=$RANDOM 'BEGIN { printf "%.3f", m * (0.05 + 0.95 * r / 32768) / 1000 }')"
      kill -9 $pid 2>/dev/null
    fi
    wait $pid 2>/dev/null; st=$?
    echo "  ${args[*]:1}: status $st"
    [ $st = 0 ] || [ $st = 137 ] || { echo "FAIL: status $st:"; cat "$out.log"; fail=1; return; }
    i=$((i + 1))
  done
  [ $st = 0 ] || { echo "FAIL: $out never finished"; fail=1; }
}
