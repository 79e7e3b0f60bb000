#!/usr/bin/env bash
# The quick start end to end on the CPU: check, run, and the output's layout (docs/design.md §5).
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cfg="$TW_SOURCE_DIR/configs/quickstart.cfg"
"$TORREWAVE" check "$cfg" -o "$tmp/q.h5" --set solver.kernel=cpu | tee "$tmp/check.txt"
grep -q "dt / stable limit = 0.900" "$tmp/check.txt"
grep -q "^ok" "$tmp/check.txt"
grep -Eq "^run time +about .* of computing \(calibrated here: cpu ran" "$tmp/check.txt"
grep -Eq "^output +.*q\.h5: about .* \(traces .*, snapshots .*\)" "$tmp/check.txt"
"$TORREWAVE" run "$cfg" -o "$tmp/q.h5" --set solver.kernel=cpu 2> "$tmp/run.txt"
cat "$tmp/run.txt"
grep -q "Gcell/s" "$tmp/run.txt"
test -f "$tmp/q.h5" && test -f "$tmp/q.xdmf"
if ls "$tmp"/*.part* >/dev/null 2>&1; then echo "temporary file left behind"; exit 1; fi
h5ls -r "$tmp/q.h5" > "$tmp/ls.txt"; cat "$tmp/ls.txt"
grep -Eq '^/receivers/traces +Dataset \{60, [0-9]+' "$tmp/ls.txt"
grep -Eq '^/snapshots/p +Dataset \{2, 40, 60, 60\}' "$tmp/ls.txt"   # [nsnap][nz][ny][nx]
grep -Eq '^/sources/wavelets' "$tmp/ls.txt"
# where the sources and receivers act, beside their requested coordinates (nearest: one tap each)
grep -Eq '^/receivers/cells +Dataset \{60, 1, 3\}' "$tmp/ls.txt"
grep -Eq '^/receivers/coords_used +Dataset \{60, 3\}' "$tmp/ls.txt"
grep -Eq '^/sources/cells +Dataset \{1, 1, 3\}' "$tmp/ls.txt"
grep -Eq '^/sources/interpolation +Dataset \{1\}' "$tmp/ls.txt"
# The traces hold a wave: the largest |sample| is well above zero.
max=$(h5dump -d /receivers/traces -y -w 0 "$tmp/q.h5" | tr ', ' '\n\n' | grep -E '^-?[0-9]' |
      awk 'function abs(x){return x<0?-x:x} {if (abs($1)>m) m=abs($1)} END {printf "%g", m}')
echo "largest trace sample: $max"
awk -v m="$max" 'BEGIN { exit !(m > 1e-9) }'
echo "quickstart: ok"
