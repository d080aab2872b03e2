package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// trickyChart holds values Helm 4 writes anew after its post-renderer
// (block scalars become quoted strings, escapes are decoded, quoting
// changes) and a Secret with a canary value, read by a StatefulSet and a
// CronJob.
const trickyChart = `apiVersion: v1
kind: ConfigMap
metadata:
  name: tricky
data:
  "yes": "yes"
  hex: "0x10"
  exp: "1e3"
  tilde: "~"
  empty: ""
  multi: |
    line one   
    line two
  folded: >-
    a
    b
  "dotted.key": 'single ''quoted'''
  unicode: "caf\u00e9 \U0001F600"
binaryData:
  bin: AAECAwQ=
---
apiVersion: v1
kind: Secret
metadata:
  name: tricky
stringData:
  password: "CANARY-s3cr3t"
  pin: "0012"
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: tricky
spec:
  serviceName: tricky
  selector: {matchLabels: {app: tricky}}
  template:
    metadata: {labels: {app: tricky}}
    spec:
      containers:
      - name: c
        image: c:1
        envFrom:
        - configMapRef: {name: tricky}
        - secretRef: {name: tricky}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: tricky
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: c
            image: c:1
            env:
            - name: P
              valueFrom: {secretKeyRef: {name: tricky, key: pin}}
`

// TestVerifyHelm4Output: Helm 4 writes its post-renderer's output anew;
// verify and explain read that output as confighash hashed it (every hash
// current, with the render's flags and key), diff finds it the same render
// as Helm 3's, and a keyed render without its key fails verify saying so.
// No output holds the Secret's value.
func TestVerifyHelm4Output(t *testing.T) {
	chart := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: tricky\nversion: 0.1.0\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(chart, "templates"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "templates", "all.yaml"), []byte(trickyChart), 0o600))
	confighash := testtools.Tool(t, "confighash")
	h4 := testtools.NewHelm(t, 4)
	h4.Env = append(h4.Env, "CONFIGHASH_BIN="+confighash)
	h4.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
	h3 := testtools.NewHelm(t, 3)
	template := func(h testtools.Helm, env []string, post string) string {
		t.Helper()
		res := h.Run(t, env, "template", "web", chart, "-n", "shop", "--post-renderer", post, "--post-renderer-args", "--namespace=shop")
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		require.Contains(t, res.Stdout, "confighash.dev/hash")
		return res.Stdout
	}
	plain4 := template(h4, nil, "confighash")
	keyed4 := template(h4, []string{"CONFIGHASH_HMAC_KEY=k3y"}, "confighash")
	plain3 := template(h3, nil, confighash)
	require.NotEqual(t, plain3, plain4, "Helm 4 writes the stream anew")
	require.Contains(t, plain4, `multi: "line one   \nline two\n"`, "Helm 4 writes a block scalar as a quoted string")
	o3, o4 := diffInputs(t, plain3, plain4)
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("k3y"), 0o600))

	for _, tc := range []struct {
		name, input string
		args        []string
		code        int
		want        string
	}{
		{"verify", plain4, []string{"verify", "--namespace", "shop"}, 0, "ok: 2 workloads, every hash current"},
		{"verify, keyed, the key", keyed4, []string{"verify", "--namespace", "shop", "--hmac-key-file", keyFile}, 0, "ok: 2 workloads, every hash current"},
		{"verify, keyed, no key", keyed4, []string{"verify", "--namespace", "shop"}, 1, "2 made with an HMAC key verify was not given"},
		{"verify, without the render's namespace", plain4, []string{"verify"}, 1, "2 with another value"},
		{"explain", plain4, []string{"explain", "--namespace", "shop"}, 0, "(present)"},
		{"diff, Helm 3 and Helm 4", "", []string{"diff", "--exit-code", "--namespace", "shop", o3, o4}, 0, "0 of 2 workloads roll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.input, tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, out+errOut, tc.want)
			assert.NotContains(t, out+errOut, "CANARY")
		})
	}
}
