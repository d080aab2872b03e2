package testtools

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// PodTemplate returns the pod template of n at the path paths gives for its
// kind (for example "CronJob": {"spec", "jobTemplate", "spec", "template"});
// ok is false when paths has no path for the kind. An object of a kind in
// paths without a pod template there fails the test.
func PodTemplate(t testing.TB, n *yaml.RNode, paths map[string][]string) (tpl *yaml.RNode, ok bool) {
	t.Helper()
	path, ok := paths[n.GetKind()]
	if !ok {
		return nil, false
	}
	tpl, err := n.Pipe(yaml.Lookup(path...))
	if err != nil {
		t.Fatalf("%s %s/%s: the pod template at %s: %v", n.GetKind(), n.GetNamespace(), n.GetName(), strings.Join(path, "."), err)
	}
	if tpl == nil {
		t.Fatalf("%s %s/%s has no pod template at %s", n.GetKind(), n.GetNamespace(), n.GetName(), strings.Join(path, "."))
	}
	return tpl, true
}
