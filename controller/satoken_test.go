package controller_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/cptest"
)

// tokenRef is the ServiceAccount token Secret of these tests, as a use.
const tokenRef = "Secret/robot-token"

// TestServiceAccountTokenFilledIn: a ServiceAccount token Secret is created
// without data and the token controller fills in token, ca.crt and
// namespace after; its reader never runs on the empty Secret. With the
// controller watching before the Secret and its reader exist, the filled
// content is the first baseline: no roll (S1). Deleting the Secret and
// creating it again, which gives a new token, rolls the reader once.
//
// With the reader first, the control plane's token controller fills the
// Secret in: the controller sees the empty Secret's creation and then the
// fill as watch events, whatever the timing. With the Secret first (as
// helm install orders them), the reader's first reconcile must read the
// empty Secret, so that control plane runs no token controller (it has no
// key to sign tokens with) and the test writes the token as it would, once
// the controller has read the Secret empty.
func TestServiceAccountTokenFilledIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		readerFirst bool // and the token controller fills the Secret in
	}{
		{name: "reader first, filled in by the token controller", readerFirst: true},
		{name: "Secret first, filled in once the controller read it empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e *env
			if tc.readerFirst {
				e = newEnv(t)
			} else {
				// kube-controller-manager runs the token controller
				// whatever --controllers says, unless it has no key to
				// sign tokens with.
				e = envOn(t, cptest.Private(t, controlplane.Options{ControllerManagerArgs: []string{"--service-account-private-key-file="}}))
			}
			_, err := e.cs.CoreV1().ServiceAccounts(e.ns).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			r := e.start(e.testOptions())
			w := optedIn(e, "web")
			w.EnvFrom = []string{"{secretRef: {name: robot-token}}"}
			next := 0
			if tc.readerFirst {
				require.NoError(t, e.apply(w.YAML(), "kubectl"))
				_, next = r.obs.waitFor(t, 0, "held back for the Secret", deploymentOutcome("web", "missing_config"))
			}
			filled := e.tokenSecret(r, next, !tc.readerFirst, "t1", func() { require.NoError(t, e.apply(w.YAML(), "kubectl")) })
			r.obs.waitFor(t, 0, "in sync with the token", inSyncHaving("web", tokenRef, filled))
			assert.Equal(t, 1, e.revisions("Deployment", "web"), "revisions after the token was filled in")
			assert.Zero(t, r.obs.count(0, deploymentOutcome("web", "rolled")), "rolls after the token was filled in")
			assert.Contains(t, e.deployment("web").Annotations["confighash.dev/external-baseline"], tokenRef+"=")

			mark := r.obs.mark()
			require.NoError(t, e.cs.CoreV1().Secrets(e.ns).Delete(context.Background(), "robot-token", metav1.DeleteOptions{}))
			_, next = r.obs.waitFor(t, mark, "held back for the deleted Secret", func(o controller.Outcome) bool {
				return deploymentOutcome("web", "missing_config")(o) && slices.Contains(o.Decision.Missing, tokenRef)
			})
			rotated := e.tokenSecret(r, next, !tc.readerFirst, "t2", nil)
			r.obs.waitFor(t, mark, "in sync with the new token", inSyncHaving("web", tokenRef, rotated))
			assert.Equal(t, 2, e.revisions("Deployment", "web"), "revisions after the token was rotated")
			assert.Equal(t, 1, r.obs.count(mark, deploymentOutcome("web", "rolled")), "rolls after the token was rotated")
		})
	}
}

// tokenSecret creates Secret robot-token of ServiceAccount robot, empty as
// a chart or kubectl creates it, then runs then (when not nil), and returns
// the resourceVersion of the Secret filled in. fill says the test fills it
// in with token, as the token controller does, once the controller has
// reconciled web on the empty Secret (it is held back for the token, and
// records nothing; kubectl confighash status says it is blocked, not
// stale); else it waits for the token controller to.
func (e *env) tokenSecret(r *running, since int, fill bool, token string, then func()) string {
	e.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "robot"}},
		Type: corev1.SecretTypeServiceAccountToken}
	created, err := e.cs.CoreV1().Secrets(e.ns).Create(context.Background(), s, metav1.CreateOptions{})
	require.NoError(e.t, err)
	if then != nil {
		then()
	}
	if fill {
		r.obs.waitFor(e.t, since, "web reconciled on the empty Secret", func(o controller.Outcome) bool {
			return o.Request.Kind == "Deployment" && o.Request.Name == "web" && o.ConfigVersions[tokenRef] == created.ResourceVersion
		})
		e.assertFillPending(tokenRef + " key token")
		return editObject(e.t, e.cs.CoreV1().Secrets(e.ns), "robot-token", "kube-controller-manager", func(s *corev1.Secret) {
			s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(token), "ca.crt": []byte("ca"), "namespace": []byte(e.ns)}
		})
	}
	var filled string
	eventually(e.t, "the token controller to fill robot-token in", func(ctx context.Context) (bool, error) {
		got, err := e.cs.CoreV1().Secrets(e.ns).Get(ctx, "robot-token", metav1.GetOptions{})
		if err != nil || len(got.Data[corev1.ServiceAccountTokenKey]) == 0 {
			return false, err
		}
		filled = got.ResourceVersion
		return true, nil
	})
	return filled
}

// assertFillPending: kubectl confighash status says what the controller
// does while the config the one workload of the namespace reads lacks the
// key the cluster fills in: it waits for missing ("Kind/name key k"); the
// pods run no stale content.
func (e *env) assertFillPending(missing string) {
	e.t.Helper()
	report, err := status.Collect(context.Background(), e.cs, status.Options{Namespace: e.ns})
	require.NoError(e.t, err)
	require.Len(e.t, report.Workloads, 1)
	assert.Equal(e.t, status.ConfigBlocked, report.Workloads[0].Config, "kubectl confighash status while %s is pending", missing)
	assert.Equal(e.t, []string{missing}, report.Workloads[0].Missing, "kubectl confighash status while %s is pending", missing)
}

// TestCABundleFilledIn: an OpenShift CA bundle ConfigMap, annotated
// service.beta.openshift.io/inject-cabundle: "true", is created with no
// data (as a chart renders it, before its reader, as helm install orders
// them) and OpenShift's service-ca operator writes service-ca.crt into it
// after; its reader never runs on the empty ConfigMap. This control plane
// runs no such operator: the test writes the key as it would, once the
// controller has reconciled the reader on the empty ConfigMap (held back,
// recording nothing). The filled content is the first baseline: no roll
// (S1). A new bundle (the operator rotating its CA) rolls the reader once.
func TestCABundleFilledIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const ref = "ConfigMap/service-ca"
	r := e.start(e.testOptions())
	created, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "service-ca", Annotations: map[string]string{hashing.InjectCABundleAnnotation: "true"}},
		Data:       map[string]string{}}, metav1.CreateOptions{})
	require.NoError(t, err)
	w := optedIn(e, "web")
	w.EnvFrom = []string{"{configMapRef: {name: service-ca}}"}
	require.NoError(t, e.apply(w.YAML(), "kubectl"))
	r.obs.waitFor(t, 0, "web reconciled on the empty ConfigMap", func(o controller.Outcome) bool {
		return deploymentOutcome("web", "missing_config")(o) && o.ConfigVersions[ref] == created.ResourceVersion
	})
	e.assertFillPending(ref + " key service-ca.crt")
	filled := editObject(t, e.cs.CoreV1().ConfigMaps(e.ns), "service-ca", "service-ca-operator", func(cm *corev1.ConfigMap) {
		cm.Data = map[string]string{"service-ca.crt": "pem 1"}
	})
	r.obs.waitFor(t, 0, "in sync with the bundle", inSyncHaving("web", ref, filled))
	assert.Equal(t, 1, e.revisions("Deployment", "web"), "revisions after the bundle was filled in")
	assert.Zero(t, r.obs.count(0, deploymentOutcome("web", "rolled")), "rolls after the bundle was filled in")
	assert.Contains(t, e.deployment("web").Annotations["confighash.dev/external-baseline"], ref+"=")

	mark := r.obs.mark()
	rotated := editObject(t, e.cs.CoreV1().ConfigMaps(e.ns), "service-ca", "service-ca-operator", func(cm *corev1.ConfigMap) {
		cm.Data["service-ca.crt"] = "pem 2"
	})
	r.obs.waitFor(t, mark, "in sync with the new bundle", inSyncHaving("web", ref, rotated))
	assert.Equal(t, 2, e.revisions("Deployment", "web"), "revisions after the bundle was rotated")
	assert.Equal(t, 1, r.obs.count(mark, deploymentOutcome("web", "rolled")), "rolls after the bundle was rotated")
}
