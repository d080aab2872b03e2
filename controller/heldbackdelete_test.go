package controller_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOptionalRenderConfigDeletedWhileHeldBack (random history seed 1592):
// a workload waits for its required Secret since the render; an optional
// Secret of the render is deleted meanwhile. No pod of the template ran, so
// the pods start on the deletion when the required Secret lands: nothing
// to roll.
func TestOptionalRenderConfigDeletedWhileHeldBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stream := strings.Replace(e.stream(defaultApp("Deployment")), "secretRef: {name: api-token}", "secretRef: {name: api-token, optional: true}", 1)
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
