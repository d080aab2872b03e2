package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetricsShared: a second controller in one process (Setup without a
// Registry uses controller-runtime's) gets the collectors the first
// registered, every one of them, and a collector of another shape under one
// of the names is an error.
func TestMetricsShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := newMetrics(reg)
	require.NoError(t, err)
	second, err := newMetrics(reg)
	require.NoError(t, err, "the second controller's metrics")
	for name, pair := range map[string][2]any{
		"rollouts":      {first.rollouts, second.rollouts},
		"skipped":       {first.skipped, second.skipped},
		"reconciles":    {first.reconciles, second.reconciles},
		"configEvents":  {first.configEvents, second.configEvents},
		"baselines":     {first.baselines, second.baselines},
		"missing":       {first.missing, second.missing},
		"duration":      {first.duration, second.duration},
		"accessReviews": {first.accessReviews, second.accessReviews},
	} {
		assert.Same(t, pair[0], pair[1], name)
	}

	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "confighash_baseline_writes_total", Help: "no labels"}))
	_, err = newMetrics(other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "confighash_baseline_writes_total")
}
