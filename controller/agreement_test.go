package controller_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// The render-time side and the controller compute one hash (DESIGN.md). The
// fixtures of testdata/agreement are rendered the ways users render them,
// with the real kustomize and Helm running this checkout's bin/confighash,
// and applied to the real control plane with a controller watching. Each
// row must show: the first apply rolls nothing; an out-of-band edit of keys
// no workload consumes rolls nothing; an out-of-band edit of a consumed key
// rolls each consuming workload exactly once, and the controller's hashes
// of the edited content are the ones bin/confighash computes for it (the
// hash it records on the pod template only where every consumed config
// exists: it encodes an absent optional one, which no render does).

// agreementConfig names a config of a row as the render names it; a
// generated one is found by its name before kustomize's hash suffix.
type agreementConfig struct{ kind, name string }

// agreementEdit is an out-of-band change of one key of a config.
type agreementEdit struct {
	config     agreementConfig
	key, value string
}

// agreementWorkload is a workload of a row, by kind and final name.
type agreementWorkload struct{ kind, name string }

func (w agreementWorkload) String() string { return w.kind + "/" + w.name }

// agreementRow is one way of rendering the fixtures. Every workload of a row
// consumes every config the row edits.
type agreementRow struct {
	name string
	// render renders the fixtures for namespace ns; args go to the tool
	// (helm --set) and are only given by rerender.
	render     func(t *testing.T, ns string, args ...string) string
	workloads  []agreementWorkload
	unconsumed []agreementEdit
	consumed   agreementEdit
	// rerender, when set, is the tool arguments that make the consumed
	// edit in the source: the next render must then write the hash the
	// controller computes for the edited content.
	// A consumed edit without a value writes the one of the next render.
	rerender []string
	// absentOptional says a workload consumes an optional config that does
	// not exist (the base's envFrom of ConfigMap overrides). The hash the
	// controller records then encodes the absence, which only the cluster
	// side ever encodes (HASHING.md, section 4): no stream gives it.
	absentOptional bool
	// overrides creates that ConfigMap in the namespace before the first
	// apply, as someone outside the render would: an external config
	// consumed whole, present.
	overrides bool
}

func TestRenderAndControllerAgree(t *testing.T) {
	t.Parallel()
	appConfig := func(name string) agreementConfig { return agreementConfig{"ConfigMap", name} }
	secret := func(name string) agreementConfig { return agreementConfig{"Secret", name} }
	web := func(name string) []agreementWorkload { return []agreementWorkload{{"Deployment", name}} }
	chart := []agreementWorkload{{"Deployment", "shop-app"}, {"StatefulSet", "shop-db"}, {"CronJob", "shop-report"}}
	chartUnconsumed := []agreementEdit{
		{appConfig("shop-files"), "other", "\x03\x04"},
		{secret("shop-creds"), "spare", "changed"},
	}
	rows := []agreementRow{{
		name:       "kustomize/function above an overlay with namePrefix",
		render:     kustomizeRender("overlays/team"),
		overrides:  true,
		workloads:  web("team-web"),
		unconsumed: []agreementEdit{{appConfig("team-app-config"), "UNUSED", "2"}, {secret("team-api-token"), "spare", "changed"}},
		consumed:   agreementEdit{appConfig("team-app-config"), "LOG_LEVEL", "debug"},
	}, {
		name:           "kustomize/function in the base that renames, overlay above renames nothing",
		render:         kustomizeRender("overlays/function-in-base"),
		absentOptional: true,
		workloads:      web("team-web"),
		unconsumed:     []agreementEdit{{appConfig("team-app-config"), "UNUSED", "2"}},
		consumed:       agreementEdit{appConfig("team-app-config"), "site.conf", "listen 9090\n"},
	}, {
		name:           "kustomize/generators with hash suffixes",
		render:         kustomizeRender("overlays/generators"),
		absentOptional: true,
		workloads:      web("web"),
		unconsumed:     []agreementEdit{{appConfig("app-env"), "SPARE", "2"}, {secret("gen-creds"), "SPARE", "3"}},
		consumed:       agreementEdit{appConfig("app-env"), "MODE", "fast"},
	}, {
		name:           "kustomize/component consumed through envFrom",
		render:         kustomizeRender("overlays/component"),
		absentOptional: true,
		workloads:      web("web"),
		unconsumed:     []agreementEdit{{appConfig("app-config"), "UNUSED", "2"}},
		consumed:       agreementEdit{appConfig("flags"), "NEW_UI", "off"},
	}, {
		name:       "kustomize/nameSuffix and namespace",
		render:     kustomizeRender("overlays/suffix"),
		overrides:  true,
		workloads:  web("web-v2"),
		unconsumed: []agreementEdit{{appConfig("app-config-v2"), "UNUSED", "2"}, {secret("api-token-v2"), "spare", "changed"}},
		consumed:   agreementEdit{secret("api-token-v2"), "token", "tok-2"},
	}, {
		name:       "helm3/post-renderer",
		render:     helmRender(3),
		workloads:  chart,
		unconsumed: chartUnconsumed,
		consumed:   agreementEdit{secret("shop-creds"), "password", "pw-2"},
		rerender:   []string{"--set", "password=pw-2"},
	}, {
		name:       "helm4/post-renderer plugin",
		render:     helmRender(4),
		workloads:  chart,
		unconsumed: chartUnconsumed,
		consumed:   agreementEdit{appConfig("shop-files"), "blob", "payload-2"},
		rerender:   []string{"--set", "blob=payload-2"},
	}, {
		// A chart of the shared corpus; its DaemonSet consumes the whole
		// Secret (a volume without items), so no key goes unconsumed. The
		// out-of-band edit writes the content the next render holds.
		name:      "helm3/corpus chart promtail",
		render:    corpusRender("promtail"),
		workloads: []agreementWorkload{{"DaemonSet", "shop-promtail"}},
		consumed:  agreementEdit{secret("shop-promtail"), "promtail.yaml", ""},
		rerender:  []string{"--set", "config.logLevel=debug"},
	}}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			checkAgreement(t, row)
		})
	}
}

// agreementRun is one row applied to a namespace of its own, with a
// controller watching it.
type agreementRun struct {
	t        *testing.T
	e        *env
	ctrl     *running
	row      agreementRow
	rendered string
	// renderHashes are the render-time hashes by Kind/name.
	renderHashes map[string]string
}

// checkAgreement runs one row: first apply, edits of unconsumed keys, an
// edit of a consumed key.
func checkAgreement(t *testing.T, row agreementRow) {
	e := newEnv(t)
	e.createSecret("db-creds", map[string]string{"password": "pw-1", "user": "app"})
	if row.overrides {
		_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "overrides", Namespace: e.ns},
			Data:       map[string]string{"FEATURE_X": "on"},
		}, metav1.CreateOptions{FieldManager: "platform-team"})
		require.NoError(t, err)
	}
	r := &agreementRun{t: t, e: e, row: row, rendered: row.render(t, e.ns)}
	r.renderHashes = hashesByWorkload(t, r.rendered)
	for _, w := range row.workloads {
		require.NotEmpty(t, r.renderHashes[w.String()], "render-time hash of %s", w)
	}
	r.ctrl = e.start(e.testOptions())
	require.NoError(t, e.apply(r.rendered, "argocd-controller"))
	r.firstApply()
	r.unconsumedEdits()
	r.consumedEdit()
}

// firstApply checks that every workload is found in sync after the first
// apply, and that nothing rolled it.
func (r *agreementRun) firstApply() {
	for _, w := range r.row.workloads {
		r.ctrl.obs.waitFor(r.t, 0, w.String()+" in sync after the first apply", outcomeOf(w, "in_sync"))
	}
	r.assertRollouts(0, "after the first apply")
}

// unconsumedEdits edits keys no workload consumes and checks that each
// workload is found in sync having read the edited config, and nothing
// rolled.
func (r *agreementRun) unconsumedEdits() {
	for _, ed := range r.row.unconsumed {
		name := configName(r.t, r.rendered, ed.config)
		mark := r.ctrl.obs.mark()
		rv := r.e.editConfig(ed.config.kind, name, ed.key, ed.value)
		ref := ed.config.kind + "/" + name
		for _, w := range r.row.workloads {
			r.ctrl.obs.waitFor(r.t, mark, fmt.Sprintf("%s in sync having read %s at resourceVersion %s", w, ref, rv), func(o controller.Outcome) bool {
				return outcomeOf(w, "in_sync")(o) && o.ConfigVersions[ref] == rv
			})
		}
	}
	r.assertRollouts(0, "after edits of keys no workload consumes")
}

// consumedEdit edits a consumed key, checks that each workload rolls
// exactly once, and compares the controller's hashes with bin/confighash's.
func (r *agreementRun) consumedEdit() {
	var next map[string]string
	value := r.row.consumed.value
	if r.row.rerender != nil {
		stream := r.row.render(r.t, r.e.ns, r.row.rerender...)
		next = hashesByWorkload(r.t, stream)
		if value == "" {
			value = configValue(r.t, stream, r.row.consumed.config, r.row.consumed.key)
		}
	}
	edited := agreementConfig{r.row.consumed.config.kind, configName(r.t, r.rendered, r.row.consumed.config)}
	mark := r.ctrl.obs.mark()
	r.e.editConfig(edited.kind, edited.name, r.row.consumed.key, value)
	rolled := map[agreementWorkload]controller.Outcome{}
	for _, w := range r.row.workloads {
		o, after := r.ctrl.obs.waitFor(r.t, mark, w.String()+" rolled", outcomeOf(w, "rolled"))
		r.ctrl.obs.waitFor(r.t, after, w.String()+" in sync after the roll", outcomeOf(w, "in_sync"))
		rolled[w] = o
	}
	r.assertRollouts(1, "after an edit of a key each consumes")
	r.compareHashes(edited, rolled, next)
}

// assertRollouts checks that each workload rolled n times since its first
// apply, each time by the controller.
func (r *agreementRun) assertRollouts(n int, when string) {
	r.t.Helper()
	for _, w := range r.row.workloads {
		assert.Equal(r.t, n, r.e.workloadRollouts(w), "rollouts of %s %s", w, when)
		assert.Equal(r.t, n, r.ctrl.obs.count(0, outcomeOf(w, "rolled")), "controller rolls of %s %s", w, when)
	}
	assert.InDelta(r.t, float64(n*len(r.row.workloads)), r.ctrl.metric("confighash_rollouts_total", map[string]string{"dry_run": "false"}), 0,
		"confighash_rollouts_total %s", when)
}

// compareHashes checks the controller's hashes of the edited content
// against the ones bin/confighash writes for it: the render with the
// edited config replaced by a manifest of its live content, run through
// bin/confighash again in stream mode. The live hash the controller
// compares with render-time hashes (of the configs in the render) must
// equal it, and so must the next render's where the row has one. The hash
// it records on the pod template covers every consumed config, the
// external configs too: bin/confighash computes it with db-creds (and
// overrides, where the row created it) in the stream as well.
func (r *agreementRun) compareHashes(edited agreementConfig, rolled map[agreementWorkload]controller.Outcome, next map[string]string) {
	t, e := r.t, r.e
	inRender := hashesByWorkload(t, render(t, e.withLive(t, r.rendered, edited), "--namespace", e.ns))
	configs := []agreementConfig{edited, {"Secret", "db-creds"}}
	if r.row.overrides {
		configs = append(configs, agreementConfig{"ConfigMap", "overrides"})
	}
	all := hashesByWorkload(t, render(t, e.withLive(t, r.rendered, configs...), "--namespace", e.ns))
	for _, w := range r.row.workloads {
		assert.NotEqual(t, r.renderHashes[w.String()], inRender[w.String()], "the edit changed nothing %s consumes", w)
		assert.Equal(t, inRender[w.String()], rolled[w].Input.LiveIn, "live hash of the in-render configs of %s against bin/confighash", w)
		if next != nil {
			assert.Equal(t, next[w.String()], rolled[w].Input.LiveIn, "live hash of %s against the next render's hash", w)
		}
		recorded := e.templateAnnotations(w)["confighash.dev/controller-hash"]
		assert.Equal(t, rolled[w].Decision.Record.ControllerHash, recorded, "the hash recorded on %s", w)
		if !r.row.absentOptional {
			assert.Equal(t, all[w.String()], recorded, "recorded hash of %s against bin/confighash with every consumed config in the stream", w)
		}
	}
}

// outcomeOf matches outcomes of workload w with result.
func outcomeOf(w agreementWorkload, result string) func(controller.Outcome) bool {
	return func(o controller.Outcome) bool {
		return o.Request.Kind == w.kind && o.Request.Name == w.name && o.Result == result
	}
}

// kustomizeRender builds overlay (a folder of testdata/agreement) with the
// real kustomize, from a copy of testdata/agreement in which every
// kustomization that lists the transformer confighash.yaml gets one that
// runs this checkout's confighash, and NAMESPACE stands for ns.
func kustomizeRender(overlay string) func(t *testing.T, ns string, args ...string) string {
	return func(t *testing.T, ns string, args ...string) string {
		t.Helper()
		require.Empty(t, args, "kustomize rows take no arguments")
		dir := t.TempDir()
		copyAgreementFixtures(t, dir, ns)
		res := testtools.Run(t, filepath.Join(dir, overlay), nil, nil, testtools.Tool(t, "kustomize"),
			"build", "--enable-alpha-plugins", "--enable-exec", ".")
		require.Zero(t, res.ExitCode, res.Stderr)
		return res.Stdout
	}
}

// copyAgreementFixtures copies testdata/agreement to dir, writing the
// confighash.yaml functionConfig that kustomizations list and putting ns
// for NAMESPACE.
func copyAgreementFixtures(t *testing.T, dir, ns string) {
	t.Helper()
	fn := testtools.ExecFunctionConfig(filepath.Join(buildBinaries(t), "confighash"))
	err := testtools.CopyTree(filepath.Join("testdata", "agreement"), dir, func(rel, to string, b []byte) ([]byte, error) {
		if filepath.Base(rel) != "kustomization.yaml" {
			return b, nil
		}
		if strings.Contains(string(b), "- confighash.yaml") {
			if err := os.WriteFile(filepath.Join(filepath.Dir(to), "confighash.yaml"), []byte(fn), 0o644); err != nil {
				return nil, err
			}
		}
		return []byte(strings.ReplaceAll(string(b), "NAMESPACE", ns)), nil
	})
	require.NoError(t, err)
}

// helmRender renders testdata/agreement/chart as release shop with the real
// Helm and confighash as its post-renderer (Helm 3: the executable; Helm 4:
// postrenderer/plugin, installed as users install it), the way README
// shows: the release namespace passed to confighash too.
func helmRender(version int) func(t *testing.T, ns string, args ...string) string {
	return func(t *testing.T, ns string, args ...string) string {
		t.Helper()
		h := testtools.NewHelm(t, version)
		confighash := filepath.Join(buildBinaries(t), "confighash")
		pr := confighash
		if version == 4 {
			h.Env = append(h.Env, "CONFIGHASH_BIN="+confighash)
			h.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
			pr = "confighash"
		}
		return h.MustRun(t, append([]string{"template", "shop", filepath.Join("testdata", "agreement", "chart"), "-n", ns,
			"--post-renderer", pr, "--post-renderer-args=--namespace=" + ns}, args...)...)
	}
}

// corpusRender renders the chart folder of the shared corpus
// (CONFIGHASH_CORPUS) as helmRender(3) renders the fixture chart, and keeps
// its namespaced objects (the cluster-scoped RBAC would be shared by every
// test of the control plane).
func corpusRender(folder string) func(t *testing.T, ns string, args ...string) string {
	return func(t *testing.T, ns string, args ...string) string {
		t.Helper()
		chart := filepath.Join(testtools.Corpus(t), "charts", folder)
		out := testtools.NewHelm(t, 3).MustRun(t, append([]string{"template", "shop", chart, "-n", ns,
			"--post-renderer", filepath.Join(buildBinaries(t), "confighash"), "--post-renderer-args=--namespace=" + ns}, args...)...)
		return docs(t, out, "ServiceAccount", "ConfigMap", "Secret", "Service", "Deployment", "StatefulSet", "DaemonSet")
	}
}

// hashesByWorkload returns the render-time hash of each workload of a
// stream by Kind/name.
func hashesByWorkload(t *testing.T, stream string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, h := range testtools.PodHashes(t, stream) {
		kind, rest, _ := strings.Cut(id, "/")
		_, name, _ := strings.Cut(rest, "/")
		out[kind+"/"+name] = h
	}
	return out
}

// configName is the name of config c in a render: its own, or its own with
// the hash suffix kustomize appended to a generated one.
func configName(t *testing.T, stream string, c agreementConfig) string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	generated := regexp.MustCompile(`^` + regexp.QuoteMeta(c.name) + `-[a-z0-9]{10}$`)
	var found []string
	for _, n := range nodes {
		if n.GetKind() == c.kind && (n.GetName() == c.name || generated.MatchString(n.GetName())) {
			found = append(found, n.GetName())
		}
	}
	require.Len(t, found, 1, "%s %s in the render", c.kind, c.name)
	return found[0]
}

// configValue is the content of key of config c in a render: from
// stringData, data (decoded for a Secret) or binaryData (decoded).
func configValue(t *testing.T, stream string, c agreementConfig, key string) string {
	t.Helper()
	objs, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	for _, n := range objs {
		if n.GetKind() != c.kind || n.GetName() != c.name {
			continue
		}
		for _, field := range []string{"stringData", "data", "binaryData"} {
			v, err := n.Pipe(kyaml.Lookup(field, key))
			require.NoError(t, err)
			if v == nil {
				continue
			}
			s := v.YNode().Value
			if field == "binaryData" || (field == "data" && c.kind == "Secret") {
				b, err := base64.StdEncoding.DecodeString(s)
				require.NoError(t, err)
				s = string(b)
			}
			return s
		}
	}
	t.Fatalf("no key %s in %s %s of the render", key, c.kind, c.name)
	return ""
}

// editConfig sets key of a ConfigMap (in binaryData when it is there) or a
// Secret through the API, as kubectl edit does, and returns the new
// resourceVersion.
func (e *env) editConfig(kind, name, key, value string) string {
	e.t.Helper()
	if kind == "Secret" {
		return e.editSecret(name, func(s *corev1.Secret) { s.Data[key] = []byte(value) })
	}
	return e.editConfigMap(name, func(cm *corev1.ConfigMap) {
		if _, ok := cm.BinaryData[key]; ok {
			cm.BinaryData[key] = []byte(value)
			return
		}
		cm.Data[key] = value
	})
}

// withLive returns stream with the configs named replaced by (or, when
// absent, added as) manifests of their live content: data, binaryData and
// type as the API server returns them.
func (e *env) withLive(t *testing.T, stream string, configs ...agreementConfig) string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	nodes = slices.DeleteFunc(nodes, func(n *kyaml.RNode) bool {
		return slices.Contains(configs, agreementConfig{n.GetKind(), n.GetName()})
	})
	ctx := context.Background()
	for _, c := range configs {
		var obj any
		meta := metav1.ObjectMeta{Name: c.name, Namespace: e.ns}
		if c.kind == "Secret" {
			s, err := e.cs.CoreV1().Secrets(e.ns).Get(ctx, c.name, metav1.GetOptions{})
			require.NoError(t, err)
			obj = corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta, Type: s.Type, Data: s.Data}
		} else {
			cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(ctx, c.name, metav1.GetOptions{})
			require.NoError(t, err)
			obj = corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta, Data: cm.Data, BinaryData: cm.BinaryData}
		}
		b, err := sigsyaml.Marshal(obj)
		require.NoError(t, err)
		n, err := kyaml.Parse(string(b))
		require.NoError(t, err)
		nodes = append(nodes, n)
	}
	out, err := kio.StringAll(nodes)
	require.NoError(t, err)
	return out
}

// workloadRollouts counts the rollouts of w since its first apply: new
// ReplicaSets or ControllerRevisions made by the real workload controllers;
// for a CronJob, which keeps no revisions, the pod template changes its
// generation counts.
func (e *env) workloadRollouts(w agreementWorkload) int {
	e.t.Helper()
	if w.kind != "CronJob" {
		return e.revisions(w.kind, w.name) - 1
	}
	cj, err := e.cs.BatchV1().CronJobs(e.ns).Get(context.Background(), w.name, metav1.GetOptions{})
	require.NoError(e.t, err)
	return int(cj.Generation) - 1
}

// templateAnnotations returns the pod template annotations of w.
func (e *env) templateAnnotations(w agreementWorkload) map[string]string {
	e.t.Helper()
	ctx := context.Background()
	switch w.kind {
	case "StatefulSet":
		o, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, w.name, metav1.GetOptions{})
		require.NoError(e.t, err)
		return o.Spec.Template.Annotations
	case "DaemonSet":
		o, err := e.cs.AppsV1().DaemonSets(e.ns).Get(ctx, w.name, metav1.GetOptions{})
		require.NoError(e.t, err)
		return o.Spec.Template.Annotations
	case "CronJob":
		o, err := e.cs.BatchV1().CronJobs(e.ns).Get(ctx, w.name, metav1.GetOptions{})
		require.NoError(e.t, err)
		return o.Spec.JobTemplate.Spec.Template.Annotations
	}
	return e.deployment(w.name).Spec.Template.Annotations
}
