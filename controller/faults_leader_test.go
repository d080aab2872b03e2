package controller_test

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
)

// TestFaultLeaderKilledDuringBurst runs two controller processes with
// leader election over 20 workloads, and edits each workload's ConfigMap
// once in a burst; the leader is killed (SIGKILL, no Lease release) halfway
// through it. Some edits are rolled by the old leader, some are pending in
// its coalescing window when it dies, the rest arrive while nobody leads.
// Asserted for every workload: its pod template reflects the last content
// (no missed change) and it rolled exactly once (no duplicate), so it has
// two ReplicaSets.
func TestFaultLeaderKilledDuringBurst(t *testing.T) {
	t.Parallel()
	const n = 20
	const pace = 100 * time.Millisecond
	e := newEnv(t)
	createWorkloads(t, e, n)
	le := []string{"--leader-elect", "--leader-election-namespace", e.ns, "--leader-election-id", "confighash",
		"--leader-election-lease-duration", "6s", "--leader-election-renew-deadline", "4s", "--leader-election-retry-period", "500ms"}

	a := e.startProcess("a", le...)
	eventually(t, "a to lead", func(context.Context) (bool, error) { return a.leads(), nil })
	e.waitMetric(a, "every workload in sync", atLeast(n), "confighash_reconciles_total", `result="in_sync"`)
	b := e.startProcess("b", le...)
	e.waitMetric(b, "metrics up", atLeast(0), "confighash_rollouts_total")
	require.False(t, b.leads(), "b is a standby")

	var killed time.Time
	for i := range n {
		if i == n/2 {
			// Kill the leader once it has rolled the first edits: the
			// ones after them are still in its coalescing window.
			e.waitMetric(a, "a to roll the first edits", atLeast(1), "confighash_rollouts_total", `dry_run="false"`)
			a.signal(syscall.SIGKILL)
			killed = time.Now()
		}
		e.editConfigMap(fmt.Sprintf("app-%d", i), func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = fmt.Sprint("burst-", i) })
		time.Sleep(pace) // the pacing of the burst is what is simulated
	}
	eventually(t, "b to take over", func(context.Context) (bool, error) { return b.leads(), nil })
	t.Logf("b took over %s after a was killed", time.Since(killed).Round(time.Millisecond))

	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		want := e.liveHash(name)
		eventually(t, name+" to reflect its last content", func(ctx context.Context) (bool, error) {
			d, err := e.cs.AppsV1().Deployments(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return d.Spec.Template.Annotations["confighash.dev/controller-hash"] == want, nil
		})
	}
	byB := int(b.metric("confighash_rollouts_total", `dry_run="false"`))
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		assert.Equal(t, 2, e.revisions("Deployment", name), "%s: ReplicaSets (one rollout)", name)
		rev, err := strconv.Atoi(e.deployment(name).Annotations["deployment.kubernetes.io/revision"])
		require.NoError(t, err)
		assert.Equal(t, 2, rev, "%s: Deployment revision (one rollout, none repeated)", name)
	}
	t.Logf("%d edits: %d rolled by the killed leader, %d by the new one", n, n-byB, byB)
	assert.Positive(t, n-byB, "the killed leader rolled the first edits")
	assert.Positive(t, byB, "the new leader rolled the edits it found pending")
}

// liveHash is the controller-hash a workload created by createWorkloads
// should carry for the live content of its ConfigMap.
func (e *env) liveHash(name string) string {
	e.t.Helper()
	cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(e.t, err)
	content, err := controller.ContentOf(cm)
	require.NoError(e.t, err)
	use := hashing.Use{Kind: hashing.KindConfigMap, Name: name, Keys: []string{"LOG_LEVEL"}}
	return hashing.Compute(e.ns, []hashing.Use{use}, func(hashing.Kind, string) (hashing.Content, bool) { return content, true }, hashing.Options{})
}
