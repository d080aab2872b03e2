#!/bin/sh
# Helm 4 post-renderer wrapper around confighash (see plugin.yaml).
#
# Helm 4 (v4.3) captures a post-renderer plugin's standard error and throws it
# away; when the plugin exits non-zero the user sees only `plugin "confighash"
# exited with error`. So on failure this wrapper exits 0 and prints a single
# document that Helm itself rejects before anything is applied: its
# postrenderer.helm.sh/postrender-filename annotation holds confighash's
# message, and Helm names that "file" in the error it prints:
#
#   Error: YAML parse error on confighash: error: Secret shop/web (document 2): data.token: ...
#   (the confighash post-renderer failed: nothing was rendered): error unmarshaling JSON: ...
#
# The document's apiVersion is a mapping, which Helm's manifest sorter cannot
# read, so Helm fails before it installs, upgrades or prints anything (only
# `helm template --debug` prints this document).
# Run outside Helm 4 (no HELM_PLUGIN_DIR), the wrapper passes confighash's exit
# code and standard error through unchanged.
set -u

# find_confighash prints the path of the confighash binary.
find_confighash() {
	if [ -n "${CONFIGHASH_BIN:-}" ]; then
		# A file, or a directory holding confighash (the Makefile exports bin/).
		if [ -d "$CONFIGHASH_BIN" ]; then
			echo "$CONFIGHASH_BIN/confighash"
		else
			echo "$CONFIGHASH_BIN"
		fi
		return 0
	fi
	# The plugin directory with symlinks resolved: `helm plugin install <dir>`
	# links the plugin into Helm's data home, so this finds the checkout.
	here=$(cd -P -- "${HELM_PLUGIN_DIR:-$(dirname -- "$0")}" && pwd) || return 1
	for candidate in "$here/bin/confighash" "$here/../../bin/confighash"; do
		if [ -x "$candidate" ]; then
			echo "$candidate"
			return 0
		fi
	done
	command -v confighash
}

# fail reports message (one or more lines) and exits the way Helm 4 shows it.
fail() {
	if [ -z "${HELM_PLUGIN_DIR:-}" ]; then
		printf '%s\n' "$1" >&2
		exit 1
	fi
	# Keep tab, newline and printable characters, so the YAML below stays valid.
	message=$(printf '%s' "$1" | tr -cd '\11\12\40-\176\200-\377')
	cat <<DOC
apiVersion:
  error: confighash post-renderer failed, nothing was rendered
kind: ConfighashError
metadata:
  name: confighash-error
  annotations:
    postrenderer.helm.sh/postrender-filename: |2-
$(printf '%s\n' "$message" | sed 's/^/      /')
      (the confighash post-renderer failed: nothing was rendered)
DOC
	exit 0
}

bin=$(find_confighash) || bin=""
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
	fail "confighash: error: cannot find the confighash binary${bin:+ at $bin}: set CONFIGHASH_BIN to it, or put it on PATH"
fi

tmp=$(mktemp -d) || fail "confighash: error: cannot create a temporary directory"
trap 'rm -rf -- "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

"$bin" "$@" >"$tmp/out" 2>"$tmp/err"
status=$?
if [ "$status" -eq 0 ]; then
	cat -- "$tmp/err" >&2
	# Helm 4 refuses a plugin's output that is only white space ("produced
	# empty output"), even for a chart that renders no object: a comment
	# stands for an empty stream, and Helm reads no document in it.
	if [ -n "${HELM_PLUGIN_DIR:-}" ] && ! grep -q '[^[:space:]]' "$tmp/out"; then
		echo "# confighash: the chart rendered no objects"
		exit
	fi
	cat -- "$tmp/out"
	exit
fi
message=$(cat -- "$tmp/err")
if [ -z "$message" ]; then
	message="confighash: error: $bin exited with status $status"
fi
if [ -z "${HELM_PLUGIN_DIR:-}" ]; then
	printf '%s\n' "$message" >&2
	exit "$status"
fi
fail "$message"
