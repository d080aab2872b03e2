package examples_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestKubectl is what a user of kubectl's own kustomize meets
// (docs/kustomize.md, "With kubectl"), with the kubectl of the control
// plane's release (bin/kubectl, `make controlplane`) and a tree that lists
// confighash as an exec function:
//   - `kubectl apply -k` builds with plugins off: it stops with kustomize's
//     error and applies nothing;
//   - `kubectl kustomize` takes --enable-alpha-plugins but not --enable-exec,
//     so it skips the function and exits 0; `confighash verify` catches that;
//   - the two ways that work, kustomize's build piped to `kubectl apply -f -`
//     and `kubectl kustomize` of the tree without the function piped through
//     confighash, give the same hashes: the second apply rolls nothing.
func TestKubectl(t *testing.T) {
	kubectl := testtools.Tool(t, "kubectl")
	confighash := testtools.Tool(t, "confighash")
	tree := filepath.Join(testtools.RepoRoot(t), "testdata", "kustomize", "docs", "canary")
	env := []string{"KUBECONFIG=" + cptest.Shared(t).KubeconfigPath()}
	c := newCluster(t, "kubectl")
	run := func(dir, stdin string, args ...string) testtools.Result {
		t.Helper()
		return testtools.Run(t, dir, env, []byte(stdin), kubectl, args...)
	}

	res := run(tree, "", "apply", "-k", ".", "-n", c.namespace, "--server-side")
	assert.NotZero(t, res.ExitCode, "kubectl apply -k")
	assert.Contains(t, res.Stderr, "external plugins disabled; unable to load external plugin 'ConfigHash'")
	deps, err := c.client.AppsV1().Deployments(c.namespace).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, deps.Items, "kubectl apply -k applied nothing")

	res = run(tree, "", "kustomize", "--enable-alpha-plugins", ".")
	require.Zero(t, res.ExitCode, res.Stderr)
	assert.NotContains(t, res.Stdout, "confighash.dev/", "kubectl kustomize skips the exec function")
	verify := testtools.Run(t, tree, nil, []byte(res.Stdout), confighash, "verify")
	assert.Equal(t, 1, verify.ExitCode, "verify on kubectl kustomize's output")
	assert.Contains(t, verify.Stderr, "did the function run?")
	res = run(tree, "", "kustomize", "--enable-alpha-plugins", "--enable-exec", ".")
	assert.NotZero(t, res.ExitCode, "kubectl kustomize --enable-exec")
	assert.Contains(t, res.Stderr, "unknown flag: --enable-exec")

	// kustomize's own build, then kubectl apply.
	rendered := kustomizeBuild(t, tree)
	want := testtools.PodHashes(t, rendered)
	require.ElementsMatch(t, []string{"Deployment//web", "Deployment//canary-web"}, slices.Collect(maps.Keys(want)),
		"the canary tree's two Deployments carry a hash")
	res = run(tree, rendered, "apply", "-n", c.namespace, "--server-side", "--field-manager", "gitops", "-f", "-")
	require.Zero(t, res.ExitCode, res.Stderr)
	before := map[string]state{}
	for id, hash := range want {
		name := strings.TrimPrefix(id, "Deployment//")
		before[name] = c.deployment(t, name)
		assert.Equal(t, hash, before[name].annotations["confighash.dev/hash"], "%s on the cluster", id)
	}

	// kubectl kustomize of the same bases without the function, through
	// confighash's stream mode.
	plain := t.TempDir()
	kustomization := "resources:\n"
	for _, base := range []string{"base", "canary"} {
		rel, err := filepath.Rel(plain, filepath.Join(tree, base)) // kustomize takes no absolute root
		require.NoError(t, err)
		kustomization += "- " + rel + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(plain, "kustomization.yaml"), []byte(kustomization), 0o600))
	res = run(plain, "", "kustomize", ".")
	require.Zero(t, res.ExitCode, res.Stderr)
	piped := testtools.Run(t, plain, nil, []byte(res.Stdout), confighash)
	require.Zero(t, piped.ExitCode, piped.Stderr)
	assert.Equal(t, want, testtools.PodHashes(t, piped.Stdout), "kubectl kustomize | confighash hashes as the function does")
	assert.Equal(t, strings.Count(rendered, "\n---\n"), strings.Count(piped.Stdout, "\n---\n"), "the same objects")
	res = run(plain, piped.Stdout, "apply", "-n", c.namespace, "--server-side", "--field-manager", "gitops", "-f", "-")
	require.Zero(t, res.ExitCode, res.Stderr)
	for name := range before {
		assertRolled(t, "kubectl kustomize | confighash over the function's render: "+name, 0, before[name], c.deployment(t, name))
	}
}
