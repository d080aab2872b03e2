package vectors

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Each runs fn as a subtest, named by the vector's file, for every vector;
// a vector that does not load fails the test.
func Each(t *testing.T, fn func(t *testing.T, v Vector)) {
	t.Helper()
	vs, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Run(v.File, func(t *testing.T) { fn(t, v) })
	}
}

// Render is the stream the render-time tests feed: the vector's manifest
// objects, then a Deployment "w" whose pod template is the vector's pod spec.
func (v Vector) Render() (string, error) {
	spec, err := json.Marshal(v.PodSpec)
	if err != nil {
		return "", fmt.Errorf("vector %s: pod spec: %w", v.File, err)
	}
	deployment := `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {"spec": ` + string(spec) + `}}}`
	return v.Manifest + "\n---\n" + deployment + "\n", nil
}

// RenderExpected is the hash a render-time tool gives and the external
// Kind/name list it records: RenderTime's when set, else Expected and none.
func (v Vector) RenderExpected() (hash string, external []string) {
	if v.RenderTime != nil {
		return v.RenderTime.Expected, v.RenderTime.External
	}
	return v.Expected, nil
}
