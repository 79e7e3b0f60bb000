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
exit $fail
