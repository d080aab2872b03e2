package kubetest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Workload is the manifest of a workload for a test: the kind and names it
// is given, pod labels app: <Name> (and the selector that matches them,
// except for a Job or CronJob, whose selector the API server writes), and
// one container, named after the workload, that reads config through its
// env and envFrom entries. The image never runs: the test clusters have no
// kubelet.
type Workload struct {
	// APIVersion is batch/v1 for a Job or CronJob and apps/v1 for other
	// kinds when empty.
	APIVersion string
	// Kind is Deployment when empty. The pod template of a Job or CronJob
	// restarts Never; a CronJob's, scheduled daily at 03:00, is under
	// spec.jobTemplate.spec.template.
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
	kind := cmp.Or(w.Kind, "Deployment")
	batch := kind == "Job" || kind == "CronJob"
	apiVersion := "apps/v1"
	if batch {
		apiVersion = "batch/v1"
	}
	line(0, "apiVersion: %s", cmp.Or(w.APIVersion, apiVersion))
	line(0, "kind: %s", kind)
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
	switch kind {
	case "CronJob":
		line(2, "schedule: %q", "0 3 * * *")
	case "Job":
	default:
		line(2, "selector: {matchLabels: {app: %s}}", w.Name)
	}
	for _, l := range w.Spec {
		line(2, "%s", l)
	}
	indent := 2 // of the pod template
	if kind == "CronJob" {
		line(2, "jobTemplate:")
		line(4, "spec:")
		indent = 6
	}
	line(indent, "template:")
	line(indent+2, "metadata: {labels: {app: %s}}", w.Name)
	line(indent+2, "spec:")
	if batch {
		line(indent+4, "restartPolicy: Never")
	}
	line(indent+4, "containers:")
	line(indent+4, "- name: %s", w.Name)
	line(indent+6, "image: registry.invalid/%s:1", w.Name)
	for _, list := range []struct {
		key     string
		entries []string
	}{{"env", w.Env}, {"envFrom", w.EnvFrom}} {
		if len(list.entries) > 0 {
			line(indent+6, "%s:", list.key)
			for _, e := range list.entries {
				line(indent+6, "- %s", e)
			}
		}
	}
	return b.String()
}
