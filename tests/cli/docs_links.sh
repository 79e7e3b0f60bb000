#!/usr/bin/env bash
# Every "DESIGN §N" or "docs/design.md §N" in the tree (also across a line break or a comment's
# leading "*", "//" or "#"), and every bare "§N" inside docs/design.md, names a section heading of
# docs/design.md ("## 1b. …", "### 2.3 …"). Negative control: a made-up reference must be caught.
set -uo pipefail
src=${TW_SOURCE_DIR:?TW_SOURCE_DIR must name the source tree}
doc=$src/docs/design.md
[ -f "$doc" ] || { echo "FAIL: $doc is missing"; exit 1; }
ID='§[0-9]+[a-z]?(\.[0-9]+)?'
sections=$(grep -oE '^#{2,4} [0-9]+[a-z]?(\.[0-9]+)?' "$doc" | sed 's/^#* //' | sort -u)
[ "$(echo "$sections" | wc -l)" -ge 8 ] || { echo "FAIL: too few numbered headings in $doc: $sections"; exit 1; }
# check FILE...: print each reference to a missing section; exit status 1 if there is one
check() {
  local bad=0 ref
  while IFS= read -r ref; do
    [ -n "$ref" ] || continue
    grep -qxF "${ref#*§}" <<< "$sections" || { echo "FAIL: '$ref' names no section of docs/design.md"; bad=1; }
  done < <({ grep -IzoE "(DESIGN|docs/design\.md)[[:space:]*/#]*$ID" "$@" | tr '\0' '\n' | grep -oE "$ID"
             grep -ohE "$ID" "$doc"; } | sort -u)
  return $bad
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '/* see DESIGN\n * §99 */\n' > "$tmp/x.c"
check "$tmp/x.c" > /dev/null && { echo "FAIL: the made-up reference to section 99 was not caught"; exit 1; }
mapfile -t files < <(cd "$src" && find . -type d \( -name .git -o -name 'build*' -o -name out \) -prune -o -type f -print)
(cd "$src" && check "${files[@]}") || exit 1
echo "ok: every DESIGN / docs/design.md § reference names one of: $(echo $sections)"
