#!/usr/bin/env bash
# The in-cluster part of `make demo`: start the local control plane (etcd,
# kube-apiserver, kube-controller-manager; built into bin/ on first use),
# apply the rendered seed demo, run bin/confighash-controller, edit the
# ConfigMap out of band, and show the new ReplicaSet and the Event. Every
# process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
export GOTOOLCHAIN=local

work=$(mktemp -d)
pids=()
cleanup() {
  # Stop what this script started, newest first, by process id.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n-- %s\n' "$*"; }

if ! [ -x "$BIN/kube-apiserver" ] || ! [ -x "$BIN/kube-controller-manager" ] || ! [ -x "$BIN/etcd" ]; then
  step "building the local control plane into bin/ (once; several minutes when cold)"
  make controlplane
fi
[ -x "$BIN/confighash-controller" ] || go build -o "$BIN/confighash-controller" ./cmd/confighash-controller

go build -o "$work/devcluster" ./hack/devcluster
go build -o "$work/kubeapply" ./hack/kubeapply
kubeconfig=$work/kubeconfig
kube() { "$work/kubeapply" --kubeconfig "$kubeconfig" "$@"; }

step "starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 (hack/devcluster)"
"$work/devcluster" --kubeconfig-out "$kubeconfig" > "$work/devcluster.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  [ -s "$kubeconfig" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/devcluster.log" >&2; exit 1; }
  sleep 0.2
done
[ -s "$kubeconfig" ] || { echo "the control plane did not start" >&2; cat "$work/devcluster.log" >&2; exit 1; }
cat "$work/devcluster.log"

step "applying the rendered seed demo (kustomize build examples/demo, confighash as a KRM function)"
cp examples/demo/*.yaml "$work/"
sed -i "s|../../bin/confighash|$BIN/confighash|" "$work/confighash.yaml"
"$BIN/kustomize" build --enable-alpha-plugins --enable-exec "$work" > "$work/rendered.yaml"
kube apply < "$work/rendered.yaml"

step "running bin/confighash-controller"
"$BIN/confighash-controller" --kubeconfig "$kubeconfig" --coalesce-window 1s --log-format text \
  --metrics-bind-address 0 --health-probe-bind-address 0 > "$work/controller.log" 2>&1 &
pids+=($!)
kube --wait 1 replicasets demo web
# Edit only once the controller's caches are synced, so it sees the edit as
# an update and can name the key that changed.
for _ in $(seq 1 150); do
  grep -q 'Starting workers' "$work/controller.log" && break
  sleep 0.2
done

step "editing ConfigMap demo/site out of band (like kubectl edit)"
kube --field-manager kubectl-edit set-data demo site index.html '<h1>Edited in the cluster</h1>'

step "the controller rolled the Deployment: a new ReplicaSet"
kube --wait 2 replicasets demo web

step "the Events on the Deployment"
for _ in $(seq 1 50); do
  kube events demo web | grep -q ConfigChanged && break
  sleep 0.2
done
kube events demo web

step "what the controller logged"
grep -E 'msg=(rolled|"set up")' "$work/controller.log" || cat "$work/controller.log"

step "stopping the controller and the control plane"
