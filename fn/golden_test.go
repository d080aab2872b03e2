package fn_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/fn"
)

// update rewrites the golden files from the function's output:
// go test ./fn/ -run TestGolden -update
var update = flag.Bool("update", false, "rewrite testdata/fn/*/expected.yaml and errors.txt from the actual output")

// goldenDir holds one directory per case, as kyaml's frameworktestutil
// lays them out: config.yaml (the functionConfig, optional), input.yaml
// (the items, as kustomize or kpt sends them), and expected.yaml (the
// output ResourceList) or errors.txt (the error).
const goldenDir = "../testdata/fn"

// TestGolden runs the KRM function on each case and compares its output
// with the golden file. Each case also states what its output must and
// must not hold, so that -update cannot bless a regression unnoticed.
func TestGolden(t *testing.T) {
	checks := map[string]struct{ contains, absent []string }{
		"name-prefix": {
			contains: []string{"confighash.dev/hash: 'v1-sha256:",
				// kustomize's build annotations come back untouched.
				"internal.config.kubernetes.io/previousNames: cfg", "internal.config.kubernetes.io/prefixes: prod-",
				"config.kubernetes.io/path: deployment.yaml", "internal.config.kubernetes.io/id: '1'",
				"image: example/web:1 # pinned"},
			absent: []string{"confighash.dev/external", "results:"}},
		"generator": {
			contains: []string{"confighash.dev/hash: 'v1-sha256:", "internal.config.kubernetes.io/needsHashSuffix: enabled"},
			absent:   []string{"confighash.dev/external", "results:"}},
		"external": {
			contains: []string{"confighash.dev/hash: 'v1-sha256:", "confighash.dev/external: 'Secret/extra,Secret/vault-db-creds'",
				"severity: warning", "consumes Secret data/vault-db-creds, which is not in the stream", "severity: info"}},
		"sops-encrypted": {
			contains: []string{"confighash.dev/hash: 'v1-sha256:", "confighash.dev/external: 'ConfigMap/podinfo-flags,Secret/podinfo-registry,Secret/podinfo-token'",
				"consumes Secret apps/podinfo-registry, which is encrypted with SOPS", "consumes ConfigMap apps/podinfo-flags, which is encrypted with SOPS"},
			absent: []string{"not valid base64"}},
		"opted-out": {
			contains: []string{"confighash.dev/hash: 'v1-sha256:"},
			absent:   []string{"confighash.dev/hash: v1-sha256:0000000000000000000000000000000000000000000000000000000000000000"}},
		"invalid-config": {
			contains: []string{"functionConfig confighash", "annotationPrefx"}},
		"custom-workload": {
			contains: []string{"hash.example.com/hash: 'v1-sha256:"},
			absent:   []string{"confighash.dev/hash"}},
	}
	entries, err := os.ReadDir(goldenDir)
	require.NoError(t, err)
	seen := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		seen++
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(goldenDir, name)
			check, ok := checks[name]
			require.True(t, ok, "case %s has no checks in TestGolden", name)
			in := goldenInput(t, dir)
			var out bytes.Buffer
			_, runErr := fn.Run(fn.Processor{}, bytes.NewReader(in), &out)
			actual, file := out.String(), "expected.yaml"
			if runErr != nil {
				actual, file = runErr.Error()+"\n", "errors.txt"
				assert.Empty(t, out.String(), "no partial output on error")
			}
			for _, s := range check.contains {
				assert.Contains(t, actual, s)
			}
			for _, s := range check.absent {
				assert.NotContains(t, actual, s)
			}
			path := filepath.Join(dir, file)
			if *update {
				for _, stale := range []string{"expected.yaml", "errors.txt"} {
					if err := os.Remove(filepath.Join(dir, stale)); err != nil && !errors.Is(err, os.ErrNotExist) {
						t.Fatal(err)
					}
				}
				require.NoError(t, os.WriteFile(path, []byte(actual), 0o644))
				t.Logf("wrote %s", path)
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./fn/ -run TestGolden -update to create it")
			assert.Equal(t, string(want), actual)

			// Running the function on its own output changes nothing.
			if runErr == nil {
				var again bytes.Buffer
				_, err := fn.Run(fn.Processor{}, bytes.NewReader(out.Bytes()), &again)
				require.NoError(t, err)
				assert.Equal(t, actual, again.String(), "idempotent")
			}
		})
	}
	require.Equal(t, len(checks), seen, "every case in TestGolden has a directory")
}

// goldenInput builds the ResourceList: the documents of input.yaml as
// items, exactly as written, and config.yaml as functionConfig.
func goldenInput(t *testing.T, dir string) []byte {
	t.Helper()
	items := &yaml.Node{Kind: yaml.SequenceNode}
	b, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		items.Content = append(items.Content, doc.Content[0])
	}
	rl := yaml.NewMapRNode(nil)
	require.NoError(t, rl.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("config.kubernetes.io/v1"))))
	require.NoError(t, rl.PipeE(yaml.SetField("kind", yaml.NewStringRNode("ResourceList"))))
	require.NoError(t, rl.PipeE(yaml.SetField("items", yaml.NewRNode(items))))
	if fc, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err == nil {
		node, err := yaml.Parse(string(fc))
		require.NoError(t, err)
		require.NoError(t, rl.PipeE(yaml.SetField("functionConfig", node)))
	} else {
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	s, err := rl.String()
	require.NoError(t, err)
	return []byte(s)
}
