// Package kpt_test runs examples/kpt with the real kpt, when kpt is on the
// PATH (the Makefile does not install it).
package kpt_test

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// canary is a Secret value no output may hold, written or base64.
const canary = "CANARY-s3cr3t"

// kpt returns the kpt on the PATH, or skips: kpt cannot be installed at a
// pinned version here, so the tests that do not need it (examples_test.go's
// TestKptPipeline) send confighash the ResourceList kpt sends instead.
func kpt(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kpt")
	if err != nil {
		t.Skip("kpt is not on the PATH: the kpt example runs only with a kpt installed")
	}
	return p
}

// subpackage is a kpt package inside the example: its pipeline runs first on
// its own objects, then the example's on everything. worker reads the
// example's ConfigMap site, the subpackage's Secret creds, and a ConfigMap
// named settings that the package holds only as a local-config object (kpt
// does not apply it: the cluster's comes from elsewhere).
var subpackage = map[string]string{
	"Kptfile":     "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: worker\npipeline:\n  mutators:\n  - exec: CONFIGHASH\n",
	"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: " + canary + "\n",
	"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations:\n" +
		"    config.kubernetes.io/local-config: \"true\"\ndata:\n  mode: fast\n",
	"worker.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
    spec:
      containers:
      - name: worker
        image: example/worker:1
        envFrom:
        - secretRef: {name: creds}
        - configMapRef: {name: site}
        - configMapRef: {name: settings}
`,
}

// copyExample copies examples/kpt and the subpackage into a temp dir, each
// pipeline running bin/confighash.
func copyExample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := testtools.Tool(t, "confighash")
	err := testtools.CopyTree(".", dir, func(rel, _ string, b []byte) ([]byte, error) {
		if rel == "Kptfile" {
			return []byte(strings.Replace(string(b), "- exec: ../../bin/confighash", "- exec: "+bin, 1)), nil
		}
		return b, nil
	})
	require.NoError(t, err)
	for _, f := range []string{"kpt_test.go", "README.md"} {
		require.NoError(t, os.Remove(filepath.Join(dir, f)))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "worker"), 0o755))
	for name, content := range subpackage {
		content = strings.ReplaceAll(content, "CONFIGHASH", bin)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "worker", name), []byte(content), 0o644))
	}
	return dir
}

// readPackage returns the package's files by path relative to dir.
func readPackage(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(b)
		return err
	}))
	return files
}

// TestKptRender runs `kpt fn render --allow-exec` on the example with a
// subpackage: every workload gets the hash of what the cluster will hold,
// the same as confighash computes on those objects as a plain stream; the
// local-config ConfigMap is external; a second render changes nothing.
func TestKptRender(t *testing.T) {
	kpt := kpt(t)
	dir := copyExample(t)
	res := testtools.Run(t, dir, nil, nil, kpt, "fn", "render", "--allow-exec", ".")
	require.Zero(t, res.ExitCode, res.Stderr)
	rendered := readPackage(t, dir)

	// What the cluster gets from the package: its objects but the Kptfiles
	// and the local-config one, hashed by confighash as a plain stream.
	var applied []string
	for _, f := range []string{"configmap.yaml", "deployment.yaml", "worker/secret.yaml", "worker/worker.yaml"} {
		applied = append(applied, rendered[f])
	}
	stream := testtools.Run(t, dir, nil, []byte(strings.Join(applied, "---\n")), testtools.Tool(t, "confighash"), "--quiet")
	require.Zero(t, stream.ExitCode, stream.Stderr)
	want := testtools.PodHashes(t, stream.Stdout)
	require.Len(t, want, 2)

	got := testtools.PodHashes(t, rendered["deployment.yaml"]+"---\n"+rendered["worker/worker.yaml"])
	assert.Equal(t, want, got, "kpt's render and the plain stream agree")
	assert.Contains(t, rendered["worker/worker.yaml"], "confighash.dev/external: 'ConfigMap/settings'",
		"the parent's pipeline found site; settings is local-config, external")
	assert.NotContains(t, rendered["worker/settings.yaml"], "confighash.dev/")
	assert.Contains(t, rendered["deployment.yaml"], "name: site # the hash follows this ConfigMap's content", "comments kept")
	for _, s := range []string{res.Stdout, res.Stderr} {
		assert.NotContains(t, s, canary)
		assert.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(canary)))
	}

	again := testtools.Run(t, dir, nil, nil, kpt, "fn", "render", "--allow-exec", ".")
	require.Zero(t, again.ExitCode, again.Stderr)
	assert.Equal(t, rendered, readPackage(t, dir), "a second render changes nothing")
}

// TestKptEvalFailure: `kpt fn eval --exec` on a package confighash cannot
// read (a Secret whose data is not base64) fails naming the object and
// file, changes no file, and shows the Secret's value nowhere.
func TestKptEvalFailure(t *testing.T) {
	kpt := kpt(t)
	dir := copyExample(t)
	bad := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: broken\ndata:\n  password: " + canary + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "worker", "broken.yaml"), []byte(bad), 0o644))
	before := readPackage(t, dir)
	res := testtools.Run(t, dir, nil, nil, kpt, "fn", "eval", "--exec", testtools.Tool(t, "confighash"), ".", "--", "namespace=shop")
	assert.NotZero(t, res.ExitCode)
	assert.Contains(t, res.Stdout+res.Stderr, "Secret shop/broken (document 0, worker/broken.yaml): data.password: not valid base64")
	assert.Equal(t, before, readPackage(t, dir), "no file changed")
	for _, s := range []string{res.Stdout, res.Stderr} {
		assert.NotContains(t, s, canary)
		assert.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(canary)))
	}
}
