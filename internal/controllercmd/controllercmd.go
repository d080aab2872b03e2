// Package controllercmd is the command confighash-controller: it reads the
// command line and the environment, sets the process-wide loggers and
// hands the controller package (a library) plain options. main only calls
// Main.
package controllercmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/confighash/confighash/controller"
)

// podNamespaceFile holds the pod's namespace, where the Lease goes by
// default.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// gcPercent is the garbage collector's target (as GOGC) the controller
// runs at unless the environment sets GOGC. Nearly all of the controller's
// heap is its cache, filled by the initial list: every watched object is
// decoded whole (a chart's Deployment is 10 to 15 KB of small allocations)
// to keep a few hundred bytes of it. At Go's default of 100 the heap grows
// to twice what is kept before each collection, and what is kept ends up
// spread over spans the garbage shared, which stay in use after it is
// collected. At 50, measured with 5,000 chart-shaped workloads, the heap
// settles 5% lower, the heap at start-up 10% lower and RSS 9% lower,
// for a collection twice as often: the controller allocates little once
// its caches are filled (docs/scale.md has the figures).
const gcPercent = 50

// Main runs confighash-controller with args (the command line without the
// program name) until SIGTERM or SIGINT: the usage asked for with -h goes to
// stdout, logs, errors and the usage after a wrong flag to stderr. It
// returns the exit code: 0 after -h or a clean stop, 1 on an error.
func Main(args []string, stdout, stderr io.Writer) int {
	return process{
		stdout:           stdout,
		stderr:           stderr,
		getenv:           os.Getenv,
		podNamespaceFile: podNamespaceFile,
		context:          signals.SetupSignalHandler,
	}.main(args)
}

// process is what Main takes from the process: its output and error
// streams, its environment, the file holding its pod's namespace and the
// context that ends on a signal.
type process struct {
	stdout, stderr   io.Writer
	getenv           func(string) string
	podNamespaceFile string
	context          func() context.Context
}

func (p process) main(args []string) int {
	err := p.run(args)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(p.stderr, "confighash-controller:", err)
		return 1
	}
}

func (p process) run(args []string) error {
	var usage bytes.Buffer
	c, err := ParseFlags(args, &usage, p.getenv)
	if err != nil {
		// The usage asked for is the output; after a wrong flag, it
		// goes with the error.
		out := p.stderr
		if errors.Is(err, flag.ErrHelp) && p.stdout != nil {
			out = p.stdout
		}
		_, _ = usage.WriteTo(out)
		return err
	}
	if err := checkLeaseNamespace(c.Options, p.podNamespaceFile); err != nil {
		return err
	}
	// Every library logs through the same logger: controller-runtime's
	// and client-go's (klog) global ones, and the controller's own.
	log := NewLogger(p.stderr, c.LogFormat, c.LogLevel)
	ctrllog.SetLogger(log)
	klog.SetLogger(log.WithName("client-go"))
	c.Logger = log
	// Time spent waiting on a client-side limiter shows in
	// rest_client_rate_limiter_duration_seconds (nothing without one).
	crmetrics.RegisterRESTClientMetrics(crmetrics.MetricRateLimiterLatency)
	// A GOGC the user set is left alone (see gcPercent).
	if p.getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	return controller.Run(p.context(), c.Options)
}

// checkLeaseNamespace fails at once when leader election has no namespace
// for its Lease: none given, and outside a pod (no podNamespaceFile) none to
// default to. The check comes before anything connects or logs.
func checkLeaseNamespace(o controller.Options, podNamespaceFile string) error {
	if !o.LeaderElect || o.LeaderElectionNamespace != "" {
		return nil
	}
	if _, err := os.Stat(podNamespaceFile); err != nil {
		return errors.New("--leader-elect outside a cluster needs --leader-election-namespace (no pod namespace to put the Lease in)")
	}
	return nil
}
