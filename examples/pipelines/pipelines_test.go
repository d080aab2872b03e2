package pipelines_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// pipe runs a README pipeline with bash -o pipefail, bin/ first on PATH
// (helm3, helm4, kustomize and confighash are found there).
func pipe(t *testing.T, dir, script string) testtools.Result {
	t.Helper()
	path := "PATH=" + testtools.BinDir(t) + string(os.PathListSeparator) + os.Getenv("PATH")
	home := t.TempDir() // helm homes of its own, empty
	env := append([]string{path}, testtools.HelmHomes(home)...)
	return testtools.Run(t, dir, env, nil, "bash", "-o", "pipefail", "-c", script)
}

// podHashes returns the confighash annotation of each pod template.
func podHashes(t *testing.T, stream string) map[string]string { return testtools.PodHashes(t, stream) }

// krm runs the objects of stream through confighash as a KRM function.
func krm(t *testing.T, stream, namespace string) map[string]string {
	t.Helper()
	return testtools.PodHashes(t, testtools.RunKRM(t, testtools.Tool(t, "confighash"), stream, namespace))
}

func succeed(t *testing.T, res testtools.Result) string {
	t.Helper()
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// TestHelmTemplatePipe: helm template | confighash hashes every workload,
// hooks included, under both Helm versions, like the KRM function does.
func TestHelmTemplatePipe(t *testing.T) {
	root := testtools.RepoRoot(t)
	testtools.Tool(t, "confighash")
	plain := succeed(t, pipe(t, root, "helm3 template web examples/helm -n shop"))
	want := krm(t, plain, "shop")
	for _, id := range []string{"Deployment//web-greeter", "Job//web-greeter-smoke-test"} {
		if want[id] == "" {
			t.Fatalf("KRM path gave %s no hash: %v", id, want)
		}
	}
	for _, helm := range []string{"helm3", "helm4"} {
		t.Run(helm, func(t *testing.T) {
			testtools.Tool(t, helm)
			got := podHashes(t, succeed(t, pipe(t, root, helm+" template web examples/helm -n shop | confighash --namespace shop")))
			if len(got) != len(want) {
				t.Errorf("hashed %v, want %v", got, want)
			}
			for id, h := range want {
				if got[id] != h {
					t.Errorf("%s: pipeline %q, KRM function %q", id, got[id], h)
				}
			}
		})
	}
}

// TestKustomizeBuildPipe: kustomize build | confighash gives the hash the
// same kustomization gets from confighash as a KRM exec function.
func TestKustomizeBuildPipe(t *testing.T) {
	testtools.Tool(t, "kustomize")
	confighash := testtools.Tool(t, "confighash")
	// The seed demo twice: with its function pointed at the binary under
	// test, and without the function.
	withFn, plain := copyDemo(t), copyDemo(t)
	fn := filepath.Join(withFn, "confighash.yaml")
	b, err := os.ReadFile(fn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fn, bytes.Replace(b, []byte("../../bin/confighash"), []byte(confighash), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := yaml.ReadFile(filepath.Join(plain, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := k.Pipe(yaml.Clear("transformers")); err != nil || removed == nil {
		t.Fatalf("examples/demo/kustomization.yaml: removing its transformers: %v", err)
	}
	if err := yaml.WriteFile(k, filepath.Join(plain, "kustomization.yaml")); err != nil {
		t.Fatal(err)
	}

	want := podHashes(t, succeed(t, pipe(t, withFn, "kustomize build --enable-alpha-plugins --enable-exec .")))
	got := podHashes(t, succeed(t, pipe(t, plain, "kustomize build . | confighash")))
	if want["Deployment/demo/web"] == "" || got["Deployment/demo/web"] != want["Deployment/demo/web"] {
		t.Errorf("pipeline %v, KRM function in kustomize %v: want the same hash on Deployment/demo/web", got, want)
	}
}

func copyDemo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testtools.RepoRoot(t), "examples", "demo"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPipeFailure: with pipefail, a failing render or a bad document fails
// the pipeline and confighash prints nothing.
func TestPipeFailure(t *testing.T) {
	testtools.Tool(t, "confighash")
	testtools.Tool(t, "kustomize")
	cases := []struct{ name, script, wants string }{
		{"render fails", "kustomize build does-not-exist | confighash", "does-not-exist"},
		{"bad Secret", "printf 'apiVersion: v1\\nkind: Secret\\nmetadata:\\n  name: s\\ndata:\\n  k: \"%%%%\"\\n' | confighash", "data.k: not valid base64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := pipe(t, t.TempDir(), tc.script)
			if res.ExitCode == 0 || strings.TrimSpace(res.Stdout) != "" || !strings.Contains(res.Stderr, tc.wants) {
				t.Errorf("exit %d, stdout %q, stderr %q; want failure naming %q and no output", res.ExitCode, res.Stdout, res.Stderr, tc.wants)
			}
		})
	}
}

// TestFluxPreRender runs the CI script of docs/flux.md ("Pre-render"), as a
// user copies it, in a repository laid out as it assumes (a kustomization
// at clusters/prod/apps, a chart at charts/web, values/prod.yaml), with
// helm, kustomize and confighash on PATH: it must succeed, checks included,
// and write hashed manifests for Flux.
func TestFluxPreRender(t *testing.T) {
	root := testtools.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "flux.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```sh\n")
	script, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/flux.md has no sh block")
	}
	repo := t.TempDir()
	for dst, src := range map[string]string{"clusters/prod/apps": "examples/argocd/app", "charts/web": "examples/helm"} {
		if err := os.CopyFS(filepath.Join(repo, dst), os.DirFS(filepath.Join(root, src))); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"values", "rendered/prod"} {
		if err := os.MkdirAll(filepath.Join(repo, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "values", "prod.yaml"), []byte("greeting: Hello from prod\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir() // `helm` is Helm 3 here
	if err := os.Symlink(testtools.Tool(t, "helm3"), filepath.Join(tools, "helm")); err != nil {
		t.Fatal(err)
	}
	res := pipe(t, repo, "PATH="+tools+":$PATH\n"+script)
	if res.ExitCode != 0 {
		t.Fatalf("the script of docs/flux.md fails: exit %d\n%s\nscript:\n%s", res.ExitCode, res.Stderr, script)
	}
	for _, f := range []string{"rendered/prod/apps.yaml", "rendered/prod/web.yaml"} {
		b, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		hashes := podHashes(t, string(b))
		if len(hashes) == 0 {
			t.Errorf("%s: no pod template", f)
		}
		for id, h := range hashes {
			if !strings.HasPrefix(h, "v1-") {
				t.Errorf("%s: %s has no hash", f, id)
			}
		}
	}
}
