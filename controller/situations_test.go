package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/kubetest"
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
	} {
		for _, rolledBefore := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/rolled-before=%t", c.name, rolledBefore), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				ctx := context.Background()
				_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"},
					Data: map[string]string{"A": "1", "B": "2"}}, metav1.CreateOptions{})
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
