package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// wantVersion is the Kubernetes version hack/build-controlplane.sh builds.
const wantVersion = "v1.37.1"

// waitTimeout bounds every poll for controller activity.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) { os.Exit(cptest.Run(m)) }

// sharedControlPlane returns the package's control plane (cptest's shared
// one, with a viewer user), starting it on first use.
func sharedControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	return cptest.Shared(t, controlplane.Options{
		Users: []controlplane.User{{Name: "viewer", Groups: []string{"confighash:viewers"}}},
	})
}

// newClient returns a clientset for cfg.
func newClient(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("new clientset: %v", err)
	}
	return cs
}

// createNamespace creates a namespace for one test.
func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// eventually polls cond every 100ms until it returns true or waitTimeout
// passes; the last error is reported on timeout.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	kubetest.Eventually(t, waitTimeout, 100*time.Millisecond, what, cond)
}

func TestVersion(t *testing.T) {
	cp := sharedControlPlane(t)
	info, err := newClient(t, cp.RESTConfig()).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	if info.GitVersion != wantVersion {
		t.Fatalf("/version gitVersion = %q, want %q", info.GitVersion, wantVersion)
	}
	t.Logf("/version: %s (major %q minor %q, %s)", info.GitVersion, info.Major, info.Minor, info.GoVersion)
}

func TestKubeconfigPath(t *testing.T) {
	cp := sharedControlPlane(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath())
	if err != nil {
		t.Fatalf("load %s: %v", cp.KubeconfigPath(), err)
	}
	if cfg.Host != cp.Endpoint() {
		t.Fatalf("kubeconfig server = %q, want %q", cfg.Host, cp.Endpoint())
	}
	if _, err := newClient(t, cfg).CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("get kube-system with kubeconfig: %v", err)
	}
}

// testDeployment returns a two-replica Deployment whose Pods never run
// (there is no kubelet and the image does not exist).
func testDeployment(name string) *appsv1.Deployment { return kubetest.Deployment(name, 2, nil, nil) }

// waitReplicaSets waits until the Deployment controls exactly n ReplicaSets.
func waitReplicaSets(t *testing.T, cs kubernetes.Interface, d *appsv1.Deployment, n int) []appsv1.ReplicaSet {
	t.Helper()
	var got []appsv1.ReplicaSet
	eventually(t, fmt.Sprintf("%d ReplicaSets of Deployment %s", n, d.Name), func(ctx context.Context) (bool, error) {
		var err error
		got, err = kubetest.OwnedReplicaSets(ctx, cs, d.Namespace, d.UID)
		return len(got) == n, err
	})
	return got
}

func TestDeploymentRollout(t *testing.T) {
	cp := sharedControlPlane(t)
	cs := newClient(t, cp.RESTConfig())
	ctx := context.Background()
	createNamespace(t, cs, "rollout")

	d, err := cs.AppsV1().Deployments("rollout").Create(ctx, testDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Deployment: %v", err)
	}
	first := waitReplicaSets(t, cs, d, 1)
	t.Logf("deployment controller created ReplicaSet %s", first[0].Name)

	// The ReplicaSet controller creates Pods; nothing ever runs them.
	eventually(t, "Pods of the first ReplicaSet", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("rollout").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods.Items) == 2, err
	})

	patch := []byte(`{"spec":{"template":{"metadata":{"annotations":{"confighash.io/hash":"v2"}}}}}`)
	if _, err := cs.AppsV1().Deployments("rollout").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch pod template: %v", err)
	}
	both := waitReplicaSets(t, cs, d, 2)
	assertDistinctTemplates(t, both)
	assertPodsNeverRan(t, cs, "rollout")
}

// assertDistinctTemplates checks that the two ReplicaSets have different
// pod-template-hash labels, i.e. a real new revision was rolled out.
func assertDistinctTemplates(t *testing.T, rss []appsv1.ReplicaSet) {
	t.Helper()
	h0 := rss[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	h1 := rss[1].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if h0 == "" || h0 == h1 {
		t.Fatalf("ReplicaSets %s and %s have pod-template-hash %q and %q, want two distinct hashes",
			rss[0].Name, rss[1].Name, h0, h1)
	}
	t.Logf("rollout created second ReplicaSet: %s (hash %s) and %s (hash %s)", rss[0].Name, h0, rss[1].Name, h1)
}

// assertPodsNeverRan shows the second ReplicaSet appeared although no Pod
// status was ever patched: every Pod is still Pending and not Ready.
func assertPodsNeverRan(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			t.Errorf("pod %s phase %q, want Pending (no kubelet)", p.Name, p.Status.Phase)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				t.Errorf("pod %s is Ready although nothing runs it", p.Name)
			}
		}
	}
	t.Logf("%d pods exist, none running or ready: no pod status patching was needed", len(pods.Items))
}

// TestOptionsUsers checks that a user of Options.Users authenticates as
// itself with its groups, and that an unknown name is an error.
func TestOptionsUsers(t *testing.T) {
	cp := sharedControlPlane(t)
	cfg, err := cp.UserConfig("viewer")
	if err != nil {
		t.Fatal(err)
	}
	assertIdentity(t, cfg, "viewer", "confighash:viewers")
	if _, err := cp.UserConfig("nobody"); err == nil {
		t.Fatal("UserConfig(nobody) succeeded, want error")
	}
}

func TestAddUserRBAC(t *testing.T) {
	cp := sharedControlPlane(t)
	admin := newClient(t, cp.RESTConfig())
	createNamespace(t, admin, "rbac")
	cfg, err := cp.AddUser("alice", []string{"confighash:devs"})
	if err != nil {
		t.Fatal(err)
	}
	assertIdentity(t, cfg, "alice", "confighash:devs")
	alice := newClient(t, cfg)
	ctx := context.Background()

	_, err = alice.CoreV1().ConfigMaps("rbac").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("list ConfigMaps as alice before grant: err = %v, want Forbidden", err)
	}
	grantConfigMapRead(t, admin, "rbac", "confighash:devs")
	eventually(t, "RBAC grant to take effect", func(ctx context.Context) (bool, error) {
		_, err := alice.CoreV1().ConfigMaps("rbac").List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
}

// assertIdentity checks who the apiserver thinks cfg authenticates as.
func assertIdentity(t *testing.T, cfg *rest.Config, user, group string) {
	t.Helper()
	review, err := newClient(t, cfg).AuthenticationV1().SelfSubjectReviews().
		Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview as %s: %v", user, err)
	}
	info := review.Status.UserInfo
	if info.Username != user || !contains(info.Groups, group) {
		t.Fatalf("authenticated as %q %v, want %q in group %q", info.Username, info.Groups, user, group)
	}
}

// grantConfigMapRead lets group list ConfigMaps in ns.
func grantConfigMapRead(t *testing.T, cs kubernetes.Interface, ns, group string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"},
		}},
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Role: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RoleBinding: %v", err)
	}
}

// contains reports whether s holds v.
func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRestartHooks(t *testing.T) {
	cp := sharedControlPlane(t)
	cs := newClient(t, cp.RESTConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNamespace(t, cs, "restart")

	// restart stops one component, runs down (when set) to see it gone,
	// starts it again and logs how long that took.
	restart := func(t *testing.T, what string, stop func() error, down func(), start func(context.Context) error) {
		t.Helper()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if down != nil {
			down()
		}
		begin := time.Now()
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s ready again after %s", what, time.Since(begin).Round(time.Millisecond))
	}

	t.Run("apiserver", func(t *testing.T) {
		restart(t, "apiserver", cp.StopAPIServer, func() {
			if _, err := cs.CoreV1().Namespaces().Get(ctx, "restart", metav1.GetOptions{}); err == nil {
				t.Fatal("GET succeeded while the apiserver was stopped")
			}
		}, cp.StartAPIServer)
		assertNamespaceExists(t, cs, "restart")
	})

	t.Run("etcd", func(t *testing.T) {
		restart(t, "etcd and apiserver", cp.StopEtcd, func() {
			eventually(t, "apiserver /readyz to fail without etcd", func(ctx context.Context) (bool, error) {
				err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
				return err != nil, nil
			})
		}, cp.StartEtcd)
		assertNamespaceExists(t, cs, "restart")
	})

	t.Run("controller-manager", func(t *testing.T) {
		restart(t, "kube-controller-manager", cp.StopControllerManager, nil, cp.StartControllerManager)
		d, err := cs.AppsV1().Deployments("restart").Create(ctx, testDeployment("after-restart"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create Deployment: %v", err)
		}
		waitReplicaSets(t, cs, d, 1)
	})
}

// assertNamespaceExists checks that data written before a restart survived.
func assertNamespaceExists(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s after restart: %v", name, err)
	}
}

func TestStartFailsWithMissingBinaries(t *testing.T) {
	_, err := controlplane.Start(context.Background(), controlplane.Options{BinDir: t.TempDir()})
	if !errors.Is(err, controlplane.ErrBinariesMissing) {
		t.Fatalf("Start with empty BinDir: err = %v, want ErrBinariesMissing", err)
	}
}

func TestStartFailureIncludesLogTail(t *testing.T) {
	cptest.Require(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = controlplane.Start(ctx, controlplane.Options{APIServerPort: busy.Addr().(*net.TCPAddr).Port})
	if err == nil {
		t.Fatal("Start succeeded although the apiserver port is in use")
	}
	msg := err.Error()
	if !strings.Contains(msg, "kube-apiserver") || !strings.Contains(msg, "last lines of") {
		t.Fatalf("error does not name the component or include its log tail: %v", err)
	}
	t.Logf("start failure reported as expected (%d bytes of error): %s", len(msg), msg)
}

// TestStartPicksAgainWhenAPortIsTaken: a port envtest found free for etcd
// or kube-apiserver can be taken before the process binds it. The first
// start of each is given a port this test holds; Start starts each again
// on ports picked anew and the control plane comes up on them.
func TestStartPicksAgainWhenAPortIsTaken(t *testing.T) {
	cptest.Require(t)
	var held []int
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		held = append(held, l.Addr().(*net.TCPAddr).Port)
	}
	logDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.WithFirstPorts(controlplane.Options{LogDir: logDir}, held[0], held[1]))
	if err != nil {
		t.Fatalf("Start with the first ports taken: %v", err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range []struct{ name, endpoint string }{
		{controlplane.EtcdBinary, cp.EtcdEndpoint()},
		{controlplane.APIServerBinary, cp.Endpoint()},
	} {
		for _, port := range held {
			if strings.HasSuffix(c.endpoint, ":"+strconv.Itoa(port)) {
				t.Errorf("%s serves on the held port %d", c.name, port)
			}
		}
		logs, err := os.ReadFile(filepath.Join(logDir, c.name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(logs), "address already in use") {
			t.Errorf("%s's log does not show the first start failing on the held port", c.name)
		}
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the control plane does not answer: %v", err)
	}
}
