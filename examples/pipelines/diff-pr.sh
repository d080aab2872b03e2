#!/usr/bin/env bash
# diff-pr.sh BASE HEAD OUT.md — render two commits of this repository and
# write `confighash diff --markdown` of the renders to OUT.md: which
# workloads the change rolls, and why. The GitHub Actions workflow and the
# GitLab CI job call it; so does examples/pipelines' test.
#
# Environment:
#   RENDER           the render command, run at the root of each commit's tree
#                    (default: kustomize build .), e.g.
#                    "helm template web charts/web -n shop" or
#                    "kustomize build overlays/prod"
#   CONFIGHASH       the confighash binary (default: confighash on PATH)
#   DIFF_FLAGS       more flags for confighash diff, e.g. "--namespace shop"
#
# Exit status: 0 when the comment was written (whether or not workloads roll),
# non-zero when a render or the diff failed. Secret values never reach the
# comment: confighash diff names keys only.
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 BASE HEAD OUT.md" >&2
	exit 2
fi
base=$1 head=$2 out=$3
render=${RENDER:-kustomize build .}
confighash=${CONFIGHASH:-confighash}

work=$(mktemp -d)
cleanup() {
	git worktree remove --force "$work/base" >/dev/null 2>&1 || true
	git worktree remove --force "$work/head" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

for side in base head; do
	rev=${!side}
	git worktree add --quiet --detach "$work/$side" "$rev"
	(cd "$work/$side" && bash -o pipefail -c "$render") >"$work/$side.yaml" || {
		echo "diff-pr.sh: rendering $side ($rev) failed: $render" >&2
		exit 1
	}
done

# shellcheck disable=SC2086 # DIFF_FLAGS is a list of flags
"$confighash" diff --markdown ${DIFF_FLAGS:-} "$work/base.yaml" "$work/head.yaml" >"$out"
