package chart_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/controllercmd"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// The chart with the real helm v3 and v4: lint, template, install into a
// local kube-apiserver, and the installed RBAC exercised by the controller
// running as the chart's ServiceAccount.

// waitTimeout bounds every poll; the machines running these tests are busy.
const waitTimeout = 90 * time.Second

func TestMain(m *testing.M) {
	// The controllers run in-process here log to their own buffers;
	// controller-runtime's clients log through its global logger, which a
	// program sets (cmd/confighash-controller does): without one it prints
	// a warning and a stack trace.
	ctrllog.SetLogger(controllercmd.NewLogger(os.Stderr, "text", "info"))
	code := cptest.Run(m)
	if controllerBin.path != "" {
		_ = os.RemoveAll(filepath.Dir(controllerBin.path))
	}
	os.Exit(code)
}

func chartDir(t *testing.T) string {
	return filepath.Join(testtools.RepoRoot(t), "charts", "confighash-controller")
}

func helms(t *testing.T, f func(t *testing.T, h testtools.Helm)) {
	for _, v := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", v), func(t *testing.T) { f(t, testtools.NewHelm(t, v)) })
	}
}

// Values of the namespaced mode with two replicas.
func namespacedValues(namespaces ...string) []string {
	return []string{"--set", "replicaCount=2", "--set", "watchNamespaces={" + strings.Join(namespaces, ",") + "}"}
}

func TestChartLint(t *testing.T) {
	helms(t, func(t *testing.T, h testtools.Helm) {
		out := h.MustRun(t, "lint", "--strict", chartDir(t))
		assert.Contains(t, out, "0 chart(s) failed")
		args := append([]string{"lint", "--strict", chartDir(t), "--set", "serviceMonitor.enabled=true", "--set", "hmacKey.existingSecret=key"},
			namespacedValues("a", "b")...)
		assert.Contains(t, h.MustRun(t, args...), "0 chart(s) failed")
	})
}

// decoded decodes every non-empty document of a rendered stream, in order.
func decoded(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if len(doc) > 0 {
			out = append(out, &unstructured.Unstructured{Object: doc})
		}
	}
}

// key is an object's Kind/namespace/name.
func key(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// objects decodes a rendered stream, keyed by Kind/namespace/name.
func objects(t *testing.T, stream string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, u := range decoded(t, stream) {
		out[key(u)] = u
	}
	return out
}

func kinds(objs map[string]*unstructured.Unstructured) []string {
	var ks []string
	for k := range objs {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	require.NotNil(t, u)
	var out T
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out))
	return &out
}

// templateOps renders the chart as release ch in namespace ops, with extra
// helm arguments (values), and returns its objects and its Deployment.
func templateOps(t *testing.T, h testtools.Helm, values ...string) (map[string]*unstructured.Unstructured, *appsv1.Deployment) {
	t.Helper()
	objs := objects(t, h.MustRun(t, append([]string{"template", "ch", chartDir(t), "--namespace", "ops"}, values...)...))
	return objs, typed[appsv1.Deployment](t, objs["Deployment/ops/ch-confighash-controller"])
}

// rulesOf reads the rules of the (Cluster)Role in a manifest file of config/.
func rulesOf(t *testing.T, path string) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc, _, _ := bytes.Cut(b, []byte("\n---"))
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal(doc, &role))
	require.NotEmpty(t, role.Rules, path)
	return role.Rules
}

func TestChartTemplate(t *testing.T) {
	root := testtools.RepoRoot(t)
	clusterRules := rulesOf(t, filepath.Join(root, "config", "clusterrole.yaml"))
	leaderRules := rulesOf(t, filepath.Join(root, "config", "core", "leader-election.yaml"))
	helms(t, func(t *testing.T, h testtools.Helm) {
		t.Run("defaults", func(t *testing.T) {
			objs, d := templateOps(t, h)
			assert.Equal(t, []string{
				"ClusterRole//ch-confighash-controller",
				"ClusterRoleBinding//ch-confighash-controller",
				"Deployment/ops/ch-confighash-controller",
				"ServiceAccount/ops/ch-confighash-controller",
			}, kinds(objs), "one replica: no leader election Role, no ServiceMonitor")
			c := d.Spec.Template.Spec.Containers[0]
			assert.Equal(t, "ghcr.io/confighash/confighash-controller:v0.1.0", c.Image)
			assert.NotContains(t, c.Args, "--leader-elect")
			for _, a := range c.Args {
				assert.NotContains(t, a, "--namespaces")
				assert.NotContains(t, a, "--hmac-key-file")
				assert.NotContains(t, a, "--kube-api-", "no client-side limit unless asked for")
			}
			assert.Subset(t, c.Args, []string{"--coalesce-window=10s", "--min-roll-interval=30s",
				"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"})
			opts, err := controllercmd.ParseFlags(c.Args, io.Discard, os.Getenv)
			require.NoError(t, err, "the rendered args are the controller's flags")
			assert.Equal(t, 30*time.Second, opts.MinRollInterval)
			assert.Equal(t, "ch-confighash-controller", d.Spec.Template.Spec.ServiceAccountName)
			sc := c.SecurityContext
			require.NotNil(t, sc)
			assert.True(t, *sc.ReadOnlyRootFilesystem)
			assert.False(t, *sc.AllowPrivilegeEscalation)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			assert.True(t, *d.Spec.Template.Spec.SecurityContext.RunAsNonRoot)
			assert.Equal(t, "64Mi", c.Resources.Requests.Memory().String())

			role := typed[rbacv1.ClusterRole](t, objs["ClusterRole//ch-confighash-controller"])
			assert.Equal(t, clusterRules, role.Rules, "the chart grants exactly config/clusterrole.yaml")
			binding := typed[rbacv1.ClusterRoleBinding](t, objs["ClusterRoleBinding//ch-confighash-controller"])
			assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ch-confighash-controller", Namespace: "ops"}}, binding.Subjects)
		})
		t.Run("namespaced-2-replicas", func(t *testing.T) {
			objs, d := templateOps(t, h, namespacedValues("a", "b")...)
			assert.Equal(t, []string{
				"Deployment/ops/ch-confighash-controller",
				"Role/a/ch-confighash-controller",
				"Role/b/ch-confighash-controller",
				"Role/ops/ch-confighash-controller-leader-election",
				"RoleBinding/a/ch-confighash-controller",
				"RoleBinding/b/ch-confighash-controller",
				"RoleBinding/ops/ch-confighash-controller-leader-election",
				"ServiceAccount/ops/ch-confighash-controller",
			}, kinds(objs), "Roles only, no cluster-wide permission")
			assert.Equal(t, int32(2), *d.Spec.Replicas)
			args := d.Spec.Template.Spec.Containers[0].Args
			assert.Subset(t, args, []string{"--leader-elect", "--leader-election-id=ch-confighash-controller",
				"--leader-election-namespace=ops", "--namespaces=a,b"})
			opts, err := controllercmd.ParseFlags(args, io.Discard, os.Getenv)
			require.NoError(t, err)
			assert.Equal(t, []string{"a", "b"}, opts.Namespaces)
			assert.True(t, opts.LeaderElect)
			for _, ns := range []string{"a", "b"} {
				role := typed[rbacv1.Role](t, objs["Role/"+ns+"/ch-confighash-controller"])
				assert.Equal(t, clusterRules, role.Rules, "the same rules as config/")
			}
			le := typed[rbacv1.Role](t, objs["Role/ops/ch-confighash-controller-leader-election"])
			assert.Equal(t, leaderRules, le.Rules, "the leader election rules of config/core")
		})
		t.Run("client-rate-limit", func(t *testing.T) {
			_, d := templateOps(t, h, "--set", "kubeAPIQPS=50", "--set", "kubeAPIBurst=100")
			args := d.Spec.Template.Spec.Containers[0].Args
			assert.Subset(t, args, []string{"--kube-api-qps=50", "--kube-api-burst=100"})
			opts, err := controllercmd.ParseFlags(args, io.Discard, os.Getenv)
			require.NoError(t, err)
			assert.InDelta(t, 50.0, opts.KubeAPIQPS, 0)
			assert.Equal(t, 100, opts.KubeAPIBurst)
		})
		t.Run("each-value-sets-its-flag", func(t *testing.T) {
			for _, tc := range []struct {
				set   []string
				check func(t *testing.T, c controllercmd.Config)
			}{
				{[]string{"coalesceWindow=750ms"}, func(t *testing.T, c controllercmd.Config) { assert.Equal(t, 750*time.Millisecond, c.CoalesceWindow) }},
				{[]string{"minRollInterval=1m"}, func(t *testing.T, c controllercmd.Config) { assert.Equal(t, time.Minute, c.MinRollInterval) }},
				{[]string{"maxRolloutsPerSecond=0.5", "rolloutBurst=3"}, func(t *testing.T, c controllercmd.Config) {
					assert.InDelta(t, 0.5, c.RolloutsPerSecond, 0)
					assert.Equal(t, 3, c.RolloutBurst)
				}},
				{[]string{"annotationPrefix=acme.io"}, func(t *testing.T, c controllercmd.Config) { assert.Equal(t, "acme.io", c.AnnotationPrefix) }},
				{[]string{"argoRollouts=disabled"}, func(t *testing.T, c controllercmd.Config) {
					assert.Equal(t, controller.ArgoRolloutsDisabled, c.ArgoRollouts)
				}},
				{[]string{"dryRun=true"}, func(t *testing.T, c controllercmd.Config) { assert.True(t, c.DryRun) }},
				{[]string{"logFormat=text", "logLevel=debug"}, func(t *testing.T, c controllercmd.Config) {
					assert.Equal(t, "text", c.LogFormat)
					assert.Equal(t, "debug", c.LogLevel)
				}},
				{[]string{"metrics.bindAddress=:9090", "health.bindAddress=0"}, func(t *testing.T, c controllercmd.Config) {
					assert.Equal(t, ":9090", c.MetricsBindAddress)
					assert.Equal(t, "0", c.HealthProbeBindAddress)
				}},
				{[]string{"leaderElection.enabled=true", "leaderElection.id=lock", "leaderElection.namespace=kube-system"}, func(t *testing.T, c controllercmd.Config) {
					assert.True(t, c.LeaderElect)
					assert.Equal(t, "lock", c.LeaderElectionID)
					assert.Equal(t, "kube-system", c.LeaderElectionNamespace)
				}},
				{[]string{"extraArgs={--concurrency=9}"}, func(t *testing.T, c controllercmd.Config) { assert.Equal(t, 9, c.Concurrency) }},
			} {
				t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
					var values []string
					for _, v := range tc.set {
						values = append(values, "--set", v)
					}
					_, d := templateOps(t, h, values...)
					c, err := controllercmd.ParseFlags(d.Spec.Template.Spec.Containers[0].Args, io.Discard, func(string) string { return "" })
					require.NoError(t, err, "the rendered args are the controller's flags")
					tc.check(t, c)
				})
			}
		})
		t.Run("keyed-servicemonitor-no-leader-election", func(t *testing.T) {
			objs, d := templateOps(t, h, "--set", "hmacKey.existingSecret=confighash-key", "--set", "serviceMonitor.enabled=true",
				"--set", "replicaCount=3", "--set", "leaderElection.enabled=false")
			assert.Contains(t, objs, "ServiceMonitor/ops/ch-confighash-controller")
			assert.Contains(t, objs, "Service/ops/ch-confighash-controller-metrics")
			assert.NotContains(t, objs, "Role/ops/ch-confighash-controller-leader-election")
			spec := d.Spec.Template.Spec
			assert.Contains(t, spec.Containers[0].Args, "--hmac-key-file=/etc/confighash/hmac/hmac-key")
			assert.NotContains(t, spec.Containers[0].Args, "--leader-elect")
			require.Len(t, spec.Volumes, 1)
			assert.Equal(t, "confighash-key", spec.Volumes[0].Secret.SecretName)
			require.Len(t, spec.Containers[0].VolumeMounts, 1)
			assert.Equal(t, "/etc/confighash/hmac", spec.Containers[0].VolumeMounts[0].MountPath)
		})
	})
}

// sa is the chart ServiceAccount's identity, impersonated.
func sa(ns, name string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, name),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
}

// TestChartInstallRBAC installs the chart with helm v3 (cluster-wide) and
// helm v4 (namespaced, two replicas) into a real apiserver, then runs the
// controller in-process with the installed Deployment's arguments as the
// chart's ServiceAccount: an edit rolls a managed Deployment, and what the
// controller should not do is denied.
func TestChartInstallRBAC(t *testing.T) {
	cp := cptest.Shared(t)
	admin := cp.RESTConfig()
	cs := kubernetes.NewForConfigOrDie(admin)
	for _, tc := range []struct {
		version    int
		namespaced bool
	}{{3, false}, {4, true}} {
		t.Run(fmt.Sprintf("helm%d", tc.version), func(t *testing.T) {
			ctx := t.Context()
			h := testtools.NewHelm(t, tc.version)
			release := fmt.Sprintf("ch%d", tc.version)
			relNS, appNS, otherNS := release+"-system", release+"-apps", release+"-other"
			for _, ns := range []string{appNS, otherNS} {
				_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			args := []string{"install", release, chartDir(t), "--namespace", relNS, "--create-namespace", "--kubeconfig", cp.KubeconfigPath()}
			if tc.namespaced {
				args = append(args, namespacedValues(appNS)...)
			}
			h.MustRun(t, args...)
			status := h.MustRun(t, "status", release, "--namespace", relNS, "--kubeconfig", cp.KubeconfigPath())
			assert.Contains(t, status, "STATUS: deployed")

			name := release + "-confighash-controller"
			d, err := cs.AppsV1().Deployments(relNS).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			id := sa(relNS, d.Spec.Template.Spec.ServiceAccountName)
			_, err = cs.CoreV1().ServiceAccounts(relNS).Get(ctx, d.Spec.Template.Spec.ServiceAccountName, metav1.GetOptions{})
			require.NoError(t, err, "the chart's ServiceAccount exists")

			can := func(verb, resource, group, ns string) bool {
				t.Helper()
				r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
					Spec: authzv1.SubjectAccessReviewSpec{User: id.UserName, Groups: id.Groups,
						ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns}},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
				return r.Status.Allowed
			}
			for _, res := range []string{"configmaps", "secrets"} {
				assert.True(t, can("watch", res, "", appNS), "watch %s", res)
				assert.False(t, can("get", res, "", appNS), "get %s: listed and watched, never read one by one", res)
				assert.False(t, can("create", res, "", appNS), "create %s", res)
				assert.False(t, can("update", res, "", appNS), "update %s", res)
			}
			assert.True(t, can("patch", "deployments", "apps", appNS))
			assert.False(t, can("delete", "deployments", "apps", appNS), "delete deployments")
			assert.False(t, can("create", "pods", "", appNS), "create pods")
			assert.False(t, can("list", "namespaces", "", ""), "list namespaces")
			if tc.namespaced {
				assert.False(t, can("list", "configmaps", "", otherNS), "namespaced: another namespace's ConfigMaps")
				assert.False(t, can("list", "secrets", "", ""), "namespaced: no cluster-wide list")
				assert.True(t, can("update", "leases", "coordination.k8s.io", relNS), "leader election")
			} else {
				assert.True(t, can("list", "secrets", "", otherNS), "cluster-wide")
				assert.False(t, can("update", "leases", "coordination.k8s.io", relNS), "one replica: no leader election")
			}

			// The same denials by trying, as the ServiceAccount.
			cfg := rest.CopyConfig(admin)
			cfg.Impersonate = id
			as := kubernetes.NewForConfigOrDie(cfg)
			_, err = as.CoreV1().Secrets(appNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stolen"}}, metav1.CreateOptions{})
			assert.True(t, apierrors.IsForbidden(err), "create a Secret: %v", err)
			_, err = as.CoreV1().Secrets(appNS).Get(ctx, "anything", metav1.GetOptions{})
			assert.True(t, apierrors.IsForbidden(err), "get a Secret: %v", err)
			if tc.namespaced {
				_, err = as.CoreV1().ConfigMaps(otherNS).List(ctx, metav1.ListOptions{})
				assert.True(t, apierrors.IsForbidden(err), "list ConfigMaps in another namespace: %v", err)
			}

			rollsAs(t, cs, cfg, d, appNS)

			_, err = as.AppsV1().Deployments(appNS).Get(ctx, "web", metav1.GetOptions{})
			assert.True(t, apierrors.IsForbidden(err), "get a Deployment one by one: %v", err)
			err = as.AppsV1().Deployments(appNS).Delete(ctx, "web", metav1.DeleteOptions{})
			assert.True(t, apierrors.IsForbidden(err), "delete a Deployment: %v", err)
		})
	}
}

// outcomes collects the reconcile outcomes of an in-process controller.
type outcomes struct {
	mu   sync.Mutex
	list []controller.Outcome
}

func (o *outcomes) add(out controller.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, out)
}

// waitFor polls for an outcome after since that matches, and returns the
// position after it.
func (o *outcomes) waitFor(t *testing.T, since int, what string, match func(controller.Outcome) bool) int {
	t.Helper()
	next := -1
	eventually(t, what, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		for i := since; i < len(o.list); i++ {
			if match(o.list[i]) {
				next = i + 1
				return true
			}
		}
		return false
	})
	return next
}

func (o *outcomes) errors() []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	for _, out := range o.list {
		if out.Err != nil {
			errs = append(errs, out.Err)
		}
	}
	return errs
}

// eventually polls cond every 50ms until it holds or waitTimeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kubetest.EventuallyTrue(t, waitTimeout, 50*time.Millisecond, what, cond)
}

// rollsAs runs the controller in-process with the chart Deployment's
// arguments and the ServiceAccount's identity (cfg), and checks that a
// ConfigMap edit rolls an opted-in Deployment in appNS exactly once.
func rollsAs(t *testing.T, cs kubernetes.Interface, cfg *rest.Config, chartDeploy *appsv1.Deployment, appNS string) {
	t.Helper()
	ctx := t.Context()
	opts, err := controllercmd.ParseFlags(chartDeploy.Spec.Template.Spec.Containers[0].Args, io.Discard, os.Getenv)
	require.NoError(t, err, "the installed Deployment's args")
	opts.RESTConfig = cfg
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0" // no ports in a test
	opts.CoalesceWindow = 500 * time.Millisecond
	var logs bytes.Buffer
	var logMu sync.Mutex
	opts.Logger = controllercmd.NewLogger(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), "text", "info")
	opts.Registry = prometheus.NewRegistry()
	obs := &outcomes{}
	opts.Observer = obs.add
	mgr, _, err := controller.NewManager(opts.Options)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "controller stopped with an error")
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop in 30s")
		}
		if t.Failed() {
			logMu.Lock()
			defer logMu.Unlock()
			t.Logf("controller logs:\n%s", logs.String())
		}
	})

	_, err = cs.CoreV1().ConfigMaps(appNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data: map[string]string{"LOG_LEVEL": "info"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	d := kubetest.Deployment("web", 1, nil, []corev1.EnvFromSource{kubetest.FromConfigMap("app-config")})
	d.Annotations = map[string]string{"confighash.dev/enabled": "true"}
	_, err = cs.AppsV1().Deployments(appNS).Create(ctx, d, metav1.CreateOptions{})
	require.NoError(t, err)
	web := func(result string) func(controller.Outcome) bool {
		return func(o controller.Outcome) bool {
			return o.Request.Namespace == appNS && o.Request.Name == "web" && o.Result == result
		}
	}
	mark := obs.waitFor(t, 0, "web in sync", web("in_sync"))

	cm, err := kubetest.Edit(ctx, cs.CoreV1().ConfigMaps(appNS), "app-config", "", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
	require.NoError(t, err)
	next := obs.waitFor(t, mark, "web rolled", web("rolled"))
	obs.waitFor(t, next, "web in sync with the edit", func(o controller.Outcome) bool {
		return web("in_sync")(o) && o.ConfigVersions["ConfigMap/app-config"] == cm.ResourceVersion
	})
	assert.Empty(t, obs.errors(), "no reconcile failed for lack of permission")

	var rs []string
	var got *appsv1.Deployment
	// The Deployment controller creates the new ReplicaSet, then writes the
	// Deployment's revision: wait for both.
	eventually(t, "2 ReplicaSets of web, and its revision written", func() bool {
		list, err := cs.AppsV1().ReplicaSets(appNS).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false
		}
		rs = rs[:0]
		for _, r := range list.Items {
			rs = append(rs, r.Name)
		}
		if got, err = cs.AppsV1().Deployments(appNS).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			return false
		}
		return len(rs) >= 2 && got.Annotations["deployment.kubernetes.io/revision"] != "1"
	})
	assert.Len(t, rs, 2, "the edit rolled web exactly once")
	assert.NotEmpty(t, got.Spec.Template.Annotations["confighash.dev/controller-hash"])
	assert.Equal(t, "2", got.Annotations["deployment.kubernetes.io/revision"])
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestChartKeyReadable checks that the controller, which runs as a non-root
// user, can read the HMAC key file the chart mounts from hmacKey's Secret.
// The kubelet writes Secret volume files owned by root, with the volume's
// mode; only with an fsGroup does it give them that group and add group
// read, and only then is the container's process in that group. A key file
// the controller cannot read stops it at start, in every pod.
func TestChartKeyReadable(t *testing.T) {
	helms(t, func(t *testing.T, h testtools.Helm) {
		for _, tc := range []struct {
			name   string
			values []string
		}{
			{name: "defaults", values: nil},
			{name: "another user", values: []string{"--set", "podSecurityContext.runAsUser=1000", "--set", "podSecurityContext.runAsGroup=1000"}},
			{name: "another key name", values: []string{"--set", "hmacKey.key=key.txt"}},
			{name: "fsGroup removed from the values", values: []string{"--set", "podSecurityContext.fsGroup=null"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, d := templateOps(t, h, append([]string{"--set", "hmacKey.existingSecret=confighash-key"}, tc.values...)...)
				spec := d.Spec.Template.Spec
				require.Len(t, spec.Volumes, 1)
				require.NotNil(t, spec.Volumes[0].Secret)
				assert.True(t, secretFileReadable(spec.SecurityContext, spec.Containers[0].SecurityContext, spec.Volumes[0].Secret),
					"pod %+v, container %+v, volume %+v", spec.SecurityContext, spec.Containers[0].SecurityContext, spec.Volumes[0].Secret)
			})
		}
	})
}

// secretFileReadable says whether a process running with the pod's and
// container's security context may read a file of the Secret volume, as the
// kubelet writes it: owned by root:root with the item's or the volume's mode
// (0644 by default); with an fsGroup, group fsGroup with group read added,
// and fsGroup among the process's groups.
func secretFileReadable(pod *corev1.PodSecurityContext, ctr *corev1.SecurityContext, vol *corev1.SecretVolumeSource) bool {
	var uid, gid *int64
	var groups []int64
	var fsGroup *int64
	if pod != nil {
		uid, gid, groups, fsGroup = pod.RunAsUser, pod.RunAsGroup, pod.SupplementalGroups, pod.FSGroup
	}
	if ctr != nil && ctr.RunAsUser != nil {
		uid = ctr.RunAsUser
	}
	if ctr != nil && ctr.RunAsGroup != nil {
		gid = ctr.RunAsGroup
	}
	if uid == nil || *uid == 0 {
		return true // root (the image's user is not known here: assume the worst elsewhere)
	}
	mode := int32(0o644)
	if vol.DefaultMode != nil {
		mode = *vol.DefaultMode
	}
	for _, item := range vol.Items {
		if item.Mode != nil {
			mode = *item.Mode
		}
	}
	if mode&0o004 != 0 || fsGroup != nil {
		return true
	}
	inRootGroup := gid != nil && *gid == 0
	for _, g := range groups {
		inRootGroup = inRootGroup || g == 0
	}
	return mode&0o040 != 0 && inRootGroup
}

// TestConfigHMACComponent builds config/ and config/namespaced/ with the
// config/hmac component, as docs/install.md says, with the real kustomize,
// and checks the controller gets a key file it can read at the path its
// flag names, from the Secret the docs create.
func TestConfigHMACComponent(t *testing.T) {
	kustomize := testtools.Tool(t, "kustomize")
	root := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(root, "config"), os.DirFS(filepath.Join(testtools.RepoRoot(t), "config"))))
	for _, variant := range []string{"config", "config/namespaced"} {
		t.Run(variant, func(t *testing.T) {
			dir := filepath.Join(root, "overlay-"+filepath.Base(variant))
			require.NoError(t, os.MkdirAll(dir, 0o755))
			kust := fmt.Sprintf("resources: [../%s]\ncomponents: [../config/hmac]\n", variant)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o600))
			res := testtools.Run(t, "", nil, nil, kustomize, "build", dir)
			require.Equal(t, 0, res.ExitCode, res.Stderr)
			objs := objects(t, res.Stdout)
			u, ok := objs["Deployment/confighash-system/confighash-controller"]
			require.True(t, ok, "objects: %v", kinds(objs))
			d := typed[appsv1.Deployment](t, u)
			spec := d.Spec.Template.Spec
			// The flag, as the controller reads it (ParseFlags would read the
			// file, which exists only in the pod).
			var keyFile string
			for _, a := range spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--hmac-key-file="); ok {
					keyFile = v
				}
			}
			require.NotEmpty(t, keyFile, "args: %v", spec.Containers[0].Args)
			require.Len(t, spec.Volumes, 1)
			vol := spec.Volumes[0].Secret
			require.NotNil(t, vol)
			assert.Equal(t, "confighash-hmac", vol.SecretName, "the Secret docs/install.md creates")
			require.Len(t, vol.Items, 1)
			assert.Equal(t, "hmac-key", vol.Items[0].Key, "the key docs/install.md creates")
			require.Len(t, spec.Containers[0].VolumeMounts, 1)
			m := spec.Containers[0].VolumeMounts[0]
			assert.Equal(t, spec.Volumes[0].Name, m.Name)
			assert.Equal(t, filepath.Join(m.MountPath, vol.Items[0].Path), keyFile)
			assert.True(t, secretFileReadable(spec.SecurityContext, spec.Containers[0].SecurityContext, vol),
				"pod %+v, volume %+v", spec.SecurityContext, vol)
		})
	}
}

// TestChartNotes checks the notes printed after an install (Helm 4's
// client-side dry run renders them without a cluster) name the annotation
// prefix the controller uses, and in keyed mode the Secret it needs.
func TestChartNotes(t *testing.T) {
	h := testtools.NewHelm(t, 4)
	for _, tc := range []struct {
		name       string
		values     []string
		want, deny []string
	}{
		{name: "defaults", want: []string{"confighash.dev/hash", "watching every namespace"}, deny: []string{"Keyed mode", "--prefix"}},
		{name: "another prefix, keyed", values: []string{"--set", "annotationPrefix=acme.io", "--set", "hmacKey.existingSecret=ch-key"},
			want: []string{"acme.io/hash", "acme.io/enabled", "--prefix acme.io", "ops/ch-key", "--hmac-key-file"}, deny: []string{"confighash.dev/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := h.MustRun(t, append([]string{"install", "--dry-run=client", "ch", chartDir(t), "-n", "ops"}, tc.values...)...)
			_, notes, ok := strings.Cut(out, "NOTES:")
			require.True(t, ok, out)
			for _, w := range tc.want {
				assert.Contains(t, notes, w)
			}
			for _, d := range tc.deny {
				assert.NotContains(t, notes, d)
			}
		})
	}
}

// TestConfigApplyAsDocumented applies config/namespaced/, config/ and
// config/ with the config/hmac component, built by the real kustomize, to
// the real API server the way docs/install.md says: every object must be
// accepted. The namespaced variant's Role and RoleBinding go to the watched
// namespace ("apps" as shipped), which it does not create: applied before
// that namespace exists it fails naming it, as the docs warn.
func TestConfigApplyAsDocumented(t *testing.T) {
	kustomize := testtools.Tool(t, "kustomize")
	cp := cptest.Shared(t)
	admin := cp.RESTConfig()
	cs, dyn, mapper := kubetest.Clients(t, admin)
	ctx := t.Context()
	root := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(root, "config"), os.DirFS(filepath.Join(testtools.RepoRoot(t), "config"))))
	overlay := filepath.Join(root, "keyed")
	require.NoError(t, os.MkdirAll(overlay, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("resources: [../config]\ncomponents: [../config/hmac]\n"), 0o600))
	build := func(dir string) string {
		t.Helper()
		res := testtools.Run(t, "", nil, nil, kustomize, "build", dir)
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		return res.Stdout
	}
	apply := func(stream string) error {
		return kubetest.Apply(ctx, dyn, mapper, strings.NewReader(stream), kubetest.ApplyOptions{FieldManager: "kubectl"})
	}

	_, err := cs.CoreV1().Namespaces().Get(ctx, "apps", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "namespace apps exists already: %v", err)
	namespaced := build(filepath.Join(root, "config", "namespaced"))
	err = apply(namespaced)
	require.Error(t, err, "config/namespaced/ applied with no namespace apps")
	assert.Contains(t, err.Error(), `"apps" not found`)

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, apply(namespaced), "config/namespaced/ once apps exists")
	require.NoError(t, apply(build(filepath.Join(root, "config"))), "config/")
	require.NoError(t, apply(build(overlay)), "config/ with config/hmac")
	d, err := cs.AppsV1().Deployments("confighash-system").Get(ctx, "confighash-controller", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, d.Spec.Template.Spec.SecurityContext)
	assert.NotNil(t, d.Spec.Template.Spec.SecurityContext.FSGroup, "the API server kept the fsGroup")
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--hmac-key-file=/etc/confighash/hmac/hmac-key")
}
