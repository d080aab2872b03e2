package examples_test

import (
	"path/filepath"
	"testing"

	"github.com/confighash/confighash/internal/testing/cptest"
)

// TestKustomizeProbesOnCluster applies the local-config probe tree
// (kprobeTrees) to the local control plane as TestKustomizeDocsOnCluster
// applies the docs trees: the configs kustomize renamed and then dropped
// are made by hand under the names the pod reads, and the controller, which
// watches them by the render's external list, rolls their reader once for
// an edit of each; the first apply rolls nothing and status finds every
// config.
func TestKustomizeProbesOnCluster(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	tc := kprobeTrees[0]
	tc.changes = tc.changes[:1] // a value the render holds; the others rename or touch no object it applies
	const reader = "Deployment/shop/prod-web-eu"
	checkDocsOnCluster(t, docsCluster{
		src: filepath.Join("..", "testdata", "kustomize", tc.tree), tree: tc.tree, build: tc.build,
		namespaces: []string{"shop"},
		create: map[string]map[string]string{
			"ConfigMap/shop/prod-flags-eu-9hd57fhg78": {"FAST": "true"},
			"ConfigMap/shop/prod-settings-eu":         {"replicas": "3"},
			"Secret/shop/prod-token-eu":               {"token": "abc"},
		},
		edits: []docsEdit{
			{config: "ConfigMap/shop/prod-settings-eu", key: "replicas", value: "5", readers: []string{reader}},
			{config: "Secret/shop/prod-token-eu", key: "token", value: "xyz", readers: []string{reader}},
			{config: "ConfigMap/shop/prod-flags-eu-9hd57fhg78", key: "FAST", value: "false", readers: []string{reader}},
		},
	}, tc)
}
