package controller

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
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
	DefaultLeaderElectionID   = "confighash-controller"
	DefaultMetricsAddress     = ":8080"
	DefaultHealthAddress      = ":8081"
	DefaultCoalesceWindow     = 2 * time.Second
	DefaultMinRollInterval    = 30 * time.Second
	DefaultRolloutsPerSecond  = 5
	DefaultRolloutBurst       = 20
	DefaultConcurrency        = 4
	DefaultLeaseDuration      = 15 * time.Second
	DefaultRenewDeadline      = 10 * time.Second
	DefaultRetryPeriod        = 2 * time.Second
	ArgoRolloutsAuto          = "auto"
	ArgoRolloutsEnabled       = "enabled"
	ArgoRolloutsDisabled      = "disabled"
	controllerName            = "confighash"
	defaultFieldManager       = "confighash-controller"
	maxPendingChangesPerEntry = 16
)

// Options configure the controller. Flags fill the first group; the second
// is for programs and tests that embed the controller.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty uses $KUBECONFIG, then the
	// in-cluster configuration.
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
	// is trimmed, as bin/confighash --hmac-key-file does).
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
	// LogFormat is json or text; LogLevel info or debug.
	LogFormat string
	LogLevel  string

	// RESTConfig, when set, is used instead of Kubeconfig.
	RESTConfig *rest.Config
	// Key is the HMAC key; set from HMACKeyFile by Complete.
	Key []byte
	// Registry receives the metrics; default controller-runtime's registry,
	// which the metrics endpoint serves.
	Registry prometheus.Registerer
	// Logger overrides the logger built from LogFormat and LogLevel.
	Logger logr.Logger
	// Observer, when set, is called after every reconcile with its outcome.
	Observer func(Outcome)
	// FieldManager names the controller's writes; default
	// confighash-controller.
	FieldManager string
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
		LogFormat:              "json",
		LogLevel:               "info",
		FieldManager:           defaultFieldManager,
	}
}

// ParseFlags reads the command line into Options (defaults first) and
// completes them. Usage goes to out; -h gives flag.ErrHelp.
func ParseFlags(args []string, out io.Writer) (Options, error) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("confighash-controller", flag.ContinueOnError)
	fs.SetOutput(out)
	o.bindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: confighash-controller [flags]\n\n"+
			"Rolls Deployments, StatefulSets, DaemonSets, CronJobs and Argo Rollouts when a ConfigMap or Secret\n"+
			"they consume is edited out of band. See docs/controller.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	// The key, like bin/confighash's: the flag's file, else
	// $CONFIGHASH_HMAC_KEY_FILE, else the key itself in $CONFIGHASH_HMAC_KEY.
	key, err := hmackey.Load(o.HMACKeyFile, os.Getenv)
	if err != nil {
		return o, err
	}
	o.Key = key
	return o.Complete()
}

func (o *Options) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file (default $KUBECONFIG, then in-cluster)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader on a Lease (run several replicas, one active)")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "namespace of the Lease (default: the pod's namespace)")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "name of the Lease")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "how long a standby waits before taking over an unrenewed Lease")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "how long the leader retries renewing before giving up")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "interval between Lease attempts")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, `Prometheus metrics address ("0" turns it off)`)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, `/healthz and /readyz address ("0" turns it off)`)
	fs.Func("namespaces", "comma-separated namespaces to watch (default all; Roles suffice when set)", func(s string) error {
		o.Namespaces = nil
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				o.Namespaces = append(o.Namespaces, n)
			}
		}
		return nil
	})
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "log and count what would be rolled; never write")
	fs.StringVar(&o.AnnotationPrefix, "annotation-prefix", o.AnnotationPrefix, "prefix of the confighash annotations")
	fs.DurationVar(&o.CoalesceWindow, "coalesce-window", o.CoalesceWindow, "how long a config mismatch must persist before a roll (edits within it give one roll)")
	fs.DurationVar(&o.MinRollInterval, "min-roll-interval", o.MinRollInterval, "least time between two rolls of one workload")
	fs.Float64Var(&o.RolloutsPerSecond, "max-rollouts-per-second", o.RolloutsPerSecond, "rolls per second across all workloads")
	fs.IntVar(&o.RolloutBurst, "rollout-burst", o.RolloutBurst, "rolls allowed at once above the rate")
	fs.StringVar(&o.HMACKeyFile, "hmac-key-file", o.HMACKeyFile, "file holding the HMAC key of the keyed hash mode, the key bin/confighash --hmac-key-file uses (also $CONFIGHASH_HMAC_KEY_FILE, or the key itself in $CONFIGHASH_HMAC_KEY)")
	fs.StringVar(&o.ArgoRollouts, "argo-rollouts", o.ArgoRollouts, "manage Argo Rollouts: auto (when the CRD is served), enabled or disabled")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "workloads reconciled in parallel")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "client-side limit of requests per second to the API server; 0 or less: none, the API server's Priority and Fairness paces them")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "requests allowed at once above --kube-api-qps (0: twice the rate)")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "json or text")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "info or debug")
}

// Complete fills defaults for unset fields, reads the HMAC key and
// validates.
func (o Options) Complete() (Options, error) {
	d := DefaultOptions()
	setDefault(&o.LeaderElectionID, d.LeaderElectionID)
	setDefault(&o.AnnotationPrefix, d.AnnotationPrefix)
	setDefault(&o.ArgoRollouts, d.ArgoRollouts)
	setDefault(&o.LogFormat, d.LogFormat)
	setDefault(&o.LogLevel, d.LogLevel)
	setDefault(&o.FieldManager, d.FieldManager)
	setDefault(&o.MetricsBindAddress, "0")
	setDefault(&o.HealthProbeBindAddress, "0")
	if o.LeaseDuration <= 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = d.LeaseDuration, d.RenewDeadline, d.RetryPeriod
	}
	if o.RolloutsPerSecond <= 0 {
		o.RolloutsPerSecond = d.RolloutsPerSecond
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
	switch o.LogFormat {
	case "json", "text":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: want json or text", o.LogFormat))
	}
	switch o.LogLevel {
	case "info", "debug":
	default:
		errs = append(errs, fmt.Errorf("--log-level %q: want info or debug", o.LogLevel))
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
