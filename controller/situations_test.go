package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// Ordinary cluster situations beyond the DESIGN.md table, against the real
// control plane: each counts the rollouts a user would see.

// consumeUser adds to the rendered app's container an env entry reading the
// key user of the external Secret db-creds: a change in git of how the pods
// consume a config, not of any config.
func consumeUser(stream string) string {
	return strings.Replace(stream, "        envFrom:\n",
		"        - name: DB_USER\n          valueFrom: {secretKeyRef: {name: db-creds, key: user}}\n        envFrom:\n", 1)
}

// A new render that consumes one more key of an external config (no config
// changed) rolls the workload through its new pod template; the controller
// must not roll it a second time because the hash of what the pods consume
// of that config changed with the pod spec. Both with the baseline from the
// first apply and after a roll of the controller's own.
func TestRenderConsumesAnotherKeyOfExternalConfig(t *testing.T) {
	for _, rolledBefore := range []bool{false, true} {
		name := "baselined"
		if rolledBefore {
			name = "after-a-controller-roll"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			want := 0
			if rolledBefore {
				mark := s.ctrl.obs.mark()
				s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
				s.expectRoll(mark)
				want = 1
			}
			require.Equal(t, want, s.rollouts())
			last, _ := s.ctrl.obs.waitFor(t, s.ctrl.obs.mark()-1, "the last outcome", is("Deployment", "in_sync"))
			rerendered := render(t, consumeUser(s.stream(defaultApp("Deployment"))))
			require.Contains(t, rerendered, "DB_USER")
			mark := s.ctrl.obs.mark()
			require.NoError(t, s.apply(docs(t, rerendered, "Deployment"), "kubectl"))
			s.ctrl.obs.waitFor(t, mark, "in sync with the new pod spec", func(o controller.Outcome) bool {
				return is("Deployment", "in_sync")(o) && o.Input.LiveExternal["Secret/db-creds"] != last.Input.LiveExternal["Secret/db-creds"]
			})
			assert.Equal(t, want+1, s.rollouts(), "the new pod spec rolled it, once")
			assert.Equal(t, want, s.controllerRollouts(), "no roll of the controller's own")

			// The new key is watched: editing it rolls.
			mark = s.ctrl.obs.mark()
			s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["user"] = []byte("app-2") })
			s.expectRoll(mark)
			assert.Equal(t, want+2, s.rollouts())
		})
	}
}

// A workload opted in without a render (every config external) whose pod
// template is edited with kubectl to consume its ConfigMap otherwise: one
// rollout, the workload controller's, whether or not the controller rolled
// it before (its record then describes the old pod spec).
func TestKubectlEditChangesWhatIsConsumed(t *testing.T) {
	// A projected volume of the whole ConfigMap, under the pod spec.
	projected := "      volumes:\n      - {name: app, projected: {sources: [{configMap: {name: app}}]}}\n"
	for _, c := range []struct {
		name string
		edit func(w *kubetest.Workload) string
	}{
		{"another-key", func(w *kubetest.Workload) string {
			w.Env = append(w.Env, kubetest.EnvKey("app", "B"))
			return w.YAML()
		}},
		{"env-to-projected-volume", func(w *kubetest.Workload) string {
			w.Env = nil
			return w.YAML() + projected
		}},
		// An immutable ConfigMap replaced by one of a new name, holding
		// what app holds now.
		{"renamed", func(w *kubetest.Workload) string {
			w.Env = []string{kubetest.EnvKey("app", "B"), kubetest.EnvKey("app-v2", "A")}
			return w.YAML()
		}},
	} {
		for _, rolledBefore := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/rolled-before=%t", c.name, rolledBefore), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				ctx := context.Background()
				_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"},
					Data: map[string]string{"A": "1", "B": "2"}}, metav1.CreateOptions{})
				require.NoError(t, err)
				_, err = e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-v2"},
					Data: map[string]string{"A": "1b"}, Immutable: ptr.To(true)}, metav1.CreateOptions{})
				require.NoError(t, err)
				s := &scenario{env: e, kind: "Deployment"}
				s.ctrl = e.start(e.testOptions())
				w := kubetest.Workload{Name: workloadName, Namespace: e.ns, Replicas: 1,
					Annotations: map[string]string{"confighash.dev/enabled": "true"}, Env: []string{kubetest.EnvKey("app", "A")}}
				require.NoError(t, e.apply(w.YAML(), "kubectl"))
				s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
				want := 0
				if rolledBefore {
					mark := s.ctrl.obs.mark()
					e.editConfigMap("app", func(cm *corev1.ConfigMap) { cm.Data["A"] = "1b" })
					s.expectRoll(mark)
					want = 1
				}
				require.Equal(t, want, s.rollouts())
				last, _ := s.ctrl.obs.waitFor(t, s.ctrl.obs.mark()-1, "the last outcome", is("Deployment", "in_sync"))

				mark := s.ctrl.obs.mark()
				require.NoError(t, e.apply(c.edit(&w), "kubectl"))
				s.ctrl.obs.waitFor(t, mark, "in sync with the new pod spec", func(o controller.Outcome) bool {
					return is("Deployment", "in_sync")(o) && o.Input.LiveExternal["ConfigMap/app"] != last.Input.LiveExternal["ConfigMap/app"]
				})
				assert.Equal(t, want+1, s.rollouts(), "the edit of the pod spec rolled it, once")
				assert.Equal(t, want, s.controllerRollouts())

				// What the pods consume now is watched: an edit of B rolls.
				mark = s.ctrl.obs.mark()
				e.editConfigMap("app", func(cm *corev1.ConfigMap) { cm.Data["B"] = "2b" })
				s.expectRoll(mark)
				assert.Equal(t, want+2, s.rollouts())
			})
		}
	}
}

// withoutNamespace drops the namespace of every object of a stream: the
// manifests of a chart or a kustomize base that leave it to the apply
// (kubectl apply -n, helm install -n, Argo CD's destination namespace).
func withoutNamespace(stream string) string {
	return regexp.MustCompile(`(?m)^  namespace: .*\n`).ReplaceAllString(stream, "")
}

// A render of manifests that name no namespace, made without --namespace
// (so its hash names none), applied into a namespace: the first apply rolls
// nothing, and a change in git rolls once, by the render (S1 and S2 for the
// most common way manifests are written).
func TestRenderWithoutNamespace(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%t", keyed), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			var args []string
			opts := e.testOptions()
			if keyed {
				keyFile := filepath.Join(t.TempDir(), "key")
				require.NoError(t, os.WriteFile(keyFile, []byte("a-key\n"), 0o600))
				args, opts.HMACKeyFile = []string{"--hmac-key-file", keyFile}, keyFile
			}
			s := &scenario{env: e, kind: "Deployment"}
			e.createSecret("db-creds", map[string]string{"password": "pw-1"})
			stream := withoutNamespace(e.stream(defaultApp("Deployment")))
			require.NotContains(t, stream, "namespace:")
			s.rendered = render(t, stream, args...)
			s.ctrl = e.start(opts)
			require.NoError(t, e.apply(s.rendered, "kubectl"))
			s.ctrl.obs.waitFor(t, 0, "in sync after the first apply", is("Deployment", "in_sync"))
			assert.Equal(t, 0, s.rollouts(), "the first apply")
			assert.Equal(t, 0, s.controllerRollouts())

			changed := defaultApp("Deployment")
			changed.logLevel = "debug"
			mark := s.ctrl.obs.mark()
			require.NoError(t, e.apply(render(t, withoutNamespace(s.stream(changed)), args...), "kubectl"))
			newHash := s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
			s.ctrl.obs.waitFor(t, mark, "in sync with the new render", func(o controller.Outcome) bool {
				return is("Deployment", "in_sync")(o) && o.Input.RawRenderHash == newHash
			})
			assert.Equal(t, 1, s.rollouts(), "the change in git rolled it once")
			assert.Equal(t, 0, s.controllerRollouts())

			// An out-of-band edit still rolls.
			mark = s.ctrl.obs.mark()
			s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
			s.expectRoll(mark)
			assert.Equal(t, 2, s.rollouts())
		})
	}
}

// A consumed config deleted and created again (a Helm uninstall and
// install of the chart that holds it, an operator recreating its Secret):
// with the same content, nothing rolls; with other content, one rollout.
func TestConfigDeletedAndRecreated(t *testing.T) {
	appConfig := map[string]string{"LOG_LEVEL": "info", "UNUSED": "1", "site.conf": "listen 8080\n"}
	dbCreds := map[string]string{"password": "pw-1", "user": "app"}
	for _, c := range []struct {
		name   string
		kind   string // ConfigMap (in the render) or Secret (external)
		config string
		data   map[string]string
		want   int
	}{
		{"in-stream-ConfigMap/same", "ConfigMap", "app-config", appConfig, 0},
		{"in-stream-ConfigMap/other-content", "ConfigMap", "app-config", map[string]string{"LOG_LEVEL": "debug", "UNUSED": "1", "site.conf": "listen 8080\n"}, 1},
		{"external-Secret/same", "Secret", "db-creds", dbCreds, 0},
		{"external-Secret/other-content", "Secret", "db-creds", map[string]string{"password": "pw-2", "user": "app"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			ctx := context.Background()
			mark := s.ctrl.obs.mark()
			var err error
			if c.kind == "Secret" {
				err = s.cs.CoreV1().Secrets(s.ns).Delete(ctx, c.config, metav1.DeleteOptions{})
			} else {
				err = s.cs.CoreV1().ConfigMaps(s.ns).Delete(ctx, c.config, metav1.DeleteOptions{})
			}
			require.NoError(t, err)
			_, next := s.ctrl.obs.waitFor(t, mark, "missing config", is("Deployment", "missing_config"))
			var rv string
			meta := metav1.ObjectMeta{Name: c.config, Namespace: s.ns}
			if c.kind == "Secret" {
				sec, err := s.cs.CoreV1().Secrets(s.ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: c.data}, metav1.CreateOptions{})
				require.NoError(t, err)
				rv = sec.ResourceVersion
			} else {
				cm, err := s.cs.CoreV1().ConfigMaps(s.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: c.data}, metav1.CreateOptions{})
				require.NoError(t, err)
				rv = cm.ResourceVersion
			}
			s.inSyncAt(next, c.kind+"/"+c.config, rv)
			assert.Equal(t, c.want, s.rollouts())
			assert.Equal(t, c.want, s.controllerRollouts())
			assert.NotContains(t, s.ctrl.logs.String(), "pw-", "no Secret value in the logs (at level debug)")
		})
	}
}

// The Deployment applied before the ConfigMap it reads (a GitOps tool
// applying in its own order): held back while the ConfigMap is missing,
// then in sync when it lands; no rollout.
func TestWorkloadBeforeItsConfigMap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := &scenario{env: e, kind: "Deployment"}
	e.createSecret("db-creds", map[string]string{"password": "pw-1"})
	s.rendered = render(t, e.stream(defaultApp("Deployment")))
	s.ctrl = e.start(e.testOptions())
	require.NoError(t, e.apply(docs(t, s.rendered, "Deployment"), "kubectl"))
	_, next := s.ctrl.obs.waitFor(t, 0, "missing config", is("Deployment", "missing_config"))
	require.NoError(t, e.apply(docs(t, s.rendered, "ConfigMap", "Secret"), "kubectl"))
	o, _ := s.ctrl.obs.waitFor(t, next, "in sync", is("Deployment", "in_sync"))
	assert.Equal(t, o.Input.RenderHash, o.Input.LiveIn)
	assert.Equal(t, 0, s.rollouts())
	assert.Equal(t, 0, s.controllerRollouts())
}

// The render applied while a config its pods require is missing (db-creds,
// outside the render), its ConfigMap edited out of band before the Secret
// lands: no pod of the render has run, so the pods start on the edit and
// nothing rolls; the controller records what they read (a render
// baseline), and the next edit rolls once. Pods that ran before the Secret
// was deleted keep the render's content while it is missing, so the same
// edit rolls them once it is back. A new render applied while the Secret
// is missing is held back as a new workload is: its pods start on the
// edit, and the only rollout is the render's own. A write of the edited
// ConfigMap's metadata alone changes nothing of that.
func TestRenderEditedWhileHeldBack(t *testing.T) {
	t.Parallel()
	creds := map[string]string{"password": "pw-1", "user": "app"}
	for _, c := range []struct {
		name      string
		ranFirst  bool
		newRender bool
		// relabel: the ConfigMap's labels change after the edit, a write
		// of its metadata only.
		relabel bool
		// want counts the rollouts, own those the controller made.
		want, own int
	}{
		{name: "held back since the render"},
		{name: "held back since the render, the edited ConfigMap relabelled", relabel: true},
		{name: "held back once its pods ran", ranFirst: true, want: 1, own: 1},
		{name: "a new render applied while held back", ranFirst: true, newRender: true, want: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := &scenario{env: e, kind: "Deployment", rendered: render(t, e.stream(defaultApp("Deployment")))}
			s.ctrl = e.start(e.testOptions())
			s.ctrl.watching(t)
			if c.ranFirst {
				e.createSecret("db-creds", creds)
			}
			require.NoError(t, e.apply(s.rendered, "kubectl"))
			if c.ranFirst {
				s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
				require.NoError(t, e.cs.CoreV1().Secrets(e.ns).Delete(context.Background(), "db-creds", metav1.DeleteOptions{}))
			}
			_, next := s.ctrl.obs.waitFor(t, 0, "missing config", is("Deployment", "missing_config"))
			if c.newRender {
				app := defaultApp("Deployment")
				app.logLevel = "warn"
				require.NoError(t, e.apply(render(t, e.stream(app)), "kubectl"))
				h := e.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
				_, next = s.ctrl.obs.waitFor(t, next, "the new render held back", func(o controller.Outcome) bool {
					return is("Deployment", "missing_config")(o) && o.Input.RawRenderHash == h
				})
			}
			rv := e.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
			if c.relabel {
				rv = e.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"team": "web"} })
			}
			_, next = s.ctrl.obs.waitFor(t, next, "held back having read the edit", func(o controller.Outcome) bool {
				return is("Deployment", "missing_config")(o) && o.ConfigVersions["ConfigMap/app-config"] == rv
			})
			e.createSecret("db-creds", creds)
			s.ctrl.obs.waitFor(t, next, "in sync with the Secret back", is("Deployment", "in_sync"))
			if !assert.Equal(t, c.want, s.rollouts()) {
				t.Log(e.describeRevisions(workloadName))
			}
			assert.Equal(t, c.own, s.controllerRollouts())
			if c.own > 0 {
				return
			}
			assert.Contains(t, e.deployment(workloadName).Annotations, renderBaselineKey,
				"what the pods read is recorded")
			mark := s.ctrl.obs.mark()
			e.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "error" })
			s.expectRoll(mark)
			if !assert.Equal(t, c.want+1, s.rollouts(), "an edit once the pods run") {
				t.Log(e.describeRevisions(workloadName))
			}
		})
	}
}

// TestOptionalRenderConfigDeletedWhileHeldBack (random history seed 1592):
// a workload waits for its required Secret since the render; an optional
// Secret of the render is deleted meanwhile. No pod of the template ran, so
// the pods start on the deletion when the required Secret lands: nothing
// to roll.
func TestOptionalRenderConfigDeletedWhileHeldBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stream := strings.Replace(e.stream(defaultApp("Deployment")), "secretRef: {name: api-token}", "secretRef: {name: api-token, optional: true}", 1)
	require.Contains(t, stream, "{name: api-token, optional: true}", "the render's Secret is optional")
	s := &scenario{env: e, kind: "Deployment", rendered: render(t, stream)}
	s.ctrl = e.start(e.testOptions())
	s.ctrl.watching(t)
	require.NoError(t, e.apply(s.rendered, "kubectl"))
	_, next := s.ctrl.obs.waitFor(t, 0, "missing config", is("Deployment", "missing_config"))
	require.NoError(t, e.cs.CoreV1().Secrets(e.ns).Delete(context.Background(), "api-token", metav1.DeleteOptions{}))
	_, next = s.ctrl.obs.waitFor(t, next, "held back having seen the deletion", is("Deployment", "missing_config"))
	e.createSecret("db-creds", map[string]string{"password": "pw-1", "user": "app"})
	s.ctrl.obs.waitFor(t, next, "in sync with the Secret back", is("Deployment", "in_sync"))
	assert.Equal(t, 0, s.rollouts())
}

// An optional ConfigMap (envFrom optional: true) that does not exist yet:
// the workload is not held back; its creation, once the pods could have run
// without it, changes what new pods would read, so it rolls once, and so
// does its deletion. (Created within a second of the workload, it is what
// the pods read: TestLanded, and TestConfigsLandingWithTheWorkload in
// examples.)
func TestOptionalConfig(t *testing.T) {
	t.Parallel()
	s := startOptional(t, "{configMapRef: {name: overrides, optional: true}}")
	e, ctx := s.env, context.Background()
	assert.Equal(t, 0, s.rollouts())

	mark := s.ctrl.obs.mark()
	e.createOverrides()
	s.expectRoll(mark)
	assert.Equal(t, 1, s.rollouts(), "created")

	mark = s.ctrl.obs.mark()
	require.NoError(t, e.cs.CoreV1().ConfigMaps(e.ns).Delete(ctx, "overrides", metav1.DeleteOptions{}))
	s.expectRoll(mark)
	assert.Equal(t, 2, s.rollouts(), "deleted")
	assert.Zero(t, s.ctrl.obs.count(0, is("Deployment", "missing_config")), "an optional config is never missing")
}

// TestOptionalConfigLandingWithARequiredOneBack: the landed rule's
// boundary. Pods run without an optional ConfigMap; the Secret they
// require is deleted under them (they keep running) and created again, and
// the ConfigMap is created in the same second. The Secret's creation does
// not say the pods just started: they ran without the ConfigMap all along,
// so its creation rolls them once.
func TestOptionalConfigLandingWithARequiredOneBack(t *testing.T) {
	t.Parallel()
	s := startOptional(t, "{secretRef: {name: creds}}", "{configMapRef: {name: overrides, optional: true}}")
	e := s.env
	mark := s.ctrl.obs.mark()
	require.NoError(t, e.cs.CoreV1().Secrets(e.ns).Delete(context.Background(), "creds", metav1.DeleteOptions{}))
	s.ctrl.obs.waitFor(t, mark, "held back for the deleted Secret", is("Deployment", "missing_config"))
	mark = s.ctrl.obs.mark()
	e.createSecret("creds", map[string]string{"password": "pw"})
	e.createOverrides()
	s.expectRoll(mark)
	assert.Equal(t, 1, s.rollouts(), "the optional ConfigMap created with the required Secret back")
}

// startOptional starts a controller on a fresh namespace holding Secret
// creds, applies the opted-in Deployment reading envFrom, and waits until
// the controller finds it in sync and a config created from then on is
// out of the landed rule for the workload's creation: the second of a
// creation is two past the workload's (the API server's creation times
// count whole seconds). That is time passing, with nothing to poll for.
func startOptional(t *testing.T, envFrom ...string) *scenario {
	t.Helper()
	e := newEnv(t)
	s := &scenario{env: e, kind: "Deployment"}
	s.ctrl = e.start(e.testOptions())
	e.createSecret("creds", map[string]string{"password": "pw"})
	require.NoError(t, e.apply(kubetest.Workload{Name: workloadName, Namespace: e.ns, Replicas: 1,
		Annotations: map[string]string{"confighash.dev/enabled": "true"}, EnvFrom: envFrom}.YAML(), "kubectl"))
	s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
	time.Sleep(time.Until(e.deployment(workloadName).CreationTimestamp.Add(2 * time.Second)))
	return s
}

// createOverrides creates the optional ConfigMap overrides.
func (e *env) createOverrides() {
	e.t.Helper()
	_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "overrides"},
		Data: map[string]string{"LOG_LEVEL": "debug"}}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

// Two namespaces holding the same app under the same names, one
// controller watching both: an edit in one rolls that one only.
func TestSameNamesInTwoNamespaces(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	opts := a.testOptions()
	opts.Namespaces = []string{a.ns, b.ns}
	r := a.start(opts)
	for _, e := range []*env{a, b} {
		e.createSecret("db-creds", map[string]string{"password": "pw-1"})
		require.NoError(t, e.apply(render(t, e.stream(defaultApp("Deployment"))), "kubectl"))
	}
	inSync := func(ns string) func(controller.Outcome) bool {
		return func(o controller.Outcome) bool { return o.Request.Namespace == ns && is("Deployment", "in_sync")(o) }
	}
	r.obs.waitFor(t, 0, "a in sync", inSync(a.ns))
	r.obs.waitFor(t, 0, "b in sync", inSync(b.ns))
	mark := r.obs.mark()
	rv := a.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
	rolled, next := r.obs.waitFor(t, mark, "a rolled", func(o controller.Outcome) bool { return o.Result == "rolled" })
	assert.Equal(t, a.ns, rolled.Request.Namespace)
	r.obs.waitFor(t, next, "a in sync", inSync(a.ns))
	assert.Equal(t, 1, a.revisions("Deployment", workloadName)-1)
	assert.Equal(t, 0, b.revisions("Deployment", workloadName)-1)
	// b may still be reconciled for events of its own (the Deployment
	// controller writes its revision annotation a moment after creating it),
	// but never rolled or held back, and never reading a's Secret.
	assert.Zero(t, r.obs.count(mark, func(o controller.Outcome) bool {
		return o.Request.Namespace == b.ns && (o.Result != "in_sync" || o.ConfigVersions["Secret/db-creds"] == rv)
	}), "b was not touched by a's edit")
}

// Wave's opt-in and Reloader's per-kind opt-in on workloads that carry no
// render-time hash, as docs/migrating.md maps them: nothing rolls at
// cut-over; Wave's covers every consumed config, Reloader's
// secret.reloader.stakater.com/auto only the Secrets.
func TestWaveAndReloaderPerKind(t *testing.T) {
	for _, c := range []struct {
		annotation string
		// rollsOn is whether an edit of the ConfigMap, then of the Secret,
		// rolls.
		rollsOn [2]bool
	}{
		{controller.WaveAnnotation, [2]bool{true, true}},
		{controller.ReloaderSecAutoAnnotation, [2]bool{false, true}},
		{controller.ReloaderCMAutoAnnotation, [2]bool{true, false}},
	} {
		t.Run(c.annotation, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"},
				Data: map[string]string{"A": "1"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			e.createSecret("creds", map[string]string{"password": "pw-1"})
			s := &scenario{env: e, kind: "Deployment"}
			s.ctrl = e.start(e.testOptions())
			require.NoError(t, e.apply(kubetest.Workload{Name: workloadName, Namespace: e.ns, Replicas: 1,
				Annotations: map[string]string{c.annotation: "true"},
				EnvFrom:     []string{"{configMapRef: {name: app}}", "{secretRef: {name: creds}}"}}.YAML(), "helm"))
			s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
			require.Equal(t, 0, s.rollouts(), "cut-over")
			want := 0
			for i, edit := range []func() string{
				func() string {
					return e.editConfigMap("app", func(cm *corev1.ConfigMap) { cm.Data["A"] = "2" })
				},
				func() string {
					return e.editSecret("creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
				},
			} {
				mark := s.ctrl.obs.mark()
				rv := edit()
				if c.rollsOn[i] {
					s.expectRoll(mark)
					want++
				} else {
					// Not watched: no reconcile at all. An absence has no
					// event to poll for: wait out the coalescing window a
					// roll would follow, with a margin, then count.
					time.Sleep(testWindow + 500*time.Millisecond)
					assert.Zero(t, s.ctrl.obs.count(mark, func(o controller.Outcome) bool { return o.Result == "rolled" }), "rv %s", rv)
				}
				assert.Equal(t, want, s.rollouts(), "after edit %d", i)
			}
		})
	}
}

// limitedTo grants a user the controller's Role (config/namespaced) in the
// env's namespace only and returns a client configuration acting as it.
func (e *env) limitedTo(user string) *rest.Config {
	e.t.Helper()
	return e.limitedToRole(user, func(role string) string { return role })
}

// limitedToRole is limitedTo with the Role edited by edit.
func (e *env) limitedToRole(user string, edit func(role string) string) *rest.Config {
	e.t.Helper()
	role, err := os.ReadFile(filepath.Join(testtools.RepoRoot(e.t), "config", "namespaced", "role.yaml"))
	require.NoError(e.t, err)
	require.NoError(e.t, e.apply(regexp.MustCompile(`(?m)^  namespace: apps$`).ReplaceAllString(edit(string(role)), "  namespace: "+e.ns)+fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: confighash-controller, namespace: %s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: confighash-controller}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}]
`, e.ns, user), "kubectl"))
	cfg := rest.CopyConfig(e.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return cfg
}

// RBAC limited to one namespace (a team's Role, no ClusterRole): with
// --namespaces naming it the controller starts and rolls; without, it
// stops at once with an error that says what it cannot read and what to
// do, instead of waiting for caches that can never fill.
func TestRBACLimitedToOneNamespace(t *testing.T) {
	t.Run("namespaces=it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		opts := e.testOptions()
		opts.RESTConfig = e.limitedTo("team-" + e.ns)
		s := e.startRendered(opts, "pw-1")
		mark := s.ctrl.obs.mark()
		e.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
		s.expectRoll(mark)
		assert.Equal(t, 1, s.rollouts())
	})
	t.Run("namespaces=all", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		opts := e.testOptions()
		opts.Namespaces = nil
		opts.RESTConfig = e.limitedTo("team-" + e.ns)
		opts.Registry = prometheus.NewRegistry()
		opts.Logger = logr.Discard()
		done := make(chan error, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { done <- controller.Run(ctx, opts) }()
		select {
		case err := <-done:
			require.Error(t, err)
			msg := err.Error()
			assert.Contains(t, msg, "list")
			assert.Contains(t, msg, "all namespaces")
			assert.Contains(t, msg, "--namespaces")
			t.Log(msg)
		case <-time.After(30 * time.Second):
			t.Fatal("the controller neither failed nor explained itself in 30s")
		}
	})
	t.Run("namespaces=it-and-another", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		opts := e.testOptions()
		opts.Namespaces = []string{e.ns, "kube-system"}
		opts.RESTConfig = e.limitedTo("team-" + e.ns)
		_, _, err := controller.NewManager(opts)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "list, watch secrets in namespace kube-system")
		assert.NotContains(t, err.Error(), "namespace "+e.ns)
	})
	t.Run("read-only", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		opts := e.testOptions()
		opts.RESTConfig = e.limitedToRole("viewer-"+e.ns, func(role string) string {
			return strings.ReplaceAll(role, "verbs: [list, watch, patch]", "verbs: [list, watch]")
		})
		_, _, err := controller.NewManager(opts)
		require.Error(t, err, "rolling needs patch")
		assert.Contains(t, err.Error(), "patch deployments.apps in namespace "+e.ns)
		assert.NotContains(t, err.Error(), "list")
		opts.DryRun = true
		_, _, err = controller.NewManager(opts)
		assert.NoError(t, err, "a dry run patches nothing")
	})
}

// A kustomize overlay as users write one (testdata/kustomize/prefix:
// namePrefix, confighash as a transformer, no namespace in the manifests)
// built with the real kustomize running this checkout's bin/confighash,
// and applied into a namespace: no rollout at the first apply, one for a
// change in git, one for an out-of-band edit of the renamed ConfigMap.
func TestKustomizeOverlayApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := filepath.Join(testtools.RepoRoot(t), "testdata", "kustomize", "prefix")
	dir := t.TempDir()
	bin := filepath.Join(buildBinaries(t), "confighash")
	require.NoError(t, testtools.CopyTree(src, dir, func(_, _ string, b []byte) ([]byte, error) {
		return regexp.MustCompile(`path: \S*bin/confighash`).ReplaceAll(b, []byte("path: "+bin)), nil
	}))
	build := func() string {
		t.Helper()
		res := testtools.Run(t, dir, nil, nil, testtools.Tool(t, "kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", ".")
		require.Zero(t, res.ExitCode, res.Stderr)
		require.Contains(t, res.Stdout, "confighash.dev/hash: ")
		return res.Stdout
	}
	e.createSecret("vault-token", map[string]string{"token": "t-1"})
	s := &scenario{env: e, kind: "Deployment"}
	s.ctrl = e.start(e.testOptions())
	require.NoError(t, e.apply(build(), "argocd-controller"))
	inSync := func(o controller.Outcome) bool { return o.Request.Name == "prod-web" && o.Result == "in_sync" }
	s.ctrl.obs.waitFor(t, 0, "in sync after the first apply", inSync)
	rollouts := func() int { return e.revisions("Deployment", "prod-web") - 1 }
	assert.Equal(t, 0, rollouts(), "first apply")

	cm := filepath.Join(dir, "configmap.yaml")
	b, err := os.ReadFile(cm)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cm, []byte(strings.Replace(string(b), "LOG_LEVEL: info", "LOG_LEVEL: debug", 1)), 0o644))
	mark := s.ctrl.obs.mark()
	rebuilt := build()
	require.NoError(t, e.apply(rebuilt, "argocd-controller"))
	newHash := regexp.MustCompile(`confighash.dev/hash: (\S+)`).FindStringSubmatch(rebuilt)[1]
	s.ctrl.obs.waitFor(t, mark, "in sync with the new render", func(o controller.Outcome) bool {
		return inSync(o) && o.Input.RawRenderHash == newHash
	})
	assert.Equal(t, 1, rollouts(), "a change in git")
	assert.Equal(t, 0, s.controllerRollouts())

	mark = s.ctrl.obs.mark()
	e.editConfigMap("prod-cfg", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
	_, next := s.ctrl.obs.waitFor(t, mark, "rolled", func(o controller.Outcome) bool { return o.Request.Name == "prod-web" && o.Result == "rolled" })
	s.ctrl.obs.waitFor(t, next, "in sync", inSync)
	assert.Equal(t, 2, rollouts(), "an out-of-band edit")
}

// The example chart rendered by the real Helm 3 with bin/confighash as its
// post-renderer, the way README shows, but without
// --post-renderer-args=--namespace (the chart names no namespace), and
// applied into the release namespace: no rollout at the first apply, one
// for a new value.
func TestHelmChartWithoutNamespaceArgument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	helm := testtools.NewHelm(t, 3)
	chart := filepath.Join(testtools.RepoRoot(t), "examples", "helm")
	bin := filepath.Join(buildBinaries(t), "confighash")
	template := func(args ...string) string {
		t.Helper()
		out := helm.MustRun(t, append([]string{"template", "web", chart, "-n", e.ns, "--post-renderer", bin}, args...)...)
		require.Contains(t, out, "confighash.dev/hash: ")
		require.NotContains(t, out, "namespace:")
		return out
	}
	s := &scenario{env: e, kind: "Deployment"}
	s.ctrl = e.start(e.testOptions())
	require.NoError(t, e.apply(template(), "helm"))
	inSync := func(o controller.Outcome) bool { return o.Request.Name == "web-greeter" && o.Result == "in_sync" }
	first, _ := s.ctrl.obs.waitFor(t, 0, "in sync", inSync)
	rollouts := func() int { return e.revisions("Deployment", "web-greeter") - 1 }
	assert.Equal(t, 0, rollouts(), "first apply")

	mark := s.ctrl.obs.mark()
	require.NoError(t, e.apply(template("--set", "greeting=Hi"), "helm"))
	s.ctrl.obs.waitFor(t, mark, "in sync with the upgrade", func(o controller.Outcome) bool {
		return inSync(o) && o.Input.RawRenderHash != first.Input.RawRenderHash
	})
	assert.Equal(t, 1, rollouts(), "the upgrade")
	assert.Equal(t, 0, s.controllerRollouts())
}
