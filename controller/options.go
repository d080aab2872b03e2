package controller

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/hmackey"
)

// Defaults of the options a user can set.
const (
	DefaultLeaderElectionID  = "confighash-controller"
	DefaultMetricsAddress    = ":8080"
	DefaultHealthAddress     = ":8081"
	DefaultCoalesceWindow    = 10 * time.Second
	DefaultMinRollInterval   = 30 * time.Second
	DefaultRolloutsPerSecond = 5
	DefaultRolloutBurst      = 20
	DefaultConcurrency       = 4
	DefaultLeaseDuration     = 15 * time.Second
	DefaultRenewDeadline     = 10 * time.Second
	DefaultRetryPeriod       = 2 * time.Second
	// DefaultArgoRolloutsRecheck is how often Run asks, in auto mode,
	// whether Argo Rollouts' CRD has come or gone.
	DefaultArgoRolloutsRecheck = time.Minute
	ArgoRolloutsAuto           = "auto"
	ArgoRolloutsEnabled        = "enabled"
	ArgoRolloutsDisabled       = "disabled"
	controllerName             = "confighash"
	defaultFieldManager        = "confighash-controller"
	maxPendingChangesPerEntry  = 16
)

// Options configure the controller. The flags of confighash-controller
// (internal/controllercmd) fill the first group; the second is for programs
// and tests that embed the controller. The package reads no flag and no
// environment variable and leaves the process-wide loggers alone: the
// program does that and hands in plain options.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty uses $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster configuration (client-go's
	// loading rules).
	Kubeconfig string
	// LeaderElect turns on leader election (active/standby) on a Lease.
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	// MetricsBindAddress and HealthProbeBindAddress: "0" turns them off.
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof/ profiles (heap, goroutine,
	// CPU) there; empty or "0" (the default) serves none.
	PprofBindAddress string
	// Namespaces restricts the controller (cache and watches) to these
	// namespaces, so it needs Roles only. Empty means every namespace.
	Namespaces []string
	// DryRun reports what the controller would do and never writes.
	DryRun bool
	// AnnotationPrefix is the prefix of the confighash annotations.
	AnnotationPrefix string
	// CoalesceWindow is how long a mismatch must persist before a roll; edits
	// that arrive within it give one roll.
	CoalesceWindow time.Duration
	// MinRollInterval is the least time between two rolls of one workload.
	MinRollInterval time.Duration
	// RolloutsPerSecond and RolloutBurst limit rolls across all workloads.
	RolloutsPerSecond float64
	RolloutBurst      int
	// HMACKeyFile holds the key of the keyed hash mode (whitespace around it
	// is trimmed, as bin/confighash --hmac-key-file does); Complete reads it
	// unless Key is set.
	HMACKeyFile string
	// ArgoRollouts is auto (manage Rollouts when the CRD is served), enabled
	// or disabled.
	ArgoRollouts string
	// Concurrency is the number of workloads reconciled in parallel.
	Concurrency int
	// KubeAPIQPS and KubeAPIBurst limit the requests the controller sends to
	// the API server, on the client side. Zero or less (the default) sends
	// them unthrottled and leaves the pacing to the API server's Priority and
	// Fairness, as controller-runtime does: client-go's own default of 5
	// requests per second would hold the first baselines of 1,000 workloads
	// for over three minutes and cap rolls below --max-rollouts-per-second.
	// KubeAPIBurst zero means twice KubeAPIQPS.
	KubeAPIQPS   float64
	KubeAPIBurst int

	// RESTConfig, when set, is used instead of Kubeconfig.
	RESTConfig *rest.Config
	// Key is the HMAC key; set from HMACKeyFile by Complete.
	Key []byte
	// Registry receives the metrics; default controller-runtime's registry,
	// which the metrics endpoint serves.
	Registry prometheus.Registerer
	// Logger is the logger of the manager and the controller; unset,
	// controller-runtime's (sigs.k8s.io/controller-runtime/pkg/log.Log),
	// which the program sets.
	Logger logr.Logger
	// Observer, when set, is called after every reconcile with its outcome.
	Observer func(Outcome)
	// ArgoRolloutsRecheck is how often Run, in auto mode, asks discovery
	// whether the Rollout CRD has come or gone; zero or less:
	// DefaultArgoRolloutsRecheck.
	ArgoRolloutsRecheck time.Duration
	// FieldManager names the controller's writes; default
	// confighash-controller.
	FieldManager string

	// stores reads the workloads the cache holds in their cached form; set
	// by NewManager, which builds the cache that fills it.
	stores *stores
	// events records the controller's Events and writes the last ones
	// before the manager stops; set by NewManager (nil: the manager's
	// recorder).
	events *eventRecorder
	// accessReviews is how many SelfSubjectAccessReviews NewManager's
	// permission check made, for the metric.
	accessReviews int
}

// DefaultOptions returns the options with every default filled in.
func DefaultOptions() Options {
	return Options{
		LeaderElectionID:       DefaultLeaderElectionID,
		LeaseDuration:          DefaultLeaseDuration,
		RenewDeadline:          DefaultRenewDeadline,
		RetryPeriod:            DefaultRetryPeriod,
		MetricsBindAddress:     DefaultMetricsAddress,
		HealthProbeBindAddress: DefaultHealthAddress,
		AnnotationPrefix:       annotations.DefaultPrefix,
		CoalesceWindow:         DefaultCoalesceWindow,
		MinRollInterval:        DefaultMinRollInterval,
		RolloutsPerSecond:      DefaultRolloutsPerSecond,
		RolloutBurst:           DefaultRolloutBurst,
		ArgoRollouts:           ArgoRolloutsAuto,
		Concurrency:            DefaultConcurrency,
		FieldManager:           defaultFieldManager,
	}
}

// Complete fills defaults for unset fields, reads the HMAC key and
// validates.
func (o Options) Complete() (Options, error) {
	d := DefaultOptions()
	setDefault(&o.LeaderElectionID, d.LeaderElectionID)
	setDefault(&o.AnnotationPrefix, d.AnnotationPrefix)
	setDefault(&o.ArgoRollouts, d.ArgoRollouts)
	setDefault(&o.FieldManager, d.FieldManager)
	setDefault(&o.MetricsBindAddress, "0")
	setDefault(&o.HealthProbeBindAddress, "0")
	if o.LeaseDuration <= 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = d.LeaseDuration, d.RenewDeadline, d.RetryPeriod
	}
	if o.RolloutsPerSecond <= 0 {
		o.RolloutsPerSecond = d.RolloutsPerSecond
	}
	if o.ArgoRolloutsRecheck <= 0 {
		o.ArgoRolloutsRecheck = DefaultArgoRolloutsRecheck
	}
	if o.RolloutBurst <= 0 {
		o.RolloutBurst = 1
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.KubeAPIQPS > 0 && o.KubeAPIBurst <= 0 {
		o.KubeAPIBurst = max(1, int(math.Ceil(2*o.KubeAPIQPS)))
	}
	if o.HMACKeyFile != "" && len(o.Key) == 0 {
		key, err := hmackey.ReadFile(o.HMACKeyFile)
		if err != nil {
			return o, err
		}
		o.Key = key
	}
	return o, o.Validate()
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if err := annotations.CheckPrefix(o.AnnotationPrefix); err != nil {
		errs = append(errs, fmt.Errorf("--annotation-prefix %w", err))
	}
	if o.CoalesceWindow < 0 || o.MinRollInterval < 0 {
		errs = append(errs, errors.New("--coalesce-window and --min-roll-interval must not be negative"))
	}
	switch o.ArgoRollouts {
	case ArgoRolloutsAuto, ArgoRolloutsEnabled, ArgoRolloutsDisabled:
	default:
		errs = append(errs, fmt.Errorf("--argo-rollouts %q: want auto, enabled or disabled", o.ArgoRollouts))
	}
	if o.LeaderElect && (o.LeaseDuration <= o.RenewDeadline || o.RenewDeadline <= o.RetryPeriod || o.RetryPeriod <= 0) {
		errs = append(errs, errors.New("leader election wants lease duration > renew deadline > retry period > 0"))
	}
	for _, n := range o.Namespaces {
		if strings.ContainsAny(n, "/ ") {
			errs = append(errs, fmt.Errorf("--namespaces: %q is not a namespace name", n))
		}
	}
	return errors.Join(errs...)
}
