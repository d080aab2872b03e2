#!/usr/bin/env bash
# hack/image-startup.sh [RUNS]: the cold-start cost of the container function
# against the exec function, on the same input, in one run (docs/container.md).
#
# Builds examples/demo with kustomize RUNS times (default 10) each way: the
# exec function (bin/image/confighash) and the container function (the image
# `make image` built, run by kustomize through `docker run`; with podman, a
# docker shim). Then the same for the function alone on the ResourceList
# kustomize feeds it. Prints the medians and their ratios.
#
# Needs: make image (FUNCTION_IMAGE, default as in the Makefile), bin/kustomize.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
engine=${CONTAINER_ENGINE:-$(command -v podman || command -v docker)}
image=${FUNCTION_IMAGE:?set FUNCTION_IMAGE to the image make image built}
kustomize=${KUSTOMIZE:-$PWD/bin/kustomize}
fn=$PWD/bin/image/confighash

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ $(basename "$engine") == podman* ]]; then
  hack/podman.sh shim "$work/shim"
  export PATH="$work/shim:$PATH"
fi

for form in exec container; do
  mkdir -p "$work/$form"
  cp examples/demo/*.yaml "$work/$form/"
done
sed -i "s|path: ../../bin/confighash|path: $fn|" "$work/exec/confighash.yaml"
sed -i "s|exec:|container:|; s|path: ../../bin/confighash|image: $image|" "$work/container/confighash.yaml"

# The ResourceList kustomize gives the function, captured by an exec function
# that saves its input, for the function-alone runs.
printf '#!/bin/sh\ntee "%s" | exec "%s"\n' "$work/rl.yaml" "$fn" > "$work/capture"
chmod +x "$work/capture"
mkdir -p "$work/capture-dir" && cp "$work"/exec/*.yaml "$work/capture-dir/"
sed -i "s|path: $fn|path: $work/capture|" "$work/capture-dir/confighash.yaml"
"$kustomize" build --enable-alpha-plugins --enable-exec "$work/capture-dir" >/dev/null
grep -q '^kind: ResourceList' "$work/rl.yaml"

# median of RUNS timings of a command, in milliseconds
median() {
  local times=() start end
  for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    "$@" >/dev/null
    end=$(date +%s%N)
    times+=($(((end - start) / 1000000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'
}

# one warm-up each (page cache, image layers mounted once)
"$kustomize" build --enable-alpha-plugins --enable-exec "$work/exec" >/dev/null
"$kustomize" build --enable-alpha-plugins "$work/container" >/dev/null

kexec=$(median "$kustomize" build --enable-alpha-plugins --enable-exec "$work/exec")
kcont=$(median "$kustomize" build --enable-alpha-plugins "$work/container")
fexec=$(median sh -c "'$fn' < '$work/rl.yaml'")
fcont=$(median sh -c "'$engine' run --rm -i --network none --user nobody '$image' < '$work/rl.yaml'")

echo "engine: $("$engine" --version)"
echo "runs: $runs each, medians"
printf 'kustomize build examples/demo   exec %5d ms   container %5d ms   ratio %s\n' "$kexec" "$kcont" "$(awk -v a="$kcont" -v b="$kexec" 'BEGIN{printf "%.1f", a/b}')"
printf 'function alone (ResourceList)   exec %5d ms   container %5d ms   ratio %s\n' "$fexec" "$fcont" "$(awk -v a="$fcont" -v b="$fexec" 'BEGIN{printf "%.1f", a/b}')"
