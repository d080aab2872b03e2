package examples_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// Helm's own test charts, in the Go modules of the Helm versions bin/helm3
// and bin/helm4 are built from: charts nobody wrote for confighash, made to
// probe Helm's corners (library charts, subcharts, crds/, NOTES, schemas,
// archives, charts Helm refuses).
var helmTestCharts = map[int]chartIn{
	3: {"helm.sh/helm/v3@v3.22.0", "cmd/helm/testdata/testcharts"},
	4: {"helm.sh/helm/v4@v4.3.1", "pkg/cmd/testdata/testcharts"},
}

// helmRefuses are the test charts helm template refuses with or without a
// post-renderer, and a part of Helm's reason.
var helmRefuses = map[string]string{
	"chart-bad-requirements":                         "cannot load Chart.yaml",
	"chart-bad-type":                                 "chart.metadata.type must be application or library",
	"lib-chart":                                      "chart.metadata.type must be application or library",
	"chart-missing-deps":                             "missing in charts/ directory: reqsubchart2",
	"issue-7233":                                     "missing in charts/ directory: alpine",
	"chart-with-bad-subcharts":                       "chart.metadata.name is required",
	"chart-with-schema-and-subchart":                 "missing property 'lastname'",
	"chart-with-schema-negative":                     "missing property 'employmentInfo'",
	"chart-with-template-with-invalid-yaml":          "chart-with-template-with-invalid-yaml/templates/alpine-pod.yaml",
	"chart-with-template-with-invalid-template-expr": "at <b64enc>",
	"issue1979":                                      "nil pointer evaluating interface {}.Name",
	"upgradetest":                                    "Chart.yaml",
	"signtest-0.1.0.tgz.prov":                        "does not appear to be a gzipped archive",
	"compressedchart-0.1.0.tar.gz":                   "compressedchart/templates/template.tpl",
	"compressedchart-0.1.0.tgz":                      "compressedchart/templates/template.tpl",
	"compressedchart-0.2.0.tgz":                      "compressedchart/templates/template.tpl",
	"compressedchart-0.3.0.tgz":                      "compressedchart/templates/template.tpl",
	"compressedchart-with-hyphens-0.1.0.tgz":         "compressedchart-with-hyphens/templates/template.tpl",
}

// helmTestChartArgs are flags a test chart is made for.
var helmTestChartArgs = map[string][]string{
	"chart-with-schema-negative-skip-validation": {"--skip-schema-validation"},
}

// TestHelmTestCharts renders every chart of Helm's testdata with the Helm
// it ships with, with and without confighash, as is and with
// --include-crds --skip-tests, and checks what checkPostRender checks; a
// chart Helm refuses must be refused the same way with confighash.
func TestHelmTestCharts(t *testing.T) {
	t.Parallel()
	eachHelmWithIdentity(t, "", func(t *testing.T, h testtools.Helm) {
		dir := filepath.Join(testtools.ModuleDir(t, helmTestCharts[h.Version].module), helmTestCharts[h.Version].path)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Greater(t, len(entries), 30, "Helm's test charts")
		for _, e := range entries {
			t.Run(e.Name(), func(t *testing.T) {
				t.Parallel()
				chart := filepath.Join(dir, e.Name())
				for _, extra := range [][]string{nil, {"--include-crds", "--skip-tests"}} {
					r := checkPostRender(t, h, chart, false, append(slices.Clone(helmTestChartArgs[e.Name()]), extra...)...)
					why, refused := helmRefuses[e.Name()]
					assert.Equal(t, refused, r.exitCode != 0, "%s %v: refused (exit %d): %s", h, extra, r.exitCode, r.stderr)
					if refused {
						assert.Contains(t, r.stderr, why, "%s %v", h, extra)
					}
				}
			})
		}
	})
}

// helmName names a Helm version as the tests do: helm3, helm4.
func helmName(version int) string { return fmt.Sprintf("helm%d", version) }

// eachHelmWithIdentity runs f in a parallel subtest for Helm 3 and for Helm
// 4, named prefix+helmName, with helmWithIdentity of that version.
func eachHelmWithIdentity(t *testing.T, prefix string, f func(t *testing.T, h testtools.Helm)) {
	for _, version := range []int{3, 4} {
		t.Run(prefix+helmName(version), func(t *testing.T) {
			t.Parallel()
			f(t, helmWithIdentity(t, version))
		})
	}
}

// helmWithIdentity is realHelm, and for Helm 4 also a post-renderer plugin
// named identity that writes back what it reads: Helm 4 parses and writes
// every document anew around any post-renderer, so the identity plugin's
// render is what confighash's must equal but for its annotations.
func helmWithIdentity(t *testing.T, version int) testtools.Helm {
	t.Helper()
	h := realHelm(t, version)
	if version == 4 {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(identityPlugin), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "identity.sh"), []byte("#!/bin/sh\nexec cat\n"), 0o755))
		h.InstallPlugin(t, dir)
	}
	return h
}

const identityPlugin = `apiVersion: v1
type: postrenderer/v1
name: identity
version: 0.1.0
runtime: subprocess
runtimeConfig:
  platformCommand:
    - command: ${HELM_PLUGIN_DIR}/identity.sh
`

// postRender is one helm template run with confighash.
type postRender struct {
	exitCode int
	stderr   string
	// hashes are the confighash.dev/hash values by Kind/namespace/name.
	hashes map[string]string
}

// checkPostRender runs helm template on chart with args, without a
// post-renderer, with confighash, and for Helm 4 with the identity plugin,
// and checks that:
//   - the exit status is the same, and a refusal is Helm's own, word for word
//     (Helm 4's when a post-renderer is set: it parses the templates first);
//   - confighash only adds its annotation lines to what Helm prints (Helm 3's
//     bytes; Helm 4's identity render), comments and # Source: lines
//     included, and the objects equal those without a post-renderer;
//   - unless filtered (--show-only and --no-hooks print less than Helm
//     sends its post-renderer), every workload that reads a config in what
//     Helm sends has the hash computed independently, and confighash verify
//     passes on it;
//   - no line of standard error is new but confighash's, and none holds a
//     value of a Secret of the render.
func checkPostRender(t *testing.T, h testtools.Helm, chart string, filtered bool, args ...string) postRender {
	t.Helper()
	base := append([]string{"template", "web", chart, "--namespace", realNamespace}, args...)
	plain := h.Run(t, nil, base...)
	res := h.Run(t, nil, append(slices.Clone(base), realPostRenderer(t, h)...)...)
	r := postRender{exitCode: res.ExitCode, stderr: res.Stderr}
	what := h.String() + " " + strings.Join(args, " ")
	require.Equal(t, plain.ExitCode, res.ExitCode, "%s: exit status with confighash; stderr:\n%s", what, res.Stderr)

	// The render confighash's output must equal but for its lines: Helm
	// 3's own; Helm 4's through a post-renderer that changes nothing.
	same := plain
	if h.Version == 4 {
		same = h.Run(t, nil, append(slices.Clone(base), "--post-renderer", "identity")...)
	}
	if res.ExitCode != 0 {
		assert.Empty(t, strings.TrimSpace(res.Stdout), "%s: output of a refused render", what)
		want, got := same.Stderr, res.Stderr
		if strings.HasPrefix(want, "panic: ") {
			// Helm crashed (Helm 4 on the chart v3 format of its own
			// test data): the trace's addresses and argument counts
			// differ from run to run, the panic itself does not.
			want, _, _ = strings.Cut(want, "\n")
			got, _, _ = strings.Cut(got, "\n")
		}
		assert.Equal(t, want, got, "%s: Helm's refusal", what)
		return r
	}
	if h.Version == 4 && same.ExitCode != 0 {
		// Helm 4 refuses an empty output of any plugin; confighash's
		// wrapper writes a comment for an empty stream. (Helm 4 prints
		// the chart's crds/ with --include-crds, but sends them to no
		// post-renderer.)
		require.Contains(t, same.Stderr, `post-renderer "identity" produced empty output`, what)
	} else if d := onlyInsertedLines(same.Stdout, withoutFlowAnnotations(res.Stdout)); d != "" {
		t.Errorf("%s: the render differs in more than confighash's annotations: %s", what, d)
	}
	// Helm 4 writes every document anew around any post-renderer (a
	// folded block with a tab-led line gains blank lines): the objects it
	// installs are those of the render through identity.
	objects := plain.Stdout
	if h.Version == 4 && same.ExitCode == 0 {
		objects = same.Stdout
	}
	assert.Equal(t, realObjects(t, objects), realObjects(t, res.Stdout), "%s: the objects without confighash's annotations", what)
	assert.Equal(t, objectSources(plain.Stdout), objectSources(res.Stdout), "%s: the # Source: lines of the objects", what)

	for _, line := range strings.Split(strings.TrimSpace(res.Stderr), "\n") {
		if line != "" && !strings.HasPrefix(line, "confighash: ") {
			assert.Contains(t, plain.Stderr, line, "%s: a line on standard error that Helm does not print without confighash", what)
		}
	}
	for _, v := range secretTexts(t, plain.Stdout, realNamespace) {
		assert.NotContains(t, res.Stderr, v, "%s: a Secret value on standard error", what)
	}

	r.hashes = namespaced(testtools.PodHashes(t, configsAndWorkloads(res.Stdout)))
	if filtered {
		return r
	}
	sent := helmSends(t, res.Stdout, h.Version, true)
	assertIndependent(t, what, configsAndWorkloads(sent))
	if len(realObjects(t, sent)) > 0 { // verify refuses an empty stream: a failed render
		v := testtools.Run(t, "", nil, []byte(sent), testtools.Tool(t, "confighash"), "verify", "--namespace", realNamespace)
		assert.Zero(t, v.ExitCode, "%s: confighash verify: %s%s", what, v.Stdout, v.Stderr)
	}
	return r
}

// flowAnnotations match confighash's annotations written into a flow
// mapping (a JSON template, "metadata: {labels: ...}"; keys double-quoted
// or plain, as the mapping's are), and the annotations mapping that holds
// only them.
var flowAnnotations = regexp.MustCompile(`"?annotations"?: \{("?confighash\.dev/(hash|external)"?: "[^"]*"(, )?)+\}, |"?confighash\.dev/(hash|external)"?: "[^"]*", `)

// withoutFlowAnnotations removes what flowAnnotations match.
func withoutFlowAnnotations(stream string) string {
	return flowAnnotations.ReplaceAllString(stream, "")
}

// objectSources returns the # Source: lines of the documents of a helm
// template output that hold an object; Helm 4 drops a document of comments
// only around any post-renderer.
func objectSources(stream string) []string {
	var out []string
	for _, d := range testtools.Documents(stream) {
		src, content := "", false
		for line := range strings.Lines(d) {
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "# Source: "):
				src = trimmed
			case trimmed != "" && !strings.HasPrefix(trimmed, "#"):
				content = true
			}
		}
		if content {
			out = append(out, src)
		}
	}
	slices.Sort(out)
	return out
}

// helmPatterns (testdata/helm/patterns) are templates added to a copy of
// Helm's "subchart" test chart (subcharts, crds/, NOTES.txt, a test hook Pod
// reading a test hook ConfigMap), written as Helm's docs write them: a
// Secret from values, a ConfigMap through the library chart's merge helper
// (the "common" library of Helm's chart-with-template-lib-dep), a Deployment
// with checksum/config that reads both and an image pull Secret the release
// does not hold, a CronJob whose pod template has "metadata: {}" and reads a
// pre-install, pre-upgrade hook ConfigMap, a weighted hook Job with a delete
// policy, a test Job, and a DaemonSet in a subchart reading a key of the
// parent's Secret, and NOTES.txt in the subchart.
var helmPatterns = filepath.Join("..", "testdata", "helm", "patterns")

// helmPatternsValues turn on the chart's own ConfigMap (templates/subdir)
// and give the values the templates read.
var helmPatternsValues = []string{
	"--set", "configmap.enabled=true", "--set", "app.password=CANARY-hunter2",
	"--set", "app.level=info", "--set-string", "app.schedule=@daily",
}

// The workloads of helmPatterns.
const (
	patDeployment = "Deployment/shop/web-app"
	patDaemonSet  = "DaemonSet/shop/web-worker"
	patCronJob    = "CronJob/shop/web-report"
	patHookJob    = "Job/shop/web-migrate"
	patTestJob    = "Job/shop/web-test-job"
)

// helmPatternsChart copies Helm's subchart test chart and the common
// library chart, and adds helmPatterns.
func helmPatternsChart(t *testing.T) string {
	t.Helper()
	testcharts := filepath.Join(testtools.ModuleDir(t, helmTestCharts[3].module), helmTestCharts[3].path)
	chart := filepath.Join(t.TempDir(), "subchart")
	require.NoError(t, testtools.CopyTree(filepath.Join(testcharts, "subchart"), chart, nil))
	require.NoError(t, testtools.CopyTree(filepath.Join(testcharts, "chart-with-template-lib-dep", "charts", "common"), filepath.Join(chart, "charts", "common"), nil))
	require.NoError(t, testtools.CopyTree(helmPatterns, chart, nil))
	return chart
}

// TestHelmDocumentedPatterns renders helmPatternsChart with each Helm and
// the helm template flags Helm documents, checks each render as
// checkPostRender does, and which workloads carry which hash: Helm 3 sends
// its post-renderer no hooks, so only Helm 4 hashes the hook and test Jobs
// and the CronJob that reads a hook ConfigMap; --show-only, --skip-tests,
// --include-crds, --no-hooks and --is-upgrade filter or add what Helm
// prints, and leave every printed hash as the full render has it; a changed
// value moves exactly its readers' hashes.
func TestHelmDocumentedPatterns(t *testing.T) {
	t.Parallel()
	chart := helmPatternsChart(t)
	eachHelmWithIdentity(t, "", func(t *testing.T, h testtools.Helm) {
		render := func(args ...string) postRender {
			t.Helper()
			filtered := slices.Contains(args, "--show-only") || slices.Contains(args, "--no-hooks")
			r := checkPostRender(t, h, chart, filtered, append(slices.Clone(helmPatternsValues), args...)...)
			require.Zero(t, r.exitCode, r.stderr)
			return r
		}
		full := render().hashes
		want := []string{patDeployment, patDaemonSet}
		if h.Version == 4 {
			want = append(want, patCronJob, patHookJob, patTestJob)
		}
		require.ElementsMatch(t, want, slices.Collect(maps.Keys(full)), "hashed workloads")

		only := func(ids ...string) map[string]string {
			out := map[string]string{}
			for _, id := range ids {
				if h, ok := full[id]; ok {
					out[id] = h
				}
			}
			return out
		}
		for _, tc := range []struct {
			args []string
			want map[string]string
		}{
			{[]string{"--include-crds"}, full},
			{[]string{"--is-upgrade"}, full},
			{[]string{"--skip-tests"}, only(patDeployment, patDaemonSet, patCronJob, patHookJob)},
			{[]string{"--no-hooks"}, only(patDeployment, patDaemonSet, patCronJob)},
			{[]string{"--show-only", "templates/app.yaml"}, only(patDeployment)},
			{[]string{"--show-only", "templates/cronjob.yaml", "--show-only", "templates/hooks.yaml"}, only(patCronJob, patHookJob)},
			{[]string{"--show-only", "charts/subcharta/templates/worker.yaml"}, only(patDaemonSet)},
			{[]string{"--include-crds", "--show-only", "crds/crdA.yaml"}, map[string]string{}},
		} {
			assert.Equal(t, tc.want, render(tc.args...).hashes, "%s %v: hashes", h, tc.args)
		}

		// --output-dir writes the same files, subcharts' and crds/
		// included; Helm 4 writes what its post-renderer returned,
		// Helm 3 what it rendered before (docs/helm.md).
		plainDir, postDir := t.TempDir(), t.TempDir()
		outputDir := append([]string{"template", "web", chart, "--namespace", realNamespace, "--include-crds"}, helmPatternsValues...)
		h.MustRun(t, append(slices.Clone(outputDir), "--output-dir", plainDir)...)
		h.MustRun(t, append(slices.Concat(outputDir, realPostRenderer(t, h)), "--output-dir", postDir)...)
		plainFiles, written := filesUnder(t, plainDir)
		postFiles, writtenPost := filesUnder(t, postDir)
		assert.Equal(t, plainFiles, postFiles, "%s --output-dir: the files written", h)
		assert.Contains(t, postFiles, "subchart/crds/crdA.yaml", "%s --output-dir", h)
		wantWritten := full
		if h.Version == 3 {
			wantWritten = map[string]string{}
			assert.Equal(t, written, writtenPost, "%s --output-dir: Helm 3 writes the files without its post-renderer's changes", h)
		}
		assert.Equal(t, wantWritten, namespaced(testtools.PodHashes(t, configsAndWorkloads(writtenPost))), "%s --output-dir: hashes in the files", h)

		// A changed value moves its readers' hashes, and only theirs.
		for _, c := range []chartChange{
			{[]string{"--set", "app.level=debug"}, []string{patDeployment}},
			{[]string{"--set", "app.password=CANARY-rotated"}, []string{patDeployment, patDaemonSet, patHookJob, patTestJob}},
			{[]string{"--set-string", "app.schedule=@hourly"}, []string{patCronJob, patHookJob}},
			{[]string{"--set", "configmap.value=bar"}, []string{patDeployment}},
		} {
			assertMoved(t, h.String()+" "+strings.Join(c.args, " "), full, render(c.args...).hashes, c.moved)
		}
	})
}

// filesUnder returns the files below dir (paths relative to it, sorted)
// and their contents joined as one stream.
func filesUnder(t *testing.T, dir string) (names []string, stream string) {
	t.Helper()
	var b strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		text, err := os.ReadFile(path)
		names = append(names, filepath.ToSlash(rel))
		b.WriteString("---\n" + string(text) + "\n")
		return err
	}))
	return names, b.String()
}

// TestHelmDryRunNotes runs helm install --dry-run=client on
// helmPatternsChart with --render-subchart-notes: with confighash, Helm
// prints the same NOTES (the chart's and its subchart's), and the release's
// objects with the hashes of helm template; Helm 3 prints its hooks as
// rendered. Helm 3 asks the cluster for its version even then: the shared
// control plane answers.
func TestHelmDryRunNotes(t *testing.T) {
	t.Parallel()
	chart := helmPatternsChart(t)
	kubeconfig := cptest.Shared(t).KubeconfigPath()
	eachHelmWithIdentity(t, "", func(t *testing.T, h testtools.Helm) {
		h.Env = append(h.Env, "KUBECONFIG="+kubeconfig)
		full := checkPostRender(t, h, chart, false, helmPatternsValues...).hashes
		install := append([]string{"install", "web", chart, "--namespace", realNamespace, "--dry-run=client", "--render-subchart-notes"}, helmPatternsValues...)
		plain := h.MustRun(t, install...)
		post := h.MustRun(t, append(install, realPostRenderer(t, h)...)...)
		// Helm joins the NOTES of the charts in no fixed order.
		notes := func(out string) []string {
			_, n, ok := strings.Cut(out, "\nNOTES:\n")
			require.True(t, ok, "no NOTES in\n%s", out)
			var lines []string
			for line := range strings.Lines(n) {
				if line = strings.TrimSpace(line); line != "" {
					lines = append(lines, line)
				}
			}
			slices.Sort(lines)
			return lines
		}
		assert.Equal(t, []string{"Sample notes for subchart", "Worker notes for web"}, notes(plain), "NOTES without confighash")
		assert.Equal(t, notes(plain), notes(post), "NOTES with confighash")
		_, objects, ok := strings.Cut(post, "\nHOOKS:\n")
		require.True(t, ok, "no HOOKS in\n%s", post)
		objects, _, _ = strings.Cut(strings.Replace(objects, "\nMANIFEST:\n", "\n---\n", 1), "\nNOTES:\n")
		assert.Equal(t, full, namespaced(testtools.PodHashes(t, configsAndWorkloads(objects))), "the hashes install --dry-run prints")
	})
}

// TestHelmCreateScaffold renders the chart helm create writes, the starting
// point of Helm's chart template guide, with a ConfigMap template added and
// the scaffold's own values for volumes, volume mounts, the autoscaler and
// the ingress turned on: the Deployment reads the ConfigMap, and each Helm
// renders it as checkPostRender requires, with a hash that moves with the
// ConfigMap's content and with nothing else.
func TestHelmCreateScaffold(t *testing.T) {
	t.Parallel()
	eachHelmWithIdentity(t, "", func(t *testing.T, h testtools.Helm) {
		chart := filepath.Join(t.TempDir(), "app")
		h.MustRun(t, "create", chart)
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"app.fullname\" . }}-config\ndata:\n  app.conf: {{ .Values.conf | quote }}\n"
		require.NoError(t, os.WriteFile(filepath.Join(chart, "templates", "configmap.yaml"), []byte(cm), 0o644))
		args := []string{
			"--set-json", `volumes=[{"name":"config","configMap":{"name":"web-app-config"}}]`,
			"--set-json", `volumeMounts=[{"name":"config","mountPath":"/etc/app"}]`,
			"--set", "autoscaling.enabled=true", "--set", "ingress.enabled=true", "--set", "conf=level=info",
		}
		base := checkPostRender(t, h, chart, false, args...)
		require.Zero(t, base.exitCode, base.stderr)
		require.Equal(t, []string{"Deployment/shop/web-app"}, slices.Collect(maps.Keys(base.hashes)), "hashed workloads")
		for _, c := range []chartChange{
			{[]string{"--set", "conf=level=debug"}, []string{"Deployment/shop/web-app"}},
			{[]string{"--set", "replicaCount=3", "--set", "podLabels.team=web"}, nil},
		} {
			assertMoved(t, h.String()+" "+strings.Join(c.args, " "), base.hashes, checkPostRender(t, h, chart, false, append(slices.Clone(args), c.args...)...).hashes, c.moved)
		}
	})
}

// realPostRenderer returns the flags that run confighash after h renders:
// the binary for Helm 3, the plugin for Helm 4.
func realPostRenderer(t *testing.T, h testtools.Helm) []string {
	pr := "confighash"
	if h.Version == 3 {
		pr = testtools.Tool(t, "confighash")
	}
	return []string{"--post-renderer", pr, "--post-renderer-args=--namespace=" + realNamespace}
}

// helmDocChart is a chart written from a page of Helm's docs: its files
// (templates and files it reads) and the workloads each Helm hashes.
type helmDocChart struct {
	name          string
	files         map[string]string
	args          []string
	hashed3, hash []string
}

// helmDocDeployment is a Deployment web-app whose container reads what
// envFrom and volumes (none when empty) name.
func helmDocDeployment(envFrom, volumes string) string {
	if volumes != "" {
		volumes = "      volumes:\n" + volumes
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: nginx
        envFrom:
` + envFrom + volumes
}

var helmDocCharts = []helmDocChart{
	{
		// chart_template_guide/yaml_techniques: tags, quoted strings,
		// anchors and aliases, block scalars with chomping and
		// indentation indicators, a file embedded with indent.
		name: "yaml techniques",
		files: map[string]string{
			"files/app.conf": "[main]\n  indented = yes\n\nlast = 1\n",
			"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-yaml
data:
  coffee: "yes, please"
  age: !!str 21
  answer: "true"
  favorite: &favoriteCoffee "Cappucino"
  again: *favoriteCoffee
  kept: |+
    Latte
    Cappuccino

  stripped: |-
    Latte
    Cappuccino
  folded: >
    Latte
    Cappuccino
    Espresso
  indented: |2
      Latte
    Cappuccino
  myfile: |
{{ .Files.Get "files/app.conf" | indent 4 }}
`,
			"templates/deployment.yaml": helmDocDeployment("        - configMapRef:\n            name: {{ .Release.Name }}-yaml\n", ""),
		},
		hashed3: []string{"Deployment/shop/web-app"}, hash: []string{"Deployment/shop/web-app"},
	},
	{
		// chart_template_guide/accessing_files: .Files.Glob with AsConfig
		// and AsSecrets, .Files.Lines, a binary file b64enc'd into
		// binaryData, and a certificate whose base64 a file holds wrapped
		// at 64 columns, as base64 and openssl write it.
		name: "files",
		files: map[string]string{
			"files/config1.toml": "message = \"Hello from config 1\"\n",
			"files/config2.toml": "message = \"This is config 2\"\n",
			"files/token.txt":    "CANARY-token\n",
			"files/blob.bin":     "\x00\x01\x02\xff\xfebinary\n",
			"files/ca.b64": "TUlJQ0NBTkFSWS1jZXJ0aWZpY2F0ZS1hdXRob3JpdHktdGhhdC1pcy1sb25nLWVu\n" +
				"b3VnaC10by13cmFwLWF0LTY0LWNvbHVtbnMtYXMtb3BlbnNzbC1kb2Vz\n",
			"files/lines.txt": "first\nsecond\n",
			"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-files
data:
{{ (.Files.Glob "files/*.toml").AsConfig | indent 2 }}
  lines: |
    {{- range .Files.Lines "files/lines.txt" }}
    {{ . }}
    {{- end }}
binaryData:
  blob.bin: {{ .Files.Get "files/blob.bin" | b64enc }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-files
type: Opaque
data:
{{ (.Files.Glob "files/token.txt").AsSecrets | indent 2 }}
  ca.crt: |
{{ .Files.Get "files/ca.b64" | indent 4 }}
`,
			"templates/deployment.yaml": helmDocDeployment(
				"        - configMapRef:\n            name: {{ .Release.Name }}-files\n",
				"      - name: files\n        secret:\n          secretName: {{ .Release.Name }}-files\n"),
		},
		hashed3: []string{"Deployment/shop/web-app"}, hash: []string{"Deployment/shop/web-app"},
	},
	{
		// howto/charts_tips_and_tricks: creating image pull secrets from
		// values, a template that is JSON (YAML is a superset of JSON),
		// tpl of a value, and configs made in a range.
		name: "tips and tricks",
		args: []string{"--set", "imageCredentials.password=CANARY-pull"},
		files: map[string]string{
			"values.yaml": `imageCredentials:
  registry: quay.io
  username: someone
  password: sillyness
  email: someone@host.com
greeting: "Hello {{ .Release.Name }}"
configs:
  one: {a: "1"}
  two: {b: "2"}
`,
			"templates/_helpers.tpl": `{{- define "imagePullSecret" }}
{{- with .Values.imageCredentials }}
{{- printf "{\"auths\":{\"%s\":{\"username\":\"%s\",\"password\":\"%s\",\"email\":\"%s\",\"auth\":\"%s\"}}}" .registry .username .password .email (printf "%s:%s" .username .password | b64enc) | b64enc }}
{{- end }}
{{- end }}
`,
			"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: myregistrykey
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: {{ template "imagePullSecret" . }}
{{- range $name, $data := .Values.configs }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-{{ $name }}
data:
  greeting: {{ tpl $.Values.greeting $ | quote }}
{{- toYaml $data | nindent 2 }}
{{- end }}
`,
			"templates/deployment.json": `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "{{ .Release.Name }}-json"},
 "spec": {"selector": {"matchLabels": {"app": "json"}}, "template": {"metadata": {"labels": {"app": "json"}},
  "spec": {"imagePullSecrets": [{"name": "myregistrykey"}],
   "containers": [{"name": "c", "image": "quay.io/app", "envFrom": [{"configMapRef": {"name": "{{ .Release.Name }}-one"}}]}]}}}}
`,
			"templates/deployment.yaml": helmDocDeployment("        - configMapRef:\n            name: {{ .Release.Name }}-two\n", ""),
		},
		hashed3: []string{"Deployment/shop/web-app", "Deployment/shop/web-json"},
		hash:    []string{"Deployment/shop/web-app", "Deployment/shop/web-json"},
	},
	{
		// topics/charts_hooks: hook events written with spaces after the
		// commas, a post-install/post-upgrade Secret, and a crd-install
		// hook (Helm 2's, which Helm 3 and 4 never run). Helm 3 sends no
		// hook; Helm 4 sends them all, and confighash hashes a hook
		// config Helm creates on install and on upgrade.
		name: "hook events",
		files: map[string]string{
			"templates/hooks.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-pre
  annotations:
    "helm.sh/hook": "pre-install, pre-upgrade"
data:
  a: "1"
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-post
  annotations:
    "helm.sh/hook": post-install,post-upgrade
    "helm.sh/hook-weight": "5"
stringData:
  token: CANARY-post
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-legacy
  annotations:
    "helm.sh/hook": crd-install
data:
  b: "2"
`,
			"templates/deployment.yaml": helmDocDeployment(
				"        - configMapRef:\n            name: {{ .Release.Name }}-pre\n        - secretRef:\n            name: {{ .Release.Name }}-post\n",
				"      - name: legacy\n        configMap:\n          name: {{ .Release.Name }}-legacy\n"),
		},
		hash: []string{"Deployment/shop/web-app"},
	},
}

// TestHelmDocTemplates renders the charts of helmDocCharts with each Helm,
// as checkPostRender does, and checks which workloads carry a hash.
func TestHelmDocTemplates(t *testing.T) {
	t.Parallel()
	for _, tc := range helmDocCharts {
		eachHelmWithIdentity(t, tc.name+"/", func(t *testing.T, h testtools.Helm) {
			chart := filepath.Join(t.TempDir(), "doc")
			files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: doc\nversion: 0.1.0\n"}
			maps.Copy(files, tc.files)
			writeTree(t, chart, files)
			r := checkPostRender(t, h, chart, false, tc.args...)
			require.Zero(t, r.exitCode, r.stderr)
			want := tc.hash
			if h.Version == 3 {
				want = tc.hashed3
			}
			assert.ElementsMatch(t, want, slices.Collect(maps.Keys(r.hashes)), "hashed workloads")
		})
	}
}

// saTokenChart is a chart that makes a long-lived API token for its
// ServiceAccount as the Kubernetes docs say (a Secret of type
// kubernetes.io/service-account-token naming the account, with no data:
// the token controller fills it in), and a Deployment that mounts the token
// and reads a ConfigMap.
var saTokenChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: robot\nversion: 0.1.0\n",
	"templates/token.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}-robot
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-robot-token
  annotations:
    kubernetes.io/service-account.name: {{ .Release.Name }}-robot
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  level: {{ .Values.level | default "info" | quote }}
`,
	"templates/deployment.yaml": helmDocDeployment(
		"        - configMapRef:\n            name: {{ .Release.Name }}-settings\n",
		"      - name: token\n        secret:\n          secretName: {{ .Release.Name }}-robot-token\n"),
}

// TestHelmServiceAccountToken installs saTokenChart with each Helm and the
// controller watching: the token controller fills the token Secret in after
// the install, which is no change of the render, and the controller takes
// the filled-in Secret as its first content (it may see it empty first:
// held back until the token is there), so nothing rolls; a helm upgrade
// that changes nothing rolls nothing either; one that changes the ConfigMap
// rolls the Deployment once, and the controller adds no roll. (Before,
// confighash hashed the Secret as rendered, without data, and the
// controller rolled the Deployment as soon as it saw the token; and the
// controller could take the empty Secret as the content the pods run, then
// roll them when the token came.)
func TestHelmServiceAccountToken(t *testing.T) {
	t.Parallel()
	chart := filepath.Join(t.TempDir(), "robot")
	writeTree(t, chart, saTokenChart)
	prefix := fmt.Sprintf("satoken-%d", time.Now().UnixNano()%1e6) // -count=N reuses no namespace
	eachHelm(t, "web", prefix, func(t *testing.T, version int, r *release, h testtools.Helm) {
		ctrl := startController(t, "controller-"+h.String(), r.namespace)
		r.mustHelm(t, h, "install", chart, "--create-namespace")
		kubetest.Eventually(t, time.Minute, 100*time.Millisecond, "the token controller to fill web-robot-token", func(ctx context.Context) (bool, error) {
			s, err := r.client.CoreV1().Secrets(r.namespace).Get(ctx, "web-robot-token", metav1.GetOptions{})
			return err == nil && len(s.Data["token"]) > 0, err
		})
		installed := r.deployment(t, "web-app")
		require.NotEmpty(t, installed.hash(), "the installed Deployment's hash")
		assert.Equal(t, "Secret/web-robot-token", installed.external, "the installed Deployment's external list")
		ctrl.settled(t, r, "web-app", 0)
		assertRolled(t, "the token filled in", 0, installed, r.deployment(t, "web-app"))
		assert.Zero(t, ctrl.rolls(), "the controller's rolls after the token was filled in")

		r.mustHelm(t, h, "upgrade", chart)
		ctrl.settled(t, r, "web-app", 0)
		assertRolled(t, "an upgrade that changes nothing", 0, installed, r.deployment(t, "web-app"))

		r.mustHelm(t, h, "upgrade", chart, "--set", "level=debug")
		changed := r.deployment(t, "web-app")
		assertRolled(t, "an upgrade that changes the ConfigMap", 1, installed, changed)
		assert.NotEqual(t, installed.hash(), changed.hash(), "an upgrade that changes the ConfigMap: the hash")
		ctrl.settled(t, r, "web-app", 0)
		assertRolled(t, "after the upgrade settled", 0, changed, r.deployment(t, "web-app"))
		assert.Zero(t, ctrl.rolls(), "the controller's rolls")
	})
}

// TestHelmHookConfigsWithController installs hookedChart with each Helm and
// the controller watching: Helm deletes the pre-install/pre-upgrade hook
// ConfigMap and creates it again on every upgrade (before-hook-creation,
// the delete policy charts_hooks documents), which must roll nothing while
// its content stays; a changed value rolls the Deployment exactly once, by
// the render under Helm 4 (which hashes the hook ConfigMap), by the
// controller under Helm 3 (which sends no hook: the ConfigMap is external).
func TestHelmHookConfigsWithController(t *testing.T) {
	t.Parallel()
	chart := hookedChart(t)
	prefix := fmt.Sprintf("hookctl-%d", time.Now().UnixNano()%1e6) // -count=N reuses no namespace
	eachHelm(t, "web", prefix, func(t *testing.T, version int, r *release, h testtools.Helm) {
		ctrl := startController(t, "controller-"+h.String(), r.namespace)
		r.mustHelm(t, h, "install", chart, "--create-namespace")
		installed := r.deployment(t, "web-app")
		ctrl.settled(t, r, "web-app", 0)
		assertRolled(t, "install", 0, installed, r.deployment(t, "web-app"))
		for i := range 2 {
			r.mustHelm(t, h, "upgrade", chart, "--reuse-values")
			ctrl.settled(t, r, "web-app", 0)
			assertRolled(t, fmt.Sprintf("unchanged upgrade %d (the hook ConfigMap deleted and created again)", i+1), 0, installed, r.deployment(t, "web-app"))
		}
		assert.Zero(t, ctrl.rolls(), "the controller's rolls before the change")

		r.mustHelm(t, h, "upgrade", chart, "--reuse-values", "--set", "setting=two")
		if version == 3 {
			ctrl.waitRolls(t, "the controller's roll for the hook ConfigMap", 1)
		}
		ctrl.settled(t, r, "web-app", 0)
		assertRolled(t, "the hook ConfigMap changed", 1, installed, r.deployment(t, "web-app"))
		assert.InDelta(t, 4-version, ctrl.rolls(), 0, "the controller's rolls: Helm 3's change is its to roll, Helm 4's the render's")
	})
}

// helmTestdataRandom are the charts of Helm's test data whose templates
// draw random values (mariadb's passwords, a test pod's name suffix): two
// renders differ, so the checks that compare a render with and without
// confighash cannot run; confighash verify on the render, and a hash on
// each workload that reads a config, can.
var helmTestdataRandom = map[string]bool{
	"pkg/action/testdata/charts/chart-with-compressed-dependencies":   true,
	"pkg/action/testdata/charts/chart-with-uncompressed-dependencies": true,
}

// helmTestdataRefused are the charts of Helm's test data that confighash
// refuses, and its message: ConfigMaps whose data dumps the chart's values
// (maps), which the API server refuses too.
var helmTestdataRefused = map[string]string{
	"pkg/chart/v2/util/testdata/chart-with-dependency-aliased-twice": "ConfigMap shop/grandchild-bar (document 0, " +
		"chart-with-dependency-aliased-twice/charts/bar/charts/grandchild/templates/dummy.yaml): data.global: expected a string, found a map",
}

// TestHelmTestdataCharts renders the other charts of Helm's own test data
// (every chart folder under a testdata folder of the module, outside
// helmTestCharts' folder and not a subchart: subpop's global values,
// frobnitz's nested dependencies and byte order marks, three-level library
// charts, import-values, aliases, the linter's malformed charts, ...) with
// the Helm they come with, and checks what checkPostRender checks: a chart
// Helm refuses is refused word for word the same with confighash.
func TestHelmTestdataCharts(t *testing.T) {
	t.Parallel()
	var rendered, refused, refusedByConfighash atomic.Int64
	t.Cleanup(func() {
		t.Logf("%d of Helm's test data charts rendered and checked, %d refused by Helm as by Helm with confighash, %d refused by confighash as helmTestdataRefused says",
			rendered.Load(), refused.Load(), refusedByConfighash.Load())
	})
	eachHelmWithIdentity(t, "", func(t *testing.T, h testtools.Helm) {
		root := testtools.ModuleDir(t, helmTestCharts[h.Version].module)
		skip := filepath.Join(root, helmTestCharts[h.Version].path)
		var charts []string
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if path == skip {
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "Chart.yaml")); err == nil && strings.Contains(path, "/testdata/") {
				charts = append(charts, path)
				return fs.SkipDir // its subcharts render with it
			}
			return nil
		}))
		require.Greater(t, len(charts), 30, "Helm's test data charts")
		for _, chart := range charts {
			rel, err := filepath.Rel(root, chart)
			require.NoError(t, err)
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				if msg, ok := helmTestdataRefused[rel]; ok {
					res := h.Run(t, nil, slices.Concat([]string{"template", "web", chart, "--namespace", realNamespace}, realPostRenderer(t, h))...)
					assert.NotZero(t, res.ExitCode, "confighash refuses the render")
					assert.Contains(t, res.Stderr, "confighash: error: "+msg)
					assert.Empty(t, strings.TrimSpace(res.Stdout), "nothing is printed")
					refusedByConfighash.Add(1)
					return
				}
				if helmTestdataRandom[rel] {
					res := h.Run(t, nil, slices.Concat([]string{"template", "web", chart, "--namespace", realNamespace}, realPostRenderer(t, h))...)
					require.Zero(t, res.ExitCode, res.Stderr)
					verify := testtools.Run(t, "", nil, []byte(res.Stdout), testtools.Tool(t, "confighash"), "verify", "--namespace", realNamespace)
					assert.Zero(t, verify.ExitCode, "confighash verify on the render\n%s", verify.Stderr)
					hashes := testtools.PodHashes(t, configsAndWorkloads(res.Stdout))
					assert.NotEmpty(t, hashes, "the StatefulSets that read the chart's ConfigMaps and Secret are hashed")
					rendered.Add(1)
					return
				}
				if r := checkPostRender(t, h, chart, false); r.exitCode != 0 {
					refused.Add(1)
					t.Logf("refused by Helm: %s", strings.TrimSpace(r.stderr))
				} else {
					rendered.Add(1)
					t.Logf("%d workloads hashed", len(r.hashes))
				}
			})
		}
	})
}
