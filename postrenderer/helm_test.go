package postrenderer_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/hmackey"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

const (
	hashKey   = "confighash.dev/hash"
	release   = "web"
	namespace = "shop"
)

// helm is one real helm binary with homes of its own, set to run
// bin/confighash as its post-renderer.
type helm struct {
	testtools.Helm
	confighash string
}

// newHelm returns helm v3 or v4; for v4 it installs postrenderer/plugin the
// way a user does.
func newHelm(t *testing.T, version int) helm {
	t.Helper()
	h := helm{Helm: testtools.NewHelm(t, version), confighash: testtools.Tool(t, "confighash")}
	h.Env = append(h.Env, "CONFIGHASH_BIN="+h.confighash)
	if version == 4 {
		h.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
	}
	return h
}

// postRenderer returns the flags that run confighash after rendering: the
// executable for Helm 3, the plugin for Helm 4.
func (h helm) postRenderer() []string {
	pr := "confighash"
	if h.Version == 3 {
		pr = h.confighash
	}
	return []string{"--post-renderer", pr, "--post-renderer-args", "--namespace=" + namespace}
}

// template runs helm template on chart, with confighash as the post-renderer
// when post is set, and fails the test unless it succeeds.
func (h helm) template(t *testing.T, chart string, post bool, args ...string) string {
	t.Helper()
	args = append([]string{"template", release, chart, "--namespace", namespace}, args...)
	if post {
		args = append(args, h.postRenderer()...)
	}
	res := h.Run(t, nil, args...)
	if res.ExitCode != 0 {
		t.Fatalf("%s %s: exit %d\n%s", h, strings.Join(args, " "), res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// hashes returns the confighash hash of each workload (testtools.TemplateHashes).
func hashes(objs map[string]*yaml.RNode) map[string]string {
	return testtools.TemplateHashes(slices.Collect(maps.Values(objs)))
}

// hooks returns the ids of Helm hook objects.
func hooks(objs map[string]*yaml.RNode) map[string]bool {
	out := map[string]bool{}
	for id, n := range objs {
		if n.GetAnnotations()["helm.sh/hook"] != "" {
			out[id] = true
		}
	}
	return out
}

// krmHashes runs the same objects through bin/confighash as a KRM function
// (a ResourceList with a ConfigHash functionConfig naming the namespace).
func krmHashes(t *testing.T, confighash, stream string) map[string]string {
	t.Helper()
	return testtools.PodHashes(t, testtools.RunKRM(t, confighash, stream, namespace))
}

// sources returns the sorted "# Source:" lines of helm template output.
func sources(out string) []string {
	var lines []string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "# Source: ") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	slices.Sort(lines)
	return lines
}

// copyChart copies a chart into a temporary directory for a test to edit.
func copyChart(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// lineOf returns the line of text (counted from 1) that holds the nth
// (from 0) occurrence of marker.
func lineOf(t *testing.T, text, marker string, nth int) int {
	t.Helper()
	at := 0
	for range nth + 1 {
		i := strings.Index(text[at:], marker)
		if i < 0 {
			t.Fatalf("%q: occurrence %d not in:\n%s", marker, nth, text)
		}
		at += i + len(marker)
	}
	return strings.Count(text[:at], "\n") + 1
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exampleChart(t *testing.T) string {
	return filepath.Join(testtools.RepoRoot(t), "examples", "helm")
}

func promtail(t *testing.T) string {
	return filepath.Join(testtools.Corpus(t), "charts", "promtail")
}

// TestHelmMatchesKRM renders each chart with Helm 3 and Helm 4 as
// post-renderers and compares every workload's hash with the KRM function's
// hash for the same objects.
func TestHelmMatchesKRM(t *testing.T) {
	cases := []struct {
		name  string
		chart func(*testing.T) string
		args  []string
		// hashed workloads that must be there, so an empty result fails
		want []string
	}{
		{"example chart", exampleChart, nil,
			[]string{"Deployment//web-greeter", "Job//web-greeter-smoke-test"}},
		{"promtail, config in a Secret", promtail, nil,
			[]string{"DaemonSet/shop/web-promtail"}},
		{"promtail, config in a ConfigMap", promtail, []string{"--set", "configmap.enabled=true"},
			[]string{"DaemonSet/shop/web-promtail"}},
		// Values that switch on a second workload, a sidecar and extra
		// objects (rendered through tpl) that both workloads consume.
		{"promtail, a Deployment too, a sidecar and extra objects", promtail, []string{
			"--set", "deployment.enabled=true,configmap.enabled=true,sidecar.configReloader.enabled=true",
			"--set-json", `extraObjects=[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"{{ .Release.Name }}-extra"},"data":{"a":"1","b":"two\n"}},` +
				`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"{{ .Release.Name }}-extra"},"stringData":{"token":"abc"}}]`,
			"--set-json", `extraEnvFrom=[{"configMapRef":{"name":"web-extra"}}]`,
			"--set-json", `sidecar.configReloader.extraEnvFrom=[{"secretRef":{"name":"web-extra"}}]`,
			"--set-json", `extraVolumes=[{"name":"extra","configMap":{"name":"web-extra","items":[{"key":"b","path":"b"}]}}]`,
			"--set-json", `extraVolumeMounts=[{"name":"extra","mountPath":"/extra"}]`,
		}, []string{"DaemonSet/shop/web-promtail", "Deployment/shop/web-promtail"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chart := tc.chart(t)
			h3, h4 := newHelm(t, 3), newHelm(t, 4)
			plain := h3.template(t, chart, false, tc.args...)
			krm := krmHashes(t, h3.confighash, plain)
			for _, id := range tc.want {
				if krm[id] == "" {
					t.Errorf("KRM path: %s has no hash; hashed: %v", id, krm)
				}
			}

			// Helm 4 sends hooks too: the same workloads, the same hashes.
			out4 := h4.template(t, chart, true, tc.args...)
			got4 := hashes(testtools.Objects(t, out4))
			assertByWorkload(t, "helm4", got4, krm)

			// Helm 4 rebuilds its files from the postrender-filename
			// annotation: if confighash lost it, the sources would read
			// generated-by-postrender-N.yaml.
			if got, want := sources(out4), sources(h4.template(t, chart, false, tc.args...)); !slices.Equal(got, want) {
				t.Errorf("helm4 sources after post-rendering:\n%v\nwant\n%v", got, want)
			}

			// Helm 3 sends no hooks: hooks keep no hash, the rest match.
			isHook := hooks(testtools.Objects(t, plain))
			want3 := map[string]string{}
			for id, h := range krm {
				if !isHook[id] {
					want3[id] = h
				}
			}
			got3 := hashes(testtools.Objects(t, h3.template(t, chart, true, tc.args...)))
			assertByWorkload(t, "helm3", got3, want3)
			for id, h := range got3 {
				if got4[id] != h {
					t.Errorf("%s: helm3 hash %q, helm4 hash %q", id, h, got4[id])
				}
			}
		})
	}
}

// TestHashFollowsContent changes values and charts and checks which
// workloads' hashes move, under both Helm versions.
func TestHashFollowsContent(t *testing.T) {
	const (
		deployment = "Deployment//web-greeter"
		hookJob    = "Job//web-greeter-smoke-test"
		daemonSet  = "DaemonSet/shop/web-promtail"
	)
	cases := []struct {
		name  string
		chart func(*testing.T) string
		edit  func(t *testing.T, chart string) // changes the chart copy
		args  []string
		moved []string // workloads whose hash changes; every other stays
	}{
		{name: "greeting in the ConfigMap", chart: exampleChart,
			args: []string{"--set", "greeting=Bonjour"}, moved: []string{deployment, hookJob}},
		{name: "a key the hook does not read", chart: exampleChart,
			args: []string{"--set", "env.LOG_LEVEL=debug"}, moved: []string{deployment}},
		{name: "the Secret", chart: exampleChart,
			args: []string{"--set", "password=s3cret"}, moved: []string{deployment}},
		{name: "chart version bump changes labels only", chart: exampleChart,
			edit: func(t *testing.T, chart string) {
				path := filepath.Join(chart, "Chart.yaml")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, path, strings.Replace(string(b), "version: 0.1.0", "version: 0.2.0", 1))
			}},
		{name: "promtail config", chart: promtail,
			args: []string{"--set", "config.logLevel=debug"}, moved: []string{daemonSet}},
		{name: "promtail Secret labels only", chart: promtail,
			args: []string{"--set", "secret.labels.team=logs"}},
	}
	for _, version := range []int{3, 4} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("helm%d/%s", version, tc.name), func(t *testing.T) {
				h := newHelm(t, version)
				chart := tc.chart(t)
				before := hashes(testtools.Objects(t, h.template(t, chart, true)))
				if len(before) == 0 {
					t.Fatal("no workload got a hash")
				}
				if tc.edit != nil {
					chart = copyChart(t, chart)
					tc.edit(t, chart)
				}
				after := hashes(testtools.Objects(t, h.template(t, chart, true, tc.args...)))
				for id, b := range before {
					moved := slices.Contains(tc.moved, id)
					switch {
					case after[id] == "":
						t.Errorf("%s lost its hash", id)
					case moved && after[id] == b:
						t.Errorf("%s kept hash %s; it should change", id, b)
					case !moved && after[id] != b:
						t.Errorf("%s hash changed %s -> %s; it should not", id, b, after[id])
					}
				}
				for _, id := range tc.moved {
					if _, ok := before[id]; !ok && (version != 3 || id != hookJob) {
						t.Errorf("%s has no hash to compare", id)
					}
				}
			})
		}
	}
}

// TestFailureReachesUser feeds the post-renderer bad input under both Helm
// versions: helm must fail, print no manifest, and show confighash's reason.
// An error about a document names its template file under both versions.
// Under Helm 3 a line it names is the line of `helm template`'s output
// (what Helm 3 pipes to its post-renderer); Helm 4 writes the documents
// anew, with its annotation, before its post-renderer runs, so there an
// error names the object and field and no line of a text nobody sees.
func TestFailureReachesUser(t *testing.T) {
	const badDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: broken\nspec:\n" +
		"  selector: {matchLabels: {app: broken}}\n  template:\n    metadata: {labels: {app: broken}}\n" +
		"    spec:\n      containers:\n      - name: c\n        image: nginx\n        envFrom: 5\n"
	cases := []struct {
		name     string
		versions []int
		edit     func(t *testing.T, chart string) // breaks the chart copy
		args     []string
		env      []string
		want     string // in helm's standard error
		// lines, when set, finds the lines the error names in the chart's
		// plain render (helm template without a post-renderer): Helm 3's
		// message names them, Helm 4's names no line.
		lines func(plain string) string
	}{
		{name: "Secret data that is not base64", versions: []int{3, 4},
			edit: func(t *testing.T, chart string) {
				writeFile(t, filepath.Join(chart, "templates", "bad-secret.yaml"),
					"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-token\ndata:\n  token: not-base64!\n")
			},
			want: "data.token: not valid base64"},
		{name: "values that make a ConfigMap value a map", versions: []int{3, 4},
			edit: func(t *testing.T, chart string) {
				writeFile(t, filepath.Join(chart, "bad-values.yaml"), "env:\n  FEATURES:\n    beta: true\n")
			},
			args: []string{"--values", "bad-values.yaml"},
			want: "data.FEATURES: expected a string"},
		{name: "a pod spec field of the wrong type", versions: []int{3, 4},
			edit: func(t *testing.T, chart string) {
				writeFile(t, filepath.Join(chart, "templates", "broken.yaml"), badDeployment)
			},
			want: "greeter/templates/broken.yaml): spec.template.spec: ",
			lines: func(plain string) string {
				return fmt.Sprintf("line %d: containers[0].envFrom: expected a list", lineOf(t, plain, "envFrom: 5", 0))
			}},
		{name: "a ConfigMap key written twice", versions: []int{3, 4},
			edit: func(t *testing.T, chart string) {
				writeFile(t, filepath.Join(chart, "templates", "twice.yaml"),
					"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twice\ndata:\n  a: \"1\"\n  a: \"2\"\n")
			},
			want: `greeter/templates/twice.yaml: data: key "a" appears twice`,
			lines: func(plain string) string {
				return fmt.Sprintf("(lines %d and %d)", lineOf(t, plain, `a: "1"`, 0), lineOf(t, plain, `a: "2"`, 0))
			}},
		{name: "a ConfigMap written twice", versions: []int{3, 4},
			edit: func(t *testing.T, chart string) {
				cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twice\ndata: {a: \"1\"}\n"
				writeFile(t, filepath.Join(chart, "templates", "twice.yaml"), cm+"---\n"+cm)
			},
			want: "greeter/templates/twice.yaml): the stream holds this ConfigMap twice"},
		{name: "confighash binary missing", versions: []int{4},
			env:  []string{"CONFIGHASH_BIN=/nonexistent/confighash"},
			want: "cannot find the confighash binary at /nonexistent/confighash"},
	}
	for _, tc := range cases {
		for _, version := range tc.versions {
			t.Run(fmt.Sprintf("helm%d/%s", version, tc.name), func(t *testing.T) {
				h := newHelm(t, version)
				chart := copyChart(t, exampleChart(t))
				if tc.edit != nil {
					tc.edit(t, chart)
				}
				args := append([]string{"template", release, chart, "--namespace", namespace}, tc.args...)
				args = append(args, h.postRenderer()...)
				res := testtools.Run(t, chart, append(slices.Clone(h.Env), tc.env...), nil, h.Bin, args...)
				if res.ExitCode == 0 {
					t.Fatalf("helm succeeded; stdout:\n%s", res.Stdout)
				}
				if strings.TrimSpace(res.Stdout) != "" {
					t.Errorf("helm printed manifests on failure:\n%s", res.Stdout)
				}
				if !strings.Contains(res.Stderr, tc.want) {
					t.Errorf("stderr does not say %q:\n%s", tc.want, res.Stderr)
				}
				if tc.lines == nil {
					return
				}
				plain := testtools.Run(t, chart, h.Env, nil, h.Bin, "template", release, chart, "--namespace", namespace).Stdout
				lines := tc.lines(plain)
				if version == 3 && !strings.Contains(res.Stderr, lines) {
					t.Errorf("Helm 3: stderr does not name the lines of helm template's output, %q:\n%s", lines, res.Stderr)
				}
				if version == 4 && regexp.MustCompile(`\bline \d|\blines \d`).MatchString(res.Stderr) {
					t.Errorf("Helm 4: stderr names a line of the text Helm 4 writes for its post-renderer:\n%s", res.Stderr)
				}
			})
		}
	}
}

// TestTemplateLayouts renders a chart whose templates are laid out as real
// charts lay them out (postrenderer/testdata/layouts: if blocks that leave
// empty documents, comment-only documents, "---" after a comment, "...",
// CRLF line ends, tabs in block scalars). Helm 3's plain render is exactly
// what its post-renderer reads: stream mode edits only annotation lines of
// it, agrees with the KRM function, and Helm 3 prints that output; Helm 4,
// which re-serialises the templates, gives the same hash.
func TestTemplateLayouts(t *testing.T) {
	chart := filepath.Join(testtools.RepoRoot(t), "postrenderer", "testdata", "layouts")
	h3, h4 := newHelm(t, 3), newHelm(t, 4)
	plain := h3.template(t, chart, false)
	if !strings.Contains(plain, "\r\n") || !strings.Contains(plain, "\n...\n") {
		t.Fatalf("the render lost the layouts under test:\n%q", plain)
	}
	opts := inject.Options{DefaultNamespace: namespace}
	if !differential(t, []byte(plain), opts) {
		t.Fatal("stream mode and the KRM function refused the render")
	}
	want, _, err := postrenderer.Process([]byte(plain), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := h3.template(t, chart, true); got != string(want) {
		t.Errorf("helm3 printed\n%q\nstream mode wrote\n%q", got, want)
	}
	hash := hashes(testtools.Objects(t, string(want)))
	for _, id := range []string{"Deployment//web-odd", "Job//web-json", "Job//web-listed", "Job//web-flow", "CronJob//web-cron"} {
		if hash[id] == "" {
			t.Errorf("%s is not hashed: %v", id, hash)
		}
	}
	out4 := h4.template(t, chart, true)
	assertByWorkload(t, "helm4", hashes(testtools.Objects(t, out4)), hash)
	assertByWorkload(t, "krm", hashes(testtools.Objects(t, testtools.RunKRM(t, h3.confighash, plain, namespace))), hash)
	for what, out := range map[string]string{"stream": string(want), "helm4": out4} {
		assertNoJobTemplateHash(t, what, out)
		assertSecondRunSame(t, []byte(out), opts, "%s: a second run changes nothing", what)
	}

	// Keyed: the key id goes where the hash goes, on a Job the Job itself.
	keyFile := filepath.Join(t.TempDir(), "key")
	writeFile(t, keyFile, "a key")
	keyed, _, err := postrenderer.Process([]byte(plain), inject.Options{DefaultNamespace: namespace, Key: []byte("a key")})
	require.NoError(t, err)
	for _, h := range []helm{h3, h4} {
		h.Env = append(slices.Clone(h.Env), hmackey.EnvFile+"="+keyFile)
		out := h.template(t, chart, true)
		if h.Version == 3 {
			assert.Equal(t, string(keyed), out, "helm3 keyed")
		}
		assertByWorkload(t, fmt.Sprintf("helm%d keyed", h.Version), hashes(testtools.Objects(t, out)), hashes(testtools.Objects(t, string(keyed))))
		assertNoJobTemplateHash(t, fmt.Sprintf("helm%d keyed", h.Version), out)
		for id, o := range testtools.Objects(t, out) {
			if o.GetKind() == "Job" && o.GetAnnotations()["confighash.dev/key-id"] != hashing.KeyID([]byte("a key")) {
				t.Errorf("helm%d keyed: %s: key id %q on the Job", h.Version, id, o.GetAnnotations()["confighash.dev/key-id"])
			}
		}
	}
}

// assertNoJobTemplateHash fails the test when a Job of stream carries a
// confighash annotation on its pod template, which the API server refuses
// to change.
func assertNoJobTemplateHash(t *testing.T, what, stream string) {
	t.Helper()
	for id, o := range testtools.Objects(t, stream) {
		if o.GetKind() != "Job" {
			continue
		}
		tpl, err := o.Pipe(yaml.Lookup("spec", "template", "metadata", "annotations"))
		require.NoError(t, err)
		if tpl != nil && strings.Contains(tpl.MustString(), "confighash.dev/") {
			t.Errorf("%s: %s: confighash annotations on the pod template:\n%s", what, id, tpl.MustString())
		}
	}
}

// TestOutputDir: helm template --output-dir writes the files Helm 4 gets
// back from its post-renderer, with the hashes of the printed render. Helm 3
// writes them before its post-renderer runs and hands it an empty stream, so
// its files carry no hash (docs/helm.md says so).
func TestOutputDir(t *testing.T) {
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", version), func(t *testing.T) {
			h := newHelm(t, version)
			want := hashes(testtools.Objects(t, h.template(t, exampleChart(t), true)))
			if len(want) == 0 {
				t.Fatal("the printed render has no hash")
			}
			dir := t.TempDir()
			h.template(t, exampleChart(t), true, "--output-dir", dir)
			files, err := filepath.Glob(filepath.Join(dir, "greeter", "templates", "*.yaml"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no files written under %s: %v", dir, err)
			}
			var stream strings.Builder
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				stream.WriteString("---\n" + string(b))
			}
			if version == 3 {
				want = map[string]string{}
			}
			assertByWorkload(t, h.String(), hashes(testtools.Objects(t, stream.String())), want)
		})
	}
}

// TestPluginFindsCheckoutBinary runs the Helm 4 plugin with no CONFIGHASH_BIN
// and no confighash on PATH: it must find bin/confighash of the checkout it
// was installed from, through the link helm plugin install made.
func TestPluginFindsCheckoutBinary(t *testing.T) {
	h := newHelm(t, 4)
	if filepath.Dir(h.confighash) != filepath.Join(testtools.RepoRoot(t), "bin") {
		t.Skipf("the confighash under test, %s, is not the checkout's bin/confighash", h.confighash)
	}
	args := append([]string{"template", release, exampleChart(t), "--namespace", namespace}, h.postRenderer()...)
	res := h.Run(t, []string{"CONFIGHASH_BIN=", "PATH=/usr/bin:/bin"}, args...)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
	}
	if hashes(testtools.Objects(t, res.Stdout))["Deployment//web-greeter"] == "" {
		t.Errorf("no hash on the Deployment:\n%s", res.Stdout)
	}
}

// startControlPlane starts a local kube-apiserver and controller manager and
// returns its kubeconfig and a client. Without the binaries it skips, unless
// CONFIGHASH_REQUIRE_CONTROLPLANE is set.
func startControlPlane(t *testing.T) (string, kubernetes.Interface) {
	t.Helper()
	cp := cptest.Private(t)
	return cp.KubeconfigPath(), kubernetes.NewForConfigOrDie(cp.RESTConfig())
}

// TestInstall runs helm install and upgrade against a real API server: the
// hash reaches the cluster, a config change rolls the Deployment, a
// labels-only chart bump leaves its spec alone, a change of the Secret alone
// rolls it, helm rollback brings the earlier hash and ReplicaSet back, and a
// failed post-render leaves the release and its objects as they were.
func TestInstall(t *testing.T) {
	kubeconfig, client := startControlPlane(t)
	ctx := t.Context()
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", version), func(t *testing.T) {
			h := newHelm(t, version)
			h.Env = append(h.Env, "KUBECONFIG="+kubeconfig)
			name := fmt.Sprintf("web%d", version)
			deploy := name + "-greeter"
			helmRun := func(verb, chart string, args ...string) testtools.Result {
				all := append([]string{verb, name, chart, "--namespace", namespace, "--create-namespace", "--no-hooks"}, args...)
				return h.Run(t, nil, append(all, h.postRenderer()...)...)
			}
			mustRun := func(verb, chart string, args ...string) {
				if res := helmRun(verb, chart, args...); res.ExitCode != 0 {
					t.Fatalf("helm %s: exit %d\n%s", verb, res.ExitCode, res.Stderr)
				}
			}
			podHash := func() (string, int64) {
				d, err := client.AppsV1().Deployments(namespace).Get(ctx, deploy, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return d.Spec.Template.Annotations[hashKey], d.Generation
			}

			chart := exampleChart(t)
			mustRun("install", chart)
			installed, _ := podHash()
			if installed == "" {
				t.Fatal("the installed Deployment has no hash")
			}

			mustRun("upgrade", chart, "--set", "greeting=Bonjour")
			changed, gen := podHash()
			if changed == installed {
				t.Errorf("a ConfigMap change kept hash %s", installed)
			}
			waitForReplicaSets(t, client, name, 2)

			bumped := copyChart(t, chart)
			path := filepath.Join(bumped, "Chart.yaml")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, strings.Replace(string(b), "version: 0.1.0", "version: 0.2.0", 1))
			mustRun("upgrade", bumped, "--set", "greeting=Bonjour")
			if hash, g := podHash(); hash != changed || g != gen {
				t.Errorf("a labels-only chart bump changed the pod template: hash %s -> %s, generation %d -> %d", changed, hash, gen, g)
			}

			// Only the Secret changes: the Deployment rolls. helm rollback
			// applies revision 3 as it was stored, hash included, so the
			// Deployment controller goes back to that ReplicaSet.
			mustRun("upgrade", bumped, "--set", "greeting=Bonjour", "--set", "password=rotated")
			if hash, _ := podHash(); hash == changed || hash == "" {
				t.Errorf("a Secret change gave hash %q, was %s", hash, changed)
			}
			waitForReplicaSets(t, client, name, 3)
			if res := h.Run(t, nil, "rollback", name, "3", "--namespace", namespace); res.ExitCode != 0 {
				t.Fatalf("helm rollback: exit %d\n%s", res.ExitCode, res.Stderr)
			}
			if hash, _ := podHash(); hash != changed {
				t.Errorf("after helm rollback: hash %s, want revision 3's %s", hash, changed)
			}
			waitForRollout(t, client, deploy)
			waitForReplicaSets(t, client, name, 3)

			before := h.Run(t, nil, "history", name, "--namespace", namespace)
			writeFile(t, filepath.Join(bumped, "bad-values.yaml"), "env:\n  FEATURES:\n    beta: true\n")
			res := helmRun("upgrade", bumped, "--set", "greeting=Hallo", "--values", filepath.Join(bumped, "bad-values.yaml"))
			if res.ExitCode == 0 || !strings.Contains(res.Stderr, "data.FEATURES: expected a string") {
				t.Errorf("upgrade with bad values: exit %d, stderr:\n%s", res.ExitCode, res.Stderr)
			}
			if after := h.Run(t, nil, "history", name, "--namespace", namespace); after.Stdout != before.Stdout {
				t.Errorf("a failed upgrade changed the release history:\n%s\nwas\n%s", after.Stdout, before.Stdout)
			}
			cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, deploy, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if cm.Data["GREETING"] != "Bonjour" {
				t.Errorf("a failed upgrade changed the ConfigMap: GREETING=%q", cm.Data["GREETING"])
			}
		})
	}
}

// waitForRollout polls until the Deployment controller has acted on the
// Deployment's current generation.
func waitForRollout(t *testing.T, client kubernetes.Interface, deploy string) {
	t.Helper()
	kubetest.Eventually(t, time.Minute, 100*time.Millisecond, "the Deployment controller to observe "+deploy, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, deploy, metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == d.Generation, err
	})
}

// waitForReplicaSets polls until the release's Deployment has n ReplicaSets:
// the Deployment controller made one per pod template.
func waitForReplicaSets(t *testing.T, client kubernetes.Interface, instance string, n int) {
	t.Helper()
	selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + instance}
	kubetest.Eventually(t, time.Minute, 100*time.Millisecond, fmt.Sprintf("%d ReplicaSets of %s", n, instance), func(ctx context.Context) (bool, error) {
		list, err := client.AppsV1().ReplicaSets(namespace).List(ctx, selector)
		return err == nil && len(list.Items) == n, err
	})
}
