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
# A stop asked while the loop waits for a snapshot's store starts no new store (session 26: the
# next snapshot was stored too, and the stop waited for it). Each store held 3 s
# (TW_SNAPSHOT_STORE_PAUSE): the first starts at step 2, the loop waits for it at step 4 and is
# interrupted then; exit ~2.6 s after the signal, ~5.6 s with the second store.
{ cat "$cfg"; echo 'snapshots = { steps = [2, 4]; };'; } > "$tmp/snap.cfg"
TW_SNAPSHOT_STORE_PAUSE=3 "$TORREWAVE" run "$tmp/snap.cfg" -o "$tmp/s.h5" --set solver.kernel=cpu \
  --set time.duration=0.1 -q &
pid=$!
for _ in $(seq 100); do ls "$tmp"/s.h5.part* >/dev/null 2>&1 && break; sleep 0.1; done
sleep 0.5
t0=$(date +%s%N)
kill -s INT "$pid"
wait "$pid"; st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "SIGINT during a snapshot's store -> exit status $st after $ms ms"
[ "$st" = 130 ] && [ "$ms" -lt 4500 ] || { echo "FAIL: want 130 within 4.5 s (one store, not two)"; fail=1; }
if ls "$tmp"/s.h5* "$tmp"/s.xdmf >/dev/null 2>&1; then echo "FAIL: left: $(ls "$tmp")"; fail=1; fi
# The same with checkpoints, the step waited at a checkpoint's too: no checkpoint of that step (its
# journal lacks the unstored snapshot: --resume refused it, and it had replaced step 4's), so the
# checkpoint kept is step 4's and resumes (review of session 26).
{ cat "$cfg"; echo 'snapshots = { steps = [5, 8]; };'; echo 'checkpoint = { every = 4; };'; } > "$tmp/ck.cfg"
TW_CHECKPOINT_SYNC=1 TW_SNAPSHOT_STORE_PAUSE=3 "$TORREWAVE" run "$tmp/ck.cfg" -o "$tmp/c.h5" --set solver.kernel=cpu \
  --set time.duration=0.1 -q 2>"$tmp/ck.log" &
pid=$!
for _ in $(seq 100); do ls "$tmp"/c.h5.part* >/dev/null 2>&1 && break; sleep 0.1; done
sleep 0.5
kill -s INT "$pid"
wait "$pid"; st=$?
echo "SIGINT during a snapshot's store at a checkpoint step -> exit status $st: $(grep -o 'checkpoint.*kept' "$tmp/ck.log")"
[ "$st" = 130 ] && grep -q "of step 4 is kept" "$tmp/ck.log" || { echo "FAIL: want 130, step 4's checkpoint kept"; fail=1; }
"$TORREWAVE" run "$tmp/ck.cfg" -o "$tmp/c.h5" --set solver.kernel=cpu --set time.duration=0.1 -q --resume 2>"$tmp/ck.log"
st=$?
[ "$st" = 0 ] && [ -s "$tmp/c.h5" ] && echo "ok: resumed" || { echo "FAIL: --resume: $st"; cat "$tmp/ck.log"; fail=1; }
rm -f "$tmp"/c.h5*
# nohup: SIGHUP ignored when the run starts stays ignored; the run completes.
nohup "$TORREWAVE" run "$cfg" -o "$tmp/n.h5" --set solver.kernel=cpu --set time.duration=0.5 -q >"$tmp/nohup.out" 2>&1 &
pid=$!
for _ in $(seq 100); do ls "$tmp"/n.h5.part* >/dev/null 2>&1 && break; sleep 0.1; done
kill -s HUP "$pid"
wait "$pid"; st=$?
echo "SIGHUP under nohup -> exit status $st"
[ "$st" = 0 ] && [ -s "$tmp/n.h5" ] || { echo "FAIL: want 0 and the output"; cat "$tmp/nohup.out"; fail=1; }
exit $fail
