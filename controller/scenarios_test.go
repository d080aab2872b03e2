package controller_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
)

// The DESIGN.md scenarios S1–S10 against the real control plane. Each test
// has its own namespace and its own in-process controller scoped to it, so
// they run in parallel. A rollout is a new ReplicaSet (Deployment) or
// ControllerRevision (StatefulSet, DaemonSet), counted after the workload's
// own controller has observed its latest spec.

const workloadName = "web"

// appConfig is what a render holds: an in-stream ConfigMap (two consumed
// keys, one unconsumed), an in-stream Secret consumed whole, and a
// reference to the external Secret db-creds.
type appConfig struct {
	kind     string
	logLevel string
	unused   string
	token    string
}

func defaultApp(kind string) appConfig {
	return appConfig{kind: kind, logLevel: "info", unused: "1", token: "tok-1"}
}

// stream is the manifest a user keeps in git, before rendering.
func (e *env) stream(a appConfig) string {
	spec := "  replicas: 1\n"
	switch a.kind {
	case "StatefulSet":
		spec += "  serviceName: web\n"
	case "DaemonSet":
		spec = ""
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: %[1]s
data:
  LOG_LEVEL: %[3]s
  UNUSED: %[4]q
  site.conf: |
    listen 8080
---
apiVersion: v1
kind: Secret
metadata:
  name: api-token
  namespace: %[1]s
stringData:
  token: %[5]s
---
apiVersion: apps/v1
kind: %[2]s
metadata:
  name: web
  namespace: %[1]s
spec:
%[6]s  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.invalid/app:1
        env:
        - name: LOG_LEVEL
          valueFrom: {configMapKeyRef: {name: app-config, key: LOG_LEVEL}}
        - name: DB_PASSWORD
          valueFrom: {secretKeyRef: {name: db-creds, key: password}}
        envFrom:
        - secretRef: {name: api-token}
        volumeMounts:
        - {name: site, mountPath: /etc/site}
      volumes:
      - name: site
        configMap:
          name: app-config
          items: [{key: site.conf, path: site.conf}]
`, e.ns, a.kind, a.logLevel, a.unused, a.token, spec)
}

// scenario is a rendered app applied to a fresh namespace with a controller
// running and settled.
type scenario struct {
	*env
	ctrl     *running
	kind     string
	rendered string
}

func is(kind, result string) func(controller.Outcome) bool {
	return func(o controller.Outcome) bool {
		return o.Request.Kind == kind && o.Request.Name == workloadName && o.Result == result
	}
}

// setup renders the app with bin/confighash, creates the external Secret,
// starts a controller and applies the render (S1), and waits until the
// controller has found the workload in sync.
func setup(t *testing.T, kind string, tune ...func(*controller.Options)) *scenario {
	t.Helper()
	e := newEnv(t)
	opts := e.testOptions()
	for _, f := range tune {
		f(&opts)
	}
	s := e.startApp(kind, opts, map[string]string{"password": "pw-1", "user": "app"})
	require.Contains(t, s.rendered, "confighash.dev/hash: ")
	require.Regexp(t, `confighash.dev/external: '?Secret/db-creds'?\n`, s.rendered)
	return s
}

// startRendered is a controller with opts over the rendered Deployment
// app, its external Secret db-creds holding password.
func (e *env) startRendered(opts controller.Options, password string) *scenario {
	e.t.Helper()
	return e.startApp("Deployment", opts, map[string]string{"password": password})
}

// startApp is the app as kind, rendered by bin/confighash, under a
// controller with opts: it creates the external Secret db-creds holding
// creds, starts the controller, applies the render as kubectl and waits
// until the controller finds the workload in sync.
func (e *env) startApp(kind string, opts controller.Options, creds map[string]string) *scenario {
	e.t.Helper()
	e.createSecret("db-creds", creds)
	s := &scenario{env: e, kind: kind, rendered: render(e.t, e.stream(defaultApp(kind)))}
	s.ctrl = e.start(opts)
	require.NoError(e.t, e.apply(s.rendered, "kubectl"))
	s.ctrl.obs.waitFor(e.t, 0, kind+" in sync after the first apply", is(kind, "in_sync"))
	return s
}

// expectRoll waits for one roll after since, then for the controller to find
// the workload in sync again, and returns the rolled outcome.
func (s *scenario) expectRoll(since int) controller.Outcome {
	s.t.Helper()
	rolled, next := s.ctrl.obs.waitFor(s.t, since, "a roll", is(s.kind, "rolled"))
	s.ctrl.obs.waitFor(s.t, next, "in sync after the roll", is(s.kind, "in_sync"))
	return rolled
}

// inSyncAt waits for an in-sync reconcile that read config ref at
// resourceVersion rv: proof that the controller saw the edit and let it be.
func (s *scenario) inSyncAt(since int, ref, rv string) {
	s.t.Helper()
	s.ctrl.obs.waitFor(s.t, since, fmt.Sprintf("in sync having read %s at resourceVersion %s", ref, rv), func(o controller.Outcome) bool {
		return is(s.kind, "in_sync")(o) && o.ConfigVersions[ref] == rv
	})
}

func (s *scenario) rollouts() int { return s.revisions(s.kind, workloadName) - 1 }

func (s *scenario) controllerRollouts() int {
	return int(s.ctrl.metric("confighash_rollouts_total", map[string]string{"dry_run": "false"}))
}

// forKinds runs f in a parallel subtest per workload kind, each on a
// scenario of its own set up for that kind.
func forKinds(t *testing.T, kinds []string, f func(t *testing.T, s *scenario)) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f(t, setup(t, kind))
		})
	}
}

// ---- S1 ----

func TestS1FirstApply(t *testing.T) {
	forKinds(t, []string{"Deployment", "StatefulSet", "DaemonSet"}, func(t *testing.T, s *scenario) {
		assert.Equal(t, 0, s.rollouts(), "rollouts")
		assert.Equal(t, 0, s.controllerRollouts())
		// Hash parity, end to end: the live in-stream hash the controller
		// computed from its cache is the hash bin/confighash rendered.
		o, _ := s.ctrl.obs.waitFor(t, 0, "in sync", is(s.kind, "in_sync"))
		assert.NotEmpty(t, o.Input.RenderHash)
		assert.Equal(t, o.Input.RenderHash, o.Input.LiveIn)
		// The external Secret got a baseline on the workload metadata only.
		ann := s.workloadAnnotations()
		assert.Contains(t, ann.meta["confighash.dev/external-baseline"], "Secret/db-creds=v1-sha256:")
		assert.NotContains(t, ann.template, "confighash.dev/controller-hash")
	})
}

// An external Secret that arrives after the workload (External Secrets
// syncing late): a Warning while it is missing, then a baseline and no roll.
func TestS1ExternalSecretArrivesLater(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := &scenario{env: e, kind: "Deployment", rendered: render(t, e.stream(defaultApp("Deployment")))}
	s.ctrl = e.start(e.testOptions())
	require.NoError(t, e.apply(s.rendered, "kubectl"))
	o, next := s.ctrl.obs.waitFor(t, 0, "missing config", is("Deployment", "missing_config"))
	assert.Equal(t, []string{"Secret/db-creds"}, o.Decision.Missing)
	ev := e.waitEvent(workloadName, controller.EventReasonConfigMissing)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Note, "Secret "+e.ns+"/db-creds")
	e.createSecret("db-creds", map[string]string{"password": "pw-1"})
	s.ctrl.obs.waitFor(t, next, "baseline recorded", is("Deployment", "baseline_recorded"))
	s.ctrl.obs.waitFor(t, next, "in sync", is("Deployment", "in_sync"))
	assert.Equal(t, 0, s.rollouts())
	assert.InDelta(t, 0.0, s.ctrl.metric("confighash_workloads_missing_config", nil), 0)
}

// ---- S2 ----

// Config changed in git, re-rendered and re-applied: the render-time hash
// rolls the workload once; the controller must not add a second rollout,
// whichever of the ConfigMap and the Deployment lands first.
func TestS2ReRenderReapply(t *testing.T) {
	for _, order := range [][]string{{"ConfigMap", "Deployment"}, {"Deployment", "ConfigMap"}} {
		t.Run(strings.Join(order, "-first-then-"), func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			changed := defaultApp("Deployment")
			changed.logLevel = "debug"
			rerendered := render(t, s.stream(changed))
			require.NotEqual(t, s.rendered, rerendered)
			mark := s.ctrl.obs.mark()
			for _, kind := range order {
				require.NoError(t, s.apply(docs(t, rerendered, kind), "kubectl"))
			}
			newHash := s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
			s.ctrl.obs.waitFor(t, mark, "in sync with the new render", func(o controller.Outcome) bool {
				return is("Deployment", "in_sync")(o) && o.Input.RenderHash == newHash && o.Input.LiveIn == newHash
			})
			assert.Equal(t, 1, s.rollouts(), "rollouts")
			assert.Equal(t, 0, s.controllerRollouts(), "the render rolled it, not the controller")
		})
	}
}

// ---- S3 ----

func TestS3ExternalSecretEdited(t *testing.T) {
	forKinds(t, []string{"Deployment", "StatefulSet"}, func(t *testing.T, s *scenario) {
		mark := s.ctrl.obs.mark()
		start := time.Now()
		s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
		rolled := s.expectRoll(mark)
		s.waitRevisions(s.kind, workloadName, 2)
		t.Logf("external Secret edit to new revision: %s (coalescing window %s)", time.Since(start).Round(time.Millisecond), testWindow)
		assert.Equal(t, controller.ReasonExternalChanged, rolled.Decision.Reason)
		assert.Equal(t, 1, s.rollouts(), "rollouts")
		ev := s.waitEvent(workloadName, controller.EventReasonConfigChanged)
		assert.Equal(t, fmt.Sprintf("Secret %s/db-creds key password changed; rolling", s.ns), ev.Note)
		assert.NotContains(t, ev.Note, "pw-")
	})
}

// ---- S4 ----

func TestS4InStreamConfigMapEdited(t *testing.T) {
	forKinds(t, []string{"Deployment", "DaemonSet"}, func(t *testing.T, s *scenario) {
		mark := s.ctrl.obs.mark()
		s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
		rolled := s.expectRoll(mark)
		assert.Equal(t, controller.ReasonRenderMismatch, rolled.Decision.Reason)
		assert.Equal(t, 1, s.rollouts(), "rollouts")
		ev := s.waitEvent(workloadName, controller.EventReasonConfigChanged)
		assert.Equal(t, fmt.Sprintf("ConfigMap %s/app-config key LOG_LEVEL changed; rolling", s.ns), ev.Note)
		assert.Equal(t, "ConfigMap", ev.Related.Kind)
		// The render-time annotation is GitOps's: never rewritten.
		ann := s.workloadAnnotations()
		assert.Equal(t, rolled.Input.RawRenderHash, ann.template["confighash.dev/hash"])
		assert.Equal(t, rolled.Decision.Record.ControllerHash, ann.template["confighash.dev/controller-hash"])
	})
}

// ---- S5 ----

// GitOps re-applies the unchanged render with server-side apply and force
// under its own field manager, after the controller has rolled once: no
// conflict, the controller's annotations survive, no rollout, and a second
// apply changes nothing (no drift).
func TestS5GitOpsReapply(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	mark := s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
	s.expectRoll(mark)
	before := s.workloadAnnotations()
	require.Contains(t, before.template, "confighash.dev/controller-hash")

	metaEvents := s.ctrl.metric("confighash_config_events_total", map[string]string{"change": "metadata"})
	require.NoError(t, s.apply(s.rendered, "argocd-controller"), "first Argo CD sync")
	// The sync touched the ConfigMap and the Secret (new field manager); the
	// controller saw and dropped those events.
	eventually(t, "the controller to see the sync", func(context.Context) (bool, error) {
		return s.ctrl.metric("confighash_config_events_total", map[string]string{"change": "metadata"}) >= metaEvents+2, nil
	})
	// The resourceVersion also moves with status updates from the deployment
	// controller; the generation moves only when the spec changes.
	generation := s.deployment(workloadName).Generation
	require.NoError(t, s.apply(s.rendered, "argocd-controller"), "second Argo CD sync")
	assert.Equal(t, generation, s.deployment(workloadName).Generation, "a second sync of the same render changes nothing: no drift")

	after := s.workloadAnnotations()
	for _, k := range []string{"confighash.dev/controller-hash", "confighash.dev/controller-base", "confighash.dev/hash"} {
		assert.Equal(t, before.template[k], after.template[k], k)
	}
	assert.Equal(t, before.meta["confighash.dev/external-baseline"], after.meta["confighash.dev/external-baseline"])
	assert.Equal(t, 1, s.rollouts(), "only the out-of-band edit rolled")
	assert.Equal(t, 1, s.controllerRollouts())
}

// ---- S6 ----

// The controller stops, a config is edited while it is down, it starts
// again: exactly one rollout. Restarting again with no edit: none.
func TestS6RestartWithEditsWhileDown(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	s.ctrl.stop(t)
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
	s.ctrl = s.start(s.testOptions())
	s.expectRoll(0)
	assert.Equal(t, 1, s.rollouts(), "rollouts after the restart")

	s.ctrl.stop(t)
	s.ctrl = s.start(s.testOptions())
	s.ctrl.obs.waitFor(t, 0, "in sync after the second restart", is("Deployment", "in_sync"))
	assert.Equal(t, 1, s.rollouts(), "a restart without edits rolls nothing")
	assert.Equal(t, 0, s.controllerRollouts())
}

// ---- S7 ----

func TestS7ConfigMapAndSecretTogether(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	mark := s.ctrl.obs.mark()
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["site.conf"] = "listen 9090\n" })
	s.editSecret("api-token", func(sec *corev1.Secret) { sec.Data["token"] = []byte("tok-2") })
	s.expectRoll(mark)
	assert.Equal(t, 1, s.rollouts(), "rollouts")
	assert.Equal(t, 1, s.controllerRollouts())
	ev := s.waitEvent(workloadName, controller.EventReasonConfigChanged)
	assert.Contains(t, ev.Note, fmt.Sprintf("ConfigMap %s/app-config key site.conf changed", s.ns))
	assert.Contains(t, ev.Note, fmt.Sprintf("Secret %s/api-token key token changed", s.ns))
}

// ---- S8 ----

func TestS8UnconsumedKey(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	mark := s.ctrl.obs.mark()
	rv := s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["UNUSED"] = "2" })
	s.inSyncAt(mark, "ConfigMap/app-config", rv)
	assert.Equal(t, 0, s.rollouts())
	assert.Equal(t, 0, s.controllerRollouts())
}

// ---- S9 ----

func TestS9MetadataOnly(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	before := s.ctrl.metric("confighash_config_events_total", map[string]string{"kind": "ConfigMap", "change": "metadata"})
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) {
		cm.Labels = map[string]string{"chart": "app-1.2.4"}
		cm.Annotations = map[string]string{"owner": "team-b"}
	})
	eventually(t, "the controller to see the metadata change", func(context.Context) (bool, error) {
		return s.ctrl.metric("confighash_config_events_total", map[string]string{"kind": "ConfigMap", "change": "metadata"}) > before, nil
	})
	assert.Equal(t, 0, s.rollouts())
	assert.Equal(t, 0, s.controllerRollouts())
}

// ---- S10 ----

func TestS10RequiredConfigDeleted(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	mark := s.ctrl.obs.mark()
	ctx := context.Background()
	require.NoError(t, s.cs.CoreV1().ConfigMaps(s.ns).Delete(ctx, "app-config", metav1.DeleteOptions{}))
	_, next := s.ctrl.obs.waitFor(t, mark, "missing config", is("Deployment", "missing_config"))
	ev := s.waitEvent(workloadName, controller.EventReasonConfigMissing)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, fmt.Sprintf("required ConfigMap %s/app-config missing; not rolling until it exists", s.ns), ev.Note)
	eventually(t, "the missing-config gauge", func(context.Context) (bool, error) {
		return s.ctrl.metric("confighash_workloads_missing_config", nil) == 1, nil
	})
	assert.Equal(t, 0, s.rollouts(), "no rollout while missing")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: s.ns},
		Data: map[string]string{"LOG_LEVEL": "error", "UNUSED": "1", "site.conf": "listen 8080\n"}}
	_, err := s.cs.CoreV1().ConfigMaps(s.ns).Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	s.expectRoll(next)
	assert.Equal(t, 1, s.rollouts(), "re-created with different content")
	assert.InDelta(t, 0.0, s.ctrl.metric("confighash_workloads_missing_config", nil), 0)
	evs := s.events(workloadName, controller.EventReasonConfigChanged)
	require.NotEmpty(t, evs)
	assert.Equal(t, fmt.Sprintf("ConfigMap %s/app-config created; rolling", s.ns), evs[len(evs)-1].Note)
}

// ---- beyond the table ----

// A Secret rewritten in a loop must not create a ReplicaSet per write: the
// per-workload interval bounds the rollouts, and the last state is rolled.
func TestChurnGuard(t *testing.T) {
	t.Parallel()
	const interval, loop = 3 * time.Second, 4 * time.Second
	s := setup(t, "Deployment", func(o *controller.Options) {
		o.CoalesceWindow, o.MinRollInterval = 300*time.Millisecond, interval
	})
	mark := s.ctrl.obs.mark()
	var rv string
	writes := 0
	start := time.Now()
	for ; time.Since(start) < loop; writes++ {
		rv = s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(fmt.Sprint("pw-loop-", writes)) })
		time.Sleep(100 * time.Millisecond) // the loop being simulated writes every 100ms
	}
	s.ctrl.obs.waitFor(t, mark, "in sync with the last write", func(o controller.Outcome) bool {
		return is("Deployment", "in_sync")(o) && o.ConfigVersions["Secret/db-creds"] == rv
	})
	got := s.rollouts()
	// One roll per interval while the controller sees the loop's writes,
	// and one for the last state. The span runs to the first reconcile
	// that read the last write, not to the loop's end: on a loaded machine
	// the controller sees the writes late and rolls on after the loop.
	span := s.firstSeen(mark, "Secret/db-creds", rv).Sub(start)
	bound := int(math.Ceil(float64(span)/float64(interval))) + 1
	t.Logf("%d writes in %s (seen by the controller after %s) gave %d rollouts (bound %d)", writes, loop, span.Round(time.Millisecond), got, bound)
	assert.LessOrEqual(t, got, bound)
	assert.GreaterOrEqual(t, got, 2, "the first change and the last state")
}

// --dry-run reports what it would roll and writes nothing.
func TestDryRun(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment", func(o *controller.Options) { o.DryRun = true })
	generation := s.deployment(workloadName).Generation
	mark := s.ctrl.obs.mark()
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
	s.ctrl.obs.waitFor(t, mark, "would roll", is("Deployment", "would_roll"))
	assert.InDelta(t, 1.0, s.ctrl.metric("confighash_rollouts_total", map[string]string{"dry_run": "true"}), 0)
	assert.Equal(t, 0, s.rollouts())
	// The resourceVersion moves with the deployment controller's status
	// updates; the controller's own writes would show in its field manager.
	d := s.deployment(workloadName)
	assert.Equal(t, generation, d.Generation, "the pod template was not written")
	for _, mf := range d.ManagedFields {
		assert.NotEqual(t, "confighash-controller", mf.Manager, "nothing written by the controller")
	}
	assert.NotContains(t, d.Annotations, "confighash.dev/external-baseline")
	assert.Empty(t, s.events(workloadName, controller.EventReasonConfigChanged))
}

// annotations of the scenario's workload.
type workloadAnnotations struct{ meta, template map[string]string }

func (s *scenario) workloadAnnotations() workloadAnnotations {
	s.t.Helper()
	ctx := context.Background()
	switch s.kind {
	case "StatefulSet":
		o, err := s.cs.AppsV1().StatefulSets(s.ns).Get(ctx, workloadName, metav1.GetOptions{})
		require.NoError(s.t, err)
		return workloadAnnotations{o.Annotations, o.Spec.Template.Annotations}
	case "DaemonSet":
		o, err := s.cs.AppsV1().DaemonSets(s.ns).Get(ctx, workloadName, metav1.GetOptions{})
		require.NoError(s.t, err)
		return workloadAnnotations{o.Annotations, o.Spec.Template.Annotations}
	}
	o := s.deployment(workloadName)
	return workloadAnnotations{o.Annotations, o.Spec.Template.Annotations}
}

// The keyed mode end to end: rendered with bin/confighash --hmac-key-file,
// the controller with the same key computes the same value (S1) and rolls on
// an edit (S4). A controller with another key (it tells by the key id
// written next to the hash) cannot compare the hash: it treats every config
// as external and records baselines, never rolls for it, and still rolls on
// a real edit. A controller without a key leaves the workload alone: its
// records would hold plain hashes of the Secrets (TestKeyModeMismatch).
func TestKeyedMode(t *testing.T) {
	key := []byte("a-key-only-the-deployer-knows")
	dir := t.TempDir()
	keyFile, otherKeyFile := filepath.Join(dir, "key"), filepath.Join(dir, "other-key")
	require.NoError(t, os.WriteFile(keyFile, append(key, '\n'), 0o600))
	require.NoError(t, os.WriteFile(otherKeyFile, []byte("another-key\n"), 0o600))
	for _, c := range []struct {
		name, controllerKey string
		parity              bool
	}{
		{"controller-keyed=true", keyFile, true},
		{"controller-other-key", otherKeyFile, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := &scenario{env: e, kind: "Deployment"}
			e.createSecret("db-creds", map[string]string{"password": "pw-1"})
			s.rendered = render(t, e.stream(defaultApp("Deployment")), "--hmac-key-file", keyFile)
			require.Contains(t, s.rendered, "confighash.dev/hash: v1-hmac-sha256:")
			// The render quotes a key id that could read as a number; either way it is this string.
			require.Regexp(t, `confighash\.dev/key-id: "?`+hashing.KeyID(key)+`"?\n`, s.rendered)
			opts := e.testOptions()
			opts.HMACKeyFile = c.controllerKey
			s.ctrl = e.start(opts)
			require.NoError(t, e.apply(s.rendered, "kubectl"))
			o, _ := s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
			if c.parity {
				assert.Equal(t, o.Input.RenderHash, o.Input.LiveIn, "keyed parity")
			} else {
				assert.Empty(t, o.Input.RenderHash, "a keyed render hash is unknown to a controller without the key")
				assert.Contains(t, s.workloadAnnotations().meta["confighash.dev/external-baseline"], "ConfigMap/app-config=v1-")
			}
			assert.Equal(t, 0, s.rollouts())
			mark := s.ctrl.obs.mark()
			s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
			s.expectRoll(mark)
			assert.Equal(t, 1, s.rollouts())
			if c.controllerKey == otherKeyFile {
				assert.Contains(t, s.ctrl.logs.String(), "render-time hash made with another HMAC key")
			}
		})
	}
}

// Rotating the HMAC key: the controller's records (the external baseline,
// the controller hash) carry the key id, so records made under the old key
// are recorded again, not read as changes. The rotation costs the one
// rollout the new render's pod template brings, and the controller still
// rolls on a real edit afterwards.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyA, keyB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(keyA, []byte("the-old-key\n"), 0o600))
	require.NoError(t, os.WriteFile(keyB, []byte("the-new-key\n"), 0o600))
	e := newEnv(t)
	s := &scenario{env: e, kind: "Deployment"}
	e.createSecret("db-creds", map[string]string{"password": "pw-1"}) // external: not in the stream
	opts := e.testOptions()
	opts.HMACKeyFile = keyA
	s.ctrl = e.start(opts)
	require.NoError(t, e.apply(render(t, e.stream(defaultApp("Deployment")), "--hmac-key-file", keyA), "kubectl"))
	s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))

	// The controller rolls an out-of-band edit under key A.
	mark := s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
	s.expectRoll(mark)
	require.Equal(t, 1, s.rollouts())
	a := s.workloadAnnotations()
	require.True(t, strings.HasPrefix(a.meta["confighash.dev/external-baseline"], "key-id="+hashing.KeyID([]byte("the-old-key"))+","), a.meta)
	require.Equal(t, hashing.KeyID([]byte("the-old-key")), a.template["confighash.dev/controller-key-id"])

	// Rotate: stop the controller, apply the render made with key B (its
	// pod template changes: one rollout), start the controller with key B.
	s.ctrl.stop(t)
	require.NoError(t, e.apply(render(t, e.stream(defaultApp("Deployment")), "--hmac-key-file", keyB), "kubectl"))
	require.Equal(t, 2, s.rollouts(), "the new render's pod template")
	opts.HMACKeyFile = keyB
	s.ctrl = e.start(opts)
	o, _ := s.ctrl.obs.waitFor(t, 0, "in sync under key B", is("Deployment", "in_sync"))
	assert.Equal(t, o.Input.RenderHash, o.Input.LiveIn, "the new render's hash is the controller's")
	assert.Equal(t, 2, s.rollouts(), "no rollout of the controller's own for the rotation")
	assert.True(t, strings.HasPrefix(s.workloadAnnotations().meta["confighash.dev/external-baseline"], "key-id="+hashing.KeyID([]byte("the-new-key"))+","),
		"the baseline is recorded again under key B")

	mark = s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-3") })
	s.expectRoll(mark)
	assert.Equal(t, 3, s.rollouts(), "a real edit still rolls")
}

// Workloads nobody opted in, and one opted out with a stale render-time
// hash, are never touched when the config they consume changes.
func TestUnmanagedAndOptedOut(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	stale := `{confighash.dev/hash: "v1-sha256:0000000000000000000000000000000000000000000000000000000000000000"}`
	for name, ann := range map[string][2]string{
		"plain":     {"{}", "{}"},
		"opted-out": {`{confighash.dev/enabled: "false"}`, stale},
	} {
		require.NoError(t, s.apply(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  annotations: %[2]s
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata:
      labels: {app: %[1]s}
      annotations: %[3]s
    spec:
      containers:
      - name: app
        image: registry.invalid/app:1
        envFrom: [{configMapRef: {name: app-config}}]
`, name, ann[0], ann[1]), "kubectl"))
	}
	mark := s.ctrl.obs.mark()
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
	s.expectRoll(mark)
	assert.Equal(t, 1, s.rollouts())
	for _, name := range []string{"plain", "opted-out"} {
		assert.Equal(t, 1, s.revisions("Deployment", name), name)
		assert.Zero(t, s.ctrl.obs.count(0, func(o controller.Outcome) bool { return o.Request.Name == name && o.Result != "unmanaged" }), name)
	}
}
