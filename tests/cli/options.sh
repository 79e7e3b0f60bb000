#!/usr/bin/env bash
# The option loop at the command line (tw_app_next): values that look like options, options
# repeated or unknown, `--`, and the exit statuses they give (docs/design.md §10.7).
set -uo pipefail
. "$TW_SOURCE_DIR/tests/cli_lib.sh"
job="$TW_SOURCE_DIR/configs/quickstart.cfg"
short=(--set time.duration=0.01 --set snapshots.every=1)
cd "$tmp"
# A value forgotten before another option: `-o -q` wrote a file named "-q" (and `-o --set k=v` took
# k=v for a second job file); refused as a missing value, and nothing is written.
expect 2 '-o needs a value: got the option "-q" \(a value spelled so: --output=-q\)' -- "$TORREWAVE" run "$job" "${short[@]}" -o -q
test ! -e "$tmp/-q" || { echo "FAIL: -o -q wrote a file named -q"; fail=1; }
expect 2 '-o needs a value: got the option "--set"' -- "$TORREWAVE" run "$job" -o --set time.duration=0.01
expect 2 '--set needs a value: got the option "--output=x.h5"' -- "$TORREWAVE" check "$job" --set --output=x.h5
expect 2 '--rtol needs a value: got the option "--json"' -- "$TORREWAVE" compare a.h5 b.h5 --rtol --json
expect 2 '--json needs a value: got the option "--help"' -- "$TORREWAVE" bench --json --help
# ... which --name=value still gives
expect 0 '-> -q$' -- "$TORREWAVE" run "$job" "${short[@]}" -q --output=-q
test -s "$tmp/-q" || { echo "FAIL: --output=-q wrote no file -q"; fail=1; }
# An option that does nothing in the command is refused, not ignored: check has no progress to quiet
# and reruns nothing (-q, --force, --resume are run's), reference says nothing of its phases (-v) and
# runs no survey (--shots, --workers)
# (named so: "unknown option" for an option run takes sent the reader to look for a typo)
for opt in -q --quiet --force --resume; do
  expect 2 "torrewave check: \"$opt\" is an option of run( and reference)?, not of check \(it would do nothing here\)" \
    -- "$TORREWAVE" check "$job" "$opt"
done
for opt in -v --verbose "--shots 0" "--workers 1" --force; do
  expect 2 "torrewave reference: \"${opt%% *}\" is an option of run( and check)?, not of reference" \
    -- "$TORREWAVE" reference "$job" $opt -o ref.h5
done
expect 2 'torrewave check: unknown option "--quite"' -- "$TORREWAVE" check "$job" --quite
test ! -e "$tmp/ref.h5" || { echo "FAIL: reference wrote ref.h5 with an option it does not take"; fail=1; }
expect 0 '^ok$' -- "$TORREWAVE" check "$job" -v
# ... and a survey's options on a job without shots did nothing (`check job.cfg --shots 3` said ok)
for opt in "--shots 0" "--workers 1"; do
  expect 2 "torrewave check: ${opt%% *} is a survey's option and .*quickstart\.cfg has no shots group" -- "$TORREWAVE" check "$job" $opt
done
for opt in "--shots 0" "--workers 1" --force; do
  expect 2 "${opt%% *} is a survey's option and .*quickstart\.cfg has no shots group" -- "$TORREWAVE" run "$job" "${short[@]}" $opt -o never.h5
done
test ! -e "$tmp/never.h5" || { echo "FAIL: run wrote never.h5 with a survey's option on a plain job"; fail=1; }
# --set with blanks around "=", as a job file writes it (was: bad key "time.steps "); a --set with no
# key or no value is named
expect 0 '^time +[0-9]+ steps .*order 2$' -- "$TORREWAVE" check "$job" --set 'time.duration = 0.01' --set 'scheme.order =2'
expect 0 '^kernel +cpu$' -- "$TORREWAVE" check "$job" --set 'solver.kernel = cpu'
expect 1 'quickstart\.cfg: --set time\.steps = : no value after =: expected key=value' -- "$TORREWAVE" check "$job" --set 'time.steps = '
expect 2 '--set takes key=value, got "time\.steps"' -- "$TORREWAVE" check "$job" --set time.steps
# Numbers are whole arguments (one helper, tw_app_long / tw_app_double): no trailing text, no blanks
expect 2 '--workers takes a number 1..64, got "2x"' -- "$TORREWAVE" check "$job" --workers 2x
expect 2 '--workers takes a number 1..64, got " 2"' -- "$TORREWAVE" check "$job" --workers ' 2'
expect 2 '--rtol takes a number >= 0, got "1e-5x"' -- "$TORREWAVE" compare a.h5 b.h5 --rtol 1e-5x
expect 2 '--rtol takes a number >= 0, got " 0.1"' -- "$TORREWAVE" compare a.h5 b.h5 --rtol ' 0.1'
# An option of one value given twice: the last was kept and the first dropped without a word (`-o a.h5
# ... -o b.h5` wrote b.h5 only); refused naming the option and both values, and nothing is written.
# --set is repeatable, and so is a flag (it does the same twice).
expect 2 'torrewave check: -o/--output given twice: got "a\.h5" and "b\.h5"; allowed once' -- "$TORREWAVE" check "$job" -o a.h5 -o b.h5
expect 2 'torrewave run: -o/--output given twice: got "a\.h5" and "b\.h5"; allowed once' -- "$TORREWAVE" run "$job" "${short[@]}" --output=a.h5 -o b.h5
test ! -e "$tmp/a.h5" && test ! -e "$tmp/b.h5" || { echo "FAIL: run with -o twice wrote a file"; fail=1; }
expect 2 '--shots given twice: got "0" and "1"' -- "$TORREWAVE" check "$job" --shots 0 --shots 1
expect 2 '--workers given twice: got "1" and "1"' -- "$TORREWAVE" check "$job" --workers 1 --workers=1
expect 2 'torrewave compare: --rtol given twice: got "1" and "2"' -- "$TORREWAVE" compare a.h5 b.h5 --rtol 1 --rtol 2
expect 2 'torrewave export: --segy given twice: got "a\.sgy" and "b\.sgy"' -- "$TORREWAVE" export x.h5 --segy a.sgy --segy b.sgy
for opt in --kernels=cpu --orders=2 --grid=64x64x64 --cpu-grid=48x48x48 --gb=1 --steps=1 --reps=1 --warmup=0 --absorb=4 --json=b.json; do
  expect 2 "torrewave bench: ${opt%%=*} given twice: got \"${opt#*=}\" and \"${opt#*=}\"; allowed once" -- "$TORREWAVE" bench "$opt" "$opt"
done
test ! -e "$tmp/b.json" || { echo "FAIL: bench with --json twice wrote it"; fail=1; }
expect 0 '-> q\.h5$' -- "$TORREWAVE" run "$job" "${short[@]}" --set scheme.order=2 -q -q -v -v -o q.h5
exit $fail
