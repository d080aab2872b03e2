package examples_test

import (
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
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestMain stops the control plane the Helm lifecycle tests share.
func TestMain(m *testing.M) { os.Exit(cptest.Run(m)) }

// release is one Helm release, installed and upgraded with the real helm
// (v3 with bin/confighash as its post-renderer, v4 with the plugin from
// postrenderer/plugin) into a namespace of its own on the shared control
// plane, where kube-controller-manager makes a ReplicaSet per pod template.
type release struct {
	name, namespace string
	h3, h4          testtools.Helm
	client          kubernetes.Interface
}

// newRelease readies both Helm versions for a release in a new namespace.
func newRelease(t *testing.T, name, namespace string) *release {
	t.Helper()
	cp := cptest.Shared(t)
	confighash := testtools.Tool(t, "confighash")
	r := &release{name: name, namespace: namespace, client: kubernetes.NewForConfigOrDie(cp.RESTConfig())}
	newHelm := func(version int) testtools.Helm {
		h := testtools.NewHelm(t, version)
		h.Env = append(h.Env, "KUBECONFIG="+cp.KubeconfigPath(), "CONFIGHASH_BIN="+confighash)
		return h
	}
	r.h3, r.h4 = newHelm(3), newHelm(4)
	r.h4.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
	return r
}

// helmV returns Helm 3 or Helm 4.
func (r *release) helmV(version int) testtools.Helm {
	if version == 3 {
		return r.h3
	}
	return r.h4
}

// uninstallAtEnd uninstalls the release with h when the test ends: a
// chart's ClusterRoles and CRDs outlive its namespace, and the next run
// (-count) installs them anew. --wait waits for the CRDs to go, which the
// API server does only once its CRD finalizer has listed and deleted their
// custom resources. That list can fail at first ("storage is
// (re)initializing", the custom resources' watch cache not ready yet);
// the finalizer's retry, a few milliseconds later, may work from a copy of
// the CRD its informer has not updated yet, and a conflict there ends the
// retry without another (read in the code, not traced), leaving the CRD
// Terminating until the informer's 5-minute resync
// (kube-apiserver 1.37's apiextensions crd_finalizer.go; reproduced with
// go run ./hack/devcluster: cert-manager's CRDs applied, deleted a second
// later, one of six Terminating for 4 minutes with that message). Helm has
// then deleted every object of the release and only waits for the API
// server: that is logged, not failed (a -count rerun may find the CRD still
// there). Any other error fails.
func (r *release) uninstallAtEnd(t *testing.T, h testtools.Helm) {
	t.Cleanup(func() {
		res := h.Run(t, nil, "uninstall", r.name, "--namespace", r.namespace, "--wait", "--timeout", "3m")
		if res.ExitCode != 0 && onlyTerminating(res.Stderr) {
			t.Logf("helm uninstall: the API server is still deleting CRDs of the release: %s", res.Stderr)
			return
		}
		assert.Zero(t, res.ExitCode, "helm uninstall: %s", res.Stderr)
	})
}

// terminatingCRD is how helm uninstall --wait reports a CRD it deleted that
// the API server has not removed yet.
var terminatingCRD = regexp.MustCompile(`resource CustomResourceDefinition//[^ ]+ still exists\. status: Terminating, message: [^,\n]*`)

// uninstallFrame is what helm uninstall prints around its errors.
var uninstallFrame = regexp.MustCompile(`Error: uninstallation completed with \d+ error\(s\):|context deadline exceeded|[\s,]`)

// onlyTerminating reports whether every error helm uninstall printed is a
// CRD still terminating when --wait gave up.
func onlyTerminating(stderr string) bool {
	rest := terminatingCRD.ReplaceAllString(stderr, "")
	if rest == stderr {
		return false
	}
	return uninstallFrame.ReplaceAllString(rest, "") == ""
}

// eachHelm runs f in a parallel subtest for Helm 3 and for Helm 4, each
// with a release named name in a namespace of its own (<prefix>-helm3,
// <prefix>-helm4).
func eachHelm(t *testing.T, name, prefix string, f func(t *testing.T, version int, r *release, h testtools.Helm)) {
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", version), func(t *testing.T) {
			t.Parallel()
			r := newRelease(t, name, fmt.Sprintf("%s-helm%d", prefix, version))
			f(t, version, r, r.helmV(version))
		})
	}
}

// postRenderer is what a user adds to a helm command to run confighash: the
// binary for Helm 3, the plugin for Helm 4, and the release namespace.
func (r *release) postRenderer(t *testing.T, h testtools.Helm) []string {
	pr := "confighash"
	if h.Version == 3 {
		pr = testtools.Tool(t, "confighash")
	}
	return []string{"--post-renderer", pr, "--post-renderer-args=--namespace=" + r.namespace}
}

// helm runs a release command (install, upgrade) of chart with the
// post-renderer and the extra args; post holds the post-renderer flags,
// r.postRenderer's when nil.
func (r *release) helm(t *testing.T, h testtools.Helm, verb, chart string, post []string, args ...string) testtools.Result {
	t.Helper()
	if post == nil {
		post = r.postRenderer(t, h)
	}
	all := append([]string{verb, r.name, chart, "--namespace", r.namespace}, args...)
	return h.Run(t, nil, append(all, post...)...)
}

// mustHelm is helm that fails the test unless helm succeeds; it returns
// what helm printed.
func (r *release) mustHelm(t *testing.T, h testtools.Helm, verb, chart string, args ...string) string {
	t.Helper()
	res := r.helm(t, h, verb, chart, nil, args...)
	require.Zero(t, res.ExitCode, "%s %s: %s", h, verb, res.Stderr)
	return res.Stdout
}

// state is what tells whether a workload rolled: its pod template's
// annotations, its generation and (of a Deployment) its ReplicaSets.
type state struct {
	annotations map[string]string
	external    string // confighash.dev/external on the workload
	generation  int64
	replicaSets int
}

func (d state) hash() string { return d.annotations[hashKey] }

// deployment reads the Deployment name once the Deployment controller has
// acted on its current generation, so its ReplicaSets are counted for it.
func (r *release) deployment(t *testing.T, name string) state {
	t.Helper()
	var d state
	kubetest.EventuallyTrue(t, time.Minute, 100*time.Millisecond, "the Deployment controller to observe "+name, func() bool {
		dep, err := r.client.AppsV1().Deployments(r.namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || dep.Status.ObservedGeneration != dep.Generation {
			return false
		}
		rs, err := kubetest.OwnedReplicaSets(t.Context(), r.client, r.namespace, dep.UID)
		if err != nil || !hasTemplate(rs, dep) {
			return false
		}
		d = state{annotations: dep.Spec.Template.Annotations, external: dep.Annotations[externalKey],
			generation: dep.Generation, replicaSets: len(rs)}
		return true
	})
	return d
}

// hasTemplate reports whether one of the ReplicaSets runs the Deployment's
// current pod template (by its annotations, where confighash writes).
func hasTemplate(rs []appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	for _, r := range rs {
		if maps.Equal(r.Spec.Template.Annotations, d.Spec.Template.Annotations) {
			return true
		}
	}
	return false
}

// assertNoRoll fails unless the Deployment's pod template is the one it was.
func assertNoRoll(t *testing.T, what string, before, after state) {
	t.Helper()
	assert.Equal(t, before.hash(), after.hash(), "%s: the hash changed", what)
	assert.Equal(t, before.generation, after.generation, "%s: the Deployment's spec changed", what)
	assert.Equal(t, before.replicaSets, after.replicaSets, "%s: ReplicaSets", what)
}

// assertRolledOnce fails unless the Deployment got one new pod template and
// one new ReplicaSet.
func assertRolledOnce(t *testing.T, what string, before, after state) {
	t.Helper()
	assert.NotEqual(t, before.hash(), after.hash(), "%s: the hash did not change", what)
	assert.Equal(t, before.generation+1, after.generation, "%s: generation", what)
	assert.Equal(t, before.replicaSets+1, after.replicaSets, "%s: ReplicaSets", what)
}

const (
	hashKey     = "confighash.dev/hash"
	externalKey = "confighash.dev/external"
)

// greeter holds examples/helm's values for these tests: no replicas (no
// kubelet runs pods, and helm --wait then has nothing to wait for) and no
// post-install hook Job (no kubelet would complete it).
var greeter = []string{"--set", "replicas=0", "--set", "smokeTest.enabled=false"}

// TestHelmLifecycle installs and upgrades examples/helm with each Helm
// version as a user does, and counts the Deployment's rollouts: an upgrade
// that changes a ConfigMap value rolls it once, one that changes nothing
// (--reuse-values) does not, --dry-run=server prints the hash the upgrade
// then writes and changes nothing, and an upgrade that fails after the
// post-renderer ran (--atomic in Helm 3, --rollback-on-failure in Helm 4)
// leaves the hash it had; an upgrade without the post-renderer drops the
// hash and rolls it.
func TestHelmLifecycle(t *testing.T) {
	chart := filepath.Join(testtools.RepoRoot(t), "examples", "helm")
	eachHelm(t, "web", "lifecycle", func(t *testing.T, version int, r *release, h testtools.Helm) {
		deploy := "web-greeter"

		r.mustHelm(t, h, "upgrade", chart, append([]string{"--install", "--create-namespace"}, greeter...)...)
		installed := r.deployment(t, deploy)
		require.NotEmpty(t, installed.hash(), "upgrade --install of a new release")
		require.Equal(t, 1, installed.replicaSets)

		r.mustHelm(t, h, "upgrade", chart, "--reuse-values")
		assertNoRoll(t, "upgrade --reuse-values", installed, r.deployment(t, deploy))

		change := []string{"--reuse-values", "--set", "env.LOG_LEVEL=debug"}
		dry := r.mustHelm(t, h, "upgrade", chart, append(change, "--dry-run=server")...)
		assertNoRoll(t, "upgrade --dry-run=server", installed, r.deployment(t, deploy))
		predicted := hashLine.FindStringSubmatch(dry)
		require.NotNil(t, predicted, "no hash in the dry run:\n%s", dry)

		r.mustHelm(t, h, "upgrade", chart, change...)
		changed := r.deployment(t, deploy)
		assertRolledOnce(t, "a ConfigMap value changed", installed, changed)
		assert.Equal(t, predicted[1], changed.hash(), "the hash --dry-run=server printed")

		r.mustHelm(t, h, "upgrade", chart, "--reuse-values")
		assertNoRoll(t, "upgrade --reuse-values after the change", changed, r.deployment(t, deploy))

		// The API server refuses the Deployment after the ConfigMap
		// was updated; Helm rolls the release back to the last one.
		onFailure := map[int]string{3: "--atomic", 4: "--rollback-on-failure"}[version]
		res := r.helm(t, h, "upgrade", chart, nil, "--reuse-values", "--set", "greeting=Hallo", "--set", "image=", onFailure, "--timeout", "1m")
		require.NotZero(t, res.ExitCode, "an upgrade with no image succeeded")
		assert.Contains(t, res.Stderr, "rolled back")
		assertNoRoll(t, "a failed upgrade "+onFailure, changed, r.deployment(t, deploy))
		cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(t.Context(), deploy, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "Hello from confighash", cm.Data["GREETING"], "the ConfigMap after the rollback")

		// An upgrade without the post-renderer drops the hash: one
		// rollout, though no config changed.
		res = r.helm(t, h, "upgrade", chart, []string{}, "--reuse-values")
		require.Zero(t, res.ExitCode, res.Stderr)
		plain := r.deployment(t, deploy)
		assert.Empty(t, plain.hash(), "the hash after an upgrade without the post-renderer")
		assertRolledOnce(t, "an upgrade without the post-renderer", changed, plain)
	})
}

// TestHelm3ReleaseUpgradedWithHelm4 installs a release with Helm 3 and
// upgrades it with Helm 4 and the same values: the hashes agree, so nothing
// rolls (examples/helm's Deployment, the corpus promtail chart's DaemonSet).
func TestHelm3ReleaseUpgradedWithHelm4(t *testing.T) {
	cases := []struct {
		name, chart, workload string
		args                  []string
	}{
		{"examples/helm", filepath.Join(testtools.RepoRoot(t), "examples", "helm"), "Deployment/web-greeter", greeter},
		{"promtail", filepath.Join(testtools.Corpus(t), "charts", "promtail"), "DaemonSet/web-promtail",
			[]string{"--set", "configmap.enabled=true"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRelease(t, "web", fmt.Sprintf("helm3to4-%d", i))
			r.mustHelm(t, r.h3, "install", tc.chart, append([]string{"--create-namespace"}, tc.args...)...)
			before := r.workload(t, tc.workload)
			require.NotEmpty(t, before.hash(), "Helm 3 installed no hash")
			r.mustHelm(t, r.h4, "upgrade", tc.chart, tc.args...)
			after := r.workload(t, tc.workload)
			assert.Equal(t, before.hash(), after.hash(), "Helm 3's and Helm 4's hash")
			assert.Equal(t, before.generation, after.generation, "the pod template changed")
		})
	}
}

// workload reads the pod template annotations and generation of a
// Deployment or DaemonSet named Kind/name.
func (r *release) workload(t *testing.T, id string) state {
	t.Helper()
	kind, name, _ := strings.Cut(id, "/")
	switch kind {
	case "Deployment":
		return r.deployment(t, name)
	case "DaemonSet":
		ds, err := r.client.AppsV1().DaemonSets(r.namespace).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		return state{annotations: ds.Spec.Template.Annotations, generation: ds.Generation}
	}
	t.Fatalf("no reader for %s", id)
	return state{}
}

// TestHelmPostRendererArgs passes confighash a flag besides --namespace
// (--prefix) through --post-renderer-args, as each Helm version takes it:
// one flag per --post-renderer-args; several flags in one value reach
// confighash as one argument, and the install fails before it creates
// anything.
func TestHelmPostRendererArgs(t *testing.T) {
	chart := filepath.Join(testtools.RepoRoot(t), "examples", "helm")
	eachHelm(t, "web", "args", func(t *testing.T, version int, r *release, h testtools.Helm) {
		pr := r.postRenderer(t, h)[:2]
		joined := slices.Concat(pr, []string{"--post-renderer-args", "--namespace=" + r.namespace + " --prefix=acme.io"})
		res := r.helm(t, h, "install", chart, joined, append([]string{"--create-namespace"}, greeter...)...)
		assert.NotZero(t, res.ExitCode, "two flags in one --post-renderer-args")
		assert.Contains(t, res.Stderr, `namespace "`+r.namespace+` --prefix=acme.io" is not a namespace name`)
		assert.NotZero(t, h.Run(t, nil, "status", r.name, "--namespace", r.namespace).ExitCode, "a release after the failed install")

		split := slices.Concat(pr, []string{"--post-renderer-args=--namespace=" + r.namespace, "--post-renderer-args=--prefix=acme.io"})
		res = r.helm(t, h, "install", chart, split, append([]string{"--create-namespace"}, greeter...)...)
		require.Zero(t, res.ExitCode, res.Stderr)
		installed := r.deployment(t, "web-greeter")
		assert.Empty(t, installed.hash(), "confighash.dev/hash under another prefix")
		require.Regexp(t, `^v1-sha256:`, installed.annotations["acme.io/hash"])

		res = r.helm(t, h, "upgrade", chart, split, "--reuse-values")
		require.Zero(t, res.ExitCode, res.Stderr)
		upgraded := r.deployment(t, "web-greeter")
		assert.Equal(t, installed.generation, upgraded.generation, "an unchanged upgrade with --prefix changed the pod template")
	})
}

// hookedChart writes a chart whose Deployment consumes two hook objects: a
// ConfigMap created before install and before every upgrade, and a Secret
// holding a password generated on install only (resource-policy keep, as
// charts write it).
func hookedChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: hooked\nversion: 0.1.0\n",
		"values.yaml": "setting: one\n",
		"templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
data:
  SETTING: {{ .Values.setting | quote }}
`,
		"templates/password.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-password
  annotations:
    helm.sh/hook: pre-install
    helm.sh/resource-policy: keep
stringData:
  password: {{ randAlphaNum 16 | quote }}
`,
		"templates/app.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  replicas: 0
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: busybox
          envFrom:
            - configMapRef: {name: {{ .Release.Name }}-settings}
            - secretRef: {name: {{ .Release.Name }}-password}
`,
	}
	writeTree(t, dir, files)
	return dir
}

// TestHelmHookConfigs installs a chart whose Deployment consumes hook
// objects. Helm 3 sends no hook to its post-renderer: both are external.
// Helm 4 sends them all, and runs a hook only on the events it names: the
// ConfigMap made on install and upgrade is hashed, the Secret made on
// install only is external, since an upgrade renders a new password that it
// never applies. So an upgrade that changes nothing rolls nothing, and one
// that changes the ConfigMap rolls the Deployment once under Helm 4 (under
// Helm 3 that is the controller's to see).
func TestHelmHookConfigs(t *testing.T) {
	chart := hookedChart(t)
	eachHelm(t, "web", "hooks", func(t *testing.T, version int, r *release, h testtools.Helm) {
		r.mustHelm(t, h, "install", chart, "--create-namespace")
		installed := r.deployment(t, "web-app")
		external := map[int]string{3: "ConfigMap/web-settings,Secret/web-password", 4: "Secret/web-password"}[version]
		assert.Equal(t, external, installed.external, "external configs")
		if version == 4 {
			assert.NotEmpty(t, installed.hash(), "the hook ConfigMap made on install and upgrade is hashed")
		}

		r.mustHelm(t, h, "upgrade", chart, "--reuse-values")
		assertNoRoll(t, "an upgrade that changes nothing", installed, r.deployment(t, "web-app"))

		r.mustHelm(t, h, "upgrade", chart, "--reuse-values", "--set", "setting=two")
		changed := r.deployment(t, "web-app")
		if version == 4 {
			assertRolledOnce(t, "the hook ConfigMap changed", installed, changed)
		} else {
			assertNoRoll(t, "the hook ConfigMap changed, under Helm 3", installed, changed)
		}
		cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(t.Context(), "web-settings", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "two", cm.Data["SETTING"], "the pre-upgrade hook ran")
	})
}

// TestHelmJobUpgrade installs a chart whose Job (not a hook: applied like
// any object) reads a ConfigMap, then upgrades it with a changed value. The
// API server refuses any change of the pod template of a Job that is not
// suspended (no kubelet runs it here; that does not matter), so confighash
// writes a Job's hash on the Job's own metadata: the upgrade succeeds, as
// it does without confighash, and the hash there follows the content.
func TestHelmJobUpgrade(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: migrate\nversion: 0.1.0\n",
		"values.yaml": "setting: one\n",
		"templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  SETTING: {{ .Values.setting | quote }}
`,
		"templates/job.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox
          envFrom:
            - configMapRef: {name: {{ .Release.Name }}-settings}
`,
	})
	eachHelm(t, "web", "job", func(t *testing.T, version int, r *release, h testtools.Helm) {
		job := func() (meta, tmpl map[string]string) {
			j, err := r.client.BatchV1().Jobs(r.namespace).Get(t.Context(), "web-migrate", metav1.GetOptions{})
			require.NoError(t, err)
			return j.Annotations, j.Spec.Template.Annotations
		}
		r.mustHelm(t, h, "install", dir, "--create-namespace")
		installed, tmpl := job()
		assert.NotContains(t, tmpl, hashKey, "nothing on the Job's pod template")

		r.mustHelm(t, h, "upgrade", dir, "--reuse-values", "--set", "setting=two")
		upgraded, tmpl := job()
		require.NotEmpty(t, installed[hashKey], "the Job's hash, on its metadata")
		assert.NotEqual(t, installed[hashKey], upgraded[hashKey], "the hash follows the ConfigMap")
		assert.NotContains(t, tmpl, hashKey, "nothing on the Job's pod template")
	})
}
