package examples_test

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/statustest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// clusterEdit is a change of one key of a live ConfigMap or Secret, made
// through the API as kubectl edit makes it, and the workloads (Kind/name)
// whose pods read that key.
type clusterEdit struct {
	kind, name, key, value string
	readers                []string
}

// clusterFill is a Secret the render ships with metadata only, written in
// one update as the project's certificate rotator fills it once its pods
// run, and the workloads (Kind/name) that mount it.
type clusterFill struct {
	name    string
	data    map[string]string
	readers []string
}

// clusterChart is one real chart installed on the control plane: a row of
// realCharts (for the chart and its subcharts), the Helm version, the
// install values, the Secrets a user creates before installing, a Secret
// the project fills after the install, a value change for helm upgrade and
// the workloads that read it, an edit of a key no workload reads, and the
// out-of-band edits of consumed keys.
type clusterChart struct {
	chart string
	helm  int
	// values installs with the realCharts row's values file.
	values  bool
	args    []string
	secrets map[string]map[string]string
	filled  *clusterFill
	upgrade chartChange
	// checksums are the workloads the upgrade rolls besides the ones
	// whose hash moves, by another change of their pod template: mostly
	// the chart's own checksum annotation of a config, which moves on
	// every workload that mounts a key of it; also a pull Secret added.
	checksums []string
	// window is the controller's --coalesce-window, when not the
	// default (5s: a loaded CI machine can take over two seconds between
	// Helm 3's update of a chart's ConfigMap and of its reader).
	window string
	unread *clusterEdit
	edits  []clusterEdit
}

var clusterCharts = []clusterChart{
	{
		// One Deployment that mounts its policy ConfigMap whole: every
		// key is read. Helm 3 with bin/confighash as --post-renderer.
		chart: "descheduler",
		helm:  3,
		args:  []string{"--set", "kind=Deployment"},
		upgrade: chartChange{[]string{"--set", "deschedulerPolicy.maxNoOfPodsToEvictPerNode=5"},
			[]string{"Deployment/web-descheduler"}},
		edits: []clusterEdit{{"ConfigMap", "web-descheduler", "policy.yaml",
			"apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n", []string{"Deployment/web-descheduler"}}},
	},
	{
		// A DaemonSet that reads one key of the controller ConfigMap
		// (the row's values), without the admission webhook, whose hook
		// Jobs no kubelet would run. Helm 3 with --post-renderer.
		chart:   "ingress-nginx",
		helm:    3,
		values:  true,
		args:    []string{"--set", "controller.admissionWebhooks.enabled=false"},
		upgrade: chartChange{[]string{"--set-string", "controller.config.use-gzip=false"}, []string{"DaemonSet/web-ingress-nginx-controller"}},
		unread:  &clusterEdit{"ConfigMap", "web-ingress-nginx-controller", "allow-snippet-annotations", "true", nil},
		edits: []clusterEdit{{"ConfigMap", "web-ingress-nginx-controller", "use-gzip", "true",
			[]string{"DaemonSet/web-ingress-nginx-controller"}}},
	},
	{
		// A Deployment that mounts a ConfigMap and reads two of the three
		// keys of a Secret. Helm 4 with the plugin.
		chart:   "grafana",
		helm:    4,
		args:    []string{"--set", "adminPassword=not-random"},
		upgrade: chartChange{[]string{"--set", "adminUser=root"}, []string{"Deployment/web-grafana"}},
		unread:  &clusterEdit{"Secret", "web-grafana", "ldap-toml", "[[servers]]\n", nil},
		edits: []clusterEdit{{"ConfigMap", "web-grafana", "grafana.ini", "[log]\nmode = console\nlevel = debug\n",
			[]string{"Deployment/web-grafana"}}},
	},
	{
		// Seven workloads, each reading some keys of argocd-cmd-params-cm
		// and argocd-cm, and the Redis password Secret, which the user
		// creates when the chart's hook Job that would make it is off
		// (no kubelet runs Jobs here). Helm 4 with the plugin.
		chart: "argo-cd",
		helm:  4,
		// Helm applies the chart's three CRDs (1.8 MB) after its
		// ConfigMaps and before its workloads: 1.7 s between
		// argocd-cmd-params-cm and argocd-server in an upgrade here, alone
		// on 2 cores. With a 1 s window the controller rolls argocd-server
		// a second time, as docs/controller.md says of a render applied
		// more than a window after its ConfigMap; 5 s (the rows' default)
		// gave that second roll once too, with a CI run and two random
		// campaigns beside it on two cores; so 10 s, the controller's own
		// default.
		window: "10s",
		args:   []string{"--set", "redisSecretInit.enabled=false", "--set", "crds.keep=false"},
		secrets: map[string]map[string]string{
			"argocd-redis": {"auth": "first"},
		},
		upgrade: chartChange{[]string{"--set-string", `configs.params.server\.insecure=true`}, []string{"Deployment/web-argocd-server"}},
		checksums: []string{
			"Deployment/web-argocd-applicationset-controller", "Deployment/web-argocd-dex-server",
			"Deployment/web-argocd-notifications-controller", "Deployment/web-argocd-repo-server",
			"StatefulSet/web-argocd-application-controller",
		},
		unread: &clusterEdit{"ConfigMap", "argocd-cm", "admin.enabled", "false", nil},
		edits: []clusterEdit{
			{"ConfigMap", "argocd-cmd-params-cm", "redis.server", "redis.example:6379", []string{
				"Deployment/web-argocd-repo-server", "Deployment/web-argocd-server", "StatefulSet/web-argocd-application-controller",
			}},
			{"Secret", "argocd-redis", "auth", "second", []string{
				"Deployment/web-argocd-repo-server", "Deployment/web-argocd-server", "StatefulSet/web-argocd-application-controller",
				"Deployment/web-argocd-redis",
			}},
		},
	},
	{
		// Both Deployments mount the webhook cert Secret the chart renders
		// with metadata only; gatekeeper's rotator fills it once its pods
		// run (none run here: the test writes it as the rotator does),
		// which rolls both once, by the controller. No chart value
		// changes the content of a config they read, so the upgrade adds
		// a pull Secret (a new external use): one roll each, by the
		// template, none by the controller. Then the cert renewed. Without
		// the webhooks, the hook Jobs no kubelet would run, and the CRDs
		// (no gatekeeper runs to serve them). Helm 3 with --post-renderer.
		chart: "gatekeeper",
		helm:  3,
		args: []string{"--skip-crds", "--set", "disableValidatingWebhook=true", "--set", "disableMutation=true",
			"--set", "postInstall.labelNamespace.enabled=false", "--set", "upgradeCRDs.enabled=false"},
		secrets: map[string]map[string]string{"regcred": {"user": "first"}},
		filled: &clusterFill{"gatekeeper-webhook-server-cert",
			map[string]string{"ca.crt": "a CA", "ca.key": "a CA key", "tls.crt": "a certificate", "tls.key": "a key"},
			[]string{"Deployment/gatekeeper-audit", "Deployment/gatekeeper-controller-manager"}},
		upgrade:   chartChange{[]string{"--set", "image.pullSecrets[0].name=regcred"}, nil},
		checksums: []string{"Deployment/gatekeeper-audit", "Deployment/gatekeeper-controller-manager"},
		edits: []clusterEdit{{"Secret", "gatekeeper-webhook-server-cert", "tls.crt", "a renewed certificate",
			[]string{"Deployment/gatekeeper-audit", "Deployment/gatekeeper-controller-manager"}}},
	},
	{
		// The CRDs as templates (crds.enabled), which Helm applies between
		// the ConfigMaps and the Deployments; three ConfigMaps of config,
		// each mounted whole by one Deployment, which Helm 4 writes with
		// "|-" before the plugin hashes them (TestRealCharts: helmsDiffer):
		// the live ConfigMaps hash as the render did. The pull Secret that
		// extraObjects renders through tpl goes on the ServiceAccounts, not
		// in the pod specs: the pods get it at admission, and an edit of it
		// rolls nothing. Without the startupapicheck hook Job (no kubelet
		// runs it). Helm 4 with the plugin.
		chart:   "cert-manager",
		helm:    4,
		values:  true,
		args:    []string{"--set", "crds.enabled=true", "--set", "crds.keep=false", "--set", "startupapicheck.enabled=false"},
		upgrade: chartChange{[]string{"--set", "config.logging.verbosity=3"}, []string{"Deployment/web-cert-manager"}},
		unread:  &clusterEdit{"Secret", "web-regcred", ".dockerconfigjson", `{"auths":{"registry.example.com":{"auth":"dXNlcjpzZWNvbmQ="}}}`, nil},
		edits: []clusterEdit{
			{"ConfigMap", "web-cert-manager-cainjector", "config.yaml",
				"apiVersion: cainjector.config.cert-manager.io/v1alpha1\nkind: CAInjectorConfiguration\nlogging:\n  verbosity: 4\n",
				[]string{"Deployment/web-cert-manager-cainjector"}},
			{"ConfigMap", "web-cert-manager-webhook", "config.yaml",
				"apiVersion: webhook.config.cert-manager.io/v1alpha1\nkind: WebhookConfiguration\nsecurePort: 10260\n",
				[]string{"Deployment/web-cert-manager-webhook"}},
		},
	},
	{
		// A Deployment that reads three keys of a Secret through a
		// projected volume whose sources list items, and two keys of a
		// ConfigMap (configMapKeyRef, a volume with items), the configs
		// from extraManifests through tpl: an edit of the Secret key no
		// source lists rolls nothing, of a listed key once. The chart
		// names no namespace. Helm 3 with --post-renderer.
		chart:   "redis-exporter",
		helm:    3,
		values:  true,
		upgrade: chartChange{[]string{"--set", "files.ca=second-ca"}, []string{"Deployment/web-prometheus-redis-exporter"}},
		unread:  &clusterEdit{"Secret", "web-redis-tls", "spare.pem", "edited-spare", nil},
		edits: []clusterEdit{
			{"Secret", "web-redis-tls", "tls.key", "edited-key", []string{"Deployment/web-prometheus-redis-exporter"}},
			{"ConfigMap", "web-redis-exporter-env", "address", "redis://edited:6379", []string{"Deployment/web-prometheus-redis-exporter"}},
		},
	},
	{
		// One Deployment that mounts the file provider's ConfigMap, an
		// inline plugin's ConfigMap and a Secret whose name goes through
		// tpl, and reads a Secret key and a ConfigMap whole through env
		// (the row's values). Its crds/ (the TLSStore's among them) go in
		// before the templates. The default TLSStore's certificate Secret
		// is read by Traefik through the API, never by a pod spec: an
		// edit of it rolls nothing. Two edits of mounted configs while the
		// controller is stopped roll the Deployment once. Helm 3 with
		// --post-renderer (Helm leaves the CRDs of crds/ at uninstall).
		chart:  "traefik",
		helm:   3,
		values: true,
		upgrade: chartChange{[]string{"--set", "providers.file.content.http.middlewares.headers.headers.customResponseHeaders.X-Team=ops"},
			[]string{"Deployment/web-traefik"}},
		unread: &clusterEdit{"Secret", "web-default-cert", "tls.crt", "a renewed default certificate", nil},
		edits: []clusterEdit{
			{"ConfigMap", "web-traefik-file-provider", "config.yml", "http:\n  middlewares: {}\n", []string{"Deployment/web-traefik"}},
			{"Secret", "web-traefik-certs", "tls.key", "a renewed key", []string{"Deployment/web-traefik"}},
		},
	},
	{
		// Two Deployments with fixed names, the CRDs under templates/
		// (applied between the ConfigMaps and the Deployments) and a
		// webhook configuration for keda.sh objects no pod serves here.
		// Without the metrics server: its APIService
		// (external.metrics.k8s.io), with no pod behind it on a cluster
		// with no kubelet, fails discovery of that group for every test
		// sharing the control plane, and kube-controller-manager's
		// namespace controller deletes no namespace while discovery
		// fails. The row's values give the certificate Secret both mount
		// (certificates.autoGenerated=false) and a ConfigMap key to the
		// operator's env; the gRPC Secret the operator mounts (not
		// optional) is the user's, created before the install. The
		// webhooks' volume lists one key of its ConfigMap: an edit of the
		// other rolls nothing. Helm 4 with the plugin: helm uninstall
		// --wait deletes the six CRDs, and when one is left Terminating
		// (see uninstallAtEnd) Helm 4 names it, where Helm 3 says only
		// "context deadline exceeded", which the cleanup cannot tell from
		// another error (2 of 3 runs here with Helm 3).
		chart:   "keda",
		helm:    4,
		values:  true,
		args:    []string{"--set", "metricsServer.enabled=false"},
		secrets: map[string]map[string]string{"web-keda-grpc-certs": {"tls.crt": "a gRPC certificate"}},
		upgrade: chartChange{[]string{"--set", "files.operator=debug"}, []string{"Deployment/keda-operator"}},
		unread:  &clusterEdit{"ConfigMap", "web-keda-webhooks", "notes.txt", "second", nil},
		edits: []clusterEdit{
			{"Secret", "kedaorg-certs", "ca.crt", "a renewed CA", []string{"Deployment/keda-operator", "Deployment/keda-admission-webhooks"}},
		},
	},
}

// TestRealChartsOnCluster installs real charts (rows of realCharts) with
// helm install and the confighash post-renderer, as docs/helm.md says, each
// into a namespace of its own on the shared control plane, with
// bin/confighash-controller watching that namespace, and checks what
// confighash promises, counting rollouts by the ReplicaSets and
// ControllerRevisions of kube-controller-manager and the controller's
// metrics:
//   - the install rolls nothing beyond creating each workload, the
//     controller rolls nothing, and kubectl confighash status reports
//     every workload current;
//   - a Secret the render ships with metadata only, filled in as the
//     project's certificate rotator does: the controller rolls each reader
//     once;
//   - helm upgrade with a changed value rolls exactly the workloads that
//     read it, once, and the controller does not roll them again (nor
//     the readers of a filled Secret, whose content the render does not
//     hold);
//   - an edit of a key no workload reads rolls nothing;
//   - out-of-band edits of consumed keys with the controller stopped:
//     status says STALE for exactly the workloads that read them (naming
//     the external configs that changed) and current for the others; the
//     controller started again rolls each reader once, and status reports
//     every workload current.
func TestRealChartsOnCluster(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	for _, tc := range clusterCharts {
		t.Run(fmt.Sprintf("%s/helm%d", tc.chart, tc.helm), func(t *testing.T) {
			t.Parallel()
			i := slices.IndexFunc(realCharts, func(r realChart) bool { return r.name == tc.chart })
			require.GreaterOrEqual(t, i, 0, "no row %s in realCharts", tc.chart)
			args := tc.args
			if tc.values {
				values := filepath.Join(t.TempDir(), "values.yaml")
				require.NoError(t, os.WriteFile(values, []byte(realCharts[i].values), 0o644))
				args = append([]string{"--values", values}, args...)
			}
			checkChartOnCluster(t, tc, realChartCopy(t, realCharts[i]), args)
		})
	}
}

// checkChartOnCluster runs the row's install, upgrade and edits, as
// TestRealChartsOnCluster says.
func checkChartOnCluster(t *testing.T, tc clusterChart, chart string, args []string) {
	c := newCluster(t, "real-"+tc.chart)
	r := newRelease(t, "web", c.namespace)
	h := r.helmV(tc.helm)
	for name, data := range tc.secrets {
		c.createConfig(t, "Secret", name, data)
	}
	// A sync that applies a chart's ConfigMap and the workloads reading
	// it less than a coalescing window apart rolls them once.
	window := []string{"--coalesce-window", cmp.Or(tc.window, "5s")}
	ctrl := startController(t, "controller", c.namespace, window...)

	r.mustHelm(t, h, "install", chart, args...)
	r.uninstallAtEnd(t, h)
	installed := statusOf(t, c.namespace)
	workloads := slices.Sorted(maps.Keys(installed))
	require.NotEmpty(t, workloads, "no workload the controller manages")
	for _, e := range append(slices.Clone(tc.edits), clusterEdit{readers: tc.upgrade.moved}) {
		for _, id := range e.readers {
			require.Contains(t, workloads, id, "a reader the controller does not manage")
		}
	}
	for id, w := range installed {
		assert.Equal(t, status.ConfigCurrent, w.Config, "%s after install: %s %v", id, w.Reason, w.Changed)
		assert.NotEmpty(t, w.RenderHash, "%s: no render-time hash", id)
	}
	ctrl.settledAll(t, r, workloads)
	first := r.rollCounts(t, workloads)
	for id, n := range first {
		assert.Equal(t, 1, n, "%s: pod templates after install", id)
	}
	assert.Zero(t, ctrl.rolls(), "the controller rolled after install")

	// A Secret the project fills once its pods run: the controller rolls
	// each reader once.
	if f := tc.filled; f != nil {
		r.fillSecret(t, *f)
		readers := map[string][]string{}
		for _, id := range f.readers {
			readers[id] = []string{"Secret/" + f.name}
		}
		first = ctrl.rolledReaders(t, c, "Secret "+f.name+" filled", workloads, first, readers)
	}
	rolls := ctrl.rolls()

	// helm upgrade with a changed value: the render rolls its readers.
	r.mustHelm(t, h, "upgrade", chart, append([]string{"--reuse-values"}, tc.upgrade.args...)...)
	upgraded := r.rollCounts(t, workloads)
	ctrl.settledAll(t, r, workloads)
	upgradedStatus := statusOf(t, c.namespace)
	var moved []string
	for id, w := range upgradedStatus {
		assert.Equal(t, status.ConfigCurrent, w.Config, "%s after upgrade: %s %v", id, w.Reason, w.Changed)
		if w.RenderHash != installed[id].RenderHash {
			moved = append(moved, id)
		}
	}
	assert.ElementsMatch(t, tc.upgrade.moved, moved, "the workloads whose render-time hash helm upgrade moved")
	assertReadersRolled(t, "helm upgrade "+strings.Join(tc.upgrade.args[1:], " "), first, upgraded, append(slices.Clone(tc.upgrade.moved), tc.checksums...))
	assert.Equal(t, upgraded, r.rollCounts(t, workloads), "rollouts after the controller saw the upgrade")
	assert.InDelta(t, rolls, ctrl.rolls(), 0, "the controller rolled after helm upgrade")

	// A key no workload reads.
	if tc.unread != nil {
		events := ctrl.metric("confighash_config_events_total", `change="content"`)
		r.editConfig(t, *tc.unread)
		ctrl.waitFor(t, "the edit seen", func(v float64) bool { return v > events }, "confighash_config_events_total", `change="content"`)
		ctrl.settledAll(t, r, workloads)
		assert.Equal(t, upgraded, r.rollCounts(t, workloads), "rollouts after an edit of %s key %s, which no workload reads", tc.unread.name, tc.unread.key)
		assert.InDelta(t, rolls, ctrl.rolls(), 0, "the controller rolled for a key no workload reads")
	}

	// Out-of-band edits while no controller runs.
	ctrl.Signal(syscall.SIGTERM)
	readers := map[string][]string{} // workload: the configs edited that it reads
	for _, e := range tc.edits {
		r.editConfig(t, e)
		for _, id := range e.readers {
			readers[id] = append(readers[id], e.kind+"/"+e.name)
		}
	}
	assertStale(t, c.namespace, readers, "controller stopped")

	// A dry run (as docs/migrating.md cuts over) counts one roll per
	// reader and writes nothing.
	dry := startController(t, "controller-dry-run", c.namespace, append(slices.Clone(window), "--dry-run")...)
	dry.waitFor(t, "the readers' rolls counted", func(v float64) bool { return v >= float64(len(readers)) }, "confighash_rollouts_total", `dry_run="true"`)
	dry.settledAll(t, r, workloads)
	assert.InDelta(t, len(readers), dry.metric("confighash_rollouts_total", `dry_run="true"`), 0, "the dry run's rolls")
	assert.Zero(t, dry.rolls(), "the dry run rolled")
	assert.Equal(t, upgraded, r.rollCounts(t, workloads), "rollouts after the dry run")
	assertStale(t, c.namespace, readers, "after a dry run")
	dry.Signal(syscall.SIGTERM)

	// The controller started again rolls each reader once.
	ctrl = startController(t, "controller-again", c.namespace, window...)
	ctrl.waitFor(t, "the readers rolled", func(v float64) bool { return v >= float64(len(readers)) }, "confighash_rollouts_total", `dry_run="false"`)
	edited := r.rollCounts(t, workloads)
	ctrl.settledAll(t, r, workloads)
	assert.InDelta(t, len(readers), ctrl.rolls(), 0, "the controller's rolls")
	assertReadersRolled(t, "out-of-band edits", upgraded, edited, slices.Collect(maps.Keys(readers)))
	assert.Equal(t, edited, r.rollCounts(t, workloads), "rollouts once the controller settled")
	for id, w := range statusOf(t, c.namespace) {
		assert.Equal(t, status.ConfigCurrent, w.Config, "%s after the controller rolled: %s %v", id, w.Reason, w.Changed)
		if _, ok := readers[id]; ok {
			assert.Equal(t, w.LiveHash, w.ControllerHash, "%s: the controller's record is the live hash", id)
			assert.NotNil(t, w.LastConfigChanged, "%s: no ConfigChanged Event", id)
		} else if tc.filled == nil || !slices.Contains(tc.filled.readers, id) {
			assert.Empty(t, w.ControllerHash, "%s was rolled by the controller", id)
		}
	}
}

// assertReadersRolled fails unless exactly the readers got one more pod
// template, and the others none.
func assertReadersRolled(t *testing.T, what string, before, after map[string]int, readers []string) {
	t.Helper()
	want := maps.Clone(before)
	for _, id := range readers {
		want[id]++
	}
	assert.Equal(t, want, after, "%s: pod templates per workload (ReplicaSets, ControllerRevisions)", what)
}

// statusOf runs bin/kubectl-confighash status --json on the namespace and
// returns its workloads by Kind/name.
func statusOf(t *testing.T, namespace string) map[string]status.Workload {
	t.Helper()
	res := testtools.Run(t, "", nil, nil, testtools.Tool(t, "kubectl-confighash"), "status",
		"--kubeconfig", cptest.Shared(t).KubeconfigPath(), "-n", namespace, "--json")
	require.Zero(t, res.ExitCode, "kubectl confighash status: %s", res.Stderr)
	return statustest.Workloads(t, res.Stdout)
}

// editConfig changes one key of a ConfigMap or Secret as kubectl edit does.
func (r *release) editConfig(t *testing.T, e clusterEdit) {
	t.Helper()
	if e.kind == "Secret" {
		_, err := kubetest.Edit(t.Context(), r.client.CoreV1().Secrets(r.namespace), e.name, "kubectl-edit", func(s *corev1.Secret) {
			if s.Data == nil { // shipped empty, for a cert manager to fill
				s.Data = map[string][]byte{}
			}
			s.Data[e.key] = []byte(e.value)
		})
		require.NoError(t, err)
		return
	}
	r.editConfigMap(t, e.name, func(cm *corev1.ConfigMap) {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[e.key] = e.value
	})
}

// fillSecret writes the data of a Secret the render ships with metadata
// only, in one update, as the project's certificate rotator does.
func (r *release) fillSecret(t *testing.T, f clusterFill) {
	t.Helper()
	_, err := kubetest.Edit(t.Context(), r.client.CoreV1().Secrets(r.namespace), f.name, "cert-rotator", func(s *corev1.Secret) {
		s.StringData = f.data
	})
	require.NoError(t, err)
}

// rollCounts returns, per workload (Kind/name), how many pod templates its
// own controller has made (a Deployment's ReplicaSets, a StatefulSet's or
// DaemonSet's ControllerRevisions), once that controller has acted on the
// workload's current generation.
func (r *release) rollCounts(t *testing.T, workloads []string) map[string]int {
	t.Helper()
	return perWorkload(t, workloads, "the workload controller to observe ", func(kind, name string) (int, bool) { return r.templates(t, kind, name) })
}

// perWorkload polls count for each workload (Kind/name) until it reports
// ok, and returns the counts.
func perWorkload(t *testing.T, workloads []string, what string, count func(kind, name string) (int, bool)) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range workloads {
		kind, name, _ := strings.Cut(id, "/")
		kubetest.EventuallyTrue(t, time.Minute, 100*time.Millisecond, what+id, func() bool {
			n, ok := count(kind, name)
			out[id] = n
			return ok
		})
	}
	return out
}

// templates counts the pod templates of one workload; ok is false until its
// controller has observed its generation and made its current template.
func (r *release) templates(t *testing.T, kind, name string) (n int, ok bool) {
	t.Helper()
	if kind == "Deployment" {
		d, rs := r.replicaSets(t, name)
		return len(rs), d.Status.ObservedGeneration == d.Generation && hasTemplate(rs, d)
	}
	revs, current, observed := r.controllerRevisions(t, kind, name)
	if current == nil {
		return 0, observed
	}
	return len(revs), observed
}

// replicaSets reads a Deployment and the ReplicaSets it owns.
func (r *release) replicaSets(t *testing.T, name string) (*appsv1.Deployment, []appsv1.ReplicaSet) {
	t.Helper()
	d, err := r.client.AppsV1().Deployments(r.namespace).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	rs, err := kubetest.OwnedReplicaSets(t.Context(), r.client, r.namespace, d.UID)
	require.NoError(t, err)
	return d, rs
}

// controllerRevisions reads a StatefulSet or a DaemonSet and the
// ControllerRevisions it owns. current is the one its pods are to run (a
// StatefulSet's updateRevision, a DaemonSet's highest revision), nil until
// there is one; observed says its controller has seen its generation.
func (r *release) controllerRevisions(t *testing.T, kind, name string) (revs []appsv1.ControllerRevision, current *appsv1.ControllerRevision, observed bool) {
	t.Helper()
	apps := r.client.AppsV1()
	var uid types.UID
	var update string
	switch kind {
	case "StatefulSet":
		s, err := apps.StatefulSets(r.namespace).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		uid, update, observed = s.UID, s.Status.UpdateRevision, s.Status.ObservedGeneration == s.Generation
	case "DaemonSet":
		s, err := apps.DaemonSets(r.namespace).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		uid, observed = s.UID, s.Status.ObservedGeneration == s.Generation
	default:
		t.Fatalf("%s/%s is no StatefulSet or DaemonSet", kind, name)
	}
	revs, err := kubetest.OwnedControllerRevisions(t.Context(), r.client, r.namespace, uid)
	require.NoError(t, err)
	for i, c := range revs {
		if kind == "StatefulSet" && c.Name == update || kind == "DaemonSet" && (current == nil || c.Revision > current.Revision) {
			current = &revs[i]
		}
	}
	return revs, current, observed
}

// settledAll changes an annotation on the metadata of every workload (no
// roll) and waits for as many in-sync reconciles after it: the controller
// found them in sync with the configs it had seen.
func (p *controllerProc) settledAll(t *testing.T, r *release, workloads []string) {
	t.Helper()
	mark := p.inSync()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"example.com/poked":"%d"}}}`, time.Now().UnixNano())
	apps := r.client.AppsV1()
	for _, id := range workloads {
		kind, name, _ := strings.Cut(id, "/")
		var err error
		switch kind {
		case "Deployment":
			_, err = apps.Deployments(r.namespace).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		case "StatefulSet":
			_, err = apps.StatefulSets(r.namespace).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		case "DaemonSet":
			_, err = apps.DaemonSets(r.namespace).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		default:
			t.Fatalf("no patch for %s", id)
		}
		require.NoError(t, err)
	}
	p.waitFor(t, "an in-sync reconcile of each workload", func(v float64) bool { return v >= mark+float64(len(workloads)) },
		"confighash_reconciles_total", `result="in_sync"`)
}

// assertStale checks kubectl confighash status once configs were edited
// that no controller rolled for: STALE for each reader (a workload keyed
// to the configs edited that it reads), naming the external ones, with the
// controller's reason; current for the others.
func assertStale(t *testing.T, namespace string, readers map[string][]string, when string) {
	t.Helper()
	for id, w := range statusOf(t, namespace) {
		if _, ok := readers[id]; !ok {
			assert.Equal(t, status.ConfigCurrent, w.Config, "%s, %s, reads no edited key: %s %v", when, id, w.Reason, w.Changed)
			continue
		}
		assert.Equal(t, status.ConfigStale, w.Config, "%s, %s reads an edited key", when, id)
		var external []string
		inStream := false
		for _, cfg := range w.Configs {
			if slices.Contains(readers[id], cfg.Kind+"/"+cfg.Name) {
				if cfg.External {
					external = append(external, cfg.Kind+"/"+cfg.Name)
				} else {
					inStream = true
				}
			}
		}
		sort.Strings(external)
		assert.Equal(t, external, w.Changed, "%s, %s: the external configs status names as changed", when, id)
		reason := map[bool]string{true: "render-hash-mismatch", false: "external-config-changed"}[inStream]
		assert.Equal(t, reason, w.Reason, "%s, %s: the reason status gives", when, id)
	}
}
