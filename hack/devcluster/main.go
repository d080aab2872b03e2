// Command devcluster runs a local Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager; no kubelet) for demos until it
// receives SIGINT or SIGTERM.
//
//	go run ./hack/devcluster --kubeconfig-out=/tmp/confighash.kubeconfig
//
// The binaries come from hack/build-controlplane.sh (see
// internal/testing/controlplane for how they are located).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/confighash/confighash/internal/testing/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

// config holds the command-line flags.
type config struct {
	kubeconfigOut string
	binDir        string
	logDir        string
	apiServerPort int
	verbose       bool
	startTimeout  time.Duration
}

// parseFlags parses the command line.
func parseFlags() config {
	var c config
	flag.StringVar(&c.kubeconfigOut, "kubeconfig-out", "", "write the admin kubeconfig to this path (required)")
	flag.StringVar(&c.binDir, "bin-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager (default: $"+controlplane.BinDirEnv+", $"+controlplane.AssetsEnv+" or <repo>/bin)")
	flag.StringVar(&c.logDir, "log-dir", "", "keep component logs in this directory (default: temporary, removed on exit)")
	flag.IntVar(&c.apiServerPort, "port", 0, "kube-apiserver port on 127.0.0.1 (0 = pick a free port)")
	flag.BoolVar(&c.verbose, "v", false, "copy component logs to stderr")
	flag.DurationVar(&c.startTimeout, "start-timeout", controlplane.DefaultStartTimeout, "how long to wait for the control plane to become ready")
	flag.Parse()
	return c
}

// run starts the control plane, publishes the kubeconfig and blocks until a
// termination signal arrives.
func run() error {
	c := parseFlags()
	if c.kubeconfigOut == "" {
		return fmt.Errorf("--kubeconfig-out is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cp, err := start(ctx, c)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "devcluster: stopping control plane")
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devcluster:", err)
		}
		_ = os.Remove(c.kubeconfigOut)
	}()
	if err := publishKubeconfig(cp, c.kubeconfigOut); err != nil {
		return err
	}
	fmt.Printf("devcluster ready: apiserver %s (Kubernetes ready in %s), kubeconfig %s\n",
		cp.Endpoint(), cp.Timings().Total.Round(time.Millisecond), c.kubeconfigOut)
	<-ctx.Done()
	return nil
}

// start launches the control plane with the flag settings.
func start(ctx context.Context, c config) (*controlplane.ControlPlane, error) {
	opts := controlplane.Options{
		BinDir:        c.binDir,
		LogDir:        c.logDir,
		APIServerPort: c.apiServerPort,
		StartTimeout:  c.startTimeout,
	}
	if c.verbose {
		opts.LogWriter = os.Stderr
	}
	fmt.Fprintln(os.Stderr, "devcluster: starting etcd, kube-apiserver, kube-controller-manager")
	cp, err := controlplane.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	return cp, nil
}

// publishKubeconfig writes the admin kubeconfig to path, creating parent
// directories.
func publishKubeconfig(cp *controlplane.ControlPlane, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create kubeconfig directory: %w", err)
	}
	if err := controlplane.WriteKubeconfig(cp.RESTConfig(), path); err != nil {
		return fmt.Errorf("publish kubeconfig: %w", err)
	}
	return nil
}
