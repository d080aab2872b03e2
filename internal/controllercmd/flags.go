package controllercmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/hmackey"
)

// Config is the command line of confighash-controller: the controller's
// options, and how the process logs.
type Config struct {
	controller.Options
	// LogFormat is json or text; LogLevel info or debug.
	LogFormat string
	LogLevel  string
}

// ParseFlags reads the command line into a Config (defaults first), the HMAC
// key like bin/confighash's (the flag's file, else $CONFIGHASH_HMAC_KEY_FILE,
// else the key itself in $CONFIGHASH_HMAC_KEY, looked up with getenv), and
// completes and validates the options. Usage goes to out; -h gives
// flag.ErrHelp.
func ParseFlags(args []string, out io.Writer, getenv func(string) string) (Config, error) {
	c := Config{Options: controller.DefaultOptions(), LogFormat: DefaultLogFormat, LogLevel: DefaultLogLevel}
	fs := flag.NewFlagSet("confighash-controller", flag.ContinueOnError)
	fs.SetOutput(out)
	c.bindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: confighash-controller [flags]\n\n"+
			"Rolls Deployments, StatefulSets, DaemonSets, CronJobs and Argo Rollouts when a ConfigMap or Secret\n"+
			"they consume is edited out of band. See docs/controller.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	key, err := hmackey.Load(c.HMACKeyFile, getenv)
	if err != nil {
		return c, err
	}
	c.Key = key
	if c.LogFormat == "" {
		c.LogFormat = DefaultLogFormat
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	c.Options, err = c.Complete()
	return c, errors.Join(append([]error{err}, checkLog(c.LogFormat, c.LogLevel)...)...)
}

// bindFlags defines the flags on fs, with the values in c as defaults.
func (c *Config) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "kubeconfig file (default $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	fs.BoolVar(&c.LeaderElect, "leader-elect", c.LeaderElect, "elect a leader on a Lease (run several replicas, one active)")
	fs.StringVar(&c.LeaderElectionNamespace, "leader-election-namespace", c.LeaderElectionNamespace, "namespace of the Lease (default: the pod's namespace)")
	fs.StringVar(&c.LeaderElectionID, "leader-election-id", c.LeaderElectionID, "name of the Lease")
	fs.DurationVar(&c.LeaseDuration, "leader-election-lease-duration", c.LeaseDuration, "how long a standby waits before taking over an unrenewed Lease")
	fs.DurationVar(&c.RenewDeadline, "leader-election-renew-deadline", c.RenewDeadline, "how long the leader retries renewing before giving up")
	fs.DurationVar(&c.RetryPeriod, "leader-election-retry-period", c.RetryPeriod, "interval between Lease attempts")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", c.MetricsBindAddress, `Prometheus metrics address ("0" turns it off)`)
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", c.HealthProbeBindAddress, `/healthz and /readyz address ("0" turns it off)`)
	fs.StringVar(&c.PprofBindAddress, "pprof-bind-address", c.PprofBindAddress, `address serving Go's /debug/pprof/ profiles (default "": off; "0" also turns it off)`)
	fs.Func("namespaces", "comma-separated namespaces to watch (default all; Roles suffice when set)", func(s string) error {
		c.Namespaces = nil
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				c.Namespaces = append(c.Namespaces, n)
			}
		}
		return nil
	})
	fs.BoolVar(&c.DryRun, "dry-run", c.DryRun, "log and count what would be rolled; never write")
	fs.StringVar(&c.AnnotationPrefix, "annotation-prefix", c.AnnotationPrefix, "prefix of the confighash annotations")
	fs.DurationVar(&c.CoalesceWindow, "coalesce-window", c.CoalesceWindow, "how long a config mismatch must persist before a roll (edits within it give one roll)")
	fs.DurationVar(&c.MinRollInterval, "min-roll-interval", c.MinRollInterval, "least time between two rolls of one workload")
	fs.Float64Var(&c.RolloutsPerSecond, "max-rollouts-per-second", c.RolloutsPerSecond, "rolls per second across all workloads")
	fs.IntVar(&c.RolloutBurst, "rollout-burst", c.RolloutBurst, "rolls allowed at once above the rate")
	fs.StringVar(&c.HMACKeyFile, "hmac-key-file", c.HMACKeyFile, "file holding the HMAC key of the keyed hash mode, the key bin/confighash --hmac-key-file uses (also $CONFIGHASH_HMAC_KEY_FILE, or the key itself in $CONFIGHASH_HMAC_KEY)")
	fs.StringVar(&c.ArgoRollouts, "argo-rollouts", c.ArgoRollouts, "manage Argo Rollouts: auto (when the CRD is served), enabled or disabled")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "workloads reconciled in parallel")
	fs.Float64Var(&c.KubeAPIQPS, "kube-api-qps", c.KubeAPIQPS, "client-side limit of requests per second to the API server; 0 or less: none, the API server's Priority and Fairness paces them")
	fs.IntVar(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst, "requests allowed at once above --kube-api-qps (0: twice the rate)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "json or text")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "info or debug")
}
