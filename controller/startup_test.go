package controller_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

const (
	baselineKey       = "confighash.dev/external-baseline"
	controllerHashKey = "confighash.dev/controller-hash"
)

// createFleet creates n never-seen workloads: Deployments w-0 … w-(n-1)
// (zero replicas) opted in with confighash.dev/enabled and no render-time
// hash, so every config is external and each needs a first baseline; w-i
// consumes all of ConfigMap c-i through envFrom. It waits until the
// Deployment controller has observed every one (its first ReplicaSet is
// made).
func (e *env) createFleet(n int) { e.createFleetReading(n, false) }

// createFleetReading is createFleet; with secrets, w-i also requires key
// token of Secret s-i (fleetSecret) in its environment.
func (e *env) createFleetReading(n int, secrets bool) {
	e.t.Helper()
	ctx := context.Background()
	err := kubetest.Parallel(n, 16, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i)}, Data: map[string]string{"v": "1"}}
		if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		var env []corev1.EnvVar
		if secrets {
			s := fleetSecret(i)
			if _, err := e.cs.CoreV1().Secrets(e.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return err
			}
			env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: "token"},
			}}}
		}
		d := kubetest.Deployment(fmt.Sprintf("w-%d", i), 0, env, []corev1.EnvFromSource{kubetest.FromConfigMap(cm.Name)})
		d.Annotations = map[string]string{"confighash.dev/enabled": "true"}
		_, err := e.cs.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
	require.NoError(e.t, err)
	eventually(e.t, "the Deployment controller to observe the fleet", func(ctx context.Context) (bool, error) {
		list, err := e.cs.AppsV1().Deployments(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range list.Items {
			if d.Status.ObservedGeneration < d.Generation {
				return false, nil
			}
		}
		rs, err := e.cs.AppsV1().ReplicaSets(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == n && len(rs.Items) == n, nil
	})
}

// fleetSecret is Secret s-i of a fleet made with secrets.
func fleetSecret(i int) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}, StringData: map[string]string{"token": "t"}}
}

// fleetState lists the fleet's Deployments by name.
func (e *env) fleetState(ctx context.Context) (map[string]appsv1.Deployment, error) {
	list, err := e.cs.AppsV1().Deployments(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]appsv1.Deployment{}
	for _, d := range list.Items {
		out[d.Name] = d
	}
	return out, nil
}

// revisionsByDeployment counts the ReplicaSets of each Deployment of the
// namespace, by Deployment name (one is the initial revision).
func (e *env) revisionsByDeployment() map[string]int {
	e.t.Helper()
	list, err := e.cs.AppsV1().ReplicaSets(e.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(e.t, err)
	out := map[string]int{}
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.Kind == "Deployment" {
			out[ref.Name]++
		}
	}
	return out
}

// TestStartupEditsRoll: a controller starts on never-seen workloads, and
// its first baselines are slow to write (a client-side limit of 4 requests
// per second, as a large fleet would make them). Configs edited right
// after the caches synced, before their workloads' baselines are written,
// must roll those workloads exactly once: the baseline is the content as
// this process first observed it, not as read when it is written. The
// workloads whose configs were not edited never roll.
func TestStartupEditsRoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 40
	ctrl, edited, before := e.startOnSlowFleet(n, false)
	for name := range edited {
		cm := "c-" + name[len("w-"):]
		e.editConfigMap(cm, func(c *corev1.ConfigMap) { c.Data["v"] = "2" })
	}
	e.expectEditsRolledOnce(ctrl, n, edited, before, "during start-up")
}

// TestRequiredConfigDeletedDuringStartup: as TestStartupEditsRoll, but each
// workload also requires a key of a Secret, and the controller watches
// that Secret being deleted before the ConfigMap edit and created again
// after it (an operator replacing it). The pods that were running keep
// running without it, on the old ConfigMap: the edit must roll them once
// the Secret is back, not be taken for content no pod has run yet.
func TestRequiredConfigDeletedDuringStartup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 40
	ctrl, edited, before := e.startOnSlowFleet(n, true)
	ctx := context.Background()
	// Each step waits until the controller has seen the last one's events,
	// so the edit is handled while the Secret is missing from its cache.
	seen := func(what, kind, change string) {
		t.Helper()
		eventually(t, what, func(context.Context) (bool, error) {
			return ctrl.metric("confighash_config_events_total", map[string]string{"kind": kind, "change": change}) >= float64(len(edited)), nil
		})
	}
	for name := range edited {
		s := "s-" + name[len("w-"):]
		require.NoError(t, e.cs.CoreV1().Secrets(e.ns).Delete(ctx, s, metav1.DeleteOptions{}))
	}
	seen("the Secrets' deletions", "Secret", "deleted")
	for name := range edited {
		e.editConfigMap("c-"+name[len("w-"):], func(c *corev1.ConfigMap) { c.Data["v"] = "2" })
	}
	seen("the ConfigMaps' edits", "ConfigMap", "content")
	for name := range edited {
		var i int
		_, err := fmt.Sscanf(name, "w-%d", &i)
		require.NoError(t, err)
		_, err = e.cs.CoreV1().Secrets(e.ns).Create(ctx, fleetSecret(i), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	e.expectEditsRolledOnce(ctrl, n, edited, before, "while a required Secret was deleted")
}

// startOnSlowFleet creates a fleet of n (createFleetReading, with
// secrets), marks every fourth workload as one whose config the test
// edits, and starts a controller whose first baselines are slow to write
// (a client-side limit of 4 requests per second, as a large fleet would
// make them). It returns once the caches have synced (the first outcome
// comes from a worker), with the fleet as it was then.
func (e *env) startOnSlowFleet(n int, secrets bool) (*running, map[string]bool, map[string]appsv1.Deployment) {
	e.t.Helper()
	e.createFleetReading(n, secrets)
	edited := map[string]bool{}
	for i := 0; i < n; i += 4 {
		edited[fmt.Sprintf("w-%d", i)] = true
	}
	opts := e.testOptions()
	opts.KubeAPIQPS, opts.KubeAPIBurst = 4, 1 // about 10 s of baseline writes
	ctrl := e.start(opts)
	eventually(e.t, "the first reconcile", func(context.Context) (bool, error) { return ctrl.obs.mark() > 0, nil })
	before, err := e.fleetState(context.Background())
	require.NoError(e.t, err)
	return ctrl, edited, before
}

// expectEditsRolledOnce checks the outcome of configs edited before their
// workloads' first baselines (when, for the messages): most of the edited
// workloads had none when their configs were edited (before is the fleet
// then), every workload gets one, every edited workload rolls exactly once
// and the others never.
func (e *env) expectEditsRolledOnce(ctrl *running, n int, edited map[string]bool, before map[string]appsv1.Deployment, when string) {
	t := e.t
	t.Helper()
	baselined := 0
	for name := range edited {
		if before[name].Annotations[baselineKey] != "" {
			baselined++
		}
	}
	t.Logf("%d of the %d edited workloads had a baseline when their config was edited", baselined, len(edited))
	require.Less(t, baselined, len(edited)/2, "the edits must land while most baselines are still unwritten")

	eventuallyWithin(t, 3*time.Minute, 200*time.Millisecond, "a baseline on every workload", func(ctx context.Context) (bool, error) {
		state, err := e.fleetState(ctx)
		if err != nil {
			return false, err
		}
		for _, d := range state {
			if d.Annotations[baselineKey] == "" {
				return false, nil
			}
		}
		return len(state) == n, nil
	})
	// Every edited workload rolls; a failure names the ones that never did
	// (their edits were absorbed into the baseline).
	eventuallyWithin(t, 30*time.Second, 200*time.Millisecond, "every edited workload to roll", func(ctx context.Context) (bool, error) {
		state, err := e.fleetState(ctx)
		if err != nil {
			return false, err
		}
		var notRolled []string
		for name := range edited {
			if state[name].Spec.Template.Annotations[controllerHashKey] == "" {
				notRolled = append(notRolled, name)
			}
		}
		sort.Strings(notRolled)
		if len(notRolled) > 0 {
			return false, fmt.Errorf("edits made %s were absorbed into the baseline and never rolled: %v", when, notRolled)
		}
		return true, nil
	})

	// Settled: the Deployment controller has seen every roll, and a few
	// windows pass without another.
	time.Sleep(3 * testWindow)
	for name := range edited {
		e.revisions("Deployment", name)
	}
	revs := e.revisionsByDeployment()
	for i := range n {
		name := fmt.Sprintf("w-%d", i)
		want := 1
		if edited[name] {
			want = 2
		}
		assert.Equal(t, want, revs[name], "revisions of %s (edited: %v)", name, edited[name])
	}
	assert.InDelta(t, float64(len(edited)), ctrl.metric("confighash_rollouts_total", map[string]string{"dry_run": "false"}), 0)
}

// TestBaselineRippleReplicaSets measures what a first baseline costs
// beyond its own PATCH: kube-controller-manager copies a Deployment's
// annotations to its ReplicaSets, so each metadata-only baseline write
// makes it update the workload's ReplicaSet. It counts the ReplicaSet
// writes (resourceVersion changes seen by a watch) while the controller
// baselines a fleet of never-seen Deployments, and checks the figure
// docs/controller.md states: one ReplicaSet write per baseline here, where
// each Deployment has one ReplicaSet, no new ReplicaSet, no rollout.
func TestBaselineRippleReplicaSets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 20
	e.createFleet(n)
	ctx := context.Background()
	// The ReplicaSet controller may still be writing the first status of
	// the ReplicaSets just made: count from the point where each has been
	// observed (a fixed sleep here was a guess a loaded machine overruns,
	// and a late status write would be counted as the baseline's ripple).
	var list *appsv1.ReplicaSetList
	eventually(t, "the ReplicaSet controller to observe every ReplicaSet", func(ctx context.Context) (bool, error) {
		var err error
		if list, err = e.cs.AppsV1().ReplicaSets(e.ns).List(ctx, metav1.ListOptions{}); err != nil {
			return false, err
		}
		for _, rs := range list.Items {
			if rs.Status.ObservedGeneration < rs.Generation {
				return false, nil
			}
		}
		return len(list.Items) == n, nil
	})
	w, err := e.cs.AppsV1().ReplicaSets(e.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	var mu sync.Mutex
	writes, added := map[string]int{}, 0
	annotated := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			mu.Lock()
			switch ev.Type {
			case watch.Modified:
				writes[rs.Name]++
				annotated[rs.Name] = rs.Annotations[baselineKey] != ""
			case watch.Added:
				added++
			}
			mu.Unlock()
		}
	}()

	ctrl := e.start(e.testOptions())
	eventually(t, "a baseline on every workload", func(ctx context.Context) (bool, error) {
		return ctrl.metric("confighash_baseline_writes_total", nil) >= n, nil
	})
	// Wait for the ripple to land: every ReplicaSet carries the baseline.
	eventually(t, "the baseline copied onto every ReplicaSet", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		c := 0
		for _, ok := range annotated {
			if ok {
				c++
			}
		}
		return c == n, nil
	})
	time.Sleep(2 * time.Second) // anything further the baselines cause
	mu.Lock()
	total := 0
	for _, c := range writes {
		total += c
	}
	gotAdded := added
	mu.Unlock()
	t.Logf("%d baselines: %d ReplicaSet writes by kube-controller-manager (%.2f per baseline), %d ReplicaSets created",
		n, total, float64(total)/n, gotAdded)
	assert.Equal(t, 0, gotAdded, "a baseline makes no new ReplicaSet")
	assert.InDelta(t, 0.0, ctrl.metric("confighash_rollouts_total", map[string]string{"dry_run": "false"}), 0)
	assert.Equal(t, n, total, "one ReplicaSet write per baseline (docs/controller.md)")
}

// TestClientRateLimit runs the controller binary: by default it has no
// client-side rate limiter (client-go's would be 5 requests per second),
// so rest_client_rate_limiter_duration_seconds records nothing while it
// lists, watches and writes the first baselines of a fleet; with
// --kube-api-qps it has one and every request passes through it.
func TestClientRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 20
	e.createFleet(n)
	const waited = "rest_client_rate_limiter_duration_seconds_count"

	p := e.startProcess("default")
	e.waitMetric(p, "every baseline written", atLeast(n), "confighash_baseline_writes_total")
	assert.GreaterOrEqual(t, p.metric("rest_client_requests_total", `method="PATCH"`), float64(n))
	assert.InDelta(t, 0.0, p.metric(waited), 0, "no request waited on a client-side limiter")
	p.signal(syscall.SIGTERM)

	q := e.startProcess("limited", "--kube-api-qps", "50")
	e.waitMetric(q, "in sync", atLeast(n), "confighash_reconciles_total", `result="in_sync"`)
	assert.Greater(t, q.metric(waited), 0.0, "--kube-api-qps puts a limiter in front of the requests")
}
