// Package examples_test runs every example with the real tools: kustomize
// (exec KRM function), the ResourceList path kpt uses, and the plain stream.
package examples_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

var hashLine = regexp.MustCompile(`confighash\.dev/hash: ['"]?(v1-sha256:[0-9a-f]{64})`)

// kustomizeBuild runs kustomize build with exec functions in dir and
// returns its output, failing the test if the build fails.
func kustomizeBuild(t *testing.T, dir string) string {
	t.Helper()
	res := kustomizeRun(t, dir)
	require.Zero(t, res.ExitCode, res.Stderr)
	return res.Stdout
}

// kustomizeRun runs kustomize build with exec functions in dir, successful
// or not.
func kustomizeRun(t *testing.T, dir string) testtools.Result {
	t.Helper()
	return testtools.Run(t, dir, nil, nil, testtools.Tool(t, "kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", ".")
}

// editedTree copies testdata/kustomize/<tree> and replaces old with new in
// its file.
func editedTree(t *testing.T, tree, file, old, new string) string {
	t.Helper()
	dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", tree))
	edit(t, filepath.Join(dir, file), old, new)
	return dir
}

func hashes(t *testing.T, out string) []string {
	t.Helper()
	var hs []string
	for _, m := range hashLine.FindAllStringSubmatch(out, -1) {
		hs = append(hs, m[1])
	}
	return hs
}

// copyDir copies an example into a temp dir so a test can edit it; the exec
// path ../../bin/confighash is rewritten to the absolute binary.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	bin := testtools.Tool(t, "confighash")
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		b = []byte(strings.ReplaceAll(string(b), "../../bin/confighash", bin))
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

func edit(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// TestDemoPathsAgree renders the seed demo three ways — kustomize running the
// exec function, a ResourceList on stdin, a plain stream on stdin — and
// expects one and the same hash.
func TestDemoPathsAgree(t *testing.T) {
	dir := copyDir(t, "demo")
	viaKustomize := hashes(t, kustomizeBuild(t, dir))
	require.Len(t, viaKustomize, 1)

	raw := readFiles(t, dir, "configmap.yaml", "deployment.yaml")
	stream := testtools.Run(t, dir, nil, []byte(raw), testtools.Tool(t, "confighash"), "--namespace", "demo")
	require.Zero(t, stream.ExitCode, stream.Stderr)
	assert.Equal(t, viaKustomize, hashes(t, stream.Stdout), "plain stream")

	rl := resourceList(t, raw, "", "demo")
	krm := testtools.Run(t, dir, nil, []byte(rl), testtools.Tool(t, "confighash"))
	require.Zero(t, krm.ExitCode, krm.Stderr)
	assert.Contains(t, krm.Stdout, "kind: ResourceList")
	assert.Equal(t, viaKustomize, hashes(t, krm.Stdout), "ResourceList")
}

// TestDemoRollsOnContentOnly edits the demo: new page content changes the
// hash, a label on the ConfigMap does not.
func TestDemoRollsOnContentOnly(t *testing.T) {
	dir := copyDir(t, "demo")
	before := hashes(t, kustomizeBuild(t, dir))
	edit(t, filepath.Join(dir, "configmap.yaml"), "name: site\n", "name: site\n  labels: {release: v2}\n")
	assert.Equal(t, before, hashes(t, kustomizeBuild(t, dir)), "label only")
	edit(t, filepath.Join(dir, "configmap.yaml"), "Hello from confighash", "Hello again")
	after := hashes(t, kustomizeBuild(t, dir))
	require.Len(t, after, 1)
	assert.NotEqual(t, before, after, "content change")
}

// TestGeneratorNames checks generated ConfigMaps and Secrets: kustomize adds
// the name suffix after the function, references still resolve, and the
// hash names the suffixed objects the cluster will hold.
func TestGeneratorNames(t *testing.T) {
	dir := copyDir(t, "generator")
	out := kustomizeBuild(t, dir)
	before := hashes(t, out)
	require.Len(t, before, 1, out)
	assert.Regexp(t, `name: app-config-[a-z0-9]{10}\n`, out, "kustomize suffixed the generated name")
	assert.NotContains(t, out, "confighash.dev/external", "generated configs are in the stream")
	verify := testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), "verify")
	assert.Zero(t, verify.ExitCode, verify.Stderr)

	// With suffixes, any content change renames the object, so even an
	// unconsumed key rolls the workload: that is kustomize's doing.
	edit(t, filepath.Join(dir, "kustomization.yaml"), "UNUSED=not-consumed", "UNUSED=changed")
	assert.NotEqual(t, before, hashes(t, kustomizeBuild(t, dir)), "suffix changed with content")
}

// TestGeneratorWithoutSuffix: with disableNameSuffixHash, confighash alone
// decides, key-precisely, and no orphaned suffixed objects pile up.
func TestGeneratorWithoutSuffix(t *testing.T) {
	dir := copyDir(t, "generator")
	edit(t, filepath.Join(dir, "kustomization.yaml"), "configMapGenerator:", "generatorOptions:\n  disableNameSuffixHash: true\nconfigMapGenerator:")
	before := hashes(t, kustomizeBuild(t, dir))
	require.Len(t, before, 1)
	edit(t, filepath.Join(dir, "kustomization.yaml"), "UNUSED=not-consumed", "UNUSED=changed")
	assert.Equal(t, before, hashes(t, kustomizeBuild(t, dir)), "unconsumed key")
	edit(t, filepath.Join(dir, "kustomization.yaml"), "LOG_LEVEL=info", "LOG_LEVEL=debug")
	assert.NotEqual(t, before, hashes(t, kustomizeBuild(t, dir)), "consumed key")
}

// TestKptPipeline sends what kpt sends for examples/kpt: a ResourceList whose
// functionConfig is the Kptfile's configMap block as a ConfigMap.
func TestKptPipeline(t *testing.T) {
	kptfile, err := yaml.ReadFile("kpt/Kptfile")
	require.NoError(t, err)
	cm, err := kptfile.Pipe(yaml.Lookup("pipeline", "mutators", "0", "configMap"))
	require.NoError(t, err)
	require.NotNil(t, cm)
	data, err := cm.String()
	require.NoError(t, err)
	fnConfig := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n" + indent(data, "  ")
	rl := resourceList(t, readFiles(t, "kpt", "configmap.yaml", "deployment.yaml"), fnConfig, "")
	res := testtools.Run(t, ".", nil, []byte(rl), testtools.Tool(t, "confighash"))
	require.Zero(t, res.ExitCode, res.Stderr)
	assert.Len(t, hashes(t, res.Stdout), 1)
}

func readFiles(t *testing.T, dir string, names ...string) string {
	t.Helper()
	var parts []string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "---\n")
}

// resourceList wraps a stream as a ResourceList, optionally setting a
// namespace on every item, the way kustomize would before calling us.
func resourceList(t *testing.T, stream, fnConfig, namespace string) string {
	t.Helper()
	var items []string
	for _, doc := range strings.Split(stream, "---\n") {
		node, err := yaml.Parse(doc)
		require.NoError(t, err)
		if namespace != "" {
			require.NoError(t, node.SetNamespace(namespace))
		}
		s, err := node.String()
		require.NoError(t, err)
		items = append(items, "- "+strings.TrimPrefix(indent(s, "  "), "  "))
	}
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + strings.Join(items, "")
	if fnConfig != "" {
		rl += "functionConfig:\n" + indent(fnConfig, "  ")
	}
	return rl
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestVerifyCatchesSkippedFunction: kustomize with --enable-alpha-plugins but
// without --enable-exec exits 0 and silently skips the exec function;
// `confighash verify` is the guard that notices.
func TestVerifyCatchesSkippedFunction(t *testing.T) {
	dir := copyDir(t, "demo")
	res := testtools.Run(t, dir, nil, nil, testtools.Tool(t, "kustomize"), "build", "--enable-alpha-plugins", ".")
	require.Zero(t, res.ExitCode, "kustomize skips the exec function without failing")
	assert.Empty(t, hashes(t, res.Stdout))
	verify := testtools.Run(t, dir, nil, []byte(res.Stdout), testtools.Tool(t, "confighash"), "verify")
	assert.Equal(t, 1, verify.ExitCode)
	assert.Contains(t, verify.Stderr, "Deployment demo/web")
	assert.Empty(t, verify.Stdout)

	explain := testtools.Run(t, dir, nil, []byte(kustomizeBuild(t, dir)), testtools.Tool(t, "confighash"), "explain", "--json")
	require.Zero(t, explain.ExitCode, explain.Stderr)
	assert.Contains(t, explain.Stdout, `"workload": "Deployment demo/web"`)
	assert.Contains(t, explain.Stdout, `"name": "site"`)
}
