package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// saSigningKey is the file in envtest's certificate directory holding the
// key the apiserver signs service account tokens with
// (--service-account-signing-key-file); kube-controller-manager signs the
// tokens it issues with the same key.
const saSigningKey = "sa-signer.key"

// controllerManager runs kube-controller-manager, which envtest does not
// provide, as a child process that can be stopped and started again.
type controllerManager struct {
	path        string
	args        []string
	extra       []string            // Options.ControllerManagerArgs, last so they win
	fixedPort   int                 // Options.ControllerManagerPort; 0: a free port at each start
	port        int                 // the port of the current or last run
	pickPort    func() (int, error) // a test's; nil: freePort
	out         io.Writer
	stopTimeout time.Duration

	cancel context.CancelFunc // stops the current run; nil when not running
	done   chan struct{}      // closed when the current run has exited
}

// newControllerManager defines the process; configure completes its
// arguments once the apiserver's credentials exist.
func newControllerManager(path string, log *os.File, opts Options) (*controllerManager, error) {
	var out io.Writer = log
	if opts.LogWriter != nil {
		out = io.MultiWriter(log, opts.LogWriter)
	}
	args := []string{
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--controllers=" + strings.Join(opts.Controllers, ","),
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		"--profiling=false",
	}
	return &controllerManager{path: path, args: args, extra: opts.ControllerManagerArgs, fixedPort: opts.ControllerManagerPort, out: out, stopTimeout: opts.StopTimeout}, nil
}

// configure writes the kubeconfig of user and the apiserver's serving CA
// into dir and adds the arguments that use them and the service account
// signing key from certDir.
func (m *controllerManager) configure(user *rest.Config, certDir, dir string) error {
	saKey := filepath.Join(certDir, saSigningKey)
	if !fileExists(saKey) {
		return fmt.Errorf("controlplane: envtest wrote no service account signing key %s", saKey)
	}
	kubeconfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	if err := WriteKubeconfig(user, kubeconfig); err != nil {
		return err
	}
	rootCA := filepath.Join(dir, "serving-ca.crt")
	if err := os.WriteFile(rootCA, user.CAData, 0o600); err != nil {
		return fmt.Errorf("controlplane: write %s: %w", rootCA, err)
	}
	m.args = append(m.args,
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--cert-dir="+filepath.Join(dir, "kcm-certs"),
		"--service-account-private-key-file="+saKey,
		"--root-ca-file="+rootCA,
	)
	return nil
}

// portAttempts is how many times a component is started on ports picked
// anew: a port found free can be taken by another process (a parallel
// test's) before the component binds it.
const portAttempts = 3

// start launches the process and waits until /healthz answers 200, the
// process exits or ctx ends. Without a fixed port it picks a free one just
// before the launch, and another one if that was taken meanwhile.
func (m *controllerManager) start(ctx context.Context) error {
	return whilePortTaken(m.fixedPort == 0, func(int) error { return m.startOnce(ctx) })
}

// whilePortTaken calls start (attempt 1, 2, …) again while it fails with
// errPortTaken and again allows it, at most portAttempts times: the one
// retry of every component whose port was taken before it bound it.
func whilePortTaken(again bool, start func(attempt int) error) error {
	for attempt := 1; ; attempt++ {
		err := start(attempt)
		if !errors.Is(err, errPortTaken) || !again || attempt == portAttempts {
			return err
		}
	}
}

// freePort returns a port no process listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// errPortTaken is a start whose process could not bind its port.
var errPortTaken = errors.New("its port was taken")

func (m *controllerManager) startOnce(ctx context.Context) error {
	if m.cancel != nil {
		return errors.New("already running")
	}
	m.port = m.fixedPort
	if m.port == 0 {
		pick := m.pickPort
		if pick == nil {
			pick = freePort
		}
		port, err := pick()
		if err != nil {
			return fmt.Errorf("pick a port: %w", err)
		}
		m.port = port
	}
	var output bytes.Buffer
	runCtx, cancel := context.WithCancel(context.Background())
	args := append(slices.Clone(m.args), "--secure-port="+strconv.Itoa(m.port))
	cmd := exec.CommandContext(runCtx, m.path, append(args, m.extra...)...) //nolint:gosec // the binary of Options.BinDir
	cmd.Stdout, cmd.Stderr = m.out, io.MultiWriter(m.out, &output)          // read once the process has exited
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = m.stopTimeout
	if err := cmd.Start(); err != nil {
		cancel()
		return fmt.Errorf("start %s: %w", m.path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cancel, m.done = cancel, done

	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // local self-signed health endpoint
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", m.port)
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		resp, err := client.Get(url) //nolint:noctx // bounded by the client's timeout
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		select {
		case <-done:
			m.cancel, m.done = nil, nil
			cancel()
			if strings.Contains(output.String(), "address already in use") {
				return fmt.Errorf("%w: %d", errPortTaken, m.port)
			}
			return errors.New("process exited before becoming healthy")
		case <-ctx.Done():
			return fmt.Errorf("not healthy: %w (last probe: %w)", ctx.Err(), err)
		case <-ticker.C:
		}
	}
}

// stop sends SIGTERM and waits; the process is killed after stopTimeout.
// Stopping a process that is not running is a no-op.
func (m *controllerManager) stop() error {
	if m.cancel == nil {
		return nil
	}
	began := time.Now()
	m.cancel()
	<-m.done
	m.cancel, m.done = nil, nil
	if time.Since(began) >= m.stopTimeout {
		return fmt.Errorf("%s did not exit within %s of SIGTERM, killed", ControllerManagerBinary, m.stopTimeout)
	}
	return nil
}
