package controller_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// Other controllers writing the workload the controller rolls, all the
// time, while a consumed config is edited once: an operator that owns the
// Deployment and writes its desired state every 200 ms (with Update, as
// controllerutil.CreateOrUpdate does, or with server-side apply), Argo CD's
// self-heal applying the render every second, an autoscaler moving
// spec.replicas every 300 ms, and a second confighash controller (a chart
// installed twice, another leader election id). Rollouts are counted by the
// Deployment's revision (a rollout back to an older ReplicaSet counts too)
// and by new ReplicaSets; the controller's writes by its metrics.

// writer is another client writing the workload every period until the
// test ends.
type writer struct {
	ticks  atomic.Int64
	mu     sync.Mutex
	errs   []error
	cancel context.CancelFunc
	done   chan struct{}
}

// startWriter runs write every period until the test ends. A conflict is
// the writer's to retry at its next tick, as a controller's requeue would;
// other errors fail the test at its end.
func startWriter(t *testing.T, period time.Duration, write func(ctx context.Context) error) *writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			if err := write(ctx); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
				w.mu.Lock()
				w.errs = append(w.errs, err)
				w.mu.Unlock()
			}
			w.ticks.Add(1)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		w.cancel()
		<-w.done
		w.mu.Lock()
		defer w.mu.Unlock()
		assert.Empty(t, w.errs, "the other writer's errors")
	})
	return w
}

// waitWrites waits until the writer has written n more times.
func (w *writer) waitWrites(t *testing.T, n int64) {
	t.Helper()
	target := w.ticks.Load() + n
	kubetest.EventuallyTrue(t, waitTimeout, 50*time.Millisecond, fmt.Sprintf("%d more writes by the other writer", n),
		func() bool { return w.ticks.Load() >= target })
}

// operand is the Deployment an operator builds for its operand: opted in
// by annotation (set through the operator's custom resource), reading the
// external Secret db-creds whole.
func operand(ns string) *kubetest.Workload {
	return &kubetest.Workload{Name: workloadName, Namespace: ns, Replicas: 1,
		Annotations: map[string]string{"confighash.dev/enabled": "true"}, EnvFrom: []string{"{secretRef: {name: db-creds}}"}}
}

// operatorUpdate is an operator's reconcile with Update: it reads the
// Deployment and writes its desired pod template (and, with annotations,
// its desired annotations) over what it read, creating it when absent.
func operatorUpdate(annotations bool) func(s *scenario) func(ctx context.Context) error {
	return func(s *scenario) func(ctx context.Context) error {
		desired := desiredOperand(s.t, s.ns)
		return func(ctx context.Context) error {
			deployments := s.cs.AppsV1().Deployments(s.ns)
			cur, err := deployments.Get(ctx, workloadName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = deployments.Create(ctx, desired.DeepCopy(), metav1.CreateOptions{FieldManager: "operator"})
				return err
			}
			if err != nil {
				return err
			}
			cur.Spec.Template = *desired.Spec.Template.DeepCopy()
			if annotations {
				cur.Annotations = desired.Annotations
			}
			_, err = deployments.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "operator"})
			return err
		}
	}
}

// operatorApply is a kubebuilder-style operator's reconcile: a server-side
// apply of its desired Deployment with force, as its own field manager.
func operatorApply(s *scenario) func(ctx context.Context) error {
	doc := operand(s.ns).YAML()
	return func(context.Context) error { return s.apply(doc, "operator") }
}

// argoSelfHeal applies the whole render with force, as Argo CD's self-heal
// does.
func argoSelfHeal(s *scenario) func(ctx context.Context) error {
	return func(context.Context) error { return s.apply(s.rendered, "argocd-controller") }
}

// autoscaler moves spec.replicas between 1 and 2 through the scale
// subresource, as the HorizontalPodAutoscaler does.
func autoscaler(s *scenario) func(ctx context.Context) error {
	replicas := int32(1)
	return func(ctx context.Context) error {
		replicas = 3 - replicas
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: workloadName, Namespace: s.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
		_, err := s.cs.AppsV1().Deployments(s.ns).UpdateScale(ctx, workloadName, scale, metav1.UpdateOptions{FieldManager: "hpa"})
		return err
	}
}

func TestOtherWritersOfTheWorkload(t *testing.T) {
	for _, c := range []struct {
		name string
		// write is the other writer, every period; with operator, it
		// creates the workload (operand), else the rendered app is set up.
		write    func(s *scenario) func(ctx context.Context) error
		period   time.Duration
		operator bool
		// second runs a second controller with the same settings.
		second bool
		// config is what is edited: the external Secret db-creds or the
		// rendered app's in-stream ConfigMap app-config.
		config string
		// interval is --min-roll-interval (0: none).
		interval time.Duration
		// rollouts is the Deployment's revisions added by the edit,
		// replicaSets the ReplicaSets; the controllers roll once in all.
		rollouts, replicaSets int
	}{
		// The operator writes its template back over the controller's
		// roll: a rollout back to the first ReplicaSet, whose new pods
		// read the edited Secret as well; then nothing.
		{name: "operator Update of the pod template", write: operatorUpdate(false), period: 200 * time.Millisecond, operator: true,
			config: "Secret", rollouts: 2, replicaSets: 2},
		// The same, removing the baseline too each time it writes: the
		// controller writes it again at most once per interval.
		{name: "operator Update of the pod template and annotations", write: operatorUpdate(true), period: 200 * time.Millisecond, operator: true,
			config: "Secret", interval: 3 * time.Second, rollouts: 2, replicaSets: 2},
		// Server-side apply leaves the fields of other managers alone.
		{name: "operator server-side apply", write: operatorApply, period: 200 * time.Millisecond, operator: true,
			config: "Secret", rollouts: 1, replicaSets: 2},
		{name: "Argo CD self-heal", write: argoSelfHeal, period: time.Second, config: "Secret", rollouts: 1, replicaSets: 2},
		{name: "autoscaler, external Secret", write: autoscaler, period: 300 * time.Millisecond, config: "Secret", rollouts: 1, replicaSets: 2},
		{name: "autoscaler, in-stream ConfigMap", write: autoscaler, period: 300 * time.Millisecond, config: "ConfigMap", rollouts: 1, replicaSets: 2},
		{name: "second controller", second: true, config: "Secret", rollouts: 1, replicaSets: 2},
		{name: "second controller, in-stream ConfigMap", second: true, config: "ConfigMap", rollouts: 1, replicaSets: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			opts := e.testOptions()
			opts.MinRollInterval = c.interval
			var s *scenario
			if c.operator {
				e.createSecret("db-creds", map[string]string{"password": "pw-1"})
				s = &scenario{env: e, kind: "Deployment", ctrl: e.start(opts)}
			} else {
				s = e.startRendered(opts, "pw-1")
			}
			ctrls := []*running{s.ctrl}
			if c.second {
				ctrls = append(ctrls, e.start(opts))
			}
			var w *writer
			if c.write != nil {
				w = startWriter(t, c.period, c.write(s))
			}
			for _, r := range ctrls {
				r.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
			}
			revision := s.revision()

			marks := make([]int, len(ctrls))
			for i, r := range ctrls {
				marks[i] = r.obs.mark()
			}
			start := time.Now()
			var ref, rv string
			if c.config == "Secret" {
				ref, rv = "Secret/db-creds", s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
			} else {
				ref, rv = "ConfigMap/app-config", s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
			}
			for i, r := range ctrls {
				r.obs.waitFor(t, marks[i], "in sync with the edit", inSyncHaving(workloadName, ref, rv))
			}
			if w != nil {
				w.waitWrites(t, int64(5*time.Second/c.period))
			}
			rollsAt := func() (rolls, writes float64) {
				for _, r := range ctrls {
					rolls += r.metric("confighash_rollouts_total", map[string]string{"dry_run": "false"})
					writes += r.metric("confighash_baseline_writes_total", nil)
				}
				return rolls, writes
			}
			rolls, baselines := rollsAt()
			assert.InDelta(t, 1.0, rolls, 0, "rolls by the controllers")
			assert.Equal(t, c.replicaSets, s.rollouts()+1, "ReplicaSets")
			assert.Equal(t, c.rollouts, s.revision()-revision, "rollouts")
			assert.Len(t, s.events(workloadName, controller.EventReasonConfigChanged), 1, "ConfigChanged Events")
			if w == nil {
				return
			}
			// No fight: as many more writes again change nothing.
			w.waitWrites(t, int64(5*time.Second/c.period))
			rollsAfter, baselinesAfter := rollsAt()
			assert.InDelta(t, rolls, rollsAfter, 0, "rolls after")
			assert.Equal(t, c.rollouts, s.revision()-revision, "rollouts after")
			if c.interval == 0 {
				assert.InDelta(t, baselines, baselinesAfter, 0, "baseline writes after")
				return
			}
			bound := time.Since(start)/c.interval + 2
			t.Logf("%v baseline writes in %s (bound %d)", baselinesAfter, time.Since(start).Round(time.Second), bound)
			assert.LessOrEqual(t, baselinesAfter, float64(bound), "baseline writes")
			ev := e.waitEvent(workloadName, controller.EventReasonBaselineRemoved)
			assert.Equal(t, corev1.EventTypeWarning, ev.Type)
			assert.Contains(t, ev.Note, "another writer of the workload removed the baseline the controller wrote on it")
			assert.Contains(t, ev.Note, "writing it again at most every 3s (--min-roll-interval)")
		})
	}
}

// desiredOperand is the operand as a typed Deployment.
func desiredOperand(t testing.TB, ns string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	require.NoError(t, yaml.Unmarshal([]byte(operand(ns).YAML()), &d))
	return &d
}

// revision is the Deployment's revision once its controller has observed
// its latest spec.
func (s *scenario) revision() int {
	s.t.Helper()
	s.rollouts()
	return s.deploymentRevision()
}

// Another writer removes the controller's baseline, and nothing else, while
// the roll of an external edit waits out the coalescing window (the edit
// landed while the baseline was there): the pods still run the content the
// removed baseline named, and the edit rolls once.
func TestBaselineRemovedDuringTheWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startRendered(e.testOptions(), "pw-1")
	mark := s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
	s.ctrl.obs.waitFor(t, mark, "the roll waiting out the window", is("Deployment", "waiting"))
	editObject(t, e.cs.AppsV1().Deployments(e.ns), workloadName, "operator", func(d *appsv1.Deployment) {
		require.Contains(t, d.Annotations, "confighash.dev/external-baseline")
		delete(d.Annotations, "confighash.dev/external-baseline")
	})
	rolled := s.expectRoll(mark)
	assert.Equal(t, controller.ReasonExternalChanged, rolled.Decision.Reason)
	assert.Equal(t, 1, s.rollouts(), "rollouts")
}

// Another writer removes the render baseline, and nothing else, once the
// controller recorded it (the pods of a render read in-stream content the
// render does not hold): they still read what it names, so nothing rolls,
// and the controller writes it again.
func TestRenderBaselineRemoved(t *testing.T) {
	t.Parallel()
	s, _, hash := recordedRender(t)
	recorded := s.workloadAnnotations().meta[renderBaselineKey]
	rollouts, rolls := s.rollouts(), s.controllerRollouts()
	mark := s.ctrl.obs.mark()
	editObject(t, s.cs.AppsV1().Deployments(s.ns), workloadName, "operator", func(d *appsv1.Deployment) {
		require.Contains(t, d.Annotations, renderBaselineKey)
		delete(d.Annotations, renderBaselineKey)
	})
	_, next := s.ctrl.obs.waitFor(t, mark, "a decision without the render baseline", func(o controller.Outcome) bool {
		return o.Request.Name == workloadName && o.Input.RawRenderHash == hash && o.Input.RenderBaseline == "" && o.Result != "waiting"
	})
	s.ctrl.obs.waitFor(t, next, "in sync", is("Deployment", "in_sync"))
	assert.Equal(t, rolls, s.controllerRollouts(), "rolls by the controller")
	assert.Equal(t, rollouts, s.rollouts(), "rollouts")
	assert.Equal(t, recorded, s.workloadAnnotations().meta[renderBaselineKey], "the render baseline, written again")
}
