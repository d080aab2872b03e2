#!/usr/bin/env bash
# Counts repeated code with the `duplicates` command (a developer tool of this
# workplace, not shipped with confighash) twice: over the tree as it is, and
# over a copy in which every line inside a Go `import ( … )` block is written as
# a one-line import. `duplicates` passes over import lines but reads the lines
# of a parenthesised block as code, so two files that import the same six
# packages count as a pair; the second count leaves those out.
#
#   hack/duplicates.sh [--most N]
set -euo pipefail

command -v duplicates >/dev/null || { echo "hack/duplicates.sh: the duplicates command is not on PATH" >&2; exit 1; }
root=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT

cd "$root"
git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
	[[ -f $f && ! -L $f ]] || continue
	mkdir -p "$copy/$(dirname "$f")"
	if [[ $f == *.go ]]; then
		awk '/^import \($/ { block = 1; next }
		     block && /^\)$/ { block = 0; next }
		     block { if ($0 ~ /[^[:space:]]/) print "import " $0; else print ""; next }
		     { print }' "$f" >"$copy/$f"
	else
		cp "$f" "$copy/$f"
	fi
done
git -C "$copy" init -q
git -C "$copy" add -A
git -C "$copy" -c user.name=confighash -c user.email=dev@confighash.invalid commit -qm tree

echo "== the tree as it is"
duplicates --seconds 120 "$@"
echo
echo "== import blocks as one-line imports"
duplicates --repo "$copy" --seconds 120 "$@"
