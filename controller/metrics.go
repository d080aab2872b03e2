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
	m := &metrics{
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighash_rollouts_total",
			Help: "Rollouts triggered by patching a workload's pod template (dry_run=\"true\": reported only).",
		}, []string{"kind", "dry_run"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighash_rollouts_skipped_total",
			Help: "Reconciles that found a config change but did not roll now, by reason.",
		}, []string{"kind", "reason"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighash_reconciles_total",
			Help: "Reconciles of managed workloads, by result.",
		}, []string{"kind", "result"}),
		configEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighash_config_events_total",
			Help: "ConfigMap and Secret events seen, by change (content, metadata, created, deleted).",
		}, []string{"kind", "change"}),
		baselines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighash_baseline_writes_total",
			Help: "External baselines written on workload metadata (no rollout).",
		}, []string{"kind"}),
		missing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "confighash_workloads_missing_config",
			Help: "Managed workloads held back because a required ConfigMap or Secret is missing.",
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "confighash_reconcile_duration_seconds",
			Help:    "Time to reconcile one workload.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"kind"}),
		accessReviews: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "confighash_access_reviews_total",
			Help: "SelfSubjectAccessReviews asked at start-up to check the controller's permissions (POST requests that write nothing).",
		}),
	}
	var errs []error
	m.rollouts = registerAs(reg, m.rollouts, &errs)
	m.skipped = registerAs(reg, m.skipped, &errs)
	m.reconciles = registerAs(reg, m.reconciles, &errs)
	m.configEvents = registerAs(reg, m.configEvents, &errs)
	m.baselines = registerAs(reg, m.baselines, &errs)
	m.missing = registerAs(reg, m.missing, &errs)
	m.duration = registerAs(reg, m.duration, &errs)
	m.accessReviews = registerAs(reg, m.accessReviews, &errs)
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
