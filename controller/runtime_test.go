package controller_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// What operators do to a running controller and its workloads that the
// scenarios do not: undo a rollout it made, revoke and restore its RBAC,
// delete a namespace under it, use workload kinds and update strategies
// that roll differently, add and remove the annotations it reads. Every
// Secret value here is a canary that its logs, Events and /metrics must
// never show.

// canary is the recognisable Secret value of these tests.
const canary = "CANARY-s3cr3t"

// assertNoCanary fails when text holds a canary value (canary, or canary
// followed by one more character, as the tests write new values) or its
// base64 in any of the alphabets and paddings a value may be printed in.
func assertNoCanary(t testing.TB, where, text string) {
	t.Helper()
	values := []string{canary}
	for _, c := range "0123456789" {
		values = append(values, canary+"-"+string(c))
	}
	for _, v := range values {
		forms := []string{v}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			forms = append(forms, enc.EncodeToString([]byte(v)))
		}
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("%s shows the Secret value %q as %q", where, v, f)
			}
		}
	}
	// The canary's prefix, however it is cut, never appears in plain.
	assert.NotContains(t, text, "s3cr3t", where)
}

// assertNoCanaryInEvents checks every Event of the namespace, both APIs.
func (e *env) assertNoCanaryInEvents() {
	e.t.Helper()
	ctx := context.Background()
	ev, err := e.cs.EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	core, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	raw, err := json.Marshal([]any{ev, core})
	require.NoError(e.t, err)
	assertNoCanary(e.t, "the Events", string(raw))
}

// ---- kubectl rollout undo ----------------------------------------------

// rolloutUndo does what kubectl rollout undo does to a Deployment
// (k8s.io/kubectl/pkg/polymorphichelpers DeploymentRollbacker): the pod
// template of the ReplicaSet of the previous revision, without its
// pod-template-hash label, and that ReplicaSet's annotations in place of
// the Deployment's (but for the deployment.kubernetes.io ones and
// kubectl's last-applied copy), written in one JSON patch.
func (e *env) rolloutUndo(name string) {
	e.t.Helper()
	ctx := context.Background()
	d := e.deployment(name)
	owned, err := kubetest.OwnedReplicaSets(ctx, e.cs, e.ns, d.UID)
	require.NoError(e.t, err)
	// Revisions are numbers, compared as numbers as kubectl does ("10"
	// comes after "9").
	revision := func(ann map[string]string) int {
		n, err := strconv.Atoi(ann["deployment.kubernetes.io/revision"])
		require.NoError(e.t, err, "a revision annotation")
		return n
	}
	current := revision(d.Annotations)
	var previous *appsv1.ReplicaSet
	for i := range owned {
		rs := &owned[i]
		rev := revision(rs.Annotations)
		if rev != current && (previous == nil || rev > revision(previous.Annotations)) {
			previous = rs
		}
	}
	require.NotNil(e.t, previous, "a previous revision of Deployment %s", name)
	tmpl := previous.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	skip := map[string]bool{
		corev1.LastAppliedConfigAnnotation: true, "deployment.kubernetes.io/revision": true,
		"deployment.kubernetes.io/revision-history": true, "deployment.kubernetes.io/desired-replicas": true,
		"deployment.kubernetes.io/max-replicas": true, "deprecated.deployment.rollback.to": true,
	}
	ann := map[string]string{}
	for k, v := range d.Annotations {
		if skip[k] {
			ann[k] = v
		}
	}
	for k, v := range previous.Annotations {
		if !skip[k] {
			ann[k] = v
		}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": tmpl},
		{"op": "replace", "path": "/metadata/annotations", "value": ann},
	})
	require.NoError(e.t, err)
	_, err = e.cs.AppsV1().Deployments(e.ns).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-rollout"})
	require.NoError(e.t, err, "rollout undo of Deployment %s", name)
}

// rolloutUndoStatefulSet does what kubectl rollout undo does to a
// StatefulSet (StatefulSetRollbacker): the ControllerRevision before the
// latest holds a strategic merge patch of the pod template, sent as it is.
// The StatefulSet's own annotations are left alone.
func (e *env) rolloutUndoStatefulSet(name string) {
	e.t.Helper()
	ctx := context.Background()
	st, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(e.t, err)
	history, err := kubetest.OwnedControllerRevisions(ctx, e.cs, e.ns, st.UID)
	require.NoError(e.t, err)
	require.GreaterOrEqual(e.t, len(history), 2, "a previous revision of StatefulSet %s", name)
	sort.Slice(history, func(i, j int) bool { return history[i].Revision < history[j].Revision })
	_, err = e.cs.AppsV1().StatefulSets(e.ns).Patch(ctx, name, types.StrategicMergePatchType, history[len(history)-2].Data.Raw,
		metav1.PatchOptions{FieldManager: "kubectl-rollout"})
	require.NoError(e.t, err, "rollout undo of StatefulSet %s", name)
}

// kubectl rollout undo of the rollout the controller made for an edit. The
// undo cannot bring back the old config: the pods it starts read the
// config as it is now. It puts back the render's pod template, without the
// controller's record. After an edit of an in-stream ConfigMap, that
// template's render-time hash claims the content from before the edit, so
// the controller rolls forward once, to the very template of its own
// rollout (the workload's controller reuses that revision), and then leaves
// the workload alone: no loop, no fight. After an edit of an external
// Secret it depends on what the undo puts back: kubectl copies the old
// ReplicaSet's annotations onto a Deployment, the external baseline from
// before the edit with them, so the Deployment rolls forward too; a
// StatefulSet keeps its annotations, its baseline is the Secret's live
// content, and the undo stands. Either way the pods run the live config. To
// go back, revert the config.
func TestRolloutUndo(t *testing.T) {
	for _, c := range []struct {
		kind, config string
		forward      int
	}{
		{"Deployment", "ConfigMap", 1},
		{"Deployment", "Secret", 1},
		{"StatefulSet", "ConfigMap", 1},
		{"StatefulSet", "Secret", 0},
	} {
		t.Run(c.kind+"/"+c.config, func(t *testing.T) {
			t.Parallel()
			s := setup(t, c.kind)
			mark := s.ctrl.obs.mark()
			if c.config == "ConfigMap" {
				s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
			} else {
				s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-2") })
			}
			s.expectRoll(mark)
			require.Equal(t, 1, s.rollouts())
			rolledTemplate := s.workloadAnnotations().template

			mark = s.ctrl.obs.mark()
			if c.kind == "Deployment" {
				s.rolloutUndo(workloadName)
			} else {
				s.rolloutUndoStatefulSet(workloadName)
			}
			require.NotContains(t, s.workloadAnnotations().template, "confighash.dev/controller-hash", "the undo restored the render's template")
			if c.forward == 0 {
				s.ctrl.obs.waitFor(t, mark, "in sync after the undo", func(o controller.Outcome) bool {
					return is(c.kind, "in_sync")(o) && o.Input.ControllerHash == ""
				})
			} else {
				rolled := s.expectRoll(mark)
				t.Logf("after the undo: %s, changed %v", rolled.Decision.Reason, rolled.Decision.Changed)
				assert.Equal(t, rolledTemplate, s.workloadAnnotations().template, "the template of the controller's first roll")
			}
			assert.Equal(t, 1+c.forward, s.controllerRollouts(), "rolls of the controller's own")
			assert.Equal(t, 2, s.revisions(c.kind, workloadName), "no revision beyond the render's and the controller's roll")
			if c.kind == "Deployment" {
				// 4 (the edit, the undo, the roll forward) when the
				// Deployment controller saw the undo before the roll forward
				// came, as it does well within a coalescing window.
				t.Logf("Deployment revision %d", s.deploymentRevision())
			}
			evs := s.events(workloadName, controller.EventReasonConfigChanged)
			assert.Len(t, evs, 1+c.forward, "a ConfigChanged Event per roll")

			// Settled: the next reconcile (touch the workload's
			// annotations) is in sync and rolls nothing.
			mark = s.ctrl.obs.mark()
			s.annotate(c.kind, `{"metadata":{"annotations":{"team":"after-undo"}}}`)
			s.ctrl.obs.waitFor(t, mark, "in sync after the roll forward", is(c.kind, "in_sync"))
			assert.Equal(t, 1+c.forward, s.controllerRollouts(), "no further roll")
			s.assertNoCanaryInEvents()
			assertNoCanary(t, "the controller's logs", s.ctrl.logs.String())
		})
	}
}

// annotate merge-patches the scenario's workload as a user with kubectl.
func (s *scenario) annotate(kind, patch string) {
	s.t.Helper()
	ctx, opts := context.Background(), metav1.PatchOptions{FieldManager: "kubectl-annotate"}
	var err error
	switch kind {
	case "StatefulSet":
		_, err = s.cs.AppsV1().StatefulSets(s.ns).Patch(ctx, workloadName, types.MergePatchType, []byte(patch), opts)
	default:
		_, err = s.cs.AppsV1().Deployments(s.ns).Patch(ctx, workloadName, types.MergePatchType, []byte(patch), opts)
	}
	require.NoError(s.t, err)
}

// ---- RBAC revoked at runtime -------------------------------------------

// waitAllowed waits until the API server's authorizer answers allowed for
// user doing verb on resource in the env's namespace (a Role change
// reaches it a moment after it is written).
func (e *env) waitAllowed(user, verb, group, resource string, allowed bool) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("%s %s %s.%s allowed=%v", user, verb, resource, group, allowed), func(ctx context.Context) (bool, error) {
		r, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: e.ns, Verb: verb, Group: group, Resource: resource},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Allowed == allowed, nil
	})
}

// stillRunning fails the test when the controller has stopped.
func (r *running) stillRunning(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		t.Fatalf("the controller stopped: %v", err)
	default:
	}
}

// The controller's Role loses patch on Deployments while it runs: an edit
// cannot be rolled; the controller says why (an error naming the forbidden
// patch, retried with back-off), does not stop, and rolls once when the
// Role is restored.
func TestRBACPatchRevokedAtRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := "rt-" + e.ns
	opts := e.testOptions()
	opts.RESTConfig = e.limitedTo(user)
	s := e.startRendered(opts, canary)

	e.limitedToRole(user, func(role string) string {
		return strings.ReplaceAll(role, "verbs: [list, watch, patch]", "verbs: [list, watch]")
	})
	e.waitAllowed(user, "patch", "apps", "deployments", false)
	mark := s.ctrl.obs.mark()
	e.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-2") })
	failed, next := s.ctrl.obs.waitFor(t, mark, "a forbidden roll", is("Deployment", "error"))
	require.Error(t, failed.Err)
	assert.True(t, apierrors.IsForbidden(failed.Err), "the error is the API server's Forbidden: %v", failed.Err)
	assert.Contains(t, failed.Err.Error(), "patching Deployment "+e.ns+"/web")
	s.ctrl.obs.waitFor(t, next, "the roll retried", is("Deployment", "error"))
	s.ctrl.stillRunning(t)
	assert.Contains(t, s.ctrl.logs.String(), `cannot patch resource \"deployments\"`)
	ev := e.waitEvent(workloadName, controller.EventReasonPatchForbidden)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Note, `cannot patch resource "deployments"`)
	assert.Contains(t, ev.Note, "not rolling until the controller may patch it")
	assert.Equal(t, 0, s.rollouts())

	e.limitedTo(user)
	e.waitAllowed(user, "patch", "apps", "deployments", true)
	s.expectRoll(mark)
	assert.Equal(t, 1, s.rollouts(), "rolled once when the Role was restored")
	assert.Len(t, e.events(workloadName, controller.EventReasonPatchForbidden), 1, "one Event, its repeats counted in its series")
	assert.Equal(t, 1, s.controllerRollouts())
	t.Logf("%d forbidden attempts", s.ctrl.obs.count(mark, is("Deployment", "error")))
	e.assertNoCanaryInEvents()
	assertNoCanary(t, "the controller's logs", s.ctrl.logs.String())
}

// The controller's Role loses list and watch on Secrets while it runs. The
// API server checks a watch when it starts, so the loss shows when the
// Secrets watch next ends (cut here, as its timeout would): the controller
// cannot list Secrets again, logs why, and does not stop. A Secret edited
// meanwhile is rolled once the Role is restored and the list succeeds.
func TestRBACSecretsRevokedAtRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := "rt-" + e.ns
	net := newPartition()
	cfg := rest.CopyConfig(e.limitedTo(user))
	cfg.WrapTransport = net.wrap
	opts := e.testOptions()
	opts.RESTConfig = cfg
	s := e.startRendered(opts, canary)

	e.limitedToRole(user, func(role string) string {
		return strings.ReplaceAll(role, "resources: [configmaps, secrets]", "resources: [configmaps]")
	})
	e.waitAllowed(user, "list", "", "secrets", false)
	mark := s.ctrl.obs.mark()
	net.cutOff()
	net.heal()
	// The edit waits for the failed list: until then the Secrets watch cut
	// off above may still be delivering, and would see it.
	eventually(t, "the controller to log that it may not list Secrets", func(context.Context) (bool, error) {
		return strings.Contains(s.ctrl.logs.String(), `cannot list resource \"secrets\"`), nil
	})
	rv := e.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-3") })
	s.ctrl.stillRunning(t)
	assert.Equal(t, 0, s.rollouts())

	e.limitedTo(user)
	e.waitAllowed(user, "list", "", "secrets", true)
	s.inSyncAt(mark, "Secret/db-creds", rv)
	assert.Equal(t, 1, s.rollouts(), "the edit made while Secrets could not be read rolled once")
	assert.Equal(t, 1, s.controllerRollouts())
	e.assertNoCanaryInEvents()
	assertNoCanary(t, "the controller's logs", s.ctrl.logs.String())
}

// ---- a namespace deleted under the controller --------------------------

// A workload held back by a missing config, then deleted: it no longer
// waits for anything, and confighash_workloads_missing_config says so at
// once, not at the next reconcile of some other workload. The same when its
// whole namespace is deleted while rolls are pending in the coalescing
// window: nothing is rolled, nothing fails, the gauge returns to zero and
// the controller keeps running.
func TestDeletedWhileQueued(t *testing.T) {
	for _, c := range []struct {
		name   string
		delete func(e *env)
	}{
		{"workload", func(e *env) {
			require.NoError(e.t, e.cs.AppsV1().Deployments(e.ns).Delete(context.Background(), "blocked", metav1.DeleteOptions{}))
		}},
		{"namespace", func(e *env) {
			require.NoError(e.t, e.cs.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{}))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.createSecret("creds", map[string]string{"password": canary})
			e.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"A": "1"}})
			opts := e.testOptions()
			opts.CoalesceWindow = 10 * testWindow // the rolls are still pending when the namespace goes
			r := e.start(opts)
			for i := range 3 {
				w := optedIn(e, fmt.Sprint("web-", i))
				w.EnvFrom = []string{"{configMapRef: {name: app}}", "{secretRef: {name: creds}}"}
				require.NoError(t, e.apply(w.YAML(), "kubectl"))
			}
			blocked := optedIn(e, "blocked")
			blocked.EnvFrom = []string{"{configMapRef: {name: absent}}"}
			require.NoError(t, e.apply(blocked.YAML(), "kubectl"))
			for i := range 3 {
				r.obs.waitFor(t, 0, "in sync", deploymentOutcome(fmt.Sprint("web-", i), "in_sync"))
			}
			r.obs.waitFor(t, 0, "blocked", deploymentOutcome("blocked", "missing_config"))
			eventually(t, "the missing-config gauge at 1", func(context.Context) (bool, error) {
				return r.metric("confighash_workloads_missing_config", nil) == 1, nil
			})

			mark := r.obs.mark()
			if c.name == "namespace" {
				// Rolls pending in the coalescing window. (Without them
				// nothing else is reconciled after the deletion: the gauge
				// must not wait for an unrelated reconcile to be right.)
				e.editSecret("creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-4") })
				for i := range 3 {
					r.obs.waitFor(t, mark, "a roll pending", deploymentOutcome(fmt.Sprint("web-", i), "waiting"))
				}
			}
			c.delete(e)
			eventually(t, "the missing-config gauge back to 0", func(context.Context) (bool, error) {
				return r.metric("confighash_workloads_missing_config", nil) == 0, nil
			})
			if c.name == "namespace" {
				eventually(t, "the namespace to be gone", func(ctx context.Context) (bool, error) {
					_, err := e.cs.CoreV1().Namespaces().Get(ctx, e.ns, metav1.GetOptions{})
					return apierrors.IsNotFound(err), nil
				})
				for i := range 3 {
					r.obs.waitFor(t, mark, "the pending roll dropped", func(o controller.Outcome) bool {
						return deploymentOutcome(fmt.Sprint("web-", i), "gone")(o) || deploymentOutcome(fmt.Sprint("web-", i), "missing_config")(o)
					})
				}
				assert.Zero(t, r.metric("confighash_rollouts_total", nil), "nothing rolled in a namespace being deleted")
			}
			assert.Zero(t, r.obs.count(0, func(o controller.Outcome) bool { return o.Result == "error" }), "no reconcile failed")
			r.stillRunning(t)
			assertNoCanary(t, "the controller's logs", r.logs.String())
		})
	}
}

// ---- kinds and update strategies ---------------------------------------

// A StatefulSet or DaemonSet with updateStrategy OnDelete: the controller
// writes the pod template as for any other (a new ControllerRevision), and
// the workload's controller replaces no pod: pods read the new config when
// they are deleted, by hand or otherwise, as docs/controller.md says.
func TestOnDeleteStrategy(t *testing.T) {
	for _, kind := range []string{"StatefulSet", "DaemonSet"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := &scenario{env: e, kind: kind}
			e.createSecret("db-creds", map[string]string{"password": canary})
			stream := e.stream(defaultApp(kind))
			stream = strings.Replace(stream, "  selector:\n    matchLabels: {app: web}\n", "  updateStrategy: {type: OnDelete}\n  selector:\n    matchLabels: {app: web}\n", 1)
			require.Contains(t, stream, "OnDelete")
			s.rendered = render(t, stream)
			s.ctrl = e.start(e.testOptions())
			require.NoError(t, e.apply(s.rendered, "kubectl"))
			s.ctrl.obs.waitFor(t, 0, "in sync", is(kind, "in_sync"))
			var podBefore string
			if kind == "StatefulSet" {
				eventually(t, "the StatefulSet's pod", func(ctx context.Context) (bool, error) {
					p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, "web-0", metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return false, nil
					}
					podBefore = string(p.UID)
					return err == nil, err
				})
			}

			mark := s.ctrl.obs.mark()
			s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-5") })
			s.expectRoll(mark)
			assert.Equal(t, 1, s.rollouts(), "a new ControllerRevision")
			if kind == "StatefulSet" {
				eventually(t, "the StatefulSet's update revision", func(ctx context.Context) (bool, error) {
					st, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, workloadName, metav1.GetOptions{})
					return err == nil && st.Status.UpdateRevision != st.Status.CurrentRevision, err
				})
				p, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), "web-0", metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, podBefore, string(p.UID), "OnDelete: the pod is not replaced")
			}
			assertNoCanary(t, "the controller's logs", s.ctrl.logs.String())
		})
	}
}

// Jobs are not managed, even with a render-time hash or the opt-in: an edit
// of what a Job consumes never patches it (its pod template cannot be
// changed) and it is not even reconciled.
func TestJobNotManaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.start(e.testOptions())
	manifest := kubetest.Workload{Kind: "Job", Name: "migrate", Namespace: e.ns, Annotations: map[string]string{"confighash.dev/enabled": "true"},
		EnvFrom: []string{"{configMapRef: {name: job-config}}"}}
	require.NoError(t, e.apply(render(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: job-config, namespace: %s}\ndata: {MODE: full}\n---\n", e.ns)+manifest.YAML()), "kubectl"))
	job, err := e.cs.BatchV1().Jobs(e.ns).Get(context.Background(), "migrate", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, job.Annotations, "confighash.dev/hash", "the render hashed the Job (on the Job: its pod template cannot change)")
	// A Deployment in the same namespace proves the edit was seen.
	w := optedIn(e, "web")
	w.EnvFrom = []string{"{configMapRef: {name: job-config}}"}
	e.applyInSync(r, w)
	mark := r.obs.mark()
	e.editConfigMap("job-config", func(cm *corev1.ConfigMap) { cm.Data["MODE"] = "incremental" })
	rolled, _ := r.obs.waitFor(t, mark, "the Deployment rolled", deploymentOutcome("web", "rolled"))
	require.NotEmpty(t, rolled.Decision.Record.ControllerHash)
	job, err = e.cs.BatchV1().Jobs(e.ns).Get(context.Background(), "migrate", metav1.GetOptions{})
	require.NoError(t, err)
	for _, mf := range job.ManagedFields {
		assert.NotEqual(t, "confighash-controller", mf.Manager, "the Job was not written")
	}
	assert.Empty(t, e.events("migrate", controller.EventReasonConfigChanged))
	assert.Zero(t, r.obs.count(0, func(o controller.Outcome) bool { return o.Request.Name == "migrate" }), "a Job is not reconciled")
}

// ---- leader election ------------------------------------------------------

// Two controller processes with leader election; the leader is stopped
// cleanly (SIGTERM, as at a rolling update of the controller). It releases
// its Lease, so the standby takes over long before the lease (five
// minutes here) could have expired, and it rolls the next edit once.
func TestLeaderStoppedCleanly(t *testing.T) {
	t.Parallel()
	s := processScenario(t)
	a, b := s.leaderAndStandby(s.leaderElection("5m", "4m"), 1)

	a.signal(syscall.SIGTERM)
	eventually(t, "b to take over from a stopped leader", func(context.Context) (bool, error) { return b.leads(), nil })
	lease, err := s.cs.CoordinationV1().Leases(s.ns).Get(context.Background(), "confighash", metav1.GetOptions{})
	require.NoError(t, err)
	// Taken over within the 90 s a poll waits, on a Lease of 300 s: released.
	require.Equal(t, int32(300), *lease.Spec.LeaseDurationSeconds)
	s.waitMetric(b, "in sync", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "after-handover" })
	s.waitMetric(b, "b rolls", atLeast(1), "confighash_rollouts_total", `dry_run="false"`)
	s.waitMetric(b, "in sync after it", atLeast(2), "confighash_reconciles_total", `result="in_sync"`)
	assert.Equal(t, 1, s.rollouts(), "one rollout for the edit")
	assert.InDelta(t, 1.0, b.metric("confighash_rollouts_total", `dry_run="false"`), 0)
}

// ---- annotations added and removed by users ------------------------------

// patchDeployment merge-patches a Deployment as a user with kubectl.
func (e *env) patchDeployment(name, patch string) {
	e.t.Helper()
	_, err := e.cs.AppsV1().Deployments(e.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-annotate"})
	require.NoError(e.t, err, "patch Deployment %s with %s", name, patch)
}

// A user removes the render-time hash from a rendered Deployment's pod
// template (kubectl edit): that template change restarts the pods by
// itself, on the live content; the controller, which still manages the
// workload through its external annotation, records baselines for what
// the hash covered and does not roll it again; a later edit still rolls
// it once.
func TestRenderHashRemoved(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	mark := s.ctrl.obs.mark()
	s.patchDeployment(workloadName, `{"spec":{"template":{"metadata":{"annotations":{"confighash.dev/hash":null}}}}}`)
	o, _ := s.ctrl.obs.waitFor(t, mark, "a baseline of what the hash covered", func(o controller.Outcome) bool {
		return is("Deployment", "in_sync")(o) && o.Input.RawRenderHash == ""
	})
	assert.Len(t, o.Input.LiveExternal, 3, "every consumed config is external now")
	assert.Equal(t, 1, s.rollouts(), "the user's template change only")
	assert.Equal(t, 0, s.controllerRollouts())
	assert.Contains(t, s.deployment(workloadName).Annotations["confighash.dev/external-baseline"], "ConfigMap/app-config=")

	mark = s.ctrl.obs.mark()
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
	s.expectRoll(mark)
	assert.Equal(t, 2, s.rollouts())
	assert.Equal(t, 1, s.controllerRollouts())
}

// The opt-in taken away and given back. Without it the workload is left
// alone whatever changes; given back, the controller compares with the
// baseline it recorded before: the pods still run that content, so a
// config edited meanwhile rolls once, and one left alone rolls nothing.
// Given to a rendered workload that was opted out and whose hash is right,
// it rolls nothing either.
func TestOptInToggled(t *testing.T) {
	// optedOut: Deployment web, opted in and reading Secret creds, in sync,
	// then its opt-in removed: unmanaged; next is the position after that.
	optedOut := func(t *testing.T) (e *env, r *running, next int) {
		t.Helper()
		e = newEnv(t)
		e.createSecret("creds", map[string]string{"password": canary})
		w := optedIn(e, "web")
		w.EnvFrom = []string{"{secretRef: {name: creds}}"}
		r = e.startInSync(w)
		mark := r.obs.mark()
		e.patchDeployment("web", `{"metadata":{"annotations":{"confighash.dev/enabled":null}}}`)
		_, next = r.obs.waitFor(t, mark, "unmanaged", deploymentOutcome("web", "unmanaged"))
		return e, r, next
	}
	t.Run("removed-edited-restored", func(t *testing.T) {
		t.Parallel()
		e, r, next := optedOut(t)
		rv := e.editSecret("creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-6") })
		// A Deployment still opted in reads the same Secret: once it is in
		// sync with the edit, the edit has been seen.
		other := optedIn(e, "other")
		other.EnvFrom = []string{"{secretRef: {name: creds}}"}
		require.NoError(t, e.apply(other.YAML(), "kubectl"))
		r.obs.waitFor(t, next, "the other Deployment in sync with the edit", inSyncHaving("other", "Secret/creds", rv))
		assert.Equal(t, 1, e.revisions("Deployment", "web"), "not rolled without the opt-in")
		assert.Zero(t, r.obs.count(next, func(o controller.Outcome) bool { return o.Request.Name == "web" && o.Result != "unmanaged" }))

		mark := r.obs.mark()
		e.patchDeployment("web", `{"metadata":{"annotations":{"confighash.dev/enabled":"true"}}}`)
		_, next = r.obs.waitFor(t, mark, "rolled when opted in again", deploymentOutcome("web", "rolled"))
		r.obs.waitFor(t, next, "in sync", deploymentOutcome("web", "in_sync"))
		assert.Equal(t, 2, e.revisions("Deployment", "web"), "the edit made while opted out, once")
		e.assertNoCanaryInEvents()
		assertNoCanary(t, "the controller's logs", r.logs.String())
	})
	t.Run("removed-restored", func(t *testing.T) {
		t.Parallel()
		e, r, next := optedOut(t)
		e.patchDeployment("web", `{"metadata":{"annotations":{"confighash.dev/enabled":"true"}}}`)
		r.obs.waitFor(t, next, "in sync when opted in again", deploymentOutcome("web", "in_sync"))
		assert.Equal(t, 1, e.revisions("Deployment", "web"), "nothing changed meanwhile: no roll")
		assert.Zero(t, r.obs.count(0, deploymentOutcome("web", "rolled")))
	})
	t.Run("never-opted-in-then-annotated", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.createSecret("creds", map[string]string{"password": canary})
		// other, opted in, reads the same Secret: once it is in sync with
		// an edit, the controller has seen the edit.
		other := optedIn(e, "other")
		other.EnvFrom = []string{"{secretRef: {name: creds}}"}
		r := e.startInSync(other)
		plain := kubetest.Workload{Name: "web", Namespace: e.ns, Replicas: 1, EnvFrom: other.EnvFrom}
		require.NoError(t, e.apply(plain.YAML(), "kubectl"))
		rv := e.editSecret("creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-7") })
		_, next := r.obs.waitFor(t, 0, "other in sync with the edit", inSyncHaving("other", "Secret/creds", rv))
		assert.Zero(t, r.obs.count(0, func(o controller.Outcome) bool { return o.Request.Name == "web" && o.Result != "unmanaged" }),
			"a Deployment never opted in is not reconciled")

		// Opted in after the edit: its pods' content is unknown, the live
		// one becomes its baseline, nothing rolls.
		e.patchDeployment("web", `{"metadata":{"annotations":{"confighash.dev/enabled":"true"}}}`)
		_, next = r.obs.waitFor(t, next, "baseline when opted in", deploymentOutcome("web", "baseline_recorded"))
		_, next = r.obs.waitFor(t, next, "in sync", inSyncHaving("web", "Secret/creds", rv))
		assert.Equal(t, 1, e.revisions("Deployment", "web"), "opted in: no roll")
		assert.Contains(t, e.deployment("web").Annotations["confighash.dev/external-baseline"], "Secret/creds=")

		// From now on an edit rolls it once.
		rv = e.editSecret("creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-8") })
		_, next = r.obs.waitFor(t, next, "rolled", deploymentOutcome("web", "rolled"))
		r.obs.waitFor(t, next, "in sync with the edit", inSyncHaving("web", "Secret/creds", rv))
		assert.Equal(t, 2, e.revisions("Deployment", "web"), "the edit after the opt-in, once")
		e.waitEvent("web", controller.EventReasonConfigChanged)
		e.assertNoCanaryInEvents()
	})
	t.Run("opted-out-render-then-in", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := &scenario{env: e, kind: "Deployment"}
		e.createSecret("db-creds", map[string]string{"password": canary})
		s.rendered = render(t, e.stream(defaultApp("Deployment")))
		s.ctrl = e.start(e.testOptions())
		outStream := strings.Replace(s.rendered, "  annotations:\n    confighash.dev/external:", "  annotations:\n    confighash.dev/enabled: \"false\"\n    confighash.dev/external:", 1)
		require.NotEqual(t, s.rendered, outStream, "the render's Deployment opted out")
		require.NoError(t, e.apply(outStream, "kubectl"))

		mark := s.ctrl.obs.mark()
		s.patchDeployment(workloadName, `{"metadata":{"annotations":{"confighash.dev/enabled":"true"}}}`)
		o, _ := s.ctrl.obs.waitFor(t, mark, "in sync once opted in", is("Deployment", "in_sync"))
		assert.Equal(t, o.Input.RenderHash, o.Input.LiveIn, "the render-time hash is right")
		assert.Equal(t, 0, s.rollouts())
		assert.Equal(t, 0, s.controllerRollouts())
		assert.Zero(t, s.ctrl.obs.count(mark, is("Deployment", "rolled")))
	})
}

// An opted-in Deployment created before the ConfigMap it requires (no
// render, so no hash to compare with): held back while it is missing,
// then, when it is created, its content is the first the pods will read
// (they could not start without it): a baseline, no rollout. The same when
// the ConfigMap is created without the key the pods require and the key
// comes later: the pods could not start on what it held before.
func TestOptedInBeforeItsConfigMap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		first map[string]string // the ConfigMap as first created, without key A; nil: created with it
	}{
		{name: "created with the key"},
		{name: "created without the key, which comes later", first: map[string]string{"B": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			r := startKeyAReader(e)
			_, next := r.obs.waitFor(t, 0, "held back", deploymentOutcome("web", "missing_config"))
			if tc.first == nil {
				e.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"A": "1"}})
			} else {
				e.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: tc.first})
				_, next = r.obs.waitFor(t, next, "held back for key A", func(o controller.Outcome) bool {
					return deploymentOutcome("web", "missing_config")(o) && slices.Contains(o.Decision.Missing, "ConfigMap/app key A")
				})
				e.editConfigMap("app", func(cm *corev1.ConfigMap) { cm.Data["A"] = "1" })
			}
			r.obs.waitFor(t, next, "in sync", deploymentOutcome("web", "in_sync"))
			assert.Equal(t, 1, e.revisions("Deployment", "web"))
			assert.Zero(t, r.obs.count(0, deploymentOutcome("web", "rolled")))
			assert.Contains(t, e.deployment("web").Annotations["confighash.dev/external-baseline"], "ConfigMap/app=")
		})
	}
}

// startKeyAReader starts a controller and applies web, an opted-in
// Deployment whose pods require key A of the ConfigMap app, which does not
// exist yet.
func startKeyAReader(e *env) *running {
	e.t.Helper()
	r := e.start(e.testOptions())
	w := optedIn(e, "web")
	w.Env = []string{kubetest.EnvKey("app", "A")}
	require.NoError(e.t, e.apply(w.YAML(), "kubectl"))
	return r
}

// TestConfigMissingEventSaysWhatIsMissing: the ConfigMissing Event follows
// what the workload waits for. client-go's Event series take a repeat of
// an Event (same regarding and related object, reason and action) as the
// same Event and keep its first note: a workload that waited for its
// ConfigMap, then for a key of it, showed "required ConfigMap … missing"
// while the ConfigMap existed.
func TestConfigMissingEventSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := startKeyAReader(e)
	waitNote := func(note string) {
		t.Helper()
		eventually(t, "a ConfigMissing Event saying "+note, func(context.Context) (bool, error) {
			for _, ev := range e.events("web", controller.EventReasonConfigMissing) {
				if strings.Contains(ev.Note, note) {
					return true, nil
				}
			}
			return false, nil
		})
	}
	waitNote("required ConfigMap " + e.ns + "/app missing")
	e.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"B": "1"}})
	waitNote("required ConfigMap " + e.ns + "/app key A missing")
	e.editConfigMap("app", func(cm *corev1.ConfigMap) { cm.Data["A"] = "1" })
	r.obs.waitFor(t, 0, "in sync", deploymentOutcome("web", "in_sync"))
	assert.Equal(t, 1, e.revisions("Deployment", "web"))
	assert.Zero(t, r.obs.count(0, deploymentOutcome("web", "rolled")))
}

// ---- the Secret canary through a controller process ----------------------

// bin/confighash-controller at --log-level debug, with client-go and
// controller-runtime logging through it, taken through the edits that
// produce the most output (a roll, a required key removed and restored,
// the Secret deleted and created again, a metadata-only change): its logs,
// the Events and /metrics never hold a Secret value or its base64.
func TestSecretCanary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createSecret("creds", map[string]string{"password": canary, "token": canary + "-0"})
	w := optedIn(e, "web")
	w.Env = []string{"{name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}"}
	w.EnvFrom = []string{"{secretRef: {name: creds}}"}
	require.NoError(t, e.apply(w.YAML(), "kubectl"))
	p := e.startProcess("canary", "--log-level", "debug", "--log-format", "json")
	e.waitMetric(p, "in sync", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)

	rolls := func(n float64) {
		t.Helper()
		e.waitMetric(p, fmt.Sprintf("%v rollouts", n), atLeast(n), "confighash_rollouts_total", `dry_run="false"`)
	}
	e.editSecret("creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-1") })
	rolls(1)
	e.editSecret("creds", func(sec *corev1.Secret) { delete(sec.Data, "password"); sec.Data["token"] = []byte(canary + "-2") })
	e.waitEvent("web", controller.EventReasonConfigMissing)
	e.editSecret("creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(canary + "-3") })
	rolls(2)
	require.NoError(t, e.cs.CoreV1().Secrets(e.ns).Delete(context.Background(), "creds", metav1.DeleteOptions{}))
	e.waitMetric(p, "the Secret missing", atLeast(1), "confighash_workloads_missing_config")
	e.createSecret("creds", map[string]string{"password": canary + "-4", "token": canary + "-5"})
	rolls(3)
	e.editSecret("creds", func(sec *corev1.Secret) { sec.Labels = map[string]string{"rotated": canary[:6]} })
	e.waitMetric(p, "the metadata-only change", atLeast(1), "confighash_config_events_total", `change="metadata"`)

	resp, err := http.Get("http://" + p.metrics + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(body), "confighash_rollouts_total")
	logs := p.Logs()
	require.Contains(t, logs, `"level":"DEBUG"`, "logging at debug")
	assertNoCanary(t, "/metrics", string(body))
	assertNoCanary(t, "the controller's logs", logs)
	e.assertNoCanaryInEvents()
}
