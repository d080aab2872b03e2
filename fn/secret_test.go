package fn_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/fn"
)

// TestSecretValueNeverShown: on input the function refuses or warns about,
// a Secret's value appears in no error, no result and no annotation it
// writes, neither as written nor in base64.
func TestSecretValueNeverShown(t *testing.T) {
	const canary = "CANARY-s3cr3t"
	b64 := base64.StdEncoding.EncodeToString([]byte(canary))
	const head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
	const deploy = "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n" +
		"  spec: {template: {spec: {containers: [{name: c, envFrom: [{secretRef: {name: creds}}, {secretRef: {name: vault}}]," +
		" env: [{name: X, valueFrom: {secretKeyRef: {name: creds, key: nope}}}]}]}}}\n"
	secret := func(body string) string {
		return "- apiVersion: v1\n  kind: Secret\n  metadata: {name: creds}\n  " + body + "\n"
	}
	cases := []struct {
		name, input string
		fails       bool
	}{
		{"data not base64", head + secret("data: {password: "+canary+"}") + deploy, true},
		{"data, base64 cut short", head + secret("data: {password: "+b64[:len(b64)-1]+"}") + deploy, true},
		{"stringData a list", head + secret("stringData: {password: ["+canary+"]}") + deploy, true},
		{"stringData a number tag", head + secret("stringData: {password: !!int "+canary+"}") + deploy, true},
		{"a key twice", head + secret("stringData: {password: "+canary+", password: "+canary+"}") + deploy, true},
		{"the Secret twice", head + secret("stringData: {password: "+canary+"}") + secret("data: {password: "+b64+"}") + deploy, true},
		{"a bad functionConfig", head + secret("stringData: {password: "+canary+"}") + deploy + "functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {prefix: x}}\n", true},
		{"a second document", head + secret("stringData: {password: "+canary+"}") + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: other}\nstringData: {password: " + canary + "}\n", true},
		{"a warning: an external Secret", head + secret("stringData: {password: "+canary+"}") + deploy, false},
		{"a warning, the Secret in data and stringData", head + secret("data: {password: "+b64+"}\n  stringData: {password: "+canary+"}") + deploy, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			results, err := fn.Run(fn.Processor{}, bytes.NewReader([]byte(tc.input)), &out)
			shown := results.Error()
			if tc.fails {
				require.Error(t, err)
				assert.Empty(t, out.String())
				shown += "\n" + err.Error()
			} else {
				require.NoError(t, err)
				require.NotEmpty(t, results, "the case warns")
				nodes, err := kio.FromBytes(out.Bytes())
				require.NoError(t, err)
				// What the function writes: the workload's annotations.
				for _, n := range nodes {
					if n.GetKind() == "ResourceList" {
						continue
					}
					for k, v := range n.GetAnnotations() {
						shown += "\n" + k + ": " + v
					}
				}
			}
			assert.NotContains(t, shown, canary)
			assert.NotContains(t, shown, b64)
			assert.NotContains(t, shown, b64[:len(b64)-1])
		})
	}
}
