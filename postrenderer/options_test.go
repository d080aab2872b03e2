package postrenderer_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/postrenderer"
)

// TestNewChecksNamespace: the SDK post-renderer refuses a namespace no object
// can have, as the executable refuses its --namespace flag; the hash covers
// the namespace, so one with a typo would hash for nothing.
func TestNewChecksNamespace(t *testing.T) {
	cases := []struct {
		namespace string
		ok        bool
	}{
		{"", true},
		{"shop", true},
		{"team-1", true},
		{"Shop", false},
		{"shop ", false},
		{"web.shop", false},
		{"-shop", false},
		{strings.Repeat("a", 64), false},
	}
	for _, tc := range cases {
		t.Run(tc.namespace, func(t *testing.T) {
			_, err := postrenderer.New(postrenderer.Options{Namespace: tc.namespace})
			if tc.ok && err != nil {
				t.Errorf("New refused namespace %q: %v", tc.namespace, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "namespace")) {
				t.Errorf("New accepted namespace %q (error %v)", tc.namespace, err)
			}
		})
	}
}

// TestWorkloadKindNearMiss: in stream mode too, a document of a configured
// workload kind in another API group is read (no longer skipped unread),
// copied byte for byte, comments included, and warned about with the group
// to write.
func TestWorkloadKindNearMiss(t *testing.T) {
	const stream = `---
# Source: runner/templates/config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: runner-config
data:
  MODE: fast
---
# Source: runner/templates/runner.yaml
apiVersion: example.com/v1
kind: Runner
metadata:
  name: build   # one per team
spec:
  template:
    spec:
      containers:
        - name: agent
          envFrom:
            - configMapRef:
                name: runner-config
`
	var warnings bytes.Buffer
	pr, err := postrenderer.New(postrenderer.Options{Workloads: []postrenderer.Workload{{Kind: "Runner", Path: "spec/template"}}, Warnings: &warnings})
	require.NoError(t, err)
	out, err := pr.Run(bytes.NewBufferString(stream))
	require.NoError(t, err)
	assert.Equal(t, stream, out.String(), "nothing is hashed or changed")
	assert.Contains(t, warnings.String(), "Runner build (document 1, runner/templates/runner.yaml): not hashed")
	assert.Contains(t, warnings.String(), "--workload Runner.example.com=spec/template")
}
