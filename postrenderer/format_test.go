package postrenderer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

const workload = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        envFrom: [{configMapRef: {name: cfg}}, {secretRef: {name: creds}}]
`

// TestFormatBlind: the same content written in different ways gives the
// same hash; metadata and unconsumed changes give the same hash too.
func TestFormatBlind(t *testing.T) {
	forms := map[string]string{
		"block YAML": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: one\n  b: two\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  p: czNjcjN0\n",
		"JSON, keys reordered": `{"kind": "ConfigMap", "data": {"b": "two", "a": "one"}, "metadata": {"name": "cfg"}, "apiVersion": "v1"}` + "\n---\n" +
			`{"data": {"p": "czNjcjN0"}, "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}}` + "\n",
		"quoting, comments, stringData": "# config\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg  # same\ndata:\n  b: \"two\"\n  a: 'one'\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  p: s3cr3t\n",
		"block scalars":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: |-\n    one\n  b: >-\n    two\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  p: |\n    czNj\n    cjN0\n",
		"labels and annotations":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  labels: {helm.sh/chart: x-2.0.0}\n  annotations: {note: changed}\ndata:\n  a: one\n  b: two\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  labels: {v: \"2\"}\ndata:\n  p: czNjcjN0\n",
	}
	var want string
	for name, configs := range forms {
		_, r, err := postrenderer.Process([]byte(configs+"---\n"+workload), inject.Options{})
		require.NoError(t, err, name)
		require.Len(t, r.Workloads, 1)
		got := r.Workloads[0].Hash
		require.NotEmpty(t, got)
		if want == "" {
			want = got
		}
		assert.Equal(t, want, got, name)
	}
	_, r, err := postrenderer.Process([]byte(forms["block YAML"]+"---\n"+workload), inject.Options{Key: []byte("k")})
	require.NoError(t, err)
	assert.NotEqual(t, want, r.Workloads[0].Hash, "keyed mode differs")
}
