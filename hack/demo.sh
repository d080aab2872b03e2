#!/usr/bin/env bash
# make demo: render the seed demo (nginx serving index.html from a ConfigMap)
# with the real kustomize and confighash, change the page, render again, and
# show the hash that changed and why. Then, when the local control plane can
# be built, run the in-cluster part (hack/demo-cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp examples/demo/*.yaml "$work/"
sed -i "s|../../bin/confighash|$BIN/confighash|" "$work/confighash.yaml"

render() { "$BIN/kustomize" build --enable-alpha-plugins --enable-exec "$work"; }
hash_of() { grep -o 'confighash.dev/hash: .*' | head -1 | cut -d' ' -f2; }

echo "== 1. kustomize build examples/demo (confighash runs as a KRM exec function)"
render > "$work/before.yaml"
before=$(hash_of < "$work/before.yaml")
"$BIN/confighash" explain < "$work/before.yaml"

echo
echo "== 2. a label on the ConfigMap changes metadata only"
sed -i 's|  name: site|  name: site\n  labels: {release: "2"}|' "$work/configmap.yaml"
render > "$work/label.yaml"
label=$(hash_of < "$work/label.yaml")
echo "hash: $label"
[ "$label" = "$before" ] && echo "-> unchanged: metadata never rolls pods"

echo
echo "== 3. edit index.html in the ConfigMap and render again"
sed -i 's|Hello from confighash|Hello again, the page changed|' "$work/configmap.yaml"
render > "$work/after.yaml"
after=$(hash_of < "$work/after.yaml")
diff -u "$work/before.yaml" "$work/after.yaml" | grep -E '^[-+] ' || true
echo
if [ "$before" != "$after" ]; then
  echo "-> the pod template's confighash.dev/hash changed because ConfigMap demo/site key index.html changed:"
  echo "   applying this render makes the Deployment controller roll the pods, as for any template change."
else
  echo "unexpected: the hash did not change" >&2; exit 1
fi

if [ -x hack/demo-cluster.sh ] && [ "${DEMO_CLUSTER:-1}" = 1 ]; then
  echo
  echo "== 4. in the cluster: the controller rolls the Deployment when the ConfigMap is edited out of band"
  bash hack/demo-cluster.sh
fi
