package examples_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// krustySources are the Go test packages of kustomize that test it end to
// end on trees written in Go: the krusty package of the API module the
// project builds against, and the pkg/target tests of the two whole
// repository versions of kustomizeExampleModules (the v2 and v3 era:
// bases:, vars:, patchesJson6902, ...). The label names them in subtests
// and krustyQuirks.
var krustySources = []struct{ label, module, dir string }{
	{"api", "sigs.k8s.io/kustomize/api@v0.21.2", "krusty"},
	{"v3", "sigs.k8s.io/kustomize/v3@v3.3.1", "pkg/target"},
	{"v2", "sigs.k8s.io/kustomize@v2.0.3+incompatible", "pkg/target"},
}

// krustyHeader is what kustomize's test harness puts before the content
// of a kustomization (WriteK) and of a component (WriteC).
var krustyHeader = map[string]string{
	"WriteK": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
	"writeK": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
	"WriteC": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
}

// krustyQuirks are the trees of kustomize's tests that confighash does not
// take as it takes the others, by test and folder.
var krustyQuirks = map[string]treeQuirk{
	// A Secret whose data is not base64 (PATH: yellowBrickRoad), which the
	// API server refuses as well.
	"api/TestCrdBase/base":              {refused: "Secret x-crdsecret (document 0): data.PATH: not valid base64"},
	"api/TestCrdWithOverlay/base":       {refused: "Secret x-crdsecret (document 0): data.PATH: not valid base64"},
	"api/TestCrdWithOverlay/overlay":    {refused: "Secret prod-x-crdsecret (document 0): data.PATH: not valid base64"},
	"v3/TestCrdBase/app/base":           {refused: "Secret x-crdsecret (document 0): data.PATH: not valid base64"},
	"v3/TestCrdWithOverlay/app/base":    {refused: "Secret x-crdsecret (document 0): data.PATH: not valid base64"},
	"v3/TestCrdWithOverlay/app/overlay": {refused: "Secret prod-x-crdsecret (document 0): data.PATH: not valid base64"},
	"v2/TestCrdBase/app/base":           {refused: "Secret x-crdsecret (document 0): data.PATH: not valid base64"},
	"v2/TestCrdWithOverlay/app/base":    {refused: "Secret x-crdsecret (document 0): data.PATH: not valid base64"},
	"v2/TestCrdWithOverlay/app/overlay": {refused: "Secret prod-x-crdsecret (document 0): data.PATH: not valid base64"},
	// The Deployment reads two generated Secrets by $(VAR) names.
	"api/TestIntermediateNameSecretKeyRefDiamond/.":   {vars: true},
	"api/TestIntermediateNameSecretKeyRefDiamond/app": {vars: true},
	// An env value patched to the YAML bool false.
	"api/TestNonCommutablePatches/overlay/staging":           {invalidSpec: true},
	"v3/TestMultiplePatchesWithConflict/app/overlay/staging": {invalidSpec: true},
	"v2/TestMultiplePatchesWithConflict/app/overlay/staging": {invalidSpec: true},
}

// TestKustomizeKrustyTrees takes the trees of kustomize's own end-to-end
// tests (the krusty package of krustyModule: namePrefix and nameSuffix
// variants, components, generators and their options, replacements,
// patches of every kind, namespaces, CRDs, inline resources, ...), written
// there in Go with the harness's WriteK, WriteC and WriteF, out of the test
// source: the files each test function writes with a literal path and
// content, itself or through the package's helpers it calls, go into a
// folder of their own, in the order they are written (a later write of a
// path replaces the earlier). Every kustomization
// of those folders is then held to what TestRealTreeSweep holds a tree to.
// Tests that write a file from a variable or build on a custom file
// system leave trees kustomize does not build, which are counted with
// those kustomize refuses on purpose (the tests of its error messages);
// the test fails when they are a third or more.
func TestKustomizeKrustyTrees(t *testing.T) {
	t.Parallel()
	testtools.Tool(t, "kustomize")
	var tally treeTally
	var used sync.Map
	t.Cleanup(func() {
		tally.report(t, "kustomize's krusty tests")
		for key := range krustyQuirks {
			_, ok := used.Load(key)
			assert.True(t, ok, "krustyQuirks names %s, which is no tree of the test", key)
		}
	})
	trees := map[string]map[string]string{}
	for _, src := range krustySources {
		sources, err := filepath.Glob(filepath.Join(testtools.ModuleDir(t, src.module), src.dir, "*_test.go"))
		require.NoError(t, err)
		require.NotEmpty(t, sources, "%s %s", src.module, src.dir)
		for name, files := range krustyTrees(t, sources) {
			trees[src.label+"/"+name] = files
		}
	}
	for name, files := range trees {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeTree(t, root, files)
			var dirs []string
			for path := range files {
				if filepath.Base(path) == "kustomization.yaml" {
					dirs = append(dirs, filepath.Join(root, filepath.Dir(path)))
				}
			}
			slices.Sort(dirs)
			for _, d := range dirs {
				rel, err := filepath.Rel(root, d)
				require.NoError(t, err)
				t.Run(rel, func(t *testing.T) {
					quirk, ok := krustyQuirks[name+"/"+rel]
					if ok {
						used.Store(name+"/"+rel, true)
					}
					tally.check(t, d, quirk)
				})
			}
		})
	}
}

// krustyTrees reads the krusty test sources and returns, for each test
// function that writes files through the harness with literal paths and
// contents, itself or through the package's helpers it calls (writeBase(th)
// and the like), those files by their path relative to the test's root.
func krustyTrees(t *testing.T, sources []string) map[string]map[string]string {
	t.Helper()
	funcs := map[string]*ast.FuncDecl{}
	var tests []*ast.FuncDecl
	for _, src := range sources {
		f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil && fn.Recv == nil {
				funcs[fn.Name.Name] = fn
				if strings.HasPrefix(fn.Name.Name, "Test") {
					tests = append(tests, fn)
				}
			}
		}
	}
	trees := map[string]map[string]string{}
	for _, fn := range tests {
		files := map[string]string{}
		krustyWrites(fn, funcs, files, map[string]bool{})
		for path := range files {
			if filepath.Base(path) == "kustomization.yaml" {
				trees[fn.Name.Name] = files
				break
			}
		}
	}
	return trees
}

// krustyWrites adds to files what fn writes through the harness, in the
// order it writes it, with the writes of the package functions it calls
// where it calls them (each once: seen).
func krustyWrites(fn *ast.FuncDecl, funcs map[string]*ast.FuncDecl, files map[string]string, seen map[string]bool) {
	seen[fn.Name.Name] = true
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok && funcs[id.Name] != nil && !seen[id.Name] {
			krustyWrites(funcs[id.Name], funcs, files, seen)
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "th" {
			return true
		}
		path, okPath := stringLiteral(call.Args[0])
		content, okContent := stringLiteral(call.Args[1])
		if !okPath || !okContent {
			return true
		}
		path = strings.TrimPrefix(filepath.Clean("/"+path), "/")
		switch sel.Sel.Name {
		case "WriteK", "writeK", "WriteC":
			files[filepath.Join(path, "kustomization.yaml")] = krustyHeader[sel.Sel.Name] + content
		case "WriteF", "writeF":
			if path != "" {
				files[path] = content
			}
		}
		return true
	})
}

// stringLiteral is the value of a Go string literal expression.
func stringLiteral(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
