package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// controllerProc is bin/confighash-controller watching one namespace of the
// shared control plane, as a user runs it with --kubeconfig.
type controllerProc struct {
	*kubetest.Process
	metrics string
}

// startController runs bin/confighash-controller on namespace ns with a
// short coalescing window and no minimum interval between rolls, plus args.
func startController(t *testing.T, name, ns string, args ...string) *controllerProc {
	t.Helper()
	cp := cptest.Shared(t)
	proc, metrics := kubetest.StartServer(t, name, testtools.Tool(t, "confighash-controller"), kubetest.MetricsServing, func(metrics string) []string {
		return append([]string{"--kubeconfig", cp.KubeconfigPath(), "--namespaces", ns,
			"--metrics-bind-address", metrics, "--health-probe-bind-address", "0",
			"--coalesce-window", "1s", "--min-roll-interval", "0s", "--log-format", "text"}, args...)
	})
	p := &controllerProc{Process: proc, metrics: metrics}
	p.waitFor(t, "metrics served", func(v float64) bool { return v >= 0 }, "confighash_reconciles_total")
	return p
}

// metric sums the samples of name with every label given; -1 when the
// process does not answer.
func (p *controllerProc) metric(name string, labels ...string) float64 {
	return kubetest.Metric(p.metrics, name, labels...)
}

// waitFor polls the metric until cond holds.
func (p *controllerProc) waitFor(t *testing.T, what string, cond func(float64) bool, name string, labels ...string) {
	t.Helper()
	kubetest.EventuallyTrue(t, time.Minute, 100*time.Millisecond, p.Name+": "+what, func() bool {
		return cond(p.metric(name, labels...))
	})
}

// inSyncAfter waits for an in-sync reconcile of a Deployment beyond the
// mark (a count of in-sync reconciles read before).
func (p *controllerProc) inSyncAfter(t *testing.T, mark float64) {
	t.Helper()
	p.waitFor(t, "an in-sync reconcile", func(v float64) bool { return v > mark }, "confighash_reconciles_total", `result="in_sync"`)
}

// inSync is the count of in-sync reconciles so far, a mark for inSyncAfter.
func (p *controllerProc) inSync() float64 {
	return p.metric("confighash_reconciles_total", `result="in_sync"`)
}

// rolls is the count of the rolls the controller made (not dry-run ones).
func (p *controllerProc) rolls() float64 {
	return p.metric("confighash_rollouts_total", `dry_run="false"`)
}

// waitRolls waits until the controller has made n rolls (not dry-run ones).
func (p *controllerProc) waitRolls(t *testing.T, what string, n float64) {
	t.Helper()
	p.waitFor(t, what, func(v float64) bool { return v == n }, "confighash_rollouts_total", `dry_run="false"`)
}

// rolledOnce waits for the controller's n-th roll (not a dry-run one) and
// fails unless r's Deployment name got exactly one new pod template since
// before; it returns the Deployment's state.
func (p *controllerProc) rolledOnce(t *testing.T, r *release, name, what string, n float64, before state) state {
	t.Helper()
	p.waitRolls(t, what, n)
	after := r.deployment(t, name)
	assertRolled(t, what, 1, before, after)
	return after
}

// cluster is a namespace of the shared control plane that tests apply
// renders to, with server-side apply as Argo CD or Flux does.
type cluster struct {
	*release // for deployment(): generation, ReplicaSets, pod template
	dyn      dynamic.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
}

// newCluster creates a namespace named prefix and a random suffix (so that
// -count=N runs on the one shared control plane).
func newCluster(t *testing.T, prefix string) *cluster {
	t.Helper()
	cs, dyn, mapper := kubetest.Clients(t, cptest.Shared(t).RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &cluster{release: &release{namespace: ns.Name, client: cs}, dyn: dyn, mapper: mapper}
}

// apply server-side applies a stream as the GitOps tool (field manager
// gitops).
func (c *cluster) apply(t *testing.T, stream string) {
	t.Helper()
	require.NoError(t, kubetest.Apply(t.Context(), c.dyn, c.mapper, strings.NewReader(stream),
		kubetest.ApplyOptions{Namespace: c.namespace, FieldManager: "gitops"}))
}

// assertRolled fails unless the Deployment got n new pod templates, each a
// new ReplicaSet. (Its generation is no count of them: the API server bumps
// a Deployment's generation when its metadata annotations change too, as
// when the controller records a baseline.)
func assertRolled(t *testing.T, what string, n int, before, after state) {
	t.Helper()
	assert.Equal(t, before.replicaSets+n, after.replicaSets, "%s: ReplicaSets", what)
	if n == 0 {
		assert.Equal(t, before.annotations, after.annotations, "%s: pod template annotations", what)
	}
}

// TestMigrateFromHelmChecksum follows docs/migrating.md for a chart that
// already writes checksum/config on its pod template
// (testdata/migrating/checksum), with the controller running: confighash
// diff of the chart before and after adding the post-renderer says the
// Deployment rolls once for the new annotation, and so it does; then each
// upgrade that changes a config rolls it once, never twice (checksum/config
// and the hash change in one pod template update, and the controller stays
// quiet); an unread key rolls it through checksum/config alone; an
// out-of-band edit is the controller's, once.
func TestMigrateFromHelmChecksum(t *testing.T) {
	chart := filepath.Join(testtools.RepoRoot(t), "testdata", "migrating", "checksum")
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", version), func(t *testing.T) {
			t.Parallel()
			ns := newCluster(t, fmt.Sprintf("migrate-checksum-helm%d", version)).namespace
			r := newRelease(t, "web", ns)
			h := r.helmV(version)
			confighash := testtools.Tool(t, "confighash")

			// What a user checks first: confighash diff of the two renders.
			dir := t.TempDir()
			render := func(name string, post []string) string {
				out := h.MustRun(t, append([]string{"template", "web", chart, "--namespace", ns}, post...)...)
				path := filepath.Join(dir, name)
				require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
				return path
			}
			before, after := render("before.yaml", nil), render("after.yaml", r.postRenderer(t, h))
			diff := testtools.Run(t, "", nil, nil, confighash, "diff", "--namespace", ns, before, after)
			require.Zero(t, diff.ExitCode, diff.Stderr)
			assert.Contains(t, diff.Stdout, "1 of 1 workload rolls: 1 because its annotations changed")
			assert.Regexp(t, `Deployment `+ns+`/web-app +yes +pod template changed: metadata.annotations\[confighash.dev/hash\]\n`, diff.Stdout)
			assert.NotContains(t, diff.Stdout, "checksum/config", "checksum/config is the same in both")
			assert.NotContains(t, diff.Stdout, "does not match")

			res := r.helm(t, h, "install", chart, []string{}, "--create-namespace")
			require.Zero(t, res.ExitCode, res.Stderr)
			plain := r.deployment(t, "web-app")
			require.Equal(t, 1, plain.replicaSets)
			require.NotEmpty(t, plain.annotations["checksum/config"])
			ctrl := startController(t, "controller", ns)

			r.mustHelm(t, h, "upgrade", chart)
			added := r.deployment(t, "web-app")
			assertRolled(t, "the first upgrade with the post-renderer", 1, plain, added)
			assert.NotEmpty(t, added.hash())
			assert.Equal(t, plain.annotations["checksum/config"], added.annotations["checksum/config"], "checksum/config is kept")
			ctrl.inSyncAfter(t, 0)

			mark := ctrl.inSync()
			r.mustHelm(t, h, "upgrade", chart, "--set", "logLevel=debug")
			changed := r.deployment(t, "web-app")
			ctrl.inSyncAfter(t, mark)
			assertRolled(t, "a consumed key changed in the chart", 1, added, r.deployment(t, "web-app"))
			assert.NotEqual(t, added.hash(), changed.hash())
			assert.NotEqual(t, added.annotations["checksum/config"], changed.annotations["checksum/config"])

			mark = ctrl.inSync()
			r.mustHelm(t, h, "upgrade", chart, "--reuse-values", "--set", "unread=two")
			unread := r.deployment(t, "web-app")
			ctrl.inSyncAfter(t, mark)
			assertRolled(t, "an unread key changed in the chart (checksum/config)", 1, changed, r.deployment(t, "web-app"))
			assert.Equal(t, changed.hash(), unread.hash(), "the hash of the keys the Deployment reads")
			assert.Zero(t, ctrl.rolls(), "the controller rolled a workload the render had hashed")

			r.editConfigMap(t, "web-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
			edited := ctrl.rolledOnce(t, r, "web-app", "an out-of-band edit", 1, unread)
			assert.Equal(t, unread.annotations["checksum/config"], edited.annotations["checksum/config"])

			// The next upgrade writes the chart's value back over the edit
			// (Helm 3's three-way merge; Helm 4's server-side apply refuses
			// the field kubectl edit now owns unless told --force-conflicts):
			// the pods run the edited value, so that is one more roll, the
			// controller's; the chart's pod template is unchanged.
			upgrade := []string{"--reuse-values"}
			if version == 4 {
				res := r.helm(t, h, "upgrade", chart, nil, upgrade...)
				require.NotZero(t, res.ExitCode, "helm4 upgrade over an edited field")
				assert.Contains(t, res.Stderr, `conflict with "kubectl-edit"`)
				upgrade = append(upgrade, "--force-conflicts")
			}
			r.mustHelm(t, h, "upgrade", chart, upgrade...)
			reverted := ctrl.rolledOnce(t, r, "web-app", "helm upgrade reverting the edit", 2, edited)
			assert.Equal(t, unread.hash(), reverted.hash())
			ctrl.settled(t, r, "web-app", 0)
			assert.InDelta(t, 2, ctrl.rolls(), 0, "the controller rolled again")
			assertRolled(t, "settled", 0, reverted, r.deployment(t, "web-app"))
		})
	}
}

// TestMigrateReloaderWithHelmChecksum is the case docs/migrating.md warns
// about: a chart with checksum/config whose Deployment is opted in with
// Reloader's annotation only (no post-renderer). An upgrade that changes a
// consumed value changes the ConfigMap and checksum/config together: the
// Deployment controller rolls for the checksum, and the confighash
// controller rolls for the config, which it reads as external: two
// ReplicaSets. With the post-renderer added (one roll, for the hash) it is
// one.
func TestMigrateReloaderWithHelmChecksum(t *testing.T) {
	t.Parallel()
	chart := filepath.Join(testtools.RepoRoot(t), "testdata", "migrating", "checksum")
	r := newRelease(t, "web", newCluster(t, "migrate-checksum-reloader").namespace)
	optIn := []string{"--set-string", `annotations.reloader\.stakater\.com/auto=true`}
	res := r.helm(t, r.h3, "install", chart, []string{}, append([]string{"--create-namespace"}, optIn...)...)
	require.Zero(t, res.ExitCode, res.Stderr)
	ctrl := startController(t, "controller", r.namespace)
	ctrl.waitFor(t, "baseline", func(v float64) bool { return v > 0 }, "confighash_baseline_writes_total")
	installed := r.deployment(t, "web-app")
	require.Equal(t, 1, installed.replicaSets)

	res = r.helm(t, r.h3, "upgrade", chart, []string{}, "--reuse-values", "--set", "logLevel=debug")
	require.Zero(t, res.ExitCode, res.Stderr)
	ctrl.waitRolls(t, "rolled", 1)
	twice := r.deployment(t, "web-app")
	assertRolled(t, "an upgrade changing a consumed value", 2, installed, twice)

	// With the post-renderer added (one roll, for the hash), a value
	// change is one roll, and the controller's none.
	r.mustHelm(t, r.h3, "upgrade", chart, "--reuse-values")
	hashed := r.deployment(t, "web-app")
	assertRolled(t, "the first upgrade with the post-renderer", 1, twice, hashed)
	mark := ctrl.inSync()
	r.mustHelm(t, r.h3, "upgrade", chart, "--reuse-values", "--set", "logLevel=warn")
	once := r.deployment(t, "web-app")
	ctrl.inSyncAfter(t, mark)
	assertRolled(t, "a value change with the post-renderer", 1, hashed, once)
	ctrl.settled(t, r, "web-app", 0)
	assert.InDelta(t, 1, ctrl.rolls(), 0, "the controller rolled after the post-renderer was added")
	assertRolled(t, "settled", 0, once, r.deployment(t, "web-app"))
}

// settled waits until the controller has seen events content events of
// ConfigMaps and Secrets in all, then changes an annotation on the
// Deployment's metadata (no roll) and waits for an in-sync reconcile after
// it: the controller found the workload in sync with configs it had seen.
// It is the way to wait for an edit that must roll nothing.
func (p *controllerProc) settled(t *testing.T, r *release, name string, events float64) {
	t.Helper()
	p.waitFor(t, "the config edit seen", func(v float64) bool { return v >= events }, "confighash_config_events_total", `change="content"`)
	mark := p.inSync()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"example.com/poked":"%d"}}}`, time.Now().UnixNano())
	_, err := r.client.AppsV1().Deployments(r.namespace).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	p.inSyncAfter(t, mark)
}

// editConfigMap changes a ConfigMap of the release's namespace as kubectl
// edit does.
func (r *release) editConfigMap(t *testing.T, name string, edit func(*corev1.ConfigMap)) {
	t.Helper()
	_, err := kubetest.Edit(t.Context(), r.client.CoreV1().ConfigMaps(r.namespace), name, "kubectl-edit", edit)
	require.NoError(t, err)
}

// oldControllerTemplate is what Wave and Reloader leave on a pod template:
// Wave's hash annotation, Reloader's annotation strategy and its env-vars
// strategy's variable.
var oldControllerTemplate = strings.NewReplacer(
	"metadata: {labels: {app: web}}",
	`metadata: {labels: {app: web}, annotations: {wave.pusher.com/config-hash: "0f0f", reloader.stakater.com/last-reloaded-from: "{}"}}`,
)

// TestMigrateFromWaveAndReloader runs the cut-over of docs/migrating.md on a
// Deployment annotated for both Wave and Reloader, carrying what they wrote
// on its pod template: a dry run next to the old controller counts the roll
// of an edit of the key the Deployment reads, none for another key, and
// writes nothing; the switch records baselines and rolls nothing (an
// edit made in the gap is not rolled); the next edit rolls once; rendering
// with confighash later rolls once for the new annotation and the
// controller adds nothing, while a config named only in Reloader's reload
// list still rolls it. Wave's and Reloader's annotations are left as they
// were throughout; removing Wave's hash from the pod template rolls once.
func TestMigrateFromWaveAndReloader(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "migrate-reloader")
	workload := kubetest.Workload{Name: "web", Namespace: c.namespace, Replicas: 1,
		Annotations: map[string]string{"wave.pusher.com/update-on-config-change": "true", "reloader.stakater.com/auto": "true",
			"configmap.reloader.stakater.com/reload": "flags"},
		Env: []string{kubetest.EnvKey("app", "LOG_LEVEL"), "{name: STAKATER_APP_CONFIGMAP, value: 0f0f}"}}
	manifest := oldControllerTemplate.Replace(workload.YAML())
	configMap := func(level string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: %s}\ndata: {LOG_LEVEL: %s, UNREAD: one}\n---\n", c.namespace, level)
	}
	// flags is read by the app through the API, named by Reloader's list
	// only.
	flags := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flags, namespace: %s}\ndata: {beta: \"off\"}\n---\n", c.namespace)
	c.apply(t, flags+configMap("info")+manifest)
	start := c.deployment(t, "web")
	untouched := func(what string) {
		t.Helper()
		d, err := c.client.AppsV1().Deployments(c.namespace).Get(t.Context(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		for k, v := range workload.Annotations {
			assert.Equal(t, v, d.Annotations[k], "%s: workload annotation %s", what, k)
		}
		assert.Equal(t, "0f0f", d.Spec.Template.Annotations["wave.pusher.com/config-hash"], what)
		assert.Equal(t, "{}", d.Spec.Template.Annotations["reloader.stakater.com/last-reloaded-from"], what)
		assert.Equal(t, "0f0f", d.Spec.Template.Spec.Containers[0].Env[1].Value, what)
	}

	// 1. Dry run next to the old controller.
	dry := startController(t, "dry-run", c.namespace, "--dry-run")
	dry.waitFor(t, "first pass", func(v float64) bool { return v > 0 }, "confighash_reconciles_total", `kind="Deployment"`)
	c.editConfigMap(t, "app", func(cm *corev1.ConfigMap) { cm.Data["UNREAD"] = "two" })
	dry.settled(t, c.release, "web", 1)
	assert.Zero(t, dry.metric("confighash_rollouts_total"), "dry run: a key the Deployment does not read")
	c.editConfigMap(t, "app", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
	dry.waitFor(t, "would roll", func(v float64) bool { return v == 1 }, "confighash_rollouts_total", `dry_run="true"`)
	assert.Contains(t, dry.Logs(), "dry run: would roll")
	assertRolled(t, "dry run", 0, start, c.deployment(t, "web"))
	d, err := c.client.AppsV1().Deployments(c.namespace).Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, d.Annotations, "confighash.dev/external-baseline", "a dry run records nothing")
	untouched("dry run")

	// 2. Switch over; an edit made in the gap becomes the baseline.
	dry.Signal(15)
	c.editConfigMap(t, "app", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
	ctrl := startController(t, "controller", c.namespace)
	ctrl.waitFor(t, "baseline", func(v float64) bool { return v > 0 }, "confighash_baseline_writes_total")
	ctrl.inSyncAfter(t, 0)
	switched := c.deployment(t, "web")
	assertRolled(t, "the switch", 0, start, switched)
	assert.Zero(t, ctrl.rolls())
	untouched("the switch")

	c.editConfigMap(t, "app", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "error" })
	rolled := ctrl.rolledOnce(t, c.release, "web", "an edit after the switch", 1, switched)
	untouched("a roll")
	events := ctrl.metric("confighash_config_events_total", `change="content"`)
	c.editConfigMap(t, "app", func(cm *corev1.ConfigMap) { cm.Data["UNREAD"] = "three" })
	ctrl.settled(t, c.release, "web", events+1)
	assertRolled(t, "an unread key", 0, rolled, c.deployment(t, "web"))

	// 3. Render with confighash, the annotations kept.
	res := testtools.Run(t, "", nil, []byte(configMap("error")+manifest), testtools.Tool(t, "confighash"))
	require.Zero(t, res.ExitCode, res.Stderr)
	require.Contains(t, res.Stdout, "confighash.dev/hash")
	mark := ctrl.inSync()
	c.apply(t, res.Stdout)
	rendered := c.deployment(t, "web")
	ctrl.inSyncAfter(t, mark)
	assertRolled(t, "the first apply of a render", 1, rolled, c.deployment(t, "web"))
	assert.NotEmpty(t, rendered.hash())
	assert.InDelta(t, 1, ctrl.rolls(), 0, "the controller rolled after the render")
	untouched("the render")

	c.editConfigMap(t, "app", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "info" })
	again := ctrl.rolledOnce(t, c.release, "web", "an edit after the render", 2, rendered)
	untouched("a roll after the render")

	// Reloader's list still counts next to the render-time hash, which
	// does not cover the config the pod spec does not name.
	c.editConfigMap(t, "flags", func(cm *corev1.ConfigMap) { cm.Data["beta"] = "on" })
	flagged := ctrl.rolledOnce(t, c.release, "web", "an edit of a config named in the reload list", 3, again)

	// Removing Wave's hash from the pod template is a template change.
	_, err = c.client.AppsV1().Deployments(c.namespace).Patch(t.Context(), "web", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/template/metadata/annotations/wave.pusher.com~1config-hash"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	assertRolled(t, "Wave's hash removed", 1, flagged, c.deployment(t, "web"))
	ctrl.settled(t, c.release, "web", 0)
	assert.InDelta(t, 3, ctrl.rolls(), 0, "the controller rolled after Wave's hash was removed")
}

// TestMigrateKustomizeGenerators applies examples/generator (a
// configMapGenerator with name suffixes and confighash) with the controller
// running: the render-time hash names the suffixed ConfigMap the
// controller sees, so the first apply and a changed literal roll nothing
// extra (one ReplicaSet per render that changes the template, the rename
// and the hash together); an out-of-band edit of the suffixed ConfigMap
// rolls once, and so does the re-sync that reverts it; turning suffixes off
// rolls once (the reference is renamed, the old ConfigMap stays), and from
// then on an unread key rolls nothing.
func TestMigrateKustomizeGenerators(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "migrate-generator")
	dir := copyDir(t, "generator")
	kustomization := filepath.Join(dir, "kustomization.yaml")
	edit(t, kustomization, "namespace: shop", "namespace: "+c.namespace)
	ctrl := startController(t, "controller", c.namespace)
	configName := func() string {
		d, err := c.client.AppsV1().Deployments(c.namespace).Get(t.Context(), "shop", metav1.GetOptions{})
		require.NoError(t, err)
		return d.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Name
	}
	step := func(what string, change func()) state {
		t.Helper()
		change()
		mark := ctrl.inSync()
		c.apply(t, kustomizeBuild(t, dir))
		s := c.deployment(t, "shop")
		ctrl.inSyncAfter(t, mark)
		assert.Zero(t, ctrl.rolls(), "%s: the controller rolled", what)
		return s
	}

	first := step("first apply", func() {})
	assert.Equal(t, 1, first.replicaSets)
	assert.Regexp(t, `^app-config-[a-z0-9]{10}$`, configName())

	literal := step("a consumed literal changed", func() { edit(t, kustomization, "LOG_LEVEL=info", "LOG_LEVEL=debug") })
	assertRolled(t, "a consumed literal changed", 1, first, literal)

	c.editConfigMap(t, configName(), func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
	edited := ctrl.rolledOnce(t, c.release, "shop", "an out-of-band edit of the suffixed ConfigMap", 1, literal)

	// The GitOps tool re-applies the render: the ConfigMap is back to its
	// literal, which the pods no longer run: one more roll, the
	// controller's; the render changes nothing on the pod template.
	suffixed := configName()
	c.apply(t, kustomizeBuild(t, dir))
	resynced := ctrl.rolledOnce(t, c.release, "shop", "a re-sync reverting the edit", 2, edited)
	assert.Equal(t, literal.hash(), resynced.hash())

	mark := ctrl.inSync()
	edit(t, kustomization, "configMapGenerator:", "generatorOptions:\n  disableNameSuffixHash: true\nconfigMapGenerator:")
	c.apply(t, kustomizeBuild(t, dir))
	unsuffixed := c.deployment(t, "shop")
	ctrl.inSyncAfter(t, mark)
	assertRolled(t, "suffixes turned off", 1, resynced, unsuffixed)
	assert.Equal(t, "app-config", configName())
	assert.InDelta(t, 2, ctrl.rolls(), 0, "suffixes turned off: the controller rolled")
	_, err := c.client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), suffixed, metav1.GetOptions{})
	require.NoError(t, err, "the suffixed ConfigMap stays until pruned")

	events := ctrl.metric("confighash_config_events_total", `change="content"`)
	edit(t, kustomization, "UNUSED=not-consumed", "UNUSED=changed")
	c.apply(t, kustomizeBuild(t, dir))
	ctrl.settled(t, c.release, "shop", events+1)
	assertRolled(t, "an unread literal without suffixes", 0, unsuffixed, c.deployment(t, "shop"))
	assert.InDelta(t, 2, ctrl.rolls(), 0, "an unread literal: the controller rolled")
}
