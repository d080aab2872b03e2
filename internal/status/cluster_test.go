package status_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/output"
	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

const ns = "shop"

// app is the render: web reads LOG_LEVEL of app, api reads all of other.
func app() string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {LOG_LEVEL: info, UNUSED: x}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
data: {A: "1"}
---
` + kubetest.Workload{Name: "web", Replicas: 2, Env: []string{kubetest.EnvKey("app", "LOG_LEVEL")}}.YAML() + `---
` + kubetest.Workload{Name: "api", Replicas: 1, EnvFrom: []string{"{configMapRef: {name: other}}"}}.YAML()
}

// TestStatusOnCluster runs the real control plane (the Deployment and
// ReplicaSet controllers create ReplicaSets and Pods; no kubelet or
// scheduler, so pods stay Pending) and the real controller binary:
//   - after the first apply, both workloads are current;
//   - app's LOG_LEVEL edited while the controller is stopped: web is stale,
//     api (which does not read app) current;
//   - with the controller running: web is current again, rolled once (a
//     ConfigChanged Event), its rollout in progress with Pending pods, and
//     the pods of the old ReplicaSet counted as running an older template.
func TestStatusOnCluster(t *testing.T) {
	cptest.Require(t)
	bin := binaries(t)
	cp := cptest.Private(t)
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	require.NoError(t, err)
	ctx := context.Background()
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rendered, _, err := postrenderer.Process([]byte(app()), inject.Options{DefaultNamespace: ns})
	require.NoError(t, err)
	create(t, cs, string(rendered))

	collect := func() map[string]status.Workload {
		t.Helper()
		return collected(t, cs, status.Options{Namespace: ns}, func(w status.Workload) string { return w.Name })
	}
	eventually(t, "the ReplicaSet controller creates web's pods", func() bool {
		return collect()["web"].Rollout.Pods == 2
	})
	first := collect()
	require.Len(t, first, 2)
	for _, name := range []string{"web", "api"} {
		w := first[name]
		assert.Equal(t, status.ConfigCurrent, w.Config, name)
		assert.NotEmpty(t, w.RenderHash, name)
		assert.Empty(t, w.ControllerHash, name)
		assert.Nil(t, w.LastConfigChanged, name)
	}
	web := first["web"]
	assert.Equal(t, []status.Config{{Consumed: output.Consumed{Kind: "ConfigMap", Name: "app", Keys: []string{"LOG_LEVEL"}}, Found: true}}, web.Configs)
	assert.False(t, web.Rollout.Done, "no kubelet: no pod becomes available")
	assert.Equal(t, 2, web.Rollout.PendingPods)
	assert.Zero(t, web.Rollout.StalePods)
	assert.Contains(t, web.Rollout.Message, "Pending")

	// Edited while no controller runs.
	editConfigMap(t, cs, "app", "UNUSED", "y")
	assert.Equal(t, status.ConfigCurrent, collect()["web"].Config, "a key web does not read")
	editConfigMap(t, cs, "app", "LOG_LEVEL", "debug")
	stale := collect()
	assert.Equal(t, status.ConfigStale, stale["web"].Config)
	assert.Equal(t, "render-hash-mismatch", stale["web"].Reason)
	assert.NotEqual(t, stale["web"].RenderHash, stale["web"].LiveHash)
	assert.Equal(t, status.ConfigCurrent, stale["api"].Config)

	// The command line says so too, in the table and in JSON.
	out := runPlugin(t, bin, "status", "--kubeconfig", cp.KubeconfigPath(), "-n", ns)
	assert.Regexp(t, `Deployment shop/web\s+STALE \(render-hash-mismatch\)`, out)
	assert.Regexp(t, `Deployment shop/api\s+current`, out)
	assert.Contains(t, out, "2 workloads: 1 not current for the live configs")
	t.Logf("kubectl confighash status, controller stopped:\n%s", out)
	var report status.Report
	require.NoError(t, json.Unmarshal([]byte(runPlugin(t, bin, "status", "--kubeconfig", cp.KubeconfigPath(), "-n", ns, "--json")), &report))
	require.Len(t, report.Workloads, 2)

	// The controller runs and rolls web.
	startController(t, bin, cp.KubeconfigPath())
	eventually(t, "the controller rolls web and the Deployment controller starts a new ReplicaSet", func() bool {
		w := collect()["web"]
		return w.Config == status.ConfigCurrent && w.ControllerHash != "" && w.Rollout.StalePods > 0 && w.LastConfigChanged != nil
	})
	after := collect()
	web = after["web"]
	assert.Equal(t, web.LiveHash, web.ControllerHash, "the controller's record is the live hash")
	assert.False(t, web.Rollout.Done, "rollout in progress: the new pods never start")
	assert.Equal(t, 2, web.Rollout.StalePods, "the old ReplicaSet's pods still run the old config")
	assert.Equal(t, web.Rollout.Pods, web.Rollout.PendingPods)
	assert.Contains(t, web.Rollout.Message, "2 pods run an older template")
	assert.Contains(t, web.LastConfigChanged.Message, "rolling", "the controller's Event")
	api := after["api"]
	assert.Equal(t, status.ConfigCurrent, api.Config)
	assert.Empty(t, api.ControllerHash, "api was not rolled")
	assert.Zero(t, api.Rollout.StalePods)
	assert.Nil(t, api.LastConfigChanged)

	out = runPlugin(t, bin, "status", "--kubeconfig", cp.KubeconfigPath(), "-n", ns)
	assert.Regexp(t, `Deployment shop/web\s+current\s+\S+\s+\S+\s+in progress 1/2 updated, 0 available, 3 pending\s+2/3`, out)
	t.Logf("kubectl confighash status:\n%s", out)

	// The key web requires removed: new pods could not start, so web is
	// blocked on it (the controller waits), not stale.
	_, err = kubetest.Edit(ctx, cs.CoreV1().ConfigMaps(ns), "app", "", func(cm *corev1.ConfigMap) { delete(cm.Data, "LOG_LEVEL") })
	require.NoError(t, err)
	blocked := collect()["web"]
	assert.Equal(t, status.ConfigBlocked, blocked.Config)
	assert.Equal(t, []string{"ConfigMap/app key LOG_LEVEL"}, blocked.Missing)
}

func create(t *testing.T, cs kubernetes.Interface, rendered string) {
	t.Helper()
	ctx := context.Background()
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var head struct{ Kind string }
		require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &head))
		switch head.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &cm))
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &cm, metav1.CreateOptions{})
			require.NoError(t, err)
		case "Deployment":
			var d appsv1.Deployment
			require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &d))
			_, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
}

func editConfigMap(t *testing.T, cs kubernetes.Interface, name, key, value string) {
	t.Helper()
	_, err := kubetest.Edit(context.Background(), cs.CoreV1().ConfigMaps(ns), name, "", func(cm *corev1.ConfigMap) { cm.Data[key] = value })
	require.NoError(t, err)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kubetest.EventuallyTrue(t, 2*time.Minute, 200*time.Millisecond, what, cond)
}

// collected is status.Collect's report, which must be complete, by key.
func collected(t *testing.T, cs kubernetes.Interface, opts status.Options, key func(status.Workload) string) map[string]status.Workload {
	t.Helper()
	r, err := status.Collect(context.Background(), cs, opts)
	require.NoError(t, err)
	out := map[string]status.Workload{}
	for _, w := range r.Workloads {
		out[key(w)] = w
	}
	return out
}

// privateCluster builds the binaries and starts a control plane of the
// test's own, with its clients.
func privateCluster(t *testing.T) (bin string, cp *controlplane.ControlPlane, cs *kubernetes.Clientset, dyn *dynamic.DynamicClient, mapper *restmapper.DeferredDiscoveryRESTMapper) {
	t.Helper()
	cptest.Require(t)
	bin = binaries(t)
	cp = cptest.Private(t)
	cs, dyn, mapper = kubetest.Clients(t, cp.RESTConfig())
	return bin, cp, cs, dyn, mapper
}

// binaries builds kubectl-confighash and confighash-controller from this
// checkout.
func binaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, kubetest.BuildCommands(testtools.RepoRoot(t), dir, "kubectl-confighash", "confighash-controller"))
	return dir
}

func runPlugin(t *testing.T, binDir string, args ...string) string {
	t.Helper()
	res := testtools.Run(t, "", nil, nil, filepath.Join(binDir, "kubectl-confighash"), args...)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	return res.Stdout
}

func startController(t *testing.T, binDir, kubeconfig string) {
	t.Helper()
	kubetest.StartProcess(t, "controller", filepath.Join(binDir, "confighash-controller"), "--kubeconfig", kubeconfig, "--namespaces", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--coalesce-window", "200ms", "--min-roll-interval", "0s")
}
