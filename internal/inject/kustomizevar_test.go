package inject

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKustomizeVarHint: a reference whose name holds a kustomize var
// (cluster-api v1.0's $(SERVICE_NAME)-cert) is external to the function,
// which runs before kustomize substitutes vars; its warning says so and
// what to write instead. Another external reference gets no such words.
func TestKustomizeVarHint(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		hint         bool
	}{
		{name: "a var", secret: "$(SERVICE_NAME)-cert", hint: true},
		{name: "a plain name", secret: "webhook-cert"},
		{name: "a dollar without parentheses", secret: "cert$1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: manager\nspec:\n  template:\n    spec:\n" +
				"      containers: [{name: c}]\n      volumes: [{name: cert, secret: {secretName: \"" + tc.secret + "\"}}]\n"
			r := analyze(t, Options{}, doc)
			require.Len(t, r.Findings, 1)
			msg := r.Findings[0].Message
			assert.Contains(t, msg, "consumes Secret "+tc.secret+", which is not in the stream")
			if tc.hint {
				assert.Contains(t, msg, "its name holds a kustomize var")
				assert.Contains(t, msg, "use replacements: instead of vars:")
			} else {
				assert.NotContains(t, msg, "kustomize var")
			}
		})
	}
}
