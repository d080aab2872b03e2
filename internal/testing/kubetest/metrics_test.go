package kubetest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

func TestMetric(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP confighash_rollouts_total Rollouts.
# TYPE confighash_rollouts_total counter
confighash_rollouts_total{dry_run="false",kind="Deployment"} 2
confighash_rollouts_total{dry_run="true",kind="Deployment"} 5
confighash_rollouts_total{dry_run="false",kind="StatefulSet"} 1
confighash_rollouts_total_other 7
confighash_workloads_missing_config 3
`)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		{"every sample", "confighash_rollouts_total", nil, 8},
		{"one label", "confighash_rollouts_total", []string{`dry_run="false"`}, 3},
		{"every label must match", "confighash_rollouts_total", []string{`dry_run="false"`, `kind="StatefulSet"`}, 1},
		{"no labels", "confighash_workloads_missing_config", nil, 3},
		{"absent", "confighash_nothing", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, kubetest.Metric(addr, tc.metric, tc.labels...), 0)
		})
	}
	srv.Close()
	assert.InDelta(t, -1.0, kubetest.Metric(addr, "confighash_rollouts_total"), 0, "a closed endpoint")
}
