package controller

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the controller's Prometheus metrics (docs/controller.md lists
// them). Labels never carry object names, so cardinality stays bounded.
type metrics struct {
	rollouts     *prometheus.CounterVec
	skipped      *prometheus.CounterVec
	reconciles   *prometheus.CounterVec
	configEvents *prometheus.CounterVec
	baselines    *prometheus.CounterVec
	missing      prometheus.Gauge
	duration     *prometheus.HistogramVec
	// accessReviews counts the start-up permission check's requests:
	// POSTs that write nothing, told apart from writes in the client's
	// request counts.
	accessReviews prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return registerAs(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels), &errs)
	}
	m := &metrics{
		rollouts: counters("confighash_rollouts_total",
			"Rollouts triggered by patching a workload's pod template (dry_run=\"true\": reported only).", "kind", "dry_run"),
		skipped: counters("confighash_rollouts_skipped_total",
			"Reconciles that found a config change but did not roll now, by reason.", "kind", "reason"),
		reconciles: counters("confighash_reconciles_total",
			"Reconciles of managed workloads, by result.", "kind", "result"),
		configEvents: counters("confighash_config_events_total",
			"ConfigMap and Secret events seen, by change (content, metadata, created, deleted).", "kind", "change"),
		baselines: counters("confighash_baseline_writes_total",
			"External baselines written on workload metadata (no rollout).", "kind"),
		missing: registerAs(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "confighash_workloads_missing_config",
			Help: "Managed workloads held back because a required ConfigMap or Secret is missing.",
		}), &errs),
		duration: registerAs(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "confighash_reconcile_duration_seconds",
			Help:    "Time to reconcile one workload.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"kind"}), &errs),
		accessReviews: registerAs(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "confighash_access_reviews_total",
			Help: "SelfSubjectAccessReviews asked at start-up to check the controller's permissions (POST requests that write nothing).",
		}), &errs),
	}
	return m, errors.Join(errs...)
}

// registerAs registers c and returns it, or returns the collector already
// registered under the same name (a second controller in one process shares
// it). Other errors are appended to errs.
func registerAs[T prometheus.Collector](reg prometheus.Registerer, c T, errs *[]error) T {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing
		}
	}
	if err != nil {
		*errs = append(*errs, err)
	}
	return c
}
