# cli_lib.sh — sourced by tests/cli/*.sh (not a test itself): a scratch folder removed on exit
# ($tmp), a failure flag ($fail, the script's exit status), and
#   expect STATUS PATTERN -- command...
# which runs the command, and passes when it exits with STATUS and its stdout + stderr match the
# extended regex PATTERN (prints the output on failure).
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {
  local want=$1 pat=$2; shift 3
  "$@" > "$tmp/out" 2>&1; local got=$?
  if [ "$got" != "$want" ] || ! grep -Eq -- "$pat" "$tmp/out"; then
    echo "FAIL: $* -> status $got (want $want, pattern '$pat'), output:"; cat "$tmp/out"; fail=1
  else echo "ok: $* -> $got: $(grep -E -- "$pat" "$tmp/out" | head -n 1 | cut -c1-200)"; fi
}
