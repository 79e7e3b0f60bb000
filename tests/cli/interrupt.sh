#!/usr/bin/env bash
# SIGINT, SIGTERM and SIGHUP (a lost terminal) during a run: exit status 130, and nothing left under
# the final name (nor the temporary one, nor the lock); under nohup (SIGHUP ignored) the run goes on.
set -uo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cfg="$tmp/long.cfg"
cat > "$cfg" <<'CFG'
grid = { n = [120, 120, 80]; d = [10.0, 10.0, 10.0]; };
time = { duration = 4.0; };
model = { type = "constant"; vp = 3000.0; };
sources = ( { position = [600.0, 600.0, 400.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { points = ( [100.0, 100.0, 100.0] ); };
CFG
fail=0
sigs="INT TERM HUP"
# (a shell started with SIGHUP ignored — nohup — passes that on: the run could not see it)
[ $((0x$(awk '/^SigIgn:/ {print $2}' /proc/$$/status 2>/dev/null || echo 0) & 1)) = 1 ] && sigs="INT TERM"
for sig in $sigs; do
  "$TORREWAVE" run "$cfg" -o "$tmp/l.h5" --set solver.kernel=cpu -q &
  pid=$!
  # Wait until the run is under way (its temporary file exists), then signal it.
  for _ in $(seq 100); do ls "$tmp"/l.h5.part* >/dev/null 2>&1 && break; sleep 0.1; done
  sleep 0.5
  kill -s "$sig" "$pid"
  wait "$pid"; st=$?
  echo "SIG$sig -> exit status $st"
  [ "$st" = 130 ] || { echo "FAIL: want 130"; fail=1; }
  if ls "$tmp"/l.h5* "$tmp"/l.xdmf >/dev/null 2>&1; then echo "FAIL: left: $(ls "$tmp")"; fail=1; fi
done
# nohup: SIGHUP ignored when the run starts stays ignored; the run completes.
nohup "$TORREWAVE" run "$cfg" -o "$tmp/n.h5" --set solver.kernel=cpu --set time.duration=0.5 -q >"$tmp/nohup.out" 2>&1 &
pid=$!
for _ in $(seq 100); do ls "$tmp"/n.h5.part* >/dev/null 2>&1 && break; sleep 0.1; done
kill -s HUP "$pid"
wait "$pid"; st=$?
echo "SIGHUP under nohup -> exit status $st"
[ "$st" = 0 ] && [ -s "$tmp/n.h5" ] || { echo "FAIL: want 0 and the output"; cat "$tmp/nohup.out"; fail=1; }
exit $fail
