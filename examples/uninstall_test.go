package examples_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// onlyTerminating tells a CRD the API server is still deleting from any
// other error of helm uninstall.
func TestOnlyTerminating(t *testing.T) {
	for _, c := range []struct {
		name, stderr string
		want         bool
	}{
		{"a CRD still terminating (CI, Helm 4)", "Error: uninstallation completed with 1 error(s): resource CustomResourceDefinition//orders.acme.cert-manager.io still exists. status: Terminating, message: Resource scheduled for deletion\ncontext deadline exceeded\n", true},
		{"two CRDs", "Error: uninstallation completed with 2 error(s): resource CustomResourceDefinition//orders.acme.cert-manager.io still exists. status: Terminating, message: Resource scheduled for deletion, resource CustomResourceDefinition//challenges.acme.cert-manager.io still exists. status: Terminating, message: Resource scheduled for deletion\ncontext deadline exceeded\n", true},
		{"a Deployment still there", "Error: uninstallation completed with 1 error(s): resource Deployment/web/web still exists. status: InProgress\ncontext deadline exceeded\n", false},
		{"a CRD and another error", "Error: uninstallation completed with 2 error(s): resource CustomResourceDefinition//orders.acme.cert-manager.io still exists. status: Terminating, message: Resource scheduled for deletion, failed to delete release: web\n", false},
		{"release not found", "Error: uninstall: Release not loaded: web: release: not found\n", false},
		{"nothing", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, onlyTerminating(c.stderr))
		})
	}
}
