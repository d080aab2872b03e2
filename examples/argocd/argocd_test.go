package argocd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// pluginConfig is the part of a ConfigManagementPlugin that Argo CD's
// cmp-server reads to generate manifests.
type pluginConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version  string `json:"version"`
		Generate struct {
			Command []string `json:"command"`
			Args    []string `json:"args"`
		} `json:"generate"`
	} `json:"spec"`
}

func loadPlugin(t *testing.T) pluginConfig {
	t.Helper()
	b, err := os.ReadFile("plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p pluginConfig
	if err := k8syaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("plugin.yaml: %v", err)
	}
	if p.APIVersion != "argoproj.io/v1alpha1" || p.Kind != "ConfigManagementPlugin" || p.Metadata.Name == "" || len(p.Spec.Generate.Command) == 0 {
		t.Fatalf("plugin.yaml is not a usable ConfigManagementPlugin: %+v", p)
	}
	return p
}

// argo is a repo-server sidecar: a PATH with helm (v3 or v4), kustomize and
// confighash, and Helm homes of its own.
type argo struct {
	plugin pluginConfig
	env    []string
}

func newArgo(t *testing.T, helmVersion string) argo {
	t.Helper()
	tools, home := t.TempDir(), t.TempDir()
	links := map[string]string{
		"helm":       testtools.Tool(t, "helm"+helmVersion),
		"kustomize":  testtools.Tool(t, "kustomize"),
		"confighash": testtools.Tool(t, "confighash"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	a := argo{plugin: loadPlugin(t), env: append([]string{
		"PATH=" + tools + string(os.PathListSeparator) + testtools.BinDir(t) + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
	}, testtools.HelmHomes(home)...)}
	if helmVersion == "4" {
		// The sidecar image would do this once at build time.
		h := testtools.Helm{Version: 4, Bin: links["helm"], Env: a.env}
		h.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
	}
	return a
}

// generate copies app into a fresh checkout at sourcePath and runs the
// plugin's generate command there, as the cmp-server does: the command with
// its args, in the application directory, with the build environment.
// env adds to the build environment (ARGOCD_ENV_* from the Application's
// spec.source.plugin.env).
func (a argo) generate(t *testing.T, app, sourcePath, namespace string, env ...string) (stdout, stderr string, err error) {
	t.Helper()
	checkout := t.TempDir()
	dir := filepath.Join(checkout, sourcePath)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(app)); err != nil {
		t.Fatal(err)
	}
	gen := a.plugin.Spec.Generate
	cmd := exec.Command(gen.Command[0], append(gen.Command[1:], gen.Args...)...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(a.env),
		"ARGOCD_APP_NAME=web",
		"ARGOCD_APP_NAMESPACE="+namespace,
		"ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_REVISION=0123456789abcdef0123456789abcdef01234567",
		"ARGOCD_APP_REVISION_SHORT=0123456",
		"ARGOCD_APP_SOURCE_PATH="+sourcePath,
		"ARGOCD_APP_SOURCE_REPO_URL=https://git.example.com/shop/deploy.git",
		"ARGOCD_APP_SOURCE_TARGET_REVISION=main",
		"KUBE_VERSION=1.33",
		"KUBE_API_VERSIONS=v1,apps/v1,batch/v1,monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor",
	)
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running the generate command: %v", err)
	}
	return out.String(), errb.String(), err
}

// podHashes returns the confighash hash of each workload (on its pod
// template; a Job's on the Job, whose pod template cannot change) in a
// stream, keyed by Kind/name.
func podHashes(t *testing.T, stream string) map[string]string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	if err != nil {
		t.Fatalf("Argo CD could not read the output: %v\n%s", err, stream)
	}
	out := map[string]string{}
	for _, n := range nodes {
		tpl, err := n.Pipe(yaml.Lookup("spec", "template"))
		switch {
		case n.GetKind() == "Job":
			// A Job's pod template cannot change: its hash is on the Job.
			out[n.GetKind()+"/"+n.GetName()] = n.GetAnnotations()["confighash.dev/hash"]
		case err == nil && tpl != nil:
			out[n.GetKind()+"/"+n.GetName()] = tpl.GetAnnotations()["confighash.dev/hash"]
		}
	}
	return out
}

// generateHashed runs the plugin's generate command on app for namespace
// and checks that each workload of hashed (Kind/name) has a hash; it
// returns the manifests and the hash of each workload.
func generateHashed(t *testing.T, a argo, app, namespace string, hashed []string) (string, map[string]string) {
	t.Helper()
	out, stderr, err := a.generate(t, app, "apps/web", namespace)
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr)
	}
	got := podHashes(t, out)
	for _, id := range hashed {
		if !strings.HasPrefix(got[id], "v1-") {
			t.Errorf("%s: hash %q, want one; all: %v", id, got[id], got)
		}
	}
	return out, got
}

func TestGenerate(t *testing.T) {
	root := testtools.RepoRoot(t)
	cases := []struct {
		name, helm, app string
		// hashed and unhashed workloads
		hashed, plain []string
	}{
		{name: "kustomize", helm: "3", app: "app", hashed: []string{"Deployment/web"}},
		{name: "helm 3 chart", helm: "3", app: filepath.Join(root, "examples", "helm"),
			hashed: []string{"Deployment/web-greeter"},
			plain:  []string{"Job/web-greeter-smoke-test"}}, // Helm 3 sends no hooks to the post-renderer
		{name: "helm 4 chart", helm: "4", app: filepath.Join(root, "examples", "helm"),
			hashed: []string{"Deployment/web-greeter", "Job/web-greeter-smoke-test"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newArgo(t, tc.helm)
			_, got := generateHashed(t, a, tc.app, "shop", tc.hashed)
			for _, id := range tc.plain {
				if h, ok := got[id]; !ok || h != "" {
					t.Errorf("%s: present %v, hash %q; want present without hash", id, ok, h)
				}
			}

			// The hash covers the namespace Argo CD deploys to.
			other, stderr, err := a.generate(t, tc.app, "apps/web", "staging")
			if err != nil {
				t.Fatalf("generate: %v\n%s", err, stderr)
			}
			for _, id := range tc.hashed {
				if podHashes(t, other)[id] == got[id] {
					t.Errorf("%s: same hash in namespaces shop and staging", id)
				}
			}
		})
	}
}

// TestGenerateFollowsTheApp edits the app's ConfigMap in git and checks that
// the next sync renders a new hash.
func TestGenerateFollowsTheApp(t *testing.T) {
	a := newArgo(t, "3")
	before, stderr, err := a.generate(t, "app", "apps/web", "shop")
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr)
	}
	edited := filepath.Join(t.TempDir(), "app")
	if err := os.CopyFS(edited, os.DirFS("app")); err != nil {
		t.Fatal(err)
	}
	cm := filepath.Join(edited, "configmap.yaml")
	b, err := os.ReadFile(cm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cm, bytes.Replace(b, []byte("LOG_LEVEL: info"), []byte("LOG_LEVEL: debug"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	after, stderr, err := a.generate(t, edited, "apps/web", "shop")
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr)
	}
	h1, h2 := podHashes(t, before)["Deployment/web"], podHashes(t, after)["Deployment/web"]
	if h1 == "" || h1 == h2 {
		t.Errorf("hash before %q, after editing the ConfigMap %q: want two different hashes", h1, h2)
	}
}

// TestGenerateFails checks that a broken app fails the generate command with
// the reason on stderr and no manifests, so Argo CD never syncs (or prunes
// to) a partial render.
func TestGenerateFails(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(dir string) error
		wants string
	}{
		{"kustomize build fails", func(dir string) error {
			return os.Remove(filepath.Join(dir, "secret.yaml"))
		}, "secret.yaml"},
		{"confighash rejects the Secret", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "secret.yaml"),
				[]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-credentials\ndata:\n  password: not-base64!\n"), 0o644)
		}, "data.password: not valid base64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newArgo(t, "3")
			app := filepath.Join(t.TempDir(), "app")
			if err := os.CopyFS(app, os.DirFS("app")); err != nil {
				t.Fatal(err)
			}
			if err := tc.edit(app); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := a.generate(t, app, "apps/web", "shop")
			if err == nil {
				t.Fatalf("generate succeeded:\n%s", out)
			}
			if strings.TrimSpace(out) != "" {
				t.Errorf("generate printed manifests on failure:\n%s", out)
			}
			if !strings.Contains(stderr, tc.wants) {
				t.Errorf("stderr does not mention %q:\n%s", tc.wants, stderr)
			}
		})
	}
}

// TestGenerateHelmLikeArgoCD checks what Argo CD's built-in Helm does and a
// user moving to the plugin expects: a chart whose dependencies are not
// vendored (charts/ absent) has them built first, and value files named in
// the Application (spec.source.plugin.env HELM_VALUES, which Argo CD passes
// as ARGOCD_ENV_HELM_VALUES) are used, in order, and the chart renders for
// the cluster's version and API versions (KUBE_VERSION, KUBE_API_VERSIONS),
// with Helm 3 and Helm 4.
func TestGenerateHelmLikeArgoCD(t *testing.T) {
	greeter := filepath.Join(testtools.RepoRoot(t), "examples", "helm")
	// An umbrella chart depending on examples/helm by a local path.
	umbrella := filepath.Join(t.TempDir(), "umbrella")
	if err := os.CopyFS(filepath.Join(umbrella, "deps", "greeter"), os.DirFS(greeter)); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n" +
			"- name: greeter\n  version: \">=0.0.0\"\n  repository: file://./deps/greeter\n",
		"values.yaml":      "greeter:\n  greeting: from the umbrella\n",
		"values-prod.yaml": "greeter:\n  env:\n    LOG_LEVEL: warn\n",
		"values-eu.yaml":   "greeter:\n  env:\n    LOG_LEVEL: error\n",
		// What the chart sees of the cluster (KUBE_VERSION and
		// KUBE_API_VERSIONS in the build environment).
		"templates/capabilities.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: capabilities\ndata:\n" +
			"  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n" +
			"  monitoring: {{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1/ServiceMonitor\" | quote }}\n",
	}
	if err := os.MkdirAll(filepath.Join(umbrella, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(umbrella, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, helm := range []string{"3", "4"} {
		t.Run("helm "+helm, func(t *testing.T) {
			a := newArgo(t, helm)
			plain, stderr, err := a.generate(t, umbrella, "apps/web", "shop")
			if err != nil {
				t.Fatalf("generate a chart with an unvendored dependency: %v\n%s", err, stderr)
			}
			h := podHashes(t, plain)["Deployment/web-greeter"]
			if !strings.HasPrefix(h, "v1-") {
				t.Fatalf("Deployment/web-greeter: hash %q; output:\n%s", h, plain)
			}
			if !strings.Contains(plain, "from the umbrella") {
				t.Errorf("the umbrella's values.yaml was not used:\n%s", plain)
			}
			// Argo CD's own Helm renders for the cluster's version and API
			// versions; each Helm's defaults differ (v1.20, v1.37).
			if !strings.Contains(plain, `kube: "v1.33"`) || !strings.Contains(plain, `monitoring: "true"`) {
				t.Errorf("the chart did not see KUBE_VERSION and KUBE_API_VERSIONS:\n%s", plain)
			}
			prod, stderr, err := a.generate(t, umbrella, "apps/web", "shop", "ARGOCD_ENV_HELM_VALUES=values-prod.yaml values-eu.yaml")
			if err != nil {
				t.Fatalf("generate with value files: %v\n%s", err, stderr)
			}
			if !strings.Contains(prod, "LOG_LEVEL: error") || strings.Contains(prod, "LOG_LEVEL: warn") {
				t.Errorf("value files not used in order (values-eu.yaml last):\n%s", prod)
			}
			if podHashes(t, prod)["Deployment/web-greeter"] == h {
				t.Errorf("the value files changed the ConfigMap but not the hash")
			}
			_, stderr, err = a.generate(t, umbrella, "apps/web", "shop", "ARGOCD_ENV_HELM_VALUES=values-missing.yaml")
			if err == nil || !strings.Contains(stderr, "values-missing.yaml") {
				t.Errorf("a missing value file: err %v, stderr %s", err, stderr)
			}
			for _, outside := range []string{"/etc/passwd", "../../secrets.yaml", "deps/../../x.yaml"} {
				out, stderr, err := a.generate(t, umbrella, "apps/web", "shop", "ARGOCD_ENV_HELM_VALUES=values-prod.yaml "+outside)
				if err == nil || !strings.Contains(stderr, "outside the application") || strings.TrimSpace(out) != "" {
					t.Errorf("value file %s: err %v, stderr %s, output %q", outside, err, stderr, out)
				}
			}
		})
	}
}

// TestGenerateCorpus runs the generate command, as the cmp-server does, on
// charts and trees written by other projects: the corpus's promtail chart
// (Helm 3 and Helm 4) and the kube-prometheus manifests under a
// kustomization listing them. What it prints must pass confighash verify
// with the namespace Argo CD deploys to, and a second sync of the same
// commit must print the same bytes (no diff, nothing rolls).
func TestGenerateCorpus(t *testing.T) {
	corpus := testtools.Corpus(t)
	kubePrometheus := t.TempDir()
	files, err := filepath.Glob(filepath.Join(corpus, "kube-prometheus", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kube-prometheus manifests in the corpus: %v", err)
	}
	kustomization := "resources:\n"
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(kubePrometheus, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		kustomization += "- " + filepath.Base(f) + "\n"
	}
	if err := os.WriteFile(filepath.Join(kubePrometheus, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	promtail := filepath.Join(corpus, "charts", "promtail")
	cases := []struct {
		name, helm, app, namespace string
		hashed                     []string
	}{
		{"promtail, helm 3", "3", promtail, "logs", []string{"DaemonSet/web-promtail"}},
		{"promtail, helm 4", "4", promtail, "logs", []string{"DaemonSet/web-promtail"}},
		{"kube-prometheus, kustomize", "3", kubePrometheus, "monitoring",
			[]string{"Deployment/blackbox-exporter", "Deployment/grafana", "Deployment/prometheus-adapter"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newArgo(t, tc.helm)
			out, _ := generateHashed(t, a, tc.app, tc.namespace, tc.hashed)
			verify := testtools.Run(t, "", nil, []byte(out), testtools.Tool(t, "confighash"), "verify", "--namespace", tc.namespace)
			if verify.ExitCode != 0 {
				t.Errorf("confighash verify --namespace %s: exit %d\n%s", tc.namespace, verify.ExitCode, verify.Stderr)
			}
			again, stderr, err := a.generate(t, tc.app, "apps/web", tc.namespace)
			if err != nil {
				t.Fatalf("generate again: %v\n%s", err, stderr)
			}
			if again != out {
				t.Errorf("a second generate of the same app printed other manifests")
			}
		})
	}
}
