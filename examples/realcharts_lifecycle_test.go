package examples_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// lifecycleCharts are the rows of clusterCharts the lifecycle runs on, each
// with a value that no pod template holds and no workload reads (%s is the
// value: a ServiceAccount annotation, or for ingress-nginx a key of the
// controller ConfigMap that the DaemonSet does not read), and args for the
// objects whose names hold no release name. (Not argo-cd: its CRDs are
// cluster-wide, TestRealChartsOnCluster installs them, and it takes a
// minute alone.)
var lifecycleCharts = map[string]struct {
	unrelated string
	args      []string
	// edit replaces the value of the row's first edit, when that is the
	// value the lifecycle leaves.
	edit string
}{
	"descheduler": {unrelated: `serviceAccount.annotations.example\.com/size=%s`},
	"ingress-nginx": {unrelated: "controller.config.proxy-body-size=%s",
		args: []string{"--set", "controller.ingressClassResource.enabled=false"}, edit: "false"},
	"grafana": {unrelated: `serviceAccount.annotations.example\.com/size=%s`},
}

// TestRealChartsReleaseLifecycle runs the Helm release lifecycle on the
// rows of clusterCharts, each with Helm 3 (bin/confighash as
// --post-renderer) and Helm 4 (the plugin), with the controller watching
// the release's namespace, and counts rollouts by the revision each
// workload's controller gives its current template (a rollback to an
// earlier template raises it as a new template does):
//   - helm upgrade --install twice with the same values: the second rolls
//     nothing;
//   - helm upgrade of a consumed value rolls its readers once, and helm
//     rollback to the previous revision rolls them back once, onto their
//     earlier ReplicaSets and ControllerRevisions (no new template), with
//     the render-time hashes of before the upgrade; the controller rolls
//     nothing on top, and status says current;
//   - helm upgrade --reuse-values and --reset-then-reuse-values with a
//     change that no workload reads roll nothing;
//   - after an out-of-band edit of a consumed key, which the controller
//     rolls, helm upgrade --force with the same values replaces every
//     object with the one rendered (Helm 3): the edit is undone and the
//     controller's record gone, each reader rolls once more, back to the
//     render's template, and the controller rolls nothing. Helm 4 (--force
//     is its deprecated --force-replace) refuses it on a release it
//     applied server-side, its default, and changes nothing; with
//     --server-side=false it replaces them as Helm 3 does.
//
// Each release has a name of its own (lifeN), so that the charts'
// ClusterRoles do not collide across Helm versions and tests.
func TestRealChartsReleaseLifecycle(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	for _, tc := range clusterCharts {
		lc, ok := lifecycleCharts[tc.chart]
		if !ok {
			continue
		}
		for _, version := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/helm%d", tc.chart, version), func(t *testing.T) {
				t.Parallel()
				name := fmt.Sprintf("life%d", version)
				chart, args := namedChart(t, tc.chart, tc.values, name, slices.Concat(tc.args, lc.args))
				checkReleaseLifecycle(t, tc, lc.unrelated, lc.edit, name, version, chart, args)
			})
		}
	}
}

// namedChart copies the realCharts row named chart and returns it with
// args, after the row's values file when values is set, for a release
// named name instead of web.
func namedChart(t *testing.T, chart string, values bool, name string, args []string) (string, []string) {
	t.Helper()
	i := slices.IndexFunc(realCharts, func(r realChart) bool { return r.name == chart })
	require.GreaterOrEqual(t, i, 0, "no row %s in realCharts", chart)
	if values {
		path := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(path, []byte(inRelease(realCharts[i].values, name)), 0o644))
		args = append([]string{"--values", path}, args...)
	}
	return realChartCopy(t, realCharts[i]), args
}

// inRelease rewrites the names of release web in s (web-…) as those of a
// release named name.
func inRelease(s, name string) string { return strings.ReplaceAll(s, "web-", name+"-") }

// ofRelease returns the objects (Kind/web-name) of a release named name.
func ofRelease(ids []string, name string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = inRelease(id, name)
	}
	return out
}

// chartRelease is a release of a real chart in a namespace of its own, and
// the controller watching that namespace.
type chartRelease struct {
	*release
	h    testtools.Helm
	ctrl *controllerProc
}

// newChartRelease creates a namespace and starts the controller on it
// with the coalescing window (default 2s), for a release named name.
func newChartRelease(t *testing.T, prefix, name string, version int, window string) *chartRelease {
	t.Helper()
	c := newCluster(t, prefix)
	r := newRelease(t, name, c.namespace)
	ctrl := startController(t, "controller", c.namespace, "--coalesce-window", cmp.Or(window, "2s"))
	return &chartRelease{release: r, h: r.helmV(version), ctrl: ctrl}
}

// install installs the chart with helm upgrade --install; the release is
// uninstalled at the end, since the chart's ClusterRoles outlive the
// namespace. It returns the workloads the controller manages (Kind/name).
func (cr *chartRelease) install(t *testing.T, chart string, args ...string) []string {
	t.Helper()
	cr.mustHelm(t, cr.h, "upgrade", chart, append([]string{"--install"}, args...)...)
	cr.uninstallAtEnd(t, cr.h)
	workloads := slices.Sorted(maps.Keys(statusOf(t, cr.namespace)))
	require.NotEmpty(t, workloads, "no workload the controller manages")
	return workloads
}

// settled waits until the controller found every workload in sync, then
// checks that it has rolled nothing and that status says current for each.
func (cr *chartRelease) settled(t *testing.T, what string, workloads []string) map[string]status.Workload {
	t.Helper()
	cr.ctrl.settledAll(t, cr.release, workloads)
	assert.Zero(t, cr.ctrl.rolls(), "the controller rolled after %s", what)
	st := statusOf(t, cr.namespace)
	for id, w := range st {
		assert.Equal(t, status.ConfigCurrent, w.Config, "%s after %s: %s %v", id, what, w.Reason, w.Changed)
	}
	return st
}

// checkReleaseLifecycle runs the lifecycle TestRealChartsReleaseLifecycle
// describes on one chart and Helm version, as release name.
func checkReleaseLifecycle(t *testing.T, tc clusterChart, unrelated, edit, name string, version int, chart string, args []string) {
	cr := newChartRelease(t, fmt.Sprintf("life-%s-helm%d", tc.chart, version), name, version, tc.window)
	workloads := cr.install(t, chart, args...)
	installed := cr.settled(t, "install", workloads)
	first := cr.rollouts(t, workloads)
	for id, n := range first {
		assert.Equal(t, 1, n, "%s: revision after install", id)
	}

	cr.mustHelm(t, cr.h, "upgrade", chart, append([]string{"--install"}, args...)...)
	assert.Equal(t, first, cr.rollouts(t, workloads), "rollouts after a second upgrade --install with the same values")
	cr.settled(t, "a second upgrade --install", workloads)

	readers := ofRelease(append(slices.Clone(tc.upgrade.moved), tc.checksums...), name)
	what := "helm upgrade " + strings.Join(tc.upgrade.args[1:], " ")
	cr.mustHelm(t, cr.h, "upgrade", chart, append([]string{"--reuse-values"}, tc.upgrade.args...)...)
	upgraded := cr.rollouts(t, workloads)
	assertReadersRolled(t, what, first, upgraded, readers)
	templates := cr.rollCounts(t, workloads)
	cr.settled(t, what, workloads)

	// helm rollback to the previous revision, which holds the values of
	// the install: the readers take their earlier template back.
	res := cr.h.Run(t, nil, "rollback", cr.name, "--namespace", cr.namespace)
	require.Zero(t, res.ExitCode, "helm rollback: %s", res.Stderr)
	rolledBack := cr.rollouts(t, workloads)
	assertReadersRolled(t, "helm rollback", upgraded, rolledBack, readers)
	assert.Equal(t, templates, cr.rollCounts(t, workloads), "pod templates after helm rollback: the earlier ones again")
	for id, w := range cr.settled(t, "helm rollback", workloads) {
		assert.Equal(t, installed[id].RenderHash, w.RenderHash, "%s: the render-time hash after helm rollback", id)
	}
	assert.Equal(t, rolledBack, cr.rollouts(t, workloads), "rollouts once the controller saw the rollback")

	// A change no workload reads, on top of the values of the rollback.
	for _, c := range []struct{ flag, value string }{{"--reuse-values", "8m"}, {"--reset-then-reuse-values", "16m"}} {
		set := fmt.Sprintf(unrelated, c.value)
		what := "helm upgrade " + c.flag + " --set-string " + set
		cr.mustHelm(t, cr.h, "upgrade", chart, c.flag, "--set-string", set)
		manifest := cr.h.MustRun(t, "get", "manifest", cr.name, "--namespace", cr.namespace)
		assert.Regexp(t, `: "?`+c.value+`"?\n`, manifest, "%s: the new value is not in the release", what)
		assert.Equal(t, rolledBack, cr.rollouts(t, workloads), "rollouts after %s", what)
		cr.settled(t, what, workloads)
	}

	// An out-of-band edit, which the controller rolls, then --force.
	e := tc.edits[0]
	e.name = inRelease(e.name, name)
	e.value = cmp.Or(edit, e.value)
	cr.editConfig(t, e)
	readers = ofRelease(e.readers, name)
	cr.ctrl.waitFor(t, "the readers rolled", func(v float64) bool { return v >= float64(len(readers)) }, "confighash_rollouts_total", `dry_run="false"`)
	edited := cr.rollouts(t, workloads)
	assertReadersRolled(t, "an out-of-band edit", rolledBack, edited, readers)
	if version == 4 {
		res := cr.helm(t, cr.h, "upgrade", chart, nil, "--reuse-values", "--force")
		require.NotZero(t, res.ExitCode, "helm4 upgrade --force of a release applied server-side")
		assert.Contains(t, res.Stderr, "cannot use server-side apply and force replace together")
		assert.Equal(t, edited, cr.rollouts(t, workloads), "rollouts after a refused helm upgrade --force")
		cr.mustHelm(t, cr.h, "upgrade", chart, "--reuse-values", "--force-replace", "--server-side=false")
	} else {
		cr.mustHelm(t, cr.h, "upgrade", chart, "--reuse-values", "--force")
	}
	forced := cr.rollouts(t, workloads)
	assertReadersRolled(t, "helm upgrade --force", edited, forced, readers)
	cr.ctrl.settledAll(t, cr.release, workloads)
	assert.InDelta(t, len(readers), cr.ctrl.rolls(), 0, "the controller's rolls: the edit's only")
	assert.Equal(t, forced, cr.rollouts(t, workloads), "rollouts once the controller saw helm upgrade --force")
	for id, w := range statusOf(t, cr.namespace) {
		assert.Equal(t, status.ConfigCurrent, w.Config, "%s after helm upgrade --force: %s %v", id, w.Reason, w.Changed)
		assert.Equal(t, installed[id].RenderHash, w.LiveHash, "%s: the live configs after helm upgrade --force are the render's", id)
		assert.Empty(t, w.ControllerHash, "%s: the controller's record after helm upgrade --force", id)
	}
}

// revisionKey is the annotation in which the Deployment controller numbers
// a Deployment's rollouts and its ReplicaSets.
const revisionKey = "deployment.kubernetes.io/revision"

// rollouts returns, per workload (Kind/name), the revision its controller
// gave the current pod template, once it has acted on the workload's
// generation: the number of rollouts, counting a return to an earlier
// template (helm rollback), which rollCounts does not, as it counts
// templates.
func (r *release) rollouts(t *testing.T, workloads []string) map[string]int {
	t.Helper()
	return perWorkload(t, workloads, "the current revision of ", func(kind, name string) (int, bool) { return r.currentRevision(t, kind, name) })
}

// currentRevision is the revision of the workload's current ReplicaSet or
// ControllerRevision; ok is false until its controller has observed its
// generation and numbered its template.
func (r *release) currentRevision(t *testing.T, kind, name string) (revision int, ok bool) {
	t.Helper()
	if kind == "Deployment" {
		d, rs := r.replicaSets(t, name)
		current := slices.ContainsFunc(rs, func(s appsv1.ReplicaSet) bool {
			return maps.Equal(s.Spec.Template.Annotations, d.Spec.Template.Annotations) && s.Annotations[revisionKey] == d.Annotations[revisionKey]
		})
		n, err := strconv.Atoi(d.Annotations[revisionKey])
		return n, err == nil && current && d.Status.ObservedGeneration == d.Generation
	}
	_, current, observed := r.controllerRevisions(t, kind, name)
	if current == nil {
		return 0, false
	}
	return int(current.Revision), observed
}

// hookChart is a row of realCharts installed for its hooks: hook Jobs and
// helm test Pods. Names are Kind/name in a release named web.
type hookChart struct {
	chart  string
	values bool
	args   []string
	// upgrades are value changes run in turn with --reuse-values, and the
	// workloads whose hash each moves.
	upgrades []chartChange
	// secrets are made before the install, as a hook Job would make them
	// if it ran.
	secrets map[string]map[string]string
	// installJobs are the Jobs the install's hooks run, and jobs the ones
	// each upgrade's run; hashed tells whether Helm 4 hashes the latter
	// (they consume a config of the release that the upgrades change).
	installJobs []string
	jobs        []string
	hashed      bool
	// tests are the Pods helm test runs.
	tests []string
	// edit, when set, is an out-of-band edit of a config the hook Jobs
	// consume too.
	edit *clusterEdit
}

var hookCharts = []hookChart{
	{
		// alertmanager's test hook Pod, turned on. (Not grafana's: its
		// .helmignore leaves out tests/, which drops templates/tests as
		// well, and helm test finds no test.)
		chart: "alertmanager",
		args:  []string{"--set", "testFramework.enabled=true"},
		upgrades: []chartChange{
			{[]string{"--set", "config.global.resolve_timeout=10m"}, []string{"StatefulSet/web-alertmanager"}},
		},
		tests: []string{"Pod/web-alertmanager-test-connection"},
	},
	{
		// ingress-nginx with the row's values and its admission webhook:
		// pre-install/pre-upgrade and post-install/post-upgrade hook Jobs
		// that consume no config; the first would write the webhook's
		// certificate Secret, which the DaemonSet mounts.
		chart:   "ingress-nginx",
		values:  true,
		args:    []string{"--set", "controller.ingressClassResource.enabled=false"},
		secrets: map[string]map[string]string{"web-ingress-nginx-admission": {"ca": "ca", "cert": "cert", "key": "key"}},
		upgrades: []chartChange{
			{[]string{"--set-string", "controller.config.use-gzip=false"}, []string{"DaemonSet/web-ingress-nginx-controller"}},
		},
		installJobs: ingressNginxAdmission,
		jobs:        ingressNginxAdmission,
	},
	{
		// kyverno with the row's values, without its CRDs (cluster-wide,
		// and each Helm version installs a release): two post-upgrade hook
		// Jobs that pull with the release's regcred Secret, and five test
		// Pods that stay.
		chart:  "kyverno",
		values: true,
		args:   []string{"--set", "crds.install=false"},
		upgrades: []chartChange{
			{[]string{"--set", "imagePullSecrets.regcred.password=second"}, kyvernoDeployments},
			{[]string{"--set", "imagePullSecrets.regcred.password=third"}, kyvernoDeployments},
		},
		jobs:   []string{"Job/web-kyverno-clean-reports", "Job/web-kyverno-migrate-resources"},
		hashed: true,
		tests: []string{
			"Pod/web-kyverno-admission-controller-metrics", "Pod/web-kyverno-cleanup-controller-liveness",
			"Pod/web-kyverno-cleanup-controller-metrics", "Pod/web-kyverno-cleanup-controller-readiness",
			"Pod/web-kyverno-reports-controller-metrics",
		},
		edit: &clusterEdit{"Secret", "regcred", corev1.DockerConfigJsonKey, `{"auths":{}}`, kyvernoDeployments},
	},
}

// ingressNginxAdmission are the hook Jobs of ingress-nginx's admission
// webhook, which run on install and on upgrade.
var ingressNginxAdmission = []string{"Job/web-ingress-nginx-admission-create", "Job/web-ingress-nginx-admission-patch"}

// kyvernoDeployments are kyverno's controllers as Kind/name.
var kyvernoDeployments = []string{
	"Deployment/kyverno-admission-controller", "Deployment/kyverno-background-controller",
	"Deployment/kyverno-cleanup-controller", "Deployment/kyverno-reports-controller",
}

// TestRealChartHooks installs rows of realCharts that have hooks with Helm
// 3 and Helm 4 (release hooksN) and the controller watching. No kubelet
// runs pods on the local control plane, and its kube-controller-manager
// runs no Job controller: the test runs kube-controller-manager's Job
// controller besides, and a hookKubelet reports each hook pod (a hook
// Job's, a helm test Pod) Succeeded without running it, so the Job
// completes and Helm, which waits for it, goes on; what a hook does inside
// its pod (the webhook certificate ingress-nginx's writes, kyverno's report
// clean-up) does not happen. It checks:
//   - the install runs the pre-install and post-install hook Jobs, and
//     each upgrade runs the pre-upgrade and post-upgrade ones anew and
//     succeeds (no immutable pod template of a Job in the way), rolling
//     the workloads whose hash moves once; helm uninstall runs the
//     pre-delete and post-delete ones;
//   - Helm 4 sends the hook Jobs through confighash, which hashes those
//     that consume a config of the release, a new hash when it changes;
//     Helm 3 sends it no hook, and its hook Jobs carry no hash;
//   - helm test of a release installed and upgraded through the
//     post-renderer passes; no test Pod (a Pod is no workload) carries a
//     confighash annotation;
//   - the controller rolls nothing after helm, status lists no Job or Pod,
//     an out-of-band edit of a config the hook Jobs consume too rolls the
//     Deployments that read it, once each, and the controller writes no
//     Event on a Job or Pod and no Pod.
func TestRealChartHooks(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	startJobController(t)
	for _, tc := range hookCharts {
		for _, version := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/helm%d", tc.chart, version), func(t *testing.T) {
				t.Parallel()
				name := fmt.Sprintf("hooks%d", version)
				chart, args := namedChart(t, tc.chart, tc.values, name, tc.args)
				checkChartHooks(t, tc, name, version, chart, args)
			})
		}
	}
}

// assertHooksRan fails unless each of the jobs ran, and checks each one's
// template with check; without check, it fails when one carries a
// confighash annotation.
func assertHooksRan(t *testing.T, what string, ran map[string]*corev1.PodTemplateSpec, jobs []string, check func(string, *corev1.PodTemplateSpec)) {
	t.Helper()
	for _, job := range jobs {
		require.Contains(t, ran, job, "%s: the hook did not run", what)
		if check != nil {
			check(job, ran[job])
			continue
		}
		for k := range ran[job].Annotations {
			assert.False(t, strings.HasPrefix(k, "confighash.dev/"), "%s: %s carries %s", what, job, k)
		}
	}
}

// startJobController runs kube-controller-manager's Job controller alone
// on the shared control plane, which runs none (it would make Pods that
// no kubelet runs); the Job controller makes each hook Job's pod and marks
// the Job complete once a hookKubelet reported the pod Succeeded.
func startJobController(t *testing.T) {
	t.Helper()
	kubeconfig := cptest.Shared(t).KubeconfigPath()
	kubetest.StartProcess(t, "job-controller", testtools.Tool(t, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig, "--controllers=job-controller", "--leader-elect=false", "--secure-port=0")
}

// checkChartHooks runs what TestRealChartHooks describes on one chart and
// Helm version, as release name.
func checkChartHooks(t *testing.T, tc hookChart, name string, version int, chart string, args []string) {
	// 5s: kyverno's CRDs lie between its ConfigMaps and Secrets and its
	// workloads in what Helm applies; with 2s and four busy loops beside
	// the test, the controller rolled its four controllers once before
	// Helm 4's update of them and Helm once more (as docs/controller.md
	// says of a render applied more than a window after its config).
	cr := newChartRelease(t, fmt.Sprintf("hooks-%s-helm%d", tc.chart, version), name, version, "5s")
	kubelet := runHookKubelet(t, cr.release)
	for secret, data := range tc.secrets {
		_, err := cr.client.CoreV1().Secrets(cr.namespace).Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: inRelease(secret, name)}, StringData: data}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	workloads := cr.install(t, chart, args...)
	assertHooksRan(t, "install", kubelet.take(), ofRelease(tc.installJobs, name), nil)
	for _, id := range workloads {
		assert.False(t, strings.HasPrefix(id, "Job/") || strings.HasPrefix(id, "Pod/"), "status lists %s", id)
	}
	cr.settled(t, "install", workloads)
	before := cr.rollouts(t, workloads)

	jobHashes := map[string]string{}
	for _, u := range tc.upgrades {
		what := "helm upgrade " + strings.Join(u.args[1:], " ")
		cr.mustHelm(t, cr.h, "upgrade", chart, append([]string{"--reuse-values"}, u.args...)...)
		after := cr.rollouts(t, workloads)
		assertReadersRolled(t, what, before, after, ofRelease(u.moved, name))
		cr.settled(t, what, workloads)
		before = after
		hashed := func(job string, tpl *corev1.PodTemplateSpec) {
			hash := tpl.Annotations[hashKey]
			if version == 4 && tc.hashed {
				assert.Equal(t, cr.liveHash(t, &tpl.Spec), hash, "%s: %s's hash under Helm 4", what, job)
				assert.NotEqual(t, jobHashes[job], hash, "%s: %s has the hash of the upgrade before", what, job)
			} else {
				assert.Empty(t, hash, "%s: %s has a hash", what, job)
			}
			jobHashes[job] = hash
		}
		assertHooksRan(t, what, kubelet.take(), ofRelease(tc.jobs, name), hashed)
	}

	res := cr.h.Run(t, nil, "test", cr.name, "--namespace", cr.namespace, "--timeout", "1m")
	require.Zero(t, res.ExitCode, "helm test: %s", res.Stderr)
	assertHooksRan(t, "helm test", kubelet.take(), ofRelease(tc.tests, name), nil)

	readers := map[string]bool{}
	if tc.edit != nil {
		cr.editConfig(t, *tc.edit)
		cr.ctrl.waitFor(t, "the readers rolled", func(v float64) bool { return v >= float64(len(tc.edit.readers)) },
			"confighash_rollouts_total", `dry_run="false"`)
		edited := cr.rollouts(t, workloads)
		cr.ctrl.settledAll(t, cr.release, workloads)
		assert.InDelta(t, len(tc.edit.readers), cr.ctrl.rolls(), 0, "the controller's rolls")
		assertReadersRolled(t, "an edit of "+tc.edit.kind+"/"+tc.edit.name, before, edited, ofRelease(tc.edit.readers, name))
		for _, id := range ofRelease(tc.edit.readers, name) {
			readers[id] = true
		}
	}
	cr.assertNoJobOrPodWritten(t, readers)
}

// liveHash computes with the hashing package the hash of the configs of
// the namespace that spec consumes, as they are now.
func (r *release) liveHash(t *testing.T, spec *corev1.PodSpec) string {
	t.Helper()
	lookup := func(kind hashing.Kind, name string) (hashing.Content, bool) {
		if kind == hashing.KindSecret {
			s, err := r.client.CoreV1().Secrets(r.namespace).Get(t.Context(), name, metav1.GetOptions{})
			require.NoError(t, err)
			return hashing.SecretContent(s), true
		}
		cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		c, err := hashing.ConfigMapContent(cm)
		require.NoError(t, err)
		return c, true
	}
	uses := hashing.Discover(spec)
	require.NotEmpty(t, uses, "the pod consumes no config")
	return hashing.Compute(r.namespace, uses, lookup, hashing.Options{})
}

// assertNoJobOrPodWritten fails when the controller wrote an Event on a
// Job or Pod, or wrote a Pod, or when its ConfigChanged Events are not on
// exactly the readers (Kind/name).
func (cr *chartRelease) assertNoJobOrPodWritten(t *testing.T, readers map[string]bool) {
	t.Helper()
	const writer = "confighash-controller"
	events, err := cr.client.EventsV1().Events(cr.namespace).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	changed := map[string]bool{}
	for _, e := range events.Items {
		if e.ReportingController != writer {
			continue
		}
		assert.NotContains(t, []string{"Job", "Pod"}, e.Regarding.Kind, "an Event on %s/%s: %s", e.Regarding.Kind, e.Regarding.Name, e.Note)
		if e.Reason == "ConfigChanged" {
			changed[e.Regarding.Kind+"/"+e.Regarding.Name] = true
		}
	}
	assert.Equal(t, readers, changed, "the workloads with a ConfigChanged Event")
	pods, err := cr.client.CoreV1().Pods(cr.namespace).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range pods.Items {
		for _, mf := range p.ManagedFields {
			assert.NotEqual(t, writer, mf.Manager, "the controller wrote Pod %s", p.Name)
		}
	}
}

// hookKubelet stands in for the kubelet for the hook pods of a namespace:
// it reports each pod that a Job owns or that Helm created as a hook (a
// helm test Pod) Succeeded without running it, and records by Kind/name
// where confighash writes and what it hashes: a Job's own metadata (the API
// server refuses changes of a Job's pod template, so its hash lives on the
// Job) with its pod spec, or a Pod as it is. The pods of Deployments,
// StatefulSets and DaemonSets stay Pending.
type hookKubelet struct {
	mu  sync.Mutex
	ran map[string]*corev1.PodTemplateSpec
}

// runHookKubelet polls the namespace's pods until the test ends.
func runHookKubelet(t *testing.T, r *release) *hookKubelet {
	t.Helper()
	k := &hookKubelet{ran: map[string]*corev1.PodTemplateSpec{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := k.complete(ctx, r); err != nil && ctx.Err() == nil {
				t.Errorf("hook kubelet: %v", err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return k
}

// take returns the pods completed since the last take.
func (k *hookKubelet) take() map[string]*corev1.PodTemplateSpec {
	k.mu.Lock()
	defer k.mu.Unlock()
	ran := k.ran
	k.ran = map[string]*corev1.PodTemplateSpec{}
	return ran
}

// complete reports the hook pods of the namespace that are not done yet
// Succeeded.
func (k *hookKubelet) complete(ctx context.Context, r *release) error {
	pods, err := r.client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		id, tpl := "Pod/"+p.Name, &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Job" {
			job, err := r.client.BatchV1().Jobs(r.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("job %s: %w", ref.Name, err)
			}
			id, tpl = "Job/"+job.Name, &corev1.PodTemplateSpec{ObjectMeta: job.ObjectMeta, Spec: job.Spec.Template.Spec}
		} else if _, hook := p.Annotations["helm.sh/hook"]; !hook || ref != nil {
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		_, err := r.client.CoreV1().Pods(r.namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "hook-kubelet"})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // deleted, or changed since listed: the next poll
		}
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
		k.mu.Lock()
		k.ran[id] = tpl
		k.mu.Unlock()
	}
	return nil
}
