package inject_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
)

// TestEnabledAnnotationReadAsKubectlSendsIt: confighash.dev/enabled is read
// as every YAML reader reads it. An unquoted false, no or off is a boolean
// that kubectl and Helm send as such, and the API server refuses the
// workload: an error naming it, not an opt-out or an opt-in.
func TestEnabledAnnotationReadAsKubectlSendsIt(t *testing.T) {
	tests := []struct{ value, err string }{
		{`"false"`, ""},
		{`'true'`, ""},
		{"false", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a boolean (quote it); kubectl and Helm send it so and the API server refuses the object`},
		{"no", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a boolean (quote it)`},
		{"Off", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a boolean (quote it)`},
		{"0", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a number (quote it)`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			n, err := yaml.Parse("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations:\n    confighash.dev/enabled: " + tt.value +
				"\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n")
			require.NoError(t, err)
			r, err := inject.Analyze([]*yaml.RNode{n}, inject.Options{})
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, r.Workloads, 1)
			assert.Equal(t, tt.value == `"false"`, r.Workloads[0].OptedOut)
		})
	}
}
