package controller_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/controllercmd"
	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// waitTimeout bounds every poll; the machines running these tests are
// shared and busy.
const waitTimeout = 90 * time.Second

// testWindow is the coalescing window of the controllers in these tests.
const testWindow = 1500 * time.Millisecond

func TestMain(m *testing.M) {
	// Controllers under test log to their own buffers; this catches the
	// rest (caches built directly by tests).
	ctrllog.SetLogger(controllercmd.NewLogger(os.Stderr, "text", "info"))
	code := cptest.Run(m)
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// env is one test's namespace on the shared control plane, with clients.
type env struct {
	t      testing.TB
	cp     *controlplane.ControlPlane
	cfg    *rest.Config
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	ns     string
}

var nonDNS = regexp.MustCompile(`[^a-z0-9]+`)

func newEnv(t testing.TB) *env { return envOn(t, cptest.Shared(t)) }

// envOn is newEnv on a given control plane.
func envOn(t testing.TB, cp *controlplane.ControlPlane) *env {
	t.Helper()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 200, 400
	e := &env{t: t, cp: cp, cfg: cfg}
	e.cs, e.dyn, e.mapper = kubetest.Clients(t, cfg)
	name := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	e.ns = strings.Trim(fmt.Sprintf("%s-%04x", name, rand.IntN(1<<16)), "-")
	_, err := e.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", e.ns, err)
	}
	return e
}

// eventually polls cond every 50ms until it holds or waitTimeout passes.
func eventually(t testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	eventuallyWithin(t, waitTimeout, 50*time.Millisecond, what, cond)
}

// eventuallyWithin polls cond every interval until it holds or timeout
// passes.
func eventuallyWithin(t testing.TB, timeout, interval time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	kubetest.Eventually(t, timeout, interval, what, cond)
}

// ---- the controller under test ------------------------------------------

// observer collects every reconcile outcome of one controller.
type observer struct {
	mu   sync.Mutex
	list []controller.Outcome
	when []time.Time
}

func (o *observer) add(out controller.Outcome) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, out)
	o.when = append(o.when, now)
}

// at is when outcome i was reported.
func (o *observer) at(i int) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.when[i]
}

// mark is the position after which waitFor looks.
func (o *observer) mark() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.list)
}

// waitFor waits for an outcome after since that matches; it returns it and
// the position after it.
func (o *observer) waitFor(t testing.TB, since int, what string, match func(controller.Outcome) bool) (controller.Outcome, int) {
	t.Helper()
	var found controller.Outcome
	next := since
	eventually(t, what, func(context.Context) (bool, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for i := since; i < len(o.list); i++ {
			if match(o.list[i]) {
				found, next = o.list[i], i+1
				return true, nil
			}
		}
		return false, nil
	})
	return found, next
}

// count returns how many outcomes since match.
func (o *observer) count(since int, match func(controller.Outcome) bool) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for i := since; i < len(o.list); i++ {
		if match(o.list[i]) {
			n++
		}
	}
	return n
}

// running is a controller started in-process.
type running struct {
	reg      *prometheus.Registry
	obs      *observer
	logs     *kubetest.LockedBuffer
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

// testOptions are the controller options of these tests: this namespace
// only, a short coalescing window, no churn interval, no endpoints.
func (e *env) testOptions() controller.Options {
	o := controller.DefaultOptions()
	o.Namespaces = []string{e.ns}
	o.CoalesceWindow = testWindow
	o.MinRollInterval = 0
	o.RolloutsPerSecond, o.RolloutBurst = 100, 100
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	return o
}

// start runs a controller in-process until stop or the end of the test,
// logging at level debug; its logs are printed when the test fails.
func (e *env) start(opts controller.Options) *running {
	e.t.Helper()
	return e.startLogging(opts, controllercmd.LogLevelDebug)
}

// startLogging is start with the log level given.
func (e *env) startLogging(opts controller.Options, level string) *running {
	e.t.Helper()
	r, opts := e.prepare(opts, level)
	return e.startManager(r, opts)
}

// startSharing is start for a controller that follows prev (stopped): it
// reports its outcomes to prev's observer, so that marks taken before the
// restart still count.
func (e *env) startSharing(prev *running, opts controller.Options) *running {
	e.t.Helper()
	r, opts := e.prepare(opts, controllercmd.LogLevelDebug)
	r.obs = prev.obs
	opts.Observer = r.obs.add
	return e.startManager(r, opts)
}

// startManager launches a manager made from opts as r.
func (e *env) startManager(r *running, opts controller.Options) *running {
	e.t.Helper()
	mgr, _, err := controller.NewManager(opts)
	if err != nil {
		e.t.Fatalf("new manager: %v", err)
	}
	return e.launch(r, mgr.Start)
}

// startRun is start through controller.Run, which sets up the manager
// again when Argo Rollouts' CRD comes to be served.
func (e *env) startRun(opts controller.Options) *running {
	e.t.Helper()
	r, opts := e.prepare(opts, controllercmd.LogLevelDebug)
	return e.launch(r, func(ctx context.Context) error { return controller.Run(ctx, opts) })
}

// prepare returns a running controller's record, not yet started, and
// opts with its metrics registry, observer and logger.
func (e *env) prepare(opts controller.Options, level string) (*running, controller.Options) {
	r := &running{reg: prometheus.NewRegistry(), obs: &observer{}, logs: &kubetest.LockedBuffer{}, done: make(chan error, 1)}
	if opts.RESTConfig == nil {
		opts.RESTConfig = e.cfg
	}
	opts.Registry = r.reg
	opts.Observer = r.obs.add
	opts.Logger = controllercmd.NewLogger(r.logs, controllercmd.LogFormatText, level)
	return r, opts
}

// launch runs start in the background until stop or the end of the test.
func (e *env) launch(r *running, start func(context.Context) error) *running {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- start(ctx) }()
	e.t.Cleanup(func() {
		r.stop(e.t)
		if e.t.Failed() || os.Getenv("CONFIGHASH_TEST_LOGS") != "" {
			e.t.Logf("controller logs:\n%s", r.logs.String())
		}
	})
	return r
}

// watching waits until the controller's caches have synced and its
// workers run: objects created from then on come as events, not in the
// initial lists of its start-up.
func (r *running) watching(t testing.TB) {
	t.Helper()
	eventually(t, "the controller watching", func(context.Context) (bool, error) {
		return strings.Contains(r.logs.String(), "Starting workers"), nil
	})
}

// stop stops the controller and waits for it (idempotent).
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("controller stopped with: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("controller did not stop in 30s")
		}
	})
}

// metric sums the samples of a metric whose labels include labels.
func (r *running) metric(name string, labels map[string]string) float64 {
	families, err := r.reg.Gather()
	if err != nil {
		return -1
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// ---- rendering and applying ---------------------------------------------

var bins struct {
	once sync.Once
	dir  string
	err  error
}

// buildBinaries builds bin/confighash and bin/confighash-controller from
// this checkout into a temporary directory, once.
func buildBinaries(t testing.TB) string {
	t.Helper()
	bins.once.Do(func() {
		bins.dir, bins.err = os.MkdirTemp("", "confighash-bin-")
		if bins.err != nil {
			return
		}
		bins.err = kubetest.BuildCommands(testtools.RepoRoot(t), bins.dir, "confighash", "confighash-controller")
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.dir
}

// render runs bin/confighash in stream mode (the Helm post-renderer path)
// with args.
func render(t testing.TB, stream string, args ...string) string {
	t.Helper()
	res := testtools.Run(t, "", nil, []byte(stream), filepath.Join(buildBinaries(t), "confighash"), append([]string{"--quiet"}, args...)...)
	if res.ExitCode != 0 {
		t.Fatalf("confighash exited %d: %s", res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// apply server-side applies every document of a stream, in order, as
// fieldManager with force (the way Argo CD and Flux apply), then waits until
// kube-controller-manager has observed each Deployment, StatefulSet and
// DaemonSet it applied in the test's namespace. Without that wait a loaded
// kube-controller-manager may see an applied template only once a later
// change (the next render, the controller's roll) replaced it, and make one
// revision for both: a test counting rollouts would then count one too few.
func (e *env) apply(stream, fieldManager string) error {
	_, err := e.applyTimed(stream, fieldManager)
	return err
}

// applyTimed is apply, and returns how long the writes took (the wait for
// kube-controller-manager not counted).
func (e *env) applyTimed(stream, fieldManager string) (time.Duration, error) {
	var applied [][2]string // kind, name
	start := time.Now()
	err := kubetest.Apply(context.Background(), e.dyn, e.mapper, strings.NewReader(stream),
		kubetest.ApplyOptions{Namespace: e.ns, FieldManager: fieldManager, Applied: func(u *unstructured.Unstructured) {
			if u.GetAPIVersion() == "apps/v1" && u.GetNamespace() == e.ns {
				switch u.GetKind() {
				case "Deployment", "StatefulSet", "DaemonSet":
					applied = append(applied, [2]string{u.GetKind(), u.GetName()})
				}
			}
		}})
	took := time.Since(start)
	if err != nil {
		return took, err
	}
	for _, w := range applied {
		e.observed(w[0], w[1])
	}
	return took, nil
}

// docs returns the documents of a stream whose kind is one of kinds.
func docs(t testing.TB, stream string, kinds ...string) string {
	t.Helper()
	var out []string
	for _, d := range strings.Split("\n"+stream, "\n---") {
		for _, k := range kinds {
			if regexp.MustCompile(`(?m)^kind: ` + k + `$`).MatchString(d) {
				out = append(out, strings.TrimLeft(d, "\n"))
			}
		}
	}
	return strings.Join(out, "\n---\n")
}

// ---- config edits -------------------------------------------------------

// editConfigMap changes a ConfigMap through the API (like kubectl edit) and
// returns its new resourceVersion.
func (e *env) editConfigMap(name string, edit func(cm *corev1.ConfigMap)) string {
	e.t.Helper()
	return editObject(e.t, e.cs.CoreV1().ConfigMaps(e.ns), name, "kubectl-edit", edit)
}

// editSecret changes a Secret through the API (like External Secrets) and
// returns its new resourceVersion.
func (e *env) editSecret(name string, edit func(s *corev1.Secret)) string {
	e.t.Helper()
	return editObject(e.t, e.cs.CoreV1().Secrets(e.ns), name, "external-secrets", edit)
}

// editObject edits an object as fieldManager and returns its new
// resourceVersion; an edit that fails fails the test.
func editObject[T metav1.Object](t testing.TB, client kubetest.Editable[T], name, fieldManager string, edit func(T)) string {
	t.Helper()
	obj, err := kubetest.Edit(context.Background(), client, name, fieldManager, edit)
	if err != nil {
		t.Fatalf("edit as %s: %v", fieldManager, err)
	}
	return obj.GetResourceVersion()
}

func (e *env) createSecret(name string, data map[string]string) {
	e.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, StringData: data}
	if _, err := e.cs.CoreV1().Secrets(e.ns).Create(context.Background(), s, metav1.CreateOptions{FieldManager: "external-secrets"}); err != nil {
		e.t.Fatalf("create Secret %s: %v", name, err)
	}
}

// ---- counting rollouts --------------------------------------------------

// revisions waits until the workload's controller has observed its latest
// spec, then counts its revisions: ReplicaSets of a Deployment,
// ControllerRevisions of a StatefulSet or DaemonSet. One revision is the
// initial one; every rollout adds one.
func (e *env) revisions(kind, name string) int {
	e.t.Helper()
	uid := e.observed(kind, name)
	ctx := context.Background()
	if kind == "Deployment" {
		owned, err := kubetest.OwnedReplicaSets(ctx, e.cs, e.ns, uid)
		if err != nil {
			e.t.Fatal(err)
		}
		return len(owned)
	}
	owned, err := kubetest.OwnedControllerRevisions(ctx, e.cs, e.ns, uid)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(owned)
}

// observed waits until the workload's controller in kube-controller-manager
// has observed its latest spec (status.observedGeneration), and returns its
// UID.
func (e *env) observed(kind, name string) types.UID {
	e.t.Helper()
	var uid types.UID
	eventually(e.t, fmt.Sprintf("%s %s to be observed by its controller", kind, name), func(ctx context.Context) (bool, error) {
		var gen, observed int64
		switch kind {
		case "Deployment":
			d, err := e.cs.AppsV1().Deployments(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			uid, gen, observed = d.UID, d.Generation, d.Status.ObservedGeneration
		case "StatefulSet":
			s, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			uid, gen, observed = s.UID, s.Generation, s.Status.ObservedGeneration
		case "DaemonSet":
			d, err := e.cs.AppsV1().DaemonSets(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			uid, gen, observed = d.UID, d.Generation, d.Status.ObservedGeneration
		}
		return observed >= gen && gen > 0, nil
	})
	return uid
}

// describeRevisions describes the Deployment name and the ReplicaSets it
// owns, each with its template's annotations, for the log of a failed count
// of rollouts (called only once the count failed).
func (e *env) describeRevisions(name string) string {
	e.t.Helper()
	d := e.deployment(name)
	owned, err := kubetest.OwnedReplicaSets(context.Background(), e.cs, e.ns, d.UID)
	if err != nil {
		e.t.Fatal(err)
	}
	out := fmt.Sprintf("Deployment %s generation %d, observed %d, template annotations %v",
		name, d.Generation, d.Status.ObservedGeneration, d.Spec.Template.Annotations)
	for _, rs := range owned {
		out += fmt.Sprintf("; ReplicaSet %s created %s, revision %s, template annotations %v", rs.Name,
			rs.CreationTimestamp.Format(time.RFC3339), rs.Annotations["deployment.kubernetes.io/revision"], rs.Spec.Template.Annotations)
	}
	return out
}

// waitRevisions waits until the workload has n revisions (used where a
// rollout is expected and no in-process observer exists).
func (e *env) waitRevisions(kind, name string, n int) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("%d revisions of %s %s", n, kind, name), func(context.Context) (bool, error) {
		return e.revisions(kind, name) >= n, nil
	})
}

// events lists the events.k8s.io Events about a workload with a reason.
func (e *env) events(name, reason string) []eventsv1.Event {
	e.t.Helper()
	list, err := e.cs.EventsV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == name && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvent waits for an Event about a workload with reason and returns it.
func (e *env) waitEvent(name, reason string) eventsv1.Event {
	e.t.Helper()
	var found eventsv1.Event
	eventually(e.t, fmt.Sprintf("a %s Event on %s", reason, name), func(context.Context) (bool, error) {
		evs := e.events(name, reason)
		if len(evs) == 0 {
			return false, nil
		}
		found = evs[len(evs)-1]
		return true, nil
	})
	return found
}

func (e *env) deployment(name string) *appsv1.Deployment {
	e.t.Helper()
	d, err := e.cs.AppsV1().Deployments(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}
