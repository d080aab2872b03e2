package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// Situations a new user meets in the first days with the controller, beyond
// the DESIGN.md table and situations_test.go: workloads opted in without a
// render (confighash.dev/enabled), so every consumed config is external.

// deploymentOutcome matches the outcomes of one Deployment with a result.
func deploymentOutcome(name, result string) func(controller.Outcome) bool {
	return func(o controller.Outcome) bool {
		return o.Request.Kind == "Deployment" && o.Request.Name == name && o.Result == result
	}
}

// inSyncHaving matches an in-sync outcome of Deployment name that read
// config ref at resourceVersion rv.
func inSyncHaving(name, ref, rv string) func(controller.Outcome) bool {
	return func(o controller.Outcome) bool {
		return deploymentOutcome(name, "in_sync")(o) && o.ConfigVersions[ref] == rv
	}
}

// optedIn is a Deployment opted in by annotation, with one replica.
func optedIn(e *env, name string) kubetest.Workload {
	return kubetest.Workload{Name: name, Namespace: e.ns, Replicas: 1,
		Annotations: map[string]string{"confighash.dev/enabled": "true"}}
}

// startInSync starts a controller with the test options, applies the
// Deployments ws and waits until it has found each in sync (applyInSync).
func (e *env) startInSync(ws ...kubetest.Workload) *running {
	e.t.Helper()
	r := e.start(e.testOptions())
	e.applyInSync(r, ws...)
	return r
}

// applyInSync applies the Deployments ws, in one stream, as kubectl, and
// waits until r has found each in sync. The configs they read are created
// before.
func (e *env) applyInSync(r *running, ws ...kubetest.Workload) {
	e.t.Helper()
	stream := make([]string, 0, len(ws))
	for _, w := range ws {
		stream = append(stream, w.YAML())
	}
	require.NoError(e.t, e.apply(strings.Join(stream, "---\n"), "kubectl"))
	for _, w := range ws {
		r.obs.waitFor(e.t, 0, w.Name+" in sync", deploymentOutcome(w.Name, "in_sync"))
	}
}

func (e *env) createConfigMap(cm *corev1.ConfigMap) {
	e.t.Helper()
	cm.Namespace = e.ns
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create ConfigMap %s: %v", cm.Name, err)
	}
}

// Two teams' Deployments read one shared ConfigMap, each its own key: an
// edit of one key rolls only the Deployment that reads it, and the other
// one is seen to be in sync with the edit.
func TestSharedConfigMapOneKeyEach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"A": "1", "B": "2"}})
	a, b := optedIn(e, "reads-a"), optedIn(e, "reads-b")
	a.Env, b.Env = []string{kubetest.EnvKey("shared", "A")}, []string{kubetest.EnvKey("shared", "B")}
	r := e.startInSync(a, b)

	mark := r.obs.mark()
	rv := e.editConfigMap("shared", func(cm *corev1.ConfigMap) { cm.Data["A"] = "1b" })
	_, next := r.obs.waitFor(t, mark, "reads-a rolled", deploymentOutcome("reads-a", "rolled"))
	r.obs.waitFor(t, next, "reads-a in sync after its roll", inSyncHaving("reads-a", "ConfigMap/shared", rv))
	r.obs.waitFor(t, mark, "reads-b in sync having read the edit", inSyncHaving("reads-b", "ConfigMap/shared", rv))
	assert.Equal(t, 2, e.revisions("Deployment", "reads-a"), "reads-a rolled once")
	assert.Equal(t, 1, e.revisions("Deployment", "reads-b"), "reads-b not rolled")
	assert.Zero(t, r.obs.count(mark, deploymentOutcome("reads-b", "rolled")))

	mark = r.obs.mark()
	rv = e.editConfigMap("shared", func(cm *corev1.ConfigMap) { cm.Data["B"] = "2b" })
	r.obs.waitFor(t, mark, "reads-b rolled", deploymentOutcome("reads-b", "rolled"))
	r.obs.waitFor(t, mark, "reads-a in sync having read the edit", inSyncHaving("reads-a", "ConfigMap/shared", rv))
	assert.Equal(t, 2, e.revisions("Deployment", "reads-a"), "reads-a not rolled again")
	assert.Equal(t, 2, e.revisions("Deployment", "reads-b"), "reads-b rolled once")
}

// Secrets of the types cert-manager and registry tooling write, consumed the
// way pods consume them: a kubernetes.io/tls Secret mounted whole (a
// certificate renewal rolls once) and a kubernetes.io/dockerconfigjson
// Secret named in imagePullSecrets (a rotated registry token rolls once).
func TestTypedSecrets(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret *corev1.Secret
		edit   func(*corev1.Secret)
	}{
		{"tls-renewal", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: []byte("cert-1"), corev1.TLSPrivateKeyKey: []byte("key-1")}},
			func(s *corev1.Secret) {
				s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = []byte("cert-2"), []byte("key-2")
			}},
		{"registry-token", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.invalid":{"auth":"dXNlcjpvbGQ="}}}`)}},
			func(s *corev1.Secret) {
				s.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"registry.invalid":{"auth":"dXNlcjpuZXc="}}}`)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c.secret.Namespace = e.ns
			_, err := e.cs.CoreV1().Secrets(e.ns).Create(context.Background(), c.secret, metav1.CreateOptions{})
			require.NoError(t, err)
			r := e.start(e.testOptions())
			require.NoError(t, e.apply(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
  annotations: {confighash.dev/enabled: "true"}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      imagePullSecrets: [{name: registry}]
      containers:
      - name: web
        image: registry.invalid/web:1
        volumeMounts: [{name: tls, mountPath: /etc/tls}]
      volumes:
      - {name: tls, secret: {secretName: web-tls, optional: true}}
`, e.ns), "kubectl"))
			r.obs.waitFor(t, 0, "in sync", deploymentOutcome("web", "in_sync"))
			mark := r.obs.mark()
			_, err = kubetest.Edit(context.Background(), e.cs.CoreV1().Secrets(e.ns), c.secret.Name, "cert-manager", c.edit)
			require.NoError(t, err)
			rolled, next := r.obs.waitFor(t, mark, "a roll", deploymentOutcome("web", "rolled"))
			assert.Contains(t, rolled.Decision.Changed, "Secret/"+c.secret.Name, "the Secret is named as the change")
			r.obs.waitFor(t, next, "in sync after the roll", deploymentOutcome("web", "in_sync"))
			assert.Equal(t, 2, e.revisions("Deployment", "web"))
		})
	}
}

// A Deployment that will not start new pods right now: paused
// (spec.paused, a user holding a rollout) or scaled to zero. The
// controller still updates its pod template when a consumed config
// changes, so the pods the Deployment starts later read the new config; a
// paused Deployment rolls when resumed, once, and the controller does not
// roll it again.
func TestPausedAndScaledToZero(t *testing.T) {
	for _, c := range []struct {
		name string
		spec []string
	}{
		{"paused", []string{"paused: true"}},
		{"zero-replicas", []string{"replicas: 0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"A": "1"}})
			w := optedIn(e, "web")
			w.Replicas, w.Spec = 0, c.spec
			w.EnvFrom = []string{"{configMapRef: {name: app}}"}
			r := e.startInSync(w)
			before := e.revisions("Deployment", "web")
			require.LessOrEqual(t, before, 1)

			mark := r.obs.mark()
			rv := e.editConfigMap("app", func(cm *corev1.ConfigMap) { cm.Data["A"] = "2" })
			rolled, next := r.obs.waitFor(t, mark, "a roll", deploymentOutcome("web", "rolled"))
			r.obs.waitFor(t, next, "in sync after the roll", inSyncHaving("web", "ConfigMap/app", rv))
			d := e.deployment("web")
			assert.Equal(t, rolled.Decision.Record.ControllerHash, d.Spec.Template.Annotations["confighash.dev/controller-hash"],
				"the pod template carries the new hash")
			if c.name == "zero-replicas" {
				assert.Equal(t, before+1, e.revisions("Deployment", "web"), "a new ReplicaSet, of zero pods")
				return
			}
			assert.Equal(t, before, e.revisions("Deployment", "web"), "nothing rolls while paused")

			mark = r.obs.mark()
			_, err := e.cs.AppsV1().Deployments(e.ns).Patch(context.Background(), "web", types.MergePatchType,
				[]byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{FieldManager: "kubectl-rollout"})
			require.NoError(t, err)
			e.waitRevisions("Deployment", "web", before+1)
			r.obs.waitFor(t, mark, "in sync after the resume", deploymentOutcome("web", "in_sync"))
			assert.Equal(t, before+1, e.revisions("Deployment", "web"), "resuming rolled once")
			assert.Zero(t, r.obs.count(mark, deploymentOutcome("web", "rolled")), "no roll of the controller's own after the resume")
		})
	}
}

// An immutable ConfigMap cannot be edited; users replace it with delete and
// create (kubectl replace --force) under the same name. New content rolls
// once; the same content again (a re-run of the pipeline) rolls nothing.
func TestImmutableConfigMapReplaced(t *testing.T) {
	for _, c := range []struct {
		name  string
		value string
		rolls int
	}{
		{"new-content", "2", 1},
		{"same-content", "1", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			immutable := func(v string) *corev1.ConfigMap {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Immutable: ptr.To(true), Data: map[string]string{"A": v}}
			}
			e.createConfigMap(immutable("1"))
			w := optedIn(e, "web")
			w.EnvFrom = []string{"{configMapRef: {name: app}}"}
			r := e.startInSync(w)

			mark := r.obs.mark()
			require.NoError(t, e.cs.CoreV1().ConfigMaps(e.ns).Delete(context.Background(), "app", metav1.DeleteOptions{}))
			cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(context.Background(), func() *corev1.ConfigMap {
				cm := immutable(c.value)
				cm.Namespace = e.ns
				return cm
			}(), metav1.CreateOptions{})
			require.NoError(t, err)
			r.obs.waitFor(t, mark, "in sync having read the new ConfigMap", inSyncHaving("web", "ConfigMap/app", cm.ResourceVersion))
			assert.Equal(t, 1+c.rolls, e.revisions("Deployment", "web"))
			assert.Equal(t, c.rolls, r.obs.count(mark, deploymentOutcome("web", "rolled")))
			assert.Empty(t, e.events("web", controller.EventReasonConfigMissing), "gone for less than a coalescing window: no Warning")
		})
	}
}

// A rendered Deployment that the controller rolled, then written back from
// git with kubectl replace (or Argo CD's Replace=true): the replace drops
// the controller's record and baseline, and its pod template is the
// render's again, so the Deployment controller starts pods (they read the
// live config). After an edit of an external Secret the controller records
// a baseline and must not roll them a second time. After an out-of-band
// edit of an in-stream ConfigMap the render-time hash the replace put back
// no longer describes the live ConfigMap: the controller rolls once more
// (it cannot tell these pods from ones that started before the edit), and
// then settles.
func TestWorkloadReplacedAfterARoll(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(s *scenario)
		second int
	}{
		{"external-Secret", func(s *scenario) {
			s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
		}, 0},
		{"in-stream-ConfigMap", func(s *scenario) {
			s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			mark := s.ctrl.obs.mark()
			c.edit(s)
			s.expectRoll(mark)
			require.Equal(t, 1, s.controllerRollouts())

			// kubectl replace -f sends the file as it is, without a
			// resourceVersion: an unconditional update.
			var fromGit appsv1.Deployment
			require.NoError(t, yaml.Unmarshal([]byte(docs(t, s.rendered, "Deployment")), &fromGit))
			mark = s.ctrl.obs.mark()
			_, err := s.cs.AppsV1().Deployments(s.ns).Update(context.Background(), &fromGit, metav1.UpdateOptions{FieldManager: "kubectl-replace"})
			require.NoError(t, err)
			decided, next := s.ctrl.obs.waitFor(t, mark, "a decision on the replaced Deployment", func(o controller.Outcome) bool {
				return o.Request.Name == workloadName && o.Input.ControllerHash == "" &&
					(o.Result == "rolled" || o.Result == "in_sync" || o.Result == "baseline_recorded")
			})
			t.Logf("the first decision on the replaced Deployment: %s (%s)", decided.Result, decided.Decision.Reason)
			if c.second == 0 {
				assert.NotEqual(t, "rolled", decided.Result, "the replace restarted the pods; the controller must not again (decision %+v)", decided.Decision)
			}
			s.ctrl.obs.waitFor(t, next, "in sync after the replace", is("Deployment", "in_sync"))
			assert.Equal(t, 1+c.second, s.controllerRollouts(), "rolls of the controller's own")
		})
	}
}

// A key that a pod reads without optional: true (env valueFrom, volume
// items) removed from its ConfigMap by mistake: a roll would make pods that
// cannot start (CreateContainerConfigError), so, as for a missing config,
// the controller does not roll and warns; the key put back with new content
// rolls once.
func TestRequiredKeyRemoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"A": "1", "B": "2"}})
	w := optedIn(e, "web")
	// OPT is absent from the start and optional: that blocks nothing.
	w.Env = []string{kubetest.EnvKey("app", "A"), "{name: OPT, valueFrom: {configMapKeyRef: {name: app, key: OPT, optional: true}}}"}
	r := e.startInSync(w)

	mark := r.obs.mark()
	e.editConfigMap("app", func(cm *corev1.ConfigMap) {
		delete(cm.Data, "A")
		cm.Data["B"] = "2b"
	})
	_, next := r.obs.waitFor(t, mark, "missing config", deploymentOutcome("web", "missing_config"))
	ev := e.waitEvent("web", controller.EventReasonConfigMissing)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, fmt.Sprintf("required ConfigMap %s/app key A missing; not rolling until it exists", e.ns), ev.Note)
	assert.Equal(t, 1, e.revisions("Deployment", "web"), "no rollout into pods that cannot start")
	assert.Zero(t, r.obs.count(mark, deploymentOutcome("web", "rolled")))

	e.editConfigMap("app", func(cm *corev1.ConfigMap) { cm.Data["A"] = "1b" })
	_, next = r.obs.waitFor(t, next, "a roll", deploymentOutcome("web", "rolled"))
	r.obs.waitFor(t, next, "in sync after the roll", deploymentOutcome("web", "in_sync"))
	assert.Equal(t, 2, e.revisions("Deployment", "web"))
}

// A team that grants the controller Secrets by name only (resourceNames, as
// security reviews ask): the API server cannot serve a list or watch of a
// collection restricted by name, so the controller could never fill its
// cache. It refuses to start, naming what it lacks, instead of running
// blind to every Secret.
func TestSecretsGrantedByName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	opts := e.testOptions()
	opts.RESTConfig = e.limitedToRole("named-"+e.ns, func(role string) string {
		return strings.Replace(role, "  resources: [configmaps, secrets]\n  verbs: [list, watch]\n",
			"  resources: [configmaps]\n  verbs: [list, watch]\n- apiGroups: [\"\"]\n  resources: [secrets]\n  resourceNames: [db-creds]\n  verbs: [get, list, watch]\n", 1)
	})
	_, _, err := controller.NewManager(opts)
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "list, watch secrets in namespace "+e.ns)
	assert.NotContains(t, err.Error(), "configmaps")
}
