package controller_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/controlplane"
)

// Faults under the running controller, each asserting no missed change, no
// duplicate rollout and a bounded number of ReplicaSets. The restarts run on
// a control plane of their own, so stopping its apiserver or etcd never
// disturbs the tests sharing the package's control plane.

// privateControlPlane starts a control plane for one test and stops it at
// the end of the test.
func privateControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	sharedControlPlane(t) // skips or fails exactly like every other test when binaries are absent
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	require.NoError(t, err, "start a private control plane")
	t.Cleanup(func() { assert.NoError(t, cp.Stop()) })
	return cp
}

// envOn is newEnv on a given control plane.
func envOn(t *testing.T, cp *controlplane.ControlPlane) *env {
	t.Helper()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 200, 400
	e := &env{t: t, cp: cp, cfg: cfg, cs: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
	e.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.cs.Discovery()))
	name := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	e.ns = strings.Trim(fmt.Sprintf("%s-%04x", name, rand.IntN(1<<16)), "-")
	_, err := e.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{})
	require.NoError(t, err, "create namespace %s", e.ns)
	return e
}

// setupOn is setup on a given env: the rendered app applied, a controller
// running and the Deployment in sync.
func setupOn(t *testing.T, e *env, tune ...func(*controller.Options)) *scenario {
	t.Helper()
	s := &scenario{env: e, kind: "Deployment"}
	e.createSecret("db-creds", map[string]string{"password": "pw-1", "user": "app"})
	s.rendered = render(t, e.stream(defaultApp("Deployment")))
	opts := e.testOptions()
	for _, f := range tune {
		f(&opts)
	}
	s.ctrl = e.start(opts)
	require.NoError(t, e.apply(s.rendered, "kubectl"))
	s.ctrl.obs.waitFor(t, 0, "Deployment in sync after the first apply", is("Deployment", "in_sync"))
	return s
}

// deploymentRevision is the Deployment controller's revision counter: one
// more for every rollout, never capped (revisionHistoryLimit prunes old
// ReplicaSets, not this number).
func (s *scenario) deploymentRevision() int {
	s.t.Helper()
	n, err := strconv.Atoi(s.deployment(workloadName).Annotations["deployment.kubernetes.io/revision"])
	require.NoError(s.t, err, "the Deployment's revision annotation")
	return n
}

// syncedAt waits for an in-sync reconcile that read the config ref at
// resourceVersion rv and returns it.
func (s *scenario) syncedAt(since int, ref, rv string) controller.Outcome {
	s.t.Helper()
	o, _ := s.ctrl.obs.waitFor(s.t, since, fmt.Sprintf("in sync having read %s at resourceVersion %s", ref, rv), func(o controller.Outcome) bool {
		return is("Deployment", "in_sync")(o) && o.ConfigVersions[ref] == rv
	})
	return o
}

// firstSeen is when the controller first reported a reconcile that read
// the config ref at resourceVersion rv.
func (s *scenario) firstSeen(since int, ref, rv string) time.Time {
	s.t.Helper()
	o := s.ctrl.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := since; i < len(o.list); i++ {
		if o.list[i].ConfigVersions[ref] == rv {
			return o.when[i]
		}
	}
	s.t.Fatalf("no reconcile read %s at resourceVersion %s", ref, rv)
	return time.Time{}
}

// assertFinal checks the pod template carries the controller's hash of the
// content the controller last read: the final state is reflected.
func (s *scenario) assertFinal(synced controller.Outcome) {
	s.t.Helper()
	tmpl := s.deployment(workloadName).Spec.Template.Annotations
	assert.Equal(s.t, synced.Input.LiveAll, tmpl["confighash.dev/controller-hash"], "the pod template's controller-hash is the hash of the last content")
}

// TestFaultRestarts restarts kube-apiserver, then etcd, under a running
// controller. A config edited just before the component goes down (its roll
// still in the coalescing window) rolls exactly once after recovery; a
// config edited the moment the component is back, while the controller's
// watches are still reconnecting, is not missed and rolls exactly once.
//
// Slow (about 2 minutes: a control plane of its own, four restarts, and the
// client-go watch back-off after each): it runs only with
// CONFIGHASH_SLOW_TESTS=1.
func TestFaultRestarts(t *testing.T) {
	if os.Getenv("CONFIGHASH_SLOW_TESTS") == "" {
		t.Skip("slow (about 2 minutes): set CONFIGHASH_SLOW_TESTS=1 to run it")
	}
	cp := privateControlPlane(t)
	for _, c := range []struct {
		component string
		stop      func() error
		start     func(context.Context) error
	}{
		{"kube-apiserver", cp.StopAPIServer, cp.StartAPIServer},
		{"etcd", cp.StopEtcd, cp.StartEtcd},
	} {
		t.Run(c.component, func(t *testing.T) {
			began := time.Now()
			e := envOn(t, cp)
			s := setupOn(t, e)
			restart := func() {
				t.Helper()
				stopped := time.Now()
				require.NoError(t, c.stop(), "stop %s", c.component)
				t.Logf("%s stopped in %s", c.component, time.Since(stopped).Round(time.Millisecond))
				// Down for longer than the coalescing window, so a pending
				// roll comes due while the component is away.
				down := time.Now()
				eventually(t, "the coalescing window to pass with "+c.component+" down", func(context.Context) (bool, error) {
					return time.Since(down) > 2*testWindow, nil
				})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				started := time.Now()
				require.NoError(t, c.start(ctx), "start %s", c.component)
				t.Logf("%s back in %s", c.component, time.Since(started).Round(time.Millisecond))
			}

			// An edit whose roll is pending when the component goes down.
			mark := s.ctrl.obs.mark()
			rv := s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
			s.ctrl.obs.waitFor(t, mark, "the controller to see the edit", func(o controller.Outcome) bool {
				return o.Request.Name == workloadName && o.ConfigVersions["ConfigMap/app-config"] == rv
			})
			restart()
			s.assertFinal(s.syncedAt(mark, "ConfigMap/app-config", rv))
			assert.Equal(t, 1, s.rollouts(), "rollouts after an edit pending across the restart")
			assert.Equal(t, 2, s.deploymentRevision(), "Deployment revision")

			// An edit the moment the component is back.
			restart()
			mark = s.ctrl.obs.mark()
			rv = s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
			s.assertFinal(s.syncedAt(mark, "Secret/db-creds", rv))
			assert.Equal(t, 2, s.rollouts(), "rollouts after an edit made right after the restart")
			assert.Equal(t, 3, s.deploymentRevision(), "Deployment revision")
			assert.Equal(t, 2, s.controllerRollouts(), "the controller rolled once per edit")
			t.Logf("%s: two restarts, two edits, two rollouts in %s", c.component, time.Since(began).Round(time.Millisecond))
		})
	}
}

// TestFaultSecretRewrittenInLoop rewrites one consumed Secret 1,000 times
// in a tight loop. The churn guard (--min-roll-interval) bounds the rollouts
// to one per interval plus the last state; the last content is what the pod
// template's controller-hash reflects.
func TestFaultSecretRewrittenInLoop(t *testing.T) {
	t.Parallel()
	const writes = 1000
	const window, interval = 300 * time.Millisecond, 2 * time.Second
	s := setup(t, "Deployment", func(o *controller.Options) {
		o.CoalesceWindow, o.MinRollInterval = window, interval
	})
	mark := s.ctrl.obs.mark()
	ctx := context.Background()
	sec, err := s.cs.CoreV1().Secrets(s.ns).Get(ctx, "db-creds", metav1.GetOptions{})
	require.NoError(t, err)
	start := time.Now()
	for i := range writes {
		sec.Data["password"] = []byte(fmt.Sprint("pw-loop-", i))
		sec, err = s.cs.CoreV1().Secrets(s.ns).Update(ctx, sec, metav1.UpdateOptions{FieldManager: "a-loop"})
		require.NoError(t, err, "write %d", i)
	}
	loop := time.Since(start)
	synced := s.syncedAt(mark, "Secret/db-creds", sec.ResourceVersion)
	s.assertFinal(synced)

	// revisions waits until the Deployment controller has observed the
	// last roll, so the revision read after it is current.
	replicaSets := s.revisions("Deployment", workloadName)
	rollouts := s.deploymentRevision() - 1
	// One roll per interval while the controller sees the loop's writes,
	// and one for the last state. The controller sees the last write a
	// little after the loop ends (1,000 events to process): the span is from
	// the first write to the first reconcile that read the last one.
	seen := s.firstSeen(mark, "Secret/db-creds", sec.ResourceVersion)
	span := seen.Sub(start)
	bound := int(math.Ceil(float64(span)/float64(interval))) + 1
	t.Logf("%d writes in %s (seen by the controller after %s) gave %d rollouts, %d ReplicaSets (bound %d rollouts; min roll interval %s)",
		writes, loop.Round(time.Millisecond), span.Round(time.Millisecond), rollouts, replicaSets, bound, interval)
	assert.GreaterOrEqual(t, rollouts, 1, "the change was not missed")
	assert.LessOrEqual(t, rollouts, bound, "rollouts bounded by the churn guard")
	assert.LessOrEqual(t, replicaSets, bound+1, "ReplicaSets bounded")
	assert.Equal(t, rollouts, s.controllerRollouts(), "every rollout is the controller's")
}
