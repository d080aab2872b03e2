package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/controller"
)

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
