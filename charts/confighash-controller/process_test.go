package chart_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// The controller as the chart installs it, run as bin/confighash-controller
// processes: exactly the RBAC the chart renders, the chart's arguments, two
// replicas with leader election, the leader stopped (SIGTERM, as a rolling
// update of the controller's Deployment stops it) in the middle of a burst
// of edits, and the metrics it exports scraped.

var controllerBin struct {
	once sync.Once
	path string
	err  error
}

// buildController builds bin/confighash-controller from this tree once.
func buildController(t *testing.T) string {
	t.Helper()
	controllerBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "confighash-chart-bin-")
		if err != nil {
			controllerBin.err = err
			return
		}
		controllerBin.path = filepath.Join(dir, "confighash-controller")
		controllerBin.err = kubetest.BuildCommands(testtools.RepoRoot(t), dir, "confighash-controller")
	})
	require.NoError(t, controllerBin.err)
	return controllerBin.path
}

// chartProc is one controller process started with the chart's arguments.
type chartProc struct {
	*kubetest.Process
	metrics string
}

func (p *chartProc) leads() bool {
	return strings.Contains(strings.ToLower(p.Logs()), "successfully acquired lease")
}

func (p *chartProc) metric(name string, labels ...string) float64 {
	return kubetest.Metric(p.metrics, name, labels...)
}

func (p *chartProc) waitMetric(t *testing.T, what string, least float64, name string, labels ...string) {
	t.Helper()
	eventually(t, p.Name+": "+what, func() bool { return p.metric(name, labels...) >= least })
}

// chartInstall is the chart rendered for one release and its RBAC applied.
type chartInstall struct {
	cs     kubernetes.Interface
	prefix string // annotationPrefix
	appNS  string
	args   []string // the container's arguments, as rendered
	config string   // kubeconfig of the chart's ServiceAccount
}

// installRBAC renders the chart with helm template (release in relNS, with
// values), applies every object but the Deployment (no kubelet runs it
// here), and writes a kubeconfig whose client certificate names the chart's
// ServiceAccount, so that what the controller may do is what the chart
// grants and nothing else.
func installRBAC(t *testing.T, cp *controlplane.ControlPlane, h testtools.Helm, release, relNS, appNS, prefix string, values ...string) *chartInstall {
	t.Helper()
	ctx := t.Context()
	cs, dyn, mapper := kubetest.Clients(t, cp.RESTConfig())
	for _, ns := range []string{relNS, appNS} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	stream := h.MustRun(t, append([]string{"template", release, chartDir(t), "--namespace", relNS, "--set", "annotationPrefix=" + prefix}, values...)...)
	var rbac []string
	var deploy *appsv1.Deployment
	for _, doc := range testtools.Documents(stream) {
		var head struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		if head.Kind == "Deployment" {
			deploy = &appsv1.Deployment{}
			require.NoError(t, yaml.Unmarshal([]byte(doc), deploy))
			continue
		}
		rbac = append(rbac, doc)
	}
	require.NotNil(t, deploy, "the chart renders the controller's Deployment")
	require.NoError(t, kubetest.Apply(ctx, dyn, mapper, strings.NewReader(strings.Join(rbac, "\n---\n")), kubetest.ApplyOptions{FieldManager: "helm"}))

	id := sa(relNS, deploy.Spec.Template.Spec.ServiceAccountName)
	user, err := cp.AddUser(id.UserName, id.Groups)
	require.NoError(t, err)
	config := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(user, config))
	return &chartInstall{cs: cs, prefix: prefix, appNS: appNS, args: deploy.Spec.Template.Spec.Containers[0].Args, config: config}
}

// start runs the controller binary with the chart's arguments, as the
// ServiceAccount, on free local ports, logging text.
func (c *chartInstall) start(t *testing.T, name string) *chartProc {
	t.Helper()
	p, metrics := kubetest.StartServer(t, name, buildController(t), kubetest.MetricsServing, func(metrics string) []string {
		return append(slices.Clone(c.args), "--kubeconfig", c.config, "--metrics-bind-address", metrics,
			"--health-probe-bind-address", kubetest.FreeAddr(t), "--log-format", "text")
	})
	return &chartProc{Process: p, metrics: metrics}
}

// workloads creates n ConfigMaps app-i and Deployments app-i (zero
// replicas) consuming their key LOG_LEVEL: the even ones rendered (the
// render-time hash), the odd ones opted in with confighash.dev/enabled
// (every config external: a baseline is written at first sight).
func (c *chartInstall) workloads(t *testing.T, n int) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, kubetest.Parallel(n, 8, func(i int) error {
		name := fmt.Sprintf("app-%d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"LOG_LEVEL": "info", "OTHER": "x"}}
		if _, err := c.cs.CoreV1().ConfigMaps(c.appNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		d := kubetest.Deployment(name, 0, []corev1.EnvVar{kubetest.KeyRef(name, "LOG_LEVEL")}, nil)
		if i%2 == 0 {
			hash, err := c.liveHash(ctx, name)
			if err != nil {
				return err
			}
			d.Spec.Template.Annotations = map[string]string{c.prefix + "/hash": hash}
		} else {
			d.Annotations = map[string]string{c.prefix + "/enabled": "true"}
		}
		_, err := c.cs.AppsV1().Deployments(c.appNS).Create(ctx, d, metav1.CreateOptions{})
		return err
	}))
}

// liveHash is the hash of key LOG_LEVEL of ConfigMap name as it is now:
// the render-time hash of workloads(), and the controller-hash a roll
// writes.
func (c *chartInstall) liveHash(ctx context.Context, name string) (string, error) {
	cm, err := c.cs.CoreV1().ConfigMaps(c.appNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	content, err := controller.ContentOf(cm)
	if err != nil {
		return "", err
	}
	use := hashing.Use{Kind: hashing.KindConfigMap, Name: name, Keys: []string{"LOG_LEVEL"}}
	return hashing.Compute(c.appNS, []hashing.Use{use}, func(hashing.Kind, string) (hashing.Content, bool) { return content, true }, hashing.Options{}), nil
}

func (c *chartInstall) edit(t *testing.T, name, value string) {
	t.Helper()
	_, err := kubetest.Edit(t.Context(), c.cs.CoreV1().ConfigMaps(c.appNS), name, "kubectl-edit", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = value })
	require.NoError(t, err)
}

// forbidden matches what client-go, controller-runtime and the controller
// log when the API server refuses a request for lack of permission.
var forbidden = regexp.MustCompile(`(?i)forbidden|cannot (list|watch|patch|create|update|get) resource|not allowed to`)

// TestChartProcessesFailOver installs the chart's RBAC cluster-wide (helm
// v3) and namespaced (helm v4, watchNamespaces), both with two replicas
// (leader election on), and runs two controller processes with the chart's
// arguments as the chart's ServiceAccount over ten workloads. Each
// workload's ConfigMap is edited once; halfway through the burst the
// leader is stopped with SIGTERM once it has rolled some. For every
// workload: its pod template reflects the last content and it rolled
// exactly once. Neither process logs a refused request or an error, and
// the metrics docs/controller.md lists are exported with the labels it
// documents.
func TestChartProcessesFailOver(t *testing.T) {
	cp := cptest.Shared(t)
	const n = 10
	for _, tc := range []struct {
		version    int
		namespaced bool
	}{{3, false}, {4, true}} {
		t.Run(fmt.Sprintf("helm%d/namespaced=%t", tc.version, tc.namespaced), func(t *testing.T) {
			t.Parallel()
			release := fmt.Sprintf("fo%d-%04x", tc.version, rand.IntN(1<<16))
			relNS, appNS := release+"-system", release+"-apps"
			values := []string{"--set", "replicaCount=2"}
			if tc.namespaced {
				values = append(values, "--set", "watchNamespaces={"+appNS+"}")
			}
			// A prefix of its own: the cluster-wide controller sees the
			// other tests' workloads too, and must leave them alone.
			c := installRBAC(t, cp, testtools.NewHelm(t, tc.version), release, relNS, appNS, release+".confighash.test", values...)
			require.Contains(t, c.args, "--leader-elect", "two replicas elect a leader")
			c.workloads(t, n)

			a := c.start(t, "a")
			eventually(t, "a to lead", a.leads)
			a.waitMetric(t, "every workload in sync", n, "confighash_reconciles_total", `result="in_sync"`)
			b := c.start(t, "b")
			b.waitMetric(t, "metrics up", 0, "confighash_workloads_missing_config")
			require.False(t, b.leads(), "b is a standby")

			var byA string
			for i := range n {
				if i == n/2 {
					a.waitMetric(t, "a to roll the first edits", 1, "confighash_rollouts_total", `dry_run="false"`)
					byA = scrape(t, a.metrics)
					a.Signal(syscall.SIGTERM)
				}
				c.edit(t, fmt.Sprintf("app-%d", i), fmt.Sprint("burst-", i))
			}
			eventually(t, "b to take over", b.leads)
			for i := range n {
				name := fmt.Sprintf("app-%d", i)
				kubetest.Eventually(t, waitTimeout, 50*time.Millisecond, name+" to reflect its last content", func(ctx context.Context) (bool, error) {
					want, err := c.liveHash(ctx, name)
					if err != nil {
						return false, err
					}
					d, err := c.cs.AppsV1().Deployments(appNS).Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					return d.Spec.Template.Annotations[c.prefix+"/controller-hash"] == want, nil
				})
			}
			byB := b.metric("confighash_rollouts_total", `dry_run="false"`)
			for i := range n {
				name := fmt.Sprintf("app-%d", i)
				var d *appsv1.Deployment
				// The Deployment controller writes the revision after it
				// made the new ReplicaSet of the new template.
				eventually(t, name+"'s revision written", func() bool {
					var err error
					d, err = c.cs.AppsV1().Deployments(appNS).Get(t.Context(), name, metav1.GetOptions{})
					return err == nil && d.Annotations["deployment.kubernetes.io/revision"] != "1"
				})
				assert.Equal(t, "2", d.Annotations["deployment.kubernetes.io/revision"], "%s: one rollout, none repeated", name)
				rs, err := kubetest.OwnedReplicaSets(t.Context(), c.cs, appNS, d.UID)
				require.NoError(t, err)
				assert.Len(t, rs, 2, "%s: ReplicaSets", name)
			}
			kubetest.Eventually(t, waitTimeout, 50*time.Millisecond, "a ConfigChanged Event on every workload", func(ctx context.Context) (bool, error) {
				list, err := c.cs.EventsV1().Events(appNS).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				got := map[string]bool{}
				for _, ev := range list.Items {
					if ev.Reason == controller.EventReasonConfigChanged {
						got[ev.Regarding.Name] = true
					}
				}
				return len(got) == n, nil
			})
			t.Logf("%d edits: %v rolled by the new leader", n, byB)
			assert.Positive(t, byB, "the new leader rolled the edits it found pending")
			assertDocumentedMetrics(t, byA, scrape(t, b.metrics))
			for _, p := range []*chartProc{a, b} {
				for _, line := range strings.Split(p.Logs(), "\n") {
					assert.NotRegexp(t, forbidden, line, "%s: a refused request", p.Name)
					// The Lease released at the leader's stop included.
					assert.NotContains(t, line, "level=ERROR", "%s: an error", p.Name)
				}
			}
		})
	}
}

// scrape returns the text of http://addr/metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// metricRow is a row of docs/controller.md's table of metrics:
// | `name` | label, label | meaning |.
var metricRow = regexp.MustCompile("(?m)^\\| `(confighash_\\w+)` \\|([^|]*)\\|")

// documentedMetrics reads docs/controller.md's table of metrics: each
// name and its labels.
func documentedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testtools.RepoRoot(t), "docs", "controller.md"))
	require.NoError(t, err)
	out := map[string][]string{}
	for _, m := range metricRow.FindAllStringSubmatch(string(b), -1) {
		var labels []string
		for l := range strings.SplitSeq(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out[m[1]] = labels
	}
	require.NotEmpty(t, out, "docs/controller.md has a table of metrics")
	return out
}

// sample is one line of the Prometheus text format: name{labels} value.
var sample = regexp.MustCompile(`^(confighash_\w+?)(_bucket|_sum|_count)?(?:\{([^}]*)\})? \S+$`)

// labelName is a label's name in a sample's labels.
var labelName = regexp.MustCompile(`(\w+)="(?:[^"\\]|\\.)*"`)

// assertDocumentedMetrics checks the confighash_ samples of the scrapes
// against docs/controller.md: every metric it lists is exported (by one
// process or the other) with exactly the labels it lists (and le on a
// histogram's buckets), and nothing else named confighash_ is exported.
func assertDocumentedMetrics(t *testing.T, scrapes ...string) {
	t.Helper()
	docs := documentedMetrics(t)
	seen := map[string]bool{}
	for _, text := range scrapes {
		for _, line := range strings.Split(text, "\n") {
			m := sample.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			name := m[1]
			want, ok := docs[name]
			if !ok && m[2] != "" {
				name, want, ok = m[1]+m[2], docs[m[1]+m[2]], docs[m[1]+m[2]] != nil
			}
			if !assert.True(t, ok, "exported but not in docs/controller.md: %s", line) {
				continue
			}
			seen[name] = true
			var got []string
			for _, l := range labelName.FindAllStringSubmatch(m[3], -1) {
				if l[1] != "le" || m[2] != "_bucket" {
					got = append(got, l[1])
				}
			}
			slices.Sort(got)
			assert.Equal(t, want, got, "labels of %s", line)
		}
	}
	for name := range docs {
		assert.True(t, seen[name], "documented but not exported: %s", name)
	}
}
