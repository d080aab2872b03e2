package controller_test

import (
	"context"
	"fmt"
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
	"github.com/confighash/confighash/internal/testing/testtools"
)

// What operators type, run with the real kubectl of the control plane's
// release (bin/kubectl, `make controlplane`) against the local control
// plane, with the in-process controller watching the namespace: each
// action's rollouts (new ReplicaSets and ControllerRevisions) and the
// controller's outcomes and Events, against docs/controller.md.

// kubectl runs bin/kubectl in the scenario's namespace with the admin
// kubeconfig and the environment env added; it fails the test unless
// kubectl exits 0 and returns its standard output.
func (s *scenario) kubectl(env []string, stdin string, args ...string) string {
	s.t.Helper()
	env = append([]string{"KUBECONFIG=" + s.cp.KubeconfigPath()}, env...)
	res := testtools.Run(s.t, "", env, []byte(stdin), testtools.Tool(s.t, "kubectl"), append([]string{"-n", s.ns}, args...)...)
	require.Zero(s.t, res.ExitCode, "kubectl %s: %s", strings.Join(args, " "), res.Stderr)
	return res.Stdout
}

// editLogLevel is an out-of-band edit of the in-stream ConfigMap's
// consumed key LOG_LEVEL, with kubectl patch.
func (s *scenario) editLogLevel(value string) {
	s.t.Helper()
	s.kubectl(nil, "", "patch", "configmap", "app-config", "-p", fmt.Sprintf(`{"data":{"LOG_LEVEL":%q}}`, value))
}

// createAppConfig is `kubectl create configmap app-config` of the app's
// keys with LOG_LEVEL logLevel; with dryRun it only prints the manifest
// (the config-update idiom pipes it to kubectl apply).
func (s *scenario) createAppConfig(logLevel string, dryRun bool) string {
	s.t.Helper()
	args := []string{"create", "configmap", "app-config", "--from-literal=LOG_LEVEL=" + logLevel,
		"--from-literal=UNUSED=1", "--from-literal=site.conf=listen 8080\n"}
	if dryRun {
		args = append(args, "--dry-run=client", "-o", "yaml")
	}
	return s.kubectl(nil, "", args...)
}

// rolledOnce waits for the controller to roll after since, with reason,
// and checks there are then want rollouts in all, of which wantOwn the
// controller's.
func (s *scenario) rolledOnce(since int, reason controller.Reason, want, wantOwn int) controller.Outcome {
	s.t.Helper()
	rolled := s.expectRoll(since)
	assert.Equal(s.t, reason, rolled.Decision.Reason)
	assert.Equal(s.t, want, s.rollouts(), "rollouts")
	assert.Equal(s.t, wantOwn, s.controllerRollouts(), "rolls of the controller's own")
	return rolled
}

// rolledForEdit edits, with kubectl patch, the in-stream ConfigMap's
// LOG_LEVEL (config "ConfigMap") or the external Secret's password
// ("Secret"), and checks that the controller rolls the workload once.
func (s *scenario) rolledForEdit(config string) controller.Outcome {
	s.t.Helper()
	mark := s.ctrl.obs.mark()
	if config == "ConfigMap" {
		s.editLogLevel("warn")
		return s.rolledOnce(mark, controller.ReasonRenderMismatch, 1, 1)
	}
	s.kubectl(nil, "", "patch", "secret", "db-creds", "-p", `{"stringData":{"password":"pw-2"}}`)
	return s.rolledOnce(mark, controller.ReasonExternalChanged, 1, 1)
}

// withoutRecord waits for the first decision after since on the workload
// without the controller's record on its pod template (what an undo or a
// replace leaves), other than waiting out a coalescing window or finding
// a deleted workload gone; it returns the decision and the position after
// it.
func (s *scenario) withoutRecord(since int, what string) (controller.Outcome, int) {
	s.t.Helper()
	return s.ctrl.obs.waitFor(s.t, since, "a decision on "+what, func(o controller.Outcome) bool {
		return o.Request.Name == workloadName && o.Input.ControllerHash == "" && o.Result != "waiting" && o.Result != "gone"
	})
}

// kubectl rollout undo of the rollout the controller made for an edit,
// with the real kubectl: the outcome TestRolloutUndo has with its
// client-go simulation of the undo. A Deployment rolls forward once (to
// the template of the controller's own roll, no new ReplicaSet); a
// StatefulSet's undo after an external edit stands. For an external
// Secret the decision after the undo shows the baseline the undo left: a
// Deployment's is the one from before the edit (kubectl copied the old
// ReplicaSet's annotations), a StatefulSet's the live one.
func TestKubectlRolloutUndo(t *testing.T) {
	for _, row := range []string{"Deployment/ConfigMap", "Deployment/Secret", "StatefulSet/ConfigMap", "StatefulSet/Secret"} {
		kind, config, _ := strings.Cut(row, "/")
		forward := 1
		if row == "StatefulSet/Secret" {
			forward = 0 // the undo stands
		}
		t.Run(row, func(t *testing.T) {
			t.Parallel()
			s := setup(t, kind)
			before := s.ctrl.obs.last(workloadName).Input.Baseline["Secret/db-creds"]
			require.NotEmpty(t, before)
			rolled := s.rolledForEdit(config)
			rolledTemplate := s.workloadAnnotations().template

			mark := s.ctrl.obs.mark()
			out := s.kubectl(nil, "", "rollout", "undo", strings.ToLower(kind)+"/"+workloadName)
			assert.Contains(t, out, "rolled back")
			decided, _ := s.withoutRecord(mark, "the undone template")
			t.Logf("after kubectl rollout undo: %s (%s), changed %v", decided.Result, decided.Decision.Reason, decided.Decision.Changed)
			if config == "Secret" {
				live := rolled.Input.LiveExternal["Secret/db-creds"]
				want := map[string]string{"Deployment": before, "StatefulSet": live}[kind]
				assert.Equal(t, want, decided.Input.Baseline["Secret/db-creds"], "the baseline the undo left (before the edit %s, live %s)", before, live)
			}
			if forward == 0 {
				assert.Equal(t, "in_sync", decided.Result, "the undo stands")
			} else {
				require.Equal(t, "rolled", decided.Result, "rolled forward")
				s.ctrl.obs.waitFor(t, mark, "in sync after the roll forward", is(kind, "in_sync"))
				assert.Equal(t, rolledTemplate, s.workloadAnnotations().template, "the template of the controller's first roll")
			}
			assert.Equal(t, 1+forward, s.controllerRollouts(), "rolls of the controller's own")
			assert.Equal(t, 2, s.revisions(kind, workloadName), "no revision beyond the render's and the controller's roll")
			assert.Len(t, s.events(workloadName, controller.EventReasonConfigChanged), 1+forward, "a ConfigChanged Event per roll")

			// Settled: the next reconcile is in sync and rolls nothing.
			mark = s.ctrl.obs.mark()
			s.kubectl(nil, "", "annotate", strings.ToLower(kind)+"/"+workloadName, "team=after-undo")
			s.ctrl.obs.waitFor(t, mark, "in sync after the undo", is(kind, "in_sync"))
			assert.Equal(t, 1+forward, s.controllerRollouts(), "no further roll")
		})
	}
}

// kubectl rollout restart changes the pod template and nothing the pods
// consume: one rollout, the workload controller's, and the controller
// finds the workload in sync. Within one coalescing window of a config
// edit, docs/controller.md's known limits say two rollouts: the restart's
// pods already read the new config, but the controller cannot tell.
func TestKubectlRolloutRestart(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		edit       bool
	}{
		{"alone/Deployment", "Deployment", false},
		{"alone/StatefulSet", "StatefulSet", false},
		{"with-an-edit/Deployment", "Deployment", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// A window that the two kubectl commands fit in on a busy machine.
			s := setup(t, c.kind, func(o *controller.Options) { o.CoalesceWindow = 4 * testWindow })
			mark := s.ctrl.obs.mark()
			if c.edit {
				s.editLogLevel("warn")
			}
			restarted := time.Now()
			s.kubectl(nil, "", "rollout", "restart", strings.ToLower(c.kind)+"/"+workloadName)
			require.Contains(t, s.workloadAnnotations().template, "kubectl.kubernetes.io/restartedAt")
			if !c.edit {
				s.ctrl.obs.waitFor(t, mark, "in sync after the restart", is(c.kind, "in_sync"))
				assert.Equal(t, 1, s.rollouts(), "the restart's rollout only")
				assert.Zero(t, s.controllerRollouts())
				return
			}
			_, next := s.ctrl.obs.waitFor(t, mark, "a roll", is(c.kind, "rolled"))
			t.Logf("the controller rolled %s after the restart (window %s)", s.ctrl.obs.at(next-1).Sub(restarted).Round(time.Millisecond), 4*testWindow)
			s.rolledOnce(mark, controller.ReasonRenderMismatch, 2, 1)
			assert.Equal(t, fmt.Sprintf("ConfigMap %s/app-config key LOG_LEVEL changed; rolling", s.ns),
				s.waitEvent(workloadName, controller.EventReasonConfigChanged).Note)
		})
	}
}

// The config-update idiom of kubectl's documentation, `kubectl create
// configmap … --dry-run=client -o yaml | kubectl apply -f -`, client-side
// (the last-applied annotation) and server-side, over the render's
// ConfigMap, and the same for the external Secret: one roll of the
// readers; the same command again writes nothing (and so rolls nothing).
func TestKubectlConfigUpdateIdiom(t *testing.T) {
	for _, c := range []struct {
		name  string
		apply []string
	}{
		{"ConfigMap/client-side", []string{"apply", "-f", "-"}},
		{"ConfigMap/server-side", []string{"apply", "--server-side", "-f", "-"}},
		{"Secret/client-side", []string{"apply", "-f", "-"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			manifest := s.createAppConfig("debug", true)
			ref, reason, note := "ConfigMap/app-config", controller.ReasonRenderMismatch, "ConfigMap %s/app-config key LOG_LEVEL changed; rolling"
			if strings.HasPrefix(c.name, "Secret/") {
				manifest = s.kubectl(nil, "", "create", "secret", "generic", "db-creds", "--from-literal=password=pw-2", "--from-literal=user=app",
					"--dry-run=client", "-o", "yaml")
				ref, reason, note = "Secret/db-creds", controller.ReasonExternalChanged, "Secret %s/db-creds key password changed; rolling"
			}
			mark := s.ctrl.obs.mark()
			t.Log(strings.TrimSpace(s.kubectl(nil, manifest, c.apply...)))
			rolled := s.rolledOnce(mark, reason, 1, 1)
			assert.Equal(t, fmt.Sprintf(note, s.ns), s.waitEvent(workloadName, controller.EventReasonConfigChanged).Note)

			rv := rolled.ConfigVersions[ref]
			t.Log(strings.TrimSpace(s.kubectl(nil, manifest, c.apply...)))
			live := s.configMapVersion("app-config")
			if strings.HasPrefix(c.name, "Secret/") {
				sec, err := s.cs.CoreV1().Secrets(s.ns).Get(context.Background(), "db-creds", metav1.GetOptions{})
				require.NoError(t, err)
				live = sec.ResourceVersion
			}
			assert.Equal(t, rv, live, "the same command again writes nothing, so nothing can roll")
			assert.Equal(t, 1, s.rollouts())
		})
	}
}

// The render itself applied with client-side kubectl apply (the last-applied
// annotation, a three-way merge), an out-of-band edit rolled by the
// controller, then the same kubectl apply again: the merge leaves the
// controller's annotations alone (they are in neither the last-applied copy
// nor the file). After an edit of the external Secret the apply changes
// nothing: no roll, no fight. After an edit of the in-stream ConfigMap the
// apply puts the render's value back, which is an edit too: the controller
// rolls once more, onto the render's content. Then a new render with a
// changed value rolls once, by its hash, and the controller not again.
func TestKubectlClientSideApplyOfTheRender(t *testing.T) {
	for _, c := range []struct {
		name   string
		revert int // rolls of the controller when the apply is repeated
	}{
		{"external-Secret", 0},
		{"in-stream-ConfigMap", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := &scenario{env: e, kind: "Deployment", rendered: render(t, e.stream(defaultApp("Deployment")))}
			e.createSecret("db-creds", map[string]string{"password": "pw-1", "user": "app"})
			s.ctrl = e.start(e.testOptions())
			s.kubectl(nil, s.rendered, "apply", "-f", "-")
			s.ctrl.obs.waitFor(t, 0, "in sync after the first apply", is("Deployment", "in_sync"))
			require.Zero(t, s.rollouts())
			require.Contains(t, s.deployment(workloadName).Annotations, corev1.LastAppliedConfigAnnotation)

			mark := s.ctrl.obs.mark()
			if c.revert == 0 {
				s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
			} else {
				s.editLogLevel("warn")
			}
			s.expectRoll(mark)
			rolled := s.workloadAnnotations()
			require.Contains(t, rolled.template, "confighash.dev/controller-hash")

			mark = s.ctrl.obs.mark()
			out := s.kubectl(nil, s.rendered, "apply", "-f", "-")
			t.Log(strings.TrimSpace(out))
			assert.Contains(t, out, "deployment.apps/web unchanged", "the three-way merge keeps the controller's annotations")
			if c.revert == 0 {
				// kubectl reports the Secret of the render "configured" at
				// every apply (its stringData is never stored), but it holds
				// the same content.
				assert.Contains(t, out, "configmap/app-config unchanged")
			} else {
				assert.Contains(t, out, "configmap/app-config configured")
				s.rolledOnce(mark, controller.ReasonChangedSinceRoll, 2, 2)
			}
			after := s.workloadAnnotations()
			for _, k := range []string{"confighash.dev/hash", "confighash.dev/controller-base"} {
				assert.Equal(t, rolled.template[k], after.template[k], k)
			}
			assert.Equal(t, 1+c.revert, s.rollouts(), "rollouts")
			assert.Equal(t, 1+c.revert, s.controllerRollouts())

			// A new render with a changed value, applied the same way.
			changed := defaultApp("Deployment")
			changed.logLevel = "debug"
			rerendered := render(t, s.stream(changed))
			mark = s.ctrl.obs.mark()
			s.kubectl(nil, rerendered, "apply", "-f", "-")
			hash := s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
			require.NotEqual(t, rolled.template["confighash.dev/hash"], hash)
			s.ctrl.obs.waitFor(t, mark, "in sync with the new render", func(o controller.Outcome) bool {
				return is("Deployment", "in_sync")(o) && o.Input.RenderHash == hash && o.Input.LiveIn == hash
			})
			assert.Equal(t, 2+c.revert, s.rollouts(), "the new render's rollout")
			assert.Equal(t, 1+c.revert, s.controllerRollouts(), "none of the controller's own")
		})
	}
}

// kubectl edit, non-interactive (KUBE_EDITOR rewrites one value), of the
// in-stream ConfigMap and of the external Secret (its base64): one roll,
// with a ConfigChanged Event naming the key.
func TestKubectlEdit(t *testing.T) {
	for _, c := range []struct {
		object, from, to, note string
		reason                 controller.Reason
	}{
		{"configmap/app-config", "LOG_LEVEL: info", "LOG_LEVEL: warn", "ConfigMap %s/app-config key LOG_LEVEL changed; rolling", controller.ReasonRenderMismatch},
		{"secret/db-creds", "password: cHctMQ==", "password: cHctMg==", "Secret %s/db-creds key password changed; rolling", controller.ReasonExternalChanged},
	} {
		t.Run(c.object, func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			editor := filepath.Join(t.TempDir(), "editor")
			script := fmt.Sprintf("#!/bin/sh\ngrep -q '^  %s$' \"$1\" || exit 3\nsed -i 's/^  %s$/  %s/' \"$1\"\n", c.from, c.from, c.to)
			require.NoError(t, os.WriteFile(editor, []byte(script), 0o700))
			mark := s.ctrl.obs.mark()
			out := s.kubectl([]string{"KUBE_EDITOR=" + editor, "EDITOR="}, "", "edit", c.object)
			assert.Contains(t, out, c.object+" edited")
			s.rolledOnce(mark, c.reason, 1, 1)
			assert.Equal(t, fmt.Sprintf(c.note, s.ns), s.waitEvent(workloadName, controller.EventReasonConfigChanged).Note)
		})
	}
}

// kubectl delete configmap, then kubectl create configmap with new content:
// while it is missing, no rollout and, once that has lasted a coalescing
// window, a ConfigMissing Warning; created again, one roll.
func TestKubectlRecreateConfigMap(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	mark := s.ctrl.obs.mark()
	s.kubectl(nil, "", "delete", "configmap", "app-config")
	_, next := s.ctrl.obs.waitFor(t, mark, "missing config", is("Deployment", "missing_config"))
	ev := s.waitEvent(workloadName, controller.EventReasonConfigMissing)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, fmt.Sprintf("required ConfigMap %s/app-config missing; not rolling until it exists", s.ns), ev.Note)
	assert.Zero(t, s.rollouts(), "no rollout while missing")

	s.createAppConfig("error", false)
	s.rolledOnce(next, controller.ReasonRenderMismatch, 1, 1)
	evs := s.events(workloadName, controller.EventReasonConfigChanged)
	require.Len(t, evs, 1)
	assert.Equal(t, fmt.Sprintf("ConfigMap %s/app-config created; rolling", s.ns), evs[0].Note)
	assert.InDelta(t, 0.0, s.ctrl.metric("confighash_workloads_missing_config", nil), 0)
}

// kubectl commands on the rendered Deployment itself. A pod-template change
// by hand rolls the Deployment once, by the Deployment controller, and the
// controller adds no roll: set image changes nothing the pods consume; set
// env --from adds uses the render-time hash does not cover (another
// ConfigMap, or another key of the render's ConfigMap), whose content the
// new pods read, so the controller records a render baseline (the rule 3
// exception: the same render-time hash with a pod spec that consumes
// other configs or keys). scale and annotate change no pod template and
// roll nothing. The controller still manages the workload afterwards: an
// edit of a consumed key rolls it once.
func TestKubectlWorkloadCommands(t *testing.T) {
	for _, c := range []struct {
		name     string
		args     []string
		template int // rollouts by the command
		recorded bool
		edit     []string // kubectl patch of a consumed key afterwards
	}{
		{"set-env-from-another-configmap", []string{"set", "env", "deployment/web", "--from=configmap/other"}, 1, true,
			[]string{"configmap", "other", "-p", `{"data":{"COLOR":"green"}}`}},
		{"set-env-from-an-unconsumed-key", []string{"set", "env", "deployment/web", "--from=configmap/app-config", "--keys=UNUSED"}, 1, true,
			[]string{"configmap", "app-config", "-p", `{"data":{"UNUSED":"2"}}`}},
		{"set-image", []string{"set", "image", "deployment/web", "app=registry.invalid/app:2"}, 1, false, nil},
		{"scale", []string{"scale", "deployment/web", "--replicas=3"}, 0, false, nil},
		{"annotate", []string{"annotate", "deployment/web", "team=payments"}, 0, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			s.kubectl(nil, "", "create", "configmap", "other", "--from-literal=COLOR=blue")
			mark := s.ctrl.obs.mark()
			s.kubectl(nil, "", c.args...)
			if c.recorded {
				s.renderStarted(mark, s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"])
			}
			if c.template > 0 {
				s.ctrl.obs.waitFor(t, mark, "a decision after kubectl "+c.args[0], func(o controller.Outcome) bool {
					return o.Request.Name == workloadName && o.Result != "waiting"
				})
			}
			s.waitIdle(mark)
			assert.Equal(t, c.template, s.rollouts(), "rollouts after kubectl %s", c.args[0])
			assert.Zero(t, s.controllerRollouts(), "rolls of the controller's own")

			mark = s.ctrl.obs.mark()
			if c.edit == nil {
				s.editLogLevel("warn")
			} else {
				s.kubectl(nil, "", append([]string{"patch"}, c.edit...)...)
			}
			s.expectRoll(mark)
			assert.Equal(t, c.template+1, s.rollouts(), "an edit after kubectl %s", c.args[0])
			assert.Equal(t, 1, s.controllerRollouts())
		})
	}
}

// waitIdle waits until the controller's latest outcome for the workload
// since since, if any, is a final one (not waiting out a coalescing window).
func (s *scenario) waitIdle(since int) {
	s.t.Helper()
	eventually(s.t, "the controller to settle", func(context.Context) (bool, error) {
		if s.ctrl.obs.mark() == since {
			return true, nil
		}
		r := s.ctrl.obs.last(workloadName).Result
		return r != "waiting" && r != "rolled", nil
	})
}

// kubectl replace --force -f of the render's Deployment after the
// controller rolled it: kubectl deletes the Deployment and creates it from
// the file, a new object with the render's pod template and none of the
// controller's records, whose pods start on the live content. The
// controller records baselines and does not roll it (before, after an edit
// of an in-stream ConfigMap, it rolled the new Deployment once more, as
// after a kubectl replace without --force). A config written after the
// creation, which its pods may not have read, still rolls it once; so does
// a later edit.
func TestKubectlReplaceForce(t *testing.T) {
	for _, row := range []string{"Secret", "ConfigMap", "ConfigMap/edited-after-the-replace"} {
		config, _, after := strings.Cut(row, "/") // after: the ConfigMap edited again right after the replace
		t.Run(row, func(t *testing.T) {
			t.Parallel()
			s := setup(t, "Deployment")
			s.rolledForEdit(config)
			uid := s.deployment(workloadName).UID

			file := filepath.Join(t.TempDir(), "web.yaml")
			require.NoError(t, os.WriteFile(file, []byte(docs(t, s.rendered, "Deployment")), 0o600))
			mark := s.ctrl.obs.mark()
			out := s.kubectl(nil, "", "replace", "--force", "-f", file)
			assert.Contains(t, out, "deployment.apps/web replaced")
			require.NotEqual(t, uid, s.deployment(workloadName).UID, "a new Deployment")
			rolls := 1
			if after {
				s.editLogLevel("error")
				rolls++
			}
			decided, next := s.withoutRecord(mark, "the new Deployment")
			t.Logf("the first decision on the new Deployment: %s (%s)", decided.Result, decided.Decision.Reason)
			if !after {
				assert.NotEqual(t, "rolled", decided.Result, "a new Deployment's pods start on the live content (decision %+v)", decided.Decision)
			}
			s.ctrl.obs.waitFor(t, next, "in sync after the replace", is("Deployment", "in_sync"))
			assert.Equal(t, rolls, s.revisions("Deployment", workloadName), "ReplicaSets of the new Deployment")
			assert.Equal(t, rolls, s.controllerRollouts(), "rolls of the controller's own")

			mark = s.ctrl.obs.mark()
			s.editLogLevel("debug")
			reason := controller.ReasonRenderMismatch
			if after {
				reason = controller.ReasonChangedSinceRoll
			}
			s.rolledOnce(mark, reason, rolls, rolls+1)
		})
	}
}
