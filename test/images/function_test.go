package images

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// functionAnnotation matches the function block of the examples'
// functionConfig (an exec function), to be replaced by another runtime.
var functionAnnotation = regexp.MustCompile(`(?m)^(\s+)config\.kubernetes\.io/function: \|\n\s+exec:\n\s+path: \S+\n`)

// runtimes of one kustomization: the function block and the flags each
// needs.
type runtime struct {
	name  string
	block func(indent string) string
	flags []string
}

func runtimes(img *images) []runtime {
	return []runtime{
		{
			name: "exec",
			block: func(in string) string {
				return fmt.Sprintf("%sconfig.kubernetes.io/function: |\n%s  exec:\n%s    path: %s\n", in, in, in, filepath.Join(img.binDir, "confighash"))
			},
			flags: []string{"--enable-alpha-plugins", "--enable-exec"},
		},
		{
			name: "container",
			block: func(in string) string {
				return fmt.Sprintf("%sconfig.kubernetes.io/function: |\n%s  container:\n%s    image: %s\n", in, in, in, img.function)
			},
			flags: []string{"--enable-alpha-plugins"},
		},
	}
}

// kustomization is a directory of files to build.
type kustomization map[string]string

// fromDir reads every file of an example directory.
func fromDir(t *testing.T, dir string) kustomization {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := kustomization{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		k[e.Name()] = string(data)
	}
	return k
}

// build writes k with its function run by rt and runs kustomize build.
func build(t *testing.T, kustomize, path string, k kustomization, rt runtime) testtools.Result {
	t.Helper()
	dir := filepath.Join(t.TempDir(), rt.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	replaced := 0
	for name, data := range k {
		data = functionAnnotation.ReplaceAllStringFunc(data, func(m string) string {
			replaced++
			return rt.block(functionAnnotation.FindStringSubmatch(m)[1])
		})
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if replaced != 1 {
		t.Fatalf("%d exec function blocks in the kustomization, want 1", replaced)
	}
	args := append([]string{"build"}, rt.flags...)
	return testtools.Run(t, dir, []string{"PATH=" + path}, nil, kustomize, append(args, dir)...)
}

// corpusKustomization is a kustomization over one file of the shared
// corpus, with the function as its transformer.
func corpusKustomization(t *testing.T, file string) kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testtools.Corpus(t), file))
	if err != nil {
		t.Fatal(err)
	}
	return kustomization{
		"kustomization.yaml": "resources:\n- input.yaml\ntransformers:\n- confighash.yaml\n",
		"input.yaml":         string(data),
		"confighash.yaml":    testtools.ExecFunctionConfig("confighash"),
	}
}

// TestFunctionImageThroughKustomize runs the function image the way
// kustomize users do (a container function: `docker run`, user nobody, no
// network) and compares the output, byte for byte, with the same
// kustomization run through the exec function.
func TestFunctionImageThroughKustomize(t *testing.T) {
	img := requireImages(t)
	kustomize := testtools.Tool(t, "kustomize")
	root := testtools.RepoRoot(t)
	path := img.dockerPath(t)
	tests := []struct {
		name string
		k    func(t *testing.T) kustomization
	}{
		{"examples/demo", func(t *testing.T) kustomization { return fromDir(t, filepath.Join(root, "examples/demo")) }},
		{"examples/generator", func(t *testing.T) kustomization { return fromDir(t, filepath.Join(root, "examples/generator")) }},
		{"corpus/argo-cd/install.yaml", func(t *testing.T) kustomization { return corpusKustomization(t, "argo-cd/install.yaml") }},
		{"corpus/argo-cd/ha-install.yaml", func(t *testing.T) kustomization { return corpusKustomization(t, "argo-cd/ha-install.yaml") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.k(t)
			var outs []testtools.Result
			for _, rt := range runtimes(img) {
				res := build(t, kustomize, path, k, rt)
				if res.ExitCode != 0 {
					t.Fatalf("kustomize build (%s function) exited %d:\n%s", rt.name, res.ExitCode, res.Stderr)
				}
				outs = append(outs, res)
			}
			exec, container := outs[0].Stdout, outs[1].Stdout
			if !strings.Contains(exec, "confighash.dev/hash: v1-") {
				t.Fatalf("the exec function wrote no hash; the comparison would prove nothing:\n%s", exec)
			}
			if container != exec {
				t.Errorf("container function output differs from the exec function's (%d vs %d bytes)\n%s",
					len(container), len(exec), firstDifference(exec, container))
			}
		})
	}
}

// TestFunctionImageReportsErrors: a functionConfig the function rejects
// fails the kustomize build with the function's own message, in the
// container as in the exec form.
func TestFunctionImageReportsErrors(t *testing.T) {
	img := requireImages(t)
	kustomize := testtools.Tool(t, "kustomize")
	k := fromDir(t, filepath.Join(testtools.RepoRoot(t), "examples/generator"))
	if !strings.Contains(k["confighash.yaml"], "annotationPrefix:") {
		t.Fatal("examples/generator/confighash.yaml no longer sets annotationPrefix")
	}
	k["confighash.yaml"] = strings.Replace(k["confighash.yaml"], "annotationPrefix:", "annotationPrefx:", 1)
	const want = "unknown data keys annotationPrefx"
	path := img.dockerPath(t)
	for _, rt := range runtimes(img) {
		res := build(t, kustomize, path, k, rt)
		if res.ExitCode == 0 {
			t.Errorf("%s: kustomize build succeeded with a misspelt functionConfig key:\n%s", rt.name, res.Stdout)
			continue
		}
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("%s: kustomize build failed without the function's message %q:\n%s", rt.name, want, res.Stderr)
		}
	}
}

// firstDifference shows the first line where two outputs differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  exec:      %q\n  container: %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d vs %d lines)", len(al), len(bl))
}
