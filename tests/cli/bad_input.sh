#!/usr/bin/env bash
# Bad input: a clear message naming file:line and key, exit status 1, and no output file.
set -uo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect STATUS PATTERN -- command...
  local want=$1 pat=$2; shift 3
  "$@" > "$tmp/out" 2>&1; local got=$?
  if [ "$got" != "$want" ] || ! grep -Eq "$pat" "$tmp/out"; then
    echo "FAIL: $* -> status $got (want $want), output:"; cat "$tmp/out"; fail=1
  else echo "ok: $* -> $got: $(head -c 200 "$tmp/out" | head -n 1)"; fi
}
cat > "$tmp/bad.cfg" <<'CFG'
grid = { n = [20, 20, -5]; d = [10.0, 10.0, 10.0]; };
time = { steps = 10; };
model = { type = "constant"; vp = 2000.0; };
sources = ( { position = [50.0, 50.0, 50.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
output = { file = "bad.h5"; };
CFG
cd "$tmp"
expect 1 'bad\.cfg:1: grid\.n' -- "$TORREWAVE" run "$tmp/bad.cfg"
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for a bad job"; fail=1; }
expect 1 'bad\.cfg:1: grid\.n' -- "$TORREWAVE" check "$tmp/bad.cfg"
sed -i 's/-5/10/' "$tmp/bad.cfg"
expect 1 'solver\.kernel' -- "$TORREWAVE" run "$tmp/bad.cfg" --set solver.kernel=gpu-diamnd
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for a bad kernel"; fail=1; }
expect 1 'time\.dt|stab' -- "$TORREWAVE" run "$tmp/bad.cfg" --set time.dt=0.01
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for an unstable dt"; fail=1; }
expect 1 'does not exist' -- "$TORREWAVE" check "$tmp/bad.cfg" -o /nonexistent/dir/x.h5
expect 1 'No such file|cannot open|cannot read' -- "$TORREWAVE" run "$tmp/missing.cfg"
# A memory need beyond the machine is refused before anything is allocated, for check and run.
expect 1 'needs .* of host memory and .* is available' -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'grid.n=[20000,20000,2000]'
expect 1 'needs .* of host memory and .* is available' -- "$TORREWAVE" run "$tmp/bad.cfg" --set 'grid.n=[20000,20000,2000]'
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for a job too large"; fail=1; }
# A NUL byte inside a job file: everything after it would be ignored — refused, where it is named.
(head -n 3 "$tmp/bad.cfg"; printf 'scheme = { order = 2; };\0\n'; tail -n +4 "$tmp/bad.cfg") > "$tmp/nul.cfg"
expect 1 'nul\.cfg:4: a NUL byte \(byte [0-9]+ of the file\): a job file is text' -- "$TORREWAVE" check "$tmp/nul.cfg"
# More CPU threads than 4 a CPU (libgomp crashed at 65536): refused before anything starts.
expect 1 'bad\.cfg: solver\.threads = 65536: this machine has [0-9]+ CPUs' -- "$TORREWAVE" run "$tmp/bad.cfg" --set solver.threads=65536
expect 1 "OpenMP's default thread count is 65536" -- env OMP_NUM_THREADS=65536 "$TORREWAVE" check "$tmp/bad.cfg"
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created"; fail=1; }
# cpu-diamond's DTS and height: check refuses what run would
expect 1 'bad\.cfg: solver\.dts = 1000: the diamond tile' -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'solver={kernel="cpu-diamond";dts=1000;}'
expect 2 'orders: "2x" is not an even order' -- "$TORREWAVE" bench --orders 2x
expect 2 'orders: no order named' -- "$TORREWAVE" bench --orders ,
expect 2 'kernels: no kernel named' -- "$TORREWAVE" bench --kernels ,
expect 0 'commands:' -- "$TORREWAVE" help help
expect 2 'unknown command' -- "$TORREWAVE" frobnicate
expect 2 'no job file' -- "$TORREWAVE" run
expect 2 'unknown option' -- "$TORREWAVE" run "$tmp/bad.cfg" --bogus
expect 0 'usage: torrewave run' -- "$TORREWAVE" run --help
expect 0 'commands:' -- "$TORREWAVE" --help
exit $fail
