package examples_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// workloadFirstApp is a Deployment that reads a pull Secret and a key of a
// token Secret, neither in the render (%s is the namespace).
const workloadFirstApp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: %s
spec:
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      imagePullSecrets:
      - name: podinfo-registry
      containers:
      - name: podinfo
        image: example/podinfo:6
        env:
        - name: TOKEN
          valueFrom:
            secretKeyRef: {name: podinfo-token, key: token}
`

// TestConfigsCreatedAfterTheWorkload: a workload applied before the
// configs it reads (kubectl apply -f on a folder whose deployment.yaml
// sorts before secret.yaml; a stream that lists the Deployment first), with
// the controller watching. While a config its pods require is missing, no
// pod of it can start, so no config it reads has content its pods ran on:
// the configs created then are the first content the pods see, and the
// controller rolls nothing, whatever the order in which they land (here
// the pull Secret, which pods do not require, before the token Secret they
// do). Seen as a flake of TestFluxSOPSOnCluster, whose render lists the
// Deployment first: the controller rolled once when the controller saw the
// pull Secret created while the token was still missing.
func TestConfigsCreatedAfterTheWorkload(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	c := newCluster(t, "workload-first")
	ns := c.namespace
	res := testtools.Run(t, "", nil, []byte(fmt.Sprintf(workloadFirstApp, ns)), testtools.Tool(t, "confighash"), "--quiet")
	require.Zero(t, res.ExitCode, res.Stderr)
	assert.Contains(t, res.Stdout, "confighash.dev/external: Secret/podinfo-registry,Secret/podinfo-token")
	ctrl := startController(t, "controller", ns)

	c.apply(t, res.Stdout)
	applied := c.deployment(t, "podinfo")
	ctrl.waitFor(t, "the Deployment held back for its token", func(v float64) bool { return v == 1 }, "confighash_workloads_missing_config")

	created := ctrl.metric("confighash_config_events_total", `change="created"`)
	c.createConfig(t, "Secret", "podinfo-registry", map[string]string{"auth": "x"})
	ctrl.waitFor(t, "the pull Secret seen", func(v float64) bool { return v > created }, "confighash_config_events_total", `change="created"`)
	c.createConfig(t, "Secret", "podinfo-token", map[string]string{"token": "first"})
	ctrl.waitFor(t, "the token seen", func(v float64) bool { return v == 0 }, "confighash_workloads_missing_config")
	ctrl.settled(t, c.release, "podinfo", 0)
	assert.Zero(t, ctrl.rolls(), "the controller rolled when the configs were created after the workload")
	assertRolled(t, "the configs created", 0, applied, c.deployment(t, "podinfo"))
}

// TestConfigsLandingWithTheWorkload: the configs of a render written in
// one go after the workload, in any order and without waiting for the
// controller to see each (kubectl apply -f on a folder, a stream that lists
// the Deployment first), roll nothing. The controller's cache can run ahead
// of its watch handler, and its first baseline can be written between two
// creations: the optional pull Secret then reads as created after pods
// that ran without it. No pod can have run long without a config created
// within a second of the workload or of a config its pods require, so that
// config is recorded as the pods' first content. A pull Secret created
// later, once the pods could have run without it, rolls once.
func TestConfigsLandingWithTheWorkload(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	tests := []struct {
		name string
		// before is created before the workload is applied, after right
		// after it, in that order, each without waiting for the controller.
		before, after []string
	}{
		{name: "the token, then the pull Secret", after: []string{"podinfo-token", "podinfo-registry"}},
		{name: "the pull Secret, then the token", after: []string{"podinfo-registry", "podinfo-token"}},
		{name: "the token before the workload, the pull Secret after it", before: []string{"podinfo-token"}, after: []string{"podinfo-registry"}},
	}
	data := map[string]map[string]string{"podinfo-token": {"token": "first"}, "podinfo-registry": {"auth": "x"}}
	render := func(t *testing.T, ns string) string {
		res := testtools.Run(t, "", nil, []byte(fmt.Sprintf(workloadFirstApp, ns)), testtools.Tool(t, "confighash"), "--quiet")
		require.Zero(t, res.ExitCode, res.Stderr)
		return res.Stdout
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, "landing")
			ctrl := startController(t, "controller", c.namespace)
			for _, name := range tc.before {
				c.createConfig(t, "Secret", name, data[name])
			}
			c.apply(t, render(t, c.namespace))
			applied := c.deployment(t, "podinfo")
			for _, name := range tc.after {
				c.createConfig(t, "Secret", name, data[name])
			}
			ctrl.waitFor(t, "the Secrets seen", func(v float64) bool { return v >= float64(len(tc.after)) }, "confighash_config_events_total", `change="created"`)
			ctrl.settled(t, c.release, "podinfo", 0)
			assert.Zero(t, ctrl.rolls(), "the controller rolled for configs created with the workload")
			assertRolled(t, "the configs created", 0, applied, c.deployment(t, "podinfo"))
		})
	}

	t.Run("a pull Secret created once the pods could run without it", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, "landing-later")
		ctrl := startController(t, "controller", c.namespace)
		c.createConfig(t, "Secret", "podinfo-token", data["podinfo-token"])
		c.apply(t, render(t, c.namespace))
		ctrl.settled(t, c.release, "podinfo", 0)
		// The case is about time passing, with nothing to poll for: wait
		// until the second of a creation now is two past the workload's (its
		// token was created before it; creation times count whole seconds).
		d, err := c.client.AppsV1().Deployments(c.namespace).Get(t.Context(), "podinfo", metav1.GetOptions{})
		require.NoError(t, err)
		time.Sleep(time.Until(d.CreationTimestamp.Add(2 * time.Second)))
		before := c.deployment(t, "podinfo")
		c.createConfig(t, "Secret", "podinfo-registry", data["podinfo-registry"])
		ctrl.rolledOnce(t, c.release, "podinfo", "the pull Secret created", 1, before)
	})
}
