package examples_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// kustomizationNames are the file names kustomize reads a kustomization
// from.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomizeExampleModules are the two versions of kustomize's own
// repository the module proxy serves whole: their examples folder holds the
// trees kustomize's documentation walks through (helloWorld, ldap,
// multibases, springboot, wordpress, transformerconfigs), as shipped.
var kustomizeExampleModules = []string{"sigs.k8s.io/kustomize@v2.0.3+incompatible", "sigs.k8s.io/kustomize/v3@v3.3.1"}

// TestRealTreeSweep builds every kustomization in the module versions
// realTrees draws on (kueue, cluster-api, metrics-server, katib, Flux, Argo
// Rollouts, Argo CD) and in kustomize's own examples
// (kustomizeExampleModules), not only the rows' ones, through an overlay of ours
// that lists the folder under resources: and confighash under
// transformers:, as docs/kustomize.md says to run it over a tree one does
// not own. Each render is held to what TestRealTrees holds a row to: the
// objects of kustomize's render of the folder but for confighash's
// annotations, verify passing, every hash and external list the one
// computed from the final objects alone, no error; and stream mode over
// the plain render gives every workload the hash the KRM function gave it.
// Components, which kustomize builds only inside a kustomization, and
// folders kustomize itself refuses to build (a remote resource, a file
// outside the module) are counted and named in the log; the test fails
// when the refused ones are a third or more of those it tried.
func TestRealTreeSweep(t *testing.T) {
	t.Parallel()
	modules := slices.Clone(kustomizeExampleModules)
	for _, r := range realTrees {
		modules = append(modules, r.module)
	}
	var tally treeTally
	t.Cleanup(func() { tally.report(t, "the modules") })
	for _, module := range slices.Compact(slices.Sorted(slices.Values(modules))) {
		root := testtools.ModuleDir(t, module)
		var dirs []string
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && slices.Contains(kustomizationNames, d.Name()) {
				dirs = append(dirs, filepath.Dir(path))
			}
			return err
		}))
		for _, dir := range slices.Compact(dirs) {
			rel, err := filepath.Rel(root, dir)
			require.NoError(t, err)
			t.Run(module+"/"+rel, func(t *testing.T) {
				t.Parallel()
				tally.check(t, dir, treeQuirk{})
			})
		}
	}
}

// treeOutcome is what became of one kustomization of the sweep.
type treeOutcome int

const (
	treeBuilt treeOutcome = iota
	treeComponent
	treeRefused
	// treeConfighashRefused: confighash stops the build, as its quirk
	// says it must.
	treeConfighashRefused
)

// treeQuirk is what checkSweptTree expects of a tree that confighash does
// not take as it takes the others; the zero value expects nothing special.
type treeQuirk struct {
	// refused is the start of the error confighash stops the build with:
	// input the API server refuses too, named by document and field.
	refused string
	// vars: a workload reads a config by a name holding a kustomize var,
	// which kustomize substitutes only after its transformers ran:
	// confighash warns and says what to write instead, its hash leaves
	// that config out, and verify on the render fails (docs/kustomize.md).
	// The independent hashes and stream mode, which see the substituted
	// names, are not compared.
	vars bool
	// invalidSpec: a pod spec the API types cannot decode (an env value
	// written as a YAML bool), so the independent computation cannot
	// read it; confighash reads only the references it hashes. The other
	// checks run.
	invalidSpec bool
}

// treeTally counts what became of the kustomizations a test checks with
// checkSweptTree.
type treeTally struct {
	built, hashed, components, refused, confighashRefused atomic.Int64
}

// check runs checkSweptTree on dir and counts its outcome.
func (c *treeTally) check(t *testing.T, dir string, quirk treeQuirk) {
	t.Helper()
	outcome, n := checkSweptTree(t, dir, quirk)
	switch outcome {
	case treeBuilt:
		c.built.Add(1)
		c.hashed.Add(int64(n))
	case treeComponent:
		c.components.Add(1)
	case treeRefused:
		c.refused.Add(1)
	case treeConfighashRefused:
		c.confighashRefused.Add(1)
	}
}

// report logs the counts, of what, and fails the test when kustomize
// refused a third or more of the kustomizations tried: too few were
// checked.
func (c *treeTally) report(t *testing.T, of string) {
	t.Helper()
	t.Logf("%s: %d kustomizations built and checked, %d workloads hashed; %d refused by confighash as their quirk says; %d components; %d that kustomize does not build",
		of, c.built.Load(), c.hashed.Load(), c.confighashRefused.Load(), c.components.Load(), c.refused.Load())
	assert.Greater(t, c.built.Load(), 2*c.refused.Load(), "%s: most kustomizations build, so the test checks them", of)
}

// checkSweptTree builds the kustomization in dir (in the module cache,
// read only) plainly and through an overlay listing confighash, and checks
// the two renders. It returns what became of it and how many workloads
// got a hash.
func checkSweptTree(t *testing.T, dir string, quirk treeQuirk) (treeOutcome, int) {
	t.Helper()
	kustomize, confighash := testtools.Tool(t, "kustomize"), testtools.Tool(t, "confighash")
	for _, name := range kustomizationNames {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if m := topKind.FindStringSubmatch(string(b)); err == nil && m != nil && m[1] == "Component" {
			return treeComponent, 0
		}
	}
	plain := testtools.Run(t, dir, nil, nil, kustomize, "build", ".")
	var flags []string
	if plain.ExitCode != 0 && strings.Contains(plain.Stderr, "security; file") {
		// A file outside the folder: what kustomize's message suggests,
		// as the argo-rollouts row of realTrees does.
		flags = []string{"--load-restrictor", "LoadRestrictionsNone"}
		plain = testtools.Run(t, dir, nil, nil, kustomize, slices.Concat([]string{"build"}, flags, []string{"."})...)
	}
	if plain.ExitCode != 0 {
		t.Logf("kustomize does not build it as shipped: %s", kustomizeError(plain.Stderr))
		return treeRefused, 0
	}

	overlay := sweepOverlay(t, dir, confighash)
	if quirk.refused != "" {
		res := testtools.Run(t, overlay, nil, nil, kustomize, slices.Concat([]string{"build", "--enable-alpha-plugins", "--enable-exec"}, flags, []string{"."})...)
		assert.NotZero(t, res.ExitCode, "confighash refuses the render")
		assert.Contains(t, res.Stderr, "confighash: error: "+quirk.refused)
		assert.Empty(t, res.Stdout, "nothing is printed")
		return treeConfighashRefused, 0
	}
	out, stderr := realBuild(t, overlay, flags, true)
	assert.NotContains(t, stderr, "confighash: error")
	want, got := treeObjects(t, plain.Stdout), treeObjects(t, out)
	if !slices.Equal(want, got) {
		// kustomize may order a render that went through any function
		// differently (kustomize's breakfast walkthrough: a patch leaves
		// apiVersion: null on an object without a group, and the legacy
		// sort puts it first after the round trip): hold the render to
		// the same overlay with cat, a function that changes nothing.
		identity, _ := realBuild(t, sweepOverlay(t, dir, identityFunction), flags, true)
		want = treeObjects(t, identity)
	}
	assert.Equal(t, want, got, "the objects differ from kustomize's render of the folder in more than confighash's annotations")
	verify := testtools.Run(t, "", nil, []byte(out), confighash, "verify")
	inputs := treeInputs(out)
	krm := testtools.PodHashes(t, inputs)
	switch {
	case quirk.vars:
		assert.Contains(t, stderr, "its name holds a kustomize var", "confighash's warning says what to write instead")
		assert.NotZero(t, verify.ExitCode, "confighash verify on the render finds the hash off")
		t.Logf("%d workloads hashed: %s", len(krm), strings.Join(slices.Sorted(maps.Keys(krm)), ", "))
		return treeBuilt, len(krm)
	case strings.TrimSpace(plain.Stdout) == "":
		// kustomize's TestEmptyList: nothing rendered, which verify
		// takes for a failed render.
		assert.Contains(t, verify.Stderr, "no objects in standard input")
	default:
		assert.Zero(t, verify.ExitCode, "confighash verify on the render\n%s", verify.Stderr)
	}
	if !quirk.invalidSpec {
		for id, r := range independentHashes(t, inputs) {
			assert.Equal(t, r.want, r.hash, "%s: hash of what it reads, by the final names", id)
			assert.Equal(t, r.wantExternal, r.external, "%s: external annotation", id)
		}
	}
	stream := testtools.Run(t, "", nil, []byte(plain.Stdout), confighash, "--quiet")
	require.Zero(t, stream.ExitCode, "confighash in stream mode on the plain render: %s", stream.Stderr)
	assert.Equal(t, krm, testtools.PodHashes(t, treeInputs(stream.Stdout)), "stream mode's hashes against the KRM function's")
	t.Logf("%d workloads hashed: %s", len(krm), strings.Join(slices.Sorted(maps.Keys(krm)), ", "))
	return treeBuilt, len(krm)
}

// sweepOverlay writes a kustomization that lists dir under resources: and
// the exec function fn under transformers:, and returns its folder.
func sweepOverlay(t *testing.T, dir, fn string) string {
	t.Helper()
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, dir)
	require.NoError(t, err)
	writeTree(t, overlay, map[string]string{
		"kustomization.yaml": "resources:\n- " + base + "\ntransformers:\n- confighash.yaml\n",
		"confighash.yaml":    testtools.ExecFunctionConfig(fn),
	})
	return overlay
}

// kustomizeError is the line of kustomize's stderr that says why it did
// not build: the first that starts with Error: (kustomize prints its
// deprecation warnings before it), or else the first.
func kustomizeError(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "Error:") {
			return l
		}
	}
	return lines[0]
}
