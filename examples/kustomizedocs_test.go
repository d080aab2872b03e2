package examples_test

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// docsTree is one row of TestKustomizeDocs: a tree under
// testdata/kustomize/docs written after a pattern kustomize's own examples
// teach.
type docsTree struct {
	name, tree, build string
	// verify are the flags verify needs: the functionConfig's workloads.
	verify []string
	// workloads are every workload of the render (Kind/namespace/name)
	// and the external list it carries ("" when it reads nothing from
	// outside the render); every one hashes something of the render.
	workloads map[string]string
	// changes edit an input of a config (paths relative to the tree).
	changes []treeChange
}

var docsTrees = []docsTree{
	{
		// examples/multibases with the base itself among the variants, as
		// a canary is often written: two candidates once named app, told
		// apart only after the function ran, by the hash suffix step.
		name: "a base next to a prefixed variant of itself", tree: "canary", build: ".",
		workloads: map[string]string{"Deployment//web": "", "Deployment//canary-web": ""},
		changes: []treeChange{
			{file: "canary/kustomization.yaml", old: "COLOR=green", new: "COLOR=red",
				moved: []string{"Deployment//canary-web"}},
			{file: "base/kustomization.yaml", old: "COLOR=blue", new: "COLOR=black",
				moved: []string{"Deployment//web"}},
			{file: "base/kustomization.yaml", old: "password=first", new: "password=second",
				moved: []string{"Deployment//web", "Deployment//canary-web"}},
		},
	},
}

// TestKustomizeDocs builds trees written after kustomize's documented
// examples (examples/*.md in kustomize's repository) with confighash listed
// under transformers:, and checks that the render is the same build without
// the function but for confighash's annotations, that every workload's hash
// and external list are the ones computed from the final objects alone,
// that verify passes, and that a changed config input moves the hash of
// exactly the workloads that read it under its final name.
func TestKustomizeDocs(t *testing.T) {
	t.Parallel()
	for _, tc := range docsTrees {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", "docs", tc.tree))
			root := filepath.Join(dir, tc.build)
			plain, _ := realBuild(t, root, nil, false)
			out, _ := realBuild(t, root, nil, true)
			assert.Equal(t, withoutConfighash(t, plain), withoutConfighash(t, out), "only confighash's annotations added")

			got := independentHashes(t, out)
			require.Equal(t, slices.Sorted(maps.Keys(tc.workloads)), slices.Sorted(maps.Keys(got)), "workloads in the render\n%s", out)
			for id, external := range tc.workloads {
				r := got[id]
				assert.Equal(t, r.wantExternal, external, "%s: what it reads from outside the render, computed from the objects", id)
				require.NotEmpty(t, r.want, "%s reads something of the render", id)
				assert.Equal(t, r.want, r.hash, "%s: hash of what it reads, by the final names\n%s", id, out)
				assert.Equal(t, external, r.external, "%s: external annotation", id)
			}
			verify := testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), append([]string{"verify"}, tc.verify...)...)
			assert.Zero(t, verify.ExitCode, "confighash verify on the render\n%s", verify.Stderr)

			hashes := testtools.PodHashes(t, out)
			for _, c := range tc.changes {
				edit(t, filepath.Join(dir, c.file), c.old, c.new)
				changed, _ := realBuild(t, root, nil, true)
				assertMoved(t, c.file+": "+c.new, hashes, testtools.PodHashes(t, changed), c.moved)
				verify := testtools.Run(t, dir, nil, []byte(changed), testtools.Tool(t, "confighash"), append([]string{"verify"}, tc.verify...)...)
				assert.Zero(t, verify.ExitCode, "%s: confighash verify on the render\n%s", c.file, verify.Stderr)
				edit(t, filepath.Join(dir, c.file), c.new, c.old)
			}
		})
	}
}
