package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/status"
)

// The render-baseline rule (docs/controller.md, rule 3) against the real
// control plane: once an in-stream config holds content the render does not
// (here a key another applier added to the in-stream Secret api-token,
// consumed whole), a new render's rollout is recorded in
// confighash.dev/render-baseline instead of rolled again. It must never
// miss a roll the pods need and never add one.

const (
	renderBaselineKey = "confighash.dev/render-baseline"
	// unrenderedKey is the key of api-token the render does not hold.
	unrenderedKey = "FILLED_AT_RUN_TIME"
)

// withUnrenderedKey is the Deployment scenario after another applier added
// unrenderedKey to api-token, which the controller rolled once (S4).
func withUnrenderedKey(t *testing.T, tune ...func(*controller.Options)) *scenario {
	t.Helper()
	s := setup(t, "Deployment", tune...)
	mark := s.ctrl.obs.mark()
	s.editSecret("api-token", func(sec *corev1.Secret) { sec.Data[unrenderedKey] = []byte("cert-1") })
	s.expectRoll(mark)
	require.Equal(t, 1, s.rollouts())
	return s
}

// applyRender renders app and applies the documents of kinds, in that
// order, as kubectl; it returns the workload's new render-time hash.
func (s *scenario) applyRender(app appConfig, kinds ...string) string {
	s.t.Helper()
	rendered := render(s.t, s.stream(app))
	require.NotEqual(s.t, s.rendered, rendered)
	s.rendered = rendered
	for _, kind := range kinds {
		require.NoError(s.t, s.apply(docs(s.t, rendered, kind), "kubectl"))
	}
	return s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
}

// debugRender applies the app re-rendered with LOG_LEVEL debug, its
// documents of kinds in that order (the stream's order when none); it
// returns the app and the new render-time hash.
func (s *scenario) debugRender(kinds ...string) (appConfig, string) {
	s.t.Helper()
	if len(kinds) == 0 {
		kinds = []string{"ConfigMap", "Secret", "Deployment"}
	}
	changed := defaultApp("Deployment")
	changed.logLevel = "debug"
	return changed, s.applyRender(changed, kinds...)
}

// renderStarted waits for the controller to record the render baseline of
// the render-time hash hash and checks the annotation it wrote.
func (s *scenario) renderStarted(since int, hash string) controller.Outcome {
	s.t.Helper()
	o, _ := s.ctrl.obs.waitFor(s.t, since, "the render baseline of "+hash, isRenderStarted(hash))
	eventually(s.t, "the render baseline on the workload", func(context.Context) (bool, error) {
		return s.workloadAnnotations().meta[renderBaselineKey] == controller.FormatRenderBaseline(hash, o.Input.LiveIn), nil
	})
	return o
}

// isRenderStarted matches the record of the render baseline of the
// render-time hash hash.
func isRenderStarted(hash string) func(controller.Outcome) bool {
	return func(o controller.Outcome) bool {
		return is("Deployment", "baseline_recorded")(o) && o.Decision.Reason == controller.ReasonRenderStarted && o.Input.RawRenderHash == hash
	}
}

// recordedRender is withUnrenderedKey after debugRender, its render
// baseline recorded.
func recordedRender(t *testing.T, tune ...func(*controller.Options)) (*scenario, appConfig, string) {
	t.Helper()
	s := withUnrenderedKey(t, tune...)
	mark := s.ctrl.obs.mark()
	changed, hash := s.debugRender()
	s.renderStarted(mark, hash)
	return s, changed, hash
}

// decidedAt waits for the first decision after since (a roll, in sync or a
// record, not a wait) that read config ref at resourceVersion rv.
func (s *scenario) decidedAt(since int, ref, rv string) controller.Outcome {
	s.t.Helper()
	o, _ := s.ctrl.obs.waitFor(s.t, since, fmt.Sprintf("a decision having read %s at resourceVersion %s", ref, rv), func(o controller.Outcome) bool {
		return o.Request.Name == workloadName && o.ConfigVersions[ref] == rv &&
			(o.Result == "rolled" || o.Result == "in_sync" || o.Result == "baseline_recorded")
	})
	return o
}

// current waits until the controller's latest outcome for the workload is
// in sync and `kubectl confighash status` agrees (current, the same live
// hash), then checks that a render baseline on the workload, if any, is the
// live in-stream content.
func (s *scenario) current() {
	s.t.Helper()
	var last controller.Outcome
	eventually(s.t, "the controller in sync and status current", func(ctx context.Context) (bool, error) {
		last = s.ctrl.obs.last(workloadName)
		if last.Result != "in_sync" {
			return false, nil
		}
		r, err := status.Collect(ctx, s.cs, status.Options{Namespace: s.ns})
		if err != nil || len(r.Workloads) != 1 {
			return false, err
		}
		w := r.Workloads[0]
		return w.Config == status.ConfigCurrent && w.LiveHash == last.Input.LiveAll && w.Reason == string(last.Decision.Reason), nil
	})
	if rb := s.workloadAnnotations().meta[renderBaselineKey]; strings.HasPrefix(rb, last.Input.RawRenderHash+"=") {
		assert.Equal(s.t, controller.FormatRenderBaseline(last.Input.RawRenderHash, last.Input.LiveIn), rb, "the render baseline is the live content")
	}
}

// last is the latest outcome for the workload name.
func (o *observer) last(name string) controller.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.list) - 1; i >= 0; i-- {
		if o.list[i].Request.Name == name {
			return o.list[i]
		}
	}
	return controller.Outcome{}
}

// An out-of-band edit of api-token shortly after a render apply that moved
// the hash (before the controller records the render baseline, and after):
// exactly one more roll, onto the edited content. The edit either changes a
// consumed key or takes back the key the render does not hold, which brings
// the live content to the render's own hash while the pods the render
// started hold the key. Only that edit made within the coalescing window of
// the render, before the record, coalesces with it (the render's content
// is live, as for any edit in the window): no roll.
func TestRenderBaselineEditAfterRender(t *testing.T) {
	edits := []struct {
		name   string
		revert bool
		edit   func(sec *corev1.Secret)
	}{
		{"consumed key", false, func(sec *corev1.Secret) { sec.Data["token"] = []byte("tok-edited") }},
		{"unrendered key removed", true, func(sec *corev1.Secret) { delete(sec.Data, unrenderedKey) }},
	}
	for _, gap := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 2 * testWindow} {
		for _, edit := range edits {
			t.Run(fmt.Sprintf("%s after %s", edit.name, gap), func(t *testing.T) {
				t.Parallel()
				s := withUnrenderedKey(t)
				mark := s.ctrl.obs.mark()
				_, hash := s.debugRender()
				applied := time.Now()
				if gap > testWindow {
					s.renderStarted(mark, hash)
				}
				// A wall-clock gap by design: the edit lands this long after the render.
				time.Sleep(time.Until(applied.Add(gap)))
				recorded := s.ctrl.obs.count(mark, isRenderStarted(hash)) > 0
				require.Equal(t, gap > testWindow, recorded, "the render baseline recorded before the edit")
				editMark := s.ctrl.obs.mark()
				rv := s.editSecret("api-token", edit.edit)
				o := s.decidedAt(editMark, "Secret/api-token", rv)
				assert.Equal(t, hash, o.Input.RawRenderHash)
				if edit.revert && !recorded {
					require.Equal(t, "in_sync", o.Result, "%s", o.Decision.Reason)
					assert.Equal(t, 2, s.rollouts(), "the added key, the render")
					assert.NotContains(t, s.workloadAnnotations().meta, renderBaselineKey)
					s.current()
					return
				}
				require.Equal(t, "rolled", o.Result, "the edit after the render: %s", o.Decision.Reason)
				s.ctrl.obs.waitFor(t, editMark, "in sync after the roll", is(s.kind, "in_sync"))
				assert.Equal(t, 3, s.rollouts(), "the added key, the render, the edit")
				ann := s.workloadAnnotations()
				assert.Equal(t, o.Decision.Record.ControllerHash, ann.template["confighash.dev/controller-hash"])
				assert.Equal(t, hash, ann.template["confighash.dev/controller-base"])
				assert.NotContains(t, ann.meta, renderBaselineKey, "the roll supersedes the render baseline")
				s.current()
			})
		}
	}
}

// The render's Deployment lands before its changed ConfigMap: the pods the
// template started read the old ConfigMap. The controller may roll once more
// (it cannot tell a render still landing from one that left the pods on old
// content, as before the rule), never more, and never ends stale; without
// content the render does not hold it adds nothing (S2).
func TestRenderBaselineDeploymentFirst(t *testing.T) {
	for _, unrendered := range []bool{true, false} {
		t.Run(fmt.Sprintf("unrendered key %v", unrendered), func(t *testing.T) {
			t.Parallel()
			var s *scenario
			before := 0
			if unrendered {
				s, before = withUnrenderedKey(t), 1
			} else {
				s = setup(t, "Deployment")
			}
			mark := s.ctrl.obs.mark()
			_, hash := s.debugRender("Deployment", "ConfigMap", "Secret")
			rv := s.configMapVersion("app-config")
			o := s.decidedAt(mark, "ConfigMap/app-config", rv)
			if unrendered {
				require.Equal(t, "rolled", o.Result, "%s", o.Decision.Reason)
				s.ctrl.obs.waitFor(t, mark, "in sync after the roll", is(s.kind, "in_sync"))
				assert.Equal(t, before+2, s.rollouts(), "the render and the controller")
			} else {
				require.Equal(t, "in_sync", o.Result, "%s", o.Decision.Reason)
				assert.Equal(t, before+1, s.rollouts(), "the render only (S2)")
				assert.NotContains(t, s.workloadAnnotations().meta, renderBaselineKey, "no record of content the render holds")
			}
			assert.Equal(t, hash, o.Input.RawRenderHash)
			s.current()
		})
	}
}

// configMapVersion is the resourceVersion of ConfigMap name now.
func (s *scenario) configMapVersion(name string) string {
	s.t.Helper()
	cm, err := s.cs.CoreV1().ConfigMaps(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(s.t, err)
	return cm.ResourceVersion
}

// The controller stopped during the render apply, started after (S6): one
// roll at most; an edit made while it was down after the apply is not lost.
func TestRenderBaselineControllerDownDuringRender(t *testing.T) {
	for _, edit := range []bool{false, true} {
		t.Run(fmt.Sprintf("edit while down %v", edit), func(t *testing.T) {
			t.Parallel()
			s := withUnrenderedKey(t)
			s.ctrl.stop(t)
			_, hash := s.debugRender()
			require.Equal(t, 2, s.rollouts())
			var rv string
			if edit {
				rv = s.editSecret("api-token", func(sec *corev1.Secret) { sec.Data[unrenderedKey] = []byte("cert-2") })
			}
			s.ctrl = s.start(s.testOptions())
			o := s.expectRoll(0)
			assert.Equal(t, hash, o.Input.RawRenderHash)
			if edit {
				assert.Equal(t, rv, o.ConfigVersions["Secret/api-token"], "the roll read the edit")
			}
			assert.Equal(t, 3, s.rollouts(), "one roll after the restart, the edit with it")
			assert.Equal(t, o.Decision.Record.ControllerHash, s.workloadAnnotations().template["confighash.dev/controller-hash"])
			s.current()
		})
	}
}

// A render baseline recorded, the render re-applied unchanged (S5): nothing.
// A second render change: its rollout only, recorded again.
func TestRenderBaselineReapplyThenChange(t *testing.T) {
	t.Parallel()
	s, changed, hash := recordedRender(t)
	assert.Equal(t, 2, s.rollouts())
	generation := s.deployment(workloadName).Generation
	recorded := s.workloadAnnotations().meta[renderBaselineKey]

	mark := s.ctrl.obs.mark()
	require.NoError(t, s.apply(s.rendered, "argocd-controller"), "the unchanged render again")
	require.NoError(t, s.apply(s.rendered, "kubectl"))
	assert.Equal(t, generation, s.deployment(workloadName).Generation, "no drift")
	assert.Equal(t, recorded, s.workloadAnnotations().meta[renderBaselineKey])
	assert.Equal(t, 2, s.rollouts())

	changed.logLevel = "warn"
	hash2 := s.applyRender(changed, "ConfigMap", "Secret", "Deployment")
	require.NotEqual(t, hash, hash2)
	s.renderStarted(mark, hash2)
	assert.Equal(t, 3, s.rollouts(), "the second render's rollout only")
	assert.Zero(t, s.ctrl.obs.count(mark, is(s.kind, "rolled")), "the controller rolled nothing")
	s.current()
}

// The render stops carrying the hash (a render without confighash): the
// controller leaves the workload alone, whose template change rolled it.
// The same render with confighash again brings back the hash the render
// baseline names: its rollout only; an edit then rolls once.
func TestRenderBaselineHashGoesAway(t *testing.T) {
	t.Parallel()
	s, changed, hash := recordedRender(t)
	rendered := s.rendered

	mark := s.ctrl.obs.mark()
	require.NoError(t, s.apply(s.stream(changed), "kubectl"), "the stream without confighash")
	require.Empty(t, s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"])
	s.ctrl.obs.waitFor(t, mark, "the workload left alone", is(s.kind, "unmanaged"))
	assert.Equal(t, 3, s.rollouts(), "the template change only")

	mark = s.ctrl.obs.mark()
	require.NoError(t, s.apply(rendered, "kubectl"), "the render again")
	require.Equal(t, hash, s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"])
	s.current()
	// The template is the second revision's again: the Deployment
	// controller rolls back onto its ReplicaSet, no new one.
	assert.Equal(t, 3, s.rollouts(), "the template change only")
	assert.Zero(t, s.ctrl.obs.count(mark, is(s.kind, "rolled")), "the controller rolled nothing")

	mark = s.ctrl.obs.mark()
	s.editSecret("api-token", func(sec *corev1.Secret) { sec.Data["token"] = []byte("tok-edited") })
	s.expectRoll(mark)
	assert.Equal(t, 4, s.rollouts())
	s.current()
}

// A render that changes what the pods consume (LOG_LEVEL read from UNUSED):
// its rollout only, recorded; an edit of the key now read rolls once, of the
// key no longer read nothing.
func TestRenderBaselineUsesChange(t *testing.T) {
	t.Parallel()
	s := withUnrenderedKey(t)
	mark := s.ctrl.obs.mark()
	stream := strings.Replace(s.stream(defaultApp("Deployment")), "key: LOG_LEVEL}", "key: UNUSED}", 1)
	rendered := render(t, stream)
	require.NoError(t, s.apply(rendered, "kubectl"))
	hash := s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
	s.renderStarted(mark, hash)
	assert.Equal(t, 2, s.rollouts())

	mark = s.ctrl.obs.mark()
	rv := s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "trace" })
	s.inSyncAt(mark, "ConfigMap/app-config", rv)
	assert.Equal(t, 2, s.rollouts(), "LOG_LEVEL is no longer read")
	rv = s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["UNUSED"] = "2" })
	o := s.decidedAt(mark, "ConfigMap/app-config", rv)
	require.Equal(t, "rolled", o.Result, "%s", o.Decision.Reason)
	s.ctrl.obs.waitFor(t, mark, "in sync after the roll", is(s.kind, "in_sync"))
	assert.Equal(t, 3, s.rollouts())
	s.current()
}

// A render that leaves the render-time hash as it was but changes what the
// pods consume outside it (a pull Secret added, as a helm upgrade setting
// gatekeeper's image.pullSecrets after its rotator filled the webhook cert
// Secret the chart renders empty): its rollout only, recorded, as the pods
// it started read the live content; an edit of the Secret added then rolls
// once.
func TestRenderBaselineExternalUseAdded(t *testing.T) {
	t.Parallel()
	s := withUnrenderedKey(t)
	hash := s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
	mark := s.ctrl.obs.mark()
	stream := s.stream(defaultApp("Deployment"))
	added := strings.Replace(stream, "      containers:\n", "      imagePullSecrets: [{name: db-creds}]\n      containers:\n", 1)
	require.NotEqual(t, stream, added)
	require.NoError(t, s.apply(render(t, added), "kubectl"))
	require.Equal(t, hash, s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"], "the render-time hash")
	o, _ := s.ctrl.obs.waitFor(t, mark, "a decision on the render", func(o controller.Outcome) bool {
		return is(s.kind, "rolled")(o) || is(s.kind, "baseline_recorded")(o)
	})
	require.Equal(t, controller.ReasonRenderStarted, o.Decision.Reason, "%s", o.Result)
	s.renderStarted(mark, hash)
	assert.Equal(t, 2, s.rollouts(), "the added key, the render")
	assert.Zero(t, s.ctrl.obs.count(mark, is(s.kind, "rolled")), "the controller rolled")

	mark = s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("edited") })
	s.expectRoll(mark)
	assert.Equal(t, 3, s.rollouts(), "the added key, the render, the edit")
	s.current()
}

// An out-of-band edit the controller rolled, a new render, then the first
// render applied again (helm rollback to the revision the controller rolled
// under): the template is the controller's roll again, whose pods read the
// render's content, and the controller rolls once more, to write the live
// content in its record. Recording it elsewhere instead would leave the
// record on the template saying the edit: the edit made again would then be
// a roll that writes nothing new, missed. It rolls once, back onto the
// first roll's ReplicaSet.
func TestRenderBaselineRollbackToRolledRender(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	first := s.rendered
	edit := func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "trace" }
	mark := s.ctrl.obs.mark()
	s.editConfigMap("app-config", edit)
	edited := s.expectRoll(mark).Decision.Record.ControllerHash
	s.debugRender()
	s.current()
	require.Equal(t, 2, s.rollouts(), "the edit, the new render")

	mark = s.ctrl.obs.mark()
	require.NoError(t, s.apply(first, "kubectl"), "the first render again")
	o := s.expectRoll(mark)
	assert.Equal(t, controller.ReasonChangedSinceRoll, o.Decision.Reason)
	assert.Equal(t, 3, s.rollouts(), "the rollback onto the first roll's ReplicaSet, then the controller's")

	mark = s.ctrl.obs.mark()
	s.editConfigMap("app-config", edit)
	o = s.expectRoll(mark)
	assert.Equal(t, edited, o.Decision.Record.ControllerHash)
	assert.Equal(t, edited, s.workloadAnnotations().template["confighash.dev/controller-hash"])
	assert.Equal(t, 3, s.rollouts(), "the edit made again: back onto the first roll's ReplicaSet")
	s.current()
}
