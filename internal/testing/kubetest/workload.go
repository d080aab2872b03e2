package kubetest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Workload is the manifest of a workload for a test: the kind and names it
// is given, a selector and pod labels app: <Name>, and one container, named
// after the workload, that reads config through its env and envFrom entries.
// The image never runs: the test clusters have no kubelet.
type Workload struct {
	// APIVersion is apps/v1 when empty.
	APIVersion string
	// Kind is Deployment when empty.
	Kind      string
	Name      string
	Namespace string
	// Annotations go on the workload's metadata.
	Annotations map[string]string
	// Replicas is written when not 0.
	Replicas int
	// Spec holds further fields of the workload's spec (a Rollout's
	// strategy, say), one a line, as written under spec.
	Spec []string
	// Env and EnvFrom are the container's env and envFrom entries, each a
	// YAML flow mapping such as {configMapRef: {name: app}} (EnvKey writes
	// an env entry).
	Env, EnvFrom []string
}

// EnvKey is the env entry that sets variable key from the key of the same
// name in ConfigMap configMap.
func EnvKey(configMap, key string) string {
	return fmt.Sprintf("{name: %s, valueFrom: {configMapKeyRef: {name: %s, key: %s}}}", key, configMap, key)
}

// YAML writes the manifest, ending in a newline.
func (w Workload) YAML() string {
	var b strings.Builder
	line := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat(" ", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	line(0, "apiVersion: %s", cmp.Or(w.APIVersion, "apps/v1"))
	line(0, "kind: %s", cmp.Or(w.Kind, "Deployment"))
	line(0, "metadata:")
	line(2, "name: %s", w.Name)
	if w.Namespace != "" {
		line(2, "namespace: %s", w.Namespace)
	}
	if len(w.Annotations) > 0 {
		line(2, "annotations:")
		for _, k := range slices.Sorted(maps.Keys(w.Annotations)) {
			line(4, "%s: %q", k, w.Annotations[k])
		}
	}
	line(0, "spec:")
	if w.Replicas != 0 {
		line(2, "replicas: %d", w.Replicas)
	}
	line(2, "selector: {matchLabels: {app: %s}}", w.Name)
	for _, l := range w.Spec {
		line(2, "%s", l)
	}
	line(2, "template:")
	line(4, "metadata: {labels: {app: %s}}", w.Name)
	line(4, "spec:")
	line(6, "containers:")
	line(6, "- name: %s", w.Name)
	line(8, "image: registry.invalid/%s:1", w.Name)
	for _, list := range []struct {
		key     string
		entries []string
	}{{"env", w.Env}, {"envFrom", w.EnvFrom}} {
		if len(list.entries) > 0 {
			line(8, "%s:", list.key)
			for _, e := range list.entries {
				line(8, "- %s", e)
			}
		}
	}
	return b.String()
}
