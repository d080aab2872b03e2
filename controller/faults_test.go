package controller_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
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
// ReplicaSets, not this number). An operator that writes the Deployment's
// annotations back removes it for a moment, until the Deployment
// controller writes it again (from its ReplicaSets, the same number): it
// is read once it is there.
func (s *scenario) deploymentRevision() int {
	s.t.Helper()
	var n int
	eventually(s.t, "the Deployment's revision annotation", func(ctx context.Context) (bool, error) {
		d, err := s.cs.AppsV1().Deployments(s.ns).Get(ctx, workloadName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v, ok := d.Annotations["deployment.kubernetes.io/revision"]
		if !ok {
			return false, nil
		}
		n, err = strconv.Atoi(v)
		return err == nil, err
	})
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

// TestFaultLeaderKilledDuringBurst runs two controller processes with
// leader election over 20 workloads, and edits each workload's ConfigMap
// once in a burst; the leader is killed (SIGKILL, no Lease release) halfway
// through it. Some edits are rolled by the old leader, some are pending in
// its coalescing window when it dies, the rest arrive while nobody leads.
// Asserted for every workload: its pod template reflects the last content
// (no missed change) and it rolled exactly once (no duplicate), so it has
// two ReplicaSets.
func TestFaultLeaderKilledDuringBurst(t *testing.T) {
	t.Parallel()
	const n = 20
	const pace = 100 * time.Millisecond
	e := newEnv(t)
	createWorkloads(t, e, n)
	a, b := e.leaderAndStandby(e.leaderElection("12s", "9s"), n)

	var killed time.Time
	for i := range n {
		if i == n/2 {
			// Kill the leader once it has rolled the first edits: the
			// ones after them are still in its coalescing window.
			e.waitMetric(a, "a to roll the first edits", atLeast(1), "confighash_rollouts_total", `dry_run="false"`)
			a.signal(syscall.SIGKILL)
			killed = time.Now()
		}
		e.editConfigMap(fmt.Sprintf("app-%d", i), func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = fmt.Sprint("burst-", i) })
		time.Sleep(pace) // the pacing of the burst is what is simulated
	}
	eventually(t, "b to take over", func(context.Context) (bool, error) { return b.leads(), nil })
	t.Logf("b took over %s after a was killed", time.Since(killed).Round(time.Millisecond))

	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		want := e.liveHash(name)
		eventually(t, name+" to reflect its last content", func(ctx context.Context) (bool, error) {
			d, err := e.cs.AppsV1().Deployments(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return d.Spec.Template.Annotations["confighash.dev/controller-hash"] == want, nil
		})
	}
	byB := int(b.metric("confighash_rollouts_total", `dry_run="false"`))
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		assert.Equal(t, 2, e.revisions("Deployment", name), "%s: ReplicaSets (one rollout)", name)
		// The Deployment controller writes the revision after it made the
		// new ReplicaSet.
		var revision string
		eventually(t, name+"'s revision written", func(context.Context) (bool, error) {
			revision = e.deployment(name).Annotations["deployment.kubernetes.io/revision"]
			return revision != "1", nil
		})
		rev, err := strconv.Atoi(revision)
		require.NoError(t, err)
		assert.Equal(t, 2, rev, "%s: Deployment revision (one rollout, none repeated)", name)
	}
	t.Logf("%d edits: %d rolled by the killed leader, %d by the new one", n, n-byB, byB)
	assert.Positive(t, n-byB, "the killed leader rolled the first edits")
	assert.Positive(t, byB, "the new leader rolled the edits it found pending")
}

// liveHash is the controller-hash a workload created by createWorkloads
// should carry for the live content of its ConfigMap.
func (e *env) liveHash(name string) string {
	e.t.Helper()
	cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(e.t, err)
	content, err := controller.ContentOf(cm)
	require.NoError(e.t, err)
	use := hashing.Use{Kind: hashing.KindConfigMap, Name: name, Keys: []string{"LOG_LEVEL"}}
	return hashing.Compute(e.ns, []hashing.Use{use}, func(hashing.Kind, string) (hashing.Content, bool) { return content, true }, hashing.Options{})
}
