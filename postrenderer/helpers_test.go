package postrenderer_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Job": true, "CronJob": true, "ReplicaSet": true}

func podSpecOf(t *testing.T, n *yaml.RNode) *corev1.PodSpec {
	t.Helper()
	if !workloadKinds[n.GetKind()] {
		return nil
	}
	path := []string{"spec", "template", "spec"}
	if n.GetKind() == "CronJob" {
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	}
	specNode, err := n.Pipe(yaml.Lookup(path...))
	require.NoError(t, err)
	if specNode == nil {
		return nil
	}
	raw, err := specNode.MarshalJSON()
	require.NoError(t, err)
	var spec corev1.PodSpec
	require.NoError(t, json.Unmarshal(raw, &spec))
	return &spec
}

// assertByWorkload fails unless got and want hold the same workloads (by
// Kind/namespace/name) with the same value (a hash, or the annotations
// written): what names the result checked.
func assertByWorkload(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %s: %q, want %q", what, id, got[id], w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: %s: %q, for a workload that should have none", what, id, got[id])
		}
	}
}
