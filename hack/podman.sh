#!/usr/bin/env bash
# hack/podman.sh: podman for the image build and tests, configured without
# touching /etc.
#
#   hack/podman.sh install       install podman and runc from Debian packages
#                                when missing (apt-get; as root or via sudo)
#   hack/podman.sh env DIR       write containers.conf and storage.conf into DIR
#                                and print the exports that point podman at them:
#                                  eval "$(hack/podman.sh env "$(mktemp -d)")"
#   hack/podman.sh shim DIR      write DIR/docker, a `docker` that runs podman,
#                                for tools that call docker (kustomize's
#                                container functions): PATH="DIR:$PATH"
#
# Why this configuration (found on Debian 12 machines without systemd):
# crun fails (setrlimit RLIMIT_NOFILE, then "cgroups in hybrid mode not
# supported"); runc with the cgroupfs manager works, provided the default
# ulimits stay within the machine's hard limits.
set -euo pipefail

die() { echo "hack/podman.sh: $*" >&2; exit 1; }

install_packages() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || [ -x /usr/sbin/runc ] || missing+=(runc)
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "hack/podman.sh: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}

write_env() {
  local dir=$1
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local runc
  runc=$(command -v runc || echo /usr/sbin/runc)
  # The ulimits must not exceed the hard limits of this shell, or runc
  # cannot set them.
  local nofile nproc
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] || [ "$nofile" -gt 20000 ] && nofile=20000
  [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
  cat > "$dir/containers.conf" <<EOF
# Written by hack/podman.sh.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"

[engine.runtimes]
runc = ["$runc"]
EOF
  # Root keeps its images under DIR (overlay works on ext4 and xfs); others
  # keep podman's rootless default.
  if [ "$(id -u)" = 0 ]; then
    cat > "$dir/storage.conf" <<EOF
# Written by hack/podman.sh.
[storage]
driver = "overlay"
runroot = "$dir/run"
graphroot = "$dir/storage"
EOF
    echo "export CONTAINERS_STORAGE_CONF=$dir/storage.conf"
  fi
  echo "export CONTAINERS_CONF=$dir/containers.conf"
}

write_shim() {
  local dir=$1 podman
  podman=$(command -v podman) || die "podman is not installed (hack/podman.sh install)"
  mkdir -p "$dir"
  printf '#!/bin/sh\n# docker -> podman (hack/podman.sh shim)\nexec %s "$@"\n' "$podman" > "$dir/docker"
  chmod 0755 "$dir/docker"
}

case "${1:-}" in
  install) install_packages ;;
  env) [ $# -eq 2 ] || die "usage: hack/podman.sh env DIR"; write_env "$2" ;;
  shim) [ $# -eq 2 ] || die "usage: hack/podman.sh shim DIR"; write_shim "$2" ;;
  *) die "usage: hack/podman.sh install | env DIR | shim DIR" ;;
esac
