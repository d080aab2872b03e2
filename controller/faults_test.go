package controller_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/cptest"
)

// Faults under the running controller, each asserting no missed change, no
// duplicate rollout and a bounded number of ReplicaSets. The restarts run on
// a control plane of their own, so stopping its apiserver or etcd never
// disturbs the tests sharing the package's control plane.

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
	cp := cptest.Private(t)
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
