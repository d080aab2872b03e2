package controller_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

// proc is bin/confighash-controller running as a process of its own.
type proc struct {
	*kubetest.Process
	metrics string
}

// startProcess runs the controller binary on this namespace with the test
// coalescing window, plus args.
func (e *env) startProcess(name string, args ...string) *proc {
	e.t.Helper()
	return e.startProcessBin("", name, args...)
}

// startProcessBin is startProcess with the controller binary bin (empty:
// built from this tree).
func (e *env) startProcessBin(bin, name string, args ...string) *proc {
	e.t.Helper()
	return e.startProcessArgs(bin, name, func() []string { return args })
}

// startProcessArgs is startProcessBin with the extra flags made for each
// start, so that an address among them is picked again when the process
// is started again on new addresses (kubetest.StartServer).
func (e *env) startProcessArgs(bin, name string, args func() []string) *proc {
	e.t.Helper()
	if bin == "" {
		bin = filepath.Join(buildBinaries(e.t), "confighash-controller")
	}
	p, metrics := kubetest.StartServer(e.t, name, bin, kubetest.MetricsServing, func(metrics string) []string {
		return append([]string{
			"--kubeconfig", e.cp.KubeconfigPath(), "--namespaces", e.ns,
			"--metrics-bind-address", metrics, "--health-probe-bind-address", "0",
			"--coalesce-window", testWindow.String(), "--min-roll-interval", "0s", "--log-format", "text",
		}, args()...)
	})
	return &proc{Process: p, metrics: metrics}
}

// signal sends sig and waits for the process to exit.
func (p *proc) signal(sig syscall.Signal) { p.Signal(sig) }

// metric sums the process's samples of name whose labels contain every
// label in want (like `result="in_sync"`); -1 when /metrics does not answer.
func (p *proc) metric(name string, want ...string) float64 {
	return kubetest.Metric(p.metrics, name, want...)
}

func (p *proc) leads() bool {
	return strings.Contains(strings.ToLower(p.Logs()), "successfully acquired lease")
}

func (e *env) waitMetric(p *proc, what string, cond func(float64) bool, name string, labels ...string) {
	e.t.Helper()
	eventually(e.t, p.Name+": "+what, func(context.Context) (bool, error) {
		return cond(p.metric(name, labels...)), nil
	})
}

// leaderElection is the flags of a controller process that takes part in
// leader election on the Lease confighash in this namespace, of duration
// lease, renewed within renew, tried every 500ms.
func (e *env) leaderElection(lease, renew string) []string {
	return []string{"--leader-elect", "--leader-election-namespace", e.ns, "--leader-election-id", "confighash",
		"--leader-election-lease-duration", lease, "--leader-election-renew-deadline", renew, "--leader-election-retry-period", "500ms"}
}

// leaderAndStandby starts two controller processes with the flags le: a,
// which must take the lead and count inSync in-sync reconciles, then b,
// once its /metrics answers, which must be a standby.
func (e *env) leaderAndStandby(le []string, inSync float64) (a, b *proc) {
	e.t.Helper()
	a = e.startProcess("a", le...)
	eventually(e.t, "a to lead", func(context.Context) (bool, error) { return a.leads(), nil })
	e.waitMetric(a, "in sync", atLeast(inSync), "confighash_reconciles_total", `result="in_sync"`)
	b = e.startProcess("b", le...)
	e.waitMetric(b, "metrics up", atLeast(0), "confighash_rollouts_total")
	require.False(e.t, b.leads(), "b is a standby")
	return a, b
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }

// processScenario applies the rendered app with no controller running.
func processScenario(t *testing.T) *scenario {
	t.Helper()
	e := newEnv(t)
	s := &scenario{env: e, kind: "Deployment"}
	e.createSecret("db-creds", map[string]string{"password": "pw-1"})
	s.rendered = render(t, e.stream(defaultApp("Deployment")))
	require.NoError(t, e.apply(s.rendered, "kubectl"))
	return s
}

// TestS6ProcessRestart is S6 with the real binary: stopped with SIGTERM, an
// edit while it is down, started again: one rollout; restarted without an
// edit: none.
func TestS6ProcessRestart(t *testing.T) {
	t.Parallel()
	s := processScenario(t)
	first := s.startProcess("first")
	s.waitMetric(first, "in sync", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)
	assertMetricsUncompressed(t, first.metrics)
	assert.InDelta(t, gcPercent(), first.metric("go_gc_gogc_percent"), 0)
	assert.Positive(t, first.metric("confighash_access_reviews_total"), "the start-up permission check ran, and its requests are counted apart from writes")
	first.signal(syscall.SIGTERM)

	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
	second := s.startProcess("second")
	s.waitMetric(second, "one rollout", atLeast(1), "confighash_rollouts_total", `dry_run="false"`)
	s.waitMetric(second, "in sync after it", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)
	assert.Equal(t, 1, s.rollouts())
	second.signal(syscall.SIGTERM)

	third := s.startProcess("third")
	s.waitMetric(third, "in sync", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)
	assert.InDelta(t, 0.0, third.metric("confighash_rollouts_total"), 0)
	assert.Equal(t, 1, s.rollouts(), "a restart without edits rolls nothing")
}

// assertMetricsUncompressed checks that /metrics answers in plain text even
// to a scraper that accepts gzip: the controller keeps no compressor (about
// 1 MB of heap each) for a page of a few tens of kilobytes.
func assertMetricsUncompressed(t *testing.T, addr string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Content-Encoding"))
	assert.Contains(t, string(body), "confighash_reconciles_total")
	t.Logf("/metrics: %d bytes", len(body))
}

// gcPercent is the garbage collector's target a controller process runs
// at: GOGC when the environment sets a number, else the controller's own
// default of 50 (internal/controllercmd/gc.go).
func gcPercent() float64 {
	if v, err := strconv.Atoi(os.Getenv("GOGC")); err == nil {
		return float64(v)
	}
	return 50
}

// TestLeaderElection runs controller processes with leader election. The
// leader is killed (SIGKILL, no Lease release) right after it rolled: the
// standby takes over and does not roll again. Then the new leader is killed
// right after an edit, before its coalescing window ends: the next standby
// takes over and rolls exactly once.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	s := processScenario(t)
	le := s.leaderElection("12s", "9s")
	a, b := s.leaderAndStandby(le, 1)

	// A change the leader rolls, then the leader dies.
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "one" })
	s.waitMetric(a, "a rolls", atLeast(1), "confighash_rollouts_total", `dry_run="false"`)
	a.signal(syscall.SIGKILL)
	killed := time.Now()
	eventually(t, "b to take over", func(context.Context) (bool, error) { return b.leads(), nil })
	t.Logf("b took over %s after a was killed", time.Since(killed).Round(time.Millisecond))
	s.waitMetric(b, "in sync", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)
	assert.InDelta(t, 0.0, b.metric("confighash_rollouts_total"), 0, "b must not roll what a rolled")
	assert.Equal(t, 1, s.rollouts())

	// A change made just before the leader dies is not missed.
	c := s.startProcess("c", le...)
	s.waitMetric(c, "metrics up", atLeast(0), "confighash_rollouts_total")
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "two" })
	b.signal(syscall.SIGKILL)
	killed = time.Now()
	eventually(t, "c to take over", func(context.Context) (bool, error) { return c.leads(), nil })
	t.Logf("c took over %s after b was killed", time.Since(killed).Round(time.Millisecond))
	s.waitMetric(c, "c rolls", atLeast(1), "confighash_rollouts_total", `dry_run="false"`)
	s.waitMetric(c, "in sync after it", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)
	assert.InDelta(t, 1.0, c.metric("confighash_rollouts_total"), 0)
	assert.Equal(t, 2, s.rollouts(), "one rollout per change")
}
