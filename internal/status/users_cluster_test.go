package status_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/output"
	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// TestStatusOfHelmRenders renders examples/helm with the real Helm 3 and the
// real confighash post-renderer, with and without --namespace in the render
// (Helm does not write the release namespace into the objects), applies it
// to the namespace the release goes to, and checks that status reports the
// workload current, consuming its ConfigMap and Secret, then stale once the
// Secret's consumed key is edited out of band. It then runs status as a
// user who may read the workloads but not Secrets, as many developers are
// set up: the workload is reported with its config unknown, naming what
// could not be read, and the exit code is 1. The class: a user who may read
// only Deployments and their configs (no other workload kind, no pods,
// ReplicaSets or Events) still gets the Deployment's config state, with
// what could not be read named; one who may read no workload kind gets an
// error.
func TestStatusOfHelmRenders(t *testing.T) {
	cptest.Require(t)
	bin := binaries(t)
	cp := cptest.Private(t)
	admin := cp.RESTConfig()
	cs, dyn, mapper := kubetest.Clients(t, admin)
	ctx := context.Background()
	helm := testtools.NewHelm(t, 3)
	chart := filepath.Join(testtools.RepoRoot(t), "examples", "helm")
	confighash := filepath.Join(testtools.BinDir(t), "confighash")

	for _, tc := range []struct {
		name, namespace string
		renderArgs      []string
	}{
		{name: "render with --namespace", namespace: "helm-ns", renderArgs: []string{"--post-renderer-args", "--namespace=helm-ns"}},
		{name: "render without --namespace", namespace: "helm-nons"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.namespace}}, metav1.CreateOptions{})
			require.NoError(t, err)
			args := append([]string{"template", "web", chart, "-n", tc.namespace, "--set", "smokeTest.enabled=false",
				"--post-renderer", confighash}, tc.renderArgs...)
			rendered := helm.MustRun(t, args...)
			require.Contains(t, rendered, "confighash.dev/hash")
			require.NoError(t, kubetest.Apply(ctx, dyn, mapper, bytes.NewReader([]byte(rendered)),
				kubetest.ApplyOptions{Namespace: tc.namespace, FieldManager: "helm"}))

			report, err := status.Collect(ctx, cs, status.Options{Namespace: tc.namespace})
			require.NoError(t, err)
			require.Len(t, report.Workloads, 1)
			w := report.Workloads[0]
			assert.Equal(t, status.ConfigCurrent, w.Config, "as applied: %+v", w)
			assert.Len(t, w.Configs, 2, "the ConfigMap and the Secret")
			for _, c := range w.Configs {
				assert.True(t, c.Found, "%s %s", c.Kind, c.Name)
			}

			_, err = kubetest.Edit(ctx, cs.CoreV1().Secrets(tc.namespace), w.Name, "", func(s *corev1.Secret) {
				s.Data["password"] = []byte("rotated out of band")
			})
			require.NoError(t, err)
			report, err = status.Collect(ctx, cs, status.Options{Namespace: tc.namespace})
			require.NoError(t, err)
			require.Len(t, report.Workloads, 1)
			assert.Equal(t, status.ConfigStale, report.Workloads[0].Config, "after the Secret's edit")
		})
	}

	// A developer who may read everything in helm-ns but Secrets.
	const user = "dev"
	grantAllButSecrets(t, cs, "helm-ns", user)
	dev, devCfg := userClient(ctx, t, cp, "helm-ns", user)
	report, err := status.Collect(ctx, dev, status.Options{Namespace: "helm-ns"})
	require.Error(t, err, "a config that cannot be read is an error")
	require.Len(t, report.Workloads, 1, "yet the workload is reported: %v", err)
	w := report.Workloads[0]
	assert.Equal(t, status.ConfigUnknown, w.Config)
	assert.Contains(t, w.Unreadable, "Secret/web-greeter")
	assert.Contains(t, err.Error(), "forbidden")
	assert.Contains(t, err.Error(), "Secret helm-ns/web-greeter")

	kubeconfig := filepath.Join(t.TempDir(), "dev.kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(devCfg, kubeconfig))
	res := testtools.Run(t, "", nil, nil, filepath.Join(bin, "kubectl-confighash"), "status", "--kubeconfig", kubeconfig, "-n", "helm-ns")
	assert.Equal(t, 1, res.ExitCode, "stderr: %s", res.Stderr)
	assert.Regexp(t, `Deployment helm-ns/web-greeter\s+UNKNOWN`, res.Stdout)
	assert.Contains(t, res.Stderr, "Secret helm-ns/web-greeter")
	assert.NotContains(t, res.Stdout+res.Stderr, "rotated out of band")

	// A user who may read the Deployments and their configs, nothing else:
	// no other workload kind, no ReplicaSets, Pods or Events.
	const viewer = "viewer"
	grant(t, cs, "helm-ns", viewer, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
	})
	vc, _ := userClient(ctx, t, cp, "helm-ns", viewer)
	report, err = status.Collect(ctx, vc, status.Options{Namespace: "helm-ns"})
	require.ErrorIs(t, err, status.ErrUnreadable)
	require.Len(t, report.Workloads, 1, "the Deployment is reported: %v", err)
	w = report.Workloads[0]
	assert.Equal(t, status.ConfigStale, w.Config, "its configs are readable: the Secret was edited")
	assert.True(t, w.Rollout.PodsUnreadable)
	assert.True(t, w.EventsUnreadable)
	for _, what := range []string{"listing StatefulSets", "listing DaemonSets", "listing CronJobs", "listing ReplicaSets", "listing Events"} {
		assert.Contains(t, err.Error(), what)
	}

	// One who may read no workload at all gets an error, not an empty report.
	report, err = status.Collect(ctx, dev, status.Options{Namespace: "helm-nons"})
	require.Error(t, err)
	require.NotErrorIs(t, err, status.ErrUnreadable)
	assert.Empty(t, report.Workloads)
}

// userClient adds user to the control plane and returns its client and
// REST config once its Role lets it list the Deployments of namespace (RBAC
// reaches the API server's authorizer a moment after it is written).
func userClient(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, namespace, user string) (kubernetes.Interface, *rest.Config) {
	t.Helper()
	cfg, err := cp.AddUser(user, nil)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	kubetest.EventuallyTrue(t, 30*time.Second, 200*time.Millisecond, "the Role of "+user+" takes effect", func() bool {
		_, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		return err == nil
	})
	return cs, cfg
}

// grantAllButSecrets gives user read access to every resource status reads
// in namespace, except Secrets.
func grantAllButSecrets(t *testing.T, cs kubernetes.Interface, namespace, user string) {
	t.Helper()
	read := []string{"get", "list", "watch"}
	grant(t, cs, namespace, user, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "pods", "events"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets", "statefulsets", "daemonsets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: read},
	})
}

// grant binds user to a Role of rules in namespace.
func grant(t *testing.T, cs kubernetes.Interface, namespace, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	_, err := cs.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestStatusOfArgoRollouts serves the Argo Rollouts CRD (schema-less, as
// the controller's tests do): status reports a managed Rollout like the
// other workloads the controller manages, current as applied and stale
// once a key it reads is edited, with its progress from its status; in a
// cluster that serves no Rollouts, status works as before.
func TestStatusOfArgoRollouts(t *testing.T) {
	cptest.Require(t)
	cp := cptest.Private(t)
	admin := cp.RESTConfig()
	cs, dyn, mapper := kubetest.Clients(t, admin)
	ctx := context.Background()
	const namespace = "rollouts"
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = status.Collect(ctx, cs, status.Options{Namespace: namespace})
	require.NoError(t, err, "no Rollout CRD served")

	require.NoError(t, kubetest.Apply(ctx, dyn, mapper, bytes.NewReader([]byte(kubetest.RolloutCRD)), kubetest.ApplyOptions{FieldManager: "kubectl"}))
	kubetest.WaitDiscovered(t, mapper, schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"})
	stream := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {LOG_LEVEL: info, UNUSED: x}\n---\n" +
		kubetest.Workload{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "canary", Replicas: 2,
			Spec: []string{"strategy: {canary: {}}"}, Env: []string{kubetest.EnvKey("app", "LOG_LEVEL")}}.YAML()
	rendered, _, err := postrenderer.Process([]byte(stream), inject.Options{DefaultNamespace: namespace})
	require.NoError(t, err)
	require.NoError(t, kubetest.Apply(ctx, dyn, mapper, bytes.NewReader(rendered), kubetest.ApplyOptions{Namespace: namespace, FieldManager: "argocd"}))

	report, err := status.Collect(ctx, cs, status.Options{Namespace: namespace})
	require.NoError(t, err)
	require.Len(t, report.Workloads, 1)
	w := report.Workloads[0]
	assert.Equal(t, "Rollout", w.Kind)
	assert.Equal(t, "canary", w.Name)
	assert.Equal(t, status.ConfigCurrent, w.Config)
	assert.NotEmpty(t, w.RenderHash)
	assert.Equal(t, []status.Config{{Consumed: output.Consumed{Kind: "ConfigMap", Name: "app", Keys: []string{"LOG_LEVEL"}}, Found: true}}, w.Configs)
	assert.False(t, w.Rollout.Done, "no Argo Rollouts controller: nothing observed")
	assert.Equal(t, int32(2), w.Rollout.Replicas)

	_, err = kubetest.Edit(ctx, cs.CoreV1().ConfigMaps(namespace), "app", "", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
	require.NoError(t, err)
	report, err = status.Collect(ctx, cs, status.Options{Namespace: namespace})
	require.NoError(t, err)
	require.Len(t, report.Workloads, 1)
	assert.Equal(t, status.ConfigStale, report.Workloads[0].Config)

	all, err := status.Collect(ctx, cs, status.Options{AllNamespaces: true})
	require.NoError(t, err)
	require.Len(t, all.Workloads, 1, "-A lists it too")

	// Served here: a user who may read the other kinds but not Rollouts is
	// told so, in the API server's words (not "unknown").
	grantAllButSecrets(t, cs, namespace, "no-rollouts")
	nr, _ := userClient(ctx, t, cp, namespace, "no-rollouts")
	_, err = status.Collect(ctx, nr, status.Options{Namespace: namespace})
	require.ErrorIs(t, err, status.ErrUnreadable)
	assert.Contains(t, err.Error(), `listing Rollouts.argoproj.io: rollouts.argoproj.io is forbidden: User "no-rollouts" cannot list resource "rollouts"`)
}
