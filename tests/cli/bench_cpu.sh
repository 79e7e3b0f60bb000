#!/usr/bin/env bash
# `torrewave bench` on the CPU kernels: both kernels timed beside the host's measured ceilings
# (memory stream and FMA peak), the roofline percentage per row, and the JSON with the same; --json
# replaces only a file bench wrote.
source "$TW_SOURCE_DIR/tests/cli_lib.sh"
cd "$tmp"
export OMP_NUM_THREADS=2 # cpu-diamond's tile depends on the threads (below)
# b.json: a file of an earlier bench (before its "written_by" marker), which the run below replaces
printf '{\n  "version": "0.1.0",\n  "device": "no \\"GPU\\"",\n  "copy_gbps": 0.000,\n  "ceiling_gcells": 0.000,\n  "results": [\n  ]\n}\n' > b.json
expect 0 'host ceilings \([0-9]+ threads\): memory [0-9.]+ GB/s .* fp32 (FMA|multiply\+add) [0-9.]+ GFMA/s' -- \
  "$TORREWAVE" bench --kernels cpu,cpu-diamond --orders 2,8 --cpu-grid 40x36x44 --absorb 4 --steps 6 --reps 1 \
  --warmup 0 --json b.json
out="$tmp/out"
# one row per kernel and order, each with a positive rate and a percentage of its ceiling
for k in cpu cpu-diamond; do
  for o in 2 8; do
    row=$(grep -E "^$k +$o +40x36x44 " "$out" || true)
    [ -n "$row" ] || { echo "FAIL: no row for $k order $o"; cat "$out"; fail=1; continue; }
    # a number here (two decimals: a loaded machine may print 0.00 for this tiny grid); the JSON
    # below holds the rates unrounded and must have them positive
    echo "$row" | awk '{ if (!($4 ~ /^[0-9]+\.[0-9]+$/)) exit 1 }' || { echo "FAIL: $k order $o: no rate: $row"; fail=1; }
    echo "$row" | grep -Eq ' [0-9.]+ %  host clock, [0-9.]+ per CPU-s' || { echo "FAIL: $k $o: no ceiling %: $row"; fail=1; }
  done
done
grep -Eq '^CPU ceilings: memory [0-9.]+ GB/s .*order 2 [0-9.]+ Gcell/s; order 8 [0-9.]+ Gcell/s' "$out" ||
  { echo "FAIL: no CPU ceilings line"; cat "$out"; fail=1; }
# the JSON carries the ceilings and cpu-diamond's resolved tile: R = dts·r = N1 / 4T cells (N1 = 36, T the
# threads the run reports: 2, or 1 in a build without OpenMP), at least 8 (solver/cpu/cpu_diamond.c)
threads=$(sed -n 's/.*host ceilings (\([0-9]*\) threads).*/\1/p' "$out" | head -1)
python3 - b.json "${threads:-0}" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d.items())[0] == ("written_by", "torrewave bench"), list(d)  # the marker comes first
T = int(sys.argv[2])
assert T >= 1, "no thread count in the bench's output"
assert d["host_mem_gbps"] > 0 and d["host_fma_gfmas"] > 0, d
rows = {(r["kernel"], r["order"]): r for r in d["results"]}
R = min(32, max(8, 36 // (4 * T)))
assert rows[("cpu-diamond", 2)]["dts"] == R and rows[("cpu-diamond", 8)]["dts"] == max(R // 4, 2), (T, R, rows)
assert all(r["pct_ceiling"] > 0 and r["gcells_per_cpu_second"] > 0 for r in d["results"]), d["results"]
print("json: ok")
PY
# --json replaces only a file bench wrote (checked before the bench): a job file, a JSON file from
# elsewhere and an earlier bench's file cut short stay; one with the marker (b.json) is replaced.
tiny=(bench --kernels cpu --orders 2 --cpu-grid 16x16x16 --absorb 2 --steps 1 --reps 1 --warmup 0 --no-ceiling)
cp "$TW_SOURCE_DIR/configs/quickstart.cfg" job.cfg && echo '{"version": "1", "results": []}' > other.json
printf '{\n  "version": "0.1.0",\n  "device": "no GPU",\n  "copy_gbps": 0.000,\n  "ceiling_gcells": 0.000,\n  "res' > cut.json
cp job.cfg job.keep && cp other.json other.keep && cp cut.json cut.keep
expect 1 "--json output 'job\.cfg' exists and is not a JSON file torrewave bench wrote \(--json replaces only those\): refusing to replace it; remove it first if it may go, or choose another name \(--json FILE\)" \
  -- "$TORREWAVE" "${tiny[@]}" --json job.cfg
expect 1 "--json output 'other\.json' exists and is not a JSON file torrewave bench wrote" -- "$TORREWAVE" "${tiny[@]}" --json other.json
expect 1 "--json output 'cut\.json' exists and is not a JSON file torrewave bench wrote" -- "$TORREWAVE" "${tiny[@]}" --json cut.json
cmp -s job.cfg job.keep && cmp -s other.json other.keep && cmp -s cut.json cut.keep ||
  { echo "FAIL: bench --json replaced a file it did not write"; fail=1; }
# ... checked again just before the rename: a file that came under the name while the bench ran
# (here while it waits to write its first progress line, its stderr a pipe already full) stays.
mkfifo stall && exec 3<>stall && timeout 5 head -c 65536 /dev/zero >&3
"$TORREWAVE" "${tiny[@]}" --json late.json > late.out 2> stall 3>&- &
pid=$!
for _ in $(seq 200); do grep -q pipe "/proc/$pid/wchan" 2>/dev/null && break; sleep 0.05; done
cp job.cfg late.json
cat stall > late.err 3>&- &
drain=$!
wait $pid; st=$?
exec 3>&-
wait $drain
if [ "$st" = 1 ] && cmp -s job.cfg late.json &&
   grep -aq "error: --json output 'late\.json' exists and is not a JSON file torrewave bench wrote" late.err &&
   ! ls late.json.part-* >/dev/null 2>&1; then echo "ok: a file that came during the bench stays"
else echo "FAIL: bench --json replaced a file that came while it ran (status $st): $(ls)"; tr -d '\000' < late.err; fail=1; fi
expect 0 '^cpu +2 +16x16x16 ' -- "$TORREWAVE" "${tiny[@]}" --json b.json
grep -q '"grid": \[16, 16, 16\]' b.json || { echo "FAIL: b.json (bench's own) was not replaced"; cat b.json; fail=1; }
# A write that fails (here the file size limit: EFBIG) leaves the old file whole: the JSON is written
# under a temporary name beside it (b.json.part-PID), renamed when complete, removed on failure.
cp b.json b.keep
( ulimit -f 0; trap '' XFSZ; exec "$TORREWAVE" "${tiny[@]}" --json b.json ) 2>&1 | cat > fsz.out # (a pipe: no limit)
st=${PIPESTATUS[0]}
if [ "$st" = 0 ] || ! grep -q "^torrewave: error: --json 'b\.json': writing 'b\.json\.part-[0-9]*' failed: File too large; 'b\.json' is unchanged" fsz.out ||
   ! cmp -s b.json b.keep || ls b.json.part-* >/dev/null 2>&1; then
  echo "FAIL: a failed --json write (status $st) lost or changed the old file, or left its temporary: $(ls)"; cat fsz.out; fail=1
else echo "ok: a failed --json write: $(grep error fsz.out)"; fi
# A bench --json killed while writing leaves FILE.part-PID: the next bench --json FILE removes those
# whose process is gone and that hold bench's beginning (a part of it, or nothing yet), naming each;
# one of a live process (this shell), one of other content and a link stay (before: all stayed);
# as root, also one of another user (nobody) in bench's words: theirs, it stays, and the bench runs
# (review, session 19: one that could not be removed made the bench fail before it measured).
printf '{\n  "written_by": "torrewave bench",\n  "version": "0.' > c.json.part-999999999
other=0
if [ "$(id -u)" = 0 ] && cp c.json.part-999999999 c.json.part-999999994 && chown nobody c.json.part-999999994; then
  other=1
fi
printf '{\n  "writ' > c.json.part-999999998 && : > c.json.part-999999997 && echo keep > c.json.part-999999996
ln -s c.json.part-999999999 c.json.part-999999995 && cp c.json.part-999999999 c.json.part-$$ &&
  cp c.json.part-$$ c.keep
expect 0 "^torrewave bench: removed 'c\.json\.part-999999999', left by an earlier bench --json that was killed while writing it \(its process is gone\)$" \
  -- "$TORREWAVE" "${tiny[@]}" --json c.json
[ "$(grep -c "^torrewave bench: removed 'c\.json\.part-99999999[789]', left by" "$tmp/out")" = 3 ] &&
  [ "$(ls c.json.part-* | wc -l)" = $((3 + other)) ] && cmp -s c.json.part-$$ c.keep &&
  { [ $other = 0 ] || [ -f c.json.part-999999994 ]; } &&
  [ "$(cat c.json.part-999999996)" = keep ] && [ -L c.json.part-999999995 ] && [ -f c.json ] ||
  { echo "FAIL: bench --json removed the wrong temporaries: $(ls c.json*)"; cat "$tmp/out"; fail=1; }
exit $fail
